//! A procedural scene that stands in for the real one until scene files and terrain from
//! heightmaps exist: rolling hills with snow lying on the high, flat ground, inside a box that
//! the flakes fall through.
//!
//! Coordinates follow the scene module: x east, y north, z up, metres. The real scene plugs in
//! through the same types: a [`TerrainMesh`] (from its ground surface with
//! [`TerrainMesh::from_mesh_triangles`], or from a [`Heightfield`]) and a [`SceneBox`]
//! bounding the air above it.

use glam::{Vec2, Vec3};

use super::error::Result;
use super::terrain::{Heightfield, TerrainMesh};

/// The simulated volume: particles live in `[lo, hi)`, the camera frames it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneBox {
    /// Smallest corner.
    pub lo: Vec3,
    /// Largest corner.
    pub hi: Vec3,
}

/// Side of the test terrain, in metres.
pub const SIDE: f32 = 64.0;
/// Height of the box the flakes fall through, in metres.
pub const HEIGHT: f32 = 40.0;

/// Height of the test terrain at `(x, y)`: a few smooth hills between about 0 and 10 metres.
pub fn hills(x: f32, y: f32) -> f32 {
    let (u, v) = (x / SIDE, y / SIDE);
    let tau = std::f32::consts::TAU;
    4.0 + 2.5 * (tau * u).sin() * (tau * v * 0.75).cos()
        + 1.5 * (tau * (u + v) * 1.5).sin()
        + 1.0 * (tau * (2.5 * u - v)).cos()
}

/// The test terrain: the [`hills`] on a `cells × cells` grid over `SIDE × SIDE` metres, with up
/// to half a metre of snow on high, gentle ground and none on steep slopes.
pub fn terrain(cells: usize) -> Result<TerrainMesh> {
    let field = Heightfield::from_fn(cells + 1, cells + 1, Vec2::ZERO, Vec2::splat(SIDE), hills)?;
    let mut mesh = TerrainMesh::from_heightfield(&field)?;
    let depth: Vec<f32> = mesh
        .positions
        .iter()
        .zip(&mesh.normals)
        .map(|(p, n)| {
            let high = ((p.z - 3.5) / 4.0).clamp(0.0, 1.0);
            let flat = ((n.z - 0.85) / 0.1).clamp(0.0, 1.0);
            0.5 * high * flat
        })
        .collect();
    mesh.set_snow_depth(&depth)?;
    Ok(mesh)
}

/// The box above the test terrain.
pub fn scene_box() -> SceneBox {
    SceneBox {
        lo: Vec3::ZERO,
        hi: Vec3::new(SIDE, SIDE, HEIGHT),
    }
}
