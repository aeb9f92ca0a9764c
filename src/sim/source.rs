//! What computes the buffers the renderer draws: the interface the simulation implements.

use crate::cl::{Context, OutputBuffer, Timeline};

use super::Result;

/// Writes the particles the renderer draws: the snow simulation ([`crate::snow::SnowSource`]),
/// or the flakes stand-in.
///
/// Each particle is one float4: xyz the position in metres (z up), w the radius in metres.
/// The buffer a method receives lives in `context`: in share mode it *is* the GL buffer
/// (acquired for the call), in copy mode a device buffer that is copied to GL after the call.
/// It keeps its contents from frame to frame, so it can hold the positions as simulation
/// state; a simulation that keeps positions elsewhere copies them in. Kernels are only
/// enqueued, into `timeline` (whose stage the caller has set); the frame waits once at its end
/// and reads every stage's device time from there.
pub trait ParticleSource {
    /// A short name for the log, e.g. `flakes`.
    fn name(&self) -> &str;
    /// Number of particles (float4 values of the buffer).
    fn count(&self) -> usize;
    /// Builds programs and allocates whatever else the source needs, once, on `context`.
    fn prepare(&mut self, context: &Context) -> Result<()>;
    /// Writes the initial particles (at start and when the user resets).
    fn reset(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> Result<()>;
    /// Advances the particles by `dt` seconds; `time` is the simulated time before the step.
    fn step(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        dt: f32,
        time: f32,
        timeline: &mut Timeline,
    ) -> Result<()>;
    /// Switches particle sorting on or off; returns whether the source sorts at all.
    fn set_sorting(&mut self, _on: bool) -> bool {
        false
    }
    /// Whether the source sorts its particles now.
    fn sorting(&self) -> bool {
        false
    }
    /// Vertices of the ground surface (in the terrain drawn's vertex order) whose laid snow
    /// [`write_ground_depth`](Self::write_ground_depth) writes; zero for a source that lays no
    /// snow.
    fn ground_vertices(&self) -> usize {
        0
    }
    /// Enqueues writing the snow depth the particles have laid on each ground vertex, metres,
    /// four vertices per float4, into `target` (which the interop hands to the terrain drawn).
    fn write_ground_depth(
        &mut self,
        _context: &Context,
        _target: &mut OutputBuffer<'_, [f32; 4]>,
        _timeline: &mut Timeline,
    ) -> Result<()> {
        Ok(())
    }
    /// Checks the source's invariants on the device state after `frame` frames (blocking reads):
    /// `snowsim run --check`. The error names what broke and the entity (a particle id, a
    /// vertex). Sources with nothing to check pass.
    fn check(&mut self, _context: &Context, _frame: u64) -> Result<()> {
        Ok(())
    }
    /// Writes the simulation's state to `path` as VTK XML (`snowsim run --vtu`); a source
    /// without a mesh state refuses.
    fn save_state(&mut self, _path: &std::path::Path) -> Result<()> {
        Err(super::Error::InvalidParameter(format!(
            "the {} have no mesh state to write (--vtu needs the snow simulation: \
             simulate.snow = true)",
            self.name()
        )))
    }
}

/// Writes the wind debug view: per sample point a float4 position (xyz) followed by a float4
/// holding the wind velocity (xyz) and the pressure (w).
pub trait FieldSource {
    /// Number of sample points.
    fn samples(&self) -> usize;
    /// Builds programs once on `context`.
    fn prepare(&mut self, context: &Context) -> Result<()>;
    /// Enqueues the writing of the `2 · samples` float4 of the field at simulated time `time`.
    fn update(
        &mut self,
        context: &Context,
        field: &mut OutputBuffer<'_, [f32; 4]>,
        time: f32,
        timeline: &mut Timeline,
    ) -> Result<()>;
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
