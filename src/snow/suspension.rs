//! Snow in suspension: where the friction velocity exceeds the threshold, the wind lifts laid
//! snow into the parcels of the bottom layer of air, which carry it with the wind and lay it
//! again where they land, by the same segment test as falling snow (`kernels/snow_suspend.cl`,
//! the hand-out and the landing in `kernels/snow.cl`).
//!
//! # The law
//!
//! Suspension needs saltation to feed it: it starts at the same threshold `u*t` (Pomeroy, Gray &
//! Landine 1993, *The Prairie Blowing Snow Model*, J. Hydrology 144: no suspended snow where
//! their saltation concentration is not positive, `u* ≤ u*t`). Above it the concentration of
//! suspended snow falls with height as Pomeroy & Male (1992, *Steady-state suspension of snow*,
//! J. Hydrology 136) fitted it, as the Prairie Blowing Snow Model codes it,
//!
//! `c(z) = 0.8 exp(−1.55 (z_r^−0.544 − z^−0.544))` kg/m³, `z_r = 0.05628 u*` m,
//!
//! and in a steady profile the snow rising through a height balances the snow settling through
//! it, `w_s c(z)`. So the wind lifts `E = w_s(z_e) c(z_e)` kg m⁻² s⁻¹ into the model's air,
//! the reference-concentration pickup of sediment models (van Rijn 1984, *Sediment pick-up
//! functions*, J. Hydraulic Engineering 110), at `z_e` half the first level above the ground
//! (the middle of the bottom layer of tetrahedra, where the parcels that take it are), with the
//! settling speed of the Prairie Blowing Snow Model's grains, `w_s = 1.1·10⁷ r^1.8` m/s for a
//! mean radius `r = 4.6·10⁻⁵ z^−0.258` m (30 µm from 5 m up). At 7 m: `E ≈ 2·10⁻⁶` kg m⁻² s⁻¹
//! at `u* = 0.5` m/s, `6·10⁻⁵` at 1 m/s (about 2 mm of fresh snow an hour).
//!
//! # Exact and order-free
//!
//! Each cover vertex lifts `min(volume, ⌊a E A Δt / (ρ_snow · unit)⌋)` units (`a` the
//! morphological factor, `A` its area) from the cover as it stood at the frame's start, in a
//! kernel of its own before any landing, but only where its cell, the wind mesh's ground vertex
//! it belongs to (its parent of largest numerator), holds a parcel of the bottom layer: the
//! units of a cell with no parcel stay on the ground. A parcel's cell is the ground vertex of
//! its tetrahedron nearest to it horizontally (computed without fused multiply-adds, so that the
//! count at the end of a step and the share at the start of the next agree bit for bit); the
//! parcels of each cell are counted at
//! the end of every step (a count and the smallest id, integer atomics on commutative
//! operations), and at the start of the next each takes `⌊P / k⌋` of its cell's `P` lifted
//! units, the cell's smallest id the remainder: what a parcel gets depends on its id and the
//! cell's totals, never on the array's order, so the sort mode changes nothing.
//!
//! A parcel lays what it carries with its own snow when it lands, and takes it out of the
//! domain when it leaves through the top, a closed side or lost; a wrap keeps it. The lifted
//! snow moves one to one (ground, parcel, ground): the acceleration multiplies the lifting, as
//! it multiplies saltation's transport, and the carried snow is conserved whatever the
//! acceleration does meanwhile. The ledger holds it: carried = parcels' own + Σ suspended, and
//! Σ suspended = lifted − laid − taken out, checked apart.
//!
//! The carriers fall at their flakes' speed (about 1 m/s), not at `w_s`: they hold the lifted
//! snow about ten times more briefly than real grains would, and their hops (`U(z_e) z_e / v_t`,
//! about 100 m at `u* = 1`) still reach beyond saltation's 20 m.

use crate::cl::{Context, DeviceBuffer, Kernel, Program, Timeline};

use super::Result;
use super::cover::GroundCover;
use super::drift::{Drift, DriftSettings};

/// The reference height of the suspended concentration over the friction velocity, s (`z_r =
/// 0.05628 u*`, the Prairie Blowing Snow Model's eq. 5.27 as coded).
pub const REFERENCE_HEIGHT: f64 = 0.05628;

