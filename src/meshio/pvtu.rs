//! Parallel VTK unstructured grids (`.pvtu`): one mesh written as pieces, each an ordinary
//! `.vtu` ([`write_vtu_file`]) that ParaView reads on its own process, and a small XML file that
//! names the pieces and declares their arrays.
//!
//! The pieces follow an owner per point (a partition, such as METIS's by `crate::partition`;
//! a run over K ranks writes K pieces): each cell belongs to the owner of its smallest point index, so every cell
//! is in exactly one piece, and a piece holds its cells and every point they use (the points on
//! a cut are in each piece that uses them), plus the points it owns that no cell of its own
//! uses, so that every point is in some piece. A piece's points keep the mesh's order and carry
//! their index in the whole mesh as the point array [`GLOBAL_ID`]: the pieces put back together
//! by it give the whole mesh, value for value.
//!
//! The pieces go into a directory beside the `.pvtu` named after it (`state.pvtu` →
//! `state/piece_00000.vtu`, …; [`pieces_dir`], [`piece_name`]). An earlier `.pvtu` of the same
//! name is removed before the first piece is written and the new one written last, each file
//! atomically, so that no `.pvtu` ever names a mix of old and new pieces (a write that fails
//! part-way leaves pieces and no `.pvtu`); pieces of an earlier write beyond the new count are
//! removed once the new `.pvtu` stands.

use std::path::{Path, PathBuf};

use super::vtu::{VtuArray, VtuData, VtuError, escape, write_vtu_file};
use crate::output::write_atomic;

/// The point array that holds each piece point's index in the whole mesh.
pub const GLOBAL_ID: &str = "global_id";

/// One piece of a mesh: its points (indices into the whole mesh, increasing) and its cells,
/// their nodes indices into its points.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Piece {
    /// The piece's points, as indices into the whole mesh, in increasing order.
    pub points: Vec<u32>,
    /// The tetrahedra owned by the piece, nodes local to it, with their references.
    pub tetrahedra: Vec<([u32; 4], i32)>,
    /// The triangles owned by the piece, nodes local to it, with their references.
    pub triangles: Vec<([u32; 3], i32)>,
}

impl Piece {
    /// The values of a whole-mesh point array at this piece's points.
    pub fn gather<T: Copy>(&self, values: &[T]) -> Vec<T> {
        self.points.iter().map(|&p| values[p as usize]).collect()
    }
}

