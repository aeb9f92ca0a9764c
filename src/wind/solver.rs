//! `wind::Solver`: the wind's fields on a gml instance, and its time step.

use std::time::Instant;

use serde::Serialize;

use super::boundary::{Boundary, FIXED_PRESSURE};
use super::diagonal;
use super::error::{Result, WindError};
use super::geometry::{self, Geometry};
use super::history::History;
use super::kernels::{self, Fields, Kernels, Params};
use super::operator;
use crate::budget::{self, Estimate};
use crate::cl::{self, Context, Timeline};
use crate::counters::Counters;
use crate::gml::{Gml, MeshKind, Parameters, Reduction, VectorMode};
use crate::meshio::{ElementKind, Mesh};
use crate::scene::BoundaryRefs;

/// Air density, kg/m³: pressure in Pa is ρ times the solver's kinematic pressure.
pub const AIR_DENSITY: f64 = 1.2;

/// How the solver runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Settings {
    /// The wind's time step, s (`wind.step`); `None` for the default from the mesh.
    pub step: Option<f64>,
    /// Convergence: the pressure solve stops when the RMS divergence is below this times the
    /// RMS divergence of the initial profile field (`wind.pressure_tolerance`).
    pub tolerance: f64,
    /// Most CG iterations per step (`wind.pressure_iterations`).
    pub iterations: u32,
    /// Most CG iterations of the start-up solve, which starts cold.
    pub startup_iterations: u32,
    /// A solve that has not converged after the iterations enqueued at once (as many as the
    /// last solve needed) goes on in batches of this many, waiting for the device after
    /// each; a solve stops within this many iterations only below half the tolerance
    /// (see [`EARLY_MARGIN`]).
    pub check_every: u32,
    /// The advection walk's hop limit.
    pub max_hops: u32,
    /// The walk's inside tolerance, m.
    pub walk_tolerance: f64,
    /// Time every stage with profiling events (costs ~8 µs per launch on NVIDIA).
    pub profile: bool,
    /// How the velocity is advected (`wind.advection`).
    pub advection: crate::scene::Advection,
    /// Apply the pressure operator from coefficients assembled per vertex (two vertex kernels)
    /// where the mesh's one-rings are narrow enough ([`operator::MAX_WIDTH`]), rather than
    /// through the tetrahedra (four kernels, about three times the traffic).
    pub assemble_operator: bool,
    /// Earlier solves' corrections the initial guess is projected onto
    /// (`wind.pressure_history`, [`super::history`]); 0: the last pressure alone.
    pub history: usize,
    /// Measure the projected field's divergence and largest speed every this many steps (1:
    /// every step). The other steps skip those three launches and do not wait for their
    /// projection: they report the solve's own residual as the divergence after (the same
    /// quantity, from the CG's recursion), the last measured largest speed and the last
    /// step's kinetic energy, and a non-finite projection is caught at the next step's solve
    /// through the kinetic energy the projection folds. The start-up solve and a refresh's
    /// re-projection always measure.
    pub verify_every: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            step: None,
            tolerance: 1e-2,
            iterations: 50,
            startup_iterations: 2000,
            check_every: 8,
            max_hops: 64,
            walk_tolerance: 1e-3,
            profile: false,
            advection: crate::scene::Advection::Linear,
            assemble_operator: true,
            history: super::history::DEFAULT_HISTORY,
            verify_every: 1,
        }
    }
}

impl Settings {
    fn check(&self) -> Result<()> {
        let bad = |what: &str| Err(WindError::Setting(what.to_string()));
        if self.iterations == 0 {
            return bad("pressure_iterations is 0: the pressure would never be solved");
        }
        if !(self.tolerance > 0.0 && self.tolerance.is_finite()) {
            return bad(&format!(
                "pressure_tolerance = {} must be positive and finite",
                self.tolerance
            ));
        }
        if let Some(dt) = self.step
            && !(dt > 0.0 && dt.is_finite())
        {
            return bad(&format!("step = {dt} s must be positive and finite"));
        }
        if self.history > super::history::MAX_HISTORY {
            return bad(&format!(
                "pressure_history = {} keeps more than the {} corrections the solver can",
                self.history,
                super::history::MAX_HISTORY
            ));
        }
        if self.check_every == 0
            || self.max_hops == 0
            || self.startup_iterations == 0
            || self.verify_every == 0
        {
            return bad(
                "check_every, max_hops, startup_iterations and verify_every must be positive",
            );
        }
        Ok(())
    }
}

/// What one step (or the start-up solve) did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StepStats {
    /// Step number, 0 for the start-up solve.
    pub step: u64,
    /// CG iterations run.
    pub iterations: u32,
    /// Whether the pressure reached the tolerance.
    pub converged: bool,
    /// RMS divergence (1/s) before the projection.
    pub divergence_before: f64,
    /// RMS divergence (1/s) after it: measured on the new field where `verified`, else the
    /// solve's residual (the same quantity from the CG's recursion).
    pub divergence_after: f64,
    /// Kinetic energy of the air, J: of this step's field where `verified`, else of the last
    /// step's (an unmeasured step does not wait for its projection).
    pub kinetic_energy: f64,
    /// Largest speed, m/s: of this step's field where `verified`, else of the last verified
    /// step's.
    pub max_speed: f64,
    /// Whether the projected field's divergence and largest speed were measured this step
    /// ([`Settings::verify_every`]).
    pub verified: bool,
    /// Advection walks that hit their hop limit.
    pub lost_walks: u64,
    /// RMS divergence estimated from the CG residual after each batch of iterations
    /// `(iterations run, 1/s)`: the last one is the solve's.
    pub residuals: Vec<(u32, f64)>,
    /// Wall-clock time of the step, s.
    pub wall: f64,
}

