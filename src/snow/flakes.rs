//! The falling snow as flakes: from the scene's real snowfall, how many flakes are in the air,
//! how much they dim what is behind them, and how far one sees through them. Pure functions,
//! no device.
//!
//! # Formulas and units
//!
//! - **Snowfall.** `R` metres of laid snow per hour (`snow.rate`, the scene's **real** rate:
//!   `time.acceleration` speeds up how fast the cover grows in the simulation, never how thick
//!   the snowfall looks) of density `ρ_s` kg/m³ (`snow.density`, default 100) is a mass flux
//!   onto the ground of `F = ρ_s R / 3600` kg m⁻² s⁻¹.
//! - **Flake mass** (Brown & Francis 1995, aggregates, `D` the maximum dimension):
//!   `m = 0.0185 D^1.9` g with `D` in cm, that is `m = a D^b` kg with `D` in metres,
//!   `a = 0.0185 · 10⁻³ · 100^1.9 = 0.11673` and `b = 1.9`.
//! - **Fall speed**: the simulator's law (`snow.fall_speed` `v_t` for a flake of the mean
//!   diameter `D̄`, Locatelli & Hobbs 1974's weak size dependence of aggregates):
//!   `v(D) = v_t (D / D̄)^0.2` m/s.
//! - **Sizes**: uniform in `D` over `snow.flake_diameter` `[D₀, D₁]`, as the simulator draws
//!   them (in steady snowfall the flakes in the air would weigh towards the slower small ones
//!   by `1/v(D)`: at most 1.32× over 2–8 mm; not modelled).
//! - **Number density**: the flux is carried by the flakes falling through a horizontal plane,
//!   `F = n ⟨m v⟩`, so `n = F / ⟨m v⟩` flakes per m³, with
//!   `⟨m v⟩ = a v_t D̄^-0.2 (D₁^p − D₀^p) / (p (D₁ − D₀))`, `p = b + 1.2` (the mean of `m v` over
//!   `D` uniform; `a v_t D^b (D/D̄)^0.2` for a single size).
//! - **Cross-section**: the mean projected area of a flake, as a disc of diameter `D`:
//!   `⟨A⟩ = π/4 ⟨D²⟩ = π (D₁³ − D₀³) / (12 (D₁ − D₀))` m².
//! - **Extinction**: `β = Q_ext n ⟨A⟩` per metre, with `Q_ext = 2` ([`EXTINCTION_EFFICIENCY`]:
//!   the far-field limit for particles much larger than the wavelength, whose diffraction peak
//!   a distant observer cannot tell from the direct light; a camera resolving the flakes
//!   themselves would see 1).
//! - **Visibility** (Koschmieder): the distance at which a black target's contrast against the
//!   sky falls to 2 %, `V = −ln 0.02 / β = 3.912 / β` metres.
//!
//! On the default valley (10 mm/h, 100 kg/m³, 2–8 mm flakes at 1 m/s):
//! `n = 49.2 m⁻³`, `β = 2.17 · 10⁻³ m⁻¹`, `V = 1.81 km`.

/// `a` of the mass law `m = a D^b` (kg, `D` in m): Brown & Francis (1995)'s 0.0185 g cm^-1.9.
pub const MASS_COEFFICIENT: f64 = 0.0185e-3 * 6_309.573_444_801_932; // 100^1.9
/// `b` of the mass law.
pub const MASS_EXPONENT: f64 = 1.9;
/// Exponent of the fall speed's size law `v(D) = v_t (D / D̄)^0.2` (the simulator's).
pub const FALL_EXPONENT: f64 = 0.2;
/// `Q_ext`: the extinction efficiency of flakes much larger than the wavelength, far field.
pub const EXTINCTION_EFFICIENCY: f64 = 2.0;
/// `−ln 0.02`: Koschmieder's contrast threshold of 2 %.
pub const KOSCHMIEDER: f64 = 3.912;
/// Density of laid snow, kg/m³, when a scene does not say (`snow.density`).
pub const DEFAULT_DENSITY: f64 = 100.0;

/// What the flakes' numbers are computed from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Snowfall {
    /// The real snowfall, metres of laid snow per hour (never accelerated).
    pub rate: f64,
    /// Density of the laid snow, kg/m³.
    pub density: f64,
    /// Smallest and largest flake diameter, metres (uniform in between).
    pub diameter: [f64; 2],
    /// Terminal fall speed of a flake of the mean diameter, m/s.
    pub fall_speed: f64,
}

