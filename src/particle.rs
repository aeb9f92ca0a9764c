//! The one particle the simulation writes and the drawing reads: a position and a radius, laid
//! out as an OpenCL `float4` (and a GL vertex of four floats), so that the same buffer serves
//! the kernels that write it, the interop that moves it, the splat kernel and the sprites.

use bytemuck::{Pod, Zeroable};

/// A drawn particle: where it is (metres, z up) and the radius it is drawn with (metres).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Particle {
    /// Position in metres, z up.
    pub position: [f32; 3],
    /// Drawn radius in metres.
    pub radius: f32,
}

/// Bytes of one [`Particle`]: a `float4`.
pub const PARTICLE_BYTES: usize = std::mem::size_of::<Particle>();

impl Particle {
    /// A particle at `position` drawn with `radius`.
    pub const fn new(position: [f32; 3], radius: f32) -> Self {
        Self { position, radius }
    }
}

impl From<[f32; 4]> for Particle {
    fn from(v: [f32; 4]) -> Self {
        Self::new([v[0], v[1], v[2]], v[3])
    }
}

impl From<Particle> for [f32; 4] {
    fn from(p: Particle) -> Self {
        [p.position[0], p.position[1], p.position[2], p.radius]
    }
}

/// How a parcel near the camera is drawn: not as one disc but as [`flakes`](Self::flakes)
/// flakes, the flakes of its share of the air, spread over a ball around it. A parcel stands
/// for the snow of a cube of air as wide as the parcels' spacing; far away one disc shows that
/// light, but nearer than [`distance`](Self::distance) a disc half a metre wide is a white ball
/// where a snowfall shows separate flakes. Both drawings (the splat kernel, `splat.cl`, and the
/// sprites' geometry shader, `particles.geom`) spread the flakes with the hash of
/// [`flake_offset`](Self::flake_offset); the ball's radius is [`spread`](Self::spread) within
/// half the distance and shrinks linearly to nothing at it, so a parcel crossing it does not
/// jump; each flake is a disc of the parcel's radius over √flakes, so together they have the
/// parcel's area (the same light where they overlap, far away).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParcelFlakes {
    /// Flakes per near parcel (0: every parcel is one disc).
    pub flakes: u32,
    /// Radius of the ball of flakes, metres: half the parcels' mean spacing.
    pub spread: f32,
    /// Parcels nearer to the eye than this, metres, are drawn as flakes.
    pub distance: f32,
}

impl ParcelFlakes {
    /// Every parcel drawn as one disc.
    pub const NONE: Self = Self {
        flakes: 0,
        spread: 0.0,
        distance: 0.0,
    };
    /// The most flakes per parcel (the geometry shader's `max_vertices`).
    pub const MAX_FLAKES: u32 = 64;

    /// The radius of the ball of flakes of a parcel `d` metres from the eye.
    pub fn spread_at(&self, d: f32) -> f32 {
        self.spread * (2.0 * (1.0 - d / self.distance)).clamp(0.0, 1.0)
    }

    /// Whether a parcel `d` metres from the eye is drawn as flakes.
    pub fn applies_at(&self, d: f32) -> bool {
        self.flakes > 0 && d < self.distance
    }

    /// The kernel's `cloud` argument and the shader's `u_cloud`: flakes, spread, distance.
    pub fn as_float4(&self) -> [f32; 4] {
        [self.flakes as f32, self.spread, self.distance, 0.0]
    }

    /// Flake `j` of the parcel whose drawn radius is `radius`: a point of the unit ball,
    /// uniform in volume, from a hash of the radius's bits (they stay with a parcel while the
    /// buffer is sorted under it) and `j`. The kernel and the shader compute the same.
    pub fn flake_offset(radius: f32, j: u32) -> [f32; 3] {
        let seed = radius.to_bits();
        let u = |k: u32| (hash(seed ^ hash(3 * j + k)) as f64 / 4_294_967_296.0) as f32;
        let (z, phi, r) = (2.0 * u(1) - 1.0, std::f32::consts::TAU * u(2), u(3).cbrt());
        let ring = (1.0 - z * z).max(0.0).sqrt();
        [r * ring * phi.cos(), r * ring * phi.sin(), r * z]
    }
}

/// lowbias32, the integer hash that spreads a parcel's flakes.
fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parcels_flakes_fill_the_unit_ball_uniformly() {
        // Uniform in volume: the fraction within radius r is r³; the mean of each coordinate 0.
        let n = 20_000u32;
        let points: Vec<[f32; 3]> = (0..n)
            .map(|j| ParcelFlakes::flake_offset(0.26, j))
            .collect();
        let r = |p: &[f32; 3]| (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        assert!(points.iter().all(|p| r(p) <= 1.0 + 1e-6));
        for half in [0.5f32, 0.8] {
            let inside = points.iter().filter(|p| r(p) < half).count() as f32 / n as f32;
            let expected = half.powi(3);
            assert!(
                (inside - expected).abs() < 0.015,
                "{inside} within {half}, not {expected}"
            );
        }
        for k in 0..3 {
            let mean = points.iter().map(|p| p[k]).sum::<f32>() / n as f32;
            assert!(mean.abs() < 0.02, "coordinate {k} has mean {mean}");
        }
        // Another parcel (radius) spreads its flakes elsewhere.
        assert_ne!(
            ParcelFlakes::flake_offset(0.26, 0),
            ParcelFlakes::flake_offset(0.2601, 0)
        );
    }

    #[test]
    fn the_ball_shrinks_to_the_parcel_at_the_distance() {
        let c = ParcelFlakes {
            flakes: 32,
            spread: 13.0,
            distance: 100.0,
        };
        assert_eq!(c.spread_at(10.0), 13.0);
        assert_eq!(c.spread_at(50.0), 13.0);
        assert!((c.spread_at(75.0) - 6.5).abs() < 1e-5);
        assert_eq!(c.spread_at(100.0), 0.0);
        assert!(c.applies_at(99.0) && !c.applies_at(100.0));
        assert!(!ParcelFlakes::NONE.applies_at(0.0));
    }

    #[test]
    fn a_particle_is_a_float4() {
        // The kernels read it as float4: x, y, z, radius, 16 bytes, 16-byte alignment not needed.
        assert_eq!(PARTICLE_BYTES, 16);
        let p = Particle::new([1.0, 2.0, 3.0], 0.5);
        let raw: [f32; 4] = bytemuck::cast(p);
        assert_eq!(raw, [1.0, 2.0, 3.0, 0.5]);
        assert_eq!(Particle::from(raw), p);
    }
}
