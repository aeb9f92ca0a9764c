//! Automatic topological links, built on the host when a kernel first needs them and kept on
//! the device until the mesh changes.

use std::collections::HashMap;

use rayon::prelude::*;

use super::Gml;
use super::data::Datum;
use super::error::{GmlError, Result};
use super::topology::{self, SubEntityIndex};
use crate::cl::DeviceBuffer;
use crate::mesh_kind::MeshKind;

/// One table of a link as stored on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkTable {
    /// Entries per row: the kernel's `…DegMax` for uplinks, the number of sub-entities for
    /// downlinks.
    pub width: usize,
    /// Rows (source entities) in this table.
    pub rows: usize,
}

/// How a link is stored: GMlib's low and high tables, generalised to as many degree classes
/// as the mesh needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// Source kind.
    pub from: MeshKind,
    /// Destination kind.
    pub to: MeshKind,
    /// The tables, narrowest first.
    pub tables: Vec<LinkTable>,
    /// Largest number of destination entities of one source entity.
    pub max_degree: usize,
}

/// One degree class of an uplink on the device.
pub(crate) struct UpTable {
    pub width: usize,
    pub rows: usize,
    /// The first row's entity when the rows are consecutive entities.
    pub first: Option<i32>,
    /// The entity of each row (also allocated when contiguous, so the argument list is fixed).
    pub row_list: DeviceBuffer<i32>,
    /// Destination entities, column-major (`k * rows + r`).
    pub ball: DeviceBuffer<i32>,
    /// Local index of the source inside each destination, same layout.
    pub locals: DeviceBuffer<i8>,
}

/// A built link.
pub(crate) enum Auto {
    /// Element → its edges or faces, or → the entities of another kind of its dimension
    /// across its sides (-1 where none): `width` ints per element, row-major.
    Down {
        table: DeviceBuffer<i32>,
        width: usize,
        rows: usize,
    },
    /// Entity → the higher-dimension entities containing it.
    Up {
        degree: DeviceBuffer<i32>,
        tables: Vec<UpTable>,
        max_degree: usize,
    },
}

/// The links built so far, by (source, destination).
///
/// Every link built gets a new version number, so that a kernel compiled over a link's tables
/// knows when they were rebuilt (new rows, new degree classes, new contiguity) and builds its
/// programs again.
#[derive(Default)]
pub(crate) struct Cache {
    links: HashMap<(MeshKind, MeshKind), Auto>,
    versions: HashMap<(MeshKind, MeshKind), u64>,
    serial: u64,
}

impl Cache {
    /// Forgets every link touching `kind` (its entities changed).
    pub fn invalidate(&mut self, kind: MeshKind) {
        self.links.retain(|&(a, b), _| a != kind && b != kind);
        self.versions.retain(|&(a, b), _| a != kind && b != kind);
    }

    /// Stores a link just built, under a new version.
    pub fn insert(&mut self, from: MeshKind, to: MeshKind, auto: Auto) {
        self.serial += 1;
        self.links.insert((from, to), auto);
        self.versions.insert((from, to), self.serial);
    }

    /// The version of the link from `from` to `to`, `None` when it is not built.
    pub fn version(&self, from: MeshKind, to: MeshKind) -> Option<u64> {
        self.versions.get(&(from, to)).copied()
    }

    pub fn get(&self, from: MeshKind, to: MeshKind) -> Option<&Auto> {
        self.links.get(&(from, to))
    }

    pub fn info(&self, from: MeshKind, to: MeshKind) -> LinkInfo {
        let (tables, max_degree) = match self.links.get(&(from, to)) {
            Some(Auto::Down { width, rows, .. }) => (
                vec![LinkTable {
                    width: *width,
                    rows: *rows,
                }],
                *width,
            ),
            Some(Auto::Up {
                tables, max_degree, ..
            }) => (
                tables
                    .iter()
                    .map(|t| LinkTable {
                        width: t.width,
                        rows: t.rows,
                    })
                    .collect(),
                *max_degree,
            ),
            None => (Vec::new(), 0),
        };
        LinkInfo {
            from,
            to,
            tables,
            max_degree,
        }
    }
}

