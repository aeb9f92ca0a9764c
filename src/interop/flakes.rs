//! Stand-in sources until the simulation exists (`kernels/flakes.cl`): flakes that fall, drift
//! and wrap around the box, an analytic swirl for the wind view, and fixed particles given by
//! the host (for tests and pictures).

use glam::Vec3;
use opencl3::event::Event;
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::Buffer;
use opencl3::program::Program;
use opencl3::types::CL_BLOCKING;

use crate::cl::{self, Source};
use crate::render::testscene::SceneBox;

use super::compute::ComputeContext;
use super::source::{FieldRanges, FieldSource, ParticleSource};
use super::{Error, Result};

fn flakes_source() -> Result<Source> {
    Ok(Source::embedded(
        "flakes.cl",
        include_str!("../../kernels/flakes.cl"),
    )?)
}

fn launch_error(kernel: &str) -> impl FnOnce(opencl3::error_codes::ClError) -> Error + '_ {
    move |code| {
        cl::Error::Api {
            call: format!("clEnqueueNDRangeKernel({kernel})"),
            code,
        }
        .into()
    }
}

fn four(v: Vec3, w: f32) -> [f32; 4] {
    [v.x, v.y, v.z, w]
}

/// Settings of the falling flakes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlakesConfig {
    /// Number of flakes.
    pub count: usize,
    /// Seed of the initial positions.
    pub seed: u32,
    /// The box they fall through and wrap around.
    pub scene: SceneBox,
    /// Smallest and largest radius, in metres.
    pub radius: [f32; 2],
    /// Steady drift, in m/s.
    pub wind: Vec3,
    /// Sideways flutter amplitude, in m/s.
    pub flutter: f32,
    /// Fall speed per metre of radius, in 1/s (speed = fall · radius).
    pub fall: f32,
}

impl FlakesConfig {
    /// `count` flakes in `scene` with a light breeze.
    pub fn new(count: usize, scene: SceneBox) -> Self {
        Self {
            count,
            seed: 1,
            scene,
            radius: [0.03, 0.08],
            wind: Vec3::new(0.8, 0.3, 0.0),
            flutter: 0.4,
            fall: 30.0,
        }
    }
}

struct FlakesKernels {
    _program: Program,
    init: Kernel,
    step: Kernel,
}

