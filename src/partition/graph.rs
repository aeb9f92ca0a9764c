//! The vertex graph of a mesh in compressed sparse rows (CSR), as METIS takes it.
//!
//! Two vertices are adjacent when they share an edge of a tetrahedron; a surface or planar
//! mesh without tetrahedra uses its triangles' edges instead. These are the vertices a vertex
//! kernel reads around a vertex, so an edge of this graph between two parts is a value that
//! must cross between their ranks.

use crate::gml::topology::vertex_ball;
use crate::mesh_kind::MeshKind;
use crate::meshio::{ElementKind, Elements, Mesh};

use super::PartitionError;

/// The elements whose edges connect a mesh's vertices: its tetrahedra, else its triangles.
///
/// Both the graph and a part's working set ([`HaloPlan`](super::HaloPlan)) are made of them,
/// so the two always agree on what is adjacent.
pub fn connecting_elements(mesh: &Mesh) -> Result<&Elements, PartitionError> {
    [ElementKind::Tetrahedra, ElementKind::Triangles]
        .into_iter()
        .map(|kind| mesh.elements(kind))
        .find(|elements| !elements.is_empty())
        .ok_or(PartitionError::NoElements {
            vertices: mesh.vertices.len(),
        })
}

/// A graph in CSR form: the neighbours of vertex `v` are `adjncy[xadj[v]..xadj[v + 1]]`,
/// ascending, without `v` itself and without repeats (each edge is stored in both rows).
///
/// Indices are `i32`, METIS's `idx_t`, so the graph is handed to METIS without a copy; the
/// constructors check that they fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexGraph {
    /// Row starts, one per vertex and one past the end: `xadj[0] = 0`,
    /// `xadj[n] = adjncy.len()`.
    pub xadj: Vec<i32>,
    /// The neighbours of every vertex, row after row.
    pub adjncy: Vec<i32>,
}

impl VertexGraph {
    /// The vertex graph of `mesh`: vertices adjacent when they share an edge of a tetrahedron
    /// (of a triangle when the mesh has no tetrahedra). Vertices in no element have no
    /// neighbours.
    pub fn of_mesh(mesh: &Mesh) -> Result<Self, PartitionError> {
        let elements = connecting_elements(mesh)?;
        let vertices = mesh.vertices.len();
        fits("the vertex count", vertices)?;
        let nodes = elements.kind().nodes();
        let kind = elements.kind().name();
        if let Some(at) = elements
            .node_slice()
            .iter()
            .position(|&v| v as usize >= vertices)
        {
            return Err(PartitionError::BadVertex {
                kind,
                element: at / nodes,
                vertex: elements.node_slice()[at],
                vertices,
            });
        }
        // The elements around each vertex (gml's vertex balls; the nodes, checked below
        // `vertices`, which fits an i32, read as i32 in place), then each vertex's row from
        // them: every other node of a tetrahedron or triangle shares an edge with it.
        let ball = vertex_ball(
            vertices,
            MeshKind::from_element(elements.kind()),
            bytemuck::cast_slice(elements.node_slice()),
        );
        let mut xadj = Vec::with_capacity(vertices + 1);
        let mut adjncy: Vec<i32> = Vec::new();
        xadj.push(0);
        let mut mark = vec![u32::MAX; vertices];
        for v in 0..vertices {
            let start = adjncy.len();
            for &e in &ball.elements[ball.offsets[v]..ball.offsets[v + 1]] {
                for &u in elements.nodes(e as usize) {
                    if u as usize != v && mark[u as usize] != v as u32 {
                        mark[u as usize] = v as u32;
                        adjncy.push(u as i32);
                    }
                }
            }
            adjncy[start..].sort_unstable();
            xadj.push(fits("the adjacency list's length", adjncy.len())?);
        }
        Ok(Self { xadj, adjncy })
    }

    /// A graph from rows of neighbours (each row ascending, no self loop, no repeat, every
    /// edge in both rows: the caller's promise, checked in debug builds).
    pub(crate) fn from_rows(rows: Vec<Vec<i32>>) -> Result<Self, PartitionError> {
        fits("the vertex count", rows.len())?;
        let mut xadj = Vec::with_capacity(rows.len() + 1);
        xadj.push(0);
        let mut adjncy = Vec::new();
        for row in rows {
            debug_assert!(row.windows(2).all(|w| w[0] < w[1]));
            adjncy.extend(row);
            xadj.push(fits("the adjacency list's length", adjncy.len())?);
        }
        Ok(Self { xadj, adjncy })
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.xadj.len().saturating_sub(1)
    }

