//! Resolution of a spec against the instance's data: what each access is (name, type, kind)
//! and how the loop reaches it (directly, down, up, across, or through a user link), with the
//! errors of accesses that cannot be; the links those accesses need; and the naming of the
//! kernel in errors met on the way.
//!
//! The result ([`Resolved`]) is what the names and the code generation work from, so it
//! lives here, below both.

use super::spec::{KernelSpec, Mode};
use crate::gml::Gml;
use crate::gml::data::{DataId, Role};
use crate::gml::error::{GmlError, Result};
use crate::gml::value::{Scalar, ValueType};
use crate::mesh_kind::MeshKind;

/// How the loop reaches one datum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Relation {
    /// The datum belongs to the loop kind: index = loop index.
    Direct,
    /// The datum belongs to a lower-dimension kind: through the element table (vertices) or
    /// the automatic element → edges/faces link; `count` entries per loop entity.
    Down { count: usize },
    /// The datum belongs to a higher-dimension kind: through the kernel's uplink.
    Up,
    /// The datum belongs to another kind of the loop kind's dimension: through the automatic
    /// link to the entity across each of `count` sides (-1 where none).
    Across { count: usize },
    /// Through a user link of `width` entries; `neighbours` when it links the loop kind to
    /// itself (entry 0 of the variable is then the entity's own value).
    User {
        link: DataId,
        link_name: String,
        width: usize,
        neighbours: bool,
    },
}

/// One datum as the kernel accesses it.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub data: DataId,
    pub kind: MeshKind,
    pub name: String,
    pub value: ValueType,
    pub items: usize,
    pub is_mesh: bool,
    pub mode: Mode,
    pub refs: bool,
    pub voyeurs: bool,
    pub relation: Relation,
}

/// Resolves the spec's accesses: names, types, and how each datum is reached.
pub(super) fn resolve(gml: &Gml, spec: &KernelSpec) -> Result<(Vec<Resolved>, Option<MeshKind>)> {
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
        if a.mode != Mode::Read {
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
        if datum.role.value().scalar == Scalar::F64 && !gml.has_fp64() {
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
pub(super) fn build_links(gml: &mut Gml, loop_kind: MeshKind, accesses: &[Resolved]) -> Result<()> {
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

/// Says which kernel met a stale datum.
pub(super) fn in_kernel(name: &str, error: GmlError) -> GmlError {
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
