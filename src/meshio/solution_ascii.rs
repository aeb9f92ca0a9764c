//! Reading and writing `.sol` files, with the tokenizer, header scan and real formatting of the
//! `.mesh` code.
//!
//! A `SolAt…` keyword is followed by its count, its number of types and their codes, then the
//! reals of every line. Other keywords are skipped up to the next libMeshb keyword name, as in
//! meshes.

use std::fmt::{self, Write};
use std::path::Path;

use super::ascii_cursor::Cursor;
use super::ascii_read::{BYTE_ORDER_MARK, parse_int, parse_real, prescan};
use super::ascii_tokens::{Token, show};
use super::ascii_write::write_real;
use super::error::{EncodeError, Location, MeshError};
use super::format::{Format, Version};
use super::keywords;
use super::solution::{SolType, SolutionBlock, SolutionFile, Solutions, Support};
use super::solution_error::{SolutionEncodeError, SolutionError};

/// Reads a whole ASCII solution file.
pub(super) fn read(bytes: &[u8], path: &Path) -> Result<SolutionFile, SolutionError> {
    let bytes = bytes.strip_prefix(BYTE_ORDER_MARK).unwrap_or(bytes);
    let header = prescan(bytes, path)?;
    let mut parser = Parser {
        cursor: Cursor::new(bytes, path),
        dimension: header.dimension,
        blocks: Vec::new(),
    };
    parser.keywords()?;
    Ok(SolutionFile {
        solutions: Solutions {
            dimension: header.dimension,
            blocks: parser.blocks,
        },
        format: Format::Ascii,
        version: header.version,
        big_endian: false,
        skipped_keywords: parser.cursor.into_skipped(),
    })
}

/// The pass over the keywords in file order.
struct Parser<'a> {
    cursor: Cursor<'a>,
    dimension: u8,
    blocks: Vec<SolutionBlock>,
}

impl<'a> Parser<'a> {
    fn keywords(&mut self) -> Result<(), SolutionError> {
        while let Some(tok) = self.cursor.tokens.next_token() {
            match keywords::code(tok.text) {
                Some(
                    keywords::MESH_VERSION_FORMATTED
                    | keywords::DIMENSION
                    | keywords::FLOATING_POINT_PRECISION,
                ) => {
                    // Checked by the header scan.
                    self.cursor.tokens.next_token();
                }
                Some(keywords::END) => break,
                Some(code) => match Support::from_code(code) {
                    Some(support) => {
                        if self.blocks.iter().any(|b| b.support == support) {
                            return Err(MeshError::DuplicateKeyword {
                                path: self.cursor.path.to_path_buf(),
                                at: Location::Line(tok.line),
                                keyword: support.keyword(),
                            }
                            .into());
                        }
                        let block = self.block(support)?;
                        self.blocks.push(block);
                    }
                    None => self.cursor.skip(keywords::describe(code))?,
                },
                None if tok.text.first().is_some_and(u8::is_ascii_alphabetic) => {
                    self.cursor.check_not_cut(tok)?;
                    self.cursor.skip(show(tok.text))?;
                }
                None => {
                    return Err(MeshError::UnexpectedToken {
                        path: self.cursor.path.to_path_buf(),
                        at: Location::Line(tok.line),
                        token: show(tok.text),
                    }
                    .into());
                }
            }
        }
        Ok(())
    }

    /// An integer for `context`, with its token.
    fn int(
        &mut self,
        expected: &'static str,
        context: &dyn Fn() -> String,
    ) -> Result<(i64, Token<'a>), MeshError> {
        let tok = self.cursor.next(context)?;
        match parse_int(tok.text) {
            Some(v) => Ok((v, tok)),
            None => Err(self.cursor.bad_token(tok, expected, context())),
        }
    }

    /// Whether the rest of the file can hold `values` numbers (one character and one separator
    /// each at least).
    fn fits(&self, values: u128) -> bool {
        values <= u128::from(self.cursor.tokens.remaining() as u64).div_ceil(2)
    }

    fn block(&mut self, support: Support) -> Result<SolutionBlock, SolutionError> {
        let keyword = support.keyword();
        let (value, tok) = self.int("a count (an integer)", &|| format!("the {keyword} count"))?;
        let count_at = Location::Line(tok.line);
        let count = u64::try_from(value).map_err(|_| MeshError::NegativeCount {
            path: self.cursor.path.to_path_buf(),
            at: count_at,
            keyword,
            count: value,
        })?;
        let (n, tok) = self.int("an integer", &|| format!("the {keyword} type count"))?;
        let max = (self.cursor.tokens.remaining() as u64).div_ceil(2);
        let n = match u64::try_from(n) {
            Ok(k) if k >= 1 && k <= max => k as usize,
            _ => {
                return Err(SolutionError::BadTypeCount {
                    path: self.cursor.path.to_path_buf(),
                    at: Location::Line(tok.line),
                    keyword,
                    count: n,
                    max,
                });
            }
        };
        let mut types = Vec::with_capacity(n);
        for index in 1..=n {
            let (code, tok) = self.int("an integer", &|| format!("{keyword} type {index}"))?;
            types.push(
                SolType::from_code(code).ok_or_else(|| SolutionError::BadType {
                    path: self.cursor.path.to_path_buf(),
                    at: Location::Line(tok.line),
                    keyword,
                    index,
                    code,
                })?,
            );
        }
        let width: usize = types.iter().map(|t| t.width(self.dimension)).sum();
        let values = u128::from(count) * width as u128;
        if !self.fits(values) {
            return Err(MeshError::CountTooLargeText {
                path: self.cursor.path.to_path_buf(),
                at: count_at,
                keyword,
                count,
                values,
                remaining: self.cursor.tokens.remaining() as u64,
            }
            .into());
        }
        // values <= remaining bytes, so it fits in usize.
        let mut out = Vec::with_capacity(values as usize);
        for line in 0..count {
            for _ in 0..width {
                let context = || format!("{keyword} {}", line + 1);
                let tok = self.cursor.next(&context)?;
                let v = parse_real(tok.text)
                    .ok_or_else(|| self.cursor.bad_token(tok, "a real number", context()))?;
                out.push(v);
            }
        }
        Ok(SolutionBlock {
            support,
            types,
            values: out,
        })
    }
}

/// Encodes checked solutions as text laid out as libMeshb writes it.
pub(super) fn encode(
    solutions: &Solutions,
    version: Version,
) -> Result<Vec<u8>, SolutionEncodeError> {
    let values: usize = solutions.blocks.iter().map(|b| b.values.len()).sum();
    let mut text = String::with_capacity(64 + values * 12);
    write_text(&mut text, solutions, version)
        .map_err(|fmt::Error| SolutionEncodeError::Common(EncodeError::Formatting))?;
    Ok(text.into_bytes())
}

fn write_text(s: &mut String, solutions: &Solutions, version: Version) -> fmt::Result {
    let dim = solutions.dimension;
    let single = version.real_bytes() == 4;
    write!(s, "MeshVersionFormatted {}\n\n", version.number())?;
    writeln!(s, "Dimension {dim}")?;
    for block in &solutions.blocks {
        let width = block.width(dim);
        write!(
            s,
            "\n{}\n{}\n{}",
            block.support.keyword(),
            block.count(dim),
            block.types.len()
        )?;
        for t in &block.types {
            write!(s, " {}", t.code())?;
        }
        s.push('\n');
        for line in block.values.chunks_exact(width) {
            for (i, &v) in line.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                write_real(s, v, single)?;
            }
            s.push('\n');
        }
    }
    s.push_str("\nEnd\n");
    Ok(())
}
