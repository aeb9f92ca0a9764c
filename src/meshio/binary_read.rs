//! Reading `.meshb` files held in memory.
//!
//! First the keyword chain is walked (code, next-keyword position), checking that positions
//! increase and stay in the file; then FloatingPointPrecision, Vertices and the element
//! keywords are decoded in bulk, each block's size checked against the file before anything is
//! allocated from its count.

use std::collections::HashSet;
use std::path::Path;

use super::MeshFile;
use super::binary_decode::{self, Layout, Width};
use super::element::{ElementKind, Elements};
use super::error::{Location, MeshError, PositionProblem};
use super::format::{Format, Version};
use super::keywords;
use super::mesh::{Mesh, first_out_of_range};

/// A keyword found in the chain that the reader interprets.
#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    pub(super) code: i32,
    /// Offset of the first field after the code and position (count, or value).
    pub(super) fields: u64,
    /// Position of the next keyword, 0 if none.
    pub(super) next: u64,
}

/// A block's data, after its count was checked against the file.
pub(super) struct Data<'a> {
    pub(super) count: u64,
    /// Offset of the count field (where count errors point).
    pub(super) count_at: u64,
    pub(super) start: u64,
    pub(super) bytes: &'a [u8],
}

/// The file being read, with what is known of its layout.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) path: &'a Path,
    pub(super) big: bool,
    pub(super) version: Version,
}

impl<'a> Reader<'a> {
    pub(super) fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// `size` bytes at `at`, or a truncation error naming `what`.
    pub(super) fn field(
        &self,
        at: u64,
        size: usize,
        what: &dyn Fn() -> String,
    ) -> Result<&'a [u8], MeshError> {
        let slice = usize::try_from(at)
            .ok()
            .and_then(|start| self.bytes.get(start..start.checked_add(size)?));
        slice.ok_or_else(|| MeshError::Truncated {
            path: self.path.to_path_buf(),
            at: Location::Byte(at),
            what: what(),
            needed: size as u64,
            available: self.len().saturating_sub(at),
        })
    }

    /// Signed integer of `width` at `at`, in the file's byte order.
    pub(super) fn int(
        &self,
        at: u64,
        width: Width,
        what: &dyn Fn() -> String,
    ) -> Result<i64, MeshError> {
        let bytes = self.field(at, width.bytes(), what)?;
        Ok(binary_decode::int_at(bytes, 0, width, self.big).unwrap_or_default())
    }

    pub(super) fn i32(&self, at: u64, what: &dyn Fn() -> String) -> Result<i32, MeshError> {
        // A 4-byte integer always fits in i32.
        Ok(self.int(at, Width::Four, what)? as i32)
    }

    pub(super) fn position(&self, at: u64, keyword: &str) -> Result<i64, MeshError> {
        let width = Width::of(self.version.position_bytes());
        self.int(at, width, &|| format!("next-keyword position of {keyword}"))
    }

    /// Checks a next-keyword position read at `at`: 0 (none) or after `header_end`, within the
    /// file.
    pub(super) fn check_next(
        &self,
        keyword: &str,
        at: u64,
        raw: i64,
        header_end: u64,
    ) -> Result<u64, MeshError> {
        if raw == 0 {
            return Ok(0);
        }
        let problem = match u64::try_from(raw) {
            Ok(p) if p > self.len() => PositionProblem::PastEnd {
                file_len: self.len(),
            },
            Ok(p) if p >= header_end => return Ok(p),
            _ => PositionProblem::NotAfter { header_end },
        };
        Err(MeshError::KeywordPosition {
            path: self.path.to_path_buf(),
            at: Location::Byte(at),
            keyword: keyword.to_owned(),
            position: raw,
            problem,
        })
    }

    /// Reads a block's count and checks that `count * line` bytes follow it, within the file
    /// and before the next keyword.
    pub(super) fn data(
        &self,
        block: Block,
        keyword: &'static str,
        line: usize,
    ) -> Result<Data<'a>, MeshError> {
        self.data_after(block, keyword, 0, line)
    }

    /// As [`Reader::data`], for lines that start `skip` bytes after the count (a solution
    /// keyword's type header lies between them).
    pub(super) fn data_after(
        &self,
        block: Block,
        keyword: &'static str,
        skip: u64,
        line: usize,
    ) -> Result<Data<'a>, MeshError> {
        let path = || self.path.to_path_buf();
        let count_width = Width::of(self.version.count_bytes());
        let count_at = block.fields;
        let count = self.int(count_at, count_width, &|| format!("{keyword} count"))?;
        let at = Location::Byte(count_at);
        let count = u64::try_from(count).map_err(|_| MeshError::NegativeCount {
            path: path(),
            at,
            keyword,
            count,
        })?;
        let start = (count_at + count_width.bytes() as u64).saturating_add(skip);
        let available = self.len().saturating_sub(start);
        let needed = u128::from(count) * line as u128;
        if needed > u128::from(available) {
            return Err(MeshError::CountTooLarge {
                path: path(),
                at,
                keyword,
                count,
                needed,
                available,
            });
        }
        // needed <= available <= file length, so these conversions are exact.
        let end = start + needed as u64;
        if block.next != 0 && end > block.next {
            return Err(MeshError::BlockOverlap {
                path: path(),
                at,
                keyword,
                data_end: end,
                next: block.next,
            });
        }
        Ok(Data {
            count,
            count_at,
            start,
            bytes: &self.bytes[start as usize..end as usize],
        })
    }
}

