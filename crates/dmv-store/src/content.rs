//! Reading a file's content back: a chunk, or a tree of file nodes over
//! chunks, written out, read as a stream, sought into, or checked present.
//! Apart from the store because it knows the shape of file content (nodes
//! and chunks) while the store only finds and reads single objects; this
//! file uses nothing of the store but its public reads.

use std::io::Write;

use crate::index::Located;
use crate::object::{decode, FileNode};
use crate::store::Store;
use crate::{ObjectId, ObjectKind, StoreError, StoreResult};

impl Store {
    /// Streams a file's content (a chunk or a chunk-list tree) to `out`.
    /// The node tree is walked without recursion, each node exactly one
    /// level above its children ([`crate::object::ChunkWalk`]), so a
    /// damaged or hostile chain of nodes is an error, not a stack overflow.
    pub fn write_content(&self, id: &ObjectId, out: &mut dyn Write) -> StoreResult<u64> {
        let write =
            |out: &mut dyn Write, bytes: &[u8]| out.write_all(bytes).map_err(StoreError::Output);
        // A chunk that is not here fails the whole file before any byte of it is written.
        self.check_content_present(id)?;
        let (kind, bytes) = self.read(id)?;
        match kind {
            ObjectKind::Chunk => {
                write(out, &bytes)?;
                Ok(bytes.len() as u64)
            }
            ObjectKind::FileNode => {
                let mut walk =
                    crate::object::ChunkWalk::new(*id, decode::<FileNode>(id, kind, &bytes)?);
                let mut read_node =
                    |node: &ObjectId| self.read_decoded::<FileNode>(node, ObjectKind::FileNode);
                let mut total = 0;
                while let Some(e) = walk.next_chunk(&mut read_node)? {
                    let chunk = self.read_kind(&e.id, ObjectKind::Chunk)?;
                    write(out, &chunk)?;
                    total += chunk.len() as u64;
                }
                Ok(total)
            }
            other => Err(StoreError::WrongKind {
                id: *id,
                actual: other.name(),
                expected: "file content",
            }),
        }
    }

    /// The chunks of a file's content, with their sizes, in order: its
    /// nodes are read, its chunks only located (a rename of a retouched
    /// photo is seen by the chunks the two versions share).
    pub fn chunk_list(&self, id: &ObjectId) -> StoreResult<Vec<(ObjectId, u64)>> {
        let loc = self.find(id)?.ok_or(StoreError::NotFound { id: *id })?;
        if loc.entry.kind != ObjectKind::FileNode {
            return Ok(vec![(*id, loc.entry.raw_len as u64)]);
        }
        let mut walk = crate::object::ChunkWalk::new(
            *id,
            self.read_decoded::<FileNode>(id, ObjectKind::FileNode)?,
        );
        let mut read_node =
            |node: &ObjectId| self.read_decoded::<FileNode>(node, ObjectKind::FileNode);
        let mut out = Vec::new();
        while let Some(e) = walk.next_chunk(&mut read_node)? {
            out.push((e.id, e.size));
        }
        Ok(out)
    }

