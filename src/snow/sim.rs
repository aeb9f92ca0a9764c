//! The snow simulation: particles, mesh, cover, sort and kernels, one step per frame.

use serde::Serialize;

use opencl3::event::Event;

use crate::cl::{
    self, BufferArg, Context, DeviceBuffer, Kernel, KernelCall, OutputBuffer, Program, Source,
    Timeline,
};
use crate::particle::Particle;
use crate::scene::{DomainMesh, SortKey, SortMode};
use crate::sort::{Order, PartialConfig, PartialSorter, RadixSorter, SortConfig};

use super::config::{PARCEL_UNITS, SnowConfig};
use super::cover::GroundCover;
use super::density::{DensityGrid, RelativeDensity};
use super::drift::Drift;
use super::mesh::{SnowGeometry, SnowMesh};
use super::particles::{ParticleState, Particles};
use super::refine::CoverMesh;
use super::suspension::{FrameCellsHost, SharedCells, Suspension};
use super::{Error, Result};

/// Stage name of the particle update.
pub const STEP_STAGE: &str = "snow.step";
/// Stage name of the sort (the Hilbert keys where sorting by them, the sort's own kernels are
/// timed under the sort library's stages); the permutation has [`PERMUTE_STAGE`].
pub const SORT_STAGE: &str = "snow.sort";

/// Stage of the sort's order applied to the parcel arrays (one `snow_permute` launch); named
/// as the sort library's own permutations are, so reports compare across builds.
pub const PERMUTE_STAGE: &str = "sort.permute";

/// Bits of a Hilbert sort key: 10 a coordinate (`snow_hilbert_keys` in `kernels/snow.cl`).
const HILBERT_KEY_BITS: u32 = 30;
/// Stage name of the cover's smoothing.
pub const COVER_STAGE: &str = "snow.cover";
/// Stage name of the drifting snow.
pub const DRIFT_STAGE: &str = "snow.drift";

/// The counters' copy in pinned host memory, and the read that fills it, while it is on its
/// way ([`Snow::start_counter_read`]).
struct CounterStaging {
    counters: cl::PinnedBuffer<u64>,
    first_bad: cl::PinnedBuffer<u32>,
    /// The reads of the last frame's counters and that frame's count, until checked.
    pending: Option<([Event; 2], u64)>,
}

/// What the particles did since the start, counted on the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Landings on the ground (each deposited one parcel).
    pub landed: u64,
    /// Respawns after rising through the top.
    pub top: u64,
    /// Wraps through a side to the opposite one.
    pub wrapped: u64,
    /// Respawns after leaving through a side whose opposite side is closed there.
    pub closed: u64,
    /// Respawns of particles the walks could not locate.
    pub lost: u64,
    /// Particle updates that gave a non-finite position or velocity.
    pub nonfinite: u64,
    /// The smallest id among them (`u32::MAX` when none).
    pub first_bad: u32,
    /// Respawns after leaving through a face of another reference.
    pub other: u64,
    /// Units the landings laid on the cover, summed apart from the cover itself (the
    /// ledger's check: the cover holds exactly this more than at the start).
    pub deposited: u64,
    /// Of `deposited`, the units the landing parcels carried in suspension.
    pub laid_suspended: u64,
    /// Units carried in suspension out of the domain (through the top, a closed side, lost).
    pub exited_suspended: u64,
}

impl Counters {
    fn from_raw(c: &[u64], first_bad: u32) -> Self {
        Self {
            landed: c[0],
            top: c[1],
            wrapped: c[2],
            closed: c[3],
            lost: c[4],
            nonfinite: c[5],
            other: c[6],
            deposited: c[7],
            laid_suspended: c[8],
            exited_suspended: c[9],
            first_bad,
        }
    }

    /// Adds `other`'s counts (another device's share of the parcels); the first bad id is the
    /// smaller.
    pub fn add(&mut self, other: &Counters) {
        self.landed += other.landed;
        self.top += other.top;
        self.wrapped += other.wrapped;
        self.closed += other.closed;
        self.lost += other.lost;
        self.nonfinite += other.nonfinite;
        self.other += other.other;
        self.deposited += other.deposited;
        self.laid_suspended += other.laid_suspended;
        self.exited_suspended += other.exited_suspended;
        self.first_bad = self.first_bad.min(other.first_bad);
    }

    /// Every respawn: after a landing, through the top, a closed side, a lost location or
    /// another boundary.
    pub fn respawned(&self) -> u64 {
        self.landed + self.top + self.closed + self.lost + self.other
    }
}

enum Sorter {
    Off,
    /// A radix sort on every frame that sorts (one in `snow.sort_every`).
    Full(Box<RadixSorter>),
    /// The partial sort's step on every frame that sorts, and a radix sort instead on the
    /// first frame and about every `snow.full_sort_every` frames.
    Partial {
        partial: Box<PartialSorter>,
        full: Box<RadixSorter>,
    },
}

/// Scratch arrays a permutation writes into before they swap with the particles'.
struct Scratch {
    f4: [DeviceBuffer<[f32; 4]>; 2],
    /// The tetrahedra (sorting by Hilbert cell only: by tetrahedron they are sorted in place;
    /// one unused entry then), the ids, the respawn counts.
    u: [DeviceBuffer<u32>; 3],
    /// For the snow in suspension (one unused entry without).
    long: DeviceBuffer<u64>,
}

/// The snow simulation on one device.
pub struct Snow {
    config: SnowConfig,
    mesh: SnowMesh,
    particles: Particles,
    cover: GroundCover,
    /// Drifting snow on the cover (`None`: the snow stays where it landed).
    drift: Option<Drift>,
    /// Snow lifted into the parcels (`None` without drift or with `ground.suspension` off).
    suspension: Option<Suspension>,
    /// The cells another device's snow lifts into (`ParcelShare::lifted_elsewhere`).
    shared_cells: Option<SharedCells>,
    /// One-entry stand-ins for the suspension's cell buffers when there is none.
    no_cells: (DeviceBuffer<u32>, DeviceBuffer<u64>),
    counters: DeviceBuffer<u64>,
    /// Parcels the regrades moved up onto a raised ground and found under no column, since
    /// the reset (added to on the device; read when asked: [`Snow::relocated`]).
    relocated: DeviceBuffer<u64>,
    first_bad: DeviceBuffer<u32>,
    staging: CounterStaging,
    /// Whether the step writes the parcels as drawn into its `render` buffer (off where
    /// nothing draws them: 16 bytes a parcel fewer to write each step).
    writes_render: bool,
    init: Kernel,
    update: Kernel,
    /// `snow_flutter_of`: the parcels' flutter and size, derived, for a state read.
    flutter_of: Kernel,
    hilbert: Kernel,
    /// `snow_permute`: a sort's order applied to every parcel array in one pass.
    permute: Kernel,
    cell_counts: Kernel,
    relocate: Kernel,
    density: DensityGrid,
    density_counts: DeviceBuffer<u32>,
    sorter: Sorter,
    /// The Hilbert keys of a sort by Hilbert cell (one unused entry when sorting by
    /// tetrahedron: the tetrahedra are then the keys, sorted in place).
    keys: DeviceBuffer<u32>,
    indices: DeviceBuffer<u32>,
    /// 0, 1, 2, …: what `indices` starts from in a partial step, whose blocks need not
    /// cover every slot.
    identity: DeviceBuffer<u32>,
    scratch: Option<Scratch>,
    /// Footprint radius without the flutter, m.
    footprint: f32,
    /// Which of the run's parcels these are (all of them but where the parcels are split
    /// across devices).
    share: ParcelShare,
    frame: u64,
    context: Context,
}

