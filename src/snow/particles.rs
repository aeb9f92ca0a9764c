//! The particles on the device, one array per quantity (structure of arrays), and their
//! permutation by a sort: every array moves together, so everything that belongs to a
//! particle travels with it.

use crate::cl::{Context, DeviceBuffer};

use super::Result;

/// The particle arrays (layout in `kernels/snow.cl`'s header).
pub struct Particles {
    /// xyz position (m), w flutter phase (rad).
    pub(crate) pos: DeviceBuffer<[f32; 4]>,
    /// xyz velocity (m/s), w drag coefficient (1/m).
    pub(crate) vel: DeviceBuffer<[f32; 4]>,
    /// Containing tetrahedron.
    pub(crate) tet: DeviceBuffer<u32>,
    /// Particle id.
    pub(crate) ids: DeviceBuffer<u32>,
    /// Respawn count.
    pub(crate) respawns: DeviceBuffer<u32>,
    /// Units of laid snow the wind lifted into the parcel, carried until it lands (`ground.suspension`;
    /// one unused entry without).
    pub(crate) suspended: DeviceBuffer<u64>,
    /// Whether `suspended` holds one entry per parcel.
    suspension: bool,
}

/// One particle's state, read back to the host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParticleState {
    /// Its id.
    pub id: u32,
    /// Position (xyz) and flutter phase (w).
    pub pos: [f32; 4],
    /// Velocity (xyz) and drag coefficient (w).
    pub vel: [f32; 4],
    /// Flutter radius, rate, diameter, terminal speed: derived from the seed and the id
    /// wherever they are needed, not stored.
    pub flutter: [f32; 4],
    /// Containing tetrahedron.
    pub tet: u32,
    /// Respawn count.
    pub respawns: u32,
    /// Units of laid snow it carries in suspension (0 without `ground.suspension`).
    pub suspended: u64,
}

impl ParticleState {
    /// The state as bits, for comparisons that must be exact (NaN included).
    pub fn bits(&self) -> [u32; 17] {
        let f = |v: [f32; 4]| v.map(f32::to_bits);
        let (p, v, fl) = (f(self.pos), f(self.vel), f(self.flutter));
        [
            self.id,
            p[0],
            p[1],
            p[2],
            p[3],
            v[0],
            v[1],
            v[2],
            v[3],
            fl[0],
            fl[1],
            fl[2],
            fl[3],
            self.tet,
            self.respawns,
            self.suspended as u32,
            (self.suspended >> 32) as u32,
        ]
    }
}

impl Particles {
    /// Allocates `n` particles (uninitialised: the init kernel fills them), with the snow
    /// they carry in suspension where `suspension` (else one unused entry).
    pub fn new(context: &Context, n: usize, suspension: bool) -> Result<Self> {
        Ok(Self {
            pos: DeviceBuffer::uninit(context, n)?,
            vel: DeviceBuffer::uninit(context, n)?,
            tet: DeviceBuffer::uninit(context, n)?,
            ids: DeviceBuffer::uninit(context, n)?,
            respawns: DeviceBuffer::uninit(context, n)?,
            suspended: DeviceBuffer::zeroed(context, if suspension { n.max(1) } else { 1 })?,
            suspension,
        })
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Reads every particle back (blocking), in array order, with `flutter` (one per parcel,
    /// in the same order: derived, not stored; see `Snow::particle_states`).
    pub(crate) fn read_with(&self, flutter: Vec<[f32; 4]>) -> Result<Vec<ParticleState>> {
        let (pos, vel) = (self.pos.read()?, self.vel.read()?);
        let (tet, ids, respawns) = (self.tet.read()?, self.ids.read()?, self.respawns.read()?);
        let suspended = self.suspended_units()?;
        Ok((0..self.len())
            .map(|i| ParticleState {
                id: ids[i],
                pos: pos[i],
                vel: vel[i],
                flutter: flutter[i],
                tet: tet[i],
                respawns: respawns[i],
                suspended: suspended.get(i).copied().unwrap_or(0),
            })
            .collect())
    }

    /// Whether the parcels carry snow in suspension (`ground.suspension`).
    pub fn carry_suspension(&self) -> bool {
        self.suspension
    }

    /// The units each parcel carries in suspension, in array order (blocking; empty without
    /// suspension).
    pub fn suspended_units(&self) -> Result<Vec<u64>> {
        if !self.carry_suspension() {
            return Ok(Vec::new());
        }
        Ok(self.suspended.read()?)
    }

    /// Overwrites the units each parcel carries in suspension (tests break the ledger with it).
    pub fn write_suspended(&mut self, units: &[u64]) -> Result<()> {
        Ok(self.suspended.write(units)?)
    }

    /// Overwrites every particle's velocity (tests start particles at a known state).
    pub fn write_velocities(&mut self, vel: &[[f32; 4]]) -> Result<()> {
        Ok(self.vel.write(vel)?)
    }
}
