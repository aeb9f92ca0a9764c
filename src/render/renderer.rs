//! The OpenGL 3.3 core renderer: the terrain raised by its snow, lit by a sun with shadows,
//! particles as point sprites read from the buffer the simulation writes (or, in splat mode,
//! the image an OpenCL kernel splatted them into, composited over the terrain), and the wind
//! and pressure debug views.
//!
//! The terrain's vertices, their snow and their incident triangles are read in
//! `terrain.vert` from buffer textures: each vertex is raised by its snow depth (the scene's
//! initial cover plus what the particles laid, a buffer OpenCL writes) and its normal is
//! recomputed in the shader from the raised incident triangles, every frame, so drifts show as
//! relief without the depths ever coming back to the CPU. The shadow map is the terrain's depth
//! seen from the sun (`shadow.rs`), drawn again whenever the snow, the terrain or the sun
//! changed.

use std::cell::Cell;
use std::mem::{offset_of, size_of};
use std::rc::Rc;
use std::time::Duration;

use glam::Vec3;
use glow::HasContext;

use crate::particle::{PARTICLE_BYTES, ParcelFlakes, Particle};

use super::camera::OrbitCamera;
use super::draw_timer::DrawTimer;
use super::error::{Error, Result, gl_call};
use super::near::{NearFlakes, NearFrame, NearPass};
use super::osd::{Osd, OsdImage};
use super::shader::{ShaderProgram, build_program, build_program_with_geometry, builtin};
use super::shadow::{ShadowMap, light_view_proj, sun_direction};
use super::splat::SplatComposite;
use super::terrain::TerrainMesh;
use super::veil::{Density, VEIL_UNIFORMS, VeilPass};

/// Bytes of one `float4`.
const FLOAT4_BYTES: usize = size_of::<[f32; 4]>();
/// Bytes of one debug-field sample: two `float4` (position; velocity and pressure).
pub const FIELD_SAMPLE_BYTES: usize = 2 * FLOAT4_BYTES;

// particles.vert reads a particle as one vec4: its position, then its radius.
const _: () =
    assert!(offset_of!(Particle, radius) == offset_of!(Particle, position) + size_of::<[f32; 3]>());

/// Colours of the scene, linear RGB in [0, 1].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Palette {
    /// Clear colour: the sky behind everything.
    pub background: [f32; 3],
    /// Bare ground on gentle slopes.
    pub grass: [f32; 3],
    /// Bare ground on steep slopes.
    pub rock: [f32; 3],
    /// Snow on the ground and the flakes (their albedo).
    pub snow: [f32; 3],
    /// The sky's light on snow, what snow in shade gets (bluish); the sun adds
    /// `(1 − AMBIENT) · cos(incidence)` of white light where it shines.
    pub snow_shade: [f32; 3],
    /// The light the falling snow scatters towards the eye: what a distant surface fades to.
    pub veil: [f32; 3],
}

impl Default for Palette {
    fn default() -> Self {
        Self {
            background: [0.55, 0.68, 0.85],
            grass: [0.30, 0.42, 0.20],
            rock: [0.42, 0.38, 0.33],
            snow: [0.97, 0.97, 1.0],
            snow_shade: [0.40, 0.47, 0.60],
            veil: [0.72, 0.75, 0.80],
        }
    }
}

/// What to draw and how the debug views map values to colour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Views {
    /// Draw the terrain.
    pub terrain: bool,
    /// Draw the particles.
    pub particles: bool,
    /// Draw the wind as short lines at the sample points.
    pub wind: bool,
    /// Draw the pressure as coloured squares at the sample points.
    pub pressure: bool,
    /// Wind speed drawn red (slower is blue → green → yellow).
    pub speed_max: f32,
    /// Pressures drawn yellow and red.
    pub pressure_range: [f32; 2],
    /// Snow depths in metres of bare and of fully covered ground: the covered share of the
    /// ground is `smoothstep(snow_cover[0], snow_cover[1], depth)` (`terrain.frag`).
    pub snow_cover: [f32; 2],
    /// The sun: `[azimuth, elevation]` in degrees, azimuth clockwise from north (+y) towards
    /// east (+x).
    pub sun: [f32; 2],
    /// Factor on the light reaching the terrain and the flakes.
    pub exposure: f32,
    /// Side of the sun's shadow map in texels; 0 draws no shadows.
    pub shadow_map: u32,
    /// The scene's colours.
    pub palette: Palette,
    /// The falling snow's extinction coefficient, per metre (0: no veil), from the scene's
    /// real snowfall ([`crate::snow::Snowfall::extinction`]); drawn while `particles` is on.
    pub beta: f32,
    /// How far the sky is for the veil, metres.
    pub sky_distance: f32,
    /// Draw the veil (with the particles): `false` shows the scene as through clear air.
    pub veil: bool,
    /// Draw the on-screen display (the text set by [`Renderer::set_osd`]).
    pub osd: bool,
    /// Height of the on-screen display's text, pixels.
    pub osd_text: f32,
    /// Side of the pressure squares, in metres.
    pub pressure_size: f32,
    /// A wind line shows the path travelled in this many seconds…
    pub wind_seconds: f32,
    /// …but is never longer than this, in metres.
    pub wind_max_length: f32,
    /// Smallest particle sprite diameter in pixels, so far flakes do not vanish; a flake that
    /// projects smaller is drawn this size with the opacity of its true footprint.
    pub min_particle_pixels: f32,
    /// The flakes near the camera (drawn with the particles; none while its density is 0).
    pub near: NearFlakes,
    /// The parcels near the camera drawn as the flakes they stand for (in both paths).
    pub parcels: ParcelFlakes,
    /// Colour the ground by the wind's friction velocity (the drifting snow's u*) instead of
    /// its cover: blue to green below the threshold, yellow to red above it; the ground is
    /// then seen through clear air (no veil on it).
    pub friction: bool,
    /// The friction velocity below which the wind lifts no snow, m/s (the u* view's
    /// turning point).
    pub friction_threshold: f32,
}

impl Views {
    /// The extinction coefficient the veil is drawn with: `beta` while the snow and the veil
    /// are shown, else 0.
    pub fn veil_beta(&self) -> f32 {
        if self.particles && self.veil {
            self.beta
        } else {
            0.0
        }
    }
}

