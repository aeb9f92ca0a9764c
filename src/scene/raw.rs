//! The scene file as written: every section and key, before validation.
//!
//! Fixed-size lists are read as `Vec` and their lengths checked in validation, so that
//! `size = [1, 2, 3]` is an error that names the key rather than a silent truncation.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScene {
    pub name: Option<String>,
    pub description: Option<String>,
    pub domain: RawDomain,
    #[serde(default)]
    pub wind: RawWind,
    #[serde(default)]
    pub snow: RawSnow,
    #[serde(default)]
    pub ground: RawGround,
    #[serde(default)]
    pub time: RawTime,
    pub camera: Option<RawCamera>,
    #[serde(default)]
    pub simulate: RawSimulate,
    #[serde(default)]
    pub view: RawView,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDomain {
    pub heightmap: Option<PathBuf>,
    pub mesh: Option<PathBuf>,
    pub flat: Option<bool>,
    pub size: Option<Vec<f64>>,
    pub top: Option<f64>,
    pub relief: Option<f64>,
    pub cells: Option<Vec<usize>>,
    pub layers: Option<usize>,
    pub grading: Option<f64>,
    pub boundary: Option<RawBoundary>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBoundary {
    pub x_min: Option<i32>,
    pub x_max: Option<i32>,
    pub y_min: Option<i32>,
    pub y_max: Option<i32>,
    pub ground: Option<i32>,
    pub top: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileName {
    Log,
    Power,
    Uniform,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWind {
    pub direction: Option<Vec<f64>>,
    pub speed: Option<f64>,
    pub reference_height: Option<f64>,
    pub profile: Option<ProfileName>,
    pub roughness: Option<f64>,
    pub exponent: Option<f64>,
    pub air_density: Option<f64>,
    pub ground_refresh: Option<f64>,
    pub ground_refresh_lag: Option<u32>,
    pub pressure_iterations: Option<u32>,
    pub pressure_tolerance: Option<f64>,
    pub pressure_history: Option<u32>,
    pub step: Option<f64>,
    pub advection: Option<super::model::Advection>,
    pub operator: Option<super::model::PressureOperator>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortName {
    /// `none` is the spelling of scenes written before `off`.
    #[serde(alias = "none")]
    Off,
    Full,
    Partial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortKeyName {
    Tetrahedron,
    Hilbert,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSnow {
    pub particles: Option<u64>,
    pub flake_diameter: Option<Vec<f64>>,
    pub fall_speed: Option<f64>,
    pub gravity: Option<f64>,
    pub flutter_radius: Option<Vec<f64>>,
    pub flutter_rate: Option<Vec<f64>>,
    pub deposit_depth: Option<toml::Value>,
    pub rate: Option<f64>,
    pub density: Option<f64>,
    pub source_height: Option<f64>,
    pub full_sort_every: Option<u32>,
    pub sort_every: Option<u32>,
    pub sort: Option<SortName>,
    pub sort_key: Option<SortKeyName>,
    pub seed: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGround {
    pub initial_depth: Option<f64>,
    pub repose_angle: Option<f64>,
    pub smoothing_rate: Option<f64>,
    pub cover_refinement: Option<u32>,
    pub drift: Option<bool>,
    pub suspension: Option<bool>,
    pub ageing_time: Option<f64>,
    pub aged_threshold_friction_velocity: Option<f64>,
    pub threshold_friction_velocity: Option<f64>,
    pub saturation_length: Option<f64>,
    pub roughness: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTime {
    pub step: Option<f64>,
    pub frames: Option<u64>,
    pub acceleration: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCamera {
    pub position: Option<Vec<f64>>,
    pub target: Option<Vec<f64>>,
    pub fov: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSimulate {
    pub wind: Option<bool>,
    pub snow: Option<bool>,
    pub wind_every: Option<u32>,
    pub frozen_wind_steps: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawView {
    pub terrain: Option<bool>,
    pub snow: Option<bool>,
    pub wind: Option<bool>,
    pub pressure: Option<bool>,
    pub window: Option<Vec<u32>>,
    pub vsync: Option<bool>,
    pub sun: Option<Vec<f64>>,
    pub exposure: Option<f64>,
    pub sky: Option<Vec<f64>>,
    pub snow_colour: Option<Vec<f64>>,
    pub snow_shade: Option<Vec<f64>>,
    pub snow_cover: Option<Vec<f64>>,
    pub shadow_map: Option<u32>,
    pub osd_text: Option<f64>,
    pub veil_colour: Option<Vec<f64>>,
    pub sky_distance: Option<f64>,
    pub veil: Option<bool>,
    pub exposure_time: Option<f64>,
    pub flake_distance: Option<f64>,
    pub near_flakes: Option<u32>,
    pub parcel_flakes: Option<u32>,
    pub parcel_distance: Option<f64>,
}
