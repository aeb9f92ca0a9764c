//! A thin layer over [`opencl3`]: device listing and selection, a context with a profiled
//! in-order queue, program builds whose failures carry the full build log, typed buffers and
//! event timing.
//!
//! Everything snowsim runs on a device goes through here, so that errors always say which
//! call failed on which device.

mod buffer;
mod context;
mod device;
mod error;
mod launch;
mod program;
mod timing;

pub use buffer::DeviceBuffer;
pub use context::{Context, TransferCounters};
pub use device::{DeviceEntry, DeviceInfo, DeviceSelector, DeviceType, list_devices};
pub use error::{Error, Result};
pub use launch::WorkSize;
pub use program::{KERNEL_DIR_ENV, Program, Source};
pub use timing::{KernelTimer, event_duration};
