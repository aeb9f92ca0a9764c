//! GMlib's GpuBandwidth example: the memory bandwidth the four basic access patterns reach on
//! a tetrahedral mesh.
//!
//! ```text
//! cargo run --release --example gpu_bandwidth -- sample_meshes/cube.meshb --iterations 100
//! ```
//!
//! | kernel            | loop       | what it does                                          |
//! |-------------------|------------|-------------------------------------------------------|
//! | `direct_vertices` | vertices   | `VerCopy = VerCrd`                                    |
//! | `direct_tets`     | tetrahedra | `TetNodes` = the 4 node numbers as a float4           |
//! | `indirect_tets`   | tetrahedra | `TetSum = TetCrd[0] + … + TetCrd[3]` (element table)  |
//! | `vertices_ball`   | vertices   | `VerBall` = Σ `VerTetSum[i]`, i < `VerTetDegMax`      |
//!
//! Each kernel runs once to warm up, then `--iterations` times; the time is the device time
//! of those launches (profiling events, every uplink table included). Bytes are counted two
//! ways, with V vertices and T tetrahedra:
//!
//! - as GMlib's example does: 32·V, 32·T, 96·T and 460·V per launch (for the indirect kernel,
//!   every coordinate a tetrahedron reads; 460·V is GMlib's figure for the ball);
//! - as unique bytes, each byte that must cross the memory bus at least once: 32·V (read and
//!   write 16 bytes per vertex), 32·T (nodes, result), 32·T + 16·V (nodes, result, each
//!   coordinate once) and 32·T + 20·V (the ball's 4·T tetrahedron numbers, each tetrahedron's
//!   value once, each vertex's degree and result).
//!
//! The unique figure is the one to compare with the device's copy bandwidth; GMlib's counts
//! reads that caches serve. Renumbering the mesh (e.g. along a Hilbert curve) raises the
//! indirect figures.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelId, KernelSpec, MeshKind};

/// One kernel's measurement.
pub struct Measure {
    /// Kernel name.
    pub name: &'static str,
    /// Mean device time of one launch.
    pub time: Duration,
    /// Bytes per launch as GMlib counts them.
    pub gmlib_bytes: f64,
    /// Bytes per launch that must move at least once.
    pub unique_bytes: f64,
}

/// What the kernels wrote, for checking.
pub struct Outputs {
    /// `direct_vertices`: each vertex's coordinates.
    pub copy: Vec<[f32; 4]>,
    /// `direct_tets`: each tetrahedron's node numbers.
    pub nodes: Vec<[f32; 4]>,
    /// `indirect_tets`: the sum of each tetrahedron's vertex coordinates.
    pub sums: Vec<[f32; 4]>,
    /// `vertices_ball`: the sum of `sums` over each vertex's tetrahedra.
    pub ball: Vec<[f32; 4]>,
}

