//! The interactive window: winit for the window and input, glutin for the GL context (GLX,
//! falling back to EGL, on X11), a [`FrameDriver`] for what is computed and drawn.

use std::num::NonZeroU32;
use std::rc::Rc;
use std::time::Instant;

use glutin::config::{ConfigTemplateBuilder, GlConfig};
use glutin::context::{AsRawContext, NotCurrentGlContext, PossiblyCurrentContext, RawContext};
use glutin::display::{AsRawDisplay, Display, DisplayApiPreference, GlDisplay, RawDisplay};
use glutin::surface::{GlSurface, Surface, SwapInterval, WindowSurface};
use glutin_winit::GlWindow;
use raw_window_handle::{HasDisplayHandle, HasWindowHandle};
use winit::application::ApplicationHandler;
use winit::dpi::{PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, KeyEvent, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{Window, WindowId};

use super::error::{Error, Result};
use super::frame::{Action, FrameDriver, FrameError, FrameStats, RunOptions, RunSummary};
use super::frame::{capture_frame, read_frame, save_png};
use super::gl_context::{GL_VERSIONS, GlApi, GlHandles, GlInfo, GlSetup, core_attributes};
use super::headless::check_size;

/// The keys and mouse controls of the window, as `snowsim run --help` and the README show
/// them.
pub const KEYS_HELP: &str = "\
Window controls:
  left mouse drag        orbit the camera around its target
  mouse wheel, + / -     zoom in / out
  arrows or W A S D      pan the camera target along the ground
  Page Up / Page Down    raise / lower the camera target (also E / C)
  Space                  pause / resume the simulation (drawing goes on)
  .                      step a paused simulation by one frame
  [ / ]                  halve / double time.acceleration (the factor on the snowfall)
  F1                     show / hide the on-screen display (time, snowfall, snow, FPS)
  O                      toggle the snow's sort (partial / off)
  V                      toggle the wind view: lines along the wind, coloured by speed
  P                      toggle the pressure view: squares, yellow low to red high
  U                      toggle the friction velocity view: the ground blue to green below
                         the drift's threshold u*t, yellow at it, red at 3 u*t
  G                      raise the wind's ground by the laid snow now (a ground refresh)
  Y                      toggle vsync
  R                      reset the camera and the particles
  H                      print these controls to the log
  Esc or Q               quit";

/// How the window is opened.
#[derive(Clone, Debug)]
pub struct WindowOptions {
    /// Inner size in pixels.
    pub size: (u32, u32),
    /// Wait for vertical blank when swapping.
    pub vsync: bool,
    /// Title prefix; statistics are appended once a second.
    pub title: String,
}

/// Fails with [`Error::NoDisplay`] when no X display is named (snowsim's window uses X11).
pub fn check_display() -> Result<()> {
    match std::env::var_os("DISPLAY") {
        Some(d) if !d.is_empty() => Ok(()),
        _ => Err(Error::NoDisplay {
            reason: "the DISPLAY environment variable is not set".into(),
        }),
    }
}

/// Opens the window and its GL context, builds the driver with `make` once the context is
/// current, and runs frames until the user quits or `options.frames` have been shown.
pub fn run_window<D, F>(
    window: WindowOptions,
    options: RunOptions<'_>,
    make: F,
) -> Result<RunSummary>
where
    D: FrameDriver,
    F: FnOnce(&GlSetup) -> std::result::Result<D, FrameError>,
{
    check_display()?;
    check_size(window.size.0, window.size.1)?;
    options.capture.prepare()?;
    let event_loop = EventLoop::new().map_err(|e| Error::NoDisplay {
        reason: format!("cannot connect to the display: {e}"),
    })?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let warmup = options.warmup;
    let mut app = App {
        window,
        options,
        make: Some(make),
        state: None,
        error: None,
        stats: FrameStats::with_warmup(warmup),
        frames_done: 0,
        screenshot_written: false,
        left_down: false,
        cursor: None,
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| Error::Window(format!("event loop: {e}")))?;
    if let Some(error) = app.error.take() {
        return Err(error);
    }
    Ok(app.stats.summary())
}

struct State<D> {
    // Field order is drop order: the driver's GL objects go while the context is alive.
    driver: D,
    gl: Rc<glow::Context>,
    surface: Surface<WindowSurface>,
    context: PossiblyCurrentContext,
    window: Window,
    vsync: bool,
}

struct App<'a, D, F> {
    window: WindowOptions,
    options: RunOptions<'a>,
    make: Option<F>,
    state: Option<State<D>>,
    error: Option<Error>,
    stats: FrameStats,
    frames_done: u64,
    screenshot_written: bool,
    left_down: bool,
    cursor: Option<PhysicalPosition<f64>>,
}