impl Default for Views {
    fn default() -> Self {
        Self {
            terrain: true,
            particles: true,
            wind: false,
            pressure: false,
            speed_max: 10.0,
            pressure_range: [0.0, 1.2],
            snow_cover: [0.0, 0.10],
            sun: [245.0, 36.0],
            exposure: 1.0,
            shadow_map: 2048,
            palette: Palette::default(),
            beta: 0.0,
            sky_distance: 50_000.0,
            veil: true,
            osd: false,
            osd_text: 15.0,
            pressure_size: 0.6,
            wind_seconds: 0.5,
            wind_max_length: 3.5,
            min_particle_pixels: 1.5,
            near: NearFlakes::default(),
            parcels: ParcelFlakes::NONE,
            friction: false,
            friction_threshold: 0.25,
        }
    }
}

/// A frame's size (at least one pixel each way) and the camera's matrices for it.
struct FrameView {
    w: u32,
    h: u32,
    view: glam::Mat4,
    proj: glam::Mat4,
    view_proj: glam::Mat4,
}

impl FrameView {
    fn new(camera: &OrbitCamera, size: (u32, u32)) -> Self {
        let (w, h) = (size.0.max(1), size.1.max(1));
        let view = camera.view();
        let proj = camera.projection(w as f32 / h as f32);
        Self {
            w,
            h,
            view,
            proj,
            view_proj: proj * view,
        }
    }
}

/// Share of light that reaches surfaces facing away from the sun.
pub const AMBIENT: f32 = 0.35;
/// Texture units of the terrain's buffer textures and shadow map.
const UNIT_VERTICES: u32 = 0;
const UNIT_LAID: u32 = 1;
const UNIT_RING_START: u32 = 2;
const UNIT_RING: u32 = 3;
/// Texture unit of the friction velocity per terrain vertex (the u* view).
const UNIT_FRICTION: u32 = 6;
const UNIT_SHADOW: u32 = 4;
/// Snow above the terrain's highest point that the shadow map's box makes room for, as a
/// share of the terrain's horizontal extent (at least [`SHADOW_SNOW_MIN`] metres).
const SHADOW_SNOW_SHARE: f32 = 0.05;
/// Least room for snow above the terrain in the shadow map's box, metres.
const SHADOW_SNOW_MIN: f32 = 10.0;
/// Texels of the shadow map the shadow lookup starts off the surface, along its normal.
const SHADOW_NORMAL_TEXELS: f32 = 1.5;

/// The uniforms `draw` sets in each program, checked when it is built (a uniform renamed in a
/// `SNOWSIM_SHADER_DIR` copy is an error there, not a silent zero). The veiled programs
/// (terrain, sprites) declare [`VEIL_UNIFORMS`] too.
const TERRAIN_UNIFORMS: &[&str] = &[
    "u_view_proj",
    "u_vertices",
    "u_laid",
    "u_has_laid",
    "u_ring_start",
    "u_ring",
    "u_sun_dir",
    "u_grass_colour",
    "u_rock_colour",
    "u_snow_colour",
    "u_snow_shade",
    "u_snow_cover",
    "u_ambient",
    "u_exposure",
    "u_shadows",
    "u_shadow_map",
    "u_light_view_proj",
    "u_shadow_offset",
    "u_friction",
    "u_show_friction",
    "u_friction_threshold",
];
/// The shadow pass: terrain.vert's uniforms.
const SHADOW_UNIFORMS: &[&str] = &[
    "u_view_proj",
    "u_vertices",
    "u_laid",
    "u_has_laid",
    "u_ring_start",
    "u_ring",
    "u_friction",
];
const PARTICLE_UNIFORMS: &[&str] = &[
    "u_view",
    "u_proj",
    "u_point_scale",
    "u_size_range",
    "u_cloud",
    "u_snow_colour",
];
const WIND_UNIFORMS: &[&str] = &["u_view_proj", "u_seconds", "u_max_length", "u_speed_max"];
const PRESSURE_UNIFORMS: &[&str] = &[
    "u_view",
    "u_proj",
    "u_point_scale",
    "u_size",
    "u_pressure_range",
];

/// The terrain on the GPU: its vertices and incident triangles in buffers read through buffer
/// textures, and the triangles' indices.
struct Mesh {
    vao: glow::VertexArray,
    vertices: glow::Buffer,
    indices: glow::Buffer,
    ring_start: glow::Buffer,
    ring: glow::Buffer,
    /// Buffer textures over `vertices`, `ring_start` and `ring`.
    textures: [glow::Texture; 3],
    index_count: i32,
    vertex_count: usize,
    /// The bare terrain's box.
    bounds: (Vec3, Vec3),
}

/// GL programs, buffers and vertex arrays for one scene, on one context.
///
/// The particle buffer ([`set_particles`](Self::set_particles)) and the debug-field buffer
/// ([`set_field`](Self::set_field)) belong to the interop, which fills them from OpenCL every
/// frame (shared, imported or copied); the renderer only reads them.
pub struct Renderer {
    gl: Rc<glow::Context>,
    terrain_program: ShaderProgram,
    shadow_program: ShaderProgram,
    particle_program: ShaderProgram,
    wind_program: ShaderProgram,
    pressure_program: ShaderProgram,
    terrain: Mesh,
    /// The snow the particles laid, per terrain vertex (see `set_laid_depth`).
    laid_depth: Option<glow::Buffer>,
    /// The buffer texture over `laid_depth`.
    laid_texture: glow::Texture,
    /// The friction velocity per terrain vertex (see `set_friction`).
    friction: Option<glow::Buffer>,
    /// The buffer texture over `friction`.
    friction_texture: glow::Texture,
    /// The sun's shadow map, once shadows are drawn.
    shadow: std::cell::RefCell<Option<ShadowMap>>,
    /// What the shadow map was drawn for (the sun and its size): `None` when it must be drawn
    /// again (the snow, the terrain or the sun changed).
    shadow_drawn: Cell<Option<([f32; 2], u32)>>,
    particle_vao: glow::VertexArray,
    particle_count: usize,
    wind_vao: glow::VertexArray,
    pressure_vao: glow::VertexArray,
    field_count: usize,
    point_size_range: [f32; 2],
    /// Splat mode: the composite of the splatted image, drawn instead of the sprites.
    splat: Option<SplatComposite>,
    /// Splat mode: the flakes too wide to splat, drawn as sprites.
    overflow_vao: glow::VertexArray,
    overflow_count: usize,
    /// The on-screen display, once it has text.
    osd: Option<Osd>,
    /// The veil over the terrain and the sky.
    veil: VeilPass,
    /// The snowfall's relative density along the view rays.
    density: Density,
    /// The flakes near the camera.
    near: NearPass,
    /// The GPU time of each frame's whole drawing.
    draw_timer: DrawTimer,
}

