//! Receiving objects: everything reachable from some wanted commits that
//! this store lacks, with the file data the replica's slice asks for.
//! Metadata is explored first (chunks come back as stubs), then the chunks
//! arrive in large batches, then the metadata is stored children first, so
//! whatever has landed when a transfer stops is complete as far as the
//! slice goes.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;

use dmv_repo::store::object::{for_each_child, EntryKind, Tag};
use dmv_repo::store::{ChunkParams, ObjectId, ObjectKind, Store, StoredObject, WriteSession};
use dmv_repo::tree::FlatEntry;
use dmv_repo::{
    check_object, stored_facts, EarlyCheckout, ObjectFacts, PathFilter, Progress, Repository,
};

use crate::operations::locations::{record_transfer, remote_replica, tell_of_new_copies};
use crate::protocol::objects::{children_first, damaged, edges, TransferStats};
use crate::protocol::MAX_IDS_PER_REQUEST;
use crate::transport::remote::{Received, Remote};
use crate::{SyncError, SyncResult, Violation};

/// What a fetch of objects brought.
#[derive(Debug, Default)]
pub struct ObjectsFetched {
    pub stats: TransferStats,
    /// Files (content ids) whose data the slice asked for and the source,
    /// a partial replica, does not hold: the replica is partial for them now.
    pub lacking: Vec<ObjectId>,
    /// Files whose data arrived (the source learns of the new copy from the caller, last).
    pub files: Vec<ObjectId>,
}

/// Fetches everything reachable from `wants` that the local store lacks,
/// with the file data the replica's slice asks for. `then` runs once all of
/// it is durable, while gc is still held off (the caller moves refs there).
/// `early`, if given, sees the explored metadata and then every verified
/// chunk as it arrives (a clone writes its large files that way).
pub fn fetch_objects(
    repo: &Repository,
    client: &mut dyn Remote,
    wants: &[ObjectId],
    progress: &dyn Progress,
    mut early: Option<&mut EarlyCheckout>,
    then: impl FnOnce() -> SyncResult<()>,
) -> SyncResult<ObjectsFetched> {
    let store = &repo.store;
    let mut session = store.begin_write()?;
    let mut missing_tips = Vec::new();
    for w in wants {
        if !session.has(w)? && !missing_tips.contains(w) {
            missing_tips.push(*w);
        }
    }
    if missing_tips.is_empty() {
        then()?;
        return Ok(ObjectsFetched::default());
    }
    let rule = DataRule::of(repo)?;
    let commits = client.walk_commits(missing_tips.clone(), local_tips(repo)?)?;
    let mut found = explore_commits(store, client, commits, &missing_tips, &rule)?;
    let starts = std::mem::take(&mut found.trees);
    explore_below(
        client,
        starts,
        &rule,
        &|id| Ok(store.contains(id)?),
        &mut found,
    )?;
    if let Some(early) = early.as_deref_mut() {
        early.plan(&lookup_in(store, &found), &|id: &ObjectId| {
            store.contains(id).unwrap_or(true)
        });
    }
    let mut stats = receive_chunks(
        &mut session,
        client,
        found.chunks.into_list(),
        progress,
        &mut |id, content| {
            if let Some(early) = early.as_deref_mut() {
                early.chunk(id, content);
            }
        },
    )?;
    let lacking = std::mem::take(&mut found.lacking);
    if !lacking.is_empty() {
        // Said before the files without their data are stored, so fsck and gc take them as absent, not damaged.
        repo.copies().mark_partial()?;
    }
    stats.objects += store_metadata(
        &mut session,
        found.meta,
        &found.children,
        repo.is_partial() || !lacking.is_empty(),
    )?;
    session.finish()?;
    then()?;
    drop(session);
    let source = remote_replica(repo, client)?;
    record_transfer(repo, source, &mut found.files, true)?;
    Ok(ObjectsFetched {
        stats,
        lacking,
        files: found.files,
    })
}