/// Times the four kernels, each over `iterations` launches after a warm-up launch.
pub fn run(gml: &mut Gml, iterations: usize) -> anyhow::Result<(Vec<Measure>, Outputs)> {
    let v = gml.count(MeshKind::Vertices).unwrap_or(0) as f64;
    let t = gml.count(MeshKind::Tetrahedra).unwrap_or(0) as f64;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let tetrahedra = gml.mesh(MeshKind::Tetrahedra)?;
    let copy = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Copy")?;
    let nodes = gml.new_solution::<[f32; 4]>(MeshKind::Tetrahedra, 1, "Nodes")?;
    let sums = gml.new_solution::<[f32; 4]>(MeshKind::Tetrahedra, 1, "Sum")?;
    let ball = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Ball")?;

    let direct_vertices = gml.compile(
        KernelSpec::new("direct_vertices", MeshKind::Vertices)
            .access(Access::read(vertices))
            .access(Access::write(copy))
            .body("VerCopy = VerCrd;"),
    )?;
    let direct_tets = gml.compile(
        KernelSpec::new("direct_tets", MeshKind::Tetrahedra)
            .access(Access::read(tetrahedra))
            .access(Access::write(nodes))
            .body("TetNodes = convert_float4((int4)(TetVer[0], TetVer[1], TetVer[2], TetVer[3]));"),
    )?;
    let indirect_tets = gml.compile(
        KernelSpec::new("indirect_tets", MeshKind::Tetrahedra)
            .access(Access::read(vertices))
            .access(Access::write(sums))
            .body("TetSum = TetCrd[0] + TetCrd[1] + TetCrd[2] + TetCrd[3];"),
    )?;
    let vertices_ball = gml.compile(
        KernelSpec::new("vertices_ball", MeshKind::Vertices)
            .access(Access::read(sums))
            .access(Access::write(ball))
            .body(
                "float4 sum = 0.0f;
                 for (int i = 0; i < VerTetDegMax; i++) sum += VerTetSum[i];
                 VerBall = sum;",
            ),
    )?;

    let kernels: [(&str, KernelId, f64, f64); 4] = [
        ("direct_vertices", direct_vertices, 32.0 * v, 32.0 * v),
        ("direct_tets", direct_tets, 32.0 * t, 32.0 * t),
        (
            "indirect_tets",
            indirect_tets,
            96.0 * t,
            32.0 * t + 16.0 * v,
        ),
        (
            "vertices_ball",
            vertices_ball,
            460.0 * v,
            32.0 * t + 20.0 * v,
        ),
    ];
    let mut measures = Vec::new();
    for (name, kernel, gmlib_bytes, unique_bytes) in kernels {
        gml.launch(kernel)?;
        let mut total = Duration::ZERO;
        for _ in 0..iterations {
            total += gml.launch(kernel)?;
        }
        measures.push(Measure {
            name,
            time: total / iterations.max(1) as u32,
            gmlib_bytes,
            unique_bytes,
        });
    }
    let outputs = Outputs {
        copy: gml.read_all(copy)?,
        nodes: gml.read_all(nodes)?,
        sums: gml.read_all(sums)?,
        ball: gml.read_all(ball)?,
    };
    Ok((measures, outputs))
}

/// Memory bandwidth of direct, indirect and uplink kernels on a tetrahedral mesh.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file with tetrahedra.
    mesh: PathBuf,
    /// Timed launches of each kernel.
    #[arg(long, default_value_t = 100)]
    iterations: usize,
    /// OpenCL device: an index, part of its name, or `default`.
    #[arg(long, default_value = "default")]
    device: DeviceSelector,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut gml = Gml::new(&args.device)?;
    gml.import_file(&args.mesh)?;
    println!(
        "{}: {} vertices, {} tetrahedra on {}",
        args.mesh.display(),
        gml.count(MeshKind::Vertices).unwrap_or(0),
        gml.count(MeshKind::Tetrahedra).unwrap_or(0),
        gml.device().name
    );

    let (measures, _) = run(&mut gml, args.iterations)?;
    println!(
        "{:<16} {:>12} {:>12} {:>12}",
        "kernel", "µs/launch", "GMlib GB/s", "unique GB/s"
    );
    for m in &measures {
        let s = m.time.as_secs_f64();
        println!(
            "{:<16} {:>12.2} {:>12.2} {:>12.2}",
            m.name,
            s * 1e6,
            m.gmlib_bytes / s / 1e9,
            m.unique_bytes / s / 1e9
        );
    }
    let info = gml.link_info(MeshKind::Vertices, MeshKind::Tetrahedra)?;
    let tables: Vec<String> = info
        .tables
        .iter()
        .map(|t| format!("{}×{}", t.rows, t.width))
        .collect();
    println!(
        "vertex → tetrahedron uplink: max degree {}, tables (rows×width) {}",
        info.max_degree,
        tables.join(", ")
    );
    let transfers = gml.transfers();
    println!(
        "device memory in use {} bytes; transferred {} bytes to the device, {} back",
        gml.memory_in_use(),
        transfers.to_device,
        transfers.to_host
    );
    Ok(())
}
