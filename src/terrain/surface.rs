//! The ground surface of any tetrahedral domain: its boundary triangles of one reference.

use std::collections::HashMap;

use super::{GroundSurface, TerrainError};
use crate::meshio::{ElementKind, Elements, Mesh};

/// The triangles of `mesh` with reference `reference` as a surface of their own: vertices
/// renumbered compactly (in order of first use; `volume_vertices` maps them back), every
/// triangle turned so that its normal points into the tetrahedron it bounds (up into the air,
/// for a ground), whatever its orientation in the file.
///
/// Errors if no triangle has the reference, or if one is not a face of exactly one
/// tetrahedron.
pub fn extract_surface(mesh: &Mesh, reference: i32) -> Result<GroundSurface, TerrainError> {
    mesh.validate_indices()
        .map_err(|e| TerrainError::Surface(e.to_string()))?;
    let tris = mesh.elements(ElementKind::Triangles);
    let chosen: Vec<usize> = (0..tris.len())
        .filter(|&t| tris.refs()[t] == reference)
        .collect();
    if chosen.is_empty() {
        return Err(TerrainError::Surface(format!(
            "no boundary triangle has reference {reference}"
        )));
    }
    let key = |t: &[u32]| {
        let mut k = [t[0], t[1], t[2]];
        k.sort_unstable();
        k
    };
    // Sorted face → (position in `chosen`); then each tetrahedron face that is one of them
    // gives the vertex opposite it.
    let mut wanted: HashMap<[u32; 3], usize> = HashMap::with_capacity(chosen.len());
    for (i, &t) in chosen.iter().enumerate() {
        wanted.insert(key(tris.nodes(t)), i);
    }
    let mut opposite: Vec<Option<u32>> = vec![None; chosen.len()];
    let mut owners = vec![0u8; chosen.len()];
    for (tet, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
        // Face `skip` of a tetrahedron is the one opposite its node `skip`.
        for (skip, local) in ElementKind::Tetrahedra.faces().iter().enumerate() {
            let face = [tet[local[0]], tet[local[1]], tet[local[2]]];
            if let Some(&i) = wanted.get(&key(&face)) {
                opposite[i] = Some(tet[skip]);
                owners[i] = owners[i].saturating_add(1);
            }
        }
    }
    let mut surface = Mesh::new(3);
    let mut local: HashMap<u32, u32> = HashMap::new();
    let mut volume_vertices = Vec::new();
    let mut nodes = Vec::with_capacity(3 * chosen.len());
    for (i, &t) in chosen.iter().enumerate() {
        let n = tris.nodes(t);
        let (Some(apex), 1) = (opposite[i], owners[i]) else {
            return Err(TerrainError::Surface(format!(
                "triangle {} (nodes {} {} {}, reference {reference}) is a face of {} \
                 tetrahedra, not 1",
                t + 1,
                n[0] + 1,
                n[1] + 1,
                n[2] + 1,
                owners[i]
            )));
        };
        let p = |v: u32| mesh.vertices[v as usize];
        let (a, b, c, d) = (p(n[0]), p(n[1]), p(n[2]), p(apex));
        let points_in = super::tet_volume6(a, b, c, d) > 0.0;
        let ordered = if points_in {
            [n[0], n[1], n[2]]
        } else {
            [n[0], n[2], n[1]]
        };
        for v in ordered {
            let next = local.len() as u32;
            let id = *local.entry(v).or_insert_with(|| {
                volume_vertices.push(v);
                surface.push_vertex(
                    mesh.vertices[v as usize],
                    mesh.vertex_refs.get(v as usize).copied().unwrap_or(0),
                );
                next
            });
            nodes.push(id);
        }
    }
    let refs = vec![reference; chosen.len()];
    surface.set_elements(Elements::from_parts(ElementKind::Triangles, nodes, refs));
    Ok(GroundSurface {
        mesh: surface,
        volume_vertices,
    })
}
