//! The settings of a sweep row that tell configurations apart: every column a user chose
//! (device, scene, sizes, modes asked for, frame counts), as named text values, so that rows
//! can be grouped into series and series named by the settings that differ.

use crate::bench::record::Row;

/// A setting's name and its value as text, e.g. `("sort", "full")`.
pub type Setting = (&'static str, String);

/// The names of the settings [`settings`] returns, in its order.
pub const SETTING_NAMES: [&str; 16] = [
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
    "frames",
    "warmup",
    "repeats",
];

/// The settings of `row`, named as in [`SETTING_NAMES`].
///
/// The interop and particle-render modes are the ones asked for (`interop_requested`,
/// `particle_render_requested`): the modes actually used are empty on a failed row, which
/// would otherwise put it in a series of its own. An empty `sort` reads `scene` (the scene's
/// own), as does a missing `tets`.
pub fn settings(row: &Row) -> [Setting; 16] {
    let or_scene = |s: &str| {
        if s.is_empty() {
            "scene".to_string()
        } else {
            s.to_string()
        }
    };
    [
        ("device", row.device.clone()),
        (
            "device_index",
            row.device_index.map_or(String::new(), |i| i.to_string()),
        ),
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
        ("frames", row.frames.to_string()),
        ("warmup", row.warmup.to_string()),
        ("repeats", row.repeats.to_string()),
    ]
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
}
