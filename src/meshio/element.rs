//! Element kinds and the flat storage of one kind's elements.

use std::fmt;

/// The element kinds a mesh file can hold, each with a fixed number of nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementKind {
    /// Segments, 2 nodes (keyword `Edges`, code 5).
    Edges,
    /// Triangles, 3 nodes (code 6).
    Triangles,
    /// Quadrilaterals, 4 nodes (code 7).
    Quadrilaterals,
    /// Tetrahedra, 4 nodes (code 8).
    Tetrahedra,
    /// Pyramids, 5 nodes (code 49).
    Pyramids,
    /// Prisms, 6 nodes (code 9).
    Prisms,
    /// Hexahedra, 8 nodes (code 10).
    Hexahedra,
}

impl ElementKind {
    /// Every kind, by topological dimension then number of nodes.
    pub const ALL: [ElementKind; 7] = [
        ElementKind::Edges,
        ElementKind::Triangles,
        ElementKind::Quadrilaterals,
        ElementKind::Tetrahedra,
        ElementKind::Pyramids,
        ElementKind::Prisms,
        ElementKind::Hexahedra,
    ];

    /// Number of nodes of one element: 2, 3, 4, 4, 5, 6, 8.
    pub fn nodes(self) -> usize {
        match self {
            ElementKind::Edges => 2,
            ElementKind::Triangles => 3,
            ElementKind::Quadrilaterals | ElementKind::Tetrahedra => 4,
            ElementKind::Pyramids => 5,
            ElementKind::Prisms => 6,
            ElementKind::Hexahedra => 8,
        }
    }

    /// Lower-case plural name, e.g. `"tetrahedra"`.
    pub fn name(self) -> &'static str {
        match self {
            ElementKind::Edges => "edges",
            ElementKind::Triangles => "triangles",
            ElementKind::Quadrilaterals => "quadrilaterals",
            ElementKind::Tetrahedra => "tetrahedra",
            ElementKind::Pyramids => "pyramids",
            ElementKind::Prisms => "prisms",
            ElementKind::Hexahedra => "hexahedra",
        }
    }

    /// The keyword as spelled in files, e.g. `"Tetrahedra"`.
    pub fn keyword(self) -> &'static str {
        match self {
            ElementKind::Edges => "Edges",
            ElementKind::Triangles => "Triangles",
            ElementKind::Quadrilaterals => "Quadrilaterals",
            ElementKind::Tetrahedra => "Tetrahedra",
            ElementKind::Pyramids => "Pyramids",
            ElementKind::Prisms => "Prisms",
            ElementKind::Hexahedra => "Hexahedra",
        }
    }

    /// The libMeshb keyword code.
    pub fn code(self) -> i32 {
        match self {
            ElementKind::Edges => 5,
            ElementKind::Triangles => 6,
            ElementKind::Quadrilaterals => 7,
            ElementKind::Tetrahedra => 8,
            ElementKind::Prisms => 9,
            ElementKind::Hexahedra => 10,
            ElementKind::Pyramids => 49,
        }
    }

    /// The kind whose libMeshb keyword code is `code`, if any.
    pub fn from_code(code: i32) -> Option<ElementKind> {
        ElementKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// Topological dimension: 1 for edges, 2 for surface elements, 3 for volume elements.
    pub fn topological_dimension(self) -> u8 {
        match self {
            ElementKind::Edges => 1,
            ElementKind::Triangles | ElementKind::Quadrilaterals => 2,
            ElementKind::Tetrahedra
            | ElementKind::Pyramids
            | ElementKind::Prisms
            | ElementKind::Hexahedra => 3,
        }
    }

    /// Position of the kind in [`ElementKind::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ElementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// All elements of one kind: node indices (0-based, flattened, [`ElementKind::nodes`] per
/// element) and one reference per element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elements {
    kind: ElementKind,
    nodes: Vec<u32>,
    refs: Vec<i32>,
}

impl Elements {
    /// No elements of `kind`.
    pub fn new(kind: ElementKind) -> Elements {
        Elements {
            kind,
            nodes: Vec::new(),
            refs: Vec::new(),
        }
    }

    /// Builds from flattened nodes and references; the caller guarantees
    /// `nodes.len() == refs.len() * kind.nodes()`.
    pub(crate) fn from_parts(kind: ElementKind, nodes: Vec<u32>, refs: Vec<i32>) -> Elements {
        debug_assert_eq!(nodes.len(), refs.len() * kind.nodes());
        Elements { kind, nodes, refs }
    }

