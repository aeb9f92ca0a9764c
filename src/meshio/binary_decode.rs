//! Bulk decoding of binary keyword blocks.
//!
//! Each block is decoded with `chunks_exact` over its byte slice, after its size has been checked
//! once against the file; the loops are monomorphised over byte order and word sizes so that the
//! inner loop has no per-field branching or error handling. Values that cannot be stored (a
//! reference beyond 32 bits, an index outside `1..=u32::MAX`) are flagged, not handled, in the
//! loop; callers locate the culprit afterwards, only on failure.

/// Size in bytes of a binary integer or real.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Width {
    /// 4 bytes: int32 or f32.
    Four,
    /// 8 bytes: int64 or f64.
    Eight,
}

impl Width {
    /// The width of `bytes` bytes (4 or anything else for 8).
    pub(crate) fn of(bytes: usize) -> Width {
        if bytes == 4 {
            Width::Four
        } else {
            Width::Eight
        }
    }

    /// Number of bytes.
    pub(crate) fn bytes(self) -> usize {
        match self {
            Width::Four => 4,
            Width::Eight => 8,
        }
    }
}

/// Byte order of a file's words.
trait ByteOrder {
    fn u32(w: [u8; 4]) -> u32;
    fn u64(w: [u8; 8]) -> u64;
}

/// Little-endian words (files written by little-endian machines, and by this crate).
enum Little {}
/// Big-endian words (first word reads 16777216 little-endian).
enum Big {}

impl ByteOrder for Little {
    #[inline(always)]
    fn u32(w: [u8; 4]) -> u32 {
        u32::from_le_bytes(w)
    }
    #[inline(always)]
    fn u64(w: [u8; 8]) -> u64 {
        u64::from_le_bytes(w)
    }
}

impl ByteOrder for Big {
    #[inline(always)]
    fn u32(w: [u8; 4]) -> u32 {
        u32::from_be_bytes(w)
    }
    #[inline(always)]
    fn u64(w: [u8; 8]) -> u64 {
        u64::from_be_bytes(w)
    }
}

/// The `N` bytes at `at`. Callers index within chunks whose length they fixed, so the range is
/// always inside `line`.
#[inline(always)]
fn word<const N: usize>(line: &[u8], at: usize) -> [u8; N] {
    let mut w = [0u8; N];
    w.copy_from_slice(&line[at..at + N]);
    w
}

/// Signed integer of `W` bytes at `at`.
#[inline(always)]
fn int<O: ByteOrder, const W: usize>(line: &[u8], at: usize) -> i64 {
    if W == 4 {
        O::u32(word(line, at)) as i32 as i64
    } else {
        O::u64(word(line, at)) as i64
    }
}

/// Real of `R` bytes at `at`, widened exactly to `f64`.
#[inline(always)]
fn real<O: ByteOrder, const R: usize>(line: &[u8], at: usize) -> f64 {
    if R == 4 {
        f64::from(f32::from_bits(O::u32(word(line, at))))
    } else {
        f64::from_bits(O::u64(word(line, at)))
    }
}

/// 1-based file index to 0-based index. 0, negative and too-large values all become
/// `u32::MAX`, which is never below a vertex count that fits in `u32` indices.
#[inline(always)]
pub(crate) fn to_index(raw: i64) -> u32 {
    (raw as u64).wrapping_sub(1).min(u64::from(u32::MAX)) as u32
}

/// Whether `value` fits in an `i32` reference.
#[inline(always)]
fn fits_i32(value: i64) -> bool {
    value as i32 as i64 == value
}

/// Reads one signed integer at `at` of `bytes` (outside bulk loops: error reports).
/// Returns `None` past the end.
pub(crate) fn int_at(bytes: &[u8], at: usize, width: Width, big: bool) -> Option<i64> {
    let end = at.checked_add(width.bytes())?;
    let line = bytes.get(at..end)?;
    Some(match (width, big) {
        (Width::Four, false) => int::<Little, 4>(line, 0),
        (Width::Four, true) => int::<Big, 4>(line, 0),
        (Width::Eight, false) => int::<Little, 8>(line, 0),
        (Width::Eight, true) => int::<Big, 8>(line, 0),
    })
}

