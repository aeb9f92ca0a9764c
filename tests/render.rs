//! The renderer and the OpenCL → OpenGL paths on real drivers: headless EGL (Mesa llvmpipe in
//! CI), a window under Xvfb, and the `snowsim run` command's errors.
//!
//! The fixed-scene tests project known points with a camera model written here, independently
//! of the renderer's matrices, and classify the pixels of the rendered image.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use glam::{Vec2, Vec3};
use snowsim::cl::{DeviceEntry, DeviceSelector, list_devices};
use snowsim::interop::{
    self, AnalyticWind, FixedParticles, Flakes, FlakesConfig, InteropMode, Session, SessionConfig,
    Transfer,
};
use snowsim::render::testscene::{self, SceneBox};
use snowsim::render::{
    Action, FrameDriver, Headless, Heightfield, OrbitCamera, Palette, TerrainMesh, Views,
    read_frame,
};

const W: u32 = 320;
const H: u32 = 240;

fn snowsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_snowsim"))
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snowsim-render-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Small, fast settings for command-line runs.
const SMALL: [&str; 6] = [
    "--size",
    "160x120",
    "--particles",
    "2048",
    "--terrain-cells",
    "16",
];

// ---------------------------------------------------------------------------------------------
// The fixed scene: a flat square of bare ground, four large particles, a known camera.

const GROUND: f32 = 40.0;
/// (position, radius): three over the ground, one beyond its far edge against the sky.
const PARTICLES: [([f32; 3], f32); 4] = [
    ([12.0, 20.0, 6.0], 2.5),
    ([28.0, 12.0, 4.0], 2.0),
    ([22.0, 30.0, 9.0], 3.0),
    ([20.0, -4.0, 14.0], 2.5),
];

fn camera() -> OrbitCamera {
    OrbitCamera {
        target: Vec3::new(GROUND / 2.0, GROUND / 2.0, 0.0),
        yaw: 80f32.to_radians(),
        pitch: 35f32.to_radians(),
        distance: 60.0,
        fovy: 50f32.to_radians(),
        near: 1.0,
        far: 500.0,
    }
}

/// A pinhole camera built from the orbit parameters alone: where a world point lands in the
/// image (pixels, origin top-left) and how far in front of the eye it is along the view axis.
struct Pinhole {
    eye: Vec3,
    forward: Vec3,
    right: Vec3,
    up: Vec3,
    tan_half: f32,
    aspect: f32,
}

impl Pinhole {
    fn new(c: &OrbitCamera) -> Self {
        let eye = c.target
            + c.distance
                * Vec3::new(
                    c.pitch.cos() * c.yaw.cos(),
                    c.pitch.cos() * c.yaw.sin(),
                    c.pitch.sin(),
                );
        let forward = (c.target - eye).normalize();
        let right = forward.cross(Vec3::Z).normalize();
        let up = right.cross(forward);
        Self {
            eye,
            forward,
            right,
            up,
            tan_half: (c.fovy / 2.0).tan(),
            aspect: W as f32 / H as f32,
        }
    }

    fn project(&self, p: Vec3) -> (Vec2, f32) {
        let d = p - self.eye;
        let depth = d.dot(self.forward);
        let x = d.dot(self.right) / (depth * self.tan_half * self.aspect);
        let y = d.dot(self.up) / (depth * self.tan_half);
        (
            Vec2::new((x + 1.0) / 2.0 * W as f32, (1.0 - y) / 2.0 * H as f32),
            depth,
        )
    }

    /// Radius in pixels of a sphere of radius `r` at view depth `depth`.
    fn pixels(&self, r: f32, depth: f32) -> f32 {
        r * (H as f32 / 2.0) / (depth * self.tan_half)
    }
}

/// Signed distance (pixels) from `p` into the convex polygon `poly` (positive inside).
fn inside_distance(poly: &[Vec2], p: Vec2) -> f32 {
    let area: f32 = (0..poly.len())
        .map(|i| poly[i].perp_dot(poly[(i + 1) % poly.len()]))
        .sum();
    let sign = area.signum();
    (0..poly.len())
        .map(|i| {
            let (a, b) = (poly[i], poly[(i + 1) % poly.len()]);
            sign * (b - a).perp_dot(p - a) / (b - a).length()
        })
        .fold(f32::INFINITY, f32::min)
}

