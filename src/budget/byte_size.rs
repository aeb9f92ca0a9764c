//! Byte counts as people read them: `9.6 GB`, `23 GB`, `512 bytes`.

use std::fmt;

/// A number of bytes, displayed with decimal units (kB, MB, GB, TB, PB, EB): two significant
/// digits below 10 units (`9.6 GB`), whole units above (`23 GB`, `140 GB`), exact below 1 kB
/// (`512 bytes`).
///
/// ```
/// use snowsim::budget::ByteSize;
///
/// assert_eq!(ByteSize(9_600_000_000).to_string(), "9.6 GB");
/// assert_eq!(ByteSize(23_456_000_000).to_string(), "23 GB");
/// assert_eq!(ByteSize(1).to_string(), "1 byte");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
        let bytes = self.0;
        if bytes < 1000 {
            let plural = if bytes == 1 { "" } else { "s" };
            return write!(f, "{bytes} byte{plural}");
        }
        let mut value = bytes as f64 / 1000.0;
        let mut unit = 0;
        while value >= 999.5 && unit + 1 < UNITS.len() {
            value /= 1000.0;
            unit += 1;
        }
        if value < 9.95 {
            write!(f, "{value:.1} {}", UNITS[unit])
        } else {
            write!(f, "{value:.0} {}", UNITS[unit])
        }
    }
}
