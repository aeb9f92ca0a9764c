//! The layers hold (ARCHITECTURE.md): a room imports only rooms below it. Read from the
//! sources themselves, so a new import that climbs fails here before review: `wind` and `snow`
//! are libraries that know nothing of the simulation that couples them, the drawing or the
//! command line; `sim` draws nothing; the libraries under them know neither.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir` (or `dir` itself when it is a file).
pub(crate) fn sources(dir: &Path) -> Vec<PathBuf> {
    if dir.is_file() {
        return vec![dir.to_path_buf()];
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The `crate::room` paths that code (not comments) in `room` names, with file and line.
fn imports(room: &str) -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let dir = if src.join(room).is_dir() {
        src.join(room)
    } else {
        src.join(format!("{room}.rs"))
    };
    assert!(dir.exists(), "no room `{room}` under src/");
    let mut found = Vec::new();
    for file in sources(&dir) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(at) = rest.find("crate::") {
                let name: String = rest[at + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                found.push((name, format!("{}:{}", file.display(), n + 1)));
                rest = &rest[at + 7..];
            }
        }
    }
    found
}

/// Fails naming each import of `room` into one of `above`.
fn never_imports(room: &str, above: &[&str]) {
    let climbing: Vec<String> = imports(room)
        .into_iter()
        .filter(|(name, _)| above.contains(&name.as_str()))
        .map(|(name, at)| format!("{at}: crate::{name}"))
        .collect();
    assert!(
        climbing.is_empty(),
        "`{room}` imports rooms above it:\n{}",
        climbing.join("\n")
    );
}

/// What the application adds on top of the simulation.
const APPLICATION: &[&str] = &["app", "cli", "render", "interop", "plot", "bench", "splat"];

#[test]
fn wind_and_snow_are_libraries() {
    for room in ["wind", "snow"] {
        never_imports(room, &[APPLICATION, &["sim"]].concat());
    }
}

#[test]
fn sim_draws_nothing() {
    never_imports("sim", APPLICATION);
}

#[test]
fn the_libraries_under_the_simulation_know_none_of_it() {
    let above = [APPLICATION, &["sim", "wind", "snow"]].concat();
    for room in [
        "cl",
        "gml",
        "meshio",
        "sort",
        "terrain",
        "scene",
        "mesh_kind",
        "renumber",
        "budget",
        "input",
        "output",
        "counters",
        "particle",
        "inspect",
        "partition",
        "comm",
    ] {
        never_imports(room, &above);
    }
}

#[test]
fn the_check_itself_finds_an_import() {
    // The app imports sim: the reader must see it, or every test above passes vacuously.
    assert!(imports("app").iter().any(|(name, _)| name == "sim"));
    assert!(imports("sim").iter().any(|(name, _)| name == "snow"));
}
