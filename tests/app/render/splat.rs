//! Splatting (`--particle-render splat`) against sprites on real drivers (PoCL + llvmpipe in
//! CI): the same particles land on the same pixels, the terrain hides a flake under it in both,
//! flakes wider than the splat cap are still drawn, and a new frame size reallocates the image.
//! Where flakes should land comes from the pinhole model of `render.rs`, not the renderer.

use super::*;
use snowsim::particle::{ParcelFlakes, Particle};
use snowsim::splat::{MAX_SPLAT_PIXELS, RenderMode};

/// The fixed scene's ground and camera with `particles`, drawn by `render`, paused, through
/// the copy path.
fn session(headless: &Headless, particles: Vec<Particle>, render: ParticleRender) -> Session {
    session_with(headless, particles, render, InteropMode::Copy)
}

/// [`session`] through the interop path `interop` asks for.
fn session_with(
    headless: &Headless,
    particles: Vec<Particle>,
    render: ParticleRender,
    interop: InteropMode,
) -> Session {
    session_viewing(headless, particles, render, interop, Views::default())
}

/// [`session_with`] drawing `views`.
fn session_viewing(
    headless: &Headless,
    particles: Vec<Particle>,
    render: ParticleRender,
    interop: InteropMode,
    views: Views,
) -> Session {
    let ground = Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0).unwrap();
    let config = SessionConfig {
        interop,
        terrain: TerrainMesh::from_heightfield(&ground).unwrap(),
        bounds: SceneBox {
            lo: Vec3::ZERO,
            hi: Vec3::new(GROUND, GROUND, 20.0),
        },
        views,
        paused: true,
        camera: Some(camera()),
        particle_render: render,
        profile_every: 1,
        profile_from: 0,
    };
    Session::new(
        headless.setup(),
        &default_device(),
        config,
        SimSetup::still(particles, Vec::new()),
    )
    .unwrap()
}

/// Draws one frame of `size` and reads it back.
fn draw(headless: &Headless, session: &mut Session, size: (u32, u32)) -> image::RgbaImage {
    session.frame(size).unwrap();
    read_frame(&headless.setup().gl, size).unwrap()
}

/// The pinhole model of the fixed camera for a frame of `size`.
fn pinhole(size: (u32, u32)) -> Pinhole {
    let c = camera();
    let eye = Pinhole::orbit(&c).eye;
    Pinhole::looking_at(eye, c.target, c.fovy, size)
}

/// A world point that the camera model sees at pixel `(x, y)` (from the top-left) at view depth
/// `depth`, and the radius of a flake there `diameter` pixels wide.
fn at_pixel(cam: &Pinhole, x: f32, y: f32, depth: f32, diameter: f32) -> Particle {
    let nx = 2.0 * x / cam.size.x - 1.0;
    let ny = 1.0 - 2.0 * y / cam.size.y;
    let aspect = cam.size.x / cam.size.y;
    let p = cam.eye
        + depth
            * (cam.forward + nx * cam.tan_half * aspect * cam.right + ny * cam.tan_half * cam.up);
    let r = 0.5 * diameter / cam.pixels(1.0, depth);
    Particle::new(p.into(), r)
}

/// Flakes 3 to 7 pixels wide (under the splat cap) on a grid over the ground and against the
/// sky, far enough apart not to touch; the last one is under the ground, where the terrain
/// must hide it.
fn small_flakes(cam: &Pinhole) -> Vec<Particle> {
    let mut flakes = Vec::new();
    for (i, (x, y)) in [8.0, 14.0, 20.0, 26.0, 32.0]
        .into_iter()
        .flat_map(|x| [-6.0f32, 8.0, 14.0, 20.0, 26.0, 32.0].map(move |y| (x, y)))
        .enumerate()
    {
        let p = Vec3::new(
            x,
            y,
            2.0 + (i % 4) as f32 + if y < 0.0 { 10.0 } else { 0.0 },
        );
        let diameter = 3.0 + (i % 5) as f32;
        let depth = cam.project(p).1;
        flakes.push(Particle::new(
            p.into(),
            0.5 * diameter / cam.pixels(1.0, depth),
        ));
    }
    let under = Vec3::new(GROUND / 2.0, GROUND / 2.0, -3.0);
    let depth = cam.project(under).1;
    flakes.push(Particle::new(under.into(), 3.0 / cam.pixels(1.0, depth)));
    flakes
}

