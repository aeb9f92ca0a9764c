//! `quality` and `snowsim mesh quality` on a real OpenCL device (PoCL in CI), checked against
//! an independent f64 computation written here.

use glam::DVec3;
use snowsim::meshio::{self, ElementKind, Mesh, Version};
use snowsim::quality::{self, HISTOGRAM_BINS, QualityError};

use crate::common::{Capability, context, sample, sample_path, skip, snowsim, temp_dir, text};

fn squared_edges(points: &[DVec3]) -> f64 {
    let mut sum = 0.0;
    for i in 0..points.len() {
        for j in i + 1..points.len() {
            sum += points[i].distance_squared(points[j]);
        }
    }
    sum
}

/// `12·(3V)^(2/3) / Σ edge²` with the sign of V, in f64.
fn cpu_tet_quality(p: [DVec3; 4]) -> f64 {
    let volume = (p[1] - p[0]).cross(p[2] - p[0]).dot(p[3] - p[0]) / 6.0;
    12.0 * (3.0 * volume.abs()).powf(2.0 / 3.0) / squared_edges(&p) * volume.signum()
}

/// `4√3·area / Σ edge²`, in f64.
fn cpu_triangle_quality(p: [DVec3; 3]) -> f64 {
    let area = 0.5 * (p[1] - p[0]).cross(p[2] - p[0]).length();
    4.0 * 3f64.sqrt() * area / squared_edges(&p)
}

fn cpu_qualities(mesh: &Mesh, kind: ElementKind) -> Vec<f64> {
    let at = |v: u32| DVec3::from(mesh.vertices[v as usize]);
    mesh.elements(kind)
        .iter()
        .map(|(n, _)| match kind {
            ElementKind::Tetrahedra => cpu_tet_quality([at(n[0]), at(n[1]), at(n[2]), at(n[3])]),
            _ => cpu_triangle_quality([at(n[0]), at(n[1]), at(n[2])]),
        })
        .collect()
}

/// The bin of `q` in 10 bins over [0, 1], values outside clamped into the end bins.
fn cpu_bin(q: f64) -> usize {
    if q < 0.1 {
        0
    } else if q >= 0.9 {
        9
    } else {
        (q * 10.0) as usize
    }
}

/// Checks the device's histogram against the CPU qualities: an element within `tolerance` of a
/// bin edge may fall in either bin, every other one in exactly its own.
fn check_histogram(got: &[usize; HISTOGRAM_BINS], cpu: &[f64], tolerance: f64) {
    assert_eq!(got.iter().sum::<usize>(), cpu.len());
    for bin in 0..HISTOGRAM_BINS {
        let certain = cpu
            .iter()
            .filter(|&&q| cpu_bin(q - tolerance) == bin && cpu_bin(q + tolerance) == bin)
            .count();
        let possible = cpu
            .iter()
            .filter(|&&q| (cpu_bin(q - tolerance)..=cpu_bin(q + tolerance)).contains(&bin))
            .count();
        assert!(
            (certain..=possible).contains(&got[bin]),
            "bin {bin}: {} elements, the CPU says {certain}..={possible} ({got:?})",
            got[bin]
        );
    }
}

/// Measures `name` on the device and compares everything with the CPU.
fn check_sample(name: &str, kind: ElementKind) {
    check_sample_in(name, kind, quality::Precision::F32, 1e-4);
}

/// Measures `name` on the device in `precision` and compares everything with the CPU within
/// `tolerance`.
fn check_sample_in(name: &str, kind: ElementKind, precision: quality::Precision, tolerance: f64) {
    let mesh = sample(name);
    let q = quality::measure_with(&context(), &mesh, precision).unwrap();
    assert_eq!(q.precision, precision);
    assert_eq!(q.kind, kind);
    let cpu = cpu_qualities(&mesh, kind);
    assert_eq!(q.values.len(), cpu.len());
    for (i, (&got, &expected)) in q.values.iter().zip(&cpu).enumerate() {
        assert!(
            (got - expected).abs() <= tolerance,
            "{name}: {kind} {i}: device {got}, CPU {expected}"
        );
    }
    let min = cpu.iter().copied().fold(f64::INFINITY, f64::min);
    let max = cpu.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
    assert!((q.min - min).abs() <= tolerance, "min {} vs {min}", q.min);
    assert!((q.max - max).abs() <= tolerance, "max {} vs {max}", q.max);
    assert!(
        (q.mean - mean).abs() <= tolerance,
        "mean {} vs {mean}",
        q.mean
    );
    check_histogram(&q.histogram, &cpu, tolerance);
}

