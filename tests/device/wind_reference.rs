//! An independent f64 CPU reference of the wind solver's discretisation, written from the
//! specification in `src/wind/mod.rs` (its module doc) and not from the device code, for the
//! device tests to check each wind kernel against. Plus a structured box mesh generator (and a
//! terrain-following hill variant) and the reference's own tests against exact results.
//!
//! Everything is plain loops, clarity over speed, for meshes of a few thousand tetrahedra; only
//! the location of departure points goes through a grid of bounding boxes, and gives what brute
//! force over all tetrahedra gives.
//!
//! One reading of the specification is a choice, see [`Reference::unknown`]: the pressure is
//! fixed at every vertex on an outflow triangle that is on no inflow triangle (including the
//! vertices where outflow sides meet slip sides, whose kind is slip), not only at vertices of
//! kind outflow. With that rule a uniform wind along x through a box is exactly
//! divergence-free; with the kind-only rule it is not, and with either rule a uniform wind is
//! not where an inflow side meets an outflow side (the test
//! `uniform_wind_is_divergence_free_except_where_inflow_meets_outflow` shows all three).
//! [`Reference::set_unknown`] lets a caller use another rule.
//!
//! `A` is singular on a closed box (every side slip): besides the constant, a pressure constant
//! on the planes `i + j + k ≡ r (mod 4)` of the Kuhn split has no gradient the projector keeps.
//! An outflow side pins those, but compare pressures between solvers only through their
//! velocities (`P M⁻¹ G p`) or `A p`, never directly: near-null modes remain (a diagonal wind
//! leaves one at λ_min/λ_max ≈ 1e-7, at the top corner where its two inflow sides meet).

use std::collections::{BTreeMap, HashMap};

use glam::{DMat3, DVec3};

/// A tetrahedral mesh as [`box_mesh`] makes it and [`Reference::new`] takes it: vertex
/// coordinates, tetrahedra, boundary triangles with their references.
pub type Mesh = (Vec<[f64; 3]>, Vec<[u32; 4]>, Vec<([u32; 3], i32)>);

/// `sin 2°`, the threshold of the side classification and of the two-reference slip projector.
fn sin_2_degrees() -> f64 {
    2f64.to_radians().sin()
}

/// The boundary kind of a side (a boundary reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The wind blows in: Dirichlet velocity (the inflow profile), prescribed flux.
    Inflow,
    /// The wind blows out: free velocity, pressure fixed at zero.
    Outflow,
    /// Neither: the normal velocity is removed.
    Slip,
}

/// Side classification per the spec: given a side's outward unit normal (area-weighted mean of
/// its triangles) and the horizontal wind direction (normalised here), Inflow if dir·n < −sin 2°,
/// Outflow if > sin 2°, else Slip. A zero direction gives Slip.
pub fn classify(normal: [f64; 3], direction: [f64; 2]) -> Kind {
    let d = DVec3::new(direction[0], direction[1], 0.0).normalize_or_zero();
    let c = d.dot(DVec3::from(normal));
    if c < -sin_2_degrees() {
        Kind::Inflow
    } else if c > sin_2_degrees() {
        Kind::Outflow
    } else {
        Kind::Slip
    }
}

/// The outward unit normal of each side: the area-weighted mean of the outward unit normals of
/// its triangles, normalised, sorted by reference. What [`classify`] takes.
pub fn side_normals(
    vertices: &[[f64; 3]],
    tets: &[[u32; 4]],
    triangles: &[([u32; 3], i32)],
) -> Vec<(i32, [f64; 3])> {
    let x: Vec<DVec3> = vertices.iter().map(|&v| DVec3::from(v)).collect();
    let mut sums: BTreeMap<i32, DVec3> = BTreeMap::new();
    for (&(_, r), (area, n)) in triangles.iter().zip(outward_triangles(&x, tets, triangles)) {
        *sums.entry(r).or_default() += area * n;
    }
    sums.into_iter()
        .map(|(r, s)| (r, s.normalize().to_array()))
        .collect()
}

/// Area and outward unit normal of every boundary triangle, outward meaning away from the one
/// tetrahedron that owns the face, whatever the triangle's own orientation.
///
/// Panics when a triangle is no face of a tetrahedron, or a face of two (an interior face).
fn outward_triangles(
    x: &[DVec3],
    tets: &[[u32; 4]],
    triangles: &[([u32; 3], i32)],
) -> Vec<(f64, DVec3)> {
    // Face (sorted nodes) → (opposite vertex of its first tetrahedron, how many tetrahedra).
    let mut faces: HashMap<[u32; 3], (u32, u32)> = HashMap::new();
    for t in tets {
        for k in 0..4 {
            let mut f = [t[(k + 1) % 4], t[(k + 2) % 4], t[(k + 3) % 4]];
            f.sort_unstable();
            faces.entry(f).or_insert((t[k], 0)).1 += 1;
        }
    }
    triangles
        .iter()
        .enumerate()
        .map(|(i, &(v, _))| {
            let mut key = v;
            key.sort_unstable();
            let &(opposite, count) = faces
                .get(&key)
                .unwrap_or_else(|| panic!("boundary triangle {i} {v:?} is no tetrahedron's face"));
            assert_eq!(count, 1, "boundary triangle {i} {v:?} is an interior face");
            let [a, b, c] = v.map(|k| x[k as usize]);
            let cross = (b - a).cross(c - a);
            let area = 0.5 * cross.length();
            let mut n = cross.normalize();
            if n.dot(a - x[opposite as usize]) < 0.0 {
                n = -n;
            }
            (area, n)
        })
        .collect()
}

/// `n nᵀ`.
fn outer(n: DVec3) -> DMat3 {
    DMat3::from_cols(n * n.x, n * n.y, n * n.z)
}

/// One tetrahedron: its vertices, volume and the (constant) gradients of its barycentric
/// functions.
struct Tet {
    v: [usize; 4],
    volume: f64,
    grad: [DVec3; 4],
}

impl Tet {
    fn new(x: &[DVec3], nodes: [u32; 4]) -> Self {
        let v = nodes.map(|k| k as usize);
        let [a, b, c, d] = v.map(|k| x[k]);
        let six_v = (b - a).dot((c - a).cross(d - a));
        assert!(six_v != 0.0, "degenerate tetrahedron {nodes:?}");
        // φ_b(y) = (y−a)·((c−a)×(d−a)) / 6V and cyclically; the signed 6V takes care of the
        // orientation.
        let gb = (c - a).cross(d - a) / six_v;
        let gc = (d - a).cross(b - a) / six_v;
        let gd = (b - a).cross(c - a) / six_v;
        Tet {
            v,
            volume: six_v.abs() / 6.0,
            grad: [-(gb + gc + gd), gb, gc, gd],
        }
    }

    /// The barycentric coordinates of `y`.
    fn barycentric(&self, x: &[DVec3], y: DVec3) -> [f64; 4] {
        let a = x[self.v[0]];
        let mut l = self.grad.map(|g| g.dot(y - a));
        l[0] += 1.0;
        l
    }
}

/// One boundary triangle with its outward unit normal.
struct Triangle {
    v: [usize; 3],
    reference: i32,
    kind: Kind,
    area: f64,
    normal: DVec3,
}

/// The wind discretisation on one mesh with one set of boundary kinds and one inflow field, in
/// f64: mass, gradient, weak divergence, inflow flux, projectors, the projection's matrix and an
/// exact solve of it, semi-Lagrangian advection and boundary fluxes.
pub struct Reference {
    x: Vec<DVec3>,
    tets: Vec<Tet>,
    triangles: Vec<Triangle>,
    /// The tetrahedra of each vertex.
    ball: Vec<Vec<usize>>,
    /// The tetrahedra by the grid cells their bounding boxes overlap.
    grid: Grid,
    mass: Vec<f64>,
    kind: Vec<u8>,
    unknown: Vec<bool>,
    projector: Vec<DMat3>,
    inflow: Vec<DVec3>,
    flux: Vec<f64>,
}

/// Vertex kinds as [`Reference::vertex_kind`] numbers them.
const INTERIOR: u8 = 0;
const OUTFLOW: u8 = 1;
const SLIP: u8 = 2;
const INFLOW: u8 = 3;

