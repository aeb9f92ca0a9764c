//! Sums a kernel folds itself (`KernelSpec::sums`) against an f64 CPU reference written here:
//! odd lengths, entities whose body returns early, repeated launches (the last-group ticket
//! must reset), an empty loop, a loop through an uplink (one launch per degree table, folded
//! into one finish), and the refusals.

use snowsim::gml::{Access, Gml, GmlError, KernelSpec, MAX_SUMS, MeshKind};
use snowsim::meshio::ElementKind;

use crate::common::gml;

/// What the test kernels' `finish` blocks write.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Totals {
    /// Σ x over the entities that did not return early.
    sum: f64,
    /// Σ x² over them.
    squares: f64,
    /// Running total of `sum` over every launch.
    running: f64,
    /// Entities counted.
    count: f64,
    /// Launches, counted behind a branch on the parameters (PoCL 3.1 ran such a branch in
    /// every work-item of the last group when the fold's barriers sat in a conditional).
    launches: f64,
    /// Set above every sum.
    limit: f64,
}

const TOTALS: &str = "typedef struct { double sum; double squares; double running; \
     double count; double launches; double limit; } GmlParSct;\n";

/// The same struct where the device has no fp64: the sums are then float.
const TOTALS_F32: &str = "typedef struct { float sum; float pad0; float squares; float pad1; float running; \
     float pad2; float count; float pad3; float launches; float pad4; float limit; \
     float pad5; } GmlParSct;\n";

/// The test kernels' `finish`: the totals of three sums (the third counts the entities),
/// a running total over launches, and the launches counted behind a branch.
const FINISH: &str = "GmlPar->sum = GmlSum[0];\n\
     GmlPar->squares = GmlSum[1];\n\
     GmlPar->running += GmlSum[0];\n\
     if (GmlPar->limit > 1) GmlPar->launches += 1;\n\
     GmlPar->count = GmlSum[2];";

/// A kernel over `kind` summing `X` and `X²` of the entities whose index is not 3 modulo 7
/// (those return early), and counting them.
fn sums_kernel(
    g: &mut Gml,
    kind: MeshKind,
    x: snowsim::gml::Solution<f32>,
) -> snowsim::gml::KernelId {
    let l = kind.short();
    g.compile(
        KernelSpec::new(&format!("sums_{l}"), kind)
            .access(Access::read(x))
            .body(&format!(
                "if ({l}Idx % 7 == 3) return;\n\
                 GmlSum[0] = {l}X;\n\
                 GmlSum[1] = (GML_SUM_T){l}X * {l}X;\n\
                 GmlSum[2] = 1;"
            ))
            .sums(3, FINISH),
    )
    .expect("the sums kernel compiles")
}

/// Reads the totals, as doubles whatever the device's precision.
fn totals(g: &mut Gml, params: &snowsim::gml::Parameters<Totals>, fp64: bool) -> [f64; 5] {
    let t = g.download_parameters(params).unwrap();
    if fp64 {
        [t.sum, t.squares, t.running, t.count, t.launches]
    } else {
        let f: [f32; 12] = bytemuck::cast(t);
        [f[0], f[2], f[4], f[6], f[8]].map(f64::from)
    }
}

/// The parameters before the first launch: zeros, and the limit above every sum.
fn start(fp64: bool) -> Totals {
    let limit = 1e30;
    if fp64 {
        Totals {
            limit,
            ..Totals::default()
        }
    } else {
        let mut f = [0.0f32; 12];
        f[10] = limit as f32;
        bytemuck::cast(f)
    }
}

