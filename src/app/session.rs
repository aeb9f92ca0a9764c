//! A running simulation on screen: the [`Simulation`] writing its buffers on the OpenCL
//! device, links that bring them to GL, and the renderer, driven one frame at a time.
//!
//! One frame, in order: acquire the GL buffers (share mode), enqueue the simulation's frame
//! ([`Simulation::step`]) and the cover's depths into the frame's [`Timeline`], write the wind
//! view's samples when a view is shown and the wind has stepped, wait once (`clFinish`), read
//! every stage's device time from the timeline, hand the buffers to GL (release, or read back
//! into the mapped GL buffer), draw.
//!
//! In splat mode (`--particle-render splat`, see [`crate::splat`]) the splat kernels follow the
//! simulation's on the same queue, under the stage [`SPLAT_STAGE`], and only the splat image (and
//! the short list of flakes too wide to splat) is handed to GL, not the particles; the
//! renderer composites the image over the terrain. The image is reallocated whenever the frame
//! size changes. The simulation never knows which mode draws it.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::cl::{Context, DeviceEntry, Timeline};
use crate::counters::{StageTime, stage};
use crate::interop::{self, GlLink, Interop, InteropChoice, InteropMode};
use crate::particle::Particle;
use crate::render::{
    Action, FrameDriver, FrameError, GlSetup, OrbitCamera, Renderer, StageTimes, TerrainMesh, Views,
};
use crate::sim::{RefreshOff, SimReport, SimSetup, Simulation, StateOutputs, WindSamples};
use crate::splat::{
    self, ParticleRender, RenderChoice, RenderMode, SPLAT_EXTENSION, SplatView, Splatter,
};
use crate::terrain::SceneBox;

use super::splat::{PROBE_FRAMES, PROBE_WARMUP, Probe, ProbeStep, SplatPass};
use super::time::Watch;
use super::{Error, Result, in_stage};

pub use crate::splat::SPLAT_STAGE;

/// Host stage of the splat composite (and the overflow sprites): GPU time from a
/// `GL_TIME_ELAPSED` query, read when GL has it (a later frame; never waited for).
pub const COMPOSITE_STAGE: &str = stage::COMPOSITE;

/// Host stage of writing the wind view's samples into their GL buffer.
pub const FIELD_STAGE: &str = "wind.view";

/// The sun's shadows over the snow are drawn again every this many frames (and at once on a
/// reset, a new terrain or a new sun): the snow grows by a hair a frame, and a shadow map is
/// a pass over the whole terrain.
pub const SHADOW_EVERY: u64 = 16;

/// The veil follows where the parcels are every this many frames (`snow::RelativeDensity`: a
/// count of the parcels per cell and a blocking read).
pub const VEIL_DENSITY_EVERY: u64 = 30;

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
    /// The camera to start with; `None` frames the scene box.
    pub camera: Option<OrbitCamera>,
    /// How particles are drawn: sprites, splatted, or whichever is faster.
    pub particle_render: ParticleRender,
    /// Time the kernels (profiling events) on one frame in this many (1: every frame).
    pub profile_every: u64,
    /// The first frame timed (the first measured one).
    pub profile_from: u64,
}

