//! Helpers shared by the integration tests: the default device, the sample meshes, temporary
//! directories and the `snowsim` binary. Each test binary uses only some of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use snowsim::cl::{Context, DeviceSelector};
use snowsim::gml::Gml;
use snowsim::meshio::{self, Mesh};

/// A context on the default device (PoCL in CI).
pub fn context() -> Context {
    Context::from_selector(&DeviceSelector::Default).expect("an OpenCL device (PoCL in CI)")
}

/// A gml instance on the default device (PoCL in CI).
pub fn gml() -> Gml {
    Gml::new(&DeviceSelector::Default).expect("an OpenCL device (PoCL in CI)")
}

/// The path of a file in sample_meshes/.
pub fn sample_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample_meshes")
        .join(name)
}

/// A mesh from sample_meshes/.
pub fn sample(name: &str) -> Mesh {
    meshio::read(&sample_path(name)).expect("sample mesh").mesh
}

/// A fresh directory for one test: `snowsim-<suite>-<test>-<pid>` in the system temp dir.
pub fn temp_dir(suite: &str, test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snowsim-{suite}-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the `snowsim` binary with `args`.
pub fn snowsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(args)
        .output()
        .expect("run snowsim")
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
