//! The parcels split across ranks (`mpirun -n K snowsim run --render off`): the split of
//! [`super::shares`] with the other shares in other processes, reached through
//! [`crate::comm`] instead of pinned memory.
//!
//! **What each rank holds.** Rank 0 holds the simulation as one device would: the wind, the
//! cover that drifts and is smoothed, the snow in suspension's lifting, the reports, the checks
//! and the state files, and its own share of the parcels. Every other rank ([`RankFollower`])
//! holds its share of the parcels on an OpenCL device of its own, a cover on which it lays its
//! landings and which it hands over each frame, and **the same wind, solved again**: each
//! rank steps the same solver on the same mesh, so no field crosses between ranks (3 MB a
//! wind step on the valley, which took longer to send than to solve: `benches/RESULTS.md`).
//! The mesh is not partitioned yet: every rank holds the whole of it (`docs/scaling.md` says
//! what the partitioned wind needs).
//!
//! **Bit for bit with one rank**, for the reasons the devices' split is: a parcel's id and the
//! streams keyed by it are the run's ([`crate::snow::ParcelShare`]), what lands is an integer
//! number of units added to rank 0's cover before it drifts or is smoothed, and the cells'
//! counts and smallest ids merge order-free. The wind is the same bit for bit where the ranks'
//! devices are of one model (the solver's reductions run in a fixed order); `--check`
//! compares every rank's field with rank 0's and stops the run where they differ. A ground
//! refresh sends the raise (8 bytes per ground vertex) when rank 0 reads it, and each rank
//! plans its own wind's regrade beside its frames ([`Order::PlanGround`]); the application
//! ([`Order::Regrade`], the same raise) applies that plan, or makes one there and then.
//!
//! **The exchange.** Every exchange is one order from rank 0 and one reply from each other
//! rank, in rank order ([`Order`]). A frame: after its lifting and the read of its cells,
//! rank 0 sends [`Order::Frame`] (the frame's seconds and the cells); each rank steps its
//! parcels (sorted as soon as it replied to the last frame), packs its landings, reads its
//! next cells and replies with them, and only then runs the frame's wind steps (which only
//! the next frame needs); rank 0 adds them in its own step's wake. A rank that fails replies with its error; one that died or hangs ends
//! rank 0's run when the communicator's receive times out ([`crate::comm::DEFAULT_TIMEOUT`]),
//! naming it; rank 0's end, or its failure, ends the others ([`Order::End`], sent when
//! [`RankPeers`] is dropped).

use opencl3::event::Event;

use crate::cl::{Context, DeviceBuffer, DeviceInfo, Timeline, wait_for};
use crate::comm::Comm;
use crate::particle::Particle;
use crate::scene::{DomainMesh, SortMode};
use crate::snow::{
    Counters, FrameCellsHost, LandingsIn, LandingsOut, RelativeDensity, Snow, SnowConfig,
};

use super::coupling::WindField;
use super::shares::ShareReport;
use super::{Error, Result, SimSetup};

/// The tag of rank 0's orders.
const ORDER_TAG: u32 = 200;
/// The tag of the other ranks' replies.
const REPLY_TAG: u32 = 201;

/// What rank 0 asks of the others; the first byte of an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Order {
    /// Step a frame: its seconds (f32), whether the cells follow (a byte), the cells
    /// (counts, smallest ids, pools). Reply: the landings' (vertex, units) pairs, then the
    /// next cells' counts and smallest ids. The frame's wind steps follow on the rank's own.
    Frame = 1,
    /// Put the parcels at their start and clear the cover. Reply: nothing.
    Reset = 2,
    /// Raise the wind's ground by this much (f64 per ground vertex), move the snow's mesh
    /// with it and find every parcel again. Reply: the parcels moved up and lost (u64 each).
    Regrade = 3,
    /// Sort in this mode (a byte: 0 off, 1 full, 2 partial). Reply: nothing.
    Sort = 4,
    /// Reply: the counters (11 × u64).
    Counters = 5,
    /// Reply: the units carried in suspension (u128).
    Suspended = 6,
    /// Check that every id of the share is present once and the wind finite. Reply: a
    /// digest of the wind's field ([`field_digest`]).
    Check = 7,
    /// Reply: the falling snow's relative density (f32 per cell).
    Density = 8,
    /// Stop serving. No reply.
    End = 9,
    /// Plan raising the wind's ground by this much (f64 per ground vertex) on a thread of the
    /// rank's own, for a [`Regrade`](Self::Regrade) by the same raise later (a refresh held
    /// back: `wind.ground_refresh_lag`). Reply: nothing.
    PlanGround = 10,
}

