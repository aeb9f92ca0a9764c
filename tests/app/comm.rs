//! `snowsim comm check` as a user runs it: over threads (`--local N`), and under `mpirun`
//! with the `mpi` feature, where the results must be the in-process backend's and a rank
//! that dies must end the run, not hang it.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{Capability, skip, snowsim, text, wait_within};

/// `snowsim`, run directly or under `mpirun -n N` (oversubscribed, as root where the tests
/// run so), its output captured: the arguments follow.
fn launched(mpi_ranks: Option<usize>) -> Command {
    let bin = env!("CARGO_BIN_EXE_snowsim");
    let mut command = match mpi_ranks {
        Some(n) => {
            let mut c = Command::new("mpirun");
            c.args(["-n", &n.to_string(), "--oversubscribe", bin]);
            c
        }
        None => Command::new(bin),
    };
    command
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Open MPI's shared-memory single copy needs ptrace rights containers may not give.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// The report of `snowsim comm check ARGS --json`, run directly or under `mpirun -n N`.
fn check(mpi_ranks: Option<usize>, args: &[&str]) -> Value {
    let mut command = launched(mpi_ranks);
    command
        .args(["comm", "check", "--json", "--timeout", "20"])
        .args(args);
    let done = wait_within(command.spawn().expect("start"), Duration::from_secs(120));
    assert!(done.status.success(), "{}\n{}", done.stdout, done.stderr);
    serde_json::from_str(&done.stdout).unwrap_or_else(|e| panic!("{e}: {}", done.stdout))
}

/// Whether this build can run under `mpirun` (logs the skip when not).
fn mpi_available(test: &str) -> bool {
    if !cfg!(feature = "mpi") {
        skip(
            Capability::Mpi,
            format!("{test}: built without the `mpi` feature"),
        );
        return false;
    }
    let found = Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        skip(Capability::Mpi, format!("{test}: no mpirun on the PATH"));
    }
    found
}

/// The report without what differs between runs and backends: the link's timings and the
/// backend's name.
fn results(mut report: Value) -> Value {
    let object = report.as_object_mut().expect("an object");
    object.remove("link");
    object.remove("backend");
    report
}

#[test]
fn every_operation_passes_over_threads() {
    for n in ["1", "2", "3"] {
        let report = check(None, &["--local", n]);
        assert_eq!(report["failed"], Value::Array(vec![]), "{report}");
        assert_eq!(report["size"], n.parse::<u64>().unwrap());
        assert!(report["passed"].as_array().unwrap().len() >= 6, "{report}");
        assert_eq!(report["link"].is_object(), n != "1", "{report}");
    }
}

#[test]
fn mpi_gives_what_the_in_process_backend_gives() {
    if !mpi_available("mpi_gives_what_the_in_process_backend_gives") {
        return;
    }
    for n in [2, 3] {
        let mpi = check(Some(n), &[]);
        assert_eq!(mpi["backend"], "mpi", "{mpi}");
        let local = check(None, &["--local", &n.to_string()]);
        assert_eq!(results(mpi), results(local), "{n} ranks");
    }
}

