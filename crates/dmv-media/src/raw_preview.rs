//! The JPEG a camera embeds in its raw files: its own rendering of the
//! shot, the one its screen shows. Thumbnails of raws are made from the
//! largest such JPEG, as photo browsers do, rather than by developing the
//! sensor data: that takes seconds and hundreds of megabytes per shot, and
//! the Rust crates that do it (rawloader, rawler) are LGPL where DMV is
//! MIT or Apache-2.0.
//!
//! Most raw formats are TIFF files (DNG, CR2, NEF, ARW, PEF, SRW, 3FR, ...)
//! or TIFF with another magic number (RW2); Fujifilm's RAF has a header of
//! its own that points at the JPEG. Canon's CR3 (ISO media boxes) and
//! Olympus's ORF (the preview in maker notes) are not read. Every offset is read from the file, so every one is checked against
//! its length and every walk is bounded: a corrupt raw gives no preview.

use std::io::{self, Read, Seek, SeekFrom};

/// A baseline or progressive JPEG stored whole inside a raw file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbeddedJpeg {
    /// Where the JPEG starts in the raw file, in bytes.
    pub offset: u64,
    /// Its length in bytes; it ends within the file.
    pub len: u64,
    /// Its width in pixels, from its frame header (never 0).
    pub width: u16,
    /// Its height in pixels, never 0.
    pub height: u16,
}

/// Directories read per file, and SubIFD pointers taken from one entry.
const MAX_DIRECTORIES: usize = 64;
const MAX_SUB_DIRECTORIES: u32 = 16;
/// A directory claiming more entries than this is corrupt.
const MAX_ENTRIES: u16 = 2048;
/// How much of a candidate is read to find its frame header.
const JPEG_HEADER_WINDOW: u64 = 256 << 10;

const TAG_COMPRESSION: u16 = 259;
const TAG_PHOTOMETRIC: u16 = 262;
const TAG_STRIP_OFFSETS: u16 = 273;
const TAG_STRIP_BYTE_COUNTS: u16 = 279;
const TAG_SUB_IFDS: u16 = 330;
const TAG_JPEG_OFFSET: u16 = 513;
const TAG_JPEG_LENGTH: u16 = 514;
/// Panasonic's RW2 keeps its full-size JPEG as the bytes of this tag.
const TAG_PANASONIC_JPEG: u16 = 0x2e;
/// Photometric interpretations of sensor data (CFA, LinearRaw), never a preview.
const SENSOR_PHOTOMETRICS: [u32; 2] = [32803, 34892];

/// The largest embedded JPEG of a raw file that is at most `max_len` bytes
/// long (None: not a raw this reads, or no usable JPEG in it). The tags
/// that give a preview's length are the file's word: a sparse file of a few
/// kilobytes once claimed 1.5 GiB, which the server then read whole, so
/// the caller says how much it will read and longer candidates are passed
/// over.
pub fn largest_embedded_jpeg<R: Read + Seek>(file: &mut R, max_len: u64) -> Option<EmbeddedJpeg> {
    let len = file.seek(SeekFrom::End(0)).ok()?;
    let mut header = [0u8; 92];
    read_at(file, len, 0, &mut header).ok()?;
    let candidates = if header.starts_with(b"FUJIFILMCCD-RAW ") {
        let at = |i: usize| {
            u32::from_be_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]) as u64
        };
        vec![(at(84), at(88))]
    } else {
        tiff_candidates(file, len, &header)?
    };
    candidates
        .into_iter()
        .filter(|&(_, size)| size <= max_len)
        .filter_map(|(offset, size)| frame_of(file, len, offset, size))
        .max_by_key(|j| (j.width as u64 * j.height as u64, j.len))
}

#[derive(Clone, Copy)]
enum Order {
    Little,
    Big,
}

impl Order {
    fn u16(self, b: &[u8]) -> u16 {
        match self {
            Order::Little => u16::from_le_bytes([b[0], b[1]]),
            Order::Big => u16::from_be_bytes([b[0], b[1]]),
        }
    }
    fn u32(self, b: &[u8]) -> u32 {
        match self {
            Order::Little => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            Order::Big => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        }
    }
}

/// (offset, length) pairs of every byte range a TIFF-like raw's directories
/// name as a JPEG; None when the header is not TIFF-like.
fn tiff_candidates<R: Read + Seek>(
    file: &mut R,
    len: u64,
    header: &[u8],
) -> Option<Vec<(u64, u64)>> {
    let order = match &header[..2] {
        b"II" => Order::Little,
        b"MM" => Order::Big,
        _ => return None,
    };
    // 42: TIFF; 0x55: Panasonic RW2.
    if !matches!(order.u16(&header[2..4]), 42 | 0x55) {
        return None;
    }
    let mut pending = vec![order.u32(&header[4..8]) as u64];
    let mut seen = Vec::new();
    let mut candidates = Vec::new();
    while let Some(at) = pending.pop() {
        if at == 0 || seen.contains(&at) || seen.len() >= MAX_DIRECTORIES {
            continue;
        }
        seen.push(at);
        let Ok(dir) = read_directory(file, len, order, at) else {
            continue;
        };
        candidates.extend(dir.candidates());
        pending.extend(dir.sub_directories);
        pending.push(dir.next);
    }
    Some(candidates)
}

