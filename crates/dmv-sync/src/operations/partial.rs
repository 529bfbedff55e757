//! Partial replicas: getting the data of files this replica lacks from
//! another replica, and changing which files' data it keeps (its slice).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use dmv_repo::store::object::EntryKind;
use dmv_repo::store::ObjectId;
use dmv_repo::tree::flatten;
use dmv_repo::{
    EarlyCheckout, FlatEntry, LocationRecord, Phase, Progress, RepoError, Repository, Resolution,
    Resolved, Slice,
};

use crate::operations::address_book::{holders_to_ask, stranger_spec};
use crate::operations::locations::{copy_records, exchange_locations, takes_logs_lazily};
use crate::operations::named_remotes::{find_remote, remotes_in_order};
use crate::operations::reach::{Reach, ReachBook};
use crate::operations::receive::{fetch_file_data, fetch_file_data_untold, Along};
use crate::operations::remote_spec::RemoteSpec;
use crate::protocol::location_run::holder_names;
use crate::protocol::objects::TransferStats;
use crate::transport::remote::Remote;
use crate::{SyncError, SyncResult};
use dmv_repo::ref_names::BRANCHES;

/// What `get` fetches: files of HEAD's working tree, or of another commit.
#[derive(Clone, Debug, Default)]
pub struct GetOptions {
    /// Paths (files or directories; empty: everything).
    pub paths: Vec<Vec<u8>>,
    /// A commit other than the checked-out one: its data is fetched, the working tree is left alone.
    pub rev: Option<ObjectId>,
    /// The remote to ask (default: the first configured one that answers, `origin` first).
    pub remote: Option<String>,
}

/// What a `get` did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Got {
    /// The file versions whose data was fetched.
    pub fetched: usize,
    /// Working-tree files written.
    pub written: usize,
    /// The remote the data came from (None: nothing was missing).
    pub from: Option<String>,
    /// What was received.
    pub stats: TransferStats,
}

/// `restore` (and `checkout -- PATH`) in any replica: in a partial one the
/// data of the files to be written is fetched first, from `source`'s
/// commit or HEAD's.
pub fn restore(
    repo: &Repository,
    paths: &[Vec<u8>],
    source: Option<ObjectId>,
    staged: bool,
    progress: &dyn Progress,
) -> SyncResult<usize> {
    if !staged && repo.is_partial() {
        get(
            repo,
            &GetOptions {
                paths: paths.to_vec(),
                rev: source,
                remote: None,
            },
            progress,
        )?;
    }
    Ok(repo.worktree().restore(paths, source, staged)?)
}

/// Fetches the data of these file versions that this replica lacks (each
/// with a path naming it), from the nearest replicas holding it, as `cat`
/// does: what a command about to write or read them calls first in a
/// partial replica. Returns how many were fetched.
pub fn fetch_versions(
    repo: &Repository,
    versions: impl IntoIterator<Item = (Vec<u8>, FlatEntry)>,
    progress: &dyn Progress,
) -> SyncResult<usize> {
    fetch_versions_along(repo, versions, Along::Nothing, progress)
}

/// [`fetch_versions`], each chunk also going `along` as it arrives.
pub fn fetch_versions_along(
    repo: &Repository,
    versions: impl IntoIterator<Item = (Vec<u8>, FlatEntry)>,
    along: Along<'_>,
    progress: &dyn Progress,
) -> SyncResult<usize> {
    let wanted = absent_of(repo, versions)?;
    if wanted.is_empty() {
        return Ok(0);
    }
    fetch_from_remotes(repo, &wanted, None, along, progress)?;
    repo.tidy_store();
    Ok(wanted.len())
}

/// Those of `versions` whose data this replica lacks, each once with a
/// path naming it.
pub(crate) fn absent_of(
    repo: &Repository,
    versions: impl IntoIterator<Item = (Vec<u8>, FlatEntry)>,
) -> SyncResult<BTreeMap<ObjectId, Vec<u8>>> {
    let mut wanted = BTreeMap::new();
    for (path, entry) in versions {
        if repo.copies().is_absent(&entry)? {
            wanted.entry(entry.id).or_insert(path);
        }
    }
    Ok(wanted)
}