impl Renderer {
    /// Builds the shaders and uploads `terrain`. Nothing else is drawn until a particle buffer
    /// ([`set_particles`](Self::set_particles)) or a debug-field buffer
    /// ([`set_field`](Self::set_field)) is attached.
    pub fn new(gl: Rc<glow::Context>, terrain: &TerrainMesh) -> Result<Self> {
        let terrain_program = build_program(
            &gl,
            &builtin("terrain.vert")?,
            &builtin("terrain.frag")?,
            &[TERRAIN_UNIFORMS, VEIL_UNIFORMS].concat(),
        )?;
        let shadow_program = build_program(
            &gl,
            &builtin("terrain.vert")?,
            &builtin("shadow.frag")?,
            SHADOW_UNIFORMS,
        )?;
        let particle_program = build_program_with_geometry(
            &gl,
            &builtin("particles.vert")?,
            &builtin("particles.geom")?,
            &builtin("particles.frag")?,
            &[PARTICLE_UNIFORMS, VEIL_UNIFORMS].concat(),
        )?;
        let wind_program = build_program(
            &gl,
            &builtin("wind.vert")?,
            &builtin("colour.frag")?,
            WIND_UNIFORMS,
        )?;
        let pressure_program = build_program(
            &gl,
            &builtin("pressure.vert")?,
            &builtin("colour.frag")?,
            PRESSURE_UNIFORMS,
        )?;
        let veil = VeilPass::new(&gl)?;
        let density = Density::new(&gl)?;
        let near = NearPass::new(&gl)?;
        let draw_timer = DrawTimer::new(&gl)?;
        let terrain_mesh = upload_mesh(&gl, terrain)?;
        // SAFETY: object creation on the current context.
        unsafe {
            let particle_vao = gl_call("glGenVertexArrays", gl.create_vertex_array())?;
            let wind_vao = gl_call("glGenVertexArrays", gl.create_vertex_array())?;
            let pressure_vao = gl_call("glGenVertexArrays", gl.create_vertex_array())?;
            let overflow_vao = gl_call("glGenVertexArrays", gl.create_vertex_array())?;
            let laid_texture = gl_call("glGenTextures", gl.create_texture())?;
            let friction_texture = gl_call("glGenTextures", gl.create_texture())?;
            let mut range = [0.0f32; 2];
            gl.get_parameter_f32_slice(glow::POINT_SIZE_RANGE, &mut range);
            let point_size_range = if range[1] >= 1.0 {
                [range[0].max(1.0), range[1]]
            } else {
                [1.0, 64.0]
            };
            Ok(Self {
                gl,
                terrain_program,
                shadow_program,
                particle_program,
                wind_program,
                pressure_program,
                terrain: terrain_mesh,
                laid_depth: None,
                laid_texture,
                friction: None,
                friction_texture,
                shadow: std::cell::RefCell::new(None),
                shadow_drawn: Cell::new(None),
                particle_vao,
                particle_count: 0,
                wind_vao,
                pressure_vao,
                field_count: 0,
                point_size_range,
                splat: None,
                overflow_vao,
                overflow_count: 0,
                osd: None,
                veil,
                density,
                near,
                draw_timer,
            })
        }
    }

    /// The GL context this renderer draws with.
    pub fn gl(&self) -> &Rc<glow::Context> {
        &self.gl
    }

    /// Draws particles from `buffer`: `count` [`Particle`]s (xyz position, then radius in
    /// metres), as the interop fills it. The buffer stays the caller's and must outlive its use
    /// here (until another is attached or the renderer is dropped).
    pub fn set_particles(&mut self, buffer: glow::Buffer, count: usize) -> Result<()> {
        gl_count("particle", count)?;
        particle_layout(&self.gl, self.particle_vao, buffer);
        self.particle_count = count;
        Ok(())
    }

    /// Splat mode: instead of the particle sprites, composites the image of a `width × height`
    /// frame that the OpenCL splat kernel wrote into `buffer` (a 64-bit word and a 32-bit
    /// coverage counter per pixel, see [`crate::splat`]). The buffer stays the caller's, as with
    /// [`set_particles`](Self::set_particles). The image is drawn only into frames of that
    /// size.
    pub fn set_splat(&mut self, buffer: glow::Buffer, width: u32, height: u32) -> Result<()> {
        if self.splat.is_none() {
            self.splat = Some(SplatComposite::new(&self.gl)?);
        }
        match self.splat.as_mut() {
            Some(splat) => splat.set_image(&self.gl, buffer, width, height),
            None => Err(Error::InvalidParameter("splat composite missing".into())),
        }
    }

    /// Splat mode: the flakes too wide to splat, `count` [`Particle`]s in `buffer`, drawn as
    /// sprites after the composite.
    pub fn set_splat_overflow(&mut self, buffer: glow::Buffer, count: usize) -> Result<()> {
        gl_count("overflow particle", count)?;
        particle_layout(&self.gl, self.overflow_vao, buffer);
        self.overflow_count = count;
        Ok(())
    }

    /// Leaves splat mode: particles are drawn as sprites again.
    pub fn clear_splat(&mut self) {
        if let Some(splat) = self.splat.take() {
            splat.delete(&self.gl);
        }
        self.overflow_count = 0;
    }

    /// Smallest diameter, in pixels, a particle is drawn with: the views' floor, or the GL's
    /// smallest point size when larger.
    pub fn min_point_size(&self, views: &Views) -> f32 {
        views.min_particle_pixels.max(self.point_size_range[0])
    }

    /// The frame size of the splat image attached, `None` in sprite mode.
    pub fn splat_size(&self) -> Option<(u32, u32)> {
        self.splat.as_ref().map(SplatComposite::size)
    }

