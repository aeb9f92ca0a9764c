//! The bitonic sort on a real OpenCL device (PoCL in CI): the full sort against the CPU's
//! `slice::sort_by` on every input shape, key type, order and awkward length; payload arrays
//! permuted with their keys; the partial sort's guarantees (no pair lost, static arrays sorted
//! within the derived number of frames); the sortedness measure; and the `snowsim sort`
//! commands as a user runs them.

use std::process::Command;

use snowsim::cl::{Context, DeviceBuffer};
use snowsim::sort::check::{self, CheckCase, PartialCase, Payload};
use snowsim::sort::inputs::{self, Shape, SplitMix64};
use snowsim::sort::{
    BitonicSorter, KeyKind, LocalStep, Order, PartialConfig, PartialSorter, RadixSorter,
    SortConfig, SortError, Sortedness,
};

use crate::common::{context, snowsim, temp_dir, text};

/// Blocks of 64 pairs: arrays of a few thousand pairs already need many global passes.
fn small_blocks() -> SortConfig {
    SortConfig {
        block_len: Some(64),
        ..SortConfig::default()
    }
}

fn partial(ctx: &Context, redistribute_every: u32, local_step: LocalStep) -> PartialSorter {
    PartialSorter::new(
        ctx,
        &PartialConfig {
            redistribute_every,
            local_step,
            sort: small_blocks(),
        },
    )
    .expect("partial sorter builds")
}

fn run_cases(sorter: &mut BitonicSorter, cases: &[CheckCase]) {
    assert_cases_pass(cases, |case, seed| {
        check::run_case(sorter, case, 100 + seed)
    });
}

