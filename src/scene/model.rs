//! The validated scene: what to simulate and show, with every default filled in.

use std::path::PathBuf;

use serde::Serialize;

use crate::terrain::{Heightmap, Side, TerrainSpec};

/// A scene file that was read and validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scene {
    /// The file it was read from.
    pub path: PathBuf,
    /// Its name (default: the file's stem).
    pub name: String,
    /// Free text (default empty).
    pub description: String,
    /// The air domain.
    pub domain: Domain,
    /// The wind.
    pub wind: Wind,
    /// The snow particles.
    pub snow: Snow,
    /// The snow cover on the ground.
    pub ground: Ground,
    /// Time stepping.
    pub time: Time,
    /// Where the view starts.
    pub camera: Camera,
    /// Which sub-simulations run.
    pub simulate: Simulate,
    /// What is drawn.
    pub view: View,
}

/// The air domain of a scene.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Domain {
    /// Terrain from a heightmap, or flat ground (`heightmap` is `None`), meshed by
    /// [`Terrain`](crate::terrain::Terrain).
    Terrain {
        /// The heightmap file, `None` for flat ground at `z = 0`.
        heightmap: Option<PathBuf>,
        /// Extents, relief and resolution.
        spec: TerrainSpec,
        /// The heightmap read (checked when the scene is loaded).
        #[serde(skip)]
        image: Option<Heightmap>,
    },
    /// An existing tetrahedral mesh.
    Mesh {
        /// The `.mesh`/`.meshb` file.
        path: PathBuf,
        /// Which boundary triangle references are which side.
        boundary: BoundaryRefs,
    },
}

/// The boundary triangle reference of each side of a mesh domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BoundaryRefs {
    /// West side, `x` minimal (default 1).
    pub x_min: i32,
    /// East side (default 2).
    pub x_max: i32,
    /// South side (default 3).
    pub y_min: i32,
    /// North side (default 4).
    pub y_max: i32,
    /// The terrain surface (default 5).
    pub ground: i32,
    /// The top of the air (default 6).
    pub top: i32,
}

impl Default for BoundaryRefs {
    fn default() -> Self {
        Self {
            x_min: Side::XMin.reference(),
            x_max: Side::XMax.reference(),
            y_min: Side::YMin.reference(),
            y_max: Side::YMax.reference(),
            ground: Side::Ground.reference(),
            top: Side::Top.reference(),
        }
    }
}

impl BoundaryRefs {
    /// The reference of `side`.
    pub fn reference(&self, side: Side) -> i32 {
        match side {
            Side::XMin => self.x_min,
            Side::XMax => self.x_max,
            Side::YMin => self.y_min,
            Side::YMax => self.y_max,
            Side::Ground => self.ground,
            Side::Top => self.top,
        }
    }

    /// The side whose reference is `reference`, if any.
    pub fn side(&self, reference: i32) -> Option<Side> {
        Side::ALL
            .into_iter()
            .find(|&s| self.reference(s) == reference)
    }
}

/// How the wind speed grows with height above the ground.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "profile", rename_all = "snake_case")]
pub enum WindProfile {
    /// Logarithmic: `u(z) = U ln((z + z0) / z0) / ln((zr + z0) / z0)`.
    Log {
        /// Roughness length `z0`, metres.
        roughness: f64,
    },
    /// Power law: `u(z) = U (z / zr)^exponent`.
    Power {
        /// The exponent (1/7 over open land).
        exponent: f64,
    },
    /// The same speed at every height.
    Uniform,
}

/// How the wind solver advects the velocity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advection {
    /// Semi-Lagrangian with linear interpolation: diffuses like first-order upwind.
    #[default]
    Linear,
    /// Back and forth error compensation and correction, limited to the departure
    /// tetrahedron's range: sharper, three walks a step.
    Bfecc,
}

/// How the pressure solve applies its operator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PressureOperator {
    /// Coefficients assembled per vertex over its one-ring: two vertex kernels per product
    /// (the tetrahedra's loops where a one-ring is too wide to store).
    #[default]
    Assembled,
    /// Loops over the tetrahedra and the vertex balls: four kernels per product.
    Tetrahedra,
}

