//! Kernel specifications, compilation into one program per link table, and launches.

use std::time::Duration;

use super::Gml;
use super::codegen::{self, Arg, Relation, Resolved, Variant};
use super::data::{Data, DataId, Role};
use super::error::{GmlError, Result};
use super::links::Auto;
use crate::cl::{self, DeviceBuffer, Kernel, KernelCall, Program, Source, Timeline, WorkSize};
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
    data: DataId,
    mode: Mode,
    link: Option<DataId>,
    refs: bool,
    voyeurs: bool,
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
    pub fn via(mut self, link: super::Link) -> Self {
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
    name: String,
    loop_kind: MeshKind,
    accesses: Vec<Access>,
    body: String,
    sums: Option<Sums>,
    /// Work-items per work-group, when the user sets it.
    work_group: Option<usize>,
}

/// Sums a kernel folds itself: how many, and the code that receives the totals.
#[derive(Clone, Debug)]
struct Sums {
    count: usize,
    finish: String,
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
    /// names or gml's (see the module documentation of [`gml`](super), "Names").
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

/// Identifies a compiled kernel of one gml instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId {
    pub(crate) instance: u32,
    pub(crate) index: usize,
}

/// One program, for one link table.
pub(crate) struct CompiledVariant {
    kernel: Kernel,
    args: Vec<Arg>,
    source: String,
    /// Index of the uplink table this variant runs over.
    table: Option<usize>,
    /// Largest work-group the kernel allows, and its preferred multiple, on this device.
    allowed: usize,
    multiple: usize,
    /// Rows of its table and first entity, as of the last [`prepare`].
    rows: usize,
    first: i32,
    /// With sums, the index of this variant's first partial: the work-groups of the variants
    /// before it, which run before it on the queue.
    sum_base: u32,
}

/// The device side of a kernel's sums, shared by its variants (one launch per degree table
/// through an uplink): one partial per work-group and sum, and the ticket.
struct SumBuffers {
    partials: DeviceBuffer<u8>,
    ticket: DeviceBuffer<u32>,
    /// Work-groups of all the variants' launches, as of the last [`prepare`].
    groups: u32,
    /// Bytes of one work-item's (or one group's) terms: the sums times their scalar's size.
    terms_bytes: usize,
}

/// The sums' OpenCL scalar type and its size: double where the device has fp64, else float.
fn sum_scalar(gml: &Gml) -> (&'static str, usize) {
    if gml.has_fp64() {
        ("double", 8)
    } else {
        ("float", 4)
    }
}

/// A compiled kernel with its variants.
pub(crate) struct Compiled {
    pub name: String,
    /// The instance generation it was last prepared for (links built, data uploaded).
    prepared: Option<u64>,
    spec: KernelSpec,
    loop_kind: MeshKind,
    uplink: Option<MeshKind>,
    /// Version of the uplink's tables the variants were generated for.
    uplink_version: Option<u64>,
    /// How many times the programs were built (1 at compilation).
    pub builds: usize,
    accesses: Vec<Resolved>,
    variants: Vec<CompiledVariant>,
    /// With sums, the partials and ticket of every variant.
    sum_buffers: Option<SumBuffers>,
}

impl Compiled {
    pub fn sources(&self) -> Vec<String> {
        self.variants.iter().map(|v| v.source.clone()).collect()
    }
}

