//! The GL side of particle splatting: one full-screen pass that composites the image the
//! OpenCL splat kernel wrote (see [`crate::splat`]) over the terrain, reading it through a
//! buffer texture (`GL_RG32UI` over the linked GL buffer) and writing each flake's depth
//! (`gl_FragDepth`) so the terrain hides the flakes behind it. Each pixel is drawn with the
//! nearest flake's colour and the opacity of its coverage counter (see [`crate::splat`]), so
//! many faint flakes add up as sprites do.

use std::time::Duration;

use glow::HasContext;

use super::error::{Error, Result, gl_call};
use super::shader::{ShaderProgram, build_program, builtin};
use super::veil::VEIL_UNIFORMS;

/// The composite program, its buffer texture and the image it shows.
pub(crate) struct SplatComposite {
    program: ShaderProgram,
    /// Core profile draws need a vertex array, even an empty one.
    vao: glow::VertexArray,
    texture: glow::Texture,
    /// Times the composite on the GPU (`GL_TIME_ELAPSED`).
    timer: glow::Query,
    /// A timing ended whose result has not been read.
    timer_pending: std::cell::Cell<bool>,
    /// The query is active (between `begin_timer` and `end_timer` of this frame).
    timer_running: std::cell::Cell<bool>,
    /// Frame size of the image attached, in pixels.
    size: (u32, u32),
    /// Where the coverage counters start, in `GL_RG32UI` texels (8 bytes) of the image.
    coverage_offset: u32,
}

impl SplatComposite {
    /// Builds `splat.vert` + `splat.frag` and the texture the image is read through.
    pub(crate) fn new(gl: &glow::Context) -> Result<Self> {
        let program = build_program(
            gl,
            &builtin("splat.vert")?,
            &builtin("splat.frag")?,
            &[
                &[
                    "u_image",
                    "u_width",
                    "u_coverage_offset",
                    "u_coverage_one",
                    "u_inv_view_proj",
                    "u_viewport",
                ][..],
                VEIL_UNIFORMS,
            ]
            .concat(),
        )?;
        // SAFETY: object creation on the current context; everything made is deleted on error.
        unsafe {
            let made = (|| {
                let vao = gl_call("glGenVertexArrays", gl.create_vertex_array())?;
                let texture = match gl_call("glGenTextures", gl.create_texture()) {
                    Ok(t) => t,
                    Err(e) => {
                        gl.delete_vertex_array(vao);
                        return Err(e);
                    }
                };
                match gl_call("glGenQueries", gl.create_query()) {
                    Ok(timer) => Ok((vao, texture, timer)),
                    Err(e) => {
                        gl.delete_vertex_array(vao);
                        gl.delete_texture(texture);
                        Err(e)
                    }
                }
            })();
            let (vao, texture, timer) = match made {
                Ok(objects) => objects,
                Err(e) => {
                    gl.delete_program(program.id);
                    return Err(e);
                }
            };
            Ok(Self {
                program,
                vao,
                texture,
                timer,
                timer_pending: std::cell::Cell::new(false),
                timer_running: std::cell::Cell::new(false),
                size: (0, 0),
                coverage_offset: 0,
            })
        }
    }

    /// Reads the image of a `width × height` frame from `buffer` (a word and a coverage
    /// counter per pixel, at least [`crate::splat::image_len`] float4), checked against the
    /// texture-buffer limit.
    pub(crate) fn set_image(
        &mut self,
        gl: &glow::Context,
        buffer: glow::Buffer,
        width: u32,
        height: u32,
    ) -> Result<()> {
        let padded = crate::splat::padded_pixels(width, height) as u64;
        // The words, one texel each, then the counters, two per texel.
        let texels = padded + padded / 2;
        // SAFETY: queries and texture setup on the current context.
        unsafe {
            let limit = gl.get_parameter_i32(glow::MAX_TEXTURE_BUFFER_SIZE).max(0) as u64;
            if texels == 0 || texels > limit || padded > i32::MAX as u64 {
                return Err(Error::InvalidParameter(format!(
                    "a {width}x{height} splat image has {texels} texels; this GL reads at most \
                     {limit} through a buffer texture (GL_MAX_TEXTURE_BUFFER_SIZE); use \
                     --particle-render sprites or a smaller frame"
                )));
            }
            gl.bind_texture(glow::TEXTURE_BUFFER, Some(self.texture));
            gl.tex_buffer(glow::TEXTURE_BUFFER, glow::RG32UI, Some(buffer));
            gl.bind_texture(glow::TEXTURE_BUFFER, None);
        }
        self.size = (width, height);
        self.coverage_offset = padded as u32;
        Ok(())
    }