impl Order {
    fn from_byte(b: u8) -> Option<Self> {
        [
            Self::Frame,
            Self::Reset,
            Self::Regrade,
            Self::Sort,
            Self::Counters,
            Self::Suspended,
            Self::Check,
            Self::Density,
            Self::End,
            Self::PlanGround,
        ]
        .into_iter()
        .find(|o| *o as u8 == b)
    }
}

/// The snow that a run over ranks splits: `setup`'s, refused with the reason where there is
/// none or where its parcels are split across devices too (not yet). Rank 0 and every other
/// rank check it alike.
pub(super) fn shared_snow(setup: &SimSetup) -> Result<&SnowConfig> {
    let Some(scene) = &setup.scene else {
        return Err(nothing_to_split());
    };
    if scene.split.is_some() {
        return Err(Error::InvalidParameter(
            "the parcels split across ranks and across the devices of a rank \
             (--snow-devices) at once: not yet; give one or the other"
                .into(),
        ));
    }
    scene.snow.as_ref().ok_or_else(nothing_to_split)
}

/// Why a run without snow cannot be split across ranks.
fn nothing_to_split() -> Error {
    Error::InvalidParameter(
        "nothing to split across ranks: the scene simulates no snow (or the particles are \
         still)"
            .into(),
    )
}

/// Every rank's share (`shares`: first id, parcels per rank), rank 0's (on `device`) first,
/// as `--json`'s `snow_devices` lists them.
pub fn report(shares: &[(u32, usize)], device: &DeviceInfo) -> Vec<ShareReport> {
    let total: usize = shares.iter().map(|s| s.1).sum();
    shares
        .iter()
        .enumerate()
        .map(|(rank, &(first, particles))| ShareReport {
            device: match rank {
                0 => format!("rank 0: {}", device.label()),
                r => format!("rank {r}"),
            },
            first,
            particles,
            fraction: particles as f64 / total.max(1) as f64,
        })
        .collect()
}

/// A share of the parcels on another rank, as rank 0 sees it.
struct Peer {
    rank: usize,
    particles: usize,
    /// Whether its reply to the last frame's order is still to be received.
    awaiting: bool,
    /// Its last landings, alive until `added` completes.
    pairs: Vec<[u64; 2]>,
    added: Option<Event>,
    /// Its next cells (with suspension), alive until `merged` completes.
    cells: Option<FrameCellsHost>,
    merged: Vec<Event>,
}

/// Rank 0's side of the split: the other ranks' shares, reached through `comm`.
pub struct RankPeers {
    comm: Box<dyn Comm>,
    /// Rank 0's context, whose queue reads the peers' host buffers (finished on drop).
    context: Context,
    peers: Vec<Peer>,
    /// Bytes sent and received per exchange kind, summed (the report's traffic).
    pub(super) traffic: RankTraffic,
}

/// Bytes rank 0 exchanged with the others since the start.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RankTraffic {
    pub landings: u64,
    pub cells: u64,
    pub frames: u64,
}