impl Reference {
    /// vertices: coordinates; tets: 4 vertex indices each (either orientation); triangles:
    /// boundary triangles with their reference (either orientation); kind_of: the kind of each
    /// reference; inflow: the inflow velocity at every vertex (only used at inflow vertices and
    /// on inflow triangles).
    pub fn new(
        vertices: &[[f64; 3]],
        tets: &[[u32; 4]],
        triangles: &[([u32; 3], i32)],
        kind_of: &dyn Fn(i32) -> Kind,
        inflow: &[[f64; 3]],
    ) -> Self {
        let n = vertices.len();
        assert_eq!(inflow.len(), n, "one inflow velocity per vertex");
        let x: Vec<DVec3> = vertices.iter().map(|&v| DVec3::from(v)).collect();
        let inflow: Vec<DVec3> = inflow.iter().map(|&v| DVec3::from(v)).collect();

        let outward = outward_triangles(&x, tets, triangles);
        let tets: Vec<Tet> = tets.iter().map(|&t| Tet::new(&x, t)).collect();
        let mut ball = vec![Vec::new(); n];
        let mut mass = vec![0.0; n];
        for (k, t) in tets.iter().enumerate() {
            for &i in &t.v {
                ball[i].push(k);
                mass[i] += t.volume / 4.0;
            }
        }

        let triangles: Vec<Triangle> = triangles
            .iter()
            .zip(outward)
            .map(|(&(v, reference), (area, normal))| Triangle {
                v: v.map(|k| k as usize),
                reference,
                kind: kind_of(reference),
                area,
                normal,
            })
            .collect();

        // Vertex kinds (inflow > slip > outflow > interior), the pressure rule, and the slip
        // normals per reference: the area-weighted sums of the triangles' unit normals.
        let mut kind = vec![INTERIOR; n];
        let mut on_inflow = vec![false; n];
        let mut on_outflow = vec![false; n];
        let mut slip_normals: Vec<BTreeMap<i32, DVec3>> = vec![BTreeMap::new(); n];
        let mut flux = vec![0.0; n];
        for t in &triangles {
            let k = match t.kind {
                Kind::Inflow => INFLOW,
                Kind::Slip => SLIP,
                Kind::Outflow => OUTFLOW,
            };
            let u_in = t.v.iter().map(|&i| inflow[i]).sum::<DVec3>() / 3.0;
            for &i in &t.v {
                kind[i] = kind[i].max(k);
                match t.kind {
                    Kind::Inflow => {
                        on_inflow[i] = true;
                        flux[i] += t.area / 3.0 * u_in.dot(t.normal);
                    }
                    Kind::Outflow => on_outflow[i] = true,
                    Kind::Slip => {
                        *slip_normals[i].entry(t.reference).or_default() += t.area * t.normal
                    }
                }
            }
        }
        let unknown: Vec<bool> = (0..n).map(|i| !on_outflow[i] || on_inflow[i]).collect();

        let projector: Vec<DMat3> = (0..n)
            .map(|i| match kind[i] {
                INFLOW => DMat3::ZERO,
                SLIP => slip_projector(slip_normals[i].values().map(|s| s.normalize())),
                _ => DMat3::IDENTITY,
            })
            .collect();

        let grid = Grid::new(&x, &tets);
        Reference {
            x,
            tets,
            triangles,
            grid,
            ball,
            mass,
            kind,
            unknown,
            projector,
            inflow,
            flux,
        }
    }