/// Resolves the spec's accesses: names, types, and how each datum is reached.
fn resolve(gml: &Gml, spec: &KernelSpec) -> Result<(Vec<Resolved>, Option<MeshKind>)> {
    let l = spec.loop_kind;
    let mut resolved = Vec::new();
    let mut uplink = None;
    for (i, a) in spec.accesses.iter().enumerate() {
        if spec.accesses[..i].iter().any(|b| b.data == a.data) {
            return Err(GmlError::DuplicateName(format!(
                "{} (accessed twice by kernel `{}`)",
                gml.datum(a.data)?.role.name(),
                spec.name
            )));
        }
        let datum = gml.datum(a.data)?;
        let kind = datum.role.kind();
        let name = datum.role.name().to_string();
        if let Role::Link { .. } = datum.role {
            return Err(GmlError::LinkMismatch {
                kernel: spec.name.clone(),
                link: name.clone(),
                link_from: kind,
                link_to: kind,
                data: name,
                loop_kind: l,
                data_kind: kind,
            });
        }
        let is_mesh = matches!(datum.role, Role::Mesh(_));
        let relation = match a.link {
            Some(link) => {
                let Role::Link {
                    from,
                    to,
                    width,
                    name: link_name,
                } = &gml.datum(link)?.role
                else {
                    return Err(GmlError::UnknownData(link.index as usize));
                };
                if *from != l || *to != kind {
                    return Err(GmlError::LinkMismatch {
                        kernel: spec.name.clone(),
                        link: link_name.clone(),
                        link_from: *from,
                        link_to: *to,
                        data: name,
                        loop_kind: l,
                        data_kind: kind,
                    });
                }
                Relation::User {
                    link,
                    link_name: link_name.clone(),
                    width: *width,
                    neighbours: *from == *to,
                }
            }
            None if kind == l => Relation::Direct,
            None if !l.links_to(kind) => {
                return Err(GmlError::ImpossibleLink {
                    kernel: Some(spec.name.clone()),
                    from: l,
                    to: kind,
                    why: format!(
                        "{}; `{name}` cannot be read in a loop over {l}",
                        crate::mesh_kind::no_link_reason(l, kind)
                    ),
                });
            }
            None if kind.dimension() < l.dimension() => Relation::Down {
                count: if kind == MeshKind::Vertices {
                    l.nodes()
                } else {
                    l.sub_entities(kind).len()
                },
            },
            None if kind.dimension() > l.dimension() => {
                match uplink {
                    Some(other) if other != kind => {
                        return Err(GmlError::TwoUplinks {
                            kernel: spec.name.clone(),
                            first: other,
                            second: kind,
                        });
                    }
                    _ => uplink = Some(kind),
                }
                Relation::Up
            }
            None => Relation::Across {
                count: l.transverse_sides(kind).len(),
            },
        };
        if a.refs && !is_mesh {
            return Err(GmlError::OptionNotApplicable {
                kernel: spec.name.clone(),
                data: name,
                option: "is read with references (with_refs)".to_string(),
                why: format!(
                    "references belong to mesh entities, not to solution data: pass the {kind} \
                     mesh data (gml.mesh({kind:?})) with with_refs to read theirs"
                ),
            });
        }
        if a.mode != super::Mode::Read {
            if relation != Relation::Direct {
                let how = match &relation {
                    Relation::User { link_name, .. } => format!("the link `{link_name}`"),
                    Relation::Down { .. } => format!("the downlink {l} → {kind}"),
                    Relation::Across { .. } => format!("the link {l} → {kind} across sides"),
                    _ => format!("the uplink {l} → {kind}"),
                };
                return Err(GmlError::IndirectWrite {
                    kernel: spec.name.clone(),
                    data: name,
                    how,
                    data_kind: kind,
                });
            }
            if is_mesh && kind != MeshKind::Vertices {
                return Err(GmlError::IndirectWrite {
                    kernel: spec.name.clone(),
                    data: name,
                    how: "element nodes, which kernels may not change".to_string(),
                    data_kind: kind,
                });
            }
        }
        if datum.role.value().scalar == super::Scalar::F64 && !gml.has_fp64() {
            return Err(GmlError::NoFp64(format!("kernel `{}`", spec.name)));
        }
        resolved.push(Resolved {
            data: a.data,
            kind,
            name,
            value: datum.role.value(),
            items: datum.role.items(),
            is_mesh,
            mode: a.mode,
            refs: a.refs,
            voyeurs: a.voyeurs,
            relation,
        });
    }
    Ok((resolved, uplink))
}

