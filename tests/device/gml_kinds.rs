//! gml kernels over quadrilaterals, hexahedra, prisms, pyramids and mixed meshes: volumes and
//! centres through downlinks, vertex balls and face shells through uplinks, neighbours across
//! every kind of side, links across kinds of one dimension, the references flag through them,
//! and the links no mesh can have refused. Meshes are generated here (a box grid whose columns
//! are hexahedra, prisms or pyramids around the cell centre, the bottom pyramids split into
//! tetrahedra); every result is checked against an f64 reference computed here from the grid's
//! geometry (analytic cell volumes) or by matching sides in a hash map of sorted node sets.

use std::collections::HashMap;

use snowsim::gml::{Access, Gml, GmlError, KernelSpec, MeshKind};
use snowsim::meshio::{ElementKind, Elements, Mesh};

use crate::common::{gml, sample};

/// How one column of grid cells is meshed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Column {
    Hexahedra,
    Prisms,
    Pyramids,
}

/// A generated solid mesh, with the exact volume of each element of each kind.
struct Grid {
    mesh: Mesh,
    volumes: HashMap<ElementKind, Vec<f64>>,
    /// The box `[0, size[0]] × [0, size[1]] × [0, size[2]]`.
    size: [f64; 3],
}

/// Cell widths that differ from cell to cell, so every volume is its own.
fn widths(n: usize, base: f64, step: f64) -> Vec<f64> {
    (0..n).map(|i| base + step * (i % 3) as f64).collect()
}

fn prefix(w: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0];
    for x in w {
        out.push(out.last().unwrap() + x);
    }
    out
}

/// `cells` box cells, column `(i, j)` meshed as `column(i, j)`; with `tets_at_bottom`, the
/// pyramid on the bottom face of each bottom pyramid cell is split into two tetrahedra. Element
/// references are `1000 × kind code + index`, vertex references their index.
fn grid(cells: [usize; 3], column: impl Fn(usize, usize) -> Column, tets_at_bottom: bool) -> Grid {
    let [nx, ny, nz] = cells;
    let (wx, wy, wz) = (
        widths(nx, 1.0, 0.25),
        widths(ny, 0.75, 0.5),
        widths(nz, 0.5, 0.125),
    );
    let (xs, ys, zs) = (prefix(&wx), prefix(&wy), prefix(&wz));
    let mut mesh = Mesh::new(3);
    let v = |i: usize, j: usize, k: usize| (i + (nx + 1) * (j + (ny + 1) * k)) as u32;
    for (k, &z) in zs.iter().enumerate() {
        for (j, &y) in ys.iter().enumerate() {
            for (i, &x) in xs.iter().enumerate() {
                mesh.push_vertex([x, y, z], v(i, j, k) as i32);
            }
        }
    }
    let mut volumes: HashMap<ElementKind, Vec<f64>> = HashMap::new();
    let mut push = |mesh: &mut Mesh, kind: ElementKind, nodes: &[u32], volume: f64| {
        let list = volumes.entry(kind).or_default();
        let reference = 1000 * kind.nodes() as i32 + list.len() as i32;
        list.push(volume);
        mesh.elements_mut(kind).push(nodes, reference);
    };
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let c = [
                    v(i, j, k),
                    v(i + 1, j, k),
                    v(i + 1, j + 1, k),
                    v(i, j + 1, k),
                    v(i, j, k + 1),
                    v(i + 1, j, k + 1),
                    v(i + 1, j + 1, k + 1),
                    v(i, j + 1, k + 1),
                ];
                let volume = wx[i] * wy[j] * wz[k];
                match column(i, j) {
                    Column::Hexahedra => push(&mut mesh, ElementKind::Hexahedra, &c, volume),
                    Column::Prisms => {
                        let a = [c[0], c[1], c[2], c[4], c[5], c[6]];
                        let b = [c[0], c[2], c[3], c[4], c[6], c[7]];
                        push(&mut mesh, ElementKind::Prisms, &a, volume / 2.0);
                        push(&mut mesh, ElementKind::Prisms, &b, volume / 2.0);
                    }
                    Column::Pyramids => {
                        let centre = mesh.vertices.len() as u32;
                        let mid = [
                            (xs[i] + xs[i + 1]) / 2.0,
                            (ys[j] + ys[j + 1]) / 2.0,
                            (zs[k] + zs[k + 1]) / 2.0,
                        ];
                        mesh.push_vertex(mid, centre as i32);
                        for (f, face) in ElementKind::Hexahedra.faces().iter().enumerate() {
                            // The hexahedron's faces turn outward; a pyramid's base turns
                            // towards its apex.
                            let base = [c[face[3]], c[face[2]], c[face[1]], c[face[0]]];
                            if tets_at_bottom && k == 0 && f == 4 {
                                let [a, b, cc, d] = base;
                                let t1 = [a, b, cc, centre];
                                let t2 = [a, cc, d, centre];
                                push(&mut mesh, ElementKind::Tetrahedra, &t1, volume / 12.0);
                                push(&mut mesh, ElementKind::Tetrahedra, &t2, volume / 12.0);
                            } else {
                                let p = [base[0], base[1], base[2], base[3], centre];
                                push(&mut mesh, ElementKind::Pyramids, &p, volume / 6.0);
                            }
                        }
                    }
                }
            }
        }
    }
    Grid {
        mesh,
        volumes,
        size: [xs[nx], ys[ny], zs[nz]],
    }
}

