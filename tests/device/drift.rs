//! Drifting snow (issue 28) on PoCL: a ridge across a strong wind ends with its crest scoured
//! and its lee loaded, against the same run with `ground.drift = false`; the ledger holds;
//! the sort mode changes nothing; below the threshold nothing moves; above it the cover's
//! centre of mass moves downwind. Where the regions lie comes from the scene's own geometry
//! (a Gaussian ridge across the middle of the domain, `snowsim scene ridge`).

use std::path::Path;

use snowsim::cl::{Context, DeviceBuffer, OutputBuffer};
use snowsim::particle::Particle;
use snowsim::scene::{Scene, SortKey, SortMode};
use snowsim::sim::{Overrides, Simulation};

use crate::common::context;
use crate::sim::start;

/// A 30 m ridge (half-width at half height 60 m) across the middle of a 400 m square, its
/// crest along x at y = 200 m, under a 12 m/s northerly wind (from +y towards −y: the
/// windward slope is north of the crest, the lee south of it), snow accelerated 2 000 times,
/// `extra` appended (a `[ground]` key, say). The wind is solved as the snow falls.
pub(crate) fn ridge(extra: &str) -> Scene {
    scene(&format!(
        "name = \"Drift ridge\"\n\
         [domain]\nheightmap = \"ridge.png\"\nsize = [400.0, 400.0]\nrelief = 30.0\n\
         top = 150.0\ncells = [20, 40]\nlayers = 8\ngrading = 1.25\n\
         [wind]\ndirection = [0.0, -1.0]\nspeed = 12.0\nreference_height = 10.0\n\
         profile = \"log\"\nroughness = 0.01\npressure_iterations = 50\n\
         [snow]\nparticles = 16384\nrate = 0.01\nseed = 1\n\
         [time]\nstep = 0.1\nacceleration = 2000.0\n\
         [ground]\n{extra}\n"
    ))
}

/// A flat 200 m square under a wind of `speed` m/s at 10 m along +x, `particles` parcels, the
/// snow accelerated `acceleration` times.
pub(crate) fn flat(speed: f64, particles: usize, acceleration: f64, extra: &str) -> Scene {
    scene(&format!(
        "name = \"Drift flat\"\n\
         [domain]\nflat = true\nsize = [200.0, 200.0]\ntop = 60.0\ncells = [10, 10]\n\
         layers = 6\ngrading = 1.2\n\
         [wind]\ndirection = [1.0, 0.0]\nspeed = {speed}\nreference_height = 10.0\n\
         profile = \"log\"\nroughness = 0.001\n\
         [snow]\nparticles = {particles}\nseed = 1\n\
         [time]\nstep = 0.1\nacceleration = {acceleration}\n\
         [ground]\n{extra}\n"
    ))
}

/// `text` as if read from `scenes/` (its heightmap named relative to it).
fn scene(text: &str) -> Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/drift_test.toml");
    Scene::from_toml(text, &path).unwrap()
}

/// The scene started, sorted by `sort`, its wind solved as it runs (`wind`) or once at the
/// start and kept.
pub(crate) fn begin(
    ctx: &Context,
    scene: &Scene,
    sort: SortMode,
    wind: bool,
) -> (Simulation, DeviceBuffer<Particle>) {
    let overrides = Overrides {
        sort: Some(sort),
        simulate: Some((wind, true)),
        ..Default::default()
    };
    start(ctx, scene, &overrides)
}

/// Runs `frames` frames; with `checked`, checks the invariants (the ledger among them) every
/// 50 and at the end.
pub(crate) fn run(
    ctx: &Context,
    sim: &mut Simulation,
    particles: &mut DeviceBuffer<Particle>,
    frames: usize,
    checked: bool,
) {
    for frame in 0..frames {
        let mut timeline = ctx.timeline();
        sim.step(ctx, &mut OutputBuffer::Device(particles), &mut timeline)
            .unwrap();
        if checked && frame % 50 == 49 {
            ctx.finish().unwrap();
            sim.check().unwrap();
        }
    }
    ctx.finish().unwrap();
    if checked {
        sim.check().unwrap();
    }
}

