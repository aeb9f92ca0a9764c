//! The coupling of the wind to the snow: which field the snow samples, where it is computed,
//! and how it crosses to the snow's device.
//!
//! - **Fixed**: the scene's inflow profile, or the solver's field frozen after some steps, in
//!   a buffer on the snow's device.
//! - **Solved** on the snow's device: the solver steps at its own time step whenever the
//!   frames have added up to one, its launches in the frame's timeline; the snow samples the
//!   solver's own velocity buffer, no copy.
//! - **Beside**, solved on another device (`--wind-device`, [`super::beside`]): the solver
//!   keeps its own context and a thread of its own; after each frame's wind steps its field
//!   crosses to a mirror on the snow's device through pinned host memory, without the snow's
//!   side waiting until the next frame's hand-off.
//!
//! **The lag.** The snow of frame `n` samples the wind as it stood at the frame's start: after
//! the steps due up to frame `n − 1`. The wind steps due in frame `n` run after the snow's
//! launches on one device (in order on its queue, so they overwrite the field the snow has
//! read), and beside it on two. Both modes sample the same time level, so one device and two
//! give the same state bit for bit; on two, the wind of frame `n` and the snow of frame `n`
//! run at once (on a device that also steps a share of the parcels, after that share's part
//! of the frame: [`WindGate`]).

use std::sync::Arc;

use crate::cl::{BufferArg, Context, DeviceBuffer, PinnedBuffer, Timeline};
use crate::gml::FieldBuffer;
use crate::scene::DomainMesh;
use crate::scene::Number;
use crate::scene::limits::check_wind_steps;
use crate::wind::{GroundPlan, GroundPlanner, RefreshStats, Solver};

use super::beside::{WindBeside, WindGate};
use super::setup::WindSetup;
use super::{Error, Result};

pub use crate::scene::limits::MAX_WIND_STEPS_PER_FRAME;

/// Checks on the host, before any device is touched, the wind solver that `setup` asks for on
/// `domain`, for frames of `frame_dt` seconds: the mesh and its boundary as the solver will
/// see them (some pressure unknown among them), and, when the wind steps with the frames, the
/// step the solver will take (`wind.step`, `simulate.wind_every`'s, or the default from the
/// mesh) against the frame's ([`check_wind_steps`]). `scene check` calls it; `run` meets the
/// same checks when [`WindField::new`] builds the solver (the mesh and boundary in
/// `Solver::new`, the step through `check_step`), so the solver's host-side set-up runs
/// once, and both refuse the same scenes with the same words.
pub fn check_wind(domain: &DomainMesh, setup: &WindSetup, frame_dt: f32) -> Result<()> {
    let WindSetup::Solved {
        inflow,
        settings,
        direction,
        frozen_after,
        ..
    } = setup
    else {
        return Ok(());
    };
    let step = crate::wind::solver::time_step(
        &domain.mesh,
        &domain.boundary,
        *direction,
        inflow,
        settings,
    )?;
    if frozen_after.is_none() {
        check_step(frame_dt, step, settings.step.is_some())?;
    }
    Ok(())
}

/// Adds `dt` simulated seconds to `clock` and takes from it the wind steps of `step` seconds
/// that are due; returns how many.
fn due_steps(clock: &mut f64, dt: f32, step: f64) -> u32 {
    *clock += f64::from(dt);
    let mut due = 0;
    // A frame's f32 step sums to a hair under the wind's f64 step: without the tolerance a
    // wind stepping every frame would skip the first.
    while *clock >= step * (1.0 - 1e-6) {
        *clock -= step;
        due += 1;
    }
    due
}

/// Checks that frames of `frame_dt` seconds run at most [`MAX_WIND_STEPS_PER_FRAME`] wind steps
/// of `step` seconds, `given` by the scene (`wind.step`, `simulate.wind_every`) or the
/// solver's default from the mesh, which the message says.
fn check_step(frame_dt: f32, step: f64, given: bool) -> Result<()> {
    let what = match given {
        true => format!("wind.step {} s", Number(step)),
        false => format!(
            "no wind.step is given, and its default from the mesh (a Courant number of about 1 \
             near the ground), {} s,",
            Number::rounded(step)
        ),
    };
    check_wind_steps(frame_dt, step, &what).map_err(Error::InvalidParameter)
}

