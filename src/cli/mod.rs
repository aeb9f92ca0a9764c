//! Command-line interface: argument definitions and dispatch to one module per command.

mod bench;
mod bench_pressure;
mod bench_sweep;
mod bench_wind;
mod comm;
mod console;
mod devices;
mod film;
mod mesh;
mod mesh_partition;
mod plot;
mod run;
mod scene;
mod selftest;
mod sort;
mod wind;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
pub use console::ConsoleError;
use snowsim::cl::{self, DeviceSelector};

/// Real-time snow and wind simulation on OpenCL devices, and tools for unstructured meshes.
#[derive(Debug, Parser)]
#[command(name = "snowsim", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The `comm` subcommands.
#[derive(Debug, Subcommand)]
enum CommCommand {
    /// Every operation of the communication layer, checked, and the link timed.
    Check(comm::Args),
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the OpenCL devices of this machine, one row each.
    Devices(devices::Args),
    /// Run a short kernel (a STREAM triad) on a device, check it against the CPU and time it.
    Selftest(selftest::Args),
    /// Check the communication between ranks (under mpirun, or --local N threads) and time
    /// its link.
    #[command(subcommand)]
    Comm(CommCommand),
    /// Benchmark sweeps: without a sub-command, `snowsim run` over devices and settings, one
    /// CSV row per configuration (see --help); with one, a benchmark measured on the device
    /// (see benches/RESULTS.md for recorded numbers).
    Bench(Box<bench::Args>),
    /// Inspect, check, convert, renumber, measure, smooth and partition INRIA .mesh/.meshb
    /// files, and mesh terrains from heightmaps.
    #[command(subcommand)]
    Mesh(mesh::Command),
    /// Check the device's sorts (bitonic, radix, partial) against the CPU, time them, or watch
    /// the partial sort keep drifting keys sorted.
    #[command(subcommand)]
    Sort(sort::Command),
    /// Show the simulation: terrain, falling snow, wind and pressure views, in a window or
    /// headless (EGL) with PNG output; prints FPS and per-stage times. Under `mpirun -n K`
    /// with `--render off` (a build with the `mpi` feature), the parcels are split across
    /// the K ranks, each on its own device (`--device`, else the rank's local index among
    /// the GPUs) and solving the same wind, and rank 0 holds the cover and writes every
    /// output: the run equals one rank's bit for bit.
    Run(Box<run::Args>),
    /// Validate and summarise scene files (TOML), build and check their domain mesh.
    #[command(subcommand)]
    Scene(scene::Command),
    /// Run the wind solver alone, headless, and report how well it converged; optionally
    /// write the final state for ParaView (--vtu).
    Wind(wind::Args),
    /// Plot sweep CSVs (`snowsim bench`): FPS against particle count and mesh size, stacked
    /// per-stage times; PNG files with a JSON of their series beside each.
    #[command(long_about = plot::LONG_ABOUT)]
    Plot(plot::Args),
}

/// Which device a command runs on.
#[derive(Debug, Clone, clap::Args)]
pub struct DeviceArg {
    /// Device index (as `snowsim devices` lists) or a case-insensitive part of its name,
    /// platform or version, e.g. `1`, `h100`, `pocl`. Default: the first GPU, else the first
    /// device.
    #[arg(long, short, default_value = "default", allow_hyphen_values = true)]
    device: DeviceSelector,
}

/// A command's scene and device: the scene file read and checked, the device chosen by
/// `device`, its label and a context on it.
/// Parses a whole number of `T` for an option, saying what it must be: `-1` is "negative: must
/// be a whole number from 0 to 4294967295", not clap's "invalid digit". Options that take it
/// also allow hyphen values, so that `--seed -1` reaches it instead of being read as an option.
pub(crate) fn whole<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr + num_bounds::Bounded,
{
    let range = format!("a whole number from {} to {}", T::MIN_TEXT, T::MAX_TEXT);
    match text.trim().parse::<T>() {
        Ok(v) => Ok(v),
        Err(_) if text.trim_start().starts_with('-') => {
            Err(format!("`{text}` is negative: must be {range}"))
        }
        Err(_) => Err(format!("`{text}` is not {range}")),
    }
}

/// Lets every option's value be a negative number (`--steps -1`), so that it reaches the
/// option's parser, which says what is wrong with it ([`negative_hint`]), instead of clap's
/// "unexpected argument '-1' found" and its tip to write `-- -1`.
pub fn negative_numbers_reach_their_parser(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| {
            if arg.get_action().takes_values() {
                arg.allow_negative_numbers(true)
            } else {
                arg
            }
        })
        .mut_subcommands(negative_numbers_reach_their_parser)
}

