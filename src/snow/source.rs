//! The snow as the particle source `snowsim run` draws.

use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::cl::{Context, DeviceBuffer, OutputBuffer, Timeline};
use crate::scene::{DomainMesh, Scene};
use crate::sim::{self, ParticleSource};
use crate::terrain::Heightfield;

use super::sim::{Counters, check_counters};
use super::{Snow, SnowConfig};

/// What a run reports about the snow (`snowsim run --json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SnowReport {
    /// Particles (parcels).
    pub particles: usize,
    /// Landings on the ground.
    pub landed: u64,
    /// Respawns at the top, for any reason.
    pub respawned: u64,
    /// Wraps through a side.
    pub wrapped: u64,
    /// Respawns of particles no walk could locate.
    pub lost: u64,
    /// Snow on the ground, m³.
    pub deposited_m3: f64,
    /// The deepest snow at a ground vertex, m.
    pub max_depth_m: f32,
    /// Volume of one parcel, m³.
    pub parcel_m3: f64,
    /// Wind steps run (0 when the wind is the fixed profile).
    pub wind_steps: u64,
    /// Mean pressure-solver iterations per wind step.
    pub wind_iterations: f64,
}

/// Everything the snow of a scene needs besides a device: its domain, settings and wind.
#[derive(Clone, Debug)]
pub struct SnowSetup {
    /// The domain mesh, renumbered for the device.
    pub domain: DomainMesh,
    /// The settings.
    pub config: SnowConfig,
    /// The wind per mesh vertex: the scene's inflow profile, the wind solver's inflow and
    /// start.
    pub wind: Vec<[f32; 4]>,
    /// The wind solver stepped along with the frames (`simulate.wind`), or run and then
    /// frozen (`simulate.frozen_wind_steps`); `None` keeps the profile fixed.
    pub solve: Option<WindSolve>,
    /// Whether snow particles are simulated (`simulate.snow`); without them only the wind runs.
    pub snow: bool,
    /// Another OpenCL device for the wind solver (`--wind-device`); `None`: the snow's. Its
    /// field then crosses to the snow's device once per wind step, through the host.
    pub wind_device: Option<crate::cl::DeviceEntry>,
}

/// The wind solver as the snow runs it: at its own time step, every time the frames have
/// added up to one, the snow sampling the latest field.
#[derive(Clone, Debug)]
pub struct WindSolve {
    /// The solver's settings (the scene's `[wind]`).
    pub settings: crate::wind::Settings,
    /// The wind's direction.
    pub direction: [f64; 2],
    /// The samples the wind and pressure views draw, refreshed after each wind step.
    pub view: crate::wind::view::SharedSamples,
    /// The vertices sampled for the views.
    pub view_vertices: Vec<u32>,
    /// `Some(n)`: the solver runs its start-up solve and `n` steps, then its field is frozen
    /// for the snow (`simulate.frozen_wind_steps`); `None`: it steps with the frames.
    pub frozen_after: Option<u32>,
}

/// The wind the snow samples.
enum WindField {
    /// A fixed field: the profile, or the solver's field frozen after `steps` steps.
    Fixed {
        buffer: DeviceBuffer<[f32; 4]>,
        velocity: Vec<[f32; 4]>,
        pressure: Vec<f32>,
        steps: u64,
    },
    /// The solver (its views' samples are the setup's [`WindSolve`]), the simulated time not
    /// yet stepped, the steps run and their CG iterations.
    Solved {
        solver: Box<crate::wind::Solver>,
        clock: f64,
        steps: u64,
        iterations: u64,
        /// With the solver on another device: its field on the snow's device, refreshed after
        /// each wind step.
        mirror: Option<DeviceBuffer<[f32; 4]>>,
    },
}

