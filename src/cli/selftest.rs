//! `snowsim selftest`: a short verified kernel run on one device.

use std::process::ExitCode;

use anyhow::Context as _;
use snowsim::cl::Context;
use snowsim::selftest::{check_parameters, run_triad};

use super::DeviceArg;
use super::console::outln;

/// Options of `snowsim selftest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    device: DeviceArg,
    /// Number of float4 values per array (three arrays are allocated).
    #[arg(long, default_value_t = 1 << 22)]
    elements: usize,
    /// Timed launches after one warm-up launch.
    #[arg(long, default_value_t = 20)]
    iterations: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    check_parameters(args.elements, args.iterations)?;
    let context = Context::from_selector(&args.device.device)?;
    let info = context.info();
    if !args.json {
        outln!("device: {}", info.label())?;
    }
    let report = run_triad(&context, args.elements, args.iterations)
        .with_context(|| format!("self-test failed on {}", info.label()))?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        outln!(
            "triad a = b + 0.5*c over {} float4 ({:.1} MiB moved per launch), work-group {}",
            report.elements,
            report.bytes_per_launch as f64 / (1u64 << 20) as f64,
            report.work_group_size
        )?;
        outln!(
            "  {} launches: mean {:.3} ms, best {:.3} ms, best {:.1} GB/s; result matches the CPU",
            report.iterations,
            report.mean_seconds * 1e3,
            report.best_seconds * 1e3,
            report.best_bytes_per_second / 1e9
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
