//! The snow cover: volume per ground vertex in 64-bit fixed point, its depth, and the
//! conservative smoothing per ground-surface edge (`kernels/snow_cover.cl`).
//!
//! Smoothing, once per step: where the surface (ground + snow) between the ends of an edge is
//! steeper than the repose angle, the higher end gives `rate` times the volume that would bring
//! the edge back to the angle (`V = excess / (1/A_a + 1/A_b)`), in whole units; each vertex
//! scales its outflows so that they never exceed its volume, by a 32-bit fraction rounded
//! down; each edge's flux is then subtracted from one end and added to the other in integers.
//! So depths stay ≥ 0 and the total is conserved exactly. On the valley (42 m cells, 38°),
//! snow moves only where the surface along an edge climbs more than 0.78 × 42 ≈ 33 m: bare
//! slopes steeper than the angle shed their snow, gentler ground keeps it where it fell.

use crate::cl::{
    BufferArg, Context, DeviceBuffer, Kernel, OutputBuffer, Program, Source, Timeline,
};
use crate::meshio::ElementKind;
use crate::terrain::GroundSurface;

use super::config::PARCEL_UNITS;
use super::{Error, Result};

/// The ground surface's tables for the cover, on the host.
#[derive(Clone, Debug)]
pub struct CoverGeometry {
    /// Ground height per ground vertex.
    pub z: Vec<f32>,
    /// Horizontal dual area per ground vertex (a third of its triangles' horizontal areas), m².
    pub area: Vec<f32>,
    /// Edges (ground vertex pairs, a < b).
    pub edges: Vec<[u32; 2]>,
    /// Horizontal length of each edge, m.
    pub length: Vec<f32>,
    /// Per vertex, where its incident edges start in `incident` (`len + 1` entries).
    pub offsets: Vec<u32>,
    /// `2 e + (1 if the vertex is the edge's b end)`, grouped by vertex.
    pub incident: Vec<u32>,
}

impl CoverGeometry {
    /// The tables of a ground surface.
    pub fn new(ground: &GroundSurface) -> Result<Self> {
        let mesh = &ground.mesh;
        mesh.validate_indices()
            .map_err(|e| Error::Mesh(format!("the ground surface: {e}")))?;
        let nv = mesh.vertices.len();
        let tris = mesh.elements(ElementKind::Triangles);
        if tris.is_empty() {
            return Err(Error::Mesh("the ground surface has no triangles".into()));
        }
        if nv > u32::MAX as usize / 2 {
            return Err(Error::Mesh(format!(
                "{nv} ground vertices exceed 32-bit indices"
            )));
        }
        let mut area = vec![0.0f64; nv];
        let mut edges: Vec<[u32; 2]> = Vec::with_capacity(3 * tris.len());
        for (t, _) in tris.iter() {
            let p = |k: usize| mesh.vertices[t[k] as usize];
            let (a, b, c) = (p(0), p(1), p(2));
            let horizontal =
                0.5 * ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])).abs();
            for k in 0..3 {
                area[t[k] as usize] += horizontal / 3.0;
                let (u, v) = (t[k], t[(k + 1) % 3]);
                edges.push([u.min(v), u.max(v)]);
            }
        }
        edges.sort_unstable();
        edges.dedup();
        if let Some(v) = area.iter().position(|&a| a.is_nan() || a <= 0.0) {
            return Err(Error::Mesh(format!(
                "ground vertex {v} has no horizontal area (a vertical or unused vertex)"
            )));
        }
        let length = edges
            .iter()
            .map(|&[a, b]| {
                let (p, q) = (mesh.vertices[a as usize], mesh.vertices[b as usize]);
                ((q[0] - p[0]).powi(2) + (q[1] - p[1]).powi(2)).sqrt() as f32
            })
            .collect();
        let mut degree = vec![0u32; nv + 1];
        for &[a, b] in &edges {
            degree[a as usize + 1] += 1;
            degree[b as usize + 1] += 1;
        }
        for i in 0..nv {
            degree[i + 1] += degree[i];
        }
        let offsets = degree;
        let mut fill = offsets.clone();
        let mut incident = vec![0u32; 2 * edges.len()];
        for (e, &[a, b]) in edges.iter().enumerate() {
            incident[fill[a as usize] as usize] = 2 * e as u32;
            fill[a as usize] += 1;
            incident[fill[b as usize] as usize] = 2 * e as u32 + 1;
            fill[b as usize] += 1;
        }
        Ok(Self {
            z: mesh.vertices.iter().map(|v| v[2] as f32).collect(),
            area: area.iter().map(|&a| a as f32).collect(),
            edges,
            length,
            offsets,
            incident,
        })
    }

    /// Number of ground vertices.
    pub fn len(&self) -> usize {
        self.z.len()
    }

    /// Whether there is no ground vertex.
    pub fn is_empty(&self) -> bool {
        self.z.is_empty()
    }
}

