//! A repository this server cannot read (`[repos] NAME = { sealed = "DIR" }`):
//! its clients seal every object before it leaves them, as for an encrypted
//! bucket remote (docs/security.md), and the server keeps the objects in a
//! folder and hands them back. It speaks the part of the S3 API that a
//! client's bucket code uses (dmv-bucket, through opendal): GET whole, of a
//! range or `If-Match`; HEAD; PUT plain, `If-Match` or `If-None-Match: *`;
//! DELETE; ListObjectsV2; multipart uploads. The client reaches it at
//! `BASE/objects/store/KEY`. What the server decides is who may read and
//! write (the token, carried in hex as the request's access key id; the
//! signature is not checked: the token itself is the secret, as in a bearer
//! header) and the budgets below. What the objects mean it cannot know:
//! object rules and locks are enforced by the clients (docs/server.md).
//!
//! Each object is one file, `DIR/KEY`: its first [`VERSION_LEN`] bytes are
//! its version (the ETag, random at each write), the rest its body. A write
//! is made whole in `DIR/.tmp/`, synced, and renamed into place under an
//! flock of `DIR/.lock`, so a conditional write and the writes it races
//! with are one at a time, across processes too.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, Path as UrlPath, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::requests::{authorize_token, body_with_idle_timeout};
use crate::server_config::RepoPlace;
use crate::server_state::{Peer, ServerState};

/// The bytes of an object's version at the start of its file.
pub const VERSION_LEN: usize = 16;
/// A key's length in bytes (S3's bound; DMV's are under 100).
pub const MAX_KEY_BYTES: usize = 1024;
/// Folders in a key (DMV's go two deep).
pub const MAX_KEY_DEPTH: usize = 8;
/// One PUT's body, and one part's (S3's bound for each).
pub const MAX_BODY_BYTES: u64 = 5 << 30;
/// Parts of one multipart upload (S3's bound).
pub const MAX_PARTS: u32 = 10_000;
/// Keys in one page of a listing (S3's bound).
pub const MAX_LIST_KEYS: usize = 1000;
/// Bytes read from or written to an object's file at a time: a tokio file
/// hands each call to a blocking thread, so calls of the 4 KiB a stream
/// reads by default, or of the pieces hyper receives, cost a thread hop each.
const IO_PIECE: usize = 1 << 20;
/// The repository's config, which the server checks names a keyring: a
/// sealed folder holds only what its clients encrypted.
const CONFIG_KEY: &str = "dmv-repository.json";
/// The config is a few hundred bytes (dmv-bucket refuses one over 1 MiB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// A multipart upload nobody finished or aborted for this long is removed
/// when the next one starts (a client killed mid-push).
const STALE_UPLOAD: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

pub(crate) fn routes() -> Router<Arc<ServerState>> {
    Router::new()
        .route("/{repo}/objects/store", get(list))
        .route("/{repo}/objects/store/{*key}", any(object))
}

/// An S3 error: the status opendal sorts by, and the XML it reads the message from.
fn s3_error(status: StatusCode, code: &str, message: &str) -> Response {
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{}</Message></Error>",
        xml_text(message)
    );
    (status, [("content-type", "application/xml")], body).into_response()
}

fn xml_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn xml(body: String) -> Response {
    (
        [("content-type", "application/xml")],
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}"),
    )
        .into_response()
}

fn too_large() -> Response {
    s3_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "EntityTooLarge",
        &format!("a body or part is at most {MAX_BODY_BYTES} bytes"),
    )
}

fn internal(e: impl std::fmt::Display) -> Response {
    s3_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        &e.to_string(),
    )
}

/// The token an S3 client sent: its access key id, the token in hex.
fn presented_token(headers: &HeaderMap) -> Option<String> {
    let auth = headers.get("authorization")?.to_str().ok()?;
    let credential = auth.split("Credential=").nth(1)?;
    let id = credential.split('/').next()?;
    let bytes = hex_decode(id)?;
    String::from_utf8(bytes).ok()
}

