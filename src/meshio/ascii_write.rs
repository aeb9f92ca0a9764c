//! Writing `.mesh` (ASCII) files, laid out as libMeshb 7 writes them.
//!
//! Reals are printed with the shortest text that parses back to the same value (`f32` for
//! version 1, `f64` otherwise), so ASCII round trips are exact.

use std::fmt::{self, Write};

use super::binary_write::WRITE_ORDER;
use super::error::EncodeError;
use super::format::Version;
use super::mesh::Mesh;

/// Encodes `mesh`; the mesh was checked by [`super::check_writable`].
pub(crate) fn encode(mesh: &Mesh, version: Version) -> Result<Vec<u8>, EncodeError> {
    let numbers = mesh.vertices.len() * 4
        + WRITE_ORDER
            .iter()
            .map(|&k| mesh.count(k) * (k.nodes() + 1))
            .sum::<usize>();
    let mut text = String::with_capacity(64 + numbers * 10);
    write_text(&mut text, mesh, version).map_err(|fmt::Error| EncodeError::Formatting)?;
    Ok(text.into_bytes())
}

fn write_text(s: &mut String, mesh: &Mesh, version: Version) -> fmt::Result {
    let dim = usize::from(mesh.dimension);
    let single = version.real_bytes() == 4;
    write!(s, "MeshVersionFormatted {}\n\n", version.number())?;
    writeln!(s, "Dimension {}", mesh.dimension)?;
    if !mesh.vertices.is_empty() {
        write!(s, "\nVertices\n{}\n", mesh.vertices.len())?;
        for (xyz, r) in mesh.vertices.iter().zip(&mesh.vertex_refs) {
            for &c in &xyz[..dim] {
                write_real(s, c, single)?;
                s.push(' ');
            }
            writeln!(s, "{r}")?;
        }
    }
    for kind in WRITE_ORDER {
        let elements = mesh.elements(kind);
        if elements.is_empty() {
            continue;
        }
        write!(s, "\n{}\n{}\n", kind.keyword(), elements.len())?;
        for (nodes, r) in elements.iter() {
            for &v in nodes {
                write!(s, "{} ", u64::from(v) + 1)?;
            }
            writeln!(s, "{r}")?;
        }
    }
    s.push_str("\nEnd\n");
    Ok(())
}

/// Shortest round-trip text of `x` (as `f32` when `single`): plain digits for ordinary
/// magnitudes, exponent form for very small or large ones.
pub(crate) fn write_real(s: &mut String, x: f64, single: bool) -> fmt::Result {
    let plain = |a: f64| a == 0.0 || (1e-5..1e16).contains(&a);
    if single {
        let v = x as f32;
        if plain(f64::from(v).abs()) {
            write!(s, "{v}")
        } else {
            write!(s, "{v:e}")
        }
    } else if plain(x.abs()) {
        write!(s, "{x}")
    } else {
        write!(s, "{x:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(x: f64, single: bool) -> String {
        let mut s = String::new();
        write_real(&mut s, x, single).unwrap();
        s
    }

    #[test]
    fn reals_are_short() {
        assert_eq!(text(0.0, false), "0");
        assert_eq!(text(-0.0, false), "-0");
        assert_eq!(text(0.1, false), "0.1");
        assert_eq!(text(0.1, true), "0.1");
        assert_eq!(text(1.5, false), "1.5");
        assert_eq!(text(1e300, false), "1e300");
        assert_eq!(text(-2.5e-7, false), "-2.5e-7");
        assert_eq!(text(f64::INFINITY, false), "inf");
        assert_eq!(text(f64::NAN, true), "NaN");
    }

    #[test]
    fn reals_round_trip_bit_for_bit() {
        // Deterministic pseudo-random bit patterns, all finite values kept.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = f64::from_bits(state);
            if x.is_finite() {
                let back: f64 = text(x, false).parse().unwrap();
                assert_eq!(back.to_bits(), x.to_bits(), "{x:e}");
            }
            let y = f32::from_bits((state >> 32) as u32);
            if y.is_finite() {
                // The reader parses every real as f64: the f32 must survive that path too.
                let back = text(f64::from(y), true).parse::<f64>().unwrap() as f32;
                assert_eq!(back.to_bits(), y.to_bits(), "{y:e}");
            }
        }
    }
}