#[test]
fn folded_sums_match_an_f64_reference_on_odd_lengths_and_repeated_launches() {
    let mut g = gml();
    let fp64 = g.has_fp64();
    let lengths = [
        (MeshKind::Tetrahedra, 1),
        (MeshKind::Triangles, 3),
        (MeshKind::Edges, 1023),
        (MeshKind::Vertices, (1 << 20) + 7),
    ];
    let params = g
        .new_parameters::<Totals>(if fp64 { TOTALS } else { TOTALS_F32 })
        .unwrap();
    for (kind, n) in lengths {
        g.new_mesh(kind, n).unwrap();
        let x = g.new_solution::<f32>(kind, 1, "X").unwrap();
        let values: Vec<f32> = (0..n).map(|i| ((i as f32) * 0.61).sin() + 0.25).collect();
        g.set_block(x, 0, &values).unwrap();
        let kernel = sums_kernel(&mut g, kind, x);
        g.upload_parameters(&params, &start(fp64)).unwrap();
        let kept = || values.iter().enumerate().filter(|(i, _)| i % 7 != 3);
        let sum: f64 = kept().map(|(_, v)| f64::from(*v)).sum();
        let squares: f64 = kept().map(|(_, v)| f64::from(*v) * f64::from(*v)).sum();
        let count = kept().count() as f64;
        let tolerance = if fp64 { 1e-12 } else { 1e-5 };
        let close = |got: f64, want: f64| (got - want).abs() <= tolerance * want.abs().max(1.0);
        // Three launches: each must find the ticket back at zero.
        for launch in 1..=3 {
            let mut timeline = g.context().timeline();
            g.enqueue(kernel, &mut timeline).unwrap();
            timeline.wait().unwrap();
            let [s, q, running, c, launches] = totals(&mut g, &params, fp64);
            assert_eq!(
                launches,
                f64::from(launch),
                "{kind} × {n}: the finish ran once a launch"
            );
            assert!(
                close(s, sum),
                "{kind} × {n}, launch {launch}: sum {s} vs {sum}"
            );
            assert!(close(q, squares), "{kind} × {n}: squares {q} vs {squares}");
            assert_eq!(c, count, "{kind} × {n}: entities counted");
            assert!(
                close(running, launch as f64 * sum),
                "{kind} × {n}: running total {running} after {launch} launches"
            );
        }
    }
}

#[test]
fn folded_sums_of_an_empty_loop_are_zero() {
    let mut g = gml();
    let fp64 = g.has_fp64();
    let params = g
        .new_parameters::<Totals>(if fp64 { TOTALS } else { TOTALS_F32 })
        .unwrap();
    g.new_mesh(MeshKind::Vertices, 0).unwrap();
    let x = g.new_solution::<f32>(MeshKind::Vertices, 1, "X").unwrap();
    let kernel = sums_kernel(&mut g, MeshKind::Vertices, x);
    let mut nonzero = start(fp64);
    if fp64 {
        nonzero.sum = 5.0;
        nonzero.count = 7.0;
    } else {
        let mut f: [f32; 12] = bytemuck::cast(nonzero);
        f[0] = 5.0;
        f[6] = 7.0;
        nonzero = bytemuck::cast(f);
    }
    g.upload_parameters(&params, &nonzero).unwrap();
    g.launch(kernel).unwrap();
    // The finish ran, once, with zeros: a stale 5 or 7 would mean it was skipped.
    assert_eq!(totals(&mut g, &params, fp64), [0.0, 0.0, 0.0, 0.0, 1.0]);
}

