//! `snowsim mesh partition`: a mesh's vertices (a terrain scene's whole columns) shared out to
//! K parts by METIS, with the edge cut, balance and halos that the parts would cost.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use serde_json::json;
use snowsim::meshio::{self, Mesh, ReferenceString, SolType, SolutionBlock, Solutions, Support};
use snowsim::output;
use snowsim::partition::{HaloPlan, Partition, PartitionReport, Unit, VertexGraph};
use snowsim::scene::{Scene, limits::check_domain_mesh};

use super::console::{ConsoleError, errln, outln};

/// What `--help` says about the measures.
pub const LONG_ABOUT: &str = "Partition a mesh into K parts for K ranks (one GPU each) with \
    METIS k-way, and report what the parts cost.\n\n\
    Each vertex gets an owner part. Vertices are adjacent when they share an edge of a \
    tetrahedron (of a triangle in a mesh without tetrahedra); METIS balances the parts' \
    weights (one per vertex) and cuts few of these edges. With --scene, the scene's terrain \
    air mesh (numbered as the wind solver numbers it) is partitioned by whole columns, so that \
    every column stays on one rank: METIS partitions the column graph, each column weighing \
    its vertices.\n\n\
    The report:\n  \
    edge cut   the mesh edges whose two vertices have different owners: values that cross \
    between ranks at every update (counted on the vertex graph, also for columns);\n  \
    balance    the largest part's weight over the mean part weight: 1 is perfect, 1.05 means \
    the slowest rank has 5 % more work than an even share (METIS aims at 1.03);\n  \
    halo       per part, the vertices of its elements (those with at least one owned vertex) \
    that other parts own: what it must receive after each update; neighbours are the parts \
    it exchanges with.\n\n\
    With -o, the partition is written as an INRIA solution file (.sol or .solb, one scalar per \
    vertex: its part, named `part`) to view with the mesh in ParaView or Medit; with --scene, \
    --mesh-out writes the partitioned mesh beside it. METIS is deterministic: the same mesh \
    and K give the same parts.";

/// Options of `snowsim mesh partition`.
#[derive(Debug, clap::Args)]
pub struct PartitionArgs {
    /// The mesh to partition (.mesh or .meshb), by vertices.
    #[arg(required_unless_present = "scene", conflicts_with = "scene")]
    input: Option<PathBuf>,
    /// A scene file instead: partition its domain's air mesh, by whole columns for a terrain
    /// (by vertices for a mesh domain).
    #[arg(long)]
    scene: Option<PathBuf>,
    /// The number of parts K (at least 1, at most the vertices or columns).
    #[arg(long, short = 'k', value_name = "K")]
    parts: usize,
    /// Print the report as JSON instead of a table (progress goes to standard error).
    #[arg(long)]
    json: bool,
    /// Write the partition: a solution file (.sol or .solb), each vertex's part.
    #[arg(long, short = 'o', value_name = "OUT")]
    output: Option<PathBuf>,
    /// With --scene: also write the mesh that was partitioned (.mesh or .meshb), to view the
    /// partition on.
    #[arg(long, requires = "scene", value_name = "MESH")]
    mesh_out: Option<PathBuf>,
    /// Replace an existing output file that is not a mesh or solution file (without it the
    /// command refuses to start); an input is never replaced.
    #[arg(long)]
    force: bool,
}

/// The mesh to partition and, for a terrain, its columns.
struct Source {
    /// What it is, for messages: the mesh file or the scene.
    name: String,
    mesh: Mesh,
    /// Per vertex its column, and how many columns.
    columns: Option<(Vec<u32>, usize)>,
}

