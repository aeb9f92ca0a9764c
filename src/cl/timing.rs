//! Kernel run times from OpenCL profiling events.

use std::time::Duration;

use opencl3::event::Event;

use super::error::{Result, ResultExt};

/// Device time between the start and the end of the command behind `event`.
///
/// Waits for the event first. Uses `CL_PROFILING_COMMAND_START/END`, so queueing time is not
/// included (unlike GMlib, which counted from `QUEUED`).
pub fn event_duration(event: &Event) -> Result<Duration> {
    event.wait().during("clWaitForEvents")?;
    let start = event
        .profiling_command_start()
        .during("clGetEventProfilingInfo(START)")?;
    let end = event
        .profiling_command_end()
        .during("clGetEventProfilingInfo(END)")?;
    Ok(Duration::from_nanos(end.saturating_sub(start)))
}

/// Accumulates the device time and launch count of one kernel over many launches.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelTimer {
    /// Total device time.
    pub total: Duration,
    /// Number of launches recorded.
    pub launches: u64,
}

impl KernelTimer {
    /// Adds the device time of the finished command behind `event`.
    pub fn record(&mut self, event: &Event) -> Result<Duration> {
        let d = event_duration(event)?;
        self.total += d;
        self.launches += 1;
        Ok(d)
    }

    /// Mean device time per launch, zero before the first launch.
    pub fn mean(&self) -> Duration {
        if self.launches == 0 {
            Duration::ZERO
        } else {
            self.total.div_f64(self.launches as f64)
        }
    }
}
