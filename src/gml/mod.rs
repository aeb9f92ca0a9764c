//! `gml`: a Rust port of GMlib v3, the OpenCL library for computing on unstructured meshes.
//!
//! A [`Gml`] instance holds a mesh and solution fields on one OpenCL device. The user writes
//! only the body of a loop over one kind of entity; gml declares and loads the variables the
//! body reads, with GMlib's context-based names (`VerCrd`, `TriCrd[3]`, `VerTriBar[i]`,
//! `VerTriDeg`, …), builds the topological links it needs (downlinks, balls and shells split
//! into degree classes, neighbours), launches the kernel once per link table, and stores back
//! only the data opened for writing.
//!
//! # Names
//!
//! Looping over kind `L` (`Ver`, `Tri`, …) and accessing a field named `N` of kind `K`, the
//! body sees the manual's names: `LN` for the loop kind's own field (`VerSpeed`; also the bare
//! `N`, as the manual's `relaxed` or a field named `VerSol`, and `LN` with `N`'s first letter
//! in upper case, `VerSpeed` for `speed`), `LKN` through a downlink (`TriVerNrm[3]`), an uplink
//! (`VerTriBar[i]`) or a user link to another kind, and `LN` through neighbours
//! (`TriCenter[4]`). gml's earlier `LN` for downlinks and user links (`TriNrm[3]`) is accepted
//! where no other datum owns it. The first of a datum's names that the body uses is the one
//! declared; a name two things would share is a [`GmlError::NameCollision`] or
//! [`GmlError::AmbiguousName`] naming both, never an OpenCL build error.
//!
//! # Replacing mesh data
//!
//! Each kind's mesh data have a generation, new each time they are created, replaced
//! ([`Gml::new_mesh`], an import, [`Gml::extract_edges`]/[`Gml::extract_faces`]) or removed
//! ([`Gml::free`], an import whose mesh lacks the kind). Solutions, user links, element tables
//! and [`FieldBuffer`]s record the generations they were made for (an element table those of
//! the vertices it indexes, a link those of both ends). Once one is no longer current the datum
//! is *stale*: gml releases its memory at once but keeps its handle known, so that compiling,
//! launching or enqueueing a kernel over it, reading or writing it, or exposing its buffer is a
//! [`GmlError::StaleData`] naming the datum and what changed, never an access sized for other
//! entities. An import replaces the whole mesh: element kinds the new mesh lacks are removed.
//! Changing lines in place (`set_vertices`, `set_elements`) keeps every datum current (same
//! entities, same count); automatic links are rebuilt when element nodes change, and kernels
//! over an uplink build their programs again whenever its tables were rebuilt.
//!
//! # Sums folded by kernels
//!
//! A solver's dot products need not be reductions of their own. A kernel given
//! [`KernelSpec::sums`] sums `n` values per entity, which its body writes to `GmlSum[k]`: each
//! work-group folds its entities' terms in local memory and writes a partial, and the group that
//! finishes last folds the partials (in double where the device has fp64) and runs the kernel's
//! `finish` block once, with the totals in `GmlSum[k]`, where it writes the parameters that the
//! next kernels of the queue read. Through an uplink, where a kernel runs one launch per degree
//! table, the launches share the partials and the ticket, so the finish still runs once, after
//! the last table. The wind's conjugate gradients get `r·z` and `Σ r²/m` from the
//! update, a convergence test after every iteration at no cost, and, with the operator
//! assembled per vertex, `d·A d` from the kernel that computes `A d`: four launches an
//! iteration instead of six.
//!
//! ```no_run
//! use snowsim::cl::DeviceSelector;
//! use snowsim::gml::{Access, Gml, KernelSpec, MeshKind};
//!
//! let mut gml = Gml::new(&DeviceSelector::Default)?;
//! gml.import_file(std::path::Path::new("sample_meshes/cube.meshb"))?;
//! let bar = gml.new_solution::<[f32; 4]>(MeshKind::Triangles, 1, "Bar")?;
//! let kernel = gml.compile(
//!     KernelSpec::new("barycentre", MeshKind::Triangles)
//!         .access(Access::read(gml.mesh(MeshKind::Vertices)?))
//!         .access(Access::write(bar))
//!         .body("TriBar = (TriCrd[0] + TriCrd[1] + TriCrd[2]) / 3.0f;"),
//! )?;
//! gml.launch(kernel)?;
//! let barycentres: Vec<[f32; 4]> = gml.read_all(bar)?;
//! # Ok::<(), snowsim::gml::GmlError>(())
//! ```

mod data;
mod error;
pub mod export;
mod field;
mod generation;
mod kernel;
mod links;
mod params;
mod reduce;
pub mod topology;
mod value;

use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;

pub use crate::mesh_kind::MeshKind;
pub use data::{Data, DataId, Link, Solution};
pub use error::{GmlError, Result};
pub use export::{ExportField, ExportedSolutions, ImportedField};
pub use field::FieldBuffer;
pub use kernel::{Access, KernelId, KernelSpec, MAX_SUMS, Mode};
pub use links::{LinkInfo, LinkTable};
pub use params::{Parameters, PendingParameters};
pub use reduce::{
    ReduceLayout, ReduceOptions, ReduceOutput, Reducible, ReducibleScalar, Reduction, VectorMode,
};
pub use value::{Scalar, Value, ValueType};

use crate::cl::{self, Context, DeviceInfo, DeviceSelector};
use crate::counters::Counters;
use crate::meshio;
use data::{Datum, Role};

/// Gives each instance a distinct number, so handles cannot cross instances.
static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(1);

/// One gml instance: a mesh, its solution fields, links and kernels on one OpenCL device.
///
/// Several instances can live at once, on one device or several.
pub struct Gml {
    instance: u32,
    context: Context,
    data: Vec<Option<Datum>>,
    mesh: HashMap<MeshKind, DataId>,
    mesh_log: generation::MeshLog,
    links: links::Cache,
    /// Sources pasted before every kernel, each under its own name (so build logs cite it).
    toolkit: Vec<cl::Source>,
    params: Option<params::Block>,
    kernels: Vec<kernel::Compiled>,
    reducer: reduce::Reducer,
    debug: bool,
    options: String,
    /// Bumped by every change on the host side (data, links, mesh), so kernels know when to
    /// prepare again.
    generation: u64,
    counters: Counters,
    /// What an export needs to give the imported mesh back as it was (its dimension, its
    /// double-precision coordinates).
    imported: Option<export::Imported>,
}

impl Gml {
    /// Opens an instance on the device `selector` names (see `snowsim devices`).
    pub fn new(selector: &DeviceSelector) -> Result<Self> {
        Ok(Self::with_context(Context::from_selector(selector)?))
    }

