//! What every GL context snowsim opens provides: the glow function table, the raw handles that
//! OpenCL needs to share buffers with it, and a description for the log.

use std::ffi::c_void;
use std::fmt;
use std::rc::Rc;

use glow::HasContext;
use glutin::context::{
    ContextApi, ContextAttributes, ContextAttributesBuilder, GlProfile, Version,
};

/// Core-profile versions tried in order; the first one the driver accepts is used.
///
/// llvmpipe refuses an explicit 4.6 request but gives 4.5 for 4.5 or 3.3; shaders need 3.3.
pub const GL_VERSIONS: [(u8, u8); 3] = [(4, 6), (4, 5), (3, 3)];

/// Context attributes for one entry of [`GL_VERSIONS`].
pub(crate) fn core_attributes(
    (major, minor): (u8, u8),
    window: Option<raw_window_handle::RawWindowHandle>,
) -> ContextAttributes {
    ContextAttributesBuilder::new()
        .with_profile(GlProfile::Core)
        .with_context_api(ContextApi::OpenGl(Some(Version::new(major, minor))))
        .build(window)
}

/// The window-system API behind a GL context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlApi {
    /// EGL (headless device platform, or X11 through EGL).
    Egl,
    /// GLX on X11.
    Glx,
}

/// Raw handles of a current GL context, as `cl_khr_gl_sharing` context properties need them.
///
/// `display` is the `EGLDisplay` or the X11 `Display*`; `context` the `EGLContext` or
/// `GLXContext`. They stay valid as long as the context that produced them.
#[derive(Clone, Copy, Debug)]
pub struct GlHandles {
    /// Which API the handles belong to.
    pub api: GlApi,
    /// The raw display.
    pub display: *const c_void,
    /// The raw context.
    pub context: *const c_void,
}

/// Strings the driver reports about a context.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct GlInfo {
    /// `GL_VERSION`.
    pub version: String,
    /// `GL_RENDERER`, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub renderer: String,
    /// `GL_VENDOR`.
    pub vendor: String,
    /// How the context was made, e.g. `EGL device platform, surfaceless, 640x480 FBO`.
    pub platform: String,
}

impl GlInfo {
    /// Reads the strings of the current context.
    pub(crate) fn query(gl: &glow::Context, platform: String) -> Self {
        // SAFETY: string queries on the current context.
        unsafe {
            Self {
                version: gl.get_parameter_string(glow::VERSION),
                renderer: gl.get_parameter_string(glow::RENDERER),
                vendor: gl.get_parameter_string(glow::VENDOR),
                platform,
            }
        }
    }
}

impl fmt::Display for GlInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "OpenGL {} on {} ({}), {}",
            self.version, self.renderer, self.vendor, self.platform
        )
    }
}

/// A current GL context handed to whoever builds on it (the renderer, the interop).
#[derive(Clone)]
pub struct GlSetup {
    /// The GL functions.
    pub gl: Rc<glow::Context>,
    /// Raw handles for OpenCL sharing.
    pub handles: GlHandles,
    /// What the driver said about the context.
    pub info: GlInfo,
    /// The context's function loader, for entry points glow does not wrap (the interop's
    /// `GL_EXT_memory_object_fd` and `GL_EXT_semaphore_fd`).
    pub proc_address: ProcAddress,
}

/// Looks up a GL function of the current context by name; null when the driver lacks it.
pub type ProcAddress = Rc<dyn Fn(&std::ffi::CStr) -> *const c_void>;