/// Through the vertex → tetrahedra uplink the kernel runs once per degree table; the sums of
/// every table's launch reach one finish, once per enqueue, against the balls built here.
#[test]
fn folded_sums_through_an_uplink_cover_every_degree_table_once() {
    let mesh = crate::common::sample("cube.meshb");
    let mut g = gml();
    let fp64 = g.has_fp64();
    g.import_mesh(&mesh).unwrap();
    let params = g
        .new_parameters::<Totals>(if fp64 { TOTALS } else { TOTALS_F32 })
        .unwrap();
    let tets = mesh.elements(ElementKind::Tetrahedra);
    let values: Vec<f32> = (0..tets.len())
        .map(|i| ((i as f32) * 0.37).cos() + 0.5)
        .collect();
    let tet_value = g.new_solution::<f32>(MeshKind::Tetrahedra, 1, "T").unwrap();
    g.set_block(tet_value, 0, &values).unwrap();
    let kernel = g
        .compile(
            KernelSpec::new("ball_sums", MeshKind::Vertices)
                .access(Access::read(tet_value))
                .body(
                    "if (VerIdx % 5 == 2) return;\n\
                     GML_SUM_T s = 0;\n\
                     for (int i = 0; i < VerTetDeg; i++) s += VerTetT[i];\n\
                     GmlSum[0] = s;\n\
                     GmlSum[1] = VerTetDeg;\n\
                     GmlSum[2] = 1;",
                )
                .sums(3, FINISH),
        )
        .unwrap();
    let tables = g.kernel_sources(kernel).unwrap().len();
    assert!(
        tables > 1,
        "cube.meshb's balls fill {tables} degree table(s)"
    );

    // The reference: each tetrahedron's value in the ball of each of its vertices.
    let mut ball_sum = vec![0.0f64; mesh.vertices.len()];
    let mut degree = vec![0usize; mesh.vertices.len()];
    for ((nodes, _), &value) in tets.iter().zip(&values) {
        for &v in nodes {
            ball_sum[v as usize] += f64::from(value);
            degree[v as usize] += 1;
        }
    }
    let kept = || (0..mesh.vertices.len()).filter(|v| v % 5 != 2);
    let sum: f64 = kept().map(|v| ball_sum[v]).sum();
    let degrees = kept().map(|v| degree[v]).sum::<usize>() as f64;
    let count = kept().count() as f64;
    let tolerance = if fp64 { 1e-12 } else { 1e-5 };
    g.upload_parameters(&params, &start(fp64)).unwrap();
    for launch in 1..=3 {
        g.launch(kernel).unwrap();
        let [s, d, running, c, launches] = totals(&mut g, &params, fp64);
        assert_eq!(
            launches,
            f64::from(launch),
            "the finish ran once per enqueue"
        );
        assert!(
            (s - sum).abs() <= tolerance * sum,
            "launch {launch}: {s} vs {sum}"
        );
        assert_eq!(d, degrees, "ball sizes summed over {tables} tables");
        assert_eq!(c, count, "vertices counted");
        assert!((running - f64::from(launch) * sum).abs() <= tolerance * running);
    }
}

/// With no entity the uplink has no degree table and nothing could run the finish: an error
/// that says so, not a finish silently skipped.
#[test]
fn folded_sums_through_an_empty_uplink_are_refused_at_launch() {
    let mut g = gml();
    g.new_parameters::<Totals>(TOTALS_F32).unwrap();
    g.new_mesh(MeshKind::Vertices, 0).unwrap();
    g.new_mesh(MeshKind::Tetrahedra, 0).unwrap();
    let tet_value = g.new_solution::<f32>(MeshKind::Tetrahedra, 1, "T").unwrap();
    let kernel = g
        .compile(
            KernelSpec::new("empty_ball", MeshKind::Vertices)
                .access(Access::read(tet_value))
                .body("GmlSum[0] = VerTetDeg;")
                .sums(1, "GmlPar->sum = GmlSum[0];"),
        )
        .unwrap();
    let err = g.launch(kernel).unwrap_err();
    assert!(matches!(err, GmlError::Sums { .. }), "{err}");
    assert!(err.to_string().contains("no degree table"), "{err}");
}

#[test]
fn folded_sums_refuse_bad_counts_and_show_finish_errors() {
    let mut g = gml();
    g.import_mesh(&crate::common::sample("cube.meshb")).unwrap();
    g.new_parameters::<Totals>(TOTALS_F32).unwrap();
    let x = g.new_solution::<f32>(MeshKind::Vertices, 1, "X").unwrap();
    for count in [0, MAX_SUMS + 1] {
        let spec = KernelSpec::new("bad_count", MeshKind::Vertices)
            .access(Access::read(x))
            .body("GmlSum[0] = VerX;")
            .sums(count, "GmlPar->sum = GmlSum[0];");
        let err = g.compile(spec).unwrap_err();
        assert!(matches!(err, GmlError::Sums { .. }), "{count}: {err}");
    }
    // A mistake in the finish block is reported against that block, by name.
    let spec = KernelSpec::new("bad_finish", MeshKind::Vertices)
        .access(Access::read(x))
        .body("GmlSum[0] = VerX;")
        .sums(1, "GmlPar->no_such_field = GmlSum[0];");
    let err = g.compile(spec).unwrap_err().to_string();
    assert!(err.contains("bad_finish.finish"), "{err}");
}

