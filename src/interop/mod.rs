//! OpenCL → OpenGL: how the buffers the kernels write reach the renderer (thesis §4.2, §6.3):
//! the particles' render buffer, the snow laid on each ground vertex, the wind view's samples
//! and the splat image, each a [`GlLink`]. This module only moves buffers; the frame that fills
//! them lives in [`crate::sim`].
//!
//! Three paths, chosen with `--interop auto|share|external|copy`:
//!
//! - **share** (`cl_khr_gl_sharing`): the OpenCL context is created against the current GL
//!   context (`CL_GL_CONTEXT_KHR` with `CL_EGL_DISPLAY_KHR` or `CL_GLX_DISPLAY_KHR`), the
//!   particle buffer is the GL buffer itself (`clCreateFromGLBuffer`), and each frame does
//!   `glFinish` → `clEnqueueAcquireGLObjects` → kernels → `clEnqueueReleaseGLObjects` →
//!   `clFinish` before GL draws. No byte moves.
//! - **external** (`cl_khr_external_memory_opaque_fd` + `GL_EXT_memory_object_fd`, for GPUs
//!   such as NVIDIA's whose OpenCL has no GL sharing): Vulkan allocates each buffer as
//!   exportable device memory, OpenCL and OpenGL both import it, and one pair of Vulkan
//!   semaphores orders them for all of a session's buffers ([`external`] has the protocol, the
//!   fd ownership and the destruction order; [`Interop::hand_over`] and [`Interop::drawn`]
//!   are the frame's two crossings). No byte moves either.
//! - **copy**: the kernels write a device buffer; each frame it is read once, blocking,
//!   straight into the GL buffer mapped for writing (`glMapBufferRange` with
//!   `MAP_INVALIDATE_BUFFER_BIT`), and GL uploads it. This works with every OpenCL device,
//!   including CPU drivers and GPUs other than the one that renders.
//!
//! `auto` picks share only when the device lists `cl_khr_gl_sharing` **and**
//! `clGetGLContextInfoKHR(CL_CURRENT_DEVICE_FOR_GL_CONTEXT_KHR)` names this very device as the
//! one behind the GL context; else external when OpenCL and OpenGL list the external-memory
//! extensions and the three APIs name the same GPU; otherwise copy, and [`InteropChoice`] says
//! why. Everything is decided from extension strings and UUID queries *before* any GL property
//! or foreign handle reaches OpenCL: PoCL 3.1 accepts GL properties in `clCreateContext`, and
//! then its `clCreateFromGLBuffer` stub kills the process.

pub mod external;
pub mod gl_memory;
mod link;
pub mod vulkan;

use std::fmt;
use std::rc::Rc;
use std::str::FromStr;

use opencl3::types::cl_context_properties;

pub use external::{External, Sync};
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
    /// `--interop external` where a piece is missing (names the extension, device or call).
    #[error(
        "--interop external is not possible: {0}; use --interop copy, or auto to pick the best \
         path"
    )]
    ExternalUnsupported(String),
    /// Importing Vulkan's memory or semaphores failed.
    #[error("--interop external: {0}")]
    ExternalImport(String),
    /// Vulkan failed.
    #[error(transparent)]
    Vulkan(#[from] vulkan::VulkanError),
    /// An invariant of this module was broken (a bug).
    #[error("internal interop error: {0}")]
    Internal(String),
}

/// Result of the interop.
pub type Result<T> = std::result::Result<T, Error>;

/// The interop path the user asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InteropMode {
    /// Share when the device can, else external memory, else copy.
    #[default]
    Auto,
    /// Share, or fail.
    Share,
    /// Vulkan-allocated memory imported by both APIs, or fail.
    External,
    /// Always copy.
    Copy,
}

impl FromStr for InteropMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "share" => Ok(Self::Share),
            "external" => Ok(Self::External),
            "copy" => Ok(Self::Copy),
            _ => Err(format!(
                "`{s}` is not an interop mode (auto, share, external, copy)"
            )),
        }
    }
}

impl fmt::Display for InteropMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Share => "share",
            Self::External => "external",
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
    /// Vulkan memory imported by OpenCL and OpenGL: kernels write what GL draws.
    External,
    /// Read back and upload every frame.
    Copy,
}

impl fmt::Display for Transfer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Share => "share",
            Self::External => "external",
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

/// The interop path of one session: what was chosen and why, and for `external` the Vulkan
/// device and entry points that its links share.
#[derive(Clone)]
pub struct Interop {
    choice: InteropChoice,
    external: Option<Rc<External>>,
}

impl Interop {
    /// The path in use, what was asked and why.
    pub fn choice(&self) -> &InteropChoice {
        &self.choice
    }

    /// The path in use.
    pub fn transfer(&self) -> Transfer {
        self.choice.transfer
    }

    /// The shared state of the external path (`None` on the others).
    pub(crate) fn external(&self) -> Option<&Rc<External>> {
        self.external.as_ref()
    }