/// Builds the links the accesses need.
fn build_links(gml: &mut Gml, loop_kind: MeshKind, accesses: &[Resolved]) -> Result<()> {
    gml.mesh(loop_kind)?;
    for a in accesses {
        if matches!(
            a.relation,
            Relation::Down { .. } | Relation::Up | Relation::Across { .. }
        ) {
            gml.build_link(loop_kind, a.kind)?;
        }
    }
    Ok(())
}

/// Widths and contiguity of the uplink's tables (one direct "table" without uplink).
fn variants(
    gml: &Gml,
    loop_kind: MeshKind,
    uplink: Option<MeshKind>,
) -> Vec<(Variant, Option<usize>)> {
    match uplink.and_then(|up| gml.links.get(loop_kind, up)) {
        Some(Auto::Up { tables, .. }) => tables
            .iter()
            .enumerate()
            .map(|(i, t)| {
                (
                    Variant {
                        width: Some(t.width),
                        contiguous: t.first.is_some(),
                        sums: None,
                    },
                    Some(i),
                )
            })
            .collect(),
        _ => vec![(
            Variant {
                width: None,
                contiguous: true,
                sums: None,
            },
            None,
        )],
    }
}

fn check_identifier(name: &str) -> Result<()> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(GmlError::BadName(name.to_string()));
    }
    if is_reserved(name) {
        return Err(GmlError::ReservedName(name.to_string()));
    }
    Ok(())
}

/// Whether OpenCL C (1.2–3.0) reserves `name`: C keywords, address space and access
/// qualifiers, and the built-in scalar, vector and image types.
pub(crate) fn is_reserved(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "bool",
        "half",
        "uchar",
        "ushort",
        "uint",
        "ulong",
        "size_t",
        "ptrdiff_t",
        "intptr_t",
        "uintptr_t",
        "kernel",
        "__kernel",
        "global",
        "__global",
        "local",
        "__local",
        "constant",
        "__constant",
        "private",
        "__private",
        "generic",
        "__generic",
        "read_only",
        "write_only",
        "read_write",
        "__read_only",
        "__write_only",
        "__read_write",
        "image1d_t",
        "image2d_t",
        "image3d_t",
        "sampler_t",
        "event_t",
        "pipe",
        "quad",
        "complex",
        "imaginary",
    ];
    if WORDS.contains(&name) {
        return true;
    }
    // Vector types: char2 … double16, and the reserved quad/half vectors.
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let base = &name[..name.len() - digits.len()];
    matches!(digits, "2" | "3" | "4" | "8" | "16")
        && matches!(
            base,
            "char"
                | "uchar"
                | "short"
                | "ushort"
                | "int"
                | "uint"
                | "long"
                | "ulong"
                | "float"
                | "double"
                | "half"
                | "bool"
                | "quad"
        )
}

