//! Salvaging a damaged store: every object that still reads back whole
//! (decompressed and re-hashed) is kept, the packs and indexes holding
//! damage are rewritten without it, and the objects that could not be saved
//! are named, for a repair to fetch them from another replica.
//!
//! A record is found through its pack's table of contents, through any
//! index naming it, or by walking the pack's records from its header (so a
//! damaged table of contents and a damaged index together still lose only
//! the records that are damaged themselves).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use dmv_os::FileExt;

use crate::error::IoContext;
use crate::gc::seal;
use crate::index::PackIndex;
use crate::pack::{self, Entry, PackWriter, HEADER_LEN, RECORD_HEADER_LEN};
use crate::store::MULTI_PACK_INDEX;
use crate::{ObjectId, ObjectKind, Store, StoreResult};

/// What a salvage did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Salvaged {
    /// Packs that held damage, rewritten with what in them was whole.
    pub packs_rewritten: usize,
    /// Objects saved out of them.
    pub objects_saved: u64,
    /// Indexes removed (damaged, or of a pack that is gone) and rebuilt.
    pub indexes_rebuilt: usize,
    /// Objects seen in damaged records that no whole copy here holds.
    pub lost: Vec<ObjectId>,
}

impl Store {
    /// Rewrites every damaged pack and index from what is still whole.
    /// Runs under the store's exclusive lock (no writer, no gc meanwhile);
    /// new packs are written and synced before any old one is removed, so a
    /// salvage killed at any point loses nothing it had saved.
    pub fn salvage(&self) -> StoreResult<Salvaged> {
        let _lock = self.exclusive_lock()?;
        let dir = self.packs_dir().to_path_buf();
        let mut report = Salvaged::default();
        let (packs, indexes) = list(&dir)?;
        // Every record any index names, by pack; and which indexes are whole.
        let mut indexed: HashMap<ObjectId, Vec<Entry>> = HashMap::new();
        let mut bad_indexes: BTreeSet<PathBuf> = BTreeSet::new();
        for path in &indexes {
            match PackIndex::open(path).and_then(|i| i.verify().map(|_| i)) {
                Ok(idx) => {
                    for i in 0..idx.len() {
                        let loc = idx.located_at(i)?;
                        indexed.entry(loc.pack).or_default().push(loc.entry);
                    }
                    if idx.packs().iter().any(|p| !packs.contains(p)) {
                        bad_indexes.insert(path.clone());
                    }
                }
                Err(_) => {
                    bad_indexes.insert(path.clone());
                }
            }
        }
        let mut whole: HashSet<ObjectId> = HashSet::new();
        let mut damaged: HashSet<ObjectId> = HashSet::new();
        // Packs to rewrite, with their whole records.
        let mut rewrite: Vec<(ObjectId, File, Vec<Entry>)> = Vec::new();
        for p in &packs {
            let path = dir.join(pack::pack_file_name(p));
            let file = File::open(&path).at(&path)?;
            let toc = pack::read_toc(&file, &path);
            // A whole pack whose index is damaged or missing keeps its bytes: only the index is rebuilt (below).
            let mut pack_whole = pack::verify_checksum(&file, &path).is_ok() && toc.is_ok();
            let checksum_whole = pack_whole;
            let mut candidates: Vec<Entry> = toc.unwrap_or_default();
            candidates.extend(indexed.get(p).into_iter().flatten().copied());
            // What the table of contents or the index lists: a record there that cannot be read is damage.
            let listed: HashSet<(u64, ObjectId)> =
                candidates.iter().map(|e| (e.offset, e.id)).collect();
            candidates.extend(walk_records(&file, &path)?);
            // Only records the same in every field are one: a damaged entry may differ from the good one in any.
            candidates.sort_by_key(|e| {
                (
                    e.offset,
                    e.id.0,
                    e.raw_len,
                    e.stored_len,
                    e.kind as u8,
                    e.compression,
                )
            });
            candidates.dedup();
            let name = pack::pack_file_name(p);
            let mut saved = Vec::new();
            let mut here: HashSet<ObjectId> = HashSet::new();
            for e in candidates {
                match pack::read_record(&file, &name, &e) {
                    Ok(_) if here.insert(e.id) => saved.push(e),
                    Ok(_) => {}
                    // In a pack whose checksum holds, a record only the walk found and
                    // that cannot be read is the walk misreading bytes (its table of
                    // contents), not damage: a healthy pack is not rewritten for it.
                    Err(_) if checksum_whole && !listed.contains(&(e.offset, e.id)) => {}
                    Err(_) => {
                        damaged.insert(e.id);
                        pack_whole = false;
                    }
                }
            }
            whole.extend(here);
            if !pack_whole {
                rewrite.push((*p, file, saved));
            }
        }
        // Whole copies in untouched packs need not be written again.
        let untouched: HashSet<ObjectId> = packs
            .iter()
            .filter(|p| !rewrite.iter().any(|(r, _, _)| r == *p))
            .flat_map(|p| indexed.get(p).into_iter().flatten().map(|e| e.id))
            .collect();
        let mut out: Option<PackWriter> = None;
        let mut written: HashSet<ObjectId> = untouched;
        // A rewrite can come out byte for byte as a pack it replaces (same name): that one stays.
        let mut sealed: HashSet<ObjectId> = HashSet::new();
        for (p, file, saved) in &rewrite {
            let name = pack::pack_file_name(p);
            for e in saved {
                if !written.insert(e.id) {
                    continue;
                }
                let stored = pack::read_stored_record(file, &name, e)?;
                let w = match out.as_mut() {
                    Some(w) => w,
                    None => out.insert(PackWriter::create(&dir)?),
                };
                w.append(e.id, e.kind, e.raw_len as usize, e.compression, &stored)?;
                report.objects_saved += 1;
                if w.bytes_written() >= self.pack_limit() {
                    if let Some(w) = out.take() {
                        sealed.insert(seal(&dir, w)?);
                    }
                }
            }
        }
        if let Some(w) = out.take() {
            match w.object_count() {
                0 => w.discard(),
                _ => {
                    sealed.insert(seal(&dir, w)?);
                }
            }
        }
        crate::failpoint("salvage-written");
        for (p, _, _) in rewrite.iter().filter(|(p, _, _)| !sealed.contains(p)) {
            let idx = dir.join(pack::index_file_name(p));
            if idx.exists() {
                dmv_os::remove_file(&idx).at(&idx)?;
                bad_indexes.remove(&idx);
            }
            let path = dir.join(pack::pack_file_name(p));
            dmv_os::remove_file(&path).at(&path)?;
        }
        report.packs_rewritten = rewrite.len();
        // What is left: indexes of packs that are gone, or damaged ones of whole packs (rebuilt from the table of contents).
        for idx in bad_indexes {
            dmv_os::remove_file(&idx).at(&idx)?;
        }
        for p in &packs {
            let (pack_path, idx) = (
                dir.join(pack::pack_file_name(p)),
                dir.join(pack::index_file_name(p)),
            );
            if pack_path.exists() && !idx.exists() {
                let file = File::open(&pack_path).at(&pack_path)?;
                let entries = pack::read_toc(&file, &pack_path)?;
                crate::index::write_index(&idx, &[*p], entries)?;
                report.indexes_rebuilt += 1;
            }
        }
        let midx = dir.join(MULTI_PACK_INDEX);
        if report.packs_rewritten > 0 && midx.exists() {
            dmv_os::remove_file(&midx).at(&midx)?;
        }
        self.reload()?;
        self.index_packs_if_many()?;
        report.lost = damaged.difference(&whole).copied().collect();
        report.lost.sort_by_key(|id| id.0);
        Ok(report)
    }
}

