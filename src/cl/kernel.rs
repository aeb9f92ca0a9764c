//! Kernels whose arguments are checked against their declaration and launched without panics.
//!
//! opencl3's kernel-execution builder panics on a bad argument, so a kernel edited through
//! `SNOWSIM_KERNEL_DIR` with a changed signature would crash the program. Every launch in
//! snowsim goes through [`KernelCall`] instead: the argument count is compared with
//! `CL_KERNEL_NUM_ARGS`, each argument with what `clGetKernelArgInfo` reports (programs are
//! built with `-cl-kernel-arg-info`), and every mismatch is an [`Error::KernelArgument`] naming
//! the kernel, the argument and the source file. Arguments that did not change since the
//! kernel's last launch are not set again.

use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};

use bytemuck::Pod;
use opencl3::event::Event;
use opencl3::kernel::Kernel as ClKernel;
use opencl3::types::{cl_kernel_arg_address_qualifier, cl_mem};

use super::buffer::BufferArg;
use super::context::Context;
use super::error::{Error, Result, ResultExt};
use super::launch::WorkSize;
use super::timeline::Timeline;

/// An OpenCL type a scalar kernel argument can have, with its name in OpenCL C.
pub trait ArgType: Pod {
    /// The OpenCL C name: `uint`, `float4`, …
    const NAME: &'static str;
}

macro_rules! arg_types {
    ($($t:ty => $name:literal),* $(,)?) => {
        $(impl ArgType for $t { const NAME: &'static str = $name; })*
    };
}

arg_types! {
    i8 => "char", u8 => "uchar", i16 => "short", u16 => "ushort",
    i32 => "int", u32 => "uint", i64 => "long", u64 => "ulong", f32 => "float", f64 => "double",
    [i32; 2] => "int2", [i32; 4] => "int4", [u32; 2] => "uint2", [u32; 4] => "uint4",
    [f32; 2] => "float2", [f32; 4] => "float4", [f64; 2] => "double2", [f64; 4] => "double4",
}

/// What the driver says about one parameter (with `-cl-kernel-arg-info`).
#[derive(Clone, Debug, Default)]
struct Param {
    name: Option<String>,
    type_name: Option<String>,
    address: Option<cl_kernel_arg_address_qualifier>,
}

impl Param {
    fn label(&self, index: u32) -> String {
        match &self.name {
            Some(name) => format!("argument {index} (`{name}`)"),
            None => format!("argument {index}"),
        }
    }

    fn is_pointer(&self) -> Option<bool> {
        use opencl3::kernel::{CL_KERNEL_ARG_ADDRESS_CONSTANT, CL_KERNEL_ARG_ADDRESS_GLOBAL};
        self.address
            .map(|a| a == CL_KERNEL_ARG_ADDRESS_GLOBAL || a == CL_KERNEL_ARG_ADDRESS_CONSTANT)
    }

    fn is_local(&self) -> Option<bool> {
        self.address
            .map(|a| a == opencl3::kernel::CL_KERNEL_ARG_ADDRESS_LOCAL)
    }
}

/// An argument as last set: its bytes, and for a buffer a reference to it, so that the buffer
/// cannot be freed and its handle reused by another allocation while the kernel may still
/// hold it (some drivers resolve the handle when the argument is set).
struct SetArg {
    bytes: Vec<u8>,
    _buffer: Option<super::buffer::RetainedMem>,
}

/// A kernel of a built program, with its declaration and the arguments it was last given.
pub struct Kernel {
    kernel: ClKernel,
    name: Arc<str>,
    file: String,
    params: Vec<Param>,
    last: Mutex<Vec<Option<SetArg>>>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({} in {})", self.name, self.file)
    }
}

impl Kernel {
    /// Wraps `kernel`, named `name` and defined in source file `file`, reading its parameters.
    pub(super) fn new(kernel: ClKernel, name: &str, file: &str) -> Result<Self> {
        let count = kernel
            .num_args()
            .during(format!("clGetKernelInfo(NUM_ARGS) of {name}"))?;
        // Without -cl-kernel-arg-info (or on drivers that ignore it) only the count is known.
        let params = (0..count)
            .map(|i| Param {
                name: kernel.get_arg_name(i).ok().filter(|s| !s.is_empty()),
                type_name: kernel
                    .get_arg_type_name(i)
                    .ok()
                    .map(|s| s.trim_end_matches('\0').trim().to_string())
                    .filter(|s| !s.is_empty()),
                address: kernel.get_arg_address_qualifier(i).ok(),
            })
            .collect();
        Ok(Self {
            kernel,
            name: name.into(),
            file: file.to_string(),
            params,
            last: Mutex::new((0..count).map(|_| None).collect()),
        })
    }

    /// The kernel's function name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel's name as a shared string (for timelines).
    pub fn shared_name(&self) -> Arc<str> {
        self.name.clone()
    }

    /// The source file that defines it, as build logs name it.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Number of parameters it declares.
    pub fn arg_count(&self) -> usize {
        self.params.len()
    }

    /// The opencl3 kernel (for work-group queries).
    pub fn cl_kernel(&self) -> &ClKernel {
        &self.kernel
    }

    /// Starts setting this kernel's arguments, in order, for one launch.
    ///
    /// A kernel holds one set of arguments: calls made one after the other are fine, calls
    /// interleaved on the same kernel overwrite each other's arguments.
    pub fn call(&self) -> KernelCall<'_> {
        KernelCall {
            kernel: self,
            next: 0,
        }
    }

    /// The arguments last set, per index.
    fn last(&self) -> MutexGuard<'_, Vec<Option<SetArg>>> {
        // A poisoned cache only means a panic elsewhere; forget what was set.
        self.last.lock().unwrap_or_else(|poisoned| {
            let mut guard = poisoned.into_inner();
            guard.iter_mut().for_each(|v| *v = None);
            guard
        })
    }

    /// Largest work-group the kernel allows on `context`'s device (registers, local memory).
    pub fn max_group(&self, context: &Context) -> Result<usize> {
        self.kernel
            .get_work_group_size(context.device().id())
            .during(format!(
                "clGetKernelWorkGroupInfo(WORK_GROUP_SIZE) of {}",
                self.name
            ))
    }

    /// Work sizes covering `items` work-items on `context`'s device.
    pub fn work_size(&self, context: &Context, items: usize) -> Result<WorkSize> {
        WorkSize::for_kernel(context, self, items)
    }

    fn error(&self, index: Option<u32>, problem: String) -> Error {
        Error::KernelArgument {
            kernel: self.name.to_string(),
            file: self.file.clone(),
            index,
            problem,
        }
    }
}

