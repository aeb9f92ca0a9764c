//! The parcels split across devices (`--snow-devices`): the snow's own device (the one that
//! draws, holding the cover that is smoothed, drifts and is drawn) steps its share of the
//! parcels, and every other device steps its own share, reading the same wind field.
//!
//! **Bit for bit with one device.** A parcel's id, and the strata and random streams keyed by
//! it, are the run's ([`ParcelShare`]: ids `first..first + n` of `total`), so a parcel moves
//! the same on any device; what it lays is an integer number of units, and integer sums do not
//! depend on their order. So each frame the other devices' landings are handed over (packed as
//! (vertex, units) pairs and read into pinned memory, their covers cleared: `snow::handover`)
//! and added to the snow's cover before it drifts or is
//! smoothed, and the cover is the one device's, exactly. Respawns and wraps stay on the
//! parcel's device. Sorting permutes a device's own parcels only, and changes nothing.
//!
//! **The frame.** The wind field reaches the others through `coupling` (from the wind's
//! thread's pinned copy when the wind runs beside the snow, else read on the snow's device
//! when the wind has stepped since). The snow's device's lifting and the read of its cells
//! are enqueued first, then the others' sorts (they need nothing of the frame's), the snow's
//! device's sort and step, all without waiting; then the cells are waited for and sent, and
//! the others' steps enqueued; then their hand-overs (which first wait for the snow's device
//! to have added the last frame's, long done), and their landings are waited for (the snow's
//! device is busy with its own share meanwhile) and added. The waits for the cells and the
//! landings come with the snow's device's queue full (`--json`'s `snow.split_waits` says how
//! long). Where the wind runs on a device that also steps a share, its steps start after that
//! share's frame (`coupling`). The others' counters come back without blocking, as the
//! snow's do.
//!

//! **Snow in suspension.** The snow's device lifts it (from the summed cover) into per-cell
//! pools; after its lifting, the frame's cells (parcels per cell, their smallest id, the
//! pool) are read and written to the others before their steps, so every parcel takes its
//! share as on one device; after the steps, the others' counts for the next frame are added
//! to the snow's device's and their smallest ids folded in (both order-free).
//!
//! **Drawing.** Where the run draws ([`SnowShares::draw_all`]), the others' parcels as drawn
//! are read back each frame and written after the snow's device's own into its drawing
//! buffer: through the host, 16 bytes a parcel each way, the one path between two OpenCL
//! contexts of any platforms.

use opencl3::event::Event;

use crate::cl::{BufferArg, Context, DeviceBuffer, PinnedBuffer, Timeline, wait_for};
use crate::particle::Particle;
use crate::scene::DomainMesh;
use crate::snow::{
    Counters, FrameCellsHost, LandingsIn, LandingsOut, MIN_PAIRS, ParcelShare, RelativeDensity,
    Snow, SnowConfig,
};

use super::ranks::RankPeers;
use super::setup::SnowSplit;
use super::{Error, Result};

/// One device's share in the report (`--json`'s `snow_devices`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ShareReport {
    /// The device's index and name.
    pub device: String,
    /// The first parcel id it holds.
    pub first: u32,
    /// The parcels it holds.
    pub particles: usize,
    /// Its share of the run's parcels.
    pub fraction: f64,
}

/// What the split moves between the devices each frame, bytes, summed over the devices beside
/// the snow's own (`--json`'s `snow.split_traffic`): it crosses inside the frame, on the
/// path that does not overlap (`benches/RESULTS.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct SplitTraffic {
    /// Their landings, handed over packed (`snow::LandingsOut`): a 4-byte count and
    /// 16 bytes per cover vertex read (those that received snow, and the guess's slack), each;
    /// the mean over the frames so far.
    pub landings: u64,
    /// The snow in suspension's cells: out (count, smallest id, pool: 16 bytes per cell) and
    /// back (count and smallest id: 8 bytes), each; 0 without suspension.
    pub cells: u64,
    /// Their parcels as drawn, to the drawing device: 16 bytes each (0 undrawn).
    pub drawn_parcels: u64,
    /// The wind field, once per frame that stepped the wind: 16 bytes per vertex each.
    pub wind_field: u64,
}

