//! The splat kernel (`kernels/splat.cl`) on a real device (PoCL in CI), against a projection of
//! the same matrix computed here on the CPU: where each flake lands, the window depth it
//! carries, nearest-wins, the footprint it covers, the overflow list for wide flakes, and the
//! coverage counters that let many faint flakes on one pixel add up.

use glam::{Mat4, Vec2, Vec3};
use snowsim::cl::{Context, DeviceBuffer, DeviceSelector, OutputBuffer, Timeline};
use snowsim::particle::{ParcelFlakes, Particle};
use snowsim::render::OrbitCamera;
use snowsim::splat::{
    self, COVERAGE_ONE, MAX_SPLAT_PIXELS, ParticleRender, SPLAT_EXTENSION, SplatBuffers,
    SplatImage, SplatView, Splatter, coverage_alpha, decode, image_len,
};

const W: u32 = 96;
const H: u32 = 64;

fn camera() -> OrbitCamera {
    OrbitCamera {
        target: Vec3::new(10.0, 10.0, 0.0),
        yaw: 0.6,
        pitch: 0.5,
        distance: 40.0,
        fovy: 0.9,
        near: 0.5,
        far: 200.0,
    }
}

/// Window position (x, y from the bottom-left) and depth of `p`, by GL's rules, on the CPU.
fn project(m: &Mat4, p: Vec3) -> (f32, f32, f32, f32) {
    let clip = *m * p.extend(1.0);
    let ndc = clip.truncate() / clip.w;
    (
        (ndc.x * 0.5 + 0.5) * W as f32,
        (ndc.y * 0.5 + 0.5) * H as f32,
        ndc.z * 0.5 + 0.5,
        clip.w,
    )
}

struct Splatted {
    image: Vec<u64>,
    coverage: Vec<u32>,
    overflow: Vec<Particle>,
    overflow_count: usize,
}

fn splat_on_device(particles: &[Particle], view: &SplatView, overflow_len: usize) -> Splatted {
    let context = Context::from_selector(&DeviceSelector::Default).expect("an OpenCL device");
    if !splat::supported(context.info()) {
        panic!(
            "{} lacks {SPLAT_EXTENSION}; PoCL in CI offers it",
            context.info().label()
        );
    }
    let splatter = Splatter::new(&context).unwrap();
    let mut input = DeviceBuffer::from_slice(&context, particles).unwrap();
    // Not zeroed: the clear must empty the words and zero the counters itself.
    let stale = vec![[f32::from_bits(0x3f3f_3f3f); 4]; image_len(W, H)];
    let mut image = DeviceBuffer::from_slice(&context, &stale).unwrap();
    let mut overflow = DeviceBuffer::<Particle>::zeroed(&context, overflow_len).unwrap();
    let mut timeline = Timeline::default();
    let (input, image_out, overflow_out) = (
        OutputBuffer::Device(&mut input),
        OutputBuffer::Device(&mut image),
        OutputBuffer::Device(&mut overflow),
    );
    let buffers = SplatBuffers {
        particles: &input,
        count: particles.len(),
        image: &image_out,
        overflow: &overflow_out,
    };
    splatter
        .enqueue(&context, &buffers, view, &mut timeline)
        .unwrap();
    timeline.wait().unwrap();
    let raw = image.read().unwrap();
    let read = SplatImage::from_bytes(bytemuck::cast_slice(&raw), W, H).expect("a whole image");
    Splatted {
        image: read.words,
        coverage: read.coverage,
        overflow: overflow.read().unwrap(),
        overflow_count: splatter.overflow_count().unwrap(),
    }
}

fn view() -> (Mat4, SplatView) {
    let cam = camera();
    let m = cam.view_projection(W as f32 / H as f32);
    (
        m,
        SplatView {
            view_proj: m,
            size: (W, H),
            point_scale: cam.point_scale(H),
            min_diameter: 1.5,
            colour: [1.0, 1.0, 1.0],
            eye: cam.eye().to_array(),
            parcels: ParcelFlakes::NONE,
        },
    )
}