/// The mixed grid: columns of hexahedra, prisms and pyramids (tetrahedra at the bottom).
fn mixed() -> Grid {
    let kinds = [Column::Hexahedra, Column::Prisms, Column::Pyramids];
    grid([4, 3, 3], |i, j| kinds[(i + 2 * j) % 3], true)
}

const SOLIDS: [ElementKind; 4] = [
    ElementKind::Tetrahedra,
    ElementKind::Pyramids,
    ElementKind::Prisms,
    ElementKind::Hexahedra,
];

fn gml_kind(kind: ElementKind) -> MeshKind {
    MeshKind::from_element(kind)
}

fn close(got: f64, expected: f64, tolerance: f64) -> bool {
    (got - expected).abs() <= tolerance * (1.0 + expected.abs())
}

/// OpenCL that computes the volume of a solid (or area of a surface element) of `kind` from
/// `<L>Crd[]` as a sum of tetrahedra from the vertex centre over the fan of each face (each
/// face read from `ElementKind::faces`, so a wrong table gives wrong volumes), into `Vol<L>`
/// and the vertex centre into `Mid<L>`.
fn measure_body(kind: ElementKind) -> String {
    let l = gml_kind(kind).short();
    let n = kind.nodes();
    let mut body = format!(
        "float4 c = (float4)(0.0f);\n\
         for (int k = 0; k < {n}; k++) c += {l}Crd[k];\n\
         c /= {n}.0f;\n\
         float v = 0.0f;\n"
    );
    if kind == ElementKind::Quadrilaterals || kind == ElementKind::Triangles {
        for t in 1..n - 1 {
            body.push_str(&format!(
                "v += 0.5f * length(cross({l}Crd[{t}] - {l}Crd[0], {l}Crd[{}] - {l}Crd[0]));\n",
                t + 1
            ));
        }
    } else {
        for face in kind.faces() {
            for t in 1..face.len() - 1 {
                let (a, b, d) = (face[0], face[t], face[t + 1]);
                body.push_str(&format!(
                    "v += dot(cross({l}Crd[{b}] - {l}Crd[{a}], {l}Crd[{d}] - {l}Crd[{a}]), {l}Crd[{a}] - c) / 6.0f;\n"
                ));
            }
        }
    }
    body.push_str(&format!("{l}Vol{l} = v;\n{l}Mid{l} = c;\n"));
    body
}

/// Compiles and runs the volume kernel of every element kind in `kinds`; returns each kind's
/// volumes as the device computed them, checked against `volumes` and the vertex centres
/// against an f64 average of the nodes.
fn measure(
    g: &mut Gml,
    mesh: &Mesh,
    kinds: &[ElementKind],
    volumes: &HashMap<ElementKind, Vec<f64>>,
    name: &str,
) -> HashMap<ElementKind, snowsim::gml::Solution<f32>> {
    let mut fields = HashMap::new();
    for &kind in kinds {
        let k = gml_kind(kind);
        let l = k.short();
        let vol = g.new_solution::<f32>(k, 1, &format!("Vol{l}")).unwrap();
        let mid = g
            .new_solution::<[f32; 4]>(k, 1, &format!("Mid{l}"))
            .unwrap();
        let vertices = g.mesh(MeshKind::Vertices).unwrap();
        let kernel = g
            .compile(
                KernelSpec::new(&format!("measure_{l}"), k)
                    .access(Access::read(vertices))
                    .access(Access::write(vol))
                    .access(Access::write(mid))
                    .body(&measure_body(kind)),
            )
            .unwrap();
        g.launch(kernel).unwrap();
        let got = g.read_all(vol).unwrap();
        let mids = g.read_all(mid).unwrap();
        let expected = &volumes[&kind];
        assert_eq!(got.len(), expected.len(), "{name}: {kind:?}");
        for (e, (nodes, _)) in mesh.elements(kind).iter().enumerate() {
            assert!(
                close(f64::from(got[e]), expected[e], 1e-5),
                "{name}: {kind:?} {e}: volume {} instead of {}",
                got[e],
                expected[e]
            );
            for c in 0..3 {
                let centre = nodes
                    .iter()
                    .map(|&v| mesh.vertices[v as usize][c])
                    .sum::<f64>()
                    / nodes.len() as f64;
                assert!(
                    close(f64::from(mids[e][c]), centre, 1e-6),
                    "{name}: {kind:?} {e}: centre {:?}",
                    mids[e]
                );
            }
        }
        fields.insert(kind, vol);
    }
    fields
}

