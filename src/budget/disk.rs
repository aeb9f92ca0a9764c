//! Free disk space where an output will be written (`statvfs`).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The directory that will hold `path`: its parent, or `.` for a bare file name.
pub fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Bytes an unprivileged process may still write on the file system holding `dir`
/// (`f_bavail × f_frsize`).
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    let name = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "NUL in path"))?;
    // SAFETY: statvfs is plain old data; all-zero bytes are a valid value of it.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `name` is a NUL-terminated path and `stats` a statvfs the call fills in.
    if unsafe { libc::statvfs(name.as_ptr(), &mut stats) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    Ok((stats.f_bavail as u64).saturating_mul(stats.f_frsize as u64))
}