/// Where the host waited for the split each frame, ms, means over the frames since the run
/// started (`--json`'s `snow.split_waits`): what stands between the devices' overlap and
/// the frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct SplitWaits {
    /// For the snow's device's cells to be read, before they go out (0 without suspension).
    pub cells_ms: f64,
    /// For the others' landings (and cells) to arrive in pinned memory.
    pub landings_ms: f64,
    /// The frames counted.
    pub frames: u64,
}

/// How the run's `total` parcels are shared out by `weights` (one per device, positive):
/// consecutive id ranges, rounded down but the last, which takes the rest.
pub fn split(total: usize, weights: &[f64]) -> Result<Vec<(u32, usize)>> {
    if weights.is_empty() || weights.iter().any(|w| !(w.is_finite() && *w > 0.0)) {
        return Err(Error::InvalidParameter(format!(
            "--snow-shares {weights:?}: one positive weight per snow device"
        )));
    }
    let sum: f64 = weights.iter().sum();
    let mut shares = Vec::with_capacity(weights.len());
    let mut first = 0usize;
    for (k, w) in weights.iter().enumerate() {
        let n = match k + 1 == weights.len() {
            true => total - first,
            false => ((total as f64) * w / sum).floor() as usize,
        }
        .min(total - first);
        let start = u32::try_from(first).map_err(|_| {
            Error::InvalidParameter(format!("{total} parcels do not fit 32-bit ids"))
        })?;
        shares.push((start, n));
        first += n;
    }
    Ok(shares)
}

/// The run's parcel count as the parcels' ids hold it: split parcels carry the run's ids,
/// 32-bit.
pub(super) fn parcel_ids(particles: usize) -> Result<u32> {
    u32::try_from(particles)
        .map_err(|_| Error::InvalidParameter(format!("{particles} parcels do not fit 32-bit ids")))
}

/// The snow of the share of the parcels that the cover's own device (or rank 0) steps: the
/// first `particles` of the run's `total`, set up as `config` (with its drift).
pub(super) fn own_share(
    context: &Context,
    domain: &DomainMesh,
    mut config: SnowConfig,
    particles: usize,
    total: u32,
) -> Result<Snow> {
    config.particles = particles;
    let share = ParcelShare {
        first: 0,
        total,
        lifted_elsewhere: false,
    };
    Ok(Snow::new_share(context, domain, config, share)?)
}

/// The snow of a share of the parcels away from the cover that drifts (another device's,
/// another rank's): `share` (first id, parcels) of the run's `total`, set up as `config`
/// (the drifting snow's) without its drift, carrying snow in suspension that the drifting
/// snow lifts, on `context`; and the buffers that hand its landings over.
pub(super) fn share_snow(
    context: &Context,
    domain: &DomainMesh,
    config: &SnowConfig,
    (first, n): (u32, usize),
    total: u32,
) -> Result<(Snow, LandingsOut)> {
    let mut share_config = config.clone();
    share_config.particles = n;
    share_config.drift = None;
    let share = ParcelShare {
        first,
        total,
        lifted_elsewhere: config.drift.is_some_and(|d| d.suspension),
    };
    let mut snow = Snow::new_share(context, domain, share_config, share)?;
    // Nothing draws another device's or rank's parcels unless the run asks
    // ([`SnowShares::draw_all`]).
    snow.set_writes_render(false);
    let landed = LandingsOut::new(context, snow.cover(), MIN_PAIRS)?;
    Ok((snow, landed))
}

