//! Reading a scene file: TOML into raw sections, then each key checked against its range and
//! turned into the validated [`Scene`], errors located at the key's line and column.

use std::path::{Path, PathBuf};

use super::range::{Number, Range};
use super::raw::{self, ProfileName, RawScene, SortKeyName, SortName};
use super::spans;
use super::{
    BoundaryRefs, Camera, Domain, Ground, Scene, SceneError, Simulate, Snow, SortKey, SortMode,
    Time, View, Wind, WindProfile,
};
use crate::terrain::{Heightmap, MAX_GRADING_SPAN, Side, TerrainSpec};

use crate::particle::ParcelFlakes;
use crate::scene::limits;
pub use crate::scene::limits::{MAX_LENGTH, MAX_PARTICLES};

/// Frames from a ground refresh's read of the cover to its application, by default: 0.6 s of
/// the default 0.02 s frames, 50 ms at 600 frames a second, where the refresh's host work
/// takes 3–20 ms on a thread of its own (`benches/RESULTS.md`).
const DEFAULT_REFRESH_LAG: u32 = 30;
/// Earlier solves' corrections the pressure solve's start is projected onto by default.
pub const DEFAULT_PRESSURE_HISTORY: u32 = 2;
/// The most corrections `wind.pressure_history` may keep: the solver folds one sum per
/// correction and one more in a kernel, within gml's limit.
pub const MAX_PRESSURE_HISTORY: u32 = crate::gml::MAX_SUMS as u32 - 1;
/// The most frames `wind.ground_refresh_lag` may hold a refresh back.
const MAX_REFRESH_LAG: u32 = 1_000_000;
/// Frames between two sorts of the parcels by default (`snow.sort_every`): the parcels move
/// little in 4 frames, and sorting one frame in 4 made the frame 46 % faster at 2^24 parcels
/// on an H100 for 2 % more in the step (`benches/RESULTS.md`).
pub const DEFAULT_SORT_EVERY: u32 = 4;
/// Most frames between two sorts of the parcels (`snow.sort_every`, `--sort-every`).
pub const MAX_SORT_EVERY: u32 = 10_000;

/// The range of `wind.step`, s.
const WIND_STEP: Range = Range::open(0.0, 3600.0, "s");

