//! What a gml launch costs: a chain of small direct-loop kernels enqueued without waiting,
//! against the same kernels launched one by one (each waited for), with profiling on and off.
//!
//! Per configuration: host time per enqueue (what the CPU spends in `Gml::enqueue`), wall time
//! per kernel from the first enqueue to `clFinish`, and with profiling the device time per
//! kernel and the gap between consecutive kernels (the chain's span minus its busy time, over
//! the launches). A solver iteration is a few such kernels, so this is its floor.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cl::{Context, ContextOptions, DeviceEntry};
use crate::gml::{Access, Gml, GmlError, KernelSpec, MeshKind};

/// How launches were made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// `Gml::enqueue` into one timeline, one `clFinish` at the end.
    Chain,
    /// The same chain into a timeline that keeps no events (the driver creates none), on a
    /// queue that profiles: what holding an event per launch costs.
    ChainNoEvents,
    /// `Gml::launch`: each kernel waited for before the next is enqueued.
    Waited,
}

/// One configuration's measurement.
#[derive(Clone, Debug, Serialize)]
pub struct LaunchResult {
    /// Vertices the kernel loops over.
    pub vertices: usize,
    /// Whether the queue profiled every command.
    pub profiling: bool,
    /// How the kernels were launched.
    pub mode: Mode,
    /// Kernels launched (timed).
    pub launches: usize,
    /// Host microseconds spent enqueuing each kernel (chain) or launching and waiting (waited).
    pub host_us_per_launch: f64,
    /// Wall-clock microseconds per kernel, first enqueue to the end of the last.
    pub wall_us_per_kernel: f64,
    /// Device microseconds per kernel from profiling (`None` without it).
    pub device_us_per_kernel: Option<f64>,
    /// Microseconds between consecutive kernels on the device (chain with profiling only).
    pub gap_us_per_kernel: Option<f64>,
}

/// Runs every configuration: each vertex count, profiling on and off, chain and waited.
pub fn run(
    entry: &DeviceEntry,
    vertex_counts: &[usize],
    launches: usize,
) -> Result<Vec<LaunchResult>, GmlError> {
    let mut results = Vec::new();
    for &vertices in vertex_counts {
        for profiling in [true, false] {
            let context = Context::with_options(
                entry,
                &ContextOptions {
                    profiling,
                    ..ContextOptions::default()
                },
            )?;
            let mut bench = Bench::new(context, vertices)?;
            let modes: &[Mode] = if profiling {
                &[Mode::Chain, Mode::ChainNoEvents, Mode::Waited]
            } else {
                &[Mode::Chain, Mode::Waited]
            };
            for &mode in modes {
                bench.measure(mode, launches.min(20))?; // warm-up: builds, uploads, caches
                results.push(bench.measure(mode, launches)?);
            }
        }
    }
    Ok(results)
}

/// One instance with a vertex field and a small direct kernel over it.
struct Bench {
    gml: Gml,
    kernel: crate::gml::KernelId,
    vertices: usize,
}

impl Bench {
    fn new(context: Context, vertices: usize) -> Result<Self, GmlError> {
        let mut gml = Gml::with_context(context);
        gml.new_mesh(MeshKind::Vertices, vertices)?;
        let u = gml.new_solution::<f32>(MeshKind::Vertices, 1, "U")?;
        let kernel = gml.compile(
            KernelSpec::new("relax", MeshKind::Vertices)
                .access(Access::read_write(u))
                .body("VerU = VerU * 0.999f + 0.001f;"),
        )?;
        Ok(Self {
            gml,
            kernel,
            vertices,
        })
    }

    fn measure(&mut self, mode: Mode, launches: usize) -> Result<LaunchResult, GmlError> {
        let context = self.gml.context().clone();
        let profiling = context.profiling();
        let mut timeline = match mode {
            Mode::ChainNoEvents => crate::cl::Timeline::new(false),
            _ => context.timeline(),
        };
        timeline.stage("bench.relax");
        context.finish()?;
        let start = Instant::now();
        let mut device = Duration::ZERO;
        match mode {
            Mode::Chain | Mode::ChainNoEvents => {
                for _ in 0..launches {
                    self.gml.enqueue(self.kernel, &mut timeline)?;
                }
            }
            Mode::Waited => {
                for _ in 0..launches {
                    device += self.gml.launch(self.kernel)?;
                }
            }
        }
        let host = start.elapsed();
        context.finish()?;
        let wall = start.elapsed();
        let per = |d: Duration| d.as_secs_f64() * 1e6 / launches.max(1) as f64;
        let (device_us, gap_us) = match (profiling, mode) {
            (false, _) | (_, Mode::ChainNoEvents) => (None, None),
            (true, Mode::Waited) => (Some(per(device)), None),
            (true, Mode::Chain) => {
                let stage = timeline.resolve()?.into_iter().next().unwrap_or_default();
                let gaps = stage.gaps().as_secs_f64() * 1e6 / (launches.max(2) - 1) as f64;
                (Some(per(stage.busy)), Some(gaps))
            }
        };
        Ok(LaunchResult {
            vertices: self.vertices,
            profiling,
            mode,
            launches,
            host_us_per_launch: per(host),
            wall_us_per_kernel: per(wall),
            device_us_per_kernel: device_us,
            gap_us_per_kernel: gap_us,
        })
    }
}
