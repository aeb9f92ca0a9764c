//! `smoothing` and `snowsim mesh smooth` on a real OpenCL device (PoCL in CI), checked against
//! a CPU reference implementation written here in f64.

use std::collections::HashMap;
use std::path::Path;

use glam::DVec3;
use snowsim::meshio::{self, ElementKind, Mesh, Version, generate};
use snowsim::quality;
use snowsim::smoothing::{self, Progress, SmoothingError};

use crate::common::{context, sample, sample_path, snowsim, temp_dir, text};

/// Vertices on a boundary edge (triangles) or face (tetrahedra), found with a hash map of
/// sorted edges or faces, plus the vertices no element uses.
fn cpu_fixed(mesh: &Mesh, kind: ElementKind) -> Vec<bool> {
    let mut count: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut used = vec![false; mesh.vertices.len()];
    for (nodes, _) in mesh.elements(kind).iter() {
        for &v in nodes {
            used[v as usize] = true;
        }
        for skip in 0..nodes.len() {
            // Triangles: the edge opposite node `skip`; tetrahedra: the face opposite it.
            let mut side: Vec<u32> = (0..nodes.len())
                .filter(|&j| j != skip)
                .map(|j| nodes[j])
                .collect();
            side.sort_unstable();
            *count.entry(side).or_default() += 1;
        }
    }
    let mut fixed: Vec<bool> = used.iter().map(|u| !u).collect();
    for (side, n) in count {
        if n == 1 {
            for v in side {
                fixed[v as usize] = true;
            }
        }
    }
    fixed
}

/// The CPU reference: `iterations` Jacobi iterations of "move to the mean of the incident
/// elements' barycentres". Returns the positions and each iteration's largest displacement.
fn cpu_smooth(
    mesh: &Mesh,
    kind: ElementKind,
    fixed: &[bool],
    iterations: usize,
) -> (Vec<DVec3>, Vec<f64>) {
    let elements = mesh.elements(kind);
    let n = kind.nodes() as f64;
    let mut positions: Vec<DVec3> = mesh.vertices.iter().map(|&p| DVec3::from(p)).collect();
    let mut displacements = Vec::new();
    for _ in 0..iterations {
        let mut sum = vec![DVec3::ZERO; positions.len()];
        let mut degree = vec![0usize; positions.len()];
        for (nodes, _) in elements.iter() {
            let bar: DVec3 = nodes.iter().map(|&v| positions[v as usize] / n).sum();
            for &v in nodes {
                sum[v as usize] += bar;
                degree[v as usize] += 1;
            }
        }
        let mut largest = 0.0f64;
        for v in 0..positions.len() {
            if fixed[v] || degree[v] == 0 {
                continue;
            }
            let moved = sum[v] / degree[v] as f64;
            largest = largest.max(moved.distance(positions[v]));
            positions[v] = moved;
        }
        displacements.push(largest);
    }
    (positions, displacements)
}

/// Everything but the moved coordinates is the input's.
fn assert_same_except_coordinates(a: &Mesh, b: &Mesh) {
    assert_eq!(a.dimension, b.dimension);
    assert_eq!(a.vertices.len(), b.vertices.len());
    assert_eq!(a.vertex_refs, b.vertex_refs);
    for kind in ElementKind::ALL {
        assert_eq!(a.elements(kind), b.elements(kind), "{kind}");
    }
}

/// Smooths `mesh` on the device and compares with the CPU reference.
fn check_against_cpu(name: &str, mesh: &Mesh, kind: ElementKind, iterations: usize) {
    const TOLERANCE: f64 = 2e-5;
    let mut reported = Vec::new();
    let smoothed = smoothing::smooth(&context(), mesh, iterations, |p| reported.push(p)).unwrap();
    assert_eq!(smoothed.kind, kind);
    let fixed = cpu_fixed(mesh, kind);
    assert_eq!(smoothed.fixed, fixed, "{name}: fixed vertices");
    assert_same_except_coordinates(mesh, &smoothed.mesh);

    let (expected, displacements) = cpu_smooth(mesh, kind, &fixed, iterations);
    let mut moved = 0;
    for (v, (got, want)) in smoothed.mesh.vertices.iter().zip(&expected).enumerate() {
        if fixed[v] {
            assert_eq!(
                got.map(f64::to_bits),
                mesh.vertices[v].map(f64::to_bits),
                "{name}: fixed vertex {v} moved"
            );
        } else {
            for c in 0..3 {
                assert!(
                    (got[c] - want[c]).abs() <= TOLERANCE,
                    "{name}, {iterations} iterations: vertex {v}: {got:?} vs CPU {want:?}"
                );
            }
            moved += usize::from(*got != mesh.vertices[v]);
        }
    }
    assert!(moved > 0, "{name}: no vertex moved");

    assert_eq!(reported.len(), iterations);
    assert_eq!(smoothed.max_displacements.len(), iterations);
    for (i, (p, want)) in reported.iter().zip(&displacements).enumerate() {
        assert_eq!(
            *p,
            Progress {
                iteration: i + 1,
                iterations,
                max_displacement: smoothed.max_displacements[i],
            }
        );
        assert!(
            (p.max_displacement - want).abs() <= TOLERANCE,
            "{name}: iteration {}: max displacement {} vs CPU {want}",
            i + 1,
            p.max_displacement
        );
    }
}

