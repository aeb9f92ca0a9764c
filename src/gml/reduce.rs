//! Reductions of a scalar float field on the device: a tree reduction per work-group, then a
//! second pass over the partial results, so only one float comes back to the host.

use std::collections::HashMap;

use super::Gml;
use super::data::{DataId, Role};
use super::error::{GmlError, Result};
use super::value::{Scalar, ValueType};
use crate::cl::{self, DeviceBuffer, Kernel, Program, Source, Timeline, WorkSize};

/// A reduction operator (GMlib's `GmlMin`, `GmlMax`, `GmlSum`, `GmlL1`, `GmlL2`, `GmlLinf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reduction {
    /// Smallest value.
    Min,
    /// Largest value.
    Max,
    /// Sum of the values.
    Sum,
    /// Sum of absolute values.
    L1,
    /// Square root of the sum of squares (GMlib returned the sum of squares).
    L2,
    /// Largest absolute value.
    Linf,
}

impl Reduction {
    /// Every operator.
    pub const ALL: [Reduction; 6] = [
        Reduction::Min,
        Reduction::Max,
        Reduction::Sum,
        Reduction::L1,
        Reduction::L2,
        Reduction::Linf,
    ];

    /// Build options defining the transform, the fold, its neutral value and the final step.
    fn defines(self) -> String {
        let finish = if self == Self::L2 { "sqrt(x)" } else { "(x)" };
        format!("{} -DGML_FINISH(x)={finish}", self.fold())
    }

    /// The transform, fold and neutral value.
    fn fold(self) -> &'static str {
        match self {
            Self::Min => {
                "-DGML_TRANSFORM(x)=(x) -DGML_COMBINE(a,b)=fmin(a,b) -DGML_NEUTRAL=INFINITY"
            }
            Self::Max => {
                "-DGML_TRANSFORM(x)=(x) -DGML_COMBINE(a,b)=fmax(a,b) -DGML_NEUTRAL=(-INFINITY)"
            }
            Self::Sum => "-DGML_TRANSFORM(x)=(x) -DGML_COMBINE(a,b)=((a)+(b)) -DGML_NEUTRAL=0.0f",
            Self::L1 => {
                "-DGML_TRANSFORM(x)=fabs(x) -DGML_COMBINE(a,b)=((a)+(b)) -DGML_NEUTRAL=0.0f"
            }
            Self::L2 => {
                "-DGML_TRANSFORM(x)=((x)*(x)) -DGML_COMBINE(a,b)=((a)+(b)) -DGML_NEUTRAL=0.0f"
            }
            Self::Linf => {
                "-DGML_TRANSFORM(x)=fabs(x) -DGML_COMBINE(a,b)=fmax(a,b) -DGML_NEUTRAL=0.0f"
            }
        }
    }
}

/// The two kernels of one operator.
struct OpKernels {
    first: Kernel,
    partials: Kernel,
}

/// Compiled reduction kernels, and the partials buffer they share.
#[derive(Default)]
pub(crate) struct Reducer {
    kernels: HashMap<Reduction, OpKernels>,
    partials: Option<DeviceBuffer<f32>>,
    result: Option<DeviceBuffer<f32>>,
}

/// Work-group size of the reduction: a power of two (the tree halves it), at most 256.
fn group_size(context: &cl::Context, kernel: &Kernel) -> Result<usize> {
    let cap = kernel.max_group(context)?.clamp(1, 256);
    Ok(1 << (usize::BITS - 1 - cap.leading_zeros()))
}

/// Where a reduction leaves its result.
enum Target<'a> {
    /// `buffer[index]`, a float buffer.
    Floats(&'a DeviceBuffer<f32>, usize),
    /// The float at `offset` bytes into the parameter block.
    Parameters(usize),
    /// The reducer's own one-float buffer, read back by [`reduce`].
    Host,
}