/// `resolve` in any replica: in a partial one the versions the resolution
/// writes (ours, theirs or both) are fetched first; where none can be, it
/// refuses before changing anything, naming the file. A conflict in a
/// phone's meta clone ends as it would in a full clone.
pub fn resolve_conflicts(
    repo: &Repository,
    specs: &[Vec<u8>],
    how: Resolution,
    progress: &dyn Progress,
) -> SyncResult<Vec<Resolved>> {
    if repo.is_partial() && how != Resolution::AsIs {
        if let Some(state) = repo.merges().merge_state()? {
            let chosen = state
                .conflicts
                .iter()
                .filter(|c| specs.iter().any(|s| dmv_repo::path_matches(&c.path, s)));
            let versions: Vec<(Vec<u8>, FlatEntry)> = chosen
                .flat_map(|c| {
                    let sides = match how {
                        Resolution::Ours => [c.ours, None],
                        Resolution::Theirs => [c.theirs, None],
                        _ => [c.ours, c.theirs],
                    };
                    sides.into_iter().flatten().map(|e| (c.path.clone(), e))
                })
                .collect();
            fetch_versions(repo, versions, progress)?;
        }
    }
    Ok(repo.merges().resolve_conflicts(specs, how)?)
}

/// `cat REV:PATH`: writes a file version's content to `out`, fetching its
/// data first when this replica lacks it (and, for HEAD's version, writing
/// the file into the working tree as `get` would). Returns the bytes written.
pub fn write_file_at(
    repo: &Repository,
    rev: &str,
    path: &str,
    out: &mut dyn std::io::Write,
    progress: &dyn Progress,
) -> SyncResult<u64> {
    let (commit, entry) = repo.history().entry_at(rev, path)?;
    if entry.kind == EntryKind::Dir {
        return Err(RepoError::IsAFolder {
            path: path.trim_matches('/').to_string(),
        }
        .into());
    }
    if repo.copies().is_absent(&entry)? {
        // HEAD's version is written into the working tree too, as `get` does:
        // data here and a file absent would be two answers to "is it here".
        let rev =
            commit.filter(|c| !repo.config.bare && repo.head_commit().ok().flatten() != Some(*c));
        get(
            repo,
            &GetOptions {
                paths: vec![path.trim_matches('/').as_bytes().to_vec()],
                rev,
                remote: None,
            },
            progress,
        )?;
    }
    Ok(repo.store.write_content(&entry.id, out)?)
}

/// Fetches the data of the files matching `options.paths` that is not here,
/// from the first remote that answers, and writes those of the checked-out
/// commit into the working tree.
pub fn get(repo: &Repository, options: &GetOptions, progress: &dyn Progress) -> SyncResult<Got> {
    let worktree = options.rev.is_none() && !repo.config.bare;
    let tree = match options.rev {
        Some(rev) => Some(repo.commit(&rev)?.tree),
        None => repo.head_tree()?,
    };
    // Each file version wanted, by one of its paths.
    let mut wanted = BTreeMap::new();
    // The working-tree files to fill: large ones are written while their data arrives.
    let mut to_fill = Vec::new();
    if let Some(tree) = tree {
        for f in repo.copies().availability(&tree, &options.paths)? {
            if !f.present {
                wanted.entry(f.entry.id).or_insert_with(|| f.path.clone());
                if worktree {
                    to_fill.push((f.path, f.entry));
                }
            }
        }
    }
    let mut early = match worktree {
        true => Some(EarlyCheckout::new(repo)?),
        false => None,
    };
    let mut got = Got::default();
    if !wanted.is_empty() {
        let along = match early.as_mut() {
            Some(early) => Along::Checkout(early, to_fill.as_slice()),
            None => Along::Nothing,
        };
        let (from, stats) =
            fetch_from_remotes(repo, &wanted, options.remote.as_deref(), along, progress)?;
        got = Got {
            fetched: wanted.len(),
            written: 0,
            from: Some(from.join(", ")),
            stats,
        };
    }
    if worktree {
        got.written = repo
            .worktree()
            .fill_absent_with(&options.paths, early.as_mut())?
            .len();
    }
    repo.tidy_store();
    Ok(got)
}

/// Fetches the data of `wanted` (file versions, each with a path that
/// names it) from `name`, or from every replica that may hold it in turn,
/// each giving what it has of what is still missing: the configured remotes
/// and the replicas the log says hold some of it at the URLs they publish,
/// nearest first by what was last seen of them (`origin` first of a class,
/// configured remotes before published URLs), metered replicas never.
/// Returns the sources that gave something.
fn fetch_from_remotes(
    repo: &Repository,
    wanted: &BTreeMap<ObjectId, Vec<u8>>,
    name: Option<&str>,
    along: Along<'_>,
    progress: &dyn Progress,
) -> SyncResult<(Vec<String>, TransferStats)> {
    fetch_keeping(repo, wanted, name, along, progress, None)
}