/// The wind solver: a gml instance holding the air mesh, the fields and the kernels.
pub struct Solver {
    pub(super) gml: Gml,
    pub(super) fields: Fields,
    pub(super) kernels: Kernels,
    /// The assembled pressure operator, where the settings and the mesh allow it.
    pub(super) assembled: Option<kernels::Assembled>,
    /// The kept corrections the initial guess is projected onto, where the settings ask.
    pub(super) history: Option<History>,
    /// Iterations the next solve enqueues before its first wait: what the last one needed.
    pub(super) predicted_iterations: u32,
    /// The convergence limit in the device's parameters, once written.
    pub(super) uploaded_limit: Option<f64>,
    pub(super) params: Parameters<Params>,
    pub(super) settings: Settings,
    pub(super) dt: f64,
    pub(super) volume: f64,
    pub(super) unknown_volume: f64,
    pub(super) initial_divergence: f64,
    pub(super) divergence_floor: f64,
    /// The boundary conditions of set-up (a ground refresh keeps its own mirror of the moved
    /// ones: [`boundary`](Self::boundary)).
    pub(super) boundary: Boundary,
    pub(super) vertices: Vec<[f64; 3]>,
    pub(super) tets: Vec<([u32; 4], i32)>,
    pub(super) triangles: Vec<([u32; 3], i32)>,
    pub(super) timeline: Timeline,
    pub(super) counters: Counters,
    pub(super) steps: u64,
    /// The largest speed the last verified step measured, m/s.
    pub(super) last_max_speed: f64,
    /// The step whose projection last folded the kinetic energy into the parameters (0: the
    /// start-up solve; a refresh's re-projection counts as the step it follows).
    pub(super) projected_step: u64,
    /// The ground refresh's columns and device data, once attached
    /// ([`set_ground_columns`](Self::set_ground_columns)).
    pub(super) refresh: Option<Box<super::refresh::GroundRefresh>>,
}

/// Which divergence a gather measures: its slot of the parameters' `div_sq`.
#[derive(Clone, Copy)]
enum Divergence {
    /// The advected field's, before the solve.
    Before = 0,
    /// The projected field's.
    After = 1,
}

impl Solver {
    /// Sets the solver up on `context` for `mesh` (tetrahedra and boundary triangles whose
    /// references `sides` names), the wind along `direction` and `inflow` (the profile at
    /// every vertex, xyz m/s). Checks the mesh, the boundary and the device's memory, uploads
    /// everything and compiles the kernels; the field starts as the profile, not yet projected
    /// (see [`startup`](Self::startup)).
    pub fn new(
        context: Context,
        mesh: &Mesh,
        sides: &BoundaryRefs,
        direction: [f64; 2],
        inflow: &[[f32; 4]],
        settings: Settings,
    ) -> Result<Self> {
        settings.check()?;
        let tets = mesh.elements(ElementKind::Tetrahedra).with_refs::<4>();
        let triangles = mesh.elements(ElementKind::Triangles).with_refs::<3>();
        let vertices = mesh.vertices.clone();
        let nodes: Vec<[u32; 4]> = tets.iter().map(|t| t.0).collect();
        check_inflow(inflow, &vertices)?;
        let ball = diagonal::vertex_ball(vertices.len(), &nodes);
        let rings = settings
            .assemble_operator
            .then(|| operator::Rings::new(&ball, &nodes))
            .filter(|r| r.width() <= operator::MAX_WIDTH);
        let width = rings.as_ref().map_or(0, operator::Rings::width);
        check_memory(
            context.info(),
            vertices.len(),
            tets.len(),
            width,
            settings.history,
        )?;
        let Host {
            geometry,
            boundary,
            diagonal,
            unknown_volume,
            dt,
        } = Host::new(
            &vertices, &nodes, &triangles, &ball, sides, direction, inflow, &settings,
        )?;
        let neighbours = geometry::neighbours(&nodes)?;

        let mut gml = Gml::with_context(context);
        if !gml.has_fp64() {
            return Err(WindError::Setting(format!(
                "the pressure solve computes in double precision, and {} has no fp64 \
                 (cl_khr_fp64)",
                gml.device().name
            )));
        }
        // Each under its own name, so `$SNOWSIM_KERNEL_DIR` replaces it and build logs cite it.
        gml.include_toolkit_source(cl::Source::embedded(
            "tet_walk.cl",
            include_str!("../../kernels/tet_walk.cl"),
        )?);
        gml.include_toolkit_source(cl::Source::embedded(
            "wind.cl",
            include_str!("../../kernels/wind.cl"),
        )?);
        // The vertices and tetrahedra only (the boundary triangles stay on the host).
        let refs = (mesh.vertex_refs.len() == vertices.len()).then_some(&mesh.vertex_refs[..]);
        let elements = mesh.elements(ElementKind::Tetrahedra);
        gml.new_mesh(MeshKind::Vertices, vertices.len())?;
        gml.set_vertices(0, &vertices, refs)?;
        gml.new_mesh(MeshKind::Tetrahedra, elements.len())?;
        gml.set_elements(
            MeshKind::Tetrahedra,
            0,
            elements.node_slice(),
            Some(elements.refs()),
        )?;
        let params = gml.new_parameters::<Params>(kernels::PARAMETERS)?;
        let fields = Fields::new(&mut gml)?;
        let bnd: Vec<[f32; 8]> = boundary
            .projector
            .iter()
            .zip(&geometry.lumped)
            .zip(&boundary.inflow_flux)
            .map(|((p, m), f)| {
                [
                    p[0] as f32,
                    p[1] as f32,
                    p[2] as f32,
                    p[3] as f32,
                    p[4] as f32,
                    p[5] as f32,
                    (1.0 / m) as f32,
                    *f as f32,
                ]
            })
            .collect();
        let coef: Vec<[f32; 16]> = geometry
            .coefficients
            .chunks_exact(4)
            .map(|c| {
                let mut out = [0.0; 16];
                for (j, v) in c.iter().enumerate() {
                    out[4 * j..4 * j + 4].copy_from_slice(v);
                }
                out
            })
            .collect();
        let inv_diag: Vec<f64> = diagonal
            .iter()
            .zip(&boundary.flags)
            .map(|(d, f)| {
                if f & FIXED_PRESSURE != 0 || *d <= 0.0 {
                    0.0
                } else {
                    1.0 / d
                }
            })
            .collect();
        gml.set_block(fields.inflow, 0, inflow)?;
        gml.set_block(fields.bnd, 0, &bnd)?;
        gml.set_block(fields.flags, 0, &boundary.flags)?;
        gml.set_block(fields.inv_diag, 0, &inv_diag)?;
        gml.set_block(fields.coef, 0, &coef)?;
        gml.set_block(fields.ngb, 0, &neighbours)?;
        let kernels = Kernels::new(&mut gml, &fields)?;
        let assembled = match &rings {
            Some(rings) => {
                let tables = operator::Assembled::new(rings, &ball, &nodes, &geometry);
                Some(kernels::Assembled::new(&mut gml, &fields, &tables)?)
            }
            None => None,
        };
        let history = match settings.history {
            0 => None,
            slots => Some(History::new(&mut gml, &fields, slots)?),
        };
        let vertex_count = i32::try_from(vertices.len()).map_err(|_| {
            WindError::Mesh(format!(
                "{} vertices: the wind's kernels index them with 32-bit integers",
                vertices.len()
            ))
        })?;
        let host = Params {
            vertices: vertex_count,
            early_iterations: i32::try_from(settings.check_every).unwrap_or(i32::MAX),
            dt: dt as f32,
            inv_dt: (1.0 / dt) as f32,
            tolerance: settings.walk_tolerance as f32,
            max_hops: settings.max_hops as i32,
            ..Params::default()
        };
        gml.upload_parameters(&params, &host)?;
        let tets_len = tets.len().max(1);
        let mut solver = Self {
            gml,
            fields,
            kernels,
            assembled,
            history,
            predicted_iterations: settings.check_every.max(1),
            uploaded_limit: None,
            params,
            settings,
            dt,
            volume: geometry.volume,
            unknown_volume,
            initial_divergence: 0.0,
            divergence_floor: FLOOR * max_speed(inflow)
                / (geometry.volume / tets_len as f64).cbrt(),
            boundary,
            vertices,
            tets,
            triangles,
            timeline: Timeline::new(settings.profile),
            counters: Counters::default(),
            steps: 0,
            last_max_speed: 0.0,
            projected_step: 0,
            refresh: None,
        };
        solver.reset()?;
        Ok(solver)
    }

