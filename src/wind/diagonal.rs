//! The diagonal of the pressure operator `A = Gᵀ P M_L⁻¹ G`, for the Jacobi preconditioner.

use glam::DVec3;
use rayon::prelude::*;

use super::boundary::{Boundary, FIXED_PRESSURE};
use super::geometry::Geometry;
use crate::gml::MeshKind;
use crate::gml::topology::{self, Incidence};

/// `A_jj = Σ_i (G_ij · P_i G_ij) / m_i`, with `G_ij = Σ_{T∋i,j} (V_T/4) ∇φ_j`: for every
/// vertex `j`, the column of `G` over the vertices `i` that share a tetrahedron with it.
/// Velocities at fixed-pressure vertices are not corrected by the projection (they are the
/// advected ones), so they count as constrained (`P = 0`) here.
pub fn jacobi(
    ball: &Incidence,
    tets: &[[u32; 4]],
    geometry: &Geometry,
    boundary: &Boundary,
) -> Vec<f64> {
    column_norms(ball, tets, geometry, |i| {
        if boundary.flags[i] & FIXED_PRESSURE != 0 {
            [0.0; 6]
        } else {
            boundary.projector[i]
        }
    })
}

/// The diagonal `A` would have if every velocity were free (`P = I`): the scale against which
/// [`jacobi`]'s value says how much of a vertex's divergence free velocities reach.
pub fn unconstrained(ball: &Incidence, tets: &[[u32; 4]], geometry: &Geometry) -> Vec<f64> {
    column_norms(ball, tets, geometry, |_| [1.0, 0.0, 0.0, 1.0, 0.0, 1.0])
}

/// The tetrahedra around each vertex, with the vertex's local index in each
/// ([`topology::vertex_ball`]), which every diagonal above walks.
pub fn vertex_ball(vertices: usize, tets: &[[u32; 4]]) -> Incidence {
    let nodes: Vec<i32> = tets.iter().flatten().map(|&v| v as i32).collect();
    topology::vertex_ball(vertices, MeshKind::Tetrahedra, &nodes)
}

fn column_norms(
    ball: &Incidence,
    tets: &[[u32; 4]],
    geometry: &Geometry,
    projector: impl Fn(usize) -> [f64; 6] + Sync,
) -> Vec<f64> {
    (0..ball.rows())
        .into_par_iter()
        .map(|j| {
            let mut column: Vec<(u32, DVec3)> = Vec::with_capacity(32);
            let row = ball.offsets[j]..ball.offsets[j + 1];
            for (&e, &local) in ball.elements[row.clone()].iter().zip(&ball.locals[row]) {
                let t = tets[e as usize];
                let c = geometry.coefficients[4 * e as usize + usize::from(local)];
                let c = DVec3::new(c[0].into(), c[1].into(), c[2].into());
                for &i in &t {
                    match column.iter_mut().find(|(v, _)| *v == i) {
                        Some((_, g)) => *g += c,
                        None => column.push((i, c)),
                    }
                }
            }
            column
                .iter()
                .map(|(i, g)| {
                    let p = projector(*i as usize);
                    let pg = DVec3::new(
                        p[0] * g.x + p[1] * g.y + p[2] * g.z,
                        p[1] * g.x + p[3] * g.y + p[4] * g.z,
                        p[2] * g.x + p[4] * g.y + p[5] * g.z,
                    );
                    g.dot(pg) / geometry.lumped[*i as usize]
                })
                .sum()
        })
        .collect()
}
