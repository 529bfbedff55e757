//! The serving side of the protocol: answers one request at a time from a
//! repository. `dmv serve --stdio` (local paths and ssh) loops over requests
//! on one stream; the HTTP server calls [`handle`] once per request.

use std::io::{Read, Write};
use std::path::Path;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use dmv_repo::store::object::{Commit, Tag, TreeNode};
use dmv_repo::store::{ObjectId, ObjectKind, WriteSession};
use dmv_repo::{
    check_object, refuse_moves_outside_grant, refuse_moves_over_locks, stored_facts,
    validate_ref_name, AuditEvent, GrantObjects, Head, ObjectFacts, RefMove, RefUpdate, RepoError,
    RepoResult, Repository, WriteGrant,
};

use crate::protocol::frame::{decode_message, Frame, FrameReader, FrameWriter};
use crate::protocol::location_run::{holder_names, LocationRun};
use crate::protocol::objects::ref_may_hold;
use crate::protocol::{
    refs_digest, Request, Response, WireClaim, WireRefUpdate, LOCATIONS_PER_PIECE, VERSION,
};
use crate::serving::audit::{audit_ref, record_in_dir, Events};
use crate::serving::pre_receive::{run_pre_receive, PreReceive};
use crate::TransportError;
use crate::{Refusal, SyncError, SyncResult, Violation};
use dmv_repo::ref_names::{BRANCHES, REMOTE_BRANCHES, REVIEW_LOG, TAGS, UNION_LOGS};
use dmv_review::{HubRepo, ReviewedHub};

/// The protocol version this server announces (tests override it to check
/// how a mismatch is reported).
pub fn server_version() -> u32 {
    dmv_os::fault::test_setting("DMV_TEST_PROTOCOL_VERSION")
        .and_then(|v| v.parse().ok())
        .unwrap_or(VERSION)
}

/// Who a request comes from, as the transport established it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// May make requests that change the repository (`Put`, `UpdateRefs`, …).
    pub may_write: bool,
    /// The caller's name for locks (None: unknown, so it may not lock).
    pub user: Option<String>,
    /// May break other people's locks.
    pub admin: bool,
    /// The paths the caller may change (everything, by default): a push,
    /// an upload or a lock reaching past them is refused, naming the path.
    pub write: WriteGrant,
    /// Where the server hears of what this caller did (besides the audit log).
    pub events: Events,
    /// The command that may refuse this caller's ref moves (None: no hook).
    pub pre_receive: Option<Arc<PreReceive>>,
    /// The branches a bucket's servers protect (their `protect`), each
    /// with the approvals it asks; a directory hub keeps its own in its
    /// config (`review.protect`), and this is not read for it.
    pub bucket_protects: Arc<BTreeMap<String, u32>>,
}

impl Caller {
    /// A caller on this machine or through ssh: the account the server runs
    /// as (ssh logs in as the user), who may write what the account can.
    /// The account that owns the repository is its admin.
    pub fn local_account(repo_dir: &Path) -> Caller {
        #[cfg(unix)]
        {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let uid = unsafe { libc::geteuid() };
            let user = account_name(uid)
                .or_else(|| {
                    ["USER", "LOGNAME"]
                        .iter()
                        .find_map(|k| std::env::var(k).ok().filter(|u| !u.is_empty()))
                })
                .unwrap_or_else(|| format!("uid {uid}"));
            use std::os::unix::fs::MetadataExt;
            let admin = std::fs::metadata(repo_dir.join(".dmv")).is_ok_and(|m| m.uid() == uid);
            Caller {
                may_write: true,
                user: Some(user),
                admin,
                write: WriteGrant::everything(),
                events: Events::default(),
                pre_receive: None,
                bucket_protects: Default::default(),
            }
        }
        // Windows: files' owners are not at hand here; who can write the
        // repository's folder is taken as its admin.
        #[cfg(windows)]
        {
            let user = std::env::var("USERNAME").ok().filter(|u| !u.is_empty());
            let admin =
                std::fs::metadata(repo_dir.join(".dmv")).is_ok_and(|m| !m.permissions().readonly());
            Caller {
                may_write: true,
                user,
                admin,
                write: WriteGrant::everything(),
                events: Events::default(),
                pre_receive: None,
                bucket_protects: Default::default(),
            }
        }
    }
}

/// The account name of `uid` in the password database (sshd logs a user in as it).
#[cfg(unix)]
fn account_name(uid: libc::uid_t) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: an all-zero passwd is a valid value to be overwritten.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live buffer of the length given; on success
    // `found` points at `pwd`, whose strings point into `buf`.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name is a NUL-terminated string inside `buf`, which is still alive.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    name.to_str()
        .ok()
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}