fn kinds_of(mesh: &Mesh, candidates: &[ElementKind]) -> Vec<ElementKind> {
    candidates
        .iter()
        .copied()
        .filter(|&k| mesh.count(k) > 0)
        .collect()
}

#[test]
fn volumes_of_every_solid_kind_and_vertex_balls_match_the_geometry() {
    let all_of = |column| move |_: usize, _: usize| column;
    let grids = [
        (
            "hexahedra",
            grid([3, 2, 2], all_of(Column::Hexahedra), false),
        ),
        ("prisms", grid([3, 2, 2], all_of(Column::Prisms), false)),
        ("pyramids", grid([2, 2, 2], all_of(Column::Pyramids), false)),
        ("mixed", mixed()),
    ];
    for (name, grid) in grids {
        let mut g = gml();
        g.import_mesh(&grid.mesh).unwrap();
        let kinds = kinds_of(&grid.mesh, &SOLIDS);
        let fields = measure(&mut g, &grid.mesh, &kinds, &grid.volumes, name);
        // The volumes fill the box.
        let total: f64 = grid.volumes.values().flatten().sum();
        let [x, y, z] = grid.size;
        assert!(close(total, x * y * z, 1e-12), "{name}: {total}");

        // Each vertex's ball in each kind: its degree and the sum of its elements' volumes.
        for &kind in &kinds {
            let k = gml_kind(kind);
            let l = k.short();
            let deg = g
                .new_solution::<i32>(MeshKind::Vertices, 1, &format!("Deg{l}"))
                .unwrap();
            let sum = g
                .new_solution::<f32>(MeshKind::Vertices, 1, &format!("Sum{l}"))
                .unwrap();
            let kernel = g
                .compile(
                    KernelSpec::new(&format!("ball_{l}"), MeshKind::Vertices)
                        .access(Access::read(fields[&kind]))
                        .access(Access::write(deg))
                        .access(Access::write(sum))
                        .body(&format!(
                            "float s = 0.0f;\n\
                             for (int k = 0; k < Ver{l}Deg; k++) s += Ver{l}Vol{l}[k];\n\
                             VerDeg{l} = Ver{l}Deg;\n\
                             VerSum{l} = s;"
                        )),
                )
                .unwrap();
            g.launch(kernel).unwrap();
            let (degrees, sums) = (g.read_all(deg).unwrap(), g.read_all(sum).unwrap());
            let mut expected = vec![(0i32, 0.0f64); grid.mesh.vertices.len()];
            for (e, (nodes, _)) in grid.mesh.elements(kind).iter().enumerate() {
                for &v in nodes {
                    expected[v as usize].0 += 1;
                    expected[v as usize].1 += grid.volumes[&kind][e];
                }
            }
            for (v, &(d, s)) in expected.iter().enumerate() {
                assert_eq!(degrees[v], d, "{name}: {kind:?} ball of vertex {v}");
                assert!(
                    close(f64::from(sums[v]), s, 1e-5),
                    "{name}: {kind:?} ball of vertex {v}: {} vs {s}",
                    sums[v]
                );
            }
        }
    }
}

/// Every side of every element of `mesh`, by its sorted nodes: the elements (kind, index,
/// local side) that have it. Sides are edges' vertices, surface elements' edges and solids'
/// faces, as `MeshKind::sides` lists them.
type Sides = HashMap<Vec<u32>, Vec<(ElementKind, usize, usize)>>;

fn sides_of(mesh: &Mesh) -> Sides {
    let mut sides: Sides = HashMap::new();
    for kind in ElementKind::ALL {
        for (e, (nodes, _)) in mesh.elements(kind).iter().enumerate() {
            for (l, local) in gml_kind(kind).sides().iter().enumerate() {
                let mut key: Vec<u32> = local.iter().map(|&j| nodes[j]).collect();
                key.sort_unstable();
                sides.entry(key).or_default().push((kind, e, l));
            }
        }
    }
    sides
}

