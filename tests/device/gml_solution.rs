//! gml and solution files: a `SolAt…` block imported as a field, computed on, and exported
//! back into a block that a `.solb` file holds.

use std::path::Path;

use snowsim::gml::{Access, GmlError, KernelSpec, MeshKind};
use snowsim::meshio::{
    self, ElementKind, Format, SolType, SolutionBlock, Solutions, Support, Version,
};

use crate::common::{gml, sample};

#[test]
fn a_solution_block_becomes_a_field_and_a_field_a_block() {
    let mesh = sample("sphere_surface.meshb");
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let nv = mesh.vertices.len();
    let nt = mesh.count(ElementKind::Triangles);

    // A scalar per vertex, doubled by a kernel, exported and written to a file.
    let scalars = SolutionBlock {
        support: Support::Vertices,
        types: vec![SolType::Scalar],
        values: (0..nv).map(|i| i as f64 * 0.5).collect(),
    };
    let u = g.import_solution::<f32>(&scalars, 3, "U").unwrap();
    let k = g
        .compile(
            KernelSpec::new("twice", MeshKind::Vertices)
                .access(Access::read_write(u))
                .body("VerU = 2.0f * VerU;"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let doubled = g.export_solution(u, &[SolType::Scalar], 3).unwrap();
    assert_eq!(doubled.support, Support::Vertices);
    let expected: Vec<f64> = (0..nv).map(|i| i as f64).collect();
    assert_eq!(doubled.values, expected);
    let solutions = Solutions {
        dimension: 3,
        blocks: vec![doubled],
    };
    let bytes = meshio::solution_to_bytes(&solutions, Format::Binary, Version::V1).unwrap();
    let file = meshio::read_solution_bytes(&bytes, Format::Binary, Path::new("u.solb")).unwrap();
    assert_eq!(file.solutions, solutions);

    // A vector and a symmetric matrix per triangle: 9 values a line, back unchanged.
    let mixed = SolutionBlock {
        support: Support::Elements(ElementKind::Triangles),
        types: vec![SolType::Vector, SolType::SymMatrix],
        values: (0..nt * 9).map(|i| (i % 1000) as f64 - 0.25).collect(),
    };
    let m = g.import_solution::<f32>(&mixed, 3, "M").unwrap();
    assert_eq!(g.export_solution(m, &mixed.types, 3).unwrap(), mixed);

    // Lengths and widths that do not match are refused.
    let mut short = scalars.clone();
    short.values.pop();
    let e = g.import_solution::<f32>(&short, 3, "Short").unwrap_err();
    assert!(matches!(e, GmlError::WrongLength { .. }), "{e}");
    // A 3D matrix is 9 values too: a vector is not.
    assert!(g.export_solution(m, &[SolType::Matrix], 3).is_ok());
    let e = g.export_solution(m, &[SolType::Vector], 3).unwrap_err();
    assert!(
        matches!(
            e,
            GmlError::WrongLength {
                expected: 9,
                got: 3,
                ..
            }
        ),
        "{e}"
    );

    // In double precision, values that f32 would round come back exactly.
    if g.has_fp64() {
        let fine = SolutionBlock {
            values: (0..nv).map(|i| 0.1 + i as f64 / 3.0).collect(),
            ..scalars.clone()
        };
        let d = g.import_solution::<f64>(&fine, 3, "D").unwrap();
        assert_eq!(g.export_solution(d, &fine.types, 3).unwrap(), fine);
    }
}