    /// GPU time (`GL_TIME_ELAPSED`) of the last splat composite (the flakes too wide to
    /// splat, drawn as sprites later, not included), once GL has finished drawing it; `None` in sprite mode or when already taken.
    pub fn take_composite_time(&self) -> Option<Duration> {
        self.splat.as_ref().and_then(|s| s.take_time(&self.gl))
    }

    /// GPU time (two `GL_TIMESTAMP`s) of the oldest timed frame's whole drawing, shadow
    /// map, terrain, veil, particles and views included, once GL has finished it; `None`
    /// while it has not (never waits).
    pub fn take_draw_time(&self) -> Option<Duration> {
        self.draw_timer.take(&self.gl)
    }

    /// Draws the wind and pressure views from `buffer`: per sample, float4 position then float4
    /// (velocity xyz, pressure); `samples` of them. Same ownership as
    /// [`set_particles`](Self::set_particles).
    pub fn set_field(&mut self, buffer: glow::Buffer, samples: usize) -> Result<()> {
        gl_count("debug-field sample", samples)?;
        // SAFETY: vertex-array setup on the current context; the layouts match wind.vert and
        // pressure.vert.
        unsafe {
            let gl = &self.gl;
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(buffer));
            // Divisor 0: one sample per point (pressure); 1: per instance (wind lines).
            for (divisor, vao) in [self.pressure_vao, self.wind_vao].into_iter().enumerate() {
                gl.bind_vertex_array(Some(vao));
                for attribute in 0..2u32 {
                    gl.enable_vertex_attrib_array(attribute);
                    gl.vertex_attrib_pointer_f32(
                        attribute,
                        4,
                        glow::FLOAT,
                        false,
                        FIELD_SAMPLE_BYTES as i32,
                        (FLOAT4_BYTES * attribute as usize) as i32,
                    );
                    gl.vertex_attrib_divisor(attribute, divisor as u32);
                }
            }
            gl.bind_vertex_array(None);
            gl.bind_buffer(glow::ARRAY_BUFFER, None);
        }
        self.field_count = samples;
        Ok(())
    }

    /// Replaces the terrain.
    pub fn set_terrain(&mut self, terrain: &TerrainMesh) -> Result<()> {
        let mesh = upload_mesh(&self.gl, terrain)?;
        delete_mesh(&self.gl, &self.terrain);
        self.terrain = mesh;
        self.snow_changed();
        Ok(())
    }

    /// Reads the friction velocity (m/s) per terrain vertex from `buffer` (a float per vertex,
    /// written by OpenCL and handed over by the interop) for the u* view
    /// ([`Views::friction`]); `None`: no such view.
    pub fn set_friction(&mut self, buffer: Option<glow::Buffer>) {
        self.friction = buffer;
        floats_per_vertex(&self.gl, self.friction_texture, buffer);
    }

    /// Adds to each terrain vertex's snow depth the float at the same index of `buffer` (the
    /// snow the particles laid, written by OpenCL and handed over by the interop), or nothing
    /// with `None`. The buffer must hold a float per terrain vertex and outlive its use here.
    /// Call [`snow_changed`](Self::snow_changed) whenever its contents change.
    pub fn set_laid_depth(&mut self, buffer: Option<glow::Buffer>) {
        self.laid_depth = buffer;
        floats_per_vertex(&self.gl, self.laid_texture, buffer);
        self.snow_changed();
    }

    /// Sets the on-screen display's text (rasterised by [`crate::render::rasterise`]), drawn
    /// at the frame's top-left corner while `views.osd` is on.
    pub fn set_osd(&mut self, image: &OsdImage) -> Result<()> {
        if self.osd.is_none() {
            self.osd = Some(Osd::new(&self.gl)?);
        }
        if let Some(osd) = self.osd.as_mut() {
            osd.set_image(&self.gl, image);
        }
        Ok(())
    }

    /// Where the on-screen display is drawn in a frame of `size` pixels: left, top (rows from
    /// the top), width and height; `None` before any text was set.
    pub fn osd_rect(&self, size: (u32, u32)) -> Option<(u32, u32, u32, u32)> {
        self.osd.as_ref().map(|o| o.rect(size))
    }

    /// Scales the veil's extinction along each view ray by a relative density: `values` of a
    /// grid of `size` (x fastest, then y, then z; each finite and ≥ 0) over the box
    /// `[lo, hi]`, trilinear, 1 outside the box; `None` goes back to a uniform snowfall (the
    /// default).
    pub fn set_veil_density(&mut self, grid: Option<([u32; 3], &[f32], Vec3, Vec3)>) -> Result<()> {
        self.density.set(&self.gl, grid)
    }

    /// Says that the snow on the terrain changed (the laid depths were written again): the
    /// shadow map is drawn again before the next frame.
    pub fn snow_changed(&self) {
        self.shadow_drawn.set(None);
    }

    /// Uploads the vertices of `terrain` again (positions, normals and snow depth) without
    /// rebuilding the triangles: what the snow simulation calls after changing the depth.
    /// `terrain` must have as many vertices as the one last set.
    pub fn update_terrain_vertices(&mut self, terrain: &TerrainMesh) -> Result<()> {
        terrain.validate()?;
        if terrain.positions.len() != self.terrain.vertex_count {
            return Err(Error::InvalidParameter(format!(
                "terrain has {} vertices but the renderer holds {}",
                terrain.positions.len(),
                self.terrain.vertex_count
            )));
        }
        let data = terrain.interleaved();
        // SAFETY: the buffer holds exactly this many bytes (same vertex count).
        unsafe {
            self.gl
                .bind_buffer(glow::ARRAY_BUFFER, Some(self.terrain.vertices));
            self.gl
                .buffer_sub_data_u8_slice(glow::ARRAY_BUFFER, 0, bytemuck::cast_slice(&data));
            self.gl.bind_buffer(glow::ARRAY_BUFFER, None);
        }
        self.terrain.bounds = terrain.bounds();
        self.snow_changed();
        Ok(())
    }

    /// Binds the terrain's buffer textures and sets terrain.vert's uniforms in `program`, in
    /// use.
    ///
    /// # Safety
    /// GL must be current with `program` (built from terrain.vert) in use.
    unsafe fn terrain_inputs(&self, program: &ShaderProgram, view_proj: &glam::Mat4) {
        let gl = &self.gl;
        // SAFETY: forwarded from the caller; the textures belong to this context.
        unsafe {
            set_mat4(gl, program, "u_view_proj", view_proj);
            let units = [
                (UNIT_VERTICES, self.terrain.textures[0], "u_vertices"),
                (UNIT_LAID, self.laid_texture, "u_laid"),
                (UNIT_RING_START, self.terrain.textures[1], "u_ring_start"),
                (UNIT_RING, self.terrain.textures[2], "u_ring"),
                (UNIT_FRICTION, self.friction_texture, "u_friction"),
            ];
            for (unit, texture, name) in units {
                gl.active_texture(glow::TEXTURE0 + unit);
                gl.bind_texture(glow::TEXTURE_BUFFER, Some(texture));
                gl.uniform_1_i32(program.uniform(gl, name).as_ref(), unit as i32);
            }
            gl.active_texture(glow::TEXTURE0);
            gl.uniform_1_i32(
                program.uniform(gl, "u_has_laid").as_ref(),
                i32::from(self.laid_depth.is_some()),
            );
        }
    }

    /// The box the shadow map covers: the terrain's, with room above for its snow.
    fn shadow_box(&self) -> (Vec3, Vec3) {
        let (lo, hi) = self.terrain.bounds;
        let extent = (hi.x - lo.x).max(hi.y - lo.y);
        let room = (SHADOW_SNOW_SHARE * extent).max(SHADOW_SNOW_MIN);
        (lo, hi + Vec3::Z * room)
    }

    /// Draws the shadow map for `views`' sun when it is out of date; returns the world →
    /// shadow-map matrix and the map's texel size in metres, `None` without shadows.
    ///
    /// # Safety
    /// GL must be current; the caller restores the viewport afterwards.
    unsafe fn update_shadow(&self, views: &Views) -> Result<Option<(glam::Mat4, f32)>> {
        if views.shadow_map == 0 || self.terrain.index_count == 0 {
            return Ok(None);
        }
        let gl = &self.gl;
        let mut shadow = self.shadow.borrow_mut();
        if shadow.as_ref().is_some_and(|s| s.size != views.shadow_map)
            && let Some(old) = shadow.take()
        {
            old.delete(gl);
        }
        if shadow.is_none() {
            *shadow = Some(ShadowMap::new(gl, views.shadow_map)?);
            self.shadow_drawn.set(None);
        }
        let Some(map) = shadow.as_ref() else {
            return Ok(None);
        };
        let sun = sun_direction(views.sun[0], views.sun[1]);
        let (lo, hi) = self.shadow_box();
        let matrix = light_view_proj(sun, lo, hi);
        let texel = (hi - lo).length() / map.size as f32;
        let wanted = (views.sun, map.size);
        if self.shadow_drawn.get() != Some(wanted) {
            // SAFETY: forwarded from the caller; the program and mesh belong to this context.
            unsafe {
                let previous = map.begin(gl);
                gl.enable(glow::DEPTH_TEST);
                gl.depth_func(glow::LESS);
                let p = &self.shadow_program;
                gl.use_program(Some(p.id));
                self.terrain_inputs(p, &matrix);
                gl.bind_vertex_array(Some(self.terrain.vao));
                gl.draw_elements(
                    glow::TRIANGLES,
                    self.terrain.index_count,
                    glow::UNSIGNED_INT,
                    0,
                );
                map.end(gl, previous);
            }
            self.shadow_drawn.set(Some(wanted));
        }
        Ok(Some((matrix, texel)))
    }

    /// Draws one frame into the bound framebuffer, `size` pixels wide and high: the
    /// [scene](Self::draw_scene), then the [overlays](Self::draw_overlays). Fails only when
    /// the shadow map cannot be made (a `views.shadow_map` larger than this GL's textures).
    pub fn draw(&self, camera: &OrbitCamera, size: (u32, u32), views: &Views) -> Result<()> {
        self.draw_scene(camera, size, views)?;
        self.draw_overlays(camera, size, views);
        Ok(())
    }

    /// The first part of a frame: the shadow map when due, the terrain, the veil, and the
    /// particles (the splat composite, or the sprites). Nothing it draws depends on what the
    /// host reads back from the frame's kernels, so a session whose APIs are ordered by
    /// semaphores enqueues it before it waits for them; [`draw_overlays`](Self::draw_overlays)
    /// must follow before the frame is shown. Fails as [`draw`](Self::draw) does.
    pub fn draw_scene(&self, camera: &OrbitCamera, size: (u32, u32), views: &Views) -> Result<()> {
        let gl = &self.gl;
        let FrameView {
            w, h, view_proj, ..
        } = FrameView::new(camera, size);
        let palette = &views.palette;
        let bg = palette.background;
        // SAFETY: draw calls on the current context with the objects created in `new`; every
        // count is within the buffers' capacity.
        unsafe {
            self.draw_timer.begin(gl);
            let shadow = if views.terrain {
                self.update_shadow(views)?
            } else {
                None
            };
            gl.viewport(0, 0, w as i32, h as i32);
            gl.clear_color(bg[0], bg[1], bg[2], 1.0);
            gl.clear(glow::COLOR_BUFFER_BIT | glow::DEPTH_BUFFER_BIT);
            gl.enable(glow::DEPTH_TEST);
            gl.depth_func(glow::LESS);
            gl.disable(glow::BLEND);
            gl.enable(glow::PROGRAM_POINT_SIZE);

            let beta = views.veil_beta();
            if views.terrain && self.terrain.index_count > 0 {
                let p = &self.terrain_program;
                gl.use_program(Some(p.id));
                self.terrain_inputs(p, &view_proj);
                // The terrain veils itself (terrain.frag); beta 0 is clear air, and the u* view
                // is seen through it (a diagnostic, not a look).
                let ground_beta = if views.friction { 0.0 } else { beta };
                self.density
                    .set_uniforms(gl, p, camera.eye(), ground_beta, palette.veil);
                let sun = sun_direction(views.sun[0], views.sun[1]);
                set_vec3(gl, p, "u_sun_dir", sun.to_array());
                set_vec3(gl, p, "u_grass_colour", palette.grass);
                set_vec3(gl, p, "u_rock_colour", palette.rock);
                set_vec3(gl, p, "u_snow_colour", palette.snow);
                set_vec3(gl, p, "u_snow_shade", palette.snow_shade);
                gl.uniform_2_f32(
                    p.uniform(gl, "u_snow_cover").as_ref(),
                    views.snow_cover[0],
                    views.snow_cover[1],
                );
                set_f32(gl, p, "u_ambient", AMBIENT);
                gl.uniform_1_i32(
                    p.uniform(gl, "u_show_friction").as_ref(),
                    i32::from(views.friction && self.friction.is_some()),
                );
                set_f32(gl, p, "u_friction_threshold", views.friction_threshold);
                set_f32(gl, p, "u_exposure", views.exposure);
                gl.uniform_1_i32(
                    p.uniform(gl, "u_shadows").as_ref(),
                    i32::from(shadow.is_some()),
                );
                if let Some((matrix, texel)) = shadow
                    && let Some(map) = self.shadow.borrow().as_ref()
                {
                    gl.active_texture(glow::TEXTURE0 + UNIT_SHADOW);
                    gl.bind_texture(glow::TEXTURE_2D, Some(map.texture));
                    gl.active_texture(glow::TEXTURE0);
                    gl.uniform_1_i32(p.uniform(gl, "u_shadow_map").as_ref(), UNIT_SHADOW as i32);
                    set_mat4(gl, p, "u_light_view_proj", &matrix);
                    set_f32(gl, p, "u_shadow_offset", SHADOW_NORMAL_TEXELS * texel);
                } else {
                    // The sampler must still name a unit of its own type.
                    gl.uniform_1_i32(p.uniform(gl, "u_shadow_map").as_ref(), UNIT_SHADOW as i32);
                }
                gl.bind_vertex_array(Some(self.terrain.vao));
                gl.draw_elements(
                    glow::TRIANGLES,
                    self.terrain.index_count,
                    glow::UNSIGNED_INT,
                    0,
                );
            }
            if beta > 0.0 {
                self.veil.draw(
                    gl,
                    &self.density,
                    (w, h),
                    &view_proj.inverse(),
                    camera.eye(),
                    beta,
                    views.sky_distance,
                    palette.veil,
                );
            }
            if views.particles
                && let Some(splat) = &self.splat
            {
                // An image splatted for another frame size is not drawn (the session splats
                // again at the new size before drawing).
                if splat.size() == (w, h) {
                    splat.begin_timer(gl);
                    splat.prepare(gl, &view_proj.inverse());
                    self.density.set_uniforms(
                        gl,
                        splat.program(),
                        camera.eye(),
                        beta,
                        palette.veil,
                    );
                    splat.draw(gl);
                    splat.end_timer(gl);
                }
            } else if views.particles {
                self.draw_sprites(
                    camera,
                    (w, h),
                    views,
                    self.particle_vao,
                    self.particle_count,
                    views.parcels,
                );
            }
            gl.bind_vertex_array(None);
            gl.use_program(None);
        }
        Ok(())
    }

    /// The second part of a frame, after [`draw_scene`](Self::draw_scene) with the same
    /// arguments: the flakes too wide to splat (whose count the host reads back from the
    /// splat kernel), the flakes near the camera, the wind and pressure views, the on-screen
    /// display.
    pub fn draw_overlays(&self, camera: &OrbitCamera, size: (u32, u32), views: &Views) {
        let gl = &self.gl;
        let FrameView {
            w,
            h,
            view,
            proj,
            view_proj,
        } = FrameView::new(camera, size);
        let point_scale = camera.point_scale(h);
        // SAFETY: draw calls on the current context with the objects created in `new`; every
        // count is within the buffers' capacity.
        unsafe {
            // What ran between the two parts (a texture upload, a buffer attached) may have
            // changed the state the scene left.
            gl.viewport(0, 0, w as i32, h as i32);
            gl.enable(glow::DEPTH_TEST);
            gl.depth_func(glow::LESS);
            gl.disable(glow::BLEND);
            gl.enable(glow::PROGRAM_POINT_SIZE);
            if views.particles
                && let Some(splat) = &self.splat
                && splat.size() == (w, h)
            {
                self.draw_sprites(
                    camera,
                    (w, h),
                    views,
                    self.overflow_vao,
                    self.overflow_count,
                    // The overflow holds flakes already (a near parcel's were splatted).
                    ParcelFlakes::NONE,
                );
            }
            if views.particles {
                self.near
                    .draw(gl, &views.near, &self.near_frame(camera, (w, h), views));
            }
            if views.wind && self.field_count > 0 {
                let p = &self.wind_program;
                gl.use_program(Some(p.id));
                set_mat4(gl, p, "u_view_proj", &view_proj);
                set_f32(gl, p, "u_seconds", views.wind_seconds);
                set_f32(gl, p, "u_max_length", views.wind_max_length);
                set_f32(gl, p, "u_speed_max", views.speed_max);
                gl.bind_vertex_array(Some(self.wind_vao));
                gl.draw_arrays_instanced(glow::LINES, 0, 2, self.field_count as i32);
            }
            if views.pressure && self.field_count > 0 {
                let p = &self.pressure_program;
                gl.use_program(Some(p.id));
                set_mat4(gl, p, "u_view", &view);
                set_mat4(gl, p, "u_proj", &proj);
                set_f32(gl, p, "u_point_scale", point_scale);
                set_f32(gl, p, "u_size", views.pressure_size);
                gl.uniform_2_f32(
                    p.uniform(gl, "u_pressure_range").as_ref(),
                    views.pressure_range[0],
                    views.pressure_range[1],
                );
                gl.bind_vertex_array(Some(self.pressure_vao));
                gl.draw_arrays(glow::POINTS, 0, self.field_count as i32);
            }
            if views.osd
                && let Some(osd) = &self.osd
            {
                osd.draw(gl, (w, h));
            }
            gl.bind_vertex_array(None);
            gl.use_program(None);
            self.draw_timer.end(gl);
        }
    }
}