/// A snowfall whose numbers cannot be computed, naming the quantity.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct FlakeError(pub String);

impl Snowfall {
    /// Checks the quantities: a finite rate ≥ 0, a finite density > 0, diameters with
    /// 0 < D₀ ≤ D₁, a finite fall speed > 0.
    pub fn validate(&self) -> Result<(), FlakeError> {
        let bad = |what: &str, v: String| Err(FlakeError(format!("{what}: {v}")));
        if !(self.rate.is_finite() && self.rate >= 0.0) {
            return bad(
                "snowfall rate must be finite and >= 0 m/h",
                self.rate.to_string(),
            );
        }
        if !(self.density.is_finite() && self.density > 0.0) {
            return bad(
                "snow density must be finite and > 0 kg/m³",
                self.density.to_string(),
            );
        }
        let [d0, d1] = self.diameter;
        if !(d0.is_finite() && d1.is_finite() && d0 > 0.0 && d0 <= d1) {
            return bad(
                "flake diameters must be finite with 0 < min <= max",
                format!("[{d0}, {d1}] m"),
            );
        }
        if !(self.fall_speed.is_finite() && self.fall_speed > 0.0) {
            return bad(
                "fall speed must be finite and > 0 m/s",
                self.fall_speed.to_string(),
            );
        }
        Ok(())
    }

    /// The mass flux onto the ground, `F = ρ_s R / 3600`, kg m⁻² s⁻¹.
    pub fn mass_flux(&self) -> f64 {
        self.density * self.rate / 3600.0
    }

    /// `⟨m v⟩` over the flakes, kg m/s.
    pub fn mean_mass_speed(&self) -> f64 {
        let [d0, d1] = self.diameter;
        let mean = 0.5 * (d0 + d1);
        let scale = MASS_COEFFICIENT * self.fall_speed / mean.powf(FALL_EXPONENT);
        let p = MASS_EXPONENT + FALL_EXPONENT + 1.0;
        if d1 - d0 <= 1e-9 * d1 {
            return scale * d0.powf(p - 1.0);
        }
        scale * (d1.powf(p) - d0.powf(p)) / (p * (d1 - d0))
    }

    /// Flakes per cubic metre of air, `n = F / ⟨m v⟩`.
    pub fn number_density(&self) -> f64 {
        self.mass_flux() / self.mean_mass_speed()
    }

    /// The mean projected area of a flake, `π/4 ⟨D²⟩`, m².
    pub fn mean_cross_section(&self) -> f64 {
        let [d0, d1] = self.diameter;
        let mean_square = if d1 - d0 <= 1e-9 * d1 {
            d0 * d0
        } else {
            (d1.powi(3) - d0.powi(3)) / (3.0 * (d1 - d0))
        };
        std::f64::consts::FRAC_PI_4 * mean_square
    }

    /// The extinction coefficient `β = Q_ext n ⟨A⟩`, per metre.
    pub fn extinction(&self) -> f64 {
        EXTINCTION_EFFICIENCY * self.number_density() * self.mean_cross_section()
    }

    /// Koschmieder's visibility `V = 3.912 / β`, metres (infinite without snowfall).
    pub fn visibility(&self) -> f64 {
        visibility(self.extinction())
    }
}

/// Koschmieder's visibility for an extinction coefficient `beta` per metre: `3.912 / β`
/// metres (infinite for no extinction).
pub fn visibility(beta: f64) -> f64 {
    if beta > 0.0 {
        KOSCHMIEDER / beta
    } else {
        f64::INFINITY
    }
}

