//! `snowsim bench pressure`: the wind's pressure solve over ranks against one rank, on the
//! same system and the same number of iterations (issue "Beyond one machine": what the CG's
//! halo exchanges and global sums cost when the mesh is split).
//!
//! The scene's wind is set up on the first device to build the system `A x = b` (a known `x`
//! over the unknowns, `b = A x` on the device); the mesh is cut into slabs across x of equal
//! vertex counts, each rank holding its vertices and the two rings around them
//! (`wind::piece`). One rank solves the whole system, then the ranks (threads of this
//! process, one per device given, in-process `comm`) solve their pieces, each a fixed number
//! of CG iterations after one untimed solve; the wall time per iteration is compared.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cl::Context;
use crate::comm::{self, Comm, HaloPlan, Local};
use crate::meshio::{ElementKind, Mesh};
use crate::partition::{self, Partition};
use crate::scene::Scene;
use crate::wind::diagonal::vertex_ball;
use crate::wind::geometry::Geometry;
use crate::wind::operator::{Assembled, Rings};
use crate::wind::piece::{Layout, PieceOperator, PieceSystem};
use crate::wind::{self, WindError, boundary::FIXED_PRESSURE};

/// One run's result: one rank, or several.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Ranks (1: the whole system on the first device).
    pub ranks: usize,
    /// Each rank's device.
    pub devices: Vec<String>,
    /// Tetrahedra and vertices of the whole mesh.
    pub tetrahedra: usize,
    /// Vertices of the whole mesh.
    pub vertices: usize,
    /// The most vertices a rank owns.
    pub owned_max: usize,
    /// The most halo vertices a rank holds (two rings).
    pub halo_max: usize,
    /// CG iterations timed.
    pub iterations: u32,
    /// Wall time per iteration, ms (the slowest rank's).
    pub ms_per_iteration: f64,
    /// The residual's norm after the timed solve, relative to the right-hand side's.
    pub relative_residual: f64,
}

/// One rank's piece: its local vertices and its exchanges in local indices.
struct Piece {
    layout: Layout,
    halo: HaloPlan,
}

/// Cuts the mesh (`vertices`, tetrahedra `nodes`) into `parts` slabs across x of equal vertex
/// counts, plans their two-ring halos (`partition::HaloPlan::with_depth`) and lays each part's
/// vertices out for its solve (`wind::piece::Layout`).
fn pieces(
    vertices: &[[f64; 3]],
    nodes: &[[u32; 4]],
    rings: &Rings,
    parts: usize,
) -> Result<Vec<Piece>, WindError> {
    let n = vertices.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| {
        vertices[a as usize][0]
            .total_cmp(&vertices[b as usize][0])
            .then(a.cmp(&b))
    });
    let mut owner = vec![0u32; n];
    for (rank, &v) in order.iter().enumerate() {
        owner[v as usize] = (rank * parts / n.max(1)) as u32;
    }
    let mut mesh = Mesh::new(3);
    for &v in vertices {
        mesh.push_vertex(v, 0);
    }
    let tetrahedra = mesh.elements_mut(ElementKind::Tetrahedra);
    for t in nodes {
        tetrahedra.push(t, 0);
    }
    let planned = Partition::from_owner(owner, parts, None)
        .and_then(|partition| partition::HaloPlan::with_depth(&mesh, &partition, 2))
        .map_err(|e| WindError::Piece(format!("planning the slabs' halos: {e}")))?;
    planned
        .parts
        .iter()
        .map(|part| {
            let layout = Layout::new(&part.owned, rings);
            let halo = layout.exchanges(
                part.neighbours
                    .iter()
                    .map(|e| (e.part as usize, &e.send[..], &e.receive[..])),
            )?;
            Ok(Piece { layout, halo })
        })
        .collect()
}