impl Renderer {
    /// What the near field's pass needs of a frame besides its settings.
    fn near_frame<'a>(
        &'a self,
        camera: &'a OrbitCamera,
        size: (u32, u32),
        views: &Views,
    ) -> NearFrame<'a> {
        NearFrame {
            camera,
            size,
            width: self.min_point_size(views),
            beta: views.veil_beta(),
            flake_colour: near_flake_colour(views),
            veil_colour: views.palette.veil,
            density: &self.density,
        }
    }

    /// The slots of the near field that [`draw`](Self::draw) would draw for `views` from
    /// `camera` into a frame of `size`, in instance order (the same slot is the same flake
    /// from frame to frame): a flake's world position (xyz, metres) and, in w, its diameter
    /// (metres) when it is drawn (it exists and is within the drawn radius, in view or not),
    /// else 0; empty when the near field is off. Read back through transform feedback from
    /// the same vertex shader.
    pub fn near_flakes(
        &self,
        camera: &OrbitCamera,
        size: (u32, u32),
        views: &Views,
    ) -> Result<Vec<[f32; 4]>> {
        let frame = self.near_frame(camera, size, views);
        self.near.probe(&self.gl, &views.near, &frame)
    }

    /// Draws `count` particles of `vao` as point sprites.
    ///
    /// # Safety
    /// GL must be current with the viewport set to `size`, and `vao` hold at least `count`
    /// particles.
    unsafe fn draw_sprites(
        &self,
        camera: &OrbitCamera,
        size: (u32, u32),
        views: &Views,
        vao: glow::VertexArray,
        count: usize,
        parcels: ParcelFlakes,
    ) {
        if count == 0 {
            return;
        }
        let gl = &self.gl;
        let p = &self.particle_program;
        // SAFETY: forwarded from the caller.
        unsafe {
            gl.use_program(Some(p.id));
            set_mat4(gl, p, "u_view", &camera.view());
            set_mat4(
                gl,
                p,
                "u_proj",
                &camera.projection(size.0 as f32 / size.1 as f32),
            );
            set_f32(gl, p, "u_point_scale", camera.point_scale(size.1));
            let lo = self.min_point_size(views);
            gl.uniform_2_f32(
                p.uniform(gl, "u_size_range").as_ref(),
                lo,
                self.point_size_range[1].max(lo),
            );
            set_vec3(gl, p, "u_snow_colour", flake_colour(views));
            let [a, b, c, d] = parcels.as_float4();
            gl.uniform_4_f32(p.uniform(gl, "u_cloud").as_ref(), a, b, c, d);
            self.density
                .set_uniforms(gl, p, camera.eye(), views.veil_beta(), views.palette.veil);
            // Flakes blend by coverage over what is behind them and, being translucent,
            // do not hide one another: depth is tested, not written.
            gl.enable(glow::BLEND);
            gl.blend_func(glow::SRC_ALPHA, glow::ONE_MINUS_SRC_ALPHA);
            gl.depth_mask(false);
            gl.bind_vertex_array(Some(vao));
            gl.draw_arrays(glow::POINTS, 0, count as i32);
            gl.depth_mask(true);
            gl.disable(glow::BLEND);
        }
    }
}

