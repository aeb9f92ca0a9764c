//! Validation of the device sorts against the CPU, case by case (`snowsim sort check`).

use std::fmt;

use super::bitonic::BitonicSorter;
use super::error::Result;
use super::inputs::{self, RandomKey, Shape, SplitMix64};
use super::keys::{KeyKind, Order, SortKey};
use super::partial::{LocalStep, PartialConfig, PartialSorter};
use super::radix::RadixSorter;
use super::reference::{self, bits};
use super::sortedness::Sortedness;
use crate::cl::{Context, DeviceBuffer};

/// What is sorted along with the keys in a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Random `u32` values ([`BitonicSorter::sort_pairs`]).
    Values,
    /// Original indices ([`BitonicSorter::sort_with_indices`]), then applied to `float4` and
    /// `u32` payload arrays with `permute`.
    Indices,
}

/// One validation case of the full sort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckCase {
    /// Key type.
    pub key: KeyKind,
    /// Input shape.
    pub shape: Shape,
    /// Number of pairs.
    pub len: usize,
    /// Sort order.
    pub order: Order,
    /// What travels with the keys.
    pub payload: Payload,
}

impl fmt::Display for CheckCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let payload = match self.payload {
            Payload::Values => "values",
            Payload::Indices => "indices+permute",
        };
        write!(
            f,
            "{} {} keys, n={}, {}, {payload}",
            self.key, self.shape, self.len, self.order
        )
    }
}

/// Lengths every check covers for a sorter with blocks of `block_len`: 0 to 3, 1000, 2^k ± 1
/// around small, block-sized and multi-block powers of two, and lengths past one block.
pub fn standard_lengths(block_len: usize) -> Vec<usize> {
    let mut lengths = vec![
        0,
        1,
        2,
        3,
        1000,
        31,
        33,
        1023,
        1025,
        block_len - 1,
        block_len,
        block_len + 1,
        3 * block_len + 5,
        (1 << 16) - 1,
        (1 << 16) + 1,
    ];
    lengths.sort_unstable();
    lengths.dedup();
    lengths
}

/// The cases of `snowsim sort check`: every shape, length, key type and order with random
/// values, and every length, key type and order with indices and permuted payloads.
pub fn standard_cases(block_len: usize) -> Vec<CheckCase> {
    let mut cases = Vec::new();
    for len in standard_lengths(block_len) {
        for key in KeyKind::ALL {
            for order in Order::ALL {
                for shape in Shape::ALL {
                    cases.push(CheckCase {
                        key,
                        shape,
                        len,
                        order,
                        payload: Payload::Values,
                    });
                }
                cases.push(CheckCase {
                    key,
                    shape: Shape::FewUnique,
                    len,
                    order,
                    payload: Payload::Indices,
                });
            }
        }
    }
    cases
}

/// Runs `case` with inputs drawn from `seed`; `Ok(Some(message))` describes a mismatch.
pub fn run_case(sorter: &mut BitonicSorter, case: &CheckCase, seed: u64) -> Result<Option<String>> {
    run_with(sorter, case, seed)
}

/// Runs `case` on the radix sort, against the CPU's stable sort (equal keys in their order on
/// entry); `Ok(Some(message))` describes a mismatch.
pub fn run_radix_case(
    sorter: &mut RadixSorter,
    case: &CheckCase,
    seed: u64,
) -> Result<Option<String>> {
    run_with(sorter, case, seed)
}

/// What a check needs of a full sort: its two ways of sorting, the CPU's answer for pairs
/// with random values, and anything more to check of the indices it gives.
trait CheckedSort {
    fn context(&self) -> &Context;
    fn pairs<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<()>;
    fn indices<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        indices: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<()>;
    /// The CPU's answer for `keys` with random `values`.
    fn reference<K: SortKey>(keys: &[K], values: &[u32], order: Order) -> (Vec<K>, Vec<u32>);
    /// A mismatch in what else the sort does with `indices` (a permutation of 0..n).
    fn check_indices(&mut self, indices: &[u32]) -> Result<Option<String>>;
}

