//! Hilbert renumbering and the numbering score: the mesh stays the same mesh, the score rises,
//! and gml's uplink degree classes come out as contiguous ranges (checked on a real OpenCL
//! device, PoCL in CI).

use std::path::Path;

use snowsim::gml::MeshKind;
use snowsim::meshio::{self, ElementKind, Mesh, generate::tet_grid};
use snowsim::renumber::{self, degree, numbering_score, renumber};

use crate::common::{gml, sample, snowsim, temp_dir};

/// A deterministic pseudo-random permutation of `0..n` (Fisher–Yates with an LCG).
fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut state = seed;
    for i in (1..n).rev() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = (state >> 33) as usize % (i + 1);
        order.swap(i, j);
    }
    order
}

/// `mesh` with its vertices and every element kind randomly renumbered.
fn randomly_permuted(mesh: &Mesh, seed: u64) -> Mesh {
    let order = shuffled(mesh.vertices.len(), seed); // new -> old
    let mut new_index = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old as usize] = new as u32;
    }
    let mut out = Mesh::new(mesh.dimension);
    for &old in &order {
        out.push_vertex(mesh.vertices[old as usize], mesh.vertex_refs[old as usize]);
    }
    for kind in ElementKind::ALL {
        let elements = mesh.elements(kind);
        for &e in &shuffled(elements.len(), seed + 1) {
            let (nodes, r) = elements.get(e as usize).unwrap();
            let nodes: Vec<u32> = nodes.iter().map(|&v| new_index[v as usize]).collect();
            out.elements_mut(kind).push(&nodes, r);
        }
    }
    out
}

/// An entity as its nodes' coordinates (bit patterns, in node order) and its reference.
type Entity = (Vec<[u64; 3]>, i32);

/// Every element as (its nodes' coordinates in node order, reference), sorted; and the
/// vertices as (coordinates, reference), sorted: the mesh regardless of numbering.
fn by_coordinates(mesh: &Mesh) -> (Vec<Entity>, Vec<Vec<Entity>>) {
    let bits = |p: [f64; 3]| p.map(f64::to_bits);
    let mut vertices: Vec<Entity> = mesh
        .vertices
        .iter()
        .zip(&mesh.vertex_refs)
        .map(|(&p, &r)| (vec![bits(p)], r))
        .collect();
    vertices.sort();
    let kinds = ElementKind::ALL
        .iter()
        .map(|&kind| {
            let mut elements: Vec<Entity> = mesh
                .elements(kind)
                .iter()
                .map(|(nodes, r)| {
                    (
                        nodes
                            .iter()
                            .map(|&v| bits(mesh.vertices[v as usize]))
                            .collect(),
                        r,
                    )
                })
                .collect();
            elements.sort();
            elements
        })
        .collect();
    (vertices, kinds)
}

