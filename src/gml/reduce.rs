//! Reductions of solution fields on the device: min, max, sum, L0, L1, L2 and L∞ of `f32`,
//! `f64` and `i32` fields, scalar or vector (per component, or over the norm of each vector).
//!
//! One launch (`kernels/gml_reduce.cl`): a grid-stride pass with wide loads leaves one partial
//! result per work-group, and the work-group that finishes last folds the partials, so only
//! the result comes back to the host, or stays on the device for the kernels that follow.
//! [`ReduceOptions::two_passes`] folds the partials in a second launch instead. Each (operator, type,
//! width, mode, accumulator) gets its own program, built once from build options and cached.
//!
//! Accumulators: integer sums, counts, min and max in 64-bit integers (exact); sums and norms
//! in double where the device has fp64, else in float with Neumaier's compensation; min, max
//! and L∞ of floats in the field's own type (exact). Min, max and L∞ return NaN when any value
//! is NaN; infinities follow IEEE arithmetic.

use std::collections::HashMap;

use opencl3::types::cl_mem;

use super::Gml;
use super::data::{DataId, Role};
use super::error::{GmlError, Result};
use super::value::{Scalar, Value, ValueType};
use crate::cl::{self, DeviceBuffer, Kernel, Program, Source, Timeline, WorkSize};

/// A reduction operator (GMlib's `GmlMin`, `GmlMax`, `GmlSum`, `GmlL0`, `GmlL1`, `GmlL2`,
/// `GmlLinf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reduction {
    /// Smallest value (NaN if any value is NaN).
    Min,
    /// Largest value (NaN if any value is NaN).
    Max,
    /// Sum of the values.
    Sum,
    /// Number of values that are not zero (NaN is not zero).
    L0,
    /// Sum of absolute values.
    L1,
    /// Square root of the sum of squares (GMlib returned the sum of squares).
    L2,
    /// Largest absolute value (NaN if any value is NaN).
    Linf,
}

impl Reduction {
    /// Every operator.
    pub const ALL: [Reduction; 7] = [
        Reduction::Min,
        Reduction::Max,
        Reduction::Sum,
        Reduction::L0,
        Reduction::L1,
        Reduction::L2,
        Reduction::Linf,
    ];

    /// Lower-case name, as in counters (`reduce.l2`) and benchmarks.
    pub fn name(self) -> &'static str {
        match self {
            Self::Min => "min",
            Self::Max => "max",
            Self::Sum => "sum",
            Self::L0 => "l0",
            Self::L1 => "l1",
            Self::L2 => "l2",
            Self::Linf => "linf",
        }
    }

    /// The kernel's operator define.
    fn define(self) -> &'static str {
        match self {
            Self::Min => "-DGML_OP_MIN",
            Self::Max => "-DGML_OP_MAX",
            Self::Sum => "-DGML_OP_SUM",
            Self::L0 => "-DGML_OP_L0",
            Self::L1 => "-DGML_OP_L1",
            Self::L2 => "-DGML_OP_L2",
            Self::Linf => "-DGML_OP_LINF",
        }
    }
}

/// How a field of vectors is reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VectorMode {
    /// Each component on its own: one result per component.
    PerComponent,
    /// The Euclidean norm of each vector (infinite if a component is, else NaN if one is):
    /// one result. `L2` is then the square root of the sum of squared norms.
    Norm,
}

/// A value type gml reduces: `f32`, `f64` and `i32`, scalars and vectors of 2 to 16.
pub trait Reducible: Value + sealed::Sealed {}

/// A scalar [`Reducible`]: `f32`, `f64` or `i32`.
pub trait ReducibleScalar: Reducible {}

/// The element type of a device buffer a reduction writes to: `f32` or `f64` (fp64 devices).
pub trait ReduceOutput: bytemuck::Pod + sealed::Sealed {
    /// Its scalar type.
    const SCALAR: Scalar;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! reducible {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Reducible for $t {}
        impl ReducibleScalar for $t {}
        reducible!(@vec $t; 2, 4, 8, 16);
    )*};
    (@vec $t:ty; $($n:literal),*) => {$(
        impl sealed::Sealed for [$t; $n] {}
        impl Reducible for [$t; $n] {}
    )*};
}

reducible!(f32, f64, i32);

impl ReduceOutput for f32 {
    const SCALAR: Scalar = Scalar::F32;
}

