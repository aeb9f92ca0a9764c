//! OpenCL → OpenGL: how the buffers the kernels write reach the renderer (thesis §4.2, §6.3).
//! This module only moves buffers; the frame that fills them lives in [`crate::sim`].
//!
//! Two paths, chosen with `--interop auto|share|copy`:
//!
//! - **share** (`cl_khr_gl_sharing`): the OpenCL context is created against the current GL
//!   context (`CL_GL_CONTEXT_KHR` with `CL_EGL_DISPLAY_KHR` or `CL_GLX_DISPLAY_KHR`), the
//!   particle buffer is the GL buffer itself (`clCreateFromGLBuffer`), and each frame does
//!   `glFinish` → `clEnqueueAcquireGLObjects` → kernels → `clEnqueueReleaseGLObjects` →
//!   `clFinish` before GL draws. No byte moves.
//! - **copy**: the kernels write a device buffer; each frame it is read once, blocking,
//!   straight into the GL buffer mapped for writing (`glMapBufferRange` with
//!   `MAP_INVALIDATE_BUFFER_BIT`), and GL uploads it. This works with every OpenCL device,
//!   including CPU drivers and GPUs other than the one that renders.
//!
//! `auto` picks share only when the device lists `cl_khr_gl_sharing` **and**
//! `clGetGLContextInfoKHR(CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR)` names this very device as the
//! one behind the GL context; otherwise copy, and [`InteropChoice`] says why. Sharing is decided
//! from the extension string *before* any GL property reaches OpenCL: PoCL 3.1 accepts GL
//! properties in `clCreateContext`, and then its `clCreateFromGLBuffer` stub kills the process.
//!
//! # A zero-copy alternative on NVIDIA: `cl_khr_external_memory_opaque_fd`
//!
//! NVIDIA's OpenCL (driver 580 on the H100) lists no `cl_khr_gl_sharing` (and `clCreateContext`
//! with GL properties fails there with `CL_INVALID_OPERATION`), but it lists
//! `cl_khr_external_memory`, `cl_khr_external_memory_opaque_fd` and
//! `cl_khr_external_semaphore_opaque_fd`. What we found (from the Khronos specifications; not
//! run, since no machine here has both):
//!
//! - Both sides can only **import**. `cl_khr_external_memory` adds properties to
//!   `clCreateBufferWithProperties` to import memory "exported by other APIs"
//!   (`CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR` + the fd, with `CL_MEM_DEVICE_HANDLE_LIST_KHR`),
//!   and `GL_EXT_memory_object_fd` imports with `glImportMemoryFdEXT` +
//!   `glBufferStorageMemEXT`. Neither OpenCL nor GL exports an fd, so a third API must
//!   allocate: **Vulkan** (`VK_KHR_external_memory_fd`: allocate with
//!   `VkExportMemoryAllocateInfo{OPAQUE_FD}`, call `vkGetMemoryFdKHR` once per importer,
//!   since each import takes ownership of its fd).
//! - Ownership hand-off: OpenCL must bracket its use with
//!   `clEnqueueAcquireExternalMemObjectsKHR` / `clEnqueueReleaseExternalMemObjectsKHR`;
//!   ordering with GL needs either `glFinish` + `clFinish` (as the share path does) or
//!   semaphores exported by Vulkan and imported with `cl_khr_external_semaphore_opaque_fd` and
//!   `GL_EXT_semaphore_fd`.
//! - All three must be the same GPU: compare `CL_DEVICE_UUID_KHR` (`cl_khr_device_uuid`),
//!   `GL_DEVICE_UUID_EXT` and Vulkan's `VkPhysicalDeviceIDProperties::deviceUUID`.
//! - In Rust: opencl3's `cl_khr_external_memory` feature (on under `dynamic`) has the calls;
//!   glow 0.18 does not wrap `GL_EXT_memory_object`, so its functions would be loaded by hand
//!   through `get_proc_address`; Vulkan needs `ash` (not a dependency yet). The headless EGL
//!   context on NVIDIA would also have to list `GL_EXT_memory_object_fd` (to be checked there).
//! - What it would save: copy mode moves 16 bytes per particle over PCIe twice per frame (read
//!   back to the host, then GL's upload): 2 × 64 MiB at 2^22 particles. The measured cost is in
//!   `benches/RESULTS.md`.

mod link;

use std::fmt;
use std::str::FromStr;

use opencl3::types::cl_context_properties;

pub use link::GlLink;

use crate::cl::{self, Context, ContextOptions, DeviceEntry, DeviceInfo};
use crate::render::{GlApi, GlSetup};

/// The OpenCL extension the share path needs.
pub const GL_SHARING_EXTENSION: &str = "cl_khr_gl_sharing";

/// What went wrong between OpenCL and OpenGL.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OpenCL layer failed.
    #[error(transparent)]
    Cl(#[from] cl::Error),
    /// The renderer failed.
    #[error(transparent)]
    Render(#[from] crate::render::Error),
    /// `--interop share` on a device without `cl_khr_gl_sharing`.
    #[error(
        "--interop share needs the OpenCL extension cl_khr_gl_sharing, which {device} does not \
         offer (its kernels cannot write GL buffers directly); use --interop copy, or auto to \
         pick the best path"
    )]
    ShareUnsupported {
        /// The device, as `snowsim devices` labels it.
        device: String,
    },
    /// `--interop share`, but the GL context cannot be shared with this device.
    #[error("--interop share is not possible with {device}: {reason}; use --interop copy")]
    ShareImpossible {
        /// The device label.
        device: String,
        /// Why (another GPU renders, the driver refused the context, …).
        reason: String,
    },
    /// An invariant of this module was broken (a bug).
    #[error("internal interop error: {0}")]
    Internal(String),
}