fn rgb(c: [f32; 3]) -> [u8; 3] {
    c.map(|v| (v * 255.0).round() as u8)
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Class {
    Background,
    Terrain,
    Particle,
    Other,
}

fn classify(px: [u8; 3], background: [u8; 3]) -> Class {
    let [r, g, b] = px;
    if px.iter().zip(background).all(|(&a, b)| a.abs_diff(b) <= 2) {
        Class::Background
    } else if r.min(g).min(b) >= 215 {
        Class::Particle
    } else if g > r && g > b && r.max(g).max(b) < 180 {
        Class::Terrain
    } else {
        Class::Other
    }
}

/// Renders the fixed scene headless with `mode` on `device` (particles reach GL only through
/// the interop path: written by OpenCL, then shared or copied), checks every sampled pixel and
/// returns the path used.
fn render_fixed_scene(device: &DeviceEntry, mode: InteropMode) -> Result<Transfer, interop::Error> {
    let headless = Headless::new(W, H)?;
    let ground = Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0)?;
    let terrain = TerrainMesh::from_heightfield(&ground)?;
    let particles: Vec<[f32; 4]> = PARTICLES
        .iter()
        .map(|&([x, y, z], r)| [x, y, z, r])
        .collect();
    let config = SessionConfig {
        interop: mode,
        terrain,
        scene: SceneBox {
            lo: Vec3::ZERO,
            hi: Vec3::new(GROUND, GROUND, 20.0),
        },
        views: Views::default(),
        paused: true,
        dt: 0.0,
        camera: Some(camera()),
    };
    let mut session = Session::new(
        headless.setup(),
        device,
        config,
        Box::new(FixedParticles::new(particles)),
        None,
    )?;
    let transfer = session.interop().transfer;
    let stages = session
        .frame((W, H))
        .map_err(|e| interop::Error::Internal(e.to_string()))?;
    assert_eq!(
        stages.kernel,
        std::time::Duration::ZERO,
        "paused: no kernel"
    );
    let image = read_frame(&headless.setup().gl, (W, H))?;

    let background = rgb(Palette::default().background);
    let cam = Pinhole::new(&camera());
    let corners: Vec<Vec2> = [[0.0, 0.0], [GROUND, 0.0], [GROUND, GROUND], [0.0, GROUND]]
        .iter()
        .map(|&[x, y]| cam.project(Vec3::new(x, y, 0.0)).0)
        .collect();
    let discs: Vec<(Vec2, f32)> = PARTICLES
        .iter()
        .map(|&(p, r)| {
            let (centre, depth) = cam.project(Vec3::from(p));
            (centre, cam.pixels(r, depth))
        })
        .collect();
    let pixel = |p: Vec2| {
        assert!(
            p.x >= 0.0 && p.y >= 0.0 && p.x < W as f32 && p.y < H as f32,
            "{p} is outside the image"
        );
        let (x, y) = (p.x as u32, p.y as u32);
        let px = image.get_pixel(x, y).0;
        [px[0], px[1], px[2]]
    };

    let mut bad = Vec::new();
    // Particles: the middle of each projected disc is a flake, whatever is behind it.
    for (i, &(centre, radius)) in discs.iter().enumerate() {
        assert!(radius > 6.0, "particle {i} too small to test: {radius} px");
        for offset in [
            Vec2::ZERO,
            Vec2::new(0.5, 0.0),
            Vec2::new(-0.5, 0.0),
            Vec2::new(0.0, 0.5),
            Vec2::new(0.0, -0.5),
        ] {
            let p = centre + offset * radius;
            let got = classify(pixel(p), background);
            if got != Class::Particle {
                bad.push(format!("particle {i} at {p}: {got:?} {:?}", pixel(p)));
            }
        }
    }
    assert!(
        inside_distance(&corners, discs[3].0) < -2.0 * discs[3].1,
        "the fourth particle must be seen against the sky"
    );
    // Everything else: ground inside the projected square, sky outside, on an 8-pixel grid,
    // skipping a margin around the square's edges and the discs.
    let mut counts = [0usize; 2];
    for y in (4..H).step_by(8) {
        for x in (4..W).step_by(8) {
            let p = Vec2::new(x as f32 + 0.5, y as f32 + 0.5);
            if discs.iter().any(|&(c, r)| c.distance(p) < 1.3 * r + 3.0) {
                continue;
            }
            let d = inside_distance(&corners, p);
            let expected = if d > 3.0 {
                Class::Terrain
            } else if d < -3.0 {
                Class::Background
            } else {
                continue;
            };
            counts[(expected == Class::Terrain) as usize] += 1;
            let got = classify(pixel(p), background);
            if got != expected {
                bad.push(format!(
                    "{p}: expected {expected:?}, got {got:?} {:?}",
                    pixel(p)
                ));
            }
        }
    }
    assert!(
        counts[0] > 200 && counts[1] > 200,
        "too few pixels checked: {counts:?}"
    );
    if !bad.is_empty() {
        let path = std::env::temp_dir().join(format!("snowsim-fixed-scene-{transfer}.png"));
        image.save(&path).ok();
        panic!(
            "{} of {} pixels misclassified ({transfer} path; image in {}):\n{}",
            bad.len(),
            counts[0] + counts[1] + 20,
            path.display(),
            bad.join("\n")
        );
    }
    drop(session);
    Ok(transfer)
}

