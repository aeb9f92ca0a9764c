//! `gml`: a Rust port of GMlib v3, the OpenCL library for computing on unstructured meshes.
//!
//! A [`Gml`] instance holds a mesh and solution fields on one OpenCL device. The user writes
//! only the body of a loop over one kind of entity; gml declares and loads the variables the
//! body reads, with GMlib's context-based names (`VerCrd`, `TriCrd[3]`, `VerTriBar[i]`,
//! `VerTriDeg`, …), builds the topological links it needs (downlinks, balls and shells split
//! into degree classes, neighbours), launches the kernel once per link table, and stores back
//! only the data opened for writing.
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

mod codegen;
mod data;
mod error;
mod field;
mod kernel;
mod kind;
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

pub use data::{Data, DataId, Link, Solution};
pub use error::{GmlError, Result};
pub use field::FieldBuffer;
pub use kernel::{Access, KernelId, KernelSpec, Mode};
pub use kind::MeshKind;
pub use links::{LinkInfo, LinkTable};
pub use params::{Parameters, PendingParameters};
pub use reduce::Reduction;
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
    links: links::Cache,
    toolkit: String,
    params: Option<params::Block>,
    kernels: Vec<kernel::Compiled>,
    reducer: reduce::Reducer,
    debug: bool,
    options: String,
    /// Bumped by every change on the host side (data, links, mesh), so kernels know when to
    /// prepare again.
    generation: u64,
    counters: Counters,
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
            links: links::Cache::default(),
            toolkit: String::new(),
            params: None,
            kernels: Vec::new(),
            reducer: reduce::Reducer::default(),
            debug: false,
            options: String::new(),
            generation: 0,
            counters: Counters::default(),
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
    pub fn include_toolkit(&mut self, source: &str) {
        self.toolkit.push_str(source);
        self.toolkit.push('\n');
    }

    // ----- mesh data -----------------------------------------------------------------------

    /// Creates (or replaces) the mesh data of `kind` with `count` entities, all zero.
    pub fn new_mesh(&mut self, kind: MeshKind, count: usize) -> Result<DataId> {
        if let Some(old) = self.mesh.remove(&kind) {
            self.data[old.index as usize] = None;
        }
        self.links.invalidate(kind);
        let id = self.insert(Datum::new(Role::Mesh(kind), count));
        self.mesh.insert(kind, id);
        Ok(id)
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

    /// Sets vertices `first..first + coordinates.len()`: coordinates (stored as `float4` with
    /// w = 0) and references.
    pub fn set_vertices(
        &mut self,
        first: usize,
        coordinates: &[[f64; 3]],
        refs: &[i32],
    ) -> Result<()> {
        let lines: Vec<[f32; 4]> = coordinates
            .par_iter()
            .map(|p| [p[0] as f32, p[1] as f32, p[2] as f32, 0.0])
            .collect();
        self.set_mesh_lines(
            MeshKind::Vertices,
            first,
            bytemuck::cast_slice(&lines),
            refs,
        )
    }

    /// Sets elements of `kind` from `first` on: `nodes` holds `kind.nodes()` 0-based vertex
    /// indices per element, `refs` one reference per element. Indices are checked against the
    /// vertex count.
    pub fn set_elements(
        &mut self,
        kind: MeshKind,
        first: usize,
        nodes: &[u32],
        refs: &[i32],
    ) -> Result<()> {
        let n = kind.nodes();
        if kind == MeshKind::Vertices || nodes.len() != refs.len() * n {
            return Err(GmlError::WrongLength {
                what: format!("{kind} nodes"),
                expected: refs.len() * n,
                got: nodes.len(),
            });
        }
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
                    element: first + at / n,
                    index: i64::from(nodes[at]),
                    vertices,
                });
            }
        }
        let mut lines = vec![0i32; refs.len() * width];
        lines
            .par_chunks_mut(width)
            .zip(nodes.par_chunks_exact(n))
            .for_each(|(line, element)| {
                for (to, &v) in line.iter_mut().zip(element) {
                    *to = v as i32;
                }
                line[n..].fill(element[0] as i32);
            });
        self.set_mesh_lines(kind, first, bytemuck::cast_slice(&lines), refs)
    }

    fn set_mesh_lines(
        &mut self,
        kind: MeshKind,
        first: usize,
        bytes: &[u8],
        refs: &[i32],
    ) -> Result<()> {
        let id = self.mesh(kind)?;
        let datum = self.datum_mut(id)?;
        let end = first + refs.len();
        if end > datum.lines {
            return Err(GmlError::LineOutOfRange {
                what: kind.to_string(),
                first,
                end,
                lines: datum.lines,
            });
        }
        datum.download()?;
        let line = datum.role.line_bytes();
        copy_in_parallel(&mut datum.host[first * line..end * line], bytes);
        copy_in_parallel(&mut datum.refs[first..end], refs);
        datum.host_dirty = true;
        self.links.invalidate(kind);
        Ok(())
    }

    /// Vertex coordinates and references, from the device if kernels changed them.
    pub fn vertices(&mut self) -> Result<(Vec<[f32; 3]>, Vec<i32>)> {
        let id = self.mesh(MeshKind::Vertices)?;
        let datum = self.datum_mut_quiet(id)?;
        datum.download()?;
        let lines: Vec<[f32; 4]> = bytemuck::pod_collect_to_vec(&datum.host);
        Ok((
            lines.iter().map(|p| [p[0], p[1], p[2]]).collect(),
            datum.refs.clone(),
        ))
    }

    /// Element nodes (`kind.nodes()` per element, 0-based) and references.
    pub fn elements(&mut self, kind: MeshKind) -> Result<(Vec<u32>, Vec<i32>)> {
        let id = self.mesh(kind)?;
        let datum = self.datum_mut_quiet(id)?;
        datum.download()?;
        Ok((
            datum.nodes().iter().map(|&v| v as u32).collect(),
            datum.refs.clone(),
        ))
    }

    /// Loads every kind present in `mesh` (`GmlImportMesh`).
    pub fn import_mesh(&mut self, mesh: &meshio::Mesh) -> Result<()> {
        self.import_kinds(mesh, &meshio::ElementKind::ALL)
    }

    /// Loads the vertices of `mesh` and only the element kinds listed (those it has), so that
    /// a kernel over one kind does not upload the others.
    pub fn import_kinds(
        &mut self,
        mesh: &meshio::Mesh,
        kinds: &[meshio::ElementKind],
    ) -> Result<()> {
        self.new_mesh(MeshKind::Vertices, mesh.vertices.len())?;
        self.set_vertices(0, &mesh.vertices, &mesh.vertex_refs)?;
        for &element in kinds {
            let elements = mesh.elements(element);
            if elements.is_empty() {
                continue;
            }
            let kind = MeshKind::from_element(element);
            self.new_mesh(kind, elements.len())?;
            self.set_elements(kind, 0, elements.node_slice(), elements.refs())?;
        }
        Ok(())
    }

    /// Reads a `.mesh`/`.meshb` file and loads it.
    pub fn import_file(&mut self, path: &Path) -> Result<()> {
        let file = meshio::read(path)?;
        self.import_mesh(&file.mesh)
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
        let end = first + values.len() / items;
        if end > datum.lines {
            return Err(GmlError::LineOutOfRange {
                what: name,
                first,
                end,
                lines: datum.lines,
            });
        }
        datum.download()?;
        let line = datum.role.line_bytes();
        datum.host[first * line..end * line].copy_from_slice(bytemuck::cast_slice(values));
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
        let end = first + count;
        if end > datum.lines {
            return Err(GmlError::LineOutOfRange {
                what: datum.role.name().to_string(),
                first,
                end,
                lines: datum.lines,
            });
        }
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

    /// Frees a datum on the host and the device (`GmlFreeData`). Its handle is refused
    /// afterwards.
    pub fn free(&mut self, data: impl Data) -> Result<()> {
        let id = data.id();
        let kind = self.datum(id)?.role.kind();
        if self.mesh.get(&kind) == Some(&id) {
            self.mesh.remove(&kind);
            self.links.invalidate(kind);
        }
        self.data[id.index as usize] = None;
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
        self.check_name(from, name)?;
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

    /// Sets line `line` of a user link: `width` entity numbers of the destination kind, -1 for
    /// none. Every entry is checked against the destination's count.
    pub fn set_link_line(&mut self, link: Link, line: usize, targets: &[i32]) -> Result<()> {
        let Role::Link { to, width, .. } = self.datum(link.id)?.role.clone() else {
            return Err(GmlError::UnknownData(link.id.index as usize));
        };
        let count = self.count(to).unwrap_or(0);
        if targets.len() != width {
            return Err(GmlError::WrongLength {
                what: self.datum(link.id)?.role.name().to_string(),
                expected: width,
                got: targets.len(),
            });
        }
        if let Some(&bad) = targets.iter().find(|&&t| t < -1 || t >= count as i32) {
            return Err(GmlError::NodeOutOfRange {
                kind: to,
                element: line,
                index: i64::from(bad),
                vertices: count,
            });
        }
        let datum = self.datum_mut(link.id)?;
        if line >= datum.lines {
            return Err(GmlError::LineOutOfRange {
                what: datum.role.name().to_string(),
                first: line,
                end: line + 1,
                lines: datum.lines,
            });
        }
        let bytes = width * 4;
        datum.host[line * bytes..(line + 1) * bytes].copy_from_slice(bytemuck::cast_slice(targets));
        datum.host_dirty = true;
        Ok(())
    }

    /// Builds the neighbour link of `kind`: for each element, the element across each face
    /// (edge for surface elements), -1 on the boundary (`GmlSetNeighbours`). Entry `i` is the
    /// neighbour across the element's face `i` in GMlib's local numbering.
    pub fn set_neighbours(&mut self, kind: MeshKind) -> Result<Link> {
        let face = topology::neighbour_face(kind).ok_or(GmlError::NoNeighbours(kind))?;
        let nodes = self.datum(self.mesh(kind)?)?.nodes();
        let ngb = topology::neighbours(kind, face, &nodes)
            .map_err(|nodes| GmlError::NonManifold { kind, nodes })?;
        let width = kind.sub_entities(face).len();
        let stale: Vec<DataId> = self
            .data
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.as_ref().map(|d| (i, d)))
            .filter(|(_, d)| matches!(&d.role, Role::Link { from, name, .. } if *from == kind && name == "Ngb"))
            .map(|(i, _)| DataId {
                instance: self.instance,
                index: i as u32,
            })
            .collect();
        for id in stale {
            self.data[id.index as usize] = None;
        }
        self.touch();
        let link = self.new_link(kind, kind, width, "Ngb")?;
        let datum = self.datum_mut(link.id)?;
        datum.host = bytemuck::cast_slice(&ngb).to_vec();
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
        self.new_mesh(sub, count)?;
        let nodes: Vec<u32> = nodes.iter().map(|&v| v as u32).collect();
        self.set_elements(sub, 0, &nodes, &refs)?;
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

    /// The generated source of a kernel (one per link table), as compiled.
    pub fn kernel_sources(&self, kernel: KernelId) -> Result<Vec<String>> {
        Ok(self.kernel(kernel)?.sources())
    }

    /// Reduces a scalar `f32` solution on the device (`GmlReduceVector`): min, max, sum, L1,
    /// L2 (the square root of the sum of squares) or L∞, and waits for the result.
    pub fn reduce(&mut self, field: Solution<f32>, op: Reduction) -> Result<f64> {
        reduce::reduce(self, field.id, op)
    }

    /// Enqueues a reduction whose result stays on the device, as the `f32` at byte `offset`
    /// of the parameter struct, where the kernels enqueued after it read it (`GmlPar->alpha`):
    /// a solver's scalars never visit the host. Its two passes go into `timeline`.
    pub fn reduce_into_parameters<P: bytemuck::Pod>(
        &mut self,
        field: Solution<f32>,
        op: Reduction,
        parameters: &Parameters<P>,
        offset: usize,
        timeline: &mut cl::Timeline,
    ) -> Result<()> {
        reduce::reduce_into_parameters(self, field.id, op, parameters, offset, timeline)
    }

    /// Enqueues a reduction whose result goes to `output[index]` on the device.
    pub fn reduce_into(
        &mut self,
        field: Solution<f32>,
        op: Reduction,
        output: &cl::DeviceBuffer<f32>,
        index: usize,
        timeline: &mut cl::Timeline,
    ) -> Result<()> {
        reduce::reduce_into_buffer(self, field.id, op, output, index, timeline)
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

    fn insert(&mut self, datum: Datum) -> DataId {
        self.generation += 1;
        self.data.push(Some(datum));
        DataId {
            instance: self.instance,
            index: (self.data.len() - 1) as u32,
        }
    }

    pub(crate) fn datum(&self, id: DataId) -> Result<&Datum> {
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
        if id.instance != self.instance {
            return Err(GmlError::UnknownData(id.index as usize));
        }
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
            .any(|d| d.role.kind() == kind && d.role.name() == name)
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
