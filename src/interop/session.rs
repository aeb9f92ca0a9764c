//! A running simulation on screen: sources that write buffers on the OpenCL device, links that
//! bring them to GL, and the renderer, driven one frame at a time.

use std::time::{Duration, Instant};

use glow::HasContext;
use opencl3::event::Event;

use crate::cl::{self, DeviceEntry};
use crate::render::{
    Action, FrameDriver, FrameError, GlSetup, OrbitCamera, Renderer, SceneBox, StageTimes,
    TerrainMesh, Views,
};

use super::compute::ComputeContext;
use super::link::GlLink;
use super::source::{FieldSource, ParticleSource};
use super::{Error, InteropChoice, InteropMode, Result};

/// What a [`Session`] shows and how it starts.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The interop path asked for.
    pub interop: InteropMode,
    /// The ground.
    pub terrain: TerrainMesh,
    /// The simulated box (framed by the camera when none is given).
    pub bounds: SceneBox,
    /// What is drawn at start.
    pub views: Views,
    /// Start paused.
    pub paused: bool,
    /// Simulated seconds per frame (fixed, so runs are reproducible).
    pub dt: f32,
    /// The camera to start with; `None` frames the scene box.
    pub camera: Option<OrbitCamera>,
}

/// One device feeding one renderer: the [`FrameDriver`] behind `snowsim run`.
///
/// The simulation plugs in as a [`ParticleSource`] (and a [`FieldSource`] for the wind view);
/// the session owns the buffers they write, moves them to GL each frame by the chosen path,
/// times every stage, and reacts to the window's keys.
pub struct Session {
    // Field order is drop order: the OpenCL views of GL buffers go before the GL buffers
    // (renderer), and everything OpenCL before its context.
    particle_link: GlLink,
    field_link: Option<GlLink>,
    particles: Box<dyn ParticleSource>,
    field: Option<Box<dyn FieldSource>>,
    renderer: Renderer,
    compute: ComputeContext,
    choice: InteropChoice,
    camera: OrbitCamera,
    home: OrbitCamera,
    views: Views,
    paused: bool,
    sorting: bool,
    time: f32,
    dt: f32,
}

impl Session {
    /// Opens the OpenCL side on `device` for the current GL context `gl` (choosing the interop
    /// path), prepares the sources, builds the renderer, and writes the first frame's buffers.
    pub fn new(
        gl: &GlSetup,
        device: &DeviceEntry,
        config: SessionConfig,
        mut particles: Box<dyn ParticleSource>,
        mut field: Option<Box<dyn FieldSource>>,
    ) -> Result<Self> {
        if !(config.dt.is_finite() && config.dt >= 0.0) {
            return Err(Error::InvalidParameter(format!(
                "time step {} must be finite and not negative",
                config.dt
            )));
        }
        let (compute, choice) = super::open(device, config.interop, gl)?;
        particles.prepare(&compute)?;
        if let Some(field) = field.as_mut() {
            field.prepare(&compute)?;
        }
        let samples = field.as_ref().map_or(0, |f| f.samples());
        let renderer = Renderer::new(gl.gl.clone(), &config.terrain, particles.count(), samples)?;
        let mut particle_link = GlLink::new(
            &compute,
            choice.transfer,
            renderer.particle_buffer(),
            particles.count(),
        )?;
        let mut field_link = match &field {
            Some(_) => Some(GlLink::new(
                &compute,
                choice.transfer,
                renderer.field_buffer(),
                2 * samples,
            )?),
            None => None,
        };
        let gl_functions = gl.gl.clone();
        particle_link.acquire(&compute, &gl_functions)?;
        wait(particles.reset(&compute, particle_link.cl_buffer_mut())?)?;
        particle_link.publish(&compute, &gl_functions)?;
        let mut views = config.views;
        if let (Some(f), Some(link)) = (field.as_mut(), field_link.as_mut()) {
            link.acquire(&compute, &gl_functions)?;
            wait(f.update(&compute, link.cl_buffer_mut(), 0.0)?)?;
            link.publish(&compute, &gl_functions)?;
            let ranges = f.ranges();
            views.speed_max = ranges.speed_max;
            views.pressure_range = ranges.pressure;
        }
        let home = config
            .camera
            .unwrap_or_else(|| OrbitCamera::framing(config.bounds.lo, config.bounds.hi));
        Ok(Self {
            particle_link,
            field_link,
            particles,
            field,
            renderer,
            compute,
            choice,
            camera: home,
            home,
            views,
            paused: config.paused,
            sorting: false,
            time: 0.0,
            dt: config.dt,
        })
    }

    /// The interop path in use and why.
    pub fn interop(&self) -> &InteropChoice {
        &self.choice
    }

    /// The OpenCL side, for a simulation that needs more than the sources' calls.
    pub fn compute(&self) -> &ComputeContext {
        &self.compute
    }

    /// The renderer (to replace the terrain or upload a new snow depth).
    pub fn renderer_mut(&mut self) -> &mut Renderer {
        &mut self.renderer
    }

    /// The camera.
    pub fn camera_mut(&mut self) -> &mut OrbitCamera {
        &mut self.camera
    }

    /// What is drawn.
    pub fn views_mut(&mut self) -> &mut Views {
        &mut self.views
    }

    /// Whether the simulation is paused.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Whether the user asked for particle sorting.
    pub fn sorting(&self) -> bool {
        self.sorting
    }

