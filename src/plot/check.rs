//! The numbers of a sweep row checked before anything is drawn: every one finite, the FPS, its
//! standard deviation and the stage times not negative, and the sums a figure draws (the top
//! of an error bar, the length of a stacked bar) within f64, so that every axis has a finite
//! range.

use crate::bench::record::Row;

/// A number of a row that cannot be drawn: the column(s) and what is wrong, e.g.
/// `fps_mean`, `NaN is not a finite number`.
#[derive(Clone, Debug, PartialEq)]
pub struct BadValue {
    /// The column, or the columns whose sum is at fault (`fps_mean + fps_std`).
    pub column: String,
    /// What is wrong with the value.
    pub problem: String,
}

/// The number columns of [`Row`], by name, in CSV order.
fn numbers(row: &Row) -> [(&'static str, Option<f64>); 10] {
    [
        ("fps_mean", row.fps_mean),
        ("fps_std", row.fps_std),
        ("ms_frame", row.ms_frame),
        ("ms_wind", row.ms_wind),
        ("ms_snow", row.ms_snow),
        ("ms_sort", row.ms_sort),
        ("ms_smoothing", row.ms_smoothing),
        ("ms_splat", row.ms_splat),
        ("ms_transfer", row.ms_transfer),
        ("ms_draw", row.ms_draw),
    ]
}

/// The stage columns a stacked bar adds up, bottom to top.
const STACKED: [&str; 7] = [
    "ms_wind",
    "ms_snow",
    "ms_sort",
    "ms_smoothing",
    "ms_splat",
    "ms_transfer",
    "ms_draw",
];

/// Checks every number of `row`: finite, not negative (all of them are frames per second,
/// their standard deviation or milliseconds), `fps_mean + fps_std` and the sum of the stacked
/// stage times finite. The first fault found, in column order.
pub fn check_row(row: &Row) -> Result<(), BadValue> {
    let bad = |column: &str, problem: String| BadValue {
        column: column.to_string(),
        problem,
    };
    let values = numbers(row);
    for (column, value) in values {
        let Some(v) = value else { continue };
        if v.is_nan() {
            return Err(bad(column, "NaN is not a number".to_string()));
        }
        if !v.is_finite() {
            return Err(bad(
                column,
                format!("{v} is not a finite number (a value beyond ±1.8e308 reads as inf)"),
            ));
        }
        if v < 0.0 {
            return Err(bad(
                column,
                format!(
                    "{v} is negative; frames per second, their standard deviation and stage \
                     times are at least 0"
                ),
            ));
        }
    }
    if let (Some(fps), Some(std)) = (row.fps_mean, row.fps_std)
        && !(fps + std).is_finite()
    {
        return Err(bad(
            "fps_mean + fps_std",
            format!("{fps:e} + {std:e} is beyond the largest f64 (the top of the error bar)"),
        ));
    }
    let stacked: f64 = values
        .iter()
        .filter(|(column, _)| STACKED.contains(column))
        .filter_map(|(_, v)| *v)
        .sum();
    if !stacked.is_finite() {
        return Err(bad(
            "ms_wind + ms_snow + ms_sort + ms_smoothing + ms_splat + ms_transfer + ms_draw",
            "the sum is beyond the largest f64 (the length of the stacked bar)".to_string(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            status: "ok".into(),
            fps_mean: Some(100.0),
            fps_std: Some(2.0),
            ms_frame: Some(10.0),
            ms_wind: Some(1.0),
            ms_draw: Some(0.0),
            ..Row::default()
        }
    }

    #[test]
    fn finite_non_negative_numbers_and_missing_ones_pass() {
        assert_eq!(check_row(&row()), Ok(()));
        assert_eq!(check_row(&Row::default()), Ok(()));
        let near_max = Row {
            fps_mean: Some(f64::MAX),
            fps_std: Some(0.0),
            ..row()
        };
        assert_eq!(check_row(&near_max), Ok(()));
    }

    #[test]
    fn each_fault_names_its_column() {
        let cases: [(Row, &str, &str); 6] = [
            (
                Row {
                    fps_mean: Some(f64::NAN),
                    ..row()
                },
                "fps_mean",
                "NaN is not a number",
            ),
            (
                Row {
                    ms_splat: Some(f64::INFINITY),
                    ..row()
                },
                "ms_splat",
                "inf is not a finite number",
            ),
            (
                Row {
                    fps_std: Some(-1.5),
                    ..row()
                },
                "fps_std",
                "-1.5 is negative",
            ),
            (
                Row {
                    ms_frame: Some(-0.25),
                    ..row()
                },
                "ms_frame",
                "-0.25 is negative",
            ),
            (
                Row {
                    fps_mean: Some(1.7e308),
                    fps_std: Some(1e308),
                    ..row()
                },
                "fps_mean + fps_std",
                "1.7e308 + 1e308 is beyond the largest f64",
            ),
            (
                Row {
                    ms_wind: Some(1.7e308),
                    ms_snow: Some(1.7e308),
                    ..row()
                },
                "ms_wind + ms_snow + ms_sort + ms_smoothing + ms_splat + ms_transfer + ms_draw",
                "the sum is beyond the largest f64",
            ),
        ];
        for (row, column, problem) in cases {
            let error = check_row(&row).unwrap_err();
            assert_eq!(error.column, column);
            assert!(error.problem.starts_with(problem), "{}", error.problem);
        }
        // -0 is not below 0.
        let minus_zero = Row {
            ms_draw: Some(-0.0),
            ..row()
        };
        assert_eq!(check_row(&minus_zero), Ok(()));
    }
}
