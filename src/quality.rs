//! Element quality of a mesh, computed on an OpenCL device by a gml kernel.
//!
//! The quality of a tetrahedron is `12·(3V)^(2/3) / Σ edge²`, signed like its volume `V`
//! (negative for an inverted tetrahedron); that of a triangle is `4√3·area / Σ edge²`. Both are 1
//! for the regular element and tend to 0 as it flattens. The kernel calls the toolkit's
//! `CalTetQal` and `CalTriQal` (kernels/gml_toolkit.cl) in single precision by default, or
//! `CalTetQalF64` and `CalTriQalF64` (kernels/gml_toolkit_f64.cl) on double-precision
//! coordinates with [`Precision::F64`] (`snowsim mesh quality --precision f64`). Both compute
//! on the element's edge vectors scaled by a power of two to unit size, so an element scores
//! as its shape does whatever its size (unscaled, f32 gave 0 for a well-shaped tetrahedron
//! with 1e-30 m edges: its squared edges and volume underflow).
//!
//! Only one kind is measured: the tetrahedra when the mesh has any, the triangles otherwise
//! (planar meshes lie in z = 0). The minimum, maximum and sum of the qualities are gml
//! reductions on the device; the histogram is counted on the host from the qualities read back.
//!
//! ```no_run
//! use snowsim::cl::{Context, DeviceSelector};
//! use snowsim::{meshio, quality};
//!
//! let context = Context::from_selector(&DeviceSelector::Default)?;
//! let file = meshio::read(std::path::Path::new("sample_meshes/cube.meshb"))?;
//! let q = quality::measure(&context, &file.mesh)?;
//! println!("{} {}: min {:.3}, mean {:.3}", q.values.len(), q.kind, q.min, q.mean);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::cl::Context;
use crate::gml::{Access, Data, Gml, GmlError, KernelSpec, MeshKind, ReducibleScalar, Reduction};
use crate::meshio::{CoordinateError, ElementKind, Mesh};

/// The largest coordinate magnitude measured or smoothed: the kernels compute in 32-bit reals,
/// and a tetrahedron's volume is a product of three coordinate differences, which overflows
/// `f32` (3.4e38) beyond about 7e12. Larger coordinates would give `inf`, `NaN` or zeros.
pub const MAX_COORDINATE: f64 = 1e12;

/// The precision the qualities are computed in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// `float`: GMlib's `float4` coordinates, single-precision arithmetic.
    #[default]
    F32,
    /// `double`: the mesh's coordinates as `double4`, double-precision arithmetic and
    /// reductions (needs FP64 on the device).
    F64,
}

/// Number of histogram bins over `[0, 1]`, each 0.1 wide.
pub const HISTOGRAM_BINS: usize = 10;