impl ReduceOutput for f64 {
    const SCALAR: Scalar = Scalar::F64;
}

/// How the first pass walks the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceLayout {
    /// Work-item `i` reads loads `i`, `i + G`, `i + 2G`, … (`G` work-items in all): consecutive
    /// work-items read consecutive memory, as GPUs coalesce it.
    GridStride,
    /// Each work-item reads one contiguous run, as CPUs stream it.
    Contiguous,
}

/// How reductions run; the defaults suit the device. For tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReduceOptions {
    /// Accumulate the float sums of `f32` and `i32` fields (sum, L1, L2, norms) in compensated
    /// float even where the device has fp64, as devices without fp64 do.
    pub float_accumulators: bool,
    /// The first pass's layout; `None`: grid stride, contiguous runs on CPU devices.
    pub layout: Option<ReduceLayout>,
    /// Fold the partials in a second launch rather than in the last work-group to finish.
    pub two_passes: bool,
    /// Work-groups per compute unit of the first pass; `None`: `GROUPS_PER_UNIT`.
    pub groups_per_unit: Option<usize>,
}

/// The accumulator type of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Acc {
    Long,
    Float,
    Double,
}

impl Acc {
    fn opencl(self) -> &'static str {
        match self {
            Self::Long => "long",
            Self::Float => "float",
            Self::Double => "double",
        }
    }

    fn bytes(self) -> usize {
        match self {
            Self::Float => 4,
            Self::Long | Self::Double => 8,
        }
    }

    /// One accumulator read back from the device, as f64.
    fn decode(self, bytes: &[u8]) -> f64 {
        let mut eight = [0u8; 8];
        eight[..self.bytes()].copy_from_slice(&bytes[..self.bytes()]);
        match self {
            Self::Long => i64::from_ne_bytes(eight) as f64,
            Self::Double => f64::from_ne_bytes(eight),
            Self::Float => {
                let four = [eight[0], eight[1], eight[2], eight[3]];
                f64::from(f32::from_ne_bytes(four))
            }
        }
    }
}

/// What one reduction program computes, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Plan {
    op: Reduction,
    value: ValueType,
    norm: bool,
    acc: Acc,
    /// Floating type of norms and squares.
    fp: Acc,
    compensated: bool,
    /// Scalars per load: a multiple of the width, 16 bytes at least in per-component mode.
    load: usize,
    /// Results: the width per component, one in norm mode.
    outs: usize,
    /// Whether the device has fp64 (enables `double` in the program).
    fp64: bool,
    /// Each work-item reads a contiguous run (CPUs) rather than a grid stride (GPUs).
    chunked: bool,
}

impl Plan {
    /// `fp_double`: accumulate floating sums in double.
    fn new(op: Reduction, value: ValueType, mode: VectorMode, fp_double: bool, fp64: bool) -> Self {
        let norm = mode == VectorMode::Norm;
        let fp = if fp_double || value.scalar == Scalar::F64 {
            Acc::Double
        } else {
            Acc::Float
        };
        let native = match value.scalar {
            Scalar::F64 => Acc::Double,
            Scalar::I32 | Scalar::I8 => Acc::Long,
            Scalar::F32 => Acc::Float,
        };
        let acc = match op {
            Reduction::L0 => Acc::Long,
            Reduction::L2 => fp,
            _ if norm => fp,
            Reduction::Min | Reduction::Max | Reduction::Linf => native,
            Reduction::Sum | Reduction::L1 if native == Acc::Long => Acc::Long,
            Reduction::Sum | Reduction::L1 => fp,
        };
        let scalar_bytes = match value.scalar {
            Scalar::I8 => 1,
            Scalar::I32 | Scalar::F32 => 4,
            Scalar::F64 => 8,
        };
        Self {
            op,
            value,
            norm,
            acc,
            fp,
            compensated: acc == Acc::Float
                && matches!(op, Reduction::Sum | Reduction::L1 | Reduction::L2),
            load: if norm {
                value.width
            } else {
                value.width.max(16 / scalar_bytes)
            },
            outs: if norm { 1 } else { value.width },
            fp64,
            chunked: false,
        }
    }

    /// Accumulators per output (value and compensation).
    fn per_output(&self) -> usize {
        if self.compensated { 2 } else { 1 }
    }

