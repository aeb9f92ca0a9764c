//! What can go wrong partitioning a mesh.

/// Why a mesh cannot be partitioned as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartitionError {
    /// A halo of depth 0 was asked for: a part needs at least the elements of its own
    /// vertices.
    #[error("a halo must be at least 1 ring deep (0 was asked)")]
    Depth,
    /// The mesh has neither tetrahedra nor triangles, so no vertex is adjacent to another.
    #[error(
        "the mesh has no tetrahedra and no triangles ({vertices} vertices): nothing connects \
         its vertices, so there is nothing to partition"
    )]
    NoElements {
        /// The mesh's vertex count.
        vertices: usize,
    },
    /// An element names a vertex the mesh does not have.
    #[error("{kind} element {element} uses vertex {vertex} but the mesh has {vertices} vertices")]
    BadVertex {
        /// `tetrahedra` or `triangles`.
        kind: &'static str,
        /// 0-based element number.
        element: usize,
        /// The 0-based vertex index.
        vertex: u32,
        /// The mesh's vertex count.
        vertices: usize,
    },
    /// Zero parts asked for.
    #[error("--parts 0: a partition needs at least one part")]
    NoParts,
    /// More parts asked for than there are things to share out.
    #[error(
        "--parts {parts}: more parts than the {count} {what} to share out; ask for at most \
         {count}"
    )]
    TooManyParts {
        /// The parts asked for.
        parts: usize,
        /// How many vertices (or columns) there are.
        count: usize,
        /// `vertices` or `columns`.
        what: &'static str,
    },
    /// The graph or its weights do not fit METIS's 32-bit integers.
    #[error(
        "{what} is {count}, more than METIS's 32-bit integers hold ({})",
        i32::MAX
    )]
    TooLarge {
        /// What overflows (`the vertex count`, `the adjacency list's length`, `the total
        /// weight`).
        what: &'static str,
        /// Its value.
        count: u64,
    },
    /// A list given per vertex has the wrong length.
    #[error("{what}: {given} values for {vertices} vertices")]
    Length {
        /// The list (`the vertex weights`, `the owners`, `the columns`).
        what: &'static str,
        /// Its length.
        given: usize,
        /// The vertex count.
        vertices: usize,
    },
    /// A vertex weight of zero.
    #[error("vertex {vertex} has weight 0; every vertex weight must be at least 1")]
    ZeroWeight {
        /// The 0-based vertex.
        vertex: usize,
    },
    /// An owner or column index out of range.
    #[error("vertex {vertex}: {what} {value}, but there are only {count}")]
    OutOfRange {
        /// `part` or `column`.
        what: &'static str,
        /// The 0-based vertex.
        vertex: usize,
        /// The index given.
        value: u32,
        /// How many parts (or columns) there are.
        count: usize,
    },
    /// A column with no vertex: the column map does not fit the mesh.
    #[error("column {column} of {columns} has no vertex: the columns do not fit this mesh")]
    EmptyColumn {
        /// The 0-based column.
        column: usize,
        /// How many columns there are.
        columns: usize,
    },
    /// METIS refused the graph or failed.
    #[error(
        "METIS could not partition the graph ({vertices} vertices into {parts} parts): {message}"
    )]
    Metis {
        /// Vertices of the graph given to METIS (columns, for a partition by columns).
        vertices: usize,
        /// The parts asked for.
        parts: usize,
        /// METIS's (or its bindings') message.
        message: String,
    },
}

/// An error for the first of `values` (one per vertex) that is not below `count`, naming the
/// vertex; `what` says what the values are (`part` or `column`).
pub(crate) fn check_indices(
    values: &[u32],
    count: usize,
    what: &'static str,
) -> Result<(), PartitionError> {
    match values
        .iter()
        .enumerate()
        .find(|(_, v)| **v as usize >= count)
    {
        Some((vertex, &value)) => Err(PartitionError::OutOfRange {
            what,
            vertex,
            value,
            count,
        }),
        None => Ok(()),
    }
}
