//! Solution files (`.sol`, `.solb`): round trips bit for bit in every version and both byte
//! orders, files written here by hand to libMeshb's layout (gmlib-internals.md section 9: count,
//! a 4-byte type count and 4-byte type codes, then the reals), every type in 2D and 3D, damaged
//! files as located errors without panics or large allocations, and the command line.

use std::path::Path;

use snowsim::meshio::{
    self, ElementKind, Format, ReferenceString, SolType, SolutionBlock, SolutionError, Solutions,
    Support, Version,
};

use crate::common::{snowsim, temp_dir, text};
use crate::meshio_fuzz::peak_allocation;

/// Values whose shortest `f32` text is exact, so that version 1 files, text or binary, keep
/// them unchanged.
const SIMPLE: [f64; 8] = [0.0, 1.0, -0.0, 0.5, -7.25, 16777216.0, 0.125, -1024.0];

/// Values awkward for text and for `f32` (versions 2 to 4 keep them exactly).
const AWKWARD: [f64; 10] = [
    0.0,
    -0.0,
    0.1,
    -2.5e-7,
    1e300,
    1.0 / 3.0,
    -1e-310,
    6.1232339957368E-17,
    123456.789,
    f64::MAX,
];

/// A block on `support` with `types` and `count` lines of varied values.
fn block(
    support: Support,
    types: &[SolType],
    count: usize,
    dim: u8,
    values: &[f64],
) -> SolutionBlock {
    let width: usize = types.iter().map(|t| t.width(dim)).sum();
    SolutionBlock {
        support,
        types: types.to_vec(),
        values: (0..count * width)
            .map(|i| values[(i * 7 + count) % values.len()])
            .collect(),
    }
}

/// Every support, with every type alone and all four together, in `dim`, with values that
/// `version` keeps exactly.
fn every_kind(dim: u8, version: Version) -> Solutions {
    let values: &[f64] = if version == Version::V1 {
        &SIMPLE
    } else {
        &AWKWARD
    };
    let all = SolType::ALL;
    let blocks = Support::ALL
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let types: Vec<SolType> = match i % 5 {
                4 => all.to_vec(),
                k => vec![all[k]],
            };
            block(s, &types, i + 1, dim, values)
        })
        .collect();
    Solutions {
        dimension: dim,
        blocks,
    }
}

fn name(format: Format) -> &'static Path {
    match format {
        Format::Ascii => Path::new("t.sol"),
        Format::Binary => Path::new("t.solb"),
    }
}

fn encode(s: &Solutions, format: Format, version: Version) -> Vec<u8> {
    meshio::solution_to_bytes(s, format, version).unwrap()
}

fn decode(bytes: &[u8], format: Format) -> Result<Solutions, SolutionError> {
    Ok(meshio::read_solution_bytes(bytes, format, name(format))?.solutions)
}

/// Rewrites a little-endian binary file as big-endian, word by word, knowing its layout.
fn to_big_endian(le: &[u8], s: &Solutions, version: Version) -> Vec<u8> {
    let mut out = Vec::with_capacity(le.len());
    let mut at = 0;
    let mut swap = |n: usize, out: &mut Vec<u8>| {
        out.extend(le[at..at + n].iter().rev());
        at += n;
    };
    let (pos, count, real) = (
        version.position_bytes(),
        version.count_bytes(),
        version.real_bytes(),
    );
    for n in [4, 4, 4, pos, 4] {
        swap(n, &mut out);
    }
    for b in &s.blocks {
        for n in [4, pos, count, 4] {
            swap(n, &mut out);
        }
        for _ in &b.types {
            swap(4, &mut out);
        }
        for _ in &b.values {
            swap(real, &mut out);
        }
    }
    swap(4, &mut out);
    swap(pos, &mut out);
    assert_eq!(at, le.len());
    out
}

