//! Shares of the parcels that follow each device's measured cost (`--snow-shares auto`, the
//! default of a split): a short run with equal shares times each device's snow and the wind on
//! the device it runs on, and the shares are set so that every device would finish its frame
//! at the same time. The run itself then starts afresh with them: the shares change where the
//! parcels are, not what they do (the split equals one device's bit for bit whatever they are).
//!
//! The wind's first steps after its start-up solve take several times the pressure iterations
//! of later ones (on the valley 3.6–5.3 ms a frame against about 1 ms later): timed there, the
//! wind's device would get too few parcels. So the calibration times window after window (of
//! [`TIMED_FRAMES`] frames, or two wind steps' worth where the wind steps less often than every
//! fourth frame) until the wind's cost of two windows in a row agrees within [`SETTLED`], and
//! keeps the last. The wind's cost a frame is its cost per step run in the window times the
//! steps a frame makes due on average, so a window that holds one step more or less than the
//! average does not skew it.

use crate::cl::{Context, DeviceBuffer, OutputBuffer, Timeline};
use crate::particle::Particle;

use super::setup::SimSetup;
use super::{Result, Simulation};

/// Frames the calibration runs before it times anything (first launches, first touches).
pub const WARM_FRAMES: u32 = 4;
/// Frames in one timed window, at least.
pub const TIMED_FRAMES: u32 = 8;
/// Frames in one timed window, at most (a wind that steps this rarely costs little a frame).
pub const MAX_WINDOW_FRAMES: u32 = 256;
/// Windows timed at most, should the wind's cost never settle.
pub const MAX_WINDOWS: u32 = 24;
/// How close the wind's cost per frame of two windows in a row must be (relative) for the
/// later one to stand.
pub const SETTLED: f64 = 0.1;

/// What the calibration measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Per snow device, the snow's own first, its cost in the last window.
    pub costs: Vec<DeviceCost>,
    /// The frames run, the warm ones included.
    pub frames: u32,
    /// The frames of each timed window.
    pub window: u32,
}

/// The frames of a timed window: [`TIMED_FRAMES`], or two wind steps' worth when a wind step
/// spans more than four frames (`frames_per_step`), at most [`MAX_WINDOW_FRAMES`].
pub fn window_frames(frames_per_step: Option<f64>) -> u32 {
    let steps = frames_per_step.map_or(0.0, |f| (2.0 * f).ceil());
    match steps.is_finite() && steps > f64::from(TIMED_FRAMES) {
        true => (steps as u32).min(MAX_WINDOW_FRAMES),
        false => TIMED_FRAMES,
    }
}

/// What one device's frame cost in the calibration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceCost {
    /// The parcels it held.
    pub parcels: usize,
    /// Its snow's device time per frame, ms.
    pub snow_ms: f64,
    /// The wind's time per frame on it, ms (0 where the wind runs elsewhere).
    pub wind_ms: f64,
}

/// The parcels each device should hold of `total` so that every one finishes its frame at
/// the same time, from `costs` (the snow's cost proportional to the parcels, the wind's
/// fixed): device d takes (T − wind_d) / c_d with c_d its snow's cost per parcel and T the
/// common frame time, at least 1 % of the parcels each (a device slower than the rest still
/// holds some). Returned as weights for [`super::shares::split`].
pub fn balanced(total: usize, costs: &[DeviceCost]) -> Vec<f64> {
    let per_parcel: Vec<f64> = costs
        .iter()
        .map(|c| match (c.parcels, c.snow_ms > 0.0) {
            (0, _) | (_, false) => f64::NAN,
            (n, true) => c.snow_ms / n as f64,
        })
        .collect();
    if per_parcel.iter().any(|c| !c.is_finite()) {
        // Nothing to go by: equal shares.
        return vec![1.0; costs.len()];
    }
    let n = total as f64;
    let inverse: f64 = per_parcel.iter().map(|c| 1.0 / c).sum();
    let fixed: f64 = costs
        .iter()
        .zip(&per_parcel)
        .map(|(d, c)| d.wind_ms / c)
        .sum();
    let frame = (n + fixed) / inverse;
    costs
        .iter()
        .zip(&per_parcel)
        .map(|(d, c)| ((frame - d.wind_ms) / c).max(0.01 * n))
        .collect()
}

