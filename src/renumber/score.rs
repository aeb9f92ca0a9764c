//! The numbering score (GMlib's `GmlEvaluateNumbering`): how often a GPU kernel looping over
//! the elements finds the vertex data it reads already in cache.
//!
//! # What is simulated
//!
//! For each element kind, one kernel loops over every element and reads **every** node's
//! coordinates (GMlib looked at the first node only, its bug S15). Reads are simulated as a GPU
//! runs them ([`CacheModel::default`], the shape of an NVIDIA H100):
//!
//! - each vertex's coordinates are one `float4`, 16 bytes, at `16 · index` (gml's layout), so a
//!   128-byte line holds 8 consecutive vertices;
//! - the loop is cut into work-groups of 256 consecutive elements, dealt round-robin to 132
//!   compute units (streaming multiprocessors), each running its work-groups in order;
//! - each compute unit has its own L1 cache of 128 KiB, 128-byte lines, 8-way set-associative
//!   with least-recently-used replacement, empty when the kernel starts.
//!
//! The score is the percentage of reads that hit. A good numbering keeps the few dozen
//! vertices of a work-group on few lines: about 95 % and more for a tetrahedral mesh renumbered
//! along a Hilbert curve. A random numbering scatters them: the score tends to 0 as the mesh
//! grows (it stays higher on small meshes, whose few lines a work-group keeps hitting by
//! chance). The L2 cache (50 MB on an H100) is not modelled: it holds whole meshes of a few
//! million vertices whatever their numbering, so the numbering matters most for L1. Reading
//! the elements' own node lists is not counted: it is a sequential stream, the same for every
//! numbering.

use rayon::prelude::*;
use serde::Serialize;

use crate::meshio::{ElementKind, Mesh};

/// The cache and launch shape the score simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CacheModel {
    /// Compute units (streaming multiprocessors), each with its own cache.
    pub compute_units: usize,
    /// Elements per work-group; work-groups go round-robin to the compute units.
    pub work_group: usize,
    /// Cache capacity of one compute unit, in bytes.
    pub cache_bytes: usize,
    /// Cache line size, in bytes.
    pub line_bytes: usize,
    /// Lines per set (associativity); replacement is least recently used.
    pub ways: usize,
    /// Bytes of vertex data each node read loads (gml's `float4` coordinates: 16).
    pub vertex_bytes: usize,
}

impl Default for CacheModel {
    /// An NVIDIA H100: 132 SMs; 128 KiB of L1 per SM, 128-byte lines, 8 ways; work-groups of
    /// 256 as gml launches them; 16-byte vertices.
    fn default() -> Self {
        Self {
            compute_units: 132,
            work_group: 256,
            cache_bytes: 128 * 1024,
            line_bytes: 128,
            ways: 8,
            vertex_bytes: 16,
        }
    }
}

impl CacheModel {
    /// One line, e.g. `132 compute units × 128 KiB L1, 128-byte lines, 8-way LRU, work-groups
    /// of 256`.
    pub fn describe(&self) -> String {
        format!(
            "{} compute units × {} KiB L1, {}-byte lines, {}-way LRU, work-groups of {}",
            self.compute_units,
            self.cache_bytes / 1024,
            self.line_bytes,
            self.ways,
            self.work_group
        )
    }

    /// Number of sets, at least 1.
    fn sets(&self) -> usize {
        (self.cache_bytes / (self.line_bytes.max(1) * self.ways.max(1))).max(1)
    }
}

/// Hits and reads of the loop over one element kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KindScore {
    /// The element kind looped over (serialized as its name, e.g. `"tetrahedra"`).
    #[serde(serialize_with = "kind_name")]
    pub kind: ElementKind,
    /// Vertex reads (elements × nodes).
    pub reads: u64,
    /// Reads that found their line in cache.
    pub hits: u64,
}

fn kind_name<S: serde::Serializer>(kind: &ElementKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.name())
}

/// The numbering score of a mesh: cache hits over every element kind's loop.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NumberingScore {
    /// Per element kind present, in [`ElementKind::ALL`] order.
    pub kinds: Vec<KindScore>,
    /// The model simulated.
    pub model: CacheModel,
}

impl NumberingScore {
    /// All vertex reads.
    pub fn reads(&self) -> u64 {
        self.kinds.iter().map(|k| k.reads).sum()
    }

    /// All hits.
    pub fn hits(&self) -> u64 {
        self.kinds.iter().map(|k| k.hits).sum()
    }

    /// Percentage of reads that hit, `None` for a mesh without elements.
    pub fn percent(&self) -> Option<f64> {
        let reads = self.reads();
        (reads > 0).then(|| 100.0 * self.hits() as f64 / reads as f64)
    }
}

/// The numbering score of `mesh` with the default model (an H100's L1).
pub fn numbering_score(mesh: &Mesh) -> NumberingScore {
    numbering_score_with(mesh, &CacheModel::default())
}

