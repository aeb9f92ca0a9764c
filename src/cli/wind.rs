//! `snowsim wind`: the wind solver alone, headless, with a report of how well it converged.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde::Serialize;
use snowsim::meshio::{VtuArray, write_vtu_file};
use snowsim::output;
use snowsim::wind::{self, Boundary, Solver, StepStats};

use super::DeviceArg;
use super::console::outln;

/// Options of `snowsim wind`.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Run the wind solver alone, headless: the scene's domain mesh, its inflow \
                  profile projected by a start-up solve, then --steps wind steps (advection, \
                  pressure solve, projection) at the wind's own time step (`wind.step`, by \
                  default a Courant number of about 1 near the ground).\n\n\
                  Prints per stage the device time, the pressure solver's iterations and \
                  final divergence per step (mean, max), the RMS divergence before and after \
                  projection, the flux through each boundary reference, the largest speed, \
                  the kinetic energy and the advection walks that failed. Exit status 1 on a \
                  bad scene, a mesh the wind cannot use (no inflow or outflow side, degenerate \
                  or inverted tetrahedra), a field that is not finite, or a mesh that does not \
                  fit the device."
)]
pub struct Args {
    /// The scene file.
    #[arg(long, default_value = super::run::DEFAULT_SCENE)]
    scene: PathBuf,
    /// Replace an existing output file that this command did not write (without it the
    /// command refuses to start); an output never replaces an input, with or without it.
    #[arg(long)]
    force: bool,
    /// Wind steps after the start-up solve.
    #[arg(long, default_value_t = 100)]
    steps: u64,
    /// Print one JSON object on standard output instead of text.
    #[arg(long)]
    json: bool,
    /// Write the final state as VTK XML (ParaView): tetrahedra and boundary triangles with
    /// cell data `ref`, point data `velocity` (m/s) and `pressure` (Pa). Checked before the
    /// run, written atomically.
    #[arg(long)]
    vtu: Option<PathBuf>,
    /// Do not time the stages (profiling events cost ~8 µs per launch on NVIDIA).
    #[arg(long)]
    no_profile: bool,
    #[command(flatten)]
    device: DeviceArg,
}

/// Mean and largest of a per-step quantity.
#[derive(Debug, Default, Serialize)]
struct MeanMax {
    mean: f64,
    max: f64,
}

