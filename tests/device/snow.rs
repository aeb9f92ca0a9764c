//! The snow simulation on a real OpenCL device (PoCL in CI), on small terrain meshes: the
//! approach to terminal velocity, point location after every step, conservation of particles
//! and of deposited snow, the cover's smoothing, uniform and memoryless respawns, independence
//! of the sort mode, and clear errors on bad input.

use std::path::Path;

use snowsim::cl::{Context, DeviceBuffer, OutputBuffer, Timeline};
use snowsim::cl::{Program, Source, WorkSize};
use snowsim::particle::Particle;
use snowsim::scene::{BoundaryRefs, DomainMesh, Scene, SortKey, SortMode};
use snowsim::snow::{
    Counters, CoverGeometry, CoverMesh, Error, GroundCover, LandingsIn, LandingsOut, MIN_PAIRS,
    PARCEL_UNITS, ParticleState, Snow, SnowConfig,
};
use snowsim::terrain::{Terrain, TerrainSpec};

use crate::common::context;

/// The air over `height(x, y)` in a `size` box, `cells × cells` columns of `layers` layers.
fn domain(
    size: [f64; 3],
    cells: usize,
    layers: usize,
    height: impl Fn(f64, f64) -> f64 + Sync,
) -> DomainMesh {
    let spec = TerrainSpec {
        size,
        relief: 0.0,
        cells: [cells, cells],
        layers,
        grading: 1.0,
    };
    let terrain = Terrain::from_fn(spec, height).expect("terrain");
    DomainMesh {
        mesh: terrain.volume_mesh(),
        ground: terrain.ground_surface(),
        boundary: BoundaryRefs::default(),
        columns: Some(terrain.columns()),
    }
}

/// Hills on a 200 × 200 m box, top at 60 m.
fn hills() -> DomainMesh {
    domain([200.0, 200.0, 60.0], 8, 5, |x, y| {
        6.0 + 5.0 * (x / 200.0 * std::f64::consts::TAU).sin() * (y / 100.0).cos()
    })
}

/// A wind per vertex: `speed` along `direction`, growing with height above z = 0.
fn wind(domain: &DomainMesh, direction: [f32; 3], speed: f32) -> Vec<[f32; 4]> {
    domain
        .mesh
        .vertices
        .iter()
        .map(|v| {
            let f = speed * (0.3 + 0.7 * (v[2] as f32 / 60.0).clamp(0.0, 1.0));
            [direction[0] * f, direction[1] * f, direction[2] * f, 0.0]
        })
        .collect()
}

struct Run {
    snow: Snow,
    wind: DeviceBuffer<[f32; 4]>,
    render: DeviceBuffer<Particle>,
}

impl Run {
    fn new(ctx: &Context, domain: &DomainMesh, config: SnowConfig, wind: &[[f32; 4]]) -> Self {
        let n = config.particles;
        let mut run = Self {
            snow: Snow::new(ctx, domain, config).expect("snow builds"),
            wind: DeviceBuffer::from_slice(ctx, wind).unwrap(),
            render: DeviceBuffer::zeroed(ctx, n).unwrap(),
        };
        let mut timeline = ctx.timeline();
        run.snow.reset(ctx, &run.render, &mut timeline).unwrap();
        ctx.finish().unwrap();
        run
    }

    fn step(&mut self, ctx: &Context, dt: f32) -> Counters {
        let mut timeline = ctx.timeline();
        snow_frame(
            &mut self.snow,
            ctx,
            &self.wind,
            dt,
            &self.render,
            &mut timeline,
        );
        ctx.finish().unwrap();
        self.snow.counters().expect("no non-finite particle")
    }

    fn particles(&self) -> Vec<ParticleState> {
        self.snow.particle_states().unwrap()
    }
}

/// The snow's part of a frame, its three stages in `sim::Simulation::step`'s order.
fn snow_frame(
    snow: &mut Snow,
    ctx: &Context,
    wind: &DeviceBuffer<[f32; 4]>,
    dt: f32,
    render: &DeviceBuffer<Particle>,
    timeline: &mut snowsim::cl::Timeline,
) {
    snow.sort(timeline).unwrap();
    snow.advance(ctx, wind, dt, render, timeline).unwrap();
    snow.smooth_cover(ctx, timeline).unwrap();
}

/// Signed distances (m, positive inside) of `q` to the faces of tetrahedron `t`.
fn face_distances(domain: &DomainMesh, t: usize, q: [f64; 3]) -> [f64; 4] {
    let nodes = domain
        .mesh
        .elements(snowsim::meshio::ElementKind::Tetrahedra)
        .nodes(t);
    let p = |k: usize| domain.mesh.vertices[nodes[k] as usize];
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let mut out = [0.0; 4];
    for (j, d) in out.iter_mut().enumerate() {
        let f: Vec<[f64; 3]> = (0..4).filter(|&k| k != j).map(p).collect();
        let n = cross(sub(f[1], f[0]), sub(f[2], f[0]));
        let len = dot(n, n).sqrt();
        let side = dot(n, sub(p(j), f[0])).signum();
        *d = side * dot(n, sub(q, f[0])) / len;
    }
    out
}

