//! Errors of reading and writing mesh files.
//!
//! Every error found while reading a file names the file and a [`Location`] in it (a byte offset
//! for `.meshb`, a 1-based line for `.mesh`), and carries the values that were wrong, so that the
//! one-line message tells a user what to look at.

use std::fmt;
use std::path::{Path, PathBuf};

use super::element::ElementKind;
use super::mesh::IndexError;
use crate::budget::BudgetError;
use crate::output::OutputError;

/// Where in a file an error was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// Byte offset from the start of a binary file.
    Byte(u64),
    /// 1-based line number in an ASCII file.
    Line(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Byte(offset) => write!(f, "byte {offset}"),
            Location::Line(line) => write!(f, "line {line}"),
        }
    }
}

/// What is wrong with a keyword's "next keyword" position in a binary file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionProblem {
    /// The position does not lie after the keyword's own header fields (it goes backwards).
    NotAfter {
        /// The first byte after the keyword's header fields.
        header_end: u64,
    },
    /// The position lies past the end of the file.
    PastEnd {
        /// The file length in bytes.
        file_len: u64,
    },
}

impl fmt::Display for PositionProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PositionProblem::NotAfter { header_end } => {
                write!(
                    f,
                    "which is not after its own header (ends at byte {header_end})"
                )
            }
            PositionProblem::PastEnd { file_len } => {
                write!(f, "which is past the end of the file ({file_len} bytes)")
            }
        }
    }
}

/// Why a mesh cannot be encoded into a file of the requested format and version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// [`Mesh::dimension`](super::Mesh::dimension) is neither 2 nor 3.
    #[error("dimension {0} is not 2 or 3")]
    BadDimension(u8),
    /// `vertex_refs` and `vertices` have different lengths.
    #[error("{vertices} vertices but {refs} vertex references")]
    VertexRefCount {
        /// Number of vertices.
        vertices: usize,
        /// Number of vertex references.
        refs: usize,
    },
    /// An element uses a vertex index that does not exist.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A count does not fit the 32-bit counts of versions 1 to 3.
    #[error("{count} {keyword} do not fit a version {version} file (at most 2147483647)")]
    CountTooLarge {
        /// Keyword as spelled in files (`Vertices`, `Tetrahedra`, ...).
        keyword: &'static str,
        /// The count that does not fit.
        count: usize,
        /// The requested version number.
        version: u32,
    },
    /// The file would exceed the 32-bit keyword positions of versions 1 and 2.
    #[error(
        "a version {version} file holds at most 2147483647 bytes (32-bit positions) but this \
         mesh needs {bytes}; write version 3 or 4"
    )]
    FileTooLarge {
        /// Size the file would have.
        bytes: u64,
        /// The requested version number.
        version: u32,
    },
    /// Formatting a number as text failed. Writing into a `String` never fails this way; the
    /// variant exists so that the text writer has no hidden panic.
    #[error("formatting a number as text failed")]
    Formatting,
}

