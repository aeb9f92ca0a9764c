//! Every kernel printed in the GMlib manual (sections 2.1–2.5), with its body exactly as
//! printed: the manual's own names (`VerSpeed` for a field named `speed`, `center`, `min_dist`,
//! `TriCenter[4]`, `relaxed`, `VerTriBar[i]`, `Tmp`, `VerTriTmp[i]`, a field named `VerSol`)
//! and its own C style (`/ 3.`, `int i;` before the loop, `min` on floats).
//!
//! ```text
//! cargo run --release --example manual_kernels -- sample_meshes/sphere_surface.meshb
//! ```
//!
//! Two changes, each where the printed text cannot work:
//!
//! - The barycentre and scatter kernels average `TriCrd[0]`, `TriCrd[1]` and `TriCrd[3]`, but a
//!   triangle has three vertices, `TriCrd[0..2]`. `TriCrd[3]` is past the end of the table (in
//!   the C GMlib it reads the padding lane of the `int4` node vector, vertex 0, so the result is
//!   not the barycentre the text describes either); the kernels here read `TriCrd[2]`.
//! - The uplink and gather kernels start their sums with `float4 NewCrd = {0};`, which is C but
//!   not OpenCL C: a vector's initializer list must give every component ("too few elements in
//!   vector initialization (expected 4 elements, have 1)", the test shows it); the kernels here
//!   write `{0, 0, 0, 0}`.
//!
//! The tests (`tests/device/gml_examples.rs`) run each function below against a CPU reference.

use std::path::PathBuf;

use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind};

/// Section 2.1 and 2.3, the direct kernel, as printed.
pub const DISPLACEMENT: &str = "VerCrd = VerCrd + VerSpeed * VerDirection;";

/// Section 2.4, the triangle barycentre, with the third vertex `TriCrd[2]` where the manual
/// prints `center = (TriCrd[0] + TriCrd[1] + TriCrd[3]) / 3.;` (see the module comment).
pub const BARYCENTRE: &str = "center = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.;";

/// Section 2.4, the transverse kernel: the distance to the closest neighbour's centre, as
/// printed. Across a boundary edge the neighbour's centre reads as zero, as the manual says.
pub const CLOSEST_NEIGHBOUR: &str = "float d1, d2, d3;
d1 = distance(TriCenter[0], TriCenter[1]);
d2 = distance(TriCenter[0], TriCenter[2]);
d3 = distance(TriCenter[0], TriCenter[3]);
min_dist = min(d1, d2);
min_dist = min(min_dist, d3);";

/// Section 2.4, the uplink kernel: relax toward the mean barycentre of the vertex's ball of
/// triangles, with `{0, 0, 0, 0}` for the printed `{0}` (see the module comment).
pub const RELAX: &str = "int i;
float4 NewCrd = {0, 0, 0, 0};
for(i=0;i<VerTriDegMax;i++)
  NewCrd += VerTriBar[i];
relaxed = 0.8 * relaxed + 0.2 * NewCrd / VerTriDeg;";

/// Section 2.5, the scatter kernel, with `TriCrd[2]` for the printed `TriCrd[3]` (see the
/// module comment).
pub const SCATTER: &str = "Tmp = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.;";

/// Section 2.5, the gather kernel, with `{0, 0, 0, 0}` for the printed `{0}` (see the module
/// comment).
pub const GATHER: &str = "int i;
float4 NewSol = {0, 0, 0, 0};
for(i=0;i<VerTriDegMax;i++)
  NewSol += VerTriTmp[i];
VerSol = NewSol / VerTriDeg;";

/// Section 2.1: moves each vertex by `speed * direction` at each of `steps` launches, with
/// the manual's fields `speed` (float) and `direction` (float4). Returns the coordinates.
pub fn displacement(
    gml: &mut Gml,
    speeds: &[f32],
    directions: &[[f32; 4]],
    steps: usize,
) -> anyhow::Result<Vec<[f32; 3]>> {
    let speed = gml.new_solution::<f32>(MeshKind::Vertices, 1, "speed")?;
    let direction = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "direction")?;
    gml.set_block(speed, 0, speeds)?;
    gml.set_block(direction, 0, directions)?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let kernel = gml.compile(
        KernelSpec::new("iteration", MeshKind::Vertices)
            .access(Access::read_write(vertices))
            .access(Access::read(speed))
            .access(Access::read(direction))
            .body(DISPLACEMENT),
    )?;
    for _ in 0..steps {
        gml.launch(kernel)?;
    }
    Ok(gml.vertices()?.0)
}

/// Section 2.4: each triangle's barycentre in the triangle field `center`.
pub fn barycentres(gml: &mut Gml) -> anyhow::Result<Vec<[f32; 4]>> {
    let center = gml.new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "center")?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let kernel = gml.compile(
        KernelSpec::new("barycentre", MeshKind::Triangles)
            .access(Access::read(vertices))
            .access(Access::write(center))
            .body(BARYCENTRE),
    )?;
    gml.launch(kernel)?;
    Ok(gml.read_all(center)?)
}

