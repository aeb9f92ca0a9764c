//! Stand-in sources until the simulation exists (`kernels/flakes.cl`): flakes that fall through
//! a scene's air, drift with its wind profile, land and come back in at the top; the wind
//! profile for the wind and pressure views; and fixed particles given by the host (for tests
//! and pictures).

use glam::Vec3;

use crate::cl::{
    Context, DeviceBuffer, Kernel, KernelCall, OutputBuffer, Program, Source, Timeline,
};
use crate::scene::{Wind, WindProfile};
use crate::terrain::{Heightfield, SceneBox};

use super::source::{FieldRanges, FieldSource, ParticleSource};
use super::{Error, Result};

/// Builds `kernels/flakes.cl` (or its replacement in `$SNOWSIM_KERNEL_DIR`).
fn build_flakes(context: &Context, options: &str) -> Result<Program> {
    let source = Source::embedded("flakes.cl", include_str!("../../kernels/flakes.cl"))?;
    Ok(Program::build(context, &[source], options)?)
}

fn four(v: Vec3, w: f32) -> [f32; 4] {
    [v.x, v.y, v.z, w]
}

/// The kernels' form of a wind: its velocity at the reference height (xyz, w unused) and the
/// profile as `(kind, parameter, reference height, normaliser)` (see `profile_factor` in
/// `kernels/flakes.cl`).
fn wind_args(wind: &Wind) -> ([f32; 4], [f32; 4]) {
    let velocity = wind.velocity_at(wind.reference_height).map(|v| v as f32);
    let zr = wind.reference_height;
    let profile = match wind.profile {
        WindProfile::Log { roughness: z0 } => [0.0, z0, zr, 1.0 / ((zr + z0) / z0).ln()],
        WindProfile::Power { exponent } => [1.0, exponent, zr, 1.0],
        WindProfile::Uniform => [2.0, 0.0, zr, 1.0],
    };
    (
        [velocity[0], velocity[1], velocity[2], 0.0],
        profile.map(|v| v as f32),
    )
}

/// Checks that a wind can be handed to the kernels.
fn check_wind(wind: &Wind) -> Result<()> {
    let (v, p) = wind_args(wind);
    if !(v.iter().chain(&p).all(|x| x.is_finite()) && wind.reference_height > 0.0) {
        return Err(Error::InvalidParameter(format!(
            "wind {wind:?} is not finite or has no positive reference height"
        )));
    }
    Ok(())
}

/// A flat ground at `z` under `bounds`: the form a missing ground takes.
fn flat_ground(bounds: &SceneBox) -> Heightfield {
    Heightfield {
        nx: 2,
        ny: 2,
        lo: bounds.lo.truncate(),
        hi: bounds.hi.truncate(),
        heights: vec![bounds.lo.z; 4],
    }
}

fn check_ground(ground: &Heightfield) -> Result<()> {
    let ok = ground.nx >= 2
        && ground.ny >= 2
        && ground.nx.checked_mul(ground.ny) == Some(ground.heights.len())
        && ground.nx <= u32::MAX as usize
        && ground.ny <= u32::MAX as usize
        && ground.lo.is_finite()
        && ground.hi.is_finite()
        && ground.hi.cmpgt(ground.lo).all()
        && ground.heights.iter().all(|h| h.is_finite());
    if !ok {
        return Err(Error::InvalidParameter(format!(
            "the ground grid ({}×{} points over {} .. {}, {} heights) is not a finite grid of at \
             least 2×2 points",
            ground.nx,
            ground.ny,
            ground.lo,
            ground.hi,
            ground.heights.len()
        )));
    }
    Ok(())
}

/// A ground grid on the device, as the kernels' `ground`, `ground_dims`, `ground_rect`.
struct GroundBuffer {
    heights: DeviceBuffer<f32>,
    dims: [u32; 2],
    rect: [f32; 4],
}

impl GroundBuffer {
    /// Sets the next three arguments, the `ground`, `ground_dims` and `ground_rect` that every
    /// kernel of flakes.cl ends with.
    fn bind(&self, call: &mut KernelCall<'_>) -> crate::cl::Result<()> {
        // SAFETY: the kernels read at most dims.x · dims.y heights, what the buffer holds.
        unsafe {
            call.buffer(&self.heights)?
                .arg(&self.dims)?
                .arg(&self.rect)?;
        }
        Ok(())
    }