/// The element of `to` across side `side` of element `e` of `kind`, if any.
fn across(
    sides: &Sides,
    mesh: &Mesh,
    kind: ElementKind,
    e: usize,
    side: usize,
    to: ElementKind,
) -> Option<usize> {
    let nodes = mesh.elements(kind).nodes(e);
    let mut key: Vec<u32> = gml_kind(kind).sides()[side]
        .iter()
        .map(|&j| nodes[j])
        .collect();
    key.sort_unstable();
    sides[&key]
        .iter()
        .find(|&&(k, other, _)| k == to && (k != kind || other != e))
        .map(|&(_, other, _)| other)
}

#[test]
fn neighbours_of_every_solid_kind_follow_their_sides() {
    let grid = mixed();
    let mesh = &grid.mesh;
    let sides = sides_of(mesh);
    let mut g = gml();
    g.import_mesh(mesh).unwrap();
    let kinds = kinds_of(mesh, &SOLIDS);
    let fields = measure(&mut g, mesh, &kinds, &grid.volumes, "mixed");
    for &kind in &kinds {
        let k = gml_kind(kind);
        let l = k.short();
        let width = k.sides().len();
        let ngb = g.set_neighbours(k).unwrap();
        assert_eq!(g.link_shape(ngb).unwrap(), (k, k, width));
        let table = g.link_block(ngb, 0, mesh.count(kind)).unwrap();
        let count = g.new_solution::<i32>(k, 1, &format!("Cnt{l}")).unwrap();
        let sum = g.new_solution::<f32>(k, 1, &format!("Ngb{l}")).unwrap();
        let kernel = g
            .compile(
                KernelSpec::new(&format!("neighbours_{l}"), k)
                    .access(Access::read(fields[&kind]).via(ngb))
                    .access(Access::write(count))
                    .access(Access::write(sum))
                    .body(&format!(
                        "float s = 0.0f;\n\
                         for (int k = 1; k <= {width}; k++) s += {l}Vol{l}[k];\n\
                         {l}Cnt{l} = {l}Deg;\n\
                         {l}Ngb{l} = s - {l}Vol{l}[0];"
                    )),
            )
            .unwrap();
        g.launch(kernel).unwrap();
        let (counts, sums) = (g.read_all(count).unwrap(), g.read_all(sum).unwrap());
        for e in 0..mesh.count(kind) {
            let mut expected = (0, -grid.volumes[&kind][e]);
            for side in 0..width {
                let other = across(&sides, mesh, kind, e, side, kind);
                assert_eq!(
                    table[e * width + side],
                    other.map_or(-1, |o| o as i32),
                    "{kind:?} {e} side {side}"
                );
                if let Some(o) = other {
                    expected.0 += 1;
                    expected.1 += grid.volumes[&kind][o];
                }
            }
            assert_eq!(counts[e], expected.0, "{kind:?} {e}");
            assert!(
                close(f64::from(sums[e]), expected.1, 1e-5),
                "{kind:?} {e}: {} vs {}",
                sums[e],
                expected.1
            );
        }
    }
}

