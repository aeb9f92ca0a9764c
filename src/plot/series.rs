//! Grouping sweep rows into the series of a plot: one series per combination of settings
//! other than the x-axis quantity, named by the device and the settings that differ between
//! series; rows that failed are kept aside in their series, rows that cannot be placed are
//! listed as skipped.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use super::settings::{Setting, series_key};
use crate::bench::record::Row;

/// Where a row came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Origin {
    /// The CSV file, as given.
    pub file: String,
    /// The row's number in the file: 1 for the first row after the header.
    pub row: usize,
}

/// A row and where it came from.
#[derive(Clone, Copy, Debug)]
pub struct Sourced<'a> {
    /// Its file and number.
    pub origin: &'a Origin,
    /// The row.
    pub row: &'a Row,
}

/// A row left out of a plot, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    /// Its file and number.
    #[serde(flatten)]
    pub origin: Origin,
    /// Why it is not in the plot.
    pub reason: String,
}

/// A row of a series whose configuration did not complete (status other than `ok`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Failure {
    /// Its x value.
    pub x: u64,
    /// Its file and number.
    #[serde(flatten)]
    pub origin: Origin,
    /// `error`, `timeout`, `killed`…
    pub status: String,
    /// The reason the row gives.
    pub error: String,
}

/// The rows of one series, before they become points.
#[derive(Clone, Debug)]
pub struct Group<'a> {
    /// The settings every row of the series shares (all but the x quantity).
    pub key: Vec<Setting>,
    /// The device and the settings that differ between the series of the plot, e.g.
    /// `NVIDIA H100 (sort=full)`.
    pub label: String,
    /// The rows that completed (status `ok`), sorted by x (stable).
    pub ok: Vec<(u64, Sourced<'a>)>,
    /// The rows that did not, sorted by x (stable).
    pub failed: Vec<Failure>,
}

/// The interop and particle-render modes a completed row actually used (its series is keyed by
/// the modes asked for, e.g. `auto`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModesUsed {
    /// `interop` of the row.
    pub interop: String,
    /// `particle_render` of the row.
    pub particle_render: String,
}

impl Group<'_> {
    /// All settings of the series as a map (as the series JSON writes them).
    pub fn settings(&self) -> BTreeMap<&'static str, String> {
        self.key.iter().cloned().collect()
    }

    /// The distinct modes its completed rows used, in order of first appearance.
    pub fn modes_used(&self) -> Vec<ModesUsed> {
        let mut seen = HashSet::new();
        self.ok
            .iter()
            .filter(|(_, s)| seen.insert((s.row.interop.as_str(), s.row.particle_render.as_str())))
            .map(|(_, s)| ModesUsed {
                interop: s.row.interop.clone(),
                particle_render: s.row.particle_render.clone(),
            })
            .collect()
    }
}

/// The rows of a plot, grouped into series.
#[derive(Clone, Debug)]
pub struct Grouping<'a> {
    /// The setting on the x axis.
    pub x: &'static str,
    /// The settings (other than the x one) whose value differs between series, in
    /// [`super::settings::SETTING_NAMES`] order.
    pub varying: Vec<&'static str>,
    /// The series, in the order their first row appears.
    pub groups: Vec<Group<'a>>,
    /// Rows without an x value.
    pub skipped: Vec<Skipped>,
}

