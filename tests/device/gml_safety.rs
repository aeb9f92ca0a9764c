//! gml's safety and API completeness on a real device (PoCL in CI): stale data after a mesh is
//! replaced (imports, `extract_edges`/`extract_faces`, `new_mesh`, `free`) is an error, never
//! an access out of bounds; uplink programs follow their tables; the manual's data calls
//! (optional references, block setters and line read-back for mesh data and user links); the
//! manual's user-link examples; two instances at once. Every value is checked against a CPU
//! reference written here.

use std::collections::HashMap;

use snowsim::cl::{self, BufferArg, DeviceSelector};
use snowsim::gml::{Access, Gml, GmlError, KernelSpec, MeshKind};
use snowsim::meshio::{ElementKind, Mesh};

use crate::common::{Capability, gml, sample, skip};

#[allow(dead_code)]
#[path = "../../examples/user_links.rs"]
mod user_links;

// ----- helpers --------------------------------------------------------------------------------

fn gml_with(mesh: &Mesh) -> Gml {
    let mut g = gml();
    g.import_mesh(mesh).unwrap();
    g
}

/// Asserts a stale-data error, optionally from kernel `kernel`, about `data` and `kind`, and
/// that its message names what changed.
#[track_caller]
fn assert_stale<T: std::fmt::Debug>(
    result: Result<T, GmlError>,
    data: &str,
    kind: MeshKind,
    kernel: Option<&str>,
    change: &str,
) {
    match result {
        Err(
            ref e @ GmlError::StaleData {
                data: ref d,
                kind: k,
                kernel: ref kn,
                change: ref c,
                ..
            },
        ) => {
            assert_eq!(d, data, "{e}");
            assert_eq!(k, kind, "{e}");
            assert_eq!(kn.as_deref(), kernel, "{e}");
            assert!(c.contains(change), "`{change}` not in: {e}");
            let text = e.to_string();
            assert!(text.contains(data) && text.contains(change), "{text}");
        }
        other => panic!("expected StaleData for `{data}`, got {other:?}"),
    }
}

fn centre(mesh: &Mesh, nodes: &[u32]) -> [f64; 3] {
    let mut c = [0.0; 3];
    for &v in nodes {
        for (k, ck) in c.iter_mut().enumerate() {
            *ck += mesh.vertices[v as usize][k] / nodes.len() as f64;
        }
    }
    c
}

fn sorted(nodes: &[u32]) -> Vec<u32> {
    let mut s = nodes.to_vec();
    s.sort_unstable();
    s
}

// ----- the manual's data calls -----------------------------------------------------------------

#[test]
fn set_vertices_and_elements_take_optional_references() {
    let mut g = gml();
    g.new_mesh(MeshKind::Vertices, 4).unwrap();
    let p = [
        [1.5, 2.3, 1.0],
        [9.2, 8.3, 1.0],
        [6.3, 1.6, 2.3],
        [0.0, -1.0, 4.0],
    ];
    g.set_vertices(0, &p, Some(&[8, 6, 0, 3])).unwrap();
    // No references: the vertices keep theirs (this used to panic).
    g.set_vertices(1, &[[7.0, 7.5, -1.0], [2.0, 0.25, 0.5]], None)
        .unwrap();
    let expected = [
        ([1.5f32, 2.3, 1.0], 8),
        ([7.0, 7.5, -1.0], 6),
        ([2.0, 0.25, 0.5], 0),
        ([0.0, -1.0, 4.0], 3),
    ];
    for (i, (xyz, r)) in expected.iter().enumerate() {
        let (got, got_ref) = g.vertex_line(i).unwrap();
        assert_eq!(got, *xyz, "vertex {i}");
        assert_eq!(got_ref, *r, "vertex {i}");
    }
    // References of the wrong length are refused, not a panic.
    assert!(matches!(
        g.set_vertices(0, &p, Some(&[1, 2])),
        Err(GmlError::WrongLength {
            expected: 4,
            got: 2,
            ..
        })
    ));
    assert!(matches!(
        g.set_vertices(3, &p[..2], None),
        Err(GmlError::LineOutOfRange { .. })
    ));

    g.new_mesh(MeshKind::Triangles, 2).unwrap();
    g.set_elements(MeshKind::Triangles, 0, &[0, 1, 2, 1, 2, 3], Some(&[5, 7]))
        .unwrap();
    g.set_elements(MeshKind::Triangles, 1, &[3, 2, 0], None)
        .unwrap();
    assert_eq!(
        g.element_line(MeshKind::Triangles, 0).unwrap(),
        (vec![0, 1, 2], 5)
    );
    assert_eq!(
        g.element_line(MeshKind::Triangles, 1).unwrap(),
        (vec![3, 2, 0], 7)
    );
    assert!(matches!(
        g.set_elements(MeshKind::Triangles, 0, &[0, 1], None),
        Err(GmlError::WrongLength { .. })
    ));
    assert!(matches!(
        g.set_elements(MeshKind::Triangles, 0, &[0, 1, 2], Some(&[1, 2])),
        Err(GmlError::WrongLength { .. })
    ));
    assert!(matches!(
        g.set_elements(MeshKind::Vertices, 0, &[0], None),
        Err(GmlError::NotElements(MeshKind::Vertices))
    ));
}

