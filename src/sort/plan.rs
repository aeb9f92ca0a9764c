//! The sequence of kernel launches of a full sort and of the partial-sort steps, separated from
//! the device so that it can be checked on its own.

/// `flags` bits of the local kernels (see kernels/bitonic.cl).
pub(crate) const FLAG_SRC_PACKED: u32 = 1;
pub(crate) const FLAG_DST_PACKED: u32 = 2;
pub(crate) const FLAG_ALTERNATE: u32 = 4;
pub(crate) const FLAG_GATHER: u32 = 8;
pub(crate) const FLAG_REVERSE: u32 = 16;
pub(crate) const FLAG_TIDY: u32 = 32;

/// One kernel launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// `bitonic_sort_local` over `groups` blocks.
    SortLocal {
        groups: usize,
        offset: usize,
        blocks: usize,
        flags: u32,
    },
    /// `bitonic_merge_global`: `stages` strides from `stride` down, of the merge of size `k`.
    MergeGlobal {
        k: usize,
        stride: usize,
        stages: u32,
        items: usize,
    },
    /// `bitonic_merge_local`: strides below the block length of the merge of size `k` (0: every
    /// block ascending), blocks starting at `offset`.
    MergeLocal {
        groups: usize,
        offset: usize,
        k: usize,
        flags: u32,
    },
}

/// Launches of a full sort of `n` elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FullPlan {
    /// Length of the packed scratch array (a power of two), 0 when the sort needs none.
    pub(crate) packed_len: usize,
    pub(crate) passes: Vec<Pass>,
}

/// Plans the full sort of `n` elements with blocks of `block_len` elements in local memory and
/// `2^global_bits` elements per work-item in the global passes.
///
/// Arrays that fit one block are sorted by one launch, straight from keys and values back to
/// them. Longer arrays are padded (virtually: the first launch reads sentinels past `n`) to the
/// next power of two in a packed scratch array: one local sort of all blocks (alternating
/// directions), then for each merge size k from 2·block_len up, the strides ≥ block_len in
/// global passes of up to `global_bits` stages each and the strides below in one local merge;
/// the last local merge writes the first `n` pairs back to keys and values.
pub(crate) fn full_sort(n: usize, block_len: usize, global_bits: u32) -> FullPlan {
    if n == 0 {
        return FullPlan {
            packed_len: 0,
            passes: Vec::new(),
        };
    }
    let padded = n.next_power_of_two();
    if padded <= block_len {
        return FullPlan {
            packed_len: 0,
            passes: vec![Pass::SortLocal {
                groups: 1,
                offset: 0,
                blocks: 1,
                flags: 0,
            }],
        };
    }
    let groups = padded / block_len;
    let mut passes = vec![Pass::SortLocal {
        groups,
        offset: 0,
        blocks: groups,
        flags: FLAG_DST_PACKED | FLAG_ALTERNATE,
    }];
    let mut k = 2 * block_len;
    while k <= padded {
        let mut stride = k / 2;
        let mut remaining = (k / block_len).trailing_zeros();
        while remaining > 0 {
            let stages = remaining.min(global_bits);
            passes.push(Pass::MergeGlobal {
                k,
                stride,
                stages,
                items: padded >> global_bits,
            });
            stride >>= stages;
            remaining -= stages;
        }
        let last = k == padded;
        passes.push(Pass::MergeLocal {
            groups,
            offset: 0,
            k,
            flags: FLAG_SRC_PACKED | if last { 0 } else { FLAG_DST_PACKED },
        });
        k *= 2;
    }
    FullPlan {
        packed_len: padded,
        passes,
    }
}

/// The local step of the partial sort: every block ascending, blocks starting at `offset`
/// (0 in even frames, half a block in odd ones). `None` when no block starts before `n`.
pub(crate) fn partial_local(n: usize, block_len: usize, offset: usize) -> Option<Pass> {
    (n > offset).then(|| Pass::SortLocal {
        groups: (n - offset).div_ceil(block_len),
        offset,
        blocks: 0,
        flags: 0,
    })
}

