//! The GMlib manual's uplink example (section 2.4): relax every vertex toward the mean of the
//! barycentres of its ball of triangles, a simple smoother.
//!
//! ```text
//! cargo run --release --example vertex_relaxation -- sample_meshes/sphere_surface.meshb
//! ```
//!
//! Two kernels per step. `barycentre` loops over the triangles and writes `TriBar`. `relax`
//! loops over the vertices and reads the barycentres of the triangles around each vertex
//! through the vertex → triangle uplink, which gml builds on demand: `VerTriBar[i]` for
//! `i < VerTriDegMax`, padded with zeros beyond the vertex's degree `VerTriDeg`, so the loop has
//! a bound known at compile time and the sum is still right. Vertices in no triangle (the
//! interior of a volume mesh) stay where they are.

use std::path::PathBuf;

use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind, Reduction};

/// Runs `steps` relaxation steps `x ← 0.8 x + 0.2 mean(ball barycentres)` on the device.
/// Returns the final coordinates and each step's largest vertex move.
pub fn run(gml: &mut Gml, steps: usize) -> anyhow::Result<(Vec<[f32; 3]>, Vec<f64>)> {
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let bar = gml.new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")?;
    let moved = gml.new_solution::<f32>(MeshKind::Vertices, 1, "Move")?;
    let barycentre = gml.compile(
        KernelSpec::new("barycentre", MeshKind::Triangles)
            .access(Access::read(vertices))
            .access(Access::write(bar))
            .body("TriBar = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;"),
    )?;
    let relax = gml.compile(
        KernelSpec::new("relax", MeshKind::Vertices)
            .access(Access::read_write(vertices))
            .access(Access::read(bar))
            .access(Access::write(moved))
            .body(
                "float4 sum = 0.0f;
                 for (int i = 0; i < VerTriDegMax; i++) sum += VerTriBar[i];
                 const float4 old = VerCrd;
                 if (VerTriDeg > 0) VerCrd = 0.8f * VerCrd + 0.2f * sum / VerTriDeg;
                 VerMove = distance(old, VerCrd);",
            ),
    )?;
    let mut largest_moves = Vec::with_capacity(steps);
    for _ in 0..steps {
        gml.launch(barycentre)?;
        gml.launch(relax)?;
        largest_moves.push(gml.reduce(moved, Reduction::Max)?);
    }
    Ok((gml.vertices()?.0, largest_moves))
}

/// Relaxes the vertices of a triangulated mesh toward their ball's barycentres.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file with triangles.
    mesh: PathBuf,
    /// Number of relaxation steps.
    #[arg(long, default_value_t = 10)]
    steps: usize,
    /// OpenCL device: an index, part of its name, or `default`.
    #[arg(long, default_value = "default")]
    device: DeviceSelector,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut gml = Gml::new(&args.device)?;
    gml.import_file(&args.mesh)?;
    println!("{} on {}", args.mesh.display(), gml.device().name);

    let (coordinates, moves) = run(&mut gml, args.steps)?;
    for (step, m) in moves.iter().enumerate() {
        println!("step {:>3}: largest vertex move {m:.3e}", step + 1);
    }
    let info = gml.link_info(MeshKind::Vertices, MeshKind::Triangles)?;
    let widths: Vec<String> = info
        .tables
        .iter()
        .map(|t| format!("{} rows of width {}", t.rows, t.width))
        .collect();
    println!(
        "vertex → triangle uplink: max degree {}, tables: {}",
        info.max_degree,
        widths.join(", ")
    );
    println!("vertex 0 now at {:?}", coordinates[0]);
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
