//! The ground refresh (issue 28, item 5; `docs/plans/ground-refresh.md` §2, §5): the snow
//! laid on the ground raises it, so the wind's terrain-following mesh is regraded column by
//! column ([`Columns::regrade`]) and everything that depends on the vertex coordinates is
//! recomputed, on the device where it is per tetrahedron or per vertex, and the current wind
//! is projected again onto the new mesh so that it stays divergence-free.
//!
//! The topology never changes, so the fields (velocity, pressure), the face neighbours, the
//! operator's ring columns and the vertex flags (the unknown set, the unreachable fixes of
//! set-up included) are kept. Recomputed: the vertices' heights on the host (O(vertices)),
//! then on the device each tetrahedron's coefficients `(V/4)∇φ_j` (`Cof`, the host's
//! `tet_terms` operation for operation), each vertex's lumped volume (`Bnd.s6 = 1/m`), the
//! assembled operator's rows (`Gel`, `Del`) and the Jacobi diagonal (`Dia`), and gml's `float`
//! coordinates (`VerCrd`, which the advection walks), and the boundary's slip projectors and
//! inflow fluxes (`Bnd.s0..s5`, `s7`): per vertex on a slip or an inflow triangle, from flat
//! tables of [`boundary::MovedIndex`] uploaded at the first refresh
//! ([`boundary::FlatIndex`]), summing as the host's [`boundary::MovedIndex::conditions`] does,
//! bit for bit (every other vertex keeps the identity projector and no flux). The inflow
//! profile of the columns off their bare ground is computed on the host, in parallel (the
//! profile formula stays in one place, [`Wind::velocity_at`]), and uploaded for every vertex
//! (a [`Solver::reset`] starts the field from it everywhere; the device's boundary kernel
//! reads it). The host's mirror of the boundary ([`Solver::boundary`], for reports and
//! [`Solver::fluxes`]) is computed when first asked for after a refresh, off the refresh's
//! path. The time step, the initial divergence (the tolerance's scale) and the divergence
//! floor are kept (see the plan, §2.7).
//!
//! A refresh checks every tetrahedron on the device before it writes anything the solver
//! reads (only the refresh's own double coordinates take the new heights first): a degenerate
//! or inverted one is an error ([`WindError::BadGeometry`]) and the solver is left as it was.
//!
//! **Two halves.** The host's work (the regrade, the new positions, the inflow profile) is a
//! [`GroundPlan`] made by a [`GroundPlanner`], which holds only what never changes (the
//! columns, the profile, the bare ground's heights and inflow) and needs no device: so `sim`
//! makes a plan on a thread of its own while the frames go on and hands it to
//! [`Solver::apply_ground`] at a fixed later frame, and the frame's thread does only the
//! device's half. [`Solver::refresh_ground`] does both halves one after the other.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::boundary;
use super::error::{Result, WindError};
use super::geometry::Geometry;
use super::kernels::{self, Fields};
use super::solver::Solver;
use crate::cl::{self, Timeline};
use crate::gml::{Access, Gml, KernelId, KernelSpec, MeshKind, Solution};
use crate::scene::Wind;
use crate::terrain::Columns;

/// What a ground refresh did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RefreshStats {
    /// Nothing moved (every new height equal to the current one bit for bit): nothing was
    /// recomputed or uploaded, the mesh, the fields and the operator are unchanged.
    pub skipped: bool,
    /// Columns with at least one vertex moved.
    pub columns_changed: usize,
    /// Columns whose raise was clamped to [`crate::terrain::MAX_RAISE`] of their air
    /// (a plan made from a raise: [`GroundPlanner::plan`]).
    pub clamped: usize,
    /// CG iterations of the re-projection.
    pub iterations: u32,
    /// Whether the re-projection reached the solver's tolerance (true when skipped).
    pub converged: bool,
    /// RMS divergence (1/s) of the carried-over field on the new mesh, before the projection.
    pub divergence_before: f64,
    /// RMS divergence (1/s) after the re-projection.
    pub divergence_after: f64,
    /// The air's volume after the refresh, m³.
    pub volume: f64,
    /// Host wall-clock time of each phase.
    pub times: RefreshTimes,
}

/// Host wall-clock milliseconds of a refresh's phases (device waits included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RefreshTimes {
    /// The columns' regrade on the host (of `plan_ms`).
    pub regrade_ms: f64,
    /// The plan on the host ([`GroundPlanner::plan`]: the regrade, the new positions and
    /// the inflow profile over them), on whichever thread made it: the frame's for a refresh
    /// applied where it is read, one beside the frames for one applied later (`sim`).
    pub plan_ms: f64,
    /// The first refresh only, where nothing prepared it ahead: the boundary's inside
    /// vertices, the kernels' compilation and the device buffers (before the plan, apart from
    /// `total_ms`).
    pub setup_ms: f64,
    /// Uploading the heights and checking every tetrahedron on the device (one wait).
    pub check_ms: f64,
    /// Uploading the plan's inflow profile (`Inf`, which the geometry's kernels read for the
    /// slip projectors and inflow fluxes).
    pub boundary_ms: f64,
    /// The device's coefficients, slip projectors and inflow fluxes, lumped volumes, operator
    /// rows and diagonal (one wait).
    pub geometry_ms: f64,
    /// The re-projection of the carried-over wind.
    pub reproject_ms: f64,
    /// The plan's application on the device ([`Solver::apply_ground`]), from the heights'
    /// upload to the re-projection's end; the plan apart.
    pub total_ms: f64,
}

