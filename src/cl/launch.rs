//! Choosing global and local work sizes for a one-dimensional kernel on a given device.

use super::kernel::Kernel;

use super::context::Context;
use super::error::{Result, ResultExt};

/// Work sizes of a one-dimensional launch covering `items` work-items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkSize {
    /// Total work-items: `items` rounded up to a multiple of `local`.
    pub global: usize,
    /// Work-group size.
    pub local: usize,
}

/// Work-group size snowsim aims for: large enough to hide latency on GPUs, small enough to
/// leave room for several groups per compute unit.
const TARGET_GROUP: usize = 256;

impl WorkSize {
    /// Work sizes for `kernel` on `context`'s device: the largest multiple of the kernel's
    /// preferred work-group multiple (the warp or wavefront width on GPUs) that is at most
    /// 256 and at most what the kernel allows.
    pub fn for_kernel(context: &Context, kernel: &Kernel, items: usize) -> Result<Self> {
        let device = context.device().id();
        let kernel = kernel.cl_kernel();
        let allowed = kernel
            .get_work_group_size(device)
            .during("clGetKernelWorkGroupInfo(WORK_GROUP_SIZE)")?;
        let multiple = kernel
            .get_work_group_size_multiple(device)
            .during("clGetKernelWorkGroupInfo(PREFERRED_WORK_GROUP_SIZE_MULTIPLE)")?;
        Ok(Self::choose(items, allowed, multiple))
    }

    /// The rule behind [`WorkSize::for_kernel`], separated from the device queries.
    pub fn choose(items: usize, allowed: usize, multiple: usize) -> Self {
        let cap = TARGET_GROUP.min(allowed.max(1));
        let multiple = multiple.clamp(1, cap);
        let local = (cap / multiple) * multiple;
        let global = items.max(1).div_ceil(local) * local;
        Self { global, local }
    }
}

#[cfg(test)]
mod tests {
    use super::WorkSize;

    #[test]
    fn local_size_respects_device_limits() {
        assert_eq!(
            WorkSize::choose(1000, 1024, 32),
            WorkSize {
                global: 1024,
                local: 256
            }
        );
        assert_eq!(
            WorkSize::choose(1000, 4096, 1),
            WorkSize {
                global: 1024,
                local: 256
            }
        );
        assert_eq!(
            WorkSize::choose(10, 64, 48),
            WorkSize {
                global: 48,
                local: 48
            }
        );
        assert_eq!(
            WorkSize::choose(0, 0, 0),
            WorkSize {
                global: 1,
                local: 1
            }
        );
        let w = WorkSize::choose(1 << 20, 200, 64);
        assert_eq!(
            w.local, 192,
            "largest multiple of 64 that the kernel allows"
        );
        assert_eq!(w.global % w.local, 0);
    }
}
