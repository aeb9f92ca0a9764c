//! [`Simulation`]: the wind and the snow of one scene on one OpenCL context, stepped a frame
//! at a time.

use std::sync::Arc;
use std::time::Instant;

use crate::cl::{Context, OutputBuffer, Timeline};
use crate::counters::ThreadUsage;
use crate::meshio::{ElementKind, Mesh, VtuArray, write_vtu_file};
use crate::particle::Particle;
use crate::snow::{COVER_STAGE, DRIFT_STAGE, SORT_STAGE, STEP_STAGE, Snow};

use super::coupling::WindField;
use super::refresh::{
    PendingRefresh, Planned, RefreshClock, RefreshCost, RefreshOff, RefreshReport, SnowMoved,
};
use super::report::{DriftReport, SimReport};
use super::setup::SimSetup;
use super::setup::WindSetup;
use super::shares::{SnowShares, own_share, parcel_ids};
use super::wind_view::{self, WIND_VIEW_SAMPLES, WindSamples};
use super::{Error, Result, in_stage};
use crate::comm::Comm;
use crate::wind::{GroundPlanner, RefreshStats};

/// Stage of writing the particles at the start (and on a reset).
pub const PARTICLES_STAGE: &str = "snow.particles";
/// Stage of writing the cover's depths for the drawing.
pub const DEPTH_STAGE: &str = "snow.depth";

/// The scene's part of a simulation: the domain's wind and snow.
struct SceneState {
    /// The domain mesh (state files).
    mesh: Mesh,
    /// For each ground vertex of the cover, its vertex of `mesh`.
    ground_vertices: Vec<u32>,
    /// A terrain's column of each vertex of `mesh` and the number of columns (the pieces of a
    /// `.pvtu` state keep columns whole); `None` for a mesh-file domain.
    columns: Option<(Vec<u32>, usize)>,
    /// The piece of every vertex of `mesh` for a `.pvtu` state, once partitioned (the
    /// topology never changes).
    piece_owners: Option<Vec<u32>>,
    /// The other devices' shares of the parcels (`--snow-devices`); dropped before the wind,
    /// whose pinned copies of the field they may still be reading.
    shares: Option<SnowShares>,
    wind: WindField,
    snow: Option<Snow>,
    /// Whether the others' parcels are drawn too ([`Simulation::draw_all`]).
    draw_all: bool,
    /// Gravity, for the hydrostatic pressure shown with the fixed profile.
    gravity: f32,
    /// The vertices the wind views sample.
    view_vertices: Vec<u32>,
    /// The scene's camera position (the report's falling snow is measured there).
    camera: [f64; 3],
    /// When the laid snow next raises the wind's ground, and what the refreshes did.
    refresh: RefreshClock,
    /// The refresh's host half, once a refresh asked for it.
    planner: Option<Arc<GroundPlanner>>,
    /// The refresh read and held back, if any (`refresh`'s module doc).
    pending: Option<PendingRefresh>,
}

/// One scene's wind and snow on one OpenCL context.
///
/// [`step`](Self::step) enqueues a frame and never waits for its end; the counters of a frame
/// are read without blocking and checked once the next one's launches are queued.
/// [`report`](Self::report),
/// [`check`](Self::check), [`save_state`](Self::save_state) and
/// [`wind_samples`](Self::wind_samples) read the device (blocking) and are for when they are
/// due.
pub struct Simulation {
    scene: Option<SceneState>,
    /// Particles given by the host ([`SimSetup::still`]).
    still: Vec<Particle>,
    still_depth: Vec<f32>,
    dt: f32,
}

impl Simulation {
    /// Builds `setup` on `context`: the snow's kernels and buffers, the wind (its start-up
    /// solve, or its frozen steps). Then [`reset`](Self::reset) writes the first particles.
    pub fn new(context: &Context, setup: SimSetup) -> Result<Self> {
        Self::build(context, setup, None)
    }

    /// As [`new`](Self::new), as rank 0 of `comm`, whose other ranks each step a share of the
    /// parcels ([`super::ranks`]; each of them serves with a [`super::ranks::RankFollower`]
    /// built with [`rank_shares`]). Refused with the parcels also split across devices.
    pub fn over_ranks(context: &Context, setup: SimSetup, comm: Box<dyn Comm>) -> Result<Self> {
        Self::build(context, setup, Some(comm))
    }

