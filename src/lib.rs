//! snowsim: a real-time snow and wind simulator on OpenCL devices, and `gml`, a Rust port of
//! GMlib for computing on unstructured meshes.
//!
//! The crate is organised by concept: [`cl`] wraps OpenCL device selection, program builds and
//! profiling; [`meshio`] reads and writes the INRIA `.mesh`/`.meshb` formats; [`inspect`]
//! summarises and validates meshes; [`mesh_kind`] names the kinds of mesh entity, with their
//! local numbering and uplink widths, for both [`gml`], the GMlib port, and [`renumber`], which
//! orders meshes for it; [`quality`] and [`smoothing`] are mesh tools built on gml; [`bench`]
//! holds the benchmarks; [`selftest`] proves a device computes correctly. [`budget`] checks
//! sizes against the host's and the device's memory and the disk's free space before anything
//! large is allocated; [`input`] reads the files a user names (regular files only, size-capped)
//! and [`output`] writes them atomically.
#![warn(missing_docs)]

#[cfg(feature = "viewer")]
pub mod app;
pub mod bench;
pub mod budget;
pub mod cl;
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