/// The suspended snow's concentration at `height` m above the snow under a friction velocity
/// `u` m/s, kg/m³ (Pomeroy & Male 1992); 0 for a non-positive `u`.
pub fn concentration(u: f64, height: f64) -> f64 {
    if u <= 0.0 {
        return 0.0;
    }
    let zr = REFERENCE_HEIGHT * u;
    0.8 * (-1.55 * (zr.powf(-0.544) - height.powf(-0.544))).exp()
}

/// The settling speed of suspended snow grains at `height` m, m/s (the Prairie Blowing Snow
/// Model's `Ω = 1.1·10⁷ r^1.8` for its mean radius there).
pub fn settling_speed(height: f64) -> f64 {
    let radius = if height >= 5.0 {
        30e-6
    } else {
        4.6e-5 * height.powf(-0.258)
    };
    1.1e7 * radius.powf(1.8)
}

/// The snow the wind lifts into the air at `height` m above the snow under friction velocity
/// `u`, kg m⁻² s⁻¹: `w_s c`, 0 at or below the threshold of `settings`.
pub fn lift_rate(settings: &DriftSettings, u: f64, height: f64) -> f64 {
    if u <= settings.threshold {
        return 0.0;
    }
    settling_speed(height) * concentration(u, height)
}

/// The suspension's cell of each cover vertex: its coarse parent of largest numerator (the
/// lower id on a tie).
pub fn cells_of(parents: &[([u32; 3], [u8; 3])]) -> Vec<u32> {
    parents
        .iter()
        .map(|(p, n)| {
            let mut best = (p[0], n[0]);
            for k in 1..3 {
                if n[k] > best.1 || (n[k] == best.1 && n[k] > 0 && p[k] < best.0) {
                    best = (p[k], n[k]);
                }
            }
            best.0
        })
        .collect()
}

/// Per cover vertex, `z_e^−0.544` and `w_s(z_e) A` (m³/s): `z_e` half its first level's height
/// (mixed from its coarse parents' `level_height` by their numerators), `A` its area. The law
/// on the host, in `f64`: the device computes it (`suspend_sites`, in `float`, at set-up and
/// after each ground refresh, off the host's path); this is its tests' reference.
pub fn suspension_sites(cover: &GroundCover, level_height: &[f32]) -> Vec<[f32; 2]> {
    let r = f64::from(cover.mesh.refinement.max(1));
    cover
        .mesh
        .parents
        .iter()
        .zip(&cover.geometry.area)
        .map(|((p, n), &area)| {
            let z1: f64 = p
                .iter()
                .zip(n)
                .take_while(|(_, n)| **n > 0)
                .map(|(&g, &n)| f64::from(n) / r * f64::from(level_height[g as usize]))
                .sum();
            let z = (0.5 * z1).max(1e-3);
            [
                z.powf(-0.544) as f32,
                (settling_speed(z) * f64::from(area)) as f32,
            ]
        })
        .collect()
}

/// The per-frame buffers `snow_step` reads and writes (see [`Suspension::frame`]).
pub(crate) struct FrameCells<'a> {
    /// Parcels per cell, counted at the end of the last step.
    pub count: &'a DeviceBuffer<u32>,
    /// The smallest id per cell among them.
    pub first: &'a DeviceBuffer<u32>,
    /// Units lifted this frame per cell.
    pub pool: &'a DeviceBuffer<u64>,
    /// Parcels per cell at the end of this step (for the next frame).
    pub next_count: &'a DeviceBuffer<u32>,
    /// Their smallest id.
    pub next_first: &'a DeviceBuffer<u32>,
}

/// The cells of a device that steps a share of the parcels while another device's snow lifts
/// the snow (`--snow-devices`): this frame's counts, smallest ids and pools, written from
/// the lifting device before the step, and the counts the step makes for the next frame,
/// handed back to be summed there.
pub struct SharedCells {
    count: DeviceBuffer<u32>,
    first: DeviceBuffer<u32>,
    pool: DeviceBuffer<u64>,
    next_count: DeviceBuffer<u32>,
    next_first: DeviceBuffer<u32>,
}

