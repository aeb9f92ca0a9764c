//! Validity checks of a mesh: what `snowsim mesh info --check` reports.
//!
//! Node indices out of range never get this far: the reader rejects them with the file
//! location. What is checked here is what a valid file can still get wrong: non-finite
//! coordinates, degenerate and inverted elements, duplicated elements, and faces shared by more
//! than two tetrahedra.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::geometry::{diameter, measure, min_corner};
use crate::meshio::{ElementKind, Mesh};

/// Relative size below which an element's measure counts as zero: `|measure| <= EPS·size^dim`.
const EPS: f64 = 1e-12;

/// The categories of problem the check looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// A vertex coordinate is NaN or infinite.
    NonFiniteVertex,
    /// An element repeats a node, or has (relatively) zero length, area or volume.
    Degenerate,
    /// A solid (or a planar surface element of a 2D mesh) has negative measure.
    Inverted,
    /// An element has the same node set as an earlier one of its kind.
    Duplicate,
    /// A triangle is a face of more than two tetrahedra.
    NonManifoldFace,
    /// Two tetrahedra share a face but lie on the same side of it (they overlap).
    FoldedFace,
    /// An element refers to a vertex that does not exist (only meshes built in code; the
    /// reader rejects such files).
    IndexOutOfRange,
    /// The file has no `End` keyword: it may have been cut short at a keyword boundary.
    MissingEnd,
    /// An element's measure overflows double precision (finite coordinates, too far apart to
    /// measure): nothing can be said of its shape.
    Unmeasurable,
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NonFiniteVertex => "non-finite vertex coordinates",
            Self::Degenerate => "degenerate elements",
            Self::Inverted => "inverted elements",
            Self::Duplicate => "duplicated elements",
            Self::NonManifoldFace => "faces shared by more than two tetrahedra",
            Self::FoldedFace => "faces whose two tetrahedra overlap",
            Self::IndexOutOfRange => "node indices out of range",
            Self::MissingEnd => "files without End (cut short?)",
            Self::Unmeasurable => "elements too large to measure in double precision",
        })
    }
}

/// One problem found, with enough detail to find it in the file (numbers are 1-based, as in
/// the file).
#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    /// Category.
    pub kind: ProblemKind,
    /// Human-readable description naming the entity.
    pub detail: String,
}

/// Everything the check found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckReport {
    /// Number of problems per category.
    pub counts: BTreeMap<ProblemKind, usize>,
    /// The first few problems of each category, as examples.
    pub examples: Vec<Problem>,
    /// Triangles that are a face of exactly one tetrahedron (informative, not a problem).
    pub boundary_faces: usize,
}

/// How many examples of each category a report keeps.
const EXAMPLES_PER_KIND: usize = 10;

impl CheckReport {
    /// Whether no problem was found.
    pub fn passed(&self) -> bool {
        self.counts.values().all(|&n| n == 0)
    }

    /// Records that the file read had no `End` keyword ([`crate::meshio::MeshFile::ended`]):
    /// what a file cut short at a keyword boundary looks like.
    pub fn missing_end(&mut self, path: &std::path::Path) {
        self.add(ProblemKind::MissingEnd, || {
            format!(
                "{} has no End keyword after its last keyword: it may have been cut short",
                path.display()
            )
        });
    }

    fn add(&mut self, kind: ProblemKind, detail: impl FnOnce() -> String) {
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        if *n <= EXAMPLES_PER_KIND {
            self.examples.push(Problem {
                kind,
                detail: detail(),
            });
        }
    }
}

/// Runs every check on `mesh`. A mesh whose node indices are out of range gets that one
/// problem and no further checks (they would need the missing vertices).
pub fn check(mesh: &Mesh) -> CheckReport {
    let mut report = CheckReport::default();
    if let Err(e) = mesh.validate_indices() {
        report.add(ProblemKind::IndexOutOfRange, || e.to_string());
        return report;
    }
    for (i, p) in mesh.vertices.iter().enumerate() {
        if p.iter().any(|x| !x.is_finite()) {
            report.add(ProblemKind::NonFiniteVertex, || {
                format!("vertex {} at {:?}", i + 1, p)
            });
        }
    }
    for kind in ElementKind::ALL {
        check_shapes(mesh, kind, &mut report);
        check_duplicates(mesh, kind, &mut report);
    }
    check_tetrahedron_faces(mesh, &mut report);
    report
}

