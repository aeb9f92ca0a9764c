//! The ground refresh's clock and books: every `wind.ground_refresh` simulated seconds (and on
//! demand) the laid snow raises the ground the wind sees ([`Simulation::refresh_ground`]); a
//! refresh is a stated hitch, counted here with its cost and its cost amortised over the frames.
//!
//! **Held back `wind.ground_refresh_lag` frames.** A refresh that falls due reads the cover's
//! depths at the start of its frame and hands them to a thread of its own
//! ([`PendingRefresh`]), which makes the plan (the columns' regrade, the new positions, the
//! inflow profile: [`GroundPlanner::plan`], host work only) while the frames go on; at the
//! start of the frame `lag` frames later the frame's thread applies it (the device's part:
//! [`crate::wind::Solver::apply_ground`], the snow's mesh and parcels), waiting for the plan
//! only if it is not ready. The frames are fixed, not the timing, so a run's state is the same
//! however long the plan took. A refresh due while one is still held back applies that one
//! first; one held back at the run's end is not applied (reported as `pending`).
//!
//! [`Simulation::refresh_ground`]: super::Simulation::refresh_ground

use std::sync::Arc;
use std::thread::JoinHandle;

use serde::Serialize;

use super::{Error, Result};
use crate::counters::ThreadUsage;
use crate::wind::{GroundPlan, GroundPlanner, RefreshStats, RefreshTimes};

/// Why a scene's ground is never refreshed, when it is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshOff {
    /// `wind.ground_refresh = 0`.
    Disabled,
    /// The domain is a mesh file: it has no columns to regrade.
    MeshDomain,
    /// The wind is a fixed field (the profile, or frozen after some steps): nothing to rebuild.
    FixedWind,
    /// The scene has no snow to raise the ground with.
    NoSnow,
}

impl RefreshOff {
    /// One line for the log and the report.
    pub fn message(self) -> &'static str {
        match self {
            Self::Disabled => "wind.ground_refresh is 0: the wind keeps the bare ground",
            Self::MeshDomain => {
                "wind.ground_refresh: the domain is a mesh file, whose ground the snow cannot \
                 regrade; the wind keeps the bare ground"
            }
            Self::FixedWind => {
                "wind.ground_refresh: the wind is a fixed field, not solved as the snow falls; \
                 it keeps the bare ground"
            }
            Self::NoSnow => "wind.ground_refresh: no snow falls; the wind keeps the bare ground",
        }
    }
}

/// One refresh that rebuilt the ground, as it went (`--json`'s `ground_refresh.each`): so that
/// a slow one shows where its time went, not only the last and the longest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RefreshEntry {
    /// The frame thread's wall time for it, ms: the read of the depths and, `lag_frames`
    /// later, the wait for its plan and the plan's application (with no lag, the plan too);
    /// the frames queued before each apart.
    pub ms: f64,
    /// Frames between the read of the depths and the application.
    pub lag_frames: u32,
    /// Of `ms`, the wait for the plan at the application (0 when it was ready), ms.
    pub wait_ms: f64,
    /// The waits for the frames queued before the read and before the application, ms.
    pub drain_ms: f64,
    /// Of `ms`, moving the snow's mesh and parcels, ms.
    pub snow_ms: f64,
    /// Of `ms`, reading the cover's depths (the raise), ms.
    pub depths_ms: f64,
    /// The wind's phases, ms (`phases.plan_ms` on the plan's own thread when held back).
    pub phases: RefreshTimes,
    /// What the host's scheduler gave the frame's thread in `ms` (the plan's hand-off apart) (its CPU time, the
    /// times it was preempted, the machine's steal): a refresh slow with a CPU time of the
    /// usual size was kept off its core, not given more work.
    pub thread: ThreadUsage,
}

