//! The room's results recounted by brute force, independently of its own graph.

use std::collections::BTreeSet;

use super::*;
use crate::meshio::generate::tet_grid;
use crate::meshio::{ElementKind, Mesh};
use crate::terrain::{Terrain, TerrainSpec};

/// A terrain-following mesh of `cells` cells and `layers` layers over a hill, with its
/// columns (vertex → column, and how many columns).
fn hill(cells: [usize; 2], layers: usize) -> (Mesh, Vec<u32>, usize) {
    let spec = TerrainSpec {
        size: [1200.0, 800.0, 600.0],
        relief: 0.0,
        cells,
        layers,
        grading: 1.2,
    };
    let terrain = Terrain::from_fn(spec, |x, y| {
        150.0 * (-((x - 600.0).powi(2) + (y - 400.0).powi(2)) / 80_000.0).exp()
    })
    .unwrap();
    let columns = terrain.columns();
    let count = columns.ground.len();
    (terrain.volume_mesh(), columns.column, count)
}

/// Mesh edges (pairs of distinct nodes of an element, once each) whose ends have different
/// owners, from the elements themselves.
fn brute_edge_cut(mesh: &Mesh, kind: ElementKind, owner: &[u32]) -> usize {
    let mut edges = BTreeSet::new();
    for (nodes, _) in mesh.elements(kind).iter() {
        for &a in nodes {
            for &b in nodes {
                if a < b {
                    edges.insert((a, b));
                }
            }
        }
    }
    edges
        .iter()
        .filter(|(a, b)| owner[*a as usize] != owner[*b as usize])
        .count()
}

/// Per part: (elements with an owned vertex, their vertices owned elsewhere), by brute force.
fn brute_halos(
    mesh: &Mesh,
    kind: ElementKind,
    owner: &[u32],
    parts: usize,
) -> Vec<(usize, Vec<u32>)> {
    (0..parts as u32)
        .map(|p| {
            let mut elements = 0;
            let mut halo = BTreeSet::new();
            for (nodes, _) in mesh.elements(kind).iter() {
                if nodes.iter().any(|&v| owner[v as usize] == p) {
                    elements += 1;
                    halo.extend(nodes.iter().filter(|&&v| owner[v as usize] != p));
                }
            }
            (elements, halo.into_iter().collect())
        })
        .collect()
}

/// Checks the plan and the report of `partition` against brute force; returns the report.
fn recount(mesh: &Mesh, partition: &Partition) -> PartitionReport {
    let graph = VertexGraph::of_mesh(mesh).unwrap();
    let plan = HaloPlan::new(mesh, partition).unwrap();
    let report = PartitionReport::new(&graph, partition, &plan);
    let owner = partition.owner();
    let k = partition.parts();
    assert_eq!(
        report.edge_cut,
        brute_edge_cut(mesh, plan.kind, owner),
        "K = {k}"
    );
    for (p, (elements, halo)) in brute_halos(mesh, plan.kind, owner, k)
        .into_iter()
        .enumerate()
    {
        let part = &plan.parts[p];
        assert_eq!(part.elements.len(), elements, "K = {k}, part {p}");
        assert_eq!(report.per_part[p].elements, elements);
        assert_eq!(part.halo, halo, "K = {k}, part {p}");
        assert_eq!(report.per_part[p].halo, halo.len());
        let owned: Vec<u32> = (0..owner.len() as u32)
            .filter(|&v| owner[v as usize] == p as u32)
            .collect();
        assert_eq!(part.owned, owned);
        assert_eq!(report.per_part[p].owned, owned.len());
    }
    // Balance recounted from the owners (unit weights).
    let sizes: Vec<usize> = (0..k as u32)
        .map(|p| owner.iter().filter(|&&o| o == p).count())
        .collect();
    let largest = *sizes.iter().max().unwrap() as f64;
    let balance = largest / (owner.len() as f64 / k as f64);
    assert!(
        (report.balance - balance).abs() < 1e-12,
        "{} vs {balance}",
        report.balance
    );
    report
}