/// The host's half of a ground refresh, apart from the solver so that it can run on a thread
/// of its own while the frames go on (`sim` applies its plans at a fixed later frame): the
/// mesh's columns, the wind profile the inflow is sampled from, and the bare ground's heights
/// and inflow. It never changes once the bare inflow is set (at the refresh's preparation),
/// so a plan depends only on the raise it is given, never on the refreshes before it.
#[derive(Debug)]
pub struct GroundPlanner {
    /// Its own number, which its plans carry: a plan fits only its planner's solver.
    id: u64,
    columns: Columns,
    wind: Wind,
    /// Per column, its ground vertex (level 0).
    ground_vertex: Vec<u32>,
    /// Per vertex, its x and y, m (a refresh moves vertices up and down only).
    xy: Vec<[f64; 2]>,
    /// Per vertex, its height over the bare ground, m.
    bare_z: Vec<f64>,
    /// Per vertex, the bare ground's inflow profile as `Inf` held it at set-up (set when the
    /// refresh is prepared).
    bare_inflow: OnceLock<Vec<[f32; 4]>>,
}

/// A ground refresh computed on the host ([`GroundPlanner::plan`]), for
/// [`Solver::apply_ground`] to put on the device: the raise it was made from, every vertex's
/// new position and the inflow profile over the new heights.
#[derive(Debug)]
pub struct GroundPlan {
    /// The [`GroundPlanner::id`] of its planner.
    planner: u64,
    raise: Vec<f64>,
    clamped: usize,
    z: Vec<f64>,
    vertices: Vec<[f64; 3]>,
    /// A second copy of `vertices`, made with the plan, that the solver takes when it applies
    /// the plan (so that the frame's thread copies nothing).
    solver_vertices: Option<Vec<[f64; 3]>>,
    inflow: Arc<Vec<[f32; 4]>>,
    regrade_ms: f64,
    plan_ms: f64,
}

impl GroundPlan {
    /// The raise the plan was made from, m per column (empty for heights given directly:
    /// [`Solver::refresh_heights`]).
    pub fn raise(&self) -> &[f64] {
        &self.raise
    }

    /// Every vertex's position after the refresh, m.
    pub fn vertices(&self) -> &[[f64; 3]] {
        &self.vertices
    }

    /// The positions, owned (what the plan's user keeps once the solver took its own copy).
    pub fn into_vertices(self) -> Vec<[f64; 3]> {
        self.vertices
    }

    /// The plan's host wall time, ms, on whichever thread made it.
    pub fn plan_ms(&self) -> f64 {
        self.plan_ms
    }
}

impl GroundPlanner {
    /// The plan for raising each column's ground by `raise` (m, one per column, ≥ 0, from the
    /// bare ground: nothing accumulates across refreshes; clamped at half the air): the
    /// columns regraded and the inflow profile sampled over the columns that stand off their
    /// bare ground (the others keep set-up's, bit for bit). Host work only, on the calling
    /// thread (the inflow in parallel); an error for a raise that is not one finite,
    /// non-negative number per column, or before the refresh was prepared.
    pub fn plan(&self, raise: &[f64]) -> Result<GroundPlan> {
        let start = Instant::now();
        let regraded = self
            .columns
            .regrade(raise)
            .map_err(|e| WindError::Refresh(e.to_string()))?;
        let regrade_ms = ms(start);
        let mut plan = self.plan_at(regraded.z, start)?;
        plan.raise = raise.to_vec();
        plan.clamped = regraded.clamped;
        plan.regrade_ms = regrade_ms;
        Ok(plan)
    }

    /// The plan for moving every vertex to height `z` (m, one per vertex; x and y are kept):
    /// the low-level form of [`plan`](Self::plan).
    pub fn plan_heights(&self, z: &[f64]) -> Result<GroundPlan> {
        self.plan_at(z.to_vec(), Instant::now())
    }

    /// How many columns the terrain has (the length of a raise).
    pub fn columns(&self) -> usize {
        self.columns.ground.len()
    }

    /// Per column, whether any of its vertices stands at another height in `z` than in
    /// `from` (bit for bit; one height per vertex in each).
    fn moved_columns(&self, z: &[f64], from: impl Iterator<Item = f64>) -> Vec<bool> {
        let column = &self.columns.column;
        let mut moved = vec![false; self.columns()];
        for (v, (z, from)) in z.iter().zip(from).enumerate() {
            if z.to_bits() != from.to_bits() {
                moved[column[v] as usize] = true;
            }
        }
        moved
    }

    fn plan_at(&self, z: Vec<f64>, start: Instant) -> Result<GroundPlan> {
        let n = self.xy.len();
        if z.len() != n {
            return Err(WindError::Refresh(format!(
                "{} heights for {n} vertices",
                z.len()
            )));
        }
        if let Some((v, z)) = z.iter().enumerate().find(|(_, z)| !z.is_finite()) {
            return Err(WindError::Refresh(format!("vertex {v}: a height of {z} m")));
        }
        let bare_inflow = self
            .bare_inflow
            .get()
            .ok_or_else(|| WindError::Refresh("the refresh's tables are not set up".into()))?;
        let raised = self.moved_columns(&z, self.bare_z.iter().copied());
        let vertices: Vec<[f64; 3]> = self
            .xy
            .iter()
            .zip(&z)
            .map(|(p, &z)| [p[0], p[1], z])
            .collect();
        let inflow = self.inflow(&z, &raised, bare_inflow);
        Ok(GroundPlan {
            planner: self.id,
            raise: Vec::new(),
            clamped: 0,
            z,
            solver_vertices: Some(vertices.clone()),
            vertices,
            inflow: Arc::new(inflow),
            regrade_ms: 0.0,
            plan_ms: ms(start),
        })
    }

