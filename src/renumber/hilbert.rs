//! The 3D Hilbert curve: an index along the curve for each point of a box.
//!
//! Points are quantised on a grid of `2^BITS` steps per axis over the bounding cube of the mesh
//! (the same step on every axis, so the curve's cells are cubes and a flat domain is not
//! stretched), and each grid cell gets its position along the Hilbert curve, computed with
//! Skilling's transpose algorithm ("Programming the Hilbert curve", AIP Conf. Proc. 707, 2004).
//! Consecutive positions are neighbouring cells, so points sorted by key are close in space.

use glam::DVec3;

/// Bits per axis: 3 × 21 = 63 bits fit one `u64` key.
pub const BITS: u32 = 21;

/// The position along the Hilbert curve of the grid cell `cell` (each coordinate below
/// `2^bits`, `1 <= bits <= 21`). Keys run over `0..2^(3·bits)` and two consecutive keys are
/// always face-neighbouring cells.
pub fn key(cell: [u32; 3], bits: u32) -> u64 {
    debug_assert!((1..=BITS).contains(&bits));
    let mut x = cell;
    let m = 1u32 << (bits - 1);
    // Inverse undo: axes to the transposed Hilbert index.
    let mut q = m;
    while q > 1 {
        let p = q - 1;
        for i in 0..3 {
            if x[i] & q != 0 {
                x[0] ^= p;
            } else {
                let t = (x[0] ^ x[i]) & p;
                x[0] ^= t;
                x[i] ^= t;
            }
        }
        q >>= 1;
    }
    // Gray encode.
    x[1] ^= x[0];
    x[2] ^= x[1];
    let mut t = 0;
    let mut q = m;
    while q > 1 {
        if x[2] & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for v in &mut x {
        *v ^= t;
    }
    // Interleave the transposed bits, most significant first.
    let mut key = 0u64;
    for b in (0..bits).rev() {
        for v in x {
            key = (key << 1) | u64::from((v >> b) & 1);
        }
    }
    key
}

/// Maps coordinates to Hilbert keys over a fixed bounding cube.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HilbertBox {
    min: DVec3,
    /// Grid steps per unit length.
    scale: f64,
}

impl HilbertBox {
    /// The cube with corner at the smallest coordinates of `points` and side their largest
    /// extent. `None` when there are no points or a coordinate is not finite.
    pub fn around(points: &[[f64; 3]]) -> Option<Self> {
        let first = DVec3::from(*points.first()?);
        let (mut min, mut max) = (first, first);
        for &p in points {
            let p = DVec3::from(p);
            if !p.is_finite() {
                return None;
            }
            min = min.min(p);
            max = max.max(p);
        }
        let extent = (max - min).max_element();
        let steps = f64::from((1u32 << BITS) - 1);
        let scale = if extent > 0.0 { steps / extent } else { 0.0 };
        Some(Self { min, scale })
    }

    /// The key of `p` (points outside the cube are clamped onto it).
    pub fn key(&self, p: [f64; 3]) -> u64 {
        let top = DVec3::splat(f64::from((1u32 << BITS) - 1));
        let cell = ((DVec3::from(p) - self.min) * self.scale).clamp(DVec3::ZERO, top);
        key(cell.as_uvec3().to_array(), BITS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse of `key`, by brute force over a small grid.
    fn cells_by_key(bits: u32) -> Vec<[u32; 3]> {
        let n = 1u32 << bits;
        let mut cells = vec![[u32::MAX; 3]; (n * n * n) as usize];
        for x in 0..n {
            for y in 0..n {
                for z in 0..n {
                    let k = key([x, y, z], bits) as usize;
                    assert_eq!(cells[k], [u32::MAX; 3], "key {k} given twice");
                    cells[k] = [x, y, z];
                }
            }
        }
        cells
    }

    #[test]
    fn keys_are_a_bijection_and_consecutive_keys_are_neighbours() {
        for bits in 1..=4 {
            let cells = cells_by_key(bits);
            for w in cells.windows(2) {
                let distance: u32 = (0..3).map(|d| w[0][d].abs_diff(w[1][d])).sum();
                assert_eq!(distance, 1, "{:?} -> {:?} (bits {bits})", w[0], w[1]);
            }
            assert_eq!(cells[0], [0, 0, 0]);
        }
    }

    #[test]
    fn the_curve_fills_each_octant_before_the_next() {
        // A Hilbert curve visits each of the eight sub-cubes in one run of keys.
        let bits = 3;
        let cells = cells_by_key(bits);
        let octant = |c: [u32; 3]| c.map(|v| v >> (bits - 1));
        for run in cells.chunks(cells.len() / 8) {
            assert!(run.iter().all(|&c| octant(c) == octant(run[0])));
        }
    }

    #[test]
    fn full_width_keys_use_63_bits_and_the_box_clamps() {
        let top = (1u32 << BITS) - 1;
        let k = key([top, 0, 0], BITS);
        assert!(k < 1 << 63);
        let b = HilbertBox::around(&[[0.0, 0.0, 0.0], [2.0, 1.0, 0.5]]).unwrap();
        assert_eq!(b.key([0.0, 0.0, 0.0]), 0);
        assert_eq!(b.key([-5.0, -5.0, -5.0]), 0);
        assert_eq!(b.key([2.0, 0.0, 0.0]), b.key([9.0, -1.0, -1.0]));
        assert!(HilbertBox::around(&[[f64::NAN, 0.0, 0.0]]).is_none());
        assert!(HilbertBox::around(&[]).is_none());
        // A single point: every key is 0.
        let one = HilbertBox::around(&[[1.0, 2.0, 3.0]]).unwrap();
        assert_eq!(one.key([1.0, 2.0, 3.0]), 0);
    }
}