    /// The element kind.
    pub fn kind(&self) -> ElementKind {
        self.kind
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// The 0-based node indices of element `i`.
    ///
    /// # Panics
    /// If `i >= self.len()`, like slice indexing; see [`Elements::get`] for a checked version.
    pub fn nodes(&self, i: usize) -> &[u32] {
        let n = self.kind.nodes();
        &self.nodes[i * n..(i + 1) * n]
    }

    /// Element `i` as (nodes, reference), or `None` if `i >= self.len()`.
    pub fn get(&self, i: usize) -> Option<(&[u32], i32)> {
        let n = self.kind.nodes();
        let r = *self.refs.get(i)?;
        Some((self.nodes.get(i * n..(i + 1) * n)?, r))
    }

    /// All node indices, flattened: element `i` is `[i * nodes .. (i + 1) * nodes]`.
    pub fn node_slice(&self) -> &[u32] {
        &self.nodes
    }

    /// One reference per element.
    pub fn refs(&self) -> &[i32] {
        &self.refs
    }

    /// Appends an element.
    ///
    /// # Panics
    /// If `nodes.len()` differs from [`ElementKind::nodes`]: a programming error, never caused
    /// by file content (the readers build elements without this method).
    pub fn push(&mut self, nodes: &[u32], reference: i32) {
        assert_eq!(
            nodes.len(),
            self.kind.nodes(),
            "{} take {} nodes",
            self.kind.name(),
            self.kind.nodes()
        );
        self.nodes.extend_from_slice(nodes);
        self.refs.push(reference);
    }

    /// Reserves room for `additional` more elements.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes
            .reserve(additional.saturating_mul(self.kind.nodes()));
        self.refs.reserve(additional);
    }

    /// Every element as a fixed-size array of its `N` nodes with its reference (`N` must be
    /// the kind's node count; elements of another size are padded with 0 or cut).
    pub fn with_refs<const N: usize>(&self) -> Vec<([u32; N], i32)> {
        self.iter()
            .map(|(nodes, r)| {
                let mut fixed = [0u32; N];
                for (slot, &n) in fixed.iter_mut().zip(nodes) {
                    *slot = n;
                }
                (fixed, r)
            })
            .collect()
    }

    /// Iterates over (nodes, reference) of every element.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u32], i32)> + '_ {
        self.nodes
            .chunks_exact(self.kind.nodes())
            .zip(self.refs.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_tables_agree() {
        let nodes: Vec<usize> = ElementKind::ALL.iter().map(|k| k.nodes()).collect();
        assert_eq!(nodes, [2, 3, 4, 4, 5, 6, 8]);
        let codes: Vec<i32> = ElementKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes, [5, 6, 7, 8, 49, 9, 10]);
        let dims: Vec<u8> = ElementKind::ALL
            .iter()
            .map(|k| k.topological_dimension())
            .collect();
        assert_eq!(dims, [1, 2, 2, 3, 3, 3, 3]);
        for (i, k) in ElementKind::ALL.into_iter().enumerate() {
            assert_eq!(k.index(), i);
            assert_eq!(ElementKind::from_code(k.code()), Some(k));
            assert_eq!(k.keyword().to_lowercase(), k.name());
        }
        assert_eq!(ElementKind::from_code(4), None);
    }

    #[test]
    fn push_get_iter() {
        let mut e = Elements::new(ElementKind::Triangles);
        assert!(e.is_empty());
        e.push(&[0, 1, 2], 7);
        e.push(&[2, 1, 3], -1);
        assert_eq!(e.len(), 2);
        assert_eq!(e.nodes(1), &[2, 1, 3]);
        assert_eq!(e.get(0), Some((&[0u32, 1, 2][..], 7)));
        assert_eq!(e.get(2), None);
        assert_eq!(e.node_slice(), &[0, 1, 2, 2, 1, 3]);
        assert_eq!(e.refs(), &[7, -1]);
        let all: Vec<(Vec<u32>, i32)> = e.iter().map(|(n, r)| (n.to_vec(), r)).collect();
        assert_eq!(all, vec![(vec![0, 1, 2], 7), (vec![2, 1, 3], -1)]);
    }

    #[test]
    #[should_panic(expected = "triangles take 3 nodes")]
    fn push_wrong_arity_panics() {
        Elements::new(ElementKind::Triangles).push(&[0, 1], 0);
    }
}
