//! One object's file key and the AEAD of its segments, shared by sealing
//! and opening so the two cannot drift apart.
//!
//! The file key is BLAKE3 `derive_key` of the epoch's data subkey and the
//! header's random nonce: a fresh key per object, so segment nonces can be
//! plain counters. Segment `i`'s nonce is `i` as 11 big-endian bytes and a
//! last-segment flag (as age's STREAM), so a moved, dropped or repeated
//! segment fails, and so does an object cut at a segment boundary.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305};
use zeroize::{Zeroize, Zeroizing};

use crate::error::{Error, Result};
use crate::keyring::Keyring;
use crate::layout::{Header, TAG_LEN};

const OBJECT_CONTEXT: &str = "dmv 2026-12 encrypted remote: object";

/// The AEAD of one object, under its file key: IETF ChaCha20-Poly1305
/// (RFC 8439) from `ring`, whose assembly runs at the memory's speed. Its
/// expanded key is not wiped when dropped (ring does not); the file key it
/// was made from is, and it opens one object only.
pub(crate) struct SegmentCipher {
    aead: LessSafeKey,
}

impl SegmentCipher {
    /// The cipher of the object with `header`, if `keyring` holds its epoch.
    pub(crate) fn for_header(keyring: &Keyring, header: &Header) -> Result<SegmentCipher> {
        let data_key = keyring.data_key(header.epoch())?;
        Ok(SegmentCipher::new(data_key, header.nonce()))
    }

    fn new(data_key: &[u8; 32], nonce: &[u8; 16]) -> SegmentCipher {
        let mut h = blake3::Hasher::new_derive_key(OBJECT_CONTEXT);
        h.update(data_key);
        h.update(nonce);
        let file_key = Zeroizing::new(*h.finalize().as_bytes());
        h.zeroize();
        // A 32-byte key is what CHACHA20_POLY1305 takes: this cannot fail.
        let key = UnboundKey::new(&CHACHA20_POLY1305, file_key.as_ref())
            .unwrap_or_else(|_| unreachable!("a 32-byte key"));
        SegmentCipher {
            aead: LessSafeKey::new(key),
        }
    }

    /// Encrypts segment `index` in place and returns its tag.
    pub(crate) fn seal(&self, index: u64, last: bool, aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
        // Encryption fails only past ChaCha20's 256 GiB per nonce; a
        // segment is 64 KiB.
        let nonce = Nonce::assume_unique_for_key(nonce(index, last));
        let mut out = [0u8; 16];
        if let Ok(tag) = self
            .aead
            .seal_in_place_separate_tag(nonce, Aad::from(aad), buf)
        {
            out.copy_from_slice(tag.as_ref());
        }
        out
    }

    /// Decrypts segment `index` in place (ciphertext then tag): on success
    /// `buf[..len - 16]` is its plaintext. Nothing of a segment that fails
    /// is given out: the caller drops the buffer.
    pub(crate) fn open(&self, index: u64, last: bool, aad: &[u8], buf: &mut [u8]) -> Result<()> {
        if buf.len() < TAG_LEN as usize {
            return Err(Error::Segment { index });
        }
        let nonce = Nonce::assume_unique_for_key(nonce(index, last));
        self.aead
            .open_in_place(nonce, Aad::from(aad), buf)
            .map(|_| ())
            .map_err(|_| Error::Segment { index })
    }
}

/// Segment `index`'s nonce: 11 bytes big-endian index, then 1 on the last.
fn nonce(index: u64, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[3..11].copy_from_slice(&index.to_be_bytes());
    n[11] = u8::from(last);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_the_index_and_the_last_flag() {
        assert_eq!(nonce(0, false), [0; 12]);
        assert_eq!(nonce(1, true), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
        assert_eq!(
            nonce(0x0102_0304_0506_0708, false),
            [0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0]
        );
    }

    #[test]
    fn a_segment_opens_only_where_and_how_it_was_sealed() {
        let c = SegmentCipher::new(&[1; 32], &[2; 16]);
        let mut buf = b"segment".to_vec();
        let tag = c.seal(3, false, b"aad", &mut buf);
        buf.extend_from_slice(&tag);
        let sealed = buf.clone();
        assert!(c.open(3, false, b"aad", &mut buf).is_ok());
        assert_eq!(&buf[..7], b"segment");
        for (index, last, aad) in [
            (4, false, &b"aad"[..]),
            (3, true, b"aad"),
            (3, false, b"aae"),
        ] {
            let mut b = sealed.clone();
            assert!(
                matches!(c.open(index, last, aad, &mut b), Err(Error::Segment { index: i }) if i == index)
            );
        }
        let other = SegmentCipher::new(&[1; 32], &[3; 16]);
        assert!(other.open(3, false, b"aad", &mut sealed.clone()).is_err());
        assert!(c.open(0, false, b"", &mut [0u8; 15]).is_err());
    }
}
