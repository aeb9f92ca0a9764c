//! libMeshb's `ReferenceStrings` keyword (code 199): names given to the fields of a solution
//! file, as GMlib's `GmlExportSolution` writes them.
//!
//! Each line holds two integers and a string (libMeshb's format `iic`): the code of the keyword
//! named (e.g. 62 for `SolAtVertices`), an index, and the text. libMeshb's examples give the
//! 1-based position of the named type in its keyword's header as the index and the field's name
//! as the text; GMlib writes index 1 on every line and a text `name.x 3` (a component and the
//! 1-based number of the scalar in the whole file) or `name 3` (a one-value field). Both are
//! read and written as they are: interpreting them is [`Gml`](crate::gml::Gml)'s business.
//!
//! In binary files the two integers have the version's integer size (4 bytes, 8 in version 4)
//! and the text fills 64 words of 4 bytes (256 bytes), zero-padded. In ASCII files a line is the
//! two integers and the text up to the end of the line (libMeshb reads it with `fgets`); the text
//! is trimmed of surrounding white space when read.
//!
//! ```
//! use std::path::Path;
//! use snowsim::meshio::{self, Format, ReferenceString, SolType, SolutionBlock, Solutions};
//! use snowsim::meshio::{Support, Version};
//!
//! let solutions = Solutions {
//!     dimension: 3,
//!     blocks: vec![SolutionBlock {
//!         support: Support::Vertices,
//!         types: vec![SolType::Scalar],
//!         values: vec![1.0, 2.0],
//!     }],
//! };
//! let names = vec![ReferenceString::new(62, 1, "T")];
//! let bytes =
//!     meshio::named_solution_to_bytes(&solutions, &names, Format::Binary, Version::V1)?;
//! let path = Path::new("t.solb");
//! let file = meshio::read_solution_bytes(&bytes, Format::Binary, path)?;
//! assert_eq!(file.solutions, solutions);
//! assert_eq!(meshio::read_reference_strings(&bytes, Format::Binary, path)?, names);
//! # Ok::<(), meshio::SolutionError>(())
//! ```

use std::path::Path;

use super::binary_decode::{self, Width};
use super::binary_read::{self, Block};
use super::error::{Location, MeshError};
use super::format::{Format, Version};
use super::keywords;
use super::solution::{SolutionFile, Solutions, read_solution_bytes, solution_format};
use super::solution_error::{SolutionEncodeError, SolutionError};
use super::{read_file_bytes, solution_to_bytes};
use crate::output::write_atomic;

/// libMeshb's code of `ReferenceStrings`.
pub const REFERENCE_STRINGS: i32 = 199;

/// Bytes of the text of one binary `ReferenceStrings` line (libMeshb's `FilStrSiz` words of
/// `WrdSiz` bytes).
pub const REFERENCE_TEXT_BYTES: usize = 256;

/// One line of a `ReferenceStrings` keyword.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReferenceString {
    /// The code of the keyword the line names (62 for `SolAtVertices`, …).
    pub keyword: i32,
    /// The index (libMeshb: the 1-based type in that keyword; GMlib: always 1).
    pub index: i64,
    /// The text: at most 255 bytes, without control characters nor surrounding white space.
    pub text: String,
}

impl ReferenceString {
    /// A line naming `index` of keyword `keyword` with `text`.
    pub fn new(keyword: i32, index: i64, text: impl Into<String>) -> Self {
        Self {
            keyword,
            index,
            text: text.into(),
        }
    }
}

/// Reads the `ReferenceStrings` keyword of a solution (or mesh) file held in memory; an empty
/// list when it has none. `source` names the file in errors.
pub fn read_reference_strings(
    bytes: &[u8],
    format: Format,
    source: &Path,
) -> Result<Vec<ReferenceString>, SolutionError> {
    match format {
        Format::Binary => read_binary(bytes, source),
        Format::Ascii => read_ascii(bytes, source),
    }
}

/// Reads a `.sol`/`.solb` file (as [`read_solution`](super::read_solution)) with its
/// `ReferenceStrings`.
pub fn read_named_solution(
    path: &Path,
) -> Result<(SolutionFile, Vec<ReferenceString>), SolutionError> {
    let format = solution_format(path)?;
    let bytes = read_file_bytes(path, format)?;
    let file = read_solution_bytes(&bytes, format, path)?;
    let names = read_reference_strings(&bytes, format, path)?;
    Ok((file, names))
}

