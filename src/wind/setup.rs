//! A wind solver for a scene: its domain mesh, boundary sides, profile and settings.

use super::error::{Result, WindError};
use super::profile;
use super::solver::{Settings, Solver};
use crate::cl::Context;
use crate::scene::Scene;

/// The solver settings a scene asks for (`[wind]`), with `profile` deciding whether stages
/// are timed.
pub fn settings(scene: &Scene, profile: bool) -> Settings {
    Settings {
        step: scene.wind.step,
        tolerance: scene.wind.pressure_tolerance,
        iterations: scene.wind.pressure_iterations,
        advection: scene.wind.advection,
        assemble_operator: scene.wind.operator == crate::scene::PressureOperator::Assembled,
        history: scene.wind.pressure_history as usize,
        profile,
        ..Settings::default()
    }
}

/// Builds the scene's domain mesh (renumbered for the device) and sets a solver up on it,
/// on `context`, starting from the scene's inflow profile, with the terrain's columns attached
/// for ground refreshes ([`Solver::set_ground_columns`]) where the domain is a terrain. A mesh the host cannot build in
/// its memory is refused before meshing.
pub fn from_scene(context: Context, scene: &Scene, settings: Settings) -> Result<Solver> {
    // The host must hold the meshing first (the solver checks the device's memory itself).
    crate::scene::limits::check_domain_mesh(scene).map_err(|e| WindError::Scene(e.to_string()))?;
    let domain = scene
        .build_domain(true)
        .map_err(|e| WindError::Scene(e.to_string()))?;
    let ground = crate::scene::ground_of(scene).map_err(|e| WindError::Scene(e.to_string()))?;
    let inflow = profile::vertex_velocities(&domain.mesh.vertices, &ground.grid, &scene.wind);
    let mut solver = Solver::new(
        context,
        &domain.mesh,
        &domain.boundary,
        scene.wind.direction,
        &inflow,
        settings,
    )?;
    // A terrain's columns, for the ground refresh (a mesh-file domain has none).
    if let Some(columns) = domain.columns {
        solver.set_ground_columns(columns, scene.wind)?;
    }
    Ok(solver)
}
