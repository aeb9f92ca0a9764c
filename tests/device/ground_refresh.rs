//! The ground refresh (issue 28 item 5) through the simulation on PoCL: the laid snow raises
//! the wind's ground by its depth per column on the clock and on demand, the snow's mesh moves
//! with it, a parcel the raised ground buried is moved up onto it, nothing of the ledger
//! changes, an unchanged ground is skipped, and a reset puts the bare ground back.

use snowsim::cl::OutputBuffer;
use snowsim::scene::SortMode;

use crate::common::context;
use crate::drift::{begin, flat, lay_snow, ridge, run};

#[test]
fn the_ridges_drifts_raise_the_winds_ground_on_the_clock() {
    // Every 2 s of 0.1 s frames, each refresh read at the start of its frame (20, 40, 60) and
    // applied 5 frames later (25, 45; the one read at 60 still held back after 60 frames),
    // each re-projecting the wind; the ledger holds throughout (checked every 50 frames).
    let ctx = context();
    let (mut sim, mut particles) = refreshed_ridge(&ctx, 2.0, 5);
    let bare = sim.ground_heights().unwrap();
    let levels_before = first_levels(&sim);
    sites_follow_the_levels(&sim);
    // The depths frame 20 reads are the cover after 19 frames; the ground stays bare until
    // frame 25 starts, and then stands on those depths, not on the deeper cover of frame 25.
    run(&ctx, &mut sim, &mut particles, 19, true);
    let read = sim.snow().unwrap().cover().ground_depths().unwrap();
    run(&ctx, &mut sim, &mut particles, 5, true);
    let held = sim.refresh_report().unwrap().unwrap();
    assert!(held.pending && held.refreshes == 0, "{held:?}");
    assert_eq!(
        sim.ground_heights().unwrap(),
        bare,
        "raised before its frame"
    );
    let later = sim.snow().unwrap().cover().ground_depths().unwrap();
    run(&ctx, &mut sim, &mut particles, 1, true);
    let applied = sim.refresh_report().unwrap().unwrap();
    assert!(!applied.pending && applied.refreshes == 1, "{applied:?}");
    assert_eq!(applied.each[0].lag_frames, 5);
    let heights = sim.ground_heights().unwrap();
    let mut grew = 0;
    for (c, (((&b, &h), &d), &l)) in bare.iter().zip(&heights).zip(&read).zip(&later).enumerate() {
        assert_eq!(
            h,
            b + f64::from(d),
            "column {c}: {b} m bare, {d} m of snow read, now {h} m"
        );
        grew += usize::from(l > d);
    }
    assert!(
        grew > 0,
        "no column's cover grew between the read and the application"
    );
    run(&ctx, &mut sim, &mut particles, 35, true);
    let report = sim.refresh_report().unwrap().unwrap();
    assert_eq!(report.off, None, "{report:?}");
    assert_eq!(report.refreshes + report.skipped, 2, "{report:?}");
    assert!(report.pending, "{report:?}");
    assert!(report.last_converged, "{report:?}");
    assert!(report.amortised_ms_per_frame > 0.0);
    // Each refresh that rebuilt the ground is listed with its phases; the longest is the max;
    // the plan's time is its own thread's, not in the frame's.
    assert_eq!(report.each.len() as u64, report.refreshes, "{report:?}");
    let longest = report.each.iter().map(|e| e.ms).fold(0.0, f64::max);
    assert!(longest <= report.max_ms && report.each.iter().all(|e| e.phases.total_ms <= e.ms));
    assert!(
        report
            .each
            .iter()
            .all(|e| e.phases.plan_ms > 0.0 && e.wait_ms <= e.ms)
    );
    // On demand: the ground now is the bare ground plus the depth per column, bit for bit in
    // f64 of the f32 depths (no column near half its air: nothing clamped).
    let depths = sim.snow().unwrap().cover().ground_depths().unwrap();
    assert!(sim.refresh_ground(&ctx).unwrap());
    // The refresh held back since frame 60 is dropped: this one read newer depths.
    let report = sim.refresh_report().unwrap().unwrap();
    assert!(!report.pending && report.dropped == 1, "{report:?}");
    assert_eq!(report.each.last().unwrap().lag_frames, 0);
    // The drift's first levels are measured from the raised ground: nearer it than over the
    // bare ground where the ground rose (the column's levels close up over it), the same
    // where it did not.
    let levels = first_levels(&sim);
    let (mut closer, mut same) = (0, 0);
    for ((&before, &after), &d) in levels_before.iter().zip(&levels).zip(&depths) {
        if d > 0.05 {
            assert!(
                after < before,
                "a first level at {after} m (over the bare ground {before} m) under {d} m of snow"
            );
            closer += 1;
        } else if d == 0.0 {
            assert_eq!(after, before, "a bare column's first level moved");
            same += 1;
        }
    }
    assert!(
        closer > 10,
        "{closer} first levels nearer the raised ground, {same} bare"
    );
    // The suspension's sites (where lifted snow enters the air), computed on the device after
    // the refresh, follow the moved levels: the host's law in f64, within float rounding.
    sites_follow_the_levels(&sim);
    let raised = sim.ground_heights().unwrap();
    let mut deepest = 0.0f32;
    for (c, ((&b, &r), &d)) in bare.iter().zip(&raised).zip(&depths).enumerate() {
        assert_eq!(
            r,
            b + f64::from(d),
            "column {c}: {b} m bare, {d} m of snow, now {r} m"
        );
        deepest = deepest.max(d);
    }
    assert!(deepest > 0.05, "the deepest snow is {deepest} m");
    // Nothing moved since: skipped.
    let before = sim.refresh_report().unwrap().unwrap();
    assert!(!sim.refresh_ground(&ctx).unwrap());
    assert_eq!(
        sim.refresh_report().unwrap().unwrap().skipped,
        before.skipped + 1
    );
    sim.check().unwrap();
    // A reset puts the bare ground back.
    reset(&ctx, &mut sim, &mut particles);
    assert_eq!(sim.ground_heights().unwrap(), bare);
}

