//! gml's automatic links built on several threads: vertex balls, shells, downlinks and
//! degree classes checked against a plain CPU reference written here, the same tables
//! whatever the size of the rayon pool, and the tables a kernel reads on the device.

use snowsim::gml::topology::{self, BallTables, DegreeClass, Incidence, SubEntityIndex};
use snowsim::gml::{Access, GmlError, KernelSpec, MeshKind};
use snowsim::meshio::{ElementKind, Mesh, generate::tet_grid};

use crate::common::{gml, sample};

/// One row of a reference ball: (element, local index), in increasing element order.
type Row = Vec<(i32, u8)>;

/// The ball of each vertex by the definition: every element, in order, adds itself to the row
/// of each of its nodes.
fn reference_ball(vertices: usize, n: usize, nodes: &[i32]) -> Vec<Row> {
    let mut rows = vec![Vec::new(); vertices];
    for (e, element) in nodes.chunks(n).enumerate() {
        for (l, &v) in element.iter().enumerate() {
            rows[v as usize].push((e as i32, l as u8));
        }
    }
    rows
}

/// The reference tables: an entity of degree `d` goes to the first table of width
/// `base · 2^c ≥ d`; entries are column-major, padding 0.
fn reference_classes(rows: &[Row], base: usize) -> Vec<DegreeClass> {
    let base = base.next_power_of_two();
    let class_of = |d: usize| {
        let mut width = base;
        let mut c = 0;
        while width < d {
            width *= 2;
            c += 1;
        }
        c
    };
    let classes = rows
        .iter()
        .map(|r| class_of(r.len()) + 1)
        .max()
        .unwrap_or(0);
    let mut out = Vec::new();
    for c in 0..classes {
        let width = base << c;
        let members: Vec<i32> = (0..rows.len())
            .filter(|&i| class_of(rows[i].len()) == c)
            .map(|i| i as i32)
            .collect();
        if members.is_empty() {
            continue;
        }
        let n = members.len();
        let mut ball = vec![0i32; width * n];
        let mut locals = vec![0i8; width * n];
        for (r, &i) in members.iter().enumerate() {
            for (k, &(e, l)) in rows[i as usize].iter().enumerate() {
                ball[k * n + r] = e;
                locals[k * n + r] = l as i8;
            }
        }
        out.push(DegreeClass {
            width,
            rows: members,
            ball,
            locals,
        });
    }
    out
}

fn rows_of(incidence: &Incidence) -> Vec<Row> {
    (0..incidence.rows())
        .map(|i| {
            let span = incidence.offsets[i]..incidence.offsets[i + 1];
            span.map(|j| (incidence.elements[j], incidence.locals[j]))
                .collect()
        })
        .collect()
}

/// Runs `f` on a rayon pool of `threads` threads.
fn on_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a rayon pool")
        .install(f)
}

fn nodes_of(mesh: &Mesh, kind: ElementKind) -> Vec<i32> {
    mesh.elements(kind)
        .node_slice()
        .iter()
        .map(|&v| v as i32)
        .collect()
}

/// A fan of `count` triangles around vertex 0 (degree `count`), plus a strip elsewhere.
fn fan(count: usize) -> Mesh {
    let mut mesh = Mesh::new(3);
    mesh.push_vertex([0.0; 3], 0);
    for i in 0..=count {
        let a = i as f64 / count as f64 * std::f64::consts::TAU;
        mesh.push_vertex([a.cos(), a.sin(), 0.0], 0);
    }
    let tris = mesh.elements_mut(ElementKind::Triangles);
    for i in 0..count as u32 {
        tris.push(&[0, i + 1, i + 2], 1);
    }
    for i in 1..count as u32 / 2 {
        tris.push(&[i, i + 2, i + 1], 2);
    }
    mesh
}

