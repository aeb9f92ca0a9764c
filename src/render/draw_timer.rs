//! The GPU time of a whole frame's drawing: two `GL_TIMESTAMP` queries around it, read
//! frames later without waiting.
//!
//! The host's `render.draw` stage is only what it costs to enqueue the draw; what the GPU
//! spends on it (the shadow map when due, the terrain, the veil, the composite, the near
//! flakes, the views) is this span. Timestamps rather than a `GL_TIME_ELAPSED` query, because
//! the composite's own elapsed-time query runs inside the draw and elapsed-time queries do
//! not nest. A small ring of query pairs lets GL run a few frames behind the host: a frame
//! whose slot still waits for its result is not timed.

use std::cell::Cell;
use std::time::Duration;

use glow::HasContext;

use super::error::{Result, gl_call};

/// Frames whose timings may be in flight at once.
const RING: usize = 4;

/// The ring of timestamp pairs.
pub(crate) struct DrawTimer {
    /// Per slot: the timestamps before and after a frame's drawing.
    queries: [(glow::Query, glow::Query); RING],
    /// Per slot: ended, its result not read yet.
    pending: [Cell<bool>; RING],
    /// The slot the next timing uses.
    next: Cell<usize>,
    /// The oldest slot whose result may be read.
    oldest: Cell<usize>,
    /// The slot begun this frame, until it is ended.
    running: Cell<Option<usize>>,
}

impl DrawTimer {
    /// Makes the queries.
    pub(crate) fn new(gl: &glow::Context) -> Result<Self> {
        let mut made = Vec::with_capacity(2 * RING);
        for _ in 0..2 * RING {
            // SAFETY: object creation on the current context.
            match gl_call("glGenQueries", unsafe { gl.create_query() }) {
                Ok(q) => made.push(q),
                Err(e) => {
                    for q in made {
                        // SAFETY: a query made just above on this context.
                        unsafe { gl.delete_query(q) };
                    }
                    return Err(e);
                }
            }
        }
        let queries = std::array::from_fn(|i| (made[2 * i], made[2 * i + 1]));
        Ok(Self {
            queries,
            pending: std::array::from_fn(|_| Cell::new(false)),
            next: Cell::new(0),
            oldest: Cell::new(0),
            running: Cell::new(None),
        })
    }

    /// Marks the start of a frame's drawing, unless every slot still waits for its result.
    ///
    /// # Safety
    /// GL must be current.
    pub(crate) unsafe fn begin(&self, gl: &glow::Context) {
        let slot = self.next.get();
        if self.pending[slot].get() {
            return;
        }
        // SAFETY: forwarded from the caller; the query belongs to this context.
        unsafe { gl.query_counter(self.queries[slot].0, glow::TIMESTAMP) };
        self.running.set(Some(slot));
    }

    /// Marks the end of the drawing begun by [`begin`](Self::begin) (nothing when that one
    /// did not start a timing).
    ///
    /// # Safety
    /// GL must be current.
    pub(crate) unsafe fn end(&self, gl: &glow::Context) {
        let Some(slot) = self.running.take() else {
            return;
        };
        // SAFETY: forwarded from the caller; the query belongs to this context.
        unsafe { gl.query_counter(self.queries[slot].1, glow::TIMESTAMP) };
        self.pending[slot].set(true);
        self.next.set((slot + 1) % RING);
    }

    /// The GPU time of the oldest timed drawing that GL has finished; `None` when none has
    /// (never waits).
    pub(crate) fn take(&self, gl: &glow::Context) -> Option<Duration> {
        let slot = self.oldest.get();
        if !self.pending[slot].get() {
            return None;
        }
        let (start, end) = self.queries[slot];
        // SAFETY: both timestamps were issued on this context; asking whether the later
        // one's result is there does not wait, and once it is, both are.
        let ns = unsafe {
            if gl.get_query_parameter_u32(end, glow::QUERY_RESULT_AVAILABLE) == 0 {
                return None;
            }
            let t0 = gl.get_query_parameter_u64(start, glow::QUERY_RESULT);
            let t1 = gl.get_query_parameter_u64(end, glow::QUERY_RESULT);
            t1.saturating_sub(t0)
        };
        self.pending[slot].set(false);
        self.oldest.set((slot + 1) % RING);
        Some(Duration::from_nanos(ns))
    }

    /// Deletes the queries.
    ///
    /// # Safety
    /// GL must be current; the timer is not used afterwards.
    pub(crate) unsafe fn delete(&self, gl: &glow::Context) {
        for (a, b) in self.queries {
            // SAFETY: forwarded from the caller.
            unsafe {
                gl.delete_query(a);
                gl.delete_query(b);
            }
        }
    }
}
