//! Errors of the sort module.

use crate::cl;

/// Why a sort, a partial-sort step or a permutation did not run.
#[derive(Debug, thiserror::Error)]
pub enum SortError {
    /// The OpenCL layer failed (build, allocation, launch, …).
    #[error(transparent)]
    Cl(#[from] cl::Error),
    /// Keys and the array sorted along with them have different lengths.
    #[error("keys and values differ in length: {keys} keys but {values} values")]
    LengthMismatch {
        /// Number of keys.
        keys: usize,
        /// Number of values (or indices).
        values: usize,
    },
    /// A permutation's index array and its destination have different lengths.
    #[error("cannot permute into {dst} rows with {indices} indices: the lengths must be equal")]
    PermuteLength {
        /// Number of indices.
        indices: usize,
        /// Number of destination rows.
        dst: usize,
    },
    /// The array is longer than the kernels' 32-bit positions allow.
    #[error("cannot sort {len} elements: at most {max} fit the kernels' 32-bit positions")]
    TooLong {
        /// Elements asked for.
        len: usize,
        /// The largest length the sorter takes.
        max: usize,
    },
    /// A requested block length cannot be used on the device.
    #[error("block length {requested} cannot be used on {device}: {reason}")]
    BlockLen {
        /// The block length asked for.
        requested: usize,
        /// Device name.
        device: String,
        /// What rules it out, with the device's limit.
        reason: String,
    },
    /// `global_bits` is outside 1..=6.
    #[error("global_bits must be between 1 and 6 (2 to 64 elements per work-item), not {0}")]
    GlobalBits(u32),
    /// The device has too little local memory or too small work-groups for the smallest block.
    #[error("{device} cannot run the sort kernels: {reason}")]
    DeviceTooSmall {
        /// Device name.
        device: String,
        /// The limit that is too small.
        reason: String,
    },
}

/// Result of the sort module.
pub type Result<T> = std::result::Result<T, SortError>;

/// The length of a sort of `keys` keys with `values` values: an error unless they are equal
/// and at most [`MAX_LEN`](super::MAX_LEN).
pub(crate) fn check_pair_lengths(keys: usize, values: usize) -> Result<usize> {
    if values != keys {
        return Err(SortError::LengthMismatch { keys, values });
    }
    if keys > super::MAX_LEN {
        return Err(SortError::TooLong {
            len: keys,
            max: super::MAX_LEN,
        });
    }
    Ok(keys)
}
