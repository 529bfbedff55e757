//! Opening: a whole sealed object ([`open`]), some of its segments
//! ([`open_segments`]), or ranges of its data through a [`SealedReader`]
//! that fetches only the segments it needs. Every path gives the right
//! bytes or an error, never other bytes.

use std::io;
use std::ops::Range;

use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::keyring::Keyring;
use crate::layout::{
    Header, SealedLayout, HEADER_LEN, LENGTH_LEN, SEALED_SEGMENT_LEN, SEGMENT_LEN, TAG_LEN,
};
use crate::segment::SegmentCipher;

const WHAT: &str = "an encrypted object";

/// Opens a sealed object made by [`seal`](crate::seal) or a
/// [`Sealer`](crate::Sealer) with the same `aad`, giving its data back if
/// it is at most `max_len` bytes.
///
/// The last segment is opened first: it holds the data length, which is
/// judged against `max_len` before the data's buffer is sized.
pub fn open(keyring: &Keyring, aad: &[u8], sealed: &[u8], max_len: u64) -> Result<Vec<u8>> {
    let header = Header::parse(sealed)?;
    let layout = SealedLayout::new(sealed.len() as u64)?;
    let cipher = SegmentCipher::for_header(keyring, &header)?;
    let last = layout.last_segment();
    let tail = open_one(&cipher, &layout, aad, last, sealed)?;
    let data_len = layout.data_len(&tail)?;
    if data_len > max_len {
        return Err(Error::OverBudget {
            len: data_len,
            budget: max_len,
        });
    }
    let mut out = Vec::new();
    out.try_reserve_exact(data_len as usize)
        .map_err(|_| Error::OutOfMemory {
            what: "an opened object",
            bytes: data_len,
        })?;
    let field_at = layout.stream_len() - LENGTH_LEN;
    for index in 0..last {
        let plain = open_one(&cipher, &layout, aad, index, sealed)?;
        take_data(&mut out, index * SEGMENT_LEN, &plain, data_len, field_at)?;
    }
    take_data(&mut out, last * SEGMENT_LEN, &tail, data_len, field_at)?;
    Ok(out)
}

/// Opens segment `index` of a whole sealed object (in a wiped buffer).
fn open_one(
    cipher: &SegmentCipher,
    layout: &SealedLayout,
    aad: &[u8],
    index: u64,
    sealed: &[u8],
) -> Result<Zeroizing<Vec<u8>>> {
    let range = layout
        .sealed_range(index..index + 1)
        .ok_or(Error::Segment { index })?;
    let bytes = sealed
        .get(range.start as usize..range.end as usize)
        .ok_or(Error::Segment { index })?;
    let mut buf = Zeroizing::new(bytes.to_vec());
    cipher.open(index, index == layout.last_segment(), aad, &mut buf)?;
    let plain_len = buf.len() - TAG_LEN as usize;
    buf.truncate(plain_len);
    Ok(buf)
}

/// Appends the data in a segment's plaintext, which starts at `at` in the
/// stream, to `out`, and checks that its padding (between the data and the
/// length field at `field_at`) is zeros. The AEAD already vouches for the
/// bytes: this catches only a faulty sealer that held the key.
fn take_data(out: &mut Vec<u8>, at: u64, plain: &[u8], data_len: u64, field_at: u64) -> Result<()> {
    let end = at + plain.len() as u64;
    let data_to = (data_len.clamp(at, end) - at) as usize;
    let padding_to = (field_at.clamp(at, end) - at) as usize;
    out.extend_from_slice(&plain[..data_to]);
    if plain[data_to..padding_to.max(data_to)]
        .iter()
        .any(|&b| b != 0)
    {
        return Err(Error::Damaged {
            what: WHAT,
            why: "its padding is not zeros",
        });
    }
    Ok(())
}

