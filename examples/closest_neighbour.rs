//! The GMlib manual's transverse link (section 2.4): for each element, the distance from its
//! centre to the closest centre of its neighbours.
//!
//! ```text
//! cargo run --release --example closest_neighbour -- sample_meshes/cube.meshb
//! ```
//!
//! `set_neighbours` builds a link from the elements to themselves: the element across each
//! face (each edge for triangles), -1 on the boundary. Reading the `Centre` field through that
//! link gives the kernel `TetCentre[5]`: entry 0 is the element's own centre, entry `1 + i` the
//! centre of the neighbour across face `i`, zero where there is none; `TetNgb[i]` says which.
//! (The manual's kernel took the zeros of boundary faces for real centres.)
//!
//! Volume meshes use their tetrahedra, surface meshes their triangles.

use std::path::PathBuf;

use anyhow::bail;
use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind, Reduction};

/// Distance from each element's centre to its closest neighbour's centre.
pub struct Closest {
    /// One value per element (infinity for an element without neighbours).
    pub distances: Vec<f32>,
    /// Smallest distance (a device reduction).
    pub min: f64,
    /// Mean distance.
    pub mean: f64,
    /// Largest distance.
    pub max: f64,
}

/// Computes, for each element of `kind` (tetrahedra or triangles), the distance from its centre
/// to the closest neighbour's centre.
pub fn run(gml: &mut Gml, kind: MeshKind) -> anyhow::Result<Closest> {
    let (centre_body, closest_body) = match kind {
        MeshKind::Tetrahedra => (
            "TetCentre = (TetCrd[0] + TetCrd[1] + TetCrd[2] + TetCrd[3]) / 4.0f;",
            "float best = INFINITY;
             for (int i = 0; i < 4; i++)
                 if (TetNgb[i] >= 0) best = fmin(best, distance(TetCentre[0], TetCentre[1 + i]));
             TetClosest = best;",
        ),
        MeshKind::Triangles => (
            "TriCentre = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;",
            "float best = INFINITY;
             for (int i = 0; i < 3; i++)
                 if (TriNgb[i] >= 0) best = fmin(best, distance(TriCentre[0], TriCentre[1 + i]));
             TriClosest = best;",
        ),
        other => bail!("closest_neighbour works on tetrahedra or triangles, not {other}"),
    };
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let centre = gml.new_solution::<[f32; 4]>(kind, 1, "Centre")?;
    let closest = gml.new_solution::<f32>(kind, 1, "Closest")?;
    let neighbours = gml.set_neighbours(kind)?;
    let centres = gml.compile(
        KernelSpec::new("centre", kind)
            .access(Access::read(vertices))
            .access(Access::write(centre))
            .body(centre_body),
    )?;
    let nearest = gml.compile(
        KernelSpec::new("closest", kind)
            .access(Access::read(centre).via(neighbours))
            .access(Access::write(closest))
            .body(closest_body),
    )?;
    gml.launch(centres)?;
    gml.launch(nearest)?;

    let count = gml.count(kind).unwrap_or(0) as f64;
    Ok(Closest {
        min: gml.reduce(closest, Reduction::Min)?,
        mean: gml.reduce(closest, Reduction::Sum)? / count,
        max: gml.reduce(closest, Reduction::Max)?,
        distances: gml.read_all(closest)?,
    })
}

/// Distance from each element's centre to its closest neighbour's, on the device.
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

    let kind = if gml.count(MeshKind::Tetrahedra).is_some() {
        MeshKind::Tetrahedra
    } else {
        MeshKind::Triangles
    };
    let c = run(&mut gml, kind)?;
    println!(
        "{} {kind}: distance to the closest neighbour's centre min {:.6}, mean {:.6}, max {:.6}",
        c.distances.len(),
        c.min,
        c.mean,
        c.max
    );
    for (i, d) in c.distances.iter().take(3).enumerate() {
        println!("  element {i}: {d:.6}");
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
