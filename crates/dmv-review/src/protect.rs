//! The rules a hub keeps for review: a protected branch (`review.protect`
//! in a directory hub's config, `protect` in a server's entry of a bucket)
//! moves only by landing a review that has the approvals it asks for,
//! whatever route the move takes (a push, a browser's upload, a merge);
//! and an approval reaching the hub must be its pusher's own, so a name in
//! the log is not taken on trust. The rules read a hub through
//! [`ReviewedHub`]: a repository on the server's disk, or a bucket read an
//! object at a time.

use std::collections::{BTreeMap, HashMap, HashSet};

use dmv_repo::ref_names::{branch_ref, REVIEW_LOG};
use dmv_repo::store::object::Commit;
use dmv_repo::store::{ObjectId, ObjectKind};
use dmv_repo::{
    first_change_of_its_own, log_commits, log_entries_read_by, GrantObjects, LogEntry, RepoObjects,
    RepoResult, Repository,
};

use crate::board::{Board, Review, ReviewState, DEFAULT_MAX_EVENTS};
use crate::error::{ReviewError, ReviewResult};
use crate::event::Event;

/// What the review rules read of a hub: its rules and refs, and its
/// commits and trees (as the rules of grants read them).
pub trait ReviewedHub: GrantObjects {
    /// The protected branches (short names), each with the approvals it asks.
    fn protected_branches(&self) -> &BTreeMap<String, u32>;
    /// The ref `name` (a full name), None when absent.
    fn ref_tip(&self, name: &str) -> RepoResult<Option<ObjectId>>;
}

/// A hub that is a repository on the server's disk.
pub struct HubRepo<'r>(pub &'r Repository);

impl GrantObjects for HubRepo<'_> {
    fn commit(&self, id: &ObjectId) -> RepoResult<(ObjectId, Commit)> {
        RepoObjects(self.0).commit(id)
    }

    fn tree_node(&self, id: &ObjectId) -> RepoResult<dmv_repo::store::object::TreeNode> {
        RepoObjects(self.0).tree_node(id)
    }
}

impl ReviewedHub for HubRepo<'_> {
    fn protected_branches(&self) -> &BTreeMap<String, u32> {
        &self.0.config.protected_branches
    }

    fn ref_tip(&self, name: &str) -> RepoResult<Option<ObjectId>> {
        self.0.refs.get(name)
    }
}

/// A log commit read as itself: a review log holds no tags.
fn log_commit(hub: &impl ReviewedHub, id: &ObjectId) -> RepoResult<Commit> {
    let (found, commit) = hub.commit(id)?;
    if found != *id {
        return Err(dmv_repo::RepoError::MalformedObject {
            kind: ObjectKind::Commit.name(),
            id: *id,
            detail: "a log entry must be a commit".into(),
        });
    }
    Ok(commit)
}

/// The entries of a hub's review log at `new`, oldest first, and the ids
/// of those it held at `old`. Each commit is read from the hub once: the
/// walk of `new` takes what the walk of `old` read (a bucket answers one
/// object per request, and a log moves by a few entries at a time).
pub(crate) fn log_after_move(
    hub: &impl ReviewedHub,
    old: Option<ObjectId>,
    new: ObjectId,
) -> ReviewResult<(Vec<LogEntry>, HashSet<ObjectId>)> {
    let held = match old {
        Some(old) => log_commits(old, DEFAULT_MAX_EVENTS, |id| log_commit(hub, id))?,
        None => HashMap::new(),
    };
    let entries = log_entries_read_by(new, DEFAULT_MAX_EVENTS, |id| match held.get(id) {
        Some(commit) => Ok(commit.clone()),
        None => log_commit(hub, id),
    })?;
    Ok((entries, held.into_keys().collect()))
}

