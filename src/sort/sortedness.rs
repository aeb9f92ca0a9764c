//! How sorted an array is: adjacent inversions and displacement from the sorted position.

use serde::Serialize;

use super::keys::{Order, SortKey, compare};

/// Measures of how far an array is from sorted, computed on the host.
///
/// Both are 0 exactly when the array is sorted. The adjacent-inversion fraction says how many
/// neighbours are out of order (what matters for reading neighbouring data); the displacement
/// says how far elements are from where a full sort would put them (what the partial sort
/// still has to move).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Sortedness {
    /// Number of elements.
    pub len: usize,
    /// Positions `i` with `keys[i]` after `keys[i + 1]` in the order.
    pub adjacent_inversions: usize,
    /// `adjacent_inversions / (len − 1)`, 0 for fewer than two elements.
    pub inversion_fraction: f64,
    /// Mean of |position − sorted position| over all elements, in elements. Equal keys take
    /// their sorted positions in their current order, so ties add nothing.
    pub mean_displacement: f64,
    /// Largest |position − sorted position|.
    pub max_displacement: usize,
}

impl Sortedness {
    /// Measures `keys` against `order`.
    pub fn of<K: SortKey>(keys: &[K], order: Order) -> Self {
        let len = keys.len();
        let adjacent_inversions = keys
            .windows(2)
            .filter(|w| compare(&w[0], &w[1], order).is_gt())
            .count();
        let mut rank: Vec<usize> = (0..len).collect();
        rank.sort_by(|&a, &b| compare(&keys[a], &keys[b], order)); // stable: ties keep order
        let (mut total, mut max) = (0usize, 0usize);
        for (sorted_pos, &pos) in rank.iter().enumerate() {
            let d = sorted_pos.abs_diff(pos);
            total += d;
            max = max.max(d);
        }
        Self {
            len,
            adjacent_inversions,
            inversion_fraction: if len > 1 {
                adjacent_inversions as f64 / (len - 1) as f64
            } else {
                0.0
            },
            mean_displacement: if len > 0 {
                total as f64 / len as f64
            } else {
                0.0
            },
            max_displacement: max,
        }
    }

    /// Whether the array is sorted.
    pub fn is_sorted(&self) -> bool {
        self.adjacent_inversions == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_cases() {
        let s = Sortedness::of::<u32>(&[], Order::Ascending);
        assert_eq!(
            (s.len, s.adjacent_inversions, s.max_displacement),
            (0, 0, 0)
        );
        assert!(s.is_sorted() && s.mean_displacement == 0.0 && s.inversion_fraction == 0.0);

        let s = Sortedness::of(&[1u32, 2, 2, 5], Order::Ascending);
        assert!(s.is_sorted());
        assert_eq!(s.mean_displacement, 0.0);

        // One swap of neighbours: one inversion in three pairs, two elements moved by one.
        let s = Sortedness::of(&[1u32, 3, 2, 4], Order::Ascending);
        assert_eq!(s.adjacent_inversions, 1);
        assert!((s.inversion_fraction - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.mean_displacement, 0.5);
        assert_eq!(s.max_displacement, 1);

        // Reversed: every pair inverted; displacements 3, 1, 1, 3.
        let s = Sortedness::of(&[4u32, 3, 2, 1], Order::Ascending);
        assert_eq!(s.adjacent_inversions, 3);
        assert_eq!(s.inversion_fraction, 1.0);
        assert_eq!(s.mean_displacement, 2.0);
        assert_eq!(s.max_displacement, 3);
        assert!(Sortedness::of(&[4u32, 3, 2, 1], Order::Descending).is_sorted());

        // One element far from home: the minimum at the end moves 4, the others 1 each.
        let s = Sortedness::of(&[2u32, 3, 4, 5, 1], Order::Ascending);
        assert_eq!(s.adjacent_inversions, 1);
        assert_eq!(s.max_displacement, 4);
        assert!((s.mean_displacement - 8.0 / 5.0).abs() < 1e-12);

        // Ties cost nothing; f32 uses the total order (-0.0 before +0.0, NaN last).
        let s = Sortedness::of(&[7u32, 7, 7], Order::Ascending);
        assert!(s.is_sorted() && s.mean_displacement == 0.0);
        assert!(Sortedness::of(&[-1.0f32, -0.0, 0.0, f32::NAN], Order::Ascending).is_sorted());
        assert_eq!(
            Sortedness::of(&[0.0f32, -0.0], Order::Ascending).adjacent_inversions,
            1
        );
    }
}
