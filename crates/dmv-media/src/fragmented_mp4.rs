//! A fragmented MP4's duration (a camera's or a stream recorder's file:
//! an index of almost nothing up front, then fragments, each with its own
//! index). Its movie header says 0 or the first fragment's length; the
//! duration is where the last fragment of the longest track ends, or the
//! movie extends header's figure when the writer left one.

use std::io::{Read, Seek, SeekFrom};
use std::time::Duration;

/// An index box read whole: larger is no real index (a moof lists a few
/// thousand samples, a moov of a fragmented file almost nothing).
const MOST_INDEX: u64 = 16 << 20;
/// Fragments read at most: a four-hour recording in 2-second fragments.
const MOST_FRAGMENTS: usize = 20_000;

/// The duration of a fragmented MP4; None for anything else (an MP4 that
/// is not fragmented keeps its duration where other readers find it).
/// At most `max_boxes` top-level boxes are visited: the file decides how
/// many it has (1.6 MB of empty `free` boxes are 200,000 of them), the
/// caller how many it will look at.
pub fn duration<R: Read + Seek>(file: &mut R, max_boxes: usize) -> Option<Duration> {
    let mut moov = None;
    let mut fragments = Vec::new();
    let mut at = 0u64;
    let end = file.seek(SeekFrom::End(0)).ok()?;
    let mut visited = 0;
    while at + 8 <= end && visited < max_boxes {
        visited += 1;
        // A box cut short (a recording that stopped): what came before it counts.
        let Some((kind, header, size)) = box_at(file, at, end) else {
            break;
        };
        match &kind {
            b"moov" if size - header <= MOST_INDEX => {
                moov = Some(read_payload(file, at + header, size - header)?)
            }
            b"moof" if size - header <= MOST_INDEX && fragments.len() < MOST_FRAGMENTS => {
                fragments.push((at + header, size - header))
            }
            _ => {}
        }
        at += size;
    }
    if fragments.is_empty() {
        return None;
    }
    let moov = moov?;
    let movie_scale = child(&moov, b"mvhd").and_then(|mvhd| full_box_u32(mvhd, 12, 20))?;
    // The writer's own figure, in the movie's timescale.
    if let Some(mehd) = child(&moov, b"mvex").and_then(|mvex| child(mvex, b"mehd")) {
        let whole = match mehd.first()? {
            1 => u64::from_be_bytes(mehd.get(4..12)?.try_into().ok()?),
            _ => u64::from(u32::from_be_bytes(mehd.get(4..8)?.try_into().ok()?)),
        };
        if whole > 0 && movie_scale > 0 {
            return Duration::try_from_secs_f64(whole as f64 / f64::from(movie_scale)).ok();
        }
    }
    let tracks = tracks(&moov);
    let mut ends: Vec<(u32, u64)> = Vec::new();
    for (offset, len) in fragments {
        let moof = read_payload(file, offset, len)?;
        for traf in children(&moof)
            .filter(|(k, _)| k == b"traf")
            .map(|(_, b)| b)
        {
            let Some((track, default_duration)) = child(traf, b"tfhd").and_then(tfhd) else {
                continue;
            };
            let default_duration = default_duration
                .or_else(|| {
                    tracks
                        .iter()
                        .find(|t| t.id == track)
                        .and_then(|t| t.default_duration)
                })
                .unwrap_or(0);
            let start = child(traf, b"tfdt").and_then(|tfdt| match tfdt.first()? {
                1 => Some(u64::from_be_bytes(tfdt.get(4..12)?.try_into().ok()?)),
                _ => Some(u64::from(u32::from_be_bytes(
                    tfdt.get(4..8)?.try_into().ok()?,
                ))),
            });
            let lasting: u64 = children(traf)
                .filter(|(k, _)| k == b"trun")
                .filter_map(|(_, trun)| trun_duration(trun, default_duration))
                .fold(0u64, u64::saturating_add);
            match ends.iter_mut().find(|(id, _)| *id == track) {
                // Without a decode time, fragments follow one another.
                Some((_, end)) => *end = (*end).max(start.unwrap_or(*end).saturating_add(lasting)),
                None => ends.push((track, start.unwrap_or(0).saturating_add(lasting))),
            }
        }
    }
    ends.iter()
        .filter_map(|(id, end)| {
            let scale = tracks.iter().find(|t| t.id == *id)?.timescale;
            (scale > 0).then(|| *end as f64 / f64::from(scale))
        })
        .fold(None, |longest: Option<f64>, secs| {
            Some(longest.map_or(secs, |l| l.max(secs)))
        })
        .filter(|secs| *secs > 0.0)
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

/// A box's type, header length and whole size, at `at` (None: it runs past `end` or is too short).
fn box_at<R: Read + Seek>(file: &mut R, at: u64, end: u64) -> Option<([u8; 4], u64, u64)> {
    file.seek(SeekFrom::Start(at)).ok()?;
    let mut head = [0u8; 16];
    file.read_exact(&mut head[..8]).ok()?;
    let kind: [u8; 4] = head[4..8].try_into().ok()?;
    let (header, size) = match u32::from_be_bytes(head[..4].try_into().ok()?) {
        0 => (8, end - at),
        1 => {
            file.read_exact(&mut head[8..16]).ok()?;
            (16, u64::from_be_bytes(head[8..16].try_into().ok()?))
        }
        n => (8, u64::from(n)),
    };
    (size >= header && at.checked_add(size)? <= end).then_some((kind, header, size))
}

fn read_payload<R: Read + Seek>(file: &mut R, at: u64, len: u64) -> Option<Vec<u8>> {
    file.seek(SeekFrom::Start(at)).ok()?;
    let mut bytes = Vec::new();
    file.take(len).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 == len).then_some(bytes)
}

