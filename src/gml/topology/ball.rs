//! Vertex balls on the cores of the current rayon pool, as compressed rows or straight into
//! the degree-class tables the kernels read.
//!
//! A counting sort: the elements are cut into chunks, each counts its vertices, and each chunk
//! then writes its entries after those of the chunks before it, so every row lists its
//! elements in increasing order (and an element's nodes in local order) whatever the number of
//! threads.

use rayon::prelude::*;

use super::{DegreeClass, Incidence, degree_class};

/// Rows of vertices handled together when combining histograms or filling tables.
pub(super) const BLOCK: usize = 1 << 12;

/// The ball of each vertex, from element lines of `stride` ints whose first `nodes` are the
/// element's vertices (gml's padded `int2`/`int4`/`int8` lines read in place).
///
/// # Panics
/// If a node is negative or not below `vertices` (gml checks nodes when they are set), or a
/// vertex has a degree of 2^32 or more.
pub fn vertex_ball_of_lines(
    vertices: usize,
    lines: &[i32],
    stride: usize,
    nodes: usize,
) -> Incidence {
    let mut counted = Counted::new(vertices, lines, stride, nodes);
    let mut offsets = Vec::with_capacity(vertices + 1);
    let mut total = 0usize;
    offsets.push(0);
    for &d in &counted.degrees {
        total += d as usize;
        offsets.push(total);
    }
    let mut elements = vec![0i32; total];
    let mut locals = vec![0u8; total];
    let targets = [Target::new(&mut elements, &mut locals)];
    counted.scatter(&targets, |v, k| (0, offsets[v] + k));
    Incidence {
        offsets,
        elements,
        locals,
    }
}

/// A vertex ball as the kernels read it: the degree of every vertex and the degree-class
/// tables, exactly those of `degree_classes(&vertex_ball_of_lines(…), base)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BallTables {
    /// Degree of each vertex.
    pub degrees: Vec<i32>,
    /// Largest degree, 0 when empty.
    pub max_degree: usize,
    /// The tables, narrowest first, empty ones left out.
    pub classes: Vec<DegreeClass>,
}

/// The vertex ball split into degree classes of widths `base`, `2·base`, … (see
/// [`super::degree_classes`]), written straight into the column-major tables without the
/// compressed rows in between.
///
/// # Panics
/// As [`vertex_ball_of_lines`].
pub fn vertex_ball_tables(
    vertices: usize,
    lines: &[i32],
    stride: usize,
    nodes: usize,
    base: usize,
) -> BallTables {
    let mut counted = Counted::new(vertices, lines, stride, nodes);
    let base = base.max(1).next_power_of_two();
    let class: Vec<u8> = counted
        .degrees
        .par_iter()
        .map(|&d| degree_class(d as usize, base))
        .collect();
    let classes = class.par_iter().max().map_or(0, |&c| usize::from(c) + 1);

    // Each vertex's row inside its class: per block, how many of each class; then a prefix
    // over the blocks, and each block numbers its own vertices.
    let per_block: Vec<Vec<u32>> = class
        .par_chunks(BLOCK)
        .map(|block| {
            let mut counts = vec![0u32; classes];
            for &c in block {
                counts[usize::from(c)] += 1;
            }
            counts
        })
        .collect();
    let mut sizes = vec![0usize; classes];
    let starts: Vec<Vec<u32>> = per_block
        .iter()
        .map(|counts| {
            let start = sizes.iter().map(|&s| s as u32).collect();
            for (size, &n) in sizes.iter_mut().zip(counts) {
                *size += n as usize;
            }
            start
        })
        .collect();
    let mut rank = vec![0u32; vertices];
    rank.par_chunks_mut(BLOCK)
        .zip(class.par_chunks(BLOCK))
        .zip(starts.par_iter())
        .for_each(|((rank, class), start)| {
            let mut next = start.clone();
            for (r, &c) in rank.iter_mut().zip(class) {
                *r = next[usize::from(c)];
                next[usize::from(c)] += 1;
            }
        });

    let mut tables: Vec<DegreeClass> = (0..classes)
        .map(|c| DegreeClass {
            width: base << c,
            rows: Vec::with_capacity(sizes[c]),
            ball: vec![0; (base << c) * sizes[c]],
            locals: vec![0; (base << c) * sizes[c]],
        })
        .collect();
    for (c, table) in tables.iter_mut().enumerate() {
        table.rows = class
            .par_iter()
            .enumerate()
            .filter(|&(_, &k)| usize::from(k) == c)
            .map(|(v, _)| v as i32)
            .collect();
    }
    let targets: Vec<Target> = tables
        .iter_mut()
        .map(|t| {
            // Local indices are below 128: the same bytes as i8 or u8.
            let locals: &mut [u8] = bytemuck::cast_slice_mut(&mut t.locals);
            Target::new(&mut t.ball, locals)
        })
        .collect();
    counted.scatter(&targets, |v, k| {
        let c = usize::from(class[v]);
        (c, k * sizes[c] + rank[v] as usize)
    });
    drop(targets);
    tables.retain(|t| !t.rows.is_empty());
    let max_degree = counted.degrees.par_iter().max().map_or(0, |&d| d as usize);
    BallTables {
        degrees: counted.degrees.par_iter().map(|&d| d as i32).collect(),
        max_degree,
        classes: tables,
    }
}

