//! The solved wind for the renderer's wind and pressure views: the solver's velocity and
//! pressure at a spread of mesh vertices, handed from the simulation (which steps the wind)
//! to the view (which the session asks for the field buffer).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::cl::{Context, OutputBuffer, Timeline};
use crate::sim::{self, FieldRanges, FieldSource};

use super::error::Result;
use super::solver::Solver;

/// The latest samples: per sample a position (xyz) and the velocity (xyz, m/s) with the
/// pressure (w, Pa).
#[derive(Debug, Default)]
pub struct Samples {
    /// `2 × count` float4, as the renderer's field buffer holds them.
    pub points: Vec<[f32; 4]>,
    /// Bumped at every refresh.
    pub generation: u64,
    /// Colour ranges of the field at the last refresh.
    pub ranges: Option<FieldRanges>,
    /// Set by the view on every frame it is shown and cleared by the next refresh: reading
    /// the whole field back (and its pressure percentiles) costs milliseconds per wind step,
    /// which a run that does not show the view must not pay.
    pub wanted: bool,
}

/// Whether the view has been shown since the last refresh (clearing the request).
pub fn take_request(samples: &SharedSamples) -> bool {
    let mut s = lock(samples);
    std::mem::take(&mut s.wanted)
}

/// Samples shared between the simulation and the view.
pub type SharedSamples = Arc<Mutex<Samples>>;

/// The samples, also after a panic elsewhere poisoned the lock (they stay consistent: every
/// writer replaces whole fields).
fn lock(samples: &SharedSamples) -> MutexGuard<'_, Samples> {
    samples.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `count` vertices spread over the mesh: every k-th of a renumbered (space-filling curve)
/// order, which spreads them through the volume.
pub fn sample_vertices(vertices: usize, count: usize) -> Vec<u32> {
    let count = count.clamp(1, vertices.max(1));
    (0..count)
        .map(|i| ((i as u64 * vertices as u64) / count as u64) as u32)
        .collect()
}

/// Reads the solver's fields at `indices` into `samples`, with the colour ranges of the field
/// as it is now: red at the largest speed, and the pressure's 5th and 95th percentiles at
/// yellow and red (pressure in Pa, ρ = 1.2 kg/m³; the pressure view shows the pressure as
/// solved, which can hold checkerboard-like modes the projection does not see).
pub fn refresh(solver: &mut Solver, indices: &[u32], samples: &SharedSamples) -> Result<()> {
    let velocity = solver.velocity()?;
    let pressure = solver.pressure()?;
    let vertices = solver.vertices();
    let mut points = Vec::with_capacity(2 * indices.len());
    for &i in indices {
        let (p, u) = (vertices[i as usize], velocity[i as usize]);
        points.push([p[0] as f32, p[1] as f32, p[2] as f32, 0.0]);
        points.push([u[0], u[1], u[2], pressure[i as usize]]);
    }
    let mut s = lock(samples);
    let speed_max = velocity
        .iter()
        .map(|u| (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt())
        .fold(0.0f32, f32::max);
    let mut finite: Vec<f32> = pressure.iter().copied().filter(|p| p.is_finite()).collect();
    let (low, high) = (percentile(&mut finite, 0.05), percentile(&mut finite, 0.95));
    s.ranges = Some(FieldRanges {
        speed_max: speed_max.max(f32::MIN_POSITIVE),
        pressure: [low, if high > low { high } else { low + 1.0 }],
    });
    s.points = points;
    s.generation += 1;
    Ok(())
}

/// The wind and pressure views of the solved wind.
pub struct SolvedView {
    samples: SharedSamples,
    count: usize,
    shown: u64,
}

impl SolvedView {
    /// A view of `count` samples that the simulation refreshes through `samples`.
    pub fn new(samples: SharedSamples, count: usize) -> Self {
        Self {
            samples,
            count,
            shown: 0,
        }
    }
}

impl FieldSource for SolvedView {
    fn samples(&self) -> usize {
        self.count
    }

    fn prepare(&mut self, _context: &Context) -> sim::Result<()> {
        Ok(())
    }

    fn update(
        &mut self,
        _context: &Context,
        field: &mut OutputBuffer<'_, [f32; 4]>,
        _time: f32,
        _timeline: &mut Timeline,
    ) -> sim::Result<()> {
        let mut s = lock(&self.samples);
        s.wanted = true;
        if s.generation != self.shown && s.points.len() == 2 * self.count {
            field.write(&s.points)?;
            self.shown = s.generation;
        }
        Ok(())
    }

    fn ranges(&self) -> FieldRanges {
        let s = lock(&self.samples);
        s.ranges.unwrap_or(FieldRanges {
            speed_max: 1.0,
            pressure: [0.0, 1.0],
        })
    }
}

/// The `q` quantile of `values` (0 when empty), reordering them.
fn percentile(values: &mut [f32], q: f64) -> f32 {
    if values.is_empty() {
        return 0.0;
    }
    let k = ((values.len() - 1) as f64 * q) as usize;
    *values.select_nth_unstable_by(k, f32::total_cmp).1
}
