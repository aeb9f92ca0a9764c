//! Data held by a gml instance: mesh entities, solution fields and user links, each mirrored
//! on the host and uploaded to the device when a kernel needs it.

use std::marker::PhantomData;

use super::value::{Value, ValueType};
use crate::cl::{Context, DeviceBuffer};
use crate::mesh_kind::MeshKind;

/// Identifies one datum of one gml instance. Handles of another instance are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataId {
    pub(crate) instance: u32,
    pub(crate) index: u32,
}

/// A solution field: `items` values of type `T` per entity of one mesh kind.
///
/// The type parameter makes a wrong value type a compile error: a `Solution<[f32; 4]>` is set
/// and read with `[f32; 4]` values and appears as `float4` in kernels.
#[derive(Debug)]
pub struct Solution<T: Value> {
    pub(crate) id: DataId,
    pub(crate) _type: PhantomData<fn() -> T>,
}

impl<T: Value> Clone for Solution<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Value> Copy for Solution<T> {}

/// A user topological link: for each entity of one kind, `width` entities of another kind
/// (or the same kind, for neighbours); -1 means "none".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub(crate) id: DataId,
}

/// Anything a kernel can access: mesh data, a solution or a link.
pub trait Data {
    /// The datum's identity.
    fn id(&self) -> DataId;
}

impl Data for DataId {
    fn id(&self) -> DataId {
        *self
    }
}

impl<T: Value> Data for Solution<T> {
    fn id(&self) -> DataId {
        self.id
    }
}

impl Data for Link {
    fn id(&self) -> DataId {
        self.id
    }
}

/// What a datum is.
#[derive(Clone, Debug)]
pub(crate) enum Role {
    /// Vertex coordinates (`float4`) or element nodes (`int` vector), each with a reference.
    Mesh(MeshKind),
    /// A solution field.
    Solution {
        kind: MeshKind,
        items: usize,
        value: ValueType,
        name: String,
    },
    /// A user link, `width` ints per line.
    Link {
        from: MeshKind,
        to: MeshKind,
        width: usize,
        name: String,
    },
}

impl Role {
    /// The mesh kind whose entities the lines belong to.
    pub fn kind(&self) -> MeshKind {
        match self {
            Role::Mesh(kind) => *kind,
            Role::Solution { kind, .. } => *kind,
            Role::Link { from, .. } => *from,
        }
    }

    /// The name used in generated code: `Crd` for vertices, `Ver` for element nodes, the
    /// user's name otherwise.
    pub fn name(&self) -> &str {
        match self {
            Role::Mesh(MeshKind::Vertices) => "Crd",
            Role::Mesh(_) => "Ver",
            Role::Solution { name, .. } | Role::Link { name, .. } => name,
        }
    }

    /// The OpenCL type of one value.
    pub fn value(&self) -> ValueType {
        use super::value::Scalar;
        match self {
            Role::Mesh(MeshKind::Vertices) => ValueType {
                scalar: Scalar::F32,
                width: 4,
            },
            Role::Mesh(kind) => ValueType {
                scalar: Scalar::I32,
                width: kind.node_vector_width(),
            },
            Role::Solution { value, .. } => *value,
            Role::Link { .. } => ValueType {
                scalar: Scalar::I32,
                width: 1,
            },
        }
    }

    /// Values per line.
    pub fn items(&self) -> usize {
        match self {
            Role::Mesh(_) => 1,
            Role::Solution { items, .. } => *items,
            Role::Link { width, .. } => *width,
        }
    }

    /// Bytes per line on the device.
    pub fn line_bytes(&self) -> usize {
        let v = self.value();
        let scalar = match v.scalar {
            super::value::Scalar::I8 => 1,
            super::value::Scalar::I32 | super::value::Scalar::F32 => 4,
            super::value::Scalar::F64 => 8,
        };
        scalar * v.width * self.items()
    }
}

