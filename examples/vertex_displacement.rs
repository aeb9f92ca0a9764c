//! The GMlib manual's first kernel (section 2.1): move every vertex by its speed times its
//! direction, over many steps.
//!
//! ```text
//! cargo run --release --example vertex_displacement -- sample_meshes/cube.meshb --steps 1000
//! ```
//!
//! A direct kernel: it loops over the vertices and touches only vertex data, `VerCrd` (read
//! and written), `VerSpeed` and `VerDirection` (read). The data go to the device once, before
//! the first step, and the coordinates come back once, after the last: the transfer counters
//! printed at the end show it.

use std::path::PathBuf;

use clap::Parser;
use glam::Vec3;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind};

/// Moves vertex `i` by `speeds[i] * directions[i]` at each of `steps` steps, on the device, and
/// returns the final coordinates.
pub fn run(
    gml: &mut Gml,
    speeds: &[f32],
    directions: &[[f32; 4]],
    steps: usize,
) -> anyhow::Result<Vec<[f32; 3]>> {
    let speed = gml.new_solution::<f32>(MeshKind::Vertices, 1, "Speed")?;
    let direction = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Direction")?;
    gml.set_block(speed, 0, speeds)?;
    gml.set_block(direction, 0, directions)?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let kernel = gml.compile(
        KernelSpec::new("displace", MeshKind::Vertices)
            .access(Access::read_write(vertices))
            .access(Access::read(speed))
            .access(Access::read(direction))
            .body("VerCrd = VerCrd + VerSpeed * VerDirection;"),
    )?;
    for _ in 0..steps {
        gml.launch(kernel)?;
    }
    Ok(gml.vertices()?.0)
}

/// A reproducible number in [-1, 1) for `i` (SplitMix64), instead of the manual's `rand()`.
fn noise(i: u64) -> f32 {
    let mut z = i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// Displaces the vertices of a mesh along random directions, on the device.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file.
    mesh: PathBuf,
    /// Number of steps.
    #[arg(long, default_value_t = 1000)]
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

    let (before, _) = gml.vertices()?;
    let n = before.len() as u64;
    let speeds: Vec<f32> = (0..n).map(|i| 1e-4 * (1.0 + noise(i))).collect();
    let directions: Vec<[f32; 4]> = (0..n)
        .map(|i| {
            [
                noise(n + 3 * i),
                noise(n + 3 * i + 1),
                noise(n + 3 * i + 2),
                0.0,
            ]
        })
        .collect();
    let after = run(&mut gml, &speeds, &directions, args.steps)?;

    let moves: Vec<f32> = before
        .iter()
        .zip(&after)
        .map(|(&a, &b)| Vec3::from(b).distance(Vec3::from(a)))
        .collect();
    let mean = moves.iter().sum::<f32>() / moves.len() as f32;
    let max = moves.iter().copied().fold(0.0, f32::max);
    println!(
        "{} vertices moved over {} steps: mean distance {mean:.6}, largest {max:.6}",
        after.len(),
        args.steps
    );
    println!("vertex 0: {:?} -> {:?}", before[0], after[0]);
    print_kernel_times(&gml);
    let transfers = gml.transfers();
    println!(
        "transfers: {} bytes to the device, {} bytes back",
        transfers.to_device, transfers.to_host
    );
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