/// One device feeding one renderer: the [`FrameDriver`] behind `snowsim run`.
///
/// The session owns the [`Simulation`] and the buffers it writes, moves them to GL each frame
/// by the chosen path, times every stage, and reacts to the window's keys.
pub struct Session {
    // Field order is drop order: the links (the GL buffers and their OpenCL side) go before
    // the renderer that draws from them, and everything OpenCL before its context.
    /// The splat image and its kernels while particles are splatted.
    splat: Option<SplatPass>,
    /// The splat kernels while sprites are drawn (`auto` before or while measuring).
    splatter: Option<Splatter>,
    /// The snow the particles laid, per ground vertex (four per float4), for the terrain drawn
    /// (sources that lay snow only).
    depth_link: Option<GlLink<[f32; 4]>>,
    particle_link: GlLink<Particle>,
    /// The wind views' samples, two float4 each (a simulation with a wind only).
    field_link: Option<GlLink<[f32; 4]>>,
    /// The friction velocity per ground vertex (four per float4) for the u* view (drifting
    /// snow only).
    friction_link: Option<GlLink<[f32; 4]>>,
    simulation: Simulation,
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
    frame: u64,
    /// The wind steps whose field the views show (`None`: none shown yet).
    shown_wind: Option<u64>,
    /// The frame's scene was enqueued before the host waited for the kernels (the APIs are
    /// ordered by semaphores), with the host time it took; its overlays follow.
    scene_drawn: Option<Duration>,
    /// Kernels are timed on one frame in this many.
    profile_every: u64,
    /// The first frame timed.
    profile_from: u64,
    /// The state written at the end and every few frames.
    outputs: StateOutputs,
    /// The simulation's report, read when the run ends.
    report: Rc<RefCell<Option<SimReport>>>,
    /// Copy mode, sprites: the particles' bytes read back and the time it took, over the
    /// frames stepped.
    readback: (u64, Duration),
    /// How particles are drawn now and why (shared with whoever reports it after the run).
    render: Rc<RefCell<RenderChoice>>,
    /// `auto`'s measurement, until it decides.
    probe: Option<Probe>,
    /// A line for the log (`auto`'s decision), taken by [`FrameDriver::notice`].
    notice: Option<String>,
    /// The acceleration the keys change and the on-screen display's numbers.
    watch: Watch,
    /// The falling snow the veil shows (`None`: no snow simulated).
    flakes: Option<crate::snow::Snowfall>,
    /// The keyframes the camera flies through (`--camera-path`), and the frames drawn so far
    /// (frame i is at i × time.step on the path).
    camera_path: Option<(super::CameraPath, u64)>,
}