/// The header of a binary mesh or solution file: the reader (byte order and version known),
/// the dimension (2 or 3) and the position of the first keyword after Dimension (0 if none).
pub(super) fn header<'a>(
    bytes: &'a [u8],
    path: &'a Path,
) -> Result<(Reader<'a>, u8, u64), MeshError> {
    let mut r = Reader {
        bytes,
        path,
        big: false,
        version: Version::V1,
    };
    // Read little-endian: 1 means a little-endian file, 1 byte-swapped a big-endian one.
    let tag = r.int(0, Width::Four, &|| "endianness code".to_owned())? as u32;
    r.big = match tag {
        1 => false,
        0x0100_0000 => true,
        value => {
            return Err(MeshError::BadEndianness {
                path: path.to_path_buf(),
                value,
            });
        }
    };
    let number = r.i32(4, &|| "version".to_owned())?;
    r.version = u32::try_from(number)
        .ok()
        .and_then(Version::from_number)
        .ok_or_else(|| MeshError::UnknownVersion {
            path: path.to_path_buf(),
            at: Location::Byte(4),
            version: i64::from(number),
        })?;

    // The chain starts with the Dimension keyword at byte 8.
    let code = r.i32(8, &|| "first keyword code".to_owned())?;
    if code != keywords::DIMENSION {
        return Err(MeshError::NoDimensionHeader {
            path: path.to_path_buf(),
            at: Location::Byte(8),
            code,
        });
    }
    let pos_bytes = r.version.position_bytes() as u64;
    let raw_next = r.position(12, "Dimension")?;
    let dim_at = 12 + pos_bytes;
    let dimension = r.i32(dim_at, &|| "dimension".to_owned())?;
    if dimension != 2 && dimension != 3 {
        return Err(MeshError::BadDimension {
            path: path.to_path_buf(),
            at: Location::Byte(dim_at),
            dimension: i64::from(dimension),
        });
    }
    let next = r.check_next("Dimension", 12, raw_next, dim_at + 4)?;
    // dimension is 2 or 3 here.
    Ok((r, dimension as u8, next))
}

/// Reads a whole binary file.
pub(crate) fn read(bytes: &[u8], path: &Path) -> Result<MeshFile, MeshError> {
    let (r, dimension, next) = header(bytes, path)?;
    let (blocks, skipped_keywords, ended) = walk_chain(&r, next)?;

    let int = Width::of(r.version.int_bytes());
    let mut real = Width::of(r.version.real_bytes());
    if let Some(block) = find(&blocks, keywords::FLOATING_POINT_PRECISION) {
        real = precision(&r, block, int)?;
    }
    let layout = Layout {
        big: r.big,
        real,
        int,
    };

    let mut mesh = Mesh::new(dimension);
    if let Some(block) = find(&blocks, keywords::VERTICES) {
        read_vertices(&r, block, layout, &mut mesh)?;
    }
    for kind in ElementKind::ALL {
        if let Some(block) = find(&blocks, kind.code()) {
            let elements = read_elements(&r, block, layout, kind, mesh.vertices.len())?;
            mesh.set_elements(elements);
        }
    }
    Ok(MeshFile {
        mesh,
        format: Format::Binary,
        version: r.version,
        big_endian: r.big,
        skipped_keywords,
        ended,
    })
}

/// The interpreted keywords of a chain, the names of the skipped ones (each once, in order of
/// appearance), and whether the chain ended with `End`.
type Chain = (Vec<Block>, Vec<String>, bool);

