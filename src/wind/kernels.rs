//! The wind's gml kernels: their loop bodies, and the fields they read and write.
//!
//! The helper functions the bodies call (`wind_project`, `wind_pick`, the walk) are in
//! `kernels/wind.cl` and `kernels/tet_walk.cl`, pasted before every kernel as gml's toolkit.

use crate::gml::{Access, Data, Gml, KernelId, KernelSpec, MeshKind, Solution};

use super::error::Result;
use super::history::MAX_HISTORY;
use super::solver::EARLY_SCALE;

/// The first line of every kernel of a CG iteration: nothing to do once the residual the last
/// update (or the start) left in the parameters is at or below the limit, as happens when the
/// host has enqueued more iterations than the solve needs.
const CONVERGED_RETURN: &str = "if (GmlPar->rr <= GmlPar->rr_limit) return;\n";

/// With `direction`, makes a product kernel (whose body computes the vertex's `q`) read the
/// search direction and fold `d·q` into the parameters' `pq`; returns the spec and the body
/// line that adds the vertex's term (nothing without).
fn fold_dq(spec: KernelSpec, f: &Fields, direction: bool) -> (KernelSpec, &'static str) {
    if !direction {
        return (spec, "");
    }
    (
        spec.access(Access::read(f.dir))
            .sums(1, "GmlPar->pq = GmlSum[0];"),
        "GmlSum[0] = VerDir * q;",
    )
}

/// `CONVERGED_RETURN` where `guard`, else nothing.
fn guard(guard: bool) -> &'static str {
    if guard { CONVERGED_RETURN } else { "" }
}

/// The device parameter struct (`GmlParSct`), mirrored by [`PARAMETERS`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// `r·z` of the conjugate gradients, in two slots used in turn (even and odd iterations).
    pub rz: [f64; 2],
    /// `d·A d` of the current iteration.
    pub pq: f64,
    /// `Σ r²/m` of the current residual (scaled by `EARLY_SCALE` in the early iterations).
    pub rr: f64,
    /// The wind's time step, s.
    pub dt: f32,
    /// Its inverse.
    pub inv_dt: f32,
    /// The walk's inside tolerance, m.
    pub tolerance: f32,
    /// The walk's hop limit.
    pub max_hops: i32,
    /// Vertices: the stride of the assembled operator's slots.
    pub vertices: i32,
    /// Iterations the current solve has run (the start sets it to zero, each update that
    /// runs adds one).
    pub iterations: i32,
    /// The convergence limit of `rr`: once `rr` is at or below it, the iteration kernels
    /// return at once (the host has enqueued more iterations than the solve needs).
    pub rr_limit: f64,
    /// Iterations in which `rr` is scaled by `EARLY_SCALE`:
    /// a solve stops that early only well below the tolerance.
    pub early_iterations: i32,
    /// Padding to a multiple of 8 bytes.
    pub pad: i32,
    /// `Σ m div²` of the field before the solve (`[0]`) and after the projection (`[1]`),
    /// folded by the divergence's gather.
    pub div_sq: [f64; 2],
    /// `Σ m |u|² / 2` of the projected field (m⁵/s²; times ρ the kinetic energy), folded by
    /// the projection.
    pub energy: f64,
    /// Vertices whose advection walk hit its hop limit, folded by the advection.
    pub lost: f64,
    /// The largest speed of the projected field, m/s (a reduction).
    pub max_speed: f32,
    /// Padding to a multiple of 8 bytes.
    pub pad2: i32,
    /// The ground refresh: the sign of the mesh's first tetrahedron (every other one must
    /// share it).
    pub orientation: f64,
    /// The ground refresh: tetrahedra its check found degenerate or inverted.
    pub bad_tets: f64,
    /// The ground refresh: the air's volume, m³, folded by the lumped volumes' kernel.
    pub volume: f64,
    /// The ground refresh: the volume of the vertices whose pressure is unknown, m³.
    pub unknown_volume: f64,
    /// The pressure history (`super::history`): each slot's share of the next start.
    pub history_alpha: [f64; MAX_HISTORY],
    /// The kept corrections' images' Gram matrix `Σ A w_i A w_j / m` (rows of `MAX_HISTORY`).
    pub history_gram: [[f64; MAX_HISTORY]; MAX_HISTORY],
    /// Whether each slot holds a correction.
    pub history_valid: [i32; MAX_HISTORY],
    /// The slot the next correction replaces.
    pub history_next: i32,
}