/// Opens consecutive sealed segments of the object with `header`, starting
/// with segment `first`: `bytes` is what the storage gave for their range
/// (see [`SealedLayout::sealed_range`]), `is_last` says whether they end
/// with the object's last segment. Returns their plaintext: a slice of the
/// stream, padding and length field included where the segments hold them
/// ([`SealedLayout::data_len`] reads the length from the last segment's).
///
/// Segments asked for under the wrong index, the wrong `is_last`, another
/// object's header or `aad` fail authentication.
pub fn open_segments(
    keyring: &Keyring,
    aad: &[u8],
    header: &Header,
    first: u64,
    bytes: &[u8],
    is_last: bool,
) -> Result<Vec<u8>> {
    let mut owned = Vec::new();
    owned
        .try_reserve_exact(bytes.len())
        .map_err(|_| Error::OutOfMemory {
            what: "opened segments",
            bytes: bytes.len() as u64,
        })?;
    owned.extend_from_slice(bytes);
    open_segments_in_place(keyring, aad, header, first, owned, is_last)
}

/// [`open_segments`] in the buffer the segments came in, which becomes the
/// plaintext: no second buffer of their size is taken (a clone reads
/// gigabytes of segments, and each copy is that many fresh pages).
pub fn open_segments_in_place(
    keyring: &Keyring,
    aad: &[u8],
    header: &Header,
    first: u64,
    mut bytes: Vec<u8>,
    is_last: bool,
) -> Result<Vec<u8>> {
    let cipher = SegmentCipher::for_header(keyring, header)?;
    let seg = SEALED_SEGMENT_LEN as usize;
    let tail = bytes.len() % seg;
    // Only the last segment of an object may be short, and none is empty.
    let whole_segments = if is_last {
        !bytes.is_empty() && (tail == 0 || tail > TAG_LEN as usize)
    } else {
        tail == 0
    };
    if !whole_segments {
        return Err(Error::NotWholeSegments {
            len: bytes.len() as u64,
        });
    }
    let count = bytes.len().div_ceil(seg);
    first
        .checked_add(count as u64)
        .ok_or(Error::NotWholeSegments {
            len: bytes.len() as u64,
        })?;
    // Each segment opened where it lies, its plaintext moved down over the
    // tags of the segments before it.
    let mut written = 0;
    for k in 0..count {
        let (start, end) = (k * seg, ((k + 1) * seg).min(bytes.len()));
        let last = is_last && k + 1 == count;
        if let Err(e) = cipher.open(first + k as u64, last, aad, &mut bytes[start..end]) {
            // Nothing of what did not verify is given out, nor left behind.
            zeroize::Zeroize::zeroize(&mut bytes);
            return Err(e);
        }
        let plain = end - start - TAG_LEN as usize;
        bytes.copy_within(start..start + plain, written);
        written += plain;
    }
    bytes.truncate(written);
    Ok(bytes)
}

/// Reads ranges of a sealed object's data from storage that can read
/// ranges of bytes, fetching only the segments that hold each range.
///
/// `fetch(range)` returns exactly the bytes `range` of the sealed object.
/// Making a reader fetches the header and the last segment (which holds the
/// data length); each [`SealedReader::read`] then fetches the segments
/// covering its range, in one call.
pub struct SealedReader<'k, F> {
    keyring: &'k Keyring,
    aad: Vec<u8>,
    fetch: F,
    header: Header,
    layout: SealedLayout,
    data_len: u64,
}

impl<'k, F> SealedReader<'k, F>
where
    F: FnMut(Range<u64>) -> io::Result<Vec<u8>>,
{
    /// A reader of the sealed object of `sealed_len` bytes that `fetch`
    /// reads from, with the `aad` it was sealed with.
    pub fn new(
        keyring: &'k Keyring,
        aad: &[u8],
        sealed_len: u64,
        mut fetch: F,
    ) -> Result<SealedReader<'k, F>> {
        let layout = SealedLayout::new(sealed_len)?;
        let header = Header::parse(&fetch_exact(&mut fetch, 0..HEADER_LEN)?)?;
        let last = layout.last_segment();
        let range = layout
            .sealed_range(last..last + 1)
            .ok_or(Error::Segment { index: last })?;
        let tail = Zeroizing::new(open_segments(
            keyring,
            aad,
            &header,
            last,
            &fetch_exact(&mut fetch, range)?,
            true,
        )?);
        let data_len = layout.data_len(&tail)?;
        Ok(SealedReader {
            keyring,
            aad: aad.to_vec(),
            fetch,
            header,
            layout,
            data_len,
        })
    }

    /// The data's length.
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// The object's layout.
    pub fn layout(&self) -> &SealedLayout {
        &self.layout
    }

    /// Bytes `range` of the data, which must lie within it.
    pub fn read(&mut self, range: Range<u64>) -> Result<Vec<u8>> {
        if range.start > range.end || range.end > self.data_len {
            return Err(Error::BadRange {
                start: range.start,
                end: range.end,
                len: self.data_len,
            });
        }
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let segments = self.layout.segments_covering(range.clone())?;
        let sealed = self
            .layout
            .sealed_range(segments.clone())
            .ok_or(Error::Segment {
                index: segments.start,
            })?;
        let bytes = fetch_exact(&mut self.fetch, sealed)?;
        let is_last = segments.end == self.layout.segment_count();
        let plain = Zeroizing::new(open_segments(
            self.keyring,
            &self.aad,
            &self.header,
            segments.start,
            &bytes,
            is_last,
        )?);
        let from = (range.start - segments.start * SEGMENT_LEN) as usize;
        let to = from + (range.end - range.start) as usize;
        plain
            .get(from..to)
            .map(<[u8]>::to_vec)
            .ok_or(Error::NotWholeSegments {
                len: bytes.len() as u64,
            })
    }
}

