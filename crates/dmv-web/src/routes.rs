//! Which page a URL under `/{repo}/` asks for, and the answers that are not
//! pages: thumbnails, file content by range, the lock-breaking form.

use std::collections::BTreeMap;

use dmv_repo::store::ObjectId;
use dmv_repo::Repository;

use crate::media::{content_type_of, here_or_brought, Bring};
use crate::pages;
use crate::ranges::{parse_range, ByteRange};
use crate::reply::{Reply, Viewer};
use crate::thumbs::{scaled_jpeg, PREVIEW_EDGE, THUMBNAIL_EDGE};
use crate::upload_page;

/// A request for a page of one repository.
pub struct PageRequest<'a> {
    /// The URL path after `/{repo}/`, percent-decoded.
    pub path: &'a str,
    /// The URL's query parameters, percent-decoded (`skip`, `after`,
    /// `name`, `download`, `view`, `diff`, `q`, `in`, `rev`, `mentioning`,
    /// `by`, `here`, `all`; others are ignored).
    pub query: &'a BTreeMap<String, String>,
    /// The `Range` header, if any.
    pub range: Option<&'a str>,
    /// Who asks: whether the locks page offers to break locks, and the
    /// secret its forms carry.
    pub viewer: &'a Viewer,
    /// Fetches a file version's data that is not here (see [`Bring`]):
    /// given by a server showing a repository kept in a bucket.
    pub bring: Option<Bring<'a>>,
}

/// Answers a GET under `/{name}/` from `repo`.
pub fn respond(repo: &Repository, name: &str, req: &PageRequest<'_>) -> Reply {
    let (head, rest) = req.path.split_once('/').unwrap_or((req.path, ""));
    let query = |k: &str| req.query.get(k).map(String::as_str);
    let answer = match head {
        "" => crate::home::home(repo, name, query("branch"), req.bring),
        "log" => pages::log(
            repo,
            name,
            rest,
            query("skip").and_then(|s| s.parse().ok()).unwrap_or(0),
        ),
        "commit" => {
            let layout = if query("diff") == Some("split") {
                pages::DiffLayout::Split
            } else {
                pages::DiffLayout::Unified
            };
            pages::commit(
                repo,
                name,
                rest,
                query("skip").and_then(|s| s.parse().ok()).unwrap_or(0),
                layout,
            )
        }
        "tree" => {
            let view = match query("view") {
                Some("grid") => Some(pages::FolderView::Grid),
                Some("list") => Some(pages::FolderView::List),
                _ => None,
            };
            split_rev(repo, rest).and_then(|(rev, path)| {
                pages::tree(
                    repo,
                    name,
                    rev,
                    path.trim_end_matches('/'),
                    query("after"),
                    query("page").and_then(|s| s.parse().ok()).unwrap_or(0),
                    view,
                    req.viewer,
                )
            })
        }
        "file" => split_rev(repo, rest)
            .and_then(|(rev, path)| pages::file(repo, name, rev, path, req.viewer, req.bring)),
        "compare" => match rest.split_once('/') {
            Some((a, b)) => pages::compare(
                repo,
                name,
                a,
                b,
                query("name").unwrap_or(""),
                (query("from"), query("to")),
                req.viewer,
            ),
            None => Err("compare needs two versions".into()),
        },
        "locks" if rest.is_empty() => pages::locks(repo, name, req.viewer),
        "reviews" if rest.is_empty() => crate::review_pages::reviews(repo, name, req.viewer),
        "comments" => crate::review_pages::comments(
            repo,
            name,
            if rest.is_empty() { "HEAD" } else { rest },
            &crate::review_pages::CommentsAsked {
                mentioning: query("mentioning"),
                by: query("by"),
                here: query("here").is_some(),
                all: query("all").is_some(),
            },
            req.viewer,
        ),
        "review" => crate::review_pages::review(repo, name, rest, req.viewer),
        "search" if rest.is_empty() => {
            let what = if query("in") == Some("commits") {
                pages::SearchIn::Commits
            } else {
                pages::SearchIn::Files
            };
            let rev = query("rev").filter(|r| !r.is_empty()).unwrap_or("HEAD");
            pages::search(
                repo,
                name,
                query("q").unwrap_or(""),
                rev,
                what,
                query("skip").and_then(|s| s.parse().ok()).unwrap_or(0),
            )
        }
        "upload" => upload_page::upload(repo, name, rest, req.viewer),
        "zip" => split_rev(repo, rest).and_then(|(rev, path)| {
            folder_zip(repo, name, rev, path.trim_end_matches('/'), query("pick"))
        }),
        "thumb" => Ok(image(repo, rest, THUMBNAIL_EDGE, req.bring)),
        "preview" => Ok(image(repo, rest, PREVIEW_EDGE, req.bring)),
        "raw" => content(
            repo,
            rest,
            req.range,
            query("download").is_some(),
            req.bring,
        ),
        _ => Err(format!("no page {}", req.path)),
    };
    answer.unwrap_or_else(|e| pages::error_page(404, Some(name), &e))
}

