//! METIS's multilevel k-way partitioning of a weighted graph (`METIS_PartGraphKway`).

use super::PartitionError;
use super::graph::{VertexGraph, fits};

/// The part (0 to `parts - 1`) of every vertex of `graph`, balancing `weights` (one per
/// vertex, each at least 1) and cutting few edges, by METIS k-way.
///
/// One part needs no METIS (its bindings and METIS itself treat `nparts = 1` specially):
/// every vertex is part 0. METIS's own options stay at their defaults: an imbalance
/// tolerance of 1.03 and a fixed seed, so the same graph gives the same parts.
pub(crate) fn kway(
    graph: &VertexGraph,
    weights: &[i32],
    parts: usize,
) -> Result<Vec<u32>, PartitionError> {
    let vertices = graph.vertex_count();
    debug_assert_eq!(weights.len(), vertices);
    if parts == 0 {
        return Err(PartitionError::NoParts);
    }
    if parts == 1 {
        return Ok(vec![0; vertices]);
    }
    let metis_error = |message: String| PartitionError::Metis {
        vertices,
        parts,
        message,
    };
    let nparts = fits("the number of parts", parts)?;
    let mut part = vec![0i32; vertices];
    metis::Graph::new(1, nparts, &graph.xadj, &graph.adjncy)
        .map_err(|e| metis_error(e.to_string()))?
        .set_vwgt(weights)
        .part_kway(&mut part)
        .map_err(|e| metis_error(e.to_string()))?;
    part.into_iter()
        .enumerate()
        .map(|(v, p)| {
            u32::try_from(p)
                .ok()
                .filter(|&p| (p as usize) < parts)
                .ok_or_else(|| metis_error(format!("vertex {v} was given part {p}")))
        })
        .collect()
}

/// `weights` as METIS takes them, checked: one per vertex, each at least 1, their sum within
/// `i32` (METIS adds them in its 32-bit integers). `None` gives every vertex weight 1.
pub(crate) fn metis_weights(
    weights: Option<&[u32]>,
    vertices: usize,
) -> Result<Vec<i32>, PartitionError> {
    let Some(weights) = weights else {
        fits("the vertex count", vertices)?;
        return Ok(vec![1; vertices]);
    };
    if weights.len() != vertices {
        return Err(PartitionError::Length {
            what: "the vertex weights",
            given: weights.len(),
            vertices,
        });
    }
    if let Some(vertex) = weights.iter().position(|&w| w == 0) {
        return Err(PartitionError::ZeroWeight { vertex });
    }
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    if total > i32::MAX as u64 {
        return Err(PartitionError::TooLarge {
            what: "the total vertex weight",
            count: total,
        });
    }
    Ok(weights.iter().map(|&w| w as i32).collect())
}