#[test]
fn a_rank_that_dies_ends_the_run_with_an_error_not_a_hang() {
    // In one process: the rank that stops is gone for the others at once.
    let o = snowsim(&["comm", "check", "--local", "3", "--die-rank", "2"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("rank 2 is gone"),
        "{}",
        text(&o.stderr)
    );
    if !mpi_available("a_rank_that_dies_ends_the_run_with_an_error_not_a_hang") {
        return;
    }
    for dead in ["0", "1"] {
        let mut command = launched(Some(3));
        command.args(["comm", "check", "--timeout", "5", "--die-rank", dead]);
        let done = wait_within(command.spawn().expect("start"), Duration::from_secs(60));
        assert!(!done.status.success(), "rank {dead} died: {}", done.stderr);
        assert!(done.took < Duration::from_secs(30), "{:?}", done.took);
    }
}

/// `snowsim ARGS` as an MPI launcher starts rank 1 of 2 (its environment only): it must fail,
/// saying `with_mpi` (or, in a build without MPI, that it has none).
fn refused_as_rank_1_of_2(args: &[&str], with_mpi: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(args)
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .env("OMPI_COMM_WORLD_RANK", "1")
        .output()
        .unwrap();
    assert!(!o.status.success(), "{args:?}");
    let err = text(&o.stderr);
    let why = match cfg!(feature = "mpi") {
        true => with_mpi,
        false => "built without MPI",
    };
    assert!(err.contains(why), "{args:?}: {err}");
}

#[test]
fn a_command_started_on_several_ranks_stops_before_writing_anything() {
    // `snowsim run` drawn refuses before it builds anything, naming why, and its screenshot is
    // never written; a command that does not run over ranks at all says so.
    let dir = std::env::temp_dir().join(format!("snowsim-comm-ranks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shot = dir.join("shot.png");
    let shot_arg = shot.to_str().unwrap();
    refused_as_rank_1_of_2(
        &[
            "run",
            "--headless",
            "--frames",
            "1",
            "--screenshot",
            shot_arg,
        ],
        "rank 1 of 2: over ranks nothing is drawn yet: give --render off",
    );
    assert!(!shot.exists());
    refused_as_rank_1_of_2(
        &["devices", "--json"],
        "rank 1 of 2: this command does not run over several ranks yet",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `mpirun -n 2` and `-n 3 snowsim run --render off` (oversubscribed: CI has two cores):
/// rank 0 runs the wind, the cover, its drift and the checks, the other ranks step shares of
/// the parcels on their own contexts (here all on the one PoCL device). On a strong wind whose
/// snow drifts, is lifted into suspension and raises the wind's ground every 0.2 s, the state
/// files (the domain's and the cover's) are the one rank's byte for byte, and so are the
/// report's counts and volumes; `--check` holds across the ranks every 10 frames. Three ranks
/// write the domain's state as a `.pvtu` of three pieces, which put together by their global
/// ids are the one rank's state.
#[test]
fn a_run_over_ranks_gives_the_state_of_one_rank() {
    if !mpi_available("a_run_over_ranks_gives_the_state_of_one_rank") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("snowsim-comm-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("drift.toml");
    std::fs::write(
        &scene,
        crate::cli::flat_scene(true, "ground_refresh = 0.2\nground_refresh_lag = 3"),
    )
    .unwrap();
    let run = |ranks: Option<usize>, name: &str| {
        // Three ranks write their state in pieces.
        let extension = if ranks == Some(3) { "pvtu" } else { "vtu" };
        let vtu = dir.join(format!("{name}.{extension}"));
        let mut command = launched(ranks);
        command
            .args(["run", "--scene"])
            .arg(&scene)
            .args(["--render", "off", "--frames", "30", "--particles", "5000"])
            .args([
                "--simulate",
                "wind,snow",
                "--wind-every",
                "1",
                "--device",
                "0",
            ])
            .args(["--check", "--check-every", "10", "--json", "--vtu"])
            .arg(&vtu);
        let done = wait_within(command.spawn().expect("start"), Duration::from_secs(300));
        assert!(done.status.success(), "{name}: {}", done.stderr);
        let report: Value = serde_json::from_str(&done.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", done.stdout));
        let state = std::fs::read(&vtu).unwrap();
        let cover = std::fs::read(dir.join(format!("{name}.cover.vtu"))).unwrap();
        (report, state, cover)
    };
    // The refreshes' wall times differ between runs; the falling snow's density is a blend
    // of the ranks' in f32, and the traffic and waits are the split's own: compared apart.
    let exact = |r: &Value| {
        let mut snow = crate::cli::untimed(r);
        let fields = snow.as_object_mut().unwrap();
        for key in [
            "flake_density_at_camera",
            "split_traffic",
            "split_waits",
            "split_device_ms",
        ] {
            fields.remove(key);
        }
        snow
    };
    let (one, one_state, one_cover) = run(None, "one");
    let snow = &one["snow"];
    assert!(snow["landed"].as_u64().unwrap() > 20, "{snow}");
    assert!(snow["drift"]["eroded_m3"].as_f64().unwrap() > 0.0, "{snow}");
    assert!(
        snow["drift"]["suspended_m3"].as_f64().unwrap() > 0.0,
        "{snow}"
    );
    assert!(
        snow["ground_refresh"]["refreshes"].as_u64().unwrap() > 0,
        "{snow}"
    );
    for n in [2, 3] {
        let name = format!("ranks{n}");
        let (report, state, cover) = run(Some(n), &name);
        // The refreshes' count and what they moved are in it.
        assert_eq!(exact(&one), exact(&report), "{name}");
        if n == 3 {
            // In three pieces, one per rank, that put back together by their global ids are
            // the one rank's state, value for value and cell for cell.
            let pieces = pieces_of(&state, &dir);
            assert_eq!(pieces.len(), 3, "{name}");
            for piece in &pieces {
                let cells = &crate::common::vtu::parse(piece).piece["NumberOfCells"];
                assert_ne!(cells, "0", "{name}: a piece without cells");
            }
            assert_eq!(
                Whole::of_pieces(&pieces),
                Whole::of(&one_state),
                "{name}: the pieces put together differ from the one rank's state"
            );
        } else {
            assert!(
                one_state == state,
                "{name}: the domain's state files differ"
            );
        }
        assert!(one_cover == cover, "{name}: the cover's state files differ");
        let shares = report["snow_devices"].as_array().unwrap();
        assert_eq!(shares.len(), n, "{shares:?}");
        let parcels: u64 = shares
            .iter()
            .map(|s| s["particles"].as_u64().unwrap())
            .sum();
        assert_eq!(parcels, 5000, "{shares:?}");
        assert!(
            report["snow"]["split_traffic"]["landings"]
                .as_u64()
                .unwrap()
                > 0,
            "{report}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without MPI a `.pvtu` state is one piece, the whole state with its global ids; the cover
/// goes beside it; a piece an earlier write of more pieces left is removed. A file where the pieces' directory would be, or a piece's name taken by a
/// file that is not VTK's, stops the run before it starts, the file untouched.
#[test]
fn one_process_writes_its_pvtu_as_one_piece_and_clobbers_nothing() {
    let dir = std::env::temp_dir().join(format!("snowsim-pvtu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("drift.toml");
    std::fs::write(&scene, crate::cli::flat_scene(true, "")).unwrap();
    let run = |out: &str| {
        snowsim(&[
            "run",
            "--scene",
            scene.to_str().unwrap(),
            "--render",
            "off",
            "--frames",
            "10",
            "--particles",
            "2000",
            "--device",
            "0",
            "--vtu",
            dir.join(out).to_str().unwrap(),
        ])
    };
    let whole = run("whole.vtu");
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    // A piece left by an earlier write of more pieces: removed by this one.
    std::fs::create_dir_all(dir.join("state")).unwrap();
    std::fs::copy(dir.join("whole.vtu"), dir.join("state/piece_00001.vtu")).unwrap();
    let pieced = run("state.pvtu");
    assert!(pieced.status.success(), "{}", text(&pieced.stderr));
    let pvtu = std::fs::read(dir.join("state.pvtu")).unwrap();
    let pieces = pieces_of(&pvtu, &dir);
    assert_eq!(pieces.len(), 1);
    assert!(!dir.join("state/piece_00001.vtu").exists());
    assert_eq!(
        Whole::of_pieces(&pieces),
        Whole::of(&std::fs::read(dir.join("whole.vtu")).unwrap())
    );
    assert_eq!(
        std::fs::read(dir.join("state.cover.vtu")).unwrap(),
        std::fs::read(dir.join("whole.cover.vtu")).unwrap()
    );
    let refused = |out: &str, says: &str| {
        let done = run(out);
        assert!(!done.status.success(), "{out} was accepted");
        let stderr = text(&done.stderr);
        assert!(stderr.contains(says), "{out}: {stderr}");
    };
    std::fs::write(dir.join("notes"), "mine").unwrap();
    refused("notes.pvtu", "notes: it is a file, not a directory");
    std::fs::create_dir_all(dir.join("taken")).unwrap();
    std::fs::write(dir.join("taken/piece_00000.vtu"), "mine").unwrap();
    refused(
        "taken.pvtu",
        "piece_00000.vtu: a file is there that is not a VTK",
    );
    assert_eq!(std::fs::read_to_string(dir.join("notes")).unwrap(), "mine");
    assert_eq!(
        std::fs::read_to_string(dir.join("taken/piece_00000.vtu")).unwrap(),
        "mine"
    );
    for refused in [
        "notes.pvtu",
        "notes.cover.vtu",
        "taken.pvtu",
        "taken.cover.vtu",
    ] {
        assert!(!dir.join(refused).exists(), "{refused} was written");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The pieces a `.pvtu` names (its `Piece Source` entries, relative to `dir`), read.
fn pieces_of(pvtu: &[u8], dir: &std::path::Path) -> Vec<Vec<u8>> {
    let text = std::str::from_utf8(pvtu).unwrap();
    assert!(
        text.contains("<VTKFile type=\"PUnstructuredGrid\""),
        "{text}"
    );
    text.match_indices("<Piece ")
        .map(|(i, _)| {
            let source = &crate::common::vtu::attributes(&text[i + 1..])["Source"];
            std::fs::read(dir.join(source)).unwrap_or_else(|e| panic!("{source}: {e}"))
        })
        .collect()
}

/// A state as a set: each point's coordinates and point data (bits, by array name), and each
/// cell's type, nodes (in the whole mesh's numbering) and reference, sorted.
#[derive(Debug, PartialEq)]
struct Whole {
    points: Vec<Option<Vec<u64>>>,
    cells: Vec<(u8, Vec<i64>, i32)>,
}

/// The point arrays a state holds besides `global_id`.
const STATE_ARRAYS: [(&str, usize); 4] = [
    ("velocity", 3),
    ("pressure", 1),
    ("snow_depth", 1),
    ("first_level_height", 1),
];

impl Whole {
    /// A whole `.vtu`.
    fn of(vtu: &[u8]) -> Self {
        let parsed = crate::common::vtu::parse(vtu);
        let n: usize = parsed.piece["NumberOfPoints"].parse().unwrap();
        let mut whole = Self {
            points: vec![None; n],
            cells: Vec::new(),
        };
        whole.add(&parsed, &(0..n as i64).collect::<Vec<_>>());
        whole.cells.sort();
        whole
    }

    /// Pieces put back together by their `global_id`s; a point given twice must agree.
    fn of_pieces(pieces: &[Vec<u8>]) -> Self {
        let parsed: Vec<_> = pieces
            .iter()
            .map(|p| crate::common::vtu::parse(p))
            .collect();
        let ids: Vec<Vec<i64>> = parsed
            .iter()
            .map(|p| {
                p.i32s("PointData", "global_id")
                    .into_iter()
                    .map(i64::from)
                    .collect()
            })
            .collect();
        let n = ids.iter().flatten().max().map_or(0, |&m| m as usize + 1);
        let mut whole = Self {
            points: vec![None; n],
            cells: Vec::new(),
        };
        for (p, ids) in parsed.iter().zip(&ids) {
            whole.add(p, ids);
        }
        whole.cells.sort();
        whole
    }

    /// Adds a file's points (as the points `global` of the whole) and cells.
    fn add(&mut self, parsed: &crate::common::vtu::Parsed, global: &[i64]) {
        let coordinates = parsed.f64s("Points", "Points");
        let arrays: Vec<Vec<f32>> = STATE_ARRAYS
            .iter()
            .map(|(name, _)| parsed.f32s("PointData", name))
            .collect();
        for (j, &g) in global.iter().enumerate() {
            let mut bits: Vec<u64> = coordinates[3 * j..3 * j + 3]
                .iter()
                .map(|x| x.to_bits())
                .collect();
            for ((_, k), values) in STATE_ARRAYS.iter().zip(&arrays) {
                bits.extend(
                    values[k * j..k * j + k]
                        .iter()
                        .map(|x| u64::from(x.to_bits())),
                );
            }
            let slot = &mut self.points[g as usize];
            if let Some(before) = slot {
                assert_eq!(before, &bits, "point {g} differs between pieces");
            }
            *slot = Some(bits);
        }
        let connectivity = parsed.i64s("Cells", "connectivity");
        let offsets = parsed.i64s("Cells", "offsets");
        let types = parsed.bytes(parsed.array("Cells", "types")).to_vec();
        let refs = parsed.i32s("CellData", "ref");
        let mut start = 0usize;
        for (c, &end) in offsets.iter().enumerate() {
            let nodes = connectivity[start..end as usize]
                .iter()
                .map(|&n| global[n as usize])
                .collect();
            self.cells.push((types[c], nodes, refs[c]));
            start = end as usize;
        }
    }
}

#[test]
fn bad_rank_counts_and_timeouts_are_refused_naming_the_value() {
    for (args, says) in [
        (&["--local", "0"][..], "--local 0"),
        (&["--local", "100000"][..], "--local 100000: at most 256"),
        (&["--timeout", "0"][..], "--timeout 0"),
        (&["--timeout", "1e300"][..], "--timeout 1e300"),
        (&["--timeout", "NaN"][..], "--timeout NaN"),
        (&["--timeout", "-1"][..], "--timeout -1"),
    ] {
        let o = snowsim(&[&["comm", "check"][..], args].concat());
        assert!(!o.status.success(), "{args:?}");
        let err = text(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `snowsim bench pressure` on PoCL: one rank on the whole system and three ranks on slabs
/// run the same iterations from the same start, so they end at the same residual (to the
/// rounding of sums added in another order); each rank owns a third of the vertices and holds
/// a halo; a bad device list is refused naming it.
#[test]
fn bench_pressure_runs_the_same_solve_on_one_rank_and_three() {
    let out = snowsim(&[
        "bench",
        "pressure",
        "--devices",
        "pocl,pocl,pocl",
        "--tets",
        "2^14",
        "--iterations",
        "15",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON rows");
    assert_eq!(rows.len(), 2);
    let (one, three) = (&rows[0], &rows[1]);
    assert_eq!(
        (one["ranks"].as_u64(), three["ranks"].as_u64()),
        (Some(1), Some(3))
    );
    let vertices = one["vertices"].as_u64().unwrap();
    let owned = three["owned_max"].as_u64().unwrap();
    assert!(
        owned * 3 >= vertices && owned * 3 <= vertices + 3,
        "{owned} of {vertices}"
    );
    assert!(three["halo_max"].as_u64().unwrap() > 0);
    let (a, b) = (
        one["relative_residual"].as_f64().unwrap(),
        three["relative_residual"].as_f64().unwrap(),
    );
    assert!(a > 0.0 && a < 1.0, "15 iterations reduce the residual: {a}");
    assert!((a - b).abs() <= 1e-6 * a, "one rank {a}, three ranks {b}");
    let out = snowsim(&[
        "bench",
        "pressure",
        "--devices",
        "no-such-device",
        "--tets",
        "2^14",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no-such-device"),
        "{}",
        text(&out.stderr)
    );
}
