//! OpenGL's side of `--interop external`: `GL_EXT_memory_object_fd` imports memory that Vulkan
//! exported into a buffer object, `GL_EXT_semaphore_fd` imports semaphores. glow does not wrap
//! these, so their entry points are loaded here through the context's loader.
//!
//! `glImportMemoryFdEXT` and `glImportSemaphoreFdEXT` take ownership of the fd when they
//! succeed (the extension specifications say so); on failure the fd is still ours and closed.

use std::ffi::{CStr, c_void};
use std::os::fd::{IntoRawFd, OwnedFd};

use glow::HasContext;

use crate::render::ProcAddress;

use super::{Error, Result};

/// `GL_EXT_memory_object`, `GL_EXT_memory_object_fd`: what OpenGL must offer.
pub const MEMORY_EXTENSIONS: [&str; 2] = ["GL_EXT_memory_object", "GL_EXT_memory_object_fd"];
/// `GL_EXT_semaphore`, `GL_EXT_semaphore_fd`: needed for semaphores, else `glFinish`.
pub const SEMAPHORE_EXTENSIONS: [&str; 2] = ["GL_EXT_semaphore", "GL_EXT_semaphore_fd"];

const DEDICATED_MEMORY_OBJECT_EXT: u32 = 0x9581;
const HANDLE_TYPE_OPAQUE_FD_EXT: u32 = 0x9586;
const NUM_DEVICE_UUIDS_EXT: u32 = 0x9596;
const DEVICE_UUID_EXT: u32 = 0x9597;

type CreateMemoryObjects = unsafe extern "system" fn(i32, *mut u32);
type DeleteMemoryObjects = unsafe extern "system" fn(i32, *const u32);
type MemoryObjectParameteriv = unsafe extern "system" fn(u32, u32, *const i32);
type ImportMemoryFd = unsafe extern "system" fn(u32, u64, u32, i32);
type BufferStorageMem = unsafe extern "system" fn(u32, isize, u32, u64);
type GenSemaphores = unsafe extern "system" fn(i32, *mut u32);
type DeleteSemaphores = unsafe extern "system" fn(i32, *const u32);
type ImportSemaphoreFd = unsafe extern "system" fn(u32, u32, i32);
type SemaphoreOp = unsafe extern "system" fn(u32, u32, *const u32, u32, *const u32, *const u32);
type GetUnsignedBytei = unsafe extern "system" fn(u32, u32, *mut u8);

/// The memory-object entry points.
#[derive(Clone, Copy)]
pub struct MemoryFunctions {
    create: CreateMemoryObjects,
    delete: DeleteMemoryObjects,
    parameter: MemoryObjectParameteriv,
    import: ImportMemoryFd,
    storage: BufferStorageMem,
    uuid: GetUnsignedBytei,
}

/// The semaphore entry points.
#[derive(Clone, Copy)]
pub struct SemaphoreFunctions {
    generate: GenSemaphores,
    delete: DeleteSemaphores,
    import: ImportSemaphoreFd,
    wait: SemaphoreOp,
    signal: SemaphoreOp,
}

/// Looks `name` up and casts it to the function type `F`, or says which is missing.
///
/// # Safety
/// `F` must be the function pointer type of `name` in the GL specification.
unsafe fn lookup<F: Copy>(proc_address: &ProcAddress, name: &CStr) -> Result<F> {
    let pointer = proc_address(name);
    if pointer.is_null() {
        return Err(Error::ExternalUnsupported(format!(
            "the OpenGL driver has no {}",
            name.to_string_lossy()
        )));
    }
    debug_assert_eq!(size_of::<F>(), size_of::<*const c_void>());
    // SAFETY: the caller names the right type; a non-null GL entry point.
    Ok(unsafe { std::mem::transmute_copy::<*const c_void, F>(&pointer) })
}

/// The extensions of `wanted` that the context lacks.
pub fn missing(gl: &glow::Context, wanted: &[&str]) -> Vec<String> {
    let offered = gl.supported_extensions();
    wanted
        .iter()
        .filter(|e| !offered.contains(**e))
        .map(|e| e.to_string())
        .collect()
}

