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
//! pressure_iterations = 50 # pressure solver iterations per step (default 50)
//!
//! [snow]
//! particles = 1048576      # (default 2^20)
//! flake_diameter = [0.002, 0.008]  # range of flake sizes (default)
//! fall_speed = 1.0         # terminal speed in still air (default 1)
//! gravity = 9.81           # (default)
//! flutter_radius = [0.0, 0.3]      # radius of the thesis's circular flutter motion (default)
//! flutter_rate = [0.5, 3.0]        # its angular speed, radians/s (default)
//! deposit_depth = 0.001    # snow depth a landing particle adds (default)
//! sort = "partial"         # particle sort each frame: none, full, partial (default)
//! sort_key = "tetrahedron" # sorted by containing tetrahedron (default) or "hilbert" position
//! seed = 1                 # random seed of positions, sizes and flutter (default 1)
//!
//! [ground]
//! initial_depth = 0.0      # snow on the ground at the start (default 0)
//! repose_angle = 38.0      # snow steeper than this slides down (default 38)
//! smoothing_rate = 0.05    # fraction of the excess moved per step (default 0.05)
//!
//! [time]
//! step = 0.02              # simulated seconds per frame (default 0.02)
//! # frames = 600           # stop after this many frames (default: run until closed)
//!
//! [camera]                 # default: from the south, above, looking at the centre
//! position = [2000, -1500, 1300]
//! target = [2000, 2000, 300]
//! fov = 55                 # vertical field of view (default 55)
//!
//! [simulate]               # both default to true
//! wind = true
//! snow = true
//!
//! [view]
//! terrain = true           # (default true)
//! snow = true              # (default true)
//! wind = false             # wind arrows (default false)
//! pressure = false         # pressure points (default false)
//! window = [1280, 720]     # (default)
//! vsync = true             # (default)
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
//! got -3`.

mod domain;
mod raw;
mod spans;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use domain::{BoundaryCount, DomainMesh, DomainReport};

use crate::terrain::{Heightmap, Side, TerrainSpec};
use raw::{ProfileName, RawScene, SortKeyName, SortName};

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
    /// Pressure solver iterations per time step.
    pub pressure_iterations: u32,
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
    None,
    /// A full bitonic sort every frame.
    Full,
    /// The incremental partial sort that keeps them nearly sorted.
    Partial,
}

impl SortMode {
    /// The name used in scene files: `none`, `full`, `partial`.
    pub fn name(self) -> &'static str {
        match self {
            SortMode::None => "none",
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
    /// Snow depth a landing particle adds to the ground, metres.
    pub deposit_depth: f64,
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
}

/// Time stepping.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Time {
    /// Simulated seconds per frame.
    pub step: f64,
    /// Frames to run, `None` to run until closed.
    pub frames: Option<u64>,
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
    /// The wind solver.
    pub wind: bool,
    /// The snow particles.
    pub snow: bool,
}

/// What is drawn at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
}

/// A scene that cannot be read, is not valid TOML, or holds a wrong key or value.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The file cannot be read.
    #[error("cannot read scene {}: {source}", path.display())]
    Read {
        /// The scene file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A syntax error, an unknown key, a wrong type or a value out of range.
    #[error("{}", Located { path, line: *line, column: *column, key, message })]
    Invalid {
        /// The scene file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// The dotted key, e.g. `wind.speed` (empty when the error is not at a key).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The domain mesh cannot be built or read, or its boundary references do not fit.
    #[error("{}: {key}: {message}", path.display())]
    Domain {
        /// The scene file.
        path: PathBuf,
        /// The key that names the domain (`domain.mesh`, `domain.heightmap`, …).
        key: String,
        /// What went wrong.
        message: String,
    },
}

impl SceneError {
    /// The dotted key at fault, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            SceneError::Read { .. } => None,
            SceneError::Invalid { key, .. } | SceneError::Domain { key, .. } => {
                (!key.is_empty()).then_some(key.as_str())
            }
        }
    }
}

struct Located<'a> {
    path: &'a Path,
    line: Option<usize>,
    column: Option<usize>,
    key: &'a str,
    message: &'a str,
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl Scene {
    /// Reads and validates a scene file (and the heightmap it names).
    pub fn load(path: &Path) -> Result<Scene, SceneError> {
        let text = std::fs::read_to_string(path).map_err(|source| SceneError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Scene::from_toml(&text, path)
    }

    /// Validates scene text; `path` names it in errors and relative paths are resolved
    /// against its directory.
    pub fn from_toml(text: &str, path: &Path) -> Result<Scene, SceneError> {
        let checker = Checker { path, text };
        let raw: RawScene = toml::from_str(text).map_err(|e| {
            let offset = e.span().map(|s| s.start);
            let key = offset
                .and_then(|o| spans::key_at(text, o))
                .unwrap_or_default();
            checker.at(offset, key, e.message().to_string())
        })?;
        checker.scene(raw)
    }
}

/// Turns raw sections into validated ones, with errors located in the file.
struct Checker<'a> {
    path: &'a Path,
    text: &'a str,
}

