//! The OpenCL side of a session: one device, its context (plain, or created against the current
//! GL context for `cl_khr_gl_sharing`), a profiled in-order queue, and program builds.

use std::ptr;

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context as ClContext;
use opencl3::device::Device as ClDevice;
use opencl3::error_codes::CL_BUILD_PROGRAM_FAILURE;
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::program::Program as ClProgram;
use opencl3::types::cl_context_properties;

use crate::cl::{self, DeviceEntry, DeviceInfo, Source, WorkSize};

use super::Result;

/// One OpenCL device with a context and a profiled in-order queue, ready to run the kernels
/// that feed the renderer.
///
/// In copy mode it wraps snowsim's own [`cl::Context`] ([`cl`](Self::cl) returns it, so the
/// simulation can build on it with `gml` and [`cl::DeviceBuffer`]). In share mode the OpenCL
/// context must be created with the GL context's handles as properties, which `cl::Context`
/// cannot do yet, so it holds raw opencl3 objects; everything here works the same on both.
pub struct ComputeContext {
    info: DeviceInfo,
    device: ClDevice,
    backend: Backend,
}

enum Backend {
    Plain(cl::Context),
    Shared {
        // Field order is drop order: the queue goes before its context.
        queue: CommandQueue,
        context: ClContext,
    },
}

impl ComputeContext {
    /// An ordinary context on `entry`'s device (used by the copy path).
    pub fn plain(entry: &DeviceEntry) -> Result<Self> {
        Ok(Self {
            info: entry.info.clone(),
            device: entry.device,
            backend: Backend::Plain(cl::Context::new(entry)?),
        })
    }

