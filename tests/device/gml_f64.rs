//! Double precision end to end: kernels over f64 data compute in double, with double literals
//! and the toolkit's double helpers.

use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind};

use crate::common::{Capability, skip};

fn gml() -> Option<Gml> {
    let g = Gml::new(&DeviceSelector::Default).expect("an OpenCL device (PoCL in CI)");
    if !g.has_fp64() {
        skip(
            Capability::Fp64,
            format!("{} has no FP64", g.device().label()),
        );
        return None;
    }
    Some(g)
}

#[test]
fn a_kernel_over_f64_data_keeps_double_literals_and_helpers() {
    let Some(mut g) = gml() else { return };
    g.new_mesh(MeshKind::Vertices, 5).unwrap();
    let x = g.new_solution::<f64>(MeshKind::Vertices, 1, "X").unwrap();
    let q = g.new_solution::<f64>(MeshKind::Vertices, 1, "Q").unwrap();
    g.set_block(x, 0, &[0.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
    let k = g
        .compile(
            KernelSpec::new("tenths", MeshKind::Vertices)
                .access(Access::read_write(x))
                .access(Access::write(q))
                .body(
                    "VerX = VerX * 0.1 + 1e-12;\n\
                     const double4 a = (double4)(0.0, 0.0, 0.0, 0.0);\n\
                     const double4 b = (double4)(1.0, 0.0, 0.0, 0.0);\n\
                     const double4 c = (double4)(0.5, 0.8660254037844386, 0.0, 0.0);\n\
                     const double4 d = (double4)(0.5, 0.28867513459481287, 0.816496580927726, 0.0);\n\
                     VerQ = CalTetQalF64(a, b, c, d) - 1.0;",
                ),
        )
        .unwrap();
    g.launch(k).unwrap();
    let got = g.read_all(x).unwrap();
    for (i, v) in got.iter().enumerate() {
        // In single-precision constants, 0.1 would be 0.100000001490116…: 1e-9 off.
        let want = i as f64 * 0.1 + 1e-12;
        assert!((v - want).abs() <= 1e-15, "{i}: {v} vs {want}");
    }
    // The regular tetrahedron's quality is 1 to double precision, not float's 1e-7.
    for v in g.read_all(q).unwrap() {
        assert!(v.abs() < 1e-13, "quality − 1 = {v}");
    }
}

/// The scalars of conjugate gradients, left on the device by reductions: `p·q`, and `r·r` of
/// the current and the next iteration (alternating slots, so no kernel reads a slot that a
/// reduction of the same iteration writes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct CgScalars {
    pq: f64,
    rr: [f64; 2],
}

const CG_PARAMETERS: &str = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n\
                             typedef struct { double pq; double rr[2]; } GmlParSct;\n";

/// The 7-point Laplacian of an `n³` grid with zero Dirichlet values around it, applied on the
/// host in f64: `(A x)_i = 6 x_i − Σ x_neighbour`.
fn poisson_apply(n: usize, x: &[f64]) -> Vec<f64> {
    let at = |i: usize, j: usize, k: usize| (k * n + j) * n + i;
    let mut y = vec![0.0; x.len()];
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                let mut sum = 0.0;
                for (di, dj, dk) in [
                    (-1i64, 0, 0),
                    (1, 0, 0),
                    (0, -1, 0),
                    (0, 1, 0),
                    (0, 0, -1),
                    (0, 0, 1),
                ] {
                    let (a, b, c) = (i as i64 + di, j as i64 + dj, k as i64 + dk);
                    if (0..n as i64).contains(&a)
                        && (0..n as i64).contains(&b)
                        && (0..n as i64).contains(&c)
                    {
                        sum += x[at(a as usize, b as usize, c as usize)];
                    }
                }
                y[at(i, j, k)] = 6.0 * x[at(i, j, k)] - sum;
            }
        }
    }
    y
}

#[test]
fn conjugate_gradients_in_f64_reach_a_true_residual_of_1e_10() {
    conjugate_gradients(false);
}

/// The same solve with the dot products folded by the kernels that produce their terms
/// (`KernelSpec::sums`): three launches an iteration instead of five.
#[test]
fn conjugate_gradients_with_folded_sums_reach_a_true_residual_of_1e_10() {
    conjugate_gradients(true);
}

