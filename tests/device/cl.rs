//! The OpenCL layer on a real device (PoCL in CI): listing, selection, builds, buffers, a kernel.

use std::time::Duration;

use snowsim::cl::{
    self, Context, ContextOptions, DeviceBuffer, DeviceSelector, GlBuffer, Program, Source,
    Timeline, WorkSize,
};
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
    let hidden = Source::new(
        "hidden.cl",
        "#if 0\n__kernel void hidden(__global int *a) { a[0] = 0; }\n#endif\n",
    );
    let program = Program::build(&ctx, &[src, hidden], "").unwrap();
    let kernel = program.kernel("square").unwrap();
    // A kernel the program lacks names every file of it, or the one that seems to define it.
    let missing = |name: &str| match program.kernel(name) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("the program has no kernel `{name}`"),
    };
    assert_eq!(
        missing("missing"),
        "no kernel `missing` in the program: none of the program's files defines it \
         (square.cl, hidden.cl)"
    );
    assert!(
        missing("hidden").starts_with(
            "no kernel `hidden` in the program: hidden.cl seems to define it, but the compiler \
             made no kernel of it"
        ),
        "{}",
        missing("hidden")
    );
    let data: Vec<i32> = (-500..500).collect();
    let buf = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let mut call = kernel.call();
    // SAFETY: one int buffer, one work-item per value.
    unsafe { call.buffer(&buf).unwrap() };
    let event = call
        .enqueue(
            &ctx,
            WorkSize {
                global: data.len(),
                local: 1,
            },
        )
        .unwrap();
    cl::event_duration(&event).unwrap();
    let expected: Vec<i32> = data.iter().map(|x| x * x).collect();
    assert_eq!(buf.read().unwrap(), expected);
    assert_eq!(kernel.file(), "square.cl");
}

/// `out[i] = a[i] * k + offset` over `n` values, in a file of its own name.
const SCALE: &str = "// scale.cl
__kernel void scale(__global float *out, __global const float *a, const float k,
                    const uint n, const float offset)
{
    const uint i = get_global_id(0);
    if (i < n) out[i] = a[i] * k + offset;
}
";

/// A call of `scale` with every argument set: `out = a · k + offset` over `n` values.
fn scale_call<'k>(
    kernel: &'k cl::Kernel,
    out: &DeviceBuffer<f32>,
    a: &DeviceBuffer<f32>,
    k: f32,
    n: u32,
    offset: f32,
) -> cl::KernelCall<'k> {
    let mut call = kernel.call();
    // SAFETY: the tests make both buffers hold at least `n` floats; the kernel guards i < n.
    unsafe {
        call.buffer(out)
            .unwrap()
            .buffer(a)
            .unwrap()
            .arg(&k)
            .unwrap()
            .arg(&n)
            .unwrap()
            .arg(&offset)
            .unwrap();
    }
    call
}

fn scale_kernel(ctx: &Context) -> cl::Kernel {
    let program = Program::build(ctx, &[Source::new("scale.cl", SCALE)], "").unwrap();
    program.kernel("scale").unwrap()
}

