//! How much memory this process may still take: the least of the kernel's `MemAvailable`, the
//! headroom of every control group it runs in (cgroup v2 `memory.max − memory.current`, v1
//! `memory.limit_in_bytes − memory.usage_in_bytes`, up to the hierarchy's root) and the
//! address-space limit (`ulimit -v`) less what the process already maps.

use std::fmt;
use std::path::{Path, PathBuf};

/// What bounds the host memory still available.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostLimit {
    /// The kernel's estimate of memory available without swapping (`MemAvailable` in
    /// `/proc/meminfo`).
    MemAvailable,
    /// The memory limit of a control group, less its usage.
    ControlGroup {
        /// The group's directory under `/sys/fs/cgroup`.
        dir: PathBuf,
    },
    /// The address-space limit (`RLIMIT_AS`, `ulimit -v`), less what the process maps already.
    AddressSpace,
    /// Nothing could be read (not Linux): no limit is known and every estimate passes.
    Unknown,
}

impl fmt::Display for HostLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostLimit::MemAvailable => f.write_str("MemAvailable in /proc/meminfo"),
            HostLimit::ControlGroup { dir } => {
                write!(f, "the memory limit of control group {}", dir.display())
            }
            HostLimit::AddressSpace => f.write_str("the address-space limit, ulimit -v"),
            HostLimit::Unknown => f.write_str("no known limit"),
        }
    }
}

/// The host memory this process may still allocate, and what bounds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostMemory {
    /// Bytes available ([`u64::MAX`] when [`HostLimit::Unknown`]).
    pub available: u64,
    /// The bound that gave `available`.
    pub limit: HostLimit,
}

impl HostMemory {
    /// Reads the limits of this process now.
    pub fn now() -> HostMemory {
        let mut best = HostMemory {
            available: u64::MAX,
            limit: HostLimit::Unknown,
        };
        let mut consider = |available: u64, limit: HostLimit| {
            if available < best.available {
                best = HostMemory { available, limit };
            }
        };
        if let Some(bytes) = read("/proc/meminfo").and_then(|t| meminfo_available(&t)) {
            consider(bytes, HostLimit::MemAvailable);
        }
        if let Some(groups) = read("/proc/self/cgroup") {
            for (dir, headroom) in control_group_headrooms(&groups) {
                consider(headroom, HostLimit::ControlGroup { dir });
            }
        }
        if let Some(bytes) = address_space_headroom() {
            consider(bytes, HostLimit::AddressSpace);
        }
        best
    }
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// `MemAvailable` of `/proc/meminfo` text, in bytes.
///
/// ```
/// let text = "MemTotal: 24000000 kB\nMemAvailable:   23316476 kB\n";
/// assert_eq!(snowsim::budget::meminfo_available(text), Some(23316476 * 1024));
/// ```
pub fn meminfo_available(meminfo: &str) -> Option<u64> {
    kilobytes_field(meminfo, "MemAvailable:")
}

/// A `Name:   1234 kB` field of `/proc` text, in bytes.
fn kilobytes_field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kb: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// Headroom of a control group from its limit and usage files' text: `None` when the limit is
/// `max` (cgroup v2's "no limit") or either text is not a number.
///
/// ```
/// use snowsim::budget::cgroup_headroom;
///
/// assert_eq!(cgroup_headroom("4294967296\n", "1073741824\n"), Some(3 << 30));
/// assert_eq!(cgroup_headroom("max\n", "1073741824\n"), None);
/// assert_eq!(cgroup_headroom("100\n", "200\n"), Some(0));
/// ```
pub fn cgroup_headroom(limit: &str, usage: &str) -> Option<u64> {
    let limit: u64 = limit.trim().parse().ok()?;
    let usage: u64 = usage.trim().parse().ok()?;
    Some(limit.saturating_sub(usage))
}

/// The headroom of each control group with a memory limit that `/proc/self/cgroup` text
/// places this process in, and of each of their ancestors.
fn control_group_headrooms(proc_cgroup: &str) -> Vec<(PathBuf, u64)> {
    let root = Path::new("/sys/fs/cgroup");
    let mut found = Vec::new();
    for line in proc_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let relative = path.trim_start_matches('/');
        let (base, limit_file, usage_file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                root.join("memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        let mut dir = base.join(relative);
        loop {
            if let (Some(limit), Some(usage)) =
                (read(dir.join(limit_file)), read(dir.join(usage_file)))
                && let Some(headroom) = cgroup_headroom(&limit, &usage)
            {
                found.push((dir.clone(), headroom));
            }
            if dir == base || !dir.pop() {
                break;
            }
        }
    }
    found
}

/// `RLIMIT_AS` less the process's current virtual size, when a limit is set.
fn address_space_headroom() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let mapped = read("/proc/self/status")
        .and_then(|t| kilobytes_field(&t, "VmSize:"))
        .unwrap_or(0);
    Some(limit.rlim_cur.saturating_sub(mapped))
}
