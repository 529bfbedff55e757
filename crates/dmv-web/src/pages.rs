//! The pages, rendered on the server as plain HTML (links and forms; the
//! image comparison and the colour toggle have scripts of their own). Every page reads only what
//! it shows: history by pages, folders by pages, files by ranges.

use dmv_repo::store::object::EntryKind;
use dmv_repo::store::ObjectId;
use dmv_repo::{human_bytes, Change, ChangeKind, FlatEntry, Listed, Repository};
use maud::{html, Markup, PreEscaped, DOCTYPE};

pub(crate) use crate::media::data_here;
use crate::media::{media_of, Media};
use crate::reply::{Reply, Viewer};
pub(crate) use crate::urls::{path_url, seg};
use crate::words::{icon, when, Icon};
use dmv_repo::ref_names::BRANCHES;

/// Commits a folder's list looks back through for each entry's last change.
const LAST_CHANGE_COMMITS: usize = 1000;
/// Commits per page of history, entries per page of a folder.
pub const COMMITS_PER_PAGE: usize = 50;
pub const ENTRIES_PER_PAGE: usize = 200;
/// Text files up to this size are shown on their page.
const MAX_TEXT_SHOWN: u64 = 256 << 10;
/// Versions listed on a file's page.
const VERSIONS_SHOWN: usize = 20;

/// Light and dark colours (the dark ones from `prefers-color-scheme`, or
/// the header's toggle, kept in the browser), a layout that reflows from a
/// phone's 360 px to a wide screen, and a visible keyboard focus.
const STYLE: &str = include_str!("assets/style.css");

/// The image comparison (zoom and pan of both sides together; swipe, onion
/// skin, difference) and the colour
/// toggle, served as files of their own (`/-/compare.js`, `/-/theme.js`):
/// pages allow no inline script.
pub const COMPARE_SCRIPT: &str = "(function(){var s=document.getElementById('slider'),o=document.getElementById('over');\
function show(){var m=(document.querySelector('input[name=mode]:checked')||{}).value||'swipe',v=s.value;\
o.style.clipPath=m==='swipe'?'inset(0 0 0 '+v+'%)':'none';o.style.opacity=m==='onion'?v/100:1;o.style.mixBlendMode=m==='difference'?'difference':'normal';}\
s.addEventListener('input',show);document.querySelectorAll('input[name=mode]').forEach(function(r){r.addEventListener('change',show);});show();\
var z=document.getElementById('zoom'),pans=document.querySelectorAll('.pan');\
z.addEventListener('input',function(){pans.forEach(function(p){p.firstElementChild.style.width=(z.value*100)+'%';});});\
pans.forEach(function(p){p.addEventListener('scroll',function(){pans.forEach(function(o){if(o===p)return;\
var x=p.scrollWidth-p.clientWidth,y=p.scrollHeight-p.clientHeight;o.scrollLeft=x>0?p.scrollLeft/x*(o.scrollWidth-o.clientWidth):0;o.scrollTop=y>0?p.scrollTop/y*(o.scrollHeight-o.clientHeight):0;});});});})();";

/// See [`COMPARE_SCRIPT`]: the theme chosen is kept in the browser's storage.
pub const THEME_SCRIPT: &str = "(function(){var r=document.documentElement,k='dmv-theme';try{var t=localStorage.getItem(k);if(t)r.dataset.theme=t;}catch(e){}\
document.addEventListener('DOMContentLoaded',function(){var b=document.getElementById('theme');if(!b)return;b.hidden=false;b.addEventListener('click',function(){\
var now=r.dataset.theme||(matchMedia('(prefers-color-scheme: dark)').matches?'dark':'light');r.dataset.theme=now==='dark'?'light':'dark';try{localStorage.setItem(k,r.dataset.theme);}catch(e){}});});})();";

pub fn layout(title: &str, repo: Option<&str>, body: Markup) -> String {
    layout_with(title, repo, body, true)
}

/// [`layout`], with or without the log out button (the login page has nothing to log out of).
fn layout_with(title: &str, repo: Option<&str>, body: Markup, logout: bool) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8"; meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="theme-color" content="#24292f";
                title { (title) " · DMV" } style { (PreEscaped(STYLE)) }
                link rel="manifest" href="/-/manifest.webmanifest";
                link rel="icon" href="/-/icon.svg" type="image/svg+xml";
                script src="/-/theme.js" {} script src="/-/app.js" defer {}
            }
            body {
                header {
                    a href="/" title="all repositories" { "DMV" }
                    @if let Some(r) = repo {
                        a.repo href={ "/" (seg(r)) "/" } { (r) }
                        a href={ "/" (seg(r)) "/locks" } title="locks" { (icon(Icon::Lock)) span.word { " locks" } }
                        a href={ "/" (seg(r)) "/search" } title="search" { (icon(Icon::Search)) span.word { " search" } }
                        a href={ "/" (seg(r)) "/reviews" } title="reviews" { (icon(Icon::Comment)) span.word { " reviews" } }
                    }
                    span.grow {}
                    button.link #theme type="button" hidden aria-label="switch between light and dark colours" title="light or dark" { (icon(Icon::Theme)) span.word { " theme" } }
                    @if logout { form.inline method="post" action="/logout" { button.link type="submit" { "log out" } } }
                }
                main { (body) }
            }
        }
    }
    .into_string()
}

