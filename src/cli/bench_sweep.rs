//! `snowsim bench` without a sub-command: a sweep of `snowsim run` over devices and settings,
//! one CSV row per configuration (the work is in `snowsim::bench::sweep`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use snowsim::bench::counts::parse_counts;
use snowsim::bench::record::Row;
use snowsim::bench::sweep::{self, Plan, Progress, SceneDefaults};

use super::console::outln;

/// The example and details `snowsim bench --help` ends with.
pub const SWEEP_HELP: &str = "\
Without a sub-command, `snowsim bench` runs a sweep: every combination of the lists given \
(devices × particles × tets × interop × particle-render × sort × simulate × render), each run \
--repeats times as `snowsim run --headless --json` in a process of its own, killed after \
--timeout seconds. Each configuration gets one CSV row (see src/bench/record.rs): the date, \
snowsim's version and git commit, the device, platform, driver, OpenCL version, compute units \
and clock, every setting, the interop and particle-render modes the runs used, FPS mean and \
standard deviation over the repeats (sample, n − 1) and mean ms per stage. A configuration \
that fails (an error, a timeout, a driver's abort) gets a row with status error, timeout or \
killed and the child's error line, and the sweep goes on. The CSV is rewritten after every \
configuration, so an interrupted sweep keeps what finished. Options not given are not passed \
to `snowsim run`: the scene's or run's defaults apply.

Example (4 configurations × 2 runs on PoCL, small and quick):
  snowsim bench --devices pocl --scene scenes/flat.toml --particles 2^10,2^12 \\
      --sort off,full --size 160x120 --frames 3 --warmup 1 --repeats 2 --csv sweep.csv";

/// A sweep CSV, recognised by its header (`src/bench/record.rs`): the only kind `--csv`
/// replaces without `--force`.
const SWEEP_CSV: snowsim::output::FileKind = snowsim::output::FileKind::Csv("schema,date,");

/// Options of the sweep (`snowsim bench` without a sub-command).
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Devices: `all`, or a comma list of indices or parts of names as `--device` takes
    /// (`0,h100`) [default: the first GPU, else the first device].
    #[arg(long, value_name = "all|LIST", allow_hyphen_values = true)]
    devices: Option<String>,
    /// The scene file every configuration runs.
    #[arg(long, value_name = "FILE", default_value = super::run::DEFAULT_SCENE)]
    scene: PathBuf,
    /// Particle counts: `2^A..2^B` (every power of two between), `2^A`, plain numbers, or a
    /// comma list of these (`1000,2^12..2^14`) [default: the scene's].
    #[arg(long, value_name = "2^A..2^B|LIST", allow_hyphen_values = true)]
    particles: Option<String>,
    /// Wind mesh sizes in tetrahedra (terrain scenes), written as --particles
    /// [default: the scene's mesh].
    #[arg(long, value_name = "2^C..2^D|LIST", allow_hyphen_values = true)]
    tets: Option<String>,
    /// Draw frames (`on`) or only simulate (`off`); `on,off` runs both.
    #[arg(long, value_delimiter = ',', value_name = "on|off",
          value_parser = ["on", "off"])]
    render: Vec<String>,
    /// Interop modes to run: `auto`, `share`, `external`, `copy` (comma list) [default: auto].
    #[arg(long, value_delimiter = ',', value_name = "LIST",
          value_parser = ["auto", "share", "external", "copy"])]
    interop: Vec<String>,
    /// Particle renderers to run: `auto`, `sprites`, `splat` (comma list) [default: auto].
    #[arg(long, value_delimiter = ',', value_name = "LIST",
          value_parser = ["auto", "sprites", "splat"])]
    particle_render: Vec<String>,
    /// Sort modes to run: `off`, `full`, `partial` (comma list) [default: the scene's].
    #[arg(long, value_delimiter = ',', value_name = "LIST",
          value_parser = ["off", "full", "partial"])]
    sort: Vec<String>,
    /// What to simulate, one configuration per item: `wind`, `snow` or `wind+snow` (both;
    /// passed to `snowsim run` as `--simulate wind,snow`) [default: the scene's].
    #[arg(long, value_delimiter = ',', value_name = "LIST",
          value_parser = ["wind", "snow", "wind+snow"])]
    simulate: Vec<String>,
    /// Measured frames per run.
    #[arg(long, value_name = "N", default_value_t = 100)]
    frames: u32,
    /// Frames per run before the measured ones, left out of every time.
    #[arg(long, value_name = "W", default_value_t = 10)]
    warmup: u32,
    /// Runs per configuration, each a process of its own (mean and std over them).
    #[arg(long, value_name = "R", default_value_t = 3)]
    repeats: u32,
    /// Seconds one run may take before it is killed (its configuration gets a timeout row).
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    timeout: u64,
    /// Frame size in pixels [default: the scene's view.window].
    #[arg(long, value_name = "WxH", value_parser = super::run::parse_size, allow_hyphen_values = true)]
    size: Option<(u32, u32)>,
    /// Replace an existing output file that this command did not write (without it the
    /// command refuses to start); an output never replaces an input, with or without it.
    #[arg(long)]
    force: bool,
    /// Write the rows to this CSV file (rewritten after every configuration).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Keep the rows already in --csv (a sweep CSV of the same schema) and add this sweep's
    /// after them, instead of replacing the file.
    #[arg(long, requires = "csv")]
    append: bool,
    /// Show the runs' own output (their stderr) above the progress bar.
    #[arg(long, short)]
    verbose: bool,
}

