//! Drifting snow: the wind lifts laid snow where its friction velocity at the surface exceeds a
//! threshold, carries it in saltation along the cover and lays it where the wind slackens
//! (`kernels/snow_drift.cl`, with the cover's exact edge exchange of `kernels/snow_cover.cl`).
//!
//! # Friction velocity
//!
//! Each coarse ground vertex (the wind mesh's ground) has a first level above it: the volume
//! vertex it shares a tetrahedron with that lies most nearly straight above it (in a
//! terrain-following mesh the next vertex of its column, exactly; in a mesh domain the
//! neighbour whose direction is closest to the vertical), at height `z₁` above it
//! ([`DriftGeometry::level_height`]). The log law gives the friction velocity from the
//! horizontal wind there,
//!
//! `u* = κ |U_h(z₁)| / ln(z₁ / z₀)`, κ = 0.41,
//!
//! as a vector along `U_h` (a reversed flow in a lee eddy is wind too: its direction is kept,
//! its speed not capped), `z₀` the roughness (`ground.roughness`). With the scene's fixed
//! log profile this is the profile's own `u* = κ U_ref / ln((z_ref + z₀) / z₀)` within
//! `ln(1 + z₀/z₁)`. A cover vertex takes its coarse parents' vectors by its barycentric
//! numerators.
//!
//! # Saltation
//!
//! Below the threshold `u*t` (`ground.threshold_friction_velocity`, 0.25 m/s for fresh snow)
//! nothing is entrained. Above it the equilibrium mass flux of Pomeroy & Gray (1990, *Saltation
//! of snow*, Water Resources Research 26(7)) is
//!
//! `Q_eq = 0.68 ρ_air u*t (u*² − u*t²) / (g u*)` kg m⁻¹ s⁻¹,
//!
//! `q_eq = Q_eq / ρ_snow` in m² of laid snow per second, carried by grains moving at
//! `u_p = 2.8 u*` along the wind ([`GRAIN_SPEED`]; Pomeroy & Gray give 2.8 u*t). The actual flux
//! `q` relaxes towards it along the wind over the saturation length `ℓ`,
//! `dq/ds = (q_eq − q) / ℓ` (`ground.saturation_length`, default 20 m: Takeuchi (1980) measured
//! saltation reaching 90 % of its saturated rate within 30–60 m of fetch, `ℓ = x₉₀ / ln 10`):
//! per cover vertex, each frame, from what flows in from its upwind neighbours,
//! `q = q_eq + (q_in − q_eq) e^(−L/ℓ)`, `q_in` the mean of their last `q` weighted by the
//! grains' flow across each dual face, `L = A u_p / inflow` the length a grain crosses the
//! vertex's dual cell (area `A`); nothing flows in through the domain's upwind side. So `q`
//! grows over a fetch, a crest where `q_eq` peaks is scoured, and a lee where it falls is
//! loaded (where `q > q_eq` the snow settles).
//!
//! The laid snow moves as the flux says (Exner's balance, `∂h/∂t = −∇·q`), by first-order
//! upwind finite volumes on the cover's median dual: across the dual face of edge `(a, b)`
//! (vector area `N`, metres, from `a` to `b`) pass `a q_d (d_d · N) Δt` m³ from the upwind end
//! `d` (`d` the wind's direction there), in whole units, and through a vertex's share of the
//! domain's boundary (vector `B`) `a q (d · B)⁺ Δt` leave (counted: blown out). A vertex never
//! gives more than it holds: its outflows are scaled down together, exactly as the repose
//! smoothing's (`kernels/snow_cover.cl`), and its `q` with them (a bare patch carries only what
//! reaches it). Snow is neither made nor lost, no parcel is involved (the sort mode cannot
//! change the result), and every kernel gathers: nothing depends on the order of anything.
//!
//! # The acceleration is a morphological factor
//!
//! `time.acceleration` `a` multiplies the snow the flux moves (as it multiplies what a landing
//! lays): the wind, the flux's relaxation and the grains' speed stay real, the cover changes `a`
//! times faster, as MORFAC does in sediment models (Roelvink 2006, *Coastal morphodynamic
//! evolution techniques*, Coastal Engineering 53). The snow in saltation is not a store of its
//! own: a frame's transport moves laid snow from vertex to vertex.

