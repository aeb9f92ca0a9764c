//! The renderer and the OpenCL → OpenGL paths on real drivers: headless EGL (Mesa llvmpipe in
//! CI), a window under Xvfb, and the `snowsim run` command: scenes, output and errors.
//!
//! The image tests project known points with camera models written here (from the orbit
//! parameters, or from a scene file's `[camera]`), independently of the renderer's matrices,
//! and classify the pixels of the rendered image.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use glam::{Vec2, Vec3};
use snowsim::app::{self, SceneView, Session, SessionConfig};
use snowsim::cl::{Context, DeviceEntry, DeviceSelector, list_devices};
use snowsim::counters::{StageTime, stage};
use snowsim::interop::{self, InteropMode, Transfer};
use snowsim::meshio::{self, ElementKind, Mesh};
use snowsim::particle::Particle;
use snowsim::render::{
    Action, FrameDriver, Headless, OrbitCamera, Palette, Renderer, TerrainMesh, Views, read_frame,
};
use snowsim::scene::{Domain, Scene};
use snowsim::sim::{self, SimSetup, Simulation};
use snowsim::splat::ParticleRender;
use snowsim::terrain::{Heightfield, SceneBox, Side, Terrain, TerrainSpec};

use crate::common::{Capability, skip};

mod film;
mod look;
mod near;
mod reference;
mod splat;

const W: u32 = 320;
const H: u32 = 240;

/// The flat scene, as `snowsim run --scene` takes it from the repository's root.
const FLAT: &str = "scenes/flat.toml";

/// `snowsim`, run from the repository's root (where the default scene's path is relative to).
fn snowsim() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_snowsim"));
    command.current_dir(env!("CARGO_MANIFEST_DIR"));
    command
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
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

/// Small, fast settings for command-line runs: the flat scene, a small frame, few flakes.
const SMALL: [&str; 6] = ["--scene", FLAT, "--size", "160x120", "--particles", "2048"];

/// The flat scene without the veil of its falling snow (`[view] veil = false`) and without
/// the flakes near the camera (`near_flakes = 0`), in `dir`: for
/// the tests that find the ground and the sky by their colours.
fn flat_without_veil(dir: &Path) -> PathBuf {
    let path = dir.join("flat.toml");
    let text = std::fs::read_to_string(repo(FLAT)).unwrap();
    assert!(
        !text.contains("[view]"),
        "flat.toml has a [view] now: merge"
    );
    std::fs::write(
        &path,
        format!("{text}\n[view]\nveil = false\nnear_flakes = 0\n"),
    )
    .unwrap();
    path
}

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

/// A pinhole camera: where a world point lands in an image of `size` pixels (origin top-left)
/// and how far in front of the eye it is along the view axis. Built from an eye, a target and
/// a vertical field of view, z up.
struct Pinhole {
    eye: Vec3,
    forward: Vec3,
    right: Vec3,
    up: Vec3,
    tan_half: f32,
    size: Vec2,
}

impl Pinhole {
    fn looking_at(eye: Vec3, target: Vec3, fovy: f32, size: (u32, u32)) -> Self {
        let forward = (target - eye).normalize();
        let right = forward.cross(Vec3::Z).normalize();
        let up = right.cross(forward);
        Self {
            eye,
            forward,
            right,
            up,
            tan_half: (fovy / 2.0).tan(),
            size: Vec2::new(size.0 as f32, size.1 as f32),
        }
    }

    /// From the orbit parameters alone (not the camera's own matrices).
    fn orbit(c: &OrbitCamera) -> Self {
        let eye = c.target
            + c.distance
                * Vec3::new(
                    c.pitch.cos() * c.yaw.cos(),
                    c.pitch.cos() * c.yaw.sin(),
                    c.pitch.sin(),
                );
        Self::looking_at(eye, c.target, c.fovy, (W, H))
    }

    fn project(&self, p: Vec3) -> (Vec2, f32) {
        let d = p - self.eye;
        let depth = d.dot(self.forward);
        let aspect = self.size.x / self.size.y;
        let x = d.dot(self.right) / (depth * self.tan_half * aspect);
        let y = d.dot(self.up) / (depth * self.tan_half);
        (
            Vec2::new((x + 1.0) / 2.0 * self.size.x, (1.0 - y) / 2.0 * self.size.y),
            depth,
        )
    }

    /// Radius in pixels of a sphere of radius `r` at view depth `depth`.
    fn pixels(&self, r: f32, depth: f32) -> f32 {
        r * (self.size.y / 2.0) / (depth * self.tan_half)
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

/// Flakes that project smaller than the sprite floor are translucent (alpha by coverage): a
/// pixel on the line from the sky's colour to the snow's, at the same fraction in every channel
/// (within rounding), is a flake seen against the sky.
fn flake_over_sky(px: [u8; 3], background: [u8; 3]) -> bool {
    let snow = rgb(Palette::default().snow);
    let alpha: Vec<f32> = (0..3)
        .map(|c| {
            (f32::from(px[c]) - f32::from(background[c]))
                / (f32::from(snow[c]) - f32::from(background[c]))
        })
        .collect();
    let (lo, hi) = alpha
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &a| (lo.min(a), hi.max(a)));
    lo > 0.0 && hi <= 1.02 && hi - lo <= 0.08
}

fn classify(px: [u8; 3], background: [u8; 3]) -> Class {
    let [r, g, b] = px;
    if px.iter().zip(background).all(|(&a, b)| a.abs_diff(b) <= 2) {
        Class::Background
    } else if r.min(g).min(b) >= 215 || flake_over_sky(px, background) {
        Class::Particle
    } else if g > r && g > b && r.max(g).max(b) < 180 {
        Class::Terrain
    } else {
        Class::Other
    }
}

/// The fixed scene's particles as the render buffer holds them.
fn fixed_particles() -> Vec<Particle> {
    PARTICLES
        .iter()
        .map(|&(position, radius)| Particle::new(position, radius))
        .collect()
}

/// Renders the fixed scene headless with `mode` on `device` (particles reach GL only through
/// the interop path: written by OpenCL, then shared, imported or copied), checks every sampled
/// pixel and returns the path used and the image.
fn render_fixed_scene(
    device: &DeviceEntry,
    mode: InteropMode,
) -> Result<(Transfer, image::RgbaImage), app::Error> {
    render_fixed_scene_with(device, mode, ParticleRender::Sprites)
}

/// [`render_fixed_scene`] with the particles drawn by `render` (its four flakes are wider than
/// the splat cap, so splatting draws them through the overflow list).
fn render_fixed_scene_with(
    device: &DeviceEntry,
    mode: InteropMode,
    render: ParticleRender,
) -> Result<(Transfer, image::RgbaImage), app::Error> {
    let headless = Headless::new(W, H)?;
    let ground = Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0)
        .expect("a flat ground");
    let terrain = TerrainMesh::from_heightfield(&ground)?;
    let particles = fixed_particles();
    let config = SessionConfig {
        interop: mode,
        terrain,
        bounds: SceneBox {
            lo: Vec3::ZERO,
            hi: Vec3::new(GROUND, GROUND, 20.0),
        },
        views: Views::default(),
        paused: true,
        camera: Some(camera()),
        particle_render: render,
        profile_every: 1,
        profile_from: 0,
    };
    let mut session = Session::new(
        headless.setup(),
        device,
        config,
        SimSetup::still(particles, Vec::new()),
    )?;
    let transfer = session.interop().transfer;
    let stages = session
        .frame((W, H))
        .map_err(|e| app::Error::Internal(e.to_string()))?;
    assert!(!ran(&stages, sim::PARTICLES_STAGE), "paused: no step");
    assert_eq!(
        ran(&stages, stage::KERNELS),
        render == ParticleRender::Splat,
        "paused: only the splat runs kernels"
    );
    let image = read_frame(&headless.setup().gl, (W, H))?;