/// Lays `depth(x, y)` metres of snow on `sim`'s cover by hand, outside the ledger (which starts
/// from an empty ground: the runs after it are not checked); returns the units per cover vertex.
pub(crate) fn lay_snow(sim: &mut Simulation, depth: impl Fn(f64, f64) -> f64) -> Vec<u64> {
    let cover = sim.snow_mut().unwrap().cover_mut();
    let unit = cover.unit_volume();
    let units: Vec<u64> = cover
        .mesh
        .vertices
        .iter()
        .zip(&cover.geometry.area)
        .map(|(p, &area)| (depth(p[0], p[1]) * f64::from(area) / unit) as u64)
        .collect();
    cover.set_volumes(&units).unwrap();
    units
}

/// A pile 20 cm deep within 30 m of (70, 100).
fn pile_depth(x: f64, y: f64) -> f64 {
    let (dx, dy) = (x - 70.0, y - 100.0);
    if dx * dx + dy * dy < 30.0 * 30.0 {
        0.2
    } else {
        0.0
    }
}

/// Depth per wind-mesh ground vertex and the vertices' positions, after `frames` frames.
fn ground_after(scene: &Scene, frames: usize) -> (Vec<f32>, Vec<[f64; 3]>, Simulation) {
    let ctx = context();
    let (mut sim, mut particles) = begin(&ctx, scene, SortMode::Off, true);
    run(&ctx, &mut sim, &mut particles, frames, true);
    let snow = sim.snow().unwrap();
    let depths = snow.cover().ground_depths().unwrap();
    let nc = snow.cover().mesh.coarse_vertices;
    let positions = snow.cover().mesh.vertices[..nc].to_vec();
    (depths, positions, sim)
}

/// Mean depth over the ground vertices with `lo <= y <= hi`, away from the sides (x in
/// [40, 360]).
fn band(depths: &[f32], positions: &[[f64; 3]], lo: f64, hi: f64) -> f64 {
    let picked: Vec<f64> = depths
        .iter()
        .zip(positions)
        .filter(|(_, p)| p[1] >= lo && p[1] <= hi && p[0] >= 40.0 && p[0] <= 360.0)
        .map(|(&d, _)| f64::from(d))
        .collect();
    assert!(
        picked.len() >= 10,
        "{} vertices in y [{lo}, {hi}]",
        picked.len()
    );
    picked.iter().sum::<f64>() / picked.len() as f64
}

/// The ratios on the ridge: the lee slope (y 110–180 m) against the windward slope
/// (220–290 m), the crest with its upper windward slope (190–240 m) against the flat ground
/// upwind (280–340 m: past the crest's influence, and more than three saturation lengths from
/// the upwind side, where nothing blows in).
struct Ratios {
    lee: f64,
    lee_over_windward: f64,
    crest_over_upwind: f64,
}

fn ratios(depths: &[f32], positions: &[[f64; 3]]) -> Ratios {
    let lee = band(depths, positions, 110.0, 180.0);
    let windward = band(depths, positions, 220.0, 290.0);
    let crest = band(depths, positions, 190.0, 240.0);
    let upwind = band(depths, positions, 280.0, 340.0);
    Ratios {
        lee,
        lee_over_windward: lee / windward,
        crest_over_upwind: crest / upwind,
    }
}