use crate::cl::{
    BufferArg, Context, DeviceBuffer, Kernel, OutputBuffer, Program, Source, Timeline,
};
use crate::meshio::ElementKind;
use crate::scene::DomainMesh;

use super::cover::GroundCover;
use super::refine::CoverMesh;
use super::{Error, Result};

/// Von Kármán's constant.
pub const KARMAN: f64 = 0.41;
/// The saltating grains' speed over the friction velocity (Pomeroy & Gray 1990: 2.8 u*t).
pub const GRAIN_SPEED: f64 = 2.8;

/// The drifting snow's settings (scene keys under `[ground]` and `wind.air_density`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DriftSettings {
    /// Friction velocity below which no snow is entrained, m/s.
    pub threshold: f64,
    /// Length over which saltation relaxes to its equilibrium, m.
    pub saturation_length: f64,
    /// Roughness length of the snow surface, m.
    pub roughness: f64,
    /// Density of the air, kg/m³.
    pub air_density: f64,
    /// Density of the laid snow, kg/m³ (`snow.density`).
    pub snow_density: f64,
    /// Gravitational acceleration, m/s².
    pub gravity: f64,
    /// The wind also lifts snow into suspension, in the parcels of the bottom layer
    /// (`ground.suspension`, [`Suspension`](super::Suspension)).
    pub suspension: bool,
    /// The threshold rises as the laid snow ages (`ground.ageing_time`); `None`: it stays at
    /// `threshold` (fresh snow).
    pub ageing: Option<Ageing>,
}

/// The threshold friction velocity's rise as laid snow ages (sintering and wind packing bond
/// its grains): from `u*t` for fresh snow towards `aged_threshold` as
/// `u*t(τ) = aged − (aged − u*t) e^(−τ / time)`, `τ` the snow's age at the surface in real
/// seconds (the acceleration does not speed it). Li & Pomeroy (1997, *Estimating threshold
/// wind speeds for snow transport using meteorological data*, J. Applied Meteorology 36)
/// observed 0.07–0.25 m/s for fresh dry snow and 0.25–1.0 for older, wind-hardened or wet snow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ageing {
    /// The e-folding time of the rise, s.
    pub time: f64,
    /// The threshold of fully aged snow, m/s.
    pub aged_threshold: f64,
}

impl Default for DriftSettings {
    fn default() -> Self {
        Self {
            threshold: 0.25,
            saturation_length: 20.0,
            roughness: 0.001,
            air_density: 1.225,
            snow_density: 100.0,
            gravity: 9.81,
            suspension: true,
            ageing: None,
        }
    }
}

impl DriftSettings {
    /// Pomeroy & Gray's equilibrium saltation flux at friction velocity `u`, kg m⁻¹ s⁻¹ (0 at
    /// or below the threshold).
    pub fn equilibrium_flux(&self, u: f64) -> f64 {
        let t = self.threshold;
        if u <= t {
            return 0.0;
        }
        0.68 * self.air_density * t * (u * u - t * t) / (self.gravity * u)
    }

    /// The threshold friction velocity of snow `age` real seconds old at the surface, m/s.
    pub fn threshold_at(&self, age: f64) -> f64 {
        match self.ageing {
            None => self.threshold,
            Some(a) => {
                a.aged_threshold - (a.aged_threshold - self.threshold) * (-age / a.time).exp()
            }
        }
    }

    /// The friction velocity of a horizontal wind of `speed` m/s at `height` m above the
    /// ground, by the log law.
    pub fn friction_velocity(&self, speed: f64, height: f64) -> f64 {
        KARMAN * speed / (height / self.roughness).max(std::f64::consts::E).ln()
    }

