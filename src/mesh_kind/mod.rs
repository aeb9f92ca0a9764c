//! The kinds of mesh entity (vertices and the element kinds) with GMlib's short names, their
//! local numbering (an element's edges and faces, its sides) and which kinds link to which;
//! [`uplink`] holds the widths of the uplink tables between them.
//!
//! gml loops over these kinds and links between them, renumbering sorts their entities for
//! gml's tables: both use the kinds and their tables, so they live here, importing neither
//! (`snowsim::gml::MeshKind` re-exports [`MeshKind`]).

use std::fmt;

use crate::meshio::ElementKind;

pub mod uplink;

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

impl MeshKind {
    /// The sides of one entity: its sub-entities of one dimension less, as local node lists in
    /// GMlib's order. Two entities of one dimension are neighbours when they share a side
    /// (GMlib's `NgbTyp`): an edge's two vertices (`[0]`, `[1]`), a surface element's edges, a
    /// solid's faces, triangles first (a pyramid's four triangles then its base, a prism's two
    /// triangles then its three quadrilaterals), so side `i` of a solid is face `i` of
    /// [`ElementKind::faces`]. Empty for vertices.
    pub fn sides(self) -> &'static [&'static [usize]] {
        match self {
            Self::Vertices => &[],
            Self::Edges => &[&[0], &[1]],
            Self::Triangles | Self::Quadrilaterals => self.sub_entities(Self::Edges),
            _ => self.element().map_or(&[], ElementKind::faces),
        }
    }

    /// The sides of this kind that an entity of `to` (same dimension) can share, as indices
    /// into [`sides`](Self::sides): all of them when `to` is this kind, those whose node count
    /// is that of a side of `to` otherwise (a pyramid's four triangles towards tetrahedra, its
    /// base towards hexahedra). Entry `i` of the default link from this kind to `to` is the
    /// entity across side `transverse_sides(to)[i]`; GMlib's widths (`NmbTpoLnk`). Empty for
    /// kinds of other dimensions and for kinds that share no side (tetrahedra and hexahedra).
    pub fn transverse_sides(self, to: MeshKind) -> Vec<usize> {
        if self.dimension() != to.dimension() {
            return Vec::new();
        }
        let sizes: Vec<usize> = to.sides().iter().map(|s| s.len()).collect();
        self.sides()
            .iter()
            .enumerate()
            .filter(|(_, s)| sizes.contains(&s.len()))
            .map(|(i, _)| i)
            .collect()
    }

    /// Whether an entity of this kind can be linked to entities of `to` through the mesh:
    /// itself; downward to its vertices, edges or faces; upward to the entities it is a vertex,
    /// edge or face of; across to entities of its dimension sharing a side. Quadrilaterals
    /// are never faces of tetrahedra, triangles never faces of hexahedra, and tetrahedra and
    /// hexahedra share no face: those links (GMlib's zeros in `NmbTpoLnk`) do not exist.
    pub fn links_to(self, to: MeshKind) -> bool {
        use std::cmp::Ordering::*;
        match self.dimension().cmp(&to.dimension()) {
            _ if self == to => true,
            Greater => to == Self::Vertices || !self.sub_entities(to).is_empty(),
            Less => self == Self::Vertices || !to.sub_entities(self).is_empty(),
            Equal => !self.transverse_sides(to).is_empty(),
        }
    }
}