/// Another device's share.
struct ShareDevice {
    device: String,
    /// Its OpenCL index.
    index: usize,
    context: Context,
    snow: Snow,
    /// Where its parcels are written each step (nothing draws them).
    render: DeviceBuffer<Particle>,
    /// Its landings of the frame, handed over packed.
    landed: LandingsOut,
    /// The snow's device's write out of `landed` (the next hand-over waits for it).
    added: Option<Event>,
    /// Its parcels as drawn, read back for the snow's device's drawing (when it draws them).
    drawn: Option<PinnedBuffer<Particle>>,
    /// The snow's device's write out of `drawn` (the next read waits for it).
    shown: Option<Event>,
    /// Its step's next cell counts and smallest ids, handed over (with suspension).
    cells: FrameCellsHost,
    /// The snow's device's copies out of `cells` (the next hand-over waits for them).
    merged: Vec<Event>,
    /// Its launches of the frame (events recorded on timed frames).
    timeline: Timeline,
    /// The device time of its launches on the timed frames since the start, ms, and those
    /// frames.
    busy: (f64, u64),
}

/// The other devices' shares of the parcels.
pub struct SnowShares {
    others: Vec<ShareDevice>,
    /// The snow's device's cells of the frame, going out to the others (with suspension).
    cells: Option<FrameCellsHost>,
    /// Every device's share, the snow's device first.
    report: Vec<ShareReport>,
    /// The reads of the frame's cells on the snow's device, on their way.
    reading: Vec<Event>,
    /// Per other device, the reads of its hand-over, on their way.
    handing: Vec<Vec<Event>>,
    /// The snow's device's buffer for the others' landings on their way to its cover.
    incoming: LandingsIn,
    /// Every frame's launches timed (the shares' calibration), not only the timed frames'.
    timing: bool,
    /// The host's waits for the cells and the landings, summed.
    waited: Waited,
    /// The shares on other ranks (`mpirun`), reached through the communicator.
    ranks: Option<RankPeers>,
}

impl SnowShares {
    /// Builds each other device's snow for its share of `split` of the run's `total` parcels
    /// (`config` as the snow's device's, with no drift: the drift runs on the summed cover);
    /// `context` is the snow's own.
    pub fn new(
        context: &Context,
        domain: &DomainMesh,
        config: &SnowConfig,
        split: &SnowSplit,
        total: u32,
    ) -> Result<Self> {
        // The others carry snow in suspension that the snow's device lifts.
        let suspension = config.drift.is_some_and(|d| d.suspension);
        let report = split.report(context.info());
        let mut others = Vec::new();
        for (entry, &(first, n)) in split.devices.iter().zip(&split.shares[1..]) {
            let name = format!("{} ({})", entry.info.index, entry.info.name);
            let build = || -> Result<ShareDevice> {
                let other = Context::new(entry)?;
                let (snow, landed) = share_snow(&other, domain, config, (first, n), total)?;
                let cells = FrameCellsHost::new(&other, snow.cover().mesh.coarse_vertices)?;
                Ok(ShareDevice {
                    device: name.clone(),
                    index: entry.info.index,
                    render: DeviceBuffer::zeroed(&other, n)?,
                    landed,
                    added: None,
                    cells,
                    merged: Vec::new(),
                    drawn: None,
                    shown: None,
                    snow,
                    timeline: Timeline::new(false),
                    busy: (0.0, 0),
                    context: other,
                })
            };
            others.push(named(&name, build())?);
        }
        let cells = match suspension {
            true => {
                let n = others
                    .first()
                    .map_or(0, |o| o.snow.cover().mesh.coarse_vertices);
                Some(FrameCellsHost::new(context, n)?)
            }
            false => None,
        };
        let vertices = others.first().map_or(0, |o| o.snow.cover().geometry.len());
        Ok(Self {
            incoming: LandingsIn::new(context, vertices)?,
            timing: false,
            others,
            cells,
            report,
            reading: Vec::new(),
            handing: Vec::new(),
            waited: Waited::default(),
            ranks: None,
        })
    }

