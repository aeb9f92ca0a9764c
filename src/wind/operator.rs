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

use super::WindError;
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

impl Assembled {
    /// The vertices the rows are for (the tables hold `width` entries for each).
    pub fn vertices(&self) -> usize {
        self.grad.len().checked_div(self.width).unwrap_or(0)
    }

    /// The piece of the operator one rank needs over a partitioned mesh: the rows of its
    /// `owned` vertices, columns renumbered to the rank's local vertices (`owned`, then `halo`,
    /// each ascending), and an empty row (its end at slot 0) for each halo vertex, whose
    /// values the owner sends. A row keeps its entries in the global row's order, so a
    /// product over the piece sums the same numbers in the same order as the whole operator's
    /// row: after a halo exchange of its input, the piece's rows equal the whole's bit for
    /// bit. The halo must hold every other column of the owned rows (one ring: a product of
    /// `G` or `D` reaches the edge neighbours), else [`WindError::Piece`] names the row and
    /// the column missing.
    pub fn piece(&self, owned: &[u32], halo: &[u32]) -> Result<Assembled, WindError> {
        let vertices = self.vertices();
        let ascending = |list: &[u32], what: &str| {
            if let Some(w) = list.windows(2).find(|w| w[0] >= w[1]) {
                return Err(WindError::Piece(format!(
                    "the {what} vertices must be ascending and distinct ({} before {})",
                    w[0], w[1]
                )));
            }
            match list.last() {
                Some(&last) if last as usize >= vertices => Err(WindError::Piece(format!(
                    "{what} vertex {last} is past the operator's {vertices} vertices"
                ))),
                _ => Ok(()),
            }
        };
        ascending(owned, "owned")?;
        ascending(halo, "halo")?;
        if let Some(v) = halo.iter().find(|v| owned.binary_search(v).is_ok()) {
            return Err(WindError::Piece(format!(
                "vertex {v} is both owned and in the halo"
            )));
        }
        let local = |w: u32| {
            owned
                .binary_search(&w)
                .map(|i| i as u32)
                .or_else(|_| halo.binary_search(&w).map(|i| (owned.len() + i) as u32))
                .ok()
        };
        let row_len = |v: usize| {
            (0..self.width)
                .find(|&slot| self.grad[slot * vertices + v][3].to_bits() == END)
                .unwrap_or(self.width)
        };
        let width = owned
            .iter()
            .map(|&v| row_len(v as usize))
            .max()
            .unwrap_or(0);
        let rows = owned.len() + halo.len();
        let end = [0.0, 0.0, 0.0, f32::from_bits(END)];
        let mut grad = vec![end; width * rows];
        let mut div = vec![end; width * rows];
        let mut entries = 0;
        for (i, &v) in owned.iter().enumerate() {
            let v = v as usize;
            for slot in 0..row_len(v) {
                let at = slot * vertices + v;
                let column = self.grad[at][3].to_bits();
                let Some(c) = local(column) else {
                    return Err(WindError::Piece(format!(
                        "the row of vertex {v} has column {column}, which is neither owned nor \
                         in the halo (the halo must reach one ring from the owned vertices)"
                    )));
                };
                let [gx, gy, gz, _] = self.grad[at];
                let [dx, dy, dz, _] = self.div[at];
                grad[slot * rows + i] = [gx, gy, gz, f32::from_bits(c)];
                div[slot * rows + i] = [dx, dy, dz, f32::from_bits(c)];
                entries += 1;
            }
        }
        Ok(Assembled {
            width,
            mean_width: entries as f64 / owned.len().max(1) as f64,
            grad,
            div,
        })
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

    /// A block of `n`³ cubes, each cut into the six tetrahedra around its main diagonal, the
    /// vertices moved a little off the grid so that no two rows are alike.
    fn cubes(n: usize) -> (Vec<[f64; 3]>, Vec<[u32; 4]>) {
        let side = n + 1;
        let id = |x: usize, y: usize, z: usize| (x + side * (y + side * z)) as u32;
        let vertices = (0..side * side * side)
            .map(|i| {
                let (x, y, z) = (i % side, (i / side) % side, i / (side * side));
                let wobble = |k: usize| 0.1 * ((i * 7 + k * 13) % 5) as f64 / 5.0;
                [
                    x as f64 + wobble(0),
                    y as f64 + wobble(1),
                    0.5 * z as f64 + 0.5 * wobble(2),
                ]
            })
            .collect();
        let mut tets = Vec::new();
        for (x, y, z) in
            (0..n).flat_map(|x| (0..n).flat_map(move |y| (0..n).map(move |z| (x, y, z))))
        {
            let corner = |b: [usize; 3]| id(x + b[0], y + b[1], z + b[2]);
            // Odd permutations of the axes list their middle corners the other way round, so
            // that all six are oriented alike.
            for (a, b, odd) in [
                (0, 1, false),
                (0, 2, true),
                (1, 0, true),
                (1, 2, false),
                (2, 0, false),
                (2, 1, true),
            ] {
                let mut first = [0; 3];
                first[a] = 1;
                let mut second = first;
                second[b] = 1;
                let (p, q) = if odd {
                    (second, first)
                } else {
                    (first, second)
                };
                tets.push([corner([0; 3]), corner(p), corner(q), corner([1; 3])]);
            }
        }
        (vertices, tets)
    }

    /// `q = D (W (G x))` row by row over the tables of `a` (vertex `v`'s rows at `slot ×
    /// rows + v`), summing each row in slot order; the rows `active` only (the others 0).
    fn product(
        a: &Assembled,
        x: &[f64],
        weight: &[f64],
        s_of: impl Fn(&[[f64; 3]]) -> Vec<[f64; 3]>,
        active: usize,
    ) -> (Vec<[f64; 3]>, Vec<f64>) {
        let rows = a.vertices();
        fn row(a: &Assembled, m: &[[f32; 4]], v: usize) -> Vec<[f32; 4]> {
            let rows = a.vertices();
            (0..a.width)
                .map(|slot| m[slot * rows + v])
                .take_while(|e| e[3].to_bits() != END)
                .collect()
        }
        let s: Vec<[f64; 3]> = (0..rows)
            .map(|v| {
                let mut sum = [0.0; 3];
                for e in row(a, &a.grad, v).into_iter().filter(|_| v < active) {
                    for d in 0..3 {
                        sum[d] += f64::from(e[d]) * x[e[3].to_bits() as usize];
                    }
                }
                sum
            })
            .collect();
        let s = s_of(&s);
        let q = (0..rows)
            .map(|v| {
                row(a, &a.div, v)
                    .into_iter()
                    .filter(|_| v < active)
                    .map(|e| {
                        let w = e[3].to_bits() as usize;
                        (0..3)
                            .map(|d| f64::from(e[d]) * weight[w] * s[w][d])
                            .sum::<f64>()
                    })
                    .sum()
            })
            .collect();
        (s, q)
    }

    /// Three parts of a block of cubes, each with the rows of its vertices and a one-ring
    /// halo: with the intermediate `G x` exchanged between the two halves of the product, as
    /// the ranks would, each part's `D W G x` equals the whole operator's on its vertices bit
    /// for bit. A halo without the ring is refused, naming the row.
    #[test]
    fn pieces_with_a_one_ring_halo_give_the_whole_product_bit_for_bit() {
        let (v, t) = cubes(4);
        let geometry = Geometry::new(&v, &t).unwrap();
        let ball = diagonal::vertex_ball(v.len(), &t);
        let rings = Rings::new(&ball, &t);
        let whole = Assembled::new(&rings, &ball, &t, &geometry);
        let n = v.len();
        let x: Vec<f64> = (0..n)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.0)
            .collect();
        let weight: Vec<f64> = (0..n).map(|i| 0.5 + (i * 11 % 13) as f64 / 13.0).collect();
        let (s, q) = product(&whole, &x, &weight, |s| s.to_vec(), n);
        // Parts by x coordinate: three slabs of unequal width.
        let owner: Vec<usize> = v.iter().map(|p| (p[0] * 0.7) as usize).collect();
        for part in 0..3 {
            let owned: Vec<u32> = (0..n as u32)
                .filter(|&w| owner[w as usize] == part)
                .collect();
            let mut halo: Vec<u32> = owned
                .iter()
                .flat_map(|&w| rings.rings[w as usize].iter().copied())
                .filter(|&w| owner[w as usize] != part)
                .collect();
            halo.sort_unstable();
            halo.dedup();
            assert!(!owned.is_empty() && !halo.is_empty());
            let piece = whole.piece(&owned, &halo).unwrap();
            let local: Vec<u32> = owned.iter().chain(&halo).copied().collect();
            assert_eq!(piece.vertices(), local.len());
            let x_local: Vec<f64> = local.iter().map(|&w| x[w as usize]).collect();
            let w_local: Vec<f64> = local.iter().map(|&w| weight[w as usize]).collect();
            // The exchange: the halo's G x from its owners (here, the whole's).
            let exchange = |s_local: &[[f64; 3]]| {
                let mut s_local = s_local.to_vec();
                for (i, &w) in halo.iter().enumerate() {
                    assert_eq!(s_local[owned.len() + i], [0.0; 3], "a halo row is empty");
                    s_local[owned.len() + i] = s[w as usize];
                }
                s_local
            };
            let (s_piece, q_piece) = product(&piece, &x_local, &w_local, exchange, owned.len());
            for (i, &w) in owned.iter().enumerate() {
                assert_eq!(
                    s_piece[i].map(f64::to_bits),
                    s[w as usize].map(f64::to_bits),
                    "G x at {w}"
                );
                assert_eq!(q_piece[i].to_bits(), q[w as usize].to_bits(), "q at {w}");
            }
            // Without the halo's last vertex, some owned row misses a column.
            let short = &halo[..halo.len() - 1];
            let missing = halo[halo.len() - 1];
            match whole.piece(&owned, short) {
                Err(WindError::Piece(message)) => {
                    assert!(message.contains(&format!("column {missing}")), "{message}")
                }
                other => panic!("a short halo was accepted: {other:?}"),
            }
        }
        assert!(matches!(
            whole.piece(&[3, 2], &[]),
            Err(WindError::Piece(_))
        ));
        assert!(matches!(whole.piece(&[2], &[2]), Err(WindError::Piece(_))));
        assert!(matches!(
            whole.piece(&[n as u32], &[]),
            Err(WindError::Piece(_))
        ));
    }
}
