//! snowsim: a real-time snow and wind simulator on OpenCL devices, and `gml`, a Rust port of
//! GMlib for computing on unstructured meshes.
//!
//! The crate is organised in rooms, one concept each, stacked in layers (`ARCHITECTURE.md`):
//!
//! - the device and the meshes: [`cl`] wraps OpenCL device selection, program builds and
//!   profiling; [`meshio`] reads and writes the INRIA `.mesh`/`.meshb` formats (and VTK XML);
//!   [`inspect`] summarises and validates meshes; [`mesh_kind`] names the kinds of mesh entity,
//!   with their local numbering and uplink widths, for both [`gml`], the GMlib port, and
//!   [`renumber`], which orders meshes for it; [`sort`] is the bitonic sort on the device;
//!   [`quality`] and [`smoothing`] are mesh tools built on gml;
//! - safety around them: [`budget`] checks sizes against the host's and the device's memory
//!   and the disk's free space before anything large is allocated; [`input`] reads the files a
//!   user names (regular files only, size-capped) and [`output`] writes them atomically;
//!   [`counters`] holds the stage timings every report shares; [`selftest`] proves a device
//!   computes correctly;
//! - the scene: [`terrain`] meshes the air above a heightmap; [`scene`] reads and validates
//!   scene files, builds their domains and grounds, and holds the limits of running them;
//!   [`partition`] shares a mesh's vertices (a terrain's whole columns) out to K parts by
//!   METIS, with each part's halo, for runs on many GPUs;
//! - the simulation: [`wind`] (the wind solver) and [`snow`] (the parcels and their cover) are
//!   peer libraries; [`sim`] is the one room that knows both, where a frame is stepped;
//!   [`particle`] is the drawn particle the simulation writes and the drawing reads;
//!   [`comm`] carries the messages of runs over several ranks (threads of one process, or
//!   MPI);
//!   [`splat`] splats the particles into an image on the device;
//! - the application (the default `viewer` feature): [`render`] draws with OpenGL in a
//!   window or headless, [`interop`] moves buffers from OpenCL to OpenGL, [`app`] drives a
//!   run (session, undrawn stepper, what is drawn of a scene), [`bench`](mod@bench) holds the benchmarks
//!   and sweeps and [`plot`] draws their CSVs. (`bench` is not behind the feature: its device
//!   benchmarks serve `cargo bench` too.)
#![warn(missing_docs)]

#[cfg(feature = "viewer")]
pub mod app;
pub mod bench;
pub mod budget;
pub mod cl;
pub mod comm;
pub mod counters;
pub mod gml;
pub mod input;
pub mod inspect;
#[cfg(feature = "viewer")]
pub mod interop;
pub mod mesh_kind;
pub mod meshio;
pub mod output;
pub mod particle;
pub mod partition;
#[cfg(feature = "viewer")]
pub mod plot;
pub mod quality;
#[cfg(feature = "viewer")]
pub mod render;
pub mod renumber;
pub mod scene;
pub mod selftest;
pub mod sim;
pub mod smoothing;
pub mod snow;
pub mod sort;
pub mod splat;
pub mod terrain;
pub mod wind;