/// A `finish` that branches on the parameters runs once: PoCL 3.1 ran it in every work-item
/// of the last group (256 increments) while the fold kept its second round of barriers inside
/// a branch, uniform as it was.
#[test]
fn a_finish_that_branches_runs_once() {
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
    struct Counter {
        above: f32,
        below: f32,
        runs: i32,
        halved: f32,
    }
    for n in [210usize, 1000] {
        let mut g = gml();
        g.new_mesh(MeshKind::Vertices, n).unwrap();
        let params = g
            .new_parameters::<Counter>(
                "typedef struct { float above; float below; int runs; float halved; } GmlParSct;",
            )
            .unwrap();
        let x = g.new_solution::<f32>(MeshKind::Vertices, 1, "X").unwrap();
        let kernel = g
            .compile(
                KernelSpec::new("branching_finish", MeshKind::Vertices)
                    .access(Access::read(x))
                    .body("GmlSum[0] = 1;")
                    .sums(
                        1,
                        "if (GmlPar->above > GmlPar->below) {\n\
                             GmlPar->runs += 1;\n\
                             GmlPar->halved = 0.5 * GmlSum[0];\n\
                         }",
                    ),
            )
            .unwrap();
        let start = Counter {
            above: 1e9,
            ..Counter::default()
        };
        g.upload_parameters(&params, &start).unwrap();
        g.launch(kernel).unwrap();
        let got = g.download_parameters(&params).unwrap();
        assert_eq!(
            got.runs, 1,
            "{n} entities: the finish ran {} times",
            got.runs
        );
        assert_eq!(got.halved, n as f32 / 2.0, "{n} entities");
    }
}

/// The fold works for work-groups of any size, not only the powers of two devices pick: the
/// tree halves `n` items as `n - ⌈n/2⌉` pairs and a middle one left alone.
#[test]
fn folded_sums_hold_for_work_groups_of_any_size() {
    let mut g = gml();
    let fp64 = g.has_fp64();
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
    struct Total {
        sum: f64,
    }
    let params = g
        .new_parameters::<Total>(if fp64 {
            "typedef struct { double sum; } GmlParSct;"
        } else {
            "typedef struct { float sum; float pad; } GmlParSct;"
        })
        .unwrap();
    for n in [1023usize, (1 << 16) + 3] {
        g.new_mesh(MeshKind::Vertices, n).unwrap();
        let x = g.new_solution::<f32>(MeshKind::Vertices, 1, "X").unwrap();
        let values: Vec<f32> = (0..n)
            .map(|i| 1.0 + ((i * 7919) % 1000) as f32 / 1000.0)
            .collect();
        g.set_block(x, 0, &values).unwrap();
        let want: f64 = values.iter().map(|&v| f64::from(v)).sum();
        for size in [1usize, 3, 48, 100, 255] {
            let kernel = g
                .compile(
                    KernelSpec::new(&format!("sum_by_{size}"), MeshKind::Vertices)
                        .access(Access::read(x))
                        .body("GmlSum[0] = VerX;")
                        .sums(1, "GmlPar->sum = GmlSum[0];")
                        .work_group(size),
                )
                .unwrap();
            g.upload_parameters(&params, &Total::default()).unwrap();
            g.launch(kernel).unwrap();
            let got = g.download_parameters(&params).unwrap();
            let got = if fp64 {
                got.sum
            } else {
                let f: [f32; 2] = bytemuck::cast(got);
                f64::from(f[0])
            };
            let tolerance = if fp64 { 1e-12 } else { 1e-5 };
            assert!(
                (got - want).abs() <= tolerance * want,
                "{n} values in groups of {size}: {got} vs {want}"
            );
        }
    }
    // Sizes the device cannot run are refused when compiling.
    let x = g.new_solution::<f32>(MeshKind::Vertices, 1, "Y").unwrap();
    for size in [0, 1 << 24] {
        let err = g
            .compile(
                KernelSpec::new("bad_group", MeshKind::Vertices)
                    .access(Access::read(x))
                    .body("GmlSum[0] = VerY;")
                    .sums(1, "GmlPar->sum = GmlSum[0];")
                    .work_group(size),
            )
            .unwrap_err();
        assert!(matches!(err, GmlError::WorkGroup { .. }), "{size}: {err}");
    }
}
