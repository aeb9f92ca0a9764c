//! Standard output and standard error for the commands, with every write checked: a full disk
//! (`snowsim devices > /dev/full`) ends the command with an error and a non-zero status
//! instead of a panic in `println!`. A closed pipe still ends it quietly (SIGPIPE, see
//! `main`).

use std::fmt;
use std::io::Write;

/// Writes a line to standard output: `outln!("{x}")?`.
macro_rules! outln {
    () => {
        $crate::cli::console::out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::console::out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Writes a line to standard error: `errln!("warning: {x}")?`.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::console::err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {errln, outln};

/// A write to standard output or standard error failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write to standard {stream}: {error}")]
pub struct ConsoleError {
    /// `output` or `error`.
    stream: &'static str,
    /// Why (shown in the message, so not chained as a source).
    error: std::io::Error,
}

impl ConsoleError {
    /// A failed write to standard `stream` (`output` or `error`).
    pub fn new(stream: &'static str, error: std::io::Error) -> Self {
        Self { stream, error }
    }

    /// Whether the reader went away (a closed pipe): the command should end quietly.
    pub fn is_closed_pipe(&self) -> bool {
        self.error.kind() == std::io::ErrorKind::BrokenPipe
    }
}

/// Writes `text` to standard output and flushes it.
pub fn out(text: fmt::Arguments<'_>) -> Result<(), ConsoleError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_fmt(text)
        .and_then(|()| stdout.flush())
        .map_err(|error| ConsoleError {
            stream: "output",
            error,
        })
}

/// Writes `text` to standard error.
pub fn err(text: fmt::Arguments<'_>) -> Result<(), ConsoleError> {
    std::io::stderr()
        .lock()
        .write_fmt(text)
        .map_err(|error| ConsoleError {
            stream: "error",
            error,
        })
}
