//! The veil of falling snow: what the flakes between the eye and a surface take from its light
//! and add of their own, in linear light `colour · T + veil · (1 − T)`, `T = e^(−τ)`, `τ` the
//! optical depth along the view ray (`β d` in a uniform snowfall of extinction coefficient `β`
//! per metre, [`crate::snow::Snowfall::extinction`]).
//!
//! The terrain veils itself: its fragment shader (`terrain.frag`) knows each pixel's world
//! position, so it mixes the veil in as it shades, with no pass and no depth copy of its own
//! (a full-screen pass behind a depth copy cost 0.3 ms a frame on an H100). The sky, which no
//! surface covers, is veiled by one triangle at the far plane (`sky.vert` + `veil.frag`),
//! drawn after the terrain with `GL_LEQUAL` and no depth writes, so only the pixels the
//! terrain left at the cleared depth are shaded; they lie at [`Views::sky_distance`] along
//! their rays. The flakes are drawn after it, each veiled by its own
//! distance (`particles.vert` for sprites, `splat.frag` for the splat composite): a flake of
//! opacity α at distance `d_f` over the veiled background `B'` gives
//! `α (c T(d_f) + veil (1 − T(d_f))) + (1 − α) B'`, exactly the light of the flake between two
//! stretches of snowfall. Both paths veil a flake by its distance, so they agree as they do
//! without the veil.
//!
//! `τ` is `β d` times the mean, along the ray, of a relative density read from a 3-D texture
//! over a box ([`Renderer::set_veil_density`](super::Renderer::set_veil_density)), 1 outside
//! it; without one (the default) the multiplier is exactly 1.
//!
//! [`Views::sky_distance`]: super::Views::sky_distance

use glam::Vec3;
use glow::HasContext;

use super::error::{Error, Result, gl_call};
use super::shader::{ShaderProgram, build_program, builtin};

/// Texture unit of the relative density (a `sampler3D` in every veiled program).
pub(crate) const UNIT_DENSITY: u32 = 5;

/// The uniforms of the optical depth and the veil's colour that every veiled program declares
/// and [`Density::set_uniforms`] sets.
pub(crate) const VEIL_UNIFORMS: &[&str] = &[
    "u_eye",
    "u_veil_colour",
    "u_beta",
    "u_density",
    "u_density_field",
    "u_density_lo",
    "u_density_hi",
];

/// The relative density of the snowfall that scales `β` along the rays.
pub(crate) struct Density {
    texture: glow::Texture,
    /// The box the texture spans, `None` for none (the multiplier is 1).
    pub(crate) field: Option<(Vec3, Vec3)>,
}

impl Density {
    /// A 1 × 1 × 1 texture of 1, not in use.
    pub(crate) fn new(gl: &glow::Context) -> Result<Self> {
        // SAFETY: object creation on the current context.
        let texture = unsafe { gl_call("glGenTextures", gl.create_texture())? };
        let density = Self {
            texture,
            field: None,
        };
        density.upload(gl, [1, 1, 1], &[1.0]);
        Ok(density)
    }

    fn upload(&self, gl: &glow::Context, size: [u32; 3], values: &[f32]) {
        // SAFETY: the texture belongs to this context; `values` holds size[0]·size[1]·size[2]
        // floats (checked by the caller).
        unsafe {
            gl.bind_texture(glow::TEXTURE_3D, Some(self.texture));
            gl.tex_image_3d(
                glow::TEXTURE_3D,
                0,
                glow::R32F as i32,
                size[0] as i32,
                size[1] as i32,
                size[2] as i32,
                0,
                glow::RED,
                glow::FLOAT,
                glow::PixelUnpackData::Slice(Some(bytemuck::cast_slice(values))),
            );
            for (name, value) in [
                (glow::TEXTURE_MIN_FILTER, glow::LINEAR),
                (glow::TEXTURE_MAG_FILTER, glow::LINEAR),
                (glow::TEXTURE_WRAP_S, glow::CLAMP_TO_EDGE),
                (glow::TEXTURE_WRAP_T, glow::CLAMP_TO_EDGE),
                (glow::TEXTURE_WRAP_R, glow::CLAMP_TO_EDGE),
            ] {
                gl.tex_parameter_i32(glow::TEXTURE_3D, name, value as i32);
            }
            gl.bind_texture(glow::TEXTURE_3D, None);
        }
    }

