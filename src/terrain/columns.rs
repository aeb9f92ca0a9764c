//! The columns of a terrain-following mesh: which grid column and level each volume vertex is,
//! the bare ground under each column, and the regrading that raises a column's ground (by the
//! snow laid on it, say) and spreads its levels again by the mesher's own rule.
//!
//! The mesher ([`Terrain::volume_mesh`](super::Terrain::volume_mesh)) places vertex `c + C k`
//! (grid column `c` of `C`, level `k` of `n`) at `z = g_c + (Z − g_c) s_k`, `Z` the top and
//! `s_k` the [level fractions](super::TerrainSpec::level_fractions), and `z = Z` at the top
//! level. Renumbering for the kernels moves the vertices; [`Columns::renumbered`] keeps the
//! map. A regrade always starts from the bare ground, `G_c = g_c + d_c`: nothing accumulates
//! across regrades, and zero raise gives the mesher's heights bit for bit. Each tetrahedron of
//! a prism has exactly one vertical edge, so its volume is that edge's height times a third of
//! its horizontal area: positive while the levels of every column rise, that is while the
//! raised ground stays below the top. The raise is clamped to [`MAX_RAISE`] of the air above
//! the bare ground, so every layer keeps at least half its thickness.

use super::TerrainError;

/// Largest share of the air above a column's bare ground that a regrade may raise it by.
pub const MAX_RAISE: f64 = 0.5;

/// Grid column and level of every volume vertex of a terrain-following mesh, and each
/// column's bare ground.
#[derive(Clone, Debug, PartialEq)]
pub struct Columns {
    /// Per volume vertex, its grid column.
    pub column: Vec<u32>,
    /// Per volume vertex, its level (0 on the ground).
    pub level: Vec<u32>,
    /// Per grid column, the bare ground's height, m.
    pub ground: Vec<f64>,
    /// Per level, the height fraction between the ground and the top.
    pub fractions: Vec<f64>,
    /// The top's height, m.
    pub top: f64,
}

/// A regrade's heights: `z` per volume vertex, and how many columns were clamped.
#[derive(Clone, Debug, PartialEq)]
pub struct Regraded {
    /// The new height of every volume vertex, m.
    pub z: Vec<f64>,
    /// Columns whose raise was clamped to [`MAX_RAISE`] of their air.
    pub clamped: usize,
}

impl Columns {
    /// The columns of the mesher's own numbering: vertex `c + C k` is column `c`, level `k`.
    pub fn new(ground: Vec<f64>, fractions: Vec<f64>, top: f64) -> Self {
        let count = ground.len();
        let vertices = count * fractions.len();
        Self {
            column: (0..vertices).map(|v| (v % count) as u32).collect(),
            level: (0..vertices).map(|v| (v / count) as u32).collect(),
            ground,
            fractions,
            top,
        }
    }

    /// The same columns after the volume's vertices were renumbered: `order[new] = old`.
    pub fn renumbered(&self, order: &[u32]) -> Result<Self, TerrainError> {
        if order.len() != self.column.len() {
            return Err(TerrainError::InvalidGrid(format!(
                "a renumbering of {} vertices for {} column vertices",
                order.len(),
                self.column.len()
            )));
        }
        let pick = |table: &[u32]| -> Result<Vec<u32>, TerrainError> {
            order
                .iter()
                .map(|&old| {
                    table.get(old as usize).copied().ok_or_else(|| {
                        TerrainError::InvalidGrid(format!(
                            "a renumbering names vertex {old} of {}",
                            table.len()
                        ))
                    })
                })
                .collect()
        };
        Ok(Self {
            column: pick(&self.column)?,
            level: pick(&self.level)?,
            ground: self.ground.clone(),
            fractions: self.fractions.clone(),
            top: self.top,
        })
    }

    /// The height of `level` in a column whose ground is at `g`: the mesher's formula.
    pub fn height(&self, g: f64, level: usize) -> f64 {
        if level + 1 == self.fractions.len() {
            self.top
        } else {
            g + (self.top - g) * self.fractions[level]
        }
    }

