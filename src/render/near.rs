//! The flakes near the camera: a camera-anchored field of individual flakes at the snowfall's
//! number density, drawn after the particles (in the sprite path and in the splat path alike,
//! so both give the same near field), out to [`NearFlakes::distance`], beyond which the veil
//! stands for them.
//!
//! # The field
//!
//! - **Density.** `n` flakes per m³ ([`NearFlakes::density`]: the scene's real snowfall,
//!   [`crate::snow::Snowfall::number_density`]) times the relative density `ρ(p)` of the veil's
//!   3-D texture at the flake ([`Renderer::set_veil_density`](super::Renderer::set_veil_density);
//!   1 without one), so the near field follows the parcels once the simulation provides that
//!   grid.
//! - **Cells and slots.** Space is cut into cubes of side `s = (λ / n)^(1/3)` ([`LAMBDA`]
//!   flakes per cell at `ρ = 1`); each cell has [`SLOTS`] slots, slot `j` standing for the
//!   flakes of the `j`-th of [`SLOTS`] equal diameter strata of `[D₀, D₁]` (sizes uniform in
//!   `D`, as the simulator draws them). A slot holds a flake with probability
//!   `λ ρ(p) / SLOTS` (a Poisson field of mean density `n ρ` while `ρ ≤ SLOTS / λ = 2`; denser
//!   air is drawn at twice the mean density), decided, with the flake's place in its cell and
//!   its exact diameter in its stratum, by an integer hash (PCG4D) of the cell's integer
//!   coordinates and the slot.
//! - **Motion.** Slot `j`'s cells move with the air: with the wind `u` ([`NearFlakes::wind`],
//!   one vector for the frame) and down at the stratum's fall speed
//!   `v_t (D_j / D̄)^0.2` (the simulator's law, `D_j` the stratum's middle, the ratio quantised
//!   to 1/1024). A flake is a (slot, moving cell) pair: frame to frame it keeps its identity
//!   and moves exactly `(u − v_j ẑ) Δt`; nothing is re-drawn at random, nothing flickers.
//!   Precision: the lattice's offset `(eye − u t) / s` is split into integers and fractions in
//!   double precision on the CPU, and the fall in 32-bit integers in the shader, exact for
//!   `t < 2³² s / (1.2 v_t · 1024)` (17 days at the valley's `s = 0.43 m`, `v_t = 1 m/s`).
//! - **Extent.** The block of `K³` cells centred on the eye's cell, drawn within a radius `R`:
//!   `R = min(distance, (K/2 − 1) s)` with `K` the smallest that reaches `distance` and at
//!   most `(max / SLOTS)^(1/3)` (the instance budget, [`NearFlakes::max`]). Flakes fade out
//!   over the last fifth of `R`.
//! - **Drawing.** One instance of a 4-vertex strip per slot, everything computed in
//!   `flakes.vert` from `gl_InstanceID` (no CPU work per flake): the flake's screen segment
//!   over the exposure ([`NearFlakes::exposure_time`]) as a capsule at its projected diameter
//!   (at least the pixel floor, [`Views::min_particle_pixels`](super::Views::min_particle_pixels)),
//!   its light spread over the capsule (coverage), lit like the cover's flat snow (the sky's
//!   light on snow plus `(1 − AMBIENT) sin(elevation)` of sun), veiled by its own distance.
//!
//! The veil still counts the near flakes' extinction from the eye (`β d`); over the default
//! 60 m at the valley's β = 2.2 × 10⁻³ that is an optical depth of 0.13 counted twice for the
//! nearest surfaces.

use glam::Vec3;
use glow::HasContext;

use super::camera::OrbitCamera;
use super::error::{Result, gl_call};
use super::shader::{ShaderProgram, build_program, build_program_with_feedback, builtin};
use super::veil::{Density, VEIL_UNIFORMS};

/// Flakes per cell at relative density 1.
pub const LAMBDA: f32 = 4.0;
/// Slots per cell (diameter strata); a slot holds a flake with probability `λ ρ / SLOTS`.
pub const SLOTS: u32 = 8;
/// Least cells per side of the block; fewer draws nothing.
const MIN_CELLS: u32 = 4;

