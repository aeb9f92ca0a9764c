//! `snowsim scene …`: validate and summarise scene files; make the valley heightmap.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use serde_json::json;
use snowsim::cl::{self, DeviceInfo, DeviceSelector};
use snowsim::input;
use snowsim::output;
use snowsim::renumber::numbering_score;
use snowsim::scene::limits as scene_budget;
use snowsim::scene::{Domain, DomainReport, Scene, WindProfile};
use snowsim::sim::{Overrides, SimSetup};
use snowsim::terrain::{Heightmap, procedural};

use super::console::{ConsoleError, errln, outln};

/// The `scene` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Validate a scene file and summarise it; build its domain mesh and check it.
    #[command(
        long_about = "Validate a scene file (TOML) and summarise it: domain, wind, snow, ground, \
                      time, camera, what is simulated and shown. Unknown keys and bad values \
                      are errors naming the file, line and key (exit status 1).\n\n\
                      Then set the run up as `snowsim run` does, with its checks (build the \
                      domain mesh: mesh the terrain or read the mesh, renumber it; the wind's \
                      boundary and time step on it, the snow's settings), and check the mesh: \
                      the checks of `mesh info --check`, every boundary face carrying a \
                      triangle and every triangle on the boundary. Exit status 3 if a check \
                      fails. With --no-mesh, what only the mesh tells (the default wind step) \
                      is not checked."
    )]
    Check(CheckArgs),
    /// Write the procedural valley heightmap as a 16-bit PNG (how scenes/valley.png is made).
    Valley(ValleyArgs),
    /// Write the ridge heightmap as a 16-bit PNG (how scenes/ridge.png is made): a Gaussian
    /// ridge running east–west across the middle.
    Ridge(RidgeArgs),
    /// Write the fence heightmap as a 16-bit PNG (how scenes/fence.png is made): a straight
    /// wall running east–west across the middle.
    Fence(FenceArgs),
}

/// Options of `snowsim scene fence`.
#[derive(Debug, clap::Args)]
pub struct FenceArgs {
    /// Output PNG file.
    output: PathBuf,
    /// Width and height in pixels.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(2..=16384))]
    resolution: u32,
    /// The wall's thickness, as a fraction of the map's north–south extent (0 to 1).
    #[arg(long, default_value_t = 0.01, value_parser = half_width)]
    thickness: f64,
    /// Replace an existing file that is not a PNG image (without it the command refuses to
    /// start).
    #[arg(long)]
    force: bool,
}

/// Options of `snowsim scene ridge`.
#[derive(Debug, clap::Args)]
pub struct RidgeArgs {
    /// Output PNG file.
    output: PathBuf,
    /// Width and height in pixels.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(2..=16384))]
    resolution: u32,
    /// Half-width at half height, as a fraction of the map's north–south extent (0 to 1).
    #[arg(long, default_value_t = 0.15, value_parser = half_width)]
    half_width: f64,
    /// Replace an existing file that is not a PNG image (without it the command refuses to
    /// start).
    #[arg(long)]
    force: bool,
}

fn half_width(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(w) if w > 0.0 && w <= 1.0 => Ok(w),
        Ok(w) => Err(format!("{w} is not in (0, 1]")),
        Err(e) => Err(format!("`{text}` is not a number: {e}")),
    }
}

/// Options of `snowsim scene check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The scene file, e.g. scenes/valley.toml, or `-` for standard input (its relative
    /// paths are then relative to the current directory).
    file: PathBuf,
    /// Print a JSON object {"scene", "mesh"} instead of text.
    #[arg(long)]
    json: bool,
    /// Only validate the file; do not build the domain mesh (nor check what it decides: the
    /// default wind step, a mesh domain's pressure unknowns).
    #[arg(long)]
    no_mesh: bool,
    /// The device whose memory the scene must fit, as `snowsim run` would use it (index or
    /// part of its name, as `snowsim devices` lists). Default: the default device, and no
    /// device check (with a note) when this machine has no OpenCL platform.
    #[arg(long, short, allow_hyphen_values = true)]
    device: Option<DeviceSelector>,
}

/// Options of `snowsim scene valley`.
#[derive(Debug, clap::Args)]
pub struct ValleyArgs {
    /// Output PNG file.
    output: PathBuf,
    /// Width and height in pixels.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(2..=16384))]
    resolution: u32,
    /// Random seed.
    #[arg(long, default_value_t = 7)]
    seed: u32,
    /// Replace an existing file that is not a PNG image (without it the command refuses to
    /// start).
    #[arg(long)]
    force: bool,
}

/// Exit status when the domain mesh fails a check.
const CHECK_FAILED: u8 = 3;

