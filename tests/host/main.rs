//! Integration tests that need no OpenCL device and no display: mesh files, `.vtu` output,
//! scenes and the terrain mesher (some run the `snowsim` binary). `cargo test --test host` runs
//! them anywhere.
//!
//! One binary rather than one per file, so a change to the library relinks it once. Each
//! module was a test file of its own and keeps its name.
//!
//! `meshio_fuzz` installs a global allocator that records the largest request per thread; it
//! serves every test of this binary, and only `meshio_fuzz` reads what it records.

#[path = "../common/mod.rs"]
mod common;

mod layers;
mod meshio;
mod meshio_errors;
mod meshio_fuzz;
mod overrides;
mod partition;
mod scene;
mod solution;
mod terrain;
mod vtu;
