//! Time you can watch: the acceleration the keys change (`[` halves, `]` doubles
//! `time.acceleration`, the factor on the snowfall), the single step of a paused simulation
//! (`.`) and the on-screen display's lines (simulated time and acceleration, the real
//! snowfall rate, the mean and deepest snow, the particles, the frame rate and the device).

use std::time::{Duration, Instant};

use crate::sim::Simulation;

/// Smallest `time.acceleration` the keys go down to.
pub const MIN_ACCELERATION: f64 = 1.0 / 1024.0;
/// Largest `time.acceleration` the keys go up to (the scene file's bound).
pub const MAX_ACCELERATION: f64 = 1e6;
/// How often the display reads the snow's depths back from the device (a blocking read).
pub const OSD_REFRESH: Duration = Duration::from_millis(500);
/// How often the display's text is rasterised again at most (its numbers change every frame).
pub const OSD_TEXT_REFRESH: Duration = Duration::from_millis(100);
/// Weight of the newest frame in the display's frame rate (an exponential mean).
const FPS_WEIGHT: f64 = 0.1;

/// Asks `simulation` to lay its snow at `acceleration` times the scene's real snowfall from
/// the next landing on (the fixed-point unit stays the real parcel's, [`crate::snow`]);
/// returns whether it did (not for particles without a scene, or an acceleration out of the
/// scene file's bounds).
pub fn set_simulation_acceleration(simulation: &mut Simulation, acceleration: f64) -> bool {
    simulation.set_acceleration(acceleration).is_ok()
}

/// What the display shows and the acceleration the keys change.
#[derive(Clone, Debug)]
pub struct Watch {
    /// The scene's real snowfall, metres of snow per hour (`None`: no snow simulated).
    pub rate: Option<f64>,
    /// The acceleration the simulation lays its snow at.
    pub acceleration: f64,
    /// The acceleration the keys asked for (differs from `acceleration` while the simulation
    /// cannot change it).
    pub asked: f64,
    /// The ground's area, m² (the mean depth is the snow's volume over it).
    pub ground_area: f64,
    /// Step once while paused (`.`), taken by the next frame.
    pub step_once: bool,
    /// The snow's mean and deepest depth, metres, as last read.
    pub depths: Option<(f64, f64)>,
    /// When the depths were last read.
    pub read_at: Option<Instant>,
    /// Frames per second, an exponential mean over the frames drawn.
    pub fps: f64,
    last_frame: Option<Instant>,
    /// When the text was last rasterised.
    shown: Option<Instant>,
}

impl Watch {
    /// A display of a simulation laying `rate` m/h of snow (`None`: no snow) at
    /// `acceleration`, on a ground of `ground_area` m².
    pub fn new(rate: Option<f64>, acceleration: f64, ground_area: f64) -> Self {
        Self {
            rate,
            acceleration,
            asked: acceleration,
            ground_area,
            step_once: false,
            depths: None,
            read_at: None,
            fps: 0.0,
            last_frame: None,
            shown: None,
        }
    }

    /// Whether the text is due to be rasterised again: never shown, shown more than
    /// [`OSD_TEXT_REFRESH`] ago, or changed by a key since ([`touch`](Self::touch)).
    pub fn text_due(&self) -> bool {
        self.shown.is_none_or(|at| at.elapsed() >= OSD_TEXT_REFRESH)
    }

    /// Records that the text was rasterised now.
    pub fn text_shown(&mut self) {
        self.shown = Some(Instant::now());
    }

    /// Says that a key changed what the display shows: it is rasterised again next frame.
    pub fn touch(&mut self) {
        self.shown = None;
    }

    /// The acceleration `factor` times the one asked for, within
    /// [`MIN_ACCELERATION`]..[`MAX_ACCELERATION`]; the simulation is asked to lay its snow at
    /// it. Returns the line for the log.
    pub fn scale_acceleration(&mut self, simulation: &mut Simulation, factor: f64) -> String {
        self.asked = (self.asked * factor).clamp(MIN_ACCELERATION, MAX_ACCELERATION);
        self.touch();
        if set_simulation_acceleration(simulation, self.asked) {
            self.acceleration = self.asked;
            format!("time.acceleration ×{}", number(self.asked))
        } else {
            format!(
                "time.acceleration ×{} asked, not applied: the simulation keeps ×{} (it cannot \
                 change the snow its parcels carry while running)",
                number(self.asked),
                number(self.acceleration)
            )
        }
    }

    /// Records that a frame was drawn now (for the frame rate).
    pub fn frame_drawn(&mut self) {
        let now = Instant::now();
        if let Some(last) = self.last_frame.replace(now) {
            let seconds = now.duration_since(last).as_secs_f64();
            if seconds > 0.0 {
                let fps = 1.0 / seconds;
                self.fps = if self.fps == 0.0 {
                    fps
                } else {
                    self.fps + FPS_WEIGHT * (fps - self.fps)
                };
            }
        }
    }