impl SnowSetup {
    /// The snow of `scene`, blown by its wind profile over `ground` (the scene's ground grid).
    pub fn new(scene: &Scene, ground: &Heightfield) -> sim::Result<Self> {
        let config = SnowConfig::from_scene(scene)?;
        let domain = scene.build_domain(true)?;
        let wind =
            crate::wind::profile::vertex_velocities(&domain.mesh.vertices, ground, &scene.wind);
        let simulate = scene.simulate;
        let mut settings = crate::wind::setup::settings(scene, false);
        if let Some(every) = simulate.wind_every {
            // Every k-th frame, over the k frames' time.
            settings.step = Some(f64::from(every) * scene.time.step);
        }
        let frozen_after = (!simulate.wind)
            .then_some(simulate.frozen_wind_steps)
            .flatten();
        let solve = (simulate.wind || frozen_after.is_some()).then(|| WindSolve {
            settings,
            direction: scene.wind.direction,
            view: Default::default(),
            view_vertices: crate::wind::view::sample_vertices(
                domain.mesh.vertices.len(),
                WIND_VIEW_SAMPLES,
            ),
            frozen_after,
        });
        Ok(Self {
            domain,
            config,
            wind,
            solve,
            snow: simulate.snow,
            wind_device: None,
        })
    }
}

/// Vertices the solved wind's views sample.
pub const WIND_VIEW_SAMPLES: usize = 1536;

/// [`Snow`] behind the [`ParticleSource`] interface, in a fixed wind given per vertex of the
/// domain mesh (the scene's inflow profile until the wind solver hands over its field).
pub struct SnowSource {
    setup: SnowSetup,
    /// The snow (without it, only the wind runs) and the wind it samples.
    state: Option<(Option<Snow>, WindField)>,
    report: Arc<Mutex<SnowReport>>,
}

impl SnowSource {
    /// The snow of `setup`.
    pub fn new(setup: SnowSetup) -> sim::Result<Self> {
        setup.config.validate()?;
        if setup.wind.len() != setup.domain.mesh.vertices.len() {
            return Err(super::Error::WindLength {
                got: setup.wind.len(),
                expected: setup.domain.mesh.vertices.len(),
            }
            .into());
        }
        let report = SnowReport {
            particles: setup.config.particles,
            ..SnowReport::default()
        };
        Ok(Self {
            setup,
            state: None,
            report: Arc::new(Mutex::new(report)),
        })
    }

    /// The simulation (after [`prepare`](ParticleSource::prepare)).
    pub fn snow(&self) -> Option<&Snow> {
        self.state.as_ref().and_then(|(s, _)| s.as_ref())
    }

    /// A handle on the report, updated after every step (the session owns the source).
    pub fn report_handle(&self) -> Arc<Mutex<SnowReport>> {
        self.report.clone()
    }

    fn publish(
        &self,
        counters: Option<&Counters>,
        snow: Option<&Snow>,
        wind: &WindField,
    ) -> sim::Result<()> {
        let (wind_steps, wind_iterations) = match wind {
            WindField::Fixed { steps, .. } => (*steps, 0.0),
            WindField::Solved {
                steps, iterations, ..
            } => (*steps, *iterations as f64 / (*steps).max(1) as f64),
        };
        let mut report = SnowReport {
            wind_steps,
            wind_iterations,
            ..SnowReport::default()
        };
        if let (Some(counters), Some(snow)) = (counters, snow) {
            let (deposited_m3, max_depth_m) = snow.cover_summary()?;
            report = SnowReport {
                particles: snow.particles().len(),
                landed: counters.landed,
                respawned: counters.respawned(),
                wrapped: counters.wrapped,
                lost: counters.lost,
                deposited_m3,
                max_depth_m,
                parcel_m3: snow.parcel_volume(),
                ..report
            };
        }
        match self.report.lock() {
            Ok(mut r) => *r = report,
            Err(poisoned) => *poisoned.into_inner() = report,
        }
        Ok(())
    }
}

impl ParticleSource for SnowSource {
    fn name(&self) -> &str {
        "snow parcels"
    }

    fn count(&self) -> usize {
        if self.setup.snow {
            self.setup.config.particles
        } else {
            0
        }
    }

