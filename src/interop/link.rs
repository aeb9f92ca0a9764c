//! One GL buffer fed by OpenCL: shared (`clCreateFromGLBuffer`, acquired and released around
//! the kernels) or copied (a device buffer read back into the mapped GL buffer every frame).

use std::ffi::c_void;
use std::time::Duration;

use glow::HasContext;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::CL_BLOCKING;

use crate::cl;

use super::compute::ComputeContext;
use super::{Error, Result, Transfer};

/// A GL buffer of `len` float4 and the OpenCL buffer kernels write for it.
///
/// Per frame: [`acquire`](Self::acquire), run kernels on [`cl_buffer`](Self::cl_buffer),
/// [`publish`](Self::publish); after `publish` GL may draw from the GL buffer.
pub struct GlLink {
    kind: Kind,
    gl_buffer: glow::Buffer,
    len: usize,
    acquired: bool,
    /// Bytes copied device → host → GL so far (copy mode).
    copied_bytes: u64,
    /// Whether mapping the GL buffer failed once and the slower two-copy path is used.
    map_failed: bool,
}

enum Kind {
    /// `clCreateFromGLBuffer` on the GL buffer itself: no copy at all.
    Shared(Buffer<[f32; 4]>),
    /// A device buffer of its own, read back every frame.
    Copied(Buffer<[f32; 4]>),
}

impl GlLink {
    /// Links `gl_buffer` (which must hold at least `len` float4) to a new OpenCL buffer.
    ///
    /// `Transfer::Share` needs a context created against the current GL context; the caller
    /// ([`super::open`]) guarantees that, having checked `cl_khr_gl_sharing` first.
    pub fn new(
        compute: &ComputeContext,
        transfer: Transfer,
        gl_buffer: glow::Buffer,
        len: usize,
    ) -> Result<Self> {
        let kind = match transfer {
            Transfer::Share => {
                if !compute.is_gl_shared() {
                    return Err(Error::Internal(
                        "a shared GL buffer needs a GL-sharing OpenCL context".into(),
                    ));
                }
                // SAFETY: the context was created against the current GL context with
                // cl_khr_gl_sharing (checked from the device's extension list), and the GL
                // buffer is alive and at least `len` float4 long.
                let buffer = unsafe {
                    Buffer::<[f32; 4]>::create_from_gl_buffer(
                        compute.cl_context(),
                        CL_MEM_READ_WRITE,
                        gl_buffer.0.get(),
                    )
                }
                .map_err(|code| cl::Error::Api {
                    call: "clCreateFromGLBuffer".into(),
                    code,
                })?;
                Kind::Shared(buffer)
            }
            Transfer::Copy => Kind::Copied(compute.float4_buffer(len)?),
        };
        Ok(Self {
            kind,
            gl_buffer,
            len,
            acquired: false,
            copied_bytes: 0,
            map_failed: false,
        })
    }

    /// The OpenCL buffer kernels write: the shared GL buffer, or the device buffer that is
    /// copied.
    pub fn cl_buffer(&self) -> &Buffer<[f32; 4]> {
        match &self.kind {
            Kind::Shared(b) | Kind::Copied(b) => b,
        }
    }

    /// The OpenCL buffer, for kernels and commands that write it.
    pub fn cl_buffer_mut(&mut self) -> &mut Buffer<[f32; 4]> {
        match &mut self.kind {
            Kind::Shared(b) | Kind::Copied(b) => b,
        }
    }

    /// Number of float4 values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the link holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes copied from the device into GL so far (zero when shared).
    pub fn copied_bytes(&self) -> u64 {
        self.copied_bytes
    }

    /// Makes the buffer OpenCL's before kernels write it: in share mode waits for GL to finish
    /// with it (`glFinish`, as `cl_khr_gl_sharing` requires without `cl_khr_gl_event`) and
    /// enqueues `clEnqueueAcquireGLObjects`; in copy mode does nothing.
    pub fn acquire(&mut self, compute: &ComputeContext, gl: &glow::Context) -> Result<()> {
        if let Kind::Shared(buffer) = &self.kind
            && !self.acquired
        {
            // SAFETY: GL is current on this thread; the mem object is alive.
            unsafe {
                gl.finish();
                compute
                    .queue()
                    .enqueue_acquire_gl_objects(&[buffer.get() as *const c_void], &[])
            }
            .map_err(|code| cl::Error::Api {
                call: "clEnqueueAcquireGLObjects".into(),
                code,
            })?;
        }
        self.acquired = true;
        Ok(())
    }