    /// Simulated seconds so far.
    pub fn time(&self) -> f32 {
        self.time
    }

    /// Number of particles.
    pub fn particle_count(&self) -> usize {
        self.particles.count()
    }

    /// Bytes copied from the device into GL so far (zero in share mode).
    pub fn copied_bytes(&self) -> u64 {
        self.particle_link.copied_bytes() + self.field_link.as_ref().map_or(0, GlLink::copied_bytes)
    }

    /// One frame: step the sources (unless paused), bring their buffers to GL, draw.
    pub fn step_and_draw(&mut self, size: (u32, u32)) -> Result<StageTimes> {
        let mut times = StageTimes::default();
        if !self.paused {
            let gl = self.renderer.gl().clone();
            let update_field = self.views.wind || self.views.pressure;
            let start = Instant::now();
            self.particle_link.acquire(&self.compute, &gl)?;
            if update_field && let Some(link) = self.field_link.as_mut() {
                link.acquire(&self.compute, &gl)?;
            }
            let acquire = start.elapsed();

            let start = Instant::now();
            let mut events = self.particles.step(
                &self.compute,
                self.particle_link.cl_buffer_mut(),
                self.dt,
                self.time,
            )?;
            if update_field
                && let (Some(field), Some(link)) = (self.field.as_mut(), self.field_link.as_mut())
            {
                events.extend(field.update(&self.compute, link.cl_buffer_mut(), self.time)?);
            }
            self.compute.finish()?;
            times.kernel = start.elapsed();
            times.kernel_device = device_time(&events)?;

            let mut transfer = acquire + self.particle_link.publish(&self.compute, &gl)?;
            if update_field && let Some(link) = self.field_link.as_mut() {
                transfer += link.publish(&self.compute, &gl)?;
            }
            times.transfer = transfer;
            self.time += self.dt;
        }
        let start = Instant::now();
        self.draw(size);
        times.draw = start.elapsed();
        Ok(times)
    }

    /// Draws the current buffers and waits for GL to finish.
    pub fn draw(&self, size: (u32, u32)) {
        self.renderer.draw(&self.camera, size, &self.views);
        // SAFETY: the renderer's context is current on this thread.
        unsafe { self.renderer.gl().finish() };
    }

    /// Puts the particles back where they started and the camera home.
    pub fn reset(&mut self) -> Result<()> {
        let gl = self.renderer.gl().clone();
        self.particle_link.acquire(&self.compute, &gl)?;
        let events = self
            .particles
            .reset(&self.compute, self.particle_link.cl_buffer_mut())?;
        wait(events)?;
        self.particle_link.publish(&self.compute, &gl)?;
        self.camera = self.home;
        self.time = 0.0;
        Ok(())
    }
}

/// Waits for `events`.
fn wait(events: Vec<Event>) -> Result<()> {
    for event in events {
        event.wait().map_err(|code| cl::Error::Api {
            call: "clWaitForEvents".into(),
            code,
        })?;
    }
    Ok(())
}

/// Sum of the profiled device times of finished `events`.
fn device_time(events: &[Event]) -> Result<Duration> {
    let mut total = Duration::ZERO;
    for event in events {
        total += cl::event_duration(event)?;
    }
    Ok(total)
}

impl FrameDriver for Session {
    fn frame(&mut self, size: (u32, u32)) -> std::result::Result<StageTimes, FrameError> {
        Ok(self.step_and_draw(size)?)
    }

    fn redraw(&mut self, size: (u32, u32)) -> std::result::Result<(), FrameError> {
        self.draw(size);
        Ok(())
    }

    fn action(&mut self, action: Action) -> Option<String> {
        let on_off = |b: bool| if b { "on" } else { "off" };
        match action {
            Action::Orbit { dx, dy } => self.camera.orbit(dx, dy),
            Action::Zoom(steps) => self.camera.zoom(steps),
            Action::Pan { right, forward, up } => self.camera.pan(right, forward, up),
            Action::TogglePause => {
                self.paused = !self.paused;
                return Some(if self.paused { "paused" } else { "running" }.into());
            }
            Action::ToggleSorting => {
                self.sorting = !self.sorting;
                let sorts = self.particles.set_sorting(self.sorting);
                return Some(format!(
                    "sorting {}{}",
                    on_off(self.sorting),
                    if sorts {
                        String::new()
                    } else {
                        format!(" (recorded; {} do not sort)", self.particles.name())
                    }
                ));
            }
            Action::ToggleWind => {
                self.views.wind = !self.views.wind;
                return Some(format!("wind view {}", on_off(self.views.wind)));
            }
            Action::TogglePressure => {
                self.views.pressure = !self.views.pressure;
                return Some(format!("pressure view {}", on_off(self.views.pressure)));
            }
            Action::Reset => {
                return Some(match self.reset() {
                    Ok(()) => "reset".into(),
                    Err(e) => format!("reset failed: {e}"),
                });
            }
        }
        None
    }

    fn status(&self) -> String {
        let mut status = format!(
            "{} {} | interop {} | {}",
            self.particles.count(),
            self.particles.name(),
            self.choice.transfer,
            self.compute.info().name
        );
        if self.paused {
            status.push_str(" | paused");
        }
        if self.sorting {
            status.push_str(" | sorting");
        }
        status
    }
}
