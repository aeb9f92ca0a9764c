//! Vertex smoothing on an OpenCL device: each iteration moves every free vertex to the mean of
//! the barycentres of its incident elements, as a gml scatter/gather pair.
//!
//! The elements are the tetrahedra when the mesh has any (a volume mesh), else the triangles (a
//! surface or planar mesh). One iteration is two kernels:
//!
//! 1. a *scatter* kernel over the elements writes each element's barycentre (`TetBar`/`TriBar`);
//! 2. a *gather* kernel over the vertices sums the barycentres of the vertex's ball through the
//!    uplink (`VerTetBar[i]`, `i < VerTetDegMax`, zero past `VerTetDeg`), divides by the degree
//!    and writes the new position, and its displacement for a max reduction.
//!
//! Every iteration reads the positions the previous one wrote (a Jacobi iteration). Vertices
//! stay where they are when they are on the boundary (see [`fixed_vertices`]) or belong to no
//! element of the smoothed kind; their coordinates in the result are the input's, bit for bit
//! (the device works in `f32`, the mesh holds `f64`).
//!
//! ```no_run
//! use snowsim::cl::{Context, DeviceSelector};
//! use snowsim::{meshio, smoothing};
//!
//! let context = Context::from_selector(&DeviceSelector::Default)?;
//! let file = meshio::read(std::path::Path::new("sample_meshes/square_2d.meshb"))?;
//! let smoothed = smoothing::smooth(&context, &file.mesh, 5, |p| {
//!     println!("iteration {}: max displacement {:.2e}", p.iteration, p.max_displacement)
//! })?;
//! meshio::write(std::path::Path::new("smooth.meshb"), &smoothed.mesh, file.version)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::cl::Context;
use crate::gml::{Access, Gml, GmlError, KernelSpec, MeshKind, Reduction};
use crate::meshio::{CoordinateError, ElementKind, Mesh};
use std::collections::VecDeque;
use std::ops::ControlFlow;

use crate::quality::{MAX_COORDINATE, kinds_list, measured_kind, present_kinds};

/// What went wrong while smoothing.
#[derive(Debug, thiserror::Error)]
pub enum SmoothingError {
    /// The mesh has no element kind smoothing works on.
    #[error("the mesh has neither tetrahedra nor triangles (it has {})", kinds_list(.present))]
    NoElements {
        /// The element kinds the mesh does have (may be empty).
        present: Vec<ElementKind>,
    },
    /// A coordinate is not finite or exceeds [`MAX_COORDINATE`].
    #[error(transparent)]
    Coordinates(#[from] CoordinateError),
    /// The progress callback of [`smooth_while`] asked to stop.
    #[error("smoothing stopped after iteration {iteration}")]
    Stopped {
        /// The last iteration done.
        iteration: usize,
    },
    /// The device computation failed (device, kernel build or launch, transfer).
    #[error("smoothing kernels: {0}")]
    Gml(#[from] GmlError),
}

/// How many iterations' largest displacements [`Smoothed::max_displacements`] keeps (the
/// last ones), so that memory does not grow with the iteration count.
pub const KEPT_DISPLACEMENTS: usize = 1 << 16;

/// Reported after each iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// The iteration just done, from 1.
    pub iteration: usize,
    /// Iterations asked for.
    pub iterations: usize,
    /// Largest distance a vertex moved in this iteration (a device max reduction).
    pub max_displacement: f64,
}

/// The result of [`smooth`].
#[derive(Clone, Debug, PartialEq)]
pub struct Smoothed {
    /// The input mesh with the free vertices moved; everything else (other element kinds,
    /// references, dimension, fixed vertices) is the input's.
    pub mesh: Mesh,
    /// The element kind whose barycentres drove the smoothing.
    pub kind: ElementKind,
    /// Per vertex: whether it stayed in place (boundary, or in no element of `kind`).
    pub fixed: Vec<bool>,
    /// The largest displacement of each iteration, in order: of every iteration when there
    /// were at most [`KEPT_DISPLACEMENTS`], else of the last [`KEPT_DISPLACEMENTS`].
    pub max_displacements: Vec<f64>,
}

/// Marks the boundary vertices of `kind`'s elements in `mesh`: for triangles, the vertices of
/// an edge with one incident triangle; for tetrahedra, the vertices of a face with one incident
/// tetrahedron. An edge or face with more than two incident elements (non-manifold) is treated
/// as boundary as well, and so are, for other kinds, no vertices at all.
///
/// Counted on the host by sorting the elements' edges or faces.
pub fn boundary_vertices(mesh: &Mesh, kind: ElementKind) -> Vec<bool> {
    let mut boundary = vec![false; mesh.vertices.len()];
    let elements = mesh.elements(kind);
    match kind {
        ElementKind::Triangles => {
            let mut edges: Vec<[u32; 2]> = Vec::with_capacity(3 * elements.len());
            for (nodes, _) in elements.iter() {
                for local in kind.edges() {
                    let (a, b) = (nodes[local[0]], nodes[local[1]]);
                    edges.push([a.min(b), a.max(b)]);
                }
            }
            mark_unpaired(&mut edges, &mut boundary);
        }
        ElementKind::Tetrahedra => {
            let mut faces: Vec<[u32; 3]> = Vec::with_capacity(4 * elements.len());
            for (nodes, _) in elements.iter() {
                for local in kind.faces() {
                    let mut face = [0, 1, 2].map(|k| nodes[local[k]]);
                    face.sort_unstable();
                    faces.push(face);
                }
            }
            mark_unpaired(&mut faces, &mut boundary);
        }
        _ => {}
    }
    boundary
}

/// Sorts `keys` (sorted vertex lists) and marks the vertices of those not found exactly twice.
fn mark_unpaired<const N: usize>(keys: &mut [[u32; N]], boundary: &mut [bool]) {
    keys.sort_unstable();
    for run in keys.chunk_by(|a, b| a == b) {
        if run.len() != 2 {
            for &v in &run[0] {
                boundary[v as usize] = true;
            }
        }
    }
}

/// The vertices [`smooth`] keeps in place: the boundary of `kind` and the vertices no element of
/// `kind` uses.
pub fn fixed_vertices(mesh: &Mesh, kind: ElementKind) -> Vec<bool> {
    let mut fixed = boundary_vertices(mesh, kind);
    let mut used = vec![false; mesh.vertices.len()];
    for &v in mesh.elements(kind).node_slice() {
        used[v as usize] = true;
    }
    for (f, u) in fixed.iter_mut().zip(used) {
        *f |= !u;
    }
    fixed
}

/// The gather kernel's body, `Ele` standing for the smoothed kind's short name.
const GATHER_BODY: &str = "\
if (VerFix == 0 && VerEleDeg > 0) {
    float4 sum = (float4)(0.0f);
    for (int i = 0; i < VerEleDegMax; i++) sum += VerEleBar[i];
    const float4 moved = sum / (float)VerEleDeg;
    VerDsp = length((moved - VerCrd).xyz);
    VerCrd = moved;
}";