impl Session {
    /// Opens the OpenCL side on `device` for the current GL context `gl` (choosing the interop
    /// path), builds the simulation of `setup` on it, builds the renderer, and writes the first
    /// frame's buffers.
    pub fn new(
        gl: &GlSetup,
        device: &DeviceEntry,
        config: SessionConfig,
        setup: SimSetup,
    ) -> Result<Self> {
        splat::check_request(config.particle_render, &device.info)?;
        let (context, interop) = interop::open(device, config.interop, gl)?;
        let (render, splatter, probe) = choose_render(&context, config.particle_render)?;
        let snow_config = setup.scene.as_ref().and_then(|s| s.snow.as_ref());
        let snowfall = snow_config.map(|c| (c.rate, c.acceleration));
        let flakes = snow_config.map(super::scene::snowfall);
        if let Some(f) = &flakes {
            f.validate()
                .map_err(|e| Error::Internal(format!("the falling snow: {e}")))?;
        }
        let watch = Watch::new(
            snowfall.map(|(rate, _)| rate),
            snowfall.map_or(1.0, |(_, a)| a),
            ground_area(&config.terrain),
        );
        let mut simulation = Simulation::new(&context, setup)?;
        simulation.draw_all()?;
        let count = simulation.particle_count();
        let mut renderer = Renderer::new(gl.gl.clone(), &config.terrain)?;
        let mut particle_link = GlLink::new(&context, &gl.gl, &interop, count)?;
        renderer.set_particles(particle_link.gl_buffer(), count)?;
        let gl_functions = gl.gl.clone();
        let mut timeline = context.timeline();
        particle_link.acquire(&gl_functions)?;
        simulation.reset(&context, &mut particle_link.target(), &mut timeline)?;
        timeline.wait()?;
        particle_link.publish(&gl_functions)?;
        let ground = simulation.ground_vertices();
        let depth_link = if ground > 0 {
            if ground != config.terrain.positions.len() {
                return Err(Error::Internal(format!(
                    "the simulation lays snow on {ground} ground vertices, the terrain drawn has {}",
                    config.terrain.positions.len()
                )));
            }
            let mut link = GlLink::new(&context, &gl.gl, &interop, ground.div_ceil(4))?;
            renderer.set_laid_depth(Some(link.gl_buffer()));
            link.acquire(&gl_functions)?;
            simulation.write_ground_depth(&context, &mut link.target(), &mut timeline)?;
            timeline.wait()?;
            link.publish(&gl_functions)?;
            Some(link)
        } else {
            None
        };
        let mut views = config.views;
        if let Some(f) = &flakes
            && views.beta == 0.0
        {
            views.beta = f.extinction() as f32;
        }
        if let Some(f) = &flakes
            && views.near.density == 0.0
        {
            views.near.density = f.number_density() as f32;
            views.near.diameter = f.diameter.map(|d| d as f32);
            views.near.fall_speed = f.fall_speed as f32;
        }
        // A near parcel's flakes spread over its share of the air: the footprint's radius,
        // half the parcels' spacing.
        if let Some(snow) = simulation.snow()
            && views.parcels.flakes > 0
            && views.parcels.spread == 0.0
        {
            views.parcels.spread = snow.footprint_radius();
        }
        let friction_link = match simulation.friction_threshold() {
            Some(threshold) if ground > 0 => {
                let link = GlLink::new(&context, &gl.gl, &interop, ground.div_ceil(4))?;
                renderer.set_friction(Some(link.gl_buffer()));
                views.friction_threshold = threshold as f32;
                Some(link)
            }
            _ => {
                views.friction = false;
                None
            }
        };
        let mut field_link = None;
        let mut shown_wind = None;
        if let Some(samples) = simulation.wind_samples()? {
            let n = samples.points.len() / 2;
            let mut link = GlLink::new(&context, &gl.gl, &interop, 2 * n)?;
            renderer.set_field(link.gl_buffer(), n)?;
            link.acquire(&gl_functions)?;
            link.target().write(&samples.points)?;
            link.publish(&gl_functions)?;
            show_ranges(&mut views, &samples);
            shown_wind = Some(simulation.wind_steps());
            field_link = Some(link);
        }
        timeline.resolve()?;
        let home = config
            .camera
            .unwrap_or_else(|| OrbitCamera::framing(config.bounds.lo, config.bounds.hi));
        let sorting = simulation.sorting();
        Ok(Self {
            depth_link,
            frame: 0,
            shown_wind,
            scene_drawn: None,
            profile_every: config.profile_every,
            profile_from: config.profile_from,
            outputs: StateOutputs::default(),
            report: Rc::default(),
            readback: (0, Duration::ZERO),
            render: Rc::new(RefCell::new(render)),
            probe,
            notice: None,
            splat: None,
            splatter,
            particle_link,
            field_link,
            friction_link,
            simulation,
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
            watch,
            flakes,
            camera_path: None,
        })
    }

    /// Flies the camera through `path`'s keyframes: frame i (stepped or not) is drawn from the
    /// path at i × `dt` seconds, with the scene's field of view.
    pub fn follow_camera_path(&mut self, path: super::CameraPath) {
        self.camera_path = Some((path, 0));
    }

    /// Puts the camera where the path is at this frame, and counts the frame.
    fn place_camera(&mut self) {
        let dt = f64::from(self.simulation.dt());
        let Some((path, frame)) = self.camera_path.as_mut() else {
            return;
        };
        let (eye, target) = path.at(*frame as f64 * dt);
        *frame += 1;
        let mut camera = OrbitCamera::looking_at(eye.as_vec3(), target.as_vec3(), self.home.fovy);
        camera.far = camera.far.max(self.home.far);
        self.camera = camera;
    }

    /// The falling snow the veil shows: the scene's real snowfall (`None`: no snow
    /// simulated).
    pub fn flakes(&self) -> Option<&crate::snow::Snowfall> {
        self.flakes.as_ref()
    }