/// What one directory says about previews and where to look next.
#[derive(Default)]
struct Directory {
    compression: u32,
    photometric: u32,
    strip: Option<(u64, u64)>,
    jpeg_offset: Option<u64>,
    jpeg_len: Option<u64>,
    panasonic_jpeg: Option<(u64, u64)>,
    sub_directories: Vec<u64>,
    next: u64,
}

impl Directory {
    fn candidates(&self) -> impl Iterator<Item = (u64, u64)> {
        let interchange = self.jpeg_offset.zip(self.jpeg_len);
        let strip = self.strip.filter(|_| {
            matches!(self.compression, 6 | 7) && !SENSOR_PHOTOMETRICS.contains(&self.photometric)
        });
        [interchange, strip, self.panasonic_jpeg]
            .into_iter()
            .flatten()
    }
}

fn read_directory<R: Read + Seek>(
    file: &mut R,
    len: u64,
    order: Order,
    at: u64,
) -> io::Result<Directory> {
    let mut count = [0u8; 2];
    read_at(file, len, at, &mut count)?;
    let count = order.u16(&count);
    if count > MAX_ENTRIES {
        return Err(io::ErrorKind::InvalidData.into());
    }
    let mut entries = vec![0u8; count as usize * 12 + 4];
    read_at(file, len, at + 2, &mut entries)?;
    let mut dir = Directory {
        next: order.u32(&entries[count as usize * 12..]) as u64,
        ..Directory::default()
    };
    let mut strip_offset = None;
    let mut strip_len = None;
    for entry in entries[..count as usize * 12].chunks_exact(12) {
        let (tag, kind, n, value) = (
            order.u16(entry),
            order.u16(&entry[2..]),
            order.u32(&entry[4..]),
            &entry[8..12],
        );
        // A single SHORT or LONG sits in the entry itself.
        let single = match (kind, n) {
            (3, 1) => Some(order.u16(value) as u32),
            (4 | 13, 1) => Some(order.u32(value)),
            _ => None,
        };
        match tag {
            TAG_COMPRESSION => dir.compression = single.unwrap_or(0),
            TAG_PHOTOMETRIC => dir.photometric = single.unwrap_or(0),
            TAG_STRIP_OFFSETS => strip_offset = single,
            TAG_STRIP_BYTE_COUNTS => strip_len = single,
            TAG_JPEG_OFFSET => dir.jpeg_offset = single.map(u64::from),
            TAG_JPEG_LENGTH => dir.jpeg_len = single.map(u64::from),
            TAG_PANASONIC_JPEG if kind == 7 && n > 4 => {
                dir.panasonic_jpeg = Some((order.u32(value) as u64, n as u64))
            }
            TAG_SUB_IFDS if matches!(kind, 4 | 13) => {
                dir.sub_directories = match single {
                    Some(one) => vec![one as u64],
                    None => {
                        let mut offsets = vec![0u8; n.min(MAX_SUB_DIRECTORIES) as usize * 4];
                        read_at(file, len, order.u32(value) as u64, &mut offsets)?;
                        offsets
                            .chunks_exact(4)
                            .map(|o| order.u32(o) as u64)
                            .collect()
                    }
                }
            }
            _ => {}
        }
    }
    dir.strip = strip_offset
        .zip(strip_len)
        .map(|(o, l)| (o as u64, l as u64));
    Ok(dir)
}

/// The candidate as an [`EmbeddedJpeg`] if it lies within the file and is
/// a JPEG this server decodes (baseline or progressive: lossless JPEG is
/// how some raws store sensor data).
fn frame_of<R: Read + Seek>(
    file: &mut R,
    len: u64,
    offset: u64,
    size: u64,
) -> Option<EmbeddedJpeg> {
    if size < 4 || offset.checked_add(size)? > len {
        return None;
    }
    let mut head = vec![0u8; size.min(JPEG_HEADER_WINDOW) as usize];
    read_at(file, len, offset, &mut head).ok()?;
    let (width, height) = jpeg_frame_size(&head)?;
    Some(EmbeddedJpeg {
        offset,
        len: size,
        width,
        height,
    })
}

/// The width and height of a JPEG's frame, from the markers before it
/// (None: not a JPEG, not baseline or progressive, or the frame header
/// lies beyond `head`).
fn jpeg_frame_size(head: &[u8]) -> Option<(u16, u16)> {
    if !head.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut at = 2;
    loop {
        while *head.get(at)? == 0xFF && *head.get(at + 1)? == 0xFF {
            at += 1;
        }
        if *head.get(at)? != 0xFF {
            return None;
        }
        let marker = *head.get(at + 1)?;
        let segment = head
            .get(at + 2..at + 4)
            .map(|l| u16::from_be_bytes([l[0], l[1]]) as usize)?;
        match marker {
            0xC0..=0xC2 => {
                let frame = head.get(at + 4..at + 9)?;
                let (height, width) = (
                    u16::from_be_bytes([frame[1], frame[2]]),
                    u16::from_be_bytes([frame[3], frame[4]]),
                );
                return (width > 0 && height > 0).then_some((width, height));
            }
            // Other frame types (lossless, hierarchical, arithmetic), or the scan before any frame.
            0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF | 0xDA => return None,
            _ if segment < 2 => return None,
            _ => at += 2 + segment,
        }
    }
}

/// Reads exactly `buf.len()` bytes at `at`, refusing a range past `len`.
fn read_at<R: Read + Seek>(file: &mut R, len: u64, at: u64, buf: &mut [u8]) -> io::Result<()> {
    if at.checked_add(buf.len() as u64).is_none_or(|end| end > len) {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(buf)
}