/// The parcels one device holds of a run whose parcels are split across devices: ids
/// `first..first + particles` of `total`. The ids, and the strata and random streams keyed by
/// them and by `total`, are the run's, so a parcel moves the same on any device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParcelShare {
    /// The first id.
    pub first: u32,
    /// The parcels of the whole run.
    pub total: u32,
    /// Whether another device's snow lifts the snow these parcels carry in suspension (the
    /// cells come from there each frame, [`Snow::enqueue_cells`]): a device with a share but
    /// not the cover that drifts.
    pub lifted_elsewhere: bool,
}

/// Counters on the device (`SNOW_C_*` in `kernels/snow.cl`).
const COUNTERS: usize = 10;

impl Snow {
    /// Builds the kernels, uploads the mesh and allocates the particles of `config` in
    /// `domain` on `context` (then [`reset`](Self::reset) spreads them).
    pub fn new(context: &Context, domain: &DomainMesh, config: SnowConfig) -> Result<Self> {
        let share = ParcelShare {
            first: 0,
            total: u32::try_from(config.particles).unwrap_or(u32::MAX),
            lifted_elsewhere: false,
        };
        Self::new_share(context, domain, config, share)
    }

    /// As [`new`](Self::new), for `config.particles` parcels that are `share` of a run's
    /// (`--snow-devices`: each device steps its own share, the covers add up).
    pub fn new_share(
        context: &Context,
        domain: &DomainMesh,
        config: SnowConfig,
        share: ParcelShare,
    ) -> Result<Self> {
        config.validate()?;
        let fits = u64::from(share.first) + config.particles as u64 <= u64::from(share.total);
        if !fits {
            return Err(Error::InvalidParameter(format!(
                "a share of {} parcels from id {} does not fit in a run of {}",
                config.particles, share.first, share.total
            )));
        }
        let info = context.info();
        if !info.has_extension("cl_khr_int64_base_atomics") {
            return Err(Error::Unsupported {
                device: info.name.clone(),
                what: "cl_khr_int64_base_atomics".into(),
                why: "the snow deposit adds 64-bit fixed-point volumes with atomics".into(),
            });
        }
        let geometry = SnowGeometry::new(domain)?;
        let cover_mesh = CoverMesh::new(&domain.ground, config.cover_refinement)?;
        // The air the parcels share: all of it, or what lies below the source.
        let air = geometry.source_volume(config.source_height);
        // A parcel stands for the run's snowfall over all its parcels, on whichever device.
        let mut whole = config.clone();
        whole.particles = share.total as usize;
        let real_parcel_volume = whole.real_parcel_volume(air);
        let footprint = whole.footprint_radius(air);
        let mut config = config;
        config.render_scale = whole.drawn_scale(air);
        let mesh = SnowMesh::new(context, geometry)?;
        let density = DensityGrid::new(
            &mesh.geometry,
            &cover_mesh,
            config.particles,
            config.source_height,
            air,
        );
        let cover = GroundCover::new(context, cover_mesh, real_parcel_volume)?;
        let drift = match config.drift {
            Some(settings) => Some(Drift::new(context, domain, &cover, settings)?),
            None => None,
        };
        let walk = Source::embedded("tet_walk.cl", include_str!("../../kernels/tet_walk.cl"))?;
        let deposit = Source::embedded(
            "snow_deposit.cl",
            include_str!("../../kernels/snow_deposit.cl"),
        )?;
        let snow = Source::embedded("snow.cl", include_str!("../../kernels/snow.cl"))?;
        let suspend = Source::embedded(
            "snow_suspend.cl",
            include_str!("../../kernels/snow_suspend.cl"),
        )?;
        let program = Program::build(context, &[walk, deposit, snow, suspend], "")?;
        let suspension = match (&drift, config.drift) {
            (Some(d), Some(settings)) if settings.suspension => {
                Some(Suspension::new(context, &program, &cover, d, settings)?)
            }
            _ => None,
        };
        let shared_cells = match share.lifted_elsewhere {
            true => Some(SharedCells::new(context, cover.mesh.coarse_vertices)?),
            false => None,
        };
        let n = config.particles;
        let counters = DeviceBuffer::zeroed(context, COUNTERS)?;
        let first_bad = DeviceBuffer::from_slice(context, &[u32::MAX])?;
        let staging = CounterStaging {
            counters: cl::PinnedBuffer::new(context, counters.len())?,
            first_bad: cl::PinnedBuffer::new(context, 1)?,
            pending: None,
        };
        let mut snow = Self {
            particles: Particles::new(context, n, suspension.is_some() || shared_cells.is_some())?,
            counters,
            relocated: DeviceBuffer::zeroed(context, 2)?,
            first_bad,
            staging,
            writes_render: true,
            init: program.kernel("snow_init")?,
            update: program.kernel("snow_step")?,
            flutter_of: program.kernel("snow_flutter_of")?,
            hilbert: program.kernel("snow_hilbert_keys")?,
            permute: program.kernel("snow_permute")?,
            cell_counts: program.kernel("snow_cell_counts")?,
            relocate: program.kernel("snow_relocate")?,
            density_counts: DeviceBuffer::zeroed(context, density.len())?,
            density,
            sorter: Sorter::Off,
            keys: DeviceBuffer::zeroed(
                context,
                if config.sort.key == SortKey::Hilbert {
                    n
                } else {
                    1
                },
            )?,
            indices: DeviceBuffer::zeroed(context, n)?,
            identity: DeviceBuffer::from_slice(context, &(0..n as u32).collect::<Vec<_>>())?,
            scratch: None,
            mesh,
            cover,
            drift,
            suspension,
            shared_cells,
            no_cells: (
                DeviceBuffer::zeroed(context, 1)?,
                DeviceBuffer::zeroed(context, 1)?,
            ),
            footprint,
            share,
            frame: 0,
            config,
            context: context.clone(),
        };
        snow.set_sort(snow.config.sort.mode)?;
        Ok(snow)
    }

    /// The settings.
    pub fn config(&self) -> &SnowConfig {
        &self.config
    }

    /// The mesh tables.
    pub fn mesh(&self) -> &SnowMesh {
        &self.mesh
    }

