//! Procedural heightmaps: the valley that `scenes/valley.png` is made from, and the ridge of
//! `scenes/ridge.png`.
//!
//! Gradient noise (Perlin's, with hashed gradients), summed over octaves as fractional
//! Brownian motion, and ridged multifractal noise (Musgrave) for sharp mountain crests. All of
//! it is integer hashing and `f64` arithmetic: the same seed gives the same map on every
//! machine.

use std::f64::consts::TAU;

use rayon::prelude::*;

use super::Heightmap;

/// A mountain valley seen from above, `resolution × resolution` pixels, normalised to use
/// the whole `[0, 1]` range: a U-shaped glacial valley winding from north to south, its floor
/// falling towards the south with a river channel cut into it, between ridged mountain ranges
/// that rise away from the valley, with finer fractal relief on top.
pub fn valley(resolution: usize, seed: u32) -> Heightmap {
    let n = resolution.max(2);
    let raw: Vec<f64> = (0..n * n)
        .into_par_iter()
        .map(|p| {
            let (col, row) = (p % n, p / n);
            let u = col as f64 / (n - 1) as f64;
            let v = 1.0 - row as f64 / (n - 1) as f64;
            valley_height(u, v, seed)
        })
        .collect();
    let (lo, hi) = raw
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &h| {
            (lo.min(h), hi.max(h))
        });
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    Heightmap::from_values(n, n, raw.iter().map(|h| (h - lo) / span).collect())
}

/// A straight ridge running east–west across the middle of the map, `resolution × resolution`
/// pixels: a Gaussian profile across it, 1 on the crest, falling to half at `half_width` (a
/// fraction of the map's north–south extent) on either side, `exp(−ln 2 · (d / half_width)²)`
/// with `d` the distance from the crest line. A wind from the north crosses it at right
/// angles: the shape of Taylor & Lee's guideline and of drifting-snow studies of ridges.
pub fn ridge(resolution: usize, half_width: f64) -> Heightmap {
    let n = resolution.max(2);
    let w = half_width.max(f64::MIN_POSITIVE);
    let values = (0..n * n)
        .map(|p| {
            let row = p / n;
            let v = 1.0 - row as f64 / (n - 1) as f64;
            let d = (v - 0.5) / w;
            (-std::f64::consts::LN_2 * d * d).exp()
        })
        .collect();
    Heightmap::from_values(n, n, values)
}

/// A straight wall running east–west across the middle of the map, `resolution × resolution`
/// pixels: 1 within `thickness / 2` of the centre line (a fraction of the map's north–south
/// extent), 0 beyond a further pixel, linear between, so the mesher's bilinear sampling sees a
/// wall of about `thickness` wherever its grid points fall. A wind from the north crosses it at
/// right angles: a solid snow fence, with the drifts that build upwind and in its lee.
pub fn fence(resolution: usize, thickness: f64) -> Heightmap {
    let n = resolution.max(2);
    let pixel = 1.0 / (n - 1) as f64;
    let half = 0.5 * thickness.max(0.0);
    let values = (0..n * n)
        .map(|p| {
            let v = (p / n) as f64 * pixel;
            let d = (v - 0.5).abs();
            (1.0 - (d - half) / pixel).clamp(0.0, 1.0)
        })
        .collect();
    Heightmap::from_values(n, n, values)
}

/// Unnormalised valley height at `(u, v)` (`v` = 0 south).
fn valley_height(u: f64, v: f64, seed: u32) -> f64 {
    // A winding centre line, and a little domain warp so the walls are not parallel curves.
    let centre = 0.5
        + 0.10 * (TAU * 0.8 * v + 0.6).sin()
        + 0.06 * fbm(0.37, 2.0 * v, 3, seed.wrapping_add(1));
    let (wu, wv) = (
        0.06 * fbm(2.0 * u + 5.0, 2.0 * v, 3, seed.wrapping_add(2)),
        0.06 * fbm(2.0 * u, 2.0 * v + 9.0, 3, seed.wrapping_add(5)),
    );
    let d = (u + wu - centre).abs();
    // Glacial cross-section: a narrow flat floor, steep walls, shoulders towards the crests.
    let wall = smoothstep(0.035, 0.36, d);
    let floor = 0.03 + 0.10 * v;
    // Side valleys: drainage-like grooves where low-frequency ridged noise is low, deepest
    // high on the slopes, fading out on the valley floor.
    let spurs = ridged(
        2.2 * (u + wu) + 3.0,
        4.0 * (v + wv) + 1.0,
        5,
        seed.wrapping_add(3),
    );
    let crests = ridged(
        3.0 * (u + wu) + 11.0,
        3.0 * (v + wv) + 7.0,
        6,
        seed.wrapping_add(6),
    );
    let detail = fbm(16.0 * u, 16.0 * v, 4, seed.wrapping_add(4));
    let river = 0.02 * (-(d / 0.010).powi(2)).exp();
    floor + 0.38 * wall + wall * (0.30 * crests + 0.22 * spurs) + 0.02 * detail * (0.2 + wall)
        - river
}

