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
//! OpenCL: wait "drawn" (when GL signalled it) → acquire → kernels → release → signal
//! "written" → flush. OpenGL: wait "written" → draw → signal "drawn". The two binary semaphores
//! are Vulkan's, exported twice each (once per importer) and imported by OpenCL
//! (`cl_khr_external_semaphore_opaque_fd`) and OpenGL (`GL_EXT_semaphore_fd`). Each link has its
//! own pair, so every signal has exactly one wait. Without semaphore support on any of the
//! three, `clFinish` after the release and `glFinish` after the draw order the two APIs
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
    /// Two binary semaphores per buffer, exported by Vulkan.
    Semaphores,
    /// `clFinish` and `glFinish`, because semaphores are not available (the reason).
    Finish(String),
}

/// What every external link of one session shares: the Vulkan device and the entry points.
pub struct External {
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
        let (gl_semaphores, sync) = Self::semaphore_support(context, gl, &exporter);
        Ok(Self {
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
}

/// One buffer of `len` values of `T` in Vulkan memory, seen by OpenCL and OpenGL.
pub struct ExternalBuffer<T: Pod> {
    // Field order is drop order after `Drop::drop` deleted the GL objects: OpenCL's imports,
    // then Vulkan's objects, then the shared state.
    semaphores: Option<LinkSemaphores>,
    cl: ImportedBuffer<T>,
    memory: ExportedMemory,
    gl_memory: u32,
    gl_buffer: Option<glow::Buffer>,
    shared: Rc<External>,
    /// GL signalled "drawn" and OpenCL has not waited for it yet.
    drawn_pending: bool,
}

struct LinkSemaphores {
    written_cl: ImportedSemaphore,
    drawn_cl: ImportedSemaphore,
    written_gl: u32,
    drawn_gl: u32,
    _written: ExportedSemaphore,
    _drawn: ExportedSemaphore,
}

impl<T: Pod> ExternalBuffer<T> {
    /// Allocates `len` values of `T` in Vulkan and imports them into OpenCL and OpenGL (and, with
    /// semaphores, this buffer's "written" and "drawn" pair).
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
        let semaphores = match shared.gl_semaphores {
            Some(functions) => match Self::semaphores(shared, context, functions) {
                Ok(s) => Some(s),
                Err(e) => {
                    delete_gl();
                    return Err(e);
                }
            },
            None => None,
        };
        Ok(Self {
            semaphores,
            cl,
            memory,
            gl_memory,
            gl_buffer: Some(gl_buffer),
            shared: shared.clone(),
            drawn_pending: false,
        })
    }

    fn semaphores(
        shared: &External,
        context: &Context,
        functions: SemaphoreFunctions,
    ) -> Result<LinkSemaphores> {
        let missing = || Error::Internal("Vulkan lost its semaphore support".into());
        let written = shared.exporter.semaphore()?.ok_or_else(missing)?;
        let drawn = shared.exporter.semaphore()?.ok_or_else(missing)?;
        let written_cl = ImportedSemaphore::import(context, &written.fd()?)?;
        let drawn_cl = ImportedSemaphore::import(context, &drawn.fd()?)?;
        let written_gl = functions.import(&shared.gl, written.fd()?)?;
        let drawn_gl = match functions.import(&shared.gl, drawn.fd()?) {
            Ok(s) => s,
            Err(e) => {
                functions.delete(written_gl);
                return Err(e);
            }
        };
        Ok(LinkSemaphores {
            written_cl,
            drawn_cl,
            written_gl,
            drawn_gl,
            _written: written,
            _drawn: drawn,
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
        match &self.semaphores {
            Some(s) if self.drawn_pending => {
                s.drawn_cl.wait()?;
                self.drawn_pending = false;
            }
            Some(_) => {}
            // SAFETY: GL is current on this thread.
            None => unsafe { self.shared.gl.finish() },
        }
        self.cl.acquire()?;
        Ok(())
    }

    /// Hands the memory to GL: release, then signal "written" and have GL wait for it (with
    /// semaphores), or `clFinish`.
    pub fn release(&mut self) -> Result<()> {
        if !self.cl.is_acquired() {
            return Ok(());
        }
        self.cl.release()?;
        let context = self.cl.buffer().context().clone();
        match (&self.semaphores, self.gl_buffer, self.shared.gl_semaphores) {
            (Some(s), Some(buffer), Some(functions)) => {
                s.written_cl.signal()?;
                context.flush()?;
                functions.wait(s.written_gl, &[buffer]);
            }
            _ => context.finish()?,
        }
        Ok(())
    }

    /// Tells OpenCL that GL finished drawing from the buffer (signals "drawn"; without
    /// semaphores the next acquire's `glFinish` does it).
    pub fn drawn(&mut self) {
        if let (Some(s), Some(buffer), Some(functions), false) = (
            &self.semaphores,
            self.gl_buffer,
            self.shared.gl_semaphores,
            self.drawn_pending,
        ) {
            functions.signal(s.drawn_gl, &[buffer]);
            // SAFETY: GL is current; the signal must reach the driver before OpenCL waits.
            unsafe { self.shared.gl.flush() };
            self.drawn_pending = true;
        }
    }

    /// Bytes of the Vulkan allocation.
    pub fn allocation_bytes(&self) -> u64 {
        self.memory.allocation_bytes()
    }
}

impl<T: Pod> Drop for ExternalBuffer<T> {
    fn drop(&mut self) {
        // An unmatched "drawn" signal is consumed, so no semaphore dies with a pending signal.
        if let Some(s) = &self.semaphores
            && self.drawn_pending
        {
            let _ = s.drawn_cl.wait();
        }
        if self.cl.is_acquired() {
            let _ = self.cl.release();
        }
        let _ = self.cl.buffer().context().finish();
        // SAFETY: GL objects of the current context; GL is done with them after glFinish.
        unsafe {
            self.shared.gl.finish();
            if let Some(buffer) = self.gl_buffer.take() {
                self.shared.gl.delete_buffer(buffer);
            }
        }
        self.shared.gl_memory.delete(self.gl_memory);
        if let (Some(s), Some(functions)) = (&self.semaphores, self.shared.gl_semaphores) {
            functions.delete(s.written_gl);
            functions.delete(s.drawn_gl);
        }
        // The fields drop next: OpenCL's imports, then Vulkan's objects.
    }
}

/// Whether `gl` lists what the external path needs on the GL side (for `auto`, before any
/// Vulkan or OpenCL call).
pub fn gl_offers(gl: &glow::Context) -> Vec<String> {
    gl_memory::missing(gl, &gl_memory::MEMORY_EXTENSIONS)
}