    /// The number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.x.len()
    }

    /// The vertices' coordinates.
    pub fn vertices(&self) -> &[DVec3] {
        &self.x
    }

    /// The lumped mass `m_i = Σ_{T∋i} V_T / 4` of every vertex.
    pub fn lumped_mass(&self) -> &[f64] {
        &self.mass
    }

    /// Whether the pressure is unknown at each vertex (false = fixed p=0: vertices on an outflow
    /// triangle and on no inflow triangle; this includes outflow–slip edges, whose vertices are
    /// of kind slip).
    pub fn unknown(&self) -> &[bool] {
        &self.unknown
    }

    /// Replaces the pressure rule: `unknown[i]` false fixes `p_i = 0`. For callers that read the
    /// spec's rule otherwise, e.g. `vertex_kind(i) != 1`.
    pub fn set_unknown(&mut self, unknown: Vec<bool>) {
        assert_eq!(unknown.len(), self.vertex_count());
        self.unknown = unknown;
    }

    /// The 3x3 velocity projector P_i per vertex (row-major; it is symmetric).
    pub fn projector(&self, i: usize) -> [[f64; 3]; 3] {
        self.projector[i].transpose().to_cols_array_2d()
    }

    /// Vertex kind: 0 interior, 1 outflow, 2 slip, 3 inflow (the strongest kind of its triangles).
    pub fn vertex_kind(&self, i: usize) -> u8 {
        self.kind[i]
    }

    /// `(G p)_i = Σ_{T∋i} (V_T/4) ∇p_T`, unscaled.
    fn weak_gradient(&self, p: &[f64]) -> Vec<DVec3> {
        assert_eq!(p.len(), self.vertex_count());
        let mut g = vec![DVec3::ZERO; self.vertex_count()];
        for t in &self.tets {
            let grad: DVec3 = (0..4).map(|k| p[t.v[k]] * t.grad[k]).sum();
            for &i in &t.v {
                g[i] += t.volume / 4.0 * grad;
            }
        }
        g
    }

    /// M_L^-1 G p (no projector): the volume-weighted mean of the vertex's tetrahedra's gradients.
    pub fn gradient(&self, p: &[f64]) -> Vec<[f64; 3]> {
        self.weak_gradient(p)
            .iter()
            .zip(&self.mass)
            .map(|(g, m)| (*g / *m).to_array())
            .collect()
    }

    /// `(D u)_j = −Σ_{T∋j} V_T ∇φ_j · ū_T`, on DVec3 velocities.
    fn weak_divergence_of(&self, u: &[DVec3]) -> Vec<f64> {
        assert_eq!(u.len(), self.vertex_count());
        let mut d = vec![0.0; self.vertex_count()];
        for t in &self.tets {
            let mean = t.v.iter().map(|&i| u[i]).sum::<DVec3>() / 4.0;
            for k in 0..4 {
                d[t.v[k]] -= t.volume * t.grad[k].dot(mean);
            }
        }
        d
    }

    /// (D u)_j = −Σ_T V_T ∇φ_j·ū_T (no inflow flux).
    pub fn weak_divergence(&self, u: &[[f64; 3]]) -> Vec<f64> {
        self.weak_divergence_of(&to_dvec(u))
    }

    /// F_j, the prescribed inflow flux per vertex:
    /// `Σ_{inflow triangles t∋j} (A_t/3)(u_in,t · n_t)`, negative where the wind enters.
    pub fn inflow_flux(&self) -> &[f64] {
        &self.flux
    }

    /// `(D u + F)_j / m_j` at unknown vertices, 0 elsewhere.
    fn divergence_of(&self, u: &[DVec3]) -> Vec<f64> {
        let d = self.weak_divergence_of(u);
        (0..self.vertex_count())
            .map(|j| {
                if self.unknown[j] {
                    (d[j] + self.flux[j]) / self.mass[j]
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// div_j = (D u + F)_j / m_j at unknown vertices, 0 elsewhere.
    pub fn divergence(&self, u: &[[f64; 3]]) -> Vec<f64> {
        self.divergence_of(&to_dvec(u))
    }

    /// Volume-weighted RMS of `divergence` over unknown vertices, `sqrt(Σ m_j div_j² / Σ m_j)`.
    pub fn divergence_rms(&self, u: &[[f64; 3]]) -> f64 {
        let div = self.divergence(u);
        let (mut sum, mut volume) = (0.0, 0.0);
        for j in (0..self.vertex_count()).filter(|&j| self.unknown[j]) {
            sum += self.mass[j] * div[j] * div[j];
            volume += self.mass[j];
        }
        if volume > 0.0 {
            (sum / volume).sqrt()
        } else {
            0.0
        }
    }

    /// `P M_L⁻¹ G p` with `p` zeroed at the fixed vertices: the projection's velocity change per
    /// unit `dt`, zero at the fixed vertices too (their velocity is the advected one).
    fn projected_gradient(&self, p: &[f64]) -> Vec<DVec3> {
        let p: Vec<f64> = p
            .iter()
            .zip(&self.unknown)
            .map(|(&v, &u)| if u { v } else { 0.0 })
            .collect();
        let g = self.weak_gradient(&p);
        (0..self.vertex_count())
            .map(|i| {
                if self.unknown[i] {
                    self.projector[i] * (g[i] / self.mass[i])
                } else {
                    DVec3::ZERO
                }
            })
            .collect()
    }

    /// A p = Gᵀ P M_L⁻¹ G p restricted to unknown vertices (zero rows/cols elsewhere).
    pub fn apply(&self, p: &[f64]) -> Vec<f64> {
        // Gᵀ = −D.
        let w = self.projected_gradient(p);
        self.weak_divergence_of(&w)
            .iter()
            .zip(&self.unknown)
            .map(|(&d, &u)| if u { -d } else { 0.0 })
            .collect()
    }

    /// Diagonal of A at unknown vertices (exact, for Jacobi), 0 elsewhere:
    /// `A_jj = Σ_i g_ijᵀ P_i g_ij / m_i` with `g_ij = Σ_{T∋i,j} (V_T/4) ∇φ_j`.
    pub fn diagonal(&self) -> Vec<f64> {
        (0..self.vertex_count())
            .map(|j| {
                if !self.unknown[j] {
                    return 0.0;
                }
                let mut g: BTreeMap<usize, DVec3> = BTreeMap::new();
                for &k in &self.ball[j] {
                    let t = &self.tets[k];
                    let local = t.v.iter().position(|&v| v == j).unwrap();
                    for &i in &t.v {
                        *g.entry(i).or_default() += t.volume / 4.0 * t.grad[local];
                    }
                }
                g.iter()
                    .filter(|(i, _)| self.unknown[**i])
                    .map(|(&i, &gi)| gi.dot(self.projector[i] * gi) / self.mass[i])
                    .sum()
            })
            .collect()
    }

    /// Solves A p = b by Jacobi-preconditioned CG in f64 from p0 until ||r||_2 <= tol·||b||_2
    /// (or max_iter); returns p and iterations. Only the unknown vertices take part (b and p0
    /// elsewhere are ignored; p is 0 there).
    pub fn solve(&self, b: &[f64], p0: &[f64], tol: f64, max_iter: usize) -> (Vec<f64>, usize) {
        let n = self.vertex_count();
        assert_eq!(b.len(), n);
        assert_eq!(p0.len(), n);
        let mask = |v: &[f64]| -> Vec<f64> {
            v.iter()
                .zip(&self.unknown)
                .map(|(&x, &u)| if u { x } else { 0.0 })
                .collect()
        };
        let b = mask(b);
        let mut p = mask(p0);
        let inverse: Vec<f64> = self
            .diagonal()
            .iter()
            .map(|&d| if d > 0.0 { 1.0 / d } else { 0.0 })
            .collect();
        let goal = tol * norm(&b);
        let ap = self.apply(&p);
        let mut r: Vec<f64> = (0..n).map(|i| b[i] - ap[i]).collect();
        if norm(&r) <= goal {
            return (p, 0);
        }
        let mut z: Vec<f64> = (0..n).map(|i| inverse[i] * r[i]).collect();
        let mut d = z.clone();
        let mut rz = dot(&r, &z);
        for iteration in 1..=max_iter {
            let q = self.apply(&d);
            let dq = dot(&d, &q);
            if dq <= 0.0 {
                // A direction in A's null space: nothing left that CG can reduce.
                return (p, iteration);
            }
            let alpha = rz / dq;
            for i in 0..n {
                p[i] += alpha * d[i];
                r[i] -= alpha * q[i];
            }
            if norm(&r) <= goal {
                return (p, iteration);
            }
            for i in 0..n {
                z[i] = inverse[i] * r[i];
            }
            let rz_next = dot(&r, &z);
            let beta = rz_next / rz;
            rz = rz_next;
            for i in 0..n {
                d[i] = z[i] + beta * d[i];
            }
        }
        (p, max_iter)
    }

    /// One exact projection: b = −(D u* + F)/dt at unknowns; solve (from 0, to `tol`, at most
    /// 10·n iterations); u = u* − dt P M_L⁻¹ G p. Returns (u, p).
    pub fn project(&self, u_star: &[[f64; 3]], dt: f64, tol: f64) -> (Vec<[f64; 3]>, Vec<f64>) {
        let n = self.vertex_count();
        let u_star = to_dvec(u_star);
        let d = self.weak_divergence_of(&u_star);
        let b: Vec<f64> = (0..n).map(|j| -(d[j] + self.flux[j]) / dt).collect();
        let (p, _) = self.solve(&b, &vec![0.0; n], tol, 10 * n + 100);
        let w = self.projected_gradient(&p);
        let u = (0..n).map(|i| (u_star[i] - dt * w[i]).to_array()).collect();
        (u, p)
    }

    /// The tetrahedron with the largest minimum barycentric coordinate of `y` among all, and the
    /// coordinates, when that minimum is ≥ −1e-9 (`y` inside); by brute force.
    pub fn locate_brute_force(&self, y: DVec3) -> Option<(usize, [f64; 4])> {
        self.best_of(0..self.tets.len(), y)
    }

    /// [`Reference::locate_brute_force`], the same answer (up to ties between tetrahedra that
    /// share the point) from the tetrahedra whose bounding boxes hold `y`.
    pub fn locate(&self, y: DVec3) -> Option<(usize, [f64; 4])> {
        let cell = self.grid.cell(y)?;
        self.best_of(self.grid.cells[cell].iter().copied(), y)
    }

    fn best_of(
        &self,
        candidates: impl Iterator<Item = usize>,
        y: DVec3,
    ) -> Option<(usize, [f64; 4])> {
        let mut best = (f64::NEG_INFINITY, 0, [0.0; 4]);
        for k in candidates {
            let l = self.tets[k].barycentric(&self.x, y);
            let min = l.iter().copied().fold(f64::INFINITY, f64::min);
            if min > best.0 {
                best = (min, k, l);
            }
        }
        (best.0 >= -1e-9).then_some((best.1, best.2))
    }

    /// The velocity interpolated linearly at `y`: in the tetrahedron with the largest minimum
    /// barycentric coordinate when that minimum is ≥ −1e-9, else on the boundary triangle whose
    /// closest point to `y` is nearest (brute force), at that closest point.
    pub fn interpolate(&self, u: &[DVec3], y: DVec3) -> DVec3 {
        if let Some((k, l)) = self.locate(y) {
            let t = &self.tets[k];
            return (0..4).map(|m| l[m] * u[t.v[m]]).sum();
        }
        let mut nearest = (f64::INFINITY, 0, [0.0; 3]);
        for (k, t) in self.triangles.iter().enumerate() {
            let l = closest_on_triangle(y, t.v.map(|i| self.x[i]));
            let c: DVec3 = (0..3).map(|m| l[m] * self.x[t.v[m]]).sum();
            let distance = c.distance_squared(y);
            if distance < nearest.0 {
                nearest = (distance, k, l);
            }
        }
        let t = &self.triangles[nearest.1];
        (0..3).map(|m| nearest.2[m] * u[t.v[m]]).sum()
    }

    /// Semi-Lagrangian advection of u by dt: departure x_i − dt u_i, located as by brute force
    /// over all tets (see [`Reference::interpolate`] for points outside), linear interpolation; then
    /// inflow vertices get `inflow`, others P_i · interpolated.
    pub fn advect(&self, u: &[[f64; 3]], dt: f64) -> Vec<[f64; 3]> {
        let u = to_dvec(u);
        (0..self.vertex_count())
            .map(|i| {
                if self.kind[i] == INFLOW {
                    return self.inflow[i].to_array();
                }
                let y = self.x[i] - dt * u[i];
                (self.projector[i] * self.interpolate(&u, y)).to_array()
            })
            .collect()
    }

    /// Net flux out through the whole boundary, Σ_triangles A_t (ū_t · n_t), ū_t the mean of its
    /// vertices' u.
    pub fn boundary_flux(&self, u: &[[f64; 3]]) -> f64 {
        self.flux_by_reference(u).iter().map(|(_, f)| f).sum()
    }

    /// Flux through the triangles of each reference (same formula), sorted by reference.
    pub fn flux_by_reference(&self, u: &[[f64; 3]]) -> Vec<(i32, f64)> {
        assert_eq!(u.len(), self.vertex_count());
        let mut sums: BTreeMap<i32, f64> = BTreeMap::new();
        for t in &self.triangles {
            let mean = t.v.iter().map(|&i| DVec3::from(u[i])).sum::<DVec3>() / 3.0;
            *sums.entry(t.reference).or_default() += t.area * mean.dot(t.normal);
        }
        sums.into_iter().collect()
    }
}

/// A uniform grid over the mesh's bounding box, each cell listing the tetrahedra whose bounding
/// boxes (padded by a millionth of their size, far more than the −1e-9 barycentric tolerance)
/// overlap it: about one cell per tetrahedron.
struct Grid {
    min: DVec3,
    max: DVec3,
    cell: DVec3,
    dims: [usize; 3],
    cells: Vec<Vec<usize>>,
}

impl Grid {
    fn new(x: &[DVec3], tets: &[Tet]) -> Self {
        let min = x.iter().fold(DVec3::INFINITY, |a, &b| a.min(b));
        let max = x.iter().fold(DVec3::NEG_INFINITY, |a, &b| a.max(b));
        let extent = (max - min).max(DVec3::splat(1e-300));
        let side = (extent.x * extent.y * extent.z / tets.len().max(1) as f64).cbrt();
        let dims = [0, 1, 2].map(|k| ((extent[k] / side).ceil() as usize).clamp(1, 512));
        let cell = DVec3::new(
            extent.x / dims[0] as f64,
            extent.y / dims[1] as f64,
            extent.z / dims[2] as f64,
        );
        let mut grid = Grid {
            min,
            max,
            cell,
            dims,
            cells: vec![Vec::new(); dims[0] * dims[1] * dims[2]],
        };
        for (k, t) in tets.iter().enumerate() {
            let low = t.v.iter().fold(DVec3::INFINITY, |a, &i| a.min(x[i]));
            let high = t.v.iter().fold(DVec3::NEG_INFINITY, |a, &i| a.max(x[i]));
            let pad = DVec3::splat(1e-6 * (high - low).max_element());
            let (a, b) = (grid.index(low - pad), grid.index(high + pad));
            for i in a[0]..=b[0] {
                for j in a[1]..=b[1] {
                    for m in a[2]..=b[2] {
                        grid.cells[i + dims[0] * (j + dims[1] * m)].push(k);
                    }
                }
            }
        }
        grid
    }

    /// The cell coordinates of `y`, clamped into the grid.
    fn index(&self, y: DVec3) -> [usize; 3] {
        [0, 1, 2].map(|k| {
            (((y[k] - self.min[k]) / self.cell[k]).max(0.0) as usize).min(self.dims[k] - 1)
        })
    }

    /// The cell of `y`, `None` outside the (slightly padded) bounding box.
    fn cell(&self, y: DVec3) -> Option<usize> {
        let pad = 1e-6 * (self.max - self.min).max_element();
        if (0..3).any(|k| y[k] < self.min[k] - pad || y[k] > self.max[k] + pad) {
            return None;
        }
        let [i, j, m] = self.index(y);
        Some(i + self.dims[0] * (j + self.dims[1] * m))
    }
}

/// The slip projector from the unit normals of the vertex's slip references (in reference
/// order): `I − n₁n₁ᵀ` for one, `I − n₁n₁ᵀ − n₂'n₂'ᵀ` for two (`n₂'` the normalised part of `n₂`
/// orthogonal to `n₁`), zero for three or more or when `|n₂'| < sin 2°`.
fn slip_projector(mut normals: impl Iterator<Item = DVec3>) -> DMat3 {
    let (Some(n1), second, None) = (normals.next(), normals.next(), normals.next()) else {
        return DMat3::ZERO;
    };
    let Some(n2) = second else {
        return DMat3::IDENTITY - outer(n1);
    };
    let orthogonal = n2 - n2.dot(n1) * n1;
    if orthogonal.length() < sin_2_degrees() {
        return DMat3::ZERO;
    }
    DMat3::IDENTITY - outer(n1) - outer(orthogonal.normalize())
}

/// The barycentric coordinates of the point of triangle `t` closest to `p` (Ericson, Real-Time
/// Collision Detection, 5.1.5).
fn closest_on_triangle(p: DVec3, t: [DVec3; 3]) -> [f64; 3] {
    let [a, b, c] = t;
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return [1.0, 0.0, 0.0];
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return [0.0, 1.0, 0.0];
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return [1.0 - v, v, 0.0];
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return [0.0, 0.0, 1.0];
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return [1.0 - w, 0.0, w];
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return [0.0, 1.0 - w, w];
    }
    let denominator = 1.0 / (va + vb + vc);
    let (v, w) = (vb * denominator, vc * denominator);
    [1.0 - v - w, v, w]
}

fn to_dvec(u: &[[f64; 3]]) -> Vec<DVec3> {
    u.iter().map(|&v| DVec3::from(v)).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// A structured box `[0, size]` of `n` cells per axis, each cube split into 6 tetrahedra along
/// its main diagonal (Kuhn/Freudenthal, conforming), with the boundary triangles oriented
/// outward and referenced 1 x_min, 2 x_max, 3 y_min, 4 y_max, 5 bottom (z=0, the ground), 6 top.
/// Vertex `(i, j, k)` has index `i + (n₀+1)(j + (n₁+1)k)`.
pub fn box_mesh(n: [usize; 3], size: [f64; 3]) -> Mesh {
    let index = |i: usize, j: usize, k: usize| (i + (n[0] + 1) * (j + (n[1] + 1) * k)) as u32;
    let mut vertices = Vec::new();
    for k in 0..=n[2] {
        for j in 0..=n[1] {
            for i in 0..=n[0] {
                vertices.push([
                    size[0] * i as f64 / n[0] as f64,
                    size[1] * j as f64 / n[1] as f64,
                    size[2] * k as f64 / n[2] as f64,
                ]);
            }
        }
    }
    const PERMUTATIONS: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut tets = Vec::new();
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                for permutation in PERMUTATIONS {
                    // The path (0,0,0) → (1,1,1) stepping along the axes in this order.
                    let mut corner = [i, j, k];
                    let mut tet = [index(i, j, k); 4];
                    for (step, &axis) in permutation.iter().enumerate() {
                        corner[axis] += 1;
                        tet[step + 1] = index(corner[0], corner[1], corner[2]);
                    }
                    tets.push(tet);
                }
            }
        }
    }
    // The faces of exactly one tetrahedron, referenced by the grid plane they lie in.
    let mut count: HashMap<[u32; 3], u32> = HashMap::new();
    for t in &tets {
        for k in 0..4 {
            let mut f = [t[(k + 1) % 4], t[(k + 2) % 4], t[(k + 3) % 4]];
            f.sort_unstable();
            *count.entry(f).or_default() += 1;
        }
    }
    let grid = |v: u32| {
        let v = v as usize;
        [
            v % (n[0] + 1),
            v / (n[0] + 1) % (n[1] + 1),
            v / ((n[0] + 1) * (n[1] + 1)),
        ]
    };
    let mut triangles = Vec::new();
    for t in &tets {
        for k in 0..4 {
            let mut f = [t[(k + 1) % 4], t[(k + 2) % 4], t[(k + 3) % 4]];
            let mut key = f;
            key.sort_unstable();
            if count[&key] != 1 {
                continue;
            }
            let g = f.map(grid);
            let on = |axis: usize, value: usize| g.iter().all(|c| c[axis] == value);
            let reference = [
                (0, 0, 1),
                (0, n[0], 2),
                (1, 0, 3),
                (1, n[1], 4),
                (2, 0, 5),
                (2, n[2], 6),
            ]
            .into_iter()
            .find(|&(axis, value, _)| on(axis, value))
            .map(|(_, _, r)| r)
            .expect("a boundary face lies in a side of the box");
            // Outward: away from the tetrahedron's fourth vertex.
            let at = |v: u32| DVec3::from(vertices[v as usize]);
            let [a, b, c] = f.map(at);
            if (b - a).cross(c - a).dot(a - at(t[k])) < 0.0 {
                f.swap(1, 2);
            }
            triangles.push((f, reference));
        }
    }
    (vertices, tets, triangles)
}

