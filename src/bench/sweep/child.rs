//! One repeat of a configuration: `snowsim run … --json` as a child process with a timeout,
//! its stdout parsed as the run's JSON report, its stderr captured.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::SweepError;

/// What `snowsim run --json` reports that a sweep keeps (see `Report` in `src/cli/run.rs`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct RunReport {
    /// Frames per second over the measured frames.
    pub fps: f64,
    /// Mean frame wall time, in ms.
    pub frame_ms: f64,
    /// Frames the means are over (warm-up left out).
    pub measured_frames: u64,
    /// Particles simulated.
    pub particles: u64,
    /// The interop path used (absent without rendering).
    #[serde(default)]
    pub interop: String,
    /// How particles were drawn (absent without rendering).
    #[serde(default)]
    pub particle_render: String,
    /// Every stage, as a mean per measured frame.
    pub stages: Vec<StageReport>,
    /// The parcels' split across devices (`--snow-devices`), the snow's own device first;
    /// empty when not split.
    #[serde(default)]
    pub snow_devices: Vec<ShareReport>,
}

/// One device of [`RunReport::snow_devices`].
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ShareReport {
    /// The device's index and name.
    pub device: String,
    /// The parcels it held.
    pub particles: u64,
}

/// One stage of [`RunReport::stages`].
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct StageReport {
    /// Its name, e.g. `sort.local`.
    pub stage: String,
    /// Time busy per measured frame, in ms.
    pub busy_ms: f64,
}

/// How a repeat ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It ran and reported.
    Ok(RunReport),
    /// It failed: `status` is `error`, `timeout` or `killed`, `reason` says why.
    Failed {
        /// The row's status.
        status: &'static str,
        /// Why (the child's error line, or its last line on stderr).
        reason: String,
    },
}

/// Runs `exe args…`, killing it after `timeout`; every line it writes on stderr goes to
/// `on_stderr` as it comes. Errors only if the process cannot be started.
pub fn run_child(
    exe: &Path,
    args: &[OsString],
    timeout: Duration,
    on_stderr: &(dyn Fn(&str) + Sync),
) -> Result<Outcome, SweepError> {
    let spawn_error = |error: std::io::Error| SweepError::Spawn {
        exe: exe.to_path_buf(),
        error: error.to_string(),
    };
    let mut command = Command::new(exe);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A group of its own, so that a timeout kills whatever it started too (a process left
    // holding its pipes would keep the sweep waiting).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn().map_err(spawn_error)?;
    let (Some(mut stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(spawn_error(std::io::Error::other("no pipes to the child")));
    };
    let start = Instant::now();
    let (status, timed_out, out, lines) = std::thread::scope(|scope| {
        let out = scope.spawn(move || {
            let mut bytes = Vec::new();
            let _ = stdout.read_to_end(&mut bytes);
            bytes
        });
        let err = scope.spawn(move || {
            let mut lines = Vec::new();
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                on_stderr(&text);
                lines.push(text);
                line.clear();
            }
            lines
        });
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if start.elapsed() >= timeout => {
                    timed_out = true;
                    kill_group(child.id());
                    let _ = child.kill();
                    break child.wait();
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(e);
                }
            }
        };
        let out = out.join().unwrap_or_default();
        let lines = err.join().unwrap_or_default();
        (status, timed_out, out, lines)
    });
    let status = status.map_err(spawn_error)?;
    Ok(outcome(status, timed_out, timeout, &out, &lines))
}

