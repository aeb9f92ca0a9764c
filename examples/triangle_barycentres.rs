//! The GMlib README's first example: the barycentre of every triangle.
//!
//! ```text
//! cargo run --release --example triangle_barycentres -- sample_meshes/sphere_surface.meshb
//! ```
//!
//! The kernel loops over the triangles and reads the vertices' coordinates. gml generates
//! everything around the one-line body: `TriCrd[3]` holds the coordinates of the triangle's
//! three vertices (read through the element table), and `TriBar` is stored back to the
//! triangle field `Bar` because that field is opened for writing.

use std::path::PathBuf;

use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind};

/// Computes the barycentre of every triangle on the device (w = 0).
pub fn run(gml: &mut Gml) -> anyhow::Result<Vec<[f32; 4]>> {
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let bar = gml.new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")?;
    let kernel = gml.compile(
        KernelSpec::new("barycentre", MeshKind::Triangles)
            .access(Access::read(vertices))
            .access(Access::write(bar))
            .body("TriBar = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;"),
    )?;
    gml.launch(kernel)?;
    Ok(gml.read_all(bar)?)
}

/// Barycentres of the triangles of a mesh, computed by a gml kernel.
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

    let bars = run(&mut gml)?;
    println!("{} triangle barycentres, the first ones:", bars.len());
    for (i, b) in bars.iter().take(3).enumerate() {
        println!("  triangle {i}: ({:.6}, {:.6}, {:.6})", b[0], b[1], b[2]);
    }
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