#[test]
fn mesh_lines_read_back_what_was_imported() {
    let mesh = sample("cube.meshb");
    let mut g = gml_with(&mesh);
    let n = mesh.vertices.len();
    for i in [0, 1, n / 2, n - 1] {
        let (xyz, r) = g.vertex_line(i).unwrap();
        assert_eq!(xyz, mesh.vertices[i].map(|v| v as f32), "vertex {i}");
        assert_eq!(r, mesh.vertex_refs[i]);
    }
    let (block, refs) = g.vertex_block(3, 5).unwrap();
    assert_eq!(block.len(), 5);
    assert_eq!(refs, mesh.vertex_refs[3..8]);
    for kind in [ElementKind::Tetrahedra, ElementKind::Triangles] {
        let elements = mesh.elements(kind);
        let mk = MeshKind::from_element(kind);
        for i in [0, elements.len() / 3, elements.len() - 1] {
            let (nodes, r) = elements.get(i).unwrap();
            assert_eq!(g.element_line(mk, i).unwrap(), (nodes.to_vec(), r));
        }
        let (nodes, refs) = g.element_block(mk, 2, 4).unwrap();
        assert_eq!(nodes, elements.node_slice()[2 * mk.nodes()..6 * mk.nodes()]);
        assert_eq!(refs, elements.refs()[2..6]);
    }
    assert!(matches!(
        g.vertex_line(n),
        Err(GmlError::LineOutOfRange { .. })
    ));
    assert!(matches!(
        g.vertex_block(usize::MAX, 2),
        Err(GmlError::LineOutOfRange { .. })
    ));
    assert!(matches!(
        g.element_line(MeshKind::Vertices, 0),
        Err(GmlError::NotElements(_))
    ));
    assert!(matches!(
        g.element_line(MeshKind::Hexahedra, 0),
        Err(GmlError::MissingMesh(MeshKind::Hexahedra))
    ));
    // A kernel moves the vertices: line read-back sees the device copy.
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let k = g
        .compile(
            KernelSpec::new("shift", MeshKind::Vertices)
                .access(Access::read_write(vertices))
                .body("VerCrd.x += 0.5f;"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let (xyz, _) = g.vertex_line(n - 1).unwrap();
    assert_eq!(xyz[0], mesh.vertices[n - 1][0] as f32 + 0.5);
}

#[test]
fn link_blocks_round_trip_and_are_checked() {
    let mesh = sample("square_2d.meshb");
    let mut g = gml_with(&mesh);
    let edges = g.count(MeshKind::Edges).unwrap();
    let tris = g.count(MeshKind::Triangles).unwrap() as i32;
    let link = g
        .new_link(MeshKind::Edges, MeshKind::Triangles, 2, "Sides")
        .unwrap();
    assert_eq!(
        g.link_shape(link).unwrap(),
        (MeshKind::Edges, MeshKind::Triangles, 2)
    );
    // New links read -1 ("none") everywhere.
    assert_eq!(g.link_block(link, 0, edges).unwrap(), vec![-1; 2 * edges]);
    let values: Vec<i32> = (0..2 * edges as i32)
        .map(|i| if i % 3 == 0 { -1 } else { (i * 7) % tris })
        .collect();
    g.set_link_block(link, 0, &values).unwrap();
    g.set_link_line(link, 4, &[1, 2]).unwrap();
    g.set_link_block(link, edges - 2, &[3, -1, 4, 5]).unwrap();
    let mut expected = values.clone();
    expected[8..10].copy_from_slice(&[1, 2]);
    expected[2 * edges - 4..].copy_from_slice(&[3, -1, 4, 5]);
    assert_eq!(g.link_block(link, 0, edges).unwrap(), expected);
    assert_eq!(g.link_line(link, 4).unwrap(), vec![1, 2]);
    assert_eq!(g.link_block(link, 5, 2).unwrap(), expected[10..14]);

    assert!(matches!(
        g.set_link_block(link, 0, &[1, 2, 3]),
        Err(GmlError::WrongLength { .. })
    ));
    assert!(matches!(
        g.set_link_block(link, 0, &[1, tris]),
        Err(GmlError::NodeOutOfRange { .. })
    ));
    assert!(matches!(
        g.set_link_block(link, 0, &[-2, 0]),
        Err(GmlError::NodeOutOfRange { .. })
    ));
    assert!(matches!(
        g.set_link_block(link, edges - 1, &[1, 2, 3, 4]),
        Err(GmlError::LineOutOfRange { .. })
    ));
    assert!(matches!(
        g.set_link_line(link, 0, &[1]),
        Err(GmlError::WrongLength { .. })
    ));
    assert!(matches!(
        g.link_block(link, edges, 1),
        Err(GmlError::LineOutOfRange { .. })
    ));
    assert!(matches!(
        g.new_link(MeshKind::Edges, MeshKind::Hexahedra, 1, "Hex"),
        Err(GmlError::MissingMesh(MeshKind::Hexahedra))
    ));
}

/// The manual (3.30): a neighbour link "could be created manually by calling GmlNewLinkData(),
/// building the neighboring information yourself and then transferring them to the GPU with
/// GmlSetDataBlock()". Built so, it equals `set_neighbours` and a kernel reads the same
/// through both.
#[test]
fn hand_built_neighbours_equal_set_neighbours() {
    let mesh = sample("cube.meshb");
    let mut g = gml_with(&mesh);
    let tets = mesh.elements(ElementKind::Tetrahedra);
    // GMlib's face i is opposite vertex i.
    let faces = [[1, 2, 3], [2, 0, 3], [3, 0, 1], [0, 2, 1]];
    let mut by_face: HashMap<Vec<u32>, Vec<usize>> = HashMap::new();
    for (t, (nodes, _)) in tets.iter().enumerate() {
        for f in faces {
            by_face
                .entry(sorted(&f.map(|i| nodes[i])))
                .or_default()
                .push(t);
        }
    }
    let mut table = Vec::with_capacity(4 * tets.len());
    for (t, (nodes, _)) in tets.iter().enumerate() {
        for f in faces {
            let across = by_face[&sorted(&f.map(|i| nodes[i]))]
                .iter()
                .find(|&&o| o != t)
                .map_or(-1, |&o| o as i32);
            table.push(across);
        }
    }
    let mine = g
        .new_link(MeshKind::Tetrahedra, MeshKind::Tetrahedra, 4, "Mine")
        .unwrap();
    g.set_link_block(mine, 0, &table).unwrap();
    let ngb = g.set_neighbours(MeshKind::Tetrahedra).unwrap();
    assert_eq!(g.link_block(ngb, 0, tets.len()).unwrap(), table);
    assert_eq!(g.link_block(mine, 0, tets.len()).unwrap(), table);

    let id = g
        .new_solution::<f32>(MeshKind::Tetrahedra, 1, "Id")
        .unwrap();
    let ids: Vec<f32> = (0..tets.len()).map(|i| i as f32).collect();
    g.set_block(id, 0, &ids).unwrap();
    let mut sums = Vec::new();
    for (name, link) in [("through_ngb", ngb), ("through_mine", mine)] {
        let out = g
            .new_solution::<f32>(MeshKind::Tetrahedra, 1, &format!("Out_{name}"))
            .unwrap();
        let body = format!(
            "float s = 0.0f; for (int k = 1; k < 5; k++) s += TetId[k]; TetOut_{name} = s;"
        );
        let k = g
            .compile(
                KernelSpec::new(name, MeshKind::Tetrahedra)
                    .access(Access::read(id).via(link))
                    .access(Access::write(out))
                    .body(&body),
            )
            .unwrap();
        g.launch(k).unwrap();
        sums.push(g.read_all(out).unwrap());
    }
    for t in 0..tets.len() {
        let expected: f32 = table[4 * t..4 * t + 4]
            .iter()
            .filter(|&&o| o >= 0)
            .map(|&o| o as f32)
            .sum();
        assert_eq!(sums[0][t], expected, "tet {t}");
        assert_eq!(sums[1][t], expected, "tet {t}");
    }
}

// ----- the manual's user-link examples ---------------------------------------------------------

#[test]
fn upwind_link_example_matches_the_cpu() {
    let mesh = sample("square_2d.meshb");
    let mut g = gml_with(&mesh);
    let wind = [1.0f32, 0.5];
    let u = user_links::upwind(&mut g, wind).unwrap();
    // Independent reference: edges as gml extracted them, triangles from the file. The file's
    // boundary edges come first, with their references.
    let (edges, edge_refs) = g.elements(MeshKind::Edges).unwrap();
    let boundary = mesh.elements(ElementKind::Edges);
    assert!(!boundary.is_empty());
    for (e, (nodes, r)) in boundary.iter().enumerate() {
        assert_eq!(sorted(&edges[2 * e..2 * e + 2]), sorted(nodes), "edge {e}");
        assert_eq!(edge_refs[e], r, "edge {e}");
    }
    assert!(edge_refs[boundary.len()..].iter().all(|&r| r == 0));
    let tris = mesh.elements(ElementKind::Triangles);
    let mut sides: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    for (t, (n, _)) in tris.iter().enumerate() {
        for (a, b) in [(n[0], n[1]), (n[1], n[2]), (n[2], n[0])] {
            sides.entry((a.min(b), a.max(b))).or_default().push(t);
        }
    }
    let w = [f64::from(wind[0]), f64::from(wind[1])];
    let along = |p: [f64; 3]| p[0] * w[0] + p[1] * w[1];
    assert_eq!(u.link.len(), edges.len());
    for (e, pair) in edges.chunks_exact(2).enumerate() {
        let (a, b) = (pair[0], pair[1]);
        let list = &sides[&(a.min(b), a.max(b))];
        let mid = centre(&mesh, pair);
        let (up, down) = match list.as_slice() {
            [t] if along(centre(&mesh, tris.nodes(*t))) < along(mid) => (*t as i32, -1),
            [t] => (-1, *t as i32),
            [s, t] => {
                if along(centre(&mesh, tris.nodes(*s))) < along(centre(&mesh, tris.nodes(*t))) {
                    (*s as i32, *t as i32)
                } else {
                    (*t as i32, *s as i32)
                }
            }
            other => panic!("edge {e} has {} triangles", other.len()),
        };
        assert_eq!(&u.link[2 * e..2 * e + 2], &[up, down], "edge {e}");
        let conc = |t: i32| {
            let c = centre(&mesh, tris.nodes(t as usize));
            1.0 + c[0] + 2.0 * c[1]
        };
        let (pa, pb) = (mesh.vertices[a as usize], mesh.vertices[b as usize]);
        let across = (w[0] * (pb[1] - pa[1]) - w[1] * (pb[0] - pa[0])).abs();
        let expected = if up >= 0 { across * conc(up) } else { 0.0 };
        assert!(
            (f64::from(u.flux[e]) - expected).abs() <= 1e-5 * (1.0 + expected.abs()),
            "edge {e}: {} vs {expected}",
            u.flux[e]
        );
    }
    for (t, (n, _)) in tris.iter().enumerate() {
        let c = centre(&mesh, n);
        let expected = 1.0 + c[0] + 2.0 * c[1];
        assert!((f64::from(u.concentration[t]) - expected).abs() < 1e-5);
    }
}

#[test]
fn assembled_vertex_operator_example_matches_the_cpu() {
    let mesh = sample("cube.meshb");
    let mut g = gml_with(&mesh);
    let n = mesh.vertices.len();
    let x: Vec<f32> = (0..n).map(|i| ((i * 37) % 11) as f32 - 5.0).collect();
    let a = user_links::assembled_laplacian(&mut g, &x).unwrap();
    // Independent reference: the edge graph of the tetrahedra and triangles of the file.
    let mut graph: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut add = |p: u32, q: u32| {
        let (p, q) = (p as usize, q as usize);
        if !graph[p].contains(&q) {
            graph[p].push(q);
            graph[q].push(p);
        }
    };
    for (t, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
        for i in 0..4 {
            for j in i + 1..4 {
                add(t[i], t[j]);
            }
        }
    }
    for (t, _) in mesh.elements(ElementKind::Triangles).iter() {
        add(t[0], t[1]);
        add(t[1], t[2]);
        add(t[2], t[0]);
    }
    let width = graph.iter().map(Vec::len).max().unwrap();
    assert_eq!(a.width, width);
    for i in 0..n {
        let mut mine: Vec<i32> = a.link[i * width..(i + 1) * width]
            .iter()
            .copied()
            .filter(|&j| j >= 0)
            .collect();
        mine.sort_unstable();
        let mut reference: Vec<i32> = graph[i].iter().map(|&j| j as i32).collect();
        reference.sort_unstable();
        assert_eq!(mine, reference, "vertex {i}");
        let p = mesh.vertices[i];
        let expected: f64 = graph[i]
            .iter()
            .map(|&j| {
                let q = mesh.vertices[j];
                let d =
                    ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt();
                (f64::from(x[i]) - f64::from(x[j])) / d
            })
            .sum();
        let scale: f64 = graph[i]
            .iter()
            .map(|&j| {
                let q = mesh.vertices[j];
                10.0 / ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2))
                    .sqrt()
            })
            .sum();
        assert!(
            (f64::from(a.product[i]) - expected).abs() <= 1e-5 * (1.0 + scale),
            "vertex {i}: {} vs {expected}",
            a.product[i]
        );
    }
}

