//! The GMlib manual's user links (sections 2.2 and 3.23): topological tables the user builds
//! on the host and hands to kernels in place of gml's automatic links.
//!
//! ```text
//! cargo run --release --example user_links -- sample_meshes/square_2d.meshb
//! cargo run --release --example user_links -- sample_meshes/cube.meshb
//! ```
//!
//! - **Upwind and downwind triangles** (section 2.2): "in the case of edges pointing to
//!   triangles, you may instead need a list of only two triangles pointing to the upwind and
//!   downwind elements, as you are developing a flow solver". An edge → triangle link of width
//!   2 (upwind first, -1 where there is none); an edge kernel reads the upwind concentration
//!   through it and computes the advective flux across the edge (surface meshes).
//! - **An assembled vertex operator**: a vertex → vertex link holding each vertex's neighbours
//!   in the edge graph (width = the largest degree, -1 padding) and the operator's coefficients
//!   stored per vertex, one per link entry: `y = A x` with
//!   `(A x)_i = Σ_j w_ij (x_i − x_j)`, `w_ij = 1 / |p_i − p_j|` (a graph Laplacian), the
//!   product a solver needs without the automatic uplinks.
//! - **The closest elements** (section 2.2's "180 geometrically closest pyramids from any
//!   vertex", `ValleyOfTheKings`): a vertex → tetrahedron link to the `k` tetrahedra whose
//!   centres are closest to each vertex; a vertex kernel averages their volumes (volume meshes).
//!
//! Every link is filled with one `set_link_block` (`GmlSetDataBlock`) and read back with
//! `link_block`.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind};

/// What the upwind example computed.
pub struct Upwind {
    /// Two triangles per edge, upwind first, -1 for none (as read back from gml).
    pub link: Vec<i32>,
    /// Concentration of each triangle: `1 + x + 2 y` at its centre (device).
    pub concentration: Vec<f32>,
    /// Flux across each edge: `|w × e| · c_upwind`, 0 without an upwind triangle (device).
    pub flux: Vec<f32>,
}

/// Centre of each element of `kind`, in f64 on the host.
fn centres(gml: &mut Gml, kind: MeshKind) -> anyhow::Result<Vec<[f64; 3]>> {
    let (points, _) = gml.vertices()?;
    let (nodes, _) = gml.elements(kind)?;
    let n = kind.nodes();
    Ok(nodes
        .chunks_exact(n)
        .map(|element| {
            let mut c = [0.0; 3];
            for &v in element {
                for (k, ck) in c.iter_mut().enumerate() {
                    *ck += f64::from(points[v as usize][k]) / n as f64;
                }
            }
            c
        })
        .collect())
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The edge → triangle upwind/downwind link, the concentration and the edge fluxes for a wind
/// `wind` (in the xy plane). Extracts the edges first.
pub fn upwind(gml: &mut Gml, wind: [f32; 2]) -> anyhow::Result<Upwind> {
    gml.extract_edges()?;
    let (edges, _) = gml.elements(MeshKind::Edges)?;
    let (triangles, _) = gml.elements(MeshKind::Triangles)?;
    let centre = centres(gml, MeshKind::Triangles)?;
    let (points, _) = gml.vertices()?;
    let mut by_edge: HashMap<(u32, u32), Vec<i32>> = HashMap::new();
    for (t, tri) in triangles.chunks_exact(3).enumerate() {
        for (a, b) in [(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])] {
            by_edge
                .entry((a.min(b), a.max(b)))
                .or_default()
                .push(t as i32);
        }
    }
    let w = [f64::from(wind[0]), f64::from(wind[1]), 0.0];
    let mut link = Vec::with_capacity(edges.len());
    for edge in edges.chunks_exact(2) {
        let key = (edge[0].min(edge[1]), edge[0].max(edge[1]));
        let mut sides = by_edge.get(&key).cloned().unwrap_or_default();
        // Upwind: the triangle whose centre lies further against the wind.
        sides.sort_by(|&a, &b| dot(centre[a as usize], w).total_cmp(&dot(centre[b as usize], w)));
        match sides.as_slice() {
            [] => link.extend([-1, -1]),
            [one] => {
                let mid: Vec<f64> = (0..3)
                    .map(|k| {
                        (f64::from(points[edge[0] as usize][k])
                            + f64::from(points[edge[1] as usize][k]))
                            / 2.0
                    })
                    .collect();
                if dot(centre[*one as usize], w) < dot([mid[0], mid[1], mid[2]], w) {
                    link.extend([*one, -1]);
                } else {
                    link.extend([-1, *one]);
                }
            }
            [up, down, ..] => link.extend([*up, *down]),
        }
    }
    let updown = gml.new_link(MeshKind::Edges, MeshKind::Triangles, 2, "UpDown")?;
    gml.set_link_block(updown, 0, &link)?;

    let vertices = gml.mesh(MeshKind::Vertices)?;
    let conc = gml.new_solution::<f32>(MeshKind::Triangles, 1, "Conc")?;
    let flux = gml.new_solution::<f32>(MeshKind::Edges, 1, "Flux")?;
    let fill = gml.compile(
        KernelSpec::new("concentration", MeshKind::Triangles)
            .access(Access::read(vertices))
            .access(Access::write(conc))
            .body(
                "const float4 c = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;
                 TriConc = 1.0f + c.x + 2.0f * c.y;",
            ),
    )?;
    let advect = gml.compile(
        KernelSpec::new("upwind_flux", MeshKind::Edges)
            .access(Access::read(vertices))
            .access(Access::read(conc).via(updown))
            .access(Access::write(flux))
            .body(&format!(
                "const float4 e = EdgCrd[1] - EdgCrd[0];
                 const float across = fabs({wx:?}f * e.y - {wy:?}f * e.x);
                 EdgFlux = EdgUpDown[0] >= 0 ? across * EdgConc[0] : 0.0f;",
                wx = wind[0],
                wy = wind[1]
            )),
    )?;
    gml.launch(fill)?;
    gml.launch(advect)?;
    let count = gml.count(MeshKind::Edges).unwrap_or(0);
    Ok(Upwind {
        link: gml.link_block(updown, 0, count)?,
        concentration: gml.read_all(conc)?,
        flux: gml.read_all(flux)?,
    })
}

