//! A thin layer over [`opencl3`]: device listing and selection, a context with a profiled
//! in-order queue (plain or shared with OpenGL), program builds whose failures carry the full
//! build log, kernels whose arguments are checked against their declaration, typed buffers
//! (device and GL-shared), and timelines of launches that do not wait.
//!
//! Everything snowsim runs on a device goes through here, so that errors always say which
//! call failed on which device.

mod buffer;
mod context;
mod device;
mod error;
pub mod external;
mod gl_buffer;
mod kernel;
mod launch;
mod pinned;
mod program;
mod timeline;
mod timing;

pub use buffer::{BufferArg, DeviceBuffer, PendingRead, RetainedMem, enqueue_write_at};
pub use context::{Context, ContextOptions, TransferCounters};
pub use device::{
    DeviceEntry, DeviceInfo, DeviceSelector, DeviceType, list_devices, pci_bus_text, uuid_text,
};
pub use error::{Error, Result};
pub use gl_buffer::{GlBuffer, OutputBuffer};
pub use kernel::{ArgType, Kernel, KernelCall};
pub use launch::WorkSize;
pub use pinned::{PinnedBuffer, wait_for};
pub use program::{KERNEL_DIR_ENV, KERNEL_LOG_ENV, KERNEL_OPTIONS_ENV, Program, Source};
pub use timeline::Timeline;
pub use timing::{KernelTimer, event_duration};
