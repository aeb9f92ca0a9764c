//! GMlib's bandwidth test on a generated tetrahedral mesh: two direct loops, an indirect loop
//! (tetrahedra reading their vertices' coordinates) and a ragged loop (vertices reading their
//! ball of tetrahedra), each timed on the device and reported in bytes per second, counted
//! both as GMlib's `GpuBandwidth` example counts them and as unique bytes.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::copy::copy_bandwidth;
use crate::gml::{Access, Gml, GmlError, KernelSpec, MeshKind};
use crate::meshio::generate::tet_grid;

/// One kernel's measurement.
#[derive(Clone, Debug, Serialize)]
pub struct KernelResult {
    /// Kernel name.
    pub kernel: &'static str,
    /// Mean device time of one launch (all link tables), seconds.
    pub mean_seconds: f64,
    /// Fastest launch, seconds.
    pub best_seconds: f64,
    /// Bytes per launch as GMlib's GpuBandwidth counts them.
    pub gmlib_bytes: u64,
    /// Bytes per launch if every datum were moved exactly once.
    pub unique_bytes: u64,
    /// `gmlib_bytes / mean_seconds`.
    pub gmlib_bytes_per_second: f64,
    /// `unique_bytes / mean_seconds`.
    pub unique_bytes_per_second: f64,
    /// `unique_bytes_per_second` over the device's copy bandwidth.
    pub unique_over_copy: f64,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Device name.
    pub device: String,
    /// Cubes per axis of the generated mesh.
    pub cells: usize,
    /// Vertices of the mesh.
    pub vertices: usize,
    /// Tetrahedra of the mesh.
    pub tetrahedra: usize,
    /// Threads of the rayon pool that import and link building run on.
    pub host_threads: usize,
    /// Host time to generate the mesh, seconds.
    pub generate_seconds: f64,
    /// Host time to load the mesh into gml (checks and copies), seconds.
    pub import_seconds: f64,
    /// Host time to build the vertex → tetrahedra ball and upload it, seconds.
    pub link_seconds: f64,
    /// CPU time (user + system, every thread of the process) of generating the mesh, seconds.
    pub generate_cpu_seconds: f64,
    /// CPU time of the import, seconds.
    pub import_cpu_seconds: f64,
    /// CPU time of building and uploading the ball, seconds.
    pub link_cpu_seconds: f64,
    /// Widths and rows of the ball's tables.
    pub ball_tables: Vec<(usize, usize)>,
    /// Device copy bandwidth, bytes per second.
    pub copy_bytes_per_second: f64,
    /// The four kernels.
    pub kernels: Vec<KernelResult>,
}