/// Builds the automatic link from `from` to `to` unless it exists. Element → vertex links need
/// nothing: the element table is the link. Between two kinds of one dimension the link is, for
/// each entity, the entity of `to` across each side they can share, -1 where none (stored as a
/// downlink table). A link no mesh can have is a [`GmlError::ImpossibleLink`].
pub(crate) fn build(gml: &mut Gml, from: MeshKind, to: MeshKind) -> Result<()> {
    if !from.links_to(to) {
        return Err(GmlError::ImpossibleLink {
            kernel: None,
            from,
            to,
            why: crate::mesh_kind::no_link_reason(from, to),
        });
    }
    if from == to || to == MeshKind::Vertices || gml.links.get(from, to).is_some() {
        return Ok(());
    }
    let from_count = gml.count(from).ok_or(GmlError::MissingMesh(from))?;
    let to_id = gml.mesh(to)?;
    let context = gml.context.clone();
    let auto = if from.dimension() == to.dimension() {
        let width = from.transverse_sides(to).len();
        super::check_index_range(|| format!("the {from} → {to} link"), from_count, width)?;
        let from_nodes = gml.datum(gml.mesh(from)?)?.nodes();
        let to_nodes = gml.datum(to_id)?.nodes();
        let table = topology::transverse(from, &from_nodes, to, &to_nodes)
            .map_err(|nodes| GmlError::NonManifold { kind: from, nodes })?;
        Auto::Down {
            table: DeviceBuffer::from_slice(&context, &table)?,
            width,
            rows: from_count,
        }
    } else if from.dimension() > to.dimension() {
        super::check_index_range(
            || format!("the {from} → {to} downlink"),
            from_count,
            from.sub_entities(to).len(),
        )?;
        let to_nodes = gml.datum(to_id)?.nodes();
        let from_nodes = gml.datum(gml.mesh(from)?)?.nodes();
        let vertices = gml.count(MeshKind::Vertices).unwrap_or(0);
        let index = SubEntityIndex::new(vertices, to, &to_nodes);
        let table =
            topology::downlink(from, &from_nodes, to, &index).map_err(|(element, nodes)| {
                GmlError::MissingSubEntity {
                    kind: from,
                    element,
                    sub: if to == MeshKind::Edges {
                        "edge"
                    } else {
                        "face"
                    },
                    nodes,
                    what: if to == MeshKind::Edges {
                        "edges"
                    } else {
                        "faces"
                    },
                    sub_kind: to,
                }
            })?;
        Auto::Down {
            table: DeviceBuffer::from_slice(&context, &table)?,
            width: from.sub_entities(to).len(),
            rows: from_count,
        }
    } else {
        let base = topology::base_width(from, to);
        let ball = if from == MeshKind::Vertices {
            ball(from_count, to, gml.datum(to_id)?, base)
        } else {
            let to_nodes = gml.datum(to_id)?.nodes();
            let vertices = gml.count(MeshKind::Vertices).unwrap_or(0);
            let from_nodes = gml.datum(gml.mesh(from)?)?.nodes();
            let index = SubEntityIndex::new(vertices, from, &from_nodes);
            let incidence = topology::shell(from_count, to, &to_nodes, from, &index);
            topology::BallTables {
                degrees: (0..incidence.rows())
                    .into_par_iter()
                    .map(|i| incidence.degree(i) as i32)
                    .collect(),
                max_degree: incidence.max_degree(),
                classes: topology::degree_classes(&incidence, base),
            }
        };
        let mut tables = Vec::new();
        for class in &ball.classes {
            super::check_index_range(
                || format!("a {from} → {to} uplink table of width {}", class.width),
                class.rows.len(),
                class.width,
            )?;
            tables.push(UpTable {
                width: class.width,
                rows: class.rows.len(),
                first: class.contiguous().then(|| class.rows[0]),
                row_list: DeviceBuffer::from_slice(&context, &class.rows)?,
                ball: DeviceBuffer::from_slice(&context, &class.ball)?,
                locals: DeviceBuffer::from_slice(&context, &class.locals)?,
            });
        }
        Auto::Up {
            degree: DeviceBuffer::from_slice(&context, &ball.degrees)?,
            tables,
            max_degree: ball.max_degree,
        }
    };
    gml.links.insert(from, to, auto);
    Ok(())
}

/// The ball of each vertex in the elements of `kind`, split into degree classes of base width
/// `base`, read from the datum's padded lines in place (no copy of the element table) when
/// they are aligned as `i32`.
fn ball(vertices: usize, kind: MeshKind, datum: &Datum, base: usize) -> topology::BallTables {
    let (width, n) = (kind.node_vector_width(), kind.nodes());
    match bytemuck::try_cast_slice::<u8, i32>(&datum.host) {
        Ok(lines) => topology::vertex_ball_tables(vertices, lines, width, n, base),
        Err(_) => topology::vertex_ball_tables(vertices, &datum.nodes(), n, n, base),
    }
}
