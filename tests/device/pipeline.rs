//! One frame pipeline on a real device (PoCL in CI): gml kernels enqueued in chains that do not
//! wait, reductions whose results stay on the device, field buffers bound by other code, and
//! kernels edited on disk whose signature no longer matches.

use std::process::Command;

use crate::common::{sample, temp_dir, text};
use snowsim::cl::{self, BufferArg, DeviceSelector, Program, Source, Timeline};
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind, Reduction, Solution};

fn gml() -> Gml {
    Gml::new(&DeviceSelector::Default).expect("an OpenCL device (PoCL in CI)")
}

/// A chain on the cube: per vertex `Tmp = U * 0.5 + x`, then per vertex the mean of `Tmp`
/// over the triangles around it (through their barycentres, a scatter/gather pair), written
/// back to `U`. Returns the instance, `U` and the three kernels.
struct Chain {
    gml: Gml,
    u: Solution<f32>,
    kernels: [snowsim::gml::KernelId; 3],
}

fn chain() -> Chain {
    let mesh = sample("sphere_surface.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let n = mesh.vertices.len();
    let u = g.new_solution::<f32>(MeshKind::Vertices, 1, "U").unwrap();
    let tmp = g.new_solution::<f32>(MeshKind::Vertices, 1, "Tmp").unwrap();
    let bar = g
        .new_solution::<f32>(MeshKind::Triangles, 1, "Bar")
        .unwrap();
    let init: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    g.set_block(u, 0, &init).unwrap();
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let half = g
        .compile(
            KernelSpec::new("halve", MeshKind::Vertices)
                .access(Access::read(vertices))
                .access(Access::read(u))
                .access(Access::write(tmp))
                .body("VerTmp = VerU * 0.5f + VerCrd.x;"),
        )
        .unwrap();
    let scatter = g
        .compile(
            KernelSpec::new("scatter", MeshKind::Triangles)
                .access(Access::read(tmp))
                .access(Access::write(bar))
                .body("TriBar = (TriTmp[0] + TriTmp[1] + TriTmp[2]) / 3.0f;"),
        )
        .unwrap();
    let gather = g
        .compile(
            KernelSpec::new("gather", MeshKind::Vertices)
                .access(Access::read(bar))
                .access(Access::write(u))
                .body(
                    "float sum = 0.0f;\n\
                     for (int i = 0; i < VerTriDeg; i++) sum += VerTriBar[i];\n\
                     VerU = VerTriDeg > 0 ? sum / VerTriDeg : 0.0f;",
                ),
        )
        .unwrap();
    Chain {
        gml: g,
        u,
        kernels: [half, scatter, gather],
    }
}

/// The same chain computed on the CPU in f64.
fn cpu_chain(iterations: usize) -> Vec<f64> {
    let mesh = sample("sphere_surface.meshb");
    let n = mesh.vertices.len();
    let tris: Vec<[u32; 3]> = mesh
        .elements(snowsim::meshio::ElementKind::Triangles)
        .iter()
        .map(|(t, _)| [t[0], t[1], t[2]])
        .collect();
    let mut u: Vec<f64> = (0..n).map(|i| (i % 7) as f64).collect();
    for _ in 0..iterations {
        let tmp: Vec<f64> = (0..n)
            .map(|i| u[i] * 0.5 + mesh.vertices[i][0] as f32 as f64)
            .collect();
        let mut sum = vec![0.0; n];
        let mut deg = vec![0u32; n];
        for t in &tris {
            let bar = t.iter().map(|&v| tmp[v as usize]).sum::<f64>() / 3.0;
            for &v in t {
                sum[v as usize] += bar;
                deg[v as usize] += 1;
            }
        }
        u = (0..n)
            .map(|i| {
                if deg[i] > 0 {
                    sum[i] / deg[i] as f64
                } else {
                    0.0
                }
            })
            .collect();
    }
    u
}

#[test]
fn a_chain_enqueued_without_waiting_matches_launches_that_wait_and_the_cpu() {
    const ITERATIONS: usize = 25;
    let mut waited = chain();
    for _ in 0..ITERATIONS {
        for k in waited.kernels {
            waited.gml.launch(k).unwrap();
        }
    }
    let by_launch = waited.gml.read_all(waited.u).unwrap();

    let mut chained = chain();
    let mut timeline = chained.gml.context().timeline();
    for _ in 0..ITERATIONS {
        timeline.stage("solver.halve");
        chained
            .gml
            .enqueue(chained.kernels[0], &mut timeline)
            .unwrap();
        timeline.stage("solver.smooth");
        chained
            .gml
            .enqueue(chained.kernels[1], &mut timeline)
            .unwrap();
        chained
            .gml
            .enqueue(chained.kernels[2], &mut timeline)
            .unwrap();
    }
    let by_chain = chained.gml.read_all(chained.u).unwrap();
    assert_eq!(by_chain, by_launch, "same kernels, same order, same bits");

    let cpu = cpu_chain(ITERATIONS);
    for (i, (got, want)) in by_chain.iter().zip(&cpu).enumerate() {
        assert!(
            (f64::from(*got) - want).abs() <= 1e-4 * (1.0 + want.abs()),
            "vertex {i}: {got} vs {want}"
        );
    }

    // One launch per kernel per link table; the gather runs once per degree class.
    let tables = chained
        .gml
        .link_info(MeshKind::Vertices, MeshKind::Triangles)
        .unwrap()
        .tables
        .len();
    assert_eq!(timeline.len(), ITERATIONS * (2 + tables));
    let stages = timeline.resolve().unwrap();
    let names: Vec<&str> = stages.iter().map(|s| s.stage.as_str()).collect();
    assert_eq!(names, ["solver.halve", "solver.smooth"]);
    assert_eq!(stages[0].launches as usize, ITERATIONS);
    assert_eq!(stages[1].launches as usize, ITERATIONS * (1 + tables));
    for s in &stages {
        assert!(s.device && s.span >= s.busy, "{s:?}");
    }
    // Launches that wait are counted per kernel; the chained ones belong to the timeline.
    assert_eq!(
        waited.gml.counters().get("halve").unwrap().launches as usize,
        ITERATIONS
    );
    assert!(chained.gml.counters().get("halve").is_none());
}

#[test]
fn host_changes_between_enqueued_launches_reach_the_device() {
    let mut c = chain();
    let mut timeline = Timeline::default();
    c.gml.enqueue(c.kernels[0], &mut timeline).unwrap();
    let n = c.gml.count(MeshKind::Vertices).unwrap();
    // New values on the host: the next launch must upload them, not reuse what it prepared.
    c.gml.set_block(c.u, 0, &vec![2.0f32; n]).unwrap();
    let tmp_kernel = c.kernels[0];
    c.gml.enqueue(tmp_kernel, &mut timeline).unwrap();
    c.gml.enqueue(c.kernels[1], &mut timeline).unwrap();
    c.gml.enqueue(c.kernels[2], &mut timeline).unwrap();
    let u = c.gml.read_all(c.u).unwrap();
    let (vertices, _) = c.gml.vertices().unwrap();
    // With U = 2 everywhere, Tmp = 1 + x; U is the mean over neighbouring triangles of the
    // mean of their corners' Tmp, so it lies between the smallest and largest 1 + x.
    let (lo, hi) = vertices.iter().fold((f32::MAX, f32::MIN), |(a, b), p| {
        (a.min(1.0 + p[0]), b.max(1.0 + p[0]))
    });
    for (i, v) in u.iter().enumerate() {
        assert!(
            *v >= lo - 1e-5 && *v <= hi + 1e-5,
            "vertex {i}: {v} outside {lo}..{hi}"
        );
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct SolverScalars {
    norm: f32,
    sum: f32,
    max: f32,
    scale: f32,
}

#[test]
fn reductions_leave_solver_scalars_on_the_device_for_the_next_kernel() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let n = mesh.vertices.len();
    let values: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
    let r = g.new_solution::<f32>(MeshKind::Vertices, 1, "R").unwrap();
    g.set_block(r, 0, &values).unwrap();
    let params = g
        .new_parameters::<SolverScalars>(
            "typedef struct { float norm; float sum; float max; float scale; } GmlParSct;",
        )
        .unwrap();
    g.upload_parameters(
        &params,
        &SolverScalars {
            scale: 3.0,
            ..Default::default()
        },
    )
    .unwrap();
    let scaled = g
        .new_solution::<f32>(MeshKind::Vertices, 1, "Scaled")
        .unwrap();
    let normalise = g
        .compile(
            KernelSpec::new("normalise", MeshKind::Vertices)
                .access(Access::read(r))
                .access(Access::write(scaled))
                .body("VerScaled = GmlPar->scale * VerR / GmlPar->norm;"),
        )
        .unwrap();
    let mut timeline = g.context().timeline();
    timeline.stage("solver.reduce");
    g.reduce_into_parameters(r, Reduction::L2, &params, 0, &mut timeline)
        .unwrap();
    g.reduce_into_parameters(r, Reduction::Sum, &params, 4, &mut timeline)
        .unwrap();
    g.reduce_into_parameters(r, Reduction::Max, &params, 8, &mut timeline)
        .unwrap();
    timeline.stage("solver.normalise");
    g.enqueue(normalise, &mut timeline).unwrap();
    // Read the scalars without stopping the queue, then wait for them.
    let pending = g.download_parameters_async(&params).unwrap();
    let scalars = pending.wait().unwrap();

    let norm = values
        .iter()
        .map(|&x| f64::from(x).powi(2))
        .sum::<f64>()
        .sqrt();
    let sum: f64 = values.iter().map(|&x| f64::from(x)).sum();
    let max = values.iter().copied().fold(f32::MIN, f32::max);
    assert!(
        (f64::from(scalars.norm) - norm).abs() <= 1e-5 * norm,
        "{scalars:?} vs {norm}"
    );
    assert!(
        (f64::from(scalars.sum) - sum).abs() <= 1e-3,
        "{scalars:?} vs {sum}"
    );
    assert_eq!(scalars.max, max);
    assert_eq!(scalars.scale, 3.0, "the other fields are untouched");
    let got = g.read_all(scaled).unwrap();
    for (i, (g, v)) in got.iter().zip(&values).enumerate() {
        let want = 3.0 * f64::from(*v) / norm;
        assert!(
            (f64::from(*g) - want).abs() <= 1e-5,
            "vertex {i}: {g} vs {want}"
        );
    }
    // One launch per reduction (the last work-group folds the partials), one kernel.
    assert_eq!(timeline.len(), 3 + 1);

    // Into a buffer too, and the offsets are checked.
    let out = cl::DeviceBuffer::<f32>::zeroed(g.context(), 4).unwrap();
    g.reduce_into(r, Reduction::Min, &out, 2, &mut timeline)
        .unwrap();
    let min = values.iter().copied().fold(f32::MAX, f32::min);
    assert_eq!(out.read().unwrap(), [0.0, 0.0, min, 0.0]);
    assert!(
        g.reduce_into(r, Reduction::Min, &out, 4, &mut timeline)
            .is_err()
    );
    assert!(
        g.reduce_into_parameters(r, Reduction::Sum, &params, 2, &mut timeline)
            .is_err()
    );
    assert!(
        g.reduce_into_parameters(r, Reduction::Sum, &params, 16, &mut timeline)
            .is_err()
    );
}

#[test]
fn a_field_buffer_binds_in_other_kernels_and_goes_stale_with_its_mesh() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let n = mesh.vertices.len();
    let f = g
        .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "F")
        .unwrap();
    let values: Vec<[f32; 4]> = (0..n).map(|i| [i as f32, 1.0, 2.0, 3.0]).collect();
    g.set_block(f, 0, &values).unwrap();
    let buffer = g.field_buffer(f).unwrap();
    assert_eq!((buffer.len(), buffer.name()), (n, "F"));

    // Another module's kernel doubles it in place, through the handle: no copy.
    let source = Source::new(
        "double.cl",
        "__kernel void double_it(__global float4 *f, const uint n) {\n\
             uint i = get_global_id(0); if (i < n) f[i] *= 2.0f; }\n",
    );
    let context = g.context().clone();
    let program = Program::build(&context, &[source], "").unwrap();
    let kernel = program.kernel("double_it").unwrap();
    let mut call = kernel.call();
    // SAFETY: the field holds n float4; the kernel guards i < n.
    unsafe { call.buffer(&buffer).unwrap().arg(&(n as u32)).unwrap() };
    call.enqueue(&context, kernel.work_size(&context, n).unwrap())
        .unwrap()
        .wait()
        .unwrap();
    g.mark_device_newer(f).unwrap();
    let doubled = g.read_all(f).unwrap();
    assert_eq!(doubled[5], [10.0, 2.0, 4.0, 6.0]);

    // Replacing the vertices makes the handle stale: binding it is an error, not old data.
    g.new_mesh(MeshKind::Vertices, 3).unwrap();
    assert!(!buffer.is_current());
    let mut call = kernel.call();
    let err = unsafe { call.buffer(&buffer) }
        .err()
        .expect("a stale handle is refused");
    assert!(matches!(err, cl::Error::Stale(_)), "{err}");
    assert!(err.to_string().contains("field `F`"), "{err}");
}