/// The arguments of one launch of a [`Kernel`], set in the order the kernel declares them.
pub struct KernelCall<'k> {
    kernel: &'k Kernel,
    next: u32,
}

impl KernelCall<'_> {
    fn param(&self) -> Result<&Param> {
        let k = self.kernel;
        k.params.get(self.next as usize).ok_or_else(|| {
            k.error(
                Some(self.next),
                format!(
                    "the program passes more arguments than the {} the kernel declares: was its \
                     signature edited?",
                    k.params.len()
                ),
            )
        })
    }

    /// Sets the next argument to `bytes` (a buffer's handle when `mem` is given), unless it
    /// already holds them.
    fn set_bytes(
        &mut self,
        bytes: &[u8],
        local: Option<usize>,
        mem: Option<cl_mem>,
    ) -> Result<&mut Self> {
        let index = self.next;
        let mut last = self.kernel.last();
        let slot = &mut last[index as usize];
        let unchanged = local.is_none() && slot.as_ref().is_some_and(|s| s.bytes == bytes);
        if !unchanged {
            let (size, value) = match local {
                Some(size) => (size, ptr::null()),
                None => (bytes.len(), bytes.as_ptr().cast()),
            };
            // SAFETY: `value` points to `size` readable bytes (or is null for local memory);
            // what the kernel then does with the argument is the caller's promise.
            let set = unsafe {
                cl3::kernel::set_kernel_arg(self.kernel.kernel.get(), index, size, value)
            };
            if let Err(code) = set {
                *slot = None;
                let param = &self.kernel.params[index as usize];
                let declared = param
                    .type_name
                    .as_deref()
                    .map(|t| format!(" (declared `{t}`)"))
                    .unwrap_or_default();
                return Err(self.kernel.error(
                    Some(index),
                    format!(
                        "clSetKernelArg refused {} of {size} bytes{declared}: {}",
                        param.label(index),
                        opencl3::error_codes::ClError(code)
                    ),
                ));
            }
            *slot = match (local, mem) {
                (Some(_), _) => None,
                (None, Some(mem)) => Some(SetArg {
                    bytes: bytes.to_vec(),
                    // SAFETY: the handle was just accepted by clSetKernelArg: a live object.
                    _buffer: Some(unsafe { super::buffer::RetainedMem::retain(mem)? }),
                }),
                (None, None) => Some(SetArg {
                    bytes: bytes.to_vec(),
                    _buffer: None,
                }),
            };
        }
        self.next += 1;
        Ok(self)
    }

    /// Sets the next argument to a scalar or vector value.
    ///
    /// # Safety
    /// The kernel must do nothing out of bounds with this value (an index, a count).
    pub unsafe fn arg<T: ArgType>(&mut self, value: &T) -> Result<&mut Self> {
        let param = self.param()?;
        let label = param.label(self.next);
        if param.is_pointer() == Some(true) || param.is_local() == Some(true) {
            let problem = format!(
                "{label} is a pointer `{}` in the source, but the program passes a `{}` value",
                param.type_name.as_deref().unwrap_or("?"),
                T::NAME
            );
            return Err(self.kernel.error(Some(self.next), problem));
        }
        if let Some(declared) = param.type_name.as_deref()
            && let Some(canonical) = canonical_type(declared)
            && canonical != T::NAME
        {
            let problem = format!(
                "{label} is `{declared}` in the source, but the program passes `{}` ({} bytes)",
                T::NAME,
                size_of::<T>()
            );
            return Err(self.kernel.error(Some(self.next), problem));
        }
        self.set_bytes(bytemuck::bytes_of(value), None, None)
    }

    /// Sets the next argument to a buffer handle.
    ///
    /// # Safety
    /// The kernel must stay within `len` values of `T` for the sizes it is launched with.
    pub unsafe fn mem<T>(&mut self, mem: cl_mem, len: usize) -> Result<&mut Self> {
        let param = self.param()?;
        let label = param.label(self.next);
        if param.is_pointer() == Some(false) {
            let problem = format!(
                "{label} is `{}` in the source, but the program passes a buffer",
                param.type_name.as_deref().unwrap_or("a value")
            );
            return Err(self.kernel.error(Some(self.next), problem));
        }
        let element = size_of::<T>();
        if element > 1
            && let Some(declared) = param.type_name.as_deref()
            && let Some(size) = declared.strip_suffix('*').and_then(|t| type_size(t.trim()))
            && size != element
        {
            let problem = format!(
                "{label} points to `{declared}` ({size}-byte values) in the source, but the \
                 program passes a buffer of {element}-byte values ({len} of them)"
            );
            return Err(self.kernel.error(Some(self.next), problem));
        }
        self.set_bytes(bytemuck::bytes_of(&(mem as usize)), None, Some(mem))
    }

    /// Sets the next argument to a buffer: a [`DeviceBuffer`](super::DeviceBuffer), a
    /// [`GlBuffer`](super::GlBuffer), a gml field.
    ///
    /// # Safety
    /// The kernel must stay within the buffer's length for the sizes it is launched with.
    pub unsafe fn buffer<T: Pod, B: BufferArg<T> + ?Sized>(
        &mut self,
        buffer: &B,
    ) -> Result<&mut Self> {
        let mem = buffer.cl_mem_checked()?;
        // SAFETY: the caller's promise about the bounds.
        unsafe { self.mem::<T>(mem, buffer.len()) }
    }

    /// Sets the next argument to `count` values of `T` of local memory.
    pub fn local<T>(&mut self, count: usize) -> Result<&mut Self> {
        let param = self.param()?;
        if param.is_local() == Some(false) {
            let problem = format!(
                "{} is `{}` in the source, but the program passes local memory",
                param.label(self.next),
                param.type_name.as_deref().unwrap_or("?")
            );
            return Err(self.kernel.error(Some(self.next), problem));
        }
        self.set_bytes(&[], Some(count.max(1) * size_of::<T>()), None)
    }

    fn check_complete(&self) -> Result<()> {
        let declared = self.kernel.params.len() as u32;
        if self.next != declared {
            return Err(self.kernel.error(
                None,
                format!(
                    "the program sets {} arguments but the kernel declares {declared}: was its \
                     signature edited?",
                    self.next
                ),
            ));
        }
        Ok(())
    }

    fn enqueue_raw(
        &self,
        context: &Context,
        work: WorkSize,
        event: Option<&mut *mut std::ffi::c_void>,
    ) -> Result<()> {
        self.check_complete()?;
        let global = [work.global];
        let local = [work.local];
        let runtime = cl3::load_library().as_ref().map_err(|_| Error::Api {
            call: "loading the OpenCL library".into(),
            code: opencl3::error_codes::ClError(cl3::error_codes::DLOPEN_RUNTIME_LOAD_FAILED),
        })?;
        let event_ptr = event.map_or(ptr::null_mut(), |e| e as *mut _);
        // One dimension, sizes live across the call, every argument set (checked above; the
        // caller of each setter vouched for the bounds); a null event pointer asks for no event.
        let status = {
            runtime.clEnqueueNDRangeKernel(
                context.queue().get(),
                self.kernel.kernel.get(),
                1,
                ptr::null(),
                global.as_ptr(),
                local.as_ptr(),
                0,
                ptr::null(),
                event_ptr,
            )
        };
        match status {
            Some(0) => Ok(()),
            Some(code) => Err(Error::Api {
                call: format!(
                    "clEnqueueNDRangeKernel({}, {})",
                    self.kernel.name, self.kernel.file
                ),
                code: opencl3::error_codes::ClError(code),
            }),
            None => Err(Error::Api {
                call: "clEnqueueNDRangeKernel (missing from the OpenCL library)".into(),
                code: opencl3::error_codes::ClError(
                    cl3::error_codes::DLOPEN_FUNCTION_NOT_AVAILABLE,
                ),
            }),
        }
    }

    /// Enqueues the kernel over `work` and returns its event (for waiting or profiling).
    pub fn enqueue(&self, context: &Context, work: WorkSize) -> Result<Event> {
        let mut event = ptr::null_mut();
        self.enqueue_raw(context, work, Some(&mut event))?;
        Ok(Event::new(event))
    }

    /// Enqueues the kernel over `work` and records it in `timeline` under its current stage;
    /// when the timeline does not time launches, no event is even created.
    pub fn enqueue_into(
        &self,
        context: &Context,
        work: WorkSize,
        timeline: &mut Timeline,
    ) -> Result<()> {
        if timeline.records_events() {
            let event = self.enqueue(context, work)?;
            timeline.push(self.kernel.shared_name(), event);
        } else {
            self.enqueue_raw(context, work, None)?;
            timeline.count_untimed();
        }
        Ok(())
    }
}