    fn new(context: &Context, ground: &Heightfield) -> Result<Self> {
        Ok(Self {
            heights: DeviceBuffer::from_slice(context, &ground.heights)?,
            dims: [ground.nx as u32, ground.ny as u32],
            rect: [ground.lo.x, ground.lo.y, ground.hi.x, ground.hi.y],
        })
    }
}

/// Settings of the falling flakes.
#[derive(Clone, Debug, PartialEq)]
pub struct FlakesConfig {
    /// Number of flakes.
    pub count: usize,
    /// Seed of the initial positions and sizes.
    pub seed: u32,
    /// The box they fall through and wrap around.
    pub bounds: SceneBox,
    /// The ground under the box (a flake that reaches it comes back in at the top); `None`
    /// for flat ground at the bottom of the box.
    pub ground: Option<Heightfield>,
    /// Smallest and largest radius, in metres.
    pub radius: [f32; 2],
    /// The wind they drift with, at their height above the ground.
    pub wind: Wind,
    /// Sideways flutter amplitude, in m/s.
    pub flutter: f32,
    /// Fall speed of a flake of the mean radius, in m/s; larger flakes fall faster in
    /// proportion to their radius.
    pub fall_speed: f32,
}

impl FlakesConfig {
    /// `count` flakes of 1 to 4 mm radius in `bounds` over flat ground, falling at 1 m/s in a
    /// light uniform breeze towards the east.
    pub fn new(count: usize, bounds: SceneBox) -> Self {
        Self {
            count,
            seed: 1,
            bounds,
            ground: None,
            radius: [0.001, 0.004],
            wind: Wind {
                direction: [1.0, 0.0],
                speed: 1.0,
                reference_height: 10.0,
                profile: WindProfile::Uniform,
                pressure_iterations: 1,
                pressure_tolerance: 1e-2,
                step: None,
                advection: Default::default(),
                operator: Default::default(),
            },
            flutter: 0.15,
            fall_speed: 1.0,
        }
    }

    /// The kernel's fall speed per metre of radius.
    fn fall_per_radius(&self) -> f32 {
        let mean = 0.5 * (self.radius[0] + self.radius[1]);
        if mean > 0.0 {
            self.fall_speed / mean
        } else {
            0.0
        }
    }
}

struct FlakesKernels {
    init: Kernel,
    step: Kernel,
    ground: GroundBuffer,
}

/// Flakes falling through the air above the ground at a speed that grows with their radius,
/// drifting with the wind profile and fluttering, wrapping around the sides and coming back in
/// at the top when they reach the ground (`flakes_init`, `flakes_step`).
pub struct Flakes {
    config: FlakesConfig,
    ground: Heightfield,
    kernels: Option<FlakesKernels>,
}

impl Flakes {
    /// Flakes with these settings; kernels are built by [`ParticleSource::prepare`].
    pub fn new(config: FlakesConfig) -> Result<Self> {
        if config.count > u32::MAX as usize {
            return Err(Error::InvalidParameter(format!(
                "{} flakes exceed the kernel's 32-bit index",
                config.count
            )));
        }
        let bounds = config.bounds;
        if !bounds.is_valid() {
            return Err(Error::InvalidParameter(format!(
                "the flakes' box {} .. {} is empty",
                bounds.lo, bounds.hi
            )));
        }
        let [r0, r1] = config.radius;
        if !(r0.is_finite() && r1.is_finite() && r0 >= 0.0 && r0 <= r1) {
            return Err(Error::InvalidParameter(format!(
                "flake radius range [{r0}, {r1}] must be finite with 0 <= min <= max"
            )));
        }
        if !(config.fall_speed.is_finite()
            && config.fall_speed >= 0.0
            && config.flutter.is_finite())
        {
            return Err(Error::InvalidParameter(format!(
                "fall speed {} and flutter {} must be finite, the fall speed not negative",
                config.fall_speed, config.flutter
            )));
        }
        check_wind(&config.wind)?;
        let ground = config
            .ground
            .clone()
            .unwrap_or_else(|| flat_ground(&bounds));
        check_ground(&ground)?;
        Ok(Self {
            config,
            ground,
            kernels: None,
        })
    }

