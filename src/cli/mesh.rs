//! `snowsim mesh …`: inspect, check and convert INRIA mesh files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::json;
use snowsim::inspect::{CheckReport, Summary, check};
use snowsim::meshio::{self, ElementKind, Version};

/// The `mesh` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print format, version, dimension, counts per kind, bounding box and references of a
    /// .mesh/.meshb file; with --check, also validate it.
    Info(InfoArgs),
    /// Convert between ASCII .mesh and binary .meshb (chosen by each file's extension).
    Convert(ConvertArgs),
}

/// Options of `snowsim mesh info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// The .mesh or .meshb file.
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
    /// Input file (.mesh or .meshb).
    input: PathBuf,
    /// Output file (.mesh or .meshb).
    output: PathBuf,
    /// Format version of the output: 1 (32-bit reals), 2 (64-bit reals), 3 (64-bit positions),
    /// 4 (64-bit integers). Default: the input's version.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4))]
    version: Option<u32>,
    /// Dimension of the output: 2 writes x and y only (every z must be 0, as in planar meshes
    /// that gmsh writes with dimension 3); 3 writes all coordinates. Default: the input's.
    #[arg(long, value_parser = clap::value_parser!(u8).range(2..=3))]
    dimension: Option<u8>,
}

/// Exit status of `mesh info --check` when the mesh has problems.
const CHECK_FAILED: u8 = 3;

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Info(args) => info(args),
        Command::Convert(args) => convert(args),
    }
}

fn info(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let file = meshio::read(&args.file)?;
    let summary = Summary::of(&file);
    let report = args.check.then(|| check(&file.mesh));
    if args.json {
        let mut value = serde_json::to_value(&summary)?;
        value["file"] = json!(args.file.display().to_string());
        if let Some(report) = &report {
            value["check"] = serde_json::to_value(report)?;
            value["check"]["passed"] = json!(report.passed());
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_summary(&args.file, &summary);
        if let Some(report) = &report {
            print_report(report);
        }
    }
    Ok(match report {
        Some(r) if !r.passed() => ExitCode::from(CHECK_FAILED),
        _ => ExitCode::SUCCESS,
    })
}

fn print_summary(path: &std::path::Path, s: &Summary) {
    println!("file:       {}", path.display());
    println!(
        "format:     {} ({}), version {}, dimension {}",
        s.format,
        if s.format == "meshb" {
            "binary"
        } else {
            "ASCII"
        },
        s.version,
        s.dimension
    );
    let kinds = std::iter::once("vertices").chain(ElementKind::ALL.iter().map(|k| k.name()));
    for kind in kinds {
        if let (Some(count), Some(refs)) = (s.counts.get(kind), s.references.get(kind)) {
            println!("{kind:<15} {count:>10}   references: {}", ref_list(refs));
        }
    }
    if let Some(b) = &s.bounding_box {
        println!(
            "bounding box: [{}, {}] x [{}, {}] x [{}, {}]",
            b.min[0], b.max[0], b.min[1], b.max[1], b.min[2], b.max[2]
        );
    }
    if !s.skipped_keywords.is_empty() {
        println!("skipped keywords: {}", s.skipped_keywords.join(", "));
    }
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

fn print_report(report: &CheckReport) {
    println!("check:");
    if report.boundary_faces > 0 {
        println!(
            "  boundary faces (one tetrahedron): {}",
            report.boundary_faces
        );
    }
    if report.passed() {
        println!("  no problem found");
        return;
    }
    for (kind, count) in &report.counts {
        println!("  {count} {kind}");
        for example in report.examples.iter().filter(|p| p.kind == *kind) {
            println!("    {}", example.detail);
        }
        if *count > report.examples.iter().filter(|p| p.kind == *kind).count() {
            println!("    …");
        }
    }
}

fn convert(args: ConvertArgs) -> anyhow::Result<ExitCode> {
    let mut file = meshio::read(&args.input)?;
    if let (Ok(a), Ok(b)) = (args.input.canonicalize(), args.output.canonicalize())
        && a == b
    {
        bail!(
            "input and output are the same file ({}); choose another output",
            args.input.display()
        );
    }
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
    let rounded = file
        .mesh
        .vertices
        .iter()
        .flatten()
        .filter(|&&x| f64::from(x as f32) != x)
        .count();
    let version = match args.version {
        Some(n) => Version::from_number(n).with_context(|| format!("unknown version {n}"))?,
        // Version 1 stores f32: keep what the input holds (TetGen writes v1 with 17 digits).
        None if file.version == Version::V1 && rounded > 0 => {
            eprintln!(
                "note: {rounded} coordinates of {} do not fit 32-bit reals; writing version 2 \
                 (pass --version 1 to round them)",
                args.input.display()
            );
            Version::V2
        }
        None => file.version,
    };
    if version == Version::V1 && rounded > 0 {
        eprintln!("warning: {rounded} coordinates rounded to 32-bit reals (version 1)");
    }
    meshio::write(&args.output, &file.mesh, version)?;
    println!(
        "wrote {} (version {}): {}",
        args.output.display(),
        version.number(),
        Summary::of(&file)
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !file.skipped_keywords.is_empty() {
        eprintln!(
            "note: keywords not carried over: {}",
            file.skipped_keywords.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
