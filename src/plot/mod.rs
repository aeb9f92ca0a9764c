//! `snowsim plot`: figures from the CSVs of benchmark sweeps (`snowsim bench`), like the
//! thesis's Figures 6.1–6.6. FPS against particle count and against mesh size (log2 x axis,
//! one line per device and per setting that varies, error bars of one standard deviation), and
//! stacked bars of the time per stage, the headline FPS of each device and setup, the speed-up
//! of several devices over one, and a markdown summary; each PNG has a JSON beside it naming its series and
//! their points exactly as drawn, the failed rows of each series and the rows left out. The
//! CSVs are read through [`crate::input`], every number is checked before anything is drawn
//! ([`check`]), the figures' sizes are capped ([`figure::MAX_BARS`]) and the files are
//! written together or not at all.

pub mod axis;
pub mod check;
pub mod draw;
pub mod figure;
pub mod font;
pub mod headline;
pub mod series;
pub mod settings;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::bench::record::{CSV_LIMIT, RecordError, Row, parse_rows};
use crate::budget::{Budget, ByteSize, Estimate};
use crate::input::InputError;
use crate::output::{AtomicFile, OutputError};
use figure::{LineFigure, MAX_BARS, StageFigure};
use headline::DeviceFigure;
use series::{Origin, Sourced, group};

/// Errors making the plots.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No CSV file was given.
    #[error("no CSV file given")]
    NoInput,
    /// A CSV is not a regular file, could not be read or does not parse (names the file and
    /// line).
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The CSVs together are larger than [`CSV_LIMIT`].
    #[error(
        "{} is {}, more than the {} left of the {} of CSV that snowsim plot reads in all \
         (the files before it hold {})",
        path.display(),
        ByteSize(*size),
        ByteSize(CSV_LIMIT - before),
        ByteSize(CSV_LIMIT),
        ByteSize(*before)
    )]
    TooMuchInput {
        /// The file that went past the limit.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// Bytes of the files before it.
        before: u64,
    },
    /// A number of a row cannot be drawn: not finite, negative, or a sum beyond f64.
    #[error(
        "{}, line {line}, {} {column}: {problem}",
        path.display(),
        if column.contains(" + ") { "columns" } else { "column" }
    )]
    Value {
        /// The file.
        path: PathBuf,
        /// The line the row starts on.
        line: u64,
        /// The column, or the columns of a sum.
        column: String,
        /// What is wrong.
        problem: String,
    },
    /// A CSV has a header but no rows, or nothing at all.
    #[error("{}: no rows (an empty sweep CSV)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// No row has both status ok and an FPS, so there is nothing to draw.
    #[error(
        "no row to plot: {}",
        nothing_to_plot(*rows, *ok, *ok_in_files_with_fps, statuses, no_fps_column)
    )]
    NothingToPlot {
        /// How many rows were read.
        rows: usize,
        /// How many of them have status `ok` (and, since nothing is drawn, no FPS).
        ok: usize,
        /// How many of those are in files that have an `fps_mean` column (empty there).
        ok_in_files_with_fps: usize,
        /// The statuses found, with their counts, e.g. `error: 3, timeout: 1`.
        statuses: String,
        /// The files without an `fps_mean` column.
        no_fps_column: Vec<PathBuf>,
    },
    /// The output folder could not be created.
    #[error("{}: cannot create the output folder: {error}", path.display())]
    OutDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// Drawing a plot failed.
    #[error("{}: cannot draw: {error}", path.display())]
    Draw {
        /// The image being drawn.
        path: PathBuf,
        /// plotters' or the encoder's message.
        error: String,
    },
    /// Writing an output failed.
    #[error(transparent)]
    Output(#[from] OutputError),
}