/// Pixels that differ from `base` by more than a faint rim.
fn changed(image: &image::RgbaImage, base: &image::RgbaImage) -> Vec<(u32, u32)> {
    image
        .enumerate_pixels()
        .filter(|&(x, y, p)| {
            let b = base.get_pixel(x, y).0;
            (0..3).any(|c| p.0[c].abs_diff(b[c]) > 12)
        })
        .map(|(x, y, _)| (x, y))
        .collect()
}

/// Every pixel of `a` has one of `b` at most one pixel away.
fn within_a_pixel(a: &[(u32, u32)], b: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let set: std::collections::HashSet<(u32, u32)> = b.iter().copied().collect();
    a.iter()
        .copied()
        .filter(|&(x, y)| {
            !(-1i64..=1).any(|dy| {
                (-1i64..=1).any(|dx| {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    nx >= 0 && ny >= 0 && set.contains(&(nx as u32, ny as u32))
                })
            })
        })
        .collect()
}

fn px(image: &image::RgbaImage, p: Vec2) -> [u8; 3] {
    let q = image.get_pixel(p.x as u32, p.y as u32).0;
    [q[0], q[1], q[2]]
}

#[test]
fn splat_and_sprites_put_the_same_flakes_on_the_same_pixels_and_the_ground_hides_one() {
    let headless = Headless::new(W, H).unwrap();
    let cam = pinhole((W, H));
    let flakes = small_flakes(&cam);
    let hidden = flakes.len() - 1;
    let mut images = Vec::new();
    for render in [ParticleRender::Sprites, ParticleRender::Splat] {
        let mut s = session(&headless, flakes.clone(), render);
        let image = draw(&headless, &mut s, (W, H));
        assert_eq!(s.particle_render().mode.to_string(), render.to_string());
        if render == ParticleRender::Splat {
            let stages = s.frame((W, H)).unwrap();
            assert!(
                ran(&stages, app::SPLAT_STAGE),
                "the splat runs as its own stage"
            );
            assert!(
                ran(&stages, app::COMPOSITE_STAGE),
                "the composite's GPU time is reported"
            );
            assert_eq!(s.splat_size(), Some((W, H)));
        }
        images.push(image);
    }
    let mut base_session = session(&headless, Vec::new(), ParticleRender::Sprites);
    let base = draw(&headless, &mut base_session, (W, H));
    drop(base_session);

    let background = rgb(Palette::default().background);
    let mut bad = Vec::new();
    for (i, f) in flakes.iter().enumerate() {
        let (centre, _) = cam.project(f.position.into());
        for (image, name) in images.iter().zip(["sprites", "splat"]) {
            let got = classify(px(image, centre), background);
            let expected = if i == hidden {
                Class::Terrain
            } else {
                Class::Particle
            };
            if got != expected {
                bad.push(format!(
                    "{name}: flake {i} at {centre}: {got:?} {:?}, expected {expected:?}",
                    px(image, centre)
                ));
            }
        }
        if i != hidden {
            let (a, b) = (px(&images[0], centre), px(&images[1], centre));
            if (0..3).any(|c| a[c].abs_diff(b[c]) > 3) {
                bad.push(format!(
                    "flake {i}: sprites {a:?}, splat {b:?} in its middle"
                ));
            }
        }
    }
    let sprites = changed(&images[0], &base);
    let splat = changed(&images[1], &base);
    assert!(sprites.len() > 100, "{} flake pixels", sprites.len());
    let lonely_sprites = within_a_pixel(&sprites, &splat);
    let lonely_splat = within_a_pixel(&splat, &sprites);
    if !lonely_sprites.is_empty() || !lonely_splat.is_empty() {
        bad.push(format!(
            "flake pixels without a match within a pixel: sprites {lonely_sprites:?}, splat \
             {lonely_splat:?}"
        ));
    }
    if !bad.is_empty() {
        for (image, name) in images.iter().zip(["sprites", "splat"]) {
            image
                .save(std::env::temp_dir().join(format!("snowsim-splat-vs-{name}.png")))
                .ok();
        }
        panic!("{}", bad.join("\n"));
    }
}

