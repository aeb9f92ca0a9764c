//! Reproducible test inputs: random, sorted, reversed, all-equal and few-unique keys.

use std::fmt;

use serde::Serialize;

use super::keys::{Order, SortKey, compare};

/// SplitMix64: a tiny, fast, seedable generator, good enough for test data.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A value in `0..bound` (`bound` > 0), nearly uniform.
    pub fn below(&mut self, bound: u32) -> u32 {
        ((u64::from(self.next_u32()) * u64::from(bound)) >> 32) as u32
    }
}

/// The shape of an input array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Independent random keys; for `f32`, random bit patterns (NaNs of both signs,
    /// infinities, subnormals) with ±0.0, ±∞ and NaNs sprinkled in.
    Random,
    /// Random keys already in ascending order.
    Sorted,
    /// Random keys in descending order.
    Reversed,
    /// One key repeated.
    AllEqual,
    /// Random keys drawn from four values.
    FewUnique,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 5] = [
        Shape::Random,
        Shape::Sorted,
        Shape::Reversed,
        Shape::AllEqual,
        Shape::FewUnique,
    ];
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Random => "random",
            Self::Sorted => "sorted",
            Self::Reversed => "reversed",
            Self::AllEqual => "all-equal",
            Self::FewUnique => "few-unique",
        })
    }
}

/// Keys a generator can draw.
pub trait RandomKey: SortKey {
    /// A random key (for `f32`, special values are likely).
    fn random(rng: &mut SplitMix64) -> Self;
}

impl RandomKey for u32 {
    fn random(rng: &mut SplitMix64) -> Self {
        rng.next_u32()
    }
}

impl RandomKey for f32 {
    fn random(rng: &mut SplitMix64) -> Self {
        const SPECIALS: [f32; 6] = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        match rng.below(16) {
            0 => SPECIALS[rng.below(SPECIALS.len() as u32) as usize],
            1..=7 => f32::from_bits(rng.next_u32()),
            // Ordinary magnitudes, both signs.
            _ => (rng.next_u32() as f32 / u32::MAX as f32 - 0.5) * 2000.0,
        }
    }
}

/// `len` keys of `shape` from `seed`.
pub fn keys<K: RandomKey>(shape: Shape, len: usize, seed: u64) -> Vec<K> {
    let mut rng = SplitMix64::new(seed);
    match shape {
        Shape::Random => (0..len).map(|_| K::random(&mut rng)).collect(),
        Shape::Sorted | Shape::Reversed => {
            let mut keys: Vec<K> = (0..len).map(|_| K::random(&mut rng)).collect();
            let order = if shape == Shape::Sorted {
                Order::Ascending
            } else {
                Order::Descending
            };
            keys.sort_by(|a, b| compare(a, b, order));
            keys
        }
        Shape::AllEqual => vec![K::random(&mut rng); len],
        Shape::FewUnique => {
            let pool: Vec<K> = (0..4).map(|_| K::random(&mut rng)).collect();
            (0..len).map(|_| pool[rng.below(4) as usize]).collect()
        }
    }
}

/// `len` random 32-bit values from `seed` (payloads).
pub fn values(len: usize, seed: u64) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed ^ 0x05EE_D0F7_A1E5);
    (0..len).map(|_| rng.next_u32()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_what_they_say_and_reproducible() {
        let a: Vec<u32> = keys(Shape::Random, 100, 7);
        assert_eq!(a, keys::<u32>(Shape::Random, 100, 7));
        assert_ne!(a, keys::<u32>(Shape::Random, 100, 8));
        let s: Vec<u32> = keys(Shape::Sorted, 100, 7);
        assert!(s.windows(2).all(|w| w[0] <= w[1]));
        let r: Vec<f32> = keys(Shape::Reversed, 100, 7);
        assert!(r.windows(2).all(|w| w[0].total_cmp(&w[1]).is_ge()));
        let e: Vec<f32> = keys(Shape::AllEqual, 10, 7);
        assert!(e.iter().all(|x| x.to_bits() == e[0].to_bits()));
        let mut f: Vec<u32> = keys(Shape::FewUnique, 1000, 7);
        f.sort_unstable();
        f.dedup();
        assert!(f.len() <= 4);
        let specials: Vec<f32> = keys(Shape::Random, 4000, 1);
        assert!(specials.iter().any(|x| x.is_nan() && x.is_sign_negative()));
        assert!(specials.iter().any(|x| x.is_nan() && x.is_sign_positive()));
        assert!(specials.iter().any(|x| x.to_bits() == (-0.0f32).to_bits()));
    }
}