/// Fails naming the extensions of `wanted` that the context lacks.
fn require(gl: &glow::Context, wanted: &[&str]) -> Result<()> {
    let missing = missing(gl, wanted);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::ExternalUnsupported(format!(
            "the OpenGL context lacks {}",
            missing.join(", ")
        )))
    }
}

impl MemoryFunctions {
    /// Loads the entry points, after checking that the context lists the extensions.
    pub fn load(gl: &glow::Context, proc_address: &ProcAddress) -> Result<Self> {
        require(gl, &MEMORY_EXTENSIONS)?;
        // SAFETY: each type matches its entry point in GL_EXT_memory_object(_fd).
        unsafe {
            Ok(Self {
                create: lookup(proc_address, c"glCreateMemoryObjectsEXT")?,
                delete: lookup(proc_address, c"glDeleteMemoryObjectsEXT")?,
                parameter: lookup(proc_address, c"glMemoryObjectParameterivEXT")?,
                import: lookup(proc_address, c"glImportMemoryFdEXT")?,
                storage: lookup(proc_address, c"glBufferStorageMemEXT")?,
                uuid: lookup(proc_address, c"glGetUnsignedBytei_vEXT")?,
            })
        }
    }

    /// The UUIDs of the devices behind the context (`GL_DEVICE_UUID_EXT`).
    pub fn device_uuids(&self, gl: &glow::Context) -> Vec<[u8; 16]> {
        // SAFETY: queries on the current context; each UUID is 16 bytes (GL_UUID_SIZE_EXT).
        unsafe {
            let count = gl.get_parameter_i32(NUM_DEVICE_UUIDS_EXT).max(0) as u32;
            (0..count)
                .map(|i| {
                    let mut uuid = [0u8; 16];
                    (self.uuid)(DEVICE_UUID_EXT, i, uuid.as_mut_ptr());
                    uuid
                })
                .collect()
        }
    }

    /// Imports `fd` (an allocation of `allocation_bytes`, dedicated or not) and makes a new
    /// buffer object of `bytes` stored in it. Returns the memory object and the buffer.
    pub fn import_buffer(
        &self,
        gl: &glow::Context,
        fd: OwnedFd,
        allocation_bytes: u64,
        dedicated: bool,
        bytes: u64,
    ) -> Result<(u32, glow::Buffer)> {
        let size = isize::try_from(bytes)
            .map_err(|_| Error::Internal(format!("{bytes} bytes exceed a GL buffer")))?;
        // SAFETY: GL calls on the current context with the entry points loaded for it; every
        // object created is deleted on the error paths.
        unsafe {
            drain_errors(gl);
            let mut memory = 0u32;
            (self.create)(1, &mut memory);
            let flag = i32::from(dedicated);
            (self.parameter)(memory, DEDICATED_MEMORY_OBJECT_EXT, &flag);
            (self.import)(
                memory,
                allocation_bytes,
                HANDLE_TYPE_OPAQUE_FD_EXT,
                fd_number(&fd),
            );
            if let Some(code) = error(gl) {
                // The import failed: the fd is still ours, and `fd` closes it.
                (self.delete)(1, &memory);
                return Err(Error::ExternalImport(format!(
                    "glImportMemoryFdEXT ({allocation_bytes} bytes, dedicated {dedicated}) \
                     failed with GL error {code:#x}"
                )));
            }
            // GL owns the fd now.
            let _ = fd.into_raw_fd();
            let buffer = match gl.create_buffer() {
                Ok(b) => b,
                Err(e) => {
                    (self.delete)(1, &memory);
                    return Err(Error::ExternalImport(format!("glGenBuffers: {e}")));
                }
            };
            gl.bind_buffer(glow::ARRAY_BUFFER, Some(buffer));
            (self.storage)(glow::ARRAY_BUFFER, size, memory, 0);
            gl.bind_buffer(glow::ARRAY_BUFFER, None);
            if let Some(code) = error(gl) {
                gl.delete_buffer(buffer);
                (self.delete)(1, &memory);
                return Err(Error::ExternalImport(format!(
                    "glBufferStorageMemEXT ({bytes} of {allocation_bytes} bytes) failed with GL \
                     error {code:#x}"
                )));
            }
            Ok((memory, buffer))
        }
    }

