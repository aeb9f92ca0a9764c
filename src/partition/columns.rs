//! Partitioning a terrain-following mesh by whole columns.
//!
//! The ground refresh regrades a column's vertices together (`terrain::Columns::regrade`)
//! from the snow on the column's ground, so a column is kept on one rank: METIS partitions
//! the column graph (columns adjacent when any of their vertices are, each weighing the sum of
//! its vertices' weights) and every vertex takes its column's part.

use super::PartitionError;
use super::error::check_indices;
use super::graph::VertexGraph;
use super::kway::{kway, metis_weights};
use super::owners::{Partition, Unit, check_parts};

/// The graph of `columns` columns: `c` and `d` adjacent when a vertex of `c` and a vertex of
/// `d` are adjacent in `graph`. `column[v]` is vertex `v`'s column (checked).
pub fn column_graph(
    graph: &VertexGraph,
    column: &[u32],
    columns: usize,
) -> Result<VertexGraph, PartitionError> {
    check_columns(graph, column, columns)?;
    // The vertices of each column (CSR), then each column's row through a marker.
    let mut start = vec![0usize; columns + 1];
    for &c in column {
        start[c as usize + 1] += 1;
    }
    for c in 0..columns {
        start[c + 1] += start[c];
    }
    let mut next = start.clone();
    let mut members = vec![0u32; column.len()];
    for (v, &c) in column.iter().enumerate() {
        members[next[c as usize]] = v as u32;
        next[c as usize] += 1;
    }
    let mut mark = vec![u32::MAX; columns];
    let rows = (0..columns)
        .map(|c| {
            let mut row = Vec::new();
            for &v in &members[start[c]..start[c + 1]] {
                for &u in graph.neighbours(v as usize) {
                    let d = column[u as usize];
                    if d as usize != c && mark[d as usize] != c as u32 {
                        mark[d as usize] = c as u32;
                        row.push(d as i32);
                    }
                }
            }
            row.sort_unstable();
            row
        })
        .collect();
    VertexGraph::from_rows(rows)
}

impl Partition {
    /// A scene's wind mesh into `parts`: by whole columns where it is a terrain (`columns`:
    /// each vertex's column and the number of columns, [`by_columns`](Self::by_columns)),
    /// by vertices for a mesh file ([`kway`](Self::kway)); `weights` as theirs. What
    /// `snowsim mesh partition --scene` and a run's `.pvtu` pieces both use.
    pub fn of_domain(
        graph: &VertexGraph,
        columns: Option<(&[u32], usize)>,
        parts: usize,
        weights: Option<&[u32]>,
    ) -> Result<Self, PartitionError> {
        match columns {
            Some((column, count)) => Self::by_columns(graph, column, count, parts, weights),
            None => Self::kway(graph, parts, weights),
        }
    }

    /// METIS k-way on the column graph ([`column_graph`]), each column weighing its vertices'
    /// `weights` (default 1 each), then every vertex in its column's part: no column spans two
    /// parts. Zero parts, or more parts than columns, is an error naming both numbers.
    pub fn by_columns(
        graph: &VertexGraph,
        column: &[u32],
        columns: usize,
        parts: usize,
        weights: Option<&[u32]>,
    ) -> Result<Self, PartitionError> {
        check_columns(graph, column, columns)?;
        check_parts(parts, columns, "columns")?;
        let vertex_weights = metis_weights(weights, graph.vertex_count())?;
        let mut column_weights = vec![0i32; columns];
        for (&c, &w) in column.iter().zip(&vertex_weights) {
            // The total fits i32 (checked above), so every partial sum does.
            column_weights[c as usize] += w;
        }
        if let Some(c) = column_weights.iter().position(|&w| w == 0) {
            return Err(PartitionError::EmptyColumn { column: c, columns });
        }
        let columns_graph = column_graph(graph, column, columns)?;
        let part_of_column = kway(&columns_graph, &column_weights, parts)?;
        let owner = column.iter().map(|&c| part_of_column[c as usize]).collect();
        Ok(Self::with_weights(
            owner,
            parts,
            &vertex_weights,
            Unit::Columns,
        ))
    }
}

/// One column per vertex of `graph`, each below `columns`.
fn check_columns(
    graph: &VertexGraph,
    column: &[u32],
    columns: usize,
) -> Result<(), PartitionError> {
    if column.len() != graph.vertex_count() {
        return Err(PartitionError::Length {
            what: "the columns",
            given: column.len(),
            vertices: graph.vertex_count(),
        });
    }
    check_indices(column, columns, "column")
}
