//! Scene files: the shipped scenes load and build valid domains, errors name the file, line
//! and key, mesh domains check their boundary references, and `snowsim scene check`.

use std::path::{Path, PathBuf};

use glam::DVec3;
use snowsim::meshio::{self, ElementKind, generate::tet_grid};
use snowsim::scene::{Domain, Scene, SceneError, SortMode, WindProfile};
use snowsim::terrain::{Heightmap, procedural};

use crate::common::{snowsim, temp_dir};

fn scenes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes")
}

/// Flat ground with everything else left to its default.
const MINIMAL: &str =
    "[domain]\nflat = true\nsize = [100, 80]\ntop = 40\ncells = [4, 3]\nlayers = 3\n";

#[test]
fn the_valley_scene_loads_with_its_heightmap() {
    let scene = Scene::load(&scenes().join("valley.toml")).unwrap();
    assert_eq!(scene.name, "Alpine valley");
    let Domain::Terrain {
        heightmap: Some(path),
        spec,
        image: Some(map),
    } = &scene.domain
    else {
        panic!("{:?}", scene.domain);
    };
    assert_eq!(path, &scenes().join("valley.png"));
    assert_eq!((map.width(), map.height(), map.bits()), (512, 512, 16));
    assert_eq!(map.range(), (0.0, 1.0));
    assert!(spec.relief < spec.size[2]);
    assert_eq!(scene.snow.particles, 1 << 20);
    assert_eq!(scene.snow.sort, SortMode::Partial);
    assert!(matches!(scene.wind.profile, WindProfile::Log { .. }));
    let d = scene.wind.direction;
    assert!((d[0].hypot(d[1]) - 1.0).abs() < 1e-12);
}

/// `scenes/NAME` equals `made` up to one step of 16 bits (libm may round a transcendental
/// differently), pixel by pixel.
fn assert_shipped_is(name: &str, made: &Heightmap) {
    let shipped = Heightmap::read(&scenes().join(name)).unwrap();
    assert_eq!(
        (shipped.width(), shipped.height()),
        (made.width(), made.height()),
        "{name}"
    );
    let mut worst = 0.0f64;
    for r in 0..made.height() {
        for c in 0..made.width() {
            worst = worst.max((shipped.pixel(c, r) - made.pixel(c, r)).abs());
        }
    }
    assert!(worst <= 1.0 / 65535.0 + 1e-12, "{name} differs by {worst}");
}

#[test]
fn the_valley_heightmap_is_made_by_the_procedural_generator() {
    // scenes/README.md says `snowsim scene valley scenes/valley.png` made it.
    assert_shipped_is("valley.png", &procedural::valley(512, 7));
}

#[test]
fn the_ridge_heightmap_is_made_by_the_procedural_generator() {
    // scenes/README.md says `snowsim scene ridge scenes/ridge.png` made it.
    let made = procedural::ridge(256, 0.15);
    assert_shipped_is("ridge.png", &made);
    // Half height at 0.15 of the extent from the crest (row 127.5 is the middle).
    let at = |d: f64| made.pixel(0, (127.5 + d * 255.0).round() as usize);
    assert!((at(0.15) - 0.5).abs() < 0.02, "{}", at(0.15));
}

#[test]
fn the_fence_heightmap_is_made_by_the_procedural_generator() {
    // scenes/README.md says `snowsim scene fence scenes/fence.png` made it.
    let made = procedural::fence(512, 0.01);
    assert_shipped_is("fence.png", &made);
    // A wall 1 % of the extent thick across the middle: full height on the centre line, none
    // two thicknesses away, the same along every row.
    let middle = made.pixel(100, 255);
    assert_eq!(middle, 1.0);
    assert_eq!(made.pixel(100, 255 + 10), 0.0);
    let full = (0..512).filter(|&r| made.pixel(0, r) == 1.0).count();
    assert!((4..=6).contains(&full), "{full} rows at full height");
    assert!((0..512).all(|c| made.pixel(c, 250) == made.pixel(0, 250)));
}

