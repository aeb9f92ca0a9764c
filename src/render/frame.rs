//! The contract between the loops that show frames (a window, or headless) and whatever
//! computes and draws them, plus frame statistics and PNG capture.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use glow::HasContext;

use super::error::{Error, Result};
use crate::counters::{Counters, StageTime, stage};

/// Error a [`FrameDriver`] returns: anything, boxed (an OpenCL failure, a GL failure, …).
pub type FrameError = Box<dyn std::error::Error + Send + Sync>;

/// What the user asked for with the mouse or the keyboard, passed on to the driver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Orbit the camera by a mouse drag of so many pixels.
    Orbit {
        /// Horizontal pixels.
        dx: f32,
        /// Vertical pixels.
        dy: f32,
    },
    /// Zoom in (positive) or out (negative) by wheel steps.
    Zoom(f32),
    /// Move the camera target by fractions of the viewing distance.
    Pan {
        /// Towards the screen's right.
        right: f32,
        /// Away from the viewer, along the ground.
        forward: f32,
        /// Up.
        up: f32,
    },
    /// Stop or restart the simulation (drawing goes on).
    TogglePause,
    /// Switch particle sorting on or off.
    ToggleSorting,
    /// Show or hide the wind lines.
    ToggleWind,
    /// Show or hide the pressure squares.
    TogglePressure,
    /// Colour the ground by the wind's friction velocity (drifting snow), or by its cover.
    ToggleFriction,
    /// Put the camera and the particles back where they started.
    Reset,
    /// Raise the wind's ground by the laid snow now (`wind.ground_refresh` on demand).
    RefreshGround,
    /// Multiply `time.acceleration` (the factor on the snowfall) by this (`[`: ½, `]`: 2).
    ScaleAcceleration(f64),
    /// Step a paused simulation by one frame.
    StepOnce,
    /// Show or hide the on-screen display.
    ToggleOsd,
}

/// What each stage of one frame cost: host stages on the wall clock
/// ([`stage::KERNELS`], [`stage::TRANSFER`], [`stage::DRAW`]) and the simulation's device
/// stages from OpenCL profiling.
pub type StageTimes = Vec<StageTime>;

/// Computes and draws frames into the framebuffer bound by the loop that calls it.
pub trait FrameDriver {
    /// Advances the simulation (unless paused) and draws a frame of `size` pixels; returns the
    /// time spent in each stage. GL may still be drawing when this returns (the loops finish
    /// it after the last frame, and a capture waits for it).
    fn frame(&mut self, size: (u32, u32)) -> std::result::Result<StageTimes, FrameError>;
    /// Draws the current state again without advancing it.
    fn redraw(&mut self, size: (u32, u32)) -> std::result::Result<(), FrameError>;
    /// Applies a user action; returns a line for the log when the action deserves one.
    fn action(&mut self, action: Action) -> Option<String>;
    /// A short status for the title bar and the log, e.g. `65536 particles | interop copy`.
    fn status(&self) -> String;
    /// Called once after the last frame (the window closed or the frame count was reached),
    /// while the GL context is still current: writes the run's final outputs. Returns a line
    /// for the log when there is something to say.
    fn finish(&mut self) -> std::result::Result<Option<String>, FrameError> {
        Ok(None)
    }

    /// A line for the log that a frame produced (a choice made, a mode switched), taken once;
    /// the run loops poll it after every frame.
    fn notice(&mut self) -> Option<String> {
        None
    }
}

/// Which frames to write as PNG files.
#[derive(Clone, Debug, Default)]
pub struct Capture {
    /// Write the last frame here.
    pub screenshot: Option<PathBuf>,
    /// Write every frame into this directory as `frame_00000.png`, `frame_00001.png`, …
    pub record: Option<PathBuf>,
}

