//! Reading and writing the INRIA mesh formats as libMeshb does: ASCII `.mesh` and binary
//! `.meshb`, versions 1 to 4, dimension 2 or 3; and writing VTK XML unstructured grids
//! (`.vtu`, module [`vtu`]) that ParaView opens, with point data such as a wind field, and the
//! same split into pieces by a partition (`.pvtu`, module [`pvtu`]).
//!
//! Supported keywords are Dimension, Vertices, Edges, Triangles, Quadrilaterals, Tetrahedra,
//! Prisms, Hexahedra, Pyramids (each element with its reference), FloatingPointPrecision (which
//! overrides the real size when reading) and End. Other keywords are skipped and their names
//! listed in [`MeshFile::skipped_keywords`]. Binary files may be big-endian (their first word
//! reads 16777216); files are always written little-endian.
//!
//! Node indices are 1-based in files and 0-based in memory ([`Elements`]). References are `i32`
//! in memory: a version 4 file whose reference does not fit is an error. Coordinates are `f64`
//! in memory: binary `f32` values (version 1) are stored exactly and written back exactly;
//! ASCII reals are parsed as `f64` whatever the version, unlike libMeshb, which rounds version 1
//! text to `f32` (TetGen writes version 1 files with 17 significant digits).
//!
//! Errors from reading ([`MeshError`]) name the file and a location in it: a byte offset for
//! binary files, a line for ASCII ones. Counts are checked against the bytes left in the file
//! before anything is allocated from them, so a corrupted count is an error, not an abort.
//!
//! ```
//! use std::path::Path;
//! use snowsim::meshio::{self, ElementKind, Format, Mesh, Version};
//!
//! let mut mesh = Mesh::new(3);
//! for p in [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] {
//!     mesh.push_vertex(p, 0);
//! }
//! mesh.elements_mut(ElementKind::Tetrahedra).push(&[0, 1, 2, 3], 1);
//!
//! let bytes = meshio::to_bytes(&mesh, Format::Binary, Version::V2)?;
//! let file = meshio::read_bytes(&bytes, Format::Binary, Path::new("tet.meshb"))?;
//! assert_eq!(file.mesh, mesh);
//! assert_eq!(file.version, Version::V2);
//! # Ok::<(), meshio::MeshError>(())
//! ```

mod ascii_cursor;
mod ascii_read;
mod ascii_tokens;
mod ascii_write;
mod binary_decode;
mod binary_read;
mod binary_write;
mod element;
mod error;
mod format;
pub mod generate;
mod keywords;
mod mesh;
pub mod pvtu;
mod solution;
mod solution_ascii;
mod solution_binary;
mod solution_error;
mod solution_names;
mod topology;
pub mod vtu;

use std::io::Read;
use std::path::Path;

pub use element::{ElementKind, Elements};
pub use error::{EncodeError, Location, MeshError, PositionProblem};
pub use format::{Format, Version};
pub use mesh::{CoordinateError, IndexError, Mesh};
pub use solution::{
    SolType, SolutionBlock, SolutionFile, Solutions, Support, read_solution, read_solution_bytes,
    solution_format, solution_to_bytes, write_solution,
};
pub use solution_error::{SolutionEncodeError, SolutionError};
pub use solution_names::{
    REFERENCE_STRINGS, REFERENCE_TEXT_BYTES, ReferenceString, named_solution_to_bytes,
    read_named_solution, read_reference_strings, write_named_solution,
};
pub use vtu::{VtuArray, VtuData, VtuError, write_vtu, write_vtu_file};

use crate::budget::{Budget, ByteSize, Estimate};
use crate::input;
use crate::output::write_atomic;

/// A mesh read from a file, with how the file was encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshFile {
    /// The mesh.
    pub mesh: Mesh,
    /// ASCII or binary.
    pub format: Format,
    /// The file's version. (A FloatingPointPrecision keyword may have overridden its real size;
    /// writing back with this version uses the version's own real size.)
    pub version: Version,
    /// Whether the binary file was big-endian (always `false` for ASCII).
    pub big_endian: bool,
    /// Keywords present in the file but not read, each once, in order of appearance: their
    /// libMeshb name (e.g. `Corners`), or `code N` for a binary code libMeshb does not know, or
    /// the word itself for an unknown ASCII keyword.
    pub skipped_keywords: Vec<String>,
    /// Whether the file ended with the `End` keyword. Readers accept a file without it (some
    /// writers leave it out), but a file cut short at a keyword boundary looks the same, so
    /// `mesh info --check` reports its absence.
    pub ended: bool,
}

/// Reads a `.mesh` or `.meshb` file (format from the extension, in any case).
///
/// Only regular files are read ([`input::open`]), so a name pointing at a FIFO or a device such
/// as `/dev/zero` is an error rather than a hang or an endless read; a file larger than the
/// host memory available ([`Budget::host`]) is refused before it is read.
pub fn read(path: &Path) -> Result<MeshFile, MeshError> {
    let format = Format::from_path(path)?;
    let bytes = read_file_bytes(path, format)?;
    read_bytes(&bytes, format, path)
}

