//! Export of an instance's mesh and fields, and import of several fields from one solution
//! file: GMlib's `GmlExportSolution` and the matching import, which GMlib lacks.
//!
//! # Mesh
//! [`Gml::export_mesh`] gives the mesh as the instance holds it now: the vertices
//! (coordinates, references) and every element kind it has, after extraction, replacement or
//! edits, read back from the device where kernels wrote it. Coordinates are `f32` on the
//! device (GMlib's `float4 VerCrd`); the import keeps the `f64` coordinates of a mesh that
//! `f32` would round (and `set_vertices` keeps them current), and the export gives each
//! coordinate in `f64` as long as the device still holds exactly its rounding, the device's
//! value otherwise (a kernel moved it). So an imported mesh, in any version, comes back
//! exactly until kernels move it. The copy costs 24 bytes per vertex of host memory, only for
//! meshes that need it; values `set_vertices` gives a mesh imported without one (all its
//! coordinates were exact in `f32`) come back rounded to `f32`. [`Gml::write_mesh`] writes the
//! mesh to a `.mesh`/`.meshb` file.
//!
//! # Solutions
//! [`Gml::export_solutions`] groups the fields by kind into one `SolAt…` keyword per kind, in
//! the order the fields were given, each field's values one after another on a line, as GMlib
//! does; and names them in a `ReferenceStrings` keyword. A field given with
//! [`ExportField::new`] is written as GMlib writes every field: one `GmfSca` per value, each
//! named on a line of its own `(keyword, 1, "name.x 3")`: the field's name, its component
//! (`x`, `y`, `z`, `t` for up to four values per line, else the 0-based number of the value) and
//! the 1-based number of the scalar in the whole file (`name 3` for a one-value field). A field
//! given with [`ExportField::with_types`] is written with those types (a vector, a symmetric
//! matrix, …), each named as libMeshb's examples do: `(keyword, position of the type in the
//! keyword, "name")`, or `"name.2"` for the second type of a field of several.
//!
//! [`Gml::import_solutions`] reverses both: types named alike (`U.x 1`, `U.y 2` or `U.1`,
//! `U.2`, consecutive in one keyword) become one field `U` holding all their values. Types with
//! no name are fields `Sol1`, `Sol2`, … (by their position in the keyword).

use std::path::Path;

use rayon::prelude::*;

use super::data::{DataId, Role, Solution};
use super::error::{GmlError, Result};
use super::value::Scalar;
use super::{Data, Gml, SolutionReal};
use crate::mesh_kind::MeshKind;
use crate::meshio::{
    self, ElementKind, ReferenceString, SolType, SolutionBlock, Solutions, Support, Version,
};

/// A field to export with [`Gml::export_solutions`], and how its values are typed in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportField {
    data: DataId,
    types: Option<Vec<SolType>>,
}

impl ExportField {
    /// `field` as GMlib exports it: each of its values a scalar (`GmfSca`).
    pub fn new(field: impl Data) -> Self {
        Self {
            data: field.id(),
            types: None,
        }
    }

    /// `field` with `types` describing each line: their widths in the export's dimension must
    /// add up to the field's values per line.
    pub fn with_types(field: impl Data, types: &[SolType]) -> Self {
        Self {
            data: field.id(),
            types: Some(types.to_vec()),
        }
    }
}

impl<T: super::Value> From<Solution<T>> for ExportField {
    fn from(field: Solution<T>) -> Self {
        ExportField::new(field)
    }
}

/// The content of a solution file: its blocks, and the names of their fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportedSolutions {
    /// One `SolAt…` block per kind.
    pub solutions: Solutions,
    /// The `ReferenceStrings` lines naming the fields.
    pub names: Vec<ReferenceString>,
}

/// A field created by [`Gml::import_solutions`].
#[derive(Debug, Clone)]
pub struct ImportedField<T: super::Value> {
    /// Its name (in kernels and in the file).
    pub name: String,
    /// The kind its lines belong to.
    pub kind: MeshKind,
    /// The file's types of its values, in order (their widths add up to its values per line).
    pub types: Vec<SolType>,
    /// The field: `types`' widths values of `T` per entity.
    pub field: Solution<T>,
}

