//! Memory and disk budgets: what a setting will cost, checked against what the machine has
//! before anything large is allocated or written.
//!
//! Every count a user can set (cells, layers, particles, iterations, sort lengths, bench sizes)
//! is turned into an [`Estimate`] of the bytes it needs, transient peaks included, and checked
//! against a [`Budget`]: the host's available memory ([`Budget::host`]: the least of
//! `MemAvailable`, the control group's headroom and the address-space limit, see
//! [`HostMemory`]), a device's memory ([`Budget::device`]: `CL_DEVICE_GLOBAL_MEM_SIZE` in total
//! and `CL_DEVICE_MAX_MEM_ALLOC_SIZE` for each buffer, since OpenCL has no free-memory query),
//! or the free space of the disk an output goes to ([`Budget::disk`]). A refusal names the
//! setting, the estimate and the limit:
//!
//! ```
//! use snowsim::budget::{Budget, Estimate};
//!
//! let budget = Budget::with_host_available(23_000_000_000);
//! let estimate = Estimate::new("`domain.cells = [10000, 10000]` × 3 layers", "the mesh", 36_000_000_000);
//! let error = budget.check(&estimate).unwrap_err();
//! assert_eq!(
//!     error.to_string(),
//!     "`domain.cells = [10000, 10000]` × 3 layers needs ~36 GB of host memory for the mesh; \
//!      this machine has 23 GB available"
//! );
//! ```

mod byte_size;
mod disk;
mod host;

use std::path::{Path, PathBuf};

pub use byte_size::ByteSize;
pub use disk::{directory_of, free_bytes};
pub use host::{HostLimit, HostMemory, cgroup_headroom, meminfo_available};

use crate::cl::{DeviceInfo, DeviceType};

/// What a setting will cost: bytes of host memory, device memory or disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// The setting as the user wrote it, e.g. ``"`--cells 3000,3000` × `--layers 30`"``.
    pub setting: String,
    /// What the bytes are for, e.g. `"the volume mesh"`.
    pub what: String,
    /// Bytes needed at the peak.
    pub bytes: u64,
    /// The largest single allocation among them, checked against a device's
    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE` (ignored by host and disk budgets).
    pub largest_allocation: Option<u64>,
}

impl Estimate {
    /// `setting` needs `bytes` for `what`.
    pub fn new(setting: impl Into<String>, what: impl Into<String>, bytes: u64) -> Self {
        Self {
            setting: setting.into(),
            what: what.into(),
            bytes,
            largest_allocation: None,
        }
    }

    /// The same estimate, whose largest single device buffer is `bytes`.
    pub fn with_largest_allocation(mut self, bytes: u64) -> Self {
        self.largest_allocation = Some(bytes);
        self
    }

    /// `~9.6 GB`, or `more than 18 EB` for a product that overflowed (saturated at
    /// [`u64::MAX`]).
    fn amount(&self) -> String {
        approximately(self.bytes)
    }
}

fn approximately(bytes: u64) -> String {
    if bytes == u64::MAX {
        format!("more than {}", ByteSize(bytes))
    } else {
        format!("~{}", ByteSize(bytes))
    }
}

/// Multiplies counts and sizes into a byte count, saturating at [`u64::MAX`] (which
/// [`Budget::check`] always refuses, and messages show as "more than 18 EB").
///
/// ```
/// use snowsim::budget::bytes_of;
///
/// assert_eq!(bytes_of(&[1000, 1000, 24]), 24_000_000);
/// assert_eq!(bytes_of(&[u64::MAX, 2]), u64::MAX);
/// ```
pub fn bytes_of(factors: &[u64]) -> u64 {
    factors.iter().fold(1u64, |a, &b| a.saturating_mul(b))
}

/// Where the bytes would go.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Place {
    Host(HostLimit),
    Device { name: String, max_alloc: u64 },
    Disk { dir: PathBuf },
}

/// What one resource has: host memory, a device's memory or a disk's free space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    place: Place,
    available: u64,
}

impl Budget {
    /// The host memory this process may still take now ([`HostMemory::now`]).
    pub fn host() -> Budget {
        let memory = HostMemory::now();
        Budget {
            place: Place::Host(memory.limit),
            available: memory.available,
        }
    }

    /// A host budget of `bytes`, as if `MemAvailable` said so (for tests and for callers that
    /// keep part of the memory for themselves).
    pub fn with_host_available(bytes: u64) -> Budget {
        Budget {
            place: Place::Host(HostLimit::MemAvailable),
            available: bytes,
        }
    }

    /// A device's memory: `CL_DEVICE_GLOBAL_MEM_SIZE` for all buffers together and
    /// `CL_DEVICE_MAX_MEM_ALLOC_SIZE` for each.
    pub fn device(info: &DeviceInfo) -> Budget {
        Budget {
            place: Place::Device {
                name: info.name.clone(),
                max_alloc: info.max_alloc_bytes,
            },
            available: info.global_mem_bytes,
        }
    }