/// Radius (metres) that projects to `diameter` pixels at view distance `w`.
fn radius_for(view: &SplatView, diameter: f32, w: f32) -> f32 {
    diameter * w / (2.0 * view.point_scale)
}

#[test]
fn the_kernel_projects_with_the_cameras_matrix_and_depth_mapping() {
    let (m, view) = view();
    // Flakes spread over the view, 5 px wide, far enough apart not to touch.
    let mut particles = Vec::new();
    for (i, p) in [
        Vec3::new(10.0, 10.0, 0.0),
        Vec3::new(4.0, 12.0, 3.0),
        Vec3::new(16.0, 6.0, -2.0),
        Vec3::new(8.0, 2.0, 6.0),
        Vec3::new(14.0, 17.0, 1.0),
    ]
    .into_iter()
    .enumerate()
    {
        let (_, _, _, w) = project(&m, p);
        let r = radius_for(&view, 5.0, w) * (1.0 + 0.01 * i as f32);
        particles.push(Particle::new(p.into(), r));
    }
    let out = splat_on_device(&particles, &view, 4);
    assert_eq!(out.overflow_count, 0);
    let mut owned = vec![false; out.image.len()];
    for (i, p) in particles.iter().enumerate() {
        let (x, y, depth, w) = project(&m, p.position.into());
        assert!(x > 4.0 && y > 4.0 && x < W as f32 - 4.0 && y < H as f32 - 4.0);
        let diameter = 2.0 * p.radius * view.point_scale / w;
        let r = diameter / 2.0;
        // Every pixel whose centre is within the disc (short of the faint rim) holds this
        // flake's depth; none outside it (a pixel's slack for rounding).
        for py in 0..H {
            for px in 0..W {
                let d = Vec2::new(px as f32 + 0.5 - x, py as f32 + 0.5 - y).length();
                let value = decode(out.image[(py * W + px) as usize]);
                if d < 0.8 * r {
                    let (got, rgba) = value.unwrap_or_else(|| {
                        panic!("flake {i}: pixel ({px}, {py}) {d:.2} px from its centre is empty")
                    });
                    assert!(
                        (got - depth).abs() <= 1e-6,
                        "flake {i}: depth {got} on the device, {depth} on the CPU"
                    );
                    assert!(rgba[3] > 200, "flake {i}: alpha {} in its middle", rgba[3]);
                    owned[(py * W + px) as usize] = true;
                } else if d < r + 1.0 && value.is_some() {
                    owned[(py * W + px) as usize] = true;
                }
            }
        }
    }
    let strays: Vec<usize> = (0..out.image.len())
        .filter(|&i| out.image[i] != splat::EMPTY && !owned[i])
        .collect();
    assert!(
        strays.is_empty(),
        "pixels written outside every disc: {strays:?}"
    );
}

#[test]
fn the_nearest_flake_wins_and_the_wide_ones_go_to_the_overflow_list() {
    let (m, view) = view();
    let cam = camera();
    let eye = cam.eye();
    let target = Vec3::new(10.0, 10.0, 0.0);
    // Two flakes on the same line of sight, the far one given first.
    let near = eye + (target - eye) * 0.5;
    let (_, _, near_depth, w_near) = project(&m, near);
    let (_, _, far_depth, w_far) = project(&m, target);
    assert!(near_depth < far_depth);
    let wide = Vec3::new(12.0, 8.0, 1.0);
    let (_, _, _, w_wide) = project(&m, wide);
    let particles = vec![
        Particle::new(target.into(), radius_for(&view, 4.0, w_far)),
        Particle::new(near.into(), radius_for(&view, 4.0, w_near)),
        Particle::new(
            wide.into(),
            radius_for(&view, 2.0 * MAX_SPLAT_PIXELS, w_wide),
        ),
    ];
    let out = splat_on_device(&particles, &view, 8);
    let (x, y, _, _) = project(&m, target);
    let (depth, _) = decode(out.image[(y as u32 * W + x as u32) as usize]).expect("a flake");
    assert!(
        (depth - near_depth).abs() < 1e-6,
        "depth {depth}: the near flake ({near_depth}) must win over the far one ({far_depth})"
    );
    assert_eq!(out.overflow_count, 1, "the wide flake is listed");
    assert_eq!(out.overflow[0], particles[2]);
    let (x, y, _, _) = project(&m, wide);
    assert_eq!(
        out.image[(y as u32 * W + x as u32) as usize],
        splat::EMPTY,
        "the wide flake is not splatted"
    );

    // A list too short counts every wide flake, so the caller can grow it.
    let many: Vec<Particle> = (0..5).map(|_| particles[2]).collect();
    let out = splat_on_device(&many, &view, 2);
    assert_eq!(out.overflow_count, 5);
}

