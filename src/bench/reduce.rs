//! gml's reductions on a large scalar field (2^24 `f32` and `f64` values by default): device
//! time of both passes, bytes read per second, and that over the device's copy bandwidth.

use std::time::Duration;

use serde::Serialize;

use super::copy::copy_bandwidth;
use crate::cl::{DeviceBuffer, Timeline};
use crate::gml::{Gml, GmlError, MeshKind, ReduceOutput, ReducibleScalar, Reduction, Solution};

/// One reduction's measurement.
#[derive(Clone, Debug, Serialize)]
pub struct ReduceResult {
    /// Field type: `f32` or `f64`.
    pub scalar: &'static str,
    /// Operator (`sum`, `l2`, …).
    pub op: &'static str,
    /// Values in the field.
    pub elements: usize,
    /// Bytes read per reduction (the field, once).
    pub bytes: u64,
    /// Mean device time of one reduction (both passes), seconds.
    pub mean_seconds: f64,
    /// Fastest reduction, seconds.
    pub best_seconds: f64,
    /// `bytes / mean_seconds`.
    pub bytes_per_second: f64,
    /// `bytes_per_second` over the device's copy bandwidth.
    pub over_copy: f64,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Device name.
    pub device: String,
    /// Values per field.
    pub elements: usize,
    /// Timed reductions per operator and type, after one warm-up.
    pub launches: u32,
    /// Device copy bandwidth (bytes read plus written per second).
    pub copy_bytes_per_second: f64,
    /// Every operator over the f32 field, then over the f64 field (fp64 devices).
    pub results: Vec<ReduceResult>,
}

/// Times `op` over `field`, leaving the result in `output` (on the device).
fn time<T: ReducibleScalar, R: ReduceOutput>(
    gml: &mut Gml,
    field: Solution<T>,
    op: Reduction,
    output: &DeviceBuffer<R>,
    launches: u32,
) -> Result<(f64, f64), GmlError> {
    let once = |gml: &mut Gml| -> Result<Duration, GmlError> {
        let mut timeline = Timeline::new(true);
        gml.reduce_into(field, op, output, 0, &mut timeline)?;
        Ok(timeline.device_time()?)
    };
    once(gml)?; // warm-up: uploads the field and builds the program
    let mut total = Duration::ZERO;
    let mut best = Duration::MAX;
    for _ in 0..launches.max(1) {
        let t = once(gml)?;
        total += t;
        best = best.min(t);
    }
    let mean = (total.as_secs_f64() / f64::from(launches.max(1))).max(1e-12);
    Ok((mean, best.as_secs_f64()))
}

/// Runs every operator `launches` times over an f32 field of `elements` values, and over an
/// f64 one where the device has fp64.
pub fn run(gml: &mut Gml, elements: usize, launches: u32) -> Result<Report, GmlError> {
    let elements = elements.max(1);
    gml.new_mesh(MeshKind::Vertices, elements)?;
    let values = |i: usize| ((i % 1999) as f64 - 999.0) * 1e-3;
    let f32s = gml.new_solution::<f32>(MeshKind::Vertices, 1, "ReduceF32")?;
    let host: Vec<f32> = (0..elements).map(|i| values(i) as f32).collect();
    gml.set_block(f32s, 0, &host)?;
    drop(host);
    // The copy moves as many bytes as the largest field is read (16-byte values).
    let widest = if gml.has_fp64() { 8 } else { 4 };
    let copy = copy_bandwidth(gml.context(), elements * widest / 16, launches)?;
    let mut results = Vec::new();
    let mut record = |scalar, op: Reduction, bytes: u64, (mean, best): (f64, f64)| {
        results.push(ReduceResult {
            scalar,
            op: op.name(),
            elements,
            bytes,
            mean_seconds: mean,
            best_seconds: best,
            bytes_per_second: bytes as f64 / mean,
            over_copy: bytes as f64 / mean / copy,
        });
    };
    let floats = DeviceBuffer::<f32>::zeroed(gml.context(), 1)?;
    for op in Reduction::ALL {
        let timing = time(gml, f32s, op, &floats, launches)?;
        record("f32", op, 4 * elements as u64, timing);
    }
    gml.free(f32s)?;
    if gml.has_fp64() {
        let f64s = gml.new_solution::<f64>(MeshKind::Vertices, 1, "ReduceF64")?;
        let host: Vec<f64> = (0..elements).map(values).collect();
        gml.set_block(f64s, 0, &host)?;
        drop(host);
        let doubles = DeviceBuffer::<f64>::zeroed(gml.context(), 1)?;
        for op in Reduction::ALL {
            let timing = time(gml, f64s, op, &doubles, launches)?;
            record("f64", op, 8 * elements as u64, timing);
        }
        gml.free(f64s)?;
    }
    Ok(Report {
        device: gml.device().name.clone(),
        elements,
        launches,
        copy_bytes_per_second: copy,
        results,
    })
}
