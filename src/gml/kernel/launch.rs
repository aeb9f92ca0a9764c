//! Launching a compiled kernel: bringing what it reads up to date on the device (links, data,
//! parameters; the programs rebuilt when the uplink's tables were), sizing its work and its
//! sums' buffers, binding its arguments, and enqueueing one launch per link table.

use std::time::Duration;

use super::build::{Compiled, CompiledVariant, KernelId, SumBuffers, build, sum_scalar};
use super::codegen::Arg;
use super::resolve::{Relation, Resolved, build_links, in_kernel};
use super::spec::Mode;
use crate::cl::{self, DeviceBuffer, KernelCall, Timeline, WorkSize};
use crate::gml::Gml;
use crate::gml::data::DataId;
use crate::gml::error::{GmlError, Result};
use crate::gml::links::Auto;
use crate::mesh_kind::MeshKind;

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

/// Brings everything `id` reads up to date on the device: links (rebuilt, and the kernel
/// recompiled, if the mesh changed), data changed on the host, the parameter block. Skipped
/// when nothing changed since the kernel was last prepared.
pub(crate) fn prepare(gml: &mut Gml, id: KernelId) -> Result<()> {
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