/// Makes `texture` (a buffer texture of this context) read `buffer` as one float per texel
/// (`R32F`): a float per terrain vertex, written by OpenCL. Nothing with `None`.
fn floats_per_vertex(gl: &glow::Context, texture: glow::Texture, buffer: Option<glow::Buffer>) {
    let Some(buffer) = buffer else {
        return;
    };
    // SAFETY: texture setup on the current context with objects it created.
    unsafe {
        gl.bind_texture(glow::TEXTURE_BUFFER, Some(texture));
        gl.tex_buffer(glow::TEXTURE_BUFFER, glow::R32F, Some(buffer));
        gl.bind_texture(glow::TEXTURE_BUFFER, None);
    }
}

/// Points `vao`'s attribute 0 at `buffer` laid out as [`Particle`]s, each read as one vec4
/// (position, radius) as particles.vert reads them.
fn particle_layout(gl: &glow::Context, vao: glow::VertexArray, buffer: glow::Buffer) {
    // SAFETY: vertex-array setup on the current context; the layout matches particles.vert.
    unsafe {
        gl.bind_vertex_array(Some(vao));
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(buffer));
        gl.enable_vertex_attrib_array(0);
        gl.vertex_attrib_pointer_f32(
            0,
            4,
            glow::FLOAT,
            false,
            PARTICLE_BYTES as i32,
            offset_of!(Particle, position) as i32,
        );
        gl.bind_vertex_array(None);
        gl.bind_buffer(glow::ARRAY_BUFFER, None);
    }
}

