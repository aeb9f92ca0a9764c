//! Heightmaps: 8- or 16-bit grayscale PNG images read as heights in `[0, 1]`.
//!
//! Black is 0, white is 1. Column 0 of the image is the west edge (x = 0), row 0 the north
//! edge (y = the domain's y extent), as on a map; the corner pixels lie exactly on the domain's
//! corners and heights in between are interpolated bilinearly ([`Heightmap::sample`]).

use std::io::Cursor;
use std::path::{Path, PathBuf};

use image::codecs::png::PngDecoder;
use image::{ColorType, DynamicImage, ImageBuffer, ImageDecoder, ImageFormat, Luma};

use super::TerrainError;
use crate::input;
use crate::output::write_atomic;

/// The largest width or height read, in pixels.
pub const MAX_SIDE: u32 = 16384;

/// The largest heightmap file read: 1 GiB, more than a 16-bit PNG of [`MAX_SIDE`]² pixels
/// (512 MiB of samples) holds even uncompressed.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// A grid of heights in `[0, 1]`, row 0 to the north, held as the image's integers (so values
/// are exact: `pixel / 255` or `pixel / 65535`).
#[derive(Clone, Debug, PartialEq)]
pub struct Heightmap {
    width: usize,
    height: usize,
    bits: u8,
    /// Row-major, row 0 first: 8-bit values or 16-bit ones.
    values: Vec<u16>,
}

impl Heightmap {
    /// Reads a PNG file (8- or 16-bit grayscale, at least 2 × 2 pixels): a regular file of at
    /// most [`MAX_FILE_BYTES`] ([`input::read`], so a FIFO or a link to a device is refused
    /// before it is read).
    pub fn read(path: &Path) -> Result<Self, TerrainError> {
        let bytes = input::read(path, MAX_FILE_BYTES).map_err(|e| TerrainError::Open {
            path: path.to_path_buf(),
            error: e.into_io_error(),
        })?;
        Self::decode(&bytes, path)
    }

    /// Decodes PNG bytes; `source` names them in errors.
    pub fn decode(bytes: &[u8], source: &Path) -> Result<Self, TerrainError> {
        const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
        let path = || source.to_path_buf();
        if !bytes.starts_with(SIGNATURE) {
            return Err(TerrainError::NotPng { path: path() });
        }
        // The IHDR chunk comes first: width and height as big-endian u32 at bytes 16..24.
        if let Some(header) = bytes.get(16..24) {
            let width = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
            let height = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
            if width > MAX_SIDE || height > MAX_SIDE {
                return Err(TerrainError::TooLarge {
                    path: path(),
                    width,
                    height,
                });
            }
        }
        let decode_error = |e: image::ImageError| TerrainError::Decode {
            path: path(),
            message: e.to_string(),
        };
        let decoder = PngDecoder::new(Cursor::new(bytes)).map_err(decode_error)?;
        let (width, height) = decoder.dimensions();
        let color = decoder.color_type();
        if !matches!(color, ColorType::L8 | ColorType::L16) {
            return Err(TerrainError::NotGrayscale {
                path: path(),
                found: colour_of(bytes, color),
            });
        }
        if width < 2 || height < 2 {
            return Err(TerrainError::TooSmall {
                path: path(),
                width,
                height,
            });
        }
        let image = DynamicImage::from_decoder(decoder).map_err(decode_error)?;
        let (bits, values) = match image {
            DynamicImage::ImageLuma8(buffer) => {
                (8, buffer.into_raw().into_iter().map(u16::from).collect())
            }
            DynamicImage::ImageLuma16(buffer) => (16, buffer.into_raw()),
            other => {
                return Err(TerrainError::NotGrayscale {
                    path: path(),
                    found: colour_of(bytes, other.color()),
                });
            }
        };
        Ok(Self {
            width: width as usize,
            height: height as usize,
            bits,
            values,
        })
    }

    /// A 16-bit heightmap of `width × height` pixels (each at least 2) whose value at
    /// `(u, v)` is `f(u, v)` clamped to `[0, 1]` and rounded to 16 bits, with `u` from 0 (west)
    /// to 1 (east) and `v` from 0 (south) to 1 (north). NaN becomes 0.
    pub fn from_fn(width: usize, height: usize, f: impl Fn(f64, f64) -> f64) -> Self {
        let (width, height) = (width.max(2), height.max(2));
        let mut values = Vec::with_capacity(width * height);
        for row in 0..height {
            let v = 1.0 - row as f64 / (height - 1) as f64;
            for col in 0..width {
                values.push(f(col as f64 / (width - 1) as f64, v));
            }
        }
        Self::from_values(width, height, values)
    }

    /// A 16-bit heightmap from row-major values (row 0 north), clamped to `[0, 1]`.
    pub(crate) fn from_values(width: usize, height: usize, values: Vec<f64>) -> Self {
        debug_assert_eq!(values.len(), width * height);
        let quantise = |h: f64| {
            if h.is_nan() {
                0
            } else {
                (h.clamp(0.0, 1.0) * 65535.0).round() as u16
            }
        };
        Self {
            width,
            height,
            bits: 16,
            values: values.into_iter().map(quantise).collect(),
        }
    }

    /// The largest pixel value: 255 or 65535.
    fn full_scale(&self) -> f64 {
        if self.bits == 8 { 255.0 } else { 65535.0 }
    }

    /// Width in pixels (west to east).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in pixels (north to south).
    pub fn height(&self) -> usize {
        self.height
    }

