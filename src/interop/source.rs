//! What computes the buffers the renderer draws: the interface the simulation implements.

use opencl3::event::Event;
use opencl3::memory::Buffer;

use super::Result;
use super::compute::ComputeContext;

/// Writes the particles the renderer draws: the flakes stand-in now, the snow simulation later.
///
/// Each particle is one float4: xyz the position in metres (z up), w the radius in metres.
/// The buffer a method receives lives in `compute`'s context: in share mode it *is* the GL
/// buffer (acquired for the call), in copy mode a device buffer that is copied to GL after the
/// call. It keeps its contents from frame to frame, so it can hold the positions as simulation
/// state; a simulation that keeps positions elsewhere copies them in (`clEnqueueCopyBuffer`).
/// Kernels are only enqueued; the session waits and reads the returned events' profiling times.
pub trait ParticleSource {
    /// A short name for the log, e.g. `flakes`.
    fn name(&self) -> &str;
    /// Number of particles (float4 values of the buffer).
    fn count(&self) -> usize;
    /// Builds programs and allocates whatever else the source needs, once, on `compute`.
    fn prepare(&mut self, compute: &ComputeContext) -> Result<()>;
    /// Writes the initial particles (at start and when the user resets).
    fn reset(
        &mut self,
        compute: &ComputeContext,
        particles: &mut Buffer<[f32; 4]>,
    ) -> Result<Vec<Event>>;
    /// Advances the particles by `dt` seconds; `time` is the simulated time before the step.
    fn step(
        &mut self,
        compute: &ComputeContext,
        particles: &mut Buffer<[f32; 4]>,
        dt: f32,
        time: f32,
    ) -> Result<Vec<Event>>;
    /// Switches particle sorting on or off; returns whether the source sorts at all.
    fn set_sorting(&mut self, _on: bool) -> bool {
        false
    }
}

/// Writes the wind debug view: per sample point a float4 position (xyz) followed by a float4
/// holding the wind velocity (xyz) and the pressure (w).
pub trait FieldSource {
    /// Number of sample points.
    fn samples(&self) -> usize;
    /// Builds programs once on `compute`.
    fn prepare(&mut self, compute: &ComputeContext) -> Result<()>;
    /// Writes the `2 · samples` float4 of the field at simulated time `time`.
    fn update(
        &mut self,
        compute: &ComputeContext,
        field: &mut Buffer<[f32; 4]>,
        time: f32,
    ) -> Result<Vec<Event>>;
    /// The speed drawn red and the pressures drawn yellow and red.
    fn ranges(&self) -> FieldRanges;
}

/// How a field's values map to colours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldRanges {
    /// Speed drawn red, in m/s.
    pub speed_max: f32,
    /// Pressures drawn yellow (first) and red (second).
    pub pressure: [f32; 2],
}
