//! Boundary conditions from the boundary triangles' references: which side is inflow, outflow
//! or slip for the wind's direction, and what that makes of each vertex.

use std::collections::HashMap;

use glam::DVec3;
use rayon::prelude::*;
use serde::Serialize;

use super::error::{Result, WindError};
use crate::scene::BoundaryRefs;
use crate::terrain::Side;

/// How the flow meets a boundary reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The wind blows out: the pressure is fixed (zero).
    Outflow,
    /// Neither in nor out (within 2°), the ground and the top: no flow through it.
    Slip,
    /// The wind blows in: the velocity is the inflow profile.
    Inflow,
}

/// One boundary reference and what it is.
#[derive(Clone, Debug, Serialize)]
pub struct Reference {
    /// The reference number.
    pub reference: i32,
    /// The side it stands for.
    #[serde(serialize_with = "side_name")]
    pub side: Side,
    /// Its kind for the wind's direction.
    pub kind: Kind,
    /// Its area, m².
    pub area: f64,
    /// Its outward unit normal (the area-weighted mean of its triangles').
    pub normal: [f64; 3],
}

fn side_name<S: serde::Serializer>(side: &Side, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(side.name())
}

/// Vertex flag: the velocity is prescribed (inflow).
pub const FIXED_VELOCITY: i32 = 1;
/// Vertex flag: the pressure is prescribed (zero).
pub const FIXED_PRESSURE: i32 = 2;

/// The boundary conditions of a mesh for one wind direction.
#[derive(Clone, Debug)]
pub struct Boundary {
    /// Every boundary reference of the mesh.
    pub references: Vec<Reference>,
    /// Per vertex, [`FIXED_VELOCITY`] and [`FIXED_PRESSURE`] flags.
    pub flags: Vec<i32>,
    /// Per vertex, the symmetric velocity projector `P` as `(xx, xy, xz, yy, yz, zz)`.
    pub projector: Vec<[f64; 6]>,
    /// Per vertex, the prescribed inflow flux `F_j` (m³/s, negative where the wind enters).
    pub inflow_flux: Vec<f64>,
    /// Per boundary triangle, its outward unit normal times its area (m²).
    pub triangle_normals: Vec<DVec3>,
    /// Vertices whose pressure [`fix_unreachable`](Self::fix_unreachable) fixed.
    pub unreachable: usize,
}

/// Below this fraction of its unconstrained diagonal, a vertex's divergence counts as out of
/// the free velocities' reach ([`Boundary::fix_unreachable`]).
pub const MIN_REACH: f64 = 1e-2;

/// `sin 2°`: within this of parallel a side is slip (`scene check` asks it too).
pub use crate::scene::limits::SLIP_SINE;

impl Boundary {
    /// Classifies the references of `triangles` (boundary triangles of `tets`) for a wind
    /// blowing along `direction` (horizontal), and derives the vertex conditions. `inflow` is
    /// the inflow velocity at every vertex. Errors: a triangle that is not a face of exactly
    /// one tetrahedron, a reference that is no side's, no inflow or no outflow side.
    pub fn new(
        vertices: &[[f64; 3]],
        tets: &[[u32; 4]],
        triangles: &[([u32; 3], i32)],
        sides: &BoundaryRefs,
        direction: [f64; 2],
        inflow: &[[f64; 3]],
    ) -> Result<Self> {
        let normals = outward_normals(vertices, tets, triangles)?;
        let references = classify(triangles, &normals, sides, direction)?;
        let kind_of: HashMap<i32, Kind> =
            references.iter().map(|r| (r.reference, r.kind)).collect();
        let (on_kind, projector, inflow_flux) =
            vertex_conditions(vertices.len(), triangles, &normals, &kind_of, inflow);
        let mut flags = vec![0; vertices.len()];
        for (flags, [outflow, _, inflow]) in flags.iter_mut().zip(&on_kind) {
            if *inflow {
                *flags |= FIXED_VELOCITY;
            }
            if *outflow {
                *flags |= FIXED_PRESSURE;
            }
        }
        Ok(Self {
            references,
            flags,
            projector,
            inflow_flux,
            triangle_normals: normals,
            unreachable: 0,
        })
    }