    /// Sets the field back to the inflow profile (boundary conditions applied, not
    /// projected) and the pressure to zero, and measures the profile's RMS divergence, the
    /// scale of the pressure tolerance.
    pub fn reset(&mut self) -> Result<()> {
        let zeros = vec![0.0f64; self.vertices.len()];
        self.gml.set_block(self.fields.pressure, 0, &zeros)?;
        // The walks start afresh, as in a new solver.
        self.gml
            .set_block(self.fields.hint, 0, &vec![0i32; self.vertices.len()])?;
        let mut tl = Timeline::new(false);
        tl.stage("wind.reset");
        self.gml.enqueue(self.kernels.reset, &mut tl)?;
        self.clear_history(&mut tl)?;
        self.enqueue_divergence(self.kernels.tet_div_star, Divergence::Before, &mut tl)?;
        tl.wait()?;
        let p = self.gml.download_parameters(&self.params)?;
        self.initial_divergence = (p.div_sq[0] / self.unknown_volume).sqrt();
        self.steps = 0;
        self.projected_step = 0;
        Ok(())
    }

    /// The start-up solve: projects the profile field cold, with its own iteration cap.
    pub fn startup(&mut self) -> Result<StepStats> {
        let start = Instant::now();
        let mut tl = std::mem::replace(&mut self.timeline, Timeline::new(false));
        let result = self.project_star(self.settings.startup_iterations, 0, true, &mut tl, start);
        self.finish_timeline(tl)?;
        // The counters are per step: the start-up solve is reported on its own.
        self.counters.clear();
        result
    }

    /// One wind step: advection, divergence, pressure solve, projection, statistics.
    pub fn step(&mut self) -> Result<StepStats> {
        let mut tl = std::mem::replace(&mut self.timeline, Timeline::new(false));
        let result = self.step_in(&mut tl);
        self.finish_timeline(tl)?;
        result
    }

    /// One wind step whose launches go into `timeline` (a frame's, so that the frame's stage
    /// times show the wind's stages); the solver's own counters do not see them.
    pub fn step_in(&mut self, timeline: &mut Timeline) -> Result<StepStats> {
        let start = Instant::now();
        self.steps += 1;
        self.enqueue_advection(timeline)?;
        let verify = self
            .steps
            .is_multiple_of(u64::from(self.settings.verify_every.max(1)));
        self.project_star(
            self.settings.iterations,
            self.steps,
            verify,
            timeline,
            start,
        )
    }

    /// Enqueues the advection of `Vel` into `Str` (linear, or BFECC's three passes).
    fn enqueue_advection(&mut self, tl: &mut Timeline) -> Result<()> {
        tl.stage("wind.advect");
        match self.settings.advection {
            crate::scene::Advection::Linear => self.gml.enqueue(self.kernels.advect, tl)?,
            crate::scene::Advection::Bfecc => {
                for kernel in self.kernels.bfecc {
                    self.gml.enqueue(kernel, tl)?;
                }
            }
        }
        Ok(())
    }