/// [`box_mesh`] over a hill: a Gaussian bump of `height` in the middle of the ground (standard
/// deviation a sixth of the smaller horizontal size) lifts every vertex by the bump times
/// `1 − z/size_z`, so the mesh follows the terrain at the ground and is flat at the top.
pub fn hill_mesh(n: [usize; 3], size: [f64; 3], height: f64) -> Mesh {
    let (mut vertices, tets, triangles) = box_mesh(n, size);
    let sigma = size[0].min(size[1]) / 6.0;
    for v in &mut vertices {
        let r2 = (v[0] - size[0] / 2.0).powi(2) + (v[1] - size[1] / 2.0).powi(2);
        v[2] += height * (-r2 / (2.0 * sigma * sigma)).exp() * (1.0 - v[2] / size[2]);
    }
    (vertices, tets, triangles)
}

// The reference's own tests, against results known exactly.

/// A small deterministic generator (SplitMix64) of values in [−1, 1).
struct Random(u64);

impl Random {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    fn values(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next()).collect()
    }

    fn vectors(&mut self, n: usize) -> Vec<[f64; 3]> {
        (0..n)
            .map(|_| [self.next(), self.next(), self.next()])
            .collect()
    }
}

/// The inflow profile of the tests: horizontal along `direction`, `2 + z/10` m/s.
fn profile(vertices: &[[f64; 3]], direction: [f64; 2]) -> Vec<[f64; 3]> {
    let d = DVec3::new(direction[0], direction[1], 0.0).normalize_or_zero();
    vertices
        .iter()
        .map(|v| (d * (2.0 + v[2] / 10.0)).to_array())
        .collect()
}