/// What the assembled operator example computed.
pub struct Assembled {
    /// Link width: the largest vertex degree of the edge graph.
    pub width: usize,
    /// Each vertex's neighbours, `width` per vertex, -1 padding (read back from gml).
    pub link: Vec<i32>,
    /// `A x` (device).
    pub product: Vec<f32>,
}

/// Builds the vertex → vertex link of the edge graph of every element and applies the graph
/// Laplacian `(A x)_i = Σ_j (x_i − x_j) / |p_i − p_j|` to `x` on the device.
pub fn assembled_laplacian(gml: &mut Gml, x: &[f32]) -> anyhow::Result<Assembled> {
    gml.extract_edges()?;
    let (edges, _) = gml.elements(MeshKind::Edges)?;
    let (points, _) = gml.vertices()?;
    let n = points.len();
    if x.len() != n {
        bail!("x has {} values for {n} vertices", x.len());
    }
    let mut neighbours: Vec<Vec<i32>> = vec![Vec::new(); n];
    for e in edges.chunks_exact(2) {
        neighbours[e[0] as usize].push(e[1] as i32);
        neighbours[e[1] as usize].push(e[0] as i32);
    }
    let width = neighbours.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut link = vec![-1i32; n * width];
    let mut weights = vec![0f32; n * width];
    for (i, list) in neighbours.iter().enumerate() {
        for (k, &j) in list.iter().enumerate() {
            link[i * width + k] = j;
            let (p, q) = (points[i], points[j as usize]);
            let d = ((0..3)
                .map(|c| (f64::from(p[c]) - f64::from(q[c])).powi(2))
                .sum::<f64>())
            .sqrt();
            weights[i * width + k] = (1.0 / d) as f32;
        }
    }
    let nbr = gml.new_link(MeshKind::Vertices, MeshKind::Vertices, width, "Nbr")?;
    gml.set_link_block(nbr, 0, &link)?;
    let wgt = gml.new_solution::<f32>(MeshKind::Vertices, width, "Wgt")?;
    gml.set_block(wgt, 0, &weights)?;
    let xs = gml.new_solution::<f32>(MeshKind::Vertices, 1, "X")?;
    gml.set_block(xs, 0, x)?;
    let ys = gml.new_solution::<f32>(MeshKind::Vertices, 1, "Y")?;
    let apply = gml.compile(
        KernelSpec::new("apply_laplacian", MeshKind::Vertices)
            .access(Access::read(xs).via(nbr))
            .access(Access::read(wgt))
            .access(Access::write(ys))
            .body(&format!(
                "float s = 0.0f;
                 for (int k = 0; k < {width}; k++)
                     if (VerNbr[k] >= 0) s += VerWgt[k] * (VerX[0] - VerX[k + 1]);
                 VerY = s;"
            )),
    )?;
    gml.launch(apply)?;
    Ok(Assembled {
        width,
        link: gml.link_block(nbr, 0, n)?,
        product: gml.read_all(ys)?,
    })
}