    /// The same conditions on the same mesh with its vertices moved to `vertices` (the ground
    /// refresh: the topology, the references' kinds and the vertex flags, the fixed pressures
    /// of [`fix_unreachable`](Self::fix_unreachable) included, stay): the triangles' normals,
    /// the references' areas and normals, the slip projectors and the inflow fluxes from the
    /// new coordinates and `inflow`. `inside[t]` is the vertex of triangle `t`'s tetrahedron
    /// opposite it ([`inside_vertices`]), which orients its normal. The kinds are kept: a
    /// column regrade moves vertices only vertically, so the vertical sides keep their normals
    /// and the ground and the top are slip whatever their shape. The one-off form of
    /// [`MovedIndex::conditions`] and [`apply`](Self::apply), which repeated moves should use
    /// (the index is built once); an error for a triangle whose reference is not one of
    /// `self`'s or a triangle without its inside vertex.
    pub fn moved(
        &self,
        vertices: &[[f64; 3]],
        triangles: &[([u32; 3], i32)],
        inside: &[u32],
        inflow: &[[f64; 3]],
    ) -> Result<Self> {
        let index = MovedIndex::new(self, triangles, inside.to_vec())?;
        let conditions = index.conditions(&self.references, vertices, triangles, |v| {
            DVec3::from(inflow[v as usize])
        });
        let mut moved = self.clone();
        moved.apply(&index, conditions);
        Ok(moved)
    }

    /// Takes the conditions [`MovedIndex::conditions`] computed for moved vertices: the
    /// references, the triangles' normals, and the projectors and inflow fluxes of the
    /// index's vertices (every other vertex keeps its identity projector and zero flux).
    pub fn apply(&mut self, index: &MovedIndex, conditions: MovedConditions) {
        self.references = conditions.references;
        self.triangle_normals = conditions.triangle_normals;
        for ((&v, p), f) in index
            .vertices
            .iter()
            .zip(conditions.projector)
            .zip(conditions.inflow_flux)
        {
            self.projector[v as usize] = p;
            self.inflow_flux[v as usize] = f;
        }
    }

    /// Fixes the pressure (zero) at vertices whose divergence free velocities (barely)
    /// reach: where `A`'s diagonal (`diagonal`) is below [`MIN_REACH`] of what it would be
    /// with every velocity free (`unconstrained`). At such a vertex nearly every vertex
    /// sharing a tetrahedron with it has its velocity prescribed (the edge where two inflow
    /// sides meet, the ground row of an inflow side), so zeroing its divergence would take
    /// velocities of ~1/reach times the divergence from the few free neighbours: on the
    /// valley, 135 m/s next to the inflow corner in one step. Its divergence is left to the
    /// prescribed velocities, as at the outflow. Returns how many were fixed.
    pub fn fix_unreachable(&mut self, diagonal: &[f64], unconstrained: &[f64]) -> usize {
        let mut fixed = 0;
        for ((flags, d), full) in self.flags.iter_mut().zip(diagonal).zip(unconstrained) {
            if *flags & FIXED_PRESSURE == 0 && *d <= MIN_REACH * full {
                *flags |= FIXED_PRESSURE;
                fixed += 1;
            }
        }
        self.unreachable = fixed;
        fixed
    }

    /// The references of `kind`.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Reference> {
        self.references.iter().filter(move |r| r.kind == kind)
    }
}

const IDENTITY: [f64; 6] = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0];