#[test]
fn round_trips_are_bit_for_bit_in_every_version_and_both_directions() {
    for dim in [2, 3] {
        for version in Version::ALL {
            let s = every_kind(dim, version);
            let what = format!("dimension {dim}, version {version}");
            let ascii = encode(&s, Format::Ascii, version);
            let binary = encode(&s, Format::Binary, version);
            // ASCII -> binary -> ASCII.
            let from_ascii = decode(&ascii, Format::Ascii).unwrap();
            assert_eq!(from_ascii, s, "{what}");
            let b = encode(&from_ascii, Format::Binary, version);
            assert_eq!(b, binary, "{what}");
            let back = encode(&decode(&b, Format::Binary).unwrap(), Format::Ascii, version);
            assert_eq!(back, ascii, "{what}");
            // Binary -> ASCII -> binary, from either byte order.
            let big = to_big_endian(&binary, &s, version);
            for (bytes, is_big) in [(&binary, false), (&big, true)] {
                let file = meshio::read_solution_bytes(bytes, Format::Binary, name(Format::Binary))
                    .unwrap();
                assert_eq!(file.big_endian, is_big, "{what}");
                assert_eq!(file.version, version, "{what}");
                assert_eq!(file.solutions, s, "{what}");
                let a = encode(&file.solutions, Format::Ascii, version);
                assert_eq!(a, ascii, "{what}");
                let b = encode(&decode(&a, Format::Ascii).unwrap(), Format::Binary, version);
                assert_eq!(&b, &binary, "{what}");
            }
        }
    }
}

/// Version 1 keeps `f32`: values that are not `f32` are rounded once, then stable.
#[test]
fn version_1_rounds_to_f32_then_round_trips() {
    let mut s = every_kind(3, Version::V1);
    s.blocks[0].values[0] = 0.1;
    for format in [Format::Ascii, Format::Binary] {
        let once = decode(&encode(&s, format, Version::V1), format).unwrap();
        assert_eq!(once.blocks[0].values[0] as f32, 0.1f32);
        let twice = encode(&once, format, Version::V1);
        assert_eq!(
            twice,
            encode(&decode(&twice, format).unwrap(), format, Version::V1)
        );
    }
}

/// Little- or big-endian words of a hand-written binary file.
struct Words {
    bytes: Vec<u8>,
    big: bool,
}

impl Words {
    fn int(&mut self, v: i64, size: usize) {
        match (size, self.big) {
            (4, false) => self.bytes.extend((v as i32).to_le_bytes()),
            (4, true) => self.bytes.extend((v as i32).to_be_bytes()),
            (_, false) => self.bytes.extend(v.to_le_bytes()),
            (_, true) => self.bytes.extend(v.to_be_bytes()),
        }
    }

    fn real(&mut self, v: f64, size: usize) {
        match (size, self.big) {
            (4, false) => self.bytes.extend((v as f32).to_le_bytes()),
            (4, true) => self.bytes.extend((v as f32).to_be_bytes()),
            (_, false) => self.bytes.extend(v.to_le_bytes()),
            (_, true) => self.bytes.extend(v.to_be_bytes()),
        }
    }
}

/// A `.solb` written field by field from the libMeshb layout: header, then per keyword its
/// code, the absolute position of the next keyword, the count, the type count and codes, the
/// reals; then End with position 0.
fn hand_binary(version: Version, big: bool, dim: u8, blocks: &[(i32, &[i32], &[f64])]) -> Vec<u8> {
    let (pos, count, real) = (
        version.position_bytes(),
        version.count_bytes(),
        version.real_bytes(),
    );
    let mut w = Words {
        bytes: Vec::new(),
        big,
    };
    w.int(1, 4);
    w.int(i64::from(version.number()), 4);
    w.int(3, 4);
    w.int((12 + pos + 4) as i64, pos);
    w.int(i64::from(dim), 4);
    for &(code, types, values) in blocks {
        let d = usize::from(dim);
        let width: usize = types
            .iter()
            .map(|t| [1, d, d * (d + 1) / 2, d * d][(*t - 1) as usize])
            .sum();
        w.int(i64::from(code), 4);
        let next = w.bytes.len() + pos + count + 4 * (1 + types.len()) + values.len() * real;
        w.int(next as i64, pos);
        w.int((values.len() / width) as i64, count);
        w.int(types.len() as i64, 4);
        for &t in types {
            w.int(i64::from(t), 4);
        }
        for &v in values {
            w.real(v, real);
        }
    }
    w.int(54, 4);
    w.int(0, pos);
    w.bytes
}

