//! Landings handed from one device's cover to another's, packed: with the parcels split across
//! devices (`--snow-devices`) each device lays its share's landings on a cover of its own, and
//! every frame those units join the snow's device's cover before it drifts or is smoothed.
//!
//! A frame's landings touch few of the cover's vertices (about a thousand parcels land per
//! frame on the valley at 2^24, each over a footprint of a few vertices, against 148 225 cover
//! vertices), so the giving device packs the non-zero ones as (vertex, units) pairs and clears
//! them (`cover_pack`), the host reads the pair count and the first pairs into pinned memory
//! without waiting, and the snow's device adds the pairs (`cover_add_packed`): 16 bytes per
//! touched vertex cross the bus instead of 8 per cover vertex. The pairs read are as many as
//! the last frame's count suggests (twice it, at least [`MIN_PAIRS`]); a frame with more reads
//! the rest once the count is known. The sum is in integers and each vertex appears at most
//! once per hand-over, so the result is the dense sum's, bit for bit.

use opencl3::event::Event;

use crate::cl::{Context, DeviceBuffer, PinnedBuffer, Timeline, wait_for};

use super::{Error, GroundCover, Result};

/// The fewest pairs read with the count each frame.
pub const MIN_PAIRS: usize = 1024;

/// The giving side: a share's device packs its cover's landings and reads them back.
pub struct LandingsOut {
    packed: DeviceBuffer<[u64; 2]>,
    count: DeviceBuffer<u32>,
    host: PinnedBuffer<[u64; 2]>,
    host_count: PinnedBuffer<u32>,
    /// Pairs read with the count (the next hand-over's guess).
    expected: usize,
    /// Pairs read by the hand-over on its way.
    reading: usize,
    /// The pairs of the last hand-over, once [`finish`](Self::finish)ed.
    ready: usize,
    /// Whether a hand-over is on its way (enqueued, not finished).
    pending: bool,
    /// Bytes read back since the start.
    bytes: u64,
}

impl LandingsOut {
    /// Buffers for `cover` on `context` (its own), reading `expected` pairs at first.
    pub fn new(context: &Context, cover: &GroundCover, expected: usize) -> Result<Self> {
        let n = cover.geometry.len();
        Ok(Self {
            packed: DeviceBuffer::zeroed(context, n.max(1))?,
            count: DeviceBuffer::zeroed(context, 1)?,
            host: PinnedBuffer::new(context, n.max(1))?,
            host_count: PinnedBuffer::new(context, 1)?,
            expected: expected.clamp(1, n.max(1)),
            reading: 0,
            ready: 0,
            pending: false,
            bytes: 0,
        })
    }

    /// Starts handing over what `cover` holds: packs and clears its non-zero volumes and
    /// starts reading the count and the expected pairs, without waiting; the pairs are
    /// [`finish`](Self::finish)ed with the returned events.
    ///
    /// # Safety
    ///
    /// The pinned memory must stay untouched until the events complete: no
    /// [`pairs`](Self::pairs) until [`finish`](Self::finish) has waited for them.
    pub unsafe fn enqueue(
        &mut self,
        context: &Context,
        cover: &mut GroundCover,
        timeline: &mut Timeline,
    ) -> Result<Vec<Event>> {
        self.count.enqueue_fill(0)?;
        cover.enqueue_pack(context, &self.packed, &self.count, timeline)?;
        self.reading = self.expected.min(self.packed.len());
        self.ready = 0;
        self.pending = true;
        // SAFETY: forwarded to the caller.
        let events = unsafe {
            vec![
                self.host_count.enqueue_read_from(&self.count)?,
                self.host
                    .enqueue_read_range(&self.packed, 0, self.reading)?,
            ]
        };
        self.bytes += 4 + 16 * self.reading as u64;
        Ok(events)
    }

    /// Waits for `events` (those [`enqueue`](Self::enqueue) returned), reads the pairs past
    /// the expected ones (waiting for them) when the count exceeds them, and sets the next
    /// guess. An error when no hand-over is on its way.
    pub fn finish(&mut self, events: &[Event]) -> Result<()> {
        if !self.pending {
            return Err(Error::InvalidParameter(
                "landings finished without a hand-over on its way".into(),
            ));
        }
        wait_for(events)?;
        self.pending = false;
        let count = self.host_count.as_slice()[0] as usize;
        let count = count.min(self.packed.len());
        if count > self.reading {
            let rest = count - self.reading;
            // SAFETY: the host touches no pinned memory until the wait below returns.
            let read = unsafe {
                self.host
                    .enqueue_read_range(&self.packed, self.reading, rest)
            }?;
            wait_for(std::slice::from_ref(&read))?;
            self.bytes += 16 * rest as u64;
        }
        self.ready = count;
        // `max` then `min`: a cover may have fewer vertices than MIN_PAIRS.
        self.expected = (2 * count).max(MIN_PAIRS).min(self.packed.len());
        Ok(())
    }

    /// The (vertex, units) pairs of the last finished hand-over, in pinned memory.
    pub fn pairs(&self) -> &[[u64; 2]] {
        &self.host.as_slice()[..self.ready]
    }

    /// Bytes read back since the start (counts, pairs).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// The receiving side: the snow's device's buffer for the pairs on their way to its cover.
pub struct LandingsIn {
    incoming: DeviceBuffer<[u64; 2]>,
}

impl LandingsIn {
    /// A buffer for up to one pair per vertex of a cover of `vertices`, on `context` (the
    /// cover's).
    pub fn new(context: &Context, vertices: usize) -> Result<Self> {
        Ok(Self {
            incoming: DeviceBuffer::zeroed(context, vertices.max(1))?,
        })
    }

    /// Adds `pairs` ([`LandingsOut::pairs`]) to `cover`, exactly, in order on `context`'s
    /// queue, without waiting; returns the event of the copy out of `pairs` (none when there
    /// are none).
    ///
    /// # Safety
    ///
    /// `pairs` must stay alive and unchanged until the returned event completes.
    pub unsafe fn enqueue_add(
        &mut self,
        context: &Context,
        cover: &mut GroundCover,
        pairs: &[[u64; 2]],
        timeline: &mut Timeline,
    ) -> Result<Option<Event>> {
        if pairs.is_empty() {
            return Ok(None);
        }
        // SAFETY: forwarded to the caller; `enqueue_write_at` checks the length.
        let copied = unsafe { crate::cl::enqueue_write_at(context, &self.incoming, 0, pairs) }?;
        cover.enqueue_add_packed(context, &self.incoming, pairs.len(), timeline)?;
        Ok(Some(copied))
    }
}
