//! Small camera raw files with the layouts cameras write, for tests of what
//! reads their embedded JPEGs: the directories, tags and byte orders of each
//! format as documented (TIFF 6.0, DNG 1.4, and the published layouts of
//! CR2, NEF, RW2 and RAF), the JPEGs given by the test, and sensor data of
//! zeros behind a lossless-JPEG or CFA directory, as the real ones have.

/// The raw formats [`camera_raw`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawLayout {
    /// Canon CR2: little-endian TIFF; IFD0 holds the full-size JPEG as its
    /// strip, IFD1 a small one by JPEGInterchangeFormat, IFD3 the sensor data.
    Cr2,
    /// Nikon NEF: big-endian TIFF; IFD0 an uncompressed thumbnail, its
    /// SubIFDs the preview JPEG and the CFA data.
    Nef,
    /// Adobe DNG: IFD0 an uncompressed thumbnail, SubIFDs the sensor data
    /// (lossless JPEG) and a preview JPEG as a strip.
    Dng,
    /// Panasonic RW2: TIFF with magic 0x55; the JPEG is tag 0x2e's bytes.
    Rw2,
    /// Fujifilm RAF: its own header; bytes 84 and 88 give the JPEG's offset and length.
    Raf,
}

/// A raw file of `layout` embedding `large` (the camera's full preview) and,
/// where the format stores two, `small` (its thumbnail).
pub fn camera_raw(layout: RawLayout, large: &[u8], small: &[u8]) -> Vec<u8> {
    const RGB_THUMB: (u32, u32) = (16, 12);
    let thumb = vec![0x80u8; (RGB_THUMB.0 * RGB_THUMB.1 * 3) as usize];
    let lossless = lossless_jpeg_header();
    let sensor = vec![0u8; 4096];
    let rgb_thumbnail = |strip| {
        vec![
            long(254, 1),
            long(256, RGB_THUMB.0),
            long(257, RGB_THUMB.1),
            short(259, 1),
            short(262, 2),
            strip,
            long(279, thumb.len() as u32),
        ]
    };
    match layout {
        RawLayout::Raf => {
            let mut out = b"FUJIFILMCCD-RAW 0201FF383501".to_vec();
            out.resize(84, 0);
            out.extend_from_slice(&160u32.to_be_bytes());
            out.extend_from_slice(&(large.len() as u32).to_be_bytes());
            out.resize(160, 0);
            out.extend_from_slice(large);
            out.extend_from_slice(&sensor);
            out
        }
        RawLayout::Rw2 => Tiff {
            big_endian: false,
            magic: 0x55,
            chain: vec![0],
            ifds: vec![vec![long(256, 64), long(257, 48), bytes(0x2e, 0)]],
            blobs: vec![large.to_vec()],
        }
        .write(),
        RawLayout::Cr2 => Tiff {
            big_endian: false,
            magic: 42,
            chain: vec![0, 1, 2],
            ifds: vec![
                vec![
                    short(259, 6),
                    strip_offset(0),
                    long(279, large.len() as u32),
                ],
                vec![
                    short(259, 6),
                    blob_offset(513, 1),
                    long(514, small.len() as u32),
                ],
                vec![
                    short(259, 6),
                    strip_offset(2),
                    long(279, lossless.len() as u32),
                ],
            ],
            blobs: vec![large.to_vec(), small.to_vec(), lossless],
        }
        .write(),
        RawLayout::Nef => Tiff {
            big_endian: true,
            magic: 42,
            chain: vec![0],
            ifds: vec![
                [rgb_thumbnail(strip_offset(0)), vec![sub_ifds(&[1, 2])]].concat(),
                vec![
                    long(254, 1),
                    short(259, 6),
                    blob_offset(513, 1),
                    long(514, large.len() as u32),
                ],
                vec![
                    long(254, 0),
                    short(259, 34713),
                    short(262, 32803),
                    strip_offset(2),
                    long(279, sensor.len() as u32),
                ],
            ],
            blobs: vec![thumb.clone(), large.to_vec(), sensor],
        }
        .write(),
        RawLayout::Dng => Tiff {
            big_endian: false,
            magic: 42,
            chain: vec![0],
            ifds: vec![
                [rgb_thumbnail(strip_offset(0)), vec![sub_ifds(&[1, 2])]].concat(),
                vec![
                    long(254, 0),
                    short(259, 7),
                    short(262, 32803),
                    strip_offset(1),
                    long(279, lossless.len() as u32),
                ],
                vec![
                    long(254, 1),
                    short(259, 7),
                    short(262, 6),
                    strip_offset(2),
                    long(279, large.len() as u32),
                ],
            ],
            blobs: vec![thumb.clone(), lossless, large.to_vec()],
        }
        .write(),
    }
}