/// A parse error for a negative number given to an option of whole numbers (whose parser says
/// only "invalid digit found in string") says that the number is negative and what the option
/// takes; other errors are returned as they are.
pub fn negative_hint(error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::ValueValidation {
        return error;
    }
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (Some(option), Some(value)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
    ) else {
        return error;
    };
    let digits = value.strip_prefix('-').unwrap_or_default();
    let unsigned = std::error::Error::source(&error)
        .is_some_and(|e| e.to_string() == "invalid digit found in string");
    if !(unsigned && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())) {
        return error;
    }
    clap::Error::raw(
        ErrorKind::ValueValidation,
        format!(
            "invalid value '{value}' for '{option}': `{value}` is negative: must be a whole \
             number, 0 or more\n"
        ),
    )
}

/// The bounds of the integer types [`whole`] parses, as text.
pub(crate) mod num_bounds {
    /// An integer type's smallest and largest values, written out.
    pub trait Bounded {
        /// The smallest value.
        const MIN_TEXT: &'static str;
        /// The largest value.
        const MAX_TEXT: &'static str;
    }
    impl Bounded for u32 {
        const MIN_TEXT: &'static str = "0";
        const MAX_TEXT: &'static str = "4294967295";
    }
    impl Bounded for u64 {
        const MIN_TEXT: &'static str = "0";
        const MAX_TEXT: &'static str = "18446744073709551615";
    }
    impl Bounded for usize {
        const MIN_TEXT: &'static str = "0";
        const MAX_TEXT: &'static str = "18446744073709551615";
    }
}

fn scene_and_device(
    scene: &std::path::Path,
    device: &DeviceArg,
) -> anyhow::Result<(snowsim::scene::Scene, String, snowsim::cl::Context)> {
    let scene = run::load_scene(scene)?;
    let devices = snowsim::cl::list_devices()?;
    let entry = device.device.select(&devices)?;
    let label = entry.info.label();
    Ok((scene, label, snowsim::cl::Context::new(entry)?))
}

/// Runs the parsed command; the exit code says whether what was checked passed. Under an MPI
/// launcher with several ranks only `comm check` and `run` run over them (`run` refuses what
/// it cannot split yet): every other command would run once per rank, each writing the same
/// outputs.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some((rank, size)) = snowsim::comm::launcher().filter(|&(_, size)| size != Some(1))
        && !matches!(cli.command, Command::Comm(_) | Command::Run(_))
    {
        if !cfg!(feature = "mpi") {
            return Err(snowsim::comm::CommError::NoMpi { rank, size }.into());
        }
        anyhow::bail!(
            "started by an MPI launcher as rank {rank} of {}: this command does not run over \
             several ranks yet (each rank would run it whole and write the same files); run it \
             without mpirun; over ranks run `mpirun -n K snowsim run --render off …`, or \
             `mpirun -n K snowsim comm check` to test them",
            snowsim::comm::ranks(size)
        );
    }
    match cli.command {
        Command::Devices(args) => devices::run(args),
        Command::Selftest(args) => selftest::run(args),
        Command::Comm(CommCommand::Check(args)) => comm::run(args),
        Command::Mesh(command) => mesh::run(command),
        Command::Bench(args) => bench::run(*args),
        Command::Sort(command) => sort::run(command),
        Command::Run(args) => run::run(*args),
        Command::Scene(command) => scene::run(command),
        Command::Wind(args) => wind::run(args),
        Command::Plot(args) => plot::run(args),
    }
}

/// Exit code for an error: 2 when there is no OpenCL platform at all (or no device on the
/// platforms there are), 1 otherwise.
pub fn exit_code_for(error: &anyhow::Error) -> u8 {
    let no_platform = error.chain().any(|cause| {
        matches!(
            opencl_error(cause),
            Some(cl::Error::NoPlatform { .. } | cl::Error::NoDevice { .. })
        )
    });
    if no_platform { 2 } else { 1 }
}

/// The OpenCL error `cause` is or wraps transparently (as gml's, the sort's and the
/// session's errors do, so that it never shows in the chain of causes by itself).
fn opencl_error<'a>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a cl::Error> {
    if let Some(e) = cause.downcast_ref::<cl::Error>() {
        return Some(e);
    }
    if let Some(snowsim::gml::GmlError::Cl(e)) = cause.downcast_ref() {
        return Some(e);
    }
    if let Some(snowsim::sort::SortError::Cl(e)) = cause.downcast_ref() {
        return Some(e);
    }
    if let Some(snowsim::interop::Error::Cl(e)) = cause.downcast_ref() {
        return Some(e);
    }
    None
}

/// The error and its causes on one line, `: `-separated as `{:#}` writes them, each said once:
/// a cause whose text its wrapper already shows (an OS error quoted in a message) is skipped.
pub fn error_message(error: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

/// Whether the error is a write to a closed pipe, which ends a command quietly.
pub fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<ConsoleError>()
            .is_some_and(ConsoleError::is_closed_pipe)
            || cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