/// The renumbered valley keeps its columns: every vertex is where the mesher's formula puts
/// its column and level (bit for bit), and the ground surface's vertex `c` is column `c`'s
/// level 0 (what the ground refresh of issue 28 regrades).
#[test]
fn a_renumbered_terrain_domain_keeps_its_columns() {
    let scene = Scene::load(&scenes().join("valley.toml")).unwrap();
    let domain = scene.build_domain(true).unwrap();
    let columns = domain.columns.as_ref().expect("a terrain has columns");
    let none = vec![0.0; columns.ground.len()];
    let z = columns.regrade(&none).unwrap().z;
    for (v, p) in domain.mesh.vertices.iter().enumerate() {
        assert_eq!(p[2], z[v], "vertex {v}");
    }
    for (c, &v) in domain.ground.volume_vertices.iter().enumerate() {
        assert_eq!(
            (columns.column[v as usize], columns.level[v as usize]),
            (c as u32, 0),
            "ground vertex {c}"
        );
    }
    let flat = Scene::load(&scenes().join("flat.toml")).unwrap();
    assert!(flat.build_domain(true).unwrap().columns.is_some());
}

#[test]
fn the_flat_scene_builds_a_valid_fully_referenced_domain() {
    let scene = Scene::load(&scenes().join("flat.toml")).unwrap();
    for renumber in [false, true] {
        let domain = scene.build_domain(renumber).unwrap();
        let report = domain.report();
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.tetrahedra, 6 * 8 * 8 * 6);
        assert_eq!(report.unreferenced_faces, 0);
        let ground = report
            .boundary
            .iter()
            .find(|b| b.side.name() == "ground")
            .unwrap();
        assert_eq!((ground.reference, ground.triangles), (5, 128));
        // The ground surface's vertices are the volume's ground vertices, renumbered or not.
        for (i, &v) in domain.ground.volume_vertices.iter().enumerate() {
            assert_eq!(
                domain.ground.mesh.vertices[i],
                domain.mesh.vertices[v as usize]
            );
            assert_eq!(domain.ground.mesh.vertices[i][2], 0.0);
        }
    }
}

#[test]
fn defaults_fill_what_a_scene_leaves_out() {
    let scene = Scene::from_toml(MINIMAL, Path::new("/somewhere/minimal.toml")).unwrap();
    assert_eq!(scene.name, "minimal");
    assert_eq!(scene.wind.speed, 5.0);
    assert_eq!(scene.time.step, 0.02);
    assert_eq!(scene.time.frames, None);
    assert_eq!(scene.view.window, [1280, 720]);
    assert_eq!(scene.view.sun, [245.0, 36.0]);
    assert_eq!(scene.view.snow_cover, [0.0, 0.1]);
    assert_eq!(scene.view.shadow_map, 2048);
    assert!(scene.simulate.wind && scene.simulate.snow);
    // The default camera looks at the domain from the south, from above.
    assert!(scene.camera.position[1] < 0.0 && scene.camera.position[2] > 0.0);
}

#[test]
fn wind_profiles_give_the_reference_speed_at_the_reference_height() {
    for profile in ["log", "power", "uniform"] {
        let text =
            format!("{MINIMAL}[wind]\nspeed = 8\nreference_height = 12\nprofile = \"{profile}\"\n");
        let wind = Scene::from_toml(&text, Path::new("w.toml")).unwrap().wind;
        assert!((wind.speed_at(12.0) - 8.0).abs() < 1e-12, "{profile}");
        assert!(
            wind.speed_at(20.0) >= wind.speed_at(5.0),
            "{profile} grows with height"
        );
        if profile != "uniform" {
            assert_eq!(wind.speed_at(0.0), 0.0, "{profile}");
        }
        let v = wind.velocity_at(12.0);
        assert!((v[0] - 8.0).abs() < 1e-12 && v[2] == 0.0);
    }
}

/// The error for `text`, which must be an invalid-scene error.
fn invalid(text: &str) -> (String, Option<usize>, String) {
    match Scene::from_toml(text, Path::new("scenes/bad.toml")) {
        Err(e @ SceneError::Invalid { .. }) => {
            let SceneError::Invalid { line, ref key, .. } = e else {
                unreachable!()
            };
            (key.clone(), line, e.to_string())
        }
        other => panic!("expected an invalid scene, got {other:?}"),
    }
}