    /// Hands the veil the falling snow's density where the parcels are now (blocking; nothing
    /// without snow, or with the veil hidden).
    fn follow_the_parcels(&mut self) -> Result<()> {
        if self.flakes.is_none() {
            return Ok(());
        }
        if let Some(d) = self.simulation.flake_density()? {
            self.renderer.set_veil_density(Some((
                d.dims,
                &d.values,
                glam::Vec3::from(d.lo),
                glam::Vec3::from(d.hi),
            )))?;
        }
        Ok(())
    }

    /// The acceleration the keys change and the on-screen display's numbers.
    pub fn watch(&self) -> &Watch {
        &self.watch
    }

    /// Rasterises the on-screen display's lines for the renderer, reading the snow's depths
    /// back when due (blocking, at most every [`super::time::OSD_REFRESH`]).
    fn update_osd(&mut self) -> Result<()> {
        if !self.watch.text_due() {
            return Ok(());
        }
        if self.watch.depths_due() {
            let report = self.simulation.report()?;
            self.watch
                .set_depths(report.deposited_m3, f64::from(report.max_depth_m));
        }
        let lines = self.watch.lines(
            f64::from(self.time),
            self.paused,
            self.simulation.particle_count(),
            &self.context.info().name,
        );
        let image = crate::render::rasterise(&lines, self.views.osd_text)?;
        self.renderer.set_osd(&image)?;
        self.watch.text_shown();
        Ok(())
    }

    /// The simulation.
    pub fn simulation(&self) -> &Simulation {
        &self.simulation
    }

    /// The simulation, to read a report or a state from it.
    pub fn simulation_mut(&mut self) -> &mut Simulation {
        &mut self.simulation
    }

    /// The simulation's report, filled when the run ends ([`FrameDriver::finish`]), for a
    /// caller that cannot keep the session (a window's run loop owns it).
    pub fn report_handle(&self) -> Rc<RefCell<Option<SimReport>>> {
        self.report.clone()
    }

    /// Writes the simulation's state (mesh, wind, snow cover) to `path` as VTK XML.
    pub fn save_state(&mut self, path: &std::path::Path) -> Result<()> {
        Ok(self.simulation.save_state(path)?)
    }

    /// Writes the state to `path` (as [`save_state`](Self::save_state)) when the run ends,
    /// whether headless or in a window the user closes; a `.pvtu`'s pieces are partitioned
    /// now ([`crate::sim::Simulation::prepare_state`]).
    pub fn save_state_on_finish(&mut self, path: std::path::PathBuf) -> Result<()> {
        self.simulation.prepare_state(&path)?;
        self.outputs.final_state = Some(path);
        Ok(())
    }

    /// Writes the state every few frames into a ParaView series ([`crate::sim::Series`]).
    pub fn write_series(&mut self, series: crate::sim::Series) {
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
        self.simulation.particle_count()
    }

