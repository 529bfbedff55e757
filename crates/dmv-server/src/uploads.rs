//! Uploads from a browser (a phone without DMV adding its photos). A file
//! arrives in pieces: `POST /{repo}/uploads` opens it with its name and
//! size, `PUT /{repo}/uploads/{id}?offset=N` appends a piece that starts at
//! exactly N, and `GET /{repo}/uploads/{id}` says how much has arrived, so
//! a dropped connection resumes where it stopped rather than from the
//! start. Pieces are written to the repository's `.dmv/uploads/` as they
//! come (no piece is held in memory), and `POST /{repo}/commit-uploads`
//! commits the files that arrived whole with dmv-sync's `commit_uploaded`:
//! a push's rules, in the library.
//!
//! Every request needs a write token: a bearer header, or a login's
//! session with its form secret in the `x-dmv-form-secret` header (a page
//! of another site cannot send that header here: the server allows no
//! cross-origin requests). Budgets: a piece is at most [`PIECE_MAX`] bytes, a
//! file at most what the disk has free, and `staging` bounds the uploads
//! open at once and removes those left untouched for a day. What is known
//! of an upload is kept beside its bytes (`staging`), so it resumes after
//! a restart and through any server of the same directory. A repository in
//! a bucket stages its uploads in the bucket (`bucket_uploads`), so any
//! server of the bucket resumes and commits them.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, Path as UrlPath, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use dmv_repo::store::object::Signature;
use dmv_repo::store::ObjectId;
use dmv_repo::Repository;
use dmv_sync::{Caller, Refusal, SyncError, UploadCommit, Uploaded, UploadedFile};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::bucket_uploads::{self, PieceRefused};
use crate::bucket_views::BucketPlace;
use crate::server_state::{Peer, ServerState};
use crate::staging::{staging_folder, Found, Unavailable, OPEN_PER_OWNER};
use crate::web::{same_secret, source_of, token_hash_of, viewer, write_grant_of, Source};

/// The largest piece one request may carry.
pub(crate) const PIECE_MAX: u64 = 16 << 20;
/// Room left on the disk beyond an upload's size.
const SPARE_BYTES: u64 = 64 << 20;

type Shared = Arc<ServerState>;

pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/{repo}/uploads", post(open_upload))
        .route("/{repo}/uploads/{id}", get(upload_status).put(put_piece))
        .route("/{repo}/commit-uploads", post(commit_uploads))
}

fn refuse(status: StatusCode, text: impl Into<String>) -> Response {
    (status, text.into() + "\n").into_response()
}

/// The caller, when they may write (a login's request must also carry its
/// form secret), and whose uploads are theirs: the token's user, or for a
/// token without one the token itself (two such tokens shared their
/// uploads).
// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
fn writer(
    state: &ServerState,
    peer: Peer,
    headers: &HeaderMap,
) -> Result<(Caller, String), Response> {
    let viewer = viewer(state, peer, headers)?;
    if let Some(secret) = &viewer.form_secret {
        let sent = headers
            .get("x-dmv-form-secret")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !state.comes_from_our_pages(peer, headers) || !same_secret(sent, secret) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "that upload did not come from this server's pages",
            ));
        }
    }
    if !viewer.may_write {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "uploading needs a write token",
        ));
    }
    let owner = match &viewer.user {
        Some(user) => format!("user {user}"),
        None => format!(
            "token {}",
            &token_hash_of(state, headers)
                .unwrap_or_else(|| blake3::hash(b""))
                .to_hex()[..32]
        ),
    };
    Ok((
        Caller {
            may_write: true,
            user: viewer.user,
            admin: viewer.admin,
            write: write_grant_of(state, headers),
            events: dmv_sync::Events::default(),
            pre_receive: None,
            bucket_protects: Default::default(),
        },
        owner,
    ))
}

fn random_id() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[derive(Deserialize)]
struct OpenRequest {
    name: String,
    size: u64,
}