#[test]
fn planar_triangles_match_the_cpu_for_one_and_several_iterations() {
    let mesh = sample("square_2d.meshb");
    assert_eq!(
        cpu_fixed(&mesh, ElementKind::Triangles)
            .iter()
            .filter(|&&f| f)
            .count(),
        200
    );
    for iterations in [1, 4] {
        check_against_cpu("square_2d", &mesh, ElementKind::Triangles, iterations);
    }
}

#[test]
fn tetrahedra_match_the_cpu_for_one_and_several_iterations() {
    let mesh = sample("cube.meshb");
    for iterations in [1, 3] {
        check_against_cpu("cube", &mesh, ElementKind::Tetrahedra, iterations);
    }
}

#[test]
fn a_closed_surface_has_no_fixed_vertex() {
    let mesh = sample("sphere_surface.meshb");
    assert!(!cpu_fixed(&mesh, ElementKind::Triangles).contains(&true));
    check_against_cpu("sphere_surface", &mesh, ElementKind::Triangles, 2);
}

#[test]
fn boundary_vertices_are_found_for_each_kind() {
    // Two triangles sharing the edge 1-2, plus an unused vertex.
    let mut mesh = Mesh::new(2);
    for p in [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [1.0, 1.0, 0.0],
        [5.0, 5.0, 0.0],
    ] {
        mesh.push_vertex(p, 0);
    }
    mesh.elements_mut(ElementKind::Triangles)
        .push(&[0, 1, 2], 1);
    mesh.elements_mut(ElementKind::Triangles)
        .push(&[1, 3, 2], 1);
    assert_eq!(
        smoothing::boundary_vertices(&mesh, ElementKind::Triangles),
        [true, true, true, true, false]
    );
    assert_eq!(
        smoothing::fixed_vertices(&mesh, ElementKind::Triangles),
        [true; 5]
    );
    // A 3×3×3 grid of cubes: only the 8 vertices strictly inside are free.
    let grid = generate::tet_grid([3, 3, 3]);
    let fixed = smoothing::fixed_vertices(&grid, ElementKind::Tetrahedra);
    assert_eq!(fixed, cpu_fixed(&grid, ElementKind::Tetrahedra));
    assert_eq!(fixed.iter().filter(|&&f| !f).count(), 8);
}

/// A small deterministic pseudo-random number in [-1, 1).
fn jitter(seed: &mut u64) -> f64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// Moves every free vertex by up to `amount` along each axis (not along z for a planar mesh).
fn distort(mesh: &Mesh, kind: ElementKind, amount: f64) -> Mesh {
    let fixed = cpu_fixed(mesh, kind);
    let mut distorted = mesh.clone();
    let mut seed = 12345;
    let axes = if mesh.dimension == 2 { 2 } else { 3 };
    for (p, &f) in distorted.vertices.iter_mut().zip(&fixed) {
        if !f {
            for c in p.iter_mut().take(axes) {
                *c += amount * jitter(&mut seed);
            }
        }
    }
    distorted
}

#[test]
fn smoothing_a_distorted_mesh_raises_its_mean_quality() {
    let context = context();
    let cases = [
        (
            "tet grid",
            distort(
                &generate::tet_grid([6, 6, 6]),
                ElementKind::Tetrahedra,
                0.05,
            ),
        ),
        (
            "square_2d",
            distort(&sample("square_2d.meshb"), ElementKind::Triangles, 0.007),
        ),
    ];
    for (name, mesh) in cases {
        let before = quality::measure(&context, &mesh).unwrap();
        let smoothed = smoothing::smooth(&context, &mesh, 5, |_| {}).unwrap();
        let after = quality::measure(&context, &smoothed.mesh).unwrap();
        eprintln!(
            "{name}: mean {:.4} -> {:.4}, min {:.4} -> {:.4}",
            before.mean, after.mean, before.min, after.min
        );
        assert!(
            after.mean > before.mean + 0.03,
            "{name}: mean quality {} before, {} after",
            before.mean,
            after.mean
        );
        assert!(
            after.min > before.min,
            "{name}: min quality {} before, {} after",
            before.min,
            after.min
        );
        // The displacements shrink as the mesh settles.
        let d = &smoothed.max_displacements;
        assert!(d[d.len() - 1] < d[0], "{name}: {d:?}");
    }
}