/// [`fetch_from_remotes`], with `keeping`: its connection asked first, the
/// one that gave something kept in it, and the new copies left in it to
/// tell (see [`Keeping`]).
pub(crate) fn fetch_keeping(
    repo: &Repository,
    wanted: &BTreeMap<ObjectId, Vec<u8>>,
    name: Option<&str>,
    along: Along<'_>,
    progress: &dyn Progress,
    keeping: Option<&mut Keeping>,
) -> SyncResult<(Vec<String>, TransferStats)> {
    let mut book = ReachBook::load(repo);
    let sources = match name {
        Some(n) => vec![Source {
            label: n.to_string(),
            spec: find_remote(repo, n).map(|r| r.spec),
        }],
        None => sources_in_order(repo, &book, wanted)?,
    };
    // A replica that takes logs lazily learns who else holds the data only once its remotes lack it.
    let learn = (name.is_none() && takes_logs_lazily(repo)).then_some(learn_holders as Learn);
    let asking = Asking { sources, learn };
    let fetched = fetch_in_turn(repo, &mut book, wanted, asking, along, progress, keeping);
    book.save();
    fetched
}

/// The replicas to ask in turn, and how to find more once they are asked.
struct Asking {
    sources: Vec<Source>,
    learn: Option<Learn>,
}

/// This replica's new copies not told yet to the replicas they came from:
/// by the source's URL, how to reach it and the records to give it.
pub(crate) type Untold = BTreeMap<String, (RemoteSpec, Vec<LocationRecord>)>;

/// What a reader that fetches again and again keeps between fetches
/// (see [`crate::VersionFetcher`]): a connection that answered, and the
/// copies fetched that the replicas they came from were not told of yet.
#[derive(Default)]
pub(crate) struct Keeping {
    pub(crate) connection: Option<Kept>,
    pub(crate) untold: Untold,
}

/// Adds `records`, to be given to the replica `spec` reaches, to `untold`.
pub(crate) fn note_untold(untold: &mut Untold, spec: &RemoteSpec, records: Vec<LocationRecord>) {
    untold
        .entry(spec.url.clone())
        .or_insert_with(|| (spec.clone(), Vec::new()))
        .1
        .extend(records);
}

/// A connection kept between fetches, with the replica it reaches.
pub(crate) struct Kept {
    pub(crate) label: String,
    pub(crate) spec: RemoteSpec,
    pub(crate) remote: Box<dyn Remote>,
}

/// Finds more replicas to ask for `missing` (each with a path naming it).
type Learn =
    fn(&Repository, &mut ReachBook, &BTreeMap<ObjectId, Vec<u8>>) -> SyncResult<Vec<Source>>;

/// Takes in the location logs of the configured remotes that answer, then
/// returns the replicas they say hold some of `missing` at the URLs they publish.
fn learn_holders(
    repo: &Repository,
    book: &mut ReachBook,
    missing: &BTreeMap<ObjectId, Vec<u8>>,
) -> SyncResult<Vec<Source>> {
    for name in remotes_in_order(repo) {
        let Ok(remote) = find_remote(repo, &name) else {
            continue;
        };
        if let Ok(mut connected) = book.connect(&remote.spec) {
            match exchange_locations(repo, connected.as_mut(), false) {
                Err(e) if !e.is_remote_failure() => return Err(e),
                _ => {}
            }
        }
    }
    let (published, _) = holders_to_ask(repo, missing)?;
    let mut sources: Vec<(Reach, Source)> = published
        .into_iter()
        .flat_map(|replica| {
            replica
                .urls
                .into_iter()
                .map(move |url| (replica.name.clone(), url))
        })
        .map(|(name, url)| {
            (
                book.class(&url),
                Source {
                    label: format!("{name} at {url}"),
                    spec: stranger_spec(repo, &url),
                },
            )
        })
        .collect();
    sources.sort_by_key(|(class, _)| *class);
    Ok(sources.into_iter().map(|(_, source)| source).collect())
}

/// A replica to ask for data, by the name the user knows it by.
pub(crate) struct Source {
    pub(crate) label: String,
    pub(crate) spec: SyncResult<RemoteSpec>,
}