/// The near flakes' colour before the veil: lit like the cover's flat snow in the sun (the
/// sky's light on snow plus `(1 − AMBIENT) sin(elevation)` of white), times the snow's albedo
/// and the exposure, at most 1.
pub fn near_flake_colour(views: &Views) -> [f32; 3] {
    let sun = (1.0 - AMBIENT) * views.sun[1].to_radians().sin().max(0.0);
    let p = &views.palette;
    [0, 1, 2].map(|k| (p.snow[k] * (p.snow_shade[k] + sun) * views.exposure).clamp(0.0, 1.0))
}

/// The flakes' colour as drawn: the snow's albedo times the exposure, at most 1.
pub fn flake_colour(views: &Views) -> [f32; 3] {
    views
        .palette
        .snow
        .map(|c| (c * views.exposure).clamp(0.0, 1.0))
}

impl Drop for Renderer {
    fn drop(&mut self) {
        let gl = &self.gl;
        delete_mesh(gl, &self.terrain);
        if let Some(shadow) = self.shadow.borrow_mut().take() {
            shadow.delete(gl);
        }
        if let Some(osd) = &self.osd {
            osd.delete(gl);
        }
        self.veil.delete(gl);
        self.density.delete(gl);
        self.near.delete(gl);
        // SAFETY: the objects belong to this context.
        unsafe {
            self.draw_timer.delete(gl);
            gl.delete_texture(self.laid_texture);
            gl.delete_texture(self.friction_texture);
            for p in [
                &self.terrain_program,
                &self.shadow_program,
                &self.particle_program,
                &self.wind_program,
                &self.pressure_program,
            ] {
                gl.delete_program(p.id);
            }
            if let Some(splat) = &self.splat {
                splat.delete(gl);
            }
            for vao in [
                self.particle_vao,
                self.wind_vao,
                self.pressure_vao,
                self.overflow_vao,
            ] {
                gl.delete_vertex_array(vao);
            }
        }
    }
}