/// An explored object's content, else a stored one's. The store is asked
/// only of what its indexes as listed hold: a miss of `Store::read` looks
/// at the packs' folder for new packs, and planning the early writes of
/// 100,000 one-chunk files missed once a file (0.32 s, now 0.06 s); an
/// object stored since is taken as unknown, which only leaves its file to
/// the checkout.
fn lookup_in<'a>(
    store: &'a Store,
    found: &'a Explored,
) -> impl Fn(&ObjectId) -> Option<(ObjectKind, Vec<u8>)> + 'a {
    move |id: &ObjectId| match found.meta.get(id) {
        Some(obj) => obj.content().ok().map(|c| (obj.kind, c.into_owned())),
        None if store.contains(id).unwrap_or(false) => store.read(id).ok(),
        None => None,
    }
}

/// What a fetch of file data does with each chunk as it arrives (checked
/// against its id), besides storing it.
#[derive(Default)]
pub enum Along<'a> {
    /// Only stores it.
    #[default]
    Nothing,
    /// An early checkout, writing those working-tree files (paths and
    /// entries) whose chunks arrive in order.
    Checkout(&'a mut EarlyCheckout, &'a [(Vec<u8>, FlatEntry)]),
    /// Hands it to a reader waiting for it (a mount's), who then need not
    /// read back the pack just written past the page cache.
    Hand(&'a mut dyn FnMut(&ObjectId, &[u8])),
}

/// What is told of each chunk as it arrives.
type ChunkArrived<'a> = dyn FnMut(&ObjectId, &[u8]) + 'a;

impl Along<'_> {
    /// The same, borrowed for one fetch of several.
    pub(crate) fn again(&mut self) -> Along<'_> {
        match self {
            Along::Nothing => Along::Nothing,
            Along::Checkout(early, paths) => Along::Checkout(early, paths),
            Along::Hand(hand) => Along::Hand(*hand),
        }
    }
}

/// Fetches the data of some files (their content ids: file nodes and
/// chunks) that the local store lacks, each chunk also going `along`.
pub fn fetch_file_data(
    repo: &Repository,
    client: &mut dyn Remote,
    files: &[ObjectId],
    progress: &dyn Progress,
    along: Along<'_>,
) -> SyncResult<TransferStats> {
    let (stats, got) = fetch_file_data_untold(repo, client, files, progress, along)?;
    // The last request on this connection: a refusal cannot spoil another.
    tell_of_new_copies(repo, client, &got);
    Ok(stats)
}

/// [`fetch_file_data`] without telling the remote of this replica's new
/// copies: returns them (the files that arrived whole, sorted) with what
/// was received, for the caller to tell when it chooses.
pub(crate) fn fetch_file_data_untold(
    repo: &Repository,
    client: &mut dyn Remote,
    files: &[ObjectId],
    progress: &dyn Progress,
    along: Along<'_>,
) -> SyncResult<(TransferStats, Vec<ObjectId>)> {
    let store = &repo.store;
    let mut session = store.begin_write()?;
    let mut found = Explored::default();
    let starts = files
        .iter()
        .map(|id| Visit {
            id: *id,
            dir: Vec::new(),
            data: true,
        })
        .collect();
    explore_below(
        client,
        starts,
        &DataRule::everything(),
        &|id| Ok(repo.copies().has_data(id)?),
        &mut found,
    )?;
    let mut arrived: Box<ChunkArrived<'_>> = match along {
        Along::Nothing => Box::new(|_: &ObjectId, _: &[u8]| {}),
        Along::Checkout(early, paths) => {
            early.plan_files(
                &lookup_in(store, &found),
                &|id: &ObjectId| store.contains(id).unwrap_or(true),
                paths.iter().cloned(),
            );
            Box::new(|id: &ObjectId, content: &[u8]| early.chunk(id, content))
        }
        Along::Hand(hand) => Box::new(hand),
    };
    let mut stats = receive_chunks(
        &mut session,
        client,
        found.chunks.into_list(),
        progress,
        &mut *arrived,
    )?;
    drop(arrived);
    stats.objects += store_metadata(&mut session, found.meta, &found.children, true)?;
    session.finish()?;
    drop(session);
    let source = remote_replica(repo, client)?;
    let lacking: HashSet<ObjectId> = found.lacking.into_iter().collect();
    let mut got: Vec<ObjectId> = files
        .iter()
        .filter(|f| !lacking.contains(f))
        .copied()
        .collect();
    record_transfer(repo, source, &mut got, true)?;
    Ok((stats, got))
}

