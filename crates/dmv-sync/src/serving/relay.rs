//! Answering requests from a repository in an object store: `dmv serve` in
//! front of a bucket (docs/server.md), so several servers with nothing of
//! the repository on their disks serve it at once, any of them killed at any
//! moment: refs move by the bucket's compare-and-swap, path locks are
//! objects created only if absent, and each replica's location log is
//! merged by compare-and-swap too.
//!
//! The server's rules hold as in `serve.rs`: access is the server's
//! decision (the caller), an upload is checked whole (every object hashes
//! to its id and keeps the object rules) and spooled to disk before any of
//! it goes to the bucket, so a refused or cut upload leaves nothing, a ref
//! moves only to a commit the bucket holds, and not past someone else's
//! lock on a path it changes.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufReader, BufWriter, Read, Seek, Write};

use dmv_repo::store::object::{decode, Commit, Tag, TreeNode};
use dmv_repo::store::{ObjectId, ObjectKind, StoredObject};
use dmv_repo::{
    check_object, facts_of_content, refuse_moves_outside_grant, refuse_moves_over_locks,
    refuse_unholdable_paths_between, validate_ref_name, GrantObjects, LocationLog, ObjectFacts,
    PathLock, RefMove, ReplicaId, RepoError, RepoResult, Silent, Tally,
};

use crate::protocol::frame::{Frame, FrameReader, FrameWriter};
use crate::protocol::objects::ref_may_hold;
use crate::protocol::{Request, Response, WireRefUpdate, LOCATIONS_PER_PIECE, MAX_IDS_PER_REQUEST};
use crate::serving::audit::{audit_ref, record_in_bucket};
use crate::serving::pre_receive::run_pre_receive;
use crate::serving::serve::{
    answer_as_allowed, caller_label, caller_name, drop_detail, io_lost, path_event,
    refuse_locks_outside_grant, refuse_unreviewed_moves, server_version, Caller,
    MAX_CONTENT_LOCK_SECONDS,
};
use crate::transport::bucket_remote::BucketRemote;
use crate::transport::remote::{Received, Remote};
use crate::{Refusal, SyncError, SyncResult, Violation};
use dmv_repo::ref_names::{BRANCHES, TAGS, UNION_LOGS};
use dmv_review::ReviewedHub;

/// Answers one request from the bucket. Errors the client should see are
/// sent as an `Error` response; only a broken connection is returned.
pub fn handle_relayed<R: Read, W: Write>(
    bucket: &mut BucketRemote,
    caller: &Caller,
    request: Request,
    input: &mut FrameReader<R>,
    out: &mut FrameWriter<W>,
) -> SyncResult<()> {
    answer_as_allowed(caller, request, input, out, |request, input, out| {
        answer(bucket, caller, request, input, out)
    })
}

