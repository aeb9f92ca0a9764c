//! The settings of a sweep row that tell configurations apart: every column a user chose
//! (device, scene, sizes, modes asked for, frame counts), as named text values, so that rows
//! can be grouped into series and series named by the settings that differ.

use crate::bench::record::Row;

/// A setting's name and its value as text, e.g. `("sort", "full")`.
pub type Setting = (&'static str, String);

/// The names of the settings [`settings`] returns, in its order.
pub const SETTING_NAMES: [&str; 19] = [
    "device",
    "device_index",
    "platform",
    "scene",
    "particles",
    "tets",
    "width",
    "height",
    "render",
    "interop",
    "particle_render",
    "sort",
    "simulate",
    "wind_device",
    "wind_every",
    "split",
    "frames",
    "warmup",
    "repeats",
];

/// The settings of `row`, named as in [`SETTING_NAMES`].
///
/// The interop and particle-render modes are the ones asked for (`interop_requested`,
/// `particle_render_requested`): the modes actually used are empty on a failed row, which
/// would otherwise put it in a series of its own. An empty `sort` reads `scene` (the scene's
/// own), as does a missing `tets`. The devices of a split run read compactly (`NAME ×2`,
/// indices `0+1`, [`Row::device_names`]); `split` is the fraction of the parcels each held
/// (the parcels themselves grow with the particle count, the fractions do not); the wind's
/// device reads `same` where it is the snow's.
pub fn settings(row: &Row) -> [Setting; 19] {
    let or_scene = |s: &str| {
        if s.is_empty() {
            "scene".to_string()
        } else {
            s.to_string()
        }
    };
    [
        ("device", row.device_names()),
        ("device_index", {
            let indices: Vec<String> = row.device_index.iter().map(usize::to_string).collect();
            indices.join("+")
        }),
        ("platform", row.platform.clone()),
        ("scene", row.scene.clone()),
        ("particles", row.particles.to_string()),
        ("tets", row.tets.map_or("scene".into(), |t| t.to_string())),
        ("width", row.width.to_string()),
        ("height", row.height.to_string()),
        ("render", if row.render { "on" } else { "off" }.into()),
        ("interop", or_scene(&row.interop_requested)),
        ("particle_render", or_scene(&row.particle_render_requested)),
        ("sort", or_scene(&row.sort)),
        ("simulate", row.simulate.clone()),
        ("wind_device", wind_device(row)),
        (
            "wind_every",
            row.wind_every.map_or("scene".into(), |k| k.to_string()),
        ),
        ("split", fractions(&row.snow_shares)),
        ("frames", row.frames.to_string()),
        ("warmup", row.warmup.to_string()),
        ("repeats", row.repeats.to_string()),
    ]
}

/// The wind's own device as a setting: `same` where it is the snow's; its index alone where
/// it has the snow's device's name (two GPUs of one model: the name is in `device` already),
/// else `INDEX NAME`.
fn wind_device(row: &Row) -> String {
    if row.wind_device.is_empty() {
        return "same".to_string();
    }
    let snow = row.device.split(';').next().unwrap_or("");
    match (row.wind_device_index, row.wind_device.split_once(' ')) {
        (Some(i), Some((_, name))) if name == snow => i.to_string(),
        _ => row.wind_device.clone(),
    }
}

/// The fraction of the parcels each device of a split held, from `snow_shares` (`292;732`
/// reads `0.29+0.71`); empty when not split, the text itself where it is not a `;`-list of
/// counts.
fn fractions(shares: &str) -> String {
    if shares.is_empty() {
        return String::new();
    }
    let counts: Option<Vec<u64>> = shares.split(';').map(|c| c.trim().parse().ok()).collect();
    match counts {
        Some(counts) if counts.iter().sum::<u64>() > 0 => {
            let total = counts.iter().sum::<u64>() as f64;
            let parts: Vec<String> = counts
                .iter()
                .map(|&c| format!("{:.2}", c as f64 / total))
                .collect();
            parts.join("+")
        }
        _ => shares.to_string(),
    }
}

/// The settings of `row` without the one named `x` (the quantity a plot puts on its x axis):
/// the key of the series the row belongs to.
pub fn series_key(row: &Row, x: &str) -> Vec<Setting> {
    settings(row)
        .into_iter()
        .filter(|(name, _)| *name != x)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_settings_in_order() {
        let names: Vec<&str> = settings(&Row::default()).iter().map(|(n, _)| *n).collect();
        assert_eq!(names, SETTING_NAMES);
    }

    #[test]
    fn the_x_setting_is_left_out_of_the_key() {
        let row = Row {
            particles: 1024,
            tets: Some(77),
            ..Row::default()
        };
        let key = series_key(&row, "particles");
        assert!(key.iter().all(|(n, _)| *n != "particles"));
        assert!(key.contains(&("tets", "77".to_string())));
        assert_eq!(key.len(), SETTING_NAMES.len() - 1);
    }

    #[test]
    fn a_split_reads_compactly_and_by_fractions() {
        let row = Row {
            device: "gpu;gpu".into(),
            device_index: vec![1, 2],
            snow_shares: "250;750".into(),
            wind_every: Some(3),
            ..Row::default()
        };
        let all = settings(&row);
        let get = |n: &str| all.iter().find(|(k, _)| *k == n).unwrap().1.clone();
        assert_eq!(get("device"), "gpu ×2");
        assert_eq!(get("device_index"), "1+2");
        assert_eq!(get("split"), "0.25+0.75");
        assert_eq!(get("wind_device"), "same");
        assert_eq!(get("wind_every"), "3");
        assert_eq!(fractions("a;b"), "a;b");
        let beside = |name: &str| Row {
            device: "gpu".into(),
            wind_device: format!("1 {name}"),
            wind_device_index: Some(1),
            ..Row::default()
        };
        assert_eq!(wind_device(&beside("gpu")), "1");
        assert_eq!(wind_device(&beside("cpu x")), "1 cpu x");
    }
}
