//! What a replica's slice lets go. A slice (`paths:`, `recent:N`, `meta`) is
//! a retention policy as well as a fetch rule: file versions that no commit
//! the slice keeps names under a path it keeps are unwanted here, and
//! `drop --unwanted` frees those that are here once other copies are
//! confirmed (the confirming is dmv-sync's).

use crate::repository::handles::Copies;
use std::collections::{BTreeMap, HashSet};

use dmv_store::ObjectId;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::flatten;
use crate::ref_names::BRANCHES;

impl Copies<'_> {
    /// Every file version of the history the refs and HEAD reach, each with
    /// one of its paths (the first met, newest commits first).
    pub fn file_versions(&self) -> RepoResult<BTreeMap<ObjectId, Vec<u8>>> {
        let mut versions = BTreeMap::new();
        self.each_file_version(&|_| true, &mut |_, path, id| {
            versions.entry(id).or_insert_with(|| path.to_vec());
        })?;
        Ok(versions)
    }

    /// The file versions whose data is here and that this replica's slice
    /// does not keep, each with a path it has in history. A full replica wants everything.
    pub fn unwanted_here(&self) -> RepoResult<Vec<(Vec<u8>, ObjectId)>> {
        let slice = &self.config.slice;
        if slice.is_full() {
            return Ok(Vec::new());
        }
        let filter = slice
            .paths_filter()
            .map_err(|detail| RepoError::BadSetting {
                key: "slice".into(),
                detail,
            })?;
        let kept_commits = match slice.recent() {
            Some(n) => Some(self.recent_commits(n)?),
            None => None,
        };
        let mut kept = HashSet::new();
        let mut others = BTreeMap::new();
        let keeps_commit = |c: &ObjectId| kept_commits.as_ref().is_none_or(|k| k.contains(c));
        self.each_file_version(&keeps_commit, &mut |commit_kept, path, id| {
            if commit_kept && filter.keeps(path) {
                kept.insert(id);
            } else {
                others.entry(id).or_insert_with(|| path.to_vec());
            }
        })?;
        let mut unwanted = Vec::new();
        for (id, path) in others {
            if !kept.contains(&id) && self.has_data(&id)? {
                unwanted.push((path, id));
            }
        }
        Ok(unwanted)
    }

    /// The last `n` commits of each branch and of HEAD: what `recent:N` keeps.
    pub(crate) fn recent_commits(&self, n: usize) -> RepoResult<HashSet<ObjectId>> {
        let mut tips: Vec<ObjectId> = self
            .refs
            .list(BRANCHES)?
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        tips.extend(self.head_commit()?);
        let mut near = HashSet::new();
        for tip in tips {
            for c in self.history().walk(&[tip])?.take(n) {
                near.insert(c?.id);
            }
        }
        Ok(near)
    }

    /// Calls `each(kept, path, id)` for every file of every commit the refs
    /// and HEAD reach, `kept` saying whether `kept_commit` holds for that
    /// commit; a tree several commits share is read once (per answer).
    fn each_file_version(
        &self,
        kept_commit: &dyn Fn(&ObjectId) -> bool,
        each: &mut dyn FnMut(bool, &[u8], ObjectId),
    ) -> RepoResult<()> {
        let mut tips: Vec<ObjectId> = self.refs.list("")?.into_iter().map(|(_, id)| id).collect();
        tips.extend(self.head_commit()?);
        tips.sort();
        tips.dedup();
        // Tags may name other things than commits; only commits (an annotated tag's among them) are walked.
        let mut commits_tips = Vec::new();
        for t in tips {
            if self.store.locate(&t)?.is_some_and(|l| {
                matches!(
                    l.entry.kind,
                    dmv_store::ObjectKind::Commit | dmv_store::ObjectKind::Tag
                )
            }) {
                commits_tips.push(t);
            }
        }
        let mut seen = HashSet::new();
        for commit in self.history().commits_between(&commits_tips, &[])? {
            let tree = self.commit(&commit)?.tree;
            let kept = kept_commit(&commit);
            if !seen.insert((tree, kept)) {
                continue;
            }
            for (path, e) in flatten(&self.store, &tree)? {
                if e.kind.is_file() {
                    each(kept, &path, e.id);
                }
            }
        }
        Ok(())
    }
}
