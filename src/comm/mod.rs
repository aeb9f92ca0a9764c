//! Communication between ranks, for runs beyond one process (issue "Beyond one machine"):
//! a small trait ([`Comm`]: who am I, how many, send and receive bytes with a timeout) with
//! two backends — [`Local`], threads and channels in one process (what `cargo test` runs),
//! and `Mpi`, the `mpi` crate over the system's MPI library (the `mpi` feature) — and what
//! the simulation needs built on it, the same for both backends:
//!
//! - collectives in a **fixed order** ([`broadcast`], [`gather`], [`all_reduce_sum_f64`], …):
//!   a sum of `f64` is added up a fixed binary tree and broadcast down it (log₂ P messages
//!   deep), so a run's result depends neither on timing nor on the backend, only on the
//!   number of ranks ([`fold_in_tree_order`]; the CG's dot products need that);
//! - the halo exchange of vertex fields ([`HaloPlan`], [`exchange_halo`]) and the migration of
//!   records to the ranks that own them ([`migrate`]: counts first, then payloads), each
//!   rank's exchanges in the order of the pair (lower rank, higher rank), which no two ranks
//!   can wait on in opposite orders;
//! - a timeout on every receive ([`CommError::Timeout`], default [`DEFAULT_TIMEOUT`],
//!   `SNOWSIM_COMM_TIMEOUT_S`): a rank that died or hangs ends the others' run with an error
//!   that names it, never a hang; in one process a rank that ended is seen at once
//!   ([`CommError::Gone`]).
//!
//! [`world`] gives the communicator a process was started with: MPI's world under `mpirun`
//! (or an error saying the build has no MPI), else one rank alone.

mod collective;
mod halo;
mod local;
#[cfg(feature = "mpi")]
mod mpi_backend;

use std::time::{Duration, Instant};

pub use collective::{
    all_gather, all_reduce_max_f64, all_reduce_sum_f64, all_reduce_sum_i64, barrier, broadcast,
    fold_in_tree_order, gather,
};
pub use halo::{HaloPlan, Neighbour, exchange_halo, migrate};
pub use local::Local;
#[cfg(feature = "mpi")]
pub use mpi_backend::Mpi;

/// How long a receive waits by default before it gives up on its peer.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a communication failed.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum CommError {
    /// Nothing came from the peer in time.
    #[error(
        "rank {rank}: nothing from rank {peer} (tag {tag}, {what}) in {seconds:.1} s: rank \
         {peer} died or is stuck (SNOWSIM_COMM_TIMEOUT_S sets the wait)"
    )]
    Timeout {
        /// The waiting rank.
        rank: usize,
        /// The rank it waited for.
        peer: usize,
        /// The message's tag.
        tag: u32,
        /// What was waited for.
        what: &'static str,
        /// How long it waited, s.
        seconds: f64,
    },
    /// The peer ended (in-process backend) before sending what is waited for.
    #[error("rank {rank}: rank {peer} is gone: it ended during {what} (tag {tag})")]
    Gone {
        /// The waiting rank.
        rank: usize,
        /// The rank that ended.
        peer: usize,
        /// The message's tag.
        tag: u32,
        /// What was waited for.
        what: &'static str,
    },
    /// A rank outside the communicator.
    #[error("rank {rank}: no rank {peer} among {size}")]
    NoSuchRank {
        /// This rank.
        rank: usize,
        /// The rank named.
        peer: usize,
        /// The communicator's size.
        size: usize,
    },
    /// A message of the wrong length for what it should hold.
    #[error("rank {rank}: {what} from rank {peer} has {bytes} bytes, not {expected}")]
    Length {
        /// This rank.
        rank: usize,
        /// The sender.
        peer: usize,
        /// What the message holds.
        what: &'static str,
        /// Bytes received.
        bytes: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// A plan or an index that does not fit the data.
    #[error("rank {rank}: {message}")]
    Invalid {
        /// This rank.
        rank: usize,
        /// What is wrong.
        #[source]
        message: InvalidMessage,
    },
    /// Started by an MPI launcher, built without MPI.
    #[error(
        "snowsim was built without MPI (the `mpi` feature), and it was started by an MPI \
         launcher as rank {rank} of {}: build with `cargo build --release --features mpi` \
         (scripts/setup does), or run it without mpirun",
        ranks(*.size)
    )]
    NoMpi {
        /// The rank the launcher gave.
        rank: usize,
        /// The ranks it started, where a variable says.
        size: Option<usize>,
    },
    /// The MPI library failed.
    #[error("MPI: {0}")]
    Mpi(String),
}

/// "N", or "several" for a size no launcher variable gave.
pub fn ranks(size: Option<usize>) -> String {
    size.map_or_else(|| "several".into(), |n| n.to_string())
}

/// What is wrong with a plan or an index ([`CommError::Invalid`]).
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct InvalidMessage(pub String);

impl CommError {
    /// Rank `rank` waited since `start` for rank `peer`'s `what` (tag `tag`) in vain.
    fn timeout(rank: usize, peer: usize, tag: u32, what: &'static str, start: Instant) -> Self {
        Self::Timeout {
            rank,
            peer,
            tag,
            what,
            seconds: start.elapsed().as_secs_f64(),
        }
    }