    fn prepare(&mut self, context: &Context) -> sim::Result<()> {
        let snow = match self.setup.snow {
            true => Some(Snow::new(
                context,
                &self.setup.domain,
                self.setup.config.clone(),
            )?),
            false => None,
        };
        let wind = match &self.setup.solve {
            None => WindField::Fixed {
                buffer: DeviceBuffer::from_slice(context, &self.setup.wind)?,
                velocity: self.setup.wind.clone(),
                pressure: vec![0.0; self.setup.wind.len()],
                steps: 0,
            },
            Some(solve) => {
                let domain = &self.setup.domain;
                let wind_context = match &self.setup.wind_device {
                    Some(device) => crate::cl::Context::new(device)?,
                    None => context.clone(),
                };
                let mut solver = crate::wind::Solver::new(
                    wind_context,
                    &domain.mesh,
                    &domain.boundary,
                    solve.direction,
                    &self.setup.wind,
                    solve.settings,
                )?;
                solver.startup()?;
                match solve.frozen_after {
                    Some(steps) => {
                        // Run, then keep the field and let the solver go.
                        for _ in 0..steps {
                            solver.step()?;
                        }
                        crate::wind::view::refresh(&mut solver, &solve.view_vertices, &solve.view)?;
                        let velocity = solver.velocity()?;
                        WindField::Fixed {
                            buffer: DeviceBuffer::from_slice(context, &velocity)?,
                            pressure: solver.pressure()?,
                            velocity,
                            steps: u64::from(steps),
                        }
                    }
                    None => {
                        crate::wind::view::refresh(&mut solver, &solve.view_vertices, &solve.view)?;
                        let mirror = match self.setup.wind_device {
                            Some(_) => {
                                Some(DeviceBuffer::from_slice(context, &solver.velocity()?)?)
                            }
                            None => None,
                        };
                        WindField::Solved {
                            solver: Box::new(solver),
                            clock: 0.0,
                            steps: 0,
                            iterations: 0,
                            mirror,
                        }
                    }
                }
            }
        };
        self.state = Some((snow, wind));
        Ok(())
    }

