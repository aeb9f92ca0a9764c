//! Errors of reading and writing solution files.
//!
//! Problems that solution files share with mesh files (truncation, counts, keyword positions,
//! versions, …) are [`MeshError`]s, wrapped; what only solutions have (their type header, values
//! that do not fill whole lines) has variants of its own. Every error about a file's content
//! names the file and a [`Location`] in it.

use std::path::{Path, PathBuf};

use super::error::{EncodeError, Location, MeshError};

/// Why solutions cannot be encoded into a file of the requested format and version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SolutionEncodeError {
    /// What meshes and solutions share: dimension, 32-bit counts and positions, formatting.
    #[error(transparent)]
    Common(#[from] EncodeError),
    /// A block has no solution type, so its lines have no width.
    #[error("{keyword} has no solution type (at least one is needed)")]
    NoTypes {
        /// The block's keyword, e.g. `SolAtVertices`.
        keyword: &'static str,
    },
    /// A block's values do not fill whole lines.
    #[error("{keyword} holds {values} values, not a multiple of its line width {width}")]
    PartialLine {
        /// The block's keyword.
        keyword: &'static str,
        /// Number of values.
        values: usize,
        /// Values per line (sum of the type widths).
        width: usize,
    },
    /// Two blocks are on the same support (a file holds one keyword of each).
    #[error("two {keyword} blocks (a file holds one of each keyword)")]
    Duplicate {
        /// The repeated keyword.
        keyword: &'static str,
    },
    /// More types than the 32-bit type count of the header can say.
    #[error("{keyword} has {types} solution types, more than a 32-bit count")]
    TooManyTypes {
        /// The block's keyword.
        keyword: &'static str,
        /// Number of types.
        types: usize,
    },
    /// A `ReferenceStrings` line that a file cannot hold or give back unchanged.
    #[error("ReferenceStrings text `{text}` {why}")]
    BadReferenceString {
        /// The text.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// Errors of [`read_solution`](super::read_solution),
/// [`read_solution_bytes`](super::read_solution_bytes),
/// [`write_solution`](super::write_solution) and
/// [`solution_to_bytes`](super::solution_to_bytes).
#[derive(Debug, thiserror::Error)]
pub enum SolutionError {
    /// An error that mesh files share (it names the file and the location).
    #[error(transparent)]
    File(#[from] MeshError),
    /// The file name ends neither in `.sol` nor in `.solb`.
    #[error(
        "{}: unknown solution file extension: expected .sol (ASCII) or .solb (binary)",
        path.display()
    )]
    UnknownExtension {
        /// The file.
        path: PathBuf,
    },
    /// A solution keyword's number of types is not positive or cannot fit in the file.
    #[error(
        "{}: {at}: {keyword} announces {count} solution types; expected 1 to {max}",
        path.display()
    )]
    BadTypeCount {
        /// The file.
        path: PathBuf,
        /// Where the type count is.
        at: Location,
        /// The keyword.
        keyword: &'static str,
        /// The count found.
        count: i64,
        /// The most the rest of the file could hold.
        max: u64,
    },
    /// A solution type code is not 1 (scalar), 2 (vector), 3 (symmetric matrix) or 4 (matrix).
    #[error(
        "{}: {at}: {keyword} type {index} is {code}; expected 1 (scalar), 2 (vector), \
         3 (symmetric matrix) or 4 (matrix)",
        path.display()
    )]
    BadType {
        /// The file.
        path: PathBuf,
        /// Where the type code is.
        at: Location,
        /// The keyword.
        keyword: &'static str,
        /// 1-based position of the type in the header.
        index: usize,
        /// The code found.
        code: i64,
    },
    /// A `ReferenceStrings` keyword that cannot be read.
    #[error("{}: {at}: ReferenceStrings: {why}", path.display())]
    BadReferenceString {
        /// The file.
        path: PathBuf,
        /// Where the problem is.
        at: Location,
        /// What is wrong.
        why: String,
    },
    /// The solutions cannot be encoded ([`solution_to_bytes`](super::solution_to_bytes)).
    #[error("cannot encode solutions: {0}")]
    Encode(SolutionEncodeError),
    /// The solutions cannot be encoded for writing to a file
    /// ([`write_solution`](super::write_solution)).
    #[error("{}: cannot write solutions: {error}", path.display())]
    EncodeFile {
        /// The file.
        path: PathBuf,
        /// Why.
        error: SolutionEncodeError,
    },
}

impl SolutionError {
    /// The file the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            SolutionError::File(e) => e.path(),
            SolutionError::UnknownExtension { path }
            | SolutionError::BadTypeCount { path, .. }
            | SolutionError::BadType { path, .. }
            | SolutionError::BadReferenceString { path, .. }
            | SolutionError::EncodeFile { path, .. } => Some(path),
            SolutionError::Encode(_) => None,
        }
    }

    /// Where in the file the error was found, for errors about a file's content.
    pub fn location(&self) -> Option<Location> {
        match self {
            SolutionError::File(e) => e.location(),
            SolutionError::BadTypeCount { at, .. }
            | SolutionError::BadType { at, .. }
            | SolutionError::BadReferenceString { at, .. } => Some(*at),
            SolutionError::UnknownExtension { .. }
            | SolutionError::Encode(_)
            | SolutionError::EncodeFile { .. } => None,
        }
    }
}

/// Not `#[from]`, as for [`MeshError`]: the message already holds the cause.
impl From<SolutionEncodeError> for SolutionError {
    fn from(error: SolutionEncodeError) -> Self {
        SolutionError::Encode(error)
    }
}
