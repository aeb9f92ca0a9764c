//! Terrain domains: heightmaps, the terrain-following tetrahedral mesh of the air above them,
//! and the ground surface.
//!
//! The domain is `[0, X] × [0, Y]` horizontally (x east, y north, z up, metres), from the
//! ground up to a flat top at `z = Z`. The ground height is `relief × heightmap(x, y)`, read
//! from an 8- or 16-bit grayscale PNG ([`Heightmap`]) and sampled at the corners of
//! `nx × ny` cells; each cell is split into two triangles along the diagonal that follows the
//! terrain ([`Terrain::ground_triangles`]). Above each ground triangle stands a column of
//! `nz` prisms whose levels follow the terrain, thinnest at the ground when `grading > 1`,
//! and each prism is split into three tetrahedra by a rule on global vertex indices that makes
//! neighbouring prisms agree on their shared faces ([`Terrain::volume_mesh`]). Every
//! tetrahedron has positive volume (`(b-a)×(c-a)·(d-a) > 0`, libMeshb's orientation).
//!
//! # Boundary references
//!
//! Boundary triangles face out of the domain and carry these references ([`Side`]), the same
//! numbers [`tet_grid`](crate::meshio::generate::tet_grid) gives the faces of its box, so a box
//! is a flat terrain to the solver:
//!
//! | reference | side | where |
//! | ---: | --- | --- |
//! | 1 | `x_min` (west) | `x = 0` |
//! | 2 | `x_max` (east) | `x = X` |
//! | 3 | `y_min` (south) | `y = 0` |
//! | 4 | `y_max` (north) | `y = Y` |
//! | 5 | `ground` | the terrain surface |
//! | 6 | `top` | `z = Z` |
//!
//! Tetrahedra have reference [`AIR_REF`] (1); vertices 0.
//!
//! ```
//! use snowsim::meshio::ElementKind;
//! use snowsim::terrain::{Heightmap, Terrain, TerrainSpec};
//!
//! let map = Heightmap::from_fn(33, 33, |u, v| 0.5 + 0.5 * (6.0 * u).sin() * (4.0 * v).cos());
//! let spec = TerrainSpec { size: [1000.0, 800.0, 600.0], relief: 200.0, cells: [8, 8],
//!                          layers: 5, grading: 1.2 };
//! let terrain = Terrain::new(spec, Some(&map))?;
//! let air = terrain.volume_mesh();
//! assert_eq!(air.count(ElementKind::Tetrahedra), 6 * 8 * 8 * 5);
//! let ground = terrain.ground_surface();
//! assert_eq!(ground.mesh.count(ElementKind::Triangles), 2 * 8 * 8);
//! # Ok::<(), snowsim::terrain::TerrainError>(())
//! ```

mod columns;
mod footprint;
mod grid;
mod heightmap;
mod mesher;
pub mod procedural;
mod surface;

use std::fmt;
use std::path::PathBuf;

pub use columns::{Columns, MAX_RAISE, Regraded};
pub use footprint::{CHECK_BYTES_PER_TETRAHEDRON, TETRAHEDRON_BYTES, TRIANGLE_BYTES, VERTEX_BYTES};
pub use grid::{Heightfield, SceneBox};
pub use heightmap::{Heightmap, MAX_FILE_BYTES, MAX_SIDE};
pub use mesher::{MAX_ENTITIES, MAX_GRADING_SPAN, Terrain, TerrainSpec};
pub use surface::extract_surface;

use glam::DVec3;

use crate::meshio::Mesh;
use crate::output::OutputError;

/// The reference of every tetrahedron of a terrain mesh: air.
pub const AIR_REF: i32 = 1;

/// The six boundaries of a terrain domain, each with its triangles' reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// `x = 0`, the west side: reference 1.
    XMin,
    /// `x = X`, the east side: reference 2.
    XMax,
    /// `y = 0`, the south side: reference 3.
    YMin,
    /// `y = Y`, the north side: reference 4.
    YMax,
    /// The terrain surface: reference 5.
    Ground,
    /// The flat top `z = Z`: reference 6.
    Top,
}