fn default_device() -> DeviceEntry {
    let devices = list_devices().expect("an OpenCL device");
    DeviceSelector::Default.select(&devices).unwrap().clone()
}

#[test]
fn fixed_scene_through_the_copy_path_shows_ground_particles_and_sky_where_projected() {
    let device = default_device();
    let transfer = render_fixed_scene(&device, InteropMode::Copy).unwrap();
    assert_eq!(transfer, Transfer::Copy);
}

#[test]
fn fixed_scene_through_the_share_path_where_a_device_offers_it() {
    let devices = list_devices().expect("an OpenCL device");
    let sharing: Vec<&DeviceEntry> = devices.iter().filter(|d| d.info.gl_sharing).collect();
    if sharing.is_empty() {
        println!(
            "skipped: no OpenCL device offers cl_khr_gl_sharing ({}), so only the copy path \
             can be tested here",
            devices
                .iter()
                .map(|d| d.info.label())
                .collect::<Vec<_>>()
                .join("; ")
        );
        return;
    }
    for device in sharing {
        match render_fixed_scene(device, InteropMode::Share) {
            Ok(transfer) => assert_eq!(transfer, Transfer::Share),
            Err(interop::Error::ShareImpossible { device, reason }) => {
                println!("skipped share on {device}: {reason}");
            }
            Err(e) => panic!("share path on {}: {e}", device.info.label()),
        }
    }
}

#[test]
fn session_steps_flakes_copies_each_frame_and_obeys_the_keys() {
    let device = default_device();
    let headless = Headless::new(W, H).unwrap();
    let scene = testscene::scene_box();
    let flakes = Flakes::new(FlakesConfig::new(1000, scene)).unwrap();
    let wind = AnalyticWind::new([4, 3, 4], scene).unwrap();
    let mut session = Session::new(
        headless.setup(),
        &device,
        SessionConfig {
            interop: InteropMode::Auto,
            terrain: testscene::terrain(8).unwrap(),
            scene,
            views: Views::default(),
            paused: false,
            dt: 0.1,
            camera: None,
        },
        Box::new(flakes),
        Some(Box::new(wind)),
    )
    .unwrap();
    if session.interop().transfer != Transfer::Copy {
        println!("skipped: the default device shares buffers with GL, nothing is copied");
        return;
    }
    let before = session.copied_bytes();
    let stages = session.frame((W, H)).unwrap();
    assert!(stages.kernel > std::time::Duration::ZERO);
    assert!(stages.transfer > std::time::Duration::ZERO);
    // Wind and pressure views are off: only the particles travel.
    assert_eq!(session.copied_bytes() - before, 1000 * 16);
    let first = read_frame(&headless.setup().gl, (W, H)).unwrap();

    assert_eq!(
        session.action(Action::ToggleWind).as_deref(),
        Some("wind view on")
    );
    let before = session.copied_bytes();
    session.frame((W, H)).unwrap();
    assert_eq!(session.copied_bytes() - before, 1000 * 16 + 4 * 3 * 4 * 32);
    assert_eq!(
        session.action(Action::ToggleWind).as_deref(),
        Some("wind view off")
    );
    assert_eq!(
        session.action(Action::TogglePressure).as_deref(),
        Some("pressure view on")
    );
    assert!(
        session
            .action(Action::ToggleSorting)
            .unwrap()
            .starts_with("sorting on")
    );
    assert!(session.status().contains("sorting"));

    assert_eq!(
        session.action(Action::TogglePause).as_deref(),
        Some("paused")
    );
    let time = session.time();
    let stages = session.frame((W, H)).unwrap();
    assert_eq!(stages.kernel, std::time::Duration::ZERO);
    assert_eq!(session.time(), time, "paused: time stands still");
    assert!(session.status().contains("paused"));
    assert_eq!(
        session.action(Action::TogglePause).as_deref(),
        Some("running")
    );
    session.frame((W, H)).unwrap();
    let moved = read_frame(&headless.setup().gl, (W, H)).unwrap();
    assert_ne!(first.as_raw(), moved.as_raw(), "the flakes fall");

    let home = *session.camera_mut();
    assert_eq!(session.action(Action::Orbit { dx: 50.0, dy: 0.0 }), None);
    session.action(Action::Zoom(2.0));
    assert_ne!(*session.camera_mut(), home);
    assert_eq!(session.action(Action::Reset).as_deref(), Some("reset"));
    assert_eq!(*session.camera_mut(), home);
    assert_eq!(session.time(), 0.0);
}

