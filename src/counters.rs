//! Timing counters shared by every part of a frame: named stages (`wind.advect`,
//! `sort.merge`, `render.draw`, …) with the device time of their kernels from OpenCL profiling
//! and, for host-side stages, wall time.
//!
//! The types here hold numbers only; [`crate::cl::Timeline`] fills them from profiling events,
//! once per frame, and `snowsim run`, `snowsim bench` and their JSON output print them.

use std::time::Duration;

/// Names of the host-side stages every frame has.
pub mod stage {
    /// Enqueuing the simulation's kernels and waiting for them (`clFinish`), wall time.
    pub const KERNELS: &str = "sim.kernels";
    /// Bringing the kernels' output to OpenGL (share: acquire and release; copy: read back into
    /// the mapped GL buffer), wall time.
    pub const TRANSFER: &str = "interop.transfer";
    /// Copy mode's part of [`TRANSFER`]: reading the device buffer back to the host, wall time.
    pub const READBACK: &str = "interop.readback";
    /// Copy mode's part of [`TRANSFER`]: handing the host copy to OpenGL, wall time.
    pub const UPLOAD: &str = "interop.upload";
    /// Enqueuing the drawing, wall time (GL draws while the next frame is computed).
    pub const DRAW: &str = "render.draw";
    /// Swapping buffers (window only), wall time.
    pub const PRESENT: &str = "render.present";
    /// The splat kernels (`--particle-render splat`): a device stage, from OpenCL profiling.
    pub const SPLAT: &str = "splat";
    /// The splat composite: GPU time from a `GL_TIME_ELAPSED` query
    /// (kept with the host stages: it is not OpenCL's).
    pub const COMPOSITE: &str = "render.composite";
    /// The whole frame's drawing on the GPU (shadow map when due, terrain, veil, particles,
    /// views): the span between two `GL_TIMESTAMP` queries around it, read frames later
    /// without waiting (a host stage: it is not OpenCL's). When the scene is drawn before the
    /// host waits for the kernels, the span includes what GL waited for the overlays.
    pub const DRAW_GPU: &str = "render.gpu";
}

/// What one stage cost in one frame (or one chain of launches).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct StageTime {
    /// The stage's name, `module.step`.
    pub stage: String,
    /// Whether the times are device times from profiling (else host wall time).
    pub device: bool,
    /// Kernel launches (device stages) or 1 (host stages).
    pub launches: u64,
    /// Sum of the kernels' device times (`CL_PROFILING_COMMAND_START..END`), or the wall time
    /// of a host stage.
    #[serde(serialize_with = "as_ms", rename = "busy_ms")]
    pub busy: Duration,
    /// From the first kernel's start to the last one's end: `span − busy` is what the gaps
    /// between launches cost. Equal to `busy` for host stages.
    #[serde(serialize_with = "as_ms", rename = "span_ms")]
    pub span: Duration,
}

impl StageTime {
    /// A stage measured on the host's clock.
    pub fn host(stage: &str, wall: Duration) -> Self {
        Self {
            stage: stage.to_string(),
            device: false,
            launches: 1,
            busy: wall,
            span: wall,
        }
    }

    /// Time between launches that the device spent idle or launching: `span − busy`.
    pub fn gaps(&self) -> Duration {
        self.span.saturating_sub(self.busy)
    }
}

fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// Stage times summed over many frames, in the order the stages first appeared.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Counters {
    /// Frames added.
    pub frames: u64,
    /// One entry per stage: launches, busy and span summed over the frames.
    pub stages: Vec<StageTime>,
}

impl Counters {
    /// Adds one frame's stage times.
    pub fn add_frame(&mut self, stages: &[StageTime]) {
        self.frames += 1;
        self.add(stages);
    }

    /// Adds stage times without counting a frame (a chain of launches outside any frame).
    pub fn add(&mut self, stages: &[StageTime]) {
        for time in stages {
            match self.stages.iter_mut().find(|s| s.stage == time.stage) {
                Some(total) => {
                    total.launches += time.launches;
                    total.busy += time.busy;
                    total.span += time.span;
                }
                None => self.stages.push(time.clone()),
            }
        }
    }

    /// The totals of `stage`, if it ran.
    pub fn get(&self, stage: &str) -> Option<&StageTime> {
        self.stages.iter().find(|s| s.stage == stage)
    }

