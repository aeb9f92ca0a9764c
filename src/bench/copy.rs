//! The device's copy bandwidth, measured with a coalesced float4 copy kernel.

use crate::cl::{self, Context, DeviceBuffer, KernelTimer, Program, Source, WorkSize};

/// Copy bandwidth in bytes per second (bytes read plus bytes written over the mean device time
/// of `launches` launches after one warm-up), copying `values` float4.
pub fn copy_bandwidth(context: &Context, values: usize, launches: u32) -> cl::Result<f64> {
    let source = Source::embedded("bench_copy.cl", include_str!("../../kernels/bench_copy.cl"))?;
    let program = Program::build(context, &[source], "")?;
    let kernel = program.kernel("copy_float4")?;
    let values = values.max(1);
    let src = DeviceBuffer::<[f32; 4]>::zeroed(context, values)?;
    let dst = DeviceBuffer::<[f32; 4]>::uninit(context, values)?;
    let work = WorkSize::for_kernel(context, &kernel, values)?;
    let n = values as u32;
    let launch = || {
        let mut call = kernel.call();
        // SAFETY: two float4 buffers of `values` elements and their length; the kernel guards
        // the tail.
        unsafe { call.buffer(&dst)?.buffer(&src)?.arg(&n)? };
        call.enqueue(context, work)
    };
    cl::event_duration(&launch()?)?;
    let mut timer = KernelTimer::default();
    for _ in 0..launches.max(1) {
        timer.record(&launch()?)?;
    }
    Ok(2.0 * 16.0 * values as f64 / timer.mean().as_secs_f64().max(1e-12))
}