    /// Every parcel's state, read back (blocking) in array order, with its flutter and size
    /// derived on the device as the step derives them (they are not stored).
    pub fn particle_states(&self) -> Result<Vec<ParticleState>> {
        let n = self.particles.len();
        let flutter = if n == 0 {
            Vec::new()
        } else {
            let out = DeviceBuffer::<[f32; 4]>::uninit(&self.context, n)?;
            let (range, size_law) = flutter_law(&self.config);
            let mut call = self.flutter_of.call();
            // SAFETY: `ids` and `out` hold n values; the kernel guards i < n.
            unsafe {
                call.buffer(&self.particles.ids)?
                    .buffer(&out)?
                    .arg(&(n as u32))?
                    .arg(&self.config.seed)?
                    .arg(&range)?
                    .arg(&size_law)?;
            }
            let mut timeline = Timeline::new(false);
            call.enqueue_into(
                &self.context,
                self.flutter_of.work_size(&self.context, n)?,
                &mut timeline,
            )?;
            timeline.wait()?;
            out.read()?
        };
        self.particles.read_with(flutter)
    }

    /// Whether each step writes the parcels as drawn into the `render` buffer it is given
    /// (on by default). Off where nothing reads that buffer (`--render off`, another
    /// device's share that is not drawn): the buffer then keeps what the reset wrote.
    pub fn set_writes_render(&mut self, on: bool) {
        self.writes_render = on;
    }

    /// The particle arrays.
    pub fn particles(&self) -> &Particles {
        &self.particles
    }

    /// The particle arrays, to overwrite a quantity in tests.
    pub fn particles_mut(&mut self) -> &mut Particles {
        &mut self.particles
    }

    /// The snow cover.
    pub fn cover(&self) -> &GroundCover {
        &self.cover
    }

    /// The snow cover, to set or clear it.
    pub fn cover_mut(&mut self) -> &mut GroundCover {
        &mut self.cover
    }

    /// Volume one landing lays, m³ (the acceleration included).
    pub fn parcel_volume(&self) -> f64 {
        self.config.acceleration * self.cover.unit_volume() * PARCEL_UNITS as f64
    }

    /// Radius of a landing's footprint without the flake's flutter, m.
    pub fn footprint_radius(&self) -> f32 {
        self.footprint
    }

    /// Steps taken since the last reset.
    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// Lays `acceleration` times the real snowfall from the next landing on (a landing lays
    /// `round(acceleration · PARCEL_UNITS)` units; the unit does not change).
    pub fn set_acceleration(&mut self, acceleration: f64) -> Result<()> {
        let mut config = self.config.clone();
        config.acceleration = acceleration;
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// The radix sort of the parcels' keys, told how many bits they have: a tetrahedron's
    /// index (6 passes of 4 bits below 2^24 tetrahedra) or a cell of the Hilbert curve's
    /// 1024³ (30 bits, 8 passes).
    fn radix_sorter(&self) -> Result<RadixSorter> {
        let mut sorter = RadixSorter::new(&self.context)?;
        sorter.set_key_bits(match self.config.sort.key {
            SortKey::Hilbert => HILBERT_KEY_BITS,
            SortKey::Tetrahedron => {
                let largest = self.mesh.tet_count().saturating_sub(1) as u32;
                (u32::BITS - largest.leading_zeros()).max(1)
            }
        });
        Ok(sorter)
    }

    /// Switches the sort mode (the `O` key, `--sort`); the next step sorts accordingly.
    pub fn set_sort(&mut self, mode: SortMode) -> Result<()> {
        let context = &self.context.clone();
        let sort = SortConfig {
            block_len: self.config.sort.block_len,
            ..SortConfig::default()
        };
        self.sorter = match mode {
            SortMode::Off => Sorter::Off,
            SortMode::Full => Sorter::Full(Box::new(self.radix_sorter()?)),
            SortMode::Partial => Sorter::Partial {
                partial: Box::new(PartialSorter::new(
                    context,
                    &PartialConfig {
                        sort: sort.clone(),
                        ..PartialConfig::default()
                    },
                )?),
                full: Box::new(self.radix_sorter()?),
            },
        };
        if mode != SortMode::Off && self.scratch.is_none() {
            let n = self.particles.len();
            self.scratch = Some(Scratch {
                f4: [
                    DeviceBuffer::uninit(context, n)?,
                    DeviceBuffer::uninit(context, n)?,
                ],
                u: [
                    DeviceBuffer::uninit(
                        context,
                        if self.config.sort.key == SortKey::Hilbert {
                            n
                        } else {
                            1
                        },
                    )?,
                    DeviceBuffer::uninit(context, n)?,
                    DeviceBuffer::uninit(context, n)?,
                ],
                long: DeviceBuffer::uninit(context, self.particles.suspended.len())?,
            });
        }
        self.config.sort.mode = mode;
        Ok(())
    }

    /// The sort mode in use.
    pub fn sort_mode(&self) -> SortMode {
        self.config.sort.mode
    }

    /// Spreads the particles through the air again, clears the cover and the counters, and
    /// writes the render buffer (`render` holds at least one [`Particle`] per particle).
    pub fn reset(
        &mut self,
        context: &Context,
        render: &impl BufferArg<Particle>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let n = self.particles.len();
        check_render(render, n)?;
        self.cover.clear()?;
        if let Some(drift) = self.drift.as_mut() {
            drift.reset()?;
        }
        if let Some(suspension) = self.suspension.as_mut() {
            suspension.reset()?;
        }
        if let Some(cells) = self.shared_cells.as_mut() {
            cells.forget()?;
        }
        self.particles.suspended.fill(0)?;
        self.counters.fill(0)?;
        self.relocated.fill(0)?;
        self.first_bad.fill(u32::MAX)?;
        self.frame = 0;
        if let Sorter::Partial { partial, .. } = &mut self.sorter {
            partial.reset();
        }
        if n == 0 {
            return Ok(());
        }
        let c = &self.config;
        let p = &mut self.particles;
        let m = &self.mesh;
        let (flutter, size_law) = flutter_law(c);
        let mut call = self.init.call();
        // SAFETY: the particle arrays and `render` hold n values, the kernel guards i < n; the
        // search stays within tet_count entries of tet_cdf, the tetrahedra index coords.
        unsafe {
            bind_particles(&mut call, p, render, c.seed, self.share)?
                .buffer(&m.tets)?
                .buffer(&m.coords)?
                .buffer(&m.tet_cdf)?
                .arg(&(m.tet_count() as i32))?
                .arg(&flutter)?
                .arg(&size_law)?
                .arg(&c.gravity)?
                .arg(&c.render_scale)?
                .buffer(&m.neighbours)?
                .buffer(&m.ground_cdf)?
                .arg(&(m.geometry.ground_tets.len() as i32))?
                .buffer(&m.ground_tets)?
                .buffer(&self.cover.links.tris)?
                .buffer(&self.cover.links.points)?
                .arg(&source_args(c, &m.geometry))?
                .arg(&(c.global_hops.min(i32::MAX as u32) as i32))?;
        }
        call.enqueue_into(context, self.init.work_size(context, n)?, timeline)?;
        Ok(())
    }

    /// Moves every particle by `dt` seconds in the wind `wind` (a velocity per vertex of the
    /// domain mesh, xyz m/s): drag, gravity, flutter, location, landing (each landing adds
    /// its parcel to the cover), wrap, respawn; then writes the render buffer, unless nothing
    /// draws the parcels ([`set_writes_render`](Self::set_writes_render)). Only enqueues,
    /// under the stage [`STEP_STAGE`]; see [`counters`](Self::counters) or
    /// [`start_counter_read`](Self::start_counter_read) for what happened and for non-finite particles.
    /// Sort first ([`sort`](Self::sort)) and smooth after ([`smooth_cover`](Self::smooth_cover)):
    /// `sim::Simulation::step` runs the three in that order.
    pub fn advance(
        &mut self,
        context: &Context,
        wind: &impl BufferArg<[f32; 4]>,
        dt: f32,
        render: &impl BufferArg<Particle>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        self.lift(context, wind, dt, timeline)?;
        self.advance_parcels(context, wind, dt, render, timeline)
    }

    /// The first half of [`advance`](Self::advance): the snow's age at the surface, the
    /// friction velocity and the suspension's lifting, from the cover as it stands before
    /// any landing of the frame (nothing without drift). Only enqueues.
    pub fn lift(
        &mut self,
        context: &Context,
        wind: &impl BufferArg<[f32; 4]>,
        dt: f32,
        timeline: &mut Timeline,
    ) -> Result<()> {
        check_wind(&self.mesh, wind)?;
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(Error::InvalidParameter(format!(
                "time step {dt} must be finite and not negative"
            )));
        }
        if let Some(drift) = self.drift.as_mut() {
            // The snow's age at the surface (with ageing), before anything lifts snow.
            timeline.stage(DRIFT_STAGE);
            drift.age(context, &self.cover, dt, timeline)?;
        }
        if let (Some(drift), Some(suspension)) = (self.drift.as_mut(), self.suspension.as_mut()) {
            // The wind lifts snow from the cover as it stands before any landing of the frame.
            timeline.stage(DRIFT_STAGE);
            drift.friction(context, &self.cover, wind, timeline)?;
            suspension.erode(
                context,
                &mut self.cover,
                drift.friction_buffer(),
                drift.threshold_buffer(),
                self.config.acceleration * f64::from(dt),
                timeline,
            )?;
        }
        Ok(())
    }

