//! `snowsim mesh …`: inspect, check, convert INRIA mesh files; measure and smooth them on a
//! device.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::json;
use snowsim::budget::{Budget, Estimate};
use snowsim::cl::Context;
use snowsim::inspect::{CheckReport, Summary, check};
use snowsim::meshio::{self, ElementKind, Mesh, Version};
use snowsim::output;
use snowsim::quality::{self, HISTOGRAM_BINS, Quality};
use snowsim::renumber::{self, numbering_score};
use snowsim::smoothing::{self, Progress};
use snowsim::terrain::{Heightmap, Side, Terrain, TerrainError, TerrainSpec};

use super::DeviceArg;
use super::console::{ConsoleError, errln, outln};

/// The `mesh` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print format, version, dimension, counts per kind, bounding box and references of a
    /// .mesh/.meshb file; with --check, also validate it. For a .sol/.solb solution file, list
    /// each SolAt… keyword with its count and field types.
    Info(InfoArgs),
    /// Convert between ASCII .mesh and binary .meshb, or between ASCII .sol and binary .solb
    /// solution files (chosen by each file's extension).
    Convert(ConvertArgs),
    /// Element quality, computed on a device: of the tetrahedra, or of the triangles when the
    /// mesh has no tetrahedra. Prints count, min, mean, max and a histogram.
    #[command(
        long_about = "Element quality, computed on a device by a gml kernel: of the tetrahedra, \
                      or of the triangles when the mesh has no tetrahedra (a planar mesh lies in \
                      z = 0).\n\n\
                      Tetrahedra: 12*(3V)^(2/3) / (sum of squared edges), negative for an \
                      inverted tetrahedron. Triangles: 4*sqrt(3)*area / (sum of squared edges). \
                      Both are 1 for the regular element and near 0 for a flat one.\n\n\
                      Prints the element count, the min, mean and max quality (device \
                      reductions) and a histogram of 10 bins of width 0.1 over [0, 1], counted \
                      from the qualities read back: bin [0.9, 1.0] includes 1; values outside \
                      [0, 1] are clamped into the end bins: below 0 (inverted tetrahedra) into \
                      the first, above 1 (32-bit rounding of a regular element) into the last."
    )]
    Quality(QualityArgs),
    /// Smooth a mesh on a device: move every non-boundary vertex to the mean of the
    /// barycentres of its elements (tetrahedra, else triangles), N times.
    #[command(
        long_about = "Smooth a mesh on a device. Each iteration moves every non-boundary vertex \
                      to the mean of the barycentres of its incident elements: the tetrahedra of \
                      a volume mesh, else the triangles of a surface or planar mesh (a scatter \
                      kernel over the elements and a gather kernel over the vertices). Boundary \
                      vertices stay, bit for bit: for triangles those on an edge with one \
                      incident triangle, for tetrahedra those on a face with one incident \
                      tetrahedron (edges and faces with more than two elements count as \
                      boundary too); so do vertices in no such element.\n\n\
                      Prints each iteration's largest vertex displacement. OUT keeps every other \
                      part of the input (other element kinds, references, dimension) and its \
                      version, except that a version 1 input whose coordinates do not fit 32-bit \
                      reals is written as version 2. Moved vertices are computed in 32-bit reals."
    )]
    Smooth(SmoothArgs),
    /// Renumber a mesh for GPU kernels: vertices and elements along a 3D Hilbert curve,
    /// vertices (and edges) grouped by uplink degree class (LPlib's `hilbert -gmlib`).
    #[command(
        long_about = "Renumber a mesh for GPU kernels, as LPlib's `hilbert -gmlib` does for \
                      GMlib.\n\n\
                      Vertices are ordered along a 3D Hilbert curve over the mesh's bounding \
                      cube, after grouping them by the degree class of their ball of elements of \
                      the highest dimension (classes of width 32, 64, 128, … for tetrahedra), so \
                      that each of gml's uplink tables is one contiguous range of vertices. \
                      Elements are ordered by the curve position of their barycentres; edges by \
                      the degree class of their shell first. Coordinates, references and each \
                      element's node order are kept: the output is the same mesh.\n\n\
                      Prints the uplink tables and the numbering score (simulated L1 cache \
                      hits, see `mesh info`) before and after. Shows a progress bar on \
                      terminals for meshes of a million entities or more."
    )]
    Renumber(RenumberArgs),
    /// Mesh the air above a terrain: tetrahedra between a heightmap's surface and a flat top,
    /// boundary triangles referenced 1 x_min, 2 x_max, 3 y_min, 4 y_max, 5 ground, 6 top.
    #[command(long_about = "Mesh the air above a terrain with tetrahedra.\n\n\
                      The ground height at (x, y) is relief × the heightmap's value there (black \
                      0, white 1; column 0 is x = 0, row 0 is y = Y), sampled at the corners of \
                      NX × NY cells, each cell split into two triangles along the diagonal that \
                      follows the terrain. Above each triangle stand NZ prisms up to the flat \
                      top z = Z, thinnest at the ground (each layer --grading times the one \
                      below), each split into 3 tetrahedra so that neighbours share faces: \
                      6 × NX × NY × NZ tetrahedra, all of positive volume, reference 1.\n\n\
                      Boundary triangles face outwards with references 1 (x = 0, west), \
                      2 (x = X, east), 3 (y = 0, south), 4 (y = Y, north), 5 (ground), \
                      6 (top). Vertex c of --surface is vertex c of the volume mesh unless \
                      --renumber is given.")]
    Terrain(TerrainArgs),
    /// Partition a mesh into K parts with METIS k-way (a terrain scene by whole columns) and
    /// report the edge cut, the balance and each part's halo; write each vertex's part as a
    /// solution file.
    #[command(long_about = super::mesh_partition::LONG_ABOUT)]
    Partition(super::mesh_partition::PartitionArgs),
}