/// The wind the snow samples, and where it comes from.
pub enum WindField {
    /// A fixed field: the profile, or the solver's field frozen after `steps` steps.
    Fixed {
        /// The field on the snow's device.
        buffer: DeviceBuffer<[f32; 4]>,
        /// The same on the host (state files, checks, the view).
        velocity: Vec<[f32; 4]>,
        /// The frozen solver's pressure; `None` for the profile, which has none.
        pressure: Option<Vec<f32>>,
        /// Wind steps run before the field was frozen.
        steps: u64,
        /// The field on the devices that step a share of the parcels.
        copies: Copies,
    },
    /// The solver on the snow's device, stepping with the frames.
    Solved {
        /// The solver (on the snow's context).
        solver: Box<Solver>,
        /// Simulated seconds not yet stepped.
        clock: f64,
        /// Wind steps run.
        steps: u64,
        /// Pressure-solver iterations over those steps.
        iterations: u64,
        /// The field on the devices that step a share of the parcels.
        copies: Copies,
    },
    /// The solver on another device and thread, stepping with the frames.
    Beside {
        /// The solver's thread and the field's mirror on the snow's device.
        wind: Box<WindBeside>,
        /// The solver's time step, s.
        dt: f64,
        /// Whether the solver has a terrain's columns (the ground can be refreshed).
        columns: bool,
        /// The solver's device's OpenCL index.
        device: usize,
        /// Simulated seconds not yet stepped.
        clock: f64,
        /// Wind steps run (or handed to the thread).
        steps: u64,
        /// Whether the wind's device also steps a share of the parcels: the frame's steps
        /// are then handed over behind a gate that opens after that share's frame
        /// ([`WindField::frame`]).
        gated: bool,
    },
}

/// The wind field on the devices that step a share of the parcels (`--snow-devices`), beside
/// the snow's own: written when the wind has stepped since, from pinned memory of the snow's
/// context, without waiting.
#[derive(Default)]
pub struct Copies {
    buffers: Vec<DeviceBuffer<[f32; 4]>>,
    staging: Option<PinnedBuffer<[f32; 4]>>,
    /// The wind steps whose field the copies hold.
    at_step: Option<u64>,
}

impl Copies {
    /// Brings the copies to the field of `steps` wind steps, read from `field` (blocking on
    /// the snow's queue: call it before the frame's launches there), when they hold another.
    fn refresh(&mut self, field: &impl BufferArg<[f32; 4]>, steps: u64) -> Result<()> {
        if self.buffers.is_empty() || self.at_step == Some(steps) {
            return Ok(());
        }
        let Some(staging) = self.staging.as_mut() else {
            return Ok(());
        };
        staging.read_from(field)?;
        for copy in &mut self.buffers {
            // SAFETY: `staging` is written again only at the next refresh, a frame later at
            // the soonest; by then each share's frame has waited for its hand-over, which its
            // queue runs after this write.
            unsafe { copy.enqueue_write_from(staging.as_slice()) }?;
        }
        self.at_step = Some(steps);
        Ok(())
    }
}

/// The field the snow reads this frame: a buffer of the snow's context either way.
pub enum FieldRef<'a> {
    /// A plain device buffer (the fixed field, or the mirror of another device's).
    Device(&'a DeviceBuffer<[f32; 4]>),
    /// The solver's own velocity field.
    Solver(FieldBuffer<[f32; 4]>),
}

impl BufferArg<[f32; 4]> for FieldRef<'_> {
    fn cl_mem_checked(&self) -> crate::cl::Result<opencl3::types::cl_mem> {
        match self {
            Self::Device(b) => b.cl_mem_checked(),
            Self::Solver(b) => b.cl_mem_checked(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Device(b) => BufferArg::len(*b),
            Self::Solver(b) => BufferArg::len(b),
        }
    }
}