/// The elements cut into chunks, with each vertex's degree and, per chunk, the position of
/// its first entry inside each vertex's row.
struct Counted<'a> {
    parts: Vec<&'a [i32]>,
    per_chunk: usize,
    stride: usize,
    nodes: usize,
    degrees: Vec<u32>,
    starts: Vec<Vec<u32>>,
}

impl<'a> Counted<'a> {
    fn new(vertices: usize, lines: &'a [i32], stride: usize, nodes: usize) -> Self {
        let stride = stride.max(1);
        let nodes = nodes.min(stride);
        let count = lines.len() / stride;
        let lines = &lines[..count * stride];
        let entries = count * nodes;
        // A histogram per chunk costs 4 bytes per vertex: use no more chunks than entries per
        // vertex, so the histograms never outweigh the ball itself; but enough that a chunk's
        // counts fit in u32.
        let chunks = rayon::current_num_threads()
            .min(entries / vertices.max(1))
            .max(entries.div_ceil(u32::MAX as usize))
            .max(1);
        let per_chunk = count.div_ceil(chunks).max(1);
        let parts: Vec<&[i32]> = lines.chunks(per_chunk * stride).collect();
        let mut starts: Vec<Vec<u32>> = parts
            .par_iter()
            .map(|part| {
                let mut histogram = vec![0u32; vertices];
                for line in part.chunks_exact(stride) {
                    for &v in &line[..nodes] {
                        histogram[v as usize] += 1;
                    }
                }
                histogram
            })
            .collect();

        // Turn each chunk's counts into the position of its first entry inside each row.
        let mut degrees = vec![0u32; vertices];
        let mut blocks: Vec<Vec<&mut [u32]>> = (0..vertices.div_ceil(BLOCK))
            .map(|_| Vec::with_capacity(starts.len()))
            .collect();
        for start in &mut starts {
            for (b, part) in start.chunks_mut(BLOCK).enumerate() {
                blocks[b].push(part);
            }
        }
        blocks
            .into_par_iter()
            .zip(degrees.par_chunks_mut(BLOCK))
            .for_each(|(mut parts, degrees)| {
                for (i, degree) in degrees.iter_mut().enumerate() {
                    let mut start = 0u32;
                    for part in parts.iter_mut() {
                        let here = part[i];
                        part[i] = start;
                        start = start
                            .checked_add(here)
                            .expect("a vertex in fewer than 2^32 elements");
                    }
                    *degree = start;
                }
            });
        Self {
            parts,
            per_chunk,
            stride,
            nodes,
            degrees,
            starts,
        }
    }

    /// Writes entry `k` of vertex `v`'s row (element, local index) at `slot(v, k)`: a target
    /// and a position in it, distinct for every `(v, k)`.
    /// Uses up the chunks' start positions (they become cursors).
    fn scatter(
        &mut self,
        targets: &[Target],
        slot: impl Fn(usize, usize) -> (usize, usize) + Sync,
    ) {
        let (per_chunk, stride, nodes) = (self.per_chunk, self.stride, self.nodes);
        self.parts
            .par_iter()
            .zip(self.starts.par_iter_mut())
            .enumerate()
            .for_each(|(c, (part, cursor))| {
                let first = c * per_chunk;
                for (i, line) in part.chunks_exact(stride).enumerate() {
                    let e = (first + i) as i32;
                    for (l, &v) in line[..nodes].iter().enumerate() {
                        let v = v as usize;
                        let (t, at) = slot(v, cursor[v] as usize);
                        cursor[v] += 1;
                        // SAFETY: chunk `c` owns entries `start_c(v)..start_c(v) + count_c(v)`
                        // of row `v` (counted from the same lines), and `slot` maps distinct
                        // entries to distinct positions, so no two writes, in this chunk or
                        // another, hit one position; `write` checks the bounds.
                        unsafe { targets[t].write(at, e, l as u8) };
                    }
                }
            });
    }
}

/// One output table written from several threads at positions each of them owns.
struct Target {
    elements: *mut i32,
    locals: *mut u8,
    len: usize,
}

// SAFETY: a Target only writes, through `write`, whose callers guarantee that no two threads
// use one position.
unsafe impl Sync for Target {}

impl Target {
    /// Borrows two buffers of equal length for the duration of a scatter.
    fn new(elements: &mut [i32], locals: &mut [u8]) -> Self {
        assert_eq!(elements.len(), locals.len());
        Self {
            elements: elements.as_mut_ptr(),
            locals: locals.as_mut_ptr(),
            len: elements.len(),
        }
    }

    /// Writes position `at`.
    ///
    /// # Safety
    /// No other thread may access position `at` meanwhile, and the buffers given to
    /// [`Target::new`] must still be alive and not otherwise borrowed.
    unsafe fn write(&self, at: usize, element: i32, local: u8) {
        assert!(at < self.len, "ball position {at} beyond {}", self.len);
        // SAFETY: in bounds (checked above); exclusive by the caller's contract.
        unsafe {
            self.elements.add(at).write(element);
            self.locals.add(at).write(local);
        }
    }
}
