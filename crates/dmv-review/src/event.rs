//! What the review log records, one event per entry: a comment (or a reply
//! to one), a comment resolved or reopened, a review opened, approved,
//! landed or closed. Each event is one line of JSON in its entry's commit
//! message; who wrote it and when are the commit's author, and its id is
//! the commit's. Events only add: a later event changes what an earlier
//! one said (a resolve, an approval), so replicas that took events in any
//! order agree once they hold the same ones.

use dmv_repo::store::ObjectId;
use serde::{Deserialize, Serialize};

use crate::anchor::Anchor;
use crate::error::{ReviewError, ReviewResult};

/// Bytes of a comment's text, at most.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;
/// Bytes of a path, a branch's name or a reviewer's name, at most.
pub const MAX_NAME_BYTES: usize = 4096;
/// Bytes of a review's title, at most.
pub const MAX_TITLE_BYTES: usize = 512;
/// Reviewers named by one review, at most.
pub const MAX_REVIEWERS: usize = 64;

/// The format of events, the first field of each: a reader skips events
/// of a later format it does not know rather than misread them.
pub const EVENT_FORMAT: u32 = 1;

/// A version of a file: its path in a commit, and the content that commit
/// holds there (so a later version is told apart from the same one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinned {
    /// The file's path, `/`-separated.
    pub path: String,
    /// The commit the comment was made on.
    pub commit: ObjectId,
    /// The file's content id in that commit.
    pub version: ObjectId,
}

/// One event of the review log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "lowercase", deny_unknown_fields)]
pub enum Event {
    /// A comment on a version of a file, or a reply to one.
    Comment {
        /// The version it is on.
        file: Pinned,
        /// Where on it.
        at: Anchor,
        /// What it says.
        text: String,
        /// The comment it answers, if a reply.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<ObjectId>,
    },
    /// A comment marked resolved, or reopened.
    Resolve {
        /// The comment.
        comment: ObjectId,
        /// Resolved (true) or reopened (false).
        resolved: bool,
    },
    /// A review opened: `branch` proposed for `into`.
    Review {
        /// The branch proposed, short (`retouch`).
        branch: String,
        /// The branch it is to land on, short (`main`).
        into: String,
        /// What it is.
        title: String,
        /// Who is asked to approve it.
        reviewers: Vec<String>,
    },
    /// A review approved at a commit of its branch: the approval holds
    /// while the branch is there.
    Approve {
        /// The review.
        review: ObjectId,
        /// The branch's commit approved.
        commit: ObjectId,
    },
    /// A review closed: landed at a commit of its target, or dropped.
    Close {
        /// The review.
        review: ObjectId,
        /// The target's commit holding the branch, if it landed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        landed: Option<ObjectId>,
    },
}

/// An event with its format, as the log stores it.
#[derive(Serialize, Deserialize)]
struct Stored {
    v: u32,
    #[serde(flatten)]
    event: Event,
}

/// An event read back: `None` for one of a later format this reader skips.
#[derive(Deserialize)]
struct Versioned {
    v: u32,
}

impl Event {
    /// Refuses an event out of its bounds.
    pub fn check(&self) -> ReviewResult<()> {
        let name = |what: &str, s: &str| {
            if s.is_empty() || s.len() > MAX_NAME_BYTES || s.chars().any(char::is_control) {
                Err(ReviewError::Invalid(format!(
                    "{what} must be 1 to {MAX_NAME_BYTES} bytes without control characters"
                )))
            } else {
                Ok(())
            }
        };
        match self {
            Event::Comment { file, at, text, .. } => {
                name("a path", &file.path)?;
                at.check()?;
                if text.trim().is_empty() || text.len() > MAX_TEXT_BYTES {
                    return Err(ReviewError::Invalid(format!(
                        "a comment must say something, in at most {MAX_TEXT_BYTES} bytes"
                    )));
                }
            }
            Event::Review {
                branch,
                into,
                title,
                reviewers,
            } => {
                name("a branch's name", branch)?;
                name("a branch's name", into)?;
                if title.len() > MAX_TITLE_BYTES || title.chars().any(char::is_control) {
                    return Err(ReviewError::Invalid(format!(
                        "a review's title must be at most {MAX_TITLE_BYTES} bytes on one line"
                    )));
                }
                if reviewers.len() > MAX_REVIEWERS {
                    return Err(ReviewError::Invalid(format!(
                        "a review names at most {MAX_REVIEWERS} reviewers"
                    )));
                }
                for r in reviewers {
                    name("a reviewer's name", r)?;
                }
            }
            Event::Resolve { .. } | Event::Approve { .. } | Event::Close { .. } => {}
        }
        Ok(())
    }