    /// The second half of [`advance`](Self::advance), after [`lift`](Self::lift): the
    /// parcels' step (drag, their shares of the lifted snow, landing, deposit, wraps,
    /// respawns). Only enqueues.
    pub fn advance_parcels(
        &mut self,
        context: &Context,
        wind: &impl BufferArg<[f32; 4]>,
        dt: f32,
        render: &impl BufferArg<Particle>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let n = self.particles.len();
        check_render(render, n)?;
        check_wind(&self.mesh, wind)?;
        if n > 0 {
            timeline.stage(STEP_STAGE);
            self.update_particles(context, wind, dt, render, timeline)?;
        }
        if let Some(suspension) = self.suspension.as_mut() {
            suspension.finish_frame();
        }
        self.frame += 1;
        Ok(())
    }

    /// Moves the mesh's vertices to `vertices` (a ground refresh raised the ground under the
    /// snow; the topology is the same), with what is measured from the ground (the source's
    /// ground points, the drift's first levels, the suspension's entry heights; the Hilbert
    /// keys' box stays the bare mesh's, which only orders the arrays), and finds every
    /// parcel's tetrahedron again; a parcel the
    /// raised ground buried is moved straight up onto the new surface, just above it (it lands
    /// in the next step if it falls). Nothing is laid or removed: the ledger is unchanged. The
    /// suspension forgets its cells' counts (the parcels moved): the next frame lifts nothing.
    /// `coords` are `vertices` as the kernels read them ([`super::device_coordinates`]: a
    /// ground refresh planned on another thread brings them). Blocking; returns the parcels
    /// moved up and those not found under their column (moved to its top).
    pub fn regrade(
        &mut self,
        context: &Context,
        vertices: &[[f64; 3]],
        coords: Vec<[f32; 4]>,
    ) -> Result<(u64, u64)> {
        let before = self.relocated()?;
        self.regrade_converted(context, vertices, coords)?;
        let after = self.relocated()?;
        Ok((after.0 - before.0, after.1 - before.1))
    }

    /// As [`regrade`](Self::regrade), without waiting for the parcels to be found again:
    /// their counts join [`relocated`](Self::relocated)'s on the device, and the next frame's
    /// launches queue behind the search.
    pub fn regrade_converted(
        &mut self,
        context: &Context,
        vertices: &[[f64; 3]],
        coords: Vec<[f32; 4]>,
    ) -> Result<()> {
        let g = &mut self.mesh.geometry;
        if vertices.len() != g.coords.len() || coords.len() != g.coords.len() {
            return Err(Error::InvalidParameter(format!(
                "a regrade of {} vertices ({} converted) for a mesh of {}",
                vertices.len(),
                coords.len(),
                g.coords.len()
            )));
        }
        g.coords = coords;
        self.mesh.coords.write(&g.coords)?;
        // What is measured from the ground: the source's ground points, the drift's first
        // levels, the heights the lifted snow enters the air at.
        let mut heights = vec![0.0; self.cover.mesh.coarse_vertices];
        for (v, &gi) in g.ground_index.iter().enumerate() {
            if let Some(h) = usize::try_from(gi).ok().and_then(|gi| heights.get_mut(gi)) {
                *h = vertices[v][2];
            }
        }
        self.cover.set_ground_heights(&heights)?;
        if let Some(drift) = self.drift.as_mut() {
            drift.regrade(vertices)?;
            if let Some(suspension) = self.suspension.as_mut() {
                suspension.regrade(context, &self.cover, drift)?;
            }
        }
        if let Some(suspension) = self.suspension.as_mut() {
            suspension.forget_cells()?;
        }
        if let Some(cells) = self.shared_cells.as_mut() {
            cells.forget()?;
        }
        let n = self.particles.len();
        if n == 0 {
            return Ok(());
        }
        let c = &self.config;
        let g = &self.mesh.geometry;
        let m = &self.mesh;
        let p = &mut self.particles;
        let below = (c.tolerance * 4.0).max(1e-3);
        let params = [
            c.tolerance,
            g.z_range[1],
            below,
            0.05f32.max(4.0 * c.tolerance),
        ];
        let refs2 = [
            g.refs.ground,
            g.refs.top,
            c.local_hops as i32,
            c.global_hops.min(i32::MAX as u32) as i32,
        ];
        let mut timeline = context.timeline();
        let mut call = self.relocate.call();
        // SAFETY: pos, tet, ids and respawns hold n values, the kernel guards i < n; the mesh
        // tables are consistent (built together, the coordinates just rewritten with the same
        // count); the column grid has dims.x · dims.y entries; relocated holds two.
        unsafe {
            call.buffer(&p.pos)?
                .buffer(&p.tet)?
                .buffer(&p.ids)?
                .buffer(&p.respawns)?
                .arg(&(n as u32))?
                .arg(&c.seed)?
                .buffer(&m.tets)?
                .buffer(&m.coords)?
                .buffer(&m.neighbours)?
                .buffer(&m.face_refs)?
                .buffer(&m.columns)?
                .arg(&g.column_dims)?
                .arg(&g.column_map)?
                .arg(&params)?
                .arg(&refs2)?
                .buffer(&self.relocated)?;
        }
        call.enqueue_into(context, self.relocate.work_size(context, n)?, &mut timeline)?;
        Ok(())
    }

