//! VTK XML unstructured grids (`.vtu`), the format ParaView and VisIt open: tetrahedra and
//! triangles as cells, their mesh references as cell data, and point data arrays (scalars,
//! vectors, integers) such as a wind field.
//!
//! The file is the XML header followed by the arrays in one appended block of raw bytes
//! (`format="appended"`, `<AppendedData encoding="raw">`): little-endian, each array preceded
//! by its length in bytes as a `u64` (`header_type="UInt64"`). That is the layout VTK reads
//! fastest, with no base64 and no compression. The arrays are, in this order:
//!
//! | array                    | section     | VTK type  | components |
//! |--------------------------|-------------|-----------|------------|
//! | each point data array    | `PointData` | `Float32` or `Int32` | 1 or 3 |
//! | `ref`                    | `CellData`  | `Int32`   | 1          |
//! | the coordinates          | `Points`    | `Float64` | 3          |
//! | `connectivity`           | `Cells`     | `Int64`   | 1          |
//! | `offsets` (end of each cell) | `Cells` | `Int64`   | 1          |
//! | `types`                  | `Cells`     | `UInt8`   | 1          |
//!
//! Cells are the tetrahedra (VTK type 10, [`VTK_TETRA`]) and then the triangles (type 5,
//! [`VTK_TRIANGLE`]), their nodes 0-based and in the order given. A tetrahedron of positive
//! volume in the INRIA convention (the fourth node on the side the normal of the first three
//! points to, right-hand rule) is a valid VTK tetrahedron as it is.
//!
//! Everything is checked before the first byte is written ([`VtuError`]): each point data array
//! has one entry per point, each node index names a point, array names are non-empty, distinct,
//! and free of control characters (`&`, `<`, `>`, `"` and `'` are escaped).
//!
//! ```
//! use snowsim::meshio::{VtuArray, write_vtu};
//!
//! let points = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
//! let speed = [0.0_f32, 1.0, 2.0, 3.0];
//! let mut bytes = Vec::new();
//! write_vtu(
//!     &mut bytes,
//!     &points,
//!     &[([0, 1, 2, 3], 1)],
//!     &[([0, 1, 2], 7)],
//!     &[VtuArray::scalars("speed", &speed)],
//! )?;
//! assert!(bytes.starts_with(b"<?xml"));
//! # Ok::<(), snowsim::meshio::VtuError>(())
//! ```

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::budget::{Budget, Estimate};
use crate::output::{AtomicFile, OutputError, resolve};

/// VTK's cell type of a linear tetrahedron (`VTK_TETRA`).
pub const VTK_TETRA: u8 = 10;

/// VTK's cell type of a linear triangle (`VTK_TRIANGLE`).
pub const VTK_TRIANGLE: u8 = 5;

/// Bytes encoded before each write to the underlying writer.
const CHUNK: usize = 1 << 16;

/// The values of a point data array: one entry per point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VtuData<'a> {
    /// One `f32` per point (VTK `Float32`, one component).
    Scalars(&'a [f32]),
    /// Three `f32` per point (VTK `Float32`, three components), e.g. a velocity.
    Vectors(&'a [[f32; 3]]),
    /// One `i32` per point (VTK `Int32`, one component), e.g. a flag or a reference.
    Ints(&'a [i32]),
}

impl VtuData<'_> {
    /// Number of entries (points covered).
    pub fn len(&self) -> usize {
        match self {
            VtuData::Scalars(v) => v.len(),
            VtuData::Vectors(v) => v.len(),
            VtuData::Ints(v) => v.len(),
        }
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The VTK type name of the values.
    pub(super) fn vtk_type(&self) -> &'static str {
        match self {
            VtuData::Scalars(_) | VtuData::Vectors(_) => "Float32",
            VtuData::Ints(_) => "Int32",
        }
    }

    /// Components per entry.
    pub(super) fn components(&self) -> u64 {
        match self {
            VtuData::Vectors(_) => 3,
            VtuData::Scalars(_) | VtuData::Ints(_) => 1,
        }
    }
}

/// A named point data array.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VtuArray<'a> {
    /// The name shown in ParaView: non-empty, without control characters, unique in the file.
    pub name: &'a str,
    /// The values, one entry per point.
    pub data: VtuData<'a>,
}

impl<'a> VtuArray<'a> {
    /// A scalar array named `name`.
    pub fn scalars(name: &'a str, values: &'a [f32]) -> Self {
        Self {
            name,
            data: VtuData::Scalars(values),
        }
    }