    fn reset(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> sim::Result<()> {
        match self.state.as_mut() {
            Some((Some(snow), _)) => Ok(snow.reset(context, particles, timeline)?),
            Some((None, _)) => Ok(()),
            None => Err(sim::Error::Internal("snow used before prepare".into())),
        }
    }

    fn step(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        dt: f32,
        _time: f32,
        timeline: &mut Timeline,
    ) -> sim::Result<()> {
        let Some((snow, wind)) = self.state.as_mut() else {
            return Err(sim::Error::Internal("snow used before prepare".into()));
        };
        match wind {
            WindField::Fixed { buffer, .. } => {
                if let Some(snow) = snow.as_mut() {
                    snow.step(context, &*buffer, dt, particles, timeline)?;
                }
            }
            WindField::Solved {
                solver,
                clock,
                steps,
                iterations,
                mirror,
            } => {
                // The wind steps at its own time step once the frames have added up to one
                // (it waits for its own statistics; the snow samples the latest field).
                *clock += f64::from(dt);
                let mut stepped = false;
                // A frame's f32 step sums to a hair under the wind's f64 step: without the
                // tolerance a wind stepping every frame would skip the first.
                while *clock >= solver.dt() * (1.0 - 1e-6) {
                    *clock -= solver.dt();
                    // On another device the solver keeps its own timeline (events of two
                    // contexts cannot be waited for together).
                    let s = match mirror {
                        Some(_) => solver.step()?,
                        None => solver.step_in(timeline)?,
                    };
                    *steps += 1;
                    *iterations += u64::from(s.iterations);
                    stepped = true;
                }
                // The view's samples follow the wind only while the view is shown.
                if stepped
                    && let Some(solve) = &self.setup.solve
                    && crate::wind::view::take_request(&solve.view)
                {
                    crate::wind::view::refresh(solver, &solve.view_vertices, &solve.view)?;
                }
                if let Some(snow) = snow.as_mut() {
                    match mirror {
                        // The field crosses devices once per wind step (blocking: the read
                        // waits for the step on the wind's device).
                        Some(mirror) => {
                            if stepped {
                                mirror.write(&solver.velocity()?)?;
                            }
                            snow.step(context, &*mirror, dt, particles, timeline)?;
                        }
                        None => {
                            let velocity = solver.velocity_buffer()?;
                            snow.step(context, &velocity, dt, particles, timeline)?;
                        }
                    }
                }
            }
        }
        // Reading the counters waits for the frame's kernels, which the session waits for
        // anyway; a non-finite particle stops the run with its stage, frame and id.
        let counters = match snow.as_ref() {
            Some(snow) => {
                let counters = snow.counters()?;
                check_counters(&counters, snow.frame())?;
                Some(counters)
            }
            None => None,
        };
        if let Some((snow, wind)) = &self.state {
            self.publish(counters.as_ref(), snow.as_ref(), wind)?;
        }
        Ok(())
    }

    fn sorting(&self) -> bool {
        self.setup.config.sort.mode != crate::scene::SortMode::Off
    }

    fn ground_vertices(&self) -> usize {
        if self.setup.snow {
            self.setup.domain.ground.volume_vertices.len()
        } else {
            0
        }
    }

    fn write_ground_depth(
        &mut self,
        context: &Context,
        target: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> sim::Result<()> {
        match &self.state {
            Some((Some(snow), _)) => Ok(snow.cover().write_depths(context, target, timeline)?),
            Some((None, _)) => Ok(()),
            None => Err(sim::Error::Internal(
                "snow depth written before prepare".into(),
            )),
        }
    }

    fn save_state(&mut self, path: &std::path::Path) -> sim::Result<()> {
        use crate::meshio::{ElementKind, VtuArray, write_vtu_file};
        let Some((snow, wind)) = self.state.as_mut() else {
            return Err(sim::Error::Internal("snow saved before prepare".into()));
        };
        let mesh = &self.setup.domain.mesh;
        let (velocity, pressure): (Vec<[f32; 4]>, Vec<f32>) = match wind {
            WindField::Fixed {
                velocity, pressure, ..
            } => (velocity.clone(), pressure.clone()),
            WindField::Solved { solver, .. } => (solver.velocity()?, solver.pressure()?),
        };
        let mut depth = vec![0.0f32; mesh.vertices.len()];
        let laid = match snow {
            Some(snow) => snow.cover().depths()?,
            None => Vec::new(),
        };
        for (g, d) in laid.into_iter().enumerate() {
            if let Some(&v) = self.setup.domain.ground.volume_vertices.get(g) {
                depth[v as usize] = d;
            }
        }
        let tets = mesh.elements(ElementKind::Tetrahedra).with_refs::<4>();
        let triangles = mesh.elements(ElementKind::Triangles).with_refs::<3>();
        let velocity: Vec<[f32; 3]> = velocity.iter().map(|u| [u[0], u[1], u[2]]).collect();
        write_vtu_file(
            path,
            &mesh.vertices,
            &tets,
            &triangles,
            &[
                VtuArray::vectors("velocity", &velocity),
                VtuArray::scalars("pressure", &pressure),
                VtuArray::scalars("snow_depth", &depth),
            ],
        )?;
        Ok(())
    }

    fn check(&mut self, _context: &Context, _frame: u64) -> sim::Result<()> {
        let Some((snow, wind)) = self.state.as_mut() else {
            return Err(sim::Error::Internal("snow checked before prepare".into()));
        };
        // The wind: finite at every vertex.
        let velocity = match wind {
            WindField::Fixed { velocity, .. } => velocity.clone(),
            WindField::Solved { solver, .. } => solver.velocity()?,
        };
        if let Some((v, u)) = velocity
            .iter()
            .enumerate()
            .find(|(_, u)| !u[..3].iter().all(|c| c.is_finite()))
        {
            return Err(sim::Error::Invariant(format!(
                "stage wind: the velocity at mesh vertex {v} is {:?}",
                &u[..3]
            )));
        }
        if let Some(snow) = snow.as_ref() {
            snow.check_invariants()?;
        }
        Ok(())
    }

    fn set_sorting(&mut self, on: bool) -> bool {
        let mode = if on {
            crate::scene::SortMode::Partial
        } else {
            crate::scene::SortMode::Off
        };
        self.setup.config.sort.mode = mode;
        match self.state.as_mut() {
            Some((Some(snow), _)) => snow.set_sort(mode).is_ok(),
            _ => true,
        }
    }
}