fn answer<R: Read, W: Write>(
    bucket: &mut BucketRemote,
    caller: &Caller,
    request: Request,
    input: &mut FrameReader<R>,
    out: &mut FrameWriter<W>,
) -> SyncResult<()> {
    if let Request::Has { ids }
    | Request::Get { ids, .. }
    | Request::LockContent { ids, .. }
    | Request::DropContent { ids } = &request
    {
        if ids.len() > MAX_IDS_PER_REQUEST {
            return Err(SyncError::Protocol(Violation::TooManyIds {
                asked: ids.len(),
                limit: MAX_IDS_PER_REQUEST,
            }));
        }
    }
    let response = match request {
        Request::Hello { .. } => Response::Hello {
            version: server_version(),
            chunking: bucket.chunking(),
            bare: true,
            partial: bucket.may_lack_data(),
        },
        Request::ListRefs => {
            let refs = bucket.list_refs()?;
            Response::Refs {
                head: refs.head,
                refs: refs.refs,
            }
        }
        Request::WaitRefs { .. } => {
            let refs = bucket.list_refs()?;
            Response::RefsDigest {
                digest: crate::protocol::refs_digest(refs.head.as_deref(), &refs.refs),
            }
        }
        Request::WalkCommits { wants, haves } => Response::Commits {
            ids: bucket.walk_commits(wants, haves)?,
        },
        Request::Has { ids } => Response::Has {
            present: bucket.has(&ids)?,
        },
        Request::Get { ids, chunks } => {
            send_in_order(bucket, &ids, chunks, out)?;
            return out.end().map_err(io_lost);
        }
        Request::Put => {
            let spool = receive_checked(bucket, input)?;
            let (objects, bytes) = upload(bucket, spool)?;
            Response::Stored { objects, bytes }
        }
        Request::UpdateRefs {
            updates,
            who,
            message,
        } => {
            for u in &updates {
                validate_ref_name(&u.name)?;
                // A union log's growth is the client's to keep: it joins
                // before it sends, and the bucket's compare-and-swap keeps
                // two senders from dropping each other's entries.
                let log = u.name.starts_with(UNION_LOGS);
                if !(u.name.starts_with(BRANCHES) || u.name.starts_with(TAGS) || log) {
                    return Err(SyncError::Refused(Refusal::NotBranchOrTag {
                        name: u.name.clone(),
                    }));
                }
                // A union log only grows: a value that drops entries is
                // answered as a moved ref, as a directory hub answers it.
                if log && !log_move_keeps_entries(bucket, u.old, u.new)? {
                    let found = bucket
                        .list_refs()?
                        .refs
                        .into_iter()
                        .find_map(|(n, id)| (n == u.name).then_some(id));
                    return out
                        .message(&Response::Rejected {
                            name: u.name.clone(),
                            found,
                        })
                        .map_err(io_lost);
                }
                if let Some(new) = u.new {
                    match bucket.kind_and_len(&new)?.map(|(kind, _)| kind) {
                        Some(kind) if ref_may_hold(&u.name, kind) => {}
                        Some(_) => return Err(SyncError::Refused(Refusal::NotACommit { id: new })),
                        None => {
                            return Err(SyncError::Refused(Refusal::CommitNotReceived {
                                name: u.name.clone(),
                                id: new,
                            }))
                        }
                    }
                }
            }
            let refs: Vec<_> = updates
                .iter()
                .map(|u| audit_ref(&u.name, u.old, u.new))
                .collect();
            // Before the move is announced: a slow hook holds up only this push.
            run_hook_on_bucket(bucket, caller, &updates)?;
            // The check against the locks and the swap are one announced move
            // (an empty update only asks whether this client may push).
            let moved = match updates.is_empty() {
                true => bucket.update_refs(updates, &who, &message),
                false => bucket.moving_refs(|bucket| {
                    refuse_unholdable_paths(bucket, &updates)?;
                    refuse_changes_to_others_locks(bucket, caller, &updates)?;
                    refuse_writes_outside_grant(bucket, caller, &updates)?;
                    refuse_unreviewed_in_bucket(bucket, caller, &updates)?;
                    dmv_repo::store::failpoint("relay-locks-checked");
                    bucket.update_refs(updates, &who, &message)
                }),
            };
            match moved {
                Ok(()) if refs.is_empty() => Response::RefsUpdated,
                Ok(()) => {
                    let mut event = dmv_repo::AuditEvent::new("push", caller_label(caller));
                    event.refs = refs;
                    record_in_bucket(bucket.bucket(), &caller.events, event);
                    Response::RefsUpdated
                }
                Err(SyncError::Rejected { name, found }) => Response::Rejected { name, found },
                Err(e) => return Err(e),
            }
        }
        Request::Replica => {
            let (id, name) = bucket.replica()?;
            Response::Replica { id: id.0, name }
        }
        // A bucket's logs hold no claims: the records come as they are.
        Request::GetLocations | Request::GetLocationClaims { .. } => {
            crate::serving::serve::check_claims_request(&request)?;
            if let Request::GetLocationClaims { .. } = request {
                out.message(&Response::LocationClaims { claims: Vec::new() })
                    .map_err(io_lost)?;
            }
            bucket.get_locations(&mut |records, cards| {
                // Each of the bucket's logs (one per replica) in pieces, its cards on its first.
                let mut piece = LocationLog {
                    records: Default::default(),
                    cards,
                };
                for record in records {
                    piece.records.insert(record.order(), record.stamp);
                    if piece.records.len() == LOCATIONS_PER_PIECE {
                        out.locations(&std::mem::take(&mut piece).encode())
                            .map_err(io_lost)?;
                    }
                }
                if !piece.records.is_empty() || !piece.cards.is_empty() {
                    out.locations(&piece.encode()).map_err(io_lost)?;
                }
                Ok(())
            })?;
            return out.end().map_err(io_lost);
        }
        // A bucket's logs hold no claims: the client sends the records instead.
        Request::PutLocationClaims { .. } => {
            return Err(SyncError::Protocol(Violation::BadLocationClaims(
                "a bucket's logs take no claims",
            )))
        }
        Request::PutLocations { from } => {
            let log = receive_log(input)?;
            bucket.merge_locations(ReplicaId(from), &log)?;
            Response::LocationsMerged
        }
        Request::LockContent { ids, seconds } => {
            let (lock, held) = bucket
                .copies()?
                .lock_content(&ids, seconds.min(MAX_CONTENT_LOCK_SECONDS))?;
            Response::ContentLocked { lock, held }
        }
        Request::UnlockContent { lock } => {
            bucket.copies()?.unlock_content(&lock)?;
            Response::Unlocked
        }
        Request::DropContent { ids } => {
            if !caller.admin {
                return Err(SyncError::Refused(Refusal::DropNeedsAdmin));
            }
            let (freed_bytes, locked) = bucket.copies()?.drop_content(&ids)?;
            let mut event = dmv_repo::AuditEvent::new("drop", caller_label(caller));
            event.detail = Some(drop_detail(ids.len(), freed_bytes));
            record_in_bucket(bucket.bucket(), &caller.events, event);
            Response::ContentDropped {
                freed_bytes,
                locked,
            }
        }
        Request::LockPaths { paths, replica } => {
            let user = caller_name(caller)?;
            refuse_locks_outside_grant(caller, &paths)?;
            let taken = bucket.path_locks()?.lock_paths(&paths, &replica, user)?;
            record_in_bucket(
                bucket.bucket(),
                &caller.events,
                path_event("lock", user, paths),
            );
            Response::PathLocks {
                you: caller.user.clone(),
                locks: taken.locks,
            }
        }
        Request::UnlockPaths { paths, force } => {
            let user = caller_name(caller)?;
            if force && !caller.admin {
                return Err(SyncError::Refused(Refusal::BreakingLocksNeedsAdmin));
            }
            let released = bucket.path_locks()?.unlock_paths(&paths, force, user)?;
            let kind = if force { "break-lock" } else { "unlock" };
            record_in_bucket(
                bucket.bucket(),
                &caller.events,
                path_event(kind, user, paths),
            );
            Response::PathLocks {
                you: caller.user.clone(),
                locks: released.locks,
            }
        }
        Request::ListLocks => {
            let held = bucket
                .path_locks()?
                .list_locks(caller.user.as_deref().unwrap_or(""))?;
            Response::PathLocks {
                you: caller.user.clone(),
                locks: held.locks,
            }
        }
    };
    out.message(&response).map_err(io_lost)
}

