//! Collectives built on point-to-point messages in a fixed order: the same bytes, and the
//! same sums bit for bit, whatever the timing and the backend. Reductions and broadcasts run
//! up and down a fixed binary tree (log₂ P messages deep, not P): a sum's terms are added in
//! the tree's order, `((v₀ + v₁) + (v₂ + v₃)) + …`, which depends on the number of ranks only
//! ([`fold_in_tree_order`] is that order on one thread).

use super::{Comm, CommError, Result};

/// Tags of the collectives (user messages use tags below [`TAG_BASE`]: MPI promises tags up to 32 767 only).
pub(super) const TAG_BASE: u32 = 30_000;
const TAG_BROADCAST: u32 = TAG_BASE + 1;
const TAG_GATHER: u32 = TAG_BASE + 2;
const TAG_REDUCE: u32 = TAG_BASE + 5;

/// What a reduction over ranks gives, on one thread: `parts[r]` is rank r's values, folded
/// with `op` in the order of the reductions' binary tree (the left operand always the lower
/// ranks'). The reference the collectives are tested against, and what a caller can compute
/// to check a run.
pub fn fold_in_tree_order<T: Copy>(parts: &[Vec<T>], op: impl Fn(T, T) -> T + Copy) -> Vec<T> {
    match parts {
        [] => Vec::new(),
        [one] => one.clone(),
        _ => {
            // The tree's left half: the largest power of two below the count.
            let half = parts.len().next_power_of_two() / 2;
            let (left, right) = parts.split_at(half);
            let (l, r) = (fold_in_tree_order(left, op), fold_in_tree_order(right, op));
            l.into_iter().zip(r).map(|(a, b)| op(a, b)).collect()
        }
    }
}

/// Rank `root`'s `data` on every rank (the others' `data` replaced), down a binary tree
/// rooted at `root`: each rank receives once and sends to at most log₂ P others.
pub fn broadcast(comm: &dyn Comm, root: usize, data: &mut Vec<u8>) -> Result<()> {
    check_rank(comm, root)?;
    let size = comm.size();
    // Ranks relative to the root: the tree is rank 0's.
    let me = (comm.rank() + size - root) % size;
    let actual = |relative: usize| (relative + root) % size;
    let mut step = size.next_power_of_two();
    // The parent differs from me in my lowest set bit; my children are me + s for every
    // power of two s below it.
    if me != 0 {
        let low = me & me.wrapping_neg();
        *data = comm.recv(actual(me - low), TAG_BROADCAST, "a broadcast")?;
        step = low;
    }
    while step > 1 {
        step /= 2;
        if me + step < size {
            comm.send(actual(me + step), TAG_BROADCAST, data)?;
        }
    }
    Ok(())
}

/// Every rank's `data` on rank `root`, in rank order (`None` on the others).
pub fn gather(comm: &dyn Comm, root: usize, data: &[u8]) -> Result<Option<Vec<Vec<u8>>>> {
    check_rank(comm, root)?;
    if comm.rank() != root {
        comm.send(root, TAG_GATHER, data)?;
        return Ok(None);
    }
    let mut all = Vec::with_capacity(comm.size());
    for from in 0..comm.size() {
        all.push(match from == root {
            true => data.to_vec(),
            false => comm.recv(from, TAG_GATHER, "a gather")?,
        });
    }
    Ok(Some(all))
}

/// Every rank's `data` on every rank, in rank order.
pub fn all_gather(comm: &dyn Comm, data: &[u8]) -> Result<Vec<Vec<u8>>> {
    let gathered = gather(comm, 0, data)?;
    let mut packed = match gathered {
        Some(all) => pack(&all),
        None => Vec::new(),
    };
    broadcast(comm, 0, &mut packed)?;
    unpack(comm, &packed)
}

/// Waits until every rank has called it.
pub fn barrier(comm: &dyn Comm) -> Result<()> {
    gather(comm, 0, &[])?;
    broadcast(comm, 0, &mut Vec::new())
}

/// Element-wise sum over the ranks, on every rank: added up a fixed binary tree
/// ([`fold_in_tree_order`]), so the result is the same bit for bit on every rank and in every
/// run with as many ranks.
pub fn all_reduce_sum_f64(comm: &dyn Comm, values: &mut [f64]) -> Result<()> {
    reduce(comm, values, |a, b| a + b)
}