/// The reason of [`PlotError::NothingToPlot`]: that no row completed, or that the rows that
/// did have no FPS (and why: no `fps_mean` column, or empty values).
fn nothing_to_plot(
    rows: usize,
    ok: usize,
    ok_in_files_with_fps: usize,
    statuses: &str,
    no_fps_column: &[PathBuf],
) -> String {
    if ok == 0 {
        return format!("none of the {rows} rows has status ok ({statuses})");
    }
    let files: Vec<String> = no_fps_column
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let why = if files.is_empty() {
        "fps_mean is empty in each".to_string()
    } else {
        let has = if files.len() == 1 { "has" } else { "have" };
        let others = if ok_in_files_with_fps > 0 {
            "; fps_mean is empty in the others"
        } else {
            ""
        };
        format!("{} {has} no fps_mean column{others}", files.join(", "))
    };
    let have = if ok == 1 { "has" } else { "have" };
    format!(
        "{ok} of the {rows} rows {have} status ok but no FPS value ({why}); statuses: {statuses}"
    )
}

/// The rows of one CSV file.
#[derive(Clone, Debug)]
pub struct Input {
    /// The file, as given.
    pub path: PathBuf,
    /// Its rows, in order.
    pub rows: Vec<Row>,
    /// Whether its header has an `fps_mean` column.
    pub has_fps_column: bool,
}

/// Reads every file through [`crate::input`] (a FIFO, a device or a directory is refused
/// without being read; all files together at most [`CSV_LIMIT`]) and checks every number of
/// every row ([`check::check_row`]); a file without rows is an error.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, PlotError> {
    if paths.is_empty() {
        return Err(PlotError::NoInput);
    }
    // Every file is judged and read before any is parsed, so that a FIFO, a device or too
    // much input is refused at once.
    let mut before = 0;
    let mut contents = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes = crate::input::read(path, CSV_LIMIT - before).map_err(|error| match error {
            InputError::TooLarge {
                size: Some(size), ..
            } if before > 0 => PlotError::TooMuchInput {
                path: path.clone(),
                size,
                before,
            },
            error => PlotError::Record(error.into()),
        })?;
        before += bytes.len() as u64;
        contents.push(bytes);
    }
    let mut inputs = Vec::with_capacity(paths.len());
    for (path, bytes) in paths.iter().zip(contents) {
        let sweep = parse_rows(path, &bytes)?;
        drop(bytes);
        if sweep.rows.is_empty() {
            return Err(PlotError::Empty { path: path.clone() });
        }
        for (row, &line) in sweep.rows.iter().zip(&sweep.lines) {
            check::check_row(row).map_err(|bad| PlotError::Value {
                path: path.clone(),
                line,
                column: bad.column,
                problem: bad.problem,
            })?;
        }
        inputs.push(Input {
            path: path.clone(),
            has_fps_column: sweep.has_column("fps_mean"),
            rows: sweep.rows,
        });
    }
    Ok(inputs)
}

/// One plot written: its PNG and its series JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Written {
    /// The PNG.
    pub png: PathBuf,
    /// The JSON beside it.
    pub json: PathBuf,
    /// Series in it.
    pub series: usize,
    /// Points (or bars) drawn.
    pub points: usize,
    /// What was left out of the image, when something was (e.g. bars beyond [`MAX_BARS`]).
    pub note: Option<String>,
}

/// What [`plot`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The plots written.
    pub written: Vec<Written>,
    /// Plots not made, and why (e.g. no row has a mesh size).
    pub not_made: Vec<String>,
    /// The markdown summary ([`SUMMARY`]).
    pub summary: PathBuf,
}

/// The base names of the plots (`NAME.png` and `NAME.json` in the output folder).
pub const FPS_PARTICLES: &str = "fps_particles";
/// See [`FPS_PARTICLES`].
pub const FPS_TETS: &str = "fps_tets";
/// See [`FPS_PARTICLES`].
pub const STAGES: &str = "stages";
/// See [`FPS_PARTICLES`].
pub const SPEEDUP: &str = "speedup";
/// See [`FPS_PARTICLES`].
pub const DEVICES: &str = "devices";
/// The markdown summary's file name.
pub const SUMMARY: &str = "summary.md";

/// A figure drawn, not yet written.
struct Drawn<'a> {
    name: &'static str,
    png: Vec<u8>,
    figure: Figure<'a>,
    series: usize,
    points: usize,
    note: Option<String>,
}