#[test]
fn drift_scours_the_crest_and_loads_the_lee_of_a_ridge() {
    const FRAMES: usize = 300;
    let (on, positions, mut sim) = ground_after(&ridge(""), FRAMES);
    let (off, _, mut sim_off) = ground_after(&ridge("drift = false"), FRAMES);
    let (r_on, r_off) = (ratios(&on, &positions), ratios(&off, &positions));
    let report = sim.report().unwrap();
    let report_off = sim_off.report().unwrap();
    let summary = format!(
        "drift on: lee {:.3} m, lee/windward {:.2}, crest/upwind {:.2}; off: lee {:.3} m, \
         lee/windward {:.2}, crest/upwind {:.2}; ground {:.0} m³ on, {:.0} m³ off; {:?}",
        r_on.lee,
        r_on.lee_over_windward,
        r_on.crest_over_upwind,
        r_off.lee,
        r_off.lee_over_windward,
        r_off.crest_over_upwind,
        report.deposited_m3,
        report_off.deposited_m3,
        report.drift
    );
    assert!(r_on.lee_over_windward >= 1.5, "{summary}");
    assert!(r_on.lee >= 1.3 * r_off.lee, "{summary}");
    assert!(r_on.crest_over_upwind < 0.6, "{summary}");
    for r in [r_off.lee_over_windward, r_off.crest_over_upwind] {
        assert!((0.6..=1.6).contains(&r), "{summary}");
    }
    let total = report.deposited_m3 / report_off.deposited_m3;
    assert!((0.8..=1.2).contains(&total), "{summary}");
    let drift = report.drift.expect("drift on");
    assert!(drift.eroded_m3 > 0.0, "{summary}");
    assert!(report_off.drift.is_none());
}

/// The ridge under a 20 m/s wind (u* near 1 m/s on the crest), so that the wind lifts snow
/// into suspension as well as saltation.
fn stormy_ridge(extra: &str) -> Scene {
    let mut scene = ridge(extra);
    scene.wind.speed = 20.0;
    scene
}

/// The particles' states sorted by id (the array order is the sort's).
fn by_id(sim: &Simulation) -> Vec<[u32; 17]> {
    let mut states = sim.snow().unwrap().particle_states().unwrap();
    states.sort_by_key(|p| p.id);
    states.iter().map(|p| p.bits()).collect()
}

#[test]
fn the_sort_mode_changes_nothing_with_drift_and_suspension_on() {
    let ctx = context();
    for key in [SortKey::Tetrahedron, SortKey::Hilbert] {
        let mut scene = stormy_ridge("");
        scene.snow.sort_key = key;
        let mut runs = Vec::new();
        // Sorting one frame in 3 or 4 leaves the frames between in the last sort's order.
        for (sort, every) in [
            (SortMode::Off, 1),
            (SortMode::Full, 1),
            (SortMode::Partial, 1),
            (SortMode::Partial, 3),
            (SortMode::Full, 4),
        ] {
            scene.snow.sort_every = every;
            let (mut sim, mut particles) = begin(&ctx, &scene, sort, true);
            run(&ctx, &mut sim, &mut particles, 60, true);
            let snow = sim.snow().unwrap();
            let ledger = snow.ledger().unwrap();
            assert!(
                ledger.eroded > 0,
                "{key:?}, {sort:?}: the wind moved no snow"
            );
            assert!(
                ledger.entrained > 0 && ledger.laid_suspended > 0 && ledger.suspended > 0,
                "{key:?}, {sort:?}: nothing went through suspension: {ledger:?}"
            );
            let sort = format!("{sort:?} every {every}");
            runs.push((sort, snow.cover().volumes().unwrap(), by_id(&sim), ledger));
        }
        for (sort, cover, particles, ledger) in &runs[1..] {
            assert!(
                cover == &runs[0].1,
                "{key:?}, {sort:?}: the cover differs from the unsorted run's"
            );
            assert!(
                particles == &runs[0].2,
                "{key:?}, {sort:?}: the parcels (their suspended snow with them) differ from the \
                 unsorted run's"
            );
            assert_eq!(ledger, &runs[0].3, "{key:?}, {sort:?}");
        }
    }
}

#[test]
fn a_unit_of_suspended_snow_made_from_nothing_breaks_the_ledger() {
    let ctx = context();
    let (mut sim, mut particles) = begin(&ctx, &stormy_ridge(""), SortMode::Off, true);
    run(&ctx, &mut sim, &mut particles, 20, true);
    let snow = sim.snow_mut().unwrap();
    let mut units = snow.particles().suspended_units().unwrap();
    units[7] += 1;
    snow.particles_mut().write_suspended(&units).unwrap();
    let err = sim.check().unwrap_err().to_string();
    assert!(err.contains("suspension does not balance"), "{err}");
}

