//! The domain mesh as the snow kernels read it: tetrahedra, face neighbours and the boundary
//! reference of each face, the ground and top faces, sampling tables, and a column grid that
//! gives every horizontal position a tetrahedron to start a walk from.

use std::collections::HashMap;

use crate::cl::{Context, DeviceBuffer};
use crate::gml::{MeshKind, topology};
use crate::meshio::ElementKind;
use crate::scene::{BoundaryRefs, DomainMesh};

use super::{Error, Result};

/// The snow's view of a domain mesh, on the host.
#[derive(Clone, Debug)]
pub struct SnowGeometry {
    /// Four vertex indices per tetrahedron.
    pub tets: Vec<[i32; 4]>,
    /// Vertex coordinates (xyz, w 0), f32.
    pub coords: Vec<[f32; 4]>,
    /// Tetrahedron across the face opposite local vertex j, −1 on the boundary.
    pub neighbours: Vec<[i32; 4]>,
    /// Boundary reference of face j on the boundary (0 inside, or with no triangle).
    pub face_refs: Vec<[i32; 4]>,
    /// Ground-surface vertex of each volume vertex, −1 off the ground.
    pub ground_index: Vec<i32>,
    /// Cumulative volumes, scaled to 2^32 (last entry `u32::MAX`).
    pub tet_cdf: Vec<u32>,
    /// Top faces: three vertex indices and the tetrahedron under them.
    pub top_tris: Vec<[i32; 4]>,
    /// Cumulative top-face areas, scaled to 2^32.
    pub top_cdf: Vec<u32>,
    /// Start tetrahedron per column of the grid, `cx + dims[0] · cy`.
    pub columns: Vec<i32>,
    /// Column grid size (x, y, 0, 0).
    pub column_dims: [i32; 4],
    /// Column grid map: (x0, y0, cells per metre in x, in y).
    pub column_map: [f32; 4],
    /// Horizontal extent (x min, y min, x max, y max): the period of the wrap.
    pub bounds: [f32; 4],
    /// Lowest and highest vertex z.
    pub z_range: [f32; 2],
    /// The boundary references.
    pub refs: BoundaryRefs,
    /// Volume of the air, m³.
    pub air_volume: f64,
    /// Area of the top face, m².
    pub top_area: f64,
    /// Per triangle of the ground surface (in its order), the tetrahedron on it.
    pub ground_tets: Vec<i32>,
    /// Cumulative horizontal areas of the ground surface's triangles, scaled to 2^32.
    pub ground_cdf: Vec<u32>,
    /// Per triangle of the ground surface, its horizontal area (m²) and the height of the air
    /// over its centre (the top's highest z less the ground's there, m).
    pub ground_columns: Vec<(f64, f64)>,
}

fn volume6(a: [f64; 3], b: [f64; 3], c: [f64; 3], d: [f64; 3]) -> f64 {
    let s = |p: [f64; 3], q: [f64; 3]| [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
    let (u, v, w) = (s(b, a), s(c, a), s(d, a));
    u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0])
        + u[2] * (v[0] * w[1] - v[1] * w[0])
}