/// Why a mesh cannot be split into pieces.
#[derive(Debug, thiserror::Error)]
pub enum PieceError {
    /// The owners are not one per point.
    #[error("{owners} owners for {points} points")]
    OwnerCount {
        /// Owners given.
        owners: usize,
        /// Points of the mesh.
        points: usize,
    },
    /// An owner names no piece.
    #[error("point {point} is owned by piece {owner}, but there are {pieces} pieces")]
    Owner {
        /// The point.
        point: usize,
        /// Its owner.
        owner: u32,
        /// Pieces asked for.
        pieces: usize,
    },
    /// A cell names a point the mesh does not have.
    #[error("a cell uses point {node}, but the mesh has {points} points")]
    Node {
        /// The node index.
        node: u32,
        /// The number of points.
        points: usize,
    },
    /// More points than a piece's `Int32` [`GLOBAL_ID`] can number.
    #[error("{points} points: a piece's global ids are 32-bit, at most {max}")]
    TooManyPoints {
        /// The mesh's points.
        points: usize,
        /// The most there may be.
        max: usize,
    },
    /// A piece names a point the mesh does not have, or a cell a point the piece does not.
    #[error("piece {piece}: {what}")]
    BadPiece {
        /// The piece.
        piece: usize,
        /// What is wrong with it.
        what: String,
    },
    /// A piece's file could not be written, or an earlier one removed.
    #[error(transparent)]
    Vtu(#[from] VtuError),
}

/// Splits a mesh of `points` points into `pieces` pieces by `owner` (one per point, below
/// `pieces`): each cell to the owner of its smallest point index (see the module's doc).
pub fn split(
    points: usize,
    owner: &[u32],
    pieces: usize,
    tetrahedra: &[([u32; 4], i32)],
    triangles: &[([u32; 3], i32)],
) -> Result<Vec<Piece>, PieceError> {
    if owner.len() != points {
        return Err(PieceError::OwnerCount {
            owners: owner.len(),
            points,
        });
    }
    if let Some((point, &o)) = owner
        .iter()
        .enumerate()
        .find(|(_, o)| **o as usize >= pieces)
    {
        return Err(PieceError::Owner {
            point,
            owner: o,
            pieces,
        });
    }
    let owner_of = |nodes: &[u32]| owner[nodes.iter().copied().min().unwrap_or(0) as usize];
    // Each piece's points: those it owns, then every node of its cells; in the mesh's order.
    let mut out: Vec<Piece> = vec![Piece::default(); pieces];
    for (p, &o) in owner.iter().enumerate() {
        out[o as usize].points.push(p as u32);
    }
    let cells = tetrahedra
        .iter()
        .map(|(n, _)| &n[..])
        .chain(triangles.iter().map(|(n, _)| &n[..]));
    for nodes in cells {
        if let Some(&node) = nodes.iter().find(|&&n| n as usize >= points) {
            return Err(PieceError::Node { node, points });
        }
        out[owner_of(nodes) as usize]
            .points
            .extend_from_slice(nodes);
    }
    for piece in &mut out {
        piece.points.sort_unstable();
        piece.points.dedup();
    }
    // Every node of a piece's cells is among its points (they were added above).
    let at = |piece: &Piece, n: u32| {
        piece
            .points
            .binary_search(&n)
            .expect("a cell's node is among its piece's points") as u32
    };
    for &(nodes, r) in tetrahedra {
        let piece = &mut out[owner_of(&nodes) as usize];
        let local = nodes.map(|n| at(piece, n));
        piece.tetrahedra.push((local, r));
    }
    for &(nodes, r) in triangles {
        let piece = &mut out[owner_of(&nodes) as usize];
        let local = nodes.map(|n| at(piece, n));
        piece.triangles.push((local, r));
    }
    Ok(out)
}

/// The directory a `.pvtu`'s pieces go into: beside it, named after it without its extension
/// (`out/state.pvtu` → `out/state`).
pub fn pieces_dir(pvtu: &Path) -> PathBuf {
    pvtu.with_extension("")
}

/// The file name of piece `k` in [`pieces_dir`]: `piece_00000.vtu`, ….
pub fn piece_name(k: usize) -> String {
    format!("piece_{k:05}.vtu")
}

/// Whether `path` names a `.pvtu` (by its extension, any case).
pub fn is_pvtu(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("pvtu"))
}

/// Writes the mesh as the pieces `pieces` ([`split`]) with the whole-mesh `point_data` gathered
/// to each and [`GLOBAL_ID`] added, into [`pieces_dir`] (made if missing), then the `.pvtu`
/// at `path` that names them; each file atomically. Returns the pieces' paths.
pub fn write_pvtu_file(
    path: &Path,
    points: &[[f64; 3]],
    pieces: &[Piece],
    point_data: &[VtuArray],
) -> Result<Vec<PathBuf>, PieceError> {
    if let Some(array) = point_data.iter().find(|a| a.data.len() != points.len()) {
        return Err(VtuError::PointDataLength {
            name: array.name.to_string(),
            entries: array.data.len(),
            points: points.len(),
        }
        .into());
    }
    let max = i32::MAX as usize + 1;
    if points.len() > max {
        return Err(PieceError::TooManyPoints {
            points: points.len(),
            max,
        });
    }
    for (k, piece) in pieces.iter().enumerate() {
        check_piece(k, piece, points.len())?;
    }
    let io = |path: &Path, error| {
        PieceError::Vtu(VtuError::Output(crate::output::OutputError::Io {
            path: path.to_path_buf(),
            error,
        }))
    };
    let dir = pieces_dir(path);
    std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(path, e)),
        _ => {}
    }
    let mut written = Vec::with_capacity(pieces.len());
    for (k, piece) in pieces.iter().enumerate() {
        let piece_points = piece.gather(points);
        let ids: Vec<i32> = piece.points.iter().map(|&p| p as i32).collect();
        let gathered: Vec<Gathered> = point_data
            .iter()
            .map(|a| Gathered::of(&a.data, piece))
            .collect();
        let mut arrays: Vec<VtuArray> = point_data
            .iter()
            .zip(&gathered)
            .map(|(a, g)| VtuArray {
                name: a.name,
                data: g.data(),
            })
            .collect();
        arrays.push(VtuArray::ints(GLOBAL_ID, &ids));
        let file = dir.join(piece_name(k));
        write_vtu_file(
            &file,
            &piece_points,
            &piece.tetrahedra,
            &piece.triangles,
            &arrays,
        )?;
        written.push(file);
    }
    let folder = dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let text = pvtu_text(&folder, pieces.len(), point_data);
    write_atomic(path, text.as_bytes()).map_err(VtuError::from)?;
    // Pieces an earlier write left beyond this one's count (the output rule checked that
    // every file of a piece's name there is a VTK file, or the user passed --force).
    let entries = std::fs::read_dir(&dir).map_err(|e| io(&dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io(&dir, e))?;
        let name = entry.file_name();
        let index = name
            .to_str()
            .and_then(|n| n.strip_prefix("piece_")?.strip_suffix(".vtu"))
            .filter(|digits| digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<usize>().ok());
        if index.is_some_and(|k| k >= pieces.len()) {
            std::fs::remove_file(entry.path()).map_err(|e| io(&entry.path(), e))?;
        }
    }
    Ok(written)
}

