//! The mesh kinds gml loops over and links between, with GMlib's short names.

use std::fmt;

use crate::meshio::ElementKind;

/// A kind of mesh entity: vertices or one of the element kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MeshKind {
    /// Points with coordinates.
    Vertices,
    /// Two-node segments.
    Edges,
    /// Three-node triangles.
    Triangles,
    /// Four-node quadrilaterals.
    Quadrilaterals,
    /// Four-node tetrahedra.
    Tetrahedra,
    /// Five-node pyramids.
    Pyramids,
    /// Six-node prisms.
    Prisms,
    /// Eight-node hexahedra.
    Hexahedra,
}

impl MeshKind {
    /// Every kind, vertices first, in GMlib's order.
    pub const ALL: [MeshKind; 8] = [
        MeshKind::Vertices,
        MeshKind::Edges,
        MeshKind::Triangles,
        MeshKind::Quadrilaterals,
        MeshKind::Tetrahedra,
        MeshKind::Pyramids,
        MeshKind::Prisms,
        MeshKind::Hexahedra,
    ];

    /// GMlib's three-letter name, the prefix of generated variables (`Ver`, `Tri`, `Tet`, …).
    pub fn short(self) -> &'static str {
        match self {
            Self::Vertices => "Ver",
            Self::Edges => "Edg",
            Self::Triangles => "Tri",
            Self::Quadrilaterals => "Qad",
            Self::Tetrahedra => "Tet",
            Self::Pyramids => "Pyr",
            Self::Prisms => "Pri",
            Self::Hexahedra => "Hex",
        }
    }

    /// Topological dimension: 0 for vertices, 1 for edges, 2 for faces, 3 for solids.
    pub fn dimension(self) -> u8 {
        match self {
            Self::Vertices => 0,
            Self::Edges => 1,
            Self::Triangles | Self::Quadrilaterals => 2,
            _ => 3,
        }
    }

    /// Number of vertices of one entity (1 for a vertex).
    pub fn nodes(self) -> usize {
        match self.element() {
            None => 1,
            Some(e) => e.nodes(),
        }
    }

    /// Width of the OpenCL int vector holding an element's nodes (2, 4 or 8), as GMlib stores
    /// them; unused lanes hold the first node.
    pub fn node_vector_width(self) -> usize {
        self.nodes().next_power_of_two().max(2)
    }

    /// The file element kind, `None` for vertices.
    pub fn element(self) -> Option<ElementKind> {
        Some(match self {
            Self::Vertices => return None,
            Self::Edges => ElementKind::Edges,
            Self::Triangles => ElementKind::Triangles,
            Self::Quadrilaterals => ElementKind::Quadrilaterals,
            Self::Tetrahedra => ElementKind::Tetrahedra,
            Self::Pyramids => ElementKind::Pyramids,
            Self::Prisms => ElementKind::Prisms,
            Self::Hexahedra => ElementKind::Hexahedra,
        })
    }

    /// The gml kind of a file element kind.
    pub fn from_element(kind: ElementKind) -> Self {
        match kind {
            ElementKind::Edges => Self::Edges,
            ElementKind::Triangles => Self::Triangles,
            ElementKind::Quadrilaterals => Self::Quadrilaterals,
            ElementKind::Tetrahedra => Self::Tetrahedra,
            ElementKind::Pyramids => Self::Pyramids,
            ElementKind::Prisms => Self::Prisms,
            ElementKind::Hexahedra => Self::Hexahedra,
        }
    }

    /// Lowercase plural name (`vertices`, `tetrahedra`, …).
    pub fn name(self) -> &'static str {
        match self.element() {
            None => "vertices",
            Some(e) => e.name(),
        }
    }

    /// Local node lists of the sub-entities of kind `sub` inside one entity of this kind, in
    /// GMlib's order: [`ElementKind::edges`] for edges, [`ElementKind::triangle_faces`] and
    /// [`ElementKind::quadrilateral_faces`] for faces (those of a tetrahedron opposite each
    /// vertex, outward for positively oriented solids). Index `i` in this list is the local
    /// number `i` of gml's links: `…Edg[i]`, `…Tri[i]`, and the neighbour across face `i`.
    /// Empty when `sub` is not a sub-entity kind of this one.
    pub fn sub_entities(self, sub: MeshKind) -> &'static [&'static [usize]] {
        let Some(element) = self.element() else {
            return &[];
        };
        match sub {
            MeshKind::Edges => element.edges(),
            MeshKind::Triangles => element.triangle_faces(),
            MeshKind::Quadrilaterals => element.quadrilateral_faces(),
            _ => &[],
        }
    }
}

impl fmt::Display for MeshKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gml's local numbering as it was first written here, before the table moved to
    /// `meshio::topology`: GMlib's `ItmEdgNod`/`ItmFacNod`, but for a pyramid's edges and the
    /// start of a prism's last quadrilateral. Kernels index links by it, so it must not move.
    fn pinned(kind: MeshKind, sub: MeshKind) -> &'static [&'static [usize]] {
        use MeshKind::*;
        match (kind, sub) {
            (Triangles, Edges) => &[&[0, 1], &[1, 2], &[2, 0]],
            (Quadrilaterals, Edges) => &[&[0, 1], &[1, 2], &[2, 3], &[3, 0]],
            (Tetrahedra, Edges) => &[&[0, 1], &[1, 2], &[2, 0], &[3, 0], &[3, 1], &[3, 2]],
            (Pyramids, Edges) => &[
                &[0, 1],
                &[1, 2],
                &[2, 3],
                &[3, 0],
                &[0, 4],
                &[1, 4],
                &[2, 4],
                &[3, 4],
            ],
            (Prisms, Edges) => &[
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
            (Hexahedra, Edges) => &[
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
            (Tetrahedra, Triangles) => &[&[1, 2, 3], &[2, 0, 3], &[3, 0, 1], &[0, 2, 1]],
            (Pyramids, Triangles) => &[&[0, 1, 4], &[1, 2, 4], &[2, 3, 4], &[3, 0, 4]],
            (Pyramids, Quadrilaterals) => &[&[3, 2, 1, 0]],
            (Prisms, Triangles) => &[&[0, 2, 1], &[3, 4, 5]],
            (Prisms, Quadrilaterals) => &[&[0, 1, 4, 3], &[1, 2, 5, 4], &[2, 0, 3, 5]],
            (Hexahedra, Quadrilaterals) => &[
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

    #[test]
    fn sub_entities_keep_the_local_numbering_kernels_use() {
        for kind in MeshKind::ALL {
            for sub in MeshKind::ALL {
                assert_eq!(kind.sub_entities(sub), pinned(kind, sub), "{kind} -> {sub}");
            }
        }
    }
}