/// The signature of every kernel the program loads, with one parameter added: `snowsim run`
/// and `selftest` must refuse it with a message naming the kernel, the argument and the file.
#[test]
fn a_kernel_edited_with_another_signature_is_a_clear_error_not_a_panic() {
    let dir = temp_dir("pipeline", "signature");
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let edit = |file: &str, changes: &[(&str, &str)]| {
        let mut text = std::fs::read_to_string(kernels.join(file)).unwrap();
        for (from, to) in changes {
            assert!(text.contains(from), "{file} no longer has `{from}`");
            text = text.replacen(from, to, 1);
        }
        std::fs::write(dir.join(file), text).unwrap();
    };
    // An argument added to the snow's step, and one removed from the triad (its body still
    // compiles: `scale` becomes a macro).
    edit(
        "snow.cl",
        &[(
            "__kernel void snow_step(__global float4 *restrict pos,",
            "__kernel void snow_step(__global float4 *restrict pos, const float added,",
        )],
    );
    edit(
        "selftest.cl",
        &[
            ("                    const float scale,\n", ""),
            (
                "__kernel void triad(",
                "#define scale 0.5f\n__kernel void triad(",
            ),
        ],
    );
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_snowsim"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("SNOWSIM_KERNEL_DIR", &dir)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&[
        "run",
        "--headless",
        "--frames",
        "2",
        "--size",
        "64x48",
        "--particles",
        "256",
        "--scene",
        "scenes/flat.toml",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("snow_step") && stderr.contains("snow.cl"),
        "the message names the kernel and the file: {stderr}"
    );
    assert!(stderr.contains("argument"), "{stderr}");

    let out = run(&["selftest"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("triad") && stderr.contains("selftest.cl") && stderr.contains("argument"),
        "{stderr}"
    );
}

