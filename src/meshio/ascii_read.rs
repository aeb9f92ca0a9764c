//! Reading `.mesh` (ASCII) files held in memory.
//!
//! A first pass finds `MeshVersionFormatted`, `Dimension` and `FloatingPointPrecision` anywhere
//! in the file (libMeshb accepts them in any order). The second pass reads keywords in order:
//! Vertices and element keywords by their counts, and any other keyword is skipped up to the
//! next token that is a libMeshb keyword name, and reported. A number where a keyword should
//! be (say, one line more than a count announced) is an error rather than silently dropped.
//!
//! Reals are always parsed as `f64`, whatever the version or FloatingPointPrecision says: the
//! text carries its own precision (TetGen, for one, writes version 1 files with 17 significant
//! digits), so nothing printed is lost. libMeshb would round version 1 values to `f32`.

use std::collections::HashSet;
use std::path::Path;

use super::MeshFile;
use super::ascii_cursor::Cursor;
use super::ascii_tokens::{Token, Tokens, show};
use super::binary_decode::to_index;
use super::element::{ElementKind, Elements};
use super::error::{Location, MeshError};
use super::format::{Format, Version};
use super::keywords;
use super::mesh::{Mesh, first_out_of_range};

/// Header values found by the first pass.
#[derive(Debug, Clone, Copy)]
pub(super) struct Header {
    pub(super) version: Version,
    pub(super) dimension: u8,
}

/// The UTF-8 byte-order mark some editors put first; skipped.
pub(super) const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// Reads a whole ASCII file.
pub(crate) fn read(bytes: &[u8], path: &Path) -> Result<MeshFile, MeshError> {
    let bytes = bytes.strip_prefix(BYTE_ORDER_MARK).unwrap_or(bytes);
    let header = prescan(bytes, path)?;
    let mut parser = Parser {
        cursor: Cursor::new(bytes, path),
        header,
        mesh: Mesh::new(header.dimension),
        seen: HashSet::new(),
        element_starts: Vec::new(),
    };
    let ended = parser.keywords()?;
    parser.check_indices()?;
    Ok(MeshFile {
        mesh: parser.mesh,
        format: Format::Ascii,
        version: header.version,
        big_endian: false,
        skipped_keywords: parser.cursor.into_skipped(),
        ended,
    })
}