/// Bytes of a file's start judged before the rest is read ([`read_file_bytes`]).
const HEAD_BYTES: u64 = 64 << 10;

/// The bytes of a regular file no larger than the host memory available (see [`read`]), whose
/// start is judged first, so that a large file of something else is refused before it is read
/// whole: a binary file must start with the endianness code, an ASCII one must have no NUL
/// byte in its first [`HEAD_BYTES`].
fn read_file_bytes(path: &Path, format: Format) -> Result<Vec<u8>, MeshError> {
    let read_error = |error| MeshError::Read {
        path: path.to_path_buf(),
        error,
    };
    let (file, size) = input::open(path).map_err(|e| read_error(e.into_io_error()))?;
    let mut head = Vec::with_capacity(usize::try_from(size.min(HEAD_BYTES)).unwrap_or(0));
    let mut file = std::io::BufReader::new(file);
    (&mut file)
        .take(HEAD_BYTES)
        .read_to_end(&mut head)
        .map_err(read_error)?;
    match format {
        Format::Binary => {
            if let Some(code) = head.first_chunk::<4>().map(|c| u32::from_le_bytes(*c))
                && code != 1
                && code != 1u32.swap_bytes()
            {
                return Err(MeshError::BadEndianness {
                    path: path.to_path_buf(),
                    value: code,
                });
            }
        }
        Format::Ascii => {
            if let Some(offset) = head.iter().position(|&b| b == 0) {
                let line = head[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
                return Err(MeshError::NotText {
                    path: path.to_path_buf(),
                    at: Location::Line(line),
                    offset: offset as u64,
                });
            }
        }
    }
    let estimate = Estimate::new(
        format!("{} ({})", path.display(), ByteSize(size)),
        "reading it",
        size,
    );
    Budget::host()
        .check(&estimate)
        .map_err(|error| MeshError::Memory {
            path: path.to_path_buf(),
            error: Box::new(error),
        })?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    bytes.extend_from_slice(&head);
    drop(head);
    file.read_to_end(&mut bytes).map_err(read_error)?;
    Ok(bytes)
}

/// Reads a mesh file held in memory; `source` is the name used in errors.
pub fn read_bytes(bytes: &[u8], format: Format, source: &Path) -> Result<MeshFile, MeshError> {
    match format {
        Format::Ascii => ascii_read::read(bytes, source),
        Format::Binary => binary_read::read(bytes, source),
    }
}

/// Writes `mesh` to `path` in `version`, in the format named by the extension.
///
/// The file is written atomically ([`write_atomic`]): under a temporary name in the same
/// directory, then renamed, so a failed or interrupted write never leaves a half-written file,
/// nor destroys the file that was there, which may be the mesh being converted. A symbolic
/// link is followed (its target is replaced) and the old file's permissions are kept.
pub fn write(path: &Path, mesh: &Mesh, version: Version) -> Result<(), MeshError> {
    let format = Format::from_path(path)?;
    let bytes = encode(mesh, format, version).map_err(|error| MeshError::EncodeFile {
        path: path.to_path_buf(),
        error,
    })?;
    write_atomic(path, &bytes).map_err(|error| MeshError::Write {
        path: path.to_path_buf(),
        error: Box::new(error),
    })
}

/// Encodes `mesh` as the bytes of a file of `format` and `version`.
///
/// Fails if the dimension is not 2 or 3, if `vertex_refs` and `vertices` differ in length, if an
/// element uses a missing vertex, if a count exceeds the 32-bit counts of versions 1 to 3, or if
/// a binary version 1 or 2 file would exceed its 32-bit positions (2 GiB). In dimension 2 only
/// `x` and `y` are written.
pub fn to_bytes(mesh: &Mesh, format: Format, version: Version) -> Result<Vec<u8>, MeshError> {
    Ok(encode(mesh, format, version)?)
}

fn encode(mesh: &Mesh, format: Format, version: Version) -> Result<Vec<u8>, EncodeError> {
    check_writable(mesh, version)?;
    match format {
        Format::Ascii => ascii_write::encode(mesh, version),
        Format::Binary => binary_write::encode(mesh, version),
    }
}

/// Checks what every format needs before encoding.
fn check_writable(mesh: &Mesh, version: Version) -> Result<(), EncodeError> {
    if mesh.dimension != 2 && mesh.dimension != 3 {
        return Err(EncodeError::BadDimension(mesh.dimension));
    }
    if mesh.vertex_refs.len() != mesh.vertices.len() {
        return Err(EncodeError::VertexRefCount {
            vertices: mesh.vertices.len(),
            refs: mesh.vertex_refs.len(),
        });
    }
    mesh.validate_indices()?;
    if version.count_bytes() == 4 {
        // With every index below the vertex count, index + 1 fits in int32 as well.
        let counts = std::iter::once(("Vertices", mesh.vertices.len())).chain(
            ElementKind::ALL
                .iter()
                .map(|&k| (k.keyword(), mesh.count(k))),
        );
        for (keyword, count) in counts {
            if count > i32::MAX as usize {
                return Err(EncodeError::CountTooLarge {
                    keyword,
                    count,
                    version: version.number(),
                });
            }
        }
    }
    Ok(())
}
