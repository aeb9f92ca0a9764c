//! The ports of the GMlib examples (`examples/*.rs`), run on a real device (PoCL in CI) and
//! checked against CPU references written independently here, in f64.
//!
//! Each example keeps its computation in a `pub fn run`, included here as a module, so the
//! tests check exactly the kernels the examples run. Tolerances: the device computes in f32,
//! whose relative rounding is 6e-8; the sample meshes have coordinates in [-1, 1], so a few
//! operations on coordinates stay within ~1e-6, and the tolerances below leave a margin of
//! about 10 over what the computation needs while staying far below what a wrong index, sign
//! or formula would give.

use std::collections::{HashMap, HashSet};

use glam::DVec3;
use snowsim::gml::{Access, Gml, GmlError, KernelSpec, MeshKind};
use snowsim::meshio::{self, ElementKind, Mesh};

use crate::common::{gml, sample};

#[allow(dead_code)]
#[path = "../../examples/closest_neighbour.rs"]
mod closest_neighbour;
#[allow(dead_code)]
#[path = "../../examples/conjugate_gradient.rs"]
mod conjugate_gradient;
#[allow(dead_code)]
#[path = "../../examples/gpu_bandwidth.rs"]
mod gpu_bandwidth;
#[allow(dead_code)]
#[path = "../../examples/heat_equation.rs"]
mod heat_equation;
#[allow(dead_code)]
#[path = "../../examples/manual_kernels.rs"]
mod manual_kernels;
#[allow(dead_code)]
#[path = "../../examples/mesh_quality.rs"]
mod mesh_quality;
#[allow(dead_code)]
#[path = "../../examples/node_smoothing.rs"]
mod node_smoothing;
#[allow(dead_code)]
#[path = "../../examples/scatter_gather.rs"]
mod scatter_gather;
#[allow(dead_code)]
#[path = "../../examples/triangle_barycentres.rs"]
mod triangle_barycentres;
#[allow(dead_code)]
#[path = "../../examples/vertex_displacement.rs"]
mod vertex_displacement;
#[allow(dead_code)]
#[path = "../../examples/vertex_relaxation.rs"]
mod vertex_relaxation;

// ----- helpers --------------------------------------------------------------------------------

type P = DVec3;

/// A gml instance on the default device (PoCL in CI) holding `mesh`.
fn gml_with(mesh: &Mesh) -> Gml {
    let mut gml = gml();
    gml.import_mesh(mesh).unwrap();
    gml
}

fn centroid(points: &[P]) -> P {
    points.iter().sum::<P>() * (1.0 / points.len() as f64)
}

fn points(mesh: &Mesh, nodes: &[u32]) -> Vec<P> {
    nodes
        .iter()
        .map(|&v| P::from(mesh.vertices[v as usize]))
        .collect()
}

/// The mesh's vertices as vectors.
fn vertices(mesh: &Mesh) -> Vec<P> {
    mesh.vertices.iter().map(|&p| P::from(p)).collect()
}

fn f64x3(p: [f32; 3]) -> [f64; 3] {
    p.map(f64::from)
}

/// Asserts `|got − expected| ≤ tolerance` componentwise, naming the entity.
fn assert_near(got: &[f64], expected: &[f64], tolerance: f64, what: &str) {
    for (c, (g, e)) in got.iter().zip(expected).enumerate() {
        assert!(
            (g - e).abs() <= tolerance,
            "{what}, component {c}: device {g}, CPU {e} (tolerance {tolerance})"
        );
    }
}

/// Node sets of the faces of an element, keyed by their sorted nodes: the 4 faces of a
/// tetrahedron (each opposite one vertex) or the 3 edges of a triangle.
fn face_keys(nodes: &[u32]) -> Vec<Vec<u32>> {
    (0..nodes.len())
        .map(|skip| {
            let mut f: Vec<u32> = (0..nodes.len())
                .filter(|&j| j != skip)
                .map(|j| nodes[j])
                .collect();
            f.sort_unstable();
            f
        })
        .collect()
}

/// For each element and each face (in `face_keys` order), the element on the other side.
fn neighbours(elements: &meshio::Elements) -> Vec<Vec<Option<usize>>> {
    let mut by_face = HashMap::<Vec<u32>, Vec<usize>>::new();
    for (e, (nodes, _)) in elements.iter().enumerate() {
        for f in face_keys(nodes) {
            by_face.entry(f).or_default().push(e);
        }
    }
    elements
        .iter()
        .enumerate()
        .map(|(e, (nodes, _))| {
            face_keys(nodes)
                .iter()
                .map(|f| by_face[f].iter().copied().find(|&o| o != e))
                .collect()
        })
        .collect()
}

/// Tetrahedron quality `12·(3|V|)^(2/3) / Σ edge²`, negative for an inverted one.
fn tet_quality(p: &[P]) -> f64 {
    let volume = (p[1] - p[0]).cross(p[2] - p[0]).dot(p[3] - p[0]) / 6.0;
    let mut edges = 0.0;
    for i in 0..4 {
        for j in i + 1..4 {
            edges += (p[j] - p[i]).length_squared();
        }
    }
    12.0 * (3.0 * volume.abs()).powf(2.0 / 3.0) / edges * volume.signum()
}

/// Triangle quality `4√3·area / Σ edge²`.
fn tri_quality(p: &[P]) -> f64 {
    let area = (p[1] - p[0]).cross(p[2] - p[0]).length() / 2.0;
    let edges: f64 = (0..3)
        .map(|i| (p[(i + 1) % 3] - p[i]).length_squared())
        .sum();
    4.0 * 3f64.sqrt() * area / edges
}

// ----- the examples ---------------------------------------------------------------------------

