//! The session's splat pass: the splat image and its overflow list as [`GlLink`]s (so they reach
//! GL by whatever path the particles take, shared, copied or imported), sized to the frame, and
//! `auto`'s measurement of sprites against splatting over the first frames.

use std::rc::Rc;
use std::time::Duration;

use crate::cl::{Context, Timeline};
use crate::interop::{GlLink, Interop};
use crate::particle::Particle;
use crate::render::Renderer;
use crate::splat::{SplatBuffers, SplatView, Splatter, image_len};

use super::Result;

/// Overflow slots allocated at first; the list doubles when a frame needs more.
const OVERFLOW_START: usize = 256;

/// The splat image of one frame size, the overflow list, and the kernels that fill them.
pub(crate) struct SplatPass {
    /// The image: words and coverage counters, as float4 ([`image_len`]).
    image: GlLink<[f32; 4]>,
    /// The flakes too wide to splat, copied from the particles.
    overflow: GlLink<Particle>,
    splatter: Splatter,
    size: (u32, u32),
    interop: Interop,
    /// Flakes in the overflow list after the last splat.
    overflow_count: usize,
}

impl SplatPass {
    /// Allocates the image of a `size` frame and the overflow list, and attaches both to the
    /// renderer (which then composites instead of drawing sprites).
    pub(crate) fn new(
        context: &Context,
        gl: &Rc<glow::Context>,
        interop: &Interop,
        splatter: Splatter,
        size: (u32, u32),
        renderer: &mut Renderer,
    ) -> Result<Self> {
        let image = GlLink::new(context, gl, interop, image_len(size.0, size.1))?;
        let overflow = GlLink::new(context, gl, interop, OVERFLOW_START)?;
        renderer.set_splat(image.gl_buffer(), size.0, size.1)?;
        renderer.set_splat_overflow(overflow.gl_buffer(), 0)?;
        Ok(Self {
            image,
            overflow,
            splatter,
            size,
            interop: interop.clone(),
            overflow_count: 0,
        })
    }

    /// Gives the kernels back (leaving splat mode).
    pub(crate) fn into_splatter(self) -> Splatter {
        self.splatter
    }

    /// The frame size the image is allocated for.
    pub(crate) fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Reallocates the image (and its link) for a frame of `size`, when it changed.
    pub(crate) fn resize(
        &mut self,
        context: &Context,
        gl: &Rc<glow::Context>,
        size: (u32, u32),
        renderer: &mut Renderer,
    ) -> Result<()> {
        if size == self.size {
            return Ok(());
        }
        let image = GlLink::new(context, gl, &self.interop, image_len(size.0, size.1))?;
        renderer.set_splat(image.gl_buffer(), size.0, size.1)?;
        // The old link (released: it is acquired only between `acquire` and `publish`) goes
        // now, after the renderer let go of its buffer.
        self.image = image;
        self.size = size;
        Ok(())
    }

    /// Makes the image and the overflow list OpenCL's (share mode; nothing in copy mode).
    pub(crate) fn acquire(&mut self, gl: &glow::Context) -> Result<()> {
        self.image.acquire(gl)?;
        self.overflow.acquire(gl)?;
        Ok(())
    }

    /// Enqueues the clearing of the image and the splatting of `count` particles of
    /// `particles` (acquired) into it, seen by `view`.
    pub(crate) fn enqueue(
        &mut self,
        context: &Context,
        particles: &mut GlLink<Particle>,
        count: usize,
        view: &SplatView,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let (particles, image, overflow) = (
            particles.target(),
            self.image.target(),
            self.overflow.target(),
        );
        let buffers = SplatBuffers {
            particles: &particles,
            count,
            image: &image,
            overflow: &overflow,
        };
        self.splatter.enqueue(context, &buffers, view, timeline)?;
        Ok(())
    }

    /// After the queue finished: reads how many flakes overflowed. When more than the list
    /// holds, grows it (to the next power of two, acquired) and returns `true`: the frame must
    /// be splatted again.
    pub(crate) fn check_overflow(
        &mut self,
        context: &Context,
        gl: &Rc<glow::Context>,
        renderer: &mut Renderer,
    ) -> Result<bool> {
        let count = self.splatter.overflow_count()?;
        if count <= self.overflow.len() {
            self.overflow_count = count;
            return Ok(false);
        }
        self.overflow.release()?;
        let mut link = GlLink::new(context, gl, &self.interop, count.next_power_of_two())?;
        renderer.set_splat_overflow(link.gl_buffer(), 0)?;
        link.acquire(gl)?;
        self.overflow = link;
        // Nothing is in the new list until the next splat.
        self.overflow_count = 0;
        Ok(true)
    }

