//! What a scene costs and the limits that `snowsim run` meets after the scene file is valid:
//! checked by `scene check` and `run` alike, so that `scene check` never passes a scene that
//! `run` refuses.
//!
//! [`check_run`] holds the limits of running a scene: the particle buffer (one `float4` per
//! particle in a GL buffer, whose size is a GL `int`: at most [`MAX_PARTICLES`]), the ground
//! grid's GL buffers, lengths that the 32-bit kernels and shaders can hold
//! ([`MAX_LENGTH`]), the host memory of the ground and, given a device, its memory.
//! [`check_domain_mesh`] checks the host memory of building the tetrahedral domain
//! (`scene check` builds it; `run` builds only the ground). Errors are
//! [`SceneError::Invalid`], located at the key's line in the scene file.

use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};

use crate::budget::{Budget, Estimate, bytes_of};
use crate::cl::DeviceInfo;
use crate::input;
use crate::scene::range::Number;
use crate::scene::{Domain, Scene, SceneError};
use crate::terrain::TerrainSpec;

/// Largest `ground.cover_refinement`: pieces per ground edge of the cover's mesh (a lattice
/// index fits a byte, and a volume below 2^59 units times it fits 64 bits).
pub const MAX_COVER_REFINEMENT: u32 = 16;

/// The most snow particles that can run: their `float4` GL buffer's size in bytes is a GL
/// `int`, so `16 × particles ≤ 2^31 − 1`: 2^27 − 1.
pub const MAX_PARTICLES: u64 = (i32::MAX as u64) / PARTICLE_BYTES;

/// Bytes of one particle: a `float4` (position and radius).
pub const PARTICLE_BYTES: u64 = crate::particle::PARTICLE_BYTES as u64;

/// Device bytes of one snow particle's state besides its drawn `float4`: two `float4` arrays
/// (position, velocity) and three `uint` arrays (tetrahedron, id, respawn count), their sort
/// scratch copies (the tetrahedra's with Hilbert keys only), and the sort's keys (Hilbert keys
/// only), indices and identity: the most, with Hilbert keys.
pub const SNOW_STATE_BYTES: u64 = 2 * (2 * 16 + 3 * 4) + 3 * 4;

/// The largest length (extent, height, camera coordinate) a scene may give, in metres: the
/// kernels and shaders compute in 32-bit reals, where squared distances of much longer lengths
/// overflow; 10 000 km is beyond any terrain.
pub const MAX_LENGTH: f64 = 1e7;

/// The most wind steps one frame may run: a scene whose wind step is this much shorter than
/// its frame step would never finish a frame in real time, and a tiny `wind.step` (or a
/// micrometre domain, whose default step is as tiny) would not finish one at all.
pub const MAX_WIND_STEPS_PER_FRAME: f64 = 64.0;

/// `sin 2°`: a side of the domain within 2° of parallel to the wind is slip (neither inflow
/// nor outflow) for the wind solver ([`crate::wind::boundary`]).
pub const SLIP_SINE: f64 = 0.034_899_496_702_500_97;

/// The least positive 32-bit float the kernels compute with that is not subnormal: devices
/// may flush smaller ones to 0.
const LEAST_F32: f64 = f32::MIN_POSITIVE as f64;

/// How far a drag coefficient must stay below the largest 32-bit float: the snow's step
/// multiplies it by two speeds (the wind's and the flake's slip), each well below 1000 m/s.
const DRAG_HEADROOM: f64 = 1e6;

/// Why the finite scene value `value` cannot reach the kernels, which compute in 32-bit
/// floats: not 0 itself, it is 0 there (or so small that a device may flush it to 0), or it is
/// infinite there. `None` when it fits.
pub fn single_precision(value: f64) -> Option<String> {
    if value == 0.0 || !value.is_finite() {
        return None;
    }
    if value.abs() < LEAST_F32 {
        Some(format!(
            "{} is 0 in the 32-bit floats the kernels compute with (the least they hold is \
             {:e})",
            Number(value),
            f32::MIN_POSITIVE
        ))
    } else if value.abs() > f64::from(f32::MAX) {
        Some(format!(
            "{} is infinite in the 32-bit floats the kernels compute with (the most they hold \
             is {:e})",
            Number(value),
            f32::MAX
        ))
    } else {
        None
    }
}

