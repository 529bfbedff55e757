//! Logs kept as history, merged by union: the refs under
//! [`UNION_LOGS`](crate::ref_names::UNION_LOGS) (the review log of comments
//! and reviews) hold chains of commits of the empty tree, one entry each,
//! in its message. Two replicas that each appended entries are joined by a
//! commit of both tips, which never conflicts: a log's content is the set
//! of entries its history reaches. So every replica and every hub can take
//! entries from any other, as git-annex merges its logs.
//!
//! A join is deterministic (its parents in id order, signed by nobody at
//! the later parent's time), so two replicas joining the same tips make
//! the same commit, and a fetch and a push that cross converge at once.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use dmv_store::object::{encode, Commit, Signature, TreeNode};
use dmv_store::{ObjectId, ObjectKind};

use crate::error::{RepoError, RepoResult};
use crate::repository::handles::History;
use crate::repository::refs::RefUpdate;

/// Bytes of one entry, at most: a comment's text and its anchor fit with room.
pub const MAX_LOG_ENTRY_BYTES: usize = 64 * 1024;

/// Tries of an append or a join against a ref that others move meanwhile.
const RACE_TRIES: usize = 16;

/// One entry of a union log: the commit that records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// The entry's commit: its id, unique for as long as the log lives.
    pub id: ObjectId,
    /// Who wrote it, and when.
    pub author: Signature,
    /// What it says.
    pub text: String,
}

