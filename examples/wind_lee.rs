//! Linear against BFECC advection of the wind, in the lee of a scene's terrain.
//!
//! ```text
//! cargo run --release --example wind_lee -- scenes/valley.toml --steps 300
//! ```
//!
//! Runs the wind solver twice from the same start-up solve, once per `wind.advection`, and
//! prints for each the CG iterations per step, the kinetic energy, the largest speed and the
//! flow in the low-level lee: every vertex of the southern (downstream, for the valley's
//! northerly wind) half whose profile speed is below the profile's at 30 m above the ground.
//! Then the RMS difference between the two velocity fields (benches/RESULTS.md).

use std::path::PathBuf;

use clap::Parser;
use snowsim::cl::{Context, DeviceSelector, list_devices};
use snowsim::scene::{Advection, Scene};
use snowsim::wind::{self, Settings};

/// Compares the two advection schemes of the wind solver on a scene.
#[derive(Parser)]
struct Args {
    /// The scene file.
    scene: PathBuf,
    /// Wind steps after the start-up solve.
    #[arg(long, default_value_t = 300)]
    steps: u64,
    /// Most CG iterations per step.
    #[arg(long, default_value_t = 200)]
    iterations: u32,
    /// OpenCL device: an index, part of its name, or `default`.
    #[arg(long, default_value = "default")]
    device: DeviceSelector,
}

fn speed(v: &[f32; 4]) -> f64 {
    f64::from(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let scene = Scene::load(&args.scene)?;
    let devices = list_devices()?;
    let entry = args.device.select(&devices)?;
    let lee_limit = scene.wind.speed_at(30.0);
    let mut fields = Vec::new();
    for advection in [Advection::Linear, Advection::Bfecc] {
        let settings = Settings {
            advection,
            iterations: args.iterations,
            ..wind::setup::settings(&scene, false)
        };
        let mut solver = wind::setup::from_scene(Context::new(entry)?, &scene, settings)?;
        solver.startup()?;
        let mut iterations = 0u64;
        let mut last = None;
        for _ in 0..args.steps {
            let s = solver.step()?;
            iterations += u64::from(s.iterations);
            last = Some(s);
        }
        let last = last.ok_or_else(|| anyhow::anyhow!("--steps must be at least 1"))?;
        let (u, inflow) = (solver.velocity()?, solver.inflow()?);
        let (mut sum, mut count, mut slow) = (0.0, 0, 0);
        for (i, p) in solver.vertices().iter().enumerate() {
            let profile = speed(&inflow[i]);
            if p[1] < 2000.0 && profile > 0.0 && profile < lee_limit {
                sum += speed(&u[i]);
                count += 1;
                slow += usize::from(speed(&u[i]) < 0.5 * profile);
            }
        }
        println!(
            "{advection:?}: {} steps, CG {:.1} it/step, kinetic energy {:.4e} J, max speed {:.2} \
             m/s; low-level lee: mean speed {:.3} m/s over {count} vertices, {slow} below half \
             the profile",
            args.steps,
            iterations as f64 / args.steps as f64,
            last.kinetic_energy,
            last.max_speed,
            sum / count.max(1) as f64
        );
        fields.push(u);
    }
    let squares: f64 = fields[0]
        .iter()
        .zip(&fields[1])
        .map(|(a, b)| (0..3).map(|c| f64::from(a[c] - b[c]).powi(2)).sum::<f64>())
        .sum();
    println!(
        "RMS velocity difference, BFECC − linear: {:.3} m/s",
        (squares / fields[0].len().max(1) as f64).sqrt()
    );
    Ok(())
}
