//! Writing a file all at once or not at all: a temporary file beside the target, renamed over
//! it when complete.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{OutputError, cleanup, target};
use crate::budget::{Budget, Estimate, directory_of};

/// Numbers temporaries within this process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A file being written: bytes go to a temporary file in the target's directory (where the
/// links of the path lead, so a link is kept and its target replaced), which
/// [`commit`](Self::commit) renames over the target with the old file's permissions. Dropped
/// without a commit, or interrupted by SIGINT or SIGTERM, it removes the temporary and leaves
/// the old file as it was.
///
/// ```
/// use std::io::Write;
/// use snowsim::output::AtomicFile;
///
/// let dir = std::env::temp_dir().join(format!("atomic-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("out.txt");
/// let mut file = AtomicFile::create(&path)?;
/// writeln!(file, "all or nothing")?;
/// file.commit()?;
/// assert_eq!(std::fs::read_to_string(&path)?, "all or nothing\n");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct AtomicFile {
    /// The path as given, for messages.
    path: PathBuf,
    /// The file replaced: `path` with its links followed.
    target: PathBuf,
    temporary: PathBuf,
    registration: cleanup::Registration,
    writer: Option<BufWriter<File>>,
    /// The old file's permissions, kept on the new one.
    permissions: Option<Permissions>,
}

impl AtomicFile {
    /// Starts writing `path`: checks it ([`check_writable`](super::check_writable)) and
    /// creates the temporary file.
    pub fn create(path: &Path) -> Result<AtomicFile, OutputError> {
        let target = target::check_writable(path)?;
        let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = directory_of(&target);
        let io = |error| OutputError::Io {
            path: path.to_path_buf(),
            error,
        };
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let temporary = dir.join(format!(".{name}.{}.{n}.partial", std::process::id()));
            let registration = cleanup::register(&temporary);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .open(&temporary)
            {
                Ok(file) => {
                    return Ok(AtomicFile {
                        path: path.to_path_buf(),
                        target,
                        temporary,
                        registration,
                        writer: Some(BufWriter::with_capacity(1 << 20, file)),
                        permissions,
                    });
                }
                Err(error) => {
                    cleanup::unregister(&registration);
                    if error.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(io(error));
                    }
                }
            }
        }
    }

    /// The path as given to [`create`](Self::create).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the bytes written so far to the temporary file and syncs it to disk, so that a
    /// later [`commit`](Self::commit) has only to rename it: a writer of several files can
    /// sync each before renaming any (a full disk then fails before the first rename).
    pub fn sync(&mut self) -> Result<(), OutputError> {
        let io = |error| OutputError::Io {
            path: self.path.clone(),
            error,
        };
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| io(std::io::Error::other("already committed")))?;
        writer.flush().map_err(io)?;
        writer.get_ref().sync_all().map_err(io)
    }

    /// Finishes the write: flushes and syncs the temporary, gives it the old file's
    /// permissions and renames it over the target. On error the temporary is removed and the
    /// old file is untouched.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let result = self.finish();
        if result.is_err() {
            self.discard();
        }
        result
    }

    fn finish(&mut self) -> Result<(), OutputError> {
        let io = |error| OutputError::Io {
            path: self.path.clone(),
            error,
        };
        let writer = self
            .writer
            .take()
            .ok_or_else(|| io(std::io::Error::other("already committed")))?;
        let file = writer.into_inner().map_err(|e| io(e.into_error()))?;
        if let Some(permissions) = &self.permissions {
            file.set_permissions(Permissions::from_mode(permissions.mode() & 0o7777))
                .map_err(io)?;
        }
        file.sync_all().map_err(io)?;
        drop(file);
        std::fs::rename(&self.temporary, &self.target).map_err(io)?;
        cleanup::unregister(&self.registration);
        Ok(())
    }

    fn discard(&mut self) {
        self.writer = None;
        let _ = std::fs::remove_file(&self.temporary);
        cleanup::unregister(&self.registration);
    }
}