/// The boundary's structure for repeated moves of its vertices ([`Boundary::moved`], the
/// ground refresh), built once: per boundary triangle its reference (index) and the vertex
/// opposite it; the vertices whose projector or inflow flux depends on the coordinates (those
/// on a slip or an inflow triangle; every other vertex has the identity projector and no
/// flux, whatever the coordinates); per such vertex its slip triangles grouped by reference
/// (the references ascending) and its inflow triangles, each list in the triangles' order.
/// [`conditions`](Self::conditions) then sums exactly as [`Boundary::new`] does, operation for
/// operation (bit for bit), without its hash maps, touching only the boundary's vertices.
#[derive(Clone, Debug)]
pub struct MovedIndex {
    /// Per boundary triangle, its reference's index in [`Boundary::references`].
    reference: Vec<u32>,
    /// Per boundary triangle, the vertex of its tetrahedron opposite it.
    inside: Vec<u32>,
    /// Per boundary triangle, whether its reference is an inflow one.
    inflow_triangle: Vec<bool>,
    /// The vertices on a slip or an inflow triangle, ascending.
    vertices: Vec<u32>,
    /// Per such vertex, whether it is on an inflow triangle (a zero projector).
    on_inflow: Vec<bool>,
    /// Per such vertex `i` not on an inflow triangle, its slip groups
    /// `group_start[i]..group_start[i + 1]` (one per reference, ascending).
    group_start: Vec<u32>,
    /// Per slip group `g`, its triangles `slip[group_end[g - 1]..group_end[g]]` (0 for g = 0).
    group_end: Vec<u32>,
    /// The slip groups' triangles.
    slip: Vec<u32>,
    /// Per such vertex `i`, its inflow triangles `inflow[inflow_start[i]..inflow_start[i + 1]]`.
    inflow_start: Vec<u32>,
    /// The vertices' inflow triangles.
    inflow: Vec<u32>,
}

/// A [`MovedIndex`] as flat `int` tables ([`MovedIndex::flat`]), for the device kernel that
/// recomputes the projectors and inflow fluxes (`kernels/wind_refresh.cl`,
/// `wind_boundary_line`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatIndex {
    /// Per mesh vertex, `(first group, end group, first inflow, end inflow)`: its slip groups
    /// and its range in the inflow list (a vertex with inflow triangles has no group and a
    /// zero projector); the first is `-1` for a vertex outside the index (identity projector,
    /// no flux, whatever the coordinates).
    pub rows: Vec<[i32; 4]>,
    /// Per boundary triangle its three vertices and the vertex opposite it in its tetrahedron
    /// (four `int`s each, from 0); then from [`group_end_at`](Self::group_end_at) per slip
    /// group the end of its triangles in the slip list (a group starts where the previous one
    /// ends, the first at 0); from [`slip_at`](Self::slip_at) the slip list (triangles,
    /// grouped per vertex and reference, the references ascending); from
    /// [`inflow_at`](Self::inflow_at) the inflow list (per vertex its inflow triangles).
    pub table: Vec<i32>,
    /// Where the groups' ends start in [`table`](Self::table).
    pub group_end_at: usize,
    /// Where the slip list starts in [`table`](Self::table).
    pub slip_at: usize,
    /// Where the inflow list starts in [`table`](Self::table).
    pub inflow_at: usize,
}

/// What [`MovedIndex::conditions`] computes for moved vertices, for [`Boundary::apply`].
#[derive(Clone, Debug)]
pub struct MovedConditions {
    /// Every boundary reference, with its new area and normal.
    pub references: Vec<Reference>,
    /// Per boundary triangle, its outward unit normal times its area (m²).
    pub triangle_normals: Vec<DVec3>,
    /// Per vertex of the index ([`MovedIndex::vertices`]), its projector.
    pub projector: Vec<[f64; 6]>,
    /// Per vertex of the index, its inflow flux (m³/s).
    pub inflow_flux: Vec<f64>,
}

