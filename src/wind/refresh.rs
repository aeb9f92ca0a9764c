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
//! profile of the columns that moved is computed on the host, in parallel (the profile
//! formula stays in one place, [`Wind::velocity_at`]), and uploaded for every vertex (a
//! [`Solver::reset`] starts the field from it everywhere; the device's boundary kernel reads
//! it). The host's mirror of the boundary ([`Solver::boundary`], for reports and
//! [`Solver::fluxes`]) is computed when first asked for after a refresh, off the refresh's
//! path. The time step, the initial divergence (the tolerance's scale) and the divergence
//! floor are kept (see the plan, §2.7).
//!
//! A refresh checks every tetrahedron on the device before it writes anything: a degenerate
//! or inverted one is an error ([`WindError::BadGeometry`]) and the solver is left as it was.

use std::sync::OnceLock;
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
    /// ([`Solver::refresh_ground`] only).
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
    /// The columns' regrade on the host.
    pub regrade_ms: f64,
    /// The first refresh only: the boundary's inside vertices, the kernels' compilation and
    /// the device buffers.
    pub setup_ms: f64,
    /// Uploading the coordinates and checking every tetrahedron on the device (one wait).
    pub check_ms: f64,
    /// The inflow profile on the host, and its copy into gml's host copy of `Inf` (the device
    /// gets it with the geometry's kernels, which compute the slip projectors and inflow
    /// fluxes).
    pub boundary_ms: f64,
    /// The device's coefficients, slip projectors and inflow fluxes, lumped volumes, operator
    /// rows and diagonal (one wait).
    pub geometry_ms: f64,
    /// The re-projection of the carried-over wind.
    pub reproject_ms: f64,
    /// The whole refresh.
    pub total_ms: f64,
}

/// What the solver keeps for ground refreshes: the mesh's columns, the wind profile the inflow
/// is sampled from, and (once prepared: at set-up when refreshes are on, else at the first
/// refresh) the device data and kernels.
#[derive(Debug)]
pub struct GroundRefresh {
    columns: Columns,
    wind: Wind,
    /// The inflow profile at every vertex, as on the device (`Inf`).
    inflow: Option<Vec<[f32; 4]>>,
    /// The boundary's structure for recomputing its conditions on moved vertices.
    index: Option<boundary::MovedIndex>,
    /// After a refresh, the host's mirror of the boundary on the moved vertices, computed
    /// when first asked for ([`Solver::boundary`]); `None` before the first refresh (the
    /// solver's own boundary is then current).
    mirror: Option<OnceLock<boundary::Boundary>>,
    /// Per column, its ground vertex (level 0).
    ground_vertex: Vec<u32>,
    device: Option<Device>,
}

