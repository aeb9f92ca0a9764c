//! The terrain-following tetrahedral mesher: columns of prisms between the ground and a flat
//! top, each prism split into three tetrahedra.

use rayon::prelude::*;
use serde::Serialize;

use super::{AIR_REF, Columns, GroundSurface, Heightmap, Side, TerrainError};
use crate::meshio::{ElementKind, Elements, Mesh};

/// The most vertices or tetrahedra a terrain mesh may have: gml numbers entities with `i32`.
pub const MAX_ENTITIES: usize = i32::MAX as usize;

/// The largest ratio between the top and the bottom layer's thickness.
pub const MAX_GRADING_SPAN: f64 = 1e9;

/// What to mesh: the domain `[0, X] × [0, Y]` from the ground up to the flat top `z = Z`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TerrainSpec {
    /// `[X, Y, Z]`: extent along x (west to east) and y (south to north), and the height of the
    /// flat top, in metres.
    pub size: [f64; 3],
    /// Height of a white heightmap pixel; black is at `z = 0`. Below the top.
    pub relief: f64,
    /// Cells along x and y; each cell is split into two ground triangles.
    pub cells: [usize; 2],
    /// Layers of prisms from the ground to the top.
    pub layers: usize,
    /// Ratio of each layer's thickness to the one below it: 1 for uniform layers, above 1 for
    /// layers that are thinnest at the ground.
    pub grading: f64,
}

impl TerrainSpec {
    /// Checks the numbers: positive finite extents, `0 <= relief < Z`, at least one cell each
    /// way and one layer, `grading >= 1` (and `grading^(layers - 1)` at most
    /// [`MAX_GRADING_SPAN`]), at most [`MAX_ENTITIES`] vertices and tetrahedra, and volumes
    /// that f64 holds (the box's finite, the mean tetrahedron's not below the smallest normal
    /// f64).
    pub fn validate(&self) -> Result<(), TerrainError> {
        let bad = |field: &'static str, message: String| Err(TerrainError::Spec { field, message });
        if let Some(d) = (0..3).find(|&d| !(self.size[d].is_finite() && self.size[d] > 0.0)) {
            return bad(
                "size",
                format!(
                    "{} must be a positive finite length, got {}",
                    ["X", "Y", "Z"][d],
                    short(self.size[d])
                ),
            );
        }
        if !(self.relief.is_finite() && self.relief >= 0.0) {
            return bad(
                "relief",
                format!("must be a finite height >= 0, got {}", short(self.relief)),
            );
        }
        if self.relief >= self.size[2] {
            return bad(
                "relief",
                format!(
                    "the terrain's highest possible point ({}) must be below the top (Z = {})",
                    short(self.relief),
                    short(self.size[2])
                ),
            );
        }
        if self.cells.contains(&0) {
            return bad(
                "cells",
                format!("need at least one cell each way, got {:?}", self.cells),
            );
        }
        if self.layers == 0 {
            return bad("layers", "need at least one layer".into());
        }
        if !(self.grading.is_finite() && self.grading >= 1.0) {
            return bad(
                "grading",
                format!("must be a finite ratio >= 1, got {}", short(self.grading)),
            );
        }
        let span = self.grading.powf((self.layers - 1) as f64);
        if span.is_nan() || span > MAX_GRADING_SPAN {
            return bad(
                "grading",
                format!(
                    "{} over {} layers makes the top layer {span:.3e} times the bottom one \
                     (at most {MAX_GRADING_SPAN:e})",
                    short(self.grading),
                    self.layers
                ),
            );
        }
        let counts = self.counts();
        if counts.is_none_or(|(v, t, _)| v > MAX_ENTITIES || t > MAX_ENTITIES) {
            return bad(
                "cells",
                format!(
                    "{:?} cells × {} layers is more than {MAX_ENTITIES} vertices or tetrahedra",
                    self.cells, self.layers
                ),
            );
        }
        let volume = self.size[0] * self.size[1] * self.size[2];
        let mean = counts.map_or(0.0, |(_, tets, _)| volume / tets as f64);
        if !(volume.is_finite() && mean.is_normal()) {
            return bad(
                "size",
                format!(
                    "{} × {} × {} m in {} tetrahedra makes their volumes {} m³ on average, \
                     which f64 cannot hold (they would overflow or be 0)",
                    short(self.size[0]),
                    short(self.size[1]),
                    short(self.size[2]),
                    counts.map_or(0, |(_, tets, _)| tets),
                    short(mean)
                ),
            );
        }
        Ok(())
    }