impl MovedIndex {
    /// The index of `boundary`'s `triangles` (those it was made from), with `inside[t]` the
    /// vertex opposite triangle `t` in its tetrahedron ([`inside_vertices`]). An error for a
    /// triangle whose reference is not one of `boundary`'s, or a length mismatch.
    pub fn new(
        boundary: &Boundary,
        triangles: &[([u32; 3], i32)],
        inside: Vec<u32>,
    ) -> Result<Self> {
        if inside.len() != triangles.len() {
            return Err(WindError::Mesh(format!(
                "{} inside vertices for {} boundary triangles",
                inside.len(),
                triangles.len()
            )));
        }
        let at: HashMap<i32, u32> = boundary
            .references
            .iter()
            .enumerate()
            .map(|(i, r)| (r.reference, i as u32))
            .collect();
        let mut reference = Vec::with_capacity(triangles.len());
        let mut inflow_triangle = Vec::with_capacity(triangles.len());
        // (vertex, reference, triangle) of the slip triangles, (vertex, triangle) of the
        // inflow ones.
        let mut slip: Vec<(u32, i32, u32)> = Vec::new();
        let mut inflow: Vec<(u32, u32)> = Vec::new();
        for (t, (nodes, r)) in triangles.iter().enumerate() {
            let i = *at.get(r).ok_or_else(|| {
                WindError::Mesh(format!(
                    "boundary triangle {} (1-based) has reference {r}, which the boundary \
                     does not know",
                    t + 1
                ))
            })?;
            reference.push(i);
            let kind = boundary.references[i as usize].kind;
            inflow_triangle.push(kind == Kind::Inflow);
            for &v in nodes {
                match kind {
                    Kind::Slip => slip.push((v, *r, t as u32)),
                    Kind::Inflow => inflow.push((v, t as u32)),
                    Kind::Outflow => {}
                }
            }
        }
        slip.par_sort_unstable();
        inflow.par_sort_unstable();
        let mut vertices: Vec<u32> = slip
            .iter()
            .map(|s| s.0)
            .chain(inflow.iter().map(|s| s.0))
            .collect();
        vertices.par_sort_unstable();
        vertices.dedup();
        let mut index = Self {
            reference,
            inside,
            inflow_triangle,
            on_inflow: Vec::with_capacity(vertices.len()),
            group_start: vec![0],
            group_end: Vec::new(),
            slip: Vec::with_capacity(slip.len()),
            inflow_start: vec![0],
            inflow: Vec::with_capacity(inflow.len()),
            vertices,
        };
        let (mut s, mut f) = (0, 0);
        for &v in &index.vertices {
            let first = f;
            while f < inflow.len() && inflow[f].0 == v {
                index.inflow.push(inflow[f].1);
                f += 1;
            }
            let on_inflow = f > first;
            index.on_inflow.push(on_inflow);
            index.inflow_start.push(index.inflow.len() as u32);
            let mut group: Option<i32> = None;
            while s < slip.len() && slip[s].0 == v {
                let (_, r, t) = slip[s];
                s += 1;
                if on_inflow {
                    continue;
                }
                if group.is_some_and(|g| g != r) {
                    index.group_end.push(index.slip.len() as u32);
                }
                group = Some(r);
                index.slip.push(t);
            }
            if group.is_some() {
                index.group_end.push(index.slip.len() as u32);
            }
            index.group_start.push(index.group_end.len() as u32);
        }
        Ok(index)
    }

    /// The vertices whose projector or inflow flux the coordinates change, ascending (what
    /// [`MovedConditions`] holds per vertex).
    pub fn vertices(&self) -> &[u32] {
        &self.vertices
    }

