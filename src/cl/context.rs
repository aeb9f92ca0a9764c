//! An OpenCL context on one device with a profiled in-order queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context as ClContext;
use opencl3::device::Device as ClDevice;
use opencl3::types::{cl_command_queue_properties, cl_context_properties};

use super::device::{DeviceEntry, DeviceInfo, DeviceSelector, list_devices};
use super::error::{Result, ResultExt};

/// Bytes moved between host and device through a [`Context`]'s buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferCounters {
    /// Bytes written from host to device.
    pub to_device: u64,
    /// Bytes read from device to host.
    pub to_host: u64,
}

/// How to open a [`Context`].
#[derive(Clone, Debug)]
pub struct ContextOptions {
    /// Profile every command (`CL_QUEUE_PROFILING_ENABLE`): kernel device times in counters.
    /// On by default; benchmarks turn it off to measure what profiling costs.
    pub profiling: bool,
    /// Properties that tie the context to a GL context for `cl_khr_gl_sharing`
    /// (`CL_GL_CONTEXT_KHR`, `CL_EGL_DISPLAY_KHR`/`CL_GLX_DISPLAY_KHR`, `CL_CONTEXT_PLATFORM`),
    /// 0-terminated. Pass them only for a device that lists `cl_khr_gl_sharing`: PoCL accepts
    /// them and then kills the process in `clCreateFromGLBuffer`.
    pub gl_sharing: Option<Vec<cl_context_properties>>,
}

impl Default for ContextOptions {
    fn default() -> Self {
        Self {
            profiling: true,
            gl_sharing: None,
        }
    }
}

/// One device, its OpenCL context and an in-order command queue (profiled unless asked
/// otherwise).
///
/// Every buffer, program and kernel launch in snowsim belongs to one `Context`: gml, the sort
/// and the OpenCL–OpenGL interop all run on the same one, plain or created against the GL
/// context ([`ContextOptions::gl_sharing`]). Several contexts, on one device or several, can
/// live side by side. Cloning is cheap and shares the same OpenCL objects, so buffers can keep
/// their context alive.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    // Field order is drop order: the queue goes before its context.
    queue: CommandQueue,
    /// Shared with the context's [siblings](Context::sibling).
    context: Arc<ClContext>,
    info: DeviceInfo,
    profiling: bool,
    gl_shared: bool,
    device: ClDevice,
    to_device: AtomicU64,
    to_host: AtomicU64,
    allocated: AtomicU64,
}

impl Context {
    /// Opens the device that `selector` names among all devices of the machine.
    pub fn from_selector(selector: &DeviceSelector) -> Result<Self> {
        let devices = list_devices()?;
        Self::new(selector.select(&devices)?)
    }

    /// Opens a context and a profiled in-order queue on `entry`'s device.
    pub fn new(entry: &DeviceEntry) -> Result<Self> {
        Self::with_options(entry, &ContextOptions::default())
    }

    /// Opens a context on `entry`'s device as `options` say.
    pub fn with_options(entry: &DeviceEntry, options: &ContextOptions) -> Result<Self> {
        let label = entry.info.label();
        let context = match &options.gl_sharing {
            None => ClContext::from_device(&entry.device)
                .during(format!("clCreateContext on {label}"))?,
            Some(properties) => ClContext::from_devices(
                &[entry.device.id()],
                properties,
                None,
                std::ptr::null_mut(),
            )
            .during(format!(
                "clCreateContext with GL sharing properties on {label}"
            ))?,
        };
        let queue = create_queue(&context, &entry.info, options.profiling)?;
        Ok(Self {
            inner: Arc::new(Inner {
                queue,
                context: Arc::new(context),
                info: entry.info.clone(),
                profiling: options.profiling,
                gl_shared: options.gl_sharing.is_some(),
                device: entry.device,
                to_device: AtomicU64::new(0),
                to_host: AtomicU64::new(0),
                allocated: AtomicU64::new(0),
            }),
        })
    }