    /// Whether the depths are due to be read again.
    pub fn depths_due(&self) -> bool {
        self.rate.is_some() && self.read_at.is_none_or(|t| t.elapsed() >= OSD_REFRESH)
    }

    /// Records the snow's volume (m³) and deepest depth (m), read now.
    pub fn set_depths(&mut self, volume: f64, deepest: f64) {
        let mean = if self.ground_area > 0.0 {
            volume / self.ground_area
        } else {
            0.0
        };
        self.depths = Some((mean, deepest));
        self.read_at = Some(Instant::now());
    }

    /// The display's lines for a simulation at `seconds` of simulated time (paused or not)
    /// with `particles` parcels on `device`.
    pub fn lines(&self, seconds: f64, paused: bool, particles: usize, device: &str) -> Vec<String> {
        let mut lines = Vec::new();
        let state = if paused { "  (paused)" } else { "" };
        lines.push(format!("time {}{state}", duration(seconds)));
        if let Some(rate) = self.rate {
            let a = self.acceleration;
            lines.push(format!(
                "acceleration ×{}: snow of {}",
                number(a),
                duration(a * seconds)
            ));
            if self.asked != a {
                lines.push(format!("×{} asked: not applied", number(self.asked)));
            }
            lines.push(format!(
                "snowfall {}/h (real), laid at {}/h",
                depth(rate),
                depth(rate * a)
            ));
            match self.depths {
                Some((mean, deepest)) => lines.push(format!(
                    "snow laid: mean {}, deepest {}",
                    depth(mean),
                    depth(deepest)
                )),
                None => lines.push("snow laid: not read yet".into()),
            }
        }
        lines.push(format!("particles {particles}"));
        lines.push(format!("{:.1} FPS", self.fps));
        lines.push(device.to_string());
        lines
    }
}

/// A factor as people write it: `3600`, `0.5`, `0.0009765625` → `0.00098`.
fn number(x: f64) -> String {
    if x >= 1.0 && x.fract() == 0.0 && x < 1e9 {
        format!("{x:.0}")
    } else {
        format!("{}", (x * 1e4).round() / 1e4)
            .chars()
            .take(8)
            .collect()
    }
}

/// Seconds as `12.3 s`, `4 min 5 s`, `2 h 3 min`, `3 d 4 h`.
fn duration(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!(
            "{} min {:02.0} s",
            (s / 60.0).floor(),
            s % 60.0 - (s % 60.0) % 1.0
        )
    } else if s < 86400.0 {
        format!(
            "{} h {:02} min",
            (s / 3600.0).floor(),
            ((s % 3600.0) / 60.0).floor()
        )
    } else {
        format!(
            "{} d {} h",
            (s / 86400.0).floor(),
            ((s % 86400.0) / 3600.0).floor()
        )
    }
}

/// A depth as `0.7 mm`, `12.0 cm`, `1.23 m`.
fn depth(metres: f64) -> String {
    let m = metres.max(0.0);
    if m < 0.001 {
        format!("{:.3} mm", m * 1e3)
    } else if m < 0.01 {
        format!("{:.1} mm", m * 1e3)
    } else if m < 1.0 {
        format!("{:.1} cm", m * 1e2)
    } else {
        format!("{m:.2} m")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_factors_and_depths_read_as_people_write_them() {
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(245.0), "4 min 05 s");
        assert_eq!(duration(3600.0 * 12.3), "12 h 18 min");
        assert_eq!(duration(86400.0 * 2.5), "2 d 12 h");
        assert_eq!(number(3600.0), "3600");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(depth(0.0007), "0.700 mm");
        assert_eq!(depth(0.0071), "7.1 mm");
        assert_eq!(depth(0.123), "12.3 cm");
        assert_eq!(depth(1.5), "1.50 m");
    }

    #[test]
    fn the_display_names_time_acceleration_snowfall_snow_particles_fps_and_device() {
        let mut watch = Watch::new(Some(0.01), 3600.0, 1e6);
        watch.set_depths(1e4, 0.05);
        let lines = watch.lines(60.0, true, 4096, "the device");
        let text = lines.join("\n");
        for needle in [
            "time 1 min 00 s  (paused)",
            "acceleration ×3600: snow of 2 d 12 h",
            "snowfall 1.0 cm/h (real), laid at 36.00 m/h",
            "snow laid: mean 1.0 cm, deepest 5.0 cm",
            "particles 4096",
            "FPS",
            "the device",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
    }
}
