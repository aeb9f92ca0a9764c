//! `snowsim bench wind`: the wind step's time per mesh size, per stage, with each stage's
//! unique bytes over the device's copy bandwidth.

use std::time::Instant;

use serde::Serialize;

use crate::cl::Context;
use crate::scene::{Domain, Scene};
use crate::wind::{self, Solver, WindError};

/// One mesh size's result.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Tetrahedra of the mesh.
    pub tetrahedra: usize,
    /// Vertices.
    pub vertices: usize,
    /// Terrain cells per side and layers (0 for a mesh domain).
    pub cells: usize,
    /// Prism layers.
    pub layers: usize,
    /// The wind's time step, s.
    pub dt: f64,
    /// The start-up solve: wall time (ms) and CG iterations.
    pub startup_ms: f64,
    /// Its iterations.
    pub startup_iterations: u32,
    /// The first step after it, ms (wall).
    pub first_step_ms: f64,
    /// Median wall time per step over the timed steps, ms (no profiling events).
    pub median_step_ms: f64,
    /// 10th and 90th percentiles.
    pub p10_step_ms: f64,
    /// 90th percentile.
    pub p90_step_ms: f64,
    /// Mean CG iterations per timed step.
    pub iterations: f64,
    /// Timed steps that did not converge.
    pub not_converged: usize,
    /// Mean RMS divergence after projection, 1/s.
    pub divergence_after: f64,
    /// The pressure operator: `"tetrahedra"`, or `"assembled"` with its rows' widest and
    /// mean entries.
    pub operator: String,
    /// Device copy bandwidth, GB/s.
    pub copy_gbs: f64,
    /// Per stage: device ms per step (profiled steps), model bytes per step, and those bytes
    /// per second over the copy bandwidth.
    pub stages: Vec<Stage>,
}

/// One stage's device time and bytes.
#[derive(Clone, Debug, Serialize)]
pub struct Stage {
    /// `wind.advect`, `wind.divergence`, `wind.pressure`, `wind.project`, `wind.check`.
    pub stage: String,
    /// Kernel launches (and reduction passes) per step.
    pub launches: u64,
    /// Device busy time per step, ms.
    pub ms: f64,
    /// Unique bytes the stage's kernels must move per step (the model in [`stage_bytes`]).
    pub bytes: f64,
    /// `bytes / time` over the copy bandwidth.
    pub fraction_of_copy: f64,
}

/// What to run per size.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Untimed steps after the start-up solve (the issue times steps 100–1 100).
    pub warmup: u64,
    /// Timed steps.
    pub steps: u64,
    /// Steps run with profiling events for the per-stage times.
    pub profiled_steps: u64,
    /// The solver's `check_every`: iterations per batch after the first, and the early window
    /// (`None`: the solver's default).
    pub check_every: Option<u32>,
}

/// The scene with its terrain remeshed to about `tets` tetrahedra (square cells, the scene's
/// layers); `None` for a mesh domain, which has one size.
pub fn resized(scene: &Scene, tets: usize) -> Option<(Scene, usize)> {
    let mut scene = scene.clone();
    match &mut scene.domain {
        Domain::Terrain { spec, .. } => {
            let per_cell = 6 * spec.layers;
            let n = ((tets as f64 / per_cell as f64).sqrt().round() as usize).max(2);
            spec.cells = [n, n];
            Some((scene, n))
        }
        Domain::Mesh { .. } => None,
    }
}

