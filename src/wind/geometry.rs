//! The geometry the wind's operators need, computed once on the host in f64: each
//! tetrahedron's gradient coefficients, each vertex's lumped volume, the face neighbours.

use glam::DVec3;
use rayon::prelude::*;

use super::error::{Result, WindError};

/// Per tetrahedron, `(V_T / 4) ∇φ_j` for its four vertices `j` (xyz, w zero), and the lumped
/// volumes of the vertices.
#[derive(Clone, Debug)]
pub struct Geometry {
    /// `4 × tetrahedra` coefficient vectors, tetrahedron by tetrahedron.
    pub coefficients: Vec<[f32; 4]>,
    /// `m_i = Σ_{T∋i} V_T / 4`, m³.
    pub lumped: Vec<f64>,
    /// Total volume of the mesh, m³.
    pub volume: f64,
    /// For each tetrahedron, the shortest of its four altitudes (m): its thickness, for the
    /// Courant number.
    pub thickness: Vec<f64>,
}

/// Volumes below this fraction of the cube of the mean edge length are degenerate.
const DEGENERATE: f64 = 1e-9;

impl Geometry {
    /// Computes the coefficients and volumes. A degenerate tetrahedron, or one oriented unlike
    /// the first (inverted), is an error naming it.
    pub fn new(vertices: &[[f64; 3]], tets: &[[u32; 4]]) -> Result<Self> {
        let first = tets
            .first()
            .map(|t| signed_volume(vertices, t).signum())
            .ok_or(WindError::Mesh("the mesh has no tetrahedra".into()))?;
        let per_tet: Vec<([[f32; 4]; 4], f64, f64)> = tets
            .par_iter()
            .enumerate()
            .map(|(e, t)| tet_terms(vertices, e, t, first))
            .collect::<Result<_>>()?;
        let mut lumped = vec![0.0; vertices.len()];
        let mut coefficients = Vec::with_capacity(4 * tets.len());
        let mut thickness = Vec::with_capacity(tets.len());
        let mut volume = 0.0;
        for (t, (c, v, h)) in tets.iter().zip(per_tet) {
            for &n in t {
                lumped[n as usize] += v / 4.0;
            }
            coefficients.extend_from_slice(&c);
            thickness.push(h);
            volume += v;
        }
        Ok(Self {
            coefficients,
            lumped,
            volume,
            thickness,
        })
    }
}

fn point(vertices: &[[f64; 3]], i: u32) -> DVec3 {
    DVec3::from(vertices[i as usize])
}

fn signed_volume(vertices: &[[f64; 3]], t: &[u32; 4]) -> f64 {
    let a = point(vertices, t[0]);
    let (e1, e2, e3) = (
        point(vertices, t[1]) - a,
        point(vertices, t[2]) - a,
        point(vertices, t[3]) - a,
    );
    e1.dot(e2.cross(e3)) / 6.0
}

/// `(V/4) ∇φ_j`, the volume and the thickness of tetrahedron `e`.
fn tet_terms(
    vertices: &[[f64; 3]],
    e: usize,
    t: &[u32; 4],
    orientation: f64,
) -> Result<([[f32; 4]; 4], f64, f64)> {
    let a = point(vertices, t[0]);
    let (e1, e2, e3) = (
        point(vertices, t[1]) - a,
        point(vertices, t[2]) - a,
        point(vertices, t[3]) - a,
    );
    let det = e1.dot(e2.cross(e3));
    let volume = det.abs() / 6.0;
    let edges = [e1, e2, e3, e2 - e1, e3 - e1, e3 - e2];
    let mean_edge = edges.iter().map(|e| e.length()).sum::<f64>() / 6.0;
    if volume.is_nan() || volume <= DEGENERATE * mean_edge.powi(3) {
        return Err(WindError::Mesh(format!(
            "tetrahedron {} (1-based) is degenerate: volume {volume:.3e} m³ for edges of \
             {mean_edge:.3e} m",
            e + 1
        )));
    }
    if det.signum() != orientation {
        return Err(WindError::Mesh(format!(
            "tetrahedron {} (1-based) is inverted: oriented unlike tetrahedron 1",
            e + 1
        )));
    }
    let g1 = e2.cross(e3) / det;
    let g2 = e3.cross(e1) / det;
    let g3 = e1.cross(e2) / det;
    let g0 = -(g1 + g2 + g3);
    let c = [g0, g1, g2, g3].map(|g| {
        let c = g * (volume / 4.0);
        [c.x as f32, c.y as f32, c.z as f32, 0.0]
    });
    // Altitude of vertex j = 1 / |∇φ_j|.
    let thickness = [g0, g1, g2, g3]
        .iter()
        .map(|g| 1.0 / g.length())
        .fold(f64::INFINITY, f64::min);
    Ok((c, volume, thickness))
}

/// The tetrahedron across each face (face `j` opposite local vertex `j`), `-1` on the
/// boundary; an error if a face is shared by more than two tetrahedra.
pub fn neighbours(tets: &[[u32; 4]]) -> Result<Vec<[i32; 4]>> {
    use crate::gml::{MeshKind, topology};
    let nodes: Vec<i32> = tets.iter().flatten().map(|&v| v as i32).collect();
    let flat = topology::neighbours(MeshKind::Tetrahedra, MeshKind::Triangles, &nodes).map_err(
        |face| {
            WindError::Mesh(format!(
                "the face with vertices {face:?} (0-based) belongs to more than two tetrahedra"
            ))
        },
    )?;
    Ok(flat
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect())
}
