//! Rendering with no window: an EGL context on the EGL device platform, made current with no
//! surface, drawing into an offscreen framebuffer that frames are read back from.
//!
//! No X server or Wayland compositor is involved, so this works on CI machines and on GPU
//! servers. On a machine with several EGL devices, a hardware device is preferred to Mesa's
//! software one (`EGL_MESA_device_software`); set `SNOWSIM_EGL_DEVICE=N` to pick the N-th device
//! that `eglQueryDevicesEXT` lists. On NVIDIA machines with glvnd, EGL must find NVIDIA's vendor
//! library: `__EGL_VENDOR_LIBRARY_FILENAMES=/usr/share/glvnd/egl_vendor.d/10_nvidia.json`.

use std::rc::Rc;

use glow::HasContext;
use glutin::api::egl::context::PossiblyCurrentContext;
use glutin::api::egl::device::Device;
use glutin::api::egl::display::Display;
use glutin::config::{ConfigSurfaceTypes, ConfigTemplateBuilder};
use glutin::context::{AsRawContext, RawContext};
use glutin::display::{AsRawDisplay, GlDisplay, RawDisplay};

use super::error::{Error, Result};
use super::gl_context::{GL_VERSIONS, GlApi, GlHandles, GlInfo, GlSetup, core_attributes};

/// Environment variable choosing the EGL device by its position in `eglQueryDevicesEXT`.
pub const EGL_DEVICE_ENV: &str = "SNOWSIM_EGL_DEVICE";

/// Largest framebuffer side accepted, in pixels.
pub const MAX_SIDE: u32 = 16384;

/// A current, surfaceless EGL context with a bound offscreen framebuffer (RGBA8 colour and a
/// 32-bit float depth buffer, `DEPTH_COMPONENT32F`) of a fixed size.
///
/// Float depth keeps the depth the splat composite writes (`gl_FragDepth`, the float the
/// OpenCL kernel computed) and the terrain's exactly as computed, with no rounding to 24-bit
/// fixed point in between; a window's default framebuffer gets the 24-bit depth its GL config
/// offers (see `window.rs`), where both are rounded the same way.
pub struct Headless {
    setup: GlSetup,
    size: (u32, u32),
    framebuffer: glow::Framebuffer,
    renderbuffers: [glow::Renderbuffer; 2],
    // Dropped last: the GL objects above are deleted in `drop` while it is current.
    _context: PossiblyCurrentContext,
    _display: Display,
}

impl Headless {
    /// Opens the EGL device, creates a core context (trying [`GL_VERSIONS`]) and a
    /// `width × height` framebuffer, and leaves the framebuffer bound.
    pub fn new(width: u32, height: u32) -> Result<Self> {
        Self::for_opencl(width, height, None)
    }

    /// As [`new`](Self::new), on the EGL device that is the OpenCL device `cl` where one
    /// matches it (the same UUID or PCI address, [`super::egl_devices::matching`]), so that
    /// the buffers the two APIs share live on one GPU; `SNOWSIM_EGL_DEVICE` still decides
    /// where it is set.
    pub fn for_opencl(width: u32, height: u32, cl: Option<&crate::cl::DeviceInfo>) -> Result<Self> {
        check_size(width, height)?;
        let (device, label) = choose_device(cl)?;
        // SAFETY: no raw display is passed; glutin opens the device's platform display.
        let display = unsafe { Display::with_device(&device, None) }
            .map_err(|e| Error::Egl(e.to_string()))?;
        let template = ConfigTemplateBuilder::new()
            .with_surface_type(ConfigSurfaceTypes::empty())
            .build();
        // SAFETY: the template names no native window.
        let config = unsafe { display.find_configs(template) }
            .map_err(|e| Error::Egl(format!("eglChooseConfig: {e}")))?
            .next()
            .ok_or_else(|| Error::Egl("no EGL config without a surface".into()))?;
        let mut failures = Vec::new();
        let mut current = None;
        for version in GL_VERSIONS {
            // SAFETY: the config comes from this display; no window handle.
            match unsafe { display.create_context(&config, &core_attributes(version, None)) } {
                Ok(context) => match context.make_current_surfaceless() {
                    Ok(context) => {
                        current = Some(context);
                        break;
                    }
                    Err(e) => failures.push(format!("{}.{}: {e}", version.0, version.1)),
                },
                Err(e) => failures.push(format!("{}.{}: {e}", version.0, version.1)),
            }
        }
        let context = current.ok_or_else(|| Error::NoContext(failures.join("; ")))?;
        // SAFETY: the context is current on this thread; glutin resolves GL symbols through EGL.
        let gl = unsafe {
            glow::Context::from_loader_function_cstr(|name| display.get_proc_address(name))
        };
        let handles = match (context.raw_context(), display.raw_display()) {
            (RawContext::Egl(context), RawDisplay::Egl(display)) => GlHandles {
                api: GlApi::Egl,
                display,
                context,
            },
            _ => return Err(Error::Egl("glutin returned a non-EGL context".into())),
        };
        let (framebuffer, renderbuffers) = create_framebuffer(&gl, width, height)?;
        let info = GlInfo::query(
            &gl,
            format!("EGL device platform ({label}), surfaceless, {width}x{height} framebuffer"),
        );
        Ok(Self {
            setup: GlSetup {
                gl: Rc::new(gl),
                handles,
                info,
                proc_address: {
                    let display = display.clone();
                    Rc::new(move |name| display.get_proc_address(name))
                },
            },
            size: (width, height),
            framebuffer,
            renderbuffers,
            _context: context,
            _display: display,
        })
    }