#[test]
fn errors_name_the_file_the_line_and_the_key() {
    let cases: &[(&str, &str, usize, &str)] = &[
        // (text appended to MINIMAL, key, line, part of the message)
        (
            "[snow]\nflake_size = [1, 2]\n",
            "snow.flake_size",
            9,
            "unknown field `flake_size`",
        ),
        ("[wind]\nspeed = -3\n", "wind.speed", 9, "got -3"),
        (
            "[wind]\nspeed = \"fast\"\n",
            "wind.speed",
            9,
            "invalid type",
        ),
        (
            "[wind]\nprofile = \"cubic\"\n",
            "wind.profile",
            9,
            "unknown variant `cubic`",
        ),
        (
            "[wind]\nprofile = \"power\"\nroughness = 0.1\n",
            "wind.roughness",
            10,
            "only for profile",
        ),
        (
            "[wind]\ndirection = [0, 0]\n",
            "wind.direction",
            9,
            "must not be [0, 0]",
        ),
        (
            "[wind]\nreference_height = 45\n",
            "wind.reference_height",
            9,
            "not below",
        ),
        ("[snow]\nparticles = 0\n", "snow.particles", 9, "got 0"),
        (
            "[snow]\nflake_diameter = [0.01, 0.001]\n",
            "snow.flake_diameter",
            9,
            "min <= max",
        ),
        (
            "[snow]\nflutter_rate = [1, 2, 3]\n",
            "snow.flutter_rate",
            9,
            "expected 2 numbers",
        ),
        (
            "[snow]\nsort = \"bubble\"\n",
            "snow.sort",
            9,
            "unknown variant",
        ),
        ("[snow]\nsort_every = 0\n", "snow.sort_every", 9, "got 0"),
        (
            "[snow]\nsort_key = \"morton\"\n",
            "snow.sort_key",
            9,
            "expected `tetrahedron` or `hilbert`",
        ),
        (
            "[ground]\nrepose_angle = 90\n",
            "ground.repose_angle",
            9,
            "got 90",
        ),
        ("[time]\nstep = 0\n", "time.step", 9, "got 0"),
        ("[time]\nframes = 0\n", "time.frames", 9, "at least 1"),
        ("[camera]\nfov = 200\n", "camera.fov", 9, "got 200"),
        (
            "[camera]\nposition = [1, 2, 3]\ntarget = [1, 2, 3]\n",
            "camera.target",
            10,
            "must differ",
        ),
        (
            "[view]\nwindow = [10, 10]\n",
            "view.window",
            9,
            "16 to 16384",
        ),
        (
            "[view]\nwireframe = true\n",
            "view.wireframe",
            9,
            "unknown field",
        ),
        ("[view]\nsun = [90, 0]\n", "view.sun", 9, "got [90, 0]"),
        ("[view]\nsun = [90]\n", "view.sun", 9, "expected 2 numbers"),
        ("[view]\nexposure = 0\n", "view.exposure", 9, "got 0"),
        (
            "[view]\nsky = [0.5, 1.5, 0.5]\n",
            "view.sky",
            9,
            "each 0 to 1 (linear), got [0.5, 1.5, 0.5]",
        ),
        (
            "[view]\nsnow_cover = [0.2, 0.1]\n",
            "view.snow_cover",
            9,
            "got [0.2, 0.1]",
        ),
        ("[view]\nshadow_map = 8\n", "view.shadow_map", 9, "got 8"),
        (
            "[view]\nparcel_flakes = 65\n",
            "view.parcel_flakes",
            9,
            "to 64 flakes, got 65",
        ),
        (
            "[view]\nparcel_distance = -1\n",
            "view.parcel_distance",
            9,
            "-1",
        ),
        ("[simulate]\nwind = 1\n", "simulate.wind", 9, "invalid type"),
    ];
    for &(extra, key, line, message) in cases {
        let text = format!("{MINIMAL}\n{extra}");
        let (k, l, full) = invalid(&text);
        assert_eq!(k, key, "{full}");
        assert_eq!(l, Some(line), "{full}");
        assert!(full.contains(message), "{full}");
        assert!(
            full.starts_with(&format!("scenes/bad.toml:{line}:")),
            "{full}"
        );
        assert!(full.contains(&format!(": {key}: ")), "{full}");
    }
}