#[test]
fn default_links_cross_kinds_of_one_dimension_with_their_references() {
    let grid = mixed();
    let mesh = &grid.mesh;
    let sides = sides_of(mesh);
    let mut g = gml();
    g.import_mesh(mesh).unwrap();
    let kinds = kinds_of(mesh, &SOLIDS);
    assert_eq!(kinds.len(), 4, "the mixed grid has every solid kind");
    let fields = measure(&mut g, mesh, &kinds, &grid.volumes, "mixed");
    let mut crossings = 0;
    for &from in &kinds {
        for &to in &kinds {
            let (lk, tk) = (gml_kind(from), gml_kind(to));
            if from == to || !lk.links_to(tk) {
                continue;
            }
            let (l, t) = (lk.short(), tk.short());
            let slots = lk.transverse_sides(tk);
            let w = slots.len();
            let info = g.link_info(lk, tk).unwrap();
            assert_eq!(info.tables.len(), 1);
            assert_eq!(
                (info.tables[0].width, info.tables[0].rows),
                (w, mesh.count(from))
            );
            let deg = g.new_solution::<i32>(lk, 1, &format!("D{l}{t}")).unwrap();
            let sum = g.new_solution::<f32>(lk, 1, &format!("S{l}{t}")).unwrap();
            let refs = g.new_solution::<i32>(lk, 1, &format!("R{l}{t}")).unwrap();
            let first = g.new_solution::<i32>(lk, 1, &format!("F{l}{t}")).unwrap();
            let kernel = g
                .compile(
                    KernelSpec::new(&format!("across_{l}_{t}"), lk)
                        .access(Access::read(fields[&to]))
                        .access(Access::read(g.mesh(tk).unwrap()).with_refs())
                        .access(Access::write(deg))
                        .access(Access::write(sum))
                        .access(Access::write(refs))
                        .access(Access::write(first))
                        .body(&format!(
                            "float s = 0.0f; int r = 0, f = -1;\n\
                             for (int k = 0; k < {w}; k++) {{\n\
                                 s += {l}Vol{t}[k]; r += {l}{t}Ref[k];\n\
                                 if (f < 0 && {l}{t}[k] >= 0) f = k * 100000 + {l}{t}Ver[k].s0;\n\
                             }}\n\
                             {l}D{l}{t} = {l}{t}Deg; {l}S{l}{t} = s; {l}R{l}{t} = r; {l}F{l}{t} = f;"
                        )),
                )
                .unwrap();
            g.launch(kernel).unwrap();
            let degs = g.read_all(deg).unwrap();
            let sums = g.read_all(sum).unwrap();
            let got_refs = g.read_all(refs).unwrap();
            let firsts = g.read_all(first).unwrap();
            let to_refs = mesh.elements(to).refs();
            for e in 0..mesh.count(from) {
                let (mut d, mut s, mut r, mut f) = (0, 0.0, 0, -1);
                for (k, &side) in slots.iter().enumerate() {
                    if let Some(o) = across(&sides, mesh, from, e, side, to) {
                        d += 1;
                        s += grid.volumes[&to][o];
                        r += to_refs[o];
                        if f < 0 {
                            f = k as i32 * 100000 + mesh.elements(to).nodes(o)[0] as i32;
                        }
                    }
                }
                crossings += d;
                let what = format!("{from:?} {e} → {to:?}");
                assert_eq!((degs[e], got_refs[e], firsts[e]), (d, r, f), "{what}");
                assert!(
                    close(f64::from(sums[e]), s, 1e-5),
                    "{what}: {} vs {s}",
                    sums[e]
                );
            }
        }
    }
    // Hexahedra meet pyramids and prisms, prisms pyramids, pyramids tetrahedra, both ways.
    assert!(crossings > 100, "{crossings} crossings");
}

#[test]
fn every_interior_face_has_two_elements_and_every_boundary_face_one() {
    let hex_samples = ["hexahedra.meshb", "hex_cube_gmsh.mesh"];
    let mut cases: Vec<(String, Mesh, Option<[f64; 3]>)> = hex_samples
        .iter()
        .map(|n| (n.to_string(), sample(n), None))
        .collect();
    let grid = mixed();
    cases.push(("mixed".into(), grid.mesh, Some(grid.size)));
    for (name, mut mesh, size) in cases {
        // Only the solids: the faces come from extract_faces.
        for kind in [
            ElementKind::Edges,
            ElementKind::Triangles,
            ElementKind::Quadrilaterals,
        ] {
            *mesh.elements_mut(kind) = Elements::new(kind);
        }
        let mut g = gml();
        g.import_mesh(&mesh).unwrap();
        let (tris, quads) = g.extract_faces().unwrap();
        let solids = kinds_of(&mesh, &SOLIDS);
        let mut lo = [f64::MAX; 3];
        let mut hi = [f64::MIN; 3];
        for p in &mesh.vertices {
            for c in 0..3 {
                lo[c] = lo[c].min(p[c]);
                hi[c] = hi[c].max(p[c]);
            }
        }
        if let Some(size) = size {
            assert_eq!((lo, hi), ([0.0; 3], size), "{name}");
        }
        for (face_kind, count) in [
            (MeshKind::Triangles, tris),
            (MeshKind::Quadrilaterals, quads),
        ] {
            if count == 0 {
                continue;
            }
            let f = face_kind.short();
            let mut total = vec![0i32; count];
            let mut entries = 0usize;
            for &solid in &solids {
                let s = gml_kind(solid);
                if !face_kind.links_to(s) {
                    continue;
                }
                let t = s.short();
                let one = g.new_solution::<f32>(s, 1, &format!("One{f}{t}")).unwrap();
                g.set_block(one, 0, &vec![1.0f32; mesh.count(solid)])
                    .unwrap();
                let deg = g
                    .new_solution::<i32>(face_kind, 1, &format!("Deg{f}{t}"))
                    .unwrap();
                let kernel = g
                    .compile(
                        KernelSpec::new(&format!("shell_{f}_{t}"), face_kind)
                            .access(Access::read(one))
                            .access(Access::write(deg))
                            .body(&format!(
                                "float n = 0.0f;\n\
                                 for (int k = 0; k < {f}{t}Deg; k++) n += {f}{t}One{f}{t}[k];\n\
                                 {f}Deg{f}{t} = (int)n;"
                            )),
                    )
                    .unwrap();
                g.launch(kernel).unwrap();
                for (sum, d) in total.iter_mut().zip(g.read_all(deg).unwrap()) {
                    *sum += d;
                }
                entries += mesh.count(solid) * gml_kind(solid).sub_entities(face_kind).len();
            }
            assert_eq!(total.iter().sum::<i32>() as usize, entries, "{name}: {f}");
            let (nodes, _) = g.elements(face_kind).unwrap();
            let n = face_kind.nodes();
            for (i, face) in nodes.chunks(n).enumerate() {
                let on_boundary = (0..3).any(|c| {
                    [lo[c], hi[c]].iter().any(|&plane| {
                        face.iter()
                            .all(|&v| (mesh.vertices[v as usize][c] - plane).abs() < 1e-9)
                    })
                });
                let expected = if on_boundary { 1 } else { 2 };
                assert_eq!(total[i], expected, "{name}: {f} {i} {face:?}");
            }
        }
    }
}