/// Runs every case (`run` takes it and its index as a seed) and fails listing those that
/// differ from the CPU's sort.
fn assert_cases_pass(
    cases: &[CheckCase],
    mut run: impl FnMut(&CheckCase, u64) -> snowsim::sort::Result<Option<String>>,
) {
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        if let Some(message) = run(case, i as u64).expect("case runs") {
            failures.push(format!("{case}: {message}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from slice::sort_by:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn full_sort_matches_slice_sort_for_every_shape_length_key_type_and_order() {
    let ctx = context();
    let mut sorter = BitonicSorter::with_config(&ctx, &small_blocks()).unwrap();
    assert_eq!(sorter.block_len(), 64);
    let lengths = check::standard_lengths(64);
    for n in [
        0, 1, 2, 3, 31, 33, 63, 64, 65, 197, 1000, 1023, 1025, 65535, 65537,
    ] {
        assert!(lengths.contains(&n), "{n} missing from {lengths:?}");
    }
    // 2^16 + 1 pairs in blocks of 64: a 2^17 network, 11 merge sizes past the local stage,
    // whose 1 + 2 + … + 11 strides above the block length take ⌈j / global_bits⌉ passes each.
    let global_passes: u32 = (1..=11)
        .map(|j: u32| j.div_ceil(sorter.global_bits()))
        .sum();
    assert_eq!(sorter.launches_for(65537), 1 + 11 + global_passes as usize);
    run_cases(&mut sorter, &check::standard_cases(64));
}

/// Six stages per global pass is the default on NVIDIA GPUs only; forced here, so that CI (on
/// PoCL) runs those kernels too.
#[test]
fn six_stages_per_global_pass_sort_like_slice_sort() {
    let ctx = context();
    let config = SortConfig {
        global_bits: Some(6),
        ..small_blocks()
    };
    let mut sorter = BitonicSorter::with_config(&ctx, &config).unwrap();
    assert_eq!(sorter.global_bits(), 6);
    let mut cases = Vec::new();
    for len in [65, 1025, (1 << 16) + 1] {
        for key in KeyKind::ALL {
            for order in Order::ALL {
                cases.push(CheckCase {
                    key,
                    shape: Shape::Random,
                    len,
                    order,
                    payload: Payload::Indices,
                });
            }
        }
    }
    run_cases(&mut sorter, &cases);
}

#[test]
fn default_blocks_sort_lengths_past_one_work_group() {
    let ctx = context();
    let mut sorter = BitonicSorter::new(&ctx).unwrap();
    let l = sorter.block_len();
    assert!(l.is_power_of_two() && l >= 64, "{l}");
    assert!(l <= ctx.info().max_work_group_size * 16);
    let mut cases = Vec::new();
    for len in [l - 1, l + 1, 3 * l + 5, (1 << 16) + 1] {
        for key in KeyKind::ALL {
            for order in Order::ALL {
                for (shape, payload) in [
                    (Shape::Random, Payload::Values),
                    (Shape::FewUnique, Payload::Indices),
                ] {
                    cases.push(CheckCase {
                        key,
                        shape,
                        len,
                        order,
                        payload,
                    });
                }
            }
        }
    }
    run_cases(&mut sorter, &cases);
}

#[test]
fn f32_keys_sort_in_total_order_with_negative_zero_first_and_nans_at_the_ends() {
    let ctx = context();
    let mut sorter = BitonicSorter::with_config(&ctx, &small_blocks()).unwrap();
    let neg_nan = f32::from_bits(0xFFC0_0000);
    let keys = [
        f32::NAN,
        1.0,
        -0.0,
        0.0,
        f32::NEG_INFINITY,
        neg_nan,
        f32::INFINITY,
        -1.0,
        0.0,
        -0.0,
    ];
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for (order, expected_indices) in [
        (Order::Ascending, [5u32, 4, 7, 2, 9, 3, 8, 1, 6, 0]),
        // Equal keys keep their index order in both directions (values break ties).
        (Order::Descending, [0u32, 6, 1, 3, 8, 2, 9, 7, 4, 5]),
    ] {
        let mut k = DeviceBuffer::from_slice(&ctx, &keys).unwrap();
        let mut idx = DeviceBuffer::<u32>::uninit(&ctx, keys.len()).unwrap();
        sorter.sort_with_indices(&mut k, &mut idx, order).unwrap();
        assert_eq!(idx.read().unwrap(), expected_indices, "{order}");
        let expected: Vec<f32> = expected_indices.iter().map(|&i| keys[i as usize]).collect();
        assert_eq!(
            bits(&k.read().unwrap()),
            bits(&expected),
            "{order}: exact bits"
        );
    }
}

#[test]
fn every_key_keeps_its_value() {
    let ctx = context();
    let mut sorter = BitonicSorter::with_config(&ctx, &small_blocks()).unwrap();
    for len in [5000, 4096] {
        let keys: Vec<u32> = inputs::keys(Shape::FewUnique, len, 9);
        let values = inputs::values(len, 9);
        let mut kb = DeviceBuffer::from_slice(&ctx, &keys).unwrap();
        let mut vb = DeviceBuffer::from_slice(&ctx, &values).unwrap();
        let events = sorter
            .sort_pairs(&mut kb, &mut vb, Order::Descending)
            .unwrap();
        assert_eq!(events.len(), sorter.launches_for(len));
        let (k, v) = (kb.read().unwrap(), vb.read().unwrap());
        assert!(k.windows(2).all(|w| w[0] >= w[1]));
        let mut before: Vec<(u32, u32)> = keys.into_iter().zip(values).collect();
        let mut after: Vec<(u32, u32)> = k.into_iter().zip(v).collect();
        before.sort_unstable();
        after.sort_unstable();
        assert_eq!(before, after, "the multiset of (key, value) pairs changed");
        assert!(events.device_time().unwrap() > std::time::Duration::ZERO);
    }
}

#[test]
fn permute_moves_particle_rows_with_their_keys() {
    let ctx = context();
    let mut sorter = BitonicSorter::with_config(&ctx, &small_blocks()).unwrap();
    let n = 3001;
    let mut rng = SplitMix64::new(5);
    let positions: Vec<[f32; 4]> = (0..n)
        .map(|i| [rng.below(100) as f32, rng.below(100) as f32, i as f32, 1.0])
        .collect();
    let velocities: Vec<[f32; 4]> = (0..n).map(|i| [-(i as f32), 0.5, 2.0, 0.0]).collect();
    // Key: the particle's cell in a 100 x 100 grid, x fastest.
    let keys: Vec<u32> = positions
        .iter()
        .map(|p| p[1] as u32 * 100 + p[0] as u32)
        .collect();
    let mut key_buf = DeviceBuffer::from_slice(&ctx, &keys).unwrap();
    let mut order = DeviceBuffer::<u32>::uninit(&ctx, n).unwrap();
    sorter
        .sort_with_indices(&mut key_buf, &mut order, Order::Ascending)
        .unwrap();
    let pos_buf = DeviceBuffer::from_slice(&ctx, &positions).unwrap();
    let vel_buf = DeviceBuffer::from_slice(&ctx, &velocities).unwrap();
    let mut pos_out = DeviceBuffer::uninit(&ctx, n).unwrap();
    let mut vel_out = DeviceBuffer::uninit(&ctx, n).unwrap();
    sorter.permute(&pos_buf, &order, &mut pos_out).unwrap();
    sorter.permute(&vel_buf, &order, &mut vel_out).unwrap();
    let (order, pos_out, vel_out) = (
        order.read().unwrap(),
        pos_out.read().unwrap(),
        vel_out.read().unwrap(),
    );
    let mut seen = vec![false; n];
    for (i, &j) in order.iter().enumerate() {
        let j = j as usize;
        assert!(!seen[j], "index {j} twice");
        seen[j] = true;
        assert_eq!(pos_out[i], positions[j], "position row {i}");
        assert_eq!(vel_out[i], velocities[j], "velocity row {i}");
    }
    let sorted_keys: Vec<u32> = pos_out
        .iter()
        .map(|p| p[1] as u32 * 100 + p[0] as u32)
        .collect();
    assert!(sorted_keys.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(sorted_keys, key_buf.read().unwrap());

    // An index out of range fills the row with NaN instead of reading out of bounds.
    let bad = DeviceBuffer::from_slice(&ctx, &[1u32, 7, u32::MAX]).unwrap();
    let src = DeviceBuffer::from_slice(&ctx, &positions[..3]).unwrap();
    let mut dst = DeviceBuffer::uninit(&ctx, 3).unwrap();
    sorter.permute(&src, &bad, &mut dst).unwrap();
    let dst = dst.read().unwrap();
    assert_eq!(dst[0], positions[1]);
    assert!(dst[1].iter().chain(&dst[2]).all(|x| x.is_nan()));
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let ctx = context();
    let mut sorter = BitonicSorter::with_config(&ctx, &small_blocks()).unwrap();
    let mut keys = DeviceBuffer::from_slice(&ctx, &[1u32, 2, 3]).unwrap();
    let mut values = DeviceBuffer::from_slice(&ctx, &[1u32, 2]).unwrap();
    let err = sorter
        .sort_pairs(&mut keys, &mut values, Order::Ascending)
        .unwrap_err();
    assert!(
        matches!(err, SortError::LengthMismatch { keys: 3, values: 2 }),
        "{err}"
    );
    assert!(err.to_string().contains("3 keys but 2 values"));
    let rows = DeviceBuffer::from_slice(&ctx, &[[0f32; 4]; 3]).unwrap();
    let mut out = DeviceBuffer::<[f32; 4]>::uninit(&ctx, 3).unwrap();
    let err = sorter.permute(&rows, &values, &mut out).unwrap_err();
    assert!(
        matches!(err, SortError::PermuteLength { indices: 2, dst: 3 }),
        "{err}"
    );
    let mut partial = partial(&ctx, 5, LocalStep::Merge);
    assert!(matches!(
        partial.step_pairs(&mut keys, &mut values, Order::Ascending),
        Err(SortError::LengthMismatch { .. })
    ));
    assert_eq!(partial.frame(), 0, "a refused step is not a frame");

    for bad in [100, 32, 1 << 30] {
        let config = SortConfig {
            block_len: Some(bad),
            ..SortConfig::default()
        };
        let err = match BitonicSorter::with_config(&ctx, &config) {
            Err(e) => e,
            Ok(_) => panic!("block length {bad} accepted"),
        };
        assert!(matches!(err, SortError::BlockLen { requested, .. } if requested == bad));
    }
    let config = SortConfig {
        global_bits: Some(7),
        ..SortConfig::default()
    };
    assert!(matches!(
        BitonicSorter::with_config(&ctx, &config),
        Err(SortError::GlobalBits(7))
    ));
}

/// Runs `sorter` on `keys` (values = indices) until sorted or `limit` frames; returns the
/// frames taken, checking after every frame that no pair was lost.
fn frames_until_sorted(ctx: &Context, sorter: &mut PartialSorter, keys: &[u32], limit: u64) -> u64 {
    sorter.reset();
    let n = keys.len();
    let mut kb = DeviceBuffer::from_slice(ctx, keys).unwrap();
    let mut vb = DeviceBuffer::from_slice(ctx, &(0..n as u32).collect::<Vec<_>>()).unwrap();
    for frame in 0..=limit {
        let k = kb.read().unwrap();
        let v = vb.read().unwrap();
        assert!(
            k.iter().zip(&v).all(|(&key, &i)| keys[i as usize] == key),
            "frame {frame}: a key lost its value"
        );
        let mut sorted_values = v.clone();
        sorted_values.sort_unstable();
        assert!(
            sorted_values
                .iter()
                .enumerate()
                .all(|(i, &x)| x == i as u32)
        );
        if Sortedness::of(&k, Order::Ascending).is_sorted() {
            return frame;
        }
        if frame < limit {
            sorter
                .step_pairs(&mut kb, &mut vb, Order::Ascending)
                .unwrap();
        }
    }
    limit + 1
}

#[test]
fn partial_sort_sorts_a_static_array_within_the_derived_number_of_frames() {
    let ctx = context();
    let n = 1000;
    for local_step in [LocalStep::Merge, LocalStep::Sort] {
        let mut sorter = partial(&ctx, 0, local_step);
        // Half-blocks of 32: ⌈1000 / 32⌉ = 32 rounds of block odd-even transposition.
        let bound = sorter.frames_to_sort(n);
        assert_eq!(bound, 32);
        let reversed: Vec<u32> = inputs::keys(Shape::Reversed, n, 1);
        let distinct = {
            let mut d = reversed.clone();
            d.dedup();
            d.len() == n
        };
        assert!(distinct);
        // Reversed input is the worst case: it needs every one of the frames.
        assert_eq!(
            frames_until_sorted(&ctx, &mut sorter, &reversed, bound),
            bound,
            "{local_step:?}"
        );
        for seed in 0..3 {
            let keys: Vec<u32> = inputs::keys(Shape::Random, n, seed);
            let frames = frames_until_sorted(&ctx, &mut sorter, &keys, bound);
            assert!(
                frames <= bound,
                "{local_step:?} seed {seed}: {frames} frames"
            );
        }
        // With redistribution the bound still holds, and the reversed array sorts faster.
        let mut sorter = partial(&ctx, 3, local_step);
        let frames = frames_until_sorted(&ctx, &mut sorter, &reversed, bound);
        assert!(
            frames < bound,
            "{local_step:?} with redistribution: {frames} frames"
        );
        for seed in 0..3 {
            let keys: Vec<u32> = inputs::keys(Shape::FewUnique, n - 1, seed);
            let frames = frames_until_sorted(&ctx, &mut sorter, &keys, bound);
            assert!(
                frames <= bound,
                "{local_step:?} seed {seed}: {frames} frames"
            );
        }
    }
}

#[test]
fn partial_sort_never_loses_or_duplicates_a_pair_while_keys_drift() {
    let ctx = context();
    let config = PartialConfig {
        sort: small_blocks(),
        ..PartialConfig::default()
    };
    for local_step in [LocalStep::Merge, LocalStep::Sort] {
        for (len, redistribute_every) in [(5000, 5), (777, 2), (20, 3)] {
            let case = PartialCase {
                len,
                redistribute_every,
                local_step,
                drift: 3.0,
                respawn: 0.002,
                frames: 60,
            };
            let outcome = check::run_partial_case(&ctx, &config, &case, 11).unwrap();
            assert_eq!(outcome, None, "{case}");
        }
    }
    // The default block (the device's) on 2^16 + 1 keys.
    let case = check::standard_partial_cases(64)[2];
    assert_eq!(case.len, (1 << 16) + 1);
    let outcome = check::run_partial_case(&ctx, &PartialConfig::default(), &case, 12).unwrap();
    assert_eq!(outcome, None, "{case}");
}

#[test]
fn partial_sort_keeps_drifting_keys_nearly_sorted() {
    let ctx = context();
    let mut sorter = partial(&ctx, 5, LocalStep::Merge);
    let n = 4096;
    let mut rng = SplitMix64::new(3);
    let mut keys: Vec<u32> = inputs::keys(Shape::Sorted, n, 3);
    let mut kb = DeviceBuffer::from_slice(&ctx, &keys).unwrap();
    let mut vb = DeviceBuffer::from_slice(&ctx, &(0..n as u32).collect::<Vec<_>>()).unwrap();
    let mut worst = 0.0f64;
    let mut drifted_only = Vec::new();
    for frame in 0..40 {
        check::drift_keys(&mut keys, 2.0, 0.0, &mut rng);
        drifted_only.push(Sortedness::of(&keys, Order::Ascending).inversion_fraction);
        kb.write(&keys).unwrap();
        let step = sorter
            .step_pairs(&mut kb, &mut vb, Order::Ascending)
            .unwrap();
        assert_eq!(step.frame, frame);
        assert_eq!(step.redistributed, frame % 5 == 4);
        let expected_step = if frame == 0 || step.redistributed {
            LocalStep::Sort
        } else {
            LocalStep::Merge
        };
        assert_eq!(step.local_step, expected_step);
        keys = kb.read().unwrap();
        let s = Sortedness::of(&keys, Order::Ascending);
        worst = worst.max(s.inversion_fraction);
        assert!(s.mean_displacement < 4.0, "frame {frame}: {s:?}");
    }
    // Drifting by ±2 positions inverts about a third of all neighbours each frame; the
    // partial sort keeps the array far closer to sorted than that.
    let drift_level = drifted_only.iter().sum::<f64>() / drifted_only.len() as f64;
    assert!(drift_level > 0.2, "{drift_level}");
    assert!(
        worst < drift_level / 2.0,
        "worst {worst}, drift alone {drift_level}"
    );
}

#[test]
fn step_with_indices_gives_the_permutation_for_payload_arrays() {
    let ctx = context();
    let mut sorter = partial(&ctx, 2, LocalStep::Merge);
    let n = 1500;
    let mut rng = SplitMix64::new(8);
    let mut keys: Vec<u32> = inputs::keys(Shape::Random, n, 8);
    let mut rows: Vec<[f32; 4]> = (0..n).map(|i| [i as f32, 0.0, 0.0, 1.0]).collect();
    let mut kb = DeviceBuffer::from_slice(&ctx, &keys).unwrap();
    let mut idx = DeviceBuffer::<u32>::uninit(&ctx, n).unwrap();
    let mut rows_a = DeviceBuffer::from_slice(&ctx, &rows).unwrap();
    let mut rows_b = DeviceBuffer::<[f32; 4]>::uninit(&ctx, n).unwrap();
    for frame in 0..12 {
        let step = sorter
            .step_with_indices(&mut kb, &mut idx, Order::Ascending)
            .unwrap();
        assert_eq!(step.frame, frame);
        sorter.permute(&rows_a, &idx, &mut rows_b).unwrap();
        std::mem::swap(&mut rows_a, &mut rows_b);
        let (new_keys, order) = (kb.read().unwrap(), idx.read().unwrap());
        for (i, &j) in order.iter().enumerate() {
            assert_eq!(new_keys[i], keys[j as usize], "frame {frame} row {i}");
        }
        rows = order.iter().map(|&j| rows[j as usize]).collect();
        assert_eq!(rows_a.read().unwrap(), rows, "frame {frame}");
        keys = new_keys;
        check::drift_keys(&mut keys, 1.0, 0.01, &mut rng);
        kb.write(&keys).unwrap();
    }
}

#[test]
fn redistribution_leaves_sorted_arrays_alone_and_brings_a_far_element_home() {
    let ctx = context();
    let config = PartialConfig {
        redistribute_every: 0,
        ..PartialConfig::default()
    };
    let mut sorter = PartialSorter::new(&ctx, &config).unwrap();
    let l = sorter.block_len();
    let n = 16 * l;
    let sorted: Vec<u32> = (0..n as u32).map(|i| i * 3).collect();
    let mut kb = DeviceBuffer::from_slice(&ctx, &sorted).unwrap();
    let mut vb = DeviceBuffer::from_slice(&ctx, &vec![0u32; n]).unwrap();
    sorter
        .redistribute(&mut kb, &mut vb, Order::Ascending)
        .unwrap();
    assert_eq!(kb.read().unwrap(), sorted);

    // The largest key at the front: local steps would need 2 · 16 frames to carry it home;
    // one redistribution puts it in the last 16 pieces (its group's last piece is there).
    let mut keys = sorted.clone();
    keys.rotate_right(1);
    let mut kb = DeviceBuffer::from_slice(&ctx, &keys).unwrap();
    sorter
        .redistribute(&mut kb, &mut vb, Order::Ascending)
        .unwrap();
    let after = kb.read().unwrap();
    let at = after
        .iter()
        .position(|&k| k == *sorted.last().unwrap())
        .unwrap();
    let blocks = n / l;
    assert!(at >= n - blocks * snowsim::sort::PIECE_LEN, "{at}");
    let before = Sortedness::of(&keys, Order::Ascending);
    let now = Sortedness::of(&after, Order::Ascending);
    assert!(
        now.max_displacement < before.max_displacement / 10,
        "{before:?} -> {now:?}"
    );
}

#[test]
fn sort_check_passes_and_names_the_failing_case_when_a_kernel_is_wrong() {
    let out = snowsim(&["sort", "check", "--block-len", "64", "--max-len", "1100"]);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("n = 1025") && stdout.contains("checks passed"),
        "{stdout}"
    );
    assert!(!stdout.contains("n = 4097"), "--max-len ignored: {stdout}");

    // A kernel whose small sub-sorts all go one way (no bitonic sequences) must be caught.
    let dir = temp_dir("sort", "broken-kernel");
    let good = include_str!("../../kernels/bitonic.cl");
    let line = "CMPX(v, r, r + stride, asc);";
    assert!(good.contains(line));
    let broken = good.replace(line, "CMPX(v, r, r + stride, true);");
    std::fs::write(dir.join("bitonic.cl"), broken).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(["sort", "check", "--block-len", "64", "--max-len", "40"])
        .env(snowsim::cl::KERNEL_DIR_ENV, &dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("sort checks failed")
            && stderr.contains("keys, n=")
            && stderr.contains("first"),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains("FAIL"));
}

#[test]
fn sort_bench_writes_csv_rows_with_every_setting() {
    let dir = temp_dir("sort", "bench");
    let csv_path = dir.join("sort.csv");
    let out = snowsim(&[
        "sort",
        "bench",
        "--min-log2",
        "10",
        "--max-log2",
        "11",
        "--iterations",
        "2",
        "--warmup",
        "1",
        "--block-len",
        "256",
        "--csv",
        csv_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("merge step") && stdout.contains("Mkeys/s"),
        "{stdout}"
    );
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for column in [
        "device",
        "driver",
        "operation",
        "len",
        "key_type",
        "order",
        "block_len",
        "work_group_size",
        "global_bits",
        "redistribute_every",
        "iterations",
        "seed",
        "best_s",
        "keys_per_s",
    ] {
        assert!(header.contains(&column), "{column} missing from {header:?}");
    }
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2 * 6, "two sizes, six operations: {csv}");
    assert!(
        rows.iter().any(|r| r.contains(",full_sort,10,1024,")),
        "{csv}"
    );
    // The radix sort's row names its own tile and work-group, not the bitonic blocks.
    assert!(
        rows.iter()
            .any(|r| r.contains(",radix_sort,11,2048,") && !r.contains(",256,16,5,")),
        "{csv}"
    );
    assert!(
        rows.iter()
            .any(|r| r.contains(",partial_merge_step,11,2048,")),
        "{csv}"
    );

    let out = snowsim(&["sort", "bench", "--min-log2", "12", "--max-log2", "11"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("--min-log2 12 is larger than --max-log2 11"));
}

#[test]
fn sort_evolve_lists_sortedness_per_frame() {
    let out = snowsim(&[
        "sort",
        "evolve",
        "--len",
        "3000",
        "--frames",
        "12",
        "--block-len",
        "128",
        "--start",
        "random",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let frames: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|step| step.contains("sort-") || step.contains("merge-"))
        })
        .collect();
    assert_eq!(frames.len(), 12, "{stdout}");
    assert!(
        frames[0].contains("sort-even") && frames[1].contains("merge-odd"),
        "{stdout}"
    );
    assert!(frames[4].contains("R+sort"), "{stdout}");
    // ⌈3000 / 64⌉ = 47 frames sort it. Every frame leaves its blocks sorted, so adjacent
    // inversions sit only at the ⌈3000 / 128⌉ block boundaries, while the mean displacement
    // falls frame after frame.
    assert!(stdout.contains("sorted after 47 frames"), "{stdout}");
    let column =
        |line: &str, i: usize| -> f64 { line.split_whitespace().nth(i).unwrap().parse().unwrap() };
    assert!(frames.iter().all(|f| column(f, 2) <= 24.0), "{stdout}");
    let displacement: Vec<f64> = frames.iter().map(|f| column(f, 4)).collect();
    assert!(displacement.windows(2).all(|w| w[1] <= w[0]), "{stdout}");
    assert!(displacement[11] < 0.6 * displacement[0], "{stdout}");
}

#[test]
fn radix_sort_matches_a_stable_slice_sort_for_every_shape_length_key_type_and_order() {
    let ctx = context();
    let mut sorter = RadixSorter::new(&ctx).unwrap();
    let tile = sorter.tile_len();
    // Against the CPU's stable sort: equal keys in their order on entry.
    assert_cases_pass(&check::standard_cases(tile), |case, seed| {
        check::run_radix_case(&mut sorter, case, 300 + seed)
    });
}

#[test]
fn radix_sort_scans_its_counts_in_two_levels_past_one_chunk() {
    let ctx = context();
    let mut sorter = RadixSorter::new(&ctx).unwrap();
    // More tiles than one scan chunk holds counts for (16 a tile, 16 a work-item).
    let len = sorter.tile_len() * sorter.work_group_size() + 3;
    let case = CheckCase {
        key: KeyKind::U32,
        shape: Shape::FewUnique,
        len,
        order: Order::Ascending,
        payload: Payload::Values,
    };
    assert_eq!(check::run_radix_case(&mut sorter, &case, 7).unwrap(), None);
}

#[test]
fn radix_sort_of_small_keys_skips_the_high_digits_and_gives_the_bitonic_order() {
    let ctx = context();
    let mut radix = RadixSorter::new(&ctx).unwrap();
    let mut bitonic = BitonicSorter::new(&ctx).unwrap();
    let mut rng = SplitMix64::new(11);
    // Tetrahedron-like keys below 2^10, many repeated: 10 bits are 3 digits, rounded to 4.
    let keys: Vec<u32> = (0..50_000).map(|_| rng.below(1 << 10)).collect();
    radix.set_key_bits(10);
    assert_eq!(radix.passes(), 4);
    for order in Order::ALL {
        let mut by_radix = DeviceBuffer::from_slice(&ctx, &keys).unwrap();
        let mut by_bitonic = DeviceBuffer::from_slice(&ctx, &keys).unwrap();
        let mut radix_order = DeviceBuffer::<u32>::uninit(&ctx, keys.len()).unwrap();
        let mut bitonic_order = DeviceBuffer::<u32>::uninit(&ctx, keys.len()).unwrap();
        let events = radix
            .sort_with_indices(&mut by_radix, &mut radix_order, order)
            .unwrap();
        assert_eq!(events.len(), radix.launches_for(keys.len()));
        bitonic
            .sort_with_indices(&mut by_bitonic, &mut bitonic_order, order)
            .unwrap();
        assert_eq!(
            radix_order.read().unwrap(),
            bitonic_order.read().unwrap(),
            "{order}"
        );
        assert_eq!(
            by_radix.read().unwrap(),
            by_bitonic.read().unwrap(),
            "{order}"
        );
    }
}

#[test]
fn radix_sort_rejects_mismatched_lengths_and_always_writes_indices() {
    let ctx = context();
    let mut sorter = RadixSorter::new(&ctx).unwrap();
    let mut keys = DeviceBuffer::from_slice(&ctx, &[3u32, 1, 2]).unwrap();
    let mut values = DeviceBuffer::from_slice(&ctx, &[0u32, 1]).unwrap();
    let err = sorter
        .sort_pairs(&mut keys, &mut values, Order::Ascending)
        .unwrap_err();
    assert!(
        matches!(err, SortError::LengthMismatch { keys: 3, values: 2 }),
        "{err}"
    );
    // Keys said to have no bits (a one-tetrahedron mesh's) still get their indices.
    sorter.set_key_bits(0);
    assert_eq!(sorter.passes(), 2);
    let mut same = DeviceBuffer::from_slice(&ctx, &[0u32, 0, 0]).unwrap();
    let mut order = DeviceBuffer::from_slice(&ctx, &[9u32, 9, 9]).unwrap();
    sorter
        .sort_with_indices(&mut same, &mut order, Order::Ascending)
        .unwrap();
    assert_eq!(order.read().unwrap(), [0, 1, 2]);
    let mut one = DeviceBuffer::from_slice(&ctx, &[5u32]).unwrap();
    let mut index = DeviceBuffer::from_slice(&ctx, &[9u32]).unwrap();
    sorter
        .sort_with_indices(&mut one, &mut index, Order::Descending)
        .unwrap();
    assert_eq!(index.read().unwrap(), [0]);
}
