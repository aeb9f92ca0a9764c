//! A short kernel run that proves a device works: a STREAM triad checked against the CPU,
//! timed with OpenCL profiling.

use std::time::Duration;

use serde::Serialize;

use crate::cl::{self, Context, DeviceBuffer, KernelTimer, Program, Source, WorkSize};

/// Why a self-test did not pass.
#[derive(Debug, thiserror::Error)]
pub enum SelftestError {
    /// The OpenCL layer failed (build, allocation, launch, …).
    #[error(transparent)]
    Cl(#[from] cl::Error),
    /// The device computed a different value than the CPU.
    #[error(
        "device result differs from the CPU at element {index}: expected {expected:?}, got {got:?}"
    )]
    Mismatch {
        /// First differing float4.
        index: usize,
        /// CPU value.
        expected: [f32; 4],
        /// Device value.
        got: [f32; 4],
    },
    /// A parameter was out of range.
    #[error("invalid self-test parameter: {0}")]
    InvalidParameter(String),
}

/// What a triad run measured.
#[derive(Clone, Debug, Serialize)]
pub struct TriadReport {
    /// Device name.
    pub device: String,
    /// Number of float4 values per array.
    pub elements: usize,
    /// Launches timed (after one warm-up launch).
    pub iterations: u32,
    /// Work-group size used.
    pub work_group_size: usize,
    /// Mean device time per launch, in seconds.
    pub mean_seconds: f64,
    /// Fastest launch, in seconds.
    pub best_seconds: f64,
    /// Bytes each launch moves (two arrays read, one written).
    pub bytes_per_launch: u64,
    /// `bytes_per_launch / best_seconds`, in bytes per second.
    pub best_bytes_per_second: f64,
}

/// Scale factor of the triad; a power of two so that the device result is exact.
const SCALE: f32 = 0.5;

/// Checks the triad's parameters before any device or memory is touched.
pub fn check_parameters(elements: usize, iterations: u32) -> Result<(), SelftestError> {
    if elements == 0 || elements > u32::MAX as usize {
        return Err(SelftestError::InvalidParameter(format!(
            "--elements must be between 1 and {}, not {elements}",
            u32::MAX
        )));
    }
    if iterations == 0 {
        return Err(SelftestError::InvalidParameter(
            "--iterations must be at least 1".to_string(),
        ));
    }
    Ok(())
}

/// Runs `a = b + 0.5·c` over `elements` float4 values `iterations` times on `context`'s device
/// and checks every value against the CPU.
///
/// The inputs are small integers, so the result is exact in single precision whether or not
/// the device fuses the multiply-add: any difference is a real error. The three arrays must
/// fit the device (each in one allocation, all three in global memory) before any host memory
/// is allocated for them.
pub fn run_triad(
    context: &Context,
    elements: usize,
    iterations: u32,
) -> Result<TriadReport, SelftestError> {
    check_parameters(elements, iterations)?;
    let array_bytes = elements as u64 * 16;
    let info = context.info();
    if array_bytes > info.max_alloc_bytes || 3 * array_bytes > info.global_mem_bytes {
        return Err(SelftestError::InvalidParameter(format!(
            "--elements {elements}: {elements} float4 need three arrays of {array_bytes} bytes; \
             {} allows {} bytes per array and {} bytes in all",
            info.name, info.max_alloc_bytes, info.global_mem_bytes
        )));
    }
    let b: Vec<[f32; 4]> = (0..elements)
        .map(|i| {
            let v = (i % 1021) as f32;
            [v, v + 1.0, -v, 2.0 * v]
        })
        .collect();
    let c: Vec<[f32; 4]> = (0..elements)
        .map(|i| {
            let v = (i % 97) as f32;
            [2.0 * v, -v, v + 3.0, 1.0]
        })
        .collect();

    let source = Source::embedded("selftest.cl", include_str!("../kernels/selftest.cl"))?;
    let program = Program::build(context, &[source], "-cl-mad-enable")?;
    let kernel = program.kernel("triad")?;
    let work = WorkSize::for_kernel(context, &kernel, elements)?;
    let a_buf = DeviceBuffer::<[f32; 4]>::uninit(context, elements)?;
    let b_buf = DeviceBuffer::from_slice(context, &b)?;
    let c_buf = DeviceBuffer::from_slice(context, &c)?;
    let n = elements as u32;

    let launch = || -> Result<opencl3::event::Event, cl::Error> {
        let mut call = kernel.call();
        // SAFETY: three float4 buffers of `elements` values, a float and a uint; the kernel
        // guards `i < n`.
        unsafe {
            call.buffer(&a_buf)?
                .buffer(&b_buf)?
                .buffer(&c_buf)?
                .arg(&SCALE)?
                .arg(&n)?
        };
        call.enqueue(context, work)
    };

    cl::event_duration(&launch()?)?; // warm-up: first launches pay for lazy compilation
    let mut timer = KernelTimer::default();
    let mut best = Duration::MAX;
    for _ in 0..iterations {
        best = best.min(timer.record(&launch()?)?);
    }

    let a = a_buf.read()?;
    for (index, ((got, b), c)) in a.iter().zip(&b).zip(&c).enumerate() {
        let expected: [f32; 4] = std::array::from_fn(|k| b[k] + SCALE * c[k]);
        if *got != expected {
            return Err(SelftestError::Mismatch {
                index,
                expected,
                got: *got,
            });
        }
    }

    let bytes_per_launch = 3 * 16 * elements as u64;
    let best_seconds = best.as_secs_f64();
    Ok(TriadReport {
        device: context.info().name.clone(),
        elements,
        iterations,
        work_group_size: work.local,
        mean_seconds: timer.mean().as_secs_f64(),
        best_seconds,
        bytes_per_launch,
        best_bytes_per_second: if best_seconds > 0.0 {
            bytes_per_launch as f64 / best_seconds
        } else {
            0.0
        },
    })
}