/// What the remote tells us we have: every ref and HEAD.
fn local_tips(repo: &Repository) -> SyncResult<Vec<ObjectId>> {
    let mut haves: Vec<ObjectId> = repo.refs.list("")?.into_iter().map(|(_, id)| id).collect();
    haves.extend(repo.head_commit()?);
    haves.sort();
    haves.dedup();
    Ok(haves)
}

/// Which files' data a fetch brings along with the history (the slice).
struct DataRule {
    filter: PathFilter,
    /// Only the files of commits fewer than this many steps from a fetched tip.
    recent: Option<usize>,
    /// File versions this replica dropped: it does not want them back until a `get` asks.
    dropped: HashSet<ObjectId>,
}

impl DataRule {
    fn of(repo: &Repository) -> SyncResult<DataRule> {
        let slice = &repo.config.slice;
        let filter = slice.paths_filter().map_err(|detail| dmv_repo::BadSlice {
            text: slice.to_string(),
            detail,
        })?;
        Ok(DataRule {
            filter,
            recent: slice.recent(),
            dropped: repo.copies().dropped_here()?,
        })
    }

    /// What a `get` asks for: the files named, whatever the slice or a drop said.
    fn everything() -> DataRule {
        DataRule {
            filter: PathFilter::All,
            recent: None,
            dropped: HashSet::new(),
        }
    }
}

/// An object to explore, where it was found: a tree with the path of its
/// directory (kept only when a path rule needs it) and whether the files
/// below bring their data; or a file's content (`data`).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Visit {
    id: ObjectId,
    dir: Vec<u8>,
    data: bool,
}

/// The new objects, found top-down one level per round trip.
#[derive(Default)]
struct Explored {
    /// Metadata objects (kept in memory until their children are stored).
    meta: HashMap<ObjectId, StoredObject>,
    /// What each of them but files' nodes refers to, each marked when it is
    /// file data (as `children_marked` says): read once, when it arrived.
    children: HashMap<ObjectId, Vec<(ObjectId, bool)>>,
    chunks: ChunkList,
    /// The root trees of the new commits, still to explore.
    trees: Vec<Visit>,
    /// The files (content ids) whose data is fetched.
    files: Vec<ObjectId>,
    /// The files whose data was to be fetched and the source does not hold.
    lacking: Vec<ObjectId>,
}

/// Chunks to fetch, with their sizes, in the order found and each once. The
/// set that keeps them unique holds positions in the list, not ids: at a
/// million files 8 MB instead of a 100 MB set of ids beside the list.
#[derive(Default)]
struct ChunkList {
    /// Ids and sizes (a chunk is at most 32 MiB).
    list: Vec<(ObjectId, u32)>,
    positions: hashbrown::HashTable<u32>,
    /// Keyed: the ids come from a remote, which could pick contents whose ids collide in a fixed hash.
    hasher: std::hash::RandomState,
}

impl ChunkList {
    fn add(&mut self, id: ObjectId, size: u64) {
        let size = u32::try_from(size).unwrap_or(u32::MAX); // only counted for progress
        let Ok(at) = u32::try_from(self.list.len()) else {
            // Past four billion chunks a repeat is fetched twice rather than looked for.
            self.list.push((id, size));
            return;
        };
        let (list, hasher) = (&self.list, &self.hasher);
        if let hashbrown::hash_table::Entry::Vacant(slot) = self.positions.entry(
            hasher.hash_one(id),
            |&i| list[i as usize].0 == id,
            |&i| hasher.hash_one(list[i as usize].0),
        ) {
            slot.insert(at);
            self.list.push((id, size));
        }
    }

    fn contains(&self, id: &ObjectId) -> bool {
        self.positions
            .find(self.hasher.hash_one(id), |&i| {
                self.list[i as usize].0 == *id
            })
            .is_some()
    }

    /// The chunks, in the order found; the set that kept them unique is
    /// freed (a clone of one 32 GiB file holds half a million of them).
    fn into_list(self) -> Vec<(ObjectId, u32)> {
        self.list
    }
}

