//! Typed device buffers that count their transfers and their memory.

use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;

use bytemuck::Pod;
use opencl3::event::Event;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::{CL_BLOCKING, CL_NON_BLOCKING, cl_mem};

use super::context::Context;
use super::error::{Error, Result, ResultExt};

/// Anything a kernel can take as a `__global T *` argument: a [`DeviceBuffer`], a
/// [`GlBuffer`](super::GlBuffer), a gml field's buffer.
pub trait BufferArg<T: Pod> {
    /// The OpenCL memory object, or an error when the handle no longer stands for live data
    /// (a gml field whose mesh data was replaced).
    fn cl_mem_checked(&self) -> Result<cl_mem>;
    /// Number of values of `T` it holds.
    fn len(&self) -> usize;
    /// Whether it holds no value.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Starts copying `data` into `target` (a buffer of `context`: a device buffer, a GL
/// buffer, a gml field's) from value `first` on, without waiting, in order on `context`'s
/// queue.
///
/// # Safety
///
/// `data` must stay alive and unchanged until the returned event completes.
pub unsafe fn enqueue_write_at<T: Pod>(
    context: &Context,
    target: &impl BufferArg<T>,
    first: usize,
    data: &[T],
) -> Result<Event> {
    check_fits(first.saturating_add(data.len()), target.len())?;
    let mem = target.cl_mem_checked()?;
    let bytes = std::mem::size_of_val(data);
    // SAFETY: the range is inside `target` (checked above); the caller keeps `data` alive
    // until the event completes.
    let event = unsafe {
        cl3::command_queue::enqueue_write_buffer(
            context.queue().get(),
            mem,
            CL_NON_BLOCKING,
            first * size_of::<T>(),
            bytes,
            data.as_ptr().cast(),
            0,
            ptr::null(),
        )
    }
    .map_err(opencl3::error_codes::ClError)
    .during("clEnqueueWriteBuffer (non-blocking, at an offset)")?;
    context.count_to_device(bytes as u64);
    Ok(Event::new(event))
}

/// Refuses to move `values` values into or out of a buffer of `buffer` values.
pub(super) fn check_fits(values: usize, buffer: usize) -> Result<()> {
    if values > buffer {
        return Err(Error::WriteTooLong {
            data: values,
            buffer,
        });
    }
    Ok(())
}

/// A buffer of `len` values of `T` in a device's global memory.
///
/// `T` is plain old data (`bytemuck::Pod`), so its bytes are what the kernel sees: use
/// `[f32; 4]` for `float4`, `[i32; 4]` for `int4`. Reads and writes are blocking and counted in
/// the context's [`TransferCounters`](super::TransferCounters).
pub struct DeviceBuffer<T: Pod> {
    buffer: Buffer<T>,
    len: usize,
    context: Context,
    _marker: PhantomData<T>,
}

impl<T: Pod> DeviceBuffer<T> {
    /// Allocates `len` values, uninitialised. A zero length allocates one value, since OpenCL
    /// refuses empty buffers; [`len`](Self::len) still says zero.
    pub fn uninit(context: &Context, len: usize) -> Result<Self> {
        let bytes = (len.max(1) as u64).saturating_mul(size_of::<T>() as u64);
        let info = context.info();
        if bytes > info.max_alloc_bytes {
            return Err(Error::BufferTooLarge {
                requested: bytes,
                max_alloc: info.max_alloc_bytes,
                device: info.name.clone(),
            });
        }
        // SAFETY: no host pointer is passed; the size was checked against the device limit.
        let buffer = unsafe {
            Buffer::<T>::create(
                context.cl_context(),
                CL_MEM_READ_WRITE,
                len.max(1),
                ptr::null_mut(),
            )
        }
        .during(format!("clCreateBuffer ({bytes} bytes) on {}", info.name))?;
        context.count_allocation(bytes);
        Ok(Self {
            buffer,
            len,
            context: context.clone(),
            _marker: PhantomData,
        })
    }

    /// Takes over `mem`, a buffer of at least `len` values made in `context` by another call
    /// (an import of external memory): released and uncounted on drop like any other.
    ///
    /// # Safety
    /// `mem` must be a live buffer of `context` holding at least `len` values, whose one
    /// reference passes to the result.
    pub(crate) unsafe fn from_raw(context: &Context, mem: cl_mem, len: usize) -> Self {
        context.count_allocation((len.max(1) * size_of::<T>()) as u64);
        Self {
            buffer: Buffer::new(mem),
            len,
            context: context.clone(),
            _marker: PhantomData,
        }
    }

