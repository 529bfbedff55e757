//! What a diff says of a media file, as a person knows it: a picture's size
//! in pixels, when it was taken, the camera, lens and exposure (EXIF), a sound's or a film's duration,
//! read from the file's first bytes or its container's index by well-kept
//! crates (imagesize, kamadak-exif, lofty).

use crate::fragmented_mp4;

use std::io::{Read, Seek, SeekFrom};

/// Pictures keep their size and EXIF near the start.
const HEAD: u64 = 64 << 10;
const MOST_PIXELS_A_SIDE: usize = 300_000;
/// Top-level boxes of an MP4 looked at for its fragments: a four-hour
/// recording in 2-second fragments has 14,400 (a `moof` and an `mdat` each).
pub const MOST_MP4_BOXES: usize = 32_768;

/// The facts a person recognizes a file by, before its size (empty: none known).
pub fn media_facts<R: Read + Seek>(mut content: R) -> Vec<String> {
    let mut head = Vec::new();
    if (&mut content).take(HEAD).read_to_end(&mut head).is_err() {
        return Vec::new();
    }
    // A header that lies (a fake PSD said 3275717961x2901165605) is no picture:
    // no format keeps more than 300,000 pixels a side (Photoshop's large format).
    let believable = |d: &imagesize::ImageSize| {
        (1..=MOST_PIXELS_A_SIDE).contains(&d.width) && (1..=MOST_PIXELS_A_SIDE).contains(&d.height)
    };
    if let Some(dim) = imagesize::blob_size(&head).ok().filter(believable) {
        let mut facts = vec![format!("{}x{}", dim.width, dim.height)];
        facts.extend(photo_facts(&head));
        return facts;
    }
    // A fragmented MP4's header says 0 or its first fragment's length: its fragments say the rest.
    if head.get(4..8) == Some(b"ftyp") {
        if let Some(d) = fragmented_mp4::duration(&mut content, MOST_MP4_BOXES) {
            return vec![duration(d)];
        }
    }
    if content.seek(SeekFrom::Start(0)).is_err() {
        return Vec::new();
    }
    let probe = lofty::probe::Probe::new(std::io::BufReader::new(content)).guess_file_type();
    match probe.ok().and_then(|p| p.read().ok()) {
        Some(tagged) => {
            use lofty::file::AudioFile;
            let d = tagged.properties().duration();
            if d.is_zero() {
                Vec::new()
            } else {
                vec![duration(d)]
            }
        }
        None => Vec::new(),
    }
}