/// The reference for a wind along `direction` over a box or hill mesh: the four vertical sides
/// classified from their normals, the ground (5) and the top (6) slip.
fn reference_with(mesh: &Mesh, direction: [f64; 2], inflow: &[[f64; 3]]) -> Reference {
    let (vertices, tets, triangles) = mesh;
    let kinds: BTreeMap<i32, Kind> = side_normals(vertices, tets, triangles)
        .into_iter()
        .map(|(r, n)| {
            (
                r,
                if r >= 5 {
                    Kind::Slip
                } else {
                    classify(n, direction)
                },
            )
        })
        .collect();
    Reference::new(vertices, tets, triangles, &|r| kinds[&r], inflow)
}

fn reference(mesh: &Mesh, direction: [f64; 2]) -> Reference {
    reference_with(mesh, direction, &profile(&mesh.0, direction))
}

fn hill() -> Mesh {
    hill_mesh([6, 5, 4], [60.0, 50.0, 20.0], 6.0)
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance
}

fn close3(a: [f64; 3], b: [f64; 3], tolerance: f64) -> bool {
    (0..3).all(|k| close(a[k], b[k], tolerance))
}

/// The vertex of a `box_mesh` at grid position `(i, j, k)`.
fn grid_vertex(n: [usize; 3], i: usize, j: usize, k: usize) -> usize {
    i + (n[0] + 1) * (j + (n[1] + 1) * k)
}

#[test]
fn lumped_mass_sums_to_the_box_volume() {
    let n = [3, 4, 5];
    let mesh = box_mesh(n, [2.0, 3.0, 1.5]);
    let r = reference(&mesh, [1.0, 0.0]);
    let total: f64 = r.lumped_mass().iter().sum();
    assert!(close(total, 9.0, 1e-12), "Σ m = {total}");
    let volumes: f64 = r.tets.iter().map(|t| t.volume).sum();
    assert!(close(volumes, 9.0, 1e-12), "Σ V_T = {volumes}");
    assert_eq!(r.tets.len(), 6 * 3 * 4 * 5);
    // The corner on the cubes' main diagonal belongs to all 6 tetrahedra of its cube (a quarter
    // of the cube), an interior vertex to 24 tetrahedra of 6 cubes (a whole cube).
    let cube = (2.0 / 3.0) * (3.0 / 4.0) * (1.5 / 5.0);
    assert!(close(r.lumped_mass()[0], cube / 4.0, 1e-15));
    let interior = grid_vertex(n, 1, 2, 3);
    assert!(
        close(r.lumped_mass()[interior], cube, 1e-15),
        "{}",
        r.lumped_mass()[interior]
    );
    assert!(r.lumped_mass().iter().all(|&m| m > 0.0));
}

#[test]
fn gradient_of_a_linear_pressure_is_exact_at_every_vertex() {
    let mesh = hill();
    let r = reference(&mesh, [1.0, 0.0]);
    let slope = [0.2, -0.5, 1.5];
    let p: Vec<f64> = mesh
        .0
        .iter()
        .map(|v| 3.0 + slope[0] * v[0] + slope[1] * v[1] + slope[2] * v[2])
        .collect();
    for (i, g) in r.gradient(&p).into_iter().enumerate() {
        assert!(close3(g, slope, 1e-12), "vertex {i}: {g:?}");
    }
}

#[test]
fn weak_divergence_of_a_linear_field_is_its_divergence_less_its_boundary_flux() {
    // For linear u, ū_T is u at the centroid, so Σ_T V_T ∇φ_j·ū_T = ∫ ∇φ_j·u exactly
    // = ∮ φ_j u·n − ∫ φ_j div u, and ∫ φ_j = m_j, ∫_t φ_j u·n = A_t/12 (2u_j + u_k + u_l)·n_t.
    let mesh = hill();
    let r = reference(&mesh, [1.0, 0.3]);
    let mut random = Random(7);
    let c = DVec3::new(random.next(), random.next(), random.next());
    let j = DMat3::from_cols_array(&random.values(9).try_into().unwrap()) * 0.1;
    let u: Vec<[f64; 3]> = r.x.iter().map(|&x| (c + j * x).to_array()).collect();
    let mut expected: Vec<f64> = r
        .lumped_mass()
        .iter()
        .map(|m| m * (j.x_axis.x + j.y_axis.y + j.z_axis.z))
        .collect();
    for t in &r.triangles {
        let sum: DVec3 = t.v.iter().map(|&i| DVec3::from(u[i])).sum();
        for &i in &t.v {
            expected[i] -= t.area / 12.0 * (sum + DVec3::from(u[i])).dot(t.normal);
        }
    }
    let got = r.weak_divergence(&u);
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert!(close(*g, *e, 1e-10), "vertex {i}: {g} against {e}");
    }
    // And Σ_j (D u)_j = 0 for any u, as Σ_j ∇φ_j = 0.
    let any = random.vectors(r.vertex_count());
    let sum: f64 = r.weak_divergence(&any).iter().sum();
    assert!(sum.abs() < 1e-10, "Σ D u = {sum}");
}

#[test]
fn inflow_flux_is_the_profile_through_the_inflow_sides() {
    let mesh = hill();
    let direction = [1.0, 0.6];
    let r = reference(&mesh, direction);
    let inflow = profile(&mesh.0, direction);
    let kinds: BTreeMap<i32, Kind> = r.triangles.iter().map(|t| (t.reference, t.kind)).collect();
    assert_eq!(kinds[&1], Kind::Inflow);
    assert_eq!(kinds[&3], Kind::Inflow);
    assert_eq!(kinds[&2], Kind::Outflow);
    assert_eq!(kinds[&4], Kind::Outflow);
    let through_inflow: f64 = r
        .flux_by_reference(&inflow)
        .iter()
        .filter(|(reference, _)| kinds[reference] == Kind::Inflow)
        .map(|(_, f)| f)
        .sum();
    let total: f64 = r.inflow_flux().iter().sum();
    assert!(total < 0.0);
    assert!(
        close(total, through_inflow, 1e-9),
        "{total} against {through_inflow}"
    );
    for (i, &f) in r.inflow_flux().iter().enumerate() {
        assert_eq!(f != 0.0, r.vertex_kind(i) == INFLOW, "vertex {i}");
    }
    // On a box with a uniform inflow U along x: −U times the area of x_min.
    let mesh = box_mesh([3, 4, 2], [30.0, 40.0, 10.0]);
    let uniform = vec![[5.0, 0.0, 0.0]; mesh.0.len()];
    let r = reference_with(&mesh, [1.0, 0.0], &uniform);
    let total: f64 = r.inflow_flux().iter().sum();
    assert!(close(total, -5.0 * 40.0 * 10.0, 1e-9), "{total}");
}