/// Commits `files` together, all or none: every one is synced first, the files each will
/// replace are kept as hard links beside them, and the files are renamed into place one after
/// another. When a rename fails, the files already renamed are put back as they were (the old
/// file restored, or the new one removed where there was none), the rest are discarded, and the
/// error is returned; only if putting one back fails too does the error list the files left
/// new ([`OutputError::PartlyWritten`]). A SIGINT or SIGTERM during the renames (a few system
/// calls) can still leave some files new.
pub fn commit_all(mut files: Vec<AtomicFile>) -> Result<(), OutputError> {
    for file in &mut files {
        file.sync()?;
    }
    let mut kept = Vec::with_capacity(files.len());
    for file in &files {
        match Kept::old_of(file) {
            Ok(old) => kept.push(old),
            Err(error) => {
                kept.iter().for_each(Kept::forget);
                return Err(error);
            }
        }
    }
    let mut files = files.into_iter();
    let mut done = 0;
    let mut failed = None;
    for file in files.by_ref() {
        if let Err(error) = file.commit() {
            failed = Some(error);
            break;
        }
        done += 1;
    }
    // The files not reached are dropped: their temporaries are removed.
    drop(files);
    let Some(error) = failed else {
        kept.iter().for_each(Kept::forget);
        return Ok(());
    };
    let left_new: Vec<PathBuf> = kept[..done]
        .iter()
        .filter(|k| !k.put_back())
        .map(|k| k.path.clone())
        .collect();
    kept.iter().for_each(Kept::forget);
    if left_new.is_empty() {
        Err(error)
    } else {
        Err(OutputError::PartlyWritten {
            error: Box::new(error),
            written: left_new,
        })
    }
}

/// The file a commit of [`commit_all`] replaces, kept as a hard link (or a copy) until all are
/// committed.
struct Kept {
    /// The output path as given.
    path: PathBuf,
    /// The file replaced.
    target: PathBuf,
    /// The hard link to the old file, `None` when there was none.
    old: Option<(PathBuf, cleanup::Registration)>,
}

impl Kept {
    /// Links the file `file` will replace to a name beside it (registered for removal on a
    /// signal, like a temporary).
    fn old_of(file: &AtomicFile) -> Result<Kept, OutputError> {
        let io = |error| OutputError::Io {
            path: file.path.clone(),
            error,
        };
        let target = file.target.clone();
        if !std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_file()) {
            return Ok(Kept {
                path: file.path.clone(),
                target,
                old: None,
            });
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = directory_of(&target);
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let old = dir.join(format!(".{name}.{}.{n}.old.partial", std::process::id()));
            let registration = cleanup::register(&old);
            // A file system without hard links gets a copy.
            let linked = std::fs::hard_link(&target, &old).or_else(|error| {
                if error.kind() == std::io::ErrorKind::AlreadyExists {
                    Err(error)
                } else {
                    std::fs::copy(&target, &old).map(drop)
                }
            });
            match linked {
                Ok(()) => {
                    return Ok(Kept {
                        path: file.path.clone(),
                        target,
                        old: Some((old, registration)),
                    });
                }
                Err(error) => {
                    cleanup::unregister(&registration);
                    if error.kind() != std::io::ErrorKind::AlreadyExists {
                        return Err(io(error));
                    }
                }
            }
        }
    }

    /// Puts the old file back (or removes the new one where there was none); whether it could.
    fn put_back(&self) -> bool {
        match &self.old {
            Some((old, _)) => std::fs::rename(old, &self.target).is_ok(),
            None => std::fs::remove_file(&self.target).is_ok(),
        }
    }

    /// Removes the link to the old file, if it is still there.
    fn forget(&self) {
        if let Some((old, registration)) = &self.old {
            let _ = std::fs::remove_file(old);
            cleanup::unregister(registration);
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.writer {
            Some(w) => w.write(buf),
            None => Err(std::io::Error::other("the file was committed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.writer {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.discard();
        }
    }
}

/// Writes `bytes` to `path` atomically ([`AtomicFile`]), after checking that the disk has
/// room for them ([`Budget::disk`]; a file system whose free space cannot be measured is
/// written to regardless).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let target = target::resolve(path)?;
    if let Ok(disk) = Budget::disk(&target) {
        let estimate = Estimate::new(path.display().to_string(), "the file", bytes.len() as u64);
        disk.check(&estimate)
            .map_err(|error| OutputError::DiskSpace(Box::new(error)))?;
    }
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes).map_err(|error| OutputError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    file.commit()
}