/// A parcel nearer than `ParcelFlakes::distance` is drawn as its flakes, alike by sprites and
/// by the splat kernel: a flake at each place the hash puts one (computed here from
/// `ParcelFlakes::flake_offset` and projected by the pinhole model), the parcel's own middle
/// empty where no flake falls, and the two paths' flake pixels within a pixel of each other.
/// Beyond the distance the same parcel is one disc again.
#[test]
fn a_near_parcel_is_drawn_as_its_flakes_alike_by_sprites_and_splat() {
    let headless = Headless::new(W, H).unwrap();
    let cam = pinhole((W, H));
    let centre = Vec3::new(GROUND / 2.0, GROUND / 2.0, 12.0);
    let d = (centre - cam.eye).length();
    let (flakes, spread) = (12u32, 5.0f32);
    // Each flake 4 pixels wide at the parcel's depth (the parcel's radius over √12).
    let depth = cam.project(centre).1;
    let radius = (flakes as f32).sqrt() * 2.0 / cam.pixels(1.0, depth);
    let parcel = Particle::new(centre.into(), radius);
    let near = ParcelFlakes {
        flakes,
        spread,
        distance: 4.0 * d,
    };
    assert!(near.applies_at(d), "the parcel is within the distance");
    assert_eq!(near.spread_at(d), spread, "within half the distance");
    let expected: Vec<Vec2> = (0..flakes)
        .map(|j| {
            let o = Vec3::from(ParcelFlakes::flake_offset(radius, j));
            cam.project(centre + spread * o).0
        })
        .collect();
    let background = rgb(Palette::default().background);
    let mut base_session = session(&headless, Vec::new(), ParticleRender::Sprites);
    let base = draw(&headless, &mut base_session, (W, H));
    drop(base_session);
    let mut bad = Vec::new();
    let mut images = Vec::new();
    for render in [ParticleRender::Sprites, ParticleRender::Splat] {
        let views = Views {
            parcels: near,
            ..Views::default()
        };
        let mut s = session_viewing(&headless, vec![parcel], render, InteropMode::Copy, views);
        let image = draw(&headless, &mut s, (W, H));
        for (j, p) in expected.iter().enumerate() {
            if classify(px(&image, *p), background) != Class::Particle {
                bad.push(format!("{render}: flake {j} at {p}: {:?}", px(&image, *p)));
            }
        }
        let middle = cam.project(centre).0;
        let nearest = expected
            .iter()
            .map(|p| p.distance(middle))
            .fold(f32::INFINITY, f32::min);
        if nearest > 4.0 && px(&image, middle) != px(&base, middle) {
            bad.push(format!("{render}: the parcel's middle {middle} is drawn"));
        }
        images.push(image);
    }
    let (sprites, splat) = (changed(&images[0], &base), changed(&images[1], &base));
    assert!(
        sprites.len() >= flakes as usize * 4,
        "{} flake pixels",
        sprites.len()
    );
    let (a, b) = (
        within_a_pixel(&sprites, &splat),
        within_a_pixel(&splat, &sprites),
    );
    if !a.is_empty() || !b.is_empty() {
        bad.push(format!(
            "unmatched flake pixels: sprites {a:?}, splat {b:?}"
        ));
    }
    // Beyond the distance: one disc, its middle drawn.
    let far = ParcelFlakes {
        distance: 0.5 * d,
        ..near
    };
    assert!(!far.applies_at(d), "the parcel is beyond the distance");
    let views = Views {
        parcels: far,
        ..Views::default()
    };
    let mut s = session_viewing(
        &headless,
        vec![parcel],
        ParticleRender::Sprites,
        InteropMode::Copy,
        views,
    );
    let image = draw(&headless, &mut s, (W, H));
    let middle = cam.project(centre).0;
    if classify(px(&image, middle), background) != Class::Particle {
        bad.push(format!(
            "beyond the distance the parcel's middle is {:?}",
            px(&image, middle)
        ));
    }
    if !bad.is_empty() {
        for (image, name) in images.iter().zip(["sprites", "splat"]) {
            image
                .save(std::env::temp_dir().join(format!("snowsim-parcel-flakes-{name}.png")))
                .ok();
        }
        panic!("{}", bad.join("\n"));
    }
}

