//! The comments carried to a version of a file, as its page shows them:
//! markers over its picture (placed in percentages of the picture's own
//! size, so zoom and a phone's layout do not move them), threads with
//! their replies and state, and the forms that comment, reply and
//! resolve (posted to `/{repo}/review/{action}`, see `review_pages`).

use dmv_repo::store::ObjectId;
use dmv_repo::Repository;
use dmv_review::{Anchor, Board, Comment, Shown};
use maud::{html, Markup};

use crate::media::{data_here, media_of, Media};
use crate::reply::Viewer;
use crate::urls::{path_url, seg};
use crate::words::when;

/// Comments one page shows, at most (a file with more shows its oldest).
pub(crate) const MOST_COMMENTS_SHOWN: usize = 500;

/// The board, or a reason it cannot be read (shown, not fatal to a page).
pub(crate) fn board(repo: &Repository) -> Result<Board, String> {
    Board::read(repo, dmv_review::DEFAULT_MAX_EVENTS).map_err(|e| e.to_string())
}

/// A picture's size in its own pixels, when its data is here.
pub(crate) fn picture_size(repo: &Repository, id: &ObjectId) -> Option<(u32, u32)> {
    if !data_here(repo, id) {
        return None;
    }
    let reader = repo.store.content_reader_at(id, 0).ok()?;
    dmv_media::picture_shape(reader).map(|s| (s.width, s.height))
}

/// What a file page (or one side of a comparison) shows of its comments:
/// the markers laid over its picture and the threads listed below.
pub(crate) struct FileComments {
    /// Markers over the picture (empty unless a picture of known size).
    pub pins: Markup,
    /// The threads, and the form for a new comment when the viewer may write.
    pub threads: Markup,
}

/// Where a file page is: its repository's name, the revision in its URL
/// and the commit it names, the file's path.
pub(crate) struct FilePlace<'a> {
    pub name: &'a str,
    pub rev: &'a str,
    pub commit: ObjectId,
    pub path: &'a str,
}

/// The comments carried to `path` at `at.commit`, as markers over a
/// picture `size` pixels (when known) and threads; `writable` adds the
/// forms (the page's own, not a comparison's).
pub(crate) fn file_comments(
    repo: &Repository,
    at: &FilePlace<'_>,
    size: Option<(u32, u32)>,
    viewer: &Viewer,
    writable: bool,
) -> FileComments {
    let board = match board(repo) {
        Ok(b) => b,
        Err(e) => {
            return FileComments {
                pins: html! {},
                threads: html! { p.muted { "The comments cannot be read: " (e) } },
            }
        }
    };
    let shown = match dmv_review::comments_on(repo, &board, at.path, at.commit) {
        Ok(s) => s,
        Err(e) => {
            return FileComments {
                pins: html! {},
                threads: html! { p.muted { "The comments cannot be read: " (e.to_string()) } },
            }
        }
    };
    let more = shown.len().saturating_sub(MOST_COMMENTS_SHOWN);
    let shown = &shown[..shown.len().min(MOST_COMMENTS_SHOWN)];
    let pins = match size {
        Some((w, h)) => html! { @for (i, s) in shown.iter().enumerate() { (pin(i + 1, s, w, h)) } },
        None => html! {},
    };
    let media = media_of(at.path);
    let may_write = writable && viewer.may_write && viewer.user.is_some();
    let base = format!("/{}", seg(at.name));
    let back = format!("{base}/file/{}/{}", seg(at.rev), path_url(at.path));
    let threads = html! {
        section.comments #comments {
            h2 { "Comments" @if !shown.is_empty() { span.muted { " · " (shown.len()) } } }
            @if shown.is_empty() { p.muted { "No comment on this file yet." } }
            ol.threads { @for (i, s) in shown.iter().enumerate() {
                (thread(i + 1, s, &base, &back, viewer, may_write))
            } }
            @if more > 0 { p.muted { (more) " more comments are not shown." } }
            @if may_write { (new_comment_form(&base, &back, at, media, viewer)) }
        }
    };
    FileComments { pins, threads }
}

/// A percentage of `whole`, as CSS takes it.
fn percent(part: u32, whole: u32) -> String {
    format!("{:.3}%", f64::from(part) * 100.0 / f64::from(whole.max(1)))
}

/// A comment's marker: a numbered point, or a numbered rectangle.
fn pin(n: usize, s: &Shown<'_>, w: u32, h: u32) -> Markup {
    let Anchor::Region { x, y, w: rw, h: rh } = s.comment.at else {
        return html! {};
    };
    // A region past the picture's edge (another version's size) is kept inside.
    let (x, y) = (x.min(w), y.min(h));
    let style = if rw == 0 && rh == 0 {
        format!("left:{};top:{}", percent(x, w), percent(y, h))
    } else {
        format!(
            "left:{};top:{};width:{};height:{}",
            percent(x, w),
            percent(y, h),
            percent(rw.min(w - x), w),
            percent(rh.min(h - y), h)
        )
    };
    let point = rw == 0 && rh == 0;
    html! {
        a.pin.point[point].area[!point].resolved[s.comment.resolved].earlier[!s.on_this_version]
            href={ "#c-" (s.comment.id.short()) } style=(style)
            title={ (s.comment.by.name) ": " (first_words(&s.comment.text)) } {
            span.n { (n) }
        }
    }
}