impl Capture {
    /// Creates the record directory (so a bad path fails before any frame is drawn).
    pub fn prepare(&self) -> Result<()> {
        if let Some(path) = &self.screenshot {
            crate::output::check_image(path)?;
        }
        if let Some(dir) = &self.record {
            std::fs::create_dir_all(dir).map_err(|e| Error::Image {
                path: dir.clone(),
                error: format!("cannot create the record directory: {e}"),
            })?;
            crate::output::check_writable(&Self::record_path(dir, 0))?;
        }
        if let Some(parent) = self
            .screenshot
            .as_deref()
            .and_then(Path::parent)
            .filter(|p| !p.as_os_str().is_empty())
            && !parent.is_dir()
        {
            return Err(Error::Image {
                path: parent.to_path_buf(),
                error: "the screenshot's directory does not exist".into(),
            });
        }
        Ok(())
    }

    /// Path of frame `index` in the record directory.
    pub fn record_path(dir: &Path, index: u64) -> PathBuf {
        dir.join(format!("frame_{index:05}.png"))
    }

    /// Whether any frame is written.
    pub fn is_active(&self) -> bool {
        self.screenshot.is_some() || self.record.is_some()
    }
}

/// Reads the bound read framebuffer (`size` pixels) into an image, top row first.
pub fn read_frame(gl: &glow::Context, size: (u32, u32)) -> Result<image::RgbaImage> {
    let (w, h) = size;
    let bytes = (w as usize)
        .checked_mul(h as usize)
        .and_then(|p| p.checked_mul(4))
        .ok_or_else(|| Error::InvalidParameter(format!("frame {w}x{h} is too large")))?;
    let mut pixels = vec![0u8; bytes];
    // SAFETY: the slice holds exactly w·h RGBA8 pixels with pack alignment 1.
    unsafe {
        gl.pixel_store_i32(glow::PACK_ALIGNMENT, 1);
        gl.read_pixels(
            0,
            0,
            w as i32,
            h as i32,
            glow::RGBA,
            glow::UNSIGNED_BYTE,
            glow::PixelPackData::Slice(Some(&mut pixels)),
        );
    }
    for alpha in pixels.iter_mut().skip(3).step_by(4) {
        *alpha = 255; // a window's back buffer may have no alpha channel
    }
    let mut image = image::RgbaImage::from_raw(w, h, pixels)
        .ok_or_else(|| Error::InvalidParameter(format!("frame {w}x{h} does not fit")))?;
    image::imageops::flip_vertical_in_place(&mut image); // GL's first row is the bottom one
    Ok(image)
}

/// Writes `image` as a PNG file, atomically (a killed run leaves the old file or none).
pub fn save_png(image: &image::RgbaImage, path: &Path) -> Result<()> {
    let failed = |error: String| Error::Image {
        path: path.to_path_buf(),
        error,
    };
    let mut bytes = Vec::new();
    image
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .map_err(|e| failed(e.to_string()))?;
    crate::output::write_atomic(path, &bytes).map_err(|e| failed(e.to_string()))
}

/// Sums of stage times over some frames: the host stages over every frame, the device stages
/// over the frames whose kernels were timed (all, or one in `--profile-every`), so that their
/// means are per frame either way.
#[derive(Clone, Debug, Default)]
struct Totals {
    frame: Duration,
    stages: Counters,
    device: Counters,
}

impl Totals {
    fn add(&mut self, stages: &[StageTime], present: Duration, frame: Duration) {
        self.frame += frame;
        let (device, host): (Vec<StageTime>, Vec<StageTime>) =
            stages.iter().cloned().partition(|s| s.device);
        self.stages.add_frame(&host);
        self.stages.add(&[StageTime::host(stage::PRESENT, present)]);
        if !device.is_empty() {
            self.device.add_frame(&device);
        }
    }

    fn frames(&self) -> u64 {
        self.stages.frames
    }

    fn mean_ms(&self, d: Duration) -> f64 {
        if self.frames() == 0 {
            0.0
        } else {
            d.as_secs_f64() * 1e3 / self.frames() as f64
        }
    }