/// The packs (by checksum) and index files of a packs folder.
fn list(dir: &Path) -> StoreResult<(HashSet<ObjectId>, Vec<PathBuf>)> {
    let (mut packs, mut indexes) = (HashSet::new(), Vec::new());
    for entry in std::fs::read_dir(dir).at(dir)? {
        let path = entry.at(dir)?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(id) = name
            .strip_prefix("pack-")
            .and_then(|n| n.strip_suffix(".pack"))
            .and_then(ObjectId::from_hex)
        {
            packs.insert(id);
        } else if (name.starts_with("pack-") && name.ends_with(".idx")) || name == MULTI_PACK_INDEX
        {
            indexes.push(path);
        }
    }
    indexes.sort();
    Ok((packs, indexes))
}

/// The records of a pack found by walking them from its header, each
/// header read as written; the walk stops at the first header that cannot
/// be one (damage, or the table of contents).
fn walk_records(file: &File, path: &Path) -> StoreResult<Vec<Entry>> {
    let len = file.metadata().at(path)?.len();
    let mut found = Vec::new();
    let mut at = HEADER_LEN;
    let mut header = [0u8; RECORD_HEADER_LEN];
    while at + RECORD_HEADER_LEN as u64 <= len {
        if file.read_exact_at(&mut header, at).is_err() {
            break;
        }
        let Some(kind) = ObjectKind::from_u8(header[0]) else {
            break;
        };
        let raw_len = u32::from_le_bytes(header[4..8].try_into().unwrap_or_default());
        let stored_len = u32::from_le_bytes(header[8..12].try_into().unwrap_or_default());
        let id = ObjectId(header[12..44].try_into().unwrap_or_default());
        let e = Entry {
            id,
            kind,
            compression: header[1],
            offset: at,
            raw_len,
            stored_len,
        };
        if e.check_lengths().is_err() || at + e.record_len() as u64 > len {
            break;
        }
        found.push(e);
        at += e.record_len() as u64;
    }
    Ok(found)
}
