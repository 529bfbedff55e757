//! Reading one immutable sorted table: opening it (from its file or from
//! the bytes `tables.list` carries inline), checking its frame, and finding
//! records by descending its index. Every lookup and every merged walk of
//! the stack goes through here, so it reads as few blocks as it can: one per
//! index level.

use std::fs::File;
use std::path::{Path, PathBuf};

use dmv_os::FileExt;

use crate::block::*;
use crate::format::*;
use crate::RefError;

thread_local! {
    /// Blocks read by this thread; lets tests check that lookups are O(log).
    pub(crate) static BLOCK_READS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

pub(crate) enum Source {
    File(File),
    Mem(Vec<u8>),
}

impl Source {
    pub(crate) fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        match self {
            Source::File(f) => f.read_exact_at(buf, off),
            Source::Mem(m) => {
                let s = usize::try_from(off)
                    .ok()
                    .and_then(|o| m.get(o..o.checked_add(buf.len())?))
                    .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
                buf.copy_from_slice(s);
                Ok(())
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Footer {
    pub data_end: u64,
    pub index_root: u64,
    pub ref_records: u64,
    pub log_records: u64,
    pub min_index: u64,
    pub max_index: u64,
}

pub(crate) struct Table {
    pub path: PathBuf,
    /// File name only, as it appears in tables.list.
    pub name: String,
    /// Carried inside tables.list (its top table), not in a file of its own.
    pub inline: bool,
    pub src: Source,
    pub size: u64,
    pub footer: Footer,
}

impl Table {
    pub(crate) fn open(path: &Path) -> Result<Table, RefError> {
        let f = File::open(path).map_err(|e| RefError::io(path, e))?;
        let size = f.metadata().map_err(|e| RefError::io(path, e))?.len();
        Table::load(path, Source::File(f), size)
    }

    pub(crate) fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Table, RefError> {
        let size = bytes.len() as u64;
        Table::load(path, Source::Mem(bytes), size)
    }

    /// The table `list` (the path of tables.list) carries inline.
    pub(crate) fn inline(list: &Path, bytes: Vec<u8>) -> Result<Table, RefError> {
        Ok(Table {
            inline: true,
            ..Table::from_bytes(list, bytes)?
        })
    }

    fn load(path: &Path, src: Source, size: u64) -> Result<Table, RefError> {
        let bad = |r: &str| RefError::corrupt(path, r);
        if size < HEADER_LEN + FOOTER_LEN {
            return Err(bad("file too short"));
        }
        let mut magic = [0u8; 8];
        src.read_at(0, &mut magic)
            .map_err(|e| RefError::io(path, e))?;
        if &magic != MAGIC {
            return Err(bad("bad magic (not a DMV ref table)"));
        }
        let mut ft = [0u8; FOOTER_LEN as usize];
        src.read_at(size - FOOTER_LEN, &mut ft)
            .map_err(|e| RefError::io(path, e))?;
        if &ft[..8] != FOOTER_MAGIC {
            return Err(bad("bad footer magic (truncated table?)"));
        }
        if block_check(&ft[..FOOTER_FIELDS]) != ft[FOOTER_FIELDS..FOOTER_FIELDS + 8] {
            return Err(bad("footer checksum mismatch"));
        }
        let u = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&ft[8 + 8 * i..16 + 8 * i]);
            u64::from_be_bytes(b)
        };
        let footer = Footer {
            data_end: u(0),
            index_root: u(1),
            ref_records: u(2),
            log_records: u(3),
            min_index: u(4),
            max_index: u(5),
        };
        let index_end = size - FOOTER_LEN;
        if footer.data_end < HEADER_LEN || footer.data_end > index_end {
            return Err(bad("footer: data section out of range"));
        }
        let has_data = footer.data_end > HEADER_LEN;
        if has_data != (footer.index_root != 0)
            || (has_data && (footer.index_root < footer.data_end || footer.index_root >= index_end))
        {
            return Err(bad("footer: index root out of range"));
        }
        if footer.min_index > footer.max_index {
            return Err(bad("footer: update index range reversed"));
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Table {
            path: path.to_path_buf(),
            name,
            inline: false,
            src,
            size,
            footer,
        })
    }

    pub(crate) fn bad(&self, reason: impl Into<String>) -> RefError {
        RefError::corrupt(&self.path, reason)
    }

    /// Reads and checks the block at `off`; data blocks must lie in the data
    /// section and index blocks after it, which also stops corrupt index
    /// pointers from wandering into the footer.
    pub(crate) fn read_block(&self, off: u64) -> Result<Block, RefError> {
        BLOCK_READS.with(|c| c.set(c.get() + 1));
        let index_end = self.size - FOOTER_LEN;
        if off < HEADER_LEN || off >= index_end {
            return Err(self.bad(format!("block offset {off} out of range")));
        }
        let mut hdr = [0u8; BLOCK_HEADER];
        self.src
            .read_at(off, &mut hdr)
            .map_err(|e| RefError::io(&self.path, e))?;
        let kind = hdr[0];
        let len = u32::from_be_bytes([hdr[1], hdr[2], hdr[3], hdr[4]]) as u64;
        let limit = match kind {
            KIND_DATA if off < self.footer.data_end => self.footer.data_end,
            KIND_INDEX if off >= self.footer.data_end => index_end,
            _ => return Err(self.bad(format!("bad block type at offset {off}"))),
        };
        let min = (BLOCK_HEADER + 4 + 4 + BLOCK_CHECK) as u64;
        if len < min || off + len > limit {
            return Err(self.bad(format!("bad block length at offset {off}")));
        }
        let mut data = vec![0u8; len as usize];
        self.src
            .read_at(off, &mut data)
            .map_err(|e| RefError::io(&self.path, e))?;
        let body = data.len() - BLOCK_CHECK;
        if block_check(&data[..body]) != data[body..] {
            return Err(self.bad(format!("checksum mismatch in block at offset {off}")));
        }
        let n = u32::from_be_bytes([
            data[body - 4],
            data[body - 3],
            data[body - 2],
            data[body - 1],
        ]) as usize;
        let restarts_at = (body - 4)
            .checked_sub(n.saturating_mul(4))
            .filter(|&r| r > BLOCK_HEADER && n > 0)
            .ok_or_else(|| self.bad(format!("bad restart count in block at offset {off}")))?;
        let mut restarts = Vec::with_capacity(n);
        for i in 0..n {
            let p = restarts_at + 4 * i;
            let r = u32::from_be_bytes([data[p], data[p + 1], data[p + 2], data[p + 3]]);
            let ok = if i == 0 {
                r as usize == BLOCK_HEADER
            } else {
                r > restarts[i - 1] && (r as usize) < restarts_at
            };
            if !ok {
                return Err(self.bad(format!("bad restart point in block at offset {off}")));
            }
            restarts.push(r);
        }
        Ok(Block {
            off,
            kind,
            data,
            records_end: restarts_at,
            restarts,
        })
    }

    /// Iterator positioned at the first record with key >= `target`. Descends
    /// the index: O(levels) blocks, each searched by restart points.
    pub(crate) fn seek(&self, target: &[u8]) -> Result<TableIter<'_>, RefError> {
        let mut it = TableIter {
            table: self,
            block: None,
            pos: 0,
            key: Vec::new(),
            vtype: 0,
            val: (0, 0),
        };
        if self.footer.index_root == 0 {
            return Ok(it);
        }
        let mut off = self.footer.index_root;
        loop {
            let block = self.read_block(off)?;
            let mut key = Vec::new();
            let found = block.seek(target, &mut key).map_err(|r| self.bad(r))?;
            if block.kind == KIND_INDEX {
                let Some(rec) = found else {
                    return Ok(it);
                };
                if rec.vtype != T_INDEX {
                    return Err(self.bad("index block holds a non-index record"));
                }
                let mut p = rec.val.0;
                let child =
                    get_varint(&block.data[..rec.val.1], &mut p).map_err(|r| self.bad(r))?;
                // Children are always written before their parent, so a
                // strictly decreasing offset guarantees the descent ends.
                if child >= off {
                    return Err(self.bad("index points forward"));
                }
                off = child;
                continue;
            }
            match found {
                Some(rec) => {
                    it.key = key;
                    it.vtype = rec.vtype;
                    it.val = rec.val;
                    it.pos = rec.next;
                    it.block = Some(block);
                }
                None => {
                    // Index said the key is here but it is not: step to the
                    // next block rather than trusting the index further.
                    it.pos = block.records_end;
                    it.block = Some(block);
                    it.advance()?;
                }
            }
            return Ok(it);
        }
    }

    /// Exact lookup: (value type, value) of `key` if this table has it.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<(u8, Vec<u8>)>, RefError> {
        let it = self.seek(key)?;
        Ok(match it.current() {
            Some((k, t, v)) if k == key => Some((t, v.to_vec())),
            _ => None,
        })
    }
}