/// Every mesh of the tests, with the element kinds to build balls for.
fn meshes() -> Vec<(String, Mesh)> {
    let mut out: Vec<(String, Mesh)> = [
        "cube.meshb",
        "hexahedra.meshb",
        "sphere_surface.meshb",
        "square_2d.meshb",
        "cube_gmsh.mesh",
        "hex_cube_gmsh.mesh",
    ]
    .iter()
    .map(|name| (name.to_string(), sample(name)))
    .collect();
    out.push(("tet_grid 7×5×3".into(), tet_grid([7, 5, 3])));
    out.push(("tet_grid 1×1×1".into(), tet_grid([1, 1, 1])));
    // More vertices than one block of rows (4096), so blocks meet inside the tables.
    out.push(("tet_grid 20³".into(), tet_grid([20, 20, 20])));
    out.push(("fan of 3000".into(), fan(3000)));
    out
}

#[test]
fn vertex_balls_and_degree_classes_match_the_reference_on_any_pool() {
    for (name, mesh) in meshes() {
        for kind in ElementKind::ALL {
            if mesh.count(kind) == 0 {
                continue;
            }
            let gml_kind = MeshKind::from_element(kind);
            let nodes = nodes_of(&mesh, kind);
            let nv = mesh.vertices.len();
            let expected = reference_ball(nv, kind.nodes(), &nodes);
            let base = topology::base_width(MeshKind::Vertices, gml_kind);
            let expected_classes = reference_classes(&expected, base);
            let expected_tables = BallTables {
                degrees: expected.iter().map(|r| r.len() as i32).collect(),
                max_degree: expected.iter().map(Vec::len).max().unwrap_or(0),
                classes: expected_classes.clone(),
            };
            let n = kind.nodes();
            let build = || {
                let ball = topology::vertex_ball(nv, gml_kind, &nodes);
                let classes = topology::degree_classes(&ball, base);
                let tables = topology::vertex_ball_tables(nv, &nodes, n, n, base);
                (ball, classes, tables)
            };
            let sequential = on_threads(1, build);
            assert_eq!(rows_of(&sequential.0), expected, "{name}, {kind:?}");
            assert_eq!(sequential.1, expected_classes, "{name}, {kind:?}");
            assert_eq!(sequential.2, expected_tables, "{name}, {kind:?}");
            assert_eq!(sequential.0.max_degree(), expected_tables.max_degree);
            for threads in [2, 3, 8] {
                let parallel = on_threads(threads, build);
                assert_eq!(parallel, sequential, "{name}, {kind:?}, {threads} threads");
            }
        }
    }
}

#[test]
fn padded_lines_give_the_ball_of_the_plain_nodes() {
    // gml stores triangles as int4 (the 4th int repeats the first node) and prisms as int8.
    let mesh = sample("sphere_surface.meshb");
    let nodes = nodes_of(&mesh, ElementKind::Triangles);
    let padded: Vec<i32> = nodes
        .chunks(3)
        .flat_map(|t| [t[0], t[1], t[2], t[0]])
        .collect();
    let nv = mesh.vertices.len();
    for threads in [1, 2, 5] {
        let (plain, lines, plain_tables, line_tables) = on_threads(threads, || {
            (
                topology::vertex_ball(nv, MeshKind::Triangles, &nodes),
                topology::vertex_ball_of_lines(nv, &padded, 4, 3),
                topology::vertex_ball_tables(nv, &nodes, 3, 3, 8),
                topology::vertex_ball_tables(nv, &padded, 4, 3, 8),
            )
        });
        assert_eq!(lines, plain, "{threads} threads");
        assert_eq!(line_tables, plain_tables, "{threads} threads");
    }
}

#[test]
fn an_element_using_a_vertex_twice_lists_it_twice_in_local_order() {
    let nodes = [0, 1, 0, 2, 1, 1, 2, 3];
    let expected = reference_ball(4, 4, &nodes);
    assert_eq!(expected[1], vec![(0, 1), (1, 0), (1, 1)]);
    for threads in [1, 2, 4] {
        let (ball, tables) = on_threads(threads, || {
            (
                topology::vertex_ball(4, MeshKind::Quadrilaterals, &nodes),
                topology::vertex_ball_tables(4, &nodes, 4, 4, 2),
            )
        });
        assert_eq!(rows_of(&ball), expected, "{threads} threads");
        assert_eq!(tables.classes, reference_classes(&expected, 2));
    }
}

