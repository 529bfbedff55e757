//! What a diff says of a media file, as a person knows it: a picture's size
//! in pixels and when it was taken (EXIF), a sound's or a film's duration,
//! read from the file's first bytes or its container's index by well-kept
//! crates (imagesize, kamadak-exif, lofty).

mod fragmented_mp4;

use std::io::{Read, Seek, SeekFrom};

/// Pictures keep their size and EXIF near the start.
const HEAD: u64 = 64 << 10;
const MOST_PIXELS_A_SIDE: usize = 300_000;

/// The facts a person recognizes a file by, before its size (empty: none known).
pub fn media_facts<R: Read + Seek>(mut content: R) -> Vec<String> {
    let mut head = Vec::new();
    if (&mut content).take(HEAD).read_to_end(&mut head).is_err() {
        return Vec::new();
    }
    // A header that lies (a fake PSD said 3275717961x2901165605) is no picture:
    // no format keeps more than 300,000 pixels a side (Photoshop's large format).
    let believable = |d: &imagesize::ImageSize| (1..=MOST_PIXELS_A_SIDE).contains(&d.width) && (1..=MOST_PIXELS_A_SIDE).contains(&d.height);
    if let Some(dim) = imagesize::blob_size(&head).ok().filter(believable) {
        let mut facts = vec![format!("{}x{}", dim.width, dim.height)];
        if let Some(taken) = date_taken(&head) {
            facts.push(format!("taken {taken}"));
        }
        return facts;
    }
    // A fragmented MP4's header says 0 or its first fragment's length: its fragments say the rest.
    if head.get(4..8) == Some(b"ftyp") {
        if let Some(d) = fragmented_mp4::duration(&mut content) {
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

fn date_taken(head: &[u8]) -> Option<String> {
    let exif = exif::Reader::new().read_from_container(&mut std::io::Cursor::new(head)).ok()?;
    let field = exif.get_field(exif::Tag::DateTimeOriginal, exif::In::PRIMARY).or_else(|| exif.get_field(exif::Tag::DateTime, exif::In::PRIMARY))?;
    Some(field.display_value().to_string())
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
        assert_eq!(media_facts(std::io::Cursor::new(&psd)), Vec::<String>::new());
        // The same header with a believable size is a picture.
        psd[14..18].copy_from_slice(&3000u32.to_be_bytes());
        psd[18..22].copy_from_slice(&4000u32.to_be_bytes());
        assert_eq!(media_facts(std::io::Cursor::new(&psd)), ["4000x3000"]);
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
        assert_eq!(media_facts(std::io::Cursor::new(wav)), vec!["2.0 s".to_string()]);
        assert!(media_facts(std::io::Cursor::new(b"not media at all".to_vec())).is_empty());
    }
}
