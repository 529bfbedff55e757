//! What the review log says now: every comment with its replies and
//! whether it is resolved, every review with its approvals and state. Read
//! whole from the log (bounded by the caller's budget), events in the log's
//! order (each after those its writer had seen, others by time, then id),
//! so every replica holding the same events reads the same board.

use std::collections::HashMap;

use dmv_repo::ref_names::REVIEW_LOG;
use dmv_repo::store::ObjectId;
use dmv_repo::{LogEntry, Repository};
use serde::Serialize;

use crate::anchor::Anchor;
use crate::error::{ReviewError, ReviewResult};
use crate::event::{Event, Pinned};

/// Events read into memory at once by the command line and the server,
/// unless they give another budget: ~100 MB at the largest events.
pub const DEFAULT_MAX_EVENTS: usize = 100_000;

/// Who wrote an event, and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Byline {
    /// The name they sign with.
    pub name: String,
    /// Their email address.
    pub email: String,
    /// Seconds since 1970, UTC.
    pub time: i64,
}

/// A reply to a comment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reply {
    /// The reply's id.
    pub id: ObjectId,
    /// Who, and when.
    pub by: Byline,
    /// What it says.
    pub text: String,
    /// The names it mentions (`@ann`), in order, once each.
    pub mentions: Vec<String>,
}

/// A comment with its thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Comment {
    /// The comment's id (its entry's commit).
    pub id: ObjectId,
    /// Who, and when.
    pub by: Byline,
    /// The version of the file it is on.
    pub file: Pinned,
    /// Where on it.
    pub at: Anchor,
    /// What it says.
    pub text: String,
    /// The names it mentions (`@ann`), in order, once each.
    pub mentions: Vec<String>,
    /// Its replies, oldest first.
    pub replies: Vec<Reply>,
    /// Whether its last resolve says resolved.
    pub resolved: bool,
}

impl Comment {
    /// Whether the comment or one of its replies mentions `name`.
    pub fn mentions_name(&self, name: &str) -> bool {
        self.mentions.iter().any(|m| m == name)
            || self
                .replies
                .iter()
                .any(|r| r.mentions.iter().any(|m| m == name))
    }
}

/// Where a review is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "state", content = "at")]
pub enum ReviewState {
    /// Open: waiting for approvals or landing.
    Open,
    /// Landed on its target at this commit.
    Landed(ObjectId),
    /// Closed without landing.
    Closed,
}

/// An approval: who approved which commit of the branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Approval {
    /// Who, and when.
    pub by: Byline,
    /// The branch's commit they approved.
    pub commit: ObjectId,
}

/// A review of a branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Review {
    /// The review's id (its entry's commit).
    pub id: ObjectId,
    /// Who opened it, and when.
    pub by: Byline,
    /// The branch proposed.
    pub branch: String,
    /// The branch it is to land on.
    pub into: String,
    /// What it is.
    pub title: String,
    /// Who is asked to approve it.
    pub reviewers: Vec<String>,
    /// Each person's last approval, in the order they were given.
    pub approvals: Vec<Approval>,
    /// Where it is.
    pub state: ReviewState,
}

impl Review {
    /// The approvals that still hold while the branch is at `tip`.
    pub fn approvals_at(&self, tip: &ObjectId) -> Vec<&Approval> {
        self.approvals.iter().filter(|a| a.commit == *tip).collect()
    }
}

/// Everything the review log says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Board {
    /// The comments (not replies), oldest first.
    pub comments: Vec<Comment>,
    /// The reviews, oldest first.
    pub reviews: Vec<Review>,
    /// Entries that could not be read (another replica's damage or a
    /// hostile writer): skipped, each with why.
    pub unreadable: Vec<(ObjectId, String)>,
}

impl Board {
    /// Reads the repository's review log, at most `max_events` events.
    pub fn read(repo: &Repository, max_events: usize) -> ReviewResult<Board> {
        let entries = repo.history().log_entries(REVIEW_LOG, max_events)?;
        Ok(Board::from_entries(entries))
    }

