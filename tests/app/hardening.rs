//! Issue 16: nothing a user types crashes, hangs or lies. Each case of the issue runs the
//! `snowsim` binary as a user would and checks the exit status, that nothing panicked and the
//! substance of the message; the library's budget, input and output helpers are checked
//! directly; and a harness runs a few hundred mutated meshes and scenes under a timeout and a
//! memory limit.

use std::io::Write;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use snowsim::budget::{Budget, ByteSize, Estimate, bytes_of, cgroup_headroom, meminfo_available};
use snowsim::input::{self, InputError, SpecialKind};
use snowsim::output::{self, AtomicFile, OutputError};

use crate::common::{Capability, skip};

// ---------------------------------------------------------------------------------------------
// Running the binary.

const BIN: &str = env!("CARGO_BIN_EXE_snowsim");

/// What a finished command left.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts the exit code and that nothing panicked; returns stderr for further checks.
    fn expect(&self, code: i32) -> &str {
        assert!(
            !self.stderr.contains("panicked"),
            "panic: {}\n{}",
            self.stderr,
            self.stdout
        );
        assert_eq!(
            self.status.code(),
            Some(code),
            "status {:?}\nstdout: {}\nstderr: {}",
            self.status,
            self.stdout,
            self.stderr
        );
        &self.stderr
    }
}

/// Runs snowsim with `args` and optional environment, stdout to `stdout` (a path) or a pipe,
/// killing it after `timeout`.
fn run_with(args: &[&str], env: &[(&str, &str)], stdout: Option<&Path>, timeout: Duration) -> Run {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    match stdout {
        Some(path) => {
            let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            command.stdout(file);
        }
        None => {
            command.stdout(Stdio::piped());
        }
    }
    finish(command.spawn().expect("run snowsim"), timeout)
}

/// The most digits in a row in `text`: a number written short has few (`1e308`, not 309
/// digits).
fn longest_digit_run(text: &str) -> usize {
    text.split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0)
}

fn snowsim(args: &[&str]) -> Run {
    run_with(args, &[], None, Duration::from_secs(120))
}

/// Runs snowsim under `ulimit -v` (address space in KiB): only for commands that open neither
/// OpenCL nor OpenGL.
fn snowsim_limited(kib: u64, args: &[&str]) -> Run {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -v {kib}; exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    finish(command.spawn().unwrap(), Duration::from_secs(60))
}

/// Waits for `child` at most `timeout` (then kills it and fails), reading its output.
fn finish(child: Child, timeout: Duration) -> Run {
    let done = crate::common::wait_within(child, timeout);
    Run {
        status: done.status,
        stdout: done.stdout,
        stderr: done.stderr,
    }
}

fn sample(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample_meshes")
        .join(name)
        .display()
        .to_string()
}

fn scene_path(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenes")
        .join(name)
        .display()
        .to_string()
}

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snowsim-hardening-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Files whose name ends in `.partial` in `dir`.
fn partial_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".partial"))
        .collect()
}

/// One regular tetrahedron with vertex 2's x replaced by `x`, as ASCII.
fn tetrahedron_with_x(x: &str) -> String {
    format!(
        "MeshVersionFormatted 2\nDimension 3\nVertices\n4\n0 0 0 0\n{x} 0 0 0\n0 1 0 0\n0 0 1 0\n\
         Tetrahedra\n1\n1 2 3 4 1\nEnd\n"
    )
}

/// A small flat scene, `extra` appended (TOML).
fn flat_scene(domain: &str, extra: &str) -> String {
    format!(
        "[domain]\nflat = true\nsize = [100, 80]\ntop = 40\n{domain}\n{extra}\n[snow]\nparticles = 64\n"
    )
}

// ---------------------------------------------------------------------------------------------
// Output failures: stdout errors end the command with a message, never a panic.

