//! Point-to-point patterns: the halo exchange of vertex fields and the migration of records
//! to the ranks that own them. Each rank meets its peers in the order of the pair (lower rank,
//! higher rank), the lower rank sending first: every rank's list is sorted the same way, so
//! the pair at the head of the global order is at the head of both its ranks' lists and no
//! two ranks wait on each other in opposite orders, whatever the backend buffers.

use super::collective::{TAG_BASE, check_rank};
use super::{Comm, CommError, Result};

const TAG_HALO: u32 = TAG_BASE + 3;
const TAG_MIGRATE: u32 = TAG_BASE + 4;

/// One neighbour of a rank in a halo exchange: which local entries it is sent, and which
/// local entries its values are received into, in matching order (what this rank sends to
/// the neighbour is, in order, what the neighbour receives from it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Neighbour {
    /// The neighbour's rank.
    pub rank: usize,
    /// Local indices of owned entries the neighbour holds in its halo.
    pub send: Vec<u32>,
    /// Local indices of halo entries this neighbour owns.
    pub recv: Vec<u32>,
}

/// A rank's halo exchange: its neighbours, each with the entries sent and received (filled
/// from a partition, e.g. `partition::PartitionReport`'s parts and halos).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HaloPlan {
    /// The neighbours, any order.
    pub neighbours: Vec<Neighbour>,
}

/// Sends each neighbour the owned entries of `values` it holds in its halo and writes what
/// the neighbours send into this rank's halo entries.
pub fn exchange_halo<T: bytemuck::Pod>(
    comm: &dyn Comm,
    plan: &HaloPlan,
    values: &mut [T],
) -> Result<()> {
    let me = comm.rank();
    let mut order: Vec<&Neighbour> = plan.neighbours.iter().collect();
    order.sort_by_key(|n| n.rank);
    if order.windows(2).any(|w| w[0].rank == w[1].rank) {
        return Err(CommError::invalid(
            me,
            "a halo plan names a neighbour twice",
        ));
    }
    for n in &order {
        check_rank(comm, n.rank)?;
        if n.rank == me {
            return Err(CommError::invalid(me, "a halo plan names the rank itself"));
        }
        let out_of_range = n
            .send
            .iter()
            .chain(&n.recv)
            .find(|&&i| i as usize >= values.len());
        if let Some(i) = out_of_range {
            return Err(CommError::invalid(
                me,
                format!("a halo plan names entry {i} of {}", values.len()),
            ));
        }
    }
    // Every send packed before anything is received: what goes out is the owned values as
    // they stood, whatever a plan's indices share.
    let packed: Vec<Vec<T>> = order
        .iter()
        .map(|n| n.send.iter().map(|&i| values[i as usize]).collect())
        .collect();
    for (n, packed) in order.into_iter().zip(packed) {
        let send = |c: &dyn Comm| c.send(n.rank, TAG_HALO, bytemuck::cast_slice(&packed));
        let received = if me < n.rank {
            send(comm)?;
            comm.recv(n.rank, TAG_HALO, "a halo exchange")?
        } else {
            let r = comm.recv(n.rank, TAG_HALO, "a halo exchange")?;
            send(comm)?;
            r
        };
        let expected = n.recv.len() * std::mem::size_of::<T>();
        if received.len() != expected {
            return Err(CommError::Length {
                rank: me,
                peer: n.rank,
                what: "a halo exchange",
                bytes: received.len(),
                expected,
            });
        }
        let theirs: Vec<T> = bytemuck::pod_collect_to_vec(&received);
        for (&i, v) in n.recv.iter().zip(theirs) {
            values[i as usize] = v;
        }
    }
    Ok(())
}

/// Sends each record to its destination rank (`outgoing`'s `usize`) and returns the records
/// sent to this rank, in the order of their source ranks (this rank's own in its place),
/// each source's in the order it listed them.
pub fn migrate<T: bytemuck::Pod>(comm: &dyn Comm, outgoing: Vec<(usize, T)>) -> Result<Vec<T>> {
    let (me, size) = (comm.rank(), comm.size());
    let mut by_rank: Vec<Vec<T>> = vec![Vec::new(); size];
    for (to, record) in outgoing {
        check_rank(comm, to)?;
        by_rank[to].push(record);
    }
    let mut received: Vec<Vec<T>> = vec![Vec::new(); size];
    received[me] = std::mem::take(&mut by_rank[me]);
    for peer in (0..size).filter(|&p| p != me) {
        let bytes: &[u8] = bytemuck::cast_slice(&by_rank[peer]);
        let got = if me < peer {
            comm.send(peer, TAG_MIGRATE, bytes)?;
            comm.recv(peer, TAG_MIGRATE, "a migration")?
        } else {
            let r = comm.recv(peer, TAG_MIGRATE, "a migration")?;
            comm.send(peer, TAG_MIGRATE, bytes)?;
            r
        };
        if got.len() % std::mem::size_of::<T>().max(1) != 0 {
            return Err(CommError::Length {
                rank: me,
                peer,
                what: "a migration",
                bytes: got.len(),
                expected: got.len() / std::mem::size_of::<T>().max(1) * std::mem::size_of::<T>(),
            });
        }
        received[peer] = bytemuck::pod_collect_to_vec(&got);
    }
    Ok(received.into_iter().flatten().collect())
}