    /// Allocates a buffer holding a copy of `data`.
    pub fn from_slice(context: &Context, data: &[T]) -> Result<Self> {
        let mut buffer = Self::uninit(context, data.len())?;
        buffer.write(data)?;
        Ok(buffer)
    }

    /// Allocates `len` values, all zero bytes, filled on the device (no host copy).
    pub fn zeroed(context: &Context, len: usize) -> Result<Self> {
        let mut buffer = Self::uninit(context, len)?;
        buffer.fill(T::zeroed())?;
        Ok(buffer)
    }

    /// Sets every value to `value`, blocking until done. Filled on the device when the value's
    /// size is a power of two up to 128 bytes (what `clEnqueueFillBuffer` accepts), written from
    /// the host otherwise.
    pub fn fill(&mut self, value: T) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let size = size_of::<T>();
        if !(size.is_power_of_two() && size <= 128) {
            return self.write(&vec![value; self.len]);
        }
        self.enqueue_fill(value)?
            .wait()
            .during("clWaitForEvents(fill)")
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes of the values.
    pub fn byte_len(&self) -> u64 {
        (self.len * size_of::<T>()) as u64
    }

    /// The OpenCL buffer, to pass as a kernel argument.
    pub fn cl_buffer(&self) -> &Buffer<T> {
        &self.buffer
    }

    /// The OpenCL memory object handle.
    pub fn cl_mem(&self) -> cl_mem {
        self.buffer.get()
    }

    /// The context the buffer belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Enqueues a device-side copy of all of `src` into this buffer (same length), without
    /// waiting; the queue is in order, so later kernels see the copy.
    pub fn copy_from(&mut self, src: &DeviceBuffer<T>) -> Result<Event> {
        if src.len() != self.len() {
            return Err(Error::WriteTooLong {
                data: src.len(),
                buffer: self.len(),
            });
        }
        // A zero-length DeviceBuffer still holds one value.
        let bytes = src.len().max(1) * size_of::<T>();
        // SAFETY: both are live buffers of at least `bytes` bytes; no wait list.
        unsafe {
            self.context.queue().enqueue_copy_buffer(
                &src.buffer,
                &mut self.buffer,
                0,
                0,
                bytes,
                &[],
            )
        }
        .during("clEnqueueCopyBuffer")
    }

    /// Starts reading values `first..first + count` (at least one) back without waiting: the queue goes on,
    /// and [`PendingRead::wait`] (or [`PendingRead::is_ready`]) gives them when the device is
    /// done. This lets a solver test a residual every few iterations without stopping.
    pub fn read_async(&self, first: usize, count: usize) -> Result<PendingRead<T>> {
        if count == 0 || first.checked_add(count).is_none_or(|end| end > self.len) {
            return Err(Error::WriteTooLong {
                data: first.saturating_add(count),
                buffer: self.len,
            });
        }
        let mut out = vec![T::zeroed(); count].into_boxed_slice();
        // SAFETY: `out` is a heap slice that `PendingRead` owns and never moves or frees
        // before the read completes (it waits in `Drop`); the range is inside the buffer.
        let event = unsafe {
            self.context.queue().enqueue_read_buffer(
                &self.buffer,
                CL_NON_BLOCKING,
                first * size_of::<T>(),
                &mut out[..],
                &[],
            )
        }
        .during("clEnqueueReadBuffer (non-blocking)")?;
        self.context.count_to_host((count * size_of::<T>()) as u64);
        Ok(PendingRead {
            out: Some(out),
            count,
            event,
        })
    }

    /// Starts setting every value to `value` without waiting (in order on the queue: later
    /// commands see it); the returned event completes when it is done.
    pub fn enqueue_fill(&mut self, value: T) -> Result<Event> {
        let size = size_of::<T>();
        if !(size.is_power_of_two() && size <= 128) {
            return Err(Error::Unsupported(format!(
                "a fill pattern of {size} bytes (OpenCL fills with 1 to 128 bytes, a power of two)"
            )));
        }
        // SAFETY: the pattern is one value of the buffer's type, copied by OpenCL before the
        // call returns; the range is the whole buffer (at least one value is allocated).
        unsafe {
            self.context.queue().enqueue_fill_buffer(
                &mut self.buffer,
                &[value],
                0,
                self.len.max(1) * size,
                &[],
            )
        }
        .during("clEnqueueFillBuffer")
    }

    /// Starts copying `data` to the start of the buffer without waiting (another device's
    /// field crossing into this one's queue, in order with its kernels); the copy is done once
    /// the returned event has completed.
    ///
    /// # Safety
    ///
    /// `data` must stay alive and unchanged until the event completes (pinned memory held by
    /// its owner until then, say).
    pub unsafe fn enqueue_write_from(&mut self, data: &[T]) -> Result<Event> {
        // SAFETY: forwarded to the caller.
        unsafe { enqueue_write_at(&self.context, self, 0, data) }
    }

