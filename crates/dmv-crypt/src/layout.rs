//! Where things are in a sealed object: its header, and which bytes of it
//! hold each segment. A reader that wants part of an object asks the
//! storage for only the segments holding that part.
//!
//! ```text
//! header     "DMVE" | version u8 = 1 | epoch u32 LE | nonce [16]       25 bytes
//! segment*   ChaCha20-Poly1305 of 64 KiB of the stream, + 16-byte tag
//! last       the same, of the rest of the stream (1 to 64 KiB)
//! stream     data | zeros | data length u64 LE, padded_len(len + 8) bytes
//! ```

use std::ops::Range;

use crate::error::{Error, Result};
use crate::padding::padded_len;

/// `DMVE`: the start of a sealed object.
pub const SEALED_MAGIC: &[u8; 4] = b"DMVE";
/// The sealed object format's version.
pub const SEALED_VERSION: u8 = 1;
/// Magic, version, epoch, nonce.
pub const HEADER_LEN: u64 = 25;
/// Plaintext bytes in every segment but the last.
pub const SEGMENT_LEN: u64 = 64 * 1024;
/// The Poly1305 tag after each segment's ciphertext.
pub const TAG_LEN: u64 = 16;
/// A whole segment as stored.
pub const SEALED_SEGMENT_LEN: u64 = SEGMENT_LEN + TAG_LEN;
/// The data length that closes the stream.
pub const LENGTH_LEN: u64 = 8;
/// The largest data length that can be sealed, 2^60 bytes: far above any
/// file, low enough that no length or offset derived from it overflows.
pub const MAX_DATA_LEN: u64 = 1 << 60;

const WHAT: &str = "an encrypted object";

/// A sealed object's header: which epoch sealed it and its random nonce,
/// from which its file key is derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    epoch: u32,
    nonce: [u8; 16],
}

impl Header {
    pub(crate) fn new(epoch: u32, nonce: [u8; 16]) -> Header {
        Header { epoch, nonce }
    }

    /// Reads the header at the start of `bytes` (25 bytes; what follows is
    /// not looked at, so the start of an object will do).
    pub fn parse(bytes: &[u8]) -> Result<Header> {
        if bytes.get(..4) != Some(SEALED_MAGIC.as_slice()) {
            return Err(Error::NotOurs { what: WHAT });
        }
        let Some(h) = bytes.get(..HEADER_LEN as usize) else {
            return Err(Error::NotASealedLength {
                len: bytes.len() as u64,
            });
        };
        match h[4] {
            SEALED_VERSION => {}
            0 => {
                return Err(Error::Damaged {
                    what: WHAT,
                    why: "its version is 0",
                })
            }
            version => {
                return Err(Error::NewerFormat {
                    what: WHAT,
                    version,
                })
            }
        }
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(&h[9..25]);
        Ok(Header {
            epoch: u32::from_le_bytes([h[5], h[6], h[7], h[8]]),
            nonce,
        })
    }

    /// The header's 25 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut out = [0u8; HEADER_LEN as usize];
        out[..4].copy_from_slice(SEALED_MAGIC);
        out[4] = SEALED_VERSION;
        out[5..9].copy_from_slice(&self.epoch.to_le_bytes());
        out[9..].copy_from_slice(&self.nonce);
        out
    }

    /// The epoch whose key sealed the object.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    pub(crate) fn nonce(&self) -> &[u8; 16] {
        &self.nonce
    }
}

/// The shape of a sealed object of a given length: how long its padded
/// stream is, how many segments hold it, and where each one is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealedLayout {
    /// The plaintext stream's length: data, padding and the length field.
    stream_len: u64,
    segments: u64,
}