#[test]
fn a_literal_version_1_file_reads_and_writes_byte_for_byte() {
    // Version 1, dimension 3, SolAtTetrahedra (66, next keyword at byte 44): 1 line,
    // 1 type, scalar (1), the f32 2.0; End (54) with position 0.
    #[rustfmt::skip]
    let bytes: Vec<u8> = vec![
        1, 0, 0, 0,  1, 0, 0, 0,  3, 0, 0, 0,  20, 0, 0, 0,  3, 0, 0, 0,
        66, 0, 0, 0,  44, 0, 0, 0,  1, 0, 0, 0,  1, 0, 0, 0,  1, 0, 0, 0,  0, 0, 0, 0x40,
        54, 0, 0, 0,  0, 0, 0, 0,
    ];
    let s = decode(&bytes, Format::Binary).unwrap();
    let expected = Solutions {
        dimension: 3,
        blocks: vec![SolutionBlock {
            support: Support::Elements(ElementKind::Tetrahedra),
            types: vec![SolType::Scalar],
            values: vec![2.0],
        }],
    };
    assert_eq!(s, expected);
    assert_eq!(encode(&s, Format::Binary, Version::V1), bytes);
    assert_eq!(
        bytes,
        hand_binary(Version::V1, false, 3, &[(66, &[1], &[2.0])])
    );
}

#[test]
fn hand_written_binary_files_of_every_type_match_in_2d_and_3d() {
    for dim in [2u8, 3] {
        let d = usize::from(dim);
        let width = 1 + d + d * (d + 1) / 2 + d * d;
        let values: Vec<f64> = (0..2 * width).map(|i| i as f64 * 0.5 - 3.0).collect();
        let scalars = [4.0, -1.0, 0.25];
        for version in Version::ALL {
            let blocks: [(i32, &[i32], &[f64]); 3] = [
                (62, &[1, 2, 3, 4], &values),
                (64, &[1], &scalars),
                (26, &[2], &values[..2 * d]),
            ];
            let expected = Solutions {
                dimension: dim,
                blocks: vec![
                    SolutionBlock {
                        support: Support::Vertices,
                        types: SolType::ALL.to_vec(),
                        values: values.clone(),
                    },
                    SolutionBlock {
                        support: Support::Elements(ElementKind::Triangles),
                        types: vec![SolType::Scalar],
                        values: scalars.to_vec(),
                    },
                    SolutionBlock {
                        support: Support::Elements(ElementKind::Pyramids),
                        types: vec![SolType::Vector],
                        values: values[..2 * d].to_vec(),
                    },
                ],
            };
            let what = format!("dimension {dim}, version {version}");
            let le = hand_binary(version, false, dim, &blocks);
            assert_eq!(encode(&expected, Format::Binary, version), le, "{what}");
            for big in [false, true] {
                let bytes = hand_binary(version, big, dim, &blocks);
                assert_eq!(decode(&bytes, Format::Binary).unwrap(), expected, "{what}");
            }
            assert_eq!(expected.blocks[0].count(dim), 2);
        }
    }
}

