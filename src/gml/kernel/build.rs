//! Building a kernel: the spec resolved, its links built, one source generated per link table
//! (one per degree table through an uplink) and compiled into a program, with what a launch
//! needs to know of each; and [`compile`], which adds the result to the instance.

use super::codegen::{self, Arg, Variant};
use super::identifier::check_identifier;
use super::resolve::{Resolved, build_links, in_kernel, resolve};
use super::spec::{KernelSpec, MAX_SUMS, Sums};
use crate::cl::{self, DeviceBuffer, Kernel, Program, Source};
use crate::gml::Gml;
use crate::gml::error::{GmlError, Result};
use crate::gml::links::Auto;
use crate::gml::value::Scalar;
use crate::mesh_kind::MeshKind;

/// Identifies a compiled kernel of one gml instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId {
    pub(crate) instance: u32,
    pub(crate) index: usize,
}

/// One program, for one link table.
pub(crate) struct CompiledVariant {
    pub(super) kernel: Kernel,
    pub(super) args: Vec<Arg>,
    pub(super) source: String,
    /// Index of the uplink table this variant runs over.
    pub(super) table: Option<usize>,
    /// Largest work-group the kernel allows, and its preferred multiple, on this device.
    pub(super) allowed: usize,
    pub(super) multiple: usize,
    /// Rows of its table and first entity, as of the last [`prepare`](super::launch::prepare).
    pub(super) rows: usize,
    pub(super) first: i32,
    /// With sums, the index of this variant's first partial: the work-groups of the variants
    /// before it, which run before it on the queue.
    pub(super) sum_base: u32,
}

/// The device side of a kernel's sums, shared by its variants (one launch per degree table
/// through an uplink): one partial per work-group and sum, and the ticket.
pub(super) struct SumBuffers {
    pub(super) partials: DeviceBuffer<u8>,
    pub(super) ticket: DeviceBuffer<u32>,
    /// Work-groups of all the variants' launches, as of the last
    /// [`prepare`](super::launch::prepare).
    pub(super) groups: u32,
    /// Bytes of one work-item's (or one group's) terms: the sums times their scalar's size.
    pub(super) terms_bytes: usize,
}

/// The sums' OpenCL scalar type and its size: double where the device has fp64, else float.
pub(super) fn sum_scalar(gml: &Gml) -> (&'static str, usize) {
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
    pub(super) prepared: Option<u64>,
    pub(super) spec: KernelSpec,
    pub(super) loop_kind: MeshKind,
    pub(super) uplink: Option<MeshKind>,
    /// Version of the uplink's tables the variants were generated for.
    pub(super) uplink_version: Option<u64>,
    /// How many times the programs were built (1 at compilation).
    pub builds: usize,
    pub(super) accesses: Vec<Resolved>,
    pub(super) variants: Vec<CompiledVariant>,
    /// With sums, the partials and ticket of every variant.
    pub(super) sum_buffers: Option<SumBuffers>,
}

impl Compiled {
    pub fn sources(&self) -> Vec<String> {
        self.variants.iter().map(|v| v.source.clone()).collect()
    }
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

/// Generates and builds every variant of `spec`.
pub(super) fn build(gml: &mut Gml, spec: &KernelSpec) -> Result<Compiled> {
    check_identifier(&spec.name)?;
    let (accesses, uplink) = resolve(gml, spec).map_err(|e| in_kernel(&spec.name, e))?;
    if let Some(sums) = &spec.sums {
        check_sums(spec, sums)?;
    }
    let sum_double = spec.sums.is_some() && gml.has_fp64();
    build_links(gml, spec.loop_kind, &accesses)?;
    let toolkit = Source::embedded(
        "gml_toolkit.cl",
        include_str!("../../../kernels/gml_toolkit.cl"),
    )?;
    let params = gml.params_source();
    // A kernel over f64 data computes in double: unsuffixed literals stay double there (with
    // -cl-single-precision-constant, `0.1` would be a float and cost the digits), and the
    // toolkit's double helpers are included.
    let double = accesses.iter().any(|a| a.value.scalar == Scalar::F64);
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
                include_str!("../../../kernels/gml_toolkit_f64.cl"),
            )?);
        }
        sources.extend(gml.toolkit.iter().cloned());
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
                include_str!("../../../kernels/gml_sums.cl"),
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
        let program = Program::build_named(&gml.context, &spec.name, &sources, &options)?;
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