    /// (vertices, tetrahedra, boundary triangles) of the volume mesh, `None` on overflow.
    pub fn counts(&self) -> Option<(usize, usize, usize)> {
        let [nx, ny] = self.cells;
        let nz = self.layers;
        let columns = (nx.checked_add(1)?).checked_mul(ny.checked_add(1)?)?;
        let vertices = columns.checked_mul(nz.checked_add(1)?)?;
        let tets = nx.checked_mul(ny)?.checked_mul(nz)?.checked_mul(6)?;
        let boundary = 4 * nx * ny + 4 * (nx + ny) * nz;
        Some((vertices, tets, boundary))
    }

    /// The height fraction of each vertex level, 0 at the ground to 1 at the top:
    /// `(g^k - 1) / (g^n - 1)` for grading `g > 1`, `k / n` for `g = 1`.
    pub fn level_fractions(&self) -> Vec<f64> {
        let n = self.layers;
        let g = self.grading;
        (0..=n)
            .map(|k| {
                if k == n {
                    1.0
                } else if (g - 1.0).abs() < 1e-12 {
                    k as f64 / n as f64
                } else {
                    (g.powi(k as i32) - 1.0) / (g.powi(n as i32) - 1.0)
                }
            })
            .collect()
    }
}

/// A number for a message: plainly, or in scientific notation when very large or small (`1e308`,
/// not 309 digits).
fn short(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e7).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// The ground of a domain, sampled at the mesh's grid points, ready to mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct Terrain {
    spec: TerrainSpec,
    /// Ground height of column `i + (nx + 1) j`.
    heights: Vec<f64>,
}

impl Terrain {
    /// The terrain of `heightmap` (scaled by `spec.relief`), or flat ground at `z = 0` without
    /// one, sampled at the `(nx + 1) × (ny + 1)` grid points.
    pub fn new(spec: TerrainSpec, heightmap: Option<&Heightmap>) -> Result<Self, TerrainError> {
        spec.validate()?;
        Ok(Self::sampled(spec, |x, y| match heightmap {
            Some(map) => spec.relief * map.sample(x / spec.size[0], y / spec.size[1]),
            None => 0.0,
        }))
    }

    /// The terrain whose ground height at `(x, y)` is `height(x, y)` metres (`spec.relief` is
    /// not used); every height must be finite and below the top.
    pub fn from_fn(
        spec: TerrainSpec,
        height: impl Fn(f64, f64) -> f64 + Sync,
    ) -> Result<Self, TerrainError> {
        spec.validate()?;
        let terrain = Self::sampled(spec, height);
        let [nx, _] = spec.cells;
        if let Some(at) = terrain
            .heights
            .iter()
            .position(|h| !(h.is_finite() && *h < spec.size[2]))
        {
            let (x, y) = terrain.xy(at % (nx + 1), at / (nx + 1));
            return Err(TerrainError::Spec {
                field: "size",
                message: format!(
                    "the ground height {} at ({x}, {y}) is not below the top (Z = {})",
                    short(terrain.heights[at]),
                    short(spec.size[2])
                ),
            });
        }
        Ok(terrain)
    }

    fn sampled(spec: TerrainSpec, height: impl Fn(f64, f64) -> f64 + Sync) -> Self {
        let [nx, ny] = spec.cells;
        let mut terrain = Self {
            spec,
            heights: Vec::new(),
        };
        terrain.heights = (0..(nx + 1) * (ny + 1))
            .into_par_iter()
            .map(|c| {
                let (x, y) = terrain.xy(c % (nx + 1), c / (nx + 1));
                height(x, y)
            })
            .collect();
        terrain
    }