/// `snowsim ARGS` in the repository with `SNOWSIM_KERNEL_DIR=dir`: exit status 1, no panic;
/// returns stderr.
fn fails_with_kernels_from(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SNOWSIM_KERNEL_DIR", dir)
        .args(args)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// The wind's solver ...
const WIND: &[&str] = &["wind", "--scene", "scenes/flat.toml", "--steps", "1"];
/// ... and the snow's frame, without the wind (the scene's inflow profile).
const SNOW: &[&str] = &[
    "bench",
    "snow",
    "--scene",
    "scenes/flat.toml",
    "--log2",
    "8",
    "--frames",
    "1",
    "--warmup",
    "0",
    "--sort",
    "off",
];

/// Every kernel file is read from `SNOWSIM_KERNEL_DIR`, also the wind's `wind.cl` and
/// `tet_walk.cl` that gml pastes before each of the solver's kernels (they were embedded with
/// `include_str!` alone, and their copies ignored): a copy with an `#error` on a known line is
/// what the compiler sees, and the message points at the copy's file and that line. The walk
/// is also built into the snow's program.
#[test]
fn edited_copies_of_the_wind_and_walk_kernels_are_the_ones_that_run() {
    let kernels = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    for (file, line, commands) in [
        ("wind.cl", 6, &[WIND][..]),
        ("tet_walk.cl", 3, &[WIND, SNOW][..]),
    ] {
        let dir = temp_dir("pipeline", &format!("edited-{file}"));
        let original = std::fs::read_to_string(kernels.join(file)).unwrap();
        let marker = format!("edited copy of {file}");
        let mut lines: Vec<&str> = original.lines().collect();
        let error = format!("#error {marker}");
        lines.insert(line - 1, &error);
        std::fs::write(dir.join(file), lines.join("\n") + "\n").unwrap();
        for args in commands {
            let stderr = fails_with_kernels_from(&dir, args);
            assert!(
                stderr.contains(&format!("{file}:{line}:")) && stderr.contains(&marker),
                "{args:?}: the build log points at line {line} of the copy of {file}: {stderr}"
            );
            assert!(stderr.contains("failed to build"), "{stderr}");
        }
        if file == "tet_walk.cl" {
            let stderr = fails_with_kernels_from(&dir, SNOW);
            assert!(
                stderr.contains(
                    "program `tet_walk.cl + snow_deposit.cl + snow.cl + snow_suspend.cl`"
                ),
                "the program is named by its files: {stderr}"
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// A kernel renamed in a copy of `snow.cl` (whose program also holds `tet_walk.cl`) is
/// reported missing from that copy, with its path, not from the program's first file.
#[test]
fn a_kernel_renamed_in_a_copy_is_missing_from_that_copy() {
    let dir = temp_dir("pipeline", "renamed");
    let snow = include_str!("../../kernels/snow.cl");
    let from = "__kernel void snow_step(";
    assert!(snow.contains(from), "snow.cl no longer has `{from}`");
    std::fs::write(
        dir.join("snow.cl"),
        snow.replacen(from, "__kernel void snow_step_renamed(", 1),
    )
    .unwrap();
    let stderr = fails_with_kernels_from(&dir, SNOW);
    let copy = dir.join("snow.cl");
    assert!(
        stderr.contains(&format!(
            "no kernel `snow_step` in the program: snow.cl (from {}) does not define it, and \
             the built-in snow.cl does",
            copy.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("in tet_walk.cl"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}