/// Buffer on each side of `serve --stdio`. A quarter of the 1 MiB pipe is
/// enough to keep it busy, and a reader's buffer fills whole: at 1 MiB each
/// they were 1.5 MiB of the server's 23 MiB in a push of 100,000 files.
const PIPE_BUFFER: usize = 256 << 10;

/// Serves the repository at `path` over stdin/stdout until the client hangs up.
pub fn serve_stdio(path: &Path) -> SyncResult<()> {
    let stdin = std::io::stdin().lock();
    crate::transport::stdio::widen_pipe(0);
    crate::transport::stdio::widen_pipe(1);
    // Straight to file descriptor 1: std's stdout is line-buffered, and
    // object data is full of newlines.
    let stdout = dmv_os::stdout_file().map_err(|e| {
        SyncError::Transport(TransportError::Disconnected(format!(
            "cannot use standard output: {e}"
        )))
    })?;
    let mut input = FrameReader::new(std::io::BufReader::with_capacity(PIPE_BUFFER, stdin));
    let mut out = FrameWriter::new(std::io::BufWriter::with_capacity(PIPE_BUFFER, stdout));
    let repo = Repository::open(path);
    let caller = Caller::local_account(path);
    // After a request this server cannot read, frames other than a message
    // are that request's body, up to its `end`: skipped, so a newer
    // client's upload (`PutLocationClaims`) refused here leaves the
    // connection usable for what it sends instead.
    let mut skipping_body = false;
    while let Some(frame) = input.next_frame()? {
        let bytes = match frame {
            Frame::Message(bytes) => bytes,
            Frame::End if skipping_body => {
                skipping_body = false;
                continue;
            }
            _ if skipping_body => continue,
            _ => {
                return Err(SyncError::Protocol(Violation::Unexpected {
                    expected: "a request",
                    got: None,
                }))
            }
        };
        skipping_body = false;
        // A request of a newer client's: refused as the HTTP server refuses
        // an unknown verb, so the client can do without it.
        let Ok(request) = decode_message::<Request>(&bytes) else {
            out.message(&Response::Error {
                message: "unknown request".into(),
            })
            .and_then(|_| out.flush())
            .map_err(|e| SyncError::Transport(TransportError::Disconnected(e.to_string())))?;
            skipping_body = true;
            continue;
        };
        match &repo {
            Ok(repo) => handle_request(repo, &caller, request, &mut input, &mut out)?,
            Err(e) => {
                // Say why once, then end: there is nothing to serve.
                let message = match e {
                    RepoError::NotARepository(_) | RepoError::Io { .. } => {
                        "not a dmv repository".to_string()
                    }
                    other => format!("not a dmv repository: {other}"),
                };
                out.message(&Response::Error { message })
                    .and_then(|_| out.flush())
                    .map_err(|e| {
                        SyncError::Transport(TransportError::Disconnected(e.to_string()))
                    })?;
                return Ok(());
            }
        }
        out.flush()
            .map_err(|e| SyncError::Transport(TransportError::Disconnected(e.to_string())))?;
    }
    Ok(())
}

/// Answers one request. Errors the client should see are sent as an `Error`
/// response; only a broken connection is returned as an error.
pub fn handle_request<R: Read, W: Write>(
    repo: &Repository,
    caller: &Caller,
    request: Request,
    input: &mut FrameReader<R>,
    out: &mut FrameWriter<W>,
) -> SyncResult<()> {
    answer_as_allowed(caller, request, input, out, |request, input, out| {
        answer(repo, caller, request, input, out)
    })
}

/// Answers `request` with `answer` if the caller may make it. Errors the
/// client should see are sent as an `Error` response (after the rest of an
/// upload is read, so the client reads it); only a broken connection is returned.
pub(crate) fn answer_as_allowed<R: Read, W: Write>(
    caller: &Caller,
    request: Request,
    input: &mut FrameReader<R>,
    out: &mut FrameWriter<W>,
    answer: impl FnOnce(Request, &mut FrameReader<R>, &mut FrameWriter<W>) -> SyncResult<()>,
) -> SyncResult<()> {
    let verb = request.verb();
    let result = match verb.writes() && !caller.may_write {
        true => Err(SyncError::Refused(Refusal::NeedsWriteAccess {
            verb: verb.name(),
        })),
        false => answer(request, input, out),
    };
    match result {
        Ok(()) => Ok(()),
        Err(e @ SyncError::Transport(TransportError::Disconnected(_))) => Err(e),
        Err(e) => {
            if verb.has_body() {
                drain_until_end(input)?;
            }
            out.message(&Response::Error {
                message: e.to_string(),
            })
            .map_err(io_lost)
        }
    }
}