    /// Mean per timed frame of a device time.
    fn device_mean_ms(&self, d: Duration) -> f64 {
        if self.device.frames == 0 {
            0.0
        } else {
            d.as_secs_f64() * 1e3 / self.device.frames as f64
        }
    }

    fn stage_ms(&self, name: &str) -> f64 {
        self.mean_ms(self.stages.busy_of(name))
    }

    /// Mean of a [sampled](SAMPLED) stage over the frames that have a sample, `None` when none
    /// has.
    fn sampled_ms(&self, name: &str) -> Option<f64> {
        self.stages
            .get(name)
            .map(|s| s.busy.as_secs_f64() * 1e3 / s.launches.max(1) as f64)
    }

    fn fps(&self) -> f64 {
        let s = self.frame.as_secs_f64();
        if s > 0.0 {
            self.frames() as f64 / s
        } else {
            0.0
        }
    }
}

/// Frame statistics of a run: totals, a one-second window for the log and the title, and the
/// summary printed at the end.
#[derive(Debug)]
pub struct FrameStats {
    all: Totals,
    first: Option<Duration>,
    /// Frames to keep out of the means at the start (0: none).
    warmup: u64,
    /// Warm-up frames recorded so far.
    warmup_frames: u64,
    window: Totals,
    window_start: Instant,
    started: Instant,
    min_frame: Duration,
    max_frame: Duration,
    capture: Duration,
}

impl Default for FrameStats {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameStats {
    /// Starts counting now, with the first frame as warm-up.
    pub fn new() -> Self {
        Self::with_warmup(1)
    }

    /// Starts counting now, keeping the first `warmup` frames out of the means (with 0, every
    /// frame is measured: a one-frame run is its own measurement).
    pub fn with_warmup(warmup: u64) -> Self {
        let now = Instant::now();
        Self {
            all: Totals::default(),
            first: None,
            warmup,
            warmup_frames: 0,
            window: Totals::default(),
            window_start: now,
            started: now,
            min_frame: Duration::MAX,
            max_frame: Duration::ZERO,
            capture: Duration::ZERO,
        }
    }

    /// Records one frame: its stages, the time to present it (swap) and its whole wall time
    /// (without capture). The warm-up frames (by default the first: lazy shader and kernel
    /// compilation) are kept apart and left out of the means.
    pub fn record(&mut self, stages: &[StageTime], present: Duration, frame: Duration) {
        self.window.add(stages, present, frame);
        self.first.get_or_insert(frame);
        if self.warmup_frames < self.warmup {
            self.warmup_frames += 1;
            return;
        }
        self.all.add(stages, present, frame);
        self.min_frame = self.min_frame.min(frame);
        self.max_frame = self.max_frame.max(frame);
    }

    /// Adds time spent reading frames back and writing PNG files.
    pub fn record_capture(&mut self, d: Duration) {
        self.capture += d;
    }

