//! Review in the web UI: the forms that comment, reply, resolve and
//! approve, written to the review log through dmv-review signed by the
//! logged-in user (the server checks the form came from our pages; these
//! functions check the viewer may write), the list of reviews and the
//! page of one. A file's comments are drawn by `comments`.

use std::collections::HashMap;

use dmv_repo::store::ObjectId;
use dmv_repo::Repository;

use dmv_review::{Anchor, CommentFilter, Review, ReviewError, ReviewState, Shown};
use maud::html;
use serde::Deserialize;

use crate::comments::{board, hidden_fields, said, MOST_COMMENTS_SHOWN};
use crate::media::{media_of, Media};
use crate::pages::{error_page, html, layout, PageResult};
use crate::reply::{Reply, Viewer};
use crate::urls::{path_url, seg};
use crate::words::when;

/// Commits and changed files a review's page lists, at most.
const MOST_LISTED: usize = 200;
/// Reviews the list shows, at most (open ones first).
const MOST_REVIEWS_LISTED: usize = 500;

fn r(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// What a review form posts: the fields each action reads (the others are left empty).
#[derive(Debug, Default, Deserialize)]
pub struct ReviewForm {
    /// The file commented on (a new comment).
    #[serde(default)]
    pub path: String,
    /// The commit the file page showed (a new comment), in hex.
    #[serde(default)]
    pub commit: String,
    /// Where on the file: `X,Y[,W,H]`, `T[-T]` or `A[-B]`; empty: the whole file.
    #[serde(default)]
    pub at: String,
    /// What the comment or reply says.
    #[serde(default)]
    pub text: String,
    /// The comment replied to, resolved or reopened, in hex.
    #[serde(default)]
    pub comment: String,
    /// The review approved, in hex.
    #[serde(default)]
    pub review: String,
    /// The page to go back to (one of this repository's).
    #[serde(default)]
    pub back: Option<String>,
    /// The login's secret (the server checks it before calling).
    #[serde(default)]
    pub form_secret: Option<String>,
}

/// What a review form asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReviewAction {
    /// A new comment on a version of a file.
    Comment,
    /// A reply to a comment.
    Reply,
    /// A comment marked resolved.
    Resolve,
    /// A resolved comment opened again.
    Reopen,
    /// A review approved at its branch's commit now.
    Approve,
}

impl ReviewAction {
    /// The action a form's URL names (`/{repo}/review/{action}`).
    pub fn named(word: &str) -> Option<ReviewAction> {
        Some(match word {
            "comment" => ReviewAction::Comment,
            "reply" => ReviewAction::Reply,
            "resolve" => ReviewAction::Resolve,
            "reopen" => ReviewAction::Reopen,
            "approve" => ReviewAction::Approve,
            _ => return None,
        })
    }
}

