//! Integrity checks. `verify_reachable` re-hashes every object reachable from
//! the given roots; `verify_packs` re-hashes every pack and every object in it.

use std::collections::HashSet;
use std::fs::File;

use crate::error::IoContext;
use crate::object::children;
use crate::pack::{self, read_record};
use crate::{ObjectId, Store, StoreError, StoreResult};

#[derive(Debug, Clone, serde::Serialize)]
pub struct Damage {
    /// The damaged object, when one can be named.
    pub object: Option<String>,
    /// The pack or index file holding it.
    pub file: Option<String>,
    pub detail: String,
}

#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct VerifyReport {
    pub objects_checked: u64,
    pub bytes_checked: u64,
    pub packs_checked: u64,
    pub damage: Vec<Damage>,
    /// Leftovers of interrupted writes (harmless; gc removes them).
    pub garbage: Vec<String>,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.damage.is_empty()
    }

    fn record(&mut self, err: StoreError) {
        let (object, file) = match &err {
            StoreError::DamagedObject { id, pack, .. } => (Some(id.to_hex()), Some(pack.clone())),
            StoreError::NotFound { id } => (Some(id.to_hex()), None),
            StoreError::BadEncoding { id, .. } => (Some(id.to_hex()), None),
            StoreError::CorruptFile { path, .. } | StoreError::Io { path, .. } => (None, Some(path.display().to_string())),
            _ => (None, None),
        };
        self.damage.push(Damage { object, file, detail: err.to_string() });
    }
}

impl Store {
    /// Walks from `roots`, reading (and so re-hashing) every object once.
    pub fn verify_reachable(&self, roots: &[ObjectId], progress: &dyn Fn(u64)) -> StoreResult<VerifyReport> {
        let mut report = VerifyReport::default();
        let mut seen: HashSet<ObjectId> = HashSet::new();
        let mut stack: Vec<ObjectId> = roots.to_vec();
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            match self.read(&id) {
                Ok((kind, bytes)) => {
                    report.objects_checked += 1;
                    report.bytes_checked += bytes.len() as u64;
                    progress(bytes.len() as u64);
                    match children(&id, kind, &bytes) {
                        Ok(kids) => stack.extend(kids),
                        Err(e) => report.record(e),
                    }
                }
                Err(e) => report.record(e),
            }
        }
        Ok(report)
    }

    /// Every pack: checksum, table of contents, and every record re-hashed;
    /// every index: checksum, order, and agreement with its pack.
    pub fn verify_packs(&self, progress: &dyn Fn(u64)) -> StoreResult<VerifyReport> {
        let mut report = VerifyReport::default();
        let dir = self.packs_dir().to_path_buf();
        let mut names: Vec<_> = std::fs::read_dir(&dir).at(&dir)?.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        names.sort();
        for path in names {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if name.starts_with("tmp-") || name.contains(".tmp-") {
                report.garbage.push(format!("{name} is a temporary file of an interrupted write"));
            } else if name.ends_with(".pack") && name.starts_with("pack-") {
                report.packs_checked += 1;
                if !path.with_extension("idx").exists() {
                    report.garbage.push(format!("{name} has no index (an interrupted write; gc re-indexes or removes it)"));
                    continue;
                }
                let file = match File::open(&path) {
                    Ok(f) => f,
                    Err(e) => {
                        report.record(StoreError::io(&path, e));
                        continue;
                    }
                };
                if let Err(e) = pack::verify_checksum(&file, &path) {
                    report.record(e);
                }
                match pack::read_toc(&file, &path) {
                    Ok(entries) => {
                        for e in entries {
                            match read_record(&file, &name, &e) {
                                Ok(data) => {
                                    report.objects_checked += 1;
                                    report.bytes_checked += data.len() as u64;
                                    progress(data.len() as u64);
                                }
                                Err(err) => report.record(err),
                            }
                        }
                    }
                    Err(e) => report.record(e),
                }
            } else if name.ends_with(".idx") || name == crate::store::MULTI_PACK_INDEX {
                match crate::index::PackIndex::open(&path).and_then(|i| i.verify().map(|_| i)) {
                    Ok(idx) => {
                        for p in idx.packs() {
                            if !dir.join(pack::pack_file_name(p)).exists() {
                                report.record(StoreError::CorruptFile { path: path.clone(), detail: format!("names missing pack {}", p.short()) });
                            }
                        }
                    }
                    Err(e) => report.record(e),
                }
            }
        }
        Ok(report)
    }
}