/// The divergence a uniform `u` must have: `D u = −Σ_{t∋j} (A_t/3) u·n_t` for a constant
/// field, `F` cancels its inflow triangles and slip triangles carry none, so at an unknown vertex
/// `−Σ_{outflow t∋j} (A_t/3) u·n_t / m_j` remains.
fn uniform_divergence(r: &Reference, u: DVec3) -> Vec<f64> {
    let mut expected = vec![0.0; r.vertex_count()];
    for t in r.triangles.iter().filter(|t| t.kind == Kind::Outflow) {
        for &j in t.v.iter().filter(|&&j| r.unknown()[j]) {
            expected[j] -= t.area / 3.0 * u.dot(t.normal) / r.lumped_mass()[j];
        }
    }
    expected
}

#[test]
fn uniform_wind_is_divergence_free_except_where_inflow_meets_outflow() {
    let mesh = box_mesh([4, 3, 3], [40.0, 30.0, 15.0]);
    for direction in [[1.0, 0.0], [0.8, -0.6], [-1.0, 0.0]] {
        let wind = DVec3::new(5.0 * direction[0], 5.0 * direction[1], 0.0);
        let u = vec![wind.to_array(); mesh.0.len()];
        let mut r = reference_with(&mesh, direction, &u);
        let expected = uniform_divergence(&r, wind);
        let got = r.divergence(&u);
        for j in 0..r.vertex_count() {
            assert!(
                close(got[j], expected[j], 1e-13),
                "{direction:?} vertex {j}: {}",
                got[j]
            );
        }
        // Along the sides only: with the pressure fixed on every outflow triangle that is on no
        // inflow triangle, nothing remains; along a diagonal wind's vertical edges where an
        // inflow side meets an outflow side, the outflow part remains (their pressure is
        // unknown and their velocity prescribed).
        let worst = expected.iter().fold(0.0f64, |a, d| a.max(d.abs()));
        assert_eq!(
            worst > 0.01,
            direction[1] != 0.0,
            "{direction:?}: |div| up to {worst} 1/s"
        );
        // Fixing the pressure only at vertices of kind outflow leaves the uniform wind
        // divergent along the outflow–slip edges too.
        let kind_rule: Vec<bool> = (0..r.vertex_count())
            .map(|i| r.vertex_kind(i) != OUTFLOW)
            .collect();
        r.set_unknown(kind_rule);
        let worst = r.divergence(&u).iter().fold(0.0f64, |a, d| a.max(d.abs()));
        assert!(worst > 0.01, "{direction:?}: |div| up to {worst} 1/s");
    }
}

#[test]
fn projectors_remove_the_normals_of_the_slip_sides() {
    let n = [4, 3, 3];
    let mesh = box_mesh(n, [40.0, 30.0, 15.0]);
    let r = reference(&mesh, [1.0, 0.0]);
    let v = |i, j, k| grid_vertex(n, i, j, k);
    let diagonal = |a: f64, b: f64, c: f64| [[a, 0.0, 0.0], [0.0, b, 0.0], [0.0, 0.0, c]];
    let cases = [
        (v(2, 1, 1), INTERIOR, true, diagonal(1.0, 1.0, 1.0)),
        (v(2, 1, 0), SLIP, true, diagonal(1.0, 1.0, 0.0)),
        (v(2, 3, 1), SLIP, true, diagonal(1.0, 0.0, 1.0)),
        (v(2, 0, 0), SLIP, true, diagonal(1.0, 0.0, 0.0)),
        (v(4, 1, 1), OUTFLOW, false, diagonal(1.0, 1.0, 1.0)),
        (v(4, 1, 3), SLIP, false, diagonal(1.0, 1.0, 0.0)),
        (v(4, 0, 0), SLIP, false, diagonal(1.0, 0.0, 0.0)),
        (v(0, 1, 1), INFLOW, true, diagonal(0.0, 0.0, 0.0)),
        (v(0, 3, 3), INFLOW, true, diagonal(0.0, 0.0, 0.0)),
    ];
    for (i, kind, unknown, projector) in cases {
        assert_eq!(r.vertex_kind(i), kind, "vertex {i}");
        assert_eq!(r.unknown()[i], unknown, "vertex {i}");
        let got = r.projector(i);
        assert!(
            (0..3).all(|k| close3(got[k], projector[k], 1e-15)),
            "vertex {i}: {got:?}"
        );
    }
    // Every side slip: three slip references at a corner.
    let r = reference(&mesh, [0.0, 0.0]);
    assert_eq!(r.projector(v(4, 3, 0)), diagonal(0.0, 0.0, 0.0));
    assert_eq!(r.projector(v(4, 2, 0)), diagonal(0.0, 1.0, 0.0));
    assert_eq!(r.projector(v(2, 0, 0)), diagonal(1.0, 0.0, 0.0));
    assert!(r.unknown().iter().all(|&u| u));
    // On the hill every projector is symmetric and idempotent and removes its slip normals.
    let r = reference(&hill(), [1.0, 0.0]);
    for i in 0..r.vertex_count() {
        let p = r.projector[i];
        assert!(p.abs_diff_eq(p.transpose(), 1e-14), "vertex {i}");
        assert!(p.abs_diff_eq(p * p, 1e-14), "vertex {i}");
    }
    // At a slip vertex of one or two slip references, P removes the references' vertex normals
    // (the area-weighted sums of their triangles' normals).
    let mut normals: Vec<BTreeMap<i32, DVec3>> = vec![BTreeMap::new(); r.vertex_count()];
    for t in r.triangles.iter().filter(|t| t.kind == Kind::Slip) {
        for &i in &t.v {
            *normals[i].entry(t.reference).or_default() += t.area * t.normal;
        }
    }
    let mut seen = [0; 3];
    for i in (0..r.vertex_count()).filter(|&i| r.vertex_kind(i) == SLIP) {
        let count = normals[i].len();
        seen[count.min(2)] += 1;
        for n in normals[i].values() {
            let removed = (r.projector[i] * n.normalize()).length();
            assert!(count > 2 || removed < 1e-14, "vertex {i}: {removed}");
        }
        let trace = r.projector[i].x_axis.x + r.projector[i].y_axis.y + r.projector[i].z_axis.z;
        assert!(
            close(trace, 3.0 - count as f64, 1e-14) || count > 2,
            "vertex {i}"
        );
    }
    assert!(seen[1] > 0 && seen[2] > 0, "{seen:?}");
}

#[test]
fn two_slip_normals_within_two_degrees_remove_everything() {
    let n1 = DVec3::Z;
    let tilted =
        |degrees: f64| DVec3::new(degrees.to_radians().sin(), 0.0, degrees.to_radians().cos());
    assert_eq!(slip_projector([n1, tilted(1.0)].into_iter()), DMat3::ZERO);
    let p = slip_projector([n1, tilted(3.0)].into_iter());
    assert!(p.abs_diff_eq(outer(DVec3::Y), 1e-14), "{p:?}");
    assert_eq!(
        slip_projector([n1, DVec3::X, DVec3::Y].into_iter()),
        DMat3::ZERO
    );
    assert_eq!(slip_projector(std::iter::empty()), DMat3::ZERO);
}

#[test]
fn classify_uses_the_two_degree_threshold() {
    let at = |degrees: f64| [degrees.to_radians().sin(), degrees.to_radians().cos(), 0.0];
    assert_eq!(classify([-1.0, 0.0, 0.0], [1.0, 0.0]), Kind::Inflow);
    assert_eq!(classify([1.0, 0.0, 0.0], [3.0, 0.0]), Kind::Outflow);
    assert_eq!(classify(at(1.9), [1.0, 0.0]), Kind::Slip);
    assert_eq!(classify(at(-1.9), [1.0, 0.0]), Kind::Slip);
    assert_eq!(classify(at(2.1), [1.0, 0.0]), Kind::Outflow);
    assert_eq!(classify(at(-2.1), [1.0, 0.0]), Kind::Inflow);
    assert_eq!(classify([0.0, 0.0, -1.0], [1.0, 0.0]), Kind::Slip);
    assert_eq!(classify([-1.0, 0.0, 0.0], [0.0, 0.0]), Kind::Slip);
}