    /// A file's content as a reader, a chunk at a time (what
    /// [`Store::write_content`] writes), for writers that pull: a tar entry
    /// of a file larger than memory. Checked present first, as there.
    pub fn content_reader(&self, id: &ObjectId) -> StoreResult<ContentReader<'_>> {
        self.check_content_present(id)?;
        let (kind, bytes) = self.read(id)?;
        match kind {
            ObjectKind::Chunk => Ok(ContentReader {
                store: self,
                walk: None,
                chunk: bytes,
                at: 0,
            }),
            ObjectKind::FileNode => Ok(ContentReader {
                store: self,
                walk: Some(crate::object::ChunkWalk::new(
                    *id,
                    decode::<FileNode>(id, kind, &bytes)?,
                )),
                chunk: Vec::new(),
                at: 0,
            }),
            other => Err(StoreError::WrongKind {
                id: *id,
                actual: other.name(),
                expected: "file content",
            }),
        }
    }

    /// [`Store::content_reader`] starting `offset` bytes in: what comes
    /// before is skipped a node or chunk at a time without being read (a
    /// player seeking into the middle of a film reads from there).
    /// Unlike there, the content is not checked present first (that reads
    /// every node of the file, for each of a player's many requests): a
    /// chunk found missing ends the reader with an error where it is.
    pub fn content_reader_at(&self, id: &ObjectId, offset: u64) -> StoreResult<ContentReader<'_>> {
        let (kind, bytes) = self.read(id)?;
        let mut reader = match kind {
            ObjectKind::Chunk => ContentReader {
                store: self,
                walk: None,
                chunk: bytes,
                at: 0,
            },
            ObjectKind::FileNode => ContentReader {
                store: self,
                walk: Some(crate::object::ChunkWalk::new(
                    *id,
                    decode::<FileNode>(id, kind, &bytes)?,
                )),
                chunk: Vec::new(),
                at: 0,
            },
            other => {
                return Err(StoreError::WrongKind {
                    id: *id,
                    actual: other.name(),
                    expected: "file content",
                })
            }
        };
        let Some(walk) = reader.walk.as_mut() else {
            reader.at = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(reader.chunk.len());
            return Ok(reader);
        };
        let mut read_node =
            |node: &ObjectId| self.read_decoded::<FileNode>(node, ObjectKind::FileNode);
        let into_chunk = walk.skip(offset, &mut read_node)?;
        if let Some(e) = walk.next_chunk(&mut read_node)? {
            reader.chunk = self.read_kind(&e.id, ObjectKind::Chunk)?;
            reader.at = usize::try_from(into_chunk)
                .unwrap_or(usize::MAX)
                .min(reader.chunk.len());
        }
        Ok(reader)
    }

    /// The length of a file's content, from its first object alone.
    pub fn content_len(&self, id: &ObjectId) -> StoreResult<u64> {
        let loc = self.find(id)?.ok_or(StoreError::NotFound { id: *id })?;
        match loc.entry.kind {
            ObjectKind::Chunk => Ok(loc.entry.raw_len as u64),
            ObjectKind::FileNode => Ok(self
                .read_decoded::<FileNode>(id, ObjectKind::FileNode)?
                .entries
                .iter()
                .map(|e| e.size)
                .sum()),
            other => Err(StoreError::WrongKind {
                id: *id,
                actual: other.name(),
                expected: "file content",
            }),
        }
    }

    /// A file's content as a reader that can seek (for parsers that jump
    /// to an index at the end of a file, as media containers keep one):
    /// each seek starts a [`Store::content_reader_at`] there.
    pub fn seekable_content(&self, id: &ObjectId) -> StoreResult<SeekableContent<'_>> {
        Ok(SeekableContent {
            store: self,
            id: *id,
            len: self.content_len(id)?,
            pos: 0,
            reader: None,
        })
    }

    /// Checks that a file's content is all here: its nodes are read (and
    /// their levels checked), its chunks located but not read. A checkout
    /// asks this before it changes anything, so missing data stops it while
    /// the working tree is still as it was.
    pub fn check_content_present(&self, id: &ObjectId) -> StoreResult<()> {
        self.check_content(id, &|id| self.find(id))
    }

    /// [`Store::check_content_present`] among the packs as last listed: for
    /// a checkout, which asks it of every file. On a miss, `find` looks at
    /// the packs folder again, and a meta clone of 100,000 files, missing
    /// every file's data, spent a third of its time doing so.
    pub fn check_content_listed(&self, id: &ObjectId) -> StoreResult<()> {
        self.check_content(id, &|id| self.locate(id))
    }

    fn check_content(
        &self,
        id: &ObjectId,
        lookup: &dyn Fn(&ObjectId) -> StoreResult<Option<Located>>,
    ) -> StoreResult<()> {
        let loc = lookup(id)?.ok_or(StoreError::NotFound { id: *id })?;
        if loc.entry.kind != ObjectKind::FileNode {
            return Ok(());
        }
        let mut walk = crate::object::ChunkWalk::new(
            *id,
            self.read_decoded::<FileNode>(id, ObjectKind::FileNode)?,
        );
        let mut read_node =
            |node: &ObjectId| self.read_decoded::<FileNode>(node, ObjectKind::FileNode);
        while let Some(e) = walk.next_chunk(&mut read_node)? {
            if lookup(&e.id)?.is_none() {
                return Err(StoreError::NotFound { id: e.id });
            }
        }
        Ok(())
    }
}

/// See [`Store::content_reader`].
pub struct ContentReader<'s> {
    store: &'s Store,
    walk: Option<crate::object::ChunkWalk>,
    chunk: Vec<u8>,
    at: usize,
}

impl std::io::Read for ContentReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.chunk.len() {
            let store = self.store;
            let Some(walk) = self.walk.as_mut() else {
                return Ok(0);
            };
            let mut read_node =
                |node: &ObjectId| store.read_decoded::<FileNode>(node, ObjectKind::FileNode);
            match walk
                .next_chunk(&mut read_node)
                .map_err(std::io::Error::other)?
            {
                Some(e) => {
                    self.chunk = store
                        .read_kind(&e.id, ObjectKind::Chunk)
                        .map_err(std::io::Error::other)?;
                    self.at = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// See [`Store::seekable_content`].
pub struct SeekableContent<'s> {
    store: &'s Store,
    id: ObjectId,
    len: u64,
    pos: u64,
    /// Reading from `pos`; None after a seek until the next read.
    reader: Option<ContentReader<'s>>,
}

impl std::io::Read for SeekableContent<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.len {
            return Ok(0);
        }
        let reader = match &mut self.reader {
            Some(r) => r,
            None => self.reader.insert(
                self.store
                    .content_reader_at(&self.id, self.pos)
                    .map_err(std::io::Error::other)?,
            ),
        };
        let n = reader.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl std::io::Seek for SeekableContent<'_> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            std::io::SeekFrom::Start(n) => Some(n),
            std::io::SeekFrom::End(d) => self.len.checked_add_signed(d),
            std::io::SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let target = target.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "seek before the start of the content",
            )
        })?;
        if target != self.pos {
            // Within the chunk at hand, the reader stays: a walk over many
            // small boxes (an MP4's 200,000 `free` boxes) seeks at every
            // one, and each fresh reader reads its chunk again.
            match &mut self.reader {
                Some(r)
                    if target >= self.pos - r.at as u64
                        && target - (self.pos - r.at as u64) <= r.chunk.len() as u64 =>
                {
                    r.at = (target - (self.pos - r.at as u64)) as usize;
                }
                _ => self.reader = None,
            }
            self.pos = target;
        }
        Ok(target)
    }
}
