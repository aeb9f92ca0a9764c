//! Particle splatting on the OpenCL device (`kernels/splat.cl`): where the GL point rate is the
//! floor (compute GPUs such as the H100, whose raster hardware is small), the flakes are
//! projected by a kernel into a linear image of one 64-bit value per pixel, nearest flake first,
//! and a 32-bit coverage counter per pixel, and OpenGL only composites that image over the
//! terrain (`shaders/splat.frag`).
//!
//! This module is the OpenCL side only: the request (`--particle-render`), the device check,
//! and the kernels' launch. The session ([`crate::app::Session`]) moves the image to GL through
//! a [`GlLink`](crate::interop::GlLink), and the renderer composites it
//! ([`crate::render::Renderer::set_splat`]).
//!
//! # The image
//!
//! Pixel `(x, y)`, rows bottom to top as GL's window coordinates, is `image[y · width + x]`: the
//! high 32 bits the window depth of the nearest flake as float bits (GL's clip → NDC → window
//! mapping with depth range [0, 1]; positive floats order as their bits), the low 32 bits its
//! colour as RGBA8 (R in the lowest byte, alpha its coverage as the sprite shader computes it).
//! An empty pixel is all ones ([`EMPTY`]). Flakes drawn wider than [`MAX_SPLAT_PIXELS`] go to a
//! small overflow list that GL draws as sprites. A parcel near the camera is splatted as the
//! flakes of [`ParcelFlakes`] (each flake on its own, a flake too wide for the cap to the
//! overflow list).
//!
//! # Coverage: many faint flakes add up
//!
//! Keeping only the nearest flake would lose what sprites show: a far flake drawn at the pixel
//! floor is faint (alpha = its footprint over the drawn one), and sprites blended over one
//! another add up, `1 − Π(1 − αᵢ)`, where one nearest flake shows only its own `α`. So after
//! the 64-bit words of all pixels (their count rounded up to a multiple of 4, [`padded_pixels`])
//! the image holds one 32-bit counter per pixel: the sum of `−ln(1 − αᵢ)` of the translucent
//! flakes on it, in fixed point ([`COVERAGE_ONE`] per unit), one atomic add per flake and
//! pixel, in any order. The composite draws the nearest flake's colour and depth with the
//! opacity [`coverage_alpha`]`(sum) = 1 − exp(−Σ −ln(1 − αᵢ)) = 1 − Π(1 − αᵢ)`, the nearest
//! flake's own alpha when larger: the blending model of sprites (`SRC_ALPHA,
//! ONE_MINUS_SRC_ALPHA`) for flakes of one colour, without the 8-bit rounding a sprite blend
//! makes at every flake.
//!
//! What it does not do as sprites do: a flake opaque on a pixel (alpha byte 255) adds nothing
//! (it makes the pixel opaque when it is the nearest there, which it is unless a translucent
//! flake lies in front of it); and the counter sums every flake on the pixel's line of sight,
//! also those behind the terrain when a nearer one is in front of it (the splat does not know
//! the terrain's depth), where sprites would count only the nearer ones.
//!
//! # Depth precision
//!
//! The kernel computes the window depth as GL does (`proj · view`, then `z/w · ½ + ½`), and the
//! composite writes it as `gl_FragDepth`: each flake has one depth over its disc, as a point
//! sprite has. The headless framebuffer keeps depth as 32-bit floats, so neither the flake's
//! nor the terrain's depth is rounded again; a window's 24-bit depth buffer rounds both the
//! same way. Either way a depth step near the far end of [0, 1] is about 6·10⁻⁸, which at view
//! distance `d` is about `6·10⁻⁸ · d² / near` metres: with the orbit camera's near plane at 1 %
//! of its distance `D`, about `6·10⁻⁶ · D` at the target (6 mm at 1 km). Only a flake closer
//! to the ground than that can flicker against it, as a sprite would.

use std::fmt;
use std::str::FromStr;

use glam::Mat4;

