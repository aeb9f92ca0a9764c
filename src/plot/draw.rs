//! Drawing the figures into PNG images with plotters: FPS lines on a log2 x axis with error
//! bars, and horizontal stacked bars of per-stage time.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::{TickedAxis, axis_end, number_label, value_ticks};
use super::figure::{LineFigure, MAX_BARS, STAGES, StageFigure};
use super::font::{FAMILY, register};
use super::headline::DeviceFigure;

/// Width of every image, pixels.
pub const WIDTH: u32 = 1280;
/// Height of an FPS plot, pixels.
pub const LINE_HEIGHT: u32 = 800;

/// The height of the stage plot for `bars` bars, pixels: at most that of [`MAX_BARS`] bars
/// (6160).
pub fn stage_height(bars: usize) -> u32 {
    (160 + 30 * bars.min(MAX_BARS) as u32).max(400)
}

/// The most series an FPS plot's legend names; a last entry says how many more there are
/// (colours repeat every 10 series anyway, and each entry costs text layout).
pub const MAX_LEGEND: usize = 20;

/// The most characters of a series' label drawn (the JSON has it whole).
pub const MAX_LABEL_CHARS: usize = 80;

/// `label`, cut to [`MAX_LABEL_CHARS`] characters with `…` where longer.
fn shown(label: &str) -> String {
    match label.char_indices().nth(MAX_LABEL_CHARS - 1) {
        Some((end, _)) if label.chars().count() > MAX_LABEL_CHARS => {
            format!("{}…", &label[..end])
        }
        _ => label.to_string(),
    }
}

/// An error while drawing (plotters' errors, as text).
pub type DrawResult<T> = Result<T, String>;

fn text<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// What a line plot's y axis shows.
#[derive(Clone, Copy, Debug)]
pub struct YAxis<'a> {
    /// The axis' description.
    pub desc: &'a str,
    /// A value drawn as a dashed horizontal line (1 on a speed-up plot: no gain), if any.
    pub reference: Option<f64>,
}

/// The y axis of an FPS plot.
pub const FPS_AXIS: YAxis<'static> = YAxis {
    desc: "frames per second",
    reference: None,
};

/// The FPS plot of `figure` as a PNG, [`WIDTH`]×[`LINE_HEIGHT`]; `y` says what its y values
/// are.
pub fn line_png(figure: &LineFigure, title: &str, x_desc: &str, y: YAxis) -> DrawResult<Vec<u8>> {
    register()?;
    let mut rgb = vec![0u8; WIDTH as usize * LINE_HEIGHT as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, LINE_HEIGHT)).into_drawing_area();
        draw_lines(&root, figure, title, x_desc, y)?;
        root.present().map_err(text)?;
    }
    png(rgb, WIDTH, LINE_HEIGHT)
}

/// The stacked bars of `figure` as a PNG, [`WIDTH`] wide.
pub fn stage_png(figure: &StageFigure, title: &str) -> DrawResult<Vec<u8>> {
    register()?;
    let bars = figure.series.iter().map(|s| s.bars.len()).sum();
    let height = stage_height(bars);
    let mut rgb = vec![0u8; WIDTH as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, height)).into_drawing_area();
        draw_stages(&root, figure, title)?;
        root.present().map_err(text)?;
    }
    png(rgb, WIDTH, height)
}

/// Encodes an RGB buffer as PNG.
fn png(rgb: Vec<u8>, width: u32, height: u32) -> DrawResult<Vec<u8>> {
    let image = image::RgbImage::from_raw(width, height, rgb)
        .ok_or_else(|| "the image buffer has the wrong size".to_string())?;
    let mut bytes = Vec::new();
    image
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .map_err(text)?;
    Ok(bytes)
}

/// The colour of series (or stage) `i`.
fn colour(i: usize) -> RGBColor {
    const COLOURS: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    COLOURS[i % COLOURS.len()]
}

fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    figure: &LineFigure,
    title: &str,
    x_desc: &str,
    y: YAxis,
) -> DrawResult<()> {
    root.fill(&WHITE).map_err(text)?;
    let log2 = |x: u64| (x.max(1) as f64).log2();
    let xs: Vec<f64> = figure
        .series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.x)
                .chain(s.failed.iter().map(|f| f.x))
        })
        .map(log2)
        .collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min).floor();
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max).ceil();
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        (lo, hi.max(lo + 1.0))
    } else {
        (0.0, 1.0)
    };
    let step = ((hi - lo) / 16.0).ceil().max(1.0);
    // x is log2 of a u64: lo and hi lie in 0..=64.
    let ticks: Vec<f64> = (0..=64)
        .map(|i| lo + step * f64::from(i))
        .take_while(|t| *t <= hi)
        .collect();
    // Finite: every FPS and FPS + std was checked (`check::check_row`).
    let y_top = figure
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.y + p.y_std.unwrap_or(0.0))
        .fold(y.reference.unwrap_or(0.0), f64::max);
    let y_max = axis_end(y_top, 1.1);
    let (y_ticks, y_step) = value_ticks(y_max);

    let mut chart = ChartBuilder::on(root)
        .caption(title, (FAMILY, 28))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(
            TickedAxis {
                range: lo - 0.3..hi + 0.3,
                ticks,
            },
            TickedAxis {
                range: 0.0..y_max,
                ticks: y_ticks,
            },
        )
        .map_err(text)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y.desc)
        .x_label_formatter(&|v| format!("2^{}", v.round() as i64))
        .y_label_formatter(&|v| number_label(*v, y_step))
        .label_style((FAMILY, 18))
        .axis_desc_style((FAMILY, 20))
        .draw()
        .map_err(text)?;

    if let Some(level) = y.reference {
        let grey = RGBColor(90, 90, 90);
        let (a, b) = (lo - 0.3, hi + 0.3);
        let dashes = (0..60).map(|i| {
            let x0 = a + (b - a) * f64::from(i) / 60.0;
            let x1 = x0 + (b - a) / 120.0;
            PathElement::new(vec![(x0, level), (x1, level)], grey.stroke_width(2))
        });
        chart.draw_series(dashes).map_err(text)?;
    }
    let cap = 0.06 * step;
    for (i, series) in figure.series.iter().enumerate() {
        let c = colour(i);
        let line = c.stroke_width(2);
        let points: Vec<(f64, f64)> = series.points.iter().map(|p| (log2(p.x), p.y)).collect();
        let label = if series.failed.is_empty() {
            shown(&series.label)
        } else {
            format!(
                "{} [{} failed: ×]",
                shown(&series.label),
                series.failed.len()
            )
        };
        let drawn = chart
            .draw_series(LineSeries::new(points.clone(), line))
            .map_err(text)?;
        if i < MAX_LEGEND {
            drawn
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], line));
        }
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 4, c.filled())))
            .map_err(text)?;
        let bars = series.points.iter().filter_map(|p| {
            let std = p.y_std.filter(|s| *s > 0.0)?;
            let x = log2(p.x);
            let (low, high) = ((p.y - std).max(0.0), p.y + std);
            Some([
                PathElement::new(vec![(x, low), (x, high)], c.stroke_width(1)),
                PathElement::new(vec![(x - cap, low), (x + cap, low)], c.stroke_width(1)),
                PathElement::new(vec![(x - cap, high), (x + cap, high)], c.stroke_width(1)),
            ])
        });
        chart.draw_series(bars.flatten()).map_err(text)?;
        chart
            .draw_series(
                series
                    .failed
                    .iter()
                    .map(|f| Cross::new((log2(f.x), 0.0), 6, c.stroke_width(2))),
            )
            .map_err(text)?;
    }
    if figure.series.len() > MAX_LEGEND {
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(text)?
            .label(format!(
                "… and {} more series (see the JSON)",
                figure.series.len() - MAX_LEGEND
            ))
            .legend(|(x, y)| EmptyElement::at((x, y)));
    }
    draw_legend(&mut chart)
}

fn draw_stages<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    figure: &StageFigure,
    title: &str,
) -> DrawResult<()> {
    root.fill(&WHITE).map_err(text)?;
    let bars: Vec<(String, &super::figure::Bar)> = figure
        .series
        .iter()
        .flat_map(|s| {
            s.bars
                .iter()
                .map(move |b| (format!("{} · {}", shown(&s.label), power_of_two(b.x)), b))
        })
        .collect();
    let n = bars.len();
    // Finite: every stacked sum was checked (`check::check_row`).
    let x_top = bars.iter().map(|(_, b)| b.total()).fold(0.0, f64::max);
    // Room on the right for the legend.
    let x_max = axis_end(x_top, 1.3);
    let labels: Vec<String> = bars.iter().map(|(l, _)| l.clone()).collect();
    let row = |i: usize| (n - 1 - i) as f64;
    let mut chart = bar_chart(root, title, &labels, x_max, "milliseconds per frame")?;

    for (s, stage) in STAGES.iter().enumerate() {
        let c = colour(s);
        let rects = bars.iter().enumerate().filter_map(|(i, (_, bar))| {
            let start: f64 = bar.stages[..s].iter().filter_map(|t| t.ms).sum();
            let ms = bar.stages[s].ms.filter(|ms| *ms > 0.0)?;
            let y = row(i);
            Some(Rectangle::new(
                [(start, y - 0.35), (start + ms, y + 0.35)],
                c.filled(),
            ))
        });
        chart
            .draw_series(rects)
            .map_err(text)?
            .label(*stage)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.filled()));
    }
    draw_legend(&mut chart)
}