/// `REV/PATH`, where REV may itself hold slashes (a branch `feature/x`):
/// the shortest leading part that names a revision.
fn split_rev<'p>(repo: &Repository, rest: &'p str) -> Result<(&'p str, &'p str), String> {
    let mut at = 0;
    loop {
        let end = rest[at..].find('/').map_or(rest.len(), |i| at + i);
        if repo.resolve(&rest[..end]).is_ok() {
            return Ok((&rest[..end], rest.get(end + 1..).unwrap_or("")));
        }
        if end == rest.len() {
            return Err(format!("no revision at the start of {rest}"));
        }
        at = end + 1;
    }
}

/// Names one zip may pick from a folder (a photo wall's selection).
pub const MOST_PICKED: usize = 2_000;

/// `REV/FOLDER` as a zip download named after the folder (or the
/// repository) and the commit, checked before the stream starts; with
/// `pick` (names joined by `/`), only those entries of the folder.
fn folder_zip(
    repo: &Repository,
    name: &str,
    rev: &str,
    folder: &str,
    pick: Option<&str>,
) -> Result<Reply, String> {
    let commit = repo.resolve(rev).map_err(|e| e.to_string())?;
    if !folder.is_empty() {
        let root = repo.commit(&commit).map_err(|e| e.to_string())?.tree;
        match dmv_repo::tree::lookup(&repo.store, &root, folder.as_bytes())
            .map_err(|e| e.to_string())?
        {
            Some(e) if e.kind == dmv_repo::store::object::EntryKind::Dir => {}
            _ => return Err(format!("no folder {folder} at {rev}")),
        }
    }
    let stem = folder
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or(name);
    let paths: Vec<Vec<u8>> = match pick.filter(|p| !p.is_empty()) {
        None if folder.is_empty() => Vec::new(),
        None => vec![folder.as_bytes().to_vec()],
        Some(names) => {
            let names: Vec<&str> = names.split('/').filter(|n| !n.is_empty()).collect();
            if names.len() > MOST_PICKED {
                return Err(format!(
                    "{} picked: a zip takes at most {MOST_PICKED}",
                    names.len()
                ));
            }
            if names.iter().any(|n| *n == "." || *n == "..") {
                return Err("a picked name is . or ..".into());
            }
            names
                .iter()
                .map(|n| {
                    if folder.is_empty() {
                        n.as_bytes().to_vec()
                    } else {
                        format!("{folder}/{n}").into_bytes()
                    }
                })
                .collect()
        }
    };
    Ok(Reply::Zip {
        commit,
        paths,
        name: format!("{stem}-{}.zip", commit.short()),
    })
}

fn image(repo: &Repository, hex: &str, edge: u32, bring: Option<Bring<'_>>) -> Reply {
    let scaled = |id: ObjectId| {
        scaled_jpeg(repo, &id, edge).or_else(|e| match crate::media::data_here(repo, &id) {
            false if here_or_brought(repo, &id, bring) => scaled_jpeg(repo, &id, edge),
            _ => Err(e),
        })
    };
    match ObjectId::from_hex(hex)
        .ok_or_else(|| format!("{hex} is not an id"))
        .and_then(scaled)
    {
        Ok(jpeg) => Reply::Jpeg(jpeg),
        Err(e) => pages::error_page(404, None, &e),
    }
}