/// Generates and builds every variant of `spec`.
fn build(gml: &mut Gml, spec: &KernelSpec) -> Result<Compiled> {
    check_identifier(&spec.name)?;
    let (accesses, uplink) = resolve(gml, spec).map_err(|e| in_kernel(&spec.name, e))?;
    if let Some(sums) = &spec.sums {
        check_sums(spec, sums)?;
    }
    let sum_double = spec.sums.is_some() && gml.has_fp64();
    build_links(gml, spec.loop_kind, &accesses)?;
    let toolkit = Source::embedded(
        "gml_toolkit.cl",
        include_str!("../../kernels/gml_toolkit.cl"),
    )?;
    let params = gml.params_source();
    // A kernel over f64 data computes in double: unsuffixed literals stay double there (with
    // -cl-single-precision-constant, `0.1` would be a float and cost the digits), and the
    // toolkit's double helpers are included.
    let double = accesses
        .iter()
        .any(|a| a.value.scalar == super::Scalar::F64);
    let options = format!(
        "{}-cl-mad-enable {}",
        if double {
            ""
        } else {
            "-cl-single-precision-constant "
        },
        gml.options
    );
    let mut compiled_variants = Vec::new();
    let uplink_version = uplink.and_then(|up| gml.links.version(spec.loop_kind, up));
    for (mut variant, table) in variants(gml, spec.loop_kind, uplink) {
        variant.sums = spec.sums.as_ref().map(|s| s.count);
        let generated = codegen::generate(
            &spec.name,
            spec.loop_kind,
            &accesses,
            uplink,
            &variant,
            &spec.body,
        )?;
        let generated_name = format!("{}.generated", spec.name);
        let mut sources = Vec::new();
        if double || sum_double {
            sources.push(Source::new(
                "fp64",
                "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n",
            ));
        }
        sources.push(toolkit.clone());
        if double {
            sources.push(Source::embedded(
                "gml_toolkit_f64.cl",
                include_str!("../../kernels/gml_toolkit_f64.cl"),
            )?);
        }
        if !gml.toolkit.is_empty() {
            sources.push(Source::new("user toolkit", gml.toolkit.clone()));
        }
        sources.push(Source::new("parameters", params.clone()));
        if let Some(sums) = &spec.sums {
            sources.push(Source::new(
                "sums",
                format!(
                    "#define GML_SUM_T {}\n#define GML_SUMS {}\n",
                    sum_scalar(gml).0,
                    sums.count
                ),
            ));
            sources.push(Source::embedded(
                "gml_sums.cl",
                include_str!("../../kernels/gml_sums.cl"),
            )?);
        }
        sources.push(Source::new(generated_name.clone(), generated.prologue));
        sources.push(Source::new(spec.name.clone(), generated.body));
        sources.push(Source::new(generated_name.clone(), generated.epilogue));
        if let Some(sums) = &spec.sums {
            sources.push(Source::new(
                format!("{}.finish", spec.name),
                sums.finish.clone(),
            ));
            sources.push(Source::new(generated_name, generated.tail));
        }
        let source: String = sources
            .iter()
            .map(|s| format!("// ---- {} ----\n{}", s.name, s.text))
            .collect();
        if gml.debug {
            eprintln!("gml: kernel `{}` source:\n{source}", spec.name);
        }
        let program = Program::build(&gml.context, &sources, &options)?;
        let kernel = program.kernel(&spec.name)?;
        let allowed = kernel.max_group(&gml.context)?;
        if let Some(size) = spec.work_group
            && !(1..=allowed).contains(&size)
        {
            return Err(GmlError::WorkGroup {
                kernel: spec.name.clone(),
                size,
                allowed,
            });
        }
        let multiple = kernel
            .cl_kernel()
            .get_work_group_size_multiple(gml.context.device().id())
            .map_err(|code| cl::Error::Api {
                call: format!(
                    "clGetKernelWorkGroupInfo(PREFERRED_WORK_GROUP_SIZE_MULTIPLE) of {}",
                    spec.name
                ),
                code,
            })?;
        compiled_variants.push(CompiledVariant {
            kernel,
            args: generated.args,
            source,
            table,
            allowed,
            multiple,
            rows: 0,
            first: 0,
            sum_base: 0,
        });
    }
    Ok(Compiled {
        name: spec.name.clone(),
        prepared: None,
        spec: spec.clone(),
        loop_kind: spec.loop_kind,
        uplink,
        uplink_version,
        builds: 1,
        accesses,
        variants: compiled_variants,
        sum_buffers: None,
    })
}

/// The work sizes of a launch over `rows`: the user's work-group size, else gml's choice.
fn work_size(rows: usize, variant: &CompiledVariant, user: Option<usize>) -> WorkSize {
    match user {
        Some(local) => WorkSize {
            global: rows.max(1).div_ceil(local) * local,
            local,
        },
        None => WorkSize::choose(rows, variant.allowed, variant.multiple),
    }
}