/// Measures what each snow device of `setup`'s split costs, on `context` (the snow's own
/// device): the simulation built with the setup's shares runs [`WARM_FRAMES`] frames, then
/// timed windows ([`window_frames`]) until the wind's cost settles ([`settled`]). The steps
/// write the parcels as drawn on every device when the run will be `drawn`, on none
/// otherwise, as the run's own steps will (16 bytes a parcel a step that a device's cost
/// must count or not alike). `None` without a split.
pub fn measure(context: &Context, setup: &SimSetup, drawn: bool) -> Result<Option<Calibration>> {
    if setup
        .scene
        .as_ref()
        .and_then(|s| s.split.as_ref())
        .is_none()
    {
        return Ok(None);
    }
    let mut sim = Simulation::new(context, setup.clone())?;
    if drawn {
        sim.draw_all()?;
    } else {
        sim.undrawn();
    }
    let mut buffer = DeviceBuffer::<Particle>::uninit(context, sim.particle_count().max(1))?;
    let mut untimed = Timeline::new(false);
    let mut particles = OutputBuffer::Device(&mut buffer);
    sim.reset(context, &mut particles, &mut untimed)?;
    for _ in 0..WARM_FRAMES {
        sim.step(context, &mut particles, &mut untimed)?;
    }
    sim.settle()?;
    untimed.wait()?;
    let window = window_frames(sim.frames_per_wind_step());
    let mut frames = WARM_FRAMES;
    let mut last: Option<Vec<DeviceCost>> = None;
    for _ in 0..MAX_WINDOWS {
        let Some(costs) = sim.device_costs(context, &mut particles, window)? else {
            return Ok(None);
        };
        frames += window;
        let done = last.as_deref().is_some_and(|l| settled(l, &costs));
        last = Some(costs);
        if done {
            break;
        }
    }
    Ok(last.map(|costs| Calibration {
        costs,
        frames,
        window,
    }))
}

/// Whether the wind's cost per frame, summed over the devices, of window `now` is within
/// [`SETTLED`] of window `before`'s.
pub fn settled(before: &[DeviceCost], now: &[DeviceCost]) -> bool {
    let wind = |c: &[DeviceCost]| c.iter().map(|d| d.wind_ms).sum::<f64>();
    let (a, b) = (wind(before), wind(now));
    (a - b).abs() <= SETTLED * a.max(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(parcels: usize, snow_ms: f64, wind_ms: f64) -> DeviceCost {
        DeviceCost {
            parcels,
            snow_ms,
            wind_ms,
        }
    }

    /// Each device's frame, snow and wind, with `shares` of the parcels.
    fn frames(costs: &[DeviceCost], shares: &[f64]) -> Vec<f64> {
        costs
            .iter()
            .zip(shares)
            .map(|(c, n)| c.snow_ms / c.parcels as f64 * n + c.wind_ms)
            .collect()
    }

    #[test]
    fn the_device_that_runs_the_wind_takes_fewer_parcels_and_all_finish_together() {
        let costs = [cost(500_000, 0.5, 0.5), cost(500_000, 0.5, 0.0)];
        let shares = balanced(1_000_000, &costs);
        assert!((shares[0] - 250_000.0).abs() < 1e-6, "{shares:?}");
        assert!((shares[1] - 750_000.0).abs() < 1e-6, "{shares:?}");
        let f = frames(&costs, &shares);
        assert!(
            (f[0] - f[1]).abs() < 1e-9 && (f[0] - 0.75).abs() < 1e-9,
            "{f:?}"
        );
    }

    #[test]
    fn a_device_twice_as_slow_per_parcel_takes_half_as_many() {
        let costs = [
            cost(300, 3.0, 0.0),
            cost(300, 6.0, 0.0),
            cost(400, 4.0, 0.0),
        ];
        let shares = balanced(1000, &costs);
        assert!((shares[0] / shares[1] - 2.0).abs() < 1e-9, "{shares:?}");
        assert!(
            (shares.iter().sum::<f64>() - 1000.0).abs() < 1e-9,
            "{shares:?}"
        );
        let f = frames(&costs, &shares);
        assert!(f.windows(2).all(|w| (w[0] - w[1]).abs() < 1e-9), "{f:?}");
    }

    #[test]
    fn the_calibration_waits_for_the_winds_cost_to_settle() {
        let start = [cost(500, 1.0, 4.0), cost(500, 1.0, 0.0)];
        let later = [cost(500, 1.1, 1.2), cost(500, 0.9, 0.0)];
        let steady = [cost(500, 1.0, 1.1), cost(500, 1.0, 0.0)];
        assert!(!settled(&start, &later));
        assert!(settled(&later, &steady));
        // No wind at all (a fixed field) settles at once.
        let still = [cost(500, 1.0, 0.0), cost(500, 1.0, 0.0)];
        assert!(settled(&still, &still));
    }

    #[test]
    fn a_window_spans_two_wind_steps_where_the_wind_steps_rarely() {
        assert_eq!(window_frames(None), TIMED_FRAMES);
        assert_eq!(window_frames(Some(1.0)), TIMED_FRAMES);
        assert_eq!(window_frames(Some(0.2)), TIMED_FRAMES);
        assert_eq!(window_frames(Some(24.3)), 49);
        assert_eq!(window_frames(Some(1e6)), MAX_WINDOW_FRAMES);
    }

    #[test]
    fn a_wind_longer_than_the_frame_leaves_its_device_one_percent_and_no_timing_gives_equal_shares()
    {
        let shares = balanced(1000, &[cost(500, 1.0, 50.0), cost(500, 1.0, 0.0)]);
        assert_eq!(shares[0], 10.0, "{shares:?}");
        assert!(shares[1] > 990.0, "{shares:?}");
        assert_eq!(
            balanced(1000, &[cost(500, 0.0, 0.0), cost(500, 1.0, 0.0)]),
            [1.0, 1.0]
        );
        assert_eq!(
            balanced(1000, &[cost(0, 1.0, 0.0), cost(1000, 1.0, 0.0)]),
            [1.0, 1.0]
        );
    }
}