/// The longest a drop elsewhere may keep a copy here locked.
pub(crate) const MAX_CONTENT_LOCK_SECONDS: u64 = 3600;

pub(crate) fn io_lost(e: std::io::Error) -> SyncError {
    SyncError::Transport(TransportError::Disconnected(e.to_string()))
}

/// After refusing an upload, reads the rest of it so the client gets to
/// read our answer; nothing when it was read to its end (a disk that
/// filled as the pack was sealed, after the last frame).
fn drain_until_end<R: Read>(input: &mut FrameReader<R>) -> SyncResult<()> {
    if input.at_end() {
        return Ok(());
    }
    loop {
        match input.next_frame()? {
            None | Some(Frame::End) => return Ok(()),
            Some(_) => {}
        }
    }
}

/// The answer for an object asked for that is not here: the replicas the log says hold it.
fn not_held(repo: &Repository, id: &ObjectId) -> SyncError {
    let holders = holder_names(repo, &[*id])
        .ok()
        .and_then(|mut h| h.remove(id))
        .unwrap_or_default();
    SyncError::NotHeld { id: *id, holders }
}

/// Refuses a `GetLocationClaims` of more trees than a client names.
pub(crate) fn check_claims_request(request: &Request) -> SyncResult<()> {
    match request {
        Request::GetLocationClaims { trees }
            if trees.len() > crate::protocol::MAX_TREES_PER_CLAIMS_REQUEST =>
        {
            Err(SyncError::Protocol(Violation::TooManyIds {
                asked: trees.len(),
                limit: crate::protocol::MAX_TREES_PER_CLAIMS_REQUEST,
            }))
        }
        _ => Ok(()),
    }
}