use crate::cl::{
    self, BufferArg, Context, DeviceBuffer, DeviceInfo, Kernel, OutputBuffer, Program, Source,
    Timeline,
};
use crate::particle::{ParcelFlakes, Particle};

/// The OpenCL extension the splat kernel needs: `atom_min` on 64-bit values.
pub const SPLAT_EXTENSION: &str = "cl_khr_int64_extended_atomics";
/// Largest drawn diameter, in pixels, that the kernel splats; wider flakes are drawn as sprites.
pub const MAX_SPLAT_PIXELS: f32 = 8.0;
/// The value of an empty pixel.
pub const EMPTY: u64 = u64::MAX;
/// Fixed-point units of one unit of optical depth in a pixel's coverage counter (the kernel's
/// `SPLAT_COVERAGE_ONE`). A counter holds up to 65 536 units of optical depth (each
/// translucent flake adds at most 6.2), so it wraps only past some ten thousand nearly opaque
/// flakes on one pixel.
pub const COVERAGE_ONE: u32 = 1 << 16;
/// Stage of the splat kernels in a frame's timeline.
pub const SPLAT_STAGE: &str = crate::counters::stage::SPLAT;

/// What went wrong splatting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OpenCL layer failed.
    #[error(transparent)]
    Cl(#[from] cl::Error),
    /// `--particle-render splat` on a device without the 64-bit atomics.
    #[error(
        "--particle-render splat needs the OpenCL extension {extension}, which {device} does not \
         offer (the splat kernel keeps the nearest flake per pixel with a 64-bit atomic min); use \
         --particle-render sprites, or auto to pick what the device can do"
    )]
    Unsupported {
        /// The device, as `snowsim devices` labels it.
        device: String,
        /// The missing extension.
        extension: &'static str,
    },
    /// A parameter is out of range.
    #[error("invalid splat parameter: {0}")]
    InvalidParameter(String),
}

/// Result of splatting.
pub type Result<T> = std::result::Result<T, Error>;

/// How particles are drawn, as the user asks (`--particle-render`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParticleRender {
    /// Measure both over the first frames and keep the faster (sprites where splatting is not
    /// possible).
    #[default]
    Auto,
    /// GL point sprites.
    Sprites,
    /// The OpenCL splat kernel and a GL composite pass, or fail.
    Splat,
}

impl FromStr for ParticleRender {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "sprites" => Ok(Self::Sprites),
            "splat" => Ok(Self::Splat),
            _ => Err(format!(
                "`{s}` is not a particle render mode (sprites, splat, auto)"
            )),
        }
    }
}

impl fmt::Display for ParticleRender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Sprites => "sprites",
            Self::Splat => "splat",
        })
    }
}

/// How particles are drawn now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RenderMode {
    /// GL point sprites.
    Sprites,
    /// Splatted by OpenCL, composited by GL.
    Splat,
}

impl fmt::Display for RenderMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Sprites => "sprites",
            Self::Splat => "splat",
        })
    }
}

/// The mode in use, what was asked, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderChoice {
    /// The mode in use.
    pub mode: RenderMode,
    /// What the user asked for.
    pub requested: ParticleRender,
    /// Why this mode.
    pub reason: String,
}

impl fmt::Display for RenderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (requested {}: {})",
            self.mode, self.requested, self.reason
        )
    }
}

/// Whether the device can run the splat kernel.
pub fn supported(info: &DeviceInfo) -> bool {
    info.has_extension(SPLAT_EXTENSION)
}

/// Refuses `--particle-render splat` on a device without [`SPLAT_EXTENSION`], before any
/// context exists.
pub fn check_request(requested: ParticleRender, info: &DeviceInfo) -> Result<()> {
    if requested == ParticleRender::Splat && !supported(info) {
        return Err(Error::Unsupported {
            device: info.label(),
            extension: SPLAT_EXTENSION,
        });
    }
    Ok(())
}

/// Pixels of a `width × height` image rounded up to a multiple of 4: the number of 64-bit
/// words before the coverage counters, and of the counters.
pub fn padded_pixels(width: u32, height: u32) -> usize {
    (width as usize * height as usize).next_multiple_of(4)
}

