//! The byte layout the table writer and the table reader must agree on,
//! kept in one file below both so that neither can drift: the file's frame
//! (magics, header and footer sizes) and the block format (prefix-compressed
//! records, restart points, a checksum per block), encoded and decoded here.
//! The layout is specified in docs/refs-format.md; keep them in sync.

use crate::format::*;
use crate::RefError;

pub(crate) const MAGIC: &[u8; 8] = b"DMVRTAB1";
pub(crate) const FOOTER_MAGIC: &[u8; 8] = b"DMVRTEND";
pub(crate) const HEADER_LEN: u64 = 8;
pub(crate) const FOOTER_LEN: u64 = 96;
pub(crate) const FOOTER_FIELDS: usize = 56;

pub(crate) const KIND_DATA: u8 = b'd';
pub(crate) const KIND_INDEX: u8 = b'i';
pub(crate) const BLOCK_HEADER: usize = 5;
pub(crate) const BLOCK_CHECK: usize = 8;

/// Target block size: one page, so a lookup reads one page per level.
const BLOCK_TARGET: usize = 4096;
/// Full keys every 16 records bound the linear part of an in-block search.
const RESTART_INTERVAL: usize = 16;

pub(crate) fn block_check(bytes: &[u8]) -> [u8; 8] {
    let h = blake3::hash(bytes);
    let mut c = [0u8; 8];
    c.copy_from_slice(&h.as_bytes()[..8]);
    c
}

pub(crate) struct BlockBuilder {
    kind: u8,
    pub buf: Vec<u8>,
    restarts: Vec<u32>,
    pub last_key: Vec<u8>,
    count: usize,
}

impl BlockBuilder {
    pub(crate) fn new(kind: u8) -> Self {
        let mut b = BlockBuilder {
            kind,
            buf: Vec::with_capacity(BLOCK_TARGET + 512),
            restarts: Vec::new(),
            last_key: Vec::new(),
            count: 0,
        };
        b.reset();
        b
    }

    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.buf.push(self.kind);
        self.buf.extend_from_slice(&[0; 4]);
        self.restarts.clear();
        self.last_key.clear();
        self.count = 0;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether adding a record of this size would push the block past the
    /// target. An oversized record still gets a block of its own.
    pub(crate) fn would_overflow(&self, key_len: usize, val_len: usize) -> bool {
        let rec = 3 * 10 + 1 + key_len + val_len;
        let trailer = 4 * (self.restarts.len() + 1) + 4 + BLOCK_CHECK;
        !self.is_empty() && self.buf.len() + rec + trailer > BLOCK_TARGET
    }

    pub(crate) fn add(&mut self, key: &[u8], vtype: u8, value: &[u8]) {
        let shared = if self.count.is_multiple_of(RESTART_INTERVAL) {
            self.restarts.push(self.buf.len() as u32);
            0
        } else {
            key.iter()
                .zip(self.last_key.iter())
                .take_while(|(a, b)| a == b)
                .count()
        };
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (key.len() - shared) as u64);
        self.buf.push(vtype);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.count += 1;
    }

    /// Completes the block in `buf` (restarts, length, checksum).
    pub(crate) fn seal(&mut self) -> Result<(), RefError> {
        for r in &self.restarts {
            self.buf.extend_from_slice(&r.to_be_bytes());
        }
        self.buf
            .extend_from_slice(&(self.restarts.len() as u32).to_be_bytes());
        let total = self.buf.len() + BLOCK_CHECK;
        let total32 = u32::try_from(total).map_err(|_| {
            RefError::io(
                "<table>",
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "ref record too large"),
            )
        })?;
        self.buf[1..5].copy_from_slice(&total32.to_be_bytes());
        let c = block_check(&self.buf);
        self.buf.extend_from_slice(&c);
        Ok(())
    }
}

pub(crate) struct Block {
    pub off: u64,
    pub kind: u8,
    pub data: Vec<u8>,
    pub records_end: usize,
    pub restarts: Vec<u32>,
}

/// One decoded record inside a block.
pub(crate) struct Rec {
    pub next: usize,
    pub vtype: u8,
    pub val: (usize, usize),
}

/// Decodes the record at `pos`, rebuilding its key in `key` from the
/// previous key's prefix.
pub(crate) fn decode_rec(
    data: &[u8],
    pos: usize,
    end: usize,
    key: &mut Vec<u8>,
) -> Result<Rec, &'static str> {
    let data = &data[..end];
    let mut p = pos;
    let shared = get_varint(data, &mut p)?;
    let suffix = get_varint(data, &mut p)?;
    let vtype = *data.get(p).ok_or("truncated record")?;
    p += 1;
    let vlen = get_varint(data, &mut p)?;
    let shared = usize::try_from(shared).map_err(|_| "bad prefix length")?;
    if shared > key.len() {
        return Err("prefix length exceeds previous key");
    }
    let suffix = usize::try_from(suffix).map_err(|_| "bad suffix length")?;
    let vlen = usize::try_from(vlen).map_err(|_| "bad value length")?;
    let kend = p.checked_add(suffix).ok_or("bad suffix length")?;
    let vend = kend.checked_add(vlen).ok_or("bad value length")?;
    if vend > data.len() {
        return Err("record runs past the end of its block");
    }
    key.truncate(shared);
    key.extend_from_slice(&data[p..kend]);
    if key.is_empty() {
        return Err("empty key");
    }
    Ok(Rec {
        next: vend,
        vtype,
        val: (kend, vend),
    })
}

impl Block {
    /// Position of the first record with key >= `target`, with its key in
    /// `key`; None if every key in the block is smaller.
    pub(crate) fn seek(
        &self,
        target: &[u8],
        key: &mut Vec<u8>,
    ) -> Result<Option<Rec>, &'static str> {
        // Last restart whose key is <= target; records before it are smaller.
        let (mut lo, mut hi) = (0usize, self.restarts.len());
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            key.clear();
            let pos = self.restarts[mid] as usize;
            decode_first_at_restart(&self.data, pos, self.records_end, key)?;
            if key.as_slice() <= target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        key.clear();
        let mut pos = self.restarts[lo] as usize;
        let mut first = true;
        while pos < self.records_end {
            let rec = if first {
                first = false;
                decode_first_at_restart(&self.data, pos, self.records_end, key)?
            } else {
                decode_rec(&self.data, pos, self.records_end, key)?
            };
            if key.as_slice() >= target {
                return Ok(Some(rec));
            }
            pos = rec.next;
        }
        Ok(None)
    }
}

pub(crate) fn decode_first_at_restart(
    data: &[u8],
    pos: usize,
    end: usize,
    key: &mut Vec<u8>,
) -> Result<Rec, &'static str> {
    let mut p = pos;
    if get_varint(&data[..end], &mut p)? != 0 {
        return Err("restart point has a shared prefix");
    }
    decode_rec(data, pos, end, key)
}
