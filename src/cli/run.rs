//! `snowsim run`: the simulation on screen, in a window or headless.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use snowsim::cl::{DeviceEntry, list_devices};
use snowsim::interop::{
    AnalyticWind, FieldSource, Flakes, FlakesConfig, InteropMode, ParticleSource, Session,
    SessionConfig, check_request,
};
use snowsim::render::window::{KEYS_HELP, WindowOptions, check_display, run_window};
use snowsim::render::{
    Capture, GlInfo, Headless, RunOptions, RunSummary, Views, check_size, run_headless, testscene,
};

use super::DeviceArg;

/// Options of `snowsim run`.
#[derive(Debug, clap::Args)]
#[command(after_help = KEYS_HELP)]
pub struct Args {
    #[command(flatten)]
    device: DeviceArg,
    /// Render offscreen through EGL (no window, no display needed).
    #[arg(long)]
    headless: bool,
    /// Stop after this many frames [default: 100 headless, until quit in a window].
    #[arg(long, value_name = "N")]
    frames: Option<u64>,
    /// Write the last frame to this PNG file.
    #[arg(long, value_name = "PNG")]
    screenshot: Option<PathBuf>,
    /// Write every frame into this directory as frame_00000.png, frame_00001.png, …
    #[arg(long, value_name = "DIR")]
    record: Option<PathBuf>,
    /// Frame size in pixels.
    #[arg(long, value_name = "WxH", default_value = "1280x720", value_parser = parse_size)]
    size: (u32, u32),
    /// Number of snow particles.
    #[arg(long, value_name = "N", default_value_t = 1 << 16)]
    particles: usize,
    /// How particles reach OpenGL: `share` (cl_khr_gl_sharing, no copy), `copy` (read back
    /// and upload each frame) or `auto` (share when the device offers it and renders the GL
    /// context, else copy). The mode in use is always printed.
    #[arg(long, value_enum, default_value_t = InteropArg::Auto)]
    interop: InteropArg,
    /// Do not wait for vertical blank when swapping (window only).
    #[arg(long)]
    no_vsync: bool,
    /// Start with the wind view on (lines coloured by speed).
    #[arg(long)]
    wind: bool,
    /// Start with the pressure view on (squares, yellow low to red high).
    #[arg(long)]
    pressure: bool,
    /// Start paused.
    #[arg(long)]
    paused: bool,
    /// Seed of the particles' initial positions.
    #[arg(long, default_value_t = 1)]
    seed: u32,
    /// Grid cells per side of the test terrain.
    #[arg(long, value_name = "N", default_value_t = 128)]
    terrain_cells: usize,
    /// Print the final summary as JSON on stdout (progress goes to stderr).
    #[arg(long)]
    json: bool,
}

/// `--interop` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum InteropArg {
    Auto,
    Share,
    Copy,
}

impl From<InteropArg> for InteropMode {
    fn from(arg: InteropArg) -> Self {
        match arg {
            InteropArg::Auto => Self::Auto,
            InteropArg::Share => Self::Share,
            InteropArg::Copy => Self::Copy,
        }
    }
}

