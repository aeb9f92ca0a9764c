//! Signed measures of mesh elements, in double precision, for validity checks.
//!
//! Orientation follows libMeshb and GMlib: a tetrahedron `abcd` is positive when
//! `(b-a)×(c-a)·(d-a) > 0`; pyramids, prisms and hexahedra are positive when their faces
//! ([`ElementKind::faces`]) turn outward.

use glam::DVec3;

use crate::meshio::ElementKind;

type P = [f64; 3];

/// Six times the signed volume of tetrahedron `abcd`.
pub fn tet_volume6(a: P, b: P, c: P, d: P) -> f64 {
    let [a, b, c, d] = [a, b, c, d].map(DVec3::from_array);
    (b - a).cross(c - a).dot(d - a)
}

/// Signed measure of an element: length of an edge, area of a surface element (signed in the
/// xy plane when `planar`, unsigned otherwise), volume of a solid.
pub fn measure(kind: ElementKind, p: &[P], planar: bool) -> f64 {
    match kind {
        ElementKind::Edges => (DVec3::from(p[1]) - DVec3::from(p[0])).length(),
        ElementKind::Triangles | ElementKind::Quadrilaterals => {
            if planar {
                // Shoelace formula: positive for counter-clockwise polygons.
                let n = p.len();
                0.5 * (0..n)
                    .map(|i| {
                        let [a, b] = [p[i], p[(i + 1) % n]].map(|q| DVec3::from(q).truncate());
                        a.perp_dot(b)
                    })
                    .sum::<f64>()
            } else {
                let c = DVec3::from(centroid(p));
                let n = p.len();
                let normal: DVec3 = (0..n)
                    .map(|i| (DVec3::from(p[i]) - c).cross(DVec3::from(p[(i + 1) % n]) - c))
                    .sum();
                0.5 * normal.length()
            }
        }
        ElementKind::Tetrahedra => tet_volume6(p[0], p[1], p[2], p[3]) / 6.0,
        _ => {
            // Divergence theorem: sum of the tetrahedra joining the centroid to each face,
            // faces split into triangles around their own centre.
            let c = centroid(p);
            kind.faces()
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

/// Corners of the solids with more than four nodes, each as the corner node followed by its
/// three neighbours in positive order: the tetrahedron they span has positive volume at every
/// corner of a valid element (its corner Jacobian).
fn corners(kind: ElementKind) -> &'static [[usize; 4]] {
    match kind {
        ElementKind::Pyramids => &[[0, 1, 3, 4], [1, 2, 0, 4], [2, 3, 1, 4], [3, 0, 2, 4]],
        ElementKind::Prisms => &[
            [0, 1, 2, 3],
            [1, 2, 0, 4],
            [2, 0, 1, 5],
            [3, 5, 4, 0],
            [4, 3, 5, 1],
            [5, 4, 3, 2],
        ],
        ElementKind::Hexahedra => &[
            [0, 1, 3, 4],
            [1, 2, 0, 5],
            [2, 3, 1, 6],
            [3, 0, 2, 7],
            [4, 7, 5, 0],
            [5, 4, 6, 1],
            [6, 5, 7, 2],
            [7, 6, 4, 3],
        ],
        _ => &[],
    }
}

/// The smallest corner measure of an element: six times the volume of each corner tetrahedron
/// of a pyramid, prism or hexahedron, twice the signed area of each corner triangle of a planar
/// quadrilateral. A valid element has every corner positive; a tangled or dented one does not,
/// even when its total measure is positive. `None` for kinds without corners to check.
pub fn min_corner(kind: ElementKind, p: &[P], planar: bool) -> Option<f64> {
    match kind {
        ElementKind::Quadrilaterals if planar => Some(
            (0..4)
                .map(|i| {
                    let [a, b, c] =
                        [p[(i + 3) % 4], p[i], p[(i + 1) % 4]].map(|q| DVec3::from(q).truncate());
                    (c - b).perp_dot(a - b)
                })
                .fold(f64::INFINITY, f64::min),
        ),
        ElementKind::Pyramids | ElementKind::Prisms | ElementKind::Hexahedra => Some(
            corners(kind)
                .iter()
                .map(|c| tet_volume6(p[c[0]], p[c[1]], p[c[2]], p[c[3]]))
                .fold(f64::INFINITY, f64::min),
        ),
        _ => None,
    }
}

/// Longest distance between two nodes of the element: its size, for relative tolerances.
pub fn diameter(p: &[P]) -> f64 {
    let mut d2: f64 = 0.0;
    for (i, a) in p.iter().enumerate() {
        for b in &p[i + 1..] {
            d2 = d2.max(DVec3::from(*a).distance_squared(DVec3::from(*b)));
        }
    }
    d2.sqrt()
}

fn centroid(p: &[P]) -> P {
    let sum: DVec3 = p.iter().copied().map(DVec3::from).sum();
    (sum / p.len() as f64).to_array()
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
    fn valid_elements_have_positive_corners_and_tangled_ones_do_not() {
        assert_eq!(min_corner(ElementKind::Hexahedra, &CUBE, false), Some(1.0));
        let prism = [CUBE[0], CUBE[1], CUBE[3], CUBE[4], CUBE[5], CUBE[7]];
        assert_eq!(min_corner(ElementKind::Prisms, &prism, false), Some(1.0));
        let pyramid = [CUBE[0], CUBE[1], CUBE[2], CUBE[3], [0.5, 0.5, 1.0]];
        assert!(min_corner(ElementKind::Pyramids, &pyramid, false).unwrap() > 0.0);
        let quad = [CUBE[0], CUBE[1], CUBE[2], CUBE[3]];
        assert_eq!(
            min_corner(ElementKind::Quadrilaterals, &quad, true),
            Some(1.0)
        );
        // Top face as a bow-tie: total volume positive, two corners negative.
        let mut twisted = CUBE;
        twisted.swap(6, 7);
        assert!(measure(ElementKind::Hexahedra, &twisted, false) > 0.0);
        assert!(min_corner(ElementKind::Hexahedra, &twisted, false).unwrap() < 0.0);
        // A corner pushed inside the element.
        let mut dented = CUBE;
        dented[6] = [0.3, 0.3, 0.3];
        assert!(min_corner(ElementKind::Hexahedra, &dented, false).unwrap() < 0.0);
        let bow_tie = [CUBE[0], CUBE[1], CUBE[3], CUBE[2]];
        assert!(min_corner(ElementKind::Quadrilaterals, &bow_tie, true).unwrap() < 0.0);
    }

    #[test]
    fn mirrored_solids_are_negative() {
        let mirror = |p: &[P]| -> Vec<P> { p.iter().map(|q| [-q[0], q[1], q[2]]).collect() };
        assert!(measure(ElementKind::Hexahedra, &mirror(&CUBE), false) < -0.99);
        let tet = [CUBE[0], CUBE[1], CUBE[3], CUBE[4]];
        assert!(measure(ElementKind::Tetrahedra, &mirror(&tet), false) < 0.0);
    }
}