#[test]
fn tetrahedra_of_the_cube_match_the_cpu() {
    check_sample("cube.meshb", ElementKind::Tetrahedra);
}

#[test]
fn triangles_of_the_sphere_surface_match_the_cpu() {
    check_sample("sphere_surface.meshb", ElementKind::Triangles);
}

#[test]
fn triangles_of_the_planar_square_match_the_cpu() {
    check_sample("square_2d.meshb", ElementKind::Triangles);
}

/// One mesh of tetrahedra: regular, inverted (two nodes swapped), flat, and a needle.
fn special_tetrahedra() -> Mesh {
    let mut mesh = Mesh::new(3);
    for p in [
        [1.0, 1.0, 1.0],
        [1.0, -1.0, -1.0],
        [-1.0, 1.0, -1.0],
        [-1.0, -1.0, 1.0],
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 0.0, 10.0],
    ] {
        mesh.push_vertex(p, 0);
    }
    let tets = mesh.elements_mut(ElementKind::Tetrahedra);
    tets.push(&[0, 2, 1, 3], 1); // regular, positive
    tets.push(&[0, 1, 2, 3], 1); // the same, inverted
    tets.push(&[4, 5, 6, 7], 1); // flat
    tets.push(&[4, 5, 6, 8], 1); // needle
    mesh
}

#[test]
fn regular_elements_give_one_and_inverted_ones_a_negative_quality() {
    let context = context();
    let mesh = special_tetrahedra();
    let cpu = cpu_qualities(&mesh, ElementKind::Tetrahedra);
    assert!((cpu[0] - 1.0).abs() < 1e-12 && (cpu[1] + 1.0).abs() < 1e-12);
    let q = quality::measure(&context, &mesh).unwrap();
    assert_eq!(q.kind, ElementKind::Tetrahedra);
    assert!((q.values[0] - 1.0).abs() < 1e-5, "regular: {}", q.values[0]);
    assert!(
        (q.values[1] + 1.0).abs() < 1e-5,
        "inverted: {}",
        q.values[1]
    );
    assert_eq!(q.values[2], 0.0, "flat");
    assert!(
        q.values[3] > 0.0 && (q.values[3] - cpu[3]).abs() < 1e-5,
        "needle: {} vs {}",
        q.values[3],
        cpu[3]
    );
    assert!((q.min + 1.0).abs() < 1e-5 && (q.max - 1.0).abs() < 1e-5);
    // Inverted and flat in the first bin, the needle in its own, the regular one in the last.
    let mut expected = [0; HISTOGRAM_BINS];
    expected[0] = 2;
    expected[cpu_bin(cpu[3])] += 1;
    expected[9] += 1;
    assert_eq!(q.histogram, expected);

    let mut triangle = Mesh::new(2);
    for p in [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 3f64.sqrt(), 0.0]] {
        triangle.push_vertex(p, 0);
    }
    triangle
        .elements_mut(ElementKind::Triangles)
        .push(&[0, 1, 2], 1);
    triangle
        .elements_mut(ElementKind::Triangles)
        .push(&[0, 2, 1], 1);
    let q = quality::measure(&context, &triangle).unwrap();
    assert_eq!(q.kind, ElementKind::Triangles);
    for &v in &q.values {
        // Triangle quality is unsigned: both orientations give 1.
        assert!((v - 1.0).abs() < 1e-5, "equilateral: {v}");
    }
}

#[test]
fn histogram_clamps_values_outside_the_unit_interval_into_the_end_bins() {
    let values = [
        -0.5,
        0.0,
        0.05,
        0.1,
        0.25,
        0.55,
        0.999,
        1.0,
        1.0000002,
        7.0,
        f32::NAN,
    ];
    let mut expected = [0; HISTOGRAM_BINS];
    expected[0] = 4; // -0.5, 0, 0.05, NaN
    expected[1] = 1;
    expected[2] = 1;
    expected[5] = 1;
    expected[9] = 4; // 0.999, 1, 1.0000002, 7
    assert_eq!(quality::histogram(&values), expected);
}

#[test]
fn a_mesh_without_tetrahedra_or_triangles_is_an_error() {
    let context = context();
    let hexes = sample("hexahedra.meshb");
    match quality::measure(&context, &hexes) {
        Err(QualityError::NoElements { present }) => assert_eq!(
            present,
            [ElementKind::Quadrilaterals, ElementKind::Hexahedra]
        ),
        other => panic!("expected NoElements, got {other:?}"),
    }
    let empty = Mesh::new(3);
    let error = quality::measure(&context, &empty).unwrap_err();
    assert!(error.to_string().contains("no elements at all"), "{error}");
}

