//! The `snowsim` command line.

mod cli;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    restore_default_sigpipe();
    end_cleanly_when_printing_fails();
    start_thread_pool();
    let mut command = cli::negative_numbers_reach_their_parser(cli::Cli::command());
    let args = match command
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|matches| cli::Cli::from_arg_matches(&matches))
    {
        Ok(args) => args,
        Err(error) => {
            let error = cli::negative_hint(error.format(&mut command)).format(&mut command);
            return print_parse_outcome(&error);
        }
    };
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

/// What clap's `exit` does for help, version and usage errors, with the write checked: help
/// or version that cannot be written (`snowsim --help > /dev/full`) ends with a message on
/// standard error and status 1, not clap's silent status 0.
fn print_parse_outcome(error: &clap::Error) -> ExitCode {
    let written = error.print().and_then(|()| {
        if error.use_stderr() {
            std::io::stderr().flush()
        } else {
            std::io::stdout().flush()
        }
    });
    match written {
        Ok(()) => ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(1)),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
        Err(e) => {
            let stream = if error.use_stderr() {
                "error"
            } else {
                "output"
            };
            let _ = writeln!(
                std::io::stderr(),
                "error: {}",
                cli::ConsoleError::new(stream, e)
            );
            ExitCode::FAILURE
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

/// Virtual memory a worker thread may reserve: its stack and glibc's malloc arena (64 MiB).
const THREAD_RESERVE: u64 = 128 << 20;

/// Starts rayon's global pool (mesh preparation, link building) with as many threads as the
/// address-space limit allows. Under a tight `ulimit -v` one thread per core may not start,
/// and rayon would then panic at its first use instead of the command reporting its own error.
fn start_thread_pool() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut limit = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
    let threads = if known && limit.rlim_cur != libc::RLIM_INFINITY {
        // A quarter of the limit for threads, the rest for the work.
        let affordable = (limit.rlim_cur / 4 / THREAD_RESERVE).max(1);
        cores.min(usize::try_from(affordable).unwrap_or(usize::MAX))
    } else {
        cores
    };
    // Failing here leaves rayon to start its own pool later, as it would have anyway.
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global();
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