impl RankPeers {
    /// The other ranks of `comm`, holding `shares[1..]` (first id, parcels) of the run's
    /// parcels; `context` is rank 0's; `coarse_cells` the suspension's cells when it is on.
    pub fn new(
        context: &Context,
        comm: Box<dyn Comm>,
        shares: &[(u32, usize)],
        coarse_cells: Option<usize>,
    ) -> Result<Self> {
        if shares.len() != comm.size() {
            return Err(Error::Internal(format!(
                "{} shares of the parcels for {} ranks",
                shares.len(),
                comm.size()
            )));
        }
        let mut peers = Vec::new();
        for (rank, &(_, particles)) in shares.iter().enumerate().skip(1) {
            let cells = match coarse_cells {
                Some(n) => Some(FrameCellsHost::new(context, n)?),
                None => None,
            };
            peers.push(Peer {
                rank,
                particles,
                awaiting: false,
                pairs: Vec::new(),
                added: None,
                cells,
                merged: Vec::new(),
            });
        }
        Ok(Self {
            comm,
            context: context.clone(),
            peers,
            traffic: RankTraffic::default(),
        })
    }

    /// The ranks' parcels, summed.
    pub fn particles(&self) -> usize {
        self.peers.iter().map(|p| p.particles).sum()
    }

    /// Sends every rank the frame's order: `dt` and the cells rank 0 lifted (`cells`, read
    /// and waited for; `None` without suspension).
    pub fn send_frame(&mut self, dt: f32, cells: Option<&FrameCellsHost>) -> Result<()> {
        let mut order = vec![Order::Frame as u8];
        order.extend_from_slice(&dt.to_le_bytes());
        order.push(u8::from(cells.is_some()));
        let mut cell_bytes = 0;
        if let Some(c) = cells {
            let before = order.len();
            order.extend_from_slice(bytemuck::cast_slice(c.count.as_slice()));
            order.extend_from_slice(bytemuck::cast_slice(c.first.as_slice()));
            order.extend_from_slice(bytemuck::cast_slice(c.pool.as_slice()));
            cell_bytes = order.len() - before;
        }
        for p in &mut self.peers {
            self.comm.send(p.rank, ORDER_TAG, &order)?;
            p.awaiting = true;
            self.traffic.cells += cell_bytes as u64;
        }
        // The order (the cells: 0.2 MB on the valley) travels now, while this rank's own
        // step runs, rather than when this rank next waits for a reply.
        self.comm.flush_sends()?;
        Ok(())
    }

    /// Receives every rank's reply to the frame's order and adds their landings to `snow`'s
    /// cover (through `incoming`) and their next cells to its suspension's, in order on
    /// `context`'s queue after its own step, without waiting for the device.
    pub fn gather(
        &mut self,
        context: &Context,
        snow: &mut Snow,
        incoming: &mut LandingsIn,
        timeline: &mut Timeline,
    ) -> Result<()> {
        for p in &mut self.peers {
            p.awaiting = false;
            let reply = reply(&*self.comm, p.rank, "its landings")?;
            let mut r = Reader::new(&reply, p.rank);
            let n = r.u64()? as usize;
            // The last frame's copies out of these host buffers are done before they change.
            let earlier: Vec<Event> = p
                .added
                .take()
                .into_iter()
                .chain(p.merged.drain(..))
                .collect();
            wait_for(&earlier)?;
            p.pairs = r.pod_vec::<[u64; 2]>(n)?;
            self.traffic.landings += 8 + 16 * n as u64;
            // SAFETY: `pairs` stays alive and unchanged until `added` completes: the next
            // frame waits for it above, and Drop finishes the queue first.
            p.added =
                unsafe { incoming.enqueue_add(context, snow.cover_mut(), &p.pairs, timeline) }?;
            if let Some(cells) = p.cells.as_mut() {
                let c = cells.count.len();
                cells
                    .count
                    .as_mut_slice()
                    .copy_from_slice(&r.pod_vec::<u32>(c)?);
                cells
                    .first
                    .as_mut_slice()
                    .copy_from_slice(&r.pod_vec::<u32>(c)?);
                self.traffic.cells += 8 * c as u64;
                // SAFETY: as `pairs`, until `merged` completes.
                if let Some(copies) = unsafe { snow.enqueue_merge_cells(context, cells, timeline) }?
                {
                    p.merged.extend(copies);
                }
            }
            r.end()?;
        }
        self.traffic.frames += 1;
        Ok(())
    }

