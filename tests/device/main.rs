//! Integration tests on a real OpenCL device (PoCL on the CPU in CI): the OpenCL layer, gml
//! and the GMlib examples, mesh quality, smoothing, renumbering and the bitonic sort, each
//! checked against a CPU reference written in the test; `wind_reference` is the wind solver's
//! f64 CPU reference, with its own tests.
//!
//! One binary rather than one per file, so a change to the library relinks it once. Each
//! module was a test file of its own and keeps its name.

#[path = "../common/mod.rs"]
mod common;

mod cl;
mod cover;
mod drift;
mod gml;
mod gml_examples;
mod gml_export;
mod gml_f64;
mod gml_kinds;
mod gml_links;
mod gml_reduce;
mod gml_safety;
mod gml_solution;
mod gml_sums;
mod ground_refresh;
mod mesh_quality;
mod mesh_smooth;
mod pipeline;
mod renumber;
mod sim;
mod snow;
mod sort;
// The splat kernel against the renderer's camera: needs the application's `render`.
#[cfg(feature = "viewer")]
mod splat;
mod wind;
#[allow(dead_code)]
mod wind_reference;
mod wind_refresh;