    /// Checks every value, naming its scene key.
    pub fn validate(&self) -> Result<()> {
        let checks = [
            ("ground.threshold_friction_velocity", self.threshold),
            ("ground.saturation_length", self.saturation_length),
            ("ground.roughness", self.roughness),
            ("wind.air_density", self.air_density),
            ("snow.density", self.snow_density),
        ];
        for (key, value) in checks {
            if !(value.is_finite() && value > 0.0) {
                return Err(Error::InvalidParameter(format!(
                    "{key} {value} must be finite and positive"
                )));
            }
        }
        if let Some(a) = self.ageing {
            if !(a.time.is_finite() && a.time > 0.0) {
                return Err(Error::InvalidParameter(format!(
                    "ground.ageing_time {} must be finite and positive",
                    a.time
                )));
            }
            if !(a.aged_threshold.is_finite() && a.aged_threshold >= self.threshold) {
                return Err(Error::InvalidParameter(format!(
                    "ground.aged_threshold_friction_velocity {} must be finite and at least \
                     ground.threshold_friction_velocity {}",
                    a.aged_threshold, self.threshold
                )));
            }
        }
        Ok(())
    }
}

/// The drift's tables on the host: where each coarse ground vertex reads its wind, and the
/// cover's median-dual faces.
#[derive(Clone, Debug)]
pub struct DriftGeometry {
    /// Per coarse ground vertex, the volume vertex of its first level above the ground.
    pub upper: Vec<u32>,
    /// Per coarse ground vertex, the height of that level above it, m.
    pub level_height: Vec<f32>,
    /// Per cover edge, the vector area (m) of its median-dual face, from its first vertex
    /// towards its second.
    pub face: Vec<[f32; 2]>,
    /// Per cover vertex, the outward vector area (m) of its share of the domain's boundary.
    pub boundary: Vec<[f32; 2]>,
}

impl DriftGeometry {
    /// The tables of `domain` (its volume mesh and ground) and its cover `mesh` whose edges
    /// are `edges` (sorted, `a < b`, as [`super::CoverGeometry`] lists them).
    pub fn new(domain: &DomainMesh, mesh: &CoverMesh, edges: &[[u32; 2]]) -> Result<Self> {
        let (upper, level_height) = first_levels(domain)?;
        let (face, boundary) = dual_faces(mesh, edges)?;
        Ok(Self {
            upper,
            level_height,
            face,
            boundary,
        })
    }
}

/// Per ground vertex, the volume vertex most nearly straight above it among those it shares a
/// tetrahedron with, and its height above it.
fn first_levels(domain: &DomainMesh) -> Result<(Vec<u32>, Vec<f32>)> {
    let vertices = &domain.mesh.vertices;
    let ground = &domain.ground.volume_vertices;
    let mut index = vec![u32::MAX; vertices.len()];
    for (g, &v) in ground.iter().enumerate() {
        if let Some(slot) = index.get_mut(v as usize) {
            *slot = g as u32;
        }
    }
    // (cosine with the vertical, vertex) of the best candidate so far.
    let mut best = vec![(0.0f64, u32::MAX); ground.len()];
    for (tet, _) in domain.mesh.elements(ElementKind::Tetrahedra).iter() {
        for &a in tet.iter() {
            let Some(&g) = index.get(a as usize) else {
                continue;
            };
            if g == u32::MAX {
                continue;
            }
            let p = vertices[a as usize];
            for &b in tet.iter() {
                let q = vertices[b as usize];
                let (dx, dy, dz) = (q[0] - p[0], q[1] - p[1], q[2] - p[2]);
                let length = (dx * dx + dy * dy + dz * dz).sqrt();
                if dz <= 0.0 || length <= 0.0 {
                    continue;
                }
                let cosine = dz / length;
                let slot = &mut best[g as usize];
                // Ties go to the lower vertex id, so the choice does not depend on the order
                // of the tetrahedra.
                if cosine > slot.0 || (cosine == slot.0 && b < slot.1) {
                    *slot = (cosine, b);
                }
            }
        }
    }
    let mut upper = Vec::with_capacity(ground.len());
    let mut height = Vec::with_capacity(ground.len());
    for (g, &(_, b)) in best.iter().enumerate() {
        if b == u32::MAX {
            return Err(Error::Mesh(format!(
                "ground vertex {g} has no vertex above it in any tetrahedron: no wind to drift \
                 its snow"
            )));
        }
        upper.push(b);
        height.push((vertices[b as usize][2] - vertices[ground[g] as usize][2]) as f32);
    }
    Ok((upper, height))
}