#[test]
fn splat_on_a_device_without_64_bit_atomics_is_a_clear_error() {
    let context = Context::from_selector(&DeviceSelector::Default).expect("an OpenCL device");
    let mut info = context.info().clone();
    info.extensions = info
        .extensions
        .split_whitespace()
        .filter(|e| *e != SPLAT_EXTENSION)
        .collect::<Vec<_>>()
        .join(" ");
    let error = splat::check_request(ParticleRender::Splat, &info).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains(SPLAT_EXTENSION) && message.contains(&info.name),
        "{message}"
    );
    assert!(!splat::supported(&info));
    // Sprites and auto are always possible (auto then draws sprites).
    splat::check_request(ParticleRender::Sprites, &info).unwrap();
    splat::check_request(ParticleRender::Auto, &info).unwrap();
}

/// A world point the camera's matrix `m` puts at window position `(x, y)` (pixels from the
/// bottom-left) with clip w `w`.
fn unproject(m: &Mat4, x: f32, y: f32, w: f32) -> Vec3 {
    let inv = m.inverse();
    let ndc = |z: f32| {
        let p = inv * glam::Vec4::new(2.0 * x / W as f32 - 1.0, 2.0 * y / H as f32 - 1.0, z, 1.0);
        p.truncate() / p.w
    };
    // Along the line of sight through the pixel, at view distance `w` (clip w is linear along
    // it, from the near plane's point to the far plane's).
    let (a, b) = (ndc(-1.0), ndc(1.0));
    let (wa, wb) = ((*m * a.extend(1.0)).w, (*m * b.extend(1.0)).w);
    a + (b - a) * ((w - wa) / (wb - wa))
}