    /// Opens an instance on an existing context (shared with other code or instances).
    pub fn with_context(context: Context) -> Self {
        Self {
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            context,
            data: Vec::new(),
            mesh: HashMap::new(),
            mesh_log: generation::MeshLog::default(),
            links: links::Cache::default(),
            toolkit: Vec::new(),
            params: None,
            kernels: Vec::new(),
            reducer: reduce::Reducer::default(),
            debug: false,
            options: String::new(),
            generation: 0,
            counters: Counters::default(),
            imported: None,
        }
    }

    /// Every OpenCL device of the machine (GMlib's `GmlListGPU`).
    pub fn devices() -> Result<Vec<DeviceInfo>> {
        Ok(cl::list_devices()?.into_iter().map(|d| d.info).collect())
    }

    /// The device this instance runs on.
    pub fn device(&self) -> &DeviceInfo {
        self.context.info()
    }

    /// The OpenCL context (to share buffers with other code).
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Whether the device computes in double precision (`GmlCheckFP64`).
    pub fn has_fp64(&self) -> bool {
        self.device().fp64
    }

    /// When on, every generated kernel source is printed to standard error when compiled.
    pub fn set_debug(&mut self, on: bool) {
        self.debug = on;
    }

    /// Extra OpenCL compiler options for the kernels compiled from now on.
    pub fn set_compiler_options(&mut self, options: &str) {
        self.options = options.to_string();
    }

    /// OpenCL functions pasted before every kernel compiled from now on (GMlib's user toolkit).
    /// Build logs name this source `user toolkit`.
    pub fn include_toolkit(&mut self, source: &str) {
        self.toolkit
            .push(cl::Source::new("user toolkit", source.to_string()));
    }

    /// Like [`include_toolkit`](Self::include_toolkit), for a source with a name of its own:
    /// build logs cite its file and line, and a kernel file of the binary stays overridable
    /// from `$SNOWSIM_KERNEL_DIR` when it comes from [`cl::Source::embedded`] (the wind's
    /// `tet_walk.cl` and `wind.cl`).
    pub fn include_toolkit_source(&mut self, source: cl::Source) {
        self.toolkit.push(source);
    }

    // ----- mesh data -----------------------------------------------------------------------

    /// Creates (or replaces) the mesh data of `kind` with `count` entities, all zero
    /// (`GmlNewMeshData`).
    ///
    /// Replacing mesh data gives the kind a new generation: the solutions and user links made
    /// for the old entities (and, when the vertices are replaced, every element table, which
    /// indexes them) become stale. Their memory is released and every later use of their
    /// handles is a [`GmlError::StaleData`] saying what changed.
    pub fn new_mesh(&mut self, kind: MeshKind, count: usize) -> Result<DataId> {
        self.replace_mesh(kind, count, "new_mesh")
    }

    /// The mesh data of `kind`, to pass to a kernel.
    pub fn mesh(&self, kind: MeshKind) -> Result<DataId> {
        self.mesh
            .get(&kind)
            .copied()
            .ok_or(GmlError::MissingMesh(kind))
    }

    /// Number of entities of `kind`, `None` when there is no such mesh data
    /// (`GmlGetMeshInfo`).
    pub fn count(&self, kind: MeshKind) -> Option<usize> {
        let id = self.mesh.get(&kind)?;
        self.data[id.index as usize].as_ref().map(|d| d.lines)
    }

    /// The generation of the current mesh data of `kind`: a number that changes each time they
    /// are created, replaced or removed (0 before any). Data made for another generation are
    /// stale.
    pub fn mesh_generation(&self, kind: MeshKind) -> u64 {
        self.mesh_log.generation(kind)
    }

    /// Whether `data` can still be used: it exists and the mesh data it was made for are still
    /// current.
    pub fn is_current(&self, data: impl Data) -> bool {
        self.datum(data.id()).is_ok()
    }

    /// Sets vertices `first..first + coordinates.len()`: coordinates (stored as `float4` with
    /// w = 0) and, when given, references (one per vertex); without references the vertices
    /// keep theirs (0 for new data) (`GmlSetDataBlock` on vertices).
    pub fn set_vertices(
        &mut self,
        first: usize,
        coordinates: &[[f64; 3]],
        refs: Option<&[i32]>,
    ) -> Result<()> {
        let lines: Vec<[f32; 4]> = coordinates
            .par_iter()
            .map(|p| [p[0] as f32, p[1] as f32, p[2] as f32, 0.0])
            .collect();
        self.set_mesh_lines(
            MeshKind::Vertices,
            first,
            coordinates.len(),
            bytemuck::cast_slice(&lines),
            refs,
        )?;
        if let Some(imported) = &mut self.imported {
            imported.set(first, coordinates);
        }
        Ok(())
    }

    /// A vertex field holding `coordinates` (one per vertex) in double precision, as `double4`
    /// with w = 0, named `name` in kernels (`VerCrd64`, `TetCrd64[i]` for the name `Crd64`):
    /// the coordinates for kernels that compute geometry in double, since GMlib's `VerCrd` is a
    /// `float4`. Needs FP64.
    pub fn new_coordinates_f64(
        &mut self,
        name: &str,
        coordinates: &[[f64; 3]],
    ) -> Result<Solution<[f64; 4]>> {
        let vertices = self.count(MeshKind::Vertices).unwrap_or(0);
        if coordinates.len() != vertices {
            return Err(GmlError::WrongLength {
                what: format!("{name} (double-precision coordinates)"),
                expected: vertices,
                got: coordinates.len(),
            });
        }
        let field = self.new_solution::<[f64; 4]>(MeshKind::Vertices, 1, name)?;
        let lines: Vec<[f64; 4]> = coordinates
            .iter()
            .map(|p| [p[0], p[1], p[2], 0.0])
            .collect();
        self.set_block(field, 0, &lines)?;
        Ok(field)
    }

    /// Sets elements of `kind` from `first` on: `nodes` holds `kind.nodes()` 0-based vertex
    /// indices per element and, when given, `refs` one reference per element (without, the
    /// elements keep theirs). Indices are checked against the vertex count.
    pub fn set_elements(
        &mut self,
        kind: MeshKind,
        first: usize,
        nodes: &[u32],
        refs: Option<&[i32]>,
    ) -> Result<()> {
        if kind == MeshKind::Vertices {
            return Err(GmlError::NotElements(kind));
        }
        let n = kind.nodes();
        if !nodes.len().is_multiple_of(n) {
            return Err(GmlError::WrongLength {
                what: format!("{kind} nodes"),
                expected: nodes.len().div_ceil(n) * n,
                got: nodes.len(),
            });
        }
        let count = nodes.len() / n;
        let vertices = self.count(MeshKind::Vertices).unwrap_or(0);
        let width = kind.node_vector_width();
        // Whole blocks are checked with a vectorised maximum; the first bad block is searched.
        const BLOCK: usize = 1 << 14;
        let bad_block = nodes
            .par_chunks(BLOCK)
            .position_first(|block| block.iter().max().is_some_and(|&v| v as usize >= vertices));
        if let Some(b) = bad_block {
            let block = &nodes[b * BLOCK..nodes.len().min((b + 1) * BLOCK)];
            if let Some(i) = block.iter().position(|&v| v as usize >= vertices) {
                let at = b * BLOCK + i;
                return Err(GmlError::NodeOutOfRange {
                    kind,
                    element: first.saturating_add(at / n),
                    index: i64::from(nodes[at]),
                    vertices,
                });
            }
        }
        let mut lines = vec![0i32; count * width];
        lines
            .par_chunks_mut(width)
            .zip(nodes.par_chunks_exact(n))
            .for_each(|(line, element)| {
                for (to, &v) in line.iter_mut().zip(element) {
                    *to = v as i32;
                }
                line[n..].fill(element[0] as i32);
            });
        self.set_mesh_lines(kind, first, count, bytemuck::cast_slice(&lines), refs)
    }

