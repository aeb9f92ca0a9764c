//! What a mesh file holds: counts per kind, extent, references.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::meshio::{ElementKind, Format, MeshFile};

/// Axis-aligned box enclosing every vertex.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BoundingBox {
    /// Smallest x, y, z.
    pub min: [f64; 3],
    /// Largest x, y, z.
    pub max: [f64; 3],
}

impl BoundingBox {
    /// The box around `points`, or `None` when there are none.
    pub fn of(points: &[[f64; 3]]) -> Option<Self> {
        let first = *points.first()?;
        Some(points.iter().fold(
            Self {
                min: first,
                max: first,
            },
            |b, p| Self {
                min: std::array::from_fn(|k| b.min[k].min(p[k])),
                max: std::array::from_fn(|k| b.max[k].max(p[k])),
            },
        ))
    }
}

/// The summary `snowsim mesh info` prints: format, version, dimension, counts per kind,
/// bounding box and the references used per kind (with how many entities carry each).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// `mesh` (ASCII) or `meshb` (binary).
    pub format: &'static str,
    /// File format version, 1 to 4.
    pub version: u32,
    /// 2 or 3.
    pub dimension: u8,
    /// Entities per kind, keyed by lowercase plural kind (`vertices`, `tetrahedra`, …);
    /// kinds with none are omitted.
    pub counts: BTreeMap<&'static str, usize>,
    /// Extent of the vertices, absent for a mesh without vertices.
    pub bounding_box: Option<BoundingBox>,
    /// For each kind present, each reference used and how many entities carry it.
    pub references: BTreeMap<&'static str, BTreeMap<i32, usize>>,
    /// Keywords present in the file that were skipped because snowsim does not use them.
    pub skipped_keywords: Vec<String>,
}

impl Summary {
    /// Summarises a file that has been read.
    pub fn of(file: &MeshFile) -> Self {
        let mesh = &file.mesh;
        let mut counts = BTreeMap::new();
        let mut references = BTreeMap::new();
        if !mesh.vertices.is_empty() {
            counts.insert("vertices", mesh.vertices.len());
            references.insert("vertices", tally(&mesh.vertex_refs));
        }
        for kind in ElementKind::ALL {
            let elements = mesh.elements(kind);
            if !elements.is_empty() {
                counts.insert(kind.name(), elements.len());
                references.insert(kind.name(), tally(elements.refs()));
            }
        }
        Self {
            format: match file.format {
                Format::Ascii => "mesh",
                Format::Binary => "meshb",
            },
            version: file.version.number(),
            dimension: mesh.dimension,
            counts,
            bounding_box: BoundingBox::of(&mesh.vertices),
            references,
            skipped_keywords: file.skipped_keywords.clone(),
        }
    }
}

fn tally(refs: &[i32]) -> BTreeMap<i32, usize> {
    let mut counts = BTreeMap::new();
    for &r in refs {
        *counts.entry(r).or_insert(0) += 1;
    }
    counts
}
