//! The MPI backend (feature `mpi`): the `mpi` crate over the system's MPI library. A receive
//! polls a matched probe until its message is there or its timeout has passed, so a rank
//! that died ends the others' waits with an error naming it.

use std::time::{Duration, Instant};

use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::topology::Communicator;

use super::{Comm, CommError, Result};

/// MPI's world communicator; MPI is finalized when it is dropped.
pub struct Mpi {
    universe: mpi::environment::Universe,
    rank: usize,
    size: usize,
    timeout: Duration,
}

impl Mpi {
    /// Initializes MPI (once per process) with receives that wait at most `timeout`.
    pub fn init(timeout: Duration) -> Result<Self> {
        let universe = mpi::initialize()
            .ok_or_else(|| CommError::Mpi("MPI was initialized already in this process".into()))?;
        let world = universe.world();
        let (rank, size) = (world.rank(), world.size());
        Ok(Self {
            universe,
            rank: usize::try_from(rank).map_err(|_| CommError::Mpi(format!("rank {rank}")))?,
            size: usize::try_from(size).map_err(|_| CommError::Mpi(format!("size {size}")))?,
            timeout,
        })
    }

    fn peer(&self, peer: usize) -> Result<i32> {
        match peer < self.size {
            true => Ok(peer as i32),
            false => Err(CommError::NoSuchRank {
                rank: self.rank,
                peer,
                size: self.size,
            }),
        }
    }
}

impl Comm for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&self, to: usize, tag: u32, data: &[u8]) -> Result<()> {
        let to = self.peer(to)?;
        self.universe
            .world()
            .process_at_rank(to)
            .send_with_tag(data, tag as i32);
        Ok(())
    }

    fn recv(&self, from: usize, tag: u32, what: &'static str) -> Result<Vec<u8>> {
        let source = self.peer(from)?;
        let world = self.universe.world();
        let process = world.process_at_rank(source);
        let start = Instant::now();
        let mut idle = 0u32;
        loop {
            if let Some(matched) = process.immediate_matched_probe_with_tag(tag as i32) {
                let (data, _) = matched.matched_receive_vec::<u8>();
                return Ok(data);
            }
            if start.elapsed() >= self.timeout {
                return Err(CommError::timeout(self.rank, from, tag, what, start));
            }
            // Spin briefly (a halo's answer comes in microseconds), then yield the core.
            idle = idle.saturating_add(1);
            match idle {
                0..=1000 => std::hint::spin_loop(),
                1001..=5000 => std::thread::yield_now(),
                _ => std::thread::sleep(Duration::from_micros(50)),
            }
        }
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}
