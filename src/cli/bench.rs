//! `snowsim bench …`: benchmarks measured on the device.

use std::process::ExitCode;

use snowsim::bench::{gml_bandwidth, launch, reduce};
use snowsim::budget::{Estimate, bytes_of, check_host_and_device};
use snowsim::cl::{Context, list_devices};
use snowsim::gml::Gml;

use super::DeviceArg;
use super::console::outln;

/// `snowsim bench`: a sweep of `snowsim run` (no sub-command) or one of the benchmarks.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, after_long_help = super::bench_sweep::SWEEP_HELP)]
pub struct Args {
    /// The benchmark to run; without one, a sweep.
    #[command(subcommand)]
    command: Option<Command>,
    /// The sweep's options.
    #[command(flatten)]
    sweep: super::bench_sweep::SweepArgs,
}

/// The benchmarks.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// GMlib's bandwidth test: direct, indirect and vertex-ball kernels on a generated
    /// tetrahedral cube, in GB/s and as a fraction of the device's copy bandwidth.
    Gml(GmlArgs),
    /// What a gml launch costs: a chain of small direct-loop kernels enqueued without waiting
    /// against the same kernels launched one by one, with profiling on and off: host µs per
    /// enqueue, device µs per kernel and the gap between kernels.
    Launch(LaunchArgs),
    /// gml's reductions (min, max, sum, L0, L1, L2, L∞) over a scalar f32 field and, on fp64
    /// devices, an f64 one: device time of both passes, and bytes read per second over the
    /// device's copy bandwidth.
    Reduce(ReduceArgs),
    /// The wind step per mesh size: median time per step over steps 100–1 100, CG
    /// iterations, the start-up solve and first step apart, per-stage device times and their
    /// unique bytes over the copy bandwidth; one CSV row per size and stage with --csv.
    Wind(super::bench_wind::WindArgs),
    /// The wind's pressure solve over ranks (threads of this process, a device each: a slab
    /// of the mesh and two rings of halo per rank) against one rank solving the whole system:
    /// wall time per CG iteration, the same iterations on the same system.
    Pressure(super::bench_pressure::PressureArgs),
    /// The snow's frame on a scene's domain per particle count and sort mode: the particle
    /// update (bytes over the device's copy bandwidth), the sort, the permutation and the
    /// cover's smoothing, from OpenCL profiling.
    Snow(SnowArgs),
}

/// Options of `snowsim bench snow`.
#[derive(Debug, clap::Args)]
pub struct SnowArgs {
    #[command(flatten)]
    device: DeviceArg,
    /// The scene whose domain, wind and snow settings are used.
    #[arg(long, value_name = "FILE", default_value = "scenes/valley.toml")]
    scene: std::path::PathBuf,
    /// Particle counts as powers of two (20: 1 048 576).
    #[arg(long, value_delimiter = ',', default_values_t = [16u32, 18, 20])]
    log2: Vec<u32>,
    /// Sort modes to time [default: off, full and partial].
    #[arg(long, value_delimiter = ',', value_name = "MODE")]
    sort: Vec<SortArg>,
    /// Untimed frames first, so the partial sort reaches its steady state.
    #[arg(long, default_value_t = 5)]
    warmup: u32,
    /// Timed frames per size and mode.
    #[arg(long, default_value_t = 10)]
    frames: u32,
    /// Print the rows as JSON.
    #[arg(long)]
    json: bool,
}

/// `--sort` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SortArg {
    Off,
    Full,
    Partial,
}

/// Options of `snowsim bench reduce`.
#[derive(Debug, clap::Args)]
pub struct ReduceArgs {
    #[command(flatten)]
    device: DeviceArg,
    /// Values per field, as a power of two (24: 16 777 216 values).
    #[arg(long, default_value_t = 24)]
    log2: u32,
    /// Timed reductions per operator and type, after one warm-up: 1 to 10000.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    launches: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Accumulate in float with compensation even where the device has FP64 (what devices
    /// without FP64 do), to compare the two.
    #[arg(long)]
    float_accumulators: bool,
    /// Fold the partial results in a second launch instead of in the last work-group of one
    /// launch (how gml reduced before), to compare the two.
    #[arg(long)]
    two_passes: bool,
    /// Work-groups per compute unit of the first pass, 1 to 64 (default: gml's choice, 4), to
    /// tune it.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    groups_per_unit: Option<u16>,
}

