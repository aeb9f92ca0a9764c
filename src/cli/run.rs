//! `snowsim run`: a scene on screen, in a window or headless.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use snowsim::app::{SceneView, Session, Stepper};
use snowsim::budget::{Budget, Estimate, bytes_of};
use snowsim::cl::{DeviceEntry, list_devices};
use snowsim::interop::{InteropMode, check_request};
use snowsim::output::{FileKind, OutputPlan, rule};
use snowsim::particle::{PARTICLE_BYTES, Particle};
use snowsim::render::window::{KEYS_HELP, WindowOptions, check_display, run_window};
use snowsim::render::{
    Capture, GlInfo, Headless, RunOptions, RunSummary, check_size, run_headless, run_undrawn,
};
use snowsim::scene::limits::{MAX_PARTICLES, check_domain_mesh, check_run};
use snowsim::scene::{Domain, Scene, SceneError, SceneGround, SortMode, WindProfile};
use snowsim::sim::{Overrides, SimReport, SimSetup, WindSetup};
use snowsim::splat::{ParticleRender, RenderChoice};

use super::DeviceArg;
use super::console::{errln, outln};

/// Options of `snowsim run`.
#[derive(Debug, clap::Args)]
#[command(after_help = KEYS_HELP)]
pub struct Args {
    #[command(flatten)]
    device: DeviceArg,
    /// The scene file (TOML, see scenes/README.md), relative to the current directory.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_SCENE)]
    scene: PathBuf,
    /// Render offscreen through EGL (no window, no display needed).
    #[arg(long)]
    headless: bool,
    /// Stop after this many frames [default: the scene's time.frames, else 100 headless and
    /// until quit in a window].
    #[arg(long, value_name = "N", value_parser = super::whole::<u64>, allow_hyphen_values = true)]
    frames: Option<u64>,
    /// Write the last frame to this PNG file.
    #[arg(long, value_name = "PNG")]
    screenshot: Option<PathBuf>,
    /// Write every frame into this directory as frame_00000.png, frame_00001.png, …; or,
    /// for a path ending in .gif, an animated GIF of the frames at the scene's frame rate
    /// (1 / time.step).
    #[arg(long, value_name = "DIR|FILE.gif")]
    record: Option<PathBuf>,
    /// Encode the frames into this video (H.264 MP4) with ffmpeg, at the scene's frame rate
    /// (1 / time.step); ffmpeg must be on PATH (checked before the run starts).
    #[arg(long, value_name = "FILE.mp4")]
    video: Option<PathBuf>,
    /// Frame size in pixels [default: the scene's view.window].
    #[arg(long, value_name = "WxH", value_parser = parse_size, allow_hyphen_values = true)]
    size: Option<(u32, u32)>,
    /// Number of snow particles [default: the scene's snow.particles].
    #[arg(long, value_name = "N", value_parser = super::whole::<usize>, allow_hyphen_values = true)]
    particles: Option<usize>,
    /// How particles reach OpenGL: `share` (cl_khr_gl_sharing, no copy), `external` (Vulkan
    /// allocates memory that OpenCL and OpenGL both import, no copy: NVIDIA GPUs, which lack
    /// GL sharing), `copy` (read back and upload each frame) or `auto` (share when the device
    /// offers it and renders the GL context, else external where all three APIs offer it on
    /// the same GPU, else copy). The mode in use and why are always printed.
    #[arg(long, value_enum, default_value_t = InteropArg::Auto)]
    interop: InteropArg,
    /// How particles are drawn: `sprites` (GL point sprites), `splat` (an OpenCL kernel
    /// projects every flake into an image, the nearest per pixel drawn with the summed coverage
    /// of all, as blended sprites, that GL composites over the terrain; for GPUs whose GL point
    /// rate is the limit; needs cl_khr_int64_extended_atomics)
    /// or `auto` (splat where the device can, measured against sprites over the first frames:
    /// 1 warm-up + 5 measured frames of each, keeping the faster). The mode in use and why are
    /// printed and recorded in --json (`particle_render`).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ParticleRenderArg::Auto)]
    particle_render: ParticleRenderArg,
    /// Do not wait for vertical blank when swapping (window only; also off when the scene
    /// says view.vsync = false).
    #[arg(long)]
    no_vsync: bool,
    /// Start with the wind view on (lines coloured by speed), whatever the scene says.
    #[arg(long)]
    wind: bool,
    /// Start with the pressure view on (squares, yellow low to red high), whatever the scene
    /// says.
    #[arg(long)]
    pressure: bool,
    /// Start with the friction velocity view on: the ground coloured by the wind's u* at the
    /// surface, blue to green below the drifting snow's threshold, yellow at it, red at three
    /// times it (key U).
    #[arg(long)]
    friction: bool,
    /// Frames at the start left out of the summary's means and FPS [default: 1, the first
    /// frame (shader and kernel compilation), or 0 when only one frame runs]. Must leave at
    /// least one frame to measure.
    #[arg(long, value_name = "N", value_parser = super::whole::<u64>, allow_hyphen_values = true)]
    warmup: Option<u64>,
    /// Start paused.
    #[arg(long)]
    paused: bool,
    /// Fly the camera through the keyframes of this TOML file (`[[keyframe]]` tables of time,
    /// position and target; frame i at i × time.step seconds; Catmull–Rom between them), for
    /// headless recordings; in a window it overrides the mouse and keys.
    #[arg(long, value_name = "FILE")]
    camera_path: Option<PathBuf>,
    /// Draw the on-screen display (simulated time and acceleration, snowfall, mean and
    /// deepest snow, particles, FPS, device) into headless frames; a window shows it unless
    /// F1 hides it.
    #[arg(long)]
    osd: bool,
    /// Seed of the particles' initial positions and sizes [default: the scene's snow.seed].
    #[arg(long, value_name = "N", value_parser = super::whole::<u32>, allow_hyphen_values = true)]
    seed: Option<u32>,
    /// Print the final summary as JSON on stdout (progress goes to stderr).
    #[arg(long)]
    json: bool,
    /// How the snow particles are sorted [default: the scene's snow.sort].
    #[arg(long, value_enum, value_name = "MODE")]
    sort: Option<SortArg>,
    /// Sort the parcels on one frame in this many, in any --sort mode; the frames between keep
    /// the order they have (the result is the same) [default: the scene's snow.sort_every, 4].
    #[arg(long, value_name = "K", value_parser = sort_every, allow_hyphen_values = true)]
    sort_every: Option<u32>,
    /// What runs, overriding the scene's [simulate]: `wind,snow` (the snow blown by the wind
    /// solver, stepping with the frames), `wind` (the wind alone: no particles; the wind and
    /// pressure views show it) or `snow` (the snow in a frozen wind: the solver's start-up
    /// solve and the scene's simulate.frozen_wind_steps steps, 0 by default, then the field
    /// stays fixed).
    #[arg(long, value_delimiter = ',', value_name = "LIST", num_args = 1..)]
    simulate: Vec<SimulateArg>,
    /// The snow's (and the drawing's) OpenCL device, with --wind-device for the wind's: the
    /// same as --device, which it replaces.
    #[arg(long, value_name = "DEVICE", allow_hyphen_values = true)]
    snow_device: Option<snowsim::cl::DeviceSelector>,
    /// Run the wind solver on this OpenCL device (index or part of a name, as --device) while
    /// the snow and the drawing run on --device: the wind field crosses to the snow's device
    /// once per wind step. Devices of different platforms work.
    #[arg(long, value_name = "DEVICE", allow_hyphen_values = true)]
    wind_device: Option<snowsim::cl::DeviceSelector>,
    /// Split the snow's parcels across these OpenCL devices (a comma list, as --device
    /// takes; the first is the snow's own and replaces --device): each steps and sorts its
    /// share, reading the same wind field, and their landings are added, exactly, to the
    /// first's cover each frame (and the drift and the snow in suspension run on that sum),
    /// so the run equals one device's bit for bit; drawn, the others' parcels cross to the
    /// first each frame through the host. --json's snow_devices lists the shares.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "snow_device"
    )]
    snow_devices: Vec<snowsim::cl::DeviceSelector>,
    /// Each --snow-devices device's weight in the split: a comma list of positive numbers,
    /// one per device, or `auto` (the default): a calibration run with equal shares times
    /// each device's snow and the wind where it runs, window after window (8 frames, or two
    /// wind steps) until the wind's cost settles, and sets the shares so that all finish
    /// their frame together (`snow share:` lines say what it measured).
    #[arg(
        long,
        value_name = "LIST|auto",
        allow_hyphen_values = true,
        requires = "snow_devices"
    )]
    snow_shares: Option<String>,
    /// Write the state every K frames into DIR as a ParaView time series (`state_00000.vtu`,
    /// … and `states.pvd`, which plays them with their simulated times); the disk is checked
    /// for the whole series once the first state is written.
    #[arg(long, num_args = 2, value_names = ["K", "DIR"])]
    vtu_every: Option<Vec<String>>,
    /// `off` runs the simulation alone, drawing nothing (no OpenGL at all; implies
    /// --headless): the simulation's own rate, and long self-checking runs.
    #[arg(long, value_enum, default_value_t = RenderArg::On, value_name = "on|off")]
    render: RenderArg,
    /// Check the simulation's invariants every --check-every frames: the wind finite at every
    /// vertex, every particle id present exactly once, the snow on the ground exactly the
    /// landings × the parcel's volume. The first failure stops the run (exit status 1) naming
    /// the stage, the frame and the entity.
    #[arg(long)]
    check: bool,
    /// Frames between checks with --check.
    #[arg(long, value_name = "K", default_value_t = 60, value_parser = super::whole::<u64>, allow_hyphen_values = true)]
    check_every: u64,
    /// Time the kernels (OpenCL profiling events, the per-stage device times) on one frame
    /// in K, the first measured frame first; the others run without events and the host
    /// queues each while the device finishes the last. On NVIDIA an event costs ~8 µs of
    /// host time per launch and a timed frame waits for its own end: timing every frame (1)
    /// cost the valley a quarter of its steps/s (benches/RESULTS.md).
    #[arg(long, value_name = "K", default_value_t = DEFAULT_PROFILE_EVERY, value_parser = clap::value_parser!(u64).range(1..))]
    profile_every: u64,
    /// Mesh the terrain scene's air with about N tetrahedra (the ground grid and layers
    /// scaled), instead of the scene's own resolution.
    #[arg(long, value_name = "N", value_parser = super::whole::<usize>, allow_hyphen_values = true)]
    tets: Option<usize>,
    /// A wind step every K frames over their time (the wind's step becomes K frame steps),
    /// overriding the scene's simulate.wind_every and wind.step.
    #[arg(long, value_name = "K", value_parser = super::whole::<u32>, allow_hyphen_values = true)]
    wind_every: Option<u32>,
    /// Replace existing files that this command did not write (an output that is not a PNG
    /// or VTK file already): without it they are left alone and the run refuses to start. An
    /// output never replaces an input or another output, with or without it.
    #[arg(long)]
    force: bool,
    /// Write the final state as VTK XML (ParaView): the domain's tetrahedra and boundary
    /// triangles with cell data `ref`, point data `velocity` (m/s), `pressure` (Pa, zero
    /// with the fixed profile) and `snow_depth` (m, on the ground vertices, zero elsewhere).
    /// Written when the run ends (the frame count is reached or the window is closed);
    /// checked before the run, written atomically. The cover at its own resolution goes
    /// beside it (`X.vtu` → `X.cover.vtu`). A name ending `.pvtu` writes the state in pieces
    /// that ParaView reads in parallel, as many as ranks (`mpirun -n K`; one without):
    /// `X.pvtu` and `X/piece_00000.vtu`, …, the mesh split by METIS (a terrain by whole
    /// columns), each piece with point data `global_id` (the vertex's index in the whole
    /// mesh); pieces of an earlier run beyond this run's count are removed.
    #[arg(long, value_name = "FILE")]
    vtu: Option<PathBuf>,
}

