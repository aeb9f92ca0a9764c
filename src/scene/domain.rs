//! Building a scene's domain mesh, and checking that its boundary is fully referenced.

use serde::Serialize;

use super::{BoundaryRefs, Domain, Scene, SceneError};
use crate::inspect::{CheckReport, check};
use crate::meshio::{self, ElementKind, Mesh};
use crate::renumber;
use crate::terrain::{Columns, GroundSurface, Side, Terrain, extract_surface};

/// A scene's domain, built: the tetrahedral mesh of the air and its ground surface.
#[derive(Clone, Debug, PartialEq)]
pub struct DomainMesh {
    /// The tetrahedra of the air, with boundary triangles.
    pub mesh: Mesh,
    /// The ground surface; its `volume_vertices` index `mesh`'s vertices.
    pub ground: GroundSurface,
    /// Which boundary reference is which side.
    pub boundary: BoundaryRefs,
    /// A terrain's columns: each vertex's grid column and level, each column's bare ground
    /// (what raising the ground by its snow regrades); `None` for a mesh file.
    pub columns: Option<Columns>,
}

/// The triangles of one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BoundaryCount {
    /// The side (`x_min`, …, `ground`, `top`).
    #[serde(serialize_with = "side_name")]
    pub side: Side,
    /// Its reference in the mesh.
    pub reference: i32,
    /// How many boundary triangles carry it.
    pub triangles: usize,
}

fn side_name<S: serde::Serializer>(side: &Side, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(side.name())
}

/// What `snowsim scene check` reports about a built domain.
#[derive(Clone, Debug, Serialize)]
pub struct DomainReport {
    /// Vertices of the volume mesh.
    pub vertices: usize,
    /// Tetrahedra.
    pub tetrahedra: usize,
    /// Triangles per side.
    pub boundary: Vec<BoundaryCount>,
    /// Tetrahedron faces on the boundary (one tetrahedron) with no triangle: the solver would
    /// not know their condition.
    pub unreferenced_faces: usize,
    /// Triangles that are not a boundary face (a face of two tetrahedra, or of none).
    pub stray_triangles: usize,
    /// Triangles of the ground surface.
    pub ground_triangles: usize,
    /// The validity checks of `snowsim mesh info --check`.
    pub check: CheckReport,
}

impl DomainReport {
    /// Whether the mesh passed every check and its boundary is exactly its triangles.
    pub fn passed(&self) -> bool {
        self.check.passed() && self.unreferenced_faces == 0 && self.stray_triangles == 0
    }
}

impl Scene {
    /// The files this scene is made of, each with what it is: the scene file, and its
    /// heightmap or its mesh file. No command may write over them ([`crate::output::rule`]).
    pub fn input_files(&self) -> Vec<(String, std::path::PathBuf)> {
        let mut files = vec![("the scene".to_string(), self.path.clone())];
        match &self.domain {
            Domain::Terrain {
                heightmap: Some(path),
                ..
            } => files.push(("the scene's heightmap".to_string(), path.clone())),
            Domain::Terrain { .. } => {}
            Domain::Mesh { path, .. } => files.push(("the scene's mesh".to_string(), path.clone())),
        }
        files
    }

