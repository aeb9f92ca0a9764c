//! The headline numbers of sweeps: one bar per device and setup (`devices.png`), the speed-up
//! of runs on several devices over the same configuration on the snow's device alone
//! (`speedup.png`), and a markdown table of each sweep's headline rows (`summary.md`), as
//! FluidX3D's README lists its devices.
//!
//! A series' headline is its completed row of the largest particle count: the figure a device
//! is quoted by.

use std::collections::BTreeMap;

use serde::Serialize;

use super::series::{Grouping, Skipped, Sourced};
use crate::bench::record::Row;

/// The most bars `devices.png` draws; the others are listed in its JSON's `skipped`.
pub const MAX_DEVICE_BARS: usize = super::figure::MAX_BARS;

/// One bar of `devices.png`: a series' headline row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceBar {
    /// The series' label (the device, kept apart by its index where names repeat, and the
    /// settings that differ).
    pub label: String,
    /// Every setting of the series.
    pub settings: BTreeMap<&'static str, String>,
    /// The headline row's particle count.
    pub particles: u64,
    /// Its FPS (mean over the repeats).
    pub fps: f64,
    /// Its standard deviation.
    pub fps_std: Option<f64>,
    /// Its file and row.
    pub origin: super::series::Origin,
}

/// The headline FPS of every series, one bar each, in the order of the series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeviceFigure {
    /// The settings that differ between series.
    pub varying: Vec<&'static str>,
    /// The bars drawn, top to bottom.
    pub bars: Vec<DeviceBar>,
    /// Series without a completed row, and bars beyond [`MAX_DEVICE_BARS`].
    pub skipped: Vec<Skipped>,
}

impl DeviceFigure {
    /// The headline bar of each series of `grouping` (grouped by particle count).
    pub fn new(grouping: &Grouping) -> Self {
        let mut bars = Vec::new();
        let mut skipped = Vec::new();
        for g in &grouping.groups {
            // g.ok is sorted by particle count: the last with an FPS is the headline.
            let Some((x, s)) = g.ok.iter().rev().find(|(_, s)| s.row.fps_mean.is_some()) else {
                continue;
            };
            if bars.len() == MAX_DEVICE_BARS {
                skipped.push(Skipped {
                    origin: s.origin.clone(),
                    reason: format!(
                        "not drawn: devices.png draws the first {MAX_DEVICE_BARS} bars only"
                    ),
                });
                continue;
            }
            bars.push(DeviceBar {
                label: g.label.clone(),
                settings: g.settings(),
                particles: *x,
                fps: s.row.fps_mean.unwrap_or(0.0),
                fps_std: s.row.fps_std,
                origin: s.origin.clone(),
            });
        }
        Self {
            varying: grouping.varying.clone(),
            bars,
            skipped,
        }
    }
}

/// Whether `base` is `row`'s configuration on its snow's device alone: one device, the first
/// of `row`'s, no wind device, every other setting the same.
fn is_alone_of(base: &Row, row: &Row) -> bool {
    base.status == "ok"
        && base.fps_mean.is_some()
        && !base.several_devices()
        && base.device == row.device.split(';').next().unwrap_or("")
        && base.device_index.first() == row.device_index.first()
        && base.platform == row.platform
        && base.scene == row.scene
        && base.particles == row.particles
        && base.tets == row.tets
        && (base.width, base.height, base.render) == (row.width, row.height, row.render)
        && base.interop_requested == row.interop_requested
        && base.particle_render_requested == row.particle_render_requested
        && base.sort == row.sort
        && base.simulate == row.simulate
        && base.wind_every == row.wind_every
        && (base.frames, base.warmup) == (row.frames, row.warmup)
}

