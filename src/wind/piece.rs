//! One rank's share of the wind's pressure operator over a partitioned mesh, on its device.
//!
//! Over ranks each rank holds the vertices it owns and a halo around them (see
//! `partition::HaloPlan`): the piece of the assembled operator ([`Assembled::piece`]) and the
//! per-vertex terms between its halves (the boundary projector, the inverse lumped volume and
//! the fixed-pressure flag, all from the whole mesh: a piece's edge sees only part of the balls
//! they come from). [`PieceOperator::apply`] runs the same arithmetic in the same order as the
//! whole mesh's assembled operator (`kernels/wind_piece.cl` against the `wind_ell_*` kernels),
//! so given the same input at its local vertices a rank's rows equal the whole's bit for bit.
//! [`PieceSystem::solve`] is the pressure solve over ranks on top of it: a Jacobi-
//! preconditioned CG whose product exchanges the search direction's halo and whose dot
//! products are summed over the ranks in a fixed order (`comm`), its vectors on the host.

use super::operator::Assembled;
use super::{Result, WindError};
use crate::cl::{Context, DeviceBuffer, Kernel, Program, Source};
use crate::comm::{Comm, HaloPlan, all_reduce_sum_f64, exchange_halo};

/// The piece of the pressure operator `q = D (P M⁻¹ G x)` one rank applies on its device.
pub struct PieceOperator {
    context: Context,
    grad: Kernel,
    q: Kernel,
    grad_table: DeviceBuffer<[f32; 4]>,
    div_table: DeviceBuffer<[f32; 4]>,
    terms: DeviceBuffer<[f32; 8]>,
    flags: DeviceBuffer<i32>,
    x: DeviceBuffer<f64>,
    g: DeviceBuffer<[f64; 4]>,
    q_out: DeviceBuffer<f64>,
    width: usize,
    rows: usize,
}

impl PieceOperator {
    /// Uploads a piece of the operator (`piece`, on the rank's local vertices) with the terms
    /// of those vertices from the whole mesh: `terms` the boundary projector (xx, xy, xz, yy,
    /// yz, zz), the inverse lumped volume and one unused lane (the solver's `bnd` field,
    /// [`Solver::pressure_terms`](super::Solver::pressure_terms)), `flags` the vertex flags.
    pub fn new(
        context: &Context,
        piece: &Assembled,
        terms: &[[f32; 8]],
        flags: &[i32],
    ) -> Result<Self> {
        let rows = piece.vertices();
        if terms.len() != rows || flags.len() != rows {
            return Err(WindError::Piece(format!(
                "{} terms and {} flags for a piece of {rows} vertices",
                terms.len(),
                flags.len()
            )));
        }
        let sources = [
            Source::embedded("wind.cl", include_str!("../../kernels/wind.cl"))?,
            Source::embedded("wind_piece.cl", include_str!("../../kernels/wind_piece.cl"))?,
        ];
        let program = Program::build(context, &sources, "")?;
        let one = rows.max(1);
        Ok(Self {
            context: context.clone(),
            grad: program.kernel("piece_grad")?,
            q: program.kernel("piece_q")?,
            grad_table: DeviceBuffer::from_slice(context, &piece.grad)?,
            div_table: DeviceBuffer::from_slice(context, &piece.div)?,
            terms: DeviceBuffer::from_slice(context, terms)?,
            flags: DeviceBuffer::from_slice(context, flags)?,
            x: DeviceBuffer::uninit(context, one)?,
            g: DeviceBuffer::uninit(context, one)?,
            q_out: DeviceBuffer::uninit(context, one)?,
            width: piece.width,
            rows,
        })
    }

    /// The local vertices (rows of the piece).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// `q = D (P M⁻¹ G x)` at every local vertex from `x` at every local vertex (blocking):
    /// exact at the rows the piece keeps `D` for, 0 elsewhere.
    pub fn apply(&mut self, x: &[f64]) -> Result<Vec<f64>> {
        if x.len() != self.rows {
            return Err(WindError::Piece(format!(
                "an input of {} values for a piece of {} vertices",
                x.len(),
                self.rows
            )));
        }
        if self.rows == 0 {
            return Ok(Vec::new());
        }
        self.x.write(x)?;
        let (rows, width) = (self.rows as i32, self.width as i32);
        let mut call = self.grad.call();
        // SAFETY: the arguments follow piece_grad's signature: the G table (width × rows
        // float4), x (rows doubles), the terms (rows float8), the flags (rows ints), g (rows
        // double4), then rows and width; every column in the table is below rows
        // (`Assembled::piece`), and work-items at or past rows return at once.
        unsafe {
            call.buffer(&self.grad_table)?
                .buffer(&self.x)?
                .buffer(&self.terms)?
                .buffer(&self.flags)?
                .buffer(&self.g)?
                .arg(&rows)?
                .arg(&width)?;
        }
        call.enqueue(
            &self.context,
            self.grad.work_size(&self.context, self.rows)?,
        )?;
        let mut call = self.q.call();
        // SAFETY: as above for piece_q: the D table, g, the flags, q (rows doubles), rows,
        // width.
        unsafe {
            call.buffer(&self.div_table)?
                .buffer(&self.g)?
                .buffer(&self.flags)?
                .buffer(&self.q_out)?
                .arg(&rows)?
                .arg(&width)?;
        }
        call.enqueue(&self.context, self.q.work_size(&self.context, self.rows)?)?;
        Ok(self.q_out.read()?)
    }
}