    /// A context on `entry`'s device created with `properties` (0-terminated
    /// `cl_context_properties`, e.g. `CL_GL_CONTEXT_KHR` and `CL_EGL_DISPLAY_KHR`).
    pub(crate) fn with_properties(
        entry: &DeviceEntry,
        properties: &[cl_context_properties],
    ) -> Result<Self> {
        let label = entry.info.label();
        let context =
            ClContext::from_devices(&[entry.device.id()], properties, None, ptr::null_mut())
                .map_err(|code| cl::Error::Api {
                    call: format!("clCreateContext with GL sharing properties on {label}"),
                    code,
                })?;
        let queue = if opencl_major(&entry.info.version) >= 2 {
            CommandQueue::create_default_with_properties(&context, CL_QUEUE_PROFILING_ENABLE, 0)
        } else {
            #[allow(deprecated)]
            CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
        }
        .map_err(|code| cl::Error::Api {
            call: format!("clCreateCommandQueue on {label}"),
            code,
        })?;
        Ok(Self {
            info: entry.info.clone(),
            device: entry.device,
            backend: Backend::Shared { queue, context },
        })
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The OpenCL device.
    pub fn device(&self) -> &ClDevice {
        &self.device
    }

    /// The OpenCL context.
    pub fn cl_context(&self) -> &ClContext {
        match &self.backend {
            Backend::Plain(c) => c.cl_context(),
            Backend::Shared { context, .. } => context,
        }
    }

    /// The profiled in-order queue.
    pub fn queue(&self) -> &CommandQueue {
        match &self.backend {
            Backend::Plain(c) => c.queue(),
            Backend::Shared { queue, .. } => queue,
        }
    }

    /// snowsim's [`cl::Context`] when the context is not GL-shared.
    pub fn cl(&self) -> Option<&cl::Context> {
        match &self.backend {
            Backend::Plain(c) => Some(c),
            Backend::Shared { .. } => None,
        }
    }

    /// Whether the context was created against the GL context.
    pub fn is_gl_shared(&self) -> bool {
        matches!(self.backend, Backend::Shared { .. })
    }

    /// Waits for every enqueued command.
    pub fn finish(&self) -> Result<()> {
        self.queue().finish().map_err(|code| cl::Error::Api {
            call: "clFinish".into(),
            code,
        })?;
        Ok(())
    }

    /// Builds `sources` (each preceded by a `#line` directive naming it) with `options`; a
    /// failed build is [`cl::Error::Build`] with the driver's log.
    pub fn build(&self, sources: &[Source], options: &str) -> Result<ClProgram> {
        let name = sources
            .first()
            .map(|s| s.name.clone())
            .unwrap_or_else(|| "<empty>".into());
        let mut text = String::new();
        for source in sources {
            if source.name.contains(['"', '\n', '\0']) || source.text.contains('\0') {
                return Err(cl::Error::InvalidBuildInput(format!(
                    "source name or text `{}` contains a quote, newline or NUL",
                    source.name.escape_debug()
                ))
                .into());
            }
            text.push_str(&format!("#line 1 \"{}\"\n{}\n", source.name, source.text));
        }
        if options.contains('\0') {
            return Err(cl::Error::InvalidBuildInput(format!(
                "build options of `{name}` contain a NUL byte"
            ))
            .into());
        }
        let device = self.device.id();
        let mut program =
            ClProgram::create_from_source(self.cl_context(), &text).map_err(|code| {
                cl::Error::Api {
                    call: format!("clCreateProgramWithSource({name})"),
                    code,
                }
            })?;
        match program.build(&[device], options) {
            Ok(()) => Ok(program),
            Err(code) if code.0 == CL_BUILD_PROGRAM_FAILURE => Err(cl::Error::Build {
                program: name,
                device: self.info.name.clone(),
                options: options.into(),
                log: program
                    .get_build_log(device)
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            }
            .into()),
            Err(code) => Err(cl::Error::Api {
                call: format!("clBuildProgram({name})"),
                code,
            }
            .into()),
        }
    }

    /// Creates kernel `name` of `program`.
    pub fn kernel(&self, program: &ClProgram, name: &str) -> Result<Kernel> {
        Ok(
            Kernel::create(program, name).map_err(|code| cl::Error::Api {
                call: format!("clCreateKernel({name})"),
                code,
            })?,
        )
    }

    /// Work sizes covering `items` work-items of `kernel` on this device.
    pub fn work_size(&self, kernel: &Kernel, items: usize) -> Result<WorkSize> {
        let device = self.device.id();
        let allowed = kernel
            .get_work_group_size(device)
            .map_err(|code| cl::Error::Api {
                call: "clGetKernelWorkGroupInfo(WORK_GROUP_SIZE)".into(),
                code,
            })?;
        let multiple = kernel
            .get_work_group_size_multiple(device)
            .map_err(|code| cl::Error::Api {
                call: "clGetKernelWorkGroupInfo(PREFERRED_WORK_GROUP_SIZE_MULTIPLE)".into(),
                code,
            })?;
        Ok(WorkSize::choose(items, allowed, multiple))
    }

    /// An uninitialised device buffer of `len` float4 (at least one), checked against the
    /// device's largest allocation.
    pub fn float4_buffer(&self, len: usize) -> Result<Buffer<[f32; 4]>> {
        let bytes = (len.max(1) as u64).saturating_mul(16);
        if bytes > self.info.max_alloc_bytes {
            return Err(cl::Error::BufferTooLarge {
                requested: bytes,
                max_alloc: self.info.max_alloc_bytes,
                device: self.info.name.clone(),
            }
            .into());
        }
        // SAFETY: no host pointer; the size was checked against the device limit.
        let buffer = unsafe {
            Buffer::<[f32; 4]>::create(
                self.cl_context(),
                CL_MEM_READ_WRITE,
                len.max(1),
                ptr::null_mut(),
            )
        }
        .map_err(|code| cl::Error::Api {
            call: format!("clCreateBuffer ({bytes} bytes) on {}", self.info.name),
            code,
        })?;
        Ok(buffer)
    }

    /// A read-only device buffer holding a copy of `data` (at least one float), checked
    /// against the device's largest allocation.
    pub fn float_buffer_from(&self, data: &[f32]) -> Result<Buffer<f32>> {
        let bytes = (data.len().max(1) as u64).saturating_mul(4);
        if bytes > self.info.max_alloc_bytes {
            return Err(cl::Error::BufferTooLarge {
                requested: bytes,
                max_alloc: self.info.max_alloc_bytes,
                device: self.info.name.clone(),
            }
            .into());
        }
        let mut copy = data.to_vec();
        if copy.is_empty() {
            copy.push(0.0);
        }
        // SAFETY: the host pointer covers `copy.len()` floats and is only read during the call
        // (CL_MEM_COPY_HOST_PTR); the size was checked against the device limit.
        let buffer = unsafe {
            Buffer::<f32>::create(
                self.cl_context(),
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                copy.len(),
                copy.as_mut_ptr().cast(),
            )
        }
        .map_err(|code| cl::Error::Api {
            call: format!(
                "clCreateBuffer ({bytes} bytes, copied) on {}",
                self.info.name
            ),
            code,
        })?;
        Ok(buffer)
    }
}

/// Major version from an OpenCL version string such as `OpenCL 3.0 CUDA`; 1 if unreadable.
fn opencl_major(version: &str) -> u32 {
    version
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or(1)
}
