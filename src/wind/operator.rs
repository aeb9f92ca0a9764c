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

    /// Vertex `v`'s one-ring: itself and its edge neighbours, increasing (the columns of its
    /// rows).
    pub fn ring(&self, v: usize) -> &[u32] {
        &self.rings[v]
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

    /// The piece of the operator one rank needs over a partitioned mesh, on its `local`
    /// vertices (global indices, distinct; the rank's own first): `G`'s rows of the first
    /// `grad_rows` of them and `D`'s rows of the first `div_rows`, columns renumbered to
    /// positions in `local`, and empty rows (their end at slot 0) for the rest, whose values
    /// other ranks compute. Each row keeps its entries in the whole row's order, so a product
    /// over the piece sums the same numbers in the same order as the whole operator's row:
    /// given the same inputs at the local vertices, the piece's rows equal the whole's bit
    /// for bit.
    ///
    /// Two layouts serve a rank that owns `o` vertices: a one-ring halo with `G` and `D` rows
    /// for the owned vertices (`grad_rows = div_rows = o`: the product's input and its
    /// intermediate `G x` exchanged), or a two-ring halo with `G` rows for the owned and
    /// first-ring vertices too (one exchange of the input a product). Every column of a kept
    /// row must be local, else [`WindError::Piece`] names the row and the column missing.
    pub fn piece(
        &self,
        local: &[u32],
        grad_rows: usize,
        div_rows: usize,
    ) -> Result<Assembled, WindError> {
        let vertices = self.vertices();
        if grad_rows > local.len() || div_rows > local.len() {
            return Err(WindError::Piece(format!(
                "{grad_rows} gradient and {div_rows} divergence rows asked of {} local vertices",
                local.len()
            )));
        }
        let mut position = vec![u32::MAX; vertices];
        for (i, &v) in local.iter().enumerate() {
            let Some(slot) = position.get_mut(v as usize) else {
                return Err(WindError::Piece(format!(
                    "local vertex {v} is past the operator's {vertices} vertices"
                )));
            };
            if *slot != u32::MAX {
                return Err(WindError::Piece(format!("vertex {v} is local twice")));
            }
            *slot = i as u32;
        }
        let row_len = |table: &[[f32; 4]], v: usize| {
            (0..self.width)
                .find(|&slot| table[slot * vertices + v][3].to_bits() == END)
                .unwrap_or(self.width)
        };
        let rows = local.len();
        let end = [0.0, 0.0, 0.0, f32::from_bits(END)];
        let keep =
            |table: &[[f32; 4]], kept: usize| -> Result<(Vec<[f32; 4]>, usize, usize), WindError> {
                let width = local[..kept]
                    .iter()
                    .map(|&v| row_len(table, v as usize))
                    .max()
                    .unwrap_or(0);
                let mut out = vec![end; width * rows];
                let mut entries = 0;
                for (i, &v) in local[..kept].iter().enumerate() {
                    let v = v as usize;
                    for slot in 0..row_len(table, v) {
                        let [x, y, z, column] = table[slot * vertices + v];
                        let column = column.to_bits();
                        let c = position[column as usize];
                        if c == u32::MAX {
                            return Err(WindError::Piece(format!(
                                "the row of vertex {v} has column {column}, which is not local \
                             (the halo must reach one ring beyond the rows kept)"
                            )));
                        }
                        out[slot * rows + i] = [x, y, z, f32::from_bits(c)];
                        entries += 1;
                    }
                }
                Ok((out, width, entries))
            };
        let (mut grad, grad_width, _) = keep(&self.grad, grad_rows)?;
        let (mut div, div_width, entries) = keep(&self.div, div_rows)?;
        // One width for both tables, as the whole operator has; at least one slot, so that
        // the tables say how many vertices they are for.
        let width = grad_width.max(div_width).max(1);
        grad.resize(width * rows, end);
        div.resize(width * rows, end);
        Ok(Assembled {
            width,
            mean_width: entries as f64 / div_rows.max(1) as f64,
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
    /// rows + v`), summing each row in slot order; `s_of` fills in `G x` where other ranks
    /// compute it (an empty row gives 0).
    fn product(
        a: &Assembled,
        x: &[f64],
        weight: &[f64],
        s_of: impl Fn(&[[f64; 3]]) -> Vec<[f64; 3]>,
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
                for e in row(a, &a.grad, v) {
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

    /// Three parts of a block of cubes. With a one-ring halo and the rows of its own vertices,
    /// a part's `D W G x` equals the whole operator's on its vertices bit for bit once `G x`
    /// is exchanged between the product's halves, as the ranks would; with a two-ring halo
    /// and `G`'s rows of the first ring too, without that exchange. A halo short of what the
    /// rows reach is refused, naming the row.
    #[test]
    fn pieces_give_the_whole_product_bit_for_bit() {
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
        let (s, q) = product(&whole, &x, &weight, |s| s.to_vec());
        // Parts by x coordinate: three slabs of unequal width.
        let owner: Vec<usize> = v.iter().map(|p| (p[0] * 0.7) as usize).collect();
        // The vertices one ring out from `inner`, not in it, ascending.
        let ring_of = |inner: &[u32]| {
            let mut out: Vec<u32> = inner
                .iter()
                .flat_map(|&w| rings.rings[w as usize].iter().copied())
                .filter(|w| !inner.contains(w))
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        };
        for part in 0..3 {
            let owned: Vec<u32> = (0..n as u32)
                .filter(|&w| owner[w as usize] == part)
                .collect();
            let first = ring_of(&owned);
            let inner: Vec<u32> = owned.iter().chain(&first).copied().collect();
            let second = ring_of(&inner);
            assert!(!owned.is_empty() && !first.is_empty() && !second.is_empty());
            let o = owned.len();
            let check = |local: &[u32], grad_rows: usize, exchange: bool| {
                let piece = whole.piece(local, grad_rows, o).unwrap();
                assert_eq!(piece.vertices(), local.len());
                let x_local: Vec<f64> = local.iter().map(|&w| x[w as usize]).collect();
                let w_local: Vec<f64> = local.iter().map(|&w| weight[w as usize]).collect();
                // The exchange of `G x` at the rows not kept: from their owners (the whole's).
                let fill = |s_local: &[[f64; 3]]| {
                    let mut s_local = s_local.to_vec();
                    for (i, &w) in local.iter().enumerate().skip(grad_rows) {
                        assert_eq!(s_local[i], [0.0; 3], "a row not kept is empty");
                        if exchange {
                            s_local[i] = s[w as usize];
                        }
                    }
                    s_local
                };
                let (s_piece, q_piece) = product(&piece, &x_local, &w_local, fill);
                for (i, &w) in local[..grad_rows].iter().enumerate() {
                    assert_eq!(
                        s_piece[i].map(f64::to_bits),
                        s[w as usize].map(f64::to_bits)
                    );
                }
                for (i, &w) in owned.iter().enumerate() {
                    assert_eq!(q_piece[i].to_bits(), q[w as usize].to_bits(), "q at {w}");
                }
            };
            let one_ring: Vec<u32> = owned.iter().chain(&first).copied().collect();
            check(&one_ring, o, true);
            let two_rings: Vec<u32> = one_ring.iter().chain(&second).copied().collect();
            check(&two_rings, o + first.len(), false);
            // Without its last vertex, a halo misses a column of some row kept.
            let missing = one_ring[one_ring.len() - 1];
            match whole.piece(&one_ring[..one_ring.len() - 1], o, o) {
                Err(WindError::Piece(message)) => {
                    assert!(message.contains(&format!("column {missing}")), "{message}")
                }
                other => panic!("a short halo was accepted: {other:?}"),
            }
            assert!(matches!(
                whole.piece(&one_ring, o + first.len(), o),
                Err(WindError::Piece(_))
            ));
        }
        assert!(matches!(
            whole.piece(&[2, 2], 1, 1),
            Err(WindError::Piece(_))
        ));
        assert!(matches!(
            whole.piece(&[n as u32], 1, 1),
            Err(WindError::Piece(_))
        ));
        assert!(matches!(
            whole.piece(&[0, 1], 3, 1),
            Err(WindError::Piece(_))
        ));
    }
}