impl SealedLayout {
    /// The layout of a sealed object `sealed_len` bytes long, or an error if
    /// no sealed object has that length (cut short or extended).
    pub fn new(sealed_len: u64) -> Result<SealedLayout> {
        let bad = Error::NotASealedLength { len: sealed_len };
        let body = sealed_len.checked_sub(HEADER_LEN).ok_or(bad)?;
        let segments = body.div_ceil(SEALED_SEGMENT_LEN);
        let last = body - (segments.max(1) - 1) * SEALED_SEGMENT_LEN;
        if segments == 0 || last <= TAG_LEN {
            return Err(Error::NotASealedLength { len: sealed_len });
        }
        let stream_len = body - segments * TAG_LEN;
        // Every stream is a Padmé length of at least the length field, so
        // its last segment holds the whole length field (see the tests).
        if stream_len < LENGTH_LEN
            || padded_len(stream_len) != stream_len
            || stream_len > padded_len(MAX_DATA_LEN + LENGTH_LEN)
        {
            return Err(Error::NotASealedLength { len: sealed_len });
        }
        Ok(SealedLayout {
            stream_len,
            segments,
        })
    }

    /// The layout sealing `data_len` bytes makes.
    pub fn for_data_len(data_len: u64) -> Result<SealedLayout> {
        if data_len > MAX_DATA_LEN {
            return Err(Error::TooLargeToSeal { len: data_len });
        }
        let stream_len = padded_len(data_len + LENGTH_LEN);
        Ok(SealedLayout {
            stream_len,
            segments: stream_len.div_ceil(SEGMENT_LEN),
        })
    }

    /// The sealed object's length: header, segments, tags.
    pub fn sealed_len(&self) -> u64 {
        HEADER_LEN + self.stream_len + self.segments * TAG_LEN
    }

    /// The plaintext stream's length: data, zero padding, length field.
    pub fn stream_len(&self) -> u64 {
        self.stream_len
    }

    /// How many segments hold the stream (at least one).
    pub fn segment_count(&self) -> u64 {
        self.segments
    }

    /// The last segment's index, which holds the data length.
    pub fn last_segment(&self) -> u64 {
        self.segments - 1
    }

    /// Where segment `index` sits in the plaintext stream, if it exists.
    pub fn segment_plain_range(&self, index: u64) -> Option<Range<u64>> {
        (index < self.segments).then(|| {
            let start = index * SEGMENT_LEN;
            start..(start + SEGMENT_LEN).min(self.stream_len)
        })
    }

    /// The sealed bytes of segments `segments` (tags included), as a range
    /// of the sealed object; `None` if any of them does not exist.
    pub fn sealed_range(&self, segments: Range<u64>) -> Option<Range<u64>> {
        if segments.start > segments.end || segments.end > self.segments {
            return None;
        }
        let start = HEADER_LEN + segments.start * SEALED_SEGMENT_LEN;
        let end = if segments.end == self.segments {
            self.sealed_len()
        } else {
            HEADER_LEN + segments.end * SEALED_SEGMENT_LEN
        };
        Some(start..end.max(start))
    }

    /// The segments holding bytes `plain` of the stream (for data, a range
    /// below the data length). An empty range needs no segment.
    pub fn segments_covering(&self, plain: Range<u64>) -> Result<Range<u64>> {
        if plain.start > plain.end || plain.end > self.stream_len {
            return Err(Error::BadRange {
                start: plain.start,
                end: plain.end,
                len: self.stream_len,
            });
        }
        let first = plain.start / SEGMENT_LEN;
        if plain.is_empty() {
            return Ok(first..first);
        }
        Ok(first..plain.end.div_ceil(SEGMENT_LEN))
    }