/// Fetches `range`, refusing a short or long answer.
fn fetch_exact<F>(fetch: &mut F, range: Range<u64>) -> Result<Vec<u8>>
where
    F: FnMut(Range<u64>) -> io::Result<Vec<u8>>,
{
    let asked = range.end - range.start;
    let bytes = fetch(range)?;
    if bytes.len() as u64 != asked {
        return Err(Error::ShortRead {
            asked,
            got: bytes.len() as u64,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::SEALED_MAGIC;

    /// An object sealed from a stream given whole, as only a faulty sealer
    /// holding the key could make.
    fn sealed_from_stream(keyring: &Keyring, stream: &[u8]) -> Vec<u8> {
        let header = Header::new(1, [9; 16]);
        let cipher = SegmentCipher::for_header(keyring, &header).unwrap();
        let mut out = header.encode().to_vec();
        let count = stream.len().div_ceil(SEGMENT_LEN as usize);
        for (i, chunk) in stream.chunks(SEGMENT_LEN as usize).enumerate() {
            let mut buf = chunk.to_vec();
            let tag = cipher.seal(i as u64, i + 1 == count, b"", &mut buf);
            out.extend(buf);
            out.extend(tag);
        }
        out
    }

    #[test]
    fn a_faulty_sealers_padding_or_length_is_damage() {
        let keyring = Keyring::from_epochs(&[(1, [1; 32])]).unwrap();
        // 100 bytes of data: a stream of padded_len(108) = 112 bytes.
        let mut stream = vec![7u8; 100];
        stream.extend([0; 4]);
        stream.extend(100u64.to_le_bytes());
        let good = sealed_from_stream(&keyring, &stream);
        assert_eq!(open(&keyring, b"", &good, 1000).unwrap(), vec![7; 100]);
        assert_eq!(&good[..4], SEALED_MAGIC);

        let mut dirty = stream.clone();
        dirty[101] = 1;
        assert_eq!(
            open(&keyring, b"", &sealed_from_stream(&keyring, &dirty), 1000)
                .unwrap_err()
                .to_string(),
            "an encrypted object is damaged: its padding is not zeros"
        );
        // Lengths that do not pad to 112, or claim more than the stream.
        for len in [90u64, 112, 1 << 40, u64::MAX] {
            let mut lying = stream.clone();
            lying[104..].copy_from_slice(&len.to_le_bytes());
            assert_eq!(
                open(
                    &keyring,
                    b"",
                    &sealed_from_stream(&keyring, &lying),
                    u64::MAX
                )
                .unwrap_err()
                .to_string(),
                "an encrypted object is damaged: its stored length does not match its size",
                "length {len}"
            );
        }
        // 99 also pads to 112: then the 100th byte is padding, and must be 0.
        let mut shorter = stream.clone();
        shorter[104..].copy_from_slice(&99u64.to_le_bytes());
        assert!(open(&keyring, b"", &sealed_from_stream(&keyring, &shorter), 1000).is_err());
        shorter[99] = 0;
        assert_eq!(
            open(&keyring, b"", &sealed_from_stream(&keyring, &shorter), 1000).unwrap(),
            vec![7; 99]
        );
    }
}
