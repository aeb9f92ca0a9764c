//! Errors of gml.

use crate::cl;
use crate::mesh_kind::MeshKind;

/// What went wrong in a gml call.
#[derive(Debug, thiserror::Error)]
pub enum GmlError {
    /// Generated kernels index with 32-bit `int`s: a table of more entries than that cannot be
    /// addressed.
    #[error(
        "{what} would hold {entries} entries, more than the {limit} that gml's generated \
         kernels can index with a 32-bit int"
    )]
    IndexRange {
        /// The datum or table, e.g. `solution `U` (3 values per vertex)`.
        what: String,
        /// Entries it would hold.
        entries: u128,
        /// The largest count (`i32::MAX`).
        limit: i32,
    },
    /// The OpenCL layer failed (device, allocation, build, launch).
    #[error(transparent)]
    Cl(#[from] cl::Error),
    /// A mesh file could not be imported.
    #[error(transparent)]
    Mesh(#[from] crate::meshio::MeshError),
    /// A handle from another instance, or to freed data, was used.
    #[error("data handle {0} does not belong to this gml instance (or was freed)")]
    UnknownData(usize),
    /// A line or block lies outside the data.
    #[error("{what}: lines {first}..{end} requested but the data has {lines} lines")]
    LineOutOfRange {
        /// The data's name.
        what: String,
        /// First line asked for.
        first: usize,
        /// One past the last line asked for.
        end: usize,
        /// Lines the data has.
        lines: usize,
    },
    /// A slice's length does not match what the data holds per line.
    #[error("{what}: expected {expected} values, got {got}")]
    WrongLength {
        /// The data's name.
        what: String,
        /// Values expected.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// An element refers to a vertex that does not exist.
    #[error(
        "{kind} {element}: node index {index} is out of range (the mesh has {vertices} vertices)"
    )]
    NodeOutOfRange {
        /// Element kind.
        kind: MeshKind,
        /// Element number (0-based).
        element: usize,
        /// The bad index.
        index: i64,
        /// Number of vertices.
        vertices: usize,
    },
    /// An element call was given the vertices.
    #[error("{0} are not elements: use the vertex calls (set_vertices, vertex_line, …)")]
    NotElements(MeshKind),
    /// Mesh data of this kind was not created.
    #[error("the mesh has no {0}: create or import them first")]
    MissingMesh(MeshKind),
    /// Solution data must be created after the mesh data it is attached to.
    #[error(
        "solution `{name}` needs {kind} mesh data to exist first (its line count comes from it)"
    )]
    SolutionBeforeMesh {
        /// The solution's name.
        name: String,
        /// Its mesh kind.
        kind: MeshKind,
    },
    /// A name that cannot be used in generated OpenCL code.
    #[error("`{0}` is not a valid data name: use letters, digits and `_`, starting with a letter")]
    BadName(String),
    /// A kernel name that OpenCL C reserves (a type, a qualifier, a keyword).
    #[error(
        "`{0}` cannot name a kernel: OpenCL C reserves it (a type, qualifier or keyword); \
         choose another name"
    )]
    ReservedName(String),
    /// Two data with the same name would produce the same generated variable.
    #[error("a datum named `{0}` already exists")]
    DuplicateName(String),
    /// Two things a kernel accesses would be declared under one generated name.
    #[error(
        "kernel `{kernel}`: {first} and {second} would both be named `{name}` in the generated \
         code; rename one of them"
    )]
    NameCollision {
        /// Kernel name.
        kernel: String,
        /// The generated name.
        name: String,
        /// What the name was generated for first.
        first: String,
        /// What else it was generated for.
        second: String,
    },
    /// The body uses a name that the manual's naming gives to two data of the kernel.
    #[error("kernel `{kernel}`: `{name}` could mean {first} or {second}")]
    AmbiguousName {
        /// Kernel name.
        kernel: String,
        /// The name the body uses.
        name: String,
        /// One datum it could mean, with its unambiguous name.
        first: String,
        /// The other datum, with its unambiguous name.
        second: String,
    },
    /// A kernel writes data through a link other than the identity.
    #[error(
        "kernel `{kernel}` writes `{data}` through {how}: indirect writes race between \
         work-items; write a scatter kernel over {data_kind} and a gather kernel instead"
    )]
    IndirectWrite {
        /// Kernel name.
        kernel: String,
        /// Data name.
        data: String,
        /// The link involved.
        how: String,
        /// Kind the data belongs to.
        data_kind: MeshKind,
    },
    /// A kernel accesses data whose kind has no default link from the loop kind.
    #[error(
        "kernel `{kernel}` loops over {from} and reads `{data}` on {to}: there is no default \
         link between two kinds of the same dimension; pass a user link"
    )]
    NoDefaultLink {
        /// Kernel name.
        kernel: String,
        /// Data name.
        data: String,
        /// Loop kind.
        from: MeshKind,
        /// Data kind.
        to: MeshKind,
    },
    /// A kernel mixes two uplink destinations (one degree table drives the launches).
    #[error(
        "kernel `{kernel}` reads through uplinks to both {first} and {second}: one kernel may \
         follow uplinks to one kind only; split it in two kernels"
    )]
    TwoUplinks {
        /// Kernel name.
        kernel: String,
        /// First uplink destination.
        first: MeshKind,
        /// Second uplink destination.
        second: MeshKind,
    },
    /// A user link does not start at the kernel's loop kind or end at the data's kind.
    #[error(
        "kernel `{kernel}`: link `{link}` goes from {link_from} to {link_to}, but `{data}` is \
         read in a loop over {loop_kind} from {data_kind}"
    )]
    LinkMismatch {
        /// Kernel name.
        kernel: String,
        /// Link name.
        link: String,
        /// Link source kind.
        link_from: MeshKind,
        /// Link destination kind.
        link_to: MeshKind,
        /// Data name.
        data: String,
        /// Loop kind of the kernel.
        loop_kind: MeshKind,
        /// Kind of the data.
        data_kind: MeshKind,
    },
    /// A downlink to edges or faces needs them to exist.
    #[error(
        "{kind} {element} has a {sub} (nodes {nodes:?}) that is not in the mesh: call \
         extract_{what}() before reading {sub_kind} data from {kind}"
    )]
    MissingSubEntity {
        /// Element kind.
        kind: MeshKind,
        /// Element number.
        element: usize,
        /// Singular name of the missing sub-entity.
        sub: &'static str,
        /// Its nodes.
        nodes: Vec<i32>,
        /// `edges` or `faces`.
        what: &'static str,
        /// The sub-entity kind.
        sub_kind: MeshKind,
    },
    /// A face is shared by more than two elements.
    #[error(
        "{kind}: a side (face, edge or vertex) with nodes {nodes:?} is shared by more than two \
         entities"
    )]
    NonManifold {
        /// Element kind.
        kind: MeshKind,
        /// Face nodes.
        nodes: Vec<i32>,
    },
    /// Neighbours are not defined for this kind.
    #[error(
        "neighbours through shared sides are not defined for {0}: they have no sides (edges \
         meet at vertices, surface elements at edges, solids at faces)"
    )]
    NoNeighbours(MeshKind),
    /// Two kinds that no mesh links: one is never part of the other, or they share no side.
    #[error("{}there is no link from {from} to {to}: {why}", kernel_prefix(.kernel))]
    ImpossibleLink {
        /// The kernel that asked for it, if a kernel did.
        kernel: Option<String>,
        /// Source kind (the kernel's loop kind).
        from: MeshKind,
        /// Destination kind (the data's kind).
        to: MeshKind,
        /// Why, in words (`quadrilaterals are never faces of tetrahedra`).
        why: String,
    },
    /// An access option that cannot apply to the datum or to the way it is reached.
    #[error("kernel `{kernel}`: `{data}` {option}, but {why}")]
    OptionNotApplicable {
        /// Kernel name.
        kernel: String,
        /// Data name.
        data: String,
        /// The option, in words (`is read with references (with_refs)`).
        option: String,
        /// Why it cannot apply, and what to do instead.
        why: String,
    },
    /// The device lacks double precision but a kernel or datum needs it.
    #[error("{0} needs double precision, which the device does not offer (cl_khr_fp64)")]
    NoFp64(String),
    /// Reductions work on f32, f64 and i32 solution data of one value per line.
    #[error(
        "reduction of `{0}`: only f32, f64 and i32 solution data of one value (scalar or \
         vector) per line can be reduced"
    )]
    NotReducible(String),
    /// The OpenCL parameter struct does not have the Rust struct's size.
    #[error(
        "parameter struct mismatch: the OpenCL `GmlParSct` is {device} bytes but the Rust type \
         is {host} bytes; make both declare the same fields in the same order, and remember \
         that OpenCL aligns vectors to their size (a float4 to 16 bytes): spell the padding \
         out in the #[repr(C)] Rust struct"
    )]
    ParameterLayout {
        /// `sizeof(GmlParSct)` on the device.
        device: usize,
        /// `size_of::<P>()` on the host.
        host: usize,
    },
    /// A kernel was compiled before parameters were declared, or with other ones.
    #[error("parameters have not been declared with new_parameters()")]
    NoParameters,
    /// A reduction's result was sent to a place outside the parameter struct.
    #[error(
        "a reduction cannot write the float at byte {offset} of the parameter struct \
         ({size} bytes): the offset must be a multiple of 4 inside the struct"
    )]
    ParameterOffset {
        /// The offset asked for.
        offset: usize,
        /// The struct's size.
        size: usize,
    },
    /// A datum (solution, user link, mesh data) or kernel was made for mesh data that have
    /// since been replaced or removed: its lines no longer match the entities.
    #[error(
        "{}`{data}` was made for the {kind} of generation {made_for} ({lines} entities), but \
         {change}; its memory was released: create it again (and compile again the kernels \
         that use it)",
        kernel_prefix(.kernel)
    )]
    StaleData {
        /// The kernel that uses the datum, when compiling or launching one found it stale.
        kernel: Option<String>,
        /// The datum's name.
        data: String,
        /// The mesh kind whose data changed.
        kind: MeshKind,
        /// The generation of that kind's mesh data the datum was made for.
        made_for: u64,
        /// Entities of that kind then.
        lines: usize,
        /// What happened since, e.g. "import_mesh replaced them (generation 9, 120 entities)".
        change: String,
    },
    /// A datum was replaced by a newer one of the same name (a second `set_neighbours`).
    #[error("`{data}` is no longer current: {why}")]
    Retired {
        /// The datum's name.
        data: String,
        /// What replaced it.
        why: String,
    },
    /// The kernel handle does not belong to this instance.
    #[error("kernel handle {0} does not belong to this gml instance")]
    UnknownKernel(usize),
    /// A kernel's sums (`KernelSpec::sums`) cannot be folded as asked.
    #[error("kernel `{kernel}` cannot fold its sums: {why}")]
    Sums {
        /// The kernel.
        kernel: String,
        /// What stops it.
        why: String,
    },
    /// A work-group size the kernel cannot run with (`KernelSpec::work_group`).
    #[error(
        "kernel `{kernel}`: work-groups of {size} work-items asked for, the device runs this \
         kernel in groups of 1 to {allowed}"
    )]
    WorkGroup {
        /// The kernel.
        kernel: String,
        /// The size asked for.
        size: usize,
        /// The most the kernel allows on the device.
        allowed: usize,
    },
    /// A reduction over a field of no lines.
    #[error("reduction of `{0}`: the field has no values")]
    EmptyReduction(String),
    /// A reduction's result was sent to a place outside the parameter struct.
    #[error(
        "a reduction cannot write its {bytes}-byte result(s) at byte {offset} of the parameter \
         struct ({size} bytes): the offset must be a multiple of {bytes} inside the struct"
    )]
    ReductionOffset {
        /// The offset asked for.
        offset: usize,
        /// Bytes of one result: 4 (float) or 8 (double, for f64 fields).
        bytes: usize,
        /// The struct's size.
        size: usize,
    },
    /// A reduction's programs or work buffers are missing (an internal error).
    #[error("a reduction's programs or work buffers are missing (an internal error)")]
    NoResultBuffer,
    /// A solution file could not be read or written (boxed: it is large).
    #[error(transparent)]
    Solution(Box<crate::meshio::SolutionError>),
    /// Fields that cannot be exported as asked.
    #[error("{what} {why}")]
    Export {
        /// The call or field, e.g. ``field `U` ``.
        what: String,
        /// What is wrong.
        why: String,
    },
    /// A solution file's `ReferenceStrings` do not match the types of a keyword.
    #[error(
        "{}{keyword}: its ReferenceStrings {why}",
        file.as_ref().map_or_else(String::new, |f| format!("{}: ", f.display()))
    )]
    SolutionNames {
        /// The file, when it was read by name.
        file: Option<std::path::PathBuf>,
        /// The keyword whose types are named, e.g. `SolAtVertices`.
        keyword: &'static str,
        /// What does not match.
        why: String,
    },
}

impl From<crate::meshio::SolutionError> for GmlError {
    fn from(error: crate::meshio::SolutionError) -> Self {
        GmlError::Solution(Box::new(error))
    }
}

fn kernel_prefix(kernel: &Option<String>) -> String {
    kernel
        .as_ref()
        .map_or_else(String::new, |k| format!("kernel `{k}`: "))
}

/// Result of gml calls.
pub type Result<T> = std::result::Result<T, GmlError>;