/// What the closest elements example computed.
pub struct Closest {
    /// `k` tetrahedra per vertex, closest centre first (read back from gml).
    pub link: Vec<i32>,
    /// Volume of each tetrahedron (device).
    pub volumes: Vec<f32>,
    /// Mean volume of each vertex's `k` closest tetrahedra (device).
    pub mean_volume: Vec<f32>,
}

/// The vertex → tetrahedron link to the `k` tetrahedra with the closest centres (the
/// manual's `ValleyOfTheKings`, with tetrahedra for pyramids), and the mean of their volumes.
pub fn closest_elements(gml: &mut Gml, k: usize) -> anyhow::Result<Closest> {
    let tets = gml
        .count(MeshKind::Tetrahedra)
        .context("closest_elements needs tetrahedra")?;
    if k == 0 || k > tets {
        bail!("k = {k} must lie in 1..={tets}");
    }
    let centre = centres(gml, MeshKind::Tetrahedra)?;
    let (points, _) = gml.vertices()?;
    let mut link = Vec::with_capacity(points.len() * k);
    for p in &points {
        let p = [f64::from(p[0]), f64::from(p[1]), f64::from(p[2])];
        let mut order: Vec<(f64, i32)> = centre
            .iter()
            .enumerate()
            .map(|(t, c)| {
                let d = [c[0] - p[0], c[1] - p[1], c[2] - p[2]];
                (dot(d, d), t as i32)
            })
            .collect();
        order.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        order.truncate(k);
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        link.extend(order.iter().map(|&(_, t)| t));
    }
    let kings = gml.new_link(
        MeshKind::Vertices,
        MeshKind::Tetrahedra,
        k,
        "ValleyOfTheKings",
    )?;
    gml.set_link_block(kings, 0, &link)?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let vol = gml.new_solution::<f32>(MeshKind::Tetrahedra, 1, "Vol")?;
    let mean = gml.new_solution::<f32>(MeshKind::Vertices, 1, "NearVol")?;
    let volumes = gml.compile(
        KernelSpec::new("tet_volume", MeshKind::Tetrahedra)
            .access(Access::read(vertices))
            .access(Access::write(vol))
            .body("TetVol = CalTetVol(TetCrd[0], TetCrd[1], TetCrd[2], TetCrd[3]);"),
    )?;
    let average = gml.compile(
        KernelSpec::new("near_volume", MeshKind::Vertices)
            .access(Access::read(vol).via(kings))
            .access(Access::write(mean))
            .body(&format!(
                "float s = 0.0f;
                 for (int k = 0; k < {k}; k++) s += VerVol[k];
                 VerNearVol = s / {k}.0f;"
            )),
    )?;
    gml.launch(volumes)?;
    gml.launch(average)?;
    let n = points.len();
    Ok(Closest {
        link: gml.link_block(kings, 0, n)?,
        volumes: gml.read_all(vol)?,
        mean_volume: gml.read_all(mean)?,
    })
}

/// The manual's user links on one mesh.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file: triangles in the xy plane for the upwind link, tetrahedra for
    /// the closest elements; any mesh for the assembled operator.
    mesh: PathBuf,
    /// Tetrahedra per vertex in the closest-elements link.
    #[arg(long, default_value_t = 8)]
    k: usize,
    /// OpenCL device: an index, part of its name, or `default`.
    #[arg(long, default_value = "default")]
    device: DeviceSelector,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut gml = Gml::new(&args.device)?;
    gml.import_file(&args.mesh)?;
    println!("{} on {}", args.mesh.display(), gml.device().name);

    let n = gml.count(MeshKind::Vertices).unwrap_or(0);
    let x: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    let a = assembled_laplacian(&mut gml, &x)?;
    let norm = a.product.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>();
    println!(
        "assembled Laplacian: vertex link of width {}, |A x| = {:.6}",
        a.width,
        norm.sqrt()
    );
    if gml.count(MeshKind::Tetrahedra).is_some() {
        let c = closest_elements(&mut gml, args.k)?;
        let mean = c.mean_volume.iter().map(|&v| f64::from(v)).sum::<f64>() / n.max(1) as f64;
        println!(
            "closest {} tetrahedra of each vertex: mean of their mean volume {mean:.6e}",
            args.k
        );
    } else if gml.count(MeshKind::Triangles).is_some() {
        let u = upwind(&mut gml, [1.0, 0.5])?;
        let total = u.flux.iter().map(|&v| f64::from(v)).sum::<f64>();
        println!(
            "upwind link over {} edges: total advective flux {total:.6}",
            u.flux.len()
        );
    }
    Ok(())
}