fn area(a: [f64; 3], b: [f64; 3], c: [f64; 3]) -> f64 {
    let s = |p: [f64; 3], q: [f64; 3]| [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
    let (u, v) = (s(b, a), s(c, a));
    let n = [
        u[1] * v[2] - u[2] * v[1],
        u[2] * v[0] - u[0] * v[2],
        u[0] * v[1] - u[1] * v[0],
    ];
    0.5 * (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt()
}

/// Cumulative weights scaled to 2^32, the last entry `u32::MAX`: `u < cdf[i]` picks `i` with
/// probability weight / total for `u` uniform over 32 bits.
pub(crate) fn cdf(weights: &[f64]) -> Vec<u32> {
    let total: f64 = weights.iter().sum();
    let mut sum = 0.0;
    let mut out: Vec<u32> = weights
        .iter()
        .map(|w| {
            sum += w;
            ((sum / total) * 4294967296.0).floor().min(u32::MAX as f64) as u32
        })
        .collect();
    if let Some(last) = out.last_mut() {
        *last = u32::MAX;
    }
    out
}

impl SnowGeometry {
    /// Builds the tables of `domain`.
    pub fn new(domain: &DomainMesh) -> Result<Self> {
        let mesh = &domain.mesh;
        let refs = domain.boundary;
        let tet_elems = mesh.elements(ElementKind::Tetrahedra);
        let nt = tet_elems.len();
        if nt == 0 {
            return Err(Error::Mesh("it has no tetrahedra".into()));
        }
        if nt > i32::MAX as usize / 2 || mesh.vertices.len() > i32::MAX as usize {
            return Err(Error::Mesh(format!(
                "{nt} tetrahedra and {} vertices exceed the kernels' 32-bit indices",
                mesh.vertices.len()
            )));
        }
        mesh.validate_indices()
            .map_err(|e| Error::Mesh(e.to_string()))?;
        let nodes: Vec<i32> = tet_elems.node_slice().iter().map(|&v| v as i32).collect();
        let ngb = topology::neighbours(MeshKind::Tetrahedra, MeshKind::Triangles, &nodes).map_err(
            |face| {
                Error::Mesh(format!(
                    "a face (nodes {face:?}) is shared by more than two tetrahedra"
                ))
            },
        )?;
        let key = |a: u32, b: u32, c: u32| {
            let mut k = [a, b, c];
            k.sort_unstable();
            k
        };
        let tris = mesh.elements(ElementKind::Triangles);
        let mut tri_ref: HashMap<[u32; 3], i32> = HashMap::with_capacity(tris.len());
        for (t, r) in tris.iter() {
            tri_ref.insert(key(t[0], t[1], t[2]), r);
        }
        let p = |v: u32| mesh.vertices[v as usize];
        let mut tets = Vec::with_capacity(nt);
        let mut neighbours = Vec::with_capacity(nt);
        let mut face_refs = Vec::with_capacity(nt);
        let mut volumes = Vec::with_capacity(nt);
        let mut top_tris = Vec::new();
        let mut top_areas = Vec::new();
        let mut ground_faces = 0usize;
        let mut ground_face_tet: HashMap<[u32; 3], i32> = HashMap::new();
        for (t, n) in tet_elems.iter().enumerate() {
            let n = n.0;
            tets.push([n[0] as i32, n[1] as i32, n[2] as i32, n[3] as i32]);
            let nb = [ngb[4 * t], ngb[4 * t + 1], ngb[4 * t + 2], ngb[4 * t + 3]];
            neighbours.push(nb);
            volumes.push(volume6(p(n[0]), p(n[1]), p(n[2]), p(n[3])).abs() / 6.0);
            let mut fr = [0i32; 4];
            for j in 0..4 {
                if nb[j] >= 0 {
                    continue;
                }
                let f: Vec<u32> = (0..4).filter(|&k| k != j).map(|k| n[k]).collect();
                let r = tri_ref.get(&key(f[0], f[1], f[2])).copied().unwrap_or(0);
                fr[j] = r;
                if r == refs.top {
                    top_tris.push([f[0] as i32, f[1] as i32, f[2] as i32, t as i32]);
                    top_areas.push(area(p(f[0]), p(f[1]), p(f[2])));
                } else if r == refs.ground {
                    ground_faces += 1;
                    ground_face_tet.insert(key(f[0], f[1], f[2]), t as i32);
                }
            }
            face_refs.push(fr);
        }
        if ground_faces == 0 {
            return Err(Error::Mesh(format!(
                "no boundary face has the ground reference {}: the snow would have nowhere to \
                 land",
                refs.ground
            )));
        }
        if top_tris.is_empty() {
            return Err(Error::Mesh(format!(
                "no boundary face has the top reference {}: the snow would have nowhere to \
                 respawn",
                refs.top
            )));
        }
        let mut ground_index = vec![-1i32; mesh.vertices.len()];
        for (g, &v) in domain.ground.volume_vertices.iter().enumerate() {
            if let Some(slot) = ground_index.get_mut(v as usize) {
                *slot = g as i32;
            }
        }
        let coords = device_coordinates(&mesh.vertices);
        let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        for v in &mesh.vertices {
            for k in 0..3 {
                lo[k] = lo[k].min(v[k]);
                hi[k] = hi[k].max(v[k]);
            }
        }
        if !(hi[0] > lo[0] && hi[1] > lo[1]) {
            return Err(Error::Mesh("it has no horizontal extent".into()));
        }
        let mut ground_tets = Vec::new();
        let mut ground_columns = Vec::new();
        for (tri, _) in domain.ground.mesh.elements(ElementKind::Triangles).iter() {
            let v = |k: usize| domain.ground.volume_vertices.get(tri[k] as usize).copied();
            let (Some(a), Some(b), Some(c)) = (v(0), v(1), v(2)) else {
                return Err(Error::Mesh(format!(
                    "ground triangle {tri:?} names a vertex the ground does not map"
                )));
            };
            let Some(&t) = ground_face_tet.get(&key(a, b, c)) else {
                return Err(Error::Mesh(format!(
                    "ground triangle of volume vertices {:?} is no ground face of a tetrahedron",
                    [a, b, c]
                )));
            };
            ground_tets.push(t);
            let (pa, pb, pc) = (p(a), p(b), p(c));
            let horizontal =
                0.5 * ((pb[0] - pa[0]) * (pc[1] - pa[1]) - (pb[1] - pa[1]) * (pc[0] - pa[0])).abs();
            let centre = (pa[2] + pb[2] + pc[2]) / 3.0;
            ground_columns.push((horizontal, (hi[2] - centre).max(0.0)));
        }
        let ground_areas: Vec<f64> = ground_columns.iter().map(|c| c.0).collect();
        let air_volume: f64 = volumes.iter().sum();
        let top_area: f64 = top_areas.iter().sum();
        let (columns, column_dims, column_map) =
            column_grid(&top_tris, &coords, [lo[0], lo[1]], [hi[0], hi[1]]);
        Ok(Self {
            tet_cdf: cdf(&volumes),
            top_cdf: cdf(&top_areas),
            tets,
            coords,
            neighbours,
            face_refs,
            ground_index,
            top_tris,
            columns,
            column_dims,
            column_map,
            bounds: [lo[0] as f32, lo[1] as f32, hi[0] as f32, hi[1] as f32],
            z_range: [lo[2] as f32, hi[2] as f32],
            refs,
            air_volume,
            top_area,
            ground_cdf: cdf(&ground_areas),
            ground_tets,
            ground_columns,
        })
    }

    /// The air within `height` metres of the ground (all of it for 0), m³: where the
    /// parcels are when the snow enters at that height ([`SnowConfig::source_height`]).
    ///
    /// [`SnowConfig::source_height`]: super::SnowConfig::source_height
    pub fn source_volume(&self, height: f64) -> f64 {
        if height <= 0.0 {
            return self.air_volume;
        }
        self.ground_columns
            .iter()
            .map(|&(area, column)| area * column.min(height))
            .sum()
    }
}

/// A grid of about two top faces per cell: each cell holds the tetrahedron under the top face
/// whose centre falls in it, or, for a cell no centre falls in, that of the nearest cell that
/// has one (filled outward, ring by ring).
fn column_grid(
    top: &[[i32; 4]],
    coords: &[[f32; 4]],
    lo: [f64; 2],
    hi: [f64; 2],
) -> (Vec<i32>, [i32; 4], [f32; 4]) {
    let (wx, wy) = (hi[0] - lo[0], hi[1] - lo[1]);
    let cells = (top.len() as f64 / 2.0).max(1.0);
    let side = (cells / (wx * wy)).sqrt();
    let nx = ((wx * side).round() as usize).clamp(1, 2048);
    let ny = ((wy * side).round() as usize).clamp(1, 2048);
    let (sx, sy) = (nx as f64 / wx, ny as f64 / wy);
    let mut grid = vec![-1i32; nx * ny];
    for t in top {
        let c = |k: usize| {
            (f64::from(coords[t[0] as usize][k])
                + f64::from(coords[t[1] as usize][k])
                + f64::from(coords[t[2] as usize][k]))
                / 3.0
        };
        let cx = (((c(0) - lo[0]) * sx) as usize).min(nx - 1);
        let cy = (((c(1) - lo[1]) * sy) as usize).min(ny - 1);
        if grid[cx + nx * cy] < 0 {
            grid[cx + nx * cy] = t[3];
        }
    }
    // Breadth-first fill from the cells that have a face.
    let mut queue: std::collections::VecDeque<usize> =
        (0..grid.len()).filter(|&i| grid[i] >= 0).collect();
    while let Some(i) = queue.pop_front() {
        let (x, y) = (i % nx, i / nx);
        let around = [
            (x > 0).then(|| i - 1),
            (x + 1 < nx).then(|| i + 1),
            (y > 0).then(|| i - nx),
            (y + 1 < ny).then(|| i + nx),
        ];
        for j in around.into_iter().flatten() {
            if grid[j] < 0 {
                grid[j] = grid[i];
                queue.push_back(j);
            }
        }
    }
    (
        grid,
        [nx as i32, ny as i32, 0, 0],
        [lo[0] as f32, lo[1] as f32, sx as f32, sy as f32],
    )
}

/// A [`SnowGeometry`] on the device.
pub struct SnowMesh {
    /// The host tables.
    pub geometry: SnowGeometry,
    pub(crate) tets: DeviceBuffer<[i32; 4]>,
    pub(crate) coords: DeviceBuffer<[f32; 4]>,
    pub(crate) neighbours: DeviceBuffer<[i32; 4]>,
    pub(crate) face_refs: DeviceBuffer<[i32; 4]>,
    pub(crate) ground_index: DeviceBuffer<i32>,
    pub(crate) tet_cdf: DeviceBuffer<u32>,
    pub(crate) top_tris: DeviceBuffer<[i32; 4]>,
    pub(crate) top_cdf: DeviceBuffer<u32>,
    pub(crate) columns: DeviceBuffer<i32>,
    pub(crate) ground_tets: DeviceBuffer<i32>,
    pub(crate) ground_cdf: DeviceBuffer<u32>,
    /// Per tetrahedron, 1 where a vertex of it is on the ground (the bottom layer), else 0.
    pub(crate) bottom: DeviceBuffer<u8>,
}

impl SnowMesh {
    /// Uploads `geometry` to `context`'s device.
    pub fn new(context: &Context, geometry: SnowGeometry) -> Result<Self> {
        let g = &geometry;
        let bottom: Vec<u8> = g
            .tets
            .iter()
            .map(|t| {
                u8::from(
                    t.iter()
                        .any(|&v| g.ground_index.get(v as usize).is_some_and(|&gi| gi >= 0)),
                )
            })
            .collect();
        Ok(Self {
            bottom: DeviceBuffer::from_slice(context, &bottom)?,
            tets: DeviceBuffer::from_slice(context, &g.tets)?,
            coords: DeviceBuffer::from_slice(context, &g.coords)?,
            neighbours: DeviceBuffer::from_slice(context, &g.neighbours)?,
            face_refs: DeviceBuffer::from_slice(context, &g.face_refs)?,
            ground_index: DeviceBuffer::from_slice(context, &g.ground_index)?,
            tet_cdf: DeviceBuffer::from_slice(context, &g.tet_cdf)?,
            top_tris: DeviceBuffer::from_slice(context, &g.top_tris)?,
            top_cdf: DeviceBuffer::from_slice(context, &g.top_cdf)?,
            columns: DeviceBuffer::from_slice(context, &g.columns)?,
            ground_tets: DeviceBuffer::from_slice(context, &g.ground_tets)?,
            ground_cdf: DeviceBuffer::from_slice(context, &g.ground_cdf)?,
            geometry,
        })
    }

    /// Number of vertices (the wind buffer's length).
    pub fn vertex_count(&self) -> usize {
        self.geometry.coords.len()
    }

    /// Number of tetrahedra.
    pub fn tet_count(&self) -> usize {
        self.geometry.tets.len()
    }
}

/// The vertices as the snow's kernels read them: `float4` (x, y, z, 0) of the f64 positions.
/// On one thread: a few hundred thousand conversions, less than waking a pool on a busy
/// machine costs (`benches/RESULTS.md`, the ground refresh's spread).
pub fn device_coordinates(vertices: &[[f64; 3]]) -> Vec<[f32; 4]> {
    vertices
        .iter()
        .map(|v| [v[0] as f32, v[1] as f32, v[2] as f32, 0.0])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terrain::{Terrain, TerrainSpec};

    fn hill() -> DomainMesh {
        let spec = TerrainSpec {
            size: [100.0, 60.0, 50.0],
            relief: 0.0,
            cells: [5, 3],
            layers: 4,
            grading: 1.2,
        };
        let t = Terrain::from_fn(spec, |x, y| 5.0 + 0.1 * x - 0.05 * y).unwrap();
        DomainMesh {
            mesh: t.volume_mesh(),
            ground: t.ground_surface(),
            boundary: BoundaryRefs::default(),
            columns: Some(t.columns()),
        }
    }

    #[test]
    fn tables_of_a_terrain_domain() {
        let d = hill();
        let g = SnowGeometry::new(&d).unwrap();
        let nt = g.tets.len();
        assert_eq!(nt, 6 * 5 * 3 * 4);
        // Neighbours are mutual, and every boundary face has its side's reference.
        let mut count = [0usize; 7];
        for t in 0..nt {
            for j in 0..4 {
                match g.neighbours[t][j] {
                    -1 => count[g.face_refs[t][j] as usize] += 1,
                    u => assert!(g.neighbours[u as usize].contains(&(t as i32))),
                }
            }
        }
        assert_eq!(count[0], 0, "a boundary face without a reference");
        assert_eq!((count[5], count[6]), (30, 30), "ground and top faces");
        assert_eq!(g.top_tris.len(), 30);
        // The ground index maps the ground's vertices, and only them.
        let mapped = g.ground_index.iter().filter(|&&i| i >= 0).count();
        assert_eq!(mapped, d.ground.mesh.vertices.len());
        // Volumes and areas: 100 × 60 of top, the air under it.
        assert!((g.top_area - 6000.0).abs() < 1e-6, "{}", g.top_area);
        let ground_mean = 5.0 + 0.1 * 50.0 - 0.05 * 30.0;
        assert!((g.air_volume - 6000.0 * (50.0 - ground_mean)).abs() < 1e-6);
        // Every column holds a tetrahedron under the top.
        assert!(g.columns.iter().all(|&t| t >= 0 && (t as usize) < nt));
        assert_eq!(
            g.columns.len(),
            (g.column_dims[0] * g.column_dims[1]) as usize
        );
        let on_top: std::collections::HashSet<i32> = g.top_tris.iter().map(|t| t[3]).collect();
        assert!(g.columns.iter().all(|t| on_top.contains(t)));
    }

    #[test]
    fn missing_ground_or_top_is_a_clear_error() {
        let mut d = hill();
        d.boundary.ground = 42;
        let e = SnowGeometry::new(&d).unwrap_err().to_string();
        assert!(e.contains("ground reference 42"), "{e}");
        let mut d = hill();
        d.boundary.top = 43;
        let e = SnowGeometry::new(&d).unwrap_err().to_string();
        assert!(e.contains("top reference 43"), "{e}");
    }

    #[test]
    fn cdf_ends_at_the_top_and_skips_empty_weights() {
        let c = cdf(&[1.0, 0.0, 3.0]);
        assert_eq!(c, vec![1 << 30, 1 << 30, u32::MAX]);
    }
}
