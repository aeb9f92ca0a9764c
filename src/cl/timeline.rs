//! The launches of a frame (or of any chain that does not wait), grouped into named stages,
//! read once at the end instead of after every launch.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use opencl3::event::Event;

use super::error::{Error, Result, ResultExt};
use crate::counters::StageTime;

/// One enqueued command.
struct Launch {
    stage: usize,
    kernel: Arc<str>,
    event: Event,
}

/// Launches enqueued without waiting, each under the stage that was current when it was
/// enqueued (`wind.advect`, `sort.merge`, …).
///
/// A timeline that [records events](Self::records_events) keeps each launch's profiling event;
/// [`resolve`](Self::resolve) waits for them once and returns, per stage, the sum of the kernels'
/// device times and the span from the first start to the last end (their difference is what the
/// gaps between launches cost). One that does not record events only counts launches: the
/// driver then creates no event at all, the cheapest way to enqueue.
pub struct Timeline {
    record: bool,
    stages: Vec<Cow<'static, str>>,
    current: usize,
    launches: Vec<Launch>,
    untimed: u64,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new(true)
    }
}

impl std::fmt::Debug for Timeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.launches.iter().map(|l| &*l.kernel))
            .finish()
    }
}

impl Timeline {
    /// An empty timeline in the stage `main`; `record_events` says whether launches keep their
    /// profiling events.
    pub fn new(record_events: bool) -> Self {
        Self {
            record: record_events,
            stages: vec![Cow::Borrowed("main")],
            current: 0,
            launches: Vec::new(),
            untimed: 0,
        }
    }

    /// Whether launches keep their events (and so can be timed and checked).
    pub fn records_events(&self) -> bool {
        self.record
    }

    /// Whether the launches that follow keep their events: a run that times one frame in
    /// several turns them off for the others (on NVIDIA an event costs ~8 µs of host time per
    /// launch). Only on a profiling queue may they be turned on.
    pub fn set_records_events(&mut self, on: bool) {
        self.record = on;
    }

    /// Makes `name` the stage of the launches that follow.
    pub fn stage(&mut self, name: impl Into<Cow<'static, str>>) -> &mut Self {
        let name = name.into();
        self.current = match self.stages.iter().position(|s| *s == name) {
            Some(i) => i,
            None => {
                self.stages.push(name);
                self.stages.len() - 1
            }
        };
        self
    }

    /// The current stage's name.
    pub fn current_stage(&self) -> &str {
        &self.stages[self.current]
    }

    /// Records the event of a command enqueued under the current stage.
    pub fn push(&mut self, kernel: impl Into<Arc<str>>, event: Event) {
        self.launches.push(Launch {
            stage: self.current,
            kernel: kernel.into(),
            event,
        });
    }

    pub(super) fn count_untimed(&mut self) {
        self.untimed += 1;
    }

    /// Moves every launch of `other` to the end of this timeline, keeping their stages. A
    /// timeline that does not record events counts them as untimed launches.
    pub fn append(&mut self, other: Timeline) {
        let current = self.current;
        self.untimed += other.untimed;
        if !self.record {
            self.untimed += other.launches.len() as u64;
            return;
        }
        for launch in other.launches {
            self.stage(other.stages[launch.stage].clone());
            self.launches.push(Launch {
                stage: self.current,
                ..launch
            });
        }
        self.current = current;
    }

    /// Number of launches recorded (with or without events).
    pub fn len(&self) -> usize {
        self.launches.len() + self.untimed as usize
    }

    /// Whether nothing was launched.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for every recorded launch; a launch that failed on the device is an error naming
    /// its stage and kernel.
    pub fn wait(&self) -> Result<()> {
        for launch in &self.launches {
            self.wait_one(launch)?;
        }
        Ok(())
    }

    fn wait_one(&self, launch: &Launch) -> Result<()> {
        let failed = |code| Error::Stage {
            stage: self.stages[launch.stage].to_string(),
            kernel: launch.kernel.to_string(),
            code,
        };
        launch.event.wait().map_err(failed)?;
        let status = launch
            .event
            .command_execution_status()
            .during("clGetEventInfo(COMMAND_EXECUTION_STATUS)")?;
        if status.0 < 0 {
            return Err(failed(opencl3::error_codes::ClError(status.0)));
        }
        Ok(())
    }

    fn duration_of(&self, launch: &Launch) -> Result<(u64, u64)> {
        self.wait_one(launch)?;
        let start = launch
            .event
            .profiling_command_start()
            .during("clGetEventProfilingInfo(START)")?;
        let end = launch
            .event
            .profiling_command_end()
            .during("clGetEventProfilingInfo(END)")?;
        Ok((start, end.max(start)))
    }

    /// Device time of each launch, in launch order, after waiting for them.
    pub fn per_launch(&self) -> Result<Vec<(&str, &str, Duration)>> {
        self.launches
            .iter()
            .map(|l| {
                let (start, end) = self.duration_of(l)?;
                Ok((
                    &*self.stages[l.stage],
                    &*l.kernel,
                    Duration::from_nanos(end - start),
                ))
            })
            .collect()
    }

    /// Sum of the device times of every launch, after waiting for them.
    pub fn device_time(&self) -> Result<Duration> {
        Ok(self.per_launch()?.iter().map(|(_, _, d)| *d).sum())
    }

    /// Per stage, in the order the stages first appeared: launches, the sum of their device
    /// times and their span. Waits for every launch first.
    pub fn stage_times(&self) -> Result<Vec<StageTime>> {
        let mut times: Vec<Option<(StageTime, u64, u64)>> = vec![None; self.stages.len()];
        for launch in &self.launches {
            let (start, end) = self.duration_of(launch)?;
            let entry = times[launch.stage].get_or_insert_with(|| {
                (
                    StageTime {
                        stage: self.stages[launch.stage].to_string(),
                        device: true,
                        ..StageTime::default()
                    },
                    start,
                    end,
                )
            });
            entry.0.launches += 1;
            entry.0.busy += Duration::from_nanos(end - start);
            entry.1 = entry.1.min(start);
            entry.2 = entry.2.max(end);
        }
        Ok(times
            .into_iter()
            .flatten()
            .map(|(mut t, first, last)| {
                t.span = Duration::from_nanos(last - first);
                t
            })
            .collect())
    }

    /// Like [`stage_times`](Self::stage_times), then forgets every launch (the stages stay, the
    /// current one too), so the timeline can collect the next frame.
    pub fn resolve(&mut self) -> Result<Vec<StageTime>> {
        let times = self.stage_times()?;
        self.launches.clear();
        self.untimed = 0;
        Ok(times)
    }
}