/// The wind blowing into the domain.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Wind {
    /// Horizontal unit vector, the way the wind blows.
    pub direction: [f64; 2],
    /// Speed at `reference_height` above the ground, m/s.
    pub speed: f64,
    /// Height above the ground where `speed` holds, metres.
    pub reference_height: f64,
    /// Speed against height.
    pub profile: WindProfile,
    /// Most pressure solver iterations per wind step.
    pub pressure_iterations: u32,
    /// Density of the air, kg/m³ (the saltation flux).
    pub air_density: f64,
    /// Simulated seconds between ground refreshes: the laid snow raises the ground the wind
    /// sees (a terrain with a solved wind); 0: never (the default with `ground.drift = false`).
    pub ground_refresh: f64,
    /// Frames from a ground refresh's read of the cover to its application: the refresh's
    /// host work runs on a thread of its own meanwhile, off the frame's path (0: applied in
    /// the frame that reads the cover, on the frame's thread). The same frames whatever the
    /// timing, so a run's state does not depend on how long the work took.
    pub ground_refresh_lag: u32,
    /// Earlier pressure solves' corrections each solve's initial guess is projected onto
    /// (0: the last pressure alone, the plain warm start).
    pub pressure_history: u32,
    /// The pressure solve stops when the RMS divergence is below this times the RMS
    /// divergence of the initial profile field.
    pub pressure_tolerance: f64,
    /// The wind's own time step, s; `None` for a Courant number of about 1 in the bottom
    /// layer.
    pub step: Option<f64>,
    /// How the velocity is advected.
    pub advection: Advection,
    /// How the pressure operator is applied.
    pub operator: PressureOperator,
}

impl Wind {
    /// The wind speed at `height` metres above the ground (0 at and below the ground for the
    /// log and power profiles).
    pub fn speed_at(&self, height: f64) -> f64 {
        let z = height.max(0.0);
        let zr = self.reference_height;
        match self.profile {
            WindProfile::Log { roughness: z0 } => {
                self.speed * ((z + z0) / z0).ln() / ((zr + z0) / z0).ln()
            }
            WindProfile::Power { exponent } => self.speed * (z / zr).powf(exponent),
            WindProfile::Uniform => self.speed,
        }
    }

    /// The wind velocity at `height` metres above the ground (horizontal).
    pub fn velocity_at(&self, height: f64) -> [f64; 3] {
        let s = self.speed_at(height);
        [s * self.direction[0], s * self.direction[1], 0.0]
    }
}

/// How particles are sorted each frame (thesis chapter 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SortMode {
    /// Not sorted.
    Off,
    /// A full (radix) sort on every frame that sorts.
    Full,
    /// The incremental partial sort that keeps them nearly sorted.
    Partial,
}

impl SortMode {
    /// The name used in scene files and on the command line: `off`, `full`, `partial`.
    pub fn name(self) -> &'static str {
        match self {
            SortMode::Off => "off",
            SortMode::Full => "full",
            SortMode::Partial => "partial",
        }
    }
}

/// What particles are sorted by, so that neighbours in memory read neighbouring wind data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    /// The index of the tetrahedron that contains the particle.
    Tetrahedron,
    /// The particle's position along a 3D Hilbert curve over the domain.
    Hilbert,
}

impl SortKey {
    /// The name used in scene files: `tetrahedron`, `hilbert`.
    pub fn name(self) -> &'static str {
        match self {
            SortKey::Tetrahedron => "tetrahedron",
            SortKey::Hilbert => "hilbert",
        }
    }
}