/// Refuses ref updates that would leave a branch holding another version
/// of a path someone other than the caller has locked: the rule of
/// `refuse_moves_over_locks`, with trees read from the bucket.
pub(crate) fn refuse_changes_to_others_locks(
    bucket: &mut BucketRemote,
    caller: &Caller,
    updates: &[WireRefUpdate],
) -> SyncResult<()> {
    let locks = bucket
        .path_locks()?
        .list_locks(caller.user.as_deref().unwrap_or(""))?
        .locks;
    let others: Vec<&PathLock> = locks
        .iter()
        .filter(|l| Some(l.owner.as_str()) != caller.user.as_deref())
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    let branches: Vec<(String, ObjectId)> = bucket
        .list_refs()?
        .refs
        .into_iter()
        .filter(|(name, _)| name.starts_with(BRANCHES))
        .collect();
    let moves = moves_of(updates);
    refuse_moves_over_locks(
        &moves,
        &branches,
        &others,
        &BucketObjects(std::cell::RefCell::new(bucket)),
    )
}

/// The ref moves `updates` ask for, as the lock and grant rules read them.
fn moves_of(updates: &[WireRefUpdate]) -> Vec<RefMove<'_>> {
    updates
        .iter()
        .map(|u| RefMove {
            name: &u.name,
            old: u.old,
            new: u.new,
        })
        .collect()
}

