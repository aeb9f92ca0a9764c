//! A partition: the part that owns every vertex.

use super::PartitionError;
use super::error::check_indices;
use super::graph::VertexGraph;
use super::kway::{kway, metis_weights};

/// What a partition shared out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Vertices, one by one ([`Partition::kway`]).
    Vertices,
    /// Whole columns of a terrain-following mesh ([`Partition::by_columns`]).
    Columns,
}

/// The owner part of every vertex of a mesh, and what each part weighs.
///
/// Owners are below [`parts`](Self::parts) by construction. A part may own nothing where
/// METIS left it empty (it can on small or badly connected graphs; the report shows it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    owner: Vec<u32>,
    parts: usize,
    weights: Vec<u64>,
    unit: Unit,
}

impl Partition {
    /// METIS k-way on the vertex graph: `parts` parts of about equal weight, few edges cut.
    ///
    /// `weights` (one per vertex, each at least 1) default to 1 per vertex. One part is every
    /// vertex in part 0, without METIS. Zero parts, or more parts than vertices, is an error
    /// naming both numbers.
    pub fn kway(
        graph: &VertexGraph,
        parts: usize,
        weights: Option<&[u32]>,
    ) -> Result<Self, PartitionError> {
        let vertices = graph.vertex_count();
        check_parts(parts, vertices, "vertices")?;
        let metis = metis_weights(weights, vertices)?;
        let owner = kway(graph, &metis, parts)?;
        Ok(Self::with_weights(owner, parts, &metis, Unit::Vertices))
    }

    /// A partition from a given owner per vertex, weighed by `weights` (default 1 per
    /// vertex): to report on a partition read back from a file.
    pub fn from_owner(
        owner: Vec<u32>,
        parts: usize,
        weights: Option<&[u32]>,
    ) -> Result<Self, PartitionError> {
        if parts == 0 {
            return Err(PartitionError::NoParts);
        }
        check_indices(&owner, parts, "part")?;
        let metis = metis_weights(weights, owner.len())?;
        Ok(Self::with_weights(owner, parts, &metis, Unit::Vertices))
    }

    /// The partition of valid `owner`s, with each part's weight summed.
    pub(crate) fn with_weights(owner: Vec<u32>, parts: usize, weights: &[i32], unit: Unit) -> Self {
        let mut sums = vec![0u64; parts];
        for (&p, &w) in owner.iter().zip(weights) {
            sums[p as usize] += w as u64;
        }
        Self {
            owner,
            parts,
            weights: sums,
            unit,
        }
    }

    /// The owner part of every vertex.
    pub fn owner(&self) -> &[u32] {
        &self.owner
    }

    /// How many parts (K).
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// Each part's weight: the sum of its vertices' weights.
    pub fn part_weights(&self) -> &[u64] {
        &self.weights
    }

    /// Whether vertices or whole columns were shared out.
    pub fn unit(&self) -> Unit {
        self.unit
    }

    /// The largest part's weight over the mean part weight: 1 is perfect balance, and the
    /// slowest rank's share of the work is this much more than an even share.
    pub fn balance(&self) -> f64 {
        let total: u64 = self.weights.iter().sum();
        let largest = self.weights.iter().copied().max().unwrap_or(0);
        if total == 0 {
            return 1.0;
        }
        largest as f64 * self.parts as f64 / total as f64
    }
}

/// `parts` is at least 1 and at most `count` (of `what`, vertices or columns).
pub(crate) fn check_parts(
    parts: usize,
    count: usize,
    what: &'static str,
) -> Result<(), PartitionError> {
    if parts == 0 {
        return Err(PartitionError::NoParts);
    }
    if parts > count {
        return Err(PartitionError::TooManyParts { parts, count, what });
    }
    Ok(())
}
