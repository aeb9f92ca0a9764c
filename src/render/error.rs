//! Errors of the renderer, the window and the headless context.

use std::path::PathBuf;

/// What went wrong while opening a GL context, building shaders or drawing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No display to open a window on.
    #[error(
        "no display to open a window on ({reason}); run `snowsim run --headless` to render \
         offscreen (with --frames N, --screenshot out.png or --record DIR), or start an X \
         server (e.g. `xvfb-run -a snowsim run …`)"
    )]
    NoDisplay {
        /// Why no display could be used (variable unset, connection refused, …).
        reason: String,
    },
    /// The EGL library or an EGL device could not be used for headless rendering.
    #[error("headless OpenGL through EGL is unavailable: {0}")]
    Egl(String),
    /// No OpenGL context of a version snowsim can use could be created.
    #[error("could not create an OpenGL 3.3+ core context ({0})")]
    NoContext(String),
    /// The window or its GL surface could not be created.
    #[error("could not open the window: {0}")]
    Window(String),
    /// A shader source could not be read from the override directory.
    #[error("cannot read shader source {}: {error}", path.display())]
    ShaderSource {
        /// The file that was tried.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A shader failed to compile; `log` is the driver's info log.
    #[error("shader `{file}` failed to compile:\n{log}")]
    ShaderCompile {
        /// The shader's file name (and where it came from when overridden).
        file: String,
        /// The GL info log.
        log: String,
    },
    /// A program failed to link; `log` is the driver's info log.
    #[error("shader program `{files}` failed to link:\n{log}")]
    ShaderLink {
        /// The shader files linked together, e.g. `particles.vert + particles.frag`.
        files: String,
        /// The GL info log.
        log: String,
    },
    /// A uniform the renderer sets is declared by neither shader of a program (renamed in a
    /// `SNOWSIM_SHADER_DIR` copy): drawn, it would be zero.
    #[error(
        "shader `{file}` declares no uniform `{uniform}`, which the renderer sets in program \
         `{program}` (renamed in the copy?); without it the drawing would be wrong"
    )]
    ShaderUniform {
        /// The shader that should declare it (and where it came from when overridden).
        file: String,
        /// The uniform's name.
        uniform: String,
        /// The program's files, e.g. `terrain.vert + terrain.frag`.
        program: String,
    },
    /// A GL object could not be created or used.
    #[error("OpenGL call {call} failed: {reason}")]
    Gl {
        /// What was being done.
        call: String,
        /// What the driver or glow said.
        reason: String,
    },
    /// A size, count or other parameter is out of range.
    #[error("invalid render parameter: {0}")]
    InvalidParameter(String),
    /// The frame driver (simulation, interop, drawing) failed.
    #[error("{0}")]
    Frame(super::frame::FrameError),
    /// A frame could not be written as PNG.
    #[error("cannot write {}: {error}", path.display())]
    Image {
        /// The file that was being written.
        path: PathBuf,
        /// What went wrong.
        error: String,
    },
    /// An output path is unusable, or writing it failed (the message names the file).
    #[error(transparent)]
    Output(#[from] crate::output::OutputError),
}

/// Result of the renderer.
pub type Result<T> = std::result::Result<T, Error>;

/// Maps glow's `String` errors to [`Error::Gl`] naming the call.
pub(crate) fn gl_call<T>(call: &str, result: std::result::Result<T, String>) -> Result<T> {
    result.map_err(|reason| Error::Gl {
        call: call.to_string(),
        reason,
    })
}
