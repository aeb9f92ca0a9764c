//! The pressure solve's initial guess from earlier solves' corrections (after Fischer's
//! projection for successive right-hand sides, P. F. Fischer, CMAME 163, 1998).
//!
//! Each wind step solves `A x = b` with a new `b` and the same `A`. The warm start from the
//! last pressure leaves a residual whose slow components (the near-null modes of the exact
//! projection's wide operator, where a Jacobi-preconditioned CG gains a factor of two in 8–17
//! iterations) change little from step to step. So the last solves' corrections `w_i` are
//! kept with `A w_i` beside them, and each solve first moves its start by the combination of
//! them that leaves the smallest residual in the norm the solve's stop tests (`Σ r²/m`):
//!
//! ```text
//! x0 = x_prev + Σ α_i w_i,   r0 = r − Σ α_i A w_i,   r = b − A x_prev,   G α = c,
//! G_ij = Σ_v A w_i A w_j / m,   c_i = Σ_v A w_i r / m
//! ```
//!
//! so the start is never worse than the plain warm start by that norm. (Fischer's A-norm-best
//! combination of A-orthogonal corrections was tried first: it cut the valley's iterations as
//! much, but on a 4 M-tetrahedron terrain it raised them from 4.8 to 8.9 a step, since the
//! A-norm-best start can leave a larger residual.) This costs one vertex kernel and no
//! operator product before the solve; `G`'s small system is solved in that kernel's finish.
//! After the solve the correction the CG found, `δ = x − x0` with `A δ = r0 − r` (the
//! recursion's residuals, kept in double), replaces the oldest slot, and the same kernel folds
//! its row of `G`. `G`, the slots' validity and the next slot live in the device's parameters,
//! so nothing here waits for the device. A new geometry (a ground refresh) or a reset empties
//! the history: the kept `A w_i` belong to the old operator.

use crate::gml::{Access, Gml, KernelId, KernelSpec, MeshKind, Solution};

use super::error::Result;
use super::kernels::{CG_START_FINISH, Fields, cg_start_tail};

/// The most corrections kept: within gml's [`MAX_SUMS`](crate::gml::MAX_SUMS) (one sum per
/// slot), and one less, as the parameter struct spells it.
pub const MAX_HISTORY: usize = crate::gml::MAX_SUMS - 1;

/// The corrections kept by default (`wind.pressure_history`).
pub const DEFAULT_HISTORY: usize = crate::scene::DEFAULT_PRESSURE_HISTORY as usize;

// A scene may ask for as many corrections as the solver keeps.
const _: () = assert!(crate::scene::MAX_PRESSURE_HISTORY as usize == MAX_HISTORY);

/// A pivot of `G`'s factorisation below this share of its diagonal entry leaves that slot out
/// of the start (a correction the others nearly span).
const PIVOT: f64 = 1e-10;

/// The kept corrections on the device and the kernels that use and renew them.
#[derive(Clone, Copy, Debug)]
pub struct History {
    /// The corrections `w_i`, a vertex's slots side by side.
    pub basis: Solution<f64>,
    /// `A w_i`, laid out as `basis`.
    pub image: Solution<f64>,
    /// The solve's start after the projection, `x0`.
    pub start_x: Solution<f64>,
    /// The residual there, `r0`.
    pub start_r: Solution<f64>,
    /// `r = b − A x_prev` into `R` (from `Q = A x_prev`), folding `c_i` and solving `G α = c`.
    pub coefficients: KernelId,
    /// The projected start: `x0`, `r0`, `z`, `d`, folding `Σ r²/m` and `r·z` as the plain
    /// start does.
    pub start: KernelId,
    /// The solve's correction written over the oldest slot, folding its row of `G`.
    pub store: KernelId,
    /// Empties every slot (a reset, a new geometry).
    pub clear: KernelId,
    /// Slots in use at most.
    pub slots: usize,
}