    /// Whether OpenCL and GL are ordered by semaphores on the GPU (the external path with
    /// semaphores), so that GL may be given a frame's draw calls before the host waits for
    /// the kernels that write what it draws.
    pub fn orders_by_semaphores(&self) -> bool {
        self.external
            .as_ref()
            .is_some_and(|e| *e.sync() == Sync::Semaphores)
    }

    /// Before GL draws: on the external path, hands every buffer OpenCL released since the
    /// last draw to GL at once ([`External::hand_over`]); nothing on the others (their
    /// releases waited).
    pub fn hand_over(&self) -> Result<()> {
        match &self.external {
            Some(external) => external.hand_over(),
            None => Ok(()),
        }
    }

    /// After every frame's draw calls: on the external path, signals OpenCL that GL is done
    /// with the buffers it holds ([`External::drawn`]); nothing on the others.
    pub fn drawn(&self) -> Result<()> {
        match &self.external {
            Some(external) => external.drawn(),
            None => Ok(()),
        }
    }
}

/// Opens the OpenCL context on `entry` for the GL context `gl`, choosing the path as the
/// module documentation says: a plain [`Context`] for copy and external, one created against the
/// GL context for share. Everything of the frame (gml, the sort, the simulation's kernels) then
/// runs on it.
pub fn open(
    entry: &DeviceEntry,
    requested: InteropMode,
    gl: &GlSetup,
) -> Result<(Context, Interop)> {
    let plain = |transfer, reason: String| Interop {
        choice: InteropChoice {
            transfer,
            requested,
            reason,
        },
        external: None,
    };
    let label = entry.info.label();
    match requested {
        InteropMode::Copy => {
            return Ok((
                Context::new(entry)?,
                plain(Transfer::Copy, "host copy as asked".into()),
            ));
        }
        InteropMode::External => {
            let context = Context::new(entry)?;
            let external = External::open(&context, gl)?;
            let reason = external_reason(&external, "as asked");
            return Ok((
                context,
                with_external(plain(Transfer::External, reason), external),
            ));
        }
        InteropMode::Share | InteropMode::Auto => {}
    }
    check_request(requested, &entry.info)?;
    let no_share = match try_share(entry, requested, gl)? {
        Ok(context) => {
            return Ok((
                context,
                plain(
                    Transfer::Share,
                    format!("{label} offers {GL_SHARING_EXTENSION} and renders the GL context"),
                ),
            ));
        }
        Err(reason) => reason,
    };
    // Auto without sharing: external memory where both APIs list it, else copy.
    let context = Context::new(entry)?;
    let mut missing =
        crate::cl::external::missing(&context, &crate::cl::external::MEMORY_EXTENSIONS);
    missing.extend(external::gl_offers(&gl.gl));
    if !missing.is_empty() {
        let reason = format!(
            "{no_share}; no external memory either ({} missing)",
            missing.join(", ")
        );
        return Ok((context, plain(Transfer::Copy, reason)));
    }
    match External::open(&context, gl) {
        Ok(external) => {
            let reason = external_reason(&external, &no_share);
            Ok((
                context,
                with_external(plain(Transfer::External, reason), external),
            ))
        }
        Err(e) => Ok((context, plain(Transfer::Copy, format!("{no_share}; {e}")))),
    }
}

fn with_external(mut interop: Interop, external: External) -> Interop {
    interop.external = Some(Rc::new(external));
    interop
}

fn external_reason(external: &External, why: &str) -> String {
    let sync = match external.sync() {
        Sync::Semaphores => "ordered by Vulkan semaphores".to_string(),
        Sync::Finish(reason) => format!("ordered by clFinish/glFinish ({reason})"),
    };
    format!(
        "{why}; Vulkan on {} allocates, OpenCL and OpenGL import, {sync}",
        external.vulkan_device()
    )
}

/// A GL-sharing context where the device offers it and renders the GL context; else why not
/// (or an error, when share was asked for).
fn try_share(
    entry: &DeviceEntry,
    requested: InteropMode,
    gl: &GlSetup,
) -> Result<std::result::Result<Context, String>> {
    let label = entry.info.label();
    if !entry.info.has_extension(GL_SHARING_EXTENSION) {
        return Ok(Err(format!(
            "{label} does not offer {GL_SHARING_EXTENSION}"
        )));
    }
    // The device lists cl_khr_gl_sharing, so asking the driver about the GL context is safe.
    let properties = gl_properties(entry, gl)?;
    let refuse = |reason: String| -> Result<std::result::Result<Context, String>> {
        if requested == InteropMode::Share {
            Err(Error::ShareImpossible {
                device: label.clone(),
                reason,
            })
        } else {
            Ok(Err(reason))
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
        Ok(context) => Ok(Ok(context)),
        Err(e) => refuse(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for mode in [
            InteropMode::Auto,
            InteropMode::Share,
            InteropMode::External,
            InteropMode::Copy,
        ] {
            assert_eq!(mode.to_string().parse::<InteropMode>(), Ok(mode));
        }
        assert_eq!("COPY".parse::<InteropMode>(), Ok(InteropMode::Copy));
        assert!("zero".parse::<InteropMode>().is_err());
    }
}
