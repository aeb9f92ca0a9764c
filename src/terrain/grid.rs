//! The air box of a scene and the ground as a regular grid of heights: the forms the
//! simulation's kernels sample, shared by the simulation and the renderer.

use glam::{Vec2, Vec3};

use super::TerrainError;

type Result<T> = std::result::Result<T, TerrainError>;

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

    /// Samples a triangle surface (`positions`, and `triangles` indexing them) on an
    /// `nx × ny` grid over `[lo, hi]`: at each grid point the highest of the triangles whose
    /// horizontal projection covers it, `fill` where none does (a hole, or outside the
    /// surface). This turns any ground (e.g. a mesh domain's ground triangles) into the
    /// regular grid that kernels sample.
    pub fn from_triangles(
        positions: &[Vec3],
        triangles: &[[u32; 3]],
        nx: usize,
        ny: usize,
        lo: Vec2,
        hi: Vec2,
        fill: f32,
    ) -> Result<Self> {
        check_grid(nx, ny, lo, hi)?;
        if let Some(bad) = triangles
            .iter()
            .flatten()
            .find(|&&v| v as usize >= positions.len())
        {
            return Err(TerrainError::InvalidGrid(format!(
                "a ground triangle names vertex {bad}, but there are {} vertices",
                positions.len()
            )));
        }
        let mut heights = vec![f32::NEG_INFINITY; nx * ny];
        let cell = (hi - lo) / Vec2::new((nx - 1) as f32, (ny - 1) as f32);
        for tri in triangles {
            let [a, b, c] = tri.map(|v| positions[v as usize]);
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

impl Heightfield {
    /// Checks that the grid has at least 2×2 points over a finite, non-empty rectangle and
    /// holds one finite height per point.
    pub fn validate(&self) -> Result<()> {
        check_grid(self.nx, self.ny, self.lo, self.hi)?;
        if self.heights.len() != self.nx * self.ny {
            return Err(TerrainError::InvalidGrid(format!(
                "a {}×{} heightfield needs {} heights, not {}",
                self.nx,
                self.ny,
                self.nx * self.ny,
                self.heights.len()
            )));
        }
        if let Some(i) = self.heights.iter().position(|h| !h.is_finite()) {
            return Err(TerrainError::InvalidGrid(format!(
                "height {i} of the heightfield is {}",
                self.heights[i]
            )));
        }
        Ok(())
    }
}

fn check_grid(nx: usize, ny: usize, lo: Vec2, hi: Vec2) -> Result<()> {
    if nx < 2 || ny < 2 {
        return Err(TerrainError::InvalidGrid(format!(
            "a heightfield needs at least 2×2 points, not {nx}×{ny}"
        )));
    }
    if nx.checked_mul(ny).is_none_or(|n| n > u32::MAX as usize) {
        return Err(TerrainError::InvalidGrid(format!(
            "a heightfield of {nx}×{ny} points is too large"
        )));
    }
    if !(lo.is_finite() && hi.is_finite() && hi.x > lo.x && hi.y > lo.y) {
        return Err(TerrainError::InvalidGrid(format!(
            "heightfield extent {lo} .. {hi} is empty or not finite"
        )));
    }
    Ok(())
}

fn grid_point(ix: usize, iy: usize, nx: usize, ny: usize, lo: Vec2, hi: Vec2) -> Vec2 {
    let t = Vec2::new(ix as f32 / (nx - 1) as f32, iy as f32 / (ny - 1) as f32);
    lo + t * (hi - lo)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn bad_grids_are_refused() {
        assert!(Heightfield::from_fn(1, 4, Vec2::ZERO, Vec2::ONE, |_, _| 0.0).is_err());
        assert!(Heightfield::from_fn(2, 2, Vec2::ONE, Vec2::ONE, |_, _| 0.0).is_err());
        let mut field = Heightfield::from_fn(2, 2, Vec2::ZERO, Vec2::ONE, |_, _| 0.0).unwrap();
        assert!(field.validate().is_ok());
        field.heights[3] = f32::NAN;
        assert!(
            field
                .validate()
                .unwrap_err()
                .to_string()
                .contains("height 3")
        );
        field.heights.pop();
        assert!(field.validate().is_err());
        let tri = [[0, 1, 5]];
        assert!(
            Heightfield::from_triangles(&[Vec3::ZERO; 3], &tri, 2, 2, Vec2::ZERO, Vec2::ONE, 0.0)
                .is_err()
        );
    }
}
