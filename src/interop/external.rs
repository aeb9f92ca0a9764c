//! `--interop external`: buffers that Vulkan allocates as exportable device memory, imported by
//! OpenCL (kernels write them) and by OpenGL (it draws them), with no byte copied.
//!
//! # Checks before any import
//! OpenCL must list `cl_khr_external_memory`, `cl_khr_external_memory_opaque_fd` and
//! `cl_khr_device_uuid`; OpenGL `GL_EXT_memory_object` and `GL_EXT_memory_object_fd`; Vulkan
//! must have a device with `VK_KHR_external_memory_fd` whose UUID is OpenCL's device UUID, and
//! that UUID must be among OpenGL's `GL_DEVICE_UUID_EXT`: all three on the same GPU.
//!
//! # One frame
//! OpenCL: wait "drawn" (before the first acquire, when GL signalled it) → acquire → kernels →
//! release → … → [`External::hand_over`]: signal "written" → flush. OpenGL: wait "written"
//! (for every buffer released since the last hand-over) → draw → [`External::drawn`]: signal
//! "drawn". The two binary semaphores are Vulkan's, exported twice each (once per importer) and
//! imported by OpenCL (`cl_khr_external_semaphore_opaque_fd`) and OpenGL
//! (`GL_EXT_semaphore_fd`). The session has one pair for all its buffers: a frame hands its
//! buffers over with one signal and one wait each way, however many buffers it wrote (on an
//! H100 every semaphore operation costs the frame time, and a splatted frame writes four
//! buffers). Every signal has exactly one wait. Without semaphore support on any of the three,
//! `clFinish` after the release and `glFinish` before the next acquire order the two APIs
//! instead, and [`External::sync`] says why.
//!
//! # File descriptors
//! Every import gets a fresh fd from Vulkan. OpenGL takes the fd when its import succeeds;
//! OpenCL's imports are given a duplicate and handled as `crate::cl::external` describes; on
//! any failure the fd is closed. No fd outlives the objects imported from it.
//!
//! # Destruction order
//! OpenGL's buffer, then its memory object and semaphores; then OpenCL's buffer and semaphores
//! (after the queue finished); then Vulkan's buffer, memory and semaphores; the Vulkan device
//! and instance last, when the session's [`External`] goes.

use std::mem::size_of;
use std::rc::Rc;

use bytemuck::Pod;
use glow::HasContext;

use crate::cl::external::{self as cl_external, ImportedBuffer, ImportedSemaphore};
use crate::cl::{Context, DeviceBuffer};
use crate::render::GlSetup;

use super::gl_memory::{self, MemoryFunctions, SemaphoreFunctions};
use super::vulkan::{ExportedMemory, ExportedSemaphore, Exporter, uuid_hex};
use super::{Error, Result};

/// How the two APIs are ordered around the shared buffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sync {
    /// Two binary semaphores for the session's buffers, exported by Vulkan.
    Semaphores,
    /// `clFinish` and `glFinish`, because semaphores are not available (the reason).
    Finish(String),
}

/// What every external link of one session shares: the Vulkan device, the entry points and
/// the pair of semaphores that orders the two APIs around all the links' buffers.
pub struct External {
    // Field order is drop order after `Drop::drop` deleted the GL semaphores: OpenCL's and
    // Vulkan's semaphores, then the Vulkan device.
    semaphores: Option<FrameSemaphores>,
    /// Where the session's buffers stand between the two APIs.
    hand_off: std::cell::RefCell<HandOff>,
    exporter: Exporter,
    cl_memory: cl_external::MemoryFunctions,
    gl_memory: MemoryFunctions,
    gl_semaphores: Option<SemaphoreFunctions>,
    sync: Sync,
    gl: Rc<glow::Context>,
}

