//! Export of an instance's mesh: every sample mesh imported and exported entity by entity,
//! written to `.meshb` and `.mesh` and read back; after edge and face extraction, after a kernel
//! moved the vertices, after renumbering; and the refusals.

use std::collections::BTreeSet;

use snowsim::gml::{Access, GmlError, KernelSpec, MeshKind};
use snowsim::meshio::{self, ElementKind, Format, Mesh, Version};

use crate::common::{gml, sample, sample_path, temp_dir};

const SAMPLES: [&str; 4] = [
    "cube.meshb",
    "hexahedra.meshb",
    "sphere_surface.meshb",
    "square_2d.meshb",
];

/// Entity by entity, to name the first difference.
fn assert_same(got: &Mesh, expected: &Mesh, what: &str) {
    assert_eq!(got.dimension, expected.dimension, "{what}: dimension");
    assert_eq!(got.vertices.len(), expected.vertices.len(), "{what}");
    for (i, (a, b)) in got.vertices.iter().zip(&expected.vertices).enumerate() {
        assert_eq!(a, b, "{what}: vertex {i}");
    }
    assert_eq!(got.vertex_refs, expected.vertex_refs, "{what}: vertex refs");
    for kind in ElementKind::ALL {
        let (a, b) = (got.elements(kind), expected.elements(kind));
        assert_eq!(a.len(), b.len(), "{what}: {kind} count");
        for i in 0..a.len() {
            assert_eq!(a.get(i), b.get(i), "{what}: {kind} {i}");
        }
    }
    assert_eq!(got, expected, "{what}");
}

