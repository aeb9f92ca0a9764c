//! VTK XML unstructured grids (`.vtu`): a small mesh written and read back by a parser of its
//! own here (the XML header's attributes, then the raw appended block through the offsets),
//! every value compared with the input; input errors named without panics and with nothing
//! written; files written atomically.

use std::path::Path;

use snowsim::meshio::vtu::{VTK_TETRA, VTK_TRIANGLE};
use snowsim::meshio::{VtuArray, VtuError, write_vtu, write_vtu_file};

use crate::common::temp_dir;
use crate::common::vtu::parse;

/// Five points, two tetrahedra sharing the face (1, 2, 3), and that face as a triangle.
const POINTS: [[f64; 3]; 5] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0],
    [0.0, 0.0, 1.0],
    [1.0 / 3.0, 1.0e-300, -2.5e7],
];
const TETRAHEDRA: [([u32; 4], i32); 2] = [([0, 1, 2, 3], 3), ([1, 2, 3, 4], -7)];
const TRIANGLES: [([u32; 3], i32); 1] = [([1, 2, 3], 42)];
const PRESSURE: [f32; 5] = [0.0, -1.5, f32::MAX, 1.0e-30, 101_325.0];
const WIND: [[f32; 3]; 5] = [
    [1.0, 2.0, 3.0],
    [-4.0, 0.5, 0.25],
    [0.0, -0.0, 7.0],
    [1.0e10, -1.0e-10, 3.5],
    [9.0, 8.0, 7.0],
];
const FLAGS: [i32; 5] = [0, 1, -1, i32::MAX, i32::MIN];

fn sample_arrays() -> [VtuArray<'static>; 3] {
    [
        VtuArray::scalars("pressure", &PRESSURE),
        VtuArray::vectors("wind", &WIND),
        VtuArray::ints("flag", &FLAGS),
    ]
}

fn write_sample() -> Vec<u8> {
    let mut bytes = Vec::new();
    write_vtu(
        &mut bytes,
        &POINTS,
        &TETRAHEDRA,
        &TRIANGLES,
        &sample_arrays(),
    )
    .unwrap();
    bytes
}

#[test]
fn written_grid_reads_back_value_for_value() {
    let parsed = parse(&write_sample());
    assert_eq!(parsed.piece["NumberOfPoints"], "5");
    assert_eq!(parsed.piece["NumberOfCells"], "3");

    // Every array is where its offset says, and the block holds them end to end.
    let mut spans: Vec<(usize, usize)> = parsed
        .arrays
        .iter()
        .map(|a| {
            let offset: usize = a.get("offset").parse().unwrap();
            (offset, offset + 8 + parsed.bytes(a).len())
        })
        .collect();
    spans.sort();
    assert_eq!(spans[0].0, 0);
    for pair in spans.windows(2) {
        assert_eq!(pair[0].1, pair[1].0, "arrays are contiguous");
    }
    assert_eq!(spans.last().unwrap().1, parsed.raw.len());
    assert_eq!(parsed.arrays.len(), 3 + 1 + 1 + 3);

    // Point data.
    assert_eq!(parsed.components("PointData", "pressure"), 1);
    assert_eq!(parsed.f32s("PointData", "pressure"), PRESSURE);
    assert_eq!(parsed.components("PointData", "wind"), 3);
    let wind: Vec<f32> = WIND.iter().flatten().copied().collect();
    let read = parsed.f32s("PointData", "wind");
    assert_eq!(
        read.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        wind.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        "bit for bit, -0.0 included"
    );
    assert_eq!(parsed.components("PointData", "flag"), 1);
    assert_eq!(parsed.i32s("PointData", "flag"), FLAGS);
    assert!(
        parsed
            .header
            .contains("<PointData Scalars=\"pressure\" Vectors=\"wind\">")
    );

    // Cell data: tetrahedra first, then triangles.
    assert_eq!(parsed.i32s("CellData", "ref"), [3, -7, 42]);

    // Points, in Float64.
    let points = parsed
        .arrays
        .iter()
        .find(|a| a.section == "Points")
        .expect("Points array");
    assert_eq!(points.get("type"), "Float64");
    assert_eq!(points.get("NumberOfComponents"), "3");
    let coordinates: Vec<f64> = parsed
        .bytes(points)
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(
        coordinates,
        POINTS.iter().flatten().copied().collect::<Vec<_>>()
    );

    // Cells.
    assert_eq!(
        parsed.i64s("Cells", "connectivity"),
        [0, 1, 2, 3, 1, 2, 3, 4, 1, 2, 3]
    );
    assert_eq!(parsed.i64s("Cells", "offsets"), [4, 8, 11]);
    let types = parsed.array("Cells", "types");
    assert_eq!(types.get("type"), "UInt8");
    assert_eq!(parsed.bytes(types), [VTK_TETRA, VTK_TETRA, VTK_TRIANGLE]);
    assert_eq!((VTK_TETRA, VTK_TRIANGLE), (10, 5));
}

#[test]
fn no_triangles_and_no_point_data() {
    let mut bytes = Vec::new();
    write_vtu(&mut bytes, &POINTS, &TETRAHEDRA, &[], &[]).unwrap();
    let parsed = parse(&bytes);
    assert_eq!(parsed.piece["NumberOfCells"], "2");
    assert!(parsed.header.contains("<PointData>"));
    assert_eq!(parsed.i32s("CellData", "ref"), [3, -7]);
    assert_eq!(parsed.i64s("Cells", "offsets"), [4, 8]);
    assert_eq!(parsed.arrays.len(), 5);
}