#[test]
fn hand_written_ascii_files_read_and_write_as_libmeshb_lays_them_out() {
    let text = "MeshVersionFormatted 2\n\nDimension 2\n\nSolAtVertices\n2\n4 1 2 3 4\n\
                1 2 3 4 5 6 7 8 9 10\n-1 -2 -3 -4 -5 -6 -7 -8 -9 0.5\n\nSolAtEdges\n1\n1 3\n\
                1.5 2.5 3.5\n\nEnd\n";
    let s = decode(text.as_bytes(), Format::Ascii).unwrap();
    assert_eq!(s.dimension, 2);
    assert_eq!(s.blocks.len(), 2);
    assert_eq!(s.blocks[0].types, SolType::ALL);
    assert_eq!(s.blocks[0].count(2), 2);
    assert_eq!(s.blocks[0].values[9], 10.0);
    assert_eq!(s.blocks[0].values[19], 0.5);
    assert_eq!(s.blocks[1].support, Support::Elements(ElementKind::Edges));
    assert_eq!(s.blocks[1].types, [SolType::SymMatrix]);
    assert_eq!(s.blocks[1].values, [1.5, 2.5, 3.5]);
    assert_eq!(encode(&s, Format::Ascii, Version::V2), text.as_bytes());

    // libMeshb's other keywords, comments and line breaks anywhere are accepted.
    let other = "# from a solver\nMeshVersionFormatted\n1\nDimension\n3\nTime\n0.5\n\
                 Iterations 10\nSolAtTetrahedra 2 1\n2 # a vector\n1 2 3\n4 5 6\nEnd\n";
    let file =
        meshio::read_solution_bytes(other.as_bytes(), Format::Ascii, Path::new("o.sol")).unwrap();
    assert_eq!(file.skipped_keywords, ["Time", "Iterations"]);
    assert_eq!(file.version, Version::V1);
    assert_eq!(
        file.solutions.blocks[0].values,
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
}

#[test]
fn skipped_keywords_in_binary_files_are_listed() {
    // Time (78) holds one real in libMeshb; give it 8 bytes of data and chain past it.
    let mut bytes = hand_binary(Version::V2, false, 3, &[(62, &[1], &[1.0, 2.0])]);
    let end = bytes.len() - 8;
    bytes.truncate(end);
    let time_at = bytes.len();
    bytes.extend(78i32.to_le_bytes());
    bytes.extend(((time_at + 16) as i32).to_le_bytes());
    bytes.extend(0.5f64.to_le_bytes());
    bytes.extend(54i32.to_le_bytes());
    bytes.extend(0i32.to_le_bytes());
    // The SolAtVertices next position pointed at End; End now follows Time.
    let file = meshio::read_solution_bytes(&bytes, Format::Binary, Path::new("t.solb")).unwrap();
    assert_eq!(file.skipped_keywords, ["Time"]);
    assert_eq!(file.solutions.blocks[0].values, [1.0, 2.0]);
}

fn assert_located(e: &SolutionError, file: &str) {
    let message = e.to_string();
    assert!(message.starts_with(&format!("{file}: ")), "{message}");
    assert!(
        message.contains(": byte ") || message.contains(": line "),
        "{message}"
    );
    assert!(e.location().is_some(), "{message}");
}

#[test]
fn every_truncation_is_a_located_error_without_large_allocations() {
    for version in Version::ALL {
        let s = every_kind(3, version);
        let binary = encode(&s, Format::Binary, version);
        // Every prefix short of the End keyword's code.
        for len in 0..binary.len() - 4 - version.position_bytes() {
            let (result, peak) = peak_allocation(|| decode(&binary[..len], Format::Binary));
            let e = result.expect_err("a truncated file is an error");
            assert_located(&e, "t.solb");
            assert!(peak <= 4 * binary.len() + 4096, "{len}: {peak}");
        }
        let ascii = encode(&s, Format::Ascii, version);
        let text = String::from_utf8(ascii).unwrap();
        // Cut before each value of the last block: the count promises more.
        let last = text.rfind("SolAtPyramids").unwrap();
        for (i, _) in text[last..].char_indices().filter(|&(_, c)| c == ' ') {
            let cut = &text[..last + i];
            let (result, peak) = peak_allocation(|| decode(cut.as_bytes(), Format::Ascii));
            let e = result.expect_err("a truncated file is an error");
            assert_located(&e, "t.sol");
            assert!(peak <= 4 * text.len() + 4096, "{peak}");
        }
    }
}

#[test]
fn corrupt_headers_are_located_errors() {
    let good = hand_binary(
        Version::V2,
        false,
        3,
        &[(62, &[1, 2], &[1.0, 2.0, 3.0, 4.0])],
    );
    // Layout: header 20 bytes; SolAtVertices code 20, next 24, count 28, type count 32, types 36.
    let patch = |at: usize, v: i32| {
        let mut b = good.clone();
        b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        b
    };
    let cases: [(Vec<u8>, &str); 7] = [
        (
            patch(28, i32::MAX),
            "byte 28: SolAtVertices count 2147483647 needs",
        ),
        (patch(28, -1), "byte 28: SolAtVertices count -1 is negative"),
        (
            patch(32, 0),
            "byte 32: SolAtVertices announces 0 solution types",
        ),
        (
            patch(32, i32::MAX),
            "byte 32: SolAtVertices announces 2147483647 solution types",
        ),
        (
            patch(32, -5),
            "byte 32: SolAtVertices announces -5 solution types",
        ),
        (patch(40, 5), "byte 40: SolAtVertices type 2 is 5"),
        (patch(0, 2), "byte 0: endianness code 2"),
    ];
    for (bytes, expected) in cases {
        let (result, peak) = peak_allocation(|| decode(&bytes, Format::Binary));
        let e = result.unwrap_err();
        assert!(e.to_string().contains(expected), "{e} / {expected}");
        assert_located(&e, "t.solb");
        assert!(peak < 4096, "{peak}");
    }
    let mut twice = good.clone();
    twice.truncate(good.len() - 8);
    let second = twice.len();
    twice.extend_from_slice(&good[20..good.len() - 8]);
    twice[24..28].copy_from_slice(&(second as i32).to_le_bytes());
    let next = twice.len() as i32;
    twice[second + 4..second + 8].copy_from_slice(&next.to_le_bytes());
    twice.extend(54i32.to_le_bytes());
    twice.extend(0i32.to_le_bytes());
    let e = decode(&twice, Format::Binary).unwrap_err();
    assert!(e.to_string().contains("second SolAtVertices"), "{e}");

    let ascii = [
        (
            "MeshVersionFormatted 2 Dimension 3 SolAtVertices 99999999 1 1 1 End",
            "line 1: SolAtVertices count 99999999 needs",
        ),
        (
            "MeshVersionFormatted 2\nDimension 3\nSolAtVertices\n1\n0\n",
            "line 5: SolAtVertices announces 0 solution types",
        ),
        (
            "MeshVersionFormatted 2\nDimension 3\nSolAtVertices\n1\n1 7\n1\n",
            "line 5: SolAtVertices type 1 is 7",
        ),
        (
            "MeshVersionFormatted 2\nDimension 3\nSolAtVertices\n1\n1 1\nx\n",
            "line 6: expected a real number for SolAtVertices 1",
        ),
        (
            "MeshVersionFormatted 2\nDimension 3\nSolAtVertices\n-2\n",
            "line 4: SolAtVertices count -2 is negative",
        ),
        (
            "MeshVersionFormatted 2\nDimension 3\nSolAtVertices\n1 1 1\n1 2\n",
            "line 5: unexpected '2'",
        ),
        (
            "MeshVersionFormatted 2\nDimension 4\n",
            "line 2: dimension 4 is not 2 or 3",
        ),
    ];
    for (text, expected) in ascii {
        let (result, peak) = peak_allocation(|| decode(text.as_bytes(), Format::Ascii));
        let e = result.unwrap_err();
        assert!(e.to_string().contains(expected), "{e} / {expected}");
        assert_located(&e, "t.sol");
        assert!(peak < 4096, "{peak}");
    }
}

#[test]
fn unwritable_solutions_are_refused() {
    let mut s = every_kind(3, Version::V2);
    s.blocks[4].values.pop();
    let e = meshio::solution_to_bytes(&s, Format::Binary, Version::V2).unwrap_err();
    assert!(
        e.to_string().contains("not a multiple of its line width"),
        "{e}"
    );
    let mut s = every_kind(2, Version::V2);
    s.blocks[1].support = Support::Vertices;
    let e = meshio::solution_to_bytes(&s, Format::Ascii, Version::V2).unwrap_err();
    assert!(e.to_string().contains("two SolAtVertices"), "{e}");
    let mut s = every_kind(2, Version::V2);
    s.blocks[0].types.clear();
    s.blocks[0].values.clear();
    assert!(meshio::solution_to_bytes(&s, Format::Ascii, Version::V2).is_err());
    s.dimension = 4;
    assert!(meshio::solution_to_bytes(&s, Format::Ascii, Version::V2).is_err());
    let e = meshio::write_solution(
        Path::new("x.mesh"),
        &every_kind(3, Version::V2),
        Version::V2,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("expected .sol (ASCII) or .solb"),
        "{e}"
    );
}

#[test]
fn files_are_written_atomically_and_read_back() {
    let dir = temp_dir("solution", "files");
    for version in Version::ALL {
        let s = every_kind(3, version);
        for file in ["a.sol", "b.SOLB"] {
            let path = dir.join(file);
            meshio::write_solution(&path, &s, version).unwrap();
            let back = meshio::read_solution(&path).unwrap();
            assert_eq!(back.solutions, s);
            assert_eq!(back.version, version);
        }
    }
    let e = meshio::read_solution(&dir.join("missing.solb")).unwrap_err();
    assert!(e.to_string().contains("missing.solb"), "{e}");
}

#[test]
fn cli_info_and_convert_handle_solution_files() {
    let dir = temp_dir("solution", "cli");
    let sol = dir.join("u.sol");
    let solb = dir.join("u.solb");
    let back = dir.join("back.sol");
    let s = every_kind(3, Version::V2);
    meshio::write_solution(&sol, &s, Version::V2).unwrap();
    let original = std::fs::read(&sol).unwrap();

    let (sol_s, solb_s, back_s) = (
        sol.to_str().unwrap(),
        solb.to_str().unwrap(),
        back.to_str().unwrap(),
    );
    let out = snowsim(&["mesh", "info", sol_s]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info = text(&out.stdout);
    assert!(
        info.contains("format:     sol (ASCII), version 2, dimension 3"),
        "{info}"
    );
    assert!(info.contains("SolAtVertices"), "{info}");
    assert!(
        info.contains("types: scalar, vector, sym_matrix, matrix (19 reals per line)"),
        "{info}"
    );

    let out = snowsim(&["mesh", "convert", sol_s, solb_s, "--version", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = snowsim(&["mesh", "info", solb_s, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["format"], "solb");
    assert_eq!(json["version"], 3);
    assert_eq!(json["dimension"], 3);
    let blocks = json["solutions"].as_array().unwrap();
    assert_eq!(blocks.len(), 8);
    assert_eq!(blocks[7]["keyword"], "SolAtPyramids");
    assert_eq!(blocks[7]["count"], 8);
    assert_eq!(blocks[1]["types"], serde_json::json!(["vector"]));

    let out = snowsim(&["mesh", "convert", solb_s, back_s, "--version", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&back).unwrap(), original);

    // Names from ReferenceStrings are shown with their block, not listed as skipped.
    let named = dir.join("named.solb");
    let names = [
        ReferenceString::new(62, 1, "pressure"),
        ReferenceString::new(64, 1, "wind"),
    ];
    meshio::write_named_solution(&named, &s, &names, Version::V3).unwrap();
    let out = snowsim(&["mesh", "info", named.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let blocks = json["solutions"].as_array().unwrap();
    let of = |keyword: &str| {
        blocks
            .iter()
            .find(|b| b["keyword"] == keyword)
            .map(|b| b["names"].clone())
            .unwrap()
    };
    assert_eq!(
        of("SolAtVertices"),
        serde_json::json!(["1 pressure"]),
        "{json}"
    );
    assert_eq!(
        of("SolAtTriangles"),
        serde_json::json!(["1 wind"]),
        "{json}"
    );
    assert_eq!(of("SolAtEdges"), serde_json::json!([]), "{json}");
    assert_eq!(json["skipped_keywords"], serde_json::json!([]), "{json}");
    let out = snowsim(&["mesh", "info", named.to_str().unwrap()]);
    assert!(
        text(&out.stdout).contains("names: 1 pressure"),
        "{}",
        text(&out.stdout)
    );

    let out = snowsim(&[
        "mesh",
        "convert",
        sol_s,
        dir.join("u.meshb").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains(".solb"), "{}", text(&out.stderr));
    std::fs::write(dir.join("bad.solb"), [1, 0, 0, 0, 9, 0, 0, 0]).unwrap();
    let out = snowsim(&["mesh", "info", dir.join("bad.solb").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.solb: byte 4: unknown mesh version 9"),
        "{err}"
    );
}

/// `hand_binary` with a `ReferenceStrings` keyword (code 199) before End, laid out from
/// libMeshb's format `iic`: two integers of the version's int size, then 64 words of 4 bytes
/// of text, zero-padded.
fn hand_binary_named(
    version: Version,
    big: bool,
    blocks: &[(i32, &[i32], &[f64])],
    names: &[(i64, i64, &str)],
) -> Vec<u8> {
    let mut bytes = hand_binary(version, big, 3, blocks);
    let pos = version.position_bytes();
    let int = version.int_bytes();
    bytes.truncate(bytes.len() - 4 - pos);
    let mut w = Words { bytes, big };
    w.int(199, 4);
    let next = w.bytes.len() + pos + version.count_bytes() + names.len() * (2 * int + 256);
    w.int(next as i64, pos);
    w.int(names.len() as i64, version.count_bytes());
    for &(keyword, index, text) in names {
        w.int(keyword, int);
        w.int(index, int);
        let mut field = [0u8; 256];
        field[..text.len()].copy_from_slice(text.as_bytes());
        w.bytes.extend_from_slice(&field);
    }
    w.int(54, 4);
    w.int(0, pos);
    w.bytes
}

#[test]
fn reference_strings_match_hand_written_files_in_every_version() {
    let values = [1.0, 0.5, -2.0, 4.0, 0.25, 8.0, 3.0, -1.0, 0.125, 2.0];
    let blocks: [(i32, &[i32], &[f64]); 1] = [(62, &[1, 2, 1], &values)];
    let names = [
        (62, 1, "first scalar"),
        (62, 2, "a vector"),
        (62, 3, "second scalar"),
    ];
    let solutions = Solutions {
        dimension: 3,
        blocks: vec![SolutionBlock {
            support: Support::Vertices,
            types: vec![SolType::Scalar, SolType::Vector, SolType::Scalar],
            values: values.to_vec(),
        }],
    };
    let refs: Vec<ReferenceString> = names
        .iter()
        .map(|&(k, i, t)| ReferenceString::new(k as i32, i, t))
        .collect();
    for version in Version::ALL {
        let little = hand_binary_named(version, false, &blocks, &names);
        let ours =
            meshio::named_solution_to_bytes(&solutions, &refs, Format::Binary, version).unwrap();
        assert!(ours == little, "version {}", version.number());
        for big in [false, true] {
            let hand = hand_binary_named(version, big, &blocks, &names);
            let path = Path::new("n.solb");
            let file = meshio::read_solution_bytes(&hand, Format::Binary, path).unwrap();
            assert_eq!(file.solutions, solutions);
            assert_eq!(file.skipped_keywords, ["ReferenceStrings"]);
            let got = meshio::read_reference_strings(&hand, Format::Binary, path).unwrap();
            assert_eq!(got, refs, "version {} big {big}", version.number());
        }
    }
    // Text as libMeshb lays it out: keyword, count, then `code index text` lines; the names
    // may come before the solutions, the count on the keyword's line.
    let text = "MeshVersionFormatted 2\n\nDimension 3\n\n# names\nReferenceStrings 3\n\
                62 1 first scalar\n62   2\ta vector  \n62 3 second scalar\n\nSolAtVertices\n2\n\
                3 1 2 1\n1 0.5 -2 4 0.25\n8 3 -1 0.125 2\n\nEnd\n";
    let path = Path::new("n.sol");
    let got = meshio::read_reference_strings(text.as_bytes(), Format::Ascii, path).unwrap();
    assert_eq!(got, refs);
    let file = meshio::read_solution_bytes(text.as_bytes(), Format::Ascii, path).unwrap();
    assert_eq!(file.solutions, solutions);
    // Ours: after the solutions, before End.
    let ours =
        meshio::named_solution_to_bytes(&solutions, &refs, Format::Ascii, Version::V2).unwrap();
    let ours = String::from_utf8(ours).unwrap();
    assert!(
        ours.ends_with(
            "\nReferenceStrings\n3\n62 1 first scalar\n62 2 a vector\n62 3 second scalar\n\nEnd\n"
        ),
        "{ours}"
    );
    // Files without names have none.
    let plain = meshio::solution_to_bytes(&solutions, Format::Binary, Version::V2).unwrap();
    assert!(
        meshio::read_reference_strings(&plain, Format::Binary, path)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn damaged_reference_strings_are_located_errors() {
    let values = [1.0, 2.0];
    let blocks: [(i32, &[i32], &[f64]); 1] = [(62, &[1], &values)];
    let names = [(62, 1, "T"), (62, 1, "U")];
    for version in Version::ALL {
        let hand = hand_binary_named(version, false, &blocks, &names);
        let end = hand.len() - 4 - version.position_bytes();
        // Every cut inside the ReferenceStrings keyword.
        let start = end
            - 4
            - version.position_bytes()
            - version.count_bytes()
            - 2 * (2 * version.int_bytes() + 256);
        for len in start..end {
            let (result, peak) = peak_allocation(|| {
                meshio::read_reference_strings(&hand[..len], Format::Binary, Path::new("t.solb"))
            });
            let e = result.expect_err("a truncated file is an error");
            assert_located(&e, "t.solb");
            assert!(peak <= 4 * hand.len() + 4096, "{len}: {peak}");
        }
        // A text that is not UTF-8.
        let mut bad = hand.clone();
        let text_at = end - 256;
        bad[text_at] = 0xff;
        let e =
            meshio::read_reference_strings(&bad, Format::Binary, Path::new("t.solb")).unwrap_err();
        assert_located(&e, "t.solb");
        assert!(e.to_string().contains("UTF-8"), "{e}");
    }
    // Text: a count the file cannot hold, a missing index.
    let text = "MeshVersionFormatted 2\nDimension 3\nReferenceStrings\n99999999\n62 1 a\nEnd\n";
    let e = meshio::read_reference_strings(text.as_bytes(), Format::Ascii, Path::new("t.sol"))
        .unwrap_err();
    assert_located(&e, "t.sol");
    let text = "MeshVersionFormatted 2\nDimension 3\nReferenceStrings\n1\n62\n";
    let e = meshio::read_reference_strings(text.as_bytes(), Format::Ascii, Path::new("t.sol"))
        .unwrap_err();
    assert_located(&e, "t.sol");
    assert!(e.to_string().contains("end of the file"), "{e}");
    // Writing: a name a file cannot give back is refused, naming the file.
    let s = Solutions {
        dimension: 3,
        blocks: vec![SolutionBlock {
            support: Support::Vertices,
            types: vec![SolType::Scalar],
            values: vec![1.0],
        }],
    };
    let dir = temp_dir("host", "reference_strings_refused");
    let path = dir.join("x.solb");
    let e = meshio::write_named_solution(
        &path,
        &s,
        &[ReferenceString::new(62, 1, "two\nlines")],
        Version::V2,
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(&format!("{}: ", path.display())),
        "{e}"
    );
    assert!(!path.exists());
    std::fs::remove_dir_all(dir).ok();
}