    /// The shares on the other ranks of `comm`: `shares` (first id, parcels) per rank, rank
    /// 0's (this process's: `own`, on `context`) first ([`super::ranks`]).
    pub fn over_ranks(
        context: &Context,
        own: &Snow,
        comm: Box<dyn crate::comm::Comm>,
        shares: &[(u32, usize)],
    ) -> Result<Self> {
        let report = super::ranks::report(shares, context.info());
        let coarse = own.cover().mesh.coarse_vertices;
        let suspension = own.suspension().is_some();
        let ranks = RankPeers::new(context, comm, shares, suspension.then_some(coarse))?;
        Ok(Self {
            others: Vec::new(),
            cells: match suspension {
                true => Some(FrameCellsHost::new(context, coarse)?),
                false => None,
            },
            report,
            reading: Vec::new(),
            handing: Vec::new(),
            incoming: LandingsIn::new(context, own.cover().geometry.len())?,
            timing: false,
            waited: Waited::default(),
            ranks: Some(ranks),
        })
    }

    /// The ranks the parcels are split over (1 where the shares are on devices of this
    /// process).
    pub fn ranks(&self) -> usize {
        match self.ranks {
            Some(_) => self.report.len(),
            None => 1,
        }
    }

    /// Whether the other shares are on other ranks.
    pub fn over_other_ranks(&self) -> bool {
        self.ranks.is_some()
    }

    /// Every share, the snow's own first (`--json`'s `snow_devices`).
    pub fn report(&self) -> &[ShareReport] {
        &self.report
    }

    /// The other devices' snows.
    pub fn snows(&self) -> impl Iterator<Item = &Snow> {
        self.others.iter().map(|o| &o.snow)
    }

    /// The other devices' snows, to change (tests, tools).
    pub fn snows_mut(&mut self) -> impl Iterator<Item = &mut Snow> {
        self.others.iter_mut().map(|o| &mut o.snow)
    }

    /// Puts the others' parcels at their start and clears their covers (blocking).
    pub fn reset(&mut self) -> Result<()> {
        for o in &mut self.others {
            let r = o.snow.reset(&o.context, &o.render, &mut o.timeline);
            named(&o.device, r)?;
            o.context.finish()?;
        }
        if let Some(ranks) = self.ranks.as_mut() {
            ranks.reset()?;
        }
        Ok(())
    }

    /// Has the other ranks plan raising their wind's ground by `raise` beside their frames
    /// (a refresh held back; [`regrade`](Self::regrade) applies it); nothing without ranks
    /// (the devices of this process share its plan).
    pub fn plan_ground(&mut self, raise: &[f64]) -> Result<()> {
        match self.ranks.as_mut() {
            Some(ranks) => ranks.plan_ground(raise),
            None => Ok(()),
        }
    }

    /// The parcels the other devices' regrades moved up and found under no column since the
    /// reset, as those devices counted them (blocking).
    pub fn relocated(&self) -> Result<(u64, u64)> {
        let mut moved = (0, 0);
        for o in &self.others {
            let (up, lost) = named(&o.device, o.snow.relocated())?;
            moved = (moved.0 + up, moved.1 + lost);
        }
        Ok(moved)
    }

    /// Switches every other device's sort mode.
    pub fn set_sort(&mut self, mode: crate::scene::SortMode) -> Result<()> {
        for o in &mut self.others {
            o.snow.set_sort(mode)?;
        }
        if let Some(ranks) = self.ranks.as_mut() {
            ranks.set_sort(mode)?;
        }
        Ok(())
    }