    /// The inflow profile at every vertex over the heights `z`: by height above the column's
    /// ground vertex, in double, in parallel, for the columns `raised` off their bare ground;
    /// the bare ground's (`bare`) for the others. Every vertex's, not only the inflow sides':
    /// [`Solver::reset`] starts the field from the profile everywhere.
    fn inflow(&self, z: &[f64], raised: &[bool], bare: &[[f32; 4]]) -> Vec<[f32; 4]> {
        let mut inflow = bare.to_vec();
        let (column, ground_vertex, wind) = (&self.columns.column, &self.ground_vertex, &self.wind);
        const CHUNK: usize = 4096;
        inflow
            .par_chunks_mut(CHUNK)
            .zip(z.par_chunks(CHUNK))
            .zip(column.par_chunks(CHUNK))
            .for_each(|((inflow, z_here), column)| {
                // A local copy: the profile's constants stay out of the loop.
                let wind = *wind;
                for ((u, &zv), &c) in inflow.iter_mut().zip(z_here).zip(column) {
                    let c = c as usize;
                    if raised[c] {
                        let ground = z[ground_vertex[c] as usize];
                        let [x, y, z] = wind.velocity_at((zv - ground).max(0.0));
                        *u = [x as f32, y as f32, z as f32, 0.0];
                    }
                }
            });
        inflow
    }
}

/// What the solver keeps for ground refreshes: the planner (the columns, the wind profile),
/// and once prepared (at set-up when refreshes are on, else at the first refresh) the device
/// data and kernels and the inflow profile the device holds.
#[derive(Debug)]
pub struct GroundRefresh {
    planner: Arc<GroundPlanner>,
    /// The inflow profile at every vertex, as on the device (`Inf`); `None` until prepared.
    inflow: Option<Arc<Vec<[f32; 4]>>>,
    /// The boundary's structure for recomputing its conditions on moved vertices.
    index: Option<boundary::MovedIndex>,
    /// After a refresh, the host's mirror of the boundary on the moved vertices, computed
    /// when first asked for ([`Solver::boundary`]); `None` before the first refresh (the
    /// solver's own boundary is then current).
    mirror: Option<OnceLock<boundary::Boundary>>,
    device: Option<Device>,
}

/// The refresh's device data and kernels.
#[derive(Clone, Copy, Debug)]
struct Device {
    /// Per vertex, the coordinates in double (x and y written once, z by each refresh).
    coordinates: Solution<[f64; 4]>,
    /// Per vertex, the new height, m (uploaded by each refresh).
    heights: Solution<f64>,
    /// Per vertex, the new projector and inflow flux as `Bnd` holds them (`s6` unused).
    staged: Solution<[f32; 8]>,
    set_heights: KernelId,
    check: KernelId,
    geometry: KernelId,
    move_vertices: KernelId,
    boundary: KernelId,
    lumped_volumes: KernelId,
    rows: KernelId,
    prepare: KernelId,
}

/// The device's coordinate-dependent tables (tests and diagnostics: what a refresh rewrites).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTables {
    /// gml's `float` coordinates (`VerCrd`).
    pub coordinates: Vec<[f32; 3]>,
    /// Per tetrahedron, `(V/4)∇φ_j`, j = 0..3 (`Cof`).
    pub coefficients: Vec<[f32; 16]>,
    /// Per vertex, the projector, `1/m` and the inflow flux (`Bnd`).
    pub boundary: Vec<[f32; 8]>,
    /// Per vertex, the inverse of the Jacobi diagonal (`Dia`).
    pub inverse_diagonal: Vec<f64>,
    /// Per vertex, the inflow profile (`Inf`).
    pub inflow: Vec<[f32; 4]>,
    /// Per vertex, its flags (`Flg`).
    pub flags: Vec<i32>,
    /// The assembled operator's `G` table (`Gel`), where assembled.
    pub grad_rows: Option<Vec<[f32; 4]>>,
    /// The assembled operator's `D` table (`Del`), where assembled.
    pub div_rows: Option<Vec<[f32; 4]>>,
}

fn no_columns() -> WindError {
    WindError::Refresh(
        "the wind mesh has no columns (a mesh-file domain, or no terrain attached with \
         set_ground_columns): its ground cannot be regraded"
            .into(),
    )
}

