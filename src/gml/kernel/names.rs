//! The names a kernel body reads and writes its data by: GMlib's context-based names as the
//! manual prints them, beside gml's earlier names, and the check that no two generated names
//! collide.
//!
//! With `L` the loop kind's short name (`Ver`, `Tri`, …), `K` the short name of the datum's kind,
//! `N` the user's name and `N^` that name with its first letter in upper case:
//!
//! | how the loop reaches the datum | declared name | also accepted |
//! | --- | --- | --- |
//! | its own kind (direct) | `LN` (`VerSpeed`) | `LN^` (`VerSpeed` for `speed`), `N` (`relaxed`, `VerSol`) |
//! | downlink (lower dimension) | `LKN` (`TriVerNrm[3]`) | `LN` (`TriNrm`, gml's earlier name), `LKN^` |
//! | uplink (ball, shell) | `LKN` (`VerTriBar[i]`) | `LKN^` |
//! | user link to its own kind (neighbours) | `LN` (`TriCenter[4]`) | `LN^` |
//! | user link to another kind | `LKN` | `LN` (gml's earlier name), `LKN^` |
//!
//! Mesh data keep GMlib's preset names: `VerCrd`, `TriCrd[3]` (the coordinates of a triangle's
//! vertices), `TriVer`, `TetTriVer[4]`.
//!
//! The first name of every datum is unique as soon as the data differ by kind or name, so two
//! fields of one name on two kinds never collide. The variable is declared under the first name
//! of the list that the body uses (in the order above), or the first name if it uses none: one
//! name per datum and kernel, so that a local variable of the body named like another
//! alternative stays the body's own (it may even shadow the datum's variable, as in C). An
//! alternative that is the first name of another datum or a name gml generates (`TriIdx`,
//! `VerTriDeg`, …) means that one; one that two data share is an error when the body uses it.
//! Every name that remains is checked: two things under one generated name are a
//! [`GmlError::NameCollision`], never an OpenCL build error.

use std::collections::{BTreeMap, BTreeSet};

use super::identifier::is_reserved;
use super::resolve::{Relation, Resolved};
use crate::gml::error::{GmlError, Result};
use crate::mesh_kind::MeshKind;

/// A name the generated code declares, and what it holds (for error messages).
#[derive(Clone, Debug)]
pub(crate) struct Claim {
    /// The identifier.
    pub name: String,
    /// What it holds, e.g. "solution `Nrm` on vertices (through the downlink …)".
    pub owner: String,
    /// Whether it is one datum's variable (the names [`choose`] picks), not a name of gml's.
    pub datum: bool,
}