/// `--sort` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SortArg {
    /// No sort.
    Off,
    /// A full (radix) sort by tetrahedron on every frame that sorts (--sort-every).
    Full,
    /// The incremental partial sort on every frame that sorts, with a full sort about every
    /// snow.full_sort_every frames.
    Partial,
}

impl From<SortArg> for SortMode {
    fn from(arg: SortArg) -> Self {
        match arg {
            SortArg::Off => SortMode::Off,
            SortArg::Full => SortMode::Full,
            SortArg::Partial => SortMode::Partial,
        }
    }
}

/// `--render` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum RenderArg {
    On,
    Off,
}

/// `--simulate` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SimulateArg {
    Wind,
    Snow,
}

/// `--interop` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum InteropArg {
    Auto,
    Share,
    External,
    Copy,
}

impl From<InteropArg> for InteropMode {
    fn from(arg: InteropArg) -> Self {
        match arg {
            InteropArg::Auto => Self::Auto,
            InteropArg::Share => Self::Share,
            InteropArg::External => Self::External,
            InteropArg::Copy => Self::Copy,
        }
    }
}

/// `--particle-render` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ParticleRenderArg {
    Auto,
    Sprites,
    Splat,
}

impl From<ParticleRenderArg> for ParticleRender {
    fn from(arg: ParticleRenderArg) -> Self {
        match arg {
            ParticleRenderArg::Auto => Self::Auto,
            ParticleRenderArg::Sprites => Self::Sprites,
            ParticleRenderArg::Splat => Self::Splat,
        }
    }
}

