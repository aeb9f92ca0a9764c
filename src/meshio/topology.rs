//! The local topology of each element kind: its edges and faces as lists of local node
//! numbers, the one table that gml's links and inspect's checks both read.
//!
//! The numbering is GMlib's, exactly (`ItmEdgNod` and `ItmFacNod` in `gmlib3.c`, listed in
//! `shared/reference/gmlib-internals.md` §1.5), so that gml's link `…Edg[i]` or neighbour `i`
//! is across the same edge or face as in GMlib. That includes a pyramid's base edges, which
//! GMlib numbers `{0,1}, {3,2}, {0,3}, {1,2}` (two opposite sides, then the other two), and a
//! prism's last quadrilateral, which starts at node 3 (`{3,5,2,0}`).
//!
//! Faces turn outward for a positive element: a tetrahedron `abcd` with
//! `(b-a)×(c-a)·(d-a) > 0`, and the other solids numbered as libMeshb does (base first, counter
//! clockwise seen from above, then the nodes above it in the same order). Triangle faces come
//! before quadrilateral ones, so each kind of face is a contiguous part of the list and keeps
//! its index in it. Face `i` of a tetrahedron is the one opposite node `i`.

use super::element::ElementKind;

impl ElementKind {
    /// The element's edges as pairs of local nodes, in GMlib's order (tetrahedron:
    /// `{0,1}, {1,2}, {2,0}, {3,0}, {3,1}, {3,2}`). Empty for an edge itself.
    pub fn edges(self) -> &'static [&'static [usize]] {
        match self {
            ElementKind::Edges => &[],
            ElementKind::Triangles => &[&[0, 1], &[1, 2], &[2, 0]],
            ElementKind::Quadrilaterals => &[&[0, 1], &[1, 2], &[2, 3], &[3, 0]],
            ElementKind::Tetrahedra => &[&[0, 1], &[1, 2], &[2, 0], &[3, 0], &[3, 1], &[3, 2]],
            ElementKind::Pyramids => &[
                &[0, 1],
                &[3, 2],
                &[0, 3],
                &[1, 2],
                &[0, 4],
                &[1, 4],
                &[2, 4],
                &[3, 4],
            ],
            ElementKind::Prisms => &[
                &[0, 1],
                &[1, 2],
                &[2, 0],
                &[3, 4],
                &[4, 5],
                &[5, 3],
                &[0, 3],
                &[1, 4],
                &[2, 5],
            ],
            ElementKind::Hexahedra => &[
                &[0, 1],
                &[3, 2],
                &[7, 6],
                &[4, 5],
                &[0, 3],
                &[4, 7],
                &[5, 6],
                &[1, 2],
                &[0, 4],
                &[1, 5],
                &[2, 6],
                &[3, 7],
            ],
        }
    }

    /// The faces of a solid as lists of local nodes, turning outward for a positive element,
    /// triangles first, in GMlib's order. Empty for edges and surface elements.
    pub fn faces(self) -> &'static [&'static [usize]] {
        match self {
            ElementKind::Edges | ElementKind::Triangles | ElementKind::Quadrilaterals => &[],
            ElementKind::Tetrahedra => &[&[1, 2, 3], &[2, 0, 3], &[3, 0, 1], &[0, 2, 1]],
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
                &[3, 5, 2, 0],
            ],
            ElementKind::Hexahedra => &[
                &[0, 4, 7, 3],
                &[1, 2, 6, 5],
                &[0, 1, 5, 4],
                &[3, 7, 6, 2],
                &[0, 3, 2, 1],
                &[4, 5, 6, 7],
            ],
        }
    }

    /// The triangular faces of a solid: the start of [`faces`](Self::faces), so triangle `i`
    /// is face `i`.
    pub fn triangle_faces(self) -> &'static [&'static [usize]] {
        let faces = self.faces();
        &faces[..triangle_count(faces)]
    }

    /// The quadrilateral faces of a solid: the end of [`faces`](Self::faces), so quadrilateral
    /// `i` is face `i + triangle_faces().len()`.
    pub fn quadrilateral_faces(self) -> &'static [&'static [usize]] {
        let faces = self.faces();
        &faces[triangle_count(faces)..]
    }
}