    fn kernels(&self) -> Result<&FlakesKernels> {
        self.kernels
            .as_ref()
            .ok_or_else(|| Error::Internal("flakes used before prepare".into()))
    }
}

impl ParticleSource for Flakes {
    fn name(&self) -> &str {
        "flakes"
    }

    fn count(&self) -> usize {
        self.config.count
    }

    fn prepare(&mut self, context: &Context) -> Result<()> {
        let program = build_flakes(context, "-cl-fast-relaxed-math")?;
        self.kernels = Some(FlakesKernels {
            init: program.kernel("flakes_init")?,
            step: program.kernel("flakes_step")?,
            ground: GroundBuffer::new(context, &self.ground)?,
        });
        Ok(())
    }

    fn reset(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let c = &self.config;
        if c.count == 0 {
            return Ok(());
        }
        let k = self.kernels()?;
        let work = k.init.work_size(context, c.count)?;
        let n = c.count as u32;
        let (lo, hi) = (four(c.bounds.lo, 0.0), four(c.bounds.hi, 0.0));
        let g = &k.ground;
        let mut call = k.init.call();
        // SAFETY: the buffer holds `n` float4, the ground buffer dims.x · dims.y floats, and
        // the kernel guards `i < n`.
        unsafe {
            call.buffer(particles)?
                .arg(&n)?
                .arg(&c.seed)?
                .arg(&lo)?
                .arg(&hi)?
                .arg(&c.radius)?;
        }
        g.bind(&mut call)?;
        call.enqueue_into(context, work, timeline)?;
        Ok(())
    }

    fn step(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        dt: f32,
        time: f32,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let c = &self.config;
        if c.count == 0 {
            return Ok(());
        }
        let k = self.kernels()?;
        let work = k.step.work_size(context, c.count)?;
        let n = c.count as u32;
        let (lo, hi) = (four(c.bounds.lo, 0.0), four(c.bounds.hi, 0.0));
        let (mut wind, profile) = wind_args(&c.wind);
        wind[3] = c.flutter;
        let fall = c.fall_per_radius();
        let g = &k.ground;
        let mut call = k.step.call();
        // SAFETY: the buffer holds `n` float4, the ground buffer dims.x · dims.y floats, and
        // the kernel guards `i < n`.
        unsafe {
            call.buffer(particles)?
                .arg(&n)?
                .arg(&dt)?
                .arg(&time)?
                .arg(&lo)?
                .arg(&hi)?
                .arg(&wind)?
                .arg(&profile)?
                .arg(&fall)?;
        }
        g.bind(&mut call)?;
        call.enqueue_into(context, work, timeline)?;
        Ok(())
    }
}

/// Particles the host gives, written once and never moved: a fixed picture (tests use it to
/// know where every particle is).
pub struct FixedParticles {
    particles: Vec<[f32; 4]>,
    laid_depth: Vec<f32>,
}

impl FixedParticles {
    /// These particles (xyz position, w radius).
    pub fn new(particles: Vec<[f32; 4]>) -> Self {
        Self {
            particles,
            laid_depth: Vec::new(),
        }
    }

    /// The same, with `depth` metres of snow laid on each terrain vertex (in the terrain
    /// drawn's vertex order), written through the interop like a simulation's cover.
    pub fn with_laid_depth(particles: Vec<[f32; 4]>, depth: Vec<f32>) -> Self {
        Self {
            particles,
            laid_depth: depth,
        }
    }
}

impl ParticleSource for FixedParticles {
    fn name(&self) -> &str {
        "fixed particles"
    }

    fn count(&self) -> usize {
        self.particles.len()
    }

    fn prepare(&mut self, _context: &Context) -> Result<()> {
        Ok(())
    }

    fn reset(
        &mut self,
        _context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        _timeline: &mut Timeline,
    ) -> Result<()> {
        Ok(particles.write(&self.particles)?)
    }

    fn step(
        &mut self,
        _context: &Context,
        _particles: &mut OutputBuffer<'_, [f32; 4]>,
        _dt: f32,
        _time: f32,
        _timeline: &mut Timeline,
    ) -> Result<()> {
        Ok(())
    }