/// The data of a figure, written as its JSON.
enum Figure<'a> {
    Line(&'a LineFigure),
    Stages(&'a StageFigure),
    Devices(&'a DeviceFigure),
}

impl Figure<'_> {
    fn write_json(&self, writer: impl Write) -> serde_json::Result<()> {
        match self {
            Figure::Line(f) => serde_json::to_writer_pretty(writer, f),
            Figure::Stages(f) => serde_json::to_writer_pretty(writer, f),
            Figure::Devices(f) => serde_json::to_writer_pretty(writer, f),
        }
    }
}

/// Draws the plots of the rows of `inputs` (all files together) into `out`, creating it if
/// missing: [`FPS_PARTICLES`] always, [`FPS_TETS`] when rows have a mesh size, [`STAGES`] when
/// rows have stage times (at most [`MAX_BARS`] bars), [`DEVICES`] and [`SUMMARY`] always,
/// [`SPEEDUP`] when a run on several devices has the same configuration on its snow's device
/// alone to compare with. Every figure is drawn before anything
/// is written, then all files are written as temporaries and renamed into place only when
/// every one is complete: an error leaves `out` as it was (and removes it if this call
/// created it). Nothing is written when no row completed.
pub fn plot(inputs: &[Input], out: &Path) -> Result<Report, PlotError> {
    let origins: Vec<Vec<Origin>> = inputs
        .iter()
        .map(|input| {
            (1..=input.rows.len())
                .map(|row| Origin {
                    file: input.path.display().to_string(),
                    row,
                })
                .collect()
        })
        .collect();
    let rows: Vec<Sourced> = inputs
        .iter()
        .zip(&origins)
        .flat_map(|(input, origins)| {
            input
                .rows
                .iter()
                .zip(origins)
                .map(|(row, origin)| Sourced { origin, row })
        })
        .collect();

    let by_particles = group(&rows, "particles", |r| Some(r.particles), "");
    let particles = LineFigure::new(&by_particles);
    if !particles.has_points() {
        return Err(PlotError::NothingToPlot {
            rows: rows.len(),
            ok: rows.iter().filter(|s| s.row.status == "ok").count(),
            ok_in_files_with_fps: inputs
                .iter()
                .filter(|i| i.has_fps_column)
                .flat_map(|i| &i.rows)
                .filter(|r| r.status == "ok")
                .count(),
            statuses: status_counts(&rows),
            no_fps_column: inputs
                .iter()
                .filter(|i| !i.has_fps_column)
                .map(|i| i.path.clone())
                .collect(),
        });
    }

    let mut report = Report::default();
    let tets = if rows.iter().any(|s| s.row.tets.is_some()) {
        let tets = LineFigure::new(&group(
            &rows,
            "tets",
            |r| r.tets,
            "no tets (the scene's mesh)",
        ));
        if tets.has_points() {
            Some(tets)
        } else {
            report
                .not_made
                .push(format!("{FPS_TETS}: no completed row has a mesh size"));
            None
        }
    } else {
        report
            .not_made
            .push(format!("{FPS_TETS}: no row has a mesh size (tets)"));
        None
    };
    let stages = StageFigure::new(&by_particles);
    let devices = DeviceFigure::new(&by_particles);
    let (speedup_rows, no_base) = headline::speedup_rows(&rows);
    let speedup_sourced: Vec<Sourced> = speedup_rows
        .iter()
        .map(|(row, s)| Sourced {
            origin: s.origin,
            row,
        })
        .collect();
    let speedup = {
        let mut figure = LineFigure::new(&group(
            &speedup_sourced,
            "particles",
            |r| Some(r.particles),
            "",
        ));
        figure.y = "speedup";
        figure.skipped.extend(no_base);
        figure
    };
    let mut start = 0;
    let per_file: Vec<(String, series::Grouping)> = inputs
        .iter()
        .map(|input| {
            let own = &rows[start..start + input.rows.len()];
            start += input.rows.len();
            (
                input.path.display().to_string(),
                group(own, "particles", |r| Some(r.particles), ""),
            )
        })
        .collect();
    let summary = headline::summary(&per_file);

    let mut drawn = vec![Drawn {
        name: FPS_PARTICLES,
        png: draw_png(out, FPS_PARTICLES, || {
            draw::line_png(
                &particles,
                "Frames per second by particle count",
                "particles",
                draw::FPS_AXIS,
            )
        })?,
        figure: Figure::Line(&particles),
        series: particles.series.len(),
        points: points_of(&particles),
        note: None,
    }];
    if let Some(tets) = &tets {
        drawn.push(Drawn {
            name: FPS_TETS,
            png: draw_png(out, FPS_TETS, || {
                draw::line_png(
                    tets,
                    "Frames per second by mesh size",
                    "tetrahedra of the wind's mesh",
                    draw::FPS_AXIS,
                )
            })?,
            figure: Figure::Line(tets),
            series: tets.series.len(),
            points: points_of(tets),
            note: None,
        });
    }
    if stages.has_bars() {
        let bars = stages.bars_drawn();
        let note = (stages.bars_total > bars).then(|| {
            format!(
                "{bars} of {} bars drawn: {STAGES}.png draws at most {MAX_BARS}; the rest are \
                 listed in {STAGES}.json's skipped",
                stages.bars_total
            )
        });
        drawn.push(Drawn {
            name: STAGES,
            png: draw_png(out, STAGES, || {
                draw::stage_png(&stages, "Time per stage (ms per frame)")
            })?,
            figure: Figure::Stages(&stages),
            series: stages.series.len(),
            points: bars,
            note,
        });
    } else {
        report
            .not_made
            .push(format!("{STAGES}: no completed row has stage times"));
    }
    drawn.push(Drawn {
        name: DEVICES,
        png: draw_png(out, DEVICES, || {
            draw::device_png(&devices, "Frames per second by device and setup")
        })?,
        figure: Figure::Devices(&devices),
        series: devices.bars.len(),
        points: devices.bars.len(),
        note: (!devices.skipped.is_empty()).then(|| {
            format!(
                "{} bars not drawn: {DEVICES}.png draws at most {}; see {DEVICES}.json's skipped",
                devices.skipped.len(),
                headline::MAX_DEVICE_BARS
            )
        }),
    });
    if speedup.has_points() {
        drawn.push(Drawn {
            name: SPEEDUP,
            png: draw_png(out, SPEEDUP, || {
                draw::line_png(
                    &speedup,
                    "Speed-up of several devices over the snow's device alone",
                    "particles",
                    draw::YAxis {
                        desc: "speed-up (FPS over one device's)",
                        reference: Some(1.0),
                    },
                )
            })?,
            figure: Figure::Line(&speedup),
            series: speedup.series.len(),
            points: points_of(&speedup),
            note: None,
        });
    } else if rows.iter().any(|s| s.row.several_devices()) {
        report.not_made.push(format!(
            "{SPEEDUP}: no completed run on several devices has the same configuration on its \
             snow's device alone to compare with"
        ));
    } else {
        report.not_made.push(format!(
            "{SPEEDUP}: no run on several devices (--wind-device, --snow-devices) to compare"
        ));
    }

    report.written = write_all(out, &drawn, &[(SUMMARY, summary.as_bytes())])?;
    report.summary = out.join(SUMMARY);
    Ok(report)
}

/// Draws one PNG, naming it in an error.
fn draw_png(
    out: &Path,
    name: &str,
    draw: impl FnOnce() -> draw::DrawResult<Vec<u8>>,
) -> Result<Vec<u8>, PlotError> {
    draw().map_err(|error| PlotError::Draw {
        path: out.join(format!("{name}.png")),
        error,
    })
}

/// Points of an FPS figure.
fn points_of(figure: &LineFigure) -> usize {
    figure.series.iter().map(|s| s.points.len()).sum()
}

/// Counts the bytes written through it.
#[derive(Default)]
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes every figure's JSON and PNG into `out` (created if missing), all or none: each goes
/// to a temporary file, and the temporaries are renamed into place only once all of them are
/// written and synced ([`crate::output::commit_all`]: a rename that fails puts back those
/// already made). On an error the temporaries are removed, and `out` too when this call
/// created it (and it is still empty).
fn write_all(
    out: &Path,
    drawn: &[Drawn],
    texts: &[(&str, &[u8])],
) -> Result<Vec<Written>, PlotError> {
    let created = !out.exists();
    std::fs::create_dir_all(out).map_err(|error| PlotError::OutDir {
        path: out.to_path_buf(),
        error,
    })?;
    let result = write_temporaries(out, drawn, texts)
        .and_then(|files| Ok(crate::output::commit_all(files)?));
    match result {
        Ok(()) => Ok(drawn
            .iter()
            .map(|d| Written {
                png: out.join(format!("{}.png", d.name)),
                json: out.join(format!("{}.json", d.name)),
                series: d.series,
                points: d.points,
                note: d.note.clone(),
            })
            .collect()),
        Err(error) => {
            if created {
                // Only an empty folder is removed.
                let _ = std::fs::remove_dir(out);
            }
            Err(error)
        }
    }
}

/// Checks the disk for every file, then writes each (the figures' JSON and PNG, and `texts`,
/// named files of bytes) into a temporary beside it (flushed and synced), returning them
/// uncommitted.
fn write_temporaries(
    out: &Path,
    drawn: &[Drawn],
    texts: &[(&str, &[u8])],
) -> Result<Vec<AtomicFile>, PlotError> {
    let json_error = |path: &Path, error: serde_json::Error| {
        PlotError::Output(OutputError::Io {
            path: path.to_path_buf(),
            error: error.into(),
        })
    };
    let mut bytes = 0u64;
    for d in drawn {
        let mut counter = Counter::default();
        let json_path = out.join(format!("{}.json", d.name));
        d.figure
            .write_json(&mut counter)
            .map_err(|e| json_error(&json_path, e))?;
        bytes = bytes.saturating_add(counter.0 + 1 + d.png.len() as u64);
    }
    for (_, text) in texts {
        bytes = bytes.saturating_add(text.len() as u64);
    }
    if let Ok(disk) = Budget::disk(&out.join(format!("{FPS_PARTICLES}.png"))) {
        let estimate = Estimate::new(out.display().to_string(), "the plots", bytes);
        disk.check(&estimate)
            .map_err(|error| OutputError::DiskSpace(Box::new(error)))?;
    }
    let mut files = Vec::with_capacity(2 * drawn.len());
    for d in drawn {
        let json_path = out.join(format!("{}.json", d.name));
        let mut json = AtomicFile::create(&json_path)?;
        d.figure
            .write_json(&mut json)
            .map_err(|e| json_error(&json_path, e))?;
        json.write_all(b"\n").map_err(|error| OutputError::Io {
            path: json_path.clone(),
            error,
        })?;
        json.sync()?;
        files.push(json);

        let png_path = out.join(format!("{}.png", d.name));
        let mut png = AtomicFile::create(&png_path)?;
        png.write_all(&d.png).map_err(|error| OutputError::Io {
            path: png_path.clone(),
            error,
        })?;
        png.sync()?;
        files.push(png);
    }
    for (name, text) in texts {
        let path = out.join(name);
        let mut file = AtomicFile::create(&path)?;
        file.write_all(text)
            .map_err(|error| OutputError::Io { path, error })?;
        file.sync()?;
        files.push(file);
    }
    Ok(files)
}

/// The most statuses [`status_counts`] names.
const MAX_STATUSES: usize = 10;

/// `status: count` for each status found, in order of first appearance (the first
/// [`MAX_STATUSES`], then how many more).
fn status_counts(rows: &[Sourced]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for s in rows {
        let status = if s.row.status.is_empty() {
            "(empty)"
        } else {
            s.row.status.as_str()
        };
        match index.get(status) {
            Some(&i) => counts[i].1 += 1,
            None => {
                index.insert(status, counts.len());
                counts.push((status, 1));
            }
        }
    }
    let mut text: Vec<String> = counts
        .iter()
        .take(MAX_STATUSES)
        .map(|(s, n)| format!("{s}: {n}"))
        .collect();
    if counts.len() > MAX_STATUSES {
        text.push(format!("{} other statuses", counts.len() - MAX_STATUSES));
    }
    text.join(", ")
}