#[test]
fn triangle_barycentres_match_the_cpu() {
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    let got = triangle_barycentres::run(&mut gml).unwrap();
    let tris = mesh.elements(ElementKind::Triangles);
    assert_eq!(got.len(), tris.len());
    for (t, (nodes, _)) in tris.iter().enumerate() {
        let expected = centroid(&points(&mesh, nodes));
        let g = got[t].map(f64::from);
        assert_near(
            &g[..3],
            &expected.to_array(),
            1e-6,
            &format!("triangle {t}"),
        );
        assert_eq!(got[t][3], 0.0);
    }
}

#[test]
fn vertex_displacement_after_n_steps_matches_the_cpu() {
    let mesh = sample("cube.meshb");
    let mut gml = gml_with(&mesh);
    let n = mesh.vertices.len();
    // Moves of about 0.01 per step: a step too many or too few is 1e3 times the tolerance.
    let speeds: Vec<f32> = (0..n).map(|i| 0.005 + (i % 5) as f32 * 0.002).collect();
    let directions: Vec<[f32; 4]> = (0..n)
        .map(|i| [1.0, -0.5 * (i % 3) as f32, 0.25 * (i % 4) as f32, 0.0])
        .collect();
    let steps = 20;
    let got = vertex_displacement::run(&mut gml, &speeds, &directions, steps).unwrap();
    for (v, p) in mesh.vertices.iter().enumerate() {
        let d = P::from([0, 1, 2].map(|c| f64::from(directions[v][c])));
        let expected = P::from(*p) + d * (steps as f64 * f64::from(speeds[v]));
        // 20 f32 additions to values below 2: at most 20 × 2.4e-7.
        assert_near(
            &f64x3(got[v]),
            &expected.to_array(),
            1e-5,
            &format!("vertex {v}"),
        );
    }
}

