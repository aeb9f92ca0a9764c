//! The incremental partial sort of Vestre's thesis (§5.5.3–5.5.4): keeps an array whose keys
//! drift from frame to frame nearly sorted, at a fraction of a full sort's cost per frame.

use serde::Serialize;

use super::error::{Result, SortError};
use super::keys::{Order, SortKey, mode_bits};
use super::permute::{Permutable, permute};
use super::plan::{self, Pass};
use super::program::{LocalLaunch, MAX_LEN, SortConfig, SortProgram};
use crate::cl::Timeline;
use crate::cl::{Context, DeviceBuffer};

/// Default period of the redistribution step: every 5th frame, the thesis's compromise.
pub const DEFAULT_REDISTRIBUTE_EVERY: u32 = 5;

/// How a [`PartialSorter`] schedules its steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialConfig {
    /// Run the redistribution step, then a full local sort of the blocks, in every
    /// `redistribute_every`-th frame (frames `r − 1`, `2r − 1`, …); 0 never does.
    pub redistribute_every: u32,
    /// What the other frames do to their blocks.
    pub local_step: LocalStep,
    /// Block length and kernel settings.
    pub sort: SortConfig,
}

impl Default for PartialConfig {
    fn default() -> Self {
        Self {
            redistribute_every: DEFAULT_REDISTRIBUTE_EVERY,
            local_step: LocalStep::Merge,
            sort: SortConfig::default(),
        }
    }
}

/// What a frame does to each of its blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalStep {
    /// Merge the block's two halves, which the previous frame left sorted (each half is half
    /// of one of its blocks), after tidying each half: sorting its 16-element groups, then the
    /// groups shifted by 8, which puts back any key that drifted at most 8 places since. About
    /// 32 network stages, two of three rounds in registers. Frame 0 and the redistribution
    /// frames sort instead, since nothing is known about the halves there.
    #[default]
    Merge,
    /// Sort the block from scratch, as the thesis does: log₂ L · (log₂ L + 1)/2 stages (78 for
    /// blocks of 4096).
    Sort,
}

/// Which blocks a local step works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockPhase {
    /// Blocks start at 0: `[0, L)`, `[L, 2L)`, …
    Even,
    /// Blocks start half a block in: `[L/2, 3L/2)`, …; the first half-block rests.
    Odd,
}

/// What one frame of the partial sort did.
#[derive(Debug)]
pub struct PartialStep {
    /// The frame number (0 for the first step after [`PartialSorter::new`] or `reset`).
    pub frame: u64,
    /// Whether the redistribution step ran before the local step.
    pub redistributed: bool,
    /// The blocks the local step worked on.
    pub phase: BlockPhase,
    /// Whether the blocks were merged or sorted.
    pub local_step: LocalStep,
    /// The launches, for their device time.
    pub events: Timeline,
}