/// The outcome of a child that exited with `status` after writing `out` and `lines`.
fn outcome(
    status: ExitStatus,
    timed_out: bool,
    timeout: Duration,
    out: &[u8],
    lines: &[String],
) -> Outcome {
    let last = reason(lines);
    if timed_out {
        return Outcome::Failed {
            status: "timeout",
            reason: format!(
                "no result after {} s, killed{}",
                timeout.as_secs_f64(),
                last.map(|l| format!(" (last line: {l})"))
                    .unwrap_or_default()
            ),
        };
    }
    if let Some(signal) = signal_of(status) {
        return Outcome::Failed {
            status: "killed",
            reason: format!(
                "killed by signal {signal}{}{}",
                signal_name(signal)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default(),
                last.map(|l| format!(": {l}")).unwrap_or_default()
            ),
        };
    }
    if !status.success() {
        return Outcome::Failed {
            status: "error",
            reason: last.map_or_else(|| format!("exited with {status}"), str::to_string),
        };
    }
    match serde_json::from_slice::<RunReport>(out) {
        Ok(report) => Outcome::Ok(report),
        Err(e) => Outcome::Failed {
            status: "error",
            reason: format!("its output is not a run's JSON report: {e}"),
        },
    }
}

/// Why a child failed, from its stderr: the text of its last `error:` line, else its last
/// non-empty line.
pub fn reason(lines: &[String]) -> Option<&str> {
    let lines = || {
        lines
            .iter()
            .rev()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
    };
    lines()
        .find_map(|l| l.strip_prefix("error:").map(str::trim))
        .or_else(|| lines().next())
}

/// Kills the process group `pid` leads (the child, not yet reaped, and what it started).
#[cfg(unix)]
fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) with a negative pid signals the group the child leads; the child is
        // not reaped yet, so its id (and group id) cannot have been reused.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: u32) {}

#[cfg(unix)]
fn signal_of(status: ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

#[cfg(not(unix))]
fn signal_of(_status: ExitStatus) -> Option<i32> {
    None
}

/// The usual name of the signals a driver or the sweep kills a process with.
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_error_line_else_the_last_line() {
        let lines: Vec<String> = ["scene: x", "error: out of memory", "  hint: fewer", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(reason(&lines), Some("out of memory"));
        let lines = vec!["a".to_string(), "pocl: assertion failed".to_string()];
        assert_eq!(reason(&lines), Some("pocl: assertion failed"));
        assert_eq!(reason(&[]), None);
    }

    #[test]
    fn a_shell_child_times_out_is_killed_or_fails() {
        let sh = Path::new("/bin/sh");
        let quiet = |_: &str| {};
        let run = |script: &str, secs: u64| {
            run_child(
                sh,
                &["-c".into(), script.into()],
                Duration::from_secs(secs),
                &quiet,
            )
            .unwrap()
        };
        let t = Instant::now();
        match run("echo started >&2; sleep 30", 1) {
            Outcome::Failed { status, reason } => {
                assert_eq!(status, "timeout");
                assert!(reason.contains("last line: started"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(10));
        match run("echo 'assertion failed' >&2; kill -ABRT $$", 10) {
            Outcome::Failed { status, reason } => {
                assert_eq!(status, "killed");
                assert!(
                    reason.contains("SIGABRT") && reason.contains("assertion"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        match run("echo 'error: no' >&2; exit 1", 10) {
            Outcome::Failed { status, reason } => {
                assert_eq!((status, reason.as_str()), ("error", "no"))
            }
            other => panic!("{other:?}"),
        }
        match run("echo '{\"fps\": 1}'", 10) {
            Outcome::Failed { status, reason } => {
                assert_eq!(status, "error");
                assert!(reason.contains("not a run's JSON"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        let json = r#"{"fps": 2.5, "frame_ms": 400.0, "measured_frames": 3, "particles": 8,
            "interop": "copy", "stages": [{"stage": "snow.step", "busy_ms": 1.5}]}"#;
        match run(&format!("echo '{json}'"), 10) {
            Outcome::Ok(r) => {
                assert_eq!((r.fps, r.measured_frames, r.particles), (2.5, 3, 8));
                assert_eq!(
                    (r.interop.as_str(), r.particle_render.as_str()),
                    ("copy", "")
                );
                assert_eq!(r.stages[0].busy_ms, 1.5);
            }
            other => panic!("{other:?}"),
        }
    }
}
