//! The snow as the particle source `snowsim run` draws.

use crate::cl::{Context, DeviceBuffer, OutputBuffer, Timeline};
use crate::scene::DomainMesh;
use crate::sim::{self, ParticleSource};

use super::sim::{Counters, check_counters};
use super::{Snow, SnowConfig};

/// [`Snow`] behind the [`ParticleSource`] interface, in a fixed wind given per vertex of the
/// domain mesh (the scene's inflow profile until the wind solver hands over its field).
pub struct SnowSource {
    domain: DomainMesh,
    config: SnowConfig,
    wind_values: Vec<[f32; 4]>,
    state: Option<(Snow, DeviceBuffer<[f32; 4]>)>,
    last: Option<Counters>,
}

impl SnowSource {
    /// The snow of `config` in `domain`, blown by `wind` (one velocity per mesh vertex).
    pub fn new(domain: DomainMesh, config: SnowConfig, wind: Vec<[f32; 4]>) -> sim::Result<Self> {
        config.validate()?;
        if wind.len() != domain.mesh.vertices.len() {
            return Err(super::Error::WindLength {
                got: wind.len(),
                expected: domain.mesh.vertices.len(),
            }
            .into());
        }
        Ok(Self {
            domain,
            config,
            wind_values: wind,
            state: None,
            last: None,
        })
    }

    /// The simulation (after [`prepare`](ParticleSource::prepare)).
    pub fn snow(&self) -> Option<&Snow> {
        self.state.as_ref().map(|(s, _)| s)
    }

    /// The counters read after the last step, if any.
    pub fn last_counters(&self) -> Option<Counters> {
        self.last
    }

    fn state(&mut self) -> sim::Result<&mut (Snow, DeviceBuffer<[f32; 4]>)> {
        self.state
            .as_mut()
            .ok_or_else(|| sim::Error::Internal("snow used before prepare".into()))
    }
}

impl ParticleSource for SnowSource {
    fn name(&self) -> &str {
        "snow parcels"
    }

    fn count(&self) -> usize {
        self.config.particles
    }

    fn prepare(&mut self, context: &Context) -> sim::Result<()> {
        let snow = Snow::new(context, &self.domain, self.config.clone())?;
        let wind = DeviceBuffer::from_slice(context, &self.wind_values)?;
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
        self.last = Some(counters);
        Ok(())
    }

    fn set_sorting(&mut self, on: bool) -> bool {
        let mode = if on {
            crate::scene::SortMode::Partial
        } else {
            crate::scene::SortMode::None
        };
        self.config.sort.mode = mode;
        match self.state.as_mut() {
            Some((snow, _)) => snow.set_sort(mode).is_ok(),
            None => true,
        }
    }
}
