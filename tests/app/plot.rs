//! `snowsim plot` on sweep CSVs built here: the PNGs decode at their size and every series
//! JSON matches the rows written, computed independently of the plotting code; bad inputs and
//! outputs end with a clear error and status 1.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use snowsim::bench::record::{Row, SCHEMA_VERSION, write_rows};

fn snowsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(args)
        .output()
        .expect("run snowsim")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snowsim-plot-{test}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const DEVICES: [(&str, &str); 2] = [
    ("NVIDIA H100, \"SXM\"", "NVIDIA CUDA"),
    ("cpu-pocl", "Portable Computing Language"),
];
const SORTS: [&str; 2] = ["full", "off"];
const PARTICLES: [u64; 3] = [1 << 16, 1 << 18, 1 << 20];

/// A completed row whose numbers depend on all of its settings, so that a row put in the
/// wrong series shows.
fn ok_row(device: usize, sort: usize, particles: u64) -> Row {
    let (name, platform) = DEVICES[device];
    let scale = (device * 2 + sort + 1) as f64;
    let fps = 1.0e8 / (particles as f64 * scale);
    Row {
        schema: SCHEMA_VERSION,
        date: "2026-11-23T08:00:00Z".into(),
        device: name.into(),
        platform: platform.into(),
        scene: "scenes/valley.toml".into(),
        particles,
        width: 1280,
        height: 720,
        render: true,
        interop_requested: "auto".into(),
        interop: "share".into(),
        particle_render_requested: "auto".into(),
        particle_render: "splat".into(),
        sort: SORTS[sort].into(),
        simulate: "wind+snow".into(),
        frames: 100,
        warmup: 10,
        repeats: 3,
        status: "ok".into(),
        fps_mean: Some(fps),
        fps_std: Some(fps / 16.0 + scale),
        ms_frame: Some(1000.0 / fps),
        ms_wind: Some(0.5 * scale),
        ms_snow: Some(particles as f64 / 1.0e6),
        ms_sort: (sort == 0).then_some(0.25 * scale),
        ms_smoothing: Some(0.125),
        ms_splat: Some(0.75),
        ms_transfer: None,
        ms_draw: Some(1.5),
        ..Row::default()
    }
}

/// The CPU with sorting, at 2^22 particles, out of memory.
fn failed_row() -> Row {
    Row {
        particles: 1 << 22,
        status: "error".into(),
        error: "CL_OUT_OF_RESOURCES".into(),
        interop: String::new(),
        particle_render: String::new(),
        fps_mean: None,
        fps_std: None,
        ms_frame: None,
        ms_wind: None,
        ms_snow: None,
        ms_sort: None,
        ms_smoothing: None,
        ms_splat: None,
        ms_draw: None,
        ..ok_row(1, 0, 1 << 22)
    }
}

/// One CSV per device (rows from two machines); the failed row is the CPU file's row 4.
fn write_sweep(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for device in 0..2 {
        let mut rows = Vec::new();
        for sort in 0..2 {
            for &p in PARTICLES.iter().rev() {
                rows.push(ok_row(device, sort, p));
            }
            if device == 1 && sort == 0 {
                rows.push(failed_row());
            }
        }
        let path = dir.join(format!("sweep{device}.csv"));
        write_rows(&path, &rows).unwrap();
        files.push(path);
    }
    files
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn series_by_label<'a>(figure: &'a Value, label: &str) -> &'a Value {
    figure["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == label)
        .unwrap_or_else(|| panic!("no series `{label}` in {figure:#}"))
}

/// Whether a number read from JSON is `expected`: serde_json (without `float_roundtrip`) may
/// parse the shortest decimal that snowsim wrote one unit in the last place off.
fn same(got: Option<f64>, expected: Option<f64>) -> bool {
    match (got, expected) {
        (Some(g), Some(e)) => (g - e).abs() <= 2.0 * f64::EPSILON * e.abs(),
        (g, e) => g == e,
    }
}

fn png_size(path: &Path) -> (u32, u32) {
    let image = image::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (image.width(), image.height())
}