/// The mass of a flake of maximum dimension `diameter` metres, kg (Brown & Francis 1995).
pub fn flake_mass(diameter: f64) -> f64 {
    MASS_COEFFICIENT * diameter.powf(MASS_EXPONENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valley() -> Snowfall {
        Snowfall {
            rate: 0.01,
            density: 100.0,
            diameter: [0.002, 0.008],
            fall_speed: 1.0,
        }
    }

    fn close(got: f64, expected: f64, relative: f64) -> bool {
        ((got - expected) / expected).abs() <= relative
    }

    #[test]
    fn the_mass_law_is_brown_and_francis_in_grams_and_centimetres() {
        // 0.5 cm: 0.0185 g × 0.5^1.9 = 0.0185 × 0.267943 g = 4.957e-3 g.
        let m = flake_mass(0.005);
        assert!(close(m, 4.957e-6, 1e-3), "{m}");
        // 1 cm: 0.0185 g exactly.
        assert!(close(flake_mass(0.01), 0.0185e-3, 1e-12));
    }

    #[test]
    fn the_valley_snowfall_by_hand() {
        // F = 100 × 0.01 / 3600 = 2.7778e-4 kg m⁻² s⁻¹.
        let s = valley();
        assert!(close(s.mass_flux(), 2.7778e-4, 1e-4));
        // ⟨m v⟩ = 0.116727 × 1 / 0.005^0.2 × (0.008^3.1 − 0.002^3.1) / (3.1 × 0.006)
        //       = 0.116727 / 0.346572 × (3.15921e-7 − 4.29727e-9) / 0.0186 = 5.6428e-6.
        assert!(
            close(s.mean_mass_speed(), 5.6428e-6, 1e-3),
            "{}",
            s.mean_mass_speed()
        );
        // n = 2.7778e-4 / 5.6428e-6 = 49.23 per m³.
        assert!(
            close(s.number_density(), 49.23, 2e-3),
            "{}",
            s.number_density()
        );
        // ⟨A⟩ = π/4 × (0.008³ − 0.002³) / (3 × 0.006) = π/4 × 2.8e-5 = 2.1991e-5 m².
        assert!(close(s.mean_cross_section(), 2.1991e-5, 1e-4));
        // β = 2 × 49.23 × 2.1991e-5 = 2.1651e-3 per m; V = 3.912 / β = 1807 m.
        assert!(close(s.extinction(), 2.1651e-3, 2e-3), "{}", s.extinction());
        assert!(close(s.visibility(), 1807.0, 2e-3), "{}", s.visibility());
    }

    #[test]
    fn the_mean_over_sizes_is_the_integral_over_a_uniform_distribution() {
        // Midpoint rule over 10 000 sizes, from the per-flake laws alone.
        let s = valley();
        let [d0, d1] = s.diameter;
        let mean = 0.5 * (d0 + d1);
        let k = 10_000;
        let (mut mv, mut area) = (0.0, 0.0);
        for i in 0..k {
            let d = d0 + (i as f64 + 0.5) * (d1 - d0) / k as f64;
            mv += flake_mass(d) * s.fall_speed * (d / mean).powf(0.2);
            area += std::f64::consts::PI * d * d / 4.0;
        }
        assert!(close(s.mean_mass_speed(), mv / k as f64, 1e-6));
        assert!(close(s.mean_cross_section(), area / k as f64, 1e-6));
    }

    #[test]
    fn one_size_and_proportionalities() {
        // One size of 5 mm at 1 m/s: n = F / (m v) = 2.7778e-4 / 4.957e-6 = 56.04.
        let one = Snowfall {
            diameter: [0.005, 0.005],
            ..valley()
        };
        assert!(
            close(one.number_density(), 56.04, 2e-3),
            "{}",
            one.number_density()
        );
        // β grows with the rate and the density; V shrinks as 1 / β.
        let s = valley();
        let twice = Snowfall { rate: 0.02, ..s };
        assert!(close(twice.extinction(), 2.0 * s.extinction(), 1e-12));
        let dense = Snowfall {
            density: 200.0,
            ..s
        };
        assert!(close(
            dense.number_density(),
            2.0 * s.number_density(),
            1e-12
        ));
        assert!(close(twice.visibility(), 0.5 * s.visibility(), 1e-12));
        // No snowfall: no flakes, an infinite view.
        let none = Snowfall { rate: 0.0, ..s };
        assert_eq!(none.extinction(), 0.0);
        assert_eq!(none.visibility(), f64::INFINITY);
    }

    #[test]
    fn bad_quantities_are_named() {
        let s = valley();
        for (bad, word) in [
            (Snowfall { rate: -1.0, ..s }, "rate"),
            (Snowfall { density: 0.0, ..s }, "density"),
            (
                Snowfall {
                    diameter: [0.004, 0.002],
                    ..s
                },
                "diameters",
            ),
            (
                Snowfall {
                    fall_speed: f64::NAN,
                    ..s
                },
                "fall speed",
            ),
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(word), "{e}");
        }
        assert!(s.validate().is_ok());
    }
}
