//! Reading and writing a ~20 MB version 2 tetrahedral `.meshb` (a 50³ grid of cubes split into
//! 6 tetrahedra each: 132 651 vertices, 750 000 tetrahedra, 30 000 boundary triangles).
//!
//! `read` measures `meshio::read` (one `fs::read`, then bulk decoding); `write` measures
//! `meshio::write` (encoding into one buffer and one write). Run with `cargo bench --bench
//! meshio_read`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use snowsim::meshio::{self, ElementKind, Version, generate};

fn bench_meshb(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("snowsim-meshio-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let path: PathBuf = dir.join("grid50.meshb");
    let mesh = generate::tet_grid([50, 50, 50]);
    meshio::write(&path, &mesh, Version::V2).expect("write the bench mesh");
    let bytes = std::fs::metadata(&path).expect("bench mesh").len();
    assert_eq!(mesh.count(ElementKind::Tetrahedra), 750_000);

    let mut group = c.benchmark_group(format!("meshb_v2_{:.1}MB", bytes as f64 / 1e6));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(bytes));
    group.bench_function("read", |b| {
        b.iter(|| meshio::read(black_box(&path)).expect("read the bench mesh"))
    });
    let out = dir.join("written.meshb");
    group.bench_function("write", |b| {
        b.iter(|| meshio::write(black_box(&out), black_box(&mesh), Version::V2).expect("write"))
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench_meshb);
criterion_main!(benches);