/// The scene run when `--scene` is not given, relative to the current directory.
pub(super) const DEFAULT_SCENE: &str = "scenes/valley.toml";
/// Frames a headless run draws when neither `--frames` nor the scene's `time.frames` says.
const HEADLESS_FRAMES: u64 = 100;
/// `--profile-every`'s default: one frame in 17 timed. A prime, so that the timed frames
/// fall on every phase of what runs every few frames (a wind step every 2, 3, 4 … 16 frames,
/// the partial sort's five-frame schedule) and the per-stage means over a long run are not
/// biased; a stride of 20 would never time a wind step that falls every fourth frame.
const DEFAULT_PROFILE_EVERY: u64 = 17;

pub(super) fn parse_size(s: &str) -> Result<(u32, u32), String> {
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
    scene: String,
    scene_name: &'a str,
    device: &'a str,
    platform: &'a str,
    gl: &'a GlInfo,
    interop: String,
    interop_reason: String,
    /// How particles were drawn (`sprites` or `splat`) at the end of the run.
    particle_render: String,
    /// Why: as asked, the device's lack, or `auto`'s measured frame times.
    particle_render_reason: String,
    particles: usize,
    width: u32,
    height: u32,
    headless: bool,
    /// What the snow and the wind did.
    snow: SimReport,
    /// The parcels' split across devices (`--snow-devices`), the snow's own device first.
    #[serde(skip_serializing_if = "Option::is_none")]
    snow_devices: Option<Vec<snowsim::sim::shares::ShareReport>>,
    /// The falling snow as flakes, at the camera (uniform for now: the same everywhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    flakes: Option<Flakes>,
    /// Copy mode, headless: the read-back rate and the bus's.
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    readback: Option<Readback>,
    #[serde(flatten)]
    summary: &'a RunSummary,
}

/// Reads the scene, with an error that names the file and says how to pick another (that
/// there is no scene file there only when there is none).
pub(super) fn load_scene(path: &Path) -> anyhow::Result<Scene> {
    Scene::load(path).map_err(|e| {
        let hint = match &e {
            SceneError::Read { error, .. } if error.kind() == std::io::ErrorKind::NotFound => {
                let place = if path.is_relative() {
                    std::env::current_dir()
                        .map(|d| format!(" (relative to the current directory, {})", d.display()))
                        .unwrap_or_default()
                } else {
                    String::new()
                };
                format!(
                    "no scene file there{place}; pass --scene FILE to choose one (without \
                     --scene, snowsim runs {DEFAULT_SCENE}, so run it from the repository's \
                     root)"
                )
            }
            SceneError::Read { .. } => "pass --scene FILE to run another scene file".into(),
            _ => format!(
                "the scene file {} is not valid; fix it (`snowsim scene check {}` lists what \
                 is wrong) or pass --scene FILE to run another",
                path.display(),
                path.display()
            ),
        };
        anyhow::anyhow!("{e}\n  hint: {hint}")
    })
}

/// A few lines about the scene's ground, air, snow and wind, for the log.
fn describe(scene: &Scene, ground: &SceneGround, setup: &SimSetup) -> String {
    let surface = match &scene.domain {
        Domain::Terrain {
            heightmap: Some(path),
            spec,
            ..
        } => format!(
            "terrain from {} ({} × {} cells, relief {} m)",
            path.display(),
            spec.cells[0],
            spec.cells[1],
            spec.relief
        ),
        Domain::Terrain {
            heightmap: None,
            spec,
            ..
        } => format!("flat ground ({} × {} cells)", spec.cells[0], spec.cells[1]),
        Domain::Mesh { path, boundary } => format!(
            "ground triangles (reference {}) of {}",
            boundary.ground,
            path.display()
        ),
    };
    let (lo, hi) = (ground.air.lo, ground.air.hi);
    let w = &scene.wind;
    let profile = match w.profile {
        WindProfile::Log { .. } => "log",
        WindProfile::Power { .. } => "power",
        WindProfile::Uniform => "uniform",
    };
    let [d0, d1] = scene.snow.flake_diameter;
    let Some(sim) = &setup.scene else {
        return format!("ground: {surface}");
    };
    let tets = sim
        .domain
        .mesh
        .count(snowsim::meshio::ElementKind::Tetrahedra);
    let snow = match &sim.snow {
        Some(config) => format!(
            "snow: {} parcels of {}–{} mm flakes falling at {} m/s (mean size) in the wind, \
             snowfall {} mm/h × {}, sort {} by {}",
            config.particles,
            d0 * 1e3,
            d1 * 1e3,
            scene.snow.fall_speed,
            scene.snow.rate * 1e3,
            scene.time.acceleration,
            config.sort.mode.name(),
            config.sort.key.name()
        ),
        None => "snow: none (the wind alone)".to_string(),
    };
    let wind = match &sim.wind {
        WindSetup::Profile { .. } => "the inflow profile, fixed".to_string(),
        WindSetup::Solved {
            frozen_after: Some(n),
            ..
        } => format!("solved, frozen after {n} steps"),
        WindSetup::Solved { settings, .. } => match settings.step {
            Some(step) => format!("solved, stepping with the frames, a step every {step} s"),
            None => "solved, stepping with the frames".to_string(),
        },
    };
    format!(
        "ground: {surface}, {} triangles; air [{:.0}, {:.0}, {:.0}] .. [{:.0}, {:.0}, {:.0}] m, \
         {tets} tetrahedra\n{snow}\nwind {} m/s at {} m towards ({:.2}, {:.2}), {profile} \
         profile: {wind}",
        ground
            .surface
            .count(snowsim::meshio::ElementKind::Triangles),
        lo.x,
        lo.y,
        lo.z,
        hi.x,
        hi.y,
        hi.z,
        w.speed,
        w.reference_height,
        w.direction[0],
        w.direction[1],
    )
}