/// What the ground refreshes did (`snowsim run --json`'s `ground_refresh`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RefreshReport {
    /// Simulated seconds between refreshes (0: none).
    pub every_s: f64,
    /// Why there are none, when there are none.
    pub off: Option<RefreshOff>,
    /// Refreshes that rebuilt the wind's ground.
    pub refreshes: u64,
    /// Refreshes that found the ground unchanged (nothing rebuilt).
    pub skipped: u64,
    /// Frames from a refresh's read of the depths to its application
    /// (`wind.ground_refresh_lag`).
    pub lag_frames: u32,
    /// Whether a refresh read before the end waits to be applied (it is not: the state is
    /// that of the refreshes applied).
    pub pending: bool,
    /// Refreshes read and dropped before they were applied: a refresh on demand read newer
    /// depths (their reads' cost is in `total_ms`).
    pub dropped: u64,
    /// The last refresh's host wall time, ms (its waits included, the frames queued before it
    /// apart: `last_drain_ms`).
    pub last_ms: f64,
    /// The waits for the frames queued before the last refresh's read and before its
    /// application, ms (their own work).
    pub last_drain_ms: f64,
    /// Of `last_ms`, moving the snow's mesh and parcels with the raised ground, ms.
    pub last_snow_ms: f64,
    /// The longest, ms.
    pub max_ms: f64,
    /// The wind's phases of the longest, ms.
    pub max_phases: RefreshTimes,
    /// Of `max_ms`, moving the snow's mesh and parcels, ms.
    pub max_snow_ms: f64,
    /// Which refresh was the longest (1: the first that rebuilt the ground; 0: one that found
    /// nothing to rebuild, before any that did).
    pub max_refresh: u64,
    /// All of them, ms.
    pub total_ms: f64,
    /// Their cost spread over the frames run, ms per frame.
    pub amortised_ms_per_frame: f64,
    /// The last refresh's re-projection: pressure iterations, and whether it converged.
    pub last_iterations: u32,
    /// Whether the last re-projection converged.
    pub last_converged: bool,
    /// The wind's phases of the last refresh that rebuilt the ground, ms.
    pub last_phases: RefreshTimes,
    /// Columns whose raise was clamped at half their air, in the last refresh.
    pub clamped_columns: usize,
    /// Parcels a raised ground buried, moved up onto it (all refreshes).
    pub buried_parcels: u64,
    /// Parcels not found under their column after a refresh, moved to its top.
    pub lost_parcels: u64,
    /// Every refresh that rebuilt the ground, in order.
    pub each: Vec<RefreshEntry>,
}

/// What a refresh cost the frame's thread, ms.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RefreshCost {
    /// The refresh, from the depths read to the snow moved (a held-back one's plan apart).
    pub ms: f64,
    /// The waits for the frames queued before it.
    pub drain_ms: f64,
    /// Of `ms`, reading the cover's depths.
    pub depths_ms: f64,
    /// Of `ms`, waiting for a held-back refresh's plan.
    pub wait_ms: f64,
    /// What the frame's thread was given meanwhile.
    pub thread: ThreadUsage,
}

impl RefreshCost {
    /// The cost of a refresh's start (`self`) and its application (`then`) together.
    pub fn and(self, then: Self) -> Self {
        Self {
            ms: self.ms + then.ms,
            drain_ms: self.drain_ms + then.drain_ms,
            depths_ms: self.depths_ms + then.depths_ms,
            wait_ms: self.wait_ms + then.wait_ms,
            thread: self.thread + then.thread,
        }
    }
}

/// A refresh's host work done: the wind's plan and the snow mesh's new coordinates as its
/// kernels read them.
#[derive(Debug)]
pub(crate) struct Planned {
    /// The wind's plan.
    pub plan: GroundPlan,
    /// The snow mesh's vertices, converted ([`crate::snow::device_coordinates`]).
    pub snow_coords: Vec<[f32; 4]>,
}

impl Planned {
    /// The host work of raising the ground by `raise`, on the calling thread.
    pub fn new(planner: &GroundPlanner, raise: &[f64]) -> crate::wind::Result<Self> {
        let plan = planner.plan(raise)?;
        let snow_coords = crate::snow::device_coordinates(plan.vertices());
        Ok(Self { plan, snow_coords })
    }
}

