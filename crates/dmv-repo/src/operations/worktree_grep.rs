//! What git's text commands read of the working tree: `grep` over the
//! tracked files (those the staging area lists) as they are on disk, in
//! path order, with history/grep.rs's matcher (a tracked file deleted from
//! the disk is passed over, as git does; one whose data is not in this
//! replica is counted, not searched); `blame` of the working file, its
//! lines not in HEAD's version said to be not committed yet; and the
//! `.mailmap` at the top of the working tree (HEAD's in a bare replica).

use std::io::Read;

use dmv_store::object::EntryKind;

use crate::error::{IoContext, RepoError, RepoResult};
use crate::history::blame::{Blame, MAX_BLAME_BYTES};
use crate::history::grep::{search_file, wanted, GrepRequest, GrepSink, GrepSummary};
use crate::history::mailmap::{Mailmap, MAX_MAILMAP_BYTES};
use crate::history::tree::lookup;
use crate::paths::show;
use crate::repository::handles::History;

/// The mailmap's name at the top of the tree.
const MAILMAP: &[u8] = b".mailmap";

impl History<'_> {
    /// Searches the working tree's tracked regular files, telling `sink`
    /// each matching line and file.
    pub fn grep_worktree(
        &self,
        request: &GrepRequest<'_>,
        sink: &mut GrepSink<'_>,
    ) -> RepoResult<GrepSummary> {
        let dirstate = self.load_dirstate()?;
        let mut summary = GrepSummary::default();
        for (path, entry) in dirstate.entries.iter() {
            if !entry.kind.is_file() || !wanted(request.paths, path) {
                continue;
            }
            if entry.is_absent() {
                summary.absent += 1;
                continue;
            }
            let on_disk = self.abs_path(path);
            let mut file = match std::fs::File::open(&on_disk) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).at(&on_disk),
            };
            if search_file(request, path, &mut file, &mut summary, sink)? {
                break;
            }
        }
        Ok(summary)
    }

    /// Each line of the working file `path` with the commit that last
    /// changed it, as `git blame FILE` says it: lines not in HEAD's
    /// version are not committed yet. The file must be in HEAD or tracked;
    /// it is read whole, up to [`MAX_BLAME_BYTES`].
    pub fn blame_worktree(&self, path: &[u8]) -> RepoResult<Blame> {
        self.require_worktree()?;
        let in_head = match self.head_commit()? {
            Some(h) => lookup(&self.store, &self.commit(&h)?.tree, path)?,
            None => None,
        };
        let tracked = match self.load_dirstate()?.entries.get(path) {
            // Its data is not in this partial replica: the file is as HEAD has it.
            Some(e) if e.is_absent() && in_head.is_some() => return self.blame("HEAD", path),
            Some(_) => true,
            None => false,
        };
        match in_head {
            Some(e) if e.kind == EntryKind::Dir => {
                return Err(RepoError::IsAFolder { path: show(path) })
            }
            None if !tracked => {
                return Err(RepoError::PathNotInRevision {
                    path: show(path),
                    rev: "HEAD".into(),
                })
            }
            _ => {}
        }
        let on_disk = self.abs_path(path);
        let size = std::fs::metadata(&on_disk).at(&on_disk)?.len();
        if size > MAX_BLAME_BYTES {
            return Err(RepoError::TooLargeToRead {
                path: show(path),
                size,
                limit: MAX_BLAME_BYTES,
            });
        }
        let mut text = Vec::with_capacity(size as usize);
        std::fs::File::open(&on_disk)
            .at(&on_disk)?
            .take(MAX_BLAME_BYTES + 1)
            .read_to_end(&mut text)
            .at(&on_disk)?;
        if text.len() as u64 > MAX_BLAME_BYTES {
            return Err(RepoError::TooLargeToRead {
                path: show(path),
                size: text.len() as u64,
                limit: MAX_BLAME_BYTES,
            });
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.blame_uncommitted(path, text, now)
    }

    /// The names and emails people go by, from the `.mailmap` at the top
    /// of the working tree, or HEAD's in a bare replica (git's
    /// `mailmap.blob` default there); an empty map when there is none.
    /// One larger than [`MAX_MAILMAP_BYTES`] (or with too many lines) is
    /// not read: the map is empty and says why.
    pub fn mailmap(&self) -> RepoResult<Mailmap> {
        let source = show(MAILMAP);
        let mut text = Vec::new();
        if self.config.bare {
            let Some(head) = self.head_commit()? else {
                return Ok(Mailmap::default());
            };
            let tree = self.commit(&head)?.tree;
            let Some(e) = lookup(&self.store, &tree, MAILMAP)?.filter(|e| e.kind.is_file()) else {
                return Ok(Mailmap::default());
            };
            if e.size > MAX_MAILMAP_BYTES {
                return Ok(too_big(&source, e.size));
            }
            if self.copies().is_absent(&e)? {
                return Ok(Mailmap::refused(format!(
                    "{source}'s data is not in this replica: it was not read"
                )));
            }
            self.store.write_content(&e.id, &mut text)?;
        } else {
            let on_disk = self.abs_path(MAILMAP);
            let file = match std::fs::File::open(&on_disk) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Mailmap::default()),
                Err(e) => return Err(e).at(&on_disk),
            };
            let size = file.metadata().at(&on_disk)?.len();
            if size > MAX_MAILMAP_BYTES {
                return Ok(too_big(&source, size));
            }
            file.take(MAX_MAILMAP_BYTES + 1)
                .read_to_end(&mut text)
                .at(&on_disk)?;
        }
        Ok(Mailmap::parse(&text, &source))
    }
}

/// A map not read because the file is `size` bytes.
fn too_big(source: &str, size: u64) -> Mailmap {
    Mailmap::refused(format!(
        "{source} is {size} bytes, more than the {MAX_MAILMAP_BYTES} a mailmap may have: it was not read"
    ))
}
