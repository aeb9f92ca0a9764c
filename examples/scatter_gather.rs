//! The GMlib manual's scatter–gather pair (section 2.5): what would be a loop over triangles
//! adding into their vertices, split so that every kernel writes only its own entities.
//!
//! ```text
//! cargo run --release --example scatter_gather -- sample_meshes/sphere_surface.meshb
//! ```
//!
//! Two vertex quantities are gathered: the mean of the barycentres of the vertex's triangles
//! (the manual's `VerSol`), and the vertex's share of the surface area, a third of the area of
//! each of its triangles (the classic "add to my three vertices" loop). The `scatter` kernel
//! loops over the triangles and writes triangle fields only (`TriBar`, `TriArea`); the
//! `gather` kernel loops over the vertices and reads them through the uplink (`VerTriBar[i]`,
//! `VerTriArea[i]`). Nothing is written indirectly, so no two work-items ever write the same
//! place. The total area is the same summed over triangles or over vertices.

use std::path::PathBuf;

use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind, Reduction};

/// What the gather kernel wrote for each vertex.
pub struct Gathered {
    /// Mean barycentre of the vertex's triangles (zero for a vertex in no triangle).
    pub mean_barycentre: Vec<[f32; 4]>,
    /// A third of the total area of the vertex's triangles.
    pub area: Vec<f32>,
    /// Total area summed over the triangles (a device reduction).
    pub triangle_area: f64,
    /// Total area summed over the vertices (a device reduction).
    pub vertex_area: f64,
}

/// Runs the scatter kernel over the triangles and the gather kernel over the vertices.
pub fn run(gml: &mut Gml) -> anyhow::Result<Gathered> {
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let bar = gml.new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")?;
    let tri_area = gml.new_solution::<f32>(MeshKind::Triangles, 1, "Area")?;
    let sol = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Sol")?;
    let ver_area = gml.new_solution::<f32>(MeshKind::Vertices, 1, "Area")?;
    let scatter = gml.compile(
        KernelSpec::new("scatter", MeshKind::Triangles)
            .access(Access::read(vertices))
            .access(Access::write(bar))
            .access(Access::write(tri_area))
            .body(
                "TriBar = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;
                 TriArea = CalTriSrf(TriCrd[0], TriCrd[1], TriCrd[2]);",
            ),
    )?;
    let gather = gml.compile(
        KernelSpec::new("gather", MeshKind::Vertices)
            .access(Access::read(bar))
            .access(Access::read(tri_area))
            .access(Access::write(sol))
            .access(Access::write(ver_area))
            .body(
                "float4 sum = 0.0f;
                 float area = 0.0f;
                 for (int i = 0; i < VerTriDegMax; i++) {
                     sum += VerTriBar[i];
                     area += VerTriArea[i];
                 }
                 VerSol = VerTriDeg > 0 ? sum / VerTriDeg : 0.0f;
                 VerArea = area / 3.0f;",
            ),
    )?;
    gml.launch(scatter)?;
    gml.launch(gather)?;
    Ok(Gathered {
        mean_barycentre: gml.read_all(sol)?,
        area: gml.read_all(ver_area)?,
        triangle_area: gml.reduce(tri_area, Reduction::Sum)?,
        vertex_area: gml.reduce(ver_area, Reduction::Sum)?,
    })
}

/// Scatters triangle values and gathers them at the vertices, on the device.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file with triangles.
    mesh: PathBuf,
    /// OpenCL device: an index, part of its name, or `default`.
    #[arg(long, default_value = "default")]
    device: DeviceSelector,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut gml = Gml::new(&args.device)?;
    gml.import_file(&args.mesh)?;
    println!("{} on {}", args.mesh.display(), gml.device().name);

    let g = run(&mut gml)?;
    println!(
        "total area: {:.6} summed over triangles, {:.6} over vertices",
        g.triangle_area, g.vertex_area
    );
    let m = g.mean_barycentre[0];
    println!(
        "vertex 0: mean barycentre of its triangles ({:.6}, {:.6}, {:.6}), area share {:.3e}",
        m[0], m[1], m[2], g.area[0]
    );
    print_kernel_times(&gml);
    Ok(())
}

/// Each kernel's device time, from OpenCL profiling events.
fn print_kernel_times(gml: &Gml) {
    for s in &gml.counters().stages {
        let ms = s.busy.as_secs_f64() * 1e3;
        println!(
            "kernel {:<16} {:>6} launches {ms:>10.3} ms",
            s.stage, s.launches
        );
    }
}
