//! The simulation without drawing (`snowsim run --render off`): [`Simulation::step`] frame
//! after frame on a plain OpenCL context, the particles in a device buffer no one draws. What
//! the thesis measured as its simulation-only rate, and what long self-checking runs use.

use std::time::{Duration, Instant};

use crate::cl::{Context, DeviceBuffer, DeviceEntry, OutputBuffer, Timeline};
use crate::counters::{StageTime, stage};
use crate::particle::Particle;
use crate::render::{Action, FrameDriver, FrameError, StageTimes};

use crate::sim::{SimReport, SimSetup, Simulation, StateOutputs};

use super::Result;

/// One device stepping a [`Simulation`] with nothing drawn. A [`FrameDriver`], so the
/// headless loop, its statistics and its log serve it as they serve a [`super::Session`].
pub struct Stepper {
    // Field order is drop order: the buffer and the simulation before the context.
    particles: DeviceBuffer<Particle>,
    simulation: Simulation,
    context: Context,
    timeline: Timeline,
    frame: u64,
    /// Check the source's invariants every this many frames (`--check`); 0: never.
    check_every: u64,
    /// Kernels are timed on one frame in this many.
    profile_every: u64,
    /// The first frame timed (the first measured one).
    profile_from: u64,
    checks: u64,
    check_time: Duration,
    outputs: StateOutputs,
    /// The end of the last untimed frame on the queue (a marker), which the next frame waits
    /// for instead of its own end.
    last_end: Option<opencl3::event::Event>,
}

impl Stepper {
    /// Builds the simulation of `setup` on a new context of `device` and puts its particles
    /// at their start.
    pub fn new(device: &DeviceEntry, setup: SimSetup) -> Result<Self> {
        Self::build(device, setup, None)
    }

    /// As [`new`](Self::new), as rank 0 of `comm`: the other ranks step shares of the
    /// parcels ([`Simulation::over_ranks`]).
    pub fn over_ranks(
        device: &DeviceEntry,
        setup: SimSetup,
        comm: Box<dyn crate::comm::Comm>,
    ) -> Result<Self> {
        Self::build(device, setup, Some(comm))
    }

    fn build(
        device: &DeviceEntry,
        setup: SimSetup,
        comm: Option<Box<dyn crate::comm::Comm>>,
    ) -> Result<Self> {
        let context = Context::new(device)?;
        let mut simulation = match comm {
            Some(comm) => Simulation::over_ranks(&context, setup, comm)?,
            None => Simulation::new(&context, setup)?,
        };
        simulation.undrawn();
        let mut particles = DeviceBuffer::uninit(&context, simulation.particle_count())?;
        let mut timeline = context.timeline();
        simulation.reset(
            &context,
            &mut OutputBuffer::Device(&mut particles),
            &mut timeline,
        )?;
        timeline.wait()?;
        timeline.resolve()?;
        Ok(Self {
            particles,
            simulation,
            context,
            timeline,
            frame: 0,
            check_every: 0,
            profile_every: 1,
            profile_from: 0,
            checks: 0,
            check_time: Duration::ZERO,
            outputs: StateOutputs::default(),
            last_end: None,
        })
    }

    /// Checks the simulation's invariants ([`Simulation::check`]) every `frames` frames (0:
    /// never); the first failure stops the run.
    pub fn check_every(&mut self, frames: u64) {
        self.check_every = frames;
    }

    /// Times the kernels (profiling events) on one frame in `frames` (1: every frame), from
    /// frame `from` on (the first measured one, so that a short run times at least one).
    pub fn profile_every(&mut self, frames: u64, from: u64) {
        self.profile_every = frames.max(1);
        self.profile_from = from;
    }

    /// Checks run so far and the host time they took.
    pub fn checks(&self) -> (u64, Duration) {
        (self.checks, self.check_time)
    }

    /// Writes the state to `path` when the run ends; a `.pvtu`'s pieces are partitioned now
    /// ([`Simulation::prepare_state`]), so that a partition that cannot be made stops the run
    /// before it starts, not after.
    pub fn save_state_on_finish(&mut self, path: std::path::PathBuf) -> Result<()> {
        self.simulation.prepare_state(&path)?;
        self.outputs.final_state = Some(path);
        Ok(())
    }

    /// Writes the state every few frames into a ParaView series ([`crate::sim::Series`]).
    pub fn write_series(&mut self, series: crate::sim::Series) {
        self.outputs.series = Some(series);
    }

    /// The simulation.
    pub fn simulation(&self) -> &Simulation {
        &self.simulation
    }

    /// What the simulation did, read from the device (blocking).
    pub fn report(&mut self) -> Result<SimReport> {
        Ok(self.simulation.report()?)
    }

    /// The context the kernels run on.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// One frame: the simulation's step, one wait, and every stage's time. A timed frame
    /// (`profile_every`) waits for its own end, whose launches' times are read then; any
    /// other waits for the last frame's end only, so that the host queues this frame while
    /// the device finishes the last (at most two frames on the queue).
    pub fn step(&mut self) -> Result<StageTimes> {
        let start = Instant::now();
        let timed = self.context.profiling()
            && timed_frame(self.frame, self.profile_every, self.profile_from);
        self.timeline.set_records_events(timed);
        self.simulation.step(
            &self.context,
            &mut OutputBuffer::Device(&mut self.particles),
            &mut self.timeline,
        )?;
        if timed {
            self.context.finish()?;
            self.last_end = None;
        } else {
            let end = self.context.enqueue_marker()?;
            self.context.flush()?;
            if let Some(last) = self.last_end.replace(end) {
                crate::cl::wait_for(std::slice::from_ref(&last))?;
            }
        }
        let mut times = vec![StageTime::host(stage::KERNELS, start.elapsed())];
        times.extend(self.timeline.resolve()?);
        self.frame += 1;
        let dt = self.simulation.dt();
        self.outputs
            .after_frame(&mut self.simulation, self.frame, dt)?;
        if self.check_every > 0 && self.frame.is_multiple_of(self.check_every) {
            let start = Instant::now();
            self.simulation
                .check()
                .map_err(|e| crate::sim::Error::Check {
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
            self.simulation.particle_count(),
            self.simulation.particle_name(),
            self.context.info().name
        )
    }

    fn finish(&mut self) -> std::result::Result<Option<String>, FrameError> {
        Ok(self.outputs.finish(&mut self.simulation)?)
    }
}

/// Whether frame `frame` is timed when one frame in `every` is, from frame `from` on.
pub(crate) fn timed_frame(frame: u64, every: u64, from: u64) -> bool {
    frame >= from && (frame - from).is_multiple_of(every.max(1))
}

#[cfg(test)]
mod tests {
    use super::timed_frame;

    #[test]
    fn the_first_measured_frame_is_timed_then_one_in_every() {
        let timed: Vec<u64> = (0..60).filter(|&f| timed_frame(f, 20, 7)).collect();
        assert_eq!(timed, [7, 27, 47]);
        let every: Vec<u64> = (0..5).filter(|&f| timed_frame(f, 1, 2)).collect();
        assert_eq!(every, [2, 3, 4]);
        // `every` 0 is read as 1, never a division by zero.
        assert!(timed_frame(3, 0, 0));
    }
}
