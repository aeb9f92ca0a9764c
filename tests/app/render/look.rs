//! The look of the ground (issue 27, item 3), drawn by the renderer alone on headless EGL
//! (llvmpipe in CI): the snow raises the surface and whitens it by the stated transition, bare
//! ground keeps its colour, and a low sun shadows a ridge's lee. Every expected colour is
//! computed here from the palette, the sun's direction and the geometry (a flat patch's normal
//! is +z, so the sun's incidence is its elevation), and every expected pixel from the pinhole
//! camera model of `render.rs`, not from the renderer's matrices.

use super::*;
use snowsim::render::AMBIENT;

/// Draws `terrain` with `views` from `camera` into a `W × H` frame and reads it back.
fn draw(terrain: &TerrainMesh, camera: &OrbitCamera, views: &Views) -> image::RgbaImage {
    let headless = Headless::new(W, H).unwrap();
    let renderer = Renderer::new(headless.setup().gl.clone(), terrain).unwrap();
    renderer.draw(camera, (W, H), views).unwrap();
    read_frame(&headless.setup().gl, (W, H)).unwrap()
}

fn px(image: &image::RgbaImage, p: Vec2) -> [u8; 3] {
    let q = image.get_pixel(p.x as u32, p.y as u32).0;
    [q[0], q[1], q[2]]
}

/// `albedo × light`, per channel, as an 8-bit colour (what the framebuffer stores).
fn lit(albedo: [f32; 3], light: [f32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|k| (albedo[k] * light[k]).min(1.0) * 255.0)
}

/// Whether `got` is within `tolerance` of `expected` in every channel.
fn near(got: [u8; 3], expected: [f32; 3], tolerance: f32) -> bool {
    (0..3).all(|k| (f32::from(got[k]) - expected[k]).abs() <= tolerance)
}

/// The light on flat ground under the default sun, unshadowed: on bare ground the white
/// ambient share plus the rest times the sun's incidence (its elevation, for a flat patch), on
/// snow the sky's light on snow plus the same sun.
fn flat_light(views: &Views, snow: bool) -> [f32; 3] {
    let sun = (1.0 - AMBIENT) * views.sun[1].to_radians().sin();
    if snow {
        views.palette.snow_shade.map(|s| s + sun)
    } else {
        [AMBIENT + sun; 3]
    }
}