// The parameter struct's history arrays are spelled out in `PARAMETERS`.
const _: () = assert!(MAX_HISTORY == 7);

/// The OpenCL side of [`Params`].
pub const PARAMETERS: &str = "typedef struct { double rz[2]; double pq; double rr; float dt; \
     float inv_dt; float tolerance; int max_hops; int vertices; int iterations; \
     double rr_limit; int early_iterations; int pad; double div_sq[2]; double energy; \
     double lost; float max_speed; int pad2; double orientation; double bad_tets; \
     double volume; double unknown_volume; double history_alpha[7]; double history_gram[49]; \
     int history_valid[7]; int history_next; } GmlParSct;\n";

/// The CG start once `VerR` holds the start's residual (the plain start's and the pressure
/// history's): `z`, the first direction, and the sums [`CG_START_FINISH`] folds.
pub(super) fn cg_start_tail() -> String {
    format!(
        "VerZ = VerR * VerDia;
         VerDir = VerZ;
         GmlSum[0] = VerR * VerR * (double)VerBnd.s6 * {EARLY_SCALE:?};
         GmlSum[1] = VerR * VerZ;"
    )
}

/// The CG start's finish: `Σ r²/m` (scaled, an early iteration) into `rr`, `r·z` into
/// `rz[0]`, the solve's iterations to zero.
pub(super) const CG_START_FINISH: &str = "GmlPar->rr = GmlSum[0];
     GmlPar->rz[0] = GmlSum[1];
     GmlPar->iterations = 0;";

/// Where an advection's walk starts: the tetrahedron where the vertex's last walk ended
/// (`Hnt`, see [`Fields::hint`]), else the first of the vertex's ball.
///
/// A walk that leaves the domain from there is walked again from the vertex's ball: a
/// departure point outside takes the value where the walk from the vertex leaves (as
/// without a hint), not where an earlier step's walk left, which would stick to the
/// boundary face it once reached (on a curved ground, a slip vertex's departure point lies
/// just below it; sticking there cost the 4 M-tetrahedron valley 40 % more CG iterations).
const HINTED_START: &str = "(VerHnt > 0 ? VerHnt - 1 : VerTet[0])";

/// The hint for the next step: where this walk ended, or stopped when it hit the hop limit
/// (the next walk resumes from there); none where it left the domain.
const HINT_UPDATE: &str = "\nVerHnt = w.status == TET_WALK_OUTSIDE ? 0 : w.tet + 1;";

/// The advection's finish: the count of lost walks into the parameters.
const LOST_FINISH: &str = "GmlPar->lost = GmlSum[0];";

/// Byte offset of `max_speed`.
pub const MAX_SPEED_OFFSET: usize = std::mem::offset_of!(Params, max_speed);