    /// Uses `values` (x fastest, then y, then z; each ≥ 0 and finite) of a grid of `size`
    /// over the box `[lo, hi]` as the relative density; `None` goes back to uniform.
    pub(crate) fn set(
        &mut self,
        gl: &glow::Context,
        grid: Option<([u32; 3], &[f32], Vec3, Vec3)>,
    ) -> Result<()> {
        let Some((size, values, lo, hi)) = grid else {
            self.field = None;
            return Ok(());
        };
        let count = size.iter().map(|&s| s as usize).product::<usize>();
        if size.contains(&0) || values.len() != count {
            return Err(Error::InvalidParameter(format!(
                "a relative density grid of {size:?} needs {count} values, got {}",
                values.len()
            )));
        }
        if let Some(v) = values.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
            return Err(Error::InvalidParameter(format!(
                "a relative density must be finite and >= 0, got {v}"
            )));
        }
        if !(hi - lo).cmpgt(Vec3::ZERO).all() {
            return Err(Error::InvalidParameter(format!(
                "the relative density's box [{lo}, {hi}] is empty"
            )));
        }
        self.upload(gl, size, values);
        self.field = Some((lo, hi));
        Ok(())
    }

    /// Binds the texture to its unit and sets the optical depth's uniforms of `program`, in
    /// use: `beta` per metre, seen from `eye`, veiled towards `colour`.
    ///
    /// # Safety
    /// GL must be current with `program` in use, built with the optical depth's uniforms
    /// (`u_eye`, `u_veil_colour`, `u_beta`, `u_density`, `u_density_field`, `u_density_lo`,
    /// `u_density_hi`).
    pub(crate) unsafe fn set_uniforms(
        &self,
        gl: &glow::Context,
        program: &ShaderProgram,
        eye: Vec3,
        beta: f32,
        colour: [f32; 3],
    ) {
        // SAFETY: forwarded from the caller.
        unsafe {
            gl.active_texture(glow::TEXTURE0 + UNIT_DENSITY);
            gl.bind_texture(glow::TEXTURE_3D, Some(self.texture));
            gl.active_texture(glow::TEXTURE0);
            let u = |name| program.uniform(gl, name);
            gl.uniform_1_i32(u("u_density").as_ref(), UNIT_DENSITY as i32);
            gl.uniform_3_f32(u("u_eye").as_ref(), eye.x, eye.y, eye.z);
            gl.uniform_3_f32(u("u_veil_colour").as_ref(), colour[0], colour[1], colour[2]);
            gl.uniform_1_f32(u("u_beta").as_ref(), beta);
            let (lo, hi) = self.field.unwrap_or((Vec3::ZERO, Vec3::ONE));
            gl.uniform_1_i32(
                u("u_density_field").as_ref(),
                i32::from(self.field.is_some()),
            );
            gl.uniform_3_f32(u("u_density_lo").as_ref(), lo.x, lo.y, lo.z);
            gl.uniform_3_f32(u("u_density_hi").as_ref(), hi.x, hi.y, hi.z);
        }
    }

    /// Deletes the texture.
    pub(crate) fn delete(&self, gl: &glow::Context) {
        // SAFETY: the texture belongs to this context and is not used afterwards.
        unsafe { gl.delete_texture(self.texture) };
    }
}

/// The veil over the sky: its program and an empty vertex array.
pub(crate) struct VeilPass {
    program: ShaderProgram,
    vao: glow::VertexArray,
}