/// Frames `--record DIR` holds (0 without it).
fn recorded_frames(dir: Option<&Path>) -> usize {
    let Some(Ok(entries)) = dir.map(std::fs::read_dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(snowsim::output::rule::record_frame_name)
        })
        .count()
}

/// What `run` reads and writes, for the output rule ([`snowsim::output::rule`]).
fn outputs(args: &Args, scene: &Scene) -> OutputPlan {
    let mut plan = OutputPlan::new(args.force);
    for (role, path) in scene.input_files() {
        plan.input(role, path);
    }
    if let Some(path) = &args.screenshot {
        plan.file("--screenshot", path, FileKind::Png);
    }
    if let Some(path) = &args.vtu {
        plan.file("--vtu", path, FileKind::Vtk);
        plan.file("--vtu (the cover)", rule::cover_path(path), FileKind::Vtk);
        if snowsim::meshio::pvtu::is_pvtu(path) {
            plan.dir(
                "--vtu (its pieces)",
                snowsim::meshio::pvtu::pieces_dir(path),
                rule::piece_file_name,
            );
        }
    }
    match &args.record {
        Some(gif) if super::film::is_gif(gif) => {
            plan.file("--record", gif, FileKind::Gif);
        }
        Some(dir) => {
            plan.dir("--record", dir, rule::record_frame_name);
        }
        None => {}
    }
    if let Some(path) = &args.video {
        plan.file("--video", path, FileKind::Mp4);
    }
    if let Some([_, dir]) = args.vtu_every.as_deref() {
        plan.dir("--vtu-every", dir, rule::state_series_name);
    }
    plan
}

/// Sets the shares of a split (`--snow-shares auto`, the default) from each device's
/// measured cost (`snowsim::sim::balance`: a short calibration run with equal shares on a
/// context of the snow's device `entry`), and says what was measured. Nothing without a
/// split. `drawn`: whether the run draws the parcels (their drawn copy written alike in the
/// calibration). `say` prints a line where the run's log goes.
fn balance_shares(
    setup: &mut SimSetup,
    entry: &DeviceEntry,
    drawn: bool,
    say: &dyn Fn(&str) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    use snowsim::sim::balance;
    let Some(total) = setup
        .scene
        .as_ref()
        .and_then(|s| s.split.as_ref())
        .map(|split| split.shares.iter().map(|s| s.1).sum::<usize>())
    else {
        return Ok(());
    };
    let context = snowsim::cl::Context::new(entry)?;
    let calibration = balance::measure(&context, setup, drawn).context(
        "measuring each snow device's cost for its share (--snow-shares auto, the default)",
    )?;
    let Some(calibration) = calibration else {
        return Ok(());
    };
    let costs = &calibration.costs;
    let shares = snowsim::sim::shares::split(total, &balance::balanced(total, costs))?;
    for (cost, (_, n)) in costs.iter().zip(&shares) {
        say(&format!(
            "snow share: {:.3} ms of snow for {} parcels and {:.3} ms of wind a frame \
             measured (the last {} of {} frames) → {n} parcels",
            cost.snow_ms, cost.parcels, cost.wind_ms, calibration.window, calibration.frames
        ))?;
    }
    // A device that takes almost nothing still costs the split's hand-overs every frame.
    let devices = setup
        .scene
        .as_ref()
        .and_then(|s| s.split.as_ref())
        .map(|split| split.report(&entry.info))
        .unwrap_or_default();
    if let Some((share, (_, n))) = devices
        .iter()
        .zip(&shares)
        .find(|(_, (_, n))| *n * 50 < total)
    {
        say(&format!(
            "snow share: device {} takes {n} of {total} parcels (under 2 %): the split's \
             hand-over costs more than it saves here, and the run is faster without it",
            share.device
        ))?;
    }
    if let Some(split) = setup.scene.as_mut().and_then(|s| s.split.as_mut()) {
        split.shares = shares;
    }
    Ok(())
}

/// The communicator of a run under an MPI launcher with several ranks (`None` alone), once
/// the options are checked against what runs over ranks today: nothing drawn, no split
/// across the devices of a rank, the wind on rank 0's device.
fn ranks(args: &Args) -> anyhow::Result<Option<Box<dyn snowsim::comm::Comm>>> {
    let Some((rank, size)) = snowsim::comm::launcher().filter(|&(_, size)| size != Some(1)) else {
        return Ok(None);
    };
    if !cfg!(feature = "mpi") {
        return Err(snowsim::comm::CommError::NoMpi { rank, size }.into());
    }
    // Checked before MPI starts, so that every rank says it at once.
    let over = format!(
        "started by an MPI launcher as rank {rank} of {}: over ranks",
        snowsim::comm::ranks(size)
    );
    anyhow::ensure!(
        args.render == RenderArg::Off,
        "{over} nothing is drawn yet: give --render off"
    );
    anyhow::ensure!(
        args.snow_devices.is_empty() && args.snow_device.is_none() && args.wind_device.is_none(),
        "{over} each rank steps its share of the parcels on one device, and the wind runs on \
         rank 0's: --snow-devices, --snow-device and --wind-device are not taken yet"
    );
    let comm = snowsim::comm::world()?;
    Ok((comm.size() > 1).then_some(comm))
}