impl Scene {
    /// Reads and validates a scene file (and the heightmap it names).
    pub fn load(path: &Path) -> Result<Scene, SceneError> {
        let text = crate::input::read_text(path, crate::input::TEXT_LIMIT).map_err(|e| {
            SceneError::Read {
                path: path.to_path_buf(),
                error: e.into_io_error(),
            }
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

    /// `N` numbers (or `default`), each finite and something the kernels' 32-bit floats hold
    /// ([`limits::single_precision`]).
    fn list<const N: usize>(
        &self,
        key: &str,
        values: Option<Vec<f64>>,
        default: [f64; N],
    ) -> Checked<[f64; N]> {
        let array = self.finite_list(key, values, default)?;
        self.single_precision_all(key, &array)?;
        Ok(array)
    }

    /// `N` finite numbers, or `default`.
    fn finite_list<const N: usize>(
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

    /// Like [`list`](Self::list), for coordinates and extents in metres: each within
    /// ±[`MAX_LENGTH`], what the 32-bit kernels and shaders can hold.
    fn lengths<const N: usize>(
        &self,
        key: &str,
        values: Option<Vec<f64>>,
        default: [f64; N],
    ) -> Checked<[f64; N]> {
        let array = self.finite_list(key, values, default)?;
        if let Some(x) = array.iter().find(|x| x.abs() > MAX_LENGTH) {
            return Err(self.error(
                key,
                format!("must be within ±{MAX_LENGTH:e} m, got {}", Number(*x)),
            ));
        }
        self.single_precision_all(key, &array)?;
        Ok(array)
    }

    /// `value` (or `default`) in `range`, and something the kernels' 32-bit floats hold
    /// ([`limits::single_precision`]).
    fn number(&self, key: &str, value: Option<f64>, default: f64, range: Range) -> Checked<f64> {
        let v = self.in_range(key, value, default, range)?;
        self.single_precision(key, v, range)?;
        Ok(v)
    }

    /// A count `value` (or `default`) of `what` (frames, corrections) from 0 to `max`.
    fn count(
        &self,
        key: &str,
        value: Option<u32>,
        default: u32,
        max: u32,
        what: &str,
    ) -> Checked<u32> {
        match value.unwrap_or(default) {
            n if n <= max => Ok(n),
            n => Err(self.error(key, format!("{n} {what}: at most {max}"))),
        }
    }

    /// `value` (or `default`) in `range`.
    fn in_range(&self, key: &str, value: Option<f64>, default: f64, range: Range) -> Checked<f64> {
        let v = value.unwrap_or(default);
        if range.holds(v) {
            Ok(v)
        } else {
            Err(self.error(key, format!("must be {range}, got {}", Number(v))))
        }
    }

    /// Refuses the numbers at `key` if the kernels' 32-bit floats make one 0 or infinite.
    fn single_precision_all(&self, key: &str, values: &[f64]) -> Checked<()> {
        match values.iter().find_map(|&x| limits::single_precision(x)) {
            Some(why) => Err(self.error(key, why)),
            None => Ok(()),
        }
    }

    /// `ground.roughness`: given, or the wind's own where its profile is logarithmic (and 1 mm
    /// else); in the kernels' 32-bit floats neither 0 nor infinite (a subnormal z₀ would become
    /// 0 and silently stop the drift).
    fn ground_roughness(&self, given: Option<f64>, wind: &Wind) -> Checked<f64> {
        let range = Range::open(0.0, 10.0, "m");
        let (key, z0) = match (given, wind.profile) {
            (Some(_), _) => (
                "ground.roughness",
                self.number("ground.roughness", given, 0.0, range)?,
            ),
            (None, WindProfile::Log { roughness }) => ("wind.roughness", roughness),
            (None, _) => ("ground.roughness", 0.001),
        };
        self.single_precision(key, z0, range)?;
        Ok(z0)
    }

    /// Refuses `v` at `key` if the kernels' 32-bit floats make it 0 or infinite.
    fn single_precision(&self, key: &str, v: f64, range: Range) -> Checked<()> {
        match limits::single_precision(v) {
            Some(why) => Err(self.error(key, format!("{why}; must be {range}"))),
            None => Ok(()),
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
        let [lo, hi] = self.finite_list(key, value, default)?;
        if !range.holds(lo) || !range.holds(hi) {
            return Err(self.error(
                key,
                format!(
                    "both ends must be {range}, got [{}, {}]",
                    Number(lo),
                    Number(hi)
                ),
            ));
        }
        if lo > hi {
            return Err(self.error(
                key,
                format!(
                    "[min, max] with min <= max, got [{}, {}]",
                    Number(lo),
                    Number(hi)
                ),
            ));
        }
        self.single_precision_all(key, &[lo, hi])?;
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
        // Without drift the ground refresh is off unless asked for: `ground.drift = false`
        // gives the behaviour of the build before drifting snow.
        let refresh_given = raw.wind.ground_refresh.is_some();
        let mut wind = self.wind(raw.wind, &domain)?;
        let s = raw.snow;
        let snow = Snow {
            particles: match s.particles.unwrap_or(1 << 20) {
                n @ 1..=MAX_PARTICLES => n,
                n => {
                    return Err(self.error(
                        "snow.particles",
                        format!("must be 1 to {MAX_PARTICLES} (2^27 − 1), got {n}"),
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
            rate: match s.deposit_depth {
                Some(_) => {
                    return Err(self.error(
                        "snow.deposit_depth",
                        "was replaced by snow.rate, the snowfall in metres of snow per hour on \
                         open flat ground (e.g. rate = 0.01); the depth each parcel adds now \
                         follows from it",
                    ));
                }
                None => self.number("snow.rate", s.rate, 0.01, Range::closed(0.0, 10.0, "m/h"))?,
            },
            density: self.number(
                "snow.density",
                s.density,
                100.0,
                Range::closed(10.0, 917.0, "kg/m³"),
            )?,
            source_height: self.number(
                "snow.source_height",
                s.source_height,
                0.0,
                Range::closed(0.0, 1e5, "m"),
            )?,
            full_sort_every: s.full_sort_every.unwrap_or(64),
            sort_every: match s.sort_every.unwrap_or(DEFAULT_SORT_EVERY) {
                k @ 1..=MAX_SORT_EVERY => k,
                k => {
                    return Err(self.error(
                        "snow.sort_every",
                        format!("must be 1..={MAX_SORT_EVERY} frames, got {k}"),
                    ));
                }
            },
            sort: match s.sort.unwrap_or(SortName::Partial) {
                SortName::Off => SortMode::Off,
                SortName::Full => SortMode::Full,
                SortName::Partial => SortMode::Partial,
            },
            sort_key: match s.sort_key.unwrap_or(SortKeyName::Tetrahedron) {
                SortKeyName::Tetrahedron => SortKey::Tetrahedron,
                SortKeyName::Hilbert => SortKey::Hilbert,
            },
            seed: s.seed.unwrap_or(1),
        };
        if let Some(why) = limits::drag_problem(
            snow.fall_speed as f32,
            snow.gravity as f32,
            snow.flake_diameter.map(|d| d as f32),
        ) {
            return Err(self.error("snow.fall_speed", why));
        }
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
            cover_refinement: match g.cover_refinement.unwrap_or(4) {
                r @ 1..=limits::MAX_COVER_REFINEMENT => r,
                r => {
                    return Err(self.error(
                        "ground.cover_refinement",
                        format!(
                            "must be 1 to {} pieces per ground edge, got {r}",
                            limits::MAX_COVER_REFINEMENT
                        ),
                    ));
                }
            },
            drift: g.drift.unwrap_or(true),
            suspension: g.suspension.unwrap_or(true),
            ageing_time: self.number(
                "ground.ageing_time",
                g.ageing_time,
                0.0,
                Range::closed(0.0, 1.0e9, "s"),
            )?,
            aged_threshold_friction_velocity: self.number(
                "ground.aged_threshold_friction_velocity",
                g.aged_threshold_friction_velocity,
                0.6,
                Range::open(0.0, 10.0, "m/s"),
            )?,
            threshold_friction_velocity: self.number(
                "ground.threshold_friction_velocity",
                g.threshold_friction_velocity,
                0.25,
                Range::open(0.0, 10.0, "m/s"),
            )?,
            saturation_length: self.number(
                "ground.saturation_length",
                g.saturation_length,
                20.0,
                Range::open(0.0, 100_000.0, "m"),
            )?,
            roughness: self.ground_roughness(g.roughness, &wind)?,
        };
        if ground.ageing_time > 0.0 && ground.ageing_time < 1e-3 {
            return Err(self.error(
                "ground.ageing_time",
                format!(
                    "{} s: 0 (no ageing) or at least 0.001 s",
                    ground.ageing_time
                ),
            ));
        }
        if !ground.drift && !refresh_given {
            wind.ground_refresh = 0.0;
        }
        if ground.ageing_time > 0.0
            && ground.aged_threshold_friction_velocity < ground.threshold_friction_velocity
        {
            return Err(self.error(
                "ground.aged_threshold_friction_velocity",
                format!(
                    "{} m/s is below ground.threshold_friction_velocity {} m/s: ageing raises \
                     the threshold",
                    ground.aged_threshold_friction_velocity, ground.threshold_friction_velocity
                ),
            ));
        }
        let time = Time {
            step: self.number("time.step", raw.time.step, 0.02, Range::open(0.0, 1.0, "s"))?,
            frames: match raw.time.frames {
                Some(0) => return Err(self.error("time.frames", "must be at least 1, got 0")),
                f => f,
            },
            acceleration: self.number(
                "time.acceleration",
                raw.time.acceleration,
                1.0,
                Range::closed(1e-6, 1e6, ""),
            )?,
        };
        let camera = self.camera(raw.camera, &domain)?;
        let simulate = self.simulate(&raw.simulate)?;
        self.wind_step(&wind, &time, &simulate)?;
        self.cells_along_the_wind(&domain, &wind, &simulate)?;
        let v = raw.view;
        let window = match &v.window {
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
        let view = self.view(v, window)?;
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
            if let Err(e) = crate::input::check_regular(&path) {
                return Err(self.error("domain.mesh", e.to_string()));
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
            Some(s) => self.lengths("domain.size", Some(s), [0.0; 2])?,
        };
        if !(x > 0.0 && y > 0.0) {
            return Err(self.error(
                "domain.size",
                format!(
                    "both extents must be > 0 m, got [{}, {}]",
                    Number(x),
                    Number(y)
                ),
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
            Range::open(0.0, MAX_LENGTH, "m"),
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
                    Range::closed(0.0, MAX_LENGTH, "m"),
                )?;
                if r >= top {
                    return Err(self.error(
                        "domain.relief",
                        format!(
                            "the highest terrain ({} m) must be below domain.top ({} m)",
                            Number(r),
                            Number(top)
                        ),
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
            // The span over the layers is checked by `validate`, its message naming the grading.
            grading: self.number(
                "domain.grading",
                d.grading,
                1.1,
                Range::closed(1.0, MAX_GRADING_SPAN, ""),
            )?,
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
            Range::open(0.0, MAX_LENGTH, "m"),
        )?;
        if let Domain::Terrain { spec, .. } = domain
            && reference_height >= spec.size[2] - spec.relief
        {
            return Err(self.error(
                "wind.reference_height",
                format!(
                    "{} m is not below the air above the highest terrain ({} m)",
                    Number(reference_height),
                    Number(spec.size[2] - spec.relief)
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
                            "{} m must be below the reference height ({} m)",
                            Number(roughness),
                            Number(reference_height)
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
        let pressure_tolerance = self.number(
            "wind.pressure_tolerance",
            w.pressure_tolerance,
            1e-2,
            Range::open(0.0, 1.0, ""),
        )?;
        // Against time.step and in 32-bit floats once the frames are known (`wind_step`).
        let step = match w.step {
            None => None,
            Some(_) => Some(self.in_range("wind.step", w.step, 1.0, WIND_STEP)?),
        };
        Ok(Wind {
            direction: [dx / length, dy / length],
            speed,
            reference_height,
            profile,
            pressure_iterations,
            air_density: self.number(
                "wind.air_density",
                w.air_density,
                1.225,
                Range::open(0.0, 100.0, "kg/m³"),
            )?,
            ground_refresh: self.number(
                "wind.ground_refresh",
                w.ground_refresh,
                10.0,
                Range::closed(0.0, 1.0e6, "s"),
            )?,
            ground_refresh_lag: self.count(
                "wind.ground_refresh_lag",
                w.ground_refresh_lag,
                DEFAULT_REFRESH_LAG,
                MAX_REFRESH_LAG,
                "frames",
            )?,
            pressure_tolerance,
            pressure_history: self.count(
                "wind.pressure_history",
                w.pressure_history,
                DEFAULT_PRESSURE_HISTORY,
                MAX_PRESSURE_HISTORY,
                "corrections",
            )?,
            step,
            advection: w.advection.unwrap_or_default(),
            operator: w.operator.unwrap_or_default(),
        })
    }

    /// A given `wind.step` when the wind steps with the frames: at most
    /// [`limits::MAX_WIND_STEPS_PER_FRAME`] of them a frame ([`limits::check_wind_steps`], as
    /// `run` checks the step its solver takes); and in 32-bit floats.
    fn wind_step(&self, wind: &Wind, time: &Time, simulate: &Simulate) -> Checked<()> {
        let Some(step) = wind.step else {
            return Ok(());
        };
        if simulate.wind && simulate.wind_every.is_none() {
            let what = format!("{} s", Number(step));
            limits::check_wind_steps(time.step as f32, step, &what)
                .map_err(|message| self.error("wind.step", message))?;
        }
        self.single_precision("wind.step", step, WIND_STEP)
    }

    /// When the wind is solved, a terrain domain needs 2 cells along each axis the wind
    /// crosses ([`limits::crossed_axes`]): with one, every vertex is on the inflow or the
    /// outflow side, and the pressure has no unknown.
    fn cells_along_the_wind(
        &self,
        domain: &Domain,
        wind: &Wind,
        simulate: &Simulate,
    ) -> Checked<()> {
        let Domain::Terrain { spec, .. } = domain else {
            return Ok(());
        };
        if !simulate.wind && simulate.frozen_wind_steps.is_none() {
            return Ok(());
        }
        let crossed = limits::crossed_axes(wind.direction);
        for (axis, (cells, crossed)) in ["x", "y"]
            .into_iter()
            .zip(spec.cells.into_iter().zip(crossed))
        {
            if crossed && cells < 2 {
                return Err(self.error(
                    "domain.cells",
                    format!(
                        "[{}, {}] leaves {cells} cell along {axis}, which the wind (direction \
                         [{:.3}, {:.3}]) crosses from its inflow to its outflow side: every \
                         vertex is on one of them, so the wind's pressure has no unknown to \
                         solve for; give at least 2 cells along {axis}",
                        spec.cells[0], spec.cells[1], wind.direction[0], wind.direction[1]
                    ),
                ));
            }
        }
        Ok(())
    }

    fn simulate(&self, s: &raw::RawSimulate) -> Checked<Simulate> {
        let simulate = Simulate {
            wind: s.wind.unwrap_or(true),
            snow: s.snow.unwrap_or(true),
            wind_every: s.wind_every,
            frozen_wind_steps: s.frozen_wind_steps,
        };
        if let Some(k) = simulate.wind_every
            && !(1..=10_000).contains(&k)
        {
            return Err(self.error(
                "simulate.wind_every",
                format!("must be 1..=10000 frames, got {k}"),
            ));
        }
        if let Some(n) = simulate.frozen_wind_steps {
            if simulate.wind {
                return Err(self.error(
                    "simulate.frozen_wind_steps",
                    "freezes the wind for the snow: it needs wind = false (with wind = true the \
                     wind keeps stepping)",
                ));
            }
            if !simulate.snow {
                return Err(self.error(
                    "simulate.frozen_wind_steps",
                    "a frozen wind is for the snow, and snow = false",
                ));
            }
            if n > 1_000_000 {
                return Err(self.error(
                    "simulate.frozen_wind_steps",
                    format!("must be at most 1000000, got {n}"),
                ));
            }
        }
        if simulate.wind_every.is_some() && !simulate.wind {
            return Err(self.error(
                "simulate.wind_every",
                "sets how often the wind steps, and wind = false",
            ));
        }
        Ok(simulate)
    }

    /// The `[view]` section: what is drawn and the look's constants.
    fn view(&self, v: raw::RawView, window: [u32; 2]) -> Checked<View> {
        let [azimuth, elevation] = self.finite_list("view.sun", v.sun, View::SUN)?;
        if !((-360.0..=360.0).contains(&azimuth) && elevation > 0.0 && elevation <= 90.0) {
            return Err(self.error(
                "view.sun",
                format!(
                    "expected [azimuth, elevation] in degrees, azimuth within ±360 and \
                     elevation > 0 and <= 90, got [{}, {}]",
                    Number(azimuth),
                    Number(elevation)
                ),
            ));
        }
        let colour = |key: &str, value: Option<Vec<f64>>, default: [f64; 3]| {
            let c = self.finite_list(key, value, default)?;
            if c.iter().any(|x| !(0.0..=1.0).contains(x)) {
                return Err(self.error(
                    key,
                    format!(
                        "expected [red, green, blue], each 0 to 1 (linear), got [{}, {}, {}]",
                        Number(c[0]),
                        Number(c[1]),
                        Number(c[2])
                    ),
                ));
            }
            Ok(c)
        };
        let [d0, d1] = self.finite_list("view.snow_cover", v.snow_cover, View::SNOW_COVER)?;
        if !(d0 >= 0.0 && d1 > d0 && d1 <= 100.0) {
            return Err(self.error(
                "view.snow_cover",
                format!(
                    "expected [bare, covered] depths in metres, 0 <= bare < covered <= 100, \
                     got [{}, {}]",
                    Number(d0),
                    Number(d1)
                ),
            ));
        }
        let shadow_map = v.shadow_map.unwrap_or(View::SHADOW_MAP);
        if shadow_map != 0 && !(16..=View::MAX_SHADOW_MAP).contains(&shadow_map) {
            return Err(self.error(
                "view.shadow_map",
                format!(
                    "must be 0 (no shadows) or 16 to {} texels, got {shadow_map}",
                    View::MAX_SHADOW_MAP
                ),
            ));
        }
        let near_flakes = v.near_flakes.unwrap_or(View::NEAR_FLAKES);
        if near_flakes > View::MAX_NEAR_FLAKES {
            return Err(self.error(
                "view.near_flakes",
                format!(
                    "must be 0 (none) to {} flakes, got {near_flakes}",
                    View::MAX_NEAR_FLAKES
                ),
            ));
        }
        let parcel_flakes = v.parcel_flakes.unwrap_or(View::PARCEL_FLAKES);
        if parcel_flakes > ParcelFlakes::MAX_FLAKES {
            return Err(self.error(
                "view.parcel_flakes",
                format!(
                    "must be 0 (one disc a parcel) to {} flakes, got {parcel_flakes}",
                    ParcelFlakes::MAX_FLAKES
                ),
            ));
        }
        Ok(View {
            terrain: v.terrain.unwrap_or(true),
            snow: v.snow.unwrap_or(true),
            wind: v.wind.unwrap_or(false),
            pressure: v.pressure.unwrap_or(false),
            window,
            vsync: v.vsync.unwrap_or(true),
            sun: [azimuth, elevation],
            exposure: self.number(
                "view.exposure",
                v.exposure,
                1.0,
                Range::open(0.0, 100.0, ""),
            )?,
            sky: colour("view.sky", v.sky, View::SKY)?,
            snow_colour: colour("view.snow_colour", v.snow_colour, View::SNOW_COLOUR)?,
            snow_shade: colour("view.snow_shade", v.snow_shade, View::SNOW_SHADE)?,
            snow_cover: [d0, d1],
            shadow_map,
            osd_text: self.number(
                "view.osd_text",
                v.osd_text,
                15.0,
                Range::closed(6.0, 200.0, "pixels"),
            )?,
            veil_colour: colour("view.veil_colour", v.veil_colour, View::VEIL_COLOUR)?,
            sky_distance: self.number(
                "view.sky_distance",
                v.sky_distance,
                50_000.0,
                Range::open(0.0, 1e7, "m"),
            )?,
            veil: v.veil.unwrap_or(true),
            exposure_time: self.number(
                "view.exposure_time",
                v.exposure_time,
                View::EXPOSURE_TIME,
                Range::closed(0.0, 10.0, "s"),
            )?,
            flake_distance: self.number(
                "view.flake_distance",
                v.flake_distance,
                View::FLAKE_DISTANCE,
                Range::closed(0.0, 10_000.0, "m"),
            )?,
            near_flakes,
            parcel_flakes,
            parcel_distance: self.number(
                "view.parcel_distance",
                v.parcel_distance,
                View::PARCEL_DISTANCE,
                Range::closed(0.0, 100_000.0, "m"),
            )?,
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
        let position = self.lengths("camera.position", c.position, default_position)?;
        let target = self.lengths("camera.target", c.target, default_target)?;
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
