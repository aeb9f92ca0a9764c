//! The cover's own mesh: the ground surface with every triangle cut into `r²` (each edge into
//! `r` pieces), so that the snow is laid, smoothed and drawn finer than the wind mesh's
//! ground, and the tables that tie the two together.
//!
//! Numbering of the fine vertices: the coarse ground vertices first (same ids), then the
//! `r − 1` inner points of every coarse edge (edges sorted, `a < b`, points counted from `a`),
//! then the `(r − 1)(r − 2) / 2` inner points of every coarse triangle. A point of coarse
//! triangle `(v0, v1, v2)` is named by its lattice coordinates `(i, j)`, `i + j ≤ r`: it lies
//! at `v0 + i/r (v1 − v0) + j/r (v2 − v0)`, barycentrics `((r − i − j)/r, i/r, j/r)`.
//!
//! **Restriction** (fine → coarse, what the wind mesh's ground sees): a fine vertex's volume
//! `V` goes to its coarse parents by its barycentric numerators `n_k / r`: the first parents
//! get `⌊V n_k / r⌋` and the last what is left, in integers, so the coarse total equals the
//! fine total exactly. It is the conservative (hat-weighted) restriction: the integral over
//! the coarse triangles of the coarse depth equals the fine volume.

use std::collections::HashMap;

use crate::meshio::ElementKind;
use crate::terrain::GroundSurface;

use super::{Error, Result};

/// Largest refinement per coarse edge (so that a lattice index fits a byte and
/// `V · r` cannot overflow 64 bits for any volume below 2^59 units): the scene's bound.
pub const MAX_REFINEMENT: u32 = crate::scene::limits::MAX_COVER_REFINEMENT;

/// The cover's mesh and its ties to the coarse ground, on the host.
#[derive(Clone, Debug)]
pub struct CoverMesh {
    /// Pieces per coarse edge.
    pub refinement: u32,
    /// Fine vertex positions (the coarse ground's facets, flat).
    pub vertices: Vec<[f64; 3]>,
    /// Fine triangles, counter-clockwise seen from the air as the coarse ones.
    pub triangles: Vec<[u32; 3]>,
    /// Coarse ground triangles (ground vertex ids).
    pub coarse_triangles: Vec<[u32; 3]>,
    /// Number of coarse ground vertices.
    pub coarse_vertices: usize,
    /// Per coarse triangle, its `(r + 1)(r + 2) / 2` lattice points' fine ids, row `j` after
    /// row `j − 1` ([`lattice_index`]).
    pub lattice: Vec<u32>,
    /// Per coarse triangle, the triangle across the edge opposite vertex `k` (−1: none).
    pub adjacent: Vec<[i32; 3]>,
    /// Per coarse vertex, where its triangles start in `vertex_triangles` (`len + 1`).
    pub vertex_offsets: Vec<u32>,
    /// The coarse triangles around each coarse vertex.
    pub vertex_triangles: Vec<u32>,
    /// Per fine vertex, up to three coarse parents and their numerators (of `r`; a numerator
    /// 0 ends the list).
    pub parents: Vec<([u32; 3], [u8; 3])>,
}

/// Index of lattice point `(i, j)` of a triangle cut `r` times: rows of constant `j`, row `j`
/// holding `r + 1 − j` points.
pub fn lattice_index(r: u32, i: u32, j: u32) -> usize {
    (j * (r + 1) - j * j.saturating_sub(1) / 2 + i) as usize
}

/// Lattice points per coarse triangle.
pub fn lattice_len(r: u32) -> usize {
    ((r + 1) * (r + 2) / 2) as usize
}

