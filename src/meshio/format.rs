//! File formats (ASCII or binary) and versions (field sizes).

use std::fmt;
use std::path::Path;

use super::error::MeshError;

/// ASCII `.mesh` or binary `.meshb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `.mesh`: whitespace-separated text.
    Ascii,
    /// `.meshb`: binary words.
    Binary,
}

impl Format {
    /// The format named by the file's extension, `.mesh` or `.meshb` in any case.
    pub fn from_path(path: &Path) -> Result<Format, MeshError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext.eq_ignore_ascii_case("mesh") {
            Ok(Format::Ascii)
        } else if ext.eq_ignore_ascii_case("meshb") {
            Ok(Format::Binary)
        } else {
            Err(MeshError::UnknownExtension {
                path: path.to_path_buf(),
            })
        }
    }

    /// The extension without its dot: `"mesh"` or `"meshb"`.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Ascii => "mesh",
            Format::Binary => "meshb",
        }
    }
}

/// libMeshb file version: sets the size of integers, reals, keyword positions and counts.
///
/// | version | ints | reals | positions | counts |
/// | --- | --- | --- | --- | --- |
/// | 1 | 4 | 4 | 4 | 4 |
/// | 2 | 4 | 8 | 4 | 4 |
/// | 3 | 4 | 8 | 8 | 4 |
/// | 4 | 8 | 8 | 8 | 8 |
///
/// Keyword codes and the dimension are always 4-byte integers. In ASCII files the version only
/// sets how reals are written (version 1: the shortest text of the `f32` value) and the 32-bit
/// limit on counts; reading parses every real as `f64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    /// int32, f32, int32 positions, int32 counts.
    V1,
    /// int32, f64, int32 positions, int32 counts.
    V2,
    /// int32, f64, int64 positions, int32 counts.
    V3,
    /// int64, f64, int64 positions, int64 counts.
    V4,
}

impl Version {
    /// Every version, oldest first.
    pub const ALL: [Version; 4] = [Version::V1, Version::V2, Version::V3, Version::V4];

    /// The version numbered `n` (1 to 4).
    pub fn from_number(n: u32) -> Option<Version> {
        match n {
            1 => Some(Version::V1),
            2 => Some(Version::V2),
            3 => Some(Version::V3),
            4 => Some(Version::V4),
            _ => None,
        }
    }

    /// The version number, 1 to 4.
    pub fn number(self) -> u32 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
            Version::V3 => 3,
            Version::V4 => 4,
        }
    }

    /// Bytes of a real, unless a FloatingPointPrecision keyword overrides it.
    pub fn real_bytes(self) -> usize {
        match self {
            Version::V1 => 4,
            _ => 8,
        }
    }

    /// Bytes of an integer (node index, reference).
    pub fn int_bytes(self) -> usize {
        match self {
            Version::V4 => 8,
            _ => 4,
        }
    }

    /// Bytes of a keyword's "next keyword" position.
    pub fn position_bytes(self) -> usize {
        match self {
            Version::V1 | Version::V2 => 4,
            Version::V3 | Version::V4 => 8,
        }
    }

    /// Bytes of a keyword's count.
    pub fn count_bytes(self) -> usize {
        match self {
            Version::V4 => 8,
            _ => 4,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_from_extension() {
        assert_eq!(
            Format::from_path(Path::new("a/b.mesh")).ok(),
            Some(Format::Ascii)
        );
        assert_eq!(
            Format::from_path(Path::new("B.MESHB")).ok(),
            Some(Format::Binary)
        );
        assert_eq!(
            Format::from_path(Path::new("c.MeSh")).ok(),
            Some(Format::Ascii)
        );
        for bad in ["cube.stl", "cube", "cube.mesh.gz", ".meshb/x"] {
            let e = Format::from_path(Path::new(bad)).unwrap_err();
            assert!(e.to_string().starts_with(bad), "{e}");
            assert!(e.to_string().contains(".mesh"), "{e}");
        }
    }

    #[test]
    fn version_sizes() {
        let sizes: Vec<[usize; 4]> = Version::ALL
            .iter()
            .map(|v| {
                [
                    v.int_bytes(),
                    v.real_bytes(),
                    v.position_bytes(),
                    v.count_bytes(),
                ]
            })
            .collect();
        assert_eq!(
            sizes,
            [[4, 4, 4, 4], [4, 8, 4, 4], [4, 8, 8, 4], [8, 8, 8, 8]]
        );
        for v in Version::ALL {
            assert_eq!(Version::from_number(v.number()), Some(v));
        }
        assert_eq!(Version::from_number(0), None);
        assert_eq!(Version::from_number(5), None);
    }
}