/// What [`Gml::export_mesh`] keeps of the last mesh imported: its dimension and, when the
/// device's `f32` would round them, its coordinates in double precision, for the generation of
/// vertices the import made (kept up to date by `set_vertices`).
#[derive(Debug, Clone)]
pub(crate) struct Imported {
    dimension: u8,
    generation: u64,
    coordinates: Option<Vec<[f64; 3]>>,
}

impl Imported {
    /// What to keep of `mesh`, whose vertices got `generation`.
    pub(crate) fn new(mesh: &meshio::Mesh, generation: u64) -> Self {
        let rounded = mesh.vertices.par_iter().any(|p| {
            p.iter()
                .any(|&x| f64::from(x as f32).to_bits() != x.to_bits())
        });
        Self {
            dimension: mesh.dimension,
            generation,
            coordinates: rounded.then(|| mesh.vertices.clone()),
        }
    }

    /// Vertices `first..` were set to `coordinates` (already checked to be in range).
    pub(crate) fn set(&mut self, first: usize, coordinates: &[[f64; 3]]) {
        if let Some(kept) = &mut self.coordinates
            && let Some(range) = kept.get_mut(first..first + coordinates.len())
        {
            range.copy_from_slice(coordinates);
        }
    }
}

/// GMlib's component names for up to four values per line.
const COMPONENTS: [char; 4] = ['x', 'y', 'z', 't'];

impl Gml {
    /// The mesh the instance holds now (see the [module notes](crate::gml::export) notes): vertices with their
    /// references, then every element kind it has with nodes and references, from the device
    /// where kernels wrote them. The dimension is 2 when the vertices are those of a 2D mesh
    /// imported and every `z` is still 0, 3 otherwise.
    pub fn export_mesh(&mut self) -> Result<meshio::Mesh> {
        let (coordinates, refs) = self.vertices()?;
        let generation = self.mesh_generation(MeshKind::Vertices);
        let imported = self
            .imported
            .as_ref()
            .filter(|i| i.generation == generation);
        let exact = imported.and_then(|i| i.coordinates.as_deref());
        let vertices: Vec<[f64; 3]> = coordinates
            .par_iter()
            .enumerate()
            .map(|(i, p)| {
                let kept = exact.and_then(|e| e.get(i));
                // Each coordinate in double precision while the device holds its rounding.
                std::array::from_fn(|axis| match kept {
                    Some(e) if e[axis] as f32 == p[axis] => e[axis],
                    _ => f64::from(p[axis]),
                })
            })
            .collect();
        let flat = vertices.par_iter().all(|p| p[2] == 0.0);
        let dimension = match imported {
            Some(i) if i.dimension == 2 && flat => 2,
            _ => 3,
        };
        let mut mesh = meshio::Mesh::new(dimension);
        mesh.vertices = vertices;
        mesh.vertex_refs = refs;
        for element in ElementKind::ALL {
            let kind = MeshKind::from_element(element);
            if self.count(kind).unwrap_or(0) == 0 {
                continue;
            }
            let id = self.mesh(kind)?;
            self.datum_mut_quiet(id)?.download()?;
            let (nodes, refs) = self.elements(kind)?;
            let elements = mesh.elements_mut(element);
            elements.reserve(refs.len());
            for (nodes, &reference) in nodes.chunks_exact(element.nodes()).zip(&refs) {
                elements.push(nodes, reference);
            }
        }
        Ok(mesh)
    }

    /// Writes [`export_mesh`](Self::export_mesh) to `path` (`.mesh` or `.meshb`) in `version`,
    /// atomically ([`meshio::write`]).
    pub fn write_mesh(&mut self, path: &Path, version: Version) -> Result<()> {
        let mesh = self.export_mesh()?;
        Ok(meshio::write(path, &mesh, version)?)
    }