/// A planar grid of quadrilaterals with every third cell cut into two triangles along its
/// diagonal, and the area of each element.
fn quads_and_triangles() -> (Mesh, HashMap<ElementKind, Vec<f64>>) {
    let (nx, ny) = (5, 4);
    let (wx, wy) = (widths(nx, 1.0, 0.5), widths(ny, 0.5, 0.25));
    let (xs, ys) = (prefix(&wx), prefix(&wy));
    let mut mesh = Mesh::new(3);
    for &y in &ys {
        for &x in &xs {
            mesh.push_vertex([x, y, 0.0], 0);
        }
    }
    let v = |i: usize, j: usize| (i + (nx + 1) * j) as u32;
    let mut areas: HashMap<ElementKind, Vec<f64>> = HashMap::new();
    for (j, &dy) in wy.iter().enumerate() {
        for (i, &dx) in wx.iter().enumerate() {
            let c = [v(i, j), v(i + 1, j), v(i + 1, j + 1), v(i, j + 1)];
            let area = dx * dy;
            if (i + j) % 3 == 0 {
                for t in [[c[0], c[1], c[2]], [c[0], c[2], c[3]]] {
                    let list = areas.entry(ElementKind::Triangles).or_default();
                    mesh.elements_mut(ElementKind::Triangles)
                        .push(&t, 30 + list.len() as i32);
                    list.push(area / 2.0);
                }
            } else {
                let list = areas.entry(ElementKind::Quadrilaterals).or_default();
                mesh.elements_mut(ElementKind::Quadrilaterals)
                    .push(&c, 40 + list.len() as i32);
                list.push(area);
            }
        }
    }
    (mesh, areas)
}