impl SharedCells {
    /// Cells for `cells` coarse ground vertices, empty (the first frame lifts nothing).
    pub fn new(context: &Context, cells: usize) -> Result<Self> {
        let n = cells.max(1);
        Ok(Self {
            count: DeviceBuffer::zeroed(context, n)?,
            first: DeviceBuffer::from_slice(context, &vec![u32::MAX; n])?,
            pool: DeviceBuffer::zeroed(context, n)?,
            next_count: DeviceBuffer::zeroed(context, n)?,
            next_first: DeviceBuffer::from_slice(context, &vec![u32::MAX; n])?,
        })
    }

    /// The buffers this frame's particle step reads and writes.
    pub(crate) fn frame(&self) -> FrameCells<'_> {
        FrameCells {
            count: &self.count,
            first: &self.first,
            pool: &self.pool,
            next_count: &self.next_count,
            next_first: &self.next_first,
        }
    }

    /// Starts writing this frame's counts, smallest ids and pools (`cells`, the lifting
    /// device's, [`Suspension::enqueue_read_frame`]) and clearing the next frame's counts, without
    /// waiting; in order before the step on this queue.
    ///
    /// # Safety
    ///
    /// `cells` must stay alive and unchanged until this queue has run the writes.
    pub(crate) unsafe fn enqueue_frame(&mut self, cells: &FrameCellsHost) -> Result<()> {
        // SAFETY: forwarded to the caller.
        unsafe {
            self.count.enqueue_write_from(cells.count.as_slice())?;
            self.first.enqueue_write_from(cells.first.as_slice())?;
            self.pool.enqueue_write_from(cells.pool.as_slice())?;
        }
        self.next_count.enqueue_fill(0)?;
        self.next_first.enqueue_fill(u32::MAX)?;
        Ok(())
    }

    /// Starts reading the counts and smallest ids the step made into `into`, without
    /// waiting; returns the events.
    ///
    /// # Safety
    ///
    /// `into` must stay alive and untouched by the host until the events complete.
    pub(crate) unsafe fn enqueue_read_next(
        &self,
        into: &mut FrameCellsHost,
    ) -> Result<[opencl3::event::Event; 2]> {
        // SAFETY: forwarded to the caller.
        unsafe {
            Ok([
                into.count.enqueue_read_from(&self.next_count)?,
                into.first.enqueue_read_from(&self.next_first)?,
            ])
        }
    }

    /// Forgets this frame's cells (the parcels moved, or a reset): the next step takes
    /// nothing.
    pub fn forget(&mut self) -> Result<()> {
        empty_cells(&mut self.count, &mut self.first, &mut self.pool)
    }
}

/// Empties a frame's cells: no parcel counted (count 0, no smallest id), nothing to share
/// out (blocking).
fn empty_cells(
    count: &mut DeviceBuffer<u32>,
    first: &mut DeviceBuffer<u32>,
    pool: &mut DeviceBuffer<u64>,
) -> Result<()> {
    count.fill(0)?;
    first.fill(u32::MAX)?;
    pool.fill(0)?;
    Ok(())
}

/// A frame's cells in pinned host memory: the lifting device's counts, smallest ids and
/// pools going out to the devices with a share of the parcels, and their next counts and
/// smallest ids coming back (the pools unused then).
pub struct FrameCellsHost {
    /// Parcels per cell.
    pub count: crate::cl::PinnedBuffer<u32>,
    /// Their smallest id.
    pub first: crate::cl::PinnedBuffer<u32>,
    /// Units to share out per cell.
    pub pool: crate::cl::PinnedBuffer<u64>,
}

impl FrameCellsHost {
    /// Pinned cells for `cells` coarse ground vertices, on `context`.
    pub fn new(context: &Context, cells: usize) -> Result<Self> {
        let n = cells.max(1);
        Ok(Self {
            count: crate::cl::PinnedBuffer::new(context, n)?,
            first: crate::cl::PinnedBuffer::new(context, n)?,
            pool: crate::cl::PinnedBuffer::new(context, n)?,
        })
    }
}