    /// Deletes a memory object made by [`import_buffer`](Self::import_buffer) (after its
    /// buffer).
    pub fn delete(&self, memory: u32) {
        // SAFETY: a memory object of the current context.
        unsafe { (self.delete)(1, &memory) };
    }
}

impl SemaphoreFunctions {
    /// Loads the entry points, or says which extension is missing.
    pub fn load(gl: &glow::Context, proc_address: &ProcAddress) -> Result<Self> {
        require(gl, &SEMAPHORE_EXTENSIONS)?;
        // SAFETY: each type matches its entry point in GL_EXT_semaphore(_fd).
        unsafe {
            Ok(Self {
                generate: lookup(proc_address, c"glGenSemaphoresEXT")?,
                delete: lookup(proc_address, c"glDeleteSemaphoresEXT")?,
                import: lookup(proc_address, c"glImportSemaphoreFdEXT")?,
                wait: lookup(proc_address, c"glWaitSemaphoreEXT")?,
                signal: lookup(proc_address, c"glSignalSemaphoreEXT")?,
            })
        }
    }

    /// Imports a semaphore from `fd`; GL owns the fd on success.
    pub fn import(&self, gl: &glow::Context, fd: OwnedFd) -> Result<u32> {
        // SAFETY: GL calls on the current context with the entry points loaded for it.
        unsafe {
            drain_errors(gl);
            let mut semaphore = 0u32;
            (self.generate)(1, &mut semaphore);
            (self.import)(semaphore, HANDLE_TYPE_OPAQUE_FD_EXT, fd_number(&fd));
            if let Some(code) = error(gl) {
                (self.delete)(1, &semaphore);
                return Err(Error::ExternalImport(format!(
                    "glImportSemaphoreFdEXT failed with GL error {code:#x}"
                )));
            }
            let _ = fd.into_raw_fd();
            Ok(semaphore)
        }
    }

    /// Makes GL wait for `semaphore` before it reads `buffers`.
    pub fn wait(&self, semaphore: u32, buffers: &[glow::Buffer]) {
        let names: Vec<u32> = buffers.iter().map(|b| b.0.get()).collect();
        // SAFETY: a semaphore and buffers of the current context; no textures.
        unsafe {
            (self.wait)(
                semaphore,
                names.len() as u32,
                names.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
    }

    /// Makes GL signal `semaphore` once it is done with `buffers`.
    pub fn signal(&self, semaphore: u32, buffers: &[glow::Buffer]) {
        let names: Vec<u32> = buffers.iter().map(|b| b.0.get()).collect();
        // SAFETY: a semaphore and buffers of the current context; no textures.
        unsafe {
            (self.signal)(
                semaphore,
                names.len() as u32,
                names.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
    }

    /// Deletes a semaphore made by [`import`](Self::import).
    pub fn delete(&self, semaphore: u32) {
        // SAFETY: a semaphore of the current context.
        unsafe { (self.delete)(1, &semaphore) };
    }
}

fn fd_number(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}

/// Clears errors left by earlier calls, so that the next check sees only its own.
fn drain_errors(gl: &glow::Context) {
    // SAFETY (the loop's query): error queries on the current context.
    // Bounded: a lost context may report an error for ever.
    for _ in 0..32 {
        if unsafe { gl.get_error() } == glow::NO_ERROR {
            break;
        }
    }
}

fn error(gl: &glow::Context) -> Option<u32> {
    // SAFETY: an error query on the current context.
    let code = unsafe { gl.get_error() };
    (code != glow::NO_ERROR).then_some(code)
}
