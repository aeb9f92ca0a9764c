//! From a scene file to what a [`Session`](super::Session) shows: the ground surface with its
//! snow cover, the air above it, the camera, the snow (or the flakes) and the wind view.
//!
//! The ground drawn comes straight from [`Terrain::ground_surface`] for a terrain domain (the
//! heightmap sampled at the scene's `cells`), from its ground-referenced boundary triangles for
//! a mesh domain ([`Scene::build_domain`], which reads the mesh and checks its references).
//! When the scene simulates snow, the whole tetrahedral domain is built too (renumbered), with
//! the wind profile on its vertices ([`SnowSetup`]); its ground surface has the same vertex
//! order as the one drawn, so the snow's depths are drawn vertex for vertex.

use glam::{Vec2, Vec3};

use crate::interop::InteropMode;
use crate::render::{OrbitCamera, TerrainMesh, Views};
use crate::scene::{Domain, Scene, SceneError, Wind};
use crate::snow::{SnowSetup, SnowSource};
use crate::terrain::{Heightfield, SceneBox, Terrain};

use super::Result;
use super::flakes::{Flakes, FlakesConfig, ProfileWind};
use super::session::SessionConfig;
use super::source::{FieldRanges, FieldSource, ParticleSource};

/// Sample points of the wind view: 16 × 16 over the ground, 6 levels up to the top.
pub const WIND_SAMPLES: [u32; 3] = [16, 16, 6];

/// Largest side of the ground grid sampled from a mesh domain's ground triangles.
const MAX_GROUND_GRID: usize = 513;

/// Everything a session needs from a scene, built from its file.
#[derive(Clone, Debug)]
pub struct SceneSetup {
    /// The ground surface to draw, with the scene's snow cover (`ground.initial_depth` where
    /// the slope is gentler than `ground.repose_angle`).
    pub terrain: TerrainMesh,
    /// The ground as a regular grid of heights, for the kernels: the terrain's own grid
    /// points, or a mesh domain's ground triangles sampled on a grid.
    pub ground: Heightfield,
    /// The air: the domain's extent, from the lowest ground to the top.
    pub bounds: SceneBox,
    /// The scene's camera.
    pub camera: OrbitCamera,
    /// What is drawn at the start (the scene's `[view]`), with wind lines and pressure squares
    /// sized to the wind view's sample spacing.
    pub views: Views,
    /// The flakes: the scene's particle count, flake sizes, fall speed, flutter and seed, in
    /// `bounds` above `ground`, drifting with the scene's wind.
    pub flakes: FlakesConfig,
    /// The wind view's sample grid.
    pub wind_samples: [u32; 3],
    /// The scene's wind.
    pub wind: Wind,
    /// Gravity (for the hydrostatic pressure of the pressure view).
    pub gravity: f32,
    /// Simulated seconds per frame (`time.step`).
    pub dt: f32,
    /// The snow simulation's domain, settings and wind, when the scene simulates snow
    /// (`simulate.snow`); `None` leaves the flakes stand-in.
    pub snow: Option<SnowSetup>,
}

impl SceneSetup {
    /// Builds the ground and everything else from `scene`. Errors name the scene file and
    /// key (a heightmap that cannot be meshed, a mesh file that cannot be read, …).
    pub fn new(scene: &Scene) -> Result<Self> {
        let (mut terrain, ground, bounds) = ground_of(scene)?;
        let cover = scene.ground.initial_depth as f32;
        let holds = (scene.ground.repose_angle as f32).to_radians().cos();
        let depth: Vec<f32> = terrain
            .normals
            .iter()
            .map(|n| if n.z >= holds { cover } else { 0.0 })
            .collect();
        terrain.set_snow_depth(&depth)?;

        let c = &scene.camera;
        let v3 = |p: [f64; 3]| Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32);
        let mut camera =
            OrbitCamera::looking_at(v3(c.position), v3(c.target), (c.fov as f32).to_radians());
        // Far enough to see the whole domain from where the camera starts.
        let eye = camera.eye();
        let farthest = bounds
            .corners()
            .iter()
            .map(|p| p.distance(eye))
            .fold(0.0f32, f32::max);
        camera.far = camera.far.max(2.0 * farthest);

        let gravity = scene.snow.gravity as f32;
        let field = ProfileWind::new(
            WIND_SAMPLES,
            bounds,
            Some(ground.clone()),
            scene.wind,
            gravity,
        )?;
        let FieldRanges {
            speed_max,
            pressure,
        } = field.ranges();
        let spacing = field.spacing();
        let view = &scene.view;
        let views = Views {
            terrain: view.terrain,
            particles: view.snow,
            wind: view.wind,
            pressure: view.pressure,
            speed_max,
            pressure_range: pressure,
            pressure_size: 0.15 * spacing,
            wind_max_length: 0.8 * spacing,
            // The fastest wind draws a line of the longest length.
            wind_seconds: 0.8 * spacing / speed_max,
            ..Views::default()
        };