/// Checks that a frame of `time_step` seconds (as the simulation holds it: a 32-bit float)
/// runs at most [`MAX_WIND_STEPS_PER_FRAME`] wind steps of `wind_step` seconds. The error
/// says why, starting with `what`: the wind step as the reader knows it (`wind.step 1e-4 s`,
/// `the default wind step from the mesh, 8e-8 s,`). `scene check` checks a scene's
/// `wind.step` with it, and `run` (through [`crate::sim::SimSetup::new`]) the step its
/// solver will take.
pub fn check_wind_steps(time_step: f32, wind_step: f64, what: &str) -> Result<(), String> {
    let per_frame = f64::from(time_step) / wind_step;
    if per_frame.is_nan() || per_frame > MAX_WIND_STEPS_PER_FRAME {
        return Err(format!(
            "{what} against time.step {} s makes {per_frame:.3e} wind steps a frame, more than \
             the {MAX_WIND_STEPS_PER_FRAME} a frame may run; give a wind.step of at least \
             time.step / {MAX_WIND_STEPS_PER_FRAME} = {} s, set simulate.wind_every, or lower \
             time.step",
            Number(time_step),
            Number(time_step / MAX_WIND_STEPS_PER_FRAME as f32),
        ));
    }
    Ok(())
}

/// Which horizontal axes of a terrain domain the wind blowing along `direction` (a unit
/// vector) crosses: their two sides are inflow and outflow, not slip ([`SLIP_SINE`]). Along
/// such an axis one cell leaves every vertex on an inflow or an outflow side: no pressure
/// unknown, nothing for the wind's projection to solve.
pub fn crossed_axes(direction: [f64; 2]) -> [bool; 2] {
    direction.map(|component| component.abs() > SLIP_SINE)
}

/// Why the snow's drag coefficient `k = g / v_t²` of the smallest flakes (diameter
/// `flake_diameter[0]`, falling at `fall_speed · (d / d_mean)^0.2`), computed as the kernels
/// compute it in 32-bit floats, cannot be: `v_t²` is 0 there, or `k` is too large to be
/// multiplied by two speeds. `None` when it fits. The scene's validation and
/// [`crate::snow::SnowConfig::validate`] both ask.
pub fn drag_problem(fall_speed: f32, gravity: f32, flake_diameter: [f32; 2]) -> Option<String> {
    let [smallest, largest] = flake_diameter;
    let mean = 0.5 * (smallest + largest);
    let speed = fall_speed * (smallest / mean).powf(0.2);
    let squared = speed * speed;
    let drag = f64::from(gravity) / f64::from(squared);
    let most = f64::from(f32::MAX) / DRAG_HEADROOM;
    if f64::from(squared) >= LEAST_F32 && drag <= most {
        return None;
    }
    Some(format!(
        "{} m/s for the mean flake makes the smallest flakes ({} m, snow.flake_diameter) fall \
         at {} m/s, and their drag coefficient snow.gravity / v_t² {} 1/m: more than the {} 1/m \
         that the kernels' 32-bit floats can multiply by two speeds; raise snow.fall_speed",
        Number(fall_speed),
        Number(smallest),
        Number(speed),
        Number::rounded(drag),
        Number::rounded(most)
    ))
}

/// Bytes of one ground vertex in the renderer's interleaved GL buffer: position, normal and
/// snow depth, 7 floats.
const GROUND_VERTEX_GL_BYTES: u64 = 28;