#[test]
fn closest_elements_example_matches_the_cpu() {
    let mesh = sample("cube.meshb");
    let mut g = gml_with(&mesh);
    let k = 6;
    let c = user_links::closest_elements(&mut g, k).unwrap();
    let tets = mesh.elements(ElementKind::Tetrahedra);
    let centres: Vec<[f64; 3]> = tets.iter().map(|(t, _)| centre(&mesh, t)).collect();
    let volume = |t: &[u32]| {
        let p: Vec<[f64; 3]> = t.iter().map(|&v| mesh.vertices[v as usize]).collect();
        let d = |i: usize| [p[i][0] - p[0][0], p[i][1] - p[0][1], p[i][2] - p[0][2]];
        let (a, b, e) = (d(1), d(2), d(3));
        (a[0] * (b[1] * e[2] - b[2] * e[1]) - a[1] * (b[0] * e[2] - b[2] * e[0])
            + a[2] * (b[0] * e[1] - b[1] * e[0]))
            / 6.0
    };
    for (t, (nodes, _)) in tets.iter().enumerate() {
        let v = volume(nodes);
        assert!(
            (f64::from(c.volumes[t]) - v).abs() <= 1e-4 * v.abs() + 1e-9,
            "tet {t}"
        );
    }
    for (i, p) in mesh.vertices.iter().enumerate() {
        let row = &c.link[i * k..(i + 1) * k];
        let dist = |t: usize| {
            let q = centres[t];
            (p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)
        };
        // The k-th closest distance: no tetrahedron outside the row is closer (ties aside).
        let kth = row.iter().map(|&t| dist(t as usize)).fold(0.0, f64::max);
        let closer = (0..tets.len()).filter(|&t| dist(t) < kth - 1e-12).count();
        assert!(
            closer < k,
            "vertex {i}: {closer} tetrahedra closer than its row"
        );
        let expected: f64 = row
            .iter()
            .map(|&t| volume(tets.nodes(t as usize)))
            .sum::<f64>()
            / k as f64;
        assert!(
            (f64::from(c.mean_volume[i]) - expected).abs() <= 1e-4 * expected.abs() + 1e-9,
            "vertex {i}"
        );
    }
}