/// Conjugate gradients on a 20³ Poisson grid; `folded`: the dot products summed by the
/// kernels themselves rather than by reductions.
fn conjugate_gradients(folded: bool) {
    use snowsim::gml::Reduction;
    let Some(mut g) = gml() else { return };
    let n = 20;
    let count = n * n * n;
    let at = |i: usize, j: usize, k: usize| ((k * n + j) * n + i) as i32;
    g.new_mesh(MeshKind::Vertices, count).unwrap();
    // Each grid point's six neighbours, -1 outside the grid (the Dirichlet boundary).
    let mut targets = Vec::with_capacity(6 * count);
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                let inside =
                    |a: usize, b: usize, c: usize, ok: bool| if ok { at(a, b, c) } else { -1 };
                targets.extend([
                    inside(i.wrapping_sub(1), j, k, i > 0),
                    inside(i + 1, j, k, i + 1 < n),
                    inside(i, j.wrapping_sub(1), k, j > 0),
                    inside(i, j + 1, k, j + 1 < n),
                    inside(i, j, k.wrapping_sub(1), k > 0),
                    inside(i, j, k + 1, k + 1 < n),
                ]);
            }
        }
    }
    let ngb = g
        .new_link(MeshKind::Vertices, MeshKind::Vertices, 6, "Ngb")
        .unwrap();
    g.set_link_block(ngb, 0, &targets).unwrap();
    let params = g.new_parameters::<CgScalars>(CG_PARAMETERS).unwrap();
    let field =
        |g: &mut Gml, name: &str| g.new_solution::<f64>(MeshKind::Vertices, 1, name).unwrap();
    let (x, r, p, q, pq, rr) = (
        field(&mut g, "X"),
        field(&mut g, "R"),
        field(&mut g, "P"),
        field(&mut g, "Q"),
        field(&mut g, "PQ"),
        field(&mut g, "RR"),
    );
    let b: Vec<f64> = (0..count).map(|i| 1.0 + (i as f64 * 0.37).sin()).collect();
    g.set_block(r, 0, &b).unwrap();
    g.set_block(p, 0, &b).unwrap();
    g.set_block(rr, 0, &b.iter().map(|v| v * v).collect::<Vec<_>>())
        .unwrap();

    let product =
        "VerQ = 6.0 * VerP[0] - (VerP[1] + VerP[2] + VerP[3] + VerP[4] + VerP[5] + VerP[6]);\n";
    let apply = KernelSpec::new("apply", MeshKind::Vertices)
        .access(Access::read(p).via(ngb))
        .access(Access::write(q));
    let apply = if folded {
        apply
            .body(&format!("{product}GmlSum[0] = VerP[0] * VerQ;"))
            .sums(1, "GmlPar->pq = GmlSum[0];")
    } else {
        apply
            .access(Access::write(pq))
            .body(&format!("{product}VerPQ = VerP[0] * VerQ;"))
    };
    let apply = g.compile(apply).unwrap();
    // One update and one direction kernel per parity of the iteration.
    let [update, direction] = ["update", "direction"];
    let compile = |g: &mut Gml, e: usize| {
        let step = format!(
            "const double alpha = GmlPar->rr[{e}] / GmlPar->pq;\n\
             VerX += alpha * VerP;\n\
             VerR -= alpha * VerQ;\n"
        );
        let up = KernelSpec::new(&format!("{update}{e}"), MeshKind::Vertices)
            .access(Access::read_write(x))
            .access(Access::read_write(r))
            .access(Access::read(p))
            .access(Access::read(q));
        let up = if folded {
            up.body(&format!("{step}GmlSum[0] = VerR * VerR;"))
                .sums(1, &format!("GmlPar->rr[{}] = GmlSum[0];", 1 - e))
        } else {
            up.access(Access::write(rr))
                .body(&format!("{step}VerRR = VerR * VerR;"))
        };
        let up = g.compile(up).unwrap();
        let dir = g
            .compile(
                KernelSpec::new(&format!("{direction}{e}"), MeshKind::Vertices)
                    .access(Access::read_write(p))
                    .access(Access::read(r))
                    .body(&format!(
                        "VerP = VerR + (GmlPar->rr[{}] / GmlPar->rr[{e}]) * VerP;",
                        1 - e
                    )),
            )
            .unwrap();
        (up, dir)
    };
    let kernels = [compile(&mut g, 0), compile(&mut g, 1)];

    let mut timeline = g.context().timeline();
    g.reduce_into_parameters(rr, Reduction::Sum, &params, 8, &mut timeline)
        .unwrap();
    let b_norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    let mut iterations = 0;
    let converged = loop {
        let e = iterations % 2;
        let (up, dir) = kernels[e];
        g.enqueue(apply, &mut timeline).unwrap();
        if !folded {
            g.reduce_into_parameters(pq, Reduction::Sum, &params, 0, &mut timeline)
                .unwrap();
        }
        g.enqueue(up, &mut timeline).unwrap();
        if !folded {
            g.reduce_into_parameters(rr, Reduction::Sum, &params, 8 + 8 * (1 - e), &mut timeline)
                .unwrap();
        }
        g.enqueue(dir, &mut timeline).unwrap();
        iterations += 1;
        // The residual is read every 10 iterations, without stopping the queue before it.
        if iterations % 10 == 0 {
            let scalars = g
                .download_parameters_async(&params)
                .unwrap()
                .wait()
                .unwrap();
            let rr_now = scalars.rr[iterations % 2];
            if rr_now.sqrt() <= 1e-12 * b_norm {
                break true;
            }
            timeline.resolve().unwrap();
        }
        if iterations >= 1000 {
            break false;
        }
    };
    assert!(converged, "no convergence in {iterations} iterations");
    let solution = g.read_all(x).unwrap();
    let ax = poisson_apply(n, &solution);
    let residual = b
        .iter()
        .zip(&ax)
        .map(|(b, ax)| (b - ax) * (b - ax))
        .sum::<f64>()
        .sqrt()
        / b_norm;
    println!(
        "CG on a {n}³ Poisson grid (sums folded: {folded}): {iterations} iterations, true \
         relative residual {residual:e}"
    );
    assert!(
        residual <= 1e-10,
        "true relative residual {residual:e} after {iterations} iterations"
    );
    // Conjugate gradients on this operator need about √κ · ln(2/ε) / 2 ≈ 200 iterations.
    assert!(iterations <= 400, "{iterations} iterations");
}
