//! Double precision end to end: kernels over f64 data compute in double, with double literals
//! and the toolkit's double helpers.

use snowsim::cl::DeviceSelector;
use snowsim::gml::{Access, Gml, KernelSpec, MeshKind};

fn gml() -> Option<Gml> {
    let g = Gml::new(&DeviceSelector::Default).expect("an OpenCL device (PoCL in CI)");
    if !g.has_fp64() {
        println!("SKIPPED: {} has no FP64", g.device().label());
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
