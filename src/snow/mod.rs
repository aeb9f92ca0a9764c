//! Snow: particles blown by the wind field, landing on the ground, building a snow cover that
//! slides, sorted one frame in `snow.sort_every` (issue 12).
//!
//! - [`SnowConfig`] (from a scene's `[snow]`, `[ground]` and `[time]`): counts, flake sizes, the
//!   fall-speed law, flutter, the snowfall rate and the parcel volume derived from it.
//! - [`SnowMesh`]: the domain mesh on the device as the kernels read it (tetrahedra, their
//!   neighbours and boundary references, the ground and top faces, a column grid for global
//!   point location).
//! - [`Particles`]: the particle arrays on the device, structure of arrays.
//! - [`GroundCover`]: snow volume per vertex of the cover's own mesh ([`CoverMesh`]) in 64-bit
//!   fixed point, its smoothing, and its restriction to the wind mesh's ground.
//! - [`Snow`]: the whole simulation on one device, its frame in three stages that
//!   `sim::Simulation::step` runs in order: [`sort`](Snow::sort), [`advance`](Snow::advance)
//!   (taking the wind, a per-vertex velocity of the domain mesh, as an argument) and
//!   [`smooth_cover`](Snow::smooth_cover).
//!
//! A library: it imports the device layer, the sort, the scene's domain and the terrain,
//! never the simulation that couples it to the wind, the drawing or the command line.
//!
//! # The physics
//!
//! Each particle is a parcel of snow. Its velocity relaxes toward the wind interpolated
//! linearly in its tetrahedron by quadratic drag, with gravity, integrated semi-implicitly:
//! `v⁺ = (v + dt (k s w − g ẑ)) / (1 + dt k s)`, `s = |w − v|` (stable for any `dt k s`,
//! unlike the thesis's explicit update). `k = g / v_t²` with `v_t` the flake's terminal fall
//! speed in still air: **`snow.fall_speed` is the terminal speed of a flake of the mean
//! diameter**, and a flake of diameter `d` falls at `fall_speed · (d / d_mean)^0.2` (the weak
//! size dependence measured for aggregate snowflakes, Locatelli & Hobbs 1974). The thesis's
//! flutter, a horizontal circle of the particle's radius and rate, is added to the position,
//! never to the velocity. The position moves by `dt (v⁺ + flutter)`.
//!
//! The segment from the old to the new position is followed through the mesh from the
//! particle's tetrahedron (`snow_segment` in `kernels/snow.cl`): where it leaves the domain
//! through a ground face the particle **lands**; through a side, it **wraps** to the opposite
//! side and is located there through the column grid and a walk (`kernels/tet_walk.cl`), or
//! respawns where the air is closed there; through the top, it **respawns**. A particle the
//! walks cannot locate within the hop limits is **lost**: counted and respawned. A respawn puts
//! it at a point uniform over the top face, drawn from the generator keyed by
//! (seed, id, respawn count), moving with the wind there and falling at its terminal speed.
//!
//! # Where the snow enters
//!
//! A respawn puts the parcel at a point of the top, or, with `snow.source_height` `h > 0`, `h`
//! metres over a point of the ground (never above the top): the air below that height is
//! where the parcels are, and the snowfall above it is taken as uniform. Parcels are
//! **stratified by id**: the entry point comes from the parcel's own stratum `[id, id + 1) / N`
//! of the top's (or the ground's) area table, mapped into its triangle by a recursive
//! four-way split so a stratum is a small patch; the initial spread takes the tetrahedron
//! from the parcel's stratum of the volume table, or (with a source height) the ground point
//! of its stratum at a height `h frac(id / φ + r)` and a flake size from `frac(id / g² + r')`
//! (golden ratio φ, plastic number g: low-discrepancy lattices; `r`, `r'` turned by the seed).
//! So no region holds more or fewer parcels than its share, give or take one, and which of
//! them land first is no lottery: the pattern of the cover is the scene's, not the sampling's.
//!
//! # Deposit, cover and ledger
//!
//! The cover lives on its own mesh ([`CoverMesh`]): every ground triangle of the wind mesh cut
//! into `r²` (`ground.cover_refinement`). A landing lays its snow over a **footprint**: a disk
//! of radius `s / 2` ([`FOOTPRINT_FRACTION`]) plus the flake's flutter radius, `s` the mean
//! parcel spacing `(V / N)^⅓` (a parcel stands for the flakes of its share of the air, and
//! they land spread over about its width; no wider, or the wind's drifts would blur),
//! integrated by the 7-point disk cubature (`kernels/snow_deposit.cl`): each point's share to
//! the three vertices of the fine triangle it falls in by its barycentrics, in 64-bit fixed
//! point, `q1 = round(w1 u)`, `q2 = round(w2 u)`, `q3 = u − q1 − q2`, added with 64-bit
//! atomics, so totals are exact and independent of order.
//!
//! With `snow.rate` `R` (metres of snow per hour on open flat ground), the air the parcels
//! share `V` (all of it, or the air below the source), the reference terminal speed `v_t` and
//! `N` particles, particles reach the ground about `N v_t / H` per second, so the **real
//! parcel volume** is `V_p = R V / (3600 v_t N)` m³ and one unit is `V_p / 2^24` m³, fixed at
//! the start. `time.acceleration` `a` multiplies what a landing lays, `round(a 2^24)` units,
//! like a morphological factor: the wind and the parcels stay in real time. The depth at a
//! cover vertex is its volume over its horizontal dual area (a third of its triangles'
//! horizontal areas): the vertical thickness of the cover. What the wind mesh's ground shows
//! (the drawn terrain, `--vtu`) is the cover **restricted** to its vertices by the hat
//! functions, exactly in integers ([`CoverMesh::restrict`]): its integral over the ground
//! triangles is the cover's volume.
//!
//! The **ledger** ([`Ledger`]): ground + carried = start + injected − removed, in units; the
//! landings' units are also summed on the device apart from the cover, so a footprint or a
//! smoothing that lost or made a unit breaks it (`Snow::check_invariants`, `--check`).
//!
//! # Drawing
//!
//! Each step ends by packing what is drawn into the render buffer: the position, and the
//! flake's radius times `render_scale`. A scene's snow is drawn larger than true
//! ([`DRAW_FRACTION`]): a mean flake gets 1 % of the mean parcel spacing as its radius, so
//! that near parcels read as flakes; the renderer's pixel floor keeps far ones visible.
//! Drawing never touches the simulation.
//!
//! # Sort independence
//!
//! Particles are sorted on one frame in `snow.sort_every` (4 by default) by their tetrahedron, or by their cell along a 3D Hilbert
//! curve over the domain's box (`snow.sort_key`), with `snow.sort`: `partial` by default (a
//! full sort every `snow.full_sort_every` frames), `full`, or `off` (`snowsim run --sort`
//! overrides the scene; the `O` key toggles partial and off); every array follows them (one
//! permutation launch, the tetrahedra sorted in place as the keys). **The result depends neither on the sort mode nor on the key, bit for bit**, as long
//! as these conditions hold (keep them):
//!
//! - a particle's update is a pure function of its own state and of fields frozen for the
//!   frame: the wind buffer is only read, and landing never reads the cover the same kernel
//!   changes (the ground is the fixed mesh);
//! - no float atomics, and no cross-particle float sums feed back into particle state: the
//!   counters and deposits are integers, only read by the host;
//! - the generator is keyed by (seed, id, respawn count, stream), never by the array slot, the
//!   frame or a shared counter; the walks' random choices are keyed the same way;
//! - the same compiled kernels and work-group sizes serve every mode, the count padded to a
//!   multiple of the work-group, each work-item guarding `i < n`;
//! - the wind the snow samples is the buffer passed to the step, the same in every mode;
//! - deposits are integers added by atomics (order-independent);
//! - nothing depends on the order of equal keys (the full sort is a stable radix sort, the
//!   partial sort's blocks are not: particles in one tetrahedron may come out in any order).
//! - the snow lifted into suspension reaches the parcels only through integers: per-cell counts
//!   and smallest ids are integer atomics (commutative), a parcel's share depends on its id,
//!   its cell's pool and those two numbers, never on its slot; its cell is computed without
//!   fused multiply-adds, so the count and the share see the same cell
//!   ([`Suspension`]).