    fn set_mesh_lines(
        &mut self,
        kind: MeshKind,
        first: usize,
        count: usize,
        bytes: &[u8],
        refs: Option<&[i32]>,
    ) -> Result<()> {
        if let Some(refs) = refs
            && refs.len() != count
        {
            return Err(GmlError::WrongLength {
                what: format!("{kind} references"),
                expected: count,
                got: refs.len(),
            });
        }
        let id = self.mesh(kind)?;
        let datum = self.datum_mut(id)?;
        let end = line_range(kind.name(), first, count, datum.lines)?;
        datum.download()?;
        let line = datum.role.line_bytes();
        copy_in_parallel(&mut datum.host[first * line..end * line], bytes);
        if let Some(refs) = refs {
            copy_in_parallel(&mut datum.refs[first..end], refs);
        }
        datum.host_dirty = true;
        // Links depend on element nodes and on the vertex count, not on coordinates.
        if kind != MeshKind::Vertices {
            self.links.invalidate(kind);
            self.retire_neighbours(
                kind,
                &format!(
                    "set_elements changed {kind} nodes after set_neighbours({kind}) built it: \
                     call set_neighbours again"
                ),
            );
        }
        Ok(())
    }

    /// Retires the links `set_neighbours` built for `kind`, saying `why`.
    fn retire_neighbours(&mut self, kind: MeshKind, why: &str) {
        let mut any = false;
        for datum in self.data.iter_mut().flatten() {
            if datum.retired.is_none() && datum.neighbours_of == Some(kind) {
                datum.retired = Some(why.to_string());
                datum.release();
                any = true;
            }
        }
        if any {
            self.touch();
        }
    }

    /// Every vertex's coordinates and reference, from the device if kernels changed them.
    pub fn vertices(&mut self) -> Result<(Vec<[f32; 3]>, Vec<i32>)> {
        let count = self.count(MeshKind::Vertices).unwrap_or(0);
        self.vertex_block(0, count)
    }

    /// Coordinates and references of vertices `first..first + count`, from the device if
    /// kernels changed them (`GmlGetDataBlock` on vertices).
    pub fn vertex_block(
        &mut self,
        first: usize,
        count: usize,
    ) -> Result<(Vec<[f32; 3]>, Vec<i32>)> {
        let id = self.mesh(MeshKind::Vertices)?;
        let datum = self.datum_mut_quiet(id)?;
        let end = line_range("vertices", first, count, datum.lines)?;
        datum.download()?;
        let line = datum.role.line_bytes();
        let lines: Vec<[f32; 4]> =
            bytemuck::pod_collect_to_vec(&datum.host[first * line..end * line]);
        Ok((
            lines.iter().map(|p| [p[0], p[1], p[2]]).collect(),
            datum.refs[first..end].to_vec(),
        ))
    }

    /// One vertex's coordinates and reference (`GmlGetDataLine` on vertices).
    pub fn vertex_line(&mut self, line: usize) -> Result<([f32; 3], i32)> {
        let (coordinates, refs) = self.vertex_block(line, 1)?;
        Ok((coordinates[0], refs[0]))
    }

    /// Every element's nodes (`kind.nodes()` per element, 0-based) and references.
    pub fn elements(&mut self, kind: MeshKind) -> Result<(Vec<u32>, Vec<i32>)> {
        let count = self.count(kind).ok_or(GmlError::MissingMesh(kind))?;
        self.element_block(kind, 0, count)
    }

    /// Nodes (`kind.nodes()` per element, 0-based) and references of elements
    /// `first..first + count` (`GmlGetDataBlock` on elements).
    pub fn element_block(
        &mut self,
        kind: MeshKind,
        first: usize,
        count: usize,
    ) -> Result<(Vec<u32>, Vec<i32>)> {
        if kind == MeshKind::Vertices {
            return Err(GmlError::NotElements(kind));
        }
        let id = self.mesh(kind)?;
        let datum = self.datum(id)?;
        let end = line_range(kind.name(), first, count, datum.lines)?;
        let (n, width) = (kind.nodes(), kind.node_vector_width());
        let line = datum.role.line_bytes();
        let all: Vec<i32> = bytemuck::pod_collect_to_vec(&datum.host[first * line..end * line]);
        Ok((
            all.chunks_exact(width)
                .flat_map(|l| l[..n].iter().map(|&v| v as u32))
                .collect(),
            datum.refs[first..end].to_vec(),
        ))
    }

    /// One element's nodes and reference (`GmlGetDataLine` on elements).
    pub fn element_line(&mut self, kind: MeshKind, line: usize) -> Result<(Vec<u32>, i32)> {
        let (nodes, refs) = self.element_block(kind, line, 1)?;
        Ok((nodes, refs[0]))
    }

    /// The numbering score of the mesh as the instance holds it now, after extraction,
    /// replacement or edits (GMlib's `GmlEvaluateNumbering`): for each element kind, the share
    /// of vertex reads a GPU's L1 cache would serve, as [`crate::renumber::numbering_score`]
    /// computes it for a file.
    pub fn numbering_score(&mut self) -> Result<crate::renumber::NumberingScore> {
        let mut tables = Vec::new();
        for element in meshio::ElementKind::ALL {
            let kind = MeshKind::from_element(element);
            if self.count(kind).is_some_and(|n| n > 0) {
                tables.push((element, self.elements(kind)?.0));
            }
        }
        let borrowed: Vec<(meshio::ElementKind, &[u32])> =
            tables.iter().map(|(k, n)| (*k, n.as_slice())).collect();
        Ok(crate::renumber::numbering_score_of_tables(
            &borrowed,
            &crate::renumber::CacheModel::default(),
        ))
    }

    /// Loads every kind present in `mesh` (`GmlImportMesh`), replacing the whole mesh: element
    /// kinds `mesh` lacks are removed, and every solution and link made for the old mesh data
    /// becomes stale (see [`new_mesh`](Self::new_mesh)).
    pub fn import_mesh(&mut self, mesh: &meshio::Mesh) -> Result<()> {
        self.import_kinds(mesh, &meshio::ElementKind::ALL)
    }