#[test]
fn arguments_that_do_not_match_the_declaration_are_errors_naming_kernel_argument_and_file() {
    let ctx = context();
    let kernel = scale_kernel(&ctx);
    assert_eq!(kernel.arg_count(), 5);
    let out = DeviceBuffer::<f32>::zeroed(&ctx, 64).unwrap();
    let a = DeviceBuffer::from_slice(&ctx, &[1.0f32; 64]).unwrap();
    let work = kernel.work_size(&ctx, 64).unwrap();
    let message = |e: cl::Error| {
        let text = e.to_string();
        assert!(
            matches!(e, cl::Error::KernelArgument { .. }),
            "not an argument error: {text}"
        );
        assert!(
            text.contains("`scale`") && text.contains("scale.cl"),
            "{text}"
        );
        text
    };

    // One argument short: the count is compared before enqueuing.
    let mut call = kernel.call();
    unsafe {
        call.buffer(&out)
            .unwrap()
            .buffer(&a)
            .unwrap()
            .arg(&2.0f32)
            .unwrap()
            .arg(&64u32)
            .unwrap()
    };
    let text = message(call.enqueue(&ctx, work).unwrap_err());
    assert!(
        text.contains("sets 4 arguments") && text.contains("declares 5"),
        "{text}"
    );

    // One too many.
    let mut call = kernel.call();
    let too_many = unsafe {
        call.buffer(&out)
            .and_then(|c| c.buffer(&a))
            .and_then(|c| c.arg(&2.0f32))
            .and_then(|c| c.arg(&64u32))
            .and_then(|c| c.arg(&1.0f32))
            .and_then(|c| c.arg(&1.0f32))
    };
    let text = message(too_many.err().expect("a sixth argument is refused"));
    assert!(text.contains("more arguments than the 5"), "{text}");

    // A value of the wrong type where the driver reports type names (-cl-kernel-arg-info),
    // else of the wrong size (clSetKernelArg's own check).
    let mut call = kernel.call();
    let wrong = unsafe {
        call.buffer(&out)
            .and_then(|c| c.buffer(&a))
            .and_then(|c| c.arg(&[2.0f32; 4]))
    };
    let text = message(wrong.err().expect("a float4 for a float is refused"));
    assert!(text.contains("argument 2"), "{text}");

    // A value where a buffer is declared, and a buffer of 16-byte values for a float pointer.
    let mut call = kernel.call();
    let text = message(
        unsafe { call.arg(&1u32) }
            .err()
            .expect("a value for a pointer"),
    );
    assert!(text.contains("argument 0"), "{text}");
    let wide = DeviceBuffer::<[f32; 4]>::zeroed(&ctx, 16).unwrap();
    let mut call = kernel.call();
    let text = message(
        unsafe { call.buffer(&wide) }
            .err()
            .expect("float4 values for float*"),
    );
    assert!(
        text.contains("argument 0") && text.contains("16-byte"),
        "{text}"
    );

    // After all that, a correct call still runs (nothing stale is kept from failed ones).
    let call = scale_call(&kernel, &out, &a, 3.0f32, 64u32, 0.5f32);
    call.enqueue(&ctx, work).unwrap().wait().unwrap();
    assert_eq!(out.read().unwrap(), vec![3.5f32; 64]);
}

/// A sibling is a second queue on the same OpenCL context: a buffer of either is used by a
/// kernel enqueued on the other, and each queue keeps its own order.
#[test]
fn a_sibling_queue_shares_the_context_and_its_buffers() {
    let ctx = context();
    let sibling = ctx.sibling().unwrap();
    assert_eq!(sibling.cl_context().get(), ctx.cl_context().get());
    assert_ne!(sibling.queue().get(), ctx.queue().get());
    assert_eq!(sibling.info().index, ctx.info().index);
    assert_eq!(sibling.profiling(), ctx.profiling());
    let values: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    // Written through the first queue, scaled by a kernel of the sibling on its queue into a
    // buffer of the sibling, read back through the first.
    let a = DeviceBuffer::from_slice(&ctx, &values).unwrap();
    let out = DeviceBuffer::<f32>::zeroed(&sibling, 1000).unwrap();
    let kernel = scale_kernel(&sibling);
    let work = kernel.work_size(&sibling, 1000).unwrap();
    let call = scale_call(&kernel, &out, &a, -3.0, 1000, 2.0);
    call.enqueue(&sibling, work).unwrap().wait().unwrap();
    let expected: Vec<f32> = values.iter().map(|v| v * -3.0 + 2.0).collect();
    assert_eq!(out.read().unwrap(), expected);
    // The sibling lives on after the context it came from is dropped.
    drop(ctx);
    drop(a);
    assert_eq!(out.read().unwrap(), expected);
}

#[test]
fn unchanged_arguments_are_kept_and_changed_ones_set_again() {
    let ctx = context();
    let kernel = scale_kernel(&ctx);
    let a: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let a = DeviceBuffer::from_slice(&ctx, &a).unwrap();
    let out = DeviceBuffer::<f32>::zeroed(&ctx, 100).unwrap();
    let other = DeviceBuffer::<f32>::zeroed(&ctx, 100).unwrap();
    let work = kernel.work_size(&ctx, 100).unwrap();
    let run = |target: &DeviceBuffer<f32>, k: f32| {
        let call = scale_call(&kernel, target, &a, k, 100u32, 1.0f32);
        call.enqueue(&ctx, work).unwrap().wait().unwrap();
    };
    run(&out, 2.0);
    run(&out, 2.0); // every argument as before: none is set again, the result is the same
    let expected = |k: f32| (0..100).map(|i| i as f32 * k + 1.0).collect::<Vec<f32>>();
    assert_eq!(out.read().unwrap(), expected(2.0));
    run(&other, 3.0); // two arguments changed
    assert_eq!(other.read().unwrap(), expected(3.0));
    assert_eq!(
        out.read().unwrap(),
        expected(2.0),
        "the first output is untouched"
    );
}