/// Options of `snowsim bench launch`.
#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    #[command(flatten)]
    device: DeviceArg,
    /// Vertex counts of the kernel's loop (the valley scene's mesh has 197589 vertices).
    #[arg(long, value_delimiter = ',', default_values_t = [65536usize, 197589, 262144])]
    vertices: Vec<usize>,
    /// Kernels per chain (and launched one by one), after a warm-up: 2 to 100000.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    launches: u32,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `snowsim bench gml`.
#[derive(Debug, clap::Args)]
pub struct GmlArgs {
    #[command(flatten)]
    device: DeviceArg,
    /// Cubes per axis; the mesh has 6·N³ tetrahedra (150 gives 20 million).
    #[arg(long, default_value_t = 40)]
    cells: usize,
    /// Timed launches of each kernel, after one warm-up launch: 1 to 10000.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    launches: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `snowsim bench`: the sub-command given, else the sweep.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(command) = args.command else {
        return super::bench_sweep::run(args.sweep);
    };
    match command {
        Command::Gml(args) => gml(args),
        Command::Launch(args) => launches(args),
        Command::Reduce(args) => reductions(args),
        Command::Wind(args) => super::bench_wind::run(args),
        Command::Pressure(args) => super::bench_pressure::run(args),
        Command::Snow(args) => snow(args),
    }
}

