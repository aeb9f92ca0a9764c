//! Meshes generated in code, for tests, benchmarks and demos without files.

use super::element::ElementKind;
use super::mesh::Mesh;

/// A structured tetrahedral mesh of the unit cube `[0, 1]^3` with `cells[d]` cubes along axis
/// `d`, each cube split into 6 tetrahedra around its diagonal from `(0,0,0)` to `(1,1,1)`
/// (Kuhn triangulation, conforming between cubes).
///
/// Tetrahedra have positive volume and reference 1. Boundary triangles are oriented outwards,
/// with references 1 to 6 for the faces `x = 0`, `x = 1`, `y = 0`, `y = 1`, `z = 0`, `z = 1`.
/// Vertex `(i, j, k)` has index `i + (nx + 1) * (j + (ny + 1) * k)` and reference 0.
pub fn tet_grid(cells: [usize; 3]) -> Mesh {
    let [nx, ny, nz] = cells;
    let (px, py) = (nx + 1, ny + 1);
    let index = |i: usize, j: usize, k: usize| (i + px * (j + py * k)) as u32;
    let mut mesh = Mesh::new(3);
    let nv = px * py * (nz + 1);
    mesh.vertices.reserve(nv);
    mesh.vertex_refs.reserve(nv);
    for k in 0..=nz {
        for j in 0..=ny {
            for i in 0..=nx {
                let at = |n: usize, c: usize| if c == 0 { 0.0 } else { n as f64 / c as f64 };
                mesh.push_vertex([at(i, nx), at(j, ny), at(k, nz)], 0);
            }
        }
    }

    // Each tetrahedron walks from corner 000 to corner 111 one axis at a time; the walk order
    // is a permutation of the axes, and odd permutations need two nodes swapped to keep the
    // volume positive.
    const WALKS: [([usize; 3], bool); 6] = [
        ([0, 1, 2], true),
        ([1, 2, 0], true),
        ([2, 0, 1], true),
        ([0, 2, 1], false),
        ([2, 1, 0], false),
        ([1, 0, 2], false),
    ];
    let tets = mesh.elements_mut(ElementKind::Tetrahedra);
    tets.reserve(6 * nx * ny * nz);
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                for (axes, even) in WALKS {
                    let mut c = [i, j, k];
                    let mut t = [0u32; 4];
                    t[0] = index(c[0], c[1], c[2]);
                    for (step, &axis) in axes.iter().enumerate() {
                        c[axis] += 1;
                        t[step + 1] = index(c[0], c[1], c[2]);
                    }
                    if !even {
                        t.swap(1, 2);
                    }
                    tets.push(&t, 1);
                }
            }
        }
    }

    // Boundary faces: each square is split along its diagonal from its lowest to its highest
    // corner, matching the tetrahedra's faces.
    let tris = mesh.elements_mut(ElementKind::Triangles);
    for axis in 0..3 {
        let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
        let (nu, nv) = (cells[u], cells[v]);
        for side in 0..2 {
            let fixed = side * cells[axis];
            let reference = (2 * axis + side + 1) as i32;
            for b in 0..nv {
                for a in 0..nu {
                    let corner = |da: usize, db: usize| {
                        let mut c = [0; 3];
                        c[axis] = fixed;
                        c[u] = a + da;
                        c[v] = b + db;
                        index(c[0], c[1], c[2])
                    };
                    let (p00, p10, p01, p11) =
                        (corner(0, 0), corner(1, 0), corner(0, 1), corner(1, 1));
                    // (u, v, axis) is right-handed: u-then-v order faces +axis.
                    if side == 1 {
                        tris.push(&[p00, p10, p11], reference);
                        tris.push(&[p00, p11, p01], reference);
                    } else {
                        tris.push(&[p00, p11, p10], reference);
                        tris.push(&[p00, p01, p11], reference);
                    }
                }
            }
        }
    }
    mesh
}

#[cfg(test)]
mod tests {
    use glam::DVec3;

    use super::*;

    #[test]
    fn tets_fill_the_cube_with_positive_volume() {
        let m = tet_grid([3, 2, 4]);
        assert_eq!(m.vertices.len(), 4 * 3 * 5);
        assert_eq!(m.count(ElementKind::Tetrahedra), 6 * 24);
        assert_eq!(m.validate_indices(), Ok(()));
        let mut total = 0.0;
        for (t, _) in m.elements(ElementKind::Tetrahedra).iter() {
            let p = [0, 1, 2, 3].map(|i| DVec3::from(m.vertices[t[i] as usize]));
            let vol = (p[1] - p[0]).dot((p[2] - p[0]).cross(p[3] - p[0])) / 6.0;
            assert!(vol > 0.0, "{t:?} has volume {vol}");
            total += vol;
        }
        assert!((total - 1.0).abs() < 1e-12, "{total}");
    }

    #[test]
    fn boundary_triangles_face_outwards_and_cover_the_surface() {
        let m = tet_grid([2, 3, 1]);
        let tris = m.elements(ElementKind::Triangles);
        assert_eq!(tris.len(), 2 * 2 * (2 * 3 + 3 + 2));
        let mut area = [0.0; 6];
        for (t, r) in tris.iter() {
            let p = [0, 1, 2].map(|i| DVec3::from(m.vertices[t[i] as usize]));
            let n = (p[1] - p[0]).cross(p[2] - p[0]);
            let centre = (p[0] + p[1] + p[2]) / 3.0 - 0.5;
            assert!(
                n.dot(centre) > 0.0,
                "triangle {t:?} (ref {r}) faces inwards"
            );
            area[(r - 1) as usize] += n.length() / 2.0;
        }
        for a in area {
            assert!((a - 1.0).abs() < 1e-12, "{area:?}");
        }
    }
}
