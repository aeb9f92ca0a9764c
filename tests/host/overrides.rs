//! Every kernel and shader the binary embeds can be replaced from `SNOWSIM_KERNEL_DIR` and
//! `SNOWSIM_SHADER_DIR` (README): read from the sources, so a file embedded another way (the
//! wind's `wind.cl` and `tet_walk.cl` were pasted into gml's toolkit with `include_str!` alone,
//! and their copies were ignored) fails here. `tests/device/pipeline.rs` runs edited copies.

use std::path::Path;

use crate::layers::sources;

/// Each `include_str!` of a file in `folder/` under src/: the file's name, where it is, and
/// the code of its statement before it, without spaces (back to the previous `;`, `{`, `}`
/// or `),` that ends a line).
fn embeds(folder: &str) -> Vec<(String, String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let needle = format!("{folder}/");
    let mut found = Vec::new();
    for file in sources(&root.join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (at, _) in text.match_indices("include_str!(\"") {
            let start = at + "include_str!(\"".len();
            let path = &text[start..start + text[start..].find('"').unwrap()];
            let Some(slash) = path.rfind(&needle) else {
                continue;
            };
            let before = &text[..at];
            let from = [";", "{", "}", "),\n"]
                .iter()
                .filter_map(|end| before.rfind(end).map(|i| i + end.len()))
                .max()
                .unwrap_or(0);
            let line = before.lines().count();
            found.push((
                path[slash + needle.len()..].to_string(),
                format!("{}:{line}", file.strip_prefix(root).unwrap().display()),
                before[from..].split_whitespace().collect::<String>(),
            ));
        }
    }
    found
}

/// The names of the files in `folder` ending in one of `extensions`.
fn files_in(folder: &str, extensions: &[&str]) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| extensions.iter().any(|e| n.ends_with(e)))
        .collect();
    names.sort();
    names
}

#[test]
fn every_kernel_is_embedded_through_its_override() {
    let embeds = embeds("kernels");
    let bypassing: Vec<String> = embeds
        .iter()
        .filter(|(_, _, statement)| !statement.contains("Source::embedded("))
        .map(|(name, at, _)| format!("{at}: {name}"))
        .collect();
    assert!(
        bypassing.is_empty(),
        "kernels embedded without cl::Source::embedded, so SNOWSIM_KERNEL_DIR cannot replace \
         them:\n{}",
        bypassing.join("\n")
    );
    // Named as the file it embeds, so the copy of the same name replaces it.
    for (name, at, statement) in &embeds {
        assert!(
            statement.ends_with(&format!("Source::embedded(\"{name}\",")),
            "{at}: `{name}` is embedded under another name: {statement}"
        );
    }
    for file in files_in("kernels", &[".cl"]) {
        assert!(
            embeds.iter().any(|(name, _, _)| *name == file),
            "kernels/{file} is embedded nowhere"
        );
    }
}

#[test]
fn every_shader_is_embedded_through_its_override() {
    let embeds = embeds("shaders");
    for (name, at, statement) in &embeds {
        assert!(
            at.starts_with("src/render/shader.rs") && statement == &format!("\"{name}\"=>"),
            "{at}: `{name}` is embedded outside shader::builtin (which reads SNOWSIM_SHADER_DIR): \
             {statement}"
        );
    }
    for file in files_in("shaders", &[".vert", ".frag"]) {
        assert!(
            embeds.iter().any(|(name, _, _)| *name == file),
            "shaders/{file} is embedded nowhere"
        );
    }
}
