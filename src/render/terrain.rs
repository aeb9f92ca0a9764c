//! The ground surface the renderer draws: any triangle surface with a snow depth per vertex,
//! built from a regular heightfield or from triangles given directly.

use glam::{Vec2, Vec3};

use super::error::{Error, Result};

/// Heights (z) on a regular grid over the rectangle `[lo, hi]` of the horizontal (x, y) plane:
/// the form terrain from a heightmap image takes.
#[derive(Clone, Debug, PartialEq)]
pub struct Heightfield {
    /// Grid points along x (at least 2).
    pub nx: usize,
    /// Grid points along y (at least 2).
    pub ny: usize,
    /// Corner with the smallest x and y.
    pub lo: Vec2,
    /// Corner with the largest x and y.
    pub hi: Vec2,
    /// `nx · ny` heights (z), row by row: `heights[iy * nx + ix]`.
    pub heights: Vec<f32>,
}

impl Heightfield {
    /// Samples `height(x, y)` on an `nx × ny` grid over `[lo, hi]`.
    pub fn from_fn(
        nx: usize,
        ny: usize,
        lo: Vec2,
        hi: Vec2,
        height: impl Fn(f32, f32) -> f32,
    ) -> Result<Self> {
        check_grid(nx, ny, lo, hi)?;
        let mut heights = Vec::with_capacity(nx * ny);
        for iy in 0..ny {
            for ix in 0..nx {
                let p = grid_point(ix, iy, nx, ny, lo, hi);
                heights.push(height(p.x, p.y));
            }
        }
        Ok(Self {
            nx,
            ny,
            lo,
            hi,
            heights,
        })
    }

    /// Horizontal position of grid point `(ix, iy)`.
    pub fn point(&self, ix: usize, iy: usize) -> Vec2 {
        grid_point(ix, iy, self.nx, self.ny, self.lo, self.hi)
    }
}

fn check_grid(nx: usize, ny: usize, lo: Vec2, hi: Vec2) -> Result<()> {
    if nx < 2 || ny < 2 {
        return Err(Error::InvalidParameter(format!(
            "a heightfield needs at least 2×2 points, not {nx}×{ny}"
        )));
    }
    if nx.checked_mul(ny).is_none_or(|n| n > u32::MAX as usize) {
        return Err(Error::InvalidParameter(format!(
            "a heightfield of {nx}×{ny} points is too large"
        )));
    }
    if !(lo.is_finite() && hi.is_finite() && hi.x > lo.x && hi.y > lo.y) {
        return Err(Error::InvalidParameter(format!(
            "heightfield extent {lo} .. {hi} is empty or not finite"
        )));
    }
    Ok(())
}

fn grid_point(ix: usize, iy: usize, nx: usize, ny: usize, lo: Vec2, hi: Vec2) -> Vec2 {
    let t = Vec2::new(ix as f32 / (nx - 1) as f32, iy as f32 / (ny - 1) as f32);
    lo + t * (hi - lo)
}

/// A triangle surface ready to draw: positions, normals, the snow depth on each vertex (metres)
/// and triangles as vertex index triples.
#[derive(Clone, Debug, PartialEq)]
pub struct TerrainMesh {
    /// Vertex positions, z up.
    pub positions: Vec<Vec3>,
    /// Unit vertex normals (area-weighted averages of the adjacent faces).
    pub normals: Vec<Vec3>,
    /// Snow depth on each vertex, in metres; the renderer blends to white as it grows.
    pub snow_depth: Vec<f32>,
    /// Triangles, counter-clockwise seen from above (+z).
    pub triangles: Vec<[u32; 3]>,
}