/// Frames a headless run draws when `--frames` is not given.
const HEADLESS_FRAMES: u64 = 100;
/// Largest `--terrain-cells`.
const MAX_TERRAIN_CELLS: usize = 2048;
/// Wind debug view sample grid.
const WIND_SAMPLES: [u32; 3] = [16, 16, 6];

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("`{s}` is not WIDTHxHEIGHT, e.g. 1280x720"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{s}` is not WIDTHxHEIGHT, e.g. 1280x720"))
    };
    let (w, h) = (parse(w)?, parse(h)?);
    check_size(w, h).map_err(|e| e.to_string())?;
    Ok((w, h))
}

/// The machine-readable record of a run.
#[derive(serde::Serialize)]
struct Report<'a> {
    device: &'a str,
    platform: &'a str,
    gl: &'a GlInfo,
    interop: String,
    interop_reason: String,
    particles: usize,
    width: u32,
    height: u32,
    headless: bool,
    #[serde(flatten)]
    summary: &'a RunSummary,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.frames == Some(0) {
        anyhow::bail!("--frames must be at least 1");
    }
    if args.particles > u32::MAX as usize {
        anyhow::bail!("--particles must be at most {}", u32::MAX);
    }
    if !(1..=MAX_TERRAIN_CELLS).contains(&args.terrain_cells) {
        anyhow::bail!("--terrain-cells must be between 1 and {MAX_TERRAIN_CELLS}");
    }
    if !args.headless {
        check_display()?;
    }
    let json = args.json;
    let say = move |line: &str| {
        if json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let devices = list_devices()?;
    let entry = args.device.device.select(&devices)?;
    say(&format!("device: {}", entry.info.label()));
    let mode = InteropMode::from(args.interop);
    check_request(mode, &entry.info)?;

    let terrain = testscene::terrain(args.terrain_cells).context("building the test terrain")?;
    let scene = testscene::scene_box();
    let config = SessionConfig {
        interop: mode,
        terrain,
        scene,
        views: Views {
            wind: args.wind,
            pressure: args.pressure,
            ..Views::default()
        },
        paused: args.paused,
        dt: 1.0 / 60.0,
        camera: None,
    };
    let flakes = FlakesConfig {
        seed: args.seed,
        ..FlakesConfig::new(args.particles, scene)
    };
    let make_session = |setup: &snowsim::render::GlSetup| -> anyhow::Result<Session> {
        say(&format!("gl: {}", setup.info));
        let particles: Box<dyn ParticleSource> = Box::new(Flakes::new(flakes)?);
        let wind: Box<dyn FieldSource> = Box::new(AnalyticWind::new(WIND_SAMPLES, scene)?);
        let session = Session::new(setup, entry, config.clone(), particles, Some(wind))?;
        say(&format!("interop: {}", session.interop()));
        say(&format!(
            "scene: {} flakes, test terrain {}x{} cells, wind view {}x{}x{} samples",
            args.particles,
            args.terrain_cells,
            args.terrain_cells,
            WIND_SAMPLES[0],
            WIND_SAMPLES[1],
            WIND_SAMPLES[2]
        ));
        Ok(session)
    };
    let capture = Capture {
        screenshot: args.screenshot.clone(),
        record: args.record.clone(),
    };
    let mut log = |line: &str| say(line);
    let (w, h) = args.size;
    let (summary, gl_info, interop) = if args.headless {
        let headless = Headless::new(w, h)?;
        let mut session = make_session(headless.setup())?;
        let summary = run_headless(
            &headless.setup().gl,
            headless.size(),
            &mut session,
            RunOptions {
                frames: Some(args.frames.unwrap_or(HEADLESS_FRAMES)),
                capture,
                log: &mut log,
            },
        )?;
        let interop = session.interop().clone();
        (summary, headless.setup().info.clone(), interop)
    } else {
        let mut info = None;
        let mut interop = None;
        let summary = run_window(
            WindowOptions {
                size: (w, h),
                vsync: !args.no_vsync,
                title: "snowsim".into(),
            },
            RunOptions {
                frames: args.frames,
                capture,
                log: &mut log,
            },
            |setup| {
                info = Some(setup.info.clone());
                let session = make_session(setup).map_err(|e| format!("{e:#}"))?;
                interop = Some(session.interop().clone());
                Ok(session)
            },
        )?;
        let interop = interop.context("the window closed before the session started")?;
        (summary, info.unwrap_or_default(), interop)
    };
    report(&args, entry, &gl_info, &interop, &summary)?;
    Ok(ExitCode::SUCCESS)
}

fn report(
    args: &Args,
    entry: &DeviceEntry,
    gl: &GlInfo,
    interop: &snowsim::interop::InteropChoice,
    summary: &RunSummary,
) -> anyhow::Result<()> {
    if args.json {
        let report = Report {
            device: &entry.info.name,
            platform: &entry.info.platform,
            gl,
            interop: interop.transfer.to_string(),
            interop_reason: interop.reason.clone(),
            particles: args.particles,
            width: args.size.0,
            height: args.size.1,
            headless: args.headless,
            summary,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "summary: {} particles, interop {}, {}x{}, {} on {}",
            args.particles,
            interop.transfer,
            args.size.0,
            args.size.1,
            entry.info.name,
            gl.renderer
        );
        println!("{summary}");
    }
    Ok(())
}