/// Whether moving a union log from `old` to `new` keeps every entry `old`
/// holds (never deleted; moved only to a value whose history holds `old`),
/// its commits read from the bucket.
fn log_move_keeps_entries(
    bucket: &mut BucketRemote,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
) -> SyncResult<bool> {
    let (old, new) = match (old, new) {
        (_, None) => return Ok(false),
        (None, Some(_)) => return Ok(true),
        (Some(old), Some(new)) => (old, new),
    };
    if bucket.kind_and_len(&new)?.is_none() {
        return Ok(false);
    }
    // Newest first, stopping at `old`: a push's log is a join or a few
    // entries past it, so a bucket read per entry of the whole log (one
    // request each) is paid only by a value that does not hold it.
    let objects = BucketObjects(std::cell::RefCell::new(bucket));
    let most = dmv_review::DEFAULT_MAX_EVENTS.saturating_mul(2);
    let mut seen = std::collections::HashSet::new();
    let mut todo = std::collections::VecDeque::from([new]);
    while let Some(id) = todo.pop_front() {
        if id == old {
            return Ok(true);
        }
        if !seen.insert(id) {
            continue;
        }
        if seen.len() > most {
            return Err(SyncError::from(RepoError::Log(format!(
                "the log holds more than {most} commits"
            ))));
        }
        todo.extend(objects.commit(&id)?.1.parents);
    }
    Ok(false)
}

/// The review rules (`serve::refuse_unreviewed_moves`) for a bucket whose
/// servers protect branches, the review log and branches read from it.
pub(crate) fn refuse_unreviewed_in_bucket(
    bucket: &mut BucketRemote,
    caller: &Caller,
    updates: &[WireRefUpdate],
) -> SyncResult<()> {
    if caller.bucket_protects.is_empty() {
        return Ok(());
    }
    let refs: HashMap<String, ObjectId> = bucket.list_refs()?.refs.into_iter().collect();
    let hub = BucketHub {
        objects: BucketObjects(std::cell::RefCell::new(bucket)),
        refs,
        protects: &caller.bucket_protects,
    };
    refuse_unreviewed_moves(&hub, caller, &moves_of(updates))
}

/// A bucket as the review rules read it: its refs as listed at the move,
/// its objects one at a time, its servers' rule.
struct BucketHub<'b> {
    objects: BucketObjects<'b>,
    refs: HashMap<String, ObjectId>,
    protects: &'b BTreeMap<String, u32>,
}

impl GrantObjects for BucketHub<'_> {
    fn commit(&self, id: &ObjectId) -> RepoResult<(ObjectId, Commit)> {
        self.objects.commit(id)
    }

    fn tree_node(&self, id: &ObjectId) -> RepoResult<TreeNode> {
        BucketObjects::tree_node(&self.objects, id)
    }
}

impl ReviewedHub for BucketHub<'_> {
    fn protected_branches(&self) -> &BTreeMap<String, u32> {
        self.protects
    }

    fn ref_tip(&self, name: &str) -> RepoResult<Option<ObjectId>> {
        Ok(self.refs.get(name).copied())
    }
}

/// Runs the caller's pre-receive hook on `updates` (`run_pre_receive`,
/// every tree read from the bucket); an error refuses them all.
pub(crate) fn run_hook_on_bucket(
    bucket: &mut BucketRemote,
    caller: &Caller,
    updates: &[WireRefUpdate],
) -> SyncResult<()> {
    if caller.pre_receive.is_none() {
        return Ok(());
    }
    let objects = BucketObjects(std::cell::RefCell::new(bucket));
    run_pre_receive(
        caller.pre_receive.as_deref(),
        caller.user.as_deref(),
        &moves_of(updates),
        &objects,
    )
}