    /// Parcels the regrades since the reset moved up onto the raised ground, and those found
    /// under no column (moved to its top), as the device has counted them (blocking: it waits
    /// for the regrades queued).
    pub fn relocated(&self) -> Result<(u64, u64)> {
        let counts = self.relocated.read()?;
        Ok((counts[0], counts[1]))
    }

    /// Starts reading this frame's cells (counts, smallest ids, pools) into `into`, for the
    /// devices with a share of the parcels: after [`lift`](Self::lift), before
    /// [`advance_parcels`](Self::advance_parcels) (which reads them as they are), without
    /// waiting; returns the reads' events, none without suspension.
    ///
    /// # Safety
    ///
    /// `into` must stay alive and untouched by the host until the events complete.
    pub unsafe fn enqueue_read_cells(
        &self,
        into: &mut FrameCellsHost,
    ) -> Result<Vec<opencl3::event::Event>> {
        match &self.suspension {
            // SAFETY: forwarded to the caller.
            Some(s) => Ok(unsafe { s.enqueue_read_frame(into) }?.into()),
            None => Ok(Vec::new()),
        }
    }

    /// Starts writing this frame's cells, read on the lifting device, into this share's
    /// (`ParcelShare::lifted_elsewhere`), in order before its step; nothing for a share
    /// without suspension.
    ///
    /// # Safety
    ///
    /// `cells` must stay alive and unchanged until this queue has run the writes.
    pub unsafe fn enqueue_cells(&mut self, cells: &FrameCellsHost) -> Result<()> {
        match self.shared_cells.as_mut() {
            // SAFETY: forwarded to the caller.
            Some(shared) => unsafe { shared.enqueue_frame(cells) },
            None => Ok(()),
        }
    }

    /// Starts reading the next frame's counts and smallest ids this share's step made into
    /// `into`; `None` for a share without suspension.
    ///
    /// # Safety
    ///
    /// `into` must stay alive and untouched by the host until the events complete.
    pub unsafe fn enqueue_read_next_cells(
        &self,
        into: &mut FrameCellsHost,
    ) -> Result<Option<[opencl3::event::Event; 2]>> {
        match &self.shared_cells {
            // SAFETY: forwarded to the caller.
            Some(shared) => Ok(Some(unsafe { shared.enqueue_read_next(into) }?)),
            None => Ok(None),
        }
    }

    /// Adds another share's next counts and smallest ids (`other`) to this snow's, after
    /// its step, without waiting (the lifting device); returns the copies' events.
    ///
    /// # Safety
    ///
    /// `other` must stay alive and unchanged until the events complete.
    pub unsafe fn enqueue_merge_cells(
        &mut self,
        context: &Context,
        other: &FrameCellsHost,
        timeline: &mut Timeline,
    ) -> Result<Option<[opencl3::event::Event; 2]>> {
        match self.suspension.as_mut() {
            // SAFETY: forwarded to the caller.
            Some(s) => Ok(Some(unsafe { s.enqueue_merge(context, other, timeline) }?)),
            None => Ok(None),
        }
    }

    /// The snow lifted into suspension, when on.
    pub fn suspension(&self) -> Option<&Suspension> {
        self.suspension.as_ref()
    }

    /// Lets the wind `wind` (a velocity per vertex of the domain mesh) drift the laid snow
    /// over `dt` seconds (stage [`DRIFT_STAGE`]; nothing without `ground.drift`); only
    /// enqueues. After [`advance`](Self::advance), before [`smooth_cover`](Self::smooth_cover).
    pub fn drift(
        &mut self,
        context: &Context,
        wind: &impl BufferArg<[f32; 4]>,
        dt: f32,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let Some(drift) = self.drift.as_mut() else {
            return Ok(());
        };
        check_wind(&self.mesh, wind)?;
        timeline.stage(DRIFT_STAGE);
        drift.step(
            context,
            &mut self.cover,
            wind,
            dt,
            self.config.acceleration,
            timeline,
        )
    }