#[test]
fn shells_match_the_reference() {
    let mesh = tet_grid([4, 3, 2]);
    let tets = nodes_of(&mesh, ElementKind::Tetrahedra);
    let nv = mesh.vertices.len();
    for sub in [MeshKind::Edges, MeshKind::Triangles] {
        let (subs, _) = topology::extract(sub, (&[], &[]), &[(MeshKind::Tetrahedra, &tets)]);
        let width = sub.nodes();
        let count = subs.len() / width;
        let index = SubEntityIndex::new(nv, sub, &subs);
        let shell = topology::shell(count, MeshKind::Tetrahedra, &tets, sub, &index);
        let mut expected: Vec<Row> = vec![Vec::new(); count];
        for (e, tet) in tets.chunks(4).enumerate() {
            for (l, local) in MeshKind::Tetrahedra.sub_entities(sub).iter().enumerate() {
                let mut key: Vec<i32> = local.iter().map(|&j| tet[j]).collect();
                key.sort_unstable();
                let s = subs
                    .chunks(width)
                    .position(|t| {
                        let mut t = t.to_vec();
                        t.sort_unstable();
                        t == key
                    })
                    .expect("every sub-entity extracted");
                expected[s].push((e as i32, l as u8));
            }
        }
        assert_eq!(rows_of(&shell), expected, "{sub}");

        // The downlink is the transpose: element e's local l is the sub-entity whose shell
        // lists (e, l).
        let mut down = vec![-1i32; tets.len() / 4 * MeshKind::Tetrahedra.sub_entities(sub).len()];
        let w = MeshKind::Tetrahedra.sub_entities(sub).len();
        for (s, row) in expected.iter().enumerate() {
            for &(e, l) in row {
                down[e as usize * w + l as usize] = s as i32;
            }
        }
        for threads in [1, 2, 5] {
            let got = on_threads(threads, || {
                topology::downlink(MeshKind::Tetrahedra, &tets, sub, &index)
            });
            assert_eq!(got, Ok(down.clone()), "{sub}, {threads} threads");
        }

        // Without the last sub-entities, the first element using one of them is the error.
        let kept = count - 7;
        let partial = SubEntityIndex::new(nv, sub, &subs[..kept * width]);
        let first_missing = down
            .iter()
            .position(|&s| s as usize >= kept)
            .expect("a missing sub-entity");
        let (e, l) = (first_missing / w, first_missing % w);
        let local_nodes: Vec<i32> = MeshKind::Tetrahedra.sub_entities(sub)[l]
            .iter()
            .map(|&j| tets[e * 4 + j])
            .collect();
        for threads in [1, 2, 5] {
            let got = on_threads(threads, || {
                topology::downlink(MeshKind::Tetrahedra, &tets, sub, &partial)
            });
            assert_eq!(
                got,
                Err((e, local_nodes.clone())),
                "{sub}, {threads} threads"
            );
        }
    }
}

/// An order-sensitive signature of a row: what the kernel below computes from the device's
/// tables.
fn signature(row: &Row) -> (i32, i32) {
    let mut s = 0u32;
    for &(e, l) in row {
        s = s
            .wrapping_mul(31)
            .wrapping_add((e as u32).wrapping_mul(8))
            .wrapping_add(u32::from(l));
    }
    (row.len() as i32, s as i32)
}

