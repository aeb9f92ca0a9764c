//! `cargo bench --bench renumber`: how long meshing and renumbering take, and whether the
//! numbering score predicts what a device does.
//!
//! 1. Host: the terrain mesher on `scenes/valley.png` and the Hilbert renumbering, at about
//!    1 and 5 million tetrahedra (100×100×17 and 200×200×21 cells), and the score's own time.
//! 2. Device (the default one): the same valley mesh in three numberings (as meshed, layer by
//!    layer; renumbered; randomly permuted), each with its numbering score and the device time
//!    of two gml kernels: tetrahedra reading their 4 vertices (`Σ TetCrd[i]`) and vertices
//!    reading their ball of tetrahedra (`Σ VerTetDat[i]`).
//!
//! `RENUMBER_BENCH_CELLS=N` sets the device mesh to N×N cells × N/10 layers (default 200:
//! 5 million tetrahedra; use 60 or so on a CPU device). `RENUMBER_BENCH_DEVICE=0` skips part 2.

use std::path::Path;
use std::time::{Duration, Instant};

use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind};
use snowsim::meshio::{ElementKind, Mesh};
use snowsim::renumber::{numbering_score, renumber};
use snowsim::terrain::{Heightmap, Terrain, TerrainSpec};

fn valley(cells: usize, layers: usize) -> TerrainSpec {
    TerrainSpec {
        size: [4000.0, 4000.0, 1400.0],
        relief: 600.0,
        cells: [cells, cells],
        layers,
        grading: 1.1,
    }
}

/// `mesh` with vertices and tetrahedra in a pseudo-random order (Fisher–Yates, LCG).
fn permuted(mesh: &Mesh) -> Mesh {
    let shuffle = |n: usize, mut state: u64| {
        let mut order: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(i, (state >> 33) as usize % (i + 1));
        }
        order
    };
    let order = shuffle(mesh.vertices.len(), 1);
    let mut new_index = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old as usize] = new as u32;
    }
    let mut permuted = Mesh::new(3);
    for &old in &order {
        permuted.push_vertex(mesh.vertices[old as usize], 0);
    }
    let tets = mesh.elements(ElementKind::Tetrahedra);
    for e in shuffle(tets.len(), 2) {
        let (nodes, r) = tets.get(e as usize).expect("in range");
        let nodes: Vec<u32> = nodes.iter().map(|&v| new_index[v as usize]).collect();
        permuted
            .elements_mut(ElementKind::Tetrahedra)
            .push(&nodes, r);
    }
    permuted
}

fn seconds(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// The vertices and tetrahedra of `mesh`, without its boundary triangles.
fn tets_only(mesh: &Mesh) -> Mesh {
    let mut out = Mesh::new(3);
    out.vertices = mesh.vertices.clone();
    out.vertex_refs = vec![0; mesh.vertices.len()];
    *out.elements_mut(ElementKind::Tetrahedra) = mesh.elements(ElementKind::Tetrahedra).clone();
    out
}

/// Mean device time of `launches` launches of each kernel, after one warm-up.
fn kernel_times(mesh: &Mesh, launches: u32) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    let mut gml = Gml::new(&DeviceSelector::Default)?;
    gml.import_mesh(mesh)?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let ver_dat = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Dat")?;
    let tet_dat = gml.new_solution::<[f32; 4]>(MeshKind::Tetrahedra, 1, "Dat")?;
    let indirect = gml.compile(
        KernelSpec::new("indirect_tets", MeshKind::Tetrahedra)
            .access(Access::read(vertices))
            .access(Access::write(tet_dat))
            .body("TetDat = TetCrd[0] + TetCrd[1] + TetCrd[2] + TetCrd[3];"),
    )?;
    let ball = gml.compile(
        KernelSpec::new("vertex_ball", MeshKind::Vertices)
            .access(Access::read(tet_dat))
            .access(Access::write(ver_dat))
            .body(
                "float4 sum = 0.0f;\n\
                 for (int i = 0; i < VerTetDegMax; i++) sum += VerTetDat[i];\n\
                 VerDat = sum;",
            ),
    )?;
    let mut mean = |kernel| -> Result<f64, Box<dyn std::error::Error>> {
        gml.launch(kernel)?;
        let mut total = Duration::ZERO;
        for _ in 0..launches {
            total += gml.launch(kernel)?;
        }
        Ok(total.as_secs_f64() / f64::from(launches))
    };
    Ok((mean(indirect)?, mean(ball)?))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let map = Heightmap::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/valley.png"))?;
    println!("host, {} threads:", rayon::current_num_threads());
    println!("  tetrahedra   mesh s   renumber s   score s   score as meshed -> renumbered");
    for (cells, layers) in [(100, 17), (200, 21)] {
        let t = Instant::now();
        let mesh = Terrain::new(valley(cells, layers), Some(&map))?.volume_mesh();
        let mesh_s = seconds(t);
        let t = Instant::now();
        let renumbered = renumber(&mesh)?.mesh;
        let renumber_s = seconds(t);
        let t = Instant::now();
        let after = numbering_score(&renumbered).percent().unwrap_or(0.0);
        let score_s = seconds(t);
        let before = numbering_score(&mesh).percent().unwrap_or(0.0);
        println!(
            "  {:>10}   {mesh_s:>6.3}   {renumber_s:>10.3}   {score_s:>7.3}   {before:.1} % -> {after:.1} %",
            mesh.count(ElementKind::Tetrahedra)
        );
    }
    if std::env::var("RENUMBER_BENCH_DEVICE").as_deref() == Ok("0") {
        return Ok(());
    }
    let cells: usize = std::env::var("RENUMBER_BENCH_CELLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let mesh = Terrain::new(valley(cells, (cells / 10).max(1)), Some(&map))?.volume_mesh();
    let gml = Gml::new(&DeviceSelector::Default)?;
    println!(
        "device {}: valley {cells}×{cells}×{}, {} vertices, {} tetrahedra",
        gml.device().name,
        (cells / 10).max(1),
        mesh.vertices.len(),
        mesh.count(ElementKind::Tetrahedra)
    );
    drop(gml);
    println!("  numbering        score    Σ TetCrd ms   Σ VerTetDat ms");
    let mesh = tets_only(&mesh);
    let renumbered = renumber(&mesh)?.mesh;
    let random = permuted(&mesh);
    for (name, m) in [
        ("as meshed", &mesh),
        ("renumbered", &renumbered),
        ("random", &random),
    ] {
        let score = numbering_score(m).percent().unwrap_or(0.0);
        let (indirect, ball) = kernel_times(m, 20)?;
        println!(
            "  {name:<12} {score:>7.1} %   {:>11.3}   {:>14.3}",
            indirect * 1e3,
            ball * 1e3
        );
    }
    Ok(())
}
