//! `--record FILE.gif` and `--video FILE.mp4`: the frames a run records, made into an animated
//! GIF (the `image` crate) or a video (`ffmpeg`, where it is on PATH, checked before the run
//! starts). The frames go to a directory of their own beside the output while the run draws,
//! and it is removed once the film is written; a run that stops early keeps them and says so.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;

/// Whether `path` names a GIF (`--record` then makes an animation instead of PNG frames).
pub fn is_gif(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("gif"))
}

/// `ffmpeg` on PATH, if any.
pub fn find_ffmpeg() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("ffmpeg"))
        .find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|m| {
                m.is_file()
                    && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
        })
}

/// The films a run makes from its frames.
#[derive(Debug)]
pub struct Film {
    /// The animated GIF to write (`--record X.gif`).
    gif: Option<PathBuf>,
    /// The video to write (`--video X.mp4`) and the ffmpeg that encodes it.
    video: Option<(PathBuf, PathBuf)>,
    /// Where the frames are recorded.
    frames: PathBuf,
    /// Whether `frames` is ours to remove afterwards (not a `--record DIR` of the user's).
    scratch: bool,
}

impl Film {
    /// The films of `--record` and `--video`; `None` when neither asks for one. Fails up front
    /// when `--video` is asked and ffmpeg is not on PATH.
    pub fn new(record: Option<&Path>, video: Option<&Path>) -> anyhow::Result<Option<Self>> {
        let gif = record.filter(|p| is_gif(p)).map(Path::to_path_buf);
        let video = match video {
            Some(path) => {
                let ffmpeg = find_ffmpeg().with_context(|| {
                    format!(
                        "--video {}: ffmpeg is not on PATH (install it, e.g. `apt-get install \
                         ffmpeg`, or record PNG frames with --record DIR or a GIF with --record \
                         FILE.gif)",
                        path.display()
                    )
                })?;
                Some((path.to_path_buf(), ffmpeg))
            }
            None => None,
        };
        if gif.is_none() && video.is_none() {
            return Ok(None);
        }
        let (frames, scratch) = match record.filter(|p| !is_gif(p)) {
            Some(dir) => (dir.to_path_buf(), false),
            None => {
                let out = gif
                    .as_deref()
                    .or(video.as_ref().map(|v| v.0.as_path()))
                    .unwrap_or(Path::new("film"));
                let name = out
                    .file_name()
                    .map_or_else(|| "film".into(), |n| n.to_string_lossy().into_owned());
                (out.with_file_name(format!(".{name}.frames")), true)
            }
        };
        Ok(Some(Self {
            gif,
            video,
            frames,
            scratch,
        }))
    }

    /// Where the run records its frames as PNG files.
    pub fn frames(&self) -> &Path {
        &self.frames
    }

    /// Makes the films from the recorded frames at `fps` frames a second, removes scratch
    /// frames; lines for the log.
    pub fn finish(&self, fps: f64) -> anyhow::Result<Vec<String>> {
        anyhow::ensure!(
            fps.is_finite() && fps > 0.0,
            "a film needs a frame rate: time.step gives {fps} frames a second"
        );
        let mut frames: Vec<PathBuf> = std::fs::read_dir(&self.frames)
            .with_context(|| format!("cannot read the frames in {}", self.frames.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(snowsim::output::rule::record_frame_name)
            })
            .collect();
        frames.sort();
        anyhow::ensure!(
            !frames.is_empty(),
            "no frame was recorded in {}",
            self.frames.display()
        );
        let mut said = Vec::new();
        if let Some(path) = &self.gif {
            self.write_gif(path, &frames, fps)?;
            said.push(format!(
                "wrote {}: {} frames at {:.0} per second",
                path.display(),
                frames.len(),
                fps
            ));
        }
        if let Some((path, ffmpeg)) = &self.video {
            self.write_video(path, ffmpeg, fps)?;
            said.push(format!(
                "wrote {}: {} frames at {:.0} per second (ffmpeg)",
                path.display(),
                frames.len(),
                fps
            ));
        }
        if self.scratch {
            std::fs::remove_dir_all(&self.frames).ok();
        }
        Ok(said)
    }

    fn write_gif(&self, path: &Path, frames: &[PathBuf], fps: f64) -> anyhow::Result<()> {
        use image::codecs::gif::{GifEncoder, Repeat};
        let delay = image::Delay::from_numer_denom_ms(1000, (fps.round() as u32).max(1));
        let partial = path.with_extension("gif.partial");
        let file = std::fs::File::create(&partial)
            .with_context(|| format!("cannot create {}", partial.display()))?;
        let mut encoder = GifEncoder::new_with_speed(std::io::BufWriter::new(file), 10);
        encoder.set_repeat(Repeat::Infinite)?;
        for frame in frames {
            let image = image::open(frame)
                .with_context(|| format!("cannot read {}", frame.display()))?
                .to_rgba8();
            encoder.encode_frame(image::Frame::from_parts(image, 0, 0, delay))?;
        }
        drop(encoder);
        std::fs::rename(&partial, path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }

    fn write_video(&self, path: &Path, ffmpeg: &Path, fps: f64) -> anyhow::Result<()> {
        let partial = path.with_file_name(format!(
            ".{}.partial.mp4",
            path.file_name()
                .map_or_else(|| "video".into(), |n| n.to_string_lossy().into_owned())
        ));
        let output = Command::new(ffmpeg)
            .args(["-y", "-loglevel", "error", "-framerate"])
            .arg(format!("{fps}"))
            .arg("-i")
            .arg(self.frames.join("frame_%05d.png"))
            .args([
                "-c:v",
                "libx264",
                "-pix_fmt",
                "yuv420p",
                "-vf",
                "pad=ceil(iw/2)*2:ceil(ih/2)*2",
                "-f",
                "mp4",
            ])
            .arg(&partial)
            .output()
            .with_context(|| format!("cannot run {}", ffmpeg.display()))?;
        if !output.status.success() {
            std::fs::remove_file(&partial).ok();
            anyhow::bail!(
                "ffmpeg failed to encode {}: {}",
                path.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        std::fs::rename(&partial, path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(())
    }
}