/// Result of the interop.
pub type Result<T> = std::result::Result<T, Error>;

/// The interop path the user asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InteropMode {
    /// Share when the device can, else copy.
    #[default]
    Auto,
    /// Share, or fail.
    Share,
    /// Always copy.
    Copy,
}

impl FromStr for InteropMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "share" => Ok(Self::Share),
            "copy" => Ok(Self::Copy),
            _ => Err(format!("`{s}` is not an interop mode (auto, share, copy)")),
        }
    }
}

impl fmt::Display for InteropMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Share => "share",
            Self::Copy => "copy",
        })
    }
}

/// The interop path in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transfer {
    /// `cl_khr_gl_sharing`: kernels write the GL buffer.
    Share,
    /// Read back and upload every frame.
    Copy,
}

impl fmt::Display for Transfer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Share => "share",
            Self::Copy => "copy",
        })
    }
}

/// Which path was chosen, from what request, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InteropChoice {
    /// The path in use.
    pub transfer: Transfer,
    /// What the user asked for.
    pub requested: InteropMode,
    /// Why this path.
    pub reason: String,
}

impl fmt::Display for InteropChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (requested {}: {})",
            self.transfer, self.requested, self.reason
        )
    }
}

/// Refuses `--interop share` on a device without `cl_khr_gl_sharing`, before any GL context
/// exists (so the error comes at once, and no GL property ever reaches a driver like PoCL).
pub fn check_request(requested: InteropMode, info: &DeviceInfo) -> Result<()> {
    if requested == InteropMode::Share && !info.has_extension(GL_SHARING_EXTENSION) {
        return Err(Error::ShareUnsupported {
            device: info.label(),
        });
    }
    Ok(())
}

/// The `cl_context_properties` that tie an OpenCL context to the current GL context.
fn gl_properties(entry: &DeviceEntry, gl: &GlSetup) -> Result<Vec<cl_context_properties>> {
    let platform = entry.device.platform().map_err(|code| cl::Error::Api {
        call: "clGetDeviceInfo(PLATFORM)".into(),
        code,
    })?;
    let display_key = match gl.handles.api {
        GlApi::Egl => cl3::gl::CL_EGL_DISPLAY_KHR,
        GlApi::Glx => cl3::gl::CL_GLX_DISPLAY_KHR,
    };
    Ok(vec![
        cl3::gl::CL_GL_CONTEXT_KHR,
        gl.handles.context as cl_context_properties,
        display_key,
        gl.handles.display as cl_context_properties,
        cl3::context::CL_CONTEXT_PLATFORM,
        platform as cl_context_properties,
        0,
    ])
}

/// Opens the OpenCL context on `entry` for the GL context `gl`, choosing the path as the
/// module documentation says: a plain [`Context`] for copy, one created against the GL context
/// for share. Everything of the frame (gml, the sort, the simulation's kernels) then runs on it.
pub fn open(
    entry: &DeviceEntry,
    requested: InteropMode,
    gl: &GlSetup,
) -> Result<(Context, InteropChoice)> {
    let choice = |transfer, reason: String| InteropChoice {
        transfer,
        requested,
        reason,
    };
    let label = entry.info.label();
    if requested == InteropMode::Copy {
        return Ok((
            Context::new(entry)?,
            choice(Transfer::Copy, "host copy as asked".into()),
        ));
    }
    check_request(requested, &entry.info)?;
    if !entry.info.has_extension(GL_SHARING_EXTENSION) {
        return Ok((
            Context::new(entry)?,
            choice(
                Transfer::Copy,
                format!("{label} does not offer {GL_SHARING_EXTENSION}"),
            ),
        ));
    }
    // The device lists cl_khr_gl_sharing, so asking the driver about the GL context is safe.
    let properties = gl_properties(entry, gl)?;
    let refuse = |reason: String| -> Result<(Context, InteropChoice)> {
        if requested == InteropMode::Share {
            Err(Error::ShareImpossible {
                device: label.clone(),
                reason,
            })
        } else {
            Ok((Context::new(entry)?, choice(Transfer::Copy, reason)))
        }
    };
    match opencl3::context::get_current_device_for_gl_context_khr(&properties) {
        Ok(device) if device == entry.device.id() => {}
        Ok(device) if device.is_null() => {
            return refuse(format!(
                "the driver names no OpenCL device behind the GL context ({})",
                gl.info.renderer
            ));
        }
        Ok(_) => {
            return refuse(format!(
                "the GL context renders on another device ({})",
                gl.info.renderer
            ));
        }
        Err(code) => {
            return refuse(format!(
                "clGetGLContextInfoKHR failed ({code}) for the GL context on {}",
                gl.info.renderer
            ));
        }
    }
    let options = ContextOptions {
        gl_sharing: Some(properties),
        ..ContextOptions::default()
    };
    match Context::with_options(entry, &options) {
        Ok(context) => Ok((
            context,
            choice(
                Transfer::Share,
                format!("{label} offers {GL_SHARING_EXTENSION} and renders the GL context"),
            ),
        )),
        Err(e) => refuse(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for mode in [InteropMode::Auto, InteropMode::Share, InteropMode::Copy] {
            assert_eq!(mode.to_string().parse::<InteropMode>(), Ok(mode));
        }
        assert_eq!("COPY".parse::<InteropMode>(), Ok(InteropMode::Copy));
        assert!("zero".parse::<InteropMode>().is_err());
    }
}