/// Every field of the solver.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    /// Velocity (xyz m/s, w 0): the state.
    pub vel: Solution<[f32; 4]>,
    /// Velocity after advection, before projection.
    pub star: Solution<[f32; 4]>,
    /// BFECC: the velocity advected forward.
    pub forward: Solution<[f32; 4]>,
    /// BFECC: that advected back.
    pub backward: Solution<[f32; 4]>,
    /// The inflow profile at every vertex.
    pub inflow: Solution<[f32; 4]>,
    /// Per vertex: `P` (xx, xy, xz, yy, yz, zz), `1/m`, `F`.
    pub bnd: Solution<[f32; 8]>,
    /// Per vertex: the fixed-velocity and fixed-pressure flags.
    pub flags: Solution<i32>,
    /// Per vertex: one more than the tetrahedron where the last advection's walk from it
    /// ended (or stopped at the hop limit), 0 before the first and where it left the domain.
    /// The next step's walk starts there: its departure point moves little from one step to
    /// the next, so the walk takes fewer hops than from the vertex's first tetrahedron (about
    /// 3 on the valley), a chain of dependent loads each. The advection so depends on the
    /// steps before, not on the velocity alone: a solver compared bit for bit with another
    /// must have stepped the same way from a reset or a new solver (which clear it).
    pub hint: Solution<i32>,
    /// Per vertex: 1 / diag(A), zero where the pressure is fixed.
    pub inv_diag: Solution<f64>,
    /// Pressure times 1/ρ (m²/s²), the solution of the projection.
    pub pressure: Solution<f64>,
    /// Right-hand side `−(D u* + F)/dt`.
    pub rhs: Solution<f64>,
    /// CG residual, preconditioned residual, direction, `A d`.
    pub r: Solution<f64>,
    /// Preconditioned residual.
    pub z: Solution<f64>,
    /// Search direction.
    pub dir: Solution<f64>,
    /// `A d`.
    pub q: Solution<f64>,
    /// Vertex gradient `P M⁻¹ G x` of a CG vector.
    pub grad: Solution<[f64; 4]>,
    /// Divergence (1/s), zero where the pressure is fixed.
    pub div: Solution<f32>,
    /// Per tetrahedron, `(V/4) ∇φ_j` for j = 0..3.
    pub coef: Solution<[f32; 16]>,
    /// Per tetrahedron, the neighbours across its faces.
    pub ngb: Solution<[i32; 4]>,
    /// Per tetrahedron, `(V/4) ∇x_T` of a vertex scalar: computed in double, stored in f32
    /// (half the bytes of the two ball gathers, which sum in double).
    pub tet_grad: Solution<[f32; 4]>,
    /// Per tetrahedron, `V ∇φ_j · v̄_T` for j = 0..3 of a vertex vector.
    pub tet_div: Solution<[f32; 4]>,
}

impl Fields {
    /// Creates every field on the instance's vertices and tetrahedra.
    pub fn new(gml: &mut Gml) -> Result<Self> {
        let ver = MeshKind::Vertices;
        let tet = MeshKind::Tetrahedra;
        Ok(Self {
            vel: gml.new_solution(ver, 1, "Vel")?,
            star: gml.new_solution(ver, 1, "Str")?,
            forward: gml.new_solution(ver, 1, "Fwd")?,
            backward: gml.new_solution(ver, 1, "Bwd")?,
            inflow: gml.new_solution(ver, 1, "Inf")?,
            bnd: gml.new_solution(ver, 1, "Bnd")?,
            flags: gml.new_solution(ver, 1, "Flg")?,
            hint: gml.new_solution(ver, 1, "Hnt")?,
            inv_diag: gml.new_solution(ver, 1, "Dia")?,
            pressure: gml.new_solution(ver, 1, "X")?,
            rhs: gml.new_solution(ver, 1, "B")?,
            r: gml.new_solution(ver, 1, "R")?,
            z: gml.new_solution(ver, 1, "Z")?,
            dir: gml.new_solution(ver, 1, "Dir")?,
            q: gml.new_solution(ver, 1, "Q")?,
            grad: gml.new_solution(ver, 1, "G")?,
            div: gml.new_solution(ver, 1, "Div")?,
            coef: gml.new_solution(tet, 1, "Cof")?,
            ngb: gml.new_solution(tet, 1, "Ngb")?,
            tet_grad: gml.new_solution(tet, 1, "Gp")?,
            tet_div: gml.new_solution(tet, 1, "Dv")?,
        })
    }
}

