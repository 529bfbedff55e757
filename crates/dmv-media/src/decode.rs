//! Images decoded for thumbnails and previews, within a memory budget.
//!
//! A JPEG is decoded at the smallest of its DCT scales (1/8 to 1/1) that
//! still covers the size asked for: a 24-megapixel photo is decoded as
//! 0.4 megapixels for a thumbnail, in a few megabytes. Other formats are
//! decoded whole, within an allocation limit.
//!
//! Every byte of a committed file is hostile: a JPEG's header says how
//! large it is, and a progressive one makes the decoder hold coefficients
//! for every pixel at full size whatever the scale (118 bytes declaring
//! 16384² took 533 MB). So what a decode will allocate is computed from
//! the header and checked against [`MAX_DECODE_ALLOC`] before decoding.

use std::io::Cursor;

use image::{DynamicImage, GrayImage, ImageFormat, RgbImage};

/// What one decode may allocate (for a JPEG, as estimated from its header).
pub const MAX_DECODE_ALLOC: u64 = 160 << 20;

/// `image` scaled to fit in `edge`×`edge` pixels, as a JPEG.
pub fn scaled_jpeg_of(image: &DynamicImage, edge: u32) -> Result<Vec<u8>, String> {
    let rgb = image.thumbnail(edge, edge).to_rgb8();
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 82)
        .encode_image(&rgb)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// An image decoded small enough to scale to `edge` pixels a side: a
/// JPEG at its smallest DCT scale that covers it, another format whole
/// within [`MAX_DECODE_ALLOC`]. Errors say why in one line.
pub fn decode(bytes: &[u8], edge: u32) -> Result<DynamicImage, String> {
    let format =
        image::guess_format(bytes).map_err(|_| "not an image this server can read".to_string())?;
    if format == ImageFormat::Jpeg {
        if let Some(image) = decode_jpeg_scaled(bytes, edge)? {
            return Ok(image);
        }
    }
    let mut reader = image::ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    reader.limits(limits);
    reader
        .decode()
        .map_err(|e| format!("cannot decode the image: {e}"))
}

/// A JPEG decoded at the smallest DCT scale whose size covers `edge`
/// (`Ok(None)`: a JPEG this decoder cannot read, left to the general one;
/// `Err`: one whose decode would take more than [`MAX_DECODE_ALLOC`]).
pub fn decode_jpeg_scaled(bytes: &[u8], edge: u32) -> Result<Option<DynamicImage>, String> {
    let mut decoder = jpeg_decoder::Decoder::new(bytes);
    let Some(info) = decoder.read_info().ok().and_then(|_| decoder.info()) else {
        return Ok(None);
    };
    // Scale the long side to the edge: the short side follows.
    let (w, h) = (info.width as u32, info.height as u32);
    let (want_w, want_h) = if w >= h {
        (
            edge.min(w),
            (edge as u64 * h as u64 / w.max(1) as u64) as u32,
        )
    } else {
        (
            (edge as u64 * w as u64 / h.max(1) as u64) as u32,
            edge.min(h),
        )
    };
    let Ok((out_w, out_h)) = decoder.scale(
        want_w.clamp(1, u16::MAX as u32) as u16,
        want_h.clamp(1, u16::MAX as u32) as u16,
    ) else {
        return Ok(None);
    };
    let needed = jpeg_decode_bytes(&info, out_w, out_h);
    if needed > MAX_DECODE_ALLOC {
        return Err(format!("the image is too large to preview: {w}×{h} pixels would take {} MiB to decode (at most {} MiB)", needed >> 20, MAX_DECODE_ALLOC >> 20));
    }
    decoder.set_max_decoding_buffer_size(MAX_DECODE_ALLOC as usize);
    let Ok(pixels) = decoder.decode() else {
        return Ok(None);
    };
    let Some(info) = decoder.info() else {
        return Ok(None);
    };
    let (w, h) = (info.width as u32, info.height as u32);
    match info.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => {
            RgbImage::from_raw(w, h, pixels).map(DynamicImage::ImageRgb8)
        }
        jpeg_decoder::PixelFormat::L8 => {
            GrayImage::from_raw(w, h, pixels).map(DynamicImage::ImageLuma8)
        }
        jpeg_decoder::PixelFormat::L16 => {
            GrayImage::from_raw(w, h, pixels.chunks_exact(2).map(|p| p[0]).collect())
                .map(DynamicImage::ImageLuma8)
        }
        jpeg_decoder::PixelFormat::CMYK32 => {
            // Adobe's inverted CMYK, as cameras and Photoshop write it.
            let rgb = pixels.chunks_exact(4).flat_map(|p| {
                let k = p[3] as u32;
                [p[0], p[1], p[2]].map(|c| (c as u32 * k / 255) as u8)
            });
            RgbImage::from_raw(w, h, rgb.collect()).map(DynamicImage::ImageRgb8)
        }
    }
    .map_or(Ok(None), |image| Ok(Some(image)))
}

