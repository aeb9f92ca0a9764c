//! The ground surface the renderer draws: any triangle surface with a snow depth per vertex,
//! built from a regular heightfield or from triangles given directly; and the box of air above
//! it that the particles live in.

use glam::{Vec2, Vec3};

use super::error::{Error, Result};

/// The simulated volume: particles live in `[lo, hi)`; x east, y north, z up, metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SceneBox {
    /// Smallest corner.
    pub lo: Vec3,
    /// Largest corner.
    pub hi: Vec3,
}

impl SceneBox {
    /// Extent along each axis.
    pub fn size(&self) -> Vec3 {
        self.hi - self.lo
    }

    /// Whether the box is finite and has a positive extent along every axis.
    pub fn is_valid(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite() && self.hi.cmpgt(self.lo).all()
    }

    /// The eight corners.
    pub fn corners(&self) -> [Vec3; 8] {
        std::array::from_fn(|i| {
            Vec3::new(
                if i & 1 == 0 { self.lo.x } else { self.hi.x },
                if i & 2 == 0 { self.lo.y } else { self.hi.y },
                if i & 4 == 0 { self.lo.z } else { self.hi.z },
            )
        })
    }
}

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

    /// Samples a triangle surface on an `nx × ny` grid over `[lo, hi]`: at each grid point
    /// the highest of the triangles whose horizontal projection covers it, `fill` where none
    /// does (a hole, or outside the surface). This turns any ground (e.g. a mesh domain's
    /// ground triangles) into the regular grid that kernels sample.
    pub fn from_surface(
        surface: &TerrainMesh,
        nx: usize,
        ny: usize,
        lo: Vec2,
        hi: Vec2,
        fill: f32,
    ) -> Result<Self> {
        check_grid(nx, ny, lo, hi)?;
        surface.validate()?;
        let mut heights = vec![f32::NEG_INFINITY; nx * ny];
        let cell = (hi - lo) / Vec2::new((nx - 1) as f32, (ny - 1) as f32);
        for tri in &surface.triangles {
            let [a, b, c] = tri.map(|v| surface.positions[v as usize]);
            let area = (b.truncate() - a.truncate()).perp_dot(c.truncate() - a.truncate());
            let extent = (b.truncate() - a.truncate())
                .abs()
                .max((c.truncate() - a.truncate()).abs())
                .max_element();
            if area.abs() <= 1e-9 * extent * extent {
                continue; // vertical or degenerate: covers no area seen from above
            }
            let tmin = (a.truncate().min(b.truncate()).min(c.truncate()) - lo) / cell;
            let tmax = (a.truncate().max(b.truncate()).max(c.truncate()) - lo) / cell;
            let range = |t0: f32, t1: f32, n: usize| {
                let first = t0.ceil().max(0.0) as usize;
                let last = (t1.floor().min((n - 1) as f32)).max(-1.0);
                (first, last as isize)
            };
            let (ix0, ix1) = range(tmin.x - 1e-4, tmax.x + 1e-4, nx);
            let (iy0, iy1) = range(tmin.y - 1e-4, tmax.y + 1e-4, ny);
            // Barycentric coordinates, with a little tolerance so that points on shared
            // edges are covered by both neighbours.
            let tolerance = -1e-5;
            for iy in iy0 as isize..=iy1 {
                for ix in ix0 as isize..=ix1 {
                    let (ix, iy) = (ix as usize, iy as usize);
                    let p = grid_point(ix, iy, nx, ny, lo, hi);
                    let wa = (b.truncate() - p).perp_dot(c.truncate() - p) / area;
                    let wb = (c.truncate() - p).perp_dot(a.truncate() - p) / area;
                    let wc = 1.0 - wa - wb;
                    if wa >= tolerance && wb >= tolerance && wc >= tolerance {
                        let z = wa * a.z + wb * b.z + wc * c.z;
                        let h = &mut heights[iy * nx + ix];
                        *h = h.max(z);
                    }
                }
            }
        }
        for h in &mut heights {
            if *h == f32::NEG_INFINITY {
                *h = fill;
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

    /// The height at `(x, y)`, bilinear between grid points, clamped to the grid's edges
    /// outside it (as the kernels sample it).
    pub fn height_at(&self, x: f32, y: f32) -> f32 {
        let t = ((Vec2::new(x, y) - self.lo) / (self.hi - self.lo)).clamp(Vec2::ZERO, Vec2::ONE)
            * Vec2::new((self.nx - 1) as f32, (self.ny - 1) as f32);
        let i = (t.x as usize).min(self.nx - 2);
        let j = (t.y as usize).min(self.ny - 2);
        let (s, u) = (t.x - i as f32, t.y - j as f32);
        let k = j * self.nx + i;
        let h = &self.heights;
        let below = h[k] + (h[k + 1] - h[k]) * s;
        let above = h[k + self.nx] + (h[k + self.nx + 1] - h[k + self.nx]) * s;
        below + (above - below) * u
    }

    /// Lowest and highest height.
    pub fn range(&self) -> (f32, f32) {
        self.heights
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &h| {
                (lo.min(h), hi.max(h))
            })
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
    fn a_surface_rasterises_to_the_heights_under_it() {
        // A tilted plane z = 1 + x / 4 + y / 8 over [0, 4]², on a 3 × 3 vertex grid.
        let plane = |x: f32, y: f32| 1.0 + x / 4.0 + y / 8.0;
        let coarse = Heightfield::from_fn(3, 3, Vec2::ZERO, Vec2::splat(4.0), plane).unwrap();
        let surface = TerrainMesh::from_heightfield(&coarse).unwrap();
        // A finer grid reaching 1 m beyond the surface on the east: filled there.
        let field =
            Heightfield::from_surface(&surface, 11, 9, Vec2::ZERO, Vec2::new(5.0, 4.0), -7.0)
                .unwrap();
        for iy in 0..field.ny {
            for ix in 0..field.nx {
                let p = field.point(ix, iy);
                let h = field.heights[iy * field.nx + ix];
                let expected = if p.x <= 4.0 + 1e-4 {
                    plane(p.x, p.y)
                } else {
                    -7.0
                };
                assert!((h - expected).abs() < 1e-4, "{p}: {h} vs {expected}");
            }
        }
        assert!((field.height_at(1.25, 3.0) - plane(1.25, 3.0)).abs() < 1e-4);
        assert!(
            (field.height_at(-3.0, 2.0) - plane(0.0, 2.0)).abs() < 1e-4,
            "clamped"
        );
        assert_eq!(field.range(), (-7.0, plane(4.0, 4.0)));
    }

    #[test]
    fn scene_box_corners_and_validity() {
        let b = SceneBox {
            lo: Vec3::ZERO,
            hi: Vec3::new(1.0, 2.0, 3.0),
        };
        assert!(b.is_valid());
        assert_eq!(b.size(), Vec3::new(1.0, 2.0, 3.0));
        assert!(b.corners().contains(&Vec3::new(1.0, 0.0, 3.0)));
        assert!(!SceneBox { lo: b.hi, hi: b.lo }.is_valid());
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