/// The token as a client sends it (dmv-bucket's url.rs): hex, so that any
/// token is an access key id.
#[cfg(test)]
fn token_as_key_id(token: &str) -> String {
    token.bytes().map(|b| format!("{b:02x}")).collect()
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 2 * 4096 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Whether `key` is one this server stores: relative, of at most
/// [`MAX_KEY_DEPTH`] folders, each part letters, digits, `.`, `_` or `-`
/// and not starting with `.` (the server's own files do).
pub fn valid_key(key: &str) -> bool {
    let parts: Vec<&str> = key.split('/').collect();
    key.len() <= MAX_KEY_BYTES
        && parts.len() <= MAX_KEY_DEPTH + 1
        && parts.iter().all(|p| {
            !p.is_empty()
                && !p.starts_with('.')
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
}

/// The folder of a sealed repository, and the caller if it may do what it asks.
#[allow(clippy::result_large_err)]
fn admit(
    state: &ServerState,
    peer: Peer,
    headers: &HeaderMap,
    repo: &str,
    writes: bool,
) -> Result<PathBuf, Response> {
    let Some(RepoPlace::Sealed { sealed }) = state.config.repos.get(repo) else {
        return Err(s3_error(
            StatusCode::NOT_FOUND,
            "NoSuchBucket",
            &format!("no encrypted repository named {repo} here"),
        ));
    };
    let token = presented_token(headers);
    authorize_token(state, peer, headers, token.as_deref(), writes).map_err(|(status, why)| {
        // S3 says 403 for a missing signature too: the client sorts by it.
        match status {
            StatusCode::TOO_MANY_REQUESTS => s3_error(status, "SlowDown", &why),
            _ => s3_error(StatusCode::FORBIDDEN, "AccessDenied", &why),
        }
    })?;
    Ok(sealed.clone())
}

async fn object(
    State(state): State<Arc<ServerState>>,
    Extension(peer): Extension<Peer>,
    UrlPath((repo, key)): UrlPath<(String, String)>,
    Query(query): Query<BTreeMap<String, String>>,
    method: Method,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let writes = !matches!(method, Method::GET | Method::HEAD);
    let dir = match admit(&state, peer, &headers, &repo, writes) {
        Ok(dir) => dir,
        Err(refused) => return refused,
    };
    if !valid_key(&key) {
        return s3_error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "not a key this server stores",
        );
    }
    let declared = headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES) {
        return too_large();
    }
    let store = Store { dir };
    let upload = query.get("uploadId").map(String::as_str);
    let idle = state.config.idle_timeout();
    match (method, upload) {
        (Method::HEAD, _) => store.head(&key).await,
        (Method::GET, _) => store.get(&key, &headers).await,
        (Method::PUT, None) => {
            let Ok(_turn) = state.uploads.clone().acquire_owned().await else {
                return internal("the server is shutting down");
            };
            store.put(&key, &headers, body, idle).await
        }
        (Method::PUT, Some(id)) => {
            let Ok(_turn) = state.uploads.clone().acquire_owned().await else {
                return internal("the server is shutting down");
            };
            let part = query.get("partNumber").and_then(|n| n.parse::<u32>().ok());
            store.put_part(id, part, body, idle).await
        }
        (Method::POST, None) if query.contains_key("uploads") => store.start_upload(&key).await,
        (Method::POST, Some(id)) => store.finish_upload(&key, id).await,
        (Method::DELETE, None) => store.delete(&key).await,
        (Method::DELETE, Some(id)) => store.abort_upload(id).await,
        _ => s3_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "not a request this server answers",
        ),
    }
}

#[derive(serde::Deserialize)]
struct ListQuery {
    #[serde(rename = "list-type")]
    list_type: Option<String>,
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    delimiter: String,
    #[serde(rename = "continuation-token")]
    continuation_token: Option<String>,
    #[serde(rename = "start-after")]
    start_after: Option<String>,
    #[serde(rename = "max-keys")]
    max_keys: Option<usize>,
}

