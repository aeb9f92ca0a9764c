//! Helpers shared by the integration tests: the default device, the sample meshes, temporary
//! directories and the `snowsim` binary. Each test binary uses only some of them.
#![allow(dead_code)]

pub mod vtu;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

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

/// The valley scene (`scenes/valley.toml`) on a coarse mesh, `cells` a side and `layers`
/// layers, its heightmap named by absolute path, loaded from a file of its own in `dir` (one
/// file per call: a binary's tests run in parallel in one process, and a file rewritten while
/// another test reads it is a race).
pub fn coarse_valley(dir: &Path, cells: u32, layers: u32) -> snowsim::scene::Scene {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("scenes/valley.toml"))
        .unwrap()
        .replace(
            "heightmap = \"valley.png\"",
            &format!("heightmap = {:?}", root.join("scenes/valley.png")),
        )
        .replace("cells = [96, 96]", &format!("cells = [{cells}, {cells}]"))
        .replace("layers = 20", &format!("layers = {layers}"));
    let path = dir.join(format!("valley-{call}.toml"));
    std::fs::write(&path, text).unwrap();
    snowsim::scene::Scene::load(&path).unwrap()
}

/// Runs the `snowsim` binary with `args`.
pub fn snowsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(args)
        .output()
        .expect("run snowsim")
}

/// How a child process ended: its status, its output, and how long it ran.
pub struct Finished {
    /// The exit status.
    pub status: ExitStatus,
    /// Standard output, as text.
    pub stdout: String,
    /// Standard error, as text.
    pub stderr: String,
    /// From the wait's start to the exit.
    pub took: Duration,
}

