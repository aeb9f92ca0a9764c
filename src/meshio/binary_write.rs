//! Writing `.meshb` files (always little-endian), built in one buffer of the exact size.

use super::element::ElementKind;
use super::error::EncodeError;
use super::format::Version;
use super::keywords;
use super::mesh::Mesh;

/// Element kinds in increasing keyword code, the order libMeshb-based tools usually write.
pub(crate) const WRITE_ORDER: [ElementKind; 7] = [
    ElementKind::Edges,
    ElementKind::Triangles,
    ElementKind::Quadrilaterals,
    ElementKind::Tetrahedra,
    ElementKind::Prisms,
    ElementKind::Hexahedra,
    ElementKind::Pyramids,
];

/// Appends fields of one version's sizes.
pub(super) struct Out {
    pub(super) buf: Vec<u8>,
    pub(super) version: Version,
}

impl Out {
    pub(super) fn i32(&mut self, v: i32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A 4- or 8-byte little-endian word (values were checked to fit).
    pub(super) fn word(&mut self, v: i64, bytes: usize) {
        if bytes == 4 {
            self.i32(v as i32);
        } else {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// An integer of the version's int size.
    pub(super) fn int(&mut self, v: i64) {
        self.word(v, self.version.int_bytes());
    }

    pub(super) fn real(&mut self, v: f64) {
        if self.version.real_bytes() == 4 {
            self.buf.extend_from_slice(&(v as f32).to_le_bytes());
        } else {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// A next-keyword position (checked to fit by the caller).
    pub(super) fn position(&mut self, v: u64) {
        self.word(v as i64, self.version.position_bytes());
    }

    pub(super) fn count(&mut self, v: usize) {
        self.word(v as i64, self.version.count_bytes());
    }

    /// Keyword code, next position (end of this block's data), count.
    pub(super) fn block_header(&mut self, code: i32, count: usize, data_bytes: usize) {
        let header = 4 + self.version.position_bytes() + self.version.count_bytes();
        let next = self.buf.len() + header + data_bytes;
        self.i32(code);
        self.position(next as u64);
        self.count(count);
    }
}

/// Encodes `mesh`; the mesh was checked by [`super::check_writable`].
pub(crate) fn encode(mesh: &Mesh, version: Version) -> Result<Vec<u8>, EncodeError> {
    let dim = usize::from(mesh.dimension);
    let (int, real, pos) = (
        version.int_bytes(),
        version.real_bytes(),
        version.position_bytes(),
    );
    let block_header = 4 + pos + version.count_bytes();
    let vertex_line = dim * real + int;
    let header = 12 + pos + 4;
    let mut size = header + 4 + pos;
    if !mesh.vertices.is_empty() {
        size += block_header + mesh.vertices.len() * vertex_line;
    }
    for kind in WRITE_ORDER {
        let count = mesh.count(kind);
        if count > 0 {
            size += block_header + count * (kind.nodes() + 1) * int;
        }
    }
    if pos == 4 && size > i32::MAX as usize {
        return Err(EncodeError::FileTooLarge {
            bytes: size as u64,
            version: version.number(),
        });
    }

    let mut out = Out {
        buf: Vec::with_capacity(size),
        version,
    };
    out.i32(1);
    out.i32(version.number() as i32);
    out.i32(keywords::DIMENSION);
    out.position(header as u64);
    out.i32(dim as i32);

    if !mesh.vertices.is_empty() {
        let n = mesh.vertices.len();
        out.block_header(keywords::VERTICES, n, n * vertex_line);
        for (xyz, &r) in mesh.vertices.iter().zip(&mesh.vertex_refs) {
            for &c in &xyz[..dim] {
                out.real(c);
            }
            out.int(i64::from(r));
        }
    }
    for kind in WRITE_ORDER {
        let elements = mesh.elements(kind);
        if elements.is_empty() {
            continue;
        }
        let line = (kind.nodes() + 1) * int;
        out.block_header(kind.code(), elements.len(), elements.len() * line);
        for (nodes, r) in elements.iter() {
            for &v in nodes {
                out.int(i64::from(v) + 1);
            }
            out.int(i64::from(r));
        }
    }
    out.i32(keywords::END);
    out.position(0);
    debug_assert_eq!(out.buf.len(), size);
    Ok(out.buf)
}
