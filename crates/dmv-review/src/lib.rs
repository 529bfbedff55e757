//! Review in a DMV repository: comments pinned to a region of a photo, a
//! moment of a film or lines of a text, carried forward to later versions
//! of the file; reviews proposing a branch for another, approved by named
//! reviewers and landed. All of it is kept in the repository's review log
//! (`refs/meta/review`, a union log: see dmv-repo's `union_log`), so it
//! travels with every fetch and push, merges without conflict, and lives
//! in every replica and every hub.
//!
//! Files, bottom up: `error`, `anchor` (where a comment points), `event`
//! (what the log records, with its golden encoding), `board` (what the log
//! says now), `protect` (what a hub refuses: unreviewed moves of a
//! protected branch, approvals sent by others), `actions` (writing to it,
//! each step checked), `listing` (the comments carried to a commit, as a
//! list or a page shows them), `notice` (who a hub's new comments mention).

mod actions;
mod anchor;
mod board;
mod error;
mod event;
mod listing;
mod notice;
mod protect;

pub use actions::{
    approve, approve_as, close, comment, comment_as, open_review, pin, ready_to_land, reply,
    reply_as, resolve, resolve_as, review_tip,
};
pub use anchor::{Anchor, MAX_LINE, MAX_MILLIS, MAX_PIXEL};
pub use board::{
    mention_spans, mentions, Approval, Board, Byline, Comment, Reply, Review, ReviewState,
    DEFAULT_MAX_EVENTS,
};
pub use error::{ReviewError, ReviewResult};
pub use event::{
    Event, Pinned, EVENT_FORMAT, MAX_NAME_BYTES, MAX_REVIEWERS, MAX_TEXT_BYTES, MAX_TITLE_BYTES,
};
pub use listing::{comments_carried_to, comments_on, CommentFilter, Shown};
pub use notice::{mentions_brought, Mention, MAX_MENTIONS_TOLD};
pub use protect::{
    counted_approvals, refuse_approvals_of_others, refuse_unreviewed_move, HubRepo, ReviewedHub,
};