// ----- the command line ------------------------------------------------------------------------

#[test]
fn cli_json_has_exactly_the_documented_keys() {
    let path = sample_path("cube.meshb");
    let out = snowsim(&["mesh", "quality", path.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let object = value.as_object().expect("a JSON object");
    let documented = [
        "kind",
        "precision",
        "count",
        "min",
        "mean",
        "max",
        "histogram",
    ];
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    let mut expected = documented.to_vec();
    keys.sort_unstable();
    expected.sort_unstable();
    assert_eq!(keys, expected);
    // Printed in the documented order.
    let raw = text(&out.stdout);
    let positions: Vec<usize> = documented
        .iter()
        .map(|k| raw.find(&format!("\"{k}\"")).unwrap())
        .collect();
    assert!(positions.is_sorted(), "{raw}");
    assert_eq!(value["kind"], "tetrahedra");
    assert_eq!(value["count"], 10246);
    let histogram: Vec<u64> = value["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    assert_eq!(histogram.len(), 10);
    assert_eq!(histogram.iter().sum::<u64>(), 10246);
    let cpu = cpu_qualities(&sample("cube.meshb"), ElementKind::Tetrahedra);
    let min = cpu.iter().copied().fold(f64::INFINITY, f64::min);
    assert!((value["min"].as_f64().unwrap() - min).abs() < 1e-4);
    let mean = value["mean"].as_f64().unwrap();
    assert!(value["min"].as_f64().unwrap() <= mean && mean <= value["max"].as_f64().unwrap());

    let square = sample_path("square_2d.meshb");
    let out = snowsim(&["mesh", "quality", square.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["kind"], "triangles");
    assert_eq!(value["count"], 5828);
}

#[test]
fn cli_text_lists_the_statistics_and_a_histogram_with_bars() {
    let path = sample_path("sphere_surface.meshb");
    let out = snowsim(&["mesh", "quality", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for line in [
        "kind:       triangles",
        "count:      4940",
        "min:",
        "mean:",
        "max:",
    ] {
        assert!(stdout.contains(line), "no `{line}` in\n{stdout}");
    }
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.trim_start().starts_with('['))
        .collect();
    assert_eq!(rows.len(), 10, "{stdout}");
    assert!(rows[0].contains("[0.0, 0.1)") && rows[9].contains("[0.9, 1.0]"));
    let counts: Vec<usize> = rows
        .iter()
        .map(|r| r.split_whitespace().nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(counts.iter().sum::<usize>(), 4940);
    // The fullest bin has the longest bar; an empty bin has none.
    let bar = |r: &str| r.chars().filter(|&c| c == '#').count();
    let fullest = (0..10).max_by_key(|&i| counts[i]).unwrap();
    assert!(rows.iter().all(|r| bar(r) <= bar(rows[fullest])));
    for (row, count) in rows.iter().zip(&counts) {
        assert_eq!(bar(row) == 0, *count == 0, "{row}");
    }
}

#[test]
fn cli_reports_inverted_tetrahedra() {
    let dir = temp_dir("quality", "inverted");
    let path = dir.join("special.mesh");
    meshio::write(&path, &special_tetrahedra(), Version::V2).unwrap();
    let out = snowsim(&["mesh", "quality", path.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(value["min"].as_f64().unwrap() < -0.99, "{value}");
    assert_eq!(value["histogram"][0], 2);
    let out = snowsim(&["mesh", "quality", path.to_str().unwrap()]);
    assert!(
        text(&out.stdout).contains("1 below 0"),
        "{}",
        text(&out.stdout)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn cli_errors_name_the_file() {
    let missing = "no/such/mesh.meshb";
    let out = snowsim(&["mesh", "quality", missing]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(missing) && !stderr.contains("panicked"),
        "{stderr}"
    );

    let hexes = sample_path("hexahedra.meshb");
    let out = snowsim(&["mesh", "quality", hexes.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("hexahedra.meshb")
            && stderr.contains("neither tetrahedra nor triangles")
            && stderr.contains("quadrilaterals, hexahedra"),
        "{stderr}"
    );

    let cube = sample_path("cube.meshb");
    let out = snowsim(&[
        "mesh",
        "quality",
        cube.to_str().unwrap(),
        "--device",
        "no-such-device",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no-such-device") && !stderr.contains("panicked"),
        "{stderr}"
    );
}

#[test]
fn double_precision_qualities_match_the_cpu_to_double_rounding() {
    let context = context();
    if !context.info().fp64 {
        skip(
            Capability::Fp64,
            format!("{} has no FP64", context.info().label()),
        );
        return;
    }
    // f32 coordinates and arithmetic lose up to ~1e-5 on these meshes; f64 keeps ~1e-12.
    check_sample_in(
        "cube.meshb",
        ElementKind::Tetrahedra,
        quality::Precision::F64,
        1e-11,
    );
    check_sample_in(
        "sphere_surface.meshb",
        ElementKind::Triangles,
        quality::Precision::F64,
        1e-11,
    );
}

#[test]
fn cli_precision_f64_computes_in_double() {
    let context = context();
    if !context.info().fp64 {
        skip(
            Capability::Fp64,
            format!("{} has no FP64", context.info().label()),
        );
        return;
    }
    let path = sample_path("cube.meshb");
    let run = |precision: &str| {
        let out = snowsim(&[
            "mesh",
            "quality",
            path.to_str().unwrap(),
            "--json",
            "--precision",
            precision,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (single, double) = (run("f32"), run("f64"));
    assert_eq!(
        (single["precision"].as_str(), double["precision"].as_str()),
        (Some("f32"), Some("f64"))
    );
    let cpu = cpu_qualities(&sample("cube.meshb"), ElementKind::Tetrahedra);
    let mean = cpu.iter().sum::<f64>() / cpu.len() as f64;
    let error = |v: &serde_json::Value| (v["mean"].as_f64().unwrap() - mean).abs();
    assert!(error(&double) < 1e-12, "f64 mean off by {}", error(&double));
    assert!(error(&double) <= error(&single), "f64 is no worse than f32");
}

/// The corner tetrahedron (quality 0.8399) and an equilateral triangle, each at edge length
/// `scale` metres, away from the origin by 3 of its own edges.
fn corner_elements(scale: f64) -> (Mesh, Mesh) {
    let mut tet = Mesh::new(3);
    for p in [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
    ] {
        tet.push_vertex(p.map(|x| (x + 3.0) * scale), 0);
    }
    tet.elements_mut(ElementKind::Tetrahedra)
        .push(&[0, 1, 2, 3], 1);
    let mut triangle = Mesh::new(3);
    for p in [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 0.75f64.sqrt(), 0.0]] {
        triangle.push_vertex(p.map(|x| (x + 3.0) * scale), 0);
    }
    triangle
        .elements_mut(ElementKind::Triangles)
        .push(&[0, 1, 2], 1);
    (tet, triangle)
}

/// A well-shaped element scores as its shape does, whatever its size: f32 gave 0 for the
/// corner tetrahedron with 1e-30 m edges (its squared edges and volume underflow float),
/// where f64 gives 0.84. The qualities are computed on the edges scaled to unit size.
#[test]
fn a_tiny_or_huge_well_shaped_element_scores_as_at_one_metre() {
    let context = context();
    let corner = cpu_tet_quality([DVec3::ZERO, DVec3::X, DVec3::Y, DVec3::Z]);
    assert!((corner - 0.8399).abs() < 1e-4, "{corner}");
    let precisions: &[quality::Precision] = if context.info().fp64 {
        &[quality::Precision::F32, quality::Precision::F64]
    } else {
        &[quality::Precision::F32]
    };
    for scale in [1e-30, 1e-20, 1e-10, 1.0, 1e6, 1e11] {
        let (tet, triangle) = corner_elements(scale);
        for &precision in precisions {
            let q = quality::measure_with(&context, &tet, precision).unwrap();
            assert!(
                (q.values[0] - corner).abs() < 1e-5,
                "{precision:?} corner tetrahedron with {scale} m edges: {} (at 1 m: {corner})",
                q.values[0]
            );
            let q = quality::measure_with(&context, &triangle, precision).unwrap();
            assert!(
                (q.values[0] - 1.0).abs() < 1e-5,
                "{precision:?} equilateral triangle with {scale} m edges: {}",
                q.values[0]
            );
        }
    }

    // Through the command, against f64's value.
    if !context.info().fp64 {
        skip(
            Capability::Fp64,
            format!("{} has no FP64", context.info().label()),
        );
        return;
    }
    let dir = temp_dir("quality", "tiny");
    let path = dir.join("tiny.meshb");
    meshio::write(&path, &corner_elements(1e-30).0, Version::V2).unwrap();
    let run = |precision: &str| {
        let out = snowsim(&[
            "mesh",
            "quality",
            path.to_str().unwrap(),
            "--json",
            "--precision",
            precision,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        value["min"].as_f64().unwrap()
    };
    let (single, double) = (run("f32"), run("f64"));
    assert!((double - corner).abs() < 1e-12, "f64: {double}");
    assert!(
        (single - double).abs() < 1e-5,
        "f32 {single} against f64 {double}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
