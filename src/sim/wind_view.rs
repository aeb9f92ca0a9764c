//! The wind and pressure views' samples: the wind at a spread of the domain's vertices, with
//! the colour ranges of the field as it is. The drawing asks
//! [`Simulation::wind_samples`](super::Simulation::wind_samples) for them when a view is shown, never otherwise: reading
//! the whole field back costs milliseconds, which a run that does not show it must not pay.

/// Vertices the views sample.
pub const WIND_VIEW_SAMPLES: usize = 1536;

/// Sea-level pressure of the hydrostatic pressure shown with the fixed profile, in kPa.
pub const SEA_LEVEL_KPA: f32 = 101.325;
/// Specific gas constant of dry air (J/(kg·K)) times a standard temperature of 15 °C (K):
/// divided by gravity, the scale height of the hydrostatic pressure.
const RT: f32 = 287.05 * 288.15;

/// What the views draw: per sample a position and the wind with its pressure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WindSamples {
    /// Two float4 per sample, as the renderer's field buffer holds them: the position (xyz,
    /// m), then the velocity (xyz, m/s) with the pressure (w).
    pub points: Vec<[f32; 4]>,
    /// The largest speed of the whole field (drawn red), m/s.
    pub speed_max: f32,
    /// The pressures drawn yellow and red: the field's 5th and 95th percentiles.
    pub pressure: [f32; 2],
}

/// `count` vertices spread over a mesh of `vertices`: every k-th of a renumbered
/// (space-filling curve) order, which spreads them through the volume.
pub fn sample_vertices(vertices: usize, count: usize) -> Vec<u32> {
    let count = count.clamp(1, vertices.max(1));
    (0..count)
        .map(|i| ((i as u64 * vertices as u64) / count as u64) as u32)
        .collect()
}

/// The hydrostatic pressure at height `z` (m) under `gravity` (m/s²), in kPa:
/// `101.325 kPa · exp(−g z / RT)`, what the pressure view shows with the fixed profile.
pub fn hydrostatic_kpa(z: f32, gravity: f32) -> f32 {
    SEA_LEVEL_KPA * (-z * gravity / RT).exp()
}

/// The samples of a field (`velocity` and `pressure` per vertex of `vertices`) at `indices`,
/// with its colour ranges: red at the largest speed, and the pressure's 5th and 95th
/// percentiles at yellow and red.
pub fn samples(
    vertices: &[[f64; 3]],
    velocity: &[[f32; 4]],
    pressure: &[f32],
    indices: &[u32],
) -> WindSamples {
    let mut points = Vec::with_capacity(2 * indices.len());
    for &i in indices {
        let i = i as usize;
        let (Some(p), Some(u), Some(&q)) = (vertices.get(i), velocity.get(i), pressure.get(i))
        else {
            continue;
        };
        points.push([p[0] as f32, p[1] as f32, p[2] as f32, 0.0]);
        points.push([u[0], u[1], u[2], q]);
    }
    let speed_max = velocity
        .iter()
        .map(|u| (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt())
        .filter(|s| s.is_finite())
        .fold(0.0f32, f32::max);
    let mut finite: Vec<f32> = pressure.iter().copied().filter(|p| p.is_finite()).collect();
    let (low, high) = (percentile(&mut finite, 0.05), percentile(&mut finite, 0.95));
    WindSamples {
        points,
        speed_max: speed_max.max(f32::MIN_POSITIVE),
        pressure: [low, if high > low { high } else { low + 1.0 }],
    }
}

/// The `q` quantile of `values` (0 when empty), reordering them.
fn percentile(values: &mut [f32], q: f64) -> f32 {
    if values.is_empty() {
        return 0.0;
    }
    let k = ((values.len() - 1) as f64 * q) as usize;
    *values.select_nth_unstable_by(k, f32::total_cmp).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_pair_positions_with_the_field_and_rank_the_pressure() {
        let vertices: Vec<[f64; 3]> = (0..100).map(|i| [i as f64, 0.0, 1.0]).collect();
        let velocity: Vec<[f32; 4]> = (0..100).map(|i| [i as f32 * 0.1, 0.0, 0.0, 0.0]).collect();
        let pressure: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let s = samples(&vertices, &velocity, &pressure, &[3, 50]);
        assert_eq!(s.points[0], [3.0, 0.0, 1.0, 0.0]);
        assert_eq!(s.points[3], [5.0, 0.0, 0.0, 50.0]);
        assert!((s.speed_max - 9.9).abs() < 1e-5);
        // 5th and 95th percentiles of 0..99 (nearest rank below).
        assert_eq!(s.pressure, [4.0, 94.0]);
    }

    #[test]
    fn the_hydrostatic_pressure_falls_by_e_over_the_scale_height() {
        let g = 9.81;
        assert_eq!(hydrostatic_kpa(0.0, g), SEA_LEVEL_KPA);
        let h = RT / g;
        assert!((hydrostatic_kpa(h, g) - SEA_LEVEL_KPA / std::f32::consts::E).abs() < 1e-3);
    }

    #[test]
    fn sample_vertices_spread_and_stay_in_range() {
        assert_eq!(sample_vertices(10, 5), [0, 2, 4, 6, 8]);
        assert_eq!(sample_vertices(3, 10), [0, 1, 2]);
        assert_eq!(sample_vertices(0, 4), [0]);
    }
}