/// Keeps key-value pairs nearly sorted, one cheap step per frame.
///
/// Each frame works on blocks of [`block_len`](Self::block_len) = L pairs in local memory,
/// every block ascending (in `order`), with the block boundaries shifted by half a block in
/// every other frame: the thesis's hybrid of odd-even transposition sort and bitonic sort (§5.5.3).
/// Seen as half-blocks, this is block odd-even transposition sort with merge-split steps: the
/// halves of a block are halves of the previous frame's blocks, already sorted, so merging
/// them ([`LocalStep::Merge`]) does what sorting the block from scratch ([`LocalStep::Sort`],
/// the thesis's choice) does, at a fraction of the cost. Frame 0 sorts its blocks. A static
/// array of `n` pairs is then sorted after [`frames_to_sort`](Self::frames_to_sort)`(n)` =
/// ⌈n / (L/2)⌉ frames from frame 0 (Baudet and Stevenson: one merge-split round per
/// half-block; reversed input needs all of them). Keys that drift between frames leave the
/// halves nearly sorted; the merge step tidies each half first, so keys that moved up to 8
/// places are back in order after the frame. A key that jumps further (a respawned particle)
/// breaks the merge's premise for its block, which then comes out only nearly sorted, with
/// disorder inside the block until the next sort frame: with 0.1 % of the keys respawned per
/// frame, up to ~14 % of neighbours end up inverted against ~0.1 % with [`LocalStep::Sort`],
/// while the displacement from the sorted places (what matters for locality) evolves alike.
///
/// Elements travel at most half a block per frame that way, so every few frames the
/// redistribution step (§5.5.4) moves them far: group g gathers the 128-byte pieces g, g + B,
/// g + 2B, … (B = number of blocks) — a sample spread evenly over the whole array, in position
/// order — sorts them in local memory and writes them back to the same places. On a sorted
/// array it changes nothing; an element far from its place (a respawned particle) lands within
/// one piece spacing (B · 32 places) of its rank in one step, and each element it passes in its
/// group moves on by one piece spacing, which later local steps repair. The same frame then
/// sorts its blocks from scratch (and, in an odd
/// frame, the first half-block, which no odd block covers), which also clears the disorder
/// that drifting keys leave between merges.
///
/// Every step only sorts subsets of positions (into position order), so it never loses or
/// duplicates an element. A merge frame reads and writes the array once and runs about 32
/// network stages in local memory; the full sort makes about log₂(n)² / (2 · global_bits)
/// passes over the array.
///
/// # Example
///
/// ```
/// use snowsim::cl::{Context, DeviceBuffer, DeviceSelector};
/// use snowsim::sort::{Order, PartialConfig, PartialSorter, Sortedness};
///
/// let ctx = Context::from_selector(&DeviceSelector::Default)?;
/// let mut sorter = PartialSorter::new(&ctx, &PartialConfig::default())?;
/// let keys: Vec<u32> = (0..10_000u32).rev().collect();
/// let mut keys_buf = DeviceBuffer::from_slice(&ctx, &keys)?;
/// let mut order = DeviceBuffer::<u32>::uninit(&ctx, keys.len())?;
/// for _ in 0..sorter.frames_to_sort(keys.len()) {
///     // In a simulation: recompute the keys, step, then permute the particle arrays.
///     sorter.step_with_indices(&mut keys_buf, &mut order, Order::Ascending)?;
/// }
/// assert!(Sortedness::of(&keys_buf.read()?, Order::Ascending).is_sorted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PartialSorter {
    program: SortProgram,
    redistribute_every: u32,
    local_step: LocalStep,
    frame: u64,
    next_phase: BlockPhase,
}

impl PartialSorter {
    /// Builds the kernels for `context`'s device with `config`.
    pub fn new(context: &Context, config: &PartialConfig) -> Result<Self> {
        Ok(Self {
            program: SortProgram::build(context, &config.sort)?,
            redistribute_every: config.redistribute_every,
            local_step: config.local_step,
            frame: 0,
            next_phase: BlockPhase::Even,
        })
    }

    /// Pairs per block.
    pub fn block_len(&self) -> usize {
        self.program.block_len
    }

    /// Work-items of a work-group (`block_len / 16`).
    pub fn work_group_size(&self) -> usize {
        self.program.group_size()
    }

    /// The redistribution period (0: never).
    pub fn redistribute_every(&self) -> u32 {
        self.redistribute_every
    }

    /// What frames without redistribution do to their blocks.
    pub fn local_step(&self) -> LocalStep {
        self.local_step
    }

    /// The number the next step will have.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Starts counting frames from 0 again, for a new array: the next frame sorts its blocks
    /// rather than merging them.
    pub fn reset(&mut self) {
        self.frame = 0;
        self.next_phase = BlockPhase::Even;
    }

    /// Frames after which a static array of `len` pairs is sorted, counted from frame 0:
    /// ⌈len / (block_len / 2)⌉, the number of half-blocks.
    pub fn frames_to_sort(&self, len: usize) -> u64 {
        len.div_ceil(self.block_len() / 2) as u64
    }

    /// Runs the next frame on `keys` and `values` in place: the redistribution step if the
    /// schedule says so, then the local step of this frame's phase.
    ///
    /// Merge frames assume that `keys` and `values` are what the previous step left (keys may
    /// have changed value, not place); call [`reset`](Self::reset) before stepping another
    /// array.
    pub fn step_pairs<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<PartialStep> {
        self.step(keys, values, order, false)
    }

    /// Like [`step_pairs`](Self::step_pairs), but writes into `indices` where each key was
    /// before this frame (`keys[i]` is now the old `keys[indices[i]]`): pass it to
    /// [`permute`](Self::permute) to move particle arrays along with their keys.
    pub fn step_with_indices<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        indices: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<PartialStep> {
        self.step(keys, indices, order, true)
    }