/// The compiled kernels.
#[derive(Clone, Copy, Debug)]
pub struct Kernels {
    /// Advection into `Str`, with the boundary conditions.
    pub advect: KernelId,
    /// BFECC's three passes: forward into `Fwd`, back into `Bwd`, and the corrected, limited
    /// advection into `Str` with the boundary conditions.
    pub bfecc: [KernelId; 3],
    /// `(V/4)∇d_T` of the search direction.
    pub grad_dir: KernelId,
    /// `(V/4)∇p_T` of the pressure.
    pub grad_pressure: KernelId,
    /// Vertex gradient `P M⁻¹ G` gathered into `G`.
    pub gather_grad: KernelId,
    /// Tetrahedron divergence terms of `G`, `Str` and `Vel`.
    pub tet_div_grad: KernelId,
    /// Of `Str`.
    pub tet_div_star: KernelId,
    /// Of `Vel`.
    pub tet_div_vel: KernelId,
    /// `q = A x` into `Q` (of the pressure, for the start) / `q = A d` into `Q`, folding
    /// `d·q` into the parameters' `pq`.
    pub gather_q: [KernelId; 2],
    /// Divergence and the right-hand side, folding `Σ m div²` into `div_sq[0]` (before the
    /// solve) / `div_sq[1]` (after the projection).
    pub gather_div: [KernelId; 2],
    /// CG start: `r = b − A x`, `z`, `d` (from `Q = A x`), folding `r·z` into `rz[0]` and
    /// `Σ r²/m` (scaled, an early iteration) into `rr`; the solve's iterations to zero.
    pub cg_start: KernelId,
    /// CG update of `x`, `r`, `z` using `rz[0]` / using `rz[1]`, folding the new `r·z` into
    /// the other slot and the new `Σ r²/m` into `rr`, and counting the iteration.
    pub cg_update: [KernelId; 2],
    /// CG direction with `β = rz[1]/rz[0]` / `rz[0]/rz[1]`.
    pub cg_direction: [KernelId; 2],
    /// `u = u* − dt P M⁻¹ G p`, folding `Σ m |u|² / 2` into `energy`.
    pub project: KernelId,
    /// Sets `Vel`, `Str` to the inflow profile with the boundary conditions applied.
    pub reset: KernelId,
}