/// The suspension on the device: each cover vertex's cell and site, the cells' counts and
/// pools (two of each, this frame's and the next's, in turn) and the lifting kernel.
pub struct Suspension {
    settings: DriftSettings,
    cell: DeviceBuffer<u32>,
    site: DeviceBuffer<[f32; 2]>,
    count: [DeviceBuffer<u32>; 2],
    first: [DeviceBuffer<u32>; 2],
    pool: [DeviceBuffer<u64>; 2],
    /// Which of the pairs this frame reads (its counts) and fills (its pool).
    current: usize,
    cells: usize,
    /// Units lifted since the reset, in 64 slots summed on the host.
    lifted: DeviceBuffer<u64>,
    erode: Kernel,
    merge: Kernel,
    sites: Kernel,
    /// Another device's next counts and smallest ids on their way in.
    incoming: Option<(DeviceBuffer<u32>, DeviceBuffer<u32>)>,
}

impl Suspension {
    /// The suspension over `cover`, whose coarse vertices have their first levels as `drift`
    /// holds them on the device, with `program`'s kernels (`kernels/snow_suspend.cl`).
    pub fn new(
        context: &Context,
        program: &Program,
        cover: &GroundCover,
        drift: &Drift,
        settings: DriftSettings,
    ) -> Result<Self> {
        let cells = cover.mesh.coarse_vertices;
        let cell = cells_of(&cover.mesh.parents);
        let per_cell = cells.max(1);
        let mut s = Self {
            settings,
            cell: DeviceBuffer::from_slice(context, &cell)?,
            site: DeviceBuffer::zeroed(context, cover.geometry.len().max(1))?,
            count: [
                DeviceBuffer::zeroed(context, per_cell)?,
                DeviceBuffer::zeroed(context, per_cell)?,
            ],
            first: [
                DeviceBuffer::zeroed(context, per_cell)?,
                DeviceBuffer::zeroed(context, per_cell)?,
            ],
            pool: [
                DeviceBuffer::zeroed(context, per_cell)?,
                DeviceBuffer::zeroed(context, per_cell)?,
            ],
            current: 0,
            cells,
            lifted: DeviceBuffer::zeroed(context, 64)?,
            erode: program.kernel("suspend_erode")?,
            merge: program.kernel("suspend_merge")?,
            sites: program.kernel("suspend_sites")?,
            incoming: None,
        };
        s.regrade(context, cover, drift)?;
        s.reset()?;
        Ok(s)
    }

    /// Forgets every count and pool: the next frame lifts nothing (no parcel has been counted
    /// in a cell yet).
    pub fn reset(&mut self) -> Result<()> {
        self.forget_cells()?;
        self.lifted.fill(0)?;
        self.current = 0;
        Ok(())
    }

    /// Enqueues this frame's lifting from `cover` under the friction velocity `friction` (per
    /// cover vertex) over `morphological_dt` seconds (the frame's step times the morphological
    /// factor); every frame, before the particle step.
    pub(crate) fn erode(
        &mut self,
        context: &Context,
        cover: &mut GroundCover,
        friction: &DeviceBuffer<[f32; 2]>,
        threshold: &DeviceBuffer<f32>,
        morphological_dt: f64,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let nv = cover.geometry.len();
        if nv == 0 {
            return Ok(());
        }
        let unit = cover.unit_volume();
        let s = &self.settings;
        let scale = if unit > 0.0 && morphological_dt > 0.0 {
            morphological_dt / (s.snow_density * unit)
        } else {
            0.0
        };
        let law = [0.0, REFERENCE_HEIGHT as f32, scale as f32, 0.0];
        let (now, stale) = (self.current, 1 - self.current);
        let mut call = self.erode.call();
        // SAFETY: friction, cell, site and the volumes hold nv values; cell names cells below
        // `cells`, the length of the counts and pools; `lifted` has 64 slots; the kernel guards
        // its id.
        unsafe {
            call.buffer(friction)?
                .buffer(threshold)?
                .buffer(&self.cell)?
                .buffer(&self.site)?
                .buffer(&cover.volume)?
                .buffer(&self.count[now])?
                .buffer(&self.pool[now])?
                .buffer(&self.pool[stale])?
                .buffer(&self.count[stale])?
                .buffer(&self.first[stale])?
                .buffer(&self.lifted)?
                .arg(&(nv as u32))?
                .arg(&(self.cells as u32))?
                .arg(&law)?;
        }
        call.enqueue_into(context, self.erode.work_size(context, nv)?, timeline)?;
        Ok(())
    }