impl WindField {
    /// Sets the wind of `setup` up on the snow's `context` over `domain`, for frames of
    /// `frame_dt` seconds: uploads a fixed field, or builds the solver (on its own device when
    /// asked), runs its start-up solve and, when the field is to be frozen, its steps. A wind
    /// step so short that a frame would run more than [`MAX_WIND_STEPS_PER_FRAME`] of them is
    /// refused, naming both steps.
    ///
    /// `shares` are the contexts of the devices that step a share of the parcels. Where the
    /// wind's own device is one of them, the solver runs on a second queue of that share's
    /// context ([`Context::sibling`]) rather than a context of its own: the GPU then runs the
    /// share's kernels and the solver's beside each other, where two contexts would take
    /// turns (measured on two H100s: 2^24 parcels split, 359–365 → 375–386 steps/s,
    /// `benches/RESULTS.md`).
    pub fn new(
        context: &Context,
        domain: &DomainMesh,
        setup: &WindSetup,
        frame_dt: f32,
        shares: &[Context],
    ) -> Result<Self> {
        match setup {
            WindSetup::Profile { velocity } => Ok(Self::Fixed {
                buffer: DeviceBuffer::from_slice(context, velocity)?,
                velocity: velocity.clone(),
                pressure: None,
                steps: 0,
                copies: Copies::default(),
            }),
            WindSetup::Solved {
                inflow,
                settings,
                direction,
                wind,
                frozen_after,
                device,
            } => {
                let wind_context = match device {
                    Some(device) => {
                        match shares.iter().find(|c| c.info().index == device.info.index) {
                            Some(share) => share.sibling()?,
                            None => Context::new(device)?,
                        }
                    }
                    None => context.clone(),
                };
                let mut solver = Solver::new(
                    wind_context,
                    &domain.mesh,
                    &domain.boundary,
                    *direction,
                    inflow,
                    *settings,
                )?;
                if frozen_after.is_none() {
                    // Before the start-up solve, as `scene check` does ([`check_wind`]).
                    check_step(frame_dt, solver.dt(), settings.step.is_some())?;
                }
                // A terrain's columns, for the ground refresh (a mesh file has none).
                if let (Some(columns), None) = (&domain.columns, frozen_after) {
                    solver.set_ground_columns(columns.clone(), *wind)?;
                }
                solver.startup()?;
                if let Some(steps) = frozen_after {
                    // Run, then keep the field and let the solver go.
                    for _ in 0..*steps {
                        solver.step()?;
                    }
                    let velocity = solver.velocity()?;
                    return Ok(Self::Fixed {
                        buffer: DeviceBuffer::from_slice(context, &velocity)?,
                        pressure: Some(solver.pressure()?),
                        velocity,
                        steps: u64::from(*steps),
                        copies: Copies::default(),
                    });
                }
                match device {
                    Some(device) => Ok(Self::Beside {
                        dt: solver.dt(),
                        columns: solver.has_ground_columns(),
                        device: device.info.index,
                        wind: Box::new(WindBeside::new(
                            context,
                            solver,
                            format!("{} ({})", device.info.index, device.info.name),
                        )?),
                        clock: 0.0,
                        steps: 0,
                        gated: false,
                    }),
                    None => Ok(Self::Solved {
                        solver: Box::new(solver),
                        clock: 0.0,
                        steps: 0,
                        iterations: 0,
                        copies: Copies::default(),
                    }),
                }
            }
        }
    }