    fn ground_vertices(&self) -> usize {
        self.laid_depth.len()
    }

    fn write_ground_depth(
        &mut self,
        _context: &Context,
        target: &mut OutputBuffer<'_, [f32; 4]>,
        _timeline: &mut Timeline,
    ) -> Result<()> {
        let packed: Vec<[f32; 4]> = self
            .laid_depth
            .chunks(4)
            .map(|c| std::array::from_fn(|i| c.get(i).copied().unwrap_or(0.0)))
            .collect();
        Ok(target.write(&packed)?)
    }
}

/// Sea-level pressure of the hydrostatic stand-in, in kPa.
const SEA_LEVEL_KPA: f32 = 101.325;
/// Specific gas constant of dry air (J/(kg·K)) times a standard temperature of 15 °C (K):
/// divided by gravity, the scale height of the hydrostatic pressure.
const RT: f32 = 287.05 * 288.15;

/// The wind a scene blows (its speed against height above the ground, [`Wind::velocity_at`])
/// at the points of a terrain-following grid, with the hydrostatic pressure
/// `101.325 kPa · exp(−g z / RT)`, for the wind and pressure views (`wind_profile`). The
/// inflow profile until the wind solver exists: steady, horizontal, and blind to the relief
/// except for following it.
pub struct ProfileWind {
    dims: [u32; 4],
    bounds: SceneBox,
    ground: Heightfield,
    wind: Wind,
    scale_height: f32,
    kernel: Option<(Kernel, GroundBuffer)>,
}

impl ProfileWind {
    /// Samples at the centres of an `nx × ny` grid over `bounds`, on `nz` levels between the
    /// ground (`None`: flat at the bottom of the box) and the top, closer together near the
    /// ground; `gravity` in m/s² sets the pressure's fall with height.
    pub fn new(
        dims: [u32; 3],
        bounds: SceneBox,
        ground: Option<Heightfield>,
        wind: Wind,
        gravity: f32,
    ) -> Result<Self> {
        let samples = dims.iter().try_fold(1u32, |n, &d| n.checked_mul(d));
        if dims.contains(&0) || samples.is_none_or(|n| n > u32::MAX / 2) {
            return Err(Error::InvalidParameter(format!(
                "wind sample grid {dims:?} must be non-empty and smaller than 2^31 points"
            )));
        }
        if !bounds.is_valid() {
            return Err(Error::InvalidParameter(format!(
                "the wind view's box {} .. {} is empty",
                bounds.lo, bounds.hi
            )));
        }
        if !(gravity.is_finite() && gravity > 0.0) {
            return Err(Error::InvalidParameter(format!(
                "gravity {gravity} must be positive"
            )));
        }
        check_wind(&wind)?;
        let ground = ground.unwrap_or_else(|| flat_ground(&bounds));
        check_ground(&ground)?;
        Ok(Self {
            dims: [dims[0], dims[1], dims[2], 0],
            bounds,
            ground,
            wind,
            scale_height: RT / gravity,
            kernel: None,
        })
    }

    /// Fraction of the air between the ground and the top at which level `k` sits.
    pub fn level_fraction(&self, k: u32) -> f32 {
        let t = (k as f32 + 0.5) / self.dims[2] as f32;
        t * t
    }

    /// Horizontal distance between neighbouring sample points (the smaller of x and y).
    pub fn spacing(&self) -> f32 {
        let size = self.bounds.size();
        (size.x / self.dims[0] as f32).min(size.y / self.dims[1] as f32)
    }

    fn pressure(&self, z: f32) -> f32 {
        SEA_LEVEL_KPA * (-z / self.scale_height).exp()
    }

    /// The ground height the kernel uses, clamped to the box.
    fn ground_range(&self) -> (f32, f32) {
        let (lo, hi) = self.ground.range();
        let clamp = |h: f32| h.clamp(self.bounds.lo.z, self.bounds.hi.z);
        (clamp(lo), clamp(hi))
    }
}

impl FieldSource for ProfileWind {
    fn samples(&self) -> usize {
        self.dims[..3].iter().map(|&d| d as usize).product()
    }