fn check_shapes(mesh: &Mesh, kind: ElementKind, report: &mut CheckReport) {
    let planar = mesh.dimension == 2;
    let signed = kind.topological_dimension() == 3 || (planar && kind.topological_dimension() == 2);
    let power = i32::from(kind.topological_dimension());
    for (e, (nodes, _)) in mesh.elements(kind).iter().enumerate() {
        let name = || format!("{} {} (nodes {})", singular(kind), e + 1, one_based(nodes));
        if has_repeated_node(nodes) {
            report.add(ProblemKind::Degenerate, || {
                format!("{} repeats a node", name())
            });
            continue;
        }
        let points: Vec<[f64; 3]> = nodes.iter().map(|&n| mesh.vertices[n as usize]).collect();
        if points.iter().flatten().any(|c| !c.is_finite()) {
            continue; // reported with the vertex
        }
        let value = measure(kind, &points, planar);
        let size = diameter(&points);
        let scale = size.powi(power);
        if !(value.is_finite() && scale.is_finite()) {
            report.add(ProblemKind::Unmeasurable, || {
                format!(
                    "{} spans {size:e} m: its {} overflows double precision",
                    name(),
                    measure_name(kind)
                )
            });
            continue;
        }
        if value.abs() <= EPS * scale {
            report.add(ProblemKind::Degenerate, || {
                format!("{} has zero {}", name(), measure_name(kind))
            });
        } else if signed && value < 0.0 {
            report.add(ProblemKind::Inverted, || {
                format!("{} has negative {} {value:e}", name(), measure_name(kind))
            });
        } else if let Some(corner) = min_corner(kind, &points, planar)
            && corner <= EPS * scale
        {
            report.add(ProblemKind::Inverted, || {
                format!(
                    "{} is tangled: a corner has non-positive {} {corner:e}",
                    name(),
                    measure_name(kind)
                )
            });
        }
    }
}

fn check_duplicates(mesh: &Mesh, kind: ElementKind, report: &mut CheckReport) {
    let elements = mesh.elements(kind);
    let mut keyed: Vec<(Vec<u32>, usize)> = elements
        .iter()
        .enumerate()
        .map(|(e, (nodes, _))| {
            let mut key = nodes.to_vec();
            key.sort_unstable();
            (key, e)
        })
        .collect();
    keyed.sort_unstable();
    for pair in keyed.windows(2) {
        if pair[0].0 == pair[1].0 {
            report.add(ProblemKind::Duplicate, || {
                format!(
                    "{} {} has the same nodes as {} {}",
                    singular(kind),
                    pair[1].1 + 1,
                    singular(kind),
                    pair[0].1 + 1
                )
            });
        }
    }
}

fn check_tetrahedron_faces(mesh: &Mesh, report: &mut CheckReport) {
    let tets = mesh.elements(ElementKind::Tetrahedra);
    // Each face as its sorted nodes and the parity of the sort: two tetrahedra on opposite
    // sides of a face see it with opposite orientations, so their parities differ.
    let mut faces: Vec<([u32; 3], bool)> = Vec::with_capacity(4 * tets.len());
    // Tetrahedra that repeat a node are already reported as degenerate; their "faces" would
    // only add false non-manifold reports.
    for (nodes, _) in tets.iter().filter(|(nodes, _)| !has_repeated_node(nodes)) {
        // Each face turns outward when the tetrahedron is positive.
        for local in ElementKind::Tetrahedra.faces() {
            let face = [0, 1, 2].map(|k| nodes[local[k]]);
            faces.push(sorted_with_parity(face));
        }
    }
    faces.sort_unstable();
    for run in faces.chunk_by(|a, b| a.0 == b.0) {
        match run {
            [_] => report.boundary_faces += 1,
            [a, b] if a.1 == b.1 => report.add(ProblemKind::FoldedFace, || {
                format!(
                    "the two tetrahedra on face with nodes {} lie on the same side of it",
                    one_based(&a.0)
                )
            }),
            [_, _] => {}
            more => report.add(ProblemKind::NonManifoldFace, || {
                format!(
                    "face with nodes {} belongs to {} tetrahedra",
                    one_based(&more[0].0),
                    more.len()
                )
            }),
        }
    }
}

/// The three nodes sorted, and whether sorting took an odd number of swaps.
fn sorted_with_parity(mut t: [u32; 3]) -> ([u32; 3], bool) {
    let mut odd = false;
    for (i, j) in [(0, 1), (1, 2), (0, 1)] {
        if t[i] > t[j] {
            t.swap(i, j);
            odd = !odd;
        }
    }
    (t, odd)
}

fn has_repeated_node(nodes: &[u32]) -> bool {
    nodes
        .iter()
        .enumerate()
        .any(|(i, n)| nodes[i + 1..].contains(n))
}

