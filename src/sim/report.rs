//! What a run reports about its simulation (`snowsim run --json`'s `snow`), read from the
//! device once, when the run ends.

use serde::Serialize;

/// The snow's counts and cover, and the wind's steps, at the end of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SimReport {
    /// Particles (parcels) simulated: zero when the wind runs alone.
    pub particles: usize,
    /// Landings on the ground.
    pub landed: u64,
    /// Respawns at the top, for any reason.
    pub respawned: u64,
    /// Wraps through a side.
    pub wrapped: u64,
    /// Respawns of particles no walk could locate.
    pub lost: u64,
    /// Snow on the ground, m³.
    pub deposited_m3: f64,
    /// The deepest snow at a ground vertex, m.
    pub max_depth_m: f32,
    /// Drifting snow (`None` with `ground.drift = false`).
    pub drift: Option<DriftReport>,
    /// The ground refreshes (`None` without a scene).
    pub ground_refresh: Option<super::RefreshReport>,
    /// Volume of one parcel, m³.
    pub parcel_m3: f64,
    /// Wind steps run (0 when the wind is the fixed profile).
    pub wind_steps: u64,
    /// Mean pressure-solver iterations per wind step.
    pub wind_iterations: f64,
    /// What the parcels split across devices moved between them each frame (`None` on one
    /// device).
    pub split_traffic: Option<super::shares::SplitTraffic>,
    /// Where the host waited for the split each frame (`None` on one device).
    pub split_waits: Option<super::shares::SplitWaits>,
    /// Per device beside the snow's own (in `snow_devices`' order), the device time of its
    /// launches per timed frame, ms (`None` on one device; a device's `None` before a timed
    /// frame): the snow's own is in `stages`.
    pub split_device_ms: Option<Vec<Option<f64>>>,
    /// The falling snow's density at the scene's camera relative to the uniform snowfall of
    /// the scene's real rate (`snow::RelativeDensity`): the flakes there are this times
    /// `snow::Snowfall::number_density`; `None` without snow.
    pub flake_density_at_camera: Option<f64>,
}

/// What the wind did to the laid snow (`snowsim run --json`'s `snow.drift`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DriftReport {
    /// Lifted by the wind since the start, m³ of laid snow: each frame, every cover vertex's
    /// net loss, summed (laid again downwind or blown out).
    pub eroded_m3: f64,
    /// Blown out through the domain's sides, m³.
    pub blown_out_m3: f64,
    /// Lifted into suspension since the start, m³ of laid snow (0 with `ground.suspension`
    /// off): carried by the parcels of the bottom layer and laid where they land.
    pub suspended_m3: f64,
    /// What the parcels carry in suspension now, m³.
    pub in_suspension_m3: f64,
    /// The largest friction velocity on the cover now, m/s.
    pub max_friction_velocity: f32,
    /// The largest saltation flux on the cover now, m² of laid snow per second (real time).
    pub max_saltation_flux: f32,
}