/// A refresh read and not yet applied: its plan made on a thread of its own, for the frame
/// `due` (the module's doc).
#[derive(Debug)]
pub(crate) struct PendingRefresh {
    /// The clock's frame at whose start its depths were read.
    pub read: u64,
    /// The clock's frame at whose start it is applied (earlier if the next refresh falls due
    /// first).
    pub due: u64,
    plan: PlanOf,
    /// What its read cost the frame's thread (the plan's hand-off included).
    pub started: RefreshCost,
}

/// Where a held-back refresh's plan is made.
#[derive(Debug)]
enum PlanOf {
    /// On its own thread.
    Thread(JoinHandle<crate::wind::Result<Planned>>),
    /// Made already, on the frame's thread: no lag, or the system would not start a thread.
    Made(Box<crate::wind::Result<Planned>>),
}

impl PendingRefresh {
    /// Starts the plan for `raise` (read at frame `read`), to be applied at frame `due`: on a
    /// thread of its own (`beside`), else now on this one, as also where the system refuses a
    /// thread (the same plan, later frames unchanged: only this frame's time grows).
    pub fn start(
        planner: Arc<GroundPlanner>,
        raise: Vec<f64>,
        read: u64,
        due: u64,
        beside: bool,
    ) -> Self {
        // Shared with the thread: a refused spawn drops its closure, and the plan is made here.
        let job = Arc::new((planner, raise));
        let on_thread = Arc::clone(&job);
        let thread = beside.then(|| {
            std::thread::Builder::new()
                .name("ground-plan".into())
                .spawn(move || Planned::new(&on_thread.0, &on_thread.1))
        });
        let plan = match thread {
            Some(Ok(thread)) => PlanOf::Thread(thread),
            _ => PlanOf::Made(Box::new(Planned::new(&job.0, &job.1))),
        };
        Self {
            read,
            due,
            plan,
            started: RefreshCost::default(),
        }
    }

    /// The plan, waiting for it if it is not ready.
    pub fn wait(self) -> Result<Planned> {
        let plan = match self.plan {
            PlanOf::Thread(thread) => thread.join().map_err(|_| {
                Error::Internal("the ground refresh's planning thread panicked".into())
            })?,
            PlanOf::Made(plan) => *plan,
        };
        Ok(plan?)
    }
}

/// What moving the snow with a raised ground did: parcels moved up onto it and lost, and
/// the host's wall time, ms.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SnowMoved {
    /// Parcels of the other ranks' shares the raised ground buried, moved up onto it (each
    /// snow device counts its own: [`crate::snow::Snow::relocated`]).
    pub up: u64,
    /// Parcels of the other ranks' shares not found under their column, moved to its top.
    pub lost: u64,
    /// The host's wall time of moving the snow, ms (the devices' searches for their parcels
    /// queued, not waited for).
    pub snow_ms: f64,
}

/// The refresh's clock and running books.
#[derive(Clone, Debug)]
pub(crate) struct RefreshClock {
    pub every: f64,
    pub off: Option<RefreshOff>,
    /// Frames from a refresh's read of the depths to its application.
    pub lag: u32,
    /// Frames ticked since the start or the last restart.
    frame: u64,
    clock: f64,
    pub report: RefreshReport,
    /// Whether the wind's ground is raised over the bare ground now (set as soon as the wind
    /// refreshes, before the snow follows, so that a reset after a failed refresh still puts
    /// the bare ground back).
    pub raised: bool,
}

impl RefreshClock {
    /// A clock for refreshes every `every` simulated seconds, each applied `lag` frames after
    /// its read, or none for the reason `off`.
    pub fn new(every: f64, off: Option<RefreshOff>, lag: u32) -> Self {
        let off = off.or((every <= 0.0).then_some(RefreshOff::Disabled));
        Self {
            every,
            off,
            lag,
            frame: 0,
            clock: 0.0,
            raised: false,
            report: RefreshReport {
                every_s: if off.is_some() { 0.0 } else { every },
                off,
                lag_frames: lag,
                ..RefreshReport::default()
            },
        }
    }