async fn open_upload(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    UrlPath(repo): UrlPath<String>,
    headers: HeaderMap,
    Json(req): Json<OpenRequest>,
) -> Response {
    let (_, owner) = match writer(&state, peer, &headers) {
        Ok(c) => c,
        Err(refused) => return refused,
    };
    let target = match target_of(&state, &repo) {
        Ok(t) => t,
        Err(refused) => return refused,
    };
    if !dmv_repo::tree::valid_entry_name(req.name.as_bytes()) {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!("{:?} cannot be a file's name", req.name),
        );
    }
    // Refused before touching the disk: 300 connections asking again and
    // again made every answer a directory listing and a statvfs.
    if state.staged.recently_full(&owner) {
        return unavailable(Unavailable::YoursFull);
    }
    let dir = match target {
        Target::Dir(dir) => dir,
        Target::Bucket(place) => return open_in_bucket(state, place, repo, owner, req.size).await,
    };
    let staging = staging_folder(&dir);
    if let Err(e) = std::fs::create_dir_all(&staging) {
        return refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot stage uploads: {e}"),
        );
    }
    let id = match random_id() {
        Ok(id) => id,
        Err(e) => {
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot name an upload: {e}"),
            )
        }
    };
    let free = dmv_os::available_bytes(&staging).map(|free| free.saturating_sub(SPARE_BYTES));
    // The uploads open on this server are those of every directory it serves.
    let every: Vec<PathBuf> = state
        .config
        .repos
        .values()
        .filter_map(|place| place.dir())
        .map(staging_folder)
        .collect();
    let share = state.config.upload_bytes_per_user();
    let (shared, new_id) = (state.clone(), id.clone());
    // Off the runtime's threads: it waits for another server's open to end.
    let opened = tokio::task::spawn_blocking(move || {
        shared.staged.open(
            &new_id, &repo, &owner, req.size, share, &staging, &every, free,
        )
    })
    .await;
    match opened {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return unavailable(e),
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
    (
        StatusCode::CREATED,
        Json(json!({ "id": id, "received": 0 })),
    )
        .into_response()
}

async fn upload_status(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    UrlPath((repo, id)): UrlPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let (_, owner) = match writer(&state, peer, &headers) {
        Ok(c) => c,
        Err(refused) => return refused,
    };
    let staging = match target_of(&state, &repo) {
        Ok(Target::Dir(dir)) => staging_folder(&dir),
        Ok(Target::Bucket(place)) => {
            let found = tokio::task::spawn_blocking(move || {
                bucket_uploads::find(&place, &id, &repo, &owner).map(|s| (s.size, s.received(), id))
            })
            .await;
            return match found {
                Ok(Ok((size, received, id))) => {
                    Json(json!({ "id": id, "size": size, "received": received })).into_response()
                }
                Ok(Err(e)) => unavailable(e),
                Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            };
        }
        Err(_) => return unavailable(Unavailable::Unknown),
    };
    match state.staged.find(&staging, &id, &repo, &owner) {
        Ok(found) => Json(json!({ "id": id, "size": found.size, "received": found.received }))
            .into_response(),
        Err(e) => unavailable(e),
    }
}

fn unavailable(e: Unavailable) -> Response {
    match e {
        Unavailable::Unknown => refuse(StatusCode::NOT_FOUND, "no such upload: it finished, or was removed after a day untouched; start it again"),
        Unavailable::Busy { received } => (StatusCode::CONFLICT, Json(json!({ "received": received, "message": "a piece of this upload is being received" }))).into_response(),
        Unavailable::Full => refuse(StatusCode::SERVICE_UNAVAILABLE, "too many uploads are open on this server: finish or wait for some"),
        Unavailable::YoursFull => refuse(StatusCode::TOO_MANY_REQUESTS, format!("you have {} uploads open: finish some first", crate::staging::OPEN_PER_OWNER)),
        Unavailable::YoursTooLarge { reserved, share } => {
            refuse(StatusCode::TOO_MANY_REQUESTS, format!("your open uploads already take {reserved} of the {share} bytes one user may have open: finish some first"))
        }
        Unavailable::NoRoom { reserved } => {
            refuse(StatusCode::INSUFFICIENT_STORAGE, format!("the server has no room for this upload beside the {reserved} bytes the uploads open now will take"))
        }
        Unavailable::Io(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot stage the upload: {e}")),
    }
}

fn too_large(size: u64) -> Response {
    refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("a piece is at most {PIECE_MAX} bytes and an upload at most the size it was opened with ({size})"))
}

#[derive(Deserialize)]
struct PieceAt {
    offset: u64,
}