/// Writes what a review form asks to `repo`'s review log, signed with the
/// viewer's name (a named user with a write token: the server checked the
/// form came from our pages), then back to `back` when it is a page of
/// this repository. Refusals are pages with their status: 403 for the
/// viewer, 400 for input, 404 for an unknown id, 409 for a step the
/// review's state forbids.
pub fn change_review(
    repo: &Repository,
    name: &str,
    action: ReviewAction,
    form: &ReviewForm,
    viewer: &Viewer,
) -> Reply {
    let Some(user) = viewer.user.as_deref() else {
        return error_page(
            403,
            Some(name),
            "comments and approvals are signed by a named user: this token names none",
        );
    };
    if !viewer.may_write {
        return error_page(
            403,
            Some(name),
            "commenting and approving need a write token",
        );
    }
    let base = format!("/{}", seg(name));
    let done: Result<(String, String), ReviewError> = board(repo)
        .map_err(ReviewError::Invalid)
        .and_then(|board| match action {
            ReviewAction::Comment => {
                let commit = ObjectId::from_hex(form.commit.trim()).ok_or_else(|| {
                    ReviewError::Invalid(format!("{:?} is not a commit's id", form.commit))
                })?;
                let file = dmv_review::pin(repo, commit, &form.path)?;
                let at = parse_at(&file.path, &form.at)?;
                let fallback = format!("{base}/file/{}/{}", commit.to_hex(), path_url(&file.path));
                let id = dmv_review::comment_as(repo, user, file, at, &form.text)?;
                Ok((fallback, format!("c-{}", id.short())))
            }
            ReviewAction::Reply => {
                let parent = board.comment(&form.comment)?;
                let fallback = format!(
                    "{base}/file/{}/{}",
                    parent.file.commit.to_hex(),
                    path_url(&parent.file.path)
                );
                let short = parent.id.short();
                dmv_review::reply_as(repo, user, &board, &form.comment, &form.text)?;
                Ok((fallback, format!("c-{short}")))
            }
            ReviewAction::Resolve | ReviewAction::Reopen => {
                let parent = board.comment(&form.comment)?;
                let fallback = format!(
                    "{base}/file/{}/{}",
                    parent.file.commit.to_hex(),
                    path_url(&parent.file.path)
                );
                let id = dmv_review::resolve_as(
                    repo,
                    user,
                    &board,
                    &form.comment,
                    action == ReviewAction::Resolve,
                )?;
                Ok((fallback, format!("c-{}", id.short())))
            }
            ReviewAction::Approve => {
                let review = board.review(&form.review)?;
                let fallback = format!("{base}/review/{}", review.id.to_hex());
                dmv_review::approve_as(repo, user, &board, &form.review)?;
                Ok((fallback, "approvals".to_string()))
            }
        });
    match done {
        Ok((fallback, fragment)) => {
            let ours = format!("{base}/");
            let back = form
                .back
                .as_deref()
                .filter(|b| {
                    b.starts_with(&ours)
                        && !b.contains("//")
                        && !b.contains('\\')
                        && !b.contains('#')
                })
                .map_or(fallback, str::to_string);
            Reply::Redirect(format!("{back}#{fragment}"))
        }
        Err(e) => {
            let status = match &e {
                ReviewError::Invalid(_) => 400,
                ReviewError::NotFound(_) => 404,
                ReviewError::Refused(_) => 409,
                ReviewError::Repo(_) => 500,
            };
            error_page(status, Some(name), &e.to_string())
        }
    }
}

/// A form's `at` for a file of this kind: a region of a picture, a time
/// of a film or a sound, lines of anything else; empty, the whole file.
fn parse_at(path: &str, text: &str) -> Result<Anchor, ReviewError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Anchor::File);
    }
    match media_of(path) {
        Media::Image => Anchor::parse_region(text),
        Media::Video | Media::Audio => Anchor::parse_time(text),
        _ => Anchor::parse_lines(text),
    }
}

fn state_words(state: &ReviewState) -> &'static str {
    match state {
        ReviewState::Open => "open",
        ReviewState::Landed(_) => "landed",
        ReviewState::Closed => "closed",
    }
}

/// `/{repo}/reviews`: every review, open ones first, newest first.
pub(crate) fn reviews(repo: &Repository, name: &str, viewer: &Viewer) -> PageResult {
    let board = board(repo)?;
    let mut listed: Vec<&Review> = board.reviews.iter().collect();
    listed.sort_by_key(|r| (r.state != ReviewState::Open, std::cmp::Reverse(r.by.time)));
    let more = listed.len().saturating_sub(MOST_REVIEWS_LISTED);
    listed.truncate(MOST_REVIEWS_LISTED);
    let base = format!("/{}", seg(name));
    let body = html! {
        h1 { "Reviews" }
        nav.filters {
            a href={ (base) "/comments" } { "all comments" }
            @if viewer.user.is_some() { a href={ (base) "/comments?mentioning=me" } { "comments mentioning me" } }
        }
        @if listed.is_empty() { p.muted { "No branch has been proposed for review yet." } }
        ul.plain.commits { @for r in &listed {
            li {
                a.subject href={ (base) "/review/" (r.id.to_hex()) } { (title_of(r)) }
                span.meta {
                    span.badge.state { (state_words(&r.state)) } " "
                    span.nowrap { (r.branch) " → " (r.into) } " · " span.nowrap { (r.by.name) } " · " (when(r.by.time))
                    " · " (r.approvals.len()) " approval" (if r.approvals.len() == 1 { "" } else { "s" })
                }
            }
        } }
        @if more > 0 { p.muted { (more) " older reviews are not listed." } }
    };
    Ok(html(layout("Reviews", Some(name), body)))
}

fn title_of(r: &Review) -> String {
    if r.title.trim().is_empty() {
        format!("{} → {}", r.branch, r.into)
    } else {
        r.title.clone()
    }
}

