//! GLSL sources embedded in the binary, overridable from disk, compiled with errors that name
//! the file.

use std::borrow::Cow;
use std::path::PathBuf;

use glow::HasContext;

use super::error::{Error, Result};

/// Environment variable naming a directory whose shader files replace the embedded ones.
pub const SHADER_DIR_ENV: &str = "SNOWSIM_SHADER_DIR";

/// One GLSL source with the file name that errors show.
#[derive(Clone, Debug)]
pub struct ShaderSource {
    /// File name, e.g. `particles.frag`.
    pub name: String,
    /// Where it was read from when it replaced the embedded copy.
    pub path: Option<PathBuf>,
    /// The GLSL text.
    pub text: Cow<'static, str>,
    /// The text embedded in the binary, to tell what a replacement lacks.
    pub builtin: Option<&'static str>,
}

impl ShaderSource {
    /// A shader embedded with `include_str!`, replaced by the file of the same name in
    /// `$SNOWSIM_SHADER_DIR` when that variable is set and the file exists, so shaders can be
    /// edited and rerun without rebuilding. A directory that does not exist, or a file there
    /// that is not a regular file (a FIFO, a device), is an error.
    pub fn embedded(name: &str, text: &'static str) -> Result<Self> {
        match crate::input::read_override(SHADER_DIR_ENV, name) {
            Ok(Some((path, replacement))) => Ok(Self {
                name: name.to_string(),
                path: Some(path),
                text: Cow::Owned(replacement),
                builtin: Some(text),
            }),
            Ok(None) => Ok(Self {
                name: name.to_string(),
                path: None,
                text: Cow::Borrowed(text),
                builtin: Some(text),
            }),
            Err(e) => Err(Error::ShaderSource {
                path: e.path().to_path_buf(),
                error: e.into_io_error(),
            }),
        }
    }

    /// How errors name this source: the file name, and the path when it came from disk.
    pub fn label(&self) -> String {
        match &self.path {
            Some(path) => format!("{} (from {})", self.name, path.display()),
            None => self.name.clone(),
        }
    }
}

/// The embedded shaders, by file name.
pub(crate) fn builtin(name: &str) -> Result<ShaderSource> {
    let text = match name {
        "terrain.vert" => include_str!("../../shaders/terrain.vert"),
        "terrain.frag" => include_str!("../../shaders/terrain.frag"),
        "particles.vert" => include_str!("../../shaders/particles.vert"),
        "particles.geom" => include_str!("../../shaders/particles.geom"),
        "particles.frag" => include_str!("../../shaders/particles.frag"),
        "wind.vert" => include_str!("../../shaders/wind.vert"),
        "pressure.vert" => include_str!("../../shaders/pressure.vert"),
        "colour.frag" => include_str!("../../shaders/colour.frag"),
        "splat.vert" => include_str!("../../shaders/splat.vert"),
        "sky.vert" => include_str!("../../shaders/sky.vert"),
        "splat.frag" => include_str!("../../shaders/splat.frag"),
        "shadow.frag" => include_str!("../../shaders/shadow.frag"),
        "osd.vert" => include_str!("../../shaders/osd.vert"),
        "osd.frag" => include_str!("../../shaders/osd.frag"),
        "veil.frag" => include_str!("../../shaders/veil.frag"),
        "flakes.vert" => include_str!("../../shaders/flakes.vert"),
        "flakes.frag" => include_str!("../../shaders/flakes.frag"),
        other => {
            return Err(Error::InvalidParameter(format!(
                "no built-in shader called `{other}`"
            )));
        }
    };
    ShaderSource::embedded(name, text)
}

/// A linked program and the uniforms the renderer sets in it, each checked when it was built.
#[derive(Debug)]
pub struct ShaderProgram {
    /// The GL program.
    pub id: glow::Program,
    /// The uniforms it was checked for.
    uniforms: Vec<&'static str>,
}

impl ShaderProgram {
    /// The location of the uniform `name`, one of those the program was built for: `None` when
    /// the program declares it but does not use it (GL drops such uniforms, and setting one
    /// does nothing).
    ///
    /// # Safety
    /// `gl` must be the context the program was built on, current.
    pub unsafe fn uniform(&self, gl: &glow::Context, name: &str) -> Option<glow::UniformLocation> {
        debug_assert!(
            self.uniforms.contains(&name),
            "uniform `{name}` is set, but was not checked when the program was built: add it to \
             the list given to build_program"
        );
        // SAFETY: forwarded from the caller.
        unsafe { gl.get_uniform_location(self.id, name) }
    }
}

