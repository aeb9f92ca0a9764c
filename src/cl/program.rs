//! Building OpenCL programs from named sources, with build logs that point at those names.

use std::borrow::Cow;
use std::path::PathBuf;

use opencl3::error_codes::{CL_BUILD_PROGRAM_FAILURE, CL_INVALID_KERNEL_NAME};
use opencl3::kernel::Kernel as ClKernel;
use opencl3::program::Program as ClProgram;

use super::context::Context;
use super::error::{Error, Result, ResultExt};
use super::kernel::Kernel;
use crate::input;

/// Environment variable naming a directory whose `*.cl` files replace the embedded kernels.
pub const KERNEL_DIR_ENV: &str = "SNOWSIM_KERNEL_DIR";

/// Environment variable whose build options are added to every program's (e.g. a driver's
/// `-cl-nv-verbose`, which reports registers and stack frames per kernel).
pub const KERNEL_OPTIONS_ENV: &str = "SNOWSIM_KERNEL_OPTIONS";

/// Environment variable that, set to anything but empty or `0`, prints every successful
/// build's log to standard error (the compiler's warnings and what options such as
/// `-cl-nv-verbose` report).
pub const KERNEL_LOG_ENV: &str = "SNOWSIM_KERNEL_LOG";

/// One piece of OpenCL C source with the file name that build logs should show.
#[derive(Clone, Debug)]
pub struct Source {
    /// Name shown in compiler messages, e.g. `selftest.cl`.
    pub name: String,
    /// The OpenCL C text.
    pub text: Cow<'static, str>,
    /// Where the text was read from, when a file of `$SNOWSIM_KERNEL_DIR` replaced the
    /// embedded one.
    pub path: Option<PathBuf>,
    /// The text embedded in the binary, for a source made by [`Source::embedded`] (so a
    /// kernel missing from a replacement can be told from one missing from the program).
    pub builtin: Option<&'static str>,
}

impl Source {
    /// A source given as text (generated code, or a user's own kernel).
    pub fn new(name: impl Into<String>, text: impl Into<Cow<'static, str>>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
            path: None,
            builtin: None,
        }
    }

    /// A kernel embedded in the binary with `include_str!`, replaced by the file of the same name
    /// in `$SNOWSIM_KERNEL_DIR` when that variable is set and the file exists, so kernels can be
    /// edited and rerun without rebuilding.
    ///
    /// A `$SNOWSIM_KERNEL_DIR` that is not a directory is an error (a typo would otherwise run
    /// the embedded kernels silently), and so is a file there that is not a regular file (a
    /// FIFO, a device) or is larger than [`input::TEXT_LIMIT`].
    pub fn embedded(name: &str, builtin: &'static str) -> Result<Self> {
        let (path, text) = match input::read_override(KERNEL_DIR_ENV, name) {
            Ok(Some((path, text))) => (Some(path), Cow::Owned(text)),
            Ok(None) => (None, Cow::Borrowed(builtin)),
            Err(e) => {
                return Err(Error::KernelSource {
                    path: e.path().to_path_buf(),
                    error: e.into_io_error(),
                });
            }
        };
        Ok(Self {
            name: name.to_string(),
            text,
            path,
            builtin: Some(builtin),
        })
    }

    /// How messages name this source: the file name, and the path when it came from disk.
    pub fn label(&self) -> String {
        match &self.path {
            Some(path) => format!("{} (from {})", self.name, path.display()),
            None => self.name.clone(),
        }
    }
}

/// A program built for one context's device.
pub struct Program {
    name: String,
    program: ClProgram,
    log: String,
    /// The sources, to tell which file defines a kernel.
    sources: Vec<Source>,
}

/// Always passed to the compiler, so that kernels' argument declarations can be checked
/// against what the program sets ([`super::KernelCall`]).
const ARG_INFO_OPTION: &str = "-cl-kernel-arg-info";

impl Program {
    /// Concatenates `sources` (each preceded by a `#line` directive naming it, so compiler
    /// messages cite the right file and line) and builds them with `options`.
    ///
    /// A failed build returns [`Error::Build`] with the driver's full log.
    ///
    /// The program is named after its files (`tet_walk.cl + snow.cl`) in messages.
    pub fn build(context: &Context, sources: &[Source], options: &str) -> Result<Self> {
        Self::build_named(context, &program_name(sources), sources, options)
    }