/// One rank's share of the pressure system `A x = b` over a partitioned mesh: its operator,
/// how many of its local vertices it owns (the first ones), their Jacobi preconditioner, and
/// its halo exchange (local indices: owned entries sent, halo entries received).
pub struct PieceSystem {
    /// The rank's piece of the operator (`D` rows for its owned vertices).
    pub operator: PieceOperator,
    /// Owned vertices: local indices `0..owned`.
    pub owned: usize,
    /// `1/A_vv` at each owned vertex (0 where the pressure is fixed).
    pub inverse_diagonal: Vec<f64>,
    /// What the rank sends and receives to keep its halo current.
    pub halo: HaloPlan,
}

/// How a distributed solve ended (the same on every rank).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieceSolve {
    /// Iterations run.
    pub iterations: u32,
    /// `‖b − A x‖` over all ranks' owned vertices at the end (the recursion's residual).
    pub residual: f64,
    /// Whether it reached `tolerance × ‖b‖`.
    pub converged: bool,
}

impl PieceSystem {
    /// Solves `A x = b` over the ranks of `comm`, every rank calling it with its own piece:
    /// `b` at its owned vertices, `x` at its local vertices (the start on entry; on return
    /// the solution, halo included). CG with the Jacobi preconditioner, stopping once
    /// `‖r‖ ≤ tolerance ‖b‖` or after `max_iterations`; each iteration exchanges the search
    /// direction's halo once and sums two sets of dot products over the ranks (`d·q`, then
    /// `r·z` and `r·r` together), in a fixed order, so every rank takes the same steps.
    pub fn solve(
        &mut self,
        comm: &dyn Comm,
        b: &[f64],
        x: &mut [f64],
        tolerance: f64,
        max_iterations: u32,
    ) -> Result<PieceSolve> {
        let (owned, local) = (self.owned, self.operator.rows());
        if b.len() != owned || x.len() != local || self.inverse_diagonal.len() != owned {
            return Err(WindError::Piece(format!(
                "a solve with {} right-hand sides, {} unknowns and {} diagonal entries for a \
                 piece of {owned} owned and {local} local vertices",
                b.len(),
                x.len(),
                self.inverse_diagonal.len()
            )));
        }
        let dot = |a: &[f64], b: &[f64]| {
            a[..owned]
                .iter()
                .zip(&b[..owned])
                .map(|(a, b)| a * b)
                .sum::<f64>()
        };
        exchange_halo(comm, &self.halo, x)?;
        let ax = self.operator.apply(x)?;
        let mut r: Vec<f64> = (0..owned).map(|i| b[i] - ax[i]).collect();
        let precondition = |r: &[f64], z: &mut Vec<f64>| {
            z.clear();
            z.extend(r.iter().zip(&self.inverse_diagonal).map(|(r, m)| r * m));
            z.resize(local, 0.0);
        };
        let mut z = Vec::with_capacity(local);
        precondition(&r, &mut z);
        let mut d = z.clone();
        let mut sums = [dot(&r, &z), dot(&r, &r), dot(b, b)];
        all_reduce_sum_f64(comm, &mut sums)?;
        let [mut rz, mut rr, bb] = sums;
        let limit = tolerance * tolerance * bb;
        let mut iterations = 0;
        while rr > limit && iterations < max_iterations {
            exchange_halo(comm, &self.halo, &mut d)?;
            let q = self.operator.apply(&d)?;
            let mut dq = [dot(&d, &q)];
            all_reduce_sum_f64(comm, &mut dq)?;
            if dq[0] <= 0.0 {
                break;
            }
            let alpha = rz / dq[0];
            for i in 0..owned {
                x[i] += alpha * d[i];
                r[i] -= alpha * q[i];
            }
            precondition(&r, &mut z);
            let mut sums = [dot(&r, &z), dot(&r, &r)];
            all_reduce_sum_f64(comm, &mut sums)?;
            let beta = sums[0] / rz;
            [rz, rr] = sums;
            for i in 0..owned {
                d[i] = z[i] + beta * d[i];
            }
            iterations += 1;
        }
        exchange_halo(comm, &self.halo, x)?;
        Ok(PieceSolve {
            iterations,
            residual: rr.max(0.0).sqrt(),
            converged: rr <= limit,
        })
    }
}
