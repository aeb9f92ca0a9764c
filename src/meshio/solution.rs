//! Solution files, `.sol` (ASCII) and `.solb` (binary), as libMeshb writes them.
//!
//! A solution file has the header of a mesh file (version, dimension) and `SolAt…` keywords:
//! `SolAtVertices` (code 62), `SolAtEdges` (63), `SolAtTriangles` (64), `SolAtQuadrilaterals`
//! (65), `SolAtTetrahedra` (66), `SolAtPrisms` (67), `SolAtHexahedra` (68) and `SolAtPyramids`
//! (26). Each holds a count of lines, a number of solution types and their codes ([`SolType`]),
//! then `count` lines of reals, one field after another. In binary files the type count and the
//! codes are 4-byte integers whatever the version; reals are `f32` in version 1 and `f64`
//! otherwise (or as a FloatingPointPrecision keyword says). Other keywords (`Time`,
//! `Iterations`, mesh keywords, …) are skipped and listed in
//! [`SolutionFile::skipped_keywords`].
//!
//! Values are `f64` in memory; binary `f32` values are widened exactly and written back exactly,
//! and ASCII reals are parsed as `f64` whatever the version, as for meshes.
//!
//! ```
//! use std::path::Path;
//! use snowsim::meshio::{self, Format, SolType, SolutionBlock, Solutions, Support, Version};
//!
//! let solutions = Solutions {
//!     dimension: 3,
//!     blocks: vec![SolutionBlock {
//!         support: Support::Vertices,
//!         types: vec![SolType::Scalar, SolType::Vector],
//!         values: vec![1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 1.0, 0.0],
//!     }],
//! };
//! let bytes = meshio::solution_to_bytes(&solutions, Format::Binary, Version::V2)?;
//! let file = meshio::read_solution_bytes(&bytes, Format::Binary, Path::new("u.solb"))?;
//! assert_eq!(file.solutions, solutions);
//! assert_eq!(file.solutions.blocks[0].count(3), 2);
//! # Ok::<(), meshio::SolutionError>(())
//! ```

use std::path::Path;

use super::element::ElementKind;
use super::error::{EncodeError, MeshError};
use super::format::{Format, Version};
use super::solution_error::{SolutionEncodeError, SolutionError};
use super::{read_file_bytes, solution_ascii, solution_binary};
use crate::output::write_atomic;

/// The kind of one solution field, with its libMeshb code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SolType {
    /// `GmfSca` (1): one real.
    Scalar,
    /// `GmfVec` (2): `dimension` reals.
    Vector,
    /// `GmfSymMat` (3): `dimension × (dimension + 1) / 2` reals.
    SymMatrix,
    /// `GmfMat` (4): `dimension²` reals.
    Matrix,
}

impl SolType {
    /// Every type, by code.
    pub const ALL: [SolType; 4] = [
        SolType::Scalar,
        SolType::Vector,
        SolType::SymMatrix,
        SolType::Matrix,
    ];

    /// The libMeshb code, 1 to 4.
    pub fn code(self) -> i32 {
        match self {
            SolType::Scalar => 1,
            SolType::Vector => 2,
            SolType::SymMatrix => 3,
            SolType::Matrix => 4,
        }
    }

    /// The type of libMeshb code `code`.
    pub fn from_code(code: i64) -> Option<SolType> {
        match code {
            1 => Some(SolType::Scalar),
            2 => Some(SolType::Vector),
            3 => Some(SolType::SymMatrix),
            4 => Some(SolType::Matrix),
            _ => None,
        }
    }

    /// Number of reals of one field in `dimension`.
    pub fn width(self, dimension: u8) -> usize {
        let d = usize::from(dimension);
        match self {
            SolType::Scalar => 1,
            SolType::Vector => d,
            SolType::SymMatrix => d * (d + 1) / 2,
            SolType::Matrix => d * d,
        }
    }

    /// Lower-case name: `scalar`, `vector`, `sym_matrix`, `matrix`.
    pub fn name(self) -> &'static str {
        match self {
            SolType::Scalar => "scalar",
            SolType::Vector => "vector",
            SolType::SymMatrix => "sym_matrix",
            SolType::Matrix => "matrix",
        }
    }
}

/// The entities a solution block gives values to, one line each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Support {
    /// `SolAtVertices`.
    Vertices,
    /// `SolAtEdges`, `SolAtTriangles`, … (one keyword per element kind).
    Elements(ElementKind),
}