    /// A second in-order queue on the same device and the same OpenCL context, profiled as
    /// this one: a thread of its own can enqueue there while this queue runs, and the device
    /// may run both queues' kernels side by side, which two contexts on one GPU do not (they
    /// take turns). Buffers of either can be used on both; programs and kernels are its own.
    pub fn sibling(&self) -> Result<Self> {
        let queue = create_queue(&self.inner.context, &self.inner.info, self.inner.profiling)?;
        Ok(Self {
            inner: Arc::new(Inner {
                queue,
                context: Arc::clone(&self.inner.context),
                info: self.inner.info.clone(),
                profiling: self.inner.profiling,
                gl_shared: self.inner.gl_shared,
                device: self.inner.device,
                to_device: AtomicU64::new(0),
                to_host: AtomicU64::new(0),
                allocated: AtomicU64::new(0),
            }),
        })
    }

    /// Whether commands are profiled (kernel device times can be read from their events).
    pub fn profiling(&self) -> bool {
        self.inner.profiling
    }

    /// Whether the context was created against a GL context (`cl_khr_gl_sharing`).
    pub fn is_gl_shared(&self) -> bool {
        self.inner.gl_shared
    }

    /// A timeline for chains of launches on this context: it records events when the queue
    /// is profiled.
    pub fn timeline(&self) -> super::Timeline {
        super::Timeline::new(self.inner.profiling)
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    /// The OpenCL device handle.
    pub fn device(&self) -> &ClDevice {
        &self.inner.device
    }

    /// The underlying OpenCL context.
    pub fn cl_context(&self) -> &ClContext {
        &self.inner.context
    }

    /// The in-order, profiling-enabled command queue.
    pub fn queue(&self) -> &CommandQueue {
        &self.inner.queue
    }

    /// Waits until every command enqueued so far has completed.
    pub fn finish(&self) -> Result<()> {
        self.inner.queue.finish().during("clFinish")
    }

    /// An event that completes once every command enqueued so far has (a marker on the
    /// queue), without waiting: a frame's end that the next frame can wait for instead of
    /// draining the queue.
    pub fn enqueue_marker(&self) -> Result<opencl3::event::Event> {
        // SAFETY: an empty wait list; the event is owned by the returned value.
        unsafe { self.inner.queue.enqueue_marker_with_wait_list(&[]) }
            .during("clEnqueueMarkerWithWaitList")
    }

    /// Submits every command enqueued so far to the device, without waiting.
    pub fn flush(&self) -> Result<()> {
        self.inner.queue.flush().during("clFlush")
    }

    /// Bytes moved each way by this context's buffer reads and writes so far.
    pub fn transfers(&self) -> TransferCounters {
        TransferCounters {
            to_device: self.inner.to_device.load(Ordering::Relaxed),
            to_host: self.inner.to_host.load(Ordering::Relaxed),
        }
    }

    /// Bytes of device memory held by live [`DeviceBuffer`](super::DeviceBuffer)s.
    pub fn allocated_bytes(&self) -> u64 {
        self.inner.allocated.load(Ordering::Relaxed)
    }

    pub(super) fn count_to_device(&self, bytes: u64) {
        self.inner.to_device.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn count_to_host(&self, bytes: u64) {
        self.inner.to_host.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn count_allocation(&self, bytes: u64) {
        self.inner.allocated.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn count_release(&self, bytes: u64) {
        self.inner.allocated.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// An in-order command queue on `context`'s device, profiled when `profiling`.
fn create_queue(context: &ClContext, info: &DeviceInfo, profiling: bool) -> Result<CommandQueue> {
    let flags: cl_command_queue_properties = if profiling {
        CL_QUEUE_PROFILING_ENABLE
    } else {
        0
    };
    if opencl_major(&info.version) >= 2 {
        CommandQueue::create_default_with_properties(context, flags, 0)
    } else {
        #[allow(deprecated)]
        CommandQueue::create_default(context, flags)
    }
    .during(format!("clCreateCommandQueue on {}", info.label()))
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

#[cfg(test)]
mod tests {
    use super::opencl_major;

    #[test]
    fn reads_the_major_version() {
        assert_eq!(opencl_major("OpenCL 3.0 CUDA"), 3);
        assert_eq!(opencl_major("OpenCL 1.2 pocl"), 1);
        assert_eq!(opencl_major("garbage"), 1);
    }
}