/// The snow particles.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Snow {
    /// Number of particles.
    pub particles: u64,
    /// Smallest and largest flake diameter, metres.
    pub flake_diameter: [f64; 2],
    /// Terminal fall speed in still air, m/s.
    pub fall_speed: f64,
    /// Gravitational acceleration, m/s².
    pub gravity: f64,
    /// Range of the flutter circle's radius, metres (the thesis's per-particle radius).
    pub flutter_radius: [f64; 2],
    /// Range of the flutter's angular speed, radians/s (the thesis's rotation).
    pub flutter_rate: [f64; 2],
    /// Snowfall in metres of snow per hour on open flat ground; the parcel volume derives from
    /// it ([`crate::snow`]).
    pub rate: f64,
    /// Density of the laid snow, kg/m³: what a depth of snow weighs (the flakes' number in
    /// the air, the drift's mass fluxes).
    pub density: f64,
    /// Height above the ground at which the snow enters, metres (0: the top of the domain).
    /// Below it the parcels are as dense as the particle count allows; above it the snowfall
    /// is taken as uniform and not simulated.
    pub source_height: f64,
    /// With the partial sort: a full sort every this many frames (0: only the first).
    pub full_sort_every: u32,
    /// The parcels are sorted on one frame in this many (1: every frame), in any mode.
    pub sort_every: u32,
    /// Particle sorting.
    pub sort: SortMode,
    /// What particles are sorted by.
    pub sort_key: SortKey,
    /// Random seed.
    pub seed: u64,
}

/// The snow cover on the ground.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ground {
    /// Snow depth at the start, metres.
    pub initial_depth: f64,
    /// Steepest snow slope that holds, degrees; steeper snow is moved downhill.
    pub repose_angle: f64,
    /// Fraction of the excess moved per step.
    pub smoothing_rate: f64,
    /// Pieces per ground edge of the cover's own mesh: the snow is laid, smoothed and drawn
    /// this much finer than the wind mesh's ground.
    pub cover_refinement: u32,
    /// The wind lifts the laid snow and carries it in saltation (`snowsim::snow::Drift`).
    pub drift: bool,
    /// With `drift`, the wind also lifts snow into suspension, in the parcels of the bottom
    /// layer of air (`snowsim::snow::Suspension`).
    pub suspension: bool,
    /// The e-folding time of the threshold's rise as laid snow ages, real seconds; 0: no
    /// ageing (the threshold stays the fresh snow's).
    pub ageing_time: f64,
    /// The threshold friction velocity of fully aged snow, m/s.
    pub aged_threshold_friction_velocity: f64,
    /// Friction velocity below which the wind lifts no snow, m/s.
    pub threshold_friction_velocity: f64,
    /// Length over which saltation relaxes to its equilibrium flux, m.
    pub saturation_length: f64,
    /// Roughness length of the snow surface for the log law, m.
    pub roughness: f64,
}

/// Time stepping.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Time {
    /// Simulated seconds per frame.
    pub step: f64,
    /// Frames to run, `None` to run until closed.
    pub frames: Option<u64>,
    /// Factor on the snowfall rate, to watch a cover grow (default 1).
    pub acceleration: f64,
}

/// The camera at the start.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Camera {
    /// Eye position, metres.
    pub position: [f64; 3],
    /// The point looked at.
    pub target: [f64; 3],
    /// Vertical field of view, degrees.
    pub fov: f64,
}

/// Which sub-simulations run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Simulate {
    /// The wind solver, stepping with the frames.
    pub wind: bool,
    /// The snow particles (without them, with `wind`, only the wind runs).
    pub snow: bool,
    /// The wind steps every this many frames, over their time (its step is this many frame
    /// steps, replacing `wind.step`); `None`: at `wind.step`'s own cadence.
    pub wind_every: Option<u32>,
    /// With `wind = false`: the solver runs its start-up solve and this many steps, then the
    /// snow moves in that frozen field; `None` with `wind = false`: the scene's inflow profile.
    pub frozen_wind_steps: Option<u32>,
}