pub fn html(body: String) -> Reply {
    Reply::Html { status: 200, body }
}

pub fn error_page(status: u16, repo: Option<&str>, message: &str) -> Reply {
    Reply::Html {
        status,
        body: layout(
            "Error",
            repo,
            html! { h1 { "Error " (status) } p { (message) } },
        ),
    }
}

/// The server's front page: the repositories it serves (by the names in
/// `repos`), each a link to its page.
pub fn index(repos: &[String]) -> String {
    layout(
        "Repositories",
        None,
        html! { h1 { "Repositories" } ul { @for r in repos { li { a href={ "/" (seg(r)) "/" } { (r) } } } } },
    )
}

/// Where photos shared from a phone's gallery ("Share → DMV") go: the
/// service worker keeps the `shared` files; the person picks a folder
/// seen recently (kept by `/-/app.js` in the browser) or a repository's
/// top folder on the branch `repos` names for it, whose upload page sends
/// them.
pub fn share(repos: &[(String, String)], shared: usize) -> String {
    layout(
        "Share",
        None,
        html! {
            h1 { "Upload " (shared) " shared " (if shared == 1 { "file" } else { "files" }) }
            p.muted { "Pick the folder they go into: they are added there as one new commit." }
            h2 { "Folders seen recently" }
            ul.plain.commits #recent { li.muted { "None yet on this device." } }
            h2 { "Top folders" }
            ul.plain.commits { @for (r, branch) in repos {
                li { a href={ "/" (seg(r)) "/upload/" (seg(branch)) "/?shared=1" } { (r) } span.meta { " on " (branch) } }
            } }
        },
    )
}

/// The log-in form (a token, posted to `/login`), with `message` above it
/// when given: why the viewer has to log in (again).
pub fn login(message: Option<&str>) -> String {
    layout_with(
        "Log in",
        None,
        html! {
            h1 { "Log in" }
            @if let Some(m) = message { p.muted { (m) } }
            form method="post" action="/login" {
                label { "Token " input type="password" name="token" autofocus; }
                " " button type="submit" { "Log in" }
            }
        },
        false,
    )
}

/// What an old bookmark of `GET /logout` gets: logging out is a form now.
pub fn logout() -> String {
    layout(
        "Log out",
        None,
        html! { h1 { "Log out" } form method="post" action="/logout" { button type="submit" { "Log out" } } },
    )
}

pub(crate) type PageResult = Result<Reply, String>;

fn r(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// History from `rev`, a page at a time (`skip` commits in).
pub fn log(repo: &Repository, name: &str, rev: &str, skip: usize) -> PageResult {
    // One revision, as before: a range (`A...B` computes a merge base) is
    // not an input the web UI takes.
    let start = repo.resolve(rev).map_err(r)?;
    let query = dmv_repo::LogQuery {
        revision: Some(start.to_hex()),
        skip,
        max_count: Some(COMMITS_PER_PAGE + 1),
        ..Default::default()
    };
    let mut page = Vec::with_capacity(COMMITS_PER_PAGE + 1);
    for c in repo.history().log(&query).map_err(r)? {
        page.push(c.map_err(r)?);
    }
    let more = page.len() > COMMITS_PER_PAGE;
    page.truncate(COMMITS_PER_PAGE);
    let base = format!("/{}", seg(name));
    let body = html! {
        h1 { "History of " (rev) }
        ul.plain.commits { @for c in &page {
            li {
                a.subject href={ (base) "/commit/" (c.id.to_hex()) } { (c.commit.message.lines().next().unwrap_or("")) }
                span.meta { span.nowrap { (c.commit.author.name) } " · " (when(c.commit.committer.time)) " · " span.id title="git: commit id" { (c.id.short()) } }
            }
        } }
        p {
            @if skip > 0 { a href={ (base) "/log/" (seg(rev)) "?skip=" (skip.saturating_sub(COMMITS_PER_PAGE)) } { "← newer" } " " }
            @if more { a rel="next" href={ (base) "/log/" (seg(rev)) "?skip=" (skip + COMMITS_PER_PAGE) } { "older →" } }
        }
    };
    Ok(html(layout(&format!("History of {rev}"), Some(name), body)))
}

fn thumb(base: &str, e: Option<&FlatEntry>, path: &str) -> Markup {
    match e {
        Some(e) if media_of(path) == Media::Image => {
            html! { img loading="lazy" src={ (base) "/thumb/" (e.id.to_hex()) } alt=(path); }
        }
        Some(_) => html! { span.muted { "—" } },
        None => html! { span.muted { "(none)" } },
    }
}

/// Changed files listed on one page of a commit.
pub const CHANGES_PER_PAGE: usize = 200;
/// Text diffs shown on one page of a commit (the other text files get a link to theirs).
const TEXT_DIFFS_PER_PAGE: usize = 50;
/// Lines of one file's diff shown before it is cut.
const DIFF_LINES_SHOWN: usize = 2000;

/// How text diffs are laid out: git's unified diff, or the two sides in columns.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum DiffLayout {
    /// Removed and added lines one under the other.
    Unified,
    /// Before on the left, after on the right.
    Split,
}