    /// Once a second: a log line about the last second, and the short form for a title bar.
    pub fn tick(&mut self, status: &str) -> Option<(String, String)> {
        let elapsed = self.window_start.elapsed();
        if elapsed < Duration::from_secs(1) || self.window.frames() == 0 {
            return None;
        }
        let w = std::mem::take(&mut self.window);
        let title = format!(
            "{:.1} FPS ({:.2} ms) | {status}",
            w.fps(),
            w.mean_ms(w.frame)
        );
        // The simulation's device stages, where they ran: wind, snow (with its deposit),
        // sort, and the cover's smoothing.
        let groups: Vec<String> = [
            ("wind", "wind."),
            ("snow", "snow.step"),
            ("sort", "sort."),
            ("smoothing", "snow.cover"),
        ]
        .iter()
        .filter(|(_, prefix)| w.device.stages.iter().any(|s| s.stage.starts_with(prefix)))
        .map(|(name, prefix)| format!("{name} {:.2}", w.device_mean_ms(w.device.busy(prefix))))
        .collect();
        let simulation = if groups.is_empty() {
            String::new()
        } else {
            format!(" [{}]", groups.join(", "))
        };
        // Splat mode: the splat kernels' device time and the composite's GPU time.
        let splat = if w.device.get(stage::SPLAT).is_some() {
            format!(
                "  (splat {:.2}, composite {:.2})",
                w.device_mean_ms(w.device.busy_of(stage::SPLAT)),
                w.sampled_ms(stage::COMPOSITE).unwrap_or(0.0)
            )
        } else {
            String::new()
        };
        // The drawing's own GPU time, where GL timed it.
        let draw_gpu = w
            .sampled_ms(stage::DRAW_GPU)
            .map_or_else(String::new, |ms| format!(" (GPU {ms:.2})"));
        // A second without a timed frame (`--profile-every`) has no device times to show.
        let device = match w.device.frames {
            0 => "not timed this second".to_string(),
            _ => format!("{:.2}", w.device_mean_ms(w.device.device_busy())),
        };
        let line = format!(
            "[{:6.1} s] {:7.1} FPS  frame {:.2} ms  kernel {:.2} (device {device}{simulation})  \
             transfer {:.2}  draw {:.2}{draw_gpu}{splat}  present {:.2} ms | {status}",
            self.started.elapsed().as_secs_f64(),
            w.fps(),
            w.mean_ms(w.frame),
            w.stage_ms(stage::KERNELS),
            w.stage_ms(stage::TRANSFER),
            w.stage_ms(stage::DRAW),
            w.stage_ms(stage::PRESENT),
        );
        self.window_start = Instant::now();
        Some((line, title))
    }