#[test]
fn a_refresh_falling_due_applies_the_one_held_back_first_and_a_reset_drops_it() {
    // Every 0.5 s of 0.1 s frames, held back 8 frames: read at frames 5, 10 and 15; the one
    // read at 5 is applied at 10, when the next falls due (5 frames late, not 8), the one read
    // at 10 at 15; the one read at 15 still held back after 16 frames.
    let ctx = context();
    let (mut sim, mut particles) = refreshed_ridge(&ctx, 0.5, 8);
    let bare = sim.ground_heights().unwrap();
    run(&ctx, &mut sim, &mut particles, 16, true);
    let report = sim.refresh_report().unwrap().unwrap();
    assert_eq!(report.refreshes + report.skipped, 2, "{report:?}");
    assert!(report.each.iter().all(|e| e.lag_frames == 5), "{report:?}");
    assert!(report.pending && report.dropped == 0, "{report:?}");
    assert_ne!(
        sim.ground_heights().unwrap(),
        bare,
        "no refresh raised the ground"
    );
    // A reset drops the one held back and puts the bare ground back; nothing is applied in
    // the frames after it until the clock's next refresh is read and held back in turn.
    reset(&ctx, &mut sim, &mut particles);
    assert!(!sim.refresh_report().unwrap().unwrap().pending);
    assert_eq!(sim.ground_heights().unwrap(), bare);
    run(&ctx, &mut sim, &mut particles, 12, true);
    let report = sim.refresh_report().unwrap().unwrap();
    assert_eq!(report.refreshes + report.skipped, 1, "{report:?}");
    assert_eq!(report.each.first().map(|e| e.lag_frames), Some(5));
}

/// Puts `sim` back at its start (its particles into `particles`) and waits for it.
fn reset(
    ctx: &snowsim::cl::Context,
    sim: &mut snowsim::sim::Simulation,
    particles: &mut snowsim::cl::DeviceBuffer<snowsim::particle::Particle>,
) {
    let mut timeline = ctx.timeline();
    sim.reset(ctx, &mut OutputBuffer::Device(particles), &mut timeline)
        .unwrap();
    ctx.finish().unwrap();
}

/// The ridge's drifting snow, its ground refreshed every `every` simulated seconds and each
/// refresh applied `lag` frames after its read, started (partial sort, drift on).
fn refreshed_ridge(
    ctx: &snowsim::cl::Context,
    every: f64,
    lag: u32,
) -> (
    snowsim::sim::Simulation,
    snowsim::cl::DeviceBuffer<snowsim::particle::Particle>,
) {
    let mut scene = ridge("");
    scene.wind.ground_refresh = every;
    scene.wind.ground_refresh_lag = lag;
    begin(ctx, &scene, SortMode::Partial, true)
}

/// The suspension's sites on the device equal `snowsim::snow::suspension_sites` (the law on
/// the host, in f64) from the drift's first levels, within float rounding, at every vertex.
fn sites_follow_the_levels(sim: &snowsim::sim::Simulation) {
    let snow = sim.snow().unwrap();
    let levels = snow.drifting().unwrap().level_height();
    let want = snowsim::snow::suspension_sites(snow.cover(), levels);
    let got = snow.suspension().unwrap().site_values().unwrap();
    assert_eq!(got.len(), want.len());
    for (v, (g, w)) in got.iter().zip(&want).enumerate() {
        for k in 0..2 {
            assert!(
                (g[k] - w[k]).abs() <= 2e-5 * w[k].abs(),
                "cover vertex {v}: site {g:?} on the device, {w:?} by the law"
            );
        }
    }
}