    /// The solution blocks and names of `fields` in `dimension` (2 or 3): one `SolAt…` block
    /// per kind, see the [module notes](crate::gml::export) notes. Each field's values are read back from the
    /// device if kernels wrote them; integer fields are exported exactly as reals.
    pub fn export_solutions(
        &mut self,
        fields: &[ExportField],
        dimension: u8,
    ) -> Result<ExportedSolutions> {
        if fields.is_empty() {
            return Err(GmlError::Export {
                what: "export_solutions".to_string(),
                why: "no field was given".to_string(),
            });
        }
        if dimension != 2 && dimension != 3 {
            return Err(GmlError::Export {
                what: "export_solutions".to_string(),
                why: format!("dimension {dimension}: expected 2 or 3"),
            });
        }
        // Fields grouped by kind, kinds in order of first appearance.
        let mut groups: Vec<(MeshKind, Vec<usize>)> = Vec::new();
        for (i, field) in fields.iter().enumerate() {
            if fields[..i].iter().any(|f| f.data == field.data) {
                let name = self.datum(field.data)?.role.name().to_string();
                return Err(GmlError::Export {
                    what: format!("field `{name}`"),
                    why: "is given twice".to_string(),
                });
            }
            let kind = self.export_role(field.data)?.0;
            match groups.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, members)) => members.push(i),
                None => groups.push((kind, vec![i])),
            }
        }
        let mut blocks = Vec::new();
        let mut names = Vec::new();
        let mut scalar_number = 0;
        for (kind, members) in groups {
            let support = match kind.element() {
                Some(element) => Support::Elements(element),
                None => Support::Vertices,
            };
            let code = support.code();
            let lines = self.count(kind).unwrap_or(0);
            let mut columns = Vec::new();
            let mut types = Vec::new();
            for &i in &members {
                let field = &fields[i];
                let (_, name, width) = self.export_role(field.data)?;
                let field_types = match &field.types {
                    None => {
                        for k in 0..width {
                            scalar_number += 1;
                            let text = match COMPONENTS.get(k) {
                                _ if width == 1 => format!("{name} {scalar_number}"),
                                Some(c) if width <= 4 => format!("{name}.{c} {scalar_number}"),
                                _ => format!("{name}.{k} {scalar_number}"),
                            };
                            names.push(ReferenceString::new(code, 1, text));
                        }
                        vec![SolType::Scalar; width]
                    }
                    Some(given) => {
                        let sum: usize = given.iter().map(|t| t.width(dimension)).sum();
                        if sum != width || given.is_empty() {
                            return Err(GmlError::WrongLength {
                                what: format!("{name} (types of its solution block)"),
                                expected: width,
                                got: sum,
                            });
                        }
                        for (j, _) in given.iter().enumerate() {
                            let text = if given.len() == 1 {
                                name.clone()
                            } else {
                                format!("{name}.{}", j + 1)
                            };
                            let position = (types.len() + j + 1) as i64;
                            names.push(ReferenceString::new(code, position, text));
                        }
                        given.clone()
                    }
                };
                types.extend(field_types);
                columns.push((self.values_f64(field.data)?, width));
            }
            let line: usize = columns.iter().map(|c| c.1).sum();
            let mut values = Vec::with_capacity(lines * line);
            for l in 0..lines {
                for (column, width) in &columns {
                    values.extend_from_slice(&column[l * width..(l + 1) * width]);
                }
            }
            blocks.push(SolutionBlock {
                support,
                types,
                values,
            });
        }
        Ok(ExportedSolutions {
            solutions: Solutions { dimension, blocks },
            names,
        })
    }

    /// Writes `fields` to `path` (`.sol` or `.solb`) in `dimension` and `version`, with their
    /// names, atomically (`GmlExportSolution`; GMlib writes version 1, dimension 3).
    pub fn write_solutions(
        &mut self,
        path: &Path,
        fields: &[ExportField],
        dimension: u8,
        version: Version,
    ) -> Result<()> {
        let exported = self.export_solutions(fields, dimension)?;
        Ok(meshio::write_named_solution(
            path,
            &exported.solutions,
            &exported.names,
            version,
        )?)
    }

    /// Creates one field of `T` (`f32` or `f64`) per named field of `solutions`, as the
    /// [module notes](crate::gml::export) notes say how `names` split each block. The mesh data of each block's
    /// kind must exist with as many entities as the block has lines, and no datum of that kind
    /// may already have a field's name. Names that do not match a block's types (a count or an
    /// index that fits neither libMeshb's convention nor GMlib's) are an error naming the
    /// keyword: import such blocks whole with [`import_solution`](Self::import_solution). On
    /// any error no field is left behind.
    pub fn import_solutions<T: SolutionReal>(
        &mut self,
        solutions: &Solutions,
        names: &[ReferenceString],
    ) -> Result<Vec<ImportedField<T>>> {
        let mut imported = Vec::new();
        match self.import_into(solutions, names, &mut imported) {
            Ok(()) => Ok(imported),
            Err(error) => {
                // All or nothing: the fields made before the error are freed.
                for field in imported {
                    self.free(field.field).ok();
                }
                Err(error)
            }
        }
    }

    fn import_into<T: SolutionReal>(
        &mut self,
        solutions: &Solutions,
        names: &[ReferenceString],
        imported: &mut Vec<ImportedField<T>>,
    ) -> Result<()> {
        let dimension = solutions.dimension;
        for block in &solutions.blocks {
            let kind = match block.support {
                Support::Vertices => MeshKind::Vertices,
                Support::Elements(element) => MeshKind::from_element(element),
            };
            let width = block.width(dimension);
            if width == 0 || block.values.len() % width != 0 {
                return Err(GmlError::WrongLength {
                    what: block.support.keyword().to_string(),
                    expected: block.values.len().div_ceil(width.max(1)) * width,
                    got: block.values.len(),
                });
            }
            let lines = block.values.len() / width;
            let labels = type_labels(block, names)?;
            // Consecutive types of one base name with components form one field.
            let mut start = 0;
            let mut offset = 0;
            while start < block.types.len() {
                let (base, component) = &labels[start];
                let mut end = start + 1;
                if component.is_some() {
                    while end < block.types.len()
                        && labels[end].1.is_some()
                        && labels[end].0 == *base
                    {
                        end += 1;
                    }
                }
                let types = block.types[start..end].to_vec();
                let field_width: usize = types.iter().map(|t| t.width(dimension)).sum();
                let name = match base {
                    Some(base) => identifier(base),
                    None => format!("Sol{}", start + 1),
                };
                let mut values = Vec::with_capacity(lines * field_width);
                for line in block.values.chunks_exact(width) {
                    values.extend_from_slice(&line[offset..offset + field_width]);
                }
                let part = SolutionBlock {
                    support: block.support,
                    types: types.clone(),
                    values,
                };
                let field = self.import_solution::<T>(&part, dimension, &name)?;
                imported.push(ImportedField {
                    name,
                    kind,
                    types,
                    field,
                });
                offset += field_width;
                start = end;
            }
        }
        Ok(())
    }

    /// Reads a `.sol`/`.solb` file with its names and imports its fields
    /// ([`import_solutions`](Self::import_solutions)).
    pub fn import_solution_file<T: SolutionReal>(
        &mut self,
        path: &Path,
    ) -> Result<Vec<ImportedField<T>>> {
        let (file, names) = meshio::read_named_solution(path)?;
        self.import_solutions(&file.solutions, &names)
            .map_err(|error| match error {
                GmlError::SolutionNames { keyword, why, .. } => GmlError::SolutionNames {
                    file: Some(path.to_path_buf()),
                    keyword,
                    why,
                },
                other => other,
            })
    }

    /// The kind, name and values per line of a solution datum that can be exported.
    fn export_role(&self, id: DataId) -> Result<(MeshKind, String, usize)> {
        match &self.datum(id)?.role {
            Role::Solution {
                kind,
                items,
                value,
                name,
            } => Ok((*kind, name.clone(), items * value.width)),
            role => Err(GmlError::Export {
                what: format!("`{}` ({} data)", role.name(), role.kind()),
                why: "is not a solution field: export the mesh with export_mesh".to_string(),
            }),
        }
    }

    /// Every value of a solution datum as `f64`, read back from the device if needed.
    fn values_f64(&mut self, id: DataId) -> Result<Vec<f64>> {
        let datum = self.datum_mut_quiet(id)?;
        datum.download()?;
        let host = &datum.host;
        Ok(match datum.role.value().scalar {
            Scalar::I8 => host.iter().map(|&b| f64::from(b as i8)).collect(),
            Scalar::I32 => bytemuck::pod_collect_to_vec::<u8, i32>(host)
                .into_iter()
                .map(f64::from)
                .collect(),
            Scalar::F32 => bytemuck::pod_collect_to_vec::<u8, f32>(host)
                .into_iter()
                .map(f64::from)
                .collect(),
            Scalar::F64 => bytemuck::pod_collect_to_vec::<u8, f64>(host),
        })
    }
}

