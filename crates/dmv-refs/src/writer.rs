//! Writing a table: records stream in, in key order, and leave as blocks,
//! a multi-level index and a footer, to a file or to memory. In a file of
//! its own because only a transaction or a compaction, under the lock, ever
//! writes a table; every other caller only reads.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::block::*;
use crate::failpoint;
use crate::format::*;
use crate::RefError;

/// Where a table's bytes go: its own file, or memory (a small table that
/// travels inside `tables.list`).
enum Sink {
    File(BufWriter<File>),
    Mem(Vec<u8>),
}

impl Sink {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::File(f) => f.write_all(b),
            Sink::Mem(m) => {
                m.extend_from_slice(b);
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Mem(_) => Ok(()),
        }
    }
}

struct HashWriter {
    out: Sink,
    hasher: blake3::Hasher,
    offset: u64,
}

impl HashWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.hasher.update(b);
        self.out.write_all(b)?;
        self.offset += b.len() as u64;
        Ok(())
    }
}

/// Streams records (which must arrive in strictly increasing key order) into
/// a new table file (memory: one block plus one index entry per block), or
/// into memory.
pub(crate) struct TableWriter {
    path: PathBuf,
    w: HashWriter,
    block: BlockBuilder,
    index: Vec<(Vec<u8>, u64)>,
    last_key: Vec<u8>,
    refs: u64,
    logs: u64,
    fail_during: &'static str,
}

impl TableWriter {
    /// `fail_during` names the fail point hit after the data section is on
    /// disk but before the index and footer, i.e. a torn table file.
    pub(crate) fn create(path: &Path, fail_during: &'static str) -> Result<Self, RefError> {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| RefError::io(path, e))?;
        Self::start(
            path,
            Sink::File(BufWriter::with_capacity(1 << 20, f)),
            fail_during,
        )
    }

    /// A table built in memory; `path` only names it in errors.
    pub(crate) fn in_memory(path: &Path) -> Result<Self, RefError> {
        Self::start(path, Sink::Mem(Vec::new()), "")
    }

    fn start(path: &Path, out: Sink, fail_during: &'static str) -> Result<Self, RefError> {
        let mut w = HashWriter {
            out,
            hasher: blake3::Hasher::new(),
            offset: 0,
        };
        w.write(MAGIC).map_err(|e| RefError::io(path, e))?;
        Ok(TableWriter {
            path: path.to_path_buf(),
            w,
            block: BlockBuilder::new(KIND_DATA),
            index: Vec::new(),
            last_key: Vec::new(),
            refs: 0,
            logs: 0,
            fail_during,
        })
    }

    pub(crate) fn add(&mut self, key: &[u8], vtype: u8, value: &[u8]) -> Result<(), RefError> {
        let started = !self.index.is_empty() || !self.block.is_empty();
        if key.is_empty() || (started && key <= self.last_key.as_slice()) {
            return Err(RefError::io(
                &self.path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "internal error: table keys empty or out of order",
                ),
            ));
        }
        if key.first() == Some(&LOG_PREFIX) {
            self.logs += 1;
        } else {
            self.refs += 1;
        }
        if self.block.would_overflow(key.len(), value.len()) {
            self.flush_data_block()?;
        }
        self.block.add(key, vtype, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        Ok(())
    }

    fn flush_data_block(&mut self) -> Result<(), RefError> {
        if self.block.is_empty() {
            return Ok(());
        }
        self.block.seal()?;
        let off = self.w.offset;
        self.w
            .write(&self.block.buf)
            .map_err(|e| RefError::io(&self.path, e))?;
        self.index
            .push((std::mem::take(&mut self.block.last_key), off));
        self.block.reset();
        Ok(())
    }

    /// Writes index and footer, fsyncs, and returns the file size.
    pub(crate) fn finish(self, min_index: u64, max_index: u64) -> Result<u64, RefError> {
        let path = self.path.clone();
        let ioe = |e| RefError::io(&path, e);
        let (out, size) = self.finish_bytes(min_index, max_index)?;
        match out {
            Sink::File(f) => f
                .into_inner()
                .map_err(|e| ioe(e.into_error()))?
                .sync_all()
                .map_err(ioe)?,
            Sink::Mem(_) => {
                return Err(ioe(std::io::Error::other(
                    "internal error: a table in memory finished as a file",
                )))
            }
        }
        Ok(size)
    }

    /// The table's bytes, for one built [`TableWriter::in_memory`].
    pub(crate) fn finish_in_memory(
        self,
        min_index: u64,
        max_index: u64,
    ) -> Result<Vec<u8>, RefError> {
        let path = self.path.clone();
        match self.finish_bytes(min_index, max_index)?.0 {
            Sink::Mem(bytes) => Ok(bytes),
            Sink::File(_) => Err(RefError::io(
                &path,
                std::io::Error::other("internal error: a table file finished in memory"),
            )),
        }
    }

    /// Writes the index, the footer and the checksum; returns where they went and the size.
    fn finish_bytes(mut self, min_index: u64, max_index: u64) -> Result<(Sink, u64), RefError> {
        let path = self.path.clone();
        let ioe = |e| RefError::io(&path, e);
        self.flush_data_block()?;
        let data_end = self.w.offset;
        if !self.fail_during.is_empty() {
            self.w.out.flush().map_err(ioe)?;
            failpoint::hit(self.fail_during);
        }

        let mut root = 0u64;
        let mut level = std::mem::take(&mut self.index);
        let mut ib = BlockBuilder::new(KIND_INDEX);
        let mut val = Vec::with_capacity(10);
        while !level.is_empty() {
            let mut next: Vec<(Vec<u8>, u64)> = Vec::new();
            for (key, off) in &level {
                val.clear();
                put_varint(&mut val, *off);
                if ib.would_overflow(key.len(), val.len()) {
                    ib.seal()?;
                    next.push((std::mem::take(&mut ib.last_key), self.w.offset));
                    self.w.write(&ib.buf).map_err(ioe)?;
                    ib.reset();
                }
                ib.add(key, T_INDEX, &val);
            }
            ib.seal()?;
            next.push((std::mem::take(&mut ib.last_key), self.w.offset));
            self.w.write(&ib.buf).map_err(ioe)?;
            ib.reset();
            if next.len() == 1 {
                root = next[0].1;
                break;
            }
            level = next;
        }

        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend_from_slice(FOOTER_MAGIC);
        for v in [data_end, root, self.refs, self.logs, min_index, max_index] {
            footer.extend_from_slice(&v.to_be_bytes());
        }
        debug_assert_eq!(footer.len(), FOOTER_FIELDS);
        let fc = block_check(&footer);
        footer.extend_from_slice(&fc);
        self.w.write(&footer).map_err(ioe)?;
        let sum = self.w.hasher.finalize();
        self.w.out.write_all(sum.as_bytes()).map_err(ioe)?;
        self.w.offset += 32;
        Ok((self.w.out, self.w.offset))
    }
}