mod config;
mod cover;
mod density;
mod drift;
mod error;
mod flakes;
mod handover;
mod mesh;
mod particles;
mod refine;
mod sim;
mod suspension;

pub use config::{DRAW_FRACTION, FOOTPRINT_FRACTION, PARCEL_UNITS, SnowConfig, SortSettings};
pub use cover::{CoverGeometry, GroundCover};
pub use density::{DENSITY_CELLS, DENSITY_LAYERS, RelativeDensity};
pub use drift::{Ageing, Drift, DriftCounts, DriftGeometry, DriftSettings, GRAIN_SPEED, KARMAN};
pub use error::{Error, Result};
pub use flakes::{
    DEFAULT_DENSITY, EXTINCTION_EFFICIENCY, FlakeError, KOSCHMIEDER, Snowfall, flake_mass,
    visibility,
};
pub use handover::{LandingsIn, LandingsOut, MIN_PAIRS};
pub use mesh::{SnowGeometry, SnowMesh, device_coordinates};
pub use particles::{ParticleState, Particles};
pub use refine::{CoverMesh, MAX_REFINEMENT, lattice_index, lattice_len};
pub use sim::{
    COVER_STAGE, Counters, DRIFT_STAGE, Ledger, PERMUTE_STAGE, ParcelShare, SORT_STAGE, STEP_STAGE,
    Snow,
};
pub use suspension::{
    FrameCellsHost, REFERENCE_HEIGHT, SharedCells, Suspension, cells_of, concentration, lift_rate,
    settling_speed, suspension_sites,
};
