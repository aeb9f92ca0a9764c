//! An OpenCL context on one device with a profiled in-order queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context as ClContext;
use opencl3::device::Device as ClDevice;

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

/// One device, its OpenCL context and an in-order command queue with profiling enabled.
///
/// Every buffer, program and kernel launch in snowsim belongs to one `Context`. Several
/// contexts, on one device or several, can live side by side. Cloning is cheap and shares the
/// same OpenCL objects, so buffers can keep their context alive.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    info: DeviceInfo,
    device: ClDevice,
    context: ClContext,
    queue: CommandQueue,
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
        let label = entry.info.label();
        let context =
            ClContext::from_device(&entry.device).during(format!("clCreateContext on {label}"))?;
        let queue = if opencl_major(&entry.info.version) >= 2 {
            CommandQueue::create_default_with_properties(&context, CL_QUEUE_PROFILING_ENABLE, 0)
        } else {
            #[allow(deprecated)]
            CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
        }
        .during(format!("clCreateCommandQueue on {label}"))?;
        Ok(Self {
            inner: Arc::new(Inner {
                info: entry.info.clone(),
                device: entry.device,
                context,
                queue,
                to_device: AtomicU64::new(0),
                to_host: AtomicU64::new(0),
                allocated: AtomicU64::new(0),
            }),
        })
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