/// A comment's or a reply's text: each `@name` of one of the server's
/// users links to the comments that mention them, the viewer's own marked;
/// other at signs stay text.
pub(crate) fn said(text: &str, base: &str, viewer: &Viewer) -> Markup {
    let mut from = 0;
    let mut parts: Vec<(&str, Option<&str>)> = Vec::new();
    for (start, end) in dmv_review::mention_spans(text) {
        let name = &text[start + 1..end];
        if viewer.people.contains(name) {
            parts.push((&text[from..start], Some(name)));
            from = end;
        }
    }
    parts.push((&text[from..], None));
    html! {
        @for (before, name) in parts {
            (before)
            @if let Some(name) = name {
                a.mention.me[viewer.user.as_deref() == Some(name)] href={ (base) "/comments?mentioning=" (seg(name)) } title={ "comments mentioning " (name) } { "@" (name) }
            }
        }
    }
}

/// The start of a text, for a marker's title.
fn first_words(text: &str) -> String {
    let mut cut: String = text.chars().take(80).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// Where a comment points, in words; a film's or a sound's moment is a
/// button that moves the page's player there.
fn where_words(at: &Anchor) -> Markup {
    match *at {
        Anchor::Time { from, .. } => html! {
            button.link.seek type="button" data-seconds=(format!("{:.3}", from as f64 / 1000.0)) title="play from here" { (at.describe()) }
        },
        _ => html! { (at.describe()) },
    }
}

fn thread(
    n: usize,
    s: &Shown<'_>,
    base: &str,
    back: &str,
    viewer: &Viewer,
    may_write: bool,
) -> Markup {
    let c: &Comment = s.comment;
    let short = c.id.short();
    html! {
        li.thread.resolved[c.resolved].earlier[!s.on_this_version] id={ "c-" (short) } {
            div.head {
                span.n { (n) }
                strong { (c.by.name) } " " (when(c.by.time)) " · " span.where { (where_words(&c.at)) }
                @if c.resolved { " " span.badge { "resolved" } }
                @if !s.on_this_version {
                    " " a.badge.earlier href={ (base) "/file/" (c.file.commit.to_hex()) "/" (path_url(&c.file.path)) } title="the comment was made on an earlier version of this file" { "on an earlier version" }
                }
            }
            p.text { (said(&c.text, base, viewer)) }
            @if !c.replies.is_empty() {
                ol.replies { @for reply in &c.replies {
                    li { strong { (reply.by.name) } " " (when(reply.by.time)) p.text { (said(&reply.text, base, viewer)) } }
                } }
            }
            @if may_write {
                div.answer {
                    form.reply method="post" action={ (base) "/review/reply" } {
                        (hidden_fields(back, viewer))
                        input type="hidden" name="comment" value=(c.id.to_hex());
                        textarea name="text" rows="1" required maxlength=(dmv_review::MAX_TEXT_BYTES) placeholder="Reply" aria-label="reply" {}
                        button.action type="submit" { "Reply" }
                    }
                    form.inline method="post" action={ (base) "/review/" (if c.resolved { "reopen" } else { "resolve" }) } {
                        (hidden_fields(back, viewer))
                        input type="hidden" name="comment" value=(c.id.to_hex());
                        button.action type="submit" { (if c.resolved { "Reopen" } else { "Resolve" }) }
                    }
                }
            }
        }
    }
}

/// What every form of these pages carries: where to go back to, and the login's secret.
pub(crate) fn hidden_fields(back: &str, viewer: &Viewer) -> Markup {
    html! {
        input type="hidden" name="back" value=(back);
        @if let Some(secret) = &viewer.form_secret { input type="hidden" name="form_secret" value=(secret); }
    }
}

fn new_comment_form(
    base: &str,
    back: &str,
    at: &FilePlace<'_>,
    media: Media,
    viewer: &Viewer,
) -> Markup {
    let (label, hint) = match media {
        Media::Image => ("where (pixels)", "tap the picture (or X,Y,W,H)"),
        Media::Video | Media::Audio => ("when", "T or T0-T1 (H:M:S)"),
        _ => ("lines", "A or A-B"),
    };
    html! {
        form.comment #new-comment method="post" action={ (base) "/review/comment" } {
            (hidden_fields(back, viewer))
            input type="hidden" name="path" value=(at.path);
            input type="hidden" name="commit" value=(at.commit.to_hex());
            label { (label) " " input type="text" name="at" size="18" maxlength="64" placeholder=(hint) title={ (hint) "; empty: the whole file" }; }
            @if matches!(media, Media::Video | Media::Audio) { " " button.link.now type="button" hidden { "the player's time" } }
            label.text { "comment" textarea name="text" rows="2" required maxlength=(dmv_review::MAX_TEXT_BYTES) placeholder="Say what to change" {} }
            button.action type="submit" { "Comment" }
        }
    }
}