#[test]
fn faint_flakes_on_one_line_of_sight_add_up_in_the_coverage_counter() {
    let (m, view) = view();
    // Flakes drawn at the pixel floor (1.5 px) but projecting 0.2 to 1.3 px: each has the alpha
    // (projected / drawn)² on the pixel under its centre, and all sit on the line of sight of
    // pixel (40, 30), nearest last.
    let (px, py) = (40u32, 30u32);
    let projected = [0.2f32, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 0.25, 0.4];
    let mut particles = Vec::new();
    let mut alphas = Vec::new();
    for (i, d) in projected.iter().enumerate() {
        let w = 60.0 - 3.0 * i as f32;
        let p = unproject(&m, px as f32 + 0.5, py as f32 + 0.5, w);
        let (x, y, _, w_cpu) = project(&m, p);
        assert!((x - px as f32 - 0.5).abs() < 1e-2 && (y - py as f32 - 0.5).abs() < 1e-2);
        particles.push(Particle::new(p.into(), radius_for(&view, *d, w_cpu)));
        let drawn = d.max(view.min_diameter);
        alphas.push((d / drawn).powi(2));
    }
    // An opaque flake elsewhere, 4.6 px wide (the pixels 2.24 px from its centre are in its
    // soft rim): alpha 255 in its middle, nothing in its counter there.
    let (ox, oy) = (70u32, 20u32);
    let p = unproject(&m, ox as f32 + 0.5, oy as f32 + 0.5, 30.0);
    particles.push(Particle::new(p.into(), radius_for(&view, 4.6, 30.0)));

    let out = splat_on_device(&particles, &view, 4);
    let pixel = (py * W + px) as usize;
    let expected_units: f64 = alphas
        .iter()
        .map(|&a| -(1.0 - f64::from(a)).ln() * f64::from(COVERAGE_ONE))
        .sum();
    let got = out.coverage[pixel];
    assert!(
        (f64::from(got) - expected_units).abs() <= 1.0 + 1e-3 * expected_units,
        "counter {got}, expected Σ −ln(1 − α) = {expected_units:.1} units"
    );
    // The opacity the composite draws: 1 − Π(1 − α), as sprites blended over one another.
    let opacity = 1.0 - alphas.iter().map(|a| 1.0 - a).product::<f32>();
    assert!(
        (coverage_alpha(got) - opacity).abs() < 1e-3,
        "opacity {} from the counter, 1 − Π(1 − α) = {opacity}",
        coverage_alpha(got)
    );
    let nearest = particles[alphas.len() - 1];
    let (_, _, near_depth, _) = project(&m, nearest.position.into());
    let (depth, rgba) = decode(out.image[pixel]).expect("the pixel holds a flake");
    assert!(
        (depth - near_depth).abs() < 1e-6,
        "the nearest flake's depth"
    );
    let near_alpha = alphas[alphas.len() - 1];
    assert!(
        (f32::from(rgba[3]) / 255.0 - near_alpha).abs() < 1.0 / 255.0,
        "the nearest flake's own alpha {} in the word, {near_alpha} expected",
        rgba[3]
    );
    // Each faint flake covers the one pixel under its centre (the floor's radius is 0.75 px).
    let around: Vec<u32> = [(-1i32, 0i32), (1, 0), (0, -1), (0, 1)]
        .iter()
        .map(|(dx, dy)| {
            out.coverage[((py as i32 + dy) as u32 * W + (px as i32 + dx) as u32) as usize]
        })
        .collect();
    assert_eq!(around, vec![0; 4], "counters beside the pixel");

    let opaque = (oy * W + ox) as usize;
    let (_, rgba) = decode(out.image[opaque]).expect("the opaque flake");
    assert_eq!(rgba[3], 255);
    assert_eq!(out.coverage[opaque], 0, "an opaque flake adds nothing");
    // Its soft rim is translucent: there each pixel's counter gives back the rim's alpha.
    let (fx, fy, _, fw) = project(&m, p);
    let r = 0.5 * 2.0 * particles[particles.len() - 1].radius * view.point_scale / fw;
    let mut rim_pixels = 0;
    for y in oy - 4..=oy + 4 {
        for x in ox - 4..=ox + 4 {
            let r2 = Vec2::new(x as f32 + 0.5 - fx, y as f32 + 0.5 - fy).length_squared() / (r * r);
            let t = ((r2 - 0.81) / (1.0 - 0.81)).clamp(0.0, 1.0);
            let alpha = if r2 > 1.0 {
                0.0
            } else {
                1.0 - t * t * (3.0 - 2.0 * t)
            };
            if alpha * 255.0 >= 254.5 {
                continue;
            }
            let got = coverage_alpha(out.coverage[(y * W + x) as usize]);
            assert!(
                (got - alpha).abs() < 2e-3,
                "rim pixel ({x}, {y}): opacity {got} from the counter, alpha {alpha}"
            );
            rim_pixels += usize::from(alpha > 0.01);
        }
    }
    assert!(rim_pixels >= 4, "{rim_pixels} translucent rim pixels");
    assert_eq!(coverage_alpha(0), 0.0);
    // Nothing anywhere else but the opaque flake's disc (its rim is translucent).
    let stray: Vec<usize> = (0..out.coverage.len())
        .filter(|&i| out.coverage[i] != 0 && i != pixel)
        .filter(|&i| {
            let (x, y) = ((i as u32 % W) as f32, (i as u32 / W) as f32);
            (x - ox as f32).hypot(y - oy as f32) > 4.0
        })
        .collect();
    assert!(stray.is_empty(), "counters set at {stray:?}");
}
