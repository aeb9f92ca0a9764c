//! The falling snow's density in the air, n(x), as the parcels carry it: what the veil and the
//! flakes near the camera follow, so that a gust that empties a valley clears the view there.
//!
//! A grid of cells over the domain's box ([`DENSITY_CELLS`] across, [`DENSITY_LAYERS`] high)
//! counts the parcels in each cell (`snow_cell_counts` in `kernels/snow.cl`). The **relative
//! density** of a cell is the flakes there over what a uniform snowfall of the scene's real
//! rate would hold, smoothed by a 3 × 3 × 3 box of cells (the kernel; on the valley it holds
//! about 1 000 parcels, never fewer than ~50 where there is snow to see):
//!
//! `rel = (Σ count · V_s / N + Σ V_above) / Σ V_air`
//!
//! over the 27 cells, where `V_s / N` is the air each parcel stands for (the source layer's
//! air over the particle count), `V_air` a cell's air (above the ground) and `V_above` its air
//! above the snow's source (`snow.source_height`), where the snowfall is uniform and not
//! simulated. 1 where there is no air in the kernel. The number density is
//! `n(x) = rel(x) · n_uniform` (`snow::Snowfall::number_density`), the extinction
//! `β(x) = rel(x) · β_uniform`.

use serde::Serialize;

use super::mesh::SnowGeometry;
use super::refine::CoverMesh;

/// Cells of the density grid across x and across y.
pub const DENSITY_CELLS: usize = 64;
/// Cells of the density grid up z.
pub const DENSITY_LAYERS: usize = 24;

/// The relative density of the falling snow over a grid (x fastest, then y, then z).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RelativeDensity {
    /// Cells along x, y and z.
    pub dims: [u32; 3],
    /// Relative density per cell (1: the scene's uniform snowfall).
    pub values: Vec<f32>,
    /// The box's low corner, m.
    pub lo: [f32; 3],
    /// The box's high corner, m.
    pub hi: [f32; 3],
}

impl RelativeDensity {
    /// The relative density of the cell holding `p` (1 outside the box).
    pub fn at(&self, p: [f64; 3]) -> f64 {
        let mut index = [0usize; 3];
        for k in 0..3 {
            let span = f64::from(self.hi[k] - self.lo[k]);
            let f = (p[k] - f64::from(self.lo[k])) / span;
            if !(0.0..=1.0).contains(&f) || span <= 0.0 {
                return 1.0;
            }
            index[k] = ((f * f64::from(self.dims[k])) as usize).min(self.dims[k] as usize - 1);
        }
        let [nx, ny, _] = self.dims.map(|d| d as usize);
        f64::from(self.values[index[0] + nx * (index[1] + ny * index[2])])
    }
}

/// The grid's geometry on the host: per cell, its air and its air above the source.
#[derive(Clone, Debug)]
pub(crate) struct DensityGrid {
    pub dims: [usize; 3],
    pub lo: [f32; 3],
    pub hi: [f32; 3],
    /// Air per cell, m³.
    air: Vec<f64>,
    /// Air above the snow's source per cell, m³.
    above: Vec<f64>,
    /// The air each parcel stands for, m³.
    per_parcel: f64,
}