/// Sums need a count the fold can hold.
fn check_sums(spec: &KernelSpec, sums: &Sums) -> Result<()> {
    if (1..=MAX_SUMS).contains(&sums.count) {
        return Ok(());
    }
    Err(GmlError::Sums {
        kernel: spec.name.clone(),
        why: format!("{} sums asked for, 1 to {MAX_SUMS} allowed", sums.count),
    })
}

pub(crate) fn compile(gml: &mut Gml, spec: KernelSpec) -> Result<KernelId> {
    let compiled = build(gml, &spec)?;
    gml.kernels.push(compiled);
    Ok(KernelId {
        instance: gml.instance,
        index: gml.kernels.len() - 1,
    })
}

/// Brings everything `id` reads up to date on the device: links (rebuilt, and the kernel
/// recompiled, if the mesh changed), data changed on the host, the parameter block. Skipped
/// when nothing changed since the kernel was last prepared.
fn prepare(gml: &mut Gml, id: KernelId) -> Result<()> {
    gml.kernel(id)?;
    if gml.kernels[id.index].prepared == Some(gml.generation) {
        return Ok(());
    }
    // The mesh may have changed since compilation: rebuild links, and the programs whenever
    // the uplink's tables were rebuilt (their widths, number and contiguity are compiled in).
    // Every datum must still be current: a stale one is an error, never a launch over
    // buffers sized for other entities.
    let (loop_kind, uplink) = {
        let k = &gml.kernels[id.index];
        (k.loop_kind, k.uplink)
    };
    let accesses = gml.kernels[id.index].accesses.clone();
    check_current(gml, id, &accesses)?;
    build_links(gml, loop_kind, &accesses)?;
    let version = uplink.and_then(|up| gml.links.version(loop_kind, up));
    if version != gml.kernels[id.index].uplink_version {
        let spec = gml.kernels[id.index].spec.clone();
        let builds = gml.kernels[id.index].builds;
        let mut rebuilt = build(gml, &spec)?;
        rebuilt.builds = builds + 1;
        gml.kernels[id.index] = rebuilt;
    }
    // Upload what changed on the host.
    let context = gml.context.clone();
    let mut needed: Vec<DataId> = accesses.iter().map(|a| a.data).collect();
    for a in &accesses {
        if let Relation::User { link, .. } = a.relation {
            needed.push(link);
        }
    }
    for kind in [loop_kind, MeshKind::Vertices] {
        if let Ok(id) = gml.mesh(kind) {
            needed.push(id);
        }
    }
    for id in &needed {
        gml.datum_mut_quiet(*id)?.upload(&context)?;
    }
    gml.ensure_params()?;
    let count = gml
        .count(loop_kind)
        .ok_or(GmlError::MissingMesh(loop_kind))?;
    let up = uplink.and_then(|u| gml.links.get(loop_kind, u));
    let ranges: Vec<(usize, i32)> = gml.kernels[id.index]
        .variants
        .iter()
        .map(|variant| match (variant.table, up) {
            (Some(t), Some(Auto::Up { tables, .. })) => {
                (tables[t].rows, tables[t].first.unwrap_or(0))
            }
            _ => (count, 0),
        })
        .collect();
    let sums = gml.kernels[id.index].spec.sums.as_ref().map(|s| s.count);
    let sum_size = sum_scalar(gml).1;
    let kernel = &mut gml.kernels[id.index];
    // With sums, every variant launches (even over no row: the finish then gets zeros) and
    // writes its groups' partials after those of the variants before it.
    let mut groups = 0usize;
    for (variant, (rows, first)) in kernel.variants.iter_mut().zip(ranges) {
        variant.rows = rows;
        variant.first = first;
        // Every base is below the total, which sums check against 32 bits below.
        variant.sum_base = u32::try_from(groups).unwrap_or(u32::MAX);
        let work = work_size(rows, variant, kernel.spec.work_group);
        groups += work.global / work.local;
    }
    if let Some(count) = sums {
        if kernel.variants.is_empty() {
            return Err(GmlError::Sums {
                kernel: kernel.name.clone(),
                why: "its uplink has no degree table (no entity to loop over), so no launch \
                      could run its finish"
                    .into(),
            });
        }
        let total = u32::try_from(groups).map_err(|_| GmlError::Sums {
            kernel: kernel.name.clone(),
            why: format!("{groups} work-groups, more than a 32-bit ticket counts"),
        })?;
        match &mut kernel.sum_buffers {
            Some(buffers) if buffers.partials.len() >= groups * buffers.terms_bytes => {
                buffers.groups = total;
            }
            slot => {
                let terms_bytes = count * sum_size;
                *slot = Some(SumBuffers {
                    partials: DeviceBuffer::zeroed(&context, groups * terms_bytes)?,
                    ticket: DeviceBuffer::zeroed(&context, 1)?,
                    groups: total,
                    terms_bytes,
                });
            }
        }
    }
    // Generation is read after the uploads and link builds above, which may bump it.
    kernel.prepared = Some(gml.generation);
    Ok(())
}

