//! A folder of photos as people look at them in a photo library: a wall
//! of rows that keep each photo's shape (Flickr's justified layout, as
//! Google Photos and Immich show a library), grouped by the day each was
//! taken, newest day first and a day in the order it was shot, with a
//! timeline of months; a page at a time, the next one fetched as it
//! scrolls into view (`/-/app.js`), which also opens a photo in a
//! lightbox and picks photos to download as one zip.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use dmv_repo::store::object::{EntryKind, TreeEntry};
use dmv_repo::store::ObjectId;
use dmv_repo::{human_bytes, Repository};
use maud::{html, Markup};

use crate::flights::{Flights, EXPENSIVE};
use crate::media::{data_here, media_of, Media};
use crate::urls::{path_url, seg};
use crate::words::{icon, Icon, MONTHS};

/// Photos on one page of a wall.
pub const PHOTOS_PER_PAGE: usize = 240;
/// Entries of a folder a wall reads to sort by date; a larger folder's
/// wall shows its entries by name, a page at a time.
pub const MOST_SORTED: usize = 20_000;
/// Bytes of a picture read for its shape and facts (its header and EXIF).
const HEAD: u64 = 64 << 10;
/// Commits looked back through for the date of a photo that does not say
/// when it was taken.
const COMMITS_FOR_DATES: usize = 1000;

/// What the wall knows of a picture.
#[derive(Clone)]
struct Shape {
    /// Width over height (1.5 for a picture whose data is not here).
    ratio: f32,
    /// Whether it was read (false: its data was not here, and the page
    /// takes the shape of its thumbnail once that is loaded).
    known: bool,
    taken: Option<String>,
    /// Its size, camera, lens and exposure, as the lightbox shows them.
    facts: String,
}

/// Shapes by repository, content id and whether its data was here: a
/// version is read once, whatever commit or folder shows it (a 100-byte
/// answer each; 100,000 kept), and read again once its data arrives (a
/// server's view of a bucket fetches a photo when its thumbnail is asked for).
static SHAPES: LazyLock<Flights<(PathBuf, ObjectId, bool), Shape>> =
    LazyLock::new(|| Flights::new(100_000));

fn shape(repo: &Repository, e: &TreeEntry) -> Shape {
    let here = data_here(repo, &e.id);
    SHAPES.get(&(repo.dmv.clone(), e.id, here), || {
        let unknown = Shape {
            ratio: 1.5,
            known: false,
            taken: None,
            facts: String::new(),
        };
        if !here {
            return unknown;
        }
        let mut head = Vec::new();
        let read = repo
            .store
            .content_reader_at(&e.id, 0)
            .map_err(std::io::Error::other)
            .and_then(|r| r.take(HEAD).read_to_end(&mut head));
        if read.is_err() {
            return unknown;
        }
        match dmv_media::picture_shape(&head[..]) {
            Some(s) => Shape {
                ratio: (s.width as f32 / s.height as f32).clamp(0.25, 4.0),
                known: true,
                taken: s.taken,
                facts: dmv_media::media_facts(std::io::Cursor::new(&head)).join(" · "),
            },
            None => unknown,
        }
    })
}

/// A photo on the wall.
struct Photo {
    name: String,
    id: ObjectId,
    size: u64,
    shape: Shape,
    /// `YYYY-MM-DD HH:MM:SS`: when taken, else when committed.
    when: String,
}

/// Where the wall is and what its page links say.
pub(crate) struct WallPlace<'a> {
    pub repo_name: &'a str,
    pub rev: &'a str,
    pub commit: ObjectId,
    /// The folder, `""` or `a/b/`.
    pub prefix: &'a str,
    pub page: usize,
}

/// A folder's photos in the wall's order and its other entries.
struct Sorted {
    photos: Vec<Photo>,
    others: Vec<TreeEntry>,
    /// Every entry was read (false: the folder is past [`MOST_SORTED`]).
    whole: bool,
    /// The photos whose data was not here when they were sorted (a
    /// bucket's view): once one's data arrives, the wall is sorted again.
    unread: Vec<ObjectId>,
}

/// Walls sorted lately, by repository, commit and folder: a second visit,
/// or the next page, reads and sorts nothing again (a wall of 10,000
/// photos took 0.7 s a page, warm, before).
type WallKey = (PathBuf, ObjectId, String);
static SORTED: LazyLock<Flights<WallKey, Result<Arc<Sorted>, String>>> =
    LazyLock::new(|| Flights::new(WALLS_KEPT));
