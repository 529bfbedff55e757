//! The rules a hub keeps for review: a protected branch (`review.protect`
//! in the hub's config) moves only by landing a review that has the
//! approvals it asks for, whatever route the move takes (a push, a
//! browser's upload, a merge); and an approval reaching the hub must be
//! its pusher's own, so a name in the log is not taken on trust.

use std::collections::HashSet;

use dmv_repo::ref_names::{branch_ref, REVIEW_LOG};
use dmv_repo::store::ObjectId;
use dmv_repo::Repository;

use crate::board::{Board, Review, ReviewState, DEFAULT_MAX_EVENTS};
use crate::error::{ReviewError, ReviewResult};
use crate::event::Event;

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
    repo: &Repository,
    branch: &str,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
) -> ReviewResult<()> {
    let Some(&required) = repo.config.protected_branches.get(branch) else {
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
    let board = Board::read(repo, DEFAULT_MAX_EVENTS)?;
    let parents = repo.commit(&new)?.parents;
    let mut short_of = None;
    for review in board.reviews.iter().filter(|r| r.into == branch) {
        if !matches!(review.state, ReviewState::Open) && review.state != ReviewState::Landed(new) {
            continue;
        }
        let Some(tip) = repo.refs.get(&branch_ref(&review.branch))? else {
            continue;
        };
        let lands = new == tip || old.is_some_and(|o| parents == [o, tip]);
        if !lands {
            continue;
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
    repo: &Repository,
    old: Option<ObjectId>,
    new: ObjectId,
    pusher: Option<&str>,
) -> ReviewResult<()> {
    // Approvals matter to a hub only where they open a protected branch;
    // elsewhere they are advice, and replicas pass each other's on.
    if repo.config.protected_branches.is_empty() {
        return Ok(());
    }
    let history = repo.history();
    let known: HashSet<ObjectId> = match old {
        Some(old) => history
            .entries_from(old, DEFAULT_MAX_EVENTS)?
            .into_iter()
            .map(|e| e.id)
            .collect(),
        None => HashSet::new(),
    };
    for entry in history.entries_from(new, DEFAULT_MAX_EVENTS)? {
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
