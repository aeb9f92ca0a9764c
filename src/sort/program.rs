//! Building kernels/bitonic.cl for one device, with the block length chosen for it.

use super::error::{Result, SortError};
use crate::cl::{Context, DeviceType, Kernel, Program, Source, WorkSize};

/// Largest block (elements sorted in local memory by one work-group) chosen by default. It fills
/// 34 KiB of local memory with packed 8-byte pairs, which fits the 48 KiB that NVIDIA and AMD
/// GPUs give a work-group and leaves room for several groups per compute unit.
pub const DEFAULT_MAX_BLOCK_LEN: usize = 4096;

/// Smallest block length: two redistribution pieces, and 4 work-items of 16 elements.
pub const MIN_BLOCK_LEN: usize = 64;

/// Elements one work-item of the local kernels owns (the kernels' `LOCAL_BITS` = 4).
pub const ELEMENTS_PER_ITEM: usize = 16;

/// Elements in one piece of the redistribution step: 128 bytes of `u32` keys, one coalesced
/// memory transaction (the thesis's piece size).
pub const PIECE_LEN: usize = 32;

/// Default log2 of the elements one work-item of a global merge pass owns: 32 elements, up to
/// five stages of the network per pass over global memory (118 registers on an H100).
pub const DEFAULT_GLOBAL_BITS: u32 = 5;

/// Default on NVIDIA GPUs: 64 elements, six stages per pass. Their 255 registers per work-item
/// hold them without spilling (250 on an H100), and the fewer passes make sorts of 2^24 pairs
/// and more 5–6 % faster there.
pub const NVIDIA_GLOBAL_BITS: u32 = 6;

/// Longest array the sorter takes: positions are 32-bit in the kernels.
pub const MAX_LEN: usize = 1 << 31;

/// Work-group size of the global merge and permute kernels.
const GLOBAL_GROUP: usize = 256;

/// Bytes of local memory left free for the implementation's own use.
const LOCAL_MEM_MARGIN: u64 = 1024;

/// How to build the sort kernels; the default lets the device decide everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SortConfig {
    /// Elements one work-group sorts in local memory: a power of two, at least
    /// [`MIN_BLOCK_LEN`]. `None` picks the largest the device allows, at most
    /// [`DEFAULT_MAX_BLOCK_LEN`]. Smaller blocks exercise the global passes on small arrays.
    pub block_len: Option<usize>,
    /// log2 of the elements per work-item in the global merge passes, 1..=6: more stages per
    /// pass over memory, more registers. `None` picks [`NVIDIA_GLOBAL_BITS`] on NVIDIA GPUs and
    /// [`DEFAULT_GLOBAL_BITS`] elsewhere.
    pub global_bits: Option<u32>,
}

/// The sort kernels built for one device.
pub(crate) struct SortProgram {
    pub(crate) context: Context,
    pub(crate) block_len: usize,
    pub(crate) global_bits: u32,
    pub(crate) sort_local: Kernel,
    pub(crate) merge_local: Kernel,
    pub(crate) merge_global: Kernel,
    pub(crate) permute_float4: Kernel,
    pub(crate) permute_u32: Kernel,
    pub(crate) permute_u64: Kernel,
    /// Largest work-group size `bitonic_merge_global` allows, rounded down to a power of two
    /// and capped at 256.
    global_group: usize,
}