/// Groups `rows` by every setting but `x`, whose value `x_of` reads (a row where it reads
/// `None` is skipped, with `missing` as the reason). Time and memory grow linearly with the
/// rows (apart from sorting each series), however many series there are.
pub fn group<'a>(
    rows: &[Sourced<'a>],
    x: &'static str,
    x_of: impl Fn(&Row) -> Option<u64>,
    missing: &str,
) -> Grouping<'a> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut index_of: HashMap<Vec<Setting>, usize> = HashMap::new();
    let mut skipped = Vec::new();
    for sourced in rows {
        let Some(xv) = x_of(sourced.row) else {
            skipped.push(Skipped {
                origin: sourced.origin.clone(),
                reason: missing.to_string(),
            });
            continue;
        };
        let key = series_key(sourced.row, x);
        let index = match index_of.get(&key) {
            Some(&i) => i,
            None => {
                index_of.insert(key.clone(), groups.len());
                groups.push(Group {
                    key,
                    label: String::new(),
                    ok: Vec::new(),
                    failed: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let group = &mut groups[index];
        if sourced.row.status == "ok" {
            group.ok.push((xv, *sourced));
        } else {
            group.failed.push(Failure {
                x: xv,
                origin: sourced.origin.clone(),
                status: sourced.row.status.clone(),
                error: sourced.row.error.clone(),
            });
        }
    }
    let varying = varying_settings(&groups);
    for g in &mut groups {
        g.ok.sort_by_key(|(xv, _)| *xv);
        g.failed.sort_by_key(|f| f.x);
        g.label = label(&g.key, &varying);
    }
    Grouping {
        x,
        varying,
        groups,
        skipped,
    }
}

/// The setting names whose value is not the same in every group's key. The platform and the
/// device's index are part of the device: each counts as varying only where one device name
/// comes with two of them (two GPUs of one model: `NVIDIA H100 [1]`, `NVIDIA H100 [2]`).
fn varying_settings(groups: &[Group]) -> Vec<&'static str> {
    let Some(first) = groups.first() else {
        return Vec::new();
    };
    fn value<'g>(g: &'g Group, name: &str) -> Option<&'g str> {
        g.key
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
    // One device name with two platforms (two indices), found in one pass over the groups.
    let two_of = |setting: &str| {
        let mut seen: HashMap<Option<&str>, Option<&str>> = HashMap::new();
        groups.iter().any(|g| {
            let v = value(g, setting);
            *seen.entry(value(g, "device")).or_insert(v) != v
        })
    };
    let two_platforms = two_of("platform");
    let two_indices = two_of("device_index");
    first
        .key
        .iter()
        .enumerate()
        .filter(|(i, (name, v))| {
            if *name == "platform" {
                two_platforms
            } else if *name == "device_index" {
                two_indices
            } else {
                groups.iter().any(|g| g.key[*i].1 != *v)
            }
        })
        .map(|(_, (name, _))| *name)
        .collect()
}

/// `device (name=value, …)` for the varying settings other than the device (those empty in
/// this series left out: `split` of a run on one device); the device alone when nothing else
/// varies.
fn label(key: &[Setting], varying: &[&str]) -> String {
    let value = |name: &str| {
        key.iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v.as_str())
    };
    let device = match value("device_index") {
        i if !i.is_empty() && varying.contains(&"device_index") => {
            format!("{} [{i}]", value("device"))
        }
        _ => value("device").to_string(),
    };
    let differing: Vec<String> = key
        .iter()
        .filter(|(n, v)| {
            *n != "device" && *n != "device_index" && varying.contains(n) && !v.is_empty()
        })
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    if differing.is_empty() {
        device
    } else {
        format!("{device} ({})", differing.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(device: &str, particles: u64, sort: &str, render: bool, status: &str) -> Row {
        Row {
            device: device.into(),
            particles,
            sort: sort.into(),
            render,
            status: status.into(),
            fps_mean: Some(10.0),
            ..Row::default()
        }
    }

    fn sourced<'a>(rows: &'a [Row], origins: &'a [Origin]) -> Vec<Sourced<'a>> {
        rows.iter()
            .zip(origins)
            .map(|(row, origin)| Sourced { origin, row })
            .collect()
    }

    fn origins(n: usize) -> Vec<Origin> {
        (1..=n)
            .map(|row| Origin {
                file: "a.csv".into(),
                row,
            })
            .collect()
    }

    #[test]
    fn series_differ_by_device_and_sort_only_when_render_is_constant() {
        let rows = vec![
            row("gpu", 1 << 22, "full", true, "ok"),
            row("gpu", 1 << 20, "full", true, "ok"),
            row("gpu", 1 << 20, "off", true, "ok"),
            row("cpu", 1 << 20, "full", true, "error"),
            row("cpu", 1 << 21, "off", true, "ok"),
        ];
        let o = origins(rows.len());
        let g = group(&sourced(&rows, &o), "particles", |r| Some(r.particles), "");
        assert_eq!(g.varying, vec!["device", "sort"]);
        let labels: Vec<&str> = g.groups.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "gpu (sort=full)",
                "gpu (sort=off)",
                "cpu (sort=full)",
                "cpu (sort=off)"
            ]
        );
        let xs: Vec<u64> = g.groups[0].ok.iter().map(|(x, _)| *x).collect();
        assert_eq!(xs, [1 << 20, 1 << 22]);
        assert!(g.groups[2].ok.is_empty());
        assert_eq!(g.groups[2].failed.len(), 1);
        assert_eq!(g.groups[2].failed[0].origin.row, 4);
        assert_eq!(g.groups[2].settings()["render"], "on");
    }

    #[test]
    fn the_platform_shows_only_when_one_device_name_has_two() {
        let mut rows = vec![
            row("gpu", 1 << 20, "", true, "ok"),
            row("cpu", 1 << 20, "", true, "ok"),
        ];
        rows[0].platform = "cuda".into();
        rows[1].platform = "pocl".into();
        let o = origins(rows.len());
        let g = group(&sourced(&rows, &o), "particles", |r| Some(r.particles), "");
        assert_eq!(g.varying, vec!["device"]);
        rows[1].device = "gpu".into();
        let g = group(&sourced(&rows, &o), "particles", |r| Some(r.particles), "");
        assert_eq!(g.varying, vec!["platform"]);
        assert_eq!(g.groups[1].label, "gpu (platform=pocl)");
    }

    #[test]
    fn two_devices_of_one_name_are_kept_apart_by_their_index() {
        // Two H100s of one machine: one series each, named by index (they were one zig-zag
        // series before the CSV had the index); one device alone keeps its bare name.
        let mut rows = vec![
            row("NVIDIA H100", 1 << 20, "", true, "ok"),
            row("NVIDIA H100", 1 << 21, "", true, "ok"),
            row("NVIDIA H100", 1 << 20, "", true, "ok"),
            row("NVIDIA H100", 1 << 21, "", true, "ok"),
        ];
        for (r, index) in rows.iter_mut().zip([1, 1, 2, 2]) {
            r.device_index = vec![index];
        }
        let o = origins(rows.len());
        let g = group(&sourced(&rows, &o), "particles", |r| Some(r.particles), "");
        let labels: Vec<&str> = g.groups.iter().map(|g| g.label.as_str()).collect();
        assert_eq!(labels, ["NVIDIA H100 [1]", "NVIDIA H100 [2]"]);
        assert!(g.groups.iter().all(|g| g.ok.len() == 2));
        let one = &rows[..2];
        let g = group(&sourced(one, &o), "particles", |r| Some(r.particles), "");
        assert_eq!(g.groups[0].label, "NVIDIA H100");
    }

    #[test]
    fn one_series_is_named_by_its_device_and_the_x_setting_never_varies() {
        let rows = vec![
            row("gpu", 1 << 20, "full", false, "ok"),
            row("gpu", 1 << 21, "full", false, "ok"),
        ];
        let o = origins(rows.len());
        let g = group(&sourced(&rows, &o), "particles", |r| Some(r.particles), "");
        assert!(g.varying.is_empty());
        assert_eq!(g.groups.len(), 1);
        assert_eq!(g.groups[0].label, "gpu");
    }

    #[test]
    fn the_particle_count_varies_in_a_mesh_size_plot_and_rows_without_x_are_skipped() {
        let mut rows = vec![
            row("gpu", 1 << 20, "", true, "ok"),
            row("gpu", 1 << 21, "", true, "ok"),
            row("gpu", 1 << 21, "", true, "ok"),
        ];
        rows[0].tets = Some(1000);
        rows[1].tets = Some(1000);
        let o = origins(rows.len());
        let g = group(&sourced(&rows, &o), "tets", |r| r.tets, "no tets");
        assert_eq!(g.varying, vec!["particles"]);
        assert_eq!(g.groups.len(), 2);
        assert_eq!(g.groups[1].label, "gpu (particles=2097152)");
        assert_eq!(g.skipped.len(), 1);
        assert_eq!(g.skipped[0].origin.row, 3);
        assert_eq!(g.skipped[0].reason, "no tets");
    }
}