#[test]
fn snow_approaches_terminal_velocity_like_tanh() {
    let ctx = context();
    let box_domain = domain([100.0, 100.0, 400.0], 2, 2, |_, _| 0.0);
    let mut config = SnowConfig::new(256);
    config.flake_diameter = [0.004, 0.004];
    config.flutter_radius = [0.0, 0.0];
    config.sort.mode = SortMode::Off;
    let still = vec![[0.0f32; 4]; box_domain.mesh.vertices.len()];
    let mut run = Run::new(&ctx, &box_domain, config.clone(), &still);
    let (vt, g, dt) = (config.fall_speed as f64, config.gravity as f64, 0.02f32);
    let tau = vt / g;
    let mut checked = 0;
    for frame in 1..=16u32 {
        run.step(&ctx, dt);
        let t = frame as f64 * dt as f64;
        // The steps nearest τ and 3τ.
        let near = |target: f64| (t - target).abs() <= 0.5 * dt as f64;
        if !(near(tau) || near(3.0 * tau)) {
            continue;
        }
        let expected = vt * (g * t / vt).tanh();
        let particles = run.particles();
        let falling: Vec<_> = particles.iter().filter(|p| p.respawns == 0).collect();
        assert!(falling.len() > 200, "most particles are still falling");
        for p in falling {
            let v = -p.vel[2] as f64;
            assert!(
                (v - expected).abs() <= 0.01 * expected,
                "t = {t:.2} s: particle {} falls at {v} m/s, v_t tanh(g t / v_t) = {expected}",
                p.id
            );
            assert!(
                p.vel[0] == 0.0 && p.vel[1] == 0.0,
                "no sideways motion in still air"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 2, "checked at τ and 3τ");
}

#[test]
fn each_parcels_flutter_and_size_are_derived_the_same_at_every_step_and_follow_the_laws() {
    // Not stored: derived from (seed, id) by the step and by a state read. They must stay
    // within the scene's ranges, follow the fall-speed law, agree with the drag coefficient
    // the parcel started with, and be the same for one id whatever the frame or the sort.
    let ctx = context();
    let box_domain = domain([100.0, 100.0, 400.0], 2, 2, |_, _| 0.0);
    let mut config = SnowConfig::new(4096);
    config.flake_diameter = [0.002, 0.008];
    config.flutter_radius = [0.05, 0.3];
    config.flutter_rate = [0.5, 3.0];
    config.sort.mode = SortMode::Full;
    let still = vec![[0.0f32; 4]; box_domain.mesh.vertices.len()];
    let mut run = Run::new(&ctx, &box_domain, config.clone(), &still);
    let first = sorted_by_id(run.particles());
    let (d_ref, v_ref, g) = (
        f64::from(config.reference_diameter()),
        f64::from(config.fall_speed),
        f64::from(config.gravity),
    );
    let within = |x: f32, [lo, hi]: [f32; 2]| x >= lo && x <= hi;
    let (mut radii, mut rates) = (Vec::new(), Vec::new());
    for p in &first {
        let [radius, rate, d, vt] = p.flutter;
        assert!(
            within(radius, config.flutter_radius),
            "parcel {}: radius {radius}",
            p.id
        );
        assert!(
            within(rate, config.flutter_rate),
            "parcel {}: rate {rate}",
            p.id
        );
        assert!(
            within(d, config.flake_diameter),
            "parcel {}: diameter {d}",
            p.id
        );
        let law = v_ref * (f64::from(d) / d_ref).powf(0.2);
        assert!(
            (f64::from(vt) - law).abs() <= 1e-5 * law,
            "parcel {}: terminal speed {vt} against v_ref (d / d_ref)^0.2 = {law}",
            p.id
        );
        let k = g / (f64::from(vt) * f64::from(vt));
        assert!(
            (f64::from(p.vel[3]) - k).abs() <= 1e-5 * k,
            "parcel {}: drag coefficient {} against g / v_t² = {k}",
            p.id,
            p.vel[3]
        );
        radii.push(radius);
        rates.push(rate);
    }
    // Drawn, not constant: they spread over their ranges.
    let spread = |v: &[f32]| {
        v.iter().cloned().fold(f32::MIN, f32::max) - v.iter().cloned().fold(f32::MAX, f32::min)
    };
    assert!(spread(&radii) > 0.2 && spread(&rates) > 2.0);
    for _ in 0..10 {
        run.step(&ctx, 0.02);
    }
    let later = sorted_by_id(run.particles());
    assert_eq!(later.len(), first.len());
    for (a, b) in first.iter().zip(&later) {
        assert_eq!(a.id, b.id);
        assert_eq!(
            a.flutter.map(f32::to_bits),
            b.flutter.map(f32::to_bits),
            "parcel {}: its flutter changed between frames",
            a.id
        );
    }
}

#[test]
fn a_step_that_writes_no_drawing_leaves_the_same_parcels_and_an_untouched_render_buffer() {
    let ctx = context();
    let box_domain = domain([100.0, 100.0, 400.0], 2, 2, |_, _| 0.0);
    let mut config = SnowConfig::new(2048);
    config.sort.mode = SortMode::Full;
    let breeze = wind(&box_domain, [1.0, 0.3, 0.0], 4.0);
    let mut drawn = Run::new(&ctx, &box_domain, config.clone(), &breeze);
    let mut undrawn = Run::new(&ctx, &box_domain, config.clone(), &breeze);
    undrawn.snow.set_writes_render(false);
    let at_reset = undrawn.render.read().unwrap();
    for _ in 0..12 {
        drawn.step(&ctx, 0.05);
        undrawn.step(&ctx, 0.05);
    }
    // The same parcels either way, bit for bit.
    let (a, b) = (drawn.particles(), undrawn.particles());
    assert!(a.iter().zip(&b).all(|(x, y)| x.bits() == y.bits()));
    // Drawn: each slot holds its parcel as drawn (position, half its diameter scaled).
    let render = drawn.render.read().unwrap();
    for (p, r) in a.iter().zip(&render) {
        assert_eq!(
            r.position,
            [p.pos[0], p.pos[1], p.pos[2]],
            "parcel {}",
            p.id
        );
        assert_eq!(
            r.radius,
            0.5 * p.flutter[2] * config.render_scale,
            "parcel {}",
            p.id
        );
    }
    assert_ne!(render, at_reset, "the drawn parcels moved");
    // Undrawn: what the reset wrote, untouched.
    assert_eq!(undrawn.render.read().unwrap(), at_reset);
}

/// `--check`'s invariants hold through sorted frames with landings, and each breach is found
/// and named: one unit of snow too many on one vertex.
#[test]
fn invariants_hold_while_sorting_and_a_breach_is_named() {
    let ctx = context();
    let hills = hills();
    let mut config = SnowConfig::new(2000);
    config.sort.mode = SortMode::Partial;
    let w = wind(&hills, [0.8, 0.6, 0.0], 6.0);
    let mut run = Run::new(&ctx, &hills, config, &w);
    let mut landed = 0;
    for _ in 0..20 {
        landed = run.step(&ctx, 0.5).landed;
        run.snow.check_invariants().unwrap();
    }
    assert!(landed > 0, "the test needs landings");
    let mut volumes = run.snow.cover().volumes().unwrap();
    volumes[7] += 1;
    run.snow.cover_mut().set_volumes(&volumes).unwrap();
    let err = run.snow.check_invariants().unwrap_err().to_string();
    assert!(
        err.contains("snow.cover") && err.contains(&format!("{landed} landings")),
        "{err}"
    );
}

#[test]
fn particles_stay_located_and_snow_is_conserved() {
    let ctx = context();
    let hills = hills();
    let mut config = SnowConfig::new(3000);
    config.sort.mode = SortMode::Off;
    let n = config.particles;
    let w = wind(&hills, [0.8, 0.6, 0.0], 6.0);
    let mut run = Run::new(&ctx, &hills, config.clone(), &w);
    let mut last = Counters::default();
    let mut before = run.particles();
    let mut seen_wraps = 0;
    for frame in 0..40 {
        // Long steps: particles cross several tetrahedra, land, wrap and respawn.
        last = run.step(&ctx, 0.5);
        let particles = run.particles();
        assert_eq!(particles.len(), n);
        // Unsorted, so each slot keeps its particle. One that did not respawn moved a step's
        // worth (wind 6 m/s, falling, flutter), modulo the 200 m period of the sides.
        for (a, b) in before.iter().zip(&particles) {
            assert_eq!(a.id, b.id);
            if a.respawns != b.respawns {
                continue;
            }
            let mut d: [f32; 3] = std::array::from_fn(|k| b.pos[k] - a.pos[k]);
            if d[0].abs() > 100.0 || d[1].abs() > 100.0 {
                seen_wraps += 1;
            }
            d[0] -= 200.0 * (d[0] / 200.0).round();
            d[1] -= 200.0 * (d[1] / 200.0).round();
            let moved = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            assert!(
                moved < 6.0,
                "frame {frame}: particle {} jumped {moved} m without a respawn: {:?} -> {:?}",
                b.id,
                a.pos,
                b.pos
            );
        }
        before = particles.clone();
        let mut ids: Vec<u32> = particles.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        assert!(
            ids.iter().enumerate().all(|(i, &id)| id == i as u32),
            "frame {frame}: the ids are no longer a permutation of 0..{n}"
        );
        for p in &particles {
            let q = [p.pos[0] as f64, p.pos[1] as f64, p.pos[2] as f64];
            let d = face_distances(&hills, p.tet as usize, q);
            let worst = d.iter().copied().fold(f64::INFINITY, f64::min);
            assert!(
                worst >= -2.0 * config.tolerance as f64,
                "frame {frame}: particle {} at {q:?} is {} m outside its tetrahedron {}",
                p.id,
                -worst,
                p.tet
            );
        }
        let units = run.snow.deposited_units().unwrap();
        assert_eq!(
            units,
            u128::from(last.landed) * u128::from(PARCEL_UNITS),
            "frame {frame}: deposited units == landings × parcel units"
        );
    }
    assert!(last.landed > 500, "{last:?}");
    assert!(last.wrapped > 100, "{last:?}");
    assert_eq!(
        seen_wraps, last.wrapped,
        "every wrap is a jump by the period, no other jump"
    );
    assert_eq!(last.lost, 0, "{last:?}");
    assert_eq!(last.other, 0, "{last:?}");
}

fn chi2(counts: &[u64], expected: &[f64]) -> f64 {
    counts
        .iter()
        .zip(expected)
        .map(|(&c, &e)| (c as f64 - e).powi(2) / e)
        .sum()
}

/// Respawns are stratified: each particle draws its top triangle from its own stratum of the
/// top's area table (`snow_stratum` in kernels/snow.cl), so the particles cover the top evenly,
/// far more evenly than independent draws would (chi-square well below its degrees of
/// freedom), while the point within the stratum is drawn afresh every time (a particle's next
/// respawn is not where its last one was).
#[test]
fn respawns_are_stratified_over_the_top_and_drawn_afresh_within_their_stratum() {
    let ctx = context();
    let flat = domain([200.0, 200.0, 40.0], 6, 2, |_, _| 0.0);
    let mut config = SnowConfig::new(1 << 16);
    config.sort.mode = SortMode::Off;
    // A gale straight down: every particle lands every step, straight below where it was
    // (its flutter moves it a few centimetres), and respawns.
    let down = vec![[0.0, 0.0, -1000.0, 0.0]; flat.mesh.vertices.len()];
    let mut run = Run::new(&ctx, &flat, config.clone(), &down);
    let cell = |p: &ParticleState, k: usize| {
        let c = |x: f32| ((x / 200.0 * k as f32) as usize).min(k - 1);
        (c(p.pos[0]), c(p.pos[1]))
    };
    let mut before = run.particles();
    let (mut total, mut repeated, mut steps) = (0u64, 0u64, 0u32);
    let mut worst = 0.0f64;
    while steps < 16 {
        let counters = run.step(&ctx, 0.5);
        let after = run.particles();
        let mut uniform = vec![0u64; 32 * 32];
        let mut respawned = 0u64;
        for (a, b) in before.iter().zip(&after) {
            assert_eq!(a.id, b.id);
            if b.respawns != a.respawns + 1 {
                continue;
            }
            assert!(
                b.pos[2] < 40.0 && b.pos[2] > 39.9,
                "respawned below the top"
            );
            let (x, y) = cell(b, 32);
            uniform[x + 32 * y] += 1;
            respawned += 1;
            let d = ((b.pos[0] - a.pos[0]).powi(2) + (b.pos[1] - a.pos[1]).powi(2)).sqrt();
            if d < 1e-3 {
                repeated += 1;
            }
        }
        // All land but the few that flutter through a side on their way down.
        assert!(respawned >= 65536 - 65536 / 100, "{counters:?}");
        let expected = vec![respawned as f64 / 1024.0; 1024];
        worst = worst.max(chi2(&uniform, &expected));
        total += respawned;
        before = after;
        steps += 1;
    }
    // Independent draws give chi-square ≈ 1023 ± 45; strata give a small fraction of it.
    assert!(
        worst < 1023.0 / 4.0,
        "respawns over 32 × 32 cells: chi-square up to {worst}, not stratified"
    );
    // A particle's stratum is 1/65536 of the top, 0.6 m²: two independent points of it lie
    // within 1 mm of each other with a probability of about π · 10⁻⁶ / 0.6 ≈ 5 · 10⁻⁶.
    let fraction = repeated as f64 / total as f64;
    assert!(
        fraction < 1e-3,
        "{:.2} % of respawns within 1 mm of the particle's last one: the point repeats",
        100.0 * fraction
    );
}

/// Landings handed from one device's cover to another's (`snow::LandingsOut` /
/// `LandingsIn`, two contexts as in a split): after each hand-over the receiving cover holds
/// its own volumes plus the giver's, summed on the host in 128-bit integers, and the giver's
/// cover is empty; this holds whether the pairs read with the count are too few for the
/// frame (the rest read once the count is known) or enough, and a frame with nothing laid
/// hands over nothing.
#[test]
fn landings_handed_over_packed_add_up_exactly_on_the_other_device() {
    let (giver_ctx, taker_ctx) = (context(), context());
    let flat = domain([20.0, 20.0, 10.0], 12, 1, |x, y| 0.1 * x - 0.05 * y);
    let mesh = CoverMesh::new(&flat.ground, 3).unwrap();
    let n = mesh.len();
    let mut giver = GroundCover::new(&giver_ctx, mesh.clone(), 0.3).unwrap();
    let mut taker = GroundCover::new(&taker_ctx, mesh.clone(), 0.3).unwrap();
    let base: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 1013).collect();
    taker.set_volumes(&base).unwrap();
    let mut out = LandingsOut::new(&giver_ctx, &giver, 4).unwrap();
    let mut incoming = LandingsIn::new(&taker_ctx, n).unwrap();
    let mut expected: Vec<u128> = base.iter().map(|&v| u128::from(v)).collect();
    let mut giver_timeline = Timeline::new(false);
    let mut taker_timeline = Timeline::new(false);
    // Frame 0: 40 vertices laid on (more than the 4 pairs guessed: the rest is read once the
    // count is known), one near the u64 limit; frame 1: every third vertex; frame 2: none.
    let frames: [Vec<(usize, u64)>; 3] = [
        (0..40)
            .map(|k| {
                (
                    (k * 41) % n,
                    if k == 5 { u64::MAX / 4 } else { k as u64 + 1 },
                )
            })
            .collect(),
        (0..n).step_by(3).map(|v| (v, 3 * v as u64 + 11)).collect(),
        Vec::new(),
    ];
    for (frame, laid) in frames.iter().enumerate() {
        let mut volumes = vec![0u64; n];
        for &(v, units) in laid {
            volumes[v] = units;
            expected[v] += u128::from(units);
        }
        giver.set_volumes(&volumes).unwrap();
        let events = unsafe { out.enqueue(&giver_ctx, &mut giver, &mut giver_timeline) }.unwrap();
        out.finish(&events).unwrap();
        assert_eq!(out.pairs().len(), laid.len(), "frame {frame}");
        let copied = unsafe {
            incoming.enqueue_add(&taker_ctx, &mut taker, out.pairs(), &mut taker_timeline)
        }
        .unwrap();
        if let Some(copied) = copied {
            copied.wait().unwrap();
        }
        let got: Vec<u128> = taker
            .volumes()
            .unwrap()
            .iter()
            .map(|&v| u128::from(v))
            .collect();
        assert!(got == expected, "frame {frame}: the sums differ");
        assert!(
            giver.volumes().unwrap().iter().all(|&v| v == 0),
            "frame {frame}: the giver's cover is not cleared"
        );
    }
    // Four bytes of count per frame and 16 per pair read: frame 0 its 4 guessed pairs and the
    // 36 others; frame 1 its guess (twice 40, at least MIN_PAIRS) or, if more, every third
    // vertex; frame 2 its guess (twice frame 1's count, at least MIN_PAIRS, at most n).
    let (n64, min) = (n as u64, MIN_PAIRS as u64);
    let third = n64.div_ceil(3);
    let frame1 = min.min(n64).max(third);
    let frame2 = (2 * third).max(min).min(n64);
    assert_eq!(out.bytes(), 3 * 4 + 16 * (40 + frame1 + frame2));
    // Finished twice: an error, not a second read.
    assert!(out.finish(&[]).is_err());

    // A cover of fewer vertices than MIN_PAIRS: every vertex laid on, twice.
    let small = CoverMesh::new(&flat.ground, 1).unwrap();
    let m = small.len();
    assert!(m < MIN_PAIRS, "{m} vertices");
    let mut giver = GroundCover::new(&giver_ctx, small.clone(), 0.3).unwrap();
    let mut taker = GroundCover::new(&taker_ctx, small, 0.3).unwrap();
    let mut out = LandingsOut::new(&giver_ctx, &giver, MIN_PAIRS).unwrap();
    let mut incoming = LandingsIn::new(&taker_ctx, m).unwrap();
    for frame in 1..=2u64 {
        giver
            .set_volumes(&(0..m as u64).map(|v| v + frame).collect::<Vec<_>>())
            .unwrap();
        let events = unsafe { out.enqueue(&giver_ctx, &mut giver, &mut giver_timeline) }.unwrap();
        out.finish(&events).unwrap();
        assert_eq!(out.pairs().len(), m);
        let copied = unsafe {
            incoming.enqueue_add(&taker_ctx, &mut taker, out.pairs(), &mut taker_timeline)
        }
        .unwrap();
        if let Some(copied) = copied {
            copied.wait().unwrap();
        }
    }
    let want: Vec<u64> = (0..m as u64).map(|v| 2 * v + 3).collect();
    assert_eq!(taker.volumes().unwrap(), want);
}

/// The depths the device writes for the terrain drawn (four per float4, one per vertex of the
/// wind mesh's ground) are the cover's volumes restricted to those vertices over their dual
/// areas, computed on the host in 128-bit integers and f64 from the hat functions'
/// barycentric weights, to f32 rounding; the restriction keeps the total exactly, the depth's
/// integral over the ground is the cover's volume, and the padding is zero.
#[test]
fn cover_depths_written_for_drawing_match_the_host_depths() {
    let ctx = context();
    let flat = domain([20.0, 20.0, 10.0], 12, 1, |x, y| 0.1 * x - 0.05 * y);
    let coarse = CoverGeometry::new(&flat.ground).unwrap();
    let nv = coarse.len();
    assert!(
        !nv.is_multiple_of(4),
        "{nv} vertices: the test wants a padded last float4"
    );
    let mesh = CoverMesh::new(&flat.ground, 3).unwrap();
    let mut cover = GroundCover::new(&ctx, mesh.clone(), 0.3).unwrap();
    let fine: Vec<u64> = (0..mesh.len() as u64)
        .map(|i| (i * 2_654_435_761) % 1_000_000_007)
        .collect();
    cover.set_volumes(&fine).unwrap();
    let unit = cover.unit_volume();
    // The restriction by hand: each fine vertex's volume shared by its barycentric weights
    // in the coarse triangle it lies in, in f64.
    let mut volumes = vec![0.0f64; nv];
    for (f, &v) in fine.iter().enumerate() {
        let (parent, num) = mesh.parents[f];
        for k in 0..3 {
            volumes[parent[k] as usize] += v as f64 * f64::from(num[k]) / 3.0;
        }
    }
    let exact = cover.ground_volumes().unwrap();
    // The device's restriction is the host's, unit for unit; also for a fine vertex holding
    // nearly 2^64 units (alone, so that no coarse total overflows), whose products with the
    // numerators need more than 64 bits: one with two parents and one with three.
    assert_eq!(exact, mesh.restrict(&fine));
    for parents in [2, 3] {
        let f = (0..mesh.len())
            .find(|&f| mesh.parents[f].1.iter().filter(|&&n| n != 0).count() == parents)
            .unwrap();
        let mut alone = vec![0u64; mesh.len()];
        alone[f] = u64::MAX - 12_345;
        cover.set_volumes(&alone).unwrap();
        let coarse = cover.ground_volumes().unwrap();
        assert_eq!(coarse, mesh.restrict(&alone), "fine vertex {f}");
        assert_eq!(
            coarse.iter().map(|&u| u128::from(u)).sum::<u128>(),
            u128::from(alone[f])
        );
    }
    cover.set_volumes(&fine).unwrap();
    // And at the largest refinement, whose numerators run up to it: a busy cover, and one
    // fine vertex of nearly 2^64 units alone.
    let finest = CoverMesh::new(&flat.ground, snowsim::snow::MAX_REFINEMENT).unwrap();
    let mut finest_cover = GroundCover::new(&ctx, finest.clone(), 0.3).unwrap();
    let busy: Vec<u64> = (0..finest.len() as u64)
        .map(|i| (i * 2_654_435_761) % 1_000_000_007 + (1 << 40))
        .collect();
    finest_cover.set_volumes(&busy).unwrap();
    assert_eq!(
        finest_cover.ground_volumes().unwrap(),
        finest.restrict(&busy)
    );
    let f = (0..finest.len())
        .find(|&f| finest.parents[f].1.iter().all(|&n| n != 0))
        .unwrap();
    let mut alone = vec![0u64; finest.len()];
    alone[f] = u64::MAX - 1;
    finest_cover.set_volumes(&alone).unwrap();
    assert_eq!(
        finest_cover.ground_volumes().unwrap(),
        finest.restrict(&alone)
    );
    let sum = |v: &[u64]| v.iter().map(|&x| u128::from(x)).sum::<u128>();
    assert_eq!(sum(&exact), sum(&fine), "the restriction keeps every unit");
    // Each share is rounded down but the last parent's: a vertex is off by less than one
    // unit per fine vertex it gathers from.
    let (offsets, _) = mesh.restriction_table();
    for v in 0..nv {
        let gathered = f64::from(offsets[v + 1] - offsets[v]);
        assert!(
            (exact[v] as f64 - volumes[v]).abs() <= gathered,
            "vertex {v}: {} against {}",
            exact[v],
            volumes[v]
        );
    }
    let integral: f64 = exact
        .iter()
        .zip(&coarse.area)
        .map(|(&u, &a)| u as f64 * unit / f64::from(a) * f64::from(a))
        .sum();
    assert!((integral - sum(&fine) as f64 * unit).abs() < 1e-9 * integral);
    let mut out = DeviceBuffer::<[f32; 4]>::zeroed(&ctx, nv.div_ceil(4)).unwrap();
    let mut timeline = ctx.timeline();
    cover
        .write_depths(&ctx, &mut OutputBuffer::Device(&mut out), &mut timeline)
        .unwrap();
    timeline.wait().unwrap();
    let written: Vec<f32> = out.read().unwrap().into_iter().flatten().collect();
    for v in 0..nv {
        let host = volumes[v] * unit / f64::from(coarse.area[v]);
        let got = f64::from(written[v]);
        assert!(
            (got - host).abs() <= 1e-5 * host.abs() + 1e-12,
            "vertex {v}: {got} against {host}"
        );
    }
    assert!(written[nv..].iter().all(|&d| d == 0.0));
    // Too short a target is refused, not overrun.
    let mut short = DeviceBuffer::<[f32; 4]>::zeroed(&ctx, nv / 4 - 1).unwrap();
    assert!(
        cover
            .write_depths(&ctx, &mut OutputBuffer::Device(&mut short), &mut timeline)
            .is_err()
    );
}

#[test]
fn smoothing_conserves_exactly_never_goes_negative_and_leaves_no_steep_snow() {
    let ctx = context();
    // A fine flat mesh, 0.5 m cells, with a pile in the middle and a little snow around.
    let flat = domain([20.0, 20.0, 10.0], 40, 1, |_, _| 0.0);
    let mut cover = GroundCover::new(&ctx, CoverMesh::new(&flat.ground, 1).unwrap(), 1.0).unwrap();
    let geometry = cover.geometry.clone();
    let nv = geometry.len();
    let unit = cover.unit_volume();
    let mut volumes = vec![0u64; nv];
    for (i, v) in volumes.iter_mut().enumerate() {
        *v = (i as u64 * 2_654_435_761) % 100_000;
    }
    let centre = flat
        .ground
        .mesh
        .vertices
        .iter()
        .position(|v| (v[0] - 10.0).abs() < 1e-9 && (v[1] - 10.0).abs() < 1e-9)
        .unwrap();
    volumes[centre] = (2.0 / unit) as u64; // 2 m³ on 0.25 m²: an 8 m spike
    cover.set_volumes(&volumes).unwrap();
    let total: u128 = volumes.iter().map(|&v| u128::from(v)).sum();
    let angle = 38.0f64;
    for round in 0..10 {
        let mut timeline = ctx.timeline();
        for _ in 0..100 {
            cover.smooth(&ctx, angle, 0.5, &mut timeline).unwrap();
        }
        ctx.finish().unwrap();
        let now = cover.volumes().unwrap();
        let sum: u128 = now.iter().map(|&v| u128::from(v)).sum();
        assert_eq!(
            sum,
            total,
            "after {} steps the total changed",
            100 * (round + 1)
        );
        assert!(
            now.iter().all(|&v| u128::from(v) <= total),
            "a volume wrapped below zero"
        );
    }
    let depth = cover.depths().unwrap();
    let tan = angle.to_radians().tan();
    let mut steepest = 0.0f64;
    for (e, &[a, b]) in geometry.edges.iter().enumerate() {
        let (a, b) = (a as usize, b as usize);
        let h = |v: usize| geometry.z[v] as f64 + depth[v] as f64;
        let (hi, lo) = if h(a) > h(b) { (a, b) } else { (b, a) };
        if depth[hi] > 1e-6 {
            let slope = (h(hi) - h(lo)) / geometry.length[e] as f64;
            steepest = steepest.max(slope);
        }
        let _ = lo;
    }
    assert!(
        steepest <= tan * 1.05,
        "a snow-covered slope of {:.1}° remains (repose {angle}°)",
        steepest.atan().to_degrees()
    );
    assert!(depth[centre] > 0.0, "the pile spread, it did not vanish");
}

fn sorted_by_id(mut states: Vec<ParticleState>) -> Vec<ParticleState> {
    states.sort_by_key(|p| p.id);
    states
}

#[test]
fn sort_modes_give_bit_identical_particles_and_depths() {
    let ctx = context();
    let hills = hills();
    let w = wind(&hills, [0.6, -0.8, 0.05], 5.0);
    let mut runs: Vec<(SortMode, Run)> = [
        (SortMode::Off, SortKey::Tetrahedron),
        (SortMode::Full, SortKey::Tetrahedron),
        (SortMode::Partial, SortKey::Tetrahedron),
        (SortMode::Partial, SortKey::Hilbert),
    ]
    .into_iter()
    .map(|(mode, key)| {
        let mut config = SnowConfig::new(4000);
        config.sort.mode = mode;
        config.sort.key = key;
        config.sort.full_every = 16;
        // Small blocks: the partial sort's odd and even phases, merges and
        // redistributions all happen.
        config.sort.block_len = Some(256);
        (mode, Run::new(&ctx, &hills, config, &w))
    })
    .collect();
    let mut counters = Counters::default();
    for frame in 0..200 {
        let mut states = Vec::new();
        for (mode, run) in &mut runs {
            let c = run.step(&ctx, 0.1);
            states.push((
                *mode,
                c,
                sorted_by_id(run.particles()),
                run.snow.cover().volumes().unwrap(),
            ));
        }
        let (_, c0, p0, v0) = &states[0];
        counters = *c0;
        for (mode, c, p, v) in &states[1..] {
            assert_eq!(c, c0, "frame {frame}: counters differ with sort {mode:?}");
            if let Some(i) = (0..p0.len()).find(|&i| p0[i].bits() != p[i].bits()) {
                panic!(
                    "frame {frame}: particle {} differs with sort {mode:?}:\n  none: {:?}\n  \
                     {mode:?}: {:?}",
                    p0[i].id, p0[i], p[i]
                );
            }
            assert!(
                v == v0,
                "frame {frame}: snow volumes differ with sort {mode:?}"
            );
        }
    }
    assert!(counters.landed >= 1000, "{counters:?}");
    assert!(counters.wrapped >= 100, "{counters:?}");
    assert!(counters.respawned() >= 100, "{counters:?}");
}

#[test]
fn switching_the_sort_mode_mid_run_changes_nothing() {
    let ctx = context();
    let hills = hills();
    let w = wind(&hills, [-0.6, 0.8, 0.0], 5.0);
    let config = |mode| {
        let mut c = SnowConfig::new(2000);
        c.sort.mode = mode;
        c.sort.full_every = 7;
        c.sort.block_len = Some(128);
        c
    };
    let mut steady = Run::new(&ctx, &hills, config(SortMode::Off), &w);
    let mut switching = Run::new(&ctx, &hills, config(SortMode::Off), &w);
    let schedule = [
        (10, SortMode::Full),
        (20, SortMode::Partial),
        (35, SortMode::Off),
        (40, SortMode::Partial),
    ];
    for frame in 0..60 {
        if let Some((_, mode)) = schedule.iter().find(|(f, _)| *f == frame) {
            switching.snow.set_sort(*mode).unwrap();
            assert_eq!(switching.snow.sort_mode(), *mode);
        }
        let (a, b) = (steady.step(&ctx, 0.2), switching.step(&ctx, 0.2));
        assert_eq!(a, b, "frame {frame}: counters differ");
    }
    let (a, b) = (
        sorted_by_id(steady.particles()),
        sorted_by_id(switching.particles()),
    );
    assert!(
        a.iter().zip(&b).all(|(x, y)| x.bits() == y.bits()),
        "the particles differ after switching sort modes"
    );
    assert_eq!(
        steady.snow.cover().volumes().unwrap(),
        switching.snow.cover().volumes().unwrap()
    );
    // The switched run really sorts: after its last sort (then one step that moved particles
    // across tetrahedra and respawned some) most neighbours in memory are in order, unlike
    // the unsorted run's random order.
    let in_order = |run: &Run| {
        let tets: Vec<u32> = run.particles().iter().map(|p| p.tet).collect();
        tets.windows(2).filter(|w| w[0] <= w[1]).count() as f64 / (tets.len() - 1) as f64
    };
    let (sorted, unsorted) = (in_order(&switching), in_order(&steady));
    assert!(
        sorted > 0.75 && unsorted < 0.6,
        "in order: {sorted} sorted, {unsorted} unsorted"
    );
}

#[test]
fn the_hilbert_key_walks_face_to_face_through_every_cell() {
    let ctx = context();
    let program = Program::build(
        &ctx,
        &[
            Source::new("tet_walk.cl", include_str!("../../kernels/tet_walk.cl")),
            Source::new(
                "snow_deposit.cl",
                include_str!("../../kernels/snow_deposit.cl"),
            ),
            Source::new("snow.cl", include_str!("../../kernels/snow.cl")),
        ],
        "",
    )
    .unwrap();
    let kernel = program.kernel("snow_hilbert_grid").unwrap();
    // The curve's first 16³ indices fill the 16³ cells at its start, one face step apart.
    let side = 16u32;
    let n = (side * side * side) as usize;
    let keys = DeviceBuffer::<u32>::zeroed(&ctx, n).unwrap();
    let mut call = kernel.call();
    unsafe { call.buffer(&keys).unwrap().arg(&side).unwrap() };
    call.enqueue(&ctx, WorkSize::for_kernel(&ctx, &kernel, n).unwrap())
        .unwrap()
        .wait()
        .unwrap();
    let keys = keys.read().unwrap();
    let mut cell_of = vec![usize::MAX; n];
    for (cell, &k) in keys.iter().enumerate() {
        assert!(
            (k as usize) < n,
            "cell {cell} has index {k}, beyond the first 16³"
        );
        assert_eq!(cell_of[k as usize], usize::MAX, "index {k} twice");
        cell_of[k as usize] = cell;
    }
    let xyz = |c: usize| [c % 16, (c / 16) % 16, c / 256].map(|v| v as i64);
    for k in 1..n {
        let (a, b) = (xyz(cell_of[k - 1]), xyz(cell_of[k]));
        let step: i64 = (0..3).map(|i| (a[i] - b[i]).abs()).sum();
        assert_eq!(step, 1, "indices {} and {k}: cells {a:?} and {b:?}", k - 1);
    }
}

#[test]
fn a_nan_particle_is_reported_with_stage_frame_and_id() {
    let ctx = context();
    let hills = hills();
    let mut config = SnowConfig::new(100);
    config.sort.mode = SortMode::Off;
    let w = wind(&hills, [1.0, 0.0, 0.0], 3.0);
    let mut run = Run::new(&ctx, &hills, config, &w);
    let mut vel: Vec<[f32; 4]> = run.particles().iter().map(|p| p.vel).collect();
    vel[42][0] = f32::NAN;
    run.snow.particles_mut().write_velocities(&vel).unwrap();
    let mut timeline = ctx.timeline();
    snow_frame(
        &mut run.snow,
        &ctx,
        &run.wind,
        0.02,
        &run.render,
        &mut timeline,
    );
    ctx.finish().unwrap();
    match run.snow.counters() {
        Err(
            e @ Error::NonFinite {
                id: 42, frame: 0, ..
            },
        ) => {
            let text = e.to_string();
            assert!(
                text.contains("snow.step") && text.contains("particle 42"),
                "{text}"
            );
        }
        other => panic!("expected a non-finite error for particle 42, got {other:?}"),
    }
}

#[test]
fn bad_snow_input_gets_clear_errors() {
    let ctx = context();
    // A ground reference that no triangle carries.
    let mut hills = hills();
    hills.boundary.ground = 99;
    match Snow::new(&ctx, &hills, SnowConfig::new(10)) {
        Err(Error::Mesh(m)) => assert!(m.contains("ground reference 99"), "{m}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a domain without ground faces was accepted"),
    }
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let mut config = SnowConfig::new(10);
        config.rate = bad;
        let e = config.validate().unwrap_err().to_string();
        assert!(e.contains("snow.rate"), "{e}");
    }
    let scene = "[domain]\nflat = true\nsize = [100, 80]\ntop = 40\ncells = [4, 3]\nlayers = 3\n";
    let path = Path::new("s.toml");
    for (snow, key) in [
        ("rate = -0.5", "snow.rate"),
        ("rate = nan", "snow.rate"),
        ("deposit_depth = 0.001", "snow.deposit_depth"),
    ] {
        let text = format!("{scene}[snow]\n{snow}\n");
        let e = Scene::from_toml(&text, path).unwrap_err().to_string();
        assert!(e.contains(key), "{snow}: {e}");
    }
    let e = Scene::from_toml(&format!("{scene}[snow]\ndeposit_depth = 1\n"), path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("snow.rate"),
        "the error points to the replacement: {e}"
    );
    let ok = Scene::from_toml(
        &format!("{scene}[snow]\nrate = 0.02\n[time]\nacceleration = 60\n"),
        path,
    )
    .unwrap();
    assert_eq!((ok.snow.rate, ok.time.acceleration), (0.02, 60.0));
    // `off` is the spelling; scenes written with `none` still load.
    for spelling in ["off", "none"] {
        let text = format!("{scene}[snow]\nsort = \"{spelling}\"\n");
        assert_eq!(
            Scene::from_toml(&text, path).unwrap().snow.sort,
            SortMode::Off
        );
    }
}