/// A commit: who, when, why, and each changed file with its before and
/// after, a page of files at a time (`skip` in), text files as a diff.
pub fn commit(
    repo: &Repository,
    name: &str,
    id: &str,
    skip: usize,
    diff_layout: DiffLayout,
) -> PageResult {
    let id = repo.resolve(id).map_err(r)?;
    let c = repo.commit(&id).map_err(r)?;
    let parent_tree = match c.parents.first() {
        Some(p) => Some(repo.commit(p).map_err(r)?.tree),
        None => None,
    };
    let changes: Vec<Change> =
        dmv_repo::diff_trees(&repo.store, parent_tree.as_ref(), Some(&c.tree)).map_err(r)?;
    let total = changes.len();
    // Renames are found among all the changes, then a page of them shown.
    let listed: Vec<Listed> = dmv_repo::find_renames(&repo.store, changes)
        .map_err(r)?
        .into_iter()
        .skip(skip)
        .take(CHANGES_PER_PAGE + 1)
        .collect();
    let more = listed.len() > CHANGES_PER_PAGE;
    let base = format!("/{}", seg(name));
    let hex = id.to_hex();
    let here = format!("{base}/commit/{hex}");
    let rows: Vec<ChangedRow> = listed
        .iter()
        .take(CHANGES_PER_PAGE)
        .map(|l| match l {
            Listed::Change(ch) => ChangedRow {
                kind: kind_word(ch.kind),
                path: String::from_utf8_lossy(&ch.path).into_owned(),
                shown: String::from_utf8_lossy(&ch.path).into_owned(),
                old: ch.old,
                new: ch.new,
            },
            Listed::Renamed {
                from,
                to,
                similarity,
                old,
                new,
            } => ChangedRow {
                kind: format!("renamed ({similarity}%)"),
                path: String::from_utf8_lossy(to).into_owned(),
                shown: format!(
                    "{} → {}",
                    String::from_utf8_lossy(from),
                    String::from_utf8_lossy(to)
                ),
                old: Some(*old),
                new: Some(*new),
            },
        })
        .collect();
    let diffs: Vec<(&str, Markup)> = rows
        .iter()
        .filter(|row| media_of(&row.path) == Media::Text)
        .filter_map(|row| {
            Some((
                row.shown.as_str(),
                text_diff(repo, row.old.as_ref(), row.new.as_ref(), diff_layout)?,
            ))
        })
        .take(TEXT_DIFFS_PER_PAGE)
        .collect();
    let other_layout = match diff_layout {
        DiffLayout::Unified => ("split", "side by side"),
        DiffLayout::Split => ("unified", "unified"),
    };
    let body = html! {
        h1 { (c.message.lines().next().unwrap_or("")) }
        p.muted { span.nowrap { (c.author.name) } " <" (c.author.email) "> · " (when(c.author.time)) " · " span.id title={ "git: commit " (id.to_hex()) } { (id.short()) } }
        @if c.message.lines().count() > 1 { pre { (c.message) } }
        p { @for p in &c.parents { "parent " a.id href={ (base) "/commit/" (p.to_hex()) } { (p.short()) } " · " } a href={ (base) "/tree/" (hex) "/" } { "files at this commit" } " · " a href={ (base) "/comments/" (hex) "?here" } { "comments made on it" } }
        p.muted { (total) " files changed"
            @if total > CHANGES_PER_PAGE { ", " (skip + 1) "–" (skip + rows.len()) " shown" }
            " · text diffs " a href={ (here) "?skip=" (skip) "&diff=" (other_layout.0) } { (other_layout.1) } }
        ul.plain.changes { @for row in &rows {
            li {
                span.badge { (row.kind) } " "
                @if row.new.is_some_and(|e| e.kind != EntryKind::Dir) { a.name href={ (base) "/file/" (hex) "/" (path_url(&row.path)) } { (row.shown) } } @else { span.name { (row.shown) } }
                @if media_of(&row.path) == Media::Image {
                    div.pair {
                        figure { (thumb(&base, row.old.as_ref(), &row.path)) figcaption.muted { "before" } }
                        figure { (thumb(&base, row.new.as_ref(), &row.path)) figcaption.muted { "after" } }
                    }
                    @if let (Some(o), Some(n)) = (row.old, row.new) {
                        a href={ (base) "/compare/" (o.id.to_hex()) "/" (n.id.to_hex()) "?name=" (seg(&row.path)) "&from=" (c.parents.first().map(|p| p.to_hex()).unwrap_or_default()) "&to=" (hex) } { "compare before and after" }
                    }
                }
            }
        } }
        @if skip > 0 || more {
            p {
                @if skip > 0 { a href={ (here) "?skip=" (skip.saturating_sub(CHANGES_PER_PAGE)) } { "← previous files" } " " }
                @if more { a rel="next" href={ (here) "?skip=" (skip + CHANGES_PER_PAGE) } { "next " (CHANGES_PER_PAGE) " files →" } }
            }
        }
        @for (shown, diff) in &diffs {
            h3 { (shown) }
            (diff)
        }
    };
    Ok(html(layout(
        &format!("Commit {}", id.short()),
        Some(name),
        body,
    )))
}

