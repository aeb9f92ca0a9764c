//! The full sort by radix: stable passes over 4-bit digits, least significant first.

use super::error::{Result, SortError, check_pair_lengths};
use super::keys::{Order, SortKey, mode_bits};
use crate::cl::{Context, DeviceBuffer, Kernel, Program, Source, Timeline, WorkSize};

/// Bits of the key one pass orders by (`BINS` = 16 in `kernels/radix.cl`).
pub const RADIX_DIGIT_BITS: u32 = 4;

/// Pairs one work-item of a pass owns (`ITEMS` in `kernels/radix.cl`).
const ITEMS: usize = 8;

/// Table entries one work-item of a scan owns (`SCAN_ITEMS` in `kernels/radix.cl`).
const SCAN_ITEMS: usize = 16;

/// Work-group sizes tried, largest first: a tile is 8 pairs a work-item.
const GROUPS: [usize; 3] = [256, 128, 64];

/// Sorts key-value pairs on one device by radix: a stable least-significant-digit sort.
///
/// Keys are `u32` or `f32` (in the order of [`SortKey`], as [`BitonicSorter`] sorts them),
/// values `u32`, both sorted in place. **Equal keys keep their order on entry** (the sort is
/// stable), where [`BitonicSorter::sort_pairs`] orders them by value; with the original
/// positions as values ([`sort_with_indices`](Self::sort_with_indices)) the two give the same
/// result.
///
/// A pass orders the pairs by one 4-bit digit in three steps (count each tile's digits, scan
/// the counts, scatter each tile's pairs to their runs), so a sort of 32-bit keys is 8 passes,
/// each reading the pairs twice and writing them once. Where the keys are known to be small
/// ([`set_key_bits`](Self::set_key_bits)), the passes over digits that cannot differ are
/// skipped: a tetrahedron index below 2²² needs 6.
///
/// The sort needs scratch of 8 bytes a pair and a table of 16 counts a tile (64 bytes per
/// 2 048 pairs, and a 4-byte total per 4 096 counts), kept for the next call.
///
/// # Example
///
/// ```
/// use snowsim::cl::{Context, DeviceBuffer, DeviceSelector};
/// use snowsim::sort::{Order, RadixSorter};
///
/// let ctx = Context::from_selector(&DeviceSelector::Default)?;
/// let mut sorter = RadixSorter::new(&ctx)?;
/// let mut keys = DeviceBuffer::from_slice(&ctx, &[3.5f32, -0.0, 3.5, 0.0, -7.0])?;
/// let mut order = DeviceBuffer::<u32>::uninit(&ctx, 5)?;
/// sorter.sort_with_indices(&mut keys, &mut order, Order::Ascending)?;
/// assert_eq!(order.read()?, [4, 1, 3, 0, 2]); // -7, -0, +0, 3.5, 3.5 (stable)
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`BitonicSorter`]: super::BitonicSorter
/// [`BitonicSorter::sort_pairs`]: super::BitonicSorter::sort_pairs
pub struct RadixSorter {
    context: Context,
    count: Kernel,
    scan: Kernel,
    add: Kernel,
    scatter: Kernel,
    /// Work-items of every kernel's work-group (`GROUP`).
    group: usize,
    /// Bits of the (mapped) key that can differ; passes cover the digits below.
    key_bits: u32,
    scratch: Option<Scratch>,
}

/// The buffers a sort of up to `capacity` pairs uses besides the caller's.
struct Scratch {
    capacity: usize,
    keys: DeviceBuffer<u32>,
    values: DeviceBuffer<u32>,
    /// The digit counts, then their scan; then each level's chunk totals.
    levels: Vec<DeviceBuffer<u32>>,
    /// Where the last level's scan writes its one chunk's total, which nothing reads.
    sink: DeviceBuffer<u32>,
}

impl RadixSorter {
    /// Builds the radix kernels for `context`'s device, with the largest work-group (256,
    /// 128 or 64 work-items) its local memory and kernels allow.
    pub fn new(context: &Context) -> Result<Self> {
        let info = context.info();
        let source = Source::embedded("radix.cl", include_str!("../../kernels/radix.cl"))?;
        let mut refused = Vec::new();
        for group in GROUPS {
            if group > info.max_work_group_size || local_bytes(group) > info.local_mem_bytes {
                refused.push(group);
                continue;
            }
            let program = Program::build(
                context,
                std::slice::from_ref(&source),
                &format!("-D GROUP={group}"),
            )?;
            let kernels = [
                program.kernel("radix_count")?,
                program.kernel("radix_scan")?,
                program.kernel("radix_add")?,
                program.kernel("radix_scatter")?,
            ];
            let allowed = kernels
                .iter()
                .map(|k| k.max_group(context))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            if allowed.iter().any(|&a| a < group) {
                refused.push(group);
                continue;
            }
            let [count, scan, add, scatter] = kernels;
            return Ok(Self {
                context: context.clone(),
                count,
                scan,
                add,
                scatter,
                group,
                key_bits: u32::BITS,
                scratch: None,
            });
        }
        Err(SortError::DeviceTooSmall {
            device: info.name.clone(),
            reason: format!(
                "the radix kernels need work-groups of {refused:?} work-items and {} bytes of \
                 local memory for the smallest; it allows {} work-items and {} bytes",
                local_bytes(GROUPS[GROUPS.len() - 1]),
                info.max_work_group_size,
                info.local_mem_bytes
            ),
        })
    }