/// Runs the four kernels `launches` times each on a `cells`³ cube of 6·cells³ tetrahedra.
pub fn run(gml: &mut Gml, cells: usize, launches: u32) -> Result<Report, GmlError> {
    let started = Stopwatch::start();
    let mesh = tet_grid([cells, cells, cells]);
    let (generate_seconds, generate_cpu_seconds) = started.read();
    let started = Stopwatch::start();
    gml.import_mesh(&mesh)?;
    let (import_seconds, import_cpu_seconds) = started.read();
    let (nv, nt) = (
        mesh.vertices.len(),
        mesh.count(crate::meshio::ElementKind::Tetrahedra),
    );
    drop(mesh);
    let started = Stopwatch::start();
    let ball = gml.link_info(MeshKind::Vertices, MeshKind::Tetrahedra)?;
    let (link_seconds, link_cpu_seconds) = started.read();

    let vertices = gml.mesh(MeshKind::Vertices)?;
    let ver_dat = gml.new_solution::<[f32; 4]>(MeshKind::Vertices, 1, "Dat")?;
    let tet_dat = gml.new_solution::<[f32; 4]>(MeshKind::Tetrahedra, 1, "Dat")?;
    let tets = gml.mesh(MeshKind::Tetrahedra)?;
    let specs = [
        (
            "direct_vertices",
            KernelSpec::new("direct_vertices", MeshKind::Vertices)
                .access(Access::read(vertices))
                .access(Access::write(ver_dat))
                .body("VerDat = VerCrd;"),
            32 * nv as u64,
            32 * nv as u64,
        ),
        (
            "direct_tets",
            KernelSpec::new("direct_tets", MeshKind::Tetrahedra)
                .access(Access::read(tets))
                .access(Access::write(tet_dat))
                .body("TetDat = (float4)(TetVer[0], TetVer[1], TetVer[2], TetVer[3]);"),
            32 * nt as u64,
            32 * nt as u64,
        ),
        (
            "indirect_tets",
            KernelSpec::new("indirect_tets", MeshKind::Tetrahedra)
                .access(Access::read(vertices))
                .access(Access::write(tet_dat))
                .body("TetDat = TetCrd[0] + TetCrd[1] + TetCrd[2] + TetCrd[3];"),
            96 * nt as u64,
            16 * nv as u64 + 32 * nt as u64,
        ),
        (
            "vertex_ball",
            KernelSpec::new("vertex_ball", MeshKind::Vertices)
                .access(Access::read(tet_dat))
                .access(Access::write(ver_dat))
                .body(
                    "float4 sum = 0.0f;\n\
                     for (int i = 0; i < VerTetDegMax; i++) sum += VerTetDat[i];\n\
                     VerDat = sum;",
                ),
            460 * nv as u64,
            32 * nv as u64 + 16 * nt as u64,
        ),
    ];
    let copy = copy_bandwidth(gml.context(), nt.max(nv), launches)?;
    let mut kernels = Vec::new();
    for (name, spec, gmlib_bytes, unique_bytes) in specs {
        let kernel = gml.compile(spec)?;
        gml.launch(kernel)?; // warm-up: uploads data and pays for lazy compilation
        let mut total = Duration::ZERO;
        let mut best = Duration::MAX;
        for _ in 0..launches.max(1) {
            let t = gml.launch(kernel)?;
            total += t;
            best = best.min(t);
        }
        let mean = total.as_secs_f64() / f64::from(launches.max(1));
        let mean = mean.max(1e-12);
        kernels.push(KernelResult {
            kernel: name,
            mean_seconds: mean,
            best_seconds: best.as_secs_f64(),
            gmlib_bytes,
            unique_bytes,
            gmlib_bytes_per_second: gmlib_bytes as f64 / mean,
            unique_bytes_per_second: unique_bytes as f64 / mean,
            unique_over_copy: unique_bytes as f64 / mean / copy,
        });
    }
    Ok(Report {
        device: gml.device().name.clone(),
        cells,
        vertices: nv,
        tetrahedra: nt,
        host_threads: rayon::current_num_threads(),
        generate_seconds,
        import_seconds,
        link_seconds,
        generate_cpu_seconds,
        import_cpu_seconds,
        link_cpu_seconds,
        ball_tables: ball.tables.iter().map(|t| (t.width, t.rows)).collect(),
        copy_bytes_per_second: copy,
        kernels,
    })
}

/// Wall-clock and process CPU time since a start.
struct Stopwatch {
    wall: Instant,
    cpu: f64,
}

impl Stopwatch {
    fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: process_cpu_seconds(),
        }
    }

    /// Elapsed (wall, CPU) seconds.
    fn read(&self) -> (f64, f64) {
        (
            self.wall.elapsed().as_secs_f64(),
            process_cpu_seconds() - self.cpu,
        )
    }
}

/// User + system CPU time of every thread of this process so far (0 where unknown), seconds.
/// It includes the OpenCL runtime's threads, idle while the host prepares the mesh.
fn process_cpu_seconds() -> f64 {
    // SAFETY: an all-zero rusage is valid, and getrusage writes one into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to an rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
