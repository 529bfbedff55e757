//! Sending objects: what the remote lacks of some new tips, chunks first and
//! then every other object after the ones it refers to, then the refs.

use std::collections::{HashMap, HashSet};

use dmv_repo::store::{ObjectId, ObjectKind, StoredObject};
use dmv_repo::{Progress, Repository, Tally};

use crate::operations::locations::{record_transfer, remote_replica};
use crate::protocol::objects::{children_first, edges, TransferStats};
use crate::protocol::WireRefUpdate;
use crate::transport::remote::Remote;
use crate::{Refusal, SyncError, SyncResult};

/// Chunks a push asks the kernel to read ahead at a time (~8 MiB).
const PREFETCH_CHUNKS: usize = 128;

/// One ref a push sets on the remote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PushRef {
    /// The full ref name on the remote, e.g. `refs/heads/main`.
    pub name: String,
    /// The value the remote must still have (None: must not exist).
    pub expected: Option<ObjectId>,
    /// None deletes the remote ref.
    pub new: Option<ObjectId>,
}

/// Sends what the remote lacks of the new tips, then moves its refs with a
/// compare-and-swap on each expected old value (all or nothing).
pub fn send_objects(
    repo: &Repository,
    client: &mut dyn Remote,
    updates: &[PushRef],
    remote_tips: &[ObjectId],
    progress: &dyn Progress,
) -> SyncResult<TransferStats> {
    // An empty ref update checks write access, so a refusal comes before any upload.
    client.update_refs(Vec::new(), &repo.who(), "push")?;
    let tips: Vec<ObjectId> = updates.iter().filter_map(|u| u.new).collect();
    let missing = find_missing(repo, client, &tips, remote_tips)?;
    let stats = upload(repo, client, &missing, progress)?;
    dmv_repo::store::failpoint("push-uploaded");
    let wire: Vec<WireRefUpdate> = updates
        .iter()
        .map(|u| WireRefUpdate {
            name: u.name.clone(),
            old: u.expected,
            new: u.new,
        })
        .collect();
    if !wire.is_empty() {
        client.update_refs(wire, &repo.who(), "push")?;
    }
    // The remote holds every file of the new trees now (sent, or had already);
    // this replica only those whose data is here: a partial one pushing a
    // new file into a folder holds that folder's other files no more than before.
    let remote = remote_replica(repo, client)?;
    let mut there = missing.files;
    // Commits an earlier push sent whose refs did not move then (it lost a
    // race): their files were never recorded. A full remote holds all the data of a commit it has.
    if !client.may_lack_data() {
        for commit in &missing.sent_before {
            there.extend(
                repo.history()
                    .commit_changes(commit)?
                    .into_iter()
                    .filter_map(|c| c.new)
                    .filter(|e| e.kind.is_file())
                    .map(|e| e.id),
            );
        }
    }
    record_transfer(repo, remote, &mut there, true)?;
    Ok(stats)
}

/// What the remote lacks: chunks with their sizes, and the other objects
/// with the missing objects each refers to.
pub(crate) struct Missing {
    chunks: Vec<ObjectId>,
    /// Their bytes.
    chunk_bytes: u64,
    graph: HashMap<ObjectId, Vec<ObjectId>>,
    /// The files (content ids) of the new trees: the remote holds their data once the push is done.
    pub files: Vec<ObjectId>,
    /// New commits the remote has already: an earlier push sent them and lost its race.
    sent_before: Vec<ObjectId>,
}

