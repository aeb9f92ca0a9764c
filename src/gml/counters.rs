//! Run-time counters of an instance (GMlib 3.11–3.17).

use std::collections::BTreeMap;

use super::reduce::Reduction;
use crate::cl::{KernelTimer, TransferCounters};

/// A snapshot of an instance's counters.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Device time and launch count of each kernel, by name, every link table included.
    pub kernels: Vec<(String, KernelTimer)>,
    /// Device time of each reduction operator (both passes).
    pub reductions: BTreeMap<Reduction, KernelTimer>,
    /// Bytes moved between host and device.
    pub transfers: TransferCounters,
    /// Device memory held by the instance's context, in bytes.
    pub memory_in_use: u64,
}