/// The boxes inside a container box's payload, as (type, payload).
fn children(payload: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    let mut rest = payload;
    std::iter::from_fn(move || {
        let size = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let kind: [u8; 4] = rest.get(4..8)?.try_into().ok()?;
        let (header, size) = match size {
            0 => (8, rest.len()),
            1 => (
                16,
                usize::try_from(u64::from_be_bytes(rest.get(8..16)?.try_into().ok()?)).ok()?,
            ),
            n => (8, n),
        };
        let body = rest.get(header..size)?;
        rest = &rest[size..];
        Some((kind, body))
    })
}

fn child<'b>(payload: &'b [u8], kind: &[u8; 4]) -> Option<&'b [u8]> {
    children(payload).find(|(k, _)| k == kind).map(|(_, b)| b)
}

/// A full box's 32-bit field at `v0` bytes into it (version 0) or `v1` (version 1).
fn full_box_u32(payload: &[u8], v0: usize, v1: usize) -> Option<u32> {
    let at = if *payload.first()? == 1 { v1 } else { v0 };
    Some(u32::from_be_bytes(
        payload.get(at..at + 4)?.try_into().ok()?,
    ))
}

struct Track {
    id: u32,
    timescale: u32,
    default_duration: Option<u32>,
}

/// Each track's id and timescale, and the default sample duration its `trex` gives fragments.
fn tracks(moov: &[u8]) -> Vec<Track> {
    let defaults: Vec<(u32, u32)> = child(moov, b"mvex")
        .map(|mvex| {
            children(mvex)
                .filter(|(k, _)| k == b"trex")
                .filter_map(|(_, t)| {
                    Some((
                        u32::from_be_bytes(t.get(4..8)?.try_into().ok()?),
                        u32::from_be_bytes(t.get(12..16)?.try_into().ok()?),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    children(moov)
        .filter(|(k, _)| k == b"trak")
        .filter_map(|(_, trak)| {
            let id = child(trak, b"tkhd").and_then(|tkhd| full_box_u32(tkhd, 12, 20))?;
            let timescale = child(trak, b"mdia")
                .and_then(|mdia| child(mdia, b"mdhd"))
                .and_then(|mdhd| full_box_u32(mdhd, 12, 20))?;
            let default_duration = defaults.iter().find(|(t, _)| *t == id).map(|(_, d)| *d);
            Some(Track {
                id,
                timescale,
                default_duration,
            })
        })
        .collect()
}

/// A track fragment header's track id and default sample duration, if it gives one.
fn tfhd(payload: &[u8]) -> Option<(u32, Option<u32>)> {
    let flags = u32::from_be_bytes(payload.get(..4)?.try_into().ok()?) & 0x00ff_ffff;
    let track = u32::from_be_bytes(payload.get(4..8)?.try_into().ok()?);
    let mut at = 8;
    if flags & 0x01 != 0 {
        at += 8; // base data offset
    }
    if flags & 0x02 != 0 {
        at += 4; // sample description index
    }
    let default_duration = match flags & 0x08 {
        0 => None,
        _ => Some(u32::from_be_bytes(
            payload.get(at..at + 4)?.try_into().ok()?,
        )),
    };
    Some((track, default_duration))
}

/// The summed durations of a track run's samples.
fn trun_duration(payload: &[u8], default_duration: u32) -> Option<u64> {
    let flags = u32::from_be_bytes(payload.get(..4)?.try_into().ok()?) & 0x00ff_ffff;
    let count = u32::from_be_bytes(payload.get(4..8)?.try_into().ok()?) as u64;
    if flags & 0x100 == 0 {
        return Some(count * u64::from(default_duration));
    }
    let mut at = 8 + if flags & 0x01 != 0 { 4 } else { 0 } + if flags & 0x04 != 0 { 4 } else { 0 };
    let per_sample = 4 * [0x100, 0x200, 0x400, 0x800]
        .iter()
        .filter(|f| flags & **f != 0)
        .count();
    let mut total = 0u64;
    for _ in 0..count {
        total = total.saturating_add(u64::from(u32::from_be_bytes(
            payload.get(at..at + 4)?.try_into().ok()?,
        )));
        at += per_sample;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mp4_box(kind: &[u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut b = ((payload.len() + 8) as u32).to_be_bytes().to_vec();
        b.extend(kind);
        b.extend(payload);
        b
    }

    /// Version and flags, then the fields.
    fn full(version: u8, flags: u32, fields: &[&[u8]]) -> Vec<u8> {
        let mut p = ((u32::from(version) << 24) | flags).to_be_bytes().to_vec();
        for f in fields {
            p.extend(*f);
        }
        p
    }

    /// A fragmented MP4 as a camera writes it: an empty movie header
    /// (duration 0, timescale 1000), one video track at 90 kHz whose
    /// samples last 3000 ticks unless said otherwise, then `fragments`
    /// fragments of 60 samples each (2 s), with or without decode times,
    /// per-sample durations and a movie extends header.
    fn camera_file(
        fragments: u64,
        decode_times: bool,
        per_sample: bool,
        mehd: Option<u32>,
    ) -> Vec<u8> {
        let mvhd = mp4_box(
            b"mvhd",
            &full(
                0,
                0,
                &[
                    &[0; 8],
                    &1000u32.to_be_bytes(),
                    &0u32.to_be_bytes(),
                    &[0; 80],
                ],
            ),
        );
        let tkhd = mp4_box(
            b"tkhd",
            &full(0, 3, &[&[0; 8], &1u32.to_be_bytes(), &[0; 64]]),
        );
        let mdhd = mp4_box(
            b"mdhd",
            &full(
                0,
                0,
                &[
                    &[0; 8],
                    &90_000u32.to_be_bytes(),
                    &0u32.to_be_bytes(),
                    &[0; 4],
                ],
            ),
        );
        let trak = mp4_box(b"trak", &[tkhd, mp4_box(b"mdia", &mdhd)].concat());
        let trex = mp4_box(
            b"trex",
            &full(
                0,
                0,
                &[
                    &1u32.to_be_bytes(),
                    &1u32.to_be_bytes(),
                    &3000u32.to_be_bytes(),
                    &[0; 8],
                ],
            ),
        );
        let mut mvex = trex;
        if let Some(whole) = mehd {
            mvex = [mp4_box(b"mehd", &full(0, 0, &[&whole.to_be_bytes()])), mvex].concat();
        }
        let mut file = mp4_box(b"ftyp", b"isom\0\0\x02\0isomiso6");
        file.extend(mp4_box(
            b"moov",
            &[mvhd, trak, mp4_box(b"mvex", &mvex)].concat(),
        ));
        for i in 0..fragments {
            let tfhd = mp4_box(b"tfhd", &full(0, 0x02_0000, &[&1u32.to_be_bytes()]));
            let tfdt = mp4_box(b"tfdt", &full(1, 0, &[&(i * 180_000).to_be_bytes()]));
            let trun = match per_sample {
                // Durations and sizes per sample, a data offset first.
                true => {
                    let samples: Vec<u8> = (0..60)
                        .flat_map(|_| [3000u32.to_be_bytes(), 100u32.to_be_bytes()].concat())
                        .collect();
                    mp4_box(
                        b"trun",
                        &full(
                            0,
                            0x301,
                            &[&60u32.to_be_bytes(), &0u32.to_be_bytes(), &samples],
                        ),
                    )
                }
                false => mp4_box(b"trun", &full(0, 0, &[&60u32.to_be_bytes()])),
            };
            let traf = mp4_box(
                b"traf",
                &[tfhd, if decode_times { tfdt } else { Vec::new() }, trun].concat(),
            );
            file.extend(mp4_box(
                b"moof",
                &[
                    mp4_box(b"mfhd", &full(0, 0, &[&(i as u32 + 1).to_be_bytes()])),
                    traf,
                ]
                .concat(),
            ));
            file.extend(mp4_box(b"mdat", &vec![7u8; 6000]));
        }
        file
    }

    #[test]
    fn a_fragmented_mp4_lasts_until_its_last_fragment_ends() {
        for (decode_times, per_sample) in
            [(true, false), (false, false), (true, true), (false, true)]
        {
            let file = camera_file(3, decode_times, per_sample, None);
            assert_eq!(
                duration(&mut std::io::Cursor::new(&file), 1000),
                Some(Duration::from_secs(6)),
                "decode times {decode_times}, per sample {per_sample}"
            );
            assert_eq!(
                crate::facts::media_facts(std::io::Cursor::new(&file)),
                ["6.0 s"]
            );
        }
        // The movie extends header, when there, is the writer's word (in the movie's timescale).
        assert_eq!(
            duration(
                &mut std::io::Cursor::new(camera_file(3, true, false, Some(6500))),
                1000
            ),
            Some(Duration::from_millis(6500))
        );
        // No fragments: not for this reader.
        assert_eq!(
            duration(
                &mut std::io::Cursor::new(camera_file(0, true, false, None)),
                1000
            ),
            None
        );
        // Cut short in its last fragment: the fragments whole before it count.
        let mut cut = camera_file(3, true, false, None);
        cut.truncate(cut.len() - 6010);
        assert_eq!(
            duration(&mut std::io::Cursor::new(&cut), 1000),
            Some(Duration::from_secs(4))
        );
    }

    /// Counts the reads a parser makes of its source.
    struct Counted<R> {
        inner: R,
        reads: usize,
    }

    impl<R: Read> Read for Counted<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.reads += 1;
            self.inner.read(buf)
        }
    }

    impl<R: Seek> Seek for Counted<R> {
        fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(to)
        }
    }

    /// `ftyp` and 200,000 empty `free` boxes took `dmv show` and a file page
    /// 25 s each, every time: the walk visits at most what its caller allows.
    #[test]
    fn a_walk_of_boxes_stops_at_its_callers_budget() {
        let mut file = camera_file(0, true, false, None);
        file.extend(std::iter::repeat_n(mp4_box(b"free", b""), 200_000).flatten());
        file.extend(camera_file(1, true, false, None));
        let mut source = Counted {
            inner: std::io::Cursor::new(&file),
            reads: 0,
        };
        assert_eq!(
            duration(&mut source, 1000),
            None,
            "the fragment lies past the budget"
        );
        assert!(source.reads <= 2 * 1000, "{} reads", source.reads);
        let mut source = Counted {
            inner: std::io::Cursor::new(&file),
            reads: 0,
        };
        assert_eq!(
            duration(&mut source, 300_000),
            Some(Duration::from_secs(2)),
            "within a larger budget it is found"
        );
    }

    proptest! {
        /// Bytes from disk are hostile: any damage to a fragmented MP4 gives a duration or none, never a panic or a hang.
        #[test]
        fn damaged_files_never_panic(flips in proptest::collection::vec((0usize..4000, any::<u8>()), 1..20), cut in 0usize..4000) {
            let mut file = camera_file(2, true, true, None);
            for (at, byte) in flips {
                let at = at % file.len();
                file[at] = byte;
            }
            file.truncate(file.len().saturating_sub(cut));
            let _ = duration(&mut std::io::Cursor::new(&file), 1000);
        }
    }
}
