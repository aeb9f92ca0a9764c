//! `snowsim bench …`: benchmarks measured on the device.

use std::process::ExitCode;

use snowsim::bench::gml_bandwidth;
use snowsim::gml::Gml;

use super::DeviceArg;

/// The benchmarks.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// GMlib's bandwidth test: direct, indirect and vertex-ball kernels on a generated
    /// tetrahedral cube, in GB/s and as a fraction of the device's copy bandwidth.
    Gml(GmlArgs),
}

/// Options of `snowsim bench gml`.
#[derive(Debug, clap::Args)]
pub struct GmlArgs {
    #[command(flatten)]
    device: DeviceArg,
    /// Cubes per axis; the mesh has 6·N³ tetrahedra (150 gives 20 million).
    #[arg(long, default_value_t = 40)]
    cells: usize,
    /// Timed launches of each kernel, after one warm-up launch.
    #[arg(long, default_value_t = 20)]
    launches: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Gml(args) => gml(args),
    }
}

fn gml(args: GmlArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        (1..=1000).contains(&args.cells),
        "--cells must be between 1 and 1000, not {}",
        args.cells
    );
    let mut gml = Gml::new(&args.device.device)?;
    if !args.json {
        println!(
            "device: {}; mesh: {}³ cubes, {} tetrahedra",
            gml.device().label(),
            args.cells,
            6 * args.cells.pow(3)
        );
    }
    let report = gml_bandwidth::run(&mut gml, args.cells, args.launches)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} vertices, {} tetrahedra; host: generate {:.2} s, import {:.2} s, vertex ball {:.2} s ({})",
        report.vertices,
        report.tetrahedra,
        report.generate_seconds,
        report.import_seconds,
        report.link_seconds,
        report
            .ball_tables
            .iter()
            .map(|(w, r)| format!("{r} rows × {w}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "device copy bandwidth: {:.1} GB/s",
        report.copy_bytes_per_second / 1e9
    );
    println!(
        "{:<16} {:>10} {:>14} {:>14} {:>12}",
        "kernel", "mean ms", "GMlib GB/s", "unique GB/s", "unique/copy"
    );
    for k in &report.kernels {
        println!(
            "{:<16} {:>10.3} {:>14.1} {:>14.1} {:>12.2}",
            k.kernel,
            k.mean_seconds * 1e3,
            k.gmlib_bytes_per_second / 1e9,
            k.unique_bytes_per_second / 1e9,
            k.unique_over_copy
        );
    }
    Ok(ExitCode::SUCCESS)
}