    /// Sends `order` (with `payload`) to every rank and returns their replies, in rank order.
    fn ask(&self, order: Order, payload: &[u8], what: &'static str) -> Result<Vec<Vec<u8>>> {
        let mut message = vec![order as u8];
        message.extend_from_slice(payload);
        for p in &self.peers {
            self.comm.send(p.rank, ORDER_TAG, &message)?;
        }
        // Every reply is read, failed or not, before the first error is returned: the ranks
        // after a failed one are not left waiting with theirs.
        let replies: Vec<Result<Vec<u8>>> = self
            .peers
            .iter()
            .map(|p| reply(&*self.comm, p.rank, what))
            .collect();
        replies.into_iter().collect()
    }

    /// Puts the ranks' parcels at their start and clears their covers (blocking).
    pub fn reset(&mut self) -> Result<()> {
        self.ask(Order::Reset, &[], "its reset").map(|_| ())
    }

    /// Has the ranks plan raising their wind's ground by `raise` beside their frames, for the
    /// [`regrade`](Self::regrade) by the same raise that follows.
    pub fn plan_ground(&mut self, raise: &[f64]) -> Result<()> {
        self.ask(
            Order::PlanGround,
            bytemuck::cast_slice(raise),
            "its ground plan",
        )
        .map(|_| ())
    }

    /// Switches the ranks' sort mode.
    pub fn set_sort(&mut self, mode: SortMode) -> Result<()> {
        let byte = match mode {
            SortMode::Off => 0,
            SortMode::Full => 1,
            SortMode::Partial => 2,
        };
        self.ask(Order::Sort, &[byte], "its sort mode").map(|_| ())
    }

    /// Raises the ranks' wind ground by `raise` (per ground vertex, m, as rank 0's wind
    /// was: [`super::coupling::WindField::apply_ground`]), moves their snows' meshes with
    /// it and finds their parcels again (blocking); returns the parcels moved up and lost,
    /// summed.
    pub fn regrade(&mut self, raise: &[f64]) -> Result<(u64, u64)> {
        let replies = self.ask(Order::Regrade, bytemuck::cast_slice(raise), "its regrade")?;
        let mut moved = (0, 0);
        for (p, reply) in self.peers.iter().zip(&replies) {
            let mut r = Reader::new(reply, p.rank);
            moved.0 += r.u64()?;
            moved.1 += r.u64()?;
            r.end()?;
        }
        Ok(moved)
    }

    /// The ranks' counters (blocking).
    pub fn counters(&self) -> Result<Vec<Counters>> {
        let replies = self.ask(Order::Counters, &[], "its counters")?;
        self.peers
            .iter()
            .zip(&replies)
            .map(|(p, reply)| {
                let mut r = Reader::new(reply, p.rank);
                let c = decode_counters(&mut r)?;
                r.end()?;
                Ok(c)
            })
            .collect()
    }

    /// The units the ranks' parcels carry in suspension, summed (blocking).
    pub fn suspended_units(&self) -> Result<u128> {
        let replies = self.ask(Order::Suspended, &[], "its suspended snow")?;
        let mut units = 0u128;
        for (p, reply) in self.peers.iter().zip(&replies) {
            let mut r = Reader::new(reply, p.rank);
            let bytes: [u8; 16] = r.take(16)?.try_into().map_err(|_| r.short(16))?;
            units += u128::from_le_bytes(bytes);
            r.end()?;
        }
        Ok(units)
    }

    /// Has every rank check that each id of its share is present once, and that its wind
    /// is rank 0's bit for bit (`field`: rank 0's velocity field; blocking).
    pub fn check(&self, field: &[[f32; 4]]) -> Result<()> {
        let own = field_digest(field);
        let replies = self.ask(Order::Check, &[], "its check")?;
        for (p, reply) in self.peers.iter().zip(&replies) {
            let mut r = Reader::new(reply, p.rank);
            let theirs = r.u64()?;
            r.end()?;
            if theirs != own {
                return Err(Error::Rank {
                    rank: p.rank,
                    message: "its wind field differs from rank 0's: each rank solves the same \
                              wind, which holds bit for bit only on devices of one model"
                        .into(),
                });
            }
        }
        Ok(())
    }