#[test]
fn quadrilaterals_measure_meet_triangles_and_their_neighbours() {
    let (mesh, areas) = quads_and_triangles();
    let sides = sides_of(&mesh);
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let surface = [ElementKind::Triangles, ElementKind::Quadrilaterals];
    let fields = measure(&mut g, &mesh, &surface, &areas, "quads and triangles");
    let (q, t) = (ElementKind::Quadrilaterals, ElementKind::Triangles);
    let ngb = g.set_neighbours(MeshKind::Quadrilaterals).unwrap();
    let out = g
        .new_solution::<[f32; 4]>(MeshKind::Quadrilaterals, 1, "Out")
        .unwrap();
    // Per quadrilateral: same-kind neighbours and their areas through `Ngb` (with their
    // references), triangles across its edges and their areas through the default link.
    let kernel = g
        .compile(
            KernelSpec::new("quad_sides", MeshKind::Quadrilaterals)
                .access(Access::read(fields[&q]).via(ngb))
                .access(Access::read(g.mesh(MeshKind::Quadrilaterals).unwrap()).via(ngb).with_refs())
                .access(Access::read(fields[&t]))
                .access(Access::write(out))
                .body(
                    "float s = 0.0f, u = 0.0f; int r = 0;\n\
                     for (int k = 1; k <= 4; k++) { s += QadVolQad[k]; r += QadNgbRef[k]; }\n\
                     for (int k = 0; k < 4; k++) u += QadVolTri[k];\n\
                     QadOut = (float4)(s, (float)(QadDeg * 1000 + QadTriDeg), u, (float)(r - QadNgbRef[0]));",
                ),
        )
        .unwrap();
    g.launch(kernel).unwrap();
    let got = g.read_all(out).unwrap();
    let quad_refs = mesh.elements(q).refs();
    for e in 0..mesh.count(q) {
        let mut expected = [0.0f64; 4];
        let (mut same, mut other) = (0, 0);
        expected[3] = -f64::from(quad_refs[e]);
        for side in 0..4 {
            if let Some(o) = across(&sides, &mesh, q, e, side, q) {
                same += 1;
                expected[0] += areas[&q][o];
                expected[3] += f64::from(quad_refs[o]);
            }
            if let Some(o) = across(&sides, &mesh, q, e, side, t) {
                other += 1;
                expected[2] += areas[&t][o];
            }
        }
        expected[1] = f64::from(same * 1000 + other);
        for c in 0..4 {
            assert!(
                close(f64::from(got[e][c]), expected[c], 1e-5),
                "quadrilateral {e}: {:?} vs {expected:?}",
                got[e]
            );
        }
    }
    // And the other way: triangles reading quadrilateral areas across their edges.
    let tri_out = g
        .new_solution::<f32>(MeshKind::Triangles, 1, "QuadArea")
        .unwrap();
    let kernel = g
        .compile(
            KernelSpec::new("triangle_sides", MeshKind::Triangles)
                .access(Access::read(fields[&q]))
                .access(Access::write(tri_out))
                .body("TriQuadArea = TriVolQad[0] + TriVolQad[1] + TriVolQad[2];"),
        )
        .unwrap();
    g.launch(kernel).unwrap();
    let got = g.read_all(tri_out).unwrap();
    for (e, &value) in got.iter().enumerate() {
        let expected: f64 = (0..3)
            .filter_map(|side| across(&sides, &mesh, t, e, side, q))
            .map(|o| areas[&q][o])
            .sum();
        assert!(close(f64::from(value), expected, 1e-5), "triangle {e}");
    }
}