    /// The free space of the file system that will hold `path` (a file to be written: the
    /// space of its directory is measured).
    pub fn disk(path: &Path) -> Result<Budget, BudgetError> {
        let dir = directory_of(path);
        let available = free_bytes(&dir).map_err(|error| BudgetError::DiskProbe {
            dir: dir.clone(),
            error,
        })?;
        Ok(Budget {
            place: Place::Disk { dir },
            available,
        })
    }

    /// Bytes available ([`u64::MAX`] when nothing is known).
    pub fn available(&self) -> u64 {
        self.available
    }

    /// Checks `estimate` against this budget: its bytes against what is available, and for a
    /// device its largest allocation against `CL_DEVICE_MAX_MEM_ALLOC_SIZE`. An estimate of
    /// [`u64::MAX`] (an overflowed product) is always refused.
    pub fn check(&self, estimate: &Estimate) -> Result<(), BudgetError> {
        if let (Place::Device { name, max_alloc }, Some(largest)) =
            (&self.place, estimate.largest_allocation)
            && largest > *max_alloc
        {
            return Err(BudgetError::DeviceAllocation {
                estimate: estimate.clone(),
                largest,
                device: name.clone(),
                max_alloc: *max_alloc,
            });
        }
        if estimate.bytes <= self.available && estimate.bytes != u64::MAX {
            return Ok(());
        }
        let estimate = estimate.clone();
        let available = self.available;
        Err(match &self.place {
            Place::Host(limit) => BudgetError::HostMemory {
                estimate,
                available,
                limit: limit.clone(),
            },
            Place::Device { name, .. } => BudgetError::DeviceMemory {
                estimate,
                available,
                device: name.clone(),
            },
            Place::Disk { dir } => BudgetError::DiskSpace {
                estimate,
                available,
                dir: dir.clone(),
            },
        })
    }
}

/// Checks a command's memory before it allocates: `host` against the host's available memory
/// and `device` against the memory of the device `info` describes ([`Budget::device`]). A
/// CPU device (PoCL) keeps its buffers in host memory, so there the device's bytes count
/// against the host as well.
pub fn check_host_and_device(
    host: &Estimate,
    device: &Estimate,
    info: &DeviceInfo,
) -> Result<(), BudgetError> {
    Budget::device(info).check(device)?;
    let mut host = host.clone();
    if info.device_type == DeviceType::Cpu {
        host.bytes = host.bytes.saturating_add(device.bytes);
        host.what = format!("{} and, on this CPU device, {}", host.what, device.what);
    }
    Budget::host().check(&host)
}

/// An estimate that does not fit its budget, or a budget that cannot be measured.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    /// More host memory than the machine has available.
    #[error(
        "{} needs {} of host memory for {}; this machine has {} available{}",
        estimate.setting,
        estimate.amount(),
        estimate.what,
        ByteSize(*available),
        host_limit_note(limit)
    )]
    HostMemory {
        /// What was asked for.
        estimate: Estimate,
        /// Bytes available.
        available: u64,
        /// What bounds them.
        limit: HostLimit,
    },
    /// More device memory than the device has in total.
    #[error(
        "{} needs {} of device memory for {}; {device} has {} (CL_DEVICE_GLOBAL_MEM_SIZE)",
        estimate.setting,
        estimate.amount(),
        estimate.what,
        ByteSize(*available)
    )]
    DeviceMemory {
        /// What was asked for.
        estimate: Estimate,
        /// The device's global memory in bytes.
        available: u64,
        /// The device's name.
        device: String,
    },
    /// A buffer larger than the device allocates at once.
    #[error(
        "{} needs a single device buffer of {} for {}; {device} allocates at most {} per \
         buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
        estimate.setting,
        approximately(*largest),
        estimate.what,
        ByteSize(*max_alloc)
    )]
    DeviceAllocation {
        /// What was asked for.
        estimate: Estimate,
        /// The largest buffer, in bytes.
        largest: u64,
        /// The device's name.
        device: String,
        /// The device's `CL_DEVICE_MAX_MEM_ALLOC_SIZE`.
        max_alloc: u64,
    },
    /// More bytes than the disk has free.
    #[error(
        "{} needs {} of disk space for {}; {} has {} free",
        estimate.setting,
        estimate.amount(),
        estimate.what,
        dir.display(),
        ByteSize(*available)
    )]
    DiskSpace {
        /// What was asked for.
        estimate: Estimate,
        /// Free bytes.
        available: u64,
        /// The directory written to.
        dir: PathBuf,
    },
    /// The free space of a directory cannot be measured.
    #[error("cannot measure the free space of {}: {error}", dir.display())]
    DiskProbe {
        /// The directory.
        dir: PathBuf,
        /// Why (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
}

fn host_limit_note(limit: &HostLimit) -> String {
    match limit {
        HostLimit::MemAvailable | HostLimit::Unknown => String::new(),
        other => format!(" ({other})"),
    }
}
