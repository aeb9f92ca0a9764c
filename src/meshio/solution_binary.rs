//! Reading and writing `.solb` files, with the header, keyword chain and bulk decoding of the
//! `.meshb` code.
//!
//! A `SolAt…` keyword is: code, next-keyword position, count (4 or 8 bytes by version), a 4-byte
//! type count, that many 4-byte type codes, then `count` lines of reals.

use std::path::Path;

use super::binary_decode::{self, Layout, Width};
use super::binary_read::{self, Block, Reader};
use super::binary_write::Out;
use super::error::{Location, MeshError};
use super::format::{Format, Version};
use super::keywords;
use super::solution::{SolType, SolutionBlock, SolutionFile, Solutions, Support};
use super::solution_error::{SolutionEncodeError, SolutionError};
use crate::meshio::EncodeError;

/// Reads a whole binary solution file.
pub(super) fn read(bytes: &[u8], path: &Path) -> Result<SolutionFile, SolutionError> {
    let (r, dimension, first) = binary_read::header(bytes, path)?;
    let chain = walk_chain(&r, first)?;
    let int = Width::of(r.version.int_bytes());
    let mut real = Width::of(r.version.real_bytes());
    if let Some(block) = chain.precision {
        real = binary_read::precision(&r, block, int)?;
    }
    let layout = Layout {
        big: r.big,
        real,
        int,
    };
    let blocks = chain
        .blocks
        .iter()
        .map(|&(support, block)| read_block(&r, block, support, layout, dimension))
        .collect::<Result<_, _>>()?;
    Ok(SolutionFile {
        solutions: Solutions { dimension, blocks },
        format: Format::Binary,
        version: r.version,
        big_endian: r.big,
        skipped_keywords: chain.skipped,
    })
}

/// The keywords of a file's chain that the reader interprets, and the others' names.
struct Chain {
    blocks: Vec<(Support, Block)>,
    precision: Option<Block>,
    skipped: Vec<String>,
}

/// Follows the chain from `first` (positions strictly increase, so this ends within the file).
fn walk_chain(r: &Reader<'_>, first: u64) -> Result<Chain, MeshError> {
    let pos_bytes = r.version.position_bytes() as u64;
    let mut chain = Chain {
        blocks: Vec::new(),
        precision: None,
        skipped: Vec::new(),
    };
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
        let block = Block { code, fields, next };
        let duplicate = |keyword| MeshError::DuplicateKeyword {
            path: r.path.to_path_buf(),
            at: Location::Byte(at),
            keyword,
        };
        if code == keywords::DIMENSION {
            return Err(duplicate("Dimension"));
        } else if code == keywords::FLOATING_POINT_PRECISION {
            if chain.precision.replace(block).is_some() {
                return Err(duplicate("FloatingPointPrecision"));
            }
        } else if let Some(support) = Support::from_code(code) {
            if chain.blocks.iter().any(|&(s, _)| s == support) {
                return Err(duplicate(support.keyword()));
            }
            chain.blocks.push((support, block));
        } else if !chain.skipped.contains(&name) {
            chain.skipped.push(name);
        }
        at = next;
    }
    Ok(chain)
}

/// Reads one `SolAt…` keyword: its type header, then its lines, whose size is checked against
/// the file before anything is allocated.
fn read_block(
    r: &Reader<'_>,
    block: Block,
    support: Support,
    layout: Layout,
    dimension: u8,
) -> Result<SolutionBlock, SolutionError> {
    let keyword = support.keyword();
    let types_at = block.fields + r.version.count_bytes() as u64;
    let count = r.i32(types_at, &|| format!("{keyword} type count"))?;
    let max = r.len().saturating_sub(types_at + 4) / 4;
    let n = match u64::try_from(count) {
        Ok(n) if n >= 1 && n <= max => n as usize,
        _ => {
            return Err(SolutionError::BadTypeCount {
                path: r.path.to_path_buf(),
                at: Location::Byte(types_at),
                keyword,
                count: i64::from(count),
                max,
            });
        }
    };
    let mut types = Vec::with_capacity(n);
    for index in 0..n {
        let at = types_at + 4 + 4 * index as u64;
        let code = r.i32(at, &|| format!("{keyword} type {}", index + 1))?;
        let sol_type = SolType::from_code(i64::from(code)).ok_or(SolutionError::BadType {
            path: r.path.to_path_buf(),
            at: Location::Byte(at),
            keyword,
            index: index + 1,
            code: i64::from(code),
        })?;
        types.push(sol_type);
    }
    let width: usize = types.iter().map(|t| t.width(dimension)).sum();
    let skip = 4 * (n as u64 + 1);
    let data = r.data_after(block, keyword, skip, width * layout.real.bytes())?;
    let mut values = Vec::with_capacity(data.bytes.len() / layout.real.bytes());
    binary_decode::reals(layout, data.bytes, &mut values);
    Ok(SolutionBlock {
        support,
        types,
        values,
    })
}

/// Encodes checked solutions (little-endian), in one buffer of the exact size.
pub(super) fn encode(
    solutions: &Solutions,
    version: Version,
) -> Result<Vec<u8>, SolutionEncodeError> {
    let pos = version.position_bytes();
    let real = version.real_bytes();
    let header = 12 + pos + 4;
    let block_header = 4 + pos + version.count_bytes();
    let data_bytes = |b: &SolutionBlock| 4 * (b.types.len() + 1) + b.values.len() * real;
    let size = header
        + solutions
            .blocks
            .iter()
            .map(|b| block_header + data_bytes(b))
            .sum::<usize>()
        + 4
        + pos;
    if pos == 4 && size > i32::MAX as usize {
        return Err(EncodeError::FileTooLarge {
            bytes: size as u64,
            version: version.number(),
        }
        .into());
    }
    let mut out = Out {
        buf: Vec::with_capacity(size),
        version,
    };
    out.i32(1);
    out.i32(version.number() as i32);
    out.i32(keywords::DIMENSION);
    out.position(header as u64);
    out.i32(i32::from(solutions.dimension));
    for block in &solutions.blocks {
        let count = block.count(solutions.dimension);
        out.block_header(block.support.code(), count, data_bytes(block));
        // The type count was checked to fit in i32.
        out.i32(block.types.len() as i32);
        for t in &block.types {
            out.i32(t.code());
        }
        for &v in &block.values {
            out.real(v);
        }
    }
    out.i32(keywords::END);
    out.position(0);
    debug_assert_eq!(out.buf.len(), size);
    Ok(out.buf)
}
