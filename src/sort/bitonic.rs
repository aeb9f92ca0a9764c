//! The full sort: every key-value pair in order, on the device.

use super::error::{Result, check_pair_lengths};
use super::keys::{Order, SortKey, mode_bits};
use super::permute::{Permutable, permute};
use super::plan::{self, Pass};
use super::program::{LocalLaunch, SortConfig, SortProgram};
use crate::cl::Timeline;
use crate::cl::{Context, DeviceBuffer};

/// Sorts key-value pairs on one device with bitonic sort.
///
/// Keys are `u32` or `f32` (see [`SortKey`] for the order of `-0.0` and NaN), values are `u32`;
/// both live in device buffers and are sorted in place. Any length up to 2³¹ works: the sorter
/// pads internally with sentinels that sort last and are never written back. Equal keys come
/// out ordered by value, so the result is fully determined; with the original indices as
/// values ([`sort_with_indices`](Self::sort_with_indices)) the sort is stable.
///
/// Blocks of [`block_len`](Self::block_len) pairs are sorted in local memory, then merged by
/// passes over global memory (several network stages per pass) and local merges, as NVIDIA's
/// CUDA sample does. Launches are asynchronous; the returned [`Timeline`] give their device
/// time.
///
/// # Example
///
/// ```
/// use snowsim::cl::{Context, DeviceBuffer, DeviceSelector};
/// use snowsim::sort::{BitonicSorter, Order};
///
/// let ctx = Context::from_selector(&DeviceSelector::Default)?;
/// let mut sorter = BitonicSorter::new(&ctx)?;
/// let mut keys = DeviceBuffer::from_slice(&ctx, &[3.5f32, -0.0, f32::NAN, 0.0, -7.0])?;
/// let mut order = DeviceBuffer::<u32>::uninit(&ctx, 5)?;
/// sorter.sort_with_indices(&mut keys, &mut order, Order::Ascending)?;
/// assert_eq!(order.read()?, [4, 1, 3, 0, 2]); // -7, -0, +0, 3.5, NaN
///
/// // Apply the order to particle positions.
/// let positions: Vec<[f32; 4]> = (0..5).map(|i| [i as f32, 0.0, 0.0, 1.0]).collect();
/// let positions = DeviceBuffer::from_slice(&ctx, &positions)?;
/// let mut sorted = DeviceBuffer::uninit(&ctx, 5)?;
/// sorter.permute(&positions, &order, &mut sorted)?;
/// assert_eq!(sorted.read()?[0], [4.0, 0.0, 0.0, 1.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BitonicSorter {
    program: SortProgram,
    scratch: Option<DeviceBuffer<u64>>,
}

impl BitonicSorter {
    /// Builds the sort kernels for `context`'s device with the default [`SortConfig`].
    pub fn new(context: &Context) -> Result<Self> {
        Self::with_config(context, &SortConfig::default())
    }

    /// Builds the sort kernels with `config` (block length, elements per global work-item).
    pub fn with_config(context: &Context, config: &SortConfig) -> Result<Self> {
        Ok(Self {
            program: SortProgram::build(context, config)?,
            scratch: None,
        })
    }

    /// Pairs sorted in local memory by one work-group.
    pub fn block_len(&self) -> usize {
        self.program.block_len
    }

    /// Work-items of a local-sort work-group (`block_len / 16`).
    pub fn work_group_size(&self) -> usize {
        self.program.group_size()
    }

    /// log2 of the elements one work-item owns in a global merge pass.
    pub fn global_bits(&self) -> u32 {
        self.program.global_bits
    }

    /// The context the kernels were built for.
    pub fn context(&self) -> &Context {
        &self.program.context
    }

    /// Kernel launches a sort of `len` pairs makes.
    pub fn launches_for(&self, len: usize) -> usize {
        plan::full_sort(len, self.block_len(), self.global_bits())
            .passes
            .len()
    }

    /// Sorts `keys` in `order`, moving `values` with them, in place.
    ///
    /// Fails if the lengths differ or exceed 2³¹. The sort needs a scratch buffer of 8 bytes
    /// per pair (rounded up to a power of two) for arrays longer than one block; it is kept for
    /// the next call.
    pub fn sort_pairs<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<Timeline> {
        self.sort(keys, values, order, false)
    }

    /// Sorts `keys` in `order` and writes into `indices` where each sorted key was: afterwards
    /// `keys[i]` is the original `keys[indices[i]]`. Stable: equal keys keep their order.
    /// `indices` is only written; pass it to [`permute`](Self::permute) to reorder other arrays.
    pub fn sort_with_indices<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        indices: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<Timeline> {
        self.sort(keys, indices, order, true)
    }

    /// Enqueues `dst[i] = src[indices[i]]` for every `i < dst.len()` (`indices.len()` must equal
    /// `dst.len()`). An index at or past `src.len()` fills that row with NaNs (`float4`,
    /// `f32`) or all-ones bits (`u32`) instead of reading out of bounds.
    pub fn permute<T: Permutable>(
        &mut self,
        src: &DeviceBuffer<T>,
        indices: &DeviceBuffer<u32>,
        dst: &mut DeviceBuffer<T>,
    ) -> Result<Timeline> {
        permute(&self.program, src, indices, dst)
    }

    fn sort<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
        iota: bool,
    ) -> Result<Timeline> {
        let n = check_pair_lengths(keys.len(), values.len())?;
        let plan = plan::full_sort(n, self.block_len(), self.global_bits());
        if plan.packed_len > 0
            && self
                .scratch
                .as_ref()
                .is_none_or(|s| s.len() < plan.packed_len)
        {
            self.scratch = None; // release the old one before allocating the larger
            self.scratch = Some(DeviceBuffer::uninit(
                &self.program.context,
                plan.packed_len,
            )?);
        }
        let packed = if plan.packed_len > 0 {
            self.scratch.as_ref()
        } else {
            None
        };
        let mut events = Timeline::default();
        let mut mode = mode_bits(K::KIND, order, iota);
        for pass in plan.passes {
            match pass {
                Pass::SortLocal {
                    groups,
                    offset,
                    blocks,
                    flags,
                } => {
                    let launch = LocalLaunch {
                        groups,
                        n,
                        packed_len: plan.packed_len,
                        offset,
                        blocks,
                        k: 0,
                        mode,
                        flags,
                    };
                    let event = self.program.local(false, keys, values, packed, launch)?;
                    events.stage("sort.local").push("bitonic_sort_local", event);
                    // Values are positions on entry only: later passes read what was written.
                    mode = mode_bits(K::KIND, order, false);
                }
                Pass::MergeGlobal {
                    k,
                    stride,
                    stages,
                    items,
                } => {
                    let packed = packed.expect("a multi-block plan has a packed array");
                    let event = self
                        .program
                        .merge_global(packed, k, stride, stages, items)?;
                    events
                        .stage("sort.merge")
                        .push("bitonic_merge_global", event);
                }
                Pass::MergeLocal {
                    groups,
                    offset,
                    k,
                    flags,
                } => {
                    let launch = LocalLaunch {
                        groups,
                        n,
                        packed_len: plan.packed_len,
                        offset,
                        blocks: 0,
                        k,
                        mode,
                        flags,
                    };
                    let event = self.program.local(true, keys, values, packed, launch)?;
                    events
                        .stage("sort.merge")
                        .push("bitonic_merge_local", event);
                }
            }
        }
        Ok(events)
    }
}
