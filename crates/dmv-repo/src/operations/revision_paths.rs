//! `REV:PATH`, as `cat`, `ls-tree` and `rev-parse` name a file version:
//! the entry at a path in a revision's tree, or with no revision (`:PATH`)
//! the staged version, as git's does.

use crate::repository::handles::History;
use dmv_store::ObjectId;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{lookup, FlatEntry};

impl History<'_> {
    /// What `REV:PATH` names: the commit `rev` resolves to and the entry at
    /// `path` in it (its root folder when empty). An empty `rev` names the
    /// staged version, with HEAD's commit (if any) to fetch its data from.
    pub fn entry_at(&self, rev: &str, path: &str) -> RepoResult<(Option<ObjectId>, FlatEntry)> {
        let path = path.trim_matches('/');
        if rev.is_empty() {
            let staged = self
                .load_dirstate()?
                .entries
                .get(path.as_bytes())
                .map(|e| FlatEntry {
                    kind: e.kind,
                    id: e.id,
                    size: e.size,
                });
            let entry = staged.ok_or_else(|| RepoError::PathNotStaged {
                path: path.to_string(),
            })?;
            return Ok((self.head_commit()?, entry));
        }
        let commit = self.resolve(rev)?;
        let entry = lookup(&self.store, &self.commit(&commit)?.tree, path.as_bytes())?;
        Ok((
            Some(commit),
            entry.ok_or_else(|| RepoError::PathNotInRevision {
                path: path.to_string(),
                rev: rev.to_string(),
            })?,
        ))
    }
}
