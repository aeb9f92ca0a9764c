//! GMlib's MeshQuality example: the quality of every element, then its statistics from device
//! reductions.
//!
//! ```text
//! cargo run --release --example mesh_quality -- sample_meshes/cube.meshb
//! ```
//!
//! Tetrahedra use the toolkit's `CalTetQal`, `12·(3V)^(2/3) / Σ edge²`; triangle meshes use
//! `CalTriQal`, `4√3·area / Σ edge²`. Both are 1 for a regular element, near 0 for a flat
//! one, and negative for an inverted tetrahedron. Unlike GMlib's example, the formula sums all
//! six edges, and the printed labels match their values.

use std::path::PathBuf;

use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind, Reduction};

/// Quality of every element and its statistics.
pub struct Quality {
    /// Tetrahedra, or triangles for a surface or planar mesh.
    pub kind: MeshKind,
    /// One value per element.
    pub values: Vec<f32>,
    /// Smallest value.
    pub min: f64,
    /// Mean value.
    pub mean: f64,
    /// Largest value.
    pub max: f64,
    /// Standard deviation.
    pub std_dev: f64,
}

/// Computes the quality of the tetrahedra (or triangles, when there are none) on the device.
pub fn run(gml: &mut Gml) -> anyhow::Result<Quality> {
    let kind = if gml.count(MeshKind::Tetrahedra).is_some() {
        MeshKind::Tetrahedra
    } else {
        MeshKind::Triangles
    };
    let body = match kind {
        MeshKind::Tetrahedra => "TetQal = CalTetQal(TetCrd[0], TetCrd[1], TetCrd[2], TetCrd[3]);",
        _ => "TriQal = CalTriQal(TriCrd[0], TriCrd[1], TriCrd[2]);",
    };
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let quality = gml.new_solution::<f32>(kind, 1, "Qal")?;
    let kernel = gml.compile(
        KernelSpec::new("quality", kind)
            .access(Access::read(vertices))
            .access(Access::write(quality))
            .body(body),
    )?;
    gml.launch(kernel)?;

    let n = gml.count(kind).unwrap_or(0) as f64;
    let mean = gml.reduce(quality, Reduction::Sum)? / n;
    let rms = gml.reduce(quality, Reduction::L2)? / n.sqrt();
    Ok(Quality {
        kind,
        min: gml.reduce(quality, Reduction::Min)?,
        mean,
        max: gml.reduce(quality, Reduction::Max)?,
        std_dev: (rms * rms - mean * mean).max(0.0).sqrt(),
        values: gml.read_all(quality)?,
    })
}

/// Element quality statistics of a mesh, computed on the device.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file with tetrahedra or triangles.
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

    let q = run(&mut gml)?;
    println!("{} {}", q.values.len(), q.kind);
    println!(
        "quality: min {:.4}, mean {:.4}, max {:.4}, standard deviation {:.4}",
        q.min, q.mean, q.max, q.std_dev
    );
    let counters = gml.counters();
    for s in &counters.stages {
        println!("{:<17} {:>10.3} ms", s.stage, s.busy.as_secs_f64() * 1e3);
    }
    println!("device memory in use: {} bytes", gml.memory_in_use());
    Ok(())
}