#[test]
fn flakes_wider_than_the_splat_cap_are_still_drawn() {
    // The fixed scene's four flakes are 12 to 20 px wide: all go through the overflow list.
    let (transfer, _) =
        render_fixed_scene_with(&default_device(), InteropMode::Copy, ParticleRender::Splat)
            .unwrap();
    assert_eq!(transfer, Transfer::Copy);

    // More wide flakes than the overflow list first holds (256): it grows, all are drawn.
    let headless = Headless::new(W, H).unwrap();
    let cam = pinhole((W, H));
    let diameter = MAX_SPLAT_PIXELS + 4.0;
    let centres: Vec<Vec2> = (0..18)
        .flat_map(|j| (0..22).map(move |i| Vec2::new(8.5 + 14.0 * i as f32, 8.5 + 13.0 * j as f32)))
        .collect();
    assert!(centres.len() > 256);
    let flakes: Vec<Particle> = centres
        .iter()
        .map(|c| at_pixel(&cam, c.x, c.y, 30.0, diameter))
        .collect();
    let mut s = session(&headless, flakes, ParticleRender::Splat);
    let image = draw(&headless, &mut s, (W, H));
    let background = rgb(Palette::default().background);
    let missing: Vec<Vec2> = centres
        .iter()
        .copied()
        .filter(|&c| classify(px(&image, c), background) != Class::Particle)
        .collect();
    assert!(missing.is_empty(), "wide flakes not drawn at {missing:?}");
    // Between the flakes, the scene shows through.
    let gap = Vec2::new(8.5 + 7.0, 8.5 + 6.5);
    assert_ne!(classify(px(&image, gap), background), Class::Particle);
}

#[test]
fn a_new_frame_size_reallocates_the_splat_image_and_still_draws_right() {
    let headless = Headless::new(W, H).unwrap();
    let full = pinhole((W, H));
    // 6 px wide at full size, 3 px at half size: under the cap and opaque in their middle.
    let flakes: Vec<Particle> = (0..4)
        .flat_map(|j| (0..5).map(move |i| (i, j)))
        .map(|(i, j)| {
            at_pixel(
                &full,
                40.0 + 60.0 * i as f32,
                40.0 + 50.0 * j as f32,
                30.0,
                6.0,
            )
        })
        .collect();
    let mut s = session(&headless, flakes.clone(), ParticleRender::Splat);
    let background = rgb(Palette::default().background);
    for size in [(W, H), (W / 2, H / 2), (W / 2 + 37, H / 2 + 11), (W, H)] {
        let image = draw(&headless, &mut s, size);
        assert_eq!(
            s.splat_size(),
            Some(size),
            "the image follows the frame size"
        );
        let cam = pinhole(size);
        for f in &flakes {
            let (centre, _) = cam.project(f.position.into());
            let got = classify(px(&image, centre), background);
            assert_eq!(
                got,
                Class::Particle,
                "{size:?}: flake at {centre} is {:?}",
                px(&image, centre)
            );
        }
    }
    // A redraw at another size (a window resized while paused) splats again first.
    s.redraw((W / 3, H / 3)).unwrap();
    assert_eq!(s.splat_size(), Some((W / 3, H / 3)));
}

