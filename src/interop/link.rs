//! One GL buffer fed by OpenCL: shared (`clCreateFromGLBuffer`, acquired and released around
//! the kernels), external (Vulkan memory that both import, see [`super::external`]) or copied
//! (a device buffer read back into the mapped GL buffer every frame).

use std::mem::size_of;
use std::rc::Rc;
use std::time::Duration;

use bytemuck::Pod;
use glow::HasContext;

use crate::cl::{Context, DeviceBuffer, DeviceType, GlBuffer, OutputBuffer, PinnedBuffer};

use super::external::ExternalBuffer;
use super::{Error, Interop, Result, Transfer};

/// A GL buffer of `len` values of `T` (the particles, or `float4` as `[f32; 4]`) and the OpenCL
/// buffer kernels write for it, both in one [`Context`]. The link owns both and destroys them
/// in the order their path needs.
///
/// Per frame: [`acquire`](Self::acquire), run kernels on [`target`](Self::target),
/// [`publish`](Self::publish); once every link of the frame is published,
/// [`Interop::hand_over`]; draw from [`gl_buffer`](Self::gl_buffer), then
/// [`Interop::drawn`].
pub struct GlLink<T: Pod> {
    kind: Kind<T>,
    context: Context,
    gl_buffer: glow::Buffer,
    len: usize,
    /// Bytes copied device → host → GL so far (copy mode).
    copied_bytes: u64,
    /// Whether mapping the GL buffer failed once and the slower two-copy path is used.
    map_failed: bool,
    /// Copy mode on a GPU: pinned host memory the device buffer is read into (at the bus's
    /// pinned bandwidth) before the host copies it into the mapped GL buffer.
    staging: Option<PinnedBuffer<T>>,
    /// The last copy's read-back and upload times.
    last_copy: Option<(Duration, Duration)>,
}

enum Kind<T: Pod> {
    /// `clCreateFromGLBuffer` on the GL buffer itself: no copy at all.
    Shared(OwnedGl<GlBuffer<T>>),
    /// Vulkan memory imported by both APIs: no copy at all. Deletes its GL objects itself.
    External(Box<ExternalBuffer<T>>),
    /// A device buffer of its own, read back every frame into the GL buffer.
    Copied(OwnedGl<DeviceBuffer<T>>),
}

/// An OpenCL object and the GL buffer it feeds. Field order is drop order: the OpenCL side
/// (a view of the GL buffer, in share mode) goes before the buffer.
struct OwnedGl<T> {
    cl: T,
    /// Held to be deleted after `cl`.
    _buffer: GlBufferName,
}

impl<T> OwnedGl<T> {
    fn new(gl: &Rc<glow::Context>, buffer: glow::Buffer, cl: T) -> Self {
        Self {
            cl,
            _buffer: GlBufferName {
                gl: gl.clone(),
                buffer,
            },
        }
    }
}

/// A GL buffer deleted when dropped.
struct GlBufferName {
    gl: Rc<glow::Context>,
    buffer: glow::Buffer,
}

impl Drop for GlBufferName {
    fn drop(&mut self) {
        // SAFETY: the buffer belongs to `gl`, current on this thread (see `GlLink::new`).
        unsafe { self.gl.delete_buffer(self.buffer) };
    }
}