/// Encodes `solutions` as [`solution_to_bytes`] does, followed by a `ReferenceStrings` keyword
/// holding `names` (none when `names` is empty), before `End`, where GMlib writes it.
pub fn named_solution_to_bytes(
    solutions: &Solutions,
    names: &[ReferenceString],
    format: Format,
    version: Version,
) -> Result<Vec<u8>, SolutionError> {
    let bytes = solution_to_bytes(solutions, format, version)?;
    Ok(append_names(bytes, names, format, version)?)
}

/// Writes `solutions` and `names` to `path` (format from the extension) atomically, as
/// [`write_solution`](super::write_solution) does.
pub fn write_named_solution(
    path: &Path,
    solutions: &Solutions,
    names: &[ReferenceString],
    version: Version,
) -> Result<(), SolutionError> {
    let format = solution_format(path)?;
    let bytes = solution_to_bytes(solutions, format, version)
        .and_then(|b| Ok(append_names(b, names, format, version)?))
        .map_err(|error| match error {
            SolutionError::Encode(error) => SolutionError::EncodeFile {
                path: path.to_path_buf(),
                error,
            },
            other => other,
        })?;
    write_atomic(path, &bytes).map_err(|error| {
        SolutionError::File(MeshError::Write {
            path: path.to_path_buf(),
            error: Box::new(error),
        })
    })
}

/// Checks that `name` can be written in both formats and read back identical.
fn check_text(name: &ReferenceString) -> Result<(), SolutionEncodeError> {
    let text = &name.text;
    let why = if text.len() >= REFERENCE_TEXT_BYTES {
        "is longer than 255 bytes"
    } else if text.chars().any(char::is_control) {
        "holds a control character (a line break or NUL would cut it)"
    } else if text.trim() != text {
        "starts or ends with white space, which readers trim"
    } else {
        return Ok(());
    };
    Err(SolutionEncodeError::BadReferenceString {
        text: text.clone(),
        why,
    })
}