    /// Enqueues writing the friction velocity (m/s) on each wind-mesh ground vertex, four per
    /// float4, into `target`; `false` (nothing written) without drifting snow.
    pub fn write_ground_friction(
        &self,
        context: &Context,
        target: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> Result<bool> {
        let Some(drift) = &self.drift else {
            return Ok(false);
        };
        timeline.stage(DRIFT_STAGE);
        let coarse = self.cover.mesh.coarse_vertices;
        drift.write_ground_friction(context, target, coarse, timeline)?;
        Ok(true)
    }

    /// The drifting snow, when on.
    pub fn drifting(&self) -> Option<&Drift> {
        self.drift.as_ref()
    }

    /// Lets the cover slide where it is steeper than the repose angle (stage
    /// [`COVER_STAGE`]); only enqueues.
    pub fn smooth_cover(&mut self, context: &Context, timeline: &mut Timeline) -> Result<()> {
        timeline.stage(COVER_STAGE);
        let (angle, rate) = (self.config.repose_angle, self.config.smoothing_rate);
        self.cover.smooth(context, angle, rate, timeline)?;
        Ok(())
    }

    /// Starts copying the counters into pinned host memory without waiting (after the
    /// frame's kernels, on the same queue); [`check_counter_read`](Self::check_counter_read)
    /// checks them a frame later, when they have long arrived, so that no frame waits for
    /// them.
    pub fn start_counter_read(&mut self) -> Result<()> {
        // A read still pending is checked first: its memory is about to be written again.
        self.check_counter_read()?;
        let st = &mut self.staging;
        // SAFETY: the pinned buffers are not touched until both events complete
        // (`check_counter_read` waits for them first), and they live as long as `self`.
        let events = unsafe {
            [
                st.counters.enqueue_read_from(&self.counters)?,
                st.first_bad.enqueue_read_from(&self.first_bad)?,
            ]
        };
        st.pending = Some((events, self.frame));
        Ok(())
    }

    /// Waits for the counters of [`start_counter_read`](Self::start_counter_read) (which have
    /// arrived when a frame has passed) and fails on a non-finite particle, naming the stage,
    /// the frame and the particle; `None` when no read is on its way.
    pub fn check_counter_read(&mut self) -> Result<Option<Counters>> {
        let st = &mut self.staging;
        let Some((events, frame)) = st.pending.take() else {
            return Ok(None);
        };
        cl::wait_for(&events)?;
        let first_bad = st.first_bad.as_slice().first().copied().unwrap_or(u32::MAX);
        let c = Counters::from_raw(st.counters.as_slice(), first_bad);
        check_counters(&c, frame)?;
        Ok(Some(c))
    }

    fn update_particles(
        &mut self,
        context: &Context,
        wind: &impl BufferArg<[f32; 4]>,
        dt: f32,
        render: &impl BufferArg<Particle>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let n = self.particles.len();
        let c = &self.config;
        let m = &self.mesh;
        let g = &m.geometry;
        let p = &mut self.particles;
        // Respawned particles start this far below the top face.
        let below = (c.tolerance * 4.0).max(1e-3);
        let params = [dt, c.gravity, c.tolerance, below];
        let r = g.refs;
        let refs = [r.x_min, r.x_max, r.y_min, r.y_max];
        let refs2 = [
            r.ground,
            r.top,
            c.local_hops as i32,
            c.global_hops.min(i32::MAX as u32) as i32,
        ];
        let links = &self.cover.links;
        let landing_units = c.landing_units();
        let (none_u, none_l) = (&self.no_cells.0, &self.no_cells.1);
        let cells = self
            .suspension
            .as_ref()
            .map(Suspension::frame)
            .or_else(|| self.shared_cells.as_ref().map(SharedCells::frame));
        let (count, first, pool, next_count, next_first) = match &cells {
            Some(f) => (f.count, f.first, f.pool, f.next_count, f.next_first),
            None => (none_u, none_u, none_l, none_u, none_u),
        };
        let suspend = u32::from(cells.is_some());
        let (flutter, size_law) = flutter_law(c);
        let mut call = self.update.call();
        // SAFETY: the particle arrays and `render` hold n values (checked), the kernel guards
        // i < n; the mesh tables are consistent (built together), tetrahedra index `coords`
        // and `wind` (at least one value per vertex, checked); the ground index maps into the
        // coarse ground's vertices, whose triangle tables the cover built, with a lattice of
        // fine ids into its volumes; the column grid has dims.x · dims.y entries; with
        // `suspend`, `suspended` holds n values and the cell buffers one per coarse ground
        // vertex (the cells a tetrahedron's ground index names), else none is read.
        unsafe {
            bind_particles(&mut call, p, render, c.seed, self.share)?
                .buffer(&m.tets)?
                .buffer(&m.coords)?
                .buffer(&m.neighbours)?
                .buffer(&m.face_refs)?
                .buffer(&m.ground_index)?
                .buffer(&m.top_tris)?
                .buffer(&m.top_cdf)?
                .arg(&(g.top_tris.len() as i32))?
                .buffer(&m.columns)?
                .arg(&g.column_dims)?
                .arg(&g.column_map)?
                .buffer(wind)?
                .buffer(&self.cover.volume)?
                .buffer(&self.counters)?
                .buffer(&self.first_bad)?
                .arg(&params)?
                .arg(&g.bounds)?
                .arg(&refs)?
                .arg(&refs2)?
                .arg(&landing_units)?
                .arg(&c.render_scale)?
                .buffer(&links.tris)?
                .buffer(&links.adjacent)?
                .buffer(&links.xy)?
                .buffer(&links.around_offsets)?
                .buffer(&links.around)?
                .buffer(&links.lattice)?
                .arg(&links.refinement)?
                .arg(&self.footprint)?
                .buffer(&m.ground_cdf)?
                .arg(&(g.ground_tets.len() as i32))?
                .buffer(&m.ground_tets)?
                .buffer(&links.points)?
                .arg(&source_args(c, g))?
                .buffer(&p.suspended)?
                .buffer(count)?
                .buffer(first)?
                .buffer(pool)?
                .buffer(next_count)?
                .buffer(next_first)?
                .buffer(&m.bottom)?
                .arg(&suspend)?
                .arg(&flutter)?
                .arg(&size_law)?
                .arg(&u32::from(self.writes_render))?;
        }
        call.enqueue_into(context, self.update.work_size(context, n)?, timeline)?;
        Ok(())
    }

    /// Sorts the particles by tetrahedron (or Hilbert cell) as the mode says and applies the
    /// order to the other arrays in one launch (stage [`PERMUTE_STAGE`]; by tetrahedron the
    /// tetrahedra are the keys, sorted in place); only enqueues. The result of a frame does not
    /// depend on it.
    pub fn sort(&mut self, timeline: &mut Timeline) -> Result<()> {
        if self.particles.is_empty() {
            return Ok(());
        }
        timeline.stage(SORT_STAGE);
        let frame = self.frame;
        let every = u64::from(self.config.sort.full_every);
        let p = &mut self.particles;
        let Some(scratch) = self.scratch.as_mut() else {
            return Ok(());
        };
        if matches!(self.sorter, Sorter::Off)
            || !frame.is_multiple_of(u64::from(self.config.sort.every.max(1)))
        {
            return Ok(());
        }
        let hilbert = (self.config.sort.key == SortKey::Hilbert).then(|| {
            let g = &self.mesh.geometry;
            let lo = [g.bounds[0], g.bounds[1], g.z_range[0], 0.0];
            let size = [
                g.bounds[2] - g.bounds[0],
                g.bounds[3] - g.bounds[1],
                g.z_range[1] - g.z_range[0],
            ];
            let scale = size.map(|s| if s > 0.0 { 1024.0 / s } else { 0.0 });
            (&self.hilbert, lo, [scale[0], scale[1], scale[2], 0.0])
        });
        let context = &self.context;
        // Sorted by tetrahedron, the tetrahedra are the keys, sorted in place: what the sort
        // leaves in them is what permuting them would give. Hilbert keys are computed into
        // `keys` from the positions, and the tetrahedra are permuted with the rest.
        let keys = match &hilbert {
            None => &mut p.tet,
            Some((kernel, lo, scale)) => {
                let n = p.len();
                let mut call = kernel.call();
                // SAFETY: pos and keys hold n values; the kernel guards i < n.
                unsafe {
                    call.buffer(&p.pos)?
                        .buffer(&self.keys)?
                        .arg(&(n as u32))?
                        .arg(lo)?
                        .arg(scale)?;
                }
                call.enqueue_into(context, kernel.work_size(context, n)?, timeline)?;
                &mut self.keys
            }
        };
        match &mut self.sorter {
            Sorter::Off => return Ok(()),
            Sorter::Full(full) => {
                timeline.append(full.sort_with_indices(
                    keys,
                    &mut self.indices,
                    Order::Ascending,
                )?);
            }
            Sorter::Partial { partial, full } => {
                // The first sorting frame at or after each multiple of `every` (frames sort
                // one in `sort_every`).
                let stride = u64::from(self.config.sort.every.max(1));
                if frame == 0
                    || (every > 0 && frame / every != frame.saturating_sub(stride) / every)
                {
                    timeline.append(full.sort_with_indices(
                        keys,
                        &mut self.indices,
                        Order::Ascending,
                    )?);
                    partial.reset();
                } else {
                    // Slots no block of this frame covers keep their place.
                    self.indices.copy_from(&self.identity)?;
                    let step =
                        partial.step_with_indices(keys, &mut self.indices, Order::Ascending)?;
                    timeline.append(step.events);
                }
            }
        }
        let n = p.len();
        let with_tet = hilbert.is_some();
        let with_suspended = p.carry_suspension();
        let mut call = self.permute.call();
        // SAFETY: the order and every parcel array hold n entries, as do the scratch arrays,
        // but for one entry each where the kernel does not touch them (the tetrahedra's
        // scratch without `with_tet`, the suspension's without `with_suspended`); the kernel
        // guards i < n and reads only below n.
        unsafe {
            call.buffer(&self.indices)?
                .arg(&(n as u32))?
                .buffer(&p.pos)?
                .buffer(&p.vel)?
                .buffer(&p.ids)?
                .buffer(&p.respawns)?
                .buffer(&p.tet)?
                .buffer(&p.suspended)?
                .buffer(&scratch.f4[0])?
                .buffer(&scratch.f4[1])?
                .buffer(&scratch.u[1])?
                .buffer(&scratch.u[2])?
                .buffer(&scratch.u[0])?
                .buffer(&scratch.long)?
                .arg(&u32::from(with_tet))?
                .arg(&u32::from(with_suspended))?;
        }
        timeline.stage(PERMUTE_STAGE);
        call.enqueue_into(context, self.permute.work_size(context, n)?, timeline)?;
        std::mem::swap(&mut p.pos, &mut scratch.f4[0]);
        std::mem::swap(&mut p.vel, &mut scratch.f4[1]);
        std::mem::swap(&mut p.ids, &mut scratch.u[1]);
        std::mem::swap(&mut p.respawns, &mut scratch.u[2]);
        if with_tet {
            std::mem::swap(&mut p.tet, &mut scratch.u[0]);
        }
        if with_suspended {
            std::mem::swap(&mut p.suspended, &mut scratch.long);
        }
        Ok(())
    }

    /// Reads the counters (blocking) and fails on a non-finite particle, naming the stage,
    /// the frame and the particle.
    pub fn counters(&self) -> Result<Counters> {
        let first_bad = self.first_bad.read()?.first().copied().unwrap_or(u32::MAX);
        let c = Counters::from_raw(&self.counters.read()?, first_bad);
        check_counters(&c, self.frame)?;
        Ok(c)
    }

    /// The falling snow's density relative to the scene's uniform snowfall, from where the
    /// parcels are now ([`RelativeDensity`], `snow::density`; blocking: counts the parcels per
    /// cell on the device and reads the counts).
    pub fn flake_density(&mut self) -> Result<RelativeDensity> {
        let n = self.particles.len();
        let g = &self.density;
        self.density_counts.fill(0)?;
        if n > 0 {
            let scale: [f32; 4] = std::array::from_fn(|k| {
                if k < 3 && g.hi[k] > g.lo[k] {
                    g.dims[k] as f32 / (g.hi[k] - g.lo[k])
                } else {
                    0.0
                }
            });
            let lo = [g.lo[0], g.lo[1], g.lo[2], 0.0];
            let dims = [g.dims[0] as i32, g.dims[1] as i32, g.dims[2] as i32, 0];
            let context = &self.context;
            let mut timeline = context.timeline();
            let mut call = self.cell_counts.call();
            // SAFETY: pos holds n values, counts dims.x · dims.y · dims.z; the kernel guards
            // i < n and the cell's bounds.
            unsafe {
                call.buffer(&self.particles.pos)?
                    .buffer(&self.density_counts)?
                    .arg(&(n as u32))?
                    .arg(&lo)?
                    .arg(&scale)?
                    .arg(&dims)?;
            }
            call.enqueue_into(
                context,
                self.cell_counts.work_size(context, n)?,
                &mut timeline,
            )?;
            timeline.wait()?;
        }
        Ok(self.density.relative(&self.density_counts.read()?))
    }

    /// The snow on the ground in fixed-point units (blocking).
    pub fn deposited_units(&self) -> Result<u128> {
        Ok(self.cover.volumes()?.iter().map(|&v| u128::from(v)).sum())
    }

    /// The snow's ledger in fixed-point units, from the counters and the cover (blocking).
    pub fn ledger(&self) -> Result<Ledger> {
        self.ledger_with(&[], 0, 0)
    }

    /// The books of a run whose parcels are split across devices, kept by this snow's
    /// device, on whose cover the others' landings are added and which lifts the snow in
    /// suspension: `others` are the other devices' counters, `other_particles` their parcels,
    /// `other_suspended` the units those carry in suspension.
    pub fn ledger_with(
        &self,
        others: &[Counters],
        other_particles: usize,
        other_suspended: u128,
    ) -> Result<Ledger> {
        let mut c = self.counters()?;
        for o in others {
            c.add(o);
        }
        let mut ledger = Ledger::new(
            &c,
            self.deposited_units()?,
            self.particles.len() + other_particles,
        );
        ledger.suspended = self
            .particles
            .suspended_units()?
            .iter()
            .map(|&u| u128::from(u))
            .sum();
        ledger.suspended += other_suspended;
        ledger.carried += ledger.suspended;
        if let Some(suspension) = &self.suspension {
            ledger.entrained = suspension.lifted()?;
        }
        if let Some(drift) = &self.drift {
            let counts = drift.counts()?;
            ledger.blown = u128::from(counts.blown);
            ledger.eroded = u128::from(counts.eroded);
        }
        Ok(ledger)
    }

    /// Checks what no frame may break (blocking reads): every particle id present exactly once
    /// (none lost or doubled by sorting, permuting or respawning), and the ledger balanced:
    /// the snow on the ground plus what the parcels carry equals the start's plus what came
    /// in less what left ([`Ledger`]; smoothing and footprints move snow, never lose or make
    /// it).
    pub fn check_invariants(&self) -> Result<()> {
        self.check_ids()?;
        self.ledger()?.check()
    }

    /// Checks that every id of this snow's share is present exactly once (blocking).
    pub fn check_ids(&self) -> Result<()> {
        let ids = self.particles.ids.read()?;
        let mut seen = vec![false; ids.len()];
        for (slot, &id) in ids.iter().enumerate() {
            match seen.get_mut(id.wrapping_sub(self.share.first) as usize) {
                Some(s) if !*s => *s = true,
                Some(_) => {
                    return Err(Error::Invariant(format!(
                        "stage snow: particle id {id} appears twice (again in slot {slot})"
                    )));
                }
                None => {
                    return Err(Error::Invariant(format!(
                        "stage snow: slot {slot} holds id {id}, outside ids {}..{}",
                        self.share.first,
                        u64::from(self.share.first) + ids.len() as u64
                    )));
                }
            }
        }
        Ok(())
    }
}

impl Ledger {
    /// Checks the books: the snow in suspension and the whole ledger balance, else an error
    /// that shows the terms.
    pub fn check(&self) -> Result<()> {
        let ledger = self;
        if !ledger.suspension_balances() {
            return Err(Error::Invariant(format!(
                "stage snow.step: the snow in suspension does not balance: the parcels carry {} \
                 units ≠ {} lifted − {} laid − {} taken out of the domain",
                ledger.suspended, ledger.entrained, ledger.laid_suspended, ledger.exited_suspended
            )));
        }
        if !ledger.balances() {
            return Err(Error::Invariant(format!(
                "stage snow.cover: the ledger does not balance: {} units on the ground + {} \
                 carried ≠ {} at the start + {} injected − {} removed − {} blown out ({} \
                 landings laid {} units)",
                ledger.ground,
                ledger.carried,
                ledger.start,
                ledger.injected,
                ledger.removed,
                ledger.blown,
                ledger.landings,
                ledger.laid
            )));
        }
        Ok(())
    }
}

impl Snow {
    /// Deposited volume in m³ and the largest depth in m (blocking).
    pub fn cover_summary(&self) -> Result<(f64, f32)> {
        let volumes = self.cover.volumes()?;
        let units: u128 = volumes.iter().map(|&v| u128::from(v)).sum();
        let depth = self
            .cover
            .depths_of(&volumes)
            .into_iter()
            .fold(0.0f32, f32::max);
        Ok((units as f64 * self.cover.unit_volume(), depth))
    }
}

/// The snow's books in fixed-point units:
/// `ground + carried = start + injected − removed − blown`.
///
/// Every parcel carries [`PARCEL_UNITS`] in real time. A landing moves its units to the
/// ground and lays `round(a · PARCEL_UNITS)` (the acceleration's difference is injected, as a
/// morphological factor does); a respawn injects a fresh parcel; a parcel leaving through the
/// top, a closed side or lost removes its units. `laid` is summed on the device apart from the
/// cover, so a footprint, smoothing or drift that lost or made a unit breaks the balance.
/// Drifting snow blown out through the domain's sides leaves (`blown`). Snow the wind lifts
/// into suspension moves from the ground to the parcels (`suspended`, part of `carried`) and
/// back when they land: no term of the balance, but checked apart
/// ([`suspension_balances`](Self::suspension_balances)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    /// Units on the ground now.
    pub ground: u128,
    /// Units the parcels carry now.
    pub carried: u128,
    /// Units at the start (ground and parcels).
    pub start: u128,
    /// Units that came in: fresh parcels and the acceleration's share of each landing.
    pub injected: i128,
    /// Units that left with parcels through the top, a closed side or lost.
    pub removed: u128,
    /// Landings so far.
    pub landings: u64,
    /// Units the landings laid, counted apart from the cover.
    pub laid: u64,