impl External {
    /// Checks everything the path needs on the OpenCL context and the current GL context,
    /// and opens the Vulkan device of the same GPU. The error names what is missing.
    pub fn open(context: &Context, gl: &GlSetup) -> Result<Self> {
        let missing = cl_external::missing(context, &cl_external::MEMORY_EXTENSIONS);
        if !missing.is_empty() {
            return Err(Error::ExternalUnsupported(format!(
                "{} does not offer the OpenCL extension {}",
                context.info().label(),
                missing.join(", ")
            )));
        }
        let Some(cl_uuid) = cl_external::device_uuid(context) else {
            return Err(Error::ExternalUnsupported(format!(
                "{} does not offer cl_khr_device_uuid, so its GPU cannot be matched with \
                 Vulkan's and OpenGL's",
                context.info().label()
            )));
        };
        let gl_memory = MemoryFunctions::load(&gl.gl, &gl.proc_address)?;
        let gl_uuids = gl_memory.device_uuids(&gl.gl);
        if !gl_uuids.contains(&cl_uuid) {
            return Err(Error::ExternalUnsupported(format!(
                "OpenGL renders on another device: OpenCL's UUID {} is not among OpenGL's ({})",
                uuid_hex(&cl_uuid),
                gl_uuids.iter().map(uuid_hex).collect::<Vec<_>>().join(", ")
            )));
        }
        let exporter = Exporter::new(Some(cl_uuid))?;
        let cl_memory = cl_external::MemoryFunctions::load(context)?;
        let (mut gl_semaphores, mut sync) = Self::semaphore_support(context, gl, &exporter);
        let semaphores = match gl_semaphores {
            Some(functions) => match FrameSemaphores::new(&exporter, context, &gl.gl, functions) {
                Ok(s) => Some(s),
                Err(e) => {
                    gl_semaphores = None;
                    sync = Sync::Finish(format!("importing a semaphore failed: {e}"));
                    None
                }
            },
            None => None,
        };
        Ok(Self {
            semaphores,
            hand_off: std::cell::RefCell::new(HandOff::default()),
            exporter,
            cl_memory,
            gl_memory,
            gl_semaphores,
            sync,
            gl: gl.gl.clone(),
        })
    }

    fn semaphore_support(
        context: &Context,
        gl: &GlSetup,
        exporter: &Exporter,
    ) -> (Option<SemaphoreFunctions>, Sync) {
        if !exporter.has_semaphores() {
            return (
                None,
                Sync::Finish(format!(
                    "Vulkan on {} lacks VK_KHR_external_semaphore_fd",
                    exporter.device().name
                )),
            );
        }
        let missing = cl_external::missing(context, &cl_external::SEMAPHORE_EXTENSIONS);
        if !missing.is_empty() {
            return (
                None,
                Sync::Finish(format!("OpenCL lacks {}", missing.join(", "))),
            );
        }
        let functions = match SemaphoreFunctions::load(&gl.gl, &gl.proc_address) {
            Ok(functions) => functions,
            Err(e) => return (None, Sync::Finish(e.to_string())),
        };
        // One trial import by each API: a driver that lists the extensions may still refuse.
        let trial = || -> Result<()> {
            let semaphore = exporter
                .semaphore()?
                .ok_or_else(|| Error::Internal("Vulkan lost its semaphore support".into()))?;
            drop(ImportedSemaphore::import(context, &semaphore.fd()?)?);
            functions.delete(functions.import(&gl.gl, semaphore.fd()?)?);
            Ok(())
        };
        match trial() {
            Ok(()) => (Some(functions), Sync::Semaphores),
            Err(e) => (
                None,
                Sync::Finish(format!("importing a semaphore failed: {e}")),
            ),
        }
    }

    /// How OpenCL and OpenGL are ordered.
    pub fn sync(&self) -> &Sync {
        &self.sync
    }

    /// The Vulkan device that allocates.
    pub fn vulkan_device(&self) -> &str {
        &self.exporter.device().name
    }

    /// Hands every buffer released since the last hand-over to GL: OpenCL signals "written"
    /// once its commands so far are done, the queue is flushed, and GL waits for the signal
    /// before it reads any of them. Call it after the frame's last release, before GL draws;
    /// nothing happens when nothing was released or without semaphores (the release waited).
    pub fn hand_over(&self) -> Result<()> {
        let mut hand_off = self.hand_off.borrow_mut();
        if hand_off.released.is_empty() {
            return Ok(());
        }
        if let (Some(s), Some(functions)) = (&self.semaphores, self.gl_semaphores) {
            s.written_cl.signal()?;
            s.written_cl.context().flush()?;
            // No flush: GL's "drawn" signal, which OpenCL waits for before it signals again,
            // follows this wait in GL's stream and is flushed.
            functions.wait(s.written_gl, &hand_off.released);
        }
        let released = std::mem::take(&mut hand_off.released);
        for buffer in released {
            if !hand_off.in_gl.contains(&buffer) {
                hand_off.in_gl.push(buffer);
            }
        }
        Ok(())
    }