fn smoothstep(edge0: f64, edge1: f64, x: f64) -> f64 {
    let t = ((x - edge0) / (edge1 - edge0)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// A 32-bit hash of a lattice point.
fn hash(x: i64, y: i64, seed: u32) -> u32 {
    let mut h = (x as u32).wrapping_mul(0x8da6_b343)
        ^ (y as u32).wrapping_mul(0xd816_3841)
        ^ seed.wrapping_mul(0xcb1a_b31f);
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^ (h >> 16)
}

/// Gradient noise in about `[-1, 1]`, 0 on lattice points.
fn noise(x: f64, y: f64, seed: u32) -> f64 {
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = (x - x0, y - y0);
    let (ix, iy) = (x0 as i64, y0 as i64);
    let grad = |i: i64, j: i64, dx: f64, dy: f64| {
        let angle = f64::from(hash(i, j, seed)) / f64::from(u32::MAX) * TAU;
        angle.cos() * dx + angle.sin() * dy
    };
    let fade = |t: f64| t * t * t * (t * (t * 6.0 - 15.0) + 10.0);
    let (a, b) = (fade(fx), fade(fy));
    let lerp = |p: f64, q: f64, t: f64| p + (q - p) * t;
    let bottom = lerp(grad(ix, iy, fx, fy), grad(ix + 1, iy, fx - 1.0, fy), a);
    let top = lerp(
        grad(ix, iy + 1, fx, fy - 1.0),
        grad(ix + 1, iy + 1, fx - 1.0, fy - 1.0),
        a,
    );
    std::f64::consts::SQRT_2 * lerp(bottom, top, b)
}

/// Fractional Brownian motion: `octaves` of noise, each twice the frequency and half the
/// amplitude of the last, normalised to about `[-1, 1]`.
fn fbm(x: f64, y: f64, octaves: u32, seed: u32) -> f64 {
    let (mut sum, mut amplitude, mut frequency, mut total) = (0.0, 1.0, 1.0, 0.0);
    for o in 0..octaves {
        sum += amplitude * noise(x * frequency, y * frequency, seed.wrapping_add(o * 1013));
        total += amplitude;
        amplitude *= 0.5;
        frequency *= 2.0;
    }
    sum / total
}

/// Ridged multifractal noise in about `[0, 1]`: sharp crests where the noise crosses 0, each
/// octave weighted by the one before, so detail gathers on the ridges.
fn ridged(x: f64, y: f64, octaves: u32, seed: u32) -> f64 {
    let (mut sum, mut amplitude, mut frequency, mut total, mut weight) = (0.0, 1.0, 1.0, 0.0, 1.0);
    for o in 0..octaves {
        let n = noise(x * frequency, y * frequency, seed.wrapping_add(o * 7919));
        let signal = (1.0 - n.abs()).powi(2) * weight;
        weight = (signal * 1.8).clamp(0.0, 1.0);
        sum += amplitude * signal;
        total += amplitude;
        amplitude *= 0.5;
        frequency *= 2.1;
    }
    sum / total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_bounded_deterministic_and_zero_on_the_lattice() {
        for i in 0..200 {
            let (x, y) = (i as f64 * 0.173, i as f64 * 0.311 - 5.0);
            let n = noise(x, y, 9);
            assert!(n.abs() <= 1.5, "{n}");
            assert_eq!(n, noise(x, y, 9));
        }
        assert_eq!(noise(3.0, -2.0, 1), 0.0);
        assert_ne!(noise(0.5, 0.5, 1), noise(0.5, 0.5, 2));
    }

    #[test]
    fn the_valley_is_lower_in_the_middle_than_on_the_sides() {
        let map = valley(65, 7);
        assert_eq!(map.range(), (0.0, 1.0));
        // Along each row, the lowest point is in the middle half (the valley floor).
        let mut centred = 0;
        for row in 0..65 {
            let lowest = (0..65)
                .min_by(|&a, &b| map.pixel(a, row).total_cmp(&map.pixel(b, row)))
                .unwrap();
            if (12..=52).contains(&lowest) {
                centred += 1;
            }
        }
        assert!(centred >= 60, "{centred} of 65 rows");
        // The floor falls towards the south (last rows).
        let floor = |row: usize| (0..65).map(|c| map.pixel(c, row)).fold(1.0, f64::min);
        assert!(floor(2) > floor(62));
    }
}