    /// Units the drift blew out through the domain's boundary.
    pub blown: u128,
    /// Units the wind lifted (each frame, every cover vertex's net loss, summed; not a term of
    /// the balance: the snow was laid again or blown out).
    pub eroded: u128,
    /// Units the parcels carry in suspension now (part of `carried`).
    pub suspended: u128,
    /// Units the wind lifted into suspension so far (set by [`Snow::ledger`]).
    pub entrained: u64,
    /// Units carried in suspension that landings laid so far (part of `laid`).
    pub laid_suspended: u64,
    /// Units carried in suspension out of the domain so far (part of `removed`).
    pub exited_suspended: u64,
}

impl Ledger {
    /// The books of `c`, with `ground` units on the ground and `particles` parcels carrying
    /// nothing in suspension (set `suspended` and add it to `carried` where they do); the
    /// ground starts empty ([`Snow::reset`]).
    pub fn new(c: &Counters, ground: u128, particles: usize) -> Self {
        let q = u128::from(PARCEL_UNITS);
        let n = particles as u128;
        let respawned = u128::from(c.respawned());
        let exits = u128::from(c.top + c.closed + c.lost + c.other);
        Self {
            ground,
            carried: n * q,
            start: n * q,
            injected: (respawned * q) as i128 + c.deposited as i128
                - c.laid_suspended as i128
                - (u128::from(c.landed) * q) as i128,
            removed: exits * q + u128::from(c.exited_suspended),
            landings: c.landed,
            laid: c.deposited,
            blown: 0,
            eroded: 0,
            suspended: 0,
            entrained: 0,
            laid_suspended: c.laid_suspended,
            exited_suspended: c.exited_suspended,
        }
    }

