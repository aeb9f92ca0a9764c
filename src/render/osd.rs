//! The on-screen display: a few lines of text (simulated time, acceleration, snowfall, snow
//! depths, particles, FPS, device) in a panel at the frame's top-left corner, drawn last. The
//! text is rasterised on the CPU with `ab_glyph` from the embedded DejaVu Sans into a coverage
//! texture, only when it changes; the panel is one textured rectangle (`osd.vert`,
//! `osd.frag`): white text over a black backdrop of 55 % opacity.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use glow::HasContext;

use super::error::{Error, Result, gl_call};
use super::shader::{ShaderProgram, build_program, builtin};

/// DejaVu Sans, as shipped by fonts-dejavu-core (licence in `assets/fonts/`): the OSD's and
/// the plots' font.
pub static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Pixels between the frame's top-left corner and the panel.
pub const OSD_MARGIN: u32 = 8;
/// Pixels between the panel's edge and its text.
const PADDING: u32 = 6;
/// The text's colour, linear RGB.
const TEXT_COLOUR: [f32; 3] = [1.0, 1.0, 1.0];
/// The backdrop's colour and opacity.
const BACKDROP: [f32; 4] = [0.0, 0.0, 0.0, 0.55];
/// Largest text height, pixels.
pub const MAX_TEXT_PIXELS: f32 = 200.0;