impl Kernels {
    /// Compiles every kernel over `f`.
    pub fn new(gml: &mut Gml, f: &Fields) -> Result<Self> {
        let ver = MeshKind::Vertices;
        let tet = MeshKind::Tetrahedra;
        let vertices = gml.mesh(ver)?;
        let tets = gml.mesh(tet)?;
        let grad = |gml: &mut Gml, name: &str, x: Solution<f64>, var: &str, g: bool| {
            gml.compile(
                KernelSpec::new(name, tet)
                    .access(Access::read(x))
                    .access(Access::read(f.coef))
                    .access(Access::write(f.tet_grad))
                    .body(&format!(
                        "{}TetGp = convert_float4(convert_double4(TetCof.s0123) * Tet{var}[0]
                               + convert_double4(TetCof.s4567) * Tet{var}[1]
                               + convert_double4(TetCof.s89ab) * Tet{var}[2]
                               + convert_double4(TetCof.scdef) * Tet{var}[3]);",
                        guard(g)
                    )),
            )
        };
        let tet_div = |gml: &mut Gml, name: &str, v: crate::gml::DataId, var: &str, g: bool| {
            gml.compile(
                KernelSpec::new(name, tet)
                    .access(Access::read(v))
                    .access(Access::read(f.coef))
                    .access(Access::write(f.tet_div))
                    .body(&format!(
                        "{}double4 s = convert_double4(Tet{var}[0]) + convert_double4(Tet{var}[1])
                                   + convert_double4(Tet{var}[2]) + convert_double4(Tet{var}[3]);
                         s.w = 0.0;
                         TetDv = convert_float4((double4)(dot(convert_double4(TetCof.s0123), s),
                                                          dot(convert_double4(TetCof.s4567), s),
                                                          dot(convert_double4(TetCof.s89ab), s),
                                                          dot(convert_double4(TetCof.scdef), s)));",
                        guard(g)
                    )),
            )
        };
        // `source` is the value at node `#` of the departure tetrahedron; the walk starts at
        // `start`, a tetrahedron.
        let walk = |sign: &str, source: &str, start: &str| {
            let at = |node: &str| source.replace('#', node);
            format!(
                "const float3 q = VerCrd.xyz {sign} GmlPar->dt * VerVel.xyz;
                 int start = {start};
                 TetWalk w;
                 for (;;) {{
                     w = tet_walk(TetVerTab, VerCrdTab, TetNgbTab, start, q,
                                  GmlPar->tolerance, GmlPar->max_hops, (uint)VerIdx);
                     if (w.status != TET_WALK_OUTSIDE || start == VerTet[0]) break;
                     start = VerTet[0];
                 }}
                 const int4 n = TetVerTab[w.tet];
                 const float4 u = w.bary.x * {} + w.bary.y * {}
                                + w.bary.z * {} + w.bary.w * {};",
                at("n.x"),
                at("n.y"),
                at("n.z"),
                at("n.w")
            )
        };
        let advect = gml.compile(
            KernelSpec::new("wind_advect", ver)
                .access(Access::read(vertices))
                .access(Access::read(tets))
                .access(Access::read(f.ngb))
                .access(Access::read(f.vel))
                .access(Access::read(f.inflow))
                .access(Access::read(f.bnd))
                .access(Access::read(f.flags))
                .access(Access::read_write(f.hint))
                .access(Access::write(f.star))
                .body(
                    &(walk("-", "VerVelTab[#]", HINTED_START)
                        + HINT_UPDATE
                        + "
                     GmlSum[0] = w.status == TET_WALK_LOST;
                     VerStr = (VerFlgTab[VerIdx] & WIND_FIXED_VELOCITY)
                            ? VerInfTab[VerIdx]
                            : wind_project(VerBndTab[VerIdx], u);"),
                )
                .sums(1, LOST_FINISH),
        )?;
        // BFECC (back and forth error compensation and correction): advect forward, advect
        // that back, and advect `u + (u − back)/2` forward, clamped to the range of the
        // velocities of the departure tetrahedron (the limiter) so no new extremum appears.
        // `also_read`: the field advected back (backward), or the walk hints (forward).
        let pass = |gml: &mut Gml,
                    name: &str,
                    also_read: crate::gml::DataId,
                    to: Solution<[f32; 4]>,
                    body: String| {
            gml.compile(
                KernelSpec::new(name, ver)
                    .access(Access::read(also_read))
                    .access(Access::read(vertices))
                    .access(Access::read(tets))
                    .access(Access::read(f.ngb))
                    .access(Access::read(f.vel))
                    .access(Access::write(to))
                    .body(&body),
            )
        };
        let forward = pass(
            gml,
            "wind_bfecc_forward",
            f.hint.id(),
            f.forward,
            walk("-", "VerVelTab[#]", HINTED_START) + "\nVerFwd = u;",
        )?;
        let backward = pass(
            gml,
            "wind_bfecc_backward",
            f.forward.id(),
            f.backward,
            walk("+", "VerFwdTab[#]", "VerTet[0]") + "\nVerBwd = u;",
        )?;
        let corrected = gml.compile(
            KernelSpec::new("wind_bfecc_corrected", ver)
                .access(Access::read(vertices))
                .access(Access::read(tets))
                .access(Access::read(f.ngb))
                .access(Access::read(f.vel))
                .access(Access::read(f.backward))
                .access(Access::read(f.inflow))
                .access(Access::read(f.bnd))
                .access(Access::read(f.flags))
                .access(Access::read_write(f.hint))
                .access(Access::write(f.star))
                .body(
                    &(walk(
                        "-",
                        "(1.5f * VerVelTab[#] - 0.5f * VerBwdTab[#])",
                        HINTED_START,
                    ) + HINT_UPDATE
                        + "
                     const float4 lo = fmin(fmin(VerVelTab[n.x], VerVelTab[n.y]),
                                            fmin(VerVelTab[n.z], VerVelTab[n.w]));
                     const float4 hi = fmax(fmax(VerVelTab[n.x], VerVelTab[n.y]),
                                            fmax(VerVelTab[n.z], VerVelTab[n.w]));
                     const float4 limited = clamp(u, lo, hi);
                     GmlSum[0] = w.status == TET_WALK_LOST;
                     VerStr = (VerFlg & WIND_FIXED_VELOCITY) ? VerInf
                            : wind_project(VerBnd, limited);"),
                )
                .sums(1, LOST_FINISH),
        )?;
        let bfecc = [forward, backward, corrected];
        let grad_dir = grad(gml, "wind_grad_dir", f.dir, "Dir", true)?;
        // Also the projection's gradient: never skipped.
        let grad_pressure = grad(gml, "wind_grad_pressure", f.pressure, "X", false)?;
        let gather_grad = gml.compile(
            KernelSpec::new("wind_gather_grad", ver)
                .access(Access::read(f.tet_grad))
                .access(Access::read(f.bnd))
                .access(Access::read(f.flags))
                .access(Access::write(f.grad))
                .body(
                    &(CONVERGED_RETURN.to_string()
                        + "double4 s = 0.0;
                     for (int i = 0; i < VerTetDegMax; i++) s += convert_double4(VerTetGp[i]);
                     VerG = (VerFlg & WIND_FIXED_PRESSURE) ? (double4)(0.0)
                          : wind_project_d(VerBnd, s) * (double)VerBnd.s6;"),
                ),
        )?;
        let tet_div_grad = tet_div(gml, "wind_tet_div_grad", f.grad.id(), "G", true)?;
        let tet_div_star = tet_div(gml, "wind_tet_div_star", f.star.id(), "Str", false)?;
        let tet_div_vel = tet_div(gml, "wind_tet_div_vel", f.vel.id(), "Vel", false)?;
        // Of the pressure (the start), and of the search direction with `d·q` folded.
        let gather_q = |gml: &mut Gml, direction: bool| {
            let spec = KernelSpec::new(
                if direction {
                    "wind_gather_q_dir"
                } else {
                    "wind_gather_q"
                },
                ver,
            )
            .access(Access::read(f.tet_div).with_voyeurs())
            .access(Access::read(f.flags))
            .access(Access::write(f.q));
            let (spec, sum) = fold_dq(spec, f, direction);
            gml.compile(spec.body(&format!(
                "{CONVERGED_RETURN}double q = 0.0;
                 for (int i = 0; i < VerTetDegMax; i++) q += (double)wind_pick(VerTetDv[i], VerTetVoy[i]);
                 if (VerFlg & WIND_FIXED_PRESSURE) q = 0.0;
                 VerQ = q;
                 {sum}"
            )))
        };
        let gather_q = [gather_q(gml, false)?, gather_q(gml, true)?];
        // One per statistics slot: the field before the solve, and after the projection.
        let gather_div = |gml: &mut Gml, slot: usize| {
            gml.compile(
                KernelSpec::new(&format!("wind_gather_div{slot}"), ver)
                    .access(Access::read(f.tet_div).with_voyeurs())
                    .access(Access::read(f.flags))
                    .access(Access::read(f.bnd))
                    .access(Access::write(f.div))
                    .access(Access::write(f.rhs))
                    .body(
                        "double s = 0.0;
                         for (int i = 0; i < VerTetDegMax; i++) s += (double)wind_pick(VerTetDv[i], VerTetVoy[i]);
                         const double w = (double)VerBnd.s7 - s;
                         const bool fixed = (VerFlg & WIND_FIXED_PRESSURE) != 0;
                         VerDiv = fixed ? 0.0f : (float)(w * VerBnd.s6);
                         GmlSum[0] = fixed ? 0.0 : w * w * (double)VerBnd.s6;
                         VerB = fixed ? 0.0 : -w * (double)GmlPar->inv_dt;
                         // A new solve starts here: its start is not skipped.
                         if (VerIdx == 0) GmlPar->rr = INFINITY;",
                    )
                    .sums(1, &format!("GmlPar->div_sq[{slot}] = GmlSum[0];")),
            )
        };
        let gather_div = [gather_div(gml, 0)?, gather_div(gml, 1)?];
        let cg_start = gml.compile(
            KernelSpec::new("wind_cg_start", ver)
                .access(Access::read(f.rhs))
                .access(Access::read(f.q))
                .access(Access::read(f.inv_diag))
                .access(Access::read(f.bnd))
                .access(Access::write(f.r))
                .access(Access::write(f.z))
                .access(Access::write(f.dir))
                .body(&format!("VerR = VerB - VerQ;\n{}", cg_start_tail()))
                .sums(2, CG_START_FINISH),
        )?;
        let update = |gml: &mut Gml, slot: usize| {
            gml.compile(
                KernelSpec::new(&format!("wind_cg_update{slot}"), ver)
                    .access(Access::read_write(f.pressure))
                    .access(Access::read_write(f.r))
                    .access(Access::read(f.dir))
                    .access(Access::read(f.q))
                    .access(Access::read(f.inv_diag))
                    .access(Access::read(f.bnd))
                    .access(Access::write(f.z))
                    .body(&format!(
                        "{CONVERGED_RETURN}const double alpha = GmlPar->pq > 0.0 ? GmlPar->rz[{slot}] / GmlPar->pq : 0.0;
                         VerX += alpha * VerDir;
                         VerR -= alpha * VerQ;
                         VerZ = VerR * VerDia;
                         GmlSum[0] = VerR * VerZ;
                         GmlSum[1] = VerR * VerR * (double)VerBnd.s6;"
                    ))
                    // Once converged every term is zero: nothing changes. (The same test as
                    // CONVERGED_RETURN, so that a NaN residual counts the iterations it runs.)
                    .sums(
                        2,
                        &format!(
                            "if (!(GmlPar->rr <= GmlPar->rr_limit)) {{
                                 const int done = GmlPar->iterations + 1;
                                 GmlPar->iterations = done;
                                 GmlPar->rz[{}] = GmlSum[0];
                                 GmlPar->rr = GmlSum[1] * (done < GmlPar->early_iterations ? {EARLY_SCALE:?} : 1.0);
                             }}",
                            1 - slot
                        ),
                    ),
            )
        };
        let cg_update = [update(gml, 0)?, update(gml, 1)?];
        let direction = |gml: &mut Gml, slot: usize| {
            let (new, old) = (1 - slot, slot);
            gml.compile(
                KernelSpec::new(&format!("wind_cg_direction{slot}"), ver)
                    .access(Access::read_write(f.dir))
                    .access(Access::read(f.z))
                    .body(&format!(
                        "{CONVERGED_RETURN}const double beta = GmlPar->rz[{old}] > 0.0 ? GmlPar->rz[{new}] / GmlPar->rz[{old}] : 0.0;
                         VerDir = VerZ + beta * VerDir;"
                    )),
            )
        };
        let cg_direction = [direction(gml, 0)?, direction(gml, 1)?];
        let project = gml.compile(
            KernelSpec::new("wind_projection", ver)
                .access(Access::read(f.tet_grad))
                .access(Access::read(f.bnd))
                .access(Access::read(f.flags))
                .access(Access::read(f.star))
                .access(Access::write(f.vel))
                .body(
                    "double4 s = 0.0;
                     for (int i = 0; i < VerTetDegMax; i++) s += convert_double4(VerTetGp[i]);
                     if (VerFlg & WIND_FIXED_PRESSURE) s = 0.0;
                     const float4 u = VerStr - convert_float4((double)GmlPar->dt
                                    * (double)VerBnd.s6 * wind_project_d(VerBnd, s));
                     VerVel = u;
                     GmlSum[0] = 0.5 * (double)dot(u, u) / (double)VerBnd.s6;",
                )
                .sums(1, "GmlPar->energy = GmlSum[0];"),
        )?;
        let reset = gml.compile(
            KernelSpec::new("wind_reset", ver)
                .access(Access::read(f.inflow))
                .access(Access::read(f.bnd))
                .access(Access::read(f.flags))
                .access(Access::write(f.vel))
                .access(Access::write(f.star))
                .body(
                    "const float4 u = (VerFlg & WIND_FIXED_VELOCITY) ? VerInf : wind_project(VerBnd, VerInf);
                     VerVel = u;
                     VerStr = u;",
                ),
        )?;
        Ok(Self {
            advect,
            bfecc,
            grad_dir,
            grad_pressure,
            gather_grad,
            tet_div_grad,
            tet_div_star,
            tet_div_vel,
            gather_q,
            gather_div,
            cg_start,
            cg_update,
            cg_direction,
            project,
            reset,
        })
    }
}

