use std::collections::{BinaryHeap, HashSet};

use dmv_store::object::{encode, Commit};
use dmv_store::{ObjectId, ObjectKind};
use serde::Serialize;

use crate::{RepoResult, Repository};

#[derive(Clone, Debug, Serialize)]
pub struct CommitInfo {
    pub id: ObjectId,
    #[serde(flatten)]
    pub commit: Commit,
}

/// Commits reachable from the starting points, newest committer time first.
pub struct LogWalk<'r> {
    repo: &'r Repository,
    heap: BinaryHeap<(i64, ObjectId)>,
    seen: HashSet<ObjectId>,
}

impl<'r> LogWalk<'r> {
    pub fn new(repo: &'r Repository, starts: &[ObjectId]) -> RepoResult<LogWalk<'r>> {
        let mut walk = LogWalk { repo, heap: BinaryHeap::new(), seen: HashSet::new() };
        for s in starts {
            walk.push(*s)?;
        }
        Ok(walk)
    }

    fn push(&mut self, id: ObjectId) -> RepoResult<()> {
        if self.seen.insert(id) {
            let c = self.repo.commit(&id)?;
            self.heap.push((c.committer.time, id));
        }
        Ok(())
    }
}

impl Iterator for LogWalk<'_> {
    type Item = RepoResult<CommitInfo>;
    fn next(&mut self) -> Option<Self::Item> {
        let (_, id) = self.heap.pop()?;
        let commit = match self.repo.commit(&id) {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        for p in &commit.parents {
            if let Err(e) = self.push(*p) {
                return Some(Err(e));
            }
        }
        Some(Ok(CommitInfo { id, commit }))
    }
}

impl Repository {
    pub fn write_commit(&self, session: &mut dmv_store::WriteSession<'_>, tree: ObjectId, parents: Vec<ObjectId>, message: &str) -> RepoResult<ObjectId> {
        let me = self.identity();
        let commit = Commit { tree, parents, author: me.clone(), committer: me, message: message.to_string() };
        Ok(session.put_object(ObjectKind::Commit, &encode(&commit))?)
    }
}