    /// The summary of every frame recorded so far.
    pub fn summary(&self) -> RunSummary {
        let a = &self.all;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let n = a.frames().max(1) as u32;
        RunSummary {
            frames: a.frames() + self.warmup_frames,
            measured_frames: a.frames(),
            first_frame_ms: self.first.map(ms).unwrap_or(0.0),
            fps: a.fps(),
            frame_ms: a.mean_ms(a.frame),
            min_frame_ms: if a.frames() > 0 {
                ms(self.min_frame)
            } else {
                0.0
            },
            max_frame_ms: ms(self.max_frame),
            kernel_ms: a.stage_ms(stage::KERNELS),
            kernel_device_ms: a.device_mean_ms(a.device.device_busy()),
            transfer_ms: a.stage_ms(stage::TRANSFER),
            draw_ms: a.stage_ms(stage::DRAW),
            present_ms: a.stage_ms(stage::PRESENT),
            stages: {
                let per = |c: &Counters, n: u32| {
                    c.stages
                        .iter()
                        .map(|s| {
                            // A sampled stage's mean is over the frames that have a sample.
                            let n = if SAMPLED.contains(&s.stage.as_str()) {
                                s.launches.max(1) as u32
                            } else {
                                n
                            };
                            StageTime {
                                busy: s.busy / n,
                                span: s.span / n,
                                launches: s.launches / u64::from(n),
                                ..s.clone()
                            }
                        })
                        .collect::<Vec<_>>()
                };
                let mut stages = per(&a.device, a.device.frames.max(1) as u32);
                stages.extend(per(&a.stages, n));
                stages
            },
            capture_seconds: self.capture.as_secs_f64(),
            wall_seconds: self.started.elapsed().as_secs_f64(),
        }
    }
}

/// What a run measured. Means are per frame over every frame but the warm-up ones (by default
/// the first; none with `--warmup 0` or a one-frame run).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RunSummary {
    /// Frames drawn.
    pub frames: u64,
    /// Frames the means and FPS are computed over (all but the warm-up).
    pub measured_frames: u64,
    /// Wall time of the first frame, in ms.
    pub first_frame_ms: f64,
    /// Frames per second: measured frames over the sum of their wall times (PNG writing
    /// excluded).
    pub fps: f64,
    /// Mean frame wall time, in ms.
    pub frame_ms: f64,
    /// Fastest frame, in ms.
    pub min_frame_ms: f64,
    /// Slowest frame, in ms.
    pub max_frame_ms: f64,
    /// Mean wall time of the kernel stage, in ms.
    pub kernel_ms: f64,
    /// Mean device time of the kernels from OpenCL profiling, in ms.
    pub kernel_device_ms: f64,
    /// Mean wall time of the transfer stage (share: acquire + release; copy: read back into the
    /// mapped GL buffer; GL's own upload to the GPU then happens during the draw), in ms.
    pub transfer_ms: f64,
    /// Mean wall time of enqueuing the drawing (GL draws it while the next frame's kernels
    /// are enqueued), in ms.
    pub draw_ms: f64,
    /// Mean time to swap buffers (window only), in ms.
    pub present_ms: f64,
    /// Every stage, host and device, as a mean per measured frame (`busy_ms`, `span_ms` in JSON):
    /// the device stages' `span − busy` is what the gaps between their launches cost.
    pub stages: Vec<StageTime>,
    /// Total time spent reading frames back and writing PNG files, in seconds.
    pub capture_seconds: f64,
    /// Wall time of the whole run, in seconds.
    pub wall_seconds: f64,
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let over = if self.measured_frames == self.frames {
            format!(
                "over all {} (first frame {:.1} ms, measured too: no warm-up)",
                self.measured_frames, self.first_frame_ms
            )
        } else {
            format!(
                "over the last {} (first frame {:.1} ms, left out as warm-up)",
                self.measured_frames, self.first_frame_ms
            )
        };
        writeln!(
            f,
            "{} frames: {:.1} FPS, {:.3} ms per frame (min {:.3}, max {:.3}) {over}",
            self.frames, self.fps, self.frame_ms, self.min_frame_ms, self.max_frame_ms,
        )?;
        writeln!(f, "  stage      mean ms per frame")?;
        writeln!(
            f,
            "  kernel    {:9.3}   (device time from OpenCL profiling: {:.3})",
            self.kernel_ms, self.kernel_device_ms
        )?;
        for s in self.stages.iter().filter(|s| s.device) {
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            writeln!(
                f,
                "    {:<16} {:7.3}   ({} launch{}, span {:.3}, gaps {:.3})",
                s.stage,
                ms(s.busy),
                s.launches,
                if s.launches == 1 { "" } else { "es" },
                ms(s.span),
                ms(s.gaps())
            )?;
        }
        writeln!(f, "  transfer  {:9.3}", self.transfer_ms)?;
        writeln!(f, "  draw      {:9.3}", self.draw_ms)?;
        // Host stages beyond the fixed ones (the splat composite's GPU time).
        let fixed = [stage::KERNELS, stage::TRANSFER, stage::DRAW, stage::PRESENT];
        for s in self
            .stages
            .iter()
            .filter(|s| !s.device && !fixed.contains(&s.stage.as_str()))
        {
            writeln!(f, "    {:<16} {:7.3}", s.stage, s.busy.as_secs_f64() * 1e3)?;
        }
        write!(f, "  present   {:9.3}", self.present_ms)?;
        if self.capture_seconds > 0.0 {
            write!(
                f,
                "\n  PNG capture {:.3} s in all (not in the frame times)",
                self.capture_seconds
            )?;
        }
        Ok(())
    }
}

/// Host stages read back from GL without waiting, so not every frame has a sample (a
/// frame whose timer was still in flight is not timed): their means, in the log and the
/// summary, are over the frames that have one.
const SAMPLED: [&str; 2] = [stage::COMPOSITE, stage::DRAW_GPU];

/// Reads the frame back and writes the PNG files `capture` asks for at frame `index`.
pub(crate) fn capture_frame(
    gl: &glow::Context,
    size: (u32, u32),
    capture: &Capture,
    index: u64,
    last: bool,
) -> Result<()> {
    let want_shot = last && capture.screenshot.is_some();
    if capture.record.is_none() && !want_shot {
        return Ok(());
    }
    let image = read_frame(gl, size)?;
    if let Some(dir) = &capture.record {
        save_png(&image, &Capture::record_path(dir, index))?;
    }
    if want_shot && let Some(path) = &capture.screenshot {
        save_png(&image, path)?;
    }
    Ok(())
}

