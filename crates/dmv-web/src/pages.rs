//! The pages, rendered on the server as plain HTML (links and forms; the
//! image comparison slider is the only script). Every page reads only what
//! it shows: history by pages, folders by pages, files by ranges.

use dmv_repo::store::object::EntryKind;
use dmv_repo::store::ObjectId;
use dmv_repo::{human_bytes, utc_time, Change, ChangeKind, FlatEntry, Listed, Repository};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use crate::media::{media_of, Media};
use crate::reply::{Reply, Viewer};
use dmv_repo::ref_names::{BRANCHES, TAGS};

/// Commits per page of history, entries per page of a folder.
pub const COMMITS_PER_PAGE: usize = 50;
pub const ENTRIES_PER_PAGE: usize = 200;
/// Text files up to this size are shown on their page.
const MAX_TEXT_SHOWN: u64 = 256 << 10;
/// Versions listed on a file's page.
const VERSIONS_SHOWN: usize = 20;

/// What a path segment must escape (RFC 3986 path characters stay).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']')
    .add(b'&')
    .add(b'+');

/// One URL segment.
pub fn seg(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// A repository path as URL segments.
fn path_url(path: &str) -> String {
    path.split('/').map(seg).collect::<Vec<_>>().join("/")
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#222}header{background:#223;color:#fff;padding:.6em 1em}header a{color:#fff}\
main{padding:1em;max-width:1200px}table{border-collapse:collapse}td,th{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}\
.thumbs img{max-width:256px;max-height:256px;background:#eee}.muted{color:#777}pre{background:#f6f6f6;padding:1em;overflow:auto}\
.compare{position:relative;display:inline-block}.compare img{display:block;max-width:100%}.compare .over{position:absolute;top:0;left:0;clip-path:inset(0 50% 0 0)}\
.side{display:flex;gap:1em;flex-wrap:wrap}.side img{max-width:580px}form.inline{display:inline}\
button.link{background:none;border:0;padding:0;color:inherit;font:inherit;text-decoration:underline;cursor:pointer}";

/// The image comparison slider, served as a file of its own (`/-/compare.js`):
/// pages allow no inline script.
pub const COMPARE_SCRIPT: &str =
    "document.getElementById('slider').addEventListener('input',function(e){document.getElementById('over').style.clipPath='inset(0 '+e.target.value+'% 0 0)';});";

pub fn layout(title: &str, repo: Option<&str>, body: Markup) -> String {
    layout_with(title, repo, body, true)
}

/// [`layout`], with or without the log out button (the login page has nothing to log out of).
fn layout_with(title: &str, repo: Option<&str>, body: Markup, logout: bool) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; meta name="viewport" content="width=device-width"; title { (title) " · DMV" } style { (PreEscaped(STYLE)) } }
            body {
                header {
                    a href="/" { "DMV" }
                    @if let Some(r) = repo {
                        " / " a href={ "/" (seg(r)) "/" } { (r) }
                        " · " a href={ "/" (seg(r)) "/locks" } { "locks" }
                    }
                    @if logout { " · " form.inline method="post" action="/logout" { button.link type="submit" { "log out" } } }
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
    Reply::Html { status, body: layout("Error", repo, html! { h1 { "Error " (status) } p { (message) } }) }
}

/// The server's front page: the repositories it serves (by the names in
/// `repos`), each a link to its page.
pub fn index(repos: &[String]) -> String {
    layout("Repositories", None, html! { h1 { "Repositories" } ul { @for r in repos { li { a href={ "/" (seg(r)) "/" } { (r) } } } } })
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
    layout("Log out", None, html! { h1 { "Log out" } form method="post" action="/logout" { button type="submit" { "Log out" } } })
}

type PageResult = Result<Reply, String>;

/// Whether a file's data is here: in a full replica its first object says
/// so (objects land with all they reach); a partial one checks its chunks.
pub fn data_here(repo: &Repository, id: &ObjectId) -> bool {
    match repo.config.partial {
        false => repo.store.contains(id).unwrap_or(false),
        true => repo.store.check_content_present(id).is_ok(),
    }
}

fn r(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Branches and tags.
pub fn home(repo: &Repository, name: &str) -> PageResult {
    let branches = repo.refs.list(BRANCHES).map_err(r)?;
    let tags = repo.refs.list(TAGS).map_err(r)?;
    let base = format!("/{}", seg(name));
    let body = html! {
        h1 { (name) }
        h2 { "Branches" }
        @if branches.is_empty() { p.muted { "No commits yet." } }
        table { @for (b, id) in &branches {
            @let short = b.trim_start_matches(BRANCHES);
            tr { td { (short) } td { a href={ (base) "/log/" (seg(short)) } { "history" } } td { a href={ (base) "/tree/" (seg(short)) "/" } { "files" } } td.muted { (id.short()) } }
        } }
        @if !tags.is_empty() {
            h2 { "Tags" }
            table { @for (t, id) in &tags {
                @let short = t.trim_start_matches(TAGS);
                @let commit = repo.peel(id).unwrap_or(*id);
                tr { td { (short) } td { a href={ (base) "/commit/" (commit.to_hex()) } { (commit.short()) } } }
            } }
        }
    };
    Ok(html(layout(name, Some(name), body)))
}

/// History from `rev`, a page at a time (`skip` commits in).
pub fn log(repo: &Repository, name: &str, rev: &str, skip: usize) -> PageResult {
    let start = repo.resolve(rev).map_err(r)?;
    let mut page = Vec::with_capacity(COMMITS_PER_PAGE + 1);
    for c in repo.walk(&[start]).map_err(r)?.skip(skip).take(COMMITS_PER_PAGE + 1) {
        page.push(c.map_err(r)?);
    }
    let more = page.len() > COMMITS_PER_PAGE;
    page.truncate(COMMITS_PER_PAGE);
    let base = format!("/{}", seg(name));
    let body = html! {
        h1 { "History of " (rev) }
        table { @for c in &page {
            tr {
                td { a href={ (base) "/commit/" (c.id.to_hex()) } { (c.id.short()) } }
                td { (c.commit.message.lines().next().unwrap_or("")) }
                td.muted { (c.commit.author.name) }
                td.muted { (utc_time(c.commit.committer.time)) }
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
        Some(e) if media_of(path) == Media::Image => html! { img loading="lazy" src={ (base) "/thumb/" (e.id.to_hex()) } alt=(path); },
        Some(_) => html! { span.muted { "—" } },
        None => html! { span.muted { "(none)" } },
    }
}

/// A commit: who, when, why, and each changed file with its before and after.
pub fn commit(repo: &Repository, name: &str, id: &str) -> PageResult {
    let id = repo.resolve(id).map_err(r)?;
    let c = repo.commit(&id).map_err(r)?;
    let parent_tree = match c.parents.first() {
        Some(p) => Some(repo.commit(p).map_err(r)?.tree),
        None => None,
    };
    let changes: Vec<Change> = dmv_repo::diff_trees(&repo.store, parent_tree.as_ref(), Some(&c.tree)).map_err(r)?;
    let listed = dmv_repo::find_renames(&repo.store, changes).map_err(r)?;
    let base = format!("/{}", seg(name));
    let hex = id.to_hex();
    let body = html! {
        h1 { (c.message.lines().next().unwrap_or("")) }
        p.muted { (c.author.name) " <" (c.author.email) "> · " (utc_time(c.author.time)) " · " (id.to_hex()) }
        @if c.message.lines().count() > 1 { pre { (c.message) } }
        p { @for p in &c.parents { "parent " a href={ (base) "/commit/" (p.to_hex()) } { (p.short()) } " " } a href={ (base) "/tree/" (hex) "/" } { "files at this commit" } }
        table.thumbs {
            tr { th { "change" } th { "path" } th { "before" } th { "after" } th {} }
            @for l in &listed {
                @let (kind, path, shown, old, new) = match l {
                    Listed::Change(ch) => (kind_word(ch.kind), String::from_utf8_lossy(&ch.path).into_owned(), String::from_utf8_lossy(&ch.path).into_owned(), ch.old, ch.new),
                    Listed::Renamed { from, to, similarity, old, new } => (format!("renamed ({similarity}%)"), String::from_utf8_lossy(to).into_owned(), format!("{} → {}", String::from_utf8_lossy(from), String::from_utf8_lossy(to)), Some(*old), Some(*new)),
                };
                tr {
                    td { (kind) }
                    td { @if new.is_some_and(|e| e.kind != EntryKind::Dir) { a href={ (base) "/file/" (hex) "/" (path_url(&path)) } { (shown) } } @else { (shown) } }
                    td { (thumb(&base, old.as_ref(), &path)) }
                    td { (thumb(&base, new.as_ref(), &path)) }
                    td { @if let (Some(o), Some(n), Media::Image) = (old, new, media_of(&path)) {
                        a href={ (base) "/compare/" (o.id.to_hex()) "/" (n.id.to_hex()) "?name=" (seg(&path)) } { "compare" }
                    } }
                }
            }
        }
    };
    Ok(html(layout(&format!("Commit {}", id.short()), Some(name), body)))
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

/// A folder at `rev`, a page of entries after the name `after`.
pub fn tree(repo: &Repository, name: &str, rev: &str, path: &str, after: Option<&str>) -> PageResult {
    let (_, root) = tree_of(repo, rev)?;
    let folder = match dmv_repo::tree::lookup(&repo.store, &root, path.as_bytes()).map_err(r)? {
        Some(e) if e.kind == EntryKind::Dir => e.id,
        Some(_) => return Err(format!("{path} is a file, not a folder")),
        None => return Err(format!("no folder {path} at {rev}")),
    };
    let (entries, more) = dmv_repo::tree::read_dir_page(&repo.store, &folder, after.map(str::as_bytes), ENTRIES_PER_PAGE).map_err(r)?;
    let base = format!("/{}", seg(name));
    let prefix = if path.is_empty() { String::new() } else { format!("{}/", path.trim_end_matches('/')) };
    let here = format!("{base}/tree/{}/{}", seg(rev), path_url(&prefix));
    let body = html! {
        h1 { (rev) ":/" (prefix) }
        table {
            @for e in &entries {
                @let n = String::from_utf8_lossy(&e.name).into_owned();
                tr {
                    @if e.kind == EntryKind::Dir {
                        td { a href={ (here) (seg(&n)) "/" } { (n) "/" } } td {}
                    } @else {
                        td { a href={ (base) "/file/" (seg(rev)) "/" (path_url(&format!("{prefix}{n}"))) } { (n) } } td.muted { (human_bytes(e.size)) }
                    }
                }
            }
        }
        @if let (true, Some(last)) = (more, entries.last()) {
            p { a rel="next" href={ (here) "?after=" (seg(&String::from_utf8_lossy(&last.name))) } { "next " (ENTRIES_PER_PAGE) " →" } }
        }
    };
    Ok(html(layout(&format!("{rev}:/{prefix}"), Some(name), body)))
}

/// A file at `rev`: shown as what it is (picture, player, text), with a
/// download link and its last versions.
pub fn file(repo: &Repository, name: &str, rev: &str, path: &str) -> PageResult {
    let (commit, root) = tree_of(repo, rev)?;
    let e = match dmv_repo::tree::lookup(&repo.store, &root, path.as_bytes()).map_err(r)? {
        Some(e) if e.kind.is_file() => e,
        _ => return Err(format!("no file {path} at {rev}")),
    };
    let base = format!("/{}", seg(name));
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let raw = format!("{base}/raw/{}/{}", e.id.to_hex(), seg(file_name));
    let present = data_here(repo, &e.id);
    let text = (present && media_of(path) == Media::Text && e.size <= MAX_TEXT_SHOWN).then(|| {
        let mut bytes = Vec::new();
        repo.store.write_content(&e.id, &mut bytes).ok()?;
        String::from_utf8(bytes).ok()
    });
    let versions: Vec<(ObjectId, String, ObjectId)> = repo
        .walk(&[commit])
        .map_err(r)?
        .touching(vec![path.as_bytes().to_vec()])
        .take(VERSIONS_SHOWN)
        .filter_map(|c| {
            let c = c.ok()?;
            let v = dmv_repo::tree::lookup(&repo.store, &c.commit.tree, path.as_bytes()).ok()??;
            Some((c.id, c.commit.message.lines().next().unwrap_or("").to_string(), v.id))
        })
        .collect();
    let body = html! {
        h1 { (path) }
        p.muted { (human_bytes(e.size)) " · " a href={ (raw) "?download=1" } download=(file_name) { "download" } }
        @if !present { p { "This replica does not hold this file's data." } }
        @else {
            @match media_of(path) {
                Media::Image => { a href=(raw) { img src={ (base) "/preview/" (e.id.to_hex()) } alt=(path) style="max-width:100%"; } }
                Media::Video => { video controls preload="metadata" src=(raw) style="max-width:100%" {} }
                Media::Audio => { audio controls preload="metadata" src=(raw) {} }
                _ => {
                    @if let Some(Some(t)) = &text { pre { (t) } }
                }
            }
        }
        h2 { "Versions" }
        table.thumbs { @for (i, (c, msg, v)) in versions.iter().enumerate() {
            tr {
                td { a href={ (base) "/commit/" (c.to_hex()) } { (c.short()) } }
                td { (msg) }
                td { @if media_of(path) == Media::Image { img loading="lazy" src={ (base) "/thumb/" (v.to_hex()) } alt=(path); } }
                td { @if let (Media::Image, Some((_, _, older))) = (media_of(path), versions.get(i + 1)) {
                    @if older != v { a href={ (base) "/compare/" (older.to_hex()) "/" (v.to_hex()) "?name=" (seg(path)) } { "compare with the version before" } }
                } }
            }
        } }
    };
    Ok(html(layout(path, Some(name), body)))
}

/// Two versions of an image side by side, and one over the other with a slider.
pub fn compare(repo: &Repository, name: &str, before: &str, after: &str, label: &str) -> PageResult {
    let id = |hex: &str| ObjectId::from_hex(hex).filter(|id| repo.store.contains(id).unwrap_or(false)).ok_or_else(|| format!("no version {hex} here"));
    let (a, b) = (id(before)?, id(after)?);
    let base = format!("/{}", seg(name));
    let (src_a, src_b) = (format!("{base}/preview/{}", a.to_hex()), format!("{base}/preview/{}", b.to_hex()));
    let body = html! {
        h1 { "Compare " (label) }
        div.side { figure { img #before src=(src_a) alt="before"; figcaption { "before " (a.short()) } } figure { img #after src=(src_b) alt="after"; figcaption { "after " (b.short()) } } }
        h2 { "Over each other" }
        div.compare { img src=(src_a) alt="before"; img.over #over src=(src_b) alt="after"; }
        p { label { "after ← → before " input #slider type="range" min="0" max="100" value="50"; } }
        script src="/-/compare.js" {}
    };
    Ok(html(layout(&format!("Compare {label}"), Some(name), body)))
}

/// Who holds which path; admins get a button to break each lock.
pub fn locks(repo: &Repository, name: &str, viewer: &Viewer) -> PageResult {
    let table = repo.path_locks().map_err(r)?;
    let base = format!("/{}", seg(name));
    let body = html! {
        h1 { "Locks" }
        @if table.is_empty() { p.muted { "Nobody holds a lock." } }
        table { @for l in table.all() {
            tr {
                td { (l.path) } td { (l.owner) } td.muted { (l.replica) } td.muted { "since " (utc_time(l.since as i64)) }
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