    /// Tells the renderer how many flakes of the overflow list to draw, after
    /// [`check_overflow`](Self::check_overflow) read this frame's count (for a frame whose
    /// list was [published](Self::publish) before the count was read).
    pub(crate) fn show_overflow(&self, renderer: &mut Renderer) -> Result<()> {
        renderer.set_splat_overflow(self.overflow.gl_buffer(), self.overflow_count)?;
        Ok(())
    }

    /// Hands the image and the overflow list to GL; returns the time spent.
    pub(crate) fn publish(
        &mut self,
        gl: &glow::Context,
        renderer: &mut Renderer,
    ) -> Result<Duration> {
        let spent = self.image.publish(gl)? + self.overflow.publish(gl)?;
        renderer.set_splat_overflow(self.overflow.gl_buffer(), self.overflow_count)?;
        Ok(spent)
    }

    /// Bytes copied from the device into GL so far (zero when shared).
    pub(crate) fn copied_bytes(&self) -> u64 {
        self.image.copied_bytes() + self.overflow.copied_bytes()
    }
}

/// Frames of each mode `auto` leaves out before measuring (shader compiles, first
/// allocations, caches).
pub const PROBE_WARMUP: u32 = 1;
/// Frames of each mode `auto` measures.
pub const PROBE_FRAMES: u32 = 5;

/// `auto`'s measurement: sprites for the first `PROBE_WARMUP + PROBE_FRAMES` frames, then
/// splatting for as many; the first `PROBE_WARMUP` of each are left out, and the mode with the
/// smaller mean frame time (the whole frame: kernels, transfer, draw) is kept.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    frame: u32,
    sprites: Duration,
    splat: Duration,
}

/// What the probe says for the next frame.
pub(crate) enum ProbeStep {
    /// Draw this frame with sprites (`false`) or splatting (`true`).
    Measure(bool),
    /// Done: keep splatting (`true`) or sprites, with the mean frame times in ms.
    Decided {
        /// Whether splatting was faster.
        splat: bool,
        /// Mean frame time with sprites, ms.
        sprites_ms: f64,
        /// Mean frame time with splatting, ms.
        splat_ms: f64,
    },
}

impl Probe {
    /// Frames the whole measurement takes.
    pub(crate) const FRAMES: u32 = 2 * (PROBE_WARMUP + PROBE_FRAMES);

    /// The mode of the next frame, or the decision once both were measured.
    pub(crate) fn next(&self) -> ProbeStep {
        if self.frame < Self::FRAMES {
            return ProbeStep::Measure(self.frame >= PROBE_WARMUP + PROBE_FRAMES);
        }
        let mean = |d: Duration| d.as_secs_f64() * 1e3 / f64::from(PROBE_FRAMES);
        let (sprites_ms, splat_ms) = (mean(self.sprites), mean(self.splat));
        ProbeStep::Decided {
            splat: splat_ms < sprites_ms,
            sprites_ms,
            splat_ms,
        }
    }

    /// Records the wall time of the frame just drawn.
    pub(crate) fn record(&mut self, frame: Duration) {
        let phase = PROBE_WARMUP + PROBE_FRAMES;
        let in_phase = self.frame % phase;
        if self.frame < Self::FRAMES && in_phase >= PROBE_WARMUP {
            if self.frame < phase {
                self.sprites += frame;
            } else {
                self.splat += frame;
            }
        }
        self.frame += 1;
    }

    /// Frames recorded so far.
    pub(crate) fn frames(&self) -> u32 {
        self.frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_measures_sprites_then_splat_without_warm_up_and_keeps_the_faster() {
        let mut probe = Probe::default();
        let mut modes = Vec::new();
        for i in 0..Probe::FRAMES {
            match probe.next() {
                ProbeStep::Measure(splat) => modes.push(splat),
                ProbeStep::Decided { .. } => panic!("decided after {i} frames"),
            }
            // Warm-up frames are slow and must not count.
            let warm_up = i % (PROBE_WARMUP + PROBE_FRAMES) < PROBE_WARMUP;
            let ms = match (modes[i as usize], warm_up) {
                (_, true) => 100,
                (false, false) => 4,
                (true, false) => 3,
            };
            probe.record(Duration::from_millis(ms));
        }
        let half = (PROBE_WARMUP + PROBE_FRAMES) as usize;
        assert!(modes[..half].iter().all(|s| !s) && modes[half..].iter().all(|s| *s));
        match probe.next() {
            ProbeStep::Decided {
                splat,
                sprites_ms,
                splat_ms,
            } => {
                assert!(splat);
                assert!((sprites_ms - 4.0).abs() < 1e-9 && (splat_ms - 3.0).abs() < 1e-9);
            }
            ProbeStep::Measure(_) => panic!("still measuring"),
        }
    }
}
