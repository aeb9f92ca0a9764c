//! Generation of the OpenCL source of a gml kernel from the user's loop body.
//!
//! The generated kernel declares and loads every variable the body may use, with GMlib's
//! context-based names, runs the body, and stores back the data opened for writing. One source
//! is generated per link table: uplink kernels get their table's width as `…DegMax`.

use std::fmt::Write;

use std::collections::BTreeSet;

use super::names::{self, Claim};
use super::resolve::{Relation, Resolved};
use super::spec::Mode;
use crate::gml::data::DataId;
use crate::gml::error::Result;
use crate::mesh_kind::MeshKind;

/// A kernel argument, resolved to a buffer or value at launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// Number of work-items that do work.
    Count,
    /// First entity (contiguous tables and direct loops).
    First,
    /// Entity of each row of an uplink table.
    UpRows,
    /// Degree of every source entity of the uplink.
    UpDegree,
    /// The uplink table.
    UpBall,
    /// Local indices of the uplink table.
    UpLocals,
    /// Element table of a kind (its nodes).
    Nodes(MeshKind),
    /// Automatic downlink from the loop kind to a kind of edges or faces.
    Down(MeshKind),
    /// A datum's values.
    Data(DataId),
    /// A mesh datum's references.
    Refs(DataId),
    /// A user link's table.
    Link(DataId),
    /// The parameter struct.
    Params,
    /// The work-groups' partial sums of a kernel that folds sums (`KernelSpec::sums`).
    SumPartials,
    /// The ticket that tells the work-group finishing last.
    SumTicket,
    /// Local memory for a work-group's fold of its sums.
    SumScratch,
    /// The index of this launch's first partial (launches before it, over other degree
    /// tables, wrote theirs below it).
    SumBase,
    /// The work-groups of every launch of the kernel: the ticket that completes them is last.
    SumGroups,
}

/// What one generated source depends on.
pub(crate) struct Variant {
    /// Width of the uplink table this source serves.
    pub width: Option<usize>,
    /// Whether that table's rows are consecutive entities.
    pub contiguous: bool,
    /// Sums the kernel folds itself (`KernelSpec::sums`): the body then runs in a function
    /// the kernel calls, so that its `return` cannot skip the fold's barriers.
    pub sums: Option<usize>,
}

/// A generated kernel: the parts of its source and its argument list.
pub(crate) struct Generated {
    /// Argument declarations and the loads (file name `<kernel>.generated`).
    pub prologue: String,
    /// The user's body.
    pub body: String,
    /// The stores and the closing brace; with sums, also the kernel that calls the body's
    /// function and folds the sums, up to its `finish` block.
    pub epilogue: String,
    /// With sums, what follows the `finish` block (empty otherwise).
    pub tail: String,
    pub args: Vec<Arg>,
}

struct Builder {
    params: Vec<String>,
    args: Vec<Arg>,
    code: String,
    /// Every name declared, with what it holds.
    claims: Vec<Claim>,
}

impl Builder {
    /// Adds a kernel parameter once; `declaration` ends with its name.
    fn arg(&mut self, arg: Arg, declaration: String, owner: impl Into<String>) {
        if !self.args.contains(&arg) {
            let name = param_name(&declaration).to_string();
            self.claim(name, owner, false);
            self.args.push(arg);
            self.params.push(declaration);
        }
    }

    /// Records a declared name.
    fn claim(&mut self, name: impl Into<String>, owner: impl Into<String>, datum: bool) {
        self.claims.push(Claim {
            name: name.into(),
            owner: owner.into(),
            datum,
        });
    }

    fn line(&mut self, text: impl AsRef<str>) {
        self.code.push_str("    ");
        self.code.push_str(text.as_ref());
        self.code.push('\n');
    }
}

/// The name a parameter declaration ends with (`VerCrdTab` of
/// `__global const float4 *restrict VerCrdTab`).
fn param_name(declaration: &str) -> &str {
    declaration.rsplit([' ', '*']).next().unwrap_or_default()
}

/// Name of the global table of `kind`'s datum `name`, e.g. `TriBarTab`, `VerCrdTab`.
fn table(kind: MeshKind, name: &str) -> String {
    format!("{}{}Tab", kind.short(), name)
}

fn node_vector(kind: MeshKind) -> String {
    format!("int{}", kind.node_vector_width())
}

