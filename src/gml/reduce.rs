//! Reductions of a scalar float field on the device: a tree reduction per work-group, then a
//! second pass over the partial results, so only one float comes back to the host.

use std::collections::{BTreeMap, HashMap};

use opencl3::kernel::{ExecuteKernel, Kernel};

use super::Gml;
use super::data::{DataId, Role};
use super::error::{GmlError, Result};
use super::value::{Scalar, ValueType};
use crate::cl::{self, DeviceBuffer, KernelTimer, Program, Source};

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

    /// Build options defining the transform, the fold and its neutral value.
    fn defines(self) -> &'static str {
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

/// Compiled reduction kernels and their timers.
#[derive(Default)]
pub(crate) struct Reducer {
    kernels: HashMap<Reduction, OpKernels>,
    timers: BTreeMap<Reduction, KernelTimer>,
}

impl Reducer {
    pub fn timers(&self) -> BTreeMap<Reduction, KernelTimer> {
        self.timers.clone()
    }
}

/// Work-group size of the reduction: a power of two (the tree halves it), at most 256.
fn group_size(context: &cl::Context, kernel: &Kernel) -> Result<usize> {
    let allowed = kernel
        .get_work_group_size(context.device().id())
        .map_err(|code| cl::Error::Api {
            call: "clGetKernelWorkGroupInfo(gml_reduce)".into(),
            code,
        })?;
    let cap = allowed.clamp(1, 256);
    Ok(1 << (usize::BITS - 1 - cap.leading_zeros()))
}

pub(crate) fn reduce(gml: &mut Gml, id: DataId, op: Reduction) -> Result<f64> {
    let datum = gml.datum(id)?;
    let scalar_f32 = ValueType {
        scalar: Scalar::F32,
        width: 1,
    };
    if !matches!(&datum.role, Role::Solution { value, items: 1, .. } if *value == scalar_f32) {
        return Err(GmlError::NotReducible(datum.role.name().to_string()));
    }
    let n = datum.lines;
    let context = gml.context.clone();
    gml.datum_mut(id)?.upload(&context)?;
    if let std::collections::hash_map::Entry::Vacant(slot) = gml.reducer.kernels.entry(op) {
        let source =
            Source::embedded("gml_reduce.cl", include_str!("../../kernels/gml_reduce.cl"))?;
        let program = Program::build(&context, &[source], op.defines())?;
        slot.insert(OpKernels {
            first: program.kernel("gml_reduce_first")?,
            partials: program.kernel("gml_reduce_partials")?,
        });
    }
    let kernels = &gml.reducer.kernels[&op];
    let local = group_size(&context, &kernels.first)?;
    // Enough groups to fill the device, few enough for one group to fold their partials.
    let groups = n.div_ceil(local).clamp(
        1,
        local.min(4 * context.info().compute_units as usize).max(1),
    );
    let partials = DeviceBuffer::<f32>::uninit(&context, groups)?;
    let result = DeviceBuffer::<f32>::uninit(&context, 1)?;
    let input = gml
        .datum(id)?
        .device
        .as_ref()
        .ok_or(GmlError::UnknownData(id.index as usize))?;
    let mut timer = gml.reducer.timers.get(&op).copied().unwrap_or_default();
    let first = pass(
        &context,
        &kernels.first,
        input.cl_buffer(),
        &partials,
        n,
        groups,
        local,
    )?;
    timer.record(&first)?;
    let second = pass(
        &context,
        &kernels.partials,
        partials.cl_buffer(),
        &result,
        groups,
        1,
        local,
    )?;
    timer.record(&second)?;
    timer.launches -= 1; // one reduction, two passes
    gml.reducer.timers.insert(op, timer);
    let value = f64::from(result.read()?[0]);
    Ok(if op == Reduction::L2 {
        value.sqrt()
    } else {
        value
    })
}

/// Enqueues one pass: `groups` work-groups of `local` work-items fold `n` values of `input`.
fn pass<T>(
    context: &cl::Context,
    kernel: &Kernel,
    input: &opencl3::memory::Buffer<T>,
    output: &DeviceBuffer<f32>,
    n: usize,
    groups: usize,
    local: usize,
) -> Result<opencl3::event::Event> {
    let n = n as u32;
    // SAFETY: the arguments match gml_reduce's signature; the local scratch holds one float
    // per work-item; the output holds one float per group.
    let event = unsafe {
        ExecuteKernel::new(kernel)
            .set_arg(input)
            .set_arg(output.cl_buffer())
            .set_arg(&n)
            .set_arg_local_buffer(local * std::mem::size_of::<f32>())
            .set_global_work_size(groups * local)
            .set_local_work_size(local)
            .enqueue_nd_range(context.queue())
    }
    .map_err(|code| cl::Error::Api {
        call: "clEnqueueNDRangeKernel(gml_reduce)".into(),
        code,
    })?;
    Ok(event)
}