    /// Moves the others' meshes with a raised ground (`vertices`, and `coords` as the snow's
    /// kernels read them) and finds their parcels again: on each other device queued, not
    /// waited for, counted there ([`relocated`](Self::relocated)); over ranks blocking, and
    /// the ranks' parcels moved up and lost, summed, returned.
    pub fn regrade(
        &mut self,
        vertices: &[[f64; 3]],
        coords: &[[f32; 4]],
        raise: &[f64],
    ) -> Result<(u64, u64)> {
        for o in &mut self.others {
            let r = o
                .snow
                .regrade_converted(&o.context, vertices, coords.to_vec());
            named(&o.device, r)?;
        }
        match self.ranks.as_mut() {
            Some(ranks) => ranks.regrade(raise),
            None => Ok((0, 0)),
        }
    }

    /// Has every frame also bring the others' parcels, as drawn, into the snow's device's
    /// drawing buffer after its own ([`gather`](Self::gather)): read into pinned memory on
    /// each, written from there on the snow's device, without waiting (16 bytes a parcel each
    /// way). The parcels of the snow's own device come first.
    pub fn draw_all(&mut self) -> Result<()> {
        if self.ranks.is_some() {
            return Err(Error::InvalidParameter(
                "the parcels of other ranks are not drawn: run over ranks with --render off".into(),
            ));
        }
        for o in &mut self.others {
            if o.drawn.is_none() {
                o.drawn = Some(PinnedBuffer::new(&o.context, o.render.len())?);
            }
            o.snow.set_writes_render(true);
        }
        Ok(())
    }

    /// What the split moves between the devices each frame, for a wind field of
    /// `field_len` vertices.
    pub fn traffic(&self, field_len: usize) -> SplitTraffic {
        let mut t = SplitTraffic::default();
        for o in &self.others {
            let cells = o.snow.cover().mesh.coarse_vertices as u64;
            t.landings += o.landed.bytes() / self.waited.frames.max(1);
            if self.cells.is_some() {
                t.cells += 24 * cells;
            }
            if o.drawn.is_some() {
                t.drawn_parcels += 16 * o.render.len() as u64;
            }
            t.wind_field += 16 * field_len as u64;
        }
        if let Some(ranks) = &self.ranks {
            let r = ranks.traffic;
            let frames = r.frames.max(1);
            t.landings += r.landings / frames;
            t.cells += r.cells / frames;
        }
        t
    }

    /// The others' parcels.
    pub fn particles(&self) -> usize {
        let ranks = self.ranks.as_ref().map_or(0, RankPeers::particles);
        self.others
            .iter()
            .map(|o| o.snow.particles().len())
            .sum::<usize>()
            + ranks
    }

    /// Starts timing every frame's launches on the others afresh, or stops (then only the
    /// frames [`begin_frame`](Self::begin_frame) says are timed are).
    pub fn set_timing(&mut self, on: bool) {
        self.timing = on;
        for o in &mut self.others {
            o.timeline = Timeline::new(on);
            o.busy = (0.0, 0);
        }
    }

    /// Starts a frame whose launches are timed on the snow's device when `timed`: the
    /// others' are timed then too (`--profile-every`), from a fresh timeline.
    pub fn begin_frame(&mut self, timed: bool) {
        for o in &mut self.others {
            o.timeline = Timeline::new(timed || self.timing);
        }
    }

    /// Per other device, in order: its OpenCL index, its parcels and the device time of its
    /// launches since [`set_timing`](Self::set_timing), ms.
    pub fn timed(&self) -> Vec<(usize, usize, f64)> {
        self.others
            .iter()
            .map(|o| (o.index, o.snow.particles().len(), o.busy.0))
            .collect()
    }

    /// Per other device, in order: the device time of its launches per timed frame, ms
    /// (`None` before a timed frame: none is when the snow's own queue does not profile).
    pub fn device_ms(&self) -> Vec<Option<f64>> {
        self.others
            .iter()
            .map(|o| (o.busy.1 > 0).then(|| o.busy.0 / o.busy.1 as f64))
            .collect()
    }

