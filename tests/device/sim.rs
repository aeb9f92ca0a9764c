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
    let mut sim = Simulation::new(ctx, setup_of(scene, overrides)).unwrap();
    let particles = reset(ctx, &mut sim).unwrap();
    (sim, particles)
}

/// The simulation `scene` and `overrides` settle.
fn setup_of(scene: &Scene, overrides: &Overrides) -> SimSetup {
    let ground = snowsim::scene::ground_of(scene).unwrap();
    SimSetup::new(scene, &ground, overrides).unwrap()
}

/// `sim`'s particles put at their start, in a buffer of their own, waited for.
fn reset(ctx: &Context, sim: &mut Simulation) -> snowsim::sim::Result<DeviceBuffer<Particle>> {
    let mut particles = DeviceBuffer::zeroed(ctx, sim.particle_count().max(1)).unwrap();
    let mut timeline = ctx.timeline();
    sim.reset(
        ctx,
        &mut OutputBuffer::Device(&mut particles),
        &mut timeline,
    )?;
    ctx.finish().unwrap();
    Ok(particles)
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
    let state = snow.particle_states().unwrap();
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
    let state = other.particle_states().unwrap();
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

/// The flat scene under a strong wind whose snow drifts, is lifted into suspension and raises
/// the wind's ground every 0.2 s (as the command line's split tests use it).
fn drifting_flat() -> Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("profile = \"uniform\"", "profile = \"log\"")
        .replace(
            "pressure_iterations = 20",
            "pressure_iterations = 20\nground_refresh = 0.2\nground_refresh_lag = 3",
        )
        .replace("speed = 3.0", "speed = 12.0")
        .replace(
            "[time]",
            "[ground]\ndrift = true\nsuspension = true\n\n[time]\nacceleration = 2000.0",
        );
    Scene::from_toml(&text, &path).unwrap()
}

/// What a run's ranks must agree on: the counts, the cover's depth on every ground vertex
/// and the ground's heights after the refreshes.
type RunState = (
    snowsim::snow::Counters,
    u64,
    Vec<f32>,
    Vec<f64>,
    Option<snowsim::sim::DriftReport>,
);

/// `frames` frames of `sim`, checked at the end; its state.
fn run_state(
    ctx: &Context,
    sim: &mut Simulation,
    particles: &mut DeviceBuffer<Particle>,
    frames: usize,
) -> RunState {
    for _ in 0..frames {
        step(ctx, sim, particles).unwrap();
    }
    sim.check().expect("the checks hold across the shares");
    let report = sim.report().unwrap();
    let counters = snowsim::snow::Counters {
        landed: report.landed,
        wrapped: report.wrapped,
        lost: report.lost,
        ..Default::default()
    };
    let depths = sim.snow().unwrap().cover().ground_depths().unwrap();
    let refreshes = report.ground_refresh.as_ref().map_or(0, |r| r.refreshes);
    (
        counters,
        refreshes,
        depths,
        sim.ground_heights().unwrap(),
        report.drift,
    )
}

/// Runs `rank0` as rank 0 of as many ranks as `setups` in one process (threads and
/// channels: the in-process backend that `mpirun` replaces), on the simulation of
/// `setups[0]`, reset; every other rank `k` serves its share of `setups[k]` on a context of
/// its own. Rank 0's simulation is dropped when `rank0` returns, which ends the others.
/// Returns what `rank0` returned and each other rank's end of serving, in rank order.
fn over_ranks<R>(
    setups: Vec<SimSetup>,
    rank0: impl FnOnce(&Context, &mut Simulation, &mut DeviceBuffer<Particle>) -> R,
) -> (R, Vec<snowsim::sim::Result<()>>) {
    use snowsim::comm::Local;
    let mut comms = Local::group(setups.len(), std::time::Duration::from_secs(60));
    let first = comms.remove(0);
    let mut setups = setups.into_iter();
    let own = setups.next().expect("rank 0's setup");
    std::thread::scope(|scope| {
        let followers: Vec<_> = comms
            .into_iter()
            .zip(setups)
            .map(|(comm, setup)| {
                scope.spawn(move || {
                    let ctx = context();
                    let mut share =
                        snowsim::sim::ranks::RankFollower::from_setup(&ctx, Box::new(comm), setup)
                            .unwrap();
                    share.serve()
                })
            })
            .collect();
        let result = {
            let ctx = context();
            let mut sim = Simulation::over_ranks(&ctx, own, Box::new(first)).unwrap();
            let mut particles = reset(&ctx, &mut sim).unwrap();
            rank0(&ctx, &mut sim, &mut particles)
        };
        let ends = followers.into_iter().map(|f| f.join().unwrap()).collect();
        (result, ends)
    })
}

