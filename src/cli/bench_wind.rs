//! `snowsim bench wind`: the wind step per mesh size, to the terminal and a CSV file.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use snowsim::bench::copy::copy_bandwidth;
use snowsim::bench::wind::{self, Config, Row};
use snowsim::output::{self, AtomicFile};

use super::DeviceArg;
use super::console::outln;

/// Options of `snowsim bench wind`.
#[derive(Debug, clap::Args)]
pub struct WindArgs {
    #[command(flatten)]
    device: DeviceArg,
    /// The scene whose terrain is remeshed at each size (its layers kept, its cells changed).
    #[arg(long, default_value = super::run::DEFAULT_SCENE)]
    scene: PathBuf,
    /// Mesh sizes in tetrahedra: `2^14..2^22` (every power of two between), `2^20`, plain
    /// numbers, a comma list of these, or the scene's own mesh with `scene`.
    #[arg(long, default_value = "2^14..2^22", allow_hyphen_values = true)]
    tets: String,
    /// Untimed steps after the start-up solve.
    #[arg(long, default_value_t = 100)]
    warmup: u64,
    /// Timed steps (the median is reported).
    #[arg(long, default_value_t = 1000)]
    steps: u64,
    /// Steps run again with profiling events, for the per-stage times.
    #[arg(long, default_value_t = 20)]
    profiled_steps: u64,
    /// CG iterations of each batch after the first, and of the early window in which a solve
    /// stops only below half the tolerance [default: the solver's, 8].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    check_every: Option<u32>,
    /// Replace an existing output file that this command did not write (without it the
    /// command refuses to start); an output never replaces an input, with or without it.
    #[arg(long)]
    force: bool,
    /// Also write one CSV row per size and stage to FILE.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Print the rows as JSON.
    #[arg(long)]
    json: bool,
}

/// Sizes from `2^A..2^B`, `2^A`, plain numbers (comma-separated) or `scene` (`None`: the
/// scene's own mesh).
fn sizes(text: &str) -> anyhow::Result<Vec<Option<usize>>> {
    if text == "scene" {
        return Ok(vec![None]);
    }
    let counts = snowsim::bench::counts::parse_counts("--tets", text, 6..=26)?;
    Ok(counts.into_iter().map(|n| Some(n as usize)).collect())
}

/// One CSV row: a size and a stage.
#[derive(serde::Serialize)]
struct CsvRow<'a> {
    schema: u32,
    device: &'a str,
    tetrahedra: usize,
    vertices: usize,
    dt_s: f64,
    median_step_ms: f64,
    p10_step_ms: f64,
    p90_step_ms: f64,
    first_step_ms: f64,
    startup_ms: f64,
    startup_iterations: u32,
    cg_iterations: f64,
    not_converged: usize,
    divergence_after: f64,
    copy_gbs: f64,
    stage: &'a str,
    stage_ms: f64,
    stage_bytes: f64,
    stage_fraction_of_copy: f64,
}

/// Runs `snowsim bench wind`.
pub fn run(args: WindArgs) -> anyhow::Result<ExitCode> {
    let sizes = sizes(&args.tets)?;
    anyhow::ensure!(args.steps >= 1, "--steps must be at least 1");
    let (scene, device, context) = super::scene_and_device(&args.scene, &args.device)?;
    let mut plan = output::OutputPlan::new(args.force);
    for (role, path) in scene.input_files() {
        plan.input(role, path);
    }
    if let Some(path) = &args.csv {
        plan.file("--csv", path, output::FileKind::Csv("schema,device,"));
    }
    plan.check()?;
    let csv_path = match &args.csv {
        Some(p) => Some(output::check_writable(p)?),
        None => None,
    };
    let copy = copy_bandwidth(&context, 1 << 24, 10)?;
    if !args.json {
        outln!(
            "device: {device}; copy bandwidth {:.0} GB/s; {} warm-up and {} timed steps per size",
            copy / 1e9,
            args.warmup,
            args.steps
        )?;
    }
    let config = Config {
        warmup: args.warmup,
        steps: args.steps,
        profiled_steps: args.profiled_steps,
        check_every: args.check_every,
    };
    let bar = if args.json {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new_spinner()
    };
    let mut rows: Vec<Row> = Vec::new();
    for size in sizes {
        let (scene, cells) = match size {
            None => (scene.clone(), 0),
            Some(tets) => wind::resized(&scene, tets).with_context(|| {
                format!(
                    "{} has a mesh domain, which has one size: pass --tets scene",
                    args.scene.display()
                )
            })?,
        };
        let label = size.map_or("the scene's mesh".to_string(), |t| {
            format!("~{t} tetrahedra")
        });
        let row = wind::measure(context.clone(), &scene, cells, config, copy, |what| {
            bar.set_message(format!("{label}: {what}"));
            bar.tick();
        })
        .with_context(|| format!("wind at {label}"))?;
        bar.suspend(|| print_row(&row, args.json));
        rows.push(row);
    }
    bar.finish_and_clear();
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?)?;
    }
    if let Some(path) = csv_path {
        let mut file = AtomicFile::create(&path)?;
        {
            let mut writer = csv::Writer::from_writer(&mut file);
            for r in &rows {
                for s in &r.stages {
                    writer.serialize(CsvRow {
                        schema: 1,
                        device: &device,
                        tetrahedra: r.tetrahedra,
                        vertices: r.vertices,
                        dt_s: r.dt,
                        median_step_ms: r.median_step_ms,
                        p10_step_ms: r.p10_step_ms,
                        p90_step_ms: r.p90_step_ms,
                        first_step_ms: r.first_step_ms,
                        startup_ms: r.startup_ms,
                        startup_iterations: r.startup_iterations,
                        cg_iterations: r.iterations,
                        not_converged: r.not_converged,
                        divergence_after: r.divergence_after,
                        copy_gbs: r.copy_gbs,
                        stage: &s.stage,
                        stage_ms: s.ms,
                        stage_bytes: s.bytes,
                        stage_fraction_of_copy: s.fraction_of_copy,
                    })?;
                }
            }
            writer.flush()?;
        }
        file.commit()?;
        if !args.json {
            outln!("wrote {}", path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_row(r: &Row, json: bool) {
    if json {
        return;
    }
    let _ = outln!(
        "{:>9} tets {:>8} vertices dt {:.3} s: step median {:.3} ms (p10 {:.3}, p90 {:.3}), \
         first {:.1} ms, start-up {:.0} ms / {} it; CG {:.1} it/step, {} not converged, \
         divergence after {:.2e} 1/s; operator {}",
        r.tetrahedra,
        r.vertices,
        r.dt,
        r.median_step_ms,
        r.p10_step_ms,
        r.p90_step_ms,
        r.first_step_ms,
        r.startup_ms,
        r.startup_iterations,
        r.iterations,
        r.not_converged,
        r.divergence_after,
        r.operator
    );
    for s in &r.stages {
        let _ = outln!(
            "    {:<16} {:>5} launches {:>8.3} ms {:>8.1} MB  {:>5.1} % of copy",
            s.stage,
            s.launches,
            s.ms,
            s.bytes / 1e6,
            100.0 * s.fraction_of_copy
        );
    }
}
