//! A remote held in memory: objects in a map, refs in a table, nothing on
//! disk and no server. It keeps the rules a real remote keeps (an object is
//! taken only after everything it refers to, refs move by compare-and-swap)
//! and counts what crossed, so tests of the negotiation run fast and can say
//! exactly what a fetch or push sent.

use dmv_repo::Tally;
use std::collections::{BTreeMap, HashMap, HashSet};

use dmv_repo::store::object::{children, decode, Commit, Tag};
use dmv_repo::store::{ChunkParams, ObjectId, ObjectKind, StoredObject};

use crate::protocol::WireRefUpdate;
use crate::transport::remote::{ObjectProducer, Received, Remote, RemoteRefs};
use crate::TransportError;
use crate::{SyncError, SyncResult, Violation};

/// What crossed between a client and a [`MemoryRemote`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Requests of each kind.
    pub has_calls: u64,
    /// `get` requests.
    pub get_calls: u64,
    /// `put` requests.
    pub put_calls: u64,
    /// Objects handed out by `get` (chunk stubs not counted).
    pub objects_sent: u64,
    /// Objects received by `put`, and how many of them were new.
    pub objects_received: u64,
    /// Of those, the ones it did not have.
    pub objects_stored: u64,
}

/// A remote held in memory, for tests: objects and refs with no store
/// under them, the traffic counted, and a connection that can be cut.
/// Its URL is `memory:` and its HEAD names `refs/heads/main`.
pub struct MemoryRemote {
    url: String,
    chunking: ChunkParams,
    objects: HashMap<ObjectId, StoredObject>,
    refs: BTreeMap<String, ObjectId>,
    head: Option<String>,
    /// Fail every `get` once this many objects have been handed out (a connection cut mid-transfer).
    cut_after: Option<u64>,
    /// What crossed so far.
    pub traffic: Traffic,
}

impl MemoryRemote {
    /// An empty remote whose history uses `chunking`.
    pub fn new(chunking: ChunkParams) -> MemoryRemote {
        MemoryRemote {
            url: "memory:".into(),
            chunking,
            objects: HashMap::new(),
            refs: BTreeMap::new(),
            head: Some("refs/heads/main".into()),
            cut_after: None,
            traffic: Traffic::default(),
        }
    }

    /// Cuts the connection once `objects` objects have been sent in total (None: never).
    pub fn cut_after(&mut self, objects: Option<u64>) {
        self.cut_after = objects;
    }

    /// Its refs, by full name.
    pub fn refs(&self) -> &BTreeMap<String, ObjectId> {
        &self.refs
    }

    /// Moves a ref behind the clients' backs (another writer).
    pub fn set_ref(&mut self, name: &str, id: Option<ObjectId>) {
        match id {
            Some(id) => self.refs.insert(name.to_string(), id),
            None => self.refs.remove(name),
        };
    }

    /// The ids of every object it holds.
    pub fn object_ids(&self) -> HashSet<ObjectId> {
        self.objects.keys().copied().collect()
    }

    /// A commit's parents, an annotated tag's commit.
    fn history_behind(&self, id: &ObjectId) -> SyncResult<Vec<ObjectId>> {
        let obj = self
            .objects
            .get(id)
            .ok_or_else(|| SyncError::MissingObject {
                url: self.url.clone(),
                id: *id,
            })?;
        let content = obj
            .content()
            .map_err(|detail| SyncError::Protocol(Violation::DamagedUpload { id: *id, detail }))?;
        Ok(match obj.kind {
            ObjectKind::Tag => vec![decode::<Tag>(id, obj.kind, &content)?.target],
            _ => decode::<Commit>(id, ObjectKind::Commit, &content)?.parents,
        })
    }

    /// The commits and annotated tags reachable from `starts`, including them.
    fn ancestors(&self, starts: impl Iterator<Item = ObjectId>) -> SyncResult<HashSet<ObjectId>> {
        let mut seen = HashSet::new();
        let mut stack: Vec<ObjectId> = starts.collect();
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(self.history_behind(&id)?);
            }
        }
        Ok(seen)
    }
}

impl Remote for MemoryRemote {
    fn url(&self) -> &str {
        &self.url
    }