/// Word sizes and byte order of a file's data lines.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// Whether words are big-endian.
    pub big: bool,
    /// Size of reals.
    pub real: Width,
    /// Size of integers.
    pub int: Width,
}

impl Layout {
    /// Bytes of one vertex line: `dim` reals and a reference.
    pub(crate) fn vertex_line(self, dim: usize) -> usize {
        dim * self.real.bytes() + self.int.bytes()
    }

    /// Bytes of one element line: `nodes` indices and a reference.
    pub(crate) fn element_line(self, nodes: usize) -> usize {
        (nodes + 1) * self.int.bytes()
    }
}

/// Decodes whole vertex lines of `data` (its length is a multiple of the line size), appending
/// to `xyz` and `refs`. Returns `false` if some reference did not fit in `i32` (it is then
/// truncated in `refs`; the caller reports it).
pub(crate) fn vertices(
    layout: Layout,
    data: &[u8],
    dim: usize,
    xyz: &mut Vec<[f64; 3]>,
    refs: &mut Vec<i32>,
) -> bool {
    use Width::{Eight, Four};
    match (layout.big, layout.real, layout.int) {
        (false, Four, Four) => vertices_as::<Little, 4, 4>(data, dim, xyz, refs),
        (false, Four, Eight) => vertices_as::<Little, 4, 8>(data, dim, xyz, refs),
        (false, Eight, Four) => vertices_as::<Little, 8, 4>(data, dim, xyz, refs),
        (false, Eight, Eight) => vertices_as::<Little, 8, 8>(data, dim, xyz, refs),
        (true, Four, Four) => vertices_as::<Big, 4, 4>(data, dim, xyz, refs),
        (true, Four, Eight) => vertices_as::<Big, 4, 8>(data, dim, xyz, refs),
        (true, Eight, Four) => vertices_as::<Big, 8, 4>(data, dim, xyz, refs),
        (true, Eight, Eight) => vertices_as::<Big, 8, 8>(data, dim, xyz, refs),
    }
}

fn vertices_as<O: ByteOrder, const R: usize, const I: usize>(
    data: &[u8],
    dim: usize,
    xyz: &mut Vec<[f64; 3]>,
    refs: &mut Vec<i32>,
) -> bool {
    let mut ok = true;
    if dim == 3 {
        for line in data.chunks_exact(3 * R + I) {
            xyz.push([
                real::<O, R>(line, 0),
                real::<O, R>(line, R),
                real::<O, R>(line, 2 * R),
            ]);
            let r = int::<O, I>(line, 3 * R);
            ok &= fits_i32(r);
            refs.push(r as i32);
        }
    } else {
        for line in data.chunks_exact(2 * R + I) {
            xyz.push([real::<O, R>(line, 0), real::<O, R>(line, R), 0.0]);
            let r = int::<O, I>(line, 2 * R);
            ok &= fits_i32(r);
            refs.push(r as i32);
        }
    }
    ok
}

/// Decodes whole element lines of `nodes` indices and a reference each, appending 0-based
/// indices (see [`to_index`]) to `out_nodes` and references to `refs`. Returns `false` if some
/// reference did not fit in `i32`.
pub(crate) fn elements(
    layout: Layout,
    data: &[u8],
    nodes: usize,
    out_nodes: &mut Vec<u32>,
    refs: &mut Vec<i32>,
) -> bool {
    match (layout.big, layout.int) {
        (false, Width::Four) => elements_as::<Little, 4>(data, nodes, out_nodes, refs),
        (false, Width::Eight) => elements_as::<Little, 8>(data, nodes, out_nodes, refs),
        (true, Width::Four) => elements_as::<Big, 4>(data, nodes, out_nodes, refs),
        (true, Width::Eight) => elements_as::<Big, 8>(data, nodes, out_nodes, refs),
    }
}