/// Bytes of a GL buffer of `count` items of `item` bytes, checked against GL's `int` sizes.
pub(crate) fn buffer_bytes(what: &str, count: usize, item: usize) -> Result<i32> {
    count
        .max(1)
        .checked_mul(item)
        .and_then(|b| i32::try_from(b).ok())
        .ok_or_else(|| {
            Error::InvalidParameter(format!(
                "{count} {what} values of {item} bytes exceed a GL buffer's 2 GiB"
            ))
        })
}

/// Checks that `count` items fit a GL draw call's `int` count.
fn gl_count(what: &str, count: usize) -> Result<i32> {
    i32::try_from(count).map_err(|_| {
        Error::InvalidParameter(format!(
            "{count} {what}s exceed what one GL draw call takes"
        ))
    })
}

fn upload_mesh(gl: &glow::Context, mesh: &TerrainMesh) -> Result<Mesh> {
    mesh.validate()?;
    let data = mesh.interleaved();
    let indices: &[u32] = bytemuck::cast_slice(&mesh.triangles);
    let index_count = i32::try_from(indices.len()).map_err(|_| {
        Error::InvalidParameter(format!(
            "{} terrain triangles are too many",
            mesh.triangles.len()
        ))
    })?;
    let (starts, others) = mesh.rings();
    buffer_bytes("terrain vertex", data.len(), 4)?;
    buffer_bytes("terrain ring", others.len(), 8)?;
    // The vertices are read as two RGBA32F texels each, the rings as RG32I texels.
    // SAFETY: a query on the current context.
    let limit = unsafe { gl.get_parameter_i32(glow::MAX_TEXTURE_BUFFER_SIZE) }.max(0) as usize;
    let texels = (data.len() / 4).max(others.len()).max(starts.len());
    if texels > limit {
        return Err(Error::InvalidParameter(format!(
            "the terrain's {} vertices and {} triangles need {texels} texels of a buffer \
             texture; this GL reads at most {limit} (GL_MAX_TEXTURE_BUFFER_SIZE)",
            mesh.positions.len(),
            mesh.triangles.len()
        )));
    }
    // SAFETY: buffers sized from the slices given; layouts match terrain.vert.
    unsafe {
        let vao = gl_call("glGenVertexArrays", gl.create_vertex_array())?;
        gl.bind_vertex_array(Some(vao));
        let buffer = |target: u32, bytes: &[u8], usage: u32| {
            let b = gl_call("glGenBuffers", gl.create_buffer())?;
            gl.bind_buffer(target, Some(b));
            // A buffer texture over an empty buffer is refused: at least one texel.
            if bytes.is_empty() {
                gl.buffer_data_size(target, 16, usage);
            } else {
                gl.buffer_data_u8_slice(target, bytes, usage);
            }
            Ok::<_, Error>(b)
        };
        let vertices = buffer(
            glow::ARRAY_BUFFER,
            bytemuck::cast_slice(&data),
            glow::DYNAMIC_DRAW,
        )?;
        let ring_start = buffer(
            glow::ARRAY_BUFFER,
            bytemuck::cast_slice(&starts),
            glow::STATIC_DRAW,
        )?;
        let ring = buffer(
            glow::ARRAY_BUFFER,
            bytemuck::cast_slice(&others),
            glow::STATIC_DRAW,
        )?;
        let index_buffer = buffer(
            glow::ELEMENT_ARRAY_BUFFER,
            bytemuck::cast_slice(indices),
            glow::STATIC_DRAW,
        )?;
        gl.bind_vertex_array(None);
        gl.bind_buffer(glow::ARRAY_BUFFER, None);
        gl.bind_buffer(glow::ELEMENT_ARRAY_BUFFER, None);
        let mut textures = Vec::with_capacity(3);
        for (b, format) in [
            (vertices, glow::RGBA32F),
            (ring_start, glow::R32I),
            (ring, glow::RG32I),
        ] {
            let t = gl_call("glGenTextures", gl.create_texture())?;
            gl.bind_texture(glow::TEXTURE_BUFFER, Some(t));
            gl.tex_buffer(glow::TEXTURE_BUFFER, format, Some(b));
            textures.push(t);
        }
        gl.bind_texture(glow::TEXTURE_BUFFER, None);
        Ok(Mesh {
            vao,
            vertices,
            indices: index_buffer,
            ring_start,
            ring,
            textures: [textures[0], textures[1], textures[2]],
            index_count,
            vertex_count: mesh.positions.len(),
            bounds: mesh.bounds(),
        })
    }
}

fn delete_mesh(gl: &glow::Context, mesh: &Mesh) {
    // SAFETY: the objects belong to this context and are not used afterwards.
    unsafe {
        gl.delete_vertex_array(mesh.vao);
        for b in [mesh.vertices, mesh.indices, mesh.ring_start, mesh.ring] {
            gl.delete_buffer(b);
        }
        for t in mesh.textures {
            gl.delete_texture(t);
        }
    }
}

/// # Safety
/// `program` must be the program in use on the current context, built for `name`.
unsafe fn set_mat4(gl: &glow::Context, program: &ShaderProgram, name: &str, m: &glam::Mat4) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let location = program.uniform(gl, name);
        gl.uniform_matrix_4_f32_slice(location.as_ref(), false, &m.to_cols_array());
    }
}

/// # Safety
/// `program` must be the program in use on the current context, built for `name`.
unsafe fn set_vec3(gl: &glow::Context, program: &ShaderProgram, name: &str, v: [f32; 3]) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let location = program.uniform(gl, name);
        gl.uniform_3_f32(location.as_ref(), v[0], v[1], v[2]);
    }
}

/// # Safety
/// `program` must be the program in use on the current context, built for `name`.
unsafe fn set_f32(gl: &glow::Context, program: &ShaderProgram, name: &str, v: f32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let location = program.uniform(gl, name);
        gl.uniform_1_f32(location.as_ref(), v);
    }
}