#[test]
fn a_timeline_times_stages_once_without_waiting_per_launch() {
    let ctx = context();
    let kernel = scale_kernel(&ctx);
    let n = 1 << 16;
    let a = DeviceBuffer::from_slice(&ctx, &vec![1.0f32; n]).unwrap();
    let out = DeviceBuffer::<f32>::zeroed(&ctx, n).unwrap();
    let work = kernel.work_size(&ctx, n).unwrap();
    let mut timeline = ctx.timeline();
    assert!(timeline.records_events());
    for (stage, launches) in [("first.stage", 3), ("second.stage", 2)] {
        timeline.stage(stage);
        for _ in 0..launches {
            let call = scale_call(&kernel, &out, &a, 2.0f32, n as u32, 0.0f32);
            call.enqueue_into(&ctx, work, &mut timeline).unwrap();
        }
    }
    assert_eq!(timeline.len(), 5);
    let stages = timeline.resolve().unwrap();
    assert!(timeline.is_empty(), "resolve forgets the launches");
    assert_eq!(
        stages
            .iter()
            .map(|s| (s.stage.as_str(), s.launches))
            .collect::<Vec<_>>(),
        [("first.stage", 3), ("second.stage", 2)]
    );
    for s in &stages {
        assert!(s.device && s.busy > Duration::ZERO, "{s:?}");
        // In order: the span from first start to last end covers every kernel's time.
        assert!(s.span >= s.busy, "{s:?}");
    }
    assert_eq!(out.read().unwrap(), vec![2.0f32; n]);

    // A timeline that records no events still launches, and counts.
    let mut quiet = Timeline::new(false);
    let call = scale_call(&kernel, &out, &a, 4.0f32, n as u32, 0.0f32);
    call.enqueue_into(&ctx, work, &mut quiet).unwrap();
    ctx.finish().unwrap();
    assert_eq!((quiet.len(), quiet.resolve().unwrap().len()), (1, 0));
    assert_eq!(out.read().unwrap(), vec![4.0f32; n]);
}

#[test]
fn a_context_without_profiling_runs_kernels_and_says_so() {
    let devices = cl::list_devices().unwrap();
    let entry = DeviceSelector::Default.select(&devices).unwrap();
    let options = ContextOptions {
        profiling: false,
        ..ContextOptions::default()
    };
    let ctx = Context::with_options(entry, &options).unwrap();
    assert!(!ctx.profiling() && !ctx.is_gl_shared());
    assert!(!ctx.timeline().records_events());
    let out = DeviceBuffer::<f32>::zeroed(&ctx, 8).unwrap();
    let a = DeviceBuffer::from_slice(&ctx, &[2.0f32; 8]).unwrap();
    let kernel = scale_kernel(&ctx);
    let call = scale_call(&kernel, &out, &a, 2.0f32, 8u32, 1.0f32);
    let mut timeline = ctx.timeline();
    call.enqueue_into(&ctx, kernel.work_size(&ctx, 8).unwrap(), &mut timeline)
        .unwrap();
    ctx.finish().unwrap();
    assert_eq!(out.read().unwrap(), vec![5.0f32; 8]);
    // A GL buffer needs a GL-shared context: refused, not attempted.
    let refused = unsafe { GlBuffer::<[f32; 4]>::from_gl(&ctx, 1, 4) };
    assert!(refused.is_err());
}

#[test]
fn reads_that_do_not_wait_arrive_and_copies_stay_on_the_device() {
    let ctx = context();
    let data: Vec<u32> = (0..1000).collect();
    let src = DeviceBuffer::from_slice(&ctx, &data).unwrap();
    let mut dst = DeviceBuffer::<u32>::zeroed(&ctx, 1000).unwrap();
    dst.copy_from(&src).unwrap();
    let pending = dst.read_async(990, 10).unwrap();
    let values = pending.wait().unwrap();
    assert_eq!(values, (990..1000).collect::<Vec<u32>>());
    let pending = dst.read_async(0, 1).unwrap();
    ctx.finish().unwrap();
    assert!(pending.is_ready().unwrap());
    assert_eq!(pending.wait().unwrap(), [0]);
    assert!(dst.read_async(999, 2).is_err(), "past the end");
    assert!(dst.read_async(0, 0).is_err(), "nothing to read");
    let short = DeviceBuffer::<u32>::zeroed(&ctx, 10).unwrap();
    assert!(dst.copy_from(&short).is_err(), "lengths differ");
}