impl DensityGrid {
    /// The grid over `geometry`'s box, the ground from `cover`'s coarse triangles, with
    /// `particles` parcels sharing `source_volume` m³ below `source_height` (0: the top).
    pub fn new(
        geometry: &SnowGeometry,
        cover: &CoverMesh,
        particles: usize,
        source_height: f64,
        source_volume: f64,
    ) -> Self {
        let (nx, ny, nz) = (DENSITY_CELLS, DENSITY_CELLS, DENSITY_LAYERS);
        let b = geometry.bounds;
        let lo = [b[0], b[1], geometry.z_range[0]];
        let hi = [b[2], b[3], geometry.z_range[1]];
        let size: [f64; 3] =
            std::array::from_fn(|k| f64::from(hi[k] - lo[k]) / [nx, ny, nz][k] as f64);
        // The ground's height under each column's centre, from the coarse triangles.
        let mut ground = vec![f64::NAN; nx * ny];
        let v = &cover.vertices;
        for t in &cover.coarse_triangles {
            let (a, p, q) = (v[t[0] as usize], v[t[1] as usize], v[t[2] as usize]);
            let det = (p[0] - a[0]) * (q[1] - a[1]) - (p[1] - a[1]) * (q[0] - a[0]);
            if det.abs() <= 0.0 {
                continue;
            }
            let (x0, x1) = (a[0].min(p[0]).min(q[0]), a[0].max(p[0]).max(q[0]));
            let (y0, y1) = (a[1].min(p[1]).min(q[1]), a[1].max(p[1]).max(q[1]));
            let cell = |x: f64, k: usize, n: usize| {
                ((x - f64::from(lo[k])) / size[k] - 0.5)
                    .ceil()
                    .clamp(0.0, n as f64) as usize
            };
            for j in cell(y0, 1, ny)..cell(y1, 1, ny).max(cell(y0, 1, ny)).min(ny) {
                for i in cell(x0, 0, nx)..cell(x1, 0, nx).max(cell(x0, 0, nx)).min(nx) {
                    let (x, y) = (
                        f64::from(lo[0]) + (i as f64 + 0.5) * size[0],
                        f64::from(lo[1]) + (j as f64 + 0.5) * size[1],
                    );
                    let l1 = ((x - a[0]) * (q[1] - a[1]) - (y - a[1]) * (q[0] - a[0])) / det;
                    let l2 = ((p[0] - a[0]) * (y - a[1]) - (p[1] - a[1]) * (x - a[0])) / det;
                    if l1 >= -1e-9 && l2 >= -1e-9 && l1 + l2 <= 1.0 + 1e-9 {
                        ground[i + nx * j] = a[2] + l1 * (p[2] - a[2]) + l2 * (q[2] - a[2]);
                    }
                }
            }
        }
        let top = f64::from(hi[2]);
        let mut air = vec![0.0; nx * ny * nz];
        let mut above = vec![0.0; nx * ny * nz];
        let volume = size[0] * size[1] * size[2];
        for j in 0..ny {
            for i in 0..nx {
                let g = ground[i + nx * j];
                let g = if g.is_finite() { g } else { f64::from(lo[2]) };
                let source = if source_height > 0.0 {
                    (g + source_height).min(top)
                } else {
                    top
                };
                for k in 0..nz {
                    let z0 = f64::from(lo[2]) + k as f64 * size[2];
                    let z1 = z0 + size[2];
                    let overlap = |a: f64, b: f64| (z1.min(b) - z0.max(a)).max(0.0) / size[2];
                    let c = i + nx * (j + ny * k);
                    air[c] = volume * overlap(g, top);
                    above[c] = volume * overlap(source, top);
                }
            }
        }
        Self {
            dims: [nx, ny, nz],
            lo,
            hi,
            air,
            above,
            per_parcel: if particles > 0 {
                source_volume / particles as f64
            } else {
                0.0
            },
        }
    }

    /// Cells in all.
    pub fn len(&self) -> usize {
        self.air.len()
    }

    /// The relative density from the parcels counted per cell (see the module doc).
    pub fn relative(&self, counts: &[u32]) -> RelativeDensity {
        let [nx, ny, nz] = self.dims;
        let flakes: Vec<f64> = counts
            .iter()
            .zip(&self.above)
            .map(|(&c, &a)| f64::from(c) * self.per_parcel + a)
            .collect();
        let (f, a) = (box3(&flakes, self.dims), box3(&self.air, self.dims));
        let values = f
            .iter()
            .zip(&a)
            .map(|(&f, &a)| if a > 0.0 { (f / a) as f32 } else { 1.0 })
            .collect();
        RelativeDensity {
            dims: [nx as u32, ny as u32, nz as u32],
            values,
            lo: self.lo,
            hi: self.hi,
        }
    }
}

/// Sums over the 3 × 3 × 3 box of cells around each cell (cut at the grid's faces), as three
/// passes of three.
fn box3(values: &[f64], dims: [usize; 3]) -> Vec<f64> {
    let [nx, ny, nz] = dims;
    let mut a = values.to_vec();
    for (axis, n, stride) in [(0, nx, 1), (1, ny, nx), (2, nz, nx * ny)] {
        let _ = axis;
        let mut b = vec![0.0; a.len()];
        for (c, out) in b.iter_mut().enumerate() {
            let i = (c / stride) % n;
            let mut s = a[c];
            if i > 0 {
                s += a[c - stride];
            }
            if i + 1 < n {
                s += a[c + stride];
            }
            *out = s;
        }
        a = b;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_sums_its_neighbours_and_stops_at_the_faces() {
        let dims = [4, 3, 2];
        let ones = vec![1.0; 24];
        let s = box3(&ones, dims);
        // A corner cell sees 2 × 2 × 2, an inner-x edge cell 3 × 2 × 2.
        assert_eq!(s[0], 8.0);
        assert_eq!(s[1], 12.0);
        assert_eq!(s[1 + 4], 18.0);
        let mut one = vec![0.0; 24];
        one[1 + 4] = 1.0;
        let s = box3(&one, dims);
        assert_eq!(
            s.iter().sum::<f64>(),
            18.0,
            "a single value reaches 18 cells"
        );
    }
}
