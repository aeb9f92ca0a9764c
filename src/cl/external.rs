//! OpenCL's side of memory and semaphores made by another API (`cl_khr_external_memory`,
//! `cl_khr_external_semaphore` with their `_opaque_fd` variants): import by file descriptor,
//! acquire and release around the kernels, wait and signal.
//!
//! The extension functions are not exported by the ICD loader (ocl-icd 2.3), so they are looked
//! up per platform with `clGetExtensionFunctionAddressForPlatform`.
//!
//! # File descriptors
//!
//! The OpenCL extensions do not say whether a successful import takes the fd. So the importer
//! gets its own duplicate and the caller's fd is closed as usual. Right after the import, before
//! anything of ours can open another file: if the duplicate is closed, the importer took it and
//! it is never touched again. Otherwise it is checked again right after the imported object is
//! released, and closed here if it is still open on the same file (device and inode). Either way
//! nothing leaks and nothing is closed twice.

use std::ffi::{CStr, c_void};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::ptr;

use opencl3::types::{
    cl_command_queue, cl_context, cl_event, cl_int, cl_mem, cl_mem_properties, cl_platform_id,
    cl_uint,
};

/// `cl_semaphore_khr`: an opaque handle.
#[allow(non_camel_case_types)]
type cl_semaphore_khr = *mut c_void;
/// `cl_semaphore_payload_khr`.
#[allow(non_camel_case_types)]
type cl_semaphore_payload_khr = u64;
/// `cl_semaphore_properties_khr`.
#[allow(non_camel_case_types)]
type cl_semaphore_properties_khr = u64;

use super::buffer::DeviceBuffer;
use super::context::Context;
use super::error::{Error, Result, ResultExt};

use opencl3::error_codes::ClError;

/// The extensions that importing memory by opaque fd needs.
pub const MEMORY_EXTENSIONS: [&str; 2] =
    ["cl_khr_external_memory", "cl_khr_external_memory_opaque_fd"];
/// The extensions that importing semaphores by opaque fd needs.
pub const SEMAPHORE_EXTENSIONS: [&str; 3] = [
    "cl_khr_semaphore",
    "cl_khr_external_semaphore",
    "cl_khr_external_semaphore_opaque_fd",
];

const CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR: cl_mem_properties = 0x2060;
const CL_MEM_DEVICE_HANDLE_LIST_KHR: cl_mem_properties = 0x2051;
const CL_MEM_DEVICE_HANDLE_LIST_END_KHR: cl_mem_properties = 0;
const CL_SEMAPHORE_TYPE_KHR: cl_semaphore_properties_khr = 0x203D;
const CL_SEMAPHORE_TYPE_BINARY_KHR: cl_semaphore_properties_khr = 1;
const CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR: cl_semaphore_properties_khr = 0x2055;
const CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR: cl_semaphore_properties_khr = 0x2053;
const CL_SEMAPHORE_DEVICE_HANDLE_LIST_END_KHR: cl_semaphore_properties_khr = 0;
const CL_MEM_READ_WRITE: u64 = 1;

type GetExtensionFunctionAddressForPlatform =
    unsafe extern "C" fn(cl_platform_id, *const std::ffi::c_char) -> *mut c_void;