#[test]
fn closest_neighbour_distances_match_the_cpu() {
    for (file, kind, element) in [
        ("cube.meshb", MeshKind::Tetrahedra, ElementKind::Tetrahedra),
        (
            "square_2d.meshb",
            MeshKind::Triangles,
            ElementKind::Triangles,
        ),
    ] {
        // Moved so that a boundary element's centre is the origin: a kernel that took the zeros
        // read across the boundary for a centre (the manual's) would find a distance of 0.
        let mut mesh = sample(file);
        let boundary = neighbours(mesh.elements(element))
            .iter()
            .position(|ngb| ngb.contains(&None))
            .unwrap();
        let origin = centroid(&points(&mesh, mesh.elements(element).nodes(boundary)));
        for p in &mut mesh.vertices {
            *p = (P::from(*p) - origin).to_array();
        }
        let mut gml = gml_with(&mesh);
        let got = closest_neighbour::run(&mut gml, kind).unwrap();
        let elements = mesh.elements(element);
        let centres: Vec<P> = elements
            .iter()
            .map(|(nodes, _)| centroid(&points(&mesh, nodes)))
            .collect();
        let expected: Vec<f64> = neighbours(elements)
            .iter()
            .zip(&centres)
            .map(|(ngb, &c)| {
                ngb.iter()
                    .flatten()
                    .map(|&o| centres[o].distance(c))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        assert_eq!(got.distances.len(), expected.len());
        for (e, (&g, &x)) in got.distances.iter().zip(&expected).enumerate() {
            // Distances of about 0.03 between f32 centres within 1 of the origin: errors near 1e-7.
            assert_near(&[f64::from(g)], &[x], 1e-6, &format!("{file} element {e}"));
        }
        let min = expected.iter().copied().fold(f64::INFINITY, f64::min);
        let max = expected.iter().copied().fold(0.0, f64::max);
        let mean = expected.iter().sum::<f64>() / expected.len() as f64;
        assert_near(
            &[got.min, got.mean, got.max],
            &[min, mean, max],
            1e-6,
            &format!("{file} min/mean/max"),
        );
    }
}

#[test]
fn vertex_relaxation_matches_the_cpu() {
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    let steps = 3;
    let (got, largest_moves) = vertex_relaxation::run(&mut gml, steps).unwrap();
    let tris = mesh.elements(ElementKind::Triangles);
    let mut balls = vec![Vec::new(); mesh.vertices.len()];
    for (t, (nodes, _)) in tris.iter().enumerate() {
        for &v in nodes {
            balls[v as usize].push(t);
        }
    }
    assert_eq!(largest_moves.len(), steps);
    let mut x = vertices(&mesh);
    for (step, &device_largest) in largest_moves.iter().enumerate() {
        let bars: Vec<P> = tris
            .iter()
            .map(|(nodes, _)| centroid(&nodes.iter().map(|&v| x[v as usize]).collect::<Vec<_>>()))
            .collect();
        let mut largest: f64 = 0.0;
        for (v, ball) in balls.iter().enumerate() {
            let mean = centroid(&ball.iter().map(|&t| bars[t]).collect::<Vec<_>>());
            let new = x[v] * 0.8 + mean * 0.2;
            largest = largest.max((new - x[v]).length());
            x[v] = new;
        }
        assert_near(
            &[device_largest],
            &[largest],
            1e-6,
            &format!("largest move of step {step}"),
        );
    }
    for (v, p) in x.iter().enumerate() {
        assert_near(&f64x3(got[v]), &p.to_array(), 1e-6, &format!("vertex {v}"));
    }
}

#[test]
fn scatter_gather_sums_match_the_cpu() {
    // The cube's interior vertices are in no triangle: they gather nothing.
    for file in ["sphere_surface.meshb", "cube.meshb"] {
        let mesh = sample(file);
        let mut gml = gml_with(&mesh);
        let got = scatter_gather::run(&mut gml).unwrap();
        let nv = mesh.vertices.len();
        let (mut area, mut bar_sum, mut degree) = (vec![0.0; nv], vec![P::ZERO; nv], vec![0; nv]);
        let mut total = 0.0;
        for (nodes, _) in mesh.elements(ElementKind::Triangles).iter() {
            let p = points(&mesh, nodes);
            let a = (p[1] - p[0]).cross(p[2] - p[0]).length() / 2.0;
            total += a;
            for &v in nodes {
                let v = v as usize;
                area[v] += a / 3.0;
                bar_sum[v] += centroid(&p);
                degree[v] += 1;
            }
        }
        for v in 0..nv {
            let mean = if degree[v] > 0 {
                bar_sum[v] * (1.0 / f64::from(degree[v]))
            } else {
                P::ZERO
            };
            let g = got.mean_barycentre[v].map(f64::from);
            assert_near(
                &g[..3],
                &mean.to_array(),
                1e-6,
                &format!("{file} vertex {v}"),
            );
            // Shares of about 1e-3, summed from at most a dozen f32 areas.
            assert_near(
                &[f64::from(got.area[v])],
                &[area[v]],
                1e-8,
                &format!("{file} area of vertex {v}"),
            );
        }
        // Totals of a few thousand f32 values: relative error well below 1e-5.
        assert_near(
            &[got.triangle_area, got.vertex_area],
            &[total, total],
            1e-5 * total,
            &format!("{file} total area"),
        );
    }
}

#[test]
fn mesh_quality_statistics_match_the_cpu() {
    for (file, kind) in [
        ("cube.meshb", MeshKind::Tetrahedra),
        ("square_2d.meshb", MeshKind::Triangles),
    ] {
        let mesh = sample(file);
        let mut gml = gml_with(&mesh);
        let got = mesh_quality::run(&mut gml).unwrap();
        assert_eq!(got.kind, kind, "{file}");
        let expected: Vec<f64> = match kind {
            MeshKind::Tetrahedra => mesh
                .elements(ElementKind::Tetrahedra)
                .iter()
                .map(|(n, _)| tet_quality(&points(&mesh, n)))
                .collect(),
            _ => mesh
                .elements(ElementKind::Triangles)
                .iter()
                .map(|(n, _)| tri_quality(&points(&mesh, n)))
                .collect(),
        };
        assert_eq!(got.values.len(), expected.len());
        for (e, (&g, &x)) in got.values.iter().zip(&expected).enumerate() {
            // The volume loses up to ~1e-5 of its value to cancellation in f32 on the smallest
            // elements, and the quality takes 2/3 of that.
            assert_near(&[f64::from(g)], &[x], 2e-5, &format!("{file} element {e}"));
        }
        let n = expected.len() as f64;
        let mean = expected.iter().sum::<f64>() / n;
        let std_dev = (expected.iter().map(|q| (q - mean).powi(2)).sum::<f64>() / n).sqrt();
        let min = expected.iter().copied().fold(f64::INFINITY, f64::min);
        let max = expected.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_near(
            &[got.min, got.mean, got.max],
            &[min, mean, max],
            2e-5,
            &format!("{file} min/mean/max"),
        );
        // From sums of squares in f32: the difference of two values near 0.7 loses digits.
        assert_near(&[got.std_dev], &[std_dev], 1e-3, &format!("{file} std dev"));
        assert!(
            got.min > 0.0 && got.max <= 1.0 + 1e-6,
            "{file}: {}..{}",
            got.min,
            got.max
        );
    }
}

/// One node-smoothing step on the CPU: each tetrahedron proposes, for each vertex, the apex of
/// the regular tetrahedron on the opposite face, on the vertex's side; interior vertices move
/// to `0.8·x + 0.2·(mean of the proposals weighted by 1/q⁴)`, q clamped below at 0.01.
fn smoothing_step(x: &[P], tets: &meshio::Elements, fixed: &[bool]) -> Vec<P> {
    let mut sum = vec![P::ZERO; x.len()];
    let mut weights = vec![0.0; x.len()];
    for (nodes, _) in tets.iter() {
        let p: Vec<P> = nodes.iter().map(|&v| x[v as usize]).collect();
        let w = 1.0 / tet_quality(&p).max(0.01).powi(4);
        for j in 0..4 {
            let face: Vec<P> = (0..4).filter(|&k| k != j).map(|k| p[k]).collect();
            let centre = centroid(&face);
            let edge =
                (face[1].distance(face[0]) + face[2].distance(face[1]) + face[0].distance(face[2]))
                    / 3.0;
            let mut normal = (face[1] - face[0]).cross(face[2] - face[0]).normalize();
            if normal.dot(p[j] - centre) < 0.0 {
                normal = -normal;
            }
            let apex = centre + normal * ((2.0f64 / 3.0).sqrt() * edge);
            let v = nodes[j] as usize;
            sum[v] += apex * w;
            weights[v] += w;
        }
    }
    (0..x.len())
        .map(|v| {
            if fixed[v] || weights[v] == 0.0 {
                x[v]
            } else {
                x[v] * 0.8 + sum[v] * (0.2 / weights[v])
            }
        })
        .collect()
}

/// The cube's boundary vertices, found geometrically: a coordinate is 0 or 1.
fn on_cube_faces(mesh: &Mesh) -> Vec<bool> {
    mesh.vertices
        .iter()
        .map(|p| p.iter().any(|&c| c.abs() < 1e-9 || (c - 1.0).abs() < 1e-9))
        .collect()
}

#[test]
fn node_smoothing_first_step_matches_the_cpu() {
    let mesh = sample("cube.meshb");
    let fixed = on_cube_faces(&mesh);
    let tets = mesh.elements(ElementKind::Tetrahedra);
    assert_eq!(
        node_smoothing::boundary_vertices(mesh.vertices.len(), tets.node_slice()),
        fixed
    );
    let mut gml = gml_with(&mesh);
    let got = node_smoothing::run(&mut gml, 1).unwrap();
    let x = vertices(&mesh);
    let expected = smoothing_step(&x, tets, &fixed);
    for (v, p) in expected.iter().enumerate() {
        // Moves of about 1e-3, computed in f32 from coordinates below 1.
        assert_near(
            &f64x3(got.coordinates[v]),
            &p.to_array(),
            2e-6,
            &format!("vertex {v}"),
        );
    }
    let moves: f64 = expected
        .iter()
        .zip(&x)
        .map(|(a, b)| a.distance_squared(*b))
        .sum();
    assert_near(&[got.residuals[0]], &[moves.sqrt()], 1e-5, "residual");
}

#[test]
fn node_smoothing_raises_quality_and_keeps_the_boundary() {
    let mesh = sample("cube.meshb");
    let fixed = on_cube_faces(&mesh);
    let mut gml = gml_with(&mesh);
    let s = node_smoothing::run(&mut gml, 4).unwrap();
    assert_eq!(s.mean_quality.len(), 5);
    assert_eq!(s.residuals.len(), 4);
    for w in s.mean_quality.windows(2) {
        assert!(w[1] > w[0], "mean quality fell: {:?}", s.mean_quality);
    }
    assert!(
        s.min_quality.1 >= s.min_quality.0,
        "worst tetrahedron got worse: {:?}",
        s.min_quality
    );
    assert!(
        s.residuals.iter().all(|r| r.is_finite() && *r > 0.0),
        "{:?}",
        s.residuals
    );
    let mut moved = 0;
    for (v, p) in mesh.vertices.iter().enumerate() {
        let same = f64x3(s.coordinates[v]) == p.map(|c| f64::from(c as f32));
        if fixed[v] {
            assert!(
                same,
                "boundary vertex {v} moved: {p:?} → {:?}",
                s.coordinates[v]
            );
        } else {
            moved += usize::from(!same);
        }
    }
    let interior = fixed.iter().filter(|&&f| !f).count();
    assert!(
        moved > interior * 9 / 10,
        "{moved} of {interior} interior vertices moved"
    );
    // The mean quality after, from the final coordinates on the CPU.
    let mean = mesh
        .elements(ElementKind::Tetrahedra)
        .iter()
        .map(|(n, _)| {
            tet_quality(
                &n.iter()
                    .map(|&v| P::from(f64x3(s.coordinates[v as usize])))
                    .collect::<Vec<_>>(),
            )
        })
        .sum::<f64>()
        / mesh.count(ElementKind::Tetrahedra) as f64;
    assert_near(&[s.mean_quality[4]], &[mean], 1e-5, "final mean quality");
}

#[test]
fn bandwidth_kernels_write_what_they_claim() {
    let mesh = sample("cube.meshb");
    let mut gml = gml_with(&mesh);
    let (measures, out) = gpu_bandwidth::run(&mut gml, 2).unwrap();
    let tets = mesh.elements(ElementKind::Tetrahedra);
    let (nv, nt) = (mesh.vertices.len() as f64, tets.len() as f64);
    let names: Vec<&str> = measures.iter().map(|m| m.name).collect();
    assert_eq!(
        names,
        [
            "direct_vertices",
            "direct_tets",
            "indirect_tets",
            "vertices_ball"
        ]
    );
    let gmlib: Vec<f64> = measures.iter().map(|m| m.gmlib_bytes).collect();
    assert_eq!(gmlib, [32.0 * nv, 32.0 * nt, 96.0 * nt, 460.0 * nv]);
    let unique: Vec<f64> = measures.iter().map(|m| m.unique_bytes).collect();
    assert_eq!(
        unique,
        [
            32.0 * nv,
            32.0 * nt,
            32.0 * nt + 16.0 * nv,
            32.0 * nt + 20.0 * nv
        ]
    );
    assert!(measures.iter().all(|m| m.time > std::time::Duration::ZERO));

    for (v, p) in mesh.vertices.iter().enumerate() {
        let expected = [p[0] as f32, p[1] as f32, p[2] as f32, 0.0];
        assert_eq!(out.copy[v], expected, "copy of vertex {v}");
    }
    let mut ball = vec![P::ZERO; mesh.vertices.len()];
    for (t, (nodes, _)) in tets.iter().enumerate() {
        let ids = [0, 1, 2, 3].map(|k| nodes[k] as f32);
        assert_eq!(out.nodes[t], ids, "node numbers of tetrahedron {t}");
        let sum: P = points(&mesh, nodes).iter().sum();
        let g = out.sums[t].map(f64::from);
        assert_near(
            &g[..3],
            &sum.to_array(),
            2e-6,
            &format!("coordinate sum of tetrahedron {t}"),
        );
        for &v in nodes {
            ball[v as usize] += sum;
        }
    }
    for (v, expected) in ball.iter().enumerate() {
        // Up to 40 tetrahedra of sums below 4: up to 160, summed in f32.
        let g = out.ball[v].map(f64::from);
        assert_near(
            &g[..3],
            &expected.to_array(),
            1e-4,
            &format!("ball sum of vertex {v}"),
        );
    }
}

/// The heat scheme of the example on the CPU: `dt` and the temperatures after `steps` steps,
/// with each step's L2 norm of the update.
fn heat_cpu(mesh: &Mesh, steps: usize) -> (f64, Vec<f64>, Vec<f64>) {
    let tets = mesh.elements(ElementKind::Tetrahedra);
    let walls: HashMap<Vec<u32>, i32> = mesh
        .elements(ElementKind::Triangles)
        .iter()
        .map(|(n, r)| {
            let mut key = n.to_vec();
            key.sort_unstable();
            (key, r)
        })
        .collect();
    let centres: Vec<P> = tets
        .iter()
        .map(|(n, _)| centroid(&points(mesh, n)))
        .collect();
    let ngb = neighbours(tets);
    // For each tetrahedron, its faces as (coefficient k_f, neighbour or wall temperature).
    enum Outside {
        Cell(usize),
        Wall(f64),
    }
    let mut faces: Vec<Vec<(f64, Outside)>> = Vec::new();
    let mut bound = f64::INFINITY;
    for (t, (nodes, _)) in tets.iter().enumerate() {
        let p = points(mesh, nodes);
        let volume = (p[1] - p[0]).cross(p[2] - p[0]).dot(p[3] - p[0]) / 6.0;
        let mut list = Vec::new();
        for (f, key) in face_keys(nodes).iter().enumerate() {
            let face: Vec<P> = (0..4).filter(|&k| k != f).map(|k| p[k]).collect();
            let area = (face[1] - face[0]).cross(face[2] - face[0]).length() / 2.0;
            match (ngb[t][f], walls.get(key)) {
                (Some(o), _) => list.push((
                    area / (centres[o].distance(centres[t]) * volume),
                    Outside::Cell(o),
                )),
                (None, Some(&r)) if r == 1 || r == 2 => list.push((
                    area / (centroid(&face).distance(centres[t]) * volume),
                    Outside::Wall(if r == 1 { 1.0 } else { 0.0 }),
                )),
                _ => {}
            }
        }
        bound = bound.min(1.0 / list.iter().map(|(k, _)| k).sum::<f64>());
        faces.push(list);
    }
    let dt = f64::from(heat_equation::SAFETY) * bound;
    let mut temp = vec![0.0; tets.len()];
    let mut residuals = Vec::new();
    for _ in 0..steps {
        let rhs: Vec<f64> = faces
            .iter()
            .enumerate()
            .map(|(t, list)| {
                let flux: f64 = list
                    .iter()
                    .map(|(k, o)| {
                        let outside = match *o {
                            Outside::Cell(n) => temp[n],
                            Outside::Wall(w) => w,
                        };
                        k * (outside - temp[t])
                    })
                    .sum();
                dt * flux
            })
            .collect();
        residuals.push(rhs.iter().map(|r| r * r).sum::<f64>().sqrt());
        for (t, r) in rhs.iter().enumerate() {
            temp[t] += r;
        }
    }
    (dt, temp, residuals)
}

fn heat_params() -> heat_equation::Params {
    heat_equation::Params {
        dt: 0.0,
        hot: 1.0,
        cold: 0.0,
        hot_ref: 1,
        cold_ref: 2,
    }
}

#[test]
fn heat_equation_matches_the_cpu_scheme() {
    let mesh = sample("cube.meshb");
    let mut gml = gml_with(&mesh);
    let steps = 30;
    let got = heat_equation::run(&mut gml, heat_params(), 0.0, steps).unwrap();
    let (dt, temp, residuals) = heat_cpu(&mesh, steps);
    // The bound is a quotient of f32 geometry: relative error near 1e-6.
    assert_near(&[got.dt], &[dt], 1e-5 * dt, "time step");
    assert_eq!(got.residuals.len(), steps);
    for (t, (&g, &x)) in got.temperature.iter().zip(&temp).enumerate() {
        // Convex combinations of values in [0, 1]: f32 errors do not grow beyond ~steps ulps.
        assert_near(&[f64::from(g)], &[x], 1e-5, &format!("tetrahedron {t}"));
    }
    for (s, (&g, &x)) in got.residuals.iter().zip(&residuals).enumerate() {
        assert_near(&[g], &[x], 1e-4 * x, &format!("residual of step {}", s + 1));
    }
}

#[test]
fn heat_equation_keeps_the_maximum_principle_and_converges() {
    let mesh = sample("cube.meshb");
    let mut gml = gml_with(&mesh);
    let got = heat_equation::run(&mut gml, heat_params(), 1e-2, 3000).unwrap();
    let last = *got.residuals.last().unwrap();
    assert!(
        got.residuals.len() < 3000 && last <= 1e-2 * got.residuals[0],
        "no drop by 100 in {} steps: {} → {last}",
        got.residuals.len(),
        got.residuals[0]
    );
    assert!(
        got.residuals
            .iter()
            .all(|r| r.is_finite() && *r <= got.residuals[0]),
        "the residual grew above its first value"
    );
    // Boundary values 0 and 1, initial value 0: every temperature stays in [0, 1].
    for (t, &x) in got.temperature.iter().enumerate() {
        assert!((-1e-6..=1.0 + 1e-6).contains(&x), "tetrahedron {t}: {x}");
    }
    // The heat has come in from the hot side: the first tetrahedra there are warm.
    let warm = got.temperature.iter().filter(|&&x| x > 0.5).count();
    assert!(warm > 0, "nothing warmed up");
}

#[test]
fn conjugate_gradient_solves_the_system() {
    for file in ["cube.meshb", "sphere_surface.meshb"] {
        let mesh = sample(file);
        let mut gml = gml_with(&mesh);
        let b: Vec<f32> = mesh
            .vertices
            .iter()
            .map(|p| (1.0 + p[0] * p[1] - 2.0 * p[2]) as f32)
            .collect();
        let s = conjugate_gradient::run(&mut gml, &b, 1e-5, 200).unwrap();
        assert!(
            s.converged,
            "{file}: relative residual {:?} after {} iterations",
            s.residuals.last(),
            s.residuals.len()
        );
        // A = I + L from the edges of the elements, assembled on the CPU.
        let mut edges = HashSet::new();
        for kind in [ElementKind::Tetrahedra, ElementKind::Triangles] {
            for (n, _) in mesh.elements(kind).iter() {
                for i in 0..n.len() {
                    for j in i + 1..n.len() {
                        edges.insert((n[i].min(n[j]), n[i].max(n[j])));
                    }
                }
            }
        }
        assert_eq!(gml.count(MeshKind::Edges), Some(edges.len()), "{file}");
        // κ(I + L) ≤ 1 + 2·(largest vertex degree) (Gershgorin), and CG needs at most
        // √κ·ln(2/tolerance)/2 iterations in exact arithmetic; allow 10 more for f32.
        let mut degree = vec![0; mesh.vertices.len()];
        for &(a, c) in &edges {
            degree[a as usize] += 1;
            degree[c as usize] += 1;
        }
        let kappa = 1.0 + 2.0 * f64::from(*degree.iter().max().unwrap());
        let bound = (kappa.sqrt() * (2.0 / 1e-5f64).ln() / 2.0).ceil() as usize + 10;
        let iterations = s.residuals.len();
        assert!(
            (5..=bound).contains(&iterations),
            "{file}: {iterations} iterations, expected 5 to {bound}"
        );
        let x: Vec<f64> = s.x.iter().map(|&v| f64::from(v)).collect();
        let mut ax = x.clone();
        for &(a, c) in &edges {
            let (a, c) = (a as usize, c as usize);
            let d = x[a] - x[c];
            ax[a] += d;
            ax[c] -= d;
        }
        let r: f64 = ax
            .iter()
            .zip(&b)
            .map(|(y, &b)| (y - f64::from(b)).powi(2))
            .sum::<f64>()
            .sqrt();
        let b_norm = b.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt();
        // The recursive residual reached 1e-5; the true one drifts from it by the f32
        // rounding of x (6e-8 × κ).
        assert!(r / b_norm < 3e-5, "{file}: ‖Ax − b‖/‖b‖ = {}", r / b_norm);
    }
}

// ----- the manual's kernels, verbatim (examples/manual_kernels.rs) -----------------------------

/// For each vertex, the triangles it belongs to.
fn balls(mesh: &Mesh) -> Vec<Vec<usize>> {
    let mut balls = vec![Vec::new(); mesh.vertices.len()];
    for (t, (nodes, _)) in mesh.elements(ElementKind::Triangles).iter().enumerate() {
        for &v in nodes {
            balls[v as usize].push(t);
        }
    }
    balls
}

/// Each triangle's barycentre.
fn triangle_centres(mesh: &Mesh) -> Vec<P> {
    mesh.elements(ElementKind::Triangles)
        .iter()
        .map(|(nodes, _)| centroid(&points(mesh, nodes)))
        .collect()
}

#[test]
fn manual_displacement_with_speed_and_direction_matches_the_cpu() {
    let mesh = sample("cube.meshb");
    let mut gml = gml_with(&mesh);
    let n = mesh.vertices.len();
    let speeds: Vec<f32> = (0..n).map(|i| 0.004 + (i % 7) as f32 * 0.001).collect();
    let directions: Vec<[f32; 4]> = (0..n)
        .map(|i| [0.5 * (i % 3) as f32, 1.0, -0.25 * (i % 5) as f32, 0.0])
        .collect();
    let steps = 12;
    let got = manual_kernels::displacement(&mut gml, &speeds, &directions, steps).unwrap();
    for (v, p) in mesh.vertices.iter().enumerate() {
        let d = P::from([0, 1, 2].map(|c| f64::from(directions[v][c])));
        let expected = P::from(*p) + d * (steps as f64 * f64::from(speeds[v]));
        assert_near(
            &f64x3(got[v]),
            &expected.to_array(),
            1e-5,
            &format!("vertex {v}"),
        );
    }
}

#[test]
fn manual_barycentre_matches_the_cpu() {
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    let got = manual_kernels::barycentres(&mut gml).unwrap();
    let expected = triangle_centres(&mesh);
    assert_eq!(got.len(), expected.len());
    for (t, c) in expected.iter().enumerate() {
        let g = got[t].map(f64::from);
        assert_near(&g, &[c.x, c.y, c.z, 0.0], 1e-6, &format!("triangle {t}"));
    }
}

#[test]
fn manual_closest_neighbour_matches_the_cpu() {
    // The sphere is closed; the square has boundary edges, across which the manual's kernel
    // measures the distance to a zero centre (the origin). The square is moved so that one
    // boundary triangle's centre is near the origin: there, the zero decides the minimum.
    for file in ["sphere_surface.meshb", "square_2d.meshb"] {
        let mut mesh = sample(file);
        let tris = mesh.elements(ElementKind::Triangles);
        let ngb = neighbours(tris);
        let boundary = ngb.iter().position(|n| n.contains(&None));
        if let Some(b) = boundary {
            let origin = centroid(&points(&mesh, tris.nodes(b))) - P::new(0.002, 0.001, 0.0);
            for p in &mut mesh.vertices {
                *p = (P::from(*p) - origin).to_array();
            }
        }
        let mut gml = gml_with(&mesh);
        let got = manual_kernels::closest_neighbour(&mut gml).unwrap();
        let centres = triangle_centres(&mesh);
        let mut decided_by_boundary = 0;
        for (t, (c, n)) in centres.iter().zip(&ngb).enumerate() {
            let across: Vec<f64> = n
                .iter()
                .map(|o| o.map_or(c.length(), |o| c.distance(centres[o])))
                .collect();
            let expected = across.iter().copied().fold(f64::INFINITY, f64::min);
            let real = n
                .iter()
                .flatten()
                .map(|&o| c.distance(centres[o]))
                .fold(f64::INFINITY, f64::min);
            if expected < real - 1e-3 {
                decided_by_boundary += 1;
            }
            assert_near(
                &[f64::from(got[t])],
                &[expected],
                2e-6,
                &format!("{file} triangle {t}"),
            );
        }
        assert_eq!(
            decided_by_boundary > 0,
            boundary.is_some(),
            "{file}: the boundary's zero centres must decide some minima (and only with a boundary)"
        );
    }
}

#[test]
fn manual_relaxation_matches_the_cpu() {
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    let steps = 4;
    let got = manual_kernels::relaxation(&mut gml, steps).unwrap();
    let bars = triangle_centres(&mesh);
    let balls = balls(&mesh);
    assert!(balls.iter().all(|b| !b.is_empty()));
    let mut relaxed = vertices(&mesh);
    for _ in 0..steps {
        for (v, ball) in balls.iter().enumerate() {
            let sum: P = ball.iter().map(|&t| bars[t]).sum();
            relaxed[v] = relaxed[v] * 0.8 + sum * (0.2 / ball.len() as f64);
        }
    }
    for (v, r) in relaxed.iter().enumerate() {
        let g = got[v].map(f64::from);
        assert_near(&g, &[r.x, r.y, r.z, 0.0], 2e-6, &format!("vertex {v}"));
    }
}

#[test]
fn the_manuals_zero_vector_initializer_is_not_opencl_c() {
    // Why manual_kernels.rs writes `{0, 0, 0, 0}`: the printed `{0}` does not build, and the
    // error points at the body's own line.
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    let bar = gml
        .new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")
        .unwrap();
    let relaxed = gml
        .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "relaxed")
        .unwrap();
    let printed = manual_kernels::RELAX.replace("{0, 0, 0, 0}", "{0}");
    assert!(printed.contains("float4 NewCrd = {0};"));
    let err = gml
        .compile(
            KernelSpec::new("relax", MeshKind::Vertices)
                .access(Access::read_write(relaxed))
                .access(Access::read(bar))
                .body(&printed),
        )
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("relax:2:") && text.contains("vector initialization"),
        "{text}"
    );
}