    check_fixed_scene(&image, &transfer.to_string());
    drop(session);
    Ok((transfer, image))
}

/// Checks the fixed scene's image, drawn with the camera of [`camera`]: each particle's disc is
/// a flake, the ground's square is ground and the rest is sky; panics with the pixels that are
/// not, naming `path`.
fn check_fixed_scene(image: &image::RgbaImage, path: &str) {
    let background = rgb(Palette::default().background);
    let cam = Pinhole::orbit(&camera());
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
        let file = std::env::temp_dir().join(format!("snowsim-fixed-scene-{path}.png"));
        image.save(&file).ok();
        panic!(
            "{} of {} pixels misclassified ({path} path; image in {}):\n{}",
            bad.len(),
            counts[0] + counts[1] + 20,
            file.display(),
            bad.join("\n")
        );
    }
}

/// The devices' labels, for messages.
fn labels(devices: &[DeviceEntry]) -> String {
    devices
        .iter()
        .map(|d| d.info.label())
        .collect::<Vec<_>>()
        .join("; ")
}

fn default_device() -> DeviceEntry {
    let devices = list_devices().expect("an OpenCL device");
    DeviceSelector::Default.select(&devices).unwrap().clone()
}

#[test]
fn fixed_scene_through_the_copy_path_shows_ground_particles_and_sky_where_projected() {
    let device = default_device();
    let (transfer, _) = render_fixed_scene(&device, InteropMode::Copy).unwrap();
    assert_eq!(transfer, Transfer::Copy);
}

#[test]
fn fixed_scene_through_the_share_path_where_a_device_offers_it() {
    let devices = list_devices().expect("an OpenCL device");
    let sharing: Vec<&DeviceEntry> = devices.iter().filter(|d| d.info.gl_sharing).collect();
    if sharing.is_empty() {
        skip(
            Capability::GlSharing,
            format!(
                "no OpenCL device offers cl_khr_gl_sharing ({}), so only the copy path can be \
                 tested here",
                labels(&devices)
            ),
        );
        return;
    }
    for device in sharing {
        match render_fixed_scene(device, InteropMode::Share) {
            Ok((transfer, _)) => assert_eq!(transfer, Transfer::Share),
            Err(app::Error::Interop(interop::Error::ShareImpossible { device, reason })) => {
                skip(
                    Capability::GlSharing,
                    format!("share path on {device}: {reason}"),
                );
            }
            Err(e) => panic!("share path on {}: {e}", device.info.label()),
        }
    }
}

/// Where OpenCL, OpenGL and Vulkan all offer external memory on one GPU (NVIDIA), the fixed
/// scene drawn from Vulkan memory that OpenCL wrote equals copy mode's image pixel for pixel.
#[test]
fn fixed_scene_through_the_external_path_equals_copy_where_a_device_offers_it() {
    let devices = list_devices().expect("an OpenCL device");
    let capable: Vec<&DeviceEntry> = devices
        .iter()
        .filter(|d| {
            snowsim::cl::external::MEMORY_EXTENSIONS
                .iter()
                .all(|e| d.info.has_extension(e))
        })
        .collect();
    if capable.is_empty() {
        skip(
            Capability::ExternalMemory,
            format!(
                "no OpenCL device offers {} ({}); the Vulkan → OpenGL half of the external path \
                 is tested by vulkan_memory_imported_by_gl_draws_what_vulkan_wrote",
                snowsim::cl::external::MEMORY_EXTENSIONS.join(" + "),
                labels(&devices)
            ),
        );
        return;
    }
    for device in capable {
        let (transfer, external) = match render_fixed_scene(device, InteropMode::External) {
            Ok(result) => result,
            Err(app::Error::Interop(e @ interop::Error::ExternalUnsupported(_))) => {
                skip(
                    Capability::ExternalMemory,
                    format!("external path on {}: {e}", device.info.label()),
                );
                continue;
            }
            Err(e) => panic!("external path on {}: {e}", device.info.label()),
        };
        assert_eq!(transfer, Transfer::External);
        let (_, copied) = render_fixed_scene(device, InteropMode::Copy).unwrap();
        let differ = differing_pixels(&external, &copied);
        assert_eq!(
            differ, 0,
            "{differ} pixels differ between external and copy"
        );
    }
}

/// The half of the external path that CPU drivers can run: Vulkan (lavapipe in CI) allocates
/// exportable memory and writes the fixed scene's particles into it from the host, OpenGL
/// (llvmpipe) imports it with GL_EXT_memory_object_fd, and the renderer draws from it: the
/// image must show the particles where the camera model projects them.
#[test]
fn vulkan_memory_imported_by_gl_draws_what_vulkan_wrote() {
    use snowsim::interop::gl_memory::MemoryFunctions;
    use snowsim::interop::vulkan::{Exporter, uuid_hex};

    let headless = Headless::new(W, H).unwrap();
    let setup = headless.setup();
    let functions = match MemoryFunctions::load(&setup.gl, &setup.proc_address) {
        Ok(f) => f,
        Err(e) => {
            skip(
                Capability::GlMemoryObject,
                format!("{e} ({})", setup.info.renderer),
            );
            return;
        }
    };
    let exporter = match Exporter::new(None) {
        Ok(e) => e,
        Err(e) => {
            skip(Capability::VulkanExport, e);
            return;
        }
    };
    let gl_uuids: Vec<String> = functions
        .device_uuids(&setup.gl)
        .iter()
        .map(uuid_hex)
        .collect();
    println!(
        "Vulkan {} (UUID {}); OpenGL {} (UUIDs {})",
        exporter.device().name,
        uuid_hex(&exporter.device().uuid),
        setup.info.renderer,
        gl_uuids.join(", ")
    );
    let particles = fixed_particles();
    let bytes: &[u8] = bytemuck::cast_slice(&particles);
    let memory = exporter.allocate(bytes.len() as u64).unwrap();
    if let Err(e) = memory.write(bytes) {
        skip(
            Capability::VulkanHostVisible,
            format!("Vulkan's exportable memory cannot be written from the host here: {e}"),
        );
        return;
    }
    let (memory_object, buffer) = functions
        .import_buffer(
            &setup.gl,
            memory.fd().unwrap(),
            memory.allocation_bytes(),
            memory.dedicated(),
            bytes.len() as u64,
        )
        .unwrap();
    let ground = Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0).unwrap();
    let mut renderer = Renderer::new(
        setup.gl.clone(),
        &TerrainMesh::from_heightfield(&ground).unwrap(),
    )
    .unwrap();
    renderer.set_particles(buffer, particles.len()).unwrap();
    renderer.draw(&camera(), (W, H), &Views::default()).unwrap();
    let image = read_frame(&setup.gl, (W, H)).unwrap();
    check_fixed_scene(&image, "vulkan-to-gl");
    drop(renderer);
    // SAFETY: GL objects of the current context; the renderer that drew from them is gone.
    unsafe { glow::HasContext::delete_buffer(&*setup.gl, buffer) };
    functions.delete(memory_object);
}