    fn invalid(rank: usize, message: impl Into<String>) -> Self {
        Self::Invalid {
            rank,
            message: InvalidMessage(message.into()),
        }
    }
}

/// The result of a communication.
pub type Result<T> = std::result::Result<T, CommError>;

/// The largest tag: MPI promises tags up to 32 767 only. Tags from 30 000 are the
/// collectives' own; a caller's messages use tags below.
pub const MAX_TAG: u32 = 32_767;

/// An error for a tag above [`MAX_TAG`] (both backends refuse it alike).
fn check_tag(rank: usize, tag: u32) -> Result<()> {
    match tag <= MAX_TAG {
        true => Ok(()),
        false => Err(CommError::invalid(
            rank,
            format!("tag {tag}: tags go up to {MAX_TAG}"),
        )),
    }
}

/// A rank's view of the ranks it runs with: point-to-point messages of bytes, tagged (at most
/// [`MAX_TAG`]), each receive bounded by [`timeout`](Self::timeout). Messages from one sender
/// with one tag arrive in the order sent. After any [`CommError`] the ranks no longer agree
/// on which messages belong to which operation: the communicator is for ending the run, not
/// for going on.
pub trait Comm: Send {
    /// This rank, `0..size`.
    fn rank(&self) -> usize;
    /// How many ranks.
    fn size(&self) -> usize;
    /// Sends `data` to rank `to` with `tag`; returns once the data may be reused (it may not
    /// have arrived).
    fn send(&self, to: usize, tag: u32, data: &[u8]) -> Result<()>;
    /// Receives the next message from rank `from` with `tag`, waiting at most
    /// [`timeout`](Self::timeout); `what` names it in the error.
    fn recv(&self, from: usize, tag: u32, what: &'static str) -> Result<Vec<u8>>;
    /// How long a receive waits.
    fn timeout(&self) -> Duration;
    /// Waits until every message this rank sent so far has been taken by its receiver (at
    /// most [`timeout`](Self::timeout)). MPI moves a large message only while both ranks are
    /// inside the library, so a rank that sends one and goes on computing holds it back
    /// until its next receive; flushing lets it travel now. Backends whose sends are
    /// delivered at once have nothing to do.
    fn flush_sends(&self) -> Result<()> {
        Ok(())
    }
}

/// The timeout set by `SNOWSIM_COMM_TIMEOUT_S` (seconds, positive and representable), else
/// [`DEFAULT_TIMEOUT`].
pub fn timeout_from_env() -> Duration {
    std::env::var("SNOWSIM_COMM_TIMEOUT_S")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|t| *t > Duration::ZERO)
        .unwrap_or(DEFAULT_TIMEOUT)
}

/// The rank and size an MPI launcher gave this process (Open MPI's `OMPI_COMM_WORLD_*`,
/// MPICH's and Hydra's `PMI_*`, PMIx's `PMIX_RANK` with the size from Open MPI's or Slurm's
/// variables; `None` for a size no variable gives, to be taken as several ranks), `None`
/// when no launcher started it.
pub fn launcher() -> Option<(usize, Option<usize>)> {
    launcher_in(|name| std::env::var(name).ok())
}

/// [`launcher`] reading the variables through `var`.
fn launcher_in(var: impl Fn(&str) -> Option<String>) -> Option<(usize, Option<usize>)> {
    let get = |name: &str| var(name).and_then(|v| v.trim().parse::<usize>().ok());
    let pairs = [
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMI_RANK", "PMI_SIZE"),
        ("PMIX_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("PMIX_RANK", "SLURM_STEP_NUM_TASKS"),
        ("PMIX_RANK", "SLURM_NTASKS"),
    ];
    pairs
        .iter()
        .find_map(|(r, s)| Some((get(r)?, Some(get(s)?))))
        .or_else(|| get("PMIX_RANK").map(|r| (r, None)))
}

/// This process's index among the ranks a launcher started on its machine (Open MPI's
/// `OMPI_COMM_WORLD_LOCAL_RANK`, MPICH's `MPI_LOCALRANKID`, Slurm's `SLURM_LOCALID`), `None`
/// where no variable says: what picks a rank's device by default.
pub fn local_rank() -> Option<usize> {
    [
        "OMPI_COMM_WORLD_LOCAL_RANK",
        "MPI_LOCALRANKID",
        "SLURM_LOCALID",
    ]
    .iter()
    .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
}

/// The communicator this process was started with: MPI's world under an MPI launcher (with
/// the `mpi` feature; without it, [`CommError::NoMpi`]), else one rank alone ([`Local`] of
/// one).
pub fn world() -> Result<Box<dyn Comm>> {
    world_with(timeout_from_env())
}

/// [`world`] with receives that wait at most `timeout`. MPI is initialized once per process:
/// a second call under a launcher is an error.
pub fn world_with(timeout: Duration) -> Result<Box<dyn Comm>> {
    match launcher() {
        #[cfg(feature = "mpi")]
        Some(_) => Ok(Box::new(Mpi::init(timeout)?)),
        #[cfg(not(feature = "mpi"))]
        Some((rank, size)) if size != Some(1) => Err(CommError::NoMpi { rank, size }),
        _ => Ok(Box::new(Local::single(timeout))),
    }
}

#[cfg(test)]
mod tests;