/// What part a sends to b is exactly what b receives from a, in the same order; and every
/// halo vertex is received from its owner once.
fn assert_symmetric(plan: &HaloPlan, owner: &[u32]) {
    for (a, part) in plan.parts.iter().enumerate() {
        for exchange in &part.neighbours {
            let b = exchange.part as usize;
            assert_ne!(a, b);
            let back = plan.parts[b]
                .neighbours
                .iter()
                .find(|n| n.part as usize == a)
                .unwrap_or_else(|| panic!("{b} does not list {a} as a neighbour"));
            assert_eq!(exchange.send, back.receive, "{a} -> {b}");
            assert_eq!(exchange.receive, back.send, "{b} -> {a}");
            assert!(exchange.send.iter().all(|&v| owner[v as usize] == a as u32));
            assert!(
                exchange
                    .receive
                    .iter()
                    .all(|&v| owner[v as usize] == b as u32)
            );
            assert!(!exchange.send.is_empty() || !exchange.receive.is_empty());
        }
        let mut received: Vec<u32> = part
            .neighbours
            .iter()
            .flat_map(|n| n.receive.iter().copied())
            .collect();
        received.sort_unstable();
        assert_eq!(received, part.halo, "part {a}");
    }
}

#[test]
fn edge_cut_halos_and_balance_match_brute_force_for_two_to_four_parts() {
    // 2 925 vertices, 14 112 tetrahedra.
    let mesh = tet_grid([14, 14, 12]);
    let graph = VertexGraph::of_mesh(&mesh).unwrap();
    for k in [2, 3, 4] {
        let partition = Partition::kway(&graph, k, None).unwrap();
        assert_eq!(partition.unit(), Unit::Vertices);
        let report = recount(&mesh, &partition);
        assert_eq!(report.empty_parts, 0, "K = {k}");
        assert!(report.per_part.iter().all(|p| p.owned > 0));
        // METIS's tolerance is 1.03.
        assert!(report.balance <= 1.1, "K = {k}: balance {}", report.balance);
        assert!(
            report.edge_cut > 0 && report.edge_cut < report.edges / 4,
            "K = {k}: {report:?}"
        );
        assert_symmetric(
            &HaloPlan::new(&mesh, &partition).unwrap(),
            partition.owner(),
        );
    }
}

#[test]
fn given_weights_are_balanced_instead_of_counts() {
    // The upper half of the cube weighs 4 a vertex: balance by weight, so the parts' vertex
    // counts differ while their weights do not.
    let mesh = tet_grid([12, 12, 12]);
    let graph = VertexGraph::of_mesh(&mesh).unwrap();
    let weights: Vec<u32> = mesh
        .vertices
        .iter()
        .map(|p| if p[2] > 0.5 { 4 } else { 1 })
        .collect();
    let partition = Partition::kway(&graph, 2, Some(&weights)).unwrap();
    assert!(partition.balance() <= 1.1, "{}", partition.balance());
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    assert_eq!(partition.part_weights().iter().sum::<u64>(), total);
    let counts: Vec<usize> = (0..2)
        .map(|p| partition.owner().iter().filter(|&&o| o == p).count())
        .collect();
    let spread = counts[0].abs_diff(counts[1]) as f64 / mesh.vertices.len() as f64;
    assert!(spread > 0.2, "vertex counts {counts:?} look unweighted");
    // Bad weights are errors.
    assert!(matches!(
        Partition::kway(&graph, 2, Some(&weights[1..])),
        Err(PartitionError::Length { .. })
    ));
    let mut zero = weights.clone();
    zero[7] = 0;
    assert_eq!(
        Partition::kway(&graph, 2, Some(&zero)),
        Err(PartitionError::ZeroWeight { vertex: 7 })
    );
}

#[test]
fn one_part_needs_no_metis_and_cuts_nothing() {
    let (mesh, column, columns) = hill([6, 5], 4);
    let graph = VertexGraph::of_mesh(&mesh).unwrap();
    for partition in [
        Partition::kway(&graph, 1, None).unwrap(),
        Partition::by_columns(&graph, &column, columns, 1, None).unwrap(),
    ] {
        assert!(partition.owner().iter().all(|&p| p == 0));
        let report = recount(&mesh, &partition);
        assert_eq!(
            (report.edge_cut, report.halo_total, report.balance),
            (0, 0, 1.0)
        );
        assert!(report.per_part[0].neighbours.is_empty());
        assert_eq!(
            report.per_part[0].elements,
            mesh.count(ElementKind::Tetrahedra)
        );
    }
}