/// Errors of [`read`](super::read), [`read_bytes`](super::read_bytes),
/// [`write`](super::write) and [`to_bytes`](super::to_bytes).
///
/// Messages are one line, meant for a user, e.g.
/// `cube.meshb: byte 1032: Tetrahedra count 2147483647 needs 42949672940 bytes but only 2048 remain`.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// Reading the file failed.
    #[error("{}: cannot read: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
    /// Writing the file failed (its message names the file).
    #[error("{error}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The underlying error (shown in the message, so not chained as a source; boxed to
        /// keep the error small).
        error: Box<OutputError>,
    },
    /// The file is larger than the host memory available.
    #[error("{error}")]
    Memory {
        /// The file.
        path: PathBuf,
        /// The estimate and the limit (shown in the message, so not chained as a source; boxed
        /// to keep the error small).
        error: Box<BudgetError>,
    },
    /// The file name ends neither in `.mesh` nor in `.meshb`.
    #[error(
        "{}: unknown mesh file extension: expected .mesh (ASCII) or .meshb (binary)",
        path.display()
    )]
    UnknownExtension {
        /// The file.
        path: PathBuf,
    },
    /// A binary file ends in the middle of a field.
    #[error(
        "{}: {at}: file ends inside the {what}: {needed} bytes needed, {available} remain",
        path.display()
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Where the field starts.
        at: Location,
        /// What was being read.
        what: String,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left in the file from `at`.
        available: u64,
    },
    /// An ASCII file ends before a keyword's data is complete.
    #[error("{}: {at}: file ends while reading {what}", path.display())]
    UnexpectedEnd {
        /// The file.
        path: PathBuf,
        /// The last line of the file.
        at: Location,
        /// What was being read.
        what: String,
    },
    /// The first word of a binary file is neither 1 nor 16777216 (byte-swapped 1).
    #[error(
        "{}: byte 0: endianness code {value} ({value:#010x}) is neither 1 nor 16777216: not a \
         .meshb file",
        path.display()
    )]
    BadEndianness {
        /// The file.
        path: PathBuf,
        /// The first word, read little-endian.
        value: u32,
    },
    /// An ASCII file holds a NUL byte, which no text does.
    #[error(
        "{}: {at}: byte {offset} is a NUL byte: not an ASCII .mesh or .sol file (a binary one \
         ends in b)",
        path.display()
    )]
    NotText {
        /// The file.
        path: PathBuf,
        /// The line of the NUL byte.
        at: Location,
        /// Its offset from the start of the file.
        offset: u64,
    },
    /// The version is not 1 to 4.
    #[error("{}: {at}: unknown mesh version {version} (expected 1 to 4)", path.display())]
    UnknownVersion {
        /// The file.
        path: PathBuf,
        /// Where the version is.
        at: Location,
        /// The version found.
        version: i64,
    },
    /// The dimension is not 2 or 3.
    #[error("{}: {at}: dimension {dimension} is not 2 or 3", path.display())]
    BadDimension {
        /// The file.
        path: PathBuf,
        /// Where the dimension is.
        at: Location,
        /// The dimension found.
        dimension: i64,
    },
    /// A binary file does not start its keyword chain with Dimension (code 3).
    #[error(
        "{}: {at}: expected the Dimension keyword (code 3) after the version, found code {code}",
        path.display()
    )]
    NoDimensionHeader {
        /// The file.
        path: PathBuf,
        /// Where the keyword code is.
        at: Location,
        /// The code found.
        code: i32,
    },
    /// FloatingPointPrecision is not 32 or 64.
    #[error("{}: {at}: FloatingPointPrecision {value} is not 32 or 64", path.display())]
    BadPrecision {
        /// The file.
        path: PathBuf,
        /// Where the value is.
        at: Location,
        /// The value found.
        value: i64,
    },
    /// An ASCII file lacks a mandatory keyword.
    #[error("{}: {at}: end of file reached without a {keyword} keyword", path.display())]
    MissingKeyword {
        /// The file.
        path: PathBuf,
        /// The last line of the file.
        at: Location,
        /// The missing keyword.
        keyword: &'static str,
    },
    /// A keyword this reader interprets appears twice.
    #[error("{}: {at}: second {keyword} keyword (only one is allowed)", path.display())]
    DuplicateKeyword {
        /// The file.
        path: PathBuf,
        /// Where the second one is.
        at: Location,
        /// The keyword.
        keyword: &'static str,
    },
    /// A keyword's count is negative.
    #[error("{}: {at}: {keyword} count {count} is negative", path.display())]
    NegativeCount {
        /// The file.
        path: PathBuf,
        /// Where the count is.
        at: Location,
        /// The keyword.
        keyword: &'static str,
        /// The count found.
        count: i64,
    },
    /// A binary keyword's count needs more bytes than the file has left.
    #[error(
        "{}: {at}: {keyword} count {count} needs {needed} bytes but only {available} remain",
        path.display()
    )]
    CountTooLarge {
        /// The file.
        path: PathBuf,
        /// Where the count is.
        at: Location,
        /// The keyword.
        keyword: &'static str,
        /// The count found.
        count: u64,
        /// Bytes the count needs.
        needed: u128,
        /// Bytes left in the file after the count.
        available: u64,
    },
    /// An ASCII keyword's count needs more numbers than the rest of the file can hold.
    #[error(
        "{}: {at}: {keyword} count {count} needs {values} numbers (at least two bytes each, a \
         digit and a separator) but only {remaining} bytes remain",
        path.display()
    )]
    CountTooLargeText {
        /// The file.
        path: PathBuf,
        /// Where the count is.
        at: Location,
        /// The keyword.
        keyword: &'static str,
        /// The count found.
        count: u64,
        /// Numbers the count needs.
        values: u128,
        /// Bytes left in the file after the count.
        remaining: u64,
    },
    /// A binary keyword's data runs into the next keyword.
    #[error(
        "{}: {at}: {keyword} data ends at byte {data_end}, past the next keyword at byte {next}",
        path.display()
    )]
    BlockOverlap {
        /// The file.
        path: PathBuf,
        /// Where the count is.
        at: Location,
        /// The keyword.
        keyword: &'static str,
        /// First byte after the data.
        data_end: u64,
        /// Position of the next keyword.
        next: u64,
    },
    /// A binary keyword's "next keyword" position goes backwards or past the end of the file.
    #[error("{}: {at}: {keyword} gives the next keyword position {position}, {problem}", path.display())]
    KeywordPosition {
        /// The file.
        path: PathBuf,
        /// Where the position field is.
        at: Location,
        /// The keyword's name (or `code N` when unknown).
        keyword: String,
        /// The position found.
        position: i64,
        /// What is wrong with it.
        problem: PositionProblem,
    },
    /// An element refers to a vertex that does not exist.
    #[error(
        "{}: {at}: {} {element} refers to vertex {index}, but {}",
        path.display(),
        kind.keyword(),
        vertex_range(*vertex_count)
    )]
    NodeIndex {
        /// The file.
        path: PathBuf,
        /// Where the element is.
        at: Location,
        /// The element kind.
        kind: ElementKind,
        /// 1-based element number within its keyword.
        element: u64,
        /// The vertex index as written in the file (1-based).
        index: i64,
        /// Number of vertices in the file.
        vertex_count: u64,
    },
    /// A reference does not fit in 32 bits.
    #[error(
        "{}: {at}: {keyword} {entity} has reference {value}, which does not fit in 32 bits",
        path.display()
    )]
    RefOutOfRange {
        /// The file.
        path: PathBuf,
        /// Where the reference is.
        at: Location,
        /// The keyword.
        keyword: &'static str,
        /// 1-based entity number within its keyword.
        entity: u64,
        /// The reference found.
        value: i64,
    },
    /// More vertices than 32-bit indices can address.
    #[error(
        "{}: {at}: Vertices count {count} exceeds the 32-bit index limit (4294967295)",
        path.display()
    )]
    TooManyVertices {
        /// The file.
        path: PathBuf,
        /// Where the count is.
        at: Location,
        /// The count found.
        count: u64,
    },
    /// An ASCII token is not the number expected.
    #[error("{}: {at}: expected {expected} for {context}, found '{token}'", path.display())]
    BadToken {
        /// The file.
        path: PathBuf,
        /// Where the token is.
        at: Location,
        /// The token (shortened if long).
        token: String,
        /// What was expected, e.g. `an integer`.
        expected: &'static str,
        /// What the token was for, e.g. `Tetrahedra 3`.
        context: String,
    },
    /// An ASCII token stands where a keyword was expected (e.g. more lines than the count said).
    #[error("{}: {at}: unexpected '{token}' where a keyword was expected", path.display())]
    UnexpectedToken {
        /// The file.
        path: PathBuf,
        /// Where the token is.
        at: Location,
        /// The token (shortened if long).
        token: String,
    },
    /// The mesh cannot be encoded ([`to_bytes`](super::to_bytes)).
    #[error("cannot encode mesh: {0}")]
    Encode(EncodeError),
    /// The mesh cannot be encoded for writing to a file ([`write`](super::write)).
    #[error("{}: cannot write mesh: {error}", path.display())]
    EncodeFile {
        /// The file.
        path: PathBuf,
        /// Why (shown in the message, so not chained as a source).
        error: EncodeError,
    },
}