/// Why there is no link from `from` to `to` (meant for pairs where
/// [`MeshKind::links_to`] is false).
pub(crate) fn no_link_reason(from: MeshKind, to: MeshKind) -> String {
    let sides = |k: MeshKind| -> &'static str {
        match k {
            MeshKind::Tetrahedra => "only triangular faces",
            MeshKind::Hexahedra => "only quadrilateral faces",
            _ => "sides of both kinds",
        }
    };
    let singular = |k: MeshKind| match k {
        MeshKind::Triangles => "a triangle",
        MeshKind::Quadrilaterals => "a quadrilateral",
        MeshKind::Tetrahedra => "a tetrahedron",
        MeshKind::Hexahedra => "a hexahedron",
        MeshKind::Pyramids => "a pyramid",
        MeshKind::Prisms => "a prism",
        MeshKind::Edges => "an edge",
        MeshKind::Vertices => "a vertex",
    };
    use std::cmp::Ordering::*;
    match from.dimension().cmp(&to.dimension()) {
        Less => format!(
            "{from} are never faces of {to} ({} has {})",
            singular(to),
            sides(to)
        ),
        Greater => format!(
            "{to} are never faces of {from} ({} has {})",
            singular(from),
            sides(from)
        ),
        Equal => format!(
            "{from} and {to} share no face ({} has {}, {} has {})",
            singular(from),
            sides(from),
            singular(to),
            sides(to)
        ),
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

    /// GMlib's local numbering, copied from its tables `ItmEdgNod` and `ItmFacNod` in
    /// `gmlib3.c` (GMlib master b0fb92e; `shared/reference/gmlib-internals.md` §1.5): the
    /// manual's links (`…Edg[i]`, `…Tri[i]`, neighbour `i`) follow it, so gml must too. A
    /// pyramid's base edges are `{0,1}, {3,2}, {0,3}, {1,2}` and a prism's last quadrilateral
    /// is `{3,5,2,0}`, as there (gml had `{0,1}, {1,2}, {2,3}, {3,0}` and `{2,0,3,5}` before).
    fn pinned(kind: MeshKind, sub: MeshKind) -> &'static [&'static [usize]] {
        use MeshKind::*;
        match (kind, sub) {
            (Triangles, Edges) => &[&[0, 1], &[1, 2], &[2, 0]],
            (Quadrilaterals, Edges) => &[&[0, 1], &[1, 2], &[2, 3], &[3, 0]],
            (Tetrahedra, Edges) => &[&[0, 1], &[1, 2], &[2, 0], &[3, 0], &[3, 1], &[3, 2]],
            (Pyramids, Edges) => &[
                &[0, 1],
                &[3, 2],
                &[0, 3],
                &[1, 2],
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
            (Prisms, Quadrilaterals) => &[&[0, 1, 4, 3], &[1, 2, 5, 4], &[3, 5, 2, 0]],
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

    /// GMlib's `NmbTpoLnk`: how many entities of the second kind one entity of the first
    /// reaches through the mesh (rows and columns Ver, Edg, Tri, Qad, Tet, Pyr, Pri, Hex), 0
    /// where no link exists. Vertices and edges are GMlib's own special cases (a row of 1s
    /// for vertices, 1 for edges upward); triangles and quadrilaterals, which GMlib leaves
    /// unlinked (0), share edges in gml.
    const NMB_TPO_LNK: [[usize; 8]; 8] = [
        [1, 1, 1, 1, 1, 1, 1, 1],
        [2, 2, 1, 1, 1, 1, 1, 1],
        [3, 3, 3, 0, 2, 2, 2, 0],
        [4, 4, 0, 4, 0, 2, 2, 2],
        [4, 6, 4, 0, 4, 4, 4, 0],
        [5, 8, 4, 1, 4, 5, 5, 1],
        [6, 9, 2, 3, 2, 5, 5, 3],
        [8, 12, 0, 6, 0, 6, 6, 6],
    ];

    #[test]
    fn links_exist_where_gmlib_has_them_with_its_widths() {
        for (i, from) in MeshKind::ALL.into_iter().enumerate() {
            for (j, to) in MeshKind::ALL.into_iter().enumerate() {
                let gmlib = NMB_TPO_LNK[i][j];
                let pair = (from.short(), to.short());
                match (from.dimension(), to.dimension()) {
                    (a, b) if a > b && to != MeshKind::Vertices => {
                        assert_eq!(from.sub_entities(to).len(), gmlib, "{pair:?}");
                    }
                    (a, b) if a > b => assert_eq!(from.nodes(), gmlib, "{pair:?}"),
                    (a, b) if a == b && from != MeshKind::Vertices => {
                        let ours = from.transverse_sides(to).len();
                        if matches!(pair, ("Tri", "Qad") | ("Qad", "Tri")) {
                            assert_eq!((gmlib, ours), (0, from.nodes()), "{pair:?}");
                        } else {
                            assert_eq!(ours, gmlib, "{pair:?}");
                        }
                    }
                    _ => {}
                }
                let gmlib_links = gmlib != 0 || matches!(pair, ("Tri", "Qad") | ("Qad", "Tri"));
                assert_eq!(from.links_to(to), gmlib_links, "{pair:?}");
            }
        }
        // The impossible uplinks of the issue, and one that exists.
        assert!(!MeshKind::Quadrilaterals.links_to(MeshKind::Tetrahedra));
        assert!(!MeshKind::Triangles.links_to(MeshKind::Hexahedra));
        assert!(MeshKind::Triangles.links_to(MeshKind::Pyramids));
        assert_eq!(
            MeshKind::Pyramids.transverse_sides(MeshKind::Hexahedra),
            [4]
        );
        assert_eq!(
            MeshKind::Prisms.transverse_sides(MeshKind::Tetrahedra),
            [0, 1]
        );
        assert_eq!(MeshKind::Edges.sides(), [&[0usize][..], &[1]]);
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