#[test]
fn zero_parts_and_more_parts_than_vertices_or_columns_are_errors_naming_both() {
    let (mesh, column, columns) = hill([4, 3], 2);
    let graph = VertexGraph::of_mesh(&mesh).unwrap();
    let n = mesh.vertices.len();
    assert_eq!(
        Partition::kway(&graph, 0, None),
        Err(PartitionError::NoParts)
    );
    assert_eq!(
        Partition::by_columns(&graph, &column, columns, 0, None),
        Err(PartitionError::NoParts)
    );
    let err = Partition::kway(&graph, n + 1, None).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("--parts {}", n + 1)) && text.contains(&format!("{n} vertices")),
        "{text}"
    );
    // 4 × 3 cells: 20 columns of 3 levels. More parts than columns, fewer than vertices.
    assert_eq!(columns, 20);
    let err = Partition::by_columns(&graph, &column, columns, 21, None).unwrap_err();
    assert_eq!(
        err,
        PartitionError::TooManyParts {
            parts: 21,
            count: 20,
            what: "columns"
        }
    );
    assert!(err.to_string().contains("--parts 21") && err.to_string().contains("20 columns"));
    // A column map that does not fit the mesh.
    assert!(matches!(
        Partition::by_columns(&graph, &column[1..], columns, 2, None),
        Err(PartitionError::Length { .. })
    ));
    assert!(matches!(
        Partition::by_columns(&graph, &column, columns - 1, 2, None),
        Err(PartitionError::OutOfRange { what: "column", .. })
    ));
    assert!(matches!(
        Partition::by_columns(&graph, &column, columns + 1, 2, None),
        Err(PartitionError::EmptyColumn { column: 20, .. })
    ));
    // As many parts as vertices is allowed.
    assert_eq!(Partition::kway(&graph, n, None).unwrap().parts(), n);
}

#[test]
fn a_terrain_partitioned_by_columns_keeps_every_column_on_one_part() {
    // 30 × 24 cells, 12 layers: 775 columns, 10 075 vertices.
    let (mesh, column, columns) = hill([30, 24], 12);
    let graph = VertexGraph::of_mesh(&mesh).unwrap();
    // The column graph equals brute force: columns with adjacent vertices.
    let cg = column_graph(&graph, &column, columns).unwrap();
    let mut brute = vec![BTreeSet::new(); columns];
    for (u, v) in graph.edges() {
        let (a, b) = (column[u], column[v]);
        if a != b {
            brute[a as usize].insert(b as i32);
            brute[b as usize].insert(a as i32);
        }
    }
    for (c, row) in brute.iter().enumerate() {
        assert_eq!(
            cg.neighbours(c).iter().copied().collect::<BTreeSet<_>>(),
            *row
        );
    }
    for k in [2, 3, 4, 8] {
        let partition = Partition::by_columns(&graph, &column, columns, k, None).unwrap();
        assert_eq!(partition.unit(), Unit::Columns);
        let mut part_of = vec![None; columns];
        for (v, &p) in partition.owner().iter().enumerate() {
            let c = column[v] as usize;
            assert!(
                part_of[c].is_none_or(|q| q == p),
                "K = {k}: column {c} spans parts {:?} and {p}",
                part_of[c]
            );
            part_of[c] = Some(p);
        }
        let report = recount(&mesh, &partition);
        assert_eq!(report.empty_parts, 0, "K = {k}");
        // Whole columns of 13 vertices: the granularity can add to METIS's 1.03.
        assert!(report.balance <= 1.1, "K = {k}: balance {}", report.balance);
        assert_symmetric(
            &HaloPlan::new(&mesh, &partition).unwrap(),
            partition.owner(),
        );
    }
}