/// Element-wise maximum over the ranks, on every rank (NaN wins).
pub fn all_reduce_max_f64(comm: &dyn Comm, values: &mut [f64]) -> Result<()> {
    reduce(
        comm,
        values,
        |a, b| if a.is_nan() || a >= b { a } else { b },
    )
}

/// Element-wise sum over the ranks, exact (wrapping past `i64`'s range, as integer covers
/// never come near).
pub fn all_reduce_sum_i64(comm: &dyn Comm, values: &mut [i64]) -> Result<()> {
    reduce(comm, values, i64::wrapping_add)
}

/// Folds every rank's `values` up the binary tree to rank 0 with `op` (rank r, for each step
/// s = 1, 2, 4, … while r is a multiple of 2s, takes in rank r + s's partial result: its own
/// on the left), then broadcasts the result down the tree.
fn reduce<T: bytemuck::Pod>(
    comm: &dyn Comm,
    values: &mut [T],
    op: impl Fn(T, T) -> T,
) -> Result<()> {
    let bytes = std::mem::size_of_val(values);
    let (me, size) = (comm.rank(), comm.size());
    let mut step = 1;
    while step < size {
        if me % (2 * step) != 0 {
            comm.send(me - step, TAG_REDUCE, bytemuck::cast_slice(values))?;
            break;
        }
        let from = me + step;
        if from < size {
            let part = comm.recv(from, TAG_REDUCE, "a reduction's values")?;
            if part.len() != bytes {
                return Err(CommError::Length {
                    rank: me,
                    peer: from,
                    what: "a reduction's values",
                    bytes: part.len(),
                    expected: bytes,
                });
            }
            let theirs: Vec<T> = bytemuck::pod_collect_to_vec(&part);
            for (v, t) in values.iter_mut().zip(theirs) {
                *v = op(*v, t);
            }
        }
        step *= 2;
    }
    let mut out = match me {
        0 => bytemuck::cast_slice(values).to_vec(),
        _ => Vec::new(),
    };
    broadcast(comm, 0, &mut out)?;
    if out.len() != bytes {
        return Err(CommError::Length {
            rank: comm.rank(),
            peer: 0,
            what: "a reduction's result",
            bytes: out.len(),
            expected: bytes,
        });
    }
    values.copy_from_slice(&bytemuck::pod_collect_to_vec::<u8, T>(&out));
    Ok(())
}

/// Several byte strings as one: a count, each length, then each in turn.
fn pack(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend((parts.len() as u64).to_le_bytes());
    for p in parts {
        out.extend((p.len() as u64).to_le_bytes());
    }
    for p in parts {
        out.extend(p);
    }
    out
}

/// [`pack`]'s inverse; an error for bytes it did not make.
fn unpack(comm: &dyn Comm, bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
    let bad = || CommError::invalid(comm.rank(), "a gathered message that does not unpack");
    let word = |at: usize| -> Result<usize> {
        let b = bytes.get(at..at + 8).ok_or_else(bad)?;
        let mut w = [0u8; 8];
        w.copy_from_slice(b);
        usize::try_from(u64::from_le_bytes(w)).map_err(|_| bad())
    };
    let n = word(0)?;
    let mut at = 8usize
        .checked_add(n.checked_mul(8).ok_or_else(bad)?)
        .ok_or_else(bad)?;
    let mut parts = Vec::with_capacity(n.min(1 << 16));
    for k in 0..n {
        let len = word(8 + 8 * k)?;
        let end = at.checked_add(len).ok_or_else(bad)?;
        parts.push(bytes.get(at..end).ok_or_else(bad)?.to_vec());
        at = end;
    }
    Ok(parts)
}

/// An error unless `rank` is one of `comm`'s.
pub(super) fn check_rank(comm: &dyn Comm, rank: usize) -> Result<()> {
    match rank < comm.size() {
        true => Ok(()),
        false => Err(CommError::NoSuchRank {
            rank: comm.rank(),
            peer: rank,
            size: comm.size(),
        }),
    }
}
