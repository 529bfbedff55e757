//! `archive`: a commit's files (or those under some paths) as one tar or
//! zip stream, written as it is made (each file read a chunk at a time):
//! deliveries of media are archives, often larger than memory or the disk
//! that would hold a copy first.

use crate::repository::handles::History;
use std::io::Write;

use dmv_store::object::EntryKind;
use dmv_store::ObjectId;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{tree_reader, FilesInOrder, FlatEntry};
use crate::paths::{matches, may_hold, show};

/// The kinds of archive `archive` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveFormat {
    /// A tar stream (GNU headers), not compressed.
    Tar,
    /// Stored, not compressed (media does not compress), Zip64 where a
    /// file needs it, streamed with data descriptors.
    Zip,
}

impl History<'_> {
    /// `commit`'s files at or under `specs` (all: empty), in path order:
    /// what [`History::archive`] writes, and what a partial replica
    /// fetches before it does. A spec that matches nothing is refused.
    pub fn files_to_archive(
        &self,
        commit: &ObjectId,
        specs: &[Vec<u8>],
    ) -> RepoResult<Vec<(Vec<u8>, FlatEntry)>> {
        let c = self.commit(commit)?;
        // Only the folders that may hold what is asked are read: a zip of one
        // folder of a repository of 100,000 files held all 100,000 paths.
        let read = tree_reader(&self.store);
        let enter = |dir: &[u8]| specs.is_empty() || specs.iter().any(|s| may_hold(dir, s));
        let mut files = Vec::new();
        for file in FilesInOrder::entering(&read, &c.tree, &enter)? {
            let (path, e) = file?;
            if specs.is_empty() || specs.iter().any(|s| matches(&path, s)) {
                files.push((path, e));
            }
        }
        if let Some(spec) = specs
            .iter()
            .find(|s| !files.iter().any(|(p, _)| matches(p, s)))
        {
            return Err(RepoError::NoMatch(show(spec)));
        }
        Ok(files)
    }

    /// Writes `commit`'s files at or under `specs` (all: empty) to `out` as an
    /// archive, each path after `prefix`, dated the commit's time. Refused
    /// before anything is written when a file's data is not here. Returns
    /// how many files it holds.
    pub fn archive(
        &self,
        commit: &ObjectId,
        specs: &[Vec<u8>],
        prefix: &str,
        format: ArchiveFormat,
        out: &mut dyn Write,
    ) -> RepoResult<usize> {
        let c = self.commit(commit)?;
        let files = self.files_to_archive(commit, specs)?;
        for (path, e) in &files {
            if self.copies().is_absent(e)? {
                return Err(RepoError::DataAbsent { path: show(path) });
            }
            self.store.check_content_present(&e.id).map_err(|reason| {
                RepoError::CheckoutRefused {
                    path: show(path),
                    reason,
                }
            })?;
        }
        let named = files
            .iter()
            .map(|(path, e)| (format!("{prefix}{}", String::from_utf8_lossy(path)), e));
        match format {
            ArchiveFormat::Tar => self.write_tar(named, c.committer.time, out)?,
            ArchiveFormat::Zip => self.write_zip(named, c.committer.time, out)?,
        }
        Ok(files.len())
    }

    fn symlink_target(&self, e: &FlatEntry) -> RepoResult<String> {
        let mut target = Vec::new();
        self.store.write_content(&e.id, &mut target)?;
        Ok(String::from_utf8_lossy(&target).into_owned())
    }

    fn write_tar<'e>(
        &self,
        files: impl Iterator<Item = (String, &'e FlatEntry)>,
        time: i64,
        out: &mut dyn Write,
    ) -> RepoResult<()> {
        let mut tar = tar::Builder::new(out);
        for (name, e) in files {
            let mut header = tar::Header::new_gnu();
            header.set_mtime(time.max(0) as u64);
            header.set_uid(0);
            header.set_gid(0);
            if e.kind == EntryKind::Symlink {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                tar.append_link(
                    &mut header,
                    &name,
                    std::path::Path::new(&self.symlink_target(e)?),
                )
                .map_err(output)?;
                continue;
            }
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if e.kind == EntryKind::Executable {
                0o755
            } else {
                0o644
            });
            header.set_size(e.size);
            tar.append_data(&mut header, &name, self.store.content_reader(&e.id)?)
                .map_err(output)?;
        }
        tar.finish().map_err(output)
    }

    fn write_zip<'e>(
        &self,
        files: impl Iterator<Item = (String, &'e FlatEntry)>,
        time: i64,
        out: &mut dyn Write,
    ) -> RepoResult<()> {
        let (y, m, d, h, mi, s) = crate::time::civil(time);
        // Zip dates run from 1980 to 2107: a commit outside them is dated 1980.
        let date = u16::try_from(y)
            .ok()
            .and_then(|y| zip::DateTime::from_date_and_time(y, m, d, h, mi, s).ok())
            .unwrap_or_default();
        let mut zip = zip::ZipWriter::new_stream(out);
        let zipped = |e: zip::result::ZipError| RepoError::Output {
            detail: e.to_string(),
        };
        for (name, e) in files {
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored)
                .last_modified_time(date);
            if e.kind == EntryKind::Symlink {
                zip.add_symlink(name, self.symlink_target(e)?, options)
                    .map_err(zipped)?;
                continue;
            }
            let mode = if e.kind == EntryKind::Executable {
                0o755
            } else {
                0o644
            };
            zip.start_file(
                name,
                options
                    .unix_permissions(mode)
                    .large_file(e.size >= u32::MAX as u64),
            )
            .map_err(zipped)?;
            std::io::copy(&mut self.store.content_reader(&e.id)?, &mut zip).map_err(output)?;
        }
        zip.finish().map_err(zipped)?;
        Ok(())
    }
}

fn output(e: std::io::Error) -> RepoError {
    RepoError::Output {
        detail: e.to_string(),
    }
}