    fn prepare(&mut self, context: &Context) -> Result<()> {
        // Without relaxed math: the view shows the profile as the scene defines it.
        let program = build_flakes(context, "")?;
        let kernel = program.kernel("wind_profile")?;
        let ground = GroundBuffer::new(context, &self.ground)?;
        self.kernel = Some((kernel, ground));
        Ok(())
    }

    fn update(
        &mut self,
        context: &Context,
        field: &mut OutputBuffer<'_, [f32; 4]>,
        _time: f32,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let Some((kernel, ground)) = &self.kernel else {
            return Err(Error::Internal("wind profile used before prepare".into()));
        };
        let work = kernel.work_size(context, self.samples())?;
        let (lo, hi) = (four(self.bounds.lo, 0.0), four(self.bounds.hi, 0.0));
        let (wind, profile) = wind_args(&self.wind);
        let mut call = kernel.call();
        // SAFETY: the buffer holds 2 float4 per sample, the ground buffer dims.x · dims.y
        // floats, and the kernel guards `i < n`.
        unsafe {
            call.buffer(field)?
                .arg(&self.dims)?
                .arg(&lo)?
                .arg(&hi)?
                .arg(&wind)?
                .arg(&profile)?
                .arg(&SEA_LEVEL_KPA)?
                .arg(&self.scale_height)?;
        }
        ground.bind(&mut call)?;
        call.enqueue_into(context, work, timeline)?;
        Ok(())
    }

    /// Speed: the profile at the highest sample above the lowest ground (every profile grows
    /// with height). Pressure: from the highest sample point to the lowest.
    fn ranges(&self) -> FieldRanges {
        let (g_lo, g_hi) = self.ground_range();
        let top = self.bounds.hi.z;
        let (first, last) = (
            self.level_fraction(0),
            self.level_fraction(self.dims[2] - 1),
        );
        let highest_above_ground = (top - g_lo) * last;
        let speed_max = self.wind.speed_at(f64::from(highest_above_ground)) as f32;
        let z_low = g_lo + (top - g_lo) * first;
        let z_high = g_hi + (top - g_hi) * last;
        let (p_low, p_high) = (self.pressure(z_high), self.pressure(z_low));
        FieldRanges {
            speed_max: speed_max.max(1e-3),
            pressure: [p_low, p_high.max(p_low + 1e-3)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wind_args_normalise_the_log_profile_at_the_reference_height() {
        let wind = Wind {
            direction: [0.6, -0.8],
            speed: 5.0,
            reference_height: 10.0,
            profile: WindProfile::Log { roughness: 0.1 },
            pressure_iterations: 1,
            pressure_tolerance: 1e-2,
            step: None,
            advection: Default::default(),
            operator: Default::default(),
        };
        let (v, p) = wind_args(&wind);
        assert!(
            (v[0] - 3.0).abs() < 1e-5 && (v[1] + 4.0).abs() < 1e-5,
            "{v:?}"
        );
        // The kernel's factor at the reference height is 1.
        let factor = ((10.0f32 + p[1]) / p[1]).ln() * p[3];
        assert!((factor - 1.0).abs() < 1e-5, "{p:?}");
    }

    #[test]
    fn ranges_cover_the_samples() {
        let bounds = SceneBox {
            lo: Vec3::ZERO,
            hi: Vec3::new(100.0, 50.0, 40.0),
        };
        let wind = Wind {
            direction: [1.0, 0.0],
            speed: 4.0,
            reference_height: 10.0,
            profile: WindProfile::Power { exponent: 0.2 },
            pressure_iterations: 1,
            pressure_tolerance: 1e-2,
            step: None,
            advection: Default::default(),
            operator: Default::default(),
        };
        let field = ProfileWind::new([4, 2, 5], bounds, None, wind, 9.81).unwrap();
        assert_eq!(field.samples(), 40);
        assert_eq!(field.spacing(), 25.0);
        let r = field.ranges();
        let top = 40.0 * field.level_fraction(4);
        assert!((r.speed_max - 4.0 * (top / 10.0).powf(0.2)).abs() < 1e-4);
        assert!(r.pressure[0] < r.pressure[1] && r.pressure[1] < SEA_LEVEL_KPA);
        assert!(ProfileWind::new([0, 1, 1], bounds, None, wind, 9.81).is_err());
    }
}