    /// Work-items of the kernels' work-groups.
    pub fn work_group_size(&self) -> usize {
        self.group
    }

    /// Pairs one work-group ranks in a pass.
    pub fn tile_len(&self) -> usize {
        self.group * ITEMS
    }

    /// The context the kernels were built for.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Declares that the keys, as sorted (an `f32` through its total-order map, a descending
    /// key inverted), agree on every bit from `bits` up, as `u32` keys below `2^bits` do in
    /// either order: the passes over those digits are skipped. Keys that do not agree there
    /// come out sorted by their low `bits` only. At most 32; 32 (the default) sorts by every
    /// bit.
    pub fn set_key_bits(&mut self, bits: u32) {
        self.key_bits = bits.min(u32::BITS);
    }

    /// The passes a sort makes: one a 4-bit digit below the key bits, rounded up to an even
    /// number (at least 2, so that the indices are always written) so that the pairs end
    /// where they began.
    pub fn passes(&self) -> u32 {
        let passes = self.key_bits.div_ceil(RADIX_DIGIT_BITS).max(1);
        passes + passes % 2
    }

    /// Kernel launches a sort of `len` pairs makes, from 2 pairs (one pair with indices is one
    /// fill of its index; without, nothing).
    pub fn launches_for(&self, len: usize) -> usize {
        if len <= 1 {
            return 0;
        }
        // A scan a level, and an addition a level above the first two (the table's chunk
        // offsets are added in the scatter).
        let levels = scan_lengths(self.table_len(len), self.chunk()).len();
        self.passes() as usize * (2 + levels + levels.saturating_sub(2))
    }

    /// Sorts `keys` in `order`, moving `values` with them, in place; equal keys keep their
    /// order. Fails if the lengths differ or exceed 2³¹.
    pub fn sort_pairs<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<Timeline> {
        self.sort(keys, values, order, false)
    }

    /// Sorts `keys` in `order` and writes into `indices` where each sorted key was: afterwards
    /// `keys[i]` is the original `keys[indices[i]]`, equal keys in their order on entry.
    /// `indices` is only written; [`BitonicSorter::permute`](super::BitonicSorter::permute)
    /// applies it to other arrays.
    pub fn sort_with_indices<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        indices: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<Timeline> {
        self.sort(keys, indices, order, true)
    }

    fn chunk(&self) -> usize {
        self.group * SCAN_ITEMS
    }

    fn table_len(&self, len: usize) -> usize {
        len.div_ceil(self.tile_len()) * (1 << RADIX_DIGIT_BITS)
    }

    fn reserve(&mut self, len: usize) -> Result<()> {
        if self.scratch.as_ref().is_none_or(|s| s.capacity < len) {
            self.scratch = None; // release the old one before allocating the larger
            let context = &self.context;
            let levels = scan_lengths(self.table_len(len), self.chunk())
                .into_iter()
                .map(|l| DeviceBuffer::uninit(context, l))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            self.scratch = Some(Scratch {
                capacity: len,
                keys: DeviceBuffer::uninit(context, len)?,
                values: DeviceBuffer::uninit(context, len)?,
                levels,
                sink: DeviceBuffer::uninit(context, 1)?,
            });
        }
        Ok(())
    }

