//! The interval a scene number must lie in, and how messages state it.

use std::fmt;

/// An interval a number must lie in, for messages like `must be > 0 and <= 20 m/s`.
#[derive(Clone, Copy)]
pub(super) struct Range {
    lo: f64,
    hi: f64,
    open_lo: bool,
    open_hi: bool,
    unit: &'static str,
}

impl Range {
    pub(super) const fn closed(lo: f64, hi: f64, unit: &'static str) -> Self {
        Self {
            lo,
            hi,
            open_lo: false,
            open_hi: false,
            unit,
        }
    }
    pub(super) const fn open(lo: f64, hi: f64, unit: &'static str) -> Self {
        Self {
            open_lo: true,
            ..Self::closed(lo, hi, unit)
        }
    }
    pub(super) const fn open_both(lo: f64, hi: f64, unit: &'static str) -> Self {
        Self {
            open_hi: true,
            ..Self::open(lo, hi, unit)
        }
    }
    pub(super) fn holds(&self, v: f64) -> bool {
        v.is_finite()
            && (if self.open_lo {
                v > self.lo
            } else {
                v >= self.lo
            })
            && (if self.open_hi {
                v < self.hi
            } else {
                v <= self.hi
            })
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        let lo = if self.open_lo { ">" } else { ">=" };
        if self.hi == f64::MAX {
            write!(f, "a finite number {lo} {}{unit}", Number(self.lo))
        } else {
            let hi = if self.open_hi { "<" } else { "<=" };
            write!(
                f,
                "{lo} {} and {hi} {}{unit}",
                Number(self.lo),
                Number(self.hi)
            )
        }
    }
}

/// A number as a scene error shows it: plainly, or in scientific notation when very large or
/// very small (`1e308`, not 309 digits). `Number(0.02f32)` shows the 32-bit float's shortest
/// digits, `0.02`.
pub(crate) struct Number<T = f64>(pub T);

impl Number {
    /// A computed number to 4 significant digits (`7.84e-8`, not `7.839687367812705e-8`).
    pub(crate) fn rounded(v: f64) -> Self {
        Self(format!("{v:.3e}").parse().unwrap_or(v))
    }
}

impl<T> fmt::Display for Number<T>
where
    T: Copy + Into<f64> + fmt::Display + fmt::LowerExp,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v: f64 = self.0.into();
        if v != 0.0 && v.is_finite() && !(1e-4..1e7).contains(&v.abs()) {
            write!(f, "{:e}", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
}