#[test]
fn below_the_threshold_the_drift_changes_nothing() {
    // 3 m/s at 10 m over z0 = 1 mm: u* = 0.41 · 3 / ln(z1 / z0) ≈ 0.15 m/s at the first level,
    // under the 0.25 m/s threshold.
    let ctx = context();
    let mut covers = Vec::new();
    for extra in ["", "drift = false"] {
        let (mut sim, mut particles) =
            begin(&ctx, &flat(3.0, 4096, 100.0, extra), SortMode::Off, false);
        run(&ctx, &mut sim, &mut particles, 100, true);
        let snow = sim.snow().unwrap();
        if let Some(drift) = snow.drifting() {
            let u = drift.friction_velocity().unwrap();
            let max = u.iter().fold(0.0f32, |m, &x| m.max(x));
            assert!(max > 0.05 && max < 0.25, "u* up to {max} m/s");
            assert_eq!(drift.counts().unwrap().eroded, 0);
            assert_eq!(
                snow.ledger().unwrap().entrained,
                0,
                "suspension below the threshold"
            );
        }
        covers.push(snow.cover().volumes().unwrap());
    }
    assert!(
        covers[0] == covers[1],
        "the drift moved snow below the threshold"
    );
}

#[test]
fn above_the_threshold_the_cover_moves_downwind() {
    // 15 m/s at 10 m over z0 = 1 mm: u* ≈ 0.66 m/s at the first level (6 m), a saltation flux
    // of 1e-4 m²/s, 0.5 m²/s accelerated 5 000 times: over 10 s it moves about a third of a
    // pile 20 cm deep and 60 m wide. One parcel (its landings are negligible): the pile laid
    // upwind drifts along +x, and no unit is made or lost.
    let ctx = context();
    let mut centres = Vec::new();
    for extra in ["", "drift = false"] {
        let (mut sim, mut particles) =
            begin(&ctx, &flat(15.0, 1, 5000.0, extra), SortMode::Off, false);
        let pile = lay_snow(&mut sim, pile_depth);
        let before: u128 = pile.iter().map(|&u| u128::from(u)).sum();
        // Not checked: the ledger starts from an empty ground, and the pile was laid by hand.
        run(&ctx, &mut sim, &mut particles, 100, false);
        let snow = sim.snow().unwrap();
        let volumes = snow.cover().volumes().unwrap();
        let vertices = &snow.cover().mesh.vertices;
        let total: u128 = volumes.iter().map(|&u| u128::from(u)).sum();
        let blown = snow.ledger().unwrap().blown;
        // The pile's units are all still there, moved, or blown out (the parcel's landings
        // add at most a few).
        assert!(
            total + blown >= before,
            "{total} + {blown} blown < {before}"
        );
        let moment: f64 = volumes
            .iter()
            .zip(vertices)
            .map(|(&u, p)| u as f64 * p[0])
            .sum();
        centres.push(moment / total as f64);
    }
    let [on, off] = [centres[0], centres[1]];
    assert!(
        (off - 70.0).abs() < 2.0,
        "without drift the pile stays at x = {off:.1} m"
    );
    assert!(
        on > off + 5.0,
        "with drift the centre of mass is at x = {on:.1} m, without {off:.1} m"
    );
}