    /// One frame of `dt` seconds of the coupling, in its order: `snow` is given the field
    /// the snow samples (the wind as it stood at the frame's start, module doc) and enqueues
    /// its launches; the wind steps that the frame makes due run (none for a fixed field).
    /// Returns how many.
    ///
    /// - On the snow's device the steps' launches go into `timeline` after the snow's, so the
    ///   in-order queue has the snow read the field before the steps overwrite it.
    /// - Beside the snow, the last frame's steps are waited for, this frame's are handed to
    ///   the wind's thread at once (they need nothing the snow's side holds), and only then
    ///   does the last frame's field start crossing into the mirror, in order on the snow's
    ///   queue, ahead of the snow's launches: the crossing and the snow's frame overlap the
    ///   wind's next steps. Where the wind's device also steps a share of the parcels, the
    ///   steps wait behind a gate ([`WindGate`]) that the snow opens with that share's
    ///   frame's end (its step and hand-over): that device runs the share, which the snow's
    ///   device waits for, and then the wind, which only the next frame needs, rather than
    ///   both at once sharing the GPU (measured: without the gate, 344–354 steps/s against
    ///   375–386 with it).
    ///
    /// `snow` is also given the field on each device that steps a share of the parcels
    /// ([`attach`](Self::attach)), in their order: from the thread's pinned copy beside the
    /// snow, else read once on the snow's device when the wind has stepped since.
    pub fn frame(
        &mut self,
        dt: f32,
        timeline: &mut Timeline,
        snow: impl FnOnce(
            FieldRef<'_>,
            &[DeviceBuffer<[f32; 4]>],
            &mut WindGate,
            &mut Timeline,
        ) -> Result<()>,
    ) -> Result<u32> {
        let mut open = WindGate::default();
        match self {
            Self::Fixed { buffer, copies, .. } => {
                snow(
                    FieldRef::Device(buffer),
                    &copies.buffers,
                    &mut open,
                    timeline,
                )?;
                Ok(0)
            }
            Self::Solved {
                solver,
                clock,
                steps,
                iterations,
                copies,
            } => {
                let field = solver.velocity_buffer()?;
                copies.refresh(&field, *steps)?;
                snow(
                    FieldRef::Solver(field),
                    &copies.buffers,
                    &mut open,
                    timeline,
                )?;
                let due = due_steps(clock, dt, solver.dt());
                for _ in 0..due {
                    *iterations += u64::from(solver.step_in(timeline)?.iterations);
                    *steps += 1;
                }
                Ok(due)
            }
            Self::Beside {
                wind,
                dt: wind_dt,
                clock,
                steps,
                gated,
                device,
                ..
            } => {
                wind.receive()?;
                let due = due_steps(clock, dt, *wind_dt);
                // The gate is dropped when this returns, whatever the snow did: nothing waits
                // for the steps before then.
                let mut gate = match (due > 0, *gated) {
                    (true, true) => wind.request_gated(due, *device)?,
                    (true, false) => {
                        wind.request(due)?;
                        open
                    }
                    (false, _) => open,
                };
                *steps += u64::from(due);
                wind.forward()?;
                let (own, shares) = wind.mirrors().split_at(1);
                snow(FieldRef::Device(&own[0]), shares, &mut gate, timeline)?;
                Ok(due)
            }
        }
    }

    /// Puts the field on each of `contexts` too (the devices that step a share of the
    /// parcels), for [`frame`](Self::frame) to hand to them. Blocking.
    pub fn attach(&mut self, contexts: &[Context]) -> Result<()> {
        if contexts.is_empty() {
            return Ok(());
        }
        match self {
            Self::Fixed {
                velocity, copies, ..
            } => {
                for c in contexts {
                    copies.buffers.push(DeviceBuffer::from_slice(c, velocity)?);
                }
            }
            Self::Solved {
                solver,
                steps,
                copies,
                ..
            } => {
                let velocity = solver.velocity()?;
                for c in contexts {
                    copies.buffers.push(DeviceBuffer::from_slice(c, &velocity)?);
                }
                copies.staging = Some(PinnedBuffer::new(solver.context(), velocity.len())?);
                copies.at_step = Some(*steps);
            }
            Self::Beside {
                wind,
                device,
                gated,
                ..
            } => {
                for c in contexts {
                    wind.add_mirror(c)?;
                    *gated |= c.info().index == *device;
                }
            }
        }
        Ok(())
    }

    /// Waits for the wind's steps handed to another device, if any, and starts their field
    /// on its way to the mirror (a run that ends, a report).
    pub fn settle(&mut self) -> Result<()> {
        if let Self::Beside { wind, .. } = self {
            wind.settle()?;
        }
        self.check_last_step()
    }

    /// Checks the last wind step's projection on this thread's solver, which a step that
    /// did not measure its field leaves to the next ([`Solver::check_last_step`]); the wind
    /// beside the snow checks its own before each field crosses.
    pub fn check_last_step(&mut self) -> Result<()> {
        if let Self::Solved { solver, .. } = self {
            solver.check_last_step()?;
        }
        Ok(())
    }

    /// The wind's own time step while it steps with the frames, s; `None` for a fixed field.
    pub fn step_dt(&self) -> Option<f64> {
        match self {
            Self::Fixed { .. } => None,
            Self::Solved { solver, .. } => Some(solver.dt()),
            Self::Beside { dt, .. } => Some(*dt),
        }
    }

    /// Whether the wind is solved as the frames go (on the snow's device or beside it).
    pub fn is_solved(&self) -> bool {
        !matches!(self, Self::Fixed { .. })
    }

    /// Whether the ground can be refreshed: a solved wind over a terrain's columns.
    pub fn can_refresh_ground(&self) -> bool {
        match self {
            Self::Fixed { .. } => false,
            Self::Solved { solver, .. } => solver.has_ground_columns(),
            Self::Beside { columns, .. } => *columns,
        }
    }

