//! `snowsim plot` on sweep CSVs built here: the PNGs decode at their size and every series
//! JSON matches the rows written, computed independently of the plotting code; bad inputs and
//! outputs end with a clear error and status 1.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

    let other_version = dir.join("v2.csv");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines[3] = lines[3].replacen(&format!("{SCHEMA_VERSION},"), "2,", 1);
    std::fs::write(&other_version, lines.join("\n")).unwrap();
    let err = plot_error(&dir, &other_version);
    assert!(
        err.contains("v2.csv") && err.contains("line 4") && err.contains("schema version 2"),
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
        "JSON",
        "status 1",
    ] {
        assert!(help.contains(needle), "`{needle}` missing from:\n{help}");
    }
}
