//! Integration tests of the application as a user runs it: the `snowsim` command line
//! (devices, selftest, mesh commands) and the renderer with its OpenCL → OpenGL paths (headless
//! EGL, a window under Xvfb, `snowsim run`). They need an OpenCL device and EGL (Mesa in CI).
//!
//! One binary rather than one per file, so a change to the library relinks it once. Each
//! module was a test file of its own and keeps its name.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod comm;
mod hardening;
mod plot;
mod render;
mod sweep;