    pub(super) fn finish_timeline(&mut self, mut tl: Timeline) -> Result<()> {
        if tl.records_events() {
            let times = tl.resolve()?;
            self.counters.add_frame(&times);
        }
        self.timeline = Timeline::new(self.settings.profile);
        Ok(())
    }

    /// Divergence of `Str`, pressure solve, projection into `Vel`, statistics (the projected
    /// field's divergence and largest speed measured where `verify`).
    pub(super) fn project_star(
        &mut self,
        max_iterations: u32,
        step: u64,
        verify: bool,
        tl: &mut Timeline,
        start: Instant,
    ) -> Result<StepStats> {
        tl.stage("wind.divergence");
        self.enqueue_divergence(self.kernels.tet_div_star, Divergence::Before, tl)?;
        tl.stage("wind.pressure");
        let (iterations, residuals, converged, solved) = self.solve(max_iterations, tl)?;
        // The last projection, which an unmeasured step did not wait for, is checked here:
        // its energy was folded before this solve's wait.
        self.check_energy(&solved, self.projected_step)?;
        if let Some(h) = self.history {
            tl.stage("wind.history");
            self.gml.enqueue(h.store, tl)?;
        }
        tl.stage("wind.project");
        self.gml.enqueue(self.kernels.grad_pressure, tl)?;
        self.gml.enqueue(self.kernels.project, tl)?;
        self.projected_step = step;
        // The energy and the lost walks were folded by the projection and the advection.
        if verify {
            tl.stage("wind.check");
            self.enqueue_divergence(self.kernels.tet_div_vel, Divergence::After, tl)?;
            self.gml.reduce_vector_into_parameters(
                self.fields.vel,
                Reduction::Linf,
                VectorMode::Norm,
                &self.params,
                kernels::MAX_SPEED_OFFSET,
                tl,
            )?;
        }
        // An unmeasured step does not wait for its projection: what it reports was read by
        // the solve's wait, and its projection is checked by the next step's.
        let (p, divergence_after, max_speed) = match verify {
            true => {
                let p = self.gml.download_parameters(&self.params)?;
                let after = (p.div_sq[1] / self.unknown_volume).sqrt();
                (p, after, f64::from(p.max_speed))
            }
            false => (
                solved,
                residuals.last().map_or(f64::NAN, |r| r.1),
                self.last_max_speed,
            ),
        };
        let stats = StepStats {
            step,
            iterations,
            converged,
            divergence_before: (p.div_sq[0] / self.unknown_volume).sqrt(),
            divergence_after,
            kinetic_energy: p.energy * AIR_DENSITY,
            max_speed,
            verified: verify,
            lost_walks: p.lost.max(0.0) as u64,
            residuals,
            wall: start.elapsed().as_secs_f64(),
        };
        if !(stats.divergence_before.is_finite()) {
            return Err(self.not_finite("advect", step, self.fields.star, "velocity"));
        }
        if verify {
            self.last_max_speed = stats.max_speed;
        }
        if !(stats.max_speed.is_finite()
            && stats.divergence_after.is_finite()
            && stats.kinetic_energy.is_finite())
        {
            let f = self.fields;
            let p = self.gml.read_all(f.pressure)?;
            if let Some(v) = p.iter().position(|x| !x.is_finite()) {
                return Err(WindError::NotFinite {
                    stage: "pressure",
                    step,
                    field: "pressure",
                    vertex: v,
                });
            }
            return Err(self.not_finite("project", step, f.vel, "velocity"));
        }
        Ok(stats)
    }

    /// Reads the parameters (blocking) and checks the last step's projection: what an
    /// unmeasured step leaves to the next (see [`Settings::verify_every`]), for a run that
    /// ends here or reads the field now.
    pub fn check_last_step(&mut self) -> Result<()> {
        let p = self.gml.download_parameters(&self.params)?;
        self.check_energy(&p, self.projected_step)
    }

    /// A non-finite kinetic energy in `p`, folded by step `step`'s projection, as the error
    /// naming the field's first non-finite vertex.
    fn check_energy(&mut self, p: &Params, step: u64) -> Result<()> {
        if p.energy.is_finite() {
            return Ok(());
        }
        Err(self.not_finite("project", step, self.fields.vel, "velocity"))
    }

    fn not_finite(
        &mut self,
        stage: &'static str,
        step: u64,
        field: crate::gml::Solution<[f32; 4]>,
        name: &'static str,
    ) -> WindError {
        let vertex = self
            .gml
            .read_all(field)
            .ok()
            .and_then(|v| v.iter().position(|u| !u.iter().all(|x| x.is_finite())))
            .unwrap_or(0);
        WindError::NotFinite {
            stage,
            step,
            field: name,
            vertex,
        }
    }

    /// Enqueues the divergence of the field `tet_div` reads into `Div` and `B`, its
    /// `Σ m div²` folded into the parameters' slot for `when`.
    fn enqueue_divergence(
        &mut self,
        tet_div: crate::gml::KernelId,
        when: Divergence,
        tl: &mut Timeline,
    ) -> Result<()> {
        self.gml.enqueue(tet_div, tl)?;
        self.gml
            .enqueue(self.kernels.gather_div[when as usize], tl)?;
        Ok(())
    }