fn answer<R: Read, W: Write>(
    repo: &Repository,
    caller: &Caller,
    request: Request,
    input: &mut FrameReader<R>,
    out: &mut FrameWriter<W>,
) -> SyncResult<()> {
    let store = &repo.store;
    if let Request::Has { ids }
    | Request::Get { ids, .. }
    | Request::LockContent { ids, .. }
    | Request::DropContent { ids } = &request
    {
        // The answer is sized by the request: bound it as the client does.
        if ids.len() > crate::protocol::MAX_IDS_PER_REQUEST {
            return Err(SyncError::Protocol(Violation::TooManyIds {
                asked: ids.len(),
                limit: crate::protocol::MAX_IDS_PER_REQUEST,
            }));
        }
    }
    check_claims_request(&request)?;
    match request {
        Request::Hello { .. } => {
            out.message(&Response::Hello {
                version: server_version(),
                chunking: repo.config.chunking,
                bare: repo.config.bare,
                partial: repo.is_partial(),
            })
            .map_err(io_lost)?;
        }
        Request::ListRefs => {
            let (head, refs) = listed_refs(repo)?;
            out.message(&Response::Refs { head, refs })
                .map_err(io_lost)?;
        }
        // Answered at once: the wait is the HTTP server's (a stdio or ssh server holds no connection open for it).
        Request::WaitRefs { .. } => {
            let (head, refs) = listed_refs(repo)?;
            out.message(&Response::RefsDigest {
                digest: refs_digest(head.as_deref(), &refs),
            })
            .map_err(io_lost)?;
        }
        Request::WalkCommits { wants, haves } => {
            let (mut ids, commits) = repo.history().history_between(&wants, &haves)?;
            ids.extend(commits);
            out.message(&Response::Commits { ids }).map_err(io_lost)?;
        }
        Request::Has { ids } => {
            // A partial replica may hold a file's node without all its chunks: "has" means all of it.
            let present = match repo.is_partial() {
                true => ids
                    .iter()
                    .map(|id| repo.copies().has_data(id))
                    .collect::<Result<Vec<bool>, _>>()?,
                false => ids
                    .iter()
                    .map(|id| store.contains(id))
                    .collect::<Result<Vec<bool>, _>>()?,
            };
            out.message(&Response::Has { present }).map_err(io_lost)?;
        }
        Request::Get { ids, chunks } => {
            // As a reader: an id learnt from refs moved by another process since this connection opened is found.
            let found = ids
                .iter()
                .map(|id| store.find(id)?.ok_or_else(|| not_held(repo, id)))
                .collect::<SyncResult<Vec<_>>>()?;
            let sent: Vec<_> = found
                .iter()
                .filter(|l| chunks || l.entry.kind != ObjectKind::Chunk)
                .copied()
                .collect();
            let mut sent_so_far = 0;
            for (id, loc) in ids.iter().zip(&found) {
                if !chunks && loc.entry.kind == ObjectKind::Chunk {
                    out.chunk_stub(id, loc.entry.raw_len).map_err(io_lost)?;
                } else {
                    store.read_ahead(&sent, sent_so_far);
                    sent_so_far += 1;
                    out.object(&store.read_stored_unverified(loc)?)
                        .map_err(io_lost)?;
                }
            }
            out.end().map_err(io_lost)?;
        }
        Request::Put => {
            let (objects, bytes) = receive_objects(repo, input)?;
            out.message(&Response::Stored { objects, bytes })
                .map_err(io_lost)?;
        }
        Request::UpdateRefs {
            updates,
            who,
            message,
        } => {
            let moved: Vec<_> = updates
                .iter()
                .map(|u| audit_ref(&u.name, u.old, u.new))
                .collect();
            let review_moved = updates
                .iter()
                .find(|u| u.name == REVIEW_LOG)
                .and_then(|u| Some((u.old, u.new?)));
            let response = update_refs(repo, caller, updates, &who, &message)?;
            if matches!(response, Response::RefsUpdated) && !moved.is_empty() {
                let mut event = AuditEvent::new("push", caller_label(caller));
                event.refs = moved;
                record_in_dir(repo, &caller.events, event);
                if let Some((old, new)) = review_moved {
                    crate::serving::audit::record_mentions_in_dir(repo, &caller.events, old, new);
                }
            }
            out.message(&response).map_err(io_lost)?;
            repo.tidy_store();
        }
        Request::Replica => {
            let name = repo
                .root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // A repository served read-only cannot store an id: one derived from its place stands in.
            let id = repo
                .copies()
                .replica_id()
                .unwrap_or_else(|_| dmv_repo::ReplicaId::derived(&repo.root.to_string_lossy()));
            out.message(&Response::Replica { id: id.0, name })
                .map_err(io_lost)?;
        }
        Request::GetLocations => {
            // Read from one open file: a log rewritten meanwhile is not mixed in.
            let mut pieces = repo.copies().location_pages()?;
            while let Some(piece) = pieces.next_page(LOCATIONS_PER_PIECE)? {
                out.locations(&piece).map_err(io_lost)?;
            }
            out.end().map_err(io_lost)?;
        }
        Request::GetLocationClaims { trees } => {
            let mut pieces = repo.copies().location_pages_claiming(&trees)?;
            let claims = pieces.claims().iter().map(WireClaim::of).collect();
            out.message(&Response::LocationClaims { claims })
                .map_err(io_lost)?;
            while let Some(piece) = pieces.next_page(LOCATIONS_PER_PIECE)? {
                out.locations(&piece).map_err(io_lost)?;
            }
            out.end().map_err(io_lost)?;
        }
        Request::PutLocations { .. } => {
            receive_locations(repo, input, Vec::new())?;
            out.message(&Response::LocationsMerged).map_err(io_lost)?;
        }
        Request::PutLocationClaims { claims, .. } => {
            let claims = claims_taken(repo, &claims)?;
            receive_locations(repo, input, claims)?;
            out.message(&Response::LocationsMerged).map_err(io_lost)?;
        }
        Request::LockContent { ids, seconds } => {
            let (lock, held) = repo
                .copies()
                .lock_content(&ids, seconds.min(MAX_CONTENT_LOCK_SECONDS))?;
            out.message(&Response::ContentLocked { lock, held })
                .map_err(io_lost)?;
        }
        Request::UnlockContent { lock } => {
            repo.copies().unlock_content(&lock)?;
            out.message(&Response::Unlocked).map_err(io_lost)?;
        }
        Request::DropContent { ids } => {
            // The caller's word that other copies exist is not enough to
            // destroy data here: the repository's admin decides.
            if !caller.admin {
                return Err(SyncError::Refused(Refusal::DropNeedsAdmin));
            }
            let dropped = repo.copies().drop_data(&ids)?;
            let mut event = AuditEvent::new("drop", caller_label(caller));
            event.detail = Some(drop_detail(ids.len(), dropped.freed_bytes));
            record_in_dir(repo, &caller.events, event);
            out.message(&Response::ContentDropped {
                freed_bytes: dropped.freed_bytes,
                locked: dropped.locked,
            })
            .map_err(io_lost)?;
        }
        Request::LockPaths { paths, replica } => {
            let user = caller_name(caller)?;
            refuse_locks_outside_grant(caller, &paths)?;
            let mut held = repo.locks().hold_locks()?;
            let taken = held.table.lock(&paths, user, &replica, unix_now())?;
            held.save()?;
            drop(held);
            record_in_dir(repo, &caller.events, path_event("lock", user, paths));
            out.message(&Response::PathLocks {
                you: caller.user.clone(),
                locks: taken,
            })
            .map_err(io_lost)?;
        }
        Request::UnlockPaths { paths, force } => {
            let user = caller_name(caller)?;
            if force && !caller.admin {
                return Err(SyncError::Refused(Refusal::BreakingLocksNeedsAdmin));
            }
            let mut held = repo.locks().hold_locks()?;
            let released = held.table.unlock(&paths, user, force)?;
            held.save()?;
            drop(held);
            let kind = if force { "break-lock" } else { "unlock" };
            record_in_dir(repo, &caller.events, path_event(kind, user, paths));
            out.message(&Response::PathLocks {
                you: caller.user.clone(),
                locks: released,
            })
            .map_err(io_lost)?;
        }
        Request::ListLocks => {
            let locks = repo.locks().path_locks()?.all().cloned().collect();
            out.message(&Response::PathLocks {
                you: caller.user.clone(),
                locks,
            })
            .map_err(io_lost)?;
        }
    }
    Ok(())
}