/// Enqueues the two passes reducing datum `id` with `op` into `target`.
fn enqueue(
    gml: &mut Gml,
    id: DataId,
    op: Reduction,
    target: Target<'_>,
    timeline: &mut Timeline,
) -> Result<()> {
    let datum = gml.datum(id)?;
    let scalar_f32 = ValueType {
        scalar: Scalar::F32,
        width: 1,
    };
    if !matches!(&datum.role, Role::Solution { value, items: 1, .. } if *value == scalar_f32) {
        return Err(GmlError::NotReducible(datum.role.name().to_string()));
    }
    let n = datum.lines;
    let n32 = u32::try_from(n).map_err(|_| {
        GmlError::NotReducible(format!(
            "{} ({n} values, more than a reduction's 32-bit count)",
            datum.role.name()
        ))
    })?;
    let context = gml.context.clone();
    gml.datum_mut_quiet(id)?.upload(&context)?;
    gml.ensure_params()?;
    if let std::collections::hash_map::Entry::Vacant(slot) = gml.reducer.kernels.entry(op) {
        let source =
            Source::embedded("gml_reduce.cl", include_str!("../../kernels/gml_reduce.cl"))?;
        let program = Program::build(&context, &[source], &op.defines())?;
        slot.insert(OpKernels {
            first: program.kernel("gml_reduce_first")?,
            partials: program.kernel("gml_reduce_partials")?,
        });
    }
    let local = group_size(&context, &gml.reducer.kernels[&op].first)?;
    // Enough groups to fill the device, few enough for one group to fold their partials.
    let max_groups = local.min(4 * context.info().compute_units as usize).max(1);
    let groups = n.div_ceil(local).clamp(1, max_groups);
    if gml
        .reducer
        .partials
        .as_ref()
        .is_none_or(|p| p.len() < max_groups)
    {
        gml.reducer.partials = Some(DeviceBuffer::uninit(&context, max_groups)?);
    }
    if matches!(target, Target::Host) && gml.reducer.result.is_none() {
        gml.reducer.result = Some(DeviceBuffer::uninit(&context, 1)?);
    }
    let missing = || GmlError::UnknownData(id.index as usize);
    let input = gml.datum(id)?.device.as_ref().ok_or_else(missing)?;
    let partials = gml.reducer.partials.as_ref().ok_or_else(missing)?;
    let kernels = &gml.reducer.kernels[&op];

    let mut first = kernels.first.call();
    // SAFETY: gml_reduce_first(float *input, float *output, uint n, local float *scratch):
    // the input holds n floats, the partials one per group, the scratch one per work-item.
    unsafe {
        first
            .buffer(input)?
            .buffer(partials)?
            .arg(&n32)?
            .local::<f32>(local)?;
    }
    let work = |groups: usize| WorkSize {
        global: groups * local,
        local,
    };
    first.enqueue_into(&context, work(groups), timeline)?;

    // Where the result goes: a float buffer's handle, its length in floats, the index.
    let (output, floats, index) = match target {
        Target::Floats(buffer, index) => (buffer.cl_mem(), buffer.len(), index),
        Target::Parameters(offset) => {
            let block = gml.params.as_ref().ok_or(GmlError::NoParameters)?;
            if !offset.is_multiple_of(4) || offset + 4 > block.size {
                return Err(GmlError::ParameterOffset {
                    offset,
                    size: block.size,
                });
            }
            (block.buffer.cl_mem(), block.size / 4, offset / 4)
        }
        Target::Host => {
            let result = gml.reducer.result.as_ref().ok_or_else(missing)?;
            (result.cl_mem(), 1, 0)
        }
    };
    if index >= floats {
        return Err(GmlError::LineOutOfRange {
            what: "reduction output".into(),
            first: index,
            end: index + 1,
            lines: floats,
        });
    }
    let mut second = kernels.partials.call();
    // SAFETY: gml_reduce_partials(float *input, float *output, uint n, local float *scratch,
    // uint out_index): the partials hold `groups` floats, the output `floats` floats, and
    // out_index < floats (checked above).
    unsafe {
        second
            .buffer(partials)?
            .mem::<f32>(output, floats)?
            .arg(&(groups as u32))?
            .local::<f32>(local)?
            .arg(&(index as u32))?;
    }
    second.enqueue_into(&context, work(1), timeline)?;
    Ok(())
}

/// The stage name of `op` in counters.
fn stage(op: Reduction) -> String {
    format!("reduce.{}", format!("{op:?}").to_lowercase())
}

pub(crate) fn reduce(gml: &mut Gml, id: DataId, op: Reduction) -> Result<f64> {
    let mut timeline = Timeline::new(gml.context.profiling());
    timeline.stage(stage(op));
    enqueue(gml, id, op, Target::Host, &mut timeline)?;
    let result = gml
        .reducer
        .result
        .as_ref()
        .ok_or(GmlError::UnknownData(id.index as usize))?
        .read()?;
    if timeline.records_events() {
        let mut stages = timeline.stage_times()?;
        // One reduction, two passes.
        stages.iter_mut().for_each(|s| s.launches = 1);
        gml.counters.add(&stages);
    }
    Ok(f64::from(result[0]))
}

pub(crate) fn reduce_into_buffer(
    gml: &mut Gml,
    id: DataId,
    op: Reduction,
    output: &DeviceBuffer<f32>,
    index: usize,
    timeline: &mut Timeline,
) -> Result<()> {
    enqueue(gml, id, op, Target::Floats(output, index), timeline)
}

pub(crate) fn reduce_into_parameters<P: bytemuck::Pod>(
    gml: &mut Gml,
    id: DataId,
    op: Reduction,
    parameters: &super::Parameters<P>,
    offset: usize,
    timeline: &mut Timeline,
) -> Result<()> {
    super::params::check_handle(gml, parameters)?;
    enqueue(gml, id, op, Target::Parameters(offset), timeline)
}