/// `name` with its first letter in upper case (`speed` → `Speed`).
fn capitalised(name: &str) -> String {
    let mut chars = name.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// Every name the body may use for `a` in a loop over `loop_kind`: the declared name first, then
/// the accepted alternatives in order of preference, without repeats.
pub(crate) fn candidates(loop_kind: MeshKind, a: &Resolved) -> Vec<String> {
    let l = loop_kind.short();
    let k = a.kind.short();
    let n = a.name.as_str();
    let cap = capitalised(n);
    let list = if a.is_mesh {
        // GMlib's preset names only.
        match (&a.relation, a.kind) {
            (Relation::Down { .. }, kind) if kind != MeshKind::Vertices => {
                vec![format!("{l}{k}Ver")]
            }
            (Relation::Up | Relation::User { .. } | Relation::Across { .. }, _) => {
                vec![format!("{l}{k}{n}")]
            }
            _ => vec![format!("{l}{n}")],
        }
    } else {
        match &a.relation {
            Relation::Direct => vec![format!("{l}{n}"), format!("{l}{cap}"), n.to_string()],
            Relation::Down { .. } => vec![
                format!("{l}{k}{n}"),
                format!("{l}{n}"),
                format!("{l}{k}{cap}"),
            ],
            Relation::Up => vec![format!("{l}{k}{n}"), format!("{l}{k}{cap}")],
            Relation::Across { .. } => vec![
                format!("{l}{k}{n}"),
                format!("{l}{n}"),
                format!("{l}{k}{cap}"),
            ],
            Relation::User {
                neighbours: true, ..
            } => vec![format!("{l}{n}"), format!("{l}{cap}")],
            Relation::User { .. } => vec![
                format!("{l}{k}{n}"),
                format!("{l}{n}"),
                format!("{l}{k}{cap}"),
            ],
        }
    };
    let mut unique = Vec::new();
    for name in list {
        if !unique.contains(&name) {
            unique.push(name);
        }
    }
    unique
}

/// Describes `a` for error messages: "solution `Nrm` on vertices (through the downlink …)".
pub(crate) fn describe(loop_kind: MeshKind, a: &Resolved) -> String {
    let what = if a.is_mesh {
        if a.kind == MeshKind::Vertices {
            "the vertex coordinates".to_string()
        } else {
            format!("the nodes of the {}", a.kind)
        }
    } else {
        format!("solution `{}` on {}", a.name, a.kind)
    };
    let how = match &a.relation {
        Relation::Direct => String::new(),
        Relation::Down { .. } => format!(" (through the downlink {loop_kind} → {})", a.kind),
        Relation::Up => format!(" (through the uplink {loop_kind} → {})", a.kind),
        Relation::Across { .. } => format!(" (across the sides {loop_kind} → {})", a.kind),
        Relation::User { link_name, .. } => format!(" (through the link `{link_name}`)"),
    };
    format!("{what}{how}")
}

/// The identifiers of an OpenCL body, outside comments, string and character literals: those
/// used otherwise than as a function call (`used`) and those called (`called`).
#[derive(Default)]
pub(crate) struct Identifiers {
    pub used: BTreeSet<String>,
    pub called: BTreeSet<String>,
}

/// Scans `body` for identifiers.
pub(crate) fn identifiers(body: &str) -> Identifiers {
    let bytes = body.as_bytes();
    let mut found = Identifiers::default();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if body[i..].starts_with("//") {
            i += body[i..].find('\n').unwrap_or(body.len() - i);
        } else if body[i..].starts_with("/*") {
            i += body[i + 2..]
                .find("*/")
                .map_or(body.len() - i, |end| end + 4);
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = body[start..i].to_string();
            let before = body[..start].trim_end();
            if before.ends_with('.') || before.ends_with("->") {
                // A member or swizzle (`VerCrd.x`), not a variable.
                continue;
            }
            if body[i..].trim_start().starts_with('(') {
                found.called.insert(word);
            } else {
                found.used.insert(word);
            }
        } else if c.is_ascii_digit() {
            // A number, with its suffix (`1.0f`, `0x1Fu`): no identifier inside.
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    found
}

/// Picks the name of every access's variable for `body`: the first of its names that the body
/// uses. `fixed` holds the names gml generates besides the data's variables (indices, links,
/// degrees, tables): an alternative equal to one of them, or to another datum's first name, is
/// theirs.
pub(crate) fn choose(
    kernel: &str,
    loop_kind: MeshKind,
    accesses: &[Resolved],
    fixed: &BTreeSet<String>,
    body: &str,
) -> Result<Vec<String>> {
    let ids = identifiers(body);
    let all: Vec<Vec<String>> = accesses.iter().map(|a| candidates(loop_kind, a)).collect();
    let primaries: BTreeSet<&str> = all.iter().map(|c| c[0].as_str()).collect();
    // Which data each alternative could mean.
    let mut owners: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, names) in all.iter().enumerate() {
        for alt in &names[1..] {
            owners.entry(alt.as_str()).or_default().push(i);
        }
    }
    let usable = |alt: &str| {
        ids.used.contains(alt)
            && !ids.called.contains(alt)
            && !fixed.contains(alt)
            && !primaries.contains(alt)
            && !is_reserved(alt)
    };
    for (alt, data) in &owners {
        if data.len() > 1 && usable(alt) {
            let (first, second) = (&accesses[data[0]], &accesses[data[1]]);
            return Err(GmlError::AmbiguousName {
                kernel: kernel.to_string(),
                name: (*alt).to_string(),
                first: format!(
                    "{} (write `{}`)",
                    describe(loop_kind, first),
                    all[data[0]][0]
                ),
                second: format!(
                    "{} (write `{}`)",
                    describe(loop_kind, second),
                    all[data[1]][0]
                ),
            });
        }
    }
    Ok(all
        .iter()
        .map(|names| {
            let chosen = names
                .iter()
                .enumerate()
                .find(|(j, name)| {
                    if *j == 0 {
                        ids.used.contains(name.as_str())
                    } else {
                        usable(name)
                    }
                })
                .map_or(&names[0], |(_, name)| name);
            chosen.clone()
        })
        .collect())
}

/// The variables' first names, when the body is not looked at (the first generation pass).
pub(crate) fn primaries(loop_kind: MeshKind, accesses: &[Resolved]) -> Vec<String> {
    accesses
        .iter()
        .map(|a| candidates(loop_kind, a).swap_remove(0))
        .collect()
}

/// Refuses two claims of one name.
pub(crate) fn check_collisions(kernel: &str, claims: &[Claim]) -> Result<()> {
    let mut seen: BTreeMap<&str, &Claim> = BTreeMap::new();
    for claim in claims {
        if let Some(first) = seen.insert(claim.name.as_str(), claim) {
            return Err(GmlError::NameCollision {
                kernel: kernel.to_string(),
                name: claim.name.clone(),
                first: first.owner.clone(),
                second: claim.owner.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::gml::data::DataId;
    use crate::gml::kernel::Mode;
    use crate::gml::value::{Scalar, ValueType};

    fn field(index: u32, kind: MeshKind, name: &str, relation: Relation) -> Resolved {
        Resolved {
            data: DataId { instance: 0, index },
            kind,
            name: name.into(),
            value: ValueType {
                scalar: Scalar::F32,
                width: 4,
            },
            items: 1,
            is_mesh: false,
            mode: Mode::Read,
            refs: false,
            voyeurs: false,
            relation,
        }
    }

    fn neighbours() -> Relation {
        Relation::User {
            link: DataId {
                instance: 0,
                index: 9,
            },
            link_name: "Ngb".into(),
            width: 3,
            neighbours: true,
        }
    }

    #[test]
    fn the_manuals_names_for_each_relation() {
        let t = MeshKind::Triangles;
        let v = MeshKind::Vertices;
        let direct = field(0, v, "speed", Relation::Direct);
        assert_eq!(candidates(v, &direct), ["Verspeed", "VerSpeed", "speed"]);
        let own = field(0, v, "VerSol", Relation::Direct);
        assert_eq!(candidates(v, &own), ["VerVerSol", "VerSol"]);
        let down = field(0, v, "Nrm", Relation::Down { count: 3 });
        assert_eq!(candidates(t, &down), ["TriVerNrm", "TriNrm"]);
        let up = field(0, t, "Bar", Relation::Up);
        assert_eq!(candidates(v, &up), ["VerTriBar"]);
        let ngb = field(0, t, "center", neighbours());
        assert_eq!(candidates(t, &ngb), ["Tricenter", "TriCenter"]);
        let coordinates = Resolved {
            is_mesh: true,
            ..field(0, v, "Crd", Relation::Down { count: 3 })
        };
        assert_eq!(candidates(t, &coordinates), ["TriCrd"]);
        let faces = Resolved {
            is_mesh: true,
            ..field(0, t, "Ver", Relation::Down { count: 4 })
        };
        assert_eq!(candidates(MeshKind::Tetrahedra, &faces), ["TetTriVer"]);
    }

    #[test]
    fn the_body_picks_the_declared_name() {
        let v = MeshKind::Vertices;
        let sol = field(0, v, "VerSol", Relation::Direct);
        let tmp = field(1, MeshKind::Triangles, "Tmp", Relation::Up);
        let body = "int i; float4 NewSol = {0};\nfor(i=0;i<VerTriDegMax;i++)\n  NewSol += \
                    VerTriTmp[i];\nVerSol = NewSol / VerTriDeg;";
        let got = choose("gather", v, &[sol, tmp], &BTreeSet::new(), body).unwrap();
        assert_eq!(got, ["VerSol", "VerTriTmp"]);
        // Not used: the declared name stays the first one.
        let sol = field(0, v, "VerSol", Relation::Direct);
        let got = choose("gather", v, &[sol], &BTreeSet::new(), "").unwrap();
        assert_eq!(got, ["VerVerSol"]);
    }

    #[test]
    fn two_fields_of_one_name_on_two_kinds_get_two_names() {
        let t = MeshKind::Triangles;
        let on_vertices = field(0, MeshKind::Vertices, "Nrm", Relation::Down { count: 3 });
        let on_triangles = field(1, t, "Nrm", Relation::Direct);
        let body = "TriNrm = TriVerNrm[0] + TriVerNrm[1] + TriVerNrm[2];";
        let got = choose(
            "normals",
            t,
            &[on_vertices, on_triangles],
            &BTreeSet::new(),
            body,
        )
        .unwrap();
        // `TriNrm` is the triangles' own field, as in the manual; the vertices' is `TriVerNrm`.
        assert_eq!(got, ["TriVerNrm", "TriNrm"]);
    }

    #[test]
    fn one_name_per_datum_and_prefixed_names_first() {
        let v = MeshKind::Vertices;
        // The manual's `VerSpeed` for `speed`, and a local `speed` of the body's own.
        let speed = field(0, v, "speed", Relation::Direct);
        let body = "float speed = 2.0f * VerSpeed; VerCrd += speed;";
        let got = choose("k", v, &[speed], &BTreeSet::new(), body).unwrap();
        assert_eq!(got, ["VerSpeed"]);
        // gml's own name used: a local `Area` stays the body's.
        let area = field(0, v, "Area", Relation::Direct);
        let body = "float Area = 1.0f; VerArea = Area;";
        let got = choose("k", v, &[area], &BTreeSet::new(), body).unwrap();
        assert_eq!(got, ["VerArea"]);
    }

    #[test]
    fn a_shared_alternative_used_by_the_body_is_ambiguous() {
        let t = MeshKind::Triangles;
        let a = field(0, MeshKind::Vertices, "Nrm", Relation::Down { count: 3 });
        let b = field(1, MeshKind::Edges, "Nrm", Relation::Down { count: 3 });
        let err = choose(
            "k",
            t,
            &[a.clone(), b.clone()],
            &BTreeSet::new(),
            "x = TriNrm[0];",
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, GmlError::AmbiguousName { .. }), "{text}");
        assert!(
            text.contains("`Nrm` on vertices") && text.contains("`Nrm` on edges"),
            "{text}"
        );
        assert!(
            text.contains("TriVerNrm") && text.contains("TriEdgNrm"),
            "{text}"
        );
        // Unused, the shared name is harmless.
        assert!(choose("k", t, &[a, b], &BTreeSet::new(), "x = TriVerNrm[0];").is_ok());
    }

    #[test]
    fn generated_names_calls_comments_and_reserved_words_are_not_aliases() {
        let t = MeshKind::Triangles;
        let idx = field(0, t, "idx", Relation::Direct);
        let fixed: BTreeSet<String> = ["TriIdx".to_string()].into();
        // `TriIdx` is the loop index, not `TriIdx` for the field `idx`.
        let got = choose("k", t, &[idx], &fixed, "x = TriIdx;").unwrap();
        assert_eq!(got, ["Triidx"]);
        // A field named like a function the body calls keeps the function.
        let min = field(0, t, "min", Relation::Direct);
        let got = choose("k", t, &[min], &fixed, "x = min(a, b);").unwrap();
        assert_eq!(got, ["Trimin"]);
        // In a comment, a name is not used.
        let center = field(0, t, "center", Relation::Direct);
        let got = choose("k", t, &[center], &fixed, "// center = 0\nx = 1;").unwrap();
        assert_eq!(got, ["Tricenter"]);
        let half = field(0, t, "half", Relation::Direct);
        let got = choose("k", t, &[half], &fixed, "half x;").unwrap();
        assert_eq!(got, ["Trihalf"]);
    }

    #[test]
    fn identifiers_skip_numbers_strings_and_comments() {
        let ids =
            identifiers("a = 1.0f + b /* c */ + fmin(d, e) // f\n; g = \"h\" 0x1Fu + p.x + q->y;");
        let used: Vec<&str> = ids.used.iter().map(String::as_str).collect();
        assert_eq!(used, ["a", "b", "d", "e", "g", "p", "q"]);
        assert!(ids.called.contains("fmin"));
    }

    #[test]
    fn one_name_claimed_twice_is_a_collision_naming_both() {
        let claims = [
            Claim {
                name: "TriIdx".into(),
                owner: "the loop index".into(),
                datum: false,
            },
            Claim {
                name: "TriIdx".into(),
                owner: "solution `Idx` on triangles".into(),
                datum: true,
            },
        ];
        let err = check_collisions("k", &claims).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("the loop index") && text.contains("solution `Idx` on triangles"),
            "{text}"
        );
        assert!(check_collisions("k", &claims[..1]).is_ok());
    }
}
