//! The one particle the simulation writes and the drawing reads: a position and a radius, laid
//! out as an OpenCL `float4` (and a GL vertex of four floats), so that the same buffer serves
//! the kernels that write it, the interop that moves it, the splat kernel and the sprites.

use bytemuck::{Pod, Zeroable};

/// A drawn particle: where it is (metres, z up) and the radius it is drawn with (metres).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Particle {
    /// Position in metres, z up.
    pub position: [f32; 3],
    /// Drawn radius in metres.
    pub radius: f32,
}

/// Bytes of one [`Particle`]: a `float4`.
pub const PARTICLE_BYTES: usize = std::mem::size_of::<Particle>();

impl Particle {
    /// A particle at `position` drawn with `radius`.
    pub const fn new(position: [f32; 3], radius: f32) -> Self {
        Self { position, radius }
    }
}

impl From<[f32; 4]> for Particle {
    fn from(v: [f32; 4]) -> Self {
        Self::new([v[0], v[1], v[2]], v[3])
    }
}

impl From<Particle> for [f32; 4] {
    fn from(p: Particle) -> Self {
        [p.position[0], p.position[1], p.position[2], p.radius]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_particle_is_a_float4() {
        // The kernels read it as float4: x, y, z, radius, 16 bytes, 16-byte alignment not needed.
        assert_eq!(PARTICLE_BYTES, 16);
        let p = Particle::new([1.0, 2.0, 3.0], 0.5);
        let raw: [f32; 4] = bytemuck::cast(p);
        assert_eq!(raw, [1.0, 2.0, 3.0, 0.5]);
        assert_eq!(Particle::from(raw), p);
    }
}