/// A horizontal vector, metres.
type Vector = [f32; 2];

/// The median dual of the cover: per edge the vector area of the face between its two
/// vertices' cells (the segments from the edge's midpoint to its triangles' centroids), from
/// `a` towards `b`; per vertex the outward vector area of its halves of boundary edges.
fn dual_faces(mesh: &CoverMesh, edges: &[[u32; 2]]) -> Result<(Vec<Vector>, Vec<Vector>)> {
    let xy = |v: u32| {
        let p = mesh.vertices[v as usize];
        [p[0], p[1]]
    };
    let mut face = vec![[0.0f64; 2]; edges.len()];
    let mut count = vec![0u8; edges.len()];
    let mut boundary = vec![[0.0f64; 2]; mesh.vertices.len()];
    let mut third = vec![u32::MAX; edges.len()];
    for t in &mesh.triangles {
        let [a, b, c] = t.map(xy);
        let centroid = [(a[0] + b[0] + c[0]) / 3.0, (a[1] + b[1] + c[1]) / 3.0];
        for k in 0..3 {
            let (u, v, w) = (t[k], t[(k + 1) % 3], t[(k + 2) % 3]);
            let key = [u.min(v), u.max(v)];
            let e = edges.binary_search(&key).map_err(|_| {
                Error::Mesh(format!("cover edge {key:?} of a triangle is not listed"))
            })?;
            let (p, q) = (xy(key[0]), xy(key[1]));
            let mid = [(p[0] + q[0]) / 2.0, (p[1] + q[1]) / 2.0];
            let s = [centroid[0] - mid[0], centroid[1] - mid[1]];
            // The segment's normal, turned to point from the edge's first vertex to its
            // second.
            let mut n = [s[1], -s[0]];
            if n[0] * (q[0] - p[0]) + n[1] * (q[1] - p[1]) < 0.0 {
                n = [-n[0], -n[1]];
            }
            face[e][0] += n[0];
            face[e][1] += n[1];
            count[e] = count[e].saturating_add(1);
            third[e] = w;
        }
    }
    for (e, &[a, b]) in edges.iter().enumerate() {
        if count[e] != 1 {
            continue;
        }
        // A boundary edge: its outward normal (away from its triangle's third vertex), half
        // to each end.
        let (p, q, w) = (xy(a), xy(b), xy(third[e]));
        let mut n = [q[1] - p[1], -(q[0] - p[0])];
        let mid = [(p[0] + q[0]) / 2.0, (p[1] + q[1]) / 2.0];
        if n[0] * (w[0] - mid[0]) + n[1] * (w[1] - mid[1]) > 0.0 {
            n = [-n[0], -n[1]];
        }
        for v in [a, b] {
            boundary[v as usize][0] += n[0] / 2.0;
            boundary[v as usize][1] += n[1] / 2.0;
        }
    }
    let f32s = |v: Vec<[f64; 2]>| v.into_iter().map(|p| p.map(|x| x as f32)).collect();
    Ok((f32s(face), f32s(boundary)))
}

/// What the drift did since the start, in the cover's units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriftCounts {
    /// Blown out through the domain's boundary.
    pub blown: u64,
    /// Lifted by the wind: each frame, every vertex's net loss, summed.
    pub eroded: u64,
}

