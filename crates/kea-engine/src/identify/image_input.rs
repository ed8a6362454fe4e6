//! Reading an uploaded image safely: size and pixel limits (a decompression
//! bomb is refused before it is decoded), the format guessed from the bytes
//! (jpg, png, webp, gif's first frame, bmp), and EXIF orientation applied.

use image::{DynamicImage, ImageDecoder, ImageReader, Limits};

use crate::error::{Error, Result};

/// The largest file accepted.
pub const MAX_IMAGE_BYTES: usize = 30 * 1024 * 1024;
/// The largest image accepted, in pixels per side.
pub const MAX_SIDE: u32 = 12_000;
/// The most memory decoding may use.
pub const MAX_DECODE_BYTES: u64 = 512 * 1024 * 1024;

fn bad(message: impl Into<String>) -> Error {
    Error::InvalidInput(message.into())
}

/// Decodes an image from bytes, or says clearly why it cannot.
pub fn decode_image(bytes: &[u8]) -> Result<DynamicImage> {
    if bytes.is_empty() {
        return Err(bad("the image file is empty (0 bytes)"));
    }
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(bad(format!("the image is {} MB; the limit is {} MB", bytes.len() >> 20, MAX_IMAGE_BYTES >> 20)));
    }
    let reader = ImageReader::new(std::io::Cursor::new(bytes)).with_guessed_format().map_err(|e| bad(format!("cannot read the image: {e}")))?;
    let Some(format) = reader.format() else {
        return Err(bad("not an image, or an unsupported format (use jpg, png, webp, gif or bmp)"));
    };
    if !matches!(format, image::ImageFormat::Jpeg | image::ImageFormat::Png | image::ImageFormat::WebP | image::ImageFormat::Gif | image::ImageFormat::Bmp) {
        return Err(bad(format!("{format:?} images are not supported (use jpg, png, webp, gif or bmp)")));
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    let mut decoder = reader.into_decoder().map_err(|e| bad(format!("cannot decode the {format:?} image: {e}")))?;
    decoder.set_limits(limits).map_err(|e| bad(format!("the image is too large: {e}")))?;
    let orientation = decoder.orientation().ok();
    let mut image = DynamicImage::from_decoder(decoder).map_err(|e| bad(format!("cannot decode the {format:?} image (truncated or corrupt?): {e}")))?;
    if let Some(orientation) = orientation {
        image.apply_orientation(orientation);
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn png(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
        let img = image::RgbImage::from_pixel(width, height, image::Rgb(rgb));
        let mut out = std::io::Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn valid_images_decode() {
        let img = decode_image(&png(8, 4, [0, 200, 0])).unwrap();
        assert_eq!((img.width(), img.height()), (8, 4));
    }

    #[test]
    fn bad_inputs_are_clear_errors() {
        assert!(decode_image(b"").unwrap_err().to_string().contains("empty"));
        assert!(decode_image(b"%PDF-1.4 not an image").unwrap_err().to_string().contains("not an image"));
        let full = png(64, 64, [1, 2, 3]);
        assert!(decode_image(&full[..full.len() / 2]).unwrap_err().to_string().contains("truncated"));
    }

    /// CRC-32 (IEEE) of a PNG chunk's type and data.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }

    /// A well-formed PNG whose header claims `side` × `side` pixels (valid CRC), with one pixel of data.
    fn claiming(side: u32) -> Vec<u8> {
        let mut bytes = png(1, 1, [0, 0, 0]);
        bytes[16..20].copy_from_slice(&side.to_be_bytes());
        bytes[20..24].copy_from_slice(&side.to_be_bytes());
        let crc = crc32(&bytes[12..29]);
        bytes[29..33].copy_from_slice(&crc.to_be_bytes());
        bytes
    }

    #[test]
    fn decompression_bombs_are_refused() {
        let err = decode_image(&claiming(100_000)).unwrap_err().to_string();
        assert!(err.contains("too large"), "refused by the pixel limit, before decoding: {err}");
        let err = decode_image(&claiming(MAX_SIDE + 1)).unwrap_err().to_string();
        assert!(err.contains("too large"), "one pixel over the side limit: {err}");
        let within = decode_image(&claiming(2)).unwrap_err().to_string();
        assert!(!within.contains("too large"), "a small image with missing data is corrupt, not too large: {within}");
    }
}