#[test]
fn box_normals_point_out_whatever_the_orientations() {
    let mesh = box_mesh([3, 2, 2], [3.0, 2.0, 2.0]);
    let normals = side_normals(&mesh.0, &mesh.1, &mesh.2);
    let expected = [
        (1, [-1.0, 0.0, 0.0]),
        (2, [1.0, 0.0, 0.0]),
        (3, [0.0, -1.0, 0.0]),
        (4, [0.0, 1.0, 0.0]),
        (5, [0.0, 0.0, -1.0]),
        (6, [0.0, 0.0, 1.0]),
    ];
    assert_eq!(normals.len(), 6);
    for ((r, n), (er, en)) in normals.into_iter().zip(expected) {
        assert_eq!(r, er);
        assert!(close3(n, en, 1e-15), "side {r}: {n:?}");
    }
    // Flip every other triangle and every third tetrahedron of the hill: nothing changes.
    let mesh = hill();
    let mut flipped = mesh.clone();
    for (k, t) in flipped.2.iter_mut().enumerate().filter(|(k, _)| k % 2 == 0) {
        t.0.swap(0, 1 + k % 3 / 2);
    }
    for t in flipped.1.iter_mut().step_by(3) {
        t.swap(0, 3);
    }
    let (a, b) = (
        reference(&mesh, [0.8, -0.6]),
        reference(&flipped, [0.8, -0.6]),
    );
    let u = Random(3).vectors(a.vertex_count());
    let p = Random(4).values(a.vertex_count());
    for (fa, fb) in a
        .flux_by_reference(&u)
        .into_iter()
        .zip(b.flux_by_reference(&u))
    {
        assert!(
            fa.0 == fb.0 && close(fa.1, fb.1, 1e-9),
            "{fa:?} against {fb:?}"
        );
    }
    for i in 0..a.vertex_count() {
        assert!(
            close(a.inflow_flux()[i], b.inflow_flux()[i], 1e-9),
            "vertex {i}"
        );
        assert!(
            a.projector[i].abs_diff_eq(b.projector[i], 1e-14),
            "vertex {i}"
        );
    }
    let (da, db) = (a.weak_divergence(&u), b.weak_divergence(&u));
    let (aa, ab) = (a.apply(&p), b.apply(&p));
    for i in 0..a.vertex_count() {
        assert!(
            close(da[i], db[i], 1e-9) && close(aa[i], ab[i], 1e-9),
            "vertex {i}"
        );
    }
}

#[test]
fn apply_is_symmetric_and_positive_semi_definite() {
    let r = reference(&hill(), [0.8, 0.6]);
    let n = r.vertex_count();
    let mut random = Random(11);
    for _ in 0..5 {
        let (p, q) = (random.values(n), random.values(n));
        let (ap, aq) = (r.apply(&p), r.apply(&q));
        let (pq, qp) = (dot(&p, &aq), dot(&q, &ap));
        assert!(close(pq, qp, 1e-12 * (pq.abs() + 1.0)), "{pq} against {qp}");
        // pᵀAp = Σ_i (G p)_iᵀ P_i (G p)_i / m_i ≥ 0.
        let w = r.projected_gradient(&p);
        let energy: f64 = (0..n)
            .map(|i| w[i].length_squared() * r.lumped_mass()[i])
            .sum();
        let pp = dot(&p, &ap);
        assert!(
            pp > 0.0 && close(pp, energy, 1e-12 * pp),
            "{pp} against {energy}"
        );
        for i in (0..n).filter(|&i| !r.unknown()[i]) {
            assert_eq!(ap[i], 0.0);
        }
    }
    // Columns of fixed vertices are zero too.
    let fixed: Vec<f64> = r
        .unknown()
        .iter()
        .map(|&u| if u { 0.0 } else { 1.0 })
        .collect();
    assert!(r.apply(&fixed).iter().all(|&v| v == 0.0));
}

/// Fixes the pressure where the diagonal of `A` vanishes (no corrected velocity reaches the
/// vertex), until none is left.
fn fix_unreached(r: &mut Reference) {
    loop {
        let d = r.diagonal();
        let unknown: Vec<bool> = r
            .unknown()
            .iter()
            .zip(&d)
            .map(|(&u, &d)| u && d > 0.0)
            .collect();
        if unknown == r.unknown() {
            return;
        }
        r.set_unknown(unknown);
    }
}

#[test]
fn diagonal_matches_apply_on_unit_vectors() {
    let r = reference(&hill_mesh([4, 3, 3], [40.0, 30.0, 15.0], 5.0), [0.8, 0.6]);
    let diagonal = r.diagonal();
    let mut e = vec![0.0; r.vertex_count()];
    for j in 0..r.vertex_count() {
        e[j] = 1.0;
        let column = r.apply(&e);
        e[j] = 0.0;
        assert!(
            close(diagonal[j], column[j], 1e-12 * column[j].abs()),
            "vertex {j}"
        );
        // Fixed vertices have none; an unknown one has none when no corrected velocity
        // reaches it (the solver fixes those too).
        assert!(diagonal[j] == 0.0 || r.unknown()[j], "vertex {j}");
    }
}

#[test]
fn solve_reaches_the_tolerance() {
    let r = reference(&hill(), [1.0, 0.0]);
    let n = r.vertex_count();
    let truth = Random(5).values(n);
    let b = r.apply(&truth);
    let (p, iterations) = r.solve(&b, &vec![0.0; n], 1e-12, 10 * n);
    assert!(
        iterations > 0 && iterations < 3 * n,
        "{iterations} iterations"
    );
    let ap = r.apply(&p);
    let residual: Vec<f64> = (0..n).map(|i| ap[i] - b[i]).collect();
    assert!(norm(&residual) <= 1e-12 * norm(&b) * 1.0001);
    // From the answer, nothing to do.
    assert_eq!(r.solve(&b, &p, 1e-6, 10).1, 0);
}

#[test]
fn projection_leaves_no_divergence() {
    let direction = [1.0, 0.0];
    for (name, mesh) in [
        ("box", box_mesh([5, 4, 3], [50.0, 40.0, 15.0])),
        ("hill", hill()),
    ] {
        let r = reference(&mesh, direction);
        let inflow = profile(&mesh.0, direction);
        let n = r.vertex_count();
        let mut random = Random(13);
        // Random, and random as advection leaves it: the profile at inflow vertices, P elsewhere.
        let raw: Vec<[f64; 3]> = random
            .vectors(n)
            .iter()
            .map(|v| v.map(|c| 2.0 + c))
            .collect();
        let advected: Vec<[f64; 3]> = (0..n)
            .map(|i| match r.vertex_kind(i) {
                INFLOW => inflow[i],
                _ => (r.projector[i] * DVec3::from(raw[i])).to_array(),
            })
            .collect();
        for (what, u_star) in [("raw", raw), ("advected", advected)] {
            let before = r.divergence_rms(&u_star);
            let (u, p) = r.project(&u_star, 0.5, 1e-14);
            let after = r.divergence_rms(&u);
            println!("{name} {what}: divergence RMS {before:.3e} → {after:.3e} 1/s");
            assert!(
                before > 1e-3 && after < 1e-10,
                "{name} {what}: {before} → {after}"
            );
            for i in 0..n {
                let change = DVec3::from(u[i]) - DVec3::from(u_star[i]);
                assert!(
                    (r.projector[i] * change - change).length() < 1e-12,
                    "{name} {what}: {i}"
                );
                if !r.unknown()[i] {
                    assert_eq!(p[i], 0.0);
                }
            }
            // Projecting again changes nothing.
            let (again, _) = r.project(&u, 0.5, 1e-14);
            for i in 0..n {
                assert!(close3(again[i], u[i], 1e-9), "{name} {what}: vertex {i}");
            }
        }
    }
}

#[test]
fn advection_keeps_a_uniform_field_uniform() {
    let mesh = box_mesh([5, 4, 3], [50.0, 40.0, 15.0]);
    for direction in [[1.0, 0.0], [0.6, 0.8]] {
        let wind = [3.0 * direction[0], 3.0 * direction[1], 0.0];
        let u = vec![wind; mesh.0.len()];
        let r = reference_with(&mesh, direction, &u);
        // Within a cell, across several cells, out of the domain.
        for dt in [1.0, 7.0, 100.0] {
            for (i, a) in r.advect(&u, dt).into_iter().enumerate() {
                assert!(
                    close3(a, wind, 1e-12),
                    "{direction:?} dt {dt}: vertex {i} {a:?}"
                );
            }
        }
    }
}