impl Support {
    /// Every support, in increasing keyword code of libMeshb except pyramids last.
    pub const ALL: [Support; 8] = [
        Support::Vertices,
        Support::Elements(ElementKind::Edges),
        Support::Elements(ElementKind::Triangles),
        Support::Elements(ElementKind::Quadrilaterals),
        Support::Elements(ElementKind::Tetrahedra),
        Support::Elements(ElementKind::Prisms),
        Support::Elements(ElementKind::Hexahedra),
        Support::Elements(ElementKind::Pyramids),
    ];

    /// The libMeshb keyword code: 62 to 68, or 26 for pyramids.
    pub fn code(self) -> i32 {
        match self {
            Support::Vertices => 62,
            Support::Elements(kind) => match kind {
                ElementKind::Edges => 63,
                ElementKind::Triangles => 64,
                ElementKind::Quadrilaterals => 65,
                ElementKind::Tetrahedra => 66,
                ElementKind::Prisms => 67,
                ElementKind::Hexahedra => 68,
                ElementKind::Pyramids => 26,
            },
        }
    }

    /// The keyword as spelled in files, e.g. `SolAtTetrahedra`.
    pub fn keyword(self) -> &'static str {
        match self {
            Support::Vertices => "SolAtVertices",
            Support::Elements(kind) => match kind {
                ElementKind::Edges => "SolAtEdges",
                ElementKind::Triangles => "SolAtTriangles",
                ElementKind::Quadrilaterals => "SolAtQuadrilaterals",
                ElementKind::Tetrahedra => "SolAtTetrahedra",
                ElementKind::Prisms => "SolAtPrisms",
                ElementKind::Hexahedra => "SolAtHexahedra",
                ElementKind::Pyramids => "SolAtPyramids",
            },
        }
    }

    /// The support of keyword `code`, if it is a `SolAt…` keyword.
    pub fn from_code(code: i32) -> Option<Support> {
        Support::ALL.into_iter().find(|s| s.code() == code)
    }

    /// Lower-case plural name of the entities: `vertices`, `tetrahedra`, …
    pub fn name(self) -> &'static str {
        match self {
            Support::Vertices => "vertices",
            Support::Elements(kind) => kind.name(),
        }
    }
}

/// One `SolAt…` keyword: its fields and their values.
#[derive(Debug, Clone, PartialEq)]
pub struct SolutionBlock {
    /// The entities the values belong to.
    pub support: Support,
    /// The fields of each line, in file order (at least one).
    pub types: Vec<SolType>,
    /// The values, line after line: `count × width` reals, each line the fields in order
    /// (a symmetric matrix as libMeshb stores it, row by row of its lower triangle).
    pub values: Vec<f64>,
}

impl SolutionBlock {
    /// Reals per line in `dimension`: the sum of the types' widths.
    pub fn width(&self, dimension: u8) -> usize {
        self.types.iter().map(|t| t.width(dimension)).sum()
    }

    /// Number of lines (entities) in `dimension`; 0 when there is no type.
    pub fn count(&self, dimension: u8) -> usize {
        self.values
            .len()
            .checked_div(self.width(dimension))
            .unwrap_or(0)
    }
}

/// The content of a solution file.
#[derive(Debug, Clone, PartialEq)]
pub struct Solutions {
    /// 2 or 3: sets the width of vectors and matrices.
    pub dimension: u8,
    /// The `SolAt…` keywords in file order, at most one per support.
    pub blocks: Vec<SolutionBlock>,
}

impl Solutions {
    /// The block on `support`, if any.
    pub fn block(&self, support: Support) -> Option<&SolutionBlock> {
        self.blocks.iter().find(|b| b.support == support)
    }
}

/// Solutions read from a file, with how the file was encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct SolutionFile {
    /// The solutions.
    pub solutions: Solutions,
    /// ASCII or binary.
    pub format: Format,
    /// The file's version.
    pub version: Version,
    /// Whether the binary file was big-endian (always `false` for ASCII).
    pub big_endian: bool,
    /// Keywords present in the file but not read, each once, in order of appearance (as in
    /// [`MeshFile::skipped_keywords`](super::MeshFile::skipped_keywords)).
    pub skipped_keywords: Vec<String>,
}

/// The format named by a solution file's extension: `.sol` (ASCII) or `.solb` (binary), in any
/// case.
pub fn solution_format(path: &Path) -> Result<Format, SolutionError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext.eq_ignore_ascii_case("sol") {
        Ok(Format::Ascii)
    } else if ext.eq_ignore_ascii_case("solb") {
        Ok(Format::Binary)
    } else {
        Err(SolutionError::UnknownExtension {
            path: path.to_path_buf(),
        })
    }
}

