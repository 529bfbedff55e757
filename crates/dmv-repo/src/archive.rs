//! `archive`: a commit's files (or those under some paths) as one tar
//! stream, written as it is made: deliveries of media are archives, often
//! larger than memory or the disk that would hold a copy first.

use std::io::Write;

use dmv_store::object::EntryKind;
use dmv_store::ObjectId;

use crate::error::{RepoError, RepoResult};
use crate::paths::{matches, show};
use crate::repo::Repository;
use crate::tree::flatten_sorted;

/// Files up to this size are read whole before their entry is written; larger
/// ones stream through a pipe from a thread reading their chunks.
const READ_WHOLE: u64 = 1 << 20;

impl Repository {
    /// Writes `commit`'s files at or under `specs` (all: empty) to `out` as a
    /// tar archive, each path after `prefix`, dated the commit's time.
    /// Refused before anything is written when a file's data is not here.
    /// Returns how many files it holds.
    pub fn archive_tar(&self, commit: &ObjectId, specs: &[Vec<u8>], prefix: &str, out: &mut dyn Write) -> RepoResult<usize> {
        let c = self.commit(commit)?;
        let mut files = flatten_sorted(&self.store, &c.tree)?;
        files.retain(|(p, _)| specs.is_empty() || specs.iter().any(|s| matches(p, s)));
        if let Some(spec) = specs.iter().find(|s| !files.iter().any(|(p, _)| matches(p, s))) {
            return Err(RepoError::NoMatch(show(spec)));
        }
        for (path, e) in &files {
            if self.is_absent(e)? {
                return Err(RepoError::ArchiveDataAbsent { path: show(path) });
            }
            self.store.check_content_present(&e.id).map_err(|reason| RepoError::CheckoutRefused { path: show(path), reason })?;
        }
        let mut tar = tar::Builder::new(out);
        let io = |e: std::io::Error| RepoError::Output { detail: e.to_string() };
        for (path, e) in &files {
            let name = format!("{prefix}{}", String::from_utf8_lossy(path));
            let mut header = tar::Header::new_gnu();
            header.set_mtime(c.committer.time.max(0) as u64);
            header.set_uid(0);
            header.set_gid(0);
            if e.kind == EntryKind::Symlink {
                let mut target = Vec::new();
                self.store.write_content(&e.id, &mut target)?;
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                tar.append_link(&mut header, &name, std::path::Path::new(&*String::from_utf8_lossy(&target))).map_err(io)?;
                continue;
            }
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if e.kind == EntryKind::Executable { 0o755 } else { 0o644 });
            header.set_size(e.size);
            if e.size <= READ_WHOLE {
                let mut bytes = Vec::with_capacity(e.size as usize);
                self.store.write_content(&e.id, &mut bytes)?;
                tar.append_data(&mut header, &name, bytes.as_slice()).map_err(io)?;
                continue;
            }
            let (reader, mut writer) = std::io::pipe().map_err(io)?;
            let (written, appended) = std::thread::scope(|s| {
                let feeder = s.spawn(move || self.store.write_content(&e.id, &mut writer));
                let mut reader = reader;
                let appended = tar.append_data(&mut header, &name, &mut reader);
                // Closed before waiting: a feeder blocked on a full pipe then stops.
                drop(reader);
                (feeder.join(), appended)
            });
            match written {
                Ok(result) => {
                    result?;
                }
                Err(_) => return Err(RepoError::Output { detail: format!("reading {} stopped unexpectedly", show(path)) }),
            }
            appended.map_err(io)?;
        }
        tar.finish().map_err(io)?;
        Ok(files.len())
    }
}