/// The near field's settings for one frame: the snowfall's numbers (physics, from the
/// scene), and what the `[view]` keys say of the drawing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearFlakes {
    /// Flakes per m³ at relative density 1 (0: no near field).
    pub density: f32,
    /// Smallest and largest diameter, metres.
    pub diameter: [f32; 2],
    /// Fall speed of a flake of the mean diameter, m/s.
    pub fall_speed: f32,
    /// The mean wind near the camera, m/s.
    pub wind: [f32; 3],
    /// Simulated seconds (the flakes' clock).
    pub time: f64,
    /// How far flakes are drawn, metres (`[view] flake_distance`).
    pub distance: f32,
    /// Most flake slots drawn per frame (`[view] near_flakes`; 0: none).
    pub max: u32,
    /// The frame's exposure, seconds: flakes streak along their motion over it
    /// (`[view] exposure_time`).
    pub exposure_time: f32,
}

impl Default for NearFlakes {
    fn default() -> Self {
        Self {
            density: 0.0,
            diameter: [0.002, 0.008],
            fall_speed: 1.0,
            wind: [0.0; 3],
            time: 0.0,
            distance: 60.0,
            max: 1 << 20,
            exposure_time: 0.02,
        }
    }
}

/// How the field is laid out for given settings: what the shader draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearLayout {
    /// Cell side, metres.
    pub cell: f32,
    /// Cells per side of the block around the eye.
    pub cells: u32,
    /// Radius within which flakes are drawn, metres.
    pub radius: f32,
}

impl NearLayout {
    /// The layout for `near`, `None` when nothing is drawn (no density, no budget, a distance
    /// of 0, or too small a budget for `MIN_CELLS` cells a side).
    pub fn new(near: &NearFlakes) -> Option<Self> {
        let n = near.density;
        if !(n.is_finite() && n > 0.0 && near.distance > 0.0) {
            return None;
        }
        let cell = (LAMBDA / n).cbrt();
        let budget = ((near.max / SLOTS) as f64).cbrt().floor() as u32;
        let needed = 2 * (near.distance / cell).ceil().min(1e6) as u32 + 2;
        let cells = needed.min(budget);
        if cells < MIN_CELLS {
            return None;
        }
        let radius = near.distance.min((cells / 2 - 1) as f32 * cell);
        Some(Self {
            cell,
            cells,
            radius,
        })
    }

    /// Instances drawn: `cells³ · SLOTS`.
    pub fn instances(&self) -> u32 {
        self.cells.pow(3) * SLOTS
    }
}

/// The fall and the eye in the moving lattices, split into integers and fractions.
struct Lattice {
    base_int: [i32; 3],
    base_frac: [f32; 3],
    fall_int: u32,
    fall_frac: f32,
}

fn split(x: f64) -> (f64, f32) {
    let f = x.floor();
    (f, (x - f) as f32)
}

impl Lattice {
    fn new(near: &NearFlakes, layout: &NearLayout, eye: Vec3) -> Self {
        let s = f64::from(layout.cell);
        let t = near.time;
        let e = [0, 1, 2].map(|k| {
            let drift = if k < 2 {
                f64::from(near.wind[k]) * t
            } else {
                0.0
            };
            split((f64::from(eye[k]) - drift) / s)
        });
        let (fall_int, fall_frac) = split(f64::from(near.fall_speed) * t / s);
        Self {
            base_int: e.map(|(i, _)| i as i64 as i32),
            base_frac: e.map(|(_, f)| f),
            fall_int: fall_int as i64 as u32,
            fall_frac,
        }
    }
}

/// The program's uniforms besides [`VEIL_UNIFORMS`], checked when it is built.
const UNIFORMS: &[&str] = &[
    "u_view_proj",
    "u_viewport",
    "u_point_scale",
    "u_width",
    "u_base_int",
    "u_base_frac",
    "u_fall_int",
    "u_fall_frac",
    "u_cells",
    "u_slots",
    "u_cell",
    "u_lambda",
    "u_diameter",
    "u_fall_speed",
    "u_wind",
    "u_exposure",
    "u_radius",
    "u_flake_colour",
];

/// The near field's programs (drawing; the probe's transform feedback) and vertex array.
pub(crate) struct NearPass {
    program: ShaderProgram,
    probe: ShaderProgram,
    vao: glow::VertexArray,
}

/// What one draw of the field needs besides the settings.
pub(crate) struct NearFrame<'a> {
    pub camera: &'a OrbitCamera,
    pub size: (u32, u32),
    pub width: f32,
    pub beta: f32,
    pub flake_colour: [f32; 3],
    pub veil_colour: [f32; 3],
    pub density: &'a Density,
}

