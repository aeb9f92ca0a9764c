//! What each plot shows, as data: the series of an FPS plot (points with error bars) and of
//! the stacked per-stage bars, serialisable as the JSON written beside each PNG.

use std::collections::BTreeMap;

use serde::Serialize;

use super::series::{Failure, Grouping, ModesUsed, Skipped};

/// The stages a stacked bar draws, bottom to top: [`crate::bench::record::STAGE_COLUMNS`]
/// without the whole frame.
pub const STAGES: [&str; 7] = [
    "wind",
    "snow",
    "sort",
    "smoothing",
    "splat",
    "transfer",
    "draw",
];

/// The most bars `stages.png` draws (its height grows with them): the first ones in drawing
/// order (series in the order of their first row, each by increasing particle count); the
/// others are listed in the JSON's `skipped`, and [`StageFigure::bars_total`] counts them all.
pub const MAX_BARS: usize = 200;

/// One point of an FPS line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// The x quantity (particles or tetrahedra); drawn at log2(x).
    pub x: u64,
    /// Mean frames per second.
    pub y: f64,
    /// Its standard deviation over the repeats, drawn as an error bar of ±`y_std` (`None`:
    /// no bar).
    pub y_std: Option<f64>,
}

/// One line of an FPS plot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LineSeries {
    /// The legend's text.
    pub label: String,
    /// Every setting the series' rows share.
    pub settings: BTreeMap<&'static str, String>,
    /// The interop and particle-render modes its completed rows used.
    pub modes_used: Vec<ModesUsed>,
    /// The points, by increasing x.
    pub points: Vec<Point>,
    /// Rows of this series that failed: not drawn.
    pub failed: Vec<Failure>,
}

/// An FPS plot: x quantity on a log2 axis, FPS on a linear one.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LineFigure {
    /// The setting on the x axis (`particles` or `tets`).
    pub x: &'static str,
    /// Always `log2`.
    pub x_scale: &'static str,
    /// Always `fps`.
    pub y: &'static str,
    /// The settings that differ between series.
    pub varying: Vec<&'static str>,
    /// The lines, in the order of their first row.
    pub series: Vec<LineSeries>,
    /// Rows that are in no series.
    pub skipped: Vec<Skipped>,
}

impl LineFigure {
    /// The lines of `grouping`; an `ok` row without an FPS is skipped.
    pub fn new(grouping: &Grouping) -> Self {
        let mut skipped = grouping.skipped.clone();
        let series = grouping
            .groups
            .iter()
            .map(|g| {
                let mut points = Vec::new();
                for (x, s) in &g.ok {
                    match s.row.fps_mean {
                        Some(y) if y.is_finite() => points.push(Point {
                            x: *x,
                            y,
                            y_std: s.row.fps_std.filter(|v| v.is_finite()),
                        }),
                        _ => skipped.push(Skipped {
                            origin: s.origin.clone(),
                            reason: "status ok but no fps_mean".into(),
                        }),
                    }
                }
                LineSeries {
                    label: g.label.clone(),
                    settings: g.settings(),
                    modes_used: g.modes_used(),
                    points,
                    failed: g.failed.clone(),
                }
            })
            .collect();
        LineFigure {
            x: grouping.x,
            x_scale: "log2",
            y: "fps",
            varying: grouping.varying.clone(),
            series,
            skipped,
        }
    }

    /// Whether any series has a point to draw.
    pub fn has_points(&self) -> bool {
        self.series.iter().any(|s| !s.points.is_empty())
    }
}

/// One stage's time in a bar.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageTime {
    /// One of [`STAGES`].
    pub stage: &'static str,
    /// Milliseconds per frame; `None` where the row has no time for the stage (drawn as 0).
    pub ms: Option<f64>,
}

/// One stacked bar: a configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bar {
    /// The particle count.
    pub x: u64,
    /// The stages, bottom to top.
    pub stages: Vec<StageTime>,
    /// The row's whole-frame time, for comparison (not drawn).
    pub ms_frame: Option<f64>,
}

impl Bar {
    /// The bar's length: the sum of its stages.
    pub fn total(&self) -> f64 {
        self.stages.iter().filter_map(|s| s.ms).sum()
    }
}

/// The bars of one series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BarSeries {
    /// The series' name (the bars are labelled with it and their particle count).
    pub label: String,
    /// Every setting the series' rows share.
    pub settings: BTreeMap<&'static str, String>,
    /// The interop and particle-render modes its completed rows used.
    pub modes_used: Vec<ModesUsed>,
    /// One bar per completed row, by increasing particle count.
    pub bars: Vec<Bar>,
    /// Rows of this series that failed: not drawn.
    pub failed: Vec<Failure>,
}

/// The stacked per-stage bars, milliseconds per frame.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageFigure {
    /// Always `ms_per_frame`.
    pub unit: &'static str,
    /// The stages, in drawing order.
    pub stages: Vec<&'static str>,
    /// The settings that differ between series.
    pub varying: Vec<&'static str>,
    /// The series, in the order of their first row, with the bars drawn.
    pub series: Vec<BarSeries>,
    /// The most bars drawn ([`MAX_BARS`]).
    pub bar_limit: usize,
    /// Completed rows with stage times: the bars drawn and those beyond [`MAX_BARS`].
    pub bars_total: usize,
    /// Rows that are in no bar, those beyond [`MAX_BARS`] among them.
    pub skipped: Vec<Skipped>,
}

