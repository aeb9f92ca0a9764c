//! The `snowsim` binary as a user runs it: devices, selftest, mesh info/check/convert.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{Capability, skip};

fn snowsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(args)
        .output()
        .expect("run snowsim")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample_meshes")
        .join(name)
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snowsim-cli-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn devices_json_has_the_documented_keys() {
    let out = snowsim(&["devices", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let devices: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let devices = devices.as_array().expect("a JSON array");
    assert!(!devices.is_empty());
    for (i, d) in devices.iter().enumerate() {
        for key in [
            "index",
            "platform",
            "name",
            "type",
            "version",
            "compute_units",
            "global_mem_bytes",
            "max_work_group_size",
            "fp64",
            "gl_sharing",
        ] {
            assert!(d.get(key).is_some(), "device {i} lacks `{key}`: {d}");
        }
        assert_eq!(d["index"], i);
        assert!(d["version"].as_str().unwrap().starts_with("OpenCL"));
    }
    let table = snowsim(&["devices"]);
    assert!(table.status.success());
    let text = stdout(&table);
    assert!(text.lines().next().unwrap().contains("GL sharing"));
    assert_eq!(text.lines().count(), devices.len() + 1);
}

#[test]
fn no_opencl_platform_is_a_clear_error_with_exit_code_2() {
    let empty = temp_dir("no-platform");
    let out = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .arg("devices")
        .env("OCL_ICD_VENDORS", &empty)
        .env("OPENCL_VENDOR_PATH", &empty)
        .output()
        .unwrap();
    if out.status.success() {
        skip(
            Capability::IcdOverride,
            "this machine's OpenCL loader finds platforms despite OCL_ICD_VENDORS and \
             OPENCL_VENDOR_PATH",
        );
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no OpenCL platform") && err.contains("apt-get install"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn selftest_runs_on_the_default_device_and_by_name() {
    let out = snowsim(&["selftest", "--elements", "65537", "--iterations", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("result matches the CPU"));
    let out = snowsim(&["selftest", "--device", "no-such-device-xyz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no OpenCL device matches `no-such-device-xyz`"));
}

#[test]
fn mesh_info_json_counts_the_gmsh_cube() {
    let out = snowsim(&[
        "mesh",
        "info",
        "--json",
        sample("cube_gmsh.mesh").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Counts written in the file's own headers by gmsh (see sample_meshes/README.md).
    assert_eq!(info["version"], 2);
    assert_eq!(info["dimension"], 3);
    assert_eq!(info["counts"]["vertices"], 2300);
    assert_eq!(info["counts"]["triangles"], 2468);
    assert_eq!(info["counts"]["tetrahedra"], 10246);
    assert_eq!(
        info["bounding_box"]["min"],
        serde_json::json!([0.0, 0.0, 0.0])
    );
    assert_eq!(
        info["bounding_box"]["max"],
        serde_json::json!([1.0, 1.0, 1.0])
    );
    let tri_refs = info["references"]["triangles"].as_object().unwrap();
    let keys: Vec<&str> = tri_refs.keys().map(String::as_str).collect();
    assert_eq!(keys, ["1", "2", "3", "4", "5", "6"]);
}

#[test]
fn mesh_check_passes_the_independent_meshes() {
    for name in [
        "cube_gmsh.mesh",
        "cube_tetgen.mesh",
        "hex_cube_gmsh.mesh",
        "sphere_surface_gmsh.mesh",
        "square_2d_gmsh.mesh",
    ] {
        let out = snowsim(&["mesh", "info", "--check", sample(name).to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{name}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            stdout(&out).contains("no problem found"),
            "{name}: {}",
            stdout(&out)
        );
    }
}

/// Rewrites the `n`-th element line after `keyword` in an ASCII mesh with `f(line)`.
fn edit_ascii(text: &str, keyword: &str, n: usize, f: impl Fn(&str) -> String) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == keyword)
        .expect("keyword present");
    // keyword line, count line, then the entities.
    let target = at + 2 + n;
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out[target] = f(lines[target]);
    out.join("\n") + "\n"
}

#[test]
fn mesh_check_finds_inverted_duplicated_and_degenerate_tetrahedra() {
    let dir = temp_dir("check");
    let text = std::fs::read_to_string(sample("cube_gmsh.mesh")).unwrap();
    let swap_two = |line: &str| {
        let mut t: Vec<&str> = line.split_whitespace().collect();
        t.swap(0, 1);
        t.join(" ")
    };
    let inverted = edit_ascii(&text, "Tetrahedra", 5, swap_two);
    let path = dir.join("inverted.mesh");
    std::fs::write(&path, inverted).unwrap();
    let out = snowsim(&["mesh", "info", "--check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let report = stdout(&out);
    assert!(report.contains("1 inverted elements"), "{report}");
    assert!(report.contains("tetrahedron 6 "), "{report}");

    let repeat_node = |line: &str| {
        let mut t: Vec<String> = line.split_whitespace().map(String::from).collect();
        t[1] = t[0].clone();
        t.join(" ")
    };
    let degenerate = edit_ascii(&text, "Tetrahedra", 0, repeat_node);
    let path = dir.join("degenerate.mesh");
    std::fs::write(&path, degenerate).unwrap();
    let out = snowsim(&["mesh", "info", "--check", "--json", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["check"]["passed"], false);
    assert_eq!(json["check"]["counts"]["degenerate"], 1);
    // The tetrahedron that lost a node leaves its four faces with one tetrahedron fewer: the
    // neighbours' faces become boundary faces, which is not an error by itself.
    assert!(json["check"]["counts"].get("duplicate").is_none());
}

#[test]
fn mesh_check_finds_tangled_hexahedra() {
    let dir = temp_dir("hex");
    let text = std::fs::read_to_string(sample("hex_cube_gmsh.mesh")).unwrap();
    // Swapping the last two nodes turns the top face into a bow-tie: the total volume stays
    // positive, two corners do not.
    let twist = |line: &str| {
        let mut t: Vec<&str> = line.split_whitespace().collect();
        t.swap(6, 7);
        t.join(" ")
    };
    let path = dir.join("twisted.mesh");
    std::fs::write(&path, edit_ascii(&text, "Hexahedra", 10, twist)).unwrap();
    let out = snowsim(&["mesh", "info", "--check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stdout(&out).contains("hexahedron 11 "), "{}", stdout(&out));
    assert!(stdout(&out).contains("tangled"), "{}", stdout(&out));
}

#[test]
fn converting_tetgen_v1_keeps_its_double_precision() {
    let dir = temp_dir("tetgen");
    let source = sample("cube_tetgen.mesh");
    let out_path = dir.join("tetgen.meshb");
    let out = snowsim(&[
        "mesh",
        "convert",
        source.to_str().unwrap(),
        out_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("writing version 2"),
        "{}",
        stderr(&out)
    );
    let a = snowsim::meshio::read(&source).unwrap().mesh;
    let b = snowsim::meshio::read(&out_path).unwrap();
    assert_eq!(b.version, snowsim::meshio::Version::V2);
    assert_eq!(b.mesh.vertices, a.vertices);
    let same = snowsim(&[
        "mesh",
        "convert",
        out_path.to_str().unwrap(),
        dir.join(".").join("tetgen.meshb").to_str().unwrap(),
    ]);
    assert_eq!(same.status.code(), Some(1));
    assert!(stderr(&same).contains("same file"), "{}", stderr(&same));
}

#[test]
fn mesh_convert_round_trips_through_every_version() {
    let dir = temp_dir("convert");
    let original = sample("hex_cube_gmsh.mesh");
    let reference = snowsim(&["mesh", "info", "--json", original.to_str().unwrap()]);
    let reference: serde_json::Value = serde_json::from_slice(&reference.stdout).unwrap();
    for version in ["1", "2", "3", "4"] {
        let binary = dir.join(format!("hex_v{version}.meshb"));
        let out = snowsim(&[
            "mesh",
            "convert",
            original.to_str().unwrap(),
            binary.to_str().unwrap(),
            "--version",
            version,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let back = dir.join(format!("hex_v{version}.mesh"));
        let out = snowsim(&[
            "mesh",
            "convert",
            binary.to_str().unwrap(),
            back.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let info = snowsim(&["mesh", "info", "--json", back.to_str().unwrap()]);
        let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(info["version"], version.parse::<u32>().unwrap());
        assert_eq!(info["counts"], reference["counts"]);
        assert_eq!(info["references"], reference["references"]);
    }
    let out = snowsim(&["mesh", "convert", original.to_str().unwrap(), "out.vtk"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("out.vtk"), "{}", stderr(&out));
}

#[test]
fn unreadable_meshes_are_errors_naming_the_file() {
    let dir = temp_dir("bad");
    let path = dir.join("truncated.meshb");
    std::fs::write(&path, [1u8, 0, 0, 0, 2, 0]).unwrap();
    let out = snowsim(&["mesh", "info", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("truncated.meshb") && err.contains("byte"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let missing = snowsim(&["mesh", "info", "does-not-exist.mesh"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("does-not-exist.mesh"));
}

#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(["sort", "check", "--max-len", "5000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the pipe is closed while the program still prints.
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    child.wait().unwrap();
    assert!(!first.is_empty());
    assert!(!err.contains("panicked"), "{err}");
}

/// The names of a VTK XML file's point data arrays and its point count, from its header.
fn vtu_header(path: &Path) -> (usize, Vec<String>) {
    let bytes = std::fs::read(path).unwrap();
    let end = bytes
        .windows(12)
        .position(|w| w == b"AppendedData")
        .expect("an appended data block");
    let header = String::from_utf8_lossy(&bytes[..end]).to_string();
    let points = header
        .split("NumberOfPoints=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|s| s.parse().ok())
        .expect("NumberOfPoints");
    let names = header
        .split("Name=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect();
    (points, names)
}

#[test]
fn wind_alone_reports_json_and_writes_its_state() {
    let dir = temp_dir("wind_alone_reports_json_and_writes_its_state");
    let vtu = dir.join("wind.vtu");
    let flat = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let o = snowsim(&[
        "wind",
        "--scene",
        flat.to_str().unwrap(),
        "--steps",
        "5",
        "--json",
        "--vtu",
        vtu.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(report["steps"], 5);
    assert_eq!(report["vertices"], 567);
    let fluxes = report["fluxes"].as_array().unwrap();
    let inflow: f64 = fluxes
        .iter()
        .filter(|f| f["kind"] == "inflow")
        .map(|f| f["flux_m3_per_s"].as_f64().unwrap())
        .sum();
    // The flat scene's uniform 3 m/s through its 200 × 60 m west side.
    assert!(
        (inflow + 3.0 * 200.0 * 60.0).abs() < 1.0,
        "inflow {inflow} m³/s"
    );
    let (points, names) = vtu_header(&vtu);
    assert_eq!(points, 567);
    for name in ["ref", "velocity", "pressure"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    // A bad direction: no side lets the wind in.
    let text = std::fs::read_to_string(&flat)
        .unwrap()
        .replace("direction = [1.0, 0.0]", "direction = [0.0, 0.0]");
    let still = dir.join("still.toml");
    std::fs::write(&still, text).unwrap();
    let o = snowsim(&["wind", "--scene", still.to_str().unwrap(), "--steps", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "{}:14:13: wind.direction: must not be [0, 0]",
            still.display()
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_writes_the_snow_state_after_a_headless_run() {
    // The run needs headless OpenGL: where this process cannot make an EGL context either,
    // that is a skip; any other failure of the run, one that mentions EGL included, fails.
    if let Err(e) = snowsim::render::Headless::new(160, 120) {
        skip(Capability::Egl, format!("no headless OpenGL context: {e}"));
        return;
    }
    let dir = temp_dir("run_writes_the_snow_state_after_a_headless_run");
    let vtu = dir.join("state.vtu");
    let flat = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let o = snowsim(&[
        "run",
        "--scene",
        flat.to_str().unwrap(),
        "--headless",
        "--frames",
        "200",
        "--size",
        "160x120",
        "--vtu",
        vtu.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (points, names) = vtu_header(&vtu);
    assert_eq!(points, 567);
    for name in ["ref", "velocity", "pressure", "snow_depth"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
}

/// `snowsim run --json` on the flat scene with `extra` options: the report.
fn run_flat(extra: &[&str]) -> serde_json::Value {
    let flat = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let mut args = vec![
        "run",
        "--scene",
        flat.to_str().unwrap(),
        "--headless",
        "--size",
        "160x120",
        "--particles",
        "2048",
        "--particle-render",
        "sprites",
        "--json",
    ];
    args.extend_from_slice(extra);
    let o = snowsim(&args);
    assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn device_stages(report: &serde_json::Value) -> Vec<String> {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["device"] == true)
        .map(|s| s["stage"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn simulate_switches_run_the_wind_alone_the_snow_in_a_frozen_wind_or_both() {
    // The wind alone, a step every frame: no particle, no snow kernel, 12 wind steps.
    // Every frame timed: a short run's one sampled frame may hold no wind step.
    let wind = run_flat(&[
        "--frames",
        "12",
        "--simulate",
        "wind",
        "--wind-every",
        "1",
        "--profile-every",
        "1",
    ]);
    assert_eq!(wind["snow"]["particles"], 0, "{wind}");
    // The run's own count too: no parcel runs, whatever the scene's snow.particles says.
    assert_eq!(wind["particles"], 0, "{wind}");
    assert_eq!(wind["snow"]["wind_steps"], 12, "{wind}");
    let stages = device_stages(&wind);
    assert!(stages.iter().any(|s| s.starts_with("wind.")), "{stages:?}");
    assert!(!stages.iter().any(|s| s.starts_with("snow.")), "{stages:?}");
    // Both, a wind step every third frame: 4 steps in 12 frames, and the snow moves.
    let both = run_flat(&[
        "--frames",
        "12",
        "--simulate",
        "wind,snow",
        "--wind-every",
        "3",
        "--profile-every",
        "1",
    ]);
    assert_eq!(both["snow"]["wind_steps"], 4, "{both}");
    assert_eq!(both["snow"]["particles"], 2048);
    let stages = device_stages(&both);
    assert!(stages.iter().any(|s| s == "snow.step"), "{stages:?}");
    assert!(stages.iter().any(|s| s.starts_with("wind.")), "{stages:?}");
    // The snow in a frozen wind: the start-up solve and the scene's 3 steps, then no more,
    // however many frames run.
    let dir = temp_dir("simulate_switches");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml"))
            .unwrap();
    let frozen_scene = dir.join("frozen.toml");
    std::fs::write(
        &frozen_scene,
        text.replace(
            "[snow]",
            "[simulate]\nwind = false\nfrozen_wind_steps = 3\n\n[snow]",
        ),
    )
    .unwrap();
    for frames in ["5", "15"] {
        let o = snowsim(&[
            "run",
            "--scene",
            frozen_scene.to_str().unwrap(),
            "--headless",
            "--size",
            "160x120",
            "--particles",
            "2048",
            "--frames",
            frames,
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(report["snow"]["wind_steps"], 3, "{report}");
        let stages = device_stages(&report);
        assert!(!stages.iter().any(|s| s.starts_with("wind.")), "{stages:?}");
        assert!(stages.iter().any(|s| s == "snow.step"), "{stages:?}");
    }
    // A frozen wind that keeps stepping is a contradiction, named with its key.
    std::fs::write(
        &frozen_scene,
        text.replace(
            "[snow]",
            "[simulate]\nwind = true\nfrozen_wind_steps = 3\n\n[snow]",
        ),
    )
    .unwrap();
    let o = snowsim(&[
        "run",
        "--scene",
        frozen_scene.to_str().unwrap(),
        "--headless",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("simulate.frozen_wind_steps"),
        "{}",
        stderr(&o)
    );
    let o = snowsim(&[
        "run",
        "--headless",
        "--simulate",
        "snow",
        "--wind-every",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--wind-every"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}

/// The long self-checking run: 2 000 frames of the flat scene, nothing drawn, checked
/// every 100 frames.
#[test]
fn a_long_undrawn_run_checks_itself_and_reports_no_drawing() {
    let report = run_flat(&[
        "--render",
        "off",
        "--frames",
        "2000",
        "--check",
        "--check-every",
        "100",
    ]);
    assert_eq!(report["interop"], "none", "{report}");
    assert_eq!(report["particle_render"], "none", "{report}");
    assert_eq!(report["frames"], 2000);
    assert!(report["fps"].as_f64().unwrap() > 0.0);
    assert!(report["snow"]["landed"].as_u64().unwrap() > 0, "{report}");
    let stages = device_stages(&report);
    assert!(stages.iter().any(|s| s == "snow.step"), "{stages:?}");
    // Nothing to capture without drawing.
    let o = snowsim(&[
        "run",
        "--render",
        "off",
        "--screenshot",
        "/tmp/x.png",
        "--frames",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// `--profile-every K` times the kernels on one frame in K: the device stages are still means
/// per frame (the snow step's launches per frame as when every frame is timed) and the host
/// stages still count every frame.
#[test]
fn sampled_profiling_keeps_per_frame_means() {
    let stage = |report: &serde_json::Value, name: &str| -> serde_json::Value {
        report["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no stage {name}: {report}"))
    };
    let every = run_flat(&["--render", "off", "--frames", "41"]);
    let sampled = run_flat(&["--render", "off", "--frames", "41", "--profile-every", "4"]);
    let (a, b) = (stage(&every, "snow.step"), stage(&sampled, "snow.step"));
    assert!(a["launches"].as_u64().unwrap() > 0, "{a}");
    assert_eq!(a["launches"], b["launches"], "{a} {b}");
    assert!(b["busy_ms"].as_f64().unwrap() > 0.0, "{b}");
    assert!(sampled["kernel_device_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(every["frames"], sampled["frames"]);
    let o = snowsim(&[
        "run",
        "--render",
        "off",
        "--frames",
        "2",
        "--profile-every",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("invalid value '0' for '--profile-every <K>': 0 is not in 1.."),
        "{}",
        stderr(&o)
    );
}

/// scenes/flat.toml with a log profile (so that the wind solver has work: advection and
/// pressure iterations) and, when `drifting`, a 12 m/s wind whose snow drifts and is lifted
/// into suspension at 2000×, with `extra_wind` lines added to `[wind]`.
pub(crate) fn flat_scene(drifting: bool, extra_wind: &str) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml"))
            .unwrap();
    let text = text
        .replace("profile = \"uniform\"", "profile = \"log\"")
        .replace(
            "pressure_iterations = 20",
            &format!("pressure_iterations = 20\n{extra_wind}"),
        );
    match drifting {
        true => text.replace("speed = 3.0", "speed = 12.0").replace(
            "[time]",
            "[ground]\ndrift = true\nsuspension = true\n\n[time]\nacceleration = 2000.0",
        ),
        false => text,
    }
}

/// A run's `snow` report without the ground refreshes' wall times, which differ between runs
/// of the same state (and so which was the longest; each refresh's entry is times only, so
/// only their count is kept).
pub(crate) fn untimed(report: &serde_json::Value) -> serde_json::Value {
    let mut snow = report["snow"].clone();
    if let Some(refresh) = snow["ground_refresh"].as_object_mut() {
        let count = refresh.get("each").and_then(|e| e.as_array()).map(Vec::len);
        refresh.retain(|k, _| {
            !k.contains("_ms") && !k.ends_with("_phases") && k != "max_refresh" && k != "each"
        });
        refresh.insert("each_count".into(), serde_json::json!(count));
    }
    snow
}

/// `snowsim run` of `scene`, undrawn, 30 frames with a wind step each, `particles` parcels,
/// checked every 10 frames, its state written to `vtu`, with `extra` options: the JSON report
/// and the state file.
fn state_run(
    scene: &Path,
    vtu: &Path,
    particles: &str,
    extra: &[&str],
) -> (serde_json::Value, Vec<u8>) {
    let mut args = vec![
        "run",
        "--scene",
        scene.to_str().unwrap(),
        "--render",
        "off",
        "--frames",
        "30",
        "--particles",
        particles,
        "--simulate",
        "wind,snow",
        "--wind-every",
        "1",
        "--check",
        "--check-every",
        "10",
        "--vtu",
        vtu.to_str().unwrap(),
        "--json",
    ];
    args.extend(extra);
    let o = snowsim(&args);
    assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    (report, std::fs::read(vtu).unwrap())
}

/// The wind solver on a context of its own (here a second context on the same PoCL device,
/// through `--wind-device`, on a thread of its own) gives the very same run: the snow of frame
/// n samples the wind of the steps before frame n in both modes, so the final state files are
/// identical byte for byte. Twice: a light wind, and a strong one whose snow drifts and is
/// lifted into suspension, with the laid snow raising the wind's ground every 0.2 s (the
/// refresh waits for the wind's thread).
#[test]
fn wind_on_another_device_gives_the_same_snow_and_wind_as_one_device() {
    let dir = temp_dir("wind_on_another_device");
    for (case, drifting) in [("light", false), ("drifting", true)] {
        let scene = dir.join(format!("{case}.toml"));
        std::fs::write(
            &scene,
            flat_scene(drifting, "ground_refresh = 0.2\nground_refresh_lag = 3"),
        )
        .unwrap();
        let mut reports = Vec::new();
        for (name, extra) in [
            ("one", &[][..]),
            ("two", &["--wind-device", "0", "--snow-device", "0"][..]),
        ] {
            let vtu = dir.join(format!("{case}-{name}.vtu"));
            let (report, state) = state_run(&scene, &vtu, "4096", extra);
            assert_eq!(report["snow"]["wind_steps"], 30, "{report}");
            reports.push((report, state));
        }
        let snow = &reports[0].0["snow"];
        assert!(snow["landed"].as_u64().unwrap() > 0, "{case}: {snow}");
        assert!(
            snow["wind_iterations"].as_f64().unwrap() > 0.0,
            "{case}: {snow}"
        );
        if drifting {
            assert!(snow["drift"]["eroded_m3"].as_f64().unwrap() > 0.0, "{snow}");
            assert!(
                snow["ground_refresh"]["refreshes"].as_u64().unwrap() >= 2,
                "{snow}"
            );
        }
        assert_eq!(untimed(&reports[0].0), untimed(&reports[1].0), "{case}");
        assert!(
            reports[0].1 == reports[1].1,
            "{case}: the two state files differ"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The parcels split across devices (`--snow-devices`, here two and three contexts on the one
/// PoCL device, with shares given or measured, the wind on the snow's device or beside it;
/// with `--snow-shares auto` the device that also runs the wind takes fewer) give the very
/// same state as one device, byte for byte: the parcels' ids and streams are the run's, and the
/// others' landings are added to the snow's cover, exactly, before it drifts and is smoothed.
/// The drift and the snow in suspension run on the summed cover and cells. `--check` holds
/// across the devices (every id once, the ledger over all of them); drawing is not split yet
/// and is refused with the reason.
#[test]
fn parcels_split_across_devices_give_the_same_state_as_one_device() {
    let dir = temp_dir("snow_devices");
    let scene = dir.join("drift.toml");
    std::fs::write(&scene, flat_scene(true, "")).unwrap();
    let run = |name: &str, extra: &[&str]| {
        state_run(&scene, &dir.join(format!("{name}.vtu")), "5000", extra)
    };
    let (one, one_vtu) = run("one", &[]);
    let snow = &one["snow"];
    assert!(snow["landed"].as_u64().unwrap() > 20, "{snow}");
    assert!(snow["drift"]["eroded_m3"].as_f64().unwrap() > 0.0, "{snow}");
    assert!(
        snow["drift"]["suspended_m3"].as_f64().unwrap() > 0.0,
        "{snow}"
    );
    // The falling snow's density is a blend of the devices' in f32: compared apart.
    let exact = |r: &serde_json::Value| {
        let mut snow = r["snow"].clone();
        let fields = snow.as_object_mut().unwrap();
        fields.remove("flake_density_at_camera");
        // What crossed between the devices: only a split has it.
        fields.remove("split_traffic");
        fields.remove("split_waits");
        fields.remove("split_device_ms");
        snow
    };
    for (name, extra) in [
        (
            "two",
            &["--snow-devices", "0,0", "--snow-shares", "auto"][..],
        ),
        (
            "three",
            &["--snow-devices", "0,0,0", "--snow-shares", "1,2,3"][..],
        ),
        (
            "beside",
            &["--snow-devices", "0,0", "--wind-device", "0"][..],
        ),
    ] {
        let (split, split_vtu) = run(name, extra);
        assert_eq!(exact(&one), exact(&split), "{name}");
        assert!(one_vtu == split_vtu, "{name}: the state files differ");
        // Each other device's wind field once per step (the flat scene's 9 × 9 × 7 vertices),
        // its landings and the suspension's cells each frame.
        let traffic = &split["snow"]["split_traffic"];
        let others = if name == "three" { 2 } else { 1 };
        assert_eq!(traffic["wind_field"], 16 * 567 * others, "{traffic}");
        assert!(traffic["landings"].as_u64().unwrap() > 0, "{traffic}");
        assert!(traffic["cells"].as_u64().unwrap() > 0, "{traffic}");
        assert_eq!(traffic["drawn_parcels"], 0, "{traffic}");
        // Each other device's launches are timed on the timed frames (every frame here).
        let busy = split["snow"]["split_device_ms"].as_array().unwrap();
        assert_eq!(busy.len() as u64, others, "{busy:?}");
        for ms in busy {
            let ms = ms.as_f64().expect("a timed device");
            assert!(ms.is_finite() && ms > 0.0, "{busy:?}");
        }
        let shares = split["snow_devices"].as_array().unwrap();
        if name == "two" {
            // --snow-shares auto: the shares follow the measured costs, and the snow's device,
            // which also runs the wind here, takes fewer parcels.
            let held = |k: usize| shares[k]["particles"].as_u64().unwrap();
            assert!(held(0) < held(1), "{shares:?}");
        }
        let parcels: u64 = shares
            .iter()
            .map(|s| s["particles"].as_u64().unwrap())
            .sum();
        assert_eq!(parcels, 5000, "{name}: {shares:?}");
        let density =
            |r: &serde_json::Value| r["snow"]["flake_density_at_camera"].as_f64().unwrap();
        assert!((density(&one) - density(&split)).abs() < 1e-4, "{name}");
    }
    let (three, _) = run(
        "three-shares",
        &["--snow-devices", "0,0,0", "--snow-shares", "1,2,3"],
    );
    let shares: Vec<u64> = three["snow_devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["particles"].as_u64().unwrap())
        .collect();
    assert_eq!(shares, [833, 1666, 2501]);

    // A weight per device, each positive.
    let refused = |args: &[&str], why: &str| {
        let o = snowsim(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(why), "{args:?}: {}", stderr(&o));
    };
    let undrawn = [
        "run",
        "--render",
        "off",
        "--frames",
        "2",
        "--snow-devices",
        "0,0",
    ];
    let scene_arg = ["--scene", scene.to_str().unwrap()];
    for (shares, why) in [
        ("1", "--snow-shares gives 1 weights for 2 snow devices"),
        ("1,-1", "one positive weight per snow device"),
    ] {
        refused(
            &[&undrawn[..], &scene_arg, &["--snow-shares", shares]].concat(),
            why,
        );
    }

    // Without --snow-shares the shares are measured (and said), and the run says where the
    // host waited for the split.
    let o = snowsim(&[&undrawn[..], &scene_arg].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert_eq!(said.matches("snow share: ").count(), 2, "{said}");
    assert!(said.contains("ms of wind a frame measured"), "{said}");
    assert!(
        said.contains("split: the host waited")
            && said.contains("for the others' landings")
            && said.contains("split: the other devices' launches took"),
        "{said}"
    );

    // Drawn, every device's parcels reach the drawing: the picture is one device's, but for
    // the order the parcels blend in.
    let picture = |name: &str, particles: &str, extra: &[&str]| {
        let png = dir.join(format!("{name}.png"));
        let mut args = vec![
            "run",
            "--scene",
            scene.to_str().unwrap(),
            "--headless",
            "--frames",
            "20",
            "--size",
            "160x120",
            "--particles",
            particles,
            "--screenshot",
            png.to_str().unwrap(),
            "--json",
        ];
        args.extend(extra);
        let o = snowsim(&args);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        (report, image::open(&png).unwrap().to_rgb8())
    };
    let (one, one_png) = picture("drawn-one", "5000", &[]);
    let (two, two_png) = picture("drawn-two", "5000", &["--snow-devices", "0,0"]);
    assert_eq!(exact(&one), exact(&two));
    assert_eq!(two["particles"], 5000, "{two}");
    // The other device's parcels cross to the drawing, 16 bytes each.
    let other = two["snow_devices"][1]["particles"].as_u64().unwrap();
    assert_eq!(two["snow"]["split_traffic"]["drawn_parcels"], 16 * other);
    let differing = |a: &image::RgbImage, b: &image::RgbImage| {
        a.pixels()
            .zip(b.pixels())
            .filter(|(p, q)| p.0.iter().zip(q.0).any(|(x, y)| x.abs_diff(y) > 8))
            .count()
    };
    let (_, sky) = picture("drawn-none", "1", &[]);
    // The flakes change thousands of pixels of a picture with one parcel; splitting may
    // change a few (the blending order), not more than 2 % of that.
    let (flakes, moved) = (differing(&one_png, &sky), differing(&one_png, &two_png));
    assert!(flakes > 500, "{flakes} pixels show flakes");
    assert!(
        moved * 50 <= flakes,
        "{moved} pixels differ, of {flakes} that show flakes"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `--vtu-every K DIR` writes a state every K frames and a `.pvd` collection that lists each
/// with its simulated time (frame × step), drawn or not.
#[test]
fn vtu_every_writes_a_paraview_series_with_the_simulated_times() {
    let dir = temp_dir("vtu_every");
    for (render, frames) in [("off", "30"), ("on", "20")] {
        let out = dir.join(render);
        let report = run_flat(&[
            "--render",
            render,
            "--frames",
            frames,
            "--vtu-every",
            "10",
            out.to_str().unwrap(),
        ]);
        assert_eq!(report["frames"].as_u64().unwrap().to_string(), frames);
        let pvd = std::fs::read_to_string(out.join("states.pvd")).unwrap();
        let entries: Vec<(f64, String)> = pvd
            .lines()
            .filter(|l| l.contains("<DataSet"))
            .map(|l| {
                let attr = |name: &str| {
                    let start = l.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                    l[start..start + l[start..].find('"').unwrap()].to_string()
                };
                (attr("timestep").parse().unwrap(), attr("file"))
            })
            .collect();
        let expected = frames.parse::<usize>().unwrap() / 10;
        assert_eq!(entries.len(), expected, "{pvd}");
        for (k, (time, file)) in entries.iter().enumerate() {
            // The flat scene's step is 0.02 s.
            assert!((time - 0.2 * (k + 1) as f64).abs() < 1e-6, "{pvd}");
            let state = std::fs::read(out.join(file)).unwrap();
            assert!(
                state.starts_with(b"<?xml")
                    && state.windows(17).any(|w| w == b"Name=\"snow_depth\"")
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