/// The device of `rank` of a run over ranks: the one `selector` names, or by default (no
/// `--device`) the rank's local index among the machine's GPUs (among all devices where there
/// is no GPU), round the list.
fn rank_device<'d>(
    selector: &snowsim::cl::DeviceSelector,
    devices: &'d [DeviceEntry],
    rank: usize,
) -> anyhow::Result<&'d DeviceEntry> {
    if !matches!(selector, snowsim::cl::DeviceSelector::Default) {
        return Ok(selector.select(devices)?);
    }
    let gpus: Vec<&DeviceEntry> = devices
        .iter()
        .filter(|d| d.info.device_type == snowsim::cl::DeviceType::Gpu)
        .collect();
    let pool: Vec<&DeviceEntry> = match gpus.is_empty() {
        true => devices.iter().collect(),
        false => gpus,
    };
    let local = snowsim::comm::local_rank().unwrap_or(rank);
    pool.get(local % pool.len().max(1))
        .copied()
        .with_context(|| format!("rank {rank}: no OpenCL device"))
}

/// The command line's changes to the scene's simulation.
/// `--sort-every`: a whole number of frames from 1 to the scene's limit.
fn sort_every(text: &str) -> Result<u32, String> {
    let max = snowsim::scene::MAX_SORT_EVERY;
    match super::whole::<u32>(text)? {
        k @ 1.. if k <= max => Ok(k),
        k => Err(format!("{k} frames: must be 1..={max}")),
    }
}