impl History {
    /// Creates the history's fields (`slots` corrections, 1 ..= [`MAX_HISTORY`]) and compiles
    /// its kernels over `f`.
    pub fn new(gml: &mut Gml, f: &Fields, slots: usize) -> Result<Self> {
        let slots = slots.clamp(1, MAX_HISTORY);
        let ver = MeshKind::Vertices;
        let basis = gml.new_solution::<f64>(ver, slots, "Hw")?;
        let image = gml.new_solution::<f64>(ver, slots, "Hq")?;
        let start_x = gml.new_solution::<f64>(ver, 1, "Hx")?;
        let start_r = gml.new_solution::<f64>(ver, 1, "Hr")?;
        // Every slot's term: `body` with `#` for the slot.
        let each = |body: &str| -> String {
            (0..slots)
                .map(|i| body.replace('#', &i.to_string()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let coefficients = gml.compile(
            KernelSpec::new("wind_history_coefficients", ver)
                .access(Access::read(f.rhs))
                .access(Access::read(f.q))
                .access(Access::read(image))
                .access(Access::read(f.bnd))
                .access(Access::write(f.r))
                .body(&format!(
                    "const double r = VerB - VerQ;
                     const double m = (double)VerBnd.s6;
                     VerR = r;
                     {}",
                    each("GmlSum[#] = VerHq[#] * r * m;")
                ))
                .sums(slots, &solve_gram(slots)),
        )?;
        let start = gml.compile(
            KernelSpec::new("wind_history_start", ver)
                .access(Access::read_write(f.pressure))
                .access(Access::read_write(f.r))
                .access(Access::read(basis))
                .access(Access::read(image))
                .access(Access::read(f.inv_diag))
                .access(Access::read(f.bnd))
                .access(Access::write(f.z))
                .access(Access::write(f.dir))
                .access(Access::write(start_x))
                .access(Access::write(start_r))
                .body(&format!(
                    "double x = VerX, r = VerR;
                     {}
                     VerX = x;
                     VerHx = x;
                     VerR = r;
                     VerHr = r;
                     {}",
                    each(
                        "{ const double a = GmlPar->history_alpha[#];
                           if (a != 0.0) { x += a * VerHw[#]; r -= a * VerHq[#]; } }"
                    ),
                    cg_start_tail()
                ))
                .sums(2, CG_START_FINISH),
        )?;
        let store = gml.compile(
            KernelSpec::new("wind_history_store", ver)
                .access(Access::read(f.pressure))
                .access(Access::read(f.r))
                .access(Access::read(start_x))
                .access(Access::read(start_r))
                .access(Access::read(f.bnd))
                .access(Access::read_write(basis))
                .access(Access::read_write(image))
                .body(&format!(
                    "// A solve that ran no iteration found nothing to keep.
                     if (GmlPar->iterations <= 0) return;
                     const int next = GmlPar->history_next;
                     const double aw = VerHr - VerR;
                     const double m = (double)VerBnd.s6;
                     {}
                     VerHw[next] = VerX - VerHx;
                     VerHq[next] = aw;",
                    each("GmlSum[#] = aw * m * (# == next ? aw : VerHq[#]);")
                ))
                .sums(
                    slots,
                    &format!(
                        "if (GmlPar->iterations > 0) {{
                             const int next = GmlPar->history_next;
                             for (int j = 0; j < {slots}; j++) {{
                                 GmlPar->history_gram[next * {MAX_HISTORY} + j] = GmlSum[j];
                                 GmlPar->history_gram[j * {MAX_HISTORY} + next] = GmlSum[j];
                             }}
                             GmlPar->history_valid[next] = GmlSum[next] > 0.0;
                             GmlPar->history_next = (next + 1) % {slots};
                         }}"
                    ),
                ),
        )?;
        let clear = gml.compile(
            KernelSpec::new("wind_history_clear", ver)
                .access(Access::read(f.flags))
                .body("GmlSum[0] = 0.0;")
                .sums(
                    1,
                    &format!(
                        "for (int i = 0; i < {MAX_HISTORY}; i++) {{
                             GmlPar->history_valid[i] = 0;
                             GmlPar->history_alpha[i] = 0.0;
                         }}
                         GmlPar->history_next = 0;"
                    ),
                ),
        )?;
        Ok(Self {
            basis,
            image,
            start_x,
            start_r,
            coefficients,
            start,
            store,
            clear,
            slots,
        })
    }
}

/// The coefficients kernel's finish: `G α = c` over the valid slots (`c` in `GmlSum`), by a
/// Cholesky factorisation that leaves out a slot whose pivot falls below [`PIVOT`] of its
/// diagonal entry; `α` of every other slot is zero.
fn solve_gram(slots: usize) -> String {
    format!(
        "const int n = {slots};
         double l[{slots} * {slots}];
         double y[{slots}];
         int on[{slots}];
         for (int i = 0; i < n; i++) {{
             on[i] = GmlPar->history_valid[i] != 0;
             y[i] = on[i] ? GmlSum[i] : 0.0;
             for (int j = 0; j < n; j++)
                 l[i * n + j] = (on[i] && on[j]) ? GmlPar->history_gram[i * {MAX_HISTORY} + j] : 0.0;
         }}
         for (int j = 0; j < n; j++) {{
             if (!on[j]) continue;
             double d = l[j * n + j];
             for (int k = 0; k < j; k++) if (on[k]) d -= l[j * n + k] * l[j * n + k];
             if (!(d > {PIVOT:?} * l[j * n + j])) {{ on[j] = 0; y[j] = 0.0; continue; }}
             d = sqrt(d);
             l[j * n + j] = d;
             for (int i = j + 1; i < n; i++) {{
                 if (!on[i]) continue;
                 double s = l[i * n + j];
                 for (int k = 0; k < j; k++) if (on[k]) s -= l[i * n + k] * l[j * n + k];
                 l[i * n + j] = s / d;
             }}
         }}
         for (int i = 0; i < n; i++) {{
             if (!on[i]) continue;
             double s = y[i];
             for (int k = 0; k < i; k++) if (on[k]) s -= l[i * n + k] * y[k];
             y[i] = s / l[i * n + i];
         }}
         for (int i = n - 1; i >= 0; i--) {{
             if (!on[i]) continue;
             double s = y[i];
             for (int k = i + 1; k < n; k++) if (on[k]) s -= l[k * n + i] * y[k];
             y[i] = s / l[i * n + i];
         }}
         for (int i = 0; i < n; i++) GmlPar->history_alpha[i] = on[i] ? y[i] : 0.0;"
    )
}

/// One kept correction, as read back from the device (tests and diagnostics).
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// The correction `w`, per vertex.
    pub correction: Vec<f64>,
    /// `A w` as the history keeps it (from the solve's residuals), per vertex.
    pub image: Vec<f64>,
    /// Its row of the Gram matrix `Σ A w_i A w_j / m`, over the slots returned with it.
    pub gram: Vec<f64>,
}

/// Splits `table` (`slots` values per vertex side by side) into one vector per slot.
pub(super) fn columns(table: &[f64], slots: usize) -> Vec<Vec<f64>> {
    (0..slots)
        .map(|k| table.iter().skip(k).step_by(slots).copied().collect())
        .collect()
}
