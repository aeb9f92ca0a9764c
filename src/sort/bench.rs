//! Timing the full sort and the partial-sort steps with OpenCL profiling events
//! (`snowsim sort bench`, `cargo bench --bench sort`).

use std::time::{Duration, Instant};

use serde::Serialize;

use super::bitonic::BitonicSorter;
use super::error::Result;
use super::inputs::{self, RandomKey, Shape};
use super::keys::{KeyKind, Order};
use super::partial::{BlockPhase, LocalStep, PartialSorter};
use super::radix::RadixSorter;
use crate::cl::{Context, DeviceBuffer, Timeline};

/// How to time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BenchSettings {
    /// Timed runs of each operation, after the warm-up.
    pub iterations: u32,
    /// Untimed runs first (kernel compilation on first launch, caches, clocks).
    pub warmup: u32,
    /// Seed of the random keys.
    pub seed: u64,
    /// Key type.
    pub key: KeyKind,
    /// Sort order.
    pub order: Order,
}

impl Default for BenchSettings {
    fn default() -> Self {
        Self {
            iterations: 10,
            warmup: 2,
            seed: 1,
            key: KeyKind::U32,
            order: Order::Ascending,
        }
    }
}

/// Device times of repeated runs of one operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// Fastest run: sum of its kernels' profiled device times.
    pub best: Duration,
    /// Median run.
    pub median: Duration,
    /// Mean run.
    pub mean: Duration,
    /// Fastest run from the host: enqueue to `clFinish`, launch gaps included.
    pub best_wall: Duration,
    /// Kernel launches per run.
    pub launches: usize,
    /// Device time of the fastest run by kernel name (launches of one kernel summed), in
    /// order of first launch.
    pub per_kernel: Vec<(String, Duration)>,
}

/// One timed run: device time, host time, and the device time of each launch.
struct Run {
    device: Duration,
    wall: Duration,
    launches: Vec<(String, Duration)>,
}

impl Timing {
    fn from_runs(runs: Vec<Run>) -> Self {
        let mut device: Vec<Duration> = runs.iter().map(|r| r.device).collect();
        device.sort_unstable();
        let n = device.len().max(1);
        let fastest = runs.iter().min_by_key(|r| r.device);
        let mut per_kernel: Vec<(String, Duration)> = Vec::new();
        for (name, d) in fastest.map(|r| r.launches.as_slice()).unwrap_or_default() {
            match per_kernel.iter_mut().find(|(k, _)| k == name) {
                Some(entry) => entry.1 += *d,
                None => per_kernel.push((name.clone(), *d)),
            }
        }
        Self {
            best: device.first().copied().unwrap_or_default(),
            median: device.get(device.len() / 2).copied().unwrap_or_default(),
            mean: device.iter().sum::<Duration>() / n as u32,
            best_wall: runs.iter().map(|r| r.wall).min().unwrap_or_default(),
            launches: fastest.map_or(0, |r| r.launches.len()),
            per_kernel,
        }
    }
}

/// What one size measured.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeTimings {
    /// Pairs sorted.
    pub len: usize,
    /// Full sort of random pairs (the input is restored on the device before each run).
    pub full: Timing,
    /// The radix sort of the same pairs (values are the positions, so both sorts give the
    /// same result).
    pub radix: Timing,
    /// One merge step of the partial sort (even phase: every block), the usual frame.
    pub merge_step: Timing,
    /// One sort step of the partial sort (even phase): the thesis's local step, and what
    /// redistribution frames run after the redistribution.
    pub sort_step: Timing,
    /// One redistribution step alone.
    pub redistribute: Timing,
}

impl SizeTimings {
    /// Mean device cost (of medians) of one partial-sort frame with redistribution every
    /// `every` frames: `local` steps in the other frames, redistribution and a sort step in
    /// those.
    pub fn partial_frame(&self, every: u32, local: LocalStep) -> Duration {
        let step = match local {
            LocalStep::Merge => self.merge_step.median,
            LocalStep::Sort => self.sort_step.median,
        };
        if every == 0 {
            return step;
        }
        let special = self.redistribute.median + self.sort_step.median;
        (step * (every - 1) + special) / every
    }
}