#[test]
fn domain_errors_name_their_key() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "[domain]\nsize = [1, 1]\ntop = 1\n",
            "domain",
            "give exactly one of",
        ),
        (
            "[domain]\nflat = true\nmesh = \"a.meshb\"\n",
            "domain.flat",
            "together",
        ),
        ("[domain]\nflat = true\ntop = 1\n", "domain.size", "missing"),
        (
            "[domain]\nflat = true\nsize = [1, 1]\n",
            "domain.top",
            "missing",
        ),
        (
            "[domain]\nflat = true\nsize = [1, -1]\ntop = 1\n",
            "domain.size",
            "> 0",
        ),
        (
            "[domain]\nflat = true\nsize = [1, 1]\ntop = 1\nrelief = 0.5\n",
            "domain.relief",
            "only for heightmap",
        ),
        (
            "[domain]\nflat = true\nsize = [1, 1]\ntop = 1\ncells = [0, 3]\n",
            "domain.cells",
            "at least 1",
        ),
        (
            "[domain]\nflat = true\nsize = [1, 1]\ntop = 1\nlayers = 0\n",
            "domain.layers",
            "at least one",
        ),
        (
            "[domain]\nflat = true\nsize = [1, 1]\ntop = 1\ngrading = 0.5\n",
            "domain.grading",
            ">= 1",
        ),
        (
            "[domain]\nflat = true\nsize = [1, 1]\ntop = 1\n[domain.boundary]\nground = 3\n",
            "domain.boundary",
            "only for mesh",
        ),
        (
            "[domain]\nheightmap = \"nothere.png\"\nsize = [1, 1]\ntop = 2\nrelief = 1\n",
            "domain.heightmap",
            "nothere.png",
        ),
        (
            "[domain]\nheightmap = \"h.png\"\nsize = [1, 1]\ntop = 2\n",
            "domain.relief",
            "missing",
        ),
        (
            "[domain]\nmesh = \"nothere.meshb\"\n",
            "domain.mesh",
            "nothere.meshb: No such file",
        ),
        (
            "[domain]\nflat = true\nsize = [1, 1]\ntop = 1\nheigth = 3\n",
            "domain.heigth",
            "unknown field",
        ),
    ];
    for &(text, key, message) in cases {
        let (k, _, full) = invalid(text);
        assert_eq!(k, key, "{full}");
        assert!(full.contains(message), "{full}");
    }
}