/// Number of float4 a splat image of `width × height` pixels takes: a 64-bit word and a 32-bit
/// coverage counter per pixel (12 bytes), for [`padded_pixels`].
pub fn image_len(width: u32, height: u32) -> usize {
    padded_pixels(width, height) / 4 * 3
}

/// Opacity of a pixel whose coverage counter holds `counter`: `1 − exp(−counter /`
/// [`COVERAGE_ONE`]`)`, as the composite computes it (it takes the nearest flake's own alpha
/// when larger).
pub fn coverage_alpha(counter: u32) -> f32 {
    1.0 - (-(counter as f32) / COVERAGE_ONE as f32).exp()
}

/// A splat image read back from the device: per pixel, its 64-bit word (see [`decode`]) and its
/// coverage counter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplatImage {
    /// The words of the `width · height` pixels, row by row from the bottom.
    pub words: Vec<u64>,
    /// The coverage counters of the same pixels.
    pub coverage: Vec<u32>,
}

impl SplatImage {
    /// Splits the raw bytes of an image of `width × height` pixels (at least
    /// [`image_len`] float4), `None` when too short.
    pub fn from_bytes(bytes: &[u8], width: u32, height: u32) -> Option<Self> {
        let pixels = width as usize * height as usize;
        let padded = padded_pixels(width, height);
        let words = bytes.get(..pixels * 8)?;
        let coverage = bytes.get(padded * 8..padded * 8 + pixels * 4)?;
        Some(Self {
            words: words
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
            coverage: coverage
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        })
    }
}

/// The window depth and RGBA8 colour of one pixel value, `None` when empty.
pub fn decode(pixel: u64) -> Option<(f32, [u8; 4])> {
    if pixel == EMPTY {
        return None;
    }
    let depth = f32::from_bits((pixel >> 32) as u32);
    Some((depth, (pixel as u32).to_le_bytes()))
}

/// What the kernel needs of the camera and the frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplatView {
    /// The camera's view-projection matrix, exactly as GL draws with it.
    pub view_proj: Mat4,
    /// Frame size in pixels.
    pub size: (u32, u32),
    /// Pixels per metre at unit distance (`OrbitCamera::point_scale`).
    pub point_scale: f32,
    /// Smallest drawn diameter in pixels (the sprites' floor).
    pub min_diameter: f32,
    /// The flakes' RGB in [0, 1].
    pub colour: [f32; 3],
    /// The camera's position, metres (for the parcels drawn as flakes).
    pub eye: [f32; 3],
    /// How the parcels near the camera are drawn as flakes.
    pub parcels: ParcelFlakes,
}

/// The buffers of one splat: all in the splatter's context, the OpenCL side of GL buffers or
/// plain device buffers.
#[derive(Clone, Copy)]
pub struct SplatBuffers<'b, 'a> {
    /// The particles (xyz position and radius in metres, a float4 each).
    pub particles: &'b OutputBuffer<'a, Particle>,
    /// How many of them to splat (at most the buffer's length).
    pub count: usize,
    /// The image: [`image_len`] float4 of the view's size, or more.
    pub image: &'b OutputBuffer<'a, [f32; 4]>,
    /// The flakes too wide to splat, copied from the particles.
    pub overflow: &'b OutputBuffer<'a, Particle>,
}

/// The splat kernels on one context, with the overflow list's counter.
pub struct Splatter {
    clear: Kernel,
    splat: Kernel,
    overflow_count: DeviceBuffer<u32>,
}

impl Splatter {
    /// Builds `kernels/splat.cl` (or its replacement in `$SNOWSIM_KERNEL_DIR`) on `context`,
    /// whose device must offer [`SPLAT_EXTENSION`].
    pub fn new(context: &Context) -> Result<Self> {
        check_request(ParticleRender::Splat, context.info())?;
        let source = Source::embedded("splat.cl", include_str!("../../kernels/splat.cl"))?;
        let program = Program::build(context, &[source], "")?;
        Ok(Self {
            clear: program.kernel("splat_clear")?,
            splat: program.kernel("splat")?,
            overflow_count: DeviceBuffer::zeroed(context, 1)?,
        })
    }