    /// The others' contexts, in order (the wind field's copies go there:
    /// `coupling::WindField::attach`).
    pub fn contexts(&self) -> Vec<Context> {
        self.others.iter().map(|o| o.context.clone()).collect()
    }

    /// Starts reading the frame's cells of the snow in suspension (the snow's device's counts,
    /// smallest ids and pools, after its lifting: `snow`) into pinned memory, without
    /// waiting: enqueue it right after the lifting, then the snow's device's own sort and
    /// step, then [`send_cells`](Self::send_cells). Nothing without suspension.
    pub fn start_cells(&mut self, snow: &Snow) -> Result<()> {
        let Some(cells) = self.cells.as_mut() else {
            return Ok(());
        };
        // SAFETY: the host touches `cells` again only in `send_cells`, after waiting for
        // these reads, and at the next frame's start, after this frame's gather waited for
        // each other's hand-over, which its queue runs after the writes out of `cells`.
        self.reading = unsafe { snow.enqueue_read_cells(cells) }?;
        Ok(())
    }

    /// Waits for the cells [`start_cells`](Self::start_cells) read, and starts writing them
    /// to the others, before their steps (writes that do not wait).
    pub fn send_cells(&mut self) -> Result<()> {
        let Some(cells) = self.cells.as_ref() else {
            return Ok(());
        };
        if self.reading.is_empty() {
            return Err(Error::Internal(
                "the cells of the snow in suspension sent before they were read".into(),
            ));
        }
        let reading = std::mem::take(&mut self.reading);
        timed_wait(&mut self.waited.cells, || wait_for(&reading))?;
        for o in &mut self.others {
            // SAFETY: `self.cells` is read into again only at the next frame's start, after
            // this frame's gather waited for each other's hand-over, which its queue runs
            // after these writes.
            let r = unsafe { o.snow.enqueue_cells(cells) };
            named(&o.device, r)?;
        }
        Ok(())
    }

    /// The units the others' parcels carry in suspension (blocking).
    pub fn suspended_units(&self) -> Result<u128> {
        let mut units = 0u128;
        for o in &self.others {
            let carried = o.snow.particles().suspended_units();
            units += named(&o.device, carried)?
                .iter()
                .map(|&u| u128::from(u))
                .sum::<u128>();
        }
        if let Some(ranks) = &self.ranks {
            units += ranks.suspended_units()?;
        }
        Ok(units)
    }

    /// Enqueues the others' sorts, without waiting (they need nothing of the frame's: call it
    /// early, so that they sort while the snow's device lifts).
    pub fn sort(&mut self) -> Result<()> {
        for o in &mut self.others {
            let r = o.snow.sort(&mut o.timeline);
            named(&o.device, r)?;
        }
        Ok(())
    }

    /// Enqueues the others' particle steps for `dt` seconds in `fields` (the wind on each of
    /// them, in order), after [`sort`](Self::sort), without waiting.
    pub fn advance(&mut self, dt: f32, fields: &[DeviceBuffer<[f32; 4]>]) -> Result<()> {
        if fields.len() != self.others.len() {
            return Err(Error::Internal(format!(
                "{} wind fields for {} devices with a share of the parcels",
                fields.len(),
                self.others.len()
            )));
        }
        for (o, field) in self.others.iter_mut().zip(fields) {
            let r = o
                .snow
                .advance(&o.context, field, dt, &o.render, &mut o.timeline);
            named(&o.device, r)?;
        }
        if let Some(ranks) = self.ranks.as_mut() {
            ranks.send_frame(dt, self.cells.as_ref())?;
        }
        Ok(())
    }

