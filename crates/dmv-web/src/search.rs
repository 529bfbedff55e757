//! Search: file names and paths at a revision, and commit messages and
//! authors from a revision back, a page of hits at a time. The paths of the
//! last trees searched are kept in memory by their tree's id, so typing
//! more letters reads no tree again.

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use dmv_repo::store::ObjectId;
use dmv_repo::Repository;

use crate::flights::{Flights, EXPENSIVE};

/// Hits on one page of results.
pub const HITS_PER_PAGE: usize = 50;
/// Commits a search of history reads at most, from the revision back.
pub const COMMITS_SEARCHED: usize = 100_000;
/// Trees whose paths are kept (a million paths take about 60 MB).
const TREES_KEPT: usize = 2;

/// Every path of a tree, sorted, with its lowercase form beside it for
/// matching and its content's id (a picture's hit shows its thumbnail).
type Paths = Arc<Vec<(String, String, ObjectId)>>;

/// The paths of the trees searched last, each listed once however many
/// search at once (300 cold searches of a tree of 100,000 files each
/// listed it: 5.6 GB), by repository and tree.
static LISTED: LazyLock<Flights<(PathBuf, ObjectId), Listed>> =
    LazyLock::new(|| Flights::new(TREES_KEPT));

/// A tree's paths, or why they could not be read.
type Listed = Result<Paths, String>;

/// A page of results and whether more follow.
pub struct Hits<T> {
    /// The hits of this page.
    pub page: Vec<T>,
    /// More hits follow.
    pub more: bool,
}

/// Paths at `tree` holding `query` (any case), with their content ids, `skip` hits in.
pub fn paths(
    repo: &Repository,
    tree: &ObjectId,
    query: &str,
    skip: usize,
) -> Result<Hits<(String, ObjectId)>, String> {
    let all = paths_of(repo, tree)?;
    let wanted = query.to_lowercase();
    let mut found = all
        .iter()
        .filter(|(_, lower, _)| lower.contains(&wanted))
        .map(|(path, _, id)| (path.clone(), *id))
        .skip(skip)
        .take(HITS_PER_PAGE + 1)
        .collect::<Vec<_>>();
    let more = found.len() > HITS_PER_PAGE;
    found.truncate(HITS_PER_PAGE);
    Ok(Hits { page: found, more })
}

/// The paths of `tree`, read once while it is among the last searched.
fn paths_of(repo: &Repository, tree: &ObjectId) -> Result<Paths, String> {
    LISTED.get(&(repo.dmv.clone(), *tree), || {
        let _share = EXPENSIVE.take(1);
        let flat = dmv_repo::tree::flatten_sorted(&repo.store, tree).map_err(|e| e.to_string())?;
        Ok(Arc::new(
            flat.into_iter()
                .map(|(path, entry)| {
                    let path = String::from_utf8_lossy(&path).into_owned();
                    let lower = path.to_lowercase();
                    (path, lower, entry.id)
                })
                .collect(),
        ))
    })
}

/// A commit a search found.
pub struct FoundCommit {
    /// Its id.
    pub id: ObjectId,
    /// The first line of its message.
    pub subject: String,
    /// Its author's name.
    pub author: String,
    /// When it was made (seconds since the epoch).
    pub time: i64,
}

/// Commits from `start` back (at most [`COMMITS_SEARCHED`]) whose message,
/// author name or email holds `query` (any case), `skip` hits in.
pub fn commits(
    repo: &Repository,
    start: &ObjectId,
    query: &str,
    skip: usize,
) -> Result<Hits<FoundCommit>, String> {
    let wanted = query.to_lowercase();
    let mut found = Vec::new();
    for c in repo
        .history()
        .walk(&[*start])
        .map_err(|e| e.to_string())?
        .take(COMMITS_SEARCHED)
    {
        let c = c.map_err(|e| e.to_string())?;
        let hit = [
            &c.commit.message,
            &c.commit.author.name,
            &c.commit.author.email,
        ]
        .iter()
        .any(|t| t.to_lowercase().contains(&wanted));
        if hit {
            found.push(FoundCommit {
                id: c.id,
                subject: c.commit.message.lines().next().unwrap_or("").to_string(),
                author: c.commit.author.name.clone(),
                time: c.commit.committer.time,
            });
            if found.len() > skip + HITS_PER_PAGE {
                break;
            }
        }
    }
    let mut page: Vec<FoundCommit> = found.into_iter().skip(skip).collect();
    let more = page.len() > HITS_PER_PAGE;
    page.truncate(HITS_PER_PAGE);
    Ok(Hits { page, more })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmv_repo::store::object::EntryKind;
    use dmv_repo::store::ObjectKind;
    use dmv_repo::FlatEntry;

    /// 300 cold searches of one large tree at once each listed the whole
    /// tree (5.6 GB on the server). Counted in index lookups: however many
    /// search at once, the tree is listed once.
    #[test]
    fn searches_of_one_tree_at_once_list_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_repo::store::ChunkParams::default()).unwrap();
        let mut session = repo.store.begin_write().unwrap();
        let chunk = session.put_object(ObjectKind::Chunk, b"photo").unwrap();
        let names: Vec<String> = (0..3000)
            .map(|i| format!("shoot-{}/IMG_{i:04}.jpg", i % 30))
            .collect();
        let mut sorted: Vec<&[u8]> = names.iter().map(|p| p.as_bytes()).collect();
        sorted.sort();
        let file = FlatEntry {
            kind: EntryKind::File,
            id: chunk,
            size: 5,
        };
        let tree = dmv_repo::tree::build(&mut session, sorted.iter().map(|p| (*p, file))).unwrap();
        session.finish().unwrap();
        drop(session);
        let before = repo.store.index_probes();
        dmv_repo::tree::flatten_sorted(&repo.store, &tree).unwrap();
        let one_listing = repo.store.index_probes() - before;
        let before = repo.store.index_probes();
        std::thread::scope(|s| {
            for _ in 0..32 {
                s.spawn(|| {
                    let hits = paths(&repo, &tree, "img_0042", 0).unwrap();
                    let found: Vec<&str> = hits.page.iter().map(|(p, _)| p.as_str()).collect();
                    assert_eq!(found, ["shoot-12/IMG_0042.jpg"]);
                });
            }
        });
        assert_eq!(repo.store.index_probes() - before, one_listing);
    }
}