impl CoverMesh {
    /// Cuts every triangle of `ground` into `refinement²`.
    pub fn new(ground: &GroundSurface, refinement: u32) -> Result<Self> {
        if !(1..=MAX_REFINEMENT).contains(&refinement) {
            return Err(Error::InvalidParameter(format!(
                "ground.cover_refinement {refinement} must be in 1 ..= {MAX_REFINEMENT}"
            )));
        }
        let r = refinement;
        let mesh = &ground.mesh;
        mesh.validate_indices()
            .map_err(|e| Error::Mesh(format!("the ground surface: {e}")))?;
        let nv = mesh.vertices.len();
        let coarse: Vec<[u32; 3]> = mesh
            .elements(ElementKind::Triangles)
            .iter()
            .map(|(t, _)| [t[0], t[1], t[2]])
            .collect();
        if coarse.is_empty() {
            return Err(Error::Mesh("the ground surface has no triangles".into()));
        }
        let mut edges: Vec<[u32; 2]> = coarse
            .iter()
            .flat_map(|t| (0..3).map(move |k| [t[k].min(t[(k + 1) % 3]), t[k].max(t[(k + 1) % 3])]))
            .collect();
        edges.sort_unstable();
        edges.dedup();
        let inner_edge = (r - 1) as usize;
        let inner_tri = ((r - 1) * r.saturating_sub(2) / 2) as usize;
        let total = nv as u128
            + edges.len() as u128 * inner_edge as u128
            + coarse.len() as u128 * inner_tri as u128;
        if total > i32::MAX as u128 / 2 {
            return Err(Error::Mesh(format!(
                "a cover of {total} vertices ({} ground triangles cut {r} times per edge) \
                 exceeds 32-bit indices: lower ground.cover_refinement",
                coarse.len()
            )));
        }
        let edge_id: HashMap<[u32; 2], usize> =
            edges.iter().enumerate().map(|(e, &k)| (k, e)).collect();
        let p = |v: u32| mesh.vertices[v as usize];
        let lerp = |a: [f64; 3], b: [f64; 3], f: f64| {
            [
                a[0] + f * (b[0] - a[0]),
                a[1] + f * (b[1] - a[1]),
                a[2] + f * (b[2] - a[2]),
            ]
        };
        let mut vertices: Vec<[f64; 3]> = mesh.vertices.clone();
        let mut parents: Vec<([u32; 3], [u8; 3])> = (0..nv as u32)
            .map(|v| ([v, 0, 0], [r as u8, 0, 0]))
            .collect();
        for &[a, b] in &edges {
            for t in 1..r {
                vertices.push(lerp(p(a), p(b), f64::from(t) / f64::from(r)));
                parents.push(([a, b, 0], [(r - t) as u8, t as u8, 0]));
            }
        }
        let edge_point = |a: u32, b: u32, t: u32| -> u32 {
            // Point t of r from a towards b.
            let e = edge_id[&[a.min(b), a.max(b)]];
            let from_low = if a < b { t } else { r - t };
            (nv + e * inner_edge + (from_low - 1) as usize) as u32
        };
        let per = lattice_len(r);
        let mut lattice = vec![0u32; coarse.len() * per];
        let mut triangles = Vec::with_capacity(coarse.len() * (r * r) as usize);
        for (ct, &[v0, v1, v2]) in coarse.iter().enumerate() {
            let table = &mut lattice[ct * per..(ct + 1) * per];
            for j in 0..=r {
                for i in 0..=r - j {
                    let id = match (i, j) {
                        (0, 0) => v0,
                        _ if i == r => v1,
                        _ if j == r => v2,
                        (_, 0) => edge_point(v0, v1, i),
                        (0, _) => edge_point(v0, v2, j),
                        _ if i + j == r => edge_point(v1, v2, j),
                        _ => {
                            let (fi, fj) =
                                (f64::from(i) / f64::from(r), f64::from(j) / f64::from(r));
                            let (a, b, c) = (p(v0), p(v1), p(v2));
                            vertices.push(std::array::from_fn(|k| {
                                a[k] + fi * (b[k] - a[k]) + fj * (c[k] - a[k])
                            }));
                            parents.push(([v0, v1, v2], [(r - i - j) as u8, i as u8, j as u8]));
                            (vertices.len() - 1) as u32
                        }
                    };
                    table[lattice_index(r, i, j)] = id;
                }
            }
            for j in 0..r {
                for i in 0..r - j {
                    let at = |i: u32, j: u32| table[lattice_index(r, i, j)];
                    triangles.push([at(i, j), at(i + 1, j), at(i, j + 1)]);
                    if i + j + 1 < r {
                        triangles.push([at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)]);
                    }
                }
            }
        }
        // Adjacency across coarse edges, and the triangles around each coarse vertex.
        let mut by_edge: HashMap<[u32; 2], Vec<(usize, usize)>> = HashMap::new();
        for (ct, t) in coarse.iter().enumerate() {
            for k in 0..3 {
                let (a, b) = (t[(k + 1) % 3], t[(k + 2) % 3]);
                by_edge
                    .entry([a.min(b), a.max(b)])
                    .or_default()
                    .push((ct, k));
            }
        }
        let mut adjacent = vec![[-1i32; 3]; coarse.len()];
        for sides in by_edge.values() {
            if let [(t0, k0), (t1, k1)] = sides[..] {
                adjacent[t0][k0] = t1 as i32;
                adjacent[t1][k1] = t0 as i32;
            }
        }
        let mut vertex_offsets = vec![0u32; nv + 1];
        for t in &coarse {
            for &v in t {
                vertex_offsets[v as usize + 1] += 1;
            }
        }
        for v in 0..nv {
            vertex_offsets[v + 1] += vertex_offsets[v];
        }
        let mut fill = vertex_offsets.clone();
        let mut vertex_triangles = vec![0u32; 3 * coarse.len()];
        for (ct, t) in coarse.iter().enumerate() {
            for &v in t {
                vertex_triangles[fill[v as usize] as usize] = ct as u32;
                fill[v as usize] += 1;
            }
        }
        Ok(Self {
            refinement: r,
            vertices,
            triangles,
            coarse_triangles: coarse,
            coarse_vertices: nv,
            lattice,
            adjacent,
            vertex_offsets,
            vertex_triangles,
            parents,
        })
    }

    /// Number of fine vertices.
    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    /// Whether there is no fine vertex.
    pub fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }

    /// The fine volumes restricted to the coarse ground vertices, exactly (see the module
    /// doc): the coarse total equals the fine total.
    pub fn restrict(&self, fine: &[u64]) -> Vec<u64> {
        let r = u128::from(self.refinement);
        let mut coarse = vec![0u64; self.coarse_vertices];
        for (&v, (parent, num)) in fine.iter().zip(&self.parents) {
            let mut left = v;
            for k in 0..3 {
                if num[k] == 0 {
                    break;
                }
                let last = k == 2 || num[k + 1] == 0;
                let share = if last {
                    left
                } else {
                    (u128::from(v) * u128::from(num[k]) / r) as u64
                };
                left -= share;
                coarse[parent[k] as usize] += share;
            }
        }
        coarse
    }

    /// The restriction as a gather per coarse vertex, for the device: per coarse vertex, where
    /// its entries start (`len + 1` offsets), and each entry `fine id · 4 + parent slot`.
    pub fn restriction_table(&self) -> (Vec<u32>, Vec<u32>) {
        let mut offsets = vec![0u32; self.coarse_vertices + 1];
        for (parent, num) in &self.parents {
            for k in 0..3 {
                if num[k] != 0 {
                    offsets[parent[k] as usize + 1] += 1;
                }
            }
        }
        for v in 0..self.coarse_vertices {
            offsets[v + 1] += offsets[v];
        }
        let mut fill = offsets.clone();
        let mut entries = vec![0u32; offsets[self.coarse_vertices] as usize];
        for (f, (parent, num)) in self.parents.iter().enumerate() {
            for k in 0..3 {
                if num[k] != 0 {
                    let slot = &mut fill[parent[k] as usize];
                    entries[*slot as usize] = 4 * f as u32 + k as u32;
                    *slot += 1;
                }
            }
        }
        (offsets, entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terrain::{Terrain, TerrainSpec};

    fn ground() -> GroundSurface {
        let spec = TerrainSpec {
            size: [90.0, 40.0, 30.0],
            relief: 0.0,
            cells: [3, 2],
            layers: 1,
            grading: 1.0,
        };
        Terrain::from_fn(spec, |x, y| 0.2 * x + 0.1 * y)
            .unwrap()
            .ground_surface()
    }

    #[test]
    fn counts_positions_and_lattice_of_a_refined_ground() {
        let g = ground();
        for r in [1, 2, 4, 5] {
            let c = CoverMesh::new(&g, r).unwrap();
            let (nv, nt) = (12, 12); // 4 × 3 points, 3 × 2 cells of two triangles
            let ne = 3 * 3 + 4 * 2 + 6; // x edges, y edges, diagonals
            let expected =
                nv + ne * (r - 1) as usize + nt * ((r - 1) * r.saturating_sub(2) / 2) as usize;
            assert_eq!(c.len(), expected, "r = {r}");
            assert_eq!(c.triangles.len(), nt * (r * r) as usize);
            // Every fine vertex on the plane z = 0.2 x + 0.1 y, every lattice point where its
            // coordinates say.
            for v in &c.vertices {
                assert!((v[2] - 0.2 * v[0] - 0.1 * v[1]).abs() < 1e-9);
            }
            for (ct, t) in c.coarse_triangles.iter().enumerate() {
                for j in 0..=r {
                    for i in 0..=r - j {
                        let f = c.lattice[ct * lattice_len(r) + lattice_index(r, i, j)];
                        let (a, b, d) = (
                            g.mesh.vertices[t[0] as usize],
                            g.mesh.vertices[t[1] as usize],
                            g.mesh.vertices[t[2] as usize],
                        );
                        let (fi, fj) = (i as f64 / r as f64, j as f64 / r as f64);
                        for k in 0..2 {
                            let want = a[k] + fi * (b[k] - a[k]) + fj * (d[k] - a[k]);
                            assert!((c.vertices[f as usize][k] - want).abs() < 1e-9);
                        }
                    }
                }
            }
            // The fine triangles tile the ground: horizontal areas sum to 90 × 40, all positive.
            let mut area = 0.0;
            for t in &c.triangles {
                let p = |k: usize| c.vertices[t[k] as usize];
                let s = (p(1)[0] - p(0)[0]) * (p(2)[1] - p(0)[1])
                    - (p(1)[1] - p(0)[1]) * (p(2)[0] - p(0)[0]);
                assert!(s > 0.0, "a fine triangle turns the wrong way");
                area += 0.5 * s;
            }
            assert!((area - 3600.0).abs() < 1e-6, "{area}");
        }
    }

    #[test]
    fn restriction_is_exact_and_follows_the_hat_functions() {
        let g = ground();
        let c = CoverMesh::new(&g, 4).unwrap();
        let fine: Vec<u64> = (0..c.len() as u64).map(|i| 1_000_003 * i + 7).collect();
        let coarse = c.restrict(&fine);
        let total = |v: &[u64]| v.iter().map(|&x| u128::from(x)).sum::<u128>();
        assert_eq!(total(&coarse), total(&fine));
        // A unit volume at an inner point of an edge goes to its two ends as 3:1 or 1:3.
        let mut one = vec![0u64; c.len()];
        let point = c.coarse_vertices; // first inner point of the first edge
        one[point] = 4_000;
        let got = c.restrict(&one);
        let (parent, num) = c.parents[point];
        assert_eq!(got[parent[0] as usize], 1_000 * u64::from(num[0]));
        assert_eq!(got[parent[1] as usize], 1_000 * u64::from(num[1]));
        // The device's gather table lists each (fine, parent) pair once.
        let (offsets, entries) = c.restriction_table();
        let pairs: usize = c
            .parents
            .iter()
            .map(|(_, n)| n.iter().filter(|&&x| x > 0).count())
            .sum();
        assert_eq!(entries.len(), pairs);
        assert_eq!(offsets.len(), c.coarse_vertices + 1);
    }

    #[test]
    fn adjacency_is_mutual_and_vertex_lists_are_complete() {
        let c = CoverMesh::new(&ground(), 2).unwrap();
        for (t, adj) in c.adjacent.iter().enumerate() {
            for &u in adj {
                if u >= 0 {
                    assert!(c.adjacent[u as usize].contains(&(t as i32)));
                }
            }
        }
        for v in 0..c.coarse_vertices {
            let around =
                &c.vertex_triangles[c.vertex_offsets[v] as usize..c.vertex_offsets[v + 1] as usize];
            let want: Vec<u32> = (0..c.coarse_triangles.len() as u32)
                .filter(|&t| c.coarse_triangles[t as usize].contains(&(v as u32)))
                .collect();
            assert_eq!(around, &want[..]);
        }
        assert!(CoverMesh::new(&ground(), 0).is_err());
        assert!(CoverMesh::new(&ground(), 17).is_err());
    }
}