    /// Enqueues `q = A d` into `Q` and `d·q` into the parameters' `pq` (or `A x` alone, for
    /// the start). The product's last kernel folds `d·q`: assembled, the second vertex
    /// kernel; through the tetrahedra, the ball gather, one launch per degree table.
    fn enqueue_operator(&mut self, of: Operand, tl: &mut Timeline) -> Result<()> {
        let k = self.kernels;
        if let Some(a) = self.assembled {
            let (grad, q) = match of {
                Operand::Direction => (a.grad_dir, a.q_dir),
                Operand::Pressure => (a.grad_pressure, a.q),
            };
            self.gml.enqueue(grad, tl)?;
            self.gml.enqueue(q, tl)?;
            return Ok(());
        }
        let grad = match of {
            Operand::Direction => k.grad_dir,
            Operand::Pressure => k.grad_pressure,
        };
        self.gml.enqueue(grad, tl)?;
        self.gml.enqueue(k.gather_grad, tl)?;
        self.gml.enqueue(k.tet_div_grad, tl)?;
        let gather_q = match of {
            Operand::Direction => k.gather_q[1],
            Operand::Pressure => k.gather_q[0],
        };
        self.gml.enqueue(gather_q, tl)?;
        Ok(())
    }

    /// Whether the pressure operator is applied assembled (two vertex kernels) rather than
    /// through the tetrahedra.
    pub fn operator_assembled(&self) -> bool {
        self.assembled.is_some()
    }

    /// The assembled operator's entries per vertex (its widest one-ring), if assembled.
    pub fn operator_width(&self) -> Option<usize> {
        self.assembled.map(|a| a.width)
    }

    /// The assembled operator's entries per vertex on average (its mean one-ring): what a
    /// product reads, the rows ending before the padding.
    pub fn operator_mean_width(&self) -> Option<f64> {
        self.assembled.map(|a| a.mean_width)
    }

    /// Jacobi-preconditioned CG on `A x = B`, warm-started from the pressure in `X`; the
    /// scalars stay on the device, folded by the kernels that produce their terms (the
    /// operator's second kernel sums `d·q`, the update `r·z` and `Σ r²/m`). The update leaves
    /// `Σ r²/m` in the parameters, where every later iteration kernel reads it and does
    /// nothing once it is below the limit. So the host enqueues a whole batch of iterations
    /// (as many as the last solve needed) and waits once, reading how many ran and the last
    /// residual, rather than waiting at every check with the device idle meanwhile. A solve
    /// that has not converged at the batch's end goes on in batches of
    /// [`Settings::check_every`].
    ///
    /// The residual tested is the recursion's `r`, kept in double. Until session 7 each check
    /// applied the operator once more for the true `b − A x` (checks at 1, 2, 4, then every 8
    /// iterations); in double the recursion stays on the true residual (the final divergence,
    /// measured on the projected field, says so every step), and testing it after every
    /// iteration stops each solve at its first converged iteration for free. With f32
    /// vectors the recursive residual had drifted from the true one by 2× within 50
    /// iterations on a hill mesh. The M⁻¹-weighted residual is not monotone under CG (it rose
    /// 1.7× for 16 iterations mid-solve there), so there is no stagnation stop: the
    /// iteration cap ends a solve that cannot converge.
    fn solve(&mut self, max_iterations: u32, tl: &mut Timeline) -> Result<Solve> {
        let k = self.kernels;
        let limit = self.residual_limit();
        self.set_residual_limit(limit)?;
        let volume = self.unknown_volume;
        let dt = self.dt;
        let every = self.settings.check_every;
        // The RMS divergence `Σ r²/m` stands for after `at` iterations (scaled in the early
        // ones, see `EARLY_MARGIN`).
        let rms = |rr: f64, at: u32| {
            let scale = if at < every { EARLY_SCALE } else { 1.0 };
            dt * (rr.max(0.0) / scale / volume).sqrt()
        };
        // `gather_div` set the parameters' residual to infinity: the start is not skipped.
        self.enqueue_operator(Operand::Pressure, tl)?;
        match self.history {
            Some(h) => {
                self.gml.enqueue(h.coefficients, tl)?;
                self.gml.enqueue(h.start, tl)?;
            }
            None => self.gml.enqueue(k.cg_start, tl)?,
        }
        let mut residuals = Vec::new();
        let mut slot = 0usize;
        let mut enqueued = 0;
        let mut horizon = self.predicted_iterations.clamp(1, max_iterations.max(1));
        let (ran, converged, last) = loop {
            while enqueued < horizon.min(max_iterations) {
                self.enqueue_operator(Operand::Direction, tl)?;
                self.gml.enqueue(k.cg_update[slot], tl)?;
                self.gml.enqueue(k.cg_direction[slot], tl)?;
                slot = 1 - slot;
                enqueued += 1;
            }
            let p = self.gml.download_parameters(&self.params)?;
            let ran = p.iterations.max(0) as u32;
            residuals.push((ran, rms(p.rr, ran)));
            if p.rr <= limit {
                break (ran, true, p);
            }
            if enqueued >= max_iterations {
                break (ran, false, p);
            }
            horizon = enqueued + every.max(1);
        };
        // The next solve's first batch: as many iterations as this one needed.
        self.predicted_iterations = ran.max(1);
        Ok((ran, residuals, converged, last))
    }

    /// `Σ r²/m` at or below which a solve has converged: an RMS divergence of
    /// [`absolute_tolerance`](Self::absolute_tolerance).
    fn residual_limit(&self) -> f64 {
        let t = self.absolute_tolerance() / self.dt;
        t * t * self.unknown_volume
    }

    /// Writes `limit` into the device's parameters where it changed (a blocking write, once
    /// per change of the tolerance).
    fn set_residual_limit(&mut self, limit: f64) -> Result<()> {
        if self.uploaded_limit != Some(limit) {
            self.edit_parameters(|p| p.rr_limit = limit)?;
            self.uploaded_limit = Some(limit);
        }
        Ok(())
    }

    /// Changes the device's parameters with `edit`: a blocking read and write, outside the
    /// steps' queues of launches.
    pub(super) fn edit_parameters(&mut self, edit: impl FnOnce(&mut Params)) -> Result<()> {
        let mut p = self.gml.download_parameters(&self.params)?;
        edit(&mut p);
        self.gml.upload_parameters(&self.params, &p)?;
        Ok(())
    }

