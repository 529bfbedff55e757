//! Pack files: `header | record* | table of contents | footer`.
//! See docs/formats.md for the byte layout.

use std::fs::File;
use std::hash::BuildHasher;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use dmv_os::FileExt;

use crate::direct::DirectWriter;
use crate::error::IoContext;
use crate::object::{check_object_len, MAX_OBJECT_SIZE};
use crate::temp::TempFile;
use crate::{ObjectId, ObjectKind, StoreError, StoreResult};

pub const PACK_MAGIC: &[u8; 8] = b"DMVPACK\0";
pub const PACK_END_MAGIC: &[u8; 8] = b"DMVPEND\0";
/// Version 3: the table of contents gives each record's kind, compression
/// and lengths, and no id or offset: its record header holds the id (once,
/// not twice) and the lengths place it (40 bytes an object less, 3% of a
/// store of 1 KiB files). The checksum covers the pack's header, every record
/// header, the table of contents and the footer, not the payloads (each
/// payload is checked against its object id).
/// Version 2 (a table of contents with ids and offsets, and a checksum of the
/// header, table of contents and footer) and version 1 (a checksum of every
/// byte) are still read and verified.
pub const PACK_VERSION: u32 = 3;
const PACK_VERSION_TOC_WITH_IDS: u32 = 2;
const PACK_VERSION_WHOLE_FILE_CHECKSUM: u32 = 1;
/// Bytes before a pack's first record.
pub const HEADER_LEN: u64 = 16;
/// Bytes of a record before its payload (kind, compression, lengths, id).
pub const RECORD_HEADER_LEN: usize = 44;
pub const TOC_ENTRY_LEN: usize = 12;
const TOC_ENTRY_WITH_ID_LEN: usize = 52;
/// Table-of-contents entries encoded at a time when a pack is finished.
const TOC_PIECE: usize = 4096;
pub const FOOTER_LEN: u64 = 56;

/// How much a pack writer buffers before starting the kernel's writeback.
const WRITEBACK_STEP: u64 = 8 << 20;

pub const COMP_NONE: u8 = 0;
pub const COMP_ZSTD: u8 = 1;

/// Where one object lives inside a pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The object.
    pub id: ObjectId,
    /// Its kind.
    pub kind: ObjectKind,
    /// How its payload is stored: `COMP_NONE` (0) or `COMP_ZSTD` (1).
    pub compression: u8,
    /// Where its record starts in the pack file.
    pub offset: u64,
    /// Its length as content.
    pub raw_len: u32,
    /// Its payload's length in the pack.
    pub stored_len: u32,
}

impl Entry {
    /// Bytes the record takes in its pack: header and payload.
    pub fn record_len(&self) -> usize {
        RECORD_HEADER_LEN + self.stored_len as usize
    }

    /// Refuses lengths no writer produces (above [`MAX_OBJECT_SIZE`]), so a
    /// damaged or hostile table of contents, index or record header never
    /// sizes a buffer.
    pub fn check_lengths(&self) -> Result<(), String> {
        check_object_len("a declared length", self.raw_len as u64)?;
        check_object_len("a stored length", self.stored_len as u64)
    }

    /// The record header, which (from version 3) is also the only place
    /// the pack names the object.
    fn encode_record_header(&self) -> [u8; RECORD_HEADER_LEN] {
        let mut header = [0u8; RECORD_HEADER_LEN];
        header[..12].copy_from_slice(&self.encode_toc());
        header[12..44].copy_from_slice(&self.id.0);
        header
    }

    /// A version 3 table-of-contents entry: the record header without its id.
    fn encode_toc(&self) -> [u8; TOC_ENTRY_LEN] {
        let mut b = [0u8; TOC_ENTRY_LEN];
        b[0] = self.kind as u8;
        b[1] = self.compression;
        b[4..8].copy_from_slice(&self.raw_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.stored_len.to_le_bytes());
        b
    }

    /// A version 3 table-of-contents entry, for the record at `offset` whose
    /// header holds `id`.
    fn decode_toc(b: &[u8], id: ObjectId, offset: u64) -> Option<Entry> {
        Some(Entry {
            id,
            kind: ObjectKind::from_u8(*b.first()?)?,
            compression: *b.get(1)?,
            raw_len: u32::from_le_bytes(b.get(4..8)?.try_into().ok()?),
            stored_len: u32::from_le_bytes(b.get(8..12)?.try_into().ok()?),
            offset,
        })
    }