fn overrides(args: &Args, devices: &[DeviceEntry]) -> anyhow::Result<Overrides> {
    let simulate = (!args.simulate.is_empty()).then(|| {
        (
            args.simulate.contains(&SimulateArg::Wind),
            args.simulate.contains(&SimulateArg::Snow),
        )
    });
    let wind_device = match &args.wind_device {
        Some(selector) => Some(selector.select(devices).context("--wind-device")?.clone()),
        None => None,
    };
    // A device named twice gets two contexts (two shares on one device: tests).
    let snow_devices = args
        .snow_devices
        .iter()
        .skip(1)
        .map(|selector| selector.select(devices).cloned())
        .collect::<Result<Vec<_>, _>>()
        .context("--snow-devices")?;
    Ok(Overrides {
        particles: args.particles,
        seed: args.seed,
        sort: args.sort.map(SortMode::from),
        sort_every: args.sort_every,
        simulate,
        wind_every: args.wind_every,
        wind_device,
        snow_devices,
        snow_shares: match args.snow_shares.as_deref() {
            None | Some("auto") => None,
            Some(list) => Some(
                list.split(',')
                    .map(|w| {
                        w.trim().parse::<f64>().map_err(|_| {
                            anyhow::anyhow!("--snow-shares: `{w}` is not a number (or say auto)")
                        })
                    })
                    .collect::<anyhow::Result<Vec<f64>>>()?,
            ),
        },
    })
}

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    // Nothing drawn, no window, no frame to write.
    args.headless |= args.render == RenderArg::Off;
    // Under an MPI launcher with several ranks, rank 0 runs the simulation and each other
    // rank steps a share of its parcels (`sim::ranks`); those say nothing.
    let comm = ranks(&args)?;
    let follower = comm.as_ref().is_some_and(|c| c.rank() > 0);
    anyhow::ensure!(
        args.render == RenderArg::On
            || (args.screenshot.is_none() && args.record.is_none() && args.video.is_none()),
        "--render off draws nothing, so there is no frame for --screenshot, --record or --video"
    );
    // ffmpeg is looked for now, not after the run; a film's frames go to a directory of its own.
    let film = super::film::Film::new(args.record.as_deref(), args.video.as_deref())?;
    if args.frames == Some(0) {
        anyhow::bail!("--frames must be at least 1");
    }
    match args.particles {
        Some(0) => anyhow::bail!("--particles must be at least 1"),
        Some(n) if n as u64 > MAX_PARTICLES => {
            anyhow::bail!(
                "--particles must be at most {MAX_PARTICLES} (2^27 − 1: the particles' GL \
                 buffer is at most 2^31 − 1 bytes)"
            )
        }
        _ => {}
    }
    if !args.headless {
        check_display()?;
    }
    let capture = Capture {
        screenshot: args.screenshot.clone(),
        record: film
            .as_ref()
            .map(|f| f.frames().to_path_buf())
            .or_else(|| args.record.clone()),
    };
    let json = args.json;
    let say = move |line: &str| -> anyhow::Result<()> {
        if follower {
            return Ok(());
        }
        if json {
            errln!("{line}")?;
        } else {
            outln!("{line}")?;
        }
        Ok(())
    };
    // A bad camera path fails now, before the scene's mesh is built.
    anyhow::ensure!(
        args.camera_path.is_none() || args.render != RenderArg::Off,
        "--camera-path moves the camera of the drawing, and --render off draws nothing"
    );
    let camera_path = args
        .camera_path
        .as_deref()
        .map(snowsim::app::CameraPath::load)
        .transpose()?;
    let mut scene = load_scene(&args.scene)?;
    // Bad output paths fail now, not after the whole run; no output overwrites the scene's
    // files or another output. (Rank 0 writes them all.)
    if !follower {
        outputs(&args, &scene).check()?;
        capture.prepare()?;
    }
    let recording = capture.record.clone();
    let vtu = match &args.vtu {
        Some(path) if !follower => Some(snowsim::output::check_writable(path)?),
        _ => None,
    };
    if let Some(tets) = args.tets {
        anyhow::ensure!(
            tets >= 1,
            "--tets 0: the air needs at least one tetrahedron (about 6 × layers a cell)"
        );
        let (resized, cells) = snowsim::bench::wind::resized(&scene, tets).with_context(|| {
            format!(
                "--tets: {} has a mesh domain, which has one size",
                args.scene.display()
            )
        })?;
        let layers = match &resized.domain {
            Domain::Terrain { spec, .. } => spec.layers,
            Domain::Mesh { .. } => 0,
        };
        scene = resized;
        say(&format!(
            "--tets {tets}: the air meshed with {cells} × {cells} cells of {layers} layers, {} \
             tetrahedra",
            6 * cells * cells * layers
        ))?;
    }
    anyhow::ensure!(
        args.check_every > 0,
        "--check-every 0: checks need at least one frame between them"
    );
    say(&format!("scene: {} ({})", args.scene.display(), scene.name))?;
    let devices = list_devices()?;
    let entry = match (&args.snow_device, args.snow_devices.first(), &comm) {
        (Some(selector), _, _) => selector.select(&devices).context("--snow-device")?,
        (None, Some(selector), _) => selector.select(&devices).context("--snow-devices")?,
        (None, None, Some(comm)) => rank_device(&args.device.device, &devices, comm.rank())?,
        (None, None, None) => args.device.device.select(&devices)?,
    };
    let particles = args.particles.map_or(scene.snow.particles, |n| n as u64);
    check_run(&scene, particles, Some(&entry.info))?;
    // The snow and the wind run on the tetrahedral domain: mesh it only if the host can hold it.
    check_domain_mesh(&scene)?;
    let overrides = overrides(&args, &devices)?;
    let preparing = || format!("preparing scene {}", args.scene.display());
    let ground = snowsim::scene::ground_of(&scene).with_context(preparing)?;
    let mut setup = SimSetup::new(&scene, &ground, &overrides).with_context(preparing)?;
    let comm = match comm {
        Some(comm) if comm.rank() > 0 => {
            // This rank steps its share of the parcels as rank 0 orders, until it ends.
            let rank = comm.rank();
            let context = snowsim::cl::Context::new(entry)?;
            let mut share = snowsim::sim::ranks::RankFollower::from_setup(&context, comm, setup)
                .with_context(|| format!("rank {rank} on {}", entry.info.label()))?;
            share
                .serve()
                .with_context(|| format!("rank {rank} on {}", entry.info.label()))?;
            return Ok(ExitCode::SUCCESS);
        }
        comm => comm,
    };
    // Measured shares unless given (nothing without a split).
    if args.snow_shares.as_deref().is_none_or(|s| s == "auto") {
        balance_shares(&mut setup, entry, args.render != RenderArg::Off, &say)?;
    }
    let snow_devices = match &comm {
        Some(comm) => Some(snowsim::sim::ranks::report(
            &snowsim::sim::rank_shares(setup.particle_count(), comm.size())?,
            &entry.info,
        )),
        None => setup
            .scene
            .as_ref()
            .and_then(|s| s.split.as_ref())
            .map(|split| split.report(&entry.info)),
    };
    if let Some(shares) = &snow_devices {
        for share in shares {
            say(&format!(
                "snow device: {}, {} parcels from id {} ({:.1} %)",
                share.device,
                share.particles,
                share.first,
                100.0 * share.fraction
            ))?;
        }
    }
    if let Some(wind) = &overrides.wind_device {
        say(&format!("wind device: {}", wind.info.label()))?;
    }
    let size = match args.size {
        Some(size) => size,
        None => {
            let [w, h] = scene.view.window;
            check_size(w, h).with_context(|| {
                format!("{}: view.window; pass --size WxH", args.scene.display())
            })?;
            (w, h)
        }
    };
    let frames = args.frames.or(scene.time.frames);
    // The frames the run will draw: the options', the scene's, else HEADLESS_FRAMES headless;
    // `None` in a window that runs until it is closed.
    let run_frames = frames.or(args.headless.then_some(HEADLESS_FRAMES));
    let warmup = match (args.warmup, run_frames) {
        (Some(w), Some(n)) if w >= n => anyhow::bail!(
            "--warmup {w} leaves none of the {n} frames to measure; give fewer warm-up frames \
             or more --frames"
        ),
        (Some(w), _) => w,
        // One frame only: it is the measurement.
        (None, Some(1)) => 0,
        (None, _) => 1,
    };
    if let (Some(dir), Some(n)) = (&capture.record, run_frames) {
        // An uncompressed frame bounds its PNG from above.
        let bytes = bytes_of(&[n, u64::from(size.0), u64::from(size.1), 4]);
        Budget::disk(&dir.join("frame_00000.png"))?.check(&Estimate::new(
            format!("`--record` × {n} frames of {}x{}", size.0, size.1),
            "the PNG frames",
            bytes,
        ))?;
    }
    say(&describe(&scene, &ground, &setup))?;
    say(&format!("device: {}", entry.info.label()))?;
    let mode = InteropMode::from(args.interop);
    check_request(mode, &entry.info)?;
    let particle_render = ParticleRender::from(args.particle_render);
    snowsim::splat::check_request(particle_render, &entry.info)?;

    let particle_count = setup.particle_count();
    let series = || -> anyhow::Result<Option<snowsim::sim::Series>> {
        let Some(v) = &args.vtu_every else {
            return Ok(None);
        };
        let every: u64 = v[0]
            .parse()
            .with_context(|| format!("--vtu-every: `{}` is not a number of frames", v[0]))?;
        Ok(Some(snowsim::sim::Series::new(
            Path::new(&v[1]),
            every,
            run_frames,
        )?))
    };
    // The per-second log: a failed write is kept and reported once the run stops.
    let mut log_error = None;
    let mut log = |line: &str| {
        if log_error.is_none()
            && let Err(e) = say(line)
        {
            log_error = Some(e);
        }
    };
    let (w, h) = size;
    let mut readback = None;
    let ran = (|| -> anyhow::Result<_> {
        // Headless (and undrawn) runs stop after HEADLESS_FRAMES when nothing says otherwise.
        let options = RunOptions {
            warmup,
            frames: run_frames,
            capture,
            log: &mut log,
        };
        Ok(if args.render == RenderArg::Off {
            // The simulation is built here (the wind solver's set-up and its checks too).
            let mut stepper = match comm {
                Some(comm) => Stepper::over_ranks(entry, setup, comm),
                None => Stepper::new(entry, setup),
            }
            .with_context(preparing)?;
            if args.check {
                stepper.check_every(args.check_every);
            }
            stepper.profile_every(args.profile_every, warmup);
            if let Some(path) = &vtu {
                stepper.save_state_on_finish(path.clone())?;
            }
            if let Some(s) = series()? {
                stepper.write_series(s);
            }
            let summary = run_undrawn(&mut stepper, options)?;
            if args.check {
                let (checks, time) = stepper.checks();
                say(&format!(
                    "checked {checks} times (every {} frames, {:.3} s in all): all held",
                    args.check_every,
                    time.as_secs_f64()
                ))?;
            }
            let report = stepper.report()?;
            (summary, GlInfo::default(), None, report)
        } else {
            let view = SceneView::new(&scene, &ground).with_context(preparing)?;
            let mut config = view.session_config(mode, args.paused);
            config.views.wind |= args.wind;
            config.views.pressure |= args.pressure;
            config.views.friction |= args.friction;
            config.views.osd = args.osd || !args.headless;
            config.particle_render = particle_render;
            config.profile_every = args.profile_every;
            config.profile_from = warmup;
            let setup = std::cell::Cell::new(Some(setup));
            let make_session = |gl: &snowsim::render::GlSetup| -> anyhow::Result<Session> {
                say(&format!("gl: {}", gl.info))?;
                let setup = setup.take().context("the session was made twice (a bug)")?;
                let mut session =
                    Session::new(gl, entry, config.clone(), setup).with_context(preparing)?;
                if let Some(path) = &vtu {
                    session.save_state_on_finish(path.clone())?;
                }
                if let Some(path) = &camera_path {
                    session.follow_camera_path(path.clone());
                }
                if let Some(s) = series()? {
                    session.write_series(s);
                }
                say(&format!("interop: {}", session.interop()))?;
                say(&format!("particle render: {}", session.particle_render()))?;
                Ok(session)
            };
            if args.headless {
                let headless = Headless::for_opencl(w, h, Some(&entry.info))?;
                let mut session = make_session(headless.setup())?;
                let summary =
                    run_headless(&headless.setup().gl, headless.size(), &mut session, options)?;
                let interop = (session.interop().clone(), session.particle_render().clone());
                readback = session
                    .readback_rate()
                    .map(|(rate, pinned)| -> anyhow::Result<Readback> {
                        let bytes = particle_count * PARTICLE_BYTES;
                        let bus = snowsim::cl::PinnedBuffer::<Particle>::read_bandwidth(
                            session.context(),
                            bytes,
                        )?;
                        Ok(Readback {
                            readback_gbps: rate / 1e9,
                            readback_pinned: pinned,
                            bus_pinned_gbps: bus / 1e9,
                        })
                    })
                    .transpose()?;
                let report = session.report_handle().borrow().clone().unwrap_or_default();
                (
                    summary,
                    headless.setup().info.clone(),
                    Some(interop),
                    report,
                )
            } else {
                let mut info = None;
                let mut interop = None;
                let summary = run_window(
                    WindowOptions {
                        size: (w, h),
                        vsync: scene.view.vsync && !args.no_vsync,
                        title: format!("snowsim: {}", scene.name),
                    },
                    options,
                    |gl| {
                        info = Some(gl.info.clone());
                        let session = make_session(gl).map_err(|e| format!("{e:#}"))?;
                        interop = Some((
                            session.interop().clone(),
                            session.particle_render_handle(),
                            session.report_handle(),
                        ));
                        Ok(session)
                    },
                )?;
                let (interop, render, report) =
                    interop.context("the window closed before the session started")?;
                let render = render.borrow().clone();
                let report = report.borrow().clone().unwrap_or_default();
                (
                    summary,
                    info.unwrap_or_default(),
                    Some((interop, render)),
                    report,
                )
            }
        })
    })();
    // A run stopped by an error keeps what it wrote so far, and says so.
    let (summary, gl_info, modes, sim_report) =
        ran.map_err(|e| match recorded_frames(recording.as_deref()) {
            0 => e,
            n => e.context(format!(
                "the run stopped early; the {n} frames recorded in {} are kept",
                recording.as_deref().unwrap_or(Path::new("")).display()
            )),
        })?;
    if let Some(e) = log_error {
        return Err(e);
    }
    let run = Ran {
        scene: &scene,
        path: &args.scene,
        particles: particle_count,
        size,
        snow: sim_report,
        snow_devices,
        readback,
    };
    report(&args, &run, entry, &gl_info, modes.as_ref(), &summary)?;
    if let Some(film) = &film {
        for line in film.finish(1.0 / scene.time.step)? {
            say(&line)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What ran, as settled from the scene and the options.
struct Ran<'a> {
    scene: &'a Scene,
    path: &'a Path,
    particles: usize,
    size: (u32, u32),
    snow: SimReport,
    snow_devices: Option<Vec<snowsim::sim::shares::ShareReport>>,
    readback: Option<Readback>,
}

/// The falling snow as flakes ([`snowsim::snow::Snowfall`]), from the scene's real snowfall.
#[derive(Clone, Copy, serde::Serialize)]
struct Flakes {
    /// Flakes per cubic metre at the camera.
    number_density_per_m3: f64,
    /// Extinction coefficient at the camera, per metre (`Q_ext` = 2).
    extinction_per_m: f64,
    /// Koschmieder's visibility 3.912 / β, metres.
    visibility_m: f64,
    /// The real snowfall the numbers are of, metres of snow per hour (never accelerated).
    rate_m_per_h: f64,
    /// The laid snow's density, kg/m³.
    density_kg_per_m3: f64,
    /// The falling snow's density at the camera over the uniform snowfall's, from where the
    /// parcels are at the end (`snowsim::snow::RelativeDensity`; 1 when not measured).
    relative_density: f64,
}

impl Flakes {
    /// The scene's falling snow at its camera, `relative` times the uniform snowfall's.
    fn of(scene: &Scene, relative: Option<f64>) -> Option<Self> {
        if !scene.simulate.snow {
            return None;
        }
        let config = snowsim::snow::SnowConfig::from_scene(scene).ok()?;
        let s = snowsim::app::snowfall(&config);
        s.validate().ok()?;
        let r = relative.unwrap_or(1.0);
        Some(Self {
            number_density_per_m3: r * s.number_density(),
            extinction_per_m: r * s.extinction(),
            visibility_m: if r > 0.0 {
                s.visibility() / r
            } else {
                f64::INFINITY
            },
            rate_m_per_h: s.rate,
            density_kg_per_m3: s.density,
            relative_density: r,
        })
    }
}

/// Copy mode's read-back, against the bus's pinned bandwidth measured in the same run.
#[derive(Clone, Copy, serde::Serialize)]
struct Readback {
    /// Bytes read back per second over the frames (10⁹ bytes).
    readback_gbps: f64,
    /// Whether the read-back went through pinned host memory.
    readback_pinned: bool,
    /// The best of three blocking reads of the particle buffer's size into pinned memory.
    bus_pinned_gbps: f64,
}

fn report(
    args: &Args,
    run: &Ran<'_>,
    entry: &DeviceEntry,
    gl: &GlInfo,
    modes: Option<&(snowsim::interop::InteropChoice, RenderChoice)>,
    summary: &RunSummary,
) -> anyhow::Result<()> {
    // Without drawing (--render off) nothing crosses to OpenGL.
    let undrawn = ("none".to_string(), "--render off".to_string());
    let (interop, interop_reason) = modes.map_or(undrawn.clone(), |(i, _)| {
        (i.transfer.to_string(), i.reason.clone())
    });
    let (render_mode, render_reason) =
        modes.map_or(undrawn, |(_, r)| (r.mode.to_string(), r.reason.clone()));
    if args.json {
        let report = Report {
            scene: run.path.display().to_string(),
            scene_name: &run.scene.name,
            device: &entry.info.name,
            platform: &entry.info.platform,
            gl,
            interop,
            interop_reason,
            particle_render: render_mode,
            particle_render_reason: render_reason,
            particles: run.particles,
            width: run.size.0,
            height: run.size.1,
            headless: args.headless,
            snow: run.snow.clone(),
            snow_devices: run.snow_devices.clone(),
            flakes: Flakes::of(run.scene, run.snow.flake_density_at_camera)
                .filter(|_| run.particles > 0),
            readback: run.readback,
            summary,
        };
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        outln!(
            "summary: {} particles, {}",
            run.particles,
            match modes {
                Some(_) => format!(
                    "interop {interop}, particle render {render_mode} ({render_reason}), {}x{}, {} \
                     on {}",
                    run.size.0, run.size.1, entry.info.name, gl.renderer
                ),
                None => format!("not drawn (--render off), {}", entry.info.name),
            }
        )?;
        outln!("{summary}")?;
        if let Some(f) =
            Flakes::of(run.scene, run.snow.flake_density_at_camera).filter(|_| run.particles > 0)
        {
            outln!(
                "falling snow: {:.1} flakes per m³ at the camera ({:.2} × the uniform \
                 snowfall's), extinction {:.3e} per m, visibility {:.0} m (Koschmieder; {} \
                 mm/h of {} kg/m³ snow, real rate)",
                f.number_density_per_m3,
                f.relative_density,
                f.extinction_per_m,
                f.visibility_m,
                f.rate_m_per_h * 1e3,
                f.density_kg_per_m3
            )?;
        }
        if let Some(r) = &run.readback {
            outln!(
                "read-back: {:.1} GB/s{}, {:.0} % of the bus's pinned {:.1} GB/s (measured after \
                 the run)",
                r.readback_gbps,
                if r.readback_pinned {
                    " through pinned memory"
                } else {
                    " into the mapped GL buffer"
                },
                100.0 * r.readback_gbps / r.bus_pinned_gbps,
                r.bus_pinned_gbps
            )?;
        }
        {
            let s = &run.snow;
            outln!(
                "snow: {} landed, {} respawned, {} wrapped, {} lost; {:.6} m³ on the ground \
                 (parcels of {:.3e} m³), deepest {:.6} m",
                s.landed,
                s.respawned,
                s.wrapped,
                s.lost,
                s.deposited_m3,
                s.parcel_m3,
                s.max_depth_m
            )?;
            if let Some(t) = &s.split_traffic {
                let mb = |b: u64| b as f64 / 1e6;
                outln!(
                    "split: {:.2} MB a frame between the devices (landings {:.2}, suspension \
                     cells {:.2}, parcels drawn {:.2}; the wind field {:.2} when it stepped)",
                    mb(t.landings + t.cells + t.drawn_parcels),
                    mb(t.landings),
                    mb(t.cells),
                    mb(t.drawn_parcels),
                    mb(t.wind_field)
                )?;
            }
            if let Some(w) = &s.split_waits {
                outln!(
                    "split: the host waited {:.3} ms a frame for the cells and {:.3} ms for the \
                     others' landings",
                    w.cells_ms,
                    w.landings_ms
                )?;
            }
            if let Some(busy) = s
                .split_device_ms
                .as_ref()
                .filter(|b| b.iter().any(Option::is_some))
            {
                let each: Vec<String> = busy
                    .iter()
                    .map(|ms| ms.map_or("not timed".into(), |ms| format!("{ms:.3} ms")))
                    .collect();
                outln!(
                    "split: the other devices' launches took {} a timed frame",
                    each.join(", ")
                )?;
            }
        }
    }
    Ok(())
}