/// Options of `snowsim mesh info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// The .mesh or .meshb file (or a .sol or .solb solution file).
    file: PathBuf,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Validate the mesh (degenerate, inverted or tangled and duplicated elements, faces
    /// shared by more than two tetrahedra or by two overlapping ones); exit with status 3 if
    /// anything is wrong (1 is for files that cannot be read at all).
    #[arg(long)]
    check: bool,
}

/// Options of `snowsim mesh convert`.
#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// Input file (.mesh or .meshb; or .sol or .solb).
    input: PathBuf,
    /// Output file (.mesh or .meshb; or .sol or .solb for a solution input).
    output: PathBuf,
    /// Replace an existing output file that is not a mesh or solution file (without it the
    /// command refuses to start); the input is never replaced.
    #[arg(long)]
    force: bool,
    /// Format version of the output: 1 (32-bit reals), 2 (64-bit reals), 3 (64-bit positions),
    /// 4 (64-bit integers). Default: the input's version.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4))]
    version: Option<u32>,
    /// Dimension of the output: 2 writes x and y only (every z must be 0, as in planar meshes
    /// that gmsh writes with dimension 3); 3 writes all coordinates. Default: the input's.
    #[arg(long, value_parser = clap::value_parser!(u8).range(2..=3))]
    dimension: Option<u8>,
}

/// Options of `snowsim mesh quality`.
#[derive(Debug, clap::Args)]
pub struct QualityArgs {
    /// The .mesh or .meshb file (or a .sol or .solb solution file).
    file: PathBuf,
    #[command(flatten)]
    device: DeviceArg,
    /// Print a JSON object {"kind", "precision", "count", "min", "mean", "max", "histogram"}
    /// instead of text
    /// (kind "tetrahedra" or "triangles", histogram an array of 10 counts).
    #[arg(long)]
    json: bool,
    /// Compute in `f32` (GMlib's float coordinates) or `f64` (double coordinates and
    /// arithmetic, reductions in double; needs a device with FP64).
    #[arg(long, value_enum, default_value_t = PrecisionArg::F32)]
    precision: PrecisionArg,
}

/// `--precision` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PrecisionArg {
    F32,
    F64,
}

/// Options of `snowsim mesh smooth`.
#[derive(Debug, clap::Args)]
pub struct SmoothArgs {
    /// Input file (.mesh or .meshb).
    input: PathBuf,
    /// Output file (.mesh or .meshb; the format follows the extension).
    output: PathBuf,
    /// Replace an existing output file that is not a mesh or solution file (without it the
    /// command refuses to start); the input is never replaced.
    #[arg(long)]
    force: bool,
    /// Number of smoothing iterations (at least 1).
    #[arg(long, short = 'n', value_parser = clap::value_parser!(u32).range(1..))]
    iterations: u32,
    #[command(flatten)]
    device: DeviceArg,
}

/// Options of `snowsim mesh renumber`.
#[derive(Debug, clap::Args)]
pub struct RenumberArgs {
    /// Input file (.mesh or .meshb).
    input: PathBuf,
    /// Output file (.mesh or .meshb); the input's version is kept.
    output: PathBuf,
    /// Replace an existing output file that is not a mesh or solution file (without it the
    /// command refuses to start); the input is never replaced.
    #[arg(long)]
    force: bool,
    /// Order by the curve alone, without grouping vertices and edges by degree class.
    #[arg(long)]
    no_degree_sort: bool,
}