/// `time.acceleration` changed while running multiplies what each later landing lays, never
/// the unit, and the ledger still balances to the unit.
#[test]
fn a_changed_acceleration_multiplies_later_landings_and_the_ledger_balances() {
    let ctx = context();
    let hills = hills();
    let mut config = SnowConfig::new(2000);
    config.sort.mode = SortMode::Off;
    config.cover_refinement = 3;
    let w = wind(&hills, [0.8, 0.6, 0.0], 6.0);
    let mut run = Run::new(&ctx, &hills, config, &w);
    let unit = run.snow.cover().unit_volume();
    let mut before = Counters::default();
    for _ in 0..10 {
        before = run.step(&ctx, 0.5);
    }
    run.snow.set_acceleration(2.5).unwrap();
    assert_eq!(
        run.snow.cover().unit_volume(),
        unit,
        "the unit never changes"
    );
    let mut after = before;
    for _ in 0..10 {
        after = run.step(&ctx, 0.5);
    }
    assert!(
        before.landed > 0 && after.landed > before.landed,
        "{after:?}"
    );
    let laid = u128::from(before.landed) * u128::from(PARCEL_UNITS)
        + u128::from(after.landed - before.landed) * u128::from(PARCEL_UNITS) * 5 / 2;
    assert_eq!(run.snow.deposited_units().unwrap(), laid);
    assert!(run.snow.ledger().unwrap().balances());
    run.snow.check_invariants().unwrap();
    let e = run.snow.set_acceleration(0.0).unwrap_err().to_string();
    assert!(e.contains("time.acceleration"), "{e}");
}