/// The cover on the device: volumes, the smoothing's tables and kernels.
pub struct GroundCover {
    /// The host tables.
    pub geometry: CoverGeometry,
    pub(crate) volume: DeviceBuffer<u64>,
    z: DeviceBuffer<f32>,
    area: DeviceBuffer<f32>,
    edges: DeviceBuffer<[u32; 2]>,
    length: DeviceBuffer<f32>,
    offsets: DeviceBuffer<u32>,
    incident: DeviceBuffer<u32>,
    flux: DeviceBuffer<i64>,
    ratio: DeviceBuffer<u32>,
    kernels: [Kernel; 3],
    depth_kernel: Kernel,
    /// m³ per unit.
    unit: f64,
}

impl GroundCover {
    /// The cover of `geometry` on `context`, empty, with one unit worth `parcel_volume / Q` m³.
    pub fn new(context: &Context, geometry: CoverGeometry, parcel_volume: f64) -> Result<Self> {
        let source =
            Source::embedded("snow_cover.cl", include_str!("../../kernels/snow_cover.cl"))?;
        let program = Program::build(context, &[source], "")?;
        let nv = geometry.len();
        let ne = geometry.edges.len();
        Ok(Self {
            volume: DeviceBuffer::zeroed(context, nv)?,
            z: DeviceBuffer::from_slice(context, &geometry.z)?,
            area: DeviceBuffer::from_slice(context, &geometry.area)?,
            edges: DeviceBuffer::from_slice(context, &geometry.edges)?,
            length: DeviceBuffer::from_slice(context, &geometry.length)?,
            offsets: DeviceBuffer::from_slice(context, &geometry.offsets)?,
            incident: DeviceBuffer::from_slice(context, &geometry.incident)?,
            flux: DeviceBuffer::zeroed(context, ne)?,
            ratio: DeviceBuffer::zeroed(context, nv)?,
            kernels: [
                program.kernel("cover_flux")?,
                program.kernel("cover_ratio")?,
                program.kernel("cover_apply")?,
            ],
            depth_kernel: program.kernel("cover_depth")?,
            unit: parcel_volume / PARCEL_UNITS as f64,
            geometry,
        })
    }

    /// Cubic metres per fixed-point unit.
    pub fn unit_volume(&self) -> f64 {
        self.unit
    }

    /// Sets every volume to zero.
    pub fn clear(&mut self) -> Result<()> {
        Ok(self.volume.fill(0)?)
    }

    /// Replaces the volumes (units per ground vertex), e.g. to start from a pile.
    pub fn set_volumes(&mut self, units: &[u64]) -> Result<()> {
        if units.len() != self.geometry.len() {
            return Err(Error::InvalidParameter(format!(
                "{} volumes for {} ground vertices",
                units.len(),
                self.geometry.len()
            )));
        }
        Ok(self.volume.write(units)?)
    }

    /// The volumes in units, per ground vertex (blocking).
    pub fn volumes(&self) -> Result<Vec<u64>> {
        Ok(self.volume.read()?)
    }

    /// Depth per ground vertex, metres: volume over horizontal dual area (blocking).
    pub fn depths(&self) -> Result<Vec<f32>> {
        let v = self.volumes()?;
        Ok(v.iter()
            .zip(&self.geometry.area)
            .map(|(&u, &a)| (u as f64 * self.unit / f64::from(a)) as f32)
            .collect())
    }