    /// The frame size of the image attached.
    pub(crate) fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Starts timing the composite (ended by [`end_timer`](Self::end_timer)), unless the
    /// last timing's result is still on its way: the query is read without waiting for GL
    /// ([`take_time`](Self::take_time)), so only the frames whose previous timing had come
    /// back are timed.
    ///
    /// # Safety
    /// GL must be current; no other `GL_TIME_ELAPSED` query may be active.
    pub(crate) unsafe fn begin_timer(&self, gl: &glow::Context) {
        if self.timer_pending.get() {
            return;
        }
        // SAFETY: forwarded from the caller.
        unsafe { gl.begin_query(glow::TIME_ELAPSED, self.timer) };
        self.timer_running.set(true);
    }

    /// Ends the timing begun by [`begin_timer`](Self::begin_timer) (nothing when that one
    /// did not start a timing).
    ///
    /// # Safety
    /// GL must be current.
    pub(crate) unsafe fn end_timer(&self, gl: &glow::Context) {
        if !self.timer_running.replace(false) {
            return;
        }
        // SAFETY: forwarded from the caller; this object's query is active.
        unsafe { gl.end_query(glow::TIME_ELAPSED) };
        self.timer_pending.set(true);
    }

    /// GPU time of the last timed composite once GL has finished it; `None` before any, and
    /// while GL is still drawing it (never waits: a wait here would drain GL every frame).
    pub(crate) fn take_time(&self, gl: &glow::Context) -> Option<Duration> {
        if !self.timer_pending.get() {
            return None;
        }
        // SAFETY: the query was ended on this context; asking whether its result is there
        // does not wait.
        let available =
            unsafe { gl.get_query_parameter_u32(self.timer, glow::QUERY_RESULT_AVAILABLE) };
        if available == 0 {
            return None;
        }
        self.timer_pending.set(false);
        // SAFETY: the result is available, so reading it does not wait.
        let ns = unsafe { gl.get_query_parameter_u64(self.timer, glow::QUERY_RESULT) };
        Some(Duration::from_nanos(ns))
    }

    /// The composite's program (for the veil's uniforms, set between
    /// [`prepare`](Self::prepare) and [`draw`](Self::draw)).
    pub(crate) fn program(&self) -> &ShaderProgram {
        &self.program
    }

    /// Makes the composite's program current and sets its uniforms (`inv_view_proj`: clip →
    /// world, for the flakes' distances); the veil's are set next, then [`draw`](Self::draw)
    /// draws.
    ///
    /// # Safety
    /// GL must be current, with the viewport set to the image's size and the buffer attached
    /// by [`set_image`](Self::set_image) still alive.
    pub(crate) unsafe fn prepare(&self, gl: &glow::Context, inv_view_proj: &glam::Mat4) {
        // SAFETY: forwarded from the caller; the objects were created in `new`.
        unsafe {
            gl.use_program(Some(self.program.id));
            gl.uniform_matrix_4_f32_slice(
                self.program.uniform(gl, "u_inv_view_proj").as_ref(),
                false,
                &inv_view_proj.to_cols_array(),
            );
            gl.uniform_2_f32(
                self.program.uniform(gl, "u_viewport").as_ref(),
                self.size.0 as f32,
                self.size.1 as f32,
            );
            gl.active_texture(glow::TEXTURE0);
            gl.bind_texture(glow::TEXTURE_BUFFER, Some(self.texture));
            gl.uniform_1_i32(self.program.uniform(gl, "u_image").as_ref(), 0);
            gl.uniform_1_i32(
                self.program.uniform(gl, "u_width").as_ref(),
                self.size.0 as i32,
            );
            gl.uniform_1_i32(
                self.program.uniform(gl, "u_coverage_offset").as_ref(),
                self.coverage_offset as i32,
            );
            gl.uniform_1_f32(
                self.program.uniform(gl, "u_coverage_one").as_ref(),
                crate::splat::COVERAGE_ONE as f32,
            );
        }
    }

    /// Draws the image over what is in the framebuffer: depth tested against it, not written;
    /// blended by alpha. After [`prepare`](Self::prepare) and the veil's uniforms.
    ///
    /// # Safety
    /// As [`prepare`](Self::prepare), with this program current.
    pub(crate) unsafe fn draw(&self, gl: &glow::Context) {
        // SAFETY: forwarded from the caller.
        unsafe {
            gl.active_texture(glow::TEXTURE0);
            gl.bind_texture(glow::TEXTURE_BUFFER, Some(self.texture));
            gl.enable(glow::BLEND);
            gl.blend_func(glow::SRC_ALPHA, glow::ONE_MINUS_SRC_ALPHA);
            gl.depth_mask(false);
            gl.bind_vertex_array(Some(self.vao));
            gl.draw_arrays(glow::TRIANGLES, 0, 3);
            gl.depth_mask(true);
            gl.disable(glow::BLEND);
            gl.bind_texture(glow::TEXTURE_BUFFER, None);
        }
    }

    /// Deletes the GL objects.
    pub(crate) fn delete(&self, gl: &glow::Context) {
        // SAFETY: the objects belong to this context and are not used afterwards.
        unsafe {
            gl.delete_program(self.program.id);
            gl.delete_vertex_array(self.vao);
            gl.delete_texture(self.texture);
            gl.delete_query(self.timer);
        }
    }
}