fn vertex_range(count: u64) -> String {
    if count == 0 {
        "the file has no vertices".to_owned()
    } else {
        format!("the vertices are numbered 1 to {count}")
    }
}

impl MeshError {
    /// The file the error is about, if any ([`MeshError::Encode`] has none).
    pub fn path(&self) -> Option<&Path> {
        use MeshError::*;
        match self {
            Read { path, .. }
            | Write { path, .. }
            | Memory { path, .. }
            | UnknownExtension { path }
            | Truncated { path, .. }
            | UnexpectedEnd { path, .. }
            | BadEndianness { path, .. }
            | NotText { path, .. }
            | UnknownVersion { path, .. }
            | BadDimension { path, .. }
            | NoDimensionHeader { path, .. }
            | BadPrecision { path, .. }
            | MissingKeyword { path, .. }
            | DuplicateKeyword { path, .. }
            | NegativeCount { path, .. }
            | CountTooLarge { path, .. }
            | CountTooLargeText { path, .. }
            | BlockOverlap { path, .. }
            | KeywordPosition { path, .. }
            | NodeIndex { path, .. }
            | RefOutOfRange { path, .. }
            | TooManyVertices { path, .. }
            | BadToken { path, .. }
            | UnexpectedToken { path, .. }
            | EncodeFile { path, .. } => Some(path),
            Encode(_) => None,
        }
    }