impl<D, F> App<'_, D, F>
where
    D: FrameDriver,
    F: FnOnce(&GlSetup) -> std::result::Result<D, FrameError>,
{
    fn create(&mut self, event_loop: &ActiveEventLoop) -> Result<State<D>> {
        let (w, h) = self.window.size;
        let raw_display = event_loop
            .display_handle()
            .map_err(|e| Error::NoDisplay {
                reason: e.to_string(),
            })?
            .as_raw();
        let preference = DisplayApiPreference::GlxThenEgl(Box::new(
            winit::platform::x11::register_xlib_error_hook,
        ));
        // SAFETY: the handle comes from the live event loop, which outlives the display.
        let display = unsafe { Display::new(raw_display, preference) }
            .map_err(|e| Error::Window(format!("no GLX or EGL display: {e}")))?;
        let template = ConfigTemplateBuilder::new().with_depth_size(24).build();
        // SAFETY: the template names no native window.
        let config = unsafe { display.find_configs(template) }
            .map_err(|e| Error::Window(format!("no GL config with a depth buffer: {e}")))?
            .reduce(|best, c| {
                // Prefer no multisampling: frames read back must match what was drawn.
                if best.num_samples() > 0 && c.num_samples() == 0 {
                    c
                } else {
                    best
                }
            })
            .ok_or_else(|| Error::Window("no GL config with a depth buffer".into()))?;
        let attributes = winit::window::Window::default_attributes()
            .with_title(self.window.title.clone())
            .with_inner_size(PhysicalSize::new(w, h));
        let window = glutin_winit::finalize_window(event_loop, attributes, &config)
            .map_err(|e| Error::Window(e.to_string()))?;
        let raw_window = window
            .window_handle()
            .map_err(|e| Error::Window(e.to_string()))?
            .as_raw();
        let mut failures = Vec::new();
        let mut not_current = None;
        for version in GL_VERSIONS {
            // SAFETY: config and window belong to this display.
            match unsafe {
                display.create_context(&config, &core_attributes(version, Some(raw_window)))
            } {
                Ok(c) => {
                    not_current = Some(c);
                    break;
                }
                Err(e) => failures.push(format!("{}.{}: {e}", version.0, version.1)),
            }
        }
        let not_current = not_current.ok_or_else(|| Error::NoContext(failures.join("; ")))?;
        let surface_attributes = window
            .build_surface_attributes(Default::default())
            .map_err(|e| Error::Window(e.to_string()))?;
        // SAFETY: the surface is for this window and config.
        let surface = unsafe { display.create_window_surface(&config, &surface_attributes) }
            .map_err(|e| Error::Window(format!("window surface: {e}")))?;
        let context = not_current
            .make_current(&surface)
            .map_err(|e| Error::Window(format!("make current: {e}")))?;
        let vsync = self.window.vsync;
        set_vsync(&surface, &context, vsync, self.options.log);
        // SAFETY: the context is current on this thread.
        let gl = Rc::new(unsafe {
            glow::Context::from_loader_function_cstr(|name| display.get_proc_address(name))
        });
        let (api, name) = match display.raw_display() {
            RawDisplay::Egl(_) => (GlApi::Egl, "EGL"),
            RawDisplay::Glx(_) => (GlApi::Glx, "GLX"),
        };
        let raw_display = match display.raw_display() {
            RawDisplay::Egl(d) | RawDisplay::Glx(d) => d,
        };
        let raw_context = match context.raw_context() {
            RawContext::Egl(c) | RawContext::Glx(c) => c,
        };
        let setup = GlSetup {
            gl: gl.clone(),
            handles: GlHandles {
                api,
                display: raw_display,
                context: raw_context,
            },
            info: GlInfo::query(&gl, format!("{name} window on X11, {w}x{h}")),
            proc_address: {
                let display = display.clone();
                Rc::new(move |name| display.get_proc_address(name))
            },
        };
        let make = self
            .make
            .take()
            .ok_or_else(|| Error::Window("the window was created twice".into()))?;
        let driver = make(&setup).map_err(Error::Frame)?;
        Ok(State {
            driver,
            gl,
            surface,
            context,
            window,
            vsync,
        })
    }

    fn frame(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let Some(state) = self.state.as_mut() else {
            return Ok(());
        };
        let size = state.window.inner_size();
        if size.width == 0 || size.height == 0 {
            return Ok(()); // minimised
        }
        let size = (size.width, size.height);
        let start = Instant::now();
        let stages = state.driver.frame(size).map_err(Error::Frame)?;
        let drawn = start.elapsed();
        if let Some(line) = state.driver.notice() {
            (self.options.log)(&line);
        }
        let last = self
            .options
            .frames
            .is_some_and(|n| self.frames_done + 1 >= n);
        if self.options.capture.is_active() {
            let capture_start = Instant::now();
            capture_frame(
                &state.gl,
                size,
                &self.options.capture,
                self.frames_done,
                last,
            )?;
            self.screenshot_written |= last && self.options.capture.screenshot.is_some();
            self.stats.record_capture(capture_start.elapsed());
        }
        let present_start = Instant::now();
        state
            .surface
            .swap_buffers(&state.context)
            .map_err(|e| Error::Window(format!("swap buffers: {e}")))?;
        let present = present_start.elapsed();
        self.stats.record(&stages, present, drawn + present);
        self.frames_done += 1;
        if let Some((line, title)) = self.stats.tick(&state.driver.status()) {
            (self.options.log)(&line);
            state
                .window
                .set_title(&format!("{} — {title}", self.window.title));
        }
        if last {
            event_loop.exit();
        }
        Ok(())
    }

    /// Writes the pending screenshot from a fresh redraw, then leaves the event loop.
    fn quit(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        event_loop.exit();
        let (Some(state), Some(path)) = (self.state.as_mut(), &self.options.capture.screenshot)
        else {
            return Ok(());
        };
        if self.screenshot_written {
            return Ok(());
        }
        let size = state.window.inner_size();
        let size = (size.width.max(1), size.height.max(1));
        state.driver.redraw(size).map_err(Error::Frame)?;
        let image = read_frame(&state.gl, size)?;
        save_png(&image, path)?;
        self.screenshot_written = true;
        Ok(())
    }

    fn key(&mut self, event_loop: &ActiveEventLoop, event: &KeyEvent) -> Result<()> {
        if event.state != ElementState::Pressed {
            return Ok(());
        }
        let PhysicalKey::Code(code) = event.physical_key else {
            return Ok(());
        };
        match key_command(code, event.repeat) {
            None => {}
            Some(KeyCommand::Quit) => self.quit(event_loop)?,
            Some(KeyCommand::Help) => {
                for line in KEYS_HELP.lines() {
                    (self.options.log)(line);
                }
            }
            Some(KeyCommand::ToggleVsync) => {
                if let Some(state) = self.state.as_mut() {
                    state.vsync = !state.vsync;
                    set_vsync(
                        &state.surface,
                        &state.context,
                        state.vsync,
                        self.options.log,
                    );
                }
            }
            Some(KeyCommand::Act(action)) => self.act(action),
        }
        Ok(())
    }

    fn act(&mut self, action: Action) {
        if let Some(state) = self.state.as_mut()
            && let Some(line) = state.driver.action(action)
        {
            (self.options.log)(&line);
        }
    }

    fn handle(&mut self, event_loop: &ActiveEventLoop, event: WindowEvent) -> Result<()> {
        match event {
            WindowEvent::CloseRequested => self.quit(event_loop)?,
            WindowEvent::Resized(size) => {
                if let Some(state) = self.state.as_ref()
                    && let (Some(w), Some(h)) =
                        (NonZeroU32::new(size.width), NonZeroU32::new(size.height))
                {
                    state.surface.resize(&state.context, w, h);
                }
            }
            WindowEvent::KeyboardInput { event, .. } => self.key(event_loop, &event)?,
            WindowEvent::MouseInput {
                button: MouseButton::Left,
                state,
                ..
            } => self.left_down = state == ElementState::Pressed,
            WindowEvent::CursorMoved { position, .. } => {
                if let Some(last) = self.cursor
                    && self.left_down
                {
                    self.act(Action::Orbit {
                        dx: (position.x - last.x) as f32,
                        dy: (position.y - last.y) as f32,
                    });
                }
                self.cursor = Some(position);
            }
            WindowEvent::CursorLeft { .. } => self.cursor = None,
            WindowEvent::MouseWheel { delta, .. } => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                };
                self.act(Action::Zoom(steps));
            }
            WindowEvent::RedrawRequested => self.frame(event_loop)?,
            _ => {}
        }
        Ok(())
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, error: Error) {
        if self.error.is_none() {
            self.error = Some(error);
        }
        event_loop.exit();
    }
}