    /// A version 1 or 2 table-of-contents entry: id, the fields of its record header, offset.
    fn decode_toc_with_id(b: &[u8]) -> Option<Entry> {
        if b.len() < TOC_ENTRY_WITH_ID_LEN {
            return None;
        }
        Some(Entry {
            id: ObjectId::from_slice(&b[0..32])?,
            kind: ObjectKind::from_u8(b[32])?,
            compression: b[33],
            raw_len: u32::from_le_bytes(b[36..40].try_into().ok()?),
            stored_len: u32::from_le_bytes(b[40..44].try_into().ok()?),
            offset: u64::from_le_bytes(b[44..52].try_into().ok()?),
        })
    }
}

/// `pack-<checksum>.pack`, the name of the pack with that checksum.
pub fn pack_file_name(checksum: &ObjectId) -> String {
    PackFileName(checksum).to_string()
}

/// A pack's file name, written out only when shown: reads name their pack
/// for their errors, and spelling it for each of 20,000 small reads was 2%
/// of a `log -- PATH`.
pub struct PackFileName<'a>(pub &'a ObjectId);

impl std::fmt::Display for PackFileName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pack-{}.pack", self.0.to_hex())
    }
}

/// `pack-<checksum>.idx`, the name of that pack's index.
pub fn index_file_name(checksum: &ObjectId) -> String {
    format!("pack-{}.idx", checksum.to_hex())
}

/// Where a pack's bytes go.
enum Sink {
    /// Durable packs: straight to the disk (see `direct`).
    Direct(DirectWriter),
    /// Scratch packs (read back for upload at once, never synced), and durable
    /// ones on file systems without direct I/O.
    Buffered {
        out: BufWriter<File>,
        /// Where the bytes not yet handed to the kernel's writeback begin.
        writeback_from: u64,
    },
}

/// Appends records to a temporary file; `finish` seals it under its checksum name.
pub struct PackWriter {
    dir: PathBuf,
    tmp: TempFile,
    out: Sink,
    hasher: blake3::Hasher,
    offset: u64,
    entries: Vec<Entry>,
    /// Where in `entries` each id is, for [`PackWriter::contains`]: 4 B an
    /// object where a set of ids beside the entries took ~40 (6.5 MB of a
    /// 100,000-object push).
    positions: hashbrown::HashTable<u32>,
    /// Keyed: ids may come from a remote, which could choose contents whose ids collide in a fixed hash.
    id_hasher: std::hash::RandomState,
    /// Scratch packs (staged for upload, deleted right after) skip writeback and fsync.
    durable: bool,
}

impl PackWriter {
    pub fn create(dir: &Path) -> StoreResult<PackWriter> {
        Self::create_with(dir, true)
    }

