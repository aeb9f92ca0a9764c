//! `cargo bench --bench gml_bandwidth`: GMlib's bandwidth kernels on the default device, on a
//! 40³-cell cube (384 000 tetrahedra). For the recorded H100 numbers and bigger meshes, see
//! `snowsim bench gml --cells 150` and benches/RESULTS.md.

use snowsim::bench::gml_bandwidth;
use snowsim::cl::DeviceSelector;
use snowsim::gml::Gml;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cells = std::env::var("GML_BENCH_CELLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let mut gml = Gml::new(&DeviceSelector::Default)?;
    let report = gml_bandwidth::run(&mut gml, cells, 10)?;
    println!(
        "{}: {} tetrahedra, copy {:.1} GB/s",
        report.device,
        report.tetrahedra,
        report.copy_bytes_per_second / 1e9
    );
    for k in &report.kernels {
        println!(
            "{:<16} {:>9.3} ms  {:>8.1} GB/s unique  {:>5.2} of copy",
            k.kernel,
            k.mean_seconds * 1e3,
            k.unique_bytes_per_second / 1e9,
            k.unique_over_copy
        );
    }
    Ok(())
}