/// Asks the remote, level by level from the new commits down, which objects
/// it has, and does not descend into those it has.
pub(crate) fn find_missing(
    repo: &Repository,
    client: &mut dyn Remote,
    tips: &[ObjectId],
    remote_tips: &[ObjectId],
) -> SyncResult<Missing> {
    let store = &repo.store;
    let mut stop = Vec::new();
    for t in remote_tips {
        if store.contains(t)? {
            stop.push(*t);
        }
    }
    let (mut history, commits) = repo.history().history_between(tips, &stop)?;
    let new_commits: HashSet<ObjectId> = commits.iter().copied().collect();
    // The new annotated tags, then the new commits.
    history.extend(commits);
    let mut seen: HashSet<ObjectId> = history.iter().copied().collect();
    let mut missing = Missing {
        chunks: Vec::new(),
        chunk_bytes: 0,
        graph: HashMap::new(),
        files: Vec::new(),
        sent_before: Vec::new(),
    };
    let mut chunk_candidates: Vec<ObjectId> = Vec::new();
    // File data the remote lacks that a partial replica does not hold either, by name.
    let mut names: HashMap<ObjectId, Vec<u8>> = HashMap::new();
    let mut absent: Vec<Vec<u8>> = Vec::new();
    let mut level = history;
    while !level.is_empty() {
        let present = client.has(&level)?;
        let mut next = Vec::new();
        for (id, there) in level.iter().zip(present) {
            if there {
                if new_commits.contains(id) {
                    missing.sent_before.push(*id);
                }
                continue;
            }
            let (kind, content) = match store.read(id) {
                Err(dmv_repo::store::StoreError::NotFound { .. })
                    if repo.is_partial() && names.contains_key(id) =>
                {
                    absent.push(names[id].clone());
                    continue;
                }
                other => other?,
            };
            if kind == ObjectKind::Chunk {
                missing.chunks.push(*id);
                missing.chunk_bytes += content.len() as u64;
                continue;
            }
            let mut kids = Vec::new();
            for e in edges(id, kind, &content)? {
                let file = e.entry.as_ref().filter(|(_, k)| k.is_file());
                if let Some((name, k)) = file {
                    missing.files.push(e.id);
                    // Only a partial replica may lack data to name (a name for each of a million files is ~100 MB).
                    if repo.is_partial() && *k != dmv_repo::store::object::EntryKind::Symlink {
                        names.entry(e.id).or_insert_with(|| name.clone());
                    }
                }
                // A file of one chunk is sent as a chunk: not read now, and nothing in the graph waits for it.
                if e.chunk
                    || (file.is_some()
                        && store
                            .locate(&e.id)?
                            .is_some_and(|loc| loc.entry.kind == ObjectKind::Chunk))
                {
                    chunk_candidates.push(e.id);
                    continue;
                }
                kids.push(e.id);
                // A file's content is listed again where it appears again (the repeats are dropped below),
                // so the set of objects seen holds trees and file nodes, not every file.
                if file.is_some() || seen.insert(e.id) {
                    next.push(e.id);
                }
            }
            missing.graph.insert(*id, kids);
        }
        first_of_each(&mut next);
        level = next;
    }
    first_of_each(&mut chunk_candidates);
    let mut present = client.has(&chunk_candidates)?.into_iter();
    let mut failed = None;
    // The list is kept as the list to send, in place: at a million files a second one is ~32 MB.
    chunk_candidates.retain(|id| {
        if present.next().unwrap_or(false) {
            return false;
        }
        match store.locate(id) {
            Ok(Some(loc)) => {
                missing.chunk_bytes += loc.entry.raw_len as u64;
                true
            }
            // A chunk of a file a get or drop left partly here.
            Ok(None) if repo.is_partial() => {
                absent.push(names.get(id).cloned().unwrap_or_else(|| b"a file".to_vec()));
                false
            }
            Ok(None) => {
                failed.get_or_insert(dmv_repo::store::StoreError::NotFound { id: *id });
                false
            }
            Err(e) => {
                failed.get_or_insert(e);
                false
            }
        }
    });
    if let Some(e) = failed {
        return Err(e.into());
    }
    chunk_candidates.append(&mut missing.chunks);
    missing.chunks = chunk_candidates;
    if let Some(first) = absent.first() {
        return Err(SyncError::Refused(Refusal::DataHeldByNeither {
            count: absent.len(),
            example: String::from_utf8_lossy(first).into_owned(),
        }));
    }
    Ok(missing)
}

/// Keeps the first of each id, in their order: the chunks of a push are
/// read in the order the trees name them, which is mostly the order of their
/// packs (a set of a million ids to skip repeats was ~70 MB; this sorts
/// positions, 4 bytes each).
fn first_of_each(ids: &mut Vec<ObjectId>) {
    let mut by_id: Vec<u32> = (0..ids.len() as u32).collect();
    by_id.sort_unstable_by_key(|&i| (ids[i as usize], i));
    let mut repeat = vec![false; ids.len()];
    for pair in by_id.windows(2) {
        if ids[pair[0] as usize] == ids[pair[1] as usize] {
            repeat[pair[1] as usize] = true;
        }
    }
    let mut at = 0;
    ids.retain(|_| {
        at += 1;
        !repeat[at - 1]
    });
}

/// Streams the missing objects in one upload: chunks (read ahead from disk
/// while the previous window is sent), then the rest children first.
pub(crate) fn upload(
    repo: &Repository,
    client: &mut dyn Remote,
    missing: &Missing,
    progress: &dyn Progress,
) -> SyncResult<TransferStats> {
    let store = &repo.store;
    let order = children_first(&missing.graph);
    if missing.chunks.is_empty() && order.is_empty() {
        return Ok(TransferStats::default());
    }
    let total = missing.chunk_bytes;
    let mut objects = |send: &mut dyn FnMut(&StoredObject) -> SyncResult<()>| -> SyncResult<()> {
        let prefetch = |from: usize| {
            let window = missing
                .chunks
                .iter()
                .skip(from)
                .take(PREFETCH_CHUNKS)
                .filter_map(|id| store.locate(id).ok().flatten());
            store.prefetch(&window.collect::<Vec<_>>());
        };
        prefetch(0);
        for (i, id) in missing.chunks.iter().enumerate() {
            if i % PREFETCH_CHUNKS == 0 {
                prefetch(i + PREFETCH_CHUNKS);
            }
            send(&store.read_stored(id)?)?;
        }
        for id in &order {
            send(&store.read_stored(id)?)?;
        }
        Ok(())
    };
    // Progress counts what left for the remote (a bucket: packs uploaded, so
    // the bar stays short of the end while the last pack goes up); the
    // trees and commits after the chunks add a little over the total.
    client.put(&mut objects, &Tally::new(progress, total))?;
    Ok(TransferStats {
        objects: (missing.chunks.len() + order.len()) as u64,
        chunk_bytes: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The first of each id stays, in order, as a set of those seen would keep them.
        #[test]
        fn first_of_each_keeps_the_first_of_each_id_in_order(bytes in proptest::collection::vec(0u8..6, 0..60)) {
            let mut ids: Vec<ObjectId> = bytes.iter().map(|b| ObjectId([*b; 32])).collect();
            let mut seen = HashSet::new();
            let want: Vec<ObjectId> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
            first_of_each(&mut ids);
            prop_assert_eq!(ids, want);
        }
    }
}