/// Follows the chain from `first` ([`Chain`]).
fn walk_chain(r: &Reader<'_>, first: u64) -> Result<Chain, MeshError> {
    let pos_bytes = r.version.position_bytes() as u64;
    let mut blocks: Vec<Block> = Vec::new();
    let mut skipped = Vec::new();
    let mut seen_skipped = HashSet::new();
    let mut at = first;
    // Positions strictly increase, so this ends within the file.
    while at != 0 {
        let code = r.i32(at, &|| "keyword code".to_owned())?;
        let name = keywords::describe(code);
        let raw_next = r.position(at + 4, &name)?;
        if code == keywords::END {
            return Ok((blocks, skipped, true));
        }
        let fields = at + 4 + pos_bytes;
        let next = r.check_next(&name, at + 4, raw_next, fields)?;
        let interpreted = code == keywords::VERTICES
            || code == keywords::FLOATING_POINT_PRECISION
            || code == keywords::DIMENSION
            || ElementKind::from_code(code).is_some();
        if interpreted {
            if code == keywords::DIMENSION || find(&blocks, code).is_some() {
                return Err(MeshError::DuplicateKeyword {
                    path: r.path.to_path_buf(),
                    at: Location::Byte(at),
                    keyword: keywords::name(code).unwrap_or("?"),
                });
            }
            blocks.push(Block { code, fields, next });
        } else if seen_skipped.insert(code) {
            skipped.push(name);
        }
        at = next;
    }
    Ok((blocks, skipped, false))
}

fn find(blocks: &[Block], code: i32) -> Option<Block> {
    blocks.iter().copied().find(|b| b.code == code)
}

/// The real width set by a FloatingPointPrecision block (an integer, 32 or 64).
pub(super) fn precision(r: &Reader<'_>, block: Block, int: Width) -> Result<Width, MeshError> {
    let value = r.int(block.fields, int, &|| {
        "FloatingPointPrecision value".to_owned()
    })?;
    let at = Location::Byte(block.fields);
    let end = block.fields + int.bytes() as u64;
    if block.next != 0 && end > block.next {
        return Err(MeshError::BlockOverlap {
            path: r.path.to_path_buf(),
            at,
            keyword: "FloatingPointPrecision",
            data_end: end,
            next: block.next,
        });
    }
    match value {
        32 => Ok(Width::Four),
        64 => Ok(Width::Eight),
        _ => Err(MeshError::BadPrecision {
            path: r.path.to_path_buf(),
            at,
            value,
        }),
    }
}

fn read_vertices(
    r: &Reader<'_>,
    block: Block,
    layout: Layout,
    mesh: &mut Mesh,
) -> Result<(), MeshError> {
    let dim = usize::from(mesh.dimension);
    let line = layout.vertex_line(dim);
    let data = r.data(block, "Vertices", line)?;
    if data.count > u64::from(u32::MAX) {
        return Err(MeshError::TooManyVertices {
            path: r.path.to_path_buf(),
            at: Location::Byte(data.count_at),
            count: data.count,
        });
    }
    // count * line bytes are in the file, so count fits in memory terms.
    let count = data.count as usize;
    let mut xyz = Vec::with_capacity(count);
    let mut refs = Vec::with_capacity(count);
    if !binary_decode::vertices(layout, data.bytes, dim, &mut xyz, &mut refs) {
        let ref_offset = dim * layout.real.bytes();
        return Err(wide_ref(r, &data, line, ref_offset, layout, "Vertices"));
    }
    mesh.vertices = xyz;
    mesh.vertex_refs = refs;
    Ok(())
}

fn read_elements(
    r: &Reader<'_>,
    block: Block,
    layout: Layout,
    kind: ElementKind,
    vertex_count: usize,
) -> Result<Elements, MeshError> {
    let n = kind.nodes();
    let line = layout.element_line(n);
    let data = r.data(block, kind.keyword(), line)?;
    let count = data.count as usize;
    let mut nodes = Vec::with_capacity(count * n);
    let mut refs = Vec::with_capacity(count);
    if !binary_decode::elements(layout, data.bytes, n, &mut nodes, &mut refs) {
        let ref_offset = n * layout.int.bytes();
        return Err(wide_ref(r, &data, line, ref_offset, layout, kind.keyword()));
    }
    if let Some(pos) = first_out_of_range(&nodes, vertex_count) {
        let element = pos / n;
        let element_at = data.start + (element * line) as u64;
        let index_at = element * line + (pos % n) * layout.int.bytes();
        let index = binary_decode::int_at(data.bytes, index_at, layout.int, layout.big);
        return Err(MeshError::NodeIndex {
            path: r.path.to_path_buf(),
            at: Location::Byte(element_at),
            kind,
            element: element as u64 + 1,
            index: index.unwrap_or_default(),
            vertex_count: vertex_count as u64,
        });
    }
    Ok(Elements::from_parts(kind, nodes, refs))
}

/// The error for the first reference of a block that does not fit in 32 bits.
fn wide_ref(
    r: &Reader<'_>,
    data: &Data<'_>,
    line: usize,
    ref_offset: usize,
    layout: Layout,
    keyword: &'static str,
) -> MeshError {
    let (entity, value) =
        binary_decode::first_wide_ref(data.bytes, line, ref_offset, layout).unwrap_or((0, 0));
    MeshError::RefOutOfRange {
        path: r.path.to_path_buf(),
        at: Location::Byte(data.start + (entity * line + ref_offset) as u64),
        keyword,
        entity: entity as u64 + 1,
        value,
    }
}