impl TerrainMesh {
    /// A surface from triangles, with normals computed and no snow. Indices must name
    /// existing vertices and positions must be finite.
    pub fn from_triangles(positions: Vec<Vec3>, triangles: Vec<[u32; 3]>) -> Result<Self> {
        if positions.len() > u32::MAX as usize {
            return Err(Error::InvalidParameter(format!(
                "{} terrain vertices do not fit 32-bit indices",
                positions.len()
            )));
        }
        if let Some(i) = positions.iter().position(|p| !p.is_finite()) {
            return Err(Error::InvalidParameter(format!(
                "terrain vertex {i} is not finite: {}",
                positions[i]
            )));
        }
        if let Some((t, tri)) = triangles
            .iter()
            .enumerate()
            .find(|(_, tri)| tri.iter().any(|&v| v as usize >= positions.len()))
        {
            return Err(Error::InvalidParameter(format!(
                "terrain triangle {t} {tri:?} names a vertex beyond the {} given",
                positions.len()
            )));
        }
        let normals = vertex_normals(&positions, &triangles);
        let snow_depth = vec![0.0; positions.len()];
        Ok(Self {
            positions,
            normals,
            snow_depth,
            triangles,
        })
    }

    /// The surface of a heightfield: one vertex per grid point, two triangles per cell.
    pub fn from_heightfield(field: &Heightfield) -> Result<Self> {
        check_grid(field.nx, field.ny, field.lo, field.hi)?;
        if field.heights.len() != field.nx * field.ny {
            return Err(Error::InvalidParameter(format!(
                "a {}×{} heightfield needs {} heights, not {}",
                field.nx,
                field.ny,
                field.nx * field.ny,
                field.heights.len()
            )));
        }
        let (nx, ny) = (field.nx, field.ny);
        let positions: Vec<Vec3> = (0..ny)
            .flat_map(|iy| (0..nx).map(move |ix| (ix, iy)))
            .map(|(ix, iy)| {
                let p = field.point(ix, iy);
                Vec3::new(p.x, p.y, field.heights[iy * nx + ix])
            })
            .collect();
        let mut triangles = Vec::with_capacity(2 * (nx - 1) * (ny - 1));
        for iy in 0..ny - 1 {
            for ix in 0..nx - 1 {
                let a = (iy * nx + ix) as u32;
                let b = a + 1;
                let c = a + nx as u32;
                let d = c + 1;
                // Counter-clockwise seen from +z (x right, y up).
                triangles.push([a, b, c]);
                triangles.push([b, d, c]);
            }
        }
        Self::from_triangles(positions, triangles)
    }

    /// The triangles of a mesh read or generated by [`meshio`](crate::meshio), e.g. the ground
    /// surface of a terrain (`Terrain::ground_surface().mesh`): its vertices (converted to
    /// `f32`) and its `Triangles` elements; other elements are ignored.
    pub fn from_mesh_triangles(mesh: &crate::meshio::Mesh) -> Result<Self> {
        let positions = mesh
            .vertices
            .iter()
            .map(|v| Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32))
            .collect();
        let triangles = mesh
            .elements(crate::meshio::ElementKind::Triangles)
            .node_slice()
            .chunks_exact(3)
            .map(|t| [t[0], t[1], t[2]])
            .collect();
        Self::from_triangles(positions, triangles)
    }

    /// Replaces the snow depth of every vertex; the length must match the vertex count.
    pub fn set_snow_depth(&mut self, depth: &[f32]) -> Result<()> {
        if depth.len() != self.positions.len() {
            return Err(Error::InvalidParameter(format!(
                "{} snow depths given for {} terrain vertices",
                depth.len(),
                self.positions.len()
            )));
        }
        self.snow_depth.copy_from_slice(depth);
        Ok(())
    }

    /// Smallest and largest corner of the vertices' bounding box (zero for no vertex).
    pub fn bounds(&self) -> (Vec3, Vec3) {
        if self.positions.is_empty() {
            return (Vec3::ZERO, Vec3::ZERO);
        }
        self.positions.iter().fold(
            (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
            |(lo, hi), &p| (lo.min(p), hi.max(p)),
        )
    }

    /// Checks that the public fields agree: as many normals and depths as positions, every
    /// index naming a vertex, 32-bit indices enough.
    pub fn validate(&self) -> Result<()> {
        let n = self.positions.len();
        if self.normals.len() != n || self.snow_depth.len() != n {
            return Err(Error::InvalidParameter(format!(
                "terrain has {n} positions but {} normals and {} snow depths",
                self.normals.len(),
                self.snow_depth.len()
            )));
        }
        if n > u32::MAX as usize {
            return Err(Error::InvalidParameter(format!(
                "{n} terrain vertices do not fit 32-bit indices"
            )));
        }
        if let Some(t) = self
            .triangles
            .iter()
            .position(|tri| tri.iter().any(|&v| v as usize >= n))
        {
            return Err(Error::InvalidParameter(format!(
                "terrain triangle {t} {:?} names a vertex beyond the {n} given",
                self.triangles[t]
            )));
        }
        Ok(())
    }

    /// Interleaved vertex data as the terrain shader reads it: position, normal, snow depth.
    pub(crate) fn interleaved(&self) -> Vec<f32> {
        let mut data = Vec::with_capacity(self.positions.len() * 7);
        for ((p, n), s) in self
            .positions
            .iter()
            .zip(&self.normals)
            .zip(&self.snow_depth)
        {
            data.extend_from_slice(&[p.x, p.y, p.z, n.x, n.y, n.z, *s]);
        }
        data
    }
}

