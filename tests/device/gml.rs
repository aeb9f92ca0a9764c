//! gml on a real OpenCL device (PoCL in CI): every access pattern checked against a CPU
//! reference written independently here.

use glam::Vec4;
use snowsim::gml::{Access, GmlError, KernelSpec, MeshKind, Reduction};
use snowsim::meshio;

use crate::common::{gml, sample};

fn f32x3(p: [f64; 3]) -> [f32; 3] {
    [p[0] as f32, p[1] as f32, p[2] as f32]
}

fn close(a: f32, b: f32, tolerance: f32) -> bool {
    (a - b).abs() <= tolerance * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn triangle_barycentres_through_the_element_table() {
    let mesh = sample("sphere_surface.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let bar = g
        .new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")
        .unwrap();
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let k = g
        .compile(
            KernelSpec::new("barycentre", MeshKind::Triangles)
                .access(Access::read(vertices))
                .access(Access::write(bar))
                .body("TriBar = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let got = g.read_all(bar).unwrap();
    let tris = mesh.elements(meshio::ElementKind::Triangles);
    assert_eq!(got.len(), tris.len());
    for (i, (nodes, _)) in tris.iter().enumerate() {
        for c in 0..3 {
            let expected: f32 = nodes
                .iter()
                .map(|&v| mesh.vertices[v as usize][c] as f32)
                .sum::<f32>()
                / 3.0;
            assert!(
                close(got[i][c], expected, 1e-5),
                "triangle {i}: {:?} vs {expected}",
                got[i]
            );
        }
        assert_eq!(got[i][3], 0.0);
    }
    assert_eq!(g.counters().stages[0].launches, 1);
}

#[test]
fn vertex_displacement_reads_and_writes_its_own_data() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let n = mesh.vertices.len();
    let speed = g
        .new_solution::<f32>(MeshKind::Vertices, 1, "Speed")
        .unwrap();
    let direction = g
        .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Direction")
        .unwrap();
    let speeds: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.25).collect();
    let directions: Vec<[f32; 4]> = (0..n).map(|i| [1.0, -((i % 3) as f32), 0.5, 0.0]).collect();
    g.set_block(speed, 0, &speeds).unwrap();
    g.set_block(direction, 0, &directions).unwrap();
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let k = g
        .compile(
            KernelSpec::new("displace", MeshKind::Vertices)
                .access(Access::read_write(vertices))
                .access(Access::read(speed))
                .access(Access::read(direction))
                .body("VerCrd = VerCrd + VerSpeed * VerDirection;"),
        )
        .unwrap();
    for _ in 0..3 {
        g.launch(k).unwrap();
    }
    let (coords, _) = g.vertices().unwrap();
    for i in 0..n {
        let mut p = f32x3(mesh.vertices[i]);
        for _ in 0..3 {
            for c in 0..3 {
                p[c] += speeds[i] * directions[i][c];
            }
        }
        for c in 0..3 {
            assert!(
                close(coords[i][c], p[c], 1e-5),
                "vertex {i}: {:?} vs {p:?}",
                coords[i]
            );
        }
    }
    assert!(g.kernel_time(k).unwrap() > std::time::Duration::ZERO);
}

#[test]
fn closest_neighbour_centre_through_the_neighbour_link() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let tets = mesh.elements(meshio::ElementKind::Tetrahedra);
    let centres: Vec<[f32; 4]> = tets
        .iter()
        .map(|(nodes, _)| {
            let mut c = [0.0f32; 4];
            for &v in nodes {
                for (k, x) in mesh.vertices[v as usize].iter().enumerate() {
                    c[k] += *x as f32 / 4.0;
                }
            }
            c
        })
        .collect();
    let centre = g
        .new_solution::<[f32; 4]>(MeshKind::Tetrahedra, 1, "Centre")
        .unwrap();
    g.set_block(centre, 0, &centres).unwrap();
    let closest = g
        .new_solution::<f32>(MeshKind::Tetrahedra, 1, "Closest")
        .unwrap();
    let count = g
        .new_solution::<i32>(MeshKind::Tetrahedra, 1, "Count")
        .unwrap();
    let ngb = g.set_neighbours(MeshKind::Tetrahedra).unwrap();
    let k = g
        .compile(
            KernelSpec::new("closest", MeshKind::Tetrahedra)
                .access(Access::read(centre).via(ngb))
                .access(Access::write(closest))
                .access(Access::write(count))
                .body(
                    "float best = INFINITY;\n\
                     for (int i = 0; i < 4; i++)\n\
                         if (TetNgb[i] >= 0) best = fmin(best, distance(TetCentre[0], TetCentre[i + 1]));\n\
                     TetClosest = best;\n\
                     TetCount = TetDeg;",
                ),
        )
        .unwrap();
    g.launch(k).unwrap();
    let got = g.read_all(closest).unwrap();
    let degrees = g.read_all(count).unwrap();
    // CPU: neighbours by brute force over shared faces.
    let mut by_face = std::collections::HashMap::<[u32; 3], Vec<usize>>::new();
    for (t, (nodes, _)) in tets.iter().enumerate() {
        for skip in 0..4 {
            let mut f: Vec<u32> = (0..4).filter(|&j| j != skip).map(|j| nodes[j]).collect();
            f.sort();
            by_face.entry([f[0], f[1], f[2]]).or_default().push(t);
        }
    }
    let mut expected = vec![f32::INFINITY; tets.len()];
    let mut expected_degree = vec![0; tets.len()];
    for shared in by_face.values().filter(|s| s.len() == 2) {
        let (a, b) = (shared[0], shared[1]);
        let centre = |t: usize| Vec4::from(centres[t]).truncate();
        let d = centre(a).distance(centre(b));
        expected[a] = expected[a].min(d);
        expected[b] = expected[b].min(d);
        expected_degree[a] += 1;
        expected_degree[b] += 1;
    }
    for t in 0..tets.len() {
        assert!(
            close(got[t], expected[t], 1e-5),
            "tet {t}: {} vs {}",
            got[t],
            expected[t]
        );
        assert_eq!(degrees[t], expected_degree[t], "tet {t}");
    }
}

/// A fan of `n` triangles around vertex 0 plus the sphere: vertex degrees from 3 to `n`, so the
/// vertex → triangle uplink needs several degree classes.
fn fan_mesh(n: usize) -> meshio::Mesh {
    let mut mesh = meshio::Mesh::new(3);
    mesh.push_vertex([0.0, 0.0, 0.0], 0);
    for i in 0..n {
        let a = i as f64 / n as f64 * std::f64::consts::TAU;
        mesh.push_vertex([a.cos(), a.sin(), 0.1 * (i % 3) as f64], 0);
    }
    for i in 0..n {
        let (a, b) = (1 + i as u32, 1 + ((i + 1) % n) as u32);
        mesh.elements_mut(meshio::ElementKind::Triangles)
            .push(&[0, a, b], 1);
    }
    mesh
}

#[test]
fn vertex_relaxation_through_uplinks_of_any_degree() {
    for mesh in [fan_mesh(100), sample("sphere_surface.meshb")] {
        let mut g = gml();
        g.import_mesh(&mesh).unwrap();
        let info = g
            .link_info(MeshKind::Vertices, MeshKind::Triangles)
            .unwrap();
        let tris = mesh.elements(meshio::ElementKind::Triangles);
        let mut balls = vec![Vec::new(); mesh.vertices.len()];
        for (t, (nodes, _)) in tris.iter().enumerate() {
            for &v in nodes {
                balls[v as usize].push(t);
            }
        }
        let max_degree = balls.iter().map(Vec::len).max().unwrap();
        assert_eq!(info.max_degree, max_degree);
        assert!(info.tables.iter().all(|t| t.width.is_power_of_two()));
        assert_eq!(
            info.tables.iter().map(|t| t.rows).sum::<usize>(),
            mesh.vertices.len()
        );
        assert!(info.tables.last().unwrap().width >= max_degree);

        let bar = g
            .new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")
            .unwrap();
        let vertices = g.mesh(MeshKind::Vertices).unwrap();
        let scatter = g
            .compile(
                KernelSpec::new("scatter", MeshKind::Triangles)
                    .access(Access::read(vertices))
                    .access(Access::write(bar))
                    .body("TriBar = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;"),
            )
            .unwrap();
        let relaxed = g
            .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Relaxed")
            .unwrap();
        let gather = g
            .compile(
                KernelSpec::new("gather", MeshKind::Vertices)
                    .access(Access::read(vertices))
                    .access(Access::read(bar))
                    .access(Access::write(relaxed))
                    .body(
                        "float4 sum = 0.0f;\n\
                         for (int i = 0; i < VerTriDegMax; i++) sum += VerTriBar[i];\n\
                         VerRelaxed = VerTriDeg > 0 ? 0.8f * VerCrd + 0.2f * sum / VerTriDeg : VerCrd;",
                    ),
            )
            .unwrap();
        assert_eq!(g.kernel_sources(gather).unwrap().len(), info.tables.len());
        g.launch(scatter).unwrap();
        g.launch(gather).unwrap();
        let got = g.read_all(relaxed).unwrap();
        for (v, ball) in balls.iter().enumerate() {
            #[allow(clippy::needless_range_loop)] // c indexes both the CPU and device vectors
            for c in 0..3 {
                let own = mesh.vertices[v][c] as f32;
                let expected = if ball.is_empty() {
                    own
                } else {
                    let mean = ball
                        .iter()
                        .map(|&t| {
                            tris.nodes(t)
                                .iter()
                                .map(|&x| mesh.vertices[x as usize][c] as f32)
                                .sum::<f32>()
                                / 3.0
                        })
                        .sum::<f32>()
                        / ball.len() as f32;
                    0.8 * own + 0.2 * mean
                };
                assert!(
                    close(got[v][c], expected, 1e-4),
                    "vertex {v} (degree {}): {} vs {expected}",
                    ball.len(),
                    got[v][c]
                );
            }
        }
    }
}

#[test]
fn voyeurs_give_the_vertex_position_inside_each_ball_element() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let tets = g.mesh(MeshKind::Tetrahedra).unwrap();
    let wrong = g
        .new_solution::<i32>(MeshKind::Vertices, 1, "Wrong")
        .unwrap();
    let k = g
        .compile(
            KernelSpec::new("voyeurs", MeshKind::Vertices)
                .access(Access::read(vertices))
                .access(Access::read(tets).with_voyeurs())
                .access(Access::write(wrong))
                .body(
                    "int bad = 0;\n\
                     for (int i = 0; i < VerTetDeg; i++) {\n\
                         int4 t = VerTetVer[i];\n\
                         int nodes[4] = {t.s0, t.s1, t.s2, t.s3};\n\
                         bad += nodes[VerTetVoy[i]] != VerIdx;\n\
                     }\n\
                     VerWrong = bad;",
                ),
        )
        .unwrap();
    g.launch(k).unwrap();
    assert!(g.read_all(wrong).unwrap().iter().all(|&w| w == 0));
}

