//! Benchmarks that `snowsim bench` and `cargo bench` run: measured on the device with OpenCL
//! profiling, reported as ratios to the device's own copy bandwidth.

pub mod compare;
pub mod copy;
pub mod counts;
pub mod gml_bandwidth;
pub mod launch;
pub mod pressure;
pub mod record;
pub mod reduce;
pub mod snow;
pub mod sweep;
pub mod wind;
