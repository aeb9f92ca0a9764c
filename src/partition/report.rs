//! What a partition costs: the edge cut, the balance, and each part's working set and halo.

use serde::Serialize;

use crate::meshio::Mesh;

use super::graph::graph_elements;
use super::{Partition, PartitionError, VertexGraph};

/// One part's share (`snowsim mesh partition --json`'s `parts`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PartReport {
    /// The part's index.
    pub part: u32,
    /// The vertices it owns.
    pub owned: usize,
    /// The elements it works on: those with at least one vertex it owns.
    pub elements: usize,
    /// The vertices of those elements that it does not own: what its neighbours send it.
    pub halo: usize,
    /// The parts that own its halo, in order.
    pub neighbours: Vec<u32>,
}

/// What a partition costs (`snowsim mesh partition --json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionReport {
    /// Number of parts.
    pub parts: usize,
    /// Vertices of the mesh.
    pub vertices: usize,
    /// Edges of its graph.
    pub edges: usize,
    /// The graph's edges whose two vertices have different owners.
    pub edge_cut: usize,
    /// The largest part's vertices over the mean.
    pub balance: f64,
    /// The halo's vertices summed over the parts.
    pub halo: usize,
    /// Each part.
    pub per_part: Vec<PartReport>,
}

impl PartitionReport {
    /// Measures `partition` of `mesh`, whose graph is `graph` (built by
    /// [`VertexGraph::of_mesh`]).
    pub fn new(
        mesh: &Mesh,
        graph: &VertexGraph,
        partition: &Partition,
    ) -> Result<Self, PartitionError> {
        let owner = &partition.owner;
        if owner.len() != graph.vertices() || owner.len() != mesh.vertices.len() {
            return Err(PartitionError::Invalid(format!(
                "a partition of {} vertices for a mesh of {}",
                owner.len(),
                mesh.vertices.len()
            )));
        }
        let parts = partition.parts;
        let mut edge_cut = 0;
        for v in 0..graph.vertices() {
            edge_cut += graph
                .neighbours(v)
                .filter(|&u| u > v && owner[u] != owner[v])
                .count();
        }
        let mut owned = vec![0usize; parts];
        for &p in owner {
            owned[p as usize] += 1;
        }
        // Each element counts for every part owning one of its vertices; its other vertices
        // are that part's halo.
        let mut elements = vec![0usize; parts];
        let mut halo: Vec<(u32, u32)> = Vec::new();
        let mut owners: Vec<u32> = Vec::with_capacity(8);
        for (nodes, _) in graph_elements(mesh)?.iter() {
            owners.clear();
            owners.extend(nodes.iter().map(|&v| owner[v as usize]));
            owners.sort_unstable();
            owners.dedup();
            for &p in &owners {
                elements[p as usize] += 1;
                halo.extend(
                    nodes
                        .iter()
                        .filter(|&&v| owner[v as usize] != p)
                        .map(|&v| (p, v)),
                );
            }
        }
        halo.sort_unstable();
        halo.dedup();
        let mut per_part: Vec<PartReport> = (0..parts)
            .map(|p| PartReport {
                part: p as u32,
                owned: owned[p],
                elements: elements[p],
                halo: 0,
                neighbours: Vec::new(),
            })
            .collect();
        for &(p, v) in &halo {
            let part = &mut per_part[p as usize];
            part.halo += 1;
            part.neighbours.push(owner[v as usize]);
        }
        for part in &mut per_part {
            part.neighbours.sort_unstable();
            part.neighbours.dedup();
        }
        let mean = mesh.vertices.len() as f64 / parts.max(1) as f64;
        let largest = owned.iter().copied().max().unwrap_or(0) as f64;
        Ok(Self {
            parts,
            vertices: mesh.vertices.len(),
            edges: graph.edges(),
            edge_cut,
            balance: if mean > 0.0 { largest / mean } else { 0.0 },
            halo: halo.len(),
            per_part,
        })
    }
}