#[test]
fn suspension_alone_carries_a_pile_downwind() {
    // The pile of `above_the_threshold_the_cover_moves_downwind` under the same wind (u* ≈ 0.66
    // m/s), saltation all but off (a saturation length of 100 km: its flux grows from nothing
    // over the 200 m domain to a thousandth of its equilibrium), with 16 384 parcels entering
    // 10 m above the ground, so that every cell of the bottom layer holds some to carry what the
    // wind lifts, and a snowfall too light to matter. With suspension the lifted snow rides the
    // parcels downwind (they fall at about 1 m/s through the 6 m bottom layer in a wind of
    // 10–14 m/s); without, the pile stays. The parcels carry it at the wind interpolated in the
    // bottom layer of tetrahedra (zero at the ground, about 5 m/s at the loaded parcels' mean
    // height of 2 m), so most hops are short (about 10 m) and laid snow is lifted again: on
    // PoCL, over 30 s, 32 % of the pile is lifted (gross), 5 % is in the air at the end, the
    // centre of the laid snow moves 0.8 m and 0.4 % of the pile lies beyond x = 120 m (0.008 %
    // without).
    let ctx = context();
    let mut results = Vec::new();
    let saltation_off = "saturation_length = 99999.0";
    for extra in [
        saltation_off,
        &format!("{saltation_off}\nsuspension = false"),
    ] {
        let mut scene = flat(15.0, 16384, 5000.0, extra);
        scene.snow.rate = 1e-7;
        scene.snow.source_height = 10.0;
        let (mut sim, mut particles) = begin(&ctx, &scene, SortMode::Partial, false);
        let pile = lay_snow(&mut sim, pile_depth);
        let before: u128 = pile.iter().map(|&u| u128::from(u)).sum();
        run(&ctx, &mut sim, &mut particles, 300, false);
        let snow = sim.snow().unwrap();
        let volumes = snow.cover().volumes().unwrap();
        let vertices = &snow.cover().mesh.vertices;
        let total: u128 = volumes.iter().map(|&u| u128::from(u)).sum();
        // Laid more than 20 m downwind of the pile's edge.
        let far: u128 = volumes
            .iter()
            .zip(vertices)
            .filter(|(_, p)| p[0] >= 120.0)
            .map(|(&u, _)| u128::from(u))
            .sum();
        let moment: f64 = volumes
            .iter()
            .zip(vertices)
            .map(|(&u, p)| u as f64 * p[0])
            .sum();
        let ledger = snow.ledger().unwrap();
        assert!(ledger.suspension_balances(), "{ledger:?}");
        results.push((
            moment / total as f64,
            far as f64 / before as f64,
            ledger.entrained as f64 / before as f64,
        ));
    }
    let [(x_on, far_on, lifted_on), (x_off, far_off, lifted_off)] = [results[0], results[1]];
    let summary = format!(
        "suspension on: centre x {x_on:.1} m, {:.3} % of the pile beyond x = 120 m, {:.2} % \
         lifted (gross); off: {x_off:.1} m, {:.3} %, {:.2} %",
        100.0 * far_on,
        100.0 * lifted_on,
        100.0 * far_off,
        100.0 * lifted_off
    );
    assert_eq!(lifted_off, 0.0, "{summary}");
    assert!(
        (x_off - 70.0).abs() < 2.0,
        "without suspension the pile stays: {summary}"
    );
    assert!(x_on > x_off + 0.4, "{summary}");
    assert!(far_on > 0.002 && far_on > 10.0 * far_off, "{summary}");
}

#[test]
fn the_wind_lifts_what_the_suspension_law_says() {
    // A flat field under 15 m/s (u* ≈ 0.66 m/s) with 2 cm of snow everywhere and parcels in
    // every cell of the bottom layer: one frame's lifted units equal the host's sum over the
    // cover vertices whose cell holds a parcel of ⌊a Δt w_s(z_e) c(u*, z_e) A / (ρ unit)⌋
    // (`snowsim::snow::lift_rate`, in f64, from the device's own u*), within the f32 rounding
    // of the kernel.
    let ctx = context();
    let mut scene = flat(15.0, 16384, 5000.0, "");
    scene.snow.rate = 1e-7;
    scene.snow.source_height = 10.0;
    let (mut sim, mut particles) = begin(&ctx, &scene, SortMode::Off, false);
    lay_snow(&mut sim, |_, _| 0.02);
    let unit = sim.snow().unwrap().cover().unit_volume();
    // The first frame counts the parcels in their cells (and lifts nothing: none was counted).
    run(&ctx, &mut sim, &mut particles, 1, false);
    let snow = sim.snow().unwrap();
    assert_eq!(snow.ledger().unwrap().entrained, 0);
    let suspension = snow.suspension().expect("suspension on by default");
    let counts = suspension.cell_counts().unwrap();
    let cells = suspension.cells().unwrap();
    let drift = snow.drifting().unwrap();
    let u = drift.friction_velocity().unwrap();
    let volumes = snow.cover().volumes().unwrap();
    let settings = *drift.settings();
    let mesh = &snow.cover().mesh;
    let r = f64::from(mesh.refinement);
    let scale = 5000.0 * scene.time.step / (settings.snow_density * unit);
    let mut want = 0.0f64;
    let mut lifting = 0;
    for (v, (p, n)) in mesh.parents.iter().enumerate() {
        if counts[cells[v] as usize] == 0 {
            continue;
        }
        let z1: f64 = (0..3)
            .filter(|&k| n[k] > 0)
            .map(|k| f64::from(n[k]) / r * f64::from(drift.level_height()[p[k] as usize]))
            .sum();
        let area = f64::from(snow.cover().geometry.area[v]);
        let units = scale * snowsim::snow::lift_rate(&settings, f64::from(u[v]), 0.5 * z1) * area;
        let lifted = units.floor().min(volumes[v] as f64);
        if lifted >= 1.0 {
            lifting += 1;
        }
        want += lifted;
    }
    let populated = counts.iter().filter(|&&c| c > 0).count();
    assert!(
        populated * 10 >= counts.len() * 9,
        "{populated} of {} cells hold a parcel",
        counts.len()
    );
    assert!(lifting > 100, "{lifting} vertices lift snow");
    run(&ctx, &mut sim, &mut particles, 1, false);
    let got = sim.snow().unwrap().ledger().unwrap().entrained as f64;
    assert!(
        (got / want - 1.0).abs() < 1e-4,
        "lifted {got} units, the law says {want}"
    );
}

