//! A linear f64 axis with tick marks at given values only (plotters' `with_key_points` on an
//! f64 range loses its value formatter, so the axis could not be labelled), and the ticks of a
//! value axis from 0: at most [`MAX_TICKS`] of them for any finite end, computed without a
//! loop that depends on the range (plotters' own tick search never ends on an infinite one).

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

/// The most ticks [`value_ticks`] puts on an axis.
pub const MAX_TICKS: usize = 12;

/// The end of a value axis from 0 that shows `max` with `margin` (a factor such as 1.1) of
/// room above it: `max × margin`, or [`f64::MAX`] where that overflows; 1 when `max` is not a
/// positive finite number (nothing to show).
pub fn axis_end(max: f64, margin: f64) -> f64 {
    if !(max > 0.0 && max.is_finite()) {
        return 1.0;
    }
    let end = max * margin;
    if end.is_finite() { end } else { f64::MAX }
}

/// Ticks from 0 to at most `end` at a round step (1, 2 or 5 × 10^k), at most [`MAX_TICKS`] of
/// them, and the step. An `end` too small for a step that f64 can hold (subnormal) gets ticks
/// at 0 and `end`.
pub fn value_ticks(end: f64) -> (Vec<f64>, f64) {
    let step = round_step(end / (MAX_TICKS - 2) as f64);
    if !(step > 0.0 && step.is_finite() && end.is_finite()) {
        let end = if end.is_finite() { end } else { f64::MAX };
        return (vec![0.0, end], end);
    }
    let n = ((end / step).floor() as usize).min(MAX_TICKS - 1);
    let ticks = (0..=n)
        .map(|i| i as f64 * step)
        .filter(|t| *t <= end)
        .collect();
    (ticks, step)
}

/// The least of 1, 2, 5 and 10 × 10^k that is at least `raw` (0 when `raw` is 0 or so small
/// that its power of ten underflows).
fn round_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

/// A tick's label at a step of `step`: plain with as many decimals as the step needs (up to
/// 3) between 0.001 and 10^7, in scientific notation outside (`2.0e307`), so that a label is
/// never hundreds of digits long.
pub fn number_label(v: f64, step: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    if (1e-3..1e7).contains(&v.abs()) && step >= 1e-3 {
        let decimals = if step >= 1.0 {
            0
        } else {
            ((-step.log10()).ceil() as usize).min(3)
        };
        format!("{v:.decimals$}")
    } else {
        let digits = (v.abs().log10().floor() - step.log10().floor()).clamp(0.0, 3.0) as usize;
        format!("{v:.digits$e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_ticks_are_few_and_round_for_any_finite_end() {
        let (ticks, step) = value_ticks(110.0);
        assert_eq!(step, 20.0);
        assert_eq!(ticks, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let ends = [
            f64::MAX,
            1.7e308 * 1.05,
            1.0,
            0.3,
            1e-300,
            f64::MIN_POSITIVE,
            1e-310,
            5e-324,
        ];
        for end in ends {
            let (ticks, step) = value_ticks(end);
            assert!(
                ticks.len() >= 2 && ticks.len() <= MAX_TICKS,
                "{end}: {ticks:?}"
            );
            assert!(step > 0.0 && step.is_finite(), "{end}: {step}");
            assert!(ticks.iter().all(|t| t.is_finite() && *t <= end), "{end}");
        }
        assert_eq!(axis_end(f64::MAX, 1.1), f64::MAX);
        assert_eq!(axis_end(10.0, 1.5), 15.0);
        assert_eq!(axis_end(0.0, 1.1), 1.0);
        assert_eq!(axis_end(f64::NAN, 1.1), 1.0);
    }

    #[test]
    fn labels_stay_short() {
        assert_eq!(number_label(0.0, 20.0), "0");
        assert_eq!(number_label(40.0, 20.0), "40");
        assert_eq!(number_label(0.5, 0.5), "0.5");
        assert_eq!(number_label(0.05, 0.05), "0.05");
        assert_eq!(number_label(1.6e308, 2e307), "1.6e308");
        assert_eq!(number_label(2e7, 1e7), "2e7");
        assert!(number_label(1e-310, 1e-311).len() < 12);
    }

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