// ----- stale data ------------------------------------------------------------------------------

#[test]
fn a_new_import_retires_what_the_new_mesh_lacks() {
    let cube = sample("cube.meshb");
    let sphere = sample("sphere_surface.meshb");
    let mut g = gml_with(&cube);
    assert!(g.count(MeshKind::Tetrahedra).is_some());
    let tet_gen = g.mesh_generation(MeshKind::Tetrahedra);
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let tet_q = g.new_solution::<f32>(MeshKind::Tetrahedra, 1, "Q").unwrap();
    let ver_s = g.new_solution::<f32>(MeshKind::Vertices, 1, "S").unwrap();
    let ngb = g.set_neighbours(MeshKind::Tetrahedra).unwrap();
    let volume = g
        .compile(
            KernelSpec::new("volume", MeshKind::Tetrahedra)
                .access(Access::read(vertices))
                .access(Access::write(tet_q))
                .body("TetQ = CalTetVol(TetCrd[0], TetCrd[1], TetCrd[2], TetCrd[3]);"),
        )
        .unwrap();
    let ball = g
        .compile(
            KernelSpec::new("ball", MeshKind::Vertices)
                .access(Access::read(tet_q))
                .access(Access::write(ver_s))
                .body("float s = 0.0f; for (int i = 0; i < VerTetDegMax; i++) s += VerTetQ[i]; VerS = s;"),
        )
        .unwrap();
    g.launch(volume).unwrap();
    g.launch(ball).unwrap();
    let buffer = g.field_buffer(ver_s).unwrap();
    assert!(buffer.is_current());
    assert_eq!(buffer.generation(), g.mesh_generation(MeshKind::Vertices));

    g.import_mesh(&sphere).unwrap();
    // The new mesh has no tetrahedra: the kind is gone, not left over from the cube.
    assert_eq!(g.count(MeshKind::Tetrahedra), None);
    assert_eq!(g.count(MeshKind::Vertices), Some(sphere.vertices.len()));
    assert!(g.mesh_generation(MeshKind::Tetrahedra) > tet_gen);
    assert!(!g.is_current(tet_q) && !g.is_current(ver_s) && !g.is_current(ngb));
    assert!(g.is_current(g.mesh(MeshKind::Triangles).unwrap()));
    assert_stale(
        g.read_all(tet_q),
        "Q",
        MeshKind::Tetrahedra,
        None,
        "removed",
    );
    assert_stale(
        g.read_all(ver_s),
        "S",
        MeshKind::Vertices,
        None,
        "import_mesh replaced them",
    );
    assert_stale(
        g.set_block(ver_s, 0, &[1.0]),
        "S",
        MeshKind::Vertices,
        None,
        "import_mesh",
    );
    assert_stale(
        g.link_line(ngb, 0),
        "Ngb",
        MeshKind::Tetrahedra,
        None,
        "removed",
    );
    assert_stale(
        g.launch(volume),
        "vertices mesh data",
        MeshKind::Vertices,
        Some("volume"),
        "import_mesh replaced them",
    );
    assert_stale(
        g.launch(ball),
        "Q",
        MeshKind::Tetrahedra,
        Some("ball"),
        "removed",
    );
    let mut timeline = cl::Timeline::new(false);
    assert_stale(
        g.enqueue(ball, &mut timeline),
        "Q",
        MeshKind::Tetrahedra,
        Some("ball"),
        "removed",
    );
    assert_stale(
        g.compile(
            KernelSpec::new("again", MeshKind::Vertices)
                .access(Access::write(ver_s))
                .body("VerS = 1.0f;"),
        ),
        "S",
        MeshKind::Vertices,
        Some("again"),
        "import_mesh",
    );
    assert_stale(
        g.field_buffer(ver_s),
        "S",
        MeshKind::Vertices,
        None,
        "import_mesh",
    );
    // The buffer handed out before the import went stale with its field.
    assert!(!buffer.is_current());
    assert!(matches!(buffer.cl_mem_checked(), Err(cl::Error::Stale(_))));
    // The name is free again, and the new field has the new mesh's size.
    let again = g.new_solution::<f32>(MeshKind::Vertices, 1, "S").unwrap();
    assert_eq!(g.read_all(again).unwrap().len(), sphere.vertices.len());
    // Stale handles can still be freed; then they are unknown.
    g.free(ver_s).unwrap();
    assert!(matches!(g.read_all(ver_s), Err(GmlError::UnknownData(_))));
}