/// The mesh data a datum was made for: a kind, the generation of its mesh data at the time,
/// and its entity count then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub kind: MeshKind,
    pub generation: u64,
    pub lines: usize,
}

/// One datum: its role, host mirror and device buffers.
pub(crate) struct Datum {
    pub role: Role,
    pub lines: usize,
    /// The mesh data (of its own kind, a link's source and destination, an element kind's
    /// vertices) this datum was made for. Once one of them is replaced or removed the datum is
    /// stale: its memory is released and every use of its handle is an error.
    pub made_for: Vec<Stamp>,
    /// Why the datum was retired though its mesh data are current (a newer `set_neighbours`,
    /// new element nodes under a neighbour link).
    pub retired: Option<String>,
    /// For a link built by `set_neighbours`: the kind whose element nodes it was computed
    /// from, so that changing them retires it.
    pub neighbours_of: Option<MeshKind>,
    /// Line-major bytes, exactly what the device holds.
    pub host: Vec<u8>,
    /// References of mesh entities (empty for other data).
    pub refs: Vec<i32>,
    pub device: Option<DeviceBuffer<u8>>,
    pub device_refs: Option<DeviceBuffer<i32>>,
    /// The host mirror changed since the last upload.
    pub host_dirty: bool,
    /// A kernel wrote the device copy since the last download.
    pub device_newer: bool,
    /// Lives as long as the datum: [`super::FieldBuffer`]s hold a weak reference to know
    /// whether the data they were made for still exists.
    pub alive: std::sync::Arc<()>,
}

impl Datum {
    pub fn new(role: Role, lines: usize) -> Self {
        let bytes = role.line_bytes() * lines;
        let refs = if matches!(role, Role::Mesh(_)) {
            vec![0; lines]
        } else {
            Vec::new()
        };
        Self {
            role,
            lines,
            made_for: Vec::new(),
            retired: None,
            neighbours_of: None,
            host: vec![0; bytes],
            refs,
            device: None,
            device_refs: None,
            host_dirty: true,
            device_newer: false,
            alive: std::sync::Arc::new(()),
        }
    }

    /// Uploads the host mirror if it changed, allocating the device buffers on first use.
    pub fn upload(&mut self, context: &Context) -> crate::cl::Result<()> {
        if !self.host_dirty && self.device.is_some() {
            return Ok(());
        }
        match &mut self.device {
            Some(buffer) => buffer.write(&self.host)?,
            None => self.device = Some(DeviceBuffer::from_slice(context, &self.host)?),
        }
        if matches!(self.role, Role::Mesh(_)) {
            match &mut self.device_refs {
                Some(buffer) => buffer.write(&self.refs)?,
                None => self.device_refs = Some(DeviceBuffer::from_slice(context, &self.refs)?),
            }
        }
        self.host_dirty = false;
        Ok(())
    }

    /// Brings the host mirror up to date after kernels wrote the device copy.
    pub fn download(&mut self) -> crate::cl::Result<()> {
        if self.device_newer
            && let Some(buffer) = &self.device
        {
            self.host = buffer.read()?;
            self.device_newer = false;
        }
        Ok(())
    }

    /// Releases the host and device memory of a stale datum and drops its liveness token, so
    /// that [`super::FieldBuffer`]s made from it go stale too. The role and stamps stay, to
    /// explain the error.
    pub fn release(&mut self) {
        self.host = Vec::new();
        self.refs = Vec::new();
        self.device = None;
        self.device_refs = None;
        self.host_dirty = false;
        self.device_newer = false;
        self.alive = std::sync::Arc::new(());
    }

    /// Element nodes without the padding lanes (mesh data of an element kind).
    pub fn nodes(&self) -> Vec<i32> {
        let Role::Mesh(kind) = self.role else {
            return Vec::new();
        };
        let width = kind.node_vector_width();
        let n = kind.nodes();
        let all: Vec<i32> = bytemuck::pod_collect_to_vec(&self.host);
        all.chunks_exact(width)
            .flat_map(|line| line[..n].iter().copied())
            .collect()
    }
}
