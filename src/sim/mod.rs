//! The simulation's home: the scene's state on the device, the order of a frame's stages, and
//! the hand-off of its buffers to OpenGL.
//!
//! A [`Session`] owns one OpenCL [`Context`](crate::cl::Context) (created against the GL
//! context when the buffers are shared) on which every kernel of the frame runs, a
//! [`Timeline`](crate::cl::Timeline) that collects the frame's launches by stage without
//! waiting, and the renderer. The simulation plugs in as a [`ParticleSource`] and a
//! [`FieldSource`]: the snow of [`crate::snow`] ([`SceneSetup::snow_source`]) when the scene
//! simulates snow, else the stand-in flakes of [`flakes`] (`kernels/flakes.cl`); the wind view
//! is the scene's profile until the wind solver lands. [`SceneSetup`] builds everything from a
//! scene file.
//!
//! The stand-ins compute with `cl`, `scene` and `terrain` only, never `render`: physics stays
//! apart from drawing, and [`crate::interop`] only moves buffers between the two APIs.

pub mod flakes;
pub(crate) mod scene;
mod series;
mod session;
mod source;
mod splat;
mod stepper;

pub use flakes::{FixedParticles, Flakes, FlakesConfig, ProfileWind};
pub use scene::{SceneSetup, WIND_SAMPLES};
pub use series::{Series, StateOutputs};
pub use session::{
    COMPOSITE_STAGE, FIELD_STAGE, PARTICLES_STAGE, SPLAT_STAGE, Session, SessionConfig,
};
pub use source::{FieldRanges, FieldSource, ParticleSource};
pub use splat::{PROBE_FRAMES, PROBE_WARMUP};
pub use stepper::Stepper;

use crate::cl;

/// What went wrong building or running the simulation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OpenCL layer failed (a failed stage names itself: `stage `snow.particles`: …`).
    #[error(transparent)]
    Cl(#[from] cl::Error),
    /// Moving buffers between OpenCL and OpenGL failed.
    #[error(transparent)]
    Interop(#[from] crate::interop::Error),
    /// The renderer failed.
    #[error(transparent)]
    Render(#[from] crate::render::Error),
    /// Splatting the particles failed (or the device cannot).
    #[error(transparent)]
    Splat(#[from] crate::splat::Error),
    /// The scene's domain cannot be built.
    #[error(transparent)]
    Scene(#[from] crate::scene::SceneError),
    /// The scene's ground cannot be gridded.
    #[error(transparent)]
    Terrain(#[from] crate::terrain::TerrainError),
    /// The snow simulation failed.
    #[error(transparent)]
    Snow(#[from] crate::snow::Error),
    /// The wind solver failed.
    #[error(transparent)]
    Wind(#[from] crate::wind::WindError),
    /// The state could not be written.
    #[error(transparent)]
    Vtu(#[from] crate::meshio::VtuError),
    /// A parameter is out of range.
    #[error("invalid simulation parameter: {0}")]
    InvalidParameter(String),
    /// A stage of the frame failed while enqueuing its work.
    #[error("stage `{stage}`: {source}")]
    Stage {
        /// The stage, e.g. `snow.particles`.
        stage: &'static str,
        /// What failed.
        source: Box<Error>,
    },
    /// `--check` found a broken invariant.
    #[error("check after frame {frame}: {source}")]
    Check {
        /// Frames run when it was found.
        frame: u64,
        /// What broke.
        source: Box<Error>,
    },
    /// A simulated state is wrong (what, where).
    #[error("{0}")]
    Invariant(String),
    /// An invariant of this module was broken (a bug).
    #[error("internal simulation error: {0}")]
    Internal(String),
}

/// Result of the simulation.
pub type Result<T> = std::result::Result<T, Error>;

/// Names the stage an error happened in (failures found when the frame waits name it already).
/// Refuses a time step that is negative or not finite (a frame's simulated seconds).
pub(crate) fn check_time_step(dt: f32) -> Result<()> {
    if dt.is_finite() && dt >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter(format!(
            "time step {dt} must be finite and not negative"
        )))
    }
}

pub(crate) fn in_stage<T>(stage: &'static str, result: Result<T>) -> Result<T> {
    result.map_err(|e| match e {
        Error::Cl(cl::Error::Stage { .. }) | Error::Stage { .. } => e,
        e => Error::Stage {
            stage,
            source: Box::new(e),
        },
    })
}