    /// Starts reading the others' landings of the frame (and their next cells, and their
    /// parcels as drawn) into pinned memory, after their steps, and their counters on their
    /// way back, without waiting; [`gather`](Self::gather) waits for them.
    pub fn hand_over(&mut self) -> Result<()> {
        self.handing.clear();
        for o in &mut self.others {
            let earlier: Vec<Event> = o
                .added
                .take()
                .into_iter()
                .chain(o.merged.drain(..))
                .chain(o.shown.take())
                .collect();
            wait_for(&earlier)?;
            // SAFETY: `landed` and `cells` are not touched by the host until the events are
            // waited for in `gather`, and the snow's device's copies out of them were waited
            // for above.
            let mut events = named(&o.device, unsafe {
                let (snow, timeline) = (&mut o.snow, &mut o.timeline);
                o.landed.enqueue(&o.context, snow.cover_mut(), timeline)
            })?;
            let next = unsafe { o.snow.enqueue_read_next_cells(&mut o.cells) };
            events.extend(named(&o.device, next)?.into_iter().flatten());
            if let Some(pinned) = o.drawn.as_mut() {
                // SAFETY: as `landed`: untouched until waited for in `gather`, its last write
                // out (`shown`) waited for above.
                let read = unsafe { pinned.enqueue_read_from(&o.render) };
                events.push(named(&o.device, read)?);
            }
            self.handing.push(events);
            named(&o.device, o.snow.start_counter_read())?;
        }
        Ok(())
    }

    /// Markers after the frame's work on the others with OpenCL index `device` (their steps
    /// and hand-overs, queued by [`hand_over`](Self::hand_over)), submitted: what the wind's
    /// steps on that device start after (`coupling`).
    pub fn frame_ends_on(&self, device: usize) -> Result<Vec<Event>> {
        let mut ends = Vec::new();
        for o in self.others.iter().filter(|o| o.index == device) {
            ends.push(named(&o.device, o.context.enqueue_marker())?);
            named(&o.device, o.context.flush())?;
        }
        Ok(ends)
    }

    /// Waits for the others' landings of the frame ([`hand_over`](Self::hand_over)) and adds
    /// them to `snow`'s cover (the snow's device's), and their next cells to its
    /// suspension's, in order on its queue after its own step.
    pub fn gather(
        &mut self,
        context: &Context,
        snow: &mut Snow,
        drawn: &impl BufferArg<Particle>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let reads = std::mem::take(&mut self.handing);
        if reads.len() != self.others.len() {
            return Err(Error::Internal(
                "the others' landings gathered before they were handed over".into(),
            ));
        }
        let mut first = snow.particles().len();
        for (o, events) in self.others.iter_mut().zip(&reads) {
            let landed = timed_wait(&mut self.waited.landings, || o.landed.finish(events));
            named(&o.device, landed)?;
            if let Some(pinned) = &o.drawn {
                // SAFETY: `drawn` stays alive and untouched until `shown` completes: the next
                // read waits for it, and Drop finishes the snow's queue first.
                let shown = unsafe {
                    crate::cl::enqueue_write_at(context, drawn, first, pinned.as_slice())
                }?;
                o.shown = Some(shown);
                first += pinned.len();
            }
            // SAFETY: `landed` and `cells` stay alive and untouched until `added` and
            // `merged` have completed: the next hand-over waits for them, and Drop finishes
            // the snow's queue first.
            o.added = unsafe {
                self.incoming
                    .enqueue_add(context, snow.cover_mut(), o.landed.pairs(), timeline)
            }?;
            if let Some(copies) = unsafe { snow.enqueue_merge_cells(context, &o.cells, timeline) }?
            {
                o.merged.extend(copies);
            }
        }
        if let Some(ranks) = self.ranks.as_mut() {
            let incoming = &mut self.incoming;
            timed_wait(&mut self.waited.landings, || {
                ranks.gather(context, snow, incoming, timeline)
            })?;
        }
        self.waited.frames += 1;
        // On a timed frame, the others' launches of the frame (done: the hand-overs' reads,
        // waited for above, came after them), read once the adds are queued.
        for o in self
            .others
            .iter_mut()
            .filter(|o| o.timeline.records_events())
        {
            let busy = named(&o.device, o.timeline.device_time())?;
            o.busy = (o.busy.0 + busy.as_secs_f64() * 1e3, o.busy.1 + 1);
            o.timeline = Timeline::new(false);
        }
        Ok(())
    }

