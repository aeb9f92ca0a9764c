//! The vertex graph of a mesh in the compressed form METIS reads (`xadj`, `adjncy`).

use crate::meshio::{ElementKind, Elements, Mesh};

use super::PartitionError;

/// The elements a mesh's graph is built from: its tetrahedra, or its triangles when it has
/// none.
pub(super) fn graph_elements(mesh: &Mesh) -> Result<&Elements, PartitionError> {
    [ElementKind::Tetrahedra, ElementKind::Triangles]
        .into_iter()
        .map(|kind| mesh.elements(kind))
        .find(|e| !e.is_empty())
        .ok_or(PartitionError::NoElements)
}

/// Vertices adjacent when they share an edge of an element (the tetrahedra of a volume mesh,
/// else the triangles), in compressed rows: vertex `v`'s neighbours are
/// `adjncy[xadj[v]..xadj[v + 1]]`, sorted, without `v` itself and without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexGraph {
    /// Row starts, one per vertex and one past the last.
    pub xadj: Vec<i32>,
    /// The neighbours, row after row.
    pub adjncy: Vec<i32>,
}

impl VertexGraph {
    /// The graph of `mesh`'s tetrahedra, or of its triangles when it has none; an error for a
    /// mesh with neither.
    pub fn of_mesh(mesh: &Mesh) -> Result<Self, PartitionError> {
        let elements = graph_elements(mesh)?;
        Self::of_elements(mesh.vertices.len(), elements.iter().map(|(nodes, _)| nodes))
    }

    /// The graph of `vertices` vertices joined by every pair of nodes of each element; an
    /// error for a node out of range.
    pub fn of_elements<'a>(
        vertices: usize,
        elements: impl Iterator<Item = &'a [u32]>,
    ) -> Result<Self, PartitionError> {
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for nodes in elements {
            if let Some(&bad) = nodes.iter().find(|&&v| v as usize >= vertices) {
                return Err(PartitionError::Invalid(format!(
                    "an element names vertex {bad} of a mesh of {vertices}"
                )));
            }
            for (i, &a) in nodes.iter().enumerate() {
                for &b in &nodes[i + 1..] {
                    if a != b {
                        pairs.push((a, b));
                        pairs.push((b, a));
                    }
                }
            }
        }
        Self::of_pairs(vertices, pairs)
    }

    /// The graph of directed `pairs` (each edge given both ways), repeats dropped.
    fn of_pairs(vertices: usize, mut pairs: Vec<(u32, u32)>) -> Result<Self, PartitionError> {
        pairs.sort_unstable();
        pairs.dedup();
        if pairs.len() > i32::MAX as usize || vertices > i32::MAX as usize {
            return Err(PartitionError::TooLarge(pairs.len().max(vertices)));
        }
        let mut xadj = vec![0i32; vertices + 1];
        for &(a, _) in &pairs {
            xadj[a as usize + 1] += 1;
        }
        for v in 0..vertices {
            xadj[v + 1] += xadj[v];
        }
        let adjncy = pairs.into_iter().map(|(_, b)| b as i32).collect();
        Ok(Self { xadj, adjncy })
    }

    /// Number of vertices.
    pub fn vertices(&self) -> usize {
        self.xadj.len().saturating_sub(1)
    }

    /// Number of edges (each counted once).
    pub fn edges(&self) -> usize {
        self.adjncy.len() / 2
    }

    /// Vertex `v`'s neighbours.
    pub fn neighbours(&self, v: usize) -> impl Iterator<Item = usize> + '_ {
        self.adjncy[self.xadj[v] as usize..self.xadj[v + 1] as usize]
            .iter()
            .map(|&u| u as usize)
    }

    /// The graph of `groups` groups, `group[v]` vertex `v`'s: two groups adjacent where any
    /// of their vertices are.
    pub fn contract(&self, group: &[u32], groups: usize) -> Result<Self, PartitionError> {
        let mut pairs = Vec::new();
        for v in 0..self.vertices() {
            let a = group[v];
            for u in self.neighbours(v) {
                let b = group[u];
                if a != b {
                    pairs.push((a, b));
                }
            }
        }
        Self::of_pairs(groups, pairs)
    }
}
