//! The ground refresh's clock and books: every `wind.ground_refresh` simulated seconds (and on
//! demand) the laid snow raises the ground the wind sees ([`Simulation::refresh_ground`]); a
//! refresh is a stated hitch, counted here with its cost and its cost amortised over the frames.
//!
//! [`Simulation::refresh_ground`]: super::Simulation::refresh_ground

use serde::Serialize;

use crate::counters::ThreadUsage;
use crate::wind::{RefreshStats, RefreshTimes};

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
    /// Its host wall time, ms (the frames queued before it apart).
    pub ms: f64,
    /// The wait for the frames queued before it, ms.
    pub drain_ms: f64,
    /// Of `ms`, moving the snow's mesh and parcels, ms.
    pub snow_ms: f64,
    /// Of `ms`, reading the cover's depths (the raise), ms.
    pub depths_ms: f64,
    /// The wind's phases, ms.
    pub phases: RefreshTimes,
    /// What the host's scheduler gave the refresh's thread meanwhile (its CPU time, the
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
    /// The last refresh's host wall time, ms (its waits included, the frames queued before it
    /// apart: `last_drain_ms`).
    pub last_ms: f64,
    /// The wait for the frames queued before the last refresh, ms (their own work).
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

/// What a refresh cost the host, ms.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RefreshCost {
    /// The refresh, from the depths read to the snow moved.
    pub ms: f64,
    /// The wait for the frames queued before it.
    pub drain_ms: f64,
    /// Of `ms`, reading the cover's depths.
    pub depths_ms: f64,
    /// What the refresh's thread was given meanwhile.
    pub thread: ThreadUsage,
}

/// What moving the snow with a raised ground did: parcels moved up onto it and lost, and
/// the host's wall time, ms.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SnowMoved {
    /// Parcels the raised ground buried, moved up onto it.
    pub up: u64,
    /// Parcels not found under their column, moved to its top.
    pub lost: u64,
    /// The host's wall time of moving the snow, ms.
    pub snow_ms: f64,
}

/// The refresh's clock and running books.
#[derive(Clone, Debug)]
pub(crate) struct RefreshClock {
    pub every: f64,
    pub off: Option<RefreshOff>,
    clock: f64,
    pub report: RefreshReport,
    /// Whether the wind's ground is raised over the bare ground now (set as soon as the wind
    /// refreshes, before the snow follows, so that a reset after a failed refresh still puts
    /// the bare ground back).
    pub raised: bool,
}

impl RefreshClock {
    /// A clock for refreshes every `every` simulated seconds, or none for the reason `off`.
    pub fn new(every: f64, off: Option<RefreshOff>) -> Self {
        let off = off.or((every <= 0.0).then_some(RefreshOff::Disabled));
        Self {
            every,
            off,
            clock: 0.0,
            raised: false,
            report: RefreshReport {
                every_s: if off.is_some() { 0.0 } else { every },
                off,
                ..RefreshReport::default()
            },
        }
    }

    /// Advances the clock by `dt`; whether a refresh is due.
    pub fn tick(&mut self, dt: f32) -> bool {
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
        self.report = RefreshReport {
            every_s: self.report.every_s,
            off: self.report.off,
            ..RefreshReport::default()
        };
    }

    /// Books a refresh that cost `cost`, with the wind's `stats` and what moving the snow did.
    pub fn book(&mut self, stats: &RefreshStats, cost: RefreshCost, moved: SnowMoved) {
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
        r.total_ms += ms;
        r.buried_parcels += moved.up;
        r.lost_parcels += moved.lost;
    }

    /// The books, with the cost spread over `frames`.
    pub fn report(&self, frames: u64) -> RefreshReport {
        RefreshReport {
            amortised_ms_per_frame: self.report.total_ms / frames.max(1) as f64,
            ..self.report.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_fires_every_interval_and_never_when_off() {
        let mut clock = RefreshClock::new(1.0, None);
        let fired: Vec<bool> = (0..25).map(|_| clock.tick(0.1)).collect();
        let at: Vec<usize> = fired
            .iter()
            .enumerate()
            .filter(|(_, f)| **f)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(at, vec![9, 19]);
        let mut off = RefreshClock::new(0.0, None);
        assert!((0..100).all(|_| !off.tick(1.0)));
        assert_eq!(off.report(1).off, Some(RefreshOff::Disabled));
        let mut mesh = RefreshClock::new(5.0, Some(RefreshOff::MeshDomain));
        assert!((0..100).all(|_| !mesh.tick(1.0)));
        assert_eq!(mesh.report(1).every_s, 0.0);
    }
}