/// Waits for `child` at most `timeout`, then kills it and fails the test; its piped output is
/// read on threads, so a full pipe cannot stall it.
pub fn wait_within(mut child: Child, timeout: Duration) -> Finished {
    fn read_all(stream: Option<impl Read>) -> String {
        let mut bytes = Vec::new();
        if let Some(mut s) = stream {
            let _ = s.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let readers = [
        std::thread::spawn(move || read_all(out)),
        std::thread::spawn(move || read_all(err)),
    ];
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("snowsim did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = started.elapsed();
    let [stdout, stderr] = readers.map(|r| r.join().unwrap());
    Finished {
        status,
        stdout,
        stderr,
        took,
    }
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Skips: a test that cannot run on this machine says so through `skip`, never by printing
// and returning on its own.

/// What a test may need that some machines lack. `SNOWSIM_REQUIRE` names them (README,
/// "Tests"): a required capability that is missing fails the test instead of skipping it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// `xvfb-run`, for the window test.
    Xvfb,
    /// Headless OpenGL through EGL in the test's process (Mesa's llvmpipe in CI).
    Egl,
    /// Double precision on the default OpenCL device (`cl_khr_fp64`).
    Fp64,
    /// An OpenCL ICD loader that honours `OCL_ICD_VENDORS` / `OPENCL_VENDOR_PATH`, so a run
    /// can be shown no platform at all.
    IcdOverride,
    /// The default device's memory is too small for the sort of 2^31 pairs, so its refusal
    /// can be tested.
    SmallMemory,
    /// An OpenCL device without `cl_khr_gl_sharing`, to test the refusal of `--interop share`
    /// and `auto`'s choice of copy.
    NoGlSharing,
    /// A default OpenCL device without external memory, to test the refusal of
    /// `--interop external`.
    NoExternalMemory,
    /// An OpenCL device whose `cl_khr_gl_sharing` share path opens.
    GlSharing,
    /// An OpenCL device with `cl_khr_external_memory(_opaque_fd)` whose external path opens.
    ExternalMemory,
    /// A Vulkan device that exports memory (`VK_KHR_external_memory_fd`; lavapipe in CI).
    VulkanExport,
    /// Exportable Vulkan memory that the host can write (CPU drivers such as lavapipe).
    VulkanHostVisible,
    /// OpenGL importing memory (`GL_EXT_memory_object_fd`; llvmpipe in CI).
    GlMemoryObject,
    /// Two OpenCL devices.
    TwoDevices,
    /// A build with the `mpi` feature and `mpirun` on the PATH.
    Mpi,
}

impl Capability {
    pub const ALL: [Capability; 14] = [
        Capability::Xvfb,
        Capability::Egl,
        Capability::Fp64,
        Capability::IcdOverride,
        Capability::SmallMemory,
        Capability::NoGlSharing,
        Capability::NoExternalMemory,
        Capability::GlSharing,
        Capability::ExternalMemory,
        Capability::VulkanExport,
        Capability::VulkanHostVisible,
        Capability::GlMemoryObject,
        Capability::TwoDevices,
        Capability::Mpi,
    ];

    /// The name `SNOWSIM_REQUIRE` and the skip log use.
    pub fn name(self) -> &'static str {
        match self {
            Capability::Xvfb => "xvfb",
            Capability::Egl => "egl",
            Capability::Fp64 => "fp64",
            Capability::IcdOverride => "icd_override",
            Capability::SmallMemory => "small_memory",
            Capability::NoGlSharing => "no_gl_sharing",
            Capability::NoExternalMemory => "no_external_memory",
            Capability::GlSharing => "gl_sharing",
            Capability::ExternalMemory => "external_memory",
            Capability::VulkanExport => "vulkan_export",
            Capability::VulkanHostVisible => "vulkan_host_visible",
            Capability::GlMemoryObject => "gl_memory_object",
            Capability::TwoDevices => "two_devices",
            Capability::Mpi => "mpi",
        }
    }

    /// Whether `SNOWSIM_REQUIRE` (a comma-separated list of names, or `all`) names this one.
    /// Panics on a name that is no capability, so a misspelt requirement cannot pass.
    pub fn required(self) -> bool {
        required().contains(&self)
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The capabilities `SNOWSIM_REQUIRE` names; panics on an unknown name.
pub fn required() -> Vec<Capability> {
    let Some(list) = std::env::var_os("SNOWSIM_REQUIRE") else {
        return Vec::new();
    };
    let list = list
        .into_string()
        .unwrap_or_else(|l| panic!("SNOWSIM_REQUIRE is not UTF-8: {l:?}"));
    let mut required = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if name == "all" {
            return Capability::ALL.to_vec();
        }
        match Capability::ALL.iter().find(|c| c.name() == name) {
            Some(&c) => required.push(c),
            None => panic!(
                "SNOWSIM_REQUIRE names `{name}`, which is no capability (known: all, {})",
                Capability::ALL.map(Capability::name).join(", ")
            ),
        }
    }
    required
}

/// The running test cannot run here because `capability` is missing, for the reason `why`:
/// where `SNOWSIM_REQUIRE` names the capability this fails the test; elsewhere it prints
/// `SKIPPED: <capability>: <why>` and appends `<test>\t<capability>\t<why>` to the file that
/// `SNOWSIM_SKIP_LOG` names (`scripts/test` lists those lines at the end). The caller returns
/// right after.
#[track_caller]
pub fn skip(capability: Capability, why: impl std::fmt::Display) {
    // One line per skip: the log is read line by line, with tabs between the fields.
    let why = why.to_string().replace(['\n', '\t'], " ");
    if capability.required() {
        panic!("required capability {capability} missing (SNOWSIM_REQUIRE): {why}");
    }
    println!("SKIPPED: {capability}: {why}");
    let Some(log) = std::env::var_os("SNOWSIM_SKIP_LOG") else {
        return;
    };
    // libtest runs each test on a thread named after it; the caller's place otherwise.
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(name) if name != "main" => name.to_string(),
        _ => std::panic::Location::caller().to_string(),
    };
    let line = format!("{} {test}\t{capability}\t{why}\n", env!("CARGO_CRATE_NAME"));
    use std::io::Write;
    // One write of an O_APPEND file: lines of tests on parallel threads do not interleave.
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .unwrap_or_else(|e| panic!("SNOWSIM_SKIP_LOG {}: {e}", Path::new(&log).display()));
}

/// Every test binary checks `SNOWSIM_REQUIRE` once, so a misspelt name fails even where
/// nothing skips.
#[test]
fn snowsim_require_names_only_capabilities() {
    let required = required();
    println!("SNOWSIM_REQUIRE: {required:?}");
}