/// Flakes falling through the box at a speed that grows with their radius, drifting and
/// fluttering, wrapping around every side (`flakes_init`, `flakes_step`).
pub struct Flakes {
    config: FlakesConfig,
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
        let (lo, hi) = (config.scene.lo, config.scene.hi);
        if !(lo.is_finite() && hi.is_finite() && hi.cmpgt(lo).all()) {
            return Err(Error::InvalidParameter(format!(
                "the flakes' box {lo} .. {hi} is empty"
            )));
        }
        Ok(Self {
            config,
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

    fn prepare(&mut self, compute: &ComputeContext) -> Result<()> {
        let program = compute.build(&[flakes_source()?], "-cl-fast-relaxed-math")?;
        self.kernels = Some(FlakesKernels {
            init: compute.kernel(&program, "flakes_init")?,
            step: compute.kernel(&program, "flakes_step")?,
            _program: program,
        });
        Ok(())
    }

    fn reset(
        &mut self,
        compute: &ComputeContext,
        particles: &mut Buffer<[f32; 4]>,
    ) -> Result<Vec<Event>> {
        let c = self.config;
        if c.count == 0 {
            return Ok(Vec::new());
        }
        let k = self.kernels()?;
        let work = compute.work_size(&k.init, c.count)?;
        let n = c.count as u32;
        let (lo, hi) = (four(c.scene.lo, 0.0), four(c.scene.hi, 0.0));
        // SAFETY: arguments match flakes_init's signature; the buffer holds `n` float4 and the
        // kernel guards `i < n`.
        let event = unsafe {
            ExecuteKernel::new(&k.init)
                .set_arg(&*particles)
                .set_arg(&n)
                .set_arg(&c.seed)
                .set_arg(&lo)
                .set_arg(&hi)
                .set_arg(&c.radius)
                .set_global_work_size(work.global)
                .set_local_work_size(work.local)
                .enqueue_nd_range(compute.queue())
        }
        .map_err(launch_error("flakes_init"))?;
        Ok(vec![event])
    }

    fn step(
        &mut self,
        compute: &ComputeContext,
        particles: &mut Buffer<[f32; 4]>,
        dt: f32,
        time: f32,
    ) -> Result<Vec<Event>> {
        let c = self.config;
        if c.count == 0 {
            return Ok(Vec::new());
        }
        let k = self.kernels()?;
        let work = compute.work_size(&k.step, c.count)?;
        let n = c.count as u32;
        let (lo, hi) = (four(c.scene.lo, 0.0), four(c.scene.hi, 0.0));
        let wind = four(c.wind, c.flutter);
        // SAFETY: arguments match flakes_step's signature; the buffer holds `n` float4 and the
        // kernel guards `i < n`.
        let event = unsafe {
            ExecuteKernel::new(&k.step)
                .set_arg(&*particles)
                .set_arg(&n)
                .set_arg(&dt)
                .set_arg(&time)
                .set_arg(&lo)
                .set_arg(&hi)
                .set_arg(&wind)
                .set_arg(&c.fall)
                .set_global_work_size(work.global)
                .set_local_work_size(work.local)
                .enqueue_nd_range(compute.queue())
        }
        .map_err(launch_error("flakes_step"))?;
        Ok(vec![event])
    }
}

/// Particles the host gives, written once and never moved: a fixed picture (tests use it to
/// know where every particle is).
pub struct FixedParticles {
    particles: Vec<[f32; 4]>,
}

impl FixedParticles {
    /// These particles (xyz position, w radius).
    pub fn new(particles: Vec<[f32; 4]>) -> Self {
        Self { particles }
    }
}

impl ParticleSource for FixedParticles {
    fn name(&self) -> &str {
        "fixed particles"
    }

    fn count(&self) -> usize {
        self.particles.len()
    }

    fn prepare(&mut self, _compute: &ComputeContext) -> Result<()> {
        Ok(())
    }

    fn reset(
        &mut self,
        compute: &ComputeContext,
        particles: &mut Buffer<[f32; 4]>,
    ) -> Result<Vec<Event>> {
        if self.particles.is_empty() {
            return Ok(Vec::new());
        }
        // SAFETY: the buffer was allocated for `count()` float4; the write is blocking.
        let event = unsafe {
            compute
                .queue()
                .enqueue_write_buffer(particles, CL_BLOCKING, 0, &self.particles, &[])
        }
        .map_err(|code| cl::Error::Api {
            call: "clEnqueueWriteBuffer(fixed particles)".into(),
            code,
        })?;
        Ok(vec![event])
    }

    fn step(
        &mut self,
        _compute: &ComputeContext,
        _particles: &mut Buffer<[f32; 4]>,
        _dt: f32,
        _time: f32,
    ) -> Result<Vec<Event>> {
        Ok(Vec::new())
    }
}

/// A steady breeze that strengthens with height plus a swirl whose eye circles the middle of
/// the box; the pressure falls with height and dips in the eye (`wind_field`).
pub struct AnalyticWind {
    dims: [u32; 4],
    scene: SceneBox,
    base: [f32; 4],
    kernel: Option<(Program, Kernel)>,
}

impl AnalyticWind {
    /// Samples on an `nx × ny × nz` grid filling `scene` (z up).
    pub fn new(dims: [u32; 3], scene: SceneBox) -> Result<Self> {
        let samples = dims.iter().try_fold(1u32, |n, &d| n.checked_mul(d));
        if dims.contains(&0) || samples.is_none_or(|n| n > u32::MAX / 2) {
            return Err(Error::InvalidParameter(format!(
                "wind sample grid {dims:?} must be non-empty and smaller than 2^31 points"
            )));
        }
        Ok(Self {
            dims: [dims[0], dims[1], dims[2], 0],
            scene,
            base: [4.0, 1.5, 0.0, 6.0],
            kernel: None,
        })
    }
}

impl FieldSource for AnalyticWind {
    fn samples(&self) -> usize {
        self.dims[..3].iter().map(|&d| d as usize).product()
    }

    fn prepare(&mut self, compute: &ComputeContext) -> Result<()> {
        let program = compute.build(&[flakes_source()?], "-cl-fast-relaxed-math")?;
        let kernel = compute.kernel(&program, "wind_field")?;
        self.kernel = Some((program, kernel));
        Ok(())
    }

    fn update(
        &mut self,
        compute: &ComputeContext,
        field: &mut Buffer<[f32; 4]>,
        time: f32,
    ) -> Result<Vec<Event>> {
        let Some((_, kernel)) = &self.kernel else {
            return Err(Error::Internal("wind field used before prepare".into()));
        };
        let work = compute.work_size(kernel, self.samples())?;
        let (lo, hi) = (four(self.scene.lo, 0.0), four(self.scene.hi, 0.0));
        // SAFETY: arguments match wind_field's signature; the buffer holds 2 float4 per sample
        // and the kernel guards `i < n`.
        let event = unsafe {
            ExecuteKernel::new(kernel)
                .set_arg(&*field)
                .set_arg(&self.dims)
                .set_arg(&lo)
                .set_arg(&hi)
                .set_arg(&self.base)
                .set_arg(&time)
                .set_global_work_size(work.global)
                .set_local_work_size(work.local)
                .enqueue_nd_range(compute.queue())
        }
        .map_err(launch_error("wind_field"))?;
        Ok(vec![event])
    }

    fn ranges(&self) -> FieldRanges {
        let breeze = (self.base[0].powi(2) + self.base[1].powi(2)).sqrt() * 1.4;
        FieldRanges {
            speed_max: breeze + self.base[3],
            pressure: [0.0, 1.0],
        }
    }
}