    fn sort<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
        iota: bool,
    ) -> Result<Timeline> {
        let n = check_pair_lengths(keys.len(), values.len())?;
        let mut events = Timeline::default();
        if n <= 1 {
            if n == 1 && iota {
                events
                    .stage("sort.radix")
                    .push("fill", values.enqueue_fill(0)?);
            }
            return Ok(events);
        }
        let passes = self.passes();
        let tiles = n.div_ceil(self.tile_len());
        let group = self.group;
        let chunk = self.chunk();
        let table_len = self.table_len(n);
        let lengths = scan_lengths(table_len, chunk);
        self.reserve(n)?;
        let this = &*self;
        let scratch = this.scratch.as_ref().expect("reserved above");
        for pass in 0..passes {
            let shift = pass * RADIX_DIGIT_BITS;
            let mode = mode_bits(K::KIND, order, iota && pass == 0);
            // Even passes read the caller's buffers, odd ones the scratch.
            let (src_keys, src_values, dst_keys, dst_values) = if pass % 2 == 0 {
                (
                    keys.cl_mem(),
                    values.cl_mem(),
                    scratch.keys.cl_mem(),
                    scratch.values.cl_mem(),
                )
            } else {
                (
                    scratch.keys.cl_mem(),
                    scratch.values.cl_mem(),
                    keys.cl_mem(),
                    values.cl_mem(),
                )
            };
            let table = &scratch.levels[0];
            let stage = events.stage("sort.radix");
            let mut call = this.count.call();
            // SAFETY: uint keys (n of them), then uints, then the table of 16 entries a tile
            // and the tile count, as `radix_count` declares; work-group g reads keys below
            // min(n, (g + 1) tiles) and writes table entries d * tiles + g.
            unsafe {
                call.mem::<u32>(src_keys, n)?
                    .arg(&(n as u32))?
                    .arg(&shift)?
                    .arg(&mode)?
                    .buffer(table)?
                    .arg(&(tiles as u32))?;
            }
            let work = WorkSize {
                global: tiles * group,
                local: group,
            };
            stage.push(this.count.shared_name(), call.enqueue(&this.context, work)?);
            for (level, &len) in lengths.iter().enumerate() {
                let data = &scratch.levels[level];
                let totals = scratch.levels.get(level + 1).unwrap_or(&scratch.sink);
                let chunks = len.div_ceil(chunk);
                let mut call = this.scan.call();
                // SAFETY: the level's buffer (len entries) and the next level's (one entry a
                // chunk; the last level's one chunk writes the sink), as `radix_scan`
                // declares; it guards p < len.
                unsafe {
                    call.buffer(data)?.arg(&(len as u32))?.buffer(totals)?;
                }
                let work = WorkSize {
                    global: chunks * group,
                    local: group,
                };
                stage.push(this.scan.shared_name(), call.enqueue(&this.context, work)?);
            }
            // The table's own chunks get their offsets in the scatter.
            for level in (1..lengths.len().saturating_sub(1)).rev() {
                let len = lengths[level];
                let mut call = this.add.call();
                // SAFETY: the level's buffer (len entries, guarded) and the scanned totals of
                // its chunks, as `radix_add` declares.
                unsafe {
                    call.buffer(&scratch.levels[level])?
                        .arg(&(len as u32))?
                        .buffer(&scratch.levels[level + 1])?;
                }
                let work = WorkSize {
                    global: len.div_ceil(chunk) * group,
                    local: group,
                };
                stage.push(this.add.shared_name(), call.enqueue(&this.context, work)?);
            }
            let mut call = this.scatter.call();
            let chunked = lengths.len() > 1;
            let offsets = scratch.levels.get(1).unwrap_or(&scratch.sink);
            // SAFETY: uint keys and values (n each; values unread in iota mode), uints, the
            // scanned table (16 entries a tile), its chunks' scanned totals (one a chunk; read
            // only when `chunked`), the tile count, and the destination keys and values (n
            // each), as `radix_scatter` declares. Positions come from the scan of every pair's
            // digit, so each pair below n is written once, below n.
            unsafe {
                call.mem::<u32>(src_keys, n)?
                    .mem::<u32>(src_values, n)?
                    .arg(&(n as u32))?
                    .arg(&shift)?
                    .arg(&mode)?
                    .buffer(table)?
                    .buffer(offsets)?
                    .arg(&u32::from(chunked))?
                    .arg(&(tiles as u32))?
                    .mem::<u32>(dst_keys, n)?
                    .mem::<u32>(dst_values, n)?;
            }
            let work = WorkSize {
                global: tiles * group,
                local: group,
            };
            stage.push(
                this.scatter.shared_name(),
                call.enqueue(&this.context, work)?,
            );
        }
        Ok(events)
    }
}

/// Bytes of local memory `radix_scatter` takes with work-groups of `group`: the padded digit
/// counts, the scan's scratch, the tile's keys and values and the runs' bases.
fn local_bytes(group: usize) -> u64 {
    let counts = 16 * group + 16 * group / 16;
    ((counts + group + 2 * group * ITEMS + 16) * 4) as u64
}

/// The length of each level of the table's scan: the table, then one total a chunk of the
/// level below, up to a level of one chunk.
fn scan_lengths(table_len: usize, chunk: usize) -> Vec<usize> {
    let mut lengths = vec![table_len];
    while let Some(&last) = lengths.last()
        && last > chunk
    {
        lengths.push(last.div_ceil(chunk));
    }
    lengths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scan_has_a_level_a_chunk_of_the_one_below() {
        assert_eq!(scan_lengths(16, 4096), [16]);
        assert_eq!(scan_lengths(4096, 4096), [4096]);
        assert_eq!(scan_lengths(4097, 4096), [4097, 2]);
        // 2^24 pairs, tiles of 2048: 8192 tiles, 131 072 counts, 32 chunks.
        assert_eq!(scan_lengths(131_072, 4096), [131_072, 32]);
        // 2^31 pairs with work-groups of 64: tiles of 512, chunks of 1024.
        assert_eq!(scan_lengths(1 << 26, 1024), [1 << 26, 1 << 16, 64]);
    }

    #[test]
    fn local_memory_fits_nvidias_48_kib_at_256() {
        assert!(local_bytes(256) <= 48 * 1024);
        assert!(local_bytes(64) < local_bytes(128));
    }
}