/// Open file descriptors of this process.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Every external buffer takes three fresh fds from Vulkan (one per import) and, with
/// semaphores, four more: 100 buffers made, used for a frame and dropped must leave the fd
/// count and the device memory in use where they were.
#[test]
fn external_buffers_leak_no_fd_and_no_device_memory() {
    let device = default_device();
    if !snowsim::cl::external::MEMORY_EXTENSIONS
        .iter()
        .all(|e| device.info.has_extension(e))
    {
        skip(
            Capability::ExternalMemory,
            format!("{} does not offer external memory", device.info.label()),
        );
        return;
    }
    let headless = Headless::new(W, H).unwrap();
    let setup = headless.setup();
    let (context, interop) = interop::open(&device, InteropMode::External, setup).unwrap();
    let cycle = || {
        let mut link = interop::GlLink::new(&context, &setup.gl, &interop, 1 << 16).unwrap();
        link.acquire(&setup.gl).unwrap();
        link.target().write(&vec![[1.0f32; 4]; 1 << 16]).unwrap();
        link.publish(&setup.gl).unwrap();
        interop.hand_over().unwrap();
        interop.drawn().unwrap();
        let back = link.device_buffer().unwrap().read().unwrap();
        assert!(back.iter().all(|v| *v == [1.0; 4]));
    };
    cycle();
    let (fds, memory) = (open_fds(), context.allocated_bytes());
    for _ in 0..100 {
        cycle();
    }
    assert_eq!(open_fds(), fds, "open fds after 100 external buffers");
    assert_eq!(context.allocated_bytes(), memory, "device memory in use");
    println!(
        "{} ({}): {fds} fds before and after",
        device.info.label(),
        interop.choice()
    );
}

#[test]
fn interop_external_without_the_extensions_is_a_clear_error() {
    let device = default_device();
    let missing: Vec<&str> = snowsim::cl::external::MEMORY_EXTENSIONS
        .iter()
        .copied()
        .filter(|e| !device.info.has_extension(e))
        .collect();
    if missing.is_empty() {
        skip(
            Capability::NoExternalMemory,
            format!(
                "{} offers external memory; the refusal is tested on devices without it",
                device.info.label()
            ),
        );
        return;
    }
    let out = snowsim()
        .args([
            "run",
            "--headless",
            "--frames",
            "2",
            "--interop",
            "external",
        ])
        .args(SMALL)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--interop external is not possible") && stderr.contains(missing[0]),
        "{}",
        text(&out)
    );
}

/// The snow a source lays reaches the terrain drawn through the interop (a buffer OpenCL
/// writes, added to each vertex's depth in the shader): with 0.25 m laid along the y = 0 edge of
/// the ground and none along the y = 40 m edge, the colour at each sampled ground point is the bare
/// ground's blended towards the fully covered ground's by the stated transition smoothstep(d0, d1, depth), the depth
/// interpolated from the vertices by the camera model, both references rendered here.
#[test]
fn laid_snow_reaches_the_terrain_drawn_through_the_interop() {
    /// Metres laid along the y = 0 edge.
    const LAID: f32 = 0.25;
    let device = default_device();
    let headless = Headless::new(W, H).unwrap();
    let ground = Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0).unwrap();
    let terrain = TerrainMesh::from_heightfield(&ground).unwrap();
    let render = |depth: Vec<f32>| {
        let config = SessionConfig {
            interop: InteropMode::Auto,
            terrain: terrain.clone(),
            bounds: SceneBox {
                lo: Vec3::ZERO,
                hi: Vec3::new(GROUND, GROUND, 20.0),
            },
            views: Views {
                particles: false,
                ..Views::default()
            },
            paused: false,
            camera: Some(camera()),
            particle_render: ParticleRender::Sprites,
            profile_every: 1,
            profile_from: 0,
        };
        let still = SimSetup::still(vec![Particle::new([0.0, 0.0, -100.0], 0.1)], depth);
        let mut session = Session::new(headless.setup(), &device, config, still).unwrap();
        session.frame((W, H)).unwrap();
        read_frame(&headless.setup().gl, (W, H)).unwrap()
    };
    let n = terrain.positions.len();
    let bare = render(vec![0.0; n]);
    let covered = render(vec![1.0; n]);
    let near_edge: Vec<f32> = terrain
        .positions
        .iter()
        .map(|p| LAID * (1.0 - p.y / GROUND))
        .collect();
    let image = render(near_edge);
    let [bare_depth, full] = Views::default().snow_cover;
    let cam = Pinhole::orbit(&camera());
    let mut bad = Vec::new();
    let mut checked = 0;
    for fy in [0.1f32, 0.78, 0.82, 0.86, 0.9, 0.94, 0.97] {
        for fx in [0.3f32, 0.5, 0.7] {
            // The ground is drawn raised by its snow.
            let depth = LAID * (1.0 - fy);
            let p = cam.project(Vec3::new(fx * GROUND, fy * GROUND, depth)).0;
            let (x, y) = (p.x as u32, p.y as u32);
            // The stated transition: smoothstep(bare_depth, full, depth).
            let t = ((depth - bare_depth) / (full - bare_depth)).clamp(0.0, 1.0);
            let s = t * t * (3.0 - 2.0 * t);
            let [b, c, got] = [&bare, &covered, &image].map(|i| i.get_pixel(x, y).0);
            for k in 0..3 {
                let expected = f32::from(b[k]) + s * (f32::from(c[k]) - f32::from(b[k]));
                if (f32::from(got[k]) - expected).abs() > 6.0 {
                    bad.push(format!(
                        "ground ({fx}, {fy}) at pixel ({x}, {y}), channel {k}: {} against {expected:.1} \
                         (bare {}, covered {}, cover {s:.2})",
                        got[k], b[k], c[k]
                    ));
                }
            }
            checked += 1;
            assert!(
                c[0] > b[0] + 60,
                "the covered ground must be much whiter: {c:?} {b:?}"
            );
        }
    }
    assert!(
        bad.is_empty(),
        "{} values wrong at {checked} points:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Flakes that project smaller than the sprite floor are drawn at the floor with the opacity
/// of their true footprint: against the sky, the middle of such a sprite is the sky blended
/// towards snow by (projected diameter / floor)², computed here from the camera model alone.
#[test]
fn flakes_below_the_pixel_floor_are_drawn_with_the_opacity_of_their_coverage() {
    // Splatted flakes carry the same coverage in their alpha.
    for render in [ParticleRender::Sprites, ParticleRender::Splat] {
        coverage_case(render);
    }
}

fn coverage_case(render: ParticleRender) {
    const FLOOR: f32 = 6.0;
    let device = default_device();
    let headless = Headless::new(W, H).unwrap();
    let ground = Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0).unwrap();
    let cam = Pinhole::orbit(&camera());
    // Against the sky beyond the ground's far edge: projected diameters of 2, 3 and 12 pixels.
    let wanted = [
        ([12.0, -6.0, 14.0], 2.0),
        ([20.0, -6.0, 16.0], 3.0),
        ([28.0, -6.0, 14.0], 12.0),
    ];
    let particles: Vec<Particle> = wanted
        .iter()
        .map(|&(p, diameter)| {
            let depth = cam.project(Vec3::from(p)).1;
            let radius = 0.5 * diameter / cam.pixels(1.0, depth);
            Particle::new(p, radius)
        })
        .collect();
    let config = SessionConfig {
        interop: InteropMode::Copy,
        terrain: TerrainMesh::from_heightfield(&ground).unwrap(),
        bounds: SceneBox {
            lo: Vec3::ZERO,
            hi: Vec3::new(GROUND, GROUND, 20.0),
        },
        views: Views {
            min_particle_pixels: FLOOR,
            ..Views::default()
        },
        paused: true,
        camera: Some(camera()),
        particle_render: render,
        profile_every: 1,
        profile_from: 0,
    };
    let mut session = Session::new(
        headless.setup(),
        &device,
        config,
        SimSetup::still(particles, Vec::new()),
    )
    .unwrap();
    session.frame((W, H)).unwrap();
    let image = read_frame(&headless.setup().gl, (W, H)).unwrap();
    let palette = Palette::default();
    let corners: Vec<Vec2> = [[0.0, 0.0], [GROUND, 0.0], [GROUND, GROUND], [0.0, GROUND]]
        .iter()
        .map(|&[x, y]| cam.project(Vec3::new(x, y, 0.0)).0)
        .collect();
    for &(p, diameter) in &wanted {
        let centre = cam.project(Vec3::from(p)).0;
        assert!(
            inside_distance(&corners, centre) < -FLOOR.max(diameter),
            "flake at {p:?} must be seen against the sky"
        );
        // The reddest pixel around the centre: the sprite's middle (red separates sky and snow
        // best: 0.55 against 0.97).
        let (cx, cy) = (centre.x as i32, centre.y as i32);
        let red = (-1..=1)
            .flat_map(|dy| (-1..=1).map(move |dx| (cx + dx, cy + dy)))
            .map(|(x, y)| image.get_pixel(x as u32, y as u32).0[0])
            .max()
            .unwrap();
        let coverage = (diameter / FLOOR).min(1.0).powi(2);
        let expected = palette.background[0] + coverage * (palette.snow[0] - palette.background[0]);
        let expected = (expected * 255.0).round();
        assert!(
            (f32::from(red) - expected).abs() <= 3.0,
            "{render}: flake of {diameter} px under a {FLOOR} px floor: red {red} in its middle, \
             expected {expected} (coverage {coverage})"
        );
    }
}