/// The drift on the device: the tables, the saltation flux, the friction velocity and the
/// kernels.
pub struct Drift {
    settings: DriftSettings,
    /// Per coarse ground vertex, the height of its first level, m (host copy, for the state
    /// files; `level_height_device` on the device).
    level_height: Vec<f32>,
    /// Per coarse ground vertex, the volume vertex of its first level and its own volume
    /// vertex (a ground refresh measures the level's height again).
    levels: Vec<(u32, u32)>,
    upper: DeviceBuffer<u32>,
    level_height_device: DeviceBuffer<f32>,
    parents: DeviceBuffer<[u32; 4]>,
    face: DeviceBuffer<[f32; 2]>,
    boundary: DeviceBuffer<[f32; 2]>,
    /// The saltation flux per cover vertex, m²/s: last frame's and this frame's, in turn.
    flux: [DeviceBuffer<f32>; 2],
    /// Which of `flux` holds the latest.
    latest: usize,
    /// Friction velocity per cover vertex (a vector along the wind), m/s.
    friction: DeviceBuffer<[f32; 2]>,
    /// Whether `friction` holds this frame's (computed by [`Drift::friction`] before the
    /// particle step, for the suspension), so that [`Drift::step`] does not compute it again.
    friction_ready: bool,
    /// Units each cover vertex sends out of the domain this frame.
    sink: DeviceBuffer<u64>,
    /// The threshold friction velocity per cover vertex, m/s (its snow's age's, with ageing).
    threshold: DeviceBuffer<f32>,
    /// With ageing: per cover vertex, its snow's age at the surface (s) and its volume when
    /// the age was last advanced.
    age: Option<(DeviceBuffer<f32>, DeviceBuffer<u64>)>,
    /// [blown out, eroded] units since the start.
    counters: DeviceBuffer<u64>,
    kernels: [Kernel; 4],
    ground_friction: Kernel,
    age_kernel: Kernel,
}