/// `/{repo}/review/{id}`: one review: its branches and state, reviewers
/// and approvals (those of an older commit marked), the branch's commits
/// not in its target, the files it changes and the comments on them.
pub(crate) fn review(repo: &Repository, name: &str, id: &str, viewer: &Viewer) -> PageResult {
    let board = board(repo)?;
    let rv = board.review(id).map_err(r)?;
    let base = format!("/{}", seg(name));
    let tip = dmv_review::review_tip(repo, rv).ok();
    let into_tip = repo
        .refs
        .get(&dmv_repo::ref_names::branch_ref(&rv.into))
        .ok()
        .flatten();
    let holding: Vec<&str> = match &tip {
        Some(t) => rv
            .approvals_at(t)
            .iter()
            .map(|a| a.by.name.as_str())
            .collect(),
        None => Vec::new(),
    };
    // The branch's commits not in its target, newest first.
    let commits: Vec<(ObjectId, String, String, i64)> = match tip {
        Some(t) => {
            let query = dmv_repo::LogQuery {
                revision: Some(match into_tip {
                    Some(i) => format!("{}..{}", i.to_hex(), t.to_hex()),
                    None => t.to_hex(),
                }),
                max_count: Some(MOST_LISTED),
                ..Default::default()
            };
            repo.history()
                .log(&query)
                .map_err(r)?
                .filter_map(Result::ok)
                .map(|c| {
                    (
                        c.id,
                        c.commit.message.lines().next().unwrap_or("").to_string(),
                        c.commit.author.name.clone(),
                        c.commit.committer.time,
                    )
                })
                .collect()
        }
        None => Vec::new(),
    };
    // The files the branch changes since it left its target.
    let base_commit = match (tip, into_tip) {
        (Some(t), Some(i)) => repo.history().merge_base(t, i).ok().flatten(),
        _ => None,
    };
    let changes = match tip {
        Some(t) => {
            let old_tree = match base_commit {
                Some(b) => Some(repo.commit(&b).map_err(r)?.tree),
                None => None,
            };
            let new_tree = repo.commit(&t).map_err(r)?.tree;
            dmv_repo::diff_trees(&repo.store, old_tree.as_ref(), Some(&new_tree)).map_err(r)?
        }
        None => Vec::new(),
    };
    // The comments on the files it changes, each file's version taken
    // from the diff rather than looked up again.
    let changed: Vec<String> = changes
        .iter()
        .map(|c| String::from_utf8_lossy(&c.path).into_owned())
        .collect();
    let on_files: Vec<Shown<'_>> = match tip {
        Some(t) => {
            let mut paths: Vec<&str> = changed.iter().map(String::as_str).collect();
            paths.sort_unstable();
            paths.dedup();
            let versions: HashMap<&str, ObjectId> = changes
                .iter()
                .zip(&changed)
                .filter_map(|(c, path)| Some((path.as_str(), c.new?.id)))
                .collect();
            let filter = CommentFilter {
                paths: Some(&paths),
                resolved_too: true,
                ..CommentFilter::default()
            };
            let mut shown =
                dmv_review::comments_carried_to(repo, &board, t, &filter, &versions).map_err(r)?;
            shown.sort_by(|a, b| a.comment.file.path.cmp(&b.comment.file.path));
            shown.truncate(MOST_COMMENTS_SHOWN);
            shown
        }
        None => Vec::new(),
    };
    let me = viewer.user.as_deref();
    let may_approve = rv.state == ReviewState::Open
        && viewer.may_write
        && tip.is_some()
        && me.is_some_and(|me| {
            me != rv.by.name && (rv.reviewers.is_empty() || rv.reviewers.iter().any(|r| r == me))
        });
    let here = format!("{base}/review/{}", rv.id.to_hex());
    let at_tip = tip.map(|t| t.to_hex()).unwrap_or_default();
    let body = html! {
        h1 { (title_of(rv)) }
        p.muted {
            span.badge.state { (state_words(&rv.state)) } " "
            span.nowrap { strong { (rv.branch) } " → " strong { (rv.into) } }
            " · opened by " span.nowrap { (rv.by.name) } " " (when(rv.by.time))
            " · " span.id title={ "review " (rv.id.to_hex()) } { (rv.id.short()) }
        }
        @if let ReviewState::Landed(at) = rv.state { p { "Landed at " a.id href={ (base) "/commit/" (at.to_hex()) } { (at.short()) } "." } }
        @if tip.is_none() { p.muted { "The branch " (rv.branch) " is not here." } }
        section #approvals {
            h2 { "Reviewers and approvals" }
            @if rv.reviewers.is_empty() { p.muted { "Anyone but its author may approve it." } }
            @else {
                ul.plain.people { @for who in &rv.reviewers {
                    li { @if holding.contains(&who.as_str()) { span.badge.ok { "approved" } } @else { span.badge { "waiting" } } " " (who) }
                } }
            }
            @if !rv.approvals.is_empty() {
                ul.plain.commits { @for a in &rv.approvals {
                    @let current = Some(a.commit) == tip;
                    li.stale[!current] {
                        strong { (a.by.name) } " approved " a.id href={ (base) "/commit/" (a.commit.to_hex()) } { (a.commit.short()) } " " (when(a.by.time))
                        @if !current { " " span.badge.stale title="the branch has moved since: this approval no longer holds" { "stale: the branch moved" } }
                    }
                } }
            }
            @if may_approve {
                form.inline method="post" action={ (base) "/review/approve" } {
                    (hidden_fields(&here, viewer))
                    input type="hidden" name="review" value=(rv.id.to_hex());
                    button.action type="submit" { "Approve " (rv.branch) " at " (tip.map(|t| t.short()).unwrap_or_default()) }
                }
            }
        }
        h2 { "Commits" span.muted { " · " (commits.len()) @if commits.len() == MOST_LISTED { "+" } } }
        ul.plain.commits { @for (id, subject, author, time) in &commits {
            li {
                a.subject href={ (base) "/commit/" (id.to_hex()) } { (subject) }
                span.meta { span.nowrap { (author) } " · " (when(*time)) " · " span.id { (id.short()) } }
            }
        } }
        h2 { "Files" span.muted { " · " (changes.len()) } }
        ul.plain.changes { @for ch in changes.iter().take(MOST_LISTED) {
            @let path = String::from_utf8_lossy(&ch.path).into_owned();
            li {
                @if ch.new.is_some() { a.name href={ (base) "/file/" (at_tip) "/" (path_url(&path)) } { (path) } } @else { span.name { (path) " (deleted)" } }
                @if let (Media::Image, Some(o), Some(n)) = (media_of(&path), ch.old, ch.new) {
                    " · " a href={ (base) "/compare/" (o.id.to_hex()) "/" (n.id.to_hex()) "?name=" (seg(&path)) "&from=" (base_commit.map(|b| b.to_hex()).unwrap_or_default()) "&to=" (at_tip) } { "compare" }
                }
                @if media_of(&path) == Media::Image {
                    div.pair {
                        @for (side, e) in [("before", ch.old), ("after", ch.new)] {
                            figure {
                                @if let Some(e) = e { img loading="lazy" src={ (base) "/thumb/" (e.id.to_hex()) } alt={ (side) ": " (path) }; } @else { span.muted { "(none)" } }
                                figcaption.muted { (side) }
                            }
                        }
                    }
                }
            }
        } }
        @if changes.len() > MOST_LISTED { p.muted { (changes.len() - MOST_LISTED) " more files are not listed." } }
        h2 { "Comments on its files" span.muted { " · " (on_files.len()) } }
        @if on_files.is_empty() { p.muted { "None yet." } }
        ol.threads { @for (i, s) in on_files.iter().enumerate() {
            @let c = s.comment;
            li.thread.resolved[c.resolved].earlier[!s.on_this_version] {
                div.head {
                    span.n { (i + 1) }
                    a href={ (base) "/file/" (at_tip) "/" (path_url(&c.file.path)) "#c-" (c.id.short()) } { (c.file.path) }
                    " · " (c.at.describe()) " · " strong { (c.by.name) } " " (when(c.by.time))
                    @if c.resolved { " " span.badge { "resolved" } }
                    @if !s.on_this_version { " " span.badge.earlier { "on an earlier version" } }
                }
                p.text { (said(&c.text, &base, viewer)) }
                @if !c.replies.is_empty() { p.muted { (c.replies.len()) " repl" (if c.replies.len() == 1 { "y" } else { "ies" }) } }
            }
        } }
    };
    Ok(html(layout(
        &format!("Review {}", rv.id.short()),
        Some(name),
        body,
    )))
}