    /// Loads the vertices of `mesh` and only the element kinds listed (those it has), so that
    /// a kernel over one kind does not upload the others. Like [`import_mesh`](Self::import_mesh)
    /// it replaces the whole mesh: kinds not loaded are removed.
    pub fn import_kinds(
        &mut self,
        mesh: &meshio::Mesh,
        kinds: &[meshio::ElementKind],
    ) -> Result<()> {
        // New vertices retire every element table (they index the old vertices).
        self.replace_mesh(MeshKind::Vertices, mesh.vertices.len(), "import_mesh")?;
        self.set_vertices(0, &mesh.vertices, Some(&mesh.vertex_refs))?;
        self.imported = Some(export::Imported::new(
            mesh,
            self.mesh_generation(MeshKind::Vertices),
        ));
        for &element in kinds {
            let elements = mesh.elements(element);
            if elements.is_empty() {
                continue;
            }
            let kind = MeshKind::from_element(element);
            self.replace_mesh(kind, elements.len(), "import_mesh")?;
            self.set_elements(kind, 0, elements.node_slice(), Some(elements.refs()))?;
        }
        Ok(())
    }

    /// Reads a `.mesh`/`.meshb` file and loads it, replacing the whole mesh.
    pub fn import_file(&mut self, path: &Path) -> Result<()> {
        let file = meshio::read(path)?;
        self.import_mesh(&file.mesh)
    }

    /// Creates the mesh data of `kind`, retiring the old ones and what was made for them.
    fn replace_mesh(&mut self, kind: MeshKind, count: usize, cause: &str) -> Result<DataId> {
        check_index_range(|| format!("{kind} mesh data"), count, 1)?;
        self.mesh.remove(&kind);
        self.links.invalidate(kind);
        self.mesh_log.replace(kind, count, cause);
        self.retire_stale(cause);
        let id = self.insert(Datum::new(Role::Mesh(kind), count));
        self.mesh.insert(kind, id);
        Ok(id)
    }

    /// Releases the memory of every datum whose mesh data changed. Element tables made for
    /// replaced vertices are removed from the mesh, which retires what was made for them in
    /// turn.
    fn retire_stale(&mut self, cause: &str) {
        loop {
            for datum in self.data.iter_mut().flatten() {
                if !self.mesh_log.is_current(datum) {
                    datum.release();
                }
            }
            let orphans: Vec<MeshKind> = self
                .mesh
                .iter()
                .filter(|&(_, id)| {
                    self.data[id.index as usize]
                        .as_ref()
                        .is_none_or(|d| !self.mesh_log.is_current(d))
                })
                .map(|(&kind, _)| kind)
                .collect();
            if orphans.is_empty() {
                break;
            }
            for kind in orphans {
                self.mesh.remove(&kind);
                self.links.invalidate(kind);
                self.mesh_log
                    .remove(kind, &format!("{cause} of the vertices"));
            }
        }
        self.touch();
    }

    // ----- solutions -----------------------------------------------------------------------

    /// Creates a solution field of `items` values of `T` per entity of `kind`, named `name` in
    /// kernels (`GmlNewSolutionData`). The mesh data of `kind` must exist: it gives the count.
    pub fn new_solution<T: Value>(
        &mut self,
        kind: MeshKind,
        items: usize,
        name: &str,
    ) -> Result<Solution<T>> {
        let lines = self
            .count(kind)
            .ok_or_else(|| GmlError::SolutionBeforeMesh {
                name: name.to_string(),
                kind,
            })?;
        self.check_name(kind, name)?;
        if T::TYPE.scalar == Scalar::F64 && !self.has_fp64() {
            return Err(GmlError::NoFp64(format!("solution `{name}`")));
        }
        check_index_range(|| format!("solution `{name}`"), lines, items.max(1))?;
        let role = Role::Solution {
            kind,
            items: items.max(1),
            value: T::TYPE,
            name: name.to_string(),
        };
        let id = self.insert(Datum::new(role, lines));
        Ok(Solution {
            id,
            _type: PhantomData,
        })
    }

    /// The device buffer of `field`, uploaded if the host changed it, for other modules' kernels
    /// to bind (interop, the sort, the snow): no copy. The handle becomes stale, and binding it
    /// an error, when the field is freed or the mesh data of its kind is replaced. Kernels
    /// launched through gml see what the other kernels wrote; the host mirror does not (call
    /// [`mark_device_newer`](Self::mark_device_newer) after writing through the handle).
    pub fn field_buffer<T: Value>(&mut self, field: Solution<T>) -> Result<FieldBuffer<T>> {
        field::field_buffer(self, field)
    }

    /// Records that code outside gml wrote `field`'s device buffer, so that reading it
    /// downloads it again.
    pub fn mark_device_newer<T: Value>(&mut self, field: Solution<T>) -> Result<()> {
        self.datum_mut_quiet(field.id)?.device_newer = true;
        Ok(())
    }

    /// Sets one line: exactly `items` values.
    pub fn set_line<T: Value>(
        &mut self,
        field: Solution<T>,
        line: usize,
        values: &[T],
    ) -> Result<()> {
        let items = self.datum(field.id)?.role.items();
        if values.len() != items {
            return Err(GmlError::WrongLength {
                what: self.datum(field.id)?.role.name().to_string(),
                expected: items,
                got: values.len(),
            });
        }
        self.set_block(field, line, values)
    }

    /// Sets lines from `first` on: `values.len()` must be a multiple of `items`.
    pub fn set_block<T: Value>(
        &mut self,
        field: Solution<T>,
        first: usize,
        values: &[T],
    ) -> Result<()> {
        let datum = self.datum_mut(field.id)?;
        let items = datum.role.items();
        let name = datum.role.name().to_string();
        if !values.len().is_multiple_of(items) {
            return Err(GmlError::WrongLength {
                what: name,
                expected: values.len().div_ceil(items) * items,
                got: values.len(),
            });
        }
        let end = line_range(&name, first, values.len() / items, datum.lines)?;
        datum.download()?;
        let line = datum.role.line_bytes();
        datum.host[first * line..end * line].copy_from_slice(bytemuck::cast_slice(values));
        datum.host_dirty = true;
        Ok(())
    }