/// The start of a lossless (SOF3) JPEG, as raws store sensor data.
fn lossless_jpeg_header() -> Vec<u8> {
    let mut out = vec![
        0xFF, 0xD8, 0xFF, 0xC3, 0, 14, 14, 0x0F, 0xA0, 0x0B, 0xB8, 2, 1, 0x11, 0, 2, 0x11, 0,
    ];
    out.resize(1024, 0);
    out
}

/// A value of one directory entry.
#[derive(Clone)]
enum Value {
    Short(u16),
    Long(u32),
    /// The offset of a blob.
    BlobOffset(usize),
    /// Type UNDEFINED: a blob's bytes, counted by length.
    BlobBytes(usize),
    /// The offsets of directories.
    Directories(Vec<usize>),
}

fn short(tag: u16, v: u16) -> (u16, Value) {
    (tag, Value::Short(v))
}
fn long(tag: u16, v: u32) -> (u16, Value) {
    (tag, Value::Long(v))
}
fn strip_offset(blob: usize) -> (u16, Value) {
    (273, Value::BlobOffset(blob))
}
fn blob_offset(tag: u16, blob: usize) -> (u16, Value) {
    (tag, Value::BlobOffset(blob))
}
fn bytes(tag: u16, blob: usize) -> (u16, Value) {
    (tag, Value::BlobBytes(blob))
}
fn sub_ifds(dirs: &[usize]) -> (u16, Value) {
    (330, Value::Directories(dirs.to_vec()))
}

struct Tiff {
    big_endian: bool,
    magic: u16,
    /// Directories linked from the header, in order; the others are reached by SubIFDs.
    chain: Vec<usize>,
    ifds: Vec<Vec<(u16, Value)>>,
    blobs: Vec<Vec<u8>>,
}

impl Tiff {
    /// Header, directories, SubIFD offset arrays, then the blobs.
    fn write(mut self) -> Vec<u8> {
        for ifd in &mut self.ifds {
            ifd.sort_by_key(|(tag, _)| *tag);
        }
        let mut at = 8u32;
        let mut place = |size: usize| {
            let start = at;
            at += size as u32;
            start
        };
        let ifd_at: Vec<u32> = self
            .ifds
            .iter()
            .map(|ifd| place(2 + 12 * ifd.len() + 4))
            .collect();
        let arrays_at: Vec<u32> = self
            .ifds
            .iter()
            .flatten()
            .filter_map(|(_, v)| match v {
                Value::Directories(d) if d.len() > 1 => Some(place(4 * d.len())),
                _ => None,
            })
            .collect();
        let blob_at: Vec<u32> = self.blobs.iter().map(|b| place(b.len())).collect();
        let u16b: fn(u16) -> [u8; 2] = if self.big_endian {
            u16::to_be_bytes
        } else {
            u16::to_le_bytes
        };
        let u32b: fn(u32) -> [u8; 4] = if self.big_endian {
            u32::to_be_bytes
        } else {
            u32::to_le_bytes
        };
        let mut out = if self.big_endian {
            b"MM".to_vec()
        } else {
            b"II".to_vec()
        };
        out.extend(u16b(self.magic));
        out.extend(u32b(ifd_at[self.chain[0]]));
        let mut arrays = Vec::new();
        for (i, ifd) in self.ifds.iter().enumerate() {
            out.extend(u16b(ifd.len() as u16));
            for (tag, value) in ifd {
                let (kind, count, field) = match value {
                    Value::Short(v) => (3u16, 1u32, [u16b(*v), [0, 0]].concat()),
                    Value::Long(v) => (4, 1, u32b(*v).to_vec()),
                    Value::BlobOffset(b) => (4, 1, u32b(blob_at[*b]).to_vec()),
                    Value::BlobBytes(b) => {
                        (7, self.blobs[*b].len() as u32, u32b(blob_at[*b]).to_vec())
                    }
                    Value::Directories(d) if d.len() == 1 => (13, 1, u32b(ifd_at[d[0]]).to_vec()),
                    Value::Directories(d) => {
                        let array_at = arrays_at[arrays.len()];
                        arrays.push(d.iter().flat_map(|&d| u32b(ifd_at[d])).collect::<Vec<u8>>());
                        (13, d.len() as u32, u32b(array_at).to_vec())
                    }
                };
                out.extend(u16b(*tag));
                out.extend(u16b(kind));
                out.extend(u32b(count));
                out.extend(field);
            }
            let next = self
                .chain
                .iter()
                .position(|&c| c == i)
                .and_then(|p| self.chain.get(p + 1))
                .map_or(0, |&n| ifd_at[n]);
            out.extend(u32b(next));
        }
        for array in arrays {
            out.extend(array);
        }
        for blob in &self.blobs {
            out.extend(blob);
        }
        out
    }
}
