//! The OpenCL layer on a real device (PoCL in CI): listing, selection, builds, buffers, a kernel.

use snowsim::cl::{self, DeviceBuffer, DeviceSelector, Program, Source};
use snowsim::selftest::run_triad;

use crate::common::context;

#[test]
fn every_listed_device_is_selectable_by_index_and_by_name() {
    let devices = cl::list_devices().expect("OpenCL devices");
    assert!(!devices.is_empty());
    for (i, d) in devices.iter().enumerate() {
        assert_eq!(d.info.index, i);
        assert!(d.info.compute_units > 0 && d.info.max_work_group_size > 0);
        assert!(d.info.global_mem_bytes >= d.info.max_alloc_bytes);
        assert_eq!(d.info.gl_sharing, d.info.has_extension("cl_khr_gl_sharing"));
        let by_index = DeviceSelector::Index(i).select(&devices).unwrap();
        assert_eq!(by_index.info.index, i);
        let by_name = DeviceSelector::Name(d.info.name.to_uppercase())
            .select(&devices)
            .unwrap();
        assert_eq!(by_name.info.name, d.info.name);
    }
    assert!(
        DeviceSelector::Index(devices.len())
            .select(&devices)
            .is_err()
    );
}

#[test]
fn triad_matches_the_cpu() {
    let ctx = context();
    // An odd size that is not a multiple of any work-group size exercises the tail guard.
    let report = run_triad(&ctx, 100_003, 3).expect("triad runs and verifies");
    assert_eq!(report.bytes_per_launch, 3 * 16 * 100_003);
    assert!(report.best_seconds > 0.0 && report.best_seconds <= report.mean_seconds * 1.0001);
    assert!(run_triad(&ctx, 0, 1).is_err());
    // Three arrays larger than the device's memory are refused before anything is allocated.
    let too_many = (ctx.info().global_mem_bytes / 16) as usize;
    let err = run_triad(&ctx, too_many.min(u32::MAX as usize), 1).unwrap_err();
    assert!(err.to_string().contains("bytes"), "{err}");
}

#[test]
fn buffers_round_trip_and_count_transfers() {
    let ctx = context();
    let data: Vec<[i32; 4]> = (0..1000).map(|i| [i, -i, i * 3, 7]).collect();
    let before = ctx.transfers();
    let allocated_before = ctx.allocated_bytes();
    let mut buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    assert_eq!(ctx.allocated_bytes() - allocated_before, 16_000);
    assert_eq!(buf.read().unwrap(), data);
    let after = ctx.transfers();
    assert_eq!(after.to_device - before.to_device, 16_000);
    assert_eq!(after.to_host - before.to_host, 16_000);
    let err = buf.write(&vec![[0; 4]; 1001]).unwrap_err().to_string();
    assert!(err.contains("1001") && err.contains("1000"), "{err}");
    let empty = DeviceBuffer::<f32>::zeroed(&ctx, 0).unwrap();
    assert!(empty.read().unwrap().is_empty());
    drop(buf);
    drop(empty);
    assert_eq!(ctx.allocated_bytes(), allocated_before);
}

#[test]
fn build_errors_carry_the_log_with_the_users_file_and_line() {
    let ctx = context();
    let sources = [
        Source::new("prelude.cl", "float twice(float x) { return 2.0f * x; }\n"),
        Source::new(
            "broken.cl",
            "__kernel void k(__global float *a)\n{\n    a[0] = twice(undeclared_thing);\n}\n",
        ),
    ];
    let err = match Program::build(&ctx, &sources, "-cl-mad-enable") {
        Err(e) => e,
        Ok(_) => panic!("a kernel using an undeclared identifier must not build"),
    };
    let text = err.to_string();
    assert!(matches!(err, cl::Error::Build { .. }), "{text}");
    assert!(text.contains("undeclared_thing"), "log missing: {text}");
    assert!(
        text.contains("broken.cl:3"),
        "log does not point at broken.cl line 3: {text}"
    );
    assert!(text.contains("-cl-mad-enable"), "{text}");
}

#[test]
fn a_good_program_builds_and_runs() {
    let ctx = context();
    let src = Source::new(
        "square.cl",
        "__kernel void square(__global int *a) { size_t i = get_global_id(0); a[i] = a[i] * a[i]; }",
    );
    let program = Program::build(&ctx, &[src], "").unwrap();
    let kernel = program.kernel("square").unwrap();
    assert!(program.kernel("missing").is_err());
    let data: Vec<i32> = (-500..500).collect();
    let buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let event = unsafe {
        opencl3::kernel::ExecuteKernel::new(&kernel)
            .set_arg(buf.cl_buffer())
            .set_global_work_size(data.len())
            .enqueue_nd_range(ctx.queue())
    }
    .unwrap();
    cl::event_duration(&event).unwrap();
    let expected: Vec<i32> = data.iter().map(|x| x * x).collect();
    assert_eq!(buf.read().unwrap(), expected);
}