/// Checks that `piece`'s points are increasing and name points of a mesh of `points`, and
/// that its cells name its points.
fn check_piece(k: usize, piece: &Piece, points: usize) -> Result<(), PieceError> {
    let bad = |what: String| PieceError::BadPiece { piece: k, what };
    if let Some(w) = piece.points.windows(2).find(|w| w[0] >= w[1]) {
        return Err(bad(format!(
            "its points are not increasing ({} then {})",
            w[0], w[1]
        )));
    }
    if let Some(&p) = piece.points.last().filter(|&&p| p as usize >= points) {
        return Err(bad(format!(
            "it names point {p}, but the mesh has {points}"
        )));
    }
    let own = piece.points.len();
    let nodes = piece
        .tetrahedra
        .iter()
        .flat_map(|(n, _)| n.iter())
        .chain(piece.triangles.iter().flat_map(|(n, _)| n.iter()));
    for &n in nodes {
        if n as usize >= own {
            return Err(bad(format!("a cell uses its point {n}, but it has {own}")));
        }
    }
    Ok(())
}

/// A point array's values at one piece's points, owned.
enum Gathered {
    Scalars(Vec<f32>),
    Vectors(Vec<[f32; 3]>),
    Ints(Vec<i32>),
}

impl Gathered {
    fn of(data: &VtuData, piece: &Piece) -> Self {
        match data {
            VtuData::Scalars(v) => Self::Scalars(piece.gather(v)),
            VtuData::Vectors(v) => Self::Vectors(piece.gather(v)),
            VtuData::Ints(v) => Self::Ints(piece.gather(v)),
        }
    }

    fn data(&self) -> VtuData<'_> {
        match self {
            Self::Scalars(v) => VtuData::Scalars(v),
            Self::Vectors(v) => VtuData::Vectors(v),
            Self::Ints(v) => VtuData::Ints(v),
        }
    }
}