/// `ID/NAME`: a file's content (the name gives its type), by range.
fn content(
    repo: &Repository,
    rest: &str,
    range: Option<&str>,
    download: bool,
    bring: Option<Bring<'_>>,
) -> Result<Reply, String> {
    let (hex, file_name) = rest.split_once('/').unwrap_or((rest, ""));
    let id = ObjectId::from_hex(hex).ok_or_else(|| format!("{hex} is not an id"))?;
    if !here_or_brought(repo, &id, bring) {
        return Err("this replica does not hold this file's data".into());
    }
    let total = repo.store.content_len(&id).map_err(|e| e.to_string())?;
    let (start, len, partial) = match parse_range(range, total) {
        ByteRange::Whole => (0, total, false),
        ByteRange::Part { start, len } => (start, len, true),
        ByteRange::Unsatisfiable => return Ok(Reply::RangeNotSatisfiable { total }),
    };
    let content_type = content_type_of(file_name);
    let download = (download || !content_type.inline).then(|| file_name.to_string());
    Ok(Reply::Content {
        id,
        content_type,
        start,
        len,
        total,
        partial,
        download,
    })
}

/// Writes `len` bytes of content `id` from `start` (a [`Reply::Content`]).
pub fn write_content(
    repo: &Repository,
    id: &ObjectId,
    start: u64,
    len: u64,
    out: &mut dyn std::io::Write,
) -> std::io::Result<u64> {
    let reader = repo
        .store
        .content_reader_at(id, start)
        .map_err(std::io::Error::other)?;
    std::io::copy(&mut std::io::Read::take(reader, len), out)
}

/// What a lock form asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockAction {
    /// Take the lock of a path for the viewer (from the replica `web`).
    Take,
    /// Give back the viewer's own lock.
    Release,
    /// Break someone else's lock: admins only.
    Break,
}

/// The replica a lock taken from a browser is recorded as held from.
pub const WEB_REPLICA: &str = "web";

/// Makes a lock form's change where the locks are kept, for the user
/// named: given by a server whose repository keeps its locks elsewhere (a
/// bucket's lock objects), whose own rules refuse a path held by another.
pub type LockKeeper<'a> = &'a mut dyn FnMut(&[String], &str, LockAction) -> Result<(), String>;

/// A lock form, under the rules `dmv lock` and `dmv unlock` meet at the
/// server: a lock needs a named user, a path held by someone else (or by
/// the same person from another replica) is refused, only an admin
/// breaks another's lock. The change is made in `repo`'s lock table, or by
/// `keeper` when given. Then back to `back` when it is a page of this
/// repository, else to the locks page.
pub fn change_lock(
    repo: &Repository,
    name: &str,
    path: &str,
    action: LockAction,
    viewer: &Viewer,
    back: Option<&str>,
    keeper: Option<LockKeeper<'_>>,
) -> Reply {
    let Some(user) = viewer
        .user
        .as_deref()
        .or((action == LockAction::Break).then_some(""))
    else {
        return pages::error_page(
            403,
            Some(name),
            "locks are held by a named user: this token names none",
        );
    };
    match action {
        LockAction::Break if !viewer.admin => {
            return pages::error_page(403, Some(name), "breaking a lock needs an admin token")
        }
        LockAction::Take if !viewer.may_write => {
            return pages::error_page(403, Some(name), "taking a lock needs a write token")
        }
        _ => {}
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let paths = [path.to_string()];
    let done = match keeper {
        Some(keeper) => keeper(&paths, user, action),
        None => repo
            .locks()
            .hold_locks()
            .map_err(|e| e.to_string())
            .and_then(|mut held| {
                match action {
                    LockAction::Take => held.table.lock(&paths, user, WEB_REPLICA, now).map(drop),
                    LockAction::Release => held.table.unlock(&paths, user, false).map(drop),
                    LockAction::Break => held.table.unlock(&paths, user, true).map(drop),
                }
                .map_err(|e| e.to_string())?;
                held.save().map_err(|e| e.to_string())
            }),
    };
    let ours = format!("/{}/", pages::seg(name));
    match done {
        Ok(()) => Reply::Redirect(
            back.filter(|b| b.starts_with(&ours) && !b.contains("//") && !b.contains('\\'))
                .map_or_else(|| format!("{ours}locks"), str::to_string),
        ),
        Err(e) => pages::error_page(409, Some(name), &e),
    }
}