/// Options of `snowsim mesh terrain`.
#[derive(Debug, clap::Args)]
pub struct TerrainArgs {
    /// Heightmap: an 8- or 16-bit grayscale PNG. Without it the ground is flat at z = 0.
    #[arg(long)]
    heightmap: Option<PathBuf>,
    /// Extent X,Y of the domain and height Z of its flat top, in metres.
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_list::<f64, 3>, allow_hyphen_values = true)]
    size: [f64; 3],
    /// Height of a white heightmap pixel in metres (black is 0). Default: Z / 2.
    #[arg(long)]
    relief: Option<f64>,
    /// Cells along x and y.
    #[arg(long, value_name = "NX,NY", value_parser = parse_list::<usize, 2>, allow_hyphen_values = true)]
    cells: [usize; 2],
    /// Layers of prisms (of 3 tetrahedra) from the ground to the top.
    #[arg(long, value_name = "NZ")]
    layers: usize,
    /// Ratio of each layer's thickness to the one below (1 for uniform layers).
    #[arg(long, default_value_t = 1.1)]
    grading: f64,
    /// Output mesh (.meshb or .mesh).
    #[arg(long)]
    out: PathBuf,
    /// Also write the ground surface on its own: triangles with normals up, reference 5.
    #[arg(long)]
    surface: Option<PathBuf>,
    /// Replace an existing output file that is not a mesh or solution file (without it the
    /// command refuses to start); the input is never replaced.
    #[arg(long)]
    force: bool,
    /// Renumber the volume mesh for GPU kernels (as `mesh renumber`) before writing it.
    #[arg(long)]
    renumber: bool,
    /// Validate the volume mesh (as `mesh info --check`); exit with status 3 on a problem.
    #[arg(long)]
    check: bool,
}

/// Parses `a,b,c` into `N` values.
fn parse_list<T: std::str::FromStr, const N: usize>(text: &str) -> Result<[T; N], String>
where
    T::Err: std::fmt::Display,
{
    let values: Vec<T> = text
        .split(',')
        .map(|part| {
            let part = part.trim();
            part.parse::<T>().map_err(|e| {
                if part.starts_with('-') && part[1..].parse::<f64>().is_ok() {
                    format!("`{part}` is negative: must be a whole number, 0 or more")
                } else {
                    format!("`{part}`: {e}")
                }
            })
        })
        .collect::<Result<_, _>>()?;
    let count = values.len();
    values
        .try_into()
        .map_err(|_| format!("expected {N} comma-separated values, got {count}"))
}

/// Meshes with at least this many entities get a progress bar.
const PROGRESS_ENTITIES: usize = 1_000_000;

/// Exit status of `mesh info --check` when the mesh has problems.
const CHECK_FAILED: u8 = 3;

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Info(args) => info(args),
        Command::Convert(args) => convert(args),
        Command::Quality(args) => measure_quality(args),
        Command::Smooth(args) => smooth(args),
        Command::Renumber(args) => renumber_file(args),
        Command::Terrain(args) => terrain(args),
        Command::Partition(args) => super::mesh_partition::run(args),
    }
}

