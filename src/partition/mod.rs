//! Partitioning a mesh into K parts for K ranks (one GPU each), by METIS.
//!
//! The first step of running one region's snow on many GPUs (issue 31): every vertex gets an
//! owner part, so that each part weighs about the same (its vertices, or given weights) and
//! few mesh edges join two parts, since every such edge is a value that crosses between
//! ranks.
//!
//! - [`VertexGraph`]: the mesh's vertex graph in CSR form (vertices adjacent when they share
//!   an edge of a tetrahedron, else of a triangle), as METIS takes it;
//! - [`Partition`]: the owner of every vertex, from METIS k-way ([`Partition::kway`]) or, for
//!   a terrain-following mesh, from METIS on its [`column_graph`] so that no column spans two
//!   parts ([`Partition::by_columns`]: the ground refresh regrades a column as one);
//! - [`HaloPlan`]: per part its owned vertices, its working set of elements, its halo and
//!   per neighbour part the vertices it sends and receives, the same lists on both sides;
//! - [`PartitionReport`]: edge cut (counted on the vertex graph), balance (the largest part's
//!   weight over the mean) and halo sizes, per part and in all.
//!
//! ```
//! use snowsim::meshio::generate::tet_grid;
//! use snowsim::partition::{HaloPlan, Partition, PartitionReport, VertexGraph};
//!
//! let mesh = tet_grid([8, 8, 8]);
//! let graph = VertexGraph::of_mesh(&mesh)?;
//! let partition = Partition::kway(&graph, 4, None)?;
//! let plan = HaloPlan::new(&mesh, &partition)?;
//! let report = PartitionReport::new(&graph, &partition, &plan);
//! assert_eq!(report.parts, 4);
//! assert!(report.balance <= 1.1);
//! assert!(report.edge_cut > 0 && report.edge_cut < report.edges);
//! # Ok::<(), snowsim::partition::PartitionError>(())
//! ```

mod columns;
mod error;
mod graph;
mod halo;
mod kway;
mod owners;
mod report;

pub use columns::column_graph;
pub use error::PartitionError;
pub use graph::{VertexGraph, connecting_elements};
pub use halo::{Exchange, HaloPlan, PartHalo};
pub use owners::{Partition, Unit};
pub use report::{PartSummary, PartitionReport, edge_cut};

#[cfg(test)]
mod tests;