    /// One local step of the given kind and phase on `keys` and `values`, outside the
    /// schedule (the frame counter does not move). A merge leaves a block sorted only if its
    /// halves were.
    pub fn local_step_on<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
        step: LocalStep,
        phase: BlockPhase,
    ) -> Result<Timeline> {
        check_lengths(keys.len(), values.len())?;
        let pass = self.local_pass(keys.len(), step, phase);
        self.run(pass, keys, values, mode_bits(K::KIND, order, false))
    }

    /// One redistribution step on `keys` and `values`, outside the schedule.
    pub fn redistribute<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<Timeline> {
        check_lengths(keys.len(), values.len())?;
        let pass = plan::redistribute(keys.len(), self.block_len());
        self.run(pass, keys, values, mode_bits(K::KIND, order, false))
    }

    /// Enqueues `dst[i] = src[indices[i]]`, as [`BitonicSorter::permute`](super::BitonicSorter::permute).
    pub fn permute<T: Permutable>(
        &mut self,
        src: &DeviceBuffer<T>,
        indices: &DeviceBuffer<u32>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<Timeline> {
        permute(&self.program, src, indices, dst)
    }

    fn step<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
        iota: bool,
    ) -> Result<PartialStep> {
        check_lengths(keys.len(), values.len())?;
        let frame = self.frame;
        let n = keys.len();
        let redistributed = self.redistribute_every > 0
            && (frame + 1).is_multiple_of(u64::from(self.redistribute_every));
        let local_step = if frame == 0 || redistributed {
            LocalStep::Sort
        } else {
            self.local_step
        };
        // An array of at most half a block has no odd block: it is one even block every frame.
        let phase = if n <= self.block_len() / 2 {
            BlockPhase::Even
        } else {
            self.next_phase
        };
        self.next_phase = match phase {
            BlockPhase::Even => BlockPhase::Odd,
            BlockPhase::Odd => BlockPhase::Even,
        };
        let mut events = Timeline::default();
        let mut iota = iota;
        if redistributed {
            let pass = plan::redistribute(n, self.block_len());
            events.append(self.run(pass, keys, values, mode_bits(K::KIND, order, iota))?);
            iota = false; // the local step must carry the redistribution's indices along
        }
        let pass = self.local_pass(n, local_step, phase);
        events.append(self.run(pass, keys, values, mode_bits(K::KIND, order, iota))?);
        if redistributed && phase == BlockPhase::Odd {
            // The redistribution moved elements everywhere, and no odd block covers the first
            // half-block: sort it too, so that the next frame finds every half-block sorted.
            let first_half = self.block_len() / 2;
            let pass = plan::partial_local(first_half, self.block_len(), 0);
            let mode = mode_bits(K::KIND, order, false);
            events.append(self.run_bounded(pass, keys, values, mode, first_half)?);
        }
        self.frame += 1;
        Ok(PartialStep {
            frame,
            redistributed,
            phase,
            local_step,
            events,
        })
    }

    fn local_pass(&self, n: usize, step: LocalStep, phase: BlockPhase) -> Option<Pass> {
        let offset = match phase {
            BlockPhase::Even => 0,
            BlockPhase::Odd => self.block_len() / 2,
        };
        match step {
            LocalStep::Merge => plan::partial_merge(n, self.block_len(), offset),
            LocalStep::Sort => plan::partial_local(n, self.block_len(), offset),
        }
    }

    fn run<K: SortKey>(
        &self,
        pass: Option<Pass>,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        mode: u32,
    ) -> Result<Timeline> {
        self.run_bounded(pass, keys, values, mode, keys.len())
    }

    /// Runs `pass` on the first `bound` pairs only (the kernels treat the rest as absent).
    fn run_bounded<K: SortKey>(
        &self,
        pass: Option<Pass>,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        mode: u32,
        bound: usize,
    ) -> Result<Timeline> {
        let mut events = Timeline::default();
        let bound = bound.min(keys.len());
        let (merge, launch) = match pass {
            None | Some(Pass::MergeGlobal { .. }) => return Ok(events),
            Some(Pass::SortLocal {
                groups,
                offset,
                blocks,
                flags,
            }) => (false, (groups, offset, blocks, 0, flags)),
            Some(Pass::MergeLocal {
                groups,
                offset,
                k,
                flags,
            }) => (true, (groups, offset, 0, k, flags)),
        };
        let (groups, offset, blocks, k, flags) = launch;
        let launch = LocalLaunch {
            groups,
            n: bound,
            packed_len: 0,
            offset,
            blocks,
            k,
            mode,
            flags,
        };
        let event = self.program.local(merge, keys, values, None, launch)?;
        if merge {
            events
                .stage("sort.merge")
                .push("bitonic_merge_local", event);
        } else {
            events.stage("sort.local").push("bitonic_sort_local", event);
        }
        Ok(events)
    }
}

fn check_lengths(keys: usize, values: usize) -> Result<()> {
    if keys != values {
        return Err(SortError::LengthMismatch { keys, values });
    }
    if keys > MAX_LEN {
        return Err(SortError::TooLong {
            len: keys,
            max: MAX_LEN,
        });
    }
    Ok(())
}