    /// Builds the domain mesh: meshes the terrain, or reads the mesh file and checks its
    /// boundary references (every triangle's reference must be a side's, and the ground's
    /// must be used). With `renumber`, renumbers it for GPU kernels
    /// ([`renumber`](crate::renumber)).
    pub fn build_domain(&self, renumber: bool) -> Result<DomainMesh, SceneError> {
        let (mesh, ground, boundary, columns) = match &self.domain {
            Domain::Terrain { spec, image, .. } => {
                let terrain = Terrain::new(*spec, image.as_ref())
                    .map_err(|e| self.domain_error("domain", e.to_string()))?;
                (
                    terrain.volume_mesh(),
                    terrain.ground_surface(),
                    BoundaryRefs::default(),
                    Some(terrain.columns()),
                )
            }
            Domain::Mesh { path, boundary } => {
                let file = meshio::read(path)
                    .map_err(|e| self.domain_error("domain.mesh", e.to_string()))?;
                let mesh = file.mesh;
                if mesh.count(ElementKind::Tetrahedra) == 0 {
                    return Err(self.domain_error(
                        "domain.mesh",
                        format!("{} has no tetrahedra", path.display()),
                    ));
                }
                let mut foreign: std::collections::BTreeMap<i32, usize> = Default::default();
                for &r in mesh.elements(ElementKind::Triangles).refs() {
                    if boundary.side(r).is_none() {
                        *foreign.entry(r).or_insert(0) += 1;
                    }
                }
                if let Some((r, n)) = foreign.iter().next() {
                    return Err(self.domain_error(
                        "domain.boundary",
                        format!(
                            "{n} triangles of {} have reference {r}, which is no side's ({}); \
                             set the references in [domain.boundary]",
                            path.display(),
                            Side::ALL
                                .iter()
                                .map(|&s| format!("{s} {}", boundary.reference(s)))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
                let ground = extract_surface(&mesh, boundary.ground)
                    .map_err(|e| self.domain_error("domain.boundary.ground", e.to_string()))?;
                (mesh, ground, *boundary, None)
            }
        };
        let mut domain = DomainMesh {
            mesh,
            ground,
            boundary,
            columns,
        };
        if renumber {
            let r = renumber::renumber(&domain.mesh)
                .map_err(|e| self.domain_error("domain", e.to_string()))?;
            let mut new_index = vec![0u32; r.vertex_order.len()];
            for (new, &old) in r.vertex_order.iter().enumerate() {
                new_index[old as usize] = new as u32;
            }
            for v in &mut domain.ground.volume_vertices {
                *v = new_index[*v as usize];
            }
            if let Some(columns) = &domain.columns {
                domain.columns = Some(
                    columns
                        .renumbered(&r.vertex_order)
                        .map_err(|e| self.domain_error("domain", e.to_string()))?,
                );
            }
            domain.mesh = r.mesh;
        }
        Ok(domain)
    }

    fn domain_error(&self, key: &str, message: String) -> SceneError {
        SceneError::Domain {
            path: self.path.clone(),
            key: key.into(),
            message,
        }
    }
}

impl DomainMesh {
    /// Counts per side, boundary faces without a triangle, stray triangles, and the validity
    /// checks.
    pub fn report(&self) -> DomainReport {
        let (unreferenced_faces, stray_triangles) = boundary_mismatch(&self.mesh);
        let refs = self.mesh.elements(ElementKind::Triangles).refs();
        DomainReport {
            vertices: self.mesh.vertices.len(),
            tetrahedra: self.mesh.count(ElementKind::Tetrahedra),
            boundary: Side::ALL
                .into_iter()
                .map(|side| {
                    let reference = self.boundary.reference(side);
                    BoundaryCount {
                        side,
                        reference,
                        triangles: refs.iter().filter(|&&r| r == reference).count(),
                    }
                })
                .collect(),
            unreferenced_faces,
            stray_triangles,
            ground_triangles: self.ground.mesh.count(ElementKind::Triangles),
            check: check(&self.mesh),
        }
    }
}

/// (tetrahedron faces on the boundary without a triangle, triangles that are not such a face).
pub fn boundary_mismatch(mesh: &Mesh) -> (usize, usize) {
    let sorted = |t: &[u32]| {
        let mut k = [t[0], t[1], t[2]];
        k.sort_unstable();
        k
    };
    let mut faces: Vec<[u32; 3]> = Vec::with_capacity(4 * mesh.count(ElementKind::Tetrahedra));
    for (t, _) in mesh.elements(ElementKind::Tetrahedra).iter() {
        for local in ElementKind::Tetrahedra.faces() {
            faces.push(sorted(&[t[local[0]], t[local[1]], t[local[2]]]));
        }
    }
    faces.sort_unstable();
    let boundary: Vec<[u32; 3]> = faces
        .chunk_by(|a, b| a == b)
        .filter(|run| run.len() == 1)
        .map(|run| run[0])
        .collect();
    let mut tris: Vec<[u32; 3]> = mesh
        .elements(ElementKind::Triangles)
        .iter()
        .map(|(t, _)| sorted(t))
        .collect();
    tris.sort_unstable();
    let unreferenced = boundary
        .iter()
        .filter(|f| tris.binary_search(f).is_err())
        .count();
    let stray = tris
        .iter()
        .filter(|t| boundary.binary_search(t).is_err())
        .count();
    (unreferenced, stray)
}