impl CheckedSort for BitonicSorter {
    fn context(&self) -> &Context {
        BitonicSorter::context(self)
    }
    fn pairs<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<()> {
        self.sort_pairs(keys, values, order).map(drop)
    }
    fn indices<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        indices: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<()> {
        self.sort_with_indices(keys, indices, order).map(drop)
    }
    /// Equal keys ordered by value.
    fn reference<K: SortKey>(keys: &[K], values: &[u32], order: Order) -> (Vec<K>, Vec<u32>) {
        reference::sort_pairs(keys, values, order)
    }
    /// The indices applied to payload arrays by `permute`.
    fn check_indices(&mut self, indices: &[u32]) -> Result<Option<String>> {
        check_permutation(self, indices)
    }
}

impl CheckedSort for RadixSorter {
    fn context(&self) -> &Context {
        RadixSorter::context(self)
    }
    fn pairs<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        values: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<()> {
        self.sort_pairs(keys, values, order).map(drop)
    }
    fn indices<K: SortKey>(
        &mut self,
        keys: &mut DeviceBuffer<K>,
        indices: &mut DeviceBuffer<u32>,
        order: Order,
    ) -> Result<()> {
        self.sort_with_indices(keys, indices, order).map(drop)
    }
    /// Equal keys in their order on entry (stable).
    fn reference<K: SortKey>(keys: &[K], values: &[u32], order: Order) -> (Vec<K>, Vec<u32>) {
        reference::stable_sort_pairs(keys, values, order)
    }
    /// Nothing more: the radix sorter has no permutation of its own.
    fn check_indices(&mut self, _indices: &[u32]) -> Result<Option<String>> {
        Ok(None)
    }
}

fn run_with<S: CheckedSort>(sorter: &mut S, case: &CheckCase, seed: u64) -> Result<Option<String>> {
    match case.key {
        KeyKind::U32 => run_typed::<S, u32>(sorter, case, seed),
        KeyKind::F32 => run_typed::<S, f32>(sorter, case, seed),
    }
}

fn run_typed<S: CheckedSort, K: RandomKey>(
    sorter: &mut S,
    case: &CheckCase,
    seed: u64,
) -> Result<Option<String>> {
    let ctx = sorter.context().clone();
    let keys: Vec<K> = inputs::keys(case.shape, case.len, seed);
    let mut keys_buf = DeviceBuffer::from_slice(&ctx, &keys)?;
    match case.payload {
        Payload::Values => {
            let values = inputs::values(case.len, seed);
            let mut values_buf = DeviceBuffer::from_slice(&ctx, &values)?;
            sorter.pairs(&mut keys_buf, &mut values_buf, case.order)?;
            let (want_keys, want_values) = S::reference(&keys, &values, case.order);
            Ok(first_difference(
                bits(&want_keys),
                bits(&keys_buf.read()?),
                &want_values,
                &values_buf.read()?,
            ))
        }
        Payload::Indices => {
            let mut indices_buf = DeviceBuffer::<u32>::uninit(&ctx, case.len)?;
            sorter.indices(&mut keys_buf, &mut indices_buf, case.order)?;
            let want_indices = reference::sorted_indices(&keys, case.order);
            let want_keys: Vec<K> = want_indices.iter().map(|&i| keys[i as usize]).collect();
            let got_indices = indices_buf.read()?;
            if let Some(m) = first_difference(
                bits(&want_keys),
                bits(&keys_buf.read()?),
                &want_indices,
                &got_indices,
            ) {
                return Ok(Some(m));
            }
            sorter.check_indices(&got_indices)
        }
    }
}