    /// Enqueues writing the depth per ground vertex (metres, as [`depths`](Self::depths) but
    /// on the device, in f32) into `target`, four vertices per float4 (the last padded with
    /// zeros): at least `len().div_ceil(4)` values.
    pub fn write_depths(
        &self,
        context: &Context,
        target: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let nv = self.geometry.len();
        let groups = nv.div_ceil(4);
        if BufferArg::len(target) < groups {
            return Err(Error::InvalidParameter(format!(
                "a depth buffer of {} float4 for {nv} ground vertices",
                BufferArg::len(target)
            )));
        }
        let mut call = self.depth_kernel.call();
        // SAFETY: volume and area hold nv values; target at least nv / 4 rounded up (checked);
        // the kernel guards its id.
        unsafe {
            call.buffer(&self.volume)?
                .buffer(&self.area)?
                .buffer(target)?
                .arg(&(nv as u32))?
                .arg(&(self.unit as f32))?;
        }
        call.enqueue_into(
            context,
            self.depth_kernel.work_size(context, groups)?,
            timeline,
        )?;
        Ok(())
    }

    /// Enqueues one smoothing step with the given repose angle (degrees) and rate.
    pub fn smooth(
        &mut self,
        context: &Context,
        repose_angle: f64,
        rate: f64,
        timeline: &mut Timeline,
    ) -> Result<()> {
        if rate <= 0.0 || self.unit <= 0.0 {
            return Ok(());
        }
        let ne = self.geometry.edges.len();
        let nv = self.geometry.len();
        let tan = repose_angle.to_radians().tan() as f32;
        let [flux, ratio, apply] = &self.kernels;
        let mut call = flux.call();
        // SAFETY: every buffer has the length its index reaches (edges, vertices); the kernels
        // guard their id against the count.
        unsafe {
            call.buffer(&self.edges)?
                .buffer(&self.length)?
                .buffer(&self.z)?
                .buffer(&self.area)?
                .buffer(&self.volume)?
                .buffer(&self.flux)?
                .arg(&(ne as u32))?
                .arg(&(self.unit as f32))?
                .arg(&tan)?
                .arg(&(rate as f32))?;
        }
        call.enqueue_into(context, flux.work_size(context, ne)?, timeline)?;
        let mut call = ratio.call();
        // SAFETY: as above; offsets has nv + 1 entries, incident codes index the edges.
        unsafe {
            call.buffer(&self.offsets)?
                .buffer(&self.incident)?
                .buffer(&self.flux)?
                .buffer(&self.volume)?
                .buffer(&self.ratio)?
                .arg(&(nv as u32))?;
        }
        call.enqueue_into(context, ratio.work_size(context, nv)?, timeline)?;
        let mut call = apply.call();
        // SAFETY: as above.
        unsafe {
            call.buffer(&self.offsets)?
                .buffer(&self.incident)?
                .buffer(&self.edges)?
                .buffer(&self.flux)?
                .buffer(&self.ratio)?
                .buffer(&self.volume)?
                .arg(&(nv as u32))?;
        }
        call.enqueue_into(context, apply.work_size(context, nv)?, timeline)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terrain::{Terrain, TerrainSpec};

    #[test]
    fn dual_areas_tile_the_ground_and_every_edge_is_listed_at_both_ends() {
        let spec = TerrainSpec {
            size: [90.0, 40.0, 30.0],
            relief: 0.0,
            cells: [9, 4],
            layers: 1,
            grading: 1.0,
        };
        let t = Terrain::from_fn(spec, |x, y| 0.2 * x + 0.1 * y).unwrap();
        let c = CoverGeometry::new(&t.ground_surface()).unwrap();
        let total: f32 = c.area.iter().sum();
        assert!((total - 3600.0).abs() < 1e-2, "{total}");
        // 10 × 5 grid points: 9·5 + 10·4 axis edges and 9·4 diagonals.
        assert_eq!(c.edges.len(), 45 + 40 + 36);
        assert_eq!(c.offsets.len(), c.len() + 1);
        let mut seen = vec![0u8; c.edges.len()];
        for v in 0..c.len() {
            for &code in &c.incident[c.offsets[v] as usize..c.offsets[v + 1] as usize] {
                let [a, b] = c.edges[(code >> 1) as usize];
                assert_eq!(if code & 1 == 0 { a } else { b } as usize, v);
                seen[(code >> 1) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&n| n == 2));
        assert!(
            c.length
                .iter()
                .all(|&l| l == 10.0 || (l - 200f32.sqrt()).abs() < 1e-4)
        );
    }
}