impl<T: Pod> GlLink<T> {
    /// Creates a GL buffer of `len` values of `T` and links it to an OpenCL buffer in `context` by
    /// the path `interop` chose: the GL buffer itself (share: the context was created against
    /// the current GL context), Vulkan memory imported by both (external), or a device buffer
    /// read back every frame (copy).
    ///
    /// The GL context must be current on this thread whenever the link is used or dropped.
    pub fn new(
        context: &Context,
        gl: &Rc<glow::Context>,
        interop: &Interop,
        len: usize,
    ) -> Result<Self> {
        let bytes = crate::render::buffer_bytes("linked", len, size_of::<T>())?;
        let plain_buffer = || -> Result<glow::Buffer> {
            // SAFETY: buffer creation on the current context.
            unsafe {
                let buffer = crate::render::gl_call("glGenBuffers", gl.create_buffer())?;
                gl.bind_buffer(glow::ARRAY_BUFFER, Some(buffer));
                gl.buffer_data_size(glow::ARRAY_BUFFER, bytes, glow::STREAM_DRAW);
                gl.bind_buffer(glow::ARRAY_BUFFER, None);
                Ok(buffer)
            }
        };
        let (kind, gl_buffer) = match interop.transfer() {
            Transfer::Share => {
                if !context.is_gl_shared() {
                    return Err(Error::Internal(
                        "a shared GL buffer needs a GL-sharing OpenCL context".into(),
                    ));
                }
                let buffer = plain_buffer()?;
                // SAFETY: the GL buffer was just created with `len` values on the current
                // context, which the OpenCL context shares; it outlives the CL view (OwnedGl).
                match unsafe { GlBuffer::from_gl(context, buffer.0.get(), len) } {
                    Ok(cl) => (Kind::Shared(OwnedGl::new(gl, buffer, cl)), buffer),
                    Err(e) => {
                        // SAFETY: created above, used by nothing.
                        unsafe { gl.delete_buffer(buffer) };
                        return Err(e.into());
                    }
                }
            }
            Transfer::External => {
                let shared = interop.external().ok_or_else(|| {
                    Error::Internal("the external path was chosen without its state".into())
                })?;
                let external = ExternalBuffer::new(shared, context, len)?;
                let buffer = external
                    .gl_buffer()
                    .ok_or_else(|| Error::Internal("an external buffer without GL".into()))?;
                (Kind::External(Box::new(external)), buffer)
            }
            Transfer::Copy => {
                let buffer = plain_buffer()?;
                match DeviceBuffer::uninit(context, len) {
                    Ok(cl) => (Kind::Copied(OwnedGl::new(gl, buffer, cl)), buffer),
                    Err(e) => {
                        // SAFETY: created above, used by nothing.
                        unsafe { gl.delete_buffer(buffer) };
                        return Err(e.into());
                    }
                }
            }
        };
        // Pinned staging pays off where the device sits across a bus (measured on the H100 in
        // benches/RESULTS.md); a CPU driver reads host memory either way.
        let staging = match (&kind, context.info().device_type) {
            (Kind::Copied(_), DeviceType::Gpu | DeviceType::Accelerator) => {
                PinnedBuffer::new(context, len).ok()
            }
            _ => None,
        };
        Ok(Self {
            kind,
            context: context.clone(),
            gl_buffer,
            len,
            copied_bytes: 0,
            map_failed: false,
            staging,
            last_copy: None,
        })
    }

    /// The buffer kernels write: the shared GL buffer, the imported memory, or the device
    /// buffer that is copied.
    pub fn target(&mut self) -> OutputBuffer<'_, T> {
        match &mut self.kind {
            Kind::Shared(b) => OutputBuffer::Gl(&mut b.cl),
            Kind::External(b) => OutputBuffer::Device(b.target()),
            Kind::Copied(b) => OutputBuffer::Device(&mut b.cl),
        }
    }

    /// The device buffer (to read what the kernels wrote), `None` when shared.
    pub fn device_buffer(&self) -> Option<&DeviceBuffer<T>> {
        match &self.kind {
            Kind::Copied(b) => Some(&b.cl),
            Kind::External(b) => Some(b.device_buffer()),
            Kind::Shared(_) => None,
        }
    }

    /// The GL buffer the renderer draws from.
    pub fn gl_buffer(&self) -> glow::Buffer {
        self.gl_buffer
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the values: what one copy moves.
    pub fn bytes(&self) -> u64 {
        (self.len * size_of::<T>()) as u64
    }

    /// Whether the link holds no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes copied from the device into GL so far (zero when shared or external).
    pub fn copied_bytes(&self) -> u64 {
        self.copied_bytes
    }

    /// Makes the buffer OpenCL's before kernels write it: in share mode waits for GL to finish
    /// with it (`glFinish`, as `cl_khr_gl_sharing` requires without `cl_khr_gl_event`) and
    /// enqueues `clEnqueueAcquireGLObjects`; in external mode waits for GL's "drawn" semaphore
    /// and acquires the memory; in copy mode does nothing.
    pub fn acquire(&mut self, gl: &glow::Context) -> Result<()> {
        match &mut self.kind {
            Kind::Shared(link) => {
                let buffer = &mut link.cl;
                if !buffer.is_acquired() {
                    // SAFETY: GL is current on this thread.
                    unsafe { gl.finish() };
                    buffer.acquire()?;
                }
            }
            Kind::External(buffer) => buffer.acquire()?,
            Kind::Copied(_) => {}
        }
        Ok(())
    }

    /// Hands the kernels' output to GL: in share mode `clEnqueueReleaseGLObjects` then
    /// `clFinish`; in external mode the release, after which the session's next
    /// [`Interop::hand_over`] signals "written" and has GL wait for it (without semaphores,
    /// `clFinish` here); in copy mode one blocking read from the device straight into the GL
    /// buffer mapped for writing (`glMapBufferRange` with `MAP_INVALIDATE_BUFFER_BIT`), so the
    /// data crosses to the host once. Returns the time spent.
    pub fn publish(&mut self, gl: &glow::Context) -> Result<Duration> {
        let start = std::time::Instant::now();
        match &mut self.kind {
            Kind::Shared(link) => {
                link.cl.release()?;
                self.context.finish()?;
            }
            Kind::External(buffer) => buffer.release()?,
            Kind::Copied(link) => {
                let buffer = &link.cl;
                self.last_copy = Some(match self.staging.as_mut() {
                    Some(staging) => {
                        buffer.read_into(staging.as_mut_slice())?;
                        let readback = start.elapsed();
                        upload_to_gl(gl, staging.as_slice(), self.gl_buffer, &mut self.map_failed)?;
                        (readback, start.elapsed() - readback)
                    }
                    None => {
                        copy_into_gl(gl, buffer, self.gl_buffer, self.len, &mut self.map_failed)?;
                        (start.elapsed(), Duration::ZERO)
                    }
                });
                self.copied_bytes += self.bytes();
            }
        }
        Ok(start.elapsed())
    }

    /// Copy mode: the last [`publish`](Self::publish)'s (once) read-back time (device → host) and
    /// upload time (host → GL); without pinned staging the read goes straight into the mapped
    /// GL buffer and the upload is part of it. `None` on the other paths.
    pub fn take_last_copy(&mut self) -> Option<(Duration, Duration)> {
        self.last_copy.take()
    }

    /// Whether copy mode reads back through pinned host memory.
    pub fn is_pinned(&self) -> bool {
        self.staging.is_some()
    }

    /// Ends OpenCL's use of the buffer without copying its contents to GL, for a buffer only
    /// other kernels read: in share mode enqueues `clEnqueueReleaseGLObjects` (the caller
    /// waits for the queue before GL uses the buffer); in external mode the usual hand-off,
    /// which moves no byte; in copy mode nothing moves.
    pub fn release(&mut self) -> Result<()> {
        match &mut self.kind {
            Kind::Shared(link) => link.cl.release()?,
            Kind::External(buffer) => buffer.release()?,
            Kind::Copied(_) => {}
        }
        Ok(())
    }
}