/// What is drawn at the start, and how: the look's constants that are not physics.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct View {
    /// The terrain.
    pub terrain: bool,
    /// The snow particles.
    pub snow: bool,
    /// Wind arrows.
    pub wind: bool,
    /// Pressure points.
    pub pressure: bool,
    /// Window size in pixels.
    pub window: [u32; 2],
    /// Wait for the display's refresh.
    pub vsync: bool,
    /// Where the sun is: `[azimuth, elevation]` in degrees, azimuth clockwise from north
    /// (+y) towards east (+x), elevation above the horizon (default `[245, 36]`: the light
    /// snowsim always had, from the west-south-west).
    pub sun: [f64; 2],
    /// Factor on the light reaching the terrain and the flakes (default 1).
    pub exposure: f64,
    /// Colour of the sky behind everything, linear RGB in [0, 1] (default
    /// `[0.55, 0.68, 0.85]`).
    pub sky: [f64; 3],
    /// Albedo of snow, on the ground and of the flakes, linear RGB (default
    /// `[0.97, 0.97, 1.0]`).
    pub snow_colour: [f64; 3],
    /// The light that reaches snow in shade (the sky's, bluish), linear RGB; the sun adds
    /// 0.65 · cos(incidence) of white light where it shines (default `[0.40, 0.47, 0.60]`).
    pub snow_shade: [f64; 3],
    /// Depths in metres between which the ground turns from bare to fully covered: the
    /// covered fraction is `smoothstep(d0, d1, depth)` (default `[0.0, 0.10]`).
    pub snow_cover: [f64; 2],
    /// Side in texels of the sun's shadow map over the terrain; 0 draws no shadows
    /// (default 2048).
    pub shadow_map: u32,
    /// Height in pixels of the on-screen display's text (default 15).
    pub osd_text: f64,
    /// The light falling snow scatters towards the eye, what a distant surface fades to in
    /// the veil, linear RGB (default `[0.72, 0.75, 0.80]`).
    pub veil_colour: [f64; 3],
    /// How far the sky is for the veil, metres (default 50 000).
    pub sky_distance: f64,
    /// Draw the veil of the falling snow (default true; with `snow = false` it is hidden
    /// with the flakes): `false` shows the scene as through clear air.
    pub veil: bool,
    /// The frame's exposure, seconds: the flakes near the camera streak along their motion
    /// over it (default 0.02).
    pub exposure_time: f64,
    /// How far from the camera flakes are drawn one by one, metres; the veil stands for them
    /// beyond (default 60).
    pub flake_distance: f64,
    /// Most flake slots drawn near the camera per frame (default 2^16; 0 draws none).
    pub near_flakes: u32,
    /// Flakes a parcel nearer than `parcel_distance` is drawn as (default 32; 0: one disc).
    pub parcel_flakes: u32,
    /// Parcels nearer to the camera than this, metres, are drawn as their flakes (default
    /// 100).
    pub parcel_distance: f64,
}

impl View {
    /// The default sun, `[azimuth, elevation]` in degrees.
    pub const SUN: [f64; 2] = [245.0, 36.0];
    /// The default sky colour.
    pub const SKY: [f64; 3] = [0.55, 0.68, 0.85];
    /// The default snow albedo.
    pub const SNOW_COLOUR: [f64; 3] = [0.97, 0.97, 1.0];
    /// The default light on snow in shade.
    pub const SNOW_SHADE: [f64; 3] = [0.40, 0.47, 0.60];
    /// The default depths of the cover's transition, metres.
    pub const SNOW_COVER: [f64; 2] = [0.0, 0.10];
    /// The default veil colour.
    pub const VEIL_COLOUR: [f64; 3] = [0.72, 0.75, 0.80];
    /// The default shadow map side, texels.
    pub const SHADOW_MAP: u32 = 2048;
    /// The default exposure, seconds.
    pub const EXPOSURE_TIME: f64 = 0.008;
    /// The default distance of the near flakes, metres.
    pub const FLAKE_DISTANCE: f64 = 60.0;
    /// The default budget of near flake slots.
    pub const NEAR_FLAKES: u32 = 1 << 16;
    /// The default flakes of a near parcel.
    pub const PARCEL_FLAKES: u32 = 32;
    /// The default distance within which parcels are drawn as flakes, metres.
    pub const PARCEL_DISTANCE: f64 = 100.0;
    /// The largest budget of near flake slots.
    pub const MAX_NEAR_FLAKES: u32 = 1 << 26;
    /// The largest shadow map side, texels.
    pub const MAX_SHADOW_MAP: u32 = 8192;
}
