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

pub use child::{Outcome, RunReport, StageReport, reason, run_child};
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

/// A sweep: every list of settings (`None` in a list: the child's default, the option not
/// passed), the frames, repeats and timeout of each run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The devices, each run through `--device INDEX`.
    pub devices: Vec<DeviceInfo>,
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
    /// Every configuration: devices × particles × tets × interop × particle-render × sort ×
    /// simulate × render, the last varying fastest. An empty list counts as one default.
    pub fn configurations(&self) -> Vec<Configuration> {
        let mut all = Vec::new();
        for device in 0..self.devices.len() {
            for &particles in &or_default(&self.particles) {
                for &tets in &or_default(&self.tets) {
                    for interop in or_default(&self.interop) {
                        for particle_render in or_default(&self.particle_render) {
                            for sort in or_default(&self.sort) {
                                for simulate in or_default(&self.simulate) {
                                    for &render in &or_default(&self.render) {
                                        all.push(Configuration {
                                            device,
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
        pair(
            "--device",
            self.devices[config.device].index.to_string().into(),
        );
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
        let mut parts = vec![format!("[{}]", self.devices[config.device].index)];
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

    /// The row of `config` before it runs: the date, versions, device and settings columns.
    pub fn row(&self, config: &Configuration, date: SystemTime) -> Row {
        let d = &self.devices[config.device];
        let (width, height) = self.size.unwrap_or(self.defaults.size);
        Row {
            schema: SCHEMA_VERSION,
            date: rfc3339_utc(date),
            snowsim_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: GIT_COMMIT.to_string(),
            device: d.name.clone(),
            device_index: Some(d.index),
            device_uuid: d.uuid.clone().unwrap_or_default(),
            device_pci_bus: d.pci_bus.clone().unwrap_or_default(),
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
            devices: vec![device(0), device(3)],
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
}
