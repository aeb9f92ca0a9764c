//! Looking at a mesh without changing it: a summary of what a file holds, and validity checks.

mod check;
mod geometry;
mod summary;

pub use check::{CheckReport, Problem, ProblemKind, check};
pub use summary::{BoundingBox, Summary};
