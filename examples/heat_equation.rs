//! GMlib's HeatCellCentered example, simplified and made stable: the heat equation
//! `∂T/∂t = ΔT` on a tetrahedral mesh, one temperature per tetrahedron, explicit Euler steps.
//!
//! ```text
//! cargo run --release --example heat_equation -- sample_meshes/cube.meshb
//! ```
//!
//! Finite volumes with two-point fluxes: through the face `f` between tetrahedra `c` and `n`
//! flows `A_f / d_f · (T_n − T_c)`, with `A_f` the face's area and `d_f` the distance between
//! the two centres. On a boundary face the reference of the boundary triangle decides: ref 1
//! (x = 0 on the sample cube) is held at 1, ref 2 (x = 1) at 0, with `d_f` the distance from
//! the centre to the face's centre; any other face is insulated. So
//!
//! `T_c ← T_c + Δt · Σ_f k_f (T_f − T_c)`, with `k_f = A_f / (d_f V_c)`.
//!
//! With `Δt ≤ 1 / Σ_f k_f` in every tetrahedron, the new value is a convex combination of old
//! ones, so temperatures stay between the boundary and initial values (the maximum principle)
//! and the scheme cannot blow up, unlike GMlib's (which diverged on our meshes). `Δt` is 0.9 ×
//! the smallest bound, found by a `Min` reduction. Steps run until the L2 norm of the update
//! has dropped by the requested factor.
//!
//! Kernels: `centre` (tetrahedron centres); `geometry` (once: `k_f`, boundary temperatures and
//! each tetrahedron's time-step bound; it reads the neighbours' centres through the neighbour
//! link, `TetCentre[1 + i]`, and the boundary triangles' references through the tetrahedron →
//! triangle downlink, `TetTriRef[i]`, after `extract_faces` made every face a triangle); then
//! per step `flux` (reads the neighbours' temperatures `TetTemp[1 + i]`, writes the update
//! `TetRhs`) and `update` (`TetTemp += TetRhs`). Two kernels per step because a kernel cannot
//! write the field it reads through a link.
//!
//! Two-point fluxes are exact only on meshes whose faces are orthogonal to the lines between
//! centres; on a general mesh the steady state is close to, not exactly, the linear profile.

use std::path::PathBuf;

use bytemuck::{Pod, Zeroable};
use clap::Parser;
use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind, Reduction};

/// Parameters shared by the kernels, mirrored by `PARAMETERS` on the device.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct Params {
    /// Time step.
    pub dt: f32,
    /// Temperature of the faces with reference `hot_ref`.
    pub hot: f32,
    /// Temperature of the faces with reference `cold_ref`.
    pub cold: f32,
    /// Reference of the hot boundary triangles.
    pub hot_ref: i32,
    /// Reference of the cold boundary triangles.
    pub cold_ref: i32,
}

const PARAMETERS: &str =
    "typedef struct { float dt, hot, cold; int hot_ref, cold_ref; } GmlParSct;\n";

/// Fraction of the largest stable time step used.
pub const SAFETY: f32 = 0.9;

/// The result of a run.
pub struct Heat {
    /// The time step.
    pub dt: f64,
    /// The L2 norm of the update `TetRhs` at each step.
    pub residuals: Vec<f64>,
    /// The temperature of each tetrahedron at the end.
    pub temperature: Vec<f32>,
}

