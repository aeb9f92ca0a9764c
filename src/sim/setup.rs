//! From a scene file and the command line's overrides to what a run simulates: one
//! [`SimSetup`], settled once, so that no other place applies a scene setting.

use crate::cl::DeviceEntry;
use crate::particle::Particle;
use crate::scene::{DomainMesh, Scene, SceneGround, SortMode};
use crate::snow::SnowConfig;

use super::{Error, Result};

/// Wind steps between two measurements of the projected field's divergence and largest speed
/// in a simulation ([`crate::wind::Settings::verify_every`]): the frames read the field, not
/// its statistics, and the measurement is three launches a step (about 0.1 ms on an H100 on
/// the valley). A non-finite projection is caught at the next step's solve, when the field
/// crosses to another device, and when the run reads the field or ends
/// ([`crate::wind::Solver::check_last_step`]).
pub const VERIFY_EVERY: u32 = 64;

/// What the command line changes of a scene's simulation (`snowsim run`'s options); `None`
/// keeps the scene's value.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// Snow parcels (`--particles`).
    pub particles: Option<usize>,
    /// The generator's seed (`--seed`).
    pub seed: Option<u32>,
    /// How the parcels are sorted (`--sort`).
    pub sort: Option<SortMode>,
    /// Sort on one frame in this many (`--sort-every`).
    pub sort_every: Option<u32>,
    /// What runs (`--simulate`): (wind, snow). The wind off leaves the snow in a frozen wind:
    /// the start-up solve and the scene's `simulate.frozen_wind_steps` steps (0 when unset).
    pub simulate: Option<(bool, bool)>,
    /// A wind step every this many frames, over their time (`--wind-every`).
    pub wind_every: Option<u32>,
    /// The wind solver's own device (`--wind-device`).
    pub wind_device: Option<DeviceEntry>,
    /// The devices beside the snow's own that step a share of the parcels
    /// (`--snow-devices`' second device on).
    pub snow_devices: Vec<DeviceEntry>,
    /// Each snow device's weight in the split (`--snow-shares`), the snow's own first;
    /// `None`: equal shares (the command line measures them first: `balance`).
    pub snow_shares: Option<Vec<f64>>,
}

/// The parcels split across devices (`--snow-devices`, [`super::shares`]).
#[derive(Clone, Debug)]
pub struct SnowSplit {
    /// The devices beside the snow's own.
    pub devices: Vec<DeviceEntry>,
    /// (first id, parcels) per device, the snow's own first.
    pub shares: Vec<(u32, usize)>,
}

impl SnowSplit {
    /// Every device's share, the snow's own (`snow_device`) first.
    pub fn report(&self, snow_device: &crate::cl::DeviceInfo) -> Vec<super::shares::ShareReport> {
        let total: usize = self.shares.iter().map(|s| s.1).sum();
        std::iter::once(snow_device)
            .chain(self.devices.iter().map(|d| &d.info))
            .zip(&self.shares)
            .map(|(info, &(first, particles))| super::shares::ShareReport {
                device: format!("{} ({})", info.index, info.name),
                first,
                particles,
                fraction: particles as f64 / total.max(1) as f64,
            })
            .collect()
    }
}

/// The wind the snow samples.
#[derive(Clone, Debug)]
pub enum WindSetup {
    /// The scene's inflow profile, fixed (per domain vertex, xyz m/s).
    Profile {
        /// The velocity at every vertex of the domain mesh.
        velocity: Vec<[f32; 4]>,
    },
    /// The wind solver, starting from the inflow profile.
    Solved {
        /// The inflow profile at every vertex (the solver's inflow and start).
        inflow: Vec<[f32; 4]>,
        /// The solver's settings (the scene's `[wind]`).
        settings: crate::wind::Settings,
        /// The wind's direction.
        direction: [f64; 2],
        /// The scene's wind (its profile gives a refreshed ground's inflow).
        wind: crate::scene::Wind,
        /// `Some(n)`: the start-up solve and `n` steps, then the field stays fixed
        /// (`simulate.frozen_wind_steps`); `None`: it steps with the frames.
        frozen_after: Option<u32>,
        /// Another OpenCL device for the solver (`--wind-device`); `None`: the snow's. Its
        /// field then crosses to the snow's device once per wind step, through the host.
        device: Option<Box<DeviceEntry>>,
    },
}

/// A scene's simulation: its domain, its wind and its snow.
#[derive(Clone, Debug)]
pub struct SceneSim {
    /// The domain mesh, renumbered for the device.
    pub domain: DomainMesh,
    /// The snow's settings; `None` runs no particles (the wind alone).
    pub snow: Option<SnowConfig>,
    /// The wind the snow samples.
    pub wind: WindSetup,
    /// Gravity, m/s² (the fixed profile's view shows the hydrostatic pressure with it).
    pub gravity: f32,
    /// The scene's camera position, m: where the report measures the falling snow.
    pub camera: [f64; 3],
    /// The parcels split across devices (`None`: all on the snow's device).
    pub split: Option<SnowSplit>,
}