    /// Hands the kernels' output to GL: in share mode `clEnqueueReleaseGLObjects` then
    /// `clFinish`; in copy mode one blocking read from the device straight into the GL buffer
    /// mapped for writing (`glMapBufferRange` with `MAP_INVALIDATE_BUFFER_BIT`), so the data
    /// crosses to the host once. Returns the time spent.
    pub fn publish(&mut self, compute: &ComputeContext, gl: &glow::Context) -> Result<Duration> {
        let start = std::time::Instant::now();
        match &self.kind {
            Kind::Shared(buffer) => {
                if self.acquired {
                    // SAFETY: the mem object was acquired by this queue.
                    unsafe {
                        compute
                            .queue()
                            .enqueue_release_gl_objects(&[buffer.get() as *const c_void], &[])
                    }
                    .map_err(|code| cl::Error::Api {
                        call: "clEnqueueReleaseGLObjects".into(),
                        code,
                    })?;
                }
                compute.finish()?;
            }
            Kind::Copied(buffer) => {
                copy_into_gl(
                    compute,
                    gl,
                    buffer,
                    self.gl_buffer,
                    self.len,
                    &mut self.map_failed,
                )?;
                self.copied_bytes += self.len as u64 * 16;
            }
        }
        self.acquired = false;
        Ok(start.elapsed())
    }
}

/// Reads `len` float4 of `buffer` into `gl_buffer`: straight into the mapped GL buffer, or
/// through a host vector when the driver will not map it (`map_failed` remembers that).
fn copy_into_gl(
    compute: &ComputeContext,
    gl: &glow::Context,
    buffer: &Buffer<[f32; 4]>,
    gl_buffer: glow::Buffer,
    len: usize,
    map_failed: &mut bool,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    let bytes = len * 16;
    let gl_bytes = i32::try_from(bytes)
        .map_err(|_| Error::Internal(format!("{bytes} bytes exceed a GL buffer")))?;
    let read = |out: &mut [[f32; 4]]| {
        // SAFETY: `out` holds exactly `len` float4 and the read is blocking, so it outlives the
        // transfer; the device buffer holds at least `len` values.
        unsafe {
            compute
                .queue()
                .enqueue_read_buffer(buffer, CL_BLOCKING, 0, out, &[])
        }
        .map(|_| ())
        .map_err(|code| cl::Error::Api {
            call: format!("clEnqueueReadBuffer ({bytes} bytes) into the GL buffer"),
            code,
        })
    };
    // SAFETY: GL calls on the current context; the mapped range is the whole buffer the renderer
    // allocated (at least `len` float4), and it is unmapped on every path.
    unsafe {
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(gl_buffer));
        let mapped = if *map_failed {
            std::ptr::null_mut()
        } else {
            gl.map_buffer_range(
                glow::ARRAY_BUFFER,
                0,
                gl_bytes,
                glow::MAP_WRITE_BIT | glow::MAP_INVALIDATE_BUFFER_BIT,
            )
        };
        let usable = !mapped.is_null() && (mapped as usize).is_multiple_of(align_of::<[f32; 4]>());
        let result = if usable {
            let out = std::slice::from_raw_parts_mut(mapped as *mut [f32; 4], len);
            let result = read(out);
            gl.unmap_buffer(glow::ARRAY_BUFFER);
            result
        } else {
            if !mapped.is_null() {
                gl.unmap_buffer(glow::ARRAY_BUFFER);
            }
            // The driver would not map the buffer: read to the host, then upload (two copies).
            // Remembered, so the map is not retried every frame.
            *map_failed = true;
            let mut host = vec![[0f32; 4]; len];
            let result = read(&mut host);
            if result.is_ok() {
                gl.buffer_sub_data_u8_slice(glow::ARRAY_BUFFER, 0, bytemuck::cast_slice(&host));
            }
            result
        };
        gl.bind_buffer(glow::ARRAY_BUFFER, None);
        result?;
    }
    Ok(())
}
