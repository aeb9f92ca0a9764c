//! `snowsim bench` without a sub-command: a sweep of `snowsim run` over devices and settings,
//! one CSV row per configuration (the work is in `snowsim::bench::sweep`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
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
(devices or snow devices × wind device × wind every × particles × tets × interop × \
particle-render × sort × simulate × render), each run \
--repeats times as `snowsim run --headless --json` in a process of its own, killed after \
--timeout seconds. Each configuration gets one CSV row (see src/bench/record.rs): the date, \
snowsim's version and git commit, the device, platform, driver, OpenCL version, compute units \
and clock, every setting, the interop and particle-render modes the runs used, FPS mean and \
standard deviation over the repeats (sample, n − 1) and mean ms per stage. A configuration \
that fails (an error, a timeout, a driver's abort) gets a row with status error, timeout or \
killed and the child's error line, and the sweep goes on. The CSV is rewritten after every \
configuration, so an interrupted sweep keeps what finished. Options not given are not passed \
to `snowsim run`: the scene's or run's defaults apply.

Several devices: --wind-device same,1 runs each configuration with the wind on the snow's \
device and with the wind solver on device 1 (`snowsim run --wind-device 1`); --snow-devices \
0,0+1 runs it on device 0 alone and with the parcels split across devices 0 and 1 \
(`snowsim run --snow-devices 0,1`), in place of --devices; \
--snow-shares 1,1+3 gives each split's weights (one item per --snow-devices item; without \
it each run measures its shares, as `snowsim run --snow-shares auto` does); \
--wind-every 1,4 a wind step every K frames. A split row lists its devices in the device \
columns separated by `;` (the snow's own first) and the parcels each held in snow_shares; \
wind_device names the wind's own device (`INDEX NAME`, empty: the snow's), wind_every the K \
asked for (empty: the scene's).

--compare BASELINE.csv (a sweep CSV, read before the sweep starts) prints, after the sweep, \
each configuration's FPS against the baseline's row of the same configuration (the devices \
by index and name, scene, particles, tets, size, render, interop, particle render, sort, \
simulate, wind device, snow devices, wind every): `base → new FPS (ratio×, ±%)`, or that it \
has no baseline. `snowsim plot` draws the CSVs: FPS and stages, devices.png (the headline FPS \
of each device and setup), speedup.png (each run on several devices over the same \
configuration on its snow's device alone) and summary.md (a markdown table of the headline \
numbers).

Example (4 configurations × 2 runs on PoCL, small and quick):
  snowsim bench --devices pocl --scene scenes/flat.toml --particles 2^10,2^12 \\
      --sort off,full --size 160x120 --frames 3 --warmup 1 --repeats 2 --csv sweep.csv

Two GPUs against one, compared with yesterday's sweep:
  snowsim bench --snow-devices 0,0+1 --wind-device same,1 --render off \\
      --particles 2^20..2^24 --csv two.csv --compare yesterday.csv";

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
    /// Snow devices, in place of --devices: a comma list of configurations, each a `+`-joined
    /// list of device selectors (`0,0+1`: device 0 alone, then the parcels split across
    /// devices 0 and 1, passed as `snowsim run --snow-devices 0,1`).
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    snow_devices: Option<String>,
    /// The weights of each --snow-devices item's split: a comma list with one item per
    /// --snow-devices item, each `+`-joined positive weights, one per device (`1,1+3`)
    /// [default: each run measures its shares, as `snowsim run --snow-shares auto`].
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    snow_shares: Option<String>,
    /// The wind solver's device, one configuration per item: a device selector (passed as
    /// `snowsim run --wind-device`), or `same` for the snow's device (`same,1`)
    /// [default: same].
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    wind_device: Option<String>,
    /// A wind step every K frames, one configuration per item (`1,4`) [default: the scene's].
    #[arg(long, value_delimiter = ',', value_name = "LIST",
          value_parser = clap::value_parser!(u32).range(1..))]
    wind_every: Vec<u32>,
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
    /// After the sweep, print each configuration's FPS against this sweep CSV's row of the
    /// same configuration (read before the sweep starts).
    #[arg(long, value_name = "BASELINE.csv")]
    compare: Option<PathBuf>,
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
    // Checked here, not by clap: its `requires` and `conflicts_with` are not enforced for
    // options flattened beside the sub-commands.
    anyhow::ensure!(
        args.snow_devices.is_none() || args.devices.is_none(),
        "--snow-devices replaces --devices: give one of them (--snow-devices 0,1 runs device 0 \
         alone and device 1 alone, as --devices 0,1 does)"
    );
    anyhow::ensure!(
        args.snow_shares.is_none() || args.snow_devices.is_some(),
        "--snow-shares needs --snow-devices: the weights are those of each split"
    );
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
    if let Some(path) = &args.compare {
        plan.input("--compare", path);
    }
    if let Some(path) = &args.csv {
        plan.file("--csv", path, SWEEP_CSV);
    }
    plan.check()?;
    let baseline = match &args.compare {
        Some(path) => Some(read_baseline(path)?),
        None => None,
    };
    let csv = match &args.csv {
        Some(path) => Some(snowsim::output::check_writable(path)?),
        None => None,
    };
    let devices = match &args.snow_devices {
        Some(list) => sweep::select_snow_devices(list, args.snow_shares.as_deref())?,
        None => sweep::select_devices(args.devices.as_deref())?
            .into_iter()
            .map(sweep::SnowSetup::one)
            .collect(),
    };
    let wind_devices = match &args.wind_device {
        Some(list) => sweep::select_wind_devices(list)?,
        None => Vec::new(),
    };
    let plan = Plan {
        devices,
        wind_devices,
        wind_every: args.wind_every.iter().map(|&k| Some(k)).collect(),
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
    if let Some(baseline) = &baseline {
        compare(
            &rows,
            baseline,
            args.compare.as_deref().unwrap_or(Path::new("")),
        )?;
    }
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

/// The rows of `--compare`'s sweep CSV: a file whose header lacks a sweep's columns (a
/// header alone parses as a CSV without rows) is refused, naming it.
fn read_baseline(path: &Path) -> anyhow::Result<Vec<Row>> {
    let not_a_sweep = || {
        format!(
            "--compare: {} is not a sweep CSV to compare with",
            path.display()
        )
    };
    let sweep = snowsim::bench::record::read_sweep(path).with_context(not_a_sweep)?;
    let missing: Vec<&str> = ["schema", "device", "particles", "status", "fps_mean"]
        .into_iter()
        .filter(|c| !sweep.has_column(c))
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "{}: its header has no column {} (a CSV written by `snowsim bench --csv`)",
            not_a_sweep(),
            missing.join(", ")
        );
    }
    Ok(sweep.rows)
}

