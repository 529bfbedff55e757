//! Pieces of a file version for a reader that wants part of a file (a
//! mount, where a player seeks into a film): first the file's nodes, so
//! its layout is known, then only the chunks a read touches. Asked of the
//! replicas `get` would ask, in the same order, over one connection kept
//! between reads.

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use dmv_repo::store::object::{decode, FileNode};
use dmv_repo::store::{ObjectId, ObjectKind, StoredObject};
use dmv_repo::Repository;

use crate::operations::partial::{sources_in_order, Source};
use crate::operations::reach::ReachBook;
use crate::protocol::location_run::holder_names;
use crate::protocol::objects::damaged;
use crate::transport::remote::{Received, Remote};
use crate::{SyncError, SyncResult, Violation};

/// A file's nodes, at most: 64 MiB of them lists some 1.5 million chunks,
/// about 100 GiB of content. A remote sending more is refused.
const NODE_BUDGET: u64 = 64 << 20;

/// Fetches of fewer bytes than this pile up as packs by the thousand, and
/// are rolled together as they come.
const TIDY_AFTER_FETCHES_BELOW: u64 = 4 << 20;

/// Fetches pieces of file versions into the repository's store.
pub struct PieceFetcher<'r> {
    repo: &'r Repository,
    book: ReachBook,
    /// The replica that answered last, still connected: its label and connection.
    open: Option<(String, Box<dyn Remote>)>,
}

