//! The state files a run writes: the final state (`snowsim run --vtu FILE`), and a time series
//! of the simulation's state for ParaView (`snowsim run --vtu-every K DIR`):
//! `DIR/state_00000.vtu`, `state_00001.vtu`, … every K frames, and `DIR/states.pvd`, the
//! collection that plays them with their simulated times, rewritten atomically after each.
//!
//! The disk is checked once the first state is written, for as many more of its size as the
//! run will write: a run that cannot finish its series stops at once, not when the disk fills.

use std::path::{Path, PathBuf};

use crate::budget::{Budget, Estimate};

use super::Simulation;
use super::{Error, Result};

/// What a run writes of the simulation's state, for a drawn session and an undrawn stepper
/// alike: the final state when the run ends (`--vtu`), a series every few frames
/// (`--vtu-every`).
#[derive(Debug, Default)]
pub struct StateOutputs {
    /// Where the final state goes.
    pub final_state: Option<PathBuf>,
    /// The series being written.
    pub series: Option<Series>,
}

impl StateOutputs {
    /// After frame `frame` (counted from 1) of `dt` seconds each: the series' state, if due.
    pub fn after_frame(&mut self, simulation: &mut Simulation, frame: u64, dt: f32) -> Result<()> {
        if let Some(series) = self.series.as_mut() {
            series.after_frame(simulation, frame, frame as f64 * f64::from(dt))?;
        }
        Ok(())
    }

    /// When the run ends: the final state, and a line for the log saying so.
    pub fn finish(&mut self, simulation: &mut Simulation) -> Result<Option<String>> {
        let Some(path) = self.final_state.clone() else {
            return Ok(None);
        };
        simulation.save_state(&path)?;
        Ok(Some(format!("wrote {}", path.display())))
    }
}

/// The series being written.
#[derive(Debug)]
pub struct Series {
    dir: PathBuf,
    every: u64,
    /// Frames the run will draw, when known (to check the disk).
    frames: Option<u64>,
    /// (simulated time, file name) of every state written.
    written: Vec<(f64, String)>,
}

impl Series {
    /// A series in `dir` (created if missing), a state every `every` frames of a run of
    /// `frames` frames (`None`: until the user quits).
    pub fn new(dir: &Path, every: u64, frames: Option<u64>) -> Result<Self> {
        if every == 0 {
            return Err(Error::InvalidParameter(
                "--vtu-every 0: a state needs at least one frame between writes".into(),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::InvalidParameter(format!("cannot create {}: {e}", dir.display()))
        })?;
        crate::output::check_writable(&dir.join("states.pvd"))
            .map_err(|e| Error::InvalidParameter(e.to_string()))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            every,
            frames,
            written: Vec::new(),
        })
    }

    /// After frame `frame` (counted from 1) at simulated time `time`: writes the state if the
    /// frame is one of the series'. Returns the file written.
    pub fn after_frame(
        &mut self,
        simulation: &mut Simulation,
        frame: u64,
        time: f64,
    ) -> Result<Option<PathBuf>> {
        if !frame.is_multiple_of(self.every) {
            return Ok(None);
        }
        let name = format!("state_{:05}.vtu", self.written.len());
        let path = self.dir.join(&name);
        simulation.save_state(&path)?;
        let first = self.written.is_empty();
        // The collection names every state written before anything else can fail: the set on
        // disk is always complete.
        self.written.push((time, name));
        self.write_index()?;
        if first && let Some(frames) = self.frames {
            let size = std::fs::metadata(&path).map_or(0, |m| m.len());
            let more = (frames / self.every).saturating_sub(1);
            Budget::disk(&path)
                .and_then(|budget| {
                    budget.check(&Estimate::new(
                        format!("--vtu-every {} over {frames} frames", self.every),
                        format!("{more} more states of {size} bytes"),
                        more.saturating_mul(size),
                    ))
                })
                .map_err(|e| Error::InvalidParameter(e.to_string()))?;
        }
        Ok(Some(path))
    }

    /// The states written so far: (simulated time, file name in the directory).
    pub fn written(&self) -> &[(f64, String)] {
        &self.written
    }

    fn write_index(&self) -> Result<()> {
        let mut xml = String::from(
            "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\">\n  \
             <Collection>\n",
        );
        for (time, name) in &self.written {
            xml.push_str(&format!(
                "    <DataSet timestep=\"{time}\" group=\"\" part=\"0\" file=\"{name}\"/>\n"
            ));
        }
        xml.push_str("  </Collection>\n</VTKFile>\n");
        crate::output::write_atomic(&self.dir.join("states.pvd"), xml.as_bytes())
            .map_err(|e| Error::InvalidParameter(e.to_string()))
    }
}
