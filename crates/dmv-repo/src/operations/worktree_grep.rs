//! `grep` over the working tree: the tracked files (those the staging
//! area lists) as they are on disk, in path order, with history/grep.rs's
//! matcher. A tracked file deleted from the disk is passed over, as git
//! does; one whose data is not in this replica is counted, not searched.

use crate::error::{IoContext, RepoResult};
use crate::history::grep::{search_file, wanted, GrepRequest, GrepSink, GrepSummary};
use crate::repository::handles::History;

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
            search_file(request, path, &mut file, &mut summary, sink)?;
        }
        Ok(summary)
    }
}