async fn list(
    State(state): State<Arc<ServerState>>,
    Extension(peer): Extension<Peer>,
    UrlPath(repo): UrlPath<String>,
    Query(query): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    let dir = match admit(&state, peer, &headers, &repo, false) {
        Ok(dir) => dir,
        Err(refused) => return refused,
    };
    if query.list_type.as_deref() != Some("2") {
        return s3_error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "only ListObjectsV2 (list-type=2) is answered",
        );
    }
    let folder = match query.prefix.rsplit_once('/') {
        Some((folder, _)) => folder.to_string(),
        None => String::new(),
    };
    if !folder.is_empty() && !valid_key(&folder) {
        return s3_error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "not a prefix this server stores",
        );
    }
    let after = query
        .continuation_token
        .or(query.start_after)
        .unwrap_or_default();
    let limit = query
        .max_keys
        .unwrap_or(MAX_LIST_KEYS)
        .clamp(1, MAX_LIST_KEYS);
    let recursive = query.delimiter.is_empty();
    let prefix = query.prefix.clone();
    let listed =
        tokio::task::spawn_blocking(move || listing(&dir, &folder, &prefix, recursive)).await;
    let (files, folders) = match listed {
        Ok(Ok(listed)) => listed,
        Ok(Err(e)) => return internal(e),
        Err(e) => return internal(e),
    };
    let mut out = String::from("<ListBucketResult><Name>store</Name>");
    out += &format!("<Prefix>{}</Prefix>", xml_text(&query.prefix));
    let mut page = files.range::<String, _>((
        std::ops::Bound::Excluded(&after),
        std::ops::Bound::Unbounded,
    ));
    let mut last = None;
    for (key, (len, modified)) in page.by_ref().take(limit) {
        let (y, mo, d, h, mi, s) = dmv_repo::civil(*modified);
        out += &format!(
            "<Contents><Key>{}</Key><Size>{len}</Size><LastModified>{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z</LastModified></Contents>",
            xml_text(key)
        );
        last = Some(key.clone());
    }
    let truncated = page.next().is_some();
    if after.is_empty() {
        for f in &folders {
            out += &format!(
                "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
                xml_text(f)
            );
        }
    }
    out += &format!("<KeyCount>{}</KeyCount>", files.len().min(limit));
    match (truncated, last) {
        (true, Some(last)) => {
            out += &format!(
                "<IsTruncated>true</IsTruncated><NextContinuationToken>{}</NextContinuationToken>",
                xml_text(&last)
            )
        }
        _ => out += "<IsTruncated>false</IsTruncated>",
    }
    out += "</ListBucketResult>";
    xml(out)
}

/// Files under `dir/folder` whose keys start with `prefix` (key → body
/// length, modified time), at any depth when `recursive`; else also the
/// folders there, as `prefix…/`.
type Listing = (BTreeMap<String, (u64, i64)>, BTreeSet<String>);

fn listing(dir: &Path, folder: &str, prefix: &str, recursive: bool) -> std::io::Result<Listing> {
    let mut files = BTreeMap::new();
    let mut folders = BTreeSet::new();
    let mut stack = vec![folder.to_string()];
    while let Some(at) = stack.pop() {
        let entries = match std::fs::read_dir(dir.join(&at)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let key = if at.is_empty() {
                name
            } else {
                format!("{at}/{name}")
            };
            let meta = entry.metadata()?;
            if meta.is_dir() {
                if recursive {
                    stack.push(key);
                } else if format!("{key}/").starts_with(prefix) {
                    folders.insert(format!("{key}/"));
                }
            } else if key.starts_with(prefix) {
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs() as i64);
                let len = meta.len().saturating_sub(VERSION_LEN as u64);
                files.insert(key, (len, modified));
            }
        }
    }
    Ok((files, folders))
}

/// A sealed repository's folder.
struct Store {
    dir: PathBuf,
}

