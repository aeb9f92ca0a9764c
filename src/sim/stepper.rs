//! The simulation without drawing (`snowsim run --render off`): the sources' kernels frame
//! after frame on a plain OpenCL context, the particles in a device buffer no one draws. What
//! the thesis measured as its simulation-only rate, and what long self-checking runs use.

use std::time::{Duration, Instant};

use crate::cl::{Context, DeviceBuffer, DeviceEntry, OutputBuffer, Timeline};
use crate::counters::{StageTime, stage};
use crate::render::{Action, FrameDriver, FrameError, StageTimes};

use super::session::PARTICLES_STAGE;
use super::source::ParticleSource;
use super::{Error, Result, in_stage};

/// One device stepping a [`ParticleSource`] with nothing drawn. A [`FrameDriver`], so the
/// headless loop, its statistics and its log serve it as they serve a [`super::Session`].
pub struct Stepper {
    // Field order is drop order: the buffer and the source before the context.
    particles: DeviceBuffer<[f32; 4]>,
    source: Box<dyn ParticleSource>,
    context: Context,
    timeline: Timeline,
    dt: f32,
    time: f32,
    frame: u64,
    /// Check the source's invariants every this many frames (`--check`); 0: never.
    check_every: u64,
    /// Kernels are timed on one frame in this many.
    profile_every: u64,
    checks: u64,
    check_time: Duration,
    outputs: super::StateOutputs,
}

impl Stepper {
    /// Prepares `source` on a new context of `device` and puts its particles at their start;
    /// each frame then advances `dt` simulated seconds.
    pub fn new(device: &DeviceEntry, dt: f32, mut source: Box<dyn ParticleSource>) -> Result<Self> {
        super::check_time_step(dt)?;
        let context = Context::new(device)?;
        source.prepare(&context)?;
        let mut particles = DeviceBuffer::uninit(&context, source.count())?;
        let mut timeline = context.timeline();
        timeline.stage(PARTICLES_STAGE);
        in_stage(
            PARTICLES_STAGE,
            source.reset(
                &context,
                &mut OutputBuffer::Device(&mut particles),
                &mut timeline,
            ),
        )?;
        timeline.wait()?;
        timeline.resolve()?;
        Ok(Self {
            particles,
            source,
            context,
            timeline,
            dt,
            time: 0.0,
            frame: 0,
            check_every: 0,
            profile_every: 1,
            checks: 0,
            check_time: Duration::ZERO,
            outputs: super::StateOutputs::default(),
        })
    }

    /// Checks the source's invariants ([`ParticleSource::check`]) every `frames` frames (0:
    /// never); the first failure stops the run.
    pub fn check_every(&mut self, frames: u64) {
        self.check_every = frames;
    }

    /// Times the kernels (profiling events) on one frame in `frames` (1: every frame).
    pub fn profile_every(&mut self, frames: u64) {
        self.profile_every = frames.max(1);
    }

    /// Checks run so far and the host time they took.
    pub fn checks(&self) -> (u64, Duration) {
        (self.checks, self.check_time)
    }

    /// Writes the state to `path` when the run ends.
    pub fn save_state_on_finish(&mut self, path: std::path::PathBuf) {
        self.outputs.final_state = Some(path);
    }

    /// Writes the state every few frames into a ParaView series ([`super::Series`]).
    pub fn write_series(&mut self, series: super::Series) {
        self.outputs.series = Some(series);
    }

    /// The context the kernels run on.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// One frame: the source's step, one wait, and every stage's time.
    pub fn step(&mut self) -> Result<StageTimes> {
        let start = Instant::now();
        self.timeline.set_records_events(
            self.context.profiling() && self.frame.is_multiple_of(self.profile_every),
        );
        self.timeline.stage(PARTICLES_STAGE);
        in_stage(
            PARTICLES_STAGE,
            self.source.step(
                &self.context,
                &mut OutputBuffer::Device(&mut self.particles),
                self.dt,
                self.time,
                &mut self.timeline,
            ),
        )?;
        self.context.finish()?;
        let mut times = vec![StageTime::host(stage::KERNELS, start.elapsed())];
        times.extend(self.timeline.resolve()?);
        self.time += self.dt;
        self.frame += 1;
        self.outputs
            .after_frame(&mut *self.source, self.frame, self.dt)?;
        if self.check_every > 0 && self.frame.is_multiple_of(self.check_every) {
            let start = Instant::now();
            self.source
                .check(&self.context, self.frame)
                .map_err(|e| Error::Check {
                    frame: self.frame,
                    source: Box::new(e),
                })?;
            self.checks += 1;
            self.check_time += start.elapsed();
        }
        Ok(times)
    }
}

impl FrameDriver for Stepper {
    fn frame(&mut self, _size: (u32, u32)) -> std::result::Result<StageTimes, FrameError> {
        Ok(self.step()?)
    }

    fn redraw(&mut self, _size: (u32, u32)) -> std::result::Result<(), FrameError> {
        Ok(())
    }

    fn action(&mut self, _action: Action) -> Option<String> {
        None
    }

    fn status(&self) -> String {
        format!(
            "{} {} | not drawn | {}",
            self.source.count(),
            self.source.name(),
            self.context.info().name
        )
    }

    fn finish(&mut self) -> std::result::Result<Option<String>, FrameError> {
        Ok(self.outputs.finish(&mut *self.source)?)
    }
}
