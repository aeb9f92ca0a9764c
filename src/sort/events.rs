//! The kernel launches of one sort, and their device time from OpenCL profiling.

use std::time::Duration;

use opencl3::event::Event;

use crate::cl;

/// The launches one sort, step or permutation enqueued, in order.
///
/// Launches are asynchronous: the methods that report times wait for the events first. The
/// queue is in order, so reading a sorted buffer back needs no explicit wait.
#[derive(Default)]
pub struct SortEvents {
    launches: Vec<(&'static str, Event)>,
}

impl SortEvents {
    pub(crate) fn push(&mut self, kernel: &'static str, event: Event) {
        self.launches.push((kernel, event));
    }

    pub(crate) fn append(&mut self, mut other: SortEvents) {
        self.launches.append(&mut other.launches);
    }

    /// Number of kernel launches.
    pub fn len(&self) -> usize {
        self.launches.len()
    }

    /// Whether nothing was launched (an empty or one-element array).
    pub fn is_empty(&self) -> bool {
        self.launches.is_empty()
    }

    /// Waits until every launch has finished.
    pub fn wait(&self) -> Result<(), cl::Error> {
        for (_, event) in &self.launches {
            cl::event_duration(event)?;
        }
        Ok(())
    }

    /// Sum of the device times (`CL_PROFILING_COMMAND_START..END`) of all launches, after
    /// waiting for them: the cost of the sort on the device, without launch gaps.
    pub fn device_time(&self) -> Result<Duration, cl::Error> {
        self.per_kernel()
            .map(|times| times.iter().map(|(_, d)| *d).sum())
    }

    /// Device time of each launch, in launch order, after waiting for them.
    pub fn per_kernel(&self) -> Result<Vec<(&'static str, Duration)>, cl::Error> {
        self.launches
            .iter()
            .map(|(name, event)| Ok((*name, cl::event_duration(event)?)))
            .collect()
    }
}

impl std::fmt::Debug for SortEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.launches.iter().map(|(name, _)| name))
            .finish()
    }
}
