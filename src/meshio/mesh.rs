//! The in-memory mesh: vertices with references and one [`Elements`] table per kind.

use super::element::{ElementKind, Elements};

/// A mesh as stored in `.mesh`/`.meshb` files, with 0-based node indices.
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// 2 or 3. Files of dimension 2 store two coordinates per vertex; in memory `z` is 0.
    pub dimension: u8,
    /// Vertex coordinates (`z` = 0 for dimension 2).
    pub vertices: Vec<[f64; 3]>,
    /// One reference per vertex; must have the length of `vertices` to be written.
    pub vertex_refs: Vec<i32>,
    /// Indexed by [`ElementKind::index`].
    elements: [Elements; 7],
}

/// An element uses a vertex index that the mesh does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{kind} element {element} (0-based) uses vertex index {index} but the mesh has \
     {vertex_count} vertices"
)]
pub struct IndexError {
    /// The element kind.
    pub kind: ElementKind,
    /// 0-based element number.
    pub element: usize,
    /// The 0-based vertex index.
    pub index: u32,
    /// Number of vertices in the mesh.
    pub vertex_count: usize,
}

/// A vertex coordinate that is not finite, or larger in magnitude than a computation takes.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error(
    "vertex {vertex} has {axis} = {}; coordinates must be finite and within ±{limit:e}{}",
    short_number(*value),
    if *limit < f64::MAX { " (the device computes in 32-bit reals)" } else { "" }
)]
pub struct CoordinateError {
    /// 1-based vertex number, as in the file.
    pub vertex: usize,
    /// `x`, `y` or `z`.
    pub axis: char,
    /// The coordinate.
    pub value: f64,
    /// The largest magnitude accepted.
    pub limit: f64,
}

impl Mesh {
    /// An empty mesh. `dimension` should be 2 or 3; [`to_bytes`](super::to_bytes) rejects others.
    pub fn new(dimension: u8) -> Mesh {
        Mesh {
            dimension,
            vertices: Vec::new(),
            vertex_refs: Vec::new(),
            elements: ElementKind::ALL.map(Elements::new),
        }
    }

    /// Appends a vertex and its reference.
    pub fn push_vertex(&mut self, xyz: [f64; 3], reference: i32) {
        self.vertices.push(xyz);
        self.vertex_refs.push(reference);
    }

    /// The elements of `kind`.
    pub fn elements(&self, kind: ElementKind) -> &Elements {
        &self.elements[kind.index()]
    }

    /// The elements of `kind`, to add to.
    pub fn elements_mut(&mut self, kind: ElementKind) -> &mut Elements {
        &mut self.elements[kind.index()]
    }

    /// Replaces the elements of their kind.
    pub(crate) fn set_elements(&mut self, elements: Elements) {
        let i = elements.kind().index();
        self.elements[i] = elements;
    }

    /// Number of elements of `kind`.
    pub fn count(&self, kind: ElementKind) -> usize {
        self.elements(kind).len()
    }

    /// Checks that every element's node indices are below the number of vertices; reports the
    /// first element (by kind order in [`ElementKind::ALL`], then element order) that is not.
    pub fn validate_indices(&self) -> Result<(), IndexError> {
        let vertex_count = self.vertices.len();
        for elements in &self.elements {
            if let Some(pos) = first_out_of_range(elements.node_slice(), vertex_count) {
                let kind = elements.kind();
                return Err(IndexError {
                    kind,
                    element: pos / kind.nodes(),
                    index: elements.node_slice()[pos],
                    vertex_count,
                });
            }
        }
        Ok(())
    }
}

impl Mesh {
    /// Checks that every coordinate is finite and at most `limit` in magnitude; reports the
    /// first vertex that is not.
    pub fn validate_coordinates(&self, limit: f64) -> Result<(), CoordinateError> {
        for (i, p) in self.vertices.iter().enumerate() {
            if let Some(axis) = (0..3).find(|&a| p[a].is_nan() || p[a].abs() > limit) {
                return Err(CoordinateError {
                    vertex: i + 1,
                    axis: ['x', 'y', 'z'][axis],
                    value: p[axis],
                    limit,
                });
            }
        }
        Ok(())
    }
}

/// `1e300` rather than its 301 digits; moderate numbers as they are.
fn short_number(value: f64) -> String {
    if value.is_finite() && value.abs() >= 1e16 {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// Position of the first index that is not below `vertex_count`.
pub(crate) fn first_out_of_range(nodes: &[u32], vertex_count: usize) -> Option<usize> {
    // Fast path: one branch-free pass for the maximum, then locate only on failure.
    let max = nodes.iter().copied().max()?;
    if (max as usize) < vertex_count {
        return None;
    }
    nodes.iter().position(|&v| v as usize >= vertex_count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_reports_first_bad_element() {
        let mut m = Mesh::new(3);
        for i in 0..4 {
            m.push_vertex([i as f64, 0.0, 0.0], 0);
        }
        m.elements_mut(ElementKind::Triangles).push(&[0, 1, 2], 1);
        assert_eq!(m.validate_indices(), Ok(()));
        m.elements_mut(ElementKind::Triangles).push(&[0, 1, 3], 1);
        m.elements_mut(ElementKind::Triangles).push(&[0, 4, 3], 1);
        m.elements_mut(ElementKind::Triangles).push(&[0, 9, 3], 1);
        let e = m.validate_indices().unwrap_err();
        assert_eq!(
            e,
            IndexError {
                kind: ElementKind::Triangles,
                element: 2,
                index: 4,
                vertex_count: 4
            }
        );
        assert_eq!(m.count(ElementKind::Triangles), 4);
        assert_eq!(m.count(ElementKind::Edges), 0);
    }

    #[test]
    fn first_out_of_range_cases() {
        assert_eq!(first_out_of_range(&[], 0), None);
        assert_eq!(first_out_of_range(&[0, 1], 2), None);
        assert_eq!(first_out_of_range(&[0, 2, 5], 2), Some(1));
        assert_eq!(first_out_of_range(&[u32::MAX], usize::MAX), None);
    }
}