fn etag(version: &[u8]) -> String {
    let hex: String = version.iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

fn new_version() -> std::io::Result<[u8; VERSION_LEN]> {
    let mut v = [0u8; VERSION_LEN];
    getrandom::getrandom(&mut v).map_err(std::io::Error::other)?;
    Ok(v)
}

/// An object's file opened, with its version and body length (None: no such object).
fn open_object(path: &Path) -> std::io::Result<Option<(std::fs::File, [u8; VERSION_LEN], u64)>> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    let mut version = [0u8; VERSION_LEN];
    if len < VERSION_LEN as u64 || file.read_exact(&mut version).is_err() {
        return Err(std::io::Error::other(format!(
            "{} is damaged",
            path.display()
        )));
    }
    Ok(Some((file, version, len - VERSION_LEN as u64)))
}

/// What an `If-Match` header names, without quotes.
fn if_match(headers: &HeaderMap) -> Option<String> {
    headers
        .get("if-match")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().trim_matches('"').to_string())
}

/// `bytes=A-B` or `bytes=A-` of a body of `len` bytes, as a start and an end (exclusive).
fn byte_range(headers: &HeaderMap, len: u64) -> Option<Result<(u64, u64), ()>> {
    let spec = headers
        .get("range")?
        .to_str()
        .ok()?
        .strip_prefix("bytes=")?;
    let (a, b) = spec.split_once('-')?;
    let start: u64 = a.trim().parse().ok()?;
    let end = match b.trim() {
        "" => len,
        b => b.parse::<u64>().ok()?.saturating_add(1).min(len),
    };
    Some(if start < end {
        Ok((start, end))
    } else {
        Err(())
    })
}

enum Condition {
    None,
    Absent,
    Version(String),
}