    /// Adds each rank's relative density of falling snow, weighted by `weights` (in rank
    /// order, rank 0's left out), to `blended` (blocking).
    pub fn add_density(&self, blended: &mut RelativeDensity, weights: &[f64]) -> Result<()> {
        let replies = self.ask(Order::Density, &[], "its snow density")?;
        for ((p, reply), &w) in self.peers.iter().zip(&replies).zip(weights) {
            let mut r = Reader::new(reply, p.rank);
            let theirs = r.pod_vec::<f32>(blended.values.len())?;
            r.end()?;
            for (v, t) in blended.values.iter_mut().zip(&theirs) {
                *v += w as f32 * t;
            }
        }
        Ok(())
    }
}

impl Drop for RankPeers {
    /// Ends the other ranks: receives the replies of a frame that stopped before its
    /// gather (a rank that waits for its reply to be taken is released), then sends each an
    /// end; the queue that reads the peers' buffers is finished first.
    fn drop(&mut self) {
        let _ = self.context.finish();
        for p in &self.peers {
            if p.awaiting {
                let _ = self
                    .comm
                    .recv(p.rank, REPLY_TAG, "its landings, at the end");
            }
            // A rank already gone needs no end.
            let _ = self.comm.send(p.rank, ORDER_TAG, &[Order::End as u8]);
        }
    }
}

/// Rank 0's reply from `rank`: its payload, or the error it reports.
fn reply(comm: &dyn Comm, rank: usize, what: &'static str) -> Result<Vec<u8>> {
    let mut bytes = comm.recv(rank, REPLY_TAG, what)?;
    match bytes.first() {
        Some(0) => {
            bytes.remove(0);
            Ok(bytes)
        }
        Some(_) => Err(Error::Rank {
            rank,
            message: String::from_utf8_lossy(&bytes[1..]).into_owned(),
        }),
        None => Err(Error::Rank {
            rank,
            message: format!("an empty reply for {what}"),
        }),
    }
}

/// The share of the parcels of a rank other than 0: its snow, driven by rank 0's orders.
pub struct RankFollower {
    comm: Box<dyn Comm>,
    context: Context,
    snow: Snow,
    render: DeviceBuffer<Particle>,
    /// The same wind as rank 0's, solved here too.
    wind: WindField,
    landed: LandingsOut,
    /// The cells from rank 0, and the next cells back (with suspension).
    cells: Option<(FrameCellsHost, FrameCellsHost)>,
    timeline: Timeline,
    /// Whether the next frame's sort is queued already (right after the last frame's reply:
    /// it needs nothing of the next frame's, and runs while the order is on its way).
    sorted_ahead: bool,
    /// Whether the order being carried out was replied to already (a frame, before its wind
    /// steps).
    replied: bool,
    /// A ground refresh planned beside the frames ([`Order::PlanGround`]) and its raise.
    planned: Option<(Vec<f64>, super::refresh::PendingRefresh)>,
}

impl RankFollower {
    /// This rank's share, `shares[comm.rank()]` of the run's `total` parcels, of a snow set up
    /// as `config` over `domain` (its drift off: rank 0's cover drifts), in `wind` (set up
    /// as rank 0's), on `context`.
    pub fn new(
        context: &Context,
        comm: Box<dyn Comm>,
        domain: &DomainMesh,
        config: &SnowConfig,
        wind: WindField,
        shares: &[(u32, usize)],
        total: u32,
    ) -> Result<Self> {
        let rank = comm.rank();
        let Some(&(first, n)) = shares.get(rank).filter(|_| rank > 0) else {
            return Err(Error::Internal(format!(
                "rank {rank} follows with {} shares of the parcels",
                shares.len()
            )));
        };
        let (snow, landed) = super::shares::share_snow(context, domain, config, (first, n), total)?;
        let cells = match config.drift.is_some_and(|d| d.suspension) {
            true => {
                let c = snow.cover().mesh.coarse_vertices;
                Some((
                    FrameCellsHost::new(context, c)?,
                    FrameCellsHost::new(context, c)?,
                ))
            }
            false => None,
        };
        Ok(Self {
            render: DeviceBuffer::zeroed(context, n)?,
            wind,
            comm,
            context: context.clone(),
            snow,
            landed,
            cells,
            timeline: Timeline::new(false),
            sorted_ahead: false,
            replied: false,
            planned: None,
        })
    }