/// A changed file as a commit page lists it.
struct ChangedRow {
    /// "added", "modified", "deleted" or "renamed (N%)".
    kind: String,
    /// Its path now.
    path: String,
    /// Its path as shown (a rename shows both).
    shown: String,
    old: Option<FlatEntry>,
    new: Option<FlatEntry>,
}

/// The change between two versions of a text file, as `layout` says; None
/// when either side is not text or not here (or too large: 1 MiB).
fn text_diff(
    repo: &Repository,
    old: Option<&FlatEntry>,
    new: Option<&FlatEntry>,
    layout: DiffLayout,
) -> Option<Markup> {
    let side = |e: Option<&FlatEntry>| match e {
        Some(e) if !data_here(repo, &e.id) => None,
        _ => match repo.history().diff_side(e, None).ok()? {
            dmv_repo::DiffSide::Text(t) => Some(t),
            dmv_repo::DiffSide::Binary { .. } => None,
        },
    };
    let (before, after) = (side(old)?, side(new)?);
    let diff = similar::TextDiff::from_lines(&before, &after);
    let mut shown = 0usize;
    let cut = |shown: &mut usize| {
        *shown += 1;
        *shown > DIFF_LINES_SHOWN
    };
    Some(match layout {
        DiffLayout::Unified => html! {
            pre.diff { @for group in diff.grouped_ops(3) {
                @if shown <= DIFF_LINES_SHOWN { span.hunk { "@@" } }
                @for op in &group { @for change in diff.iter_changes(op) {
                    @if !cut(&mut shown) {
                        @let (class, mark) = match change.tag() { similar::ChangeTag::Delete => ("del", "-"), similar::ChangeTag::Insert => ("add", "+"), similar::ChangeTag::Equal => ("", " ") };
                        span class=(class) { (mark) (change.value().trim_end_matches('\n')) }
                    }
                } }
            } @if shown > DIFF_LINES_SHOWN { span.hunk { "… cut after " (DIFF_LINES_SHOWN) " lines" } } }
        },
        DiffLayout::Split => html! {
            div.scroll { table.diff {
                @for group in diff.grouped_ops(3) {
                    tr { td.hunk { "@@" } td.hunk {} }
                    @for op in &group { @for change in diff.iter_changes(op) {
                        @if !cut(&mut shown) {
                            @let text = change.value().trim_end_matches('\n');
                            @match change.tag() {
                                similar::ChangeTag::Delete => tr { td.del { (text) } td {} },
                                similar::ChangeTag::Insert => tr { td {} td.add { (text) } },
                                similar::ChangeTag::Equal => tr { td { (text) } td { (text) } },
                            }
                        }
                    } }
                }
            } }
        },
    })
}

fn kind_word(k: ChangeKind) -> String {
    match k {
        ChangeKind::Added => "added",
        ChangeKind::Deleted => "deleted",
        ChangeKind::Modified => "modified",
    }
    .to_string()
}

fn tree_of(repo: &Repository, rev: &str) -> Result<(ObjectId, ObjectId), String> {
    let commit = repo.resolve(rev).map_err(r)?;
    Ok((commit, repo.commit(&commit).map_err(r)?.tree))
}

/// Where a folder or file is: the revision's root, then each folder above it, each a link.
fn crumbs(base: &str, rev: &str, path: &str) -> Markup {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    html! {
        nav.crumbs aria-label="where this is" {
            a.badge href={ (base) "/tree/" (seg(rev)) "/" } title="git: the revision shown" { (rev) }
            @for (i, part) in parts.iter().enumerate() {
                " › "
                @if i + 1 < parts.len() { a href={ (base) "/tree/" (seg(rev)) "/" (path_url(&parts[..=i].join("/"))) "/" } { (part) } }
                @else { strong { (part) } }
            }
        }
    }
}

/// How a folder is shown: thumbnails, or a list of names and sizes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum FolderView {
    /// Pictures as thumbnails, other entries as tiles.
    Grid,
    /// Names and sizes.
    List,
}

