//! One scene's simulation: the only room that knows the wind and the snow together.
//!
//! [`SimSetup`] is everything a run simulates, settled once from the scene file and the
//! command line's overrides ([`Overrides`]). [`Simulation`] owns what runs on the device: the
//! wind ([`coupling`]: solved on the snow's device, solved on another one, or the scene's fixed
//! profile) and the snow ([`crate::snow::Snow`]). [`Simulation::step`] is where a frame is
//! stepped, its stages written once, top to bottom:
//!
//! 1. the previous frame's counters, read back without blocking, are checked (a non-finite
//!    parcel stops the run at most one frame late);
//! 2. the ground refresh: one held back applied at its frame, one falling due read (and, with
//!    `wind.ground_refresh_lag`, planned on a thread of its own: `sim/refresh.rs`);
//! 3. the coupling's frame ([`coupling::WindField::frame`]): the field handed to the snow
//!    (the wind as it stood at the frame's start), the snow's sort, particle step (drag,
//!    landing, deposit), drift and cover smoothing, and the wind steps that are due (the wind
//!    keeps its own time step): after the snow's launches on one device, beside them on
//!    another ([`beside`]).
//!
//! Nothing here draws or knows OpenGL: the driving code above ([`crate::app`]) hands the
//! simulation the buffer its particles go into, and asks for the cover's depths and the wind
//! view's samples ([`Simulation::wind_samples`]) when it shows them. The state files
//! ([`outputs`]), the checks ([`Simulation::check`]) and the report ([`SimReport`]) are read
//! only when due, never on every frame.

pub mod balance;
pub mod beside;
pub mod coupling;
pub mod outputs;
pub mod ranks;
mod refresh;
mod report;
mod setup;
pub mod shares;
mod simulation;
pub mod wind_view;

pub use outputs::{Series, StateOutputs};
pub use refresh::{RefreshOff, RefreshReport};
pub use report::{DriftReport, SimReport};
pub use setup::{Overrides, SimSetup, SnowSplit, WindSetup};
pub use simulation::{DEPTH_STAGE, PARTICLES_STAGE, Simulation, rank_shares};
pub use wind_view::{WIND_VIEW_SAMPLES, WindSamples};

use crate::cl;

/// What went wrong building or running the simulation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OpenCL layer failed (a failed stage names itself: `stage `snow.step`: …`).
    #[error(transparent)]
    Cl(#[from] cl::Error),
    /// The scene's domain cannot be built.
    #[error(transparent)]
    Scene(#[from] crate::scene::SceneError),
    /// The snow simulation failed.
    #[error(transparent)]
    Snow(#[from] crate::snow::Error),
    /// The wind solver failed.
    #[error(transparent)]
    Wind(#[from] crate::wind::WindError),
    /// The state could not be written.
    #[error(transparent)]
    Vtu(#[from] crate::meshio::VtuError),
    /// The state could not be split into pieces (`--vtu X.pvtu`), or their files written.
    #[error(transparent)]
    Pieces(#[from] crate::meshio::pvtu::PieceError),
    /// The mesh could not be partitioned into the state's pieces.
    #[error("partitioning the state into pieces: {0}")]
    Partition(#[from] crate::partition::PartitionError),
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
    /// A device other than the snow's failed (the wind's on its own device, say).
    #[error("the {role}'s device, {device}: {source}")]
    OnDevice {
        /// What runs there: `wind`.
        role: &'static str,
        /// The device's index and name.
        device: String,
        /// What failed.
        source: Box<Error>,
    },
    /// Communication between ranks failed.
    #[error(transparent)]
    Comm(#[from] crate::comm::CommError),
    /// Another rank reported a failure, or sent what it should not have.
    #[error("rank {rank}: {message}")]
    Rank {
        /// The rank.
        rank: usize,
        /// What it said, or what was wrong with its message.
        message: String,
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

/// Refuses a time step that is negative or not finite (a frame's simulated seconds).
pub fn check_time_step(dt: f32) -> Result<()> {
    if dt.is_finite() && dt >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter(format!(
            "time step {dt} must be finite and not negative"
        )))
    }
}

/// Names the stage an error happened in (failures found when the frame waits name it already).
pub fn in_stage<T>(stage: &'static str, result: Result<T>) -> Result<T> {
    result.map_err(|e| stage_error(stage, e))
}

/// `e` as an error of `stage`, unless it names its stage already.
pub fn stage_error(stage: &'static str, e: Error) -> Error {
    match e {
        Error::Cl(cl::Error::Stage { .. }) | Error::Stage { .. } => e,
        e => Error::Stage {
            stage,
            source: Box::new(e),
        },
    }
}