    /// Empties the pressure history (its corrections belong to another operator or another
    /// flow).
    pub(super) fn clear_history(&mut self, tl: &mut Timeline) -> Result<()> {
        if let Some(h) = self.history {
            self.gml.enqueue(h.clear, tl)?;
        }
        Ok(())
    }

    /// The pressure history's kept corrections, oldest first after the one replaced next
    /// (empty slots left out; none without a history).
    pub fn history(&mut self) -> Result<Vec<super::history::Slot>> {
        let Some(h) = self.history else {
            return Ok(Vec::new());
        };
        let p = self.gml.download_parameters(&self.params)?;
        let basis = super::history::columns(&self.gml.read_all(h.basis)?, h.slots);
        let image = super::history::columns(&self.gml.read_all(h.image)?, h.slots);
        let next = usize::try_from(p.history_next).unwrap_or(0);
        let kept: Vec<usize> = (0..h.slots)
            .map(|k| (next + k) % h.slots)
            .filter(|&k| p.history_valid[k] != 0)
            .collect();
        Ok(kept
            .iter()
            .map(|&k| super::history::Slot {
                correction: basis[k].clone(),
                image: image[k].clone(),
                gram: kept.iter().map(|&j| p.history_gram[k][j]).collect(),
            })
            .collect())
    }

    /// `1/m` at every vertex (the lumped volume's inverse, m⁻³) as the device holds it: the
    /// weights of the residual norm the solve's stop tests.
    pub fn inverse_lumped(&mut self) -> Result<Vec<f32>> {
        Ok(self
            .gml
            .read_all(self.fields.bnd)?
            .iter()
            .map(|b| b[6])
            .collect())
    }

    /// The per-vertex terms between the pressure operator's halves as the device holds them:
    /// the boundary projector (xx, xy, xz, yy, yz, zz), `1/m` and one more lane (`bnd`), and
    /// the vertex flags; what a rank's piece of the operator needs of the whole mesh
    /// ([`PieceOperator`](super::piece::PieceOperator)).
    pub fn pressure_terms(&mut self) -> Result<(Vec<[f32; 8]>, Vec<i32>)> {
        Ok((
            self.gml.read_all(self.fields.bnd)?,
            self.gml.read_all(self.fields.flags)?,
        ))
    }

    /// The Jacobi preconditioner of the pressure solve as the device holds it: `1/A_vv` at
    /// every vertex, 0 where the pressure is fixed.
    pub fn inverse_diagonal(&mut self) -> Result<Vec<f64>> {
        Ok(self.gml.read_all(self.fields.inv_diag)?)
    }

    /// Corrections the pressure history keeps at most (0 without one).
    pub fn history_slots(&self) -> usize {
        self.history.map_or(0, |h| h.slots)
    }

    /// Switches the per-stage timing on (clearing what was counted) or off.
    pub fn set_profiling(&mut self, on: bool) {
        self.settings.profile = on;
        self.timeline = Timeline::new(on);
        if on {
            self.counters.clear();
        }
    }

    /// The wind's time step, s.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// The RMS divergence of the initial profile field (1/s): the pressure tolerance's scale.
    pub fn initial_divergence(&self) -> f64 {
        self.initial_divergence
    }

    /// The absolute tolerance on the RMS divergence, 1/s: the relative tolerance times the
    /// profile's RMS divergence, but not below what f32 fields can resolve
    /// ([`divergence_floor`](Self::divergence_floor)), which matters when the profile is
    /// already nearly divergence-free (uniform flow over flat ground).
    pub fn absolute_tolerance(&self) -> f64 {
        (self.settings.tolerance * self.initial_divergence).max(self.divergence_floor)
    }

