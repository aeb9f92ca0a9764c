//! meshio: each kind of bad input gives its error, whose one-line message names the file and
//! the byte or line where the problem is.

use std::path::Path;

use snowsim::meshio::{
    self, ElementKind, EncodeError, Format, Location, Mesh, MeshError, PositionProblem, Version,
};

const BIN: &str = "cube.meshb";
const TXT: &str = "cube.mesh";

/// 4 vertices, 2 tetrahedra (the second repeats the first with another reference).
fn two_tets() -> Mesh {
    let mut m = Mesh::new(3);
    for p in [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
    ] {
        m.push_vertex(p, 0);
    }
    m.elements_mut(ElementKind::Tetrahedra)
        .push(&[0, 1, 2, 3], 1);
    m.elements_mut(ElementKind::Tetrahedra)
        .push(&[0, 2, 1, 3], 2);
    m
}

fn binary(version: Version) -> Vec<u8> {
    meshio::to_bytes(&two_tets(), Format::Binary, version).unwrap()
}

fn read_err(bytes: &[u8], format: Format) -> MeshError {
    let name = if format == Format::Binary { BIN } else { TXT };
    match meshio::read_bytes(bytes, format, Path::new(name)) {
        Ok(file) => panic!("read {name} without error: {:?}", file.mesh),
        Err(e) => e,
    }
}

fn text_err(text: &str) -> MeshError {
    read_err(text.as_bytes(), Format::Ascii)
}

/// The message is one line, starts with `file: location: ` and contains every part.
fn check(e: &MeshError, file: &str, at: Location, parts: &[&str]) {
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.starts_with(&format!("{file}: {at}: ")), "{msg}");
    assert_eq!(e.location(), Some(at), "{msg}");
    assert_eq!(e.path(), Some(Path::new(file)), "{msg}");
    for part in parts {
        assert!(msg.contains(part), "{msg:?} lacks {part:?}");
    }
}

fn put32(b: &mut [u8], at: usize, v: i32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: i64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

// Offsets in a version 2 file of `two_tets`: header 20, Vertices block 12 + 4 * 28,
// Tetrahedra block 12 + 2 * 20, End.
const V2_VERTICES: usize = 20;
const V2_TETS: usize = 20 + 12 + 4 * 28;
const V2_END: usize = V2_TETS + 12 + 2 * 20;
// Version 4: header 24, Vertices 20 + 4 * 32, Tetrahedra 20 + 2 * 40.
const V4_TETS: usize = 24 + 20 + 4 * 32;

#[test]
fn layout_constants_match_the_file() {
    assert_eq!(binary(Version::V2).len(), V2_END + 8);
    assert_eq!(binary(Version::V4).len(), V4_TETS + 20 + 80 + 12);
}

#[test]
fn missing_file_names_the_path() {
    let e = meshio::read(Path::new("/nonexistent/dir/cube.meshb")).unwrap_err();
    assert!(matches!(e, MeshError::Read { .. }));
    assert!(
        e.to_string().starts_with("/nonexistent/dir/cube.meshb: "),
        "{e}"
    );
    let e = meshio::write(
        Path::new("/nonexistent/dir/out.mesh"),
        &two_tets(),
        Version::V2,
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("/nonexistent/dir/out.mesh: "),
        "{e}"
    );
}

#[test]
fn unknown_extension() {
    for e in [
        meshio::read(Path::new("cube.stl")).unwrap_err(),
        meshio::write(Path::new("cube.stl"), &two_tets(), Version::V2).unwrap_err(),
    ] {
        assert!(matches!(e, MeshError::UnknownExtension { .. }));
        assert_eq!(
            e.to_string(),
            "cube.stl: unknown mesh file extension: expected .mesh (ASCII) or .meshb (binary)"
        );
    }
}

#[test]
fn truncated_binary_fields() {
    let b = binary(Version::V2);
    let e = read_err(&b[..2], Format::Binary);
    check(
        &e,
        BIN,
        Location::Byte(0),
        &["endianness code", "4 bytes needed, 2 remain"],
    );
    let e = read_err(&b[..6], Format::Binary);
    check(
        &e,
        BIN,
        Location::Byte(4),
        &["version", "4 bytes needed, 2 remain"],
    );
    let e = read_err(&b[..V2_VERTICES + 6], Format::Binary);
    assert!(matches!(e, MeshError::Truncated { .. }), "{e}");
    check(
        &e,
        BIN,
        Location::Byte(V2_VERTICES as u64 + 4),
        &[
            "next-keyword position of Vertices",
            "4 bytes needed, 2 remain",
        ],
    );
    // Cut inside End's position.
    let e = read_err(&b[..V2_END + 6], Format::Binary);
    check(&e, BIN, Location::Byte(V2_END as u64 + 4), &["End"]);
}

#[test]
fn cut_file_points_past_its_end() {
    let b = binary(Version::V2);
    let e = read_err(&b[..100], Format::Binary);
    check(
        &e,
        BIN,
        Location::Byte(V2_VERTICES as u64 + 4),
        &[
            "Vertices gives the next keyword position 144",
            "past the end of the file (100 bytes)",
        ],
    );
}

#[test]
fn wrong_endianness_code() {
    let mut b = binary(Version::V2);
    put32(&mut b, 0, 2);
    let e = read_err(&b, Format::Binary);
    check(
        &e,
        BIN,
        Location::Byte(0),
        &["endianness code 2 (0x00000002)", "not a .meshb"],
    );
    let e = read_err(b"MeshVersionFormatted 2", Format::Binary);
    check(
        &e,
        BIN,
        Location::Byte(0),
        &["endianness code 1752393037 (0x6873654d)"],
    );
}

#[test]
fn unknown_version_and_bad_dimension() {
    let mut b = binary(Version::V2);
    put32(&mut b, 4, 5);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(4),
        &["unknown mesh version 5"],
    );
    put32(&mut b, 4, -1);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(4),
        &["version -1"],
    );

    let mut b = binary(Version::V2);
    put32(&mut b, 16, 4);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(16),
        &["dimension 4 is not 2 or 3"],
    );
    let mut b = binary(Version::V4);
    put32(&mut b, 20, 1);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(20),
        &["dimension 1"],
    );

    let mut b = binary(Version::V2);
    put32(&mut b, 8, 4);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(8),
        &["expected the Dimension keyword (code 3)", "found code 4"],
    );
}