fn snow(args: SnowArgs) -> anyhow::Result<ExitCode> {
    use snowsim::scene::SortMode;
    anyhow::ensure!(
        args.log2.iter().all(|l| (1..=27).contains(l)),
        "--log2 values must be between 1 and 27, not {:?}",
        args.log2
    );
    anyhow::ensure!(
        (1..=10_000).contains(&args.frames) && args.warmup <= 10_000,
        "--frames must be 1 to 10000 and --warmup at most 10000"
    );
    let mut scene = snowsim::scene::Scene::load(&args.scene)?;
    anyhow::ensure!(
        scene.simulate.snow,
        "{} does not simulate snow (simulate.snow = false)",
        args.scene.display()
    );
    // The snow in the scene's inflow profile: the wind's own cost is `bench wind`'s.
    scene.simulate.wind = false;
    scene.simulate.frozen_wind_steps = None;
    let devices = list_devices()?;
    let entry = args.device.device.select(&devices)?;
    let largest = args.log2.iter().copied().max().unwrap_or(16);
    // The particle count is --log2's, not the scene's: a refusal names the option.
    snowsim::scene::limits::check_run(&scene, 1u64 << largest, Some(&entry.info)).map_err(|e| {
        match e {
            snowsim::scene::SceneError::Invalid { key, message, .. } if key == "snow.particles" => {
                anyhow::anyhow!("--log2 {largest} (2^{largest} parcels): {message}")
            }
            e => e.into(),
        }
    })?;
    snowsim::scene::limits::check_domain_mesh(&scene)?;
    let ground = snowsim::scene::ground_of(&scene)?;
    let setup = snowsim::sim::SimSetup::new(&scene, &ground, &Default::default())?;
    let tetrahedra = setup.scene.as_ref().map_or(0, |s| {
        s.domain
            .mesh
            .count(snowsim::meshio::ElementKind::Tetrahedra)
    });
    let modes: Vec<SortMode> = if args.sort.is_empty() {
        vec![SortMode::Off, SortMode::Full, SortMode::Partial]
    } else {
        args.sort
            .iter()
            .map(|m| match m {
                SortArg::Off => SortMode::Off,
                SortArg::Full => SortMode::Full,
                SortArg::Partial => SortMode::Partial,
            })
            .collect()
    };
    let context = Context::new(entry)?;
    if !args.json {
        outln!(
            "device: {}; scene {}: {} tetrahedra; {} warm-up and {} timed frames of {} s",
            entry.info.label(),
            args.scene.display(),
            tetrahedra,
            args.warmup,
            args.frames,
            setup.dt
        )?;
        outln!(
            "{:>10} {:>8} {:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9}",
            "particles",
            "sort",
            "update ms",
            "GB/s",
            "roofline",
            "sort ms",
            "permute",
            "cover",
            "frame ms"
        )?;
    }
    let counts: Vec<usize> = args.log2.iter().map(|&l| 1usize << l).collect();
    let mut rows = Vec::new();
    for mode in modes {
        let done =
            snowsim::bench::snow::run(&context, &setup, &counts, mode, args.warmup, args.frames)?;
        if !args.json {
            for r in &done {
                outln!(
                    "{:>10} {:>8} {:>10.3} {:>9.1} {:>8.1}% {:>10.3} {:>9.3} {:>9.3} {:>9.3}",
                    r.particles,
                    r.sort,
                    r.update_ms,
                    r.update_gb_per_s,
                    100.0 * r.update_roofline,
                    r.sort_ms,
                    r.permute_ms,
                    r.cover_ms,
                    r.frame_ms
                )?;
            }
        }
        rows.extend(done);
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
    } else if let Some(r) = rows.first() {
        outln!("copy bandwidth: {:.1} GB/s", r.copy_gb_per_s)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn reductions(args: ReduceArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        (1..=28).contains(&args.log2),
        "--log2 must be between 1 and 28, not {}",
        args.log2
    );
    let devices = list_devices()?;
    let entry = args.device.device.select(&devices)?;
    let n = 1u64 << args.log2;
    // The vertex mesh (float4 + ref, never uploaded), one field at a time on the host and the
    // device (8 bytes a value at most), and the copy benchmark's two buffers.
    let setting = format!("`--log2 {}`", args.log2);
    check_host_and_device(
        &Estimate::new(
            setting.clone(),
            "the vertex mesh and a field of 2^log2 values",
            bytes_of(&[n, 20]).saturating_add(bytes_of(&[n, 16])),
        ),
        &Estimate::new(
            setting,
            "a field of 2^log2 values and the copy benchmark's buffers",
            bytes_of(&[n, 8]).saturating_add(bytes_of(&[n, 16])),
        )
        .with_largest_allocation(bytes_of(&[n, 8])),
        &entry.info,
    )?;
    let mut gml = Gml::with_context(Context::new(entry)?);
    if !args.json {
        outln!(
            "device: {}; fields of 2^{} values, {} reductions per operator",
            gml.device().label(),
            args.log2,
            args.launches
        )?;
    }
    gml.set_reduce_options(snowsim::gml::ReduceOptions {
        float_accumulators: args.float_accumulators,
        two_passes: args.two_passes,
        groups_per_unit: args.groups_per_unit.map(usize::from),
        ..Default::default()
    });
    let report = reduce::run(&mut gml, 1 << args.log2, args.launches)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "device copy bandwidth: {:.1} GB/s",
        report.copy_bytes_per_second / 1e9
    )?;
    outln!(
        "{:<6} {:<6} {:>10} {:>10} {:>10} {:>10}",
        "type",
        "op",
        "mean ms",
        "best ms",
        "GB/s",
        "/copy"
    )?;
    for r in &report.results {
        outln!(
            "{:<6} {:<6} {:>10.3} {:>10.3} {:>10.1} {:>10.2}",
            r.scalar,
            r.op,
            r.mean_seconds * 1e3,
            r.best_seconds * 1e3,
            r.bytes_per_second / 1e9,
            r.over_copy
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn launches(args: LaunchArgs) -> anyhow::Result<ExitCode> {
    if let Some(bad) = args.vertices.iter().find(|&&v| v == 0 || v > 1 << 28) {
        anyhow::bail!("--vertices must be between 1 and 2^28, not {bad}");
    }
    let devices = list_devices()?;
    let entry = args.device.device.select(&devices)?;
    // One instance at a time, on the host and the device alike: the vertices (float4, the
    // largest buffer), their references and the kernel's f32 field. gml uploads the vertices
    // with the field though the kernel reads only the field, and a CPU device (PoCL) keeps its
    // buffers in host memory beside the host's copies: left out, 2^28 vertices passed the
    // check and PoCL aborted on an assertion when its allocation failed.
    let largest = args.vertices.iter().copied().max().unwrap_or(0) as u64;
    let setting = format!("`--vertices {largest}`");
    check_host_and_device(
        &Estimate::new(
            setting.clone(),
            "the vertices (float4), their references and the kernel's field (f32)",
            bytes_of(&[largest, 24]),
        ),
        &Estimate::new(
            setting,
            "the device's copies of the vertices, their references and the field",
            bytes_of(&[largest, 24]),
        )
        .with_largest_allocation(bytes_of(&[largest, 16])),
        &entry.info,
    )?;
    if !args.json {
        outln!(
            "device: {}; {} launches of a direct loop per configuration",
            entry.info.label(),
            args.launches
        )?;
    }
    let results = launch::run(entry, &args.vertices, args.launches as usize)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&results)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let us = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"));
    outln!(
        "{:>9} {:>9} {:>15} {:>12} {:>12} {:>12} {:>10}",
        "vertices",
        "profiling",
        "mode",
        "host µs/call",
        "wall µs/kern",
        "device µs/k",
        "gap µs/k"
    )?;
    for r in &results {
        outln!(
            "{:>9} {:>9} {:>15} {:>12.2} {:>12.2} {:>12} {:>10}",
            r.vertices,
            if r.profiling { "on" } else { "off" },
            serde_json::to_value(r.mode)?.as_str().unwrap_or("?"),
            r.host_us_per_launch,
            r.wall_us_per_kernel,
            us(r.device_us_per_kernel),
            us(r.gap_us_per_kernel),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn gml(args: GmlArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        (1..=1000).contains(&args.cells),
        "--cells must be between 1 and 1000, not {}",
        args.cells
    );
    let devices = list_devices()?;
    let entry = args.device.device.select(&devices)?;
    let n = args.cells as u64;
    // The cube's vertices (float4 + ref) and tetrahedra (int4 + ref) on the host and the
    // device, and the vertex ball's tables (about 2 ints per tetrahedron corner) on both.
    let vertices = (n + 1).pow(3);
    let tetrahedra = 6 * n.pow(3);
    let mesh = bytes_of(&[vertices, 20]).saturating_add(bytes_of(&[tetrahedra, 20]));
    let ball = bytes_of(&[tetrahedra, 4, 8]);
    let setting = format!("`--cells {}`", args.cells);
    check_host_and_device(
        &Estimate::new(
            setting.clone(),
            "the cube mesh and its vertex ball",
            2 * mesh + ball,
        ),
        &Estimate::new(
            setting,
            "the cube mesh, its vertex ball and the kernels' fields",
            mesh + ball,
        )
        .with_largest_allocation(bytes_of(&[tetrahedra, 16])),
        &entry.info,
    )?;
    let mut gml = Gml::with_context(Context::new(entry)?);
    if !args.json {
        outln!(
            "device: {}; mesh: {}³ cubes, {} tetrahedra",
            gml.device().label(),
            args.cells,
            6 * args.cells.pow(3)
        )?;
    }
    let report = gml_bandwidth::run(&mut gml, args.cells, args.launches)?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} vertices, {} tetrahedra; host ({} threads), wall / CPU: generate {:.2} / {:.2} s, \
         import {:.2} / {:.2} s, vertex ball {:.2} / {:.2} s ({})",
        report.vertices,
        report.tetrahedra,
        report.host_threads,
        report.generate_seconds,
        report.generate_cpu_seconds,
        report.import_seconds,
        report.import_cpu_seconds,
        report.link_seconds,
        report.link_cpu_seconds,
        report
            .ball_tables
            .iter()
            .map(|(w, r)| format!("{r} rows × {w}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    outln!(
        "device copy bandwidth: {:.1} GB/s",
        report.copy_bytes_per_second / 1e9
    )?;
    outln!(
        "{:<16} {:>10} {:>14} {:>14} {:>12}",
        "kernel",
        "mean ms",
        "GMlib GB/s",
        "unique GB/s",
        "unique/copy"
    )?;
    for k in &report.kernels {
        outln!(
            "{:<16} {:>10.3} {:>14.1} {:>14.1} {:>12.2}",
            k.kernel,
            k.mean_seconds * 1e3,
            k.gmlib_bytes_per_second / 1e9,
            k.unique_bytes_per_second / 1e9,
            k.unique_over_copy
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