/// What went wrong while measuring quality.
#[derive(Debug, thiserror::Error)]
pub enum QualityError {
    /// The mesh has no element whose quality is defined here.
    #[error("the mesh has neither tetrahedra nor triangles (it has {})", kinds_list(.present))]
    NoElements {
        /// The element kinds the mesh does have (may be empty).
        present: Vec<ElementKind>,
    },
    /// A coordinate is not finite or exceeds [`MAX_COORDINATE`].
    #[error(transparent)]
    Coordinates(#[from] CoordinateError),
    /// The device computation failed (device, kernel build or launch, transfer).
    #[error("quality kernel: {0}")]
    Gml(#[from] GmlError),
}

/// `quadrilaterals, hexahedra`, or `no elements at all`.
pub(crate) fn kinds_list(kinds: &[ElementKind]) -> String {
    if kinds.is_empty() {
        "no elements at all".to_string()
    } else {
        kinds
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The element kinds `mesh` holds at least one element of.
pub(crate) fn present_kinds(mesh: &Mesh) -> Vec<ElementKind> {
    ElementKind::ALL
        .into_iter()
        .filter(|&k| mesh.count(k) > 0)
        .collect()
}

/// The kind that quality and smoothing work on: tetrahedra when the mesh has any, else
/// triangles, else `None`.
pub fn measured_kind(mesh: &Mesh) -> Option<ElementKind> {
    [ElementKind::Tetrahedra, ElementKind::Triangles]
        .into_iter()
        .find(|&k| mesh.count(k) > 0)
}

/// The quality of every element of one kind, with its statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct Quality {
    /// The kind measured: [`ElementKind::Tetrahedra`] or [`ElementKind::Triangles`].
    pub kind: ElementKind,
    /// One quality per element, in the mesh's element order, as the device computed it (in
    /// the precision asked for; f32 values are exact in f64).
    pub values: Vec<f64>,
    /// The precision they were computed in.
    pub precision: Precision,
    /// Smallest quality (a device reduction).
    pub min: f64,
    /// Mean quality: the device's sum reduction divided by the element count.
    pub mean: f64,
    /// Largest quality (a device reduction).
    pub max: f64,
    /// Element counts per bin, see [`histogram`].
    pub histogram: [usize; HISTOGRAM_BINS],
}

/// Counts `values` in [`HISTOGRAM_BINS`] bins of width 0.1 over `[0, 1]`.
///
/// Bin `i` holds `[i/10, (i+1)/10)`, and the last bin also holds 1. Values outside `[0, 1]`
/// are clamped into the end bins: negative ones (inverted tetrahedra) and NaN count in the first
/// bin, values above 1 in the last.
pub fn histogram<T: Copy + Into<f64>>(values: &[T]) -> [usize; HISTOGRAM_BINS] {
    let mut bins = [0; HISTOGRAM_BINS];
    let last = HISTOGRAM_BINS - 1;
    for &q in values {
        let x = (q.into() * HISTOGRAM_BINS as f64).floor();
        // `as usize` saturates: negative values and NaN become 0.
        let bin = (x as usize).min(last);
        bins[bin] += 1;
    }
    bins
}

/// Measures the quality of the tetrahedra of `mesh` (or of its triangles when it has no
/// tetrahedra) on the device of `context`, in a gml instance of its own.
///
/// Fails with [`QualityError::NoElements`] when the mesh has neither kind, and with
/// [`QualityError::Coordinates`] when a coordinate is not finite or exceeds
/// [`MAX_COORDINATE`].
pub fn measure(context: &Context, mesh: &Mesh) -> Result<Quality, QualityError> {
    measure_with(context, mesh, Precision::F32)
}

/// Like [`measure`], in the precision asked for; [`Precision::F64`] on a device without FP64
/// is [`GmlError::NoFp64`].
pub fn measure_with(
    context: &Context,
    mesh: &Mesh,
    precision: Precision,
) -> Result<Quality, QualityError> {
    let kind = measured_kind(mesh).ok_or_else(|| QualityError::NoElements {
        present: present_kinds(mesh),
    })?;
    mesh.validate_coordinates(MAX_COORDINATE)?;
    let loop_kind = MeshKind::from_element(kind);
    let mut gml = Gml::with_context(context.clone());
    // Only the vertices and the measured kind go to the device.
    gml.import_kinds(mesh, &[kind])?;
    let tetrahedra = kind == ElementKind::Tetrahedra;
    let (values, min, max, sum) = match precision {
        Precision::F32 => {
            let vertices = gml.mesh(MeshKind::Vertices)?;
            let body = if tetrahedra {
                "TetQal = CalTetQal(TetCrd[0], TetCrd[1], TetCrd[2], TetCrd[3]);"
            } else {
                "TriQal = CalTriQal(TriCrd[0], TriCrd[1], TriCrd[2]);"
            };
            qualities::<f32>(&mut gml, loop_kind, vertices, "element_quality", body)?
        }
        Precision::F64 => {
            let coordinates = gml.new_coordinates_f64("Crd64", &mesh.vertices)?;
            let body = if tetrahedra {
                "TetQal = CalTetQalF64(TetCrd64[0], TetCrd64[1], TetCrd64[2], TetCrd64[3]);"
            } else {
                "TriQal = CalTriQalF64(TriCrd64[0], TriCrd64[1], TriCrd64[2]);"
            };
            qualities::<f64>(
                &mut gml,
                loop_kind,
                coordinates,
                "element_quality_f64",
                body,
            )?
        }
    };
    Ok(Quality {
        kind,
        min,
        mean: sum / values.len() as f64,
        max,
        histogram: histogram(&values),
        values,
        precision,
    })
}

/// Runs the quality kernel `body` (which writes `<Loop>Qal` from the `coordinates` it reads)
/// over `loop_kind` into a field of `T`, and returns the values with their device min, max
/// and sum.
fn qualities<T: ReducibleScalar + Into<f64>>(
    gml: &mut Gml,
    loop_kind: MeshKind,
    coordinates: impl Data,
    name: &str,
    body: &str,
) -> Result<(Vec<f64>, f64, f64, f64), GmlError> {
    let values = gml.new_solution::<T>(loop_kind, 1, "Qal")?;
    let kernel = gml.compile(
        KernelSpec::new(name, loop_kind)
            .access(Access::read(coordinates))
            .access(Access::write(values))
            .body(body),
    )?;
    gml.launch(kernel)?;
    let min = gml.reduce(values, Reduction::Min)?;
    let max = gml.reduce(values, Reduction::Max)?;
    let sum = gml.reduce(values, Reduction::Sum)?;
    let values = gml.read_all(values)?.into_iter().map(Into::into).collect();
    Ok((values, min, max, sum))
}
