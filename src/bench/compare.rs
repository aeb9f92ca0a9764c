//! A sweep against a baseline (`snowsim bench --compare BASELINE.csv`): each configuration's
//! FPS beside that of the baseline's row of the same configuration, matched by
//! [`ConfigKey`], so that a change's effect reads off one line per configuration.

use crate::bench::record::Row;

/// What makes two sweep rows the same configuration: the devices (index and name, the snow's
/// own first), the scene, the sizes, every setting asked for, the wind's device and its
/// steps, the parcels each device of a split held. The date, the versions and the measured values are not part of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConfigKey {
    device: String,
    device_index: Vec<usize>,
    scene: String,
    particles: u64,
    tets: Option<u64>,
    size: (u32, u32),
    render: bool,
    interop: String,
    particle_render: String,
    sort: String,
    simulate: String,
    wind_device: Option<usize>,
    wind_device_name: String,
    wind_every: Option<u32>,
    snow_shares: String,
}

impl ConfigKey {
    /// The configuration of `row`.
    pub fn of(row: &Row) -> Self {
        Self {
            device: row.device.clone(),
            device_index: row.device_index.clone(),
            scene: row.scene.clone(),
            particles: row.particles,
            tets: row.tets,
            size: (row.width, row.height),
            render: row.render,
            interop: row.interop_requested.clone(),
            particle_render: row.particle_render_requested.clone(),
            sort: row.sort.clone(),
            simulate: row.simulate.clone(),
            wind_device: row.wind_device_index,
            wind_device_name: row.wind_device.clone(),
            wind_every: row.wind_every,
            snow_shares: row.snow_shares.clone(),
        }
    }
}

/// One configuration of the new sweep against the baseline.
#[derive(Clone, Debug, PartialEq)]
pub enum Comparison {
    /// Both completed: the baseline's FPS and the new one.
    Both {
        /// The baseline's FPS (mean over its repeats).
        base: f64,
        /// This sweep's.
        new: f64,
    },
    /// The baseline has no completed row of this configuration.
    NoBaseline,
    /// This sweep's row did not complete (its status).
    Failed(String),
}

impl Comparison {
    /// `base FPS → new FPS (ratio×, ±%)`, or why there is nothing to compare.
    pub fn text(&self) -> String {
        match self {
            Comparison::Both { base, new } if *base > 0.0 => {
                let ratio = new / base;
                format!(
                    "{base:.1} → {new:.1} FPS ({ratio:.2}×, {:+.1}%)",
                    100.0 * (ratio - 1.0)
                )
            }
            Comparison::Both { base, new } => format!("{base:.1} → {new:.1} FPS"),
            Comparison::NoBaseline => "no baseline".to_string(),
            Comparison::Failed(status) => format!("no FPS: the run ended with {status}"),
        }
    }
}

/// Each row of `rows` against `baseline`: the baseline's last completed row (status `ok`,
/// with an FPS) of the same [`ConfigKey`], in the order of `rows`.
pub fn compare(rows: &[Row], baseline: &[Row]) -> Vec<Comparison> {
    let mut base = std::collections::HashMap::new();
    for row in baseline {
        if let (true, Some(fps)) = (row.status == "ok", row.fps_mean) {
            base.insert(ConfigKey::of(row), fps);
        }
    }
    rows.iter()
        .map(|row| match (base.get(&ConfigKey::of(row)), row.fps_mean) {
            _ if row.status != "ok" => Comparison::Failed(row.status.clone()),
            (None, _) => Comparison::NoBaseline,
            (Some(&base), Some(new)) => Comparison::Both { base, new },
            (Some(_), None) => Comparison::Failed("no fps_mean".into()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(index: usize, particles: u64, fps: f64) -> Row {
        Row {
            device: "gpu".into(),
            device_index: vec![index],
            scene: "scenes/flat.toml".into(),
            particles,
            status: "ok".into(),
            fps_mean: Some(fps),
            ..Row::default()
        }
    }

    #[test]
    fn rows_meet_the_baseline_of_their_own_configuration_only() {
        let mut baseline = vec![row(0, 1024, 100.0), row(1, 1024, 50.0), row(0, 1024, 80.0)];
        baseline.push(Row {
            status: "error".into(),
            fps_mean: None,
            ..row(0, 4096, 0.0)
        });
        let mut wind = row(0, 1024, 10.0);
        wind.wind_device = "1 gpu".into();
        wind.wind_device_index = Some(1);
        let mut failed = row(1, 1024, 0.0);
        failed.status = "timeout".into();
        let new = vec![row(0, 1024, 120.0), row(0, 4096, 40.0), wind, failed];
        let got = compare(&new, &baseline);
        // The last completed baseline row of a configuration counts (an --append'ed one).
        assert_eq!(
            got[0],
            Comparison::Both {
                base: 80.0,
                new: 120.0
            }
        );
        assert_eq!(got[0].text(), "80.0 → 120.0 FPS (1.50×, +50.0%)");
        assert_eq!(got[1], Comparison::NoBaseline);
        assert_eq!(
            got[2],
            Comparison::NoBaseline,
            "the wind device is part of the key"
        );
        assert_eq!(got[3], Comparison::Failed("timeout".into()));
        let slower = Comparison::Both {
            base: 200.0,
            new: 150.0,
        };
        assert_eq!(slower.text(), "200.0 → 150.0 FPS (0.75×, -25.0%)");
    }
}