    /// Like [`build`](Self::build), with the name messages give the program (gml names its
    /// programs after the kernel, whose sources are many generated pieces).
    pub fn build_named(
        context: &Context,
        name: &str,
        sources: &[Source],
        options: &str,
    ) -> Result<Self> {
        let name = name.to_string();
        let extra = match std::env::var(KERNEL_OPTIONS_ENV) {
            Ok(extra) => extra,
            Err(std::env::VarError::NotPresent) => String::new(),
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(Error::InvalidBuildInput(format!(
                    "{KERNEL_OPTIONS_ENV} is not valid UTF-8"
                )));
            }
        };
        let options = if extra.trim().is_empty() {
            options.to_string()
        } else {
            format!("{options} {}", extra.trim())
        };
        if options.contains('\0') {
            return Err(Error::InvalidBuildInput(format!(
                "build options of `{name}` contain a NUL byte"
            )));
        }
        let (text, spans) = join_sources(sources)?;
        let device = context.device().id();
        let mut program = ClProgram::create_from_source(context.cl_context(), &text)
            .during(format!("clCreateProgramWithSource({name})"))?;
        let built = program.build(&[device], &format!("{ARG_INFO_OPTION} {options}"));
        let log = locate_log(
            program.get_build_log(device).unwrap_or_default().trim(),
            &spans,
        );
        match built {
            Ok(()) => {
                let wanted = std::env::var(KERNEL_LOG_ENV).is_ok_and(|v| !v.is_empty() && v != "0");
                if wanted && !log.is_empty() {
                    eprintln!("build log of {name} on {}:\n{log}", context.info().name);
                }
                Ok(Self {
                    name,
                    program,
                    log,
                    sources: sources.to_vec(),
                })
            }
            Err(code) if code.0 == CL_BUILD_PROGRAM_FAILURE => Err(Error::Build {
                program: name,
                device: context.info().name.clone(),
                options,
                log,
            }),
            Err(code) => Err(code).during(format!("clBuildProgram({name})")),
        }
    }

    /// Creates the kernel called `kernel_name` from this program, with its declaration read
    /// for argument checks.
    ///
    /// A kernel the program lacks is [`Error::MissingKernel`], naming the file that should
    /// define it (the one whose built-in text does, when a `$SNOWSIM_KERNEL_DIR` copy
    /// replaced it), or all the program's files.
    pub fn kernel(&self, kernel_name: &str) -> Result<Kernel> {
        let kernel = match ClKernel::create(&self.program, kernel_name) {
            Ok(kernel) => kernel,
            Err(code) if code.0 == CL_INVALID_KERNEL_NAME => {
                return Err(self.missing_kernel(kernel_name));
            }
            Err(code) => {
                return Err(code).during(format!("clCreateKernel({kernel_name}) in {}", self.name));
            }
        };
        Kernel::new(kernel, kernel_name, self.file_defining(kernel_name))
    }

    /// Why the program has no kernel `kernel_name`, with the file to look in.
    fn missing_kernel(&self, kernel_name: &str) -> Error {
        let problem = if let Some(source) = self
            .sources
            .iter()
            .find(|s| defines_kernel(&s.text, kernel_name))
        {
            format!(
                "{} seems to define it, but the compiler made no kernel of it (inside an \
                 `#if`, or in a comment?)",
                source.label()
            )
        } else if let Some(source) = self
            .sources
            .iter()
            .find(|s| s.builtin.is_some_and(|b| defines_kernel(b, kernel_name)))
        {
            if source.path.is_some() {
                format!(
                    "{} does not define it, and the built-in {} does (renamed in the copy?)",
                    source.label(),
                    source.name
                )
            } else {
                format!("{} should define it, but does not", source.label())
            }
        } else {
            format!(
                "none of the program's files defines it ({})",
                unique_names(&self.sources).join(", ")
            )
        };
        Error::MissingKernel {
            kernel: kernel_name.to_string(),
            problem,
        }
    }

    /// The name of the source that defines `kernel_name` (the program's name if none seems to).
    fn file_defining(&self, kernel_name: &str) -> &str {
        self.sources
            .iter()
            .find(|s| defines_kernel(&s.text, kernel_name))
            .map_or(&self.name, |s| &s.name)
    }

    /// The build log of a successful build (warnings), empty when the compiler said nothing.
    pub fn build_log(&self) -> &str {
        &self.log
    }
}