/// Runs the wind on `scene` and measures it.
pub fn measure(
    context: Context,
    scene: &Scene,
    cells: usize,
    config: Config,
    copy_bytes_per_s: f64,
    mut progress: impl FnMut(&str),
) -> Result<Row, WindError> {
    let layers = match &scene.domain {
        Domain::Terrain { spec, .. } => spec.layers,
        Domain::Mesh { .. } => 0,
    };
    progress("meshing and setting up");
    let mut settings = wind::setup::settings(scene, false);
    if let Some(every) = config.check_every {
        settings.check_every = every;
    }
    let mut solver = wind::setup::from_scene(context, scene, settings)?;
    progress("start-up solve");
    let t = Instant::now();
    let startup = solver.startup()?;
    let startup_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    solver.step()?;
    let first_step_ms = t.elapsed().as_secs_f64() * 1e3;
    for i in 1..config.warmup {
        if i % 50 == 0 {
            progress(&format!("warm-up step {i}/{}", config.warmup));
        }
        solver.step()?;
    }
    let mut times = Vec::new();
    let mut iterations = 0u64;
    let mut not_converged = 0;
    let mut divergence = 0.0;
    for i in 0..config.steps {
        if i % 50 == 0 {
            progress(&format!("timed step {i}/{}", config.steps));
        }
        let t = Instant::now();
        let s = solver.step()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        iterations += u64::from(s.iterations);
        not_converged += usize::from(!s.converged);
        divergence += s.divergence_after;
    }
    times.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        times
            .get(((times.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    let n = config.steps.max(1) as f64;
    let mean_iterations = iterations as f64 / n;
    progress("profiled steps");
    let stages = profile(&mut solver, config.profiled_steps, copy_bytes_per_s)?;
    Ok(Row {
        tetrahedra: solver.tetrahedra().len(),
        vertices: solver.vertices().len(),
        cells,
        layers,
        dt: solver.dt(),
        startup_ms,
        startup_iterations: startup.iterations,
        first_step_ms,
        median_step_ms: pick(0.5).unwrap_or(f64::NAN),
        p10_step_ms: pick(0.1).unwrap_or(f64::NAN),
        p90_step_ms: pick(0.9).unwrap_or(f64::NAN),
        iterations: mean_iterations,
        not_converged,
        divergence_after: divergence / n,
        operator: match (solver.operator_width(), solver.operator_mean_width()) {
            (Some(w), Some(m)) => {
                format!("assembled, {w} entries per row at most, {m:.1} on average")
            }
            _ => "tetrahedra".to_string(),
        },
        copy_gbs: copy_bytes_per_s / 1e9,
        stages,
    })
}

/// Runs `steps` steps with profiling events and returns each stage's mean per step.
fn profile(
    solver: &mut Solver,
    steps: u64,
    copy_bytes_per_s: f64,
) -> Result<Vec<Stage>, WindError> {
    solver.set_profiling(true);
    let mut iterations = 0u64;
    for _ in 0..steps {
        iterations += u64::from(solver.step()?.iterations);
    }
    solver.set_profiling(false);
    let per_step = solver.counters().per_frame();
    let (v, t) = (
        solver.vertices().len() as f64,
        solver.tetrahedra().len() as f64,
    );
    let mean_iterations = iterations as f64 / steps.max(1) as f64;
    let entries = solver.operator_mean_width();
    let history = solver.history_slots() as f64;
    Ok(per_step
        .iter()
        .map(|s| {
            let ms = s.busy.as_secs_f64() * 1e3;
            let bytes = stage_bytes(&s.stage, v, t, mean_iterations, entries, history);
            Stage {
                stage: s.stage.to_string(),
                launches: s.launches,
                ms,
                bytes,
                fraction_of_copy: if ms > 0.0 {
                    bytes / (ms * 1e-3) / copy_bytes_per_s
                } else {
                    f64::NAN
                },
            }
        })
        .collect())
}

/// The unique bytes a stage's kernels must read and write per step, for `v` vertices, `t`
/// tetrahedra (each in 4 vertex balls), `iterations` CG iterations and the assembled
/// operator's mean entries per vertex (`None`: the operator through the tetrahedra):
///
/// - the advection reads each vertex's coordinates, velocity, inflow (16 B each), projector
///   (32 B), flags (4 B), first ball entry (4 B) and walk hint (4 B), writes its velocity
///   (16 B) and hint (4 B), and reads the nodes of the tetrahedron its walk ends in (16 B;
///   the walks start in the last step's, so they rarely move on and read neighbours:
///   0.16 hops a vertex on the valley, not counted); the velocities it interpolates are
///   the vertex field's, counted once;
/// - a tetrahedron pass reads its nodes (16 B), its coefficients (64 B) and writes a float4
///   (16 B), and reads the vertex field once (8 B of an f64 scalar, 16 B of a velocity,
///   32 B of the f64 gradient);
/// - a ball gather reads 4 B of index, 16 B of value and 1 B of local index per ball entry
///   (`4t` of them) and the vertex's own data once (projector 32 B, flags 4 B, what it reads
///   and writes);
/// - the assembled operator reads its two tables (16 B per entry each, up to the row's end;
///   the end marker and the padding after it are not counted) and each vertex's operand
///   (8 B), projector (32 B), flags (4 B, read twice), gradient (32 B, written and read)
///   and, for the search direction, the direction again for `d·q`, and writes `q` (8 B);
/// - the CG vectors (f64) are read and written once per kernel: the start reads `b`, `Q`,
///   the diagonal and the projector and writes `r`, `z`, `d` (80 B); an iteration's update
///   reads and writes `x` and `r` and reads `d`, `q`, the diagonal and the projector and
///   writes `z` (96 B), its direction update reads `z` and reads and writes `d` (24 B);
/// - sums folded by the kernels that compute their terms (`r·z`, `Σ r²/m`, `d·q`, the
///   divergence's `Σ m div²`, the energy, the lost walks) move no bytes of their own, but
///   `d·q` reads the direction once more (8 B per vertex); the largest speed is a reduction
///   over the velocity (16 B per vertex);
/// - with a pressure history of `history` slots (`crate::wind::history`, 8 B per slot
///   and vertex in each of its two tables), the start is two kernels: the coefficients read
///   `b`, `Q`, the images and the projector's `1/m` (its 32 B) and write `r` (56 B + 8 B a
///   slot), the projected start reads `x`, `r`, both tables, the diagonal and the projector
///   and writes `x`, `r`, `z`, `d` and the start's copies of `x` and `r` (104 B + 16 B a
///   slot); the store (`wind.history`) reads `x`, `r`, their copies, the projector and both
///   tables and writes both tables back whole (64 B + 32 B a slot).
///
/// Gaps between launches and link-table headers are not counted: the ratio is what the
/// kernels achieve on the bytes they cannot avoid.
pub fn stage_bytes(
    stage: &str,
    v: f64,
    t: f64,
    iterations: f64,
    entries: Option<f64>,
    history: f64,
) -> f64 {
    let tet_pass = |vertex_bytes: f64| t * 96.0 + v * vertex_bytes;
    let gather = |vertex_bytes: f64| 4.0 * t * 21.0 + v * vertex_bytes;
    // The operator applied to the search direction (`d·q` too) or to the pressure.
    let operator = |direction: bool| {
        // Folding `d·q` reads the direction once more.
        let dot = if direction { 8.0 } else { 0.0 };
        match entries {
            Some(w) => v * (2.0 * 16.0 * w + 8.0 + 32.0 + 4.0 + 32.0 + 32.0 + 4.0 + 8.0 + dot),
            None => {
                tet_pass(8.0) + gather(32.0 + 4.0 + 32.0) + tet_pass(32.0) + gather(4.0 + 8.0 + dot)
            }
        }
    };
    match stage {
        "wind.advect" => v * (16.0 * 4.0 + 32.0 + 4.0 + 4.0 + 8.0 + 16.0),
        "wind.divergence" => tet_pass(16.0) + gather(32.0 + 4.0 + 4.0 + 8.0),
        "wind.pressure" => {
            let start = match history > 0.0 {
                true => operator(false) + v * (56.0 + 8.0 * history) + v * (104.0 + 16.0 * history),
                false => operator(false) + v * 80.0,
            };
            let iteration = operator(true) + v * (96.0 + 24.0);
            start + iterations * iteration
        }
        "wind.project" => tet_pass(8.0) + gather(32.0 + 4.0 + 16.0 + 16.0),
        "wind.check" => tet_pass(16.0) + gather(32.0 + 4.0 + 4.0 + 8.0) + v * 16.0,
        "wind.history" => v * (64.0 + 32.0 * history),
        _ => 0.0,
    }
}
