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
//! preconditioned CG in the Chronopoulos–Gear form (one product and one set of dot products an
//! iteration, so one reduction over the ranks), its vectors on the rank's device; the product
//! exchanges its input's halo (packed on the device, sent through `comm`) while the device
//! runs the rows that read no received value ([`Layout`]), and the dot products
//! are summed in a fixed order: each work-group's by a fixed tree, the groups' on the device
//! in a fixed order (one more launch, so that three doubles cross the bus, not three a
//! group), the ranks' by `comm`'s fixed tree.

use super::operator::Assembled;
use super::{Result, WindError};
use crate::cl::{
    Context, DeviceBuffer, Kernel, PinnedBuffer, Program, Source, WorkSize, enqueue_write_at,
    wait_for,
};
use crate::comm::{Comm, HaloPlan, Neighbour, all_reduce_sum_f64, exchange_halo};

/// Work-items of a group of the solve's summing kernels (`PIECE_GROUP` in
/// kernels/wind_piece.cl).
const GROUP: usize = 256;

/// The piece of the pressure operator `q = D (P M⁻¹ G x)` one rank applies on its device.
pub struct PieceOperator {
    context: Context,
    program: Program,
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
            program,
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
        self.enqueue_grad(&self.x, 0..self.rows)?;
        self.enqueue_q(0..self.rows)?;
        Ok(self.q_out.read()?)
    }

    /// Enqueues `g = P M⁻¹ G input` at the local vertices `rows` (`input` at every local
    /// vertex that those rows reach).
    fn enqueue_grad(&self, input: &DeviceBuffer<f64>, rows: std::ops::Range<usize>) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut call = self.grad.call();
        // SAFETY: the arguments follow piece_grad's signature: the G table (width × rows
        // float4), the input (rows doubles), the terms (rows float8), the flags (rows ints),
        // g (rows double4), then rows, width and the range (within rows); every column in the
        // table is below rows (`Assembled::piece`), and work-items past the range return.
        unsafe {
            call.buffer(&self.grad_table)?
                .buffer(input)?
                .buffer(&self.terms)?
                .buffer(&self.flags)?
                .buffer(&self.g)?
                .arg(&(self.rows as i32))?
                .arg(&(self.width as i32))?
                .arg(&(rows.start as i32))?
                .arg(&(rows.end.min(self.rows) as i32))?;
        }
        call.enqueue(
            &self.context,
            self.grad.work_size(&self.context, rows.len())?,
        )?;
        Ok(())
    }

    /// Enqueues `q = D g` at the local vertices `rows` into the operator's output.
    fn enqueue_q(&self, rows: std::ops::Range<usize>) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut call = self.q.call();
        // SAFETY: as piece_grad's, for piece_q: the D table, g, the flags, q (rows doubles),
        // rows, width and the range.
        unsafe {
            call.buffer(&self.div_table)?
                .buffer(&self.g)?
                .buffer(&self.flags)?
                .buffer(&self.q_out)?
                .arg(&(self.rows as i32))?
                .arg(&(self.width as i32))?
                .arg(&(rows.start as i32))?
                .arg(&(rows.end.min(self.rows) as i32))?;
        }
        call.enqueue(&self.context, self.q.work_size(&self.context, rows.len())?)?;
        Ok(())
    }
}

/// A rank's local vertices in the order its solve needs: the vertices it owns, then the first
/// ring around them, then the second (the halo, each ring ascending). The owned vertices come
/// in three runs, so that the product can start on the rows that read no received value while
/// the halo is exchanged: the **deep** ones (every vertex within two rings owned: their rows of
/// `A` read only owned values), the rest of the **interior** ones (their one ring owned: their
/// `G` rows read only owned values), then the others; each run ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Global indices, in the order above.
    pub local: Vec<u32>,
    /// Deep owned vertices: `local[..deep]`.
    pub deep: usize,
    /// Interior owned vertices, the deep ones included: `local[..interior]`.
    pub interior: usize,
    /// Owned vertices: `local[..owned]`.
    pub owned: usize,
    /// Owned and first-ring vertices (the rows whose `G` the piece keeps): `local[..grad_rows]`.
    pub grad_rows: usize,
}

