//! Output files: checked before the work starts, written atomically.
//!
//! [`check_writable`], [`check_image`] and [`check_distinct`] validate output paths up front,
//! so that a run does not fail at its end for a missing directory, an image format that cannot
//! be written or an output that would overwrite an input. [`AtomicFile`] and [`write_atomic`]
//! write every file: into a temporary file in the same directory, removed on failure and on
//! SIGINT or SIGTERM (the process then exits with status 130 or 143), renamed over the target
//! when complete, through symbolic links (the link stays, its target is replaced) and keeping
//! the old file's permissions; [`commit_all`] commits several together, all or none.
//! [`OutputPlan`] is the one rule every command's writers follow: no output is an input or
//! another output, and an existing file of another kind is replaced only with `--force`
//! ([`rule`]).

mod atomic;
mod cleanup;
pub mod rule;
mod target;

use std::path::PathBuf;

pub use atomic::{AtomicFile, commit_all, write_atomic};
pub use rule::{FileKind, OutputPlan};
pub use target::{check_distinct, check_image, check_writable, resolve, same_file};

use crate::budget::BudgetError;
use crate::input::SpecialKind;

/// Why an output cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Creating, writing or renaming failed.
    #[error("{}: cannot write: {error}", path.display())]
    Io {
        /// The output path as given.
        path: PathBuf,
        /// Why (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
    /// The path names a directory, FIFO or device.
    #[error("{}: cannot write: it is {kind}; give the path of a file", path.display())]
    NotAFile {
        /// The output path as given.
        path: PathBuf,
        /// What it is.
        kind: SpecialKind,
    },
    /// A directory output names something that is there and is not a directory.
    #[error(
        "{role} {}: it is {what}, not a directory; give the directory the files go into",
        path.display()
    )]
    NotADirectory {
        /// The option naming the directory.
        role: String,
        /// The path as given.
        path: PathBuf,
        /// What is there (`a file`, `a FIFO (named pipe)`, …).
        what: String,
    },
    /// The directory that would hold the file does not exist.
    #[error("{}: cannot write: directory {} does not exist", path.display(), dir.display())]
    NoDirectory {
        /// The output path as given.
        path: PathBuf,
        /// The missing directory.
        dir: PathBuf,
    },
    /// The directory exists but cannot be written.
    #[error(
        "{}: cannot write: directory {} is not writable: {error}",
        path.display(),
        dir.display()
    )]
    NotWritable {
        /// The output path as given.
        path: PathBuf,
        /// The directory.
        dir: PathBuf,
        /// Why (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
    /// The extension names no image format this build can write.
    #[error(
        "{}: cannot write this image format: only PNG images are written; give a path \
         ending in .png",
        path.display()
    )]
    ImageFormat {
        /// The output path as given.
        path: PathBuf,
    },
    /// The disk has no room for the output.
    #[error("{0}")]
    DiskSpace(Box<BudgetError>),
    /// An output is an input of the same command, another output of it, or a file a
    /// directory output writes.
    #[error(
        "{first} {} and {second} {} are the same file: an output never overwrites an input or \
         another output of the same command; choose another path",
        first_path.display(),
        second_path.display()
    )]
    Collision {
        /// The option or role naming the output.
        first: String,
        /// Its path as given.
        first_path: PathBuf,
        /// The option or role naming the input or other output.
        second: String,
        /// Its path as given.
        second_path: PathBuf,
    },
    /// An existing file that this writer did not write would be replaced.
    #[error(
        "{role} {}: a file is there that is not a {kind}, so it was not written by this \
         command and is left as it is; choose another path, or pass --force to replace it",
        path.display()
    )]
    NotOurs {
        /// The option naming the output.
        role: String,
        /// The existing file.
        path: PathBuf,
        /// What the writer writes.
        kind: &'static str,
    },
    /// A set of files committed together ([`commit_all`]) failed midway, and some of the
    /// files already replaced could not be put back.
    #[error(
        "{error}; these files were already replaced and could not be put back as they were: {}",
        written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    PartlyWritten {
        /// The failure that stopped the commits.
        error: Box<OutputError>,
        /// The files left new.
        written: Vec<PathBuf>,
    },
    /// Two outputs, or an input and an output, are the same file.
    #[error("{first} and {second} are the same file ({}); choose another", path.display())]
    SameFile {
        /// The option or role naming the first.
        first: String,
        /// The option or role naming the second.
        second: String,
        /// The second path as given.
        path: PathBuf,
    },
}