/// What the comments page is asked for: `?mentioning=NAME` (`me`: the
/// viewer), `?by=NAME`, `?here` (made on this very commit, not carried to
/// it), `?all` (resolved ones too).
pub(crate) struct CommentsAsked<'q> {
    pub mentioning: Option<&'q str>,
    pub by: Option<&'q str>,
    pub here: bool,
    pub all: bool,
}

/// `/{repo}/comments/{rev}`: the comments carried to a branch or a commit
/// (made on its files anywhere in its history), newest first, narrowed to
/// a person mentioned, a writer or the commit itself.
pub(crate) fn comments(
    repo: &Repository,
    name: &str,
    rev: &str,
    asked: &CommentsAsked<'_>,
    viewer: &Viewer,
) -> PageResult {
    let at = repo.resolve(rev).map_err(r)?;
    let board = board(repo)?;
    let me = viewer.user.as_deref();
    let mentioning = match asked.mentioning {
        Some("me") => Some(me.ok_or("“me” is the logged-in user: this token names none")?),
        other => other,
    };
    let filter = CommentFilter {
        mentioning,
        by: asked.by,
        made_at: asked.here.then_some(at),
        resolved_too: asked.all,
        ..CommentFilter::default()
    };
    let mut shown =
        dmv_review::comments_carried_to(repo, &board, at, &filter, &HashMap::new()).map_err(r)?;
    shown.reverse();
    let more = shown.len().saturating_sub(MOST_COMMENTS_SHOWN);
    shown.truncate(MOST_COMMENTS_SHOWN);
    let base = format!("/{}", seg(name));
    let here = format!("{base}/comments/{}", path_url(rev));
    // Each filter link keeps the others.
    let link = |mentioning: Option<&str>, by: Option<&str>, all: bool| {
        let mut q: Vec<String> = Vec::new();
        if let Some(m) = mentioning {
            q.push(format!("mentioning={}", seg(m)));
        }
        if let Some(b) = by {
            q.push(format!("by={}", seg(b)));
        }
        if asked.here {
            q.push("here".into());
        }
        if all {
            q.push("all".into());
        }
        match q.is_empty() {
            true => here.clone(),
            false => format!("{here}?{}", q.join("&")),
        }
    };
    let whose = match (mentioning, asked.by) {
        (Some(m), _) => format!(" mentioning {m}"),
        (None, Some(b)) => format!(" by {b}"),
        (None, None) => String::new(),
    };
    let body = html! {
        h1 { "Comments" (whose) }
        p.muted {
            @if asked.here { "Made on commit " } @else { "Carried to " }
            a.id href={ (base) "/commit/" (at.to_hex()) } { (rev) }
            @if asked.here { "." } @else { ": made on its files anywhere in its history, newest first." }
        }
        nav.filters {
            a.on[mentioning.is_none() && asked.by.is_none()] href=(link(None, None, asked.all)) { "everyone’s" }
            @if let Some(me) = me {
                a.on[mentioning == Some(me)] href=(link(Some(me), None, asked.all)) { "mentioning me" }
                a.on[asked.by == Some(me)] href=(link(None, Some(me), asked.all)) { "mine" }
            }
            a href=(link(mentioning, asked.by, !asked.all)) { @if asked.all { "hide resolved" } @else { "show resolved too" } }
        }
        @if shown.is_empty() { p.muted { "No comment here." } }
        ol.threads { @for s in &shown {
            @let c = s.comment;
            li.thread.resolved[c.resolved].earlier[!s.on_this_version] {
                div.head {
                    a href={ (base) "/file/" (at.to_hex()) "/" (path_url(&c.file.path)) "#c-" (c.id.short()) } { (c.file.path) }
                    " · " (c.at.describe()) " · " strong { (c.by.name) } " " (when(c.by.time))
                    @if c.resolved { " " span.badge { "resolved" } }
                    @if !s.on_this_version { " " span.badge.earlier { "on an earlier version" } }
                }
                p.text { (said(&c.text, &base, viewer)) }
                @if !c.replies.is_empty() {
                    ol.replies { @for reply in &c.replies {
                        li { strong { (reply.by.name) } " " (when(reply.by.time)) p.text { (said(&reply.text, &base, viewer)) } }
                    } }
                }
            }
        } }
        @if more > 0 { p.muted { (more) " older comments are not shown." } }
    };
    Ok(html(layout(&format!("Comments{whose}"), Some(name), body)))
}