#[test]
fn reductions_match_the_cpu() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let n = mesh.vertices.len(); // 2300: not a multiple of any work-group size
    let values: Vec<f32> = (0..n)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 8.0)
        .collect();
    let field = g
        .new_solution::<f32>(MeshKind::Vertices, 1, "Value")
        .unwrap();
    g.set_block(field, 0, &values).unwrap();
    let cpu = |op: Reduction| -> f64 {
        let v = values.iter().map(|&x| f64::from(x));
        match op {
            Reduction::Min => v.fold(f64::INFINITY, f64::min),
            Reduction::Max => v.fold(f64::NEG_INFINITY, f64::max),
            Reduction::Sum => v.sum(),
            Reduction::L0 => v.filter(|&x| x != 0.0).count() as f64,
            Reduction::L1 => v.map(f64::abs).sum(),
            Reduction::L2 => v.map(|x| x * x).sum::<f64>().sqrt(),
            Reduction::Linf => v.map(f64::abs).fold(0.0, f64::max),
        }
    };
    for op in Reduction::ALL {
        let got = g.reduce(field, op).unwrap();
        let expected = cpu(op);
        assert!(
            (got - expected).abs() <= 1e-5 * (1.0 + expected.abs()),
            "{op:?}: {got} vs {expected}"
        );
    }
    let reductions = g.counters().stages.iter();
    assert_eq!(
        reductions
            .filter(|s| s.stage.starts_with("reduce."))
            .count(),
        Reduction::ALL.len()
    );
    let pairs = g
        .new_solution::<f32>(MeshKind::Vertices, 2, "Pairs")
        .unwrap();
    assert!(matches!(
        g.reduce(pairs, Reduction::Sum),
        Err(GmlError::NotReducible(_))
    ));
}