/// For each type of `block`: the base name of the field it belongs to and its component, from
/// the `names` of the block's keyword (none: no name).
fn type_labels(
    block: &SolutionBlock,
    names: &[ReferenceString],
) -> Result<Vec<(Option<String>, Option<String>)>> {
    let n = block.types.len();
    let code = block.support.code();
    let mine: Vec<&ReferenceString> = names.iter().filter(|r| r.keyword == code).collect();
    if mine.is_empty() {
        return Ok(vec![(None, None); n]);
    }
    let error = |why: String| GmlError::SolutionNames {
        file: None,
        keyword: block.support.keyword(),
        why,
    };
    let mut texts: Vec<Option<&str>> = vec![None; n];
    if mine.len() == n && mine.iter().all(|r| r.index == 1) {
        // GMlib: one line per type, in order, index 1.
        for (slot, r) in texts.iter_mut().zip(&mine) {
            *slot = Some(r.text.as_str());
        }
    } else {
        // libMeshb: the index is the 1-based position of the type.
        for r in &mine {
            let slot = usize::try_from(r.index)
                .ok()
                .filter(|&i| (1..=n).contains(&i))
                .ok_or_else(|| {
                    error(format!(
                        "`{}` names type {} but the keyword has {n} types",
                        r.text, r.index
                    ))
                })?;
            if texts[slot - 1].replace(r.text.as_str()).is_some() {
                return Err(error(format!("type {slot} is named twice")));
            }
        }
    }
    Ok(texts
        .into_iter()
        .map(|text| match text {
            None => (None, None),
            Some(text) => {
                // GMlib appends the scalar's number: `U.x 3`.
                let text = match text.rsplit_once(' ') {
                    Some((head, number)) if number.parse::<u64>().is_ok() => head.trim_end(),
                    _ => text,
                };
                match text.rsplit_once('.') {
                    Some((base, component)) if !base.is_empty() && !component.is_empty() => {
                        (Some(base.to_string()), Some(component.to_string()))
                    }
                    _ => (Some(text.to_string()), None),
                }
            }
        })
        .collect())
}