/// Inserts a `ReferenceStrings` keyword before the `End` that the solution encoders put last.
fn append_names(
    mut bytes: Vec<u8>,
    names: &[ReferenceString],
    format: Format,
    version: Version,
) -> Result<Vec<u8>, SolutionEncodeError> {
    if names.is_empty() {
        return Ok(bytes);
    }
    for name in names {
        check_text(name)?;
    }
    if version.count_bytes() == 4 && names.len() > i32::MAX as usize {
        return Err(super::EncodeError::CountTooLarge {
            keyword: "ReferenceStrings",
            count: names.len(),
            version: version.number(),
        }
        .into());
    }
    match format {
        Format::Ascii => {
            const END: &[u8] = b"\nEnd\n";
            debug_assert!(bytes.ends_with(END));
            bytes.truncate(bytes.len() - END.len());
            let mut text = format!("\nReferenceStrings\n{}\n", names.len());
            for n in names {
                text.push_str(&format!("{} {} {}\n", n.keyword, n.index, n.text));
            }
            bytes.extend_from_slice(text.as_bytes());
            bytes.extend_from_slice(END);
        }
        Format::Binary => {
            let pos = version.position_bytes();
            let int = version.int_bytes();
            // The last keyword's next position points at End's code: the new keyword takes
            // End's place and End follows it.
            let at = bytes.len() - 4 - pos;
            bytes.truncate(at);
            let line = 2 * int + REFERENCE_TEXT_BYTES;
            let data = names.len() * line;
            let next = at + 4 + pos + version.count_bytes() + data;
            if pos == 4 && next + 4 + pos > i32::MAX as usize {
                return Err(super::EncodeError::FileTooLarge {
                    bytes: (next + 4 + pos) as u64,
                    version: version.number(),
                }
                .into());
            }
            let word = |bytes: &mut Vec<u8>, v: i64, size: usize| {
                if size == 4 {
                    bytes.extend_from_slice(&(v as i32).to_le_bytes());
                } else {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
            };
            bytes.reserve(next + 4 + pos - at);
            word(&mut bytes, i64::from(REFERENCE_STRINGS), 4);
            word(&mut bytes, next as i64, pos);
            word(&mut bytes, names.len() as i64, version.count_bytes());
            for n in names {
                if int == 4 && i32::try_from(n.index).is_err() {
                    return Err(SolutionEncodeError::BadReferenceString {
                        text: n.text.clone(),
                        why: "has an index that does not fit in the 32-bit integers of \
                              versions 1 to 3",
                    });
                }
                word(&mut bytes, i64::from(n.keyword), int);
                word(&mut bytes, n.index, int);
                let mut text = [0u8; REFERENCE_TEXT_BYTES];
                text[..n.text.len()].copy_from_slice(n.text.as_bytes());
                bytes.extend_from_slice(&text);
            }
            debug_assert_eq!(bytes.len(), next);
            word(&mut bytes, i64::from(keywords::END), 4);
            word(&mut bytes, 0, pos);
        }
    }
    Ok(bytes)
}

fn bad(path: &Path, at: Location, why: String) -> SolutionError {
    SolutionError::BadReferenceString {
        path: path.to_path_buf(),
        at,
        why,
    }
}

fn read_binary(bytes: &[u8], path: &Path) -> Result<Vec<ReferenceString>, SolutionError> {
    let (r, _dimension, first) = binary_read::header(bytes, path)?;
    let pos_bytes = r.version.position_bytes() as u64;
    let mut found: Option<Block> = None;
    let mut at = first;
    while at != 0 {
        let code = r.i32(at, &|| "keyword code".to_owned())?;
        let name = keywords::describe(code);
        let raw_next = r.position(at + 4, &name)?;
        if code == keywords::END {
            break;
        }
        let fields = at + 4 + pos_bytes;
        let next = r.check_next(&name, at + 4, raw_next, fields)?;
        if code == REFERENCE_STRINGS && found.replace(Block { code, fields, next }).is_some() {
            return Err(MeshError::DuplicateKeyword {
                path: path.to_path_buf(),
                at: Location::Byte(at),
                keyword: "ReferenceStrings",
            }
            .into());
        }
        at = next;
    }
    let Some(block) = found else {
        return Ok(Vec::new());
    };
    let int = Width::of(r.version.int_bytes());
    let line = 2 * int.bytes() + REFERENCE_TEXT_BYTES;
    let data = r.data(block, "ReferenceStrings", line)?;
    let mut names = Vec::with_capacity(data.bytes.len() / line);
    for (i, chunk) in data.bytes.chunks_exact(line).enumerate() {
        let start = data.start + (i * line) as u64;
        let keyword = binary_decode::int_at(chunk, 0, int, r.big).unwrap_or_default();
        let index = binary_decode::int_at(chunk, int.bytes(), int, r.big).unwrap_or_default();
        let keyword = i32::try_from(keyword).map_err(|_| {
            bad(
                path,
                Location::Byte(start),
                format!("line {} names keyword code {keyword}", i + 1),
            )
        })?;
        let raw = &chunk[2 * int.bytes()..];
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        let text = std::str::from_utf8(&raw[..end]).map_err(|e| {
            bad(
                path,
                Location::Byte(start + 2 * int.bytes() as u64),
                format!("line {}: the text is not UTF-8 ({e})", i + 1),
            )
        })?;
        names.push(ReferenceString::new(keyword, index, text.trim()));
    }
    Ok(names)
}

/// Finds the `ReferenceStrings` keyword at the start of a line, then reads its count and lines
/// as libMeshb does: two integers (over any white space), then the rest of the line.
fn read_ascii(bytes: &[u8], path: &Path) -> Result<Vec<ReferenceString>, SolutionError> {
    let bytes = bytes
        .strip_prefix(super::ascii_read::BYTE_ORDER_MARK)
        .unwrap_or(bytes);
    let mut cursor = TextCursor { bytes, at: 0 };
    let mut start = None;
    while cursor.at < bytes.len() {
        let line_end = cursor.line_end();
        let line = &bytes[cursor.at..line_end];
        let first = line
            .split(|b| b.is_ascii_whitespace())
            .find(|t| !t.is_empty());
        if first == Some(b"ReferenceStrings".as_slice()) {
            if start.is_some() {
                return Err(MeshError::DuplicateKeyword {
                    path: path.to_path_buf(),
                    at: Location::Line(cursor.line()),
                    keyword: "ReferenceStrings",
                }
                .into());
            }
            let offset = line.windows(16).position(|w| w == b"ReferenceStrings");
            start = Some(cursor.at + offset.unwrap_or(0) + 16);
        }
        cursor.at = (line_end + 1).min(bytes.len());
    }
    let Some(start) = start else {
        return Ok(Vec::new());
    };
    cursor.at = start;
    let count = cursor.int(path, "the ReferenceStrings count")?;
    let count = usize::try_from(count)
        .ok()
        .filter(|&n| n <= bytes.len().saturating_sub(cursor.at) / 4 + 1)
        .ok_or_else(|| {
            bad(
                path,
                Location::Line(cursor.line()),
                format!("count {count} is negative or larger than the rest of the file holds"),
            )
        })?;
    let mut names = Vec::with_capacity(count);
    for i in 0..count {
        let what = format!("ReferenceStrings line {}", i + 1);
        let keyword = cursor.int(path, &what)?;
        let keyword = i32::try_from(keyword).map_err(|_| {
            bad(
                path,
                Location::Line(cursor.line()),
                format!("{what} names keyword code {keyword}"),
            )
        })?;
        let index = cursor.int(path, &what)?;
        let end = cursor.line_end();
        let raw = &bytes[cursor.at..end];
        let text = std::str::from_utf8(raw).map_err(|e| {
            bad(
                path,
                Location::Line(cursor.line()),
                format!("{what}: the text is not UTF-8 ({e})"),
            )
        })?;
        names.push(ReferenceString::new(keyword, index, text.trim()));
        cursor.at = end;
    }
    Ok(names)
}

/// A position in a text file.
struct TextCursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl TextCursor<'_> {
    /// 1-based line of the position.
    fn line(&self) -> usize {
        1 + self.bytes[..self.at.min(self.bytes.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    }

    /// Offset of the end of the current line (its `\n`, or the end of the file).
    fn line_end(&self) -> usize {
        self.bytes[self.at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.bytes.len(), |p| self.at + p)
    }

    /// The next white-space separated token, as an integer.
    fn int(&mut self, path: &Path, what: &str) -> Result<i64, SolutionError> {
        while self.at < self.bytes.len() && self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
        let start = self.at;
        while self.at < self.bytes.len() && !self.bytes[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
        let token = &self.bytes[start..self.at];
        std::str::from_utf8(token)
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            .ok_or_else(|| {
                let shown = String::from_utf8_lossy(&token[..token.len().min(40)]).into_owned();
                let found = if token.is_empty() {
                    "the end of the file".to_owned()
                } else {
                    format!("`{shown}`")
                };
                bad(
                    path,
                    Location::Line(self.line()),
                    format!("{what}: expected an integer, found {found}"),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meshio::{SolType, SolutionBlock, Support};

    fn sample() -> (Solutions, Vec<ReferenceString>) {
        let solutions = Solutions {
            dimension: 3,
            blocks: vec![SolutionBlock {
                support: Support::Vertices,
                types: vec![SolType::Scalar, SolType::Vector],
                values: vec![1.0, 2.0, 3.0, 4.0, 0.5, 0.25, 0.125, 1.5],
            }],
        };
        let names = vec![
            ReferenceString::new(62, 1, "first scalar"),
            ReferenceString::new(62, 2, "a vector"),
        ];
        (solutions, names)
    }

    #[test]
    fn round_trips_in_every_version_and_format() {
        let (solutions, names) = sample();
        for format in [Format::Ascii, Format::Binary] {
            for version in [Version::V1, Version::V2, Version::V3, Version::V4] {
                let bytes = named_solution_to_bytes(&solutions, &names, format, version).unwrap();
                let path = Path::new("n.sol");
                let file = read_solution_bytes(&bytes, format, path).unwrap();
                assert_eq!(file.solutions, solutions, "{format:?} {version:?}");
                assert_eq!(file.skipped_keywords, ["ReferenceStrings"]);
                let back = read_reference_strings(&bytes, format, path).unwrap();
                assert_eq!(back, names, "{format:?} {version:?}");
                // Without names, the plain encoding.
                let plain = named_solution_to_bytes(&solutions, &[], format, version).unwrap();
                assert_eq!(
                    plain,
                    solution_to_bytes(&solutions, format, version).unwrap()
                );
                assert!(
                    read_reference_strings(&plain, format, path)
                        .unwrap()
                        .is_empty()
                );
            }
        }
    }

    #[test]
    fn bad_texts_are_refused() {
        let (solutions, _) = sample();
        for text in ["a\nb", " lead", "trail ", &"x".repeat(256)] {
            let names = [ReferenceString::new(62, 1, text)];
            let e = named_solution_to_bytes(&solutions, &names, Format::Binary, Version::V1)
                .unwrap_err();
            assert!(
                matches!(
                    e,
                    SolutionError::Encode(SolutionEncodeError::BadReferenceString { .. })
                ),
                "{e}"
            );
        }
        let ok = [ReferenceString::new(62, 1, "x".repeat(255))];
        assert!(named_solution_to_bytes(&solutions, &ok, Format::Binary, Version::V1).is_ok());
    }

    #[test]
    fn ascii_errors_name_the_line() {
        let text =
            b"MeshVersionFormatted 2\nDimension 3\nReferenceStrings\n2\n62 1 a\n62 x b\nEnd\n";
        let e = read_reference_strings(text, Format::Ascii, Path::new("f.sol")).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("f.sol: line 6: "), "{s}");
        assert!(s.contains("`x`"), "{s}");
    }
}