    /// Bytes of one work-group's partial result (and of one work-item's local scratch).
    fn partial_bytes(&self) -> usize {
        self.outs * self.per_output() * self.acc.bytes()
    }

    fn defines(&self) -> String {
        let t = self.value.scalar.opencl();
        let (tl, vstore) = if self.load == 1 {
            (t.to_string(), String::new())
        } else {
            (
                format!("{t}{}", self.load),
                format!("-DGML_VSTORE=vstore{}", self.load),
            )
        };
        format!(
            "-DGML_T={t} -DGML_TL={tl} -DGML_LOAD={} {vstore} -DGML_W={} -DGML_NORM={} \
             -DGML_OUTS={} -DGML_ACC={} -DGML_ACC_INT={} -DGML_FP={} -DGML_COMP={} \
             -DGML_CHUNKED={} {}{}",
            self.load,
            self.value.width,
            u8::from(self.norm),
            self.outs,
            self.acc.opencl(),
            u8::from(self.acc == Acc::Long),
            self.fp.opencl(),
            u8::from(self.compensated),
            u8::from(self.chunked),
            self.op.define(),
            if self.fp64 { " -DGML_FP64" } else { "" },
        )
    }
}

/// A one-pass kernel and a second-pass kernel per kind of output.
struct Finishers {
    /// Writes the raw accumulators for the host to finish.
    host: Kernel,
    /// Writes finished results as float.
    float: Kernel,
    /// Writes finished results as double (devices with fp64).
    double: Option<Kernel>,
}

/// One reduction's compiled kernels and work-group size.
struct Programs {
    /// The first of two passes.
    first: Kernel,
    /// The second of two passes.
    second: Finishers,
    /// Both passes in one launch.
    once: Finishers,
    local: usize,
}

/// Compiled reduction programs, and the buffers they share.
#[derive(Default)]
pub(crate) struct Reducer {
    programs: HashMap<Plan, Programs>,
    partials: Option<DeviceBuffer<u8>>,
    /// The one-pass kernels' count of finished work-groups, zero between launches.
    counter: Option<DeviceBuffer<u32>>,
    result: Option<DeviceBuffer<u8>>,
    options: ReduceOptions,
}

/// Bytes of the host result buffer: value and compensation of up to 16 outputs of 8 bytes.
const RESULT_BYTES: usize = 2 * 16 * 8;

/// Work-groups per compute unit of the first pass. NVIDIA's driver reports 256 work-items as
/// every kernel's limit on the H100, so there it runs 4 × 256 per multiprocessor: at 2^24
/// values the sums reach 0.76–0.78 of copy bandwidth (f32) and 0.90–0.93 (f64), against
/// 0.72/0.85 with 2 groups, and no better with 6 or 8 (`bench reduce --groups-per-unit`).
const GROUPS_PER_UNIT: usize = 4;

/// The largest work-group of the reductions (a power of two).
const MAX_LOCAL: usize = 512;

impl Reducer {
    /// Sets how the next reductions run.
    pub(crate) fn set_options(&mut self, options: ReduceOptions) {
        self.options = options;
    }
}

/// The largest power of two not above `n` (at least 1).
fn power_of_two_below(n: usize) -> usize {
    let n = n.max(1);
    1 << (usize::BITS - 1 - n.leading_zeros())
}

/// Builds (once) the programs of `plan`.
fn programs(gml: &mut Gml, plan: Plan) -> Result<&Programs> {
    if !gml.reducer.programs.contains_key(&plan) {
        let context = &gml.context;
        let source =
            Source::embedded("gml_reduce.cl", include_str!("../../kernels/gml_reduce.cl"))?;
        let program = Program::build(context, &[source], &plan.defines())?;
        let finishers = |prefix: &str| -> Result<Finishers> {
            Ok(Finishers {
                host: program.kernel(&format!("{prefix}_host"))?,
                float: program.kernel(&format!("{prefix}_float"))?,
                double: if plan.fp64 {
                    Some(program.kernel(&format!("{prefix}_double"))?)
                } else {
                    None
                },
            })
        };
        let first = program.kernel("gml_reduce_first")?;
        let second = finishers("gml_reduce")?;
        let once = finishers("gml_reduce_once")?;
        // A power of two (the tree halves it), at most MAX_LOCAL, within every kernel's limit
        // and the local memory (one partial per work-item).
        let mut cap = MAX_LOCAL.min(context.info().max_work_group_size.max(1));
        for f in [&second, &once] {
            for kernel in [&f.host, &f.float].into_iter().chain(f.double.as_ref()) {
                cap = cap.min(kernel.max_group(context)?);
            }
        }
        cap = cap.min(first.max_group(context)?);
        let memory = context.info().local_mem_bytes as usize;
        cap = cap.min(memory.saturating_sub(1024) / plan.partial_bytes());
        let local = power_of_two_below(cap);
        gml.reducer.programs.insert(
            plan,
            Programs {
                first,
                second,
                once,
                local,
            },
        );
    }
    gml.reducer
        .programs
        .get(&plan)
        .ok_or(GmlError::NoResultBuffer)
}