/// Stores uploaded objects. Each must arrive after everything it refers to,
/// so whatever has landed when a connection drops is complete in itself and
/// a retry skips it; packs sealed before the drop stay. Each is held to the
/// rules a clone would hold it to (`dmv_repo::check_object`: names, kinds,
/// sizes) before it is stored: a pusher cannot break the clones of others.
pub fn receive_objects<R: Read>(
    repo: &Repository,
    input: &mut FrameReader<R>,
) -> SyncResult<(u64, u64)> {
    let mut session = repo.store.begin_write()?;
    // The facts of what this upload brought other than chunks (a chunk's are in its pack record).
    let mut received: HashMap<ObjectId, ObjectFacts> = HashMap::new();
    // Which of those the upload's objects refer to: the rest are its roots,
    // which gc must keep. Only objects of `received` are noted (chunks are
    // never roots): a push of a million files would otherwise hold a
    // million chunk ids here.
    let mut referenced: HashSet<ObjectId> = HashSet::new();
    let (mut objects, mut bytes) = (0u64, 0u64);
    loop {
        match input.expect_frame()? {
            Frame::End => break,
            Frame::Object(obj) => {
                if obj.kind != ObjectKind::Chunk {
                    let content = obj.content().map_err(|detail| {
                        SyncError::Protocol(Violation::DamagedUpload { id: obj.id, detail })
                    })?;
                    let facts = check_object(&obj.id, obj.kind, &content, &mut |child| {
                        if received.contains_key(child) {
                            referenced.insert(*child);
                        }
                        facts_of(&session, &received, child)
                    })
                    .map_err(|e| SyncError::Refused(Refusal::Upload(e)))?;
                    received.insert(obj.id, facts);
                }
                bytes += obj.payload.len() as u64;
                if session.put_stored(&obj)? {
                    objects += 1;
                }
            }
            _ => {
                return Err(SyncError::Protocol(Violation::Unexpected {
                    expected: "an object",
                    got: None,
                }))
            }
        }
    }
    session.finish()?;
    // Until the client's ref update comes (a second request), a lock keeps
    // these from gc, taken while the session still holds gc off.
    let roots: Vec<ObjectId> = received
        .into_keys()
        .filter(|id| !referenced.contains(id))
        .collect();
    repo.maintenance().hold_received(&roots)?;
    drop(session);
    dmv_repo::store::failpoint("push-received");
    Ok((objects, bytes))
}

/// What `check_object` needs to know of an object an upload refers to:
/// from the upload itself, or from the store (None: not here).
fn facts_of(
    session: &WriteSession<'_>,
    received: &HashMap<ObjectId, ObjectFacts>,
    id: &ObjectId,
) -> dmv_repo::RepoResult<Option<ObjectFacts>> {
    match received.get(id) {
        Some(facts) => Ok(Some(*facts)),
        None => stored_facts(session, id),
    }
}

type ListedRefs = Vec<(String, ObjectId)>;