async fn put_piece(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    UrlPath((repo, id)): UrlPath<(String, String)>,
    Query(at): Query<PieceAt>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (_, owner) = match writer(&state, peer, &headers) {
        Ok(c) => c,
        Err(refused) => return refused,
    };
    let staging = match target_of(&state, &repo) {
        Ok(Target::Dir(dir)) => staging_folder(&dir),
        Ok(Target::Bucket(place)) => {
            return piece_to_bucket(&state, place, repo, id, owner, at.offset, &headers, body).await
        }
        Err(_) => return unavailable(Unavailable::Unknown),
    };
    // The file is locked while it is open: the next piece, here or on
    // another server, gets in when this one ends, however it ends.
    let claimed = state.staged.claim(&staging, &id, &repo, &owner);
    let (Found { size, received, .. }, out) = match claimed {
        Ok(claimed) => claimed,
        Err(e) => return unavailable(e),
    };
    if at.offset != received {
        return (StatusCode::CONFLICT, Json(json!({ "received": received, "message": format!("this upload has {received} bytes, not {}: send from there", at.offset) })))
            .into_response();
    }
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > PIECE_MAX || received + len > size) {
        return too_large(size);
    }
    let mut out = tokio::fs::File::from_std(out);
    let idle = state.config.idle_timeout();
    let mut stream = body.into_data_stream();
    let mut got = 0u64;
    loop {
        let piece = match tokio::time::timeout(idle, stream.next()).await {
            Ok(None) => break,
            Ok(Some(Ok(piece))) => piece,
            // What arrived is kept: the client asks how much and sends the rest.
            Ok(Some(Err(_))) | Err(_) => break,
        };
        got += piece.len() as u64;
        if got > PIECE_MAX || received + got > size {
            // Nothing of a refused piece stays.
            let _ = out.flush().await;
            let _ = out.set_len(received).await;
            return too_large(size);
        }
        if let Err(e) = out.write_all(&piece).await {
            return refuse(
                StatusCode::INSUFFICIENT_STORAGE,
                format!("cannot store the piece: {e}"),
            );
        }
    }
    if let Err(e) = out.flush().await {
        return refuse(
            StatusCode::INSUFFICIENT_STORAGE,
            format!("cannot store the piece: {e}"),
        );
    }
    Json(json!({ "received": received + got, "size": size })).into_response()
}

#[derive(Deserialize)]
struct CommitFile {
    name: String,
    id: String,
}

#[derive(Deserialize)]
struct CommitRequest {
    branch: String,
    /// The commit the page showed ("" when the branch had none).
    #[serde(default)]
    seen: String,
    #[serde(default)]
    folder: String,
    #[serde(default)]
    message: String,
    files: Vec<CommitFile>,
}