#[test]
fn count_larger_than_the_file() {
    let mut b = binary(Version::V2);
    put32(&mut b, V2_TETS + 8, i32::MAX);
    let remain = b.len() - (V2_TETS + 12);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(V2_TETS as u64 + 8),
        &[&format!(
            "Tetrahedra count 2147483647 needs 42949672940 bytes but only {remain} remain"
        )],
    );
    // Version 4 counts are 64-bit: nothing may be allocated from them.
    for count in [1i64 << 40, i64::MAX] {
        let mut b = binary(Version::V4);
        put64(&mut b, V4_TETS + 12, count);
        let e = read_err(&b, Format::Binary);
        assert!(matches!(e, MeshError::CountTooLarge { .. }), "{e}");
        check(
            &e,
            BIN,
            Location::Byte(V4_TETS as u64 + 12),
            &[&format!(
                "Tetrahedra count {count} needs {} bytes",
                count as u128 * 40
            )],
        );
    }
    let mut b = binary(Version::V4);
    put64(&mut b, 24 + 12, 1 << 33);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(36),
        &["Vertices count 8589934592"],
    );
}

#[test]
fn negative_counts() {
    let mut b = binary(Version::V2);
    put32(&mut b, V2_TETS + 8, -1);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(V2_TETS as u64 + 8),
        &["Tetrahedra count -1 is negative"],
    );
    let mut b = binary(Version::V4);
    put64(&mut b, 36, i64::MIN);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(36),
        &["Vertices count -9223372036854775808"],
    );
    let e = text_err("MeshVersionFormatted 2\nDimension 3\nTriangles\n-3\n");
    check(
        &e,
        TXT,
        Location::Line(4),
        &["Triangles count -3 is negative"],
    );
}

#[test]
fn data_running_into_the_next_keyword() {
    let mut b = binary(Version::V2);
    put32(&mut b, V2_VERTICES + 8, 5);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(V2_VERTICES as u64 + 8),
        &["Vertices data ends at byte 172, past the next keyword at byte 144"],
    );
}

#[test]
fn keyword_positions_backwards_or_past_the_end() {
    let b = binary(Version::V2);
    let mut back = b.clone();
    put32(&mut back, V2_TETS + 4, V2_VERTICES as i32);
    let e = read_err(&back, Format::Binary);
    assert!(matches!(
        e,
        MeshError::KeywordPosition {
            problem: PositionProblem::NotAfter { .. },
            ..
        }
    ));
    check(
        &e,
        BIN,
        Location::Byte(V2_TETS as u64 + 4),
        &[
            "Tetrahedra gives the next keyword position 20",
            "not after its own header (ends at byte 152)",
        ],
    );
    let mut neg = b.clone();
    put32(&mut neg, 12, -8);
    check(
        &read_err(&neg, Format::Binary),
        BIN,
        Location::Byte(12),
        &["Dimension gives the next keyword position -8"],
    );
    let mut self_loop = b.clone();
    put32(&mut self_loop, V2_VERTICES + 4, V2_VERTICES as i32);
    check(
        &read_err(&self_loop, Format::Binary),
        BIN,
        Location::Byte(24),
        &["not after"],
    );
    let mut past = b.clone();
    put32(&mut past, V2_VERTICES + 4, i32::MAX);
    check(
        &read_err(&past, Format::Binary),
        BIN,
        Location::Byte(24),
        &[
            "position 2147483647",
            &format!("past the end of the file ({} bytes)", b.len()),
        ],
    );
    let mut v4 = binary(Version::V4);
    put64(&mut v4, 12, 1 << 62);
    check(
        &read_err(&v4, Format::Binary),
        BIN,
        Location::Byte(12),
        &["4611686018427387904", "past the end"],
    );
}

