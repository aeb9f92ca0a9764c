//! `snowsim bench snow`: the snow's frame on the device, per particle count and sort mode,
//! with the particle update measured against the device's copy bandwidth.
//!
//! The update's **bytes** are the unique bytes it must move: per particle 44 read (two
//! `float4`, position and velocity, and three `uint`; the flutter and size are derived from
//! the id, not read) and 56 written (position, velocity, tetrahedron, respawn count
//! and the drawn `float4`), plus the mesh data it gathers once at least (the tetrahedra's
//! nodes, the vertices' coordinates and the wind: 16 bytes each per tetrahedron and twice per
//! vertex). Their time at the copy bandwidth over the update's measured time is the fraction
//! of that roofline reached. The deposit is part of the update (its atomics); the sort,
//! permutation and cover smoothing are timed apart.

use std::mem::size_of;

use serde::Serialize;

use crate::bench::copy::copy_bandwidth;
use crate::cl::{Context, DeviceBuffer, OutputBuffer};
use crate::particle::{PARTICLE_BYTES, Particle};
use crate::scene::SortMode;
use crate::sim::{Error, Result, SimSetup, Simulation};

/// Bytes of a `float4` (or an `int4`).
const FLOAT4_BYTES: u64 = size_of::<[f32; 4]>() as u64;
/// Bytes of a `uint`.
const UINT_BYTES: u64 = size_of::<u32>() as u64;

/// Bytes the update reads and writes per particle: reads two `float4` and three `uint` (44),
/// writes two `float4`, two `uint` and the drawn particle (56).
pub const PARTICLE_UPDATE_BYTES: u64 = (2 * FLOAT4_BYTES + 3 * UINT_BYTES)
    + (2 * FLOAT4_BYTES + 2 * UINT_BYTES + PARTICLE_BYTES as u64);

/// One particle count and sort mode, per frame (means over the timed frames).
#[derive(Clone, Debug, Serialize)]
pub struct SnowBenchRow {
    /// Particles.
    pub particles: usize,
    /// The sort mode.
    pub sort: &'static str,
    /// Frames timed (after the warm-up).
    pub frames: u32,
    /// The particle update, ms.
    pub update_ms: f64,
    /// The sort's own kernels (keys, merges, redistribution), ms.
    pub sort_ms: f64,
    /// Applying the sort's order to the particle arrays (one launch), ms.
    pub permute_ms: f64,
    /// The cover's smoothing and, with `ground.drift`, its drift, ms.
    pub cover_ms: f64,
    /// Everything the frame ran on the device, ms.
    pub frame_ms: f64,
    /// Unique bytes of the update (particles and mesh).
    pub update_bytes: u64,
    /// Those bytes over the update's time, GB/s.
    pub update_gb_per_s: f64,
    /// Fraction of the copy-bandwidth roofline the update reaches.
    pub update_roofline: f64,
    /// The device's copy bandwidth, GB/s.
    pub copy_gb_per_s: f64,
}

/// Times `frames` frames after `warmup` frames of `setup`'s simulation (a scene's snow in a
/// fixed wind: its profile, or a frozen field), for each particle count, in `mode`.
pub fn run(
    context: &Context,
    setup: &SimSetup,
    counts: &[usize],
    mode: SortMode,
    warmup: u32,
    frames: u32,
) -> Result<Vec<SnowBenchRow>> {
    let copy = copy_bandwidth(context, 1 << 22, 10)?;
    let Some(scene) = &setup.scene else {
        return Err(Error::InvalidParameter(
            "the snow benchmark needs a scene's simulation".into(),
        ));
    };
    let mesh = &scene.domain.mesh;
    let mesh_bytes = FLOAT4_BYTES
        * (mesh.count(crate::meshio::ElementKind::Tetrahedra) as u64
            + 2 * mesh.vertices.len() as u64);
    let mut rows = Vec::new();
    for &n in counts {
        let mut setup = setup.clone();
        let Some(config) = setup.scene.as_mut().and_then(|s| s.snow.as_mut()) else {
            return Err(Error::InvalidParameter(
                "the snow benchmark's scene simulates no snow".into(),
            ));
        };
        config.particles = n;
        config.sort.mode = mode;
        // Every frame sorted, so that the sort's cost is a sort's, not one in four's.
        config.sort.every = 1;
        let mut simulation = Simulation::new(context, setup)?;
        let mut render = DeviceBuffer::<Particle>::zeroed(context, n)?;
        let mut render = OutputBuffer::Device(&mut render);
        let mut timeline = context.timeline();
        simulation.reset(context, &mut render, &mut timeline)?;
        for _ in 0..warmup {
            simulation.step(context, &mut render, &mut timeline)?;
        }
        timeline.resolve()?;
        let (mut update, mut sort, mut permute, mut cover) = (0.0, 0.0, 0.0, 0.0);
        for _ in 0..frames.max(1) {
            simulation.step(context, &mut render, &mut timeline)?;
            for (stage, _, time) in timeline.per_launch()? {
                let ms = time.as_secs_f64() * 1e3;
                match stage {
                    crate::snow::STEP_STAGE => update += ms,
                    crate::snow::COVER_STAGE | crate::snow::DRIFT_STAGE => cover += ms,
                    "sort.permute" => permute += ms,
                    _ => sort += ms,
                }
            }
            timeline.resolve()?;
        }
        simulation.settle()?;
        let f = f64::from(frames.max(1));
        let (update, sort, permute, cover) = (update / f, sort / f, permute / f, cover / f);
        let bytes = n as u64 * PARTICLE_UPDATE_BYTES + mesh_bytes;
        let rate = bytes as f64 / (update * 1e-3).max(1e-12);
        rows.push(SnowBenchRow {
            particles: n,
            sort: mode.name(),
            frames: frames.max(1),
            update_ms: update,
            sort_ms: sort,
            permute_ms: permute,
            cover_ms: cover,
            frame_ms: update + sort + permute + cover,
            update_bytes: bytes,
            update_gb_per_s: rate / 1e9,
            update_roofline: rate / copy,
            copy_gb_per_s: copy / 1e9,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_update_moves_44_bytes_in_and_56_out_per_particle() {
        assert_eq!(PARTICLE_UPDATE_BYTES, 44 + 56);
    }
}