    /// This rank's share of `setup`'s parcels (every rank settles the same setup from the
    /// same scene and options), on `context`. An error when the setup simulates no snow.
    pub fn from_setup(context: &Context, comm: Box<dyn Comm>, setup: SimSetup) -> Result<Self> {
        let config = shared_snow(&setup)?.clone();
        let Some(scene) = setup.scene else {
            return Err(Error::Internal("a run over ranks without a scene".into()));
        };
        let shares = super::rank_shares(config.particles, comm.size())?;
        let total = super::shares::parcel_ids(config.particles)?;
        // The wind as rank 0 sets it up (its start-up solve too), and ready for the ground
        // refreshes rank 0 will order.
        let mut wind = WindField::new(context, &scene.domain, &scene.wind, setup.dt, &[])?;
        super::simulation::prepare_refreshes(&mut wind, &scene.wind, true)?;
        Self::new(context, comm, &scene.domain, &config, wind, &shares, total)
    }

    /// Serves rank 0's orders until it says [`Order::End`]. Every order gets one reply: an
    /// order that fails is replied with its error, and ends the serving with it; a failure
    /// after a frame's reply went out (its wind steps, the next sort) is replied to the next
    /// order instead. Rank 0 may compute for long between orders (a refresh, a state file):
    /// the wait for one outlasts the communicator's timeout, and ends when rank 0 is gone.
    pub fn serve(&mut self) -> Result<()> {
        let mut failed: Option<Error> = None;
        loop {
            let order = match self.comm.recv(0, ORDER_TAG, "the next order") {
                Err(crate::comm::CommError::Timeout { .. }) => continue,
                order => order?,
            };
            let kind = order.first().and_then(|&b| Order::from_byte(b));
            if kind == Some(Order::End) {
                self.context.finish()?;
                return failed.map_or(Ok(()), Err);
            }
            let outcome = match (failed.take(), kind) {
                (Some(e), _) => Err(e),
                (None, None) => Err(Error::Internal(format!(
                    "rank {}: an order of unknown kind {:?}",
                    self.comm.rank(),
                    order.first()
                ))),
                (None, Some(kind)) => {
                    self.replied = false;
                    self.obey(kind, &order[1..])
                }
            };
            match outcome {
                Ok(payload) => {
                    // A frame replied already, before its wind steps.
                    if let Some(payload) = payload {
                        self.comm.send(0, REPLY_TAG, &ok_reply(payload))?;
                    }
                    if kind == Some(Order::Frame) {
                        // The parcels' order does not change the state: the next frame's
                        // sort runs now, while rank 0 lifts and sends the next order.
                        failed = self.sort_ahead().err();
                    }
                }
                // The frame's reply went out: rank 0 hears of it with the next order.
                Err(e) if self.replied => failed = Some(e),
                Err(e) => {
                    let mut message = vec![1];
                    message.extend_from_slice(e.to_string().as_bytes());
                    // Rank 0 hears of it, or has gone already.
                    let _ = self.comm.send(0, REPLY_TAG, &message);
                    return Err(e);
                }
            }
        }
    }

    /// Queues the next frame's sort now, and submits it.
    fn sort_ahead(&mut self) -> Result<()> {
        self.snow.sort(&mut self.timeline)?;
        self.context.flush()?;
        self.sorted_ahead = true;
        Ok(())
    }

