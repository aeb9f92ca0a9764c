//! What the user asks of a kernel: its name, loop kind, the data it accesses and how (read,
//! written, through which link, with which options), its body, and the sums it folds.
//!
//! The bottom of the kernel pipeline: a spec is plain data, checked only when it is resolved
//! and built, so everything else in [`super`] may use it and it uses none of them.

use crate::gml::Link;
use crate::gml::data::{Data, DataId};
use crate::mesh_kind::MeshKind;

/// How a kernel uses a datum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Loaded before the body; changes are discarded.
    Read,
    /// Declared (zeroed) before the body and stored after it.
    Write,
    /// Loaded before the body and stored after it.
    ReadWrite,
}

/// One datum a kernel accesses, with its mode and options (GMlib's `DatIdx, Flags, LnkIdx`).
#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub(super) data: DataId,
    pub(super) mode: Mode,
    pub(super) link: Option<DataId>,
    pub(super) refs: bool,
    pub(super) voyeurs: bool,
}

impl Access {
    fn new(data: impl Data, mode: Mode) -> Self {
        Self {
            data: data.id(),
            mode,
            link: None,
            refs: false,
            voyeurs: false,
        }
    }

    /// Read only.
    pub fn read(data: impl Data) -> Self {
        Self::new(data, Mode::Read)
    }

    /// Written only (the loop kind's own data).
    pub fn write(data: impl Data) -> Self {
        Self::new(data, Mode::Write)
    }

    /// Read and written (the loop kind's own data).
    pub fn read_write(data: impl Data) -> Self {
        Self::new(data, Mode::ReadWrite)
    }

    /// Follows this user link (for example from `set_neighbours`) instead of the default one.
    pub fn via(mut self, link: Link) -> Self {
        self.link = Some(link.id());
        self
    }

    /// Also loads the references of mesh data (`GmlRefFlag`): `<L>Ref`, `<L><K>Ref[n]`.
    pub fn with_refs(mut self) -> Self {
        self.refs = true;
        self
    }

    /// Through an uplink, also gives the local index of the loop entity inside each element of
    /// the ball (`GmlVoyeurs`): `<L><K>Voy[i]`.
    pub fn with_voyeurs(mut self) -> Self {
        self.voyeurs = true;
        self
    }
}

/// What to compile: the loop kind, the data accessed, and the loop body.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    pub(super) name: String,
    pub(super) loop_kind: MeshKind,
    pub(super) accesses: Vec<Access>,
    pub(super) body: String,
    pub(super) sums: Option<Sums>,
    /// Work-items per work-group, when the user sets it.
    pub(super) work_group: Option<usize>,
}

/// Sums a kernel folds itself: how many, and the code that receives the totals.
#[derive(Clone, Debug)]
pub(super) struct Sums {
    pub(super) count: usize,
    pub(super) finish: String,
}

/// Most sums one kernel may fold.
pub const MAX_SUMS: usize = 8;

impl KernelSpec {
    /// A kernel called `name` (an OpenCL identifier) looping over every entity of `loop_kind`.
    pub fn new(name: &str, loop_kind: MeshKind) -> Self {
        Self {
            name: name.to_string(),
            loop_kind,
            accesses: Vec::new(),
            body: String::new(),
            sums: None,
            work_group: None,
        }
    }

    /// Adds a datum to the kernel.
    pub fn access(mut self, access: Access) -> Self {
        self.accesses.push(access);
        self
    }

    /// The loop body: OpenCL statements using the generated variables, under the manual's
    /// names or gml's (see the module documentation of [`gml`](crate::gml), "Names").
    pub fn body(mut self, body: &str) -> Self {
        self.body = body.to_string();
        self
    }

    /// Runs the kernel in work-groups of `size` work-items instead of gml's choice (the largest
    /// multiple of the device's preferred multiple up to 256): for tuning, and for tests of
    /// sizes a device would not pick. More than the kernel allows on the device is an error
    /// at compilation.
    pub fn work_group(mut self, size: usize) -> Self {
        self.work_group = Some(size);
        self
    }

    /// Makes the kernel fold `count` sums over its entities itself, without a reduction
    /// launch: the body sets (or adds to) `GmlSum[k]`, its entity's term of sum `k` (zero on
    /// entry; of type `GML_SUM_T`, double where the device has fp64, float otherwise); once
    /// every entity is done, the work-group that finishes last runs `finish` once, with the
    /// totals in `GmlSum[k]` and the parameters writable (`GmlPar->dot = GmlSum[0];`), where
    /// later kernels of the queue read them. A body's `return` ends only its own entity. This
    /// is how a Krylov solver gets its dot products for free: the kernel that computes `A d`
    /// also sums `d · A d`. At most [`MAX_SUMS`] sums. Through an uplink, whose kernel runs
    /// one launch per degree table, the launches fold into the same totals and `finish` runs
    /// once, after the last one; an uplink without any table (no entity) cannot run it, and
    /// launching is then an error.
    pub fn sums(mut self, count: usize, finish: &str) -> Self {
        self.sums = Some(Sums {
            count,
            finish: finish.to_string(),
        });
        self
    }
}