/// What a photo's EXIF says, as a photographer reads it: when it was
/// taken, the camera, the lens, and the exposure (`1/250 s`, `f/2.8`,
/// `ISO 400`, `50 mm`). Each fact only when the file has it.
fn photo_facts(head: &[u8]) -> Vec<String> {
    let Ok(exif) = exif::Reader::new().read_from_container(&mut std::io::Cursor::new(head)) else {
        return Vec::new();
    };
    let field = |tag: exif::Tag| exif.get_field(tag, exif::In::PRIMARY);
    let text = |tag: exif::Tag| match field(tag).map(|f| &f.value) {
        Some(exif::Value::Ascii(parts)) => parts
            .first()
            .map(|p| {
                String::from_utf8_lossy(p)
                    .trim_matches(|c: char| c == '\0' || c.is_whitespace())
                    .to_string()
            })
            .filter(|t| !t.is_empty()),
        _ => None,
    };
    let rational = |tag: exif::Tag| match field(tag).map(|f| &f.value) {
        Some(exif::Value::Rational(r)) => r.first().filter(|r| r.denom != 0).copied(),
        _ => None,
    };
    let mut facts = Vec::new();
    if let Some(taken) = field(exif::Tag::DateTimeOriginal).or_else(|| field(exif::Tag::DateTime)) {
        facts.push(format!("taken {}", taken.display_value()));
    }
    // Most cameras repeat their make in the model ("NIKON CORPORATION", "NIKON Z 6").
    match (text(exif::Tag::Make), text(exif::Tag::Model)) {
        (Some(make), Some(model))
            if !model.to_lowercase().starts_with(
                make.split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_lowercase()
                    .as_str(),
            ) =>
        {
            facts.push(format!("{make} {model}"))
        }
        (_, Some(model)) => facts.push(model),
        (Some(make), None) => facts.push(make),
        (None, None) => {}
    }
    facts.extend(text(exif::Tag::LensModel));
    if let Some(t) = rational(exif::Tag::ExposureTime) {
        facts.push(match t.num {
            1 => format!("1/{} s", t.denom),
            _ if t.num < t.denom => format!("1/{} s", (t.denom as f64 / t.num as f64).round()),
            _ => format!("{} s", t.to_f64()),
        });
    }
    if let Some(f) = rational(exif::Tag::FNumber) {
        facts.push(format!("f/{}", (f.to_f64() * 10.0).round() / 10.0));
    }
    if let Some(iso) = field(exif::Tag::PhotographicSensitivity).and_then(|f| f.value.get_uint(0)) {
        facts.push(format!("ISO {iso}"));
    }
    if let Some(mm) = rational(exif::Tag::FocalLength) {
        facts.push(format!("{} mm", mm.to_f64().round()));
    }
    facts
}