    /// Runs one order and returns its reply's payload (`None`: replied already).
    fn obey(&mut self, kind: Order, payload: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut r = Reader::new(payload, 0);
        let mut out = Vec::new();
        match kind {
            Order::Frame => {
                let dt = f32::from_le_bytes(r.array()?);
                let [has_cells] = r.array()?;
                if (has_cells != 0) != self.cells.is_some() {
                    return Err(Error::Internal(
                        "rank 0 and this rank disagree on the snow in suspension".into(),
                    ));
                }
                if let Some((from, _)) = self.cells.as_mut() {
                    let c = from.count.len();
                    from.count
                        .as_mut_slice()
                        .copy_from_slice(&r.pod_vec::<u32>(c)?);
                    from.first
                        .as_mut_slice()
                        .copy_from_slice(&r.pod_vec::<u32>(c)?);
                    from.pool
                        .as_mut_slice()
                        .copy_from_slice(&r.pod_vec::<u64>(c)?);
                    // SAFETY: the host leaves `from` alone until the frame's wait below.
                    unsafe { self.snow.enqueue_cells(from) }?;
                }
                r.end()?;
                self.snow.check_counter_read()?;
                if !std::mem::take(&mut self.sorted_ahead) {
                    self.snow.sort(&mut self.timeline)?;
                }
                // The snow samples the wind as it stood at the frame's start; its landings
                // are packed, read and sent back, and only then do the frame's wind steps run
                // (the solver waits for its device): rank 0 waits for the landings, and only
                // the next frame for the wind.
                let Self {
                    comm,
                    context,
                    snow,
                    render,
                    wind,
                    landed,
                    cells,
                    timeline,
                    replied,
                    ..
                } = self;
                wind.frame(dt, timeline, |field, _, _, tl| {
                    snow.advance(context, &field, dt, &*render, tl)?;
                    // SAFETY: the pinned memory is read only after `finish` waited for the
                    // events.
                    let mut events = unsafe { landed.enqueue(context, snow.cover_mut(), tl) }?;
                    if let Some((_, next)) = cells.as_mut() {
                        // SAFETY: as the landings': waited for with them below.
                        let read = unsafe { snow.enqueue_read_next_cells(next) }?;
                        events.extend(read.into_iter().flatten());
                    }
                    snow.start_counter_read()?;
                    context.flush()?;
                    landed.finish(&events)?;
                    let pairs = landed.pairs();
                    let mut out = Vec::with_capacity(8 + 16 * pairs.len());
                    out.extend_from_slice(&(pairs.len() as u64).to_le_bytes());
                    out.extend_from_slice(bytemuck::cast_slice(pairs));
                    if let Some((_, next)) = cells.as_ref() {
                        out.extend_from_slice(bytemuck::cast_slice(next.count.as_slice()));
                        out.extend_from_slice(bytemuck::cast_slice(next.first.as_slice()));
                    }
                    comm.send(0, REPLY_TAG, &ok_reply(out))?;
                    *replied = true;
                    comm.flush_sends()?;
                    Ok(())
                })?;
                return Ok(None);
            }
            Order::Reset => {
                self.sorted_ahead = false;
                self.planned = None;
                self.snow
                    .reset(&self.context, &self.render, &mut self.timeline)?;
                self.context.finish()?;
            }
            Order::PlanGround => {
                let raise = r.pod_vec::<f64>(payload.len() / 8)?;
                r.end()?;
                self.planned = match self.wind.ground_planner()? {
                    Some(planner) => {
                        let plan = super::refresh::PendingRefresh::start(
                            planner,
                            raise.clone(),
                            0,
                            0,
                            true,
                        );
                        Some((raise, plan))
                    }
                    None => None,
                };
            }
            Order::Regrade => {
                let raise = r.pod_vec::<f64>(payload.len() / 8)?;
                r.end()?;
                // The plan made beside the frames where it is this raise's, else made now.
                let planned = match self.planned.take() {
                    Some((planned, pending)) if planned == raise => Some(pending.wait()?),
                    _ => match self.wind.ground_planner()? {
                        Some(planner) => Some(super::refresh::Planned::new(&planner, &raise)?),
                        None => None,
                    },
                };
                let mut moved = (0, 0);
                if let Some(super::refresh::Planned {
                    mut plan,
                    snow_coords,
                }) = planned
                    && let Some(stats) = self.wind.apply_ground(&mut plan)?
                    && !stats.skipped
                {
                    moved = self
                        .snow
                        .regrade(&self.context, plan.vertices(), snow_coords)?;
                }
                out.extend_from_slice(&moved.0.to_le_bytes());
                out.extend_from_slice(&moved.1.to_le_bytes());
            }
            Order::Sort => {
                let [mode] = r.array()?;
                let mode = match mode {
                    0 => SortMode::Off,
                    1 => SortMode::Full,
                    2 => SortMode::Partial,
                    m => {
                        return Err(Error::Internal(format!("a sort mode of unknown kind {m}")));
                    }
                };
                self.snow.set_sort(mode)?;
            }
            Order::Counters => {
                self.snow.check_counter_read()?;
                encode_counters(&self.snow.counters()?, &mut out);
            }
            Order::Suspended => {
                let units: u128 = self
                    .snow
                    .particles()
                    .suspended_units()?
                    .iter()
                    .map(|&u| u128::from(u))
                    .sum();
                out.extend_from_slice(&units.to_le_bytes());
            }
            Order::Check => {
                self.snow.check_ids()?;
                self.wind.check()?;
                let field = self.wind.velocity()?;
                out.extend_from_slice(&field_digest(&field).to_le_bytes());
            }
            Order::Density => {
                let density = self.snow.flake_density()?;
                out.extend_from_slice(bytemuck::cast_slice(&density.values));
            }
            Order::End => {}
        }
        Ok(Some(out))
    }
}