impl StageFigure {
    /// The bars of `grouping` (grouped by particle count); an `ok` row without any stage time
    /// is skipped, and so is every bar after the first [`MAX_BARS`].
    pub fn new(grouping: &Grouping) -> Self {
        let mut skipped = grouping.skipped.clone();
        let mut bars_total = 0;
        let series = grouping
            .groups
            .iter()
            .map(|g| {
                let mut bars = Vec::new();
                for (x, s) in &g.ok {
                    let times = s.row.stage_times();
                    let stages: Vec<StageTime> = STAGES
                        .iter()
                        .map(|stage| StageTime {
                            stage,
                            ms: times
                                .iter()
                                .find(|(name, _)| name == stage)
                                .and_then(|(_, ms)| *ms)
                                .filter(|v| v.is_finite()),
                        })
                        .collect();
                    if stages.iter().all(|s| s.ms.is_none()) {
                        skipped.push(Skipped {
                            origin: s.origin.clone(),
                            reason: "status ok but no stage times".into(),
                        });
                        continue;
                    }
                    bars_total += 1;
                    if bars_total > MAX_BARS {
                        skipped.push(Skipped {
                            origin: s.origin.clone(),
                            reason: format!(
                                "not drawn: stages.png draws the first {MAX_BARS} bars only"
                            ),
                        });
                        continue;
                    }
                    bars.push(Bar {
                        x: *x,
                        stages,
                        ms_frame: s.row.ms_frame,
                    });
                }
                BarSeries {
                    label: g.label.clone(),
                    settings: g.settings(),
                    modes_used: g.modes_used(),
                    bars,
                    failed: g.failed.clone(),
                }
            })
            .collect();
        StageFigure {
            unit: "ms_per_frame",
            stages: STAGES.to_vec(),
            varying: grouping.varying.clone(),
            series,
            bar_limit: MAX_BARS,
            bars_total,
            skipped,
        }
    }

    /// The bars drawn.
    pub fn bars_drawn(&self) -> usize {
        self.series.iter().map(|s| s.bars.len()).sum()
    }

    /// Whether there is a bar to draw.
    pub fn has_bars(&self) -> bool {
        self.series.iter().any(|s| !s.bars.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::record::Row;
    use crate::plot::series::{Origin, Sourced, group};

    /// Rows 1 to `n` of a file `s.csv`.
    fn origins(n: usize) -> Vec<Origin> {
        (1..=n)
            .map(|row| Origin {
                file: "s.csv".into(),
                row,
            })
            .collect()
    }

    /// `rows` with their `origins`, as the figures take them.
    fn sourced<'a>(rows: &'a [Row], origins: &'a [Origin]) -> Vec<Sourced<'a>> {
        rows.iter()
            .zip(origins)
            .map(|(row, origin)| Sourced { origin, row })
            .collect()
    }

    #[test]
    fn completed_rows_without_fps_or_stage_times_are_skipped_with_their_origin() {
        let rows = [
            Row {
                particles: 4,
                status: "ok".into(),
                fps_mean: Some(50.0),
                fps_std: Some(f64::NAN),
                ms_snow: Some(2.0),
                ms_draw: Some(3.0),
                ..Row::default()
            },
            Row {
                particles: 2,
                status: "ok".into(),
                fps_mean: None,
                ..Row::default()
            },
        ];
        let origins = origins(rows.len());
        let sourced = sourced(&rows, &origins);
        let grouping = group(&sourced, "particles", |r| Some(r.particles), "");

        let lines = LineFigure::new(&grouping);
        assert_eq!(
            lines.series[0].points,
            [Point {
                x: 4,
                y: 50.0,
                y_std: None
            }]
        );
        assert_eq!(lines.skipped.len(), 1);
        assert_eq!(lines.skipped[0].origin.row, 2);

        let stages = StageFigure::new(&grouping);
        let bars = &stages.series[0].bars;
        assert_eq!(bars.len(), 1);
        assert_eq!(bars[0].total(), 5.0);
        assert_eq!(bars[0].stages[1].stage, "snow");
        assert_eq!(bars[0].stages[0].ms, None);
        assert_eq!(stages.skipped.len(), 1);
        assert_eq!(stages.skipped[0].reason, "status ok but no stage times");
    }

    #[test]
    fn bars_beyond_the_limit_are_skipped_in_drawing_order() {
        let n = MAX_BARS + 5;
        let rows: Vec<Row> = (0..n)
            .map(|i| Row {
                device: if i % 2 == 0 { "a" } else { "b" }.into(),
                particles: i as u64,
                status: "ok".into(),
                ms_snow: Some(1.0),
                ..Row::default()
            })
            .collect();
        let origins = origins(rows.len());
        let sourced = sourced(&rows, &origins);
        let stages = StageFigure::new(&group(&sourced, "particles", |r| Some(r.particles), ""));
        assert_eq!(stages.bars_total, n);
        assert_eq!(stages.bars_drawn(), MAX_BARS);
        // Series `a` (the even rows, 103 of them) comes first, then `b`'s first 97 bars.
        assert_eq!(stages.series[0].bars.len(), n.div_ceil(2));
        assert_eq!(stages.series[1].bars.len(), MAX_BARS - n.div_ceil(2));
        let skipped: Vec<usize> = stages.skipped.iter().map(|s| s.origin.row).collect();
        // `b`'s last five rows: particle counts 195, 197, …, 203, rows 196, 198, …, 204.
        assert_eq!(skipped, [196, 198, 200, 202, 204]);
        assert!(stages.skipped[0].reason.contains("first 200 bars"));
    }
}