impl NearPass {
    /// Builds `flakes.vert` + `flakes.frag`, and the probe (`flakes.vert` capturing
    /// `v_probe`).
    pub(crate) fn new(gl: &glow::Context) -> Result<Self> {
        let vert = builtin("flakes.vert")?;
        let frag = builtin("flakes.frag")?;
        let uniforms = [UNIFORMS, VEIL_UNIFORMS].concat();
        let program = build_program(gl, &vert, &frag, &uniforms)?;
        let probe = build_program_with_feedback(gl, &vert, &frag, &uniforms, &["v_probe"])?;
        // SAFETY: object creation on the current context.
        let vao = unsafe { gl_call("glGenVertexArrays", gl.create_vertex_array())? };
        Ok(Self {
            program,
            probe,
            vao,
        })
    }

    /// Sets `program`'s uniforms for a frame; returns the instances to draw.
    ///
    /// # Safety
    /// GL must be current with `program` in use.
    unsafe fn set_uniforms(
        &self,
        gl: &glow::Context,
        program: &ShaderProgram,
        near: &NearFlakes,
        layout: &NearLayout,
        frame: &NearFrame,
    ) {
        let (w, h) = (frame.size.0.max(1), frame.size.1.max(1));
        let camera = frame.camera;
        let eye = camera.eye();
        let lattice = Lattice::new(near, layout, eye);
        let view_proj = camera.view_projection(w as f32 / h as f32);
        // SAFETY: forwarded from the caller.
        unsafe {
            let u = |name| program.uniform(gl, name);
            gl.uniform_matrix_4_f32_slice(
                u("u_view_proj").as_ref(),
                false,
                &view_proj.to_cols_array(),
            );
            gl.uniform_2_f32(u("u_viewport").as_ref(), w as f32, h as f32);
            gl.uniform_1_f32(u("u_point_scale").as_ref(), camera.point_scale(h));
            gl.uniform_1_f32(u("u_width").as_ref(), frame.width);
            let b = lattice.base_int;
            gl.uniform_3_i32(u("u_base_int").as_ref(), b[0], b[1], b[2]);
            let f = lattice.base_frac;
            gl.uniform_3_f32(u("u_base_frac").as_ref(), f[0], f[1], f[2]);
            gl.uniform_1_u32(u("u_fall_int").as_ref(), lattice.fall_int);
            gl.uniform_1_f32(u("u_fall_frac").as_ref(), lattice.fall_frac);
            gl.uniform_1_i32(u("u_cells").as_ref(), layout.cells as i32);
            gl.uniform_1_i32(u("u_slots").as_ref(), SLOTS as i32);
            gl.uniform_1_f32(u("u_cell").as_ref(), layout.cell);
            gl.uniform_1_f32(u("u_lambda").as_ref(), near.density * layout.cell.powi(3));
            gl.uniform_2_f32(u("u_diameter").as_ref(), near.diameter[0], near.diameter[1]);
            gl.uniform_1_f32(u("u_fall_speed").as_ref(), near.fall_speed);
            let v = near.wind;
            gl.uniform_3_f32(u("u_wind").as_ref(), v[0], v[1], v[2]);
            gl.uniform_1_f32(u("u_exposure").as_ref(), near.exposure_time);
            gl.uniform_1_f32(u("u_radius").as_ref(), layout.radius);
            let c = frame.flake_colour;
            gl.uniform_3_f32(u("u_flake_colour").as_ref(), c[0], c[1], c[2]);
            frame
                .density
                .set_uniforms(gl, program, eye, frame.beta, frame.veil_colour);
        }
    }

    /// Draws the field into the bound framebuffer: depth tested, not written, blended by
    /// coverage.
    ///
    /// # Safety
    /// GL must be current with the viewport set to `frame.size`.
    pub(crate) unsafe fn draw(&self, gl: &glow::Context, near: &NearFlakes, frame: &NearFrame) {
        let Some(layout) = NearLayout::new(near) else {
            return;
        };
        // SAFETY: forwarded from the caller; the objects belong to this context.
        unsafe {
            gl.use_program(Some(self.program.id));
            self.set_uniforms(gl, &self.program, near, &layout, frame);
            gl.enable(glow::BLEND);
            gl.blend_func(glow::SRC_ALPHA, glow::ONE_MINUS_SRC_ALPHA);
            gl.depth_mask(false);
            gl.bind_vertex_array(Some(self.vao));
            gl.draw_arrays_instanced(glow::TRIANGLE_STRIP, 0, 4, layout.instances() as i32);
            gl.depth_mask(true);
            gl.disable(glow::BLEND);
        }
    }