    /// The buffers this frame's particle step reads (counts, smallest ids, pools) and writes
    /// (the next frame's counts).
    pub(crate) fn frame(&self) -> FrameCells<'_> {
        let (now, next) = (self.current, 1 - self.current);
        FrameCells {
            count: &self.count[now],
            first: &self.first[now],
            pool: &self.pool[now],
            next_count: &self.count[next],
            next_first: &self.first[next],
        }
    }

    /// Enqueues computing the heights the lifted snow enters the air at (each cover vertex's
    /// site, [`suspension_sites`]' law) from the first levels' heights as `drift` holds them on the
    /// device: at set-up and after a ground refresh moved them. Only enqueues.
    pub fn regrade(&mut self, context: &Context, cover: &GroundCover, drift: &Drift) -> Result<()> {
        let n = cover.geometry.len();
        if n == 0 {
            return Ok(());
        }
        let (parents, level_height) = drift.device_levels();
        let inv_r = 1.0 / cover.mesh.refinement.max(1) as f32;
        let mut timeline = Timeline::new(false);
        let mut call = self.sites.call();
        // SAFETY: parents, area and site hold n values (one per cover vertex), parents name
        // coarse vertices below level_height's length (built from the same cover); the kernel
        // guards its id.
        unsafe {
            call.buffer(parents)?
                .buffer(level_height)?
                .buffer(&cover.area)?
                .buffer(&self.site)?
                .arg(&(n as u32))?
                .arg(&inv_r)?;
        }
        call.enqueue_into(context, self.sites.work_size(context, n)?, &mut timeline)?;
        Ok(())
    }

    /// Each cover vertex's site as the device holds it: `z_e^−0.544` and `w_s(z_e) A`
    /// ([`suspension_sites`]; blocking).
    pub fn site_values(&self) -> Result<Vec<[f32; 2]>> {
        Ok(self.site.read()?)
    }

    /// Units the wind lifted into suspension since the reset (blocking).
    pub fn lifted(&self) -> Result<u64> {
        Ok(self.lifted.read()?.iter().sum())
    }

    /// Forgets the cells' counts and pools only (the parcels moved): the next frame lifts
    /// nothing; what was lifted so far stays counted.
    pub fn forget_cells(&mut self) -> Result<()> {
        for k in 0..2 {
            empty_cells(&mut self.count[k], &mut self.first[k], &mut self.pool[k])?;
        }
        Ok(())
    }

    /// The parcels of the bottom layer per cell that the next frame shares its lifted snow
    /// among (counted at the end of the last step; blocking).
    pub fn cell_counts(&self) -> Result<Vec<u32>> {
        Ok(self.count[self.current].read()?)
    }

    /// Each cover vertex's cell (its coarse parent of largest numerator).
    pub fn cells(&self) -> Result<Vec<u32>> {
        Ok(self.cell.read()?)
    }

    /// Starts reading this frame's counts, smallest ids and pools into `into` (after this
    /// frame's lifting, before its step), for the devices with a share of the parcels;
    /// returns the reads' events.
    ///
    /// # Safety
    ///
    /// `into` must stay alive and untouched by the host until the events complete.
    pub(crate) unsafe fn enqueue_read_frame(
        &self,
        into: &mut FrameCellsHost,
    ) -> Result<[opencl3::event::Event; 3]> {
        let now = self.current;
        // SAFETY: forwarded to the caller.
        unsafe {
            Ok([
                into.count.enqueue_read_from(&self.count[now])?,
                into.first.enqueue_read_from(&self.first[now])?,
                into.pool.enqueue_read_from(&self.pool[now])?,
            ])
        }
    }

    /// Adds another device's next counts and smallest ids (`other`, its share's step) to
    /// this device's next ones, in order after this device's step (and its
    /// [`finish_frame`](Self::finish_frame)): counts sum, the smallest id wins, so the cells
    /// are the one device's exactly. Without waiting.
    ///
    /// # Safety
    ///
    /// `other` must stay alive and unchanged until the returned events complete.
    pub(crate) unsafe fn enqueue_merge(
        &mut self,
        context: &Context,
        other: &FrameCellsHost,
        timeline: &mut Timeline,
    ) -> Result<[opencl3::event::Event; 2]> {
        let n = self.cells.max(1);
        let scratch = match &mut self.incoming {
            Some(s) => s,
            None => self.incoming.insert((
                DeviceBuffer::zeroed(context, n)?,
                DeviceBuffer::zeroed(context, n)?,
            )),
        };
        // SAFETY: forwarded to the caller; the scratch buffers hold n values.
        let copied = unsafe {
            [
                scratch.0.enqueue_write_from(other.count.as_slice())?,
                scratch.1.enqueue_write_from(other.first.as_slice())?,
            ]
        };
        // After this frame's step, which flipped `current` to what it counted.
        let next = self.current;
        let mut call = self.merge.call();
        // SAFETY: every buffer holds n values; the kernel guards its id.
        unsafe {
            call.buffer(&self.count[next])?
                .buffer(&self.first[next])?
                .buffer(&scratch.0)?
                .buffer(&scratch.1)?
                .arg(&(n as u32))?;
        }
        call.enqueue_into(context, self.merge.work_size(context, n)?, timeline)?;
        Ok(copied)
    }

    /// After the particle step: the next frame reads what this one counted.
    pub(crate) fn finish_frame(&mut self) {
        self.current = 1 - self.current;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lift_starts_at_the_threshold_and_grows_with_the_friction_velocity() {
        let s = DriftSettings::default();
        assert_eq!(lift_rate(&s, s.threshold, 7.0), 0.0);
        assert_eq!(lift_rate(&s, 0.1, 7.0), 0.0);
        let rates: Vec<f64> = [0.3, 0.5, 0.7, 1.0, 1.5]
            .iter()
            .map(|&u| lift_rate(&s, u, 7.0))
            .collect();
        assert!(rates[0] > 0.0);
        assert!(rates.windows(2).all(|w| w[1] > w[0]), "{rates:?}");
        // Pomeroy & Male's profile at u* = 1 m/s, 7 m: 0.8 e^(−1.55 (0.05628^−0.544 − 7^−0.544)).
        let zr_term = 0.05628f64.powf(-0.544);
        let want = 0.8 * (-1.55 * (zr_term - 7f64.powf(-0.544))).exp();
        assert!((concentration(1.0, 7.0) / want - 1.0).abs() < 1e-12);
        assert!((7.0e-4..9.5e-4).contains(&want), "{want}");
        // 30 µm grains settle at 1.1e7 (3e-5)^1.8 ≈ 0.08 m/s.
        assert!((0.07..0.09).contains(&settling_speed(7.0)));
        // Lower grains are larger and settle faster; the 30 µm from 5 m up joins the size law
        // within its rounding (30.4 µm at 5 m: 2.4 % in the speed).
        assert!(settling_speed(1.0) > settling_speed(4.9));
        assert!((settling_speed(4.999) / settling_speed(5.0) - 1.0).abs() < 0.03);
    }

    #[test]
    fn the_concentration_falls_with_height() {
        let c: Vec<f64> = [0.5, 1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|&z| concentration(0.8, z))
            .collect();
        assert!(c.windows(2).all(|w| w[1] < w[0]), "{c:?}");
        assert_eq!(concentration(0.0, 1.0), 0.0);
    }

    #[test]
    fn a_vertex_belongs_to_its_parent_of_largest_numerator() {
        let parents = [
            ([7, 0, 0], [4, 0, 0]),
            ([3, 9, 0], [1, 3, 0]),
            ([9, 3, 0], [2, 2, 0]),
            ([5, 2, 8], [1, 1, 2]),
            ([5, 2, 8], [2, 1, 1]),
        ];
        assert_eq!(cells_of(&parents), vec![7, 9, 3, 8, 5]);
    }
}
