//! Reading the files a user names: regular files only, read up to a size cap.
//!
//! Every input (scene files, heightmaps, meshes, kernel and shader overrides, sweep CSVs) is
//! opened here so that none can hang or exhaust memory: the path is judged by `stat` before it
//! is opened (which follows symbolic links, so a link to `/dev/zero` is judged as the device it
//! points at, and a FIFO is refused without opening it, which could block), the file is opened
//! non-blocking and judged again (it may have been swapped meanwhile), and at most `limit`
//! bytes are read. `-` is standard input for the commands that accept it ([`read_or_stdin`]).
//!
//! ```
//! use std::path::Path;
//! use snowsim::input::{self, InputError};
//!
//! let error = input::read(Path::new("/dev/zero"), 1 << 20).unwrap_err();
//! assert!(matches!(error, InputError::NotRegular { .. }));
//! assert_eq!(error.to_string(), "/dev/zero is a character device, not a regular file");
//! ```

use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::budget::ByteSize;

/// The most bytes read of a text source: scene files, kernel and shader overrides (16 MiB).
pub const TEXT_LIMIT: u64 = 16 << 20;

/// The name that means standard input where a command accepts it.
pub const STDIN: &str = "-";

/// What a path names when it is not a regular file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialKind {
    /// A directory.
    Directory,
    /// A FIFO (named pipe): reading it blocks until a writer comes.
    Fifo,
    /// A character device such as `/dev/zero`, which never ends.
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// Anything else.
    Other,
}

impl SpecialKind {
    /// What `metadata` describes, `None` for a regular file.
    pub fn of(metadata: &Metadata) -> Option<SpecialKind> {
        let t = metadata.file_type();
        Some(if t.is_file() {
            return None;
        } else if t.is_dir() {
            SpecialKind::Directory
        } else if t.is_fifo() {
            SpecialKind::Fifo
        } else if t.is_char_device() {
            SpecialKind::CharDevice
        } else if t.is_block_device() {
            SpecialKind::BlockDevice
        } else if t.is_socket() {
            SpecialKind::Socket
        } else {
            SpecialKind::Other
        })
    }
}

impl fmt::Display for SpecialKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpecialKind::Directory => "a directory",
            SpecialKind::Fifo => "a FIFO (named pipe)",
            SpecialKind::CharDevice => "a character device",
            SpecialKind::BlockDevice => "a block device",
            SpecialKind::Socket => "a socket",
            SpecialKind::Other => "not a file",
        })
    }
}

/// Why an input cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file cannot be found, opened or read.
    #[error("{}: {error}", path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// Why (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
    /// The path names a directory, FIFO, device or socket.
    #[error("{}{} is {kind}, not a regular file", path.display(), link_note(target.as_deref()))]
    NotRegular {
        /// The path as given.
        path: PathBuf,
        /// What it is.
        kind: SpecialKind,
        /// Where a symbolic link led, when `path` is one.
        target: Option<PathBuf>,
    },
    /// The file is larger than the command reads.
    #[error("{} is {}; at most {} is read", path.display(), size_note(*size, *limit), ByteSize(*limit))]
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// Its size, `None` when it grew past the limit while being read (or is standard input).
        size: Option<u64>,
        /// The cap.
        limit: u64,
    },
    /// An override directory named by an environment variable does not exist.
    #[error("{variable}={} names no directory", path.display())]
    NoDirectory {
        /// The environment variable, e.g. `SNOWSIM_KERNEL_DIR`.
        variable: String,
        /// Its value.
        path: PathBuf,
    },
    /// A text input is not UTF-8.
    #[error("{}: not UTF-8 text (byte {offset} is not valid UTF-8)", path.display())]
    NotUtf8 {
        /// The path as given.
        path: PathBuf,
        /// Offset of the first invalid byte.
        offset: usize,
    },
}

fn link_note(target: Option<&Path>) -> String {
    target.map_or_else(String::new, |t| format!(" (a link to {})", t.display()))
}

fn size_note(size: Option<u64>, limit: u64) -> String {
    match size {
        // Rounded alike, the two sizes can read the same ("17 MB; at most 17 MB"): then the
        // bytes say which is larger.
        Some(size) if ByteSize(size).to_string() == ByteSize(limit).to_string() => {
            format!("{} ({size} bytes, {limit} at most)", ByteSize(size))
        }
        Some(size) => ByteSize(size).to_string(),
        None => format!("more than {}", ByteSize(limit)),
    }
}