/// Prints one line per row: the settings that identify it, FPS mean ± std, or why it failed.
fn table(rows: &[Row]) -> anyhow::Result<()> {
    let setups: Vec<String> = rows
        .iter()
        .map(|r| match r.setup().as_str() {
            "one device" => "-".to_string(),
            setup => setup.to_string(),
        })
        .collect();
    let width = setups
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    outln!(
        "{:<24} {:<width$} {:>10} {:>9} {:>8} {:>9} {:>9} {:>7} {:>18} {:>9}",
        "device",
        "setup",
        "particles",
        "tets",
        "sort",
        "interop",
        "render",
        "status",
        "FPS (mean ± std)",
        "frame ms"
    )?;
    for (r, setup) in rows.iter().zip(&setups) {
        let device: String = r.device_names().chars().take(24).collect();
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
            "{device:<24} {setup:<width$} {:>10} {tets:>9} {:>8} {:>9} {render:>9} {:>7} {result}",
            r.particles,
            r.sort,
            r.interop,
            r.status
        )?;
    }
    Ok(())
}

/// Prints each row's FPS against `baseline` (read from `path`), one line per configuration,
/// then how many had no baseline.
fn compare(rows: &[Row], baseline: &[Row], path: &Path) -> anyhow::Result<()> {
    use snowsim::bench::compare::{Comparison, compare};
    outln!("against {}:", path.display())?;
    let comparisons = compare(rows, baseline);
    for (r, c) in rows.iter().zip(&comparisons) {
        outln!("  {}: {}", describe(r), c.text())?;
    }
    let missing = comparisons
        .iter()
        .filter(|c| **c == Comparison::NoBaseline)
        .count();
    if missing > 0 {
        outln!(
            "{missing} of {} configurations have no baseline in {}",
            rows.len(),
            path.display()
        )?;
    }
    Ok(())
}

/// A row's configuration in a few words: devices, setup, particles and the settings asked for.
fn describe(r: &Row) -> String {
    let indices: Vec<String> = r.device_index.iter().map(usize::to_string).collect();
    let mut parts = vec![format!("[{}] {}", indices.join("+"), r.device_names())];
    let setup = r.setup();
    if setup != "one device" {
        parts.push(setup);
    }
    parts.push(format!("{} particles", r.particles));
    if let Some(t) = r.tets {
        parts.push(format!("{t} tets"));
    }
    parts.push(format!("sort {}", r.sort));
    for (name, value) in [
        ("interop", &r.interop_requested),
        ("render", &r.particle_render_requested),
    ] {
        if value != "auto" && !value.is_empty() {
            parts.push(format!("{name} {value}"));
        }
    }
    parts.push(format!("simulate {}", r.simulate));
    parts.push(if r.render {
        format!("{}x{}", r.width, r.height)
    } else {
        "no drawing".to_string()
    });
    parts.join(", ")
}
