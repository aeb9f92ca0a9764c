//! Averaging a configuration's repeats: FPS mean and standard deviation, stage times.

use super::child::RunReport;

/// Mean and sample standard deviation (divided by n − 1; 0 for one value) of `values`;
/// `None` when there are none.
pub fn mean_std(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() == 1 {
        return Some((mean, 0.0));
    }
    let squares: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    Some((mean, (squares / (n - 1.0)).sqrt()))
}

/// Each stage's busy time averaged over the repeats, in the order the stages first appear; a
/// stage missing from a repeat counts as 0 ms there.
pub fn mean_stages(runs: &[RunReport]) -> Vec<(String, f64)> {
    let mut sums: Vec<(String, f64)> = Vec::new();
    for run in runs {
        for s in &run.stages {
            match sums.iter_mut().find(|(name, _)| *name == s.stage) {
                Some((_, sum)) => *sum += s.busy_ms,
                None => sums.push((s.stage.clone(), s.busy_ms)),
            }
        }
    }
    let n = runs.len().max(1) as f64;
    sums.into_iter()
        .map(|(name, sum)| (name, sum / n))
        .collect()
}

/// The distinct values of `values`, in order, joined by `/` (one value when the repeats agree).
pub fn distinct(values: impl IntoIterator<Item = String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if !v.is_empty() && !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen.join("/")
}

#[cfg(test)]
mod tests {
    use super::super::child::StageReport;
    use super::*;

    #[test]
    fn mean_and_sample_std_against_hand_values() {
        assert_eq!(mean_std(&[]), None);
        assert_eq!(mean_std(&[42.0]), Some((42.0, 0.0)));
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squares 32, 32 / 7.
        let (m, s) = mean_std(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(m, 5.0);
        assert!((s - (32.0f64 / 7.0).sqrt()).abs() < 1e-12, "{s}");
        // 100 and 110: mean 105, std |a − b| / √2.
        let (m, s) = mean_std(&[100.0, 110.0]).unwrap();
        assert_eq!(m, 105.0);
        assert!((s - 10.0 / 2f64.sqrt()).abs() < 1e-12, "{s}");
    }

    fn run(stages: &[(&str, f64)]) -> RunReport {
        RunReport {
            fps: 1.0,
            frame_ms: 1.0,
            measured_frames: 1,
            particles: 1,
            interop: String::new(),
            particle_render: String::new(),
            stages: stages
                .iter()
                .map(|(s, ms)| StageReport {
                    stage: s.to_string(),
                    busy_ms: *ms,
                })
                .collect(),
            snow_devices: Vec::new(),
        }
    }

    #[test]
    fn stages_average_over_repeats_with_missing_ones_as_zero() {
        let runs = [
            run(&[("snow.step", 1.0), ("sort.local", 0.5)]),
            run(&[("snow.step", 3.0), ("splat", 2.0)]),
        ];
        assert_eq!(
            mean_stages(&runs),
            vec![
                ("snow.step".to_string(), 2.0),
                ("sort.local".to_string(), 0.25),
                ("splat".to_string(), 1.0)
            ]
        );
        assert!(mean_stages(&[]).is_empty());
    }

    #[test]
    fn distinct_values_keep_their_order() {
        let v = |s: &[&str]| distinct(s.iter().map(|s| s.to_string()));
        assert_eq!(v(&["copy", "copy"]), "copy");
        assert_eq!(v(&["sprites", "", "splat", "sprites"]), "sprites/splat");
        assert_eq!(v(&[]), "");
    }
}