    /// Sum of every stage's busy time whose name starts with `prefix` (`""` for all).
    pub fn busy(&self, prefix: &str) -> Duration {
        self.stages
            .iter()
            .filter(|s| s.stage.starts_with(prefix))
            .map(|s| s.busy)
            .sum()
    }

    /// Sum of the device stages' busy times.
    pub fn device_busy(&self) -> Duration {
        self.stages
            .iter()
            .filter(|s| s.device)
            .map(|s| s.busy)
            .sum()
    }

    /// Busy time of `stage`, zero if it never ran.
    pub fn busy_of(&self, stage: &str) -> Duration {
        self.get(stage).map_or(Duration::ZERO, |s| s.busy)
    }

    /// Mean per frame of every stage (the totals divided by the frame count).
    pub fn per_frame(&self) -> Vec<StageTime> {
        let n = self.frames.max(1);
        self.stages
            .iter()
            .map(|s| StageTime {
                stage: s.stage.clone(),
                device: s.device,
                launches: s.launches / n,
                busy: s.busy / n as u32,
                span: s.span / n as u32,
            })
            .collect()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}

/// What the host's scheduler gave the calling thread over a stretch of work: its own CPU time,
/// the times it was taken off its core against its will, and the time the machine's hypervisor
/// kept from every CPU (steal). A stretch whose wall time is far above its CPU time, with
/// switches or steal, was slow because the thread did not run, not because its work grew
/// (`benches/RESULTS.md`, the ground refresh's spread).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ThreadUsage {
    /// The thread's CPU time, ms: `user_ms` + `system_ms`.
    pub cpu_ms: f64,
    /// Of it, in the program's own code (and in a driver's spinning waits), ms.
    pub user_ms: f64,
    /// Of it, in the kernel for the thread (page faults on fresh memory, system calls), ms.
    pub system_ms: f64,
    /// Page faults served without reading a file (fresh or moved memory).
    pub minor_faults: u64,
    /// Involuntary context switches of the thread (preempted by another task).
    pub involuntary_switches: u64,
    /// Voluntary context switches (it waited: a device wait, a lock, a sleep).
    pub voluntary_switches: u64,
    /// Steal time summed over the machine's CPUs, ms (`/proc/stat`, in the kernel's clock
    /// ticks, 10 ms at the usual 100 Hz; 0 where the kernel does not report it).
    pub steal_ms: f64,
}

impl ThreadUsage {
    /// The calling thread's counters now (zeros where the platform has none).
    pub fn now() -> Self {
        let c = thread_counters();
        Self {
            cpu_ms: c.user_ms + c.system_ms,
            user_ms: c.user_ms,
            system_ms: c.system_ms,
            minor_faults: c.minor_faults,
            involuntary_switches: c.involuntary,
            voluntary_switches: c.voluntary,
            steal_ms: steal_ms(),
        }
    }

    /// What changed from `self` (taken earlier on the same thread) to now.
    pub fn elapsed(&self) -> Self {
        let now = Self::now();
        Self {
            cpu_ms: now.cpu_ms - self.cpu_ms,
            user_ms: now.user_ms - self.user_ms,
            system_ms: now.system_ms - self.system_ms,
            minor_faults: now.minor_faults.saturating_sub(self.minor_faults),
            involuntary_switches: now
                .involuntary_switches
                .saturating_sub(self.involuntary_switches),
            voluntary_switches: now
                .voluntary_switches
                .saturating_sub(self.voluntary_switches),
            steal_ms: (now.steal_ms - self.steal_ms).max(0.0),
        }
    }
}

impl std::ops::Add for ThreadUsage {
    type Output = Self;

    /// Two stretches' usage together.
    fn add(self, o: Self) -> Self {
        Self {
            cpu_ms: self.cpu_ms + o.cpu_ms,
            user_ms: self.user_ms + o.user_ms,
            system_ms: self.system_ms + o.system_ms,
            minor_faults: self.minor_faults + o.minor_faults,
            involuntary_switches: self.involuntary_switches + o.involuntary_switches,
            voluntary_switches: self.voluntary_switches + o.voluntary_switches,
            steal_ms: self.steal_ms + o.steal_ms,
        }
    }
}