/// The new commits (and annotated tags), one generation per round trip when
/// the remote cannot walk history itself, and which of their trees bring file data.
fn explore_commits(
    store: &Store,
    client: &mut dyn Remote,
    commits: Vec<ObjectId>,
    tips: &[ObjectId],
    rule: &DataRule,
) -> SyncResult<Explored> {
    let mut found = Explored::default();
    let mut seen: HashSet<ObjectId> = HashSet::new();
    let mut frontier = Vec::new();
    for c in commits {
        if seen.insert(c) && !store.contains(&c)? {
            frontier.push(c);
        }
    }
    // Each new commit's tree and parents; each new annotated tag's commit.
    let mut graph: HashMap<ObjectId, (ObjectId, Vec<ObjectId>)> = HashMap::new();
    let mut peeled: HashMap<ObjectId, ObjectId> = HashMap::new();
    while !frontier.is_empty() {
        let mut got = Vec::new();
        client.get(&frontier, false, &mut |r| match r {
            Received::Object(obj) if matches!(obj.kind, ObjectKind::Commit | ObjectKind::Tag) => {
                got.push(obj);
                Ok(())
            }
            Received::Object(obj) => Err(SyncError::Protocol(Violation::Unexpected {
                expected: "a commit",
                got: Some(format!("a {}", obj.kind.name())),
            })),
            Received::ChunkStub { .. } => Err(SyncError::Protocol(Violation::Unexpected {
                expected: "a commit",
                got: Some("a chunk stub".into()),
            })),
        })?;
        let mut next = Vec::new();
        for obj in got {
            let content = obj.content().map_err(|d| damaged(&obj, d))?;
            if obj.kind == ObjectKind::Tag {
                // An annotated tag (a wanted tip): its commit is explored as the tip.
                let target =
                    dmv_repo::store::object::decode::<Tag>(&obj.id, obj.kind, &content)?.target;
                if seen.insert(target) && !store.contains(&target)? {
                    next.push(target);
                }
                drop(content);
                found.children.insert(obj.id, vec![(target, false)]);
                peeled.insert(obj.id, target);
                found.meta.insert(obj.id, obj);
                continue;
            }
            let commit: dmv_repo::store::object::Commit =
                dmv_repo::store::object::decode(&obj.id, obj.kind, &content)?;
            for p in &commit.parents {
                if seen.insert(*p) && !store.contains(p)? {
                    next.push(*p);
                }
            }
            drop(content);
            found.children.insert(
                obj.id,
                std::iter::once(commit.tree)
                    .chain(commit.parents.iter().copied())
                    .map(|c| (c, false))
                    .collect(),
            );
            graph.insert(obj.id, (commit.tree, commit.parents));
            found.meta.insert(obj.id, obj);
        }
        frontier = next;
    }
    let with_data: HashSet<ObjectId> = match rule.recent {
        None => graph.keys().copied().collect(),
        // The commits fewer than n steps from a tip (what is older stays metadata).
        Some(n) => {
            let mut near = HashSet::new();
            let mut level: Vec<ObjectId> = tips
                .iter()
                .map(|t| peeled.get(t).unwrap_or(t))
                .filter(|t| graph.contains_key(t))
                .copied()
                .collect();
            for _ in 0..n {
                let mut next = Vec::new();
                for c in level {
                    if near.insert(c) {
                        next.extend(
                            graph[&c]
                                .1
                                .iter()
                                .filter(|p| graph.contains_key(p))
                                .copied(),
                        );
                    }
                }
                level = next;
            }
            near
        }
    };
    let mut roots: Vec<(&ObjectId, &(ObjectId, Vec<ObjectId>))> = graph.iter().collect();
    roots.sort_by_key(|(c, _)| **c);
    found.trees = roots
        .into_iter()
        .map(|(c, (tree, _))| Visit {
            id: *tree,
            dir: Vec::new(),
            data: with_data.contains(c),
        })
        .collect();
    Ok(found)
}

