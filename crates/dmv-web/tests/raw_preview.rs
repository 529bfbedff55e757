//! Thumbnails of camera raw files come from the JPEG the camera embedded:
//! the largest one, never the sensor data, never past the file's end.

use std::io::Cursor;

use dmv_testkit::camera_raw::{camera_raw, RawLayout};
use dmv_web::{largest_embedded_jpeg, scaled_jpeg, EmbeddedJpeg, THUMBNAIL_EDGE};
use image::{ImageEncoder, RgbImage};
use proptest::prelude::*;

const LAYOUTS: [RawLayout; 5] = [
    RawLayout::Cr2,
    RawLayout::Nef,
    RawLayout::Dng,
    RawLayout::Rw2,
    RawLayout::Raf,
];

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let picture = RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 255 / width) as u8, (y * 255 / height) as u8, 90])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85)
        .write_image(&picture, width, height, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

fn found(raw: &[u8]) -> Option<EmbeddedJpeg> {
    largest_embedded_jpeg(&mut Cursor::new(raw), u64::MAX)
}

#[test]
fn each_layout_gives_its_largest_jpeg_and_not_its_sensor_data() {
    let (large, small) = (jpeg(640, 427), jpeg(160, 107));
    for layout in LAYOUTS {
        let raw = camera_raw(layout, &large, &small);
        let preview = found(&raw).unwrap_or_else(|| panic!("{layout:?}: no preview"));
        assert_eq!((preview.width, preview.height), (640, 427), "{layout:?}");
        let (start, end) = (
            preview.offset as usize,
            (preview.offset + preview.len) as usize,
        );
        assert!(
            raw[start..end] == large[..],
            "{layout:?}: the range is the large JPEG"
        );
    }
}

#[test]
fn a_raw_cut_short_falls_back_to_a_jpeg_still_whole_or_to_none() {
    let (large, small) = (jpeg(640, 427), jpeg(160, 107));
    let raw = camera_raw(RawLayout::Cr2, &large, &small);
    // CR2 keeps the large JPEG first: cut inside it, only the small one is whole.
    let large_at = raw
        .windows(large.len())
        .position(|w| w == &large[..])
        .unwrap();
    let cut = &raw[..large_at + large.len() / 2];
    assert_eq!(
        found(cut).map(|p| (p.width, p.height)),
        None,
        "the small JPEG lies after the cut too"
    );
    let raw = camera_raw(RawLayout::Nef, &large, &small);
    assert_eq!(
        found(&raw[..raw.len() - 4096 - 1]).map(|p| p.width),
        None,
        "NEF's preview is before its sensor data, which the cut reached"
    );
    assert_eq!(found(&raw[..40]), None);
}

#[test]
fn pictures_that_are_not_raws_give_nothing() {
    assert_eq!(found(&jpeg(64, 48)), None);
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&[0u8; 12], 2, 2, image::ExtendedColorType::Rgb8)
        .unwrap();
    assert_eq!(found(&png), None);
    assert_eq!(found(b""), None);
}

#[test]
fn a_raw_in_a_repository_gets_a_thumbnail_from_its_preview() {
    let dir = tempfile::tempdir().unwrap();
    let repo =
        dmv_repo::Repository::init(dir.path(), dmv_repo::store::ChunkParams::default()).unwrap();
    let raw = camera_raw(RawLayout::Dng, &jpeg(1200, 800), &jpeg(160, 107));
    let mut session = repo.store.begin_write().unwrap();
    let (id, _) = session.put_content(&mut Cursor::new(&raw)).unwrap();
    session.finish().unwrap();
    let thumb = scaled_jpeg(&repo, &id, THUMBNAIL_EDGE).unwrap();
    let decoded = image::load_from_memory(&thumb).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (256, 171));
    // The preview's gradient, not the grey of the small uncompressed thumbnail in IFD0.
    let rgb = decoded.to_rgb8();
    let (left, right) = (rgb.get_pixel(10, 85).0, rgb.get_pixel(245, 85).0);
    assert!(left[0] < 40 && right[0] > 215, "{left:?} {right:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Corrupt raws (bytes flipped, truncated) never panic, and whatever is
    /// found lies within the file and starts a JPEG.
    #[test]
    fn corrupt_raws_give_a_range_inside_the_file_or_none(layout in 0..LAYOUTS.len(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..12), cut in any::<prop::sample::Index>()) {
        let mut raw = camera_raw(LAYOUTS[layout], &jpeg(48, 32), &jpeg(16, 12));
        for (at, byte) in flips {
            let i = at.index(raw.len().min(400));
            raw[i] = byte;
        }
        raw.truncate(cut.index(raw.len()) + 1);
        if let Some(p) = found(&raw) {
            prop_assert!(p.offset + p.len <= raw.len() as u64);
            prop_assert_eq!(&raw[p.offset as usize..p.offset as usize + 2], &[0xFF, 0xD8]);
        }
    }

    #[test]
    fn random_bytes_after_a_tiff_header_never_panic(order in prop::bool::ANY, body in prop::collection::vec(any::<u8>(), 0..2048)) {
        let mut raw = if order { b"II*\0\x08\0\0\0".to_vec() } else { b"MM\0*\0\0\0\x08".to_vec() };
        raw.extend(body);
        let _ = found(&raw);
    }
}