/// Times the full sort, the radix sort, one merge and one sort step of the partial sort and
/// one redistribution step on `len` random pairs (values = indices).
pub fn time_size(
    full: &mut BitonicSorter,
    radix: &mut RadixSorter,
    partial: &mut PartialSorter,
    len: usize,
    settings: &BenchSettings,
) -> Result<SizeTimings> {
    match settings.key {
        KeyKind::U32 => time_typed::<u32>(full, radix, partial, len, settings),
        KeyKind::F32 => time_typed::<f32>(full, radix, partial, len, settings),
    }
}

fn time_typed<K: RandomKey>(
    full: &mut BitonicSorter,
    radix: &mut RadixSorter,
    partial: &mut PartialSorter,
    len: usize,
    settings: &BenchSettings,
) -> Result<SizeTimings> {
    let ctx: Context = full.context().clone();
    let keys: Vec<K> = inputs::keys(Shape::Random, len, settings.seed);
    let values: Vec<u32> = (0..len as u32).collect();
    let keys_src = DeviceBuffer::from_slice(&ctx, &keys)?;
    let values_src = DeviceBuffer::from_slice(&ctx, &values)?;
    let mut keys_buf = DeviceBuffer::<K>::uninit(&ctx, len)?;
    let mut values_buf = DeviceBuffer::<u32>::uninit(&ctx, len)?;
    let order = settings.order;

    let full_timing = repeat(&ctx, settings, |restore| {
        if restore {
            keys_buf.copy_from(&keys_src)?;
            values_buf.copy_from(&values_src)?;
            return Ok(None);
        }
        full.sort_pairs(&mut keys_buf, &mut values_buf, order)
            .map(Some)
    })?;
    let radix_timing = repeat(&ctx, settings, |restore| {
        if restore {
            keys_buf.copy_from(&keys_src)?;
            values_buf.copy_from(&values_src)?;
            return Ok(None);
        }
        radix
            .sort_pairs(&mut keys_buf, &mut values_buf, order)
            .map(Some)
    })?;

    // The partial-sort steps are sorting networks: their cost does not depend on the data.
    keys_buf.copy_from(&keys_src)?;
    values_buf.copy_from(&values_src)?;
    let mut local = |step| {
        repeat(&ctx, settings, |restore| {
            if restore {
                return Ok(None);
            }
            partial
                .local_step_on(
                    &mut keys_buf,
                    &mut values_buf,
                    order,
                    step,
                    BlockPhase::Even,
                )
                .map(Some)
        })
    };
    let sort_step = local(LocalStep::Sort)?;
    let merge_step = local(LocalStep::Merge)?;
    let redistribute = repeat(&ctx, settings, |restore| {
        if restore {
            return Ok(None);
        }
        partial
            .redistribute(&mut keys_buf, &mut values_buf, order)
            .map(Some)
    })?;
    Ok(SizeTimings {
        len,
        full: full_timing,
        radix: radix_timing,
        merge_step,
        sort_step,
        redistribute,
    })
}

/// Runs `op(true)` (untimed preparation, waited for) then `op(false)` (timed) for the warm-up
/// and the iterations.
fn repeat(
    ctx: &Context,
    settings: &BenchSettings,
    mut op: impl FnMut(bool) -> Result<Option<Timeline>>,
) -> Result<Timing> {
    let mut runs = Vec::new();
    for run in 0..settings.warmup.saturating_add(settings.iterations.max(1)) {
        op(true)?;
        ctx.finish()?;
        let start = Instant::now();
        let events = op(false)?.unwrap_or_default();
        ctx.finish()?;
        let elapsed = start.elapsed();
        let launches: Vec<(String, Duration)> = events
            .per_launch()?
            .into_iter()
            .map(|(_, kernel, d)| (kernel.to_string(), d))
            .collect();
        if run >= settings.warmup {
            runs.push(Run {
                device: launches.iter().map(|(_, d)| *d).sum(),
                wall: elapsed,
                launches,
            });
        }
    }
    Ok(Timing::from_runs(runs))
}