impl Solver {
    /// Attaches the terrain columns of the solver's mesh and the wind whose profile gives the
    /// inflow, so that [`refresh_ground`](Self::refresh_ground) can regrade it. Checks that
    /// the columns are the mesh's: one per vertex, one ground vertex per column, and every
    /// vertex at the height the columns' bare ground gives it, bit for bit. Cheap (O(vertices)
    /// on the host); the device data wait for the first refresh.
    pub fn set_ground_columns(&mut self, columns: Columns, wind: Wind) -> Result<()> {
        let n = self.vertices.len();
        if columns.column.len() != n || columns.level.len() != n {
            return Err(WindError::Refresh(format!(
                "{} column vertices for a mesh of {n} vertices",
                columns.column.len()
            )));
        }
        let mut ground_vertex = vec![u32::MAX; columns.ground.len()];
        for (v, (&c, &k)) in columns.column.iter().zip(&columns.level).enumerate() {
            let slot = ground_vertex.get_mut(c as usize).ok_or_else(|| {
                WindError::Refresh(format!("vertex {v} names column {c} of {}", n))
            })?;
            if k == 0 {
                *slot = v as u32;
            }
        }
        if let Some(c) = ground_vertex.iter().position(|&v| v == u32::MAX) {
            return Err(WindError::Refresh(format!(
                "column {c} has no ground vertex"
            )));
        }
        let bare = columns
            .regrade(&vec![0.0; columns.ground.len()])
            .map_err(|e| WindError::Refresh(e.to_string()))?;
        if let Some(v) = (0..n).find(|&v| bare.z[v].to_bits() != self.vertices[v][2].to_bits()) {
            return Err(WindError::Refresh(format!(
                "vertex {v} is at z = {} m, and its column's bare ground puts it at {} m: the \
                 columns are not this mesh's",
                self.vertices[v][2], bare.z[v]
            )));
        }
        static PLANNERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let planner = GroundPlanner {
            id: PLANNERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            columns,
            wind,
            ground_vertex,
            xy: self.vertices.iter().map(|p| [p[0], p[1]]).collect(),
            bare_z: bare.z,
            bare_inflow: OnceLock::new(),
        };
        self.refresh = Some(Box::new(GroundRefresh {
            planner: Arc::new(planner),
            inflow: None,
            index: None,
            mirror: None,
            device: None,
        }));
        Ok(())
    }

    /// Whether ground refreshes can run (columns attached).
    pub fn has_ground_columns(&self) -> bool {
        self.refresh.is_some()
    }

    /// How many columns the attached terrain has (the length of
    /// [`refresh_ground`](Self::refresh_ground)'s raise); `None` without columns.
    pub fn ground_columns(&self) -> Option<usize> {
        self.refresh.as_ref().map(|r| r.planner.columns())
    }

    /// Makes the refresh's device data, kernels and host tables now rather than at the first
    /// refresh (they take 40–50 ms on the valley); an error without ground columns
    /// ([`set_ground_columns`](Self::set_ground_columns)).
    pub fn prepare_ground_refresh(&mut self) -> Result<()> {
        self.prepared_refresh().map(|_| ())
    }

    /// The refresh's host half, to make plans with on any thread ([`GroundPlanner::plan`])
    /// for [`apply_ground`](Self::apply_ground); prepares the refresh first (as
    /// [`prepare_ground_refresh`](Self::prepare_ground_refresh)).
    pub fn ground_planner(&mut self) -> Result<Arc<GroundPlanner>> {
        self.prepared_refresh()?;
        let r = self.refresh.as_ref().ok_or_else(no_columns)?;
        Ok(Arc::clone(&r.planner))
    }

    /// Prepares the refresh (once); the time it took, ms (0 when it was ready).
    fn prepared_refresh(&mut self) -> Result<f64> {
        let mut refresh = self.refresh.take().ok_or_else(no_columns)?;
        let start = Instant::now();
        let ready = refresh.device.is_some();
        let prepared = refresh.prepare(self).map(|_| ());
        self.refresh = Some(refresh);
        prepared.map(|()| if ready { 0.0 } else { ms(start) })
    }

    /// Raises each column's ground by `raise` (m, one per column, ≥ 0, from the bare ground of
    /// set-up: nothing accumulates across refreshes; clamped at half the air) and refreshes
    /// the wind on the regraded mesh: its plan ([`GroundPlanner::plan`]) and its application
    /// ([`apply_ground`](Self::apply_ground)) one after the other on this thread. An error
    /// without columns ([`set_ground_columns`](Self::set_ground_columns); a mesh-file domain
    /// has none) or with a raise that is not one finite, non-negative number per column.
    pub fn refresh_ground(&mut self, raise: &[f64]) -> Result<RefreshStats> {
        let setup_ms = self.prepared_refresh()?;
        let mut plan = self.ground_planner()?.plan(raise)?;
        let mut stats = self.apply_ground(&mut plan)?;
        stats.times.setup_ms += setup_ms;
        Ok(stats)
    }

    /// Moves every vertex to height `z` (m, one per vertex; x and y are kept) and recomputes
    /// what depends on the coordinates, as [`apply_ground`](Self::apply_ground) does. The
    /// low-level form of [`refresh_ground`](Self::refresh_ground); needs the columns too (the
    /// inflow profile is sampled by height above the column's ground).
    pub fn refresh_heights(&mut self, z: &[f64]) -> Result<RefreshStats> {
        let setup_ms = self.prepared_refresh()?;
        let mut plan = self.ground_planner()?.plan_heights(z)?;
        let mut stats = self.apply_ground(&mut plan)?;
        stats.times.setup_ms += setup_ms;
        Ok(stats)
    }

    /// Puts `plan` on the device: the new heights uploaded and every tetrahedron checked
    /// before anything is written, then the geometry, the boundary's projectors and inflow
    /// fluxes, the lumped volumes and the operator recomputed on the device, and the current
    /// wind projected onto the new mesh (warm from the current pressure, at most
    /// [`Settings::startup_iterations`]). Heights all equal to the current ones bit for bit
    /// change nothing (`skipped`). The new heights must keep the columns' order (a ground
    /// below its levels, as a regrade does): a degenerate or inverted tetrahedron is
    /// [`WindError::BadGeometry`], with the solver as it was. A plan from this solver's
    /// planner ([`ground_planner`](Self::ground_planner)) fits it whatever was applied since;
    /// one from another solver's is an error.
    /// The solver takes the plan's second copy of the positions (applied twice, it copies).
    ///
    /// [`Settings::startup_iterations`]: super::Settings::startup_iterations
    pub fn apply_ground(&mut self, plan: &mut GroundPlan) -> Result<RefreshStats> {
        let start = Instant::now();
        let mut refresh = self.refresh.take().ok_or_else(no_columns)?;
        let mut tl = std::mem::replace(&mut self.timeline, Timeline::new(false));
        let result = self.refresh_with(&mut refresh, plan, start, &mut tl);
        self.refresh = Some(refresh);
        let finished = self.finish_timeline(tl);
        let mut stats = result?;
        finished?;
        stats.clamped = plan.clamped;
        stats.times.regrade_ms = plan.regrade_ms;
        stats.times.plan_ms = plan.plan_ms;
        Ok(stats)
    }