/// Applies `indices` (a permutation of 0..n) to a `float4`, a `u32` and a `u64` payload and
/// checks that row i of each is the original row `indices[i]`.
fn check_permutation(sorter: &mut BitonicSorter, indices: &[u32]) -> Result<Option<String>> {
    let ctx = sorter.context().clone();
    let n = indices.len();
    let rows: Vec<[f32; 4]> = (0..n)
        .map(|i| {
            let x = i as f32;
            [x, -x, 0.5 * x, 1.0]
        })
        .collect();
    let words: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    // Both halves of each long differ from row to row, so a kernel moving 32 bits would fail.
    let longs: Vec<u64> = (0..n as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i << 40))
        .collect();
    let index_buf = DeviceBuffer::from_slice(&ctx, indices)?;
    let rows_buf = DeviceBuffer::from_slice(&ctx, &rows)?;
    let words_buf = DeviceBuffer::from_slice(&ctx, &words)?;
    let longs_buf = DeviceBuffer::from_slice(&ctx, &longs)?;
    let mut rows_out = DeviceBuffer::<[f32; 4]>::uninit(&ctx, n)?;
    let mut words_out = DeviceBuffer::<u32>::uninit(&ctx, n)?;
    let mut longs_out = DeviceBuffer::<u64>::uninit(&ctx, n)?;
    sorter.permute(&rows_buf, &index_buf, &mut rows_out)?;
    sorter.permute(&words_buf, &index_buf, &mut words_out)?;
    sorter.permute(&longs_buf, &index_buf, &mut longs_out)?;
    let (rows_out, words_out) = (rows_out.read()?, words_out.read()?);
    let longs_out = longs_out.read()?;
    for (i, &j) in indices.iter().enumerate() {
        let j = j as usize;
        if rows_out[i] != rows[j] {
            return Ok(Some(format!(
                "permute float4: row {i} is {:?}, expected original row {j} {:?}",
                rows_out[i], rows[j]
            )));
        }
        if words_out[i] != words[j] {
            return Ok(Some(format!(
                "permute u32: row {i} is {}, expected original row {j} {}",
                words_out[i], words[j]
            )));
        }
        if longs_out[i] != longs[j] {
            return Ok(Some(format!(
                "permute u64: row {i} is {:#x}, expected original row {j} {:#x}",
                longs_out[i], longs[j]
            )));
        }
    }
    Ok(None)
}

/// The first position where the device's (key bits, value) differ from the CPU's.
fn first_difference(
    want_keys: &[u32],
    got_keys: &[u32],
    want_values: &[u32],
    got_values: &[u32],
) -> Option<String> {
    if got_keys.len() != want_keys.len() || got_values.len() != want_values.len() {
        return Some(format!(
            "lengths changed: {} keys and {} values came back for {}",
            got_keys.len(),
            got_values.len(),
            want_keys.len()
        ));
    }
    let wrong = (0..want_keys.len())
        .find(|&i| want_keys[i] != got_keys[i] || want_values[i] != got_values[i])?;
    let count = (0..want_keys.len())
        .filter(|&i| want_keys[i] != got_keys[i] || want_values[i] != got_values[i])
        .count();
    Some(format!(
        "{count} positions differ from slice::sort_by; first at {wrong}: expected key bits \
         {:#010x} value {}, got key bits {:#010x} value {}",
        want_keys[wrong], want_values[wrong], got_keys[wrong], got_values[wrong]
    ))
}

/// One validation case of the partial sort.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PartialCase {
    /// Number of pairs.
    pub len: usize,
    /// Redistribution period (0: never).
    pub redistribute_every: u32,
    /// What ordinary frames do.
    pub local_step: LocalStep,
    /// Per-frame key drift in sorted positions (0: a static array).
    pub drift: f64,
    /// Fraction of keys replaced by fresh random keys each frame (respawned particles).
    pub respawn: f64,
    /// Frames to run; for a static array, at least the sorter's `frames_to_sort`.
    pub frames: u64,
}

impl fmt::Display for PartialCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "partial sort ({:?} frames), n={}, redistribute every {}, drift {}, respawn {}, {} frames",
            self.local_step,
            self.len,
            self.redistribute_every,
            self.drift,
            self.respawn,
            self.frames
        )
    }
}

/// The partial-sort cases of `snowsim sort check` for blocks of `block_len`, with merge frames
/// and with sort frames: a static array of three blocks and a bit, run for exactly the frames
/// that must sort it, without and with redistribution; and 2^16 + 1 keys drifting by about two
/// positions per frame, with one in a thousand respawned each frame, for 30 frames.
pub fn standard_partial_cases(block_len: usize) -> Vec<PartialCase> {
    let len = 3 * block_len + 5;
    let frames = len.div_ceil(block_len / 2) as u64;
    let mut cases = Vec::new();
    for local_step in [LocalStep::Merge, LocalStep::Sort] {
        for redistribute_every in [0, 2] {
            cases.push(PartialCase {
                len,
                redistribute_every,
                local_step,
                drift: 0.0,
                respawn: 0.0,
                frames,
            });
        }
        cases.push(PartialCase {
            len: (1 << 16) + 1,
            redistribute_every: 5,
            local_step,
            drift: 2.0,
            respawn: 0.001,
            frames: 30,
        });
    }
    cases
}