/// The splat image is reallocated at every new frame size: over 100 resizes and resets (`R`)
/// must leave the open fds (external mode takes fresh ones per buffer) and the device memory in
/// use where they were. Through `--interop auto`: external memory where the device offers it
/// (the H100), copy here.
#[test]
fn resizes_and_resets_in_splat_mode_leak_no_fd_and_no_device_memory() {
    // The fd count is the process's: other tests running beside this one would move it, so
    // the count is taken in a process of its own (this test binary, this test only).
    const CHILD: &str = "SNOWSIM_SPLAT_LEAK_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let name =
            "render::splat::resizes_and_resets_in_splat_mode_leak_no_fd_and_no_device_memory";
        let out = Command::new(std::env::current_exe().unwrap())
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let log = text(&out);
        assert!(out.status.success() && log.contains("1 passed"), "{log}");
        println!("{}", String::from_utf8_lossy(&out.stdout));
        return;
    }
    let headless = Headless::new(W, H).unwrap();
    let cam = pinhole((W, H));
    let mut s = session_with(
        &headless,
        small_flakes(&cam),
        ParticleRender::Splat,
        InteropMode::Auto,
    );
    let open_fds = || std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let sizes = [(W, H), (W / 2, H / 2), (W - 3, H - 7)];
    let cycle = |s: &mut Session, i: usize| {
        s.frame(sizes[i % sizes.len()]).unwrap();
        assert_eq!(s.action(Action::Reset).as_deref(), Some("reset"));
    };
    for i in 0..sizes.len() {
        cycle(&mut s, i);
    }
    let (fds, memory) = (open_fds(), s.context().allocated_bytes());
    // 102 frames: more than 100 resizes, ending at the size measured before.
    for i in 0..102 {
        cycle(&mut s, i);
    }
    assert_eq!(open_fds(), fds, "open fds after 100 resizes and resets");
    assert_eq!(
        s.context().allocated_bytes(),
        memory,
        "device memory in use"
    );
    println!("interop {}: {fds} fds before and after", s.interop());
}

#[test]
fn auto_measures_both_modes_then_keeps_one_and_says_why() {
    let headless = Headless::new(W, H).unwrap();
    let cam = pinhole((W, H));
    let mut s = session(&headless, small_flakes(&cam), ParticleRender::Auto);
    let mut modes = Vec::new();
    let mut notices = Vec::new();
    for _ in 0..app::PROBE_WARMUP * 2 + app::PROBE_FRAMES * 2 + 2 {
        s.frame((W, H)).unwrap();
        modes.push(s.particle_render().mode);
        notices.extend(s.notice());
    }
    assert!(modes.contains(&RenderMode::Sprites) && modes.contains(&RenderMode::Splat));
    assert_eq!(notices.len(), 1, "{notices:?}");
    let choice = s.particle_render();
    assert!(
        choice.reason.contains("ms with splat") && choice.reason.contains("ms with sprites"),
        "{choice}"
    );
    assert_eq!(s.splat_size().is_some(), choice.mode == RenderMode::Splat);
    // Whatever it kept, it draws the flakes.
    let image = draw(&headless, &mut s, (W, H));
    let f = small_flakes(&cam)[0];
    let (centre, _) = cam.project(f.position.into());
    assert_eq!(
        classify(px(&image, centre), rgb(Palette::default().background)),
        Class::Particle
    );
}

#[test]
fn run_records_the_particle_render_mode_and_why() {
    let out = snowsim()
        .arg("run")
        .args(SMALL)
        .args([
            "--headless",
            "--frames",
            "3",
            "--particle-render",
            "splat",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["particle_render"], "splat", "{}", text(&out));
    assert_eq!(json["particle_render_reason"], "as asked");
    let stages = json["stages"].as_array().unwrap();
    assert!(
        stages.iter().any(|s| s["stage"] == "splat"),
        "{}",
        text(&out)
    );

    let out = snowsim().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("--particle-render <MODE>") && help.contains("cl_khr_int64_extended_atomics"),
        "{help}"
    );

    let frames = (2 * (app::PROBE_WARMUP + app::PROBE_FRAMES) + 2).to_string();
    let out = snowsim()
        .arg("run")
        .args(SMALL)
        .args(["--headless", "--frames", &frames])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("particle render: ")
            && stdout.contains("ms with splat")
            && stdout.contains("ms with sprites"),
        "auto logs its choice with both timings:\n{}",
        text(&out)
    );
}

/// The line of sight through the centre of pixel `(x, y)` (from the top-left) of the camera
/// model: the view depth at which it meets the ground plane z = 0, `None` when it does not.
fn ground_depth(cam: &Pinhole, x: f32, y: f32) -> Option<f32> {
    let nx = 2.0 * (x + 0.5) / cam.size.x - 1.0;
    let ny = 1.0 - 2.0 * (y + 0.5) / cam.size.y;
    let aspect = cam.size.x / cam.size.y;
    let ray = cam.forward + nx * cam.tan_half * aspect * cam.right + ny * cam.tan_half * cam.up;
    let t = -cam.eye.z / ray.z;
    let hit = cam.eye + t * ray;
    (t > 0.0 && (0.0..=GROUND).contains(&hit.x) && (0.0..=GROUND).contains(&hit.y)).then_some(t)
}