/// Where a reduction leaves its result.
enum Target {
    /// `buffer[index..index + outs]` of a float or double buffer of `len` values.
    Buffer {
        mem: cl_mem,
        len: usize,
        index: usize,
        scalar: Scalar,
    },
    /// At `offset` bytes into the parameter block: a float, or a double for f64 fields.
    Parameters(usize),
    /// The reducer's own result buffer, read back by [`reduce`].
    Host,
}

/// Enqueues the launch(es) reducing datum `id` with `op` into `target`; returns the plan.
fn enqueue(
    gml: &mut Gml,
    id: DataId,
    op: Reduction,
    mode: VectorMode,
    target: Target,
    timeline: &mut Timeline,
) -> Result<Plan> {
    let datum = gml.datum(id)?;
    let name = datum.role.name().to_string();
    let Role::Solution {
        value, items: 1, ..
    } = datum.role
    else {
        return Err(GmlError::NotReducible(name));
    };
    if !matches!(value.scalar, Scalar::F32 | Scalar::F64 | Scalar::I32) {
        return Err(GmlError::NotReducible(name));
    }
    let lines = datum.lines;
    if lines == 0 {
        return Err(GmlError::EmptyReduction(name));
    }
    let fp64 = gml.has_fp64();
    let options = gml.reducer.options;
    let layout = options.layout.unwrap_or(match gml.device().device_type {
        cl::DeviceType::Cpu => ReduceLayout::Contiguous,
        _ => ReduceLayout::GridStride,
    });
    let plan = Plan {
        chunked: layout == ReduceLayout::Contiguous,
        ..Plan::new(op, value, mode, fp64 && !options.float_accumulators, fp64)
    };
    let context = gml.context.clone();
    gml.datum_mut_quiet(id)?.upload(&context)?;
    gml.ensure_params()?;
    let local = programs(gml, plan)?.local;

    let scalars = (lines * value.width) as u64;
    let loads = scalars / plan.load as u64;
    let per_unit = options.groups_per_unit.unwrap_or(GROUPS_PER_UNIT).max(1);
    let max_groups = (per_unit * context.info().compute_units as usize).max(1);
    let groups = usize::try_from(loads.div_ceil(local as u64))
        .unwrap_or(max_groups)
        .clamp(1, max_groups);
    // Sized by the groups this launch runs (at most one per load's work-group).
    let partial_bytes = groups * plan.partial_bytes();
    if gml
        .reducer
        .partials
        .as_ref()
        .is_none_or(|p| p.len() < partial_bytes)
    {
        gml.reducer.partials = Some(DeviceBuffer::uninit(&context, partial_bytes)?);
    }
    if gml.reducer.counter.is_none() {
        gml.reducer.counter = Some(DeviceBuffer::zeroed(&context, 1)?);
    }
    if matches!(target, Target::Host) && gml.reducer.result.is_none() {
        gml.reducer.result = Some(DeviceBuffer::uninit(&context, RESULT_BYTES)?);
    }

    // Where the result goes: the kernel, the buffer, its length in values, the index.
    let (output, len, index, scalar) = match target {
        Target::Buffer {
            mem,
            len,
            index,
            scalar,
        } => (mem, len, index, Some(scalar)),
        Target::Parameters(offset) => {
            let block = gml.params.as_ref().ok_or(GmlError::NoParameters)?;
            let (scalar, bytes) = if value.scalar == Scalar::F64 {
                (Scalar::F64, 8)
            } else {
                (Scalar::F32, 4)
            };
            if !offset.is_multiple_of(bytes) || offset + plan.outs * bytes > block.size {
                return Err(GmlError::ReductionOffset {
                    offset,
                    bytes,
                    size: block.size,
                });
            }
            (
                block.buffer.cl_mem(),
                block.size / bytes,
                offset / bytes,
                Some(scalar),
            )
        }
        Target::Host => {
            let result = gml
                .reducer
                .result
                .as_ref()
                .ok_or(GmlError::NoResultBuffer)?;
            (result.cl_mem(), RESULT_BYTES / 8, 0, None)
        }
    };
    if index + plan.outs > len {
        return Err(GmlError::LineOutOfRange {
            what: "reduction output".into(),
            first: index,
            end: index + plan.outs,
            lines: len,
        });
    }
    let index_u32 = u32::try_from(index).map_err(|_| GmlError::LineOutOfRange {
        what: "reduction output (a 32-bit index)".into(),
        first: index,
        end: index + plan.outs,
        lines: len.min(u32::MAX as usize),
    })?;
    if scalar == Some(Scalar::F64) && !fp64 {
        return Err(GmlError::NoFp64(format!(
            "a double result of reducing `{name}`"
        )));
    }

    let input = gml
        .datum(id)?
        .device
        .as_ref()
        .ok_or(GmlError::UnknownData(id.index as usize))?;
    let partials = gml
        .reducer
        .partials
        .as_ref()
        .ok_or(GmlError::NoResultBuffer)?;
    let counter = gml
        .reducer
        .counter
        .as_ref()
        .ok_or(GmlError::NoResultBuffer)?;
    let kernels = &gml.reducer.programs[&plan];
    let work = |groups: usize| WorkSize {
        global: groups * local,
        local,
    };
    let scratch = local * plan.partial_bytes();
    let finishers = if options.two_passes {
        &kernels.second
    } else {
        &kernels.once
    };
    let finisher = match scalar {
        None => &finishers.host,
        Some(Scalar::F64) => finishers
            .double
            .as_ref()
            .ok_or_else(|| GmlError::NoFp64(format!("a double result of reducing `{name}`")))?,
        Some(_) => &finishers.float,
    };

    let mut call = if options.two_passes {
        let mut first = kernels.first.call();
        // SAFETY: gml_reduce_first(TL *input, ACC *partials, ulong loads, ulong scalars,
        // local ACC *scratch): the input holds `scalars` scalars of the field's type (`loads`
        // whole loads and a tail), the partials one partial per group (at most `max_groups`
        // allocated), the scratch one partial per work-item.
        unsafe {
            first
                .buffer(input)?
                .buffer(partials)?
                .arg(&loads)?
                .arg(&scalars)?
                .local::<u8>(scratch)?;
        }
        first.enqueue_into(&context, work(groups), timeline)?;
        let mut second = finisher.call();
        // SAFETY: gml_reduce_host/float/double(ACC *partials, OUT *out, uint groups, local ACC
        // *scratch[, uint index]) reads `groups` partials.
        unsafe {
            second.buffer(partials)?;
        }
        second
    } else {
        let mut once = finisher.call();
        // SAFETY: gml_reduce_once_host/float/double(TL *input, ACC *partials, ulong loads,
        // ulong scalars, local ACC *scratch, uint *counter, OUT *out[, uint index]): as the
        // first pass above, plus the one-word counter of finished groups (zero between
        // launches: the last group resets it).
        unsafe {
            once.buffer(input)?
                .buffer(partials)?
                .arg(&loads)?
                .arg(&scalars)?
                .local::<u8>(scratch)?
                .buffer(counter)?;
        }
        once
    };
    let groups_u32 = groups as u32;
    // SAFETY: the output arguments of both forms: the host form writes 2·outs ≤ 32
    // accumulators of at most 8 bytes into the RESULT_BYTES result buffer; the float and
    // double forms write out[index..index + outs], inside the output's `len` values (checked
    // above). The second pass takes the partials' count before its scratch.
    unsafe {
        match scalar {
            None => call.mem::<u8>(output, RESULT_BYTES)?,
            Some(Scalar::F64) => call.mem::<f64>(output, len)?,
            Some(_) => call.mem::<f32>(output, len)?,
        };
        if options.two_passes {
            call.arg(&groups_u32)?.local::<u8>(scratch)?;
        }
        if scalar.is_some() {
            call.arg(&index_u32)?;
        }
    }
    let launch = if options.two_passes { 1 } else { groups };
    call.enqueue_into(&context, work(launch), timeline)?;
    Ok(plan)
}

