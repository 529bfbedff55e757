//! Sealing: bytes in memory at once ([`seal`]), or written through a
//! [`Sealer`] for files larger than memory. The two are written apart on
//! purpose, and the tests check they agree byte for byte.

use std::io::{self, Write};

use zeroize::Zeroizing;

use crate::error::{Error, Result};
use crate::keyring::Keyring;
use crate::layout::{Header, SealedLayout, LENGTH_LEN, SEGMENT_LEN, TAG_LEN};
use crate::random::random_bytes;
use crate::segment::SegmentCipher;

/// Seals `data` with the keyring's newest epoch: the sealed object that
/// [`open`](crate::open) gives `data` back from, with the same `aad`.
///
/// `aad` (associated data) is bound to every segment but not stored: the
/// object's keyed name, say, so that storage that hands back another
/// object under this name is caught.
pub fn seal(keyring: &Keyring, aad: &[u8], data: &[u8]) -> Result<Vec<u8>> {
    seal_with_nonce(keyring, aad, data, random_bytes()?)
}

/// [`seal`] with a given nonce, for the golden vectors. A nonce must never
/// repeat under one key.
pub(crate) fn seal_with_nonce(
    keyring: &Keyring,
    aad: &[u8],
    data: &[u8],
    nonce: [u8; 16],
) -> Result<Vec<u8>> {
    let layout = SealedLayout::for_data_len(data.len() as u64)?;
    let (epoch, _) = keyring.sealing_key();
    let header = Header::new(epoch, nonce);
    let cipher = SegmentCipher::for_header(keyring, &header)?;
    let sealed_len = layout.sealed_len();
    let mut out = Vec::new();
    out.try_reserve_exact(sealed_len as usize)
        .map_err(|_| Error::OutOfMemory {
            what: "a sealed object",
            bytes: sealed_len,
        })?;
    out.extend_from_slice(&header.encode());
    let stream_len = layout.stream_len();
    let length_at = stream_len - LENGTH_LEN;
    let length = (data.len() as u64).to_le_bytes();
    for index in 0..layout.segment_count() {
        let Some(plain) = layout.segment_plain_range(index) else {
            break;
        };
        let start = out.len();
        // The stream's bytes of this segment: data, then zeros, then the
        // length field in the last 8 bytes of the stream.
        let data_end = plain.end.min(data.len() as u64);
        if plain.start < data_end {
            out.extend_from_slice(&data[plain.start as usize..data_end as usize]);
        }
        let zeros_end = plain.end.min(length_at);
        let zeros_start = plain.start.max(data_end).min(zeros_end);
        out.resize(out.len() + (zeros_end - zeros_start) as usize, 0);
        let length_from = plain.start.max(length_at);
        if length_from < plain.end {
            out.extend_from_slice(&length[(length_from - length_at) as usize..]);
        }
        let last = index == layout.last_segment();
        let tag = cipher.seal(index, last, aad, &mut out[start..]);
        out.extend_from_slice(&tag);
    }
    Ok(out)
}

/// Seals a stream of known length as it is written, holding one segment
/// (64 KiB) at a time: for files larger than memory.
///
/// The header goes to `inner` at once, each segment as soon as it is
/// full; [`Sealer::finish`] writes the padding and the last segment.
/// Without `finish` the output is not a sealed object (and opens as none).
/// Writing more than the declared length is an error.
pub struct Sealer<W: Write> {
    inner: W,
    cipher: SegmentCipher,
    aad: Vec<u8>,
    layout: SealedLayout,
    data_len: u64,
    /// Data bytes taken so far.
    written: u64,
    /// The segment being filled (plaintext; wiped when dropped).
    buf: Zeroizing<Vec<u8>>,
    /// Its index.
    index: u64,
}

impl<W: Write> Sealer<W> {
    /// A sealer of `data_len` bytes to `inner`, with the keyring's newest
    /// epoch and `aad` bound to every segment (as in [`seal`]).
    pub fn new(keyring: &Keyring, aad: &[u8], data_len: u64, inner: W) -> Result<Sealer<W>> {
        Sealer::with_nonce(keyring, aad, data_len, inner, random_bytes()?)
    }

    pub(crate) fn with_nonce(
        keyring: &Keyring,
        aad: &[u8],
        data_len: u64,
        mut inner: W,
        nonce: [u8; 16],
    ) -> Result<Sealer<W>> {
        let layout = SealedLayout::for_data_len(data_len)?;
        let header = Header::new(keyring.sealing_key().0, nonce);
        let cipher = SegmentCipher::for_header(keyring, &header)?;
        inner.write_all(&header.encode())?;
        Ok(Sealer {
            inner,
            cipher,
            aad: aad.to_vec(),
            layout,
            data_len,
            written: 0,
            buf: Zeroizing::new(Vec::with_capacity((SEGMENT_LEN + TAG_LEN) as usize)),
            index: 0,
        })
    }

    /// The length the sealed object will have: the header already written
    /// and every segment to come.
    pub fn sealed_len(&self) -> u64 {
        self.layout.sealed_len()
    }

    /// The writer the sealed bytes go to, so a caller can take what was
    /// sealed so far (a part of an upload) before writing more.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Writes the padding, the data length and the last segment, and gives
    /// back the writer (not flushed). Fails if fewer bytes were written
    /// than declared.
    pub fn finish(mut self) -> Result<W> {
        if self.written != self.data_len {
            return Err(Error::LengthMismatch {
                declared: self.data_len,
                written: self.written,
            });
        }
        let mut zeros = self.layout.stream_len() - LENGTH_LEN - self.data_len;
        while zeros > 0 {
            let room = SEGMENT_LEN - self.buf.len() as u64;
            let take = room.min(zeros);
            let filled = self.buf.len() + take as usize;
            self.buf.resize(filled, 0);
            zeros -= take;
            self.seal_if_full()?;
        }
        let length = self.data_len.to_le_bytes();
        self.absorb(&length)?;
        // What is left is the last segment, never empty: the length field
        // is in it.
        let last = self.layout.last_segment();
        let tag = self.cipher.seal(last, true, &self.aad, &mut self.buf);
        self.buf.extend_from_slice(&tag);
        self.inner.write_all(&self.buf)?;
        self.buf.clear();
        Ok(self.inner)
    }

    /// Takes stream bytes into the segment being filled, sealing each full
    /// one on the way.
    fn absorb(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let room = SEGMENT_LEN as usize - self.buf.len();
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.buf.extend_from_slice(now);
            bytes = rest;
            self.seal_if_full()?;
        }
        Ok(())
    }

    /// Seals and writes the segment being filled once it is full, unless it
    /// is the last: that one waits for `finish`.
    fn seal_if_full(&mut self) -> io::Result<()> {
        if self.buf.len() as u64 == SEGMENT_LEN && self.index < self.layout.last_segment() {
            let tag = self
                .cipher
                .seal(self.index, false, &self.aad, &mut self.buf);
            self.buf.extend_from_slice(&tag);
            self.inner.write_all(&self.buf)?;
            self.buf.clear();
            self.index += 1;
        }
        Ok(())
    }
}

impl<W: Write> Write for Sealer<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let left = self.data_len - self.written;
        if bytes.len() as u64 > left {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                Error::LengthMismatch {
                    declared: self.data_len,
                    written: self.written + bytes.len() as u64,
                },
            ));
        }
        self.absorb(bytes)?;
        self.written += bytes.len() as u64;
        Ok(bytes.len())
    }

    /// Flushes what has been sealed; the segment being filled stays until
    /// it is full or `finish` is called.
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
