//! The snow's settings, from a scene or set by hand.

use crate::scene::{Scene, SortKey, SortMode};

use super::drift::{Ageing, DriftSettings};
use super::{Error, Result};

/// Fixed-point units per parcel of snow in real time: one unit is the real parcel volume over
/// this, fixed at the start; a landing lays `round(time.acceleration · PARCEL_UNITS)` units
/// ([`SnowConfig::landing_units`]).
pub const PARCEL_UNITS: u64 = 1 << 24;

/// The footprint's diameter over the mean parcel spacing `(air volume / parcels)^⅓`: a parcel
/// stands for the flakes of its share of the air, and they land spread over about its width
/// (never wider: a wider footprint would blur the drifts the wind makes).
pub const FOOTPRINT_FRACTION: f64 = 1.0;

/// Drawn radius of a mean flake over the mean parcel spacing in `snowsim run`: parcels 26 m
/// apart in the valley are drawn 0.5 m wide, 7 pixels at 100 m, the renderer's pixel floor
/// further away.
pub const DRAW_FRACTION: f32 = 0.01;

/// How particles are sorted in the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortSettings {
    /// Full, partial or no sort.
    pub mode: SortMode,
    /// With `Partial`: a full sort every this many frames (0: never after the first).
    pub full_every: u32,
    /// Sort on one frame in this many (at least 1); the others keep the order they have.
    pub every: u32,
    /// Block length of the sorts (`None`: the sort's default for the device).
    pub block_len: Option<usize>,
    /// What particles are sorted by: their tetrahedron, or their cell along a 3D Hilbert
    /// curve over the domain's box (1024 cells per axis).
    pub key: SortKey,
}

/// Everything the snow simulation needs besides the mesh and the wind.
#[derive(Clone, Debug, PartialEq)]
pub struct SnowConfig {
    /// Number of particles (parcels).
    pub particles: usize,
    /// Seed of the generator.
    pub seed: u32,
    /// Smallest and largest flake diameter, metres.
    pub flake_diameter: [f32; 2],
    /// Terminal fall speed in still air of a flake of the mean diameter, m/s; a flake of
    /// diameter `d` falls at `fall_speed · (d / d_mean)^0.2`.
    pub fall_speed: f32,
    /// Gravitational acceleration, m/s².
    pub gravity: f32,
    /// Range of the flutter circle's radius, metres.
    pub flutter_radius: [f32; 2],
    /// Range of the flutter's angular speed, rad/s.
    pub flutter_rate: [f32; 2],
    /// Snowfall in metres of snow per hour on open flat ground.
    pub rate: f64,
    /// Factor on the snowfall, to watch a cover grow (`time.acceleration`): it multiplies
    /// what a landing lays, never the unit.
    pub acceleration: f64,
    /// Density of the laid snow, kg/m³ (`snow.density`).
    pub density: f64,
    /// Height above the ground at which the parcels enter, metres (`snow.source_height`; 0:
    /// through the top of the domain).
    pub source_height: f64,
    /// Pieces per ground edge of the cover's mesh (`ground.cover_refinement`).
    pub cover_refinement: u32,
    /// Steepest snow surface that holds, degrees.
    pub repose_angle: f64,
    /// Fraction of an edge's excess moved per step.
    pub smoothing_rate: f64,
    /// Drifting snow (`ground.drift`): the wind lifts the laid snow and carries it in
    /// saltation; `None` leaves it where it landed.
    pub drift: Option<DriftSettings>,
    /// Particle sorting.
    pub sort: SortSettings,
    /// Inside-test tolerance of the walks, metres.
    pub tolerance: f32,
    /// Hop limit of the walk that follows a particle's step.
    pub local_hops: u32,
    /// Hop limit of the walks that locate a wrapped or respawned particle.
    pub global_hops: u32,
    /// Drawn radius over true radius (the render buffer's w).
    pub render_scale: f32,
    /// When positive, [`Snow::new`](super::Snow::new) sets `render_scale` so that a flake of
    /// the mean diameter is drawn with this fraction of the mean parcel spacing as its radius
    /// (never smaller than true): at the valley's scale true flakes are invisible.
    pub draw_fraction: f32,
}

