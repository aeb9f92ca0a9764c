//! Issue 31, item 1: `snowsim mesh partition` as a user runs it. Its report is recounted
//! from what it wrote (the partition's solution file and the mesh), not from the library's
//! own numbers; its outputs follow the output rule; bad input is a clear error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use snowsim::meshio::{self, ElementKind, Mesh, Support};

use crate::common::{sample_path, snowsim, temp_dir};

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Standard output, after checking the exit code and that nothing panicked.
fn expect(out: &Output, code: i32) -> (String, String) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert_eq!(out.status.code(), Some(code), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The part of every vertex, read back from a partition's solution file.
fn owners(path: &Path, vertices: usize, parts: u64) -> Vec<u32> {
    let file = meshio::read_solution(path).unwrap();
    let block = file.solutions.block(Support::Vertices).unwrap();
    assert_eq!(block.values.len(), vertices);
    block
        .values
        .iter()
        .map(|&p| {
            assert!(
                p >= 0.0 && p.fract() == 0.0 && (p as u64) < parts,
                "part {p}"
            );
            p as u32
        })
        .collect()
}

/// The tetrahedron edges whose ends have different owners, counted from the elements.
fn edge_cut(mesh: &Mesh, owner: &[u32]) -> u64 {
    let mut edges = BTreeSet::new();
    for (t, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
        for &a in t {
            for &b in t {
                if a < b {
                    edges.insert((a, b));
                }
            }
        }
    }
    edges
        .iter()
        .filter(|(a, b)| owner[*a as usize] != owner[*b as usize])
        .count() as u64
}

/// Checks the report's totals and per-part vertex counts against the owners read back.
fn check_report(report: &serde_json::Value, mesh: &Mesh, owner: &[u32], parts: u64) {
    assert_eq!(report["parts"], parts);
    assert_eq!(report["vertices"], mesh.vertices.len() as u64);
    assert_eq!(report["edge_cut"], edge_cut(mesh, owner), "{report}");
    let per_part = report["per_part"].as_array().unwrap();
    assert_eq!(per_part.len() as u64, parts);
    let mut counts = vec![0u64; parts as usize];
    for &p in owner {
        counts[p as usize] += 1;
    }
    for (p, part) in per_part.iter().enumerate() {
        assert_eq!(part["owned"], counts[p], "part {p}");
        assert!(counts[p] > 0, "part {p} is empty");
    }
    let mean = mesh.vertices.len() as f64 / parts as f64;
    let balance = *counts.iter().max().unwrap() as f64 / mean;
    let reported = report["balance"].as_f64().unwrap();
    assert!((reported - balance).abs() < 1e-9, "{reported} vs {balance}");
    assert!(balance <= 1.1, "balance {balance}");
}

#[test]
fn partition_json_edge_cut_equals_a_recount_from_the_written_solution() {
    let dir = temp_dir("partition", "json");
    let input = dir.join("cube.meshb");
    std::fs::copy(sample_path("cube.meshb"), &input).unwrap();
    let out = dir.join("parts.solb");
    let (stdout, stderr) = expect(
        &snowsim(&[
            "mesh",
            "partition",
            s(&input),
            "--parts",
            "3",
            "--json",
            "-o",
            s(&out),
        ]),
        0,
    );
    // Progress went to standard error, the JSON alone to standard output.
    assert!(stderr.contains("METIS k-way"), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(report["unit"], "vertices");
    let mesh = meshio::read(&input).unwrap().mesh;
    let owner = owners(&out, mesh.vertices.len(), 3);
    check_report(&report, &mesh, &owner, 3);
    assert!(report["edge_cut"].as_u64().unwrap() > 0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_terrain_scene_is_partitioned_by_whole_columns() {
    let dir = temp_dir("partition", "scene");
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/flat.toml");
    let (sol, mesh_out) = (dir.join("parts.sol"), dir.join("air.meshb"));
    let run = snowsim(&[
        "mesh",
        "partition",
        "--scene",
        s(&scene),
        "--parts",
        "4",
        "--json",
        "-o",
        s(&sol),
        "--mesh-out",
        s(&mesh_out),
    ]);
    let (stdout, _) = expect(&run, 0);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(report["unit"], "columns");
    assert_eq!(report["columns"], 81);
    let mesh = meshio::read(&mesh_out).unwrap().mesh;
    let owner = owners(&sol, mesh.vertices.len(), 4);
    check_report(&report, &mesh, &owner, 4);
    // A column is the vertices above one ground point: one part each.
    let mut column_part: BTreeMap<(u64, u64), u32> = BTreeMap::new();
    for (v, p) in mesh.vertices.iter().zip(&owner) {
        let key = (v[0].to_bits(), v[1].to_bits());
        assert_eq!(*column_part.entry(key).or_insert(*p), *p, "column at {v:?}");
    }
    assert_eq!(column_part.len(), 81);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn partition_outputs_follow_the_output_rule() {
    let dir = temp_dir("partition", "outputs");
    let input = dir.join("cube.meshb");
    std::fs::copy(sample_path("cube.meshb"), &input).unwrap();
    let out: PathBuf = dir.join("parts.solb");
    let args = [
        "mesh",
        "partition",
        s(&input),
        "--parts",
        "2",
        "-o",
        s(&out),
    ];
    // A file there that this command did not write is left byte for byte without --force.
    let notes = b"a user's notes, not a solution file\n";
    std::fs::write(&out, notes).unwrap();
    let (_, err) = expect(&snowsim(&args), 1);
    assert!(
        err.contains("parts.solb") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), notes);
    // With --force it is replaced; run again, the partition it wrote is replaced by the
    // same bytes (METIS is deterministic), as every writer replaces its own kind of file.
    expect(&snowsim(&[&args[..], &["--force"]].concat()), 0);
    let first = std::fs::read(&out).unwrap();
    assert_ne!(first, notes);
    expect(&snowsim(&args), 0);
    assert_eq!(std::fs::read(&out).unwrap(), first);
    // The input is never an output, not even through a link, not even with --force.
    let link = dir.join("link.solb");
    std::fs::hard_link(&input, &link).unwrap();
    let before = std::fs::read(&input).unwrap();
    let (_, err) = expect(
        &snowsim(&[
            "mesh",
            "partition",
            s(&input),
            "--parts",
            "2",
            "-o",
            s(&link),
            "--force",
        ]),
        1,
    );
    assert!(err.contains("same file"), "{err}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_parts_and_bad_inputs_are_errors_naming_the_value() {
    let dir = temp_dir("partition", "errors");
    let cube = sample_path("cube.meshb");
    let out = dir.join("parts.solb");
    let hexahedra = sample_path("hexahedra.meshb");
    let cases: [(Vec<&str>, &[&str]); 5] = [
        (
            vec!["mesh", "partition", s(&cube), "--parts", "0", "-o", s(&out)],
            &["--parts 0", "at least one part"],
        ),
        (
            vec![
                "mesh",
                "partition",
                s(&cube),
                "--parts",
                "2301",
                "-o",
                s(&out),
            ],
            &["--parts 2301", "2300 vertices"],
        ),
        (
            vec!["mesh", "partition", "no/such.meshb", "--parts", "2"],
            &["no/such.meshb"],
        ),
        (
            vec!["mesh", "partition", s(&hexahedra), "--parts", "2"],
            &["hexahedra.meshb", "no tetrahedra and no triangles"],
        ),
        (
            vec![
                "mesh",
                "partition",
                s(&cube),
                "--parts",
                "2",
                "-o",
                "parts.vtu",
            ],
            &["parts.vtu", ".solb"],
        ),
    ];
    for (args, words) in &cases {
        let (_, err) = expect(&snowsim(args), 1);
        for word in *words {
            assert!(err.contains(word), "{args:?}: {err}");
        }
        assert!(!out.exists(), "{args:?} wrote {}", out.display());
    }
    // A negative count is clap's error (status 2), naming the value.
    let (_, err) = expect(
        &snowsim(&["mesh", "partition", s(&cube), "--parts", "-1"]),
        2,
    );
    assert!(err.contains("-1"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
