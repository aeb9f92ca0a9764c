//! `snowsim sort …`: validate and time the device sorts, and watch the partial sort work.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde::Serialize;
use snowsim::budget::{Budget, Estimate, bytes_of, check_host_and_device};
use snowsim::cl::{Context, DeviceBuffer};
use snowsim::output::{self, AtomicFile};
use snowsim::sort::bench::{self, BenchSettings};
use snowsim::sort::check::{self, drift_keys};
use snowsim::sort::inputs::{self, Shape, SplitMix64};
use snowsim::sort::{
    BitonicSorter, BlockPhase, DEFAULT_REDISTRIBUTE_EVERY, KeyKind, LocalStep, MAX_LEN, Order,
    PartialConfig, PartialSorter, RadixSorter, SortConfig, Sortedness,
};

use super::DeviceArg;
use super::console::{ConsoleError, outln};

/// The `sort` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check the full sort against the CPU's slice::sort_by on random, sorted, reversed,
    /// all-equal and few-unique inputs of many lengths (0 to 2^16+1), u32 and f32 keys, both
    /// orders, with values and with indices applied to payload arrays; and the partial sort on
    /// static and drifting arrays. Exits with status 1 on any mismatch.
    Check(CheckArgs),
    /// Time the full sort and one partial-sort step at each power-of-two size with OpenCL
    /// profiling events (device time, sum of all kernels of one sort), after a warm-up.
    Bench(BenchArgs),
    /// Run the partial sort frame after frame on drifting keys and print how sorted the array
    /// is after each frame.
    Evolve(EvolveArgs),
}

/// Kernel settings shared by the subcommands.
#[derive(Debug, Clone, clap::Args)]
pub struct KernelArgs {
    /// Pairs sorted in local memory by one work-group (a power of two, at least 64). Default:
    /// the largest the device allows, at most 4096.
    #[arg(long)]
    block_len: Option<usize>,
    /// log2 of the elements one work-item owns in a global merge pass (1 to 6). Default: 6 on
    /// NVIDIA GPUs, 5 elsewhere.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=6))]
    global_bits: Option<u32>,
}

/// A sort error with `--block-len` named where the block length asked for is at fault.
fn block_len_named(error: snowsim::sort::SortError) -> anyhow::Error {
    match error {
        snowsim::sort::SortError::BlockLen { requested, .. } => {
            anyhow::Error::new(error).context(format!("--block-len {requested}"))
        }
        other => other.into(),
    }
}

impl KernelArgs {
    fn config(&self) -> SortConfig {
        SortConfig {
            block_len: self.block_len,
            global_bits: self.global_bits,
        }
    }
}

/// Options of `snowsim sort check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    device: DeviceArg,
    #[command(flatten)]
    kernel: KernelArgs,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Skip the cases longer than this (for slow devices).
    #[arg(long)]
    max_len: Option<usize>,
}

/// Options of `snowsim sort bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    device: DeviceArg,
    #[command(flatten)]
    kernel: KernelArgs,
    /// Smallest size, as log2 of the number of pairs.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=31))]
    min_log2: u32,
    /// Largest size, as log2 of the number of pairs.
    #[arg(long, default_value_t = 22, value_parser = clap::value_parser!(u32).range(1..=31))]
    max_log2: u32,
    /// Timed runs of each operation per size (1 to 100000: every run's kernel times are kept).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=MAX_RUNS))]
    iterations: u32,
    /// Untimed runs before the timed ones (0 to 100000).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=MAX_RUNS))]
    warmup: u32,
    /// Key type (u32 values always travel with the keys).
    #[arg(long, value_enum, default_value_t = KeyArg::U32)]
    key: KeyArg,
    /// Sort order.
    #[arg(long, value_enum, default_value_t = OrderArg::Ascending)]
    order: OrderArg,
    /// Redistribution period used for the mean partial-sort frame cost.
    #[arg(long, default_value_t = DEFAULT_REDISTRIBUTE_EVERY)]
    redistribute_every: u32,
    /// What the partial sort's ordinary frames do, for the mean frame cost.
    #[arg(long, value_enum, default_value_t = LocalStepArg::Merge)]
    local_step: LocalStepArg,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write one CSV row per size and operation to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Replace an existing --csv file that this command did not write (without it the command
    /// refuses to start).
    #[arg(long)]
    force: bool,
    /// Also print the full sort's device time per kernel (fastest run) at each size.
    #[arg(long)]
    per_kernel: bool,
}

