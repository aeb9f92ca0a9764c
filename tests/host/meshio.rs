//! meshio: round trips in every format and version, byte layouts checked against the format
//! facts (gmlib-internals.md section 9), big-endian files, skipped keywords, and ASCII files as
//! other tools write them.

use std::path::{Path, PathBuf};

use snowsim::meshio::{self, ElementKind, Format, Mesh, MeshFile, Version};

const FORMATS: [Format; 2] = [Format::Ascii, Format::Binary];

/// Values that stress text and f32 conversions.
const COORDS: [f64; 12] = [
    0.0,
    1.0,
    -0.0,
    0.1,
    -2.5e-7,
    1e30,
    123456.789,
    1.0 / 3.0,
    -7.25,
    6.1232339957368E-17,
    -1e-310,
    1_099_511_627_776.0,
];
const REFS: [i32; 7] = [0, 1, -1, i32::MAX, i32::MIN, 7, 42];

/// A mesh with every element kind, awkward coordinates and extreme references.
fn every_kind(dimension: u8) -> Mesh {
    let mut m = Mesh::new(dimension);
    let nv = 13;
    for i in 0..nv {
        let c = |d: usize| COORDS[(3 * i + d) % COORDS.len()];
        let z = if dimension == 3 { c(2) } else { 0.0 };
        m.push_vertex([c(0), c(1), z], REFS[i % REFS.len()]);
    }
    for (k, kind) in ElementKind::ALL.into_iter().enumerate() {
        for e in 0..3 {
            let nodes: Vec<u32> = (0..kind.nodes())
                .map(|j| ((e * 5 + j * 3 + k) % nv) as u32)
                .collect();
            m.elements_mut(kind)
                .push(&nodes, REFS[(e + k) % REFS.len()]);
        }
    }
    // The last vertex is used.
    m.elements_mut(ElementKind::Edges).push(&[0, 12], 3);
    m
}

/// The mesh with coordinates rounded to f32, as a version 1 file stores them.
fn rounded(m: &Mesh) -> Mesh {
    let mut r = m.clone();
    for p in &mut r.vertices {
        *p = p.map(|c| f64::from(c as f32));
    }
    r
}

fn name(format: Format) -> &'static Path {
    match format {
        Format::Ascii => Path::new("test.mesh"),
        Format::Binary => Path::new("test.meshb"),
    }
}

fn encode(m: &Mesh, format: Format, version: Version) -> Vec<u8> {
    meshio::to_bytes(m, format, version).unwrap_or_else(|e| panic!("{format:?} v{version}: {e}"))
}