    /// Frames ticked since the start or the last restart (the frame being started, from 1).
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Starts a frame of `dt` simulated seconds; whether a refresh is due.
    pub fn tick(&mut self, dt: f32) -> bool {
        self.frame += 1;
        if self.off.is_some() {
            return false;
        }
        self.clock += f64::from(dt);
        if self.clock >= self.every * (1.0 - 1e-9) {
            self.clock = 0.0;
            return true;
        }
        false
    }

    /// Restarts the clock and the books (a reset of the simulation: its frames count from 0).
    pub fn restart(&mut self) {
        self.clock = 0.0;
        self.frame = 0;
        self.report = RefreshReport {
            every_s: self.report.every_s,
            off: self.report.off,
            lag_frames: self.report.lag_frames,
            ..RefreshReport::default()
        };
    }

    /// Books the read of a refresh's depths, at cost `read`: spent whether or not the refresh
    /// is applied.
    pub fn book_read(&mut self, read: &RefreshCost) {
        self.report.total_ms += read.ms;
    }

    /// Books a refresh read and dropped before it was applied.
    pub fn book_dropped(&mut self) {
        self.report.dropped += 1;
    }

    /// Books a refresh whose read cost `read` (booked already: [`book_read`](Self::book_read))
    /// and whose application `lag` frames later cost `applied`, with the wind's `stats` and
    /// what moving the snow did.
    pub fn book(
        &mut self,
        stats: &RefreshStats,
        read: RefreshCost,
        applied: RefreshCost,
        lag: u32,
        moved: SnowMoved,
    ) {
        let cost = read.and(applied);
        let ms = cost.ms;
        let r = &mut self.report;
        if stats.skipped {
            r.skipped += 1;
        } else {
            r.refreshes += 1;
            r.last_iterations = stats.iterations;
            r.last_converged = stats.converged;
            r.clamped_columns = stats.clamped;
            r.last_phases = stats.times;
            r.last_snow_ms = moved.snow_ms;
            r.each.push(RefreshEntry {
                ms,
                lag_frames: lag,
                wait_ms: cost.wait_ms,
                drain_ms: cost.drain_ms,
                snow_ms: moved.snow_ms,
                phases: stats.times,
                depths_ms: cost.depths_ms,
                thread: cost.thread,
            });
        }
        r.last_drain_ms = cost.drain_ms;
        r.last_ms = ms;
        if ms > r.max_ms {
            r.max_ms = ms;
            r.max_phases = stats.times;
            r.max_snow_ms = moved.snow_ms;
            r.max_refresh = r.refreshes;
        }
        r.total_ms += applied.ms;
        r.buried_parcels += moved.up;
        r.lost_parcels += moved.lost;
    }

    /// The books, with the cost spread over `frames`; `pending`: whether a refresh waits to
    /// be applied.
    pub fn report(&self, frames: u64, pending: bool) -> RefreshReport {
        RefreshReport {
            amortised_ms_per_frame: self.report.total_ms / frames.max(1) as f64,
            pending,
            ..self.report.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_fires_every_interval_and_never_when_off() {
        let mut clock = RefreshClock::new(1.0, None, 0);
        let fired: Vec<bool> = (0..25).map(|_| clock.tick(0.1)).collect();
        let at: Vec<usize> = fired
            .iter()
            .enumerate()
            .filter(|(_, f)| **f)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(at, vec![9, 19]);
        assert_eq!(clock.frame(), 25);
        let mut off = RefreshClock::new(0.0, None, 0);
        assert!((0..100).all(|_| !off.tick(1.0)));
        assert_eq!(off.report(1, false).off, Some(RefreshOff::Disabled));
        let mut mesh = RefreshClock::new(5.0, Some(RefreshOff::MeshDomain), 0);
        assert!((0..100).all(|_| !mesh.tick(1.0)));
        assert_eq!(mesh.report(1, false).every_s, 0.0);
    }
}
