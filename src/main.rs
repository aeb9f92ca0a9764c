//! The `snowsim` command line.

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    restore_default_sigpipe();
    end_cleanly_when_printing_fails();
    let args = cli::Cli::parse();
    let result = cli::run(args).and_then(|code| {
        std::io::stdout()
            .flush()
            .map_err(|error| cli::ConsoleError::new("output", error))?;
        Ok(code)
    });
    match result {
        Ok(code) => code,
        Err(error) if cli::is_closed_pipe(&error) => ExitCode::FAILURE,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "error: {}", cli::error_message(&error));
            ExitCode::from(cli::exit_code_for(&error))
        }
    }
}

/// Rust ignores SIGPIPE, so `println!` into a closed pipe (`snowsim devices | head -1`) panics;
/// like other command-line tools, end quietly instead.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A backstop for code that still prints with `println!`/`eprintln!` (commands write through
/// [`cli::console`] and return the error instead): their panic on a failed write (`> /dev/full`)
/// becomes an error message and exit status 1, without a panic report.
fn end_cleanly_when_printing_fails() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if let Some(rest) = message.strip_prefix("failed printing to ") {
            let _ = writeln!(std::io::stderr(), "error: cannot write to {rest}");
            std::process::exit(1);
        }
        default(info);
    }));
}