/// Reads a `.sol` or `.solb` file (format from the extension), with the checks of
/// [`read`](super::read): regular files only, no larger than the host memory available.
pub fn read_solution(path: &Path) -> Result<SolutionFile, SolutionError> {
    let format = solution_format(path)?;
    let bytes = read_file_bytes(path, format)?;
    read_solution_bytes(&bytes, format, path)
}

/// Reads a solution file held in memory; `source` is the name used in errors.
pub fn read_solution_bytes(
    bytes: &[u8],
    format: Format,
    source: &Path,
) -> Result<SolutionFile, SolutionError> {
    match format {
        Format::Ascii => solution_ascii::read(bytes, source),
        Format::Binary => solution_binary::read(bytes, source),
    }
}

/// Writes `solutions` to `path` in `version`, in the format named by the extension, atomically
/// as [`write`](super::write) does.
pub fn write_solution(
    path: &Path,
    solutions: &Solutions,
    version: Version,
) -> Result<(), SolutionError> {
    let format = solution_format(path)?;
    let bytes = encode(solutions, format, version).map_err(|error| SolutionError::EncodeFile {
        path: path.to_path_buf(),
        error,
    })?;
    write_atomic(path, &bytes).map_err(|error| {
        SolutionError::File(MeshError::Write {
            path: path.to_path_buf(),
            error: Box::new(error),
        })
    })
}

/// Encodes `solutions` as the bytes of a file of `format` and `version`.
///
/// Fails if the dimension is not 2 or 3, if a block has no type or values that do not fill
/// whole lines, if two blocks share a support, if a count exceeds the 32-bit counts of versions
/// 1 to 3, or if a binary version 1 or 2 file would exceed 2 GiB.
pub fn solution_to_bytes(
    solutions: &Solutions,
    format: Format,
    version: Version,
) -> Result<Vec<u8>, SolutionError> {
    Ok(encode(solutions, format, version)?)
}

fn encode(
    solutions: &Solutions,
    format: Format,
    version: Version,
) -> Result<Vec<u8>, SolutionEncodeError> {
    check_writable(solutions, version)?;
    match format {
        Format::Ascii => solution_ascii::encode(solutions, version),
        Format::Binary => solution_binary::encode(solutions, version),
    }
}

fn check_writable(solutions: &Solutions, version: Version) -> Result<(), SolutionEncodeError> {
    let dim = solutions.dimension;
    if dim != 2 && dim != 3 {
        return Err(EncodeError::BadDimension(dim).into());
    }
    for (i, block) in solutions.blocks.iter().enumerate() {
        let keyword = block.support.keyword();
        if solutions.blocks[..i]
            .iter()
            .any(|b| b.support == block.support)
        {
            return Err(SolutionEncodeError::Duplicate { keyword });
        }
        if block.types.is_empty() {
            return Err(SolutionEncodeError::NoTypes { keyword });
        }
        if i32::try_from(block.types.len()).is_err() {
            return Err(SolutionEncodeError::TooManyTypes {
                keyword,
                types: block.types.len(),
            });
        }
        let width = block.width(dim);
        if block.values.len() % width != 0 {
            return Err(SolutionEncodeError::PartialLine {
                keyword,
                values: block.values.len(),
                width,
            });
        }
        let count = block.values.len() / width;
        if version.count_bytes() == 4 && count > i32::MAX as usize {
            return Err(EncodeError::CountTooLarge {
                keyword,
                count,
                version: version.number(),
            }
            .into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_widths() {
        let codes: Vec<i32> = Support::ALL.iter().map(|s| s.code()).collect();
        assert_eq!(codes, [62, 63, 64, 65, 66, 67, 68, 26]);
        for s in Support::ALL {
            assert_eq!(Support::from_code(s.code()), Some(s));
            assert_eq!(super::super::keywords::name(s.code()), Some(s.keyword()));
        }
        assert_eq!(Support::from_code(4), None);
        let widths: Vec<[usize; 2]> = SolType::ALL
            .iter()
            .map(|t| [t.width(2), t.width(3)])
            .collect();
        assert_eq!(widths, [[1, 1], [2, 3], [3, 6], [4, 9]]);
        for t in SolType::ALL {
            assert_eq!(SolType::from_code(i64::from(t.code())), Some(t));
        }
        assert_eq!(SolType::from_code(0), None);
        assert_eq!(SolType::from_code(5), None);
    }

    #[test]
    fn extensions() {
        assert!(matches!(
            solution_format(Path::new("a.SOL")),
            Ok(Format::Ascii)
        ));
        assert!(matches!(
            solution_format(Path::new("a.solb")),
            Ok(Format::Binary)
        ));
        let e = solution_format(Path::new("a.mesh")).unwrap_err();
        assert!(e.to_string().starts_with("a.mesh: "), "{e}");
    }
}
