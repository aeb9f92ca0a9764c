//! gml and solution files: a `SolAt…` block imported as a field, computed on, and exported
//! back into a block that a `.solb` file holds; several fields in one file with their
//! `ReferenceStrings` names, against files built by hand as GMlib and libMeshb write them.

use std::path::Path;

use snowsim::gml::{Access, ExportField, GmlError, KernelSpec, MeshKind};
use snowsim::meshio::{
    self, ElementKind, Format, ReferenceString, SolType, SolutionBlock, Solutions, Support, Version,
};

use crate::common::{Capability, gml, sample, skip, temp_dir};

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

/// A little-endian version 1 `.solb` built field by field from the format description
/// (gmlib-internals.md section 9; ReferenceStrings lines are two ints and 64 words of text).
struct SolbV1 {
    bytes: Vec<u8>,
    /// Where the last keyword's next position must be patched.
    patch: Option<usize>,
}

impl SolbV1 {
    fn new(dimension: i32) -> Self {
        let mut s = SolbV1 {
            bytes: Vec::new(),
            patch: None,
        };
        for word in [1, 1, 3, 20, dimension] {
            s.i32(word);
        }
        s
    }
    fn i32(&mut self, v: i32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    fn keyword(&mut self, code: i32) {
        self.close();
        self.i32(code);
        self.patch = Some(self.bytes.len());
        self.i32(0);
    }
    fn close(&mut self) {
        if let Some(at) = self.patch.take() {
            let here = self.bytes.len() as i32;
            self.bytes[at..at + 4].copy_from_slice(&here.to_le_bytes());
        }
    }
    fn text(&mut self, text: &str) {
        let mut field = [0u8; 256];
        field[..text.len()].copy_from_slice(text.as_bytes());
        self.bytes.extend_from_slice(&field);
    }
    fn end(mut self) -> Vec<u8> {
        self.keyword(54);
        self.patch = None;
        self.bytes
    }
}

#[test]
fn several_fields_go_to_one_file_as_gmlib_writes_it_and_come_back() {
    let mesh = sample("sphere_surface.meshb");
    let (nv, nt) = (mesh.vertices.len(), mesh.count(ElementKind::Triangles));
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let u = g.new_solution::<f32>(MeshKind::Vertices, 1, "U").unwrap();
    let v = g
        .new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "V")
        .unwrap();
    let t = g.new_solution::<f32>(MeshKind::Triangles, 3, "T").unwrap();
    let us: Vec<f32> = (0..nv).map(|i| i as f32 * 0.25).collect();
    let vs: Vec<[f32; 4]> = (0..nv)
        .map(|i| [i as f32, -(i as f32), 0.5, (i % 7) as f32])
        .collect();
    let ts: Vec<f32> = (0..nt * 3).map(|i| (i % 1000) as f32 - 0.75).collect();
    g.set_block(u, 0, &us).unwrap();
    g.set_block(v, 0, &vs).unwrap();
    g.set_block(t, 0, &ts).unwrap();
    // A kernel doubles U on the device: the export reads it back.
    let k = g
        .compile(
            KernelSpec::new("twice_u", MeshKind::Vertices)
                .access(Access::read_write(u))
                .body("VerU = 2.0f * VerU;"),
        )
        .unwrap();
    g.launch(k).unwrap();

    // GmlExportSolution(file, U, V, T): vertices first (U then V), then triangles.
    let dir = temp_dir("device", "gml_solution_multi");
    let path = dir.join("out.solb");
    let fields = [
        ExportField::new(u),
        ExportField::new(v),
        ExportField::new(t),
    ];
    g.write_solutions(&path, &fields, 3, Version::V1).unwrap();