    /// Every volume vertex's height with each column's ground raised by `raise` (m, one per
    /// column, ≥ 0), at most [`MAX_RAISE`] of its air. Zero raise gives the mesher's heights
    /// bit for bit.
    pub fn regrade(&self, raise: &[f64]) -> Result<Regraded, TerrainError> {
        if raise.len() != self.ground.len() {
            return Err(TerrainError::InvalidGrid(format!(
                "{} raises for {} columns",
                raise.len(),
                self.ground.len()
            )));
        }
        if let Some((c, d)) = raise
            .iter()
            .enumerate()
            .find(|(_, d)| !(d.is_finite() && **d >= 0.0))
        {
            return Err(TerrainError::InvalidGrid(format!(
                "column {c}: a raise of {d} m (it must be finite and not negative)"
            )));
        }
        let mut clamped = 0;
        let grounds: Vec<f64> = self
            .ground
            .iter()
            .zip(raise)
            .map(|(&g, &d)| {
                let most = MAX_RAISE * (self.top - g);
                if d > most {
                    clamped += 1;
                    g + most
                } else if d == 0.0 {
                    g
                } else {
                    g + d
                }
            })
            .collect();
        let z = self
            .column
            .iter()
            .zip(&self.level)
            .map(|(&c, &k)| self.height(grounds[c as usize], k as usize))
            .collect();
        Ok(Regraded { z, clamped })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meshio::ElementKind;
    use crate::terrain::{Terrain, TerrainSpec};

    fn hill() -> Terrain {
        let spec = TerrainSpec {
            size: [120.0, 80.0, 60.0],
            relief: 0.0,
            cells: [6, 4],
            layers: 5,
            grading: 1.3,
        };
        Terrain::from_fn(spec, |x, y| {
            10.0 * (-((x - 60.0).powi(2) + (y - 40.0).powi(2)) / 800.0).exp()
        })
        .unwrap()
    }

    /// Six times each tetrahedron's signed volume with vertex heights `z`.
    fn volumes(mesh: &crate::meshio::Mesh, z: &[f64]) -> Vec<f64> {
        mesh.elements(ElementKind::Tetrahedra)
            .iter()
            .map(|(t, _)| {
                let p = |i: usize| {
                    let v = mesh.vertices[t[i] as usize];
                    [v[0], v[1], z[t[i] as usize]]
                };
                let (a, b, c, d) = (p(0), p(1), p(2), p(3));
                let e = |q: [f64; 3]| [q[0] - a[0], q[1] - a[1], q[2] - a[2]];
                let (u, v, w) = (e(b), e(c), e(d));
                u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0])
                    + u[2] * (v[0] * w[1] - v[1] * w[0])
            })
            .collect()
    }

    #[test]
    fn zero_raise_gives_the_meshers_heights_bit_for_bit_renumbered_or_not() {
        let terrain = hill();
        let mesh = terrain.volume_mesh();
        let columns = terrain.columns();
        let flat: Vec<f64> = mesh.vertices.iter().map(|v| v[2]).collect();
        let none = vec![0.0; columns.ground.len()];
        assert_eq!(columns.regrade(&none).unwrap().z, flat);
        // Reversed numbering: the map follows the vertices.
        let order: Vec<u32> = (0..mesh.vertices.len() as u32).rev().collect();
        let renumbered = columns.renumbered(&order).unwrap();
        let reversed: Vec<f64> = flat.iter().rev().copied().collect();
        assert_eq!(renumbered.regrade(&none).unwrap().z, reversed);
        assert!(columns.renumbered(&order[1..]).is_err());
    }

    #[test]
    fn a_raised_ground_keeps_every_tetrahedron_positive_and_clamps_at_half_the_air() {
        let terrain = hill();
        let mesh = terrain.volume_mesh();
        let columns = terrain.columns();
        let n = columns.ground.len();
        // Raises from none to metres, varying from column to column, one far too deep.
        let mut raise: Vec<f64> = (0..n)
            .map(|c| 3.0 * ((c * 7919) % 13) as f64 / 13.0)
            .collect();
        raise[n / 2] = 1e6;
        let regraded = columns.regrade(&raise).unwrap();
        assert_eq!(regraded.clamped, 1);
        let before = volumes(
            &mesh,
            &mesh.vertices.iter().map(|v| v[2]).collect::<Vec<_>>(),
        );
        let after = volumes(&mesh, &regraded.z);
        for (t, (&b, &a)) in before.iter().zip(&after).enumerate() {
            assert!(
                b > 0.0 && a > 0.0,
                "tetrahedron {t}: 6V {b} before, {a} after"
            );
        }
        // The ground vertices rose by their column's raise (the clamped one by half its air).
        for (v, &asked) in raise.iter().enumerate() {
            let rose = regraded.z[v] - mesh.vertices[v][2];
            let want = if v == n / 2 {
                MAX_RAISE * (60.0 - columns.ground[v])
            } else {
                asked
            };
            assert!(
                (rose - want).abs() < 1e-9,
                "column {v}: rose {rose}, want {want}"
            );
        }
        // Back to zero: the mesher's heights again, nothing accumulated.
        let none = vec![0.0; n];
        let flat: Vec<f64> = mesh.vertices.iter().map(|v| v[2]).collect();
        assert_eq!(columns.regrade(&none).unwrap().z, flat);
        assert!(columns.regrade(&none[1..]).is_err());
        let mut bad = none.clone();
        bad[3] = f64::NAN;
        assert!(columns.regrade(&bad).is_err());
    }
}
