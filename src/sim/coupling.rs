//! The coupling of the wind to the snow: which field the snow samples, where it is computed,
//! and how it crosses to the snow's device.
//!
//! - **Fixed**: the scene's inflow profile, or the solver's field frozen after some steps, in
//!   a buffer on the snow's device.
//! - **Solved** on the snow's device: the solver steps at its own time step whenever the
//!   frames have added up to one, its launches in the frame's timeline; the snow samples the
//!   solver's own velocity buffer, no copy.
//! - **Solved on another device** (`--wind-device`): the solver keeps its own context and
//!   timeline (events of two contexts cannot be waited for together), and after each wind
//!   step its field crosses to a mirror on the snow's device through the host (a blocking
//!   read on the wind's device, a write on the snow's).

use crate::cl::{BufferArg, Context, DeviceBuffer, Timeline};
use crate::gml::FieldBuffer;
use crate::scene::DomainMesh;
use crate::scene::Number;
use crate::scene::limits::check_wind_steps;
use crate::wind::Solver;

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
    },
    /// The solver, stepping with the frames.
    Solved {
        /// The solver (on the snow's context, or on its own device's).
        solver: Box<Solver>,
        /// Simulated seconds not yet stepped.
        clock: f64,
        /// Wind steps run.
        steps: u64,
        /// Pressure-solver iterations over those steps.
        iterations: u64,
        /// With the solver on another device: its field on the snow's device, refreshed after
        /// each wind step.
        mirror: Option<DeviceBuffer<[f32; 4]>>,
    },
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
    pub fn new(
        context: &Context,
        domain: &DomainMesh,
        setup: &WindSetup,
        frame_dt: f32,
    ) -> Result<Self> {
        match setup {
            WindSetup::Profile { velocity } => Ok(Self::Fixed {
                buffer: DeviceBuffer::from_slice(context, velocity)?,
                velocity: velocity.clone(),
                pressure: None,
                steps: 0,
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
                    Some(device) => Context::new(device)?,
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
                    });
                }
                let mirror = match device {
                    Some(_) => Some(DeviceBuffer::from_slice(context, &solver.velocity()?)?),
                    None => None,
                };
                Ok(Self::Solved {
                    solver: Box::new(solver),
                    clock: 0.0,
                    steps: 0,
                    iterations: 0,
                    mirror,
                })
            }
        }
    }

    /// Runs the wind steps that `dt` more simulated seconds make due (none for a fixed
    /// field); returns how many ran. On the snow's device the steps' launches go into
    /// `timeline`; on another device the solver waits for each step there.
    pub fn step_due(&mut self, dt: f32, timeline: &mut Timeline) -> Result<u32> {
        let Self::Solved {
            solver,
            clock,
            steps,
            iterations,
            mirror,
        } = self
        else {
            return Ok(0);
        };
        *clock += f64::from(dt);
        let mut stepped = 0;
        // A frame's f32 step sums to a hair under the wind's f64 step: without the tolerance
        // a wind stepping every frame would skip the first.
        while *clock >= solver.dt() * (1.0 - 1e-6) {
            *clock -= solver.dt();
            let s = match mirror {
                Some(_) => solver.step()?,
                None => solver.step_in(timeline)?,
            };
            *steps += 1;
            *iterations += u64::from(s.iterations);
            stepped += 1;
        }
        Ok(stepped)
    }

    /// The field the snow samples this frame, after `stepped` wind steps: on another device,
    /// the new field crosses to the mirror first (blocking: the read waits for the step).
    pub fn hand_off(&mut self, stepped: u32) -> Result<FieldRef<'_>> {
        match self {
            Self::Fixed { buffer, .. } => Ok(FieldRef::Device(buffer)),
            Self::Solved {
                solver,
                mirror: Some(mirror),
                ..
            } => {
                if stepped > 0 {
                    mirror.write(&solver.velocity()?)?;
                }
                Ok(FieldRef::Device(mirror))
            }
            Self::Solved {
                solver,
                mirror: None,
                ..
            } => Ok(FieldRef::Solver(solver.velocity_buffer()?)),
        }
    }

    /// Whether the ground can be refreshed: a solved wind over a terrain's columns.
    pub fn can_refresh_ground(&self) -> bool {
        matches!(self, Self::Solved { solver, .. } if solver.has_ground_columns())
    }

    /// Raises the wind's ground by `raise` metres per column over the bare ground
    /// ([`Solver::refresh_ground`]: the columns regraded, the geometry and operator rebuilt on
    /// the device, the field re-projected), then rewrites the field's mirror on the snow's
    /// device; `None` for a fixed field. Blocking.
    pub fn refresh_ground(&mut self, raise: &[f64]) -> Result<Option<crate::wind::RefreshStats>> {
        let Self::Solved { solver, mirror, .. } = self else {
            return Ok(None);
        };
        let stats = solver.refresh_ground(raise)?;
        if let (Some(mirror), false) = (mirror, stats.skipped) {
            mirror.write(&solver.velocity()?)?;
        }
        Ok(Some(stats))
    }

    /// The solver's mesh vertices (`None` for a fixed field, whose mesh never moves).
    pub fn vertices(&self) -> Option<&[[f64; 3]]> {
        match self {
            Self::Solved { solver, .. } => Some(solver.vertices()),
            Self::Fixed { .. } => None,
        }
    }

    /// The velocity at every vertex, read back (blocking for the solver).
    pub fn velocity(&mut self) -> Result<Vec<[f32; 4]>> {
        match self {
            Self::Fixed { velocity, .. } => Ok(velocity.clone()),
            Self::Solved { solver, .. } => Ok(solver.velocity()?),
        }
    }

    /// The solved pressure at every vertex (blocking), `None` for the profile.
    pub fn pressure(&mut self) -> Result<Option<Vec<f32>>> {
        match self {
            Self::Fixed { pressure, .. } => Ok(pressure.clone()),
            Self::Solved { solver, .. } => Ok(Some(solver.pressure()?)),
        }
    }

    /// Wind steps run so far (a frozen field: the steps before it froze).
    pub fn steps(&self) -> u64 {
        match self {
            Self::Fixed { steps, .. } | Self::Solved { steps, .. } => *steps,
        }
    }

    /// Mean pressure-solver iterations per wind step while stepping with the frames.
    pub fn mean_iterations(&self) -> f64 {
        match self {
            Self::Fixed { .. } => 0.0,
            Self::Solved {
                steps, iterations, ..
            } => *iterations as f64 / (*steps).max(1) as f64,
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