/// `3.5 s`, `4:05`, `1:02:03`.
fn duration(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..60 => format!("{:.1} s", d.as_secs_f64()),
        60..3600 => format!("{}:{:02}", secs / 60, secs % 60),
        _ => format!("{}:{:02}:{:02}", secs / 3600, secs % 3600 / 60, secs % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_that_lies_about_its_size_is_no_picture() {
        // Photoshop's signature, version 1, then a height and width of billions.
        let mut psd = b"8BPS\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03".to_vec();
        psd.extend(3_275_717_961u32.to_be_bytes());
        psd.extend(2_901_165_605u32.to_be_bytes());
        psd.extend([0, 8, 0, 3]);
        psd.resize(4096, 0);
        assert_eq!(
            media_facts(std::io::Cursor::new(&psd)),
            Vec::<String>::new()
        );
        // The same header with a believable size is a picture.
        psd[14..18].copy_from_slice(&3000u32.to_be_bytes());
        psd[18..22].copy_from_slice(&4000u32.to_be_bytes());
        assert_eq!(media_facts(std::io::Cursor::new(&psd)), ["4000x3000"]);
    }

    #[test]
    fn a_photo_says_its_camera_lens_and_exposure() {
        use exif::{Field, In, Rational, Tag, Value};
        let fields = [
            Field {
                tag: Tag::Make,
                ifd_num: In::PRIMARY,
                value: Value::Ascii(vec![b"NIKON CORPORATION".to_vec()]),
            },
            Field {
                tag: Tag::Model,
                ifd_num: In::PRIMARY,
                value: Value::Ascii(vec![b"NIKON Z 6".to_vec()]),
            },
            Field {
                tag: Tag::DateTimeOriginal,
                ifd_num: In::PRIMARY,
                value: Value::Ascii(vec![b"2026:05:01 17:30:00".to_vec()]),
            },
            Field {
                tag: Tag::LensModel,
                ifd_num: In::PRIMARY,
                value: Value::Ascii(vec![b"NIKKOR Z 50mm f/1.8 S".to_vec()]),
            },
            Field {
                tag: Tag::ExposureTime,
                ifd_num: In::PRIMARY,
                value: Value::Rational(vec![Rational { num: 1, denom: 250 }]),
            },
            Field {
                tag: Tag::FNumber,
                ifd_num: In::PRIMARY,
                value: Value::Rational(vec![Rational { num: 28, denom: 10 }]),
            },
            Field {
                tag: Tag::PhotographicSensitivity,
                ifd_num: In::PRIMARY,
                value: Value::Short(vec![400]),
            },
            Field {
                tag: Tag::FocalLength,
                ifd_num: In::PRIMARY,
                value: Value::Rational(vec![Rational { num: 50, denom: 1 }]),
            },
        ];
        let tiff = |fields: &[Field]| {
            let mut writer = exif::experimental::Writer::new();
            for f in fields {
                writer.push_field(f);
            }
            let mut out = std::io::Cursor::new(Vec::new());
            writer.write(&mut out, true).unwrap();
            out.into_inner()
        };
        assert_eq!(
            photo_facts(&tiff(&fields)),
            [
                "taken 2026-05-01 17:30:00",
                "NIKON Z 6",
                "NIKKOR Z 50mm f/1.8 S",
                "1/250 s",
                "f/2.8",
                "ISO 400",
                "50 mm"
            ]
        );
        // A make the model does not repeat is kept; a long exposure is in seconds.
        let fields = [
            Field {
                tag: Tag::Make,
                ifd_num: In::PRIMARY,
                value: Value::Ascii(vec![b"Canon".to_vec()]),
            },
            Field {
                tag: Tag::Model,
                ifd_num: In::PRIMARY,
                value: Value::Ascii(vec![b"EOS R5".to_vec()]),
            },
            Field {
                tag: Tag::ExposureTime,
                ifd_num: In::PRIMARY,
                value: Value::Rational(vec![Rational { num: 2, denom: 1 }]),
            },
        ];
        assert_eq!(photo_facts(&tiff(&fields)), ["Canon EOS R5", "2 s"]);
        assert!(photo_facts(b"no exif here").is_empty());
    }

    #[test]
    fn durations_read_as_people_say_them() {
        use std::time::Duration;
        assert_eq!(duration(Duration::from_millis(3500)), "3.5 s");
        assert_eq!(duration(Duration::from_secs(245)), "4:05");
        assert_eq!(duration(Duration::from_secs(3723)), "1:02:03");
    }

    #[test]
    fn a_wav_file_has_a_duration() {
        // 16-bit mono at 8 kHz, 2 s of silence.
        let rate = 8000u32;
        let data_len = rate * 2 * 2;
        let mut wav = Vec::new();
        wav.extend(b"RIFF");
        wav.extend((36 + data_len).to_le_bytes());
        wav.extend(b"WAVEfmt ");
        wav.extend(16u32.to_le_bytes());
        wav.extend(1u16.to_le_bytes());
        wav.extend(1u16.to_le_bytes());
        wav.extend(rate.to_le_bytes());
        wav.extend((rate * 2).to_le_bytes());
        wav.extend(2u16.to_le_bytes());
        wav.extend(16u16.to_le_bytes());
        wav.extend(b"data");
        wav.extend(data_len.to_le_bytes());
        wav.resize(wav.len() + data_len as usize, 0);
        assert_eq!(
            media_facts(std::io::Cursor::new(wav)),
            vec!["2.0 s".to_string()]
        );
        assert!(media_facts(std::io::Cursor::new(b"not media at all".to_vec())).is_empty());
    }
}

/// What a photo grid needs of a picture: its size in pixels (as stored:
/// thumbnails are not turned by the EXIF orientation either) and when it
/// was taken (EXIF `DateTimeOriginal`, else `DateTime`), as the camera's
/// clock said it, `YYYY-MM-DD HH:MM:SS` (so it sorts as text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PictureShape {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// When it was taken, if the picture says.
    pub taken: Option<String>,
}