/// What decoding a JPEG to `out_w`×`out_h` allocates, from its header: the
/// output and its conversion, and for a progressive JPEG the coefficients
/// of every block at full size (two bytes each, blocks padded to 16 pixels).
fn jpeg_decode_bytes(info: &jpeg_decoder::ImageInfo, out_w: u16, out_h: u16) -> u64 {
    let components: u64 = match info.pixel_format {
        jpeg_decoder::PixelFormat::L8 => 1,
        jpeg_decoder::PixelFormat::L16 => 2,
        jpeg_decoder::PixelFormat::RGB24 => 3,
        jpeg_decoder::PixelFormat::CMYK32 => 4,
    };
    let output = components.max(3) * out_w as u64 * out_h as u64 * 3;
    let coefficients = match info.coding_process {
        jpeg_decoder::CodingProcess::DctProgressive => {
            components * (info.width as u64 + 15) * (info.height as u64 + 15) * 2
        }
        _ => 0,
    };
    output + coefficients
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmv_testkit::jpeg_bomb as progressive_jpeg_header;

    #[test]
    fn a_progressive_jpeg_declaring_billions_of_pixels_is_refused_from_its_header() {
        for (w, h) in [(65535, 65535), (30000, 30000), (16384, 16384)] {
            let bomb = progressive_jpeg_header(w, h);
            assert!(bomb.len() <= 140, "{} bytes", bomb.len());
            // A thumbnail's edge and a preview's (dmv-web's THUMBNAIL_EDGE and PREVIEW_EDGE).
            for edge in [256, 1600] {
                let refused = decode(&bomb, edge).map(|_| ()).unwrap_err();
                assert!(
                    refused.contains("too large to preview"),
                    "{w}×{h}: {refused}"
                );
            }
        }
    }

    #[test]
    fn a_photo_sized_progressive_jpeg_is_within_the_budget() {
        let header = progressive_jpeg_header(6000, 4000);
        let mut decoder = jpeg_decoder::Decoder::new(&header[..]);
        decoder.read_info().unwrap();
        let info = decoder.info().unwrap();
        assert_eq!(
            info.coding_process,
            jpeg_decoder::CodingProcess::DctProgressive
        );
        let (w, h) = decoder.scale(256, 171).unwrap();
        assert!(jpeg_decode_bytes(&info, w, h) <= MAX_DECODE_ALLOC);
        // The whole header of the bomb is read the same way: 65535² at 1/8 is 8192².
        let bomb = progressive_jpeg_header(65535, 65535);
        let mut decoder = jpeg_decoder::Decoder::new(&bomb[..]);
        decoder.read_info().unwrap();
        let info = decoder.info().unwrap();
        let (w, h) = decoder.scale(256, 256).unwrap();
        assert_eq!((w, h), (8192, 8192));
        assert!(jpeg_decode_bytes(&info, w, h) > 16 << 30);
    }
}