#[test]
fn every_sample_mesh_comes_back_entity_by_entity_and_bit_for_bit() {
    let dir = temp_dir("device", "gml_export_samples");
    for name in SAMPLES {
        let file = meshio::read(&sample_path(name)).unwrap();
        let mut g = gml();
        g.import_mesh(&file.mesh).unwrap();
        let exported = g.export_mesh().unwrap();
        assert_same(&exported, &file.mesh, name);

        // The binary file written back in the file's version is the original byte for byte
        // (versions 2 and 3 keep f64 coordinates, which the device holds rounded to f32).
        let original = std::fs::read(sample_path(name)).unwrap();
        let bytes = meshio::to_bytes(&exported, Format::Binary, file.version).unwrap();
        assert!(bytes == original, "{name}: bytes differ from the file");

        for ext in ["meshb", "mesh"] {
            let path = dir.join(format!("{}.{ext}", name.trim_end_matches(".meshb")));
            g.write_mesh(&path, file.version).unwrap();
            let back = meshio::read(&path).unwrap();
            let what = path.display().to_string();
            if ext == "mesh" && file.version == Version::V1 {
                // Version 1 text holds the shortest f32 text of each real, which reads back
                // as that f32 (the reader parses f64): equal once rounded to f32.
                let mut rounded = back.mesh.clone();
                for p in &mut rounded.vertices {
                    *p = p.map(|x| f64::from(x as f32));
                }
                assert_same(&rounded, &file.mesh, &what);
            } else {
                assert_same(&back.mesh, &file.mesh, &what);
            }
            // Written twice, the same bytes.
            let first = std::fs::read(&path).unwrap();
            meshio::write(&path, &back.mesh, file.version).unwrap();
            assert!(std::fs::read(&path).unwrap() == first, "{}", path.display());
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn extracted_edges_and_faces_and_moved_vertices_are_exported() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let edges = g.extract_edges().unwrap();
    let (triangles, quads) = g.extract_faces().unwrap();
    let exported = g.export_mesh().unwrap();
    assert_eq!(exported.count(ElementKind::Edges), edges);
    assert_eq!(exported.count(ElementKind::Triangles), triangles);
    assert_eq!(exported.count(ElementKind::Quadrilaterals), quads);
    assert_eq!(
        exported.elements(ElementKind::Tetrahedra),
        mesh.elements(ElementKind::Tetrahedra)
    );
    // Against a CPU reference: the edges are those of the tetrahedra, each once.
    let mut expected = BTreeSet::new();
    for (tet, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
        for (a, b) in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] {
            expected.insert((tet[a].min(tet[b]), tet[a].max(tet[b])));
        }
    }
    let got: BTreeSet<(u32, u32)> = exported
        .elements(ElementKind::Edges)
        .iter()
        .map(|(e, _)| (e[0].min(e[1]), e[0].max(e[1])))
        .collect();
    assert_eq!(got.len(), edges, "each edge once");
    assert_eq!(got, expected);
    // The faces: the file's boundary triangles first, with their references.
    let file_triangles = mesh.elements(ElementKind::Triangles);
    for i in 0..file_triangles.len() {
        assert_eq!(
            exported.elements(ElementKind::Triangles).get(i),
            file_triangles.get(i)
        );
    }
    // What the instance reads back is what is exported.
    let (nodes, refs) = g.elements(MeshKind::Edges).unwrap();
    assert_eq!(exported.elements(ElementKind::Edges).node_slice(), nodes);
    assert_eq!(exported.elements(ElementKind::Edges).refs(), refs);

    // A kernel moves the vertices on the device: the export reads them back.
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let k = g
        .compile(
            KernelSpec::new("shift", MeshKind::Vertices)
                .access(Access::read_write(vertices))
                .body("VerCrd.x += 0.5f;"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let moved = g.export_mesh().unwrap();
    for (i, (a, b)) in moved.vertices.iter().zip(&mesh.vertices).enumerate() {
        assert_eq!(a[0], f64::from(b[0] as f32 + 0.5), "vertex {i}");
        assert_eq!(a[1..], b[1..], "vertex {i}");
    }
    assert_eq!(moved.vertex_refs, mesh.vertex_refs);
    // The moved mesh round-trips through a file.
    let bytes = meshio::to_bytes(&moved, Format::Binary, Version::V2).unwrap();
    let back = meshio::read_bytes(&bytes, Format::Binary, "m.meshb".as_ref()).unwrap();
    assert_same(&back.mesh, &moved, "moved");
}

#[test]
fn a_renumbered_mesh_is_exported_in_its_new_numbering() {
    let mesh = sample("hexahedra.meshb");
    let renumbered = snowsim::renumber::renumber(&mesh).unwrap().mesh;
    assert_ne!(renumbered, mesh);
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    g.import_mesh(&renumbered).unwrap();
    assert_same(&g.export_mesh().unwrap(), &renumbered, "renumbered");
    // And edited in place: one element's reference and one vertex.
    g.set_elements(
        MeshKind::Hexahedra,
        0,
        renumbered.elements(ElementKind::Hexahedra).nodes(0),
        Some(&[77]),
    )
    .unwrap();
    g.set_vertices(1, &[[0.1, 0.2, 0.3]], Some(&[9])).unwrap();
    let edited = g.export_mesh().unwrap();
    assert_eq!(
        edited.elements(ElementKind::Hexahedra).get(0).unwrap().1,
        77
    );
    // In double precision: set_vertices keeps the imported f64 copy current.
    assert_eq!(edited.vertices[1], [0.1, 0.2, 0.3]);
    assert_eq!(edited.vertex_refs[1], 9);
}

#[test]
fn two_dimensional_meshes_stay_two_dimensional() {
    let mesh = sample("square_2d.meshb");
    assert_eq!(mesh.dimension, 2);
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    assert_eq!(g.export_mesh().unwrap().dimension, 2);
    // Once a vertex leaves the plane, the mesh is exported in 3D, losing nothing.
    g.set_vertices(0, &[[0.0, 0.0, 1.0]], None).unwrap();
    let lifted = g.export_mesh().unwrap();
    assert_eq!(lifted.dimension, 3);
    assert_eq!(lifted.vertices[0], [0.0, 0.0, 1.0]);
}

#[test]
fn an_empty_instance_has_no_mesh_to_export() {
    let mut g = gml();
    let e = g.export_mesh().unwrap_err();
    assert!(
        matches!(e, GmlError::MissingMesh(MeshKind::Vertices)),
        "{e}"
    );
    let dir = temp_dir("device", "gml_export_empty");
    let e = g.write_mesh(&dir.join("m.meshb"), Version::V2).unwrap_err();
    assert!(matches!(e, GmlError::MissingMesh(_)), "{e}");
    // A bad extension is the mesh writer's error, naming the file.
    g.import_mesh(&sample("sphere_surface.meshb")).unwrap();
    let e = g.write_mesh(&dir.join("m.txt"), Version::V2).unwrap_err();
    assert!(e.to_string().contains("m.txt"), "{e}");
    std::fs::remove_dir_all(dir).ok();
}