/// Explores trees and file contents level by level, skipping what the
/// store has, and the data of files the rule (or a tree's `data: false`)
/// leaves out.
///
/// `have` says whether an object is here with all it reaches (for a fetch,
/// being in the store says so; a `get` also looks into a file's nodes, which
/// a `get` or `drop` cut short may have left without all their chunks).
fn explore_below(
    client: &mut dyn Remote,
    starts: Vec<Visit>,
    rule: &DataRule,
    have: &dyn Fn(&ObjectId) -> SyncResult<bool>,
    found: &mut Explored,
) -> SyncResult<()> {
    let mut seen: HashSet<Visit> = HashSet::new();
    let mut frontier = Vec::new();
    for v in starts {
        if !have(&v.id)? && seen.insert(v.clone()) {
            frontier.push(v);
        }
    }
    // The files found by the level before (a range of `found.files`): they
    // are visited from there, not from a second list of a million visits.
    let mut files = 0..0;
    while !frontier.is_empty() || !files.is_empty() {
        let mut next = Vec::new();
        let files_found = found.files.len();
        // A level can be a million files wide: asked for in slices, so what
        // one round trip needs stays small.
        for slice in frontier.chunks(VISITS_PER_ROUND) {
            explore_slice(client, slice, rule, have, found, &mut seen, &mut next)?;
        }
        for start in files.clone().step_by(VISITS_PER_ROUND) {
            let slice: Vec<Visit> = found.files[start..files.end.min(start + VISITS_PER_ROUND)]
                .iter()
                .map(|id| Visit {
                    id: *id,
                    dir: Vec::new(),
                    data: true,
                })
                .collect();
            explore_slice(client, &slice, rule, have, found, &mut seen, &mut next)?;
        }
        if client.may_lack_data() && found.files.len() > files_found {
            set_aside_what_the_source_lacks(client, found, files_found)?;
        }
        frontier = next;
        files = files_found..found.files.len();
    }
    Ok(())
}

/// A partial source may lack some of the files found from `from` on: those
/// it does not hold all of are set aside in `found.lacking` rather than asked
/// for (which would stop the whole fetch on the first one).
fn set_aside_what_the_source_lacks(
    client: &mut dyn Remote,
    found: &mut Explored,
    from: usize,
) -> SyncResult<()> {
    let new = found.files.split_off(from);
    let held = client.has(&new)?;
    for (id, held) in new.into_iter().zip(held) {
        match held {
            true => found.files.push(id),
            false => found.lacking.push(id),
        }
    }
    Ok(())
}

/// One round trip of [`explore_below`]: gets what `slice` names that is not
/// known yet, and queues what those objects refer to (files in `found.files`,
/// the rest in `next`).
fn explore_slice(
    client: &mut dyn Remote,
    slice: &[Visit],
    rule: &DataRule,
    have: &dyn Fn(&ObjectId) -> SyncResult<bool>,
    found: &mut Explored,
    seen: &mut HashSet<Visit>,
    next: &mut Vec<Visit>,
) -> SyncResult<()> {
    let keep_paths = matches!(rule.filter, PathFilter::Globs(_));
    let mut asked = HashSet::new();
    let to_get: Vec<ObjectId> = slice
        .iter()
        .map(|v| v.id)
        .filter(|id| {
            !found.meta.contains_key(id) && !found.chunks.contains(id) && asked.insert(*id)
        })
        .collect();
    drop(asked);
    if !to_get.is_empty() {
        client.get(&to_get, false, &mut |got| {
            match got {
                Received::ChunkStub { id, raw_len } => found.chunks.add(id, raw_len as u64),
                Received::Object(obj) => {
                    obj.content().map_err(|d| damaged(&obj, d))?;
                    found.meta.insert(obj.id, obj);
                }
            }
            Ok(())
        })?;
    }
    for v in slice {
        // A chunk arrives as a stub and has been queued.
        let Some(obj) = found.meta.get(&v.id) else {
            continue;
        };
        let content = obj.content_checked_before().map_err(|d| damaged(obj, d))?;
        let edges = edges(&obj.id, obj.kind, &content)?;
        drop(content);
        // A file's nodes can list half a million chunks: those are read again when stored.
        if obj.kind != ObjectKind::FileNode {
            found.children.insert(
                obj.id,
                edges
                    .iter()
                    .map(|e| {
                        (
                            e.id,
                            e.entry.as_ref().is_some_and(|(_, kind)| kind.is_file()),
                        )
                    })
                    .collect(),
            );
        }
        for e in edges {
            if have(&e.id)? {
                continue;
            }
            let child = match &e.entry {
                Some((name, EntryKind::Dir)) => Visit {
                    id: e.id,
                    dir: if keep_paths {
                        join(&v.dir, name)
                    } else {
                        Vec::new()
                    },
                    data: v.data,
                },
                Some((name, kind)) if kind.is_file() => {
                    if !v.data
                        || rule.dropped.contains(&e.id)
                        || !rule.filter.keeps(&join(&v.dir, name))
                    {
                        continue;
                    }
                    // Visited from `found.files` on the next level (a content met twice is asked for once, its chunks listed once).
                    found.files.push(e.id);
                    continue;
                }
                _ => Visit {
                    id: e.id,
                    dir: v.dir.clone(),
                    data: v.data,
                },
            };
            if e.chunk {
                found.chunks.add(e.id, e.size);
            } else if seen.insert(child.clone()) {
                next.push(child);
            }
        }
    }
    Ok(())
}

