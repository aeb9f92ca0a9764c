//! Temporary files to remove when the process is interrupted: a global set of paths and a
//! SIGINT and SIGTERM handler (installed with the first temporary) that removes them and exits
//! with status 130 or 143.
//!
//! The handler does the removal itself, in the signal handler, so that nothing can end the
//! process first. A handler installed earlier is called after the removal: LLVM's (the OpenCL
//! compiler's) removes its own temporary files and re-raises the signal, so with OpenCL loaded
//! the process dies by the signal; otherwise it exits with 128 + the signal's number. A shell
//! shows 130 or 143 either way. The set is a fixed array of atomic pointers to NUL-terminated
//! paths, which the handler can read without a lock; a path leaves the set by its slot being
//! cleared, and its bytes are never freed, since the handler may be reading them (a few dozen
//! bytes per file written).

use std::ffi::{CString, c_int, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr::null_mut;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicPtr, Ordering};

/// How many temporaries can be registered at once (more are written, but not removed on a
/// signal).
const SLOTS: usize = 256;

/// The temporaries being written, as leaked NUL-terminated paths; null slots are free.
static TEMPORARIES: [AtomicPtr<libc::c_char>; SLOTS] =
    [const { AtomicPtr::new(null_mut()) }; SLOTS];

/// The handlers of SIGINT and SIGTERM before ours, once ours are installed.
static PREVIOUS: OnceLock<[libc::sigaction; 2]> = OnceLock::new();

/// The signals handled, in the order of [`PREVIOUS`].
const SIGNALS: [c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// A registered temporary: its slot in the set.
#[derive(Debug)]
pub(crate) struct Registration(Option<usize>);

/// Adds `path` to the set removed on SIGINT or SIGTERM; do this before the file is created, so
/// that no moment exists when the file is there and unknown to the handler.
pub(crate) fn register(path: &Path) -> Registration {
    PREVIOUS.get_or_init(install_handlers);
    let Ok(name) = CString::new(path.as_os_str().as_bytes()) else {
        return Registration(None);
    };
    let name = name.into_raw();
    for (i, slot) in TEMPORARIES.iter().enumerate() {
        if slot
            .compare_exchange(null_mut(), name, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Registration(Some(i));
        }
    }
    // SAFETY: `name` came from `into_raw` above and was not stored anywhere.
    drop(unsafe { CString::from_raw(name) });
    Registration(None)
}

/// Removes a temporary from the set (after it was renamed or removed).
pub(crate) fn unregister(registration: &Registration) {
    if let Some(i) = registration.0 {
        // The path's bytes are leaked: the handler may be reading them right now.
        TEMPORARIES[i].store(null_mut(), Ordering::SeqCst);
    }
}

/// Installs [`on_signal`] for SIGINT and SIGTERM and returns the handlers it replaced.
fn install_handlers() -> [libc::sigaction; 2] {
    SIGNALS.map(|signal| {
        // SAFETY: sigaction is plain old data; all-zero bytes are a valid value of it.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        // SAFETY: both structs are valid; sa_mask is emptied before use.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        unsafe {
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, &mut previous);
        }
        previous
    })
}

/// Removes the registered temporaries, lets the previous handler run, and exits with
/// 128 + `signal`. Only async-signal-safe calls: atomic loads, `unlink`, `_exit`.
extern "C" fn on_signal(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    for slot in &TEMPORARIES {
        let path = slot.load(Ordering::SeqCst);
        if !path.is_null() {
            // SAFETY: a registered path is a leaked, NUL-terminated string, never freed.
            unsafe { libc::unlink(path) };
        }
    }
    let previous = PREVIOUS
        .get()
        .and_then(|p| SIGNALS.iter().position(|&s| s == signal).map(|i| p[i]));
    if let Some(previous) = previous {
        let handler = previous.sa_sigaction;
        if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
            // SAFETY: the previous handler was installed for this signal with these flags; a
            // signal it raises again stays blocked until this handler returns, which it never
            // does.
            unsafe {
                if previous.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                        std::mem::transmute(handler);
                    f(signal, info, context);
                } else {
                    let f: extern "C" fn(c_int) = std::mem::transmute(handler);
                    f(signal);
                }
            }
        }
    }
    // SAFETY: _exit ends the process at once, without running destructors or atexit handlers.
    unsafe { libc::_exit(128 + signal) };
}