/// Options of a run loop.
pub struct RunOptions<'a> {
    /// Stop after this many frames; `None` runs until the user quits (window only).
    pub frames: Option<u64>,
    /// Frames left out of the summary's means at the start (at least the first).
    pub warmup: u64,
    /// PNG output.
    pub capture: Capture,
    /// Where the once-a-second statistics go.
    pub log: &'a mut dyn FnMut(&str),
}

/// Runs `frames` frames headless into the bound offscreen framebuffer of `size` pixels.
pub fn run_headless(
    gl: &glow::Context,
    size: (u32, u32),
    driver: &mut dyn FrameDriver,
    options: RunOptions<'_>,
) -> Result<RunSummary> {
    run_frames(Some(gl), size, driver, options)
}

/// Runs `frames` frames of a driver that draws nothing (`--render off`): the statistics and
/// the log of [`run_headless`], no capture.
pub fn run_undrawn(driver: &mut dyn FrameDriver, options: RunOptions<'_>) -> Result<RunSummary> {
    if options.capture.is_active() {
        return Err(Error::InvalidParameter(
            "nothing is drawn, so there is no frame to write as PNG".into(),
        ));
    }
    run_frames(None, (0, 0), driver, options)
}

fn run_frames(
    gl: Option<&glow::Context>,
    size: (u32, u32),
    driver: &mut dyn FrameDriver,
    options: RunOptions<'_>,
) -> Result<RunSummary> {
    let frames = options.frames.unwrap_or(1);
    options.capture.prepare()?;
    let mut stats = FrameStats::with_warmup(options.warmup);
    for index in 0..frames {
        let start = Instant::now();
        let stages = driver.frame(size).map_err(Error::Frame)?;
        if let Some(gl) = gl
            && index + 1 == frames
        {
            // The frames are drawn while the next ones are computed: the last one's drawing
            // is waited for inside its own time, so the timed frames hold all their work.
            // SAFETY: the loop's context is current on this thread.
            unsafe { gl.finish() };
        }
        stats.record(&stages, Duration::ZERO, start.elapsed());
        if let Some(line) = driver.notice() {
            (options.log)(&line);
        }
        if let Some(gl) = gl
            && options.capture.is_active()
        {
            let start = Instant::now();
            capture_frame(gl, size, &options.capture, index, index + 1 == frames)?;
            stats.record_capture(start.elapsed());
        }
        if let Some((line, _)) = stats.tick(&driver.status()) {
            (options.log)(&line);
        }
    }
    if let Some(line) = driver.finish().map_err(Error::Frame)? {
        (options.log)(&line);
    }
    Ok(stats.summary())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampled_stage_is_averaged_over_the_frames_that_have_a_sample() {
        let mut stats = FrameStats::with_warmup(0);
        let ms = Duration::from_millis;
        for frame in 0..6u64 {
            let mut stages = vec![StageTime::host(stage::DRAW, ms(2))];
            // GL's timings come back for every other frame only.
            if frame % 2 == 0 {
                stages.push(StageTime::host(stage::DRAW_GPU, ms(3)));
                stages.push(StageTime::host(stage::COMPOSITE, ms(1)));
            }
            stats.record(&stages, Duration::ZERO, ms(5));
        }
        let summary = stats.summary();
        let busy = |name: &str| {
            summary
                .stages
                .iter()
                .find(|s| s.stage == name)
                .map(|s| s.busy)
        };
        // Per sample, not per frame (which would halve them).
        assert_eq!(busy(stage::DRAW_GPU), Some(ms(3)));
        assert_eq!(busy(stage::COMPOSITE), Some(ms(1)));
        // Every other host stage stays per frame.
        assert_eq!(busy(stage::DRAW), Some(ms(2)));
        assert_eq!(summary.draw_ms, 2.0);
    }
}