/// The stage name of `op` in counters.
fn stage(op: Reduction) -> String {
    format!("reduce.{}", op.name())
}

/// Reduces to the host: one value per output.
pub(crate) fn reduce(
    gml: &mut Gml,
    id: DataId,
    op: Reduction,
    mode: VectorMode,
) -> Result<Vec<f64>> {
    let mut timeline = Timeline::new(gml.context.profiling());
    timeline.stage(stage(op));
    let plan = enqueue(gml, id, op, mode, Target::Host, &mut timeline)?;
    let bytes = gml
        .reducer
        .result
        .as_ref()
        .ok_or(GmlError::NoResultBuffer)?
        .read()?;
    if timeline.records_events() {
        let mut stages = timeline.stage_times()?;
        // One reduction (of one launch or two).
        stages.iter_mut().for_each(|s| s.launches = 1);
        gml.counters.add(&stages);
    }
    let size = plan.acc.bytes();
    Ok((0..plan.outs)
        .map(|o| {
            let s = plan.acc.decode(&bytes[2 * o * size..]);
            let c = plan.acc.decode(&bytes[(2 * o + 1) * size..]);
            let x = if plan.compensated && s.is_finite() {
                s + c
            } else {
                s
            };
            if op == Reduction::L2 { x.sqrt() } else { x }
        })
        .collect())
}

