//! Errors of scene files, located at the file, line, column and dotted key.

use std::fmt;
use std::path::{Path, PathBuf};

/// A scene that cannot be read, is not valid TOML, or holds a wrong key or value.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The file cannot be read.
    #[error("cannot read scene {}: {error}", path.display())]
    Read {
        /// The scene file.
        path: PathBuf,
        /// Why (shown in the message, so not chained as a source).
        error: std::io::Error,
    },
    /// A syntax error, an unknown key, a wrong type or a value out of range.
    #[error("{}", Located { path, line: *line, column: *column, key, message })]
    Invalid {
        /// The scene file.
        path: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// The dotted key, e.g. `wind.speed` (empty when the error is not at a key).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The domain mesh cannot be built or read, or its boundary references do not fit.
    #[error("{}: {key}: {message}", path.display())]
    Domain {
        /// The scene file.
        path: PathBuf,
        /// The key that names the domain (`domain.mesh`, `domain.heightmap`, …).
        key: String,
        /// What went wrong.
        message: String,
    },
}

impl SceneError {
    /// The dotted key at fault, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            SceneError::Read { .. } => None,
            SceneError::Invalid { key, .. } | SceneError::Domain { key, .. } => {
                (!key.is_empty()).then_some(key.as_str())
            }
        }
    }
}

/// How an [`SceneError::Invalid`] reads: `path:line:column: key: message`, each part only
/// when known.
struct Located<'a> {
    path: &'a Path,
    line: Option<usize>,
    column: Option<usize>,
    key: &'a str,
    message: &'a str,
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        if !self.key.is_empty() {
            write!(f, ": {}", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}