    /// The index as flat tables for a device kernel that recomputes the conditions per vertex
    /// of a mesh of `vertex_count` vertices, summing as [`conditions`](Self::conditions) does
    /// (see [`FlatIndex`]). `triangles` are the index's. An error for a table too long for the
    /// device's `int` indices or a vertex out of range.
    pub fn flat(&self, triangles: &[([u32; 3], i32)], vertex_count: usize) -> Result<FlatIndex> {
        let int = |x: usize| {
            i32::try_from(x).map_err(|_| {
                WindError::Mesh(format!(
                    "the boundary's device index has an entry of {x}, beyond the device's int"
                ))
            })
        };
        if triangles.len() != self.inside.len() {
            return Err(WindError::Mesh(format!(
                "{} boundary triangles for an index of {}",
                triangles.len(),
                self.inside.len()
            )));
        }
        let group_end_at = 4 * triangles.len();
        let slip_at = group_end_at + self.group_end.len();
        let inflow_at = slip_at + self.slip.len();
        int(inflow_at + self.inflow.len())?;
        let mut table = Vec::with_capacity(inflow_at + self.inflow.len());
        for ((nodes, _), &inside) in triangles.iter().zip(&self.inside) {
            for v in [nodes[0], nodes[1], nodes[2], inside] {
                if v as usize >= vertex_count {
                    return Err(WindError::Mesh(format!(
                        "boundary vertex {v} of a mesh of {vertex_count} vertices"
                    )));
                }
                table.push(int(v as usize)?);
            }
        }
        for list in [&self.group_end, &self.slip, &self.inflow] {
            for &x in list.iter() {
                table.push(int(x as usize)?);
            }
        }
        let mut rows = vec![[-1, 0, 0, 0]; vertex_count];
        for (i, &v) in self.vertices.iter().enumerate() {
            let row = rows.get_mut(v as usize).ok_or_else(|| {
                WindError::Mesh(format!(
                    "boundary vertex {v} of a mesh of {vertex_count} vertices"
                ))
            })?;
            *row = [
                int(self.group_start[i] as usize)?,
                int(self.group_start[i + 1] as usize)?,
                int(self.inflow_start[i] as usize)?,
                int(self.inflow_start[i + 1] as usize)?,
            ];
        }
        Ok(FlatIndex {
            rows,
            table,
            group_end_at,
            slip_at,
            inflow_at,
        })
    }

    /// The conditions on the indexed mesh with its vertices at `vertices`, the inflow velocity
    /// at vertex `v` being `inflow(v)` (asked only of the inflow triangles' vertices), and
    /// `references` the boundary's. In parallel, summing as [`Boundary::new`] does.
    pub fn conditions(
        &self,
        references: &[Reference],
        vertices: &[[f64; 3]],
        triangles: &[([u32; 3], i32)],
        inflow: impl Fn(u32) -> DVec3 + Sync,
    ) -> MovedConditions {
        let normals = oriented_normals(vertices, triangles, &self.inside);
        let mut sums = vec![(DVec3::ZERO, 0.0); references.len()];
        for (&r, n) in self.reference.iter().zip(&normals) {
            let entry = &mut sums[r as usize];
            entry.0 += *n;
            entry.1 += n.length();
        }
        let references = references
            .iter()
            .zip(sums)
            .map(|(r, (sum, area))| Reference {
                area,
                normal: sum.normalize_or_zero().to_array(),
                ..r.clone()
            })
            .collect();
        // Per inflow triangle, its share of each of its vertices' flux.
        let share: Vec<f64> = triangles
            .par_iter()
            .zip(&normals)
            .zip(&self.inflow_triangle)
            .map(|(((nodes, _), an), &on)| {
                if !on {
                    return 0.0;
                }
                let mean = nodes.iter().map(|&v| inflow(v)).sum::<DVec3>() / 3.0;
                mean.dot(*an) / 3.0
            })
            .collect();
        let (projector, inflow_flux) = (0..self.vertices.len())
            .into_par_iter()
            .map(|i| {
                let mut flux = 0.0;
                for &t in
                    &self.inflow[self.inflow_start[i] as usize..self.inflow_start[i + 1] as usize]
                {
                    flux += share[t as usize];
                }
                if self.on_inflow[i] {
                    return ([0.0; 6], flux);
                }
                let groups = self.group_start[i] as usize..self.group_start[i + 1] as usize;
                let projector = slip_projector(groups.map(|g| {
                    let first = if g == 0 {
                        0
                    } else {
                        self.group_end[g - 1] as usize
                    };
                    let mut sum = DVec3::ZERO;
                    for &t in &self.slip[first..self.group_end[g] as usize] {
                        sum += normals[t as usize];
                    }
                    sum
                }));
                (projector, flux)
            })
            .unzip();
        MovedConditions {
            references,
            triangle_normals: normals,
            projector,
            inflow_flux,
        }
    }
}