fn info(args: InfoArgs) -> anyhow::Result<ExitCode> {
    if is_solution(&args.file) {
        if args.check {
            bail!(
                "--check validates meshes; {} is a solution file",
                args.file.display()
            );
        }
        return solution_info(&args.file, args.json);
    }
    let file = meshio::read(&args.file)?;
    let summary = Summary::of(&file);
    let report = args.check.then(|| {
        let mut report = check(&file.mesh);
        if !file.ended {
            report.missing_end(&args.file);
        }
        report
    });
    let score = numbering_score(&file.mesh);
    if args.json {
        let mut value = serde_json::to_value(&summary)?;
        value["file"] = json!(args.file.display().to_string());
        value["numbering_score"] = json!(score.percent());
        if let Some(report) = &report {
            value["check"] = serde_json::to_value(report)?;
            value["check"]["passed"] = json!(report.passed());
        }
        outln!("{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        print_summary(&args.file, &summary)?;
        if let Some(percent) = score.percent() {
            outln!(
                "numbering score: {percent:.1} % of vertex reads hit a simulated L1 ({})",
                score.model.describe()
            )?;
        }
        if let Some(report) = &report {
            print_report(report)?;
        }
    }
    Ok(match report {
        Some(r) if !r.passed() => ExitCode::from(CHECK_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

fn print_summary(path: &std::path::Path, s: &Summary) -> Result<(), ConsoleError> {
    outln!("file:       {}", path.display())?;
    outln!(
        "format:     {} ({}), version {}, dimension {}",
        s.format,
        if s.format == "meshb" {
            "binary"
        } else {
            "ASCII"
        },
        s.version,
        s.dimension
    )?;
    let kinds = std::iter::once("vertices").chain(ElementKind::ALL.iter().map(|k| k.name()));
    for kind in kinds {
        if let (Some(count), Some(refs)) = (s.counts.get(kind), s.references.get(kind)) {
            outln!("{kind:<15} {count:>10}   references: {}", ref_list(refs))?;
        }
    }
    if let Some(b) = &s.bounding_box {
        outln!(
            "bounding box: [{}, {}] x [{}, {}] x [{}, {}]",
            b.min[0],
            b.max[0],
            b.min[1],
            b.max[1],
            b.min[2],
            b.max[2]
        )?;
    }
    if !s.skipped_keywords.is_empty() {
        outln!("skipped keywords: {}", s.skipped_keywords.join(", "))?;
    }
    Ok(())
}

/// `1 (120), 2 (118), …`, shortened after a dozen references.
fn ref_list(refs: &std::collections::BTreeMap<i32, usize>) -> String {
    const SHOWN: usize = 12;
    let mut parts: Vec<String> = refs
        .iter()
        .take(SHOWN)
        .map(|(r, n)| format!("{r} ({n})"))
        .collect();
    if refs.len() > SHOWN {
        parts.push(format!("… {} more", refs.len() - SHOWN));
    }
    parts.join(", ")
}

fn print_report(report: &CheckReport) -> Result<(), ConsoleError> {
    outln!("check:")?;
    if report.boundary_faces > 0 {
        outln!(
            "  boundary faces (one tetrahedron): {}",
            report.boundary_faces
        )?;
    }
    if report.passed() {
        outln!("  no problem found")?;
        return Ok(());
    }
    for (kind, count) in &report.counts {
        outln!("  {count} {kind}")?;
        for example in report.examples.iter().filter(|p| p.kind == *kind) {
            outln!("    {}", example.detail)?;
        }
        if *count > report.examples.iter().filter(|p| p.kind == *kind).count() {
            outln!("    …")?;
        }
    }
    Ok(())
}

fn convert(args: ConvertArgs) -> anyhow::Result<ExitCode> {
    if is_solution(&args.input) {
        if args.dimension.is_some() {
            bail!(
                "--dimension applies to meshes; {} is a solution file",
                args.input.display()
            );
        }
        return convert_solution(&args.input, &args.output, args.version, args.force);
    }
    check_mesh_output(&args.input, &args.output, args.force)?;
    let mut file = meshio::read(&args.input)?;
    if let Some(dimension) = args.dimension {
        if dimension == 2
            && let Some(i) = file.mesh.vertices.iter().position(|p| p[2] != 0.0)
        {
            bail!(
                "{}: vertex {} has z = {}; only a mesh with every z = 0 can be written in \
                 dimension 2",
                args.input.display(),
                i + 1,
                file.mesh.vertices[i][2]
            );
        }
        file.mesh.dimension = dimension;
    }
    let rounded = rounded_coordinates(&file.mesh);
    let version = match args.version {
        Some(n) => Version::from_number(n).with_context(|| format!("unknown version {n}"))?,
        // Version 1 stores f32: keep what the input holds (TetGen writes v1 with 17 digits).
        None if file.version == Version::V1 && rounded > 0 => {
            errln!(
                "note: {rounded} coordinates of {} do not fit 32-bit reals; writing version 2 \
                 (pass --version 1 to round them)",
                args.input.display()
            )?;
            Version::V2
        }
        None => file.version,
    };
    if version == Version::V1 && rounded > 0 {
        errln!("warning: {rounded} coordinates rounded to 32-bit reals (version 1)")?;
    }
    meshio::write(&args.output, &file.mesh, version)?;
    outln!(
        "wrote {} (version {}): {}",
        args.output.display(),
        version.number(),
        Summary::of(&file)
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    if !file.skipped_keywords.is_empty() {
        errln!(
            "note: keywords not carried over: {}",
            file.skipped_keywords.join(", ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn measure_quality(args: QualityArgs) -> anyhow::Result<ExitCode> {
    let file = meshio::read(&args.file)?;
    let context = Context::from_selector(&args.device.device)?;
    let precision = match args.precision {
        PrecisionArg::F32 => quality::Precision::F32,
        PrecisionArg::F64 => quality::Precision::F64,
    };
    let q = quality::measure_with(&context, &file.mesh, precision)
        .with_context(|| format!("{}", args.file.display()))?;
    if args.json {
        let report = QualityJson {
            kind: q.kind.name(),
            precision: precision_name(q.precision),
            count: q.values.len(),
            min: q.min,
            mean: q.mean,
            max: q.max,
            histogram: q.histogram,
        };
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        outln!("file:       {}", args.file.display())?;
        outln!("device:     {}", context.info().label())?;
        print_quality(&q)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `mesh quality --json`: these keys, in this order.
#[derive(serde::Serialize)]
struct QualityJson {
    kind: &'static str,
    precision: &'static str,
    count: usize,
    min: f64,
    mean: f64,
    max: f64,
    histogram: [usize; HISTOGRAM_BINS],
}

/// Widest histogram bar, in characters.
const BAR_WIDTH: usize = 40;

/// `f32` or `f64`.
fn precision_name(precision: quality::Precision) -> &'static str {
    match precision {
        quality::Precision::F32 => "f32",
        quality::Precision::F64 => "f64",
    }
}

fn print_quality(q: &Quality) -> Result<(), ConsoleError> {
    outln!("kind:       {}", q.kind.name())?;
    outln!("precision:  {}", precision_name(q.precision))?;
    outln!("count:      {}", q.values.len())?;
    outln!("min:        {:.6}", q.min)?;
    outln!("mean:       {:.6}", q.mean)?;
    outln!("max:        {:.6}", q.max)?;
    outln!("histogram:")?;
    let most = q.histogram.iter().copied().max().unwrap_or(0).max(1);
    for (i, &count) in q.histogram.iter().enumerate() {
        let (low, high) = (i as f64 / 10.0, (i + 1) as f64 / 10.0);
        let close = if i + 1 == HISTOGRAM_BINS { ']' } else { ')' };
        let bar = "#".repeat((count * BAR_WIDTH).div_ceil(most));
        outln!("  [{low:.1}, {high:.1}{close} {count:>10}  {bar}")?;
    }
    // Values above 1 are only rounding (1.0000002 for an equilateral triangle): no note.
    let below = q.values.iter().filter(|&&v| v < 0.0).count();
    if below > 0 {
        outln!("  ({below} below 0, inverted, counted in the first bin)")?;
    }
    Ok(())
}

fn smooth(args: SmoothArgs) -> anyhow::Result<ExitCode> {
    check_mesh_output(&args.input, &args.output, args.force)?;
    let file = meshio::read(&args.input)?;
    file.mesh
        .validate_coordinates(quality::MAX_COORDINATE)
        .with_context(|| format!("{}", args.input.display()))?;
    let context = Context::from_selector(&args.device.device)?;
    let iterations = args.iterations as usize;
    let width = iterations.to_string().len();
    let mut report_error = None;
    let smoothed = smoothing::smooth_while(&context, &file.mesh, iterations, |p: Progress| {
        let report = || -> Result<(), ConsoleError> {
            if p.iteration == 1 {
                outln!("device: {}", context.info().label())?;
            }
            outln!(
                "iteration {:>width$}/{}: max displacement {:.3e}",
                p.iteration,
                p.iterations,
                p.max_displacement
            )
        };
        match report() {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                report_error = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    if let Some(error) = report_error {
        return Err(error.into());
    }
    let smoothed = smoothed.with_context(|| format!("{}", args.input.display()))?;
    let fixed = smoothed.fixed.iter().filter(|&&f| f).count();
    outln!(
        "smoothed {} {}: {} vertices moved, {fixed} stayed (boundary or unused)",
        smoothed.mesh.count(smoothed.kind),
        smoothed.kind.name(),
        smoothed.fixed.len() - fixed,
    )?;
    let before = quality::measure(&context, &file.mesh)?;
    let after = quality::measure(&context, &smoothed.mesh)?;
    outln!(
        "quality of the {}: mean {:.4} -> {:.4}, min {:.4} -> {:.4}",
        smoothed.kind.name(),
        before.mean,
        after.mean,
        before.min,
        after.min
    )?;
    let inverted = |q: &Quality| q.values.iter().filter(|&&v| v <= 0.0).count();
    if inverted(&after) > inverted(&before) {
        errln!(
            "warning: {} elements are inverted or flat after smoothing ({} before): averaging \
             barycentres has no validity guard; try fewer iterations",
            inverted(&after),
            inverted(&before)
        )?;
    }
    let version = output_version(file.version, &smoothed.mesh, &args.input)?;
    meshio::write(&args.output, &smoothed.mesh, version)?;
    outln!(
        "wrote {} (version {})",
        args.output.display(),
        version.number()
    )?;
    if !file.skipped_keywords.is_empty() {
        errln!(
            "note: keywords not carried over: {}",
            file.skipped_keywords.join(", ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Checks, before anything is read, that `output` has a mesh extension and follows the output
/// rule ([`output::rule`]): writable, not `input`, and replacing only a mesh or solution file
/// unless `force`.
fn check_mesh_output(input: &Path, output: &Path, force: bool) -> anyhow::Result<()> {
    meshio::Format::from_path(output)?;
    check_mesh_output_rule(input, output, force)
}

/// The output rule for one input and one mesh or solution output.
fn check_mesh_output_rule(input: &Path, output: &Path, force: bool) -> anyhow::Result<()> {
    output::OutputPlan::new(force)
        .input("the input", input)
        .file("the output", output, output::FileKind::Meshb)
        .check()?;
    Ok(())
}

/// A terrain error with the spec's field named as the option of the same name (`--size`,
/// `--relief`, `--cells`, `--layers`, `--grading`).
fn option_error(error: TerrainError) -> anyhow::Error {
    match error {
        TerrainError::Spec { field, message } => anyhow::anyhow!("--{field}: {message}"),
        other => other.into(),
    }
}

/// A number for a summary line: plainly, or in scientific notation when very large or small
/// (`1e300`, not 301 digits).
fn short(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e7).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// How many coordinates would change if written as 32-bit reals (version 1).
fn rounded_coordinates(mesh: &Mesh) -> usize {
    mesh.vertices
        .iter()
        .flatten()
        .filter(|&&x| f64::from(x as f32) != x)
        .count()
}

/// The input's version, except version 1 (32-bit reals) when a coordinate does not fit: then 2.
fn output_version(
    input: Version,
    mesh: &Mesh,
    path: &std::path::Path,
) -> Result<Version, ConsoleError> {
    if input != Version::V1 {
        return Ok(input);
    }
    let rounded = rounded_coordinates(mesh);
    if rounded == 0 {
        return Ok(input);
    }
    errln!(
        "note: {rounded} coordinates of {} do not fit 32-bit reals; writing version 2",
        path.display()
    )?;
    Ok(Version::V2)
}

fn renumber_file(args: RenumberArgs) -> anyhow::Result<ExitCode> {
    check_mesh_output(&args.input, &args.output, args.force)?;
    let started = std::time::Instant::now();
    let file = meshio::read(&args.input)?;
    file.mesh
        .validate_coordinates(f64::MAX)
        .with_context(|| format!("{}", args.input.display()))?;
    let mesh = &file.mesh;
    outln!(
        "read {} in {:.2} s: {}",
        args.input.display(),
        started.elapsed().as_secs_f64(),
        counts(mesh)
    )?;
    let bar = progress_bar(entities(mesh));
    let options = renumber::Options {
        sort_by_degree: !args.no_degree_sort,
    };
    let started = std::time::Instant::now();
    let renumbered = renumber::renumber_with(mesh, &options, |p| {
        bar.set_length(p.steps as u64);
        bar.set_position(p.step as u64);
        bar.set_message(p.what.to_string());
    })
    .with_context(|| format!("{}", args.input.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    outln!(
        "renumbered in {seconds:.2} s along a Hilbert curve{}",
        if options.sort_by_degree {
            ", vertices and edges grouped by uplink degree class"
        } else {
            " (no degree sort)"
        }
    )?;
    for uplink in &renumbered.uplinks {
        outln!(
            "  {} -> {} tables: {}{}",
            uplink.from,
            uplink.to,
            uplink
                .tables
                .iter()
                .map(|(width, rows)| format!("width {width}: {rows} rows"))
                .collect::<Vec<_>>()
                .join(", "),
            if uplink.sorted && uplink.tables.len() > 1 {
                " (each a contiguous range)"
            } else {
                ""
            }
        )?;
    }
    let (before, after) = (numbering_score(mesh), numbering_score(&renumbered.mesh));
    if let (Some(b), Some(a)) = (before.percent(), after.percent()) {
        outln!(
            "numbering score: {b:.1} % -> {a:.1} % ({})",
            after.model.describe()
        )?;
    }
    let started = std::time::Instant::now();
    meshio::write(&args.output, &renumbered.mesh, file.version)?;
    outln!(
        "wrote {} (version {}) in {:.2} s",
        args.output.display(),
        file.version.number(),
        started.elapsed().as_secs_f64()
    )?;
    if !file.skipped_keywords.is_empty() {
        errln!(
            "note: keywords not carried over: {}",
            file.skipped_keywords.join(", ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn terrain(args: TerrainArgs) -> anyhow::Result<ExitCode> {
    let [x, y, z] = args.size;
    let relief = match (&args.heightmap, args.relief) {
        (None, Some(_)) => bail!("--relief needs --heightmap (without one the ground is flat)"),
        (Some(_), Some(r)) => r,
        (Some(_), None) => z / 2.0,
        (None, None) => 0.0,
    };
    let spec = TerrainSpec {
        size: args.size,
        relief,
        cells: args.cells,
        layers: args.layers,
        grading: args.grading,
    };
    spec.validate().map_err(option_error)?;
    let mut plan = output::OutputPlan::new(args.force);
    if let Some(heightmap) = &args.heightmap {
        plan.input("--heightmap", heightmap);
    }
    meshio::Format::from_path(&args.out)?;
    plan.file("--out", &args.out, output::FileKind::Meshb);
    if let Some(surface) = &args.surface {
        meshio::Format::from_path(surface)?;
        plan.file("--surface", surface, output::FileKind::Meshb);
    }
    plan.check()?;
    let estimate = Estimate::new(
        format!(
            "`--cells {},{}` × `--layers {}`",
            args.cells[0], args.cells[1], args.layers
        ),
        "the volume mesh",
        spec.meshing_peak_bytes(args.check),
    );
    Budget::host().check(&estimate)?;
    let heightmap = args.heightmap.as_deref().map(Heightmap::read).transpose()?;
    match (&args.heightmap, &heightmap) {
        (Some(path), Some(map)) => outln!(
            "terrain: {} ({} × {}, {}-bit), {} × {} m, relief {} m, top {} m",
            path.display(),
            map.width(),
            map.height(),
            map.bits(),
            short(x),
            short(y),
            short(relief),
            short(z)
        ),
        _ => outln!(
            "terrain: flat, {} × {} m, top {} m",
            short(x),
            short(y),
            short(z)
        ),
    }?;
    let started = std::time::Instant::now();
    let terrain = Terrain::new(spec, heightmap.as_ref()).map_err(option_error)?;
    let mut mesh = terrain.volume_mesh();
    outln!(
        "meshed in {:.2} s: {} ({} cells × {} layers, grading {})",
        started.elapsed().as_secs_f64(),
        counts(&mesh),
        args.cells[0] * args.cells[1],
        args.layers,
        short(args.grading)
    )?;
    let refs = mesh.elements(ElementKind::Triangles).refs();
    outln!(
        "boundary triangles: {}",
        Side::ALL
            .iter()
            .map(|s| format!(
                "{} {} ({})",
                s.reference(),
                s,
                refs.iter().filter(|&&r| r == s.reference()).count()
            ))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    if args.renumber {
        let started = std::time::Instant::now();
        let bar = progress_bar(entities(&mesh));
        let renumbered = renumber::renumber_with(&mesh, &renumber::Options::default(), |p| {
            bar.set_length(p.steps as u64);
            bar.set_position(p.step as u64);
            bar.set_message(p.what.to_string());
        })?;
        bar.finish_and_clear();
        let seconds = started.elapsed().as_secs_f64();
        if let (Some(b), Some(a)) = (
            numbering_score(&mesh).percent(),
            numbering_score(&renumbered.mesh).percent(),
        ) {
            outln!("renumbered in {seconds:.2} s: numbering score {b:.1} % -> {a:.1} %")?;
        }
        mesh = renumbered.mesh;
    }
    let mut status = ExitCode::SUCCESS;
    if args.check {
        let report = check(&mesh);
        print_report(&report)?;
        if !report.passed() {
            status = ExitCode::from(CHECK_FAILED);
        }
    }
    let started = std::time::Instant::now();
    meshio::write(&args.out, &mesh, Version::V2)?;
    outln!(
        "wrote {} (version 2) in {:.2} s",
        args.out.display(),
        started.elapsed().as_secs_f64()
    )?;
    if let Some(path) = &args.surface {
        let ground = terrain.ground_surface();
        meshio::write(path, &ground.mesh, Version::V2)?;
        outln!(
            "wrote {}: ground surface, {}",
            path.display(),
            counts(&ground.mesh)
        )?;
    }
    Ok(status)
}

/// `2300 vertices, 2468 triangles, 10246 tetrahedra`.
fn counts(mesh: &Mesh) -> String {
    std::iter::once(format!("{} vertices", mesh.vertices.len()))
        .chain(
            ElementKind::ALL
                .iter()
                .filter(|&&k| mesh.count(k) > 0)
                .map(|&k| format!("{} {}", mesh.count(k), k.name())),
        )
        .collect::<Vec<_>>()
        .join(", ")
}

/// Vertices and elements of every kind.
fn entities(mesh: &Mesh) -> usize {
    mesh.vertices.len()
        + ElementKind::ALL
            .iter()
            .map(|&k| mesh.count(k))
            .sum::<usize>()
}

/// A progress bar on standard error for meshes of [`PROGRESS_ENTITIES`] or more (drawn only on
/// a terminal), a hidden one otherwise.
fn progress_bar(entities: usize) -> indicatif::ProgressBar {
    if entities < PROGRESS_ENTITIES {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(1);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(100));
    bar
}

/// Whether `path` names a solution file (`.sol` or `.solb`).
fn is_solution(path: &Path) -> bool {
    meshio::solution_format(path).is_ok()
}

/// `mesh info FILE.sol[b]`: each solution keyword with its count and field types.
fn solution_info(path: &Path, as_json: bool) -> anyhow::Result<ExitCode> {
    let (file, names) = meshio::read_named_solution(path)?;
    // The names `ReferenceStrings` gives a block's types, as `index text`.
    let names_of = |b: &meshio::SolutionBlock| -> Vec<String> {
        names
            .iter()
            .filter(|n| n.keyword == b.support.code())
            .map(|n| format!("{} {}", n.index, n.text))
            .collect()
    };
    // `ReferenceStrings` is read, not skipped.
    let skipped: Vec<&String> = file
        .skipped_keywords
        .iter()
        .filter(|k| k.as_str() != "ReferenceStrings")
        .collect();
    let dim = file.solutions.dimension;
    let format = match file.format {
        meshio::Format::Ascii => "sol",
        meshio::Format::Binary => "solb",
    };
    if as_json {
        let blocks: Vec<_> = file
            .solutions
            .blocks
            .iter()
            .map(|b| {
                json!({
                    "keyword": b.support.keyword(),
                    "support": b.support.name(),
                    "count": b.count(dim),
                    "types": b.types.iter().map(|t| t.name()).collect::<Vec<_>>(),
                    "width": b.width(dim),
                    "names": names_of(b),
                })
            })
            .collect();
        let value = json!({
            "file": path.display().to_string(),
            "format": format,
            "version": file.version.number(),
            "dimension": dim,
            "big_endian": file.big_endian,
            "solutions": blocks,
            "skipped_keywords": skipped,
        });
        outln!("{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("file:       {}", path.display())?;
    outln!(
        "format:     {format} ({}), version {}, dimension {dim}",
        if file.format == meshio::Format::Binary {
            "binary"
        } else {
            "ASCII"
        },
        file.version.number()
    )?;
    for b in &file.solutions.blocks {
        let types: Vec<_> = b.types.iter().map(|t| t.name()).collect();
        outln!(
            "{:<20} {:>10}   types: {} ({} reals per line)",
            b.support.keyword(),
            b.count(dim),
            types.join(", "),
            b.width(dim)
        )?;
        let named = names_of(b);
        if !named.is_empty() {
            outln!("{:<20} names: {}", "", named.join(", "))?;
        }
    }
    if file.solutions.blocks.is_empty() {
        outln!("no solution keyword")?;
    }
    if !skipped.is_empty() {
        let skipped: Vec<&str> = skipped.iter().map(|k| k.as_str()).collect();
        outln!("skipped:    {}", skipped.join(", "))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `mesh convert IN.sol[b] OUT.sol[b]`: as for meshes, the input's version by default, except
/// version 1 when a value does not fit a 32-bit real.
fn convert_solution(
    input: &Path,
    output: &Path,
    version: Option<u32>,
    force: bool,
) -> anyhow::Result<ExitCode> {
    meshio::solution_format(output)?;
    check_mesh_output_rule(input, output, force)?;
    let file = meshio::read_solution(input)?;
    let rounded = file
        .solutions
        .blocks
        .iter()
        .flat_map(|b| &b.values)
        .filter(|&&x| f64::from(x as f32) != x)
        .count();
    let version = match version {
        Some(n) => Version::from_number(n).with_context(|| format!("unknown version {n}"))?,
        None if file.version == Version::V1 && rounded > 0 => {
            errln!(
                "note: {rounded} values of {} do not fit 32-bit reals; writing version 2 \
                 (pass --version 1 to round them)",
                input.display()
            )?;
            Version::V2
        }
        None => file.version,
    };
    if version == Version::V1 && rounded > 0 {
        errln!("warning: {rounded} values rounded to 32-bit reals (version 1)")?;
    }
    meshio::write_solution(output, &file.solutions, version)?;
    let dim = file.solutions.dimension;
    let blocks: Vec<_> = file
        .solutions
        .blocks
        .iter()
        .map(|b| format!("{} {}", b.count(dim), b.support.keyword()))
        .collect();
    outln!(
        "wrote {} (version {}): {}",
        output.display(),
        version.number(),
        blocks.join(", ")
    )?;
    if !file.skipped_keywords.is_empty() {
        errln!(
            "note: keywords not carried over: {}",
            file.skipped_keywords.join(", ")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
