//! Host memory the device can reach by DMA: a `CL_MEM_ALLOC_HOST_PTR` buffer mapped once for
//! its whole life. Reading a device buffer into it runs at the bus's pinned bandwidth on GPU
//! drivers (NVIDIA allocates such buffers page-locked), where reading into ordinary memory goes
//! through the driver's own staging copy.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;

use bytemuck::Pod;
use opencl3::event::Event;
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE, ClMem,
};
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING};

use super::context::Context;
use super::error::{Error, Result, ResultExt};

/// `len` values of `T` in pinned host memory, mapped for reading and writing from the host.
pub struct PinnedBuffer<T: Pod> {
    buffer: Buffer<T>,
    mapped: *mut T,
    len: usize,
    context: Context,
    _marker: PhantomData<T>,
}

impl<T: Pod> PinnedBuffer<T> {
    /// Allocates and maps `len` values (at least one).
    pub fn new(context: &Context, len: usize) -> Result<Self> {
        let count = len.max(1);
        let bytes = count * size_of::<T>();
        // SAFETY: no host pointer is passed; the driver allocates.
        let buffer = unsafe {
            Buffer::<T>::create(
                context.cl_context(),
                CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                count,
                ptr::null_mut(),
            )
        }
        .during(format!("clCreateBuffer (pinned, {bytes} bytes)"))?;
        let mut mapped: *mut c_void = ptr::null_mut();
        // SAFETY: a blocking map of the whole buffer, kept until Drop unmaps it.
        unsafe {
            context.queue().enqueue_map_buffer(
                &buffer,
                CL_BLOCKING,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                bytes,
                &mut mapped,
                &[],
            )
        }
        .during("clEnqueueMapBuffer (pinned)")?;
        if mapped.is_null() || !(mapped as usize).is_multiple_of(align_of::<T>()) {
            return Err(Error::Unsupported(format!(
                "the driver mapped pinned memory at {mapped:p}, not aligned for the data"
            )));
        }
        Ok(Self {
            buffer,
            mapped: mapped.cast(),
            len,
            context: context.clone(),
            _marker: PhantomData,
        })
    }

    /// The values, for the host to read or write (no device command may use the memory
    /// meanwhile: after a blocking read, or once the events of the non-blocking reads and
    /// writes that use it have completed).
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: the mapping holds `len` values of T, aligned (checked in `new`), alive until
        // Drop; `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.mapped, self.len) }
    }

    /// The values, for the host to read.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: as in `as_mut_slice`, shared.
        unsafe { std::slice::from_raw_parts(self.mapped, self.len) }
    }

    /// The bus's read-back bandwidth into pinned memory, in bytes per second: the best of three
    /// blocking reads of `bytes` (at least 1 MiB) from a device buffer, after one to warm up.
    pub fn read_bandwidth(context: &Context, bytes: usize) -> Result<f64> {
        let len = bytes.max(1 << 20).div_ceil(size_of::<T>());
        let source = super::DeviceBuffer::<T>::zeroed(context, len)?;
        let mut pinned = Self::new(context, len)?;
        source.read_into(pinned.as_mut_slice())?;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let start = std::time::Instant::now();
            source.read_into(pinned.as_mut_slice())?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        Ok((len * size_of::<T>()) as f64 / best)
    }

    /// Starts copying the first [`len`](Self::len) values of `source` (any buffer of the
    /// same context: a device buffer, a gml field's) into this memory without waiting, in
    /// order after the launches already on the queue: on GPU drivers the DMA lands here
    /// directly, with no staging copy by a driver thread. The values are there once the
    /// returned event has completed.
    ///
    /// # Safety
    ///
    /// Until the event completes, the host must not read or write this memory
    /// ([`as_slice`](Self::as_slice)) and the buffer must not be dropped (dropping waits for
    /// the queue, so a drop on the same queue is safe).
    pub unsafe fn enqueue_read_from(&mut self, source: &impl super::BufferArg<T>) -> Result<Event> {
        // SAFETY: forwarded to the caller.
        unsafe { self.enqueue_read_range(source, 0, self.len) }
    }

    /// As [`enqueue_read_from`](Self::enqueue_read_from) for the `len` values of `source`
    /// from `first` on, into the same places here (the rest of this memory untouched).
    ///
    /// # Safety
    ///
    /// As [`enqueue_read_from`](Self::enqueue_read_from).
    pub unsafe fn enqueue_read_range(
        &mut self,
        source: &impl super::BufferArg<T>,
        first: usize,
        len: usize,
    ) -> Result<Event> {
        let end = first.saturating_add(len);
        if end > self.len || end > source.len() {
            return Err(Error::WriteTooLong {
                data: end,
                buffer: self.len.min(source.len()),
            });
        }
        let mem = source.cl_mem_checked()?;
        let offset = first * size_of::<T>();
        let bytes = len * size_of::<T>();
        // SAFETY: the range is inside the mapping, alive while `self` is (the caller keeps it
        // untouched until the event completes), and inside `source`.
        let event = unsafe {
            cl3::command_queue::enqueue_read_buffer(
                self.context.queue().get(),
                mem,
                CL_NON_BLOCKING,
                offset,
                bytes,
                self.mapped.add(first).cast(),
                0,
                ptr::null(),
            )
        }
        .map_err(opencl3::error_codes::ClError)
        .during("clEnqueueReadBuffer (non-blocking, into pinned memory)")?;
        self.context.count_to_host(bytes as u64);
        Ok(Event::new(event))
    }

    /// As [`enqueue_read_from`](Self::enqueue_read_from), blocking until the values are here.
    pub fn read_from(&mut self, source: &impl super::BufferArg<T>) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        // SAFETY: `&mut self` keeps the host off this memory until the wait below returns.
        let event = unsafe { self.enqueue_read_from(source) }?;
        wait_for(std::slice::from_ref(&event))
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Waits for `events` (such as [`PinnedBuffer::enqueue_read_from`]'s), failing with the
/// command's error if one failed.
pub fn wait_for(events: &[Event]) -> Result<()> {
    for event in events {
        event.wait().during("clWaitForEvents")?;
    }
    Ok(())
}

// SAFETY: the buffer owns its mapping alone (the pointer is never shared; `as_slice` and
// `as_mut_slice` borrow `self`), and OpenCL's objects may be used from any thread: moving it
// to another thread moves that sole ownership (the wind's thread fills one, the snow's side
// writes it to its device).
unsafe impl<T: Pod + Send> Send for PinnedBuffer<T> {}

impl<T: Pod> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer is this buffer's mapping; the unmap is waited for before the
        // buffer is released.
        unsafe {
            if self
                .context
                .queue()
                .enqueue_unmap_mem_object(self.buffer.get(), self.mapped.cast(), &[])
                .is_ok()
            {
                let _ = self.context.finish();
            }
        }
    }
}
