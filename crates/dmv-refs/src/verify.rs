//! The full check of a table, for fsck: the file checksum, key order, every
//! record's contents, and the index against the data blocks. Apart from the
//! reader because a lookup checks only the blocks it reads and needs none of
//! this; only `RefStore::verify` (and the tests) call it.

use crate::block::*;
use crate::format::*;
use crate::table::Table;
use crate::RefError;

impl Table {
    /// Full check: file checksum, every block, key order, record contents,
    /// and that the index describes exactly the data blocks.
    pub(crate) fn verify(&self) -> Result<(), RefError> {
        let mut h = blake3::Hasher::new();
        let body = self.size - 32;
        let mut off = 0u64;
        let mut buf = vec![0u8; 1 << 20];
        while off < body {
            let n = (body - off).min(buf.len() as u64) as usize;
            self.src
                .read_at(off, &mut buf[..n])
                .map_err(|e| RefError::io(&self.path, e))?;
            h.update(&buf[..n]);
            off += n as u64;
        }
        let mut sum = [0u8; 32];
        self.src
            .read_at(body, &mut sum)
            .map_err(|e| RefError::io(&self.path, e))?;
        if h.finalize().as_bytes() != &sum {
            return Err(self.bad("checksum mismatch"));
        }

        let mut leaves: Vec<(Vec<u8>, u64)> = Vec::new();
        let mut prev: Vec<u8> = Vec::new();
        let mut have_prev = false;
        let (mut refs, mut logs) = (0u64, 0u64);
        let mut off = HEADER_LEN;
        while off < self.footer.data_end {
            let b = self.read_block(off)?;
            if b.kind != KIND_DATA {
                return Err(self.bad("index block inside the data section"));
            }
            let mut key = Vec::new();
            let mut pos = BLOCK_HEADER;
            let mut restart_i = 0;
            while pos < b.records_end {
                let at_restart = b.restarts.get(restart_i) == Some(&(pos as u32));
                if at_restart {
                    restart_i += 1;
                    key.clear();
                }
                let rec = if at_restart {
                    decode_first_at_restart(&b.data, pos, b.records_end, &mut key)
                } else {
                    decode_rec(&b.data, pos, b.records_end, &mut key)
                }
                .map_err(|r| self.bad(format!("{r} (block at offset {off})")))?;
                if have_prev && key <= prev {
                    return Err(self.bad("keys out of order"));
                }
                let val = &b.data[rec.val.0..rec.val.1];
                check_record(&key, rec.vtype, val).map_err(|r| self.bad(r))?;
                if key[0] == LOG_PREFIX {
                    logs += 1;
                } else {
                    refs += 1;
                }
                prev.clear();
                prev.extend_from_slice(&key);
                have_prev = true;
                pos = rec.next;
            }
            if restart_i != b.restarts.len() {
                return Err(self.bad("restart point not at a record boundary"));
            }
            leaves.push((key, off));
            off += b.data.len() as u64;
        }
        if refs != self.footer.ref_records || logs != self.footer.log_records {
            return Err(self.bad("record counts disagree with the footer"));
        }
        let mut walked = Vec::new();
        if self.footer.index_root != 0 {
            self.walk_index(self.footer.index_root, &mut walked, 0)?;
        }
        if walked != leaves {
            return Err(self.bad("index does not match the data blocks"));
        }
        Ok(())
    }

    fn walk_index(
        &self,
        off: u64,
        out: &mut Vec<(Vec<u8>, u64)>,
        depth: u32,
    ) -> Result<(), RefError> {
        if depth > 64 {
            return Err(self.bad("index too deep"));
        }
        let b = self.read_block(off)?;
        if b.kind != KIND_INDEX {
            return Err(self.bad("index root is not an index block"));
        }
        let mut key = Vec::new();
        let mut pos = BLOCK_HEADER;
        while pos < b.records_end {
            let rec = decode_rec(&b.data, pos, b.records_end, &mut key).map_err(|r| self.bad(r))?;
            if rec.vtype != T_INDEX {
                return Err(self.bad("index block holds a non-index record"));
            }
            let mut p = rec.val.0;
            let child = get_varint(&b.data[..rec.val.1], &mut p).map_err(|r| self.bad(r))?;
            if child >= off {
                return Err(self.bad("index points forward"));
            }
            if child < self.footer.data_end {
                out.push((key.clone(), child));
            } else {
                let before = out.len();
                self.walk_index(child, out, depth + 1)?;
                if out.len() == before || out.last().map(|l| &l.0) != Some(&key) {
                    return Err(self.bad("index key does not match its child"));
                }
            }
            pos = rec.next;
        }
        Ok(())
    }
}

pub(crate) fn check_record(key: &[u8], vtype: u8, val: &[u8]) -> Result<(), &'static str> {
    match key.first() {
        Some(&REF_PREFIX) => {
            crate::validate_name(parse_ref_key(key)?).map_err(|_| "invalid ref name in table")?;
            decode_ref(vtype, val).map(|_| ())
        }
        Some(&LOG_PREFIX) => {
            if vtype != T_LOG {
                return Err("unexpected value type for a log record");
            }
            decode_log(key, val).map(|_| ())
        }
        _ => Err("unknown record kind"),
    }
}