#[test]
fn node_index_out_of_range_binary() {
    for (value, shown) in [(5, "5"), (0, "0"), (-1, "-1")] {
        let mut b = binary(Version::V2);
        // Second tetrahedron, third node.
        put32(&mut b, V2_TETS + 12 + 20 + 8, value);
        check(
            &read_err(&b, Format::Binary),
            BIN,
            Location::Byte((V2_TETS + 12 + 20) as u64),
            &[&format!(
                "Tetrahedra 2 refers to vertex {shown}, but the vertices are numbered 1 to 4"
            )],
        );
    }
    let mut b = binary(Version::V4);
    put64(&mut b, V4_TETS + 20, (1 << 32) + 1);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte((V4_TETS + 20) as u64),
        &["Tetrahedra 1 refers to vertex 4294967297"],
    );
}

#[test]
fn references_beyond_32_bits() {
    let mut b = binary(Version::V4);
    let second_ref = V4_TETS + 20 + 40 + 32;
    put64(&mut b, second_ref, 1 << 40);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(second_ref as u64),
        &["Tetrahedra 2 has reference 1099511627776, which does not fit in 32 bits"],
    );
    let mut b = binary(Version::V4);
    let third_vertex_ref = 24 + 20 + 2 * 32 + 24;
    put64(&mut b, third_vertex_ref, i64::from(i32::MIN) - 1);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(third_vertex_ref as u64),
        &["Vertices 3 has reference -2147483649"],
    );
    let e = text_err("MeshVersionFormatted 4\nDimension 2\nVertices 1\n0 0\n4294967296\n");
    check(
        &e,
        TXT,
        Location::Line(5),
        &["Vertices 1 has reference 4294967296"],
    );
}

#[test]
fn duplicate_keywords() {
    let mut b = binary(Version::V2);
    put32(&mut b, V2_TETS, 4);
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(V2_TETS as u64),
        &["second Vertices keyword"],
    );
    let e = text_err("MeshVersionFormatted 2\nDimension 3\nEdges 0\nEdges 0\n");
    check(&e, TXT, Location::Line(4), &["second Edges keyword"]);
    let e = text_err("MeshVersionFormatted 2\nDimension 3\nDimension 3\n");
    check(&e, TXT, Location::Line(3), &["second Dimension keyword"]);
}

#[test]
fn floating_point_precision_must_be_32_or_64() {
    let e = text_err("MeshVersionFormatted 2\nDimension 3\nFloatingPointPrecision\n48\n");
    check(
        &e,
        TXT,
        Location::Line(4),
        &["FloatingPointPrecision 48 is not 32 or 64"],
    );
    // Binary: replace End by a FloatingPointPrecision block whose value is 16.
    let mut b = binary(Version::V2);
    b.truncate(V2_END);
    for w in [155, V2_END as i32 + 12, 16, 54, 0] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    check(
        &read_err(&b, Format::Binary),
        BIN,
        Location::Byte(V2_END as u64 + 8),
        &["FloatingPointPrecision 16"],
    );
}

const HEAD: &str = "MeshVersionFormatted 2\nDimension 3\n";

#[test]
fn non_numeric_ascii_tokens() {
    let e = text_err(&format!("{HEAD}Vertices\n1\n0 0 zero 1\n"));
    check(
        &e,
        TXT,
        Location::Line(5),
        &["expected a real number for Vertices 1, found 'zero'"],
    );
    let e = text_err(&format!("{HEAD}Triangles 1\n1 2 3.0 0\n"));
    check(
        &e,
        TXT,
        Location::Line(4),
        &["expected an integer for Triangles 1, found '3.0'"],
    );
    let e = text_err(&format!("{HEAD}Edges\nmany\n"));
    check(
        &e,
        TXT,
        Location::Line(4),
        &["for the Edges count, found 'many'"],
    );
    let e = text_err("MeshVersionFormatted two\n");
    check(
        &e,
        TXT,
        Location::Line(1),
        &["for MeshVersionFormatted, found 'two'"],
    );
    let e = text_err(&format!("{HEAD}Edges 1\n1 \u{e9}2 0\n"));
    check(&e, TXT, Location::Line(4), &["found '\u{e9}2'"]);
}