    /// Bytes copied from the device into GL so far (zero in share mode).
    pub fn copied_bytes(&self) -> u64 {
        self.particle_link.copied_bytes()
            + self.field_link.as_ref().map_or(0, GlLink::copied_bytes)
            + self.depth_link.as_ref().map_or(0, GlLink::copied_bytes)
            + self.friction_link.as_ref().map_or(0, GlLink::copied_bytes)
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

    /// One frame: step the simulation (unless paused), splat the particles (splat mode), bring
    /// the buffers to GL, draw. Returns every stage's time: host stages on the wall clock, the
    /// kernels' stages from profiling.
    pub fn step_and_draw(&mut self, size: (u32, u32)) -> Result<StageTimes> {
        let frame_start = Instant::now();
        // A frame that failed after its scene was drawn left no overlays to add.
        self.scene_drawn = None;
        self.follow_probe(size)?;
        self.place_camera();
        let step = !self.paused || std::mem::take(&mut self.watch.step_once);
        let mut times = self.run_kernels(size, step)?;
        if step {
            self.time += self.simulation.dt();
            self.frame += 1;
            let dt = self.simulation.dt();
            self.outputs
                .after_frame(&mut self.simulation, self.frame, dt)?;
        }
        if self.views.osd {
            self.update_osd()?;
        }
        // The near flakes' clock: the frames stepped, in double precision.
        self.views.near.time = self.frame as f64 * f64::from(self.simulation.dt());
        let drawing = self.finish_drawing(size)?;
        self.watch.frame_drawn();
        times.push(StageTime::host(stage::DRAW, drawing));
        self.drawn()?;
        if let Some(composite) = self.renderer.take_composite_time() {
            times.push(StageTime::host(COMPOSITE_STAGE, composite));
        }
        if let Some(drawing) = self.renderer.take_draw_time() {
            times.push(StageTime::host(stage::DRAW_GPU, drawing));
        }
        if let Some(probe) = self.probe.as_mut() {
            probe.record(frame_start.elapsed());
        }
        Ok(times)
    }

    /// The frame's OpenCL work: the simulation's step (when `step`), the wind view's samples
    /// (when shown and the wind stepped), the splat (splat mode), one wait, and the hand-off to
    /// GL. Returns the kernel, transfer and device stages.
    fn run_kernels(&mut self, size: (u32, u32), step: bool) -> Result<Vec<StageTime>> {
        let mut times = Vec::new();
        let splatting = self.splat.is_some() && self.views.particles;
        if !(step || splatting) {
            return Ok(times);
        }
        let gl = self.renderer.gl().clone();
        if splatting && let Some(pass) = self.splat.as_mut() {
            pass.resize(&self.context, &gl, size, &mut self.renderer)?;
        }
        // The buffers GL reads every frame are acquired before the frame's first kernel, so
        // OpenCL waits for GL's last draw (external mode's "drawn") before it starts (the
        // views' links, when shown, are acquired later, behind that wait). Acquiring each
        // just before the kernel that writes it let the wind, the snow and the sort run
        // beside GL's draw, and on an H100 the two contexts then took turns at a cost (1080p
        // 8 % slower, 720p 2.5 % faster; benches/RESULTS.md).
        let start = Instant::now();
        self.particle_link.acquire(&gl)?;
        if step && let Some(link) = self.depth_link.as_mut() {
            link.acquire(&gl)?;
        }
        if splatting && let Some(pass) = self.splat.as_mut() {
            pass.acquire(&gl)?;
        }
        let mut acquire = start.elapsed();

        let start = Instant::now();
        self.timeline.set_records_events(
            self.context.profiling()
                && super::stepper::timed_frame(self.frame, self.profile_every, self.profile_from),
        );
        if step {
            self.simulation.step(
                &self.context,
                &mut self.particle_link.target(),
                &mut self.timeline,
            )?;
            if self.frame.is_multiple_of(VEIL_DENSITY_EVERY) {
                self.follow_the_parcels()?;
            }
            if let Some(link) = self.depth_link.as_mut() {
                self.simulation.write_ground_depth(
                    &self.context,
                    &mut link.target(),
                    &mut self.timeline,
                )?;
            }
            if self.views.friction
                && let Some(link) = self.friction_link.as_mut()
            {
                let start = Instant::now();
                link.acquire(&gl)?;
                acquire += start.elapsed();
                self.simulation.write_ground_friction(
                    &self.context,
                    &mut link.target(),
                    &mut self.timeline,
                )?;
            }
        }
        // The views show the wind of the last step: read only when shown and it has stepped.
        let update_field = step
            && (self.views.wind || self.views.pressure)
            && self.shown_wind != Some(self.simulation.wind_steps());
        if update_field && let Some(link) = self.field_link.as_mut() {
            let start = Instant::now();
            link.acquire(&gl)?;
            acquire += start.elapsed();
            if let Some(samples) = self.simulation.wind_samples()? {
                link.target().write(&samples.points)?;
                show_ranges(&mut self.views, &samples);
            }
            self.shown_wind = Some(self.simulation.wind_steps());
        }
        if splatting {
            in_stage(SPLAT_STAGE, self.enqueue_splat(size))?;
        }
        let mut transfer = acquire;
        let mut copies = Vec::new();
        // Ordered by semaphores, GL waits for the kernels on the GPU, not here: the buffers
        // are handed over and the scene enqueued before the host waits, so GL draws it as
        // soon as the kernels end while the host reads back what the overlays need.
        let early = self.interop.orders_by_semaphores();
        // Host time inside the kernels' window that other stages report.
        let mut not_kernels = Duration::ZERO;
        if early {
            let published = self.publish_links(&gl, step, splatting, update_field, &mut copies)?;
            let start = Instant::now();
            self.draw_scene(size)?;
            let scene = start.elapsed();
            self.scene_drawn = Some(scene);
            transfer += published;
            not_kernels = published + scene;
        }
        self.context.finish()?;
        if splatting && let Some(pass) = self.splat.as_mut() {
            // Rare: more wide flakes than the overflow list held; it grew. Splat again, or,
            // when the scene is already drawn, draw none this frame (the list holds them from
            // the next frame on).
            if pass.check_overflow(&self.context, &gl, &mut self.renderer)? && !early {
                in_stage(SPLAT_STAGE, self.enqueue_splat(size))?;
                self.context.finish()?;
                if let Some(pass) = self.splat.as_mut() {
                    pass.check_overflow(&self.context, &gl, &mut self.renderer)?;
                }
            }
        }
        if self.scene_drawn.is_some()
            && let Some(pass) = self.splat.as_ref()
        {
            pass.show_overflow(&mut self.renderer)?;
        }
        times.push(StageTime::host(
            stage::KERNELS,
            start.elapsed().saturating_sub(not_kernels),
        ));
        let device = self.timeline.resolve()?;
        if !early {
            transfer += self.publish_links(&gl, step, splatting, update_field, &mut copies)?;
        }
        times.push(StageTime::host(stage::TRANSFER, transfer));
        if copies.iter().any(|(c, _)| c.is_some()) {
            let (mut readback, mut upload) = (Duration::ZERO, Duration::ZERO);
            for (i, (copy, bytes)) in copies.into_iter().enumerate() {
                if let Some((r, u)) = copy {
                    readback += r;
                    upload += u;
                    // The rate is the particles' (the first, in sprites mode): the small
                    // buffers' reads are latency, not bandwidth.
                    if i == 0 && !splatting {
                        self.readback.0 += bytes;
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

    /// Hands the frame's buffers to GL (what `GlLink::publish` does on each path): the
    /// splat image and list or the particles, the wind view's samples when they were
    /// written, the friction velocity and the snow's depth when the simulation stepped.
    /// Records each copy's times in `copies`; returns the time spent.
    fn publish_links(
        &mut self,
        gl: &glow::Context,
        step: bool,
        splatting: bool,
        update_field: bool,
        copies: &mut Vec<(Option<(Duration, Duration)>, u64)>,
    ) -> Result<Duration> {
        let mut transfer = Duration::ZERO;
        if splatting && let Some(pass) = self.splat.as_mut() {
            // The particles stay on the device, OpenCL's until sprites draw them again
            // (`set_mode` hands them over): only the image crosses to GL.
            transfer += pass.publish(gl, &mut self.renderer)?;
        } else {
            transfer += self.particle_link.publish(gl)?;
            copies.push((
                self.particle_link.take_last_copy(),
                self.particle_link.bytes(),
            ));
        }
        if update_field && let Some(link) = self.field_link.as_mut() {
            transfer += link.publish(gl)?;
            copies.push((link.take_last_copy(), link.bytes()));
        }
        if step
            && self.views.friction
            && let Some(link) = self.friction_link.as_mut()
        {
            transfer += link.publish(gl)?;
            copies.push((link.take_last_copy(), link.bytes()));
        }
        if step && let Some(link) = self.depth_link.as_mut() {
            transfer += link.publish(gl)?;
            copies.push((link.take_last_copy(), link.bytes()));
            // The ground is drawn with this frame's snow; its shadows follow every few frames
            // (a shadow map costs 0.75 ms on an H200, the snow grows by a hair a frame).
            if self.frame.is_multiple_of(SHADOW_EVERY) {
                self.renderer.snow_changed();
            }
        }
        Ok(transfer)
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
            colour: crate::render::flake_colour(&self.views),
            eye: self.camera.eye().to_array(),
            parcels: self.views.parcels,
        };
        self.timeline.stage(SPLAT_STAGE);
        pass.enqueue(
            &self.context,
            &mut self.particle_link,
            self.simulation.particle_count(),
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

    /// Enqueues the drawing of the current buffers. GL may still be drawing when this
    /// returns: the next frame's kernels wait for it where they touch what GL reads (the
    /// links' `acquire`: the "drawn" semaphores, or `glFinish` where there are none), a
    /// capture's `glReadPixels` waits by itself, and the run loops finish GL after the last
    /// frame, so the simulation of frame n + 1 is enqueued while frame n is drawn.
    pub fn draw(&self, size: (u32, u32)) -> Result<()> {
        // GL waits for whatever OpenCL released since the last draw (external mode's
        // "written" semaphore, once for all the buffers).
        self.interop.hand_over()?;
        Ok(self.renderer.draw(&self.camera, size, &self.views)?)
    }

    /// The first part of the frame ([`Renderer::draw_scene`]), after the hand-over.
    fn draw_scene(&self, size: (u32, u32)) -> Result<()> {
        self.interop.hand_over()?;
        Ok(self.renderer.draw_scene(&self.camera, size, &self.views)?)
    }

    /// Draws what the frame still needs: its overlays when the scene was drawn before the
    /// wait, else all of it. Returns the host time the frame's drawing took.
    fn finish_drawing(&mut self, size: (u32, u32)) -> Result<Duration> {
        let start = Instant::now();
        match self.scene_drawn.take() {
            Some(scene) => {
                self.interop.hand_over()?;
                self.renderer.draw_overlays(&self.camera, size, &self.views);
                Ok(scene + start.elapsed())
            }
            None => {
                self.draw(size)?;
                Ok(start.elapsed())
            }
        }
    }

    /// Tells OpenCL that GL has drawn from the buffers (external mode's "drawn" semaphore,
    /// once for all of them).
    fn drawn(&mut self) -> Result<()> {
        Ok(self.interop.drawn()?)
    }

    /// Puts the particles back where they started and the camera home.
    pub fn reset(&mut self) -> Result<()> {
        let gl = self.renderer.gl().clone();
        self.particle_link.acquire(&gl)?;
        self.simulation.reset(
            &self.context,
            &mut self.particle_link.target(),
            &mut self.timeline,
        )?;
        self.timeline.resolve()?;
        self.particle_link.publish(&gl)?;
        if let Some(link) = self.depth_link.as_mut() {
            link.acquire(&gl)?;
            self.simulation.write_ground_depth(
                &self.context,
                &mut link.target(),
                &mut self.timeline,
            )?;
            self.timeline.resolve()?;
            link.publish(&gl)?;
            self.renderer.snow_changed();
        }
        self.camera = self.home;
        self.time = 0.0;
        self.frame = 0;
        Ok(())
    }
}

/// The area of the terrain's triangles, m².
fn ground_area(terrain: &TerrainMesh) -> f64 {
    terrain
        .triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|v| terrain.positions[v as usize].as_dvec3());
            0.5 * (b - a).cross(c - a).length()
        })
        .sum()
}

/// Colours the views by the ranges of the samples they show.
fn show_ranges(views: &mut Views, samples: &WindSamples) {
    views.speed_max = samples.speed_max;
    views.pressure_range = samples.pressure;
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
        self.scene_drawn = None;
        if self.splat_size().is_some_and(|s| s != size) {
            // The image is of another size: splat again (without stepping) before drawing.
            self.run_kernels(size, false)?;
        }
        self.finish_drawing(size)?;
        self.drawn()?;
        // A redrawn frame's timings are not reported: read them so that the ring holds only
        // the stepped frames'.
        let _ = self.renderer.take_draw_time();
        let _ = self.renderer.take_composite_time();
        Ok(())
    }

    fn notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    fn action(&mut self, action: Action) -> Option<String> {
        let on_off = |b: bool| if b { "on" } else { "off" };
        self.watch.touch();
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
                return Some(match self.simulation.set_sorting(self.sorting) {
                    Ok(true) => format!("sorting {}", on_off(self.sorting)),
                    Ok(false) => format!(
                        "sorting {} (recorded; the {} do not sort)",
                        on_off(self.sorting),
                        self.simulation.particle_name()
                    ),
                    Err(e) => format!("sorting could not change: {e}"),
                });
            }
            Action::ToggleWind => {
                self.views.wind = !self.views.wind;
                return Some(format!("wind view {}", on_off(self.views.wind)));
            }
            Action::TogglePressure => {
                self.views.pressure = !self.views.pressure;
                return Some(format!("pressure view {}", on_off(self.views.pressure)));
            }
            Action::ToggleFriction => {
                if self.friction_link.is_none() {
                    return Some("no friction velocity to show: the snow does not drift".into());
                }
                self.views.friction = !self.views.friction;
                return Some(format!(
                    "friction velocity view {} (yellow at u*t = {} m/s)",
                    on_off(self.views.friction),
                    self.views.friction_threshold
                ));
            }
            Action::Reset => {
                return Some(match self.reset() {
                    Ok(()) => "reset".into(),
                    Err(e) => format!("reset failed: {e}"),
                });
            }
            Action::RefreshGround => {
                return Some(match self.simulation.refresh_ground(&self.context) {
                    Ok(true) => {
                        let r = self
                            .simulation
                            .refresh_report()
                            .ok()
                            .flatten()
                            .unwrap_or_default();
                        format!(
                            "ground refreshed: the wind sees the laid snow ({:.1} ms, {} \
                             re-projection iterations)",
                            r.last_ms, r.last_iterations
                        )
                    }
                    Ok(false) => match self
                        .simulation
                        .refresh_report()
                        .ok()
                        .flatten()
                        .and_then(|r| r.off)
                    {
                        Some(off) if off != RefreshOff::Disabled => off.message().into(),
                        _ => "ground refresh: the laid snow has not changed since the last".into(),
                    },
                    Err(e) => format!("ground refresh failed: {e}"),
                });
            }
            Action::ScaleAcceleration(factor) => {
                return Some(self.watch.scale_acceleration(&mut self.simulation, factor));
            }
            Action::StepOnce => {
                if !self.paused {
                    return Some("`.` steps one frame while paused (Space pauses)".into());
                }
                self.watch.step_once = true;
            }
            Action::ToggleOsd => {
                self.views.osd = !self.views.osd;
                return Some(format!("on-screen display {}", on_off(self.views.osd)));
            }
        }
        None
    }

    fn finish(&mut self) -> std::result::Result<Option<String>, FrameError> {
        let line = self.outputs.finish(&mut self.simulation)?;
        *self.report.borrow_mut() = Some(self.simulation.report()?);
        Ok(line)
    }

    fn status(&self) -> String {
        let mut status = format!(
            "{} {} | interop {} | {} | {}",
            self.simulation.particle_count(),
            self.simulation.particle_name(),
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