impl SortProgram {
    /// Builds the kernels for `context`'s device.
    pub(crate) fn build(context: &Context, config: &SortConfig) -> Result<Self> {
        let info = context.info();
        let global_bits = config.global_bits.unwrap_or(
            if info.device_type == DeviceType::Gpu && info.vendor.to_uppercase().contains("NVIDIA")
            {
                NVIDIA_GLOBAL_BITS
            } else {
                DEFAULT_GLOBAL_BITS
            },
        );
        if !(1..=6).contains(&global_bits) {
            return Err(SortError::GlobalBits(global_bits));
        }
        let limit = block_len_limit(info.local_mem_bytes, info.max_work_group_size);
        let mut block_len = match config.block_len {
            Some(requested) => {
                check_block_len(
                    requested,
                    limit,
                    info.local_mem_bytes,
                    info.max_work_group_size,
                )
                .map_err(|reason| SortError::BlockLen {
                    requested,
                    device: info.name.clone(),
                    reason,
                })?;
                requested
            }
            None => limit.min(DEFAULT_MAX_BLOCK_LEN),
        };
        if block_len < MIN_BLOCK_LEN {
            return Err(SortError::DeviceTooSmall {
                device: info.name.clone(),
                reason: format!(
                    "{} bytes of local memory and work-groups of {} allow blocks of {block_len} \
                     elements, fewer than {MIN_BLOCK_LEN}",
                    info.local_mem_bytes, info.max_work_group_size
                ),
            });
        }
        let source = Source::embedded("bitonic.cl", include_str!("../../kernels/bitonic.cl"))?;
        loop {
            let options = format!(
                "-D BLOCK_LEN={block_len} -D GLOBAL_BITS={global_bits} -D PIECE_LEN={PIECE_LEN}"
            );
            let program = Program::build(context, std::slice::from_ref(&source), &options)?;
            let sort_local = program.kernel("bitonic_sort_local")?;
            let merge_local = program.kernel("bitonic_merge_local")?;
            let group = block_len / ELEMENTS_PER_ITEM;
            let allowed = [&sort_local, &merge_local]
                .into_iter()
                .map(|k| k.max_group(context))
                .collect::<std::result::Result<Vec<_>, _>>()?
                .into_iter()
                .min()
                .unwrap_or(0);
            if allowed < group {
                // Too many registers for a group this large: fewer, smaller blocks.
                let smaller = prev_power_of_two(allowed * ELEMENTS_PER_ITEM);
                if config.block_len.is_some() || smaller < MIN_BLOCK_LEN {
                    return Err(SortError::BlockLen {
                        requested: block_len,
                        device: info.name.clone(),
                        reason: format!(
                            "the local kernels allow work-groups of {allowed} work-items, \
                             and a block of {block_len} needs {group}"
                        ),
                    });
                }
                block_len = smaller;
                continue;
            }
            let merge_global = program.kernel("bitonic_merge_global")?;
            let global_group = WorkSize::for_kernel(context, &merge_global, GLOBAL_GROUP)?.local;
            return Ok(Self {
                context: context.clone(),
                block_len,
                global_bits,
                sort_local,
                merge_local,
                merge_global,
                permute_float4: program.kernel("permute_float4")?,
                permute_u32: program.kernel("permute_u32")?,
                permute_u64: program.kernel("permute_u64")?,
                global_group: prev_power_of_two(global_group).max(1),
            });
        }
    }

    /// Work-items of a local-kernel work-group.
    pub(crate) fn group_size(&self) -> usize {
        self.block_len / ELEMENTS_PER_ITEM
    }

    /// Work-group size for `items` work-items of `bitonic_merge_global` (`items` is a power of
    /// two, so the result divides it).
    pub(crate) fn global_group(&self, items: usize) -> usize {
        self.global_group.min(items).max(1)
    }
}

/// Largest block length that `local_mem_bytes` of local memory (8 bytes per element plus one
/// padding slot every 16) and work-groups of `max_work_group` work-items allow.
pub(crate) fn block_len_limit(local_mem_bytes: u64, max_work_group: usize) -> usize {
    let by_memory = local_mem_bytes.saturating_sub(LOCAL_MEM_MARGIN) / 17 * 2;
    let by_memory = usize::try_from(by_memory).unwrap_or(usize::MAX);
    let by_group = max_work_group.saturating_mul(ELEMENTS_PER_ITEM);
    prev_power_of_two(by_memory.min(by_group).min(MAX_LEN))
}

/// Why `requested` is not a usable block length, if it is not.
fn check_block_len(
    requested: usize,
    limit: usize,
    local_mem_bytes: u64,
    max_work_group: usize,
) -> std::result::Result<(), String> {
    if !requested.is_power_of_two() || requested < MIN_BLOCK_LEN {
        return Err(format!(
            "it must be a power of two of at least {MIN_BLOCK_LEN}"
        ));
    }
    if requested > limit {
        return Err(format!(
            "the device allows at most {limit} ({local_mem_bytes} bytes of local memory, \
             work-groups of at most {max_work_group} work-items, {ELEMENTS_PER_ITEM} elements each)"
        ));
    }
    Ok(())
}