/// The replicas that may hold `wanted`, in the order to ask them (see [`fetch_from_remotes`]).
pub(crate) fn sources_in_order(
    repo: &Repository,
    book: &ReachBook,
    wanted: &BTreeMap<ObjectId, Vec<u8>>,
) -> SyncResult<Vec<Source>> {
    let (published, metered) = holders_to_ask(repo, wanted)?;
    let mut sources: Vec<(Reach, bool, Source)> = Vec::new();
    for name in remotes_in_order(repo)
        .into_iter()
        .filter(|n| !metered.contains(n))
    {
        let spec = find_remote(repo, &name).map(|r| r.spec);
        let class = spec.as_ref().map_or(Reach::Unknown, |s| book.class(&s.url));
        sources.push((class, false, Source { label: name, spec }));
    }
    for replica in published {
        for url in replica.urls {
            let label = format!("{} at {url}", replica.name);
            sources.push((
                book.class(&url),
                true,
                Source {
                    label,
                    spec: stranger_spec(repo, &url),
                },
            ));
        }
    }
    // Stable: origin first of the configured remotes of a class.
    sources.sort_by_key(|(class, published, _)| (*class, *published));
    Ok(sources.into_iter().map(|(_, _, source)| source).collect())
}

/// [`fetch_from_remotes`] from `sources` in that order, noting in `book` how each answered.
fn fetch_in_turn(
    repo: &Repository,
    book: &mut ReachBook,
    wanted: &BTreeMap<ObjectId, Vec<u8>>,
    Asking { sources, mut learn }: Asking,
    mut along: Along<'_>,
    progress: &dyn Progress,
    mut keeping: Option<&mut Keeping>,
) -> SyncResult<(Vec<String>, TransferStats)> {
    let mut missing: Vec<ObjectId> = wanted.keys().copied().collect();
    let (mut from, mut tried) = (Vec::new(), Vec::new());
    let mut stats = TransferStats::default();
    let mut sources: std::collections::VecDeque<Source> = sources.into();
    let mut asked = BTreeSet::new();
    let mut kept = keeping.as_mut().and_then(|k| k.connection.take());
    loop {
        // A connection kept from an earlier fetch is asked first; one that
        // fails may only have been closed while idle, so its replica is
        // asked again, connected anew, in its turn.
        let (name, spec, mut remote, reused) = match kept.take() {
            Some(Kept {
                label,
                spec,
                remote,
            }) => (label, spec, remote, true),
            None => {
                let Some(Source { label: name, spec }) = sources.pop_front() else {
                    match learn.take() {
                        Some(learn) => {
                            let named =
                                missing.iter().map(|id| (*id, wanted[id].clone())).collect();
                            sources.extend(learn(repo, book, &named)?);
                            continue;
                        }
                        None => break,
                    }
                };
                let spec = match spec {
                    Ok(spec) if asked.contains(&spec.url) => continue,
                    Ok(spec) => spec,
                    Err(e) => {
                        tried.push(format!("{name} ({e})"));
                        continue;
                    }
                };
                match book.connect(&spec) {
                    Ok(r) => (name, spec, r, false),
                    Err(e) => {
                        asked.insert(spec.url.clone());
                        tried.push(format!("{name} ({e})"));
                        continue;
                    }
                }
            }
        };
        let has = match remote.has(&missing) {
            Ok(has) => has,
            Err(e) if reused && e.is_remote_failure() => continue,
            Err(e) if e.is_remote_failure() => {
                asked.insert(spec.url.clone());
                book.failed(&spec.url, &e);
                tried.push(format!("{name} ({e})"));
                continue;
            }
            Err(e) => return Err(e),
        };
        asked.insert(spec.url.clone());
        let here: Vec<ObjectId> = missing
            .iter()
            .zip(&has)
            .filter(|(_, h)| **h)
            .map(|(id, _)| *id)
            .collect();
        if here.is_empty() {
            tried.push(format!("{name} (does not have it)"));
            continue;
        }
        progress.phase(Phase::Receiving);
        let start = Instant::now();
        let got = match keeping.as_mut() {
            None => fetch_file_data(repo, remote.as_mut(), &here, progress, along.again()),
            Some(keeping) => {
                fetch_file_data_untold(repo, remote.as_mut(), &here, progress, along.again()).map(
                    |(stats, got)| {
                        note_untold(&mut keeping.untold, &spec, copy_records(repo, &got, true));
                        stats
                    },
                )
            }
        };
        progress.finish();
        match got {
            Ok(got) => {
                book.transferred(&spec.url, got.chunk_bytes, start.elapsed());
                stats.objects += got.objects;
                stats.chunk_bytes += got.chunk_bytes;
                from.push(name.clone());
                missing = missing
                    .into_iter()
                    .zip(has)
                    .filter(|(_, h)| !*h)
                    .map(|(id, _)| id)
                    .collect();
                if let Some(keeping) = keeping.as_mut() {
                    keeping.connection = Some(Kept {
                        label: name,
                        spec,
                        remote,
                    });
                }
            }
            // What arrived before it failed stays; the rest from the next remote.
            Err(e) if e.is_remote_failure() => {
                book.failed(&spec.url, &e);
                tried.push(format!("{name} ({e})"));
                missing.retain(|id| repo.store.check_content_present(id).is_err());
            }
            Err(e) => return Err(e),
        }
        if missing.is_empty() {
            return Ok((from, stats));
        }
    }
    let holders = holder_names(repo, &missing)?;
    let files = missing
        .iter()
        .map(|id| {
            let path = String::from_utf8_lossy(&wanted[id]).into_owned();
            match holders.get(id) {
                Some(names) => format!("{path} (held by {})", names.join(", ")),
                None => format!("{path} (no replica is known to hold it)"),
            }
        })
        .collect();
    Err(SyncError::NoRemoteReachable { files, tried })
}