    /// A vector array named `name`.
    pub fn vectors(name: &'a str, values: &'a [[f32; 3]]) -> Self {
        Self {
            name,
            data: VtuData::Vectors(values),
        }
    }

    /// An integer array named `name`.
    pub fn ints(name: &'a str, values: &'a [i32]) -> Self {
        Self {
            name,
            data: VtuData::Ints(values),
        }
    }
}

/// Why a `.vtu` file cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum VtuError {
    /// A point data array does not have one entry per point.
    #[error("point data array `{name}` has {entries} entries, but the mesh has {points} points")]
    PointDataLength {
        /// The array's name.
        name: String,
        /// Its number of entries.
        entries: usize,
        /// The number of points.
        points: usize,
    },
    /// A cell uses a node index that names no point.
    #[error(
        "{kind} {element} uses node {node}, but the mesh has {points} points \
         (node indices are 0-based)"
    )]
    NodeIndex {
        /// `tetrahedron` or `triangle`.
        kind: &'static str,
        /// The cell's 0-based index among the cells of its kind.
        element: usize,
        /// The node index.
        node: u32,
        /// The number of points.
        points: usize,
    },
    /// A point data array's name is empty or holds a control character (XML cannot hold
    /// most of them).
    #[error("point data array {index} has an unusable name {name:?}: {reason}")]
    BadName {
        /// The array's 0-based position in the list given.
        index: usize,
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two point data arrays have the same name.
    #[error("two point data arrays are named `{name}`; names must differ")]
    DuplicateName {
        /// The repeated name.
        name: String,
    },
    /// The writer failed.
    #[error("cannot write the .vtu data: {0}")]
    Io(#[source] std::io::Error),
    /// The file could not be written (created, filled, renamed), or the disk has no room.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// Writes tetrahedra and triangles as cells (VTK types 10 and 5, tetrahedra first), the mesh
/// references as cell data `ref`, and `point_data`, as a `.vtu` file to `writer`.
///
/// Node indices are 0-based. Everything is checked first: on a [`VtuError`] other than
/// [`VtuError::Io`] nothing has been written. See the [module documentation](self) for the
/// layout.
pub fn write_vtu(
    writer: &mut impl Write,
    points: &[[f64; 3]],
    tetrahedra: &[([u32; 4], i32)],
    triangles: &[([u32; 3], i32)],
    point_data: &[VtuArray],
) -> Result<(), VtuError> {
    let grid = Grid::new(points, tetrahedra, triangles, point_data)?;
    grid.write(writer).map_err(VtuError::Io)
}

/// Writes the same as [`write_vtu`] to the file `path`, atomically ([`AtomicFile`]): into a
/// temporary file beside it, renamed over `path` when complete, so that an error or an
/// interruption (SIGINT, SIGTERM) leaves no partial file and the old file, if any, unchanged.
///
/// The data are checked before the file is created, and the exact size of the file against
/// the free space of its disk ([`Budget::disk`]; a file system whose free space cannot be
/// measured is written to regardless).
pub fn write_vtu_file(
    path: &Path,
    points: &[[f64; 3]],
    tetrahedra: &[([u32; 4], i32)],
    triangles: &[([u32; 3], i32)],
    point_data: &[VtuArray],
) -> Result<(), VtuError> {
    let grid = Grid::new(points, tetrahedra, triangles, point_data)?;
    let target = resolve(path)?;
    if let Ok(disk) = Budget::disk(&target) {
        let estimate = Estimate::new(path.display().to_string(), "the .vtu file", grid.size());
        disk.check(&estimate)
            .map_err(|error| OutputError::DiskSpace(Box::new(error)))?;
    }
    let mut file = AtomicFile::create(path)?;
    grid.write(&mut file).map_err(|error| OutputError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    file.commit()?;
    Ok(())
}

/// One array of the appended block.
#[derive(Debug, Clone, Copy)]
enum Block<'a> {
    /// A point data array.
    PointData(VtuData<'a>),
    /// The cell references.
    Refs,
    /// The coordinates.
    Points,
    /// The node indices of every cell, one after the other.
    Connectivity,
    /// The end of each cell in the connectivity.
    Offsets,
    /// The VTK type of each cell.
    Types,
}

/// Checked input, its XML header, and the arrays to append.
struct Grid<'a> {
    points: &'a [[f64; 3]],
    tetrahedra: &'a [([u32; 4], i32)],
    triangles: &'a [([u32; 3], i32)],
    /// Everything up to and including the `_` that starts the raw data.
    header: String,
    /// The arrays, in the order of their offsets.
    blocks: Vec<Block<'a>>,
}

/// What follows the raw data.
const TRAILER: &str = "\n  </AppendedData>\n</VTKFile>\n";

impl<'a> Grid<'a> {
    /// Checks the input and lays out the file.
    fn new(
        points: &'a [[f64; 3]],
        tetrahedra: &'a [([u32; 4], i32)],
        triangles: &'a [([u32; 3], i32)],
        point_data: &'a [VtuArray<'a>],
    ) -> Result<Self, VtuError> {
        check(points.len(), tetrahedra, triangles, point_data)?;
        let mut grid = Grid {
            points,
            tetrahedra,
            triangles,
            header: String::new(),
            blocks: Vec::new(),
        };
        grid.layout(point_data);
        Ok(grid)
    }

    fn cells(&self) -> usize {
        self.tetrahedra.len() + self.triangles.len()
    }

    /// Bytes of `block`'s values (without its length prefix).
    fn byte_len(&self, block: Block) -> u64 {
        let cells = self.cells() as u64;
        match block {
            Block::PointData(data) => data.len() as u64 * data.components() * 4,
            Block::Refs => cells * 4,
            Block::Points => self.points.len() as u64 * 24,
            Block::Connectivity => {
                (self.tetrahedra.len() as u64 * 4 + self.triangles.len() as u64 * 3) * 8
            }
            Block::Offsets => cells * 8,
            Block::Types => cells,
        }
    }

    /// Writes the XML header and records the blocks in the order of their offsets.
    fn layout(&mut self, point_data: &'a [VtuArray<'a>]) {
        let mut offset = 0u64;
        let mut h = String::new();
        let mut add = |h: &mut String, grid: &mut Grid<'a>, block: Block<'a>, attributes: &str| {
            h.push_str(&format!(
                "        <DataArray {attributes} format=\"appended\" offset=\"{offset}\"/>\n"
            ));
            offset += 8 + grid.byte_len(block);
            grid.blocks.push(block);
        };
        h.push_str("<?xml version=\"1.0\"?>\n");
        h.push_str(
            "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" \
             header_type=\"UInt64\">\n",
        );
        h.push_str("  <UnstructuredGrid>\n");
        h.push_str(&format!(
            "    <Piece NumberOfPoints=\"{}\" NumberOfCells=\"{}\">\n",
            self.points.len(),
            self.cells()
        ));

        // The first scalar and vector arrays are the active attributes.
        let first = |f: fn(&VtuData) -> bool| {
            point_data
                .iter()
                .find(|a| f(&a.data))
                .map(|a| escape(a.name))
        };
        let mut active = String::new();
        if let Some(name) = first(|d| matches!(d, VtuData::Scalars(_))) {
            active.push_str(&format!(" Scalars=\"{name}\""));
        }
        if let Some(name) = first(|d| matches!(d, VtuData::Vectors(_))) {
            active.push_str(&format!(" Vectors=\"{name}\""));
        }
        h.push_str(&format!("      <PointData{active}>\n"));
        for array in point_data {
            let components = match array.data.components() {
                1 => String::new(),
                n => format!(" NumberOfComponents=\"{n}\""),
            };
            let attributes = format!(
                "type=\"{}\" Name=\"{}\"{components}",
                array.data.vtk_type(),
                escape(array.name)
            );
            add(&mut h, self, Block::PointData(array.data), &attributes);
        }
        h.push_str("      </PointData>\n");

        h.push_str("      <CellData Scalars=\"ref\">\n");
        add(&mut h, self, Block::Refs, "type=\"Int32\" Name=\"ref\"");
        h.push_str("      </CellData>\n");

        h.push_str("      <Points>\n");
        add(
            &mut h,
            self,
            Block::Points,
            "type=\"Float64\" Name=\"Points\" NumberOfComponents=\"3\"",
        );
        h.push_str("      </Points>\n");

        h.push_str("      <Cells>\n");
        add(
            &mut h,
            self,
            Block::Connectivity,
            "type=\"Int64\" Name=\"connectivity\"",
        );
        add(
            &mut h,
            self,
            Block::Offsets,
            "type=\"Int64\" Name=\"offsets\"",
        );
        add(&mut h, self, Block::Types, "type=\"UInt8\" Name=\"types\"");
        h.push_str("      </Cells>\n");

        h.push_str("    </Piece>\n");
        h.push_str("  </UnstructuredGrid>\n");
        h.push_str("  <AppendedData encoding=\"raw\">\n   _");
        self.header = h;
    }

    /// The size of the file in bytes.
    fn size(&self) -> u64 {
        let blocks: u64 = self.blocks.iter().map(|&b| 8 + self.byte_len(b)).sum();
        self.header.len() as u64 + blocks + TRAILER.len() as u64
    }

    /// Writes the whole file to `writer`.
    fn write(&self, writer: &mut impl Write) -> std::io::Result<()> {
        let mut w = BufWriter::with_capacity(CHUNK, writer);
        w.write_all(self.header.as_bytes())?;
        for &block in &self.blocks {
            w.write_all(&self.byte_len(block).to_le_bytes())?;
            self.write_block(&mut w, block)?;
        }
        w.write_all(TRAILER.as_bytes())?;
        w.flush()
    }

    /// Writes the values of `block` (without its length prefix).
    fn write_block(&self, w: &mut impl Write, block: Block) -> std::io::Result<()> {
        let tets = self.tetrahedra;
        let tris = self.triangles;
        match block {
            Block::PointData(VtuData::Scalars(v)) => put(w, v.iter().map(|x| x.to_le_bytes())),
            Block::PointData(VtuData::Vectors(v)) => {
                put(w, v.iter().flatten().map(|x| x.to_le_bytes()))
            }
            Block::PointData(VtuData::Ints(v)) => put(w, v.iter().map(|x| x.to_le_bytes())),
            Block::Refs => put(
                w,
                tets.iter()
                    .map(|t| t.1)
                    .chain(tris.iter().map(|t| t.1))
                    .map(i32::to_le_bytes),
            ),
            Block::Points => put(w, self.points.iter().flatten().map(|x| x.to_le_bytes())),
            Block::Connectivity => put(
                w,
                tets.iter()
                    .flat_map(|t| t.0)
                    .chain(tris.iter().flat_map(|t| t.0))
                    .map(|n| i64::from(n).to_le_bytes()),
            ),
            Block::Offsets => {
                let ends = (1..=tets.len() as i64)
                    .map(|i| 4 * i)
                    .chain((1..=tris.len() as i64).map(|i| 4 * tets.len() as i64 + 3 * i));
                put(w, ends.map(i64::to_le_bytes))
            }
            Block::Types => {
                let types = std::iter::repeat_n(VTK_TETRA, tets.len())
                    .chain(std::iter::repeat_n(VTK_TRIANGLE, tris.len()));
                put(w, types.map(u8::to_le_bytes))
            }
        }
    }
}