#[test]
fn a_mesh_domain_checks_its_boundary_references() {
    let dir = temp_dir("scene", "mesh");
    let mut mesh = tet_grid([4, 3, 2]);
    meshio::write(&dir.join("box.meshb"), &mesh, meshio::Version::V2).unwrap();
    let camera = "[camera]\nposition = [0.5, -1, 1]\ntarget = [0.5, 0.5, 0]\n";
    let scene_file = dir.join("box.toml");
    std::fs::write(
        &scene_file,
        format!("[domain]\nmesh = \"box.meshb\"\n{camera}"),
    )
    .unwrap();
    let scene = Scene::load(&scene_file).unwrap();
    let domain = scene.build_domain(true).unwrap();
    let report = domain.report();
    assert!(report.passed(), "{report:?}");
    // tet_grid's z = 0 face is reference 5: the ground, with normals up.
    assert_eq!(report.ground_triangles, 2 * 4 * 3);
    for (t, _) in domain.ground.mesh.elements(ElementKind::Triangles).iter() {
        let p = [0, 1, 2].map(|i| DVec3::from(domain.ground.mesh.vertices[t[i] as usize]));
        let n = (p[1] - p[0]).cross(p[2] - p[0]);
        assert!(n.z > 0.0 && p.iter().all(|q| q.z == 0.0));
    }

    // References that are no side's are an error naming them.
    std::fs::write(
        &scene_file,
        format!("[domain]\nmesh = \"box.meshb\"\n[domain.boundary]\nground = 9\ntop = 8\n{camera}"),
    )
    .unwrap();
    let err = Scene::load(&scene_file)
        .unwrap()
        .build_domain(false)
        .unwrap_err();
    assert_eq!(err.key(), Some("domain.boundary"));
    assert!(
        err.to_string().contains("reference 5, which is no side's"),
        "{err}"
    );

    // Two sides with one reference.
    std::fs::write(
        &scene_file,
        format!("[domain]\nmesh = \"box.meshb\"\n[domain.boundary]\ntop = 5\n{camera}"),
    )
    .unwrap();
    let err = Scene::load(&scene_file).unwrap_err();
    assert!(
        err.to_string()
            .contains("top and ground both have reference 5"),
        "{err}"
    );

    // A mesh domain needs a camera.
    std::fs::write(&scene_file, "[domain]\nmesh = \"box.meshb\"\n").unwrap();
    assert_eq!(Scene::load(&scene_file).unwrap_err().key(), Some("camera"));

    // A mesh whose boundary has a hole: a boundary triangle removed.
    let tris = mesh.elements(ElementKind::Triangles).clone();
    let kept = snowsim::meshio::Elements::new(ElementKind::Triangles);
    *mesh.elements_mut(ElementKind::Triangles) = kept;
    for (t, r) in tris.iter().skip(1) {
        mesh.elements_mut(ElementKind::Triangles).push(t, r);
    }
    meshio::write(&dir.join("holed.meshb"), &mesh, meshio::Version::V2).unwrap();
    std::fs::write(
        &scene_file,
        format!("[domain]\nmesh = \"holed.meshb\"\n{camera}"),
    )
    .unwrap();
    let report = Scene::load(&scene_file)
        .unwrap()
        .build_domain(false)
        .unwrap()
        .report();
    assert_eq!(report.unreferenced_faces, 1);
    assert!(!report.passed());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cli_scene_check_summarises_and_reports_errors() {
    let flat = scenes().join("flat.toml");
    let out = snowsim(&["scene", "check", flat.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for part in [
        "scene:    ",
        "flat ground",
        "4096 particles",
        "2304 tetrahedra",
        "ground 5 (128)",
        "no problem found",
    ] {
        assert!(text.contains(part), "`{part}` missing from:\n{text}");
    }
    let out = snowsim(&["scene", "check", "--json", flat.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["scene"]["domain"]["kind"], "terrain");
    assert_eq!(v["mesh"]["tetrahedra"], 2304);
    assert_eq!(v["mesh"]["passed"], true);
    assert!(v["mesh"]["numbering_score"].as_f64().unwrap() > 50.0);

    let dir = temp_dir("scene", "cli");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, format!("{MINIMAL}[snow]\nparticle = 3\n")).unwrap();
    let out = snowsim(&["scene", "check", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains(&format!(
            "{}:8:1: snow.particle: unknown field `particle`",
            bad.display()
        )),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_ground_refresh_follows_the_drift_unless_given() {
    let refresh = |extra: &str| {
        Scene::from_toml(&format!("{MINIMAL}{extra}"), Path::new("r.toml"))
            .unwrap()
            .wind
            .ground_refresh
    };
    assert_eq!(refresh(""), 10.0);
    assert_eq!(refresh("[ground]\ndrift = false\n"), 0.0);
    assert_eq!(
        refresh("[wind]\nground_refresh = 5.0\n[ground]\ndrift = false\n"),
        5.0
    );
    let (key, _, message) = invalid(&format!("{MINIMAL}[wind]\nground_refresh = -1.0\n"));
    assert_eq!(key, "wind.ground_refresh", "{message}");
    // Held back 30 frames unless told; a lag past a million frames is refused by name.
    let lag = |extra: &str| {
        Scene::from_toml(&format!("{MINIMAL}{extra}"), Path::new("r.toml"))
            .unwrap()
            .wind
            .ground_refresh_lag
    };
    assert_eq!(lag(""), 30);
    assert_eq!(lag("[wind]\nground_refresh_lag = 0\n"), 0);
    let (key, _, message) = invalid(&format!("{MINIMAL}[wind]\nground_refresh_lag = 1000001\n"));
    assert_eq!(key, "wind.ground_refresh_lag", "{message}");
    assert!(message.contains("1000001"), "{message}");
    // Two earlier solves' corrections unless told; 0 turns it off; past 7 refused by name.
    let history = |extra: &str| {
        Scene::from_toml(&format!("{MINIMAL}{extra}"), Path::new("h.toml"))
            .unwrap()
            .wind
            .pressure_history
    };
    assert_eq!(history(""), 2);
    assert_eq!(history("[wind]\npressure_history = 0\n"), 0);
    assert_eq!(history("[wind]\npressure_history = 7\n"), 7);
    let (key, _, message) = invalid(&format!("{MINIMAL}[wind]\npressure_history = 8\n"));
    assert_eq!(key, "wind.pressure_history", "{message}");
    assert!(message.contains("at most 7"), "{message}");
    let (key, _, message) = invalid(&format!(
        "{MINIMAL}[ground]\nageing_time = 3600.0\naged_threshold_friction_velocity = 0.1\n"
    ));
    assert_eq!(key, "ground.aged_threshold_friction_velocity", "{message}");
    let ground = Scene::from_toml(
        &format!("{MINIMAL}[ground]\nageing_time = 3600.0\n"),
        Path::new("a.toml"),
    )
    .unwrap()
    .ground;
    assert_eq!(
        (
            ground.ageing_time,
            ground.aged_threshold_friction_velocity,
            ground.suspension
        ),
        (3600.0, 0.6, true)
    );
}