/// Host bytes per ground vertex of a run besides the ground surface mesh: the render mesh's
/// positions, normals and snow depth, its interleaved copy, and the kernels' height grid.
const RUN_BYTES_PER_GROUND_VERTEX: u64 = 80;

/// Host bytes per ground triangle of a run besides the ground surface mesh: the render
/// mesh's triangles and the mesher's list.
const RUN_BYTES_PER_GROUND_TRIANGLE: u64 = 24;

/// Checks the limits of running `scene` with `particles` snow particles (its
/// `snow.particles`, or `run --particles`): particle count, lengths, the ground's GL buffers
/// and host memory, and, given `device`, the device's memory.
pub fn check_run(
    scene: &Scene,
    particles: u64,
    device: Option<&DeviceInfo>,
) -> Result<(), SceneError> {
    let locate = Locator { scene };
    if particles == 0 || particles > MAX_PARTICLES {
        return Err(locate.error(
            "snow.particles",
            format!(
                "{particles} particles cannot run: the particle buffer holds 1 to \
                 {MAX_PARTICLES} (2^27 − 1: 16 bytes each in a GL buffer of at most 2 GiB)"
            ),
        ));
    }
    check_lengths(scene, &locate)?;
    let mut host = bytes_of(&[particles, PARTICLE_BYTES]);
    let per_particle = if scene.simulate.snow {
        PARTICLE_BYTES + SNOW_STATE_BYTES
    } else {
        PARTICLE_BYTES
    };
    let mut device_bytes = bytes_of(&[particles, per_particle]);
    if let Domain::Terrain { spec, .. } = &scene.domain {
        check_ground_buffers(spec, &locate)?;
        let [nx, ny] = spec.cells.map(|n| n as u64);
        let columns = bytes_of(&[nx.saturating_add(1), ny.saturating_add(1)]);
        let triangles = bytes_of(&[nx, ny, 2]);
        host = host
            .saturating_add(spec.ground_surface_bytes())
            .saturating_add(bytes_of(&[columns, RUN_BYTES_PER_GROUND_VERTEX]))
            .saturating_add(bytes_of(&[triangles, RUN_BYTES_PER_GROUND_TRIANGLE]));
        device_bytes = device_bytes.saturating_add(bytes_of(&[columns, 4]));
        let estimate = Estimate::new(cells_setting(spec), "the ground of a run", host);
        Budget::host()
            .check(&estimate)
            .map_err(|e| locate.error("domain.cells", e.to_string()))?;
    }
    let setting = format!("{particles} snow particles");
    let particles_bytes = bytes_of(&[particles, PARTICLE_BYTES]);
    let host_estimate = Estimate::new(&setting, "the particles", particles_bytes);
    let result = match device {
        Some(info) => {
            let on_device = Estimate::new(&setting, "the particles and the ground", device_bytes)
                .with_largest_allocation(particles_bytes);
            crate::budget::check_host_and_device(&host_estimate, &on_device, info)
        }
        None => Budget::host().check(&host_estimate),
    };
    result.map_err(|e| locate.error("snow.particles", e.to_string()))
}

/// Checks the host memory of building `scene`'s tetrahedral domain as `scene check` does
/// (meshing, renumbering, checking). A mesh domain's file is checked when it is read.
pub fn check_domain_mesh(scene: &Scene) -> Result<(), SceneError> {
    let Domain::Terrain { spec, .. } = &scene.domain else {
        return Ok(());
    };
    let estimate = Estimate::new(
        cells_setting(spec),
        "the domain mesh",
        spec.meshing_peak_bytes(true),
    );
    Budget::host()
        .check(&estimate)
        .map_err(|e| Locator { scene }.error("domain.cells", e.to_string()))
}

/// ``"`domain.cells = [96, 96]` × 20 layers"``.
fn cells_setting(spec: &TerrainSpec) -> String {
    format!(
        "`domain.cells = [{}, {}]` × {} layers",
        spec.cells[0], spec.cells[1], spec.layers
    )
}

