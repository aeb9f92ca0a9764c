//! Key types, sort order and the total order the device sorts by.

use std::cmp::Ordering;
use std::fmt;

use bytemuck::Pod;
use serde::Serialize;

/// Which way to sort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Smallest key first.
    #[default]
    Ascending,
    /// Largest key first.
    Descending,
}

impl Order {
    /// Both orders, ascending first.
    pub const ALL: [Order; 2] = [Order::Ascending, Order::Descending];
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Ascending => "ascending",
            Self::Descending => "descending",
        })
    }
}

/// The key types the device sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyKind {
    /// Unsigned 32-bit integers, in their natural order.
    U32,
    /// 32-bit floats in IEEE 754 totalOrder (see [`SortKey`] for `f32`).
    F32,
}

impl KeyKind {
    /// Both kinds.
    pub const ALL: [KeyKind; 2] = [KeyKind::U32, KeyKind::F32];
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::U32 => "u32",
            Self::F32 => "f32",
        })
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for f32 {}
}

/// A key the device can sort: `u32` or `f32`.
///
/// `f32` keys are sorted in IEEE 754 totalOrder, the order of [`f32::total_cmp`]:
/// negative NaNs < −∞ < … < −0.0 < +0.0 < … < +∞ < positive NaNs. So −0.0 comes before +0.0,
/// and the quiet NaN that GPUs produce (positive) sorts last; every key comes back with its
/// exact bits. On the device each key is mapped to a `u32` with the same order (sign bit set:
/// all bits flipped; else the sign bit set), so both key types go through the same kernels.
pub trait SortKey: Pod + PartialEq + fmt::Debug + sealed::Sealed {
    /// Which kind this is.
    const KIND: KeyKind;

    /// The order the device sorts ascending keys in.
    fn total_cmp(&self, other: &Self) -> Ordering;

    /// The `u32` whose unsigned order is this key's order (what the kernels compare).
    fn ordered_bits(self) -> u32;
}

impl SortKey for u32 {
    const KIND: KeyKind = KeyKind::U32;

    fn total_cmp(&self, other: &Self) -> Ordering {
        self.cmp(other)
    }

    fn ordered_bits(self) -> u32 {
        self
    }
}

impl SortKey for f32 {
    const KIND: KeyKind = KeyKind::F32;

    fn total_cmp(&self, other: &Self) -> Ordering {
        f32::total_cmp(self, other)
    }

    fn ordered_bits(self) -> u32 {
        let bits = self.to_bits();
        if bits & 0x8000_0000 != 0 {
            !bits
        } else {
            bits | 0x8000_0000
        }
    }
}

/// Compares two keys in `order`.
pub fn compare<K: SortKey>(a: &K, b: &K, order: Order) -> Ordering {
    match order {
        Order::Ascending => a.total_cmp(b),
        Order::Descending => b.total_cmp(a),
    }
}

/// `mode` argument of the kernels: key type, direction, and whether values are positions.
pub(crate) fn mode_bits(kind: KeyKind, order: Order, iota: bool) -> u32 {
    const MODE_F32: u32 = 1;
    const MODE_DESC: u32 = 2;
    const MODE_IOTA: u32 = 4;
    let mut mode = 0;
    if kind == KeyKind::F32 {
        mode |= MODE_F32;
    }
    if order == Order::Descending {
        mode |= MODE_DESC;
    }
    if iota {
        mode |= MODE_IOTA;
    }
    mode
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_ordered_bits_follow_total_order() {
        let values = [
            f32::from_bits(0xFFC0_0000), // negative quiet NaN
            f32::NEG_INFINITY,
            -1.5,
            -f32::MIN_POSITIVE,
            -0.0,
            0.0,
            f32::from_bits(1), // smallest subnormal
            1.0,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
        ];
        for w in values.windows(2) {
            assert!(w[0].ordered_bits() < w[1].ordered_bits(), "{w:?}");
            assert_eq!(w[0].total_cmp(&w[1]), Ordering::Less, "{w:?}");
        }
    }

    #[test]
    fn descending_reverses_the_comparison() {
        assert_eq!(compare(&1u32, &2, Order::Ascending), Ordering::Less);
        assert_eq!(compare(&1u32, &2, Order::Descending), Ordering::Greater);
        assert_eq!(
            compare(&-0.0f32, &0.0, Order::Descending),
            Ordering::Greater
        );
        assert_eq!(mode_bits(KeyKind::F32, Order::Descending, true), 7);
        assert_eq!(mode_bits(KeyKind::U32, Order::Ascending, false), 0);
    }
}
