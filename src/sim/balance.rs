//! Shares of the parcels that follow each device's measured cost (`--snow-shares auto`): a
//! short run with equal shares times each device's snow and the wind on the device it runs
//! on, and the shares are set so that every device would finish its frame at the same time.
//! The run itself then starts afresh with them: the shares change where the parcels are, not
//! what they do (the split equals one device's bit for bit whatever they are).
//!
//! The calibration sees the wind's first steps after its start-up solve, whose pressure
//! solves take several times the iterations of later ones (on the valley its wind cost 3.6–5.3
//! ms a frame there against about 1 ms later): it gives the wind's device too few parcels
//! there, which is why it is not the default.

use crate::cl::{Context, DeviceBuffer, OutputBuffer, Timeline};
use crate::particle::Particle;

use super::setup::SimSetup;
use super::{Result, Simulation};

/// Frames the calibration runs before it times anything (first launches, first touches).
pub const WARM_FRAMES: u32 = 4;
/// Frames it times.
pub const TIMED_FRAMES: u32 = 8;

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
/// [`TIMED_FRAMES`] timed ones, undrawn. `None` without a split.
pub fn measure(context: &Context, setup: &SimSetup) -> Result<Option<Vec<DeviceCost>>> {
    if setup
        .scene
        .as_ref()
        .and_then(|s| s.split.as_ref())
        .is_none()
    {
        return Ok(None);
    }
    let mut sim = Simulation::new(context, setup.clone())?;
    let mut buffer = DeviceBuffer::<Particle>::uninit(context, sim.particle_count().max(1))?;
    let mut untimed = Timeline::new(false);
    let mut particles = OutputBuffer::Device(&mut buffer);
    sim.reset(context, &mut particles, &mut untimed)?;
    for _ in 0..WARM_FRAMES {
        sim.step(context, &mut particles, &mut untimed)?;
    }
    sim.settle()?;
    untimed.wait()?;
    sim.device_costs(context, &mut particles, TIMED_FRAMES)
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