    /// Where the host waited for the split, per frame.
    pub fn waits(&self) -> SplitWaits {
        let w = self.waited;
        let per = 1e3 / w.frames.max(1) as f64;
        SplitWaits {
            cells_ms: w.cells * per,
            landings_ms: w.landings * per,
            frames: w.frames,
        }
    }

    /// Checks the others' counters of the last frame (a non-finite parcel stops the run,
    /// naming the device).
    pub fn check_counter_read(&mut self) -> Result<()> {
        for o in &mut self.others {
            named(&o.device, o.snow.check_counter_read().map(|_| ()))?;
        }
        Ok(())
    }

    /// The others' counters, read (blocking).
    pub fn counters(&self) -> Result<Vec<Counters>> {
        let mut counters = self
            .others
            .iter()
            .map(|o| named(&o.device, o.snow.counters()))
            .collect::<Result<Vec<_>>>()?;
        if let Some(ranks) = &self.ranks {
            counters.extend(ranks.counters()?);
        }
        Ok(counters)
    }

    /// Checks that every id of the other ranks' shares is present once and that their wind
    /// is `field`, rank 0's, bit for bit (the other devices' snows are checked through
    /// [`snows`](Self::snows)).
    pub fn check_ranks(&self, field: &[[f32; 4]]) -> Result<()> {
        match &self.ranks {
            Some(ranks) => ranks.check(field),
            None => Ok(()),
        }
    }

    /// The falling snow's density over all the devices' parcels, from the snow's device's
    /// (`own`, of its share): each device's relative density weighted by its share of the
    /// parcels (blocking).
    pub fn flake_density(&mut self, own: RelativeDensity) -> Result<RelativeDensity> {
        let mut blended = own;
        let weight = self.report[0].fraction as f32;
        blended.values.iter_mut().for_each(|v| *v *= weight);
        for (o, share) in self.others.iter_mut().zip(&self.report[1..]) {
            let theirs = named(&o.device, o.snow.flake_density())?;
            let weight = share.fraction as f32;
            for (v, t) in blended.values.iter_mut().zip(&theirs.values) {
                *v += weight * t;
            }
        }
        if let Some(ranks) = &self.ranks {
            let weights: Vec<f64> = self.report[1..].iter().map(|r| r.fraction).collect();
            ranks.add_density(&mut blended, &weights)?;
        }
        Ok(blended)
    }
}

impl Drop for SnowShares {
    fn drop(&mut self) {
        // The pinned memory outlives every transfer out of it or into it.
        let _ = wait_for(&self.reading);
        for events in &self.handing {
            let _ = wait_for(events);
        }
        for o in &self.others {
            if let Some(added) = &o.added {
                let _ = added.wait();
            }
            let _ = wait_for(&o.merged);
            let _ = wait_for(o.shown.as_slice());
            let _ = o.context.finish();
        }
    }
}

/// The host's waits for the split since the run started.
#[derive(Clone, Copy, Debug, Default)]
struct Waited {
    /// For the snow's device's cells, s.
    cells: f64,
    /// For the others' landings, s.
    landings: f64,
    /// Frames gathered.
    frames: u64,
}

/// Runs `wait`, adding the seconds it took to `total`.
fn timed_wait<T>(total: &mut f64, wait: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let r = wait();
    *total += start.elapsed().as_secs_f64();
    r
}

/// `r`, naming `device` when it failed.
fn named<T, E: Into<Error>>(device: &str, r: std::result::Result<T, E>) -> Result<T> {
    r.map_err(|e| Error::OnDevice {
        role: "snow share",
        device: device.to_string(),
        source: Box::new(e.into()),
    })
}