/// Per vertex: whether it is on an outflow, slip, inflow triangle (in [`Kind`]'s order); its
/// velocity projector; its inflow flux. From the triangles' outward normals times areas
/// (`normals`), their references' kinds and the inflow value at every vertex.
fn vertex_conditions(
    n: usize,
    triangles: &[([u32; 3], i32)],
    normals: &[DVec3],
    kind_of: &HashMap<i32, Kind>,
    inflow: &[[f64; 3]],
) -> (Vec<[bool; 3]>, Vec<[f64; 6]>, Vec<f64>) {
    let mut on_kind = vec![[false; 3]; n];
    let mut slip_normals: HashMap<(u32, i32), DVec3> = HashMap::new();
    let mut inflow_flux = vec![0.0; n];
    for ((nodes, reference), &an) in triangles.iter().zip(normals) {
        let kind = kind_of[reference];
        for &v in nodes {
            on_kind[v as usize][kind as usize] = true;
        }
        match kind {
            Kind::Slip => {
                for &v in nodes {
                    *slip_normals.entry((v, *reference)).or_default() += an;
                }
            }
            Kind::Inflow => {
                let mean = nodes
                    .iter()
                    .map(|&v| DVec3::from(inflow[v as usize]))
                    .sum::<DVec3>()
                    / 3.0;
                for &v in nodes {
                    inflow_flux[v as usize] += mean.dot(an) / 3.0;
                }
            }
            Kind::Outflow => {}
        }
    }
    let mut per_vertex: Vec<Vec<(i32, DVec3)>> = vec![Vec::new(); n];
    for ((v, r), sum) in slip_normals {
        per_vertex[v as usize].push((r, sum));
    }
    let mut projector = vec![IDENTITY; n];
    for v in 0..n {
        let [_, slip, inflow] = on_kind[v];
        if inflow {
            projector[v] = [0.0; 6];
        } else if slip {
            let normals = &mut per_vertex[v];
            normals.sort_by_key(|(r, _)| *r);
            projector[v] = slip_projector(normals.iter().map(|(_, n)| *n));
        }
    }
    (on_kind, projector, inflow_flux)
}

/// `I − n₁n₁ᵀ − n₂'n₂'ᵀ …` for the area-weighted normal sums of a vertex's slip references;
/// zero when the normals span three directions or nearly so.
fn slip_projector(sums: impl Iterator<Item = DVec3>) -> [f64; 6] {
    let mut basis: Vec<DVec3> = Vec::new();
    for sum in sums {
        let Some(mut n) = sum.try_normalize() else {
            continue;
        };
        for b in &basis {
            n -= *b * b.dot(n);
        }
        if n.length() < SLIP_SINE {
            continue;
        }
        basis.push(n.normalize());
        if basis.len() == 3 {
            return [0.0; 6];
        }
    }
    let mut p = IDENTITY;
    for b in basis {
        p[0] -= b.x * b.x;
        p[1] -= b.x * b.y;
        p[2] -= b.x * b.z;
        p[3] -= b.y * b.y;
        p[4] -= b.y * b.z;
        p[5] -= b.z * b.z;
    }
    p
}