/// Runs a `scene` subcommand.
pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check(args) => check(args),
        Command::Valley(args) => valley(args),
        Command::Ridge(args) => ridge(args),
        Command::Fence(args) => fence(args),
    }
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let text = input::read_text_or_stdin(&args.file, input::TEXT_LIMIT)
        .map_err(|e| anyhow::anyhow!("scene file {e}"))?;
    let scene = Scene::from_toml(&text, &args.file)?;
    let device = device_info(args.device.as_ref())?;
    scene_budget::check_run(&scene, scene.snow.particles, device.as_ref())?;
    if !args.no_mesh {
        scene_budget::check_domain_mesh(&scene)?;
    }
    if !args.json {
        print_scene(&scene)?;
    }
    let mut built = None;
    if !args.no_mesh {
        let started = Instant::now();
        // What `run` settles, with the same checks: the ground, the domain mesh and the wind
        // and snow on it (the wind's step and pressure unknowns come from the mesh).
        let preparing = || format!("preparing scene {}", args.file.display());
        let ground = snowsim::scene::ground_of(&scene).with_context(preparing)?;
        let setup =
            SimSetup::new(&scene, &ground, &Overrides::default()).with_context(preparing)?;
        let Some(sim) = &setup.scene else {
            anyhow::bail!("internal error: a scene's setup without its simulation");
        };
        // What `run` meets when it builds the wind solver, checked without a device.
        snowsim::sim::coupling::check_wind(&sim.domain, &sim.wind, setup.dt)
            .with_context(preparing)?;
        let domain = &sim.domain;
        let seconds = started.elapsed().as_secs_f64();
        let report = domain.report();
        let score = numbering_score(&domain.mesh).percent();
        if !args.json {
            print_domain(&report, seconds, score)?;
        }
        built = Some((report, seconds, score));
    }
    if args.json {
        let mesh = built.as_ref().map(|(report, seconds, score)| {
            let mut value = serde_json::to_value(report).unwrap_or_default();
            value["seconds"] = json!(seconds);
            value["numbering_score"] = json!(score);
            value["passed"] = json!(report.passed());
            value
        });
        let value = json!({ "scene": serde_json::to_value(&scene)?, "mesh": mesh });
        outln!("{}", serde_json::to_string_pretty(&value)?)?;
    }
    Ok(match &built {
        Some((report, ..)) if !report.passed() => ExitCode::from(CHECK_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

/// The device a scene must fit: the one `--device` names, else the default device, or none
/// (with a note) when there is no OpenCL platform and `--device` was not given.
fn device_info(selector: Option<&DeviceSelector>) -> anyhow::Result<Option<DeviceInfo>> {
    let listed = cl::list_devices();
    let devices = match (listed, selector) {
        (Ok(devices), _) => devices,
        (Err(e), Some(_)) => return Err(e.into()),
        (Err(e), None) => {
            let reason = e.to_string();
            let reason = reason.lines().next().unwrap_or_default();
            errln!("note: device memory not checked: {reason}")?;
            return Ok(None);
        }
    };
    let selector = selector.cloned().unwrap_or(DeviceSelector::Default);
    Ok(Some(selector.select(&devices)?.info.clone()))
}

fn print_scene(scene: &Scene) -> Result<(), ConsoleError> {
    outln!("scene:    {}: {}", scene.path.display(), scene.name)?;
    if !scene.description.is_empty() {
        outln!("          {}", scene.description)?;
    }
    match &scene.domain {
        Domain::Terrain {
            heightmap,
            spec,
            image,
        } => {
            match (heightmap, image) {
                (Some(path), Some(map)) => outln!(
                    "domain:   terrain from {} ({} × {}, {}-bit), relief {} m",
                    path.display(),
                    map.width(),
                    map.height(),
                    map.bits(),
                    spec.relief
                ),
                _ => outln!("domain:   flat ground at z = 0"),
            }?;
            outln!(
                "          {} × {} m, top at {} m; {} × {} cells, {} layers (grading {})",
                spec.size[0],
                spec.size[1],
                spec.size[2],
                spec.cells[0],
                spec.cells[1],
                spec.layers,
                spec.grading
            )?;
        }
        Domain::Mesh { path, boundary } => outln!(
            "domain:   mesh {}; boundary references x_min {}, x_max {}, y_min {}, y_max {}, \
             ground {}, top {}",
            path.display(),
            boundary.x_min,
            boundary.x_max,
            boundary.y_min,
            boundary.y_max,
            boundary.ground,
            boundary.top
        )?,
    }
    let w = &scene.wind;
    let profile = match w.profile {
        WindProfile::Log { roughness } => format!("log profile (roughness {roughness} m)"),
        WindProfile::Power { exponent } => format!("power profile (exponent {exponent:.3})"),
        WindProfile::Uniform => "uniform".into(),
    };
    outln!(
        "wind:     {} m/s at {} m towards ({:.2}, {:.2}), {profile}; {} pressure iterations",
        w.speed,
        w.reference_height,
        w.direction[0],
        w.direction[1],
        w.pressure_iterations
    )?;
    let s = &scene.snow;
    outln!(
        "snow:     {} particles, flakes {}–{} mm, falling at {} m/s, gravity {} m/s²",
        s.particles,
        s.flake_diameter[0] * 1000.0,
        s.flake_diameter[1] * 1000.0,
        s.fall_speed,
        s.gravity
    )?;
    outln!(
        "          flutter radius {}–{} m at {}–{} rad/s; snowfall {} mm/h of {} kg/m³ snow, \
         entering {}; sort {} by {}; seed {}",
        s.flutter_radius[0],
        s.flutter_radius[1],
        s.flutter_rate[0],
        s.flutter_rate[1],
        s.rate * 1000.0,
        s.density,
        match s.source_height {
            h if h > 0.0 => format!("{h} m above the ground"),
            _ => "through the top".into(),
        },
        s.sort.name(),
        s.sort_key.name(),
        s.seed
    )?;
    let g = &scene.ground;
    outln!(
        "ground:   {} m of snow at the start, repose angle {}°, smoothing rate {}; the cover's \
         mesh {} pieces per ground edge",
        g.initial_depth,
        g.repose_angle,
        g.smoothing_rate,
        g.cover_refinement
    )?;
    outln!(
        "time:     step {} s, {}; snowfall accelerated {}×",
        scene.time.step,
        match scene.time.frames {
            Some(n) => format!("{n} frames"),
            None => "until closed".into(),
        },
        scene.time.acceleration
    )?;
    let c = &scene.camera;
    outln!(
        "camera:   at {:?} looking at {:?}, field of view {}°",
        c.position,
        c.target,
        c.fov
    )?;
    let on = |flags: &[(&str, bool)]| {
        let names: Vec<&str> = flags.iter().filter(|f| f.1).map(|f| f.0).collect();
        if names.is_empty() {
            "nothing".to_string()
        } else {
            names.join(", ")
        }
    };
    outln!(
        "simulate: {}",
        on(&[("wind", scene.simulate.wind), ("snow", scene.simulate.snow)])
    )?;
    let v = &scene.view;
    outln!(
        "view:     {}; window {} × {}{}",
        on(&[
            ("terrain", v.terrain),
            ("snow", v.snow),
            ("wind", v.wind),
            ("pressure", v.pressure)
        ]),
        v.window[0],
        v.window[1],
        if v.vsync { ", vsync" } else { "" }
    )?;
    Ok(())
}

fn print_domain(
    report: &DomainReport,
    seconds: f64,
    score: Option<f64>,
) -> Result<(), ConsoleError> {
    outln!(
        "mesh:     built, renumbered and set up for a run in {seconds:.2} s: {} vertices, {} \
         tetrahedra; ground surface {} triangles",
        report.vertices,
        report.tetrahedra,
        report.ground_triangles
    )?;
    outln!(
        "boundary: {}",
        report
            .boundary
            .iter()
            .map(|b| format!("{} {} ({})", b.side, b.reference, b.triangles))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    if let Some(score) = score {
        outln!("numbering score: {score:.1} %")?;
    }
    if report.passed() {
        outln!(
            "check:    no problem found; all {} boundary faces referenced",
            report.check.boundary_faces
        )?;
        return Ok(());
    }
    outln!("check:")?;
    if report.unreferenced_faces > 0 {
        outln!(
            "  {} boundary faces have no triangle (no boundary condition)",
            report.unreferenced_faces
        )?;
    }
    if report.stray_triangles > 0 {
        outln!(
            "  {} triangles are not on the boundary",
            report.stray_triangles
        )?;
    }
    for (kind, count) in &report.check.counts {
        outln!("  {count} {kind}")?;
        for example in report.check.examples.iter().filter(|p| p.kind == *kind) {
            outln!("    {}", example.detail)?;
        }
    }
    Ok(())
}

fn ridge(args: RidgeArgs) -> anyhow::Result<ExitCode> {
    write_heightmap(
        &args.output,
        args.force,
        &format!(
            "ridge heightmap (half-width {} of the map)",
            args.half_width
        ),
        || procedural::ridge(args.resolution as usize, args.half_width),
    )
}

fn fence(args: FenceArgs) -> anyhow::Result<ExitCode> {
    write_heightmap(
        &args.output,
        args.force,
        &format!("fence heightmap (thickness {} of the map)", args.thickness),
        || procedural::fence(args.resolution as usize, args.thickness),
    )
}

fn valley(args: ValleyArgs) -> anyhow::Result<ExitCode> {
    write_heightmap(
        &args.output,
        args.force,
        &format!("valley heightmap (seed {})", args.seed),
        || procedural::valley(args.resolution as usize, args.seed),
    )
}

/// Writes the heightmap `make` builds to `output` as a 16-bit PNG, under the output rule (a
/// file there that is not a PNG only with `force`), and says what it wrote (`what`) and how
/// long it took.
fn write_heightmap(
    output: &Path,
    force: bool,
    what: &str,
    make: impl FnOnce() -> Heightmap,
) -> anyhow::Result<ExitCode> {
    output::OutputPlan::new(force)
        .file("the output", output, output::FileKind::Png)
        .check()?;
    let started = Instant::now();
    let map = make();
    map.write_png16(output)?;
    outln!(
        "wrote {}: {} × {} 16-bit {what} in {:.2} s",
        output.display(),
        map.width(),
        map.height(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(ExitCode::SUCCESS)
}