type Checked<T> = Result<T, SceneError>;

impl Checker<'_> {
    fn at(&self, offset: Option<usize>, key: String, message: String) -> SceneError {
        let (line, column) = match offset {
            Some(o) => {
                let (l, c) = spans::line_column(self.text, o);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        SceneError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            key,
            message,
        }
    }

    /// An error at the dotted `key` (located at its value, or its table when absent).
    fn error(&self, key: &str, message: impl Into<String>) -> SceneError {
        let parts: Vec<&str> = key.split('.').collect();
        let offset = spans::span_of(self.text, &parts).map(|s| s.start);
        self.at(offset, key.to_string(), message.into())
    }

    fn resolve(&self, file: &Path) -> PathBuf {
        match self.path.parent() {
            Some(dir) if file.is_relative() => dir.join(file),
            _ => file.to_path_buf(),
        }
    }

    fn list<const N: usize>(
        &self,
        key: &str,
        values: Option<Vec<f64>>,
        default: [f64; N],
    ) -> Checked<[f64; N]> {
        let Some(values) = values else {
            return Ok(default);
        };
        let array: [f64; N] = values
            .as_slice()
            .try_into()
            .map_err(|_| self.error(key, format!("expected {N} numbers, got {}", values.len())))?;
        if let Some(x) = array.iter().find(|x| !x.is_finite()) {
            return Err(self.error(key, format!("must be finite, got {x}")));
        }
        Ok(array)
    }

    /// `value` (or `default`) within `[lo, hi]`, `lo` excluded when `open_low`.
    fn number(&self, key: &str, value: Option<f64>, default: f64, range: Range) -> Checked<f64> {
        let v = value.unwrap_or(default);
        if range.holds(v) {
            Ok(v)
        } else {
            Err(self.error(key, format!("must be {range}, got {v}")))
        }
    }

    /// A `[min, max]` pair, both in `range`, min ≤ max.
    fn interval(
        &self,
        key: &str,
        value: Option<Vec<f64>>,
        default: [f64; 2],
        range: Range,
    ) -> Checked<[f64; 2]> {
        let [lo, hi] = self.list(key, value, default)?;
        if !range.holds(lo) || !range.holds(hi) {
            return Err(self.error(key, format!("both ends must be {range}, got [{lo}, {hi}]")));
        }
        if lo > hi {
            return Err(self.error(key, format!("[min, max] with min <= max, got [{lo}, {hi}]")));
        }
        Ok([lo, hi])
    }

    fn scene(&self, raw: RawScene) -> Checked<Scene> {
        let name = match raw.name {
            Some(n) if n.trim().is_empty() => return Err(self.error("name", "must not be empty")),
            Some(n) => n,
            None => self
                .path
                .file_stem()
                .map_or_else(|| "scene".into(), |s| s.to_string_lossy().into_owned()),
        };
        let domain = self.domain(raw.domain)?;
        let wind = self.wind(raw.wind, &domain)?;
        let s = raw.snow;
        let snow = Snow {
            particles: match s.particles.unwrap_or(1 << 20) {
                n @ 1..=MAX_PARTICLES => n,
                n => {
                    return Err(self.error(
                        "snow.particles",
                        format!("must be 1 to {MAX_PARTICLES} (2^28), got {n}"),
                    ));
                }
            },
            flake_diameter: self.interval(
                "snow.flake_diameter",
                s.flake_diameter,
                [0.002, 0.008],
                Range::open(0.0, 0.1, "m"),
            )?,
            fall_speed: self.number(
                "snow.fall_speed",
                s.fall_speed,
                1.0,
                Range::open(0.0, 20.0, "m/s"),
            )?,
            gravity: self.number(
                "snow.gravity",
                s.gravity,
                9.81,
                Range::open(0.0, 100.0, "m/s²"),
            )?,
            flutter_radius: self.interval(
                "snow.flutter_radius",
                s.flutter_radius,
                [0.0, 0.3],
                Range::closed(0.0, 100.0, "m"),
            )?,
            flutter_rate: self.interval(
                "snow.flutter_rate",
                s.flutter_rate,
                [0.5, 3.0],
                Range::closed(0.0, 1000.0, "rad/s"),
            )?,
            deposit_depth: self.number(
                "snow.deposit_depth",
                s.deposit_depth,
                0.001,
                Range::closed(0.0, 10.0, "m"),
            )?,
            sort: match s.sort.unwrap_or(SortName::Partial) {
                SortName::None => SortMode::None,
                SortName::Full => SortMode::Full,
                SortName::Partial => SortMode::Partial,
            },
            sort_key: match s.sort_key.unwrap_or(SortKeyName::Tetrahedron) {
                SortKeyName::Tetrahedron => SortKey::Tetrahedron,
                SortKeyName::Hilbert => SortKey::Hilbert,
            },
            seed: s.seed.unwrap_or(1),
        };
        let g = raw.ground;
        let ground = Ground {
            initial_depth: self.number(
                "ground.initial_depth",
                g.initial_depth,
                0.0,
                Range::closed(0.0, 1000.0, "m"),
            )?,
            repose_angle: self.number(
                "ground.repose_angle",
                g.repose_angle,
                38.0,
                Range::open_both(0.0, 90.0, "degrees"),
            )?,
            smoothing_rate: self.number(
                "ground.smoothing_rate",
                g.smoothing_rate,
                0.05,
                Range::closed(0.0, 1.0, ""),
            )?,
        };
        let time = Time {
            step: self.number("time.step", raw.time.step, 0.02, Range::open(0.0, 1.0, "s"))?,
            frames: match raw.time.frames {
                Some(0) => return Err(self.error("time.frames", "must be at least 1, got 0")),
                f => f,
            },
        };
        let camera = self.camera(raw.camera, &domain)?;
        let simulate = Simulate {
            wind: raw.simulate.wind.unwrap_or(true),
            snow: raw.simulate.snow.unwrap_or(true),
        };
        let v = raw.view;
        let window = match v.window {
            None => [1280, 720],
            Some(w) => match w.as_slice() {
                &[x, y] if (16..=16384).contains(&x) && (16..=16384).contains(&y) => [x, y],
                other => {
                    return Err(self.error(
                        "view.window",
                        format!("expected [width, height], each 16 to 16384 pixels, got {other:?}"),
                    ));
                }
            },
        };
        let view = View {
            terrain: v.terrain.unwrap_or(true),
            snow: v.snow.unwrap_or(true),
            wind: v.wind.unwrap_or(false),
            pressure: v.pressure.unwrap_or(false),
            window,
            vsync: v.vsync.unwrap_or(true),
        };
        Ok(Scene {
            path: self.path.to_path_buf(),
            name,
            description: raw.description.unwrap_or_default(),
            domain,
            wind,
            snow,
            ground,
            time,
            camera,
            simulate,
            view,
        })
    }

    fn domain(&self, d: raw::RawDomain) -> Checked<Domain> {
        let chosen: Vec<&str> = [
            d.heightmap.as_ref().map(|_| "heightmap"),
            d.mesh.as_ref().map(|_| "mesh"),
            d.flat.filter(|&f| f).map(|_| "flat"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let kinds = "give exactly one of `heightmap = \"file.png\"`, `mesh = \"file.meshb\"` \
                     or `flat = true`";
        match chosen.as_slice() {
            [] => return Err(self.error("domain", format!("no ground: {kinds}"))),
            [_] => {}
            several => {
                return Err(self.error(
                    &format!("domain.{}", several[1]),
                    format!("{} and {} together: {kinds}", several[0], several[1]),
                ));
            }
        }
        if let Some(file) = d.mesh {
            for (key, given) in [
                ("size", d.size.is_some()),
                ("top", d.top.is_some()),
                ("relief", d.relief.is_some()),
                ("cells", d.cells.is_some()),
                ("layers", d.layers.is_some()),
                ("grading", d.grading.is_some()),
            ] {
                if given {
                    return Err(self.error(
                        &format!("domain.{key}"),
                        "only for heightmap and flat domains; a mesh domain takes its extent \
                         and resolution from the mesh",
                    ));
                }
            }
            let path = self.resolve(&file);
            if !path.is_file() {
                return Err(self.error("domain.mesh", format!("{} is not a file", path.display())));
            }
            return Ok(Domain::Mesh {
                path,
                boundary: self.boundary(d.boundary.unwrap_or_default())?,
            });
        }
        if d.boundary.is_some() {
            return Err(self.error(
                "domain.boundary",
                "only for mesh domains; terrain meshes use the references 1 to 6 of \
                 snowsim::terrain::Side",
            ));
        }
        let [x, y] = match d.size {
            None => return Err(self.error("domain.size", "missing: the extent [x, y] in metres")),
            Some(s) => self.list("domain.size", Some(s), [0.0; 2])?,
        };
        if !(x > 0.0 && y > 0.0) {
            return Err(self.error(
                "domain.size",
                format!("both extents must be > 0 m, got [{x}, {y}]"),
            ));
        }
        let Some(top) = d.top else {
            return Err(self.error(
                "domain.top",
                "missing: the height of the top of the air, in metres",
            ));
        };
        let top = self.number(
            "domain.top",
            Some(top),
            0.0,
            Range::open(0.0, f64::MAX, "m"),
        )?;
        let relief = match (&d.heightmap, d.relief) {
            (Some(_), None) => {
                return Err(self.error(
                    "domain.relief",
                    "missing: the height of a white heightmap pixel, in metres",
                ));
            }
            (Some(_), Some(r)) => {
                let r = self.number(
                    "domain.relief",
                    Some(r),
                    0.0,
                    Range::closed(0.0, f64::MAX, "m"),
                )?;
                if r >= top {
                    return Err(self.error(
                        "domain.relief",
                        format!("the highest terrain ({r} m) must be below the top ({top} m)"),
                    ));
                }
                r
            }
            (None, Some(_)) => {
                return Err(self.error(
                    "domain.relief",
                    "only for heightmap domains (flat ground is at z = 0)",
                ));
            }
            (None, None) => 0.0,
        };
        let cells = match d.cells {
            None => [64, 64],
            Some(c) => match c.as_slice() {
                &[nx, ny] if nx >= 1 && ny >= 1 => [nx, ny],
                other => {
                    return Err(self.error(
                        "domain.cells",
                        format!("expected [nx, ny], each at least 1, got {other:?}"),
                    ));
                }
            },
        };
        let spec = TerrainSpec {
            size: [x, y, top],
            relief,
            cells,
            layers: d.layers.unwrap_or(16),
            grading: d.grading.unwrap_or(1.1),
        };
        spec.validate().map_err(|e| match e {
            crate::terrain::TerrainError::Spec { field, message } => {
                self.error(&format!("domain.{field}"), message)
            }
            other => self.error("domain", other.to_string()),
        })?;
        let (heightmap, image) = match d.heightmap {
            Some(file) => {
                let path = self.resolve(&file);
                let image = Heightmap::read(&path)
                    .map_err(|e| self.error("domain.heightmap", e.to_string()))?;
                (Some(path), Some(image))
            }
            None => (None, None),
        };
        Ok(Domain::Terrain {
            heightmap,
            spec,
            image,
        })
    }

    fn boundary(&self, b: raw::RawBoundary) -> Checked<BoundaryRefs> {
        let d = BoundaryRefs::default();
        let refs = BoundaryRefs {
            x_min: b.x_min.unwrap_or(d.x_min),
            x_max: b.x_max.unwrap_or(d.x_max),
            y_min: b.y_min.unwrap_or(d.y_min),
            y_max: b.y_max.unwrap_or(d.y_max),
            ground: b.ground.unwrap_or(d.ground),
            top: b.top.unwrap_or(d.top),
        };
        for (i, a) in Side::ALL.into_iter().enumerate() {
            for b in &Side::ALL[i + 1..] {
                if refs.reference(a) == refs.reference(*b) {
                    return Err(self.error(
                        &format!("domain.boundary.{b}"),
                        format!(
                            "{b} and {a} both have reference {}; each side needs its own",
                            refs.reference(a)
                        ),
                    ));
                }
            }
        }
        Ok(refs)
    }

    fn wind(&self, w: raw::RawWind, domain: &Domain) -> Checked<Wind> {
        let [dx, dy] = self.list("wind.direction", w.direction, [1.0, 0.0])?;
        let length = dx.hypot(dy);
        if length == 0.0 {
            return Err(self.error(
                "wind.direction",
                "must not be [0, 0]; give the way the wind blows",
            ));
        }
        let speed = self.number("wind.speed", w.speed, 5.0, Range::closed(0.0, 100.0, "m/s"))?;
        let reference_height = self.number(
            "wind.reference_height",
            w.reference_height,
            10.0,
            Range::open(0.0, f64::MAX, "m"),
        )?;
        if let Domain::Terrain { spec, .. } = domain
            && reference_height >= spec.size[2] - spec.relief
        {
            return Err(self.error(
                "wind.reference_height",
                format!(
                    "{reference_height} m is not below the air above the highest terrain \
                     ({} m)",
                    spec.size[2] - spec.relief
                ),
            ));
        }
        let profile_name = w.profile.unwrap_or(ProfileName::Log);
        if profile_name != ProfileName::Log && w.roughness.is_some() {
            return Err(self.error("wind.roughness", "only for profile = \"log\""));
        }
        if profile_name != ProfileName::Power && w.exponent.is_some() {
            return Err(self.error("wind.exponent", "only for profile = \"power\""));
        }
        let profile = match profile_name {
            ProfileName::Log => {
                let roughness = self.number(
                    "wind.roughness",
                    w.roughness,
                    0.1,
                    Range::open(0.0, 10.0, "m"),
                )?;
                if roughness >= reference_height {
                    return Err(self.error(
                        "wind.roughness",
                        format!(
                            "{roughness} m must be below the reference height ({reference_height} m)"
                        ),
                    ));
                }
                WindProfile::Log { roughness }
            }
            ProfileName::Power => WindProfile::Power {
                exponent: self.number(
                    "wind.exponent",
                    w.exponent,
                    1.0 / 7.0,
                    Range::open(0.0, 1.0, ""),
                )?,
            },
            ProfileName::Uniform => WindProfile::Uniform,
        };
        let pressure_iterations = match w.pressure_iterations.unwrap_or(50) {
            0 => return Err(self.error("wind.pressure_iterations", "must be at least 1, got 0")),
            n => n,
        };
        Ok(Wind {
            direction: [dx / length, dy / length],
            speed,
            reference_height,
            profile,
            pressure_iterations,
        })
    }

    fn camera(&self, c: Option<raw::RawCamera>, domain: &Domain) -> Checked<Camera> {
        let (default_position, default_target) = match domain {
            Domain::Terrain { spec, .. } => {
                let [x, y, top] = spec.size;
                (
                    [0.5 * x, -0.45 * y, 0.9 * top],
                    [0.5 * x, 0.5 * y, 0.5 * spec.relief],
                )
            }
            Domain::Mesh { .. } => {
                if c.as_ref()
                    .is_none_or(|c| c.position.is_none() || c.target.is_none())
                {
                    return Err(self.error(
                        "camera",
                        "a mesh domain needs [camera] with position and target (the mesh's \
                         extent is only known once it is read)",
                    ));
                }
                ([0.0; 3], [0.0; 3])
            }
        };
        let c = c.unwrap_or_default();
        let position = self.list("camera.position", c.position, default_position)?;
        let target = self.list("camera.target", c.target, default_target)?;
        if position == target {
            return Err(self.error("camera.target", "must differ from camera.position"));
        }
        let fov = self.number(
            "camera.fov",
            c.fov,
            55.0,
            Range::open_both(1.0, 179.0, "degrees"),
        )?;
        Ok(Camera {
            position,
            target,
            fov,
        })
    }
}

/// The most snow particles a scene may ask for: 2^28.
pub const MAX_PARTICLES: u64 = 1 << 28;

/// An interval a number must lie in, for messages like `must be > 0 and <= 20 m/s`.
#[derive(Clone, Copy)]
struct Range {
    lo: f64,
    hi: f64,
    open_lo: bool,
    open_hi: bool,
    unit: &'static str,
}

impl Range {
    fn closed(lo: f64, hi: f64, unit: &'static str) -> Self {
        Self {
            lo,
            hi,
            open_lo: false,
            open_hi: false,
            unit,
        }
    }
    fn open(lo: f64, hi: f64, unit: &'static str) -> Self {
        Self {
            open_lo: true,
            ..Self::closed(lo, hi, unit)
        }
    }
    fn open_both(lo: f64, hi: f64, unit: &'static str) -> Self {
        Self {
            open_hi: true,
            ..Self::open(lo, hi, unit)
        }
    }
    fn holds(&self, v: f64) -> bool {
        v.is_finite()
            && (if self.open_lo {
                v > self.lo
            } else {
                v >= self.lo
            })
            && (if self.open_hi {
                v < self.hi
            } else {
                v <= self.hi
            })
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        let lo = if self.open_lo { ">" } else { ">=" };
        if self.hi == f64::MAX {
            write!(f, "a finite number {lo} {}{unit}", self.lo)
        } else {
            let hi = if self.open_hi { "<" } else { "<=" };
            write!(f, "{lo} {} and {hi} {}{unit}", self.lo, self.hi)
        }
    }
}
