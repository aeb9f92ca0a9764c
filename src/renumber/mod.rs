//! Mesh renumbering for GPU kernels: vertices and elements along a 3D Hilbert curve, entities
//! sorted by uplink degree class, and the numbering score that measures the result.
//!
//! What GMlib's users get from LPlib's `hilbert -in raw.meshb -out renum.meshb -gmlib`:
//!
//! 1. every vertex gets the key of its position along a Hilbert curve over the mesh's bounding
//!    cube ([`hilbert`]);
//! 2. vertices are ordered by the degree class of their ball of elements of the *degree kind*
//!    (the kind of highest dimension, the most numerous if several), then by key: each class
//!    of gml's vertex → element uplink is one contiguous range of vertices, and the curve order
//!    is kept inside it (see [`degree`]);
//! 3. each element kind is ordered by the key of its elements' barycentres; edges, which have a
//!    shell uplink of several classes too, by the class of their shell in the degree kind
//!    first;
//! 4. node indices are relabelled; every element keeps its node order (so its orientation) and
//!    reference, every vertex its coordinates and reference.
//!
//! The result is the same mesh: the same elements, given by their nodes' coordinates, with the
//! same references. Everything is O(n log n) (sorts of 128-bit keys); keys, sorts and
//! relabelling run on every core (rayon).
//!
//! ```
//! use snowsim::meshio::{ElementKind, generate::tet_grid};
//! use snowsim::renumber::{numbering_score, renumber};
//!
//! let mesh = tet_grid([6, 6, 6]);
//! let renumbered = renumber(&mesh)?;
//! assert_eq!(renumbered.mesh.count(ElementKind::Tetrahedra), 6 * 216);
//! // Vertex i of the new mesh is vertex vertex_order[i] of the old one.
//! let old = renumbered.vertex_order[0] as usize;
//! assert_eq!(renumbered.mesh.vertices[0], mesh.vertices[old]);
//! assert!(numbering_score(&renumbered.mesh).percent().unwrap() > 90.0);
//! # Ok::<(), snowsim::renumber::RenumberError>(())
//! ```

pub mod degree;
pub mod hilbert;
mod score;

use glam::DVec3;
use rayon::prelude::*;

pub use score::{
    CacheModel, KindScore, NumberingScore, numbering_score, numbering_score_of_tables,
    numbering_score_with,
};

use crate::mesh_kind::MeshKind;
use crate::meshio::{ElementKind, Elements, IndexError, Mesh};
use hilbert::HilbertBox;

/// Why a mesh cannot be renumbered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenumberError {
    /// An element uses a vertex the mesh does not have.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// A vertex coordinate is NaN or infinite, so it has no place on the curve.
    #[error("vertex {vertex} (1-based) has a non-finite coordinate {coordinates:?}")]
    NonFinite {
        /// 1-based vertex number, as in the file.
        vertex: usize,
        /// Its coordinates.
        coordinates: [f64; 3],
    },
    /// More elements of one kind than 32-bit indices can number.
    #[error("{count} {kind} are more than 32-bit indices can number")]
    TooMany {
        /// The element kind.
        kind: ElementKind,
        /// How many there are.
        count: usize,
    },
}

/// How to renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Sort vertices (and edges) by uplink degree class before the curve order, so that each
    /// class is a contiguous range (default). Without it, the order is the curve's alone.
    pub sort_by_degree: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            sort_by_degree: true,
        }
    }
}

/// Which step renumbering is at, for progress reports: step `step` of `steps`, starting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress<'a> {
    /// 0-based number of the step starting now.
    pub step: usize,
    /// Number of steps in all.
    pub steps: usize,
    /// What the step does, e.g. `ordering the tetrahedra`.
    pub what: &'a str,
}

/// The degree classes of one uplink after renumbering: what gml will build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UplinkClasses {
    /// Source kind (vertices or edges).
    pub from: MeshKind,
    /// Destination kind (the degree kind).
    pub to: MeshKind,
    /// (table width, rows) per class, narrowest first; each a contiguous range of entities
    /// when sorted by degree, in this order.
    pub tables: Vec<(usize, usize)>,
    /// Whether the entities were sorted by this uplink's classes.
    pub sorted: bool,
}

/// A renumbered mesh and the permutations that made it.
#[derive(Clone, Debug, PartialEq)]
pub struct Renumbering {
    /// The renumbered mesh.
    pub mesh: Mesh,
    /// For each new vertex, its index in the original mesh.
    pub vertex_order: Vec<u32>,
    /// For each element kind (indexed like [`ElementKind::ALL`]), for each new element, its
    /// index in the original mesh.
    element_orders: [Vec<u32>; 7],
    /// The uplinks whose classes were computed (vertex balls, edge shells), empty when the
    /// mesh has no elements.
    pub uplinks: Vec<UplinkClasses>,
}

