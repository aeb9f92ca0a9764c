//! The simulation of a scene (`snowsim::sim`) on a real OpenCL device: the frame waits for
//! nothing and still stops a run on a non-finite parcel one frame late, the wind steps at its
//! own time step, the views' samples follow it, the report counts what the device counted.

use std::path::Path;

use snowsim::cl::{Context, DeviceBuffer, OutputBuffer};
use snowsim::particle::Particle;
use snowsim::scene::{Scene, SortMode};
use snowsim::sim::{Overrides, SimSetup, Simulation};

use crate::common::context;

/// The flat scene with `edit` applied to its text.
fn flat(edit: &str) -> Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let text = std::fs::read_to_string(&path).unwrap() + edit;
    Scene::from_toml(&text, &path).unwrap()
}

/// The simulation of `scene` with `overrides`, reset, and its particle buffer.
pub(crate) fn start(
    ctx: &Context,
    scene: &Scene,
    overrides: &Overrides,
) -> (Simulation, DeviceBuffer<Particle>) {
    let ground = snowsim::scene::ground_of(scene).unwrap();
    let setup = SimSetup::new(scene, &ground, overrides).unwrap();
    let mut sim = Simulation::new(ctx, setup).unwrap();
    let mut particles = DeviceBuffer::zeroed(ctx, sim.particle_count().max(1)).unwrap();
    let mut timeline = ctx.timeline();
    sim.reset(
        ctx,
        &mut OutputBuffer::Device(&mut particles),
        &mut timeline,
    )
    .unwrap();
    ctx.finish().unwrap();
    (sim, particles)
}

fn step(
    ctx: &Context,
    sim: &mut Simulation,
    particles: &mut DeviceBuffer<Particle>,
) -> snowsim::sim::Result<()> {
    let mut timeline = ctx.timeline();
    let result = sim.step(ctx, &mut OutputBuffer::Device(particles), &mut timeline);
    ctx.finish().unwrap();
    result
}

#[test]
fn a_nan_parcel_stops_the_run_one_frame_late_naming_frame_and_id() {
    let ctx = context();
    let scene = flat("\n[simulate]\nwind = false\n");
    let overrides = Overrides {
        particles: Some(200),
        sort: Some(SortMode::Off),
        ..Default::default()
    };
    let (mut sim, mut particles) = start(&ctx, &scene, &overrides);
    step(&ctx, &mut sim, &mut particles).expect("a clean first frame");
    let id = poison(sim.snow_mut().expect("the snow"), 17);
    stopped_by(&ctx, &mut sim, &mut particles, id);
}

/// Makes parcel `k` of `snow` non-finite (its vertical velocity NaN); returns its id.
fn poison(snow: &mut snowsim::snow::Snow, k: usize) -> u32 {
    let state = snow.particles().read().unwrap();
    let mut vel: Vec<[f32; 4]> = state.iter().map(|p| p.vel).collect();
    vel[k][2] = f32::NAN;
    snow.particles_mut().write_velocities(&vel).unwrap();
    state[k].id
}

/// Runs the frame that computes a NaN for parcel `id` (it only enqueues: it does not wait to
/// find out) and the next, which checks the last one's counters once its launches are queued
/// and stops the run; the error names the step, the parcel and the frame that made it.
fn stopped_by(
    ctx: &Context,
    sim: &mut Simulation,
    particles: &mut DeviceBuffer<Particle>,
    id: u32,
) -> String {
    step(ctx, sim, particles).expect("the poisoned frame is only enqueued");
    let err = step(ctx, sim, particles).expect_err("a NaN parcel stops the run");
    let text = err.to_string();
    assert!(
        text.contains("snow.step") && text.contains(&format!("particle {id}")),
        "{text}"
    );
    assert!(text.contains("frame 1"), "the frame that made it: {text}");
    text
}