/// Folders' walls kept sorted (20,000 photos take about 4 MB).
const WALLS_KEPT: usize = 8;

/// The folder's other entries (shown as tiles) and its photos' wall.
pub(crate) fn wall(
    repo: &Repository,
    folder: &ObjectId,
    at: &WallPlace<'_>,
) -> Result<Markup, String> {
    let key = (repo.dmv.clone(), at.commit, at.prefix.to_string());
    let mut sorted = SORTED.get(&key, || sort(repo, folder, at).map(Arc::new))?;
    if sorted.unread.iter().any(|id| data_here(repo, id)) {
        SORTED.forget(&key);
        sorted = SORTED.get(&key, || sort(repo, folder, at).map(Arc::new))?;
    }
    let Sorted {
        photos,
        others,
        whole,
        ..
    } = &*sorted;
    let whole = *whole;
    let pages = photos.len().div_ceil(PHOTOS_PER_PAGE).max(1);
    let page = at.page.min(pages - 1);
    let shown = &photos[(page * PHOTOS_PER_PAGE).min(photos.len())
        ..((page + 1) * PHOTOS_PER_PAGE).min(photos.len())];
    let base = format!("/{}", seg(at.repo_name));
    let here = format!("{base}/tree/{}/{}", seg(at.rev), path_url(at.prefix));
    // Months for the timeline: (YYYY-MM, photos, the page it starts on).
    let mut months: Vec<(String, usize, usize)> = Vec::new();
    for (i, p) in photos.iter().enumerate() {
        let month = p.when.get(..7).unwrap_or("").to_string();
        match months.last_mut() {
            Some((m, n, _)) if *m == month => *n += 1,
            _ => months.push((month, 1, i / PHOTOS_PER_PAGE)),
        }
    }
    let month_word = |m: &str| -> String {
        match (
            m.get(..4),
            m.get(5..7).and_then(|n| n.parse::<usize>().ok()),
        ) {
            (Some(y), Some(n)) if (1..=12).contains(&n) => format!("{} {y}", MONTHS[n - 1]),
            _ => "no date".into(),
        }
    };
    let day_word = |d: &str| -> String {
        match (
            d.get(..4),
            d.get(5..7).and_then(|n| n.parse::<usize>().ok()),
            d.get(8..10).and_then(|n| n.parse::<u32>().ok()),
        ) {
            (Some(y), Some(m), Some(day)) if (1..=12).contains(&m) => {
                format!("{day} {} {y}", MONTHS[m - 1])
            }
            _ => "No date".into(),
        }
    };
    let mut days: Vec<(&str, Vec<&Photo>)> = Vec::new();
    for p in shown {
        let day = p.when.get(..10).unwrap_or("");
        match days.last_mut() {
            Some((d, list)) if *d == day => list.push(p),
            _ => days.push((day, vec![p])),
        }
    }
    let zip = format!("{base}/zip/{}/{}", seg(at.rev), path_url(at.prefix));
    Ok(html! {
        @if !others.is_empty() {
            ul.tiles { @for e in others {
                @let n = String::from_utf8_lossy(&e.name).into_owned();
                li { @if e.kind == EntryKind::Dir {
                    a href={ (here) (seg(&n)) "/" } { (icon(Icon::Folder)) span.name { (n) } }
                } @else {
                    a href={ (base) "/file/" (seg(at.rev)) "/" (path_url(&format!("{}{n}", at.prefix))) } {
                        (icon(match media_of(&n) { Media::Video => Icon::Film, Media::Audio => Icon::Sound, _ => Icon::File }))
                        span.name { (n) }
                    }
                    span.muted { (human_bytes(e.size)) }
                } }
            } }
        }
        @if !whole { p.muted { "This folder holds more than " (MOST_SORTED) " entries: the wall shows the first ones; the list view shows them all." } }
        @if !photos.is_empty() {
            @if months.len() > 1 {
                nav.timeline aria-label="timeline" { @for (m, n, p) in &months {
                    a href={ (here) "?page=" (p) "#m-" (m) } { (month_word(m)) } span.muted { " " (n) }
                } }
            }
            div #photos data-zip=(zip) {
                @for (i, (day, list)) in days.iter().enumerate() {
                    @let first_of_month = i == 0 || days[i - 1].0.get(..7) != day.get(..7);
                    h2.day id={ "d-" (day) } {
                        @if first_of_month { span id={ "m-" (day.get(..7).unwrap_or("")) } {} }
                        (day_word(day)) span.muted { " · " (list.len()) }
                    }
                    div.wall { @for p in list {
                        a.ph href={ (base) "/file/" (seg(at.rev)) "/" (path_url(&format!("{}{}", at.prefix, p.name))) }
                            style={ "--r:" (format!("{:.3}", p.shape.ratio)) }
                            data-guess=[(!p.shape.known).then_some("1")]
                            data-name=(p.name)
                            data-preview={ (base) "/preview/" (p.id.to_hex()) }
                            data-facts={ (p.shape.facts) @if !p.shape.facts.is_empty() { " · " } (human_bytes(p.size)) } {
                            img loading="lazy" src={ (base) "/thumb/" (p.id.to_hex()) } alt=(p.name);
                            span.tick {}
                        }
                    } }
                }
            }
            @if page + 1 < pages {
                p { a.more rel="next" href={ (here) "?page=" (page + 1) } { "older photos →" } }
            }
            @if page > 0 { p { a href={ (here) "?page=" (page - 1) } { "← newer photos" } } }
            div.bar #picked hidden { span.count {} a.zip hidden download { "download as zip" } }
        }
        @if photos.is_empty() && others.is_empty() { p.muted { "This folder is empty." } }
    })
}

