//! A repository's home, as GitHub and Hugging Face open one: its README,
//! the latest change, what the top folder holds, a branch switcher and
//! recent activity, in the words a photographer reads (Git's words stay
//! in titles for those who look for them).

use dmv_repo::ref_names::{BRANCHES, TAGS};
use dmv_repo::store::object::EntryKind;
use dmv_repo::Repository;
use maud::{html, PreEscaped};

use crate::media::{media_of, Media};
use crate::pages::{html, layout, path_url, seg, PageResult};
use crate::words::{icon, when, Icon};

/// Entries of the top folder shown on the home page.
const TOP_ENTRIES: usize = 24;
/// Recent changes listed beside them.
const RECENT: usize = 5;
/// A README larger than this is linked, not shown.
const MAX_README: u64 = 256 << 10;

fn r(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The home of `name` on `branch` (None: the branch HEAD names, else the first).
pub fn home(
    repo: &Repository,
    name: &str,
    branch: Option<&str>,
    bring: Option<crate::media::Bring<'_>>,
) -> PageResult {
    let branches = repo.refs.list(BRANCHES).map_err(r)?;
    let tags = repo.refs.list(TAGS).map_err(r)?;
    let base = format!("/{}", seg(name));
    let short = |b: &str| b.trim_start_matches(BRANCHES).to_string();
    let head = repo
        .history()
        .head_branch()
        .ok()
        .flatten()
        .map(|h| short(&h));
    let chosen = branch
        .map(str::to_string)
        .filter(|b| branches.iter().any(|(r, _)| short(r) == *b))
        .or_else(|| head.filter(|h| branches.iter().any(|(r, _)| short(r) == *h)))
        .or_else(|| branches.first().map(|(r, _)| short(r)));
    let Some(branch) = chosen else {
        let body = html! { h1 { (name) } p.muted { "Nothing here yet: push a first commit, or upload files once a branch exists." } };
        return Ok(html(layout(name, Some(name), body)));
    };
    let tip = repo.resolve(&branch).map_err(r)?;
    let commit = repo.commit(&tip).map_err(r)?;
    let (top, more) =
        dmv_repo::tree::read_dir_page(&repo.store, &commit.tree, None, TOP_ENTRIES).map_err(r)?;
    let readme = top.iter().find(|e| {
        e.kind.is_file()
            && matches!(
                String::from_utf8_lossy(&e.name)
                    .to_ascii_lowercase()
                    .as_str(),
                "readme.md" | "readme" | "readme.txt"
            )
    });
    let readme_html = readme.and_then(|e| {
        if e.size > MAX_README || !crate::media::here_or_brought(repo, &e.id, bring) {
            return None;
        }
        let mut bytes = Vec::new();
        repo.store.write_content(&e.id, &mut bytes).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        Some(
            if String::from_utf8_lossy(&e.name)
                .to_ascii_lowercase()
                .ends_with(".md")
            {
                html! { article.markdown { (PreEscaped(crate::markdown::to_safe_html(&text))) } }
            } else {
                html! { pre { (text) } }
            },
        )
    });
    let query = dmv_repo::LogQuery {
        revision: Some(tip.to_hex()),
        max_count: Some(RECENT),
        ..Default::default()
    };
    let recent: Vec<_> = repo
        .history()
        .log(&query)
        .map_err(r)?
        .filter_map(Result::ok)
        .collect();
    let files = format!("{base}/tree/{}/", seg(&branch));
    let body = html! {
        h1 { (name) }
        div.controls {
            details.switch {
                summary title="git: branch" { "Branch " strong { (branch) } " ▾" }
                ul { @for (b, _) in &branches { @let b = short(b); li { a href={ (base) "/?branch=" (seg(&b)) } { (b) } } } }
            }
            a href=(files) { (icon(Icon::Folder)) " photos and files" }
            a href={ (base) "/log/" (seg(&branch)) } title="git: log" { (icon(Icon::History)) " history" }
        }
        div.home {
            div {
                div.card {
                    a href={ (base) "/commit/" (tip.to_hex()) } { strong { (commit.message.lines().next().unwrap_or("")) } }
                    br;
                    span.muted { (commit.author.name) " · " (when(commit.committer.time)) " · " span.id title="git: commit id" { (tip.short()) } }
                }
                ul.tiles { @for e in &top {
                    @let n = String::from_utf8_lossy(&e.name).into_owned();
                    li { @if e.kind == EntryKind::Dir {
                        a href={ (files) (seg(&n)) "/" } { (icon(Icon::Folder)) span.name { (n) } }
                    } @else {
                        a href={ (base) "/file/" (seg(&branch)) "/" (path_url(&n)) } {
                            (icon(match media_of(&n) { Media::Image => Icon::Picture, Media::Video => Icon::Film, Media::Audio => Icon::Sound, _ => Icon::File }))
                            span.name { (n) }
                        }
                    } }
                } }
                @if more { p { a href=(files) { "all photos and files →" } } }
                @if let Some(readme) = readme_html { div.card { (readme) } }
            }
            aside {
                h2 { "Recent changes" }
                ul.plain.commits { @for c in &recent {
                    li {
                        a.subject href={ (base) "/commit/" (c.id.to_hex()) } { (c.commit.message.lines().next().unwrap_or("")) }
                        span.meta { (c.commit.author.name) " · " (when(c.commit.committer.time)) }
                    }
                } }
                h2 title="git: branches" { "Branches" }
                ul.plain { @for (b, id) in &branches {
                    @let b = short(b);
                    li { a href={ (base) "/?branch=" (seg(&b)) } { (b) } " " span.muted.id { (id.short()) } }
                } }
                @if !tags.is_empty() {
                    h2 title="git: tags" { "Tags" }
                    ul.plain { @for (t, id) in &tags {
                        @let t = t.trim_start_matches(TAGS);
                        @let c = repo.peel(id).unwrap_or(*id);
                        li { a href={ (base) "/commit/" (c.to_hex()) } { (t) } }
                    } }
                }
            }
        }
    };
    Ok(html(layout(name, Some(name), body)))
}