#[test]
fn reimporting_a_mesh_of_the_same_size_still_retires_its_data() {
    let cube = sample("cube.meshb");
    let mut g = gml_with(&cube);
    let s = g.new_solution::<f32>(MeshKind::Vertices, 1, "S").unwrap();
    let link = g
        .new_link(MeshKind::Triangles, MeshKind::Tetrahedra, 1, "Behind")
        .unwrap();
    let vertices_before = g.mesh(MeshKind::Vertices).unwrap();
    g.import_mesh(&cube).unwrap();
    assert_eq!(g.count(MeshKind::Vertices), Some(cube.vertices.len()));
    assert_stale(
        g.read_all(s),
        "S",
        MeshKind::Vertices,
        None,
        "import_mesh replaced them",
    );
    assert_stale(
        g.link_line(link, 0),
        "Behind",
        MeshKind::Triangles,
        None,
        "import_mesh replaced them",
    );
    // Handles to the old mesh data itself are stale too, not silently the new data.
    assert_stale(
        g.compile(
            KernelSpec::new("old_vertices", MeshKind::Vertices)
                .access(Access::read_write(vertices_before))
                .body("VerCrd.x += 1.0f;"),
        ),
        "vertices mesh data",
        MeshKind::Vertices,
        Some("old_vertices"),
        "import_mesh",
    );
    // import_kinds with fewer kinds removes the others.
    g.import_kinds(&cube, &[ElementKind::Triangles]).unwrap();
    assert_eq!(g.count(MeshKind::Tetrahedra), None);
    assert_eq!(
        g.count(MeshKind::Triangles),
        Some(cube.elements(ElementKind::Triangles).len())
    );
}

/// The wind solver's path: a mesh with boundary triangles (with references), extract the
/// faces, build neighbours, and compute over the new faces.
#[test]
fn extract_faces_on_a_mesh_with_boundary_triangles() {
    let cube = sample("cube.meshb");
    let boundary = cube.elements(ElementKind::Triangles);
    assert!(!boundary.is_empty());
    let mut g = gml_with(&cube);
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let flux = g
        .new_solution::<f32>(MeshKind::Triangles, 1, "Flux")
        .unwrap();
    let flux_buffer = g.field_buffer(flux).unwrap();
    let tet_field = g
        .new_solution::<f32>(MeshKind::Tetrahedra, 1, "Vol")
        .unwrap();
    let area = g
        .compile(
            KernelSpec::new("area", MeshKind::Triangles)
                .access(Access::read(vertices))
                .access(Access::write(flux))
                .body("TriFlux = CalTriSrf(TriCrd[0], TriCrd[1], TriCrd[2]);"),
        )
        .unwrap();
    let volume = g
        .compile(
            KernelSpec::new("volume", MeshKind::Tetrahedra)
                .access(Access::read(vertices))
                .access(Access::write(tet_field))
                .body("TetVol = CalTetVol(TetCrd[0], TetCrd[1], TetCrd[2], TetCrd[3]);"),
        )
        .unwrap();
    g.launch(area).unwrap();
    let tri_gen = g.mesh_generation(MeshKind::Triangles);

    let (tris, quads) = g.extract_faces().unwrap();
    let tets = cube.elements(ElementKind::Tetrahedra);
    // Every face once: (4 T + B) / 2 triangles.
    assert_eq!(tris, (4 * tets.len() + boundary.len()) / 2);
    assert_eq!(quads, 0);
    assert!(g.mesh_generation(MeshKind::Triangles) > tri_gen);
    // The boundary triangles come first with their references.
    let (nodes, refs) = g
        .element_block(MeshKind::Triangles, 0, boundary.len())
        .unwrap();
    for (i, (t, r)) in boundary.iter().enumerate() {
        assert_eq!(sorted(&nodes[3 * i..3 * i + 3]), sorted(t), "triangle {i}");
        assert_eq!(refs[i], r, "triangle {i}");
    }
    // Old triangle data: errors, and the exposed buffer is stale.
    assert_stale(
        g.launch(area),
        "Flux",
        MeshKind::Triangles,
        Some("area"),
        "extract_faces replaced them",
    );
    assert_stale(
        g.read_all(flux),
        "Flux",
        MeshKind::Triangles,
        None,
        "extract_faces",
    );
    assert!(!flux_buffer.is_current());
    assert!(matches!(
        flux_buffer.cl_mem_checked(),
        Err(cl::Error::Stale(_))
    ));
    // Tetrahedra and vertices did not change: their kernels and fields go on.
    assert!(g.is_current(tet_field));
    g.launch(volume).unwrap();
    // Neighbours, then a kernel over tetrahedra reading the new faces through the downlink.
    let ngb = g.set_neighbours(MeshKind::Tetrahedra).unwrap();
    let face_area = g
        .new_solution::<f32>(MeshKind::Triangles, 1, "Area")
        .unwrap();
    let tri_area = g
        .compile(
            KernelSpec::new("tri_area", MeshKind::Triangles)
                .access(Access::read(vertices))
                .access(Access::write(face_area))
                .body("TriArea = CalTriSrf(TriCrd[0], TriCrd[1], TriCrd[2]);"),
        )
        .unwrap();
    let surface = g
        .new_solution::<f32>(MeshKind::Tetrahedra, 1, "Surface")
        .unwrap();
    let tet_surface = g
        .compile(
            KernelSpec::new("tet_surface", MeshKind::Tetrahedra)
                .access(Access::read(face_area))
                .access(Access::write(surface))
                .body("TetSurface = TetArea[0] + TetArea[1] + TetArea[2] + TetArea[3];"),
        )
        .unwrap();
    let boundary_faces = g
        .new_solution::<i32>(MeshKind::Tetrahedra, 1, "Open")
        .unwrap();
    let count_open = g
        .compile(
            KernelSpec::new("open_faces", MeshKind::Tetrahedra)
                .access(Access::read(tet_field).via(ngb))
                .access(Access::write(boundary_faces))
                .body("TetOpen = 4 - TetDeg;"),
        )
        .unwrap();
    g.launch(tri_area).unwrap();
    g.launch(tet_surface).unwrap();
    g.launch(count_open).unwrap();
    let got = g.read_all(surface).unwrap();
    let open = g.read_all(boundary_faces).unwrap();
    let area_of = |a: [f64; 3], b: [f64; 3], c: [f64; 3]| {
        let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
        let x = [
            u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0],
        ];
        0.5 * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt()
    };
    let boundary_keys: std::collections::HashSet<Vec<u32>> =
        boundary.iter().map(|(t, _)| sorted(t)).collect();
    for (t, (n, _)) in tets.iter().enumerate() {
        let p = |i: usize| cube.vertices[n[i] as usize];
        let faces = [[1, 2, 3], [2, 0, 3], [3, 0, 1], [0, 2, 1]];
        let expected: f64 = faces
            .iter()
            .map(|f| area_of(p(f[0]), p(f[1]), p(f[2])))
            .sum();
        assert!(
            (f64::from(got[t]) - expected).abs() <= 1e-5 * (1.0 + expected),
            "tet {t}: {} vs {expected}",
            got[t]
        );
        let on_boundary = faces
            .iter()
            .filter(|f| boundary_keys.contains(&sorted(&f.map(|i| n[i]))))
            .count();
        assert_eq!(open[t] as usize, on_boundary, "tet {t}");
    }
    // A second extraction changes nothing but still retires what was made for the first.
    let again = g.extract_faces().unwrap();
    assert_eq!(again, (tris, quads));
    assert_stale(
        g.launch(tet_surface),
        "Area",
        MeshKind::Triangles,
        Some("tet_surface"),
        "extract_faces",
    );
    assert!(g.is_current(ngb));
}