    /// Bits per pixel of the image read: 8 or 16.
    pub fn bits(&self) -> u8 {
        self.bits
    }

    /// The value of pixel (`col`, `row`), row 0 to the north.
    ///
    /// # Panics
    /// If the pixel is outside the image.
    pub fn pixel(&self, col: usize, row: usize) -> f64 {
        assert!(
            col < self.width && row < self.height,
            "pixel outside the image"
        );
        f64::from(self.values[row * self.width + col]) / self.full_scale()
    }

    /// Smallest and largest value.
    pub fn range(&self) -> (f64, f64) {
        let lo = self.values.iter().copied().min().unwrap_or(0);
        let hi = self.values.iter().copied().max().unwrap_or(0);
        (
            f64::from(lo) / self.full_scale(),
            f64::from(hi) / self.full_scale(),
        )
    }

    /// The height at `(u, v)`, bilinear between pixels: `u` from 0 (west edge, column 0) to 1
    /// (east edge, last column), `v` from 0 (south edge, last row) to 1 (north edge, row 0).
    /// Outside `[0, 1]²` the edge value is used.
    pub fn sample(&self, u: f64, v: f64) -> f64 {
        let fx = u.clamp(0.0, 1.0) * (self.width - 1) as f64;
        let fy = (1.0 - v.clamp(0.0, 1.0)) * (self.height - 1) as f64;
        let (c0, r0) = (
            (fx.floor() as usize).min(self.width - 2),
            (fy.floor() as usize).min(self.height - 2),
        );
        let (tx, ty) = (fx - c0 as f64, fy - r0 as f64);
        let scale = self.full_scale();
        let at = |c: usize, r: usize| f64::from(self.values[r * self.width + c]) / scale;
        let top = at(c0, r0) * (1.0 - tx) + at(c0 + 1, r0) * tx;
        let bottom = at(c0, r0 + 1) * (1.0 - tx) + at(c0 + 1, r0 + 1) * tx;
        top * (1.0 - ty) + bottom * ty
    }

    /// The heightmap as a 16-bit grayscale PNG (8-bit values scaled by 257, exactly).
    pub fn to_png16(&self) -> Vec<u8> {
        let factor = if self.bits == 8 { 257 } else { 1 };
        let pixels: Vec<u16> = self.values.iter().map(|&v| v * factor).collect();
        let buffer: ImageBuffer<Luma<u16>, Vec<u16>> =
            ImageBuffer::from_raw(self.width as u32, self.height as u32, pixels)
                .expect("one value per pixel");
        let mut bytes = Cursor::new(Vec::new());
        DynamicImage::ImageLuma16(buffer)
            .write_to(&mut bytes, ImageFormat::Png)
            .expect("encoding a PNG in memory cannot fail");
        bytes.into_inner()
    }

    /// Writes the heightmap as a 16-bit grayscale PNG file, atomically ([`write_atomic`]: an
    /// interrupted write leaves the old file as it was).
    pub fn write_png16(&self, path: &Path) -> Result<(), TerrainError> {
        write_atomic(path, &self.to_png16()).map_err(|error| TerrainError::Write {
            path: PathBuf::from(path),
            error,
        })
    }
}

/// What the PNG `bytes` hold, which the decoder read as `decoded`: the decoder expands a
/// palette image to RGB (RGBA with a transparency chunk), so a palette is named from the
/// IHDR chunk's colour type (3) and bit depth.
fn colour_of(bytes: &[u8], decoded: ColorType) -> String {
    const PALETTE: u8 = 3;
    match (bytes.get(12..16), bytes.get(24), bytes.get(25)) {
        (Some(b"IHDR"), Some(&depth), Some(&PALETTE)) => format!(
            "a palette (indexed-colour) image{}, {depth} bits per index",
            if decoded.has_alpha() {
                " with transparency"
            } else {
                ""
            }
        ),
        _ => color_name(decoded),
    }
}

/// `RGB, 8 bits` and the like.
fn color_name(color: ColorType) -> String {
    let channels = match color {
        ColorType::L8 | ColorType::L16 => "grayscale",
        ColorType::La8 | ColorType::La16 => "grayscale with alpha",
        ColorType::Rgb8 | ColorType::Rgb16 | ColorType::Rgb32F => "RGB",
        ColorType::Rgba8 | ColorType::Rgba16 | ColorType::Rgba32F => "RGBA",
        _ => "an unknown colour type",
    };
    format!(
        "{channels}, {} bits per channel",
        color.bits_per_pixel() / u16::from(color.channel_count())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_is_exact_on_pixels_and_bilinear_between() {
        let map = Heightmap::from_fn(3, 2, |u, v| 0.25 * u + 0.5 * v);
        // Row 0 is north (v = 1).
        assert!((map.pixel(0, 0) - 0.5).abs() < 1e-5);
        assert!((map.pixel(2, 1) - 0.25).abs() < 1e-5);
        for (u, v) in [(0.0, 0.0), (0.3, 0.7), (1.0, 1.0), (0.5, 0.5)] {
            assert!((map.sample(u, v) - (0.25 * u + 0.5 * v)).abs() < 1e-5);
        }
        assert_eq!(map.sample(-1.0, 2.0), map.sample(0.0, 1.0));
    }

    #[test]
    fn png16_round_trips() {
        let map = Heightmap::from_fn(5, 4, |u, v| (u * v).sqrt());
        let back = Heightmap::decode(&map.to_png16(), Path::new("mem.png")).unwrap();
        assert_eq!((back.width(), back.height(), back.bits()), (5, 4, 16));
        assert_eq!(back, map);
    }
}
