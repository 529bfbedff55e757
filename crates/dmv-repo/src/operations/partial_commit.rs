//! `commit PATH…` as git's `--only`: a commit of HEAD's tree with just
//! those paths as the working tree has them, other staged changes left
//! staged; and `--include`, which stages the paths first and commits all.

use dmv_store::{ObjectId, Progress};

use crate::error::{RepoError, RepoResult};
use crate::pathmap::PathMap;
use crate::paths::matches;
use crate::repository::handles::Merges;
use crate::worktree::dirstate::Dirstate;

impl Merges<'_> {
    /// `commit -o PATH…`: stages the tracked files at or under `specs` as
    /// they are in the working tree (a path no tracked file matches is
    /// refused, as git's "did not match any file(s) known to git"), then
    /// commits HEAD's tree with only those paths changed. Whatever else is
    /// staged stays staged. Refused during a merge, as git refuses a
    /// partial commit then. None: the paths are as HEAD has them.
    ///
    /// The dirstate (with the paths staged) is saved just before HEAD
    /// moves: a kill in between leaves them staged, as an `add` would.
    pub fn commit_only(
        &self,
        specs: &[Vec<u8>],
        message: &str,
        progress: &dyn Progress,
    ) -> RepoResult<Option<ObjectId>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        let head = self.head_commit()?;
        let mut ds = self.load_dirstate()?;
        let mut session = self.store.begin_write()?;
        self.worktree()
            .stage(&mut session, &mut ds, specs, true, progress)?;
        let wanted = |p: &[u8]| specs.iter().any(|s| matches(p, s));
        // The commit's tree: the paths as now staged, every other path as HEAD has it.
        let mut only = Dirstate {
            entries: ds
                .entries
                .iter()
                .map(|(p, e)| (p.to_vec(), e.clone()))
                .collect::<PathMap<_>>(),
            ..Dirstate::default()
        };
        if let Some(h) = head {
            let tree = self.commit(&h)?.tree;
            let (mut added, mut gone) = (Vec::new(), Vec::new());
            self.worktree().each_change_to(
                &mut only,
                &tree,
                &mut |path, tracked, new, entries| {
                    if wanted(path) {
                        return Ok(());
                    }
                    let unknown = |e: crate::history::tree::FlatEntry| {
                        crate::worktree::dirstate::DirEntry::stat_unknown(e.kind, e.id, e.size)
                    };
                    match (tracked, new) {
                        (Some(i), Some(e)) => entries[i] = unknown(e),
                        (Some(i), None) => gone.push(i),
                        (None, Some(e)) => added.push((path.to_vec(), unknown(e))),
                        (None, None) => {}
                    }
                    Ok(())
                },
            )?;
            only.remove_and_insert(gone, added);
        } else {
            let others: Vec<Vec<u8>> = only
                .entries
                .keys()
                .filter(|p| !wanted(p))
                .map(<[u8]>::to_vec)
                .collect();
            for p in others {
                only.entries.remove(&p);
            }
        }
        let tree = only.write_tree(&mut session)?;
        let unchanged = match head {
            Some(h) => self.commit(&h)?.tree == tree,
            None => only.entries.is_empty(),
        };
        if unchanged {
            session.finish()?;
            self.save_dirstate(&ds)?;
            return Ok(None);
        }
        let id =
            self.worktree()
                .commit_on_head(&mut session, tree, head, None, message, Some(&ds))?;
        drop(session);
        self.tidy_store();
        Ok(Some(id))
    }
}