/// Largest power of two ≤ `x`, or 0 for 0.
fn prev_power_of_two(x: usize) -> usize {
    if x == 0 {
        0
    } else {
        1 << (usize::BITS - 1 - x.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_length_fits_local_memory_and_work_groups() {
        // NVIDIA: 48 KiB of local memory, 1024 work-items.
        assert_eq!(block_len_limit(48 * 1024, 1024), 4096);
        // 64 KiB (AMD) still gives 4096: 8192 pairs with padding need 68 KiB.
        assert_eq!(block_len_limit(64 * 1024, 1024), 4096);
        // PoCL: 1 MiB, 4096 work-items.
        assert_eq!(block_len_limit(1 << 20, 4096), 65536);
        // Work-groups of 64 limit blocks to 1024.
        assert_eq!(block_len_limit(1 << 20, 64), 1024);
        assert_eq!(block_len_limit(0, 0), 0);
    }

    #[test]
    fn requested_block_lengths_are_checked() {
        assert!(check_block_len(256, 4096, 49152, 1024).is_ok());
        assert!(
            check_block_len(100, 4096, 49152, 1024)
                .unwrap_err()
                .contains("power of two")
        );
        assert!(check_block_len(32, 4096, 49152, 1024).is_err());
        let err = check_block_len(8192, 4096, 49152, 1024).unwrap_err();
        assert!(
            err.contains("at most 4096") && err.contains("49152"),
            "{err}"
        );
        assert_eq!(prev_power_of_two(1000), 512);
        assert_eq!(prev_power_of_two(1024), 1024);
    }
}

/// Scalar arguments of one `bitonic_sort_local` or `bitonic_merge_local` launch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocalLaunch {
    /// Work-groups (blocks).
    pub(crate) groups: usize,
    /// Length of keys and values.
    pub(crate) n: usize,
    /// Length of the packed array (0 when none is used).
    pub(crate) packed_len: usize,
    /// First position of block 0.
    pub(crate) offset: usize,
    /// Block count of a redistribution (sort only).
    pub(crate) blocks: usize,
    /// Merge size (merge only; 0: every block ascending).
    pub(crate) k: usize,
    pub(crate) mode: u32,
    pub(crate) flags: u32,
}

impl SortProgram {
    /// Enqueues `bitonic_sort_local` (`merge` false) or `bitonic_merge_local` (`merge` true).
    ///
    /// `packed` must hold at least `launch.packed_len` values when given; `keys` and `values`
    /// at least `launch.n` values each. Positions beyond those lengths are never touched.
    pub(crate) fn local<K: bytemuck::Pod>(
        &self,
        merge: bool,
        keys: &crate::cl::DeviceBuffer<K>,
        values: &crate::cl::DeviceBuffer<u32>,
        packed: Option<&crate::cl::DeviceBuffer<u64>>,
        launch: LocalLaunch,
    ) -> Result<opencl3::event::Event> {
        debug_assert_eq!(size_of::<K>(), 4);
        debug_assert!(keys.len() >= launch.n && values.len() >= launch.n);
        debug_assert!(packed.is_none_or(|p| p.len() >= launch.packed_len));
        let kernel = if merge {
            &self.merge_local
        } else {
            &self.sort_local
        };
        let to_u32 = |x: usize| x as u32; // all lengths are ≤ MAX_LEN = 2^31, checked by callers
        let mut call = kernel.call();
        // SAFETY: the arguments follow the kernels' signatures in kernels/bitonic.cl: three
        // buffers (uint keys, uint values, ulong packed) then uints. The kernels touch keys and
        // values only below `n` (at most their length) and `packed` only below `packed_len`
        // (at most its length; checked by the callers); without a
        // packed array no flag makes them read or write it, so the keys buffer stands in.
        unsafe {
            call.buffer(keys)?.buffer(values)?;
            match packed {
                Some(p) => call.buffer(p)?,
                // No packed array: the kernel never touches this argument, so the keys stand
                // in as a zero-length array of packed pairs.
                None => call.mem::<u64>(keys.cl_mem(), 0)?,
            };
            call.arg(&to_u32(launch.n))?
                .arg(&to_u32(launch.packed_len))?
                .arg(&to_u32(launch.offset))?;
            if merge {
                call.arg(&to_u32(launch.k))?;
            } else {
                call.arg(&to_u32(launch.blocks))?;
            }
            call.arg(&launch.mode)?.arg(&launch.flags)?;
        }
        let group = self.group_size();
        let work = WorkSize {
            global: launch.groups * group,
            local: group,
        };
        Ok(call.enqueue(&self.context, work)?)
    }

    /// Enqueues `bitonic_merge_global` on the first `items << global_bits` values of `packed`.
    pub(crate) fn merge_global(
        &self,
        packed: &crate::cl::DeviceBuffer<u64>,
        k: usize,
        stride: usize,
        stages: u32,
        items: usize,
    ) -> Result<opencl3::event::Event> {
        debug_assert!(packed.len() >= items << self.global_bits);
        let mut call = self.merge_global.call();
        // SAFETY: one ulong buffer then three uints, as the kernel declares; work-item t touches
        // positions below (t + 1) << global_bits ≤ packed.len().
        unsafe {
            call.buffer(packed)?
                .arg(&(k as u32))?
                .arg(&(stride as u32))?
                .arg(&stages)?;
        }
        let work = WorkSize {
            global: items,
            local: self.global_group(items),
        };
        Ok(call.enqueue(&self.context, work)?)
    }
}