/// The parcels split across three ranks in one process (threads and channels: the in-process
/// backend that `mpirun` runs replace): rank 0 holds the wind, the cover and its drift, the
/// others step their shares on contexts of their own, and the run equals one rank's exactly,
/// its checks (every id once on every rank, the ledger over all of them) holding.
#[test]
fn ranks_in_one_process_give_the_state_of_one_rank() {
    let scene = drifting_flat();
    let overrides = Overrides {
        particles: Some(5000),
        wind_every: Some(1),
        ..Default::default()
    };
    let ctx = context();
    let (mut sim, mut particles) = start(&ctx, &scene, &overrides);
    let one = run_state(&ctx, &mut sim, &mut particles, 40);
    assert!(one.0.landed > 20, "{:?}", one.0);
    assert!(one.1 > 0, "no ground refresh");
    assert!(
        one.4
            .as_ref()
            .is_some_and(|d| d.eroded_m3 > 0.0 && d.suspended_m3 > 0.0)
    );
    drop(sim);

    let setup = setup_of(&scene, &overrides);
    let (ranks, ends) = over_ranks(vec![setup; 3], |ctx, sim, particles| {
        let shares = sim.rank_report().expect("shares over ranks");
        assert_eq!(shares.len(), 3);
        assert_eq!(shares.iter().map(|s| s.particles).sum::<usize>(), 5000);
        run_state(ctx, sim, particles, 40)
    });
    for end in ends {
        end.expect("the other ranks serve until rank 0 ends");
    }
    assert_eq!(one.0, ranks.0, "counts");
    assert_eq!(one.1, ranks.1, "refreshes");
    assert!(one.2 == ranks.2, "the cover's depths differ");
    assert!(one.3 == ranks.3, "the ground's heights differ");
    assert_eq!(one.4, ranks.4, "the drift's report");
}

/// A rank that ends without serving (its process died) stops rank 0's run at its first
/// exchange (here the reset) with an error naming it, not a hang.
#[test]
fn a_rank_that_is_gone_stops_rank_0_naming_it() {
    use snowsim::comm::Local;
    let scene = drifting_flat();
    let overrides = Overrides {
        particles: Some(600),
        wind_every: Some(1),
        ..Default::default()
    };
    let mut comms = Local::group(2, std::time::Duration::from_secs(30));
    let gone = comms.pop().unwrap();
    let ctx = context();
    let setup = setup_of(&scene, &overrides);
    let mut sim = Simulation::over_ranks(&ctx, setup, Box::new(comms.remove(0))).unwrap();
    drop(gone);
    let Err(err) = reset(&ctx, &mut sim) else {
        panic!("a reset with rank 1 gone went through");
    };
    let err = err.to_string();
    assert!(err.contains("rank 1"), "{err}");
}

/// Every rank solves the wind again; `--check` compares each rank's field with rank 0's
/// and names a rank whose wind is not rank 0's (here one started on a scene with another
/// wind speed, as ranks given different inputs would be).
#[test]
fn a_rank_whose_wind_differs_fails_the_check_naming_it() {
    let overrides = Overrides {
        particles: Some(600),
        wind_every: Some(1),
        ..Default::default()
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let other = Scene::from_toml(
        &std::fs::read_to_string(&path)
            .unwrap()
            .replace("profile = \"uniform\"", "profile = \"log\"")
            .replace("speed = 3.0", "speed = 11.0"),
        &path,
    )
    .unwrap();
    let setups = vec![
        setup_of(&drifting_flat(), &overrides),
        setup_of(&other, &overrides),
    ];
    let (err, ends) = over_ranks(setups, |ctx, sim, particles| {
        for _ in 0..3 {
            step(ctx, sim, particles).unwrap();
        }
        sim.check().unwrap_err().to_string()
    });
    assert!(
        err.contains("rank 1") && err.contains("wind field differs"),
        "{err}"
    );
    for end in ends {
        end.unwrap();
    }
}

/// A rank that fails carrying out a frame replies with its error, and rank 0's run stops with
/// it, naming the rank (here a rank whose scene has no snow in suspension, where rank 0's
/// sends it cells); the failed rank ends with the same error.
#[test]
fn a_rank_that_fails_a_frame_stops_rank_0_with_its_error() {
    let overrides = Overrides {
        particles: Some(600),
        wind_every: Some(1),
        ..Default::default()
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "[time]",
        "[ground]\ndrift = true\nsuspension = false\n\n[time]",
    );
    let other = Scene::from_toml(&text, &path).unwrap();
    let setups = vec![
        setup_of(&drifting_flat(), &overrides),
        setup_of(&other, &overrides),
    ];
    let (err, ends) = over_ranks(setups, |ctx, sim, particles| {
        step(ctx, sim, particles).unwrap_err().to_string()
    });
    assert!(
        err.contains("rank 1") && err.contains("suspension"),
        "{err}"
    );
    let theirs = ends[0].as_ref().unwrap_err().to_string();
    assert!(theirs.contains("suspension"), "{theirs}");
}