pub(crate) struct TableIter<'t> {
    table: &'t Table,
    /// None once exhausted.
    block: Option<Block>,
    pos: usize,
    key: Vec<u8>,
    vtype: u8,
    val: (usize, usize),
}

impl<'t> TableIter<'t> {
    pub(crate) fn current(&self) -> Option<(&[u8], u8, &[u8])> {
        let b = self.block.as_ref()?;
        Some((&self.key, self.vtype, &b.data[self.val.0..self.val.1]))
    }

    /// Moves to the next record, crossing into the following data block
    /// when this one is done.
    pub(crate) fn advance(&mut self) -> Result<(), RefError> {
        loop {
            let Some(b) = &self.block else { return Ok(()) };
            if self.pos < b.records_end {
                let rec = decode_rec(&b.data, self.pos, b.records_end, &mut self.key)
                    .map_err(|r| self.table.bad(r))?;
                self.vtype = rec.vtype;
                self.val = rec.val;
                self.pos = rec.next;
                return Ok(());
            }
            let next = b.off + b.data.len() as u64;
            if next >= self.table.footer.data_end {
                self.block = None;
                return Ok(());
            }
            let nb = self.table.read_block(next)?;
            if nb.kind != KIND_DATA {
                return Err(self.table.bad("index block inside the data section"));
            }
            self.pos = BLOCK_HEADER;
            self.key.clear();
            self.block = Some(nb);
        }
    }
}