#[test]
fn edges_of_a_closed_line_are_neighbours_through_their_vertices() {
    let n = 37u32;
    let mut mesh = Mesh::new(3);
    for i in 0..n {
        let a = f64::from(i) / f64::from(n) * std::f64::consts::TAU;
        mesh.push_vertex([a.cos() * (1.0 + 0.3 * f64::from(i % 4)), a.sin(), 0.0], 0);
    }
    for i in 0..n {
        // Every other edge reversed: neighbours do not depend on orientation.
        let (a, b) = (i, (i + 1) % n);
        let edge = if i % 2 == 0 { [a, b] } else { [b, a] };
        mesh.elements_mut(ElementKind::Edges).push(&edge, i as i32);
    }
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let length = g.new_solution::<f32>(MeshKind::Edges, 1, "Len").unwrap();
    let around = g.new_solution::<f32>(MeshKind::Edges, 1, "Around").unwrap();
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let k = g
        .compile(
            KernelSpec::new("edge_length", MeshKind::Edges)
                .access(Access::read(vertices))
                .access(Access::write(length))
                .body("EdgLen = distance(EdgCrd[0], EdgCrd[1]);"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let ngb = g.set_neighbours(MeshKind::Edges).unwrap();
    let k = g
        .compile(
            KernelSpec::new("edge_around", MeshKind::Edges)
                .access(Access::read(length).via(ngb))
                .access(Access::write(around))
                .body("EdgAround = EdgDeg == 2 ? EdgLen[1] + EdgLen[2] : -1.0f;"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let got = g.read_all(around).unwrap();
    let len = |i: u32| {
        let (p, q) = (
            mesh.vertices[i as usize],
            mesh.vertices[((i + 1) % n) as usize],
        );
        ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2)).sqrt()
    };
    for i in 0..n {
        let expected = len((i + n - 1) % n) + len((i + 1) % n);
        assert!(
            close(f64::from(got[i as usize]), expected, 1e-5),
            "edge {i}"
        );
    }
    // A third edge at a vertex: the line is not a manifold.
    mesh.elements_mut(ElementKind::Edges).push(&[0, n / 2], 99);
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    match g.set_neighbours(MeshKind::Edges) {
        Err(GmlError::NonManifold { kind, nodes }) => {
            assert_eq!(kind, MeshKind::Edges);
            assert!(nodes == [0] || nodes == [(n / 2) as i32], "{nodes:?}");
        }
        other => panic!("expected NonManifold, got {other:?}"),
    }
    assert!(matches!(
        g.set_neighbours(MeshKind::Vertices),
        Err(GmlError::NoNeighbours(MeshKind::Vertices))
    ));
}

/// Compiles a loop over `from` that reads a new field on `to`.
fn read_across(g: &mut Gml, from: MeshKind, to: MeshKind) -> Result<(), GmlError> {
    static FIELDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = FIELDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let field = g.new_solution::<f32>(to, 1, &format!("X{n}"))?;
    g.compile(
        KernelSpec::new("impossible", from)
            .access(Access::read(field))
            .body(""),
    )
    .map(|_| ())
}

#[test]
fn links_no_mesh_can_have_are_refused() {
    // Every kind in one instance: the mixed grid, its faces and edges.
    let grid = mixed();
    let mut g = gml();
    g.import_mesh(&grid.mesh).unwrap();
    g.extract_faces().unwrap();
    g.extract_edges().unwrap();
    use MeshKind::*;
    for (from, to) in [
        (Quadrilaterals, Tetrahedra),
        (Triangles, Hexahedra),
        (Hexahedra, Triangles),
        (Tetrahedra, Quadrilaterals),
        (Tetrahedra, Hexahedra),
        (Hexahedra, Tetrahedra),
    ] {
        match read_across(&mut g, from, to) {
            Err(GmlError::ImpossibleLink {
                kernel: Some(kernel),
                from: f,
                to: t,
                why,
            }) => {
                assert_eq!((kernel.as_str(), f, t), ("impossible", from, to));
                assert!(
                    why.contains("never faces") || why.contains("share no face"),
                    "{why}"
                );
            }
            other => panic!("{from} → {to}: expected ImpossibleLink, got {other:?}"),
        }
        assert!(
            matches!(
                g.link_info(from, to),
                Err(GmlError::ImpossibleLink { kernel: None, .. })
            ),
            "link_info({from}, {to})"
        );
    }
    let message = read_across(&mut g, Quadrilaterals, Tetrahedra)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("quadrilaterals are never faces of tetrahedra"),
        "{message}"
    );
    // Their neighbours in the table compile.
    for (from, to) in [
        (Triangles, Tetrahedra),
        (Quadrilaterals, Hexahedra),
        (Hexahedra, Quadrilaterals),
        (Tetrahedra, Triangles),
        (Tetrahedra, Pyramids),
        (Hexahedra, Prisms),
    ] {
        assert!(from.links_to(to));
        read_across(&mut g, from, to).unwrap_or_else(|e| panic!("{from} → {to}: {e}"));
    }
}

#[test]
fn references_are_refused_on_solutions_and_a_side_of_three_is_refused() {
    let grid = mixed();
    let mut g = gml();
    g.import_mesh(&grid.mesh).unwrap();
    let field = g.new_solution::<f32>(MeshKind::Prisms, 1, "P").unwrap();
    for loop_kind in [MeshKind::Prisms, MeshKind::Vertices, MeshKind::Hexahedra] {
        match g.compile(
            KernelSpec::new("refs", loop_kind)
                .access(Access::read(field).with_refs())
                .body(""),
        ) {
            Err(GmlError::OptionNotApplicable { kernel, data, .. }) => {
                assert_eq!((kernel.as_str(), data.as_str()), ("refs", "P"));
            }
            other => panic!("{loop_kind}: expected OptionNotApplicable, got {other:?}"),
        }
    }
    let ngb = g.set_neighbours(MeshKind::Prisms).unwrap();
    assert!(matches!(
        g.compile(
            KernelSpec::new("refs", MeshKind::Prisms)
                .access(Access::read(field).via(ngb).with_refs())
                .body("")
        ),
        Err(GmlError::OptionNotApplicable { .. })
    ));

    // A tetrahedron glued on a face that two pyramids already share.
    let mut mesh = grid.mesh.clone();
    let (p, _) = mesh.elements(ElementKind::Pyramids).iter().next().unwrap();
    let face = [p[0], p[1], p[4]];
    let apex = mesh.vertices.len() as u32;
    mesh.push_vertex([-1.0, -1.0, -1.0], 0);
    let mut g = gml();
    mesh.elements_mut(ElementKind::Tetrahedra)
        .push(&[face[0], face[1], face[2], apex], 0);
    g.import_mesh(&mesh).unwrap();
    let shared = sides_of(&mesh)[&{
        let mut k = face.to_vec();
        k.sort_unstable();
        k
    }]
        .len();
    assert_eq!(shared, 3);
    match g.link_info(MeshKind::Pyramids, MeshKind::Tetrahedra) {
        Err(GmlError::NonManifold { kind, mut nodes }) => {
            assert_eq!(kind, MeshKind::Pyramids);
            nodes.sort_unstable();
            let mut face: Vec<i32> = face.iter().map(|&v| v as i32).collect();
            face.sort_unstable();
            assert_eq!(nodes, face);
        }
        other => panic!("expected NonManifold, got {other:?}"),
    }
}