/// A picture's [`PictureShape`] from its first bytes; None when they are
/// not a picture this reads (or one whose header lies about its size).
pub fn picture_shape<R: Read>(content: R) -> Option<PictureShape> {
    let mut head = Vec::new();
    content.take(HEAD).read_to_end(&mut head).ok()?;
    let dim = imagesize::blob_size(&head).ok()?;
    let side = |n: usize| (1..=MOST_PIXELS_A_SIDE).contains(&n).then_some(n as u32);
    let (width, height) = (side(dim.width)?, side(dim.height)?);
    let taken = exif::Reader::new()
        .read_from_container(&mut std::io::Cursor::new(&head))
        .ok()
        .and_then(|exif| {
            let field = |tag| exif.get_field(tag, exif::In::PRIMARY);
            match &field(exif::Tag::DateTimeOriginal)
                .or_else(|| field(exif::Tag::DateTime))?
                .value
            {
                exif::Value::Ascii(parts) => {
                    // Cameras whose clock was never set write zeros.
                    let t = exif::DateTime::from_ascii(parts.first()?)
                        .ok()
                        .filter(|t| t.year > 0 && (1..=12).contains(&t.month) && t.day > 0)?;
                    Some(format!(
                        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
                        t.year, t.month, t.day, t.hour, t.minute, t.second
                    ))
                }
                _ => None,
            }
        });
    Some(PictureShape {
        width,
        height,
        taken,
    })
}

#[cfg(test)]
mod shape_tests {
    use super::{picture_shape, PictureShape};
    use proptest::prelude::*;

    /// The smallest JPEG head a camera could write: EXIF saying when it
    /// was taken (`taken`, 19 characters), then the frame's size.
    fn camera_head(width: u16, height: u16, taken: &str) -> Vec<u8> {
        let mut tiff = b"II*\0\x08\0\0\0".to_vec();
        // IFD0 at 8: one entry, the EXIF IFD's offset (26).
        tiff.extend([1, 0, 0x69, 0x87, 4, 0, 1, 0, 0, 0, 26, 0, 0, 0, 0, 0, 0, 0]);
        // The EXIF IFD at 26: DateTimeOriginal, 20 ASCII bytes at 44.
        tiff.extend([1, 0, 0x03, 0x90, 2, 0, 20, 0, 0, 0, 44, 0, 0, 0, 0, 0, 0, 0]);
        tiff.extend(taken.as_bytes());
        tiff.push(0);
        let mut out = vec![0xFF, 0xD8, 0xFF, 0xE1];
        out.extend(((tiff.len() + 8) as u16).to_be_bytes());
        out.extend(b"Exif\0\0");
        out.extend(tiff);
        out.extend([0xFF, 0xC0, 0, 17, 8]);
        out.extend(height.to_be_bytes());
        out.extend(width.to_be_bytes());
        out.extend([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1, 0xFF, 0xD9]);
        out
    }

    #[test]
    fn a_cameras_photo_says_its_shape_and_when_it_was_taken() {
        let head = camera_head(6000, 4000, "2026:11:28 14:03:59");
        assert_eq!(
            picture_shape(&head[..]),
            Some(PictureShape {
                width: 6000,
                height: 4000,
                taken: Some("2026-11-28 14:03:59".into()),
            })
        );
        // A camera whose clock was never set writes zeros: no date.
        let unset = camera_head(4000, 6000, "0000:00:00 00:00:00");
        assert_eq!(picture_shape(&unset[..]).unwrap().taken, None);
        assert_eq!(picture_shape(&b"not a picture"[..]), None);
    }

    proptest! {
        #[test]
        fn damaged_heads_never_panic(flips in proptest::collection::vec((0usize..120, any::<u8>()), 1..12), cut in 0usize..120) {
            let mut head = camera_head(3000, 2000, "2025:01:02 03:04:05");
            for (at, byte) in flips {
                if let Some(b) = head.get_mut(at) {
                    *b = byte;
                }
            }
            head.truncate(cut.max(2));
            if let Some(s) = picture_shape(&head[..]) {
                prop_assert!(s.width >= 1 && s.height >= 1 && s.width <= 300_000 && s.height <= 300_000);
            }
        }
    }
}