#[test]
fn misuse_is_a_clear_error() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let tet_value = g
        .new_solution::<f32>(MeshKind::Tetrahedra, 1, "Value")
        .unwrap();
    // Writing vertex data from a tetrahedron loop is an indirect write.
    let err = g
        .compile(
            KernelSpec::new("bad", MeshKind::Tetrahedra)
                .access(Access::write(vertices))
                .body(""),
        )
        .unwrap_err();
    assert!(matches!(err, GmlError::IndirectWrite { .. }), "{err}");
    assert!(err.to_string().contains("scatter"), "{err}");
    // Two uplinks in one kernel.
    let tri_value = g
        .new_solution::<f32>(MeshKind::Triangles, 1, "Value")
        .unwrap();
    let err = g
        .compile(
            KernelSpec::new("bad", MeshKind::Vertices)
                .access(Access::read(tet_value))
                .access(Access::read(tri_value))
                .body(""),
        )
        .unwrap_err();
    assert!(matches!(err, GmlError::TwoUplinks { .. }), "{err}");
    // A compile error points at the user's body, line 2.
    let err = g
        .compile(
            KernelSpec::new("typo", MeshKind::Tetrahedra)
                .access(Access::write(tet_value))
                .body("float x = 1.0f;\nTetValue = x + undefined_name;"),
        )
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("typo:2:"),
        "build log does not point at the body's line 2: {text}"
    );
    // Bad names, wrong lengths, lines out of range, foreign handles.
    assert!(matches!(
        g.new_solution::<f32>(MeshKind::Tetrahedra, 1, "9lives"),
        Err(GmlError::BadName(_))
    ));
    assert!(matches!(
        g.new_solution::<f32>(MeshKind::Tetrahedra, 1, "Value"),
        Err(GmlError::DuplicateName(_))
    ));
    assert!(matches!(
        g.set_line(tet_value, 0, &[1.0, 2.0]),
        Err(GmlError::WrongLength { .. })
    ));
    assert!(matches!(
        g.set_block(tet_value, 10_246, &[1.0]),
        Err(GmlError::LineOutOfRange { .. })
    ));
    assert!(matches!(
        g.set_elements(MeshKind::Tetrahedra, 0, &[0, 1, 2, 99_999], Some(&[1])),
        Err(GmlError::NodeOutOfRange { .. })
    ));
    let mut other = gml();
    other.import_mesh(&mesh).unwrap();
    assert!(matches!(
        other.read_all(tet_value),
        Err(GmlError::UnknownData(_))
    ));
    // No default link between two kinds of the same dimension.
    let err = g.compile(
        KernelSpec::new("bad", MeshKind::Triangles)
            .access(Access::read(g.mesh(MeshKind::Tetrahedra).unwrap()))
            .access(Access::read(tri_value))
            .body(""),
    );
    assert!(
        err.is_ok(),
        "triangles reach tetrahedra through the shell uplink"
    );
}