/// A folder at `rev`: as a wall of photos grouped by day (`page` of it),
/// or as a list of names a page at a time after the name `after`, as
/// `view` asks (None: a wall when the first page holds a picture).
#[allow(clippy::too_many_arguments)]
pub fn tree(
    repo: &Repository,
    name: &str,
    rev: &str,
    path: &str,
    after: Option<&str>,
    page: usize,
    view: Option<FolderView>,
    viewer: &Viewer,
) -> PageResult {
    let (commit, root) = tree_of(repo, rev)?;
    let folder = match dmv_repo::tree::lookup(&repo.store, &root, path.as_bytes()).map_err(r)? {
        Some(e) if e.kind == EntryKind::Dir => e.id,
        Some(_) => return Err(format!("{path} is a file, not a folder")),
        None => return Err(format!("no folder {path} at {rev}")),
    };
    let (entries, more) = dmv_repo::tree::read_dir_page(
        &repo.store,
        &folder,
        after.map(str::as_bytes),
        ENTRIES_PER_PAGE,
    )
    .map_err(r)?;
    let base = format!("/{}", seg(name));
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{}/", path.trim_end_matches('/'))
    };
    let here = format!("{base}/tree/{}/{}", seg(rev), path_url(&prefix));
    let is_image = |e: &dmv_repo::store::object::TreeEntry| {
        e.kind.is_file() && media_of(&String::from_utf8_lossy(&e.name)) == Media::Image
    };
    let view = view.unwrap_or(if entries.iter().any(is_image) {
        FolderView::Grid
    } else {
        FolderView::List
    });
    let (other_view, other_word) = match view {
        FolderView::Grid => ("list", "list view"),
        FolderView::List => ("grid", "photo view"),
    };
    let shown = match view {
        FolderView::Grid => crate::photos::wall(
            repo,
            &folder,
            &crate::photos::WallPlace {
                repo_name: name,
                rev,
                commit,
                prefix: &prefix,
                page,
            },
        )?,
        FolderView::List => folder_list(repo, &base, rev, &prefix, commit, &entries, more)?,
    };
    let body = html! {
        h1 { @if prefix.is_empty() { "Photos and files" } @else { (prefix.trim_end_matches('/').rsplit('/').next().unwrap_or("")) } }
        (crumbs(&base, rev, path))
        p.controls {
            a href={ (here) "?view=" (other_view) } { (other_word) }
            a href={ (base) "/zip/" (seg(rev)) "/" (path_url(&prefix)) } download { "download all as zip" }
            @if view == FolderView::Grid { button.action #select type="button" hidden { "select" } }
            @if viewer.may_write && repo.refs.get(&format!("{BRANCHES}{rev}")).ok().flatten().is_some() {
                a href={ (base) "/upload/" (seg(rev)) "/" (path_url(&prefix)) } { "upload files here" }
            }
        }
        (shown)
    };
    Ok(html(layout(&format!("{rev}:/{prefix}"), Some(name), body)))
}

/// A page of a folder as a list: names, sizes, and the change that last
/// touched each.
fn folder_list(
    repo: &Repository,
    base: &str,
    rev: &str,
    prefix: &str,
    commit: ObjectId,
    entries: &[dmv_repo::store::object::TreeEntry],
    more: bool,
) -> Result<Markup, String> {
    let here = format!("{base}/tree/{}/{}", seg(rev), path_url(prefix));
    // Which commit last changed each entry (a bounded walk back).
    let names: Vec<Vec<u8>> = entries.iter().map(|e| e.name.clone()).collect();
    let last = repo
        .history()
        .last_changes(
            &commit,
            prefix.trim_end_matches('/').as_bytes(),
            &names,
            LAST_CHANGE_COMMITS,
        )
        .map_err(r)?;
    // Each commit read once, however many entries it last changed.
    let mut commits: std::collections::HashMap<ObjectId, dmv_repo::store::object::Commit> =
        std::collections::HashMap::new();
    for id in last.values() {
        if !commits.contains_key(id) {
            commits.insert(*id, repo.commit(id).map_err(r)?);
        }
    }
    let last_info = |name: &[u8]| {
        last.get(name)
            .and_then(|id| commits.get(id).map(|c| (*id, c)))
    };
    Ok(html! {
        div.scroll { table {
            @for e in entries {
                @let n = String::from_utf8_lossy(&e.name).into_owned();
                tr {
                    @if e.kind == EntryKind::Dir {
                        td.name { a href={ (here) (seg(&n)) "/?view=list" } { (icon(Icon::Folder)) " " (n) } } td {}
                    } @else {
                        td.name { a href={ (base) "/file/" (seg(rev)) "/" (path_url(&format!("{prefix}{n}"))) } {
                            (icon(match media_of(&n) { Media::Image => Icon::Picture, Media::Video => Icon::Film, Media::Audio => Icon::Sound, _ => Icon::File })) " " (n)
                        } }
                        td.muted.nowrap { (human_bytes(e.size)) }
                    }
                    td.muted { @if let Some((id, c)) = last_info(&e.name) {
                        a href={ (base) "/commit/" (id.to_hex()) } { (c.message.lines().next().unwrap_or("")) }
                    } }
                    td.muted.wide { @if let Some((_, c)) = last_info(&e.name) { (when(c.committer.time)) } }
                }
            }
        } }
        @if let (true, Some(last)) = (more, entries.last()) {
            p { a rel="next" href={ (here) "?view=list&after=" (seg(&String::from_utf8_lossy(&last.name))) } { "next " (ENTRIES_PER_PAGE) " →" } }
        }
    })
}

