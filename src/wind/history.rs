//! The pressure solve's initial guess projected onto earlier solves' corrections (Fischer's
//! method for successive right-hand sides, P. F. Fischer, CMAME 163, 1998).
//!
//! Each wind step solves `A x = b` with a new `b` and the same `A`. The warm start from the
//! last pressure leaves a residual whose slow components (the near-null modes of the exact
//! projection's wide operator, where a Jacobi-preconditioned CG gains a factor of two in 8–17
//! iterations) change little from step to step. So the corrections the last solves made are
//! kept, A-orthogonal to each other, as `w_i` with `A w_i` beside them, and each solve first
//! moves its start by the A-norm-best combination of them:
//!
//! ```text
//! x0 = x_prev + Σ α_i w_i,   r0 = b − A x_prev − Σ α_i A w_i,   α_i = (w_i · r) / (w_i · A w_i)
//! ```
//!
//! which costs two vertex kernels and no operator product. After the solve the correction the
//! CG found, `δ = x − x0` with `A δ = r0 − r` (the recursion's residuals, kept in double), is
//! made A-orthogonal to the kept ones and replaces the oldest: two more vertex kernels. The
//! slots' scales `1 / (w_i · A w_i)` live in the device's parameters (zero for an empty slot),
//! so nothing here waits for the device. A new geometry (a ground refresh) or a reset empties
//! the history: the kept `A w_i` belong to the old operator.

use crate::gml::{Access, Gml, KernelId, KernelSpec, MeshKind, Solution};

use super::error::Result;
use super::kernels::Fields;
use super::solver::EARLY_SCALE;

/// The most corrections kept: the gathers fold one sum per slot, and the orthogonalisation one
/// more (`δ · A δ`), within gml's [`MAX_SUMS`](crate::gml::MAX_SUMS).
pub const MAX_HISTORY: usize = crate::gml::MAX_SUMS - 1;

/// The corrections kept by default (`wind.pressure_history`).
pub const DEFAULT_HISTORY: usize = crate::scene::DEFAULT_PRESSURE_HISTORY as usize;

// A scene may ask for as many corrections as the solver keeps.
const _: () = assert!(crate::scene::MAX_PRESSURE_HISTORY as usize == MAX_HISTORY);

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
    /// `r = b − A x_prev` into `R` (from `Q = A x_prev`), folding `α_i`.
    pub coefficients: KernelId,
    /// The projected start: `x0`, `r0`, `z`, `d`, folding `Σ r²/m` and `r·z` as the plain
    /// start does.
    pub start: KernelId,
    /// `δ`'s A-products with the kept slots (`β_i`) and `δ · A δ`.
    pub dots: KernelId,
    /// `δ` made A-orthogonal to the other slots, written over the oldest; its scale.
    pub store: KernelId,
    /// Empties every slot (a reset, a new geometry): their scales to zero.
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
                .access(Access::read(basis))
                .access(Access::write(f.r))
                .body(&format!(
                    "const double r = VerB - VerQ;
                     VerR = r;
                     {}",
                    each("GmlSum[#] = VerHw[#] * r;")
                ))
                .sums(
                    slots,
                    &each(
                        "GmlPar->history_alpha[#] = GmlPar->history_scale[#] != 0.0 \
                         ? GmlSum[#] * GmlPar->history_scale[#] : 0.0;",
                    ),
                ),
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
                     VerZ = r * VerDia;
                     VerDir = VerZ;
                     GmlSum[0] = r * r * (double)VerBnd.s6 * {EARLY_SCALE:?};
                     GmlSum[1] = r * VerZ;",
                    each(
                        "{ const double a = GmlPar->history_alpha[#];
                           if (a != 0.0) { x += a * VerHw[#]; r -= a * VerHq[#]; } }"
                    )
                ))
                .sums(
                    2,
                    "GmlPar->rr = GmlSum[0];
                     GmlPar->rz[0] = GmlSum[1];
                     GmlPar->iterations = 0;",
                ),
        )?;
        let dots = gml.compile(
            KernelSpec::new("wind_history_dots", ver)
                .access(Access::read(f.pressure))
                .access(Access::read(f.r))
                .access(Access::read(start_x))
                .access(Access::read(start_r))
                .access(Access::read(basis))
                .body(&format!(
                    "const double d = VerX - VerHx;
                     const double ad = VerHr - VerR;
                     {}
                     GmlSum[{slots}] = d * ad;",
                    each("GmlSum[#] = VerHw[#] * ad;")
                ))
                .sums(
                    slots + 1,
                    &format!(
                        "const int next = GmlPar->history_next;
                         {}
                         GmlPar->history_dd = GmlSum[{slots}];",
                        each(
                            "GmlPar->history_beta[#] = # == next || GmlPar->history_scale[#] == 0.0 \
                             ? 0.0 : GmlSum[#] * GmlPar->history_scale[#];"
                        )
                    ),
                ),
        )?;
        let store = gml.compile(
            KernelSpec::new("wind_history_store", ver)
                .access(Access::read(f.pressure))
                .access(Access::read(f.r))
                .access(Access::read(start_x))
                .access(Access::read(start_r))
                .access(Access::read_write(basis))
                .access(Access::read_write(image))
                .body(&format!(
                    "// A solve that ran no iteration found nothing to keep.
                     if (!(GmlPar->history_dd > 0.0)) return;
                     double w = VerX - VerHx;
                     double aw = VerHr - VerR;
                     {}
                     const int next = GmlPar->history_next;
                     VerHw[next] = w;
                     VerHq[next] = aw;
                     GmlSum[0] = w * aw;",
                    each(
                        "{ const double b = GmlPar->history_beta[#];
                           if (b != 0.0) { w -= b * VerHw[#]; aw -= b * VerHq[#]; } }"
                    )
                ))
                .sums(
                    1,
                    &format!(
                        "if (GmlPar->history_dd > 0.0) {{
                             const int next = GmlPar->history_next;
                             const double waw = GmlSum[0];
                             // A correction the kept ones already span leaves its slot empty.
                             const bool kept = waw > 1e-12 * GmlPar->history_dd;
                             GmlPar->history_scale[next] = kept ? 1.0 / waw : 0.0;
                             if (kept) GmlPar->history_next = (next + 1) % {slots};
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
                        "for (int i = 0; i < {MAX_HISTORY}; i++) GmlPar->history_scale[i] = 0.0;
                         GmlPar->history_next = 0;"
                    ),
                ),
        )?;
        Ok(Self {
            clear,
            basis,
            image,
            start_x,
            start_r,
            coefficients,
            start,
            dots,
            store,
            slots,
        })
    }
}

/// One kept correction, as read back from the device (tests and diagnostics).
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// The correction `w`, per vertex.
    pub correction: Vec<f64>,
    /// `A w` as the history keeps it (from the solve's residuals, made orthogonal to the
    /// others'), per vertex.
    pub image: Vec<f64>,
    /// `1 / (w · A w)`.
    pub scale: f64,
}

/// Splits `table` (`slots` values per vertex side by side) into one vector per slot.
pub(super) fn columns(table: &[f64], slots: usize) -> Vec<Vec<f64>> {
    (0..slots)
        .map(|k| table.iter().skip(k).step_by(slots).copied().collect())
        .collect()
}
