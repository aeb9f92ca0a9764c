//! `--camera-path FILE`: a camera that flies through keyframes, for headless recordings.
//!
//! The file is TOML, one `[[keyframe]]` table per keyframe, in order of time:
//!
//! ```toml
//! [[keyframe]]
//! time = 0.0                        # seconds into the run: frame i is at i × time.step
//! position = [2150, -700, 950]      # the eye, metres
//! target = [2150, 2300, 200]        # the point looked at
//!
//! [[keyframe]]
//! time = 4.0
//! position = [1500, 500, 600]
//! target = [2150, 2300, 200]
//! ```
//!
//! Between keyframes the eye and the target each follow a Catmull–Rom spline through the
//! keyframes' points (a cubic Hermite curve whose tangent at a keyframe is the difference of
//! its neighbours over the time between them; one-sided at the first and the last), so the
//! camera passes every keyframe at its time with a velocity that does not jump. Before the
//! first keyframe and after the last the camera holds still. The camera keeps the scene's
//! field of view.
//!
//! Errors name the file, the line and the keyframe: a TOML syntax error, an unknown key, a
//! missing `time`, `position` or `target`, a point that is not three finite numbers, a time that
//! is not finite or not after the previous keyframe's, an eye on its target.

use std::fmt;
use std::path::{Path, PathBuf};

use glam::DVec3;
use serde::Deserialize;
use toml::Spanned;

/// At most this many keyframes.
pub const MAX_KEYFRAMES: usize = 100_000;

/// One keyframe: where the eye is and what it looks at, at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyframe {
    /// Seconds into the run.
    pub time: f64,
    /// The eye, metres.
    pub position: DVec3,
    /// The point looked at, metres.
    pub target: DVec3,
}

/// The keyframes of a camera path, in increasing time.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraPath {
    /// The file they were read from.
    pub path: PathBuf,
    /// At least one, times strictly increasing.
    pub keyframes: Vec<Keyframe>,
}

/// A camera path file that cannot be used: the file, the line (when known) and why.
#[derive(Debug, thiserror::Error)]
pub struct CameraPathError {
    /// The file.
    pub path: PathBuf,
    /// The line, counted from 1.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for CameraPathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(
                f,
                "camera path {}:{line}: {}",
                self.path.display(),
                self.message
            ),
            None => write!(f, "camera path {}: {}", self.path.display(), self.message),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPath {
    keyframe: Option<Vec<Spanned<RawKeyframe>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKeyframe {
    time: Spanned<f64>,
    position: Spanned<Vec<f64>>,
    target: Spanned<Vec<f64>>,
}

impl CameraPath {
    /// Reads and checks the keyframes of the TOML file at `path` (a regular file, at most
    /// [`crate::input::TEXT_LIMIT`] bytes).
    pub fn load(path: &Path) -> Result<Self, CameraPathError> {
        let text = crate::input::read_text(path, crate::input::TEXT_LIMIT).map_err(|e| {
            CameraPathError {
                path: path.to_path_buf(),
                line: None,
                message: e.to_string(),
            }
        })?;
        Self::parse(&text, path)
    }

    /// Parses and checks the keyframes of `text`, read from `path` (for the messages).
    pub fn parse(text: &str, path: &Path) -> Result<Self, CameraPathError> {
        let error = |offset: Option<usize>, message: String| CameraPathError {
            path: path.to_path_buf(),
            line: offset.map(|o| line_of(text, o)),
            message,
        };
        let raw: RawPath = toml::from_str(text)
            .map_err(|e| error(e.span().map(|s| s.start), e.message().trim().to_string()))?;
        let raw = raw.keyframe.unwrap_or_default();
        if raw.is_empty() {
            return Err(error(
                None,
                "no keyframe: expected [[keyframe]] tables with time, position and target".into(),
            ));
        }
        if raw.len() > MAX_KEYFRAMES {
            return Err(error(
                None,
                format!("{} keyframes, at most {MAX_KEYFRAMES}", raw.len()),
            ));
        }
        let mut keyframes: Vec<Keyframe> = Vec::with_capacity(raw.len());
        for (i, k) in raw.iter().enumerate() {
            let n = i + 1;
            let k = k.get_ref();
            let point = |name: &str, v: &Spanned<Vec<f64>>| match v.get_ref().as_slice() {
                &[x, y, z] if [x, y, z].iter().all(|c| c.is_finite()) => Ok(DVec3::new(x, y, z)),
                other => Err(error(
                    Some(v.span().start),
                    format!(
                        "keyframe {n}: {name} must be [x, y, z], three finite numbers, got {other:?}"
                    ),
                )),
            };
            let time = *k.time.get_ref();
            if !time.is_finite() {
                return Err(error(
                    Some(k.time.span().start),
                    format!("keyframe {n}: time must be finite, got {time}"),
                ));
            }
            if let Some(previous) = keyframes.last()
                && time <= previous.time
            {
                return Err(error(
                    Some(k.time.span().start),
                    format!(
                        "keyframe {n}: time {time} s is not after keyframe {i}'s {} s (keyframes \
                         go in increasing time)",
                        previous.time
                    ),
                ));
            }
            let position = point("position", &k.position)?;
            let target = point("target", &k.target)?;
            if position.distance(target) <= 1e-6 * (1.0 + position.length()) {
                return Err(error(
                    Some(k.target.span().start),
                    format!("keyframe {n}: target must differ from position"),
                ));
            }
            keyframes.push(Keyframe {
                time,
                position,
                target,
            });
        }
        Ok(Self {
            path: path.to_path_buf(),
            keyframes,
        })
    }

    /// The eye and the target at `time` seconds.
    pub fn at(&self, time: f64) -> (DVec3, DVec3) {
        let k = &self.keyframes;
        let last = k.len() - 1;
        if time <= k[0].time || last == 0 {
            return (k[0].position, k[0].target);
        }
        if time >= k[last].time {
            return (k[last].position, k[last].target);
        }
        // The segment [i, i + 1] holding `time`.
        let i = k.partition_point(|f| f.time <= time) - 1;
        let (t0, t1) = (k[i].time, k[i + 1].time);
        let tangent = |j: usize, point: fn(&Keyframe) -> DVec3| {
            let (a, b) = (j.saturating_sub(1), (j + 1).min(last));
            (point(&k[b]) - point(&k[a])) / (k[b].time - k[a].time)
        };
        let h = t1 - t0;
        let s = (time - t0) / h;
        let (s2, s3) = (s * s, s * s * s);
        let hermite = |point: fn(&Keyframe) -> DVec3| {
            let (p0, p1) = (point(&k[i]), point(&k[i + 1]));
            let (m0, m1) = (tangent(i, point) * h, tangent(i + 1, point) * h);
            (2.0 * s3 - 3.0 * s2 + 1.0) * p0
                + (s3 - 2.0 * s2 + s) * m0
                + (-2.0 * s3 + 3.0 * s2) * p1
                + (s3 - s2) * m1
        };
        (hermite(|f| f.position), hermite(|f| f.target))
    }
}

/// The line (from 1) of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CameraPath, CameraPathError> {
        CameraPath::parse(text, Path::new("fly.toml"))
    }

    const THREE: &str = "\
[[keyframe]]
time = 0.0
position = [0, 0, 10]
target = [0, 100, 0]