/// The falling snow's density follows the parcels: spread below the source it is the uniform
/// snowfall's (1) within sampling noise and exactly 1 above the source; after a gale straight
/// down has put every parcel back at the source (each lands every step and enters again
/// there), the air below holds none.
#[test]
fn the_flake_density_follows_the_parcels() {
    let ctx = context();
    let flat = domain([200.0, 200.0, 60.0], 8, 6, |_, _| 0.0);
    let mut config = SnowConfig::new(1 << 16);
    config.sort.mode = SortMode::Off;
    config.source_height = 30.0;
    let calm = vec![[0.0; 4]; flat.mesh.vertices.len()];
    let mut run = Run::new(&ctx, &flat, config.clone(), &calm);
    let d = run.snow.flake_density().unwrap();
    let slice: Vec<f64> = (0..25)
        .map(|k| {
            d.at([
                20.0 + 40.0 * f64::from(k % 5),
                20.0 + 40.0 * f64::from(k / 5),
                15.0,
            ])
        })
        .collect();
    let mean = slice.iter().sum::<f64>() / slice.len() as f64;
    assert!(
        (mean - 1.0).abs() < 0.1,
        "mean relative density {mean} below the source"
    );
    assert!(slice.iter().all(|&r| (0.5..1.5).contains(&r)), "{slice:?}");
    assert!(
        (d.at([100.0, 100.0, 50.0]) - 1.0).abs() < 1e-6,
        "above the source"
    );
    let down = vec![[0.0, 0.0, -1000.0, 0.0]; flat.mesh.vertices.len()];
    let mut run = Run::new(&ctx, &flat, config, &down);
    run.step(&ctx, 0.5);
    let d = run.snow.flake_density().unwrap();
    for k in 0..25 {
        let p = [
            20.0 + 40.0 * f64::from(k % 5),
            20.0 + 40.0 * f64::from(k / 5),
            10.0,
        ];
        assert!(d.at(p) < 0.05, "{p:?}: {} after the gale", d.at(p));
    }
    assert!((d.at([100.0, 100.0, 50.0]) - 1.0).abs() < 1e-6);
}