    fn refresh_with(
        &mut self,
        r: &mut GroundRefresh,
        plan: &mut GroundPlan,
        start: Instant,
        tl: &mut Timeline,
    ) -> Result<RefreshStats> {
        if plan.planner != r.planner.id {
            return Err(WindError::Refresh(
                "a ground plan made by another solver's planner".into(),
            ));
        }
        let compare = Instant::now();
        let columns_changed = self.moved_columns(r, &plan.z)?;
        let compare_ms = ms(compare);
        let mut stats = RefreshStats {
            columns_changed,
            converged: true,
            volume: self.volume,
            ..RefreshStats::default()
        };
        if columns_changed == 0 {
            stats.skipped = true;
            stats.times.total_ms = ms(start);
            return Ok(stats);
        }
        let phase = Instant::now();
        let device = r.prepare(self)?;
        stats.times.setup_ms = ms(phase);

        // Check every tetrahedron before anything is written: the heights go into the double
        // coordinates (whose x and y never change), which only the refresh reads.
        let phase = Instant::now();
        self.gml.set_block(device.heights, 0, &plan.z)?;
        tl.stage("wind.refresh");
        self.gml.enqueue(device.set_heights, tl)?;
        self.gml.enqueue(device.check, tl)?;
        let bad = self.gml.download_parameters(&self.params)?.bad_tets;
        if bad != 0.0 {
            return Err(self.bad_geometry(&plan.vertices, bad));
        }
        // The comparison with the current heights is the check's too.
        stats.times.check_ms = ms(phase) + compare_ms;

        // The inflow profile the plan sampled (the device's boundary kernel reads it). Only a
        // device failure can stop the refresh after the check, and that leaves the device's
        // tables part-written anyway: the host's inflow profile is the plan's from here on,
        // and the host's mirror of the boundary is out of date.
        let phase = Instant::now();
        r.inflow = Some(Arc::clone(&plan.inflow));
        r.mirror = Some(OnceLock::new());
        self.gml.set_block(self.fields.inflow, 0, &plan.inflow)?;
        stats.times.boundary_ms = ms(phase);

        // The geometry and the boundary's projectors and inflow fluxes on the device: the
        // boundary kernel writes `Bns`, which the lumped kernel copies into `Bnd` with `1/m`,
        // which the rows kernel reads.
        let phase = Instant::now();
        for kernel in device.geometry_kernels() {
            self.gml.enqueue(kernel, tl)?;
        }
        if let Some(a) = self.assembled {
            // Written through their table pointers: gml's host copies are stale.
            self.gml.mark_device_newer(a.grad_table)?;
            self.gml.mark_device_newer(a.div_table)?;
        }
        let p = self.gml.download_parameters(&self.params)?;
        self.vertices = match plan.solver_vertices.take() {
            Some(vertices) => vertices,
            None => plan.vertices.clone(),
        };
        stats.times.geometry_ms = ms(phase);
        self.volume = p.volume;
        self.unknown_volume = p.unknown_volume;
        stats.volume = p.volume;

        // The carried-over wind, projected on the new mesh.
        let phase = Instant::now();
        self.gml.enqueue(device.prepare, tl)?;
        self.clear_history(tl)?;
        let predicted = self.predicted_iterations;
        let projected = self.project_star(
            self.settings.startup_iterations,
            self.steps,
            true,
            tl,
            phase,
        );
        self.predicted_iterations = predicted;
        let projected = projected?;
        stats.times.reproject_ms = ms(phase);
        stats.iterations = projected.iterations;
        stats.converged = projected.converged;
        stats.divergence_before = projected.divergence_before;
        stats.divergence_after = projected.divergence_after;
        stats.times.total_ms = ms(start);
        Ok(stats)
    }

    /// How many columns have a vertex that moves to `z`; an error for a plan of another
    /// mesh's size.
    fn moved_columns(&self, r: &GroundRefresh, z: &[f64]) -> Result<usize> {
        if z.len() != self.vertices.len() {
            return Err(WindError::Refresh(format!(
                "a plan of {} heights for {} vertices",
                z.len(),
                self.vertices.len()
            )));
        }
        let moved = r
            .planner
            .moved_columns(z, self.vertices.iter().map(|p| p[2]));
        Ok(moved.iter().filter(|&&m| m).count())
    }

    /// The error for `bad` tetrahedra the device's check found, with the host's description of
    /// the first one.
    fn bad_geometry(&self, vertices: &[[f64; 3]], bad: f64) -> WindError {
        let nodes: Vec<[u32; 4]> = self.tets.iter().map(|t| t.0).collect();
        let first = match Geometry::new(vertices, &nodes) {
            Err(e) => e.to_string(),
            Ok(_) => "the host finds none: the device's arithmetic differs".into(),
        };
        WindError::BadGeometry {
            tets: bad.max(0.0) as u64,
            first,
        }
    }