impl SnowConfig {
    /// The settings of `scene`.
    pub fn from_scene(scene: &Scene) -> Result<Self> {
        let s = &scene.snow;
        let g = &scene.ground;
        let f = |v: [f64; 2]| v.map(|x| x as f32);
        let config = Self {
            particles: usize::try_from(s.particles).map_err(|_| {
                Error::InvalidParameter(format!(
                    "snow.particles: {} particles do not fit in memory",
                    s.particles
                ))
            })?,
            seed: (s.seed ^ (s.seed >> 32)) as u32,
            flake_diameter: f(s.flake_diameter),
            fall_speed: s.fall_speed as f32,
            gravity: s.gravity as f32,
            flutter_radius: f(s.flutter_radius),
            flutter_rate: f(s.flutter_rate),
            rate: s.rate,
            acceleration: scene.time.acceleration,
            density: s.density,
            source_height: s.source_height,
            cover_refinement: g.cover_refinement,
            repose_angle: g.repose_angle,
            smoothing_rate: g.smoothing_rate,
            drift: g.drift.then(|| DriftSettings {
                threshold: g.threshold_friction_velocity,
                saturation_length: g.saturation_length,
                roughness: g.roughness,
                air_density: scene.wind.air_density,
                snow_density: s.density,
                suspension: g.suspension,
                ageing: (g.ageing_time > 0.0).then_some(Ageing {
                    time: g.ageing_time,
                    aged_threshold: g.aged_threshold_friction_velocity,
                }),
                ..DriftSettings::default()
            }),
            sort: SortSettings {
                mode: s.sort,
                full_every: s.full_sort_every,
                every: s.sort_every,
                block_len: None,
                key: s.sort_key,
            },
            draw_fraction: DRAW_FRACTION,
            ..Self::new(1)
        };
        config.validate()?;
        Ok(config)
    }

    /// `particles` flakes of 2 to 8 mm falling at 1 m/s, the scene defaults.
    pub fn new(particles: usize) -> Self {
        Self {
            particles,
            seed: 1,
            flake_diameter: [0.002, 0.008],
            fall_speed: 1.0,
            gravity: 9.81,
            flutter_radius: [0.0, 0.3],
            flutter_rate: [0.5, 3.0],
            rate: 0.01,
            acceleration: 1.0,
            density: 100.0,
            source_height: 0.0,
            cover_refinement: 1,
            repose_angle: 38.0,
            smoothing_rate: 0.05,
            drift: None,
            sort: SortSettings {
                mode: SortMode::Partial,
                full_every: 64,
                every: crate::scene::DEFAULT_SORT_EVERY,
                block_len: None,
                key: SortKey::Tetrahedron,
            },
            tolerance: 1e-3,
            local_hops: 64,
            global_hops: 4096,
            render_scale: 1.0,
            draw_fraction: 0.0,
        }
    }

