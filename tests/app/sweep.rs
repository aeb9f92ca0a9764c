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
    sweep_with(csv, args, true)
}

/// [`sweep`] without its default `--devices` (which `--snow-devices` replaces).
fn sweep_without_devices(csv: &Path, args: &[&str]) -> Output {
    sweep_with(csv, args, false)
}

fn sweep_with(csv: &Path, args: &[&str], devices: bool) -> Output {
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
        let replaced = args.contains(&option)
            || (option == "--devices" && (!devices || args.contains(&"--snow-devices")));
        if !replaced {
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
    assert_eq!(r.device_index, [0], "{r:?}");
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
        "--wind-device",
        "--snow-devices",
        "--snow-shares",
        "--wind-every",
        "--compare",
        "speedup.png",
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

/// A copy of scenes/flat.toml in `dir` whose snow drifts without suspension: what a split of
/// the parcels across devices (`--snow-devices`) takes for now.
fn drifting_scene(dir: &Path) -> PathBuf {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml"))
            .unwrap();
    let scene = dir.join("drift.toml");
    std::fs::write(
        &scene,
        text.replace(
            "[time]",
            "[ground]\ndrift = true\nsuspension = false\n\n[time]",
        ),
    )
    .unwrap();
    scene
}

#[test]
fn wind_device_and_wind_every_items_reach_the_runs_and_their_columns() {
    let dir = temp_dir("wind_device");
    let csv = dir.join("sweep.csv");
    let out = sweep(
        &csv,
        &[
            "--wind-device",
            "same,0",
            "--wind-every",
            "1,2",
            "--render",
            "off",
            "--particles",
            "1024",
            "--frames",
            "4",
            "--repeats",
            "1",
            "--verbose",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows = read_rows(&csv).unwrap();
    let columns: Vec<(&str, Option<usize>, Option<u32>)> = rows
        .iter()
        .map(|r| (r.wind_device.as_str(), r.wind_device_index, r.wind_every))
        .collect();
    let name = format!("0 {}", rows[0].device);
    assert_eq!(
        columns,
        [
            ("", None, Some(1)),
            ("", None, Some(2)),
            (name.as_str(), Some(0), Some(1)),
            (name.as_str(), Some(0), Some(2)),
        ]
    );
    for r in &rows {
        assert_eq!(r.status, "ok", "{r:?}");
        assert_eq!(
            (r.device_index.as_slice(), r.snow_shares.as_str()),
            (&[0][..], "")
        );
        // The wind's kernels are timed on the snow's device only where the wind runs there:
        // the runs beside it really had a wind device of their own.
        assert_eq!(r.ms_wind.is_some(), r.wind_device.is_empty(), "{r:?}");
    }
    // The runs told what they ran on and how often the wind stepped (their stderr, echoed
    // by --verbose): the scene's frames are 0.02 s.
    let err = text(&out.stderr);
    for step in ["0.02", "0.04"] {
        let line = format!("stepping with the frames, a step every {step} s");
        assert_eq!(err.matches(&line).count(), 2, "{line}: {err}");
    }
    assert_eq!(err.matches("| wind device: [0]").count(), 2, "{err}");
    let table = text(&out.stdout);
    assert!(
        table.contains("wind 0, wind every 2") && table.contains("wind every 1"),
        "{table}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn split_snow_devices_write_lists_compare_with_a_baseline_and_plot() {
    let dir = temp_dir("snow_devices");
    let scene = drifting_scene(&dir);
    let quick = |csv: &Path, extra: &[&str]| {
        let mut args = vec![
            "--scene",
            scene.to_str().unwrap(),
            "--snow-devices",
            "0,0+0",
            "--snow-shares",
            "1,1+3",
            "--render",
            "off",
            "--frames",
            "2",
            "--repeats",
            "1",
        ];
        args.extend(extra);
        let out = sweep_without_devices(csv, &args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        out
    };
    let base = dir.join("base.csv");
    quick(&base, &["--particles", "1024"]);
    let rows = read_rows(&base).unwrap();
    assert_eq!(rows.len(), 2);
    let one = &rows[0];
    assert_eq!(
        (one.status.as_str(), one.device_index.as_slice()),
        ("ok", &[0][..])
    );
    assert!(
        !one.device.contains(';') && one.snow_shares.is_empty(),
        "{one:?}"
    );
    let split = &rows[1];
    assert_eq!(split.status, "ok", "{split:?}");
    assert_eq!(split.device, format!("{0};{0}", one.device));
    assert_eq!(split.device_index, [0, 0]);
    assert_eq!(split.device_uuid.matches(';').count(), 1, "{split:?}");
    assert_eq!(split.device_pci_bus.matches(';').count(), 1, "{split:?}");
    // The parcels each device held, from the run's own report: weights 1 and 3.
    assert_eq!(split.snow_shares, "256;768");
    assert_eq!(split.particles, 1024);

    // The same configurations and two new ones against that baseline.
    let new = dir.join("new.csv");
    let out = quick(
        &new,
        &[
            "--particles",
            "1024,2048",
            "--compare",
            base.to_str().unwrap(),
        ],
    );
    let table = text(&out.stdout);
    assert!(
        table.contains(&format!("against {}:", base.display())),
        "{table}"
    );
    let ratios: Vec<&str> = table.lines().filter(|l| l.contains(" → ")).collect();
    assert_eq!(ratios.len(), 2, "{table}");
    assert!(
        ratios.iter().all(|l| l.contains("×, ") && l.contains("%)")),
        "{table}"
    );
    assert!(ratios[1].contains("snow 0+0, shares 256+768"), "{table}");
    assert_eq!(table.matches(": no baseline").count(), 2, "{table}");
    assert!(
        table.contains(&format!(
            "2 of 4 configurations have no baseline in {}",
            base.display()
        )),
        "{table}"
    );

    // The plots of both: the split's speed-up over device 0 alone, at 1024 and 2048 particles.
    let plots = dir.join("plots");
    let plot = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args([
            "plot",
            base.to_str().unwrap(),
            new.to_str().unwrap(),
            "--out",
        ])
        .arg(&plots)
        .output()
        .unwrap();
    assert!(plot.status.success(), "{}", text(&plot.stderr));
    let speedup: serde_json::Value =
        serde_json::from_slice(&std::fs::read(plots.join("speedup.json")).unwrap()).unwrap();
    let xs: Vec<u64> = speedup["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["points"].as_array().unwrap().iter())
        .map(|p| p["x"].as_u64().unwrap())
        .collect();
    // Two series (the two files' repeats differ in nothing: one series per configuration
    // key, the 1024 run twice).
    assert!(xs.contains(&1024) && xs.contains(&2048), "{speedup}");
    assert!(plots.join("speedup.png").exists() && plots.join("devices.png").exists());
    let md = std::fs::read_to_string(plots.join("summary.md")).unwrap();
    assert_eq!(md.matches("## ").count(), 2, "{md}");
    assert!(
        md.contains("| snow 0+0, shares 256+768 | 1024 | off |"),
        "{md}"
    );
    assert!(
        md.contains("| snow 0+0, shares 512+1536 | 2048 | off |"),
        "{md}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_device_axes_and_baselines_are_refused_before_anything_runs() {
    let dir = temp_dir("bad_axes");
    let csv = dir.join("sweep.csv");
    let notes = dir.join("notes.csv");
    std::fs::write(&notes, "a,b\n1,2\n").unwrap();
    let header = dir.join("header.csv");
    std::fs::write(&header, "my own notes: no command wrote this file\n").unwrap();
    let scene = drifting_scene(&dir);
    let scene = scene.to_str().unwrap();
    for (args, code, expected) in [
        (&["--wind-every", "0"][..], 2, "'0'"),
        (&["--wind-every", "1,x"][..], 2, "'x'"),
        (
            &["--wind-device", "same,nosuchdevice"][..],
            1,
            "--wind-device \"nosuchdevice\"",
        ),
        (&["--wind-device", "same,"][..], 1, "--wind-device \"\""),
        (
            &[
                "--snow-devices",
                "0+nosuchdevice",
                "--render",
                "off",
                "--scene",
                scene,
            ][..],
            1,
            "--snow-devices \"nosuchdevice\"",
        ),
        (
            &[
                "--snow-devices",
                "0,0+0",
                "--snow-shares",
                "1+1",
                "--render",
                "off",
                "--scene",
                scene,
            ][..],
            1,
            "--snow-shares \"1+1\": 1 items for the 2",
        ),
        (
            &[
                "--snow-devices",
                "0+0",
                "--snow-shares",
                "1+0",
                "--render",
                "off",
                "--scene",
                scene,
            ][..],
            1,
            "\"0\" is not a weight",
        ),
        (
            &[
                "--snow-devices",
                "0+0",
                "--snow-shares",
                "1+1+1",
                "--render",
                "off",
                "--scene",
                scene,
            ][..],
            1,
            "3 weights for the 2 devices",
        ),
        (
            &["--snow-shares", "1"][..],
            1,
            "--snow-shares needs --snow-devices",
        ),
        (
            &["--compare", header.to_str().unwrap()][..],
            1,
            "header.csv is not a sweep CSV to compare with: its header has no column schema",
        ),
        (
            &["--compare", notes.to_str().unwrap()][..],
            1,
            "notes.csv is not a sweep CSV",
        ),
    ] {
        let out = sweep(&csv, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(
            err.contains(expected),
            "{args:?}: `{expected}` not in {err}"
        );
        assert!(!csv.exists(), "{args:?} ran");
    }
    // --devices and --snow-devices both: which devices would be meant is unclear.
    let out = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["bench", "--devices", "0", "--snow-devices", "0", "--csv"])
        .arg(&csv)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--snow-devices replaces --devices: give one of them"),
        "{err}"
    );
    assert!(!csv.exists());
    std::fs::remove_dir_all(&dir).ok();
}