#[test]
fn names_are_escaped() {
    let name = "a<b> & \"c\" 'd' é";
    let values = [1.0_f32; 5];
    let mut bytes = Vec::new();
    write_vtu(
        &mut bytes,
        &POINTS,
        &[],
        &TRIANGLES,
        &[VtuArray::scalars(name, &values)],
    )
    .unwrap();
    let parsed = parse(&bytes);
    assert_eq!(parsed.f32s("PointData", name), values);
    assert!(!parsed.header.contains("a<b>"));
}

/// Checks that `error` comes back and nothing was written.
fn refused(
    tetrahedra: &[([u32; 4], i32)],
    triangles: &[([u32; 3], i32)],
    arrays: &[VtuArray],
) -> VtuError {
    let mut bytes = Vec::new();
    let error = write_vtu(&mut bytes, &POINTS, tetrahedra, triangles, arrays).unwrap_err();
    assert!(bytes.is_empty(), "nothing written before {error}");
    error
}

#[test]
fn point_array_of_the_wrong_length_is_named() {
    let short = [0.0_f32; 4];
    let arrays = [
        VtuArray::vectors("wind", &WIND),
        VtuArray::scalars("temperature", &short),
    ];
    let error = refused(&TETRAHEDRA, &TRIANGLES, &arrays);
    assert!(matches!(
        &error,
        VtuError::PointDataLength { name, entries: 4, points: 5 } if name == "temperature"
    ));
    assert_eq!(
        error.to_string(),
        "point data array `temperature` has 4 entries, but the mesh has 5 points"
    );

    let long = [[0.0_f32; 3]; 6];
    let error = refused(
        &TETRAHEDRA,
        &TRIANGLES,
        &[VtuArray::vectors("velocity", &long)],
    );
    assert_eq!(
        error.to_string(),
        "point data array `velocity` has 6 entries, but the mesh has 5 points"
    );
}

#[test]
fn node_index_out_of_range_is_named() {
    let error = refused(&[([0, 1, 2, 3], 0), ([0, 1, 5, 3], 0)], &[], &[]);
    assert_eq!(
        error.to_string(),
        "tetrahedron 1 uses node 5, but the mesh has 5 points (node indices are 0-based)"
    );
    let error = refused(&TETRAHEDRA, &[([0, 1, 2], 0), ([u32::MAX, 1, 2], 0)], &[]);
    assert!(matches!(
        error,
        VtuError::NodeIndex {
            kind: "triangle",
            element: 1,
            node: u32::MAX,
            points: 5
        }
    ));
}

#[test]
fn bad_and_duplicate_names_are_refused() {
    let error = refused(&TETRAHEDRA, &[], &[VtuArray::scalars("", &PRESSURE)]);
    assert!(
        matches!(error, VtuError::BadName { index: 0, .. }),
        "{error}"
    );
    let error = refused(&TETRAHEDRA, &[], &[VtuArray::ints("a\nb", &FLAGS)]);
    assert!(error.to_string().contains("control character"), "{error}");
    let error = refused(
        &TETRAHEDRA,
        &[],
        &[
            VtuArray::scalars("p", &PRESSURE),
            VtuArray::ints("p", &FLAGS),
        ],
    );
    assert_eq!(
        error.to_string(),
        "two point data arrays are named `p`; names must differ"
    );
}

/// The names in `dir`.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn file_holds_the_same_bytes() {
    let dir = temp_dir("vtu", "file");
    let path = dir.join("wind.vtu");
    write_vtu_file(&path, &POINTS, &TETRAHEDRA, &TRIANGLES, &sample_arrays()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), write_sample());
    assert_eq!(listing(&dir), ["wind.vtu"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failed_file_write_leaves_nothing() {
    let dir = temp_dir("vtu", "atomic");
    let short = [0.0_f32; 2];
    let bad = [VtuArray::scalars("pressure", &short)];

    // A new file: none appears, nor any temporary.
    let path = dir.join("new.vtu");
    let error = write_vtu_file(&path, &POINTS, &TETRAHEDRA, &TRIANGLES, &bad).unwrap_err();
    assert!(
        error.to_string().contains("`pressure` has 2 entries"),
        "{error}"
    );
    assert!(listing(&dir).is_empty(), "{:?}", listing(&dir));

    // An existing file: kept as it was.
    let path = dir.join("old.vtu");
    write_vtu_file(&path, &POINTS, &TETRAHEDRA, &TRIANGLES, &sample_arrays()).unwrap();
    let error = write_vtu_file(&path, &POINTS, &[([0, 1, 2, 9], 0)], &[], &[]).unwrap_err();
    assert!(
        matches!(error, VtuError::NodeIndex { node: 9, .. }),
        "{error}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), write_sample());
    assert_eq!(listing(&dir), ["old.vtu"]);

    // A directory that does not exist: an output error naming the path.
    let missing = dir.join("missing").join("x.vtu");
    let error = write_vtu_file(&missing, &POINTS, &TETRAHEDRA, &[], &[]).unwrap_err();
    assert!(matches!(error, VtuError::Output(_)), "{error}");
    assert!(error.to_string().contains("x.vtu"), "{error}");
    assert_eq!(listing(&dir), ["old.vtu"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A writer that fails after `budget` bytes.
struct Failing {
    budget: usize,
}

impl std::io::Write for Failing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.budget {
            return Err(std::io::Error::other("disk full"));
        }
        self.budget -= buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn writer_failure_is_an_io_error() {
    let mut writer = Failing { budget: 100 };
    let error = write_vtu(
        &mut writer,
        &POINTS,
        &TETRAHEDRA,
        &TRIANGLES,
        &sample_arrays(),
    )
    .unwrap_err();
    assert!(matches!(error, VtuError::Io(_)), "{error}");
    assert!(error.to_string().contains("disk full"), "{error}");
}