pub(super) fn parse_int(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

pub(super) fn parse_real(text: &[u8]) -> Option<f64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// First pass: the header keywords, wherever they are (up to `End`).
pub(super) fn prescan(bytes: &[u8], path: &Path) -> Result<Header, MeshError> {
    let mut tokens = Tokens::new(bytes);
    let mut version = None;
    let mut dimension = None;
    let mut precision = None;
    while let Some(tok) = tokens.next_token() {
        let keyword = match tok.text {
            b"MeshVersionFormatted" => "MeshVersionFormatted",
            b"Dimension" => "Dimension",
            b"FloatingPointPrecision" => "FloatingPointPrecision",
            b"End" => break,
            _ => continue,
        };
        let already = match keyword {
            "MeshVersionFormatted" => version.is_some(),
            "Dimension" => dimension.is_some(),
            _ => precision.is_some(),
        };
        if already {
            return Err(MeshError::DuplicateKeyword {
                path: path.to_path_buf(),
                at: Location::Line(tok.line),
                keyword,
            });
        }
        let value_tok = tokens
            .next_token()
            .ok_or_else(|| MeshError::UnexpectedEnd {
                path: path.to_path_buf(),
                at: Location::Line(tokens.last_line()),
                what: format!("the {keyword} value"),
            })?;
        let at = Location::Line(value_tok.line);
        let value = parse_int(value_tok.text).ok_or_else(|| MeshError::BadToken {
            path: path.to_path_buf(),
            at,
            token: show(value_tok.text),
            expected: "an integer",
            context: keyword.to_owned(),
        })?;
        match keyword {
            "MeshVersionFormatted" => {
                let v = u32::try_from(value).ok().and_then(Version::from_number);
                version = Some(v.ok_or_else(|| MeshError::UnknownVersion {
                    path: path.to_path_buf(),
                    at,
                    version: value,
                })?);
            }
            "Dimension" => {
                if value != 2 && value != 3 {
                    return Err(MeshError::BadDimension {
                        path: path.to_path_buf(),
                        at,
                        dimension: value,
                    });
                }
                dimension = Some(value as u8);
            }
            _ => {
                if value != 32 && value != 64 {
                    return Err(MeshError::BadPrecision {
                        path: path.to_path_buf(),
                        at,
                        value,
                    });
                }
                // Validated only: reals are read as f64 whatever the precision.
                precision = Some(value);
            }
        }
    }
    let missing = |keyword| MeshError::MissingKeyword {
        path: path.to_path_buf(),
        at: Location::Line(tokens.last_line()),
        keyword,
    };
    let version = version.ok_or_else(|| missing("MeshVersionFormatted"))?;
    let dimension = dimension.ok_or_else(|| missing("Dimension"))?;
    Ok(Header { version, dimension })
}

/// Second pass over the keywords in file order.
struct Parser<'a> {
    cursor: Cursor<'a>,
    header: Header,
    mesh: Mesh,
    /// Codes of the Vertices and element keywords already read.
    seen: HashSet<i32>,
    /// Where each element keyword's data starts, to find an element's line on error.
    element_starts: Vec<(ElementKind, Tokens<'a>)>,
}

impl<'a> Parser<'a> {
    /// Reads every keyword up to `End`; returns whether `End` was there.
    fn keywords(&mut self) -> Result<bool, MeshError> {
        while let Some(tok) = self.cursor.tokens.next_token() {
            match keywords::code(tok.text) {
                Some(
                    keywords::MESH_VERSION_FORMATTED
                    | keywords::DIMENSION
                    | keywords::FLOATING_POINT_PRECISION,
                ) => {
                    // Checked by the first pass.
                    self.cursor.tokens.next_token();
                }
                Some(keywords::END) => return Ok(true),
                Some(keywords::VERTICES) => {
                    self.first_time(keywords::VERTICES, "Vertices", tok)?;
                    self.vertices()?;
                }
                Some(code) => match ElementKind::from_code(code) {
                    Some(kind) => {
                        self.first_time(code, kind.keyword(), tok)?;
                        self.elements(kind)?;
                    }
                    None => self.cursor.skip(keywords::describe(code))?,
                },
                None if tok.text.first().is_some_and(u8::is_ascii_alphabetic) => {
                    self.cursor.check_not_cut(tok)?;
                    self.cursor.skip(show(tok.text))?
                }
                None => {
                    return Err(MeshError::UnexpectedToken {
                        path: self.cursor.path.to_path_buf(),
                        at: Location::Line(tok.line),
                        token: show(tok.text),
                    });
                }
            }
        }
        Ok(false)
    }

    fn first_time(
        &mut self,
        code: i32,
        keyword: &'static str,
        tok: Token<'_>,
    ) -> Result<(), MeshError> {
        if self.seen.insert(code) {
            Ok(())
        } else {
            Err(MeshError::DuplicateKeyword {
                path: self.cursor.path.to_path_buf(),
                at: Location::Line(tok.line),
                keyword,
            })
        }
    }

    fn int(&mut self, keyword: &'static str, entity: usize) -> Result<(i64, Token<'a>), MeshError> {
        let context = || format!("{keyword} {}", entity + 1);
        let tok = self.cursor.next(&context)?;
        match parse_int(tok.text) {
            Some(v) => Ok((v, tok)),
            None => Err(self.cursor.bad_token(tok, "an integer", context())),
        }
    }

    fn real(&mut self, entity: usize) -> Result<f64, MeshError> {
        let context = || format!("Vertices {}", entity + 1);
        let tok = self.cursor.next(&context)?;
        match parse_real(tok.text) {
            Some(v) => Ok(v),
            None => Err(self.cursor.bad_token(tok, "a real number", context())),
        }
    }

    fn reference(&mut self, keyword: &'static str, entity: usize) -> Result<i32, MeshError> {
        let (value, tok) = self.int(keyword, entity)?;
        i32::try_from(value).map_err(|_| MeshError::RefOutOfRange {
            path: self.cursor.path.to_path_buf(),
            at: Location::Line(tok.line),
            keyword,
            entity: entity as u64 + 1,
            value,
        })
    }

    /// Reads a count and checks that the rest of the file can hold `count * per_line` numbers.
    fn count(&mut self, keyword: &'static str, per_line: usize) -> Result<usize, MeshError> {
        let context = || format!("the {keyword} count");
        let tok = self.cursor.next(&context)?;
        let at = Location::Line(tok.line);
        let value = parse_int(tok.text).ok_or_else(|| {
            self.cursor
                .bad_token(tok, "a count (an integer)", context())
        })?;
        let count = u64::try_from(value).map_err(|_| MeshError::NegativeCount {
            path: self.cursor.path.to_path_buf(),
            at,
            keyword,
            count: value,
        })?;
        let values = u128::from(count) * per_line as u128;
        let remaining = self.cursor.tokens.remaining() as u64;
        // Each number needs at least one character and one separator before it.
        if values > u128::from(remaining).div_ceil(2) {
            return Err(MeshError::CountTooLargeText {
                path: self.cursor.path.to_path_buf(),
                at,
                keyword,
                count,
                values,
                remaining,
            });
        }
        // count <= remaining bytes, so it fits in usize.
        Ok(count as usize)
    }

    fn vertices(&mut self) -> Result<(), MeshError> {
        let dim = usize::from(self.header.dimension);
        let count = self.count("Vertices", dim + 1)?;
        let mut xyz = Vec::with_capacity(count);
        let mut refs = Vec::with_capacity(count);
        for i in 0..count {
            let mut p = [0.0; 3];
            for c in &mut p[..dim] {
                *c = self.real(i)?;
            }
            xyz.push(p);
            refs.push(self.reference("Vertices", i)?);
        }
        self.mesh.vertices = xyz;
        self.mesh.vertex_refs = refs;
        Ok(())
    }

    fn elements(&mut self, kind: ElementKind) -> Result<(), MeshError> {
        let n = kind.nodes();
        let keyword = kind.keyword();
        let count = self.count(keyword, n + 1)?;
        self.element_starts.push((kind, self.cursor.tokens));
        let mut nodes = Vec::with_capacity(count * n);
        let mut refs = Vec::with_capacity(count);
        for i in 0..count {
            for _ in 0..n {
                nodes.push(to_index(self.int(keyword, i)?.0));
            }
            refs.push(self.reference(keyword, i)?);
        }
        self.mesh
            .set_elements(Elements::from_parts(kind, nodes, refs));
        Ok(())
    }

    /// Checks node indices once all vertices are known, reporting the element's line.
    fn check_indices(&self) -> Result<(), MeshError> {
        let vertex_count = self.mesh.vertices.len();
        for &(kind, start) in &self.element_starts {
            let elements = self.mesh.elements(kind);
            let Some(pos) = first_out_of_range(elements.node_slice(), vertex_count) else {
                continue;
            };
            let n = kind.nodes();
            let (element, node) = (pos / n, pos % n);
            let mut tokens = start;
            for _ in 0..element * (n + 1) {
                tokens.next_token();
            }
            let first = tokens.peek();
            for _ in 0..node {
                tokens.next_token();
            }
            let index = tokens.next_token().and_then(|t| parse_int(t.text));
            return Err(MeshError::NodeIndex {
                path: self.cursor.path.to_path_buf(),
                at: Location::Line(first.map_or(0, |t| t.line)),
                kind,
                element: element as u64 + 1,
                index: index.unwrap_or_default(),
                vertex_count: vertex_count as u64,
            });
        }
        Ok(())
    }
}
