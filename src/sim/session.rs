//! A running simulation on screen: sources that write buffers on the OpenCL device, links that
//! bring them to GL, and the renderer, driven one frame at a time.
//!
//! One frame, in order: acquire the GL buffers (share mode), enqueue every source's kernels
//! into the frame's [`Timeline`] under their stage (`flakes.step`, `wind.view`), wait once
//! (`clFinish`), read every stage's device time from the timeline, hand the buffers to GL
//! (release, or read back into the mapped GL buffer), draw.
//!
//! In splat mode (`--particle-render splat`, see [`crate::splat`]) the splat kernels follow the
//! sources' on the same queue, under the stage [`SPLAT_STAGE`], and only the splat image (and
//! the short list of flakes too wide to splat) is handed to GL, not the particles; the
//! renderer composites the image over the terrain. The image is reallocated whenever the frame
//! size changes. The sources never know which mode draws them.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use glow::HasContext;

use crate::cl::{Context, DeviceEntry, Timeline};
use crate::counters::{StageTime, stage};
use crate::interop::{self, GlLink, Interop, InteropChoice, InteropMode};
use crate::render::{
    Action, FrameDriver, FrameError, GlSetup, OrbitCamera, Renderer, StageTimes, TerrainMesh, Views,
};
use crate::splat::{
    self, ParticleRender, RenderChoice, RenderMode, SPLAT_EXTENSION, SplatView, Splatter,
};
use crate::terrain::SceneBox;

use super::source::{FieldSource, ParticleSource};
use super::splat::{PROBE_FRAMES, PROBE_WARMUP, Probe, ProbeStep, SplatPass};
use super::{Error, Result, in_stage};

pub use crate::splat::SPLAT_STAGE;

/// Host stage of the splat composite (and the overflow sprites): GPU time from a
/// `GL_TIME_ELAPSED` query, read after the frame's `glFinish`.
pub const COMPOSITE_STAGE: &str = stage::COMPOSITE;

/// Stage of the particle source's kernels.
pub const PARTICLES_STAGE: &str = "snow.particles";
/// Stage of the field source's kernels (the wind and pressure views).
pub const FIELD_STAGE: &str = "wind.view";

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
    /// How particles are drawn: sprites, splatted, or whichever is faster.
    pub particle_render: ParticleRender,
    /// Time the kernels (profiling events) on one frame in this many (1: every frame).
    pub profile_every: u64,
}

