//! The driving code: what knows the simulation, the drawing and the hand-off between them
//! together, and runs frames.
//!
//! - [`Session`]: one device feeding one renderer, the [`FrameDriver`](crate::render::FrameDriver)
//!   behind `snowsim run` in a window or headless. Each frame it asks
//!   [`Simulation::step`](crate::sim::Simulation::step) for the simulation's frame, splats the particles when they
//!   are splatted, hands the buffers to OpenGL ([`crate::interop`]) and draws
//!   ([`crate::render`]).
//! - [`Stepper`]: the simulation with nothing drawn (`snowsim run --render off`).
//! - [`SceneView`]: what is drawn of a scene (its ground as a terrain mesh with the initial
//!   cover, the camera, the views), built from the scene file.
//!
//! The route from `main.rs` to a kernel reads main → cli → app → sim → snow/wind → kernel;
//! nothing below this room imports it.

mod camera_path;
mod scene;
mod session;
mod splat;
mod stepper;
pub mod time;

pub use camera_path::{CameraPath, CameraPathError, Keyframe, MAX_KEYFRAMES};
pub use scene::{SceneView, WIND_LINE_SAMPLES, snowfall};
pub use session::{COMPOSITE_STAGE, FIELD_STAGE, SPLAT_STAGE, Session, SessionConfig};
pub use splat::{PROBE_FRAMES, PROBE_WARMUP};
pub use stepper::Stepper;

use crate::cl;

/// What went wrong driving a run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The simulation failed.
    #[error(transparent)]
    Sim(#[from] crate::sim::Error),
    /// The OpenCL layer failed.
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
    /// The scene cannot be shown.
    #[error(transparent)]
    Scene(#[from] crate::scene::SceneError),
    /// A stage of the frame failed while enqueuing its work (the splat, say).
    #[error("stage `{stage}`: {source}")]
    Stage {
        /// The stage, e.g. `splat`.
        stage: &'static str,
        /// What failed.
        source: Box<Error>,
    },
    /// An invariant of this module was broken (a bug).
    #[error("internal error: {0}")]
    Internal(String),
}

/// Result of driving a run.
pub type Result<T> = std::result::Result<T, Error>;

/// Names the stage an error happened in (failures that name their stage already keep it), as
/// [`crate::sim::in_stage`] does for the simulation's.
fn in_stage<T>(stage: &'static str, result: Result<T>) -> Result<T> {
    result.map_err(|e| match e {
        Error::Sim(e) => Error::Sim(crate::sim::stage_error(stage, e)),
        Error::Cl(cl::Error::Stage { .. }) | Error::Stage { .. } => e,
        e => Error::Stage {
            stage,
            source: Box::new(e),
        },
    })
}