/// Writes `values` to `w`, encoded in chunks of about [`CHUNK`] bytes.
fn put<const N: usize>(
    w: &mut impl Write,
    values: impl Iterator<Item = [u8; N]>,
) -> std::io::Result<()> {
    let mut buffer = Vec::with_capacity(CHUNK + N);
    for value in values {
        buffer.extend_from_slice(&value);
        if buffer.len() >= CHUNK {
            w.write_all(&buffer)?;
            buffer.clear();
        }
    }
    w.write_all(&buffer)
}

/// Checks array lengths, node indices and names.
fn check(
    points: usize,
    tetrahedra: &[([u32; 4], i32)],
    triangles: &[([u32; 3], i32)],
    point_data: &[VtuArray],
) -> Result<(), VtuError> {
    for (index, array) in point_data.iter().enumerate() {
        let bad = |reason| VtuError::BadName {
            index,
            name: array.name.to_string(),
            reason,
        };
        if array.name.is_empty() {
            return Err(bad("it is empty"));
        }
        if array.name.chars().any(char::is_control) {
            return Err(bad("it holds a control character"));
        }
        if point_data[..index].iter().any(|a| a.name == array.name) {
            return Err(VtuError::DuplicateName {
                name: array.name.to_string(),
            });
        }
        if array.data.len() != points {
            return Err(VtuError::PointDataLength {
                name: array.name.to_string(),
                entries: array.data.len(),
                points,
            });
        }
    }
    let check_nodes =
        |kind, element, nodes: &[u32]| match nodes.iter().find(|&&n| n as usize >= points) {
            Some(&node) => Err(VtuError::NodeIndex {
                kind,
                element,
                node,
                points,
            }),
            None => Ok(()),
        };
    for (element, (nodes, _)) in tetrahedra.iter().enumerate() {
        check_nodes("tetrahedron", element, nodes)?;
    }
    for (element, (nodes, _)) in triangles.iter().enumerate() {
        check_nodes("triangle", element, nodes)?;
    }
    Ok(())
}

/// `text` with XML's special characters escaped, for an attribute value.
pub(super) fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            c => escaped.push(c),
        }
    }
    escaped
}
