//! The inflow wind profile sampled on the domain mesh's vertices.

use crate::scene::Wind;
use crate::terrain::Heightfield;

/// The scene's wind profile at every vertex, by its height above the ground below it: xyz the
/// velocity in m/s, w zero. This is the inflow boundary value on inflow sides, the wind's
/// initial field, and the field the snow is developed against before the solver runs.
///
/// The height is measured from `ground` bilinearly, which is exact for terrain meshes (their
/// vertices stand in the columns of the ground grid) and a sampled approximation for mesh
/// domains; heights below the ground count as zero.
pub fn vertex_velocities(
    vertices: &[[f64; 3]],
    ground: &Heightfield,
    wind: &Wind,
) -> Vec<[f32; 4]> {
    vertices
        .iter()
        .map(|p| {
            let height = p[2] - f64::from(ground.height_at(p[0] as f32, p[1] as f32));
            let [x, y, z] = wind.velocity_at(height.max(0.0));
            [x as f32, y as f32, z as f32, 0.0]
        })
        .collect()
}