#[test]
fn a_mesh_without_tetrahedra_or_triangles_is_an_error() {
    let hexes = sample("hexahedra.meshb");
    match smoothing::smooth(&context(), &hexes, 1, |_| {}) {
        Err(SmoothingError::NoElements { present }) => assert_eq!(
            present,
            [ElementKind::Quadrilaterals, ElementKind::Hexahedra]
        ),
        other => panic!("expected NoElements, got {other:?}"),
    }
}

// ----- the command line ------------------------------------------------------------------------

#[test]
fn cli_smooths_keeps_the_rest_of_the_mesh_and_prints_progress() {
    let dir = temp_dir("smooth", "planar");
    let input = sample_path("square_2d.meshb");
    let output = dir.join("smooth.meshb");
    let out = snowsim(&[
        "mesh",
        "smooth",
        input.to_str().unwrap(),
        output.to_str().unwrap(),
        "--iterations",
        "3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let progress: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("iteration"))
        .collect();
    assert_eq!(progress.len(), 3, "{stdout}");
    assert!(
        progress[2].starts_with("iteration 3/3: max displacement"),
        "{stdout}"
    );
    assert!(
        stdout.contains("wrote") && stdout.contains("version 2"),
        "{stdout}"
    );

    let input_mesh = sample("square_2d.meshb");
    let file = meshio::read(&output).unwrap();
    assert_eq!(file.version, Version::V2);
    assert_same_except_coordinates(&input_mesh, &file.mesh);
    let fixed = cpu_fixed(&input_mesh, ElementKind::Triangles);
    let (expected, _) = cpu_smooth(&input_mesh, ElementKind::Triangles, &fixed, 3);
    for (v, (got, want)) in file.mesh.vertices.iter().zip(&expected).enumerate() {
        if fixed[v] {
            assert_eq!(got, &input_mesh.vertices[v], "fixed vertex {v}");
        }
        for c in 0..3 {
            assert!(
                (got[c] - want[c]).abs() <= 2e-5,
                "vertex {v}: {got:?} vs {want:?}"
            );
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn cli_keeps_the_input_version_unless_it_would_lose_precision() {
    let dir = temp_dir("smooth", "versions");
    // Binary version 1 (f32): the device's f32 positions fit, so version 1 again.
    let sphere = dir.join("sphere.meshb");
    let out = snowsim(&[
        "mesh",
        "smooth",
        sample_path("sphere_surface.meshb").to_str().unwrap(),
        sphere.to_str().unwrap(),
        "-n",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(meshio::read(&sphere).unwrap().version, Version::V1);
    // TetGen's ASCII version 1 holds f64 digits: its boundary would be rounded in version 1.
    let tetgen = dir.join("tetgen.mesh");
    let out = snowsim(&[
        "mesh",
        "smooth",
        sample_path("cube_tetgen.mesh").to_str().unwrap(),
        tetgen.to_str().unwrap(),
        "-n",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("writing version 2"),
        "{}",
        text(&out.stderr)
    );
    let file = meshio::read(&tetgen).unwrap();
    assert_eq!(file.version, Version::V2);
    let input = sample("cube_tetgen.mesh");
    let fixed = cpu_fixed(&input, ElementKind::Tetrahedra);
    for (v, p) in file.mesh.vertices.iter().enumerate() {
        if fixed[v] {
            assert_eq!(p, &input.vertices[v], "fixed vertex {v}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn cli_errors_are_clear() {
    let dir = temp_dir("smooth", "errors");
    let output = dir.join("out.meshb");
    let output = output.to_str().unwrap();

    let missing = "no/such/mesh.meshb";
    let out = snowsim(&["mesh", "smooth", missing, output, "--iterations", "2"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(missing) && !stderr.contains("panicked"),
        "{stderr}"
    );

    let hexes = sample_path("hexahedra.meshb");
    let out = snowsim(&["mesh", "smooth", hexes.to_str().unwrap(), output, "-n", "2"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("hexahedra.meshb") && stderr.contains("neither tetrahedra nor triangles"),
        "{stderr}"
    );
    assert!(!Path::new(output).exists());

    let square = sample_path("square_2d.meshb");
    let square = square.to_str().unwrap();
    for bad in [
        &["mesh", "smooth", square, output][..],
        &["mesh", "smooth", square, output, "-n", "0"],
    ] {
        let out = snowsim(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(
            text(&out.stderr).contains("--iterations"),
            "{}",
            text(&out.stderr)
        );
    }

    let copy = dir.join("copy.meshb");
    std::fs::copy(square, &copy).unwrap();
    let copy = copy.to_str().unwrap();
    let out = snowsim(&["mesh", "smooth", copy, copy, "-n", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("same file"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(copy).unwrap(), std::fs::read(square).unwrap());

    let nowhere = dir.join("no/such/dir/out.meshb");
    let out = snowsim(&[
        "mesh",
        "smooth",
        square,
        nowhere.to_str().unwrap(),
        "-n",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("out.meshb"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}