/// A file at `rev`: shown as what it is (picture, player, text), with a
/// download link and its last versions.
pub fn file(
    repo: &Repository,
    name: &str,
    rev: &str,
    path: &str,
    viewer: &Viewer,
    bring: Option<crate::media::Bring<'_>>,
) -> PageResult {
    let (commit, root) = tree_of(repo, rev)?;
    let e = match dmv_repo::tree::lookup(&repo.store, &root, path.as_bytes()).map_err(r)? {
        Some(e) if e.kind.is_file() => e,
        _ => return Err(format!("no file {path} at {rev}")),
    };
    let base = format!("/{}", seg(name));
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let raw = format!("{base}/raw/{}/{}", e.id.to_hex(), seg(file_name));
    let shown_as_text = media_of(path) == Media::Text && e.size <= MAX_TEXT_SHOWN;
    let present = match shown_as_text {
        true => crate::media::here_or_brought(repo, &e.id, bring),
        false => data_here(repo, &e.id),
    };
    let text = (present && shown_as_text).then(|| {
        let mut bytes = Vec::new();
        repo.store.write_content(&e.id, &mut bytes).ok()?;
        String::from_utf8(bytes).ok()
    });
    let versions: Vec<(ObjectId, String, ObjectId, i64)> = repo
        .history()
        .walk(&[commit])
        .map_err(r)?
        .touching(vec![path.as_bytes().to_vec()])
        .take(VERSIONS_SHOWN)
        .filter_map(|c| {
            let c = c.ok()?;
            let v = dmv_repo::tree::lookup(&repo.store, &c.commit.tree, path.as_bytes()).ok()??;
            Some((
                c.id,
                c.commit.message.lines().next().unwrap_or("").to_string(),
                v.id,
                c.commit.committer.time,
            ))
        })
        .collect();
    let lock = repo
        .locks()
        .path_locks()
        .ok()
        .and_then(|t| t.all().find(|l| l.path == path).cloned());
    // What the file says of itself: a picture's size, camera and date taken, a film's or sound's duration.
    let facts = match (present, media_of(path)) {
        (true, Media::Image | Media::Video | Media::Audio) => media_facts(repo, &e),
        _ => Vec::new(),
    };
    let markdown = path.to_ascii_lowercase().ends_with(".md");
    let size = match (present, media_of(path)) {
        (true, Media::Image) => crate::comments::picture_size(repo, &e.id),
        _ => None,
    };
    let place = crate::comments::FilePlace {
        name,
        rev,
        commit,
        path,
    };
    let comments = crate::comments::file_comments(repo, &place, size, viewer, true);
    let body = html! {
        h1 { (file_name) }
        (crumbs(&base, rev, path))
        p.controls {
            @if let Some(l) = &lock { span.badge.locked { (icon(Icon::Lock)) " locked by " (l.owner) " since " (when(l.since as i64)) } }
            (lock_form(&base, path, rev, lock.as_ref(), viewer))
        }
        p.muted { @for f in &facts { (f) " · " } (human_bytes(e.size)) " · " a href={ (raw) "?download=1" } download=(file_name) { "download" } }
        @if !present { p { "This replica does not hold this file's data." } }
        @else {
            @match media_of(path) {
                // On a wide screen the threads sit beside the picture they point into.
                Media::Image => {
                    div.beside {
                        div.marked data-w=[size.map(|s| s.0)] data-h=[size.map(|s| s.1)] {
                            a href=(raw) { img.picture draggable="false" src={ (base) "/preview/" (e.id.to_hex()) } alt=(path); }
                            (comments.pins)
                        }
                        (comments.threads)
                    }
                }
                Media::Video => { video.picture controls preload="metadata" src=(raw) {} }
                Media::Audio => { audio controls preload="metadata" src=(raw) {} }
                _ => {
                    @if let Some(Some(t)) = &text {
                        @if markdown { article.markdown { (PreEscaped(crate::markdown::to_safe_html(t))) } } @else { pre { (t) } }
                    }
                }
            }
        }
        @if !(present && media_of(path) == Media::Image) { (comments.threads) }
        h2 { "Versions" }
        ul.plain.commits { @for (i, (c, msg, v, time)) in versions.iter().enumerate() {
            li.thumbs {
                @if media_of(path) == Media::Image { img loading="lazy" src={ (base) "/thumb/" (v.to_hex()) } alt=(path) style="width:min(160px,30vw);float:right;margin-left:.6em"; }
                a.subject href={ (base) "/commit/" (c.to_hex()) } { (msg) }
                span.meta { (when(*time)) " · " span.id title="git: commit id" { (c.short()) } }
                @if let (Media::Image, Some((older_commit, _, older, _))) = (media_of(path), versions.get(i + 1)) {
                    @if older != v { br; a href={ (base) "/compare/" (older.to_hex()) "/" (v.to_hex()) "?name=" (seg(path)) "&from=" (older_commit.to_hex()) "&to=" (c.to_hex()) } { "compare with the version before" } }
                }
                div style="clear:both" {}
            }
        } }
    };
    Ok(html(layout(path, Some(name), body)))
}