/// Whether moving a union log from `old` to `new` keeps every entry `old`
/// holds (a log is never deleted, and moves only to a descendant).
fn log_move_keeps_entries(
    repo: &Repository,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
) -> SyncResult<bool> {
    Ok(match (old, new) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(old), Some(new)) => {
            repo.store.contains(&new)? && repo.history().is_ancestor(&old, &new)?
        }
    })
}

/// Review's rules at the hub (dmv-review's `protect`): a protected branch
/// moves only by landing an approved review, and approvals arrive only
/// from their authors.
pub(crate) fn refuse_unreviewed_moves(
    hub: &impl ReviewedHub,
    caller: &Caller,
    moves: &[RefMove<'_>],
) -> SyncResult<()> {
    for m in moves {
        let judged = if let Some(branch) = m.name.strip_prefix(BRANCHES) {
            dmv_review::refuse_unreviewed_move(hub, branch, m.old, m.new)
        } else if let (REVIEW_LOG, Some(new)) = (m.name, m.new) {
            dmv_review::refuse_approvals_of_others(hub, m.old, new, caller.user.as_deref())
        } else {
            Ok(())
        };
        judged.map_err(|e| match e {
            dmv_review::ReviewError::Repo(e) => SyncError::from(e),
            other => SyncError::Refused(Refusal::Review(other.to_string())),
        })?;
    }
    Ok(())
}

/// What `ListRefs` answers: HEAD's branch, and the branches and tags.
fn listed_refs(repo: &Repository) -> SyncResult<(Option<String>, ListedRefs)> {
    let head = match repo.head()? {
        Head::Branch(b) => Some(b),
        Head::Detached(_) => None,
    };
    let mut refs = repo.refs.list(BRANCHES)?;
    refs.extend(repo.refs.list(TAGS)?);
    refs.extend(repo.refs.list(UNION_LOGS)?);
    // A peer offers its branches here, and needs to know what it offered last.
    if !repo.config.bare {
        refs.extend(repo.refs.list(REMOTE_BRANCHES)?);
    }
    Ok((head, refs))
}

/// The claims of a `PutLocationClaims`, checked: within the bounds of a
/// log's, and each of a tree this replica reads whole already when it
/// reads its own log (so a caller can make it read no other tree).
fn claims_taken(repo: &Repository, claims: &[WireClaim]) -> SyncResult<Vec<dmv_repo::TreeClaim>> {
    let claims: Vec<dmv_repo::TreeClaim> = claims.iter().map(WireClaim::claim).collect();
    let bad = |why| SyncError::Protocol(Violation::BadLocationClaims(why));
    dmv_repo::check_claims(&claims).map_err(bad)?;
    let read = repo.copies().trees_read_for_claims()?;
    if claims.iter().any(|c| !read.contains(&c.tree)) {
        return Err(bad("a tree this replica does not read whole"));
    }
    Ok(claims)
}

/// Merges a pushed location log, which comes in pieces in key order, each
/// checked whole as it comes and spooled to disk: the log is rewritten once,
/// after the last piece, and a piece is all that is held in memory.
/// `claims` (checked) stand for records the pieces leave out.
fn receive_locations<R: Read>(
    repo: &Repository,
    input: &mut FrameReader<R>,
    claims: Vec<dmv_repo::TreeClaim>,
) -> SyncResult<()> {
    let mut run = LocationRun::new(repo)?;
    run.claims = claims;
    loop {
        match input.expect_frame()? {
            Frame::End => break,
            Frame::Locations(piece) => {
                let (mut records, names) = dmv_repo::LocationLog::read_encoded(&piece)
                    .map_err(|e| SyncError::Protocol(Violation::BadLocationPiece(e)))?;
                run.add(&mut records, names)?;
            }
            _ => {
                return Err(SyncError::Protocol(Violation::Unexpected {
                    expected: "a piece of a location log",
                    got: None,
                }))
            }
        }
    }
    run.merge_or_note(repo)?;
    Ok(())
}

/// Who the audit log says did something: the caller's user, else what it is.
pub(crate) fn caller_label(caller: &Caller) -> &str {
    caller.user.as_deref().unwrap_or("(a token naming no user)")
}

/// An event naming `paths`.
pub(crate) fn path_event(kind: &str, user: &str, paths: Vec<String>) -> AuditEvent {
    AuditEvent {
        paths,
        ..AuditEvent::new(kind, user)
    }
}

/// What a drop's event says of it.
pub(crate) fn drop_detail(ids: usize, freed_bytes: u64) -> String {
    format!("{ids} versions asked, {freed_bytes} bytes freed")
}

pub(crate) fn caller_name(caller: &Caller) -> SyncResult<&str> {
    caller
        .user
        .as_deref()
        .ok_or(SyncError::Refused(Refusal::UnknownUser))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(crate) fn update_refs(
    repo: &Repository,
    caller: &Caller,
    updates: Vec<WireRefUpdate>,
    who: &str,
    message: &str,
) -> SyncResult<Response> {
    if updates.is_empty() {
        // Clients send this to learn whether they may write before uploading anything.
        return Ok(Response::RefsUpdated);
    }
    // From the check that each new commit is here until the refs keep it alive.
    let _gc = repo.store.hold_off_gc()?;
    // The packs as they are now: a gc since this connection listed them
    // may have moved the upload's objects to a pack of its own.
    repo.store.reload()?;
    let checked_out = match repo.head()? {
        Head::Branch(b) if !repo.config.bare => Some(b),
        _ => None,
    };
    let mut batch = Vec::new();
    for u in updates {
        validate_ref_name(&u.name)?;
        // A repository with a working tree takes a peer's offers (see peers.rs) beside its branches and tags.
        let offered = !repo.config.bare && u.name.starts_with(REMOTE_BRANCHES);
        let log = u.name.starts_with(UNION_LOGS);
        if !(u.name.starts_with(BRANCHES) || u.name.starts_with(TAGS) || offered || log) {
            return Err(SyncError::Refused(Refusal::NotBranchOrTag { name: u.name }));
        }
        // A union log only grows: a value that drops entries is answered as
        // a moved ref, so the client joins what is here and sends again.
        if log && !log_move_keeps_entries(repo, u.old, u.new)? {
            let found = repo.refs.get(&u.name)?;
            return Ok(Response::Rejected {
                name: u.name,
                found,
            });
        }
        if checked_out.as_deref() == Some(u.name.as_str()) {
            return Err(SyncError::Refused(Refusal::CheckedOutBranch {
                name: u.name,
            }));
        }
        if let Some(new) = u.new {
            // Objects only land with everything they reach, and gc keeps that
            // so, so the commit being present is enough. Looked for as a
            // reader does: stored by another process since this connection
            // listed the packs (the client saw it in the refs, so sent
            // nothing), it is found, not "not received".
            match repo.store.find(&new)? {
                Some(loc) if ref_may_hold(&u.name, loc.entry.kind) => {}
                Some(_) => return Err(SyncError::Refused(Refusal::NotACommit { id: new })),
                None => {
                    return Err(SyncError::Refused(Refusal::CommitNotReceived {
                        name: u.name,
                        id: new,
                    }))
                }
            }
        }
        batch.push(RefUpdate {
            name: u.name,
            expected: Some(u.old),
            new: u.new,
        });
    }
    refuse_unholdable_paths(repo, &batch)?;
    refuse_unreviewed_moves(&HubRepo(repo), caller, &moves_of(&batch))?;
    // Before the lock table's lock: a slow hook holds up only this push.
    run_pre_receive(
        caller.pre_receive.as_deref(),
        caller.user.as_deref(),
        &moves_of(&batch),
        &StoreObjects(repo),
    )?;
    // From the check against the locks until the refs moved: a lock is
    // taken either before this push is checked or after it landed.
    let locks = repo.locks().hold_locks()?;
    refuse_changes_to_others_locks(repo, caller, &locks.table, &batch)?;
    refuse_writes_outside_grant(repo, caller, &batch)?;
    match repo.refs.update(&batch, who, message) {
        Ok(()) => {
            let named: Vec<ObjectId> = batch.iter().filter_map(|u| u.new).collect();
            // The refs moved: a lock left behind only keeps the upload until it expires.
            let _ = repo.maintenance().release_received(&named);
            Ok(Response::RefsUpdated)
        }
        Err(RepoError::RefChanged { name, .. }) => {
            let found = repo.refs.get(&name)?;
            Ok(Response::Rejected { name, found })
        }
        Err(e) => Err(e.into()),
    }
}

/// Refuses a push whose new commits (those no branch or tag here reaches)
/// hold a path longer than a file system holds: every clone of it stopped
/// at its checkout.
fn refuse_unholdable_paths(repo: &Repository, batch: &[RefUpdate]) -> SyncResult<()> {
    let wants: Vec<ObjectId> = batch.iter().filter_map(|u| u.new).collect();
    if wants.is_empty() {
        return Ok(());
    }
    let mut known: Vec<ObjectId> = repo
        .refs
        .list(BRANCHES)?
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    known.extend(repo.refs.list(TAGS)?.into_iter().map(|(_, id)| id));
    let commits = repo.history().commits_between(&wants, &known)?;
    repo.history()
        .refuse_unholdable_paths(&commits)
        .map_err(|e| match e {
            e @ (RepoError::MalformedTree { .. } | RepoError::PathTooDeep { .. }) => {
                SyncError::Refused(Refusal::Upload(e))
            }
            e => e.into(),
        })
}

/// The ref moves `batch` makes, as the lock and grant rules read them.
fn moves_of(batch: &[RefUpdate]) -> Vec<RefMove<'_>> {
    batch
        .iter()
        .map(|u| RefMove {
            name: &u.name,
            old: u.expected.flatten(),
            new: u.new,
        })
        .collect()
}

/// Refuses a push that would leave a branch holding another version of a
/// path someone other than the caller holds (`refuse_moves_over_locks`:
/// the old tip against the new one, whatever the commits between did),
/// and a tag whose new commits (those no ref here reaches yet) change one,
/// naming the path, the holder and the commit: nothing of the push lands.
fn refuse_changes_to_others_locks(
    repo: &Repository,
    caller: &Caller,
    table: &dmv_repo::LockTable,
    batch: &[RefUpdate],
) -> SyncResult<()> {
    let others: Vec<_> = table.held_by_others(caller.user.as_deref()).collect();
    if others.is_empty() {
        return Ok(());
    }
    let branches = repo.refs.list(BRANCHES)?;
    let moves = moves_of(batch);
    refuse_moves_over_locks::<SyncError>(&moves, &branches, &others, &StoreObjects(repo))?;
    let mut known: Vec<ObjectId> = branches.into_iter().map(|(_, id)| id).collect();
    known.extend(repo.refs.list(TAGS)?.into_iter().map(|(_, id)| id));
    for update in batch.iter().filter(|u| u.name.starts_with(TAGS)) {
        let Some(new) = update.new else { continue };
        let commits = repo.history().commits_between(&[new], &known)?;
        if let Some((lock, commit)) = repo.locks().change_to_locked(&commits, &others)? {
            return Err(RepoError::LockedPathChanged {
                path: lock.path.clone(),
                holder: lock.holder(),
                commit: commit.short(),
            }
            .into());
        }
    }
    Ok(())
}

/// Refuses a lock of a path outside the caller's write grant: a lock is
/// a promise to change the path.
pub(crate) fn refuse_locks_outside_grant(caller: &Caller, paths: &[String]) -> SyncResult<()> {
    match paths.iter().find(|p| !caller.write.covers(p.as_bytes())) {
        Some(path) => Err(SyncError::Refused(Refusal::OutsideWriteGrant {
            path: path.clone(),
            how: "a lock is taken only by a writer granted its path".into(),
        })),
        None => Ok(()),
    }
}

/// Refuses ref moves that change a path outside the caller's write grant
/// (`refuse_moves_outside_grant`: every commit they bring or drop, and a
/// deleted ref's whole tree), naming the path: nothing of the push lands.
/// Runs under the lock table's lock, so with the swap as one.
fn refuse_writes_outside_grant(
    repo: &Repository,
    caller: &Caller,
    batch: &[RefUpdate],
) -> SyncResult<()> {
    if caller.write.is_everything() {
        return Ok(());
    }
    let mut tips: Vec<ObjectId> = Vec::new();
    for prefix in [BRANCHES, TAGS, REMOTE_BRANCHES] {
        tips.extend(repo.refs.list(prefix)?.into_iter().map(|(_, id)| id));
    }
    let moves = moves_of(batch);
    match refuse_moves_outside_grant(&caller.write, &moves, &tips, &StoreObjects(repo))? {
        Some(breach) => Err(SyncError::Refused(Refusal::OutsideWriteGrant {
            path: breach.path,
            how: breach.how,
        })),
        None => Ok(()),
    }
}

/// A repository's store, as the rule of write grants reads it.
struct StoreObjects<'r>(&'r Repository);

impl GrantObjects for StoreObjects<'_> {
    fn commit(&self, id: &ObjectId) -> RepoResult<(ObjectId, Commit)> {
        let store = &self.0.store;
        let id = match store.kind_of(id)? {
            ObjectKind::Tag => store.read_decoded::<Tag>(id, ObjectKind::Tag)?.target,
            _ => *id,
        };
        Ok((id, self.0.commit(&id)?))
    }

    fn tree_node(&self, id: &ObjectId) -> RepoResult<TreeNode> {
        Ok(self.0.store.read_decoded(id, ObjectKind::Tree)?)
    }
}