/// Smooths `mesh` for `iterations` iterations on the device of `context`, in a gml instance of
/// its own, calling `progress` after each iteration.
///
/// Fails with [`SmoothingError::NoElements`] when the mesh has neither tetrahedra nor
/// triangles, with [`SmoothingError::Coordinates`] when a coordinate is not finite or exceeds
/// [`MAX_COORDINATE`], and with [`SmoothingError::Gml`] when the device fails or an element
/// uses a vertex the mesh lacks.
///
/// Memory does not grow with `iterations`: the result keeps the largest displacement of the
/// last [`KEPT_DISPLACEMENTS`] iterations only (`progress` sees every one).
pub fn smooth(
    context: &Context,
    mesh: &Mesh,
    iterations: usize,
    mut progress: impl FnMut(Progress),
) -> Result<Smoothed, SmoothingError> {
    smooth_while(context, mesh, iterations, |p| {
        progress(p);
        ControlFlow::Continue(())
    })
}

/// [`smooth`], stopping with [`SmoothingError::Stopped`] when `progress` returns
/// [`ControlFlow::Break`] (say, because its report could not be written).
pub fn smooth_while(
    context: &Context,
    mesh: &Mesh,
    iterations: usize,
    mut progress: impl FnMut(Progress) -> ControlFlow<()>,
) -> Result<Smoothed, SmoothingError> {
    let kind = measured_kind(mesh).ok_or_else(|| SmoothingError::NoElements {
        present: present_kinds(mesh),
    })?;
    mesh.validate_coordinates(MAX_COORDINATE)?;
    let loop_kind = MeshKind::from_element(kind);
    let mut gml = Gml::with_context(context.clone());
    // Checks every node index before `fixed_vertices` indexes with them.
    gml.import_kinds(mesh, &[kind])?;
    let fixed = fixed_vertices(mesh, kind);

    let flags: Vec<i32> = fixed.iter().map(|&f| i32::from(f)).collect();
    let fix = gml.new_solution::<i32>(MeshKind::Vertices, 1, "Fix")?;
    gml.set_block(fix, 0, &flags)?;
    let bar = gml.new_solution::<[f32; 4]>(loop_kind, 1, "Bar")?;
    let displacement = gml.new_solution::<f32>(MeshKind::Vertices, 1, "Dsp")?;
    let vertices = gml.mesh(MeshKind::Vertices)?;

    let l = loop_kind.short();
    let n = kind.nodes();
    let sum: Vec<String> = (0..n).map(|i| format!("{l}Crd[{i}]")).collect();
    let scatter = gml.compile(
        KernelSpec::new("smooth_scatter", loop_kind)
            .access(Access::read(vertices))
            .access(Access::write(bar))
            .body(&format!("{l}Bar = ({}) / {n}.0f;", sum.join(" + "))),
    )?;
    let gather = gml.compile(
        KernelSpec::new("smooth_gather", MeshKind::Vertices)
            .access(Access::read_write(vertices))
            .access(Access::read(fix))
            .access(Access::read(bar))
            .access(Access::write(displacement))
            .body(&GATHER_BODY.replace("VerEle", &format!("Ver{l}"))),
    )?;

    let mut max_displacements = VecDeque::with_capacity(iterations.min(KEPT_DISPLACEMENTS));
    for iteration in 1..=iterations {
        gml.launch(scatter)?;
        gml.launch(gather)?;
        let max_displacement = gml.reduce(displacement, Reduction::Max)?;
        if max_displacements.len() == KEPT_DISPLACEMENTS {
            max_displacements.pop_front();
        }
        max_displacements.push_back(max_displacement);
        let report = Progress {
            iteration,
            iterations,
            max_displacement,
        };
        if progress(report).is_break() {
            return Err(SmoothingError::Stopped { iteration });
        }
    }

    let mut smoothed = mesh.clone();
    if iterations > 0 {
        let (coordinates, _) = gml.vertices()?;
        for ((p, q), &f) in smoothed.vertices.iter_mut().zip(&coordinates).zip(&fixed) {
            if !f {
                *p = q.map(f64::from);
            }
        }
    }
    Ok(Smoothed {
        mesh: smoothed,
        kind,
        fixed,
        max_displacements: max_displacements.into(),
    })
}