#[test]
fn parameters_are_size_checked_and_shared_with_kernels() {
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        scale: f32,
        steps: i32,
        flag: i32,
        // OpenCL aligns a float4 to 16 bytes: the Rust mirror spells the padding out.
        _pad: i32,
        offset: [f32; 4],
    }
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let err = g
        .new_parameters::<Params>("typedef struct { float scale; int steps; } GmlParSct;")
        .unwrap_err();
    assert!(
        matches!(
            err,
            GmlError::ParameterLayout {
                device: 8,
                host: 32
            }
        ),
        "{err}"
    );
    let params = g
        .new_parameters::<Params>("typedef struct { float scale; int steps; int flag; int pad; float4 offset; } GmlParSct;")
        .unwrap();
    let value = Params {
        scale: 2.0,
        steps: 3,
        flag: 0,
        _pad: 0,
        offset: [1.0, 2.0, 3.0, 0.0],
    };
    g.upload_parameters(&params, &value).unwrap();
    let out = g
        .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Out")
        .unwrap();
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let k = g
        .compile(
            KernelSpec::new("scaled", MeshKind::Vertices)
                .access(Access::read(vertices))
                .access(Access::write(out))
                .body("VerOut = GmlPar->scale * VerCrd * GmlPar->steps + GmlPar->offset;\nif (VerIdx == 0) GmlPar->flag = -7;"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let got = g.read_all(out).unwrap();
    for (v, p) in mesh.vertices.iter().enumerate() {
        for c in 0..3 {
            let expected = 6.0 * p[c] as f32 + value.offset[c];
            assert!(close(got[v][c], expected, 1e-5), "vertex {v}");
        }
    }
    assert_eq!(g.download_parameters(&params).unwrap().flag, -7);
}

#[test]
fn extracted_edges_and_faces_give_downlinks_and_shells() {
    let mesh = sample("cube.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let tets = mesh.elements(meshio::ElementKind::Tetrahedra);
    let mut edges = std::collections::HashSet::new();
    let mut faces = std::collections::HashSet::new();
    for (t, _) in tets.iter() {
        for i in 0..4 {
            for j in i + 1..4 {
                edges.insert((t[i].min(t[j]), t[i].max(t[j])));
            }
            let mut f: Vec<u32> = (0..4).filter(|&j| j != i).map(|j| t[j]).collect();
            f.sort();
            faces.insert(f);
        }
    }
    assert_eq!(g.extract_edges().unwrap(), edges.len());
    let (triangles, quads) = g.extract_faces().unwrap();
    assert_eq!((triangles, quads), (faces.len(), 0));
    // The boundary triangles come first with their references.
    let (_, refs) = g.elements(MeshKind::Triangles).unwrap();
    assert_eq!(
        &refs[..2468],
        mesh.elements(meshio::ElementKind::Triangles).refs()
    );
    assert!(refs[2468..].iter().all(|&r| r == 0));
    // Tet → triangles downlink: the sum of face ids read through it equals the CPU's.
    let face_id = g.new_solution::<i32>(MeshKind::Triangles, 1, "Id").unwrap();
    g.set_block(face_id, 0, &(0..triangles as i32).collect::<Vec<_>>())
        .unwrap();
    let shells = g
        .new_solution::<i32>(MeshKind::Triangles, 1, "Shell")
        .unwrap();
    let tet_id = g
        .new_solution::<i32>(MeshKind::Tetrahedra, 1, "Id")
        .unwrap();
    g.set_block(tet_id, 0, &(0..tets.len() as i32).collect::<Vec<_>>())
        .unwrap();
    let k = g
        .compile(
            KernelSpec::new("shell", MeshKind::Triangles)
                .access(Access::read(tet_id))
                .access(Access::write(shells))
                .body("TriShell = TriTetDeg * 1000000 + (TriTetDeg > 0 ? TriTetId[0] : -1);"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let got = g.read_all(shells).unwrap();
    let boundary = got.iter().filter(|&&s| s / 1_000_000 == 1).count();
    let interior = got.iter().filter(|&&s| s / 1_000_000 == 2).count();
    assert_eq!(boundary, 2468, "every boundary face has one tetrahedron");
    assert_eq!(boundary + interior, triangles);
    let info = g
        .link_info(MeshKind::Triangles, MeshKind::Tetrahedra)
        .unwrap();
    assert_eq!(
        info.tables,
        [snowsim::gml::LinkTable {
            width: 2,
            rows: triangles
        }]
    );
    let down = g
        .new_solution::<i32>(MeshKind::Tetrahedra, 1, "FaceSum")
        .unwrap();
    let k = g
        .compile(
            KernelSpec::new("faces", MeshKind::Tetrahedra)
                .access(Access::read(face_id))
                .access(Access::write(down))
                .body("TetFaceSum = TetId[0] + TetId[1] + TetId[2] + TetId[3];"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let (all_faces, _) = g.elements(MeshKind::Triangles).unwrap();
    let mut index = std::collections::HashMap::new();
    for (i, f) in all_faces.chunks(3).enumerate() {
        let mut key = f.to_vec();
        key.sort();
        index.insert(key, i as i32);
    }
    let sums = g.read_all(down).unwrap();
    for (t, (nodes, _)) in tets.iter().enumerate() {
        let expected: i32 = (0..4)
            .map(|skip| {
                let mut f: Vec<u32> = (0..4).filter(|&j| j != skip).map(|j| nodes[j]).collect();
                f.sort();
                index[&f]
            })
            .sum();
        assert_eq!(sums[t], expected, "tet {t}");
    }
}

#[test]
fn toolkit_numbering_matches_the_links() {
    let mut g = gml();
    g.import_mesh(&meshio::generate::tet_grid([1, 1, 1]))
        .unwrap();
    let numbering = g
        .new_solution::<i32>(MeshKind::Tetrahedra, 24, "Numbering")
        .unwrap();
    let k = g
        .compile(
            KernelSpec::new("numbering", MeshKind::Tetrahedra)
                .access(Access::write(numbering))
                .body(
                    "for (int i = 0; i < 12; i++) TetNumbering[i] = GmlTetFac[i / 3][i % 3];\n\
                     for (int i = 0; i < 12; i++) TetNumbering[12 + i] = GmlTetEdg[i / 2][i % 2];",
                ),
        )
        .unwrap();
    g.launch(k).unwrap();
    let got = g.line(numbering, 0).unwrap();
    let flat = |lists: &[&[usize]]| -> Vec<i32> {
        lists
            .iter()
            .flat_map(|l| l.iter().map(|&x| x as i32))
            .collect()
    };
    assert_eq!(
        got[..12],
        flat(MeshKind::Tetrahedra.sub_entities(MeshKind::Triangles))[..]
    );
    assert_eq!(
        got[12..],
        flat(MeshKind::Tetrahedra.sub_entities(MeshKind::Edges))[..]
    );
}

#[test]
fn user_toolkit_functions_are_available_in_every_kernel() {
    let mut g = gml();
    g.import_mesh(&meshio::generate::tet_grid([2, 2, 2]))
        .unwrap();
    g.include_toolkit("float twice(float x) { return 2.0f * x; }");
    let out = g.new_solution::<f32>(MeshKind::Vertices, 1, "Out").unwrap();
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let k = g
        .compile(
            KernelSpec::new("use_toolkit", MeshKind::Vertices)
                .access(Access::read(vertices))
                .access(Access::write(out))
                .body("VerOut = twice(VerCrd.x) + VerIdx;"),
        )
        .unwrap();
    let source = g.kernel_sources(k).unwrap().join("");
    assert!(source.contains("float twice(float x)") && source.contains("VerOut = twice"));
    g.launch(k).unwrap();
    let (coords, _) = g.vertices().unwrap();
    let got = g.read_all(out).unwrap();
    for (i, p) in coords.iter().enumerate() {
        assert_eq!(got[i], 2.0 * p[0] + i as f32);
    }
}