/// Runs the partial sort on random `u32` keys with their indices as values for `case.frames`
/// frames, drifting and respawning keys between frames as [`drift_keys`] does. Checks that the (key,
/// value) multiset never changes and, for a static array, that it ends sorted.
pub fn run_partial_case(
    context: &Context,
    config: &PartialConfig,
    case: &PartialCase,
    seed: u64,
) -> Result<Option<String>> {
    let mut sorter = PartialSorter::new(
        context,
        &PartialConfig {
            redistribute_every: case.redistribute_every,
            local_step: case.local_step,
            ..config.clone()
        },
    )?;
    let mut rng = SplitMix64::new(seed);
    let mut keys: Vec<u32> = inputs::keys(Shape::Random, case.len, seed);
    let values: Vec<u32> = (0..case.len as u32).collect();
    let mut keys_buf = DeviceBuffer::from_slice(context, &keys)?;
    let mut values_buf = DeviceBuffer::from_slice(context, &values)?;
    // The multiset of pairs, tracked through the drift: key of each original index.
    let mut key_of: Vec<u32> = keys.clone();
    let moving = case.drift > 0.0 || case.respawn > 0.0;
    let mut order = values.clone();
    for frame in 0..case.frames {
        if moving {
            drift_keys(&mut keys, case.drift, case.respawn, &mut rng);
            for (k, &v) in keys.iter().zip(&order) {
                key_of[v as usize] = *k;
            }
            keys_buf.write(&keys)?;
        }
        sorter.step_pairs(&mut keys_buf, &mut values_buf, Order::Ascending)?;
        keys = keys_buf.read()?;
        order = values_buf.read()?;
        let mut seen = vec![false; case.len];
        for (i, (&k, &v)) in keys.iter().zip(&order).enumerate() {
            let v = v as usize;
            if v >= case.len || seen[v] {
                return Ok(Some(format!(
                    "frame {frame}: value {v} at position {i} is out of range or duplicated"
                )));
            }
            seen[v] = true;
            if key_of[v] != k {
                return Ok(Some(format!(
                    "frame {frame}: position {i} pairs value {v} with key {k}, expected {}",
                    key_of[v]
                )));
            }
        }
    }
    if !moving && case.frames >= sorter.frames_to_sort(case.len) {
        let s = Sortedness::of(&keys, Order::Ascending);
        if !s.is_sorted() {
            return Ok(Some(format!(
                "not sorted after {} frames ({} expected to suffice): {} adjacent inversions",
                case.frames,
                sorter.frames_to_sort(case.len),
                s.adjacent_inversions
            )));
        }
    }
    Ok(None)
}

/// Moves each key by a random amount of up to `drift` mean key spacings (so about `drift`
/// sorted positions) up or down, saturating at the ends of the `u32` range; a fraction
/// `respawn` of the keys jumps to fresh random values instead (respawned particles).
pub fn drift_keys(keys: &mut [u32], drift: f64, respawn: f64, rng: &mut SplitMix64) {
    if keys.is_empty() {
        return;
    }
    let spacing = (u32::MAX as f64 / keys.len() as f64).max(1.0);
    let amplitude = (drift.max(0.0) * spacing).min(u32::MAX as f64) as u64;
    let respawn = (respawn.clamp(0.0, 1.0) * 2f64.powi(32)) as u64;
    for key in keys.iter_mut() {
        if u64::from(rng.next_u32()) < respawn {
            *key = rng.next_u32();
            continue;
        }
        let step = (rng.next_u64() % (2 * amplitude + 1)) as i64 - amplitude as i64;
        *key = (i64::from(*key) + step).clamp(0, i64::from(u32::MAX)) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_cover_the_edges() {
        let l = standard_lengths(4096);
        for n in [0, 1, 2, 3, 1000, 4095, 4096, 4097, 12293, 65535, 65537] {
            assert!(l.contains(&n), "{n}");
        }
        assert!(l.windows(2).all(|w| w[0] < w[1]));
        let cases = standard_cases(4096);
        assert_eq!(cases.len(), l.len() * 2 * 2 * 6);
    }

    #[test]
    fn drift_stays_in_range_and_moves_keys_a_little() {
        let mut rng = SplitMix64::new(3);
        let mut keys: Vec<u32> = (0..1000u32).map(|i| i * 4_000_000).collect();
        let before = keys.clone();
        drift_keys(&mut keys, 2.0, 0.001, &mut rng);
        let moved_far = keys
            .iter()
            .zip(&before)
            .filter(|(a, b)| a.abs_diff(**b) > 9_000_000)
            .count();
        assert!(moved_far <= 10, "{moved_far}");
        assert_ne!(keys, before);
    }
}