impl<D, F> ApplicationHandler for App<'_, D, F>
where
    D: FrameDriver,
    F: FnOnce(&GlSetup) -> std::result::Result<D, FrameError>,
{
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.state.is_some() || self.error.is_some() {
            return;
        }
        match self.create(event_loop) {
            Ok(state) => {
                state.window.request_redraw();
                self.state = Some(state);
                self.stats = FrameStats::with_warmup(self.options.warmup);
            }
            Err(e) => self.fail(event_loop, e),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.handle(event_loop, event) {
            self.fail(event_loop, e);
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(state) = self.state.as_ref() {
            state.window.request_redraw();
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(state) = self.state.as_mut()
            && self.error.is_none()
        {
            match state.driver.finish() {
                Ok(Some(line)) => (self.options.log)(&line),
                Ok(None) => {}
                Err(e) => self.error = Some(Error::Frame(e)),
            }
        }
        // Release the driver's GL and CL objects while the context still exists.
        self.state = None;
    }
}

/// What a key does in the window.
#[derive(Clone, Copy, Debug, PartialEq)]
enum KeyCommand {
    Quit,
    Help,
    ToggleVsync,
    Act(Action),
}

/// Pan step per key press, as a fraction of the viewing distance.
const PAN_STEP: f32 = 0.04;

/// The command for a pressed key (`repeat` when held down: only movement repeats); the table
/// [`KEYS_HELP`] documents.
fn key_command(code: KeyCode, repeat: bool) -> Option<KeyCommand> {
    let pan = |right, forward, up| Some(KeyCommand::Act(Action::Pan { right, forward, up }));
    let s = PAN_STEP;
    match code {
        KeyCode::ArrowLeft | KeyCode::KeyA => pan(-s, 0.0, 0.0),
        KeyCode::ArrowRight | KeyCode::KeyD => pan(s, 0.0, 0.0),
        KeyCode::ArrowUp | KeyCode::KeyW => pan(0.0, s, 0.0),
        KeyCode::ArrowDown | KeyCode::KeyS => pan(0.0, -s, 0.0),
        KeyCode::PageUp | KeyCode::KeyE => pan(0.0, 0.0, s),
        KeyCode::PageDown | KeyCode::KeyC => pan(0.0, 0.0, -s),
        KeyCode::Equal | KeyCode::NumpadAdd => Some(KeyCommand::Act(Action::Zoom(1.0))),
        KeyCode::Minus | KeyCode::NumpadSubtract => Some(KeyCommand::Act(Action::Zoom(-1.0))),
        _ if repeat => None,
        KeyCode::Escape | KeyCode::KeyQ => Some(KeyCommand::Quit),
        KeyCode::KeyH => Some(KeyCommand::Help),
        KeyCode::F1 => Some(KeyCommand::Act(Action::ToggleOsd)),
        KeyCode::Period | KeyCode::NumpadDecimal => Some(KeyCommand::Act(Action::StepOnce)),
        KeyCode::BracketLeft => Some(KeyCommand::Act(Action::ScaleAcceleration(0.5))),
        KeyCode::BracketRight => Some(KeyCommand::Act(Action::ScaleAcceleration(2.0))),
        KeyCode::KeyY => Some(KeyCommand::ToggleVsync),
        KeyCode::Space => Some(KeyCommand::Act(Action::TogglePause)),
        KeyCode::KeyO => Some(KeyCommand::Act(Action::ToggleSorting)),
        KeyCode::KeyV => Some(KeyCommand::Act(Action::ToggleWind)),
        KeyCode::KeyP => Some(KeyCommand::Act(Action::TogglePressure)),
        KeyCode::KeyU => Some(KeyCommand::Act(Action::ToggleFriction)),
        KeyCode::KeyR => Some(KeyCommand::Act(Action::Reset)),
        KeyCode::KeyG => Some(KeyCommand::Act(Action::RefreshGround)),
        _ => None,
    }
}

fn set_vsync(
    surface: &Surface<WindowSurface>,
    context: &PossiblyCurrentContext,
    on: bool,
    log: &mut dyn FnMut(&str),
) {
    let interval = if on {
        SwapInterval::Wait(NonZeroU32::MIN)
    } else {
        SwapInterval::DontWait
    };
    match surface.set_swap_interval(context, interval) {
        Ok(()) => log(&format!("vsync {}", if on { "on" } else { "off" })),
        Err(e) => log(&format!(
            "warning: cannot turn vsync {}: {e}",
            if on { "on" } else { "off" }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_key_does_what_the_help_says() {
        let act = |code| match key_command(code, false) {
            Some(KeyCommand::Act(a)) => Some(a),
            _ => None,
        };
        assert_eq!(act(KeyCode::Space), Some(Action::TogglePause));
        assert_eq!(act(KeyCode::KeyO), Some(Action::ToggleSorting));
        assert_eq!(act(KeyCode::KeyV), Some(Action::ToggleWind));
        assert_eq!(act(KeyCode::KeyP), Some(Action::TogglePressure));
        assert_eq!(act(KeyCode::KeyU), Some(Action::ToggleFriction));
        assert_eq!(act(KeyCode::KeyR), Some(Action::Reset));
        assert_eq!(act(KeyCode::KeyG), Some(Action::RefreshGround));
        assert_eq!(act(KeyCode::F1), Some(Action::ToggleOsd));
        assert_eq!(act(KeyCode::Period), Some(Action::StepOnce));
        assert_eq!(
            act(KeyCode::BracketLeft),
            Some(Action::ScaleAcceleration(0.5))
        );
        assert_eq!(
            act(KeyCode::BracketRight),
            Some(Action::ScaleAcceleration(2.0))
        );
        assert_eq!(act(KeyCode::Equal), Some(Action::Zoom(1.0)));
        assert_eq!(act(KeyCode::Minus), Some(Action::Zoom(-1.0)));
        assert!(matches!(act(KeyCode::KeyA), Some(Action::Pan { right, .. }) if right < 0.0));
        assert!(
            matches!(act(KeyCode::ArrowUp), Some(Action::Pan { forward, .. }) if forward > 0.0)
        );
        assert!(matches!(act(KeyCode::PageDown), Some(Action::Pan { up, .. }) if up < 0.0));
        assert_eq!(key_command(KeyCode::Escape, false), Some(KeyCommand::Quit));
        assert_eq!(key_command(KeyCode::KeyQ, false), Some(KeyCommand::Quit));
        assert_eq!(
            key_command(KeyCode::KeyY, false),
            Some(KeyCommand::ToggleVsync)
        );
        assert_eq!(key_command(KeyCode::KeyH, false), Some(KeyCommand::Help));
        // Held keys repeat movement only.
        assert!(key_command(KeyCode::KeyW, true).is_some());
        assert_eq!(key_command(KeyCode::Space, true), None);
        assert_eq!(key_command(KeyCode::KeyZ, false), None);
    }
}