    /// Copies `data` to the start of the buffer, blocking until done.
    ///
    /// `data` longer than the buffer is an error (never a write out of bounds).
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        check_fits(data.len(), self.len)?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: `data` fits in the buffer (checked above) and the write is blocking, so the
        // host slice outlives the transfer.
        unsafe {
            self.context
                .queue()
                .enqueue_write_buffer(&mut self.buffer, CL_BLOCKING, 0, data, &[])
        }
        .during("clEnqueueWriteBuffer")?;
        self.context
            .count_to_device(std::mem::size_of_val(data) as u64);
        Ok(())
    }

    /// Reads the first `out.len()` values into `out`, blocking until done (straight into a
    /// mapped GL buffer, say).
    pub fn read_into(&self, out: &mut [T]) -> Result<()> {
        check_fits(out.len(), self.len)?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: `out` fits in the buffer (checked above) and the read is blocking.
        unsafe {
            self.context
                .queue()
                .enqueue_read_buffer(&self.buffer, CL_BLOCKING, 0, out, &[])
        }
        .during("clEnqueueReadBuffer")?;
        self.context
            .count_to_host(std::mem::size_of_val(out) as u64);
        Ok(())
    }

    /// Reads the whole buffer back to the host, blocking until done.
    pub fn read(&self) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); self.len];
        if self.len == 0 {
            return Ok(out);
        }
        // SAFETY: `out` has exactly `len` values and the read is blocking.
        unsafe {
            self.context
                .queue()
                .enqueue_read_buffer(&self.buffer, CL_BLOCKING, 0, &mut out, &[])
        }
        .during("clEnqueueReadBuffer")?;
        self.context.count_to_host(self.byte_len());
        Ok(out)
    }
}

impl<T: Pod> BufferArg<T> for DeviceBuffer<T> {
    fn cl_mem_checked(&self) -> Result<cl_mem> {
        Ok(self.cl_mem())
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// Values being read from the device without blocking ([`DeviceBuffer::read_async`]).
pub struct PendingRead<T: Pod> {
    out: Option<Box<[T]>>,
    count: usize,
    event: Event,
}

impl<T: Pod> PendingRead<T> {
    /// Whether the values have arrived (never blocks).
    pub fn is_ready(&self) -> Result<bool> {
        let status = self
            .event
            .command_execution_status()
            .during("clGetEventInfo(COMMAND_EXECUTION_STATUS)")?;
        if status.0 < 0 {
            return Err(Error::Api {
                call: "non-blocking clEnqueueReadBuffer".into(),
                code: opencl3::error_codes::ClError(status.0),
            });
        }
        Ok(status.0 == opencl3::event::CL_COMPLETE)
    }

    /// Waits for the values and returns them.
    pub fn wait(mut self) -> Result<Vec<T>> {
        self.event.wait().during("clWaitForEvents(read)")?;
        let mut out = self.out.take().map(Vec::from).unwrap_or_default();
        out.truncate(self.count);
        Ok(out)
    }
}

impl<T: Pod> Drop for PendingRead<T> {
    fn drop(&mut self) {
        if self.out.is_some() {
            // The device may still be writing into `out`: wait before freeing it.
            let _ = self.event.wait();
        }
    }
}

impl<T: Pod> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        self.context
            .count_release((self.len.max(1) * size_of::<T>()) as u64);
    }
}

/// A `cl_mem` held with its own reference (`clRetainMemObject`, released on drop): the object
/// cannot be freed, and its handle reused for another allocation, while this lives.
pub struct RetainedMem(cl_mem);

impl RetainedMem {
    /// Takes a reference to the memory object `mem`.
    ///
    /// # Safety
    /// `mem` must be a live memory object.
    pub(crate) unsafe fn retain(mem: cl_mem) -> Result<Self> {
        // SAFETY: the caller guarantees `mem` is live; retaining it keeps it alive for as long
        // as this handle.
        unsafe { cl3::memory::retain_mem_object(mem) }
            .map_err(opencl3::error_codes::ClError)
            .during("clRetainMemObject")?;
        Ok(Self(mem))
    }

    /// The handle.
    pub fn get(&self) -> cl_mem {
        self.0
    }
}

impl Drop for RetainedMem {
    fn drop(&mut self) {
        // SAFETY: this handle retained the object once and releases it once.
        let _ = unsafe { cl3::memory::release_mem_object(self.0) };
    }
}

// SAFETY: OpenCL memory objects may be used and released from any thread.
unsafe impl Send for RetainedMem {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for RetainedMem {}