    /// Checks every value (the scene checks them too; settings made by hand come here).
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidParameter(what));
        if let Some(d) = &self.drift {
            d.validate()?;
        }
        if self.particles > u32::MAX as usize / 2 {
            return bad(format!(
                "snow.particles: {} particles exceed the kernels' 31-bit index",
                self.particles
            ));
        }
        let [d0, d1] = self.flake_diameter;
        if !(d0.is_finite() && d1.is_finite() && d0 > 0.0 && d0 <= d1) {
            return bad(format!(
                "snow.flake_diameter [{d0}, {d1}] must be finite, 0 < min <= max"
            ));
        }
        for (name, v) in [
            ("snow.fall_speed", self.fall_speed),
            ("snow.gravity", self.gravity),
            ("the walks' tolerance", self.tolerance),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("{name} {v} must be finite and positive"));
            }
        }
        if let Some(why) =
            crate::scene::limits::drag_problem(self.fall_speed, self.gravity, self.flake_diameter)
        {
            return bad(why);
        }
        for (name, [lo, hi]) in [
            ("snow.flutter_radius", self.flutter_radius),
            ("snow.flutter_rate", self.flutter_rate),
        ] {
            if !(lo.is_finite() && hi.is_finite() && lo >= 0.0 && lo <= hi) {
                return bad(format!(
                    "{name} [{lo}, {hi}] must be finite, 0 <= min <= max"
                ));
            }
        }
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            return bad(format!(
                "snow.rate {} must be finite and not negative (metres of snow per hour)",
                self.rate
            ));
        }
        if !(self.acceleration.is_finite() && (1e-6..=1e6).contains(&self.acceleration)) {
            return bad(format!(
                "time.acceleration {} must be in [1e-6, 1e6]",
                self.acceleration
            ));
        }
        if !(self.density.is_finite() && (10.0..=917.0).contains(&self.density)) {
            return bad(format!(
                "snow.density {} must be 10 to 917 kg/m³",
                self.density
            ));
        }
        if !(self.source_height.is_finite() && self.source_height >= 0.0) {
            return bad(format!(
                "snow.source_height {} must be finite and not negative (0: the top)",
                self.source_height
            ));
        }
        if !(1..=super::refine::MAX_REFINEMENT).contains(&self.cover_refinement) {
            return bad(format!(
                "ground.cover_refinement {} must be 1 to {}",
                self.cover_refinement,
                super::refine::MAX_REFINEMENT
            ));
        }
        if !(self.repose_angle > 0.0 && self.repose_angle < 90.0) {
            return bad(format!(
                "ground.repose_angle {} must be between 0 and 90 degrees",
                self.repose_angle
            ));
        }
        if !(0.0..=1.0).contains(&self.smoothing_rate) {
            return bad(format!(
                "ground.smoothing_rate {} must be in [0, 1]",
                self.smoothing_rate
            ));
        }
        if !(self.render_scale.is_finite() && self.render_scale > 0.0) {
            return bad(format!(
                "render scale {} must be positive",
                self.render_scale
            ));
        }
        if !(self.draw_fraction.is_finite() && self.draw_fraction >= 0.0) {
            return bad(format!(
                "draw fraction {} must be finite and not negative",
                self.draw_fraction
            ));
        }
        if self.local_hops == 0 || self.global_hops == 0 || self.local_hops > i32::MAX as u32 {
            return bad("hop limits must be at least 1".into());
        }
        Ok(())
    }

    /// The mean flake diameter: the one whose terminal speed is `fall_speed`.
    pub fn reference_diameter(&self) -> f32 {
        0.5 * (self.flake_diameter[0] + self.flake_diameter[1])
    }

    /// The drawn radius over the true one for `draw_fraction` in `air_volume` m³ of air.
    pub fn drawn_scale(&self, air_volume: f64) -> f32 {
        if self.draw_fraction <= 0.0 || self.particles == 0 {
            return self.render_scale;
        }
        let spacing = (air_volume / self.particles as f64).cbrt() as f32;
        let radius = 0.5 * self.reference_diameter();
        (self.draw_fraction * spacing / radius).max(1.0)
    }

    /// Volume a landing lays, m³: `a R V_air / (3600 v_t N)` (see the module doc).
    pub fn parcel_volume(&self, air_volume: f64) -> f64 {
        self.acceleration * self.real_parcel_volume(air_volume)
    }

    /// Volume of one parcel in real time (no acceleration), m³: `R V_air / (3600 v_t N)`;
    /// [`PARCEL_UNITS`] units make it, so it fixes the unit.
    pub fn real_parcel_volume(&self, air_volume: f64) -> f64 {
        if self.particles == 0 {
            return 0.0;
        }
        self.rate * air_volume / (3600.0 * f64::from(self.fall_speed) * self.particles as f64)
    }

    /// Units a landing lays: `round(a · PARCEL_UNITS)`, at least 1.
    pub fn landing_units(&self) -> u64 {
        ((self.acceleration * PARCEL_UNITS as f64).round() as u64).max(1)
    }

    /// Radius of a landing's footprint without the flutter, metres: half of
    /// [`FOOTPRINT_FRACTION`] times the mean parcel spacing in `air_volume` m³ of air.
    pub fn footprint_radius(&self, air_volume: f64) -> f32 {
        if self.particles == 0 || air_volume <= 0.0 {
            return 0.0;
        }
        (0.5 * FOOTPRINT_FRACTION * (air_volume / self.particles as f64).cbrt()) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parcel_volume_delivers_the_snowfall_rate() {
        // 1 km² × 100 m of air, 1 m/s, 1000 parcels, 0.036 m/h (1e-5 m/s): the air column
        // empties in 100 s, so each of the 1000 parcels carries 1e6 m² × 1e-5 m/s × 100 s /
        // 1000 = 1 m³.
        let mut c = SnowConfig::new(1000);
        c.rate = 0.036;
        let v = c.parcel_volume(1e6 * 100.0);
        assert!((v - 1.0).abs() < 1e-12, "{v}");
        c.acceleration = 60.0;
        assert!((c.parcel_volume(1e8) - 60.0).abs() < 1e-9);
        // The acceleration multiplies what a landing lays, never the unit.
        assert!((c.real_parcel_volume(1e8) - 1.0).abs() < 1e-12);
        assert_eq!(c.landing_units(), 60 * PARCEL_UNITS);
        assert_eq!(SnowConfig::new(0).parcel_volume(1e8), 0.0);
    }

    #[test]
    fn bad_settings_are_refused_with_their_name() {
        let check = |f: &dyn Fn(&mut SnowConfig), word: &str| {
            let mut c = SnowConfig::new(10);
            f(&mut c);
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(word), "{e}");
        };
        check(&|c| c.rate = -1.0, "snow.rate");
        check(&|c| c.rate = f64::NAN, "snow.rate");
        check(&|c| c.acceleration = 0.0, "time.acceleration");
        check(&|c| c.density = 5.0, "snow.density");
        check(&|c| c.cover_refinement = 0, "ground.cover_refinement");
        check(
            &|c| c.flake_diameter = [0.004, 0.002],
            "snow.flake_diameter",
        );
        check(&|c| c.fall_speed = f32::INFINITY, "snow.fall_speed");
        check(&|c| c.flutter_rate = [-1.0, 1.0], "snow.flutter_rate");
        check(&|c| c.repose_angle = 90.0, "ground.repose_angle");
        check(&|c| c.smoothing_rate = 1.5, "ground.smoothing_rate");
        check(&|c| c.local_hops = 0, "hop limits");
        assert!(SnowConfig::new(10).validate().is_ok());
    }
}