/// One device feeding one renderer: the [`FrameDriver`] behind `snowsim run`.
///
/// The simulation plugs in as a [`ParticleSource`] (and a [`FieldSource`] for the wind view);
/// the session owns the buffers they write, moves them to GL each frame by the chosen path,
/// times every stage, and reacts to the window's keys.
pub struct Session {
    // Field order is drop order: the links (the GL buffers and their OpenCL side) go before
    // the renderer that draws from them, and everything OpenCL before its context.
    /// The splat image and its kernels while particles are splatted.
    splat: Option<SplatPass>,
    /// The splat kernels while sprites are drawn (`auto` before or while measuring).
    splatter: Option<Splatter>,
    /// The snow the particles laid, per ground vertex, for the terrain drawn (sources that
    /// lay snow only).
    depth_link: Option<GlLink>,
    particle_link: GlLink,
    field_link: Option<GlLink>,
    particles: Box<dyn ParticleSource>,
    field: Option<Box<dyn FieldSource>>,
    renderer: Renderer,
    context: Context,
    timeline: Timeline,
    interop: Interop,
    camera: OrbitCamera,
    home: OrbitCamera,
    views: Views,
    paused: bool,
    sorting: bool,
    time: f32,
    dt: f32,
    frame: u64,
    /// Kernels are timed on one frame in this many.
    profile_every: u64,
    /// The state written at the end and every few frames.
    outputs: super::StateOutputs,
    /// Copy mode, sprites: the particles' bytes read back and the time it took, over the
    /// frames stepped.
    readback: (u64, Duration),
    /// How particles are drawn now and why (shared with whoever reports it after the run).
    render: Rc<RefCell<RenderChoice>>,
    /// `auto`'s measurement, until it decides.
    probe: Option<Probe>,
    /// A line for the log (`auto`'s decision), taken by [`FrameDriver::notice`].
    notice: Option<String>,
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
        super::check_time_step(config.dt)?;
        splat::check_request(config.particle_render, &device.info)?;
        let (context, interop) = interop::open(device, config.interop, gl)?;
        let (render, splatter, probe) = choose_render(&context, config.particle_render)?;
        particles.prepare(&context)?;
        if let Some(field) = field.as_mut() {
            field.prepare(&context)?;
        }
        let samples = field.as_ref().map_or(0, |f| f.samples());
        let mut renderer = Renderer::new(gl.gl.clone(), &config.terrain)?;
        let mut particle_link = GlLink::new(&context, &gl.gl, &interop, particles.count())?;
        renderer.set_particles(particle_link.gl_buffer(), particles.count())?;
        let mut field_link = match &field {
            Some(_) => {
                let link = GlLink::new(&context, &gl.gl, &interop, 2 * samples)?;
                renderer.set_field(link.gl_buffer(), samples)?;
                Some(link)
            }
            None => None,
        };
        let gl_functions = gl.gl.clone();
        let mut timeline = context.timeline();
        timeline.stage(PARTICLES_STAGE);
        particle_link.acquire(&gl_functions)?;
        in_stage(
            PARTICLES_STAGE,
            particles.reset(&context, &mut particle_link.target(), &mut timeline),
        )?;
        timeline.wait()?;
        particle_link.publish(&gl_functions)?;
        let ground = particles.ground_vertices();
        let depth_link = if ground > 0 {
            if ground != config.terrain.positions.len() {
                return Err(Error::Internal(format!(
                    "{} lays snow on {ground} ground vertices, the terrain drawn has {}",
                    particles.name(),
                    config.terrain.positions.len()
                )));
            }
            let mut link = GlLink::new(&context, &gl.gl, &interop, ground.div_ceil(4))?;
            renderer.set_laid_depth(Some(link.gl_buffer()));
            link.acquire(&gl_functions)?;
            in_stage(
                PARTICLES_STAGE,
                particles.write_ground_depth(&context, &mut link.target(), &mut timeline),
            )?;
            timeline.wait()?;
            link.publish(&gl_functions)?;
            Some(link)
        } else {
            None
        };
        let mut views = config.views;
        if let (Some(f), Some(link)) = (field.as_mut(), field_link.as_mut()) {
            timeline.stage(FIELD_STAGE);
            link.acquire(&gl_functions)?;
            in_stage(
                FIELD_STAGE,
                f.update(&context, &mut link.target(), 0.0, &mut timeline),
            )?;
            timeline.wait()?;
            link.publish(&gl_functions)?;
            let ranges = f.ranges();
            views.speed_max = ranges.speed_max;
            views.pressure_range = ranges.pressure;
        }
        timeline.resolve()?;
        let home = config
            .camera
            .unwrap_or_else(|| OrbitCamera::framing(config.bounds.lo, config.bounds.hi));
        let sorting = particles.sorting();
        Ok(Self {
            depth_link,
            frame: 0,
            profile_every: config.profile_every,
            outputs: super::StateOutputs::default(),
            readback: (0, Duration::ZERO),
            render: Rc::new(RefCell::new(render)),
            probe,
            notice: None,
            splat: None,
            splatter,
            particle_link,
            field_link,
            particles,
            field,
            renderer,
            context,
            timeline,
            interop,
            camera: home,
            home,
            views,
            paused: config.paused,
            sorting,
            time: 0.0,
            dt: config.dt,
        })
    }

    /// Writes the simulation's state (mesh, wind, snow cover) to `path` as VTK XML.
    pub fn save_state(&mut self, path: &std::path::Path) -> Result<()> {
        self.particles.save_state(path)
    }

    /// Writes the state to `path` (as [`save_state`](Self::save_state)) when the run ends,
    /// whether headless or in a window the user closes.
    pub fn save_state_on_finish(&mut self, path: std::path::PathBuf) {
        self.outputs.final_state = Some(path);
    }

    /// Writes the state every few frames into a ParaView series ([`super::Series`]).
    pub fn write_series(&mut self, series: super::Series) {
        self.outputs.series = Some(series);
    }

    /// Copy mode: the read-back rate over the frames stepped (bytes per second), and whether
    /// it went through pinned host memory; `None` on the other paths or before a frame.
    pub fn readback_rate(&self) -> Option<(f64, bool)> {
        let (bytes, time) = self.readback;
        (bytes > 0 && !time.is_zero()).then(|| {
            (
                bytes as f64 / time.as_secs_f64(),
                self.particle_link.is_pinned(),
            )
        })
    }

    /// The interop path in use and why.
    pub fn interop(&self) -> &InteropChoice {
        self.interop.choice()
    }

    /// The OpenCL context every kernel of the frame runs on (GL-shared in share mode), for a
    /// simulation that needs more than the sources' calls.
    pub fn context(&self) -> &Context {
        &self.context
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
        self.particle_link.copied_bytes()
            + self.field_link.as_ref().map_or(0, GlLink::copied_bytes)
            + self.splat.as_ref().map_or(0, SplatPass::copied_bytes)
    }

    /// How particles are drawn now and why (while `auto` measures, the mode of the last frame).
    pub fn particle_render(&self) -> RenderChoice {
        self.render.borrow().clone()
    }

    /// The same as [`particle_render`](Self::particle_render), kept up to date, for a caller
    /// that cannot keep the session (a window's run loop owns it).
    pub fn particle_render_handle(&self) -> Rc<RefCell<RenderChoice>> {
        self.render.clone()
    }

    /// The frame size the splat image is allocated for, `None` while sprites are drawn.
    pub fn splat_size(&self) -> Option<(u32, u32)> {
        self.splat.as_ref().map(SplatPass::size)
    }

    /// One frame: step the sources (unless paused), splat the particles (splat mode), bring
    /// the buffers to GL, draw. Returns every stage's time: host stages on the wall clock, the
    /// kernels' stages from profiling.
    pub fn step_and_draw(&mut self, size: (u32, u32)) -> Result<StageTimes> {
        let frame_start = Instant::now();
        self.follow_probe(size)?;
        let step = !self.paused;
        let mut times = self.run_kernels(size, step)?;
        if step {
            self.time += self.dt;
            self.frame += 1;
            self.outputs
                .after_frame(&mut *self.particles, self.frame, self.dt)?;
        }
        let start = Instant::now();
        self.draw(size);
        times.push(StageTime::host(stage::DRAW, start.elapsed()));
        self.drawn();
        if let Some(composite) = self.renderer.take_composite_time() {
            times.push(StageTime::host(COMPOSITE_STAGE, composite));
        }
        if let Some(probe) = self.probe.as_mut() {
            probe.record(frame_start.elapsed());
        }
        Ok(times)
    }

    /// The frame's OpenCL work: the sources' step (when `step`), the splat (splat mode), one
    /// wait, and the hand-off to GL. Returns the kernel, transfer and device stages.
    fn run_kernels(&mut self, size: (u32, u32), step: bool) -> Result<Vec<StageTime>> {
        let mut times = Vec::new();
        let splatting = self.splat.is_some() && self.views.particles;
        if !(step || splatting) {
            return Ok(times);
        }
        let gl = self.renderer.gl().clone();
        let update_field = step && (self.views.wind || self.views.pressure);
        if splatting && let Some(pass) = self.splat.as_mut() {
            pass.resize(&self.context, &gl, size, &mut self.renderer)?;
        }
        let start = Instant::now();
        self.particle_link.acquire(&gl)?;
        if update_field && let Some(link) = self.field_link.as_mut() {
            link.acquire(&gl)?;
        }
        if step && let Some(link) = self.depth_link.as_mut() {
            link.acquire(&gl)?;
        }
        if splatting && let Some(pass) = self.splat.as_mut() {
            pass.acquire(&gl)?;
        }
        let acquire = start.elapsed();

        let start = Instant::now();
        self.timeline.set_records_events(
            self.context.profiling() && self.frame.is_multiple_of(self.profile_every.max(1)),
        );
        if step {
            self.timeline.stage(PARTICLES_STAGE);
            in_stage(
                PARTICLES_STAGE,
                self.particles.step(
                    &self.context,
                    &mut self.particle_link.target(),
                    self.dt,
                    self.time,
                    &mut self.timeline,
                ),
            )?;
            if let Some(link) = self.depth_link.as_mut() {
                in_stage(
                    PARTICLES_STAGE,
                    self.particles.write_ground_depth(
                        &self.context,
                        &mut link.target(),
                        &mut self.timeline,
                    ),
                )?;
            }
        }
        if update_field
            && let (Some(field), Some(link)) = (self.field.as_mut(), self.field_link.as_mut())
        {
            self.timeline.stage(FIELD_STAGE);
            in_stage(
                FIELD_STAGE,
                field.update(
                    &self.context,
                    &mut link.target(),
                    self.time,
                    &mut self.timeline,
                ),
            )?;
            // A solved field's colour ranges follow it.
            let ranges = field.ranges();
            self.views.speed_max = ranges.speed_max;
            self.views.pressure_range = ranges.pressure;
        }
        if splatting {
            in_stage(SPLAT_STAGE, self.enqueue_splat(size))?;
        }
        self.context.finish()?;
        if splatting && let Some(pass) = self.splat.as_mut() {
            // Rare: more wide flakes than the overflow list held; it grew, splat again.
            if pass.check_overflow(&self.context, &gl, &mut self.renderer)? {
                in_stage(SPLAT_STAGE, self.enqueue_splat(size))?;
                self.context.finish()?;
                if let Some(pass) = self.splat.as_mut() {
                    pass.check_overflow(&self.context, &gl, &mut self.renderer)?;
                }
            }
        }
        times.push(StageTime::host(stage::KERNELS, start.elapsed()));
        let device = self.timeline.resolve()?;

        let mut transfer = acquire;
        let mut copies = Vec::new();
        if splatting && let Some(pass) = self.splat.as_mut() {
            // The particles stay on the device: only the image crosses to GL.
            self.particle_link.release()?;
            transfer += pass.publish(&gl, &mut self.renderer)?;
        } else {
            transfer += self.particle_link.publish(&gl)?;
            copies.push((
                self.particle_link.take_last_copy(),
                self.particle_link.len(),
            ));
        }
        if update_field && let Some(link) = self.field_link.as_mut() {
            transfer += link.publish(&gl)?;
            copies.push((link.take_last_copy(), link.len()));
        }
        if step && let Some(link) = self.depth_link.as_mut() {
            transfer += link.publish(&gl)?;
            copies.push((link.take_last_copy(), link.len()));
        }
        times.push(StageTime::host(stage::TRANSFER, transfer));
        if copies.iter().any(|(c, _)| c.is_some()) {
            let (mut readback, mut upload) = (Duration::ZERO, Duration::ZERO);
            for (i, (copy, len)) in copies.into_iter().enumerate() {
                if let Some((r, u)) = copy {
                    readback += r;
                    upload += u;
                    // The rate is the particles' (the first, in sprites mode): the small
                    // buffers' reads are latency, not bandwidth.
                    if i == 0 && !splatting {
                        self.readback.0 += len as u64 * 16;
                        self.readback.1 += r;
                    }
                }
            }
            times.push(StageTime::host(stage::READBACK, readback));
            times.push(StageTime::host(stage::UPLOAD, upload));
        }
        times.extend(device);
        Ok(times)
    }

    /// Enqueues the splat of the current particles for a frame of `size`, seen by the camera.
    fn enqueue_splat(&mut self, size: (u32, u32)) -> Result<()> {
        let Some(pass) = self.splat.as_mut() else {
            return Err(Error::Internal("splat without its pass".into()));
        };
        let (w, h) = (size.0.max(1), size.1.max(1));
        let view = SplatView {
            // Exactly what the renderer draws with (`Renderer::draw`).
            view_proj: self.camera.projection(w as f32 / h as f32) * self.camera.view(),
            size: (w, h),
            point_scale: self.camera.point_scale(h),
            min_diameter: self.renderer.min_point_size(&self.views),
            colour: self.renderer.palette.snow,
        };
        self.timeline.stage(SPLAT_STAGE);
        pass.enqueue(
            &self.context,
            &mut self.particle_link,
            self.particles.count(),
            &view,
            &mut self.timeline,
        )
    }

    /// Switches to splatting (allocating the image for `size`) or back to sprites.
    fn set_mode(&mut self, mode: RenderMode, size: (u32, u32)) -> Result<()> {
        match (mode, self.splat.is_some()) {
            (RenderMode::Splat, false) => {
                let Some(splatter) = self.splatter.take() else {
                    return Err(Error::Internal("splat mode without its kernels".into()));
                };
                let gl = self.renderer.gl().clone();
                let size = (size.0.max(1), size.1.max(1));
                self.splat = Some(SplatPass::new(
                    &self.context,
                    &gl,
                    &self.interop,
                    splatter,
                    size,
                    &mut self.renderer,
                )?);
            }
            (RenderMode::Sprites, true) => {
                self.renderer.clear_splat();
                self.splatter = self.splat.take().map(SplatPass::into_splatter);
                // The sprites draw the particle buffer, which splat mode left on the device.
                let gl = self.renderer.gl().clone();
                self.particle_link.acquire(&gl)?;
                self.particle_link.publish(&gl)?;
            }
            _ => {}
        }
        self.render.borrow_mut().mode = mode;
        Ok(())
    }

    /// `auto`: the mode of the next frame while measuring, then the decision (logged once).
    fn follow_probe(&mut self, size: (u32, u32)) -> Result<()> {
        let Some(probe) = &self.probe else {
            if self.render.borrow().mode == RenderMode::Splat && self.splat.is_none() {
                self.set_mode(RenderMode::Splat, size)?;
            }
            return Ok(());
        };
        match probe.next() {
            ProbeStep::Measure(splat) => {
                let mode = if splat {
                    RenderMode::Splat
                } else {
                    RenderMode::Sprites
                };
                self.render.borrow_mut().reason = format!(
                    "measuring sprites against splat ({} frames of each, {} left out as \
                     warm-up): {} of {} frames so far",
                    PROBE_WARMUP + PROBE_FRAMES,
                    PROBE_WARMUP,
                    probe.frames(),
                    Probe::FRAMES
                );
                match self.set_mode(mode, size) {
                    // `auto` falls back to sprites when splatting cannot start here (a frame
                    // larger than GL's buffer textures, memory).
                    Err(e) if splat => {
                        self.probe = None;
                        self.splat = None;
                        self.splatter = None;
                        self.renderer.clear_splat();
                        self.set_mode(RenderMode::Sprites, size)?;
                        self.render.borrow_mut().reason = format!("splatting could not start: {e}");
                        self.notice = Some(format!("particle render: {}", self.render.borrow()));
                        Ok(())
                    }
                    other => other,
                }
            }
            ProbeStep::Decided {
                splat,
                sprites_ms,
                splat_ms,
            } => {
                self.probe = None;
                let mode = if splat {
                    RenderMode::Splat
                } else {
                    RenderMode::Sprites
                };
                self.set_mode(mode, size)?;
                self.render.borrow_mut().reason = format!(
                    "{mode} was faster: mean frame {splat_ms:.3} ms with splat, {sprites_ms:.3} \
                     ms with sprites (over {PROBE_FRAMES} frames of each after {PROBE_WARMUP} \
                     warm-up)"
                );
                if mode == RenderMode::Sprites {
                    self.splatter = None;
                }
                self.notice = Some(format!("particle render: {}", self.render.borrow()));
                Ok(())
            }
        }
    }

    /// Draws the current buffers and waits for GL to finish.
    pub fn draw(&self, size: (u32, u32)) {
        self.renderer.draw(&self.camera, size, &self.views);
        // SAFETY: the renderer's context is current on this thread.
        unsafe { self.renderer.gl().finish() };
    }

    /// Tells every link that GL has drawn from it (external mode's "drawn" semaphores).
    fn drawn(&mut self) {
        self.particle_link.drawn();
        if let Some(link) = self.depth_link.as_mut() {
            link.drawn();
        }
        if let Some(link) = self.field_link.as_mut() {
            link.drawn();
        }
        if let Some(pass) = self.splat.as_mut() {
            pass.drawn();
        }
    }

    /// Puts the particles back where they started and the camera home.
    pub fn reset(&mut self) -> Result<()> {
        let gl = self.renderer.gl().clone();
        self.particle_link.acquire(&gl)?;
        self.timeline.stage(PARTICLES_STAGE);
        self.particles.reset(
            &self.context,
            &mut self.particle_link.target(),
            &mut self.timeline,
        )?;
        self.timeline.resolve()?;
        self.particle_link.publish(&gl)?;
        if let Some(link) = self.depth_link.as_mut() {
            link.acquire(&gl)?;
            self.particles.write_ground_depth(
                &self.context,
                &mut link.target(),
                &mut self.timeline,
            )?;
            self.timeline.resolve()?;
            link.publish(&gl)?;
        }
        self.camera = self.home;
        self.time = 0.0;
        self.frame = 0;
        Ok(())
    }
}

