//! The pressure operator `A = D W Dᵀ` assembled per vertex, for the conjugate gradients.
//!
//! The matrix-free operator (`wind_grad_*`, `wind_gather_grad`, `wind_tet_div_grad`,
//! `wind_gather_q`) walks the tetrahedra twice and the vertex balls twice per product: four
//! launches and about 400 MB of traffic on the valley. Both of its halves are linear maps
//! between neighbouring vertices, fixed by the geometry:
//!
//! - the gathered gradient `s_v = Σ_{T∋v} Σ_k c_T[k] x_{n_k} = Σ_w G_vw x_w`, with
//!   `G_vw = Σ_{T∋v,w} c_T[local w]`;
//! - the gathered divergence of a vertex vector `q_v = Σ_{T∋v} c_T[local v] · Σ_k g_{n_k}
//!   = Σ_w D_vw · g_w`, with `D_vw = Σ_{T∋v,w} c_T[local v] = G_wv`,
//!
//! where `c_T[j] = (V/4)∇φ_j` and the sums run over the tetrahedra holding both `v` and `w`.
//! Between them sits `W`: the boundary projector over the lumped volume, zero where the pressure
//! is fixed. So `A = D W Dᵀ`, and storing `G` and `D` row by row over each vertex's one-ring
//! (itself and its edge neighbours) turns a product into two vertex kernels reading 16 bytes
//! per entry. The coefficients are summed in f64 and stored in f32 (the per-tetrahedron
//! coefficients are f32 already); `G` and `D` hold the same numbers transposed, so `A` stays
//! exactly symmetric.
//!
//! The rows are padded to the widest one-ring (ELLPACK), column-major (`slot × vertices +
//! vertex`) so that neighbouring work-items read neighbouring entries. A row ends at its first
//! padding entry, whose column is [`END`]: the kernels stop there rather than read the
//! padding, which on the valley (one-rings of 14.5 entries on average, 19 at most) was a
//! quarter of the tables' traffic. A mesh whose widest one-ring is wider than [`MAX_WIDTH`] keeps the
//! matrix-free operator.

use rayon::prelude::*;

use super::geometry::Geometry;
use crate::gml::topology::Incidence;

/// The widest one-ring stored assembled: beyond it the padding costs more than it saves.
pub const MAX_WIDTH: usize = 40;

/// The column of a padding entry (`-1` as an OpenCL `int`): the end of its row.
pub const END: u32 = u32::MAX;

/// `G` and `D` row by row, padded to `width` entries per vertex.
#[derive(Clone, Debug, PartialEq)]
pub struct Assembled {
    /// Entries per row: the widest one-ring (the vertex itself included).
    pub width: usize,
    /// Entries per row before its end, on average (the mean one-ring).
    pub mean_width: f64,
    /// `G_vw` (xyz) with `w` as the bits of the fourth lane, at `slot × vertices + v`.
    pub grad: Vec<[f32; 4]>,
    /// `D_vw` (xyz) with `w` as the bits of the fourth lane, at the same places.
    pub div: Vec<[f32; 4]>,
}

/// Each vertex's one-ring (itself and its edge neighbours, increasing): the columns of its
/// rows. Computed once, before the device's memory is checked for the tables it implies.
#[derive(Clone, Debug)]
pub struct Rings {
    rings: Vec<Vec<u32>>,
}

impl Rings {
    /// The one-rings of the tetrahedra `tets` (nodes); `ball` is the vertex → tetrahedra
    /// incidence.
    pub fn new(ball: &Incidence, tets: &[[u32; 4]]) -> Self {
        let rings = (0..ball.rows())
            .into_par_iter()
            .map(|v| ring(ball, tets, v))
            .collect();
        Self { rings }
    }

    /// Entries per assembled row: the widest one-ring.
    pub fn width(&self) -> usize {
        self.rings.iter().map(Vec::len).max().unwrap_or(0)
    }

    /// The mean one-ring's entries: what a product reads per row before the row's end.
    pub fn mean_width(&self) -> f64 {
        let entries: usize = self.rings.iter().map(Vec::len).sum();
        entries as f64 / self.rings.len().max(1) as f64
    }
}

impl Assembled {
    /// Assembles `G` and `D` over `rings` from the tetrahedra `tets` (nodes) with `geometry`'s
    /// coefficients; `ball` is the vertex → tetrahedra incidence with local indices.
    pub fn new(rings: &Rings, ball: &Incidence, tets: &[[u32; 4]], geometry: &Geometry) -> Self {
        let vertices = ball.rows();
        let width = rings.width();
        // Per vertex, its row's (G, D) entries in f32, column by column of its ring.
        let rows: Vec<Vec<([f32; 3], [f32; 3])>> = rings
            .rings
            .par_iter()
            .enumerate()
            .map(|(v, ring)| {
                let mut row = vec![([0.0f64; 3], [0.0f64; 3]); ring.len()];
                let span = ball.offsets[v]..ball.offsets[v + 1];
                for (&e, &local) in ball.elements[span.clone()].iter().zip(&ball.locals[span]) {
                    let e = e as usize;
                    let own = geometry.coefficients[4 * e + usize::from(local)];
                    for (k, w) in tets[e].iter().enumerate() {
                        let theirs = geometry.coefficients[4 * e + k];
                        if let Ok(at) = ring.binary_search(w) {
                            let (g, d) = &mut row[at];
                            for c in 0..3 {
                                g[c] += f64::from(theirs[c]);
                                d[c] += f64::from(own[c]);
                            }
                        }
                    }
                }
                row.iter()
                    .map(|(g, d)| (g.map(|x| x as f32), d.map(|x| x as f32)))
                    .collect()
            })
            .collect();
        let mut grad = vec![[0.0f32; 4]; width * vertices];
        let mut div = vec![[0.0f32; 4]; width * vertices];
        for (v, (ring, row)) in rings.rings.iter().zip(&rows).enumerate() {
            for slot in 0..width {
                let at = slot * vertices + v;
                let (w, (g, d)) = match (ring.get(slot), row.get(slot)) {
                    (Some(&w), Some(&entry)) => (w, entry),
                    _ => (END, ([0.0; 3], [0.0; 3])),
                };
                let column = f32::from_bits(w);
                grad[at] = [g[0], g[1], g[2], column];
                div[at] = [d[0], d[1], d[2], column];
            }
        }
        Self {
            width,
            mean_width: rings.mean_width(),
            grad,
            div,
        }
    }
}