impl MeanMax {
    fn of(values: impl Iterator<Item = f64> + Clone) -> Self {
        let n = values.clone().count().max(1) as f64;
        Self {
            mean: values.clone().sum::<f64>() / n,
            max: values.fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// The report `--json` prints.
#[derive(Debug, Serialize)]
struct Report<'a> {
    scene: String,
    device: String,
    vertices: usize,
    tetrahedra: usize,
    dt: f64,
    steps: u64,
    absolute_tolerance: f64,
    initial_divergence: f64,
    startup: &'a StepStats,
    iterations: MeanMax,
    final_divergence: MeanMax,
    divergence_before: MeanMax,
    divergence_after: MeanMax,
    not_converged_steps: usize,
    lost_walks: u64,
    last: Option<&'a StepStats>,
    boundary: &'a [wind::boundary::Reference],
    fluxes: Vec<Flux>,
    stages: Vec<snowsim::counters::StageTime>,
    wall_s: f64,
}

/// Flux through one boundary reference.
#[derive(Debug, Serialize)]
struct Flux {
    reference: i32,
    side: String,
    kind: wind::Kind,
    flux_m3_per_s: f64,
}

/// Runs `snowsim wind`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (scene, device, context) = super::scene_and_device(&args.scene, &args.device)?;
    let mut plan = output::OutputPlan::new(args.force);
    for (role, path) in scene.input_files() {
        plan.input(role, path);
    }
    if let Some(path) = &args.vtu {
        plan.file("--vtu", path, output::FileKind::Vtk);
    }
    plan.check()?;
    let vtu = match &args.vtu {
        Some(path) => Some(output::check_writable(path)?),
        None => None,
    };
    let started = Instant::now();
    let settings = wind::setup::settings(&scene, !args.no_profile);
    let mut solver = wind::setup::from_scene(context, &scene, settings)?;
    let (vertices, tetrahedra) = (solver.vertices().len(), solver.tetrahedra().len());
    if !args.json {
        outln!(
            "{}: {vertices} vertices, {tetrahedra} tetrahedra on {device}",
            args.scene.display()
        )?;
        print_boundary(solver.boundary())?;
        outln!(
            "time step {:.3} s; pressure tolerance {:.3e} 1/s ({} × the profile's RMS \
             divergence {:.3e} 1/s), at most {} iterations per step",
            solver.dt(),
            solver.absolute_tolerance(),
            solver.settings().tolerance,
            solver.initial_divergence(),
            solver.settings().iterations
        )?;
    }
    let startup = solver.startup()?;
    if !args.json {
        outln!(
            "start-up solve: {} iterations ({}), divergence {:.3e} → {:.3e} 1/s",
            startup.iterations,
            if startup.converged {
                "converged"
            } else {
                "NOT converged"
            },
            startup.divergence_before,
            startup.divergence_after
        )?;
    }
    let bar = progress(args.steps, args.json);
    // Grown as the steps run: --steps is the user's, and may be far beyond memory.
    let mut steps = Vec::new();
    for _ in 0..args.steps {
        let s = solver.step()?;
        bar.set_message(format!(
            "{} it, div {:.2e}, max {:.2} m/s",
            s.iterations, s.divergence_after, s.max_speed
        ));
        bar.inc(1);
        steps.push(s);
    }
    bar.finish_and_clear();
    let fluxes = fluxes(&mut solver)?;
    if let Some(path) = &vtu {
        write_state(&mut solver, path)?;
    }
    let report = Report {
        scene: args.scene.display().to_string(),
        device,
        vertices,
        tetrahedra,
        dt: solver.dt(),
        steps: args.steps,
        absolute_tolerance: solver.absolute_tolerance(),
        initial_divergence: solver.initial_divergence(),
        startup: &startup,
        iterations: MeanMax::of(steps.iter().map(|s| f64::from(s.iterations))),
        final_divergence: MeanMax::of(
            steps
                .iter()
                .map(|s| s.residuals.last().map_or(f64::NAN, |r| r.1)),
        ),
        divergence_before: MeanMax::of(steps.iter().map(|s| s.divergence_before)),
        divergence_after: MeanMax::of(steps.iter().map(|s| s.divergence_after)),
        not_converged_steps: steps.iter().filter(|s| !s.converged).count(),
        lost_walks: steps.iter().map(|s| s.lost_walks).sum(),
        last: steps.last(),
        boundary: &solver.boundary().references.clone(),
        fluxes,
        stages: solver.counters().per_frame(),
        wall_s: started.elapsed().as_secs_f64(),
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_report(&report)?;
        if let Some(path) = &vtu {
            outln!("wrote {}", path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn progress(steps: u64, hidden: bool) -> indicatif::ProgressBar {
    if hidden || steps < 2 {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(steps);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] step {pos}/{len} {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

fn print_boundary(boundary: &Boundary) -> anyhow::Result<()> {
    for r in &boundary.references {
        outln!(
            "  ref {:>2} {:<6} {:<7} {:>12.0} m²",
            r.reference,
            r.side.name(),
            format!("{:?}", r.kind).to_lowercase(),
            r.area
        )?;
    }
    Ok(())
}

fn fluxes(solver: &mut Solver) -> anyhow::Result<Vec<Flux>> {
    let refs = solver.boundary().references.clone();
    Ok(solver
        .fluxes()?
        .into_iter()
        .map(|(reference, flux)| {
            let r = refs.iter().find(|r| r.reference == reference);
            Flux {
                reference,
                side: r.map_or("?".into(), |r| r.side.name().to_string()),
                kind: r.map_or(wind::Kind::Slip, |r| r.kind),
                flux_m3_per_s: flux,
            }
        })
        .collect())
}

fn print_report(r: &Report) -> anyhow::Result<()> {
    outln!(
        "{} steps of {:.3} s: CG iterations per step mean {:.1}, max {:.0}; {} steps not \
         converged",
        r.steps,
        r.dt,
        r.iterations.mean,
        r.iterations.max,
        r.not_converged_steps
    )?;
    outln!(
        "RMS divergence before projection mean {:.3e}, max {:.3e} 1/s; after mean {:.3e}, max \
         {:.3e} 1/s",
        r.divergence_before.mean,
        r.divergence_before.max,
        r.divergence_after.mean,
        r.divergence_after.max
    )?;
    if let Some(last) = r.last {
        outln!(
            "last step: max speed {:.3} m/s, kinetic energy {:.4e} J",
            last.max_speed,
            last.kinetic_energy
        )?;
    }
    outln!("advection walks lost: {}", r.lost_walks)?;
    let inflow: f64 = r
        .fluxes
        .iter()
        .filter(|f| f.kind == wind::Kind::Inflow)
        .map(|f| -f.flux_m3_per_s)
        .sum();
    let net: f64 = r.fluxes.iter().map(|f| f.flux_m3_per_s).sum();
    for f in &r.fluxes {
        outln!(
            "  flux ref {:>2} {:<6} {:>14.1} m³/s",
            f.reference,
            f.side,
            f.flux_m3_per_s
        )?;
    }
    outln!(
        "  net outflow {:.1} m³/s = {:.3} % of the inflow",
        net,
        100.0 * net / inflow.max(f64::MIN_POSITIVE)
    )?;
    for s in &r.stages {
        outln!(
            "  {:<16} {:>5} launches/step {:>9.3} ms/step",
            s.stage,
            s.launches,
            s.busy.as_secs_f64() * 1e3
        )?;
    }
    outln!("wall {:.2} s", r.wall_s)?;
    Ok(())
}

/// Writes the final state to `path` (VTK XML).
fn write_state(solver: &mut Solver, path: &std::path::Path) -> anyhow::Result<()> {
    let velocity: Vec<[f32; 3]> = solver
        .velocity()?
        .iter()
        .map(|v| [v[0], v[1], v[2]])
        .collect();
    let pressure = solver.pressure()?;
    write_vtu_file(
        path,
        solver.vertices(),
        solver.tetrahedra(),
        solver.triangles(),
        &[
            VtuArray::vectors("velocity", &velocity),
            VtuArray::scalars("pressure", &pressure),
        ],
    )?;
    Ok(())
}