/// `text` as a gml data name: characters other than ASCII letters, digits and `_` become `_`,
/// and a name that does not start with a letter gets an `F` in front.
fn identifier(text: &str) -> String {
    let mut name: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert(0, 'F');
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(types: Vec<SolType>) -> SolutionBlock {
        SolutionBlock {
            support: Support::Vertices,
            types,
            values: Vec::new(),
        }
    }

    #[test]
    fn gmlib_and_libmeshb_names() {
        let b = block(vec![SolType::Scalar; 3]);
        let gmlib = [
            ReferenceString::new(62, 1, "U.x 1"),
            ReferenceString::new(62, 1, "U.y 2"),
            ReferenceString::new(62, 1, "T 3"),
        ];
        let labels = type_labels(&b, &gmlib).unwrap();
        assert_eq!(labels[0], (Some("U".into()), Some("x".into())));
        assert_eq!(labels[2], (Some("T".into()), None));
        let libmeshb = [
            ReferenceString::new(62, 3, "second scalar"),
            ReferenceString::new(62, 1, "first scalar"),
        ];
        let labels = type_labels(&b, &libmeshb).unwrap();
        assert_eq!(labels[0].0.as_deref(), Some("first scalar"));
        assert_eq!(labels[1], (None, None));
        assert_eq!(identifier("first scalar"), "first_scalar");
        assert_eq!(identifier("2d"), "F2d");
        let bad = [ReferenceString::new(62, 4, "x")];
        let e = type_labels(&b, &bad).unwrap_err();
        assert!(e.to_string().contains("SolAtVertices"), "{e}");
        let twice = [
            ReferenceString::new(62, 2, "a"),
            ReferenceString::new(62, 2, "b"),
        ];
        assert!(type_labels(&b, &twice).is_err());
        // Names of other keywords are not this block's.
        let other = [ReferenceString::new(64, 1, "T")];
        assert_eq!(type_labels(&b, &other).unwrap(), vec![(None, None); 3]);
    }
}
