//! Device time of the sorts on the default OpenCL device: the bitonic and the radix full sort
//! of random `u32` keys with `u32` values, and one merge step, one sort step and one
//! redistribution step of the partial sort, at 2^16 and 2^20 pairs.
//!
//! Criterion records the sum of the kernels' OpenCL profiling times (`iter_custom`), not host
//! time, so launch gaps and the untimed restoring of the input between runs do not count. Run
//! with `cargo bench --bench sort`; `snowsim sort bench` sweeps sizes, compares with the full
//! sort and writes CSV rows.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use snowsim::cl::{Context, DeviceBuffer, DeviceSelector};
use snowsim::sort::inputs::{self, Shape};
use snowsim::sort::{
    BitonicSorter, BlockPhase, LocalStep, Order, PartialConfig, PartialSorter, RadixSorter,
};

fn bench_sort(c: &mut Criterion) {
    let ctx = Context::from_selector(&DeviceSelector::Default).expect("an OpenCL device");
    let mut full = BitonicSorter::new(&ctx).expect("sort kernels build");
    let mut radix = RadixSorter::new(&ctx).expect("radix kernels build");
    let mut partial = PartialSorter::new(&ctx, &PartialConfig::default()).expect("kernels build");
    let mut group = c.benchmark_group(format!("bitonic_sort/{}", ctx.info().name));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for log2 in [16u32, 20] {
        let n = 1usize << log2;
        let keys: Vec<u32> = inputs::keys(Shape::Random, n, 1);
        let values: Vec<u32> = (0..n as u32).collect();
        let mut kb = DeviceBuffer::from_slice(&ctx, &keys).expect("upload");
        let mut vb = DeviceBuffer::from_slice(&ctx, &values).expect("upload");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::new("full_sort", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    kb.write(&keys).expect("restore keys");
                    vb.write(&values).expect("restore values");
                    let events = full
                        .sort_pairs(&mut kb, &mut vb, Order::Ascending)
                        .expect("sort");
                    total += events.device_time().expect("profiling");
                }
                total
            })
        });
        group.bench_function(BenchmarkId::new("radix_sort", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    kb.write(&keys).expect("restore keys");
                    vb.write(&values).expect("restore values");
                    let events = radix
                        .sort_pairs(&mut kb, &mut vb, Order::Ascending)
                        .expect("sort");
                    total += events.device_time().expect("profiling");
                }
                total
            })
        });
        for (name, step) in [
            ("partial_merge_step", Some(LocalStep::Merge)),
            ("partial_sort_step", Some(LocalStep::Sort)),
            ("partial_redistribute", None),
        ] {
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let events = match step {
                            Some(step) => partial.local_step_on(
                                &mut kb,
                                &mut vb,
                                Order::Ascending,
                                step,
                                BlockPhase::Even,
                            ),
                            None => partial.redistribute(&mut kb, &mut vb, Order::Ascending),
                        }
                        .expect("partial step");
                        total += events.device_time().expect("profiling");
                    }
                    total
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_sort);
criterion_main!(benches);
