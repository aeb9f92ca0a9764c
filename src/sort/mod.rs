//! Sorting on the device: a full key-value sort by bitonic network or by radix, and the
//! incremental partial sort of Vestre's thesis (chapter 5) that keeps particles nearly sorted
//! frame after frame.
//!
//! - [`BitonicSorter`] sorts `u32` or `f32` keys (see [`SortKey`] for `-0.0` and NaN) with
//!   `u32` values, ascending or descending, any length, in place on the device; with
//!   [`sort_with_indices`](BitonicSorter::sort_with_indices) and
//!   [`permute`](BitonicSorter::permute) it reorders particle arrays (`float4`) by key.
//! - [`RadixSorter`] sorts the same keys stably, 4 bits a pass (`kernels/radix.cl`): at 2^24
//!   pairs on an H100 it takes 0.37 of the bitonic sort's time, about `torch.sort` + gather's
//!   (`benches/RESULTS.md`). The simulation's full sorts use it.
//! - [`PartialSorter`] runs one cheap step per frame: a merge (or sort) of blocks whose
//!   boundaries alternate by half a block, and every few frames a redistribution step that
//!   moves elements across the whole array. [`Sortedness`] measures how close to sorted the
//!   result is.
//! - [`check`] validates all three against the CPU's `slice::sort_by` (`snowsim sort check`);
//!   [`bench`](mod@bench) times them with OpenCL profiling (`snowsim sort bench`).
//!
//! The bitonic kernels live in `kernels/bitonic.cl` (see its header for the packing of pairs
//! into 64-bit integers, the padding sentinels and the register/local-memory layout), the
//! radix kernels in `kernels/radix.cl` (its header: the passes, the tiles, the ranking).
//!
//! ```
//! use snowsim::cl::{Context, DeviceBuffer, DeviceSelector};
//! use snowsim::sort::{BitonicSorter, Order};
//!
//! let ctx = Context::from_selector(&DeviceSelector::Default)?;
//! let mut sorter = BitonicSorter::new(&ctx)?;
//! let mut keys = DeviceBuffer::from_slice(&ctx, &[30u32, 10, 20])?;
//! let mut values = DeviceBuffer::from_slice(&ctx, &[3u32, 1, 2])?;
//! sorter.sort_pairs(&mut keys, &mut values, Order::Descending)?;
//! assert_eq!((keys.read()?, values.read()?), (vec![30, 20, 10], vec![3, 2, 1]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bench;
mod bitonic;
pub mod check;
mod error;
pub mod inputs;
mod keys;
mod partial;
mod permute;
mod plan;
mod program;
mod radix;
pub mod reference;
mod sortedness;

pub use bitonic::BitonicSorter;
pub use error::{Result, SortError};
pub use keys::{KeyKind, Order, SortKey, compare};
pub use partial::{
    BlockPhase, DEFAULT_REDISTRIBUTE_EVERY, LocalStep, PartialConfig, PartialSorter, PartialStep,
};
pub use permute::Permutable;
pub use program::{
    DEFAULT_GLOBAL_BITS, DEFAULT_MAX_BLOCK_LEN, ELEMENTS_PER_ITEM, MAX_LEN, MIN_BLOCK_LEN,
    NVIDIA_GLOBAL_BITS, PIECE_LEN, SortConfig,
};
pub use radix::{RADIX_DIGIT_BITS, RadixSorter};
pub use sortedness::Sortedness;