/// The button that takes, gives back or breaks a file's lock, as the
/// viewer may: nothing for a reader, or without a named user.
fn lock_form(
    base: &str,
    path: &str,
    rev: &str,
    lock: Option<&dmv_repo::PathLock>,
    viewer: &Viewer,
) -> Markup {
    let action = match (lock, viewer.user.as_deref()) {
        (_, None) if !viewer.admin => return html! {},
        (None, Some(_)) if viewer.may_write => ("take", "lock"),
        (None, _) => return html! {},
        (Some(l), Some(me)) if l.owner == me => ("release", "unlock"),
        (Some(_), _) if viewer.admin => ("break", "break the lock"),
        (Some(_), _) => return html! {},
    };
    html! {
        form.inline method="post" action={ (base) "/locks/" (action.0) } {
            input type="hidden" name="path" value=(path);
            input type="hidden" name="back" value={ (base) "/file/" (seg(rev)) "/" (path_url(path)) };
            @if let Some(secret) = &viewer.form_secret { input type="hidden" name="form_secret" value=(secret); }
            button.action type="submit" title={ "git: dmv " (if action.0 == "take" { "lock" } else { "unlock" }) } { (icon(Icon::Lock)) " " (action.1) }
        }
    }
}

/// Two versions of an image side by side, and one over the other with a slider.
pub fn compare(
    repo: &Repository,
    name: &str,
    before: &str,
    after: &str,
    label: &str,
    commits: (Option<&str>, Option<&str>),
    viewer: &Viewer,
) -> PageResult {
    // A side is named by the commit that made it (its subject and date)
    // when the link says which; by its content id otherwise.
    let named = |commit: Option<&str>, version: &ObjectId| -> Markup {
        let found = commit
            .and_then(|hex| repo.resolve(hex).ok())
            .and_then(|id| Some((id, repo.commit(&id).ok()?)));
        match found {
            Some((id, c)) => html! {
                a href={ "/" (seg(name)) "/commit/" (id.to_hex()) } { (c.message.lines().next().unwrap_or("")) }
                " · " (when(c.committer.time))
            },
            None => html! { span.id { (version.short()) } },
        }
    };
    let id = |hex: &str| {
        ObjectId::from_hex(hex)
            .filter(|id| repo.store.contains(id).unwrap_or(false))
            .ok_or_else(|| format!("no version {hex} here"))
    };
    let (a, b) = (id(before)?, id(after)?);
    let base = format!("/{}", seg(name));
    let (src_a, src_b) = (
        format!("{base}/preview/{}", a.to_hex()),
        format!("{base}/preview/{}", b.to_hex()),
    );
    // Each side shows the comments carried to its version, when the link
    // names the file and the commits (read-only: a comment is made on the file's page).
    let side = |commit: Option<&str>, version: &ObjectId| {
        let commit = commit.and_then(|hex| repo.resolve(hex).ok())?;
        let rev = commit.to_hex();
        let place = crate::comments::FilePlace {
            name,
            rev: &rev,
            commit,
            path: label,
        };
        (!label.is_empty()).then(|| {
            crate::comments::file_comments(
                repo,
                &place,
                crate::comments::picture_size(repo, version),
                &Viewer {
                    people: viewer.people.clone(),
                    ..Viewer::default()
                },
                false,
            )
        })
    };
    let (comments_a, comments_b) = (side(commits.0, &a), side(commits.1, &b));
    let pins = |c: &Option<crate::comments::FileComments>| {
        c.as_ref().map_or_else(|| html! {}, |c| c.pins.clone())
    };
    let threads = |c: &Option<crate::comments::FileComments>| {
        c.as_ref().map_or_else(|| html! {}, |c| c.threads.clone())
    };
    let body = html! {
        h1 { "Compare " (label) }
        h2 { "Side by side" }
        div.controls { label { "zoom " input #zoom type="range" min="1" max="8" step="0.5" value="1" aria-label="zoom both versions"; } span.muted { "scroll either picture: both move" } }
        div.twoup {
            figure { div.pan { div.marked { img #before src=(src_a) alt={ "before: " (label) }; (pins(&comments_a)) } } figcaption { "before: " (named(commits.0, &a)) } (threads(&comments_a)) }
            figure { div.pan { div.marked { img #after src=(src_b) alt={ "after: " (label) }; (pins(&comments_b)) } } figcaption { "after: " (named(commits.1, &b)) } (threads(&comments_b)) }
        }
        h2 { "Over each other" }
        div.controls {
            span role="radiogroup" aria-label="how the two are laid over each other" {
                label { input type="radio" name="mode" value="swipe" checked; " swipe" } " "
                label { input type="radio" name="mode" value="onion"; " onion skin" } " "
                label { input type="radio" name="mode" value="difference"; " difference" }
            }
            label { "before " input #slider type="range" min="0" max="100" value="50" aria-label="how much of each version shows"; " after" }
        }
        div.stack { img src=(src_a) alt={ "before: " (label) }; img.over #over src=(src_b) alt={ "after: " (label) }; }
        script src="/-/compare.js" {}
    };
    Ok(html(layout(&format!("Compare {label}"), Some(name), body)))
}

/// What to search: file names and paths, or commit messages and authors.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SearchIn {
    /// Paths at the revision.
    Files,
    /// Commits from the revision back.
    Commits,
}

/// The search form and a page of its hits (`skip` in).
pub fn search(
    repo: &Repository,
    name: &str,
    query: &str,
    rev: &str,
    what: SearchIn,
    skip: usize,
) -> PageResult {
    let base = format!("/{}", seg(name));
    let (commit, tree) = tree_of(repo, rev)?;
    let next = |skip: usize| {
        format!(
            "{base}/search?q={}&rev={}&in={}&skip={skip}",
            seg(query),
            seg(rev),
            if what == SearchIn::Files {
                "files"
            } else {
                "commits"
            }
        )
    };
    let results = match (query.trim().is_empty(), what) {
        (true, _) => html! {},
        (false, SearchIn::Files) => {
            let hits = crate::search::paths(repo, &tree, query.trim(), skip)?;
            html! {
                @if hits.page.is_empty() { p.muted { "No file name at " (rev) " holds “" (query) "”." } }
                @let pictures: Vec<&(String, ObjectId)> = hits.page.iter().filter(|(p, _)| media_of(p) == Media::Image).collect();
                @if !pictures.is_empty() {
                    div.wall { @for (p, id) in &pictures {
                        a.ph href={ (base) "/file/" (seg(rev)) "/" (path_url(p)) } style="--r:1.5" title=(p) {
                            img loading="lazy" src={ (base) "/thumb/" (id.to_hex()) } alt=(p);
                        }
                    } }
                }
                ul.plain.commits { @for (p, _) in &hits.page { li { a href={ (base) "/file/" (seg(rev)) "/" (path_url(p)) } { (p) } } } }
                (pager(skip, hits.more, &next))
            }
        }
        (false, SearchIn::Commits) => {
            let hits = crate::search::commits(repo, &commit, query.trim(), skip)?;
            html! {
                @if hits.page.is_empty() { p.muted { "No commit from " (rev) " back mentions “" (query) "”." } }
                div.scroll { table { @for c in &hits.page {
                    tr { td { a href={ (base) "/commit/" (c.id.to_hex()) } { (c.id.short()) } } td { (c.subject) } td.muted { (c.author) } td.muted.wide { (when(c.time)) } }
                } } }
                (pager(skip, hits.more, &next))
            }
        }
    };
    let body = html! {
        h1 { "Search" }
        form.controls method="get" action={ (base) "/search" } role="search" {
            label { "Find " input type="search" name="q" value=(query) autofocus; }
            label { "in " select name="in" {
                option value="files" selected[what == SearchIn::Files] { "file names" }
                option value="commits" selected[what == SearchIn::Commits] { "commit messages and authors" }
            } }
            label { "at " input type="text" name="rev" value=(rev) size="12"; }
            button type="submit" { "Search" }
        }
        (results)
    };
    Ok(html(layout("Search", Some(name), body)))
}

/// Links to the page of hits before and after this one.
fn pager(skip: usize, more: bool, url: &dyn Fn(usize) -> String) -> Markup {
    html! { p {
        @if skip > 0 { a href=(url(skip.saturating_sub(crate::search::HITS_PER_PAGE))) { "← previous" } " " }
        @if more { a rel="next" href=(url(skip + crate::search::HITS_PER_PAGE)) { "next →" } }
    } }
}

/// Who holds which path; admins get a button to break each lock.
pub fn locks(repo: &Repository, name: &str, viewer: &Viewer) -> PageResult {
    let table = repo.locks().path_locks().map_err(r)?;
    let base = format!("/{}", seg(name));
    let body = html! {
        h1 { "Locks" }
        @if table.is_empty() { p.muted { "Nobody holds a lock." } }
        table { @for l in table.all() {
            tr {
                td { (l.path) } td { (l.owner) } td.muted { (l.replica) } td.muted { "since " (when(l.since as i64)) }
                td { @if viewer.admin {
                    form method="post" action={ (base) "/locks/break" } {
                        input type="hidden" name="path" value=(l.path);
                        @if let Some(secret) = &viewer.form_secret { input type="hidden" name="form_secret" value=(secret); }
                        button type="submit" { "Break" }
                    }
                } }
            }
        } }
    };
    Ok(html(layout("Locks", Some(name), body)))
}

/// What a picture, film or sound says of itself, described once per
/// version however many ask at once, the last ones kept (an MP4's index
/// was read again on every visit of its page).
fn media_facts(repo: &Repository, e: &FlatEntry) -> Vec<String> {
    static DESCRIBED: std::sync::LazyLock<
        crate::flights::Flights<(std::path::PathBuf, dmv_repo::store::ObjectId), Vec<String>>,
    > = std::sync::LazyLock::new(|| crate::flights::Flights::new(1024));
    DESCRIBED.get(&(repo.dmv.clone(), e.id), || {
        let _share = crate::flights::EXPENSIVE.take(1);
        match repo.history().diff_side(Some(e), None) {
            Ok(dmv_repo::DiffSide::Binary { facts }) => facts,
            _ => Vec::new(),
        }
    })
}
