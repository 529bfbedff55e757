//! Writing to the review log, each step checked against the board first:
//! comments and replies on a version of a file, resolving and reopening,
//! opening a review, approving it, landing or closing it.

use dmv_repo::ref_names::{branch_ref, REMOTE_BRANCHES, REVIEW_LOG};
use dmv_repo::store::object::Signature;
use dmv_repo::store::ObjectId;
use dmv_repo::tree::lookup;
use dmv_repo::Repository;

use crate::anchor::Anchor;
use crate::board::{Board, Review, ReviewState};
use crate::error::{ReviewError, ReviewResult};
use crate::event::{Event, Pinned, MAX_NAME_BYTES};

/// Appends `event`, checked, to the review log; returns its id.
fn record(repo: &Repository, event: &Event) -> ReviewResult<ObjectId> {
    record_as(repo, event, repo.signer()?)
}

/// [`record`], signed by `me`.
fn record_as(repo: &Repository, event: &Event, me: Signature) -> ReviewResult<ObjectId> {
    Ok(repo
        .history()
        .append_to_log_as(REVIEW_LOG, &event.encode()?, me)?)
}

/// Who writes an event for someone else (a server for the user logged
/// in): signed with their name and no email address, now.
fn signed_by(by: &str) -> ReviewResult<Signature> {
    if by.is_empty()
        || by.len() > MAX_NAME_BYTES
        || by.chars().any(|c| c.is_control() || c == '<' || c == '>')
    {
        return Err(ReviewError::Invalid(format!(
            "a name signing an event must be 1 to {MAX_NAME_BYTES} bytes without control characters or angle brackets"
        )));
    }
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    Ok(Signature {
        name: by.to_string(),
        email: String::new(),
        time,
        tz_minutes: 0,
    })
}

/// The version of `path` in commit `commit`: refused when it holds no file there.
pub fn pin(repo: &Repository, commit: ObjectId, path: &str) -> ReviewResult<Pinned> {
    let path = path.trim_matches('/').to_string();
    let tree = repo.commit(&commit)?.tree;
    match lookup(&repo.store, &tree, path.as_bytes())? {
        Some(entry) if entry.kind.is_file() => Ok(Pinned {
            path,
            commit,
            version: entry.id,
        }),
        _ => Err(ReviewError::NotFound(format!(
            "{path} is not a file in {}",
            commit.short()
        ))),
    }
}

fn comment_event(file: Pinned, at: Anchor, text: &str) -> Event {
    Event::Comment {
        file,
        at,
        text: text.to_string(),
        reply_to: None,
    }
}

/// Comments `text` on `file` at `at`; returns the comment's id.
pub fn comment(repo: &Repository, file: Pinned, at: Anchor, text: &str) -> ReviewResult<ObjectId> {
    record(repo, &comment_event(file, at, text))
}

/// [`comment`], signed by the person named `by` (a server writing for
/// the user logged in).
pub fn comment_as(
    repo: &Repository,
    by: &str,
    file: Pinned,
    at: Anchor,
    text: &str,
) -> ReviewResult<ObjectId> {
    record_as(repo, &comment_event(file, at, text), signed_by(by)?)
}

fn reply_event(board: &Board, to: &str, text: &str) -> ReviewResult<Event> {
    let parent = board.comment(to)?;
    Ok(Event::Comment {
        file: parent.file.clone(),
        at: parent.at,
        text: text.to_string(),
        reply_to: Some(parent.id),
    })
}

/// Replies `text` to the comment `to` (an id's prefix); returns the reply's id.
pub fn reply(repo: &Repository, board: &Board, to: &str, text: &str) -> ReviewResult<ObjectId> {
    record(repo, &reply_event(board, to, text)?)
}

/// [`reply`], signed by the person named `by`.
pub fn reply_as(
    repo: &Repository,
    by: &str,
    board: &Board,
    to: &str,
    text: &str,
) -> ReviewResult<ObjectId> {
    record_as(repo, &reply_event(board, to, text)?, signed_by(by)?)
}

/// Marks the comment `id` (a prefix) resolved, or reopens it; returns its full id.
pub fn resolve(
    repo: &Repository,
    board: &Board,
    id: &str,
    resolved: bool,
) -> ReviewResult<ObjectId> {
    let comment = board.comment(id)?.id;
    record(repo, &Event::Resolve { comment, resolved })?;
    Ok(comment)
}

/// [`resolve`], signed by the person named `by`.
pub fn resolve_as(
    repo: &Repository,
    by: &str,
    board: &Board,
    id: &str,
    resolved: bool,
) -> ReviewResult<ObjectId> {
    let comment = board.comment(id)?.id;
    record_as(repo, &Event::Resolve { comment, resolved }, signed_by(by)?)?;
    Ok(comment)
}