/// How many objects to explore per round trip.
const VISITS_PER_ROUND: usize = 1 << 16;

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    match dir.is_empty() {
        true => name.to_vec(),
        false => [dir, b"/", name].concat(),
    }
}
/// Chunks first, in batches; every sealed pack survives an interruption,
/// and a failed transfer seals what arrived before it (chunks, each
/// verified: a rerun asks only for the rest, and gc takes them if none does).
fn receive_chunks(
    session: &mut WriteSession<'_>,
    client: &mut dyn Remote,
    chunks: Vec<(ObjectId, u32)>,
    progress: &dyn Progress,
    arrived: &mut dyn FnMut(&ObjectId, &[u8]),
) -> SyncResult<TransferStats> {
    let mut stats = TransferStats::default();
    let total: u64 = chunks.iter().map(|(_, s)| u64::from(*s)).sum();
    let mut done = 0u64;
    let mut rest = &chunks[..];
    // The ids of one batch at a time: a copy of them all would be 32 bytes a chunk more.
    let mut batch = Vec::new();
    while !rest.is_empty() {
        let part;
        (part, rest) = rest.split_at(get_batch_len(rest, client.chunks_per_get()));
        batch.clear();
        batch.extend(part.iter().map(|(id, _)| *id));
        let received = client.get(&batch, true, &mut |got| {
            let Received::Object(obj) = got else {
                return Err(SyncError::Protocol(Violation::Unexpected {
                    expected: "a chunk",
                    got: Some("a chunk stub".into()),
                }));
            };
            if obj.kind != ObjectKind::Chunk {
                return Err(SyncError::Protocol(Violation::Unexpected {
                    expected: "a chunk",
                    got: Some(format!("a {}", obj.kind.name())),
                }));
            }
            let content = obj.content().map_err(|d| damaged(&obj, d))?;
            arrived(&obj.id, &content);
            drop(content);
            if session.put_verified(&obj)? {
                stats.objects += 1;
                stats.chunk_bytes += obj.raw_len as u64;
            }
            done += obj.raw_len as u64;
            progress.update(done, total);
            Ok(())
        });
        if let Err(e) = received {
            // Best effort: the transfer's own error is the one to report.
            let _ = session.finish();
            return Err(e);
        }
    }
    Ok(stats)
}

/// How many of `chunks` (ids and sizes) one `get` asks for: as many bytes
/// as `chunks_per_get` chunks of the default size, up to the most ids a
/// request may name. A fixed count of 4,096 cut a clone of 100,000 files
/// of 1 KiB into 25 answers of 4 MiB, each after a pause of ~5 ms while
/// the request went out and the server began; now 4.
fn get_batch_len(chunks: &[(ObjectId, u32)], chunks_per_get: usize) -> usize {
    let budget = chunks_per_get.max(1) as u64 * u64::from(ChunkParams::default().avg);
    let mut bytes = 0u64;
    let fits = chunks
        .iter()
        .take(MAX_IDS_PER_REQUEST)
        .take_while(|(_, size)| {
            bytes += u64::from(*size);
            bytes <= budget
        })
        .count();
    fits.max(1).min(chunks.len())
}

