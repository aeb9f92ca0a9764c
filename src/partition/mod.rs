//! Partitioning a mesh for runs over several ranks (issue "Beyond one machine"): the mesh's
//! vertex graph ([`VertexGraph`]), its k-way partition by METIS (through the `metis` crate,
//! with vertex weights: [`partition_vertices`]), a terrain-following mesh partitioned by whole
//! columns ([`partition_columns`]: the columns' graph is partitioned, each vertex follows its
//! column, so a column's regrade and its drift stay on one rank), and what a partition costs
//! ([`PartitionReport`]: edge cut, balance, each part's working set and halo).
//!
//! Owner computes: a part owns its vertices; it works on the elements that hold at least one
//! of them, and the other vertices of those elements are its halo, whose values its
//! neighbours send it. The edge cut (graph edges between two parts) counts what a vertex
//! kernel's exchange moves; the halo what a rank stores and receives per exchange.

mod graph;
mod report;

use thiserror::Error;

pub use graph::VertexGraph;
pub use report::{PartReport, PartitionReport};

/// Why a mesh cannot be partitioned.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PartitionError {
    /// Zero parts asked for.
    #[error("--parts 0: a partition needs at least one part")]
    NoParts,
    /// More parts than there are things to share out.
    #[error("--parts {parts}: more parts than the {count} {what} to share out")]
    TooManyParts {
        /// Parts asked for.
        parts: usize,
        /// What there is.
        count: usize,
        /// What is shared out: vertices or columns.
        what: &'static str,
    },
    /// The mesh has nothing to build a graph from.
    #[error("the mesh has no tetrahedra and no triangles: there is no graph to partition")]
    NoElements,
    /// A column list or an element that does not fit the mesh.
    #[error("{0}")]
    Invalid(String),
    /// More vertices or edges than METIS's 32-bit indices hold.
    #[error("the graph has {0} entries, more than METIS's 32-bit indices hold")]
    TooLarge(usize),
    /// METIS itself failed.
    #[error("METIS failed: {0}")]
    Metis(String),
}

/// The owner part of every vertex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Number of parts.
    pub parts: usize,
    /// Per vertex, its part (`0..parts`).
    pub owner: Vec<u32>,
}

/// Partitions `graph`'s vertices into `parts` by METIS's k-way, each vertex weighing
/// `weights[v]` (1 each when `None`): the parts' weights balanced within METIS's default
/// tolerance (3 %), the edge cut made small. Deterministic (a fixed seed). One part needs no
/// METIS.
pub fn partition_vertices(
    graph: &VertexGraph,
    weights: Option<&[i32]>,
    parts: usize,
) -> Result<Partition, PartitionError> {
    let owner = kway(graph, weights, parts, "vertices")?;
    Ok(Partition { parts, owner })
}

/// Partitions a terrain-following mesh by whole columns: `column[v]` is vertex `v`'s column
/// (`0..columns`); the columns' graph (two columns adjacent where any of their vertices are),
/// each column weighing its vertices, is partitioned into `parts`, and every vertex takes its
/// column's part.
pub fn partition_columns(
    graph: &VertexGraph,
    column: &[u32],
    parts: usize,
) -> Result<Partition, PartitionError> {
    if column.len() != graph.vertices() {
        return Err(PartitionError::Invalid(format!(
            "{} column indices for {} vertices",
            column.len(),
            graph.vertices()
        )));
    }
    let columns = column.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    let mut weight = vec![0i32; columns];
    for &c in column {
        weight[c as usize] += 1;
    }
    if let Some(c) = weight.iter().position(|&w| w == 0) {
        return Err(PartitionError::Invalid(format!(
            "column {c} of {columns} has no vertex"
        )));
    }
    let contracted = graph.contract(column, columns)?;
    let by_column = kway(&contracted, Some(&weight), parts, "columns")?;
    Ok(Partition {
        parts,
        owner: column.iter().map(|&c| by_column[c as usize]).collect(),
    })
}

