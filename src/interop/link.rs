//! One GL buffer fed by OpenCL: shared (`clCreateFromGLBuffer`, acquired and released around
//! the kernels) or copied (a device buffer read back into the mapped GL buffer every frame).

use std::mem::ManuallyDrop;
use std::rc::Rc;
use std::time::Duration;

use glow::HasContext;

use crate::cl::{Context, DeviceBuffer, GlBuffer, OutputBuffer};

use super::{Error, Result, Transfer};

/// A GL buffer of `len` float4 and the OpenCL buffer kernels write for it, both in one
/// [`Context`]. The link owns both and deletes the GL buffer after the OpenCL side.
///
/// Per frame: [`acquire`](Self::acquire), run kernels on [`target`](Self::target),
/// [`publish`](Self::publish); after `publish` GL may draw from
/// [`gl_buffer`](Self::gl_buffer).
pub struct GlLink {
    /// Dropped by hand in `Drop`: the OpenCL side goes before the GL buffer.
    kind: ManuallyDrop<Kind>,
    context: Context,
    gl: Rc<glow::Context>,
    gl_buffer: glow::Buffer,
    len: usize,
    /// Bytes copied device → host → GL so far (copy mode).
    copied_bytes: u64,
    /// Whether mapping the GL buffer failed once and the slower two-copy path is used.
    map_failed: bool,
}

enum Kind {
    /// `clCreateFromGLBuffer` on the GL buffer itself: no copy at all.
    Shared(GlBuffer<[f32; 4]>),
    /// A device buffer of its own, read back every frame.
    Copied(DeviceBuffer<[f32; 4]>),
}

impl GlLink {
    /// Creates a GL buffer of `len` float4 in `gl` and links it to a new OpenCL buffer in
    /// `context`: the GL buffer itself for `Transfer::Share` (the context must have been
    /// created against the current GL context: [`super::open`] does so only after checking
    /// `cl_khr_gl_sharing`), a device buffer for `Transfer::Copy`.
    ///
    /// `gl` must be current on this thread whenever the link is used or dropped.
    pub fn new(
        context: &Context,
        gl: &Rc<glow::Context>,
        transfer: Transfer,
        len: usize,
    ) -> Result<Self> {
        let bytes = crate::render::buffer_bytes("linked float4", len, 16)?;
        // SAFETY: buffer creation on the current context.
        let gl_buffer = unsafe {
            let buffer = crate::render::gl_call("glGenBuffers", gl.create_buffer())?;
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(buffer));
            gl.buffer_data_size(glow::ARRAY_BUFFER, bytes, glow::STREAM_DRAW);
            gl.bind_buffer(glow::ARRAY_BUFFER, None);
            buffer
        };
        let delete = |e: Error| {
            // SAFETY: the buffer was created above on the current context.
            unsafe { gl.delete_buffer(gl_buffer) };
            e
        };
        let kind = match transfer {
            Transfer::Share => {
                if !context.is_gl_shared() {
                    return Err(Error::Internal(
                        "a shared GL buffer needs a GL-sharing OpenCL context".into(),
                    ));
                }
                // SAFETY: the GL buffer was just created with `len` float4 on the current
                // context, which the OpenCL context shares; it outlives the CL view (Drop).
                Kind::Shared(
                    unsafe { GlBuffer::from_gl(context, gl_buffer.0.get(), len) }
                        .map_err(|e| delete(e.into()))?,
                )
            }
            Transfer::Copy => {
                Kind::Copied(DeviceBuffer::uninit(context, len).map_err(|e| delete(e.into()))?)
            }
        };
        Ok(Self {
            kind: ManuallyDrop::new(kind),
            context: context.clone(),
            gl: gl.clone(),
            gl_buffer,
            len,
            copied_bytes: 0,
            map_failed: false,
        })
    }

    /// The buffer kernels write: the shared GL buffer, or the device buffer that is copied.
    pub fn target(&mut self) -> OutputBuffer<'_, [f32; 4]> {
        match &mut *self.kind {
            Kind::Shared(b) => OutputBuffer::Gl(b),
            Kind::Copied(b) => OutputBuffer::Device(b),
        }
    }

    /// The device buffer in copy mode (to read what the kernels wrote), `None` when shared.
    pub fn device_buffer(&self) -> Option<&DeviceBuffer<[f32; 4]>> {
        match &*self.kind {
            Kind::Copied(b) => Some(b),
            Kind::Shared(_) => None,
        }
    }

    /// The GL buffer the renderer draws from.
    pub fn gl_buffer(&self) -> glow::Buffer {
        self.gl_buffer
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
    pub fn acquire(&mut self, gl: &glow::Context) -> Result<()> {
        if let Kind::Shared(buffer) = &mut *self.kind
            && !buffer.is_acquired()
        {
            // SAFETY: GL is current on this thread.
            unsafe { gl.finish() };
            buffer.acquire()?;
        }
        Ok(())
    }

    /// Hands the kernels' output to GL: in share mode `clEnqueueReleaseGLObjects` then
    /// `clFinish`; in copy mode one blocking read from the device straight into the GL buffer
    /// mapped for writing (`glMapBufferRange` with `MAP_INVALIDATE_BUFFER_BIT`), so the data
    /// crosses to the host once. Returns the time spent.
    pub fn publish(&mut self, gl: &glow::Context) -> Result<Duration> {
        let start = std::time::Instant::now();
        match &mut *self.kind {
            Kind::Shared(buffer) => {
                buffer.release()?;
                self.context.finish()?;
            }
            Kind::Copied(buffer) => {
                copy_into_gl(gl, buffer, self.gl_buffer, self.len, &mut self.map_failed)?;
                self.copied_bytes += self.len as u64 * 16;
            }
        }
        Ok(start.elapsed())
    }

    /// Ends OpenCL's use of the buffer without handing its contents to GL, for a buffer only
    /// other kernels read (the particles in splat mode): in share mode enqueues
    /// `clEnqueueReleaseGLObjects` (the caller waits for the queue before GL uses the buffer);
    /// in copy mode nothing moves.
    pub fn release(&mut self) -> Result<()> {
        if let Kind::Shared(buffer) = &mut *self.kind {
            buffer.release()?;
        }
        Ok(())
    }
}

impl Drop for GlLink {
    fn drop(&mut self) {
        // SAFETY: `kind` is dropped once, here, and never used again. The OpenCL view of the
        // GL buffer goes first.
        unsafe { ManuallyDrop::drop(&mut self.kind) };
        // SAFETY: the buffer belongs to `gl`, current on this thread (see `new`).
        unsafe { self.gl.delete_buffer(self.gl_buffer) };
    }
}

/// Reads `len` float4 of `buffer` into `gl_buffer`: straight into the mapped GL buffer, or
/// through a host vector when the driver will not map it (`map_failed` remembers that).
fn copy_into_gl(
    gl: &glow::Context,
    buffer: &DeviceBuffer<[f32; 4]>,
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
    let read = |out: &mut [[f32; 4]]| buffer.read_into(out);
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
