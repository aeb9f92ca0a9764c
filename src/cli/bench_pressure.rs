//! `snowsim bench pressure`: the wind's pressure solve over ranks against one rank.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use snowsim::bench::pressure;
use snowsim::cl::{Context, DeviceSelector};

use super::console::outln;

/// Options of `snowsim bench pressure`.
#[derive(Debug, clap::Args)]
pub struct PressureArgs {
    /// One device per rank, comma-separated (index as `snowsim devices` lists, or part of a
    /// name); the same device may come twice. The first also runs the one-rank solve.
    #[arg(
        long,
        default_value = "default",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    devices: Vec<DeviceSelector>,
    /// The scene whose terrain is remeshed to about --tets tetrahedra.
    #[arg(long, default_value = super::run::DEFAULT_SCENE)]
    scene: PathBuf,
    /// Mesh size in tetrahedra (`2^20` or a plain number; `scene`: the scene's own).
    #[arg(long, default_value = "2^20")]
    tets: String,
    /// CG iterations timed (after as many untimed). Fewer than a few hundred scatter between
    /// repeats on GPUs: the ranks are threads that the host schedules.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(1..=100000))]
    iterations: u32,
    /// Print the rows as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `snowsim bench pressure`.
pub fn run(args: PressureArgs) -> anyhow::Result<ExitCode> {
    let mut scene = super::run::load_scene(&args.scene)?;
    if args.tets != "scene" {
        let counts = snowsim::bench::counts::parse_counts("--tets", &args.tets, 6..=28)?;
        let [tets] = counts[..] else {
            anyhow::bail!("--tets takes one size here, not {}", args.tets);
        };
        scene = snowsim::bench::wind::resized(&scene, tets as usize)
            .with_context(|| {
                format!(
                    "--tets: {} has a mesh domain, which has one size",
                    args.scene.display()
                )
            })?
            .0;
    }
    let list = snowsim::cl::list_devices()?;
    let contexts = args
        .devices
        .iter()
        .map(|d| Ok(Context::new(d.select(&list)?)?))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bar = if args.json {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    let rows = pressure::measure(&contexts, &scene, args.iterations, |what| {
        bar.set_message(what.to_string());
        bar.tick();
    })?;
    bar.finish_and_clear();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let one = rows.first().map(|r| r.ms_per_iteration);
    outln!(
        "ranks  tetrahedra   vertices  owned (max)  halo (max)  ms/iteration  speed-up  residual/|b|  devices"
    )?;
    for r in &rows {
        outln!(
            "{:>5}  {:>10}  {:>9}  {:>11}  {:>10}  {:>12.4}  {:>8.2}  {:>12.2e}  {}",
            r.ranks,
            r.tetrahedra,
            r.vertices,
            r.owned_max,
            r.halo_max,
            r.ms_per_iteration,
            one.map_or(f64::NAN, |o| o / r.ms_per_iteration),
            r.relative_residual,
            r.devices.join("; ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