    /// Number of edges (each counted once).
    pub fn edge_count(&self) -> usize {
        self.adjncy.len() / 2
    }

    /// The neighbours of vertex `v`, ascending.
    pub fn neighbours(&self, v: usize) -> &[i32] {
        &self.adjncy[self.xadj[v] as usize..self.xadj[v + 1] as usize]
    }

    /// Every edge once, as `(u, v)` with `u < v`.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.vertex_count()).flat_map(move |u| {
            self.neighbours(u)
                .iter()
                .map(|&v| v as usize)
                .filter(move |&v| u < v)
                .map(move |v| (u, v))
        })
    }
}

/// `n` as METIS's `idx_t`, or the error naming `what`.
pub(crate) fn fits(what: &'static str, n: usize) -> Result<i32, PartitionError> {
    i32::try_from(n).map_err(|_| PartitionError::TooLarge {
        what,
        count: n as u64,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::meshio::generate::tet_grid;

    /// Every pair of distinct nodes of every element, both ways, by brute force.
    fn brute(mesh: &Mesh, kind: ElementKind) -> Vec<BTreeSet<i32>> {
        let mut rows = vec![BTreeSet::new(); mesh.vertices.len()];
        for (nodes, _) in mesh.elements(kind).iter() {
            for &a in nodes {
                for &b in nodes {
                    if a != b {
                        rows[a as usize].insert(b as i32);
                    }
                }
            }
        }
        rows
    }

    fn rows(graph: &VertexGraph) -> Vec<BTreeSet<i32>> {
        (0..graph.vertex_count())
            .map(|v| {
                let row = graph.neighbours(v);
                assert!(row.windows(2).all(|w| w[0] < w[1]), "row {v}: {row:?}");
                row.iter().copied().collect()
            })
            .collect()
    }

    #[test]
    fn the_graph_of_two_tetrahedra_is_every_shared_edge_once() {
        // Two tetrahedra sharing face 1-2-3, and a vertex (5) in no element.
        let mut mesh = Mesh::new(3);
        for p in [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [1.0, 1.0, 1.0],
            [5.0, 5.0, 5.0],
        ] {
            mesh.push_vertex(p, 0);
        }
        let tets = mesh.elements_mut(ElementKind::Tetrahedra);
        tets.push(&[0, 1, 2, 3], 1);
        tets.push(&[1, 2, 3, 4], 1);
        // A triangle, ignored because there are tetrahedra.
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[0, 4, 5], 1);
        let graph = VertexGraph::of_mesh(&mesh).unwrap();
        assert_eq!(graph.xadj, vec![0, 3, 7, 11, 15, 18, 18]);
        assert_eq!(
            graph.adjncy,
            vec![1, 2, 3, 0, 2, 3, 4, 0, 1, 3, 4, 0, 1, 2, 4, 1, 2, 3]
        );
        assert_eq!(graph.edge_count(), 9);
        assert_eq!(rows(&graph), brute(&mesh, ElementKind::Tetrahedra));
    }

    #[test]
    fn the_graph_of_a_generated_mesh_equals_brute_force() {
        let mesh = tet_grid([4, 3, 5]);
        let graph = VertexGraph::of_mesh(&mesh).unwrap();
        assert_eq!(rows(&graph), brute(&mesh, ElementKind::Tetrahedra));
        let edges: Vec<_> = graph.edges().collect();
        assert_eq!(edges.len(), graph.edge_count());
        assert!(edges.iter().all(|&(u, v)| u < v));
    }

    #[test]
    fn a_surface_mesh_uses_its_triangles_and_an_empty_one_is_an_error() {
        let mut mesh = Mesh::new(2);
        for p in [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [1.0, 1.0, 0.0],
        ] {
            mesh.push_vertex(p, 0);
        }
        let err = VertexGraph::of_mesh(&mesh).unwrap_err();
        assert_eq!(err, PartitionError::NoElements { vertices: 4 });
        assert!(err.to_string().contains("no tetrahedra and no triangles"));
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[0, 1, 2], 1);
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[1, 3, 2], 1);
        let graph = VertexGraph::of_mesh(&mesh).unwrap();
        assert_eq!(rows(&graph), brute(&mesh, ElementKind::Triangles));
        assert_eq!(graph.edge_count(), 5);
        // A node past the vertices is an error, not a panic.
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[1, 9, 2], 1);
        assert!(matches!(
            VertexGraph::of_mesh(&mesh),
            Err(PartitionError::BadVertex {
                element: 2,
                vertex: 9,
                ..
            })
        ));
    }
}