[[keyframe]]
time = 2.0
position = [20, 0, 10]
target = [0, 100, 0]

[[keyframe]]
time = 3.0
position = [20, 20, 10]
target = [0, 100, 0]
";

    #[test]
    fn the_camera_passes_every_keyframe_and_holds_before_and_after() {
        let path = parse(THREE).unwrap();
        for k in &path.keyframes {
            let (eye, target) = path.at(k.time);
            assert!(eye.distance(k.position) < 1e-9 && target.distance(k.target) < 1e-9);
        }
        assert_eq!(path.at(-5.0).0, DVec3::new(0.0, 0.0, 10.0));
        assert_eq!(path.at(99.0).0, DVec3::new(20.0, 20.0, 10.0));
    }

    #[test]
    fn catmull_rom_by_hand() {
        // Segment 0 → 2 s, at 1 s (s = ½, h = 2): tangents (per second) m0 = (p1 − p0) / 2 =
        // (10, 0, 0) (one-sided), m1 = (p2 − p0) / 3 = (20/3, 20/3, 0); Hermite at ½:
        // ½ p0 + ⅛ h m0 + ½ p1 − ⅛ h m1 = (0 + 2.5 + 10 − 5/3, 0 + 0 + 0 − 5/3, 10).
        let path = parse(THREE).unwrap();
        let (eye, _) = path.at(1.0);
        let expected = DVec3::new(2.5 + 10.0 - 5.0 / 3.0, -5.0 / 3.0, 10.0);
        assert!(eye.distance(expected) < 1e-9, "{eye} vs {expected}");
        // The velocity is continuous at the middle keyframe.
        let e = 1e-6;
        let before = (path.at(2.0).0 - path.at(2.0 - e).0) / e;
        let after = (path.at(2.0 + e).0 - path.at(2.0).0) / e;
        assert!(before.distance(after) < 1e-3, "{before} vs {after}");
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_keyframe() {
        let cases: &[(&str, usize, &str)] = &[
            (
                "[[keyframe]]\ntime = 0\nposition = [0, 0]\ntarget = [1, 1, 1]\n",
                3,
                "keyframe 1: position must be [x, y, z]",
            ),
            (
                "[[keyframe]]\ntime = 0\nposition = [0, 0, 0]\ntarget = [0, 0, 0]\n",
                4,
                "target must differ",
            ),
            (
                "[[keyframe]]\ntime = 1\nposition = [0, 0, 0]\ntarget = [1, 1, 1]\n\
                 [[keyframe]]\ntime = 1\nposition = [0, 0, 0]\ntarget = [1, 1, 1]\n",
                6,
                "keyframe 2: time 1 s is not after keyframe 1's 1 s",
            ),
            (
                "[[keyframe]]\ntime = 0\nposition = [0, 0, 0]\ntarget = [1, 1, 1]\nfov = 3\n",
                5,
                "unknown field `fov`",
            ),
            (
                "[[keyframe]]\ntime = 0\nposition = [0, 0, 0]\n",
                1,
                "missing field `target`",
            ),
            ("[[keyframe]\n", 1, ""),
            (
                "[[keyframe]]\ntime = nan\nposition = [0, 0, 0]\ntarget = [1, 1, 1]\n",
                2,
                "time must be finite",
            ),
        ];
        for &(text, line, message) in cases {
            let e = parse(text).unwrap_err();
            let full = e.to_string();
            assert_eq!(e.line, Some(line), "{full}");
            assert!(
                full.starts_with(&format!("camera path fly.toml:{line}: ")),
                "{full}"
            );
            assert!(full.contains(message), "{full}");
        }
        let e = parse("").unwrap_err().to_string();
        assert!(e.contains("no keyframe"), "{e}");
    }
}