// ---------------------------------------------------------------------------------------------
// `snowsim run` as a user runs it.

#[test]
fn headless_run_writes_the_screenshot_and_reports_mode_fps_and_stages() {
    let dir = temp_dir("headless");
    let shot = dir.join("shot.png");
    let out = snowsim()
        .args(["run", "--headless", "--frames", "4", "--interop", "copy"])
        .args(SMALL)
        .arg("--screenshot")
        .arg(&shot)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "interop: copy (requested copy",
        "EGL device platform",
        "FPS",
        "kernel",
        "transfer",
        "draw",
    ] {
        assert!(
            stdout.contains(needle),
            "`{needle}` missing:\n{}",
            text(&out)
        );
    }
    let image = image::open(&shot).unwrap().to_rgba8();
    assert_eq!(image.dimensions(), (160, 120));
    let background = rgb(Palette::default().background);
    let classes: Vec<Class> = image
        .pixels()
        .map(|p| classify([p[0], p[1], p[2]], background))
        .collect();
    for class in [Class::Background, Class::Particle] {
        assert!(
            classes.contains(&class),
            "no {class:?} pixel in the default scene"
        );
    }
    assert!(
        classes.iter().filter(|&&c| c != Class::Background).count() > 2000,
        "the terrain is missing"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn headless_auto_picks_copy_on_a_device_without_sharing_and_json_records_it() {
    let devices = list_devices().expect("an OpenCL device");
    let Some(plain) = devices.iter().find(|d| !d.info.gl_sharing) else {
        println!("skipped: every OpenCL device here offers cl_khr_gl_sharing");
        return;
    };
    let index = plain.info.index.to_string();
    let out = snowsim()
        .args([
            "run",
            "--headless",
            "--frames",
            "3",
            "--json",
            "--device",
            &index,
        ])
        .args(SMALL)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(report["interop"], "copy");
    assert!(
        report["interop_reason"]
            .as_str()
            .unwrap()
            .contains("does not offer cl_khr_gl_sharing"),
        "{report}"
    );
    assert_eq!(report["frames"], 3);
    assert_eq!(report["particles"], 2048);
    for key in [
        "fps",
        "kernel_ms",
        "kernel_device_ms",
        "transfer_ms",
        "draw_ms",
    ] {
        assert!(report[key].as_f64().is_some(), "{key} missing: {report}");
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("interop: copy"));
}

#[test]
fn record_writes_every_frame_as_numbered_png() {
    let dir = temp_dir("record");
    let out = snowsim()
        .args(["run", "--headless", "--frames", "3", "--record"])
        .arg(dir.join("frames"))
        .args(SMALL)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let mut names: Vec<String> = std::fs::read_dir(dir.join("frames"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["frame_00000.png", "frame_00001.png", "frame_00002.png"]
    );
    let first = image::open(dir.join("frames/frame_00000.png")).unwrap();
    let last = image::open(dir.join("frames/frame_00002.png")).unwrap();
    assert_ne!(
        first.as_bytes(),
        last.as_bytes(),
        "the flakes must move between frames"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn window_under_xvfb_runs_frames_and_writes_the_screenshot() {
    if Command::new("xvfb-run").arg("--help").output().is_err() {
        println!("skipped: xvfb-run is not installed (Debian: apt-get install xvfb)");
        return;
    }
    let dir = temp_dir("window");
    let shot = dir.join("window.png");
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 640x480x24"])
        .arg(env!("CARGO_BIN_EXE_snowsim"))
        .args([
            "run",
            "--frames",
            "30",
            "--no-vsync",
            "--wind",
            "--pressure",
        ])
        .args(SMALL)
        .arg("--screenshot")
        .arg(&shot)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("window on X11"), "{}", text(&out));
    assert!(stdout.contains("interop: "), "{}", text(&out));
    assert!(stdout.contains("30 frames"), "{}", text(&out));
    let image = image::open(&shot).unwrap().to_rgba8();
    assert_eq!(image.dimensions(), (160, 120));
    let background = rgb(Palette::default().background);
    let drawn = image
        .pixels()
        .filter(|p| classify([p[0], p[1], p[2]], background) != Class::Background)
        .count();
    assert!(drawn > 2000, "only {drawn} pixels differ from the sky");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_display_without_headless_is_a_clear_error() {
    let out = snowsim()
        .args(["run", "--frames", "1"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no display") && err.contains("DISPLAY") && err.contains("--headless"),
        "{}",
        text(&out)
    );
}

#[test]
fn interop_share_on_a_device_without_sharing_is_a_clear_error() {
    let devices = list_devices().expect("an OpenCL device");
    let Some(plain) = devices.iter().find(|d| !d.info.gl_sharing) else {
        println!("skipped: every OpenCL device here offers cl_khr_gl_sharing");
        return;
    };
    let index = plain.info.index.to_string();
    let out = snowsim()
        .args(["run", "--headless", "--frames", "1", "--interop", "share"])
        .args(["--device", &index])
        .args(SMALL)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cl_khr_gl_sharing")
            && err.contains(&plain.info.name)
            && err.contains("--interop copy"),
        "{}",
        text(&out)
    );
    assert!(!err.contains("panicked"), "{}", text(&out));
}

fn run_with_shaders(dir: &Path) -> Output {
    snowsim()
        .args(["run", "--headless", "--frames", "1"])
        .args(SMALL)
        .env("SNOWSIM_SHADER_DIR", dir)
        .output()
        .unwrap()
}

#[test]
fn broken_shaders_report_the_gl_log_with_the_file_name() {
    let dir = temp_dir("shaders");
    std::fs::write(
        dir.join("particles.frag"),
        "#version 330 core\nout vec4 o_colour;\nvoid main() { o_colour = vec4(1.0) +; }\n",
    )
    .unwrap();
    let out = run_with_shaders(&dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("shader `particles.frag (from ")
            && err.contains("failed to compile")
            && err.contains("error"),
        "{}",
        text(&out)
    );

    // Compiles alone, but its input does not match what the vertex shader writes.
    std::fs::remove_file(dir.join("particles.frag")).unwrap();
    std::fs::write(
        dir.join("colour.frag"),
        "#version 330 core\nin vec4 v_colour;\nout vec4 o_colour;\nvoid main() { o_colour = v_colour; }\n",
    )
    .unwrap();
    let out = run_with_shaders(&dir);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("failed to link") && err.contains("wind.vert + colour.frag (from "),
        "{}",
        text(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_sizes_and_counts_are_refused() {
    for args in [
        ["--size", "0x100"],
        ["--size", "640"],
        ["--size", "99999x10"],
        ["--frames", "0"],
        ["--terrain-cells", "0"],
    ] {
        let out = snowsim()
            .args(["run", "--headless"])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {}", text(&out));
    }
}

#[test]
fn help_documents_the_keys() {
    let out = snowsim().args(["run", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "left mouse drag",
        "Space",
        "toggle vsync",
        "Esc",
        "--interop",
    ] {
        assert!(
            help.contains(needle),
            "`{needle}` missing from --help:\n{help}"
        );
    }
}