impl<T: Pod> Drop for GlLink<T> {
    fn drop(&mut self) {
        // A shared buffer may be left OpenCL's (the particles while splatting): give it back
        // before its GL buffer is deleted.
        if let Kind::Shared(link) = &mut self.kind
            && link.cl.is_acquired()
        {
            let _ = link.cl.release();
            let _ = self.context.finish();
        }
    }
}

/// Copies `data` into `gl_buffer` (mapped for writing, in parallel chunks of 1 MiB: one host
/// thread cannot fill the bus).
fn upload_to_gl<T: Pod>(
    gl: &glow::Context,
    data: &[T],
    gl_buffer: glow::Buffer,
    map_failed: &mut bool,
) -> Result<()> {
    use rayon::prelude::*;
    fill_gl_buffer(gl, gl_buffer, data.len(), map_failed, |out: &mut [T]| {
        const CHUNK_BYTES: usize = 1 << 20;
        let (out, data): (&mut [u8], &[u8]) =
            (bytemuck::cast_slice_mut(out), bytemuck::cast_slice(data));
        out.par_chunks_mut(CHUNK_BYTES)
            .zip(data.par_chunks(CHUNK_BYTES))
            .for_each(|(o, d)| o.copy_from_slice(d));
        Ok(())
    })
}

/// Reads `len` values of `buffer` into `gl_buffer` (straight into the mapped GL buffer).
fn copy_into_gl<T: Pod>(
    gl: &glow::Context,
    buffer: &DeviceBuffer<T>,
    gl_buffer: glow::Buffer,
    len: usize,
    map_failed: &mut bool,
) -> Result<()> {
    fill_gl_buffer(gl, gl_buffer, len, map_failed, |out| {
        Ok(buffer.read_into(out)?)
    })
}

/// Has `fill` write the first `len` values of `gl_buffer`: in the buffer mapped for writing
/// (`MAP_INVALIDATE_BUFFER_BIT`), or, when the driver will not map it, in a host vector then
/// uploaded with `glBufferSubData` (`map_failed` remembers that, so the map is not retried
/// every frame).
fn fill_gl_buffer<T: Pod>(
    gl: &glow::Context,
    gl_buffer: glow::Buffer,
    len: usize,
    map_failed: &mut bool,
    fill: impl FnOnce(&mut [T]) -> Result<()>,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    let bytes = len * size_of::<T>();
    let gl_bytes = i32::try_from(bytes)
        .map_err(|_| Error::Internal(format!("{bytes} bytes exceed a GL buffer")))?;
    // SAFETY: GL calls on the current context; the mapped range is the first `len` values of
    // a buffer of at least that many, and it is unmapped on every path.
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
        let usable = !mapped.is_null() && (mapped as usize).is_multiple_of(align_of::<T>());
        let result = if usable {
            let out = std::slice::from_raw_parts_mut(mapped as *mut T, len);
            let result = fill(out);
            gl.unmap_buffer(glow::ARRAY_BUFFER);
            result
        } else {
            if !mapped.is_null() {
                gl.unmap_buffer(glow::ARRAY_BUFFER);
            }
            *map_failed = true;
            let mut host = vec![T::zeroed(); len];
            let result = fill(&mut host);
            if result.is_ok() {
                gl.buffer_sub_data_u8_slice(glow::ARRAY_BUFFER, 0, bytemuck::cast_slice(&host));
            }
            result
        };
        gl.bind_buffer(glow::ARRAY_BUFFER, None);
        result
    }
}