    /// The data length, read from the end of the last segment's plaintext
    /// (as `open_segments` returns it), checked against this layout: a
    /// length that does not pad to this stream's length is damage.
    pub fn data_len(&self, last_segment_plain: &[u8]) -> Result<u64> {
        let want = self
            .segment_plain_range(self.last_segment())
            .map_or(0, |r| r.end - r.start);
        let n = last_segment_plain.len();
        if n as u64 != want || n < LENGTH_LEN as usize {
            return Err(Error::NotWholeSegments { len: n as u64 });
        }
        let mut field = [0u8; LENGTH_LEN as usize];
        field.copy_from_slice(&last_segment_plain[n - LENGTH_LEN as usize..]);
        let len = u64::from_le_bytes(field);
        if len > MAX_DATA_LEN || padded_len(len + LENGTH_LEN) != self.stream_len {
            return Err(Error::Damaged {
                what: WHAT,
                why: "its stored length does not match its size",
            });
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_round_trip_and_others_are_refused() {
        for data_len in [0, 1, 5, 65_527, 65_528, 65_529, 65_536, 1 << 20, 10 << 20] {
            let l = SealedLayout::for_data_len(data_len).unwrap();
            assert_eq!(SealedLayout::new(l.sealed_len()).unwrap(), l);
            assert!(SealedLayout::new(l.sealed_len() + 1).is_err());
            assert!(SealedLayout::new(l.sealed_len() - 1).is_err());
        }
        for len in [0, 1, 24, 25, 26, 25 + 16, 25 + 16 + 7, 25 + 65_552 + 16] {
            assert!(SealedLayout::new(len).is_err(), "{len}");
        }
        assert!(SealedLayout::new(u64::MAX).is_err());
        assert!(SealedLayout::for_data_len(MAX_DATA_LEN + 1).is_err());
        let big = SealedLayout::for_data_len(MAX_DATA_LEN).unwrap();
        assert_eq!(SealedLayout::new(big.sealed_len()).unwrap(), big);
    }

    #[test]
    fn the_last_segment_always_holds_the_whole_length_field() {
        // Padmé lengths of 64 KiB and more are multiples of 2 KiB, so a
        // stream never ends in a sliver of a segment.
        let mut len = 0u64;
        while len < 1 << 40 {
            let l = SealedLayout::for_data_len(len).unwrap();
            let last = l.segment_plain_range(l.last_segment()).unwrap();
            assert!(last.end - last.start >= LENGTH_LEN, "data length {len}");
            assert!(last.end - last.start <= SEGMENT_LEN);
            len = len + len / 97 + 1;
        }
    }

    #[test]
    fn covering_segments() {
        let l = SealedLayout::for_data_len(10 << 20).unwrap();
        assert_eq!(l.segments_covering(0..1).unwrap(), 0..1);
        assert_eq!(l.segments_covering(65_535..65_537).unwrap(), 0..2);
        assert_eq!(l.segments_covering(65_536..65_536).unwrap(), 1..1);
        assert_eq!(l.segments_covering(65_536..131_072).unwrap(), 1..2);
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 5..4;
        assert!(l.segments_covering(backwards).is_err());
        assert!(l.segments_covering(0..l.stream_len() + 1).is_err());
        assert_eq!(l.sealed_range(0..1).unwrap(), 25..25 + 65_552);
        assert_eq!(
            l.sealed_range(l.last_segment()..l.segment_count())
                .unwrap()
                .end,
            l.sealed_len()
        );
        assert_eq!(
            l.sealed_range(3..3).unwrap(),
            25 + 3 * 65_552..25 + 3 * 65_552
        );
        assert!(l.sealed_range(0..l.segment_count() + 1).is_none());
        assert!(l.segment_plain_range(l.segment_count()).is_none());
    }

    #[test]
    fn header_round_trips_and_refuses_others() {
        let h = Header::new(7, [3; 16]);
        assert_eq!(Header::parse(&h.encode()).unwrap(), h);
        let mut b = h.encode();
        b[4] = 2;
        assert_eq!(
            Header::parse(&b).unwrap_err().to_string(),
            "an encrypted object made by a newer version (format 2)"
        );
        assert_eq!(
            Header::parse(b"DMVK").unwrap_err().to_string(),
            "not an encrypted object"
        );
        assert!(Header::parse(&h.encode()[..24]).is_err());
    }
}