    /// Makes the ground refresh's device data and kernels now ([`Solver::prepare_ground_refresh`]),
    /// so that the first refresh costs what the later ones do; nothing for a fixed field.
    pub fn prepare_ground_refresh(&mut self) -> Result<()> {
        match self {
            Self::Fixed { .. } => {}
            Self::Solved { solver, .. } => solver.prepare_ground_refresh()?,
            Self::Beside { wind, .. } => wind.solver()?.prepare_ground_refresh()?,
        }
        Ok(())
    }

    /// The ground refresh's host half ([`Solver::ground_planner`]), to plan refreshes with on
    /// any thread; `None` for a fixed field.
    pub fn ground_planner(&mut self) -> Result<Option<Arc<GroundPlanner>>> {
        Ok(match self {
            Self::Fixed { .. } => None,
            Self::Solved { solver, .. } => Some(solver.ground_planner()?),
            Self::Beside { wind, .. } => Some(wind.solver()?.ground_planner()?),
        })
    }

    /// Applies a ground refresh's `plan` ([`Solver::apply_ground`]: the geometry and operator
    /// rebuilt on the device, the field re-projected), then rewrites the field's mirror on the
    /// snow's device; `None` for a fixed field. Blocking.
    pub fn apply_ground(&mut self, plan: &mut GroundPlan) -> Result<Option<RefreshStats>> {
        match self {
            Self::Fixed { .. } => Ok(None),
            Self::Solved { solver, copies, .. } => {
                // The field moved: the copies take it at the next frame.
                copies.at_step = None;
                Ok(Some(solver.apply_ground(plan)?))
            }
            Self::Beside { wind, .. } => {
                let stats = wind.solver()?.apply_ground(plan)?;
                if !stats.skipped {
                    wind.rewrite_mirror()?;
                }
                Ok(Some(stats))
            }
        }
    }

    /// The velocity at every vertex, read back (blocking for the solver).
    pub fn velocity(&mut self) -> Result<Vec<[f32; 4]>> {
        match self {
            Self::Fixed { velocity, .. } => Ok(velocity.clone()),
            Self::Solved { solver, .. } => Ok(solver.velocity()?),
            Self::Beside { wind, .. } => Ok(wind.solver()?.velocity()?),
        }
    }

    /// The solved pressure at every vertex (blocking), `None` for the profile.
    pub fn pressure(&mut self) -> Result<Option<Vec<f32>>> {
        match self {
            Self::Fixed { pressure, .. } => Ok(pressure.clone()),
            Self::Solved { solver, .. } => Ok(Some(solver.pressure()?)),
            Self::Beside { wind, .. } => Ok(Some(wind.solver()?.pressure()?)),
        }
    }

    /// The wind's own device (its OpenCL index) and the wall time its steps took there so far,
    /// s, where the wind runs beside the snow; `None` otherwise (on the snow's device its
    /// launches are in the frame's timeline).
    pub fn beside_cost(&self) -> Option<(usize, f64)> {
        match self {
            Self::Beside { wind, device, .. } => Some((*device, wind.step_seconds())),
            _ => None,
        }
    }

    /// Wind steps run so far (a frozen field: the steps before it froze).
    pub fn steps(&self) -> u64 {
        match self {
            Self::Fixed { steps, .. } | Self::Solved { steps, .. } | Self::Beside { steps, .. } => {
                *steps
            }
        }
    }

    /// Mean pressure-solver iterations per wind step while stepping with the frames.
    pub fn mean_iterations(&self) -> f64 {
        match self {
            Self::Fixed { .. } => 0.0,
            Self::Solved {
                steps, iterations, ..
            } => *iterations as f64 / (*steps).max(1) as f64,
            Self::Beside { wind, steps, .. } => wind.iterations() as f64 / (*steps).max(1) as f64,
        }
    }

    /// Checks that the wind is finite at every vertex (blocking), naming the first vertex
    /// that is not.
    pub fn check(&mut self) -> Result<()> {
        let velocity = self.velocity()?;
        if let Some((v, u)) = velocity
            .iter()
            .enumerate()
            .find(|(_, u)| !u[..3].iter().all(|c| c.is_finite()))
        {
            return Err(Error::Invariant(format!(
                "stage wind: the velocity at mesh vertex {v} is {:?}",
                &u[..3]
            )));
        }
        Ok(())
    }
}