    /// What the log's `entries` (oldest first) say.
    pub fn from_entries(entries: Vec<LogEntry>) -> Board {
        let mut board = Board::default();
        let mut comment_at: HashMap<ObjectId, usize> = HashMap::new();
        let mut review_at: HashMap<ObjectId, usize> = HashMap::new();
        for entry in entries {
            let by = Byline {
                name: entry.author.name.clone(),
                email: entry.author.email.clone(),
                time: entry.author.time,
            };
            let event = match Event::decode(&entry.text) {
                Ok(Some(event)) => event,
                Ok(None) => continue,
                Err(e) => {
                    board.unreadable.push((entry.id, e.to_string()));
                    continue;
                }
            };
            match event {
                Event::Comment {
                    file,
                    at,
                    text,
                    reply_to: None,
                } => {
                    comment_at.insert(entry.id, board.comments.len());
                    board.comments.push(Comment {
                        id: entry.id,
                        by,
                        file,
                        at,
                        mentions: mentions(&text),
                        text,
                        replies: Vec::new(),
                        resolved: false,
                    });
                }
                Event::Comment {
                    text,
                    reply_to: Some(to),
                    ..
                } => match comment_at.get(&to) {
                    Some(&i) => board.comments[i].replies.push(Reply {
                        id: entry.id,
                        by,
                        mentions: mentions(&text),
                        text,
                    }),
                    None => board.unreadable.push((
                        entry.id,
                        format!("a reply to {}, which is not a comment", to.short()),
                    )),
                },
                Event::Resolve { comment, resolved } => {
                    if let Some(&i) = comment_at.get(&comment) {
                        board.comments[i].resolved = resolved;
                    }
                }
                Event::Review {
                    branch,
                    into,
                    title,
                    reviewers,
                } => {
                    review_at.insert(entry.id, board.reviews.len());
                    board.reviews.push(Review {
                        id: entry.id,
                        by,
                        branch,
                        into,
                        title,
                        reviewers,
                        approvals: Vec::new(),
                        state: ReviewState::Open,
                    });
                }
                Event::Approve { review, commit } => {
                    if let Some(&i) = review_at.get(&review) {
                        let approvals = &mut board.reviews[i].approvals;
                        approvals.retain(|a| a.by.name != by.name);
                        approvals.push(Approval { by, commit });
                    }
                }
                Event::Close { review, landed } => {
                    if let Some(&i) = review_at.get(&review) {
                        // The first close stands: a review lands once.
                        if board.reviews[i].state == ReviewState::Open {
                            board.reviews[i].state = match landed {
                                Some(at) => ReviewState::Landed(at),
                                None => ReviewState::Closed,
                            };
                        }
                    }
                }
            }
        }
        board
    }

    /// The comment whose id starts with `prefix` (at least 4 hex digits).
    pub fn comment(&self, prefix: &str) -> ReviewResult<&Comment> {
        one_of(prefix, "comment", self.comments.iter().map(|c| (c.id, c)))
    }

    /// The review whose id starts with `prefix` (at least 4 hex digits).
    pub fn review(&self, prefix: &str) -> ReviewResult<&Review> {
        one_of(prefix, "review", self.reviews.iter().map(|r| (r.id, r)))
    }
}

fn one_of<'a, T>(
    prefix: &str,
    what: &str,
    items: impl Iterator<Item = (ObjectId, &'a T)>,
) -> ReviewResult<&'a T> {
    let prefix = prefix.to_ascii_lowercase();
    if prefix.len() < 4 || prefix.len() > 64 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ReviewError::NotFound(format!(
            "{prefix:?} is not a {what}'s id (4 to 64 hex digits)"
        )));
    }
    let mut found = items.filter(|(id, _)| id.to_hex().starts_with(&prefix));
    match (found.next(), found.next()) {
        (Some((_, item)), None) => Ok(item),
        (None, _) => Err(ReviewError::NotFound(format!("no {what} {prefix}"))),
        (Some(_), Some(_)) => Err(ReviewError::NotFound(format!(
            "{prefix} names several {what}s: give more of its id"
        ))),
    }
}

/// The names a text mentions: `@name` after a space or at the start, a
/// name of letters, digits, `.`, `-` and `_`, once each in order.
pub fn mentions(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (start, end) in mention_spans(text) {
        let name = &text[start + 1..end];
        if !found.iter().any(|f| f == name) {
            found.push(name.to_string());
        }
    }
    found
}

/// Where a text mentions names: the byte range of each `@name`, at sign
/// included, in order (a page links each, a list takes its names).
pub fn mention_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        if c == '@' && previous.is_whitespace() {
            let rest = &text[i + 1..];
            let len = rest
                .find(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '_')))
                .unwrap_or(rest.len());
            let name = rest[..len].trim_end_matches('.');
            if !name.is_empty() {
                spans.push((i, i + 1 + name.len()));
            }
        }
        previous = c;
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_names_after_an_at_sign() {
        assert_eq!(
            mentions("@ann look, and @bob.s. too; me@host no @ann"),
            ["ann", "bob.s"]
        );
        assert!(mentions("a@b @ @").is_empty());
        let text = "@ann, see @bob.s. here\n@zoë";
        let spans: Vec<&str> = mention_spans(text)
            .iter()
            .map(|&(a, b)| &text[a..b])
            .collect();
        assert_eq!(spans, ["@ann", "@bob.s", "@zoë"]);
    }
}