    /// Sets scattered lines: line `lines[i]` to `values[i * items..(i + 1) * items]`, for
    /// data whose changed lines are few and spread out (one call instead of one
    /// [`set_block`](Self::set_block) per run of lines). Like `set_block` it writes the host
    /// copy, and the whole field goes to the device at its next use. `values.len()` must be
    /// `lines.len() × items` and every line in range; on an error nothing is written.
    pub fn set_lines<T: Value>(
        &mut self,
        field: Solution<T>,
        lines: &[u32],
        values: &[T],
    ) -> Result<()> {
        let datum = self.datum_mut(field.id)?;
        let items = datum.role.items();
        if values.len() != lines.len() * items {
            return Err(GmlError::WrongLength {
                what: datum.role.name().to_string(),
                expected: lines.len() * items,
                got: values.len(),
            });
        }
        if let Some(&last) = lines.iter().max() {
            line_range(datum.role.name(), last as usize, 1, datum.lines)?;
        }
        datum.download()?;
        let line = datum.role.line_bytes();
        let bytes: &[u8] = bytemuck::cast_slice(values);
        for (&l, value) in lines.iter().zip(bytes.chunks_exact(line)) {
            let at = l as usize * line;
            datum.host[at..at + line].copy_from_slice(value);
        }
        datum.host_dirty = true;
        Ok(())
    }

    /// Lines `first..first + count` (`items` values each), from the device if kernels wrote it.
    pub fn block<T: Value>(
        &mut self,
        field: Solution<T>,
        first: usize,
        count: usize,
    ) -> Result<Vec<T>> {
        let datum = self.datum_mut_quiet(field.id)?;
        let end = line_range(datum.role.name(), first, count, datum.lines)?;
        datum.download()?;
        let line = datum.role.line_bytes();
        Ok(bytemuck::pod_collect_to_vec(
            &datum.host[first * line..end * line],
        ))
    }

    /// One line (`items` values).
    pub fn line<T: Value>(&mut self, field: Solution<T>, line: usize) -> Result<Vec<T>> {
        self.block(field, line, 1)
    }

    /// Every line.
    pub fn read_all<T: Value>(&mut self, field: Solution<T>) -> Result<Vec<T>> {
        let lines = self.datum(field.id)?.lines;
        self.block(field, 0, lines)
    }

    /// Creates field `name` from a solution file's block (`GmlImportSolution`, which GMlib
    /// lacks): on the block's kind, one line of `block.width(dimension)` values per entity, the
    /// fields of the line one after another, as `f32` or `f64` (`T`). The mesh data of that kind
    /// must exist and have as many entities as the block has lines.
    pub fn import_solution<T: SolutionReal>(
        &mut self,
        block: &meshio::SolutionBlock,
        dimension: u8,
        name: &str,
    ) -> Result<Solution<T>> {
        let kind = match block.support {
            meshio::Support::Vertices => MeshKind::Vertices,
            meshio::Support::Elements(kind) => MeshKind::from_element(kind),
        };
        let width = block.width(dimension).max(1);
        if let Some(lines) = self.count(kind)
            && block.values.len() != lines * width
        {
            return Err(GmlError::WrongLength {
                what: format!("{name} (from {})", block.support.keyword()),
                expected: lines * width,
                got: block.values.len(),
            });
        }
        let field = self.new_solution::<T>(kind, width, name)?;
        let values: Vec<T> = block.values.iter().map(|&x| T::from_f64(x)).collect();
        self.set_block(field, 0, &values)?;
        Ok(field)
    }

    /// A solution file's block from `field` (`GmlExportSolution` writes one per field): its
    /// kind's `SolAt…` keyword, `types` describing each line (their widths in `dimension` must
    /// add up to the field's values per line; GMlib writes one scalar per value), the values
    /// read back from the device if kernels wrote them.
    pub fn export_solution<T: SolutionReal>(
        &mut self,
        field: Solution<T>,
        types: &[meshio::SolType],
        dimension: u8,
    ) -> Result<meshio::SolutionBlock> {
        let role = &self.datum(field.id)?.role;
        let (kind, items) = (role.kind(), role.items());
        let width: usize = types.iter().map(|t| t.width(dimension)).sum();
        if width != items {
            return Err(GmlError::WrongLength {
                what: format!("{} (types of its solution block)", role.name()),
                expected: items,
                got: width,
            });
        }
        let support = match kind.element() {
            Some(element) => meshio::Support::Elements(element),
            None => meshio::Support::Vertices,
        };
        let values = self.read_all(field)?.into_iter().map(Into::into).collect();
        Ok(meshio::SolutionBlock {
            support,
            types: types.to_vec(),
            values,
        })
    }

    /// Frees a datum on the host and the device (`GmlFreeData`), stale or not. Its handle is
    /// refused afterwards. Freeing mesh data removes the kind from the mesh: what was made for
    /// it becomes stale (and, for the vertices, every element table with it).
    pub fn free(&mut self, data: impl Data) -> Result<()> {
        let id = data.id();
        let kind = self.datum_any(id)?.role.kind();
        self.data[id.index as usize] = None;
        if self.mesh.get(&kind) == Some(&id) {
            self.mesh.remove(&kind);
            self.links.invalidate(kind);
            self.mesh_log.remove(kind, "free");
            self.retire_stale("free");
        }
        self.touch();
        Ok(())
    }

    // ----- links ---------------------------------------------------------------------------

    /// Creates a user link: `width` entities of `to` for each entity of `from`, all -1 ("none")
    /// until set (`GmlNewLinkData`).
    pub fn new_link(
        &mut self,
        from: MeshKind,
        to: MeshKind,
        width: usize,
        name: &str,
    ) -> Result<Link> {
        let lines = self.count(from).ok_or(GmlError::MissingMesh(from))?;
        self.count(to).ok_or(GmlError::MissingMesh(to))?;
        self.check_name(from, name)?;
        check_index_range(|| format!("link `{name}`"), lines, width.max(1))?;
        let role = Role::Link {
            from,
            to,
            width: width.max(1),
            name: name.to_string(),
        };
        let mut datum = Datum::new(role, lines);
        datum.host = bytemuck::cast_slice(&vec![-1i32; lines * width.max(1)]).to_vec();
        let id = self.insert(datum);
        Ok(Link { id })
    }

    /// Sets line `line` of a user link (`GmlSetDataLine`): `width` entity numbers of the
    /// destination kind, -1 for none. Every entry is checked against the destination's count.
    pub fn set_link_line(&mut self, link: Link, line: usize, targets: &[i32]) -> Result<()> {
        let (_, _, width, name) = self.link_role(link)?;
        if targets.len() != width {
            return Err(GmlError::WrongLength {
                what: name,
                expected: width,
                got: targets.len(),
            });
        }
        self.set_link_block(link, line, targets)
    }