#[test]
fn extract_edges_new_mesh_and_free_retire_their_dependents() {
    let cube = sample("cube.meshb");
    let mut g = gml_with(&cube);
    g.extract_edges().unwrap();
    let len = g.new_solution::<f32>(MeshKind::Edges, 1, "Len").unwrap();
    let edge_link = g
        .new_link(MeshKind::Tetrahedra, MeshKind::Edges, 6, "MyEdges")
        .unwrap();
    g.extract_edges().unwrap();
    assert_stale(
        g.read_all(len),
        "Len",
        MeshKind::Edges,
        None,
        "extract_edges replaced them",
    );
    assert_stale(
        g.link_line(edge_link, 0),
        "MyEdges",
        MeshKind::Edges,
        None,
        "extract_edges",
    );

    // new_mesh on the vertices retires every element table, which indexes them.
    let tri_field = g.new_solution::<f32>(MeshKind::Triangles, 1, "T").unwrap();
    let old_tets = g.mesh(MeshKind::Tetrahedra).unwrap();
    g.new_mesh(MeshKind::Vertices, 3).unwrap();
    for kind in [MeshKind::Edges, MeshKind::Triangles, MeshKind::Tetrahedra] {
        assert_eq!(g.count(kind), None, "{kind}");
    }
    assert_stale(
        g.read_all(tri_field),
        "T",
        MeshKind::Triangles,
        None,
        "new_mesh of the vertices removed them",
    );
    assert!(!g.is_current(old_tets));

    // free on mesh data retires what was made for it.
    g.new_mesh(MeshKind::Triangles, 1).unwrap();
    g.set_elements(MeshKind::Triangles, 0, &[0, 1, 2], Some(&[4]))
        .unwrap();
    let t = g.new_solution::<f32>(MeshKind::Triangles, 1, "T").unwrap();
    g.free(g.mesh(MeshKind::Triangles).unwrap()).unwrap();
    assert_stale(
        g.read_all(t),
        "T",
        MeshKind::Triangles,
        None,
        "free removed them",
    );
    assert_eq!(g.count(MeshKind::Triangles), None);
}