/// The approvals of `review` that count at its branch's commit `tip`: each
/// person once, a named reviewer when it names any, never its author.
pub fn counted_approvals(review: &Review, tip: &ObjectId) -> usize {
    let mut people = HashSet::new();
    for a in review.approvals_at(tip) {
        let asked = review.reviewers.is_empty() || review.reviewers.contains(&a.by.name);
        if asked && a.by.name != review.by.name {
            people.insert(a.by.name.as_str());
        }
    }
    people.len()
}

/// Refuses moving branch `branch` of the hub `repo` from `old` to `new`
/// when the hub protects it and the move does not land a review: `new`
/// must be the commit of a review's branch (on the hub) for `branch` that
/// has the approvals the rule asks for, or a merge of exactly `old` and
/// that commit. A protected branch is never deleted.
pub fn refuse_unreviewed_move(
    hub: &impl ReviewedHub,
    branch: &str,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
) -> ReviewResult<()> {
    let Some(&required) = hub.protected_branches().get(branch) else {
        return Ok(());
    };
    let required = required as usize;
    let refuse = |why: String| {
        Err(ReviewError::Refused(format!(
            "{branch} is protected: it moves only by landing a review with {required} approval(s) of its branch's commit, and {why}"
        )))
    };
    let Some(new) = new else {
        return refuse("this would delete it".into());
    };
    let board = match hub.ref_tip(REVIEW_LOG)? {
        Some(tip) => Board::from_entries(log_entries_read_by(tip, DEFAULT_MAX_EVENTS, |id| {
            log_commit(hub, id)
        })?),
        None => Board::default(),
    };
    let parents = hub.commit(&new)?.1.parents;
    let mut short_of = None;
    for review in board.reviews.iter().filter(|r| r.into == branch) {
        if !matches!(review.state, ReviewState::Open) && review.state != ReviewState::Landed(new) {
            continue;
        }
        let Some(tip) = hub.ref_tip(&branch_ref(&review.branch))? else {
            continue;
        };
        let merged = old.is_some_and(|o| parents == [o, tip]);
        if new != tip && !merged {
            continue;
        }
        // A landing merge holds what a clean merge would: nothing unapproved.
        if merged {
            if let Some(path) = first_change_of_its_own(hub, &new)? {
                return refuse(format!(
                    "the merge {} of review {}'s branch changes {path} itself (merge {branch} into {} instead, and have that approved)",
                    new.short(),
                    review.id.short(),
                    review.branch
                ));
            }
        }
        let counted = counted_approvals(review, &tip);
        if counted >= required {
            return Ok(());
        }
        short_of = Some((review.id, counted));
    }
    match short_of {
        Some((id, counted)) => refuse(format!("review {} has {counted}", id.short())),
        None => refuse(format!("no review of a branch here lands {}", new.short())),
    }
}

/// Refuses a move of the review log of a hub that protects a branch from
/// `old` to `new` that brings an approval written under a name other than
/// `pusher`'s (an unknown pusher may bring none): the hub vouches for the
/// approvals that open its protected branches.
pub fn refuse_approvals_of_others(
    hub: &impl ReviewedHub,
    old: Option<ObjectId>,
    new: ObjectId,
    pusher: Option<&str>,
) -> ReviewResult<()> {
    // Approvals matter to a hub only where they open a protected branch;
    // elsewhere they are advice, and replicas pass each other's on.
    if hub.protected_branches().is_empty() {
        return Ok(());
    }
    let (entries, known) = log_after_move(hub, old, new)?;
    for entry in entries {
        if known.contains(&entry.id) {
            continue;
        }
        // An entry that does not read is skipped by every reader: it approves nothing.
        if let Ok(Some(Event::Approve { .. })) = Event::decode(&entry.text) {
            if pusher != Some(entry.author.name.as_str()) {
                return Err(ReviewError::Refused(format!(
                    "{REVIEW_LOG} brings an approval by {}, which only they can send{}",
                    entry.author.name,
                    match pusher {
                        Some(p) => format!(" (this push is {p}'s)"),
                        None => " (this push has no user name)".into(),
                    }
                )));
            }
        }
    }
    Ok(())
}
