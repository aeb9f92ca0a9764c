//! The snow cover: volume per vertex of the cover's own mesh ([`CoverMesh`]) in 64-bit fixed
//! point, its depth, the conservative smoothing per edge of that mesh, and the restriction to
//! the wind mesh's ground that the terrain is drawn with (`kernels/snow_cover.cl`).
//!
//! Smoothing, once per step: where the surface (ground + snow) between the ends of an edge is
//! steeper than the repose angle, the higher end gives `rate` times the volume that would bring
//! the edge back to the angle (`V = excess / (1/A_a + 1/A_b)`), in whole units; each vertex
//! scales its outflows so that they never exceed its volume, by a 32-bit fraction rounded
//! down; each edge's flux is then subtracted from one end and added to the other in integers.
//! So depths stay ≥ 0 and the total is conserved exactly. On the valley's cover (10.4 m edges,
//! 38°), snow moves only where the surface along an edge climbs more than 0.78 × 10.4 ≈ 8 m:
//! bare slopes steeper than the angle shed their snow, gentler ground keeps it where it fell.

use crate::cl::{
    BufferArg, Context, DeviceBuffer, Kernel, OutputBuffer, Program, Source, Timeline,
};
use crate::meshio::ElementKind;
use crate::terrain::GroundSurface;

use super::config::PARCEL_UNITS;
use super::refine::CoverMesh;
use super::{Error, Result};

