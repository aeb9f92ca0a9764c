//! Host-side construction of topological links: incidence (balls and shells), sub-entity
//! lookup (element → its edges or faces), neighbours through shared faces, and the split of an
//! uplink into degree classes (by the widths of [`crate::mesh_kind::uplink`], re-exported here).
//!
//! Everything works on flat node lists (`nodes.len() == count × nodes per entity`, 0-based
//! `i32`), in O(n) or O(n log n), and is checked against brute force in the tests. Vertex balls
//! and degree classes are built on the cores of the current rayon pool, with results that do
//! not depend on its size.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::mesh_kind::MeshKind;

mod ball;

pub use crate::mesh_kind::uplink::{base_width, degree_class};
use ball::BLOCK;
pub use ball::{BallTables, vertex_ball_of_lines, vertex_ball_tables};

/// For each source entity, the destination entities that contain it and where (the local index
/// of the source inside the destination), stored as compressed rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Incidence {
    /// Row `i` spans `offsets[i]..offsets[i + 1]`.
    pub offsets: Vec<usize>,
    /// Destination entity of each entry, increasing within a row.
    pub elements: Vec<i32>,
    /// Local index of the source entity inside that destination (vertex, edge or face number).
    pub locals: Vec<u8>,
}

impl Incidence {
    /// Number of source entities.
    pub fn rows(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Degree of source entity `i`.
    pub fn degree(&self, i: usize) -> usize {
        self.offsets[i + 1] - self.offsets[i]
    }

    /// Largest degree, 0 when empty.
    pub fn max_degree(&self) -> usize {
        (0..self.rows())
            .into_par_iter()
            .map(|i| self.degree(i))
            .max()
            .unwrap_or(0)
    }

    /// Builds rows from `(source, element, local)` triples given in increasing element order.
    fn from_pairs(rows: usize, pairs: impl Iterator<Item = (usize, i32, u8)> + Clone) -> Self {
        let mut offsets = vec![0usize; rows + 1];
        for (s, _, _) in pairs.clone() {
            offsets[s + 1] += 1;
        }
        for i in 0..rows {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let total = offsets[rows];
        let mut elements = vec![0i32; total];
        let mut locals = vec![0u8; total];
        for (s, e, l) in pairs {
            elements[fill[s]] = e;
            locals[fill[s]] = l;
            fill[s] += 1;
        }
        Self {
            offsets,
            elements,
            locals,
        }
    }
}

/// The ball of each vertex: the elements of `kind` (nodes in `nodes`) that use it.
pub fn vertex_ball(vertices: usize, kind: MeshKind, nodes: &[i32]) -> Incidence {
    vertex_ball_of_lines(vertices, nodes, kind.nodes(), kind.nodes())
}

/// Finds entities of one kind (edges, triangles or quadrilaterals) by their node set.
pub struct SubEntityIndex {
    /// Node tuples, sorted, grouped by their smallest node.
    by_vertex: Incidence,
    sorted: Vec<i32>,
    width: usize,
}

impl SubEntityIndex {
    /// Indexes the entities of `kind` whose nodes are `nodes`.
    pub fn new(vertices: usize, kind: MeshKind, nodes: &[i32]) -> Self {
        let width = kind.nodes();
        let mut sorted = nodes.to_vec();
        sorted
            .par_chunks_exact_mut(width)
            .for_each(|t| t.sort_unstable());
        let pairs = sorted
            .chunks_exact(width)
            .enumerate()
            .map(|(e, t)| (t[0] as usize, e as i32, 0u8));
        let by_vertex = Incidence::from_pairs(vertices, pairs);
        Self {
            by_vertex,
            sorted,
            width,
        }
    }

    /// The index of the entity with exactly these nodes (any order), if there is one.
    pub fn find(&self, nodes: &[i32]) -> Option<i32> {
        if nodes.len() != self.width {
            return None;
        }
        let mut key = [0i32; 4];
        key[..self.width].copy_from_slice(nodes);
        let key = &mut key[..self.width];
        key.sort_unstable();
        let v = key[0] as usize;
        if v + 1 >= self.by_vertex.offsets.len() {
            return None;
        }
        let range = self.by_vertex.offsets[v]..self.by_vertex.offsets[v + 1];
        self.by_vertex.elements[range].iter().copied().find(|&e| {
            let at = e as usize * self.width;
            &self.sorted[at..at + self.width] == key
        })
    }
}

/// For each element of `kind`, the index of each of its sub-entities of kind `sub` in `index`
/// (row-major, `kind.sub_entities(sub).len()` per element), or `Err((element, local nodes))`
/// for the first one missing.
pub fn downlink(
    kind: MeshKind,
    nodes: &[i32],
    sub: MeshKind,
    index: &SubEntityIndex,
) -> Result<Vec<i32>, (usize, Vec<i32>)> {
    let locals = kind.sub_entities(sub);
    let n = kind.nodes();
    let width = locals.len();
    let mut out = vec![0i32; nodes.len() / n * width];
    // Each element fills its row; the first element with a missing sub-entity is the error.
    let missing = out
        .par_chunks_mut(width.max(1))
        .zip(nodes.par_chunks_exact(n))
        .enumerate()
        .filter_map(|(e, (row, element))| {
            for (to, local) in row.iter_mut().zip(locals) {
                let (key, len) = sub_nodes(element, local);
                match index.find(&key[..len]) {
                    Some(i) => *to = i,
                    None => return Some((e, key[..len].to_vec())),
                }
            }
            None
        })
        .min_by_key(|&(e, _)| e);
    match missing {
        Some(error) => Err(error),
        None => Ok(out),
    }
}

/// The nodes of the sub-entity `local` (local node numbers) of `element`, in local order, in
/// a fixed array (no allocation): the first `len` entries.
fn sub_nodes(element: &[i32], local: &[usize]) -> ([i32; 4], usize) {
    let mut key = [0i32; 4];
    for (k, &j) in local.iter().take(4).enumerate() {
        key[k] = element[j];
    }
    (key, local.len().min(4))
}

/// The shell of each sub-entity (edge or face): the elements of `kind` that contain it, with the
/// local sub-entity number. Sub-entities of elements that are not in `index` are ignored.
pub fn shell(
    rows: usize,
    kind: MeshKind,
    nodes: &[i32],
    sub: MeshKind,
    index: &SubEntityIndex,
) -> Incidence {
    let locals = kind.sub_entities(sub);
    let n = kind.nodes();
    let mut triples = Vec::new();
    for (e, element) in nodes.chunks_exact(n).enumerate() {
        for (l, local) in locals.iter().enumerate() {
            let (key, len) = sub_nodes(element, local);
            if let Some(i) = index.find(&key[..len]) {
                triples.push((i as usize, e as i32, l as u8));
            }
        }
    }
    Incidence::from_pairs(rows, triples.into_iter())
}

/// The kind of face two neighbouring elements of `kind` share, when all its faces are of one
/// kind (edges for surface elements, triangles for tetrahedra, quadrilaterals for hexahedra).
/// Pyramids and prisms, whose faces are of two kinds, and edges, whose sides are vertices, have
/// neighbours through [`side_neighbours`] instead.
pub fn neighbour_face(kind: MeshKind) -> Option<MeshKind> {
    match kind {
        MeshKind::Triangles | MeshKind::Quadrilaterals => Some(MeshKind::Edges),
        MeshKind::Tetrahedra => Some(MeshKind::Triangles),
        MeshKind::Hexahedra => Some(MeshKind::Quadrilaterals),
        _ => None,
    }
}

/// For each element of `kind` and each of its faces of kind `face_kind` (edges for surface
/// elements), the element on the other side, or -1 on the boundary. `Err(face nodes)` if a
/// face has more than two elements.
pub fn neighbours(
    kind: MeshKind,
    face_kind: MeshKind,
    nodes: &[i32],
) -> Result<Vec<i32>, Vec<i32>> {
    pair_sides(kind.sub_entities(face_kind), kind.nodes(), nodes)
}

/// For each entity of `kind` and each of its sides ([`MeshKind::sides`]: an edge's vertices,
/// a surface element's edges, a solid's faces, triangles first), the entity of `kind` on the
/// other side, or -1 where there is none. `Err(side nodes)` if a side is shared by more than
/// two entities (a vertex of three edges, a face of three solids).
pub fn side_neighbours(kind: MeshKind, nodes: &[i32]) -> Result<Vec<i32>, Vec<i32>> {
    pair_sides(kind.sides(), kind.nodes(), nodes)
}

/// The nodes of side `local` of `element`, sorted, padded with `i32::MAX`: equal for two
/// sides with the same nodes in any order.
fn side_key(element: &[i32], local: &[usize]) -> [i32; 4] {
    let mut key = [i32::MAX; 4];
    for (k, &j) in local.iter().take(4).enumerate() {
        key[k] = element[j];
    }
    key.sort_unstable();
    key
}

fn key_nodes(key: &[i32; 4]) -> Vec<i32> {
    key.iter().copied().filter(|&v| v != i32::MAX).collect()
}

/// Pairs the sides `locals` of the elements (`n` nodes each) that share their nodes.
fn pair_sides(locals: &[&[usize]], n: usize, nodes: &[i32]) -> Result<Vec<i32>, Vec<i32>> {
    let width = locals.len();
    let count = nodes.len() / n.max(1);
    let mut faces: Vec<([i32; 4], i32, u8)> = Vec::with_capacity(count * width);
    for (e, element) in nodes.chunks_exact(n).enumerate() {
        for (l, local) in locals.iter().enumerate() {
            faces.push((side_key(element, local), e as i32, l as u8));
        }
    }
    faces.par_sort_unstable();
    let mut out = vec![-1i32; count * width];
    for run in faces.chunk_by(|a, b| a.0 == b.0) {
        match run {
            [_] => {}
            [a, b] => {
                out[a.1 as usize * width + a.2 as usize] = b.1;
                out[b.1 as usize * width + b.2 as usize] = a.1;
            }
            more => return Err(key_nodes(&more[0].0)),
        }
    }
    Ok(out)
}

/// The default link between two kinds of one dimension: for each entity of `from` (nodes
/// `from_nodes`) and each of its sides that `to` can share ([`MeshKind::transverse_sides`]),
/// the entity of `to` (nodes `to_nodes`) across it, or -1 where there is none (a boundary, or
/// an entity of another kind). `Err(side nodes)` if a side is shared by more than two
/// entities of the two kinds together.
pub fn transverse(
    from: MeshKind,
    from_nodes: &[i32],
    to: MeshKind,
    to_nodes: &[i32],
) -> Result<Vec<i32>, Vec<i32>> {
    let slots = from.transverse_sides(to);
    let width = slots.len();
    let from_sides = from.sides();
    let sizes: Vec<usize> = slots.iter().map(|&s| from_sides[s].len()).collect();
    let count = from_nodes.len() / from.nodes();
    // (side, from this kind?, entity, slot)
    let mut sides: Vec<([i32; 4], bool, i32, u8)> = Vec::new();
    for (e, element) in from_nodes.chunks_exact(from.nodes()).enumerate() {
        for (slot, &s) in slots.iter().enumerate() {
            sides.push((side_key(element, from_sides[s]), true, e as i32, slot as u8));
        }
    }
    for (e, element) in to_nodes.chunks_exact(to.nodes()).enumerate() {
        for local in to.sides().iter().filter(|s| sizes.contains(&s.len())) {
            sides.push((side_key(element, local), false, e as i32, 0));
        }
    }
    sides.par_sort_unstable();
    let mut out = vec![-1i32; count * width];
    for run in sides.chunk_by(|a, b| a.0 == b.0) {
        match run {
            [_] => {}
            [a, b] => {
                let (mine, theirs) = match (a.1, b.1) {
                    (true, false) => (a, b),
                    (false, true) => (b, a),
                    _ => continue,
                };
                out[mine.2 as usize * width + usize::from(mine.3)] = theirs.2;
            }
            more => return Err(key_nodes(&more[0].0)),
        }
    }
    Ok(out)
}

/// The unique sub-entities of kind `sub` (edges, triangles or quadrilaterals) of all `sources`
/// (each a kind and its nodes), appended after the `existing` ones, which keep their order and
/// references; new ones get reference 0 and the orientation of the first element that has them.
pub fn extract(
    sub: MeshKind,
    existing: (&[i32], &[i32]),
    sources: &[(MeshKind, &[i32])],
) -> (Vec<i32>, Vec<i32>) {
    let width = sub.nodes();
    let (mut nodes, mut refs) = (existing.0.to_vec(), existing.1.to_vec());
    let mut seen: HashMap<[i32; 4], ()> = HashMap::new();
    let key = |t: &[i32]| {
        let mut k = [i32::MAX; 4];
        k[..t.len()].copy_from_slice(t);
        k.sort_unstable();
        k
    };
    for t in nodes.chunks_exact(width) {
        seen.insert(key(t), ());
    }
    for &(kind, element_nodes) in sources {
        let locals = kind.sub_entities(sub);
        for element in element_nodes.chunks_exact(kind.nodes()) {
            for local in locals {
                let t: Vec<i32> = local.iter().map(|&j| element[j]).collect();
                if seen.insert(key(&t), ()).is_none() {
                    nodes.extend_from_slice(&t);
                    refs.push(0);
                }
            }
        }
    }
    (nodes, refs)
}

/// One table of an uplink: the source entities whose degree fits `width`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DegreeClass {
    /// Entries per row (a power of two): the kernel's `…DegMax`.
    pub width: usize,
    /// The source entities of this table, increasing.
    pub rows: Vec<i32>,
    /// Destination entities, column-major: entry `k` of row `r` is at `k * rows.len() + r`;
    /// padding is 0 (never read: the kernel checks the degree).
    pub ball: Vec<i32>,
    /// Local indices, laid out like `ball`.
    pub locals: Vec<i8>,
}

impl DegreeClass {
    /// Whether the rows are consecutive entities, so the kernel can compute its index.
    pub fn contiguous(&self) -> bool {
        self.rows.windows(2).all(|w| w[1] == w[0] + 1)
    }
}

/// Splits an incidence into tables of widths `base`, `2·base`, `4·base`, … so that each entity
/// sits in the narrowest table its degree fits. Empty tables are left out; no degree is too
/// large. Runs on the current rayon pool; the tables do not depend on its size.
pub fn degree_classes(incidence: &Incidence, base: usize) -> Vec<DegreeClass> {
    let base = base.max(1).next_power_of_two();
    let class: Vec<u8> = (0..incidence.rows())
        .into_par_iter()
        .map(|i| degree_class(incidence.degree(i), base))
        .collect();
    let classes = class.par_iter().max().map_or(0, |&c| usize::from(c) + 1);
    let mut out = Vec::new();
    for c in 0..classes {
        let width = base << c;
        let rows: Vec<i32> = class
            .par_iter()
            .enumerate()
            .filter(|&(_, &k)| usize::from(k) == c)
            .map(|(i, _)| i as i32)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let (ball, locals) = fill_class(incidence, &rows, width);
        out.push(DegreeClass {
            width,
            rows,
            ball,
            locals,
        });
    }
    out
}

/// The column-major ball and locals of the entities `rows`, all of degree at most `width`:
/// blocks of rows in parallel, each writing its part of every column.
fn fill_class(incidence: &Incidence, rows: &[i32], width: usize) -> (Vec<i32>, Vec<i8>) {
    let n = rows.len();
    let mut ball = vec![0i32; width * n];
    let mut locals = vec![0i8; width * n];
    let blocks = n.div_ceil(BLOCK);
    let mut ball_blocks: Vec<Vec<&mut [i32]>> =
        (0..blocks).map(|_| Vec::with_capacity(width)).collect();
    let mut local_blocks: Vec<Vec<&mut [i8]>> =
        (0..blocks).map(|_| Vec::with_capacity(width)).collect();
    for column in ball.chunks_mut(n) {
        for (b, part) in column.chunks_mut(BLOCK).enumerate() {
            ball_blocks[b].push(part);
        }
    }
    for column in locals.chunks_mut(n) {
        for (b, part) in column.chunks_mut(BLOCK).enumerate() {
            local_blocks[b].push(part);
        }
    }
    ball_blocks
        .into_par_iter()
        .zip(local_blocks)
        .zip(rows.par_chunks(BLOCK))
        .for_each(|((mut ball, mut locals), rows)| {
            for (r, &i) in rows.iter().enumerate() {
                let span = incidence.offsets[i as usize]..incidence.offsets[i as usize + 1];
                for (k, j) in span.enumerate() {
                    ball[k][r] = incidence.elements[j];
                    locals[k][r] = incidence.locals[j] as i8;
                }
            }
        });
    (ball, locals)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tetrahedra sharing face (1, 2, 3), and a third on face (0, 1, 2).
    const TETS: [i32; 12] = [0, 1, 2, 3, 1, 4, 2, 3, 0, 2, 1, 5];

    #[test]
    fn ball_matches_brute_force() {
        let ball = vertex_ball(6, MeshKind::Tetrahedra, &TETS);
        for v in 0..6 {
            let expected: Vec<(i32, u8)> = TETS
                .chunks(4)
                .enumerate()
                .flat_map(|(e, t)| t.iter().position(|&x| x == v).map(|l| (e as i32, l as u8)))
                .collect();
            let span = ball.offsets[v as usize]..ball.offsets[v as usize + 1];
            let got: Vec<(i32, u8)> = span.map(|j| (ball.elements[j], ball.locals[j])).collect();
            assert_eq!(got, expected, "vertex {v}");
        }
        assert_eq!(ball.max_degree(), 3);
    }

    #[test]
    fn neighbours_are_symmetric_and_boundaries_are_minus_one() {
        let ngb = neighbours(MeshKind::Tetrahedra, MeshKind::Triangles, &TETS).unwrap();
        // Tet 0's face 0 is (1,2,3): shared with tet 1; its face 3 is (0,2,1): shared with tet 2.
        assert_eq!(&ngb[0..4], &[1, -1, -1, 2]);
        assert_eq!(ngb[4..8].iter().filter(|&&x| x == 0).count(), 1);
        assert_eq!(ngb[8..12].iter().filter(|&&x| x == 0).count(), 1);
        let mut bad = TETS.to_vec();
        bad.extend_from_slice(&[3, 2, 1, 5]); // a fourth element on face (1, 2, 3)
        assert!(neighbours(MeshKind::Tetrahedra, MeshKind::Triangles, &bad).is_err());
    }

    /// A unit cube `[0,1]³` (vertices 0–7 as libMeshb numbers a hexahedron) split into two
    /// prisms by the plane through edges 0–2 and 4–6, plus a pyramid on its top face with
    /// apex 8, and a tetrahedron on the pyramid's face (5, 6, 8) with apex 9.
    const CUBE_PRISMS: [i32; 12] = [0, 1, 2, 4, 5, 6, 0, 2, 3, 4, 6, 7];
    const TOP_PYRAMID: [i32; 5] = [4, 5, 6, 7, 8];
    const SIDE_TET: [i32; 4] = [5, 6, 8, 9];

    #[test]
    fn prisms_pyramids_and_edges_have_neighbours_across_their_sides() {
        // Prism sides: triangles (0,2,1), (3,4,5), then quads (0,1,4,3), (1,2,5,4), (3,5,2,0).
        let ngb = side_neighbours(MeshKind::Prisms, &CUBE_PRISMS).unwrap();
        assert_eq!(
            &ngb[..5],
            &[-1, -1, -1, -1, 1],
            "prism 0 meets 1 across quad 0-2-6-4"
        );
        assert_eq!(
            &ngb[5..],
            &[-1, -1, 0, -1, -1],
            "prism 1 meets 0 across its first quad"
        );
        // Two pyramids sharing the triangle (1, 2, 4): side 1 of the first, side 2 of the
        // second (its local nodes 2, 3, 4 are 2, 1, 4).
        let pyramids = [0, 1, 2, 3, 4, 5, 6, 2, 1, 4];
        let ngb = side_neighbours(MeshKind::Pyramids, &pyramids).unwrap();
        assert_eq!(ngb, [-1, 1, -1, -1, -1, -1, -1, 0, -1, -1]);
        // A polyline 0-1-2-3: each edge meets the next across its second vertex.
        let edges = [0, 1, 1, 2, 2, 3];
        let ngb = side_neighbours(MeshKind::Edges, &edges).unwrap();
        assert_eq!(ngb, [-1, 1, 0, 2, 1, -1]);
        // A third edge at vertex 1: not a manifold line.
        assert_eq!(
            side_neighbours(MeshKind::Edges, &[0, 1, 1, 2, 1, 3]),
            Err(vec![1])
        );
    }

    #[test]
    fn transverse_links_cross_kinds_through_shared_sides() {
        // Prism 0's top triangle (4,5,6) and prism 1's (4,6,7) are half the pyramid's base: no
        // side in common. The pyramid meets the tetrahedron across its triangle 1 (5, 6, 8).
        let pyr_tet = transverse(
            MeshKind::Pyramids,
            &TOP_PYRAMID,
            MeshKind::Tetrahedra,
            &SIDE_TET,
        )
        .unwrap();
        assert_eq!(pyr_tet, [-1, 0, -1, -1]);
        let tet_pyr = transverse(
            MeshKind::Tetrahedra,
            &SIDE_TET,
            MeshKind::Pyramids,
            &TOP_PYRAMID,
        )
        .unwrap();
        assert_eq!(tet_pyr, [-1, -1, -1, 0], "tet face 3 is (5, 8, 6)");
        // A hexahedron on the pyramid's base shares it with the pyramid, and no face with the
        // prisms (whose top is two triangles).
        let hex_above = [4, 5, 6, 7, 10, 11, 12, 13];
        let prism_hex = transverse(
            MeshKind::Prisms,
            &CUBE_PRISMS,
            MeshKind::Hexahedra,
            &hex_above,
        )
        .unwrap();
        assert_eq!(prism_hex, [-1; 6]);
        let pyr_hex = transverse(
            MeshKind::Pyramids,
            &TOP_PYRAMID,
            MeshKind::Hexahedra,
            &hex_above,
        )
        .unwrap();
        assert_eq!(pyr_hex, [0], "the pyramid's base, its only quadrilateral");
        // Triangles and quadrilaterals share edges.
        let quads = [0, 1, 2, 3];
        let tris = [2, 1, 4, 5, 6, 7];
        let tri_quad = transverse(MeshKind::Triangles, &tris, MeshKind::Quadrilaterals, &quads);
        assert_eq!(tri_quad, Ok(vec![0, -1, -1, -1, -1, -1]));
        let quad_tri = transverse(MeshKind::Quadrilaterals, &quads, MeshKind::Triangles, &tris);
        assert_eq!(quad_tri, Ok(vec![-1, 0, -1, -1]));
        // A side shared by three entities is an error.
        let two_tets = [5, 6, 8, 9, 6, 5, 8, 10];
        assert_eq!(
            transverse(
                MeshKind::Pyramids,
                &TOP_PYRAMID,
                MeshKind::Tetrahedra,
                &two_tets
            ),
            Err(vec![5, 6, 8])
        );
    }

    #[test]
    fn extracted_faces_are_unique_and_keep_the_existing_ones_first() {
        let existing = [3, 2, 1];
        let (faces, refs) = extract(
            MeshKind::Triangles,
            (&existing, &[7]),
            &[(MeshKind::Tetrahedra, &TETS)],
        );
        assert_eq!(faces.len() / 3, 10, "3 tets with 2 shared faces");
        assert_eq!(&faces[..3], &existing);
        assert_eq!(refs[0], 7);
        assert!(refs[1..].iter().all(|&r| r == 0));
        let index = SubEntityIndex::new(6, MeshKind::Triangles, &faces);
        let down = downlink(MeshKind::Tetrahedra, &TETS, MeshKind::Triangles, &index).unwrap();
        assert_eq!(down[0], 0, "tet 0 face 0 is the existing triangle");
        let shell = shell(10, MeshKind::Tetrahedra, &TETS, MeshKind::Triangles, &index);
        assert_eq!(shell.degree(0), 2);
        assert_eq!((0..10).map(|f| shell.degree(f)).sum::<usize>(), 12);
        assert!(index.find(&[0, 4, 5]).is_none());
    }

    #[test]
    fn degree_classes_cover_every_entry_once() {
        let mut pairs = Vec::new();
        for v in 0..10usize {
            for e in 0..(v * 7) {
                pairs.push((v, e as i32, (e % 4) as u8));
            }
        }
        let inc = Incidence::from_pairs(10, pairs.iter().copied());
        let classes = degree_classes(&inc, 8);
        let widths: Vec<usize> = classes.iter().map(|c| c.width).collect();
        assert_eq!(widths, [8, 16, 32, 64]);
        let mut seen = [false; 10];
        for c in &classes {
            for (r, &v) in c.rows.iter().enumerate() {
                let d = inc.degree(v as usize);
                assert!(d <= c.width);
                for k in 0..d {
                    assert_eq!(
                        c.ball[k * c.rows.len() + r],
                        inc.elements[inc.offsets[v as usize] + k]
                    );
                }
                seen[v as usize] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert!(classes[0].contiguous());
    }
}
