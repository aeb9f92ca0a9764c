//! `snowsim plot`: PNG plots and their series JSON from sweep CSVs.

use std::path::PathBuf;
use std::process::ExitCode;

use snowsim::plot;

use super::console::outln;

/// What `snowsim plot --help` explains: inputs, outputs, series, failures, exit status.
pub const LONG_ABOUT: &str = "Draw the results of benchmark sweeps.

Inputs: one or more CSV files written by `snowsim bench` (schema versions 1 to 3), regular files \
of at most 64 MB together (a FIFO, a device or a directory is refused without being read), \
each field at most 4096 bytes. Their rows are taken together, so files of different devices \
from different machines can be plotted on one figure. Every number is checked before \
anything is drawn: FPS, its standard deviation and the stage times must be finite and not \
negative, and FPS + std and the sum of a row's stage times must stay within f64.

Outputs, in --out (created if missing), each PNG with a JSON of the same name beside it:
  fps_particles.png  frames per second against particle count (log2 x axis)
  fps_tets.png       frames per second against tetrahedra of the wind's mesh (log2 x axis),
                     when rows have a mesh size
  stages.png         stacked bars of milliseconds per frame in each stage (wind, snow, sort,
                     smoothing, splat, transfer, draw), one bar per completed configuration,
                     at most 200: beyond them the first 200 are drawn, the command says so and
                     the JSON lists the others as skipped
  devices.png        one bar per device and setup (each series below): its FPS at the largest \
particle count that completed, devices of one name kept apart by their index (`NAME [1]`)
  speedup.png        for each run on several devices (--wind-device, --snow-devices), its FPS \
over that of the same configuration on its snow's device alone (one device, no wind device), \
by particle count; not drawn (and said so) when no such pair is in the CSVs
  summary.md         a markdown table per CSV of its headline rows: device(s), setup, \
particles, render, FPS mean ± std, ms per frame (no JSON beside it)

Rows are grouped into series by every setting except the x quantity: one line per device and \
per combination of settings that varies (interop, particle render, sort, render, simulate, ...), \
named by the device and the settings that differ (interop and particle render as asked for, \
since a failed row records no mode used). Error bars are one standard deviation over \
the repeats. Rows whose status is not `ok` are not drawn (the FPS plots mark them with a cross on \
the x axis) and are listed as failed in their series' JSON. The JSON gives, for every series, its \
label, the settings that define it and its points (x, y, y_std) exactly as plotted, and the rows \
left out with the reason.

The files are written together: every figure is drawn and every file written to a temporary \
beside it before any is renamed into place, and a rename that fails puts back those already \
made, so an error leaves --out as it was.

Exits with status 1 on an unreadable, empty or other-version CSV, one that is not a regular \
file or is too large, a value that does not parse or cannot be drawn (the error names the \
file, the line and the column), no row with status ok and an FPS (the error says whether rows \
completed without an FPS), or an output that cannot be written.";

/// Options of `snowsim plot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The sweep CSV files (`snowsim bench --csv FILE`).
    #[arg(required = true, value_name = "FILE.csv")]
    files: Vec<PathBuf>,
    /// The folder the PNG and JSON files are written to (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Replace files in --out of the figures' names that this command did not write (without
    /// it the command refuses to start); an input CSV is never replaced.
    #[arg(long)]
    force: bool,
}

/// Reads the CSVs, writes the plots and prints what was written.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut plan = snowsim::output::OutputPlan::new(args.force);
    for file in &args.files {
        plan.input("the input", file);
    }
    plan.dir("--out", &args.out, snowsim::output::rule::plot_name);
    plan.check()?;
    let inputs = plot::read_inputs(&args.files)?;
    let report = plot::plot(&inputs, &args.out)?;
    let rows: usize = inputs.iter().map(|i| i.rows.len()).sum();
    outln!("{rows} rows from {} file(s)", inputs.len())?;
    for w in &report.written {
        outln!(
            "wrote {} ({} series, {} points) and {}",
            w.png.display(),
            w.series,
            w.points,
            w.json.display()
        )?;
        if let Some(note) = &w.note {
            outln!("note: {note}")?;
        }
    }
    outln!("wrote {}", report.summary.display())?;
    for note in &report.not_made {
        outln!("not drawn: {note}")?;
    }
    Ok(ExitCode::SUCCESS)
}