type EnqueueExternalMemObjects = unsafe extern "C" fn(
    cl_command_queue,
    cl_uint,
    *const cl_mem,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;
type CreateSemaphore = unsafe extern "C" fn(
    cl_context,
    *const cl_semaphore_properties_khr,
    *mut cl_int,
) -> cl_semaphore_khr;
type EnqueueSemaphores = unsafe extern "C" fn(
    cl_command_queue,
    cl_uint,
    *const cl_semaphore_khr,
    *const cl_semaphore_payload_khr,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;
type ReleaseSemaphore = unsafe extern "C" fn(cl_semaphore_khr) -> cl_int;

/// The extensions of `wanted` that the context's device lacks.
pub fn missing(context: &Context, wanted: &[&str]) -> Vec<String> {
    let info = context.info();
    wanted
        .iter()
        .filter(|e| !info.has_extension(e))
        .map(|e| e.to_string())
        .collect()
}

/// `CL_DEVICE_UUID_KHR` of the context's device, where it offers `cl_khr_device_uuid`.
pub fn device_uuid(context: &Context) -> Option<[u8; 16]> {
    if !context.info().has_extension("cl_khr_device_uuid") {
        return None;
    }
    match cl3::device::get_device_info(context.device().id(), cl3::device::CL_DEVICE_UUID_KHR) {
        Ok(cl3::info_type::InfoType::Uuid(uuid)) => Some(uuid),
        _ => None,
    }
}

/// Looks up an extension function of the context's platform.
///
/// # Safety
/// `F` must be the function pointer type of `name` in the OpenCL specification.
unsafe fn lookup<F: Copy>(context: &Context, name: &CStr) -> Result<F> {
    let unsupported =
        |why: String| Error::Unsupported(format!("{}: {why}", name.to_string_lossy()));
    // SAFETY: dlopen of the loader that cl3 already loaded (the same handle comes back); the
    // symbol's type is the one the OpenCL specification gives it.
    let entry: GetExtensionFunctionAddressForPlatform = unsafe {
        let library = libc::dlopen(
            c"libOpenCL.so.1".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_LOCAL,
        );
        if library.is_null() {
            return Err(unsupported("cannot open libOpenCL.so.1".into()));
        }
        let symbol = libc::dlsym(
            library,
            c"clGetExtensionFunctionAddressForPlatform".as_ptr(),
        );
        if symbol.is_null() {
            return Err(unsupported(
                "the OpenCL loader has no clGetExtensionFunctionAddressForPlatform".into(),
            ));
        }
        std::mem::transmute::<*mut c_void, GetExtensionFunctionAddressForPlatform>(symbol)
    };
    let platform = context
        .device()
        .platform()
        .during("clGetDeviceInfo(PLATFORM)")?;
    // SAFETY: a platform id and a NUL-terminated name.
    let pointer = unsafe { entry(platform, name.as_ptr()) };
    if pointer.is_null() {
        return Err(unsupported(format!(
            "the platform of {} does not provide it",
            context.info().label()
        )));
    }
    // SAFETY: the caller names the right type; a non-null entry point.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&pointer) })
}

/// The open file an fd names, to recognise it later.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileId {
    number: i32,
    device: u64,
    inode: u64,
}

impl FileId {
    fn of(number: i32) -> Option<Self> {
        // SAFETY: fstat on a descriptor number; failure means it is not open.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        (unsafe { libc::fstat(number, &mut stat) } == 0).then_some(Self {
            number,
            device: stat.st_dev,
            inode: stat.st_ino,
        })
    }

    /// Closes the descriptor if it is still open on the same file (see the module doc).
    fn close_if_unclaimed(self) {
        if Self::of(self.number) == Some(self) {
            // SAFETY: the number still names the file we handed out and nothing else of ours
            // holds it; see the module documentation.
            unsafe { libc::close(self.number) };
        }
    }
}

/// The duplicate fd an importer was given, while it may still be ours to close: closed on
/// drop if still open on the same file (see the module doc). Declared after the imported
/// object, so that the object is released first.
struct Duplicate(Option<FileId>);

impl Drop for Duplicate {
    fn drop(&mut self) {
        if let Some(file) = self.0 {
            file.close_if_unclaimed();
        }
    }
}

/// Hands a duplicate of `fd` to `import`, and returns what it made with the duplicate's id.
fn import_duplicate<T>(
    fd: &OwnedFd,
    import: impl FnOnce(i32) -> Result<T>,
) -> Result<(T, Option<FileId>)> {
    let duplicate = fd
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| Error::Unsupported(format!("cannot duplicate the fd to import: {e}")))?;
    let number = duplicate.as_raw_fd();
    let Some(id) = FileId::of(number) else {
        return Err(Error::Unsupported("the fd to import is not open".into()));
    };
    // From here the importer may own the duplicate: do not let Rust close it.
    std::mem::forget(duplicate);
    let made = import(number);
    // Checked at once, before anything else of ours can open a file under that number: an
    // importer that closed the duplicate took it, and it is never touched again.
    let id = (FileId::of(number) == Some(id)).then_some(id);
    match made {
        Ok(made) => Ok((made, id)),
        Err(e) => {
            if let Some(id) = id {
                id.close_if_unclaimed();
            }
            Err(e)
        }
    }
}

/// The acquire and release calls of `cl_khr_external_memory`, for one context's platform.
#[derive(Clone, Copy)]
pub struct MemoryFunctions {
    acquire: EnqueueExternalMemObjects,
    release: EnqueueExternalMemObjects,
}