/// Every datum and user link the kernel accesses must still be current, and the loop kind's
/// mesh data must exist.
fn check_current(gml: &Gml, id: KernelId, accesses: &[Resolved]) -> Result<()> {
    let kernel = &gml.kernels[id.index];
    for a in accesses {
        gml.datum(a.data).map_err(|e| in_kernel(&kernel.name, e))?;
        if let Relation::User { link, .. } = a.relation {
            gml.datum(link).map_err(|e| in_kernel(&kernel.name, e))?;
        }
    }
    gml.mesh(kernel.loop_kind)
        .map_err(|e| in_kernel(&kernel.name, e))?;
    Ok(())
}

/// Says which kernel met a stale datum.
fn in_kernel(name: &str, error: GmlError) -> GmlError {
    match error {
        GmlError::StaleData {
            kernel: None,
            data,
            kind,
            made_for,
            lines,
            change,
        } => GmlError::StaleData {
            kernel: Some(name.to_string()),
            data,
            kind,
            made_for,
            lines,
            change,
        },
        other => other,
    }
}

/// Enqueues every link table's variant of `id` into `timeline` without waiting.
pub(crate) fn enqueue(gml: &mut Gml, id: KernelId, timeline: &mut Timeline) -> Result<()> {
    prepare(gml, id)?;
    let kernel = &gml.kernels[id.index];
    let launched = kernel
        .variants
        .iter()
        .try_for_each(|variant| -> Result<()> {
            // A kernel with sums runs even over no entity: its `finish` then gets zeros.
            if variant.rows == 0 && kernel.sum_buffers.is_none() {
                return Ok(());
            }
            let work = work_size(variant.rows, variant, kernel.spec.work_group);
            bind(gml, kernel, variant, work.local)?.enqueue_into(&gml.context, work, timeline)?;
            Ok(())
        });
    if let Err(e) = launched {
        // Some tables' launches may have taken tickets: fresh sum buffers (a ticket at zero)
        // at the next enqueue, rather than a finish run early by the wrong group.
        let kernel = &mut gml.kernels[id.index];
        if kernel.sum_buffers.take().is_some() {
            kernel.prepared = None;
        }
        return Err(e);
    }
    // By index: the kernel borrows `gml`, which marking needs mutably (and a list of the
    // written data would allocate on every launch).
    for i in 0..gml.kernels[id.index].accesses.len() {
        let access = &gml.kernels[id.index].accesses[i];
        if access.mode != Mode::Read {
            let data = access.data;
            gml.datum_mut_quiet(data)?.device_newer = true;
        }
    }
    Ok(())
}

/// Enqueues `id`, waits for it and returns its device time (all link tables).
pub(crate) fn launch(gml: &mut Gml, id: KernelId) -> Result<Duration> {
    let mut timeline = Timeline::new(gml.context.profiling());
    let name = gml.kernel(id)?.name.clone();
    timeline.stage(name);
    enqueue(gml, id, &mut timeline)?;
    if !timeline.records_events() {
        gml.context.finish()?;
        return Ok(Duration::ZERO);
    }
    let stages = timeline.stage_times()?;
    gml.counters.add(&stages);
    Ok(stages.iter().map(|s| s.busy).sum())
}

