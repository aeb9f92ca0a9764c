//! The font every plot's text is drawn with: DejaVu Sans, embedded in the binary (licence in
//! `assets/fonts/DejaVuSans.LICENSE`) and registered with plotters once per process.

use std::sync::OnceLock;

use plotters::style::FontStyle;

/// The family name the plots ask for.
pub const FAMILY: &str = "sans-serif";

/// DejaVu Sans, as shipped by fonts-dejavu-core (embedded once, by the renderer's OSD).
use crate::render::DEJAVU_SANS;

/// Registers the embedded font under [`FAMILY`] the first time it is called; later calls
/// return the first call's result.
pub fn register() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FAMILY, FontStyle::Normal, DEJAVU_SANS)
                .map_err(|_| "the embedded DejaVu Sans font does not parse".to_string())
        })
        .clone()
}
