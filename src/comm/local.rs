//! The in-process backend: ranks as threads of one process, a channel into each rank.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Comm, CommError, Result};

/// A message on its way: its sender, tag and bytes.
type Message = (usize, u32, Vec<u8>);

/// How often a waiting receive looks whether its peer ended.
const GONE_CHECK: Duration = Duration::from_millis(20);

/// One rank of ranks that are threads of this process ([`Local::run`]), or one rank alone
/// ([`Local::single`]). A rank that ends (its `Local` dropped, a panic included) is seen by
/// the others' receives from it at once, not after the timeout.
pub struct Local {
    rank: usize,
    senders: Vec<Sender<Message>>,
    inbox: Mutex<(Receiver<Message>, VecDeque<Message>)>,
    alive: Arc<Vec<AtomicBool>>,
    timeout: Duration,
}

impl Local {
    /// One rank alone: every collective is this rank's own data.
    pub fn single(timeout: Duration) -> Self {
        Self::group(1, timeout)
            .pop()
            .unwrap_or_else(|| unreachable!("a group of one has one rank"))
    }

    /// `size` connected ranks (at least one), to be moved to threads of their own.
    pub fn group(size: usize, timeout: Duration) -> Vec<Self> {
        let size = size.max(1);
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..size).map(|_| channel()).unzip();
        let alive = Arc::new((0..size).map(|_| AtomicBool::new(true)).collect::<Vec<_>>());
        receivers
            .into_iter()
            .enumerate()
            .map(|(rank, receiver)| Self {
                rank,
                senders: senders.clone(),
                inbox: Mutex::new((receiver, VecDeque::new())),
                alive: Arc::clone(&alive),
                timeout,
            })
            .collect()
    }

    /// Runs `work` on `size` ranks, each on a thread of its own, and returns each rank's
    /// result in rank order (a rank that panicked: `Err` with its message).
    pub fn run<R: Send>(
        size: usize,
        timeout: Duration,
        work: impl Fn(&dyn Comm) -> R + Sync,
    ) -> Vec<std::result::Result<R, String>> {
        let ranks = Self::group(size, timeout);
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranks
                .into_iter()
                .map(|comm| {
                    let work = &work;
                    scope.spawn(move || work(&comm))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().map_err(|panic| {
                        panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_else(|| "a rank panicked".into())
                    })
                })
                .collect()
        })
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        if let Some(a) = self.alive.get(self.rank) {
            a.store(false, Ordering::SeqCst);
        }
    }
}

impl Comm for Local {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.senders.len()
    }

    fn send(&self, to: usize, tag: u32, data: &[u8]) -> Result<()> {
        super::check_tag(self.rank, tag)?;
        let sender = self.senders.get(to).ok_or(CommError::NoSuchRank {
            rank: self.rank,
            peer: to,
            size: self.size(),
        })?;
        // A rank that ended drops nothing here (every rank holds every sender): the message
        // waits, and the receiver that is gone never reads it.
        sender
            .send((self.rank, tag, data.to_vec()))
            .map_err(|_| CommError::Gone {
                rank: self.rank,
                peer: to,
                tag,
                what: "a send",
            })
    }

    fn recv(&self, from: usize, tag: u32, what: &'static str) -> Result<Vec<u8>> {
        super::check_tag(self.rank, tag)?;
        if from >= self.size() {
            return Err(CommError::NoSuchRank {
                rank: self.rank,
                peer: from,
                size: self.size(),
            });
        }
        let mut inbox = self
            .inbox
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (receiver, held) = &mut *inbox;
        if let Some(at) = held.iter().position(|m| m.0 == from && m.1 == tag) {
            return Ok(held.remove(at).map(|m| m.2).unwrap_or_default());
        }
        let start = Instant::now();
        loop {
            let left = self.timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Err(CommError::timeout(self.rank, from, tag, what, start));
            }
            match receiver.recv_timeout(left.min(GONE_CHECK)) {
                Ok(m) if m.0 == from && m.1 == tag => return Ok(m.2),
                Ok(m) => held.push_back(m),
                Err(RecvTimeoutError::Timeout) => {
                    if !self.alive[from].load(Ordering::SeqCst) {
                        // It may have sent just before it ended: look once more.
                        while let Ok(m) = receiver.try_recv() {
                            if m.0 == from && m.1 == tag {
                                return Ok(m.2);
                            }
                            held.push_back(m);
                        }
                        return Err(CommError::Gone {
                            rank: self.rank,
                            peer: from,
                            tag,
                            what,
                        });
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(CommError::Gone {
                        rank: self.rank,
                        peer: from,
                        tag,
                        what,
                    });
                }
            }
        }
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }
}