/// Sets every argument of one variant (those that changed since its last launch), for
/// work-groups of `local` work-items.
fn bind<'k>(
    gml: &Gml,
    kernel: &Compiled,
    variant: &'k CompiledVariant,
    local: usize,
) -> Result<KernelCall<'k>> {
    let (loop_kind, uplink) = (kernel.loop_kind, kernel.uplink);
    let missing = |what: &str| {
        GmlError::Cl(cl::Error::InvalidBuildInput(format!(
            "internal: {what} not on the device"
        )))
    };
    let count = variant.rows as i32;
    let up = uplink.and_then(|u| gml.links.get(loop_kind, u));
    let up_table = match (up, variant.table) {
        (Some(Auto::Up { tables, .. }), Some(t)) => Some(&tables[t]),
        _ => None,
    };
    let data = |id: DataId| -> Result<&DeviceBuffer<u8>> {
        gml.datum(id)?
            .device
            .as_ref()
            .ok_or_else(|| missing("data"))
    };
    let sums = || {
        kernel
            .sum_buffers
            .as_ref()
            .ok_or_else(|| missing("sum buffers"))
    };
    let mut call = variant.kernel.call();
    for arg in &variant.args {
        // SAFETY: each argument matches the declaration codegen emitted for it: buffers for
        // pointers (sized for every index the kernel computes from the mesh), ints for ints.
        unsafe {
            match arg {
                Arg::Count => call.arg(&count)?,
                Arg::First => call.arg(&variant.first)?,
                Arg::UpRows => {
                    call.buffer(&up_table.ok_or_else(|| missing("uplink rows"))?.row_list)?
                }
                Arg::UpBall => {
                    call.buffer(&up_table.ok_or_else(|| missing("uplink table"))?.ball)?
                }
                Arg::UpLocals => {
                    call.buffer(&up_table.ok_or_else(|| missing("uplink locals"))?.locals)?
                }
                Arg::UpDegree => match up {
                    Some(Auto::Up { degree, .. }) => call.buffer(degree)?,
                    _ => return Err(missing("uplink degrees")),
                },
                Arg::Nodes(kind) => call.buffer(data(gml.mesh(*kind)?)?)?,
                Arg::Down(to) => match gml.links.get(loop_kind, *to) {
                    Some(Auto::Down { table, .. }) => call.buffer(table)?,
                    _ => return Err(missing("downlink")),
                },
                Arg::Data(id) | Arg::Link(id) => call.buffer(data(*id)?)?,
                Arg::Refs(id) => call.buffer(
                    gml.datum(*id)?
                        .device_refs
                        .as_ref()
                        .ok_or_else(|| missing("references"))?,
                )?,
                Arg::Params => {
                    call.buffer(gml.params_buffer().ok_or_else(|| missing("parameters"))?)?
                }
                Arg::SumPartials => call.buffer(&sums()?.partials)?,
                Arg::SumTicket => call.buffer(&sums()?.ticket)?,
                Arg::SumScratch => call.local::<u8>(local * sums()?.terms_bytes)?,
                Arg::SumBase => call.arg(&variant.sum_base)?,
                Arg::SumGroups => call.arg(&sums()?.groups)?,
            };
        }
    }
    Ok(call)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencl_reserved_words_cannot_name_kernels() {
        for name in ["half", "float4", "kernel", "global", "uint16", "image2d_t"] {
            assert!(
                matches!(check_identifier(name), Err(GmlError::ReservedName(_))),
                "{name}"
            );
        }
        for name in ["halve", "float5", "kernels", "my_float4", "step"] {
            assert!(check_identifier(name).is_ok(), "{name}");
        }
        assert!(matches!(check_identifier("2x"), Err(GmlError::BadName(_))));
    }
}