/// The progress bar over every run of the sweep.
struct Bar {
    bar: indicatif::ProgressBar,
    verbose: bool,
}

impl Progress for Bar {
    fn start(&self, index: usize, total: usize, label: &str) {
        self.bar
            .set_message(format!("config {}/{total}: {label}", index + 1));
    }

    fn run_done(&self) {
        self.bar.inc(1);
    }

    fn stderr_line(&self, line: &str) {
        if !self.verbose {
            return;
        }
        if self.bar.is_hidden() {
            // A hidden bar (stderr is not a terminal) prints nothing; an echo that cannot be
            // written is not worth stopping the sweep for.
            let _ = writeln!(std::io::stderr(), "  | {line}");
        } else {
            self.bar.println(format!("  | {line}"));
        }
    }
}

/// Runs the sweep.
pub fn run(args: SweepArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        (1..=1_000_000).contains(&args.frames),
        "--frames must be 1 to 1000000"
    );
    anyhow::ensure!(args.warmup <= 1_000_000, "--warmup must be at most 1000000");
    anyhow::ensure!(
        (1..=1000).contains(&args.repeats),
        "--repeats must be 1 to 1000"
    );
    anyhow::ensure!(args.timeout >= 1, "--timeout must be at least 1 second");
    let some = |list: Vec<u64>| list.into_iter().map(Some).collect::<Vec<_>>();
    let particles = match &args.particles {
        Some(text) => some(parse_counts("--particles", text, 0..=62)?),
        None => Vec::new(),
    };
    let tets = match &args.tets {
        Some(text) => some(parse_counts("--tets", text, 6..=40)?),
        None => Vec::new(),
    };
    let strings = |list: Vec<String>| list.into_iter().map(Some).collect::<Vec<_>>();
    let scene = super::run::load_scene(&args.scene)?;
    let mut plan = snowsim::output::OutputPlan::new(args.force);
    for (role, path) in scene.input_files() {
        plan.input(role, path);
    }
    if let Some(path) = &args.csv {
        plan.file("--csv", path, SWEEP_CSV);
    }
    plan.check()?;
    let csv = match &args.csv {
        Some(path) => Some(snowsim::output::check_writable(path)?),
        None => None,
    };
    let devices = sweep::select_devices(args.devices.as_deref())?;
    let plan = Plan {
        devices,
        scene: args.scene.clone(),
        defaults: SceneDefaults::of(&scene),
        particles,
        tets,
        interop: strings(args.interop),
        particle_render: strings(args.particle_render),
        sort: strings(args.sort),
        simulate: strings(args.simulate),
        render: args.render.iter().map(|r| Some(r == "on")).collect(),
        frames: args.frames,
        warmup: args.warmup,
        repeats: args.repeats,
        timeout: Duration::from_secs(args.timeout),
        size: args.size,
    };
    let exe = std::env::current_exe().context("finding the snowsim binary to run")?;
    let configurations = plan.configurations().len();
    let runs = configurations as u64 * u64::from(plan.repeats);
    let bar = indicatif::ProgressBar::new(runs);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} runs {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let progress = Bar {
        bar,
        verbose: args.verbose,
    };
    let before = match (&csv, args.append) {
        (Some(path), true) if path.exists() => snowsim::bench::record::read_rows(path)
            .with_context(|| {
                format!("--append: {} is not a sweep CSV to extend", path.display())
            })?,
        _ => Vec::new(),
    };
    let kept = before.len();
    let rows = sweep::run(&plan, &exe, csv.as_deref(), before, &progress);
    progress.bar.finish_and_clear();
    let rows = rows?;
    table(&rows)?;
    if let Some(path) = &csv {
        match kept {
            0 => outln!("{} rows written to {}", rows.len(), path.display())?,
            kept => outln!(
                "{} rows added to the {kept} already in {}",
                rows.len(),
                path.display()
            )?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints one line per row: the settings that identify it, FPS mean ± std, or why it failed.
fn table(rows: &[Row]) -> anyhow::Result<()> {
    outln!(
        "{:<24} {:>10} {:>9} {:>8} {:>9} {:>9} {:>7} {:>18} {:>9}",
        "device",
        "particles",
        "tets",
        "sort",
        "interop",
        "render",
        "status",
        "FPS (mean ± std)",
        "frame ms"
    )?;
    for r in rows {
        let device: String = r.device.chars().take(24).collect();
        let tets = r
            .tets
            .map_or_else(|| "scene".to_string(), |t| t.to_string());
        let render = if r.render {
            r.particle_render.clone()
        } else {
            "off".to_string()
        };
        let result = match (r.fps_mean, r.fps_std, r.ms_frame) {
            (Some(m), Some(s), Some(f)) => format!("{:>18} {f:>9.3}", format!("{m:.1} ± {s:.1}")),
            _ => r.error.chars().take(80).collect(),
        };
        outln!(
            "{device:<24} {:>10} {tets:>9} {:>8} {:>9} {render:>9} {:>7} {result}",
            r.particles,
            r.sort,
            r.interop,
            r.status
        )?;
    }
    Ok(())
}
