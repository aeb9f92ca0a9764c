//! The MPI backend (feature `mpi`): the `mpi` crate over the system's MPI library.
//!
//! Sends are immediate (`MPI_Isend` on a copy of the bytes, kept until MPI is done with it),
//! so a send never waits for its receiver: a large message to a rank that is alive but stuck
//! cannot block the sender for ever. Receives poll a matched probe until the message is
//! there or the timeout has passed, testing the pending sends meanwhile so MPI can finish
//! them. (Ported from a second implementation of this room, written beside this one.)

use std::cell::RefCell;
use std::time::{Duration, Instant};

use mpi::Threading;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::Communicator;

use super::{Comm, CommError, Result};

/// A send MPI has not finished: its request and the copy of the bytes it reads.
struct Pending {
    request: Request<'static, [u8], StaticScope>,
    /// The leaked copy the request reads; freed once the request completes.
    buffer: *mut [u8],
    /// Its receiver and tag (what a flush that times out names).
    to: usize,
    tag: u32,
}

/// MPI's world communicator; MPI is finalized when it is dropped, after the pending sends
/// complete (at most the timeout).
pub struct Mpi {
    pending: RefCell<Vec<Pending>>,
    rank: usize,
    size: usize,
    timeout: Duration,
    // Dropped last: MPI_Finalize.
    universe: mpi::environment::Universe,
}

// SAFETY: MPI is initialized with MPI_THREAD_SERIALIZED (checked in `init`), so any one
// thread at a time may call it; a `Mpi` is used by one thread at a time (it is `Send`, not
// `Sync`). The raw buffers are owned by the pending sends and travel with them. (MPI asks
// that the thread that initialized it finalize it: drop a `Mpi` on the thread that made it.)
unsafe impl Send for Mpi {}

impl Mpi {
    /// Initializes MPI (once per process; calls from any one thread at a time) with receives
    /// that wait at most `timeout`.
    pub fn init(timeout: Duration) -> Result<Self> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Serialized)
            .ok_or_else(|| CommError::Mpi("MPI was initialized already in this process".into()))?;
        if threading < Threading::Serialized {
            return Err(CommError::Mpi(format!(
                "the MPI library offers thread support {threading:?}; snowsim needs Serialized"
            )));
        }
        let world = universe.world();
        let (rank, size) = (world.rank(), world.size());
        Ok(Self {
            pending: RefCell::new(Vec::new()),
            rank: usize::try_from(rank).map_err(|_| CommError::Mpi(format!("rank {rank}")))?,
            size: usize::try_from(size).map_err(|_| CommError::Mpi(format!("size {size}")))?,
            timeout,
            universe,
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

    /// Tests every pending send, freeing the copies of those MPI has finished.
    fn progress(&self) {
        let mut pending = self.pending.borrow_mut();
        let mut still = Vec::with_capacity(pending.len());
        for p in pending.drain(..) {
            match p.request.test() {
                // SAFETY: `buffer` came from `Box::leak` in `send`, and the request that read
                // it has completed and been consumed: nothing refers to it now.
                Ok(_) => drop(unsafe { Box::from_raw(p.buffer) }),
                Err(request) => still.push(Pending { request, ..p }),
            }
        }
        *pending = still;
    }
}

/// Waits a little between polls: spins for the first 50 µs (a halo's answer comes in
/// microseconds; yielding the core then would cost a scheduler's time slice on a busy
/// machine), yields until 50 ms (a message on its way), then sleeps 50 µs (a peer still
/// computing) so a long wait does not hold a core.
fn pause(since: Instant) {
    let waited = since.elapsed();
    if waited < Duration::from_micros(50) {
        std::hint::spin_loop();
    } else if waited < Duration::from_millis(50) {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
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
        super::check_tag(self.rank, tag)?;
        let to = self.peer(to)?;
        if i32::try_from(data.len()).is_err() {
            return Err(CommError::invalid(
                self.rank,
                format!(
                    "a message of {} bytes: MPI counts up to 2^31 - 1",
                    data.len()
                ),
            ));
        }
        let copy: &'static mut [u8] = Box::leak(data.to_vec().into_boxed_slice());
        let buffer: *mut [u8] = copy;
        // SAFETY: `buffer` is the leaked copy, valid until `progress` or `drop` frees it after
        // the request completes; only the request reads it meanwhile.
        let shared: &'static [u8] = unsafe { &*buffer };
        let request = self
            .universe
            .world()
            .process_at_rank(to)
            .immediate_send_with_tag(StaticScope, shared, tag as i32);
        self.pending.borrow_mut().push(Pending {
            request,
            buffer,
            to: to as usize,
            tag,
        });
        self.progress();
        Ok(())
    }

    fn recv(&self, from: usize, tag: u32, what: &'static str) -> Result<Vec<u8>> {
        super::check_tag(self.rank, tag)?;
        let source = self.peer(from)?;
        let world = self.universe.world();
        let process = world.process_at_rank(source);
        let start = Instant::now();
        loop {
            self.progress();
            if let Some(matched) = process.immediate_matched_probe_with_tag(tag as i32) {
                let (data, _) = matched.matched_receive_vec::<u8>();
                return Ok(data);
            }
            if start.elapsed() >= self.timeout {
                return Err(CommError::timeout(self.rank, from, tag, what, start));
            }
            pause(start);
        }
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn flush_sends(&self) -> Result<()> {
        let start = Instant::now();
        loop {
            self.progress();
            let pending = self.pending.borrow();
            let Some(first) = pending.first() else {
                return Ok(());
            };
            if start.elapsed() >= self.timeout {
                let what = "the delivery of a message sent to it";
                return Err(CommError::timeout(
                    self.rank, first.to, first.tag, what, start,
                ));
            }
            drop(pending);
            pause(start);
        }
    }
}

impl Drop for Mpi {
    /// Lets the pending sends complete (at most the timeout) before MPI is finalized; a send
    /// still pending then (its receiver gone) is left to MPI, its copy leaked.
    fn drop(&mut self) {
        let start = Instant::now();
        while !self.pending.borrow().is_empty() && start.elapsed() < self.timeout {
            self.progress();
            pause(start);
        }
        for p in self.pending.borrow_mut().drain(..) {
            std::mem::forget(p.request);
        }
    }
}
