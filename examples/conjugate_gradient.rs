//! An iterative linear solver on the device: conjugate gradients for `(I + L) x = b` on the
//! vertices of a mesh, `L` the graph Laplacian of its edges,
//! `(L x)_v = Σ_{edges vw} (x_v − x_w)`.
//!
//! ```text
//! cargo run --release --example conjugate_gradient -- sample_meshes/cube.meshb
//! ```
//!
//! The matrix is never assembled: `q = (I + L) p` is a scatter–gather pair. `edge_diff` loops
//! over the edges (made by `extract_edges`) and writes `EdgDif = EdgP[0] − EdgP[1]`; `apply`
//! loops over the vertices and adds up the differences of its edges through the vertex → edge
//! uplink, with the sign given by the vertex's place in each edge (`VerEdgVoy[i]`, the
//! voyeurs). Dot products are `Sum` reductions of product fields that the kernels write on the
//! way (`VerPQ = p·q`, `VerRR = r·r`); the step lengths α and β go to the kernels as
//! parameters. Everything is single precision, so the requested tolerance should stay above
//! about 1e-6.

use std::path::PathBuf;

use bytemuck::{Pod, Zeroable};
use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind, Reduction};

/// The scalars of one CG iteration, mirrored by `PARAMETERS` on the device.
#[repr(C)]
#[derive(Clone, Copy, Default, Pod, Zeroable)]
struct Params {
    alpha: f32,
    beta: f32,
}

const PARAMETERS: &str = "typedef struct { float alpha, beta; } GmlParSct;\n";

/// The result of a solve.
pub struct Solution {
    /// The solution, one value per vertex.
    pub x: Vec<f32>,
    /// `‖r‖ / ‖b‖` after each iteration.
    pub residuals: Vec<f64>,
    /// Whether the tolerance was reached.
    pub converged: bool,
}

/// Solves `(I + L) x = b` from `x = 0` until `‖r‖ ≤ tolerance · ‖b‖` or `max_iterations`.
/// Replaces the mesh's edges by every edge of its elements.
pub fn run(
    gml: &mut Gml,
    b: &[f32],
    tolerance: f64,
    max_iterations: usize,
) -> anyhow::Result<Solution> {
    gml.extract_edges()?;
    let parameters = gml.new_parameters::<Params>(PARAMETERS)?;
    let ver = MeshKind::Vertices;
    let x = gml.new_solution::<f32>(ver, 1, "X")?;
    let r = gml.new_solution::<f32>(ver, 1, "R")?;
    let p = gml.new_solution::<f32>(ver, 1, "P")?;
    let q = gml.new_solution::<f32>(ver, 1, "Q")?;
    let pq = gml.new_solution::<f32>(ver, 1, "PQ")?;
    let rr = gml.new_solution::<f32>(ver, 1, "RR")?;
    let dif = gml.new_solution::<f32>(MeshKind::Edges, 1, "Dif")?;
    gml.set_block(r, 0, b)?; // r = b − A·0
    gml.set_block(p, 0, b)?;

    let edge_diff = gml.compile(
        KernelSpec::new("edge_diff", MeshKind::Edges)
            .access(Access::read(p))
            .access(Access::write(dif))
            .body("EdgDif = EdgP[0] - EdgP[1];"),
    )?;
    let apply = gml.compile(
        KernelSpec::new("apply", ver)
            .access(Access::read(p))
            .access(Access::read(dif).with_voyeurs())
            .access(Access::write(q))
            .access(Access::write(pq))
            .body(
                "float lap = 0.0f;
                 for (int i = 0; i < VerEdgDegMax; i++)
                     lap += VerEdgVoy[i] == 0 ? VerEdgDif[i] : -VerEdgDif[i];
                 VerQ = VerP + lap;
                 VerPQ = VerP * VerQ;",
            ),
    )?;
    let update = gml.compile(
        KernelSpec::new("update", ver)
            .access(Access::read_write(x))
            .access(Access::read_write(r))
            .access(Access::read(p))
            .access(Access::read(q))
            .access(Access::write(rr))
            .body(
                "VerX += GmlPar->alpha * VerP;
                 VerR -= GmlPar->alpha * VerQ;
                 VerRR = VerR * VerR;",
            ),
    )?;
    let direction = gml.compile(
        KernelSpec::new("direction", ver)
            .access(Access::read_write(p))
            .access(Access::read(r))
            .body("VerP = VerR + GmlPar->beta * VerP;"),
    )?;

    let b_norm = gml.reduce(r, Reduction::L2)?;
    let mut rr_old = b_norm * b_norm;
    let mut residuals = Vec::new();
    let mut converged = b_norm == 0.0;
    while !converged && residuals.len() < max_iterations {
        gml.launch(edge_diff)?;
        gml.launch(apply)?;
        let alpha = rr_old / gml.reduce(pq, Reduction::Sum)?;
        let mut params = Params {
            alpha: alpha as f32,
            beta: 0.0,
        };
        gml.upload_parameters(&parameters, &params)?;
        gml.launch(update)?;
        let rr_new = gml.reduce(rr, Reduction::Sum)?;
        residuals.push(rr_new.sqrt() / b_norm);
        converged = rr_new.sqrt() <= tolerance * b_norm;
        params.beta = (rr_new / rr_old) as f32;
        gml.upload_parameters(&parameters, &params)?;
        gml.launch(direction)?;
        rr_old = rr_new;
    }
    Ok(Solution {
        x: gml.read_all(x)?,
        residuals,
        converged,
    })
}

/// Solves (I + L) x = b on the vertices of a mesh with conjugate gradients on the device.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file.
    mesh: PathBuf,
    /// Relative residual to reach.
    #[arg(long, default_value_t = 1e-5)]
    tolerance: f64,
    /// Stop after this many iterations anyway.
    #[arg(long, default_value_t = 1000)]
    max_iterations: usize,
    /// OpenCL device: an index, part of its name, or `default`.
    #[arg(long, default_value = "default")]
    device: DeviceSelector,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut gml = Gml::new(&args.device)?;
    gml.import_file(&args.mesh)?;
    println!("{} on {}", args.mesh.display(), gml.device().name);

    // A right-hand side with some variation over the mesh.
    let (coordinates, _) = gml.vertices()?;
    let b: Vec<f32> = coordinates
        .iter()
        .map(|p| 1.0 + p[0] * p[1] - 2.0 * p[2])
        .collect();
    let s = run(&mut gml, &b, args.tolerance, args.max_iterations)?;
    let edges = gml.count(MeshKind::Edges).unwrap_or(0);
    println!("{} unknowns, {edges} edges", s.x.len());
    for (i, r) in s.residuals.iter().enumerate() {
        if (i + 1) % 5 == 0 || i + 1 == s.residuals.len() {
            println!("iteration {:>4}: relative residual {r:.3e}", i + 1);
        }
    }
    let verdict = if s.converged {
        "converged"
    } else {
        "did not converge"
    };
    println!("{verdict} in {} iterations", s.residuals.len());
    let counters = gml.counters();
    for s in &counters.stages {
        let ms = s.busy.as_secs_f64() * 1e3;
        println!("{:<17} {:>6} launches {ms:>10.3} ms", s.stage, s.launches);
    }
    Ok(())
}