impl MemoryFunctions {
    /// Loads them, after checking that the device lists [`MEMORY_EXTENSIONS`].
    pub fn load(context: &Context) -> Result<Self> {
        let missing = missing(context, &MEMORY_EXTENSIONS);
        if !missing.is_empty() {
            return Err(Error::Unsupported(format!(
                "{} does not offer {}",
                context.info().label(),
                missing.join(", ")
            )));
        }
        // SAFETY: the types are those of the cl_khr_external_memory specification.
        unsafe {
            Ok(Self {
                acquire: lookup(context, c"clEnqueueAcquireExternalMemObjectsKHR")?,
                release: lookup(context, c"clEnqueueReleaseExternalMemObjectsKHR")?,
            })
        }
    }
}

/// A buffer whose memory another API allocated and exported as an opaque fd.
pub struct ImportedBuffer<T: bytemuck::Pod> {
    // Field order is drop order: the buffer is released before the duplicate is checked.
    buffer: DeviceBuffer<T>,
    _file: Duplicate,
    functions: MemoryFunctions,
    acquired: bool,
}

impl<T: bytemuck::Pod> ImportedBuffer<T> {
    /// Imports `len` values from the memory `fd` names (an allocation of at least
    /// `len × size_of::<T>()` bytes) into `context`, for its device only.
    pub fn import(
        context: &Context,
        functions: MemoryFunctions,
        fd: &OwnedFd,
        len: usize,
    ) -> Result<Self> {
        let bytes = len.max(1) * size_of::<T>();
        let (mem, file) = import_duplicate(fd, |number| {
            let properties: [cl_mem_properties; 6] = [
                CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR,
                number as cl_mem_properties,
                CL_MEM_DEVICE_HANDLE_LIST_KHR,
                context.device().id() as cl_mem_properties,
                CL_MEM_DEVICE_HANDLE_LIST_END_KHR,
                0,
            ];
            // SAFETY: a 0-terminated property list naming an open fd and this context's device.
            unsafe {
                cl3::memory::create_buffer_with_properties(
                    context.cl_context().get(),
                    properties.as_ptr(),
                    CL_MEM_READ_WRITE,
                    bytes,
                    ptr::null_mut(),
                )
            }
            .map_err(ClError)
            .during(format!(
                "clCreateBufferWithProperties (opaque fd, {bytes} bytes)"
            ))
        })?;
        // SAFETY: a buffer of `bytes` just created in `context`; the DeviceBuffer releases it.
        let buffer = unsafe { DeviceBuffer::from_raw(context, mem, len) };
        Ok(Self {
            buffer,
            _file: Duplicate(file),
            functions,
            acquired: false,
        })
    }

    /// The buffer kernels use, between [`acquire`](Self::acquire) and
    /// [`release`](Self::release).
    pub fn buffer_mut(&mut self) -> &mut DeviceBuffer<T> {
        &mut self.buffer
    }

    /// The buffer, for reading.
    pub fn buffer(&self) -> &DeviceBuffer<T> {
        &self.buffer
    }

    fn enqueue(&self, call: EnqueueExternalMemObjects, name: &str) -> Result<()> {
        let buffer = self.buffer();
        let mem = buffer.cl_mem();
        // SAFETY: one live mem object of this queue's context; no wait list; no event back.
        let code = unsafe {
            call(
                buffer.context().queue().get(),
                1,
                &mem,
                0,
                ptr::null(),
                ptr::null_mut(),
            )
        };
        check(code, name)
    }

    /// Enqueues `clEnqueueAcquireExternalMemObjectsKHR`: kernels enqueued after it may use the
    /// buffer.
    pub fn acquire(&mut self) -> Result<()> {
        if !self.acquired {
            self.enqueue(
                self.functions.acquire,
                "clEnqueueAcquireExternalMemObjectsKHR",
            )?;
            self.acquired = true;
        }
        Ok(())
    }

    /// Enqueues `clEnqueueReleaseExternalMemObjectsKHR`: the other API may use the memory once
    /// the queue reached it.
    pub fn release(&mut self) -> Result<()> {
        if self.acquired {
            self.enqueue(
                self.functions.release,
                "clEnqueueReleaseExternalMemObjectsKHR",
            )?;
            self.acquired = false;
        }
        Ok(())
    }

    /// Whether the buffer is acquired.
    pub fn is_acquired(&self) -> bool {
        self.acquired
    }
}