fn vertex_normals(positions: &[Vec3], triangles: &[[u32; 3]]) -> Vec<Vec3> {
    let mut normals = vec![Vec3::ZERO; positions.len()];
    for tri in triangles {
        let [a, b, c] = tri.map(|v| positions[v as usize]);
        let n = (b - a).cross(c - a); // length = twice the area: area weighting
        for &v in tri {
            normals[v as usize] += n;
        }
    }
    normals
        .into_iter()
        .map(|n| n.try_normalize().unwrap_or(Vec3::Z))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_heightfield_has_upward_normals_and_ccw_triangles() {
        let field =
            Heightfield::from_fn(3, 4, Vec2::ZERO, Vec2::new(2.0, 3.0), |_, _| 1.0).unwrap();
        let mesh = TerrainMesh::from_heightfield(&field).unwrap();
        assert_eq!(mesh.positions.len(), 12);
        assert_eq!(mesh.triangles.len(), 2 * 2 * 3);
        for n in &mesh.normals {
            assert!((*n - Vec3::Z).length() < 1e-6, "{n}");
        }
        for &[a, b, c] in &mesh.triangles {
            let [a, b, c] = [a, b, c].map(|v| mesh.positions[v as usize]);
            assert!(
                (b - a).cross(c - a).z > 0.0,
                "counter-clockwise seen from above"
            );
        }
        assert_eq!(
            mesh.bounds(),
            (Vec3::new(0.0, 0.0, 1.0), Vec3::new(2.0, 3.0, 1.0))
        );
    }

    #[test]
    fn a_meshio_surface_becomes_a_terrain() {
        use crate::meshio::{ElementKind, Mesh};
        let mut mesh = Mesh::new(3);
        for v in [
            [0.0, 0.0, 1.0],
            [2.0, 0.0, 1.0],
            [0.0, 2.0, 1.0],
            [2.0, 2.0, 1.5],
        ] {
            mesh.push_vertex(v, 0);
        }
        let triangles = mesh.elements_mut(ElementKind::Triangles);
        triangles.push(&[0, 1, 2], 5);
        triangles.push(&[1, 3, 2], 5);
        let terrain = TerrainMesh::from_mesh_triangles(&mesh).unwrap();
        assert_eq!(terrain.triangles, vec![[0, 1, 2], [1, 3, 2]]);
        assert_eq!(terrain.positions[3], Vec3::new(2.0, 2.0, 1.5));
        assert!(terrain.normals.iter().all(|n| n.z > 0.9));
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(Heightfield::from_fn(1, 4, Vec2::ZERO, Vec2::ONE, |_, _| 0.0).is_err());
        assert!(Heightfield::from_fn(2, 2, Vec2::ONE, Vec2::ONE, |_, _| 0.0).is_err());
        assert!(TerrainMesh::from_triangles(vec![Vec3::ZERO; 2], vec![[0, 1, 2]]).is_err());
        let mut mesh = TerrainMesh::from_triangles(vec![Vec3::ZERO; 3], vec![[0, 1, 2]]).unwrap();
        assert!(mesh.set_snow_depth(&[1.0]).is_err());
        assert!(mesh.set_snow_depth(&[1.0, 2.0, 3.0]).is_ok());
    }
}