#[test]
fn advection_of_a_linear_field_is_exact_where_it_departs_inside() {
    let size = [50.0, 40.0, 15.0];
    let mesh = box_mesh([5, 4, 3], size);
    let r = reference(&mesh, [1.0, 0.0]);
    let mut random = Random(17);
    let c = DVec3::new(2.0, 1.0, 0.5);
    let j = DMat3::from_cols_array(&random.values(9).try_into().unwrap()) * 0.02;
    let u: Vec<[f64; 3]> = r.x.iter().map(|&x| (c + j * x).to_array()).collect();
    let dt = 6.0;
    let mut checked = 0;
    for (i, a) in r.advect(&u, dt).into_iter().enumerate() {
        let y = r.x[i] - dt * DVec3::from(u[i]);
        let inside = (0..3).all(|k| y[k] > 1e-6 && y[k] < size[k] - 1e-6);
        if r.vertex_kind(i) == INTERIOR && inside {
            assert!(close3(a, (c + j * y).to_array(), 1e-12), "vertex {i}");
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked} vertices checked");
}

#[test]
fn advection_clamps_departures_outside_to_the_nearest_boundary_point() {
    // Wind along −x, u_x = −(1 + x/10): every departure point lies beyond x_max, whose nearest
    // boundary point is (x_max, y, z), where u_x = −(1 + x_max/10).
    let size = [50.0, 40.0, 15.0];
    let mesh = box_mesh([5, 4, 3], size);
    let u: Vec<[f64; 3]> = mesh
        .0
        .iter()
        .map(|v| [-(1.0 + v[0] / 10.0), 0.0, 0.0])
        .collect();
    let r = reference_with(&mesh, [-1.0, 0.0], &u);
    let at_exit = [-(1.0 + size[0] / 10.0), 0.0, 0.0];
    for (i, a) in r.advect(&u, 2.0 * size[0]).into_iter().enumerate() {
        let expected = if r.vertex_kind(i) == INFLOW {
            u[i]
        } else {
            at_exit
        };
        assert!(close3(a, expected, 1e-12), "vertex {i}: {a:?}");
    }
}

#[test]
fn boundary_flux_of_a_uniform_field_is_zero_and_splits_by_side() {
    let u = [2.0, -1.0, 0.5];
    let r = reference(&hill(), [1.0, 0.0]);
    assert!(r.boundary_flux(&vec![u; r.vertex_count()]).abs() < 1e-9);
    let r = reference(&box_mesh([3, 4, 2], [30.0, 40.0, 10.0]), [1.0, 0.0]);
    let u = vec![u; r.vertex_count()];
    assert!(r.boundary_flux(&u).abs() < 1e-9);
    let sides = r.flux_by_reference(&u);
    let expected = [-800.0, 800.0, 300.0, -300.0, -600.0, 600.0];
    assert_eq!(
        sides.iter().map(|s| s.0).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    for ((reference, flux), e) in sides.into_iter().zip(expected) {
        assert!(close(flux, e, 1e-9), "side {reference}: {flux}");
    }
}

#[test]
fn the_grid_locates_as_brute_force_does() {
    let r = reference(&hill(), [1.0, 0.0]);
    let u: Vec<DVec3> = Random(19)
        .vectors(r.vertex_count())
        .into_iter()
        .map(DVec3::from)
        .collect();
    let mut random = Random(23);
    let (mut inside, mut outside) = (0, 0);
    // Random points over a box a little larger than the hill's, and the vertices themselves.
    let points = (0..2000)
        .map(|_| {
            DVec3::new(
                30.0 + 35.0 * random.next(),
                25.0 + 30.0 * random.next(),
                10.0 + 14.0 * random.next(),
            )
        })
        .chain(r.x.clone());
    for y in points {
        let (grid, brute) = (r.locate(y), r.locate_brute_force(y));
        assert_eq!(grid.is_some(), brute.is_some(), "{y}");
        if let (Some((a, la)), Some((b, lb))) = (grid, brute) {
            let at =
                |k: usize, l: [f64; 4]| -> DVec3 { (0..4).map(|m| l[m] * u[r.tets[k].v[m]]).sum() };
            assert!(at(a, la).abs_diff_eq(at(b, lb), 1e-9), "{y}");
            inside += 1;
        } else {
            outside += 1;
        }
    }
    assert!(
        inside > 1000 && outside > 100,
        "{inside} inside, {outside} outside"
    );
}

/// The eigenvalues (ascending) and eigenvectors (over the unknown vertices, in order) of A
/// restricted to the unknown vertices, by cyclic Jacobi on the dense matrix: small meshes only.
fn eigen(r: &Reference) -> (Vec<usize>, Vec<(f64, Vec<f64>)>) {
    let unknowns: Vec<usize> = (0..r.vertex_count()).filter(|&i| r.unknown()[i]).collect();
    let m = unknowns.len();
    let mut a = vec![vec![0.0; m]; m];
    let mut e = vec![0.0; r.vertex_count()];
    for (c, &j) in unknowns.iter().enumerate() {
        e[j] = 1.0;
        let column = r.apply(&e);
        e[j] = 0.0;
        for (row, &i) in unknowns.iter().enumerate() {
            a[row][c] = column[i];
        }
    }
    let mut v: Vec<Vec<f64>> = (0..m)
        .map(|i| (0..m).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    for _ in 0..100 {
        let off: f64 = (0..m)
            .flat_map(|p| (p + 1..m).map(move |q| (p, q)))
            .map(|(p, q)| a[p][q] * a[p][q])
            .sum();
        let scale: f64 = (0..m).map(|p| a[p][p] * a[p][p]).sum();
        if off <= 1e-32 * scale {
            break;
        }
        for p in 0..m {
            for q in p + 1..m {
                if a[p][q] == 0.0 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in [&mut a, &mut v] {
                    for r in row.iter_mut() {
                        let (rp, rq) = (r[p], r[q]);
                        r[p] = c * rp - s * rq;
                        r[q] = s * rp + c * rq;
                    }
                }
                let (upper, lower) = a.split_at_mut(q);
                for (pk, qk) in upper[p].iter_mut().zip(lower[0].iter_mut()) {
                    (*pk, *qk) = (c * *pk - s * *qk, s * *pk + c * *qk);
                }
            }
        }
    }
    let mut pairs: Vec<(f64, Vec<f64>)> = (0..m)
        .map(|k| (a[k][k], v.iter().map(|row| row[k]).collect()))
        .collect();
    pairs.sort_by(|x, y| x.0.total_cmp(&y.0));
    (unknowns, pairs)
}

#[test]
fn pressure_null_modes_repeat_every_four_cells_along_the_kuhn_diagonal() {
    // A closed box (every side slip): p constant on each plane i+j+k ≡ r (mod 4) leaves
    // P M⁻¹ G p = 0, and these four are all of A's null space.
    let n = [3, 4, 5];
    let r = reference(&box_mesh(n, [3.0, 4.0, 5.0]), [0.0, 0.0]);
    let plane = |v: usize| {
        let [i, j, k] = [
            v % (n[0] + 1),
            v / (n[0] + 1) % (n[1] + 1),
            v / ((n[0] + 1) * (n[1] + 1)),
        ];
        (i + j + k) % 4
    };
    let scale = r.diagonal().iter().fold(0.0f64, |a, &d| a.max(d));
    for residue in 0..4 {
        let q: Vec<f64> = (0..r.vertex_count())
            .map(|v| f64::from(u8::from(plane(v) == residue)))
            .collect();
        let worst = r.apply(&q).iter().fold(0.0f64, |a, v| a.max(v.abs()));
        assert!(
            worst < 1e-13 * scale,
            "residue {residue}: |A q| up to {worst}"
        );
        assert!(r.projected_gradient(&q).iter().all(|w| w.length() < 1e-13));
    }
    let (_, pairs) = eigen(&r);
    let top = pairs.last().unwrap().0;
    let null = pairs
        .iter()
        .filter(|(value, _)| *value < 1e-12 * top)
        .count();
    assert_eq!(null, 4);
    // With an outflow side (p = 0 there, its velocities left uncorrected) and the vertices no
    // corrected velocity reaches fixed too, as the solver does, the outflow adds no null mode:
    // at most the closed box's four Kuhn-diagonal ones remain.
    for direction in [[1.0, 0.0], [0.8, 0.6]] {
        let mut r = reference(&box_mesh(n, [3.0, 4.0, 5.0]), direction);
        fix_unreached(&mut r);
        let (_, pairs) = eigen(&r);
        let top = pairs.last().unwrap().0;
        let null = pairs
            .iter()
            .filter(|(value, _)| *value < 1e-12 * top)
            .count();
        assert!(
            null <= 4,
            "{null} null modes with the wind along {direction:?}"
        );
    }
}