impl History<'_> {
    /// The id of the empty tree, written if it is not stored yet.
    fn empty_tree(&self, session: &mut dmv_store::WriteSession<'_>) -> RepoResult<ObjectId> {
        Ok(session.put_object(ObjectKind::Tree, &encode(&TreeNode::Leaf(Vec::new())))?)
    }

    /// Appends `text` to the log `log` (a full ref name), signed by the
    /// repository's identity, and returns the entry's id.
    pub fn append_to_log(&self, log: &str, text: &str) -> RepoResult<ObjectId> {
        self.append_to_log_as(log, text, self.signer()?)
    }

    /// [`History::append_to_log`], signed by `me`: a server writing for
    /// the user it logged in, not as itself.
    pub fn append_to_log_as(&self, log: &str, text: &str, me: Signature) -> RepoResult<ObjectId> {
        if text.is_empty() || text.len() > MAX_LOG_ENTRY_BYTES {
            return Err(RepoError::Log(format!(
                "a log entry must hold 1 to {MAX_LOG_ENTRY_BYTES} bytes, not {}",
                text.len()
            )));
        }
        for _ in 0..RACE_TRIES {
            let tip = self.refs.get(log)?;
            let mut session = self.store.begin_write()?;
            let tree = self.empty_tree(&mut session)?;
            let commit = Commit {
                tree,
                parents: tip.into_iter().collect(),
                author: me.clone(),
                committer: me.clone(),
                message: text.to_string(),
            };
            let id = session.put_object(ObjectKind::Commit, &encode(&commit))?;
            session.finish()?;
            match self.move_log(log, tip, id) {
                Ok(()) => return Ok(id),
                Err(RepoError::RefChanged { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(self.log_raced(log))
    }

    /// Joins `theirs` (stored here) into the log `log`: a fast-forward when
    /// it already holds ours, nothing when ours holds it, else a join
    /// commit of both. Returns the log's new tip.
    pub fn join_into_log(&self, log: &str, theirs: ObjectId) -> RepoResult<ObjectId> {
        for _ in 0..RACE_TRIES {
            let ours = self.refs.get(log)?;
            let joined = match ours {
                None => theirs,
                Some(ours) => self.join_logs(ours, theirs)?,
            };
            if Some(joined) == ours {
                return Ok(joined);
            }
            match self.move_log(log, ours, joined) {
                Ok(()) => return Ok(joined),
                Err(RepoError::RefChanged { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(self.log_raced(log))
    }

    /// The tip holding both `ours` and `theirs`: one of them when it holds
    /// the other, else their join commit (written here).
    pub fn join_logs(&self, ours: ObjectId, theirs: ObjectId) -> RepoResult<ObjectId> {
        if ours == theirs || self.is_ancestor(&theirs, &ours)? {
            return Ok(ours);
        }
        if self.is_ancestor(&ours, &theirs)? {
            return Ok(theirs);
        }
        let (a, b) = (self.commit(&ours)?, self.commit(&theirs)?);
        let mut parents = vec![ours, theirs];
        parents.sort();
        let nobody = Signature {
            name: String::new(),
            email: String::new(),
            time: a.committer.time.max(b.committer.time),
            tz_minutes: 0,
        };
        let mut session = self.store.begin_write()?;
        let tree = self.empty_tree(&mut session)?;
        let join = Commit {
            tree,
            parents,
            author: nobody.clone(),
            committer: nobody,
            message: String::new(),
        };
        let id = session.put_object(ObjectKind::Commit, &encode(&join))?;
        session.finish()?;
        Ok(id)
    }

    /// The entries the log `log` holds (none when it does not exist),
    /// oldest first (see `in_causal_order`); more than `max_entries` is an
    /// error, as a caller reading into memory gives its budget.
    pub fn log_entries(&self, log: &str, max_entries: usize) -> RepoResult<Vec<LogEntry>> {
        match self.refs.get(log)? {
            None => Ok(Vec::new()),
            Some(tip) => self.entries_from(tip, max_entries),
        }
    }

    /// The entries the log whose tip is `tip` holds (see [`History::log_entries`]).
    pub fn entries_from(&self, tip: ObjectId, max_entries: usize) -> RepoResult<Vec<LogEntry>> {
        let commits = log_commits(tip, max_entries, |id| self.commit(id))?;
        Ok(in_causal_order(commits))
    }

    fn move_log(&self, log: &str, old: Option<ObjectId>, new: ObjectId) -> RepoResult<()> {
        self.update_refs(
            &[RefUpdate {
                name: log.to_string(),
                expected: Some(old),
                new: Some(new),
            }],
            &self.who(),
            "log",
        )
    }

    fn log_raced(&self, log: &str) -> RepoError {
        RepoError::Log(format!(
            "{log} kept moving under {RACE_TRIES} tries; try again"
        ))
    }
}

/// The commits of the log whose tip is `tip` (its entries and its joins),
/// each read by `read`: a repository's store, or a bucket a server fronts.
/// More than `max_entries` entries (or twice as many commits) is an error.
pub fn log_commits(
    tip: ObjectId,
    max_entries: usize,
    mut read: impl FnMut(&ObjectId) -> RepoResult<Commit>,
) -> RepoResult<HashMap<ObjectId, Commit>> {
    // Joins are not entries, but they are commits read: bounded too.
    let max_commits = max_entries.saturating_mul(2).saturating_add(1);
    let mut commits: HashMap<ObjectId, Commit> = HashMap::new();
    let mut todo = vec![tip];
    let mut entries = 0usize;
    while let Some(id) = todo.pop() {
        if commits.contains_key(&id) {
            continue;
        }
        if commits.len() == max_commits {
            return Err(RepoError::Log(format!(
                "the log holds more than {max_commits} commits"
            )));
        }
        let commit = read(&id)?;
        if !commit.message.is_empty() {
            entries += 1;
            if entries > max_entries {
                return Err(RepoError::Log(format!(
                    "the log holds more than {max_entries} entries"
                )));
            }
        }
        todo.extend(commit.parents.iter().filter(|p| !commits.contains_key(p)));
        commits.insert(id, commit);
    }
    Ok(commits)
}

/// The entries of the log whose tip is `tip`, oldest first, each commit
/// read by `read` (see [`log_commits`]).
pub fn log_entries_read_by(
    tip: ObjectId,
    max_entries: usize,
    read: impl FnMut(&ObjectId) -> RepoResult<Commit>,
) -> RepoResult<Vec<LogEntry>> {
    Ok(in_causal_order(log_commits(tip, max_entries, read)?))
}

/// The entries of `commits` (a whole log) oldest first, in an order every
/// replica holding the same entries agrees on: each after every entry its
/// own history holds (a resolve after its comment, whatever the clocks
/// said), and entries neither holds ordered by time, then id. A join is
/// passed as soon as its parents are, so which joins a replica made does
/// not change the order.
fn in_causal_order(mut commits: HashMap<ObjectId, Commit>) -> Vec<LogEntry> {
    let mut waiting: HashMap<ObjectId, usize> = HashMap::new();
    let mut children: HashMap<ObjectId, Vec<ObjectId>> = HashMap::new();
    for (id, c) in &commits {
        waiting.insert(*id, c.parents.len());
        for p in &c.parents {
            children.entry(*p).or_default().push(*id);
        }
    }
    let key = |id: &ObjectId, c: &Commit| {
        let time = if c.message.is_empty() {
            i64::MIN
        } else {
            c.author.time
        };
        Reverse((time, *id))
    };
    let mut ready: BinaryHeap<Reverse<(i64, ObjectId)>> = commits
        .iter()
        .filter(|(_, c)| c.parents.is_empty())
        .map(|(id, c)| key(id, c))
        .collect();
    let mut entries = Vec::new();
    while let Some(Reverse((_, id))) = ready.pop() {
        for child in children.remove(&id).unwrap_or_default() {
            if let (Some(left), Some(c)) = (waiting.get_mut(&child), commits.get(&child)) {
                *left -= 1;
                if *left == 0 {
                    ready.push(key(&child, c));
                }
            }
        }
        let Some(commit) = commits.remove(&id) else {
            continue;
        };
        if !commit.message.is_empty() {
            entries.push(LogEntry {
                id,
                author: commit.author,
                text: commit.message,
            });
        }
    }
    entries
}