/// Reads the folder, its photos' shapes and dates, and sorts them.
fn sort(repo: &Repository, folder: &ObjectId, at: &WallPlace<'_>) -> Result<Sorted, String> {
    let r = |e: dmv_repo::RepoError| e.to_string();
    let mut entries = Vec::new();
    let mut after: Option<Vec<u8>> = None;
    let mut whole = true;
    loop {
        let (page, more) =
            dmv_repo::tree::read_dir_page(&repo.store, folder, after.as_deref(), 5_000)
                .map_err(r)?;
        after = page.last().map(|e| e.name.clone());
        entries.extend(page);
        if !more {
            break;
        }
        if entries.len() >= MOST_SORTED {
            whole = false;
            break;
        }
    }
    let is_picture = |e: &TreeEntry| {
        e.kind.is_file() && media_of(&String::from_utf8_lossy(&e.name)) == Media::Image
    };
    let (pictures, others): (Vec<TreeEntry>, Vec<TreeEntry>) =
        entries.into_iter().partition(is_picture);
    let shapes: Vec<Shape> = {
        let _share = EXPENSIVE.take(1);
        pictures.iter().map(|e| shape(repo, e)).collect()
    };
    // A photo that does not say when it was taken is dated by the commit
    // that last changed it.
    let undated: Vec<Vec<u8>> = pictures
        .iter()
        .zip(&shapes)
        .filter(|(_, s)| s.taken.is_none())
        .map(|(e, _)| e.name.clone())
        .collect();
    let mut committed: HashMap<Vec<u8>, String> = HashMap::new();
    if !undated.is_empty() {
        let last = repo
            .history()
            .last_changes(
                &at.commit,
                at.prefix.trim_end_matches('/').as_bytes(),
                &undated,
                COMMITS_FOR_DATES,
            )
            .map_err(r)?;
        let mut times: HashMap<ObjectId, String> = HashMap::new();
        for (name, id) in last {
            let time = match times.get(&id) {
                Some(t) => t.clone(),
                None => {
                    let t = repo.commit(&id).map_err(r)?.committer.time;
                    let t = dmv_repo::utc_time(t)[..19].to_string();
                    times.insert(id, t.clone());
                    t
                }
            };
            committed.insert(name, time);
        }
    }
    let mut photos: Vec<Photo> = pictures
        .into_iter()
        .zip(shapes)
        .map(|(e, shape)| {
            let when = shape
                .taken
                .clone()
                .or_else(|| committed.get(&e.name).cloned())
                .unwrap_or_default();
            Photo {
                name: String::from_utf8_lossy(&e.name).into_owned(),
                id: e.id,
                size: e.size,
                shape,
                when,
            }
        })
        .collect();
    // Newest day first; within a day, in the order shot.
    photos.sort_by(|a, b| {
        b.when
            .get(..10)
            .cmp(&a.when.get(..10))
            .then_with(|| a.when.cmp(&b.when))
            .then_with(|| a.name.cmp(&b.name))
    });
    let unread = photos
        .iter()
        .filter(|p| !p.shape.known && !data_here(repo, &p.id))
        .map(|p| p.id)
        .collect();
    Ok(Sorted {
        photos,
        others,
        whole,
        unread,
    })
}