    pub fn create_with(dir: &Path, durable: bool) -> StoreResult<PackWriter> {
        let tmp_path = dir.join(format!(
            "tmp-{}-{:016x}.pack",
            std::process::id(),
            rand_u64()
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp_path)
            .at(&tmp_path)?;
        let tmp = TempFile::new(tmp_path);
        let buffered = |file| Sink::Buffered {
            out: BufWriter::with_capacity(1 << 20, file),
            writeback_from: 0,
        };
        let out = match durable {
            true => DirectWriter::temporary(file).map_or_else(buffered, Sink::Direct),
            false => buffered(file),
        };
        let mut w = PackWriter {
            dir: dir.to_path_buf(),
            tmp,
            out,
            hasher: blake3::Hasher::new(),
            offset: 0,
            entries: Vec::new(),
            positions: hashbrown::HashTable::new(),
            id_hasher: std::hash::RandomState::new(),
            durable,
        };
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(PACK_MAGIC);
        header.extend_from_slice(&PACK_VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        w.write_all(&header)?;
        Ok(w)
    }

    /// Writes bytes the checksum covers (header, record headers, table of contents, footer).
    fn write_all(&mut self, bytes: &[u8]) -> StoreResult<()> {
        self.hasher.update(bytes);
        self.write_record_bytes(bytes)
    }

    /// Writes a payload, which the checksum leaves out: it is checked
    /// against its id, and hashing the data a second time would cost a fifth
    /// of a commit.
    fn write_record_bytes(&mut self, bytes: &[u8]) -> StoreResult<()> {
        self.write_unhashed(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn write_unhashed(&mut self, bytes: &[u8]) -> StoreResult<()> {
        match &mut self.out {
            Sink::Direct(w) => w.write_all(bytes),
            Sink::Buffered { out, .. } => out.write_all(bytes),
        }
        .at(self.tmp.path())
    }

    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    pub fn object_count(&self) -> usize {
        self.entries.len()
    }

    /// Whether an object with this id was appended.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.entry(id).is_some()
    }

    /// The record of an appended object.
    pub fn entry(&self, id: &ObjectId) -> Option<&Entry> {
        self.positions
            .find(self.id_hasher.hash_one(id), |&i| {
                self.entries[i as usize].id == *id
            })
            .map(|&i| &self.entries[i as usize])
    }

    pub fn append(
        &mut self,
        id: ObjectId,
        kind: ObjectKind,
        raw_len: usize,
        compression: u8,
        payload: &[u8],
    ) -> StoreResult<()> {
        let len = raw_len.max(payload.len());
        if len > MAX_OBJECT_SIZE {
            return Err(StoreError::TooLarge {
                kind: kind.name(),
                id,
                len: len as u64,
                max_mib: MAX_OBJECT_SIZE as u64 >> 20,
            });
        }
        let raw_len = raw_len as u32;
        let stored_len = payload.len() as u32;
        let entry = Entry {
            id,
            kind,
            compression,
            offset: self.offset,
            raw_len,
            stored_len,
        };
        self.write_all(&entry.encode_record_header())?;
        self.write_record_bytes(payload)?;
        let (entries, hasher) = (&self.entries, &self.id_hasher);
        self.positions
            .insert_unique(hasher.hash_one(id), entries.len() as u32, |&i| {
                hasher.hash_one(entries[i as usize].id)
            });
        self.entries.push(entry);
        if self.durable {
            self.start_writeback()?;
        }
        Ok(())
    }

    /// Through the page cache, asks the kernel every few MiB to start writing
    /// what we have written so far, so the final fsync waits for the last few
    /// MiB instead of the whole pack (the disk works while we chunk and hash).
    /// Only a hint: fsync still decides.
    fn start_writeback(&mut self) -> StoreResult<()> {
        let Sink::Buffered {
            out,
            writeback_from,
        } = &mut self.out
        else {
            return Ok(());
        };
        if self.offset - *writeback_from < WRITEBACK_STEP {
            return Ok(());
        }
        out.flush().at(self.tmp.path())?;
        let len = (self.offset - *writeback_from) as i64;
        // SAFETY: sync_file_range only reads its integer arguments; a bad fd or range is an error return.
        #[cfg(all(target_os = "linux", not(dmv_portable)))]
        unsafe {
            use std::os::unix::io::AsRawFd;
            libc::sync_file_range(
                out.get_ref().as_raw_fd(),
                *writeback_from as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        // Elsewhere no such hint: the final fsync writes it all.
        #[cfg(not(all(target_os = "linux", not(dmv_portable))))]
        let _ = len;
        *writeback_from = self.offset;
        Ok(())
    }

    /// Writes the table of contents and footer, syncs, and renames the pack to
    /// its final name. Returns the checksum (= pack name) and the entries.
    /// The caller writes the index next; a pack without an index is invisible.
    pub fn finish(mut self) -> StoreResult<(ObjectId, PathBuf, Vec<Entry>)> {
        let toc_offset = self.offset;
        // In pieces: the whole table is 12 B an object, a copy of it at once
        // would add to the peak of every push.
        let entries = std::mem::take(&mut self.entries);
        let mut toc = Vec::with_capacity(TOC_PIECE * TOC_ENTRY_LEN);
        for piece in entries.chunks(TOC_PIECE) {
            toc.clear();
            for e in piece {
                toc.extend_from_slice(&e.encode_toc());
            }
            self.write_all(&toc)?;
        }
        toc.clear();
        toc.extend_from_slice(&toc_offset.to_le_bytes());
        toc.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        toc.extend_from_slice(&0u32.to_le_bytes());
        toc.extend_from_slice(PACK_END_MAGIC);
        self.write_all(&toc)?;
        let checksum = ObjectId(*self.hasher.finalize().as_bytes());
        self.write_unhashed(&checksum.0)?;
        let file = match self.out {
            Sink::Direct(w) => w.finish().at(self.tmp.path())?,
            Sink::Buffered { out, .. } => out
                .into_inner()
                .map_err(|e| StoreError::io(self.tmp.path(), e.into_error()))?,
        };
        crate::failpoint("pack-before-sync");
        if self.durable {
            file.sync_all().at(self.tmp.path())?;
        }
        drop(file);
        let final_path = self.dir.join(pack_file_name(&checksum));
        crate::failpoint("pack-before-rename");
        std::fs::rename(self.tmp.path(), &final_path).at(&final_path)?;
        self.tmp.kept();
        Ok((checksum, final_path, entries))
    }

    /// Abandons the pack (its temporary file is removed).
    pub fn discard(self) {}
}

pub(crate) fn rand_u64() -> u64 {
    let mut b = [0u8; 8];
    let h = blake3::hash(
        format!(
            "{:?}{}{:?}",
            std::time::SystemTime::now(),
            std::process::id(),
            std::thread::current().id()
        )
        .as_bytes(),
    );
    b.copy_from_slice(&h.as_bytes()[..8]);
    u64::from_le_bytes(b)
}

/// Reads one record, checking that its header matches what the index promised.
pub fn read_record(
    file: &File,
    pack_name: impl std::fmt::Display,
    e: &Entry,
) -> StoreResult<Vec<u8>> {
    let stored = read_stored_record(file, &pack_name, e)?;
    decode_payload(e.id, e.kind, e.compression, e.raw_len as usize, stored).map_err(|detail| {
        StoreError::DamagedObject {
            id: e.id,
            pack: pack_name.to_string(),
            detail,
        }
    })
}

/// A record's payload as stored (maybe compressed), after checking its header
/// against the index; the content is not verified.
pub fn read_stored_record(
    file: &File,
    pack_name: impl std::fmt::Display,
    e: &Entry,
) -> StoreResult<Vec<u8>> {
    e.check_lengths()
        .map_err(|detail| StoreError::DamagedObject {
            id: e.id,
            pack: pack_name.to_string(),
            detail,
        })?;
    let mut header = [0u8; RECORD_HEADER_LEN];
    let payload = read_header_and_payload(file, e.offset, &mut header, e.stored_len as usize)
        .map_err(|err| StoreError::DamagedObject {
            id: e.id,
            pack: pack_name.to_string(),
            detail: format!("cannot read record: {err}"),
        })?;
    check_header(&header, payload.len(), &pack_name, e)?;
    Ok(payload)
}

/// A record's header into `header` and its payload into a new buffer, in
/// one read: reading the record whole and cutting the header off moved
/// every payload byte once more (a tenth of a mount's sequential read).
#[cfg(unix)]
fn read_header_and_payload(
    file: &File,
    offset: u64,
    header: &mut [u8; RECORD_HEADER_LEN],
    payload_len: usize,
) -> std::io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut payload: Vec<u8> = Vec::with_capacity(payload_len);
    let total = RECORD_HEADER_LEN + payload_len;
    let mut done = 0;
    while done < total {
        let (in_header, in_payload) = (
            done.min(RECORD_HEADER_LEN),
            done.saturating_sub(RECORD_HEADER_LEN),
        );
        let at = libc::off_t::try_from(offset + done as u64)
            .map_err(|_| std::io::Error::other("offset past what the system can read"))?;
        let parts = [
            libc::iovec {
                iov_base: header[in_header..].as_mut_ptr().cast(),
                iov_len: RECORD_HEADER_LEN - in_header,
            },
            // SAFETY: `in_payload` is at most `payload_len`, the vector's capacity: the pointer stays inside its allocation.
            libc::iovec {
                iov_base: unsafe { payload.as_mut_ptr().add(in_payload) }.cast(),
                iov_len: payload_len - in_payload,
            },
        ];
        // SAFETY: both parts point at writable memory of the lengths given, owned here for the call.
        let n = unsafe { libc::preadv(file.as_raw_fd(), parts.as_ptr(), 2, at) };
        match n {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n if n < 0 => {
                let err = std::io::Error::last_os_error();
                if err.kind() != std::io::ErrorKind::Interrupted {
                    return Err(err);
                }
            }
            n => done += n as usize,
        }
    }
    // SAFETY: the kernel wrote all `payload_len` bytes (the loop ran until `done == total`).
    unsafe { payload.set_len(payload_len) };
    Ok(payload)
}

/// Where there is no preadv (Windows): two reads.
#[cfg(not(unix))]
fn read_header_and_payload(
    file: &File,
    offset: u64,
    header: &mut [u8; RECORD_HEADER_LEN],
    payload_len: usize,
) -> std::io::Result<Vec<u8>> {
    file.read_exact_at(header, offset)?;
    let mut payload = vec![0; payload_len];
    file.read_exact_at(&mut payload, offset + RECORD_HEADER_LEN as u64)?;
    Ok(payload)
}

/// [`check_record_header`] of a header read apart from its payload.
fn check_header(
    header: &[u8; RECORD_HEADER_LEN],
    payload_len: usize,
    pack_name: impl std::fmt::Display,
    e: &Entry,
) -> StoreResult<()> {
    let matches = RECORD_HEADER_LEN + payload_len == e.record_len()
        && header[0] == e.kind as u8
        && header[1] == e.compression
        && header[12..44] == e.id.0
        && header[8..12] == e.stored_len.to_le_bytes()
        && header[4..8] == e.raw_len.to_le_bytes();
    if !matches {
        return Err(StoreError::DamagedObject {
            id: e.id,
            pack: pack_name.to_string(),
            detail: "record header does not match the index".into(),
        });
    }
    Ok(())
}

/// Checks that `record` (header and payload, as read from a pack) is the one
/// the index entry describes.
pub fn check_record_header(
    record: &[u8],
    pack_name: impl std::fmt::Display,
    e: &Entry,
) -> StoreResult<()> {
    match record
        .get(..RECORD_HEADER_LEN)
        .and_then(|h| <&[u8; RECORD_HEADER_LEN]>::try_from(h).ok())
    {
        Some(header) => check_header(header, record.len() - RECORD_HEADER_LEN, pack_name, e),
        None => Err(StoreError::DamagedObject {
            id: e.id,
            pack: pack_name.to_string(),
            detail: "record header does not match the index".into(),
        }),
    }
}

/// zstd with one decompression context per thread: making one (~100 KiB,
/// zeroed) for each object read was most of reading a small tree or commit,
/// a sixth of `log` over 10,000 commits.
fn decompress(stored: &[u8], raw_len: usize) -> std::io::Result<Vec<u8>> {
    thread_local! {
        static CONTEXT: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { std::cell::RefCell::new(None) };
    }
    CONTEXT.with(|context| {
        let mut context = context.borrow_mut();
        if context.is_none() {
            *context = Some(zstd::bulk::Decompressor::new()?);
        }
        match context.as_mut() {
            Some(d) => d.decompress(stored, raw_len),
            None => zstd::bulk::decompress(stored, raw_len),
        }
    })
}

/// Decompresses a stored payload and checks that it hashes to `id`.
pub fn decode_payload(
    id: ObjectId,
    kind: ObjectKind,
    compression: u8,
    raw_len: usize,
    stored: Vec<u8>,
) -> Result<Vec<u8>, String> {
    let data = match compression {
        COMP_NONE => {
            check_lengths(raw_len, stored.len())?;
            stored
        }
        _ => decompress_payload(compression, raw_len, &stored)?,
    };
    if data.len() != raw_len {
        return Err("length does not match the index".into());
    }
    if ObjectId::hash(kind, &data) != id {
        return Err("content does not hash to its id".into());
    }
    Ok(data)
}

/// A compressed payload's content, its length checked but not its hash
/// (for content checked once already: see `StoredObject::content_checked_before`).
pub(crate) fn decompress_payload(
    compression: u8,
    raw_len: usize,
    stored: &[u8],
) -> Result<Vec<u8>, String> {
    check_lengths(raw_len, stored.len())?;
    let data = match compression {
        COMP_ZSTD => {
            decompress(stored, raw_len).map_err(|err| format!("cannot decompress: {err}"))?
        }
        COMP_NONE => stored.to_vec(),
        other => return Err(format!("unknown compression {other}")),
    };
    if data.len() != raw_len {
        return Err("length does not match the index".into());
    }
    Ok(data)
}

/// The output buffer is sized by `raw_len`: checked before it is trusted.
fn check_lengths(raw_len: usize, stored_len: usize) -> Result<(), String> {
    check_object_len("a declared length", raw_len as u64)?;
    check_object_len("a stored length", stored_len as u64)
}

/// What a pack's header and footer say: its version, where its table of
/// contents begins, how many records it lists.
struct Frame {
    version: u32,
    toc_offset: u64,
    count: u64,
    len: u64,
}

fn read_frame(file: &File, path: &Path) -> StoreResult<Frame> {
    let corrupt = |detail: &str| StoreError::CorruptFile {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    };
    let len = file.metadata().at(path)?.len();
    if len < HEADER_LEN + FOOTER_LEN {
        return Err(corrupt("too short to be a pack"));
    }
    let mut header = [0u8; HEADER_LEN as usize];
    file.read_exact_at(&mut header, 0).at(path)?;
    if &header[..8] != PACK_MAGIC {
        return Err(corrupt("not a DMV pack"));
    }
    let version = u32::from_le_bytes(header[8..12].try_into().unwrap_or_default());
    if !matches!(
        version,
        PACK_VERSION | PACK_VERSION_TOC_WITH_IDS | PACK_VERSION_WHOLE_FILE_CHECKSUM
    ) {
        return Err(corrupt("unsupported pack version"));
    }
    let mut footer = [0u8; FOOTER_LEN as usize];
    file.read_exact_at(&mut footer, len - FOOTER_LEN).at(path)?;
    if &footer[16..24] != PACK_END_MAGIC {
        return Err(corrupt("missing end marker (incomplete pack)"));
    }
    let toc_offset = u64::from_le_bytes(footer[0..8].try_into().unwrap_or_default());
    let count = u32::from_le_bytes(footer[8..12].try_into().unwrap_or_default()) as u64;
    let entry_len = if version == PACK_VERSION {
        TOC_ENTRY_LEN
    } else {
        TOC_ENTRY_WITH_ID_LEN
    } as u64;
    // The count must fit the file exactly before it sizes a buffer.
    if toc_offset < HEADER_LEN
        || toc_offset.checked_add(count * entry_len) != Some(len - FOOTER_LEN)
    {
        return Err(corrupt("table of contents out of bounds"));
    }
    Ok(Frame {
        version,
        toc_offset,
        count,
        len,
    })
}

/// Parses a pack's footer and table of contents (without verifying the
/// checksum). In a version 3 pack each record's id is read from its header;
/// `read_record` checks the header's other fields against the entry.
pub fn read_toc(file: &File, path: &Path) -> StoreResult<Vec<Entry>> {
    let corrupt = |detail: &str| StoreError::CorruptFile {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    };
    let frame = read_frame(file, path)?;
    let mut toc = vec![0u8; (frame.len - FOOTER_LEN - frame.toc_offset) as usize];
    file.read_exact_at(&mut toc, frame.toc_offset).at(path)?;
    let mut entries = Vec::with_capacity(frame.count as usize);
    if frame.version == PACK_VERSION {
        let mut at = HEADER_LEN;
        let mut id = [0u8; 32];
        for raw in toc.chunks_exact(TOC_ENTRY_LEN) {
            let e = Entry::decode_toc(raw, ObjectId(id), at)
                .ok_or_else(|| corrupt("bad table-of-contents entry"))?;
            e.check_lengths().map_err(|d| {
                corrupt(&format!(
                    "table-of-contents entry for the record at {at}: {d}"
                ))
            })?;
            if at + e.record_len() as u64 > frame.toc_offset {
                return Err(corrupt("table-of-contents entry out of bounds"));
            }
            file.read_exact_at(&mut id, at + 12).at(path)?;
            entries.push(Entry {
                id: ObjectId(id),
                ..e
            });
            at += e.record_len() as u64;
        }
        if at != frame.toc_offset {
            return Err(corrupt(
                "bytes between the last record and the table of contents",
            ));
        }
        return Ok(entries);
    }
    for raw in toc.chunks_exact(TOC_ENTRY_WITH_ID_LEN) {
        let e =
            Entry::decode_toc_with_id(raw).ok_or_else(|| corrupt("bad table-of-contents entry"))?;
        e.check_lengths()
            .map_err(|d| corrupt(&format!("table-of-contents entry for {}: {d}", e.id)))?;
        if e.offset < HEADER_LEN
            || e.offset
                .saturating_add(RECORD_HEADER_LEN as u64 + e.stored_len as u64)
                > frame.toc_offset
        {
            return Err(corrupt("table-of-contents entry out of bounds"));
        }
        entries.push(e);
    }
    Ok(entries)
}

/// Checks a pack's trailing checksum, and that its records fill the space
/// between header and table of contents exactly (no byte outside a record
/// the table of contents lists). Payloads are not read: `read_record`
/// checks each against its id.
pub fn verify_checksum(file: &File, path: &Path) -> StoreResult<ObjectId> {
    let corrupt = |detail: &str| StoreError::CorruptFile {
        path: path.to_path_buf(),
        detail: detail.to_string(),
    };
    let frame = read_frame(file, path)?;
    let mut hasher = blake3::Hasher::new();
    let mut hash_range = |from: u64, to: u64| -> StoreResult<()> {
        let mut buf = vec![0u8; ((to - from) as usize).min(1 << 20)];
        let mut pos = from;
        while pos < to {
            let n = ((to - pos) as usize).min(buf.len());
            file.read_exact_at(&mut buf[..n], pos).at(path)?;
            hasher.update(&buf[..n]);
            pos += n as u64;
        }
        Ok(())
    };
    match frame.version {
        PACK_VERSION_WHOLE_FILE_CHECKSUM => hash_range(0, frame.len - 32)?,
        PACK_VERSION_TOC_WITH_IDS => {
            let mut entries = read_toc(file, path)?;
            entries.sort_by_key(|e| e.offset);
            let mut end = HEADER_LEN;
            for e in &entries {
                if e.offset != end {
                    return Err(corrupt(
                        "records do not follow each other as the table of contents says",
                    ));
                }
                end += e.record_len() as u64;
            }
            if end != frame.toc_offset {
                return Err(corrupt(
                    "bytes between the last record and the table of contents",
                ));
            }
            hash_range(0, HEADER_LEN)?;
            hash_range(frame.toc_offset, frame.len - 32)?;
        }
        _ => {
            // read_toc placed the records end to end up to the table of contents.
            let entries = read_toc(file, path)?;
            hash_range(0, HEADER_LEN)?;
            for e in &entries {
                hash_range(e.offset, e.offset + RECORD_HEADER_LEN as u64)?;
            }
            hash_range(frame.toc_offset, frame.len - 32)?;
        }
    }
    let mut stored = [0u8; 32];
    file.read_exact_at(&mut stored, frame.len - 32).at(path)?;
    let actual = ObjectId(*hasher.finalize().as_bytes());
    if actual.0 != stored {
        return Err(StoreError::CorruptFile {
            path: path.to_path_buf(),
            detail: "checksum mismatch".into(),
        });
    }
    Ok(actual)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{write_index, PackIndex};
    use proptest::prelude::*;

    /// A sealed pack holding one small zstd-compressed chunk.
    fn one_object_pack(dir: &Path) -> (PathBuf, Entry, Vec<u8>) {
        let data = b"hello hello hello hello hello hello hello hello hello hello hello".repeat(50);
        let id = ObjectId::hash(ObjectKind::Chunk, &data);
        let stored = zstd::bulk::compress(&data, 1).unwrap();
        let mut w = PackWriter::create(dir).unwrap();
        w.append(id, ObjectKind::Chunk, data.len(), COMP_ZSTD, &stored)
            .unwrap();
        let (_, path, entries) = w.finish().unwrap();
        (path, entries[0], data)
    }

    /// Rewrites the raw length of the only record, in its header and in the
    /// table of contents (the checksum is left stale: readers meet the
    /// lengths before they could check it).
    fn declare_raw_len(path: &Path, e: &Entry, raw_len: u32) {
        let mut bytes = std::fs::read(path).unwrap();
        let at = e.offset as usize + 4;
        bytes[at..at + 4].copy_from_slice(&raw_len.to_le_bytes());
        let toc_at = bytes.len() - FOOTER_LEN as usize - TOC_ENTRY_LEN;
        bytes[toc_at + 4..toc_at + 8].copy_from_slice(&raw_len.to_le_bytes());
        std::fs::write(path, bytes).unwrap();
    }

    /// Every way a 4 GiB declared length reaches the store comes back as an
    /// error naming the limit.
    fn refuse_huge_declared_lengths() {
        let dir = tempfile::tempdir().unwrap();
        let (path, good, data) = one_object_pack(dir.path());
        let file = File::open(&path).unwrap();
        assert_eq!(read_record(&file, "p", &good).unwrap(), data);

        let huge = Entry {
            raw_len: u32::MAX,
            ..good
        };
        // The zstd output buffer would be sized by the declared length.
        let stored = read_stored_record(&file, "p", &good).unwrap();
        let err = decode_payload(huge.id, huge.kind, COMP_ZSTD, huge.raw_len as usize, stored)
            .unwrap_err();
        assert!(err.contains("larger than the largest object"), "{err}");
        // An index entry declaring it: refused by the index and by the reader.
        let err = read_record(&file, "p", &huge).unwrap_err().to_string();
        assert!(err.contains("larger than the largest object"), "{err}");
        let idx_path = dir.path().join("huge.idx");
        write_index(&idx_path, &[ObjectId([1; 32])], vec![(0, huge)]).unwrap();
        let idx = PackIndex::open(&idx_path).unwrap();
        let err = idx.lookup(&huge.id).unwrap_err().to_string();
        assert!(err.contains("larger than the largest object"), "{err}");
        assert!(idx.verify().is_err());
        // A stored length of 4 GiB: refused before the record is read.
        let err = read_stored_record(
            &file,
            "p",
            &Entry {
                stored_len: u32::MAX,
                ..good
            },
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("larger than the largest object"), "{err}");
        // The pack itself declaring it, in its record header and table of contents.
        drop(file);
        declare_raw_len(&path, &good, u32::MAX);
        let file = File::open(&path).unwrap();
        let err = read_toc(&file, &path).unwrap_err().to_string();
        assert!(err.contains("larger than the largest object"), "{err}");
        assert!(verify_checksum(&file, &path).is_err());
        // Writers refuse such objects too.
        let mut w = PackWriter::create(dir.path()).unwrap();
        let err = w
            .append(
                good.id,
                ObjectKind::Chunk,
                u32::MAX as usize,
                COMP_ZSTD,
                b"x",
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("larger than the largest object"), "{err}");
        let big = vec![0u8; MAX_OBJECT_SIZE + 1];
        assert!(w
            .append(good.id, ObjectKind::Commit, big.len(), COMP_NONE, &big)
            .is_err());
        w.append(
            good.id,
            ObjectKind::Chunk,
            MAX_OBJECT_SIZE,
            COMP_NONE,
            &big[..MAX_OBJECT_SIZE],
        )
        .unwrap();
        w.discard();
    }

    /// The name covers the ids (in the record headers): two packs of
    /// records alike in all but content are two files, and a flipped id
    /// byte fails the checksum.
    #[test]
    fn a_pack_is_named_after_its_ids() {
        let dir = tempfile::tempdir().unwrap();
        let one_chunk = |data: &[u8]| {
            let mut w = PackWriter::create(dir.path()).unwrap();
            w.append(
                ObjectId::hash(ObjectKind::Chunk, data),
                ObjectKind::Chunk,
                data.len(),
                COMP_NONE,
                data,
            )
            .unwrap();
            w.finish().unwrap()
        };
        let (a, a_path, entries) = one_chunk(b"one");
        let (b, b_path, _) = one_chunk(b"two");
        assert_ne!(a, b);
        assert_eq!(
            std::fs::read(&a_path).unwrap().len(),
            HEADER_LEN as usize + RECORD_HEADER_LEN + 3 + TOC_ENTRY_LEN + FOOTER_LEN as usize
        );
        for path in [&a_path, &b_path] {
            let file = File::open(path).unwrap();
            verify_checksum(&file, path).unwrap();
        }
        let mut bytes = std::fs::read(&a_path).unwrap();
        bytes[entries[0].offset as usize + 12] ^= 1;
        std::fs::write(&a_path, bytes).unwrap();
        let file = File::open(&a_path).unwrap();
        assert!(verify_checksum(&file, &a_path)
            .unwrap_err()
            .to_string()
            .contains("checksum mismatch"));
        assert_ne!(read_toc(&file, &a_path).unwrap()[0].id, entries[0].id);
    }

    #[test]
    fn huge_declared_lengths_are_refused() {
        refuse_huge_declared_lengths();
    }

    /// The same, in a process whose address space cannot hold a 4 GiB
    /// buffer: an allocation sized by a declared length would abort it.
    #[test]
    fn huge_declared_lengths_are_refused_before_allocating() {
        if !dmv_testkit::in_small_address_space(
            "pack::tests::huge_declared_lengths_are_refused_before_allocating",
            1 << 30,
        ) {
            return;
        }
        refuse_huge_declared_lengths();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Any bytes as a pack: errors, never a panic or a huge allocation.
        #[test]
        fn arbitrary_packs_never_panic(body in proptest::collection::vec(any::<u8>(), 0..400), count in any::<u32>(), lens in any::<(u32, u32)>(), version in 1u32..=3) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.pack");
            // A plausible header and footer around arbitrary bytes, and a
            // table of contents entry with arbitrary lengths, of any version.
            let mut bytes = PACK_MAGIC.to_vec();
            bytes.extend_from_slice(&version.to_le_bytes());
            bytes.extend_from_slice(&[0; 4]);
            bytes.extend_from_slice(&body);
            let toc_offset = bytes.len() as u64;
            let e = Entry { id: ObjectId([5; 32]), kind: ObjectKind::Chunk, compression: COMP_ZSTD, offset: HEADER_LEN, raw_len: lens.0, stored_len: lens.1 };
            if version < PACK_VERSION {
                bytes.extend_from_slice(&e.id.0);
            }
            bytes.extend_from_slice(&e.encode_toc());
            if version < PACK_VERSION {
                bytes.extend_from_slice(&e.offset.to_le_bytes());
            }
            bytes.extend_from_slice(&toc_offset.to_le_bytes());
            bytes.extend_from_slice(&(count % 3).to_le_bytes());
            bytes.extend_from_slice(&[0; 4]);
            bytes.extend_from_slice(PACK_END_MAGIC);
            bytes.extend_from_slice(&[0; 32]);
            for candidate in [bytes.clone(), body.clone()] {
                std::fs::write(&path, &candidate).unwrap();
                let file = File::open(&path).unwrap();
                let _ = verify_checksum(&file, &path);
                if let Ok(entries) = read_toc(&file, &path) {
                    for e in entries {
                        prop_assert!(e.check_lengths().is_ok());
                        let _ = read_record(&file, "x", &e);
                    }
                }
            }
        }

        /// Declared lengths from anywhere never size a buffer past the limit.
        #[test]
        fn decode_payload_refuses_lengths_past_the_limit(raw_len in (MAX_OBJECT_SIZE as u64 + 1)..=u32::MAX as u64, comp in 0u8..3) {
            let stored = zstd::bulk::compress(b"abc", 1).unwrap();
            prop_assert!(decode_payload(ObjectId([0; 32]), ObjectKind::Chunk, comp, raw_len as usize, stored).is_err());
        }
    }
}