/// The canonical OpenCL name of a scalar or vector type as `clGetKernelArgInfo` may spell it,
/// or `None` for anything else (structs, typedefs, pointers).
fn canonical_type(name: &str) -> Option<&'static str> {
    let name = name.trim();
    let spelled = match name {
        "unsigned char" => "uchar",
        "unsigned short" => "ushort",
        "unsigned int" | "unsigned" => "uint",
        "unsigned long" => "ulong",
        other => other,
    };
    const KNOWN: [&str; 50] = [
        "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double",
        "char2", "uchar2", "short2", "ushort2", "int2", "uint2", "long2", "ulong2", "float2",
        "double2", "char4", "uchar4", "short4", "ushort4", "int4", "uint4", "long4", "ulong4",
        "float4", "double4", "char8", "uchar8", "short8", "ushort8", "int8", "uint8", "long8",
        "ulong8", "float8", "double8", "char16", "uchar16", "short16", "ushort16", "int16",
        "uint16", "long16", "ulong16", "float16", "double16",
    ];
    KNOWN.iter().find(|k| **k == spelled).copied()
}

/// Size in bytes of an OpenCL scalar or vector type (3-vectors take four lanes), `None` for
/// anything else.
fn type_size(name: &str) -> Option<usize> {
    let name = canonical_type(name)?;
    let digits = name.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let base = &name[..name.len() - digits.len()];
    let lanes: usize = if digits.is_empty() {
        1
    } else {
        digits.parse().ok()?
    };
    let scalar = match base {
        "char" | "uchar" => 1,
        "short" | "ushort" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "ulong" | "double" => 8,
        _ => return None,
    };
    Some(scalar * lanes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_and_sizes() {
        assert_eq!(canonical_type("unsigned int"), Some("uint"));
        assert_eq!(canonical_type("float4"), Some("float4"));
        assert_eq!(canonical_type("GmlParSct"), None);
        assert_eq!(type_size("float4"), Some(16));
        assert_eq!(type_size("uchar"), Some(1));
        assert_eq!(type_size("ulong2"), Some(16));
        assert_eq!(type_size("double16"), Some(128));
        assert_eq!(type_size("my_struct"), None);
    }
}