/// The series' legend in the upper right corner, as every plot draws it.
fn draw_legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> DrawResult<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FAMILY, 16))
        .draw()
        .map_err(text)
}

/// A chart of horizontal bars, one row per label (the first at the top), its x axis from 0
/// to `x_max` described by `x_desc`: what the stage and device plots share.
fn bar_chart<'a, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    x_max: f64,
    x_desc: &str,
) -> DrawResult<ChartContext<'a, DB, Cartesian2d<TickedAxis, TickedAxis>>> {
    let n = labels.len();
    let (x_ticks, x_step) = value_ticks(x_max);
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let label_area = (longest as u32 * 9 + 20).clamp(120, WIDTH / 2);
    // Bar i is drawn at y = n - 1 - i, so the first bar is at the top.
    let ticks: Vec<f64> = (0..n).map(|i| (n - 1 - i) as f64).collect();
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FAMILY, 28))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(label_area)
        .build_cartesian_2d(
            TickedAxis {
                range: 0.0..x_max,
                ticks: x_ticks,
            },
            TickedAxis {
                range: -0.6..n as f64 - 0.4,
                ticks,
            },
        )
        .map_err(text)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(x_desc)
        .x_label_formatter(&|v| number_label(*v, x_step))
        .y_label_formatter(&|v| {
            let i = n as i64 - 1 - v.round() as i64;
            usize::try_from(i)
                .ok()
                .and_then(|i| labels.get(i))
                .map_or(String::new(), |l| l.to_string())
        })
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 20))
        .draw()
        .map_err(text)?;
    Ok(chart)
}

/// `2^N` when `x` is a power of two, else `x` itself.
pub fn power_of_two(x: u64) -> String {
    if x.is_power_of_two() {
        format!("2^{}", x.trailing_zeros())
    } else {
        x.to_string()
    }
}

/// The height of the device plot for `bars` bars, pixels.
pub fn device_height(bars: usize) -> u32 {
    (160 + 40 * bars.min(MAX_BARS) as u32).max(360)
}

/// The headline bars of `figure` as a PNG, [`WIDTH`] wide: one horizontal bar per device and
/// setup, its FPS written at its end, an error bar of one standard deviation.
pub fn device_png(figure: &DeviceFigure, title: &str) -> DrawResult<Vec<u8>> {
    register()?;
    let height = device_height(figure.bars.len());
    let mut rgb = vec![0u8; WIDTH as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, height)).into_drawing_area();
        draw_devices(&root, figure, title)?;
        root.present().map_err(text)?;
    }
    png(rgb, WIDTH, height)
}

fn draw_devices<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    figure: &DeviceFigure,
    title: &str,
) -> DrawResult<()> {
    root.fill(&WHITE).map_err(text)?;
    let labels: Vec<String> = figure
        .bars
        .iter()
        .map(|b| format!("{} · {}", shown(&b.label), power_of_two(b.particles)))
        .collect();
    let n = labels.len();
    // Finite: every FPS and FPS + std was checked (`check::check_row`).
    let x_top = figure
        .bars
        .iter()
        .map(|b| b.fps + b.fps_std.unwrap_or(0.0))
        .fold(0.0, f64::max);
    // Room on the right for the values written at the bars' ends.
    let x_max = axis_end(x_top, 1.25);
    let row = |i: usize| (n - 1 - i) as f64;
    let mut chart = bar_chart(
        root,
        title,
        &labels,
        x_max,
        "frames per second (the largest particle count that completed)",
    )?;
    for (i, bar) in figure.bars.iter().enumerate() {
        let c = colour(i);
        let y = row(i);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.35), (bar.fps, y + 0.35)],
                c.filled(),
            )))
            .map_err(text)?;
        let end = match bar.fps_std.filter(|s| *s > 0.0) {
            Some(std) => {
                let (low, high) = ((bar.fps - std).max(0.0), bar.fps + std);
                chart
                    .draw_series([
                        PathElement::new(vec![(low, y), (high, y)], BLACK.stroke_width(1)),
                        PathElement::new(vec![(low, y - 0.15), (low, y + 0.15)], BLACK),
                        PathElement::new(vec![(high, y - 0.15), (high, y + 0.15)], BLACK),
                    ])
                    .map_err(text)?;
                high
            }
            None => bar.fps,
        };
        let value = match bar.fps_std {
            Some(std) => format!("{:.1} ± {:.1}", bar.fps, std),
            None => format!("{:.1}", bar.fps),
        };
        chart
            .draw_series(std::iter::once(Text::new(
                value,
                // Within the axis: beyond it the position would not map to a pixel.
                ((end + x_max * 0.01).min(x_max), y + 0.12),
                (FAMILY, 15),
            )))
            .map_err(text)?;
    }
    Ok(())
}