/// The merge step of the partial sort: each block's two halves, sorted by the previous frame
/// (up to keys that drifted since, which tidying puts back), merged into one ascending run
/// (the second half read in reverse makes them one bitonic sequence). Blocks as in
/// [`partial_local`].
pub(crate) fn partial_merge(n: usize, block_len: usize, offset: usize) -> Option<Pass> {
    (n > offset).then(|| Pass::MergeLocal {
        groups: (n - offset).div_ceil(block_len),
        offset,
        k: 0,
        flags: FLAG_REVERSE | FLAG_TIDY,
    })
}

/// The redistribution step: `ceil(n / block_len)` groups, group g gathering the pieces
/// g, g + blocks, g + 2·blocks, … of `piece_len` elements, so that each group holds a sample
/// spread evenly over the whole array.
pub(crate) fn redistribute(n: usize, block_len: usize) -> Option<Pass> {
    let blocks = n.div_ceil(block_len);
    (blocks > 0).then_some(Pass::SortLocal {
        groups: blocks,
        offset: 0,
        blocks,
        flags: FLAG_GATHER,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_arrays_take_one_launch() {
        assert!(full_sort(0, 4096, 5).passes.is_empty());
        for n in [1, 2, 3, 1000, 4096] {
            let plan = full_sort(n, 4096, 5);
            assert_eq!(plan.passes.len(), 1, "{n}");
            assert_eq!(plan.packed_len, 0);
        }
    }

    #[test]
    fn large_arrays_cover_every_stride_once_in_order() {
        let plan = full_sort((1 << 24) - 3, 4096, 5);
        assert_eq!(plan.packed_len, 1 << 24);
        // 1 local sort + 12 local merges + sum over j = 1..12 of ceil(j / 5) global passes.
        assert_eq!(plan.passes.len(), 1 + 12 + 21);
        let mut expected_k = 8192;
        let mut next_stride = expected_k / 2;
        for pass in &plan.passes[1..] {
            match *pass {
                Pass::MergeGlobal {
                    k,
                    stride,
                    stages,
                    items,
                } => {
                    assert_eq!((k, stride), (expected_k, next_stride));
                    assert!((1..=5).contains(&stages));
                    assert_eq!(items, (1 << 24) >> 5);
                    next_stride = stride >> stages;
                }
                Pass::MergeLocal {
                    k, flags, groups, ..
                } => {
                    assert_eq!((k, next_stride, groups), (expected_k, 2048, 4096));
                    assert_eq!(flags & FLAG_DST_PACKED == 0, k == 1 << 24);
                    expected_k *= 2;
                    next_stride = expected_k / 2;
                }
                Pass::SortLocal { .. } => panic!("only the first pass sorts blocks"),
            }
        }
        assert_eq!(expected_k, 1 << 25);
    }

    #[test]
    fn partial_steps_cover_the_array() {
        assert_eq!(
            partial_local(10_000, 4096, 0),
            Some(Pass::SortLocal {
                groups: 3,
                offset: 0,
                blocks: 0,
                flags: 0
            })
        );
        assert_eq!(
            partial_local(10_000, 4096, 2048),
            Some(Pass::SortLocal {
                groups: 2,
                offset: 2048,
                blocks: 0,
                flags: 0
            })
        );
        assert_eq!(partial_local(2048, 4096, 2048), None);
        assert_eq!(
            partial_merge(10_000, 4096, 2048),
            Some(Pass::MergeLocal {
                groups: 2,
                offset: 2048,
                k: 0,
                flags: FLAG_REVERSE | FLAG_TIDY
            })
        );
        assert_eq!(
            redistribute(10_000, 4096),
            Some(Pass::SortLocal {
                groups: 3,
                offset: 0,
                blocks: 3,
                flags: FLAG_GATHER
            })
        );
        assert_eq!(redistribute(0, 4096), None);
    }
}