#[test]
fn manual_scatter_gather_matches_the_cpu() {
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    let got = manual_kernels::scatter_gather(&mut gml).unwrap();
    let bars = triangle_centres(&mesh);
    for (v, ball) in balls(&mesh).iter().enumerate() {
        assert!(!ball.is_empty());
        let mean = centroid(&ball.iter().map(|&t| bars[t]).collect::<Vec<_>>());
        let g = got[v].map(f64::from);
        assert_near(
            &g,
            &[mean.x, mean.y, mean.z, 0.0],
            1e-6,
            &format!("vertex {v}"),
        );
    }
}

// ----- the manual's names ---------------------------------------------------------------------

/// Distinct values per entity: vertex `v` → (v, 1, 0, 0) / 1000, triangle `t` → (0, 0, t, 1).
fn vertex_value(v: usize) -> [f32; 4] {
    [v as f32 / 1000.0, 0.001, 0.0, 0.0]
}

fn triangle_value(t: usize) -> [f32; 4] {
    [0.0, 0.0, t as f32, 1.0]
}

#[test]
fn fields_of_one_name_on_two_kinds_are_told_apart_by_the_manuals_names() {
    // Section 3.2: looping over triangles, the triangle's own normal is `TriNrm`, its vertices'
    // are `TriVerNrm[3]`; looping over vertices, the ball's triangles' are `VerTriNrm[i]`.
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    let nv = mesh.vertices.len();
    let tris = mesh.elements(ElementKind::Triangles);
    let ver_nrm = gml
        .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Nrm")
        .unwrap();
    let tri_nrm = gml
        .new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Nrm")
        .unwrap();
    let vertex_start: Vec<[f32; 4]> = (0..nv).map(vertex_value).collect();
    let triangle_start: Vec<[f32; 4]> = (0..tris.len()).map(triangle_value).collect();
    gml.set_block(ver_nrm, 0, &vertex_start).unwrap();
    gml.set_block(tri_nrm, 0, &triangle_start).unwrap();
    let down = gml
        .compile(
            KernelSpec::new("down", MeshKind::Triangles)
                .access(Access::read(ver_nrm))
                .access(Access::read_write(tri_nrm))
                .body("TriNrm = 2.0f * TriNrm + TriVerNrm[0] + TriVerNrm[1] + TriVerNrm[2];"),
        )
        .unwrap();
    let up = gml
        .compile(
            KernelSpec::new("up", MeshKind::Vertices)
                .access(Access::read(tri_nrm))
                .access(Access::write(ver_nrm))
                .body(
                    "float4 s = 0.0f;
                     for (int i = 0; i < VerTriDegMax; i++) s += VerTriNrm[i];
                     VerNrm = s;",
                ),
        )
        .unwrap();
    gml.launch(down).unwrap();
    gml.launch(up).unwrap();
    let as_p4 = |x: [f32; 4]| x.map(f64::from);
    let expected_tri: Vec<[f64; 4]> = tris
        .iter()
        .enumerate()
        .map(|(t, (nodes, _))| {
            let mut e = as_p4(triangle_value(t)).map(|x| 2.0 * x);
            for &v in nodes {
                for (c, x) in as_p4(vertex_value(v as usize)).iter().enumerate() {
                    e[c] += x;
                }
            }
            e
        })
        .collect();
    let got_tri = gml.read_all(tri_nrm).unwrap();
    for (t, e) in expected_tri.iter().enumerate() {
        assert_near(&as_p4(got_tri[t]), e, 1e-3, &format!("triangle {t}"));
    }
    let got_ver = gml.read_all(ver_nrm).unwrap();
    for (v, ball) in balls(&mesh).iter().enumerate() {
        let mut e = [0.0; 4];
        for &t in ball {
            for c in 0..4 {
                e[c] += expected_tri[t][c];
            }
        }
        assert_near(&as_p4(got_ver[v]), &e, 1e-2, &format!("vertex {v}"));
    }
}

