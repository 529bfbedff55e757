//! `archive`: a commit's files (or those under some paths) as one tar
//! stream, written as it is made (each file read a chunk at a time):
//! deliveries of media are archives, often larger than memory or the disk
//! that would hold a copy first.

use std::io::Write;

use dmv_store::object::EntryKind;
use dmv_store::ObjectId;

use crate::error::{RepoError, RepoResult};
use crate::paths::{matches, show};
use crate::repo::Repository;
use crate::tree::flatten_sorted;

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
            tar.append_data(&mut header, &name, self.store.content_reader(&e.id)?).map_err(io)?;
        }
        tar.finish().map_err(io)?;
        Ok(files.len())
    }
}