    /// The smallest RMS divergence the solve aims for, 1/s: `1e-5 · U / h` with `U` the
    /// largest inflow speed and `h` the mean cell size. The velocities are f32, ~1e-7 of `U`,
    /// and a divergence is a difference of them over `h`; the solve itself is in double.
    pub fn divergence_floor(&self) -> f64 {
        self.divergence_floor
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Steps run since the start or the last reset.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The boundary conditions (after a ground refresh, the host's mirror on the moved
    /// vertices, computed at the first call after it: see
    /// [`refresh_ground`](Self::refresh_ground)).
    pub fn boundary(&self) -> &Boundary {
        self.moved_boundary().unwrap_or(&self.boundary)
    }

    /// Total volume of the air, m³.
    pub fn volume(&self) -> f64 {
        self.volume
    }

    /// The mesh's vertices.
    pub fn vertices(&self) -> &[[f64; 3]] {
        &self.vertices
    }

    /// The tetrahedra and their references.
    pub fn tetrahedra(&self) -> &[([u32; 4], i32)] {
        &self.tets
    }

    /// The boundary triangles and their references.
    pub fn triangles(&self) -> &[([u32; 3], i32)] {
        &self.triangles
    }

    /// The velocity at every vertex (xyz m/s).
    pub fn velocity(&mut self) -> Result<Vec<[f32; 4]>> {
        Ok(self.gml.read_all(self.fields.vel)?)
    }

    /// The inflow profile at every vertex (xyz m/s): the boundary value on inflow sides and
    /// the initial field.
    pub fn inflow(&mut self) -> Result<Vec<[f32; 4]>> {
        Ok(self.gml.read_all(self.fields.inflow)?)
    }

    /// The pressure at every vertex, Pa (ρ times the kinematic pressure the solver computes).
    pub fn pressure(&mut self) -> Result<Vec<f32>> {
        let p = self.gml.read_all(self.fields.pressure)?;
        Ok(p.iter().map(|x| (x * AIR_DENSITY) as f32).collect())
    }

    /// The divergence at every vertex after the last projection, 1/s (zero where the
    /// pressure is fixed).
    pub fn divergence(&mut self) -> Result<Vec<f32>> {
        Ok(self.gml.read_all(self.fields.div)?)
    }

    /// Sets the velocity (tests: a field to project or advect).
    pub fn set_velocity(&mut self, velocity: &[[f32; 4]]) -> Result<()> {
        self.gml.set_block(self.fields.vel, 0, velocity)?;
        Ok(())
    }

    /// Sets the velocity after advection (tests: a field to project).
    pub fn set_star(&mut self, velocity: &[[f32; 4]]) -> Result<()> {
        self.gml.set_block(self.fields.star, 0, velocity)?;
        Ok(())
    }

    /// Advects the velocity by one step into the intermediate field and returns it, without
    /// projecting (tests and diagnostics).
    pub fn advect(&mut self) -> Result<Vec<[f32; 4]>> {
        let mut tl = Timeline::new(false);
        self.enqueue_advection(&mut tl)?;
        tl.wait()?;
        Ok(self.gml.read_all(self.fields.star)?)
    }

    /// Applies the pressure operator `A = Gᵀ P M_L⁻¹ G` to `p` on the device (tests). Leaves
    /// `p` as the pressure.
    pub fn apply_operator(&mut self, p: &[f64]) -> Result<Vec<f64>> {
        self.gml.set_block(self.fields.pressure, 0, p)?;
        // The operator's kernels skip their work once a solve's residual is below the limit.
        self.edit_parameters(|p| p.rr = f64::INFINITY)?;
        let mut tl = Timeline::new(false);
        tl.stage("wind.pressure");
        self.enqueue_operator(Operand::Pressure, &mut tl)?;
        tl.wait()?;
        Ok(self.gml.read_all(self.fields.q)?)
    }

    /// Sets how many iterations the next solve enqueues before it first waits (tests and
    /// benchmarks; the solver sets it to what the last solve needed).
    pub fn set_first_batch(&mut self, iterations: u32) {
        self.predicted_iterations = iterations.max(1);
    }

    /// Projects the field set by [`set_star`](Self::set_star) (tests).
    pub fn project(&mut self, max_iterations: u32) -> Result<StepStats> {
        let mut tl = Timeline::new(false);
        self.project_star(max_iterations, self.steps, true, &mut tl, Instant::now())
    }

    /// The OpenCL context the solver runs on.
    pub fn context(&self) -> &crate::cl::Context {
        self.gml.context()
    }

    /// The device velocity field, for the snow and the renderer (per vertex, xyz m/s).
    pub fn velocity_buffer(&mut self) -> Result<crate::gml::FieldBuffer<[f32; 4]>> {
        Ok(self.gml.field_buffer(self.fields.vel)?)
    }

    /// Device time per stage, summed over the steps run with `profile` on (one frame per
    /// step).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Net flux through each boundary reference `(reference, m³/s)`, outward positive, from
    /// the vertex velocities on its triangles.
    pub fn fluxes(&mut self) -> Result<Vec<(i32, f64)>> {
        let u = self.velocity()?;
        let mut by_ref: std::collections::BTreeMap<i32, f64> = Default::default();
        for ((nodes, r), an) in self.triangles.iter().zip(&self.boundary().triangle_normals) {
            let mut mean = glam::DVec3::ZERO;
            for &v in nodes {
                let w = u[v as usize];
                mean += glam::DVec3::new(w[0].into(), w[1].into(), w[2].into());
            }
            *by_ref.entry(*r).or_default() += (mean / 3.0).dot(*an);
        }
        Ok(by_ref.into_iter().collect())
    }
}

/// The fraction of the tolerance a solve must reach to stop within its first
/// [`Settings::check_every`] iterations: with true-residual checks, stopping just under the
/// tolerance after 1–4 iterations left the next steps harder (1–2 % of the valley's steps then
/// hit the iteration cap).
pub const EARLY_MARGIN: f64 = 0.5;

/// What the early iterations multiply `Σ r²/m` by, so that one limit serves every iteration:
/// `1 / EARLY_MARGIN²`.
pub(crate) const EARLY_SCALE: f64 = 1.0 / (EARLY_MARGIN * EARLY_MARGIN);

/// What a pressure solve did: iterations, the residual after each batch, whether it
/// converged, and the parameters as the solve's last wait read them.
type Solve = (u32, Vec<(u32, f64)>, bool, Params);

/// The divergence floor's factor (see [`Solver::divergence_floor`]).
const FLOOR: f64 = 1e-5;

fn max_speed(field: &[[f32; 4]]) -> f64 {
    field
        .iter()
        .map(|u| f64::from(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt())
        .fold(0.0, f64::max)
}

/// The operand of the pressure operator.
#[derive(Clone, Copy, Debug)]
enum Operand {
    /// The search direction `Dir`.
    Direction,
    /// The pressure `X`.
    Pressure,
}

/// Refuses a mesh whose fields do not fit the device; `width`: the assembled operator's
/// entries per vertex (0 without it).
fn check_memory(
    info: &cl::DeviceInfo,
    vertices: usize,
    tets: usize,
    width: usize,
    history: usize,
) -> Result<()> {
    // Per vertex: 5 float4 (velocity, advected, BFECC's two, inflow), the float8 projector,
    // the double4 gradient, 7 doubles (diagonal, pressure, right-hand side, r, z, d, q), the
    // flags and the divergence, the coordinates, and two float4 per assembled entry; per
    // tetrahedron: float16, int4, 2 float4, the nodes, and gml's link tables (~2 ints per
    // incidence); the pressure history's two doubles per slot and its start's two.
    let per_vertex =
        5 * 16 + 32 + 32 + 7 * 8 + 2 * 4 + 16 + 32 * width as u64 + 16 * (history as u64 + 1);
    let bytes = budget::bytes_of(&[vertices as u64, per_vertex])
        .saturating_add(budget::bytes_of(&[tets as u64, 64 + 16 + 32 + 16 + 4 * 8]));
    let estimate = Estimate::new(
        "the wind mesh",
        format!("the wind's fields on {vertices} vertices and {tets} tetrahedra"),
        bytes,
    )
    .with_largest_allocation(64 * tets as u64);
    budget::Budget::device(info)
        .check(&estimate)
        .map_err(|e| WindError::Mesh(e.to_string()))
}

/// The time step a solver set up with these arguments ([`Solver::new`]) takes: `settings.step`,
/// or the default from the mesh (a Courant number of about 1 near the walls). Computed on the
/// host as the solver computes it, with its checks of the mesh and of the boundary (an inflow
/// and an outflow side, some pressure unknown): what a scene can be checked with before any
/// device is touched.
pub fn time_step(
    mesh: &Mesh,
    sides: &BoundaryRefs,
    direction: [f64; 2],
    inflow: &[[f32; 4]],
    settings: &Settings,
) -> Result<f64> {
    settings.check()?;
    let nodes: Vec<[u32; 4]> = mesh
        .elements(ElementKind::Tetrahedra)
        .with_refs::<4>()
        .iter()
        .map(|t| t.0)
        .collect();
    let triangles = mesh.elements(ElementKind::Triangles).with_refs::<3>();
    check_inflow(inflow, &mesh.vertices)?;
    let ball = diagonal::vertex_ball(mesh.vertices.len(), &nodes);
    let host = Host::new(
        &mesh.vertices,
        &nodes,
        &triangles,
        &ball,
        sides,
        direction,
        inflow,
        settings,
    )?;
    Ok(host.dt)
}

fn check_inflow(inflow: &[[f32; 4]], vertices: &[[f64; 3]]) -> Result<()> {
    if inflow.len() != vertices.len() {
        return Err(WindError::Setting(format!(
            "{} inflow values for {} vertices",
            inflow.len(),
            vertices.len()
        )));
    }
    Ok(())
}

/// What the solver computes on the host before it touches the device: the geometry, the
/// boundary conditions, the operator's diagonal and the time step.
struct Host {
    geometry: Geometry,
    boundary: Boundary,
    diagonal: Vec<f64>,
    /// The volume of the vertices whose pressure is unknown.
    unknown_volume: f64,
    dt: f64,
}

impl Host {
    #[allow(clippy::too_many_arguments)]
    fn new(
        vertices: &[[f64; 3]],
        nodes: &[[u32; 4]],
        triangles: &[([u32; 3], i32)],
        ball: &crate::gml::topology::Incidence,
        sides: &BoundaryRefs,
        direction: [f64; 2],
        inflow: &[[f32; 4]],
        settings: &Settings,
    ) -> Result<Self> {
        let geometry = Geometry::new(vertices, nodes)?;
        let inflow64: Vec<[f64; 3]> = inflow
            .iter()
            .map(|v| [v[0].into(), v[1].into(), v[2].into()])
            .collect();
        let mut boundary = Boundary::new(vertices, nodes, triangles, sides, direction, &inflow64)?;
        let reached = diagonal::jacobi(ball, nodes, &geometry, &boundary);
        boundary.fix_unreachable(&reached, &diagonal::unconstrained(ball, nodes, &geometry));
        let diagonal = diagonal::jacobi(ball, nodes, &geometry, &boundary);
        let unknown_volume: f64 = geometry
            .lumped
            .iter()
            .zip(&boundary.flags)
            .filter(|(_, f)| *f & FIXED_PRESSURE == 0)
            .map(|(m, _)| m)
            .sum();
        if unknown_volume.is_nan() || unknown_volume <= 0.0 {
            return Err(WindError::Boundary(format!(
                "no pressure unknown: each of the {} vertices is on an outflow side or out of \
                 every free velocity's reach (all its neighbours on an inflow or an outflow \
                 side), so the projection has nothing to solve for; the mesh needs vertices \
                 between its inflow and outflow sides (a terrain domain: at least 2 cells \
                 along each axis the wind crosses)",
                vertices.len()
            )));
        }
        let dt = match settings.step {
            Some(dt) => dt,
            None => default_step(nodes, &geometry, inflow, &boundary)?,
        };
        Ok(Self {
            geometry,
            boundary,
            diagonal,
            unknown_volume,
            dt,
        })
    }
}

/// The default time step: a Courant number of about 1 near the walls, the median over the
/// tetrahedra touching a constrained vertex (slip or inflow: the bottom and top layers and the
/// inflow sides) of thickness over the profile's speed.
fn default_step(
    tets: &[[u32; 4]],
    geometry: &Geometry,
    inflow: &[[f32; 4]],
    boundary: &Boundary,
) -> Result<f64> {
    // A projector that removes at least one component (its trace below 3).
    let constrained: Vec<bool> = boundary
        .projector
        .iter()
        .map(|p| p[0] + p[3] + p[5] < 2.5)
        .collect();
    let mut ratios: Vec<f64> = tets
        .iter()
        .zip(&geometry.thickness)
        .filter(|(t, _)| t.iter().any(|&v| constrained[v as usize]))
        .filter_map(|(t, h)| {
            let speed = t
                .iter()
                .map(|&v| {
                    let u = inflow[v as usize];
                    f64::from(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt()
                })
                .sum::<f64>()
                / 4.0;
            (speed > 1e-6).then(|| h / speed)
        })
        .collect();
    if ratios.is_empty() {
        return Err(WindError::Setting(
            "the inflow profile (wind.speed, wind.profile) is still near the walls, so it gives \
             no default time step: set wind.step"
                .into(),
        ));
    }
    ratios.sort_by(f64::total_cmp);
    Ok(ratios[ratios.len() / 2])
}
