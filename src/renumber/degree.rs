//! Uplink degrees and the degree classes gml splits uplink tables into.
//!
//! gml stores an uplink (a vertex's ball, an edge's shell) as one table per *degree class*:
//! entities whose degree fits the base width `b` (GMlib's `LenMatBas`) go to a table of width
//! `b`, those that fit `2b` to a table of width `2b`, and so on. gml does not need the entities
//! of one class to be consecutive, but when they are, each table is a plain range of entities
//! and its kernel computes the entity from its index instead of reading a row list. The rules
//! are gml's own, kept in [`crate::mesh_kind::uplink`] for both; `tests/device/renumber.rs`
//! checks the tables renumbering announces against gml's `Gml::link_info`.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use crate::mesh_kind::MeshKind;
use crate::meshio::{ElementKind, Mesh};

pub use crate::mesh_kind::uplink::{base_width, degree_class};

/// The table width of class `class` for base width `base`.
pub fn class_width(class: u8, base: usize) -> usize {
    base.max(1).next_power_of_two() << class
}

/// For each vertex, the number of elements of `kind` that use it (a node repeated in an
/// element counts each time, as gml's ball does).
pub fn vertex_degrees(mesh: &Mesh, kind: ElementKind) -> Vec<u32> {
    let mut degrees = vec![0u32; mesh.vertices.len()];
    for &v in mesh.elements(kind).node_slice() {
        if let Some(d) = degrees.get_mut(v as usize) {
            *d += 1;
        }
    }
    degrees
}

/// For each edge of the mesh, the number of elements of `kind` that have it among their
/// edges (its shell). Edges are matched by their two nodes in any order.
pub fn edge_degrees(mesh: &Mesh, kind: ElementKind) -> Vec<u32> {
    let edges = mesh.elements(ElementKind::Edges);
    let pair = |a: u32, b: u32| (u64::from(a.min(b)) << 32) | u64::from(a.max(b));
    let mut index: Vec<(u64, u32)> = edges
        .node_slice()
        .chunks_exact(2)
        .enumerate()
        .map(|(e, n)| (pair(n[0], n[1]), e as u32))
        .collect();
    index.par_sort_unstable();
    let degrees: Vec<AtomicU32> = (0..edges.len()).map(|_| AtomicU32::new(0)).collect();
    let locals = MeshKind::from_element(kind).sub_entities(MeshKind::Edges);
    let elements = mesh.elements(kind);
    elements
        .node_slice()
        .par_chunks_exact(kind.nodes())
        .for_each(|nodes| {
            for local in locals {
                let key = pair(nodes[local[0]], nodes[local[1]]);
                let at = index.partition_point(|&(k, _)| k < key);
                if let Some(&(k, e)) = index.get(at)
                    && k == key
                {
                    degrees[e as usize].fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    degrees.into_iter().map(AtomicU32::into_inner).collect()
}

/// Table widths and row counts of the classes of `degrees`, narrowest first, empty classes
/// left out: what gml's `Gml::link_info` reports for that uplink.
pub fn class_tables(degrees: &[u32], base: usize) -> Vec<(usize, usize)> {
    let mut counts: Vec<usize> = Vec::new();
    for &d in degrees {
        let c = degree_class(d as usize, base) as usize;
        if counts.len() <= c {
            counts.resize(c + 1, 0);
        }
        counts[c] += 1;
    }
    counts
        .into_iter()
        .enumerate()
        .filter(|&(_, n)| n > 0)
        .map(|(c, n)| (class_width(c as u8, base), n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_double_the_width() {
        assert_eq!(degree_class(0, 32), 0);
        assert_eq!(degree_class(32, 32), 0);
        assert_eq!(degree_class(33, 32), 1);
        assert_eq!(degree_class(64, 32), 1);
        assert_eq!(degree_class(65, 32), 2);
        assert_eq!(degree_class(200, 32), 3);
        assert_eq!(class_width(3, 32), 256);
        assert_eq!(degree_class(9, 8), 1);
        assert_eq!(
            class_tables(&[1, 9, 8, 17, 40, 2], 8),
            vec![(8, 3), (16, 1), (32, 1), (64, 1)]
        );
    }

    #[test]
    fn edge_and_vertex_degrees_match_brute_force() {
        let mut mesh = crate::meshio::generate::tet_grid([2, 2, 1]);
        // Every edge of every tetrahedron, once each.
        let tets = mesh.elements(ElementKind::Tetrahedra).clone();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (t, _) in tets.iter() {
            for l in MeshKind::Tetrahedra.sub_entities(MeshKind::Edges) {
                let (a, b) = (t[l[0]], t[l[1]]);
                pairs.push((a.min(b), a.max(b)));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        for &(a, b) in &pairs {
            mesh.elements_mut(ElementKind::Edges).push(&[b, a], 0);
        }
        let degrees = edge_degrees(&mesh, ElementKind::Tetrahedra);
        for (e, &(a, b)) in pairs.iter().enumerate() {
            let expected = tets
                .iter()
                .filter(|(t, _)| t.contains(&a) && t.contains(&b))
                .count();
            assert_eq!(degrees[e] as usize, expected, "edge {a}-{b}");
        }
        let balls = vertex_degrees(&mesh, ElementKind::Tetrahedra);
        for (v, &d) in balls.iter().enumerate() {
            let expected = tets.iter().filter(|(t, _)| t.contains(&(v as u32))).count();
            assert_eq!(d as usize, expected);
        }
    }
}