#[test]
fn aged_snow_holds_against_a_wind_that_lifts_fresh_snow() {
    // 9 m/s at 10 m over z0 = 1 mm: u* ≈ 0.4 m/s at the first level, above fresh snow's 0.25
    // m/s and below aged snow's 0.6. With ageing over τ = 1 s the pile's threshold passes 0.4
    // m/s once its snow is 0.56 s old (0.6 − 0.35 e^(−age/τ)): the wind moves it in the first
    // frames, then hardly; without ageing it keeps moving. The pile is laid by hand, so its
    // age counts from the first frame (real time, 0.1 s a frame, whatever the acceleration).
    let ctx = context();
    let mut eroded = Vec::new();
    for extra in ["ageing_time = 1.0", ""] {
        let (mut sim, mut particles) =
            begin(&ctx, &flat(9.0, 1, 5000.0, extra), SortMode::Off, false);
        lay_snow(&mut sim, pile_depth);
        let mut at = Vec::new();
        for frames in [20, 80] {
            run(&ctx, &mut sim, &mut particles, frames, false);
            at.push(
                sim.snow()
                    .unwrap()
                    .drifting()
                    .unwrap()
                    .counts()
                    .unwrap()
                    .eroded,
            );
        }
        let drift = sim.snow().unwrap().drifting().unwrap();
        let u = drift.friction_velocity().unwrap();
        let max = u.iter().fold(0.0f32, |m, &x| m.max(x));
        assert!(max > 0.3 && max < 0.55, "u* up to {max} m/s");
        if let Some(age) = drift.snow_age().unwrap() {
            // The pile's middle, never reached by new snow: the first frame finds it laid (age
            // 0), the 99 after it age it by 9.9 s.
            let volumes = sim.snow().unwrap().cover().volumes().unwrap();
            let oldest = age
                .iter()
                .zip(&volumes)
                .filter(|(_, v)| **v > 0)
                .fold(0.0f32, |m, (&a, _)| m.max(a));
            assert!(
                (oldest - 9.9).abs() < 0.01,
                "the oldest snow is {oldest} s old"
            );
        }
        eroded.push(at);
    }
    let (aged, fresh) = (&eroded[0], &eroded[1]);
    // Frames 20–100: the aged pile holds; what still moves is the snow the first frames laid
    // downwind, young where it landed (on PoCL about 5 % of what moves without ageing).
    let later = |e: &Vec<u64>| e[1] - e[0];
    let summary = format!("eroded after 20 and 100 frames: ageing {aged:?}, none {fresh:?}");
    assert!(aged[0] > 0 && aged[0] < fresh[0], "{summary}");
    assert!(10 * later(aged) < later(fresh), "{summary}");
}
