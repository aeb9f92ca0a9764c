//! Reference images per view (issue 27): the flat scene drawn headless (llvmpipe in CI) as a
//! user runs it, compared with the PNGs in `tests/app/render/reference/` within a tolerance
//! (as wgpu's example tests do): a pixel differs when a channel is off by more than
//! [`CHANNEL_TOLERANCE`], and at most [`DIFFERING_FRACTION`] of the pixels may. A view that
//! changes on purpose is blessed again with
//! `SNOWSIM_BLESS=1 cargo test --test app render::reference` (README, "Tests"); look at the new
//! PNGs before committing them.

use std::path::{Path, PathBuf};

use super::{FLAT, snowsim, temp_dir, text};

/// Largest difference of a channel (of 255) that still counts as the same pixel.
const CHANNEL_TOLERANCE: u8 = 12;
/// Largest fraction of pixels that may differ.
const DIFFERING_FRACTION: f64 = 0.01;

fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/app/render/reference")
        .join(format!("{name}.png"))
}

/// Draws the flat scene's third frame at 320×180 with sprites and `extra` options and compares
/// it with the reference `name` (or writes it, blessing).
fn check_view(name: &str, extra: &[&str]) {
    check_drawn(name, "sprites", extra, true);
}

/// [`check_view`] drawn by `render` (`sprites` or `splat`), blessing only when `blesses`.
fn check_drawn(name: &str, render: &str, extra: &[&str], blesses: bool) {
    let dir = temp_dir(&format!("reference-{name}-{render}"));
    let shot = dir.join("frame.png");
    let out = snowsim()
        .args([
            "run",
            "--scene",
            FLAT,
            "--headless",
            "--frames",
            "3",
            "--size",
            "320x180",
        ])
        .args(["--particle-render", render, "--interop", "copy"])
        .args(extra)
        .arg("--screenshot")
        .arg(&shot)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let drawn = image::open(&shot).unwrap().to_rgba8();
    let path = reference(name);
    if blesses && std::env::var_os("SNOWSIM_BLESS").is_some() {
        drawn.save(&path).unwrap();
        eprintln!("blessed {}", path.display());
        return;
    }
    let Ok(expected) = image::open(&path) else {
        panic!(
            "no reference {}: run `SNOWSIM_BLESS=1 cargo test --test app render::reference` and \
             look at the PNG before committing it",
            path.display()
        );
    };
    let expected = expected.to_rgba8();
    assert_eq!(drawn.dimensions(), expected.dimensions(), "{name}");
    let differing = drawn
        .pixels()
        .zip(expected.pixels())
        .filter(|(a, b)| {
            a.0.iter()
                .zip(b.0)
                .any(|(&x, y)| x.abs_diff(y) > CHANNEL_TOLERANCE)
        })
        .count();
    let fraction = differing as f64 / f64::from(drawn.width() * drawn.height());
    if fraction > DIFFERING_FRACTION {
        let kept = dir.join(format!("{name}-drawn.png"));
        drawn.save(&kept).unwrap();
        panic!(
            "{name} ({render}): {:.2} % of the pixels differ from {} by more than \
             {CHANNEL_TOLERANCE}/255 (at most {:.0} %); the frame drawn is kept in {}",
            100.0 * fraction,
            path.display(),
            100.0 * DIFFERING_FRACTION,
            kept.display()
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_snowfall_view_matches_its_reference() {
    check_view("snowfall", &[]);
}

/// The splat path draws the same snowfall as the sprites, within the references' tolerance
/// (the "the same image within a stated tolerance"): the parcels, their flakes near
/// the camera, the near flakes and the veil, compared with the sprites' reference.
#[test]
fn the_splat_path_draws_the_snowfall_reference_too() {
    check_drawn("snowfall", "splat", &[], false);
}

#[test]
fn the_wind_view_matches_its_reference() {
    check_view("wind", &["--wind"]);
}

#[test]
fn the_pressure_view_matches_its_reference() {
    check_view("pressure", &["--pressure"]);
}