/// Text rasterised for the panel: a coverage byte per pixel, row 0 the top row, the padding
/// included.
#[derive(Clone, Debug, PartialEq)]
pub struct OsdImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width × height` coverages, 0 (backdrop) to 255 (text).
    pub coverage: Vec<u8>,
}

/// Rasterises `lines` in DejaVu Sans `pixels` high (the font's ascent to descent), one line
/// under the other, with the panel's padding around them.
pub fn rasterise(lines: &[String], pixels: f32) -> Result<OsdImage> {
    if !(pixels.is_finite() && (4.0..=MAX_TEXT_PIXELS).contains(&pixels)) {
        return Err(Error::InvalidParameter(format!(
            "OSD text of {pixels} pixels: must be 4 to {MAX_TEXT_PIXELS}"
        )));
    }
    let font = FontRef::try_from_slice(DEJAVU_SANS)
        .map_err(|_| Error::InvalidParameter("the embedded DejaVu Sans does not parse".into()))?;
    let scaled = font.as_scaled(PxScale::from(pixels));
    let line_height = (scaled.height() + scaled.line_gap()).ceil();
    let widths: Vec<f32> = lines
        .iter()
        .map(|line| {
            let mut x = 0.0;
            let mut previous = None;
            for c in line.chars() {
                let id = scaled.glyph_id(c);
                if let Some(p) = previous {
                    x += scaled.kern(p, id);
                }
                x += scaled.h_advance(id);
                previous = Some(id);
            }
            x
        })
        .collect();
    let text_width = widths.iter().copied().fold(0.0f32, f32::max).ceil() as u32;
    let width = text_width + 2 * PADDING;
    let height = (line_height * lines.len() as f32) as u32 + 2 * PADDING;
    let mut coverage = vec![0u8; width as usize * height as usize];
    for (i, line) in lines.iter().enumerate() {
        let baseline = PADDING as f32 + scaled.ascent() + i as f32 * line_height;
        let mut x = PADDING as f32;
        let mut previous = None;
        for c in line.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = previous {
                x += scaled.kern(p, id);
            }
            let glyph = id.with_scale_and_position(scaled.scale(), ab_glyph::point(x, baseline));
            x += scaled.h_advance(id);
            previous = Some(id);
            let Some(outlined) = font.outline_glyph(glyph) else {
                continue; // a space
            };
            let bounds = outlined.px_bounds();
            outlined.draw(|gx, gy, c| {
                let px = bounds.min.x as i64 + i64::from(gx);
                let py = bounds.min.y as i64 + i64::from(gy);
                if px >= 0 && py >= 0 && px < i64::from(width) && py < i64::from(height) {
                    let slot = &mut coverage[py as usize * width as usize + px as usize];
                    *slot = (*slot).max((c.clamp(0.0, 1.0) * 255.0).round() as u8);
                }
            });
        }
    }
    Ok(OsdImage {
        width,
        height,
        coverage,
    })
}

/// The panel's GL side: its program, the text texture and the size of the text in it.
pub(crate) struct Osd {
    program: ShaderProgram,
    vao: glow::VertexArray,
    texture: glow::Texture,
    size: (u32, u32),
}

impl Osd {
    /// Builds `osd.vert` + `osd.frag` and an empty texture.
    pub(crate) fn new(gl: &glow::Context) -> Result<Self> {
        let program = build_program(
            gl,
            &builtin("osd.vert")?,
            &builtin("osd.frag")?,
            &[
                "u_rect",
                "u_viewport",
                "u_text",
                "u_text_colour",
                "u_backdrop",
            ],
        )?;
        // SAFETY: object creation on the current context.
        unsafe {
            let vao = gl_call("glGenVertexArrays", gl.create_vertex_array())?;
            let texture = gl_call("glGenTextures", gl.create_texture())?;
            gl.bind_texture(glow::TEXTURE_2D, Some(texture));
            for (name, value) in [
                (glow::TEXTURE_MIN_FILTER, glow::NEAREST),
                (glow::TEXTURE_MAG_FILTER, glow::NEAREST),
            ] {
                gl.tex_parameter_i32(glow::TEXTURE_2D, name, value as i32);
            }
            gl.bind_texture(glow::TEXTURE_2D, None);
            Ok(Self {
                program,
                vao,
                texture,
                size: (0, 0),
            })
        }
    }

    /// Uploads `image` as the panel's text.
    pub(crate) fn set_image(&mut self, gl: &glow::Context, image: &OsdImage) {
        // SAFETY: the texture belongs to this context; the slice holds width × height bytes
        // with unpack alignment 1.
        unsafe {
            gl.bind_texture(glow::TEXTURE_2D, Some(self.texture));
            gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 1);
            gl.tex_image_2d(
                glow::TEXTURE_2D,
                0,
                glow::R8 as i32,
                image.width as i32,
                image.height as i32,
                0,
                glow::RED,
                glow::UNSIGNED_BYTE,
                glow::PixelUnpackData::Slice(Some(&image.coverage)),
            );
            gl.pixel_store_i32(glow::UNPACK_ALIGNMENT, 4);
            gl.bind_texture(glow::TEXTURE_2D, None);
        }
        self.size = (image.width, image.height);
    }

    /// The panel's rectangle in a frame of `viewport` pixels: left, top (from the top row),
    /// width, height; clipped to the frame.
    pub(crate) fn rect(&self, viewport: (u32, u32)) -> (u32, u32, u32, u32) {
        let (w, h) = viewport;
        let left = OSD_MARGIN.min(w);
        let top = OSD_MARGIN.min(h);
        (
            left,
            top,
            self.size.0.min(w - left),
            self.size.1.min(h - top),
        )
    }

    /// Draws the panel over the frame of `viewport` pixels (nothing before any text).
    ///
    /// # Safety
    /// GL must be current with the viewport set to `viewport`.
    pub(crate) unsafe fn draw(&self, gl: &glow::Context, viewport: (u32, u32)) {
        if self.size.0 == 0 || self.size.1 == 0 {
            return;
        }
        let (w, h) = viewport;
        let (left, top, _, _) = self.rect(viewport);
        // From the bottom-left corner, as GL counts; the texture keeps its own size.
        let (x0, y1) = (left as f32, (h - top) as f32);
        let (x1, y0) = (x0 + self.size.0 as f32, y1 - self.size.1 as f32);
        let p = &self.program;
        // SAFETY: forwarded from the caller; the objects belong to this context.
        unsafe {
            gl.use_program(Some(p.id));
            gl.uniform_4_f32(p.uniform(gl, "u_rect").as_ref(), x0, y0, x1, y1);
            gl.uniform_2_f32(p.uniform(gl, "u_viewport").as_ref(), w as f32, h as f32);
            gl.active_texture(glow::TEXTURE0);
            gl.bind_texture(glow::TEXTURE_2D, Some(self.texture));
            gl.uniform_1_i32(p.uniform(gl, "u_text").as_ref(), 0);
            let [r, g, b] = TEXT_COLOUR;
            gl.uniform_3_f32(p.uniform(gl, "u_text_colour").as_ref(), r, g, b);
            let [r, g, b, a] = BACKDROP;
            gl.uniform_4_f32(p.uniform(gl, "u_backdrop").as_ref(), r, g, b, a);
            gl.disable(glow::DEPTH_TEST);
            gl.enable(glow::BLEND);
            gl.blend_func(glow::SRC_ALPHA, glow::ONE_MINUS_SRC_ALPHA);
            gl.bind_vertex_array(Some(self.vao));
            gl.draw_arrays(glow::TRIANGLE_STRIP, 0, 4);
            gl.disable(glow::BLEND);
            gl.enable(glow::DEPTH_TEST);
            gl.bind_texture(glow::TEXTURE_2D, None);
        }
    }

    /// Deletes the GL objects.
    pub(crate) fn delete(&self, gl: &glow::Context) {
        // SAFETY: the objects belong to this context and are not used afterwards.
        unsafe {
            gl.delete_program(self.program.id);
            gl.delete_vertex_array(self.vao);
            gl.delete_texture(self.texture);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_rasterised_line_under_line_inside_the_padding() {
        let lines = vec!["time 12.0 s".to_string(), "FPS 60".to_string()];
        let image = rasterise(&lines, 16.0).unwrap();
        let (w, h) = (image.width as usize, image.height as usize);
        assert!(w > 2 * PADDING as usize + 40 && h > 2 * PADDING as usize + 30);
        let at = |x: usize, y: usize| image.coverage[y * w + x];
        // Nothing on the padding.
        for x in 0..w {
            for y in (0..PADDING as usize).chain(h - PADDING as usize..h) {
                assert_eq!(at(x, y), 0, "({x}, {y})");
            }
        }
        // Ink in both lines' halves.
        let ink = |y0: usize, y1: usize| {
            (y0..y1)
                .flat_map(|y| (0..w).map(move |x| (x, y)))
                .filter(|&(x, y)| at(x, y) > 128)
                .count()
        };
        assert!(ink(0, h / 2) > 30 && ink(h / 2, h) > 30);
        assert!(rasterise(&lines, 0.5).is_err());
    }
}