impl Layout {
    /// The layout of a rank that owns `owned` (global indices, each once, any order) on a mesh
    /// whose one-rings are `rings`.
    pub fn new(owned: &[u32], rings: &super::operator::Rings) -> Self {
        use std::collections::HashSet;
        let mine: HashSet<u32> = owned.iter().copied().collect();
        let ring = |v: u32| rings.ring(v as usize);
        let interior = |v: u32| ring(v).iter().all(|w| mine.contains(w));
        let deep = |v: u32| interior(v) && ring(v).iter().all(|&w| interior(w));
        let mut sorted = owned.to_vec();
        sorted.sort_unstable();
        let (mut runs, mut rest): (Vec<u32>, Vec<u32>) = sorted.iter().partition(|&&v| deep(v));
        let deep_count = runs.len();
        let (middle, edge): (Vec<u32>, Vec<u32>) = rest.drain(..).partition(|&v| interior(v));
        runs.extend(&middle);
        let interior_count = runs.len();
        runs.extend(&edge);
        let out_of = |inner: &[u32], inside: &dyn Fn(u32) -> bool| {
            let mut out: Vec<u32> = inner
                .iter()
                .flat_map(|&v| ring(v).iter().copied())
                .filter(|&w| !inside(w))
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        };
        let first = out_of(owned, &|w| mine.contains(&w));
        let near: HashSet<u32> = first.iter().copied().collect();
        let second = out_of(&first, &|w| mine.contains(&w) || near.contains(&w));
        let grad_rows = runs.len() + first.len();
        runs.extend(first);
        runs.extend(second);
        Self {
            local: runs,
            deep: deep_count,
            interior: interior_count,
            owned: owned.len(),
            grad_rows,
        }
    }