impl<'r> PieceFetcher<'r> {
    /// A fetcher for `repo`, with its reach book of how each replica answered.
    pub fn new(repo: &'r Repository) -> PieceFetcher<'r> {
        PieceFetcher {
            repo,
            book: ReachBook::load(repo),
            open: None,
        }
    }

    /// Makes every node of file version `file` (named by `path` in errors)
    /// present here, so its layout can be read; none when the file is one
    /// chunk. All or none: a store never holds part of a file's node tree.
    pub fn fetch_nodes(&mut self, file: &ObjectId, path: &[u8]) -> SyncResult<()> {
        let nodes = self.ask_holders(file, path, &mut |remote| nodes_of(remote, file))?;
        let mut session = self.repo.store.begin_write()?;
        // Children first: a node is stored after the nodes it lists.
        for obj in nodes.iter().rev() {
            session.put_verified(obj)?;
        }
        session.finish()?;
        drop(session);
        self.repo.tidy_store();
        Ok(())
    }

    /// Makes `chunks` (of file version `file`, named by `path` in errors)
    /// present here, and hands each one's content to `arrived` as it comes
    /// (checked against its id), so a reader waiting for it need not read
    /// it back from the store. Returns the bytes received.
    pub fn fetch_chunks(
        &mut self,
        file: &ObjectId,
        path: &[u8],
        chunks: &[ObjectId],
        arrived: &mut dyn FnMut(ObjectId, Vec<u8>),
    ) -> SyncResult<u64> {
        let repo = self.repo;
        let bytes = self.ask_holders(file, path, &mut |remote| {
            store_chunks_from(repo, remote, chunks, arrived)
        })?;
        // Each fetch seals a pack: a mount copying a folder of photos out
        // seals thousands, which must roll as a day of commits' do. A
        // large fetch (a film read ahead) is one of few, and rolling it
        // would write the film a second time.
        if bytes < TIDY_AFTER_FETCHES_BELOW {
            self.repo.tidy_store();
        }
        Ok(bytes)
    }

    /// Runs `ask` on the replica that answered last, else on each that may
    /// hold `file` in `get`'s order, until one answers; a replica that fails
    /// is noted in the reach book.
    fn ask_holders<T>(
        &mut self,
        file: &ObjectId,
        path: &[u8],
        ask: &mut dyn FnMut(&mut dyn Remote) -> SyncResult<T>,
    ) -> SyncResult<T> {
        let mut tried = Vec::new();
        if let Some((label, mut remote)) = self.open.take() {
            match ask(remote.as_mut()) {
                Ok(got) => {
                    self.open = Some((label, remote));
                    return Ok(got);
                }
                Err(e) => tried.push(format!("{label} ({e})")),
            }
        }
        let wanted = BTreeMap::from([(*file, path.to_vec())]);
        for Source { label, spec } in sources_in_order(self.repo, &self.book, &wanted)? {
            let spec = match spec {
                Ok(spec) => spec,
                Err(e) => {
                    tried.push(format!("{label} ({e})"));
                    continue;
                }
            };
            let start = Instant::now();
            let mut remote = match self.book.connect(&spec) {
                Ok(remote) => remote,
                Err(e) => {
                    tried.push(format!("{label} ({e})"));
                    continue;
                }
            };
            match ask(remote.as_mut()) {
                Ok(got) => {
                    self.book.transferred(&spec.url, 0, start.elapsed());
                    self.book.save();
                    self.open = Some((label, remote));
                    return Ok(got);
                }
                // Whatever went wrong there (unreachable, stalled past its
                // timeout, lacking the file, sending what was not asked):
                // the next replica is asked.
                Err(e) => {
                    self.book.failed(&spec.url, &e);
                    tried.push(format!("{label} ({e})"));
                }
            }
        }
        self.book.save();
        let path = String::from_utf8_lossy(path).into_owned();
        let files = match holder_names(self.repo, &[*file])?.remove(file) {
            Some(names) => vec![format!("{path} (held by {})", names.join(", "))],
            None => vec![format!("{path} (no replica is known to hold it)")],
        };
        Err(SyncError::NoRemoteReachable { files, tried })
    }
}

/// Every node of `file` from `remote`, parents before children, each
/// checked against its id; empty when the file is a single chunk.
fn nodes_of(remote: &mut dyn Remote, file: &ObjectId) -> SyncResult<Vec<StoredObject>> {
    let mut nodes = Vec::new();
    let mut level = vec![*file];
    let mut budget = NODE_BUDGET;
    let mut file_seen = false;
    while !level.is_empty() {
        let mut next = Vec::new();
        let mut got: BTreeMap<ObjectId, StoredObject> = BTreeMap::new();
        remote.get(&level, false, &mut |received| {
            match received {
                // The file is one chunk: it has no nodes.
                Received::ChunkStub { id, .. } if id == *file => file_seen = true,
                Received::Object(obj)
                    if obj.kind == ObjectKind::FileNode && level.contains(&obj.id) =>
                {
                    budget =
                        budget
                            .checked_sub(obj.payload.len() as u64)
                            .ok_or(SyncError::Protocol(Violation::Unexpected {
                                expected: "a file's nodes within 64 MiB",
                                got: Some("more".into()),
                            }))?;
                    let content = obj.content().map_err(|d| damaged(&obj, d))?;
                    let node: FileNode = decode(&obj.id, obj.kind, &content)?;
                    if node.level > 0 {
                        next.extend(node.entries.iter().map(|e| e.id));
                    }
                    drop(content);
                    file_seen |= obj.id == *file;
                    got.insert(obj.id, obj);
                }
                other => {
                    let got = match other {
                        Received::Object(obj) => {
                            format!("a {} {}", obj.kind.name(), obj.id.short())
                        }
                        Received::ChunkStub { id, .. } => format!("a chunk {}", id.short()),
                    };
                    return Err(SyncError::Protocol(Violation::Unexpected {
                        expected: "a node of the file asked for",
                        got: Some(got),
                    }));
                }
            }
            Ok(())
        })?;
        if !file_seen {
            return Err(SyncError::Protocol(Violation::Unexpected {
                expected: "the file asked for",
                got: Some("nothing".into()),
            }));
        }
        if nodes.is_empty() && got.is_empty() {
            // A file of one chunk, which has no nodes.
            return Ok(nodes);
        }
        // In the order asked, every one: a node's children follow it.
        for id in &level {
            let node = got.remove(id).ok_or_else(|| {
                SyncError::Protocol(Violation::Unexpected {
                    expected: "every node asked for",
                    got: Some(format!("none for {}", id.short())),
                })
            })?;
            nodes.push(node);
        }
        next.sort();
        next.dedup();
        level = next;
    }
    Ok(nodes)
}

/// `chunks` from `remote` into the store, each checked against its id as
/// it arrives and handed to `arrived`; all of them or an error. Stored as
/// they come, not held until the last: a film read ahead asks for 64 MiB
/// at once. What arrived before an error stays (checked chunks, which gc
/// takes if nothing refers to them).
fn store_chunks_from(
    repo: &Repository,
    remote: &mut dyn Remote,
    chunks: &[ObjectId],
    arrived: &mut dyn FnMut(ObjectId, Vec<u8>),
) -> SyncResult<u64> {
    let mut session = repo.store.begin_write()?;
    let mut got: HashSet<ObjectId> = HashSet::with_capacity(chunks.len());
    let mut bytes = 0;
    let mut received = || -> SyncResult<()> {
        for batch in chunks.chunks(remote.chunks_per_get().max(1)) {
            remote.get(batch, true, &mut |received| {
                let Received::Object(obj) = received else {
                    return Err(SyncError::Protocol(Violation::Unexpected {
                        expected: "a chunk",
                        got: Some("a chunk stub".into()),
                    }));
                };
                if obj.kind != ObjectKind::Chunk || !batch.contains(&obj.id) {
                    return Err(SyncError::Protocol(Violation::Unexpected {
                        expected: "a chunk asked for",
                        got: Some(format!("a {} {}", obj.kind.name(), obj.id.short())),
                    }));
                }
                let content = obj.content().map_err(|d| damaged(&obj, d))?;
                let content = match content {
                    // Stored as sent: the payload is the content, taken without a copy.
                    std::borrow::Cow::Borrowed(_) => None,
                    std::borrow::Cow::Owned(content) => Some(content),
                };
                session.put_verified(&obj)?;
                bytes += obj.raw_len as u64;
                got.insert(obj.id);
                arrived(obj.id, content.unwrap_or(obj.payload));
                Ok(())
            })?;
        }
        Ok(())
    };
    let done = received();
    // What arrived is sealed and kept whatever happened.
    let sealed = session.finish();
    done?;
    sealed?;
    if let Some(missing) = chunks.iter().find(|id| !got.contains(id)) {
        return Err(SyncError::Protocol(Violation::Unexpected {
            expected: "every chunk asked for",
            got: Some(format!("none for {}", missing.short())),
        }));
    }
    Ok(bytes)
}