/// Refuses ref updates that change a path outside the caller's write
/// grant (`refuse_moves_outside_grant`, every commit read from the
/// bucket), naming the path: the rule a directory-backed server keeps.
pub(crate) fn refuse_writes_outside_grant(
    bucket: &mut BucketRemote,
    caller: &Caller,
    updates: &[WireRefUpdate],
) -> SyncResult<()> {
    if caller.write.is_everything() {
        return Ok(());
    }
    let tips: Vec<ObjectId> = bucket
        .list_refs()?
        .refs
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    let moves = moves_of(updates);
    let objects = BucketObjects(std::cell::RefCell::new(bucket));
    match refuse_moves_outside_grant(&caller.write, &moves, &tips, &objects)? {
        Some(breach) => Err(SyncError::Refused(Refusal::OutsideWriteGrant {
            path: breach.path,
            how: breach.how,
        })),
        None => Ok(()),
    }
}

/// Refuses ref updates whose new tip holds a path no file system holds
/// (`refuse_unholdable_paths_between`: the old tip's tree against the new
/// one's, read from the bucket), as a directory-backed server does.
pub(crate) fn refuse_unholdable_paths(
    bucket: &mut BucketRemote,
    updates: &[WireRefUpdate],
) -> SyncResult<()> {
    let objects = BucketObjects(std::cell::RefCell::new(bucket));
    for u in updates {
        let Some(new) = u.new else { continue };
        let old = u.old.map(|old| objects.tree_of(&old)).transpose()?;
        let read_node = |id: &ObjectId| objects.tree_node(id);
        refuse_unholdable_paths_between(&read_node, old.as_ref(), &objects.tree_of(&new)?)
            .map_err(|e| match e {
                e @ (RepoError::MalformedTree { .. } | RepoError::PathTooDeep { .. }) => {
                    SyncError::Refused(Refusal::Upload(e))
                }
                e => e.into(),
            })?;
    }
    Ok(())
}

/// Commits, tags and trees read one at a time from a bucket, for the
/// checks a ref update takes (they read a few folders, not whole trees).
struct BucketObjects<'b>(std::cell::RefCell<&'b mut BucketRemote>);

impl BucketObjects<'_> {
    fn read(&self, id: &ObjectId, kind: ObjectKind) -> dmv_repo::RepoResult<Vec<u8>> {
        let mut content = None;
        let got = self.0.borrow_mut().get(&[*id], true, &mut |received| {
            if let Received::Object(obj) = received {
                content = Some(
                    obj.content()
                        .map_err(|detail| {
                            SyncError::Protocol(Violation::DamagedUpload { id: obj.id, detail })
                        })?
                        .into_owned(),
                );
            }
            Ok(())
        });
        let damaged = |detail: String| RepoError::MalformedObject {
            kind: kind.name(),
            id: *id,
            detail,
        };
        got.map_err(|e| damaged(e.to_string()))?;
        content.ok_or_else(|| damaged("not in the bucket".into()))
    }

    /// The tree of `commit` (an annotated tag's commit for a tag).
    fn tree_of(&self, commit: &ObjectId) -> SyncResult<ObjectId> {
        let is_tag = self
            .0
            .borrow_mut()
            .kind_and_len(commit)?
            .is_some_and(|(kind, _)| kind == ObjectKind::Tag);
        let commit = match is_tag {
            true => {
                decode::<Tag>(
                    commit,
                    ObjectKind::Tag,
                    &self.read(commit, ObjectKind::Tag)?,
                )?
                .target
            }
            false => *commit,
        };
        Ok(decode::<Commit>(
            &commit,
            ObjectKind::Commit,
            &self.read(&commit, ObjectKind::Commit)?,
        )?
        .tree)
    }

    fn tree_node(&self, id: &ObjectId) -> dmv_repo::RepoResult<TreeNode> {
        Ok(decode::<TreeNode>(
            id,
            ObjectKind::Tree,
            &self.read(id, ObjectKind::Tree)?,
        )?)
    }
}

