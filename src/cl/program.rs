//! Building OpenCL programs from named sources, with build logs that point at those names.

use std::borrow::Cow;

use opencl3::error_codes::CL_BUILD_PROGRAM_FAILURE;
use opencl3::kernel::Kernel;
use opencl3::program::Program as ClProgram;

use super::context::Context;
use super::error::{Error, Result, ResultExt};
use crate::input;

/// Environment variable naming a directory whose `*.cl` files replace the embedded kernels.
pub const KERNEL_DIR_ENV: &str = "SNOWSIM_KERNEL_DIR";

/// One piece of OpenCL C source with the file name that build logs should show.
#[derive(Clone, Debug)]
pub struct Source {
    /// Name shown in compiler messages, e.g. `selftest.cl`.
    pub name: String,
    /// The OpenCL C text.
    pub text: Cow<'static, str>,
}

impl Source {
    /// A source given as text (generated code, or a user's own kernel).
    pub fn new(name: impl Into<String>, text: impl Into<Cow<'static, str>>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
        }
    }

    /// A kernel embedded in the binary with `include_str!`, replaced by the file of the same name
    /// in `$SNOWSIM_KERNEL_DIR` when that variable is set and the file exists, so kernels can be
    /// edited and rerun without rebuilding.
    ///
    /// A `$SNOWSIM_KERNEL_DIR` that is not a directory is an error (a typo would otherwise run
    /// the embedded kernels silently), and so is a file there that is not a regular file (a
    /// FIFO, a device) or is larger than [`input::TEXT_LIMIT`].
    pub fn embedded(name: &str, text: &'static str) -> Result<Self> {
        match input::read_override(KERNEL_DIR_ENV, name) {
            Ok(Some((_, text))) => Ok(Self::new(name, text)),
            Ok(None) => Ok(Self::new(name, text)),
            Err(e) => Err(Error::KernelSource {
                path: e.path().to_path_buf(),
                error: e.into_io_error(),
            }),
        }
    }
}

/// A program built for one context's device.
pub struct Program {
    name: String,
    program: ClProgram,
    log: String,
}

impl Program {
    /// Concatenates `sources` (each preceded by a `#line` directive naming it, so compiler
    /// messages cite the right file and line) and builds them with `options`.
    ///
    /// A failed build returns [`Error::Build`] with the driver's full log.
    pub fn build(context: &Context, sources: &[Source], options: &str) -> Result<Self> {
        let name = sources
            .first()
            .map(|s| s.name.clone())
            .unwrap_or_else(|| "<empty>".to_string());
        if options.contains('\0') {
            return Err(Error::InvalidBuildInput(format!(
                "build options of `{name}` contain a NUL byte"
            )));
        }
        let text = join_sources(sources)?;
        let device = context.device().id();
        let mut program = ClProgram::create_from_source(context.cl_context(), &text)
            .during(format!("clCreateProgramWithSource({name})"))?;
        let built = program.build(&[device], options);
        let log = program
            .get_build_log(device)
            .unwrap_or_default()
            .trim()
            .to_string();
        match built {
            Ok(()) => Ok(Self { name, program, log }),
            Err(code) if code.0 == CL_BUILD_PROGRAM_FAILURE => Err(Error::Build {
                program: name,
                device: context.info().name.clone(),
                options: options.to_string(),
                log,
            }),
            Err(code) => Err(code).during(format!("clBuildProgram({name})")),
        }
    }

    /// Creates the kernel called `kernel_name` from this program.
    pub fn kernel(&self, kernel_name: &str) -> Result<Kernel> {
        Kernel::create(&self.program, kernel_name)
            .during(format!("clCreateKernel({kernel_name}) in {}", self.name))
    }

    /// The build log of a successful build (warnings), empty when the compiler said nothing.
    pub fn build_log(&self) -> &str {
        &self.log
    }
}

/// Joins sources with `#line 1 "name"` directives so that line numbers in build logs refer to
/// each source's own lines.
fn join_sources(sources: &[Source]) -> Result<String> {
    let mut text = String::new();
    for source in sources {
        if source.name.contains(['"', '\n', '\0']) || source.text.contains('\0') {
            return Err(Error::InvalidBuildInput(format!(
                "source name or text `{}` contains a quote, newline or NUL",
                source.name.escape_debug()
            )));
        }
        text.push_str(&format!("#line 1 \"{}\"\n", source.name));
        text.push_str(&source.text);
        if !source.text.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_joined_with_line_directives() {
        let text = join_sources(&[
            Source::new("a.cl", "int a;"),
            Source::new("b.cl", "int b;\n"),
        ])
        .unwrap();
        assert_eq!(text, "#line 1 \"a.cl\"\nint a;\n#line 1 \"b.cl\"\nint b;\n");
        assert!(join_sources(&[Source::new("bad\"name", "")]).is_err());
    }
}