    /// The event as its entry's text: one line of JSON.
    pub fn encode(&self) -> ReviewResult<String> {
        self.check()?;
        serde_json::to_string(&Stored {
            v: EVENT_FORMAT,
            event: self.clone(),
        })
        .map_err(|e| ReviewError::Invalid(format!("cannot encode the event: {e}")))
    }

    /// Reads an entry's text: `Ok(None)` for an event of a later format,
    /// an error for anything malformed or out of bounds (another replica's
    /// damage or malice: the reader skips it and says so).
    pub fn decode(text: &str) -> ReviewResult<Option<Event>> {
        let bad = |e: serde_json::Error| ReviewError::Invalid(format!("a malformed event: {e}"));
        let Versioned { v } = serde_json::from_str::<Versioned>(text).map_err(bad)?;
        if v > EVENT_FORMAT {
            return Ok(None);
        }
        let stored: Stored = serde_json::from_str(text).map_err(bad)?;
        stored.event.check()?;
        Ok(Some(stored.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(b: u8) -> ObjectId {
        ObjectId([b; 32])
    }

    /// The encoding is pinned: replicas of every version read each other's logs.
    #[test]
    fn events_encode_to_golden_bytes() {
        let golden = [
            (
                Event::Comment {
                    file: Pinned {
                        path: "shoot/a.jpg".into(),
                        commit: id(1),
                        version: id(2),
                    },
                    at: Anchor::Region { x: 10, y: 20, w: 30, h: 40 },
                    text: "the sky is too warm".into(),
                    reply_to: None,
                },
                format!(
                    r#"{{"v":1,"event":"comment","file":{{"path":"shoot/a.jpg","commit":"{}","version":"{}"}},"at":{{"on":"region","x":10,"y":20,"w":30,"h":40}},"text":"the sky is too warm"}}"#,
                    id(1),
                    id(2)
                ),
            ),
            (
                Event::Comment {
                    file: Pinned {
                        path: "cut.mov".into(),
                        commit: id(1),
                        version: id(2),
                    },
                    at: Anchor::Time { from: 1000, to: 2500 },
                    text: "logo".into(),
                    reply_to: Some(id(3)),
                },
                format!(
                    r#"{{"v":1,"event":"comment","file":{{"path":"cut.mov","commit":"{}","version":"{}"}},"at":{{"on":"time","from":1000,"to":2500}},"text":"logo","reply_to":"{}"}}"#,
                    id(1),
                    id(2),
                    id(3)
                ),
            ),
            (
                Event::Resolve { comment: id(3), resolved: true },
                format!(r#"{{"v":1,"event":"resolve","comment":"{}","resolved":true}}"#, id(3)),
            ),
            (
                Event::Review {
                    branch: "retouch".into(),
                    into: "main".into(),
                    title: "Retouched".into(),
                    reviewers: vec!["ann".into()],
                },
                r#"{"v":1,"event":"review","branch":"retouch","into":"main","title":"Retouched","reviewers":["ann"]}"#.to_string(),
            ),
            (
                Event::Approve { review: id(4), commit: id(5) },
                format!(r#"{{"v":1,"event":"approve","review":"{}","commit":"{}"}}"#, id(4), id(5)),
            ),
            (
                Event::Close { review: id(4), landed: None },
                format!(r#"{{"v":1,"event":"close","review":"{}"}}"#, id(4)),
            ),
        ];
        for (event, text) in golden {
            assert_eq!(event.encode().unwrap(), text);
            assert_eq!(Event::decode(&text).unwrap(), Some(event));
        }
        let later = format!(r#"{{"v":2,"event":"sticker","on":"{}"}}"#, id(1));
        assert_eq!(Event::decode(&later).unwrap(), None);
    }

    #[test]
    fn hostile_events_are_refused() {
        let too_long = "x".repeat(MAX_TEXT_BYTES + 1);
        let bad = [
            "",
            "{}",
            "[1]",
            r#"{"v":1,"event":"unknown"}"#,
            r#"{"v":1,"event":"resolve","comment":"zz","resolved":true}"#,
        ];
        for text in bad {
            assert!(Event::decode(text).is_err(), "{text}");
        }
        let comment = |text: String, path: &str| Event::Comment {
            file: Pinned {
                path: path.into(),
                commit: id(1),
                version: id(1),
            },
            at: Anchor::File,
            text,
            reply_to: None,
        };
        assert!(comment(too_long, "a").encode().is_err());
        assert!(comment("  ".into(), "a").encode().is_err());
        assert!(comment("ok".into(), "a\nb").encode().is_err());
        let region = r#"{"on":"region","x":1,"y":1,"w":4000000,"h":1}"#;
        let text = format!(
            r#"{{"v":1,"event":"comment","file":{{"path":"a","commit":"{0}","version":"{0}"}},"at":{region},"text":"t"}}"#,
            id(1)
        );
        assert!(Event::decode(&text).is_err());
    }
}