fn decode(bytes: &[u8], format: Format) -> MeshFile {
    meshio::read_bytes(bytes, format, name(format)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_format_version_and_dimension_round_trips() {
    for dimension in [2, 3] {
        let m = every_kind(dimension);
        for format in FORMATS {
            for version in Version::ALL {
                let file = decode(&encode(&m, format, version), format);
                let what = format!("{format:?} v{version} dim {dimension}");
                assert_eq!(file.format, format, "{what}");
                assert_eq!(file.version, version, "{what}");
                assert!(!file.big_endian, "{what}");
                assert!(file.skipped_keywords.is_empty(), "{what}");
                if version == Version::V1 {
                    assert_eq!(rounded(&file.mesh), rounded(&m), "{what}");
                } else {
                    assert_eq!(file.mesh, m, "{what}");
                }
                for kind in ElementKind::ALL {
                    assert_eq!(file.mesh.count(kind), m.count(kind), "{what} {kind}");
                }
            }
        }
    }
}

#[test]
fn binary_version_1_stores_f32_values_exactly() {
    let m = rounded(&every_kind(3));
    let file = decode(&encode(&m, Format::Binary, Version::V1), Format::Binary);
    assert_eq!(file.mesh, m);
}

#[test]
fn rewriting_a_read_file_gives_the_same_bytes() {
    for dimension in [2, 3] {
        let m = every_kind(dimension);
        for format in FORMATS {
            for version in Version::ALL {
                let first = encode(&m, format, version);
                let again = encode(&decode(&first, format).mesh, format, version);
                assert!(
                    first == again,
                    "{format:?} v{version} dim {dimension} differs after a round trip"
                );
            }
        }
    }
}

#[test]
fn files_round_trip_through_the_file_system() {
    let dir = std::env::temp_dir().join(format!("snowsim-meshio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let m = every_kind(3);
    for (file, format) in [("a.meshb", Format::Binary), ("b.MESH", Format::Ascii)] {
        let path = dir.join(file);
        meshio::write(&path, &m, Version::V3).unwrap();
        let read = meshio::read(&path).unwrap();
        assert_eq!(read.format, format);
        assert_eq!(read.mesh, m);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            encode(&m, format, Version::V3)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Byte layout, from the format description rather than from the writer.

fn tet() -> Mesh {
    let mut m = Mesh::new(3);
    for p in [
        [0.5, 0.0, 0.0],
        [1.0, -0.25, 0.0],
        [0.0, 1.0, 0.1],
        [0.0, 0.0, 1.0],
    ] {
        m.push_vertex(p, 0);
    }
    m.vertex_refs[3] = 7;
    m.elements_mut(ElementKind::Tetrahedra)
        .push(&[0, 1, 2, 3], 9);
    m
}

fn le32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn le64(b: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn version_1_header_is_as_in_gmlib_samples() {
    let b = encode(&tet(), Format::Binary, Version::V1);
    assert_eq!(
        b[..24],
        [
            1, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 20, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0
        ]
    );
    // f32 coordinates, then the int32 reference: 16-byte vertex lines.
    let first_vertex = 20 + 12;
    assert_eq!(b[first_vertex..first_vertex + 4], 0.5f32.to_le_bytes());
    assert_eq!(le32(&b, first_vertex + 3 * 16 + 12), 7);
}

#[test]
fn version_2_has_28_byte_vertices_20_byte_tets_and_ends_with_end() {
    let b = encode(&tet(), Format::Binary, Version::V2);
    assert_eq!(le32(&b, 20), 4); // Vertices
    let tets_at = 20 + 12 + 4 * 28;
    assert_eq!(le32(&b, 24), tets_at as i32); // next keyword
    assert_eq!(le32(&b, 28), 4); // count
    assert_eq!(b[32..40], 0.5f64.to_le_bytes());
    assert_eq!(b[40..48], 0.0f64.to_le_bytes());
    assert_eq!(le32(&b, 32 + 3 * 28 + 24), 7);
    assert_eq!(le32(&b, tets_at), 8); // Tetrahedra
    let end_at = tets_at + 12 + 20;
    assert_eq!(le32(&b, tets_at + 4), end_at as i32);
    assert_eq!(le32(&b, tets_at + 8), 1);
    let nodes: Vec<i32> = (0..5).map(|i| le32(&b, tets_at + 12 + 4 * i)).collect();
    assert_eq!(nodes, [1, 2, 3, 4, 9]);
    assert_eq!(b[end_at..], [0x36, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn version_3_has_64_bit_positions_and_32_bit_counts() {
    let b = encode(&tet(), Format::Binary, Version::V3);
    assert_eq!(le32(&b, 0), 1);
    assert_eq!(le32(&b, 4), 3);
    assert_eq!(le64(&b, 12), 24);
    assert_eq!(le32(&b, 24), 4);
    let tets_at = 24 + 16 + 4 * 28;
    assert_eq!(le64(&b, 28), tets_at as i64);
    assert_eq!(le32(&b, 36), 4);
    assert_eq!(le32(&b, tets_at), 8);
    let end_at = tets_at + 16 + 20;
    assert_eq!(le64(&b, tets_at + 4), end_at as i64);
    assert_eq!(b[end_at..], [54, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn version_4_has_64_bit_everything_but_codes_and_dimension() {
    let b = encode(&tet(), Format::Binary, Version::V4);
    assert_eq!(
        b[..24],
        [
            1, 0, 0, 0, 4, 0, 0, 0, 3, 0, 0, 0, 0x18, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0
        ]
    );
    let tets_at = 24 + 20 + 4 * 32;
    assert_eq!(le64(&b, 28), tets_at as i64);
    assert_eq!(le64(&b, 36), 4);
    assert_eq!(le64(&b, 44 + 3 * 32 + 24), 7);
    let end_at = tets_at + 20 + 40;
    assert_eq!(le64(&b, tets_at + 4), end_at as i64);
    assert_eq!(le64(&b, tets_at + 12), 1);
    let nodes: Vec<i64> = (0..5).map(|i| le64(&b, tets_at + 20 + 8 * i)).collect();
    assert_eq!(nodes, [1, 2, 3, 4, 9]);
    assert_eq!(b[end_at..], [54, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn dimension_2_writes_two_coordinates() {
    let mut m = Mesh::new(2);
    m.push_vertex([1.5, 2.5, 0.0], 3);
    m.push_vertex([0.0, 1.0, 0.0], 0);
    m.elements_mut(ElementKind::Edges).push(&[0, 1], 1);
    let b = encode(&m, Format::Binary, Version::V2);
    assert_eq!(le32(&b, 16), 2);
    let edges_at = 20 + 12 + 2 * 20;
    assert_eq!(le32(&b, 24), edges_at as i32);
    assert_eq!(le32(&b, 32 + 16), 3);
    assert_eq!(le32(&b, edges_at), 5);
    let text = String::from_utf8(encode(&m, Format::Ascii, Version::V2)).unwrap();
    assert!(text.contains("\nVertices\n2\n1.5 2.5 3\n0 1 0\n"), "{text}");

    // z is not stored in dimension 2.
    m.vertices[0][2] = 9.0;
    let back = decode(&encode(&m, Format::Binary, Version::V2), Format::Binary);
    assert_eq!(back.mesh.vertices[0], [1.5, 2.5, 0.0]);
}

#[test]
fn ascii_layout_is_libmeshb_like() {
    let text = String::from_utf8(encode(&tet(), Format::Ascii, Version::V2)).unwrap();
    let want = "MeshVersionFormatted 2\n\nDimension 3\n\nVertices\n4\n0.5 0 0 0\n1 -0.25 0 0\n\
                0 1 0.1 0\n0 0 1 7\n\nTetrahedra\n1\n1 2 3 4 9\n\nEnd\n";
    assert_eq!(text, want);
    // Version 1 prints the f32 value's shortest form, which is not 0.1's f64 form.
    let v1 = String::from_utf8(encode(&tet(), Format::Ascii, Version::V1)).unwrap();
    assert!(v1.contains("\n0 1 0.1 0\n"), "{v1}");
    assert!(v1.starts_with("MeshVersionFormatted 1\n"));
}

#[test]
fn empty_mesh_is_header_and_end() {
    let b = encode(&Mesh::new(3), Format::Binary, Version::V2);
    assert_eq!(b.len(), 28);
    assert_eq!(le32(&b, 12), 20);
    let file = decode(&b, Format::Binary);
    assert_eq!(file.mesh, Mesh::new(3));
    let text = encode(&Mesh::new(2), Format::Ascii, Version::V4);
    assert_eq!(text, b"MeshVersionFormatted 4\n\nDimension 2\n\nEnd\n");
    assert_eq!(decode(&text, Format::Ascii).mesh, Mesh::new(2));
}

// ---------------------------------------------------------------------------------------------
// A tiny independent walker of little-endian files, for swapping and splicing.

/// (position, count, int, real) sizes of a version number.
fn sizes(version: Version) -> (usize, usize, usize, usize) {
    match version.number() {
        1 => (4, 4, 4, 4),
        2 => (4, 4, 4, 8),
        3 => (8, 4, 4, 8),
        _ => (8, 8, 8, 8),
    }
}

fn nodes_of(code: i32) -> usize {
    match code {
        5 => 2,
        6 => 3,
        7 | 8 => 4,
        9 => 6,
        10 => 8,
        49 => 5,
        other => panic!("no element code {other}"),
    }
}

/// Reverses the bytes of every word of a little-endian file written by meshio.
fn byte_swapped(le: &[u8], version: Version, dim: usize) -> Vec<u8> {
    let (p, c, i, r) = sizes(version);
    let mut out = le.to_vec();
    let mut at = 0;
    let mut swap = |at: &mut usize, n: usize| {
        out[*at..*at + n].reverse();
        *at += n;
    };
    for n in [4, 4, 4, p, 4] {
        swap(&mut at, n);
    }
    loop {
        let code = le32(le, at);
        swap(&mut at, 4);
        swap(&mut at, p);
        if code == 54 {
            break;
        }
        let count = if c == 4 {
            le32(le, at) as usize
        } else {
            le64(le, at) as usize
        };
        swap(&mut at, c);
        let words: Vec<usize> = if code == 4 {
            let mut w = vec![r; dim];
            w.push(i);
            w
        } else {
            vec![i; nodes_of(code) + 1]
        };
        for _ in 0..count {
            for &w in &words {
                swap(&mut at, w);
            }
        }
    }
    assert_eq!(at, le.len());
    out
}

#[test]
fn big_endian_files_read_to_the_same_mesh() {
    for dimension in [2u8, 3] {
        let m = every_kind(dimension);
        for version in Version::ALL {
            let le = encode(&m, Format::Binary, version);
            let be = byte_swapped(&le, version, usize::from(dimension));
            assert_eq!(be[..4], [0, 0, 0, 1]);
            let file = decode(&be, Format::Binary);
            assert!(file.big_endian);
            assert_eq!(file.version, version);
            assert_eq!(file.mesh, decode(&le, Format::Binary).mesh, "v{version}");
            // Written back little-endian.
            assert_eq!(encode(&file.mesh, Format::Binary, version), le);
        }
    }
}

/// Offsets of every position field (header and keywords) of a little-endian file.
fn position_fields(le: &[u8], version: Version) -> Vec<(usize, i32)> {
    let (p, ..) = sizes(version);
    let read = |at: usize| {
        if p == 4 {
            le32(le, at) as usize
        } else {
            le64(le, at) as usize
        }
    };
    let mut fields = vec![(12, 3)];
    let mut at = read(12);
    while at != 0 {
        let code = le32(le, at);
        fields.push((at + 4, code));
        if code == 54 {
            break;
        }
        at = read(at + 4);
    }
    fields
}

/// Inserts a keyword block (code, then a position, then `payload`) before the keyword `before`
/// and fixes every position of the file.
fn splice(le: &[u8], version: Version, before: i32, code: i32, payload: &[u8]) -> Vec<u8> {
    let (p, ..) = sizes(version);
    let fields = position_fields(le, version);
    let x = fields
        .iter()
        .find(|&&(_, c)| c == before)
        .map(|&(pos, _)| pos - 4)
        .expect("keyword to insert before");
    let len = 4 + p + payload.len();
    let put = |out: &mut Vec<u8>, at: usize, v: usize| {
        if p == 4 {
            out[at..at + 4].copy_from_slice(&(v as i32).to_le_bytes());
        } else {
            out[at..at + 8].copy_from_slice(&(v as i64).to_le_bytes());
        }
    };
    let mut out = le[..x].to_vec();
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&vec![0; p]);
    out.extend_from_slice(payload);
    out.extend_from_slice(&le[x..]);
    put(&mut out, x + 4, x + len);
    for (field, _) in fields {
        let old = if p == 4 {
            le32(le, field) as usize
        } else {
            le64(le, field) as usize
        };
        let moved = if field >= x { field + len } else { field };
        if old > x {
            put(&mut out, moved, old + len);
        }
    }
    out
}

/// A count then `values` as the version's ints.
fn counted(version: Version, values: &[i64]) -> Vec<u8> {
    let (_, c, i, _) = sizes(version);
    let mut out = Vec::new();
    let n = values.len() as i64;
    out.extend_from_slice(&n.to_le_bytes()[..c]);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes()[..i]);
    }
    out
}

#[test]
fn unknown_binary_keywords_are_skipped_and_reported() {
    let m = every_kind(3);
    for version in Version::ALL {
        let mut b = encode(&m, Format::Binary, version);
        b = splice(&b, version, 8, 13, &counted(version, &[1, 2])); // Corners
        b = splice(&b, version, 6, 1000, &[0xAB; 13]); // unknown to libMeshb
        b = splice(&b, version, 49, 200, &counted(version, &[])); // Prisms9 in libMeshb 8
        b = splice(&b, version, 4, 15, &counted(version, &[3])); // RequiredVertices, first
        b = splice(&b, version, 10, 13, &counted(version, &[4])); // Corners again
        let file = decode(&b, Format::Binary);
        assert_eq!(
            file.mesh,
            decode(&encode(&m, Format::Binary, version), Format::Binary).mesh
        );
        assert_eq!(
            file.skipped_keywords,
            ["RequiredVertices", "code 1000", "Corners", "Prisms9"],
            "v{version}"
        );
    }
}

#[test]
fn floating_point_precision_overrides_the_version_real_size() {
    let m = every_kind(3);
    // A version 2 file relabelled version 1 reads correctly only if the 64-bit override is
    // applied, even though the keyword comes after Vertices in the chain.
    let v2 = encode(&m, Format::Binary, Version::V2);
    let mut b = splice(&v2, Version::V2, 9, 155, &64i32.to_le_bytes());
    b[4] = 1;
    let file = decode(&b, Format::Binary);
    assert_eq!(file.version, Version::V1);
    assert_eq!(file.mesh, m);
    assert!(file.skipped_keywords.is_empty());

    // And the other way: f32 reals in a version 4 file, built by hand.
    let mut b = Vec::new();
    for w in [1i32, 4, 3] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    b.extend_from_slice(&24i64.to_le_bytes());
    b.extend_from_slice(&3i32.to_le_bytes());
    b.extend_from_slice(&155i32.to_le_bytes()); // FloatingPointPrecision at 24
    b.extend_from_slice(&44i64.to_le_bytes());
    b.extend_from_slice(&32i64.to_le_bytes());
    b.extend_from_slice(&4i32.to_le_bytes()); // Vertices at 44
    b.extend_from_slice(&104i64.to_le_bytes());
    b.extend_from_slice(&2i64.to_le_bytes());
    for (p, r) in [([0.1f32, -2.0, 3.5], 5i64), ([1e-3, 0.0, 7.0], -6)] {
        for c in p {
            b.extend_from_slice(&c.to_le_bytes());
        }
        b.extend_from_slice(&r.to_le_bytes());
    }
    assert_eq!(b.len(), 104);
    b.extend_from_slice(&54i32.to_le_bytes());
    b.extend_from_slice(&0i64.to_le_bytes());
    let file = decode(&b, Format::Binary);
    assert_eq!(file.version, Version::V4);
    let f = |x: f32| f64::from(x);
    assert_eq!(
        file.mesh.vertices,
        [[f(0.1), -2.0, 3.5], [f(1e-3), 0.0, 7.0]]
    );
    assert_eq!(file.mesh.vertex_refs, [5, -6]);
}

// ---------------------------------------------------------------------------------------------
// ASCII files as people and other tools write them.

fn ascii(text: &str) -> MeshFile {
    decode(text.as_bytes(), Format::Ascii)
}

#[test]
fn hand_written_ascii_with_comments_and_any_keyword_order() {
    let file = ascii(
        "# A hand-written file: comments, Dimension's value on the next line,\n\
         # keywords in any order and Vertices after the elements.\n\
         MeshVersionFormatted 2   # version\n\
         \n\
         Dimension\n\
         2\n\
         Triangles 2\n\
         1 2 3 10\n\
         1 3 4 11 # second triangle\n\
         Edges\n\
         1\n\
         1 2 -5\n\
         Corners 1 1\n   \
            Vertices\n\
         4\n\
         0 0 1\n\
         1.5 0 2\n\
         1.5 2.25E-1 3\n\
         0\t+2.25e-1 4\n\
         End\n\
         anything after End is not read 1 2 3\n",
    );
    let m = &file.mesh;
    assert_eq!(m.dimension, 2);
    assert_eq!(
        m.vertices,
        [
            [0.0, 0.0, 0.0],
            [1.5, 0.0, 0.0],
            [1.5, 0.225, 0.0],
            [0.0, 0.225, 0.0]
        ]
    );
    assert_eq!(m.vertex_refs, [1, 2, 3, 4]);
    let tris = m.elements(ElementKind::Triangles);
    assert_eq!(tris.node_slice(), [0, 1, 2, 0, 2, 3]);
    assert_eq!(tris.refs(), [10, 11]);
    assert_eq!(m.elements(ElementKind::Edges).node_slice(), [0, 1]);
    assert_eq!(m.elements(ElementKind::Edges).refs(), [-5]);
    assert_eq!(file.skipped_keywords, ["Corners"]);
    assert_eq!(file.version, Version::V2);
}

#[test]
fn dimension_may_come_after_vertices() {
    let file = ascii("Vertices 1 1 2 3 0 MeshVersionFormatted 3 Dimension 3");
    assert_eq!(file.mesh.vertices, [[1.0, 2.0, 3.0]]);
    assert_eq!(file.version, Version::V3);
}

#[test]
fn unknown_ascii_keywords_are_skipped_to_the_next_keyword_name() {
    let m = every_kind(3);
    let text = String::from_utf8(encode(&m, Format::Ascii, Version::V2)).unwrap();
    // Skipping runs to the next libMeshb keyword name, so a made-up keyword is seen only
    // where a keyword is expected (here after Dimension's value).
    let own = "\nMyOwnKeyword 3 1.5 some words 2\n";
    let extra = "\nCorners\n2\n1\n2\n\nRequiredVertices\n1\n3\n\n\
                 SolAtVertices\n1\n1 1\n0.5\n";
    let spliced = text
        .replacen("\nVertices\n", &format!("{own}\nVertices\n"), 1)
        .replacen("\nTetrahedra\n", &format!("{extra}\nTetrahedra\n"), 1);
    let file = ascii(&spliced);
    assert_eq!(file.mesh, m);
    assert_eq!(
        file.skipped_keywords,
        [
            "MyOwnKeyword",
            "Corners",
            "RequiredVertices",
            "SolAtVertices"
        ]
    );
    // Inside a skipped block, a made-up word is just data.
    let inside = text.replacen(
        "\nTetrahedra\n",
        "\nCorners 2 1 MyOwnKeyword 2\nTetrahedra\n",
        1,
    );
    assert_eq!(ascii(&inside).skipped_keywords, ["Corners"]);
}

#[test]
fn ascii_version_1_reals_keep_all_their_digits() {
    // TetGen writes version 1 files with 17 significant digits.
    let file = ascii(
        "MeshVersionFormatted 1\nDimension\n\n3\nVertices\n1\n0.10000000000000001 0.2 1e-300 0\nEnd\n",
    );
    assert_eq!(file.mesh.vertices, [[0.1, 0.2, 1e-300]]);
    assert_eq!(file.version, Version::V1);
    // FloatingPointPrecision is accepted (and not reported as skipped).
    let file =
        ascii("MeshVersionFormatted 1 FloatingPointPrecision 32 Dimension 2 Vertices 1 0.1 2 0");
    assert_eq!(file.mesh.vertices, [[0.1, 2.0, 0.0]]);
    assert!(file.skipped_keywords.is_empty());
}

#[test]
fn gmsh_style_leading_spaces_and_uppercase_exponents() {
    let file = ascii(
        " MeshVersionFormatted 2\n Dimension\n 3\n Vertices\n 2\n  6.1232339957368E-17      \
         -1.4997597826619E-32                         1      1\n                    0      \
         0     0      2\n Edges\n 1\n 1 2 4\n End\n",
    );
    assert_eq!(
        file.mesh.vertices,
        [[6.1232339957368E-17, -1.4997597826619E-32, 1.0], [0.0; 3]]
    );
    assert_eq!(file.mesh.elements(ElementKind::Edges).refs(), [4]);
}

/// The files in sample_meshes/: every one reads, round-trips through v2 and v4 of both formats,
/// and each .meshb conversion holds the same mesh as the gmsh file it was made from.
#[test]
fn sample_meshes_read_round_trip_and_match_their_sources() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sample_meshes");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        if meshio::Format::from_path(&path).is_err() {
            continue;
        }
        seen += 1;
        let file = meshio::read(&path).unwrap_or_else(|e| panic!("{e}"));
        file.mesh.validate_indices().unwrap();
        assert!(!file.mesh.vertices.is_empty(), "{}", path.display());
        for format in FORMATS {
            for version in [Version::V2, Version::V4] {
                let back = decode(&encode(&file.mesh, format, version), format);
                assert_eq!(
                    back.mesh,
                    file.mesh,
                    "{} as {format:?} v{version}",
                    path.display()
                );
            }
        }
    }
    assert!(
        seen >= 9,
        "expected the 5 tool meshes and 4 conversions, found {seen}"
    );

    let read = |name: &str| meshio::read(&dir.join(name)).unwrap_or_else(|e| panic!("{e}"));
    // Version 2 conversions keep every f64 coordinate.
    assert_eq!(read("cube.meshb").mesh, read("cube_gmsh.mesh").mesh);
    assert_eq!(
        read("hexahedra.meshb").mesh,
        read("hex_cube_gmsh.mesh").mesh
    );
    // The 2D conversion drops z, which is 0 everywhere in gmsh's planar output.
    let planar = read("square_2d.meshb");
    let mut source = read("square_2d_gmsh.mesh").mesh;
    assert_eq!(planar.mesh.dimension, 2);
    source.dimension = 2;
    assert_eq!(planar.mesh, source);
    // Version 1 stores f32 coordinates: the conversion equals the source rounded to f32.
    let sphere = read("sphere_surface.meshb");
    let mut rounded = read("sphere_surface_gmsh.mesh").mesh;
    for p in &mut rounded.vertices {
        *p = p.map(|x| f64::from(x as f32));
    }
    assert_eq!(sphere.version, Version::V1);
    assert_eq!(sphere.mesh, rounded);
}