/// The numbering score of `mesh` with `model`. Node indices are only used as addresses, so
/// out-of-range ones are not an error here.
pub fn numbering_score_with(mesh: &Mesh, model: &CacheModel) -> NumberingScore {
    let tables: Vec<(ElementKind, &[u32])> = ElementKind::ALL
        .into_iter()
        .filter(|&k| mesh.count(k) > 0)
        .map(|kind| (kind, mesh.elements(kind).node_slice()))
        .collect();
    numbering_score_of_tables(&tables, model)
}

/// The numbering score of element tables given directly: `(kind, nodes)` with `kind.nodes()`
/// vertex indices per element, in [`ElementKind::ALL`] order (a gml instance's tables, say).
pub fn numbering_score_of_tables(
    tables: &[(ElementKind, &[u32])],
    model: &CacheModel,
) -> NumberingScore {
    let kinds = tables
        .iter()
        .filter(|(_, nodes)| !nodes.is_empty())
        .map(|&(kind, nodes)| {
            let (reads, hits) = simulate(nodes, kind.nodes(), model);
            KindScore { kind, reads, hits }
        })
        .collect();
    NumberingScore {
        kinds,
        model: *model,
    }
}

/// (reads, hits) of one kernel over elements of `width` nodes.
fn simulate(nodes: &[u32], width: usize, model: &CacheModel) -> (u64, u64) {
    let group_nodes = model.work_group.max(1) * width;
    let groups = nodes.len().div_ceil(group_nodes);
    let units = model.compute_units.max(1).min(groups.max(1));
    let per_line = (model.line_bytes / model.vertex_bytes.max(1)).max(1) as u64;
    let hits: u64 = (0..units)
        .into_par_iter()
        .map(|unit| {
            let mut cache = Cache::new(model.sets(), model.ways.max(1));
            let mut hits = 0u64;
            for group in (unit..groups).step_by(units) {
                let start = group * group_nodes;
                let end = (start + group_nodes).min(nodes.len());
                for &v in &nodes[start..end] {
                    hits += u64::from(cache.access(u64::from(v) / per_line));
                }
            }
            hits
        })
        .sum();
    (nodes.len() as u64, hits)
}

/// A set-associative LRU cache of line numbers.
struct Cache {
    sets: usize,
    ways: usize,
    /// Per set, its lines, most recently used first; `u64::MAX` is an empty way.
    lines: Vec<u64>,
}

impl Cache {
    fn new(sets: usize, ways: usize) -> Self {
        Self {
            sets,
            ways,
            lines: vec![u64::MAX; sets * ways],
        }
    }

    /// Reads `line`; whether it was there.
    fn access(&mut self, line: u64) -> bool {
        let set = (line % self.sets as u64) as usize;
        let ways = &mut self.lines[set * self.ways..(set + 1) * self.ways];
        match ways.iter().position(|&l| l == line) {
            Some(at) => {
                ways[..=at].rotate_right(1);
                true
            }
            None => {
                ways.rotate_right(1);
                ways[0] = line;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_keeps_the_most_recent_lines_of_a_set() {
        let mut cache = Cache::new(1, 2);
        assert!(!cache.access(1));
        assert!(!cache.access(2));
        assert!(cache.access(1)); // 1 is now the most recent
        assert!(!cache.access(3)); // evicts 2
        assert!(cache.access(1));
        assert!(!cache.access(2));
        let mut sets = Cache::new(2, 1);
        assert!(!sets.access(0));
        assert!(!sets.access(1)); // other set: 0 stays
        assert!(sets.access(0));
    }

    #[test]
    fn every_node_counts_and_lines_hold_eight_vertices() {
        // One triangle on vertices 0, 1, 2: one line, first read misses.
        let mut mesh = Mesh::new(3);
        for i in 0..20 {
            mesh.push_vertex([i as f64, 0.0, 0.0], 0);
        }
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[0, 1, 2], 0);
        let s = numbering_score(&mesh);
        assert_eq!((s.reads(), s.hits()), (3, 2));
        // Vertices 0, 8, 16 lie on three lines: no hit (GMlib, reading node 0 only, saw 100 %).
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[0, 8, 16], 0);
        let s = numbering_score(&mesh);
        assert_eq!((s.reads(), s.hits()), (6, 3));
        assert_eq!(s.percent(), Some(50.0));
        assert_eq!(numbering_score(&Mesh::new(3)).percent(), None);
    }

    #[test]
    fn work_groups_on_other_units_do_not_share_a_cache() {
        let model = CacheModel {
            compute_units: 2,
            work_group: 1,
            ..CacheModel::default()
        };
        let mut mesh = Mesh::new(3);
        for i in 0..4 {
            mesh.push_vertex([i as f64, 0.0, 0.0], 0);
        }
        let edges = mesh.elements_mut(ElementKind::Edges);
        edges.push(&[0, 1], 0); // unit 0: miss, hit
        edges.push(&[0, 1], 0); // unit 1: miss, hit
        edges.push(&[0, 1], 0); // unit 0 again: hit, hit
        let s = numbering_score_with(&mesh, &model);
        assert_eq!((s.reads(), s.hits()), (6, 4));
    }
}