/// Many faint flakes stacked on one pixel's line of sight blend as sprites over one another:
/// `k` flakes of coverage alpha `a` each (drawn at the 1.5 px floor, projecting smaller) give
/// the pixel `behind · (1 − A) + snow · A` with `A = 1 − (1 − a)^k`, computed here from the
/// camera model, against the sky and in front of the ground, with splatting (coverage counters)
/// and, within the 8-bit rounding of a blend per flake, with sprites. Splatting that kept only
/// the nearest flake showed `A = a` on every pixel.
#[test]
fn many_faint_flakes_on_a_line_of_sight_add_up_as_sprites_do() {
    let headless = Headless::new(W, H).unwrap();
    let cam = pinhole((W, H));
    let mut base_session = session(&headless, Vec::new(), ParticleRender::Sprites);
    let base = draw(&headless, &mut base_session, (W, H));
    drop(base_session);
    let background = rgb(Palette::default().background);
    let snow = rgb(Palette::default().snow);

    // Each flake projects 0.45 px and is drawn 1.5 px wide: alpha 0.09 under its centre.
    let (projected, floor) = (0.45f32, Views::default().min_particle_pixels);
    let a = (projected / floor).powi(2);
    // (pixel, flakes on its line of sight, whether the sky is behind it).
    let mut stacks = Vec::new();
    for (i, k) in [1usize, 3, 8, 20].into_iter().enumerate() {
        stacks.push(((40.0 + 60.0 * i as f32, 12.0), k, true));
        stacks.push(((112.0 + 30.0 * i as f32, 140.0), k, false));
    }
    let mut flakes = Vec::new();
    for &((x, y), k, sky) in &stacks {
        let ground = ground_depth(&cam, x, y);
        assert_eq!(
            ground.is_none(),
            sky,
            "pixel ({x}, {y}): sky {sky}, ground at {ground:?}"
        );
        assert_eq!(
            classify(px(&base, Vec2::new(x, y)), background) == Class::Background,
            sky,
            "pixel ({x}, {y}) of the bare scene"
        );
        // Nearer than the ground (or 60 m) and well apart along the line.
        let far = ground.unwrap_or(60.0) * 0.9;
        for j in 0..k {
            let depth = far * (0.35 + 0.6 * j as f32 / k as f32);
            flakes.push(at_pixel(&cam, x + 0.5, y + 0.5, depth, projected));
        }
    }

    let mut bad = Vec::new();
    let mut images = Vec::new();
    for render in [ParticleRender::Splat, ParticleRender::Sprites] {
        let mut s = session(&headless, flakes.clone(), render);
        let image = draw(&headless, &mut s, (W, H));
        assert_eq!(s.particle_render().mode.to_string(), render.to_string());
        for &((x, y), k, _) in &stacks {
            let behind = px(&base, Vec2::new(x, y));
            let opacity = 1.0 - (1.0 - a).powi(k as i32);
            let expected: [f32; 3] = std::array::from_fn(|c| {
                f32::from(behind[c]) * (1.0 - opacity) + f32::from(snow[c]) * opacity
            });
            let got = px(&image, Vec2::new(x, y));
            // Splatting blends once, from the exact sum; sprites round at every flake.
            let tolerance = if render == ParticleRender::Splat {
                2.0
            } else {
                3.0 + 0.5 * k as f32
            };
            if (0..3).any(|c| (f32::from(got[c]) - expected[c]).abs() > tolerance) {
                bad.push(format!(
                    "{render}: {k} flakes of alpha {a:.3} at ({x}, {y}) over {behind:?}: \
                     {got:?}, expected {expected:?} (opacity {opacity:.3})"
                ));
            }
        }
        images.push(image);
    }
    if !bad.is_empty() {
        for (image, name) in images.iter().zip(["splat", "sprites"]) {
            image
                .save(std::env::temp_dir().join(format!("snowsim-faint-stack-{name}.png")))
                .ok();
        }
        panic!("{}", bad.join("\n"));
    }
}