    /// Sets lines `first..` of a user link in one go (`GmlSetDataBlock`): `width` entity
    /// numbers of the destination kind per line, -1 for none; `targets.len()` must be a
    /// multiple of the width. Every entry is checked against the destination's count.
    pub fn set_link_block(&mut self, link: Link, first: usize, targets: &[i32]) -> Result<()> {
        let (_, to, width, name) = self.link_role(link)?;
        if !targets.len().is_multiple_of(width) {
            return Err(GmlError::WrongLength {
                what: name,
                expected: targets.len().div_ceil(width) * width,
                got: targets.len(),
            });
        }
        let count = self.count(to).unwrap_or(0);
        if let Some(at) = targets.iter().position(|&t| t < -1 || t >= count as i32) {
            return Err(GmlError::NodeOutOfRange {
                kind: to,
                element: first.saturating_add(at / width),
                index: i64::from(targets[at]),
                vertices: count,
            });
        }
        let datum = self.datum_mut(link.id)?;
        let end = line_range(&name, first, targets.len() / width, datum.lines)?;
        let bytes = width * 4;
        datum.host[first * bytes..end * bytes].copy_from_slice(bytemuck::cast_slice(targets));
        datum.host_dirty = true;
        Ok(())
    }

    /// Lines `first..first + count` of a user link, `width` entries each, -1 for none
    /// (`GmlGetDataBlock`).
    pub fn link_block(&mut self, link: Link, first: usize, count: usize) -> Result<Vec<i32>> {
        let (_, _, width, name) = self.link_role(link)?;
        let datum = self.datum(link.id)?;
        let end = line_range(&name, first, count, datum.lines)?;
        let bytes = width * 4;
        Ok(bytemuck::pod_collect_to_vec(
            &datum.host[first * bytes..end * bytes],
        ))
    }

    /// One line of a user link (`GmlGetDataLine`).
    pub fn link_line(&mut self, link: Link, line: usize) -> Result<Vec<i32>> {
        self.link_block(link, line, 1)
    }

    /// Source kind, destination kind and width of a user link.
    pub fn link_shape(&self, link: Link) -> Result<(MeshKind, MeshKind, usize)> {
        let (from, to, width, _) = self.link_role(link)?;
        Ok((from, to, width))
    }

    fn link_role(&self, link: Link) -> Result<(MeshKind, MeshKind, usize, String)> {
        match &self.datum(link.id)?.role {
            Role::Link {
                from,
                to,
                width,
                name,
            } => Ok((*from, *to, *width, name.clone())),
            _ => Err(GmlError::UnknownData(link.id.index as usize)),
        }
    }

    /// Builds the neighbour link of `kind`: for each entity, the entity of the same kind across
    /// each of its sides, -1 where there is none (`GmlSetNeighbours`). Sides are an edge's two
    /// vertices, a surface element's edges, a solid's faces, triangles first
    /// ([`MeshKind::sides`]): entry `i` is the neighbour across side `i` in GMlib's local
    /// numbering (a prism's five faces, a pyramid's four triangles then its base). A side
    /// shared with an entity of another kind is -1 here: read data across it through the
    /// default link to that kind (a loop over pyramids reading tetrahedron data gets
    /// `PyrTet[4]`, the tetrahedron across each triangle). Vertices have no neighbours; a side
    /// shared by more than two entities is a [`GmlError::NonManifold`].
    pub fn set_neighbours(&mut self, kind: MeshKind) -> Result<Link> {
        if kind.sides().is_empty() {
            return Err(GmlError::NoNeighbours(kind));
        }
        let nodes = self.datum(self.mesh(kind)?)?.nodes();
        let ngb = topology::side_neighbours(kind, &nodes)
            .map_err(|nodes| GmlError::NonManifold { kind, nodes })?;
        let width = kind.sides().len();
        self.retire_neighbours(
            kind,
            &format!(
                "a later set_neighbours({kind}) built a new `Ngb` link: use the handle it returned"
            ),
        );
        let link = self.new_link(kind, kind, width, "Ngb")?;
        let datum = self.datum_mut(link.id)?;
        datum.host = bytemuck::cast_slice(&ngb).to_vec();
        datum.neighbours_of = Some(kind);
        Ok(link)
    }

    /// How the link from `from` to `to` is stored: one table per degree class, each with its
    /// width and number of rows (`GmlGetLinkInfo`, without GMlib's cap). Builds it if needed.
    pub fn link_info(&mut self, from: MeshKind, to: MeshKind) -> Result<LinkInfo> {
        if to == MeshKind::Vertices && from != MeshKind::Vertices {
            let rows = self.count(from).ok_or(GmlError::MissingMesh(from))?;
            return Ok(LinkInfo {
                from,
                to,
                tables: vec![LinkTable {
                    width: from.nodes(),
                    rows,
                }],
                max_degree: from.nodes(),
            });
        }
        self.build_link(from, to)?;
        Ok(self.links.info(from, to))
    }

    /// Replaces the edges by every edge of every element, the existing ones first with their
    /// references, new ones with reference 0 (`GmlExtractEdges`). Returns the edge count.
    pub fn extract_edges(&mut self) -> Result<usize> {
        self.extract(MeshKind::Edges)
    }

    /// Replaces triangles and quadrilaterals by every face of every solid, existing ones first
    /// (`GmlExtractFaces`). Returns the numbers of triangles and quadrilaterals.
    pub fn extract_faces(&mut self) -> Result<(usize, usize)> {
        Ok((
            self.extract(MeshKind::Triangles)?,
            self.extract(MeshKind::Quadrilaterals)?,
        ))
    }

    fn extract(&mut self, sub: MeshKind) -> Result<usize> {
        let (existing, refs) = match self.mesh.get(&sub) {
            Some(&id) => {
                let d = self.datum(id)?;
                (d.nodes(), d.refs.clone())
            }
            None => (Vec::new(), Vec::new()),
        };
        let mut sources = Vec::new();
        for kind in MeshKind::ALL {
            if kind.dimension() > sub.dimension()
                && !kind.sub_entities(sub).is_empty()
                && let Some(&id) = self.mesh.get(&kind)
            {
                sources.push((kind, self.datum(id)?.nodes()));
            }
        }
        let borrowed: Vec<(MeshKind, &[i32])> =
            sources.iter().map(|(k, n)| (*k, n.as_slice())).collect();
        let (nodes, refs) = topology::extract(sub, (&existing, &refs), &borrowed);
        let count = refs.len();
        let cause = if sub == MeshKind::Edges {
            "extract_edges"
        } else {
            "extract_faces"
        };
        self.replace_mesh(sub, count, cause)?;
        let nodes: Vec<u32> = nodes.iter().map(|&v| v as u32).collect();
        self.set_elements(sub, 0, &nodes, Some(&refs))?;
        Ok(count)
    }

    // ----- kernels, reductions, parameters, counters ----------------------------------------

    /// Generates and compiles a kernel (`GmlCompileKernel`), building the links it needs.
    pub fn compile(&mut self, spec: KernelSpec) -> Result<KernelId> {
        kernel::compile(self, spec)
    }

    /// Runs a kernel over every entity of its loop kind, once per link table
    /// (`GmlLaunchKernel`), and waits for it. Returns the device time of this launch (zero on
    /// a context without profiling).
    pub fn launch(&mut self, kernel: KernelId) -> Result<Duration> {
        kernel::launch(self, kernel)
    }