#[test]
fn a_second_set_neighbours_retires_the_first_link() {
    let cube = sample("cube.meshb");
    let mut g = gml_with(&cube);
    let first = g.set_neighbours(MeshKind::Tetrahedra).unwrap();
    let second = g.set_neighbours(MeshKind::Tetrahedra).unwrap();
    assert!(matches!(
        g.link_line(first, 0),
        Err(GmlError::Retired { ref data, .. }) if data == "Ngb"
    ));
    assert_eq!(g.link_line(second, 0).unwrap().len(), 4);

    // New element nodes retire the neighbour link computed from the old ones, and a kernel
    // reading through it refuses to launch.
    let id = g
        .new_solution::<f32>(MeshKind::Tetrahedra, 1, "Id")
        .unwrap();
    let out = g
        .new_solution::<f32>(MeshKind::Tetrahedra, 1, "Out")
        .unwrap();
    let k = g
        .compile(
            KernelSpec::new("through_ngb", MeshKind::Tetrahedra)
                .access(Access::read(id).via(second))
                .access(Access::write(out))
                .body("TetOut = TetId[1];"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let (nodes, _) = g.element_line(MeshKind::Tetrahedra, 0).unwrap();
    let swapped = [nodes[1], nodes[0], nodes[2], nodes[3]];
    g.set_elements(MeshKind::Tetrahedra, 0, &swapped, None)
        .unwrap();
    assert!(g.is_current(id), "same entities, same count: fields stay");
    match g.launch(k) {
        Err(GmlError::Retired { data, why }) => {
            assert_eq!(data, "Ngb");
            assert!(why.contains("set_elements"), "{why}");
        }
        other => panic!("expected Retired, got {other:?}"),
    }
    let third = g.set_neighbours(MeshKind::Tetrahedra).unwrap();
    assert_eq!(g.link_line(third, 0).unwrap().len(), 4);
}

/// Vertex → triangle ball tables of the same widths (8 and 16) but other rows and contiguity:
/// first only the last vertex has more than 8 triangles, then the first and the last. The
/// kernel's programs must be built again (a program for contiguous rows would process the
/// wrong vertices).
#[test]
fn uplink_programs_are_rebuilt_when_their_tables_change() {
    let mut g = gml();
    let n = 22;
    g.new_mesh(MeshKind::Vertices, n).unwrap();
    let p: Vec<[f64; 3]> = (0..n)
        .map(|i| [i as f64, (i * i % 7) as f64, 0.0])
        .collect();
    g.set_vertices(0, &p, None).unwrap();
    // 19 triangles: a fan of 10 around vertex 21, then a strip.
    let mut first: Vec<u32> = (0..10).flat_map(|i| [21, i, i + 1]).collect();
    first.extend((10..19).flat_map(|i| [i, i + 1, i + 2]));
    // 19 triangles: a fan of 10 around vertex 0, a fan of 9 around vertex 21.
    let mut second: Vec<u32> = (1..11).flat_map(|i| [0, i, i + 1]).collect();
    second.extend((11..20).flat_map(|i| [21, i, i + 1]));
    g.new_mesh(MeshKind::Triangles, 19).unwrap();
    g.set_elements(MeshKind::Triangles, 0, &first, None)
        .unwrap();
    let id = g.new_solution::<f32>(MeshKind::Triangles, 1, "Id").unwrap();
    g.set_block(id, 0, &(1..=19).map(|i| i as f32).collect::<Vec<_>>())
        .unwrap();
    let sum = g.new_solution::<f32>(MeshKind::Vertices, 1, "Sum").unwrap();
    let k = g
        .compile(
            KernelSpec::new("ball_sum", MeshKind::Vertices)
                .access(Access::read(id))
                .access(Access::write(sum))
                .body(
                    "float s = 0.0f;
                     for (int i = 0; i < VerTriDegMax; i++) s += VerTriId[i];
                     VerSum = s * 100.0f + VerTriDeg;",
                ),
        )
        .unwrap();
    let reference = |tris: &[u32]| -> Vec<f32> {
        let mut s = vec![0f32; n];
        for (t, tri) in tris.chunks_exact(3).enumerate() {
            for &v in tri {
                s[v as usize] += (t + 1) as f32 * 100.0 + 1.0;
            }
        }
        s
    };
    g.launch(k).unwrap();
    assert_eq!(g.read_all(sum).unwrap(), reference(&first));
    let info = g
        .link_info(MeshKind::Vertices, MeshKind::Triangles)
        .unwrap();
    let widths: Vec<usize> = info.tables.iter().map(|t| t.width).collect();
    assert_eq!(widths, [8, 16]);
    assert_eq!(g.kernel_builds(k).unwrap(), 1);
    // Moving vertices does not touch the tables: no rebuild.
    g.set_vertices(3, &[[3.0, 1.0, 0.5]], None).unwrap();
    g.launch(k).unwrap();
    assert_eq!(g.kernel_builds(k).unwrap(), 1);

    g.set_elements(MeshKind::Triangles, 0, &second, None)
        .unwrap();
    g.launch(k).unwrap();
    let info = g
        .link_info(MeshKind::Vertices, MeshKind::Triangles)
        .unwrap();
    let widths: Vec<usize> = info.tables.iter().map(|t| t.width).collect();
    assert_eq!(widths, [8, 16], "same widths, other rows");
    assert_eq!(info.tables[1].rows, 2);
    assert_eq!(g.read_all(sum).unwrap(), reference(&second));
    assert_eq!(g.kernel_builds(k).unwrap(), 2);
}

// ----- two instances ---------------------------------------------------------------------------

fn barycentre_kernel(
    g: &mut Gml,
    name: &str,
) -> (snowsim::gml::KernelId, snowsim::gml::Solution<[f32; 4]>) {
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let bar = g
        .new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")
        .unwrap();
    let k = g
        .compile(
            KernelSpec::new(name, MeshKind::Triangles)
                .access(Access::read(vertices))
                .access(Access::write(bar))
                .body("TriBar = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;"),
        )
        .unwrap();
    (k, bar)
}

fn check_barycentres(mesh: &Mesh, got: &[[f32; 4]]) {
    let tris = mesh.elements(ElementKind::Triangles);
    assert_eq!(got.len(), tris.len());
    for (t, (n, _)) in tris.iter().enumerate() {
        let c = centre(mesh, n);
        for k in 0..3 {
            assert!(
                (f64::from(got[t][k]) - c[k]).abs() < 1e-5,
                "triangle {t}: {:?} vs {c:?}",
                got[t]
            );
        }
    }
}

#[test]
fn two_instances_on_one_device_stay_apart() {
    let cube = sample("cube.meshb");
    let sphere = sample("sphere_surface.meshb");
    let mut a = gml_with(&cube);
    let mut b = gml_with(&sphere);
    // A third instance sharing a's context.
    let mut c = Gml::with_context(a.context().clone());
    c.import_mesh(&sphere).unwrap();
    let (ka, bar_a) = barycentre_kernel(&mut a, "bar_a");
    let (kb, bar_b) = barycentre_kernel(&mut b, "bar_b");
    let (kc, bar_c) = barycentre_kernel(&mut c, "bar_c");
    let mut ta = cl::Timeline::new(false);
    let mut tb = cl::Timeline::new(false);
    for _ in 0..3 {
        a.enqueue(ka, &mut ta).unwrap();
        b.launch(kb).unwrap();
        b.enqueue(kb, &mut tb).unwrap();
        c.launch(kc).unwrap();
        a.launch(ka).unwrap();
    }
    ta.wait().unwrap();
    tb.wait().unwrap();
    check_barycentres(&cube, &a.read_all(bar_a).unwrap());
    check_barycentres(&sphere, &b.read_all(bar_b).unwrap());
    check_barycentres(&sphere, &c.read_all(bar_c).unwrap());

    // Handles of one instance are refused by the others, even where indices coincide.
    assert!(matches!(b.read_all(bar_a), Err(GmlError::UnknownData(_))));
    assert!(matches!(c.read_all(bar_a), Err(GmlError::UnknownData(_))));
    assert!(matches!(a.launch(kb), Err(GmlError::UnknownKernel(_))));
    assert!(matches!(
        a.enqueue(kc, &mut ta),
        Err(GmlError::UnknownKernel(_))
    ));
    assert!(matches!(
        b.field_buffer(bar_a),
        Err(GmlError::UnknownData(_))
    ));
    let foreign_vertices = a.mesh(MeshKind::Vertices).unwrap();
    assert!(matches!(
        b.compile(
            KernelSpec::new("foreign", MeshKind::Vertices)
                .access(Access::read_write(foreign_vertices))
                .body("VerCrd.x += 1.0f;"),
        ),
        Err(GmlError::UnknownData(_))
    ));
    let link_a = a.set_neighbours(MeshKind::Tetrahedra).unwrap();
    assert!(matches!(
        b.link_line(link_a, 0),
        Err(GmlError::UnknownData(_))
    ));
    assert!(matches!(b.free(bar_a), Err(GmlError::UnknownData(_))));
    // Replacing b's mesh leaves a's data alone.
    b.import_mesh(&cube).unwrap();
    assert!(a.is_current(bar_a));
    check_barycentres(&cube, &a.read_all(bar_a).unwrap());
}

#[test]
fn two_instances_on_two_devices() {
    // This binary needs a device: none listed is a failure, not a skip.
    let devices = cl::list_devices().expect("an OpenCL device (PoCL in CI)");
    if devices.len() < 2 {
        skip(
            Capability::TwoDevices,
            format!(
                "this machine has {} OpenCL device(s): {}",
                devices.len(),
                devices
                    .iter()
                    .map(|d| d.info.label())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        );
        return;
    }
    let cube = sample("cube.meshb");
    let sphere = sample("sphere_surface.meshb");
    let mut a = Gml::new(&DeviceSelector::Index(0)).unwrap();
    let mut b = Gml::new(&DeviceSelector::Index(1)).unwrap();
    a.import_mesh(&cube).unwrap();
    b.import_mesh(&sphere).unwrap();
    let (ka, bar_a) = barycentre_kernel(&mut a, "bar_a");
    let (kb, bar_b) = barycentre_kernel(&mut b, "bar_b");
    for _ in 0..2 {
        a.launch(ka).unwrap();
        b.launch(kb).unwrap();
    }
    check_barycentres(&cube, &a.read_all(bar_a).unwrap());
    check_barycentres(&sphere, &b.read_all(bar_b).unwrap());
    assert!(matches!(b.read_all(bar_a), Err(GmlError::UnknownData(_))));
    assert!(matches!(a.launch(kb), Err(GmlError::UnknownKernel(_))));
}

/// Generated kernels index with 32-bit ints: tables they could not address are refused when
/// they are declared, naming the count, before anything is allocated.
#[test]
fn tables_beyond_32_bit_indices_are_refused_with_their_count() {
    let mut g = gml();
    let err = g
        .new_mesh(MeshKind::Vertices, i32::MAX as usize + 1)
        .unwrap_err();
    assert!(
        matches!(
            err,
            GmlError::IndexRange {
                entries: 2147483648,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("2147483648"), "{err}");
    g.new_mesh(MeshKind::Vertices, 1 << 22).unwrap();
    // 2^22 lines × 513 values = 2 151 677 952 entries.
    let err = g
        .new_solution::<f32>(MeshKind::Vertices, 513, "Wide")
        .unwrap_err();
    assert!(
        matches!(
            err,
            GmlError::IndexRange {
                entries: 2151677952,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("solution `Wide`"), "{err}");
    let err = g
        .new_link(MeshKind::Vertices, MeshKind::Vertices, 513, "Many")
        .unwrap_err();
    assert!(matches!(err, GmlError::IndexRange { .. }), "{err}");
    // A narrower field of the same mesh is fine.
    assert!(
        g.new_solution::<f32>(MeshKind::Vertices, 4, "Narrow")
            .is_ok()
    );
}

/// The numbering score of a loaded instance equals the file's, and follows the mesh as it
/// changes (issue 15, item 5).
#[test]
fn the_numbering_score_of_an_instance_follows_its_mesh() {
    use snowsim::renumber;
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let file = renumber::numbering_score(&mesh);
    let loaded = g.numbering_score().unwrap();
    assert_eq!(loaded, file);
    assert!(loaded.percent().unwrap() > 0.0);

    let edges = g.extract_edges().unwrap();
    let after = g.numbering_score().unwrap();
    let edge_score = after
        .kinds
        .iter()
        .find(|k| k.kind == ElementKind::Edges)
        .expect("the extracted edges are scored");
    assert_eq!(
        edge_score.reads,
        2 * edges as u64,
        "two vertex reads per edge"
    );
    // The other kinds are unchanged.
    for k in &file.kinds {
        assert!(after.kinds.contains(k), "{k:?}");
    }
}
