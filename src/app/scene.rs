//! What is drawn of a scene: its ground as a terrain mesh with the initial cover
//! (`ground.initial_depth` where the slope is gentler than `ground.repose_angle`), the box of
//! air the camera frames, the scene's camera and the views it starts with.
//!
//! The terrain drawn is the scene's ground surface ([`crate::scene::ground_of`]) vertex for
//! vertex, so the snow's cover, laid on the same vertices, is drawn where it lies.

use glam::Vec3;

use crate::interop::InteropMode;
use crate::particle::ParcelFlakes;
use crate::render::{NearFlakes, OrbitCamera, Palette, TerrainMesh, Views};
use crate::scene::{Scene, SceneGround};
use crate::terrain::SceneBox;

use super::Result;
use super::session::SessionConfig;

/// The falling snow of a simulation's snow settings, as the veil and the flakes see it: the
/// scene's real snowfall rate (never accelerated), the laid snow's density, the flakes' sizes
/// and fall speed ([`crate::snow::Snowfall`]).
pub fn snowfall(config: &crate::snow::SnowConfig) -> crate::snow::Snowfall {
    crate::snow::Snowfall {
        rate: config.rate,
        density: config.density,
        diameter: config.flake_diameter.map(f64::from),
        fall_speed: f64::from(config.fall_speed),
    }
}

/// Wind lines across the smaller side of the domain at their default length: the wind
/// view's lines and the pressure view's squares are sized to the domain over this.
pub const WIND_LINE_SAMPLES: f32 = 16.0;

/// A scene as the session draws it.
#[derive(Clone, Debug)]
pub struct SceneView {
    /// The ground surface to draw, with the scene's initial cover.
    pub terrain: TerrainMesh,
    /// The air: the domain's extent, from the lowest ground to the top.
    pub bounds: SceneBox,
    /// The scene's camera.
    pub camera: OrbitCamera,
    /// What is drawn at the start (the scene's `[view]`), with wind lines and pressure squares
    /// sized to the domain.
    pub views: Views,
    /// Simulated seconds per frame (`time.step`).
    pub dt: f32,
}

impl SceneView {
    /// What is drawn of `scene`, whose ground is `ground`.
    pub fn new(scene: &Scene, ground: &SceneGround) -> Result<Self> {
        let mut terrain = TerrainMesh::from_mesh_triangles(&ground.surface)?;
        let bounds = ground.air;
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

        let size = bounds.size();
        let spacing = size.x.min(size.y) / WIND_LINE_SAMPLES;
        // Until the simulation's samples arrive: red at the profile's speed at the top of the
        // air above the lowest ground.
        let speed_max = (scene.wind.speed_at(f64::from(size.z)) as f32).max(1e-3);
        let view = &scene.view;
        // The near flakes' wind: the scene's inflow profile at the camera's height above the
        // lowest ground (one vector for the run).
        let wind = scene
            .wind
            .velocity_at(c.position[2] - f64::from(bounds.lo.z))
            .map(|v| v as f32);
        let views = Views {
            terrain: view.terrain,
            particles: view.snow,
            wind: view.wind,
            pressure: view.pressure,
            speed_max,
            pressure_size: 0.15 * spacing,
            wind_max_length: 0.8 * spacing,
            // The fastest wind draws a line of the longest length.
            wind_seconds: 0.8 * spacing / speed_max,
            snow_cover: view.snow_cover.map(|d| d as f32),
            sun: view.sun.map(|a| a as f32),
            exposure: view.exposure as f32,
            shadow_map: view.shadow_map,
            osd_text: view.osd_text as f32,
            sky_distance: view.sky_distance as f32,
            veil: view.veil,
            palette: Palette {
                background: view.sky.map(|c| c as f32),
                snow: view.snow_colour.map(|c| c as f32),
                snow_shade: view.snow_shade.map(|c| c as f32),
                veil: view.veil_colour.map(|c| c as f32),
                ..Palette::default()
            },
            near: NearFlakes {
                wind,
                distance: view.flake_distance as f32,
                max: view.near_flakes,
                exposure_time: view.exposure_time as f32,
                ..NearFlakes::default()
            },
            // The spread, half the parcels' spacing, comes from the simulation.
            parcels: ParcelFlakes {
                flakes: view.parcel_flakes,
                spread: 0.0,
                distance: view.parcel_distance as f32,
            },
            ..Views::default()
        };
        Ok(Self {
            terrain,
            bounds,
            camera,
            views,
            dt: scene.time.step as f32,
        })
    }

    /// The session's configuration: this ground, box, camera and views.
    pub fn session_config(&self, interop: InteropMode, paused: bool) -> SessionConfig {
        SessionConfig {
            interop,
            terrain: self.terrain.clone(),
            bounds: self.bounds,
            views: self.views,
            paused,
            camera: Some(self.camera),
            particle_render: crate::splat::ParticleRender::default(),
            profile_every: 1,
            profile_from: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::render::{Palette, Views};
    use crate::scene::View;

    /// A scene without `[view]` keys draws with the renderer's own defaults.
    #[test]
    fn the_scene_view_defaults_are_the_renderer_defaults() {
        let (views, palette) = (Views::default(), Palette::default());
        let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
        assert_eq!(f(&View::SUN), views.sun.to_vec());
        assert_eq!(f(&View::SKY), palette.background.to_vec());
        assert_eq!(f(&View::SNOW_COLOUR), palette.snow.to_vec());
        assert_eq!(f(&View::SNOW_SHADE), palette.snow_shade.to_vec());
        assert_eq!(f(&View::VEIL_COLOUR), palette.veil.to_vec());
        assert_eq!(f(&View::SNOW_COVER), views.snow_cover.to_vec());
        assert_eq!(View::SHADOW_MAP, views.shadow_map);
    }
}