impl Store {
    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(key)
    }

    async fn head(&self, key: &str) -> Response {
        let path = self.path(key);
        match tokio::task::spawn_blocking(move || open_object(&path)).await {
            Ok(Ok(Some((_, version, len)))) => (
                [
                    ("content-length", len.to_string()),
                    ("etag", etag(&version)),
                ],
                (),
            )
                .into_response(),
            Ok(Ok(None)) => s3_error(StatusCode::NOT_FOUND, "NoSuchKey", "no such object"),
            Ok(Err(e)) => internal(e),
            Err(e) => internal(e),
        }
    }

    async fn get(&self, key: &str, headers: &HeaderMap) -> Response {
        let path = self.path(key);
        let opened = match tokio::task::spawn_blocking(move || open_object(&path)).await {
            Ok(Ok(Some(opened))) => opened,
            Ok(Ok(None)) => return s3_error(StatusCode::NOT_FOUND, "NoSuchKey", "no such object"),
            Ok(Err(e)) => return internal(e),
            Err(e) => return internal(e),
        };
        let (mut file, version, len) = opened;
        if if_match(headers).is_some_and(|want| etag(&version) != format!("\"{want}\"")) {
            return s3_error(
                StatusCode::PRECONDITION_FAILED,
                "PreconditionFailed",
                "the object changed",
            );
        }
        let (status, start, end) = match byte_range(headers, len) {
            None => (StatusCode::OK, 0, len),
            Some(Ok((start, end))) => (StatusCode::PARTIAL_CONTENT, start, end),
            Some(Err(())) => {
                return s3_error(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "InvalidRange",
                    "the range is outside the object",
                )
            }
        };
        if let Err(e) = file.seek(SeekFrom::Start(VERSION_LEN as u64 + start)) {
            return internal(e);
        }
        let reader = tokio::io::AsyncReadExt::take(tokio::fs::File::from_std(file), end - start);
        let mut response = Response::new(Body::from_stream(
            tokio_util::io::ReaderStream::with_capacity(reader, IO_PIECE),
        ));
        *response.status_mut() = status;
        let h = response.headers_mut();
        h.insert("content-length", HeaderValue::from(end - start));
        h.insert("etag", HeaderValue::from_str(&etag(&version)).expect("hex"));
        if status == StatusCode::PARTIAL_CONTENT {
            let range = format!("bytes {start}-{}/{len}", end - 1);
            h.insert(
                "content-range",
                HeaderValue::from_str(&range).expect("digits"),
            );
        }
        response
    }

    /// Streams `body` into a new file in `.tmp/` behind a fresh version;
    /// its path and version, or the answer that refuses it.
    async fn receive(
        &self,
        body: Body,
        idle: std::time::Duration,
    ) -> Result<(PathBuf, [u8; VERSION_LEN], u64), Response> {
        let tmp = self.dir.join(".tmp");
        tokio::fs::create_dir_all(&tmp).await.map_err(internal)?;
        let version = new_version().map_err(internal)?;
        let name: String = new_version()
            .map_err(internal)?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let path = tmp.join(name);
        let written = async {
            let file = tokio::fs::File::create(&path).await.map_err(internal)?;
            let mut file = tokio::io::BufWriter::with_capacity(IO_PIECE, file);
            file.write_all(&version).await.map_err(internal)?;
            let mut stream = Box::pin(body_with_idle_timeout(body, idle));
            let mut len = 0u64;
            while let Some(piece) = stream.next().await {
                let piece = piece.map_err(|e| {
                    s3_error(StatusCode::BAD_REQUEST, "IncompleteBody", &e.to_string())
                })?;
                len += piece.len() as u64;
                if len > MAX_BODY_BYTES {
                    return Err(too_large());
                }
                file.write_all(&piece).await.map_err(internal)?;
            }
            file.flush().await.map_err(internal)?;
            file.get_ref().sync_all().await.map_err(internal)?;
            Ok(len)
        }
        .await;
        match written {
            Ok(len) => Ok((path, version, len)),
            Err(refused) => {
                let _ = tokio::fs::remove_file(&path).await;
                Err(refused)
            }
        }
    }

    /// Renames `file` to `key` if `condition` holds, under the folder's lock.
    async fn commit(&self, file: PathBuf, key: &str, condition: Condition) -> Response {
        let (dir, target) = (self.dir.clone(), self.path(key));
        let done =
            tokio::task::spawn_blocking(move || -> std::io::Result<Option<[u8; VERSION_LEN]>> {
                let _lock = lock_folder(&dir)?;
                let current = open_object(&target)?.map(|(_, v, _)| v);
                let holds = match (&condition, current) {
                    (Condition::None, _) => true,
                    (Condition::Absent, current) => current.is_none(),
                    (Condition::Version(want), Some(v)) => etag(&v) == format!("\"{want}\""),
                    (Condition::Version(_), None) => false,
                };
                if !holds {
                    let _ = std::fs::remove_file(&file);
                    return Ok(None);
                }
                let mut version = [0u8; VERSION_LEN];
                std::fs::File::open(&file)?.read_exact(&mut version)?;
                let parent = target.parent().unwrap_or(&dir).to_path_buf();
                std::fs::create_dir_all(&parent)?;
                std::fs::rename(&file, &target)?;
                std::fs::File::open(&parent)?.sync_all()?;
                Ok(Some(version))
            })
            .await;
        match done {
            Ok(Ok(Some(version))) => ([("etag", etag(&version))], ()).into_response(),
            Ok(Ok(None)) => s3_error(
                StatusCode::PRECONDITION_FAILED,
                "PreconditionFailed",
                "the object is not at the version named",
            ),
            Ok(Err(e)) => internal(e),
            Err(e) => internal(e),
        }
    }

    async fn put(
        &self,
        key: &str,
        headers: &HeaderMap,
        body: Body,
        idle: std::time::Duration,
    ) -> Response {
        let condition = match (headers.get("if-none-match"), if_match(headers)) {
            (Some(v), _) if v.as_bytes() == b"*" => Condition::Absent,
            (_, Some(want)) => Condition::Version(want),
            _ => Condition::None,
        };
        let (file, _, len) = match self.receive(body, idle).await {
            Ok(received) => received,
            Err(refused) => return refused,
        };
        if key == CONFIG_KEY && !names_a_keyring(&file, len) {
            let _ = std::fs::remove_file(&file);
            return s3_error(
                StatusCode::FORBIDDEN,
                "AccessDenied",
                "this server keeps only encrypted repositories: push from a remote that encrypts (added with --encrypt)",
            );
        }
        self.commit(file, key, condition).await
    }

    async fn delete(&self, key: &str) -> Response {
        let (dir, target) = (self.dir.clone(), self.path(key));
        let done = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            let _lock = lock_folder(&dir)?;
            match std::fs::remove_file(&target) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        })
        .await;
        match done {
            Ok(Ok(())) => StatusCode::NO_CONTENT.into_response(),
            Ok(Err(e)) => internal(e),
            Err(e) => internal(e),
        }
    }

    fn upload_dir(&self, id: &str) -> Option<PathBuf> {
        (id.len() == 2 * VERSION_LEN && id.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| self.dir.join(".uploads").join(id))
    }

    async fn start_upload(&self, key: &str) -> Response {
        let uploads = self.dir.join(".uploads");
        let id: String = match new_version() {
            Ok(v) => v.iter().map(|b| format!("{b:02x}")).collect(),
            Err(e) => return internal(e),
        };
        let at = uploads.join(&id);
        let made = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            remove_stale_uploads(&uploads);
            std::fs::create_dir_all(&at)
        })
        .await;
        match made {
            Ok(Ok(())) => xml(format!(
                "<InitiateMultipartUploadResult><Bucket>store</Bucket><Key>{}</Key><UploadId>{id}</UploadId></InitiateMultipartUploadResult>",
                xml_text(key)
            )),
            Ok(Err(e)) => internal(e),
            Err(e) => internal(e),
        }
    }

    async fn put_part(
        &self,
        id: &str,
        part: Option<u32>,
        body: Body,
        idle: std::time::Duration,
    ) -> Response {
        let Some(at) = self.upload_dir(id).filter(|d| d.is_dir()) else {
            return s3_error(StatusCode::NOT_FOUND, "NoSuchUpload", "no such upload");
        };
        let Some(part) = part.filter(|n| (1..=MAX_PARTS).contains(n)) else {
            return s3_error(
                StatusCode::BAD_REQUEST,
                "InvalidArgument",
                "a part number is 1 to 10000",
            );
        };
        let (file, version, _) = match self.receive(body, idle).await {
            Ok(received) => received,
            Err(refused) => return refused,
        };
        match tokio::fs::rename(&file, at.join(format!("{part:05}"))).await {
            Ok(()) => ([("etag", etag(&version))], ()).into_response(),
            Err(e) => {
                let _ = tokio::fs::remove_file(&file).await;
                internal(e)
            }
        }
    }

    /// Joins the parts in the order of their numbers (the client lists
    /// them all, in order, in its request, which is not read).
    async fn finish_upload(&self, key: &str, id: &str) -> Response {
        let Some(at) = self.upload_dir(id).filter(|d| d.is_dir()) else {
            return s3_error(StatusCode::NOT_FOUND, "NoSuchUpload", "no such upload");
        };
        let tmp = self.dir.join(".tmp");
        let joined = tokio::task::spawn_blocking(move || -> std::io::Result<PathBuf> {
            std::fs::create_dir_all(&tmp)?;
            let mut parts: Vec<PathBuf> = std::fs::read_dir(&at)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            parts.sort();
            let path = tmp.join(at.file_name().unwrap_or_default());
            let mut out = std::fs::File::create(&path)?;
            out.write_all(&new_version()?)?;
            for part in parts {
                let mut input = std::fs::File::open(&part)?;
                input.seek(SeekFrom::Start(VERSION_LEN as u64))?;
                std::io::copy(&mut input, &mut out)?;
            }
            out.sync_all()?;
            std::fs::remove_dir_all(&at)?;
            Ok(path)
        })
        .await;
        let file = match joined {
            Ok(Ok(file)) => file,
            Ok(Err(e)) => return internal(e),
            Err(e) => return internal(e),
        };
        let committed = self.commit(file, key, Condition::None).await;
        if !committed.status().is_success() {
            return committed;
        }
        let tag = committed
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        xml(format!(
            "<CompleteMultipartUploadResult><Bucket>store</Bucket><Key>{}</Key><ETag>{}</ETag></CompleteMultipartUploadResult>",
            xml_text(key),
            xml_text(&tag)
        ))
    }

    async fn abort_upload(&self, id: &str) -> Response {
        if let Some(at) = self.upload_dir(id) {
            let _ = tokio::fs::remove_dir_all(at).await;
        }
        StatusCode::NO_CONTENT.into_response()
    }
}

