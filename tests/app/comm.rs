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
/// report's counts and volumes; `--check` holds across the ranks every 10 frames.
#[test]
fn a_run_over_ranks_gives_the_state_of_one_rank() {
    if !mpi_available("a_run_over_ranks_gives_the_state_of_one_rank") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("snowsim-comm-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = dir.join("drift.toml");
    std::fs::write(&scene, crate::cli::flat_scene(true, "ground_refresh = 0.2")).unwrap();
    let run = |ranks: Option<usize>, name: &str| {
        let vtu = dir.join(format!("{name}.vtu"));
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
        let cover = std::fs::read(vtu.with_extension("cover.vtu")).unwrap();
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
        assert!(
            one_state == state,
            "{name}: the domain's state files differ"
        );
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