/// The ground grid must fit the renderer's GL buffers: vertices of 28 bytes and triangle
/// indices, each buffer at most 2^31 − 1 bytes and its count a GL `int`.
fn check_ground_buffers(spec: &TerrainSpec, locate: &Locator<'_>) -> Result<(), SceneError> {
    let [nx, ny] = spec.cells.map(|n| n as u64);
    let vertices = bytes_of(&[nx.saturating_add(1), ny.saturating_add(1)]);
    let indices = bytes_of(&[nx, ny, 6]);
    let max_vertices = i32::MAX as u64 / GROUND_VERTEX_GL_BYTES;
    let max_indices = i32::MAX as u64 / 4;
    if vertices > max_vertices || indices > max_indices {
        return Err(locate.error(
            "domain.cells",
            format!(
                "[{nx}, {ny}] cells make {vertices} ground vertices and {indices} triangle \
                 indices; the renderer's GL buffers hold at most {max_vertices} and \
                 {max_indices} (2 GiB each)"
            ),
        ));
    }
    Ok(())
}

/// Extents, heights and camera coordinates within ±[`MAX_LENGTH`].
fn check_lengths(scene: &Scene, locate: &Locator<'_>) -> Result<(), SceneError> {
    let mut lengths: Vec<(&str, f64)> = Vec::new();
    if let Domain::Terrain { spec, .. } = &scene.domain {
        lengths.extend([
            ("domain.size", spec.size[0]),
            ("domain.size", spec.size[1]),
            ("domain.top", spec.size[2]),
            ("domain.relief", spec.relief),
        ]);
    }
    lengths.push(("wind.reference_height", scene.wind.reference_height));
    let camera = &scene.camera;
    lengths.extend(camera.position.iter().map(|&v| ("camera.position", v)));
    lengths.extend(camera.target.iter().map(|&v| ("camera.target", v)));
    match lengths
        .iter()
        .find(|(_, v)| v.is_nan() || v.abs() > MAX_LENGTH)
    {
        Some(&(key, value)) => Err(locate.error(
            key,
            format!(
                "{} m is beyond ±{MAX_LENGTH:e} m, the longest length the simulation \
                 computes with (in 32-bit reals)",
                if value.is_finite() && value.abs() >= 1e16 {
                    format!("{value:e}")
                } else {
                    format!("{value}")
                }
            ),
        )),
        None => Ok(()),
    }
}

/// Errors located at a key of the scene's file, read again when an error is reported.
struct Locator<'a> {
    scene: &'a Scene,
}

impl Locator<'_> {
    fn error(&self, key: &str, message: String) -> SceneError {
        let path = &self.scene.path;
        let (line, column) = match located(path, key) {
            Some((l, c)) => (Some(l), Some(c)),
            None => (None, None),
        };
        SceneError::Invalid {
            path: path.clone(),
            line,
            column,
            key: key.to_string(),
            message,
        }
    }
}

/// 1-based line and column of the value of the dotted `key` in the scene file at `path`, or
/// of the deepest table on the way that exists.
fn located(path: &Path, key: &str) -> Option<(usize, usize)> {
    let text = input::read_text(path, input::TEXT_LIMIT).ok()?;
    let span = span_of(&text, key)?;
    let before = text.get(..span.start)?;
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some((line, before[line_start..].chars().count() + 1))
}

fn span_of(text: &str, key: &str) -> Option<Range<usize>> {
    let document = DeTable::parse(text).ok()?;
    let mut table = document.get_ref();
    let mut span = None;
    for part in key.split('.') {
        let Some((k, value)) = table.iter().find(|(k, _)| k.get_ref().as_ref() == part) else {
            break;
        };
        match value.get_ref() {
            DeValue::Table(inner) => {
                span = Some(k.span());
                table = inner;
            }
            _ => {
                span = Some(value.span());
                break;
            }
        }
    }
    span
}