/// Each triangle's outward normal times its area, oriented away from the tetrahedron it
/// bounds.
fn outward_normals(
    vertices: &[[f64; 3]],
    tets: &[[u32; 4]],
    triangles: &[([u32; 3], i32)],
) -> Result<Vec<DVec3>> {
    let inside = inside_vertices(tets, triangles)?;
    Ok(oriented_normals(vertices, triangles, &inside))
}

/// For each boundary triangle, the vertex of the tetrahedron it bounds opposite it (what
/// orients its normal outward); an error naming a triangle that is not a face of exactly one
/// tetrahedron.
pub fn inside_vertices(tets: &[[u32; 4]], triangles: &[([u32; 3], i32)]) -> Result<Vec<u32>> {
    let key = |mut k: [u32; 3]| {
        k.sort_unstable();
        k
    };
    let index: HashMap<[u32; 3], usize> = triangles
        .iter()
        .enumerate()
        .map(|(i, (nodes, _))| (key(*nodes), i))
        .collect();
    // For each triangle, the vertex of its tetrahedron opposite it, and how many tetrahedra
    // it bounds.
    let found: Vec<(usize, u32)> = tets
        .par_iter()
        .flat_map_iter(|t| {
            (0..4).filter_map(|j| {
                let face = key([t[(j + 1) % 4], t[(j + 2) % 4], t[(j + 3) % 4]]);
                index.get(&face).map(|&i| (i, t[j]))
            })
        })
        .collect();
    let mut opposite: Vec<Option<u32>> = vec![None; triangles.len()];
    let mut count = vec![0u32; triangles.len()];
    for (i, v) in found {
        opposite[i] = Some(v);
        count[i] += 1;
    }
    triangles
        .iter()
        .enumerate()
        .map(|(i, (_, reference))| match (opposite[i], count[i]) {
            (Some(v), 1) => Ok(v),
            (_, c) => Err(WindError::Mesh(format!(
                "boundary triangle {} (1-based, reference {reference}) is a face of {c} \
                 tetrahedra, not of one",
                i + 1
            ))),
        })
        .collect()
}

/// Each triangle's normal times its area, pointing away from its `inside` vertex.
fn oriented_normals(
    vertices: &[[f64; 3]],
    triangles: &[([u32; 3], i32)],
    inside: &[u32],
) -> Vec<DVec3> {
    let p = |i: u32| DVec3::from(vertices[i as usize]);
    triangles
        .par_iter()
        .zip(inside)
        .map(|((nodes, _), &inside)| {
            let [a, b, c] = nodes.map(p);
            let n = (b - a).cross(c - a) / 2.0;
            if n.dot(p(inside) - a) > 0.0 { -n } else { n }
        })
        .collect()
}