/// The refresh's device data and kernels.
#[derive(Clone, Copy, Debug)]
struct Device {
    /// Per vertex, the new coordinates in double.
    coordinates: Solution<[f64; 4]>,
    /// Per vertex, the new projector and inflow flux as `Bnd` holds them (`s6` unused).
    staged: Solution<[f32; 8]>,
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
        self.refresh = Some(Box::new(GroundRefresh {
            columns,
            wind,
            inflow: None,
            index: None,
            mirror: None,
            ground_vertex,
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
        self.refresh.as_ref().map(|r| r.columns.ground.len())
    }

    /// Makes the refresh's device data, kernels and host tables now rather than at the first
    /// refresh (they take 40–50 ms on the valley); an error without ground columns
    /// ([`set_ground_columns`](Self::set_ground_columns)).
    pub fn prepare_ground_refresh(&mut self) -> Result<()> {
        let mut refresh = self.refresh.take().ok_or_else(no_columns)?;
        let prepared = refresh.prepare(self).map(|_| ());
        self.refresh = Some(refresh);
        prepared
    }

    /// Raises each column's ground by `raise` (m, one per column, ≥ 0, from the bare ground of
    /// set-up: nothing accumulates across refreshes; clamped at half the air) and refreshes
    /// the wind on the regraded mesh ([`refresh_heights`](Self::refresh_heights)). An error
    /// without columns ([`set_ground_columns`](Self::set_ground_columns); a mesh-file domain
    /// has none) or with a raise that is not one finite, non-negative number per column.
    pub fn refresh_ground(&mut self, raise: &[f64]) -> Result<RefreshStats> {
        let start = Instant::now();
        let refresh = self.refresh.as_ref().ok_or_else(no_columns)?;
        let regraded = refresh
            .columns
            .regrade(raise)
            .map_err(|e| WindError::Refresh(e.to_string()))?;
        let regrade_ms = ms(start);
        let mut stats = self.refresh_at(&regraded.z, start)?;
        stats.clamped = regraded.clamped;
        stats.times.regrade_ms = regrade_ms;
        Ok(stats)
    }

    /// Moves every vertex to height `z` (m, one per vertex; x and y are kept) and recomputes
    /// what depends on the coordinates, then projects the current wind onto the new mesh
    /// (warm from the current pressure, at most [`Settings::startup_iterations`]). Heights all
    /// equal to the current ones bit for bit change nothing (`skipped`). The new heights must
    /// keep the columns' order (a ground below its levels, as a regrade does): a degenerate or
    /// inverted tetrahedron is [`WindError::BadGeometry`], with the solver as it was. The
    /// low-level form of [`refresh_ground`](Self::refresh_ground); needs the columns too (the
    /// inflow profile is sampled by height above the column's ground).
    ///
    /// [`Settings::startup_iterations`]: super::Settings::startup_iterations
    pub fn refresh_heights(&mut self, z: &[f64]) -> Result<RefreshStats> {
        self.refresh_at(z, Instant::now())
    }

    fn refresh_at(&mut self, z: &[f64], start: Instant) -> Result<RefreshStats> {
        let mut refresh = self.refresh.take().ok_or_else(no_columns)?;
        let mut tl = std::mem::replace(&mut self.timeline, Timeline::new(false));
        let result = self.refresh_with(&mut refresh, z, start, &mut tl);
        self.refresh = Some(refresh);
        let finished = self.finish_timeline(tl);
        let stats = result?;
        finished?;
        Ok(stats)
    }

    fn refresh_with(
        &mut self,
        r: &mut GroundRefresh,
        z: &[f64],
        start: Instant,
        tl: &mut Timeline,
    ) -> Result<RefreshStats> {
        let moved = self.moved_columns(r, z)?;
        let columns_changed = moved.iter().filter(|&&m| m).count();
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
        let vertices: Vec<[f64; 3]> = self
            .vertices
            .iter()
            .zip(z)
            .map(|(p, &z)| [p[0], p[1], z])
            .collect();

        // Check every tetrahedron before anything is written.
        let phase = Instant::now();
        let c64: Vec<[f64; 4]> = vertices.iter().map(|p| [p[0], p[1], p[2], 0.0]).collect();
        self.gml.set_block(device.coordinates, 0, &c64)?;
        tl.stage("wind.refresh");
        self.gml.enqueue(device.check, tl)?;
        let bad = self.gml.download_parameters(&self.params)?.bad_tets;
        if bad != 0.0 {
            return Err(self.bad_geometry(&vertices, bad));
        }
        stats.times.check_ms = ms(phase);

        // The inflow profile, on the host (the device's boundary kernel reads it). Only a
        // device failure can stop the refresh after the check, and that leaves the device's
        // tables part-written anyway: the host's inflow profile is updated in place, and the
        // host's mirror of the boundary is out of date from here on.
        let phase = Instant::now();
        r.update_inflow(&vertices, &moved);
        r.mirror = Some(OnceLock::new());
        let Some(inflow) = r.inflow.as_deref() else {
            return Err(WindError::Refresh(
                "the refresh's tables are not set up".into(),
            ));
        };
        self.gml.set_block(self.fields.inflow, 0, inflow)?;
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
        stats.times.geometry_ms = ms(phase);
        self.vertices = vertices;
        // The host's mirror of the boundary, for reports, when asked ([`Solver::boundary`]).
        r.mirror = Some(OnceLock::new());
        self.volume = p.volume;
        self.unknown_volume = p.unknown_volume;
        stats.volume = p.volume;

        // The carried-over wind, projected on the new mesh.
        let phase = Instant::now();
        self.gml.enqueue(device.prepare, tl)?;
        let predicted = self.predicted_iterations;
        let projected = self.project_star(self.settings.startup_iterations, self.steps, tl, phase);
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

    /// Per column, whether any of its vertices moves to `z`; an error for heights that are
    /// not one finite number per vertex.
    fn moved_columns(&self, r: &GroundRefresh, z: &[f64]) -> Result<Vec<bool>> {
        if z.len() != self.vertices.len() {
            return Err(WindError::Refresh(format!(
                "{} heights for {} vertices",
                z.len(),
                self.vertices.len()
            )));
        }
        let mut moved = vec![false; r.columns.ground.len()];
        for (v, (p, &z)) in self.vertices.iter().zip(z).enumerate() {
            if !z.is_finite() {
                return Err(WindError::Refresh(format!("vertex {v}: a height of {z} m")));
            }
            if z.to_bits() != p[2].to_bits() {
                moved[r.columns.column[v] as usize] = true;
            }
        }
        Ok(moved)
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
    /// (`Solver::prepare_ground_refresh`), else at the first refresh.
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
        // Links built and tables uploaded now, not on the first refresh's path.
        let geometry = device.geometry_kernels();
        for kernel in [device.check, device.prepare].into_iter().chain(geometry) {
            solver.gml.prepare(kernel)?;
        }
        self.index = Some(index);
        self.inflow = Some(inflow);
        solver.edit_parameters(|p| p.orientation = orientation)?;
        self.device = Some(device);
        Ok(device)
    }

    /// Updates the inflow profile (`inflow`, every vertex's, as `Inf` holds it) of the
    /// columns that `moved` to `vertices`: by height above the column's ground vertex, in
    /// double, in parallel; the other columns keep theirs. Every vertex's, not only the inflow
    /// sides': [`Solver::reset`] starts the field from the profile everywhere.
    fn update_inflow(&mut self, vertices: &[[f64; 3]], moved: &[bool]) {
        let Some(inflow) = self.inflow.as_mut() else {
            return;
        };
        let (column, ground_vertex, wind) = (&self.columns.column, &self.ground_vertex, &self.wind);
        const CHUNK: usize = 4096;
        inflow
            .par_chunks_mut(CHUNK)
            .zip(vertices.par_chunks(CHUNK))
            .zip(column.par_chunks(CHUNK))
            .for_each(|((inflow, vertices_here), column)| {
                // A local copy: the profile's constants stay out of the loop.
                let wind = *wind;
                for ((u, p), &c) in inflow.iter_mut().zip(vertices_here).zip(column) {
                    let c = c as usize;
                    if moved[c] {
                        let ground = vertices[ground_vertex[c] as usize][2];
                        let [x, y, z] = wind.velocity_at((p[2] - ground).max(0.0));
                        *u = [x as f32, y as f32, z as f32, 0.0];
                    }
                }
            });
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
        // Per tetrahedron `V/4`, per vertex the lumped volume in double.
        let quarter = gml.new_solution::<f64>(tet, 1, "Vq")?;
        let lumped = gml.new_solution::<f64>(ver, 1, "Lm")?;
        let staged = gml.new_solution::<[f32; 8]>(ver, 1, "Bns")?;
        const NODES: &str = "TetCrd64[0], TetCrd64[1], TetCrd64[2], TetCrd64[3]";
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
            staged,
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
