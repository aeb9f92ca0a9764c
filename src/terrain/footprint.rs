//! What a terrain mesh costs in memory, known from its specification before it is built.

use super::TerrainSpec;

/// Bytes per tetrahedron that validating a mesh (`mesh info --check`) takes at its peak: its
/// four faces as sorted keys, and their sort (measured: about 70).
pub const CHECK_BYTES_PER_TETRAHEDRON: u64 = 80;

/// Bytes of a vertex in a [`Mesh`](crate::meshio::Mesh): three `f64` and an `i32` reference.
pub const VERTEX_BYTES: u64 = 3 * 8 + 4;
/// Bytes of a tetrahedron: four `u32` nodes and an `i32` reference.
pub const TETRAHEDRON_BYTES: u64 = 4 * 4 + 4;
/// Bytes of a triangle: three `u32` nodes and an `i32` reference.
pub const TRIANGLE_BYTES: u64 = 3 * 4 + 4;

impl TerrainSpec {
    /// Bytes of the volume mesh in memory (vertices, tetrahedra, boundary triangles);
    /// [`u64::MAX`] when the counts overflow.
    pub fn volume_mesh_bytes(&self) -> u64 {
        let Some((vertices, tetrahedra, triangles)) = self.counts() else {
            return u64::MAX;
        };
        [
            (vertices, VERTEX_BYTES),
            (tetrahedra, TETRAHEDRON_BYTES),
            (triangles, TRIANGLE_BYTES),
        ]
        .iter()
        .fold(0u64, |sum, &(n, bytes)| {
            sum.saturating_add((n as u64).saturating_mul(bytes))
        })
    }

    /// Bytes of the ground surface ([`Terrain::ground_surface`](super::Terrain::ground_surface)):
    /// its vertices with their volume indices, its triangles, and the ground heights.
    pub fn ground_surface_bytes(&self) -> u64 {
        let [nx, ny] = self.cells.map(|n| n as u64);
        let columns = nx.saturating_add(1).saturating_mul(ny.saturating_add(1));
        let triangles = nx.saturating_mul(ny).saturating_mul(2);
        // Vertex, its volume index and its height; a triangle twice (the ground's list too).
        columns
            .saturating_mul(VERTEX_BYTES + 4 + 8)
            .saturating_add(triangles.saturating_mul(2 * TRIANGLE_BYTES))
    }

    /// Peak host bytes of meshing this terrain as `mesh terrain` and `scene check` do: the
    /// volume mesh, a renumbered copy or the encoded file (measured: 2.0 to 2.2 times the
    /// mesh; counted as 2.5), the ground surface, and with `checked` the validity checks
    /// ([`CHECK_BYTES_PER_TETRAHEDRON`]). [`u64::MAX`] when the counts overflow.
    pub fn meshing_peak_bytes(&self, checked: bool) -> u64 {
        let volume = self.volume_mesh_bytes();
        let tetrahedra = self.counts().map_or(u64::MAX, |(_, t, _)| t as u64);
        let check = if checked {
            tetrahedra.saturating_mul(CHECK_BYTES_PER_TETRAHEDRON)
        } else {
            0
        };
        (volume / 2)
            .saturating_mul(5)
            .saturating_add(self.ground_surface_bytes())
            .saturating_add(check)
    }
}