impl InputError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            InputError::Io { path, .. }
            | InputError::NotRegular { path, .. }
            | InputError::TooLarge { path, .. }
            | InputError::NoDirectory { path, .. }
            | InputError::NotUtf8 { path, .. } => path,
        }
    }

    /// The error as an [`std::io::Error`] whose message does not repeat the path, for error
    /// types that hold a path and an I/O error (`cannot read kernel source PATH: REASON`).
    pub fn into_io_error(self) -> std::io::Error {
        use std::io::ErrorKind;
        match self {
            InputError::Io { error, .. } => error,
            InputError::NotRegular { kind, target, .. } => std::io::Error::new(
                ErrorKind::InvalidInput,
                match target {
                    Some(t) => format!("a link to {}, {kind}, not a regular file", t.display()),
                    None => format!("{kind}, not a regular file"),
                },
            ),
            InputError::TooLarge { size, limit, .. } => std::io::Error::new(
                ErrorKind::InvalidData,
                format!(
                    "{}; at most {} is read",
                    size_note(size, limit),
                    ByteSize(limit)
                ),
            ),
            InputError::NoDirectory { variable, .. } => std::io::Error::new(
                ErrorKind::NotFound,
                format!("{variable} names no directory"),
            ),
            InputError::NotUtf8 { offset, .. } => std::io::Error::new(
                ErrorKind::InvalidData,
                format!("not UTF-8 text (byte {offset} is not valid UTF-8)"),
            ),
        }
    }
}

/// Checks that `path` names a regular file (after following symbolic links) without opening
/// it, and returns its metadata.
pub fn check_regular(path: &Path) -> Result<Metadata, InputError> {
    let metadata = std::fs::metadata(path).map_err(|error| InputError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    match SpecialKind::of(&metadata) {
        None => Ok(metadata),
        Some(kind) => Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind,
            target: link_target(path),
        }),
    }
}

/// Where `path` leads when it is a symbolic link (fully resolved when possible).
fn link_target(path: &Path) -> Option<PathBuf> {
    let is_link = std::fs::symlink_metadata(path)
        .ok()?
        .file_type()
        .is_symlink();
    if !is_link {
        return None;
    }
    std::fs::canonicalize(path)
        .or_else(|_| std::fs::read_link(path))
        .ok()
}

/// Opens `path` for reading if it is a regular file: judged before opening (so a FIFO is
/// never opened) and again on the open handle.
pub fn open(path: &Path) -> Result<(File, u64), InputError> {
    check_regular(path)?;
    let io = |error| InputError::Io {
        path: path.to_path_buf(),
        error,
    };
    // Non-blocking, so that a FIFO swapped in after the check cannot block the open.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if let Some(kind) = SpecialKind::of(&metadata) {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind,
            target: link_target(path),
        });
    }
    Ok((file, metadata.len()))
}

/// Reads the regular file `path`, at most `limit` bytes (a larger file is an error).
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let (file, size) = open(path)?;
    if size > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            size: Some(size),
            limit,
        });
    }
    read_capped(file, path, limit, size)
}

/// [`read`], or standard input when `path` is [`STDIN`] (`-`).
pub fn read_or_stdin(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    if path.as_os_str() == STDIN {
        return read_capped(std::io::stdin().lock(), path, limit, 0);
    }
    read(path, limit)
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, limit: u64) -> Result<String, InputError> {
    into_text(read(path, limit)?, path)
}

/// [`read_or_stdin`] as UTF-8 text.
pub fn read_text_or_stdin(path: &Path, limit: u64) -> Result<String, InputError> {
    into_text(read_or_stdin(path, limit)?, path)
}

/// The file `name` of the directory that the environment variable `variable` names, read as
/// text, for sources that a directory can override (`SNOWSIM_KERNEL_DIR`,
/// `SNOWSIM_SHADER_DIR`): `None` when the variable is unset or the directory has no such entry;
/// an error when the variable names no directory (a typo would otherwise be ignored), or the
/// entry is not a regular file or exceeds [`TEXT_LIMIT`].
pub fn read_override(variable: &str, name: &str) -> Result<Option<(PathBuf, String)>, InputError> {
    let Some(dir) = std::env::var_os(variable) else {
        return Ok(None);
    };
    let dir = PathBuf::from(dir);
    if !dir.is_dir() {
        return Err(InputError::NoDirectory {
            variable: variable.to_string(),
            path: dir,
        });
    }
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(None);
    }
    let text = read_text(&path, TEXT_LIMIT)?;
    Ok(Some((path, text)))
}

fn into_text(bytes: Vec<u8>, path: &Path) -> Result<String, InputError> {
    String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Reads at most `limit` bytes; one more means the input is too large (a file that grew, a
/// `/proc` file whose size says 0, or standard input).
fn read_capped(
    reader: impl Read,
    path: &Path,
    limit: u64,
    size_hint: u64,
) -> Result<Vec<u8>, InputError> {
    let capacity = usize::try_from(size_hint.min(limit)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity);
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| InputError::Io {
            path: path.to_path_buf(),
            error,
        })?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            size: None,
            limit,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_that_round_alike_are_told_apart_in_bytes() {
        let limit = 16 << 20;
        let note = size_note(Some(limit + 1), limit);
        assert_eq!(note, "17 MB (16777217 bytes, 16777216 at most)");
        assert_eq!(size_note(Some(40 << 20), limit), "42 MB");
        assert_eq!(size_note(None, limit), "more than 17 MB");
    }
}