#[test]
fn plot_writes_pngs_and_series_that_match_the_rows() {
    let dir = temp_dir("sweep");
    let files = write_sweep(&dir);
    let out = dir.join("plots/new");
    let o = snowsim(&["plot", s(&files[0]), s(&files[1]), "--out", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));

    assert_eq!(png_size(&out.join("fps_particles.png")), (1280, 800));
    let bars = DEVICES.len() * SORTS.len() * PARTICLES.len();
    let (w, h) = png_size(&out.join("stages.png"));
    assert_eq!(w, 1280);
    assert_eq!(h, snowsim::plot::draw::stage_height(bars));
    assert!(!out.join("fps_tets.png").exists(), "no row has tets");

    let fps = read_json(&out.join("fps_particles.json"));
    assert_eq!(fps["x"], "particles");
    assert_eq!(fps["varying"], serde_json::json!(["device", "sort"]));
    assert_eq!(fps["series"].as_array().unwrap().len(), 4);
    let stages = read_json(&out.join("stages.json"));
    assert_eq!(stages["series"].as_array().unwrap().len(), 4);
    for (device, (name, platform)) in DEVICES.iter().enumerate() {
        for (sort, mode) in SORTS.iter().enumerate() {
            let label = format!("{name} (sort={mode})");
            let series = series_by_label(&fps, &label);
            assert_eq!(series["settings"]["device"], *name);
            assert_eq!(series["settings"]["platform"], *platform);
            assert_eq!(series["settings"]["sort"], *mode);
            assert!(series["settings"].get("particles").is_none());
            assert_eq!(series["settings"]["interop"], "auto");
            assert_eq!(
                series["modes_used"],
                serde_json::json!([{"interop": "share", "particle_render": "splat"}])
            );
            let points = series["points"].as_array().unwrap();
            assert_eq!(points.len(), PARTICLES.len(), "{label}");
            for (point, &p) in points.iter().zip(&PARTICLES) {
                let scale = (device * 2 + sort + 1) as f64;
                let y = 1.0e8 / (p as f64 * scale);
                assert_eq!(point["x"], p, "{label}");
                assert!(same(point["y"].as_f64(), Some(y)), "{label}: {point}");
                assert!(
                    same(point["y_std"].as_f64(), Some(y / 16.0 + scale)),
                    "{label}: {point}"
                );
            }
            let failed = series["failed"].as_array().unwrap();
            if device == 1 && sort == 0 {
                assert_eq!(failed.len(), 1, "{label}");
                assert_eq!(failed[0]["x"], 1u64 << 22);
                assert_eq!(failed[0]["status"], "error");
                assert_eq!(failed[0]["error"], "CL_OUT_OF_RESOURCES");
                assert_eq!(failed[0]["file"], s(&files[1]));
                assert_eq!(failed[0]["row"], 4);
            } else {
                assert!(failed.is_empty(), "{label}: {failed:?}");
            }

            let bar_series = series_by_label(&stages, &label);
            let bars = bar_series["bars"].as_array().unwrap();
            assert_eq!(bars.len(), PARTICLES.len());
            for (bar, &p) in bars.iter().zip(&PARTICLES) {
                let row = ok_row(device, sort, p);
                assert_eq!(bar["x"], p);
                let expected = [
                    ("wind", row.ms_wind),
                    ("snow", row.ms_snow),
                    ("sort", row.ms_sort),
                    ("smoothing", row.ms_smoothing),
                    ("splat", row.ms_splat),
                    ("transfer", row.ms_transfer),
                    ("draw", row.ms_draw),
                ];
                let got = bar["stages"].as_array().unwrap();
                assert_eq!(got.len(), expected.len());
                for (g, (stage, ms)) in got.iter().zip(expected) {
                    assert_eq!(g["stage"], stage);
                    assert!(same(g["ms"].as_f64(), ms), "{label} {p} {stage}: {g}");
                }
            }
        }
    }
    assert_eq!(fps["skipped"], serde_json::json!([]));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn plot_by_mesh_size_has_one_line_per_device_and_particle_count() {
    let dir = temp_dir("tets");
    let mut rows = Vec::new();
    for device in 0..2 {
        for tets in [1000u64, 8000, 64000] {
            let mut row = ok_row(device, 0, 1 << 16);
            row.tets = Some(tets);
            row.fps_mean = Some(1.0e7 / tets as f64 / (device + 1) as f64);
            rows.push(row);
        }
    }
    rows.push(ok_row(0, 0, 1 << 18)); // no tets: skipped in the mesh plot
    let file = dir.join("tets.csv");
    write_rows(&file, &rows).unwrap();
    let out = dir.join("out");
    let o = snowsim(&["plot", s(&file), "--out", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(png_size(&out.join("fps_tets.png")), (1280, 800));
    let figure = read_json(&out.join("fps_tets.json"));
    assert_eq!(figure["x"], "tets");
    // Among the rows with tets only the device differs; the row without tets is skipped.
    assert_eq!(figure["varying"], serde_json::json!(["device"]));
    for (device, (name, _)) in DEVICES.iter().enumerate() {
        let series = series_by_label(&figure, name);
        let xs: Vec<u64> = series["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["x"].as_u64().unwrap())
            .collect();
        assert_eq!(xs, [1000, 8000, 64000]);
        let y0 = series["points"][0]["y"].as_f64().unwrap();
        assert!(same(Some(y0), Some(1.0e7 / 1000.0 / (device + 1) as f64)));
    }
    let skipped = figure["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["row"], 7);
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `snowsim plot` on `csv` and returns its error message, checking the exit status is 1.
fn plot_error(dir: &Path, csv: &Path) -> String {
    let o = snowsim(&["plot", s(csv), "--out", s(&dir.join("out"))]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!dir.join("out").exists(), "nothing written on error");
    stderr(&o)
}

#[test]
fn bad_inputs_and_outputs_are_clear_errors_with_status_1() {
    let dir = temp_dir("bad");
    let good = write_sweep(&dir).remove(0);
    let text = std::fs::read_to_string(&good).unwrap();

    let empty = dir.join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    let err = plot_error(&dir, &empty);
    assert!(
        err.contains("empty.csv") && err.contains("no rows"),
        "{err}"
    );

    let header_only = dir.join("header.csv");
    std::fs::write(&header_only, text.lines().next().unwrap()).unwrap();
    let err = plot_error(&dir, &header_only);
    assert!(
        err.contains("header.csv") && err.contains("no rows"),
        "{err}"
    );

    let newer = SCHEMA_VERSION + 1;
    let other_version = dir.join("newer.csv");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[3] = lines[3].replacen(&format!("{SCHEMA_VERSION},"), &format!("{newer},"), 1);
    std::fs::write(&other_version, lines.join("\n")).unwrap();
    let err = plot_error(&dir, &other_version);
    assert!(
        err.contains("newer.csv")
            && err.contains("line 4")
            && err.contains(&format!("schema version {newer}")),
        "{err}"
    );

    let unparsable = dir.join("bad-number.csv");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[2] = lines[2].replace(",1280,720,", ",wide,720,");
    assert_ne!(lines[2], text.lines().nth(2).unwrap());
    std::fs::write(&unparsable, lines.join("\n")).unwrap();
    let err = plot_error(&dir, &unparsable);
    assert!(
        err.contains("bad-number.csv") && err.contains("line 3"),
        "{err}"
    );

    let all_failed = dir.join("failed.csv");
    write_rows(&all_failed, &[failed_row(), failed_row()]).unwrap();
    let err = plot_error(&dir, &all_failed);
    assert!(
        err.contains("no row to plot") && err.contains("error: 2"),
        "{err}"
    );

    let a_file = dir.join("not-a-dir");
    std::fs::write(&a_file, "").unwrap();
    let out = a_file.join("plots");
    let o = snowsim(&["plot", s(&good), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot create the output folder"),
        "{}",
        stderr(&o)
    );

    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn help_names_the_inputs_and_every_output() {
    let o = snowsim(&["plot", "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let help = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "snowsim bench",
        "--out",
        "fps_particles.png",
        "fps_tets.png",
        "stages.png",
        "devices.png",
        "speedup.png",
        "summary.md",
        "JSON",
        "status 1",
    ] {
        assert!(help.contains(needle), "`{needle}` missing from:\n{help}");
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile inputs (issue "Nothing a user types clobbers a file, hangs or lies"): one test per
// class. Every run is killed after a timeout, every error is checked for its text, and every
// input CSV is checked to be byte for byte what it was.

/// What a finished `snowsim plot` left.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Run {
    /// Asserts exit status 1 without a panic; returns stderr.
    fn error(&self) -> &str {
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        assert_eq!(self.code, Some(1), "{}\n{}", self.stdout, self.stderr);
        &self.stderr
    }

    /// Asserts success; returns stdout.
    fn success(&self) -> &str {
        assert_eq!(self.code, Some(0), "{}\n{}", self.stdout, self.stderr);
        &self.stdout
    }
}

/// Runs `command`, killing it (and failing) after `timeout` ([`crate::common::wait_within`]).
fn finish(mut command: Command, timeout: Duration) -> Run {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run snowsim");
    let done = crate::common::wait_within(child, timeout);
    Run {
        code: done.status.code(),
        took: done.took,
        stdout: done.stdout,
        stderr: done.stderr,
    }
}

/// `snowsim ARGS`, killed after 30 s.
fn snowsim_within_30_s(args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_snowsim"));
    command.args(args);
    finish(command, Duration::from_secs(30))
}

/// Copies of files taken before a run, compared after it.
struct Unchanged(Vec<(PathBuf, Vec<u8>)>);

impl Unchanged {
    fn of(paths: &[&Path]) -> Self {
        Self(
            paths
                .iter()
                .map(|p| (p.to_path_buf(), std::fs::read(p).unwrap()))
                .collect(),
        )
    }

    fn check(&self) {
        for (path, bytes) in &self.0 {
            assert!(
                std::fs::read(path).unwrap() == *bytes,
                "{} changed",
                path.display()
            );
        }
    }
}

/// A sweep of two completed rows and `bad` as the third, after a failed row whose error spans
/// two lines: `bad` is row 4 and starts on line 6.
fn sweep_with(dir: &Path, name: &str, bad: Row) -> PathBuf {
    let mut failed = failed_row();
    failed.error = "CL_OUT_OF_RESOURCES\nat clEnqueueNDRangeKernel".into();
    let rows = [failed, ok_row(0, 0, 1 << 16), ok_row(0, 0, 1 << 18), bad];
    let path = dir.join(name);
    write_rows(&path, &rows).unwrap();
    path
}

/// Runs `plot` on `csv`, expecting status 1 within 30 s with nothing written and the CSV as it
/// was; returns the message.
fn refused(dir: &Path, csv: &Path) -> String {
    let before = Unchanged::of(&[csv]);
    let out = dir.join("out");
    let run = snowsim_within_30_s(&["plot", s(csv), "--out", s(&out)]);
    let err = run.error().to_string();
    assert!(!out.exists(), "nothing written on error: {err}");
    before.check();
    err
}

#[test]
fn axis_ends_beyond_f64_are_refused_or_drawn_and_never_hang() {
    let dir = temp_dir("axis-ends");
    let base = ok_row(0, 0, 1 << 20);
    // FPS + std and the stacked stage times overflow: refused, naming the columns.
    let cases = [
        (
            Row {
                fps_mean: Some(1.7e308),
                fps_std: Some(1e308),
                ..base.clone()
            },
            "columns fps_mean + fps_std: 1.7e308 + 1e308 is beyond the largest f64",
        ),
        (
            Row {
                ms_wind: Some(1.7e308),
                ms_snow: Some(1.7e308),
                ..base.clone()
            },
            "columns ms_wind + ms_snow + ms_sort + ms_smoothing + ms_splat + ms_transfer + \
             ms_draw: the sum is beyond the largest f64",
        ),
        (
            Row {
                fps_mean: Some(f64::INFINITY),
                ..base.clone()
            },
            "column fps_mean: inf is not a finite number",
        ),
    ];
    for (i, (row, message)) in cases.into_iter().enumerate() {
        let csv = sweep_with(&dir, &format!("overflow{i}.csv"), row);
        let err = refused(&dir, &csv);
        let at = format!("overflow{i}.csv, line 6, {message}");
        assert!(err.contains(&at), "`{at}` not in: {err}");
    }

    // The largest FPS f64 holds, with the stages near the largest sum: the axes' ends would
    // overflow with their margins, and are drawn at f64::MAX instead.
    let near_max = Row {
        fps_mean: Some(f64::MAX),
        fps_std: Some(0.0),
        ms_wind: Some(f64::MAX / 2.0),
        ms_snow: Some(f64::MAX / 2.0),
        ms_sort: None,
        ms_smoothing: None,
        ms_splat: None,
        ms_draw: None,
        ..base.clone()
    };
    let csv = sweep_with(&dir, "near-max.csv", near_max);
    let before = Unchanged::of(&[&csv]);
    let out = dir.join("near-max");
    let run = snowsim_within_30_s(&["plot", s(&csv), "--out", s(&out)]);
    run.success();
    before.check();
    let fps = read_json(&out.join("fps_particles.json"));
    let ys: Vec<f64> = series_by_label(&fps, DEVICES[0].0)["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["y"].as_f64().unwrap())
        .collect();
    assert_eq!(ys.len(), 3);
    assert!(same(ys.last().copied(), Some(f64::MAX)), "{ys:?}");
    assert_eq!(png_size(&out.join("fps_particles.png")), (1280, 800));
    assert_eq!(png_size(&out.join("stages.png")).0, 1280);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn negative_and_non_finite_numbers_are_refused_naming_file_line_and_column() {
    let dir = temp_dir("numbers");
    let base = ok_row(0, 0, 1 << 20);
    let cases = [
        (
            Row {
                fps_mean: Some(f64::NAN),
                ..base.clone()
            },
            "column fps_mean: NaN is not a number",
        ),
        (
            Row {
                fps_mean: Some(-5.0),
                ..base.clone()
            },
            "column fps_mean: -5 is negative",
        ),
        (
            Row {
                fps_std: Some(-0.5),
                ..base.clone()
            },
            "column fps_std: -0.5 is negative",
        ),
        (
            Row {
                ms_splat: Some(-2.25),
                ..base.clone()
            },
            "column ms_splat: -2.25 is negative",
        ),
        (
            Row {
                ms_frame: Some(f64::NEG_INFINITY),
                ..base.clone()
            },
            "column ms_frame: -inf is not a finite number",
        ),
    ];
    for (i, (row, message)) in cases.into_iter().enumerate() {
        let csv = sweep_with(&dir, &format!("number{i}.csv"), row);
        let err = refused(&dir, &csv);
        let at = format!("number{i}.csv, line 6, {message}");
        assert!(err.contains(&at), "`{at}` not in: {err}");
    }
    // A number too large for f64 reads as infinity, and is refused as such.
    let csv = sweep_with(
        &dir,
        "huge.csv",
        Row {
            ms_draw: Some(12345.5),
            ..base.clone()
        },
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.matches(",12345.5").count(), 1);
    std::fs::write(&csv, text.replace(",12345.5", ",1e400")).unwrap();
    let err = refused(&dir, &csv);
    assert!(
        err.contains("huge.csv, line 6, column ms_draw: inf is not a finite number"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
}

#[test]
fn inputs_that_are_not_regular_files_or_too_large_are_refused_at_once() {
    let dir = temp_dir("special");
    let good = write_sweep(&dir).remove(0);
    let out = dir.join("out");
    let fifo = dir.join("fifo.csv");
    mkfifo(&fifo);
    let folder = dir.join("folder.csv");
    std::fs::create_dir(&folder).unwrap();
    let big = dir.join("big.csv");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(65_000_000)
        .unwrap();
    let half = dir.join("half.csv");
    std::fs::File::create(&half)
        .unwrap()
        .set_len(40_000_000)
        .unwrap();
    let before = Unchanged::of(&[&good, &big, &half]);

    let cases: [(Vec<&Path>, String); 5] = [
        (
            vec![&fifo],
            format!("{} is a FIFO (named pipe), not a regular file", s(&fifo)),
        ),
        (
            vec![Path::new("/dev/zero")],
            "/dev/zero is a character device, not a regular file".into(),
        ),
        (
            vec![&good, &folder],
            format!("{} is a directory, not a regular file", s(&folder)),
        ),
        (
            vec![&big],
            format!("{} is 65 MB; at most 64 MB is read", s(&big)),
        ),
        (
            vec![&half, &half],
            format!(
                "{} is 40 MB, more than the 24 MB left of the 64 MB of CSV that snowsim plot \
                 reads in all (the files before it hold 40 MB)",
                s(&half)
            ),
        ),
    ];
    for (files, message) in cases {
        let mut args = vec!["plot"];
        args.extend(files.iter().map(|f| s(f)));
        args.extend(["--out", s(&out)]);
        let run = snowsim_within_30_s(&args);
        let err = run.error();
        assert!(err.contains(&message), "`{message}` not in: {err}");
        assert!(run.took < Duration::from_secs(10), "{:?}: {err}", run.took);
        assert!(!out.exists());
    }

    // A FIFO in --out named like a figure is judged without being opened.
    std::fs::create_dir(&out).unwrap();
    mkfifo(&out.join("stages.png"));
    let run = snowsim_within_30_s(&["plot", s(&good), "--out", s(&out)]);
    let err = run.error();
    assert!(
        err.contains("stages.png: a file is there that is not a PNG image"),
        "{err}"
    );
    let run = snowsim_within_30_s(&["plot", s(&good), "--out", s(&out), "--force"]);
    let err = run.error();
    assert!(err.contains("stages.png: cannot write"), "{err}");
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["stages.png"], "only the FIFO is there");
    before.check();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_100000_row_sweep_is_drawn_under_an_8_gb_address_space_limit() {
    let dir = temp_dir("large");
    let rows: Vec<Row> = (0..100_000u64)
        .map(|i| ok_row((i % 2) as usize, ((i / 2) % 2) as usize, 1024 + i))
        .collect();
    let csv = dir.join("large.csv");
    write_rows(&csv, &rows).unwrap();
    let before = Unchanged::of(&[&csv]);
    let out = dir.join("out");
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -v 8000000; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_snowsim"))
        .args(["plot", s(&csv), "--out", s(&out)]);
    let run = finish(command, Duration::from_secs(300));
    let stdout = run.success();
    assert!(stdout.contains("100000 rows from 1 file(s)"), "{stdout}");
    assert!(
        stdout.contains(
            "note: 200 of 100000 bars drawn: stages.png draws at most 200; the rest are listed \
             in stages.json's skipped"
        ),
        "{stdout}"
    );
    before.check();

    let max = snowsim::plot::figure::MAX_BARS;
    assert_eq!(max, 200);
    assert_eq!(
        png_size(&out.join("stages.png")),
        (1280, snowsim::plot::draw::stage_height(max))
    );
    let stages = read_json(&out.join("stages.json"));
    assert_eq!(stages["bar_limit"], 200);
    assert_eq!(stages["bars_total"], 100_000);
    let series = stages["series"].as_array().unwrap();
    let drawn: usize = series
        .iter()
        .map(|s| s["bars"].as_array().unwrap().len())
        .sum();
    assert_eq!(drawn, 200);
    // The first series (device 0, sort full: rows 1, 5, 9, …) is drawn whole first.
    assert_eq!(series[0]["bars"][0]["x"], 1024);
    let skipped = stages["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 100_000 - 200);
    assert!(
        skipped
            .iter()
            .all(|s| s["reason"] == "not drawn: stages.png draws the first 200 bars only")
    );
    let fps = read_json(&out.join("fps_particles.json"));
    let points: usize = fps["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["points"].as_array().unwrap().len())
        .sum();
    assert_eq!(points, 100_000);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn completed_rows_without_an_fps_are_named_as_such() {
    let dir = temp_dir("no-fps");
    let rows: Vec<Row> = PARTICLES
        .iter()
        .map(|&p| Row {
            fps_mean: None,
            // The CPU: no comma in its name, so the column can be cut out below.
            ..ok_row(1, 0, p)
        })
        .chain([failed_row()])
        .collect();
    let empty = dir.join("empty-fps.csv");
    write_rows(&empty, &rows).unwrap();
    let err = refused(&dir, &empty);
    assert!(
        err.contains(
            "no row to plot: 3 of the 4 rows have status ok but no FPS value (fps_mean is \
             empty in each); statuses: ok: 3, error: 1"
        ),
        "{err}"
    );

    // The same without the fps_mean column.
    let text = std::fs::read_to_string(&empty).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|c| *c == "fps_mean").unwrap();
    let without: Vec<String> = text
        .lines()
        .map(|line| {
            let mut fields: Vec<&str> = line.split(',').collect();
            fields.remove(column);
            fields.join(",")
        })
        .collect();
    let no_column = dir.join("no-column.csv");
    std::fs::write(&no_column, without.join("\n") + "\n").unwrap();
    let err = refused(&dir, &no_column);
    assert!(
        err.contains(&format!(
            "3 of the 4 rows have status ok but no FPS value ({} has no fps_mean column)",
            s(&no_column)
        )),
        "{err}"
    );
    // Both files together: one without the column, one with it empty.
    let before = Unchanged::of(&[&empty, &no_column]);
    let out = dir.join("out");
    let run = snowsim_within_30_s(&["plot", s(&no_column), s(&empty), "--out", s(&out)]);
    let err = run.error();
    assert!(
        err.contains(&format!(
            "6 of the 8 rows have status ok but no FPS value ({} has no fps_mean column; \
             fps_mean is empty in the others); statuses: ok: 6, error: 2",
            s(&no_column)
        )),
        "{err}"
    );
    assert!(!out.exists());
    before.check();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_error_while_writing_leaves_every_figure_as_it_was() {
    let dir = temp_dir("pair");
    let files = write_sweep(&dir);
    let out = dir.join("out");
    snowsim_within_30_s(&["plot", s(&files[0]), "--out", s(&out)]).success();
    let names = [
        "fps_particles.png",
        "fps_particles.json",
        "stages.png",
        "stages.json",
    ];
    let old: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(out.join(n)).unwrap())
        .collect();

    // The second run draws both files' rows, but stages.png cannot be written: a directory
    // stands there (allowed past the up-front check by --force).
    std::fs::remove_file(out.join("stages.png")).unwrap();
    std::fs::create_dir(out.join("stages.png")).unwrap();
    let before = Unchanged::of(&[&files[0], &files[1]]);
    let run = snowsim_within_30_s(&[
        "plot",
        s(&files[0]),
        s(&files[1]),
        "--out",
        s(&out),
        "--force",
    ]);
    let err = run.error();
    assert!(err.contains("stages.png: cannot write"), "{err}");
    before.check();
    for (name, bytes) in names.iter().zip(&old) {
        if *name != "stages.png" {
            assert!(
                std::fs::read(out.join(name)).unwrap() == *bytes,
                "{name} was replaced although the run failed"
            );
        }
    }
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "devices.json",
            "devices.png",
            "fps_particles.json",
            "fps_particles.png",
            "stages.json",
            "stages.png",
            "summary.md"
        ],
        "no temporary is left"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A run of `ok_row(0, 0, particles)`'s configuration on several devices of one machine: the
/// wind on device `wind` and/or the parcels split over `snow` (indices), at `fps`.
fn several_devices(particles: u64, snow: &[usize], wind: Option<usize>, fps: f64) -> Row {
    let name = DEVICES[0].0;
    let mut row = ok_row(0, 0, particles);
    row.device = vec![name; snow.len()].join(";");
    row.device_index = snow.to_vec();
    if snow.len() > 1 {
        let each = particles / snow.len() as u64;
        row.snow_shares = vec![each.to_string(); snow.len()].join(";");
    }
    if let Some(w) = wind {
        row.wind_device = format!("{w} {name}");
        row.wind_device_index = Some(w);
    }
    row.render = false;
    row.fps_mean = Some(fps);
    row.fps_std = Some(fps / 20.0);
    row.ms_frame = Some(1000.0 / fps);
    row
}

#[test]
fn several_devices_get_a_speed_up_plot_a_bar_each_and_a_summary() {
    let dir = temp_dir("speedup");
    let path = dir.join("two-gpus.csv");
    // Device 0 alone at two counts, device 1 alone at one (the same name: kept apart), the
    // wind beside on device 1, the parcels split over 0 and 1 (one count failed).
    let mut rows = Vec::new();
    for (p, fps) in [(1u64 << 16, 200.0), (1 << 18, 100.0)] {
        rows.push(several_devices(p, &[0], None, fps));
        rows.push(several_devices(p, &[0], Some(1), fps * 1.5));
        rows.push(several_devices(p, &[0, 1], None, fps * 1.8));
    }
    rows.push(several_devices(1 << 18, &[1], None, 90.0));
    let mut failed = several_devices(1 << 20, &[0, 1], None, 1.0);
    (
        failed.status,
        failed.fps_mean,
        failed.fps_std,
        failed.ms_frame,
    ) = ("timeout".into(), None, None, None);
    rows.push(failed);
    write_rows(&path, &rows).unwrap();
    let out = dir.join("plots");
    let o = snowsim(&["plot", s(&path), "--out", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        said.contains("speedup.png") && said.contains("summary.md"),
        "{said}"
    );

    // Speed-up: each run on several devices over device 0 alone at its particle count.
    assert_eq!(png_size(&out.join("speedup.png")), (1280, 800));
    let speedup = read_json(&out.join("speedup.json"));
    assert_eq!(speedup["y"], "speedup");
    let mut ratios: Vec<(String, u64, f64)> = Vec::new();
    for series in speedup["series"].as_array().unwrap() {
        for p in series["points"].as_array().unwrap() {
            ratios.push((
                series["label"].as_str().unwrap().to_string(),
                p["x"].as_u64().unwrap(),
                p["y"].as_f64().unwrap(),
            ));
        }
    }
    assert_eq!(ratios.len(), 4, "{speedup:#}");
    for (label, _, ratio) in &ratios {
        let expected = if label.contains("wind_device=1") {
            1.5
        } else {
            1.8
        };
        assert!((ratio - expected).abs() < 1e-9, "{label}: {ratio}");
    }
    let failed: usize = speedup["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["failed"].as_array().unwrap().len())
        .sum();
    assert_eq!(failed, 1, "the timed-out split is drawn as a failure");

    // One bar per device and setup: its FPS at the largest count that completed.
    let devices = read_json(&out.join("devices.json"));
    let bars: Vec<(String, u64, f64)> = devices["bars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["label"].as_str().unwrap().to_string(),
                b["particles"].as_u64().unwrap(),
                b["fps"].as_f64().unwrap(),
            )
        })
        .collect();
    let name = DEVICES[0].0;
    assert_eq!(bars.len(), 4, "{bars:?}");
    assert_eq!(bars[0].0, format!("{name} [0] (wind_device=same)"));
    assert_eq!((bars[0].1, bars[0].2), (1 << 18, 100.0));
    assert!(bars[1].0.contains("wind_device=1"), "{bars:?}");
    assert_eq!(
        bars[2].0,
        format!("{name} ×2 [0+1] (wind_device=same, split=0.50+0.50)")
    );
    assert_eq!((bars[2].1, bars[2].2), (1 << 18, 180.0));
    assert_eq!(bars[3].0, format!("{name} [1] (wind_device=same)"));
    let (w, h) = png_size(&out.join("devices.png"));
    assert_eq!((w, h), (1280, snowsim::plot::draw::device_height(4)));

    // The summary: the same headline rows as a markdown table.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.starts_with("# Sweep summary"), "{md}");
    assert!(md.contains(&format!("## {}", path.display())), "{md}");
    let lines: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with(&format!("| {name}")))
        .collect();
    assert_eq!(lines.len(), 4, "{md}");
    assert!(
        lines[2]
            .contains("×2 [0+1] | snow 0+1, shares 131072+131072 | 262144 | off | 180.0 ± 9.0 |"),
        "{md}"
    );
    assert!(
        md.contains("| one device | 262144 | off | 100.0 ± 5.0 | 10.000 |"),
        "{md}"
    );

    // Nothing on several devices: no speed-up plot, and the report says why.
    let alone = dir.join("alone.csv");
    write_rows(&alone, &rows[..1]).unwrap();
    let out = dir.join("alone");
    let o = snowsim(&["plot", s(&alone), "--out", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        said.contains("not drawn: speedup: no run on several devices"),
        "{said}"
    );
    assert!(!out.join("speedup.png").exists() && out.join("devices.png").exists());
    std::fs::remove_dir_all(&dir).ok();
}
