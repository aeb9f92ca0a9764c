//! `snowsim bench` without a sub-command: a sweep of `snowsim run` children on PoCL, its CSV
//! rows, and a configuration that fails among ones that do not.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use snowsim::bench::record::{Row, read_rows};

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snowsim-sweep-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `snowsim bench ARGS` from the repository's root on PoCL, small frames, writing `csv`; `args`
/// replace the defaults of the same options.
fn sweep(csv: &Path, args: &[&str]) -> Output {
    let defaults = [
        ("--devices", "pocl"),
        ("--scene", "scenes/flat.toml"),
        ("--size", "160x120"),
        ("--frames", "3"),
        ("--warmup", "1"),
        ("--repeats", "2"),
        ("--timeout", "120"),
    ];
    let mut command = Command::new(env!("CARGO_BIN_EXE_snowsim"));
    command.current_dir(env!("CARGO_MANIFEST_DIR")).arg("bench");
    for (option, value) in defaults {
        if !args.contains(&option) {
            command.args([option, value]);
        }
    }
    command
        .arg("--csv")
        .arg(csv)
        .args(args)
        .output()
        .expect("run snowsim")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The columns every row has, whatever its status.
fn check_common(r: &Row) {
    assert_eq!(r.schema, snowsim::bench::record::SCHEMA_VERSION);
    // The device's index in `snowsim devices` (PoCL's is 0 here: the only device).
    assert_eq!(r.device_index, Some(0), "{r:?}");
    assert_eq!(r.date.len(), 20, "{}", r.date);
    assert!(r.date.starts_with("20") && r.date.ends_with('Z') && r.date.contains('T'));
    assert_eq!(r.snowsim_version, env!("CARGO_PKG_VERSION"));
    assert!(!r.git_commit.is_empty());
    assert!(r.platform.contains("Portable Computing Language"), "{r:?}");
    assert!(
        !r.device.is_empty() && !r.driver_version.is_empty(),
        "{r:?}"
    );
    assert!(r.opencl_version.starts_with("OpenCL"), "{r:?}");
    assert_eq!(r.device_type, "CPU");
    assert!(r.compute_units >= 1);
    assert_eq!(r.scene, "scenes/flat.toml");
    assert_eq!((r.width, r.height, r.render), (160, 120, true));
    assert_eq!((r.warmup, r.frames), (1, 3));
    assert_eq!(r.interop_requested, "auto");
    assert_eq!(r.particle_render_requested, "auto");
    assert_eq!(r.simulate, "wind+snow");
    assert_eq!(r.tets, None);
}

#[test]
fn sweep_of_two_counts_and_two_sorts_writes_four_ok_rows() {
    let dir = temp_dir("four");
    let csv = dir.join("sweep.csv");
    let out = sweep(&csv, &["--particles", "1024,2^12", "--sort", "off,full"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = read_rows(&csv).unwrap();
    let settings: Vec<(u64, &str)> = rows
        .iter()
        .map(|r| (r.particles, r.sort.as_str()))
        .collect();
    assert_eq!(
        settings,
        [(1024, "off"), (1024, "full"), (4096, "off"), (4096, "full")]
    );
    for r in &rows {
        check_common(r);
        assert_eq!(r.status, "ok", "{r:?}");
        assert!(r.error.is_empty());
        assert_eq!(r.repeats, 2);
        let (mean, std) = (r.fps_mean.unwrap(), r.fps_std.unwrap());
        assert!(mean > 0.0 && mean.is_finite(), "{r:?}");
        assert!(std >= 0.0 && std.is_finite(), "{r:?}");
        // The mean of per-run FPS is at least 1000 / the mean frame time (each run's FPS is
        // 1000 / its frame time; the arithmetic mean bounds the harmonic one).
        let frame = r.ms_frame.unwrap();
        assert!(
            frame > 0.0 && 1000.0 / frame <= mean * (1.0 + 1e-9),
            "{r:?}"
        );
        assert!(r.ms_snow.is_some_and(|ms| ms > 0.0), "{r:?}");
        // Sorting shows up exactly where it was asked for.
        assert_eq!(r.ms_sort.is_some(), r.sort == "full", "{r:?}");
        // PoCL has no GL sharing nor external memory: the particles are copied.
        assert_eq!(r.interop, "copy", "{r:?}");
        assert!(!r.particle_render.is_empty(), "{r:?}");
    }
    let table = text(&out.stdout);
    assert_eq!(table.matches(" ok ").count(), 4, "{table}");
    assert!(table.contains("4 rows written"), "{table}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_failing_configuration_gets_an_error_row_and_the_sweep_goes_on() {
    let dir = temp_dir("fail");
    let csv = dir.join("sweep.csv");
    let out = sweep(&csv, &["--particles", "2^40,1024", "--sort", "full"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = read_rows(&csv).unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (bad, good) = (&rows[0], &rows[1]);
    check_common(bad);
    check_common(good);
    assert_eq!(bad.particles, 1 << 40);
    assert_eq!(bad.status, "error", "{bad:?}");
    assert!(bad.error.contains("--particles must be at most"), "{bad:?}");
    assert_eq!(
        bad.repeats, 1,
        "a failed configuration stops at its first run"
    );
    assert_eq!(
        (bad.fps_mean, bad.fps_std, bad.ms_frame),
        (None, None, None)
    );
    assert!(bad.interop.is_empty());
    assert_eq!((good.particles, good.status.as_str()), (1024, "ok"));
    assert!(good.fps_mean.is_some_and(|f| f > 0.0));
    assert!(text(&out.stdout).contains("error --particles must be at most"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_sweep_options_fail_before_running_anything() {
    let dir = temp_dir("bad");
    let csv = dir.join("sweep.csv");
    let out = sweep(&csv, &["--particles", "2^x"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("--particles: `2^x`"), "{err}");
    assert!(!csv.exists());
    let out = sweep(&csv, &["--sort", "sideways"]);
    assert_eq!(out.status.code(), Some(2), "clap refuses it");
    let err = text(&out.stderr);
    assert!(
        err.contains("invalid value 'sideways' for '--sort <LIST>'")
            && err.contains("[possible values: off, full, partial]"),
        "{err}"
    );
    // The sub-commands still work, and take no sweep options.
    let help = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(["bench", "--help"])
        .output()
        .unwrap();
    let help = text(&help.stdout);
    for needed in [
        "--particles",
        "--repeats",
        "--timeout",
        "Example",
        "wind",
        "snow",
    ] {
        assert!(help.contains(needed), "`{needed}` missing from:\n{help}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(["bench", "--repeats", "2", "wind", "--help"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "sweep options and a sub-command conflict"
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("the subcommand 'wind' cannot be used with '--repeats <R>'"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn simulate_items_reach_the_runs() {
    let dir = temp_dir("simulate");
    let csv = dir.join("sweep.csv");
    let out = sweep(
        &csv,
        &[
            "--particles",
            "1024",
            "--simulate",
            "wind,snow",
            "--repeats",
            "1",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = read_rows(&csv).unwrap();
    let simulated: Vec<&str> = rows.iter().map(|r| r.simulate.as_str()).collect();
    assert_eq!(simulated, ["wind", "snow"]);
    for r in &rows {
        assert_eq!((r.status.as_str(), r.repeats), ("ok", 1), "{r:?}");
        // The snow step runs only where the snow is simulated.
        assert_eq!(r.ms_snow.is_some(), r.simulate == "snow", "{r:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_past_its_timeout_is_killed_and_gets_a_timeout_row() {
    let dir = temp_dir("timeout");
    let csv = dir.join("sweep.csv");
    let started = std::time::Instant::now();
    // A million particles for 10⁶ frames: far more than one second on any device.
    let out = sweep(
        &csv,
        &[
            "--particles",
            "2^20",
            "--frames",
            "1000000",
            "--timeout",
            "1",
            "--repeats",
            "1",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    let rows = read_rows(&csv).unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (r.status.as_str(), r.particles),
        ("timeout", 1 << 20),
        "{r:?}"
    );
    assert!(r.error.starts_with("no result after 1 s, killed"), "{r:?}");
    assert_eq!(r.fps_mean, None);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn render_off_and_tets_reach_the_runs() {
    let dir = temp_dir("render");
    let csv = dir.join("sweep.csv");
    let out = sweep(
        &csv,
        &[
            "--particles",
            "1024",
            "--tets",
            "2^12",
            "--render",
            "on,off",
            "--repeats",
            "1",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = read_rows(&csv).unwrap();
    let rendered: Vec<bool> = rows.iter().map(|r| r.render).collect();
    assert_eq!(rendered, [true, false]);
    for r in &rows {
        assert_eq!((r.status.as_str(), r.tets), ("ok", Some(4096)), "{r:?}");
        assert!(
            r.fps_mean.is_some_and(|f| f > 0.0) && r.ms_snow.is_some(),
            "{r:?}"
        );
        // Drawing and its transfer happen only with rendering on.
        assert_eq!(r.ms_draw.is_some(), r.render, "{r:?}");
        assert_eq!(r.ms_transfer.is_some(), r.render, "{r:?}");
        assert_eq!(r.interop.is_empty(), !r.render, "{r:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn append_keeps_the_rows_already_in_the_csv() {
    let dir = temp_dir("append");
    let csv = dir.join("sweep.csv");
    let small = ["--particles", "1024", "--repeats", "1", "--frames", "2"];
    let first = sweep(&csv, &small);
    assert!(first.status.success(), "{}", text(&first.stderr));
    let before = std::fs::read_to_string(&csv).unwrap();
    let again: Vec<&str> = small.iter().copied().chain(["--append"]).collect();
    let second = sweep(&csv, &again);
    assert!(second.status.success(), "{}", text(&second.stderr));
    let rows = read_rows(&csv).unwrap();
    assert_eq!(rows.len(), 2, "one row per sweep");
    assert!(
        std::fs::read_to_string(&csv).unwrap().starts_with(&before),
        "the first sweep's rows come first, unchanged"
    );
    assert!(
        text(&second.stdout).contains("1 rows added to the 1 already in"),
        "{}",
        text(&second.stdout)
    );
    // Without --append the file is replaced by the new sweep's rows.
    let third = sweep(&csv, &small);
    assert!(third.status.success(), "{}", text(&third.stderr));
    assert_eq!(read_rows(&csv).unwrap().len(), 1);
    // --append onto a file that is not a sweep CSV: refused, the file unchanged.
    let notes = dir.join("notes.csv");
    std::fs::write(&notes, "a,b\n1,2\n").unwrap();
    let forced: Vec<&str> = small
        .iter()
        .copied()
        .chain(["--append", "--force"])
        .collect();
    let out = sweep(&notes, &forced);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("is not a sweep CSV to extend"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "a,b\n1,2\n");
    std::fs::remove_dir_all(&dir).ok();
}