    /// Enqueues a kernel like [`launch`](Self::launch) but does not wait: its launches (one
    /// per link table) go into `timeline` under its current stage, to be timed and checked
    /// once at the end of a chain (a frame, a solver's iterations). Arguments that did not
    /// change since the kernel's last launch are not set again, and nothing is prepared again
    /// when no data or link changed on the host.
    pub fn enqueue(&mut self, kernel: KernelId, timeline: &mut cl::Timeline) -> Result<()> {
        kernel::enqueue(self, kernel, timeline)
    }

    /// Does now what the next [`enqueue`](Self::enqueue) of `kernel` would do before its
    /// launches (links built, data changed on the host uploaded, sum buffers made), so that
    /// a kernel first run on a latency-sensitive path (a ground refresh) does not pay for it
    /// there. No kernel runs; data may be uploaded and programs rebuilt (a changed mesh).
    pub fn prepare(&mut self, kernel: KernelId) -> Result<()> {
        kernel::prepare(self, kernel)
    }

    /// How many times the programs of `kernel` were built: 1 at compilation, plus one each
    /// time the tables of its uplink were rebuilt (the mesh changed) before a launch.
    pub fn kernel_builds(&self, kernel: KernelId) -> Result<usize> {
        Ok(self.kernel(kernel)?.builds)
    }

    /// The generated source of a kernel (one per link table), as compiled.
    pub fn kernel_sources(&self, kernel: KernelId) -> Result<Vec<String>> {
        Ok(self.kernel(kernel)?.sources())
    }

    /// Reduces a scalar `f32`, `f64` or `i32` solution on the device (`GmlReduceVector`) and
    /// waits for the result: min, max, sum, L0 (the count of non-zeros), L1, L2 (the square
    /// root of the sum of squares) or L∞. Every value counts; min, max and L∞ are NaN when a
    /// value is NaN. Integer sums are exact (64-bit); float sums accumulate in double where the
    /// device has fp64, in compensated float where it has not.
    pub fn reduce<T: ReducibleScalar>(&mut self, field: Solution<T>, op: Reduction) -> Result<f64> {
        let values = reduce::reduce(self, field.id, op, VectorMode::PerComponent)?;
        values.first().copied().ok_or(GmlError::NoResultBuffer)
    }

    /// Reduces a solution of scalars or vectors (`[f32; 4]`, `[i32; 16]`, …) on the device and
    /// waits: one result per component ([`VectorMode::PerComponent`]), or one result over the
    /// Euclidean norm of each vector ([`VectorMode::Norm`]). A scalar field gives one result
    /// either way (its norm is the absolute value).
    pub fn reduce_vector<T: Reducible>(
        &mut self,
        field: Solution<T>,
        op: Reduction,
        mode: VectorMode,
    ) -> Result<Vec<f64>> {
        reduce::reduce(self, field.id, op, mode)
    }

    /// Sets how the reductions that follow run: float accumulators where the device has
    /// fp64, the first pass's memory layout. The defaults suit the device; other settings are
    /// for tests and benchmarks.
    pub fn set_reduce_options(&mut self, options: ReduceOptions) {
        self.reducer.set_options(options);
    }

    /// Enqueues a reduction of a scalar field whose result stays on the device, at byte
    /// `offset` of the parameter struct, where the kernels enqueued after it read it
    /// (`GmlPar->alpha`): a solver's scalars never visit the host. The result is a `float` for
    /// `f32` and `i32` fields, a `double` for `f64` fields (`offset` a multiple of its size).
    /// Its launch goes into `timeline` (two with
    /// [`ReduceOptions::two_passes`]). For a vector field, see
    /// [`reduce_vector_into_parameters`](Self::reduce_vector_into_parameters).
    pub fn reduce_into_parameters<T: ReducibleScalar, P: bytemuck::Pod>(
        &mut self,
        field: Solution<T>,
        op: Reduction,
        parameters: &Parameters<P>,
        offset: usize,
        timeline: &mut cl::Timeline,
    ) -> Result<()> {
        let mode = VectorMode::PerComponent;
        reduce::reduce_into_parameters(self, field.id, op, mode, parameters, offset, timeline)
    }