    /// The specification meshed.
    pub fn spec(&self) -> &TerrainSpec {
        &self.spec
    }

    /// The horizontal position of grid point `(i, j)`.
    pub fn xy(&self, i: usize, j: usize) -> (f64, f64) {
        let [nx, ny] = self.spec.cells;
        (
            if i == nx {
                self.spec.size[0]
            } else {
                i as f64 * self.spec.size[0] / nx as f64
            },
            if j == ny {
                self.spec.size[1]
            } else {
                j as f64 * self.spec.size[1] / ny as f64
            },
        )
    }

    /// The ground height at grid point `(i, j)`, `0 <= i <= nx`, `0 <= j <= ny`.
    ///
    /// # Panics
    /// If the point is outside the grid.
    pub fn height(&self, i: usize, j: usize) -> f64 {
        let [nx, ny] = self.spec.cells;
        assert!(i <= nx && j <= ny, "grid point outside the terrain");
        self.heights[i + (nx + 1) * j]
    }

    /// The ground triangles, as grid point indices `i + (nx + 1) j`, counter-clockwise seen
    /// from above. Each cell is split along the diagonal whose ends differ less in height, so
    /// the surface follows valleys and ridges rather than cutting across them.
    pub fn ground_triangles(&self) -> Vec<[u32; 3]> {
        let [nx, ny] = self.spec.cells;
        let col = |i: usize, j: usize| (i + (nx + 1) * j) as u32;
        let mut tris = Vec::with_capacity(2 * nx * ny);
        for j in 0..ny {
            for i in 0..nx {
                let (a, b, c, d) = (col(i, j), col(i + 1, j), col(i + 1, j + 1), col(i, j + 1));
                let h = |v: u32| self.heights[v as usize];
                if (h(a) - h(c)).abs() <= (h(b) - h(d)).abs() {
                    tris.push([a, b, c]);
                    tris.push([a, c, d]);
                } else {
                    tris.push([a, b, d]);
                    tris.push([b, c, d]);
                }
            }
        }
        tris
    }

    /// The ground as a triangle surface: grid point `c` is vertex `c`, at its ground height;
    /// triangles turn counter-clockwise seen from above (normals up, into the air) and carry
    /// the ground reference ([`Side::Ground`]).
    pub fn ground_surface(&self) -> GroundSurface {
        let [nx, ny] = self.spec.cells;
        let mut mesh = Mesh::new(3);
        for j in 0..=ny {
            for i in 0..=nx {
                let (x, y) = self.xy(i, j);
                mesh.push_vertex([x, y, self.height(i, j)], 0);
            }
        }
        let tris = self.ground_triangles();
        let nodes: Vec<u32> = tris.iter().flatten().copied().collect();
        let refs = vec![Side::Ground.reference(); tris.len()];
        mesh.set_elements(Elements::from_parts(ElementKind::Triangles, nodes, refs));
        GroundSurface {
            volume_vertices: (0..mesh.vertices.len() as u32).collect(),
            mesh,
        }
    }

    /// Which column and level each vertex of [`volume_mesh`](Self::volume_mesh) is, with the
    /// bare ground under each column: what a regrade needs ([`Columns::regrade`]).
    pub fn columns(&self) -> Columns {
        Columns::new(
            self.heights.clone(),
            self.spec.level_fractions(),
            self.spec.size[2],
        )
    }