/// Runs one rank on the whole system and `contexts.len()` ranks on its pieces (rank r on
/// `contexts[r]`; the whole system on `contexts[0]`), `iterations` CG iterations each.
pub fn measure(
    contexts: &[Context],
    scene: &Scene,
    iterations: u32,
    mut progress: impl FnMut(&str),
) -> Result<Vec<Row>, WindError> {
    let first = contexts
        .first()
        .ok_or_else(|| WindError::Piece("no device to run on".into()))?;
    progress("meshing and setting up the wind");
    let mut solver =
        wind::setup::from_scene(first.clone(), scene, wind::setup::settings(scene, false))?;
    let n = solver.vertices().len();
    let (terms, flags) = solver.pressure_terms()?;
    let inverse_diagonal = solver.inverse_diagonal()?;
    let known: Vec<f64> = (0..n)
        .map(|v| {
            let h = (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            if flags[v] & FIXED_PRESSURE != 0 {
                0.0
            } else {
                h as f64 / (1u64 << 24) as f64 - 0.5
            }
        })
        .collect();
    let b = solver.apply_operator(&known)?;
    let vertices = solver.vertices().to_vec();
    let nodes: Vec<[u32; 4]> = solver.tetrahedra().iter().map(|t| t.0).collect();
    drop(solver);
    progress("assembling the operator's tables");
    let geometry = Geometry::new(&vertices, &nodes)?;
    let ball = vertex_ball(n, &nodes);
    let rings = Rings::new(&ball, &nodes);
    let whole = Assembled::new(&rings, &ball, &nodes, &geometry);
    let b_norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    let row =
        |ranks: usize, devices: Vec<String>, owned_max, halo_max, seconds: f64, residual: f64| {
            Row {
                ranks,
                devices,
                tetrahedra: nodes.len(),
                vertices: n,
                owned_max,
                halo_max,
                iterations,
                ms_per_iteration: seconds * 1e3 / f64::from(iterations.max(1)),
                relative_residual: residual / b_norm.max(f64::MIN_POSITIVE),
            }
        };
    // A rank's timed solve: one untimed, then one timed from zero, `iterations` long.
    let timed = |comm: &dyn Comm,
                 system: &mut PieceSystem,
                 b: &[f64],
                 local: usize|
     -> Result<(f64, f64), WindError> {
        let mut x = vec![0.0; local];
        system.solve(comm, b, &mut x, 0.0, iterations)?;
        comm::barrier(comm)?;
        x.fill(0.0);
        let t = Instant::now();
        let solved = system.solve(comm, b, &mut x, 0.0, iterations)?;
        Ok((t.elapsed().as_secs_f64(), solved.residual))
    };
    let mut rows = Vec::new();
    progress("one rank, the whole system");
    {
        let all = Layout::new(&(0..n as u32).collect::<Vec<_>>(), &rings);
        let operator = PieceOperator::new(first, &whole.piece(&all.local, n, n)?, &terms, &flags)?;
        let mut system = PieceSystem::new(operator, &all, &inverse_diagonal, &HaloPlan::default())?;
        let single = Local::single(Duration::from_secs(600));
        let (seconds, residual) = timed(&single, &mut system, &b, n)?;
        rows.push(row(1, vec![first.info().label()], n, 0, seconds, residual));
    }
    let ranks = contexts.len();
    if ranks > 1 {
        progress(&format!("{ranks} ranks, a slab each"));
        let parts = pieces(&vertices, &nodes, &rings, ranks)?;
        let results = Local::run(ranks, Duration::from_secs(600), |comm| {
            let piece = &parts[comm.rank()];
            let layout = &piece.layout;
            let local = &layout.local;
            let pick = |values: &[f64]| {
                local[..layout.owned]
                    .iter()
                    .map(|&w| values[w as usize])
                    .collect::<Vec<_>>()
            };
            let operator = PieceOperator::new(
                &contexts[comm.rank()],
                &whole.piece(local, layout.grad_rows, layout.owned)?,
                &local.iter().map(|&w| terms[w as usize]).collect::<Vec<_>>(),
                &local.iter().map(|&w| flags[w as usize]).collect::<Vec<_>>(),
            )?;
            let mut system =
                PieceSystem::new(operator, layout, &pick(&inverse_diagonal), &piece.halo)?;
            comm::barrier(comm)?;
            timed(comm, &mut system, &pick(&b), local.len())
        });
        let mut slowest = 0.0f64;
        let mut residual = 0.0;
        for (rank, result) in results.into_iter().enumerate() {
            let (seconds, r) = result
                .map_err(|panic| WindError::Piece(format!("rank {rank} panicked: {panic}")))??;
            slowest = slowest.max(seconds);
            residual = r;
        }
        rows.push(row(
            ranks,
            contexts.iter().map(|c| c.info().label()).collect(),
            parts.iter().map(|p| p.layout.owned).max().unwrap_or(0),
            parts
                .iter()
                .map(|p| p.layout.local.len() - p.layout.owned)
                .max()
                .unwrap_or(0),
            slowest,
            residual,
        ));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of vertices along x, each ring its neighbours: three slabs, each rank's halo two
    /// deep, and what a rank sends a neighbour is what that neighbour receives from it.
    #[test]
    fn slab_pieces_hold_two_rings_and_their_exchanges_match() {
        let n = 12;
        let tets: Vec<[u32; 4]> = (0..n as u32 - 3)
            .map(|i| [i, i + 1, i + 2, i + 3])
            .collect();
        let ball = vertex_ball(n, &tets);
        let rings = Rings::new(&ball, &tets);
        let vertices: Vec<[f64; 3]> = (0..n).map(|i| [i as f64, 0.0, 0.0]).collect();
        let parts = pieces(&vertices, &tets, &rings, 3).unwrap();
        assert_eq!(parts.iter().map(|p| p.layout.owned).sum::<usize>(), n);
        // Part 1 owns 4..8; its rings reach three vertices a ring (the tetrahedra span four),
        // so none of its vertices is interior; part 0 owns 0..4, of which 0 is interior (its
        // ring 0..3) and none deep.
        let p = &parts[1].layout;
        assert_eq!(&p.local[..p.owned], &[4, 5, 6, 7]);
        assert_eq!((p.deep, p.interior, p.grad_rows), (0, 0, 4 + 6));
        assert_eq!(&p.local[p.owned..p.grad_rows], &[1, 2, 3, 8, 9, 10]);
        let p = &parts[0].layout;
        assert_eq!(&p.local[..p.owned], &[0, 1, 2, 3]);
        assert_eq!((p.deep, p.interior), (0, 1));
        for (a, piece) in parts.iter().enumerate() {
            let pa = &piece.layout;
            for n_ab in &piece.halo.neighbours {
                let pb = &parts[n_ab.rank];
                let n_ba = pb.halo.neighbours.iter().find(|m| m.rank == a).unwrap();
                let sent: Vec<u32> = n_ab.send.iter().map(|&i| pa.local[i as usize]).collect();
                let received: Vec<u32> = n_ba
                    .recv
                    .iter()
                    .map(|&i| pb.layout.local[i as usize])
                    .collect();
                assert_eq!(sent, received, "{a} to {}", n_ab.rank);
                assert!(n_ab.send.iter().all(|&i| (i as usize) < pa.owned));
                assert!(n_ab.recv.iter().all(|&i| (i as usize) >= pa.owned));
            }
            let received: usize = piece.halo.neighbours.iter().map(|m| m.recv.len()).sum();
            assert_eq!(
                received,
                pa.local.len() - pa.owned,
                "part {a} receives its whole halo"
            );
        }
    }
}