/// A flat 40 m square on a 1 m grid with 0.5 m of snow west of x = 19 m and none from
/// x = 20 m: the covered half is the snow's colour in the sun, the bare half is the grass's,
/// the same as with no snow at all; a 6 m cover raises the far edge above where the bare ground
/// ends against the sky.
#[test]
fn a_known_depth_field_whitens_and_raises_the_covered_ground_and_leaves_the_bare_unchanged() {
    let n = GROUND as usize + 1;
    let field = Heightfield::from_fn(n, n, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0).unwrap();
    let bare_terrain = TerrainMesh::from_heightfield(&field).unwrap();
    let covered = |depth: f32| {
        let mut t = bare_terrain.clone();
        let d: Vec<f32> = t
            .positions
            .iter()
            .map(|p| if p.x < 19.5 { depth } else { 0.0 })
            .collect();
        t.set_snow_depth(&d).unwrap();
        t
    };
    let views = Views {
        particles: false,
        ..Views::default()
    };
    let cam = camera();
    let pin = Pinhole::orbit(&cam);
    let bare = draw(&bare_terrain, &cam, &views);
    let half = draw(&covered(0.5), &cam, &views);

    let grass = lit(views.palette.grass, flat_light(&views, false));
    let snow = lit(views.palette.snow, flat_light(&views, true));
    let mut bad = Vec::new();
    let mut checked = [0; 2];
    for y in [4.0f32, 12.0, 20.0, 28.0, 36.0] {
        for x in [3.0f32, 8.0, 13.0, 17.0, 23.0, 28.0, 33.0, 37.0] {
            let cover = x < 19.5;
            let p = pin
                .project(Vec3::new(x, y, if cover { 0.5 } else { 0.0 }))
                .0;
            let (got, before) = (px(&half, p), px(&bare, p));
            let expected = if cover { snow } else { grass };
            if !near(got, expected, 3.0) {
                bad.push(format!(
                    "({x}, {y}) at {p}: {got:?}, expected {expected:?} ({})",
                    if cover { "snow" } else { "grass" }
                ));
            }
            if !cover && got != before {
                bad.push(format!(
                    "bare ({x}, {y}) at {p}: {got:?} with snow elsewhere, {before:?} without"
                ));
            }
            if !near(px(&bare, p), grass, 3.0) {
                bad.push(format!(
                    "snow-free ({x}, {y}) at {p}: {before:?}, expected {grass:?}"
                ));
            }
            checked[cover as usize] += 1;
        }
    }
    assert!(
        snow[2] > snow[0] && snow.iter().all(|&c| c > 150.0),
        "lit snow is bright: {snow:?}"
    );

    // Raised: the far edge (y = 0) of a 6 m cover is seen above where the bare edge meets the
    // sky, at x = 4, 8, 12 m.
    let tall = draw(&covered(6.0), &cam, &views);
    let background = rgb(views.palette.background);
    for x in [4.0f32, 8.0, 12.0] {
        let ground_edge = pin.project(Vec3::new(x, 0.0, 0.0)).0;
        let raised_edge = pin.project(Vec3::new(x, 0.0, 6.0)).0;
        assert!(
            ground_edge.y - raised_edge.y > 8.0,
            "the test needs the raised edge well above: {ground_edge} {raised_edge}"
        );
        let between = Vec2::new(ground_edge.x, 0.5 * (ground_edge.y + raised_edge.y));
        let (sky, top) = (px(&bare, between), px(&tall, between));
        if classify(sky, background) != Class::Background {
            bad.push(format!(
                "beyond the bare edge at {between}: {sky:?}, expected the sky"
            ));
        }
        if !near(top, snow, 12.0) {
            bad.push(format!(
                "under the raised edge at {between}: {top:?}, expected the snow's {snow:?}"
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} wrong ({checked:?} ground points):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The transition is the stated rule, smoothstep(d0, d1, depth), the same everywhere: 2 cm on
/// the default [0, 0.10] m is 10.4 % of the way from grass to snow, 5 cm half, 10 cm all.
#[test]
fn partial_cover_follows_the_stated_transition_without_noise() {
    let n = 11;
    let field = Heightfield::from_fn(n, n, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0).unwrap();
    let views = Views {
        particles: false,
        ..Views::default()
    };
    let cam = camera();
    let pin = Pinhole::orbit(&cam);
    let grass = lit(views.palette.grass, flat_light(&views, false));
    let snow = lit(views.palette.snow, flat_light(&views, true));
    for (depth, share) in [(0.02f32, 0.104f32), (0.05, 0.5), (0.1, 1.0), (0.3, 1.0)] {
        let mut terrain = TerrainMesh::from_heightfield(&field).unwrap();
        terrain.set_snow_depth(&vec![depth; n * n]).unwrap();
        let image = draw(&terrain, &cam, &views);
        let expected = [0, 1, 2].map(|k| grass[k] + share * (snow[k] - grass[k]));
        let mut seen = Vec::new();
        for (x, y) in [(5.0, 5.0), (20.0, 20.0), (33.0, 12.0), (12.0, 33.0)] {
            let got = px(&image, pin.project(Vec3::new(x, y, depth)).0);
            assert!(
                near(got, expected, 3.0),
                "{depth} m at ({x}, {y}): {got:?}, expected {expected:?} ({share} covered)"
            );
            seen.push(got);
        }
        assert!(
            seen.windows(2).all(|w| w[0] == w[1]),
            "{depth} m: the same depth gives the same colour everywhere: {seen:?}"
        );
    }
}

/// A ridge 8 m high along y at x = 40 m (45° flanks) between flat ground, the sun in the east
/// 20° above the horizon: the crest's shadow reaches x = 40 − 8 / tan 20° = 18.0 m, so the flat
/// ground at x = 20…28 m is in the ridge's lee and gets only the sky's light, while the same
/// flat ground at x = 4…12 m (beyond the shadow) and at x = 56…72 m (on the sunny side) is
/// lit. Bare, and again under 1 m of snow (bluish in the shade).
#[test]
fn a_low_sun_shadows_the_lee_of_a_ridge() {
    let (nx, ny) = (81, 41);
    let field = Heightfield::from_fn(nx, ny, Vec2::ZERO, Vec2::new(80.0, 40.0), |x, _| {
        (8.0 - (x - 40.0).abs()).max(0.0)
    })
    .unwrap();
    let eye = Vec3::new(40.0, -45.0, 45.0);
    let target = Vec3::new(40.0, 20.0, 0.0);
    let fovy = 50f32.to_radians();
    let cam = OrbitCamera::looking_at(eye, target, fovy);
    let pin = Pinhole::looking_at(eye, target, fovy, (W, H));
    let views = Views {
        particles: false,
        sun: [90.0, 20.0],
        ..Views::default()
    };
    let shadow_edge = 40.0 - 8.0 / 20f32.to_radians().tan();
    assert!((shadow_edge - 18.02).abs() < 0.01);
    for depth in [0.0f32, 1.0] {
        let mut terrain = TerrainMesh::from_heightfield(&field).unwrap();
        terrain
            .set_snow_depth(&vec![depth; terrain.positions.len()])
            .unwrap();
        let image = draw(&terrain, &cam, &views);
        let albedo = if depth > 0.0 {
            views.palette.snow
        } else {
            views.palette.grass
        };
        let sky_light = if depth > 0.0 {
            views.palette.snow_shade
        } else {
            [AMBIENT; 3]
        };
        let sun = (1.0 - AMBIENT) * 20f32.to_radians().sin();
        let in_sun = lit(albedo, sky_light.map(|s| s + sun));
        let in_shadow = lit(albedo, sky_light);
        let mut bad = Vec::new();
        for y in [10.0f32, 20.0, 30.0] {
            for x in [4.0f32, 8.0, 12.0, 20.0, 24.0, 28.0, 56.0, 64.0, 72.0] {
                let shadowed = x > shadow_edge && x < 32.0;
                let p = pin.project(Vec3::new(x, y, depth)).0;
                let got = px(&image, p);
                let expected = if shadowed { in_shadow } else { in_sun };
                if !near(got, expected, 3.0) {
                    bad.push(format!(
                        "({x}, {y}) at {p}: {got:?}, expected {expected:?} ({})",
                        if shadowed { "shadow" } else { "sun" }
                    ));
                }
            }
        }
        assert!(
            bad.is_empty(),
            "{} m of snow: {} wrong:\n{}",
            depth,
            bad.len(),
            bad.join("\n")
        );
        if depth > 0.0 {
            assert!(
                in_shadow[2] > in_shadow[0] + 20.0,
                "snow in shade is bluish"
            );
        }
    }
}

/// `--osd` draws the on-screen display into headless frames: the frame with it differs from
/// the same run's frame without it only in a rectangle at the documented corner
/// ([`snowsim::render::OSD_MARGIN`] pixels from the top-left), every pixel of which changed
/// (the backdrop darkens it), and the rectangle holds text: many pixels near white, none of
/// which the frame without it has there.
#[test]
fn osd_draws_text_in_its_rectangle_and_nothing_elsewhere() {
    let dir = temp_dir("osd");
    let shot = |name: &str, osd: bool| {
        let path = dir.join(name);
        let mut command = snowsim();
        command
            .args(["run", "--headless", "--scene", FLAT, "--particles", "2048"])
            .args([
                "--size",
                "640x480",
                "--frames",
                "3",
                "--particle-render",
                "sprites",
                "--interop",
                "copy",
                "--screenshot",
            ]);
        command.arg(&path);
        if osd {
            command.arg("--osd");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        image::open(&path).unwrap().to_rgba8()
    };
    let plain = shot("plain.png", false);
    let with = shot("osd.png", true);
    let (w, h) = plain.dimensions();
    let changed: Vec<(u32, u32)> = (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .filter(|&(x, y)| plain.get_pixel(x, y) != with.get_pixel(x, y))
        .collect();
    assert!(!changed.is_empty(), "--osd changed nothing");
    let (x0, y0) = changed
        .iter()
        .fold((u32::MAX, u32::MAX), |(a, b), &(x, y)| (a.min(x), b.min(y)));
    let (x1, y1) = changed
        .iter()
        .fold((0, 0), |(a, b), &(x, y)| (a.max(x), b.max(y)));
    let margin = snowsim::render::OSD_MARGIN;
    assert_eq!((x0, y0), (margin, margin), "the panel's corner");
    assert!(
        x1 < w / 2 + w / 4 && y1 < h / 2,
        "the panel is small: up to ({x1}, {y1}) in {w}x{h}"
    );
    let area = ((x1 - x0 + 1) * (y1 - y0 + 1)) as usize;
    assert_eq!(
        changed.len(),
        area,
        "every pixel of the rectangle changes, none outside it"
    );
    let white = |p: &image::Rgba<u8>| p.0[..3].iter().all(|&c| c >= 230);
    let text = (y0..=y1)
        .flat_map(|y| (x0..=x1).map(move |x| (x, y)))
        .filter(|&(x, y)| white(with.get_pixel(x, y)) && !white(plain.get_pixel(x, y)))
        .count();
    assert!(
        text > 200,
        "{text} text pixels in the {}x{} panel",
        x1 - x0 + 1,
        y1 - y0 + 1
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The check of the veil against Koschmieder's law: in a uniform snowfall of known β
/// (no flakes drawn, only the veil), a black wall at distance d seen against the sky (veiled
/// completely at its distance) keeps the contrast `(sky − wall) / sky = e^(−β d)` in linear
/// light, within 5 %, for β d = ½, 1 and 2, at the middle of the wall and off-axis, where the
/// distance along each pixel's ray is computed here from the pinhole camera.
#[test]
fn the_veil_dims_a_black_target_as_koschmieder_says() {
    const D: f32 = 100.0;
    let (hx, hz) = (20.0, 10.0);
    let corners = vec![
        Vec3::new(-hx, D, -hz),
        Vec3::new(hx, D, -hz),
        Vec3::new(hx, D, hz),
        Vec3::new(-hx, D, hz),
    ];
    let wall = TerrainMesh::from_triangles(corners, vec![[0, 1, 2], [0, 2, 3]]).unwrap();
    let (eye, target, fovy) = (Vec3::ZERO, Vec3::new(0.0, D, 0.0), 50f32.to_radians());
    let cam = OrbitCamera::looking_at(eye, target, fovy);
    let pin = Pinhole::looking_at(eye, target, fovy, (W, H));
    let black = Palette {
        grass: [0.0; 3],
        rock: [0.0; 3],
        ..Palette::default()
    };
    for beta in [0.005f32, 0.01, 0.02] {
        let views = Views {
            beta,
            palette: black,
            ..Views::default()
        };
        let image = draw(&wall, &cam, &views);
        // The sky, veiled over 50 km: the veil's colour.
        let sky_px = px(&image, Vec2::new(4.0, 4.0));
        let veil = rgb(views.palette.veil);
        assert!(
            near(sky_px, veil.map(f32::from), 1.0),
            "β {beta}: sky {sky_px:?}, veil {veil:?}"
        );
        let mut bad = Vec::new();
        for (x, z) in [(0.0f32, 0.0f32), (-12.0, 5.0), (15.0, -6.0), (8.0, 7.0)] {
            let p = pin.project(Vec3::new(x, D, z)).0;
            // The distance along the ray through the middle of the pixel that holds p.
            let centre = Vec2::new(p.x.floor() + 0.5, p.y.floor() + 0.5);
            let ndc = Vec2::new(
                centre.x / W as f32 * 2.0 - 1.0,
                1.0 - centre.y / H as f32 * 2.0,
            );
            let t = (fovy / 2.0).tan();
            let ray =
                pin.forward + ndc.x * t * (W as f32 / H as f32) * pin.right + ndc.y * t * pin.up;
            let d = D / ray.y;
            let expected = (-beta * d).exp();
            let wall_px = px(&image, p);
            for k in 0..3 {
                let contrast =
                    (f32::from(sky_px[k]) - f32::from(wall_px[k])) / f32::from(sky_px[k]);
                if ((contrast - expected) / expected).abs() > 0.05 {
                    bad.push(format!(
                        "β {beta}, wall ({x}, {z}) at {p}, {d:.1} m, channel {k}: contrast \
                         {contrast:.4}, e^(−βd) = {expected:.4} (sky {sky_px:?}, wall {wall_px:?})"
                    ));
                }
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

/// A flake is seen through the snow between it and the eye, alike whether drawn as a sprite
/// or splatted: the middle of each of the fixed scene's (opaque, large) flakes is the snow's
/// colour times e^(−β d) plus the veil's times 1 − e^(−β d), d the flake's distance from the
/// eye (computed here), in both paths, within 4 of 255.
#[test]
fn flakes_are_veiled_by_their_own_distance_in_both_paths() {
    let beta = 0.01f32;
    let device = default_device();
    let cam = camera();
    let pin = Pinhole::orbit(&cam);
    let views = Views {
        beta,
        ..Views::default()
    };
    let snow = snowsim::render::flake_colour(&views);
    for render in [ParticleRender::Sprites, ParticleRender::Splat] {
        let headless = Headless::new(W, H).unwrap();
        let ground =
            Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0).unwrap();
        let config = SessionConfig {
            interop: InteropMode::Copy,
            terrain: TerrainMesh::from_heightfield(&ground).unwrap(),
            bounds: SceneBox {
                lo: Vec3::ZERO,
                hi: Vec3::new(GROUND, GROUND, 20.0),
            },
            views,
            paused: true,
            camera: Some(cam),
            particle_render: render,
            profile_every: 1,
            profile_from: 0,
        };
        let mut session = Session::new(
            headless.setup(),
            &device,
            config,
            SimSetup::still(fixed_particles(), Vec::new()),
        )
        .unwrap();
        session.frame((W, H)).unwrap();
        let image = read_frame(&headless.setup().gl, (W, H)).unwrap();
        for &(p, _) in &PARTICLES {
            let p = Vec3::from(p);
            let d = (p - pin.eye).length();
            let t = (-beta * d).exp();
            // The sprite's middle is 0.92 + 0.08 of the snow's colour (particles.frag); the
            // splat kernel writes the snow's colour: the brighter of the two bounds both.
            let expected =
                [0, 1, 2].map(|k| 255.0 * (snow[k] * t + views.palette.veil[k] * (1.0 - t)));
            let got = px(&image, pin.project(p).0);
            assert!(
                near(got, expected, 4.0),
                "{render}: flake at {p} ({d:.1} m, T = {t:.3}): {got:?}, expected {expected:?}"
            );
        }
    }
}

/// The flat scene's default snowfall (10 mm/h: β = 2.17 × 10⁻³ per m) veils its sky
/// completely (the sky is 50 km away): the sky's corner is the veil's colour, where with
/// `[view] snow = false` (no flakes, no veil) or without snow simulated it is the sky's own.
#[test]
fn the_snowfall_veils_the_sky_unless_the_snow_is_hidden() {
    let dir = temp_dir("veiled-sky");
    let corner = |extra: &str, args: &[&str]| {
        let scene = dir.join(format!("flat{}.toml", extra.len() + args.len()));
        let flat = std::fs::read_to_string(repo(FLAT)).unwrap();
        std::fs::write(&scene, format!("{flat}\n{extra}")).unwrap();
        let shot = dir.join("shot.png");
        let out = snowsim()
            .args(["run", "--headless", "--frames", "2", "--particles", "256"])
            .args(["--size", "160x120", "--scene"])
            .arg(&scene)
            .args(args)
            .arg("--screenshot")
            .arg(&shot)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let image = image::open(&shot).unwrap().to_rgba8();
        let p = image.get_pixel(2, 2).0;
        [p[0], p[1], p[2]]
    };
    let palette = Palette::default();
    let (veil, sky) = (rgb(palette.veil), rgb(palette.background));
    let close = |a: [u8; 3], b: [u8; 3]| a.iter().zip(b).all(|(&x, y)| x.abs_diff(y) <= 1);
    let snowing = corner("", &[]);
    assert!(close(snowing, veil), "snowing: {snowing:?}, veil {veil:?}");
    let hidden = corner("[view]\nsnow = false\n", &[]);
    assert!(
        close(hidden, sky),
        "view.snow = false: {hidden:?}, sky {sky:?}"
    );
    let clear = corner("[view]\nveil = false\n", &[]);
    assert!(
        close(clear, sky),
        "view.veil = false: {clear:?}, sky {sky:?}"
    );
    let no_snow = corner("", &["--simulate", "wind"]);
    assert!(close(no_snow, sky), "no snow: {no_snow:?}, sky {sky:?}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--camera-path`: frame i is drawn from the path at i × time.step; the last frame, at the
/// last keyframe's time, shows the flat ground where a pinhole at that keyframe projects it
/// (the first frame from the first keyframe), and a bad file is an error naming it and the
/// line.
#[test]
fn a_camera_path_flies_the_camera_through_its_keyframes() {
    let dir = temp_dir("camera-path");
    // No flakes (and so no veil): only where the ground is matters here.
    let scene_path = dir.join("flat.toml");
    let flat = std::fs::read_to_string(repo(FLAT)).unwrap();
    std::fs::write(&scene_path, format!("{flat}\n[view]\nsnow = false\n")).unwrap();
    let keys = [
        ([100.0, -60.0, 40.0], [100.0, 100.0, 0.0]),
        ([-40.0, 100.0, 30.0], [100.0, 100.0, 0.0]),
    ];
    // Two frames of time.step 0.02 s apart: frames 0 and 2.
    let fly = dir.join("fly.toml");
    std::fs::write(
        &fly,
        format!(
            "[[keyframe]]\ntime = 0.0\nposition = {:?}\ntarget = {:?}\n\n\
             [[keyframe]]\ntime = 0.04\nposition = {:?}\ntarget = {:?}\n",
            keys[0].0, keys[0].1, keys[1].0, keys[1].1
        ),
    )
    .unwrap();
    let record = dir.join("frames");
    let out = snowsim()
        .args(["run", "--headless", "--frames", "3", "--particles", "512"])
        .args(["--size", "320x240", "--scene"])
        .arg(&scene_path)
        .arg("--camera-path")
        .arg(&fly)
        .arg("--record")
        .arg(&record)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut scene = Scene::load(&scene_path).unwrap();
    let [x, y] = flat_extent(&scene);
    for (frame, (position, target)) in [(0, keys[0]), (2, keys[1])] {
        scene.camera.position = position;
        scene.camera.target = target;
        let image = image::open(record.join(format!("frame_0000{frame}.png")))
            .unwrap()
            .to_rgba8();
        let [ground, sky] = check_flat_ground(&scene, [x, y, 0.0], &image);
        assert!(
            ground > 200 && sky > 200,
            "frame {frame}: {ground} ground, {sky} sky"
        );
    }

    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[[keyframe]]\ntime = 0\nposition = [0, 0, 0]\ntarget = [0, 0, 0]\n",
    )
    .unwrap();
    let out = snowsim()
        .args([
            "run",
            "--headless",
            "--frames",
            "1",
            "--scene",
            FLAT,
            "--camera-path",
        ])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "camera path {}:4: keyframe 1: target must differ from position",
        bad.display()
    );
    assert!(err.contains(&expected), "{expected}\n{}", text(&out));
    std::fs::remove_dir_all(&dir).ok();
}
