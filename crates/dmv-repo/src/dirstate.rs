//! `.dmv/dirstate`: the staged tree (path → kind, id, size) plus the stat data
//! seen when each file was last read, so unchanged files are never re-read.
//! Layout: magic, version, postcard-encoded entries, BLAKE3 checksum.

use std::collections::BTreeMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use dmv_store::object::EntryKind;
use dmv_store::{ObjectId, WriteSession};
use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::tree::{FlatEntry, FlatTree};
use crate::{RepoError, RepoResult};

const MAGIC: &[u8; 8] = b"DMVDIRS\0";
const VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    pub kind: EntryKind,
    pub id: ObjectId,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    pub mode: u32,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    entries: Vec<(serde_bytes::ByteBuf, DirEntry)>,
}

#[derive(Default)]
pub struct Dirstate {
    pub entries: BTreeMap<Vec<u8>, DirEntry>,
    /// mtime of the dirstate file when loaded: a file modified at or after it
    /// may have changed after it was hashed within the same timestamp tick.
    pub written_ns: i64,
}

pub fn mtime_ns(m: &Metadata) -> i64 {
    m.mtime() * 1_000_000_000 + m.mtime_nsec()
}

pub fn ctime_ns(m: &Metadata) -> i64 {
    m.ctime() * 1_000_000_000 + m.ctime_nsec()
}

pub fn kind_of(m: &Metadata) -> Option<EntryKind> {
    let ft = m.file_type();
    if ft.is_symlink() {
        Some(EntryKind::Symlink)
    } else if ft.is_file() {
        Some(if m.mode() & 0o111 != 0 { EntryKind::Executable } else { EntryKind::File })
    } else if ft.is_dir() {
        Some(EntryKind::Dir)
    } else {
        None
    }
}

/// The stat times of an entry whose data is not here: nothing is in the
/// working tree at its path, and that is not a deletion. (-1 marks an
/// unknown stat; a small value keeps the entry's encoding small.)
const ABSENT_NS: i64 = -2;

impl DirEntry {
    /// A tracked file whose data this (partial) replica does not hold.
    pub fn absent(kind: EntryKind, id: ObjectId, size: u64) -> DirEntry {
        DirEntry { kind, id, size, mtime_ns: ABSENT_NS, ctime_ns: ABSENT_NS, ino: 0, mode: 0 }
    }

    pub fn is_absent(&self) -> bool {
        self.mtime_ns == ABSENT_NS && self.ctime_ns == ABSENT_NS
    }

    pub fn new(kind: EntryKind, id: ObjectId, size: u64, m: &Metadata) -> DirEntry {
        DirEntry { kind, id, size, mtime_ns: mtime_ns(m), ctime_ns: ctime_ns(m), ino: m.ino(), mode: m.mode() }
    }

    /// What the entry stages, without its stat data.
    pub(crate) fn flat(&self) -> FlatEntry {
        FlatEntry { kind: self.kind, id: self.id, size: self.size }
    }

    /// Same stat as recorded, so the content can be trusted without reading.
    pub fn stat_matches(&self, m: &Metadata, written_ns: i64) -> bool {
        self.size == m.len() && self.mtime_ns == mtime_ns(m) && self.ctime_ns == ctime_ns(m) && self.ino == m.ino() && self.mode == m.mode() && self.mtime_ns < written_ns
    }
}

impl Dirstate {
    pub fn load(path: &Path) -> RepoResult<Dirstate> {
        let corrupt = |detail: &str| RepoError::Corrupt { path: path.into(), detail: detail.into() };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Dirstate::default()),
            Err(e) => return Err(RepoError::io(path, e)),
        };
        let written_ns = std::fs::metadata(path).map(|m| mtime_ns(&m)).at(path)?;
        if bytes.len() < 12 + 32 || &bytes[..8] != MAGIC {
            return Err(corrupt("not a dirstate"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 32);
        if blake3::hash(body).as_bytes()[..] != *sum {
            return Err(corrupt("checksum mismatch (delete it and run `dmv restore --staged .` to rebuild from HEAD)"));
        }
        if u32::from_le_bytes([body[8], body[9], body[10], body[11]]) != VERSION {
            return Err(corrupt("unsupported dirstate version"));
        }
        let disk: OnDisk = postcard::from_bytes(&body[12..]).map_err(|e| corrupt(&e.to_string()))?;
        Ok(Dirstate { entries: disk.entries.into_iter().map(|(p, e)| (p.into_vec(), e)).collect(), written_ns })
    }

    pub fn save(&self, path: &Path) -> RepoResult<()> {
        let disk = OnDisk { entries: self.entries.iter().map(|(p, e)| (serde_bytes::ByteBuf::from(p.clone()), e.clone())).collect() };
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend(postcard::to_stdvec(&disk).map_err(|e| RepoError::Encode { what: "the dirstate", detail: e.to_string() })?);
        let sum = blake3::hash(&bytes);
        bytes.extend_from_slice(sum.as_bytes());
        crate::atomic::write_atomic(path, &bytes)
    }

    /// The staged tree as a flat tree.
    pub(crate) fn flat(&self) -> FlatTree {
        self.entries.iter().map(|(p, e)| (p.clone(), e.flat())).collect()
    }

    /// Writes the staged tree's objects; returns the root tree's id.
    pub(crate) fn write_tree(&self, session: &mut WriteSession<'_>) -> RepoResult<ObjectId> {
        let flat: Vec<(&[u8], FlatEntry)> = self.entries.iter().map(|(p, e)| (p.as_slice(), e.flat())).collect();
        crate::tree::build(session, &flat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_absent_entry_is_pinned_and_survives_a_save() {
        let e = DirEntry::absent(EntryKind::File, ObjectId([7; 32]), 300);
        assert!(e.is_absent() && !DirEntry { mtime_ns: -1, ctime_ns: -1, ..e.clone() }.is_absent());
        let mut expected = vec![0u8]; // kind File
        expected.extend([7u8; 32]);
        expected.extend([0xac, 0x02, 0x03, 0x03, 0x00, 0x00]); // size 300, mtime -2, ctime -2 (zigzag), ino 0, mode 0
        assert_eq!(postcard::to_stdvec(&e).unwrap(), expected);
        let dir = tempfile::tempdir().unwrap();
        let mut ds = Dirstate::default();
        ds.entries.insert(b"a/b.raw".to_vec(), e.clone());
        ds.save(&dir.path().join("dirstate")).unwrap();
        assert!(Dirstate::load(&dir.path().join("dirstate")).unwrap().entries[&b"a/b.raw"[..]].is_absent());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048), with_header in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("dirstate");
            let mut data = if with_header { let mut v = MAGIC.to_vec(); v.extend_from_slice(&VERSION.to_le_bytes()); v } else { Vec::new() };
            data.extend(bytes);
            let sum = blake3::hash(&data);
            data.extend_from_slice(sum.as_bytes());
            std::fs::write(&path, &data).unwrap();
            let _ = Dirstate::load(&path);
        }
    }
}