impl Drift {
    /// The drift of `cover` over `domain` on `context`, no snow moving yet.
    pub fn new(
        context: &Context,
        domain: &DomainMesh,
        cover: &GroundCover,
        settings: DriftSettings,
    ) -> Result<Self> {
        settings.validate()?;
        let geometry = DriftGeometry::new(domain, &cover.mesh, &cover.geometry.edges)?;
        let source =
            Source::embedded("snow_drift.cl", include_str!("../../kernels/snow_drift.cl"))?;
        let program = Program::build(context, &[source], "")?;
        let parents: Vec<[u32; 4]> = cover
            .mesh
            .parents
            .iter()
            .map(|(p, n)| {
                [
                    p[0],
                    p[1],
                    p[2],
                    u32::from(n[0]) | u32::from(n[1]) << 8 | u32::from(n[2]) << 16,
                ]
            })
            .collect();
        let nv = cover.geometry.len();
        Ok(Self {
            upper: DeviceBuffer::from_slice(context, &geometry.upper)?,
            level_height_device: DeviceBuffer::from_slice(context, &geometry.level_height)?,
            parents: DeviceBuffer::from_slice(context, &parents)?,
            face: DeviceBuffer::from_slice(context, &geometry.face)?,
            boundary: DeviceBuffer::from_slice(context, &geometry.boundary)?,
            flux: [
                DeviceBuffer::zeroed(context, nv)?,
                DeviceBuffer::zeroed(context, nv)?,
            ],
            latest: 0,
            friction: DeviceBuffer::zeroed(context, nv)?,
            friction_ready: false,
            sink: DeviceBuffer::zeroed(context, nv)?,
            threshold: DeviceBuffer::from_slice(context, &vec![settings.threshold as f32; nv])?,
            age: match settings.ageing {
                Some(_) => Some((
                    DeviceBuffer::zeroed(context, nv)?,
                    DeviceBuffer::zeroed(context, nv)?,
                )),
                None => None,
            },
            counters: DeviceBuffer::zeroed(context, 2)?,
            kernels: [
                program.kernel("drift_friction")?,
                program.kernel("drift_flux_state")?,
                program.kernel("drift_flux")?,
                program.kernel("drift_limit")?,
            ],
            ground_friction: program.kernel("drift_ground_friction")?,
            age_kernel: program.kernel("drift_age")?,
            settings,
            levels: geometry
                .upper
                .iter()
                .zip(&domain.ground.volume_vertices)
                .map(|(&u, &g)| (u, g))
                .collect(),
            level_height: geometry.level_height,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &DriftSettings {
        &self.settings
    }

    /// On the device: each cover vertex's coarse parents and numerators, and each coarse
    /// vertex's first level's height (what the suspension's sites are computed from).
    pub(crate) fn device_levels(&self) -> (&DeviceBuffer<[u32; 4]>, &DeviceBuffer<f32>) {
        (&self.parents, &self.level_height_device)
    }

    /// Per wind-mesh ground vertex, the height above it of the level whose wind gives the
    /// friction velocity, m.
    pub fn level_height(&self) -> &[f32] {
        &self.level_height
    }

    /// Measures every first level's height again on the mesh's moved `vertices` (a ground
    /// refresh raised the ground under the snow; the levels stay the same vertices).
    pub fn regrade(&mut self, vertices: &[[f64; 3]]) -> Result<()> {
        let height = |v: u32| vertices.get(v as usize).map(|p| p[2]);
        let mut level_height = Vec::with_capacity(self.levels.len());
        for &(upper, ground) in &self.levels {
            match (height(upper), height(ground)) {
                (Some(u), Some(g)) => level_height.push((u - g) as f32),
                _ => {
                    return Err(Error::InvalidParameter(format!(
                        "a regrade of {} vertices misses a ground vertex's first level",
                        vertices.len()
                    )));
                }
            }
        }
        self.level_height_device.write(&level_height)?;
        self.level_height = level_height;
        Ok(())
    }

    /// Stops every flux and zeroes the counters.
    pub fn reset(&mut self) -> Result<()> {
        for q in &mut self.flux {
            q.fill(0.0)?;
        }
        self.counters.fill(0)?;
        self.friction_ready = false;
        self.threshold.fill(self.settings.threshold as f32)?;
        if let Some((age, last)) = &mut self.age {
            age.fill(0.0)?;
            last.fill(0)?;
        }
        Ok(self.friction.fill([0.0; 2])?)
    }

    /// Enqueues computing this frame's friction velocity per cover vertex from `wind` (a
    /// velocity per volume vertex, at least as many as the domain's), for the suspension
    /// before the particle step; [`step`](Self::step) then uses it.
    pub fn friction(
        &mut self,
        context: &Context,
        cover: &GroundCover,
        wind: &impl BufferArg<[f32; 4]>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let nv = cover.geometry.len();
        if nv == 0 {
            return Ok(());
        }
        let s = &self.settings;
        let kernel = &self.kernels[0];
        let mut call = kernel.call();
        // SAFETY: parents name coarse vertices below `upper`'s and the level heights' length,
        // whose entries name volume vertices of the wind buffer (its length checked by
        // `Snow::drift`); friction holds nv values; the kernel guards its id.
        unsafe {
            call.buffer(&self.parents)?
                .buffer(&self.upper)?
                .buffer(&self.level_height_device)?
                .buffer(wind)?
                .buffer(&self.friction)?
                .arg(&(nv as u32))?
                .arg(&(cover.mesh.refinement as f32))?
                .arg(&(KARMAN as f32))?
                .arg(&(s.roughness as f32))?;
        }
        call.enqueue_into(context, kernel.work_size(context, nv)?, timeline)?;
        self.friction_ready = true;
        Ok(())
    }

    /// The friction velocity per cover vertex on the device (a vector along the wind, m/s).
    pub(crate) fn friction_buffer(&self) -> &DeviceBuffer<[f32; 2]> {
        &self.friction
    }

    /// The threshold friction velocity per cover vertex on the device, m/s.
    pub(crate) fn threshold_buffer(&self) -> &DeviceBuffer<f32> {
        &self.threshold
    }

    /// With ageing, enqueues advancing every cover vertex's snow age by `dt` real seconds (any
    /// snow added since the last frame, landed, drifted in or laid from suspension, counts as
    /// new and makes it younger: the age is the mean of the old snow's and the added snow's,
    /// weighted by volume) and its threshold with it; nothing without. At the start of a
    /// frame, before anything lifts snow.
    pub fn age(
        &mut self,
        context: &Context,
        cover: &GroundCover,
        dt: f32,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let (Some((age, last)), Some(a)) = (&self.age, self.settings.ageing) else {
            return Ok(());
        };
        let nv = cover.geometry.len();
        if nv == 0 {
            return Ok(());
        }
        let law = [
            dt,
            a.time as f32,
            self.settings.threshold as f32,
            a.aged_threshold as f32,
        ];
        let mut call = self.age_kernel.call();
        // SAFETY: every buffer holds nv values; the kernel guards its id.
        unsafe {
            call.buffer(&cover.volume)?
                .buffer(last)?
                .buffer(age)?
                .buffer(&self.threshold)?
                .arg(&(nv as u32))?
                .arg(&law)?;
        }
        call.enqueue_into(context, self.age_kernel.work_size(context, nv)?, timeline)?;
        Ok(())
    }

    /// The age of each cover vertex's snow at the surface, s (blocking; `None` without
    /// ageing).
    pub fn snow_age(&self) -> Result<Option<Vec<f32>>> {
        match &self.age {
            Some((age, _)) => Ok(Some(age.read()?)),
            None => Ok(None),
        }
    }

    /// Enqueues one frame of drift over `dt` seconds in `wind` (a velocity per volume vertex,
    /// at least as many as the domain's) with the morphological factor `acceleration`, on
    /// `cover`: the friction velocity (unless [`friction`](Self::friction) computed it this
    /// frame), the saltation flux, the laid snow it moves.
    pub fn step(
        &mut self,
        context: &Context,
        cover: &mut GroundCover,
        wind: &impl BufferArg<[f32; 4]>,
        dt: f32,
        acceleration: f64,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let ready = std::mem::replace(&mut self.friction_ready, false);
        let nv = cover.geometry.len();
        let ne = cover.geometry.edges.len();
        let unit = cover.unit_volume();
        if nv == 0 || unit <= 0.0 || dt <= 0.0 {
            return Ok(());
        }
        if !ready {
            self.friction(context, cover, wind, timeline)?;
            self.friction_ready = false;
        }
        let s = &self.settings;
        let [_, state, flux, limit] = &self.kernels;
        let law = [
            s.threshold as f32,
            s.air_density as f32,
            s.gravity as f32,
            s.snow_density as f32,
        ];
        let shape = [
            s.saturation_length as f32,
            GRAIN_SPEED as f32,
            dt,
            (acceleration / unit) as f32,
        ];
        let (last, next) = (self.latest, 1 - self.latest);
        let mut call = state.call();
        // SAFETY: offsets has nv + 1 entries and incident codes index the edges, whose ends
        // are below nv; every per-vertex buffer holds nv values, per-edge ne; the kernel
        // guards its id.
        unsafe {
            call.buffer(&cover.offsets)?
                .buffer(&cover.incident)?
                .buffer(&cover.edges)?
                .buffer(&self.face)?
                .buffer(&self.friction)?
                .buffer(&self.threshold)?
                .buffer(&cover.area)?
                .buffer(&self.boundary)?
                .buffer(&self.flux[last])?
                .buffer(&self.flux[next])?
                .buffer(&self.sink)?
                .arg(&(nv as u32))?
                .arg(&law)?
                .arg(&shape)?;
        }
        call.enqueue_into(context, state.work_size(context, nv)?, timeline)?;
        let mut call = flux.call();
        // SAFETY: edges and faces hold ne values naming vertices below nv; the kernel guards
        // its id.
        unsafe {
            call.buffer(&cover.edges)?
                .buffer(&self.face)?
                .buffer(&self.friction)?
                .buffer(&self.flux[next])?
                .buffer(&cover.flux)?
                .arg(&(ne as u32))?
                .arg(&shape)?;
        }
        call.enqueue_into(context, flux.work_size(context, ne)?, timeline)?;
        cover.exchange(context, Some((&self.sink, &self.counters)), timeline)?;
        let mut call = limit.call();
        // SAFETY: the ratio and the flux hold nv values; the kernel guards its id.
        unsafe {
            call.buffer(&cover.ratio)?
                .buffer(&self.flux[next])?
                .arg(&(nv as u32))?;
        }
        call.enqueue_into(context, limit.work_size(context, nv)?, timeline)?;
        self.latest = next;
        Ok(())
    }

    /// Enqueues writing the friction velocity's magnitude (m/s) on each of the `coarse` wind-mesh
    /// ground vertices, four per float4, into `target` (the terrain's u* view).
    pub fn write_ground_friction(
        &self,
        context: &Context,
        target: &mut OutputBuffer<'_, [f32; 4]>,
        coarse: usize,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let groups = coarse.div_ceil(4);
        if BufferArg::len(target) < groups || coarse > self.friction.len() {
            return Err(Error::InvalidParameter(format!(
                "a friction buffer of {} float4 for {coarse} ground vertices",
                BufferArg::len(target)
            )));
        }
        let mut call = self.ground_friction.call();
        // SAFETY: the friction holds at least `coarse` values and the target `coarse / 4`
        // rounded up (checked); the kernel guards its id.
        unsafe {
            call.buffer(&self.friction)?
                .buffer(target)?
                .arg(&(coarse as u32))?;
        }
        call.enqueue_into(
            context,
            self.ground_friction.work_size(context, groups)?,
            timeline,
        )?;
        Ok(())
    }

    /// What the drift did since the start, in units (blocking).
    pub fn counts(&self) -> Result<DriftCounts> {
        let c = self.counters.read()?;
        Ok(DriftCounts {
            blown: c[0],
            eroded: c[1],
        })
    }

    /// The friction velocity per cover vertex, m/s (its magnitude; blocking).
    pub fn friction_velocity(&self) -> Result<Vec<f32>> {
        Ok(self
            .friction
            .read()?
            .iter()
            .map(|v| v[0].hypot(v[1]))
            .collect())
    }

    /// The saltation flux per cover vertex, m² of laid snow per second (real, before the
    /// acceleration; blocking).
    pub fn saltation_flux(&self) -> Result<Vec<f32>> {
        Ok(self.flux[self.latest].read()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_rises_from_fresh_to_aged_snow() {
        let fresh = DriftSettings::default();
        assert_eq!(fresh.threshold_at(1e6), fresh.threshold);
        let aged = DriftSettings {
            ageing: Some(Ageing {
                time: 3600.0,
                aged_threshold: 0.6,
            }),
            ..fresh
        };
        assert_eq!(aged.threshold_at(0.0), 0.25);
        // One e-folding time: 0.6 − 0.35 / e.
        assert!((aged.threshold_at(3600.0) - (0.6 - 0.35 / std::f64::consts::E)).abs() < 1e-12);
        assert!((aged.threshold_at(1e7) - 0.6).abs() < 1e-9);
        let bad = DriftSettings {
            ageing: Some(Ageing {
                time: 3600.0,
                aged_threshold: 0.2,
            }),
            ..fresh
        };
        let err = bad.validate().unwrap_err().to_string();
        assert!(
            err.contains("ground.aged_threshold_friction_velocity"),
            "{err}"
        );
    }

    #[test]
    fn pomeroy_and_grays_flux_starts_at_the_threshold_and_grows_nearly_linearly() {
        let s = DriftSettings::default();
        assert_eq!(s.equilibrium_flux(0.2), 0.0);
        assert_eq!(s.equilibrium_flux(0.25), 0.0);
        // At 0.5 m/s: 0.68 · 1.225 · 0.25 · (0.25 − 0.0625) / (9.81 · 0.5) = 0.007964.
        assert!((s.equilibrium_flux(0.5) - 0.007_964).abs() < 1e-5);
        // Q ∝ (u² − t²) / u: from 1 to 2 m/s, (3.9375 / 2) / 0.9375 = 2.1.
        let ratio = s.equilibrium_flux(2.0) / s.equilibrium_flux(1.0);
        assert!((ratio - 2.1).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn the_log_law_gives_the_profiles_friction_velocity() {
        let s = DriftSettings {
            roughness: 0.01,
            ..DriftSettings::default()
        };
        // 12 m/s at 10 m over z0 = 1 cm: 0.41 · 12 / ln 1000 = 0.712 m/s.
        assert!((s.friction_velocity(12.0, 10.0) - 0.7122).abs() < 1e-3);
    }
}