    /// As [`reduce_into_parameters`](Self::reduce_into_parameters) for a scalar or vector
    /// field: per component, its `width` results from byte `offset` on; over norms, the one
    /// result at `offset` (a solver's largest speed, read back with its other scalars).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_vector_into_parameters<T: Reducible, P: bytemuck::Pod>(
        &mut self,
        field: Solution<T>,
        op: Reduction,
        mode: VectorMode,
        parameters: &Parameters<P>,
        offset: usize,
        timeline: &mut cl::Timeline,
    ) -> Result<()> {
        reduce::reduce_into_parameters(self, field.id, op, mode, parameters, offset, timeline)
    }

    /// Enqueues a reduction of a scalar field whose result goes to `output[index]` on the
    /// device, as a `float` or (on fp64 devices) a `double`. Its launch goes into
    /// `timeline`.
    pub fn reduce_into<T: ReducibleScalar, R: ReduceOutput>(
        &mut self,
        field: Solution<T>,
        op: Reduction,
        output: &cl::DeviceBuffer<R>,
        index: usize,
        timeline: &mut cl::Timeline,
    ) -> Result<()> {
        let mode = VectorMode::PerComponent;
        reduce::reduce_into_buffer(self, field.id, op, mode, output, index, timeline)
    }

    /// Enqueues a reduction of a scalar or vector field whose results stay on the device:
    /// per component, the `width` results go to `output[index..index + width]`; over norms,
    /// the one result to `output[index]`. Its launch goes into `timeline` (two with
    /// [`ReduceOptions::two_passes`]).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_vector_into<T: Reducible, R: ReduceOutput>(
        &mut self,
        field: Solution<T>,
        op: Reduction,
        mode: VectorMode,
        output: &cl::DeviceBuffer<R>,
        index: usize,
        timeline: &mut cl::Timeline,
    ) -> Result<()> {
        reduce::reduce_into_buffer(self, field.id, op, mode, output, index, timeline)
    }

    /// Declares the parameter struct shared by every kernel compiled from now on: `P` on the
    /// host, `opencl` (which must define `typedef struct {…} GmlParSct;`) on the device. Their
    /// sizes are compared on the device (`GmlNewParameters`).
    pub fn new_parameters<P: bytemuck::Pod>(&mut self, opencl: &str) -> Result<Parameters<P>> {
        params::declare(self, opencl)
    }

    /// Copies `value` to the device's parameter struct (`GmlUploadParameters`).
    pub fn upload_parameters<P: bytemuck::Pod>(
        &mut self,
        parameters: &Parameters<P>,
        value: &P,
    ) -> Result<()> {
        params::upload(self, parameters, value)
    }

    /// Starts reading the device's parameter struct back without waiting: the queue goes on,
    /// and the returned handle gives the struct when the device got there.
    pub fn download_parameters_async<P: bytemuck::Pod>(
        &mut self,
        parameters: &Parameters<P>,
    ) -> Result<PendingParameters<P>> {
        params::download_async(self, parameters)
    }

    /// Reads the device's parameter struct back (`GmlDownloadParameters`).
    pub fn download_parameters<P: bytemuck::Pod>(
        &mut self,
        parameters: &Parameters<P>,
    ) -> Result<P> {
        params::download(self, parameters)
    }

    /// Device time and launch count of every blocking [`launch`](Self::launch) (one stage per
    /// kernel, by its name) and [`reduce`](Self::reduce) (`reduce.min`, `reduce.l2`, …)
    /// (`GmlGetKernelRunTime`, `GmlGetReduceRunTime`). Launches that did not wait are timed by
    /// the [`Timeline`](cl::Timeline) they were enqueued into.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Bytes moved between host and device by this instance's context
    /// (`GmlGetMemoryTransfer`).
    pub fn transfers(&self) -> cl::TransferCounters {
        self.context.transfers()
    }

    /// Device memory held by this instance's context, in bytes (`GmlGetMemoryUsage`).
    pub fn memory_in_use(&self) -> u64 {
        self.context.allocated_bytes()
    }

    /// Total device time of every blocking launch of `kernel`, all link tables included.
    pub fn kernel_time(&self, kernel: KernelId) -> Result<Duration> {
        let name = &self.kernel(kernel)?.name;
        Ok(self.counters.get(name).map_or(Duration::ZERO, |s| s.busy))
    }

    // ----- internals -----------------------------------------------------------------------

    fn insert(&mut self, mut datum: Datum) -> DataId {
        self.generation += 1;
        let mut kinds = match &datum.role {
            Role::Mesh(MeshKind::Vertices) => vec![MeshKind::Vertices],
            Role::Mesh(kind) => vec![*kind, MeshKind::Vertices],
            Role::Solution { kind, .. } => vec![*kind],
            Role::Link { from, to, .. } => vec![*from, *to],
        };
        kinds.dedup();
        datum.made_for = kinds
            .into_iter()
            .filter_map(|k| self.mesh_log.stamp(k))
            .collect();
        self.data.push(Some(datum));
        DataId {
            instance: self.instance,
            index: (self.data.len() - 1) as u32,
        }
    }

    /// The datum, if it exists and the mesh data it was made for are current.
    pub(crate) fn datum(&self, id: DataId) -> Result<&Datum> {
        let datum = self.datum_any(id)?;
        self.mesh_log.check(datum)?;
        Ok(datum)
    }

    /// The datum, stale or not.
    fn datum_any(&self, id: DataId) -> Result<&Datum> {
        if id.instance != self.instance {
            return Err(GmlError::UnknownData(id.index as usize));
        }
        self.data
            .get(id.index as usize)
            .and_then(Option::as_ref)
            .ok_or(GmlError::UnknownData(id.index as usize))
    }

    /// The datum, for a change on the host side: kernels will prepare again before their
    /// next launch.
    pub(crate) fn datum_mut(&mut self, id: DataId) -> Result<&mut Datum> {
        self.generation += 1;
        self.datum_mut_quiet(id)
    }

    /// The datum, for a change that kernels need not know about (device-side flags).
    pub(crate) fn datum_mut_quiet(&mut self, id: DataId) -> Result<&mut Datum> {
        self.datum(id)?;
        self.data
            .get_mut(id.index as usize)
            .and_then(Option::as_mut)
            .ok_or(GmlError::UnknownData(id.index as usize))
    }

    fn kernel(&self, id: KernelId) -> Result<&kernel::Compiled> {
        if id.instance != self.instance {
            return Err(GmlError::UnknownKernel(id.index));
        }
        self.kernels
            .get(id.index)
            .ok_or(GmlError::UnknownKernel(id.index))
    }

    /// Names become parts of generated variables (`<Loop><Name>`), so they must be
    /// identifiers, and unique among the data of one kind.
    fn check_name(&self, kind: MeshKind, name: &str) -> Result<()> {
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(GmlError::BadName(name.to_string()));
        }
        if self
            .data
            .iter()
            .flatten()
            .any(|d| d.role.kind() == kind && d.role.name() == name && self.mesh_log.is_current(d))
        {
            return Err(GmlError::DuplicateName(name.to_string()));
        }
        Ok(())
    }

    pub(crate) fn build_link(&mut self, from: MeshKind, to: MeshKind) -> Result<()> {
        links::build(self, from, to)
    }

    /// Records that the mesh or its links changed.
    pub(crate) fn touch(&mut self) {
        self.generation += 1;
    }
}

/// One past the last line of `first..first + count`, checked against the data's `lines`.
fn line_range(what: &str, first: usize, count: usize, lines: usize) -> Result<usize> {
    match first.checked_add(count) {
        Some(end) if end <= lines => Ok(end),
        end => Err(GmlError::LineOutOfRange {
            what: what.to_string(),
            first,
            end: end.unwrap_or(usize::MAX),
            lines,
        }),
    }
}

/// Seconds since the first call in this process, from a monotonic clock (`GmlGetWallClock`).
pub fn wall_clock() -> f64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// `to.copy_from_slice(from)` in blocks on the cores: a whole mesh is hundreds of MB of fresh
/// pages.
///
/// # Panics
/// If the lengths differ, as `copy_from_slice` does.
fn copy_in_parallel<T: Copy + Send + Sync>(to: &mut [T], from: &[T]) {
    const BLOCK_BYTES: usize = 1 << 20;
    assert_eq!(
        to.len(),
        from.len(),
        "copy between slices of different lengths"
    );
    let block = (BLOCK_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    to.par_chunks_mut(block)
        .zip(from.par_chunks(block))
        .for_each(|(to, from)| to.copy_from_slice(from));
}

/// Refuses a table of `lines × per_line` entries that generated kernels, which index with
/// 32-bit `int`s, could not address.
pub(crate) fn check_index_range(
    what: impl FnOnce() -> String,
    lines: usize,
    per_line: usize,
) -> Result<()> {
    let entries = lines as u128 * per_line as u128;
    if entries > i32::MAX as u128 {
        return Err(GmlError::IndexRange {
            what: what(),
            entries,
            limit: i32::MAX,
        });
    }
    Ok(())
}

/// A real type solution file values are stored in on the device: `f32` or `f64`
/// ([`Gml::import_solution`], [`Gml::export_solution`]).
pub trait SolutionReal: Value + Into<f64> {
    /// `x` in this type (rounded to nearest for `f32`).
    fn from_f64(x: f64) -> Self;
}

impl SolutionReal for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
}

impl SolutionReal for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
}