#[test]
fn session_steps_the_snow_copies_each_frame_and_obeys_the_keys() {
    let device = default_device();
    let headless = Headless::new(W, H).unwrap();
    let mut scene = Scene::load(&repo(FLAT)).unwrap();
    // The snow in the profile's wind, without the wind solver; a long step so the parcels
    // move several pixels a frame.
    scene.simulate.wind = false;
    scene.time.step = 0.5;
    let ground = snowsim::scene::ground_of(&scene).unwrap();
    let overrides = snowsim::sim::Overrides {
        particles: Some(1000),
        sort: Some(snowsim::scene::SortMode::Off),
        ..Default::default()
    };
    let setup = SimSetup::new(&scene, &ground, &overrides).unwrap();
    let view = SceneView::new(&scene, &ground).unwrap();
    // Copy mode, which every device runs: the copies counted below are the point.
    let mut config = view.session_config(InteropMode::Copy, false);
    // Sprites throughout: the copies counted below are the particles' and the cover's.
    config.particle_render = ParticleRender::Sprites;
    let mut session = Session::new(headless.setup(), &device, config, setup).unwrap();
    assert_eq!(session.interop().transfer, Transfer::Copy);
    // The cover's depths travel with the particles, four vertices per float4.
    let cover_bytes = (ground.surface.vertices.len().div_ceil(4) * 16) as u64;
    let before = session.copied_bytes();
    let stages = session.frame((W, H)).unwrap();
    assert!(busy(&stages, stage::KERNELS) > std::time::Duration::ZERO);
    assert!(busy(&stages, stage::TRANSFER) > std::time::Duration::ZERO);
    // The snow's update ran on the device under its stage, timed by profiling.
    let update = stages
        .iter()
        .find(|s| s.stage == snowsim::snow::STEP_STAGE)
        .expect("the snow's update stage");
    assert!(update.device && update.launches == 1 && update.busy > std::time::Duration::ZERO);
    assert!(update.span >= update.busy);
    // Wind and pressure views are off: only the particles and the cover travel.
    assert_eq!(session.copied_bytes() - before, 1000 * 16 + cover_bytes);
    let first = read_frame(&headless.setup().gl, (W, H)).unwrap();

    assert_eq!(
        session.action(Action::ToggleWind).as_deref(),
        Some("wind view on")
    );
    // The fixed profile's samples crossed once, when the session started: shown again, they
    // are not read or copied again.
    let before = session.copied_bytes();
    session.frame((W, H)).unwrap();
    assert_eq!(session.copied_bytes() - before, 1000 * 16 + cover_bytes);
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
    assert!(!ran(&stages, stage::KERNELS));
    assert_eq!(session.time(), time, "paused: time stands still");
    assert!(session.status().contains("paused"));
    // `.` steps a paused simulation by one frame, once.
    assert_eq!(session.action(Action::StepOnce), None);
    let stages = session.frame((W, H)).unwrap();
    assert!(ran(&stages, stage::KERNELS));
    assert_eq!(session.time(), time + 0.5, "one step of time.step");
    session.frame((W, H)).unwrap();
    assert_eq!(session.time(), time + 0.5, "and only one");
    // `]` and `[` double and halve the acceleration asked for; the simulation keeps the one
    // it started with until it can change it (the display says so).
    let a = session.watch().acceleration;
    assert!(
        session
            .action(Action::ScaleAcceleration(2.0))
            .unwrap()
            .contains(&format!("×{}", 2.0 * a))
    );
    assert_eq!(session.watch().asked, 2.0 * a);
    session.action(Action::ScaleAcceleration(0.5));
    session.action(Action::ScaleAcceleration(0.5));
    assert_eq!(session.watch().asked, 0.5 * a);
    assert_eq!(
        session.action(Action::ToggleOsd).as_deref(),
        Some("on-screen display on")
    );
    session.frame((W, H)).unwrap();
    assert_eq!(
        session.action(Action::TogglePause).as_deref(),
        Some("running")
    );
    session.frame((W, H)).unwrap();
    let moved = read_frame(&headless.setup().gl, (W, H)).unwrap();
    assert_ne!(first.as_raw(), moved.as_raw(), "the snow falls");

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
        .arg("--scene")
        .arg(flat_without_veil(&dir))
        .args(&SMALL[2..])
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
        skip(
            Capability::NoGlSharing,
            format!(
                "every OpenCL device here offers cl_khr_gl_sharing ({})",
                labels(&devices)
            ),
        );
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
    assert_eq!(report["scene"], FLAT, "{report}");
    assert_eq!(report["scene_name"], "Flat", "{report}");
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
        skip(
            Capability::Xvfb,
            "xvfb-run is not installed (Debian: apt-get install xvfb)",
        );
        return;
    }
    let dir = temp_dir("window");
    let shot = dir.join("window.png");
    let vtu = dir.join("state.vtu");
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
        .arg("--vtu")
        .arg(&vtu)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("window on X11"), "{}", text(&out));
    // The state is written when the window's run ends, as after a headless run.
    let state = std::fs::read(&vtu).unwrap();
    assert!(
        state.windows(17).any(|w| w == b"Name=\"snow_depth\""),
        "no snow_depth array in {}",
        vtu.display()
    );
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
        skip(
            Capability::NoGlSharing,
            format!(
                "every OpenCL device here offers cl_khr_gl_sharing ({})",
                labels(&devices)
            ),
        );
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
        .args(["run", "--headless", "--frames", "2"])
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

    // Compiles alone, but has no `main`, so the program cannot link (on every driver: NVIDIA's
    // links mismatched inputs that Mesa refuses).
    std::fs::remove_file(dir.join("particles.frag")).unwrap();
    std::fs::write(
        dir.join("colour.frag"),
        "#version 330 core\nin vec3 v_colour;\nout vec4 o_colour;\nvoid colour() { o_colour = vec4(v_colour, 1.0); }\n",
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

/// A uniform renamed in a copy ran with no word (GL ignores setting a uniform a program lacks,
/// and the terrain was drawn with black snow): it is an error naming the copy and the uniform.
/// One that a copy still declares but no longer uses (GL drops it) is accepted.
#[test]
fn a_uniform_renamed_in_a_shader_copy_is_an_error_naming_the_file_and_uniform() {
    let dir = temp_dir("uniforms");
    let terrain = include_str!("../../shaders/terrain.frag");
    for (file, copy, uniform, program) in [
        (
            "terrain.frag",
            terrain.replace("u_snow_colour", "u_snow_color"),
            "u_snow_colour",
            "terrain.vert + terrain.frag",
        ),
        (
            "pressure.vert",
            include_str!("../../shaders/pressure.vert").replace("u_pressure_range", "u_range"),
            "u_pressure_range",
            "pressure.vert + colour.frag",
        ),
    ] {
        std::fs::write(dir.join(file), copy).unwrap();
        let out = run_with_shaders(&dir);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        let expected = format!(
            "shader `{file} (from {})` declares no uniform `{uniform}`, which the renderer sets \
             in program `{program}`",
            dir.join(file).display()
        );
        assert!(err.contains(&expected), "{expected}\n{}", text(&out));
        assert!(!err.contains("panicked"), "{}", text(&out));
        std::fs::remove_file(dir.join(file)).unwrap();
    }

    // Declared, no longer used: the program runs.
    let constant = terrain.replace("cover) * u_exposure", "cover) * 1.0");
    assert_ne!(
        constant, terrain,
        "terrain.frag no longer uses u_exposure so"
    );
    std::fs::write(dir.join("terrain.frag"), constant).unwrap();
    let out = run_with_shaders(&dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_sizes_and_counts_are_refused() {
    // (arguments, exit status, what the message must say: the value and the limit it breaks).
    let limit = "must be between 1x1 and 16384x16384";
    for (args, status, needles) in [
        (["--size", "0x100"], 2, &["'0x100'", "--size", limit][..]),
        (
            ["--size", "640"],
            2,
            &["`640` is not WIDTHxHEIGHT", "--size"],
        ),
        (["--size", "99999x10"], 2, &["'99999x10'", "--size", limit]),
        (["--size", "16384x16385"], 2, &["'16384x16385'", limit]),
        (["--frames", "0"], 1, &["--frames must be at least 1"]),
        (["--particles", "0"], 1, &["--particles must be at least 1"]),
    ] {
        let out = snowsim()
            .args(["run", "--headless"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(status), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        for needle in needles {
            assert!(
                err.contains(needle),
                "{args:?}: `{needle}` in {}",
                text(&out)
            );
        }
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
        "[ / ]",
        "F1",
        "--osd",
    ] {
        assert!(
            help.contains(needle),
            "`{needle}` missing from --help:\n{help}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Scenes: `snowsim run --scene FILE`.

/// Checks a screenshot of a scene whose ground is flat at `z = ground_z` over `[0, x] × [0, y]`,
/// seen through the scene's own camera (a pinhole model built here from `[camera]`): ground
/// (or a flake in front of it) inside the projected rectangle, sky (or a flake) outside, on an
/// 8-pixel grid clear of the rectangle's edges. Returns (ground, sky) pixels checked.
fn check_flat_ground(scene: &Scene, ground: [f32; 3], image: &image::RgbaImage) -> [usize; 2] {
    let (w, h) = image.dimensions();
    let c = &scene.camera;
    let v3 = |p: [f64; 3]| Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32);
    let cam = Pinhole::looking_at(
        v3(c.position),
        v3(c.target),
        (c.fov as f32).to_radians(),
        (w, h),
    );
    let [x, y, z] = ground;
    let corners: Vec<Vec2> = [[0.0, 0.0], [x, 0.0], [x, y], [0.0, y]]
        .iter()
        .map(|&[cx, cy]| {
            let (p, depth) = cam.project(Vec3::new(cx, cy, z));
            assert!(
                depth > 0.0,
                "ground corner ({cx}, {cy}) is behind the camera"
            );
            p
        })
        .collect();
    let background = rgb(Palette::default().background);
    let mut counts = [0usize; 2];
    let mut flakes = 0;
    let mut bad = Vec::new();
    for py in (4..h).step_by(8) {
        for px in (4..w).step_by(8) {
            let p = Vec2::new(px as f32 + 0.5, py as f32 + 0.5);
            let d = inside_distance(&corners, p);
            let expected = if d > 3.0 {
                Class::Terrain
            } else if d < -3.0 {
                Class::Background
            } else {
                continue;
            };
            counts[(expected == Class::Background) as usize] += 1;
            let pixel = image.get_pixel(px, py).0;
            match classify([pixel[0], pixel[1], pixel[2]], background) {
                got if got == expected => {}
                Class::Particle => flakes += 1,
                got => bad.push(format!("{p}: expected {expected:?}, got {got:?} {pixel:?}")),
            }
        }
    }
    let checked = counts[0] + counts[1];
    assert!(
        bad.is_empty(),
        "{} of {checked} pixels misclassified:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(
        flakes * 4 < checked,
        "{flakes} of {checked} pixels are flakes: the ground and sky are hidden"
    );
    counts
}

fn flat_extent(scene: &Scene) -> [f32; 2] {
    match &scene.domain {
        Domain::Terrain {
            heightmap: None,
            spec,
            ..
        } => [spec.size[0] as f32, spec.size[1] as f32],
        other => panic!("not a flat terrain domain: {other:?}"),
    }
}

#[test]
fn flat_scene_shows_its_ground_where_the_scene_camera_projects_it() {
    let dir = temp_dir("flat-scene");
    let shot = dir.join("flat.png");
    let out = snowsim()
        .args(["run", "--headless", "--scene"])
        .arg(flat_without_veil(&dir))
        .args(["--particles", "4096", "--size", "320x240", "--frames", "5"])
        .arg("--screenshot")
        .arg(&shot)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "flat.toml (Flat)",
        "flat ground (8 × 8 cells), 128 triangles",
        "air [0, 0, 0] .. [200, 200, 60] m",
        "snow: 4096 parcels of 2–8 mm",
        "wind 3 m/s",
        "uniform profile",
        "summary: 4096 particles",
        "5 frames",
    ] {
        assert!(
            stdout.contains(needle),
            "`{needle}` missing:\n{}",
            text(&out)
        );
    }
    let scene = Scene::load(&repo(FLAT)).unwrap();
    let [x, y] = flat_extent(&scene);
    let image = image::open(&shot).unwrap().to_rgba8();
    assert_eq!(image.dimensions(), (320, 240));
    let [ground, sky] = check_flat_ground(&scene, [x, y, 0.0], &image);
    assert!(
        ground > 200 && sky > 200,
        "too few pixels checked: {ground} ground, {sky} sky"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Writes the tetrahedra of a flat 200 × 200 × 60 m box with the ground's triangles under
/// reference 15 and the top's under 16 (the sides keep 1 to 4), and a scene naming them.
fn mesh_scene(dir: &Path) -> PathBuf {
    let spec = TerrainSpec {
        size: [200.0, 200.0, 60.0],
        relief: 0.0,
        cells: [4, 4],
        layers: 3,
        grading: 1.0,
    };
    let air = Terrain::new(spec, None).unwrap().volume_mesh();
    let mut mesh = Mesh::new(3);
    for (v, &r) in air.vertices.iter().zip(&air.vertex_refs) {
        mesh.push_vertex(*v, r);
    }
    for (tet, r) in air.elements(ElementKind::Tetrahedra).iter() {
        mesh.elements_mut(ElementKind::Tetrahedra).push(tet, r);
    }
    for (tri, r) in air.elements(ElementKind::Triangles).iter() {
        let r = match Side::from_reference(r) {
            Some(Side::Ground) => 15,
            Some(Side::Top) => 16,
            _ => r,
        };
        mesh.elements_mut(ElementKind::Triangles).push(tri, r);
    }
    meshio::write(&dir.join("air.meshb"), &mesh, meshio::Version::V2).unwrap();
    let scene = dir.join("box.toml");
    std::fs::write(
        &scene,
        "name = \"Meshed box\"\n\
         [domain]\nmesh = \"air.meshb\"\n\
         [domain.boundary]\nground = 15\ntop = 16\n\
         [snow]\nparticles = 2000\n\
         [camera]\nposition = [100.0, -90.0, 54.0]\ntarget = [100.0, 100.0, 0.0]\nfov = 55\n\
         [view]\nveil = false\nnear_flakes = 0\n",
    )
    .unwrap();
    scene
}

#[test]
fn a_mesh_domain_draws_its_ground_referenced_triangles() {
    let dir = temp_dir("mesh-scene");
    let scene_path = mesh_scene(&dir);
    let shot = dir.join("mesh.png");
    let out = snowsim()
        .args(["run", "--headless", "--frames", "3", "--size", "320x240"])
        .arg("--scene")
        .arg(&scene_path)
        .arg("--screenshot")
        .arg(&shot)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "(Meshed box)",
        "ground triangles (reference 15) of ",
        "air.meshb, 32 triangles",
        "snow: 2000 parcels of",
    ] {
        assert!(
            stdout.contains(needle),
            "`{needle}` missing:\n{}",
            text(&out)
        );
    }
    // Only the ground is drawn: the top at 60 m (above the eye) and the sides would hide the
    // sky.
    let scene = Scene::load(&scene_path).unwrap();
    let image = image::open(&shot).unwrap().to_rgba8();
    let [ground, sky] = check_flat_ground(&scene, [200.0, 200.0, 0.0], &image);
    assert!(
        ground > 200 && sky > 200,
        "too few pixels checked: {ground} ground, {sky} sky"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_default_scene_is_the_valley() {
    let out = snowsim()
        .args(["run", "--headless", "--frames", "2", "--json"])
        .args(["--size", "160x120", "--particles", "1024"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(report["scene"], "scenes/valley.toml", "{report}");
    assert_eq!(report["scene_name"], "Alpine valley", "{report}");
    assert_eq!(report["particles"], 1024, "{report}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scene: scenes/valley.toml (Alpine valley)")
            && err.contains(
                "terrain from scenes/valley.png (96 × 96 cells, relief 600 m), 18432 triangles"
            )
            && err.contains("log profile"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_missing_scene_file_is_a_clear_error_naming_it() {
    let out = snowsim()
        .args([
            "run",
            "--headless",
            "--frames",
            "1",
            "--scene",
            "scenes/no-such-scene.toml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read scene scenes/no-such-scene.toml")
            && err.contains("No such file")
            && err.contains("--scene FILE")
            && err.contains("current directory"),
        "{}",
        text(&out)
    );
    assert!(!err.contains("panicked"), "{}", text(&out));
    assert!(out.stdout.is_empty(), "nothing runs: {}", text(&out));

    // The default scene, looked up from a directory that does not have it.
    let dir = temp_dir("no-default");
    let out = Command::new(env!("CARGO_BIN_EXE_snowsim"))
        .args(["run", "--headless", "--frames", "1"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scenes/valley.toml") && err.contains("--scene"),
        "{}",
        text(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_invalid_scene_file_is_a_clear_error_naming_file_and_key() {
    let dir = temp_dir("bad-scene");
    let bad = dir.join("bad.toml");
    let flat = std::fs::read_to_string(repo(FLAT)).unwrap();
    std::fs::write(&bad, flat.replace("speed = 3.0", "speed = -3.0")).unwrap();
    let out = snowsim()
        .args(["run", "--headless", "--frames", "1", "--scene"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&bad.display().to_string())
            && err.contains("wind.speed")
            && err.contains("scene check")
            && err.contains("--scene FILE"),
        "{}",
        text(&out)
    );
    assert!(!err.contains("panicked"), "{}", text(&out));
    std::fs::remove_dir_all(&dir).ok();
}

/// Whether a stage of that name ran in the frame.
fn ran(stages: &[StageTime], name: &str) -> bool {
    stages.iter().any(|s| s.stage == name)
}

/// The busy time of stage `name` in the frame (zero if it did not run).
fn busy(stages: &[StageTime], name: &str) -> std::time::Duration {
    stages
        .iter()
        .filter(|s| s.stage == name)
        .map(|s| s.busy)
        .sum()
}

#[test]
fn the_wind_view_shows_the_scene_wind_profile() {
    let device = default_device();
    let context = Context::new(&device).unwrap();
    let flat = std::fs::read_to_string(repo(FLAT)).unwrap();
    for profile in [
        "profile = \"log\"\nroughness = 0.5",
        "profile = \"power\"\nexponent = 0.25",
    ] {
        // Without the wind solver: the view shows the profile itself.
        let text = flat.replace("profile = \"uniform\"", profile) + "\n[simulate]\nwind = false\n";
        let scene = Scene::from_toml(&text, Path::new("profile.toml")).unwrap();
        let ground = snowsim::scene::ground_of(&scene).unwrap();
        let setup = SimSetup::new(&scene, &ground, &Default::default()).unwrap();
        let mut simulation = Simulation::new(&context, setup).unwrap();
        let samples = simulation.wind_samples().unwrap().expect("a wind to show");
        let n = samples.points.len() / 2;
        // The flat scene's 9 × 9 × 7 vertices are fewer than the views sample: all of them.
        assert_eq!(n, snowsim::sim::WIND_VIEW_SAMPLES.min(9 * 9 * 7));
        let mut heights = Vec::new();
        for sample in samples.points.chunks_exact(2) {
            let [x, y, z, _] = sample[0];
            let [vx, vy, vz, pressure] = sample[1];
            assert!(
                (0.0..=200.0).contains(&x)
                    && (0.0..=200.0).contains(&y)
                    && (0.0..=60.0).contains(&z),
                "{profile}: sample at ({x}, {y}, {z}) outside the air"
            );
            // Flat ground at 0: the height above the ground is z.
            let expected = scene.wind.velocity_at(f64::from(z));
            for (got, want) in [vx, vy, vz].iter().zip(expected) {
                assert!(
                    (f64::from(*got) - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "{profile}: at {z} m got {:?}, want {expected:?}",
                    [vx, vy, vz]
                );
            }
            // Hydrostatic, in kPa: 101.325 at the ground, 0.7 % less 60 m up.
            assert!(
                pressure > 100.5 && pressure <= 101.325,
                "{pressure} kPa at {z} m"
            );
            heights.push(z);
        }
        // Vertices from the ground to the top; the view's colour range spans them.
        let (lo, hi) = heights
            .iter()
            .fold((f32::MAX, f32::MIN), |(a, b), &z| (a.min(z), b.max(z)));
        assert!(lo < 1.0 && hi > 45.0, "{profile}: levels {lo} .. {hi}");
        let top_speed = scene.wind.speed_at(60.0) as f32;
        assert!(
            (samples.speed_max - top_speed).abs() < 1e-3 * top_speed,
            "{profile}: {} vs {top_speed}",
            samples.speed_max
        );
        let view = SceneView::new(&scene, &ground).unwrap();
        assert!((view.views.speed_max - top_speed).abs() < 1e-3 * top_speed);
    }
}

#[test]
fn run_json_reports_the_snow_and_the_sort_mode_changes_nothing() {
    let mut reports = Vec::new();
    for mode in ["off", "full", "partial"] {
        let out = snowsim()
            .args([
                "run",
                "--headless",
                "--frames",
                "60",
                "--json",
                "--sort",
                mode,
            ])
            .args(SMALL)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        let snow = report["snow"].clone();
        for key in [
            "landed",
            "respawned",
            "wrapped",
            "lost",
            "deposited_m3",
            "max_depth_m",
        ] {
            assert!(snow[key].is_number(), "snow.{key} missing: {report}");
        }
        assert!(snow["landed"].as_u64().unwrap() > 0, "{snow}");
        assert_eq!(snow["lost"], 0, "{snow}");
        let parcel = snow["parcel_m3"].as_f64().unwrap();
        let landed = snow["landed"].as_f64().unwrap();
        let deposited = snow["deposited_m3"].as_f64().unwrap();
        assert!(
            (deposited - landed * parcel).abs() <= 1e-9 * deposited.max(1.0),
            "{snow}"
        );
        reports.push(snow);
    }
    assert!(
        reports.iter().all(|r| *r == reports[0]),
        "off, full and partial disagree: {reports:?}"
    );
}

#[test]
fn bench_snow_times_every_stage_per_size_and_mode() {
    let out = snowsim()
        .args([
            "bench", "snow", "--scene", FLAT, "--log2", "8,10", "--frames", "2",
        ])
        .args(["--warmup", "1", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON rows");
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 6, "two sizes × three modes: {rows:?}");
    for row in rows {
        assert!(row["update_ms"].as_f64().unwrap() > 0.0, "{row}");
        let roofline = row["update_roofline"].as_f64().unwrap();
        assert!(roofline > 0.0 && roofline.is_finite(), "{row}");
        let sorted = row["sort"] != "off";
        assert_eq!(row["sort_ms"].as_f64().unwrap() > 0.0, sorted, "{row}");
    }
    let bad = snowsim()
        .args(["bench", "snow", "--scene", FLAT, "--log2", "40"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("--log2"),
        "{}",
        text(&bad)
    );
}

/// The u* view (`--friction`, key U) colours the ground by the drifting snow's friction
/// velocity: on the flat scene under a uniform 3 m/s wind (u* = 0.41 · 3 / ln(z₁ / 1 mm) ≈
/// 0.14 m/s at the first level, 6 m up, under the 0.25 m/s threshold) the ground is cold (blue
/// to green), under 20 m/s (u* ≈ 0.96 m/s, nearly four times the threshold) warm (red), and
/// without the view it is the grass it always was.
#[test]
fn the_friction_view_colours_the_ground_by_the_winds_u_star() {
    let dir = temp_dir("friction-view");
    let flat = std::fs::read_to_string(repo(FLAT)).unwrap();
    assert!(
        flat.contains("speed = 3.0"),
        "flat.toml's wind changed: update this test"
    );
    // The ground's pixels: those not of the sky's colour (the flat scene's camera sees the
    // square of ground against the sky all round).
    let sky = rgb(Palette::default().background);
    let ground = |speed: &str, friction: bool| -> Vec<[u8; 3]> {
        let scene = dir.join(format!("flat-{speed}.toml"));
        let windy = flat.replace("speed = 3.0", &format!("speed = {speed}"));
        std::fs::write(&scene, format!("{windy}\n[view]\nsnow = false\n")).unwrap();
        let shot = dir.join(format!("shot-{speed}-{friction}.png"));
        let mut command = snowsim();
        command.args(["run", "--scene"]).arg(&scene).args([
            "--headless",
            "--frames",
            "3",
            "--size",
            "160x120",
            "--screenshot",
        ]);
        command.arg(&shot);
        if friction {
            command.arg("--friction");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let image = image::open(&shot).unwrap().to_rgb8();
        let pixels: Vec<[u8; 3]> = image
            .pixels()
            .map(|p| p.0)
            .filter(|p| p.iter().zip(sky).any(|(&a, b)| a.abs_diff(b) > 10))
            .collect();
        assert!(pixels.len() > 2000, "{} ground pixels", pixels.len());
        pixels
    };
    let share = |pixels: &[[u8; 3]], test: fn(&[u8; 3]) -> bool| {
        pixels.iter().filter(|p| test(p)).count() as f64 / pixels.len() as f64
    };
    let warm = |p: &[u8; 3]| p[0] > p[1].saturating_add(40) && p[0] > p[2].saturating_add(40);
    let cold = |p: &[u8; 3]| p[2].max(p[1]) > p[0].saturating_add(20);
    let calm = ground("3.0", true);
    let gale = ground("20.0", true);
    let grass = ground("20.0", false);
    assert!(
        share(&calm, cold) > 0.9,
        "3 m/s: {:.2} cold",
        share(&calm, cold)
    );
    assert!(
        share(&gale, warm) > 0.9,
        "20 m/s: {:.2} warm",
        share(&gale, warm)
    );
    assert!(
        share(&grass, warm) < 0.01,
        "without the view: {:.2} warm",
        share(&grass, warm)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Pixels that are not exactly equal in two frames of one size.
fn differing_pixels(a: &image::RgbaImage, b: &image::RgbaImage) -> usize {
    a.pixels().zip(b.pixels()).filter(|(p, q)| p != q).count()
}

/// A renderer of the fixed scene's flat square ground.
fn flat_renderer(gl: &std::rc::Rc<glow::Context>) -> Renderer {
    let ground = Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::splat(GROUND), |_, _| 0.0).unwrap();
    Renderer::new(gl.clone(), &TerrainMesh::from_heightfield(&ground).unwrap()).unwrap()
}

/// A GL buffer holding `data`, on the current context.
fn gl_buffer_with(gl: &glow::Context, data: &[u8]) -> glow::Buffer {
    use glow::HasContext;
    // SAFETY: a buffer made and filled on the current context.
    unsafe {
        let buffer = gl.create_buffer().unwrap();
        gl.bind_buffer(glow::ARRAY_BUFFER, Some(buffer));
        gl.buffer_data_u8_slice(glow::ARRAY_BUFFER, data, glow::STATIC_DRAW);
        gl.bind_buffer(glow::ARRAY_BUFFER, None);
        buffer
    }
}

#[test]
fn a_frame_drawn_as_scene_then_overlays_equals_the_frame_drawn_at_once() {
    use glow::HasContext;
    // What a session ordered by semaphores does: the scene before it waits for the kernels,
    // the overlays after, with other GL work between. The image must be the one-call draw's.
    let headless = Headless::new(W, H).unwrap();
    let setup = headless.setup();
    let gl = setup.gl.clone();
    let mut renderer = flat_renderer(&gl);
    let particles = fixed_particles();
    let particle_buffer = gl_buffer_with(&gl, bytemuck::cast_slice(&particles));
    renderer
        .set_particles(particle_buffer, particles.len())
        .unwrap();
    // Wind and pressure samples over the ground: the overlays' views.
    let mut samples: Vec<[f32; 4]> = Vec::new();
    for i in 0..8 {
        for j in 0..8 {
            let (x, y) = (
                (i as f32 + 0.5) * GROUND / 8.0,
                (j as f32 + 0.5) * GROUND / 8.0,
            );
            samples.push([x, y, 2.0, 1.0]);
            samples.push([6.0, 2.0 * (j as f32 - 4.0), 0.0, i as f32 / 7.0]);
        }
    }
    let field_buffer = gl_buffer_with(&gl, bytemuck::cast_slice(&samples));
    renderer.set_field(field_buffer, samples.len() / 2).unwrap();
    let views = Views {
        wind: true,
        pressure: true,
        ..Views::default()
    };
    let cam = camera();

    renderer.draw(&cam, (W, H), &views).unwrap();
    let at_once = read_frame(&gl, (W, H)).unwrap();

    renderer.draw_scene(&cam, (W, H), &views).unwrap();
    let scene_only = read_frame(&gl, (W, H)).unwrap();
    // SAFETY: state changes on the current context, as a texture upload or a buffer attached
    // between the two parts may make.
    unsafe {
        gl.viewport(0, 0, 7, 5);
        gl.depth_func(glow::GREATER);
        gl.disable(glow::DEPTH_TEST);
        gl.enable(glow::BLEND);
        gl.blend_func(glow::ONE, glow::ONE);
        gl.bind_vertex_array(None);
        gl.use_program(None);
    }
    renderer.draw_scene(&cam, (W, H), &views).unwrap();
    // SAFETY: as above.
    unsafe {
        gl.viewport(0, 0, 7, 5);
        gl.depth_func(glow::GREATER);
        gl.disable(glow::DEPTH_TEST);
        gl.enable(glow::BLEND);
    }
    renderer.draw_overlays(&cam, (W, H), &views);
    let in_two = read_frame(&gl, (W, H)).unwrap();

    let differing = differing_pixels(&at_once, &scene_only);
    assert!(
        differing > 100,
        "the overlays drew only {differing} pixels: the test would not see them go missing"
    );
    let mismatched = differing_pixels(&at_once, &in_two);
    assert_eq!(
        mismatched, 0,
        "the frame drawn in two parts differs from the one-call draw at {mismatched} pixels"
    );
    drop(renderer);
    // SAFETY: buffers of the current context; the renderer that drew from them is gone.
    unsafe {
        gl.delete_buffer(particle_buffer);
        gl.delete_buffer(field_buffer);
    }
}

#[test]
fn the_drawings_gpu_time_comes_back_without_waiting_and_fits_in_the_frame() {
    use glow::HasContext;
    let headless = Headless::new(W, H).unwrap();
    let setup = headless.setup();
    let gl = setup.gl.clone();
    let renderer = flat_renderer(&gl);
    assert_eq!(renderer.take_draw_time(), None, "nothing drawn yet");
    let mut times = Vec::new();
    for _ in 0..6 {
        let start = std::time::Instant::now();
        renderer.draw(&camera(), (W, H), &Views::default()).unwrap();
        // SAFETY: the current context.
        unsafe { gl.finish() };
        let wall = start.elapsed();
        let gpu = renderer
            .take_draw_time()
            .expect("a finished frame's time is there");
        assert!(
            gpu > std::time::Duration::ZERO && gpu <= wall,
            "GPU time {gpu:?} against the frame's {wall:?} on the wall clock"
        );
        times.push(gpu);
        assert_eq!(renderer.take_draw_time(), None, "each timing is read once");
    }
    // More frames than the ring holds, none read: the timer skips rather than overwrites, and
    // what comes back is one timing per timed frame.
    for _ in 0..10 {
        renderer.draw(&camera(), (W, H), &Views::default()).unwrap();
    }
    // SAFETY: the current context.
    unsafe { gl.finish() };
    let mut read = 0;
    while renderer.take_draw_time().is_some() {
        read += 1;
    }
    assert!(
        (1..=10).contains(&read),
        "{read} timings of 10 frames read back"
    );
    println!("render.gpu on {}: {times:?}", setup.info.renderer);
}