/// A thread's counters as `getrusage` gives them.
#[derive(Default)]
struct RawCounters {
    user_ms: f64,
    system_ms: f64,
    minor_faults: u64,
    involuntary: u64,
    voluntary: u64,
}

/// The calling thread's counters (zeros where the platform has none).
#[cfg(target_os = "linux")]
fn thread_counters() -> RawCounters {
    // SAFETY: getrusage writes one rusage into the zeroed value it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return RawCounters::default();
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 * 1e-3;
    let count = |n: libc::c_long| u64::try_from(n).unwrap_or(0);
    RawCounters {
        user_ms: ms(usage.ru_utime),
        system_ms: ms(usage.ru_stime),
        minor_faults: count(usage.ru_minflt),
        involuntary: count(usage.ru_nivcsw),
        voluntary: count(usage.ru_nvcsw),
    }
}

#[cfg(not(target_os = "linux"))]
fn thread_counters() -> RawCounters {
    RawCounters::default()
}

/// The machine's steal time over all CPUs, ms: the eighth number of `/proc/stat`'s `cpu` line,
/// in the kernel's clock ticks (`sysconf(_SC_CLK_TCK)` a second); 0 where there is none.
fn steal_ms() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return 0.0;
    };
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ms_per_tick = if hz > 0 { 1e3 / hz as f64 } else { 10.0 };
    stat.lines()
        .next()
        .filter(|l| l.starts_with("cpu "))
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|t| t.parse::<f64>().ok())
        .map_or(0.0, |ticks| ticks * ms_per_tick)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_sum_per_stage_in_first_seen_order() {
        let ms = Duration::from_millis;
        let mut c = Counters::default();
        let frame = |a: u64, b: u64| {
            vec![
                StageTime {
                    stage: "wind.advect".into(),
                    device: true,
                    launches: 2,
                    busy: ms(a),
                    span: ms(a + 1),
                },
                StageTime::host("render.draw", ms(b)),
            ]
        };
        c.add_frame(&frame(3, 5));
        c.add_frame(&frame(5, 7));
        assert_eq!(c.frames, 2);
        let advect = c.get("wind.advect").unwrap();
        assert_eq!(
            (advect.launches, advect.busy, advect.span),
            (4, ms(8), ms(10))
        );
        assert_eq!(advect.gaps(), ms(2));
        assert_eq!(c.stages[1].stage, "render.draw");
        assert_eq!(c.busy("wind."), ms(8));
        assert_eq!(c.busy(""), ms(20));
        assert_eq!(c.device_busy(), ms(8));
        assert_eq!(c.per_frame()[1].busy, ms(6));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_threads_usage_counts_its_own_work_and_its_waits() {
        let start = ThreadUsage::now();
        let wall = std::time::Instant::now();
        // Work until the thread's own CPU clock has advanced 20 ms.
        let mut x = 0u64;
        while start.elapsed().cpu_ms < 20.0 {
            // A few milliseconds of arithmetic between the reads, which are system calls.
            for _ in 0..2_000_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let worked = start.elapsed();
        // The CPU time cannot outrun the wall clock (the kernel's accounting rounds to its
        // tick), and arithmetic is the program's own time, not the kernel's.
        assert!(
            worked.cpu_ms <= wall.elapsed().as_secs_f64() * 1e3 + 5.0,
            "{worked:?}"
        );
        assert!(worked.user_ms > worked.system_ms, "{worked:?}");
        assert!((worked.user_ms + worked.system_ms - worked.cpu_ms).abs() < 1e-9);
        let before = ThreadUsage::now();
        std::thread::sleep(Duration::from_millis(30));
        let slept = before.elapsed();
        assert!(slept.voluntary_switches >= 1, "{slept:?}");
        assert!(slept.cpu_ms < 15.0, "{slept:?}");
        // Touching 64 MiB of fresh memory faults its pages in (at least one per 2 MiB, the
        // largest page the kernel may give).
        let before = ThreadUsage::now();
        let mut fresh = vec![0u8; 64 << 20];
        for page in fresh.chunks_mut(4096) {
            page[0] = 1;
        }
        std::hint::black_box(&fresh);
        assert!(
            before.elapsed().minor_faults >= 32,
            "{:?}",
            before.elapsed()
        );
    }
}