    /// After a ground refresh, the host's mirror of the boundary conditions on the moved
    /// vertices (the references' areas and normals, the triangles' normals, the projectors and
    /// the inflow fluxes; the device computes its own during the refresh): computed on the
    /// host at the first call after each refresh ([`boundary::MovedIndex::conditions`], the
    /// same bits as the device's, in double), so that the refresh does not wait for it. `None`
    /// before the first refresh.
    pub(super) fn moved_boundary(&self) -> Option<&boundary::Boundary> {
        let r = self.refresh.as_deref()?;
        let mirror = r.mirror.as_ref()?;
        let (index, inflow) = (r.index.as_ref()?, r.inflow.as_deref()?);
        Some(mirror.get_or_init(|| {
            let conditions = index.conditions(
                &self.boundary.references,
                &self.vertices,
                &self.triangles,
                |v| {
                    let u = inflow[v as usize];
                    glam::DVec3::new(u[0].into(), u[1].into(), u[2].into())
                },
            );
            let mut moved = self.boundary.clone();
            moved.apply(index, conditions);
            moved
        }))
    }

    /// The device's coordinate-dependent tables (tests and diagnostics): what a refresh
    /// rewrites, to compare with a solver set up on the new mesh.
    pub fn device_tables(&mut self) -> Result<DeviceTables> {
        let (coordinates, _) = self.gml.vertices()?;
        let f = self.fields;
        let (grad_rows, div_rows) = match self.assembled {
            Some(a) => (
                Some(self.gml.read_all(a.grad_table)?),
                Some(self.gml.read_all(a.div_table)?),
            ),
            None => (None, None),
        };
        Ok(DeviceTables {
            coordinates,
            coefficients: self.gml.read_all(f.coef)?,
            boundary: self.gml.read_all(f.bnd)?,
            inverse_diagonal: self.gml.read_all(f.inv_diag)?,
            inflow: self.gml.read_all(f.inflow)?,
            flags: self.gml.read_all(f.flags)?,
            grad_rows,
            div_rows,
        })
    }
}

impl GroundRefresh {
    /// The device data, kernels and host tables, made once: at set-up when refreshes are on
    /// (`Solver::prepare_ground_refresh`), else at the first refresh. Sets the planner's bare
    /// inflow (the device's, before any refresh) and uploads the double coordinates' x and y.
    fn prepare(&mut self, solver: &mut Solver) -> Result<Device> {
        if let Some(device) = self.device {
            return Ok(device);
        }
        let nodes: Vec<[u32; 4]> = solver.tets.iter().map(|t| t.0).collect();
        let inside = boundary::inside_vertices(&nodes, &solver.triangles)?;
        let index = boundary::MovedIndex::new(&solver.boundary, &solver.triangles, inside)?;
        let flat = index.flat(&solver.triangles, solver.vertices.len())?;
        let inflow = solver.gml.read_all(solver.fields.inflow)?;
        let orientation = first_orientation(&solver.vertices, &nodes)?;
        let device = Device::new(&mut solver.gml, &solver.fields, solver.assembled, &flat)?;
        // Every vertex's staged line once: the boundary kernel rewrites only the index's
        // vertices' (the others keep the identity projector and no flux).
        let staged: Vec<[f32; 8]> = solver
            .boundary
            .projector
            .par_iter()
            .zip(&solver.boundary.inflow_flux)
            .map(|(p, &f)| staged_line(p, f))
            .collect();
        solver.gml.set_block(device.staged, 0, &staged)?;
        let coordinates: Vec<[f64; 4]> = solver
            .vertices
            .iter()
            .map(|p| [p[0], p[1], p[2], 0.0])
            .collect();
        solver.gml.set_block(device.coordinates, 0, &coordinates)?;
        // Links built and tables uploaded now, not on the first refresh's path.
        let geometry = device.geometry_kernels();
        for kernel in [device.set_heights, device.check, device.prepare]
            .into_iter()
            .chain(geometry)
        {
            solver.gml.prepare(kernel)?;
        }
        self.index = Some(index);
        // Set once: a planner outlives nothing that could have moved the ground before this.
        let _ = self.planner.bare_inflow.set(inflow.clone());
        self.inflow = Some(Arc::new(inflow));
        solver.edit_parameters(|p| p.orientation = orientation)?;
        self.device = Some(device);
        Ok(device)
    }
}

/// A vertex's line of `Bns` (as `Bnd` holds it, `s6` unused): its projector and inflow flux
/// in `float`.
fn staged_line(p: &[f64; 6], flux: f64) -> [f32; 8] {
    let p = p.map(|x| x as f32);
    [p[0], p[1], p[2], p[3], p[4], p[5], 0.0, flux as f32]
}