impl GrantObjects for BucketObjects<'_> {
    fn commit(&self, id: &ObjectId) -> RepoResult<(ObjectId, Commit)> {
        let is_tag = self
            .0
            .borrow_mut()
            .kind_and_len(id)
            .map_err(|e| RepoError::MalformedObject {
                kind: ObjectKind::Commit.name(),
                id: *id,
                detail: e.to_string(),
            })?
            .is_some_and(|(kind, _)| kind == ObjectKind::Tag);
        let id = match is_tag {
            true => decode::<Tag>(id, ObjectKind::Tag, &self.read(id, ObjectKind::Tag)?)?.target,
            false => *id,
        };
        let commit = decode::<Commit>(
            &id,
            ObjectKind::Commit,
            &self.read(&id, ObjectKind::Commit)?,
        )?;
        Ok((id, commit))
    }

    fn tree_node(&self, id: &ObjectId) -> RepoResult<TreeNode> {
        BucketObjects::tree_node(self, id)
    }
}

/// What a `Get` answer holds in memory at most while it puts a window of
/// objects (which the bucket reads in its packs' order) in the order asked.
const GET_WINDOW_BYTES: u64 = 16 << 20;

/// Answers a `Get`: one frame per id, in the order asked, as the protocol
/// says, read from the bucket a window at a time.
fn send_in_order<W: Write>(
    bucket: &mut BucketRemote,
    ids: &[ObjectId],
    chunks: bool,
    out: &mut FrameWriter<W>,
) -> SyncResult<()> {
    // Everything asked for is there before the first object goes out: an error mid-answer would read as a cut.
    let mut sizes = Vec::with_capacity(ids.len());
    for id in ids {
        let (kind, len) = bucket
            .kind_and_len(id)?
            .ok_or_else(|| SyncError::MissingObject {
                url: bucket.url().to_string(),
                id: *id,
            })?;
        sizes.push(if kind == ObjectKind::Chunk && !chunks {
            0
        } else {
            len as u64
        });
    }
    let mut start = 0;
    while start < ids.len() {
        let (mut end, mut bytes) = (start, 0);
        while end < ids.len() && (end == start || bytes + sizes[end] <= GET_WINDOW_BYTES) {
            bytes += sizes[end];
            end += 1;
        }
        let window = &ids[start..end];
        let mut got: HashMap<ObjectId, Received> = HashMap::with_capacity(window.len());
        bucket.get(window, chunks, &mut |received| {
            let id = match &received {
                Received::Object(obj) => obj.id,
                Received::ChunkStub { id, .. } => *id,
            };
            got.insert(id, received);
            Ok(())
        })?;
        for id in window {
            match got.get(id) {
                Some(Received::Object(obj)) => out.object(obj).map_err(io_lost)?,
                Some(Received::ChunkStub { id, raw_len }) => {
                    out.chunk_stub(id, *raw_len).map_err(io_lost)?
                }
                None => {
                    return Err(SyncError::MissingObject {
                        url: bucket.url().to_string(),
                        id: *id,
                    })
                }
            }
        }
        start = end;
    }
    Ok(())
}