/// One CSV row of `snowsim sort bench`: a measurement and every setting needed to repeat it.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// Device name.
    pub device: String,
    /// Platform name.
    pub platform: String,
    /// Driver version.
    pub driver: String,
    /// Device OpenCL version.
    pub opencl_version: String,
    /// snowsim version that measured.
    pub snowsim_version: &'static str,
    /// `full_sort` (bitonic); `radix_sort` (its block, work-group and global bits are the
    /// radix sort's tile, work-group and 0); `partial_merge_step` or `partial_sort_step` (one local step of the
    /// partial sort, merging or sorting every block); `partial_redistribute` (one
    /// redistribution step); `partial_frame` (the mean frame of the partial sort's schedule,
    /// from the medians: local steps, and every `redistribute_every` frames a redistribution
    /// and a sort step).
    pub operation: &'static str,
    /// log2 of the length.
    pub log2_len: u32,
    /// Pairs.
    pub len: usize,
    /// Key type (`u32` values travel with the keys).
    pub key_type: KeyKind,
    /// Sort order.
    pub order: Order,
    /// Input shape.
    pub shape: Shape,
    /// Pairs per local-memory block.
    pub block_len: usize,
    /// Work-items per local work-group.
    pub work_group_size: usize,
    /// log2 of elements per work-item in the global passes.
    pub global_bits: u32,
    /// Redistribution period of the partial sort.
    pub redistribute_every: u32,
    /// What the partial sort's ordinary frames do (`partial_frame`).
    pub local_step: LocalStep,
    /// Timed runs.
    pub iterations: u32,
    /// Untimed warm-up runs.
    pub warmup: u32,
    /// Seed of the keys.
    pub seed: u64,
    /// Kernel launches per run.
    pub launches: usize,
    /// Fastest run, seconds of device time (sum of the kernels' profiled times).
    pub best_s: f64,
    /// Median run, seconds of device time.
    pub median_s: f64,
    /// Mean run, seconds of device time.
    pub mean_s: f64,
    /// Fastest run from the host (enqueue to finish), seconds.
    pub best_wall_s: f64,
    /// `len / best_s`.
    pub keys_per_s: f64,
    /// Median time over the median full sort of the same length.
    pub fraction_of_full_sort: f64,
}

/// The CSV rows of one size.
pub fn rows(
    full: &BitonicSorter,
    radix: &RadixSorter,
    partial: &PartialSorter,
    settings: &BenchSettings,
    t: &SizeTimings,
) -> Vec<BenchRow> {
    let info = full.context().info();
    let every = partial.redistribute_every();
    let frame = t.partial_frame(every, partial.local_step());
    let frame_timing = Timing {
        best: frame,
        median: frame,
        mean: frame,
        best_wall: Duration::ZERO,
        launches: 1,
        per_kernel: Vec::new(),
    };
    [
        ("full_sort", &t.full),
        ("radix_sort", &t.radix),
        ("partial_merge_step", &t.merge_step),
        ("partial_sort_step", &t.sort_step),
        ("partial_redistribute", &t.redistribute),
        ("partial_frame", &frame_timing),
    ]
    .into_iter()
    .map(|(operation, timing)| BenchRow {
        device: info.name.clone(),
        platform: info.platform.clone(),
        driver: info.driver_version.clone(),
        opencl_version: info.version.clone(),
        snowsim_version: env!("CARGO_PKG_VERSION"),
        operation,
        log2_len: t.len.max(1).ilog2(),
        len: t.len,
        key_type: settings.key,
        order: settings.order,
        shape: Shape::Random,
        block_len: if operation == "radix_sort" {
            radix.tile_len()
        } else {
            full.block_len()
        },
        work_group_size: if operation == "radix_sort" {
            radix.work_group_size()
        } else {
            full.work_group_size()
        },
        global_bits: if operation == "radix_sort" {
            0
        } else {
            full.global_bits()
        },
        redistribute_every: every,
        local_step: partial.local_step(),
        iterations: settings.iterations,
        warmup: settings.warmup,
        seed: settings.seed,
        launches: timing.launches,
        best_s: timing.best.as_secs_f64(),
        median_s: timing.median.as_secs_f64(),
        mean_s: timing.mean.as_secs_f64(),
        best_wall_s: timing.best_wall.as_secs_f64(),
        keys_per_s: rate(t.len, timing.best),
        fraction_of_full_sort: timing.median.as_secs_f64() / t.full.median.as_secs_f64().max(1e-12),
    })
    .collect()
}

/// `len` per second of `time`, 0 for a zero time.
pub fn rate(len: usize, time: Duration) -> f64 {
    let s = time.as_secs_f64();
    if s > 0.0 { len as f64 / s } else { 0.0 }
}