impl Renumbering {
    /// For each new element of `kind`, its index in the original mesh.
    pub fn element_order(&self, kind: ElementKind) -> &[u32] {
        let i = ElementKind::ALL
            .iter()
            .position(|&k| k == kind)
            .unwrap_or(0);
        &self.element_orders[i]
    }
}

/// The kind whose balls decide the degree classes: of highest topological dimension, the most
/// numerous among those (the first in [`ElementKind::ALL`] order on a tie); `None` without
/// elements.
pub fn degree_kind(mesh: &Mesh) -> Option<ElementKind> {
    ElementKind::ALL
        .into_iter()
        .filter(|&k| mesh.count(k) > 0)
        .max_by(|&a, &b| {
            (a.topological_dimension(), mesh.count(a))
                .cmp(&(b.topological_dimension(), mesh.count(b)))
                .then(b.cmp(&a))
        })
}

/// Renumbers `mesh` with the default options (Hilbert curve and degree sort).
pub fn renumber(mesh: &Mesh) -> Result<Renumbering, RenumberError> {
    renumber_with(mesh, &Options::default(), |_| {})
}

/// Renumbers `mesh`, calling `progress` as each step starts.
pub fn renumber_with(
    mesh: &Mesh,
    options: &Options,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<Renumbering, RenumberError> {
    mesh.validate_indices()?;
    let kinds: Vec<ElementKind> = ElementKind::ALL
        .into_iter()
        .filter(|&k| mesh.count(k) > 0)
        .collect();
    for &kind in &kinds {
        if mesh.count(kind) > u32::MAX as usize {
            return Err(RenumberError::TooMany {
                kind,
                count: mesh.count(kind),
            });
        }
    }
    let Some(cube) = HilbertBox::around(&mesh.vertices) else {
        if let Some(v) = mesh
            .vertices
            .iter()
            .position(|p| p.iter().any(|x| !x.is_finite()))
        {
            return Err(RenumberError::NonFinite {
                vertex: v + 1,
                coordinates: mesh.vertices[v],
            });
        }
        // No vertices, hence no elements either.
        return Ok(Renumbering {
            mesh: mesh.clone(),
            vertex_order: Vec::new(),
            element_orders: Default::default(),
            uplinks: Vec::new(),
        });
    };

    let names: Vec<String> = kinds
        .iter()
        .flat_map(|k| [format!("ordering the {k}"), format!("relabelling the {k}")])
        .collect();
    let steps = 2 + names.len();
    let mut step = 0;
    let mut report = |what: &str| {
        progress(Progress { step, steps, what });
        step += 1;
    };

    let top = degree_kind(mesh);
    let mut uplinks = Vec::new();

    report("degrees of the vertices");
    let vertex_classes = match top {
        Some(top) => {
            let base = degree::base_width(MeshKind::Vertices, MeshKind::from_element(top));
            let degrees = degree::vertex_degrees(mesh, top);
            uplinks.push(UplinkClasses {
                from: MeshKind::Vertices,
                to: MeshKind::from_element(top),
                tables: degree::class_tables(&degrees, base),
                sorted: options.sort_by_degree,
            });
            classes(&degrees, base, options.sort_by_degree)
        }
        None => vec![0; mesh.vertices.len()],
    };

    report("ordering the vertices");
    let vertex_order = order(
        mesh.vertices.par_iter().map(|&p| cube.key(p)),
        &vertex_classes,
    );
    let mut new_index = vec![0u32; vertex_order.len()];
    for (new, &old) in vertex_order.iter().enumerate() {
        new_index[old as usize] = new as u32;
    }
    let mut out = Mesh::new(mesh.dimension);
    out.vertices = vertex_order
        .par_iter()
        .map(|&old| mesh.vertices[old as usize])
        .collect();
    out.vertex_refs = vertex_order
        .iter()
        .map(|&old| mesh.vertex_refs.get(old as usize).copied().unwrap_or(0))
        .collect();

    let mut element_orders: [Vec<u32>; 7] = Default::default();
    let mut names = names.iter();
    for &kind in &kinds {
        let elements = mesh.elements(kind);
        let n = kind.nodes();
        report(names.next().map_or("", String::as_str));
        let shell_kind = top
            .filter(|&t| kind == ElementKind::Edges && t.topological_dimension() > 1 && t != kind);
        let element_classes = match shell_kind {
            Some(top) => {
                let base = degree::base_width(MeshKind::Edges, MeshKind::from_element(top));
                let degrees = degree::edge_degrees(mesh, top);
                uplinks.push(UplinkClasses {
                    from: MeshKind::Edges,
                    to: MeshKind::from_element(top),
                    tables: degree::class_tables(&degrees, base),
                    sorted: options.sort_by_degree,
                });
                classes(&degrees, base, options.sort_by_degree)
            }
            None => vec![0; elements.len()],
        };
        let keys = elements.node_slice().par_chunks_exact(n).map(|nodes| {
            let sum: DVec3 = nodes
                .iter()
                .map(|&v| DVec3::from(mesh.vertices[v as usize]))
                .sum();
            cube.key((sum / n as f64).to_array())
        });
        let element_order = order(keys, &element_classes);

        report(names.next().map_or("", String::as_str));
        let mut nodes = vec![0u32; elements.node_slice().len()];
        nodes
            .par_chunks_exact_mut(n)
            .zip(element_order.par_iter())
            .for_each(|(new, &old)| {
                for (slot, &v) in new.iter_mut().zip(elements.nodes(old as usize)) {
                    *slot = new_index[v as usize];
                }
            });
        let refs = element_order
            .iter()
            .map(|&old| elements.refs()[old as usize])
            .collect();
        out.set_elements(Elements::from_parts(kind, nodes, refs));
        element_orders[ElementKind::ALL
            .iter()
            .position(|&k| k == kind)
            .unwrap_or(0)] = element_order;
    }
    Ok(Renumbering {
        mesh: out,
        vertex_order,
        element_orders,
        uplinks,
    })
}

/// Each entity's degree class, or all 0 when not sorting by degree.
fn classes(degrees: &[u32], base: usize, sort: bool) -> Vec<u8> {
    if sort {
        degrees
            .par_iter()
            .map(|&d| degree::degree_class(d as usize, base))
            .collect()
    } else {
        vec![0; degrees.len()]
    }
}

/// The entities sorted by (class, curve key, original index): new → old.
fn order(keys: impl IndexedParallelIterator<Item = u64>, classes: &[u8]) -> Vec<u32> {
    let mut sort_keys: Vec<u128> = keys
        .zip(classes.par_iter())
        .enumerate()
        .map(|(i, (key, &class))| (u128::from(class) << 96) | (u128::from(key) << 32) | i as u128)
        .collect();
    sort_keys.par_sort_unstable();
    sort_keys.into_par_iter().map(|k| k as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meshio::generate::tet_grid;

    #[test]
    fn orders_are_permutations_and_nodes_follow_them() {
        let mesh = tet_grid([3, 4, 2]);
        let r = renumber(&mesh).unwrap();
        let mut seen = r.vertex_order.clone();
        seen.sort_unstable();
        assert!(seen.iter().enumerate().all(|(i, &v)| v as usize == i));
        for kind in [ElementKind::Tetrahedra, ElementKind::Triangles] {
            let order = r.element_order(kind);
            assert_eq!(order.len(), mesh.count(kind));
            for (new, &old) in order.iter().enumerate() {
                let (old_nodes, old_ref) = mesh.elements(kind).get(old as usize).unwrap();
                let (new_nodes, new_ref) = r.mesh.elements(kind).get(new).unwrap();
                assert_eq!(old_ref, new_ref);
                for (a, b) in old_nodes.iter().zip(new_nodes) {
                    assert_eq!(r.vertex_order[*b as usize], *a);
                }
            }
        }
        assert_eq!(r.uplinks.len(), 1);
        assert_eq!(r.uplinks[0].to, MeshKind::Tetrahedra);
    }

    #[test]
    fn degree_kind_prefers_dimension_then_count() {
        let mut mesh = tet_grid([1, 1, 1]);
        assert_eq!(degree_kind(&mesh), Some(ElementKind::Tetrahedra));
        for _ in 0..10 {
            mesh.elements_mut(ElementKind::Prisms)
                .push(&[0, 1, 2, 3, 4, 5], 0);
        }
        assert_eq!(degree_kind(&mesh), Some(ElementKind::Prisms));
        assert_eq!(degree_kind(&Mesh::new(3)), None);
    }

    #[test]
    fn bad_meshes_are_errors() {
        let mut mesh = tet_grid([1, 1, 1]);
        mesh.vertices[3][1] = f64::INFINITY;
        assert!(matches!(
            renumber(&mesh),
            Err(RenumberError::NonFinite { vertex: 4, .. })
        ));
        let mut mesh = tet_grid([1, 1, 1]);
        mesh.elements_mut(ElementKind::Edges).push(&[0, 99], 0);
        assert!(matches!(renumber(&mesh), Err(RenumberError::Index(_))));
        let empty = renumber(&Mesh::new(3)).unwrap();
        assert_eq!(empty.mesh, Mesh::new(3));
    }
}