async fn commit_uploads(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    UrlPath(repo): UrlPath<String>,
    headers: HeaderMap,
    Json(req): Json<CommitRequest>,
) -> Response {
    let (caller, owner) = match writer(&state, peer, &headers) {
        Ok((caller, owner)) => (
            Caller {
                events: state.webhooks.events_for(&repo),
                pre_receive: state.config.pre_receive_for(&repo),
                bucket_protects: state.config.bucket_protects_for(&repo),
                ..caller
            },
            owner,
        ),
        Err(refused) => return refused,
    };
    let target = match target_of(&state, &repo) {
        Ok(t) => t,
        Err(refused) => return refused,
    };
    let seen = match req.seen.as_str() {
        "" => None,
        hex => match ObjectId::from_hex(hex) {
            Some(id) => Some(id),
            None => return refuse(StatusCode::BAD_REQUEST, format!("{hex} is not a commit id")),
        },
    };
    let message = match req.message.trim() {
        "" => format!(
            "Upload {} from the web",
            match req.files.as_slice() {
                [one] => one.name.clone(),
                many => format!("{} files", many.len()),
            }
        ),
        m => m.to_string(),
    };
    let author = author_of(&state, &headers, &caller);
    let dir = match target {
        Target::Dir(dir) => dir,
        Target::Bucket(place) => {
            let commit = BucketCommit {
                req,
                seen,
                message,
                author,
            };
            let (name, shared) = (repo.clone(), state.clone());
            let done = tokio::task::spawn_blocking(move || {
                commit_in_bucket(&shared, &name, &place, &caller, &owner, commit).map_err(Box::new)
            })
            .await;
            return match done {
                Ok(Ok(done)) => {
                    state.bucket_views.outdated(&repo);
                    committed(&repo, &done)
                }
                Ok(Err(refused)) => *refused,
                Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            };
        }
    };
    let staging = staging_folder(&dir);
    let mut files = Vec::with_capacity(req.files.len());
    for f in &req.files {
        match state.staged.find(&staging, &f.id, &repo, &owner) {
            Ok(Found {
                file,
                size,
                received,
            }) if received == size => files.push(UploadedFile {
                name: f.name.clone(),
                staged: file,
            }),
            Ok(Found { size, received, .. }) => return not_whole(&f.name, size, received),
            Err(e) => return unavailable(e),
        }
    }
    let committer = caller.clone();
    let committed_here = tokio::task::spawn_blocking(move || {
        let repository = Repository::open(&dir)?;
        let up = UploadCommit {
            branch: &req.branch,
            seen,
            folder: &req.folder,
            files: &files,
            message: &message,
            author,
        };
        let done = dmv_sync::commit_uploaded(&repository, &committer, &up)?;
        Ok::<_, SyncError>((done, files))
    })
    .await;
    match committed_here {
        Ok(Ok((done, files))) => {
            state
                .staged
                .finish(&files.iter().map(|f| f.staged.as_path()).collect::<Vec<_>>());
            committed(&repo, &done)
        }
        Ok(Err(e)) => commit_refused(e),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn not_whole(name: &str, size: u64, received: u64) -> Response {
    refuse(
        StatusCode::CONFLICT,
        format!("{name} has {received} of its {size} bytes: send the rest first"),
    )
}

/// The author of an upload: the token's person, its name (else its user)
/// and email, as the command line signs with user.name and user.email.
fn author_of(state: &ServerState, headers: &HeaderMap, caller: &Caller) -> Signature {
    let holder = token_hash_of(state, headers).and_then(|t| state.config.token_access_by_hash(&t));
    let name = holder
        .as_ref()
        .and_then(|h| h.author_name())
        .map(str::to_string)
        .or_else(|| caller.user.clone())
        .unwrap_or_else(|| "web upload".into());
    let email = holder
        .as_ref()
        .and_then(|h| h.email())
        .unwrap_or_default()
        .to_string();
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    Signature {
        name,
        email,
        time,
        tz_minutes: 0,
    }
}

fn committed(repo: &str, done: &Uploaded) -> Response {
    let url = format!(
        "/{}/commit/{}",
        crate::web::segment(repo),
        done.commit.to_hex()
    );
    Json(json!({ "commit": done.commit.to_hex(), "unchanged": done.unchanged, "url": url }))
        .into_response()
}

fn commit_refused(e: SyncError) -> Response {
    let status = match &e {
        SyncError::Refused(
            Refusal::NeedsWriteAccess { .. } | Refusal::OutsideWriteGrant { .. },
        ) => StatusCode::FORBIDDEN,
        SyncError::Refused(_) => StatusCode::CONFLICT,
        SyncError::Repo(dmv_repo::RepoError::BadPath { .. } | dmv_repo::RepoError::Refs(_)) => {
            StatusCode::BAD_REQUEST
        }
        SyncError::Repo(
            dmv_repo::RepoError::LockedPathChanged { .. }
            | dmv_repo::RepoError::LockedPathMoved { .. },
        ) => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    refuse(status, e.to_string())
}

/// Where a repository's uploads go.
enum Target {
    Dir(PathBuf),
    Bucket(BucketPlace),
}

// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
fn target_of(state: &ServerState, name: &str) -> Result<Target, Response> {
    match source_of(state, name) {
        Ok(Source::Dir(dir)) => Ok(Target::Dir(dir)),
        Ok(Source::Bucket(place)) => Ok(Target::Bucket(place)),
        Err(_) => Err(refuse(
            StatusCode::NOT_FOUND,
            format!("no repository named {name} on this server to upload to"),
        )),
    }
}

async fn open_in_bucket(
    state: Shared,
    place: BucketPlace,
    repo: String,
    owner: String,
    size: u64,
) -> Response {
    let id = match random_id() {
        Ok(id) => id,
        Err(e) => {
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot name an upload: {e}"),
            )
        }
    };
    let share = state.config.upload_bytes_per_user();
    let new_id = id.clone();
    let opened = tokio::task::spawn_blocking(move || {
        let opened = bucket_uploads::open(&place, &new_id, &repo, &owner, size, share);
        match &opened {
            Ok(open) => state.staged.remember(&owner, *open),
            Err(Unavailable::YoursFull) => state.staged.remember(&owner, OPEN_PER_OWNER),
            Err(_) => {}
        }
        opened
    })
    .await;
    match opened {
        Ok(Ok(_)) => (
            StatusCode::CREATED,
            Json(json!({ "id": id, "received": 0 })),
        )
            .into_response(),
        Ok(Err(e)) => unavailable(e),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Pieces being sent on to buckets at once (each is held in memory).
static BUCKET_PIECES: tokio::sync::Semaphore =
    tokio::sync::Semaphore::const_new(bucket_uploads::PIECES_AT_ONCE);

#[allow(clippy::too_many_arguments)]
async fn piece_to_bucket(
    state: &ServerState,
    place: BucketPlace,
    repo: String,
    id: String,
    owner: String,
    offset: u64,
    headers: &HeaderMap,
    body: Body,
) -> Response {
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > PIECE_MAX) {
        return too_large_piece();
    }
    let Ok(_turn) = BUCKET_PIECES.acquire().await else {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    };
    // What arrived of a piece cut short is kept, as in a directory.
    let idle = state.config.idle_timeout();
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    // A piece cut short or stalled ends the loop with what arrived.
    while let Ok(Some(Ok(piece))) = tokio::time::timeout(idle, stream.next()).await {
        if (bytes.len() + piece.len()) as u64 > PIECE_MAX {
            return too_large_piece();
        }
        bytes.extend_from_slice(&piece);
    }
    let added = tokio::task::spawn_blocking(move || {
        bucket_uploads::add_piece(&place, &id, &repo, &owner, offset, bytes)
    })
    .await;
    match added {
        Ok(Ok(received)) => Json(json!({ "received": received })).into_response(),
        Ok(Err(PieceRefused::NotAt { received })) => (StatusCode::CONFLICT, Json(json!({ "received": received, "message": format!("this upload has {received} bytes, not {offset}: send from there") })))
            .into_response(),
        Ok(Err(PieceRefused::TooLarge { size })) => refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("an upload is at most the size it was opened with ({size}), in at most {} pieces", bucket_uploads::MAX_PIECES)),
        Ok(Err(PieceRefused::Unavailable(e))) => unavailable(e),
        Err(e) => refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn too_large_piece() -> Response {
    refuse(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("a piece is at most {PIECE_MAX} bytes"),
    )
}

/// What a commit of uploads to a bucket was asked, with its message and
/// author worked out.
struct BucketCommit {
    req: CommitRequest,
    seen: Option<ObjectId>,
    message: String,
    author: Signature,
}

/// Puts the staged uploads together in the server's view of the bucket,
/// commits them there and lands the commit in the bucket, then removes
/// them from the bucket. Blocks.
// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
fn commit_in_bucket(
    state: &ServerState,
    name: &str,
    place: &BucketPlace,
    caller: &Caller,
    owner: &str,
    commit: BucketCommit,
) -> Result<Uploaded, Response> {
    let fail = |e: String| refuse(StatusCode::INTERNAL_SERVER_ERROR, e);
    let mut staged = Vec::with_capacity(commit.req.files.len());
    for f in &commit.req.files {
        let upload = bucket_uploads::find(place, &f.id, name, owner).map_err(unavailable)?;
        if upload.received() != upload.size {
            return Err(not_whole(&f.name, upload.size, upload.received()));
        }
        staged.push(upload);
    }
    let view = state.bucket_views.view(name, place).map_err(fail)?;
    let total: u64 = staged.iter().map(|s| s.size).sum();
    let free = dmv_os::available_bytes(view.dir()).unwrap_or(u64::MAX);
    if total.saturating_add(SPARE_BYTES) > free {
        return Err(refuse(
            StatusCode::INSUFFICIENT_STORAGE,
            format!("the server has no room to put these {total} bytes together before they go to the bucket"),
        ));
    }
    let folder = tempfile::Builder::new()
        .prefix("uploads-")
        .tempdir_in(view.dir())
        .map_err(|e| fail(e.to_string()))?;
    let mut files = Vec::with_capacity(staged.len());
    for (f, upload) in commit.req.files.iter().zip(&staged) {
        let path = folder.path().join(&f.id);
        let mut out = std::fs::File::create(&path).map_err(|e| fail(e.to_string()))?;
        bucket_uploads::assemble(place, &f.id, owner, upload, &mut out).map_err(fail)?;
        files.push(UploadedFile {
            name: f.name.clone(),
            staged: path,
        });
    }
    let repository = Repository::open(view.dir()).map_err(|e| fail(e.to_string()))?;
    let mut bucket = place.connect().map_err(fail)?;
    let up = UploadCommit {
        branch: &commit.req.branch,
        seen: commit.seen,
        folder: &commit.req.folder,
        files: &files,
        message: &commit.message,
        author: commit.author,
    };
    let done = dmv_sync::commit_uploaded_to_bucket(&repository, &mut bucket, caller, &up)
        .map_err(commit_refused)?;
    let ids: Vec<&str> = commit.req.files.iter().map(|f| f.id.as_str()).collect();
    bucket_uploads::finish(place, owner, &ids);
    Ok(done)
}