/// Reads an upload whole into an unnamed file, each object checked as it
/// comes: it hashes to its id, and (but for chunks) keeps the object rules
/// against what it refers to, from the upload or from the bucket. Returns
/// the file, at its start, holding the objects as frames.
fn receive_checked<R: Read>(
    bucket: &mut BucketRemote,
    input: &mut FrameReader<R>,
) -> SyncResult<std::fs::File> {
    let spool = tempfile::tempfile()
        .map_err(|e| SyncError::local("cannot make a file to hold an upload", e))?;
    let mut writer = FrameWriter::new(BufWriter::with_capacity(1 << 20, spool));
    let mut received: HashMap<ObjectId, ObjectFacts> = HashMap::new();
    let mut stored: HashMap<ObjectId, Option<ObjectFacts>> = HashMap::new();
    loop {
        let obj = match input.expect_frame()? {
            Frame::End => break,
            Frame::Object(obj) => obj,
            _ => {
                return Err(SyncError::Protocol(Violation::Unexpected {
                    expected: "an object",
                    got: None,
                }))
            }
        };
        let content = obj.content().map_err(|detail| {
            SyncError::Protocol(Violation::DamagedUpload { id: obj.id, detail })
        })?;
        if obj.kind == ObjectKind::Chunk {
            // What a file's entry says of its size is checked against it.
            received.insert(
                obj.id,
                ObjectFacts {
                    kind: ObjectKind::Chunk,
                    size: content.len() as u64,
                },
            );
        } else {
            let mut child = |id: &ObjectId| -> dmv_repo::RepoResult<Option<ObjectFacts>> {
                if let Some(facts) = received.get(id) {
                    return Ok(Some(*facts));
                }
                if !stored.contains_key(id) {
                    let facts =
                        facts_in_bucket(bucket, id).map_err(|e| dmv_repo::RepoError::Corrupt {
                            path: bucket.url().into(),
                            detail: e.to_string(),
                        })?;
                    stored.insert(*id, facts);
                }
                Ok(stored[id])
            };
            let facts = check_object(&obj.id, obj.kind, &content, &mut child)
                .map_err(|e| SyncError::Refused(Refusal::Upload(e)))?;
            received.insert(obj.id, facts);
        }
        writer
            .object(&obj)
            .map_err(|e| SyncError::local("cannot hold an upload on disk", e))?;
    }
    writer
        .end()
        .map_err(|e| SyncError::local("cannot hold an upload on disk", e))?;
    let mut spool = writer
        .into_inner()
        .into_inner()
        .map_err(|e| SyncError::local("cannot hold an upload on disk", e.into_error()))?;
    spool
        .rewind()
        .map_err(|e| SyncError::local("cannot read back an upload", e))?;
    Ok(spool)
}

/// What the object rules need to know of an object the bucket holds (None: it does not).
fn facts_in_bucket(bucket: &mut BucketRemote, id: &ObjectId) -> SyncResult<Option<ObjectFacts>> {
    if !bucket.has(&[*id])?[0] {
        return Ok(None);
    }
    let mut facts = None;
    bucket.get(&[*id], false, &mut |received| {
        facts = Some(match received {
            Received::ChunkStub { raw_len, .. } => ObjectFacts {
                kind: ObjectKind::Chunk,
                size: raw_len as u64,
            },
            Received::Object(obj) => {
                let content = obj.content().map_err(|detail| {
                    SyncError::Protocol(Violation::DamagedUpload { id: obj.id, detail })
                })?;
                facts_of_content(&obj.id, obj.kind, &content)?
            }
        });
        Ok(())
    })?;
    Ok(facts)
}

/// Sends a checked upload to the bucket.
fn upload(bucket: &mut BucketRemote, spool: std::fs::File) -> SyncResult<(u64, u64)> {
    let mut frames = FrameReader::new(BufReader::with_capacity(1 << 20, spool));
    let mut produce = |emit: &mut dyn FnMut(&StoredObject) -> SyncResult<()>| -> SyncResult<()> {
        loop {
            match frames.expect_frame()? {
                Frame::End => return Ok(()),
                Frame::Object(obj) => emit(&obj)?,
                _ => {
                    return Err(SyncError::Protocol(Violation::Unexpected {
                        expected: "an object",
                        got: None,
                    }))
                }
            }
        }
    };
    bucket.put(&mut produce, &Tally::new(&Silent, 0))
}

/// Reads a pushed location log, which comes in pieces in key order, each checked whole.
fn receive_log<R: Read>(input: &mut FrameReader<R>) -> SyncResult<LocationLog> {
    let mut log = LocationLog::default();
    let mut last = None;
    loop {
        match input.expect_frame()? {
            Frame::End => return Ok(log),
            Frame::Locations(piece) => {
                let (records, cards) = LocationLog::read_encoded(&piece)
                    .map_err(|e| SyncError::Protocol(Violation::BadLocationPiece(e)))?;
                for record in records {
                    if last.is_some_and(|last| record.order() <= last) {
                        return Err(SyncError::Protocol(Violation::LocationsOutOfOrder));
                    }
                    last = Some(record.order());
                    log.records.insert(record.order(), record.stamp);
                }
                for (replica, (time_ns, card)) in cards {
                    log.card(replica, time_ns, card);
                }
            }
            _ => {
                return Err(SyncError::Protocol(Violation::Unexpected {
                    expected: "a piece of a location log",
                    got: None,
                }))
            }
        }
    }
}