/// The rows of `speedup.png`: every row run on several devices (a wind device or a split)
/// that has the same configuration on its snow's device alone (`is_alone_of`, the last such
/// row), as a copy whose `fps_mean` is the speed-up (its FPS over the one device's) and whose
/// `fps_std` is that ratio's, the two rows' relative deviations added in quadrature; a failed
/// row with several devices is kept as it is (drawn as a failure). Rows with several devices
/// but no row alone to compare with are returned apart.
pub fn speedup_rows<'a>(rows: &[Sourced<'a>]) -> (Vec<(Row, Sourced<'a>)>, Vec<Skipped>) {
    let mut out = Vec::new();
    let mut alone = Vec::new();
    for s in rows.iter().filter(|s| s.row.several_devices()) {
        if s.row.status != "ok" {
            out.push((s.row.clone(), *s));
            continue;
        }
        let base = rows.iter().rev().find(|b| is_alone_of(b.row, s.row));
        match (base.and_then(|b| b.row.fps_mean), s.row.fps_mean) {
            (Some(b), Some(f)) if b > 0.0 => {
                let base = base.map(|b| b.row);
                let rel = |m: f64, sd: Option<f64>| sd.map(|sd| sd / m);
                let ratio = f / b;
                let std = match (
                    rel(f, s.row.fps_std),
                    base.and_then(|b| rel(b.fps_mean?, b.fps_std)),
                ) {
                    (Some(x), Some(y)) => Some(ratio * x.hypot(y)),
                    _ => None,
                };
                let mut row = s.row.clone();
                row.fps_mean = Some(ratio);
                row.fps_std = std.filter(|v| v.is_finite());
                out.push((row, *s));
            }
            _ => alone.push(Skipped {
                origin: s.origin.clone(),
                reason: "no completed row of the same configuration on the snow's device alone"
                    .into(),
            }),
        }
    }
    (out, alone)
}

/// `text` with the characters that would break a markdown table cell escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The markdown summary of the sweeps: for each file a table of its series' headline rows
/// (device(s), setup, particles, render, FPS mean ± std, ms per frame), one line per series.
/// `files` pairs each file's name with the grouping of its rows alone.
pub fn summary(files: &[(String, Grouping)]) -> String {
    let mut md = format!(
        "{}\n\nEach line is a device and setup: its completed run of the most \
         particles (FPS mean ± standard deviation over the repeats).\n",
        crate::output::rule::SUMMARY_TITLE
    );
    for (file, grouping) in files {
        md.push_str(&format!("\n## {}\n\n", cell(file)));
        let others: Vec<&str> = grouping
            .varying
            .iter()
            .copied()
            .filter(|n| {
                ![
                    "device",
                    "device_index",
                    "platform",
                    "wind_device",
                    "wind_every",
                    "split",
                ]
                .contains(n)
            })
            .collect();
        md.push_str(
            "| Device(s) | Setup | Particles | Render | FPS | ms per frame |\n\
             |---|---|---:|---|---:|---:|\n",
        );
        let mut failed = 0;
        for g in &grouping.groups {
            let Some((_, s)) = g.ok.iter().rev().find(|(_, s)| s.row.fps_mean.is_some()) else {
                failed += 1;
                continue;
            };
            let r = s.row;
            let indices: Vec<String> = r.device_index.iter().map(usize::to_string).collect();
            let device = if indices.is_empty() {
                r.device_names()
            } else {
                format!("{} [{}]", r.device_names(), indices.join("+"))
            };
            let mut setup = vec![r.setup()];
            let settings = g.settings();
            setup.extend(
                others
                    .iter()
                    .filter_map(|n| settings.get(n).map(|v| format!("{n} {v}"))),
            );
            let render = if r.render {
                let mode = if r.particle_render.is_empty() {
                    &r.particle_render_requested
                } else {
                    &r.particle_render
                };
                format!("{}×{} {mode}", r.width, r.height)
            } else {
                "off".to_string()
            };
            let fps = match (r.fps_mean, r.fps_std) {
                (Some(m), Some(sd)) => format!("{m:.1} ± {sd:.1}"),
                (Some(m), None) => format!("{m:.1}"),
                _ => String::new(),
            };
            let ms = r.ms_frame.map_or(String::new(), |f| format!("{f:.3}"));
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                cell(&device),
                cell(&setup.join(", ")),
                r.particles,
                cell(&render),
                fps,
                ms
            ));
        }
        if failed > 0 {
            md.push_str(&format!(
                "\n{failed} device(s) or setup(s) of this sweep have no completed run.\n"
            ));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::series::{Origin, group};

    fn row(device: &str, index: Vec<usize>, particles: u64, fps: f64) -> Row {
        Row {
            device: device.into(),
            device_index: index,
            particles,
            status: "ok".into(),
            fps_mean: Some(fps),
            fps_std: Some(fps / 10.0),
            ms_frame: Some(1000.0 / fps),
            ..Row::default()
        }
    }

    #[test]
    fn speed_up_is_over_the_same_configuration_on_the_snow_device_alone() {
        let mut wind = row("gpu", vec![0], 1024, 150.0);
        wind.wind_device = "1 gpu".into();
        wind.wind_device_index = Some(1);
        let mut lonely = row("gpu;gpu", vec![0, 1], 4096, 40.0);
        lonely.snow_shares = "2048;2048".into();
        let mut split = row("gpu;gpu", vec![0, 1], 1024, 180.0);
        split.snow_shares = "512;512".into();
        let rows = [
            row("gpu", vec![0], 1024, 100.0),
            row("gpu", vec![1], 1024, 10.0),
            split,
            wind,
            lonely,
        ];
        let origins: Vec<Origin> = (1..=rows.len())
            .map(|row| Origin {
                file: "a.csv".into(),
                row,
            })
            .collect();
        let sourced: Vec<Sourced> = rows
            .iter()
            .zip(&origins)
            .map(|(row, origin)| Sourced { origin, row })
            .collect();
        let (ratios, alone) = speedup_rows(&sourced);
        let got: Vec<(usize, f64)> = ratios
            .iter()
            .map(|(r, s)| (s.origin.row, r.fps_mean.unwrap()))
            .collect();
        assert_eq!(got, [(3, 1.8), (4, 1.5)]);
        // Both relative deviations are 10 %: the ratio's is √2 × 10 %.
        let std = ratios[0].0.fps_std.unwrap();
        assert!((std - 1.8 * 0.1 * 2f64.sqrt()).abs() < 1e-12, "{std}");
        assert_eq!(alone.len(), 1);
        assert_eq!(alone[0].origin.row, 5);

        let grouping = group(&sourced, "particles", |r| Some(r.particles), "");
        let devices = DeviceFigure::new(&grouping);
        let bars: Vec<(&str, u64, f64)> = devices
            .bars
            .iter()
            .map(|b| (b.label.as_str(), b.particles, b.fps))
            .collect();
        // Two devices of one name kept apart by their indices; the split's headline is its
        // largest particle count.
        assert_eq!(
            bars,
            [
                ("gpu [0] (wind_device=same)", 1024, 100.0),
                ("gpu [1] (wind_device=same)", 1024, 10.0),
                (
                    "gpu ×2 [0+1] (wind_device=same, split=0.50+0.50)",
                    4096,
                    40.0
                ),
                ("gpu [0] (wind_device=1)", 1024, 150.0),
            ]
        );

        let md = summary(&[("a.csv".into(), grouping)]);
        assert!(md.contains("## a.csv"), "{md}");
        assert!(
            md.contains(
                "| gpu ×2 [0+1] | snow 0+1, shares 2048+2048 | 4096 | off | 40.0 ± 4.0 | 25.000 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| gpu [0] | one device | 1024 | off | 100.0 ± 10.0 | 10.000 |"),
            "{md}"
        );
        assert_eq!(md.matches("\n| gpu").count(), 4, "{md}");
    }
}