/// Runs `snowsim mesh partition`.
pub fn run(args: PartitionArgs) -> anyhow::Result<ExitCode> {
    let say = |text: String| -> Result<(), ConsoleError> {
        if args.json {
            errln!("{text}")
        } else {
            outln!("{text}")
        }
    };
    if args.parts == 0 {
        return Err(snowsim::partition::PartitionError::NoParts.into());
    }
    // Outputs are checked before anything is read or meshed.
    let mut plan = output::OutputPlan::new(args.force);
    let scene = match (&args.input, &args.scene) {
        (Some(input), _) => {
            plan.input("the input", input);
            None
        }
        (None, Some(path)) => {
            let scene = Scene::load(path).with_context(|| format!("scene {}", path.display()))?;
            for (role, file) in scene.input_files() {
                plan.input(role, file);
            }
            Some(scene)
        }
        (None, None) => anyhow::bail!("give a mesh file or --scene FILE to partition"),
    };
    if let Some(out) = &args.output {
        meshio::solution_format(out)?;
        plan.file("-o", out, output::FileKind::Meshb);
    }
    if let Some(out) = &args.mesh_out {
        meshio::Format::from_path(out)?;
        plan.file("--mesh-out", out, output::FileKind::Meshb);
    }
    plan.check()?;

    let started = Instant::now();
    let source = match (&args.input, &scene) {
        (Some(input), _) => Source {
            name: input.display().to_string(),
            mesh: meshio::read(input)?.mesh,
            columns: None,
        },
        (None, Some(scene)) => {
            check_domain_mesh(scene)?;
            let domain = scene.build_domain(true)?;
            Source {
                name: format!("scene {}", scene.path.display()),
                columns: domain.columns.map(|c| {
                    let count = c.ground.len();
                    (c.column, count)
                }),
                mesh: domain.mesh,
            }
        }
        (None, None) => anyhow::bail!("give a mesh file or --scene FILE to partition"),
    };
    let mesh = &source.mesh;
    let graph = VertexGraph::of_mesh(mesh).with_context(|| source.name.clone())?;
    say(format!(
        "{}: {} vertices, {} graph edges (read and graphed in {:.2} s)",
        source.name,
        mesh.vertices.len(),
        graph.edge_count(),
        started.elapsed().as_secs_f64()
    ))?;
    if scene.is_some() && source.columns.is_none() {
        say(
            "note: the scene's domain is a mesh file, without columns: partitioning by vertices"
                .into(),
        )?;
    }
    say(match &source.columns {
        Some((_, count)) => format!("METIS k-way: {count} columns into {} parts…", args.parts),
        None => format!(
            "METIS k-way: {} vertices into {} parts…",
            mesh.vertices.len(),
            args.parts
        ),
    })?;
    let started = Instant::now();
    let columns = source.columns.as_ref().map(|(c, n)| (c.as_slice(), *n));
    let partition = Partition::of_domain(&graph, columns, args.parts, None)
        .with_context(|| source.name.clone())?;
    let metis_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let halo = HaloPlan::new(mesh, &partition).with_context(|| source.name.clone())?;
    let report = PartitionReport::new(&graph, &partition, &halo);
    let report_seconds = started.elapsed().as_secs_f64();

    if let Some(out) = &args.output {
        write_partition(out, mesh, partition.owner())?;
        say(format!("wrote {}: the part of every vertex", out.display()))?;
    }
    if let Some(out) = &args.mesh_out {
        meshio::write(out, mesh, meshio::Version::V2)?;
        say(format!("wrote {}: the partitioned mesh", out.display()))?;
    }
    if report.empty_parts > 0 {
        errln!(
            "warning: {} of {} parts own no vertex (METIS left them empty); ask for fewer parts",
            report.empty_parts,
            report.parts
        )?;
    }
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["source"] = json!(source.name);
        value["columns"] = json!(source.columns.as_ref().map(|(_, n)| n));
        value["metis_seconds"] = json!(metis_seconds);
        value["report_seconds"] = json!(report_seconds);
        value["output"] = json!(args.output.as_ref().map(|p| p.display().to_string()));
        outln!("{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        print_report(
            &report,
            source.columns.as_ref().map(|(_, n)| *n),
            metis_seconds,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes each vertex's part as a `SolAtVertices` scalar named `part`.
fn write_partition(path: &Path, mesh: &Mesh, owner: &[u32]) -> anyhow::Result<()> {
    let solutions = Solutions {
        dimension: mesh.dimension,
        blocks: vec![SolutionBlock {
            support: Support::Vertices,
            types: vec![SolType::Scalar],
            values: owner.iter().map(|&p| f64::from(p)).collect(),
        }],
    };
    let names = [ReferenceString::new(Support::Vertices.code(), 1, "part")];
    meshio::write_named_solution(path, &solutions, &names, meshio::Version::V2)?;
    Ok(())
}

/// The report as text: the totals, then a row per part.
fn print_report(
    report: &PartitionReport,
    columns: Option<usize>,
    metis_seconds: f64,
) -> Result<(), ConsoleError> {
    let by = match (report.unit, columns) {
        (Unit::Columns, Some(n)) => format!("by whole columns ({n} columns)"),
        _ => "by vertices".to_string(),
    };
    outln!(
        "partition:  {} parts of {} vertices, {by}, METIS k-way in {metis_seconds:.2} s",
        report.parts,
        report.vertices
    )?;
    outln!(
        "edge cut:   {} of {} edges ({:.2} %)",
        report.edge_cut,
        report.edges,
        100.0 * report.edge_cut as f64 / report.edges.max(1) as f64
    )?;
    outln!(
        "balance:    {:.4} (largest part over the mean)",
        report.balance
    )?;
    outln!(
        "halo:       {} vertices in all, {} at most in one part",
        report.halo_total,
        report.halo_max
    )?;
    outln!(
        "{:>5} {:>10} {:>11} {:>9}  neighbours",
        "part",
        "owned",
        report.element_kind,
        "halo"
    )?;
    for p in &report.per_part {
        let neighbours: Vec<String> = p.neighbours.iter().map(u32::to_string).collect();
        outln!(
            "{:>5} {:>10} {:>11} {:>9}  {}",
            p.part,
            p.owned,
            p.elements,
            p.halo,
            neighbours.join(" ")
        )?;
    }
    Ok(())
}