/// A device with a share of the parcels (`--snow-devices`, here a second context on the one
/// device) whose parcel goes non-finite mid-run stops the run one frame late, as the snow's
/// own does, with the error naming that device, its frame and the parcel's id (the run's, not
/// the share's index); the snow's own device's parcels stay clean.
#[test]
fn a_nan_parcel_on_another_device_stops_the_run_naming_that_device() {
    let ctx = context();
    let scene = flat("\n[simulate]\nwind = false\n");
    let devices = snowsim::cl::list_devices().unwrap();
    let entry = snowsim::cl::DeviceSelector::Default
        .select(&devices)
        .unwrap()
        .clone();
    let overrides = Overrides {
        particles: Some(300),
        sort: Some(SortMode::Off),
        snow_devices: vec![entry.clone()],
        snow_shares: Some(vec![1.0, 2.0]),
        ..Default::default()
    };
    let (mut sim, mut particles) = start(&ctx, &scene, &overrides);
    step(&ctx, &mut sim, &mut particles).expect("a clean first frame");
    let other = sim
        .shares_mut()
        .expect("a split")
        .snows_mut()
        .next()
        .expect("another device");
    let state = other.particles().read().unwrap();
    // The other device holds ids 100..300: the run's ids, not its own indices.
    assert_eq!(state.len(), 200);
    assert!(state.iter().all(|p| (100..300).contains(&p.id)));
    let id = poison(other, 17);
    let text = stopped_by(&ctx, &mut sim, &mut particles, id);
    let device = format!("{} ({})", entry.info.index, entry.info.name);
    assert!(
        text.starts_with(&format!("the snow share's device, {device}: ")),
        "{text}"
    );
}

#[test]
fn the_wind_steps_at_its_own_step_and_the_report_counts_what_ran() {
    let ctx = context();
    // A wind step every third frame.
    let scene = flat("");
    let overrides = Overrides {
        particles: Some(256),
        wind_every: Some(3),
        ..Default::default()
    };
    let (mut sim, mut particles) = start(&ctx, &scene, &overrides);
    assert!(sim.solves_wind());
    let before = sim.wind_samples().unwrap().expect("a wind");
    for frame in 1..=7u64 {
        step(&ctx, &mut sim, &mut particles).unwrap();
        assert_eq!(sim.wind_steps(), frame / 3, "after frame {frame}");
    }
    let after = sim.wind_samples().unwrap().expect("a wind");
    assert_eq!(before.points.len(), after.points.len());
    // The positions stay, the solved wind moved on from the start-up solve.
    for (a, b) in before.points.iter().zip(&after.points).step_by(2) {
        assert_eq!(a, b);
    }
    assert_ne!(
        before.points, after.points,
        "two wind steps changed nothing"
    );
    sim.check().unwrap();
    let report = sim.report().unwrap();
    assert_eq!(report.particles, 256);
    assert_eq!(report.wind_steps, 2);
    // The flat scene's uniform inflow is divergence-free: the solves converge at once.
    assert!(
        report.wind_iterations.is_finite() && report.wind_iterations >= 0.0,
        "{report:?}"
    );
    // Every respawn follows a landing or a top/side exit; the ledger holds (checked above).
    assert!(report.respawned >= report.landed, "{report:?}");
}

#[test]
fn the_wind_alone_runs_no_particles() {
    let ctx = context();
    let scene = flat("");
    let overrides = Overrides {
        simulate: Some((true, false)),
        wind_every: Some(1),
        ..Default::default()
    };
    let (mut sim, mut particles) = start(&ctx, &scene, &overrides);
    assert_eq!(sim.particle_count(), 0);
    assert_eq!(sim.ground_vertices(), 0, "nothing lays snow");
    step(&ctx, &mut sim, &mut particles).unwrap();
    let report = sim.report().unwrap();
    assert_eq!((report.particles, report.landed), (0, 0));
    assert_eq!(report.wind_steps, 1);
}

#[test]
fn overrides_that_contradict_the_scene_are_refused_with_the_option_named() {
    let scene = flat("");
    let ground = snowsim::scene::ground_of(&scene).unwrap();
    let frozen = Overrides {
        simulate: Some((false, true)),
        wind_every: Some(2),
        ..Default::default()
    };
    let err = SimSetup::new(&scene, &ground, &frozen)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--wind-every") && err.contains("does not step"),
        "{err}"
    );
    let zero = Overrides {
        wind_every: Some(0),
        ..Default::default()
    };
    let err = SimSetup::new(&scene, &ground, &zero)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--wind-every 0") && err.contains("1..=10000"),
        "{err}"
    );
}