    fn chunking(&self) -> ChunkParams {
        self.chunking
    }

    fn bare(&self) -> bool {
        true
    }

    fn list_refs(&mut self) -> SyncResult<RemoteRefs> {
        Ok(RemoteRefs {
            head: self.head.clone(),
            refs: self.refs.iter().map(|(n, id)| (n.clone(), *id)).collect(),
        })
    }

    fn walk_commits(
        &mut self,
        wants: Vec<ObjectId>,
        haves: Vec<ObjectId>,
    ) -> SyncResult<Vec<ObjectId>> {
        let known = self.ancestors(haves.into_iter().filter(|h| {
            self.objects
                .get(h)
                .is_some_and(|o| matches!(o.kind, ObjectKind::Commit | ObjectKind::Tag))
        }))?;
        let wanted = self.ancestors(wants.into_iter())?;
        Ok(wanted.difference(&known).copied().collect())
    }

    fn has(&mut self, ids: &[ObjectId]) -> SyncResult<Vec<bool>> {
        self.traffic.has_calls += 1;
        Ok(ids.iter().map(|id| self.objects.contains_key(id)).collect())
    }

    fn get(
        &mut self,
        ids: &[ObjectId],
        chunks: bool,
        sink: &mut dyn FnMut(Received) -> SyncResult<()>,
    ) -> SyncResult<()> {
        self.traffic.get_calls += 1;
        for id in ids {
            let obj = self
                .objects
                .get(id)
                .ok_or_else(|| SyncError::MissingObject {
                    url: self.url.clone(),
                    id: *id,
                })?;
            if !chunks && obj.kind == ObjectKind::Chunk {
                sink(Received::ChunkStub {
                    id: *id,
                    raw_len: obj.raw_len,
                })?;
                continue;
            }
            if self
                .cut_after
                .is_some_and(|n| self.traffic.objects_sent >= n)
            {
                return Err(SyncError::Transport(TransportError::Disconnected(
                    "the memory remote cut the connection".into(),
                )));
            }
            self.traffic.objects_sent += 1;
            sink(Received::Object(obj.clone()))?;
        }
        Ok(())
    }

    fn put(&mut self, objects: ObjectProducer<'_>, sent: &Tally<'_>) -> SyncResult<(u64, u64)> {
        self.traffic.put_calls += 1;
        let (mut stored, mut bytes) = (0u64, 0u64);
        let store = &mut self.objects;
        let traffic = &mut self.traffic;
        objects(&mut |obj: &StoredObject| {
            traffic.objects_received += 1;
            sent.add(obj.payload.len() as u64);
            let content = obj.content().map_err(|detail| {
                SyncError::Protocol(Violation::DamagedUpload { id: obj.id, detail })
            })?;
            for child in children(&obj.id, obj.kind, &content)? {
                if !store.contains_key(&child) {
                    return Err(SyncError::Protocol(Violation::ArrivedBefore {
                        id: obj.id,
                        child,
                    }));
                }
            }
            if store.insert(obj.id, obj.clone()).is_none() {
                traffic.objects_stored += 1;
                stored += 1;
                bytes += obj.payload.len() as u64;
            }
            Ok(())
        })?;
        Ok((stored, bytes))
    }

    fn update_refs(
        &mut self,
        updates: Vec<WireRefUpdate>,
        _who: &str,
        _message: &str,
    ) -> SyncResult<()> {
        for u in &updates {
            dmv_repo::validate_ref_name(&u.name)?;
            if self.refs.get(&u.name).copied() != u.old {
                return Err(SyncError::Rejected {
                    name: u.name.clone(),
                    found: self.refs.get(&u.name).copied(),
                });
            }
            if let Some(new) = u.new {
                if !self
                    .objects
                    .get(&new)
                    .is_some_and(|o| crate::protocol::objects::ref_may_hold(&u.name, o.kind))
                {
                    return Err(SyncError::Remote(format!(
                        "cannot set {} to {new}: the commit was not received",
                        u.name
                    )));
                }
            }
        }
        for u in updates {
            self.set_ref(&u.name, u.new);
        }
        Ok(())
    }
}