/// How many faces at the start of `faces` are triangles.
fn triangle_count(faces: &[&[usize]]) -> usize {
    faces.partition_point(|f| f.len() == 3)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use glam::DVec3;

    use super::*;

    const SOLIDS: [ElementKind; 4] = [
        ElementKind::Tetrahedra,
        ElementKind::Pyramids,
        ElementKind::Prisms,
        ElementKind::Hexahedra,
    ];

    /// A positive element of each solid kind: corners of the unit cube, and the pyramid's apex
    /// above the centre of its base.
    fn reference(kind: ElementKind) -> Vec<DVec3> {
        let cube = [
            DVec3::new(0.0, 0.0, 0.0),
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(1.0, 1.0, 0.0),
            DVec3::new(0.0, 1.0, 0.0),
            DVec3::new(0.0, 0.0, 1.0),
            DVec3::new(1.0, 0.0, 1.0),
            DVec3::new(1.0, 1.0, 1.0),
            DVec3::new(0.0, 1.0, 1.0),
        ];
        match kind {
            ElementKind::Tetrahedra => vec![cube[0], cube[1], cube[3], cube[4]],
            ElementKind::Pyramids => vec![cube[0], cube[1], cube[2], cube[3], DVec3::splat(0.5)],
            ElementKind::Prisms => vec![cube[0], cube[1], cube[3], cube[4], cube[5], cube[7]],
            ElementKind::Hexahedra => cube.to_vec(),
            _ => unreachable!("not a solid"),
        }
    }

    /// Twice the vector area of a planar polygon (Newell's method): its normal by the
    /// right-hand rule, as long as twice its area.
    fn twice_vector_area(p: &[DVec3]) -> DVec3 {
        (0..p.len()).map(|i| p[i].cross(p[(i + 1) % p.len()])).sum()
    }

    fn centroid(p: &[DVec3]) -> DVec3 {
        p.iter().sum::<DVec3>() / p.len() as f64
    }

    #[test]
    fn the_reference_tetrahedron_is_positive() {
        let [a, b, c, d] = reference(ElementKind::Tetrahedra)[..] else {
            unreachable!()
        };
        assert!((b - a).cross(c - a).dot(d - a) > 0.0);
    }

    #[test]
    fn every_face_turns_outward_on_a_positive_element() {
        for kind in SOLIDS {
            let p = reference(kind);
            let centre = centroid(&p);
            let mut closed = DVec3::ZERO;
            for (i, face) in kind.faces().iter().enumerate() {
                let corners: Vec<DVec3> = face.iter().map(|&j| p[j]).collect();
                let normal = twice_vector_area(&corners);
                let outward = centroid(&corners) - centre;
                assert!(
                    normal.dot(outward) > 0.0,
                    "{kind} face {i} {face:?} turns inward"
                );
                closed += normal;
            }
            assert!(
                closed.length() < 1e-12,
                "{kind}: faces do not close ({closed})"
            );
        }
    }

    #[test]
    fn faces_meet_along_the_edges_in_opposite_directions() {
        for kind in SOLIDS {
            let mut directed = BTreeSet::new();
            for face in kind.faces() {
                for i in 0..face.len() {
                    let edge = (face[i], face[(i + 1) % face.len()]);
                    assert!(directed.insert(edge), "{kind}: edge {edge:?} twice");
                }
            }
            for &(a, b) in &directed {
                assert!(
                    directed.contains(&(b, a)),
                    "{kind}: edge ({a}, {b}) has one face"
                );
            }
            let from_faces: BTreeSet<(usize, usize)> = directed
                .iter()
                .map(|&(a, b)| (a.min(b), a.max(b)))
                .collect();
            let edges: BTreeSet<(usize, usize)> = kind
                .edges()
                .iter()
                .map(|e| (e[0].min(e[1]), e[0].max(e[1])))
                .collect();
            assert_eq!(from_faces, edges, "{kind}: faces and edges disagree");
            assert_eq!(edges.len(), kind.edges().len(), "{kind}: repeated edge");
        }
    }

    #[test]
    fn triangles_come_first_and_the_split_keeps_every_face() {
        for kind in ElementKind::ALL {
            let (tris, quads) = (kind.triangle_faces(), kind.quadrilateral_faces());
            assert!(tris.iter().all(|f| f.len() == 3), "{kind}");
            assert!(quads.iter().all(|f| f.len() == 4), "{kind}");
            assert_eq!([tris, quads].concat(), kind.faces(), "{kind}");
        }
        assert_eq!(ElementKind::Pyramids.triangle_faces().len(), 4);
        assert_eq!(ElementKind::Prisms.quadrilateral_faces().len(), 3);
    }

    #[test]
    fn tetrahedron_face_i_is_opposite_node_i() {
        for (i, face) in ElementKind::Tetrahedra.faces().iter().enumerate() {
            assert!(!face.contains(&i), "face {i} is {face:?}");
        }
    }

    #[test]
    fn surface_elements_have_edges_and_no_faces() {
        for kind in [ElementKind::Triangles, ElementKind::Quadrilaterals] {
            assert!(kind.faces().is_empty());
            let n = kind.nodes();
            let around: Vec<Vec<usize>> = (0..n).map(|i| vec![i, (i + 1) % n]).collect();
            assert_eq!(kind.edges(), around, "{kind}");
        }
        assert!(ElementKind::Edges.edges().is_empty());
    }
}