#[test]
fn kernels_read_the_reference_ball_on_the_device() {
    let cases = [
        (
            "cube.meshb".to_string(),
            sample("cube.meshb"),
            ElementKind::Tetrahedra,
        ),
        (
            "tet_grid".into(),
            tet_grid([6, 4, 5]),
            ElementKind::Tetrahedra,
        ),
        ("fan".into(), fan(700), ElementKind::Triangles),
        (
            "hexahedra".into(),
            sample("hexahedra.meshb"),
            ElementKind::Hexahedra,
        ),
    ];
    for (name, mesh, kind) in cases {
        let gml_kind = MeshKind::from_element(kind);
        let nodes = nodes_of(&mesh, kind);
        let nv = mesh.vertices.len();
        let expected = reference_ball(nv, kind.nodes(), &nodes);
        let base = topology::base_width(MeshKind::Vertices, gml_kind);
        let classes = reference_classes(&expected, base);

        let mut g = gml();
        g.import_mesh(&mesh).unwrap();
        let info = g.link_info(MeshKind::Vertices, gml_kind).unwrap();
        let tables: Vec<(usize, usize)> = info.tables.iter().map(|t| (t.width, t.rows)).collect();
        let expected_tables: Vec<(usize, usize)> =
            classes.iter().map(|c| (c.width, c.rows.len())).collect();
        assert_eq!(tables, expected_tables, "{name}");
        assert_eq!(
            info.max_degree,
            expected.iter().map(Vec::len).max().unwrap_or(0)
        );

        let elements = g.mesh(gml_kind).unwrap();
        let degree = g
            .new_solution::<i32>(MeshKind::Vertices, 1, "Degree")
            .unwrap();
        let sig = g.new_solution::<i32>(MeshKind::Vertices, 1, "Sig").unwrap();
        let ball = format!("Ver{}", gml_kind.short());
        let body = format!(
            "uint s = 0;\n\
             for (int k = 0; k < {ball}Deg; k++) s = s * 31u + (uint){ball}[k] * 8u + (uint){ball}Voy[k];\n\
             VerDegree = {ball}Deg;\n\
             VerSig = (int)s;"
        );
        let k = g
            .compile(
                KernelSpec::new("ball_signature", MeshKind::Vertices)
                    .access(Access::read(elements).with_voyeurs())
                    .access(Access::write(degree))
                    .access(Access::write(sig))
                    .body(&body),
            )
            .unwrap();
        g.launch(k).unwrap();
        let degrees = g.read_all(degree).unwrap();
        let sigs = g.read_all(sig).unwrap();
        for (v, row) in expected.iter().enumerate() {
            assert_eq!((degrees[v], sigs[v]), signature(row), "{name}: vertex {v}");
        }
    }
}

#[test]
fn import_reports_the_first_node_out_of_range() {
    let mut mesh = tet_grid([2, 2, 2]);
    let nv = mesh.vertices.len() as u32;
    let tets = mesh.elements_mut(ElementKind::Tetrahedra);
    let count = tets.len();
    tets.push(&[0, 1, nv + 5, nv], 1);
    tets.push(&[nv + 9, 1, 2, 3], 1);
    let mut g = gml();
    match g.import_mesh(&mesh) {
        Err(GmlError::NodeOutOfRange {
            kind,
            element,
            index,
            vertices,
        }) => {
            assert_eq!(kind, MeshKind::Tetrahedra);
            assert_eq!(element, count);
            assert_eq!(index, i64::from(nv + 5));
            assert_eq!(vertices, nv as usize);
        }
        other => panic!("expected NodeOutOfRange, got {other:?}"),
    }
}

#[test]
fn imported_elements_and_vertices_read_back_unchanged() {
    let mesh = sample("cube_gmsh.mesh");
    for threads in [1, 3] {
        let mut g = gml();
        on_threads(threads, || g.import_mesh(&mesh)).unwrap();
        for kind in ElementKind::ALL {
            let elements = mesh.elements(kind);
            if elements.is_empty() {
                continue;
            }
            let (nodes, refs) = g.elements(MeshKind::from_element(kind)).unwrap();
            assert_eq!(nodes, elements.node_slice(), "{kind:?}");
            assert_eq!(refs, elements.refs(), "{kind:?}");
        }
        let (xyz, refs) = g.vertices().unwrap();
        assert_eq!(refs, mesh.vertex_refs);
        for (got, p) in xyz.iter().zip(&mesh.vertices) {
            assert_eq!(*got, [p[0] as f32, p[1] as f32, p[2] as f32]);
        }
    }
}