#[test]
fn missing_header_keywords_in_ascii() {
    let e = text_err("MeshVersionFormatted 2\n\nVertices 0\n");
    check(
        &e,
        TXT,
        Location::Line(3),
        &["end of file reached without a Dimension keyword"],
    );
    let e = text_err("Dimension 3\n");
    check(
        &e,
        TXT,
        Location::Line(1),
        &["without a MeshVersionFormatted keyword"],
    );
    let e = text_err("");
    check(&e, TXT, Location::Line(1), &["MeshVersionFormatted"]);
    let e = text_err("MeshVersionFormatted 2\nDimension");
    check(
        &e,
        TXT,
        Location::Line(2),
        &["file ends while reading the Dimension value"],
    );
}

#[test]
fn bad_ascii_header_values() {
    let e = text_err("MeshVersionFormatted 7\nDimension 3\n");
    check(&e, TXT, Location::Line(1), &["unknown mesh version 7"]);
    let e = text_err("MeshVersionFormatted 2\nDimension\n\n4\n");
    check(&e, TXT, Location::Line(4), &["dimension 4 is not 2 or 3"]);
}

#[test]
fn ascii_counts_larger_than_the_file() {
    let e = text_err(&format!("{HEAD}Tetrahedra\n1000000\n1 2 3 4 0\n"));
    check(
        &e,
        TXT,
        Location::Line(4),
        &[
            "Tetrahedra count 1000000 needs 5000000 numbers (at least two bytes each, a digit and a separator) but only 11 bytes remain",
        ],
    );
    let e = text_err(&format!("{HEAD}Vertices 18446744073709551615\n"));
    assert!(matches!(e, MeshError::BadToken { .. }), "{e}");
    let e = text_err(&format!("{HEAD}Vertices 9223372036854775807\n"));
    check(
        &e,
        TXT,
        Location::Line(3),
        &["Vertices count 9223372036854775807 needs 36893488147419103228 numbers"],
    );
}

#[test]
fn ascii_file_ending_inside_a_block() {
    let e = text_err(&format!("{HEAD}Triangles 2\n1 2 3 0\n100000 200000\n"));
    check(
        &e,
        TXT,
        Location::Line(5),
        &["file ends while reading Triangles 2"],
    );
}

#[test]
fn node_index_out_of_range_ascii() {
    let text = format!(
        "{HEAD}Triangles\n3\n1 2 3 0\n\n# comment\n3 2 1 0\n1 4 \n 2 0\nVertices 3\n0 0 0 0\n1 0 0 0\n0 1 0 0\n"
    );
    let e = text_err(&text);
    check(
        &e,
        TXT,
        Location::Line(9),
        &["Triangles 3 refers to vertex 4, but the vertices are numbered 1 to 3"],
    );
    let e = text_err(&format!("{HEAD}Edges 1\n1 2 0\n"));
    check(
        &e,
        TXT,
        Location::Line(4),
        &["Edges 1 refers to vertex 1, but the file has no vertices"],
    );
}

#[test]
fn numbers_where_a_keyword_should_be() {
    let e = text_err(&format!("{HEAD}Vertices 1\n0 0 0 0\n1 1 1 1\nEnd\n"));
    check(
        &e,
        TXT,
        Location::Line(5),
        &["unexpected '1' where a keyword was expected"],
    );
    let e = text_err("12 MeshVersionFormatted 2 Dimension 3");
    check(&e, TXT, Location::Line(1), &["unexpected '12'"]);
}

#[test]
fn unwritable_meshes() {
    let mut m = two_tets();
    m.dimension = 4;
    let e = meshio::to_bytes(&m, Format::Binary, Version::V2).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot encode mesh: dimension 4 is not 2 or 3"
    );

    let mut m = two_tets();
    m.vertex_refs.pop();
    let e = meshio::to_bytes(&m, Format::Ascii, Version::V2).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot encode mesh: 4 vertices but 3 vertex references"
    );

    let mut m = two_tets();
    m.elements_mut(ElementKind::Edges).push(&[0, 4], 0);
    let e = meshio::to_bytes(&m, Format::Binary, Version::V4).unwrap_err();
    assert!(matches!(e, MeshError::Encode(EncodeError::Index(_))), "{e}");
    assert_eq!(
        e.to_string(),
        "cannot encode mesh: edges element 0 (0-based) uses vertex index 4 but the mesh has 4 \
         vertices"
    );
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        "snowsim-meshio-unwritable-{}.meshb",
        std::process::id()
    ));
    let e = meshio::write(&path, &m, Version::V2).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "{}: cannot write mesh: edges element 0",
            path.display()
        )),
        "{e}"
    );
    assert!(!path.exists());
}
