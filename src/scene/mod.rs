//! Scene files: the TOML that says what to simulate, and the domain mesh built from it.
//!
//! A scene gives the domain (a heightmap with its extents and resolution, flat ground, or an
//! existing tetrahedral `.meshb` with its boundary references), the wind, the snow, the ground's
//! snow cover, the time step, the camera, what to simulate and what to show. Units are metres,
//! seconds and degrees; x points east, y north, z up. Paths are relative to the scene file.
//!
//! ```toml
//! name = "Alpine valley"
//!
//! [domain]                 # exactly one of heightmap = "…", mesh = "…", flat = true
//! heightmap = "valley.png" # 8- or 16-bit grayscale PNG; row 0 is north
//! size = [4000, 4000]      # x and y extent
//! top = 1400               # height of the flat top of the air
//! relief = 600             # height of a white pixel (black is 0); heightmap only
//! cells = [96, 96]         # grid cells along x and y (default [64, 64])
//! layers = 24              # prism layers from ground to top (default 16)
//! grading = 1.1            # each layer this much thicker than the one below (default 1.1)
//!
//! [wind]
//! direction = [0.3, -1.0]  # horizontal, the way it blows (default [1, 0]: towards east)
//! speed = 6.0              # at reference_height above the ground (default 5)
//! reference_height = 10.0  # (default 10)
//! profile = "log"          # log (default), power or uniform
//! roughness = 0.1          # log profile: u(z) ∝ ln((z + z0) / z0) (default 0.1)
//! # exponent = 0.143       # power profile: u(z) ∝ z^exponent (default 1/7)
//! pressure_iterations = 50 # most pressure solver (CG) iterations per wind step (default 50)
//! pressure_tolerance = 0.01 # stop at this × the RMS divergence of the profile (default 0.01)
//! pressure_history = 2    # earlier solves' corrections each solve starts from (0..=7,
//!                          # default 2; 0: the last pressure alone)
//! # step = 0.8             # the wind's own time step, s (default: Courant number ~1 near
//! #                        # the ground); at least time.step / 64 when the wind steps with
//! #                        # the frames (the default too: `scene check` checks it on the mesh)
//! advection = "linear"     # linear (default) or bfecc: sharper, limited, three walks a step
//! ground_refresh = 10.0    # s between raising the wind's ground by the laid snow (0: never;
//!                          # default 10, 0 with ground.drift = false)
//! ground_refresh_lag = 30  # frames from a refresh's read of the cover to its application;
//!                          # its host work runs beside the frames meanwhile (0: at once)
//! operator = "assembled"   # pressure operator: assembled per vertex (default) or tetrahedra
//!
//! [snow]
//! particles = 1048576      # (default 2^20)
//! flake_diameter = [0.002, 0.008]  # range of flake sizes (default)
//! fall_speed = 1.0         # terminal speed in still air of a flake of the mean diameter (default 1)
//! gravity = 9.81           # (default)
//! flutter_radius = [0.0, 0.3]      # radius of the thesis's circular flutter motion (default)
//! flutter_rate = [0.5, 3.0]        # its angular speed, radians/s (default)
//! rate = 0.01              # snowfall, metres of snow per hour on open flat ground (default 0.01)
//! density = 100.0          # laid snow, kg/m³ (default 100: fresh snow)
//! source_height = 0.0      # the snow enters this high above the ground (default 0: the top)
//! sort = "partial"         # particle sort each frame: off, full, partial (default)
//! full_sort_every = 64     # with partial: a full sort every this many frames (default 64)
//! sort_every = 4           # sort on one frame in this many, in any mode (default 4)
//! sort_key = "tetrahedron" # sorted by containing tetrahedron (default) or "hilbert" position
//! seed = 1                 # random seed of positions, sizes and flutter (default 1)
//!
//! [ground]
//! initial_depth = 0.0      # snow on the ground at the start (default 0)
//! repose_angle = 38.0      # snow steeper than this slides down (default 38)
//! smoothing_rate = 0.05    # fraction of the excess moved per step (default 0.05)
//! cover_refinement = 4     # the cover's mesh: pieces per ground edge, 1 to 16 (default 4)
//! drift = true             # the wind lifts the laid snow and carries it (default true)
//! suspension = true        # with drift, also into the parcels, which carry it far (default true)
//! ageing_time = 0.0        # s over which the threshold rises as snow ages (default 0: off)
//! aged_threshold_friction_velocity = 0.6  # u*t of fully aged snow, m/s (default)
//! threshold_friction_velocity = 0.25  # u* below which nothing is lifted, m/s (default)
//! saturation_length = 20.0 # saltation relaxes to its equilibrium over this, m (default)
//! # roughness = 0.01       # z0 of the log law for u*, m (default: the wind's, else 0.001)
//!
//! [time]
//! step = 0.02              # simulated seconds per frame (default 0.02)
//! # frames = 600           # stop after this many frames (default: run until closed)
//! acceleration = 1.0       # factor on the snowfall, to watch a cover grow (default 1)
//!
//! [camera]                 # default: from the south, above, looking at the centre
//! position = [2000, -1500, 1300]
//! target = [2000, 2000, 300]
//! fov = 55                 # vertical field of view (default 55)
//!
//! [simulate]               # both default to true
//! wind = true              # the wind solver steps with the frames
//! snow = true              # snow particles (wind = true, snow = false: the wind alone)
//! wind_every = 1           # optional: a wind step every k frames, over their time
//!                          # (replaces wind.step)
//! frozen_wind_steps = 0    # optional, with wind = false: solve, step n times, then
//!                          # freeze the field for the snow (absent: the inflow profile)
//!
//! [view]
//! terrain = true           # (default true)
//! snow = true              # (default true)
//! wind = false             # wind arrows (default false)
//! pressure = false         # pressure points (default false)
//! window = [1280, 720]     # (default)
//! vsync = true             # (default)
//! sun = [245, 36]          # [azimuth, elevation] of the sun, degrees: azimuth clockwise
//!                          # from north (+y), elevation above the horizon (default)
//! exposure = 1.0           # factor on the light on terrain and flakes (default 1)
//! sky = [0.55, 0.68, 0.85] # the sky's colour, linear RGB (default)
//! snow_colour = [0.97, 0.97, 1.0]  # snow's albedo, ground and flakes (default)
//! snow_shade = [0.40, 0.47, 0.60]  # the sky's light on snow in shade (default)
//! snow_cover = [0.0, 0.10] # depths (m) of bare and fully covered ground: the covered
//!                          # share is smoothstep(d0, d1, depth) (default)
//! shadow_map = 2048        # side of the sun's shadow map, texels; 0: no shadows (default)
//! osd_text = 15            # height of the on-screen display's text, pixels (default)
//! veil_colour = [0.72, 0.75, 0.80] # the light falling snow scatters, linear RGB (default)
//! sky_distance = 50000     # how far the sky is for the veil, metres (default)
//! veil = true              # the veil of the falling snow; false: as through clear air
//! exposure_time = 0.008    # the frame's exposure, s: near flakes streak over it (default)
//! flake_distance = 60      # near flakes are drawn one by one this far, m (default)
//! near_flakes = 65536      # most near flake slots per frame; 0: none (default)
//! parcel_flakes = 32        # a parcel nearer than parcel_distance drawn as this many flakes
//! parcel_distance = 100     # metres (default); parcel_flakes = 0 draws every parcel as a disc
//! ```
//!
//! A mesh domain names its file and, if they differ from the terrain mesher's
//! ([`Side`](crate::terrain::Side): `x_min` 1, `x_max` 2, `y_min` 3, `y_max` 4, `ground` 5,
//! `top` 6), the references of its boundary triangles:
//! `[domain] mesh = "air.meshb"` and `[domain.boundary] ground = 7, top = 8`. Its scene must
//! have a `[camera]` (the mesh's extent is only known once it is read).
//!
//! Unknown keys, wrong types and values out of range are errors that name the file, the line
//! and column, and the dotted key: `scenes/x.toml:14:10: wind.speed: must be at least 0 m/s,
//! got -3`. So are numbers the kernels' 32-bit floats cannot hold (`1e-308`, 0 there, or
//! `1e39`, infinite), a `snow.fall_speed` so small that the flakes' drag coefficient overflows
//! them, a `wind.step` shorter than `time.step / 64`
//! ([`limits::MAX_WIND_STEPS_PER_FRAME`]) and, when the wind is solved, one cell of
//! `domain.cells` along an axis the wind crosses (no pressure unknown). What only the built
//! mesh tells (the default wind step, a mesh domain's pressure unknowns) is checked by
//! [`crate::sim::SimSetup::new`], which `snowsim run` and `snowsim scene check` both call.

mod check;
mod domain;
mod error;
pub mod ground;
pub mod limits;
mod model;
mod range;
mod raw;
mod spans;

pub use check::{
    DEFAULT_PRESSURE_HISTORY, DEFAULT_SORT_EVERY, MAX_PARTICLES, MAX_PRESSURE_HISTORY,
    MAX_SORT_EVERY,
};
pub use domain::{BoundaryCount, DomainMesh, DomainReport};
pub use error::SceneError;
pub use ground::{SceneGround, ground_of};
pub use model::{
    Advection, BoundaryRefs, Camera, Domain, Ground, PressureOperator, Scene, Simulate, Snow,
    SortKey, SortMode, Time, View, Wind, WindProfile,
};
pub(crate) use range::Number;
