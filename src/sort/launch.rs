//! Kernel launches whose failures are values (opencl3's `ExecuteKernel` panics on a bad
//! argument), and a device-side buffer copy.

use std::ptr;

use bytemuck::Pod;
use opencl3::command_queue::enqueue_copy_buffer;
use opencl3::error_codes::ClError;
use opencl3::event::Event;
use opencl3::kernel::Kernel;
use opencl3::memory::ClMem;

use crate::cl::{self, Context, DeviceBuffer};

/// Arguments of one kernel launch, set in order.
pub(crate) struct KernelCall<'k> {
    kernel: &'k Kernel,
    name: &'static str,
    next: u32,
}

impl<'k> KernelCall<'k> {
    pub(crate) fn new(kernel: &'k Kernel, name: &'static str) -> Self {
        Self {
            kernel,
            name,
            next: 0,
        }
    }

    /// Sets the next argument to a scalar.
    ///
    /// # Safety
    /// `T` must be the type of the kernel's next argument (`uint` for `u32`).
    pub(crate) unsafe fn scalar<T>(&mut self, value: &T) -> Result<&mut Self, cl::Error> {
        // SAFETY: the caller guarantees the argument type; `value` is read during the call only.
        unsafe { self.kernel.set_arg(self.next, value) }
            .map_err(|code| self.error("clSetKernelArg", code))?;
        self.next += 1;
        Ok(self)
    }

    /// Sets the next argument to a buffer.
    ///
    /// # Safety
    /// The kernel's next argument must be a `__global` pointer to values laid out as `T`, and
    /// the kernel must stay within the buffer's length for the sizes it is launched with.
    pub(crate) unsafe fn buffer<T: Pod>(
        &mut self,
        buffer: &DeviceBuffer<T>,
    ) -> Result<&mut Self, cl::Error> {
        let mem = buffer.cl_buffer().get();
        // SAFETY: a cl_mem handle is what a __global pointer argument takes; the caller
        // guarantees the layout and the bounds.
        unsafe { self.scalar(&mem) }
    }

    /// Enqueues the kernel over `global` work-items in groups of `local`.
    ///
    /// # Safety
    /// Every argument must have been set as the kernel expects, and the kernel must stay within
    /// its buffers for these sizes.
    pub(crate) unsafe fn enqueue(
        &self,
        context: &Context,
        global: usize,
        local: usize,
    ) -> Result<Event, cl::Error> {
        let global = [global];
        let local = [local];
        // SAFETY: one dimension, sizes live across the call; the caller guarantees the arguments.
        unsafe {
            context.queue().enqueue_nd_range_kernel(
                self.kernel.get(),
                1,
                ptr::null(),
                global.as_ptr(),
                local.as_ptr(),
                &[],
            )
        }
        .map_err(|code| self.error("clEnqueueNDRangeKernel", code))
    }

    fn error(&self, call: &str, code: ClError) -> cl::Error {
        cl::Error::Api {
            call: format!("{call}({}, argument {})", self.name, self.next),
            code,
        }
    }
}

/// Enqueues a device-side copy of all of `src` into `dst` (same length), without waiting.
pub(crate) fn copy_buffer<T: Pod>(
    context: &Context,
    src: &DeviceBuffer<T>,
    dst: &mut DeviceBuffer<T>,
) -> Result<Event, cl::Error> {
    if src.len() != dst.len() {
        return Err(cl::Error::WriteTooLong {
            data: src.len(),
            buffer: dst.len(),
        });
    }
    // A zero-length DeviceBuffer still holds one value.
    let bytes = src.len().max(1) * size_of::<T>();
    // SAFETY: both handles are live buffers of at least `bytes` bytes, there is no wait list,
    // and the returned event is wrapped (and so released) by `Event`.
    let event = unsafe {
        enqueue_copy_buffer(
            context.queue().get(),
            src.cl_buffer().get(),
            dst.cl_buffer().get(),
            0,
            0,
            bytes,
            0,
            ptr::null(),
        )
    }
    .map_err(|code| cl::Error::Api {
        call: "clEnqueueCopyBuffer".to_string(),
        code: ClError(code),
    })?;
    Ok(Event::new(event))
}