    let mut want = SolbV1::new(3);
    want.keyword(62);
    want.i32(nv as i32);
    want.i32(5);
    for _ in 0..5 {
        want.i32(1);
    }
    for i in 0..nv {
        want.bytes.extend_from_slice(&(2.0 * us[i]).to_le_bytes());
        for x in vs[i] {
            want.bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    want.keyword(64);
    want.i32(nt as i32);
    want.i32(3);
    for _ in 0..3 {
        want.i32(1);
    }
    for x in &ts {
        want.bytes.extend_from_slice(&x.to_le_bytes());
    }
    want.keyword(199);
    want.i32(8);
    let names = [
        (62, "U 1"),
        (62, "V.x 2"),
        (62, "V.y 3"),
        (62, "V.z 4"),
        (62, "V.t 5"),
        (64, "T.x 6"),
        (64, "T.y 7"),
        (64, "T.z 8"),
    ];
    for (code, text) in names {
        want.i32(code);
        want.i32(1);
        want.text(text);
    }
    let want = want.end();
    let got = std::fs::read(&path).unwrap();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the file differs from the hand-built one");

    // The hand-built file imports as three fields, named and split as they were.
    let hand = dir.join("hand.solb");
    std::fs::write(&hand, &want).unwrap();
    let mut h = gml();
    h.import_mesh(&mesh).unwrap();
    let fields = h.import_solution_file::<f32>(&hand).unwrap();
    let summary: Vec<(&str, MeshKind, usize)> = fields
        .iter()
        .map(|f| (f.name.as_str(), f.kind, f.types.len()))
        .collect();
    assert_eq!(
        summary,
        [
            ("U", MeshKind::Vertices, 1),
            ("V", MeshKind::Vertices, 4),
            ("T", MeshKind::Triangles, 3)
        ]
    );
    let doubled: Vec<f32> = us.iter().map(|x| 2.0 * x).collect();
    assert_eq!(h.read_all(fields[0].field).unwrap(), doubled);
    let flat: Vec<f32> = vs.iter().flatten().copied().collect();
    assert_eq!(h.read_all(fields[1].field).unwrap(), flat);
    assert_eq!(h.read_all(fields[2].field).unwrap(), ts);
    // Exported again, the same bytes.
    let again: Vec<ExportField> = fields.iter().map(|f| ExportField::new(f.field)).collect();
    let path2 = dir.join("again.solb");
    h.write_solutions(&path2, &again, 3, Version::V1).unwrap();
    assert!(std::fs::read(&path2).unwrap() == want);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn typed_fields_named_as_libmeshb_examples_name_them() {
    let mesh = sample("sphere_surface.meshb");
    let nv = mesh.vertices.len();
    // Written by hand as libMeshb's example writes `tri.sol`: names before the solutions,
    // index = position of the type.
    let mut text = String::from(
        "MeshVersionFormatted 2\n\nDimension 3\n\nReferenceStrings\n3\n62 1 first scalar\n\
         62 2 a vector\n62 3 second scalar\n\nSolAtVertices\n",
    );
    text.push_str(&format!("{nv}\n3 1 2 1\n"));
    for i in 1..=nv {
        text.push_str(&format!(
            "{i} {} {} {} {}\n",
            2 * i,
            3 * i,
            4 * i,
            -(i as i64)
        ));
    }
    text.push_str("\nEnd\n");
    let dir = temp_dir("device", "gml_solution_typed");
    let hand = dir.join("tri.sol");
    std::fs::write(&hand, &text).unwrap();

    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let fields = g.import_solution_file::<f64>(&hand).unwrap();
    let summary: Vec<(&str, Vec<SolType>)> = fields
        .iter()
        .map(|f| (f.name.as_str(), f.types.clone()))
        .collect();
    assert_eq!(
        summary,
        [
            ("first_scalar", vec![SolType::Scalar]),
            ("a_vector", vec![SolType::Vector]),
            ("second_scalar", vec![SolType::Scalar]),
        ]
    );
    let vector: Vec<f64> = (1..=nv)
        .flat_map(|i| [2.0 * i as f64, 3.0 * i as f64, 4.0 * i as f64])
        .collect();
    if !g.has_fp64() {
        skip(
            Capability::Fp64,
            format!(
                "{} has no FP64: the f64 vector's values and the typed export are not checked",
                g.device().label()
            ),
        );
        return;
    }
    assert_eq!(g.read_all(fields[1].field).unwrap(), vector);

    // Exported with their types, they give back the file's block and names.
    let typed: Vec<ExportField> = fields
        .iter()
        .map(|f| ExportField::with_types(f.field, &f.types))
        .collect();
    let exported = g.export_solutions(&typed, 3).unwrap();
    let (file, names) = meshio::read_named_solution(&hand).unwrap();
    assert_eq!(exported.solutions, file.solutions);
    let expected = [
        ReferenceString::new(62, 1, "first_scalar"),
        ReferenceString::new(62, 2, "a_vector"),
        ReferenceString::new(62, 3, "second_scalar"),
    ];
    assert_eq!(exported.names, expected);
    assert_eq!(names[1], ReferenceString::new(62, 2, "a vector"));
    // Through .sol and .solb of every version, unchanged.
    for version in [Version::V2, Version::V3, Version::V4] {
        for ext in ["sol", "solb"] {
            let path = dir.join(format!("typed{}.{ext}", version.number()));
            g.write_solutions(&path, &typed, 3, version).unwrap();
            let (back, back_names) = meshio::read_named_solution(&path).unwrap();
            assert_eq!(back.solutions, exported.solutions, "{}", path.display());
            assert_eq!(back_names, expected, "{}", path.display());
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn exports_and_imports_that_cannot_be_done_are_errors() {
    let mesh = sample("sphere_surface.meshb");
    let nv = mesh.vertices.len();
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let u = g.new_solution::<f32>(MeshKind::Vertices, 3, "U").unwrap();
    let e = g.export_solutions(&[], 3).unwrap_err();
    assert!(matches!(e, GmlError::Export { .. }), "{e}");
    let e = g
        .export_solutions(&[ExportField::new(u), ExportField::new(u)], 3)
        .unwrap_err();
    assert!(e.to_string().contains("`U` is given twice"), "{e}");
    let vertices = g.mesh(MeshKind::Vertices).unwrap();
    let e = g
        .export_solutions(&[ExportField::new(vertices)], 3)
        .unwrap_err();
    assert!(e.to_string().contains("not a solution field"), "{e}");
    // A 2D vector is 2 values, not the 3 of U.
    let e = g
        .export_solutions(&[ExportField::with_types(u, &[SolType::Vector])], 2)
        .unwrap_err();
    assert!(
        matches!(
            e,
            GmlError::WrongLength {
                expected: 3,
                got: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        g.export_solutions(&[ExportField::with_types(u, &[SolType::Vector])], 3)
            .is_ok()
    );
    let e = g.export_solutions(&[ExportField::new(u)], 4).unwrap_err();
    assert!(e.to_string().contains("dimension 4"), "{e}");

    // Names that fit no convention: the file and keyword are named.
    let dir = temp_dir("device", "gml_solution_bad_names");
    let bad = dir.join("bad.sol");
    let mut text = format!("MeshVersionFormatted 2\nDimension 3\nSolAtVertices\n{nv}\n2 1 1\n");
    for _ in 0..nv {
        text.push_str("1 2\n");
    }
    text.push_str("ReferenceStrings\n1\n62 5 five\nEnd\n");
    std::fs::write(&bad, text).unwrap();
    let e = g.import_solution_file::<f32>(&bad).unwrap_err();
    assert!(matches!(e, GmlError::SolutionNames { .. }), "{e}");
    let message = e.to_string();
    assert!(
        message.contains("bad.sol") && message.contains("SolAtVertices"),
        "{message}"
    );
    // Without names, the fields are Sol1, Sol2 (U already exists: no clash).
    let (file, _) = meshio::read_named_solution(&bad).unwrap();
    let fields = g.import_solutions::<f32>(&file.solutions, &[]).unwrap();
    let named: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(named, ["Sol1", "Sol2"]);
    // A second import under the same names is the duplicate-name error, and leaves nothing.
    g.free(fields[1].field).unwrap();
    let e = g.import_solutions::<f32>(&file.solutions, &[]).unwrap_err();
    assert!(matches!(e, GmlError::DuplicateName(_)), "{e}");
    // `A` is made, then `U` clashes with the field above: `A` is freed again.
    g.free(fields[0].field).unwrap();
    let names = [
        ReferenceString::new(62, 1, "A"),
        ReferenceString::new(62, 2, "U"),
    ];
    let e = g
        .import_solutions::<f32>(&file.solutions, &names)
        .unwrap_err();
    assert!(
        matches!(e, GmlError::DuplicateName(ref n) if n == "U"),
        "{e}"
    );
    // `A` was made, then freed: importing it again works.
    let again = g.import_solutions::<f32>(&file.solutions, &[]).unwrap();
    assert_eq!(again.len(), 2);
    let a = [ReferenceString::new(62, 1, "A")];
    let only_a = SolutionBlock {
        types: vec![SolType::Scalar],
        values: vec![0.0; nv],
        ..file.solutions.blocks[0].clone()
    };
    let one = Solutions {
        dimension: 3,
        blocks: vec![only_a],
    };
    assert_eq!(g.import_solutions::<f32>(&one, &a).unwrap()[0].name, "A");
    std::fs::remove_dir_all(dir).ok();
}

/// `set_lines` scatters onto the field as the device last wrote it, the kernels see it, and a
/// wrong length or a line out of range is an error that writes nothing.
#[test]
fn set_lines_scatters_onto_the_device_copy() {
    let mesh = sample("sphere_surface.meshb");
    let nv = mesh.vertices.len();
    let mut g = gml();
    g.import_mesh(&mesh).unwrap();
    let v = g
        .new_solution::<[f32; 2]>(MeshKind::Vertices, 1, "V")
        .unwrap();
    let k = g
        .compile(
            KernelSpec::new("v_plus_one", MeshKind::Vertices)
                .access(Access::read_write(v))
                .body("VerV += (float2)(1.0f, 2.0f);"),
        )
        .unwrap();
    g.launch(k).unwrap();
    let lines = [3u32, 0, (nv - 1) as u32];
    g.set_lines(v, &lines, &[[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]])
        .unwrap();
    assert!(matches!(
        g.set_lines(v, &lines, &[[0.0, 0.0]]),
        Err(GmlError::WrongLength { .. })
    ));
    assert!(matches!(
        g.set_lines(v, &[1, nv as u32], &[[0.0, 0.0]; 2]),
        Err(GmlError::LineOutOfRange { .. })
    ));
    g.launch(k).unwrap();
    let got = g.read_all(v).unwrap();
    let mut want = vec![[2.0f32, 4.0]; nv];
    for (&l, x) in lines.iter().zip([[11.0, 22.0], [31.0, 42.0], [51.0, 62.0]]) {
        want[l as usize] = x;
    }
    assert_eq!(got, want);
}