/// Whether the config written (at `file`, after its version) is an
/// encrypted repository's: it names a keyring.
fn names_a_keyring(file: &Path, len: u64) -> bool {
    if len > MAX_CONFIG_BYTES {
        return false;
    }
    let Ok(bytes) = std::fs::read(file) else {
        return false;
    };
    serde_json::from_slice::<serde_json::Value>(&bytes[VERSION_LEN..])
        .is_ok_and(|config| config["sealed"]["keyring"].is_string())
}

/// The folder's lock, held while the returned file is open.
fn lock_folder(dir: &Path) -> std::io::Result<std::fs::File> {
    std::fs::create_dir_all(dir)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(".lock"))?;
    dmv_os::lock(&file, dmv_os::LockKind::Exclusive)?;
    Ok(file)
}

fn remove_stale_uploads(uploads: &Path) {
    let Ok(entries) = std::fs::read_dir(uploads) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_UPLOAD);
        if stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_plain_relative_paths_within_their_budget() {
        for good in [
            "dmv-repository.json",
            "keys/device-ab12",
            "packs/0f.p",
            "a/b/c",
        ] {
            assert!(valid_key(good), "{good}");
        }
        let deep = ["a"; MAX_KEY_DEPTH + 2].join("/");
        let long = "a".repeat(MAX_KEY_BYTES + 1);
        for bad in [
            "",
            "/a",
            "a/",
            "a//b",
            "../a",
            "a/../b",
            ".lock",
            ".tmp/x",
            "a/.uploads",
            "a b",
            "a\\b",
            "é",
            &deep,
            &long,
        ] {
            assert!(!valid_key(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_token_travels_as_an_access_key_id_in_hex() {
        let mut headers = HeaderMap::new();
        let id = token_as_key_id("bob/secret=1");
        assert_eq!(id, "626f622f7365637265743d31");
        let auth = format!("AWS4-HMAC-SHA256 Credential={id}/20261204/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00");
        headers.insert("authorization", auth.parse().unwrap());
        assert_eq!(presented_token(&headers).as_deref(), Some("bob/secret=1"));
        for bad in [
            "AWS4-HMAC-SHA256 Credential=6/x",
            "AWS4-HMAC-SHA256 Credential=zz/x",
            "Bearer x",
        ] {
            headers.insert("authorization", bad.parse().unwrap());
            assert_eq!(presented_token(&headers), None, "{bad}");
        }
    }

    #[test]
    fn ranges_are_read_as_s3_reads_them() {
        let mut headers = HeaderMap::new();
        assert_eq!(byte_range(&headers, 10), None);
        for (spec, want) in [
            ("bytes=0-3", Some(Ok((0, 4)))),
            ("bytes=4-", Some(Ok((4, 10)))),
            ("bytes=8-100", Some(Ok((8, 10)))),
            ("bytes=10-12", Some(Err(()))),
            ("bytes=-3", None),
            ("items=0-1", None),
        ] {
            headers.insert("range", spec.parse().unwrap());
            assert_eq!(byte_range(&headers, 10), want, "{spec}");
        }
    }
}