/// The `.pvtu` XML: the arrays every piece has (as [`write_vtu_file`] declares them, with
/// [`GLOBAL_ID`] last) and the pieces' sources relative to the `.pvtu`.
fn pvtu_text(folder: &str, pieces: usize, point_data: &[VtuArray]) -> String {
    let mut h = String::from("<?xml version=\"1.0\"?>\n");
    h.push_str(
        "<VTKFile type=\"PUnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" \
         header_type=\"UInt64\">\n",
    );
    h.push_str("  <PUnstructuredGrid GhostLevel=\"0\">\n");
    h.push_str("    <PPointData>\n");
    for array in point_data {
        // As the pieces declare them ([`write_vtu_file`]).
        let components = match array.data.components() {
            1 => String::new(),
            n => format!(" NumberOfComponents=\"{n}\""),
        };
        h.push_str(&format!(
            "      <PDataArray type=\"{}\" Name=\"{}\"{components}/>\n",
            array.data.vtk_type(),
            escape(array.name)
        ));
    }
    h.push_str(&format!(
        "      <PDataArray type=\"Int32\" Name=\"{GLOBAL_ID}\"/>\n"
    ));
    h.push_str("    </PPointData>\n");
    h.push_str("    <PCellData Scalars=\"ref\">\n");
    h.push_str("      <PDataArray type=\"Int32\" Name=\"ref\"/>\n");
    h.push_str("    </PCellData>\n");
    h.push_str("    <PPoints>\n");
    h.push_str("      <PDataArray type=\"Float64\" Name=\"Points\" NumberOfComponents=\"3\"/>\n");
    h.push_str("    </PPoints>\n");
    for k in 0..pieces {
        h.push_str(&format!(
            "    <Piece Source=\"{}/{}\"/>\n",
            escape(folder),
            piece_name(k)
        ));
    }
    h.push_str("  </PUnstructuredGrid>\n");
    h.push_str("</VTKFile>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    type Tetrahedra = Vec<([u32; 4], i32)>;
    type Triangles = Vec<([u32; 3], i32)>;

    /// Two tetrahedra sharing the face (1, 2, 3), its triangle, and a point no cell uses.
    fn mesh() -> (Tetrahedra, Triangles) {
        (
            vec![([0, 1, 2, 3], 1), ([4, 3, 2, 1], 2)],
            vec![([3, 2, 1], 7)],
        )
    }

    #[test]
    fn every_cell_is_in_one_piece_and_every_point_in_one_at_least() {
        let (tets, tris) = mesh();
        let owner = [0, 1, 1, 0, 1, 1];
        let pieces = split(6, &owner, 2, &tets, &tris).unwrap();
        // Tetrahedron 0's smallest node 0 is piece 0's; tetrahedron 1's and the triangle's
        // smallest node 1 is piece 1's.
        assert_eq!(pieces[0].points, [0, 1, 2, 3]);
        assert_eq!(pieces[0].tetrahedra, [([0, 1, 2, 3], 1)]);
        assert!(pieces[0].triangles.is_empty());
        // Piece 1: its cells' points, the point 3 it shares with piece 0, and its own point
        // 5 that no cell uses.
        assert_eq!(pieces[1].points, [1, 2, 3, 4, 5]);
        assert_eq!(pieces[1].tetrahedra, [([3, 2, 1, 0], 2)]);
        assert_eq!(pieces[1].triangles, [([2, 1, 0], 7)]);
        // Put back together by the global ids: the cells as given.
        let global = |p: &Piece, n: u32| p.points[n as usize];
        let back: Vec<[u32; 4]> = pieces
            .iter()
            .flat_map(|p| {
                p.tetrahedra
                    .iter()
                    .map(move |(t, _)| t.map(|n| global(p, n)))
            })
            .collect();
        assert_eq!(back, [[0, 1, 2, 3], [4, 3, 2, 1]]);
    }

    #[test]
    fn one_piece_is_the_whole_mesh() {
        let (tets, tris) = mesh();
        let pieces = split(6, &[0; 6], 1, &tets, &tris).unwrap();
        assert_eq!(pieces[0].points, [0, 1, 2, 3, 4, 5]);
        assert_eq!(pieces[0].tetrahedra, tets);
        assert_eq!(pieces[0].triangles, tris);
    }

    #[test]
    fn bad_owners_and_nodes_are_named() {
        let (tets, tris) = mesh();
        let e = split(6, &[0; 5], 2, &tets, &tris).unwrap_err();
        assert_eq!(e.to_string(), "5 owners for 6 points");
        let e = split(6, &[0, 0, 0, 2, 0, 0], 2, &tets, &tris).unwrap_err();
        assert_eq!(
            e.to_string(),
            "point 3 is owned by piece 2, but there are 2 pieces"
        );
        let e = split(4, &[0; 4], 1, &tets, &tris).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a cell uses point 4, but the mesh has 4 points"
        );
    }

    #[test]
    fn a_piece_that_does_not_fit_its_mesh_is_refused_before_anything_is_written() {
        let dir = std::env::temp_dir().join(format!("snowsim-pvtu-unit-{}", std::process::id()));
        let path = dir.join("bad.pvtu");
        let points = [[0.0; 3]; 4];
        let bad = Piece {
            points: vec![0, 1, 2, 7],
            ..Piece::default()
        };
        let e = write_pvtu_file(&path, &points, &[bad], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "piece 0: it names point 7, but the mesh has 4"
        );
        let bad = Piece {
            points: vec![0, 1],
            tetrahedra: vec![([0, 1, 2, 1], 1)],
            ..Piece::default()
        };
        let e = write_pvtu_file(&path, &points, &[bad], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "piece 0: a cell uses its point 2, but it has 2"
        );
        assert!(!dir.exists());
    }

    #[test]
    fn the_pieces_folder_and_names_follow_the_pvtu() {
        let dir = pieces_dir(Path::new("out/state.pvtu"));
        assert_eq!(dir, Path::new("out/state"));
        assert_eq!(piece_name(3), "piece_00003.vtu");
        assert!(is_pvtu(Path::new("a/B.PVTU")) && !is_pvtu(Path::new("a/b.vtu")));
        let speed = [0.0f32; 2];
        let text = pvtu_text("state", 2, &[VtuArray::scalars("a<b", &speed)]);
        assert!(text.contains("<PDataArray type=\"Float32\" Name=\"a&lt;b\"/>"));
        assert!(text.contains("<Piece Source=\"state/piece_00001.vtu\"/>"));
        assert!(!text.contains("piece_00002"));
    }
}