/// The sources' names, each once, in order.
fn unique_names(sources: &[Source]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for source in sources {
        if !names.contains(&source.name.as_str()) {
            names.push(&source.name);
        }
    }
    names
}

/// How messages name a program built from `sources`: its files, `tet_walk.cl + snow.cl`.
fn program_name(sources: &[Source]) -> String {
    if sources.is_empty() {
        "<empty>".to_string()
    } else {
        unique_names(sources).join(" + ")
    }
}

/// Whether `text` has a definition `kernel void NAME(` (with any spacing and `__kernel`).
fn defines_kernel(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = &text[..at];
        let after = text[at + name.len()..].trim_start();
        !before.ends_with(is_ident)
            && after.starts_with('(')
            && before.trim_end().ends_with("void")
            && before
                .trim_end()
                .trim_end_matches("void")
                .trim_end()
                .ends_with("kernel")
    })
}

/// Where one source lies in the joined text: its name and the joined line of its first line.
#[derive(Debug, PartialEq)]
struct Span {
    name: String,
    first_line: usize,
}

/// Joins sources with `#line 1 "name"` directives so that line numbers in build logs refer to
/// each source's own lines, and says where each source starts (for drivers that ignore the
/// directives, see [`locate_log`]).
fn join_sources(sources: &[Source]) -> Result<(String, Vec<Span>)> {
    let mut text = String::new();
    let mut spans = Vec::new();
    let mut line = 1;
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
        spans.push(Span {
            name: source.name.clone(),
            first_line: line + 1,
        });
        line += 1 + source.text.lines().count().max(1);
    }
    Ok((text, spans))
}

/// Rewrites `<kernel>:LINE:` and `<source>:LINE:` (how NVIDIA's compiler, which ignores `#line`,
/// names the joined text) into `file.cl:LINE:` of the source that line belongs to, so every
/// driver's log points at the user's own file and line.
fn locate_log(log: &str, spans: &[Span]) -> String {
    let mut out = String::with_capacity(log.len());
    let mut rest = log;
    while let Some(at) = ["<kernel>:", "<source>:"]
        .iter()
        .filter_map(|tag| rest.find(tag).map(|i| (i, tag.len())))
        .min()
    {
        let (start, tag_len) = at;
        out.push_str(&rest[..start]);
        let after = &rest[start + tag_len..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let joined: Option<usize> = after[..digits].parse().ok();
        match joined.and_then(|l| {
            spans
                .iter()
                .rev()
                .find(|s| s.first_line <= l)
                .map(|s| (s, l))
        }) {
            Some((span, l)) => {
                out.push_str(&format!("{}:{}", span.name, l - span.first_line + 1));
                rest = &after[digits..];
            }
            None => {
                out.push_str(&rest[start..start + tag_len]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_joined_with_line_directives() {
        let (text, spans) = join_sources(&[
            Source::new("a.cl", "int a;"),
            Source::new("b.cl", "int b;\nint c;\n"),
        ])
        .unwrap();
        assert_eq!(
            text,
            "#line 1 \"a.cl\"\nint a;\n#line 1 \"b.cl\"\nint b;\nint c;\n"
        );
        assert_eq!(spans[0].first_line, 2);
        assert_eq!(spans[1].first_line, 4);
        // A driver that ignores #line reports joined lines: they map back to each file.
        let log = "<kernel>:5:3: error: x\n<kernel>:2:1: note\nbroken.cl:9:1: kept";
        assert_eq!(
            locate_log(log, &spans),
            "b.cl:2:3: error: x\na.cl:1:1: note\nbroken.cl:9:1: kept"
        );
        assert_eq!(locate_log("<kernel>:x", &spans), "<kernel>:x");
        assert!(join_sources(&[Source::new("bad\"name", "")]).is_err());
    }

    #[test]
    fn finds_the_source_defining_a_kernel() {
        assert!(defines_kernel("__kernel void step(int a)", "step"));
        assert!(defines_kernel("kernel  void\n step (int a)", "step"));
        assert!(!defines_kernel("void step(int a)", "step"));
        assert!(!defines_kernel("__kernel void substep(int a)", "step"));
        assert!(!defines_kernel("step(1);", "step"));
    }
}