impl VeilPass {
    /// Builds `sky.vert` (a full-screen triangle at the far plane) + `veil.frag`.
    pub(crate) fn new(gl: &glow::Context) -> Result<Self> {
        let uniforms = [
            &["u_inv_view_proj", "u_viewport", "u_sky_distance"],
            VEIL_UNIFORMS,
        ]
        .concat();
        let program = build_program(gl, &builtin("sky.vert")?, &builtin("veil.frag")?, &uniforms)?;
        // SAFETY: object creation on the current context.
        let vao = unsafe { gl_call("glGenVertexArrays", gl.create_vertex_array())? };
        Ok(Self { program, vao })
    }

    /// Blends the veil over the sky: the pixels of the bound framebuffer (`size` pixels)
    /// whose depth is still the cleared 1, `beta` per metre seen from `eye` through
    /// `inv_view_proj` (clip → world), the sky at `sky_distance` metres, towards `colour`.
    ///
    /// # Safety
    /// GL must be current with the viewport set to `size` and the depth test enabled.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn draw(
        &self,
        gl: &glow::Context,
        density: &Density,
        size: (u32, u32),
        inv_view_proj: &glam::Mat4,
        eye: Vec3,
        beta: f32,
        sky_distance: f32,
        colour: [f32; 3],
    ) {
        let p = &self.program;
        // SAFETY: forwarded from the caller; the objects belong to this context.
        unsafe {
            gl.use_program(Some(p.id));
            gl.uniform_matrix_4_f32_slice(
                p.uniform(gl, "u_inv_view_proj").as_ref(),
                false,
                &inv_view_proj.to_cols_array(),
            );
            gl.uniform_2_f32(
                p.uniform(gl, "u_viewport").as_ref(),
                size.0 as f32,
                size.1 as f32,
            );
            gl.uniform_1_f32(p.uniform(gl, "u_sky_distance").as_ref(), sky_distance);
            density.set_uniforms(gl, p, eye, beta, colour);
            gl.depth_func(glow::LEQUAL);
            gl.depth_mask(false);
            gl.enable(glow::BLEND);
            gl.blend_func(glow::SRC_ALPHA, glow::ONE_MINUS_SRC_ALPHA);
            gl.bind_vertex_array(Some(self.vao));
            gl.draw_arrays(glow::TRIANGLES, 0, 3);
            gl.disable(glow::BLEND);
            gl.depth_mask(true);
            gl.depth_func(glow::LESS);
        }
    }

    /// Deletes the program and the vertex array.
    pub(crate) fn delete(&self, gl: &glow::Context) {
        // SAFETY: the objects belong to this context and are not used afterwards.
        unsafe {
            gl.delete_program(self.program.id);
            gl.delete_vertex_array(self.vao);
        }
    }
}

#[cfg(test)]
mod tests {
    /// The optical depth the sky's veil, the terrain, the sprites and the splat composite
    /// compute.
    fn optical_depth(text: &str) -> &str {
        let start = text
            .find("const int VEIL_STEPS")
            .expect("VEIL_STEPS declared");
        let end = start + text[start..].find("\n}\n").expect("optical_depth() ends") + 3;
        &text[start..end]
    }

    #[test]
    fn every_veiled_shader_computes_the_same_optical_depth() {
        // The embedded texts, whatever SNOWSIM_SHADER_DIR says.
        let text = |name| {
            super::super::shader::builtin(name)
                .unwrap()
                .builtin
                .unwrap()
        };
        let veil = optical_depth(text("veil.frag"));
        assert!(veil.contains("float optical_depth(vec3 a, vec3 b)"));
        for name in ["terrain.frag", "particles.geom", "splat.frag"] {
            assert_eq!(
                optical_depth(text(name)),
                veil,
                "{name} differs from veil.frag"
            );
        }
    }
}