/// Options of `snowsim sort evolve`.
#[derive(Debug, clap::Args)]
pub struct EvolveArgs {
    #[command(flatten)]
    device: DeviceArg,
    #[command(flatten)]
    kernel: KernelArgs,
    /// Number of pairs (u32 keys, indices as values), 1 to 2^31.
    #[arg(long, default_value_t = 1 << 18, value_parser = parse_len)]
    len: usize,
    /// Frames to run (at least 1).
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..))]
    frames: u64,
    /// Start from random keys, or from keys sorted by a full sort.
    #[arg(long, value_enum, default_value_t = StartArg::Random)]
    start: StartArg,
    /// Per-frame drift of each key, in mean key spacings (about that many sorted positions),
    /// 0 to 2^31; 0 keeps the keys still.
    #[arg(long, default_value_t = 0.0, value_parser = parse_drift)]
    drift: f64,
    /// Fraction of keys replaced by fresh random keys each frame (respawned particles), 0 to 1.
    #[arg(long, default_value_t = 0.0, value_parser = parse_fraction)]
    respawn: f64,
    /// Run the redistribution step (and a block sort) every this many frames (0: never).
    #[arg(long, default_value_t = DEFAULT_REDISTRIBUTE_EVERY)]
    redistribute_every: u32,
    /// What the other frames do: merge the blocks' sorted halves, or sort the blocks from
    /// scratch (the thesis's step).
    #[arg(long, value_enum, default_value_t = LocalStepArg::Merge)]
    local_step: LocalStepArg,
    /// Seed of the keys and the drift.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write one CSV row per frame to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Replace an existing --csv file that this command did not write (without it the command
    /// refuses to start).
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum KeyArg {
    U32,
    F32,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum OrderArg {
    Ascending,
    Descending,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LocalStepArg {
    Merge,
    Sort,
}

impl From<LocalStepArg> for LocalStep {
    fn from(arg: LocalStepArg) -> Self {
        match arg {
            LocalStepArg::Merge => LocalStep::Merge,
            LocalStepArg::Sort => LocalStep::Sort,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum StartArg {
    Random,
    Sorted,
}

/// The most timed or warm-up runs of `sort bench`: each run keeps its kernels' times (a few
/// kilobytes), and `warmup + iterations` must not wrap a `u32`.
const MAX_RUNS: i64 = 100_000;

/// Parses `--len`: 1 to [`MAX_LEN`] pairs (the kernels use 32-bit positions).
fn parse_len(text: &str) -> Result<usize, String> {
    let len: usize = text.trim().parse().map_err(|e| format!("`{text}`: {e}"))?;
    if (1..=MAX_LEN).contains(&len) {
        Ok(len)
    } else {
        Err(format!("must be 1 to {MAX_LEN} (2^31) pairs, got {len}"))
    }
}

/// Parses a real in `min..=max`; NaN and infinities are refused with the range (`nan` and
/// `inf` parse as `f64`, and would drift every key to an end or respawn none silently).
fn parse_real_in(text: &str, min: f64, max: f64, range: &str) -> Result<f64, String> {
    let value: f64 = text.trim().parse().map_err(|e| format!("`{text}`: {e}"))?;
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(format!("must be a number from {range}, got {text}"))
    }
}

/// Parses `--drift`: 0 to 2^31 key spacings (beyond the array's length every key may move
/// anywhere already).
fn parse_drift(text: &str) -> Result<f64, String> {
    parse_real_in(text, 0.0, MAX_LEN as f64, "0 to 2147483648 (2^31)")
}

/// Parses `--respawn`: a fraction, 0 to 1.
fn parse_fraction(text: &str) -> Result<f64, String> {
    parse_real_in(text, 0.0, 1.0, "0 to 1")
}

/// The first columns of `sort bench --csv`'s header ([`bench::BenchRow`]).
const BENCH_CSV: output::FileKind = output::FileKind::Csv("device,platform,driver,");

/// The first columns of `sort evolve --csv`'s header ([`FrameRow`]).
const EVOLVE_CSV: output::FileKind = output::FileKind::Csv("frame,redistributed,");

/// Checks a `--csv` output against the output rule ([`output::rule`]) before any work: it can
/// be written, and an existing file there is replaced only when it is this command's CSV, or
/// with `--force`.
fn check_csv_output(
    path: Option<&Path>,
    kind: output::FileKind,
    force: bool,
) -> anyhow::Result<()> {
    if let Some(path) = path {
        output::OutputPlan::new(force)
            .file("--csv", path, kind)
            .check()?;
    }
    Ok(())
}

/// Starts a CSV output: checks the path first and writes atomically (the file appears, whole,
/// when the command ends well).
fn csv_writer(path: Option<&Path>) -> anyhow::Result<Option<csv::Writer<AtomicFile>>> {
    path.map(|p| Ok(csv::Writer::from_writer(AtomicFile::create(p)?)))
        .transpose()
}

/// Flushes and commits a CSV output.
fn finish_csv(writer: Option<csv::Writer<AtomicFile>>) -> anyhow::Result<()> {
    if let Some(writer) = writer {
        let file = writer
            .into_inner()
            .map_err(|e| anyhow::anyhow!("cannot write CSV: {}", e.error()))?;
        file.commit()?;
    }
    Ok(())
}

/// Host and device bytes of `sort bench` at its largest size: keys and values on the host;
/// on the device the input copies, the buffers sorted, the bitonic sorter's 8-byte scratch and
/// the radix sorter's.
fn check_bench_memory(args: &BenchArgs, device: &snowsim::cl::DeviceInfo) -> anyhow::Result<()> {
    let len = 1u64 << args.max_log2;
    let setting = format!("`--max-log2 {}` ({len} pairs)", args.max_log2);
    let host = Estimate::new(&setting, "the keys and values", bytes_of(&[len, 16]));
    let on_device = Estimate::new(&setting, "the sort buffers", bytes_of(&[len, 32]))
        .with_largest_allocation(bytes_of(&[len, 8]));
    check_host_and_device(&host, &on_device, device)?;
    Ok(())
}

/// Host and device bytes of `sort evolve`: keys, values, the keys read back and the
/// sortedness ranks on the host; keys and values on the device, and for a sorted start the
/// full sort's 8-byte scratch (of the next power of two).
fn check_evolve_memory(args: &EvolveArgs, device: &snowsim::cl::DeviceInfo) -> anyhow::Result<()> {
    let len = args.len as u64;
    let setting = format!("`--len {len}`");
    let host = Estimate::new(&setting, "the keys", bytes_of(&[len, 24]));
    let scratch = if args.start == StartArg::Sorted {
        bytes_of(&[len.next_power_of_two(), 8])
    } else {
        0
    };
    let on_device = Estimate::new(
        &setting,
        "the sort buffers",
        bytes_of(&[len, 8]).saturating_add(scratch),
    )
    .with_largest_allocation(bytes_of(&[len, 4]).max(scratch));
    check_host_and_device(&host, &on_device, device)?;
    if let Some(csv) = &args.csv {
        let rows = Estimate::new(
            format!("`--frames {}`", args.frames),
            "the CSV rows",
            bytes_of(&[args.frames, CSV_ROW_BYTES]),
        );
        Budget::disk(csv)?.check(&rows)?;
    }
    Ok(())
}

/// The most bytes one CSV row of `sort evolve` takes (its values printed in full).
const CSV_ROW_BYTES: u64 = 256;

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Check(args) => check(args),
        Command::Bench(args) => bench(args),
        Command::Evolve(args) => evolve(args),
    }
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let context = Context::from_selector(&args.device.device)?;
    outln!("device: {}", context.info().label())?;
    let config = args.kernel.config();
    let mut sorter = BitonicSorter::with_config(&context, &config).map_err(block_len_named)?;
    outln!(
        "full sort: blocks of {} pairs ({} work-items), {} elements per work-item in global passes",
        sorter.block_len(),
        sorter.work_group_size(),
        1u32 << sorter.global_bits()
    )?;
    let max_len = args.max_len.unwrap_or(usize::MAX);
    let cases: Vec<_> = check::standard_cases(sorter.block_len())
        .into_iter()
        .filter(|c| c.len <= max_len)
        .collect();
    let mut failures: Vec<String> = Vec::new();
    let mut by_len: Vec<(usize, usize, usize)> = Vec::new(); // (len, cases, failed)
    for (i, case) in cases.iter().enumerate() {
        let seed = args.seed.wrapping_add(i as u64);
        let outcome = check::run_case(&mut sorter, case, seed)
            .with_context(|| format!("case `{case}` could not run"))?;
        if by_len.last().is_none_or(|l| l.0 != case.len) {
            if let Some((len, n, failed)) = by_len.last() {
                print_len_line(*len, *n, *failed)?;
            }
            by_len.push((case.len, 0, 0));
        }
        let entry = by_len.last_mut().expect("pushed above");
        entry.1 += 1;
        if let Some(message) = outcome {
            entry.2 += 1;
            outln!("  FAIL {case}: {message}")?;
            failures.push(format!("{case}: {message}"));
        }
    }
    if let Some((len, n, failed)) = by_len.last() {
        print_len_line(*len, *n, *failed)?;
    }
    let mut radix = RadixSorter::new(&context)?;
    outln!(
        "radix sort: tiles of {} pairs ({} work-items), 4 bits a pass; against a stable sort",
        radix.tile_len(),
        radix.work_group_size()
    )?;
    let radix_cases: Vec<_> = check::standard_cases(radix.tile_len())
        .into_iter()
        .filter(|c| c.len <= max_len)
        .collect();
    let mut radix_failed = 0;
    for (i, case) in radix_cases.iter().enumerate() {
        let seed = args.seed.wrapping_add(2000 + i as u64);
        let outcome = check::run_radix_case(&mut radix, case, seed)
            .with_context(|| format!("radix case `{case}` could not run"))?;
        if let Some(message) = outcome {
            radix_failed += 1;
            outln!("  FAIL radix {case}: {message}")?;
            failures.push(format!("radix {case}: {message}"));
        }
    }
    if radix_failed == 0 {
        outln!("  ok   radix: {} cases", radix_cases.len())?;
    } else {
        outln!(
            "  FAIL radix: {radix_failed} of {} cases",
            radix_cases.len()
        )?;
    }
    let partial_config = PartialConfig {
        sort: config,
        ..PartialConfig::default()
    };
    let partial_cases: Vec<_> = check::standard_partial_cases(sorter.block_len())
        .into_iter()
        .filter(|c| c.len <= max_len)
        .collect();
    for (i, case) in partial_cases.iter().enumerate() {
        let seed = args.seed.wrapping_add(1000 + i as u64);
        let outcome = check::run_partial_case(&context, &partial_config, case, seed)
            .with_context(|| format!("case `{case}` could not run"))?;
        match outcome {
            None => outln!("  ok   {case}")?,
            Some(message) => {
                outln!("  FAIL {case}: {message}")?;
                failures.push(format!("{case}: {message}"));
            }
        }
    }
    let total = cases.len() + radix_cases.len() + partial_cases.len();
    if let Some(first) = failures.first() {
        bail!(
            "{} of {total} sort checks failed on {}; first: {first}",
            failures.len(),
            context.info().name
        );
    }
    outln!(
        "all {total} checks passed: {} full-sort cases match slice::sort_by, {} radix-sort cases \
         match its stable order, {} partial-sort cases keep every pair and sort static arrays \
         within the frame bound",
        cases.len(),
        radix_cases.len(),
        partial_cases.len()
    )?;
    Ok(ExitCode::SUCCESS)
}

fn print_len_line(len: usize, cases: usize, failed: usize) -> Result<(), ConsoleError> {
    if failed == 0 {
        outln!("  ok   n = {len:<7} {cases} cases")?;
    } else {
        outln!("  FAIL n = {len:<7} {failed} of {cases} cases")?;
    }
    Ok(())
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if args.min_log2 > args.max_log2 {
        bail!(
            "--min-log2 {} is larger than --max-log2 {}",
            args.min_log2,
            args.max_log2
        );
    }
    check_csv_output(args.csv.as_deref(), BENCH_CSV, args.force)?;
    let context = Context::from_selector(&args.device.device)?;
    let info = context.info();
    check_bench_memory(&args, info)?;
    let mut writer = csv_writer(args.csv.as_deref())?;
    let config = args.kernel.config();
    let mut full = BitonicSorter::with_config(&context, &config).map_err(block_len_named)?;
    let mut radix = RadixSorter::new(&context)?;
    let mut partial = PartialSorter::new(
        &context,
        &PartialConfig {
            redistribute_every: args.redistribute_every,
            local_step: args.local_step.into(),
            sort: config,
        },
    )
    .map_err(block_len_named)?;
    let settings = BenchSettings {
        iterations: args.iterations,
        warmup: args.warmup,
        seed: args.seed,
        key: match args.key {
            KeyArg::U32 => KeyKind::U32,
            KeyArg::F32 => KeyKind::F32,
        },
        order: match args.order {
            OrderArg::Ascending => Order::Ascending,
            OrderArg::Descending => Order::Descending,
        },
    };
    outln!("device: {}, driver {}", info.label(), info.driver_version)?;
    outln!(
        "{} keys + u32 values, {}, random; blocks of {} pairs ({} work-items), {} elements per \
         work-item in global passes; redistribution every {} frames",
        settings.key,
        settings.order,
        full.block_len(),
        full.work_group_size(),
        1u32 << full.global_bits(),
        args.redistribute_every
    )?;
    outln!(
        "device time (sum of the kernels' OpenCL profiling times), best of {} after {} warm-up \
         runs; ratios of medians",
        settings.iterations,
        settings.warmup
    )?;
    outln!(
        "{:>6} {:>11} {:>9} {:>7} {:>11} {:>7} {:>11} {:>7} {:>11} {:>7} {:>11} {:>11} {:>7} {:>11}",
        "log2 n",
        "full sort",
        "Mkeys/s",
        "kernels",
        "radix sort",
        "/full",
        "merge step",
        "/full",
        "sort step",
        "/full",
        "redistrib.",
        "mean frame",
        "/full",
        "full wall"
    )?;
    for log2 in args.min_log2..=args.max_log2 {
        let len = 1usize << log2;
        let t = bench::time_size(&mut full, &mut radix, &mut partial, len, &settings)
            .with_context(|| format!("benchmark of 2^{log2} pairs failed on {}", info.name))?;
        let frame = t.partial_frame(args.redistribute_every, partial.local_step());
        let full_median = t.full.median.as_secs_f64().max(1e-12);
        let of_full = |d: std::time::Duration| d.as_secs_f64() / full_median;
        outln!(
            "{:>6} {:>11} {:>9.1} {:>7} {:>11} {:>7.3} {:>11} {:>7.3} {:>11} {:>7.3} {:>11} {:>11} {:>7.3} {:>11}",
            log2,
            ms(t.full.best),
            bench::rate(len, t.full.best) / 1e6,
            t.full.launches,
            ms(t.radix.best),
            of_full(t.radix.median),
            ms(t.merge_step.best),
            of_full(t.merge_step.median),
            ms(t.sort_step.best),
            of_full(t.sort_step.median),
            ms(t.redistribute.best),
            ms(frame),
            of_full(frame),
            ms(t.full.best_wall),
        )?;
        if args.per_kernel {
            let parts: Vec<String> = t
                .full
                .per_kernel
                .iter()
                .map(|(name, d)| format!("{name} {}", ms(*d)))
                .collect();
            outln!("       full sort by kernel: {}", parts.join(", "))?;
            let parts: Vec<String> = t
                .radix
                .per_kernel
                .iter()
                .map(|(name, d)| format!("{name} {}", ms(*d)))
                .collect();
            outln!(
                "       radix sort by kernel ({} launches): {}",
                t.radix.launches,
                parts.join(", ")
            )?;
        }
        if let Some(w) = writer.as_mut() {
            for row in bench::rows(&full, &radix, &partial, &settings, &t) {
                w.serialize(row)?;
            }
            w.flush()?;
        }
    }
    finish_csv(writer)?;
    if let Some(path) = &args.csv {
        outln!("wrote {}", path.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn ms(d: std::time::Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// One CSV row of `snowsim sort evolve`.
#[derive(Serialize)]
struct FrameRow {
    frame: u64,
    redistributed: bool,
    local_step: LocalStep,
    phase: BlockPhase,
    len: usize,
    block_len: usize,
    redistribute_every: u32,
    drift: f64,
    respawn: f64,
    adjacent_inversions: usize,
    inversion_fraction: f64,
    mean_displacement: f64,
    max_displacement: usize,
    step_device_s: f64,
}

fn evolve(args: EvolveArgs) -> anyhow::Result<ExitCode> {
    check_csv_output(args.csv.as_deref(), EVOLVE_CSV, args.force)?;
    let context = Context::from_selector(&args.device.device)?;
    check_evolve_memory(&args, context.info())?;
    let mut writer = csv_writer(args.csv.as_deref())?;
    let config = args.kernel.config();
    let mut partial = PartialSorter::new(
        &context,
        &PartialConfig {
            redistribute_every: args.redistribute_every,
            local_step: args.local_step.into(),
            sort: config.clone(),
        },
    )
    .map_err(block_len_named)?;
    let len = args.len;
    let mut keys: Vec<u32> = inputs::keys(Shape::Random, len, args.seed);
    let mut keys_buf = DeviceBuffer::from_slice(&context, &keys)?;
    let mut values_buf = DeviceBuffer::from_slice(&context, &(0..len as u32).collect::<Vec<_>>())?;
    if args.start == StartArg::Sorted {
        let mut full = BitonicSorter::with_config(&context, &config).map_err(block_len_named)?;
        full.sort_pairs(&mut keys_buf, &mut values_buf, Order::Ascending)?;
        keys = keys_buf.read()?;
    }
    outln!("device: {}", context.info().label())?;
    outln!(
        "{len} u32 keys, start {}, drift {} positions/frame, respawn {}/frame; blocks of {} \
         pairs, redistribution every {} frames; a static array is sorted after {} frames",
        match args.start {
            StartArg::Random => "random",
            StartArg::Sorted => "sorted",
        },
        args.drift,
        args.respawn,
        partial.block_len(),
        args.redistribute_every,
        partial.frames_to_sort(len)
    )?;
    let s = Sortedness::of(&keys, Order::Ascending);
    outln!(
        "{:>6} {:>15} {:>13} {:>12} {:>14} {:>12} {:>11}",
        "frame",
        "step",
        "adj. invers.",
        "fraction",
        "mean displ.",
        "max displ.",
        "device"
    )?;
    outln!(
        "{:>6} {:>6} {:>13} {:>12.6} {:>14.2} {:>12} {:>11}",
        "start",
        "-",
        s.adjacent_inversions,
        s.inversion_fraction,
        s.mean_displacement,
        s.max_displacement,
        "-"
    )?;
    let mut rng = SplitMix64::new(args.seed ^ 0xD81F7);
    for _ in 0..args.frames {
        if args.drift > 0.0 || args.respawn > 0.0 {
            drift_keys(&mut keys, args.drift, args.respawn, &mut rng);
            keys_buf.write(&keys)?;
        }
        let step = partial.step_pairs(&mut keys_buf, &mut values_buf, Order::Ascending)?;
        let device = step.events.device_time()?;
        keys = keys_buf.read()?;
        let s = Sortedness::of(&keys, Order::Ascending);
        let kind = format!(
            "{}{}-{}",
            if step.redistributed { "R+" } else { "" },
            match step.local_step {
                LocalStep::Merge => "merge",
                LocalStep::Sort => "sort",
            },
            match step.phase {
                BlockPhase::Even => "even",
                BlockPhase::Odd => "odd",
            }
        );
        outln!(
            "{:>6} {:>15} {:>13} {:>12.6} {:>14.2} {:>12} {:>11}",
            step.frame,
            kind,
            s.adjacent_inversions,
            s.inversion_fraction,
            s.mean_displacement,
            s.max_displacement,
            ms(device)
        )?;
        if let Some(w) = writer.as_mut() {
            w.serialize(FrameRow {
                frame: step.frame,
                redistributed: step.redistributed,
                local_step: step.local_step,
                phase: step.phase,
                len,
                block_len: partial.block_len(),
                redistribute_every: args.redistribute_every,
                drift: args.drift,
                respawn: args.respawn,
                adjacent_inversions: s.adjacent_inversions,
                inversion_fraction: s.inversion_fraction,
                mean_displacement: s.mean_displacement,
                max_displacement: s.max_displacement,
                step_device_s: device.as_secs_f64(),
            })?;
        }
    }
    finish_csv(writer)?;
    Ok(ExitCode::SUCCESS)
}
