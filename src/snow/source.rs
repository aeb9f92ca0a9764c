//! The snow as the particle source `snowsim run` draws.

use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::cl::{Context, DeviceBuffer, OutputBuffer, Timeline};
use crate::scene::{DomainMesh, Scene};
use crate::sim::{self, ParticleSource};
use crate::terrain::Heightfield;

use super::sim::{Counters, check_counters};
use super::{Snow, SnowConfig};

/// What a run reports about the snow (`snowsim run --json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SnowReport {
    /// Particles (parcels).
    pub particles: usize,
    /// Landings on the ground.
    pub landed: u64,
    /// Respawns at the top, for any reason.
    pub respawned: u64,
    /// Wraps through a side.
    pub wrapped: u64,
    /// Respawns of particles no walk could locate.
    pub lost: u64,
    /// Snow on the ground, m³.
    pub deposited_m3: f64,
    /// The deepest snow at a ground vertex, m.
    pub max_depth_m: f32,
    /// Volume of one parcel, m³.
    pub parcel_m3: f64,
}

/// Everything the snow of a scene needs besides a device: its domain, settings and wind.
#[derive(Clone, Debug)]
pub struct SnowSetup {
    /// The domain mesh, renumbered for the device.
    pub domain: DomainMesh,
    /// The settings.
    pub config: SnowConfig,
    /// The wind per mesh vertex: the scene's inflow profile until the wind solver runs.
    pub wind: Vec<[f32; 4]>,
}

impl SnowSetup {
    /// The snow of `scene`, blown by its wind profile over `ground` (the scene's ground grid).
    pub fn new(scene: &Scene, ground: &Heightfield) -> sim::Result<Self> {
        let config = SnowConfig::from_scene(scene)?;
        let domain = scene.build_domain(true)?;
        let wind =
            crate::wind::profile::vertex_velocities(&domain.mesh.vertices, ground, &scene.wind);
        Ok(Self {
            domain,
            config,
            wind,
        })
    }
}

/// [`Snow`] behind the [`ParticleSource`] interface, in a fixed wind given per vertex of the
/// domain mesh (the scene's inflow profile until the wind solver hands over its field).
pub struct SnowSource {
    setup: SnowSetup,
    state: Option<(Snow, DeviceBuffer<[f32; 4]>)>,
    report: Arc<Mutex<SnowReport>>,
}

impl SnowSource {
    /// The snow of `setup`.
    pub fn new(setup: SnowSetup) -> sim::Result<Self> {
        setup.config.validate()?;
        if setup.wind.len() != setup.domain.mesh.vertices.len() {
            return Err(super::Error::WindLength {
                got: setup.wind.len(),
                expected: setup.domain.mesh.vertices.len(),
            }
            .into());
        }
        let report = SnowReport {
            particles: setup.config.particles,
            ..SnowReport::default()
        };
        Ok(Self {
            setup,
            state: None,
            report: Arc::new(Mutex::new(report)),
        })
    }

    /// The simulation (after [`prepare`](ParticleSource::prepare)).
    pub fn snow(&self) -> Option<&Snow> {
        self.state.as_ref().map(|(s, _)| s)
    }

    /// A handle on the report, updated after every step (the session owns the source).
    pub fn report_handle(&self) -> Arc<Mutex<SnowReport>> {
        self.report.clone()
    }

    fn state(&mut self) -> sim::Result<&mut (Snow, DeviceBuffer<[f32; 4]>)> {
        self.state
            .as_mut()
            .ok_or_else(|| sim::Error::Internal("snow used before prepare".into()))
    }

    fn publish(&self, counters: &Counters, snow: &Snow) -> sim::Result<()> {
        let (deposited_m3, max_depth_m) = snow.cover_summary()?;
        let report = SnowReport {
            particles: snow.particles().len(),
            landed: counters.landed,
            respawned: counters.respawned(),
            wrapped: counters.wrapped,
            lost: counters.lost,
            deposited_m3,
            max_depth_m,
            parcel_m3: snow.parcel_volume(),
        };
        match self.report.lock() {
            Ok(mut r) => *r = report,
            Err(poisoned) => *poisoned.into_inner() = report,
        }
        Ok(())
    }
}

impl ParticleSource for SnowSource {
    fn name(&self) -> &str {
        "snow parcels"
    }

    fn count(&self) -> usize {
        self.setup.config.particles
    }

    fn prepare(&mut self, context: &Context) -> sim::Result<()> {
        let snow = Snow::new(context, &self.setup.domain, self.setup.config.clone())?;
        let wind = DeviceBuffer::from_slice(context, &self.setup.wind)?;
        self.state = Some((snow, wind));
        Ok(())
    }

    fn reset(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> sim::Result<()> {
        let (snow, _) = self.state()?;
        snow.reset(context, particles, timeline)?;
        Ok(())
    }

    fn step(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, [f32; 4]>,
        dt: f32,
        _time: f32,
        timeline: &mut Timeline,
    ) -> sim::Result<()> {
        let (snow, wind) = self.state()?;
        snow.step(context, &*wind, dt, particles, timeline)?;
        // Reading the counters waits for the frame's kernels, which the session waits for
        // anyway; a non-finite particle stops the run with its stage, frame and id.
        let counters = snow.counters()?;
        check_counters(&counters, snow.frame())?;
        if let Some((snow, _)) = &self.state {
            self.publish(&counters, snow)?;
        }
        Ok(())
    }

    fn sorting(&self) -> bool {
        self.setup.config.sort.mode != crate::scene::SortMode::Off
    }

    fn ground_depth(&mut self) -> sim::Result<Option<Vec<f32>>> {
        match &self.state {
            Some((snow, _)) => Ok(Some(snow.cover().depths()?)),
            None => Ok(None),
        }
    }

    fn set_sorting(&mut self, on: bool) -> bool {
        let mode = if on {
            crate::scene::SortMode::Partial
        } else {
            crate::scene::SortMode::Off
        };
        self.setup.config.sort.mode = mode;
        match self.state.as_mut() {
            Some((snow, _)) => snow.set_sort(mode).is_ok(),
            None => true,
        }
    }
}