impl<T: bytemuck::Pod> Drop for ImportedBuffer<T> {
    fn drop(&mut self) {
        if self.acquired {
            // Best effort: a buffer must not be released while acquired.
            let _ = self.release();
            let _ = self.buffer.context().finish();
        }
        // The fields drop next: the buffer, then the duplicate's check.
    }
}

/// A binary semaphore another API exported, imported into one context.
pub struct ImportedSemaphore {
    semaphore: cl_semaphore_khr,
    /// Checked after `Drop` released the semaphore.
    _file: Duplicate,
    queue: cl_command_queue,
    // Keeps the queue and context alive while the semaphore is.
    context: Context,
    wait: EnqueueSemaphores,
    signal: EnqueueSemaphores,
    release: ReleaseSemaphore,
}

impl ImportedSemaphore {
    /// Imports the semaphore `fd` names into `context`, after checking that the device lists
    /// [`SEMAPHORE_EXTENSIONS`].
    pub fn import(context: &Context, fd: &OwnedFd) -> Result<Self> {
        let missing = missing(context, &SEMAPHORE_EXTENSIONS);
        if !missing.is_empty() {
            return Err(Error::Unsupported(format!(
                "{} does not offer {}",
                context.info().label(),
                missing.join(", ")
            )));
        }
        // SAFETY: the types are those of the cl_khr_semaphore specification.
        let (create, wait, signal, release) = unsafe {
            (
                lookup::<CreateSemaphore>(context, c"clCreateSemaphoreWithPropertiesKHR")?,
                lookup::<EnqueueSemaphores>(context, c"clEnqueueWaitSemaphoresKHR")?,
                lookup::<EnqueueSemaphores>(context, c"clEnqueueSignalSemaphoresKHR")?,
                lookup::<ReleaseSemaphore>(context, c"clReleaseSemaphoreKHR")?,
            )
        };
        let (semaphore, file) = import_duplicate(fd, |number| {
            let properties: [cl_semaphore_properties_khr; 7] = [
                CL_SEMAPHORE_TYPE_KHR,
                CL_SEMAPHORE_TYPE_BINARY_KHR,
                CL_SEMAPHORE_HANDLE_OPAQUE_FD_KHR,
                number as cl_semaphore_properties_khr,
                CL_SEMAPHORE_DEVICE_HANDLE_LIST_KHR,
                context.device().id() as cl_semaphore_properties_khr,
                CL_SEMAPHORE_DEVICE_HANDLE_LIST_END_KHR,
            ];
            let mut list = properties.to_vec();
            list.push(0);
            let mut code = 0;
            // SAFETY: a 0-terminated property list naming an open fd and this context's device.
            let semaphore = unsafe { create(context.cl_context().get(), list.as_ptr(), &mut code) };
            check(code, "clCreateSemaphoreWithPropertiesKHR (opaque fd)")?;
            Ok(semaphore)
        })?;
        Ok(Self {
            semaphore,
            _file: Duplicate(file),
            queue: context.queue().get(),
            context: context.clone(),
            wait,
            signal,
            release,
        })
    }

    fn enqueue(&self, call: EnqueueSemaphores, name: &str) -> Result<()> {
        // SAFETY: a live semaphore of this queue's context; binary, so no payload.
        let code = unsafe {
            call(
                self.queue,
                1,
                &self.semaphore,
                ptr::null(),
                0,
                ptr::null(),
                ptr::null_mut(),
            )
        };
        check(code, name)
    }

    /// Enqueues a wait: later commands start once another API signalled the semaphore.
    pub fn wait(&self) -> Result<()> {
        self.enqueue(self.wait, "clEnqueueWaitSemaphoresKHR")
    }

    /// Enqueues a signal once earlier commands are done.
    pub fn signal(&self) -> Result<()> {
        self.enqueue(self.signal, "clEnqueueSignalSemaphoresKHR")
    }

    /// The context whose queue waits for and signals the semaphore.
    pub fn context(&self) -> &Context {
        &self.context
    }
}

impl Drop for ImportedSemaphore {
    fn drop(&mut self) {
        let _ = self.context.finish();
        // SAFETY: the semaphore is released once, here, with no command left that uses it.
        unsafe { (self.release)(self.semaphore) };
    }
}

fn check(code: cl_int, call: &str) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(ClError(code)).during(call)
    }
}