/// The sign of the first tetrahedron's volume: every tetrahedron must share it.
fn first_orientation(vertices: &[[f64; 3]], nodes: &[[u32; 4]]) -> Result<f64> {
    let t = nodes
        .first()
        .ok_or_else(|| WindError::Mesh("the mesh has no tetrahedra".into()))?;
    let p = |i: usize| glam::DVec3::from(vertices[t[i] as usize]);
    let a = p(0);
    let det = (p(1) - a).dot((p(2) - a).cross(p(3) - a));
    Ok(if det > 0.0 { 1.0 } else { -1.0 })
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

impl Device {
    /// The kernels that rebuild the geometry, the boundary's projectors and inflow fluxes,
    /// the lumped volumes and the operator's rows, in the order a refresh runs them: the
    /// boundary kernel writes `Bns`, which the lumped kernel copies into `Bnd` with `1/m`,
    /// which the rows kernel reads.
    fn geometry_kernels(&self) -> [KernelId; 5] {
        [
            self.geometry,
            self.move_vertices,
            self.boundary,
            self.lumped_volumes,
            self.rows,
        ]
    }

    /// Allocates the refresh's fields and compiles its kernels (the helpers of
    /// `kernels/wind_refresh.cl` join gml's toolkit for the kernels compiled from now on).
    fn new(
        gml: &mut Gml,
        f: &Fields,
        assembled: Option<kernels::Assembled>,
        flat: &boundary::FlatIndex,
    ) -> Result<Self> {
        gml.include_toolkit_source(cl::Source::embedded(
            "wind_refresh.cl",
            include_str!("../../kernels/wind_refresh.cl"),
        )?);
        let ver = MeshKind::Vertices;
        let tet = MeshKind::Tetrahedra;
        let vertices = gml.mesh(ver)?;
        let tets = gml.mesh(tet)?;
        let coordinates = gml.new_solution::<[f64; 4]>(ver, 1, "Crd64")?;
        let heights = gml.new_solution::<f64>(ver, 1, "Z64")?;
        // Per tetrahedron `V/4`, per vertex the lumped volume in double.
        let quarter = gml.new_solution::<f64>(tet, 1, "Vq")?;
        let lumped = gml.new_solution::<f64>(ver, 1, "Lm")?;
        let staged = gml.new_solution::<[f32; 8]>(ver, 1, "Bns")?;
        const NODES: &str = "TetCrd64[0], TetCrd64[1], TetCrd64[2], TetCrd64[3]";
        let set_heights = gml.compile(
            KernelSpec::new("wind_refresh_heights", ver)
                .access(Access::read_write(coordinates))
                .access(Access::read(heights))
                .body("VerCrd64.z = VerZ64;"),
        )?;
        let check = gml.compile(
            KernelSpec::new("wind_refresh_check", tet)
                .access(Access::read(coordinates))
                .body(&format!(
                    "GmlSum[0] = wind_tet_check({NODES}, GmlPar->orientation) != WIND_TET_OK;"
                ))
                .sums(1, "GmlPar->bad_tets = GmlSum[0];"),
        )?;
        let geometry = gml.compile(
            KernelSpec::new("wind_refresh_geometry", tet)
                .access(Access::read(coordinates))
                .access(Access::write(f.coef))
                .access(Access::write(quarter))
                .body(&format!(
                    "float16 c;
                     TetVq = wind_tet_coefficients({NODES}, &c);
                     TetCof = c;"
                )),
        )?;
        let move_vertices = gml.compile(
            KernelSpec::new("wind_refresh_vertices", ver)
                .access(Access::read_write(vertices))
                .access(Access::read(coordinates))
                .body("VerCrd.xyz = convert_float3(VerCrd64.xyz);"),
        )?;
        let boundary = compile_boundary(gml, f, coordinates, staged, flat)?;
        let lumped_volumes = gml.compile(
            KernelSpec::new("wind_refresh_lumped", ver)
                .access(Access::read(quarter))
                .access(Access::read(staged))
                .access(Access::read(f.flags))
                .access(Access::write(f.bnd))
                .access(Access::write(lumped))
                .body(
                    "double m = 0.0;
                     for (int i = 0; i < VerTetDeg; i++) m += VerTetVq[i];
                     VerLm = m;
                     float8 b = VerBns;
                     b.s6 = (float)(1.0 / m);
                     VerBnd = b;
                     GmlSum[0] = m;
                     GmlSum[1] = (VerFlg & WIND_FIXED_PRESSURE) ? 0.0 : m;",
                )
                .sums(
                    2,
                    "GmlPar->volume = GmlSum[0];
                     GmlPar->unknown_volume = GmlSum[1];",
                ),
        )?;
        let rows = compile_rows(gml, f, tets, lumped, assembled)?;
        let prepare = gml.compile(
            KernelSpec::new("wind_refresh_prepare", ver)
                .access(Access::read(f.vel))
                .access(Access::read(f.inflow))
                .access(Access::read(f.bnd))
                .access(Access::read(f.flags))
                .access(Access::write(f.star))
                .body(
                    "VerStr = (VerFlg & WIND_FIXED_VELOCITY) ? VerInf : wind_project(VerBnd, VerVel);",
                ),
        )?;
        Ok(Self {
            coordinates,
            heights,
            staged,
            set_heights,
            check,
            geometry,
            move_vertices,
            boundary,
            lumped_volumes,
            rows,
            prepare,
        })
    }
}

/// The vertex kernel that recomputes the boundary's slip projectors and inflow fluxes into
/// `staged` (`Bns`, lanes s0..s5 and s7) from the double coordinates and the inflow profile
/// (`Inf`, the `float` values the host's [`boundary::MovedIndex::conditions`] reads), with the
/// index `flat` uploaded once: per vertex its row (`Bix`), and the flat table (`Bit`, a
/// vertex solution of as many `int`s per vertex as the table needs, read by hand through its
/// table pointer). Vertices outside the index (row `-1`) keep their line.
fn compile_boundary(
    gml: &mut Gml,
    f: &Fields,
    coordinates: Solution<[f64; 4]>,
    staged: Solution<[f32; 8]>,
    flat: &boundary::FlatIndex,
) -> Result<KernelId> {
    let ver = MeshKind::Vertices;
    let n = flat.rows.len().max(1);
    let rows = gml.new_solution::<[i32; 4]>(ver, 1, "Bix")?;
    gml.set_block(rows, 0, &flat.rows)?;
    let items = flat.table.len().div_ceil(n).max(1);
    let table = gml.new_solution::<i32>(ver, items, "Bit")?;
    let mut padded = flat.table.clone();
    padded.resize(items * flat.rows.len(), 0);
    gml.set_block(table, 0, &padded)?;
    Ok(gml.compile(
        KernelSpec::new("wind_refresh_boundary", ver)
            .access(Access::read(coordinates))
            .access(Access::read(f.inflow))
            .access(Access::read(rows))
            .access(Access::read(table))
            .access(Access::read_write(staged))
            .body(&format!(
                "if (VerBix.x >= 0)
                     VerBns = wind_boundary_line(VerBix, VerBitTab, VerCrd64Tab, VerInfTab, VerBns,
                                                 {}, {}, {}, as_double({}L));",
                flat.group_end_at,
                flat.slip_at,
                flat.inflow_at,
                boundary::SLIP_SINE.to_bits() as i64
            )),
    )?)
}

/// The vertex kernel that rewrites the assembled operator's rows (where assembled) and the
/// inverse Jacobi diagonal from the new coefficients and lumped volumes. Per row entry
/// `(v, w)`, the ball of `v` in gml's order (the host's `vertex_ball` order) sums
/// `G_vw = Σ c_T[local w]` and `D_vw = Σ c_T[local v]` in double, as `operator::Assembled`
/// does; the diagonal is `Σ_w D_vw · P_w D_vw / m_w` (`diagonal::jacobi`'s column norm, since
/// `D_vw = G_wv`). The tables are laid out slot-major by hand (`slot × vertices + vertex`, as
/// the products read them), which gml's per-item loads cannot express, so the kernel writes
/// them through their (read) table pointers, entry by entry, keeping each entry's column lane
/// bit for bit. Matrix-free, the columns are collected per vertex in a private list (at most
/// `3 × degree + 1`), in the host's order of first appearance.
fn compile_rows(
    gml: &mut Gml,
    f: &Fields,
    tets: crate::gml::DataId,
    lumped: Solution<f64>,
    assembled: Option<kernels::Assembled>,
) -> Result<KernelId> {
    let spec = KernelSpec::new(
        if assembled.is_some() {
            "wind_refresh_rows"
        } else {
            "wind_refresh_diagonal"
        },
        MeshKind::Vertices,
    )
    .access(Access::read(tets))
    .access(Access::read(f.coef).with_voyeurs())
    .access(Access::read(f.bnd))
    .access(Access::read(lumped))
    .access(Access::read(f.flags))
    .access(Access::write(f.inv_diag));
    const FINISH: &str =
        "VerDia = ((VerFlg & WIND_FIXED_PRESSURE) || diag <= 0.0) ? 0.0 : 1.0 / diag;";
    let id = match assembled {
        Some(a) => gml.compile(
            spec.access(Access::read(a.grad_table))
                .access(Access::read(a.div_table))
                .body(&format!(
                    "const int n = GmlPar->vertices;
                     __global float4 *gel = (__global float4 *)VerGelTab;
                     __global float4 *del = (__global float4 *)VerDelTab;
                     double diag = 0.0;
                     for (int k = 0; k < {width}; k++) {{
                         const int at = k * n + VerIdx;
                         const int w = as_int(gel[at].w);
                         if (w < 0) break;
                         double3 g = (double3)(0.0), d = (double3)(0.0);
                         for (int i = 0; i < VerTetDeg; i++) {{
                             const int t = VerTet[i];
                             const int4 nodes = TetVerTab[t];
                             const int lw = nodes.x == w ? 0 : nodes.y == w ? 1
                                          : nodes.z == w ? 2 : nodes.w == w ? 3 : -1;
                             if (lw < 0) continue;
                             const float16 c = TetCofTab[t];
                             g += wind_coefficient(c, lw);
                             d += wind_coefficient(c, VerTetVoy[i]);
                         }}
                         gel[at] = as_float4((int4)(as_int3(convert_float3(g)), w));
                         del[at] = as_float4((int4)(as_int3(convert_float3(d)), w));
                         diag += wind_diagonal_term(d, VerBndTab[w], VerLmTab[w], VerFlgTab[w]);
                     }}
                     {FINISH}",
                    width = a.width
                )),
        )?,
        None => gml.compile(spec.body(&format!(
            "int cols[3 * VerTetDegMax + 1];
             double3 acc[3 * VerTetDegMax + 1];
             int used = 0;
             for (int i = 0; i < VerTetDeg; i++) {{
                 const int t = VerTet[i];
                 const int4 nodes = TetVerTab[t];
                 const double3 c = wind_coefficient(TetCofTab[t], VerTetVoy[i]);
                 const int ns[4] = {{nodes.x, nodes.y, nodes.z, nodes.w}};
                 for (int j = 0; j < 4; j++) {{
                     int at = 0;
                     while (at < used && cols[at] != ns[j]) at++;
                     if (at == used) {{
                         cols[used] = ns[j];
                         acc[used] = (double3)(0.0);
                         used++;
                     }}
                     acc[at] += c;
                 }}
             }}
             double diag = 0.0;
             for (int j = 0; j < used; j++)
                 diag += wind_diagonal_term(acc[j], VerBndTab[cols[j]], VerLmTab[cols[j]],
                                            VerFlgTab[cols[j]]);
             {FINISH}"
        )))?,
    };
    Ok(id)
}