/// Section 2.4: the barycentres as above (field `center`), then, through the triangles'
/// neighbour link, each triangle's `min_dist` to the closest of its three neighbours' centres.
pub fn closest_neighbour(gml: &mut Gml) -> anyhow::Result<Vec<f32>> {
    let center = gml.new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "center")?;
    let min_dist = gml.new_solution::<f32>(MeshKind::Triangles, 1, "min_dist")?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let neighbours = gml.set_neighbours(MeshKind::Triangles)?;
    let barycentre = gml.compile(
        KernelSpec::new("barycentre", MeshKind::Triangles)
            .access(Access::read(vertices))
            .access(Access::write(center))
            .body(BARYCENTRE),
    )?;
    let closest = gml.compile(
        KernelSpec::new("closest", MeshKind::Triangles)
            .access(Access::read(center).via(neighbours))
            .access(Access::write(min_dist))
            .body(CLOSEST_NEIGHBOUR),
    )?;
    gml.launch(barycentre)?;
    gml.launch(closest)?;
    Ok(gml.read_all(min_dist)?)
}

/// Section 2.4: `relaxed` starts at the vertex coordinates (w = 0) and is relaxed `steps`
/// times toward the mean barycentre of the vertex's triangles. The barycentres (triangle field
/// `Bar`, which the manual's kernel reads as `VerTriBar[i]`) come from a kernel of ours: the
/// manual prints none that writes `Bar`. Every vertex must be in a triangle (the manual's
/// kernel divides by `VerTriDeg`).
pub fn relaxation(gml: &mut Gml, steps: usize) -> anyhow::Result<Vec<[f32; 4]>> {
    let bar = gml.new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")?;
    let relaxed = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "relaxed")?;
    let (coordinates, _) = gml.vertices()?;
    let start: Vec<[f32; 4]> = coordinates
        .iter()
        .map(|p| [p[0], p[1], p[2], 0.0])
        .collect();
    gml.set_block(relaxed, 0, &start)?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let barycentre = gml.compile(
        KernelSpec::new("barycentre", MeshKind::Triangles)
            .access(Access::read(vertices))
            .access(Access::write(bar))
            .body("TriBar = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;"),
    )?;
    let relax = gml.compile(
        KernelSpec::new("relax", MeshKind::Vertices)
            .access(Access::read_write(relaxed))
            .access(Access::read(bar))
            .body(RELAX),
    )?;
    gml.launch(barycentre)?;
    for _ in 0..steps {
        gml.launch(relax)?;
    }
    Ok(gml.read_all(relaxed)?)
}

/// Section 2.5: the scatter kernel writes each triangle's barycentre to `Tmp`, the gather
/// kernel writes the mean of the vertex's triangles' `Tmp` to the vertex field named `VerSol`.
/// Every vertex must be in a triangle (the gather divides by `VerTriDeg`).
pub fn scatter_gather(gml: &mut Gml) -> anyhow::Result<Vec<[f32; 4]>> {
    let tmp = gml.new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Tmp")?;
    let sol = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "VerSol")?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let scatter = gml.compile(
        KernelSpec::new("scatter", MeshKind::Triangles)
            .access(Access::read(vertices))
            .access(Access::write(tmp))
            .body(SCATTER),
    )?;
    let gather = gml.compile(
        KernelSpec::new("gather", MeshKind::Vertices)
            .access(Access::read(tmp))
            .access(Access::write(sol))
            .body(GATHER),
    )?;
    gml.launch(scatter)?;
    gml.launch(gather)?;
    Ok(gml.read_all(sol)?)
}

/// Runs every kernel of the GMlib manual on a triangulated mesh.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file with triangles, every vertex in one (a closed surface).
    mesh: PathBuf,
    /// OpenCL device: an index, part of its name, or `default`.
    #[arg(long, default_value = "default")]
    device: DeviceSelector,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let open = || -> anyhow::Result<Gml> {
        let mut gml = Gml::new(&args.device)?;
        gml.import_file(&args.mesh)?;
        Ok(gml)
    };
    let mut gml = open()?;
    println!("{} on {}", args.mesh.display(), gml.device().name);

    let n = gml.count(MeshKind::Vertices).unwrap_or(0);
    let speeds = vec![0.01; n];
    let directions = vec![[1.0, 0.0, 0.0, 0.0]; n];
    let moved = displacement(&mut gml, &speeds, &directions, 10)?;
    println!(
        "2.1 displacement: vertex 0 after 10 steps at {:?}",
        moved[0]
    );

    let mut gml = open()?;
    let centres = barycentres(&mut gml)?;
    println!("2.4 barycentre:   triangle 0's center {:?}", centres[0]);

    let mut gml = open()?;
    let distances = closest_neighbour(&mut gml)?;
    println!("2.4 neighbours:   triangle 0's min_dist {}", distances[0]);

    let mut gml = open()?;
    let relaxed = relaxation(&mut gml, 10)?;
    println!("2.4 uplink:       vertex 0 relaxed to {:?}", relaxed[0]);

    let mut gml = open()?;
    let sol = scatter_gather(&mut gml)?;
    println!("2.5 scatter/gather: vertex 0's VerSol {:?}", sol[0]);
    Ok(())
}
