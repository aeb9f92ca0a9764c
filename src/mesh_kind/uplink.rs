//! The uplink tables' widths: GMlib's base width of each uplink (`LenMatBas`) and the degree
//! classes an uplink is split into (widths `base`, `2·base`, `4·base`, …).
//!
//! gml builds its uplink tables by these rules and renumbering sorts entities by them, so
//! that each class is one contiguous range; they live here, below both, so that neither has
//! to import the other for them.

use super::MeshKind;

/// The degree class of an entity of `degree` in an uplink of base width `base`: 0 when the
/// degree fits `base`, else the smallest `c` with `degree <= base · 2^c`. Class `c` is stored
/// in a table of width `base · 2^c`.
pub fn degree_class(degree: usize, base: usize) -> u8 {
    let base = base.max(1).next_power_of_two();
    if degree <= base {
        0
    } else {
        degree.div_ceil(base).next_power_of_two().trailing_zeros() as u8
    }
}

/// GMlib's base width of the uplink from `src` to `dst` (`LenMatBas`): the low table's width.
pub fn base_width(src: MeshKind, dst: MeshKind) -> usize {
    use MeshKind::*;
    match (src, dst) {
        (Vertices, Edges) => 16,
        (Vertices, Triangles) => 8,
        (Vertices, Quadrilaterals) => 4,
        (Vertices, Tetrahedra) => 32,
        (Vertices, Pyramids | Prisms) => 16,
        (Vertices, Hexahedra) => 8,
        (Edges, Tetrahedra | Pyramids | Prisms) => 8,
        (Edges, Hexahedra) => 4,
        _ => 2,
    }
}
