//! The CPU's answer to compare the device with: `slice::sort_by` in the same total order.

use super::keys::{Order, SortKey, compare};

/// `keys` and `values` sorted as the device sorts them: by key in `order` (`f32` in
/// [`f32::total_cmp`] order), equal keys by value ascending. The result is unique, so the
/// device's output must equal it exactly.
pub fn sort_pairs<K: SortKey>(keys: &[K], values: &[u32], order: Order) -> (Vec<K>, Vec<u32>) {
    let mut pairs: Vec<(K, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_by(|a, b| compare(&a.0, &b.0, order).then(a.1.cmp(&b.1)));
    pairs.into_iter().unzip()
}

/// `keys` and `values` sorted stably by key in `order`: equal keys keep their order on entry,
/// as [`RadixSorter`](super::RadixSorter) leaves them.
pub fn stable_sort_pairs<K: SortKey>(
    keys: &[K],
    values: &[u32],
    order: Order,
) -> (Vec<K>, Vec<u32>) {
    sorted_indices(keys, order)
        .into_iter()
        .map(|i| (keys[i as usize], values[i as usize]))
        .unzip()
}

/// Positions of `keys` in stable sorted order: `result[i]` is where the i-th smallest key (in
/// `order`) was.
pub fn sorted_indices<K: SortKey>(keys: &[K], order: Order) -> Vec<u32> {
    let mut indices: Vec<u32> = (0..keys.len() as u32).collect();
    indices.sort_by(|&a, &b| compare(&keys[a as usize], &keys[b as usize], order));
    indices
}

/// Keys as their bit patterns, so that NaNs compare equal to themselves.
pub fn bits<K: SortKey>(keys: &[K]) -> &[u32] {
    bytemuck::cast_slice(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_are_broken_by_value_and_indices_are_stable() {
        let (k, v) = sort_pairs(&[2u32, 1, 2, 1], &[9, 8, 3, 4], Order::Ascending);
        assert_eq!((k, v), (vec![1, 1, 2, 2], vec![4, 8, 3, 9]));
        let (k, v) = sort_pairs(&[2u32, 1, 2, 1], &[9, 8, 3, 4], Order::Descending);
        assert_eq!((k, v), (vec![2, 2, 1, 1], vec![3, 9, 4, 8]));
        let (k, v) = stable_sort_pairs(&[2u32, 1, 2, 1], &[9, 8, 3, 4], Order::Descending);
        assert_eq!((k, v), (vec![2, 2, 1, 1], vec![9, 3, 8, 4]));
        assert_eq!(
            sorted_indices(&[2.0f32, 1.0, 2.0, -0.0], Order::Ascending),
            [3, 1, 0, 2]
        );
        assert_eq!(
            sorted_indices(&[2.0f32, 1.0, 2.0, -0.0], Order::Descending),
            [0, 2, 1, 3]
        );
    }
}