    /// Whether the snow the parcels carry in suspension is exactly what the wind lifted less
    /// what landings laid and what left the domain (a share lost or doubled in the hand-out
    /// breaks it).
    pub fn suspension_balances(&self) -> bool {
        self.suspended + u128::from(self.laid_suspended) + u128::from(self.exited_suspended)
            == u128::from(self.entrained)
    }

    /// Whether `ground + carried = start + injected − removed − blown` holds exactly.
    pub fn balances(&self) -> bool {
        (self.ground + self.carried) as i128
            == self.start as i128 + self.injected - self.removed as i128 - self.blown as i128
    }
}

/// The source's kernel argument: (height, top, depth below the top, tolerance).
fn source_args(c: &SnowConfig, g: &SnowGeometry) -> [f32; 4] {
    let below = (c.tolerance * 4.0).max(1e-3);
    [c.source_height as f32, g.z_range[1], below, c.tolerance]
}

/// Fails unless `wind` holds a velocity for every vertex of `mesh` (the kernels index it by
/// vertex).
fn check_wind(mesh: &SnowMesh, wind: &impl BufferArg<[f32; 4]>) -> Result<()> {
    if wind.len() < mesh.vertex_count() {
        return Err(Error::WindLength {
            got: wind.len(),
            expected: mesh.vertex_count(),
        });
    }
    Ok(())
}

/// Fails on non-finite particles counted by `c` after `frame` steps.
pub(crate) fn check_counters(c: &Counters, frame: u64) -> Result<()> {
    if c.nonfinite > 0 {
        return Err(Error::NonFinite {
            stage: STEP_STAGE,
            frame: frame.saturating_sub(1),
            id: c.first_bad,
            count: c.nonfinite,
        });
    }
    Ok(())
}

fn check_render(render: &impl BufferArg<Particle>, n: usize) -> Result<()> {
    if render.len() < n {
        return Err(Error::InvalidParameter(format!(
            "the render buffer holds {} float4 for {n} particles",
            render.len()
        )));
    }
    Ok(())
}

/// The kernels' `flutter_range` and `size_law` (see `snow_flutter` in `kernels/snow.cl`):
/// what a parcel's flutter and flake size are derived from, with its id and the seed.
fn flutter_law(c: &SnowConfig) -> ([f32; 4], [f32; 4]) {
    (
        [
            c.flutter_radius[0],
            c.flutter_radius[1],
            c.flutter_rate[0],
            c.flutter_rate[1],
        ],
        [
            c.flake_diameter[0],
            c.flake_diameter[1],
            c.reference_diameter(),
            c.fall_speed,
        ],
    )
}

/// Binds the arguments every particle kernel of `kernels/snow.cl` starts with: the particle
/// arrays, the render buffer, the particle count, the seed and the share of the run's parcels.
///
/// # Safety
///
/// As [`KernelCall::buffer`]: the kernel's leading parameters must be these, and the kernel
/// must guard its index against the count.
unsafe fn bind_particles<'c, 'k>(
    call: &'c mut KernelCall<'k>,
    p: &Particles,
    render: &impl BufferArg<Particle>,
    seed: u32,
    share: ParcelShare,
) -> cl::Result<&'c mut KernelCall<'k>> {
    // SAFETY: forwarded to the caller.
    unsafe {
        call.buffer(&p.pos)?
            .buffer(&p.vel)?
            .buffer(&p.tet)?
            .buffer(&p.ids)?
            .buffer(&p.respawns)?
            .buffer(render)?
            .arg(&(p.len() as u32))?
            .arg(&seed)?
            .arg(&share.first)?
            .arg(&share.total)
    }
}