/// Depth (m) of `units` over `area` (m²) at `unit` m³ per unit.
fn depths_of(units: &[u64], area: &[f32], unit: f64) -> Vec<f32> {
    units
        .iter()
        .zip(area)
        .map(|(&u, &a)| (u as f64 * unit / f64::from(a)) as f32)
        .collect()
}

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
    /// The tables of a ground surface, unrefined (each ground vertex a cover vertex).
    pub fn new(ground: &GroundSurface) -> Result<Self> {
        let mesh = &ground.mesh;
        mesh.validate_indices()
            .map_err(|e| Error::Mesh(format!("the ground surface: {e}")))?;
        let tris: Vec<[u32; 3]> = mesh
            .elements(ElementKind::Triangles)
            .iter()
            .map(|(t, _)| [t[0], t[1], t[2]])
            .collect();
        Self::from_triangles(&mesh.vertices, &tris)
    }

    /// The tables of the cover's own mesh ([`CoverMesh`]).
    pub fn of_mesh(mesh: &CoverMesh) -> Result<Self> {
        Self::from_triangles(&mesh.vertices, &mesh.triangles)
    }

    /// The tables of a surface of `vertices` and `triangles` (indices into `vertices`).
    pub fn from_triangles(vertices: &[[f64; 3]], tris: &[[u32; 3]]) -> Result<Self> {
        let nv = vertices.len();
        if tris.is_empty() {
            return Err(Error::Mesh("the ground surface has no triangles".into()));
        }
        if nv > u32::MAX as usize / 2 {
            return Err(Error::Mesh(format!(
                "{nv} ground vertices exceed 32-bit indices"
            )));
        }
        if let Some(t) = tris.iter().find(|t| t.iter().any(|&v| v as usize >= nv)) {
            return Err(Error::Mesh(format!(
                "a ground triangle {t:?} names a vertex beyond the {nv} vertices"
            )));
        }
        let mut area = vec![0.0f64; nv];
        let mut edges: Vec<[u32; 2]> = Vec::with_capacity(3 * tris.len());
        for t in tris {
            let p = |k: usize| vertices[t[k] as usize];
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
                let (p, q) = (vertices[a as usize], vertices[b as usize]);
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
            z: vertices.iter().map(|v| v[2] as f32).collect(),
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

/// The cover on the device: fine volumes, the smoothing's tables and kernels, and the ties to
/// the coarse ground (landing, restriction).
pub struct GroundCover {
    /// The fine surface's tables.
    pub geometry: CoverGeometry,
    /// The cover's mesh and its ties to the coarse ground.
    pub mesh: CoverMesh,
    /// Horizontal dual area per coarse ground vertex, m².
    pub ground_area: Vec<f32>,
    pub(crate) volume: DeviceBuffer<u64>,
    pub(super) z: DeviceBuffer<f32>,
    pub(super) area: DeviceBuffer<f32>,
    pub(super) edges: DeviceBuffer<[u32; 2]>,
    length: DeviceBuffer<f32>,
    pub(super) offsets: DeviceBuffer<u32>,
    pub(super) incident: DeviceBuffer<u32>,
    pub(super) flux: DeviceBuffer<i64>,
    pub(super) ratio: DeviceBuffer<u32>,
    pub(crate) links: LandingLinks,
    restrict_offsets: DeviceBuffer<u32>,
    restrict_entries: DeviceBuffer<u32>,
    numerators: DeviceBuffer<u32>,
    ground_area_buffer: DeviceBuffer<f32>,
    kernels: [Kernel; 3],
    depth_kernel: Kernel,
    /// `cover_ground_units`: the exact restriction to the coarse ground, on the device.
    units_kernel: Kernel,
    /// Its output, one value per coarse ground vertex.
    ground_units: DeviceBuffer<u64>,
    /// `cover_pack` and `cover_add_packed`: landings handed between devices
    /// ([`handover`](super::handover)).
    pack_kernels: [Kernel; 2],
    /// m³ per unit.
    unit: f64,
}

/// The coarse ground's tables a landing reads to find where its footprint falls
/// (`kernels/snow_deposit.cl`).
pub(crate) struct LandingLinks {
    /// Coarse ground triangles (ground vertex ids, w unused).
    pub tris: DeviceBuffer<[i32; 4]>,
    /// Per coarse triangle, the triangle across the edge opposite each vertex (−1: none).
    pub adjacent: DeviceBuffer<[i32; 4]>,
    /// Horizontal position of each coarse ground vertex.
    pub xy: DeviceBuffer<[f32; 2]>,
    /// Position of each coarse ground vertex (xyz, w 0).
    pub points: DeviceBuffer<[f32; 4]>,
    /// Per coarse vertex, where its triangles start in `around`.
    pub around_offsets: DeviceBuffer<u32>,
    /// The coarse triangles around each coarse vertex.
    pub around: DeviceBuffer<u32>,
    /// Per coarse triangle, the fine ids of its lattice points.
    pub lattice: DeviceBuffer<u32>,
    /// Pieces per coarse edge.
    pub refinement: u32,
}

impl GroundCover {
    /// The cover on `mesh` on `context`, empty, with one unit worth `parcel_volume / Q` m³
    /// ([`PARCEL_UNITS`]).
    pub fn new(context: &Context, mesh: CoverMesh, parcel_volume: f64) -> Result<Self> {
        let source =
            Source::embedded("snow_cover.cl", include_str!("../../kernels/snow_cover.cl"))?;
        let program = Program::build(context, &[source], "")?;
        let geometry = CoverGeometry::of_mesh(&mesh)?;
        let nc = mesh.coarse_vertices;
        let ground = CoverGeometry::from_triangles(&mesh.vertices[..nc], &mesh.coarse_triangles)?;
        let nv = geometry.len();
        let ne = geometry.edges.len();
        let (restrict_offsets, restrict_entries) = mesh.restriction_table();
        let numerators: Vec<u32> = mesh
            .parents
            .iter()
            .map(|(_, n)| u32::from(n[0]) | u32::from(n[1]) << 8 | u32::from(n[2]) << 16)
            .collect();
        let tris: Vec<[i32; 4]> = mesh
            .coarse_triangles
            .iter()
            .map(|t| [t[0] as i32, t[1] as i32, t[2] as i32, 0])
            .collect();
        let adjacent: Vec<[i32; 4]> = mesh
            .adjacent
            .iter()
            .map(|a| [a[0], a[1], a[2], -1])
            .collect();
        let xy: Vec<[f32; 2]> = mesh.vertices[..nc]
            .iter()
            .map(|v| [v[0] as f32, v[1] as f32])
            .collect();
        let links = LandingLinks {
            tris: DeviceBuffer::from_slice(context, &tris)?,
            adjacent: DeviceBuffer::from_slice(context, &adjacent)?,
            xy: DeviceBuffer::from_slice(context, &xy)?,
            points: DeviceBuffer::from_slice(
                context,
                &mesh.vertices[..nc]
                    .iter()
                    .map(|v| [v[0] as f32, v[1] as f32, v[2] as f32, 0.0])
                    .collect::<Vec<_>>(),
            )?,
            around_offsets: DeviceBuffer::from_slice(context, &mesh.vertex_offsets)?,
            around: DeviceBuffer::from_slice(context, &mesh.vertex_triangles)?,
            lattice: DeviceBuffer::from_slice(context, &mesh.lattice)?,
            refinement: mesh.refinement,
        };
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
            links,
            restrict_offsets: DeviceBuffer::from_slice(context, &restrict_offsets)?,
            restrict_entries: DeviceBuffer::from_slice(context, &restrict_entries)?,
            numerators: DeviceBuffer::from_slice(context, &numerators)?,
            ground_area_buffer: DeviceBuffer::from_slice(context, &ground.area)?,
            kernels: [
                program.kernel("cover_flux")?,
                program.kernel("cover_ratio")?,
                program.kernel("cover_apply")?,
            ],
            depth_kernel: program.kernel("cover_ground_depth")?,
            units_kernel: program.kernel("cover_ground_units")?,
            ground_units: DeviceBuffer::uninit(context, nc)?,
            pack_kernels: [
                program.kernel("cover_pack")?,
                program.kernel("cover_add_packed")?,
            ],
            unit: parcel_volume / PARCEL_UNITS as f64,
            ground_area: ground.area,
            geometry,
            mesh,
        })
    }

    /// Moves the landing tables' ground points (where the source height is measured from) to
    /// `heights` m, one per coarse ground vertex (a ground refresh raised the ground).
    pub fn set_ground_heights(&mut self, heights: &[f64]) -> Result<()> {
        let nc = self.mesh.coarse_vertices;
        if heights.len() != nc {
            return Err(Error::InvalidParameter(format!(
                "{} ground heights for {nc} ground vertices",
                heights.len()
            )));
        }
        let points: Vec<[f32; 4]> = self.mesh.vertices[..nc]
            .iter()
            .zip(heights)
            .map(|(v, &z)| [v[0] as f32, v[1] as f32, z as f32, 0.0])
            .collect();
        Ok(self.links.points.write(&points)?)
    }

    /// Cubic metres per fixed-point unit.
    pub fn unit_volume(&self) -> f64 {
        self.unit
    }

    /// Sets every volume to zero.
    pub fn clear(&mut self) -> Result<()> {
        Ok(self.volume.fill(0)?)
    }

    /// Enqueues the packing of the non-zero volumes as (vertex, units) pairs into `packed`
    /// after `count` (which must be zero), clearing them ([`handover`](super::handover)).
    pub(crate) fn enqueue_pack(
        &mut self,
        context: &Context,
        packed: &DeviceBuffer<[u64; 2]>,
        count: &DeviceBuffer<u32>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let n = self.geometry.len();
        if packed.len() < n || count.is_empty() {
            return Err(Error::InvalidParameter(format!(
                "landings of {n} cover vertices packed into {} pairs and {} counts",
                packed.len(),
                count.len()
            )));
        }
        let kernel = &self.pack_kernels[0];
        let mut call = kernel.call();
        // SAFETY: `volume` holds n values and `packed` at least n pairs (checked above), so
        // the at most n non-zero volumes fit; `count` one value; the kernel guards its id.
        unsafe {
            call.buffer(&self.volume)?
                .arg(&(n as u32))?
                .buffer(packed)?
                .buffer(count)?;
        }
        call.enqueue_into(context, kernel.work_size(context, n)?, timeline)?;
        Ok(())
    }

    /// Enqueues the adding of the first `count` (vertex, units) pairs of `packed` to the
    /// volumes, exactly, in order on the queue ([`handover`](super::handover)).
    pub(crate) fn enqueue_add_packed(
        &mut self,
        context: &Context,
        packed: &DeviceBuffer<[u64; 2]>,
        count: usize,
        timeline: &mut Timeline,
    ) -> Result<()> {
        if count > packed.len() {
            return Err(Error::InvalidParameter(format!(
                "{count} landings added from a buffer of {}",
                packed.len()
            )));
        }
        if count == 0 {
            return Ok(());
        }
        let n = self.geometry.len();
        let kernel = &self.pack_kernels[1];
        let mut call = kernel.call();
        // SAFETY: `count` pairs are in `packed` (checked above); the kernel guards its id and
        // every pair's vertex against n.
        unsafe {
            call.buffer(&self.volume)?
                .arg(&(n as u32))?
                .buffer(packed)?
                .arg(&(count as u32))?;
        }
        call.enqueue_into(context, kernel.work_size(context, count)?, timeline)?;
        Ok(())
    }

    /// Replaces the volumes (units per cover vertex), e.g. to start from a pile.
    pub fn set_volumes(&mut self, units: &[u64]) -> Result<()> {
        if units.len() != self.geometry.len() {
            return Err(Error::InvalidParameter(format!(
                "{} volumes for {} cover vertices",
                units.len(),
                self.geometry.len()
            )));
        }
        Ok(self.volume.write(units)?)
    }

    /// The volumes in units, per cover vertex (blocking).
    pub fn volumes(&self) -> Result<Vec<u64>> {
        Ok(self.volume.read()?)
    }

    /// Depth per cover vertex, metres: volume over horizontal dual area (blocking).
    pub fn depths(&self) -> Result<Vec<f32>> {
        Ok(self.depths_of(&self.volumes()?))
    }

    /// Depth per cover vertex, metres, of `units` per cover vertex (read already).
    pub fn depths_of(&self, units: &[u64]) -> Vec<f32> {
        depths_of(units, &self.geometry.area, self.unit)
    }

    /// The volumes restricted to the coarse ground's vertices (the wind mesh's ground),
    /// exactly: their total is the cover's (blocking). Restricted on the device
    /// (`cover_ground_units`, the same integer shares as [`CoverMesh::restrict`]), so that only
    /// the coarse vertices' units cross to the host: a ground refresh reads them with the
    /// frames drained, and every megabyte read there is part of its hitch.
    pub fn ground_volumes(&self) -> Result<Vec<u64>> {
        let context = self.volume.context();
        let nv = self.mesh.coarse_vertices;
        let units = &self.ground_units;
        let mut call = self.units_kernel.call();
        // SAFETY: the restriction table's offsets hold nv + 1 entries and its entries name
        // fine vertices (4 f + slot) of `volume` and `numerators`; `units` holds nv values;
        // the kernel guards its id.
        unsafe {
            call.buffer(&self.restrict_offsets)?
                .buffer(&self.restrict_entries)?
                .buffer(&self.numerators)?
                .buffer(&self.volume)?
                .buffer(units)?
                .arg(&(nv as u32))?
                .arg(&self.mesh.refinement)?;
        }
        let mut timeline = context.timeline();
        call.enqueue_into(
            context,
            self.units_kernel.work_size(context, nv)?,
            &mut timeline,
        )?;
        timeline.wait()?;
        Ok(units.read()?)
    }

    /// Depth per coarse ground vertex, metres: the restricted volume over the vertex's
    /// horizontal dual area, so that the depth's integral over the ground triangles is the
    /// cover's volume (blocking).
    pub fn ground_depths(&self) -> Result<Vec<f32>> {
        let v = self.ground_volumes()?;
        Ok(depths_of(&v, &self.ground_area, self.unit))
    }

    /// Enqueues writing the depth per coarse ground vertex (metres, as
    /// [`ground_depths`](Self::ground_depths) but on the device, in f32) into `target`, four
    /// vertices per float4 (the last padded with zeros): at least `len().div_ceil(4)` values
    /// for the coarse ground's vertex count.
    pub fn write_depths(
        &self,
        context: &Context,
        target: &mut OutputBuffer<'_, [f32; 4]>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let nv = self.mesh.coarse_vertices;
        let groups = nv.div_ceil(4);
        if BufferArg::len(target) < groups {
            return Err(Error::InvalidParameter(format!(
                "a depth buffer of {} float4 for {nv} ground vertices",
                BufferArg::len(target)
            )));
        }
        let mut call = self.depth_kernel.call();
        // SAFETY: the restriction table's offsets hold nv + 1 entries and its entries name
        // fine vertices (4 f + slot) of `volume` and `numerators`; the area holds nv values;
        // target at least nv / 4 float4 rounded up (checked), which the kernel reads as
        // floats, one work-item each; the kernel guards its id.
        unsafe {
            call.buffer(&self.restrict_offsets)?
                .buffer(&self.restrict_entries)?
                .buffer(&self.numerators)?
                .buffer(&self.volume)?
                .buffer(&self.ground_area_buffer)?
                .buffer(target)?
                .arg(&(nv as u32))?
                .arg(&self.mesh.refinement)?
                .arg(&(self.unit as f32))?;
        }
        call.enqueue_into(
            context,
            self.depth_kernel.work_size(context, 4 * groups)?,
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
        let tan = repose_angle.to_radians().tan() as f32;
        let [flux, _, _] = &self.kernels;
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
        self.exchange(context, None, timeline)
    }

    /// Enqueues moving the per-edge fluxes in `self.flux` (units, signed, > 0 from an edge's
    /// first vertex to its second): each vertex's outflows scaled down so that they never
    /// exceed what it holds, then applied in integers at both ends; the fraction each vertex
    /// could give stays in `self.ratio` until the next exchange. With a `sink` (the drifting
    /// snow's): per vertex, units it also wants to give out of the domain, limited with its
    /// edges, what it gave added to `sink.1[0]` and each vertex's net loss to `sink.1[1]`.
    pub(super) fn exchange(
        &self,
        context: &Context,
        sink: Option<(&DeviceBuffer<u64>, &DeviceBuffer<u64>)>,
        timeline: &mut Timeline,
    ) -> Result<()> {
        let nv = self.geometry.len();
        let store = &self.volume;
        let has_sink = u32::from(sink.is_some());
        // Without a sink the kernels read neither buffer: any of the right type will do.
        let (sink, counter) = sink.unwrap_or((store, store));
        let [_, ratio, apply] = &self.kernels;
        let mut call = ratio.call();
        // SAFETY: offsets has nv + 1 entries, incident codes index the edges, the stores and
        // the sink hold nv values; the kernels guard their id against the count.
        unsafe {
            call.buffer(&self.offsets)?
                .buffer(&self.incident)?
                .buffer(&self.flux)?
                .buffer(store)?
                .buffer(&self.ratio)?
                .arg(&(nv as u32))?
                .buffer(sink)?
                .arg(&has_sink)?;
        }
        call.enqueue_into(context, ratio.work_size(context, nv)?, timeline)?;
        let mut call = apply.call();
        // SAFETY: as above; the counter holds at least two values, written only with a sink.
        unsafe {
            call.buffer(&self.offsets)?
                .buffer(&self.incident)?
                .buffer(&self.edges)?
                .buffer(&self.flux)?
                .buffer(&self.ratio)?
                .buffer(store)?
                .arg(&(nv as u32))?
                .buffer(sink)?
                .arg(&has_sink)?
                .buffer(counter)?;
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