/// After a fetch from a partial source: the data it lacked (`lacking`, file
/// versions of the commits `tips` reach), from the other remotes.
pub(crate) fn get_what_the_source_lacked(
    repo: &Repository,
    lacking: &[ObjectId],
    tips: &[ObjectId],
    progress: &dyn Progress,
) -> SyncResult<()> {
    if lacking.is_empty() {
        return Ok(());
    }
    // Each by a path it has in the new tips, where it has one there.
    let mut wanted: BTreeMap<ObjectId, Vec<u8>> = lacking
        .iter()
        .map(|id| (*id, id.to_hex().into_bytes()))
        .collect();
    let mut unnamed: BTreeSet<ObjectId> = lacking.iter().copied().collect();
    for tip in tips {
        if unnamed.is_empty() {
            break;
        }
        for (path, e) in flatten(&repo.store, &repo.commit(&repo.peel(tip)?)?.tree)? {
            if unnamed.remove(&e.id) {
                wanted.insert(e.id, path);
            }
        }
    }
    fetch_from_remotes(repo, &wanted, None, Along::Nothing, progress)?;
    Ok(())
}

/// What changing the slice did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SliceChanged {
    /// The slice before, as written in the config (e.g. `full`, `meta`,
    /// `paths:GLOB`, `recent:N`).
    pub old: String,
    /// The slice now, written the same way.
    pub new: String,
    /// What widening fetched (file versions now inside the slice whose data was not here).
    pub got: Got,
}

/// Sets the replica's slice. Widening fetches the data now inside it (of
/// every commit the refs reach, or for `recent:N` of the last N of each
/// branch) and writes what the working tree lacked; narrowing frees
/// nothing by itself (`drop` does, safely).
pub fn set_slice(
    repo: &mut Repository,
    slice: Slice,
    remote: Option<&str>,
    progress: &dyn Progress,
) -> SyncResult<SliceChanged> {
    let old = repo.update_config(|c| {
        let old = std::mem::replace(&mut c.slice, slice.clone());
        c.partial |= !slice.is_full();
        Ok::<_, SyncError>(old.to_string())
    })?;
    let filter = slice.paths_filter().map_err(|detail| dmv_repo::BadSlice {
        text: slice.to_string(),
        detail,
    })?;
    let mut tips: Vec<ObjectId> = repo
        .refs
        .list(BRANCHES)?
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    tips.extend(repo.head_commit()?);
    let commits = match slice.recent() {
        Some(n) => {
            let mut near = BTreeSet::new();
            for tip in &tips {
                near.extend(
                    repo.history()
                        .walk(&[*tip])?
                        .take(n)
                        .map(|c| c.map(|c| c.id))
                        .collect::<Result<Vec<_>, _>>()?,
                );
            }
            near.into_iter().collect()
        }
        None => repo.history().commits_between(&tips, &[])?,
    };
    let mut wanted = BTreeMap::new();
    let mut trees_seen = BTreeSet::new();
    for c in commits {
        let tree = repo.commit(&c)?.tree;
        if !trees_seen.insert(tree) {
            continue;
        }
        for (path, e) in flatten(&repo.store, &tree)? {
            if e.kind.is_file()
                && filter.keeps(&path)
                && !wanted.contains_key(&e.id)
                && !repo.copies().has_data(&e.id)?
            {
                wanted.insert(e.id, path);
            }
        }
    }
    let mut got = Got::default();
    if !wanted.is_empty() {
        let (from, stats) = fetch_from_remotes(repo, &wanted, remote, Along::Nothing, progress)?;
        got = Got {
            fetched: wanted.len(),
            written: 0,
            from: Some(from.join(", ")),
            stats,
        };
    }
    if !repo.config.bare {
        got.written = repo.worktree().fill_absent(&[])?.len();
    }
    Ok(SliceChanged {
        old,
        new: slice.to_string(),
        got,
    })
}