const LANES: [&str; 16] = [
    "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "sa", "sb", "sc", "sd", "se", "sf",
];

/// Generates the kernel `name` looping over `loop_kind` for one link table, with the names
/// the body uses for its data (see [`names`]); refuses two things under one name.
pub(crate) fn generate(
    name: &str,
    loop_kind: MeshKind,
    accesses: &[Resolved],
    uplink: Option<MeshKind>,
    variant: &Variant,
    body: &str,
) -> Result<Generated> {
    // First pass with the declared names, for the names gml generates besides the data's.
    let (_, claims) = emit(
        name,
        loop_kind,
        accesses,
        uplink,
        variant,
        body,
        &names::primaries(loop_kind, accesses),
    );
    let fixed: BTreeSet<String> = claims
        .into_iter()
        .filter(|c| !c.datum)
        .map(|c| c.name)
        .collect();
    let namings = names::choose(name, loop_kind, accesses, &fixed, body)?;
    let (generated, claims) = emit(name, loop_kind, accesses, uplink, variant, body, &namings);
    names::check_collisions(name, &claims)?;
    Ok(generated)
}

/// Generates the source with the data's variables named `namings` (one per access), and lists
/// every name it declares.
fn emit(
    name: &str,
    loop_kind: MeshKind,
    accesses: &[Resolved],
    uplink: Option<MeshKind>,
    variant: &Variant,
    body: &str,
    namings: &[String],
) -> (Generated, Vec<Claim>) {
    let l = loop_kind.short();
    let mut b = Builder {
        params: Vec::new(),
        args: Vec::new(),
        code: String::new(),
        claims: Vec::new(),
    };
    b.arg(
        Arg::Count,
        "const int GmlCount".into(),
        "gml's work-item count",
    );
    b.arg(
        Arg::First,
        "const int GmlFirst".into(),
        "gml's first entity",
    );
    b.claim("GmlCnt", "gml's work-item index", false);
    if variant.sums.is_some() {
        b.claim("GmlSum", "gml's sums", false);
    } else {
        b.line("const int GmlCnt = get_global_id(0);");
        b.line("if (GmlCnt >= GmlCount) return;");
    }
    if variant.contiguous || uplink.is_none() {
        b.line(format!("const int {l}Idx = GmlFirst + GmlCnt;"));
    } else {
        b.arg(
            Arg::UpRows,
            "__global const int *restrict GmlRows".into(),
            "gml's uplink rows",
        );
        b.line(format!("const int {l}Idx = GmlRows[GmlCnt];"));
    }
    b.claim(format!("{l}Idx"), "the loop index", false);

    // The loop entity's own nodes, when anything needs them.
    let needs_nodes = loop_kind != MeshKind::Vertices
        && accesses.iter().any(|a| {
            (a.kind == MeshKind::Vertices && matches!(a.relation, Relation::Down { .. }))
                || (a.is_mesh && a.kind == loop_kind && a.relation == Relation::Direct)
        });
    if needs_nodes {
        let n = loop_kind.nodes();
        b.arg(
            Arg::Nodes(loop_kind),
            format!(
                "__global const {} *restrict {}",
                node_vector(loop_kind),
                table(loop_kind, "Ver")
            ),
            format!("the table of the {loop_kind}' nodes"),
        );
        b.claim(format!("Gml{l}Nodes"), "gml's node vector", false);
        b.claim(
            format!("{l}Ver"),
            format!("the nodes of the loop's {loop_kind}"),
            false,
        );
        b.line(format!(
            "const {} Gml{l}Nodes = {}[{l}Idx];",
            node_vector(loop_kind),
            table(loop_kind, "Ver")
        ));
        let lanes: Vec<String> = (0..n)
            .map(|k| format!("Gml{l}Nodes.{}", LANES[k]))
            .collect();
        b.line(format!("const int {l}Ver[{n}] = {{{}}};", lanes.join(", ")));
    }

    // Automatic downlinks to edges and faces.
    for a in accesses {
        if let Relation::Down { count } = a.relation
            && a.kind != MeshKind::Vertices
        {
            let ds = a.kind.short();
            let var = format!("{l}{ds}");
            if b.args.contains(&Arg::Down(a.kind)) {
                continue;
            }
            b.arg(
                Arg::Down(a.kind),
                format!("__global const int *restrict {l}{ds}Lnk"),
                format!("the downlink table {loop_kind} → {}", a.kind),
            );
            b.claim(
                var.clone(),
                format!("the {} of each of the loop's {loop_kind}", a.kind),
                false,
            );
            b.line(format!("int {var}[{count}];"));
            b.line(format!(
                "for (int k = 0; k < {count}; k++) {var}[k] = {l}{ds}Lnk[{l}Idx * {count} + k];"
            ));
        }
    }

    // Automatic links across sides to other kinds of the loop kind's dimension.
    for a in accesses {
        if let Relation::Across { count } = a.relation {
            let ds = a.kind.short();
            let var = format!("{l}{ds}");
            if b.args.contains(&Arg::Down(a.kind)) {
                continue;
            }
            b.arg(
                Arg::Down(a.kind),
                format!("__global const int *restrict {l}{ds}Lnk"),
                format!("the link table {loop_kind} → {} across sides", a.kind),
            );
            b.claim(
                var.clone(),
                format!("the {} across each side of the loop's {loop_kind}", a.kind),
                false,
            );
            b.claim(
                format!("{var}Deg"),
                format!("the count of {} across the loop's {loop_kind}", a.kind),
                false,
            );
            b.line(format!("int {var}[{count}];"));
            b.line(format!("int {var}Deg = 0;"));
            b.line(format!(
                "for (int k = 0; k < {count}; k++) {{ {var}[k] = {l}{ds}Lnk[{l}Idx * {count} + k]; {var}Deg += {var}[k] >= 0; }}"
            ));
        }
    }

    // The uplink: degree, entities and local indices.
    if let (Some(up), Some(width)) = (uplink, variant.width) {
        let ds = up.short();
        let var = format!("{l}{ds}");
        let link = format!("the uplink {loop_kind} → {up}");
        b.arg(
            Arg::UpDegree,
            "__global const int *restrict GmlDeg".into(),
            format!("the degrees of {link}"),
        );
        b.arg(
            Arg::UpBall,
            "__global const int *restrict GmlBall".into(),
            format!("the table of {link}"),
        );
        b.line(format!("const int {var}Deg = GmlDeg[{l}Idx];"));
        b.claim(format!("{var}Deg"), format!("the degree of {link}"), false);
        b.line(format!("#define {var}DegMax {width}"));
        b.claim(
            format!("{var}DegMax"),
            format!("the table width of {link}"),
            false,
        );
        b.line(format!("int {var}[{width}];"));
        b.claim(var.clone(), format!("the entities of {link}"), false);
        b.line(format!(
            "for (int k = 0; k < {width}; k++) {var}[k] = k < {var}Deg ? GmlBall[k * GmlCount + GmlCnt] : 0;"
        ));
        if accesses.iter().any(|a| a.voyeurs) {
            b.arg(
                Arg::UpLocals,
                "__global const char *restrict GmlVoy".into(),
                format!("the local indices of {link}"),
            );
            b.line(format!("int {var}Voy[{width}];"));
            b.claim(
                format!("{var}Voy"),
                format!("the local indices of {link}"),
                false,
            );
            b.line(format!(
                "for (int k = 0; k < {width}; k++) {var}Voy[k] = k < {var}Deg ? GmlVoy[k * GmlCount + GmlCnt] : 0;"
            ));
        }
    }

    // User links.
    for a in accesses {
        if let Relation::User {
            link,
            link_name,
            width,
            neighbours,
        } = &a.relation
        {
            let var = format!("{l}{link_name}");
            if b.args.contains(&Arg::Link(*link)) {
                continue;
            }
            b.arg(
                Arg::Link(*link),
                format!("__global const int *restrict {var}Tab"),
                format!("the table of link `{link_name}`"),
            );
            b.line(format!("int {var}[{width}];"));
            b.claim(
                var.clone(),
                format!("the entries of link `{link_name}`"),
                false,
            );
            b.line(format!(
                "for (int k = 0; k < {width}; k++) {var}[k] = {var}Tab[{l}Idx * {width} + k];"
            ));
            let degree = if *neighbours {
                format!("{l}Deg")
            } else {
                format!("{var}Deg")
            };
            b.line(format!("int {degree} = 0;"));
            b.claim(
                degree.clone(),
                format!("the degree of link `{link_name}`"),
                false,
            );
            b.line(format!(
                "for (int k = 0; k < {width}; k++) {degree} += {var}[k] >= 0;"
            ));
        }
    }

    // The data.
    for (a, naming) in accesses.iter().zip(namings) {
        load(&mut b, loop_kind, a, naming, variant.width);
    }

    let mut epilogue = String::new();
    for (a, var) in accesses.iter().zip(namings) {
        if a.mode == Mode::Read {
            continue;
        }
        let tab = table(a.kind, &a.name);
        if a.items == 1 {
            let _ = writeln!(epilogue, "    {tab}[{l}Idx] = {var};");
        } else {
            let _ = writeln!(
                epilogue,
                "    for (int i = 0; i < {}; i++) {tab}[{l}Idx * {} + i] = {var}[i];",
                a.items, a.items
            );
        }
    }
    epilogue.push_str("}\n");

    b.arg(
        Arg::Params,
        "__global GmlParSct *GmlPar".into(),
        "the parameter struct",
    );
    let params = b.params.join(",\n    ");
    let mut prologue = String::new();
    match variant.sums {
        None => {
            let _ = writeln!(prologue, "__kernel void {name}(");
            let _ = writeln!(prologue, "    {params})");
        }
        Some(_) => {
            let _ = writeln!(prologue, "static void {name}_gml_item(");
            let _ = writeln!(prologue, "    {params},");
            prologue.push_str("    const int GmlCnt,\n    GML_SUM_T *GmlSum)\n");
        }
    }
    prologue.push_str("{\n");
    prologue.push_str(&b.code);
    prologue.push_str("    {\n");
    let mut epilogue = format!("    }}\n{epilogue}");
    let mut tail = String::new();
    if let Some(count) = variant.sums {
        // The names of the item function's parameters, in order, for the call.
        let names: Vec<&str> = b.params.iter().map(|d| param_name(d)).collect();
        let names = names.join(", ");
        b.arg(
            Arg::SumPartials,
            "__global GML_SUM_T *GmlSumPart".into(),
            "gml's partial sums",
        );
        b.arg(
            Arg::SumTicket,
            "__global uint *GmlSumTicket".into(),
            "gml's sum ticket",
        );
        b.arg(
            Arg::SumScratch,
            "__local GML_SUM_T *GmlSumScratch".into(),
            "gml's sum scratch",
        );
        b.arg(
            Arg::SumBase,
            "const uint GmlSumBase".into(),
            "gml's first partial of a launch",
        );
        b.arg(
            Arg::SumGroups,
            "const uint GmlSumGroups".into(),
            "gml's work-groups of every launch",
        );
        b.claim("GmlSumLast", "gml's last-group flag", false);
        let _ = write!(
            epilogue,
            "\n__kernel void {name}(\n    {params},\n    \
             __global GML_SUM_T *GmlSumPart,\n    \
             __global uint *GmlSumTicket,\n    \
             __local GML_SUM_T *GmlSumScratch,\n    \
             const uint GmlSumBase,\n    \
             const uint GmlSumGroups)\n\
             {{\n    \
             __local uint GmlSumLast;\n    \
             GML_SUM_T GmlSum[{count}];\n    \
             for (int k = 0; k < {count}; k++) GmlSum[k] = 0;\n    \
             const int GmlCnt = get_global_id(0);\n    \
             if (GmlCnt < GmlCount) {name}_gml_item({names}, GmlCnt, GmlSum);\n    \
             if (gml_sums_fold(GmlSum, GmlSumPart, GmlSumTicket, GmlSumScratch, &GmlSumLast,\n    \
                               GmlSumBase, GmlSumGroups)) {{\n"
        );
        tail.push_str("    }\n}\n");
    }
    let generated = Generated {
        prologue,
        body: body.to_string(),
        epilogue,
        tail,
        args: b.args,
    };
    (generated, b.claims)
}