/// Starts from `params.cold` everywhere and steps until the residual has dropped by `drop`
/// (relative to the first step's) or `max_steps` steps have run.
pub fn run(gml: &mut Gml, params: Params, drop: f64, max_steps: usize) -> anyhow::Result<Heat> {
    gml.extract_faces()?;
    let parameters = gml.new_parameters::<Params>(PARAMETERS)?;
    let vertices = gml.mesh(MeshKind::Vertices)?;
    let faces = gml.mesh(MeshKind::Triangles)?;
    let neighbours = gml.set_neighbours(MeshKind::Tetrahedra)?;
    let tet = MeshKind::Tetrahedra;
    let centre = gml.new_solution::<[f32; 4]>(tet, 1, "Centre")?;
    let coef = gml.new_solution::<f32>(tet, 4, "Coef")?;
    let wall = gml.new_solution::<f32>(tet, 4, "Wall")?;
    let bound = gml.new_solution::<f32>(tet, 1, "Bound")?;
    let temp = gml.new_solution::<f32>(tet, 1, "Temp")?;
    let rhs = gml.new_solution::<f32>(tet, 1, "Rhs")?;
    let tet_count = gml.count(tet).unwrap_or(0);
    gml.set_block(temp, 0, &vec![params.cold; tet_count])?;

    let centres = gml.compile(
        KernelSpec::new("centre", tet)
            .access(Access::read(vertices))
            .access(Access::write(centre))
            .body("TetCentre = (TetCrd[0] + TetCrd[1] + TetCrd[2] + TetCrd[3]) / 4.0f;"),
    )?;
    let geometry = gml.compile(
        KernelSpec::new("geometry", tet)
            .access(Access::read(vertices))
            .access(Access::read(faces).with_refs())
            .access(Access::read(centre).via(neighbours))
            .access(Access::write(coef))
            .access(Access::write(wall))
            .access(Access::write(bound))
            .body(
                "const int face[4][3] = {{1, 2, 3}, {2, 0, 3}, {3, 0, 1}, {0, 2, 1}};
                 const float volume = CalTetVol(TetCrd[0], TetCrd[1], TetCrd[2], TetCrd[3]);
                 float sum = 0.0f;
                 for (int i = 0; i < 4; i++) {
                     const float4 a = TetCrd[face[i][0]], b = TetCrd[face[i][1]], c = TetCrd[face[i][2]];
                     const int ref = TetTriRef[i];
                     float d = 0.0f;
                     if (TetNgb[i] >= 0) d = distance(TetCentre[0], TetCentre[1 + i]);
                     else if (ref == GmlPar->hot_ref || ref == GmlPar->cold_ref)
                         d = distance(TetCentre[0], (a + b + c) / 3.0f);
                     TetCoef[i] = d > 0.0f ? CalTriSrf(a, b, c) / (d * volume) : 0.0f;
                     TetWall[i] = ref == GmlPar->hot_ref ? GmlPar->hot : GmlPar->cold;
                     sum += TetCoef[i];
                 }
                 TetBound = sum > 0.0f ? 1.0f / sum : INFINITY;",
            ),
    )?;
    let flux = gml.compile(
        KernelSpec::new("flux", tet)
            .access(Access::read(temp).via(neighbours))
            .access(Access::read(coef))
            .access(Access::read(wall))
            .access(Access::write(rhs))
            .body(
                "float sum = 0.0f;
                 for (int i = 0; i < 4; i++) {
                     const float outside = TetNgb[i] >= 0 ? TetTemp[1 + i] : TetWall[i];
                     sum += TetCoef[i] * (outside - TetTemp[0]);
                 }
                 TetRhs = GmlPar->dt * sum;",
            ),
    )?;
    let update = gml.compile(
        KernelSpec::new("update", tet)
            .access(Access::read_write(temp))
            .access(Access::read(rhs))
            .body("TetTemp += TetRhs;"),
    )?;

    gml.upload_parameters(&parameters, &params)?;
    gml.launch(centres)?;
    gml.launch(geometry)?;
    let dt = SAFETY * gml.reduce(bound, Reduction::Min)? as f32;
    gml.upload_parameters(&parameters, &Params { dt, ..params })?;

    let mut residuals = Vec::new();
    for _ in 0..max_steps {
        gml.launch(flux)?;
        gml.launch(update)?;
        let residual = gml.reduce(rhs, Reduction::L2)?;
        residuals.push(residual);
        if residual <= drop * residuals[0] {
            break;
        }
    }
    Ok(Heat {
        dt: f64::from(dt),
        residuals,
        temperature: gml.read_all(temp)?,
    })
}

/// Cell-centred explicit heat equation on a tetrahedral mesh, on the device.
#[derive(Parser)]
struct Args {
    /// A .mesh or .meshb file with tetrahedra and boundary triangles with references.
    mesh: PathBuf,
    /// Stop when the residual has dropped by this factor.
    #[arg(long, default_value_t = 1e-3)]
    drop: f64,
    /// Stop after this many steps anyway.
    #[arg(long, default_value_t = 100_000)]
    max_steps: usize,
    /// OpenCL device: an index, part of its name, or `default`.
    #[arg(long, default_value = "default")]
    device: DeviceSelector,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut gml = Gml::new(&args.device)?;
    gml.import_file(&args.mesh)?;
    println!("{} on {}", args.mesh.display(), gml.device().name);

    let params = Params {
        dt: 0.0,
        hot: 1.0,
        cold: 0.0,
        hot_ref: 1,
        cold_ref: 2,
    };
    let heat = run(&mut gml, params, args.drop, args.max_steps)?;
    println!("time step {:.4e}", heat.dt);
    let every = (heat.residuals.len() / 10).max(1);
    for (step, r) in heat.residuals.iter().enumerate() {
        if step == 0 || (step + 1) % every == 0 || step + 1 == heat.residuals.len() {
            println!("step {:>6}: residual {r:.4e}", step + 1);
        }
    }
    let t = &heat.temperature;
    let (min, max) = t
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        });
    let mean = t.iter().map(|&x| f64::from(x)).sum::<f64>() / t.len() as f64;
    println!(
        "after {} steps (time {:.4}): temperature min {min:.4}, mean {mean:.4}, max {max:.4}",
        heat.residuals.len(),
        heat.dt * heat.residuals.len() as f64
    );
    let counters = gml.counters();
    for s in &counters.stages {
        let ms = s.busy.as_secs_f64() * 1e3;
        println!("{:<17} {:>7} launches {ms:>10.3} ms", s.stage, s.launches);
    }
    Ok(())
}