#[test]
fn gmls_earlier_downlink_name_still_works() {
    // `TriCrd`-style: a vertex field read in a triangle loop was `TriNrm[3]` before the
    // manual's `TriVerNrm[3]`; with no triangle field of that name it still is.
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    let nv = mesh.vertices.len();
    let ver_nrm = gml
        .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Nrm")
        .unwrap();
    let out = gml
        .new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Out")
        .unwrap();
    gml.set_block(ver_nrm, 0, &(0..nv).map(vertex_value).collect::<Vec<_>>())
        .unwrap();
    let kernel = gml
        .compile(
            KernelSpec::new("legacy", MeshKind::Triangles)
                .access(Access::read(ver_nrm))
                .access(Access::write(out))
                .body("TriOut = TriNrm[2];"),
        )
        .unwrap();
    gml.launch(kernel).unwrap();
    let got = gml.read_all(out).unwrap();
    for (t, (nodes, _)) in mesh.elements(ElementKind::Triangles).iter().enumerate() {
        assert_eq!(got[t], vertex_value(nodes[2] as usize), "triangle {t}");
    }
}

#[test]
fn a_generated_name_collision_is_a_gml_error_naming_both() {
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    // A triangle field `Idx` would be `TriIdx`, the loop index.
    let idx = gml
        .new_solution::<i32>(MeshKind::Triangles, 1, "Idx")
        .unwrap();
    let err = gml
        .compile(
            KernelSpec::new("idx", MeshKind::Triangles)
                .access(Access::write(idx))
                .body("TriIdx = 1;"),
        )
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, GmlError::NameCollision { .. }), "{text}");
    assert!(
        text.contains("`TriIdx`")
            && text.contains("the loop index")
            && text.contains("solution `Idx` on triangles"),
        "{text}"
    );
    // The manual's name of a vertex field `Nrm` read in a triangle loop, `TriVerNrm`, is also
    // the name of a triangle field `VerNrm`.
    let ver_nrm = gml
        .new_solution::<f32>(MeshKind::Vertices, 1, "Nrm")
        .unwrap();
    let tri_ver_nrm = gml
        .new_solution::<f32>(MeshKind::Triangles, 1, "VerNrm")
        .unwrap();
    let err = gml
        .compile(
            KernelSpec::new("nrm", MeshKind::Triangles)
                .access(Access::read(ver_nrm))
                .access(Access::write(tri_ver_nrm))
                .body("TriVerNrm = 0.0f;"),
        )
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, GmlError::NameCollision { .. }), "{text}");
    assert!(
        text.contains("`TriVerNrm`")
            && text.contains("solution `Nrm` on vertices")
            && text.contains("solution `VerNrm` on triangles"),
        "{text}"
    );
    // A triangle field `Deg` read through the vertex ball would be `VerTriDeg`, its degree.
    let deg = gml
        .new_solution::<f32>(MeshKind::Triangles, 1, "Deg")
        .unwrap();
    let err = gml
        .compile(
            KernelSpec::new("deg", MeshKind::Vertices)
                .access(Access::read(deg))
                .access(Access::write(ver_nrm))
                .body("VerNrm = VerTriDeg;"),
        )
        .unwrap_err();
    assert!(matches!(err, GmlError::NameCollision { .. }), "{err}");
}