/// Enqueues a reduction into `output[index..]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_into_buffer<R: ReduceOutput>(
    gml: &mut Gml,
    id: DataId,
    op: Reduction,
    mode: VectorMode,
    output: &DeviceBuffer<R>,
    index: usize,
    timeline: &mut Timeline,
) -> Result<()> {
    let target = Target::Buffer {
        mem: cl::BufferArg::<R>::cl_mem_checked(output)?,
        len: output.len(),
        index,
        scalar: R::SCALAR,
    };
    enqueue(gml, id, op, mode, target, timeline).map(|_| ())
}

/// Enqueues a reduction into the parameter struct at byte `offset`.
pub(crate) fn reduce_into_parameters<P: bytemuck::Pod>(
    gml: &mut Gml,
    id: DataId,
    op: Reduction,
    mode: VectorMode,
    parameters: &super::Parameters<P>,
    offset: usize,
    timeline: &mut Timeline,
) -> Result<()> {
    super::params::check_handle(gml, parameters)?;
    enqueue(gml, id, op, mode, Target::Parameters(offset), timeline).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(scalar: Scalar, width: usize) -> ValueType {
        ValueType { scalar, width }
    }

    #[test]
    fn accumulators_are_exact_or_wide() {
        let per = VectorMode::PerComponent;
        let f32x1 = value(Scalar::F32, 1);
        let sum = Plan::new(Reduction::Sum, f32x1, per, true, true);
        assert_eq!(
            (sum.acc, sum.compensated, sum.load),
            (Acc::Double, false, 4)
        );
        let sum = Plan::new(Reduction::Sum, f32x1, per, false, false);
        assert_eq!((sum.acc, sum.compensated), (Acc::Float, true));
        let min = Plan::new(Reduction::Min, f32x1, per, true, true);
        assert_eq!(min.acc, Acc::Float);
        let i = Plan::new(Reduction::Sum, value(Scalar::I32, 2), per, false, false);
        assert_eq!((i.acc, i.load, i.outs), (Acc::Long, 4, 2));
        let l2 = Plan::new(Reduction::L2, value(Scalar::I32, 1), per, true, true);
        assert_eq!(l2.acc, Acc::Double);
        let norm = Plan::new(
            Reduction::Max,
            value(Scalar::F64, 16),
            VectorMode::Norm,
            true,
            true,
        );
        assert_eq!((norm.acc, norm.load, norm.outs), (Acc::Double, 16, 1));
        assert_eq!(
            Plan::new(Reduction::L0, f32x1, per, true, true).acc,
            Acc::Long
        );
    }

    #[test]
    fn group_sizes_are_powers_of_two() {
        assert_eq!(power_of_two_below(0), 1);
        assert_eq!(power_of_two_below(300), 256);
        assert_eq!(power_of_two_below(256), 256);
        assert_eq!(power_of_two_below(255), 128);
    }
}