fn one_based(nodes: &[u32]) -> String {
    nodes
        .iter()
        .map(|n| (u64::from(*n) + 1).to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn singular(kind: ElementKind) -> &'static str {
    match kind {
        ElementKind::Edges => "edge",
        ElementKind::Triangles => "triangle",
        ElementKind::Quadrilaterals => "quadrilateral",
        ElementKind::Tetrahedra => "tetrahedron",
        ElementKind::Pyramids => "pyramid",
        ElementKind::Prisms => "prism",
        ElementKind::Hexahedra => "hexahedron",
    }
}

fn measure_name(kind: ElementKind) -> &'static str {
    match kind.topological_dimension() {
        1 => "length",
        2 => "area",
        _ => "volume",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two positive tetrahedra sharing the face (1, 2, 3), in the libMeshb orientation.
    fn two_tets() -> Mesh {
        let mut mesh = Mesh::new(3);
        for p in [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [1.0, 1.0, 1.0],
        ] {
            mesh.push_vertex(p, 0);
        }
        let tets = mesh.elements_mut(ElementKind::Tetrahedra);
        tets.push(&[0, 1, 2, 3], 1);
        tets.push(&[1, 4, 2, 3], 1);
        mesh
    }

    #[test]
    fn coordinates_too_large_to_measure_are_not_called_zero_volume() {
        let mut mesh = Mesh::new(3);
        for p in [
            [0.0, 0.0, 0.0],
            [1e300, 0.0, 0.0],
            [0.0, 1e300, 0.0],
            [0.0, 0.0, 1e300],
        ] {
            mesh.push_vertex(p, 0);
        }
        mesh.elements_mut(ElementKind::Tetrahedra)
            .push(&[0, 1, 2, 3], 1);
        let report = check(&mesh);
        assert_eq!(
            report.counts.get(&ProblemKind::Degenerate),
            None,
            "{report:?}"
        );
        assert_eq!(report.counts[&ProblemKind::Unmeasurable], 1);
        assert!(
            report.examples[0].detail.contains("overflows"),
            "{report:?}"
        );
    }

    #[test]
    fn a_valid_mesh_passes_and_counts_its_boundary() {
        let mesh = two_tets();
        for (nodes, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
            let p: Vec<[f64; 3]> = nodes.iter().map(|&n| mesh.vertices[n as usize]).collect();
            assert!(measure(ElementKind::Tetrahedra, &p, false) > 0.0);
        }
        let report = check(&mesh);
        assert!(report.passed(), "{report:?}");
        assert_eq!(report.boundary_faces, 6);
    }

    #[test]
    fn each_problem_is_found_and_counted() {
        let mut mesh = two_tets();
        let tets = mesh.elements_mut(ElementKind::Tetrahedra);
        // Inverted, a duplicate of tetrahedron 1, and so a third tetrahedron on face (1, 2, 3).
        tets.push(&[0, 2, 1, 3], 2);
        tets.push(&[0, 0, 1, 2], 4); // repeats a node
        mesh.push_vertex([2.0, 0.0, 0.0], 0);
        mesh.push_vertex([f64::NAN, 0.0, 0.0], 0);
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[0, 1, 5], 1); // collinear: zero area
        let report = check(&mesh);
        assert!(!report.passed());
        assert_eq!(report.counts[&ProblemKind::Inverted], 1);
        assert_eq!(report.counts[&ProblemKind::Duplicate], 1);
        assert_eq!(report.counts[&ProblemKind::Degenerate], 2);
        assert_eq!(report.counts[&ProblemKind::NonManifoldFace], 1);
        assert_eq!(report.counts[&ProblemKind::NonFiniteVertex], 1);
        let duplicate = report
            .examples
            .iter()
            .find(|p| p.kind == ProblemKind::Duplicate)
            .unwrap();
        assert_eq!(
            duplicate.detail,
            "tetrahedron 3 has the same nodes as tetrahedron 1"
        );
    }

    #[test]
    fn overlapping_tetrahedra_on_one_side_of_a_face_are_found() {
        let mut mesh = two_tets();
        mesh.push_vertex([0.2, 0.2, 0.5], 0);
        // Positive, but on the same side of face (0, 1, 2) as tetrahedron 1.
        mesh.elements_mut(ElementKind::Tetrahedra)
            .push(&[0, 1, 2, 5], 1);
        let report = check(&mesh);
        assert_eq!(
            report.counts.get(&ProblemKind::FoldedFace),
            Some(&1),
            "{report:?}"
        );
        assert_eq!(report.counts.get(&ProblemKind::Inverted), None);
    }

    #[test]
    fn out_of_range_indices_are_a_problem_not_a_panic() {
        let mut mesh = two_tets();
        mesh.elements_mut(ElementKind::Tetrahedra)
            .push(&[0, 1, 2, 99], 1);
        let report = check(&mesh);
        assert_eq!(report.counts[&ProblemKind::IndexOutOfRange], 1);
    }

    #[test]
    fn planar_triangles_must_turn_counter_clockwise() {
        let mut mesh = Mesh::new(2);
        for p in [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]] {
            mesh.push_vertex(p, 0);
        }
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[0, 1, 2], 1);
        assert!(check(&mesh).passed());
        mesh.elements_mut(ElementKind::Triangles)
            .push(&[0, 2, 1], 1);
        let report = check(&mesh);
        assert_eq!(report.counts[&ProblemKind::Inverted], 1);
        assert_eq!(report.counts[&ProblemKind::Duplicate], 1);
    }
}