    /// Enqueues, under the timeline's current stage, the clearing of the image and the
    /// splatting of the particles into it; flakes wider than the cap go to the overflow list
    /// (up to its length; [`overflow_count`](Self::overflow_count) then says how many there
    /// were, more than its length when it must grow).
    pub fn enqueue(
        &self,
        context: &Context,
        buffers: &SplatBuffers<'_, '_>,
        view: &SplatView,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let SplatBuffers {
            particles,
            count,
            image,
            overflow,
        } = *buffers;
        let (w, h) = view.size;
        let len = image_len(w, h);
        if w == 0 || h == 0 || image.len() < len {
            return Err(Error::InvalidParameter(format!(
                "a {w}x{h} image needs {len} float4, the buffer holds {}",
                image.len()
            )));
        }
        if count > particles.len() || count > u32::MAX as usize || 2 * len > u32::MAX as usize {
            return Err(Error::InvalidParameter(format!(
                "{count} particles in a buffer of {} (or a {w}x{h} image) exceed the kernel's \
                 32-bit indices",
                particles.len()
            )));
        }
        let padded = padded_pixels(w, h);
        // The words as ulong2 (the counters follow them).
        let words32 = (padded / 2) as u32;
        let mut call = self.clear.call();
        // SAFETY: the image holds `len` float4 = `padded` ulong words and then `padded` uint
        // counters (checked above), the overflow counter one uint; the kernel guards
        // `i < padded / 2` and writes ulong2 `i` and the uint2 of counters `i`.
        unsafe {
            call.buffer(image)?
                .arg(&words32)?
                .buffer(&self.overflow_count)?;
        }
        call.enqueue_into(
            context,
            self.clear.work_size(context, padded / 2)?,
            timeline,
        )?;
        if count == 0 {
            return Ok(());
        }
        let m = view.view_proj;
        let viewport = [w as f32, h as f32, view.point_scale, MAX_SPLAT_PIXELS];
        let [r, g, b] = view.colour;
        let colour = [r, g, b, 1.0];
        let n = count as u32;
        let cap = overflow.len().min(u32::MAX as usize) as u32;
        let image_mem = image.cl_mem_checked()?;
        let mut call = self.splat.call();
        let coverage_offset = padded as u32;
        // SAFETY: the particle buffer holds at least `n` float4 and the kernel guards `i < n`;
        // it writes pixels (x, y) with x < width, y < height: their words among the first
        // `padded` ulong of the image, their counters among the `padded` uint after them, all
        // within its `2 · len` ulong; it writes overflow slots below `cap`, the buffer's
        // length.
        unsafe {
            call.buffer(particles)?
                .arg(&n)?
                .arg(&m.row(0).to_array())?
                .arg(&m.row(1).to_array())?
                .arg(&m.row(2).to_array())?
                .arg(&m.row(3).to_array())?
                .arg(&viewport)?
                .arg(&view.min_diameter)?
                .arg(&colour)?
                .mem::<u64>(image_mem, 2 * len)?
                .arg(&coverage_offset)?
                .buffer(overflow)?
                .buffer(&self.overflow_count)?
                .arg(&cap)?
                .arg(&[view.eye[0], view.eye[1], view.eye[2], 0.0f32])?
                .arg(&view.parcels.as_float4())?;
        }
        call.enqueue_into(context, self.splat.work_size(context, count)?, timeline)?;
        Ok(())
    }

    /// Flakes the last [`enqueue`](Self::enqueue) sent to the overflow list, once the queue
    /// finished (a blocking read of one `uint`).
    pub fn overflow_count(&self) -> Result<usize> {
        let mut count = [0u32];
        self.overflow_count.read_into(&mut count)?;
        Ok(count[0] as usize)
    }
}
