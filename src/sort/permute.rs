//! Applying a sort's order to other arrays: `dst[i] = src[indices[i]]` on the device.

use bytemuck::Pod;

use super::error::{Result, SortError};
use super::program::{MAX_LEN, SortProgram};
use crate::cl::{DeviceBuffer, Kernel, Timeline, WorkSize};

mod sealed {
    pub trait Sealed {}
    impl Sealed for [f32; 4] {}
    impl Sealed for u32 {}
    impl Sealed for f32 {}
    impl Sealed for u64 {}
}

/// The kernel that moves an element type: which width of row it copies.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowWidth {
    /// A `float4` (16 bytes).
    Float4,
    /// 32 bits.
    Word,
    /// 64 bits.
    Long,
}

/// Element types a permutation moves: `[f32; 4]` (a `float4`, as particle positions and
/// velocities are stored), `u32`, `f32` and `u64` (the snow a parcel carries in suspension).
pub trait Permutable: Pod + sealed::Sealed {
    #[doc(hidden)]
    const WIDTH: RowWidth;
}

impl Permutable for [f32; 4] {
    const WIDTH: RowWidth = RowWidth::Float4;
}

impl Permutable for u32 {
    const WIDTH: RowWidth = RowWidth::Word;
}

impl Permutable for f32 {
    const WIDTH: RowWidth = RowWidth::Word;
}

impl Permutable for u64 {
    const WIDTH: RowWidth = RowWidth::Long;
}

/// Enqueues `dst[i] = src[indices[i]]` for every `i < dst.len()`.
///
/// An index at or past `src.len()` never reads out of bounds: that row is filled with NaNs
/// (`float4`) or all-ones bits (32- and 64-bit elements).
pub(crate) fn permute<T: Permutable>(
    program: &SortProgram,
    src: &DeviceBuffer<T>,
    indices: &DeviceBuffer<u32>,
    dst: &mut DeviceBuffer<T>,
) -> Result<Timeline> {
    if indices.len() != dst.len() {
        return Err(SortError::PermuteLength {
            indices: indices.len(),
            dst: dst.len(),
        });
    }
    let n = dst.len();
    for len in [n, src.len()] {
        if len > MAX_LEN {
            return Err(SortError::TooLong { len, max: MAX_LEN });
        }
    }
    let mut events = Timeline::default();
    if n == 0 {
        return Ok(events);
    }
    let kernel: &Kernel = match T::WIDTH {
        RowWidth::Float4 => &program.permute_float4,
        RowWidth::Word => &program.permute_u32,
        RowWidth::Long => &program.permute_u64,
    };
    let work = WorkSize::for_kernel(&program.context, kernel, n)?;
    let mut call = kernel.call();
    // SAFETY: src, indices and dst are buffers of T (float4, 32- or 64-bit), u32 and T, then two
    // uints, as the kernels declare; work-items at or past n return at once, and reads from src
    // are guarded by src_len.
    unsafe {
        call.buffer(src)?
            .buffer(indices)?
            .buffer(dst)?
            .arg(&(n as u32))?
            .arg(&(src.len() as u32))?;
    }
    let event = call.enqueue(&program.context, work)?;
    events
        .stage("sort.permute")
        .push(kernel.shared_name(), event);
    Ok(events)
}
