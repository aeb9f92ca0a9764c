//! Where an output goes, checked before the work starts: a writable directory, not a
//! directory or device itself, an image format that can be written, not the same file as
//! another input or output.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::OutputError;
use crate::budget::directory_of;
use crate::input::SpecialKind;

/// The most symbolic links followed from an output path (as Linux's `ELOOP` limit).
const MAX_LINKS: usize = 40;

/// The file a write to `path` replaces: `path` itself, or where the symbolic links it names
/// lead (even to a file that does not exist yet), so that writing through a link updates its
/// target and keeps the link.
pub fn resolve(path: &Path) -> Result<PathBuf, OutputError> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&current).map_err(|error| OutputError::Io {
                    path: path.to_path_buf(),
                    error,
                })?;
                current = directory_of(&current).join(link);
            }
            _ => return Ok(current),
        }
    }
    Err(OutputError::Io {
        path: path.to_path_buf(),
        error: std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("more than {MAX_LINKS} symbolic links"),
        ),
    })
}

/// Checks that `path` can be written: its directory exists and is writable, and `path` is not
/// a directory, FIFO or device. Returns the file a write replaces ([`resolve`]).
pub fn check_writable(path: &Path) -> Result<PathBuf, OutputError> {
    let target = resolve(path)?;
    if path.as_os_str().is_empty() || path.as_os_str().as_bytes().ends_with(b"/") {
        return Err(OutputError::NotAFile {
            path: path.to_path_buf(),
            kind: SpecialKind::Directory,
        });
    }
    if let Some(kind) = std::fs::metadata(&target)
        .ok()
        .and_then(|m| SpecialKind::of(&m))
    {
        return Err(OutputError::NotAFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    let dir = directory_of(&target);
    if !std::fs::metadata(&dir).is_ok_and(|m| m.is_dir()) {
        return Err(OutputError::NoDirectory {
            path: path.to_path_buf(),
            dir,
        });
    }
    let name = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| OutputError::Io {
        path: path.to_path_buf(),
        error: std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"),
    })?;
    // SAFETY: `name` is a NUL-terminated path.
    if unsafe { libc::access(name.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(OutputError::NotWritable {
            path: path.to_path_buf(),
            dir,
            error: std::io::Error::last_os_error(),
        });
    }
    Ok(target)
}

/// Checks that `path` can be written ([`check_writable`]) and names, by its extension, an
/// image format this build of `image` can write (PNG).
pub fn check_image(path: &Path) -> Result<PathBuf, OutputError> {
    let target = check_writable(path)?;
    let writable = image::ImageFormat::from_path(path).is_ok_and(|f| f.writing_enabled());
    if !writable {
        return Err(OutputError::ImageFormat {
            path: path.to_path_buf(),
        });
    }
    Ok(target)
}

/// Whether `a` and `b` name the same file once links are followed: the same directory and
/// name, or the same inode (hard links) when both exist.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(a), Ok(b)) = (resolve(a), resolve(b)) else {
        return false;
    };
    if let (Ok(ma), Ok(mb)) = (std::fs::metadata(&a), std::fs::metadata(&b))
        && ma.dev() == mb.dev()
        && ma.ino() == mb.ino()
    {
        return true;
    }
    let canonical = |p: &Path| {
        let dir = std::fs::canonicalize(directory_of(p)).ok()?;
        Some(dir.join(p.file_name()?))
    };
    matches!((canonical(&a), canonical(&b)), (Some(x), Some(y)) if x == y)
}

/// Checks that no two of `files` (each named by the option or role that gives it, e.g.
/// `--out`, `--surface`, `the input`) are the same file ([`same_file`]).
pub fn check_distinct(files: &[(&str, &Path)]) -> Result<(), OutputError> {
    for (i, (first, a)) in files.iter().enumerate() {
        for (second, b) in &files[i + 1..] {
            if same_file(a, b) {
                return Err(OutputError::SameFile {
                    first: first.to_string(),
                    second: second.to_string(),
                    path: b.to_path_buf(),
                });
            }
        }
    }
    Ok(())
}