#[test]
fn mesh_info_into_a_full_disk_is_an_error_not_a_panic() {
    let run = run_with(
        &["mesh", "info", &sample("cube.meshb")],
        &[],
        Some(Path::new("/dev/full")),
        Duration::from_secs(60),
    );
    let err = run.expect(1);
    assert!(err.contains("cannot write to standard output"), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
}

#[test]
fn devices_into_a_full_disk_is_an_error_not_a_panic() {
    for args in [&["devices"][..], &["devices", "--json"]] {
        let run = run_with(
            args,
            &[],
            Some(Path::new("/dev/full")),
            Duration::from_secs(60),
        );
        let err = run.expect(1);
        assert!(err.contains("cannot write to standard output"), "{err}");
    }
}

#[test]
fn help_and_version_into_a_full_disk_are_an_error() {
    // clap printed them itself, ignored the failed write and exited 0.
    for args in [
        &["--help"][..],
        &["-V"],
        &["mesh", "quality", "--help"],
        &["help", "run"],
        &["bench", "launch", "-h"],
    ] {
        let run = run_with(
            args,
            &[],
            Some(Path::new("/dev/full")),
            Duration::from_secs(60),
        );
        let err = run.expect(1);
        assert_eq!(
            err.trim(),
            "error: cannot write to standard output: No space left on device (os error 28)",
            "{args:?}"
        );
    }
    // Written, they still end with status 0, and usage errors with clap's 2 on stderr.
    let run = snowsim(&["--help"]);
    run.expect(0);
    assert!(
        run.stdout.contains("Usage: snowsim <COMMAND>"),
        "{}",
        run.stdout
    );
    let run = run_with(
        &["--no-such-option"],
        &[],
        Some(Path::new("/dev/full")),
        Duration::from_secs(60),
    );
    let err = run.expect(2);
    assert!(
        err.contains("unexpected argument '--no-such-option'"),
        "{err}"
    );
}

#[test]
fn a_closed_pipe_stays_quiet() {
    let mut child = Command::new(BIN)
        .args(["mesh", "info", &sample("cube.meshb")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let run = finish(child, Duration::from_secs(60));
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!run.stderr.contains("error"), "{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------
// Sizes checked before allocating.

#[test]
fn smooth_with_the_largest_iteration_count_starts_without_preallocating() {
    let dir = temp_dir("smooth-iterations");
    let out = dir.join("out.meshb");
    // Into a full disk: the first iteration's line fails and ends the run (it would take
    // forever otherwise); before the fix, 4294967295 slots were allocated first (34 GB).
    let run = run_with(
        &[
            "mesh",
            "smooth",
            &sample("square_2d.meshb"),
            s(&out),
            "-n",
            "4294967295",
        ],
        &[],
        Some(Path::new("/dev/full")),
        Duration::from_secs(120),
    );
    let err = run.expect(1);
    assert!(err.contains("cannot write to standard output"), "{err}");
    assert!(!out.exists());
    assert!(partial_files(&dir).is_empty());
}

#[test]
fn sort_evolve_refuses_a_length_beyond_the_sorter() {
    let run = snowsim(&["sort", "evolve", "--len", "1099511627776", "--frames", "1"]);
    let err = run.expect(2);
    assert!(err.contains("must be 1 to 2147483648"), "{err}");
}

#[test]
fn sort_evolve_refuses_drift_and_respawn_outside_their_range() {
    // Each was accepted: NaN and infinite drifts, a respawn fraction of 2 or NaN.
    for (option, value, range) in [
        ("--drift", "nan", "0 to 2147483648 (2^31)"),
        ("--drift", "inf", "0 to 2147483648 (2^31)"),
        ("--drift", "-1", "0 to 2147483648 (2^31)"),
        ("--drift", "3e9", "0 to 2147483648 (2^31)"),
        ("--respawn", "2", "0 to 1"),
        ("--respawn", "nan", "0 to 1"),
        ("--respawn", "-0.5", "0 to 1"),
    ] {
        let arg = format!("{option}={value}");
        let run = snowsim(&["sort", "evolve", "--len", "1024", "--frames", "1", &arg]);
        let err = run.expect(2);
        assert!(
            err.contains(&format!(
                "invalid value '{value}' for '{option} <{}>': must be a number from {range}, \
                 got {value}",
                option[2..].to_uppercase()
            )),
            "{arg}: {err}"
        );
    }
    // The ends of the ranges run.
    let run = snowsim(&[
        "sort",
        "evolve",
        "--len",
        "1024",
        "--frames",
        "1",
        "--drift",
        "2147483648",
        "--respawn",
        "1",
    ]);
    run.expect(0);
}

#[test]
fn sort_bench_checks_device_memory_before_allocating() {
    let run = snowsim(&["sort", "bench", "--min-log2", "31", "--max-log2", "31"]);
    if run.status.success() {
        // 2^31 pairs fit on large GPUs (the H100's 80 GB): then there is nothing to refuse.
        let devices = snowsim(&["devices", "--json"]);
        let list: serde_json::Value = serde_json::from_str(&devices.stdout).unwrap();
        let largest = list
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["global_mem_bytes"].as_u64())
            .max()
            .unwrap_or(0);
        assert!(
            largest >= 32 << 30,
            "2^31 pairs ran on a device of {largest} bytes"
        );
        skip(
            Capability::SmallMemory,
            format!("the default device holds 2^31 pairs ({largest} bytes of memory)"),
        );
        return;
    }
    let err = run.expect(1);
    assert!(err.contains("`--max-log2 31`"), "{err}");
    assert!(
        err.contains("CL_DEVICE_GLOBAL_MEM_SIZE")
            || err.contains("CL_DEVICE_MAX_MEM_ALLOC_SIZE")
            || err.contains("of host memory"),
        "{err}"
    );
}

#[test]
fn sort_bench_iterations_cannot_wrap() {
    let run = snowsim(&["sort", "bench", "--iterations", "4294967295"]);
    let err = run.expect(2);
    assert!(err.contains("4294967295"), "{err}");
    assert!(err.contains("100000"), "{err}");
}

#[test]
fn bench_launch_counts_are_refused_outside_their_range() {
    // `bench gml --launches 0` ran one launch and said nothing of it.
    for (args, range) in [
        (["bench", "gml", "--launches", "0"], "0 is not in 1..=10000"),
        (
            ["bench", "reduce", "--launches", "0"],
            "0 is not in 1..=10000",
        ),
        (
            ["bench", "launch", "--launches", "1"],
            "1 is not in 2..=100000",
        ),
        (
            ["bench", "gml", "--launches", "10001"],
            "10001 is not in 1..=10000",
        ),
    ] {
        let run = snowsim(&args);
        let err = run.expect(2);
        assert!(
            err.contains("for '--launches <LAUNCHES>'") && err.contains(range),
            "{args:?}: {err}"
        );
    }
}

/// `bench launch --vertices 2^28` (its documented maximum) checked only the kernel's field (4
/// bytes a vertex) against the device, though gml puts the vertices (16 bytes, the largest
/// buffer) and their references there too, and on a CPU device counted none of it against
/// the host, where PoCL keeps its buffers: PoCL then aborted on an assertion
/// (`pocl_create_migration_commands: Assertion `p->mem_ptr != NULL'`) when an allocation
/// failed. Run on PoCL, whose limits `POCL_MEMORY_LIMIT` and `ulimit -v` make small.
#[test]
fn bench_launch_checks_every_buffer_against_the_device_and_the_host_first() {
    let args = [
        "bench",
        "launch",
        "--vertices",
        "268435456",
        "--launches",
        "2",
        "--device",
        "pocl",
    ];
    // 4 GiB of device memory: PoCL allocates a quarter, 1 GiB, per buffer.
    let run = run_with(
        &args,
        &[("POCL_MEMORY_LIMIT", "4")],
        None,
        Duration::from_secs(60),
    );
    let err = run.expect(1);
    assert!(
        err.contains(
            "`--vertices 268435456` needs a single device buffer of ~4.3 GB for the device's \
             copies of the vertices, their references and the field;"
        ) && err.contains("per buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE)"),
        "{err}"
    );

    // 8 GB of address space, PoCL's own limits as it reports them: the host's copies and
    // PoCL's buffers (~13 GB) do not fit.
    let limited = |args: &[&str]| {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg("ulimit -v 8000000; exec \"$0\" \"$@\"")
            .arg(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Only PoCL: a GPU driver may not start in 8 GB of address space.
        let icd = Path::new("/etc/OpenCL/vendors/pocl.icd");
        if icd.exists() {
            command.env("OCL_ICD_VENDORS", icd);
        }
        finish(command.spawn().unwrap(), Duration::from_secs(60))
    };
    let devices = limited(&["devices", "--json"]);
    devices.expect(0);
    let list: serde_json::Value = serde_json::from_str(&devices.stdout).unwrap();
    let pocl = list
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["platform"].as_str() == Some("Portable Computing Language"))
        .expect("a PoCL device (the test's CPU device)");
    let run = limited(&args);
    let err = run.expect(1);
    let max_alloc = pocl["max_alloc_bytes"].as_u64().unwrap();
    let global = pocl["global_mem_bytes"].as_u64().unwrap();
    let needle = if max_alloc < 1 << 32 {
        "per buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE)"
    } else if global < 24 << 28 {
        "(CL_DEVICE_GLOBAL_MEM_SIZE)"
    } else {
        "`--vertices 268435456` needs ~13 GB of host memory for the vertices (float4), their \
         references and the kernel's field (f32) and, on this CPU device, the device's copies \
         of the vertices, their references and the field;"
    };
    assert!(err.contains(needle), "{err}");
}

#[test]
fn mesh_terrain_beyond_memory_is_refused_before_meshing() {
    let dir = temp_dir("terrain-budget");
    let out = dir.join("air.meshb");
    let args = [
        "mesh",
        "terrain",
        "--size",
        "1000,1000,500",
        "--cells",
        "3000,3000",
        "--layers",
        "30",
        "--out",
        s(&out),
    ];
    // 8 GB of address space, so the refusal does not depend on this machine's memory.
    let run = snowsim_limited(8_000_000, &args);
    let err = run.expect(1);
    assert!(
        err.contains("`--cells 3000,3000` × `--layers 30` needs ~"),
        "{err}"
    );
    assert!(err.contains("of host memory for the volume mesh"), "{err}");
    assert!(!out.exists());
}

// ---------------------------------------------------------------------------------------------
// Values checked.

#[test]
fn quality_and_smooth_refuse_non_finite_and_absurd_coordinates() {
    let dir = temp_dir("coordinates");
    for (x, shown) in [("NaN", "NaN"), ("inf", "inf"), ("-1e300", "-1e300")] {
        let path = dir.join("bad.mesh");
        std::fs::write(&path, tetrahedron_with_x(x)).unwrap();
        let run = snowsim(&["mesh", "quality", s(&path)]);
        let err = run.expect(1);
        assert!(err.contains(&format!("vertex 2 has x = {shown}")), "{err}");
        let out = dir.join("out.mesh");
        let run = snowsim(&["mesh", "smooth", s(&path), s(&out), "-n", "1"]);
        let err = run.expect(1);
        assert!(err.contains(&format!("vertex 2 has x = {shown}")), "{err}");
        assert!(!out.exists());
    }
}

#[test]
fn an_ascii_mesh_cut_inside_a_keyword_is_an_error() {
    let dir = temp_dir("cut-keyword");
    let text = tetrahedron_with_x("1");
    let cut = &text[..text.find("Tetrahedra").unwrap() + "Tetra".len()];
    let path = dir.join("cut.mesh");
    std::fs::write(&path, cut).unwrap();
    let run = snowsim(&["mesh", "info", "--check", s(&path)]);
    let err = run.expect(1);
    assert!(
        err.contains("`Tetra` looks like the beginning of Tetrahedra"),
        "{err}"
    );
    assert!(err.contains("line 9"), "{err}");
}

#[test]
fn a_byte_order_mark_before_an_ascii_mesh_is_skipped() {
    let dir = temp_dir("bom");
    let path = dir.join("bom.mesh");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend_from_slice(tetrahedron_with_x("1").as_bytes());
    std::fs::write(&path, bytes).unwrap();
    let run = snowsim(&["mesh", "info", "--check", s(&path)]);
    run.expect(0);
    assert!(run.stdout.contains("tetrahedra"), "{}", run.stdout);
}

#[test]
fn os_errors_are_printed_once() {
    let missing = "/nonexistent/snowsim/x";
    for args in [
        vec!["scene", "check", "/nonexistent/snowsim/x.toml"],
        vec!["mesh", "info", "/nonexistent/snowsim/x.meshb"],
        vec![
            "mesh",
            "terrain",
            "--size",
            "10,10,5",
            "--cells",
            "2,2",
            "--layers",
            "1",
            "--heightmap",
            "/nonexistent/snowsim/x.png",
            "--out",
            "/tmp/snowsim-hardening-unused.meshb",
        ],
    ] {
        let run = snowsim(&args);
        let err = run.expect(1);
        assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");
        assert!(err.contains(missing), "{err}");
    }
}

#[test]
fn no_opencl_platform_exits_with_status_2() {
    let env = [("OCL_ICD_VENDORS", "/nonexistent/snowsim-icd")];
    if run_with(&["devices"], &env, None, Duration::from_secs(60))
        .status
        .success()
    {
        skip(
            Capability::IcdOverride,
            "this machine's OpenCL loader finds platforms despite OCL_ICD_VENDORS",
        );
        return;
    }
    for args in [
        &["bench", "gml", "--cells", "2"][..],
        &["mesh", "quality", &sample("cube.meshb")],
        &["devices"],
        &["sort", "check"],
    ] {
        let run = run_with(args, &env, None, Duration::from_secs(60));
        let err = run.expect(2);
        assert!(err.contains("no OpenCL platform"), "{args:?}: {err}");
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs: special files refused by name before reading.

#[test]
fn a_fifo_as_scene_file_or_heightmap_is_refused_without_blocking() {
    let dir = temp_dir("fifo");
    let fifo = dir.join("scene.toml");
    mkfifo(&fifo);
    let run = run_with(
        &["scene", "check", s(&fifo)],
        &[],
        None,
        Duration::from_secs(30),
    );
    let err = run.expect(1);
    assert!(
        err.contains("is a FIFO (named pipe), not a regular file"),
        "{err}"
    );

    let png = dir.join("map.png");
    mkfifo(&png);
    let out = dir.join("air.meshb");
    let run = snowsim_limited(
        2_000_000,
        &[
            "mesh",
            "terrain",
            "--heightmap",
            s(&png),
            "--size",
            "10,10,5",
            "--cells",
            "2,2",
            "--layers",
            "1",
            "--out",
            s(&out),
        ],
    );
    let err = run.expect(1);
    assert!(err.contains("FIFO"), "{err}");

    let scene = dir.join("fifo-map.toml");
    std::fs::write(
        &scene,
        "[domain]\nheightmap = \"map.png\"\nsize = [10, 10]\ntop = 5\nrelief = 1\n",
    )
    .unwrap();
    let run = snowsim(&["scene", "check", s(&scene)]);
    let err = run.expect(1);
    assert!(err.contains("domain.heightmap"), "{err}");
    assert!(err.contains("FIFO"), "{err}");
}

#[test]
fn a_link_to_dev_zero_is_judged_as_the_device() {
    let dir = temp_dir("dev-zero");
    let scene = dir.join("zero.toml");
    symlink("/dev/zero", &scene).unwrap();
    let run = snowsim_limited(2_000_000, &["scene", "check", s(&scene), "--no-mesh"]);
    let err = run.expect(1);
    assert!(err.contains("a link to /dev/zero"), "{err}");
    assert!(err.contains("character device"), "{err}");

    let mesh = dir.join("zero.meshb");
    symlink("/dev/zero", &mesh).unwrap();
    let run = snowsim_limited(2_000_000, &["mesh", "info", s(&mesh)]);
    let err = run.expect(1);
    assert!(err.contains("character device"), "{err}");
}

#[test]
fn shader_overrides_refuse_fifos_and_missing_directories() {
    let dir = temp_dir("shader-dir");
    mkfifo(&dir.join("particles.frag"));
    let run_args = [
        "run",
        "--headless",
        "--frames",
        "2",
        "--size",
        "64x48",
        "--particles",
        "64",
        "--scene",
        "scenes/flat.toml",
    ];
    let manifest = env!("CARGO_MANIFEST_DIR");
    let in_repo = |env: &[(&str, &str)]| {
        let mut command = Command::new(BIN);
        command
            .current_dir(manifest)
            .args(run_args)
            .stdin(Stdio::null());
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        finish(command.spawn().unwrap(), Duration::from_secs(60))
    };
    let run = in_repo(&[("SNOWSIM_SHADER_DIR", s(&dir))]);
    let err = run.expect(1);
    assert!(
        err.contains("particles.frag") && err.contains("FIFO"),
        "{err}"
    );

    let run = in_repo(&[("SNOWSIM_SHADER_DIR", "/nonexistent/snowsim-shaders")]);
    let err = run.expect(1);
    assert!(
        err.contains("SNOWSIM_SHADER_DIR names no directory"),
        "{err}"
    );
}

#[test]
fn kernel_overrides_refuse_fifos_and_missing_directories() {
    let dir = temp_dir("kernel-dir");
    mkfifo(&dir.join("selftest.cl"));
    let env = [("SNOWSIM_KERNEL_DIR", s(&dir))];
    let run = run_with(
        &["selftest", "--elements", "1024", "--iterations", "1"],
        &env,
        None,
        Duration::from_secs(60),
    );
    let err = run.expect(1);
    assert!(err.contains("selftest.cl"), "{err}");
    assert!(err.contains("FIFO"), "{err}");

    let env = [("SNOWSIM_KERNEL_DIR", "/nonexistent/snowsim-kernels")];
    let run = run_with(
        &["selftest", "--elements", "1024", "--iterations", "1"],
        &env,
        None,
        Duration::from_secs(60),
    );
    let err = run.expect(1);
    assert!(
        err.contains("SNOWSIM_KERNEL_DIR names no directory"),
        "{err}"
    );
}

#[test]
fn kernel_options_reach_the_compiler_and_its_log_is_printed() {
    let dir = temp_dir("kernel-options");
    let selftest = include_str!("../../kernels/selftest.cl");
    std::fs::write(
        dir.join("selftest.cl"),
        format!("#ifdef SNOWSIM_PROBE\n#warning probe-seen\n#endif\n{selftest}"),
    )
    .expect("write the kernel override");
    let args = ["selftest", "--elements", "1024", "--iterations", "1"];
    let timeout = Duration::from_secs(60);

    let with = [
        ("SNOWSIM_KERNEL_DIR", s(&dir)),
        ("SNOWSIM_KERNEL_LOG", "1"),
        ("SNOWSIM_KERNEL_OPTIONS", "-DSNOWSIM_PROBE"),
    ];
    let run = run_with(&args, &with, None, timeout);
    let err = run.expect(0);
    assert!(err.contains("build log of selftest.cl"), "{err}");
    assert!(err.contains("probe-seen"), "{err}");

    // Without the option the warning is not compiled; without the log it is not printed.
    let without = [("SNOWSIM_KERNEL_DIR", s(&dir)), ("SNOWSIM_KERNEL_LOG", "1")];
    let run = run_with(&args, &without, None, timeout);
    let err = run.expect(0);
    assert!(!err.contains("probe-seen"), "{err}");
    for log in [None, Some("0")] {
        let mut quiet = vec![
            ("SNOWSIM_KERNEL_DIR", s(&dir)),
            ("SNOWSIM_KERNEL_OPTIONS", "-DSNOWSIM_PROBE"),
        ];
        quiet.extend(log.map(|v| ("SNOWSIM_KERNEL_LOG", v)));
        let run = run_with(&args, &quiet, None, timeout);
        let err = run.expect(0);
        assert!(!err.contains("build log of"), "{log:?}: {err}");
    }
}

#[test]
fn a_scene_is_read_from_standard_input() {
    let mut child = Command::new(BIN)
        .args(["scene", "check", "-", "--no-mesh"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(flat_scene("cells = [2, 2]\nlayers = 2", "").as_bytes())
        .unwrap();
    let run = finish(child, Duration::from_secs(60));
    run.expect(0);
    assert!(run.stdout.contains("64 particles"), "{}", run.stdout);
}

// ---------------------------------------------------------------------------------------------
// Scenes: `scene check` refuses what `run` would.

#[test]
fn scene_check_refuses_more_particles_than_can_run() {
    let dir = temp_dir("particles");
    let path = dir.join("many.toml");
    let text = flat_scene("cells = [2, 2]\nlayers = 2", "")
        .replace("particles = 64", "particles = 134217728");
    std::fs::write(&path, text).unwrap();
    let run = snowsim(&["scene", "check", s(&path), "--no-mesh"]);
    let err = run.expect(1);
    assert!(err.contains(":9:13: snow.particles:"), "{err}");
    assert!(err.contains("134217727 (2^27 − 1"), "{err}");
}

#[test]
fn scene_check_refuses_lengths_the_simulation_cannot_hold() {
    let dir = temp_dir("top");
    let path = dir.join("top.toml");
    std::fs::write(
        &path,
        flat_scene("cells = [2, 2]\nlayers = 2", "").replace("top = 40", "top = 1e308"),
    )
    .unwrap();
    let run = snowsim(&["scene", "check", s(&path), "--no-mesh"]);
    let err = run.expect(1);
    assert!(
        err.contains(":4:7: domain.top: must be > 0 and <= 1e7 m, got 1e308"),
        "{err}"
    );
}

#[test]
fn scene_check_refuses_a_domain_beyond_memory_with_its_line() {
    let dir = temp_dir("cells");
    let path = dir.join("cells.toml");
    std::fs::write(&path, flat_scene("cells = [10000, 10000]\nlayers = 3", "")).unwrap();
    // The domain mesh alone needs far more than this machine (and the ground of a run, more
    // than the renderer's GL buffers hold); nothing is allocated before the refusal.
    let run = snowsim_limited(4_000_000, &["scene", "check", s(&path)]);
    let err = run.expect(1);
    assert!(err.contains(":5:9: domain.cells:"), "{err}");
    assert!(
        err.contains("GL buffers") || err.contains("of host memory"),
        "{err}"
    );
    // Without the mesh, what is refused is the renderer's share: the counts and the limits.
    let run = snowsim_limited(4_000_000, &["scene", "check", s(&path), "--no-mesh"]);
    let err = run.expect(1);
    assert!(
        err.contains(":5:9: domain.cells: [10000, 10000] cells make 100020001 ground vertices")
            && err.contains("the renderer's GL buffers hold at most"),
        "{err}"
    );

    std::fs::write(&path, flat_scene("cells = [3000, 3000]\nlayers = 30", "")).unwrap();
    let run = snowsim_limited(4_000_000, &["scene", "check", s(&path)]);
    let err = run.expect(1);
    assert!(err.contains("domain.cells"), "{err}");
    // The domain mesh's estimate, or the run's ground's where less address space is left (a
    // 16-core machine's threads reserve more of the 4 GB limit).
    assert!(
        err.contains("host memory for the domain mesh")
            || err.contains("host memory for the ground of a run"),
        "{err}"
    );
}

#[test]
fn scene_check_still_passes_the_shipped_scenes() {
    let run = snowsim(&["scene", "check", &scene_path("flat.toml")]);
    run.expect(0);
}

// ---------------------------------------------------------------------------------------------
// Outputs: validated before the work, written atomically.

#[test]
fn terrain_refuses_the_same_path_for_surface_and_volume() {
    let dir = temp_dir("same-output");
    let out = dir.join("air.meshb");
    let run = snowsim_limited(
        2_000_000,
        &[
            "mesh",
            "terrain",
            "--size",
            "10,10,5",
            "--cells",
            "2,2",
            "--layers",
            "1",
            "--out",
            s(&out),
            "--surface",
            s(&out),
        ],
    );
    let err = run.expect(1);
    assert!(
        err.contains("--out") && err.contains("--surface") && err.contains("are the same file"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn convert_refuses_an_output_that_is_the_input_through_a_link() {
    let dir = temp_dir("convert-self");
    let input = dir.join("cube.meshb");
    std::fs::copy(sample("cube.meshb"), &input).unwrap();
    let link = dir.join("link.meshb");
    symlink(&input, &link).unwrap();
    let run = snowsim_limited(2_000_000, &["mesh", "convert", s(&input), s(&link)]);
    let err = run.expect(1);
    assert!(
        err.contains("the output") && err.contains("the input") && err.contains("same file"),
        "{err}"
    );
}

#[test]
fn outputs_in_a_missing_directory_fail_before_the_work() {
    let run = snowsim_limited(
        2_000_000,
        &[
            "mesh",
            "convert",
            &sample("cube.meshb"),
            "/nonexistent/snowsim/out.mesh",
        ],
    );
    let err = run.expect(1);
    assert!(
        err.contains("directory /nonexistent/snowsim does not exist"),
        "{err}"
    );

    let run = snowsim(&[
        "sort",
        "evolve",
        "--len",
        "1024",
        "--frames",
        "1",
        "--csv",
        "/nonexistent/snowsim/frames.csv",
    ]);
    let err = run.expect(1);
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn a_time_series_larger_than_the_disk_is_refused_first() {
    let dir = temp_dir("csv-disk");
    let csv = dir.join("frames.csv");
    let run = snowsim(&[
        "sort",
        "evolve",
        "--len",
        "1024",
        "--frames",
        "1000000000000000",
        "--csv",
        s(&csv),
    ]);
    let err = run.expect(1);
    assert!(err.contains("`--frames 1000000000000000` needs ~"), "{err}");
    assert!(err.contains("of disk space for the CSV rows"), "{err}");
    assert!(!csv.exists());
    assert!(partial_files(&dir).is_empty());
}

#[test]
fn valley_checks_its_format_and_writes_through_links_keeping_the_mode() {
    let dir = temp_dir("valley");
    let jpg = dir.join("valley.jpg");
    let run = snowsim_limited(
        2_000_000,
        &["scene", "valley", s(&jpg), "--resolution", "16"],
    );
    let err = run.expect(1);
    assert!(err.contains("only PNG images are written"), "{err}");
    assert!(!jpg.exists());

    let run = snowsim_limited(
        2_000_000,
        &["scene", "valley", s(&dir), "--resolution", "16"],
    );
    let err = run.expect(1);
    assert!(err.contains("is a directory"), "{err}");

    // An old PNG (another kind needs --force: every_writer_asks_for_force_before_replacing_…).
    let target = dir.join("real.png");
    std::fs::write(&target, b"\x89PNG\r\n\x1a\nold").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.join("link.png");
    symlink("real.png", &link).unwrap();
    let run = snowsim_limited(
        2_000_000,
        &["scene", "valley", s(&link), "--resolution", "16"],
    );
    run.expect(0);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let bytes = std::fs::read(&target).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 20);
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert!(partial_files(&dir).is_empty());
}

#[test]
fn sigterm_removes_the_temporary_file_and_exits_143() {
    let dir = temp_dir("sigterm");
    let csv = dir.join("frames.csv");
    let child = Command::new(BIN)
        .args([
            "sort",
            "evolve",
            "--len",
            "4096",
            // Long enough to be stopped midway, small enough for the disk check (~0.3 GB).
            "--frames",
            "1000000",
            "--csv",
            s(&csv),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the temporary exists (the CSV is open), then stop the command.
    let started = Instant::now();
    while partial_files(&dir).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "no temporary");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill sends a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let run = finish(child, Duration::from_secs(30));
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    // Exit status 143, or death by SIGTERM when LLVM's handler (the OpenCL compiler's), which
    // runs after ours, re-raises it: a shell shows 143 either way.
    assert!(
        run.status.code() == Some(143) || run.status.signal() == Some(libc::SIGTERM),
        "{:?}",
        run.status
    );
    assert!(partial_files(&dir).is_empty(), "{:?}", partial_files(&dir));
    assert!(!csv.exists());
}

// ---------------------------------------------------------------------------------------------
// The library's helpers.

#[test]
fn byte_sizes_read_as_people_write_them() {
    assert_eq!(ByteSize(0).to_string(), "0 bytes");
    assert_eq!(ByteSize(999).to_string(), "999 bytes");
    assert_eq!(ByteSize(1000).to_string(), "1.0 kB");
    assert_eq!(ByteSize(9_600_000_000).to_string(), "9.6 GB");
    assert_eq!(ByteSize(23_000_000_000).to_string(), "23 GB");
    assert_eq!(ByteSize(999_999_999).to_string(), "1.0 GB");
    assert_eq!(ByteSize(u64::MAX).to_string(), "18 EB");
}

#[test]
fn budgets_name_the_setting_the_estimate_and_the_limit() {
    let budget = Budget::with_host_available(23_000_000_000);
    let fits = Estimate::new("x", "y", 1_000_000);
    assert!(budget.check(&fits).is_ok());
    let error = budget
        .check(&Estimate::new(
            "`domain.cells = [10000, 10000]` × 3 layers",
            "the mesh",
            9_600_000_000_000,
        ))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`domain.cells = [10000, 10000]` × 3 layers needs ~9.6 TB of host memory for the mesh; \
         this machine has 23 GB available"
    );
    let overflow = Estimate::new("`--len`", "the keys", bytes_of(&[u64::MAX, 2]));
    let error = Budget::with_host_available(u64::MAX)
        .check(&overflow)
        .unwrap_err();
    assert!(error.to_string().contains("more than 18 EB"), "{error}");
}

#[test]
fn host_limits_parse_meminfo_and_control_groups() {
    assert_eq!(
        meminfo_available("MemTotal: 10 kB\nMemAvailable:  2048 kB\n"),
        Some(2048 * 1024)
    );
    assert_eq!(meminfo_available("MemTotal: 10 kB\n"), None);
    assert_eq!(cgroup_headroom("1000\n", "400\n"), Some(600));
    assert_eq!(cgroup_headroom("max\n", "400\n"), None);
    let host = Budget::host();
    assert!(host.available() > 0);
}

#[test]
fn device_budgets_check_the_total_and_each_buffer() {
    let devices = snowsim::cl::list_devices().expect("an OpenCL device (PoCL in CI)");
    let info = &devices[0].info;
    let budget = Budget::device(info);
    let one_buffer_too_large =
        Estimate::new("`--len`", "the keys", 1).with_largest_allocation(info.max_alloc_bytes + 1);
    let error = budget.check(&one_buffer_too_large).unwrap_err();
    assert!(
        error.to_string().contains("CL_DEVICE_MAX_MEM_ALLOC_SIZE"),
        "{error}"
    );
    let total = Estimate::new("`--len`", "the keys", info.global_mem_bytes + 1);
    let error = budget.check(&total).unwrap_err();
    assert!(
        error.to_string().contains("CL_DEVICE_GLOBAL_MEM_SIZE"),
        "{error}"
    );
}

#[test]
fn disk_budgets_measure_the_output_directory() {
    let dir = temp_dir("disk");
    let budget = Budget::disk(&dir.join("out.csv")).unwrap();
    assert!(budget.available() > 0);
    let error = budget
        .check(&Estimate::new("`--frames`", "the recording", u64::MAX - 1))
        .unwrap_err();
    assert!(error.to_string().contains("of disk space"), "{error}");
    assert!(
        error.to_string().contains(&dir.display().to_string()),
        "{error}"
    );
}

#[test]
fn inputs_are_regular_files_read_up_to_a_cap() {
    let dir = temp_dir("inputs");
    let file = dir.join("a.txt");
    std::fs::write(&file, "hello").unwrap();
    assert_eq!(input::read_text(&file, 5).unwrap(), "hello");
    let error = input::read(&file, 4).unwrap_err();
    assert!(matches!(error, InputError::TooLarge { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        format!("{} is 5 bytes; at most 4 bytes is read", file.display())
    );
    let error = input::read(&dir, 10).unwrap_err();
    assert!(matches!(
        error,
        InputError::NotRegular {
            kind: SpecialKind::Directory,
            ..
        }
    ));
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let error = input::read(&fifo, 10).unwrap_err();
    assert!(matches!(
        error,
        InputError::NotRegular {
            kind: SpecialKind::Fifo,
            ..
        }
    ));
    let error = input::read_text(Path::new("/proc/self/status"), 16).unwrap_err();
    assert!(error.to_string().contains("more than 16 bytes"), "{error}");
    std::fs::write(&file, b"\xff").unwrap();
    assert!(matches!(
        input::read_text(&file, 10).unwrap_err(),
        InputError::NotUtf8 { offset: 0, .. }
    ));
}

#[test]
fn atomic_files_replace_the_target_or_leave_it_alone() {
    let dir = temp_dir("atomic");
    let path = dir.join("out.txt");
    std::fs::write(&path, "old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    {
        let mut file = AtomicFile::create(&path).unwrap();
        file.write_all(b"half").unwrap();
        assert_eq!(partial_files(&dir).len(), 1);
        // Dropped without commit: the old file stays.
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
    assert!(partial_files(&dir).is_empty());
    output::write_atomic(&path, b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let error = output::write_atomic(&dir, b"x").unwrap_err();
    assert!(matches!(error, OutputError::NotAFile { .. }), "{error}");
    let error = output::write_atomic(Path::new("/dev/null"), b"x").unwrap_err();
    assert!(matches!(error, OutputError::NotAFile { .. }), "{error}");
    assert!(output::same_file(&path, &dir.join(".").join("out.txt")));
    let error = output::check_image(&dir.join("x.bmp")).unwrap_err();
    assert!(matches!(error, OutputError::ImageFormat { .. }), "{error}");
    assert!(output::check_image(&dir.join("x.png")).is_ok());
}

// ---------------------------------------------------------------------------------------------
// The harness: mutated meshes and scenes under a timeout and a memory limit.

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One mutation of `bytes`: a truncation, byte flips, or a number replaced by a huge or
/// negative count.
fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = bytes.to_vec();
    match rng.below(4) {
        0 => out.truncate(rng.below(bytes.len())),
        1 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
        }
        2 => {
            // A 4-byte word set to a huge or negative value (binary counts and positions).
            let i = rng.below(out.len().saturating_sub(4)) & !3;
            let value: u32 = [u32::MAX, i32::MAX as u32, 0x8000_0000, 0x7fff_fff0][rng.below(4)];
            if i + 4 <= out.len() {
                out[i..i + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
        _ => {
            // A number in text replaced by a huge, negative or non-finite one.
            let text = String::from_utf8_lossy(&out).into_owned();
            let starts: Vec<usize> = text
                .char_indices()
                .filter(|&(i, c)| {
                    c.is_ascii_digit()
                        && (i == 0 || !text.as_bytes()[i - 1].is_ascii_alphanumeric())
                })
                .map(|(i, _)| i)
                .collect();
            if let Some(&at) = starts.get(rng.below(starts.len())) {
                let end = text[at..]
                    .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
                    .map_or(text.len(), |n| at + n);
                let replacement = [
                    "4294967295",
                    "18446744073709551615",
                    "-1",
                    "1e308",
                    "nan",
                    "inf",
                    "1e30",
                    "99999999999",
                ][rng.below(8)];
                out = format!("{}{replacement}{}", &text[..at], &text[end..]).into_bytes();
            }
        }
    }
    out
}

/// Runs one mutated input under a 2 GB address space and a 20 s timeout; returns the exit
/// status, failing on a signal, a timeout or a panic.
fn run_mutant(args: &[&str], what: &str) -> i32 {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -v 2000000; exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .env("OCL_ICD_VENDORS", "/nonexistent/snowsim-icd")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let run = finish(child, Duration::from_secs(20));
    assert!(
        run.status.signal().is_none(),
        "{what}: killed by signal {:?}: {}",
        run.status.signal(),
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{what}: {}", run.stderr);
    let code = run.status.code().unwrap_or(-1);
    assert!(
        matches!(code, 0..=3),
        "{what}: status {code}: {}",
        run.stderr
    );
    code
}

#[test]
fn mutated_meshes_and_scenes_end_with_a_status_not_a_crash() {
    let dir = temp_dir("harness");
    let mut rng = Rng(0x5EED_1616);
    let small_ascii = tetrahedron_with_x("1").into_bytes();
    let meshes: Vec<(&str, Vec<u8>)> = vec![
        ("mesh", small_ascii),
        ("meshb", std::fs::read(sample("square_2d.meshb")).unwrap()),
        ("meshb", std::fs::read(sample("hexahedra.meshb")).unwrap()),
        ("mesh", std::fs::read(sample("hex_cube_gmsh.mesh")).unwrap()),
    ];
    let scene = std::fs::read(scene_path("flat.toml")).unwrap();
    let started = Instant::now();
    let mut statuses = [0usize; 4];
    let mut cases = 0;
    for round in 0..60 {
        for (i, (extension, bytes)) in meshes.iter().enumerate() {
            let path = dir.join(format!("m{round}_{i}.{extension}"));
            std::fs::write(&path, mutate(bytes, &mut rng)).unwrap();
            let code = run_mutant(&["mesh", "info", "--check", s(&path)], s(&path));
            statuses[code as usize] += 1;
            let _ = std::fs::remove_file(&path);
            cases += 1;
        }
        let path = dir.join(format!("s{round}.toml"));
        std::fs::write(&path, mutate(&scene, &mut rng)).unwrap();
        let code = run_mutant(&["scene", "check", s(&path)], s(&path));
        statuses[code as usize] += 1;
        let _ = std::fs::remove_file(&path);
        cases += 1;
    }
    assert_eq!(cases, 300);
    // Most mutants are refused, and some still read.
    assert!(statuses[1] > 0 && statuses[0] > 0, "{statuses:?}");
    eprintln!(
        "{cases} mutants in {:.1} s: statuses {statuses:?}",
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// `snowsim run`: the same limits as `scene check`, and output paths checked before the run.

#[test]
fn run_refuses_what_cannot_run_before_it_starts() {
    let dir = temp_dir("run-limits");
    let scene = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let scene = s(&scene);
    let base = [
        "run",
        "--headless",
        "--frames",
        "1",
        "--size",
        "64x48",
        "--scene",
        scene,
    ];

    // A screenshot that `image` cannot write, and one in a directory that is a file: refused
    // at once, before any frame (so well within the timeout, and no summary).
    for bad in [dir.join("shot.jpg"), dir.join("file.png").join("x.png")] {
        std::fs::write(dir.join("file.png"), b"not a directory").unwrap();
        let mut args = base.to_vec();
        args.extend(["--particles", "64", "--screenshot", s(&bad)]);
        let run = snowsim(&args);
        let err = run.expect(1);
        assert!(err.contains(s(&bad)) || err.contains("file.png"), "{err}");
        assert!(!run.stdout.contains("summary"), "{}", run.stdout);
    }

    // The particles' GL buffer holds at most 2^27 − 1 float4.
    let mut args = base.to_vec();
    args.extend(["--particles", "134217728"]);
    let run = snowsim(&args);
    let err = run.expect(1);
    assert!(
        err.contains("--particles") && err.contains("134217727"),
        "{err}"
    );

    // A scene whose ground cannot fit in memory is refused by `run` with its line, as by
    // `scene check`.
    let path = dir.join("huge.toml");
    std::fs::write(
        &path,
        flat_scene("cells = [2, 2]\nlayers = 2", "")
            .replace("cells = [2, 2]", "cells = [200000, 200000]"),
    )
    .unwrap();
    let run = snowsim(&["run", "--headless", "--frames", "1", "--scene", s(&path)]);
    let err = run.expect(1);
    assert!(err.contains("domain.cells"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Issue 26: one output rule for every writer. Each class is checked on every writing option it
// applies to: the refusal names both paths, and the input is byte for byte unchanged.

/// A scene (flat, `extra` appended) with a heightmap-free domain, in `dir`, and its bytes.
fn scene_in(dir: &Path) -> (PathBuf, Vec<u8>) {
    let scene = dir.join("scene.toml");
    std::fs::write(&scene, flat_scene("", "")).unwrap();
    let bytes = std::fs::read(&scene).unwrap();
    (scene, bytes)
}

/// Runs `args` expecting a refusal (status 1) whose message contains every one of `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let run = snowsim(args);
    let err = run.expect(1);
    for needle in needles {
        assert!(
            err.contains(needle),
            "`{needle}` not in the message of {args:?}:\n{err}"
        );
    }
}

#[test]
fn an_output_that_names_an_input_is_refused_by_path_link_and_hard_link() {
    let dir = temp_dir("output_is_input");
    let (scene, bytes) = scene_in(&dir);
    let link = dir.join("link.vtu");
    symlink(&scene, &link).unwrap();
    let hard = dir.join("hard.png");
    std::fs::hard_link(&scene, &hard).unwrap();
    let dotted = dir.join("sub/../scene.toml");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let sc = s(&scene);
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "run",
            "--scene",
            sc,
            "--headless",
            "--frames",
            "2",
            "--vtu",
            sc,
        ],
        vec![
            "run",
            "--scene",
            sc,
            "--headless",
            "--frames",
            "2",
            "--vtu",
            s(&link),
        ],
        vec![
            "run",
            "--scene",
            sc,
            "--headless",
            "--frames",
            "2",
            "--screenshot",
            s(&hard),
        ],
        vec![
            "run",
            "--scene",
            sc,
            "--render",
            "off",
            "--frames",
            "2",
            "--vtu",
            s(&dotted),
        ],
        vec!["wind", "--scene", sc, "--steps", "1", "--vtu", s(&link)],
        vec!["bench", "--scene", sc, "--frames", "2", "--csv", sc],
        vec![
            "bench",
            "wind",
            "--scene",
            sc,
            "--tets",
            "2^10",
            "--steps",
            "2",
            "--csv",
            s(&hard),
        ],
    ];
    for args in &cases {
        // With --force too: an input is never replaced.
        for force in [false, true] {
            let mut args = args.clone();
            if force {
                args.push("--force");
            }
            refused(
                &args,
                &["the scene", "same file", "never overwrites an input"],
            );
            assert_eq!(
                std::fs::read(&scene).unwrap(),
                bytes,
                "{args:?} changed the scene"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn outputs_of_one_command_that_collide_are_refused() {
    let dir = temp_dir("outputs_collide");
    let (scene, _) = scene_in(&dir);
    let sc = s(&scene);
    let frames = dir.join("frames");
    let series = dir.join("series");
    std::fs::create_dir_all(&frames).unwrap();
    std::fs::create_dir_all(&series).unwrap();
    let shot = dir.join("out.png");
    let base = ["run", "--scene", sc, "--headless", "--frames", "2"];
    fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [base, extra].concat()
    }
    // --vtu and --screenshot the same file.
    refused(
        &with(
            &base,
            &["--vtu", s(&shot), "--screenshot", s(&shot), "--force"],
        ),
        &["--screenshot", "--vtu", "same file"],
    );
    // A screenshot that --record would write over.
    let in_frames = frames.join("frame_00001.png");
    refused(
        &with(
            &base,
            &["--record", s(&frames), "--screenshot", s(&in_frames)],
        ),
        &["--screenshot", "--record", "same file"],
    );
    // A --vtu that --vtu-every would write over.
    let in_series = series.join("states.pvd");
    refused(
        &with(
            &base,
            &["--vtu-every", "1", s(&series), "--vtu", s(&in_series)],
        ),
        &["--vtu", "--vtu-every", "same file"],
    );
    // plot --out over one of its input CSVs.
    let csv = dir.join("stages.json");
    std::fs::write(&csv, "schema,date\n").unwrap();
    refused(
        &["plot", s(&csv), "--out", s(&dir)],
        &["--out", "the input", "same file"],
    );
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "schema,date\n");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_existing_file_of_another_kind_is_replaced_only_with_force() {
    let dir = temp_dir("existing_other_kind");
    let (scene, _) = scene_in(&dir);
    let sc = s(&scene);
    let notes = dir.join("notes.csv");
    let text = "my own notes, not a sweep\n";
    std::fs::write(&notes, text).unwrap();
    // A sweep CSV over a file that is not one: refused before anything runs.
    refused(
        &["bench", "--scene", sc, "--frames", "2", "--csv", s(&notes)],
        &[
            "--csv",
            "notes.csv",
            "not a CSV file of this command",
            "--force",
        ],
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), text);
    // A screenshot over a text file, and a state over it.
    for (option, name) in [("--screenshot", "picture.png"), ("--vtu", "state.vtu")] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        refused(
            &[
                "run",
                "--scene",
                sc,
                "--headless",
                "--frames",
                "2",
                option,
                s(&path),
            ],
            &[option, name, "--force"],
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
    // Files of the writer's own kind are replaced without asking; others with --force.
    let shot = dir.join("picture.png");
    let screenshot = [
        "run",
        "--scene",
        sc,
        "--headless",
        "--frames",
        "2",
        "--size",
        "64x48",
        "--screenshot",
        s(&shot),
    ];
    snowsim(&[&screenshot[..], &["--force"]].concat()).expect(0);
    assert!(std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"));
    snowsim(&screenshot).expect(0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bounded_work_and_true_numbers_are_checked_before_the_run() {
    let dir = temp_dir("bounded_work");
    // A wind step a million times shorter than the frame: refused, naming both steps.
    let scene = dir.join("tiny_step.toml");
    std::fs::write(&scene, flat_scene("", "[wind]\nstep = 1e-9\n")).unwrap();
    refused(
        &[
            "run",
            "--scene",
            s(&scene),
            "--render",
            "off",
            "--frames",
            "2",
        ],
        &["wind.step", "time.step", "wind steps a frame"],
    );
    let (flat, _) = scene_in(&dir);
    // Warm-up that leaves nothing to measure.
    refused(
        &[
            "run",
            "--scene",
            s(&flat),
            "--render",
            "off",
            "--frames",
            "3",
            "--warmup",
            "3",
        ],
        &["--warmup 3", "3 frames"],
    );
    // --tets 0 is refused; a size is reported in tetrahedra, not cells.
    refused(
        &[
            "run",
            "--scene",
            s(&flat),
            "--render",
            "off",
            "--frames",
            "2",
            "--tets",
            "0",
        ],
        &["--tets 0"],
    );
    let run = snowsim(&[
        "run",
        "--scene",
        s(&flat),
        "--render",
        "off",
        "--frames",
        "2",
        "--tets",
        "5000",
    ]);
    let out = run.stdout.clone();
    run.expect(0);
    let line = out
        .lines()
        .find(|l| l.starts_with("--tets"))
        .unwrap_or_default();
    // The flat scene's layers (scene default) × 6 tetrahedra a cell × cells².
    let tets: usize = line
        .split(", ")
        .last()
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        (3000..=8000).contains(&tets) && line.contains("cells of"),
        "{line}"
    );
    // A one-frame run is its own measurement, and --warmup 0 measures every frame (both had
    // the first frame left out regardless: "0.0 FPS, 0.000 ms" over 0 frames, or one frame
    // fewer than the sweep's CSV said).
    for (frames, warmup, measured) in [("1", None, 1), ("3", Some("0"), 3), ("3", Some("1"), 2)] {
        let mut args = vec![
            "run",
            "--scene",
            s(&flat),
            "--render",
            "off",
            "--json",
            "--frames",
            frames,
        ];
        if let Some(w) = warmup {
            args.extend(["--warmup", w]);
        }
        let run = snowsim(&args);
        let out = run.stdout.clone();
        run.expect(0);
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["measured_frames"], measured, "{args:?}: {out}");
        assert!(
            report["fps"].as_f64().unwrap_or(0.0) > 0.0,
            "{args:?}: {out}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mesh_outputs_replace_only_meshes_without_force() {
    let dir = temp_dir("mesh_output_kind");
    let input = dir.join("cube.meshb");
    std::fs::copy(sample("cube.meshb"), &input).unwrap();
    let notes = dir.join("notes.mesh");
    let text = "not a mesh: a user's notes\n";
    std::fs::write(&notes, text).unwrap();
    for args in [
        vec!["mesh", "convert", s(&input), s(&notes)],
        vec!["mesh", "renumber", s(&input), s(&notes)],
        vec![
            "mesh",
            "terrain",
            "--size",
            "10,10,5",
            "--cells",
            "2,2",
            "--layers",
            "1",
            "--out",
            s(&notes),
        ],
    ] {
        let run = snowsim(&args);
        let err = run.expect(1);
        assert!(
            err.contains("notes.mesh")
                && err.contains("not a mesh or solution file")
                && err.contains("--force"),
            "{args:?}: {err}"
        );
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), text, "{args:?}");
    }
    // A mesh there is replaced; with --force, anything but the input.
    let out = dir.join("out.mesh");
    snowsim(&["mesh", "convert", s(&input), s(&out)]).expect(0);
    snowsim(&["mesh", "convert", s(&input), s(&out)]).expect(0);
    snowsim(&["mesh", "convert", s(&input), s(&notes), "--force"]).expect(0);
    assert!(
        std::fs::read_to_string(&notes)
            .unwrap()
            .contains("MeshVersionFormatted")
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_mesh_cut_at_a_keyword_boundary_fails_the_check() {
    let dir = temp_dir("cut_at_keyword");
    let whole = tetrahedron_with_x("1");
    let cut = dir.join("cut.mesh");
    // The whole file minus its End: what a copy cut short between two keywords leaves.
    std::fs::write(&cut, whole.trim_end().strip_suffix("End").unwrap()).unwrap();
    let run = snowsim(&["mesh", "info", "--check", s(&cut)]);
    let out = run.stdout.clone();
    run.expect(3);
    assert!(
        out.contains("no End keyword") && out.contains("cut short"),
        "{out}"
    );
    // Read without --check, the mesh itself is fine.
    snowsim(&["mesh", "info", s(&cut)]).expect(0);
    let ok = dir.join("whole.mesh");
    std::fs::write(&ok, &whole).unwrap();
    snowsim(&["mesh", "info", "--check", s(&ok)]).expect(0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sorting_no_frame_in_zero_is_refused_before_anything_runs() {
    let run = snowsim(&["run", "--sort-every", "0"]);
    let err = run.expect(2);
    assert!(
        err.contains("--sort-every") && err.contains("0 frames: must be 1..=10000"),
        "{err}"
    );
}

#[test]
fn negative_counts_are_named_as_negative() {
    for (option, value) in [
        ("--seed", "-1"),
        ("--particles", "-5"),
        ("--frames", "-2"),
        ("--sort-every", "-4"),
    ] {
        for args in [
            vec!["run", option, value],
            vec!["run", &format!("{option}={value}")],
        ] {
            let run = snowsim(&args);
            let err = run.expect(2);
            assert!(
                err.contains(&format!("`{value}` is negative")) && err.contains("whole number"),
                "{args:?}: {err}"
            );
        }
    }
    // Every other command's options too (the hostile sweep found clap's "unexpected argument
    // '-1' found" on each): the value reaches the option's parser, which names the option and
    // the value (`-7 is not in 0..=4294967295` from clap's ranged parsers, "is negative" from
    // the others).
    let dir = temp_dir("negative_options");
    let out = dir.join("out.meshb");
    let cases: [(&[&str], &str, &str); 8] = [
        (&["wind", "--steps", "-1"], "--steps", "is negative"),
        (
            &["bench", "--repeats", "-3"],
            "--repeats",
            "-3 is not in 0..",
        ),
        (
            &["bench", "wind", "--warmup", "-1"],
            "--warmup",
            "is negative",
        ),
        (&["sort", "evolve", "--len", "-1"], "--len", "-1"),
        (
            &["scene", "valley", "v.png", "--seed", "-7"],
            "--seed",
            "-7 is not in 0..",
        ),
        (&["run", "--size", "-1x5"], "--size", "-1x5"),
        (&["bench", "--particles", "-4"], "--particles", "-4"),
        (
            &[
                "mesh",
                "terrain",
                "--size",
                "1,1,1",
                "--cells",
                "-1,2",
                "--layers",
                "1",
                "--out",
                s(&out),
            ],
            "--cells",
            "`-1` is negative",
        ),
    ];
    for (args, option, what) in cases {
        let run = snowsim(args);
        let err = &run.stderr;
        assert!(
            !err.contains("unexpected argument") && err.contains(option) && err.contains(what),
            "{args:?}: {err}"
        );
        assert!(matches!(run.status.code(), Some(1 | 2)), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

// ---------------------------------------------------------------------------------------------
// Issue 26, scenes: `scene check` refuses what `run` refuses, for the same reason, naming the
// key, its line and its value, and leaves the scene file as it was. Each scene below passed
// `scene check` before and was refused (or broke) only once `run` was under way.

/// `scene check FILE` and `run --scene FILE`, each refused (status 1), each message holding
/// every one of `needles`; the scene file byte for byte as it was.
fn both_refuse(scene: &Path, needles: &[&str]) {
    let before = std::fs::read(scene).unwrap();
    let check = snowsim(&["scene", "check", s(scene)]);
    let run = snowsim(&[
        "run",
        "--headless",
        "--render",
        "off",
        "--frames",
        "2",
        "--size",
        "64x48",
        "--scene",
        s(scene),
    ]);
    for (what, result) in [("scene check", &check), ("run", &run)] {
        let err = result.expect(1);
        for needle in needles {
            assert!(err.contains(needle), "{what}: `{needle}` not in:\n{err}");
        }
        // Numbers read as people write them: never hundreds of digits.
        let longest = longest_digit_run(err);
        assert!(
            longest < 20,
            "{what}: a number of {longest} digits in:\n{err}"
        );
    }
    assert_eq!(
        std::fs::read(scene).unwrap(),
        before,
        "{} changed",
        s(scene)
    );
}

/// `scene check FILE` and `run --scene FILE` both pass.
fn both_pass(scene: &Path) {
    snowsim(&["scene", "check", s(scene)]).expect(0);
    let run = snowsim(&[
        "run",
        "--headless",
        "--render",
        "off",
        "--frames",
        "2",
        "--size",
        "64x48",
        "--scene",
        s(scene),
    ]);
    run.expect(0);
}

/// `path:line:column: ` of the value of the first line of `text` that starts with `key =`
/// (the place a scene error names).
fn place(path: &Path, text: &str, key: &str) -> String {
    let (index, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.starts_with(&format!("{key} =")))
        .unwrap_or_else(|| panic!("no `{key} =` in {text}"));
    let column = line.find('=').unwrap() + 3;
    format!("{}:{}:{column}: ", s(path), index + 1)
}

/// The flat test scene with `domain` lines and `extra` sections, written to `dir/name`.
fn scene_file(dir: &Path, name: &str, domain: &str, extra: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let text = flat_scene(domain, extra);
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

#[test]
fn values_that_are_0_in_32_bit_floats_are_refused_with_their_key() {
    let dir = temp_dir("f32-zero");
    for (key, section, value, unit) in [
        ("fall_speed", "snow", "1e-308", "m/s"),
        ("gravity", "snow", "1e-308", "m/s²"),
        ("step", "time", "1e-300", "s"),
        ("speed", "wind", "1e-40", "m/s"),
    ] {
        // [snow] is the flat scene's last section: its keys go at the end.
        let (domain, extra) = match section {
            "snow" => ("cells = [4, 4]\nlayers = 2".to_string(), String::new()),
            _ => (
                "cells = [4, 4]\nlayers = 2".to_string(),
                format!("[{section}]\n{key} = {value}"),
            ),
        };
        let (path, mut text) = scene_file(&dir, &format!("{key}.toml"), &domain, &extra);
        if section == "snow" {
            text.push_str(&format!("{key} = {value}\n"));
            std::fs::write(&path, &text).unwrap();
        }
        both_refuse(
            &path,
            &[
                &format!(
                    "{}{section}.{key}: {value} is 0 in the 32-bit floats",
                    place(&path, &text, key)
                ),
                unit,
            ],
        );
    }
    // The least normal 32-bit float is not 0 there: the wind's speed may be that small.
    let (path, _) = scene_file(
        &dir,
        "least.toml",
        "cells = [4, 4]\nlayers = 2",
        "[wind]\nspeed = 1.2e-38",
    );
    snowsim(&["scene", "check", s(&path), "--no-mesh"]).expect(0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_wind_step_under_a_64th_of_the_frame_is_refused_naming_both_steps() {
    let dir = temp_dir("wind-step");
    for step in ["1e-300", "0.0003"] {
        let (path, text) = scene_file(
            &dir,
            "step.toml",
            "cells = [4, 4]\nlayers = 2",
            &format!("[wind]\nstep = {step}\n[time]\nstep = 0.02"),
        );
        both_refuse(
            &path,
            &[
                &format!(
                    "{}wind.step: {step} s against time.step 0.02 s",
                    place(&path, &text, "step")
                ),
                "more than the 64 a frame may run",
                "time.step / 64 = 0.0003125 s",
            ],
        );
    }
    // Exactly 64 a frame runs, and so does a tiny step when the wind does not step with the
    // frames (every frame by simulate.wind_every instead).
    let (path, _) = scene_file(
        &dir,
        "64.toml",
        "cells = [4, 4]\nlayers = 2",
        "[wind]\nstep = 0.0003125\n[time]\nstep = 0.02",
    );
    both_pass(&path);
    let (path, _) = scene_file(
        &dir,
        "every.toml",
        "cells = [4, 4]\nlayers = 2",
        "[wind]\nstep = 1e-6\n[simulate]\nwind_every = 1",
    );
    snowsim(&["scene", "check", s(&path)]).expect(0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_default_wind_step_too_short_for_the_frame_is_refused_by_scene_check_and_run() {
    // A micrometre of air: the default wind step, from the mesh, is ~1e-7 s.
    let dir = temp_dir("default-step");
    let (path, _) = scene_file(
        &dir,
        "tiny.toml",
        "cells = [4, 4]\nlayers = 2",
        "[wind]\nreference_height = 1e-7\nroughness = 1e-8",
    );
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("top = 40", "top = 1e-6");
    std::fs::write(&path, text).unwrap();
    both_refuse(
        &path,
        &[
            &format!("preparing scene {}", s(&path)),
            "no wind.step is given, and its default from the mesh",
            "against time.step 0.02 s",
            "give a wind.step of at least time.step / 64 = 0.0003125 s",
        ],
    );
    // Without the mesh there is no default step to check: only the file is validated.
    snowsim(&["scene", "check", s(&path), "--no-mesh"]).expect(0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn one_cell_along_the_wind_is_refused_naming_domain_cells() {
    let dir = temp_dir("one-cell");
    for (cells, direction, axis) in [
        ("[1, 4]", "[1, 0]", "x"),
        ("[4, 1]", "[0, -1]", "y"),
        ("[1, 4]", "[1, 1]", "x"),
    ] {
        let (path, text) = scene_file(
            &dir,
            "cells.toml",
            &format!("cells = {cells}\nlayers = 2"),
            &format!("[wind]\ndirection = {direction}"),
        );
        both_refuse(
            &path,
            &[
                &format!(
                    "{}domain.cells: {cells} leaves 1 cell along {axis}",
                    place(&path, &text, "cells")
                ),
                "no unknown",
                &format!("at least 2 cells along {axis}"),
            ],
        );
    }
    // One cell across the wind is fine: the sides it spans are slip.
    let (path, _) = scene_file(
        &dir,
        "across.toml",
        "cells = [4, 1]\nlayers = 2",
        "[wind]\ndirection = [1, 0]",
    );
    both_pass(&path);
    // With the wind off the scene is valid; turned on from the command line, the solver
    // refuses the mesh before it runs, saying why (it was "velocity is not finite at vertex
    // 0").
    let (path, _) = scene_file(
        &dir,
        "off.toml",
        "cells = [1, 4]\nlayers = 2",
        "[simulate]\nwind = false",
    );
    both_pass(&path);
    let run = snowsim(&[
        "run",
        "--headless",
        "--render",
        "off",
        "--frames",
        "2",
        "--size",
        "64x48",
        "--simulate",
        "wind,snow",
        "--scene",
        s(&path),
    ]);
    let err = run.expect(1);
    assert!(err.contains("no pressure unknown"), "{err}");
    assert!(!err.contains("not finite"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_fall_speed_that_makes_the_drag_infinite_is_refused() {
    let dir = temp_dir("drag");
    let (path, mut text) = scene_file(&dir, "drag.toml", "cells = [4, 4]\nlayers = 2", "");
    text.push_str("fall_speed = 1e-30\n");
    std::fs::write(&path, &text).unwrap();
    both_refuse(
        &path,
        &[
            &format!(
                "{}snow.fall_speed: 1e-30 m/s for the mean flake",
                place(&path, &text, "fall_speed")
            ),
            "drag coefficient snow.gravity / v_t² inf 1/m",
            "raise snow.fall_speed",
        ],
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn huge_numbers_in_scene_errors_are_written_short() {
    let dir = temp_dir("digits");
    let path = dir.join("big.toml");
    let base = flat_scene("cells = [4, 4]\nlayers = 2", "");
    for (text, key, message) in [
        (
            base.replace("layers = 2", "layers = 2\ngrading = 1e300"),
            "grading",
            "domain.grading: must be >= 1 and <= 1e9, got 1e300",
        ),
        (
            base.replace("size = [100, 80]", "size = [1e300, 80]"),
            "size",
            "domain.size: must be within ±1e7 m, got 1e300",
        ),
        (
            format!("{base}flake_diameter = [1e300, 1e301]\n"),
            "flake_diameter",
            "snow.flake_diameter: both ends must be > 0 and <= 0.1 m, got [1e300, 1e301]",
        ),
    ] {
        std::fs::write(&path, &text).unwrap();
        both_refuse(&path, &[&format!("{}{message}", place(&path, &text, key))]);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_no_scene_file_hint_follows_only_a_missing_file() {
    let dir = temp_dir("scene-hint");
    let fifo = dir.join("fifo.toml");
    mkfifo(&fifo);
    let zero = dir.join("zero.toml");
    symlink("/dev/zero", &zero).unwrap();
    let big = dir.join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(input::TEXT_LIMIT + 1)
        .unwrap();
    let missing = dir.join("missing.toml");
    let hint = "no scene file there";
    for (path, reason) in [
        (&fifo, "FIFO"),
        (&zero, "character device"),
        (&big, "is read"),
        (&missing, hint),
    ] {
        let run = run_with(
            &[
                "run",
                "--headless",
                "--render",
                "off",
                "--frames",
                "2",
                "--scene",
                s(path),
            ],
            &[],
            None,
            Duration::from_secs(60),
        );
        let err = run.expect(1);
        assert!(err.contains(reason), "{err}");
        assert!(err.contains("pass --scene FILE"), "{err}");
        if path != &missing {
            assert!(!err.contains(hint), "{err}");
        }
    }
    assert_eq!(
        std::fs::metadata(&big).unwrap().len(),
        input::TEXT_LIMIT + 1
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A `width × height` PNG of colour type 3 (palette), 8 bits per index, indices `x % 2`,
/// written out by hand (`image` writes no palette PNG): an uncompressed zlib stream.
fn palette_png(width: u32, height: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    fn chunk(png: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        png.extend((data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend(data);
        png.extend(&body);
        png.extend(crc32(&body).to_be_bytes());
    }
    let mut raw = Vec::new();
    for _ in 0..height {
        raw.push(0); // filter: none
        raw.extend((0..width).map(|x| (x % 2) as u8));
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    let len = raw.len() as u16;
    let mut zlib = vec![0x78, 0x01, 0x01];
    zlib.extend(len.to_le_bytes());
    zlib.extend((!len).to_le_bytes());
    zlib.extend(&raw);
    zlib.extend(((b << 16) | a).to_be_bytes());
    let mut header = Vec::new();
    header.extend(width.to_be_bytes());
    header.extend(height.to_be_bytes());
    header.extend([8, 3, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut png, b"IHDR", &header);
    chunk(&mut png, b"PLTE", &[0, 0, 0, 255, 255, 255]);
    chunk(&mut png, b"IDAT", &zlib);
    chunk(&mut png, b"IEND", &[]);
    png
}

#[test]
fn a_palette_heightmap_is_named_a_palette_not_rgb() {
    let dir = temp_dir("palette");
    let map = dir.join("palette.png");
    let png = palette_png(4, 3);
    std::fs::write(&map, &png).unwrap();
    // The PNG is sound: the decoder reads it (as RGB, which is why the message read "RGB").
    assert!(image::load_from_memory(&png).is_ok());
    let path = dir.join("palette.toml");
    let text = "[domain]\nheightmap = \"palette.png\"\nsize = [100, 80]\ntop = 40\nrelief = 10\n\
                cells = [4, 4]\nlayers = 2\n";
    std::fs::write(&path, text).unwrap();
    both_refuse(
        &path,
        &[
            &format!(
                "{}domain.heightmap: heightmap",
                place(&path, text, "heightmap")
            ),
            "is a palette (indexed-colour) image, 8 bits per index; a heightmap must be 8- or \
             16-bit grayscale",
        ],
    );
    for command in [
        &["scene", "check", s(&path)][..],
        &["run", "--headless", "--frames", "2", "--scene", s(&path)],
    ] {
        let err = snowsim(command).stderr;
        assert!(!err.contains("RGB"), "{err}");
    }
    assert_eq!(std::fs::read(&map).unwrap(), png);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mesh_terrain_writes_huge_numbers_short() {
    let dir = temp_dir("terrain_digits");
    let out = dir.join("big.meshb");
    let run = snowsim(&[
        "mesh",
        "terrain",
        "--size",
        "1e300,10,5",
        "--cells",
        "2,2",
        "--layers",
        "1",
        "--grading",
        "1e300",
        "--out",
        s(&out),
    ]);
    let text = run.stdout.clone();
    run.expect(0);
    assert!(
        text.contains("1e300 × 10 m") && text.contains("grading 1e300"),
        "{text}"
    );
    let longest = longest_digit_run(&text);
    assert!(longest < 20, "a number of {longest} digits: {text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_snow_blames_its_own_option_for_the_particle_count() {
    let run = snowsim(&[
        "bench",
        "snow",
        "--log2",
        "27",
        "--scene",
        &scene_path("flat.toml"),
    ]);
    let err = run.expect(1);
    assert!(
        err.contains("--log2 27") && err.contains("134217727") && !err.contains("flat.toml:"),
        "{err}"
    );
}

#[test]
fn sort_evolve_needs_a_frame() {
    let run = snowsim(&["sort", "evolve", "--frames", "0"]);
    let err = run.expect(2);
    assert!(
        err.contains("--frames") && err.contains("0 is not in 1.."),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 26, the hostile sweep (`scripts/hostile`): one test per class it found a case of, each
// checking the message and that the input is byte for byte unchanged.

/// A sweep CSV of one completed row, in `dir`, and its bytes.
fn sweep_csv(dir: &Path, name: &str, device: &str) -> (PathBuf, Vec<u8>) {
    use snowsim::bench::record::{Row, SCHEMA_VERSION, write_rows};
    let path = dir.join(name);
    let row = Row {
        schema: SCHEMA_VERSION,
        device: device.into(),
        particles: 1 << 16,
        status: "ok".into(),
        fps_mean: Some(120.0),
        fps_std: Some(2.0),
        ms_frame: Some(8.0),
        ms_snow: Some(1.0),
        ..Row::default()
    };
    write_rows(&path, &[row]).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

#[test]
fn a_link_in_a_directory_output_to_an_input_is_refused_even_with_force() {
    // The files already in `--record`, `--vtu-every` and `plot --out` were judged by kind
    // alone: a `frame_00000.png` linked to a scene's heightmap (a PNG) was written through, and
    // with --force any input linked in was.
    let dir = temp_dir("link_in_output_dir");
    let (scene, scene_bytes) = scene_in(&dir);
    let (csv, csv_bytes) = sweep_csv(&dir, "in.csv", "pocl");
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots).unwrap();
    for force in [false, true] {
        let force: &[&str] = if force { &["--force"] } else { &[] };
        // plot --out: a figure's name linked to the input CSV, symbolic and hard.
        for name in ["stages.png", "fps_particles.json"] {
            let link = plots.join(name);
            if name.ends_with(".png") {
                symlink(&csv, &link).unwrap();
            } else {
                std::fs::hard_link(&csv, &link).unwrap();
            }
            refused(
                &[&["plot", s(&csv), "--out", s(&plots)][..], force].concat(),
                &["--out", name, "the input", "same file"],
            );
            assert_eq!(std::fs::read(&csv).unwrap(), csv_bytes);
            std::fs::remove_file(&link).unwrap();
        }
        // run --vtu-every and --record: their files linked to the scene.
        for (option, name) in [
            ("--vtu-every", "states.pvd"),
            ("--record", "frame_00000.png"),
        ] {
            let out = dir.join(option.trim_start_matches('-'));
            std::fs::create_dir_all(&out).unwrap();
            symlink(&scene, out.join(name)).unwrap();
            let mut args = vec!["run", "--scene", s(&scene), "--headless", "--frames", "2"];
            if option == "--vtu-every" {
                args.extend(["--render", "off", option, "1", s(&out)]);
            } else {
                args.extend([option, s(&out)]);
            }
            refused(
                &[&args[..], force].concat(),
                &[option, name, "the scene", "same file"],
            );
            assert_eq!(std::fs::read(&scene).unwrap(), scene_bytes, "{option}");
            std::fs::remove_dir_all(&out).unwrap();
        }
    }
    // A directory output that names a file: said so, not "cannot create the folder".
    refused(
        &["plot", s(&csv), "--out", s(&scene)],
        &["--out", "scene.toml", "it is a file, not a directory"],
    );
    assert_eq!(std::fs::read(&scene).unwrap(), scene_bytes);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_writer_asks_for_force_before_replacing_a_file_it_did_not_write() {
    // `scene valley`, `sort bench --csv` and `sort evolve --csv` replaced any file.
    let dir = temp_dir("writers_force");
    let notes = "a user's notes, not written by snowsim\n";
    let png = dir.join("notes.png");
    let csv = dir.join("notes.csv");
    std::fs::write(&png, notes).unwrap();
    std::fs::write(&csv, notes).unwrap();
    let cases: [(Vec<&str>, &Path); 5] = [
        (vec!["scene", "valley", s(&png), "--resolution", "16"], &png),
        // `scene ridge` replaced any file too; `scene fence` came after.
        (vec!["scene", "ridge", s(&png), "--resolution", "16"], &png),
        (vec!["scene", "fence", s(&png), "--resolution", "16"], &png),
        (
            vec![
                "sort",
                "evolve",
                "--len",
                "1024",
                "--frames",
                "1",
                "--csv",
                s(&csv),
            ],
            &csv,
        ),
        (
            vec![
                "sort",
                "bench",
                "--min-log2",
                "10",
                "--max-log2",
                "10",
                "--iterations",
                "1",
                "--csv",
                s(&csv),
            ],
            &csv,
        ),
    ];
    for (args, file) in &cases {
        let name = file.file_name().unwrap().to_str().unwrap();
        refused(args, &[name, "not written by this command", "--force"]);
        assert_eq!(std::fs::read_to_string(file).unwrap(), notes, "{args:?}");
    }
    // With --force they replace it; a file of their own kind needs no --force.
    snowsim(&[&cases[0].0[..], &["--force"]].concat()).expect(0);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    snowsim(&cases[0].0).expect(0);
    snowsim(&cases[1].0).expect(0);
    snowsim(&cases[2].0).expect(0);
    snowsim(&[&cases[3].0[..], &["--force"]].concat()).expect(0);
    snowsim(&cases[3].0).expect(0);
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("frame,"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn option_errors_name_the_option_and_its_value_written_short() {
    // Sizes at 0, 1 and huge: the message named a field (`size: X must …`, `elements must …`,
    // `block length 1 …`) rather than the option, or wrote 1e308 with 309 digits; a domain of
    // 1e308 m a side was meshed into tetrahedra whose volumes overflow.
    let dir = temp_dir("option_errors");
    let out = dir.join("t.meshb");
    let heightmap = scene_path("valley.png");
    let terrain = |extra: &[&str]| {
        let mut args = vec!["mesh", "terrain", "--out", s(&out)];
        args.extend_from_slice(extra);
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    };
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            terrain(&[
                "--size",
                "1e308,1e308,1e308",
                "--cells",
                "2,2",
                "--layers",
                "1",
            ]),
            vec!["--size", "1e308", "overflow"],
        ),
        (
            terrain(&[
                "--size",
                "10,10,5",
                "--cells",
                "2,2",
                "--layers",
                "1",
                "--relief",
                "1e308",
                "--heightmap",
                &heightmap,
            ]),
            vec!["--relief", "1e308"],
        ),
        (
            terrain(&["--size", "10,10,5", "--cells", "0,2", "--layers", "1"]),
            vec!["--cells", "[0, 2]"],
        ),
        (
            terrain(&[
                "--size",
                "10,10,5",
                "--cells",
                "2,2",
                "--layers",
                "2",
                "--grading",
                "1e308",
            ]),
            vec!["--grading", "1e308"],
        ),
        (
            ["selftest", "--elements", "0"].map(String::from).to_vec(),
            vec!["--elements", "not 0"],
        ),
        (
            ["sort", "check", "--max-len", "10", "--block-len", "1"]
                .map(String::from)
                .to_vec(),
            vec!["--block-len 1", "power of two"],
        ),
    ];
    for (args, needles) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = snowsim(&args);
        let err = run.expect(1);
        for needle in needles {
            assert!(err.contains(needle), "`{needle}` not in {args:?}: {err}");
        }
        let longest = longest_digit_run(err);
        assert!(longest < 20, "a number of {longest} digits: {err}");
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_huge_file_of_something_else_is_refused_before_it_is_read() {
    // A 20 GB sparse file named .meshb or .mesh was read whole (some 40 s, 20 GB of memory)
    // before its first bytes were found not to be a mesh: a timeout in the hostile sweep.
    let dir = temp_dir("huge_mesh");
    let size = 20u64 << 30;
    let (scene, scene_bytes) = scene_in(&dir);
    let smoothed = dir.join("smoothed.meshb");
    for (name, needle) in [
        ("huge.meshb", "endianness code 0"),
        ("huge.mesh", "NUL byte"),
        ("huge.solb", "endianness code 0"),
    ] {
        let path = dir.join(name);
        std::fs::File::create(&path).unwrap().set_len(size).unwrap();
        let mut commands = vec![vec!["mesh", "info", s(&path)]];
        if !name.ends_with(".solb") {
            commands.push(vec!["mesh", "smooth", s(&path), s(&smoothed), "-n", "1"]);
        }
        for args in commands {
            let started = Instant::now();
            let run = snowsim(&args);
            let err = run.expect(1);
            assert!(
                err.contains(name) && err.contains(needle),
                "{args:?}: {err}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{args:?} took {:?}",
                started.elapsed()
            );
        }
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
        std::fs::remove_file(&path).unwrap();
    }
    // The same through a scene's mesh domain.
    let mesh = dir.join("domain.meshb");
    std::fs::File::create(&mesh).unwrap().set_len(size).unwrap();
    std::fs::write(
        &scene,
        "[domain]\nmesh = \"domain.meshb\"\n[camera]\nposition = [0, 0, 10]\ntarget = [1, 1, 0]\n",
    )
    .unwrap();
    let started = Instant::now();
    refused(
        &["scene", "check", s(&scene)],
        &["domain.meshb", "endianness code 0"],
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    std::fs::write(&scene, &scene_bytes).unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_sweep_csv_field_beyond_the_limit_is_refused_naming_line_and_column() {
    // A 5 MB device name was copied into the plots' JSON (as every series' label); fields are
    // now at most 4096 bytes, and `bench` shortens a child's longer error line to that.
    let dir = temp_dir("long_field");
    let (csv, _) = sweep_csv(&dir, "in.csv", "pocl");
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(
        &csv,
        text.replacen(",pocl,", &format!(",{},", "x".repeat(5000)), 1),
    )
    .unwrap();
    let bytes = std::fs::read(&csv).unwrap();
    let out = dir.join("plots");
    refused(
        &["plot", s(&csv), "--out", s(&out)],
        &[
            "in.csv",
            "line 2, column device",
            "5000 bytes",
            "at most 4096 bytes",
        ],
    );
    assert_eq!(std::fs::read(&csv).unwrap(), bytes);
    assert!(!out.exists());
    // At the limit it is drawn, its JSON holding the name whole.
    let (csv, _) = sweep_csv(&dir, "at_limit.csv", &"y".repeat(4096));
    snowsim(&["plot", s(&csv), "--out", s(&out)]).expect(0);
    let json = std::fs::read_to_string(out.join("fps_particles.json")).unwrap();
    assert!(json.contains(&"y".repeat(4096)));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn files_committed_together_are_all_replaced_or_none() {
    // plot renamed its files one after another: a rename failing midway left some new, some
    // old. `commit_all` puts back the ones already renamed.
    let dir = temp_dir("commit_all");
    let names = ["a.json", "b.png", "c.json"];
    std::fs::write(dir.join("a.json"), "old a").unwrap();
    let create = || {
        names
            .iter()
            .map(|n| {
                let mut file = AtomicFile::create(&dir.join(n)).unwrap();
                file.write_all(format!("new {n}").as_bytes()).unwrap();
                file
            })
            .collect::<Vec<_>>()
    };
    // b.png becomes a directory after its temporary was made: its rename fails.
    let files = create();
    std::fs::create_dir(dir.join("b.png")).unwrap();
    std::fs::write(dir.join("b.png").join("inside"), "x").unwrap();
    let error = output::commit_all(files).unwrap_err();
    assert!(error.to_string().contains("b.png"), "{error}");
    assert_eq!(
        std::fs::read_to_string(dir.join("a.json")).unwrap(),
        "old a"
    );
    assert!(!dir.join("c.json").exists());
    assert!(partial_files(&dir).is_empty(), "{:?}", partial_files(&dir));
    // Without the obstacle all three are replaced, and nothing is left beside them.
    std::fs::remove_dir_all(dir.join("b.png")).unwrap();
    output::commit_all(create()).unwrap();
    for n in names {
        assert_eq!(
            std::fs::read_to_string(dir.join(n)).unwrap(),
            format!("new {n}")
        );
    }
    assert!(partial_files(&dir).is_empty(), "{:?}", partial_files(&dir));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn hand_built_snow_settings_name_their_scene_key() {
    // The scene names its keys; settings made by hand said "fall speed 0".
    use snowsim::snow::SnowConfig;
    let spoilt = |spoil: fn(&mut SnowConfig)| {
        let mut config = SnowConfig::new(64);
        spoil(&mut config);
        config
    };
    let cases = [
        (spoilt(|c| c.fall_speed = 0.0), "snow.fall_speed 0"),
        (spoilt(|c| c.gravity = f32::NAN), "snow.gravity NaN"),
        (
            spoilt(|c| c.flutter_rate = [2.0, 1.0]),
            "snow.flutter_rate [2, 1]",
        ),
        (spoilt(|c| c.repose_angle = 95.0), "ground.repose_angle 95"),
    ];
    for (config, needle) in cases {
        let error = config.validate().unwrap_err().to_string();
        assert!(error.contains(needle), "`{needle}` not in: {error}");
    }
}