    /// The tetrahedral mesh of the air between the ground and the top.
    ///
    /// Vertex `c + (nx + 1)(ny + 1) k` is grid point `c` at level `k` (0 on the ground, `nz`
    /// at the top), at `z = g + (Z - g) s_k` with `g` the ground height and `s_k` the
    /// [level fraction](TerrainSpec::level_fractions); so the ground surface's vertex `c` is
    /// the volume's vertex `c`. Each ground triangle and layer make a prism; with its columns
    /// sorted by index `p < q < r` it is split into `(p, q, r, r')`, `(p, q, q', r')` and
    /// `(p, p', q', r')` (primes one level up), the rule that gives every vertical face
    /// between columns `u < v` the diagonal from `u` below to `v` above, in both prisms that
    /// share it. Nodes are swapped where needed so that every volume is positive. Tetrahedra
    /// have reference [`AIR_REF`]; boundary triangles turn outward and carry the references of
    /// [`Side`]. Vertex references are 0.
    pub fn volume_mesh(&self) -> Mesh {
        let [nx, ny] = self.spec.cells;
        let nz = self.spec.layers;
        let columns = (nx + 1) * (ny + 1);
        let top = self.spec.size[2];
        let fractions = self.spec.level_fractions();

        let mut mesh = Mesh::new(3);
        mesh.vertices = (0..columns * (nz + 1))
            .into_par_iter()
            .map(|v| {
                let (c, k) = (v % columns, v / columns);
                let (x, y) = self.xy(c % (nx + 1), c / (nx + 1));
                let g = self.heights[c];
                let z = if k == nz {
                    top
                } else {
                    g + (top - g) * fractions[k]
                };
                [x, y, z]
            })
            .collect();
        mesh.vertex_refs = vec![0; mesh.vertices.len()];

        let tris = self.ground_triangles();
        let prisms: Vec<([u32; 3], bool)> = tris.iter().map(|&t| sorted_with_parity(t)).collect();
        let per_layer = 12 * tris.len();
        let mut nodes = vec![0u32; per_layer * nz];
        nodes
            .par_chunks_mut(per_layer)
            .enumerate()
            .for_each(|(k, layer)| {
                let below = (columns * k) as u32;
                let above = (columns * (k + 1)) as u32;
                for (out, &([p, q, r], even)) in layer.chunks_exact_mut(12).zip(&prisms) {
                    let mut t1 = [p + below, q + below, r + below, r + above];
                    let mut t2 = [p + below, q + below, q + above, r + above];
                    let mut t3 = [p + below, p + above, q + above, r + above];
                    // Sorted counter-clockwise (even): t1 and t3 are positive, t2 negative.
                    if even {
                        t2.swap(0, 1);
                    } else {
                        t1.swap(0, 1);
                        t3.swap(0, 1);
                    }
                    out[..4].copy_from_slice(&t1);
                    out[4..8].copy_from_slice(&t2);
                    out[8..].copy_from_slice(&t3);
                }
            });
        let count = nodes.len() / 4;
        mesh.set_elements(Elements::from_parts(
            ElementKind::Tetrahedra,
            nodes,
            vec![AIR_REF; count],
        ));
        mesh.set_elements(self.boundary(&tris));
        mesh
    }

    /// The boundary triangles: ground, top, then the four sides.
    fn boundary(&self, tris: &[[u32; 3]]) -> Elements {
        let [nx, ny] = self.spec.cells;
        let nz = self.spec.layers;
        let columns = ((nx + 1) * (ny + 1)) as u32;
        let col = |i: usize, j: usize| (i + (nx + 1) * j) as u32;
        let mut nodes = Vec::with_capacity(3 * (4 * nx * ny + 4 * (nx + ny) * nz));
        let mut refs = Vec::with_capacity(nodes.capacity() / 3);
        for &[a, b, c] in tris {
            nodes.extend_from_slice(&[a, c, b]); // facing down, out of the air
            refs.push(Side::Ground.reference());
        }
        let lid = columns * nz as u32;
        for &[a, b, c] in tris {
            nodes.extend_from_slice(&[a + lid, b + lid, c + lid]);
            refs.push(Side::Top.reference());
        }
        // Each side as its edges (u < v) and whether (u, v, v') must be reversed to face out:
        // along +x on y = 0 it faces -y (out), along +y on x = X it faces +x (out).
        let sides: [(Side, Vec<Edge>, bool); 4] = [
            (
                Side::XMin,
                (0..ny).map(|j| (col(0, j), col(0, j + 1))).collect(),
                true,
            ),
            (
                Side::XMax,
                (0..ny).map(|j| (col(nx, j), col(nx, j + 1))).collect(),
                false,
            ),
            (
                Side::YMin,
                (0..nx).map(|i| (col(i, 0), col(i + 1, 0))).collect(),
                false,
            ),
            (
                Side::YMax,
                (0..nx).map(|i| (col(i, ny), col(i + 1, ny))).collect(),
                true,
            ),
        ];
        for (side, edges, reverse) in sides {
            for k in 0..nz as u32 {
                for &(u, v) in &edges {
                    let (u0, v0, u1, v1) = (
                        u + columns * k,
                        v + columns * k,
                        u + columns * (k + 1),
                        v + columns * (k + 1),
                    );
                    for mut t in [[u0, v0, v1], [u0, v1, u1]] {
                        if reverse {
                            t.swap(1, 2);
                        }
                        nodes.extend_from_slice(&t);
                        refs.push(side.reference());
                    }
                }
            }
        }
        Elements::from_parts(ElementKind::Triangles, nodes, refs)
    }
}