    /// The context for the renderer and the interop.
    pub fn setup(&self) -> &GlSetup {
        &self.setup
    }

    /// Framebuffer size in pixels.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// Binds the offscreen framebuffer for drawing and reading (the renderer does not unbind
    /// it, but a caller that binds another one can restore it here).
    pub fn bind(&self) {
        // SAFETY: the framebuffer belongs to the current context.
        unsafe {
            self.setup
                .gl
                .bind_framebuffer(glow::FRAMEBUFFER, Some(self.framebuffer))
        };
    }
}

impl Drop for Headless {
    fn drop(&mut self) {
        let gl = &self.setup.gl;
        // SAFETY: the objects belong to this context, which is still current.
        unsafe {
            gl.bind_framebuffer(glow::FRAMEBUFFER, None);
            gl.delete_framebuffer(self.framebuffer);
            for rb in self.renderbuffers {
                gl.delete_renderbuffer(rb);
            }
        }
    }
}

/// Checks a framebuffer or window size.
pub fn check_size(width: u32, height: u32) -> Result<()> {
    if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
        return Err(Error::InvalidParameter(format!(
            "frame size {width}x{height} must be between 1x1 and {MAX_SIDE}x{MAX_SIDE}"
        )));
    }
    Ok(())
}

/// The EGL device to render on and a label for it: `SNOWSIM_EGL_DEVICE`'s, else the one that
/// matches the OpenCL device `cl`, else the first hardware device.
fn choose_device(cl: Option<&crate::cl::DeviceInfo>) -> Result<(Device, String)> {
    let mut devices: Vec<Device> = Device::query_devices()
        .map_err(|e| Error::Egl(format!("eglQueryDevicesEXT: {e}")))?
        .collect();
    if devices.is_empty() {
        return Err(Error::Egl("eglQueryDevicesEXT lists no device".into()));
    }
    let software = |d: &Device| d.extensions().contains("EGL_MESA_device_software");
    let index = match std::env::var(EGL_DEVICE_ENV) {
        Ok(value) => {
            let index: usize = value.trim().parse().map_err(|_| {
                Error::InvalidParameter(format!("{EGL_DEVICE_ENV}={value} is not an index"))
            })?;
            if index >= devices.len() {
                return Err(Error::InvalidParameter(format!(
                    "{EGL_DEVICE_ENV}={index}, but EGL lists {} device(s)",
                    devices.len()
                )));
            }
            index
        }
        Err(_) => cl
            .and_then(|cl| super::egl_devices::matching(cl, &super::egl_devices::list()))
            .filter(|&i| i < devices.len())
            .unwrap_or_else(|| devices.iter().position(|d| !software(d)).unwrap_or(0)),
    };
    let device = devices.swap_remove(index);
    let mut label = format!("device {index}");
    if let Some(name) = device.name().or(device.vendor()) {
        label.push_str(&format!(": {name}"));
    }
    if software(&device) {
        label.push_str(", software");
    }
    Ok((device, label))
}

fn create_framebuffer(
    gl: &glow::Context,
    width: u32,
    height: u32,
) -> Result<(glow::Framebuffer, [glow::Renderbuffer; 2])> {
    fn call(call: &'static str) -> impl Fn(String) -> Error {
        move |reason| Error::Gl {
            call: call.to_string(),
            reason,
        }
    }
    // SAFETY: object creation and binding on the current context; sizes were checked.
    unsafe {
        let framebuffer = gl.create_framebuffer().map_err(call("glGenFramebuffers"))?;
        let colour = gl
            .create_renderbuffer()
            .map_err(call("glGenRenderbuffers"))?;
        let depth = gl
            .create_renderbuffer()
            .map_err(call("glGenRenderbuffers"))?;
        gl.bind_framebuffer(glow::FRAMEBUFFER, Some(framebuffer));
        gl.bind_renderbuffer(glow::RENDERBUFFER, Some(colour));
        gl.renderbuffer_storage(glow::RENDERBUFFER, glow::RGBA8, width as i32, height as i32);
        gl.framebuffer_renderbuffer(
            glow::FRAMEBUFFER,
            glow::COLOR_ATTACHMENT0,
            glow::RENDERBUFFER,
            Some(colour),
        );
        gl.bind_renderbuffer(glow::RENDERBUFFER, Some(depth));
        gl.renderbuffer_storage(
            glow::RENDERBUFFER,
            glow::DEPTH_COMPONENT32F,
            width as i32,
            height as i32,
        );
        gl.framebuffer_renderbuffer(
            glow::FRAMEBUFFER,
            glow::DEPTH_ATTACHMENT,
            glow::RENDERBUFFER,
            Some(depth),
        );
        gl.bind_renderbuffer(glow::RENDERBUFFER, None);
        let status = gl.check_framebuffer_status(glow::FRAMEBUFFER);
        if status != glow::FRAMEBUFFER_COMPLETE {
            gl.bind_framebuffer(glow::FRAMEBUFFER, None);
            gl.delete_framebuffer(framebuffer);
            gl.delete_renderbuffer(colour);
            gl.delete_renderbuffer(depth);
            return Err(Error::Gl {
                call: format!("glCheckFramebufferStatus ({width}x{height})"),
                reason: format!("framebuffer incomplete, status 0x{status:x}"),
            });
        }
        Ok((framebuffer, [colour, depth]))
    }
}