impl Side {
    /// Every side, by reference.
    pub const ALL: [Side; 6] = [
        Side::XMin,
        Side::XMax,
        Side::YMin,
        Side::YMax,
        Side::Ground,
        Side::Top,
    ];

    /// The boundary triangles' reference, 1 to 6.
    pub fn reference(self) -> i32 {
        self as i32 + 1
    }

    /// The side with boundary reference `reference`, if any.
    pub fn from_reference(reference: i32) -> Option<Side> {
        Self::ALL.into_iter().find(|s| s.reference() == reference)
    }

    /// The name used in scene files: `x_min`, `x_max`, `y_min`, `y_max`, `ground`, `top`.
    pub fn name(self) -> &'static str {
        match self {
            Side::XMin => "x_min",
            Side::XMax => "x_max",
            Side::YMin => "y_min",
            Side::YMax => "y_max",
            Side::Ground => "ground",
            Side::Top => "top",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A ground surface mesh, for rendering and for the snow that settles on it.
#[derive(Clone, Debug, PartialEq)]
pub struct GroundSurface {
    /// Triangles turning counter-clockwise seen from the air (normals up, out of the ground).
    pub mesh: Mesh,
    /// For each surface vertex, the volume mesh vertex at the same place.
    pub volume_vertices: Vec<u32>,
}

/// What can go wrong reading a heightmap or meshing a terrain.
#[derive(Debug, thiserror::Error)]
pub enum TerrainError {
    /// A grid of heights is too small, empty, not finite or inconsistent.
    #[error("invalid ground grid: {0}")]
    InvalidGrid(String),
    /// The heightmap file cannot be read: missing, not a regular file, or larger than
    /// [`MAX_FILE_BYTES`].
    #[error("cannot read heightmap {}: {error}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
    /// The file does not start with the PNG signature.
    #[error("heightmap {} is not a PNG file (heightmaps are 8- or 16-bit grayscale PNG)", path.display())]
    NotPng {
        /// The file.
        path: PathBuf,
    },
    /// The PNG data is corrupt or truncated.
    #[error("heightmap {}: cannot decode the PNG: {message}", path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// The decoder's message.
        message: String,
    },
    /// The PNG is not grayscale.
    #[error(
        "heightmap {} is {found}; a heightmap must be 8- or 16-bit grayscale without alpha \
         (convert it, e.g. `convert in.png -colorspace Gray -depth 16 out.png`)",
        path.display()
    )]
    NotGrayscale {
        /// The file.
        path: PathBuf,
        /// What it is, e.g. `RGB, 8 bits per channel`.
        found: String,
    },
    /// Fewer than 2 pixels one way: nothing to interpolate between.
    #[error("heightmap {} is {width} × {height} pixels; it needs at least 2 × 2", path.display())]
    TooSmall {
        /// The file.
        path: PathBuf,
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// More than [`MAX_SIDE`] pixels one way.
    #[error(
        "heightmap {} is {width} × {height} pixels; at most {MAX_SIDE} each way are read",
        path.display()
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// A file cannot be written (the message names it).
    #[error("{error}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why (shown in the message, so not chained as a source).
        error: OutputError,
    },
    /// A number of the terrain specification is out of range.
    #[error("{field}: {message}")]
    Spec {
        /// The field of [`TerrainSpec`] at fault (`size`, `relief`, `cells`, `layers`,
        /// `grading`).
        field: &'static str,
        /// What is wrong, with the value.
        message: String,
    },
    /// A ground surface cannot be extracted from a volume mesh.
    #[error("ground surface: {0}")]
    Surface(String),
}

/// Six times the signed volume of tetrahedron `abcd`.
pub(crate) fn tet_volume6(a: [f64; 3], b: [f64; 3], c: [f64; 3], d: [f64; 3]) -> f64 {
    let [a, b, c, d] = [a, b, c, d].map(DVec3::from_array);
    (b - a).dot((c - a).cross(d - a))
}