/// Stores the explored metadata, each object after everything it refers to
/// (checked, so a remote that left something out cannot make a gap; in a
/// partial replica a file's data may be absent, its nodes never in part).
/// Stores `meta`, every object of which was checked against its id when
/// it arrived (`explore_commits`, `explore_slice`): read here without
/// hashing again.
fn store_metadata(
    session: &mut WriteSession<'_>,
    mut meta: HashMap<ObjectId, StoredObject>,
    children: &HashMap<ObjectId, Vec<(ObjectId, bool)>>,
    absent_data_ok: bool,
) -> SyncResult<u64> {
    // Each object's children among `meta`, to store them first. One not
    // among them must be here already (chunks arrived before), unless it is
    // file data a partial replica may lack (never part of a file's nodes).
    let may_be_absent =
        |kind: ObjectKind, data: bool| absent_data_ok && data && kind != ObjectKind::FileNode;
    let mut graph: HashMap<ObjectId, Vec<ObjectId>> = HashMap::with_capacity(meta.len());
    for (id, obj) in &meta {
        let mut kids = Vec::new();
        let mut each = |child: &ObjectId, data: bool| {
            if meta.contains_key(child) {
                kids.push(*child);
            } else if !may_be_absent(obj.kind, data) && !session.has(child)? {
                return Err(SyncError::Protocol(Violation::NotSent {
                    id: *id,
                    child: *child,
                }));
            }
            Ok(())
        };
        match children.get(id) {
            Some(listed) => listed
                .iter()
                .try_for_each(|(child, data)| each(child, *data))?,
            None => for_each_child(
                id,
                obj.kind,
                &obj.content_checked_before().map_err(|d| damaged(obj, d))?,
                each,
            )?,
        }
        graph.insert(*id, kids);
    }
    let mut stored = 0;
    // The facts of what this transfer stored other than chunks, for the
    // checks of what refers to them (a chunk's are in its pack record).
    let mut facts: HashMap<ObjectId, ObjectFacts> = HashMap::new();
    for id in children_first(&graph) {
        let Some(obj) = meta.remove(&id) else {
            continue;
        };
        let content = obj.content_checked_before().map_err(|d| damaged(&obj, d))?;
        // Held to the rules a push is held to: a peer's names, kinds and sizes are checked, not trusted.
        let own = check_object(
            &obj.id,
            obj.kind,
            &content,
            &mut |child| match facts.get(child) {
                Some(f) => Ok(Some(*f)),
                None => stored_facts(session, child),
            },
        )
        .map_err(|e| SyncError::Protocol(Violation::Malformed(e)))?;
        facts.insert(obj.id, own);
        // Checked against its id when it arrived (`explore_slice`, `explore_commits`).
        if session.put_verified(&obj)? {
            stored += 1;
        }
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(sizes: &[u32]) -> Vec<(ObjectId, u32)> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                (
                    ObjectId::hash(ObjectKind::Chunk, &(i as u64).to_le_bytes()),
                    size,
                )
            })
            .collect()
    }

    #[test]
    fn a_get_asks_for_as_many_bytes_as_its_chunks_of_the_default_size() {
        let avg = ChunkParams::default().avg;
        // 4,096 chunks of the default size; of 1 KiB chunks as many as a
        // request may name; of half the default size twice as many.
        assert_eq!(get_batch_len(&chunks(&vec![avg; 5000]), 4096), 4096);
        assert_eq!(
            get_batch_len(&chunks(&vec![1024; 100_000]), 4096),
            MAX_IDS_PER_REQUEST
        );
        assert_eq!(get_batch_len(&chunks(&vec![avg / 2; 10_000]), 100), 200);
        // A chunk larger than the whole budget still goes, alone.
        assert_eq!(get_batch_len(&chunks(&[avg * 8, 1]), 2), 1);
        assert_eq!(get_batch_len(&chunks(&[7]), 0), 1);
    }
}