#[test]
fn a_parcel_the_raised_ground_buries_is_moved_up_onto_it() {
    // A flat field with 3 m of snow laid by hand over its middle and 4096 parcels entering 4 m
    // above the ground: the refresh raises those columns by 3 m and buries the parcels below;
    // each is moved up onto the new surface, inside its tetrahedron, and the books are unchanged.
    let ctx = context();
    let mut scene = flat(3.0, 4096, 1.0, "drift = false");
    scene.snow.source_height = 4.0;
    scene.wind.ground_refresh = 0.0;
    let (mut sim, mut particles) = begin(&ctx, &scene, SortMode::Off, true);
    run(&ctx, &mut sim, &mut particles, 10, true);
    let square = |v: f64| (50.0..=150.0).contains(&v);
    lay_snow(
        &mut sim,
        |x, y| if square(x) && square(y) { 3.0 } else { 0.0 },
    );
    let ledger = |sim: &snowsim::sim::Simulation| {
        let l = sim.snow().unwrap().ledger().unwrap();
        (l.carried, l.landings, l.removed)
    };
    let books = ledger(&sim);
    assert!(sim.refresh_ground(&ctx).unwrap());
    let report = sim.refresh_report().unwrap().unwrap();
    assert!(report.buried_parcels > 50, "{report:?}");
    assert_eq!(report.lost_parcels, 0, "{report:?}");
    assert_eq!(ledger(&sim), books, "the refresh moved the books");
    // Every parcel lies in its tetrahedron (the walk's tolerance), so above the raised ground.
    let snow = sim.snow().unwrap();
    let geometry = &snow.mesh().geometry;
    let heights = sim.ground_heights().unwrap();
    let top_of_pile = heights.iter().cloned().fold(f64::MIN, f64::max);
    assert!(
        (top_of_pile - 3.0).abs() < 0.01,
        "the pile's top at {top_of_pile} m"
    );
    for p in snow.particle_states().unwrap() {
        let t = geometry.tets[p.tet as usize];
        let x: Vec<[f64; 3]> = t
            .iter()
            .map(|&v| geometry.coords[v as usize].map(f64::from))
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        let q = [p.pos[0], p.pos[1], p.pos[2]].map(f64::from);
        let bary = barycentrics(&x, q);
        assert!(
            bary.iter().all(|&b| b > -1e-3),
            "parcel {} at {q:?} is outside its tetrahedron {}: {bary:?}",
            p.id,
            p.tet
        );
        // Inside a tetrahedron of the moved mesh is above its ground; over the pile's middle,
        // away from its edge (which slopes over a cell or two of the 20 m grid), that is 3 m.
        let over_pile = (80.0..=120.0).contains(&q[0]) && (80.0..=120.0).contains(&q[1]);
        if over_pile {
            assert!(q[2] >= 2.95, "parcel {} at {q:?} is under the pile", p.id);
        }
    }
    // The moved parcels land on the pile in the frames that follow (not checked: the pile was
    // laid by hand, outside the ledger).
    run(&ctx, &mut sim, &mut particles, 10, false);
    let landed = ledger(&sim).1 - books.1;
    assert!(
        landed >= report.buried_parcels / 2,
        "{landed} landings after {} parcels were moved up",
        report.buried_parcels
    );
}

/// The drift's first-level height per wind-mesh ground vertex, m.
fn first_levels(sim: &snowsim::sim::Simulation) -> Vec<f32> {
    sim.snow()
        .unwrap()
        .drifting()
        .unwrap()
        .level_height()
        .to_vec()
}

/// The barycentric coordinates of `q` in the tetrahedron `x`.
fn barycentrics(x: &[[f64; 3]], q: [f64; 3]) -> [f64; 4] {
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let det = |a: [f64; 3], b: [f64; 3], c: [f64; 3]| {
        a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
            + a[2] * (b[0] * c[1] - b[1] * c[0])
    };
    let (e1, e2, e3, r) = (
        sub(x[1], x[0]),
        sub(x[2], x[0]),
        sub(x[3], x[0]),
        sub(q, x[0]),
    );
    let d = det(e1, e2, e3);
    let (b1, b2, b3) = (det(r, e2, e3) / d, det(e1, r, e3) / d, det(e1, e2, r) / d);
    [1.0 - b1 - b2 - b3, b1, b2, b3]
}

#[test]
fn every_vertex_of_a_column_stands_over_its_ground_vertex() {
    // The column map the refresh regrades by, against the mesh itself: each volume vertex has
    // the x and y of its column's ground vertex, and its level's order in height.
    let scene = ridge("");
    let domain = scene.build_domain(true).unwrap();
    let columns = domain.columns.as_ref().unwrap();
    let mut ground = vec![u32::MAX; columns.ground.len()];
    for (v, (&c, &k)) in columns.column.iter().zip(&columns.level).enumerate() {
        if k == 0 {
            ground[c as usize] = v as u32;
        }
    }
    for (v, &c) in columns.column.iter().enumerate() {
        let (p, g) = (
            domain.mesh.vertices[v],
            domain.mesh.vertices[ground[c as usize] as usize],
        );
        assert!(
            p[0] == g[0] && p[1] == g[1],
            "vertex {v} at {p:?} is in column {c}, whose ground vertex is at {g:?}"
        );
    }
}