        let snow = &scene.snow;
        let mean = |r: [f64; 2]| 0.5 * (r[0] + r[1]);
        let flakes = FlakesConfig {
            count: usize::try_from(snow.particles).unwrap_or(usize::MAX),
            seed: (snow.seed ^ (snow.seed >> 32)) as u32,
            bounds,
            ground: Some(ground.clone()),
            radius: snow.flake_diameter.map(|d| 0.5 * d as f32),
            wind: scene.wind,
            // The speed of the thesis's circular flutter: radius times angular speed.
            flutter: (mean(snow.flutter_radius) * mean(snow.flutter_rate)) as f32,
            fall_speed: snow.fall_speed as f32,
        };
        // The snow's setup carries the wind solver too, so the wind alone runs through it.
        let snow = match scene.simulate.snow || scene.simulate.wind {
            true => Some(SnowSetup::new(scene, &ground)?),
            false => None,
        };
        Ok(Self {
            terrain,
            ground,
            bounds,
            camera,
            views,
            flakes,
            wind_samples: WIND_SAMPLES,
            wind: scene.wind,
            gravity,
            dt: scene.time.step as f32,
            snow,
        })
    }

    /// The session's configuration: this ground, box, camera, views and time step.
    pub fn session_config(&self, interop: InteropMode, paused: bool) -> SessionConfig {
        SessionConfig {
            interop,
            terrain: self.terrain.clone(),
            bounds: self.bounds,
            views: self.views,
            paused,
            dt: self.dt,
            camera: Some(self.camera),
            particle_render: crate::splat::ParticleRender::default(),
            profile_every: 1,
        }
    }

    /// The flakes as a particle source.
    pub fn particle_source(&self) -> Result<Box<dyn ParticleSource>> {
        Ok(Box::new(Flakes::new(self.flakes.clone())?))
    }

    /// The snow simulation as a particle source, when the scene simulates snow.
    pub fn snow_source(&self) -> Result<Option<SnowSource>> {
        self.snow.clone().map(SnowSource::new).transpose()
    }

    /// The wind and pressure views: the solved wind's samples when the snow runs the wind
    /// solver, else the wind profile.
    pub fn field_source(&self) -> Result<Box<dyn FieldSource>> {
        if let Some(solve) = self.snow.as_ref().and_then(|s| s.solve.as_ref()) {
            return Ok(Box::new(crate::wind::view::SolvedView::new(
                solve.view.clone(),
                solve.view_vertices.len(),
            )));
        }
        Ok(Box::new(ProfileWind::new(
            self.wind_samples,
            self.bounds,
            Some(self.ground.clone()),
            self.wind,
            self.gravity,
        )?))
    }
}

fn domain_error(scene: &Scene, key: &str, message: impl std::fmt::Display) -> SceneError {
    SceneError::Domain {
        path: scene.path.clone(),
        key: key.into(),
        message: message.to_string(),
    }
}

/// The ground surface, the ground grid and the box of air of a scene's domain.
pub(crate) fn ground_of(scene: &Scene) -> Result<(TerrainMesh, Heightfield, SceneBox)> {
    match &scene.domain {
        Domain::Terrain { spec, image, .. } => {
            let terrain = Terrain::new(*spec, image.as_ref())
                .map_err(|e| domain_error(scene, "domain", e))?;
            let surface = TerrainMesh::from_mesh_triangles(&terrain.ground_surface().mesh)?;
            let [nx, ny] = spec.cells;
            let heights: Vec<f32> = (0..=ny)
                .flat_map(|j| (0..=nx).map(move |i| (i, j)))
                .map(|(i, j)| terrain.height(i, j) as f32)
                .collect();
            let [x, y, top] = spec.size.map(|v| v as f32);
            let ground = Heightfield {
                nx: nx + 1,
                ny: ny + 1,
                lo: Vec2::ZERO,
                hi: Vec2::new(x, y),
                heights,
            };
            let lowest = ground.range().0.min(0.0);
            let bounds = SceneBox {
                lo: Vec3::new(0.0, 0.0, lowest),
                hi: Vec3::new(x, y, top),
            };
            Ok((surface, ground, bounds))
        }
        Domain::Mesh { .. } => {
            let domain = scene.build_domain(false)?;
            let surface = TerrainMesh::from_mesh_triangles(&domain.ground.mesh)?;
            let (lo, hi) = domain.mesh.vertices.iter().fold(
                (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
                |(lo, hi), v| {
                    let p = Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32);
                    (lo.min(p), hi.max(p))
                },
            );
            let bounds = SceneBox { lo, hi };
            if !bounds.is_valid() {
                return Err(domain_error(
                    scene,
                    "domain.mesh",
                    format!("the mesh spans {lo} .. {hi}: no volume for the snow to fall through"),
                )
                .into());
            }
            let side = ((surface.triangles.len() as f64 / 2.0).sqrt().ceil() as usize + 1)
                .clamp(2, MAX_GROUND_GRID);
            let ground = Heightfield::from_triangles(
                &surface.positions,
                &surface.triangles,
                side,
                side,
                lo.truncate(),
                hi.truncate(),
                lo.z,
            )?;
            Ok((surface, ground, bounds))
        }
    }
}
