//! The ground of a scene's domain as the simulation and the drawing both need it: the ground
//! surface's triangles, the same ground as a regular grid of heights (for kernels that look a
//! height up), and the box of air above it.
//!
//! A terrain domain gives all three straight from [`Terrain`] (the heightmap sampled at the
//! scene's `cells`); a mesh domain from its ground-referenced boundary triangles, sampled on a
//! grid of at most [`MAX_GROUND_GRID`] points a side. The surface's vertex order is the one the
//! snow's cover uses ([`DomainMesh::ground`](super::DomainMesh)), so depths laid on it are drawn
//! vertex for vertex.

use glam::{Vec2, Vec3};

use crate::meshio::{ElementKind, Mesh};
use crate::terrain::{Heightfield, SceneBox, Terrain};

use super::{Domain, Scene, SceneError};

/// Largest side of the ground grid sampled from a mesh domain's ground triangles.
pub const MAX_GROUND_GRID: usize = 513;

/// The ground of a scene: its surface, its grid of heights and the air above it.
#[derive(Clone, Debug)]
pub struct SceneGround {
    /// The ground surface's triangles (normals up, out of the ground).
    pub surface: Mesh,
    /// The ground as a regular grid of heights: the terrain's own grid points, or a mesh
    /// domain's ground triangles sampled on a grid.
    pub grid: Heightfield,
    /// The air: the domain's extent, from the lowest ground to the top.
    pub air: SceneBox,
}

impl SceneGround {
    /// The ground surface's vertex positions in single precision.
    pub fn positions(&self) -> Vec<Vec3> {
        positions(&self.surface)
    }

    /// The ground surface's triangles as vertex index triples.
    pub fn triangles(&self) -> Vec<[u32; 3]> {
        triangles(&self.surface)
    }
}

fn positions(mesh: &Mesh) -> Vec<Vec3> {
    mesh.vertices
        .iter()
        .map(|v| Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32))
        .collect()
}

fn triangles(mesh: &Mesh) -> Vec<[u32; 3]> {
    mesh.elements(ElementKind::Triangles)
        .node_slice()
        .chunks_exact(3)
        .map(|t| [t[0], t[1], t[2]])
        .collect()
}

fn domain_error(scene: &Scene, key: &str, message: impl std::fmt::Display) -> SceneError {
    SceneError::Domain {
        path: scene.path.clone(),
        key: key.into(),
        message: message.to_string(),
    }
}

/// The ground surface, the ground grid and the box of air of `scene`'s domain. Errors name the
/// scene file and key (a heightmap that cannot be meshed, a mesh file that cannot be read, a
/// mesh with no volume).
pub fn ground_of(scene: &Scene) -> Result<SceneGround, SceneError> {
    match &scene.domain {
        Domain::Terrain { spec, image, .. } => {
            let terrain = Terrain::new(*spec, image.as_ref())
                .map_err(|e| domain_error(scene, "domain", e))?;
            let surface = terrain.ground_surface().mesh;
            let [nx, ny] = spec.cells;
            let heights: Vec<f32> = (0..=ny)
                .flat_map(|j| (0..=nx).map(move |i| (i, j)))
                .map(|(i, j)| terrain.height(i, j) as f32)
                .collect();
            let [x, y, top] = spec.size.map(|v| v as f32);
            let grid = Heightfield {
                nx: nx + 1,
                ny: ny + 1,
                lo: Vec2::ZERO,
                hi: Vec2::new(x, y),
                heights,
            };
            let lowest = grid.range().0.min(0.0);
            let air = SceneBox {
                lo: Vec3::new(0.0, 0.0, lowest),
                hi: Vec3::new(x, y, top),
            };
            Ok(SceneGround { surface, grid, air })
        }
        Domain::Mesh { .. } => {
            let domain = scene.build_domain(false)?;
            let surface = domain.ground.mesh;
            let (lo, hi) = domain.mesh.vertices.iter().fold(
                (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
                |(lo, hi), v| {
                    let p = Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32);
                    (lo.min(p), hi.max(p))
                },
            );
            let air = SceneBox { lo, hi };
            if !air.is_valid() {
                return Err(domain_error(
                    scene,
                    "domain.mesh",
                    format!("the mesh spans {lo} .. {hi}: no volume for the snow to fall through"),
                ));
            }
            let triangles = triangles(&surface);
            let side = ((triangles.len() as f64 / 2.0).sqrt().ceil() as usize + 1)
                .clamp(2, MAX_GROUND_GRID);
            let grid = Heightfield::from_triangles(
                &positions(&surface),
                &triangles,
                side,
                side,
                lo.truncate(),
                hi.truncate(),
                lo.z,
            )
            .map_err(|e| domain_error(scene, "domain.mesh", e))?;
            Ok(SceneGround { surface, grid, air })
        }
    }
}