fn elements_as<O: ByteOrder, const I: usize>(
    data: &[u8],
    nodes: usize,
    out_nodes: &mut Vec<u32>,
    refs: &mut Vec<i32>,
) -> bool {
    let mut ok = true;
    for line in data.chunks_exact((nodes + 1) * I) {
        out_nodes.extend((0..nodes).map(|k| to_index(int::<O, I>(line, k * I))));
        let r = int::<O, I>(line, nodes * I);
        ok &= fits_i32(r);
        refs.push(r as i32);
    }
    ok
}

/// Decodes every real of `data` (its length is a multiple of the real size), appending them
/// widened exactly to `f64`.
pub(crate) fn reals(layout: Layout, data: &[u8], out: &mut Vec<f64>) {
    match (layout.big, layout.real) {
        (false, Width::Four) => out.extend(data.chunks_exact(4).map(|w| real::<Little, 4>(w, 0))),
        (false, Width::Eight) => out.extend(data.chunks_exact(8).map(|w| real::<Little, 8>(w, 0))),
        (true, Width::Four) => out.extend(data.chunks_exact(4).map(|w| real::<Big, 4>(w, 0))),
        (true, Width::Eight) => out.extend(data.chunks_exact(8).map(|w| real::<Big, 8>(w, 0))),
    }
}

/// Index of the first line of `data` whose integer at `offset` does not fit in `i32`.
pub(crate) fn first_wide_ref(
    data: &[u8],
    line: usize,
    offset: usize,
    layout: Layout,
) -> Option<(usize, i64)> {
    data.chunks_exact(line).enumerate().find_map(|(i, l)| {
        let r = int_at(l, offset, layout.int, layout.big)?;
        (!fits_i32(r)).then_some((i, r))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_conversion_maps_invalid_to_max() {
        assert_eq!(to_index(1), 0);
        assert_eq!(to_index(8), 7);
        assert_eq!(to_index(0), u32::MAX);
        assert_eq!(to_index(-1), u32::MAX);
        assert_eq!(to_index(i64::MIN), u32::MAX);
        assert_eq!(to_index(i64::MAX), u32::MAX);
        assert_eq!(to_index(1 << 32), u32::MAX);
        assert_eq!(to_index((1 << 32) + 1), u32::MAX);
        assert_eq!(to_index(u32::MAX as i64), u32::MAX - 1);
    }

    #[test]
    fn decodes_both_orders_and_widths() {
        let layout = Layout {
            big: true,
            real: Width::Four,
            int: Width::Eight,
        };
        let mut data = Vec::new();
        for v in [1.5f32, -2.0] {
            data.extend_from_slice(&v.to_be_bytes());
        }
        data.extend_from_slice(&(-7i64).to_be_bytes());
        let (mut xyz, mut refs) = (Vec::new(), Vec::new());
        assert!(vertices(layout, &data, 2, &mut xyz, &mut refs));
        assert_eq!(xyz, [[1.5, -2.0, 0.0]]);
        assert_eq!(refs, [-7]);

        let layout = Layout {
            big: false,
            real: Width::Eight,
            int: Width::Four,
        };
        let words: [i32; 6] = [1, 2, 3, 9, 0, 2];
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let (mut nodes, mut refs) = (Vec::new(), Vec::new());
        assert!(elements(layout, &data, 2, &mut nodes, &mut refs));
        assert_eq!(nodes, [0, 1, 8, u32::MAX]);
        assert_eq!(refs, [3, 2]);
    }

    #[test]
    fn wide_refs_are_flagged_and_found() {
        let layout = Layout {
            big: false,
            real: Width::Eight,
            int: Width::Eight,
        };
        let words: [i64; 6] = [1, 2, 5, 1, 2, 1 << 40];
        let data: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let (mut nodes, mut refs) = (Vec::new(), Vec::new());
        assert!(!elements(layout, &data, 2, &mut nodes, &mut refs));
        assert_eq!(first_wide_ref(&data, 24, 16, layout), Some((1, 1 << 40)));
        assert_eq!(int_at(&data, 40, Width::Eight, false), Some(1 << 40));
        assert_eq!(int_at(&data, 44, Width::Eight, false), None);
    }
}