    /// Tells OpenCL that GL has finished drawing from the buffers it holds (signals
    /// "drawn", which the next acquire waits for). Call it after every frame's draw calls,
    /// also a frame that handed nothing over (a paused frame draws the buffers again). A
    /// binary semaphore holds one signal: when OpenCL has not waited for the last one, its
    /// queue waits for it first (GL's earlier draw, over by then or soon), so that the
    /// signal OpenCL waits for next is always the one after GL's last read.
    pub fn drawn(&self) -> Result<()> {
        let mut hand_off = self.hand_off.borrow_mut();
        if hand_off.in_gl.is_empty() {
            return Ok(());
        }
        if let (Some(s), Some(functions)) = (&self.semaphores, self.gl_semaphores) {
            if hand_off.drawn_pending {
                s.drawn_cl.wait()?;
                s.drawn_cl.context().flush()?;
            }
            functions.signal(s.drawn_gl, &hand_off.in_gl);
            // SAFETY: GL is current; the signal must reach the driver before OpenCL waits.
            unsafe { self.gl.flush() };
            hand_off.drawn_pending = true;
        }
        Ok(())
    }

    /// Before OpenCL writes `buffer`, which GL may have drawn from: waits for GL's "drawn"
    /// (with semaphores, when GL signalled since the last wait), else `glFinish`. The
    /// buffer is OpenCL's until it is released again.
    fn before_acquire(&self, buffer: Option<glow::Buffer>) -> Result<()> {
        match &self.semaphores {
            Some(s) => {
                let mut hand_off = self.hand_off.borrow_mut();
                if hand_off.drawn_pending {
                    s.drawn_cl.wait()?;
                    hand_off.drawn_pending = false;
                }
                if let Some(buffer) = buffer {
                    hand_off.in_gl.retain(|b| *b != buffer);
                }
            }
            // SAFETY: GL is current on this thread.
            None => unsafe { self.gl.finish() },
        }
        Ok(())
    }

    /// Forgets a buffer that is being deleted.
    fn forget(&self, buffer: glow::Buffer) {
        let mut hand_off = self.hand_off.borrow_mut();
        hand_off.released.retain(|b| *b != buffer);
        hand_off.in_gl.retain(|b| *b != buffer);
    }
}

impl Drop for External {
    fn drop(&mut self) {
        if let Some(s) = &self.semaphores {
            // An unmatched "drawn" signal is consumed, so no semaphore dies with a pending
            // signal.
            if self.hand_off.borrow().drawn_pending {
                let _ = s.drawn_cl.wait();
            }
            let _ = s.written_cl.context().finish();
            // SAFETY: GL is current; it is done with the semaphores after glFinish.
            unsafe { self.gl.finish() };
            if let Some(functions) = self.gl_semaphores {
                functions.delete(s.written_gl);
                functions.delete(s.drawn_gl);
            }
        }
        // The fields drop next: OpenCL's semaphores, then Vulkan's, then the device.
    }
}

/// Where a session's buffers stand between OpenCL and GL.
#[derive(Default)]
struct HandOff {
    /// Released by OpenCL since the last hand-over.
    released: Vec<glow::Buffer>,
    /// Handed to GL and not acquired by OpenCL since: what GL may draw from, which every
    /// "drawn" signal covers.
    in_gl: Vec<glow::Buffer>,
    /// GL signalled "drawn" and OpenCL has not waited for it yet.
    drawn_pending: bool,
}

/// The session's two binary semaphores, each imported by OpenCL and by GL.
struct FrameSemaphores {
    written_cl: ImportedSemaphore,
    drawn_cl: ImportedSemaphore,
    written_gl: u32,
    drawn_gl: u32,
    _written: ExportedSemaphore,
    _drawn: ExportedSemaphore,
}

impl FrameSemaphores {
    fn new(
        exporter: &Exporter,
        context: &Context,
        gl: &glow::Context,
        functions: SemaphoreFunctions,
    ) -> Result<Self> {
        let missing = || Error::Internal("Vulkan lost its semaphore support".into());
        let written = exporter.semaphore()?.ok_or_else(missing)?;
        let drawn = exporter.semaphore()?.ok_or_else(missing)?;
        let written_cl = ImportedSemaphore::import(context, &written.fd()?)?;
        let drawn_cl = ImportedSemaphore::import(context, &drawn.fd()?)?;
        // Both fds first: a failure after the first GL import must delete what it made.
        let (written_fd, drawn_fd) = (written.fd()?, drawn.fd()?);
        let written_gl = functions.import(gl, written_fd)?;
        let drawn_gl = match functions.import(gl, drawn_fd) {
            Ok(s) => s,
            Err(e) => {
                functions.delete(written_gl);
                return Err(e);
            }
        };
        Ok(Self {
            written_cl,
            drawn_cl,
            written_gl,
            drawn_gl,
            _written: written,
            _drawn: drawn,
        })
    }
}