/// The assembled pressure operator (`super::operator`) on the device: its two coefficient
/// tables and the kernels that apply it.
#[derive(Clone, Copy, Debug)]
pub struct Assembled {
    /// `G` row by row, `width` float4 per vertex, column-major.
    pub grad_table: Solution<[f32; 4]>,
    /// `D` row by row, laid out as `grad_table`.
    pub div_table: Solution<[f32; 4]>,
    /// `G = P M⁻¹ G d` at every vertex from the search direction, into `G`.
    pub grad_dir: KernelId,
    /// The same from the pressure.
    pub grad_pressure: KernelId,
    /// `q = D G` into `Q`, folding `d·q` into the parameters' `pq`.
    pub q_dir: KernelId,
    /// `q = D G` into `Q` (of the pressure, for the start).
    pub q: KernelId,
    /// Entries per vertex of the tables.
    pub width: usize,
    /// Entries per vertex before the row's end, on average.
    pub mean_width: f64,
}

impl Assembled {
    /// Uploads `tables` and compiles the kernels over `f`.
    pub fn new(gml: &mut Gml, f: &Fields, tables: &super::operator::Assembled) -> Result<Self> {
        let ver = MeshKind::Vertices;
        let width = tables.width;
        let grad_table = gml.new_solution::<[f32; 4]>(ver, width, "Gel")?;
        let div_table = gml.new_solution::<[f32; 4]>(ver, width, "Del")?;
        gml.set_block(grad_table, 0, &tables.grad)?;
        gml.set_block(div_table, 0, &tables.div)?;
        let grad = |gml: &mut Gml, name: &str, x: Solution<f64>, var: &str| {
            gml.compile(
                KernelSpec::new(name, ver)
                    .access(Access::read(grad_table))
                    .access(Access::read(x))
                    .access(Access::read(f.bnd))
                    .access(Access::read(f.flags))
                    .access(Access::write(f.grad))
                    .body(&format!(
                        "{CONVERGED_RETURN}const int n = GmlPar->vertices;
                         double4 s = 0.0;
                         for (int k = 0; k < {width}; k++) {{
                             const float4 c = VerGelTab[k * n + VerIdx];
                             const int w = as_int(c.w);
                             if (w < 0) break;
                             s += convert_double4(c) * Ver{var}Tab[w];
                         }}
                         s.w = 0.0;
                         VerG = (VerFlg & WIND_FIXED_PRESSURE) ? (double4)(0.0)
                              : wind_project_d(VerBnd, s) * (double)VerBnd.s6;"
                    )),
            )
        };
        let grad_dir = grad(gml, "wind_ell_grad_dir", f.dir, "Dir")?;
        let grad_pressure = grad(gml, "wind_ell_grad_pressure", f.pressure, "X")?;
        let q = |gml: &mut Gml, name: &str, sums: bool| {
            let spec = KernelSpec::new(name, ver)
                .access(Access::read(div_table))
                .access(Access::read(f.grad))
                .access(Access::read(f.flags))
                .access(Access::write(f.q));
            let (spec, sum) = fold_dq(spec, f, sums);
            gml.compile(spec.body(&format!(
                "{}const int n = GmlPar->vertices;
                 double q = 0.0;
                 for (int k = 0; k < {width}; k++) {{
                     const float4 c = VerDelTab[k * n + VerIdx];
                     const int w = as_int(c.w);
                     if (w < 0) break;
                     const double4 g = VerGTab[w];
                     q += (double)c.x * g.x + (double)c.y * g.y + (double)c.z * g.z;
                 }}
                 if (VerFlg & WIND_FIXED_PRESSURE) q = 0.0;
                 VerQ = q;
                 {sum}",
                guard(sums)
            )))
        };
        let q_dir = q(gml, "wind_ell_q_dir", true)?;
        let q = q(gml, "wind_ell_q", false)?;
        Ok(Self {
            grad_table,
            div_table,
            grad_dir,
            grad_pressure,
            q_dir,
            q,
            width,
            mean_width: tables.mean_width,
        })
    }
}
