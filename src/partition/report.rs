//! What a partition costs: edge cut, balance and halos, per part and in all.

use serde::Serialize;

use super::graph::VertexGraph;
use super::halo::HaloPlan;
use super::owners::{Partition, Unit};

/// The edges of `graph` whose ends have different owners: values that cross between ranks
/// in a vertex kernel. Counted here on the vertex graph, whatever graph METIS partitioned (for
/// columns, METIS's own edge cut is on the column graph).
pub fn edge_cut(graph: &VertexGraph, owner: &[u32]) -> usize {
    graph
        .edges()
        .filter(|&(u, v)| owner.get(u) != owner.get(v))
        .count()
}

/// One part in a [`PartitionReport`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartSummary {
    /// The part, 0 to K − 1.
    pub part: usize,
    /// Vertices it owns.
    pub owned: usize,
    /// Their weight (the owned vertices with unit weights).
    pub weight: u64,
    /// Elements in its working set (with at least one owned vertex).
    pub elements: usize,
    /// Vertices of those elements that other parts own.
    pub halo: usize,
    /// The parts it exchanges with, ascending.
    pub neighbours: Vec<u32>,
}

/// What `snowsim mesh partition` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionReport {
    /// K.
    pub parts: usize,
    /// Whether vertices or whole columns were shared out.
    pub unit: Unit,
    /// Vertices of the mesh.
    pub vertices: usize,
    /// `tetrahedra` or `triangles`: the elements that connect the vertices.
    pub element_kind: &'static str,
    /// How many of them.
    pub elements: usize,
    /// Edges of the vertex graph.
    pub edges: usize,
    /// Edges whose two vertices have different owners ([`edge_cut`]).
    pub edge_cut: usize,
    /// The largest part's weight over the mean ([`Partition::balance`]).
    pub balance: f64,
    /// Halo vertices summed over the parts (a vertex in two halos counts twice).
    pub halo_total: usize,
    /// The largest halo of one part.
    pub halo_max: usize,
    /// Parts that own no vertex (METIS may leave one empty on a small graph).
    pub empty_parts: usize,
    /// One per part.
    pub per_part: Vec<PartSummary>,
}

impl PartitionReport {
    /// The report of `partition` of the mesh whose vertex graph is `graph` and plan `plan`.
    pub fn new(graph: &VertexGraph, partition: &Partition, plan: &HaloPlan) -> Self {
        let per_part: Vec<PartSummary> = plan
            .parts
            .iter()
            .zip(partition.part_weights())
            .enumerate()
            .map(|(part, (p, &weight))| PartSummary {
                part,
                owned: p.owned.len(),
                weight,
                elements: p.elements.len(),
                halo: p.halo.len(),
                neighbours: p.neighbours.iter().map(|n| n.part).collect(),
            })
            .collect();
        Self {
            parts: partition.parts(),
            unit: partition.unit(),
            vertices: graph.vertex_count(),
            element_kind: plan.kind.name(),
            elements: plan.element_count,
            edges: graph.edge_count(),
            edge_cut: edge_cut(graph, partition.owner()),
            balance: partition.balance(),
            halo_total: per_part.iter().map(|p| p.halo).sum(),
            halo_max: per_part.iter().map(|p| p.halo).max().unwrap_or(0),
            empty_parts: per_part.iter().filter(|p| p.owned == 0).count(),
            per_part,
        }
    }
}