/// The particle render mode to start with, the splat kernels when they may be used, and
/// `auto`'s probe when it will measure.
fn choose_render(
    context: &Context,
    requested: ParticleRender,
) -> Result<(RenderChoice, Option<Splatter>, Option<Probe>)> {
    let choice = |mode, reason: String| RenderChoice {
        mode,
        requested,
        reason,
    };
    Ok(match requested {
        ParticleRender::Sprites => (choice(RenderMode::Sprites, "as asked".into()), None, None),
        ParticleRender::Splat => (
            choice(RenderMode::Splat, "as asked".into()),
            Some(Splatter::new(context)?),
            None,
        ),
        ParticleRender::Auto if !splat::supported(context.info()) => (
            choice(
                RenderMode::Sprites,
                format!(
                    "{} does not offer {SPLAT_EXTENSION}, which splatting needs",
                    context.info().label()
                ),
            ),
            None,
            None,
        ),
        ParticleRender::Auto => (
            choice(RenderMode::Sprites, "measuring".into()),
            Some(Splatter::new(context)?),
            Some(Probe::default()),
        ),
    })
}

impl FrameDriver for Session {
    fn frame(&mut self, size: (u32, u32)) -> std::result::Result<StageTimes, FrameError> {
        Ok(self.step_and_draw(size)?)
    }

    fn redraw(&mut self, size: (u32, u32)) -> std::result::Result<(), FrameError> {
        if self.splat_size().is_some_and(|s| s != size) {
            // The image is of another size: splat again (without stepping) before drawing.
            self.run_kernels(size, false)?;
        }
        self.draw(size);
        self.drawn();
        Ok(())
    }

    fn notice(&mut self) -> Option<String> {
        self.notice.take()
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

    fn finish(&mut self) -> std::result::Result<Option<String>, FrameError> {
        Ok(self.outputs.finish(&mut *self.particles)?)
    }

    fn status(&self) -> String {
        let mut status = format!(
            "{} {} | interop {} | {} | {}",
            self.particles.count(),
            self.particles.name(),
            self.interop.transfer(),
            self.render.borrow().mode,
            self.context.info().name
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
