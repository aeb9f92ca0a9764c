//! `snowsim plot`: figures from the CSVs of benchmark sweeps (`snowsim bench`), like the
//! thesis's Figures 6.1–6.6. FPS against particle count and against mesh size (log2 x axis,
//! one line per device and per setting that varies, error bars of one standard deviation), and
//! stacked bars of the time per stage; each PNG has a JSON beside it naming its series and
//! their points exactly as drawn, the failed rows of each series and the rows left out.

pub mod axis;
pub mod draw;
pub mod figure;
pub mod font;
pub mod series;
pub mod settings;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::bench::record::{RecordError, Row, read_rows};
use crate::output::{OutputError, write_atomic};
use figure::{LineFigure, StageFigure};
use series::{Origin, Sourced, group};

/// Errors making the plots.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No CSV file was given.
    #[error("no CSV file given")]
    NoInput,
    /// A CSV could not be read or does not parse (names the file and line).
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A CSV has a header but no rows, or nothing at all.
    #[error("{}: no rows (an empty sweep CSV)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Not one row completed, so there is nothing to draw.
    #[error("no row to plot: none of the {rows} rows has status ok and an FPS ({statuses})")]
    NothingToPlot {
        /// How many rows were read.
        rows: usize,
        /// The statuses found, with their counts, e.g. `error: 3, timeout: 1`.
        statuses: String,
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

/// The rows of one CSV file.
#[derive(Clone, Debug)]
pub struct Input {
    /// The file, as given.
    pub path: PathBuf,
    /// Its rows, in order.
    pub rows: Vec<Row>,
}

/// Reads every file; a file without rows is an error.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, PlotError> {
    if paths.is_empty() {
        return Err(PlotError::NoInput);
    }
    paths
        .iter()
        .map(|path| {
            let rows = read_rows(path)?;
            if rows.is_empty() {
                return Err(PlotError::Empty { path: path.clone() });
            }
            Ok(Input {
                path: path.clone(),
                rows,
            })
        })
        .collect()
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
}

/// What [`plot`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The plots written.
    pub written: Vec<Written>,
    /// Plots not made, and why (e.g. no row has a mesh size).
    pub not_made: Vec<String>,
}

/// The base names of the plots (`NAME.png` and `NAME.json` in the output folder).
pub const FPS_PARTICLES: &str = "fps_particles";
/// See [`FPS_PARTICLES`].
pub const FPS_TETS: &str = "fps_tets";
/// See [`FPS_PARTICLES`].
pub const STAGES: &str = "stages";

/// Draws the plots of the rows of `inputs` (all files together) into `out`, creating it if
/// missing: [`FPS_PARTICLES`] always, [`FPS_TETS`] when rows have a mesh size, [`STAGES`] when
/// rows have stage times. Nothing is written when no row completed.
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
            statuses: status_counts(&rows),
        });
    }
    std::fs::create_dir_all(out).map_err(|error| PlotError::OutDir {
        path: out.to_path_buf(),
        error,
    })?;

    let mut report = Report::default();
    let png = draw::line_png(
        &particles,
        "Frames per second by particle count",
        "particles",
    );
    report.written.push(write_pair(
        out,
        FPS_PARTICLES,
        png,
        &particles,
        line_counts(&particles),
    )?);

    if rows.iter().any(|s| s.row.tets.is_some()) {
        let tets = LineFigure::new(&group(
            &rows,
            "tets",
            |r| r.tets,
            "no tets (the scene's mesh)",
        ));
        if tets.has_points() {
            let png = draw::line_png(
                &tets,
                "Frames per second by mesh size",
                "tetrahedra of the wind's mesh",
            );
            report
                .written
                .push(write_pair(out, FPS_TETS, png, &tets, line_counts(&tets))?);
        } else {
            report
                .not_made
                .push(format!("{FPS_TETS}: no completed row has a mesh size"));
        }
    } else {
        report
            .not_made
            .push(format!("{FPS_TETS}: no row has a mesh size (tets)"));
    }

    let stages = StageFigure::new(&by_particles);
    if stages.has_bars() {
        let png = draw::stage_png(&stages, "Time per stage (ms per frame)");
        let bars = stages.series.iter().map(|s| s.bars.len()).sum();
        report.written.push(write_pair(
            out,
            STAGES,
            png,
            &stages,
            (stages.series.len(), bars),
        )?);
    } else {
        report
            .not_made
            .push(format!("{STAGES}: no completed row has stage times"));
    }
    Ok(report)
}

/// Series and points of an FPS figure.
fn line_counts(figure: &LineFigure) -> (usize, usize) {
    let points = figure.series.iter().map(|s| s.points.len()).sum();
    (figure.series.len(), points)
}

/// Writes `NAME.json` and `NAME.png` atomically.
fn write_pair(
    out: &Path,
    name: &str,
    png: draw::DrawResult<Vec<u8>>,
    figure: &impl Serialize,
    (series, points): (usize, usize),
) -> Result<Written, PlotError> {
    let png_path = out.join(format!("{name}.png"));
    let json_path = out.join(format!("{name}.json"));
    let png = png.map_err(|error| PlotError::Draw {
        path: png_path.clone(),
        error,
    })?;
    let mut json = serde_json::to_vec_pretty(figure).map_err(|e| PlotError::Draw {
        path: json_path.clone(),
        error: e.to_string(),
    })?;
    json.push(b'\n');
    write_atomic(&json_path, &json)?;
    write_atomic(&png_path, &png)?;
    Ok(Written {
        png: png_path,
        json: json_path,
        series,
        points,
    })
}

/// `status: count` for each status found, in order of first appearance.
fn status_counts(rows: &[Sourced]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for s in rows {
        let status = if s.row.status.is_empty() {
            "(empty)"
        } else {
            s.row.status.as_str()
        };
        match counts.iter_mut().find(|(name, _)| *name == status) {
            Some((_, n)) => *n += 1,
            None => counts.push((status, 1)),
        }
    }
    counts
        .iter()
        .map(|(s, n)| format!("{s}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