/// One buffer of `len` values of `T` in Vulkan memory, seen by OpenCL and OpenGL.
pub struct ExternalBuffer<T: Pod> {
    // Field order is drop order after `Drop::drop` deleted the GL objects: OpenCL's import,
    // then Vulkan's objects, then the shared state.
    cl: ImportedBuffer<T>,
    memory: ExportedMemory,
    gl_memory: u32,
    gl_buffer: Option<glow::Buffer>,
    shared: Rc<External>,
}

impl<T: Pod> ExternalBuffer<T> {
    /// Allocates `len` values of `T` in Vulkan and imports them into OpenCL and OpenGL.
    pub fn new(shared: &Rc<External>, context: &Context, len: usize) -> Result<Self> {
        let bytes = (len.max(1) * size_of::<T>()) as u64;
        let memory = shared.exporter.allocate(bytes)?;
        let (gl_memory, gl_buffer) = shared.gl_memory.import_buffer(
            &shared.gl,
            memory.fd()?,
            memory.allocation_bytes(),
            memory.dedicated(),
            bytes,
        )?;
        let delete_gl = || {
            // SAFETY: objects of the current context, made just above.
            unsafe { shared.gl.delete_buffer(gl_buffer) };
            shared.gl_memory.delete(gl_memory);
        };
        let cl = match ImportedBuffer::import(context, shared.cl_memory, &memory.fd()?, len) {
            Ok(cl) => cl,
            Err(e) => {
                delete_gl();
                return Err(e.into());
            }
        };
        Ok(Self {
            cl,
            memory,
            gl_memory,
            gl_buffer: Some(gl_buffer),
            shared: shared.clone(),
        })
    }

    /// The GL buffer, stored in the imported memory.
    pub fn gl_buffer(&self) -> Option<glow::Buffer> {
        self.gl_buffer
    }

    /// The OpenCL buffer kernels write, between [`acquire`](Self::acquire) and
    /// [`release`](Self::release).
    pub fn target(&mut self) -> &mut DeviceBuffer<T> {
        self.cl.buffer_mut()
    }

    /// The OpenCL buffer, to read what the kernels wrote.
    pub fn device_buffer(&self) -> &DeviceBuffer<T> {
        self.cl.buffer()
    }

    /// Makes the memory OpenCL's: waits for GL's "drawn" (with semaphores, when GL signalled
    /// since the last wait; else `glFinish`), then acquires it.
    pub fn acquire(&mut self) -> Result<()> {
        if self.cl.is_acquired() {
            return Ok(());
        }
        self.shared.before_acquire(self.gl_buffer)?;
        self.cl.acquire()?;
        Ok(())
    }

    /// Ends OpenCL's use of the memory: the release, then, with semaphores, the buffer waits
    /// for the session's next [`External::hand_over`] (which GL's reads must follow); without,
    /// `clFinish`.
    pub fn release(&mut self) -> Result<()> {
        if !self.cl.is_acquired() {
            return Ok(());
        }
        self.cl.release()?;
        match (self.shared.semaphores.is_some(), self.gl_buffer) {
            (true, Some(buffer)) => {
                let mut hand_off = self.shared.hand_off.borrow_mut();
                if !hand_off.released.contains(&buffer) {
                    hand_off.released.push(buffer);
                }
            }
            _ => self.cl.buffer().context().finish()?,
        }
        Ok(())
    }

    /// Bytes of the Vulkan allocation.
    pub fn allocation_bytes(&self) -> u64 {
        self.memory.allocation_bytes()
    }
}

impl<T: Pod> Drop for ExternalBuffer<T> {
    fn drop(&mut self) {
        if self.cl.is_acquired() {
            let _ = self.cl.release();
        }
        let _ = self.cl.buffer().context().finish();
        // SAFETY: GL objects of the current context; GL is done with them after glFinish.
        unsafe {
            self.shared.gl.finish();
            if let Some(buffer) = self.gl_buffer.take() {
                self.shared.forget(buffer);
                self.shared.gl.delete_buffer(buffer);
            }
        }
        self.shared.gl_memory.delete(self.gl_memory);
        // The fields drop next: OpenCL's import, then Vulkan's objects.
    }
}

/// Whether `gl` lists what the external path needs on the GL side (for `auto`, before any
/// Vulkan or OpenCL call).
pub fn gl_offers(gl: &glow::Context) -> Vec<String> {
    gl_memory::missing(gl, &gl_memory::MEMORY_EXTENSIONS)
}
