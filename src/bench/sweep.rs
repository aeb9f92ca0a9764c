//! Benchmark sweeps (`snowsim bench` without a sub-command): the cartesian product of the
//! settings asked for, each configuration run R times as `snowsim run --headless --json`
//! child processes with a timeout, averaged into one [`Row`] of the sweep's CSV.
//!
//! A child that fails (an error, a timeout, a signal: PoCL aborts on some allocation failures)
//! gives its configuration a row saying so, and the sweep goes on.

mod child;
mod date;
mod stats;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub use child::{Outcome, RunReport, ShareReport, StageReport, reason, run_child};
pub use date::rfc3339_utc;
pub use stats::{distinct, mean_stages, mean_std};

use super::record::{RecordError, Row, SCHEMA_VERSION, write_rows};
use crate::cl::{DeviceInfo, DeviceSelector};
use crate::scene::Scene;

/// The git commit this snowsim was built from (`unknown` outside a checkout).
pub const GIT_COMMIT: &str = env!("SNOWSIM_GIT_COMMIT");

/// Errors that stop a sweep (a failing configuration does not: it gets a row).
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The child process could not be started.
    #[error("cannot run {}: {error}", exe.display())]
    Spawn {
        /// The executable.
        exe: PathBuf,
        /// Why.
        error: String,
    },
    /// The OpenCL devices could not be listed or the selector matches none.
    #[error(transparent)]
    Device(#[from] crate::cl::Error),
    /// A `--devices` entry that is not a selector.
    #[error("--devices: {0}")]
    Selector(String),
    /// An item of a list option (`--wind-device`, `--snow-devices`, `--snow-shares`) that is
    /// not what the option takes, or names no device.
    #[error("{option} {value:?}: {error}")]
    Item {
        /// The option.
        option: &'static str,
        /// The item as given.
        value: String,
        /// What is wrong with it.
        error: String,
    },
    /// Writing the CSV failed.
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// What the scene itself says, for the columns of settings the sweep leaves to it.
#[derive(Clone, Debug, PartialEq)]
pub struct SceneDefaults {
    /// `snow.particles`.
    pub particles: u64,
    /// `view.window`.
    pub size: (u32, u32),
    /// `snow.sort`: `off`, `full` or `partial`.
    pub sort: String,
    /// `[simulate]`: `wind+snow`, `wind` or `snow`.
    pub simulate: String,
}

impl SceneDefaults {
    /// The defaults of `scene`.
    pub fn of(scene: &Scene) -> Self {
        let simulate = match (scene.simulate.wind, scene.simulate.snow) {
            (true, true) => "wind+snow",
            (true, false) => "wind",
            (false, true) => "snow",
            (false, false) => "",
        };
        Self {
            particles: scene.snow.particles,
            size: (scene.view.window[0], scene.view.window[1]),
            sort: scene.snow.sort.name().to_string(),
            simulate: simulate.to_string(),
        }
    }
}

/// The snow's devices of a configuration: one (`--devices`, passed as `--device`), or its
/// parcels split across several (`--snow-devices`, the snow's own device first).
#[derive(Clone, Debug)]
pub struct SnowSetup {
    /// The devices, the snow's own first; never empty.
    pub devices: Vec<DeviceInfo>,
    /// The weights of the split (`--snow-shares`), one per device; empty: measured by each
    /// run (`snowsim run --snow-shares auto`).
    pub shares: Vec<f64>,
}

impl SnowSetup {
    /// The snow on `device` alone.
    pub fn one(device: DeviceInfo) -> Self {
        Self {
            devices: vec![device],
            shares: Vec::new(),
        }
    }

    /// Whether the parcels are split across several devices.
    pub fn is_split(&self) -> bool {
        self.devices.len() > 1
    }

    /// The devices' indices joined by `sep`.
    fn indices(&self, sep: &str) -> String {
        let text: Vec<String> = self.devices.iter().map(|d| d.index.to_string()).collect();
        text.join(sep)
    }

    /// A `;`-list of one text of each device (the CSV's device columns).
    fn list(&self, of: impl Fn(&DeviceInfo) -> String) -> String {
        let text: Vec<String> = self.devices.iter().map(of).collect();
        text.join(";")
    }
}

/// A sweep: every list of settings (`None` in a list: the child's default, the option not
/// passed), the frames, repeats and timeout of each run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The snow's devices of each configuration: one each from `--devices` (run through
    /// `--device INDEX`), or the splits of `--snow-devices` (run through `--snow-devices`).
    pub devices: Vec<SnowSetup>,
    /// `--wind-device`: the wind solver's own device (`None`: the snow's, the option not
    /// passed).
    pub wind_devices: Vec<Option<DeviceInfo>>,
    /// `--wind-every`.
    pub wind_every: Vec<Option<u32>>,
    /// The scene file, as given to the child.
    pub scene: PathBuf,
    /// What the scene says for the settings left to it.
    pub defaults: SceneDefaults,
    /// `--particles`.
    pub particles: Vec<Option<u64>>,
    /// `--tets`.
    pub tets: Vec<Option<u64>>,
    /// `--interop`: `auto`, `share`, `external`, `copy`.
    pub interop: Vec<Option<String>>,
    /// `--particle-render`: `auto`, `sprites`, `splat`.
    pub particle_render: Vec<Option<String>>,
    /// `--sort`: `off`, `full`, `partial`.
    pub sort: Vec<Option<String>>,
    /// `--simulate`: `wind`, `snow` or `wind+snow` (passed as `wind,snow`).
    pub simulate: Vec<Option<String>>,
    /// `--render`: on (`true`) or off.
    pub render: Vec<Option<bool>>,
    /// Measured frames per run.
    pub frames: u32,
    /// Warm-up frames per run, before the measured ones.
    pub warmup: u32,
    /// Runs (processes) per configuration.
    pub repeats: u32,
    /// How long one run may take before it is killed.
    pub timeout: Duration,
    /// `--size WxH` (`None`: the scene's window).
    pub size: Option<(u32, u32)>,
}

