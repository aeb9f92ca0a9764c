//! gml's kernels, from the user's spec to the launch, one concept per file, each using only
//! those above it in this list:
//!
//! - [`spec`]: what the user asks ([`KernelSpec`], [`Access`], [`Mode`]);
//! - [`identifier`]: OpenCL C identifiers and reserved words;
//! - [`resolve`]: the spec resolved against the instance's data, and the links it needs;
//! - [`names`]: the names the body reads its data by, and their collisions;
//! - [`codegen`]: the OpenCL source generated around the body;
//! - [`build`]: the programs compiled, one per link table ([`KernelId`]);
//! - [`launch`](mod@launch): the data brought up to date, the arguments bound, the launches
//!   enqueued.

mod build;
mod codegen;
mod identifier;
mod launch;
mod names;
mod resolve;
mod spec;

pub use build::KernelId;
pub(crate) use build::{Compiled, compile};
pub(crate) use launch::{enqueue, launch, prepare};
pub use spec::{Access, KernelSpec, MAX_SUMS, Mode};