/// Opens a review of branch `branch` for `into` (both branches here, local
/// or remote-tracking, and no open review of the same pair); returns its id.
pub fn open_review(
    repo: &Repository,
    board: &Board,
    branch: &str,
    into: &str,
    title: &str,
    reviewers: &[String],
) -> ReviewResult<ObjectId> {
    for b in [branch, into] {
        branch_tip(repo, b)?;
    }
    if branch == into {
        return Err(ReviewError::Refused(format!(
            "a review proposes a branch for another, not {branch} for itself"
        )));
    }
    if let Some(open) = board
        .reviews
        .iter()
        .find(|r| r.state == ReviewState::Open && r.branch == branch && r.into == into)
    {
        return Err(ReviewError::Refused(format!(
            "review {} already proposes {branch} for {into}",
            open.id.short()
        )));
    }
    record(
        repo,
        &Event::Review {
            branch: branch.to_string(),
            into: into.to_string(),
            title: title.to_string(),
            reviewers: reviewers.to_vec(),
        },
    )
}

/// The commit a review's branch is at now.
pub fn review_tip(repo: &Repository, review: &Review) -> ReviewResult<ObjectId> {
    branch_tip(repo, &review.branch)
}

/// Where branch `name` is here: the local branch, else the remote-tracking
/// branches of that name when they agree (a reviewer reviews what was
/// pushed, without a branch of their own).
fn branch_tip(repo: &Repository, name: &str) -> ReviewResult<ObjectId> {
    if let Some(tip) = repo.refs.get(&branch_ref(name))? {
        return Ok(tip);
    }
    let mut tips: Vec<ObjectId> = repo
        .refs
        .list(REMOTE_BRANCHES)?
        .into_iter()
        .filter(|(full, _)| {
            full.strip_prefix(REMOTE_BRANCHES)
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(_, branch)| branch == name)
        })
        .map(|(_, id)| id)
        .collect();
    tips.sort();
    tips.dedup();
    match tips[..] {
        [tip] => Ok(tip),
        [] => Err(ReviewError::NotFound(format!("no branch named '{name}'"))),
        _ => Err(ReviewError::Refused(format!(
            "the remotes' branches named '{name}' differ: fetch, or make the branch here"
        ))),
    }
}

fn open<'b>(board: &'b Board, id: &str) -> ReviewResult<&'b Review> {
    let review = board.review(id)?;
    match review.state {
        ReviewState::Open => Ok(review),
        ReviewState::Landed(at) => Err(ReviewError::Refused(format!(
            "review {} landed already, at {}",
            review.id.short(),
            at.short()
        ))),
        ReviewState::Closed => Err(ReviewError::Refused(format!(
            "review {} is closed",
            review.id.short()
        ))),
    }
}

/// Approves the review `id` at its branch's commit now, as the
/// repository's identity, who must be one of its reviewers (when it names
/// any) and not its author. Returns the commit approved.
pub fn approve(repo: &Repository, board: &Board, id: &str) -> ReviewResult<ObjectId> {
    approve_signed(repo, board, id, repo.signer()?)
}

/// [`approve`], by the person named `by` (who must be a reviewer, as there).
pub fn approve_as(repo: &Repository, by: &str, board: &Board, id: &str) -> ReviewResult<ObjectId> {
    approve_signed(repo, board, id, signed_by(by)?)
}

fn approve_signed(
    repo: &Repository,
    board: &Board,
    id: &str,
    signer: Signature,
) -> ReviewResult<ObjectId> {
    let review = open(board, id)?;
    let me = signer.name.clone();
    if me == review.by.name {
        return Err(ReviewError::Refused(format!(
            "{me} opened review {}: someone else approves it",
            review.id.short()
        )));
    }
    if !review.reviewers.is_empty() && !review.reviewers.contains(&me) {
        return Err(ReviewError::Refused(format!(
            "{me} is not a reviewer of {} (its reviewers: {})",
            review.id.short(),
            review.reviewers.join(", ")
        )));
    }
    let commit = review_tip(repo, review)?;
    record_as(
        repo,
        &Event::Approve {
            review: review.id,
            commit,
        },
        signer,
    )?;
    Ok(commit)
}

/// Whether the review `id` may land: open, with at least `required`
/// approvals of its branch's commit now (as a hub counts them:
/// `counted_approvals`). Returns the review and that commit.
pub fn ready_to_land<'b>(
    repo: &Repository,
    board: &'b Board,
    id: &str,
    required: usize,
) -> ReviewResult<(&'b Review, ObjectId)> {
    let review = open(board, id)?;
    let tip = review_tip(repo, review)?;
    let holding = crate::protect::counted_approvals(review, &tip);
    if holding < required {
        return Err(ReviewError::Refused(format!(
            "review {} has {holding} approval(s) of {} ({} now), and needs {required}",
            review.id.short(),
            review.branch,
            tip.short()
        )));
    }
    Ok((review, tip))
}

/// Records that the review `id` landed at `at` (a commit of its target
/// holding its branch), or closes it without landing.
pub fn close(
    repo: &Repository,
    board: &Board,
    id: &str,
    landed: Option<ObjectId>,
) -> ReviewResult<ObjectId> {
    let review = open(board, id)?;
    record(
        repo,
        &Event::Close {
            review: review.id,
            landed,
        },
    )?;
    Ok(review.id)
}