    /// The halo exchange in local indices from each neighbour's lists in global indices:
    /// `(rank, sent, received)`, `sent` of this rank's owned vertices and `received` of its
    /// halo vertices, each in the order both sides agree on (as `partition::Exchange` gives
    /// them). A vertex that is not where the lists say is an error naming it.
    pub fn exchanges<'a>(
        &self,
        neighbours: impl IntoIterator<Item = (usize, &'a [u32], &'a [u32])>,
    ) -> Result<HaloPlan> {
        let at: std::collections::HashMap<u32, u32> = self
            .local
            .iter()
            .enumerate()
            .map(|(i, &w)| (w, i as u32))
            .collect();
        let local = |list: &[u32], owned: bool, rank: usize| {
            list.iter()
                .map(|w| match at.get(w) {
                    Some(&i) if ((i as usize) < self.owned) == owned => Ok(i),
                    _ => Err(WindError::Piece(format!(
                        "vertex {w} of the exchange with rank {rank} is not {} here",
                        if owned { "owned" } else { "in the halo" }
                    ))),
                })
                .collect::<Result<Vec<u32>>>()
        };
        let neighbours = neighbours
            .into_iter()
            .map(|(rank, send, recv)| {
                Ok(Neighbour {
                    rank,
                    send: local(send, true, rank)?,
                    recv: local(recv, false, rank)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(HaloPlan { neighbours })
    }
}

/// A rank's halo exchange of a device vector: the entries it sends, packed on the device and
/// read back; `comm`'s exchange over a plan of positions in that packed array; the entries
/// received, written back and scattered to their local places.
///
/// The read and the write go through pinned memory without blocking, in order on the queue:
/// the launches enqueued between [`start`](Self::start) and [`finish`](Self::finish) (the
/// rows that need no received value) follow the read on the device, so they run while the
/// host exchanges; the write is waited for only where no read follows it before the host
/// next writes the staging memory (a rank that sends nothing).
struct DeviceHalo {
    /// The exchange over positions in `[sent entries | received entries]`.
    plan: HaloPlan,
    /// Entries sent and received, over all neighbours.
    sends: usize,
    receives: usize,
    send_at: DeviceBuffer<i32>,
    recv_at: DeviceBuffer<i32>,
    sent: DeviceBuffer<f64>,
    received: DeviceBuffer<f64>,
    /// `[sent entries | received entries]` on the host, pinned.
    staging: PinnedBuffer<f64>,
    /// The read of the sent entries that [`start`](Self::start) enqueued, until `finish`.
    reading: Option<opencl3::event::Event>,
    /// The last write of received entries, until the host next writes the staging memory.
    writing: Option<opencl3::event::Event>,
    pack: Kernel,
    unpack: Kernel,
}

impl DeviceHalo {
    fn new(context: &Context, program: &Program, halo: &HaloPlan, local: usize) -> Result<Self> {
        let mut neighbours: Vec<&Neighbour> = halo.neighbours.iter().collect();
        neighbours.sort_by_key(|n| n.rank);
        let sends: usize = neighbours.iter().map(|n| n.send.len()).sum();
        let (mut send_at, mut recv_at) = (Vec::new(), Vec::new());
        let mut plan = HaloPlan::default();
        for n in neighbours {
            if let Some(&i) = n.send.iter().chain(&n.recv).find(|&&i| i as usize >= local) {
                return Err(WindError::Piece(format!(
                    "the halo plan names local vertex {i} of {local} (rank {})",
                    n.rank
                )));
            }
            let first_send = send_at.len() as u32;
            let first_recv = (sends + recv_at.len()) as u32;
            send_at.extend(n.send.iter().map(|&i| i as i32));
            recv_at.extend(n.recv.iter().map(|&i| i as i32));
            plan.neighbours.push(Neighbour {
                rank: n.rank,
                send: (first_send..first_send + n.send.len() as u32).collect(),
                recv: (first_recv..first_recv + n.recv.len() as u32).collect(),
            });
        }
        let buffer =
            |at: &[i32]| DeviceBuffer::from_slice(context, if at.is_empty() { &[0] } else { at });
        Ok(Self {
            staging: PinnedBuffer::new(context, send_at.len() + recv_at.len())?,
            sends: send_at.len(),
            receives: recv_at.len(),
            reading: None,
            writing: None,
            sent: DeviceBuffer::uninit(context, send_at.len().max(1))?,
            received: DeviceBuffer::uninit(context, recv_at.len().max(1))?,
            send_at: buffer(&send_at)?,
            recv_at: buffer(&recv_at)?,
            plan,
            pack: program.kernel("piece_pack")?,
            unpack: program.kernel("piece_unpack")?,
        })
    }

    /// Sends the neighbours their halo entries of `values` and writes theirs into its halo.
    fn exchange(
        &mut self,
        context: &Context,
        comm: &dyn Comm,
        values: &DeviceBuffer<f64>,
    ) -> Result<()> {
        self.start(context, values)?;
        self.finish(context, comm, values)
    }

    /// The first half of [`exchange`](Self::exchange): the entries sent, packed and their
    /// read enqueued (not waited for: [`finish`](Self::finish) waits).
    fn start(&mut self, context: &Context, values: &DeviceBuffer<f64>) -> Result<()> {
        if self.plan.neighbours.is_empty() {
            return Ok(());
        }
        let sends = self.sends;
        if sends > 0 {
            let mut call = self.pack.call();
            // SAFETY: piece_pack(values, at, out, count): `at` holds `sends` local indices
            // below the vector's length (checked in `new`), `out` at least `sends` doubles.
            unsafe {
                call.buffer(values)?
                    .buffer(&self.send_at)?
                    .buffer(&self.sent)?
                    .arg(&(sends as i32))?;
            }
            call.enqueue(context, self.pack.work_size(context, sends)?)?;
            // SAFETY: the host touches the staging memory only in `finish`, after waiting for
            // this read; `self` (which the queue's drop waits for) owns it.
            self.reading = Some(unsafe { self.staging.enqueue_read_range(&self.sent, 0, sends) }?);
        }
        Ok(())
    }

    /// The second half: the exchange through `comm`, and the entries received scattered into
    /// `values` (after what the queue holds).
    fn finish(
        &mut self,
        context: &Context,
        comm: &dyn Comm,
        values: &DeviceBuffer<f64>,
    ) -> Result<()> {
        if self.plan.neighbours.is_empty() {
            return Ok(());
        }
        let (sends, receives) = (self.sends, self.receives);
        // The read follows the last write on the queue; without a read, the write is waited
        // for itself.
        let pending = self.reading.take().or(self.writing.take());
        if let Some(event) = pending {
            wait_for(std::slice::from_ref(&event))?;
        }
        exchange_halo(comm, &self.plan, self.staging.as_mut_slice())?;
        if receives > 0 {
            // SAFETY: the staging memory is next written by the next `start`'s read, which
            // the queue runs after this write, and by the host only after that read or this
            // write (`writing`).
            self.writing = Some(unsafe {
                enqueue_write_at(
                    context,
                    &self.received,
                    0,
                    &self.staging.as_slice()[sends..],
                )
            }?);
            let mut call = self.unpack.call();
            // SAFETY: piece_unpack(received, at, values, count): as piece_pack, the other way.
            unsafe {
                call.buffer(&self.received)?
                    .buffer(&self.recv_at)?
                    .buffer(values)?
                    .arg(&(receives as i32))?;
            }
            call.enqueue(context, self.unpack.work_size(context, receives)?)?;
        }
        Ok(())
    }
}

/// One rank's share of the pressure system `A x = b` over a partitioned mesh, on its device:
/// its operator, how many of its local vertices it owns (the first ones), their Jacobi
/// preconditioner, its halo exchange, and the solve's vectors.
pub struct PieceSystem {
    operator: PieceOperator,
    owned: usize,
    /// Owned rows whose `A` row reads no received value (`Layout::deep`).
    deep: usize,
    /// Owned rows whose `G` row reads no received value (`Layout::interior`).
    interior: usize,
    /// Rows whose `G` the piece keeps (`Layout::grad_rows`).
    grad_rows: usize,
    halo: DeviceHalo,
    inverse_diagonal: DeviceBuffer<f64>,
    b: DeviceBuffer<f64>,
    x: DeviceBuffer<f64>,
    r: DeviceBuffer<f64>,
    /// `M⁻¹ r`, at every local vertex (its halo exchanged before each product).
    u: DeviceBuffer<f64>,
    p: DeviceBuffer<f64>,
    /// `A p`, kept by recurrence.
    s: DeviceBuffer<f64>,
    partial: DeviceBuffer<f64>,
    /// The sums over the groups' partials (`piece_fold`).
    folded: DeviceBuffer<f64>,
    start: Kernel,
    sums: Kernel,
    fold: Kernel,
    update: Kernel,
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
    /// A rank's system: `operator` on the local vertices of `layout` (built over them),
    /// `inverse_diagonal` (`1/A_vv`, 0 where the pressure is fixed) at the owned ones, and
    /// `halo` its exchange in local indices (owned entries sent, halo entries received).
    pub fn new(
        operator: PieceOperator,
        layout: &Layout,
        inverse_diagonal: &[f64],
        halo: &HaloPlan,
    ) -> Result<Self> {
        let local = operator.rows();
        let owned = layout.owned;
        let ordered = layout.deep <= layout.interior
            && layout.interior <= owned
            && owned <= layout.grad_rows
            && layout.grad_rows <= local
            && layout.local.len() == local;
        if !ordered {
            return Err(WindError::Piece(format!(
                "a layout of {} vertices ({} deep, {} interior, {owned} owned, {} with G rows) \
                 for a piece of {local}",
                layout.local.len(),
                layout.deep,
                layout.interior,
                layout.grad_rows
            )));
        }
        if inverse_diagonal.len() != owned {
            return Err(WindError::Piece(format!(
                "{} diagonal entries for {owned} owned vertices",
                inverse_diagonal.len()
            )));
        }
        let context = operator.context.clone();
        let program = &operator.program;
        let groups = owned.div_ceil(GROUP).max(1);
        let vector = |len: usize| DeviceBuffer::<f64>::zeroed(&context, len.max(1));
        Ok(Self {
            halo: DeviceHalo::new(&context, program, halo, local)?,
            inverse_diagonal: DeviceBuffer::from_slice(
                &context,
                if owned == 0 { &[0.0] } else { inverse_diagonal },
            )?,
            b: vector(owned)?,
            x: vector(local)?,
            r: vector(owned)?,
            u: vector(local)?,
            p: vector(owned)?,
            s: vector(owned)?,
            partial: vector(3 * groups)?,
            folded: vector(3)?,
            fold: program.kernel("piece_fold")?,
            start: program.kernel("piece_start")?,
            sums: program.kernel("piece_sums")?,
            update: program.kernel("piece_update")?,
            owned,
            deep: layout.deep,
            interior: layout.interior,
            grad_rows: layout.grad_rows,
            operator,
        })
    }

    /// The owned vertices' work in groups of [`GROUP`].
    fn groups(&self) -> WorkSize {
        WorkSize {
            global: self.owned.div_ceil(GROUP).max(1) * GROUP,
            local: GROUP,
        }
    }

    /// The `K` sums of the last summing kernel, each folded over its groups' partials on the
    /// device in a fixed order (`piece_fold`) and read (blocking): 8 bytes a sum cross the
    /// bus, not 8 a group.
    fn sums<const K: usize>(&mut self, context: &Context) -> Result<[f64; K]> {
        const { assert!(K <= 3, "`folded` holds three sums") };
        let groups = self.owned.div_ceil(GROUP).max(1) as i32;
        let mut call = self.fold.call();
        // SAFETY: piece_fold(partial, groups, count, folded): `partial` holds 3 · groups
        // doubles and count = K ≤ 3, `folded` 3; one work-group.
        unsafe {
            call.buffer(&self.partial)?
                .arg(&groups)?
                .arg(&(K as i32))?
                .buffer(&self.folded)?;
        }
        call.enqueue(
            context,
            WorkSize {
                global: GROUP,
                local: GROUP,
            },
        )?;
        let mut sums = [0.0; K];
        self.folded.read_into(&mut sums)?;
        Ok(sums)
    }

    /// Enqueues `w = A u` and the sums γ = r·u, δ = w·u and r·r, summed over the ranks. The
    /// rows that read no received value are enqueued and flushed before the halo of `u` is
    /// exchanged through the host, the others after.
    fn product_and_sums(&mut self, context: &Context, comm: &dyn Comm) -> Result<[f64; 3]> {
        self.halo.start(context, &self.u)?;
        self.operator.enqueue_grad(&self.u, 0..self.interior)?;
        self.operator.enqueue_q(0..self.deep)?;
        context.flush()?;
        self.halo.finish(context, comm, &self.u)?;
        self.operator
            .enqueue_grad(&self.u, self.interior..self.grad_rows)?;
        self.operator.enqueue_q(self.deep..self.owned)?;
        let mut call = self.sums.call();
        // SAFETY: piece_sums(r, u, w, partial, owned): r, u and w hold at least `owned`
        // doubles, `partial` 3 per group; work-items past `owned` touch only the group's
        // local scratch.
        unsafe {
            call.buffer(&self.r)?
                .buffer(&self.u)?
                .buffer(&self.operator.q_out)?
                .buffer(&self.partial)?
                .arg(&(self.owned as i32))?;
        }
        call.enqueue(context, self.groups())?;
        let mut sums: [f64; 3] = self.sums(context)?;
        all_reduce_sum_f64(comm, &mut sums)?;
        Ok(sums)
    }

    /// Solves `A x = b` over the ranks of `comm`, every rank calling it with its own piece:
    /// `b` at its owned vertices, `x` at its local vertices (the start on entry; on return
    /// the solution, halo included). Preconditioned CG (Jacobi) in the Chronopoulos–Gear form,
    /// stopping once `‖r‖ ≤ tolerance ‖b‖` or after `max_iterations`; each iteration
    /// exchanges the halo of `u = M⁻¹ r` once and sums `r·u`, `A u · u` and `r·r` over the
    /// ranks once, in a fixed order, so every rank takes the same steps.
    pub fn solve(
        &mut self,
        comm: &dyn Comm,
        b: &[f64],
        x: &mut [f64],
        tolerance: f64,
        max_iterations: u32,
    ) -> Result<PieceSolve> {
        let (owned, local) = (self.owned, self.operator.rows());
        if b.len() != owned || x.len() != local {
            return Err(WindError::Piece(format!(
                "a solve with {} right-hand sides and {} unknowns for a piece of {owned} owned \
                 and {local} local vertices",
                b.len(),
                x.len()
            )));
        }
        let context = self.operator.context.clone();
        let owned_i = owned as i32;
        if owned > 0 {
            self.b.write(b)?;
        }
        self.x.write(x)?;
        self.halo.exchange(&context, comm, &self.x)?;
        self.operator.enqueue_grad(&self.x, 0..self.grad_rows)?;
        self.operator.enqueue_q(0..self.owned)?;
        let mut call = self.start.call();
        // SAFETY: piece_start(b, q, inverse_diagonal, r, u, partial, owned): every vector
        // holds at least `owned` doubles, `partial` 3 per group; work-items past `owned`
        // touch only the group's local scratch.
        unsafe {
            call.buffer(&self.b)?
                .buffer(&self.operator.q_out)?
                .buffer(&self.inverse_diagonal)?
                .buffer(&self.r)?
                .buffer(&self.u)?
                .buffer(&self.partial)?
                .arg(&owned_i)?;
        }
        call.enqueue(&context, self.groups())?;
        let mut bb: [f64; 1] = self.sums(&context)?;
        all_reduce_sum_f64(comm, &mut bb)?;
        let limit = tolerance * tolerance * bb[0];
        let [mut gamma, delta, mut rr] = self.product_and_sums(&context, comm)?;
        let (mut alpha, mut beta) = (gamma / delta, 0.0);
        let mut iterations = 0;
        while rr > limit && iterations < max_iterations && alpha.is_finite() && alpha > 0.0 {
            let mut call = self.update.call();
            // SAFETY: piece_update(x, r, u, w, p, s, inverse_diagonal, alpha, beta, owned):
            // every vector holds at least `owned` doubles; work-items past it return.
            unsafe {
                call.buffer(&self.x)?
                    .buffer(&self.r)?
                    .buffer(&self.u)?
                    .buffer(&self.operator.q_out)?
                    .buffer(&self.p)?
                    .buffer(&self.s)?
                    .buffer(&self.inverse_diagonal)?
                    .arg(&alpha)?
                    .arg(&beta)?
                    .arg(&owned_i)?;
            }
            call.enqueue(&context, self.update.work_size(&context, owned.max(1))?)?;
            iterations += 1;
            let [next_gamma, delta, next_rr] = self.product_and_sums(&context, comm)?;
            beta = next_gamma / gamma;
            alpha = next_gamma / (delta - beta * next_gamma / alpha);
            gamma = next_gamma;
            rr = next_rr;
        }
        self.halo.exchange(&context, comm, &self.x)?;
        self.x.read_into(x)?;
        Ok(PieceSolve {
            iterations,
            residual: rr.max(0.0).sqrt(),
            converged: rr <= limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wind::diagonal::vertex_ball;
    use crate::wind::operator::Rings;

    /// A chain of ten vertices whose tetrahedra span four: each ring reaches three vertices
    /// either way.
    fn chain() -> Rings {
        let tets: Vec<[u32; 4]> = (0..7).map(|i| [i, i + 1, i + 2, i + 3]).collect();
        Rings::new(&vertex_ball(10, &tets), &tets)
    }

    /// Owning 0..7 of the chain: 0..3 are deep (all within two rings owned), 3 interior, the
    /// rest at the edge; the rings are 7..10 and nothing more. The exchange lists map to local
    /// positions, and a vertex on the wrong side of them is refused by name.
    #[test]
    fn a_layout_orders_deep_interior_edge_then_the_rings() {
        let rings = chain();
        let layout = Layout::new(&[6, 5, 4, 3, 2, 1, 0], &rings);
        assert_eq!(layout.local, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(
            (layout.deep, layout.interior, layout.owned, layout.grad_rows),
            (1, 4, 7, 10)
        );
        let plan = layout
            .exchanges([(1, &[4u32, 6][..], &[7u32, 9][..])])
            .unwrap();
        assert_eq!(plan.neighbours[0].send, [4, 6]);
        assert_eq!(plan.neighbours[0].recv, [7, 9]);
        for (send, recv, named) in [
            (
                &[7u32][..],
                &[][..],
                "vertex 7 of the exchange with rank 1 is not owned",
            ),
            (
                &[][..],
                &[6u32][..],
                "vertex 6 of the exchange with rank 1 is not in the halo",
            ),
            (
                &[][..],
                &[12u32][..],
                "vertex 12 of the exchange with rank 1 is not in the halo",
            ),
        ] {
            match layout.exchanges([(1, send, recv)]) {
                Err(WindError::Piece(message)) => assert!(message.contains(named), "{message}"),
                other => panic!("accepted: {other:?}"),
            }
        }
    }
}