    fn build(context: &Context, setup: SimSetup, comm: Option<Box<dyn Comm>>) -> Result<Self> {
        super::check_time_step(setup.dt)?;
        if comm.is_some() {
            super::ranks::shared_snow(&setup)?;
        }
        let scene = match setup.scene {
            Some(s) => {
                // `shared_snow` refused a split across both ranks and devices.
                let (snow, shares) = match (s.snow, &s.split, comm) {
                    (Some(config), None, Some(comm)) => {
                        let total = parcel_ids(config.particles)?;
                        let shares = rank_shares(config.particles, comm.size())?;
                        let snow = own_share(context, &s.domain, config, shares[0].1, total)?;
                        let shares = SnowShares::over_ranks(context, &snow, comm, &shares)?;
                        (Some(snow), Some(shares))
                    }
                    (Some(config), None, None) => {
                        (Some(Snow::new(context, &s.domain, config)?), None)
                    }
                    (Some(config), Some(split), _) => {
                        let total = parcel_ids(config.particles)?;
                        let shares = SnowShares::new(context, &s.domain, &config, split, total)?;
                        let snow = own_share(context, &s.domain, config, split.shares[0].1, total)?;
                        (Some(snow), Some(shares))
                    }
                    (None, _, _) => (None, None),
                };
                let share_contexts = shares.as_ref().map(SnowShares::contexts);
                let mut wind = WindField::new(
                    context,
                    &s.domain,
                    &s.wind,
                    setup.dt,
                    share_contexts.as_deref().unwrap_or_default(),
                )?;
                if let Some(shares) = &shares {
                    wind.attach(&shares.contexts())?;
                }
                let (every, off) = prepare_refreshes(&mut wind, &s.wind, snow.is_some())?;
                let lag = match &s.wind {
                    WindSetup::Solved { wind, .. } => wind.ground_refresh_lag,
                    WindSetup::Profile { .. } => 0,
                };
                let refresh = RefreshClock::new(every, off, lag);
                // Taken now: a refresh's start then hands its plan off without asking the wind.
                let planner = match off {
                    None if every > 0.0 => wind.ground_planner()?,
                    _ => None,
                };
                let view_vertices =
                    wind_view::sample_vertices(s.domain.mesh.vertices.len(), WIND_VIEW_SAMPLES);
                let columns = s
                    .domain
                    .columns
                    .as_ref()
                    .map(|c| (c.column.clone(), c.ground.len()));
                Some(SceneState {
                    ground_vertices: s.domain.ground.volume_vertices,
                    columns,
                    piece_owners: None,
                    mesh: s.domain.mesh,
                    wind,
                    snow,
                    shares,
                    draw_all: false,
                    gravity: s.gravity,
                    view_vertices,
                    camera: s.camera,
                    refresh,
                    planner,
                    pending: None,
                })
            }
            None => None,
        };
        Ok(Self {
            scene,
            still: setup.still,
            still_depth: setup.still_depth,
            dt: setup.dt,
        })
    }

    /// Tells the simulation that nothing draws it (`--render off`): the snow's step then
    /// skips writing the parcels as drawn (16 bytes a parcel a step); the buffer given to
    /// [`step`](Self::step) keeps what the reset wrote.
    pub fn undrawn(&mut self) {
        if let Some(s) = self.scene.as_mut()
            && let Some(snow) = s.snow.as_mut()
        {
            snow.set_writes_render(false);
        }
    }

    /// Draws the parcels of every device, not only the snow's device's own, where they are
    /// split across devices (the drawing's buffer then holds [`particle_count`] of them; call
    /// it before allocating that buffer). Nothing otherwise.
    ///
    /// [`particle_count`]: Self::particle_count
    pub fn draw_all(&mut self) -> Result<()> {
        if let Some(s) = self.scene.as_mut()
            && let Some(shares) = s.shares.as_mut()
        {
            shares.draw_all()?;
            s.draw_all = true;
        }
        Ok(())
    }

    /// Particles written into the drawing's buffer: with the parcels split across devices,
    /// the snow's device's own, and the others' too once [`draw_all`](Self::draw_all) asked
    /// for them.
    pub fn particle_count(&self) -> usize {
        match &self.scene {
            Some(s) => {
                let own = s.snow.as_ref().map_or(0, |snow| snow.particles().len());
                let others = match &s.shares {
                    Some(shares) if s.draw_all => shares.particles(),
                    _ => 0,
                };
                own + others
            }
            None => self.still.len(),
        }
    }

