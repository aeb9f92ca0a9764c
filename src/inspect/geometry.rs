//! Signed measures of mesh elements, in double precision, for validity checks.
//!
//! Orientation follows libMeshb and GMlib: a tetrahedron `abcd` is positive when
//! `(b-a)×(c-a)·(d-a) > 0`; pyramids, prisms and hexahedra are positive when their faces, in
//! the local numbering below, turn outward.

use crate::meshio::ElementKind;

type P = [f64; 3];

fn sub(a: P, b: P) -> P {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn cross(a: P, b: P) -> P {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn dot(a: P, b: P) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Six times the signed volume of tetrahedron `abcd`.
pub fn tet_volume6(a: P, b: P, c: P, d: P) -> f64 {
    dot(cross(sub(b, a), sub(c, a)), sub(d, a))
}

/// Outward faces of the 3D element kinds with more than four nodes (GMlib's `ItmFacNod`).
fn faces(kind: ElementKind) -> &'static [&'static [usize]] {
    match kind {
        ElementKind::Pyramids => &[
            &[0, 1, 4],
            &[1, 2, 4],
            &[2, 3, 4],
            &[3, 0, 4],
            &[3, 2, 1, 0],
        ],
        ElementKind::Prisms => &[
            &[0, 2, 1],
            &[3, 4, 5],
            &[0, 1, 4, 3],
            &[1, 2, 5, 4],
            &[2, 0, 3, 5],
        ],
        ElementKind::Hexahedra => &[
            &[0, 4, 7, 3],
            &[1, 2, 6, 5],
            &[0, 1, 5, 4],
            &[3, 7, 6, 2],
            &[0, 3, 2, 1],
            &[4, 5, 6, 7],
        ],
        _ => &[],
    }
}

/// Signed measure of an element: length of an edge, area of a surface element (signed in the
/// xy plane when `planar`, unsigned otherwise), volume of a solid.
pub fn measure(kind: ElementKind, p: &[P], planar: bool) -> f64 {
    match kind {
        ElementKind::Edges => dot(sub(p[1], p[0]), sub(p[1], p[0])).sqrt(),
        ElementKind::Triangles | ElementKind::Quadrilaterals => {
            if planar {
                // Shoelace formula: positive for counter-clockwise polygons.
                let n = p.len();
                0.5 * (0..n)
                    .map(|i| {
                        let (a, b) = (p[i], p[(i + 1) % n]);
                        a[0] * b[1] - b[0] * a[1]
                    })
                    .sum::<f64>()
            } else {
                let c = centroid(p);
                let n = p.len();
                let normal = (0..n).fold([0.0; 3], |acc, i| {
                    let x = cross(sub(p[i], c), sub(p[(i + 1) % n], c));
                    [acc[0] + x[0], acc[1] + x[1], acc[2] + x[2]]
                });
                0.5 * dot(normal, normal).sqrt()
            }
        }
        ElementKind::Tetrahedra => tet_volume6(p[0], p[1], p[2], p[3]) / 6.0,
        _ => {
            // Divergence theorem: sum of the tetrahedra joining the centroid to each face,
            // faces split into triangles around their own centre.
            let c = centroid(p);
            faces(kind)
                .iter()
                .map(|face| {
                    let corners: Vec<P> = face.iter().map(|&i| p[i]).collect();
                    let fc = centroid(&corners);
                    let n = corners.len();
                    (0..n)
                        .map(|i| tet_volume6(c, corners[i], corners[(i + 1) % n], fc))
                        .sum::<f64>()
                })
                .sum::<f64>()
                / 6.0
        }
    }
}

/// Longest distance between two nodes of the element: its size, for relative tolerances.
pub fn diameter(p: &[P]) -> f64 {
    let mut d2: f64 = 0.0;
    for (i, a) in p.iter().enumerate() {
        for b in &p[i + 1..] {
            let e = sub(*a, *b);
            d2 = d2.max(dot(e, e));
        }
    }
    d2.sqrt()
}

fn centroid(p: &[P]) -> P {
    let n = p.len() as f64;
    let s = p.iter().fold([0.0; 3], |acc, x| {
        [acc[0] + x[0], acc[1] + x[1], acc[2] + x[2]]
    });
    [s[0] / n, s[1] / n, s[2] / n]
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUBE: [P; 8] = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 0.0, 1.0],
        [1.0, 1.0, 1.0],
        [0.0, 1.0, 1.0],
    ];

    #[test]
    fn unit_elements_have_known_measures() {
        let tet = [CUBE[0], CUBE[1], CUBE[3], CUBE[4]];
        assert!((measure(ElementKind::Tetrahedra, &tet, false) - 1.0 / 6.0).abs() < 1e-15);
        assert!((measure(ElementKind::Hexahedra, &CUBE, false) - 1.0).abs() < 1e-14);
        let prism = [CUBE[0], CUBE[1], CUBE[3], CUBE[4], CUBE[5], CUBE[7]];
        assert!((measure(ElementKind::Prisms, &prism, false) - 0.5).abs() < 1e-14);
        let pyramid = [CUBE[0], CUBE[1], CUBE[2], CUBE[3], [0.5, 0.5, 1.0]];
        assert!((measure(ElementKind::Pyramids, &pyramid, false) - 1.0 / 3.0).abs() < 1e-14);
        let quad = [CUBE[0], CUBE[1], CUBE[2], CUBE[3]];
        assert!((measure(ElementKind::Quadrilaterals, &quad, true) - 1.0).abs() < 1e-15);
        assert!((measure(ElementKind::Quadrilaterals, &quad, false) - 1.0).abs() < 1e-15);
        let tri_cw = [CUBE[0], CUBE[3], CUBE[1]];
        assert!((measure(ElementKind::Triangles, &tri_cw, true) + 0.5).abs() < 1e-15);
        assert!((measure(ElementKind::Triangles, &tri_cw, false) - 0.5).abs() < 1e-15);
    }

    #[test]
    fn mirrored_solids_are_negative() {
        let mirror = |p: &[P]| -> Vec<P> { p.iter().map(|q| [-q[0], q[1], q[2]]).collect() };
        assert!(measure(ElementKind::Hexahedra, &mirror(&CUBE), false) < -0.99);
        let tet = [CUBE[0], CUBE[1], CUBE[3], CUBE[4]];
        assert!(measure(ElementKind::Tetrahedra, &mirror(&tet), false) < 0.0);
    }
}
