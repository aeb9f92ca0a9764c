//! OpenCL views of OpenGL buffers (`cl_khr_gl_sharing`): kernels write what GL draws.

use std::ffi::c_void;
use std::marker::PhantomData;

use bytemuck::Pod;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::cl_mem;

use super::buffer::BufferArg;
use super::context::Context;
use super::error::{Error, Result, ResultExt};

/// A GL buffer object seen from OpenCL, `len` values of `T`.
///
/// Kernels may use it only between [`acquire`](Self::acquire) and [`release`](Self::release);
/// GL must have finished with it before the acquire (`glFinish`, since without
/// `cl_khr_gl_event` nothing else orders the two APIs), and OpenCL must have finished before GL
/// draws from it again.
pub struct GlBuffer<T: Pod> {
    buffer: Buffer<u8>,
    len: usize,
    acquired: bool,
    context: Context,
    _type: PhantomData<T>,
}

impl<T: Pod> GlBuffer<T> {
    /// Wraps the GL buffer object named `gl_name`, which must hold at least `len` values,
    /// in `context` (which must be [GL-shared](Context::is_gl_shared)).
    ///
    /// # Safety
    /// The GL context the OpenCL context was created against must be current, `gl_name` a live
    /// buffer of at least `len` values of `T`, and it must outlive this object.
    pub unsafe fn from_gl(context: &Context, gl_name: u32, len: usize) -> Result<Self> {
        if !context.is_gl_shared() {
            return Err(Error::InvalidBuildInput(
                "a GL buffer can only be shared with an OpenCL context created against the GL \
                 context"
                    .into(),
            ));
        }
        // SAFETY: the context shares the current GL context (checked above, and the caller
        // vouches that it is current); the GL buffer is alive.
        let buffer = unsafe {
            Buffer::<u8>::create_from_gl_buffer(context.cl_context(), CL_MEM_READ_WRITE, gl_name)
        }
        .during("clCreateFromGLBuffer")?;
        Ok(Self {
            buffer,
            len,
            acquired: false,
            context: context.clone(),
            _type: PhantomData,
        })
    }

    /// Enqueues `clEnqueueAcquireGLObjects`: kernels enqueued after it may use the buffer.
    pub fn acquire(&mut self) -> Result<()> {
        if !self.acquired {
            // SAFETY: the mem object is alive and belongs to this queue's context.
            unsafe {
                self.context
                    .queue()
                    .enqueue_acquire_gl_objects(&[self.buffer.get() as *const c_void], &[])
            }
            .during("clEnqueueAcquireGLObjects")?;
            self.acquired = true;
        }
        Ok(())
    }

    /// Enqueues `clEnqueueReleaseGLObjects`: GL may use the buffer once the queue finished.
    pub fn release(&mut self) -> Result<()> {
        if self.acquired {
            // SAFETY: the mem object was acquired by this queue.
            unsafe {
                self.context
                    .queue()
                    .enqueue_release_gl_objects(&[self.buffer.get() as *const c_void], &[])
            }
            .during("clEnqueueReleaseGLObjects")?;
            self.acquired = false;
        }
        Ok(())
    }

    /// Writes `data` to the start of the buffer, blocking until done (the buffer must be
    /// acquired).
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        super::buffer::check_fits(data.len(), self.len)?;
        if data.is_empty() {
            return Ok(());
        }
        let bytes = std::mem::size_of_val(data);
        // SAFETY: `data` fits in the buffer (checked above) and the write is blocking, so the
        // host slice outlives the transfer.
        let event = unsafe {
            cl3::command_queue::enqueue_write_buffer(
                self.context.queue().get(),
                self.buffer.get(),
                opencl3::types::CL_BLOCKING,
                0,
                bytes,
                data.as_ptr().cast(),
                0,
                std::ptr::null(),
            )
        }
        .map_err(opencl3::error_codes::ClError)
        .during("clEnqueueWriteBuffer (GL buffer)")?;
        drop(opencl3::event::Event::new(event));
        Ok(())
    }

    /// Whether OpenCL holds the buffer now.
    pub fn is_acquired(&self) -> bool {
        self.acquired
    }
}

impl<T: Pod> BufferArg<T> for GlBuffer<T> {
    fn cl_mem_checked(&self) -> Result<cl_mem> {
        Ok(self.buffer.get())
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// A buffer kernels write for someone else to read: a device buffer (copied to GL afterwards)
/// or a GL buffer itself (shared).
pub enum OutputBuffer<'a, T: Pod> {
    /// A device buffer of this context.
    Device(&'a mut super::DeviceBuffer<T>),
    /// A GL buffer, acquired for the kernels.
    Gl(&'a mut GlBuffer<T>),
}

impl<T: Pod> OutputBuffer<'_, T> {
    /// Writes `data` to the start of the buffer, blocking until done.
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        match self {
            Self::Device(b) => b.write(data),
            Self::Gl(b) => b.write(data),
        }
    }
}

impl<T: Pod> BufferArg<T> for OutputBuffer<'_, T> {
    fn cl_mem_checked(&self) -> Result<cl_mem> {
        match self {
            Self::Device(b) => b.cl_mem_checked(),
            Self::Gl(b) => b.cl_mem_checked(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Device(b) => BufferArg::len(&**b),
            Self::Gl(b) => b.len,
        }
    }
}