/// Each reference's side, area, normal and kind.
fn classify(
    triangles: &[([u32; 3], i32)],
    normals: &[DVec3],
    sides: &BoundaryRefs,
    direction: [f64; 2],
) -> Result<Vec<Reference>> {
    let mut sums: std::collections::BTreeMap<i32, (DVec3, f64)> = Default::default();
    for ((_, reference), n) in triangles.iter().zip(normals) {
        let entry = sums.entry(*reference).or_default();
        entry.0 += *n;
        entry.1 += n.length();
    }
    let wind = DVec3::new(direction[0], direction[1], 0.0).normalize_or_zero();
    let mut references = Vec::new();
    for (reference, (sum, area)) in sums {
        let side = sides.side(reference).ok_or_else(|| {
            WindError::Boundary(format!(
                "boundary triangles have reference {reference}, which is no side's"
            ))
        })?;
        let normal = sum.normalize_or_zero();
        let along = wind.dot(normal);
        let kind = match side {
            Side::Ground | Side::Top => Kind::Slip,
            _ if along < -SLIP_SINE => Kind::Inflow,
            _ if along > SLIP_SINE => Kind::Outflow,
            _ => Kind::Slip,
        };
        references.push(Reference {
            reference,
            side,
            kind,
            area,
            normal: normal.to_array(),
        });
    }
    for (kind, what) in [(Kind::Inflow, "in"), (Kind::Outflow, "out")] {
        if !references.iter().any(|r| r.kind == kind) {
            return Err(WindError::Boundary(format!(
                "no side lets the wind {what} for the direction ({:.3}, {:.3}): the pressure \
                 problem has {}",
                direction[0],
                direction[1],
                if kind == Kind::Inflow {
                    "no flow to carry"
                } else {
                    "no unique solution (nothing fixes the pressure)"
                }
            )));
        }
    }
    Ok(references)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meshio::ElementKind;
    use crate::terrain::{Terrain, TerrainSpec};

    /// The conditions of a hill's mesh moved to regraded heights are those computed afresh on
    /// the regraded mesh, bit for bit (same operations), with the flags kept.
    #[test]
    fn moved_conditions_equal_those_of_the_moved_mesh() {
        let spec = TerrainSpec {
            size: [120.0, 80.0, 60.0],
            relief: 0.0,
            cells: [6, 4],
            layers: 5,
            grading: 1.3,
        };
        let terrain = Terrain::from_fn(spec, |x, y| {
            10.0 * (-((x - 60.0).powi(2) + (y - 40.0).powi(2)) / 800.0).exp()
        })
        .unwrap();
        let mesh = terrain.volume_mesh();
        let tets: Vec<[u32; 4]> = mesh
            .elements(ElementKind::Tetrahedra)
            .with_refs::<4>()
            .iter()
            .map(|t| t.0)
            .collect();
        let triangles = mesh.elements(ElementKind::Triangles).with_refs::<3>();
        let sides = BoundaryRefs::default();
        // A sheared profile, so the inflow fluxes depend on the heights.
        let inflow = |v: &[[f64; 3]]| -> Vec<[f64; 3]> {
            v.iter().map(|p| [2.0 + p[2] / 30.0, 0.5, 0.0]).collect()
        };
        let before = Boundary::new(
            &mesh.vertices,
            &tets,
            &triangles,
            &sides,
            [1.0, 0.3],
            &inflow(&mesh.vertices),
        )
        .unwrap();
        let columns = terrain.columns();
        let raise: Vec<f64> = (0..columns.ground.len())
            .map(|c| ((c * 7) % 5) as f64)
            .collect();
        let z = columns.regrade(&raise).unwrap().z;
        let moved_vertices: Vec<[f64; 3]> = mesh
            .vertices
            .iter()
            .zip(&z)
            .map(|(p, &z)| [p[0], p[1], z])
            .collect();
        let inside = inside_vertices(&tets, &triangles).unwrap();
        let moved = before
            .moved(
                &moved_vertices,
                &triangles,
                &inside,
                &inflow(&moved_vertices),
            )
            .unwrap();
        let fresh = Boundary::new(
            &moved_vertices,
            &tets,
            &triangles,
            &sides,
            [1.0, 0.3],
            &inflow(&moved_vertices),
        )
        .unwrap();
        assert_eq!(moved.flags, before.flags);
        assert_eq!(moved.projector, fresh.projector);
        assert_eq!(moved.inflow_flux, fresh.inflow_flux);
        assert_eq!(moved.triangle_normals, fresh.triangle_normals);
        assert_ne!(
            moved.projector, before.projector,
            "the ground's slope changed"
        );
        for (m, f) in moved.references.iter().zip(&fresh.references) {
            assert_eq!((m.reference, m.kind, m.area), (f.reference, f.kind, f.area));
            assert_eq!(m.normal, f.normal);
        }
        // Not moved: the same conditions.
        let same = before
            .moved(&mesh.vertices, &triangles, &inside, &inflow(&mesh.vertices))
            .unwrap();
        assert_eq!(same.projector, before.projector);
        assert_eq!(same.inflow_flux, before.inflow_flux);
    }
}