/// One configuration of a [`Plan`]: an element of its cartesian product.
#[derive(Clone, Debug, PartialEq)]
pub struct Configuration {
    /// Position in [`Plan::devices`].
    pub device: usize,
    /// Position in [`Plan::wind_devices`] of the wind's own device (`None`: the snow's).
    pub wind_device: Option<usize>,
    /// `--wind-every`.
    pub wind_every: Option<u32>,
    /// `--particles`.
    pub particles: Option<u64>,
    /// `--tets`.
    pub tets: Option<u64>,
    /// `--interop`.
    pub interop: Option<String>,
    /// `--particle-render`.
    pub particle_render: Option<String>,
    /// `--sort`.
    pub sort: Option<String>,
    /// `--simulate`.
    pub simulate: Option<String>,
    /// `--render`.
    pub render: Option<bool>,
}

/// A list with one `None` where the user gave none.
fn or_default<T: Clone>(list: &[Option<T>]) -> Vec<Option<T>> {
    if list.is_empty() {
        vec![None]
    } else {
        list.to_vec()
    }
}

impl Plan {
    /// Every configuration: devices (or snow devices) × wind device × wind every × particles
    /// × tets × interop × particle-render × sort × simulate × render, the last varying
    /// fastest. An empty list counts as one default.
    pub fn configurations(&self) -> Vec<Configuration> {
        let winds: Vec<Option<usize>> = if self.wind_devices.is_empty() {
            vec![None]
        } else {
            (0..self.wind_devices.len())
                .map(|i| self.wind_devices[i].as_ref().map(|_| i))
                .collect()
        };
        let mut heads = Vec::new();
        for device in 0..self.devices.len() {
            for &wind_device in &winds {
                for &wind_every in &or_default(&self.wind_every) {
                    heads.push((device, wind_device, wind_every));
                }
            }
        }
        let mut all = Vec::new();
        for (device, wind_device, wind_every) in heads {
            for &particles in &or_default(&self.particles) {
                for &tets in &or_default(&self.tets) {
                    for interop in or_default(&self.interop) {
                        for particle_render in or_default(&self.particle_render) {
                            for sort in or_default(&self.sort) {
                                for simulate in or_default(&self.simulate) {
                                    for &render in &or_default(&self.render) {
                                        all.push(Configuration {
                                            device,
                                            wind_device,
                                            wind_every,
                                            particles,
                                            tets,
                                            interop: interop.clone(),
                                            particle_render: particle_render.clone(),
                                            sort: sort.clone(),
                                            simulate: simulate.clone(),
                                            render,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        all
    }

    /// The arguments of `snowsim` that run `config` once: only the settings given are passed.
    pub fn child_args(&self, config: &Configuration) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["run".into(), "--headless".into(), "--json".into()];
        let mut pair = |name: &str, value: OsString| {
            args.push(name.into());
            args.push(value);
        };
        let snow = &self.devices[config.device];
        if snow.is_split() {
            pair("--snow-devices", snow.indices(",").into());
            if !snow.shares.is_empty() {
                let weights: Vec<String> = snow.shares.iter().map(f64::to_string).collect();
                pair("--snow-shares", weights.join(",").into());
            }
        } else {
            pair("--device", snow.indices(",").into());
        }
        if let Some(wind) = self.wind_device(config) {
            pair("--wind-device", wind.index.to_string().into());
        }
        if let Some(k) = config.wind_every {
            pair("--wind-every", k.to_string().into());
        }
        pair("--scene", self.scene.clone().into_os_string());
        pair(
            "--frames",
            (u64::from(self.warmup) + u64::from(self.frames))
                .to_string()
                .into(),
        );
        pair("--warmup", self.warmup.to_string().into());
        if let Some((w, h)) = self.size {
            pair("--size", format!("{w}x{h}").into());
        }
        if let Some(n) = config.particles {
            pair("--particles", n.to_string().into());
        }
        if let Some(n) = config.tets {
            pair("--tets", n.to_string().into());
        }
        if let Some(render) = config.render {
            pair("--render", if render { "on" } else { "off" }.into());
        }
        if let Some(v) = &config.interop {
            pair("--interop", v.into());
        }
        if let Some(v) = &config.particle_render {
            pair("--particle-render", v.into());
        }
        if let Some(v) = &config.sort {
            pair("--sort", v.into());
        }
        if let Some(v) = &config.simulate {
            pair("--simulate", v.replace('+', ",").into());
        }
        args
    }

    /// A short description of `config`, naming only the settings that vary or were given.
    pub fn label(&self, config: &Configuration) -> String {
        let mut parts = vec![format!("[{}]", self.devices[config.device].indices("+"))];
        if let Some(wind) = self.wind_device(config) {
            parts.push(format!("wind [{}]", wind.index));
        }
        if let Some(k) = config.wind_every {
            parts.push(format!("wind every {k}"));
        }
        if let Some(n) = config.particles {
            parts.push(format!("{n} particles"));
        }
        if let Some(n) = config.tets {
            parts.push(format!("{n} tets"));
        }
        for (name, value) in [
            ("interop", &config.interop),
            ("render", &config.particle_render),
            ("sort", &config.sort),
            ("simulate", &config.simulate),
        ] {
            if let Some(v) = value {
                parts.push(format!("{name} {v}"));
            }
        }
        if config.render == Some(false) {
            parts.push("no drawing".into());
        }
        parts.join(", ")
    }

    /// The wind's own device of `config`, if it has one.
    pub fn wind_device(&self, config: &Configuration) -> Option<&DeviceInfo> {
        config
            .wind_device
            .and_then(|i| self.wind_devices.get(i))
            .and_then(Option::as_ref)
    }

    /// The row of `config` before it runs: the date, versions, device and settings columns
    /// (the device columns `;`-lists for a split, the snow's own device first; the platform,
    /// driver and the like are the snow's own device's).
    pub fn row(&self, config: &Configuration, date: SystemTime) -> Row {
        let snow = &self.devices[config.device];
        let d = &snow.devices[0];
        let wind = self.wind_device(config);
        let (width, height) = self.size.unwrap_or(self.defaults.size);
        Row {
            schema: SCHEMA_VERSION,
            date: rfc3339_utc(date),
            snowsim_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: GIT_COMMIT.to_string(),
            device: snow.list(|d| d.name.clone()),
            device_index: snow.devices.iter().map(|d| d.index).collect(),
            device_uuid: snow.list(|d| d.uuid.clone().unwrap_or_default()),
            device_pci_bus: snow.list(|d| d.pci_bus.clone().unwrap_or_default()),
            platform: d.platform.clone(),
            device_type: d.device_type.to_string(),
            driver_version: d.driver_version.clone(),
            opencl_version: d.version.clone(),
            compute_units: d.compute_units,
            clock_mhz: d.max_clock_mhz,
            scene: self.scene.display().to_string(),
            particles: config.particles.unwrap_or(self.defaults.particles),
            tets: config.tets,
            width,
            height,
            render: config.render.unwrap_or(true),
            interop_requested: config.interop.clone().unwrap_or_else(|| "auto".into()),
            particle_render_requested: config
                .particle_render
                .clone()
                .unwrap_or_else(|| "auto".into()),
            sort: config
                .sort
                .clone()
                .unwrap_or_else(|| self.defaults.sort.clone()),
            simulate: config
                .simulate
                .clone()
                .unwrap_or_else(|| self.defaults.simulate.clone()),
            wind_device: wind.map_or_else(String::new, |w| format!("{} {}", w.index, w.name)),
            wind_device_index: wind.map(|w| w.index),
            wind_every: config.wind_every,
            frames: self.frames,
            warmup: self.warmup,
            repeats: 0,
            status: String::new(),
            ..Row::default()
        }
    }
}

/// Fills `row` from the repeats that ran: all ok, or the last one failed with `failure`.
pub fn finish_row(row: &mut Row, runs: &[RunReport], failure: Option<(&str, String)>) {
    row.repeats = runs.len() as u32 + u32::from(failure.is_some());
    if let Some((status, reason)) = failure {
        row.status = status.to_string();
        row.error = if runs.is_empty() {
            reason
        } else {
            format!("repeat {} of {}: {reason}", runs.len() + 1, row.repeats)
        };
        return;
    }
    row.status = "ok".into();
    row.error.clear();
    let fps: Vec<f64> = runs.iter().map(|r| r.fps).collect();
    if let Some((mean, std)) = mean_std(&fps) {
        row.fps_mean = Some(mean);
        row.fps_std = Some(std);
    }
    let frame: Vec<f64> = runs.iter().map(|r| r.frame_ms).collect();
    row.ms_frame = mean_std(&frame).map(|(m, _)| m);
    row.set_stages(&mean_stages(runs));
    if let Some(first) = runs.first() {
        row.particles = first.particles;
        let shares: Vec<String> = first
            .snow_devices
            .iter()
            .map(|s| s.particles.to_string())
            .collect();
        row.snow_shares = shares.join(";");
        row.frames = runs
            .iter()
            .map(|r| u32::try_from(r.measured_frames).unwrap_or(u32::MAX))
            .min()
            .unwrap_or(row.frames);
    }
    // Without drawing the columns stay empty, as the record says (the run reports `none`).
    if row.render {
        row.interop = distinct(runs.iter().map(|r| r.interop.clone()));
        row.particle_render = distinct(runs.iter().map(|r| r.particle_render.clone()));
    }
}

/// What a sweep tells its caller while it runs (a progress bar).
pub trait Progress: Sync {
    /// Configuration `index` of `total` starts.
    fn start(&self, index: usize, total: usize, label: &str);
    /// One run (repeat) ended, well or not.
    fn run_done(&self);
    /// A line a child wrote on stderr.
    fn stderr_line(&self, line: &str);
}

/// Resolves `--devices`: `all`, or a comma list of selectors (an index or part of a name, as
/// `--device` takes; `None`: the default device), each device once.
pub fn select_devices(list: Option<&str>) -> Result<Vec<DeviceInfo>, SweepError> {
    let devices = crate::cl::list_devices()?;
    let selectors: Vec<DeviceSelector> = match list.map(str::trim) {
        Some(all) if all.eq_ignore_ascii_case("all") => {
            return Ok(devices.into_iter().map(|d| d.info).collect());
        }
        Some(list) => list
            .split(',')
            .map(|s| s.parse::<DeviceSelector>().map_err(SweepError::Selector))
            .collect::<Result<_, _>>()?,
        None => vec![DeviceSelector::Default],
    };
    let mut chosen: Vec<DeviceInfo> = Vec::new();
    for selector in &selectors {
        let info = &selector.select(&devices)?.info;
        if !chosen.iter().any(|c| c.index == info.index) {
            chosen.push(info.clone());
        }
    }
    Ok(chosen)
}

/// The device `text` selects among `devices` (an index or part of a name, as `--device`
/// takes), or an error naming `option` and the item.
fn select_one(
    option: &'static str,
    text: &str,
    devices: &[crate::cl::DeviceEntry],
) -> Result<DeviceInfo, SweepError> {
    let item = |error: String| SweepError::Item {
        option,
        value: text.to_string(),
        error,
    };
    let selector: DeviceSelector = text.parse().map_err(item)?;
    Ok(selector
        .select(devices)
        .map_err(|e| item(e.to_string()))?
        .info
        .clone())
}

/// Resolves `--wind-device`: a comma list, each item a device selector (the wind on that
/// device) or `same` (`None`: on the snow's device, no `--wind-device` passed).
pub fn select_wind_devices(list: &str) -> Result<Vec<Option<DeviceInfo>>, SweepError> {
    let devices = crate::cl::list_devices()?;
    list.split(',')
        .map(|item| {
            let item = item.trim();
            if item.eq_ignore_ascii_case("same") {
                Ok(None)
            } else {
                select_one("--wind-device", item, &devices).map(Some)
            }
        })
        .collect()
}

/// Resolves `--snow-devices` and `--snow-shares`: a comma list of configurations, each a
/// `+`-joined list of device selectors (one device: the snow on it alone); the shares, when
/// given, a comma list of as many items, each as many `+`-joined positive weights as its
/// configuration has devices.
pub fn select_snow_devices(list: &str, shares: Option<&str>) -> Result<Vec<SnowSetup>, SweepError> {
    let devices = crate::cl::list_devices()?;
    let items: Vec<&str> = list.split(',').map(str::trim).collect();
    let weights: Vec<Option<&str>> = match shares {
        Some(text) => {
            let weights: Vec<Option<&str>> = text.split(',').map(|w| Some(w.trim())).collect();
            if weights.len() != items.len() {
                return Err(SweepError::Item {
                    option: "--snow-shares",
                    value: text.to_string(),
                    error: format!(
                        "{} items for the {} of --snow-devices {list:?}: give one (`+`-joined \
                         weights) per --snow-devices item",
                        weights.len(),
                        items.len()
                    ),
                });
            }
            weights
        }
        None => vec![None; items.len()],
    };
    items
        .iter()
        .zip(weights)
        .map(|(item, weights)| {
            let chosen = item
                .split('+')
                .map(|s| select_one("--snow-devices", s.trim(), &devices))
                .collect::<Result<Vec<_>, _>>()?;
            let shares = match weights {
                Some(text) => parse_weights(text, item, chosen.len())?,
                None => Vec::new(),
            };
            Ok(SnowSetup {
                devices: chosen,
                shares,
            })
        })
        .collect()
}

/// One `--snow-shares` item: `n` positive weights joined by `+`, for `--snow-devices` item
/// `devices`.
fn parse_weights(text: &str, devices: &str, n: usize) -> Result<Vec<f64>, SweepError> {
    let error = |error: String| SweepError::Item {
        option: "--snow-shares",
        value: text.to_string(),
        error,
    };
    let weights = text
        .split('+')
        .map(|w| match w.trim().parse::<f64>() {
            Ok(w) if w.is_finite() && w > 0.0 => Ok(w),
            _ => Err(error(format!(
                "{w:?} is not a weight: a positive number expected"
            ))),
        })
        .collect::<Result<Vec<f64>, _>>()?;
    if weights.len() != n {
        return Err(error(format!(
            "{} weights for the {n} devices of --snow-devices item {devices:?}",
            weights.len()
        )));
    }
    Ok(weights)
}

/// Runs every configuration of `plan` through `exe` (the snowsim binary), `plan.repeats`
/// times each (a configuration stops at its first failed run), rewriting `csv` with `before`
/// (the rows of an earlier sweep kept at its start: `--append`) and all rows so far after each
/// configuration. Returns this sweep's rows.
pub fn run(
    plan: &Plan,
    exe: &Path,
    csv: Option<&Path>,
    before: Vec<Row>,
    progress: &dyn Progress,
) -> Result<Vec<Row>, SweepError> {
    let configurations = plan.configurations();
    let kept = before.len();
    let mut rows = before;
    rows.reserve(configurations.len());
    for (i, config) in configurations.iter().enumerate() {
        progress.start(i, configurations.len(), &plan.label(config));
        let mut row = plan.row(config, SystemTime::now());
        let args = plan.child_args(config);
        let mut runs = Vec::new();
        let mut failure = None;
        for _ in 0..plan.repeats {
            let outcome = run_child(exe, &args, plan.timeout, &|l| progress.stderr_line(l))?;
            progress.run_done();
            match outcome {
                Outcome::Ok(report) => runs.push(report),
                Outcome::Failed { status, reason } => {
                    failure = Some((status, reason));
                    break;
                }
            }
        }
        // The runs a failure skipped still count for the bar.
        for _ in (runs.len() + usize::from(failure.is_some()))..plan.repeats as usize {
            progress.run_done();
        }
        finish_row(
            &mut row,
            &runs,
            failure.as_ref().map(|(s, r)| (*s, r.clone())),
        );
        rows.push(row);
        if let Some(path) = csv {
            write_rows(path, &rows)?;
        }
    }
    Ok(rows.split_off(kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let device = |index: usize| DeviceInfo {
            index,
            platform: "P".into(),
            name: format!("dev{index}"),
            vendor: String::new(),
            device_type: crate::cl::DeviceType::Cpu,
            version: "OpenCL 3.0".into(),
            opencl_c_version: String::new(),
            driver_version: "6.0".into(),
            compute_units: 2,
            max_clock_mhz: Some(2000),
            global_mem_bytes: 0,
            max_alloc_bytes: 0,
            local_mem_bytes: 0,
            max_work_group_size: 1,
            fp64: false,
            gl_sharing: false,
            uuid: None,
            pci_bus: None,
            extensions: String::new(),
        };
        Plan {
            devices: vec![SnowSetup::one(device(0)), SnowSetup::one(device(3))],
            wind_devices: vec![],
            wind_every: vec![],
            scene: "scenes/flat.toml".into(),
            defaults: SceneDefaults {
                particles: 4096,
                size: (1280, 720),
                sort: "partial".into(),
                simulate: "wind+snow".into(),
            },
            particles: vec![Some(1024), Some(4096)],
            tets: vec![],
            interop: vec![],
            particle_render: vec![],
            sort: vec![Some("off".into()), Some("full".into())],
            simulate: vec![Some("wind+snow".into())],
            render: vec![],
            frames: 3,
            warmup: 1,
            repeats: 2,
            timeout: Duration::from_secs(5),
            size: Some((160, 120)),
        }
    }

    #[test]
    fn the_product_has_every_combination_and_the_child_only_what_was_given() {
        let p = plan();
        let configs = p.configurations();
        assert_eq!(configs.len(), 2 * 2 * 2);
        assert_eq!(configs[1].sort.as_deref(), Some("full"));
        assert_eq!(configs[2].particles, Some(4096));
        assert_eq!(configs[4].device, 1);
        let args: Vec<String> = p
            .child_args(&configs[5])
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args.join(" "),
            "run --headless --json --device 3 --scene scenes/flat.toml --frames 4 --warmup 1 \
             --size 160x120 --particles 1024 --sort full --simulate wind,snow"
        );
        let row = p.row(&configs[5], SystemTime::UNIX_EPOCH);
        assert_eq!(
            (row.device.as_str(), row.particles, row.sort.as_str()),
            ("dev3", 1024, "full")
        );
        assert_eq!((row.width, row.height, row.render), (160, 120, true));
        assert_eq!(row.date, "1970-01-01T00:00:00Z");
        assert_eq!(row.interop_requested, "auto");
        assert_eq!(row.clock_mhz, Some(2000));
    }

    fn report(fps: f64, interop: &str) -> RunReport {
        RunReport {
            fps,
            frame_ms: 1000.0 / fps,
            measured_frames: 3,
            particles: 1024,
            interop: interop.into(),
            particle_render: "sprites".into(),
            stages: vec![StageReport {
                stage: "snow.step".into(),
                busy_ms: fps / 100.0,
            }],
            snow_devices: vec![],
        }
    }

    #[test]
    fn rows_average_their_repeats_or_say_why_they_failed() {
        let p = plan();
        let config = &p.configurations()[0];
        let mut row = p.row(config, SystemTime::now());
        finish_row(
            &mut row,
            &[report(100.0, "copy"), report(300.0, "copy")],
            None,
        );
        assert_eq!(row.status, "ok");
        assert_eq!(row.repeats, 2);
        assert_eq!(row.fps_mean, Some(200.0));
        assert!((row.fps_std.unwrap() - 200.0 / 2f64.sqrt()).abs() < 1e-9);
        assert!((row.ms_frame.unwrap() - (10.0 + 1000.0 / 300.0) / 2.0).abs() < 1e-9);
        assert_eq!(row.ms_snow, Some(2.0));
        assert_eq!(
            (row.interop.as_str(), row.particle_render.as_str()),
            ("copy", "sprites")
        );

        let mut row = p.row(config, SystemTime::now());
        finish_row(
            &mut row,
            &[report(100.0, "copy")],
            Some(("killed", "SIGABRT".into())),
        );
        assert_eq!((row.status.as_str(), row.repeats), ("killed", 2));
        assert_eq!(row.error, "repeat 2 of 2: SIGABRT");
        assert_eq!((row.fps_mean, row.ms_frame), (None, None));

        let mut row = p.row(config, SystemTime::now());
        row.render = false;
        finish_row(&mut row, &[report(100.0, "none")], None);
        assert_eq!(
            (row.interop.as_str(), row.particle_render.as_str()),
            ("", "")
        );
    }

    #[test]
    fn wind_devices_and_splits_multiply_and_reach_the_child_and_the_row() {
        let mut p = plan();
        let dev = |i: usize| p.devices[i].devices[0].clone();
        let (d0, d3) = (dev(0), dev(1));
        p.devices = vec![
            SnowSetup::one(d0.clone()),
            SnowSetup {
                devices: vec![d0.clone(), d3.clone()],
                shares: vec![1.0, 2.5],
            },
        ];
        p.wind_devices = vec![None, Some(d3.clone())];
        p.wind_every = vec![Some(1), Some(2)];
        p.particles = vec![Some(1024)];
        p.sort = vec![];
        p.simulate = vec![];
        let configs = p.configurations();
        assert_eq!(configs.len(), 2 * 2 * 2);
        let heads: Vec<(usize, Option<usize>, Option<u32>)> = configs
            .iter()
            .map(|c| (c.device, c.wind_device, c.wind_every))
            .collect();
        assert_eq!(heads[0], (0, None, Some(1)));
        assert_eq!(heads[3], (0, Some(1), Some(2)));
        assert_eq!(heads[7], (1, Some(1), Some(2)));
        let args = |c: &Configuration| -> String {
            let a: Vec<String> = p
                .child_args(c)
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            a.join(" ")
        };
        assert!(
            args(&configs[0]).starts_with("run --headless --json --device 0 --wind-every 1 "),
            "{}",
            args(&configs[0])
        );
        assert!(
            args(&configs[7]).starts_with(
                "run --headless --json --snow-devices 0,3 --snow-shares 1,2.5 \
                 --wind-device 3 --wind-every 2 "
            ),
            "{}",
            args(&configs[7])
        );
        assert_eq!(
            p.label(&configs[7]),
            "[0+3], wind [3], wind every 2, 1024 particles"
        );
        let row = p.row(&configs[7], SystemTime::UNIX_EPOCH);
        assert_eq!(row.device, "dev0;dev3");
        assert_eq!(row.device_index, [0, 3]);
        assert_eq!(row.device_uuid, ";");
        assert_eq!(row.platform, "P");
        assert_eq!(
            (
                row.wind_device.as_str(),
                row.wind_device_index,
                row.wind_every
            ),
            ("3 dev3", Some(3), Some(2))
        );
        let row = p.row(&configs[0], SystemTime::UNIX_EPOCH);
        assert_eq!(
            (row.device.as_str(), row.wind_device.as_str()),
            ("dev0", "")
        );
        assert_eq!((row.wind_device_index, row.wind_every), (None, Some(1)));

        // The parcels each device held come from the run's report.
        let mut row = p.row(&configs[7], SystemTime::UNIX_EPOCH);
        let mut split = report(10.0, "none");
        split.snow_devices = vec![
            ShareReport {
                device: "0 (dev0)".into(),
                particles: 292,
            },
            ShareReport {
                device: "3 (dev3)".into(),
                particles: 732,
            },
        ];
        finish_row(&mut row, &[split], None);
        assert_eq!(row.snow_shares, "292;732");
    }
}