    /// Where in the file the error was found, for errors about a file's content.
    pub fn location(&self) -> Option<Location> {
        use MeshError::*;
        match self {
            BadEndianness { .. } => Some(Location::Byte(0)),
            Truncated { at, .. }
            | NotText { at, .. }
            | UnexpectedEnd { at, .. }
            | UnknownVersion { at, .. }
            | BadDimension { at, .. }
            | NoDimensionHeader { at, .. }
            | BadPrecision { at, .. }
            | MissingKeyword { at, .. }
            | DuplicateKeyword { at, .. }
            | NegativeCount { at, .. }
            | CountTooLarge { at, .. }
            | CountTooLargeText { at, .. }
            | BlockOverlap { at, .. }
            | KeywordPosition { at, .. }
            | NodeIndex { at, .. }
            | RefOutOfRange { at, .. }
            | TooManyVertices { at, .. }
            | BadToken { at, .. }
            | UnexpectedToken { at, .. } => Some(*at),
            Read { .. }
            | Write { .. }
            | Memory { .. }
            | UnknownExtension { .. }
            | Encode(_)
            | EncodeFile { .. } => None,
        }
    }
}

/// Not `#[from]`: that would also chain the error as a source, and its text is already in the
/// message.
impl From<EncodeError> for MeshError {
    fn from(error: EncodeError) -> Self {
        MeshError::Encode(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_display() {
        assert_eq!(Location::Byte(1234).to_string(), "byte 1234");
        assert_eq!(Location::Line(56).to_string(), "line 56");
    }

    #[test]
    fn count_message_reads_as_one_line() {
        let e = MeshError::CountTooLarge {
            path: PathBuf::from("cube.meshb"),
            at: Location::Byte(1032),
            keyword: "Tetrahedra",
            count: 2147483647,
            needed: 42949672940,
            available: 2048,
        };
        assert_eq!(
            e.to_string(),
            "cube.meshb: byte 1032: Tetrahedra count 2147483647 needs 42949672940 bytes but \
             only 2048 remain"
        );
        assert_eq!(e.path(), Some(Path::new("cube.meshb")));
        assert_eq!(e.location(), Some(Location::Byte(1032)));
    }

    #[test]
    fn node_index_message_with_and_without_vertices() {
        let mut e = MeshError::NodeIndex {
            path: PathBuf::from("a.mesh"),
            at: Location::Line(7),
            kind: ElementKind::Triangles,
            element: 2,
            index: 9,
            vertex_count: 4,
        };
        assert_eq!(
            e.to_string(),
            "a.mesh: line 7: Triangles 2 refers to vertex 9, but the vertices are numbered 1 to 4"
        );
        if let MeshError::NodeIndex { vertex_count, .. } = &mut e {
            *vertex_count = 0;
        }
        assert!(e.to_string().ends_with("but the file has no vertices"));
    }
}
