//! OpenGL rendering of the simulation (thesis §4.2, §6.6–6.7): the terrain with its snow, the
//! snow particles as point sprites drawn straight from the buffer OpenCL writes, and debug views
//! of the wind (lines coloured by speed) and the pressure (squares, yellow low to red high),
//! seen through an orbit camera.
//!
//! The same [`Renderer`] draws in a window ([`window::run_window`], winit + glutin) or headless
//! ([`Headless`]: EGL device platform, surfaceless context, offscreen framebuffer), driven by a
//! [`FrameDriver`] that computes each frame; [`crate::app::Session`] is the driver that
//! connects the simulation to it. Shaders live in `shaders/`, are embedded in the binary and can be
//! replaced at run time from `$SNOWSIM_SHADER_DIR`; a compile or link failure reports the GL
//! info log with the file name.
//!
//! A scene plugs in through a [`TerrainMesh`] (a scene's ground surface, with
//! [`TerrainMesh::from_mesh_triangles`], or a [`crate::terrain::Heightfield`]), the
//! [`crate::terrain::SceneBox`] of air above it and an [`OrbitCamera`]
//! ([`OrbitCamera::looking_at`] a scene file's camera); [`crate::app::SceneView`] builds them
//! from a [`crate::scene::Scene`]. The renderer knows nothing of OpenCL: [`crate::sim`] runs
//! the frame and [`crate::interop`] moves the buffers.

mod camera;
mod draw_timer;
pub mod egl_devices;
mod error;
mod frame;
mod gl_context;
mod headless;
mod near;
mod osd;
mod renderer;
mod shader;
mod shadow;
mod splat;
mod terrain;
mod veil;
pub mod window;

pub use camera::OrbitCamera;
pub(crate) use error::gl_call;
pub use error::{Error, Result};
pub use frame::{
    Action, Capture, FrameDriver, FrameError, FrameStats, RunOptions, RunSummary, StageTimes,
    read_frame, run_headless, run_undrawn, save_png,
};
pub use gl_context::{GL_VERSIONS, GlApi, GlHandles, GlInfo, GlSetup, ProcAddress};
pub use headless::{EGL_DEVICE_ENV, Headless, MAX_SIDE, check_size};
pub use near::{LAMBDA, NearFlakes, NearLayout, SLOTS};
pub use osd::{DEJAVU_SANS, MAX_TEXT_PIXELS, OSD_MARGIN, OsdImage, rasterise};
pub(crate) use renderer::buffer_bytes;
pub use renderer::{
    AMBIENT, FIELD_SAMPLE_BYTES, Palette, Renderer, Views, flake_colour, near_flake_colour,
};
pub use shader::{SHADER_DIR_ENV, ShaderProgram, ShaderSource, build_program};
pub use shadow::sun_direction;
pub use terrain::TerrainMesh;