    /// A short name of what the particles are, for the log.
    pub fn particle_name(&self) -> &'static str {
        match &self.scene {
            Some(_) => "snow parcels",
            None => "still particles",
        }
    }

    /// Ground vertices whose cover [`write_ground_depth`](Self::write_ground_depth) writes
    /// (the drawn terrain's vertices, in its order); zero when nothing lays snow.
    pub fn ground_vertices(&self) -> usize {
        match &self.scene {
            Some(s) if s.snow.is_some() => s.ground_vertices.len(),
            Some(_) => 0,
            None => self.still_depth.len(),
        }
    }

    /// Whether the wind is solved (its views show the solver's field, refreshed per step).
    pub fn solves_wind(&self) -> bool {
        self.scene.as_ref().is_some_and(|s| s.wind.is_solved())
    }

    /// Whether the snow sorts its particles now.
    pub fn sorting(&self) -> bool {
        self.snow()
            .is_some_and(|s| s.sort_mode() != crate::scene::SortMode::Off)
    }

    /// Switches sorting to the partial sort or off; returns whether the simulation sorts at
    /// all (no particles: nothing to sort).
    pub fn set_sorting(&mut self, on: bool) -> Result<bool> {
        let mode = match on {
            true => crate::scene::SortMode::Partial,
            false => crate::scene::SortMode::Off,
        };
        if let Some(shares) = self.scene.as_mut().and_then(|s| s.shares.as_mut()) {
            shares.set_sort(mode)?;
        }
        match self.scene.as_mut().and_then(|s| s.snow.as_mut()) {
            Some(snow) => {
                snow.set_sort(mode)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The snow, when particles are simulated.
    pub fn snow(&self) -> Option<&Snow> {
        self.scene.as_ref().and_then(|s| s.snow.as_ref())
    }

    /// Every share of the parcels, the snow's own first, where they are split across ranks
    /// (`--json`'s `snow_devices`); `None` otherwise.
    pub fn rank_report(&self) -> Option<Vec<super::shares::ShareReport>> {
        let shares = self.scene.as_ref()?.shares.as_ref()?;
        shares.over_other_ranks().then(|| shares.report().to_vec())
    }

    /// The other devices' shares of the parcels, where they are split (tests, tools).
    pub fn shares_mut(&mut self) -> Option<&mut SnowShares> {
        self.scene.as_mut()?.shares.as_mut()
    }

    /// The snow, to change its state by hand (tests, tools).
    pub fn snow_mut(&mut self) -> Option<&mut Snow> {
        self.scene.as_mut().and_then(|s| s.snow.as_mut())
    }

    /// Lays the snow at `acceleration` times the scene's real snowfall from the next landing on
    /// (`time.acceleration`, the `[` and `]` keys); the parcels and the wind go on in real time
    /// and the fixed-point unit stays the real parcel's. An error for an acceleration out of
    /// `[1e-6, 1e6]` or a simulation without snow.
    pub fn set_acceleration(&mut self, acceleration: f64) -> Result<()> {
        match self.snow_mut() {
            Some(snow) => Ok(snow.set_acceleration(acceleration)?),
            None => Err(Error::InvalidParameter(
                "no snow is simulated: there is no snowfall to accelerate".into(),
            )),
        }
    }

    /// The falling snow's density relative to the scene's uniform snowfall, where the parcels
    /// are now (`snow::RelativeDensity`; blocking); `None` without snow.
    pub fn flake_density(&mut self) -> Result<Option<crate::snow::RelativeDensity>> {
        let Some(s) = self.scene.as_mut() else {
            return Ok(None);
        };
        match (s.snow.as_mut(), s.shares.as_mut()) {
            (Some(snow), Some(shares)) => Ok(Some(shares.flake_density(snow.flake_density()?)?)),
            (Some(snow), None) => Ok(Some(snow.flake_density()?)),
            (None, _) => Ok(None),
        }
    }

    /// Simulated seconds per frame.
    pub fn dt(&self) -> f32 {
        self.dt
    }

    /// Wind steps run so far; the views' samples change only when this does.
    pub fn wind_steps(&self) -> u64 {
        self.scene.as_ref().map_or(0, |s| s.wind.steps())
    }

    /// Makes ready what writing the state to `path` needs before the run: for a `.pvtu`, the
    /// partition of the mesh into its pieces (METIS; an error names the path when it cannot
    /// be made, more pieces than columns, say). Nothing for a `.vtu` or without a scene.
    pub fn prepare_state(&mut self, path: &std::path::Path) -> Result<()> {
        match &mut self.scene {
            Some(s) if crate::meshio::pvtu::is_pvtu(path) => prepare_owners(s, path),
            _ => Ok(()),
        }
    }

    /// Raises the wind's ground by the laid snow now ([`Simulation::step`] does it every
    /// `wind.ground_refresh` simulated seconds, applied `wind.ground_refresh_lag` frames after
    /// its read): the depth per column read back, the wind's
    /// columns regraded, its geometry and operator rebuilt and its field re-projected, the
    /// snow's mesh moved with it and every parcel found again (a buried one moved up onto the
    /// new surface), all on this thread; a refresh held back (`wind.ground_refresh_lag`) is
    /// dropped once this one succeeds, since it reads newer depths. Blocking. Does nothing
    /// where the ground cannot be refreshed ([`RefreshOff`]); returns whether it refreshed.
    pub fn refresh_ground(&mut self, context: &Context) -> Result<bool> {
        self.settle()?;
        match &mut self.scene {
            // Any other reason (no snow, a fixed wind, a mesh domain) rules a refresh out.
            Some(s) if matches!(s.refresh.off, None | Some(RefreshOff::Disabled)) => {
                // Dropped once this refresh succeeds; kept should it fail.
                let pending = s.pending.take();
                let refreshed = refresh_ground(s, context);
                match (&refreshed, pending) {
                    (Err(_), pending) => s.pending = pending,
                    (Ok(_), Some(_)) => s.refresh.book_dropped(),
                    (Ok(_), None) => {}
                }
                refreshed
            }
            _ => Ok(false),
        }
    }

    /// The height of the wind mesh's ground at each of the cover's ground vertices, m (raised
    /// by the refreshes; `None` without a scene).
    pub fn ground_heights(&self) -> Option<Vec<f64>> {
        let s = self.scene.as_ref()?;
        Some(
            s.ground_vertices
                .iter()
                .map(|&v| s.mesh.vertices[v as usize][2])
                .collect(),
        )
    }

    /// What the ground refreshes did so far (`None` without a scene; blocking: the parcels
    /// they moved are counted on the device).
    pub fn refresh_report(&self) -> Result<Option<RefreshReport>> {
        self.scene.as_ref().map(refresh_books).transpose()
    }

    /// Puts the particles at their start (the snow's cover and counters cleared; the wind
    /// goes on over the bare ground again) and writes them into `particles`. Only enqueues,
    /// unless the ground had been raised (then it waits for the wind's regrade).
    pub fn reset(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, Particle>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        timeline.stage(PARTICLES_STAGE);
        if let Some(s) = self.scene.as_mut() {
            s.refresh.restart();
            s.pending = None;
            if s.refresh.raised {
                // Back to the bare ground: the cover is about to be cleared.
                let planned = Planned::new(&*planner(s)?, &vec![0.0; s.ground_vertices.len()])?;
                apply_plan(s, context, planned)?;
                s.refresh.raised = false;
            }
        }
        if let Some(shares) = self.scene.as_mut().and_then(|s| s.shares.as_mut()) {
            shares.reset()?;
        }
        let written = match self.scene.as_mut().map(|s| s.snow.as_mut()) {
            Some(Some(snow)) => snow
                .reset(context, &*particles, timeline)
                .map_err(Error::from),
            Some(None) => Ok(()),
            None => particles.write(&self.still).map_err(Error::from),
        };
        in_stage(PARTICLES_STAGE, written)
    }

    /// One frame, in order: the ground refresh (a held-back one applied at its frame, one
    /// falling due read and handed to its own thread), the field handed to the snow (the
    /// wind as it stood at the frame's start), the snow's sort, particle step, drift and cover
    /// smoothing (the particles written into `particles`), the wind steps that are due (after
    /// the snow's launches on one device, beside them on another: `coupling`); then the last
    /// frame's counters are checked and this frame's start on their way back. Only enqueues,
    /// but for the waits of the wind's pressure solve on the snow's device, with the wind
    /// beside the wait for the last frame's steps, and with the parcels split the waits for
    /// the others' landings.
    pub fn step(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, Particle>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let dt = self.dt;
        if let Some(s) = &mut self.scene {
            // The last frame's counters are checked when this frame's start on their way,
            // after its launches (`start_counter_read`, on every device): a non-finite parcel
            // stops the run one frame late, and the host queues this frame without waiting
            // for the last one's end.
            // 1. Every `wind.ground_refresh` seconds, the laid snow raises the wind's ground
            //    (a stated hitch: it waits for the device), read now and applied
            //    `wind.ground_refresh_lag` frames later.
            ground_refresh_frame(s, context, dt)?;
            // 2. The coupling's frame (`coupling`'s doc has the order): the field handed to
            //    the snow (the wind as it stood at the frame's start), the snow's launches,
            //    and the wind steps that are due, after them on one device, beside them on
            //    two.
            if let Some(shares) = s.shares.as_mut() {
                shares.begin_frame(timeline.records_events());
            }
            let (snow, shares) = (&mut s.snow, &mut s.shares);
            s.wind
                .frame(dt, timeline, |field, fields, gate, timeline| {
                    let Some(snow) = snow.as_mut() else {
                        return Ok(());
                    };
                    // 3. The snow: lifting (with drift), sort, particle step (landings lay their
                    //    parcels), drift, smoothing; an error names its stage. With the parcels
                    //    split (`shares`), the others sort after the lifting is queued; their
                    //    steps, which take its cells, go after the snow's device's sort and step.
                    let staged =
                        |stage, r: crate::snow::Result<()>| in_stage(stage, r.map_err(Error::from));
                    staged(DRIFT_STAGE, snow.lift(context, &field, dt, timeline))?;
                    if let Some(shares) = shares.as_mut() {
                        shares.start_cells(snow)?;
                        shares.sort()?;
                    }
                    staged(SORT_STAGE, snow.sort(timeline))?;
                    staged(
                        STEP_STAGE,
                        snow.advance_parcels(context, &field, dt, &*particles, timeline),
                    )?;
                    // The others step on the cells, and their landings join the cover before
                    // it drifts or is smoothed; the wind's steps on a device with a share start
                    // after that share's frame.
                    if let Some(shares) = shares.as_mut() {
                        shares.send_cells()?;
                        shares.advance(dt, fields)?;
                        shares.hand_over()?;
                        if let Some(device) = gate.device() {
                            gate.open(shares.frame_ends_on(device)?);
                        }
                        timeline.stage(COVER_STAGE);
                        shares.gather(context, snow, &*particles, timeline)?;
                    }
                    staged(DRIFT_STAGE, snow.drift(context, &field, dt, timeline))?;
                    staged(COVER_STAGE, snow.smooth_cover(context, timeline))?;
                    // This frame's counters start on their way back, without waiting.
                    snow.start_counter_read()?;
                    Ok(())
                })?;
        }
        Ok(())
    }

    /// Frames per wind step while the wind steps with the frames (its step over the frame's),
    /// `None` without a solved wind.
    pub fn frames_per_wind_step(&self) -> Option<f64> {
        let step = self.scene.as_ref()?.wind.step_dt()?;
        Some(step / f64::from(self.dt))
    }

    /// Runs `frames` frames into `particles`, timing every snow device's launches and the
    /// wind's, for [`super::balance`]: per snow device (the snow's own first) its parcels, its
    /// snow's device time per frame and the wind's time per frame on it. `None` unless the
    /// parcels are split across devices. Blocking.
    pub(super) fn device_costs(
        &mut self,
        context: &Context,
        particles: &mut OutputBuffer<'_, Particle>,
        frames: u32,
    ) -> Result<Option<Vec<super::balance::DeviceCost>>> {
        let Some((before, steps_before)) = self.scene.as_mut().and_then(|s| {
            let shares = s.shares.as_mut()?;
            shares.set_timing(true);
            Some((s.wind.beside_cost(), s.wind.steps()))
        }) else {
            return Ok(None);
        };
        // The wind's cost a frame: per step run in the window, times the steps a frame makes
        // due on average (a window of 8 frames holds 2 or 3 steps of one every third frame).
        let steps_per_frame = self.frames_per_wind_step().map_or(0.0, |f| 1.0 / f);
        let mut timeline = Timeline::new(true);
        for _ in 0..frames {
            self.step(context, particles, &mut timeline)?;
        }
        self.settle()?;
        timeline.wait()?;
        let stages = timeline.stage_times()?;
        // Device time of the window's launches whose stage `of` picks, ms.
        let busy = |of: &dyn Fn(&str) -> bool| -> f64 {
            stages
                .iter()
                .filter(|t| of(&t.stage))
                .map(|t| t.busy.as_secs_f64() * 1e3)
                .sum::<f64>()
        };
        let frames_f = f64::from(frames.max(1));
        let own_snow = busy(&|s| s.starts_with("snow.") || s.starts_with("sort.")) / frames_f;
        let Some(s) = self.scene.as_mut() else {
            return Ok(None);
        };
        // The wind's window total, ms, as a cost a frame.
        let steps = s.wind.steps() - steps_before;
        let per_frame = |total: f64| match steps {
            0 => 0.0,
            n => total / n as f64 * steps_per_frame,
        };
        let own_wind = per_frame(busy(&|s| s.starts_with("wind.")));
        let (Some(snow), Some(shares)) = (s.snow.as_ref(), s.shares.as_mut()) else {
            return Ok(None);
        };
        let others = shares.timed();
        shares.set_timing(false);
        // The wind beside the snow: its thread's wall time per frame, on its device.
        let beside = match (before, s.wind.beside_cost()) {
            (Some((device, t0)), Some((_, t1))) => Some((device, per_frame((t1 - t0) * 1e3))),
            _ => None,
        };
        let wind_on = |index: usize| match beside {
            Some((device, ms)) if device == index => ms,
            _ => 0.0,
        };
        let mut costs = vec![super::balance::DeviceCost {
            parcels: snow.particles().len(),
            snow_ms: own_snow,
            wind_ms: own_wind + wind_on(context.info().index),
        }];
        for (index, parcels, ms) in others {
            costs.push(super::balance::DeviceCost {
                parcels,
                snow_ms: ms / frames_f,
                wind_ms: wind_on(index),
            });
        }
        Ok(Some(costs))
    }

    /// Waits for the last frame's counters and checks them: what the next frame's
    /// [`step`](Self::step) does once queued, for a run that ends here.
    pub fn settle(&mut self) -> Result<()> {
        if let Some(s) = &mut self.scene {
            s.wind.settle()?;
        }
        if let Some(snow) = self.snow_mut() {
            snow.check_counter_read()?;
        }
        if let Some(shares) = self.scene.as_mut().and_then(|s| s.shares.as_mut()) {
            shares.check_counter_read()?;
        }
        Ok(())
    }

    /// Enqueues writing the cover's depth (metres) on each ground vertex, four vertices per
    /// float4, into `target` (which the drawing hands to the terrain).
    pub fn write_ground_depth(
        &mut self,
        context: &Context,
        target: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        timeline.stage(DEPTH_STAGE);
        let written = match &self.scene {
            Some(s) => match &s.snow {
                Some(snow) => snow
                    .cover()
                    .write_depths(context, target, timeline)
                    .map_err(Error::from),
                None => Ok(()),
            },
            None => {
                let packed: Vec<[f32; 4]> = self
                    .still_depth
                    .chunks(4)
                    .map(|c| std::array::from_fn(|i| c.get(i).copied().unwrap_or(0.0)))
                    .collect();
                target.write(&packed).map_err(Error::from)
            }
        };
        in_stage(DEPTH_STAGE, written)
    }

    /// Enqueues writing the friction velocity (m/s) on each ground vertex, four per float4,
    /// into `target` (the terrain's u* view); `false` (nothing written) without drifting
    /// snow.
    pub fn write_ground_friction(
        &self,
        context: &Context,
        target: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> Result<bool> {
        match self.snow() {
            Some(snow) => in_stage(
                DRIFT_STAGE,
                snow.write_ground_friction(context, target, timeline)
                    .map_err(Error::from),
            ),
            None => Ok(false),
        }
    }

    /// The friction velocity below which the wind lifts no snow, m/s; `None` without
    /// drifting snow.
    pub fn friction_threshold(&self) -> Option<f64> {
        self.snow()
            .and_then(|s| s.drifting())
            .map(|d| d.settings().threshold)
    }

    /// The wind views' samples of the field as it is now (blocking reads of the solved
    /// field); `None` without a wind (still particles). With the fixed profile the pressure
    /// shown is the hydrostatic one, in kPa; a solved field's is the solver's, in Pa.
    pub fn wind_samples(&mut self) -> Result<Option<WindSamples>> {
        let Some(s) = &mut self.scene else {
            return Ok(None);
        };
        let velocity = s.wind.velocity()?;
        let pressure = match s.wind.pressure()? {
            Some(p) => p,
            None => s
                .mesh
                .vertices
                .iter()
                .map(|v| wind_view::hydrostatic_kpa(v[2] as f32, s.gravity))
                .collect(),
        };
        Ok(Some(wind_view::samples(
            &s.mesh.vertices,
            &velocity,
            &pressure,
            &s.view_vertices,
        )))
    }

    /// What the run did, read from the device (blocking): the snow's counts and cover, the
    /// wind's steps.
    pub fn report(&mut self) -> Result<SimReport> {
        self.settle()?;
        let Some(s) = &mut self.scene else {
            return Ok(SimReport {
                particles: self.still.len(),
                ..SimReport::default()
            });
        };
        let mut report = SimReport {
            wind_steps: s.wind.steps(),
            wind_iterations: s.wind.mean_iterations(),
            ..SimReport::default()
        };
        if let Some(snow) = s.snow.as_mut() {
            let mut counters = snow.counters()?;
            let mut particles = snow.particles().len();
            if let Some(shares) = &s.shares {
                shares.counters()?.iter().for_each(|c| counters.add(c));
                particles += shares.particles();
            }
            let (deposited_m3, max_depth_m) = snow.cover_summary()?;
            let elsewhere = match &s.shares {
                Some(shares) => shares.suspended_units()?,
                None => 0,
            };
            let drift = drift_report(snow, elsewhere)?;
            report = SimReport {
                particles,
                landed: counters.landed,
                respawned: counters.respawned(),
                wrapped: counters.wrapped,
                lost: counters.lost,
                deposited_m3,
                max_depth_m,
                parcel_m3: snow.parcel_volume(),
                drift,
                ground_refresh: Some(refresh_books(s)?),
                ..report
            };
        }
        if let Some(shares) = &s.shares {
            report.split_traffic = Some(shares.traffic(s.mesh.vertices.len()));
            report.split_waits = Some(shares.waits());
            report.split_device_ms = Some(shares.device_ms());
        }
        let camera = s.camera;
        report.flake_density_at_camera = self.flake_density()?.map(|d| d.at(camera));
        Ok(report)
    }

    /// Checks the invariants after the frames so far (blocking reads): the wind finite at
    /// every vertex, every particle id present once, the snow on the ground exactly the
    /// landings × the parcel. The error names the stage and the entity.
    pub fn check(&mut self) -> Result<()> {
        self.settle()?;
        if let Some(s) = &mut self.scene {
            s.wind.check()?;
            match (&s.snow, &s.shares) {
                (Some(snow), Some(shares)) => {
                    snow.check_ids()?;
                    for other in shares.snows() {
                        other.check_ids()?;
                    }
                    shares.check_ranks(&s.wind.velocity()?)?;
                    let particles = shares.particles();
                    let suspended = shares.suspended_units()?;
                    snow.ledger_with(&shares.counters()?, particles, suspended)?
                        .check()?;
                }
                (Some(snow), None) => snow.check_invariants()?,
                (None, _) => {}
            }
        }
        Ok(())
    }

    /// Writes the state to `path` as VTK XML: the domain's tetrahedra and boundary triangles
    /// with `ref`, and per vertex `velocity` (m/s), `pressure` (Pa; zero with the fixed
    /// profile) and `snow_depth` (m, on the ground, zero elsewhere: the cover restricted to
    /// the wind mesh's ground, whose integral over the ground triangles is the cover's
    /// volume); and, with snow, the cover at its own resolution beside it
    /// ([`cover_path`](crate::output::rule::cover_path): its triangles with `snow_depth` (m)
    /// and `snow_volume` (m³) per vertex). With drifting snow, the domain's file also has
    /// `first_level_height` (m, on the ground: where the friction velocity reads the wind) and
    /// the cover's `friction_velocity` (m/s) and `saltation_flux` (m²/s of laid snow, real
    /// time). A `path` ending `.pvtu` writes the domain's file in pieces, one per rank
    /// ([`crate::meshio::pvtu`]: `X.pvtu` and `X/piece_00000.vtu`, …), partitioned by
    /// [`prepare_state`](Self::prepare_state) or here. Still particles have no state to write.
    pub fn save_state(&mut self, path: &std::path::Path) -> Result<()> {
        let Some(s) = &mut self.scene else {
            return Err(Error::InvalidParameter(
                "still particles have no mesh state to write (--vtu needs a scene's simulation)"
                    .into(),
            ));
        };
        // A field written is a field checked (its last step's projection included).
        s.wind.check_last_step()?;
        let velocity = s.wind.velocity()?;
        let pressure = s
            .wind
            .pressure()?
            .unwrap_or_else(|| vec![0.0; s.mesh.vertices.len()]);
        let mut depth = vec![0.0f32; s.mesh.vertices.len()];
        let laid = match &s.snow {
            Some(snow) => snow.cover().ground_depths()?,
            None => Vec::new(),
        };
        for (g, d) in laid.into_iter().enumerate() {
            if let Some(&v) = s.ground_vertices.get(g) {
                depth[v as usize] = d;
            }
        }
        let tets = s.mesh.elements(ElementKind::Tetrahedra).with_refs::<4>();
        let triangles = s.mesh.elements(ElementKind::Triangles).with_refs::<3>();
        let velocity: Vec<[f32; 3]> = velocity.iter().map(|u| [u[0], u[1], u[2]]).collect();
        let mut arrays = vec![
            VtuArray::vectors("velocity", &velocity),
            VtuArray::scalars("pressure", &pressure),
            VtuArray::scalars("snow_depth", &depth),
        ];
        // With drift: the height of the first level above each ground vertex, where the
        // friction velocity reads the wind (zero off the ground).
        let mut level = Vec::new();
        if let Some(drift) = s.snow.as_ref().and_then(|snow| snow.drifting()) {
            level = vec![0.0f32; s.mesh.vertices.len()];
            for (g, &h) in drift.level_height().iter().enumerate() {
                if let Some(&v) = s.ground_vertices.get(g) {
                    level[v as usize] = h;
                }
            }
        }
        if !level.is_empty() {
            arrays.push(VtuArray::scalars("first_level_height", &level));
        }
        if crate::meshio::pvtu::is_pvtu(path) {
            prepare_owners(s, path)?;
            let owner = s.piece_owners.as_deref().unwrap_or_default();
            let count = state_pieces(s);
            let n = s.mesh.vertices.len();
            let pieces = crate::meshio::pvtu::split(n, owner, count, &tets, &triangles)?;
            crate::meshio::pvtu::write_pvtu_file(path, &s.mesh.vertices, &pieces, &arrays)?;
        } else {
            write_vtu_file(path, &s.mesh.vertices, &tets, &triangles, &arrays)?;
        }
        if let Some(snow) = &s.snow {
            let cover = snow.cover();
            let volumes = cover.volumes()?;
            let unit = cover.unit_volume();
            let depth = cover.depths_of(&volumes);
            let volume: Vec<f32> = volumes.iter().map(|&u| (u as f64 * unit) as f32).collect();
            let triangles: Vec<([u32; 3], i32)> =
                cover.mesh.triangles.iter().map(|&t| (t, 0)).collect();
            let (friction, flux) = match snow.drifting() {
                Some(drift) => (drift.friction_velocity()?, drift.saltation_flux()?),
                None => (Vec::new(), Vec::new()),
            };
            let mut arrays = vec![
                VtuArray::scalars("snow_depth", &depth),
                VtuArray::scalars("snow_volume", &volume),
            ];
            if !friction.is_empty() {
                arrays.push(VtuArray::scalars("friction_velocity", &friction));
                arrays.push(VtuArray::scalars("saltation_flux", &flux));
            }
            write_vtu_file(
                &crate::output::rule::cover_path(path),
                &cover.mesh.vertices,
                &[],
                &triangles,
                &arrays,
            )?;
        }
        Ok(())
    }
}

/// How many pieces a `.pvtu` state of `s` has: one per rank (one without ranks).
fn state_pieces(s: &SceneState) -> usize {
    s.shares.as_ref().map_or(1, SnowShares::ranks)
}

/// Partitions `s`'s mesh into the pieces of the `.pvtu` state `path` ([`piece_owners`]) into
/// `s.piece_owners`, once; an error names the path.
fn prepare_owners(s: &mut SceneState, path: &std::path::Path) -> Result<()> {
    if s.piece_owners.is_none() {
        let pieces = state_pieces(s);
        let owners = piece_owners(&s.mesh, s.columns.as_ref(), pieces).map_err(|e| {
            Error::InvalidParameter(format!(
                "--vtu {}: the state cannot be split into {pieces} pieces: {e}",
                path.display(),
            ))
        })?;
        s.piece_owners = Some(owners);
    }
    Ok(())
}

/// The piece of every vertex of `mesh` for a `.pvtu` state of `pieces` pieces: METIS k-way
/// on whole `columns` for a terrain, on the vertices for a mesh file; all in piece 0 for one.
fn piece_owners(
    mesh: &Mesh,
    columns: Option<&(Vec<u32>, usize)>,
    pieces: usize,
) -> Result<Vec<u32>> {
    use crate::partition::{Partition, VertexGraph};
    if pieces <= 1 {
        return Ok(vec![0; mesh.vertices.len()]);
    }
    let graph = VertexGraph::of_mesh(mesh)?;
    let columns = columns.map(|(c, n)| (c.as_slice(), *n));
    Ok(Partition::of_domain(&graph, columns, pieces, None)?
        .owner()
        .to_vec())
}

/// The ground refresh's part of a frame of `dt` seconds: a refresh held back until this
/// frame (or held back when the next falls due) applied, and a refresh that falls due read,
/// then applied at once without a lag or handed to its own thread with one.
fn ground_refresh_frame(s: &mut SceneState, context: &Context, dt: f32) -> Result<()> {
    let due = s.refresh.tick(dt);
    if s.pending
        .as_ref()
        .is_some_and(|p| due || p.due <= s.refresh.frame())
    {
        apply_pending(s, context)?;
    }
    if due {
        if s.refresh.lag == 0 {
            refresh_ground(s, context)?;
        } else {
            start_refresh(s, context, true)?;
        }
    }
    Ok(())
}

/// What `s`'s ground refreshes did: the clock's books, with the parcels the regrades moved
/// as each snow device counted them (blocking).
fn refresh_books(s: &SceneState) -> Result<RefreshReport> {
    let frames = s.snow.as_ref().map_or(0, |snow| snow.frame());
    let mut report = s.refresh.report(frames, s.pending.is_some());
    if let Some(snow) = &s.snow {
        let (up, lost) = snow.relocated()?;
        report.buried_parcels += up;
        report.lost_parcels += lost;
    }
    if let Some(shares) = &s.shares {
        let (up, lost) = shares.relocated()?;
        report.buried_parcels += up;
        report.lost_parcels += lost;
    }
    Ok(report)
}

/// The refresh's planner, made at the first refresh that needs it.
fn planner(s: &mut SceneState) -> Result<Arc<GroundPlanner>> {
    if let Some(planner) = &s.planner {
        return Ok(Arc::clone(planner));
    }
    let planner = s.wind.ground_planner()?.ok_or_else(|| {
        Error::Internal("a ground refresh of a wind that is a fixed field".into())
    })?;
    s.planner = Some(Arc::clone(&planner));
    Ok(planner)
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Reads the cover's depth per column, as a raise of the wind's ground (blocking): the frames
/// queued before it finish first, their work theirs, not the refresh's. `None` without snow.
fn read_raise(s: &SceneState, context: &Context) -> Result<Option<(Vec<f64>, RefreshCost)>> {
    let Some(snow) = s.snow.as_ref() else {
        return Ok(None);
    };
    let drain = Instant::now();
    context.finish()?;
    let drain_ms = ms(drain);
    // The usage first: its own reads stay out of the refresh's time.
    let usage = ThreadUsage::now();
    let start = Instant::now();
    let raise: Vec<f64> = snow
        .cover()
        .ground_depths()?
        .iter()
        .map(|&d| f64::from(d))
        .collect();
    let depths_ms = ms(start);
    let cost = RefreshCost {
        ms: depths_ms,
        drain_ms,
        depths_ms,
        wait_ms: 0.0,
        thread: usage.elapsed(),
    };
    Ok(Some((raise, cost)))
}

/// Raises `s`'s wind ground by its cover's depth per column, planned and applied on this
/// thread (blocking): a refresh held back no frames; books it. Returns whether the ground
/// moved.
fn refresh_ground(s: &mut SceneState, context: &Context) -> Result<bool> {
    match start_refresh(s, context, false)? {
        true => apply_pending(s, context),
        false => Ok(false),
    }
}

/// Reads the cover's depth per column into `s.pending`, for application `lag` frames from
/// now, planned on a thread of its own (`beside`) or on this one; whether there was snow to
/// read.
fn start_refresh(s: &mut SceneState, context: &Context, beside: bool) -> Result<bool> {
    let Some((raise, mut read)) = read_raise(s, context)? else {
        return Ok(false);
    };
    let start = Instant::now();
    let planner = planner(s)?;
    let frame = s.refresh.frame();
    if let Some(shares) = s.shares.as_mut() {
        shares.plan_ground(&raise)?;
    }
    let due = frame + u64::from(s.refresh.lag);
    let mut pending = PendingRefresh::start(planner, raise, frame, due, beside);
    read.ms += ms(start);
    s.refresh.book_read(&read);
    pending.started = read;
    s.pending = Some(pending);
    Ok(true)
}

/// Applies the refresh held back, waiting for its plan if it is not ready (the frames queued
/// before it finish first); books it. Returns whether the ground moved.
fn apply_pending(s: &mut SceneState, context: &Context) -> Result<bool> {
    let Some(pending) = s.pending.take() else {
        return Ok(false);
    };
    let drain = Instant::now();
    context.finish()?;
    let drain_ms = ms(drain);
    let usage = ThreadUsage::now();
    let start = Instant::now();
    let (started, lag) = (pending.started, s.refresh.frame() - pending.read);
    let planned = pending.wait()?;
    let wait_ms = ms(start);
    let Some((stats, moved)) = apply_plan(s, context, planned)? else {
        return Ok(false);
    };
    let applied = RefreshCost {
        ms: ms(start),
        drain_ms,
        wait_ms,
        thread: usage.elapsed(),
        ..RefreshCost::default()
    };
    s.refresh.book(
        &stats,
        started,
        applied,
        lag.try_into().unwrap_or(u32::MAX),
        moved,
    );
    Ok(!stats.skipped)
}

/// Applies a ground refresh's plan to `s`'s wind and moves the snow's mesh and parcels with
/// it (blocking); `None` for a fixed wind. Marks the ground raised as soon as the wind moved,
/// before the snow follows. Returns the wind's stats and what moving the snow did.
fn apply_plan(
    s: &mut SceneState,
    context: &Context,
    planned: Planned,
) -> Result<Option<(RefreshStats, SnowMoved)>> {
    let Planned {
        mut plan,
        snow_coords,
    } = planned;
    let Some(stats) = s.wind.apply_ground(&mut plan)? else {
        return Ok(None);
    };
    let mut moved = SnowMoved::default();
    if !stats.skipped {
        s.refresh.raised = true;
        let start = Instant::now();
        if let Some(snow) = s.snow.as_mut() {
            // Its parcels are found again on its device, counted there (`refresh_books`).
            if let Some(shares) = s.shares.as_mut() {
                (moved.up, moved.lost) =
                    shares.regrade(plan.vertices(), &snow_coords, plan.raise())?;
            }
            snow.regrade_converted(context, plan.vertices(), snow_coords)?;
            s.mesh.vertices = plan.into_vertices();
        }
        moved.snow_ms = ms(start);
    }
    Ok(Some((stats, moved)))
}

/// What the drift did (`None` without drifting snow; blocking); `elsewhere` is what the
/// parcels of other devices carry in suspension.
fn drift_report(snow: &Snow, elsewhere: u128) -> Result<Option<DriftReport>> {
    let Some(drift) = snow.drifting() else {
        return Ok(None);
    };
    let unit = snow.cover().unit_volume();
    let counts = drift.counts()?;
    let max = |v: Vec<f32>| v.into_iter().fold(0.0, f32::max);
    let carried: u128 = snow
        .particles()
        .suspended_units()?
        .iter()
        .map(|&u| u128::from(u))
        .sum::<u128>()
        + elsewhere;
    Ok(Some(DriftReport {
        eroded_m3: counts.eroded as f64 * unit,
        blown_out_m3: counts.blown as f64 * unit,
        suspended_m3: match snow.suspension() {
            Some(s) => s.lifted()? as f64 * unit,
            None => 0.0,
        },
        in_suspension_m3: carried as f64 * unit,
        max_friction_velocity: max(drift.friction_velocity()?),
        max_saltation_flux: max(drift.saltation_flux()?),
    }))
}

/// The ground refreshes that the wind `setup` asks of `wind` (simulated seconds between them;
/// 0: none) and why they cannot run, if they cannot (`snows`: whether snow is laid); where
/// they can, `wind` is made ready for them. Rank 0 and every other rank alike.
pub(super) fn prepare_refreshes(
    wind: &mut WindField,
    setup: &WindSetup,
    snows: bool,
) -> Result<(f64, Option<RefreshOff>)> {
    let every = match setup {
        WindSetup::Solved { wind, .. } => wind.ground_refresh,
        WindSetup::Profile { .. } => 0.0,
    };
    let off = if !snows {
        Some(RefreshOff::NoSnow)
    } else if !wind.is_solved() {
        Some(RefreshOff::FixedWind)
    } else if !wind.can_refresh_ground() {
        Some(RefreshOff::MeshDomain)
    } else {
        None
    };
    if every > 0.0 && off.is_none() {
        wind.prepare_ground_refresh()?;
    }
    Ok((every, off))
}

/// The parcels of a run of `total` split over `ranks` ranks in equal shares, (first id,
/// parcels) per rank, rank 0's first: what rank 0 and every other rank compute alike.
pub fn rank_shares(total: usize, ranks: usize) -> Result<Vec<(u32, usize)>> {
    if ranks == 0 || total < ranks {
        return Err(Error::InvalidParameter(format!(
            "{total} parcels over {ranks} ranks: each rank needs at least one (give more \
             --particles, or fewer ranks)"
        )));
    }
    super::shares::split(total, &vec![1.0; ranks])
}
