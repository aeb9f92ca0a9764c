//! Errors of the snow simulation.

use crate::cl;

/// What went wrong building or running the snow.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OpenCL layer failed.
    #[error(transparent)]
    Cl(#[from] cl::Error),
    /// The sort failed.
    #[error(transparent)]
    Sort(#[from] crate::sort::SortError),
    /// A setting is out of range.
    #[error("invalid snow parameter: {0}")]
    InvalidParameter(String),
    /// The domain mesh cannot carry snow (no ground or top faces, a face of three tetrahedra).
    #[error("the domain mesh cannot carry snow: {0}")]
    Mesh(String),
    /// The device lacks something the kernels need.
    #[error("device {device} lacks {what}: {why}")]
    Unsupported {
        /// The device name.
        device: String,
        /// The missing extension or capability.
        what: String,
        /// What needs it.
        why: String,
    },
    /// A particle's position or velocity became NaN or infinite.
    #[error(
        "stage `{stage}`, frame {frame}: particle {id} has a non-finite position or velocity \
         ({count} particles in all this frame)"
    )]
    NonFinite {
        /// The stage that produced it.
        stage: &'static str,
        /// The frame (0 is the first step).
        frame: u64,
        /// The smallest id of a non-finite particle.
        id: u32,
        /// How many particle updates were non-finite.
        count: u64,
    },
    /// The wind buffer does not match the mesh.
    #[error("the wind buffer holds {got} values, the domain mesh has {expected} vertices")]
    WindLength {
        /// Values in the buffer.
        got: usize,
        /// Vertices of the mesh.
        expected: usize,
    },
    /// A checked invariant does not hold (`snowsim run --check`): what and where.
    #[error("{0}")]
    Invariant(String),
}

/// Result of the snow simulation.
pub type Result<T> = std::result::Result<T, Error>;