#[test]
fn a_surface_mesh_is_partitioned_by_its_triangles() {
    let (mesh, ..) = hill([20, 20], 1);
    let mut surface = Mesh::new(3);
    surface.vertices = mesh.vertices.clone();
    surface.vertex_refs = mesh.vertex_refs.clone();
    for (t, r) in mesh.elements(ElementKind::Triangles).iter() {
        surface.elements_mut(ElementKind::Triangles).push(t, r);
    }
    let graph = VertexGraph::of_mesh(&surface).unwrap();
    let partition = Partition::kway(&graph, 3, None).unwrap();
    let report = recount(&surface, &partition);
    assert_eq!(report.element_kind, "triangles");
    assert_symmetric(
        &HaloPlan::new(&surface, &partition).unwrap(),
        partition.owner(),
    );
}

#[test]
fn a_partition_from_owners_is_checked() {
    let mesh = tet_grid([2, 2, 2]);
    let n = mesh.vertices.len();
    let owner: Vec<u32> = (0..n as u32).map(|v| v % 3).collect();
    let partition = Partition::from_owner(owner.clone(), 3, None).unwrap();
    recount(&mesh, &partition);
    assert_symmetric(&HaloPlan::new(&mesh, &partition).unwrap(), &owner);
    assert_eq!(
        Partition::from_owner(owner.clone(), 2, None),
        Err(PartitionError::OutOfRange {
            what: "part",
            vertex: 2,
            value: 2,
            count: 2
        })
    );
    let short = Partition::from_owner(owner[1..].to_vec(), 3, None).unwrap();
    assert!(matches!(
        HaloPlan::new(&mesh, &short),
        Err(PartitionError::Length { .. })
    ));
}

/// Per part: the elements touching a vertex within one ring of its owned vertices, and their
/// vertices owned elsewhere, by brute force over all elements twice.
fn brute_two_deep(mesh: &Mesh, owner: &[u32], p: u32) -> (Vec<u32>, Vec<u32>) {
    let tets: Vec<&[u32]> = mesh
        .elements(ElementKind::Tetrahedra)
        .iter()
        .map(|(nodes, _)| nodes)
        .collect();
    let mut ring: BTreeSet<u32> = BTreeSet::new();
    for nodes in &tets {
        if nodes.iter().any(|&v| owner[v as usize] == p) {
            ring.extend(nodes.iter().copied());
        }
    }
    let mut elements = Vec::new();
    let mut halo = BTreeSet::new();
    for (e, nodes) in tets.iter().enumerate() {
        if nodes.iter().any(|v| ring.contains(v)) {
            elements.push(e as u32);
            halo.extend(nodes.iter().copied().filter(|&v| owner[v as usize] != p));
        }
    }
    (elements, halo.into_iter().collect())
}

#[test]
fn a_halo_two_rings_deep_holds_the_elements_of_the_first_ring_and_exchanges_symmetrically() {
    let mesh = tet_grid([10, 9, 6]);
    let graph = VertexGraph::of_mesh(&mesh).unwrap();
    let partition = Partition::kway(&graph, 3, None).unwrap();
    let owner = partition.owner();
    let one = HaloPlan::new(&mesh, &partition).unwrap();
    assert_eq!(one, HaloPlan::with_depth(&mesh, &partition, 1).unwrap());
    let two = HaloPlan::with_depth(&mesh, &partition, 2).unwrap();
    assert_symmetric(&two, owner);
    for (p, (shallow, deep)) in one.parts.iter().zip(&two.parts).enumerate() {
        let (elements, halo) = brute_two_deep(&mesh, owner, p as u32);
        assert_eq!(deep.elements, elements, "part {p}");
        assert_eq!(deep.halo, halo, "part {p}");
        assert_eq!(deep.owned, shallow.owned);
        // Deeper, and strictly: a grid's second ring is never empty.
        assert!(
            shallow
                .halo
                .iter()
                .all(|v| deep.halo.binary_search(v).is_ok())
        );
        assert!(deep.halo.len() > shallow.halo.len(), "part {p}");
    }
    assert!(matches!(
        HaloPlan::with_depth(&mesh, &partition, 0),
        Err(PartitionError::Depth)
    ));
}