/// Vertex `v` and its edge neighbours, increasing.
fn ring(ball: &Incidence, tets: &[[u32; 4]], v: usize) -> Vec<u32> {
    let mut ring: Vec<u32> = ball.elements[ball.offsets[v]..ball.offsets[v + 1]]
        .iter()
        .flat_map(|&e| tets[e as usize])
        .collect();
    ring.push(v as u32);
    ring.sort_unstable();
    ring.dedup();
    ring
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wind::diagonal;

    /// Two tetrahedra sharing the face 1-2-3, and the apexes 0 and 4.
    fn two_tets() -> (Vec<[f64; 3]>, Vec<[u32; 4]>) {
        let v = vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [1.0, 1.0, 1.0],
        ];
        (v, vec![[0, 1, 2, 3], [4, 2, 1, 3]])
    }

    /// The gathered gradient and divergence computed tetrahedron by tetrahedron, as the
    /// matrix-free kernels do, against the assembled rows.
    #[test]
    fn assembled_rows_reproduce_the_tetrahedron_loops() {
        let (v, t) = two_tets();
        let geometry = Geometry::new(&v, &t).unwrap();
        let ball = diagonal::vertex_ball(v.len(), &t);
        let rings = Rings::new(&ball, &t);
        assert_eq!(rings.width(), 5, "vertices 1, 2, 3 see every vertex");
        let a = Assembled::new(&rings, &ball, &t, &geometry);
        assert_eq!(a.width, 5);
        assert_eq!(a.mean_width, (4 + 5 + 5 + 5 + 4) as f64 / 5.0);
        let n = v.len();
        let x = [0.3, -1.2, 2.5, 0.7, -0.4];
        let g: Vec<[f64; 3]> = (0..n).map(|i| [x[i], 2.0 * x[i], -x[i]]).collect();
        // Tetrahedron loops.
        let mut s = vec![[0.0f64; 3]; n];
        let mut q = vec![0.0f64; n];
        for (e, nodes) in t.iter().enumerate() {
            let c = |j: usize| geometry.coefficients[4 * e + j].map(f64::from);
            let mut grad = [0.0; 3];
            let mut sum = [0.0; 3];
            for (k, &w) in nodes.iter().enumerate() {
                for d in 0..3 {
                    grad[d] += c(k)[d] * x[w as usize];
                    sum[d] += g[w as usize][d];
                }
            }
            for (j, &w) in nodes.iter().enumerate() {
                for d in 0..3 {
                    s[w as usize][d] += grad[d];
                    q[w as usize] += c(j)[d] * sum[d];
                }
            }
        }
        // Assembled rows.
        for vertex in 0..n {
            let mut s_row = [0.0f64; 3];
            let mut q_row = 0.0f64;
            let mut ended = false;
            for slot in 0..a.width {
                let gr = a.grad[slot * n + vertex];
                let dr = a.div[slot * n + vertex];
                assert_eq!(gr[3].to_bits(), dr[3].to_bits());
                if gr[3].to_bits() == END {
                    assert!(
                        gr[..3] == [0.0; 3] && dr[..3] == [0.0; 3],
                        "padding at {vertex}"
                    );
                    ended = true;
                    continue;
                }
                assert!(!ended, "row {vertex}: an entry after the row's end");
                let w = gr[3].to_bits() as usize;
                for d in 0..3 {
                    s_row[d] += f64::from(gr[d]) * x[w];
                    q_row += f64::from(dr[d]) * g[w][d];
                }
            }
            for d in 0..3 {
                assert!((s_row[d] - s[vertex][d]).abs() < 1e-6, "s at {vertex}");
            }
            assert!((q_row - q[vertex]).abs() < 1e-6, "q at {vertex}");
        }
        // D is G transposed, entry for entry.
        let entry = |m: &Vec<[f32; 4]>, v: usize, w: usize| {
            (0..a.width)
                .map(|slot| m[slot * n + v])
                .find(|e| e[3].to_bits() as usize == w && e[..3] != [0.0; 3])
        };
        for v in 0..n {
            for w in 0..n {
                assert_eq!(
                    entry(&a.grad, v, w).map(|e| [e[0], e[1], e[2]]),
                    entry(&a.div, w, v).map(|e| [e[0], e[1], e[2]]),
                    "G[{v}][{w}] against D[{w}][{v}]"
                );
            }
        }
    }
}