/// Every distinct edge of the tetrahedra, as edges with reference 0.
fn with_all_edges(mut mesh: Mesh) -> Mesh {
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for (t, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
        for (a, b) in [(0, 1), (1, 2), (2, 0), (3, 0), (3, 1), (3, 2)] {
            pairs.push((t[a].min(t[b]), t[a].max(t[b])));
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    for (a, b) in pairs {
        mesh.elements_mut(ElementKind::Edges).push(&[a, b], 0);
    }
    mesh
}

#[test]
fn renumbering_keeps_the_mesh() {
    for mesh in [
        with_all_edges(sample("cube.meshb")),
        sample("hexahedra.meshb"),
        sample("sphere_surface.meshb"),
        sample("square_2d.meshb"),
    ] {
        let r = renumber(&mesh).unwrap();
        assert_eq!(r.mesh.dimension, mesh.dimension);
        for kind in ElementKind::ALL {
            assert_eq!(r.mesh.count(kind), mesh.count(kind));
        }
        assert_eq!(by_coordinates(&r.mesh), by_coordinates(&mesh));
        assert_ne!(r.mesh, mesh, "something was renumbered");
    }
}

#[test]
fn renumbering_does_not_depend_on_the_input_numbering() {
    // Distinct vertices fall in distinct curve cells and distinct tetrahedra have distinct
    // barycentres, so the order is the geometry's alone.
    let mesh = tet_grid([5, 4, 3]);
    let a = renumber(&mesh).unwrap().mesh;
    let b = renumber(&randomly_permuted(&mesh, 7)).unwrap().mesh;
    assert_eq!(a, b);
}

#[test]
fn renumbering_raises_the_score_far_above_a_random_numbering() {
    let mesh = tet_grid([20, 20, 20]);
    let random = randomly_permuted(&mesh, 3);
    let renumbered = renumber(&random).unwrap().mesh;
    let (before, after) = (
        numbering_score(&random).percent().unwrap(),
        numbering_score(&renumbered).percent().unwrap(),
    );
    assert!(after > 90.0, "renumbered: {after:.1} %");
    assert!(before < 50.0, "random: {before:.1} %");
    assert!(after - before > 40.0, "{before:.1} % -> {after:.1} %");
    // Every node is read: 4 per tetrahedron, 3 per triangle.
    let score = numbering_score(&renumbered);
    assert_eq!(
        score.reads(),
        4 * mesh.count(ElementKind::Tetrahedra) as u64
            + 3 * mesh.count(ElementKind::Triangles) as u64
    );
    // On an unstructured mesh too.
    let cube = sample("cube.meshb");
    let random = randomly_permuted(&cube, 5);
    let (before, after) = (
        numbering_score(&random).percent().unwrap(),
        numbering_score(&renumber(&random).unwrap().mesh)
            .percent()
            .unwrap(),
    );
    // Its 2300 vertices fit one L1, so a random numbering still hits often; renumbering
    // still cuts the misses by more than four.
    assert!(
        4.0 * (100.0 - after) < 100.0 - before,
        "cube: {before:.1} % -> {after:.1} %"
    );
}

#[test]
fn degree_classes_are_contiguous_and_the_curve_order_kept_inside_them() {
    let mesh = with_all_edges(sample("cube.meshb"));
    let r = renumber(&mesh).unwrap();
    let degrees = degree::vertex_degrees(&r.mesh, ElementKind::Tetrahedra);
    let base = degree::base_width(MeshKind::Vertices, MeshKind::Tetrahedra);
    let classes: Vec<u8> = degrees
        .iter()
        .map(|&d| degree::degree_class(d as usize, base))
        .collect();
    assert!(
        classes.windows(2).all(|w| w[0] <= w[1]),
        "classes not sorted"
    );
    assert!(
        classes.iter().any(|&c| c > 0),
        "the sample should have vertices of degree > 32"
    );
    let edge_classes: Vec<u8> = degree::edge_degrees(&r.mesh, ElementKind::Tetrahedra)
        .iter()
        .map(|&d| degree::degree_class(d as usize, 8))
        .collect();
    assert!(edge_classes.windows(2).all(|w| w[0] <= w[1]));
    assert!(edge_classes.iter().any(|&c| c > 0));
    // Inside a class, vertices follow the curve: keys increase.
    let cube = renumber::hilbert::HilbertBox::around(&r.mesh.vertices).unwrap();
    for w in r.mesh.vertices.windows(2).zip(classes.windows(2)) {
        if w.1[0] == w.1[1] {
            assert!(cube.key(w.0[0]) < cube.key(w.0[1]));
        }
    }
    // Without the degree sort, the classes are mixed.
    let plain = renumber::renumber_with(
        &mesh,
        &renumber::Options {
            sort_by_degree: false,
        },
        |_| {},
    )
    .unwrap();
    let plain_classes: Vec<u8> = degree::vertex_degrees(&plain.mesh, ElementKind::Tetrahedra)
        .iter()
        .map(|&d| degree::degree_class(d as usize, base))
        .collect();
    assert!(plain_classes.windows(2).any(|w| w[0] > w[1]));
}

#[test]
fn gml_builds_the_tables_renumbering_announced() {
    let r = renumber(&with_all_edges(sample("cube.meshb"))).unwrap();
    let mut gml = gml();
    gml.import_mesh(&r.mesh).unwrap();
    for uplink in &r.uplinks {
        let info = gml.link_info(uplink.from, uplink.to).unwrap();
        let tables: Vec<(usize, usize)> = info.tables.iter().map(|t| (t.width, t.rows)).collect();
        assert_eq!(tables, uplink.tables, "{} -> {}", uplink.from, uplink.to);
        assert!(
            tables.len() > 1,
            "{} -> {}: one class only",
            uplink.from,
            uplink.to
        );
    }
    let froms: Vec<MeshKind> = r.uplinks.iter().map(|u| u.from).collect();
    assert_eq!(froms, [MeshKind::Vertices, MeshKind::Edges]);
}

#[test]
fn progress_reports_every_step_in_order() {
    let mut seen = Vec::new();
    renumber::renumber_with(&tet_grid([2, 2, 2]), &renumber::Options::default(), |p| {
        seen.push((p.step, p.steps, p.what.to_string()))
    })
    .unwrap();
    // Degrees, vertices, then ordering and relabelling each kind (triangles, tetrahedra).
    assert_eq!(seen.len(), 6);
    assert!(seen.iter().enumerate().all(|(i, s)| s.0 == i && s.1 == 6));
    assert_eq!(seen[5].2, "relabelling the tetrahedra");
}

#[test]
fn cli_renumber_writes_the_same_mesh_with_a_higher_score() {
    let dir = temp_dir("renumber", "cli");
    let input = dir.join("random.meshb");
    let output = dir.join("renumbered.meshb");
    let random = randomly_permuted(&sample("cube.meshb"), 11);
    meshio::write(&input, &random, meshio::Version::V2).unwrap();
    let out = snowsim(&[
        "mesh",
        "renumber",
        input.to_str().unwrap(),
        output.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("vertices -> tetrahedra tables: width 32:"),
        "{text}"
    );
    assert!(text.contains("numbering score:"), "{text}");
    let written = meshio::read(&output).unwrap();
    assert_eq!(written.version, meshio::Version::V2);
    assert_eq!(by_coordinates(&written.mesh), by_coordinates(&random));

    let score = |path: &Path| {
        let out = snowsim(&["mesh", "info", "--json", path.to_str().unwrap()]);
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["numbering_score"].as_f64().expect("numbering_score")
    };
    let (before, after) = (score(&input), score(&output));
    assert!(
        4.0 * (100.0 - after) < 100.0 - before,
        "{before} -> {after}"
    );
    let info = snowsim(&["mesh", "info", output.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&info.stdout).contains("numbering score: "));

    let same = snowsim(&[
        "mesh",
        "renumber",
        input.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    assert_eq!(same.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&same.stderr).contains("same file"));
    std::fs::remove_dir_all(&dir).ok();
}