/// Everything a run simulates, settled once from the scene and the overrides.
#[derive(Clone, Debug)]
pub struct SimSetup {
    /// Simulated seconds per frame (`time.step`).
    pub dt: f32,
    /// The scene's wind and snow; `None` for particles given by the host.
    pub scene: Option<SceneSim>,
    /// Particles given by the host that never move ([`SimSetup::still`]): pictures and tests.
    pub still: Vec<Particle>,
    /// The cover drawn under still particles, metres per ground vertex.
    pub still_depth: Vec<f32>,
}

impl SimSetup {
    /// The simulation of `scene` over `ground` (the scene's [`SceneGround`]), with the
    /// command line's `overrides` applied. Errors name the setting.
    pub fn new(scene: &Scene, ground: &SceneGround, overrides: &Overrides) -> Result<Self> {
        let mut simulate = scene.simulate;
        if let Some((wind, snow)) = overrides.simulate {
            simulate.wind = wind;
            simulate.snow = snow;
            simulate.frozen_wind_steps = match wind {
                true => None,
                false => Some(simulate.frozen_wind_steps.unwrap_or(0)),
            };
        }
        if let Some(k) = overrides.wind_every {
            if !(1..=10_000).contains(&k) {
                return Err(Error::InvalidParameter(format!(
                    "--wind-every {k}: must be 1..=10000 frames"
                )));
            }
            if !simulate.wind {
                return Err(Error::InvalidParameter(
                    "--wind-every sets how often the wind steps, but the wind does not step \
                     (--simulate snow, or the scene's simulate.wind = false)"
                        .into(),
                ));
            }
            simulate.wind_every = Some(k);
        }
        let dt = scene.time.step as f32;
        super::check_time_step(dt)?;
        let domain = scene.build_domain(true)?;
        let inflow = crate::wind::profile::vertex_velocities(
            &domain.mesh.vertices,
            &ground.grid,
            &scene.wind,
        );
        let frozen_after = (!simulate.wind)
            .then_some(simulate.frozen_wind_steps)
            .flatten();
        let wind = if simulate.wind || frozen_after.is_some() {
            let mut settings = crate::wind::setup::settings(scene, false);
            // The frames use the field, not its statistics: measure them now and then.
            settings.verify_every = VERIFY_EVERY;
            if let Some(every) = simulate.wind_every {
                // Every k-th frame, over the k frames' time.
                settings.step = Some(f64::from(every) * scene.time.step);
            }
            WindSetup::Solved {
                inflow,
                settings,
                direction: scene.wind.direction,
                wind: scene.wind,
                frozen_after,
                device: overrides.wind_device.clone().map(Box::new),
            }
        } else if overrides.wind_device.is_some() {
            return Err(Error::InvalidParameter(format!(
                "--wind-device: {} runs no wind solver (its [simulate] wind is off)",
                scene.path.display()
            )));
        } else {
            WindSetup::Profile { velocity: inflow }
        };
        let snow = match simulate.snow {
            true => {
                let mut config = SnowConfig::from_scene(scene)?;
                if let Some(n) = overrides.particles {
                    config.particles = n;
                }
                if let Some(seed) = overrides.seed {
                    config.seed = seed;
                }
                if let Some(sort) = overrides.sort {
                    config.sort.mode = sort;
                }
                if let Some(every) = overrides.sort_every {
                    config.sort.every = every;
                }
                config.validate()?;
                Some(config)
            }
            false => None,
        };
        let split = match (&snow, overrides.snow_devices.is_empty()) {
            (_, true) => {
                if overrides.snow_shares.is_some() {
                    return Err(Error::InvalidParameter(
                        "--snow-shares weighs the devices of --snow-devices, which is not given"
                            .into(),
                    ));
                }
                None
            }
            (None, false) => {
                return Err(Error::InvalidParameter(
                    "--snow-devices splits the snow's parcels, but no snow is simulated \
                     (--simulate wind, or the scene's simulate.snow = false)"
                        .into(),
                ));
            }
            (Some(config), false) => {
                let devices = overrides.snow_devices.len() + 1;
                let weights = match &overrides.snow_shares {
                    Some(w) if w.len() != devices => {
                        return Err(Error::InvalidParameter(format!(
                            "--snow-shares gives {} weights for {devices} snow devices",
                            w.len()
                        )));
                    }
                    Some(w) => w.clone(),
                    None => vec![1.0; devices],
                };
                Some(SnowSplit {
                    devices: overrides.snow_devices.clone(),
                    shares: super::shares::split(config.particles, &weights)?,
                })
            }
        };
        Ok(Self {
            dt,
            scene: Some(SceneSim {
                domain,
                snow,
                wind,
                gravity: scene.snow.gravity as f32,
                camera: scene.camera.position,
                split,
            }),
            still: Vec::new(),
            still_depth: Vec::new(),
        })
    }

    /// `particles` (position and drawn radius) that never move, over a cover of `depth` metres
    /// per ground vertex of the terrain drawn (empty: none): pictures and tests of the drawing.
    pub fn still(particles: Vec<Particle>, depth: Vec<f32>) -> Self {
        Self {
            dt: 0.0,
            scene: None,
            still: particles,
            still_depth: depth,
        }
    }

    /// Particles the simulation writes for the drawing.
    pub fn particle_count(&self) -> usize {
        match &self.scene {
            Some(s) => s.snow.as_ref().map_or(0, |c| c.particles),
            None => self.still.len(),
        }
    }
}