/// Compiles `vertex` and `fragment`, links them into a program and checks that it has each of
/// `uniforms`, the uniforms the caller will set.
///
/// A compile failure is [`Error::ShaderCompile`] with the file's label and the GL info log;
/// a link failure is [`Error::ShaderLink`]. A uniform that neither file declares (one renamed
/// in a `$SNOWSIM_SHADER_DIR` copy, which GL would let the renderer set in vain, drawing with
/// zero for it) is [`Error::ShaderUniform`], naming the file whose built-in text declares it.
/// One that a file declares but GL dropped as unused is accepted: an edit may stop using it.
pub fn build_program(
    gl: &glow::Context,
    vertex: &ShaderSource,
    fragment: &ShaderSource,
    uniforms: &[&'static str],
) -> Result<ShaderProgram> {
    build_program_with_feedback(gl, vertex, fragment, uniforms, &[])
}

/// [`build_program`] whose vertex shader's `feedback` outputs are captured, interleaved, by
/// transform feedback (none: a plain program).
pub(crate) fn build_program_with_feedback(
    gl: &glow::Context,
    vertex: &ShaderSource,
    fragment: &ShaderSource,
    uniforms: &[&'static str],
    feedback: &[&str],
) -> Result<ShaderProgram> {
    build_stages(
        gl,
        &[
            (glow::VERTEX_SHADER, vertex),
            (glow::FRAGMENT_SHADER, fragment),
        ],
        uniforms,
        feedback,
    )
}

/// [`build_program`] with a geometry shader between the vertex and fragment shaders.
pub(crate) fn build_program_with_geometry(
    gl: &glow::Context,
    vertex: &ShaderSource,
    geometry: &ShaderSource,
    fragment: &ShaderSource,
    uniforms: &[&'static str],
) -> Result<ShaderProgram> {
    build_stages(
        gl,
        &[
            (glow::VERTEX_SHADER, vertex),
            (glow::GEOMETRY_SHADER, geometry),
            (glow::FRAGMENT_SHADER, fragment),
        ],
        uniforms,
        &[],
    )
}

/// Links `stages` (GL stage, source) and checks the program's `uniforms` (see
/// [`build_program`]).
fn build_stages(
    gl: &glow::Context,
    stages: &[(u32, &ShaderSource)],
    uniforms: &[&'static str],
    feedback: &[&str],
) -> Result<ShaderProgram> {
    let id = link_program(gl, stages, feedback)?;
    let program = ShaderProgram {
        id,
        uniforms: uniforms.to_vec(),
    };
    let sources = || stages.iter().map(|(_, s)| *s);
    let joined = |f: fn(&ShaderSource) -> String| sources().map(f).collect::<Vec<_>>().join(" + ");
    for &uniform in uniforms {
        // SAFETY: the program was just linked on this context.
        let active = unsafe { gl.get_uniform_location(id, uniform) }.is_some();
        if active || sources().any(|s| declares_uniform(&s.text, uniform)) {
            continue;
        }
        // SAFETY: the program belongs to this context and is not used afterwards.
        unsafe { gl.delete_program(id) };
        let expected: Vec<&ShaderSource> = sources()
            .filter(|s| s.builtin.is_some_and(|b| declares_uniform(b, uniform)))
            .collect();
        let file = match expected.as_slice() {
            [one] => one.label(),
            _ => joined(ShaderSource::label),
        };
        return Err(Error::ShaderUniform {
            file,
            uniform: uniform.to_string(),
            program: joined(|s| s.name.clone()),
        });
    }
    Ok(program)
}

/// Whether `text` declares `uniform NAME` (in a declaration of one or several names), outside
/// `//` comments.
fn declares_uniform(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.split(';').any(|statement| {
        let code: String = statement
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        let mut words = code.split(|c: char| !is_ident(c)).filter(|w| !w.is_empty());
        words.any(|w| w == "uniform") && words.any(|w| w == name)
    })
}

/// Compiles each of `stages` and links them into a program.
fn link_program(
    gl: &glow::Context,
    stages: &[(u32, &ShaderSource)],
    feedback: &[&str],
) -> Result<glow::Program> {
    let mut shaders = Vec::with_capacity(stages.len());
    // SAFETY: plain GL object calls on the current context with objects it created; every
    // shader made is deleted on every path.
    unsafe {
        for (stage, source) in stages {
            match compile(gl, *stage, source) {
                Ok(shader) => shaders.push(shader),
                Err(e) => {
                    shaders.into_iter().for_each(|s| gl.delete_shader(s));
                    return Err(e);
                }
            }
        }
        let program = match gl.create_program() {
            Ok(p) => p,
            Err(reason) => {
                shaders.into_iter().for_each(|s| gl.delete_shader(s));
                return Err(Error::Gl {
                    call: "glCreateProgram".into(),
                    reason,
                });
            }
        };
        for &shader in &shaders {
            gl.attach_shader(program, shader);
        }
        if !feedback.is_empty() {
            gl.transform_feedback_varyings(program, feedback, glow::INTERLEAVED_ATTRIBS);
        }
        gl.link_program(program);
        let linked = gl.get_program_link_status(program);
        let log = gl.get_program_info_log(program);
        for shader in shaders {
            gl.detach_shader(program, shader);
            gl.delete_shader(shader);
        }
        if !linked {
            gl.delete_program(program);
            let files: Vec<String> = stages.iter().map(|(_, s)| s.label()).collect();
            return Err(Error::ShaderLink {
                files: files.join(" + "),
                log: log.trim().to_string(),
            });
        }
        Ok(program)
    }
}

fn compile(gl: &glow::Context, stage: u32, source: &ShaderSource) -> Result<glow::Shader> {
    // SAFETY: plain GL object calls on the current context.
    unsafe {
        let shader = gl.create_shader(stage).map_err(|reason| Error::Gl {
            call: format!("glCreateShader({})", source.name),
            reason,
        })?;
        gl.shader_source(shader, &source.text);
        gl.compile_shader(shader);
        if gl.get_shader_compile_status(shader) {
            Ok(shader)
        } else {
            let log = gl.get_shader_info_log(shader);
            gl.delete_shader(shader);
            Err(Error::ShaderCompile {
                file: source.label(),
                log: log.trim().to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_uniform_declarations() {
        let text = "uniform mat4 u_view; // u_old\nuniform float a,\n  u_size;\nvec3 u_colour;\n";
        assert!(declares_uniform(text, "u_view"));
        assert!(declares_uniform(text, "u_size"));
        assert!(!declares_uniform(text, "u_old"));
        assert!(!declares_uniform(text, "u_colour"));
        assert!(!declares_uniform(text, "u_vie"));
        let terrain = builtin("terrain.frag").unwrap().builtin.unwrap();
        for name in ["u_snow_colour", "u_sun_dir", "u_ambient"] {
            assert!(declares_uniform(terrain, name));
        }
    }
}