/// A horizontal edge between two columns, lower index first.
type Edge = (u32, u32);

/// The three nodes sorted, and whether sorting was an even permutation.
fn sorted_with_parity(mut t: [u32; 3]) -> ([u32; 3], bool) {
    let mut even = true;
    for (i, j) in [(0, 1), (1, 2), (0, 1)] {
        if t[i] > t[j] {
            t.swap(i, j);
            even = !even;
        }
    }
    (t, even)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::check;

    fn spec() -> TerrainSpec {
        TerrainSpec {
            size: [30.0, 20.0, 10.0],
            relief: 4.0,
            cells: [3, 2],
            layers: 3,
            grading: 1.5,
        }
    }

    #[test]
    fn levels_are_graded_and_end_at_zero_and_one() {
        let f = spec().level_fractions();
        assert_eq!(f.len(), 4);
        assert_eq!((f[0], f[3]), (0.0, 1.0));
        let t: Vec<f64> = f.windows(2).map(|w| w[1] - w[0]).collect();
        assert!((t[1] / t[0] - 1.5).abs() < 1e-12 && (t[2] / t[1] - 1.5).abs() < 1e-12);
        let uniform = TerrainSpec {
            grading: 1.0,
            ..spec()
        };
        assert_eq!(uniform.level_fractions()[1], 1.0 / 3.0);
    }

    #[test]
    fn bad_specs_name_their_field() {
        let field = |s: TerrainSpec| match s.validate() {
            Err(TerrainError::Spec { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(TerrainSpec {
                relief: 10.0,
                ..spec()
            }),
            "relief"
        );
        assert_eq!(
            field(TerrainSpec {
                size: [1.0, f64::NAN, 2.0],
                ..spec()
            }),
            "size"
        );
        assert_eq!(
            field(TerrainSpec {
                cells: [0, 2],
                ..spec()
            }),
            "cells"
        );
        assert_eq!(
            field(TerrainSpec {
                layers: 0,
                ..spec()
            }),
            "layers"
        );
        assert_eq!(
            field(TerrainSpec {
                grading: 0.9,
                ..spec()
            }),
            "grading"
        );
        assert_eq!(
            field(TerrainSpec {
                grading: 2.0,
                layers: 100,
                ..spec()
            }),
            "grading"
        );
        assert_eq!(
            field(TerrainSpec {
                cells: [1 << 20, 1 << 20],
                ..spec()
            }),
            "cells"
        );
        assert!(
            Terrain::from_fn(spec(), |x, _| x).is_err(),
            "ground above the top"
        );
    }

    #[test]
    fn a_bumpy_terrain_mesh_is_valid() {
        let terrain =
            Terrain::from_fn(spec(), |x, y| 3.0 * (x * 0.4).sin() * (y * 0.3).cos() + 3.0).unwrap();
        let mesh = terrain.volume_mesh();
        let (v, t, b) = spec().counts().unwrap();
        assert_eq!(mesh.vertices.len(), v);
        assert_eq!(mesh.count(ElementKind::Tetrahedra), t);
        assert_eq!(mesh.count(ElementKind::Triangles), b);
        let report = check(&mesh);
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.boundary_faces, b);
    }
}