/// A reply saying the order was carried out, with its payload.
fn ok_reply(payload: Vec<u8>) -> Vec<u8> {
    let mut reply = Vec::with_capacity(1 + payload.len());
    reply.push(0);
    reply.extend_from_slice(&payload);
    reply
}

/// A digest of a velocity field's bits: equal on two ranks when their fields are, bit for
/// bit (the same binary computes it on both).
pub fn field_digest(field: &[[f32; 4]]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(bytemuck::cast_slice(field));
    hasher.finish()
}

/// The counters as 11 little-endian u64s.
fn encode_counters(c: &Counters, out: &mut Vec<u8>) {
    for v in [
        c.landed,
        c.top,
        c.wrapped,
        c.closed,
        c.lost,
        c.nonfinite,
        u64::from(c.first_bad),
        c.other,
        c.deposited,
        c.laid_suspended,
        c.exited_suspended,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// [`encode_counters`] read back.
fn decode_counters(r: &mut Reader<'_>) -> Result<Counters> {
    let mut v = [0u64; 11];
    for x in &mut v {
        *x = r.u64()?;
    }
    Ok(Counters {
        landed: v[0],
        top: v[1],
        wrapped: v[2],
        closed: v[3],
        lost: v[4],
        nonfinite: v[5],
        first_bad: u32::try_from(v[6]).unwrap_or(u32::MAX),
        other: v[7],
        deposited: v[8],
        laid_suspended: v[9],
        exited_suspended: v[10],
    })
}

/// Reads a message's parts in order; a message too short or too long is an error naming the
/// rank it came from.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    rank: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], rank: usize) -> Self {
        Self { bytes, at: 0, rank }
    }

    fn short(&self, wanted: usize) -> Error {
        Error::Rank {
            rank: self.rank,
            message: format!(
                "a message of {} bytes ends before byte {}",
                self.bytes.len(),
                self.at + wanted
            ),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.short(n));
        };
        let part = &self.bytes[self.at..end];
        self.at = end;
        Ok(part)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let part = self.take(N)?;
        part.try_into().map_err(|_| self.short(N))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// `n` values of `T`, copied out (the message's bytes need not be aligned for `T`).
    fn pod_vec<T: bytemuck::Pod>(&mut self, n: usize) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>();
        let bytes = self.take(n.checked_mul(size).ok_or_else(|| self.short(usize::MAX))?)?;
        Ok(bytemuck::pod_collect_to_vec(bytes))
    }

    fn end(&self) -> Result<()> {
        match self.at == self.bytes.len() {
            true => Ok(()),
            false => Err(Error::Rank {
                rank: self.rank,
                message: format!(
                    "a message of {} bytes where {} were expected",
                    self.bytes.len(),
                    self.at
                ),
            }),
        }
    }
}
