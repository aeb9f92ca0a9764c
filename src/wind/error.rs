//! What can go wrong setting up or running the wind.

use thiserror::Error;

/// A wind error.
#[derive(Debug, Error)]
pub enum WindError {
    /// The mesh cannot carry the flow: degenerate or inverted tetrahedra, a face of three.
    #[error("wind mesh: {0}")]
    Mesh(String),
    /// The boundary conditions leave the pressure problem without a solution, or without a
    /// unique one.
    #[error("wind boundary: {0}")]
    Boundary(String),
    /// The scene cannot be set up (its domain mesh or ground).
    #[error("{0}")]
    Scene(String),
    /// A setting the solver cannot use.
    #[error("wind setting: {0}")]
    Setting(String),
    /// A ground refresh cannot run: the solver has no columns (a mesh domain), or its input
    /// does not fit the mesh.
    #[error("wind ground refresh: {0}")]
    Refresh(String),
    /// A ground refresh would have made tetrahedra degenerate or inverted; the solver was left
    /// as it was.
    #[error(
        "wind ground refresh: {tets} tetrahedra would be degenerate or inverted ({first}); \
         the wind keeps its ground"
    )]
    BadGeometry {
        /// How many tetrahedra the device found degenerate or inverted.
        tets: u64,
        /// The host's description of the first one.
        first: String,
    },
    /// A field went non-finite.
    #[error(
        "wind: {field} is not finite at vertex {vertex} (0-based) after the {stage} stage of step {step}"
    )]
    NotFinite {
        /// The stage that produced it.
        stage: &'static str,
        /// The step (1-based).
        step: u64,
        /// The field.
        field: &'static str,
        /// The vertex.
        vertex: usize,
    },
    /// A piece of the assembled operator was asked for with a halo that misses a column of
    /// one of its rows (the halo must hold every vertex one ring from the owned ones), or with
    /// vertex lists that are not ascending, overlapping or out of range.
    #[error("wind operator piece: {0}")]
    Piece(String),
    /// A rank of a distributed solve failed to exchange or reduce.
    #[error(transparent)]
    Comm(#[from] crate::comm::CommError),
    /// The device or gml failed.
    #[error(transparent)]
    Gml(#[from] crate::gml::GmlError),
    /// The OpenCL layer failed.
    #[error(transparent)]
    Cl(#[from] crate::cl::Error),
}

/// A wind result.
pub type Result<T> = std::result::Result<T, WindError>;
