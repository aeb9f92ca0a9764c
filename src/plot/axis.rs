//! A linear f64 axis with tick marks at given values only (plotters' `with_key_points` on an
//! f64 range loses its value formatter, so the axis could not be labelled).

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// A linear axis over `range` with ticks at `ticks`.
#[derive(Clone, Debug)]
pub struct TickedAxis {
    /// The values at the two ends of the axis.
    pub range: Range<f64>,
    /// Where the ticks (and their labels) go.
    pub ticks: Vec<f64>,
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let fraction = if span > 0.0 {
            (value - self.range.start) / span
        } else {
            0.5
        };
        limit.0 + (fraction * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_map_linearly_onto_the_pixel_range() {
        let axis = TickedAxis {
            range: 10.0..20.0,
            ticks: vec![10.0, 15.0],
        };
        assert_eq!(axis.map(&10.0, (100, 300)), 100);
        assert_eq!(axis.map(&15.0, (100, 300)), 200);
        assert_eq!(axis.map(&20.0, (300, 100)), 100);
    }
}