/// METIS k-way on `graph` into `parts`; `what` names the graph's vertices in errors.
fn kway(
    graph: &VertexGraph,
    weights: Option<&[i32]>,
    parts: usize,
    what: &'static str,
) -> Result<Vec<u32>, PartitionError> {
    let n = graph.vertices();
    if parts == 0 {
        return Err(PartitionError::NoParts);
    }
    if parts > n {
        return Err(PartitionError::TooManyParts {
            parts,
            count: n,
            what,
        });
    }
    if parts == 1 {
        return Ok(vec![0; n]);
    }
    let nparts = i32::try_from(parts).map_err(|_| PartitionError::TooLarge(parts))?;
    let mut part = vec![0 as metis::Idx; n];
    let mut metis_graph = metis::Graph::new(1, nparts, &graph.xadj, &graph.adjncy)
        .map_err(|e| PartitionError::Metis(e.to_string()))?
        .set_option(metis::option::Seed(1));
    if let Some(w) = weights {
        metis_graph = metis_graph.set_vwgt(w);
    }
    metis_graph
        .part_kway(&mut part)
        .map_err(|e| PartitionError::Metis(format!("{e:?}")))?;
    Ok(part.into_iter().map(|p| p as u32).collect())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashSet};

    use super::*;
    use crate::meshio::{ElementKind, Mesh};
    use crate::terrain::{Terrain, TerrainSpec};

    /// A hilly terrain-following mesh of 21 × 17 columns and 9 levels (3 213 vertices).
    fn hill() -> Terrain {
        let spec = TerrainSpec {
            size: [400.0, 320.0, 200.0],
            relief: 0.0,
            cells: [20, 16],
            layers: 8,
            grading: 1.2,
        };
        Terrain::from_fn(spec, |x, y| {
            40.0 * (-((x - 200.0).powi(2) + (y - 160.0).powi(2)) / 8000.0).exp()
        })
        .unwrap()
    }

    /// Every edge of every tetrahedron, each once (smaller vertex first): counted apart from
    /// the graph.
    fn tet_edges(mesh: &Mesh) -> HashSet<(u32, u32)> {
        let mut edges = HashSet::new();
        for (n, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
            for i in 0..4 {
                for j in i + 1..4 {
                    edges.insert((n[i].min(n[j]), n[i].max(n[j])));
                }
            }
        }
        edges
    }

    /// Checks `report` against a recount from the tetrahedra themselves.
    fn recount(mesh: &Mesh, partition: &Partition, report: &PartitionReport) {
        let owner = &partition.owner;
        let cut = tet_edges(mesh)
            .iter()
            .filter(|(a, b)| owner[*a as usize] != owner[*b as usize])
            .count();
        assert_eq!(report.edge_cut, cut);
        for p in 0..partition.parts as u32 {
            let mine: Vec<&[u32]> = mesh
                .elements(ElementKind::Tetrahedra)
                .iter()
                .map(|(n, _)| n)
                .filter(|n| n.iter().any(|&v| owner[v as usize] == p))
                .collect();
            let halo: BTreeSet<u32> = mine
                .iter()
                .flat_map(|n| n.iter().copied())
                .filter(|&v| owner[v as usize] != p)
                .collect();
            let neighbours: BTreeSet<u32> = halo.iter().map(|&v| owner[v as usize]).collect();
            let part = &report.per_part[p as usize];
            assert_eq!(part.elements, mine.len(), "part {p}");
            assert_eq!(part.halo, halo.len(), "part {p}");
            assert_eq!(
                part.neighbours,
                neighbours.into_iter().collect::<Vec<_>>(),
                "part {p}"
            );
            assert_eq!(
                part.owned,
                owner.iter().filter(|&&o| o == p).count(),
                "part {p}"
            );
        }
    }

    #[test]
    fn the_graph_joins_the_vertices_of_each_element_once() {
        // Two tetrahedra sharing the face 1-2-3: vertex 0 and vertex 4 are not neighbours.
        let tets: [&[u32]; 2] = [&[0, 1, 2, 3], &[1, 2, 3, 4]];
        let g = VertexGraph::of_elements(5, tets.into_iter()).unwrap();
        let rows: Vec<Vec<usize>> = (0..5).map(|v| g.neighbours(v).collect()).collect();
        assert_eq!(
            rows,
            vec![
                vec![1, 2, 3],
                vec![0, 2, 3, 4],
                vec![0, 1, 3, 4],
                vec![0, 1, 2, 4],
                vec![1, 2, 3]
            ]
        );
        assert_eq!(g.edges(), 9);
        let bad: [&[u32]; 1] = [&[0, 1, 2, 7]];
        assert!(VertexGraph::of_elements(5, bad.into_iter()).is_err());
    }

    #[test]
    fn metis_parts_are_balanced_and_their_costs_recount() {
        let mesh = hill().volume_mesh();
        let graph = VertexGraph::of_mesh(&mesh).unwrap();
        assert_eq!(graph.edges(), tet_edges(&mesh).len());
        for parts in [2, 3, 4, 7] {
            let partition = partition_vertices(&graph, None, parts).unwrap();
            let report = PartitionReport::new(&mesh, &graph, &partition).unwrap();
            assert!(report.per_part.iter().all(|p| p.owned > 0), "{report:?}");
            assert!(report.balance <= 1.05, "{parts} parts: {report:?}");
            assert!(report.edge_cut > 0 && report.edge_cut < graph.edges() / 2);
            recount(&mesh, &partition, &report);
        }
    }

    #[test]
    fn a_column_never_spans_two_parts() {
        let terrain = hill();
        let mesh = terrain.volume_mesh();
        let columns = terrain.columns();
        let graph = VertexGraph::of_mesh(&mesh).unwrap();
        for parts in [2, 4, 6] {
            let partition = partition_columns(&graph, &columns.column, parts).unwrap();
            let mut part_of_column = vec![None; columns.ground.len()];
            for (v, &c) in columns.column.iter().enumerate() {
                let p = partition.owner[v];
                let first = *part_of_column[c as usize].get_or_insert(p);
                assert_eq!(first, p, "column {c} spans parts {first} and {p}");
            }
            let report = PartitionReport::new(&mesh, &graph, &partition).unwrap();
            // Whole columns of 9 vertices: the balance is METIS's within a column's weight.
            assert!(report.balance <= 1.1, "{parts} parts: {report:?}");
            recount(&mesh, &partition, &report);
        }
    }

    #[test]
    fn one_part_cuts_nothing_and_bad_counts_are_refused() {
        let mesh = hill().volume_mesh();
        let graph = VertexGraph::of_mesh(&mesh).unwrap();
        let one = partition_vertices(&graph, None, 1).unwrap();
        let report = PartitionReport::new(&mesh, &graph, &one).unwrap();
        assert_eq!((report.edge_cut, report.halo, report.balance), (0, 0, 1.0));
        assert_eq!(
            partition_vertices(&graph, None, 0),
            Err(PartitionError::NoParts)
        );
        let n = mesh.vertices.len();
        assert_eq!(
            partition_vertices(&graph, None, n + 1),
            Err(PartitionError::TooManyParts {
                parts: n + 1,
                count: n,
                what: "vertices"
            })
        );
        let columns = hill().columns();
        assert!(matches!(
            partition_columns(&graph, &columns.column, columns.ground.len() + 1),
            Err(PartitionError::TooManyParts {
                what: "columns",
                ..
            })
        ));
        assert_eq!(
            VertexGraph::of_mesh(&Mesh::new(3)),
            Err(PartitionError::NoElements)
        );
    }
}
