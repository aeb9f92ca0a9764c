//! What each part works on and what crosses between parts: owned vertices, the working set of
//! elements, the halo, and per neighbour the vertices sent and received.
//!
//! A rank updates the vertices it owns; to do so it runs over every element that has one of
//! them (its working set), and the other vertices of those elements are its halo: values it
//! reads but another rank owns and updates. After each update the owner sends them. This is
//! the plain data a communication layer exchanges by: for every pair of neighbour parts, the
//! same list in the same order on both sides.
//!
//! An operator that reaches further than one element needs a deeper halo: the wind's pressure
//! operator `Gᵀ P M_L⁻¹ G` reaches two rings (docs/scaling.md), so its rows of the owned
//! vertices need the elements of the first ring's vertices too. [`HaloPlan::with_depth`]
//! grows the working set ring by ring: depth `d` takes every element that touches a vertex
//! within `d − 1` rings of the owned ones.

use std::collections::BTreeMap;

use crate::gml::topology::vertex_ball;
use crate::mesh_kind::MeshKind;
use crate::meshio::{ElementKind, Mesh};

use super::PartitionError;
use super::graph::{connecting_elements, fits};
use super::owners::Partition;

/// What one part sends to and receives from one neighbour part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    /// The neighbour part.
    pub part: u32,
    /// This part's owned vertices that are in the neighbour's halo, ascending: sent after
    /// each update.
    pub send: Vec<u32>,
    /// This part's halo vertices that the neighbour owns, ascending: received after each
    /// update. Equal to the neighbour's `send` to this part, in the same order.
    pub receive: Vec<u32>,
}

/// One part's vertices and elements, and its exchanges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartHalo {
    /// The vertices this part owns, ascending.
    pub owned: Vec<u32>,
    /// Its working set: the elements with at least one owned vertex, ascending.
    pub elements: Vec<u32>,
    /// The vertices of those elements that other parts own, ascending.
    pub halo: Vec<u32>,
    /// Every part it exchanges with, by ascending part.
    pub neighbours: Vec<Exchange>,
}

/// Every part's [`PartHalo`], indexed by part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaloPlan {
    /// The kind of the working sets' elements: tetrahedra, else triangles (those of the vertex
    /// graph, [`connecting_elements`]).
    pub kind: ElementKind,
    /// How many such elements the mesh has.
    pub element_count: usize,
    /// One per part.
    pub parts: Vec<PartHalo>,
}

impl HaloPlan {
    /// The plan of `partition` on `mesh` (the mesh it partitioned: one owner per vertex), one
    /// ring deep.
    pub fn new(mesh: &Mesh, partition: &Partition) -> Result<Self, PartitionError> {
        Self::with_depth(mesh, partition, 1)
    }

    /// The plan `depth` rings deep (at least 1): each part's working set is every element
    /// that touches a vertex within `depth − 1` rings of its owned vertices (through the
    /// elements), and its halo every other-owned vertex of those elements.
    pub fn with_depth(
        mesh: &Mesh,
        partition: &Partition,
        depth: usize,
    ) -> Result<Self, PartitionError> {
        if depth == 0 {
            return Err(PartitionError::Depth);
        }
        let owner = partition.owner();
        if owner.len() != mesh.vertices.len() {
            return Err(PartitionError::Length {
                what: "the owners",
                given: owner.len(),
                vertices: mesh.vertices.len(),
            });
        }
        let elements = connecting_elements(mesh)?;
        let kind = elements.kind();
        let parts = partition.parts();
        let mut plan: Vec<PartHalo> = (0..parts)
            .map(|_| PartHalo {
                owned: Vec::new(),
                elements: Vec::new(),
                halo: Vec::new(),
                neighbours: Vec::new(),
            })
            .collect();
        for (v, &p) in owner.iter().enumerate() {
            plan[p as usize].owned.push(v as u32);
        }
        let owner_of = |v: u32, e: usize| {
            owner
                .get(v as usize)
                .copied()
                .ok_or(PartitionError::BadVertex {
                    kind: kind.name(),
                    element: e,
                    vertex: v,
                    vertices: owner.len(),
                })
        };
        // Each element's nodes checked once, then the elements around each vertex (gml's
        // vertex balls, the nodes read as i32 in place: they are below the vertex count,
        // which fits, as does the element count).
        for e in 0..elements.len() {
            for &v in elements.nodes(e) {
                owner_of(v, e)?;
            }
        }
        fits("the vertex count", owner.len())?;
        fits("the element count", elements.len())?;
        let ball = vertex_ball(
            owner.len(),
            MeshKind::from_element(kind),
            bytemuck::cast_slice(elements.node_slice()),
        );
        // Marks stamped with the part (plus one), reused from part to part.
        let mut vertex_mark = vec![0u32; owner.len()];
        let mut element_mark = vec![0u32; elements.len()];
        for (p, part) in plan.iter_mut().enumerate() {
            let stamp = p as u32 + 1;
            for &v in &part.owned {
                vertex_mark[v as usize] = stamp;
            }
            let mut frontier = part.owned.clone();
            for _ in 0..depth {
                let mut reached = Vec::new();
                for &v in &frontier {
                    let v = v as usize;
                    for &e in &ball.elements[ball.offsets[v]..ball.offsets[v + 1]] {
                        if element_mark[e as usize] == stamp {
                            continue;
                        }
                        element_mark[e as usize] = stamp;
                        part.elements.push(e as u32);
                        for &u in elements.nodes(e as usize) {
                            if vertex_mark[u as usize] != stamp {
                                vertex_mark[u as usize] = stamp;
                                part.halo.push(u);
                                reached.push(u);
                            }
                        }
                    }
                }
                frontier = reached;
            }
            part.elements.sort_unstable();
        }
        // Receives: each part's halo grouped by owner (ascending within each group).
        let mut receives: Vec<BTreeMap<u32, Vec<u32>>> = Vec::with_capacity(parts);
        for part in &mut plan {
            part.halo.sort_unstable();
            part.halo.dedup();
            let mut by_owner: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for &v in &part.halo {
                by_owner.entry(owner[v as usize]).or_default().push(v);
            }
            receives.push(by_owner);
        }
        // Sends: what b receives from a is what a sends to b.
        let mut sends: Vec<BTreeMap<u32, Vec<u32>>> = vec![BTreeMap::new(); parts];
        for (b, by_owner) in receives.iter().enumerate() {
            for (&a, list) in by_owner {
                sends[a as usize].insert(b as u32, list.clone());
            }
        }
        for (a, part) in plan.iter_mut().enumerate() {
            let mut receive = std::mem::take(&mut receives[a]);
            let mut send = std::mem::take(&mut sends[a]);
            let mut with: Vec<u32> = receive.keys().chain(send.keys()).copied().collect();
            with.sort_unstable();
            with.dedup();
            part.neighbours = with
                .into_iter()
                .map(|b| Exchange {
                    part: b,
                    send: send.remove(&b).unwrap_or_default(),
                    receive: receive.remove(&b).unwrap_or_default(),
                })
                .collect();
        }
        Ok(Self {
            kind,
            element_count: elements.len(),
            parts: plan,
        })
    }
}