#[test]
fn a_name_two_fields_could_mean_is_a_gml_error_naming_both() {
    let mesh = sample("sphere_surface.meshb");
    let mut gml = gml_with(&mesh);
    gml.extract_edges().unwrap();
    let nv = mesh.vertices.len();
    let ne = gml.count(MeshKind::Edges).unwrap();
    let ver_nrm = gml
        .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Nrm")
        .unwrap();
    let edg_nrm = gml
        .new_solution::<[f32; 4]>(MeshKind::Edges, 1, "Nrm")
        .unwrap();
    let out = gml
        .new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Out")
        .unwrap();
    gml.set_block(ver_nrm, 0, &(0..nv).map(vertex_value).collect::<Vec<_>>())
        .unwrap();
    gml.set_block(edg_nrm, 0, &vec![[0.0, 0.0, 0.0, 1.0]; ne])
        .unwrap();
    let spec = |body: &str| {
        KernelSpec::new("both", MeshKind::Triangles)
            .access(Access::read(ver_nrm))
            .access(Access::read(edg_nrm))
            .access(Access::write(out))
            .body(body)
    };
    let err = gml.compile(spec("TriOut = TriNrm[0];")).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, GmlError::AmbiguousName { .. }), "{text}");
    assert!(
        text.contains("`Nrm` on vertices")
            && text.contains("`Nrm` on edges")
            && text.contains("`TriVerNrm`")
            && text.contains("`TriEdgNrm`"),
        "{text}"
    );
    let kernel = gml
        .compile(spec(
            "TriOut = TriVerNrm[1] + TriEdgNrm[0] + TriEdgNrm[1] + TriEdgNrm[2];",
        ))
        .unwrap();
    gml.launch(kernel).unwrap();
    let got = gml.read_all(out).unwrap();
    for (t, (nodes, _)) in mesh.elements(ElementKind::Triangles).iter().enumerate() {
        let mut e = vertex_value(nodes[1] as usize);
        e[3] += 3.0;
        assert_eq!(got[t], e, "triangle {t}");
    }
}
