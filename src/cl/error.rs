//! Errors of the OpenCL layer.

use opencl3::error_codes::ClError;

/// What went wrong while talking to an OpenCL driver.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No OpenCL runtime could be loaded, or it reports no platform at all.
    #[error(
        "no OpenCL platform found ({reason}).\n\
         Install an OpenCL driver and the ICD loader, for example on Debian or Ubuntu:\n    \
         sudo apt-get install ocl-icd-libopencl1 pocl-opencl-icd\n\
         (pocl runs kernels on the CPU; GPU vendors ship their own ICD). \
         `clinfo -l` lists what the loader sees."
    )]
    NoPlatform {
        /// Why enumeration failed: a missing loader, or an empty platform list.
        reason: String,
    },
    /// Platforms exist but none has a device.
    #[error("the OpenCL platforms found ({platforms}) expose no device")]
    NoDevice {
        /// Names of the platforms that were found.
        platforms: String,
    },
    /// A `--device` selector matched nothing.
    #[error("no OpenCL device matches `{selector}`; available devices:\n{available}")]
    NoMatchingDevice {
        /// The selector as the user wrote it.
        selector: String,
        /// One line per available device.
        available: String,
    },
    /// A `--device` name matched more than one device.
    #[error(
        "`{selector}` matches several OpenCL devices; use an index or a longer name:\n{matches}"
    )]
    AmbiguousDevice {
        /// The selector as the user wrote it.
        selector: String,
        /// One line per matching device.
        matches: String,
    },
    /// An OpenCL call returned an error code.
    #[error("OpenCL call {call} failed: {code}")]
    Api {
        /// What was being done, e.g. `clCreateBuffer (4096 bytes)`.
        call: String,
        /// The error code returned by the driver.
        code: ClError,
    },
    /// The device cannot hold a buffer of the requested size.
    #[error(
        "buffer of {requested} bytes does not fit on {device}: largest allocation is {max_alloc} bytes"
    )]
    BufferTooLarge {
        /// Bytes asked for.
        requested: u64,
        /// The device's `CL_DEVICE_MAX_MEM_ALLOC_SIZE`.
        max_alloc: u64,
        /// The device name.
        device: String,
    },
    /// A host slice is longer than the device buffer it should be written into.
    #[error("cannot write {data} values into a device buffer of {buffer} values")]
    WriteTooLong {
        /// Values offered.
        data: usize,
        /// Values the buffer holds.
        buffer: usize,
    },
    /// A program failed to compile; `log` is the driver's full build log.
    #[error(
        "OpenCL program `{program}` failed to build on {device} (options: `{options}`):\n{log}"
    )]
    Build {
        /// Name of the program (usually the main source file).
        program: String,
        /// Device the build was for.
        device: String,
        /// The build options passed to the compiler.
        options: String,
        /// The driver's build log, mentioning the source files by name.
        log: String,
    },
    /// Build options or a source name contained a byte OpenCL cannot take (NUL).
    #[error("invalid OpenCL build input: {0}")]
    InvalidBuildInput(String),
    /// A kernel's arguments do not match its declaration (usually a kernel edited through
    /// `SNOWSIM_KERNEL_DIR` whose signature changed).
    #[error("kernel `{kernel}` in {file}: {problem}")]
    KernelArgument {
        /// The kernel's function name.
        kernel: String,
        /// The source file that defines it.
        file: String,
        /// The argument at fault, when one is.
        index: Option<u32>,
        /// What does not match.
        problem: String,
    },
    /// A program has no kernel of the name asked for (usually one renamed in a
    /// `SNOWSIM_KERNEL_DIR` copy).
    #[error("no kernel `{kernel}` in the program: {problem}")]
    MissingKernel {
        /// The kernel's function name.
        kernel: String,
        /// Which file should define it, or the files that do not.
        problem: String,
    },
    /// A command of a chain that did not wait failed on the device.
    #[error("stage `{stage}`: kernel `{kernel}` failed on the device: {code}")]
    Stage {
        /// The stage it was enqueued under.
        stage: String,
        /// The kernel (or command) name.
        kernel: String,
        /// The execution status or wait error.
        code: ClError,
    },
    /// A buffer handle outlived the data it was made for.
    #[error("{0}")]
    Stale(String),
    /// The device or its platform lacks an extension that a requested path needs.
    #[error("{0}")]
    Unsupported(String),
    /// A kernel source could not be read from the override directory.
    #[error("cannot read kernel source {}: {error}", path.display())]
    KernelSource {
        /// The file that was tried.
        path: std::path::PathBuf,
        /// The I/O error (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
}

/// Result of the OpenCL layer.
pub type Result<T> = std::result::Result<T, Error>;

/// Attaches the name of the failing call to a raw OpenCL error code.
pub(crate) trait ResultExt<T> {
    /// Maps the error to [`Error::Api`] naming `call`.
    fn during(self, call: impl Into<String>) -> Result<T>;
}

impl<T> ResultExt<T> for std::result::Result<T, ClError> {
    fn during(self, call: impl Into<String>) -> Result<T> {
        self.map_err(|code| Error::Api {
            call: call.into(),
            code,
        })
    }
}