    /// Every slot of the field for this frame, in instance order: a flake's world position
    /// and, in w, its diameter (metres) when it is drawn, else 0; read back through transform
    /// feedback.
    pub(crate) fn probe(
        &self,
        gl: &glow::Context,
        near: &NearFlakes,
        frame: &NearFrame,
    ) -> Result<Vec<[f32; 4]>> {
        let Some(layout) = NearLayout::new(near) else {
            return Ok(Vec::new());
        };
        let count = layout.instances() as usize;
        let bytes = super::buffer_bytes("near flake", count, 16)?;
        // SAFETY: the buffer holds one vec4 per instance, the probe draws one vertex each.
        unsafe {
            let buffer = gl_call("glGenBuffers", gl.create_buffer())?;
            gl.bind_buffer(glow::TRANSFORM_FEEDBACK_BUFFER, Some(buffer));
            gl.buffer_data_size(glow::TRANSFORM_FEEDBACK_BUFFER, bytes, glow::STREAM_READ);
            gl.bind_buffer_base(glow::TRANSFORM_FEEDBACK_BUFFER, 0, Some(buffer));
            gl.use_program(Some(self.probe.id));
            self.set_uniforms(gl, &self.probe, near, &layout, frame);
            gl.enable(glow::RASTERIZER_DISCARD);
            gl.bind_vertex_array(Some(self.vao));
            gl.begin_transform_feedback(glow::POINTS);
            gl.draw_arrays_instanced(glow::POINTS, 0, 1, count as i32);
            gl.end_transform_feedback();
            gl.disable(glow::RASTERIZER_DISCARD);
            let mut data = vec![0u8; bytes as usize];
            gl.get_buffer_sub_data(glow::TRANSFORM_FEEDBACK_BUFFER, 0, &mut data);
            gl.bind_buffer_base(glow::TRANSFORM_FEEDBACK_BUFFER, 0, None);
            gl.bind_buffer(glow::TRANSFORM_FEEDBACK_BUFFER, None);
            gl.delete_buffer(buffer);
            gl.bind_vertex_array(None);
            gl.use_program(None);
            let values: &[[f32; 4]] = bytemuck::cast_slice(&data);
            Ok(values.to_vec())
        }
    }

    /// Deletes the GL objects.
    pub(crate) fn delete(&self, gl: &glow::Context) {
        // SAFETY: the objects belong to this context and are not used afterwards.
        unsafe {
            gl.delete_program(self.program.id);
            gl.delete_program(self.probe.id);
            gl.delete_vertex_array(self.vao);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_reaches_the_distance_or_the_budget() {
        let near = NearFlakes {
            density: 49.2,
            ..NearFlakes::default()
        };
        let l = NearLayout::new(&near).unwrap();
        assert!((l.cell - (4.0f32 / 49.2).cbrt()).abs() < 1e-6);
        assert!(l.instances() <= near.max, "{l:?}");
        assert!(l.radius < near.distance && l.radius > 9.0, "{l:?}");
        // Sparse snow: the whole distance.
        let sparse = NearFlakes {
            density: 0.05,
            ..near
        };
        let l = NearLayout::new(&sparse).unwrap();
        assert_eq!(l.radius, 60.0);
        assert!((l.cells / 2 - 1) as f32 * l.cell >= 60.0);
        for off in [
            NearFlakes {
                density: 0.0,
                ..near
            },
            NearFlakes { max: 0, ..near },
            NearFlakes {
                distance: 0.0,
                ..near
            },
        ] {
            assert_eq!(NearLayout::new(&off), None);
        }
    }

    #[test]
    fn the_lattice_split_keeps_the_fraction_after_hours() {
        let near = NearFlakes {
            density: 49.2,
            wind: [7.0, -3.0, 0.0],
            time: 36_000.0,
            ..NearFlakes::default()
        };
        let layout = NearLayout::new(&near).unwrap();
        let eye = Vec3::new(1000.5, 2000.25, 300.0);
        let a = Lattice::new(&near, &layout, eye);
        let later = NearFlakes {
            time: near.time + 1e-3,
            ..near
        };
        let b = Lattice::new(&later, &layout, eye);
        // 1 ms moves the lattice by 7 mm in x: the fraction sees it.
        let dx = (f64::from(b.base_int[0]) + f64::from(b.base_frac[0]))
            - (f64::from(a.base_int[0]) + f64::from(a.base_frac[0]));
        let expected = -7.0e-3 / f64::from(layout.cell);
        assert!((dx - expected).abs() < 1e-5, "{dx} vs {expected}");
    }
}