/// Declares and loads one datum.
fn load(b: &mut Builder, loop_kind: MeshKind, a: &Resolved, var: &str, width: Option<usize>) {
    let l = loop_kind.short();
    let ds = a.kind.short();
    let ty = a.value.opencl();
    let tab = table(a.kind, &a.name);
    let zero = a.value.zero();
    let owner = names::describe(loop_kind, a);
    let declare_table = |b: &mut Builder| {
        let constness = if a.mode == Mode::Read { "const " } else { "" };
        b.arg(
            Arg::Data(a.data),
            format!("__global {constness}{ty} *restrict {tab}"),
            format!("the table of {owner}"),
        );
    };
    let declare_refs = |b: &mut Builder| {
        b.arg(
            Arg::Refs(a.data),
            format!("__global const int *restrict {}", table(a.kind, "Ref")),
            format!("the references of the {}", a.kind),
        );
    };
    let items = a.items;
    let item_suffix = if items > 1 {
        format!("[{items}]")
    } else {
        String::new()
    };
    // Reads entry `index` (an expression) into `target`, item by item.
    let read = |target: &str, index: &str| -> String {
        if items == 1 {
            format!("{target} = {tab}[{index}];")
        } else {
            format!(
                "for (int i = 0; i < {items}; i++) {target}[i] = {tab}[({index}) * {items} + i];"
            )
        }
    };
    let clear = |target: &str| -> String {
        if items == 1 {
            format!("{target} = {zero};")
        } else {
            format!("for (int i = 0; i < {items}; i++) {target}[i] = {zero};")
        }
    };
    match &a.relation {
        Relation::Direct => {
            if a.is_mesh && a.kind != MeshKind::Vertices {
                // The element's own nodes are already in `<L>Ver`.
            } else {
                declare_table(b);
                b.claim(var, owner.clone(), true);
                if a.mode == Mode::Write {
                    b.line(format!("{ty} {var}{item_suffix};"));
                    b.line(clear(var));
                } else {
                    b.line(format!("{ty} {var}{item_suffix};"));
                    b.line(read(var, &format!("{l}Idx")));
                }
            }
            if a.refs {
                declare_refs(b);
                b.claim(
                    format!("{l}Ref"),
                    format!("the references of the loop's {loop_kind}"),
                    false,
                );
                b.line(format!(
                    "const int {l}Ref = {}[{l}Idx];",
                    table(a.kind, "Ref")
                ));
            }
        }
        Relation::Down { count } => {
            let index = if a.kind == MeshKind::Vertices {
                format!("{l}Ver")
            } else {
                format!("{l}{ds}")
            };
            declare_table(b);
            b.claim(var, owner.clone(), true);
            b.line(format!("{ty} {var}[{count}]{item_suffix};"));
            b.line(format!(
                "for (int k = 0; k < {count}; k++) {{ {} }}",
                read(&format!("{var}[k]"), &format!("{index}[k]"))
            ));
            if a.refs {
                declare_refs(b);
                b.claim(
                    format!("{l}{ds}Ref"),
                    format!("the references of the {}", a.kind),
                    false,
                );
                b.line(format!("int {l}{ds}Ref[{count}];"));
                b.line(format!(
                    "for (int k = 0; k < {count}; k++) {l}{ds}Ref[k] = {}[{index}[k]];",
                    table(a.kind, "Ref")
                ));
            }
        }
        Relation::Up => {
            let w = width.unwrap_or(1);
            let ball = format!("{l}{ds}");
            declare_table(b);
            b.claim(var, owner.clone(), true);
            b.line(format!("{ty} {var}[{w}]{item_suffix};"));
            b.line(format!(
                "for (int k = 0; k < {w}; k++) {{ if (k < {ball}Deg) {{ {} }} else {{ {} }} }}",
                read(&format!("{var}[k]"), &format!("{ball}[k]")),
                clear(&format!("{var}[k]"))
            ));
            if a.refs {
                declare_refs(b);
                b.claim(
                    format!("{ball}Ref"),
                    format!("the references of the {}", a.kind),
                    false,
                );
                b.line(format!("int {ball}Ref[{w}];"));
                b.line(format!(
                    "for (int k = 0; k < {w}; k++) {ball}Ref[k] = k < {ball}Deg ? {}[{ball}[k]] : 0;",
                    table(a.kind, "Ref")
                ));
            }
        }
        Relation::Across { count } => {
            let links = format!("{l}{ds}");
            declare_table(b);
            b.claim(var, owner.clone(), true);
            b.line(format!("{ty} {var}[{count}]{item_suffix};"));
            b.line(format!(
                "for (int k = 0; k < {count}; k++) {{ if ({links}[k] >= 0) {{ {} }} else {{ {} }} }}",
                read(&format!("{var}[k]"), &format!("{links}[k]")),
                clear(&format!("{var}[k]"))
            ));
            if a.refs {
                declare_refs(b);
                b.claim(
                    format!("{links}Ref"),
                    format!("the references of the {} across sides", a.kind),
                    false,
                );
                b.line(format!("int {links}Ref[{count}];"));
                b.line(format!(
                    "for (int k = 0; k < {count}; k++) {links}Ref[k] = {links}[k] >= 0 ? {}[{links}[k]] : 0;",
                    table(a.kind, "Ref")
                ));
            }
        }
        Relation::User {
            link_name,
            width,
            neighbours,
            ..
        } => {
            let links = format!("{l}{link_name}");
            declare_table(b);
            b.claim(var, owner.clone(), true);
            let (size, offset) = if *neighbours {
                (width + 1, 1)
            } else {
                (*width, 0)
            };
            b.line(format!("{ty} {var}[{size}]{item_suffix};"));
            if *neighbours {
                b.line(read(&format!("{var}[0]"), &format!("{l}Idx")));
            }
            b.line(format!(
                "for (int k = 0; k < {width}; k++) {{ if ({links}[k] >= 0) {{ {} }} else {{ {} }} }}",
                read(&format!("{var}[k + {offset}]"), &format!("{links}[k]")),
                clear(&format!("{var}[k + {offset}]"))
            ));
            if a.refs {
                let refs = table(a.kind, "Ref");
                declare_refs(b);
                b.line(format!("int {links}Ref[{size}];"));
                if *neighbours {
                    b.line(format!("{links}Ref[0] = {refs}[{l}Idx];"));
                }
                b.line(format!(
                    "for (int k = 0; k < {width}; k++) {links}Ref[k + {offset}] = {links}[k] >= 0 ? {refs}[{links}[k]] : 0;"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::gml::value::{Scalar, ValueType};

    fn id(index: u32) -> DataId {
        DataId { instance: 0, index }
    }

    fn solution(
        index: u32,
        kind: MeshKind,
        name: &str,
        mode: Mode,
        relation: Relation,
    ) -> Resolved {
        Resolved {
            data: id(index),
            kind,
            name: name.into(),
            value: ValueType {
                scalar: Scalar::F32,
                width: 4,
            },
            items: 1,
            is_mesh: false,
            mode,
            refs: false,
            voyeurs: false,
            relation,
        }
    }

    #[test]
    fn a_triangle_loop_reads_its_vertices_through_the_element_table() {
        let coords = Resolved {
            is_mesh: true,
            name: "Crd".into(),
            ..solution(
                0,
                MeshKind::Vertices,
                "Crd",
                Mode::Read,
                Relation::Down { count: 3 },
            )
        };
        let bar = solution(1, MeshKind::Triangles, "Bar", Mode::Write, Relation::Direct);
        let g = generate(
            "bar",
            MeshKind::Triangles,
            &[coords, bar],
            None,
            &Variant {
                width: None,
                contiguous: true,
                sums: None,
            },
            "TriBar = TriCrd[0];",
        )
        .unwrap();
        assert!(
            g.prologue
                .contains("__global const int4 *restrict TriVerTab")
        );
        assert!(
            g.prologue.contains(
                "const int TriVer[3] = {GmlTriNodes.s0, GmlTriNodes.s1, GmlTriNodes.s2};"
            )
        );
        assert!(g.prologue.contains("float4 TriCrd[3];"));
        assert!(g.epilogue.contains("TriBarTab[TriIdx] = TriBar;"));
        assert_eq!(
            g.args,
            [
                Arg::Count,
                Arg::First,
                Arg::Nodes(MeshKind::Triangles),
                Arg::Data(id(0)),
                Arg::Data(id(1)),
                Arg::Params
            ]
        );
    }

    #[test]
    fn an_uplink_variant_defines_degree_and_width() {
        let bar = solution(1, MeshKind::Triangles, "Bar", Mode::Read, Relation::Up);
        let g = generate(
            "relax",
            MeshKind::Vertices,
            &[bar],
            Some(MeshKind::Triangles),
            &Variant {
                width: Some(16),
                contiguous: false,
                sums: None,
            },
            "",
        )
        .unwrap();
        assert!(g.prologue.contains("const int VerIdx = GmlRows[GmlCnt];"));
        assert!(g.prologue.contains("#define VerTriDegMax 16"));
        assert!(g.prologue.contains("float4 VerTriBar[16];"));
        assert!(g.prologue.contains("GmlBall[k * GmlCount + GmlCnt]"));
    }

    #[test]
    fn a_kernel_with_sums_calls_its_body_and_then_folds() {
        let x = solution(1, MeshKind::Vertices, "X", Mode::Read, Relation::Direct);
        let g = generate(
            "dot",
            MeshKind::Vertices,
            &[x],
            None,
            &Variant {
                width: None,
                contiguous: true,
                sums: Some(2),
            },
            "if (VerIdx == 3) return;\nGmlSum[0] = VerX.x;",
        )
        .unwrap();
        // The body runs in a function, so that its `return` skips no barrier of the fold.
        assert!(g.prologue.starts_with("static void dot_gml_item("));
        assert!(
            g.prologue
                .contains("const int GmlCnt,\n    GML_SUM_T *GmlSum)")
        );
        assert!(!g.prologue.contains("return"));
        assert!(g.epilogue.contains("__kernel void dot("));
        assert!(g.epilogue.contains("GML_SUM_T GmlSum[2];"));
        assert!(g.epilogue.contains(
            "if (GmlCnt < GmlCount) dot_gml_item(GmlCount, GmlFirst, VerXTab, GmlPar, GmlCnt, GmlSum);"
        ));
        assert!(
            g.epilogue.trim_end().ends_with("{"),
            "the finish block follows"
        );
        assert_eq!(g.tail, "    }\n}\n");
        assert_eq!(
            g.args,
            [
                Arg::Count,
                Arg::First,
                Arg::Data(id(1)),
                Arg::Params,
                Arg::SumPartials,
                Arg::SumTicket,
                Arg::SumScratch,
                Arg::SumBase,
                Arg::SumGroups
            ]
        );
    }

    fn direct_variant() -> Variant {
        Variant {
            width: None,
            contiguous: true,
            sums: None,
        }
    }

    #[test]
    fn two_fields_of_one_name_on_two_kinds_are_declared_apart() {
        let on_vertices = solution(
            0,
            MeshKind::Vertices,
            "Nrm",
            Mode::Read,
            Relation::Down { count: 3 },
        );
        let on_triangles = solution(1, MeshKind::Triangles, "Nrm", Mode::Write, Relation::Direct);
        let g = generate(
            "nrm",
            MeshKind::Triangles,
            &[on_vertices, on_triangles],
            None,
            &direct_variant(),
            "TriNrm = TriVerNrm[0];",
        )
        .unwrap();
        assert!(
            g.prologue.contains("float4 TriVerNrm[3];"),
            "{}",
            g.prologue
        );
        assert!(g.prologue.contains("float4 TriNrm;"), "{}", g.prologue);
        assert!(g.prologue.contains("VerNrmTab") && g.prologue.contains("TriNrmTab"));
        assert!(g.epilogue.contains("TriNrmTab[TriIdx] = TriNrm;"));
    }

    #[test]
    fn the_body_s_name_is_the_declared_one() {
        let sol = solution(
            0,
            MeshKind::Vertices,
            "VerSol",
            Mode::Write,
            Relation::Direct,
        );
        let g = generate(
            "gather",
            MeshKind::Vertices,
            &[sol],
            None,
            &direct_variant(),
            "VerSol = 1.0f;",
        )
        .unwrap();
        assert!(g.prologue.contains("float4 VerSol;"), "{}", g.prologue);
        assert!(g.epilogue.contains("VerVerSolTab[VerIdx] = VerSol;"));
    }

    #[test]
    fn a_field_named_like_the_loop_index_is_a_collision() {
        let idx = solution(0, MeshKind::Triangles, "Idx", Mode::Write, Relation::Direct);
        let err = generate(
            "idx",
            MeshKind::Triangles,
            &[idx],
            None,
            &direct_variant(),
            "",
        )
        .err()
        .unwrap();
        assert!(
            matches!(&err, crate::gml::GmlError::NameCollision { name, .. } if name == "TriIdx"),
            "{err}"
        );
    }
}
