//! The web UI over HTTP: the same server, tokens and repositories as the
//! protocol, with pages made by dmv-web. A browser logs in once with a
//! token and gets a session (an HttpOnly cookie naming it, see `sessions`);
//! scripts may send the token as a bearer header. Reading a page needs a
//! listed token unless the config says `browse = "open"`; breaking a lock
//! needs an admin token.
//!
//! Committed content is hostile: every page goes out with a Content
//! Security Policy allowing no script but our own file and no framing, and
//! file content with a sandboxing policy, `nosniff`, and only passive types
//! shown inline (dmv-web decides which). Forms that change something are
//! refused unless they come from our own pages (see `server_state`) and,
//! for a login, carry its secret.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, Form, Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use dmv_repo::Repository;
use dmv_web::{PageRequest, Reply, Viewer};
use serde::Deserialize;

use crate::bucket_views::{review_log_tip, BucketPlace, View};
use crate::channel::ChannelWriter;
use crate::server_config::{BrowseAccess, RepoPlace, TokenAccess};
use crate::server_state::{Peer, ServerState};

const COOKIE: &str = "dmv_session";

/// Pages may run only our own script file, show pictures and media of this
/// server, and may not be framed by anyone.
const PAGE_POLICY: &str =
    "default-src 'none'; script-src 'self'; connect-src 'self'; manifest-src 'self'; worker-src 'self'; style-src 'unsafe-inline'; img-src 'self'; media-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/// File content is never a document of our origin: no script, no forms, no plugins.
const CONTENT_POLICY: &str = "sandbox; default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'none'";

type Shared = Arc<ServerState>;

/// The web UI's routes (the protocol's `POST /{repo}/dmv/{verb}` sits beside them).
pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(index))
        .route("/-/compare.js", get(compare_script))
        .route("/-/theme.js", get(theme_script))
        .route("/-/upload.js", get(upload_script))
        .route("/-/app.js", get(|| async { script(dmv_web::APP_SCRIPT) }))
        .route("/sw.js", get(|| async { script(dmv_web::SERVICE_WORKER) }))
        .route("/-/manifest.webmanifest", get(manifest))
        .route("/-/icon.svg", get(icon_svg))
        .route("/-/icon-192.png", get(|| async { icon_png(192) }))
        .route("/-/icon-512.png", get(|| async { icon_png(512) }))
        .route("/-/share", get(share))
        .route("/login", get(login_form).post(login))
        .route("/logout", get(logout_form).post(logout))
        .route("/{repo}", get(to_repo_home))
        .route("/{repo}/", get(repo_home))
        .route("/{repo}/{*rest}", get(page))
        .route("/{repo}/locks/{action}", post(change_lock))
        .route("/{repo}/review/{id}", get(review_page).post(change_review))
        .route("/{repo}/audit", get(audit))
}

/// `/{repo}/audit`: the repository's audit log and the server's last
/// webhook deliveries, for admins (others get 403 before anything is read).
async fn audit(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
) -> Response {
    let viewer = match viewer(&state, peer, &headers) {
        Ok(v) => v,
        Err(refused) => return refused,
    };
    if !viewer.admin {
        return html_reply(dmv_web::audit_page(&name, &viewer, Err(""), &[]));
    }
    let deliveries: Vec<dmv_web::DeliveryRow> = state
        .webhooks
        .deliveries()
        .into_iter()
        .map(|d| dmv_web::DeliveryRow {
            event: d.event,
            url: d.url,
            status: d.status,
            tries: d.tries,
            time: d.time,
        })
        .collect();
    let source = match source_of(&state, &name) {
        Ok(source) => source,
        Err(refused) => return refused,
    };
    let read = tokio::task::spawn_blocking(move || match source {
        Source::Dir(dir) => Repository::open(&dir)
            .map_err(|e| e.to_string())
            .and_then(|repo| {
                dmv_repo::read_audit(&repo.dmv, None, dmv_repo::MAX_AUDIT_READ)
                    .map_err(|e| e.to_string())
            }),
        Source::Bucket(place) => place.connect().and_then(|bucket| {
            dmv_sync::read_bucket_audit(bucket.bucket(), None).map_err(|e| e.to_string())
        }),
    })
    .await
    .unwrap_or_else(|_| Err("the audit log could not be read".into()));
    let reply = dmv_web::audit_page(
        &name,
        &viewer,
        read.as_ref().map_err(String::as_str),
        &deliveries,
    );
    html_reply(reply)
}

/// A page's answer (the audit page is only ever HTML).
fn html_reply(reply: Reply) -> Response {
    match reply {
        Reply::Html { status, body } => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            Html(body),
        )
            .into_response(),
        _ => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// The headers every answer of the server carries (file content adds its own policy first).
pub(crate) async fn hardening_headers(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    let h = response.headers_mut();
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    h.entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(PAGE_POLICY));
    response
}

fn login_page(status: StatusCode, message: &str) -> Response {
    (status, Html(dmv_web::login_page(Some(message)))).into_response()
}

fn too_many_guesses(wait: std::time::Duration) -> Response {
    let mut response = login_page(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many wrong tokens from your address: wait a moment and try again.",
    );
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(wait.as_secs().max(1)),
    );
    response
}

/// The session id the request's cookie names, if any.
fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix("dmv_session="))
}

/// The hash of the token a request carries: its bearer header's, or its login's.
pub(crate) fn token_hash_of(state: &ServerState, headers: &HeaderMap) -> Option<blake3::Hash> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| blake3::hash(t.trim().as_bytes()));
    bearer.or_else(|| {
        state
            .sessions
            .get(session_cookie(headers)?)
            .map(|s| s.token_hash)
    })
}

/// The paths the request's token may change (nothing without a token).
pub(crate) fn write_grant_of(state: &ServerState, headers: &HeaderMap) -> dmv_repo::WriteGrant {
    token_hash_of(state, headers)
        .and_then(|t| state.config.token_access_by_hash(&t))
        .map_or_else(dmv_repo::WriteGrant::nothing, |e| {
            state.config.write_grant(&e)
        })
}

/// Who is browsing, from the bearer header or the login's session; a
/// missing, unknown or expired one gets the login page (401) and nothing of
/// a repository. Wrong bearer tokens count against the client's ration.
// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
pub(crate) fn viewer(
    state: &ServerState,
    peer: Peer,
    headers: &HeaderMap,
) -> Result<Viewer, Response> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let (token, form_secret) = match (bearer, session_cookie(headers)) {
        (Some(token), _) => {
            let client = state.client_ip(peer, headers);
            state.guesses.check(client).map_err(too_many_guesses)?;
            if state.config.token_access(token).is_none() {
                state.guesses.failed(client);
            }
            (blake3::hash(token.as_bytes()), None)
        }
        (None, Some(id)) => match state.sessions.get(id) {
            Some(session) => (session.token_hash, Some(session.form_secret)),
            // An ended login browses as anyone does where that is allowed.
            None if state.config.browse == BrowseAccess::Open => return Ok(Viewer::default()),
            None => {
                return Err(login_page(
                    StatusCode::UNAUTHORIZED,
                    "Your login has ended: log in again.",
                ))
            }
        },
        (None, None) if state.config.browse == BrowseAccess::Open => return Ok(Viewer::default()),
        (None, None) => {
            return Err(login_page(
                StatusCode::UNAUTHORIZED,
                "Log in with a token to browse.",
            ))
        }
    };
    match state.config.token_access_by_hash(&token) {
        Some(entry) => Ok(Viewer {
            user: entry.user().map(str::to_string),
            may_write: entry.access() != TokenAccess::Read,
            admin: entry.access() == TokenAccess::Admin,
            form_secret,
            people: Default::default(),
        }),
        None => Err(login_page(
            StatusCode::UNAUTHORIZED,
            "That token is not valid here.",
        )),
    }
}

async fn index(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = viewer(&state, peer, &headers) {
        return refused;
    }
    Html(dmv_web::index_page(
        &state.config.repos.keys().cloned().collect::<Vec<_>>(),
    ))
    .into_response()
}

async fn manifest() -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/manifest+json"),
            (header::CACHE_CONTROL, "private, max-age=3600"),
        ],
        dmv_web::MANIFEST,
    )
        .into_response()
}

async fn icon_svg() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        dmv_web::ICON_SVG,
    )
        .into_response()
}

fn icon_png(edge: u32) -> Response {
    static DRAWN: std::sync::OnceLock<[Vec<u8>; 2]> = std::sync::OnceLock::new();
    let drawn = DRAWN.get_or_init(|| [dmv_web::icon_png(192), dmv_web::icon_png(512)]);
    (
        [
            (header::CONTENT_TYPE, "image/png"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        drawn[usize::from(edge > 192)].clone(),
    )
        .into_response()
}

/// Where a phone's "Share → DMV" lands once the service worker kept the
/// files: the repositories to upload them to (in directories and buckets),
/// each on its HEAD's branch.
async fn share(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    match viewer(&state, peer, &headers) {
        Err(refused) => return refused,
        Ok(v) if !v.may_write => {
            return (
                StatusCode::FORBIDDEN,
                Html(dmv_web::login_page(Some(
                    "Uploading shared files needs a write token: log in with one.",
                ))),
            )
                .into_response()
        }
        Ok(_) => {}
    }
    let names: Vec<String> = state
        .config
        .repos
        .iter()
        .filter(|(_, place)| !matches!(place, RepoPlace::Sealed { .. }))
        .map(|(name, _)| name.clone())
        .collect();
    let shared = query
        .get("n")
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let state_here = state.clone();
    let listed = tokio::task::spawn_blocking(move || {
        names
            .into_iter()
            .filter_map(|name| {
                let source = source_of(&state_here, &name).ok()?;
                let (repo, _view) = source.open(&state_here, &name).ok()?;
                let branch = repo.history().head_branch().ok().flatten()?;
                let branch = branch
                    .strip_prefix(dmv_repo::ref_names::BRANCHES)
                    .unwrap_or(&branch)
                    .to_string();
                Some((name, branch))
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    Html(dmv_web::share_page(&listed, shared)).into_response()
}

async fn compare_script() -> Response {
    script(dmv_web::COMPARE_SCRIPT)
}

async fn theme_script() -> Response {
    script(dmv_web::THEME_SCRIPT)
}

async fn upload_script() -> Response {
    script(dmv_web::UPLOAD_SCRIPT)
}

fn script(text: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "private, max-age=3600"),
        ],
        text,
    )
        .into_response()
}

async fn login_form() -> Response {
    Html(dmv_web::login_page(None)).into_response()
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

fn refused_form() -> Response {
    login_page(
        StatusCode::FORBIDDEN,
        "That form did not come from this server's pages.",
    )
}

async fn login(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    if !state.comes_from_our_pages(peer, &headers) {
        return refused_form();
    }
    let client = state.client_ip(peer, &headers);
    if let Err(wait) = state.guesses.check(client) {
        return too_many_guesses(wait);
    }
    let token = form.token.trim();
    if state.config.token_access(token).is_none() {
        state.guesses.failed(client);
        return login_page(StatusCode::UNAUTHORIZED, "That token is not valid here.");
    }
    let id = match state.sessions.open(&blake3::hash(token.as_bytes())) {
        Ok(id) => id,
        Err(e) => {
            return login_page(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("Cannot open a session: {e}"),
            )
        }
    };
    let secure = if state.over_https(peer, &headers) {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        state.sessions.lifetime().as_secs()
    );
    see_other("/", Some(cookie))
}

/// A bookmark of the old logout link gets the button.
async fn logout_form() -> Response {
    Html(dmv_web::logout_page()).into_response()
}

async fn logout(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    headers: HeaderMap,
) -> Response {
    if !state.comes_from_our_pages(peer, &headers) {
        return refused_form();
    }
    if let Some(id) = session_cookie(&headers) {
        state.sessions.close(id);
    }
    let mut out = see_other(
        "/login",
        Some(format!(
            "{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
        )),
    );
    // What the app kept for offline use (thumbnails, folder pages, shared
    // photos) goes with the login: a shared phone keeps none of it.
    out.headers_mut().insert(
        header::HeaderName::from_static("clear-site-data"),
        HeaderValue::from_static("\"cache\", \"storage\""),
    );
    out
}

fn see_other(to: &str, cookie: Option<String>) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    if let Some(c) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, c);
    }
    response
}

async fn to_repo_home(UrlPath(name): UrlPath<String>) -> Response {
    see_other(&format!("/{}/", segment(&name)), None)
}

pub(crate) fn segment(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

async fn repo_home(
    state: State<Shared>,
    peer: Extension<Peer>,
    UrlPath(name): UrlPath<String>,
    query: Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    serve_page(state, peer, name, String::new(), query, headers).await
}

async fn page(
    state: State<Shared>,
    peer: Extension<Peer>,
    UrlPath((name, rest)): UrlPath<(String, String)>,
    query: Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    serve_page(state, peer, name, rest, query, headers).await
}

/// `/{repo}/review/{id}`: a review's page (its path is also where review forms post).
async fn review_page(
    state: State<Shared>,
    peer: Extension<Peer>,
    UrlPath((name, id)): UrlPath<(String, String)>,
    query: Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    serve_page(state, peer, name, format!("review/{id}"), query, headers).await
}

async fn serve_page(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    name: String,
    rest: String,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let viewer = match viewer(&state, peer, &headers) {
        Ok(v) => Viewer {
            people: Arc::new(state.config.people()),
            ..v
        },
        Err(refused) => return refused,
    };
    let source = match source_of(&state, &name) {
        Ok(source) => source,
        Err(refused) => return refused,
    };
    // Refused before any work: a zip when every zip slot is taken.
    if rest.starts_with("zip/") && ZIPS.load(std::sync::atomic::Ordering::SeqCst) >= ZIPS_AT_ONCE {
        return zips_busy();
    }
    let range = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // Pages are made a few at a time; the rest wait here, holding no thread.
    let Ok(_page) = PAGES.acquire().await else {
        return (StatusCode::SERVICE_UNAVAILABLE, "the server is stopping\n").into_response();
    };
    let shared = state.clone();
    let answered = at_low_priority(move || {
        let (repo, bucket) = source.open(&shared, &name)?;
        let bring = bucket.map(|(view, place)| {
            let name = name.clone();
            Arc::new(move |ids: &[dmv_repo::store::ObjectId]| {
                shared.bucket_views.bring(&name, &view, &place, ids)
            }) as Bringer
        });
        let bring_one = |id: &dmv_repo::store::ObjectId| bring.as_ref().is_some_and(|b| b(&[*id]));
        let reply = dmv_web::respond(
            &repo,
            &name,
            &PageRequest {
                path: &rest,
                query: &query,
                range: range.as_deref(),
                viewer: &viewer,
                bring: bring.is_some().then_some(&bring_one as dmv_web::Bring<'_>),
            },
        );
        Ok::<_, String>((reply, repo, bring))
    })
    .await;
    let (reply, repo, bring) = match answered.and_then(|made| made) {
        Ok(answer) => answer,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, Html(html_text(&e))).into_response(),
    };
    send(reply, repo, bring)
}

/// Fetches file versions' data into a bucket's view (see bucket_views),
/// keeping the view while a streamed answer reads it.
type Bringer = Arc<dyn Fn(&[dmv_repo::store::ObjectId]) -> bool + Send + Sync>;

/// Where the pages of repository `name` are read from; a page saying why
/// there are none.
// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
pub(crate) fn source_of(state: &ServerState, name: &str) -> Result<Source, Response> {
    let refuse = |status: StatusCode, why: String| Err((status, Html(why)).into_response());
    match state.config.repos.get(name) {
        Some(RepoPlace::Dir(dir)) => Ok(Source::Dir(dir.clone())),
        Some(place @ RepoPlace::Bucket { identity, .. }) => {
            let Some((url, mut options)) = place.bucket() else {
                return refuse(StatusCode::NOT_FOUND, html_text(name));
            };
            if let Some(file) = identity {
                match dmv_sync::read_identity(file) {
                    Ok(key) => options.keys.identities.push(Arc::new(key)),
                    Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, html_text(&e.to_string())),
                }
            }
            Ok(Source::Bucket(BucketPlace {
                url: url.to_string(),
                options,
                index_cache: state.bucket_cache.path().to_path_buf(),
            }))
        }
        // Only its clients hold the key: there is nothing to show.
        Some(RepoPlace::Sealed { .. }) => refuse(
            StatusCode::NOT_FOUND,
            format!(
                "{} is encrypted end to end: this server holds only ciphertext and cannot show it; clone it with a key",
                html_text(name)
            ),
        ),
        None => refuse(
            StatusCode::NOT_FOUND,
            format!("no repository named {} here to browse", html_text(name)),
        ),
    }
}

/// Where a page's repository is read from.
pub(crate) enum Source {
    Dir(std::path::PathBuf),
    /// Through the server's view of the bucket (see bucket_views).
    Bucket(BucketPlace),
}

/// A bucket's view in use, and how to reach the bucket.
type OpenBucket = (Arc<View>, BucketPlace);

impl Source {
    /// The repository a page reads, and for a bucket its view (kept while
    /// the page is made and sent) and how to reach the bucket. Blocks.
    fn open(
        self,
        state: &ServerState,
        name: &str,
    ) -> Result<(Repository, Option<OpenBucket>), String> {
        let open = |dir: &std::path::Path| Repository::open(dir).map_err(|e| e.to_string());
        match self {
            Source::Dir(dir) => Ok((open(&dir)?, None)),
            Source::Bucket(place) => {
                let view = state.bucket_views.view(name, &place)?;
                Ok((open(view.dir())?, Some((view, place))))
            }
        }
    }
}

/// Runs `work` on a thread of its own at a lowered CPU priority, waited
/// for without a thread. Pages, thumbnails, searches and zips can wait; a
/// clone or push answered beside them is what someone is waiting on: 300
/// connections searching again and again made a clone 2.6 to 3.2 times as
/// slow on two cores, 8 zips streamed at once 3.9 to 4.3 times.
async fn at_low_priority<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("dmv-page".into())
        .spawn(move || {
            dmv_os::lower_this_threads_priority();
            let _ = tx.send(work());
        })
        .map_err(|e| format!("cannot start a thread for the page: {e}"))?;
    // Its sender dropped without a send: the work panicked.
    rx.await
        .map_err(|_| "the page could not be made".to_string())
}

/// Zips streamed at once: each reads every file it holds and keeps a
/// blocking thread until its client has taken it all.
const ZIPS_AT_ONCE: usize = 8;
/// File versions a zip of a bucket's repository fetches into the view per
/// request to the bucket (its first bytes wait for the first batch).
const ZIP_FETCH_BATCH: usize = 64;

/// Pages (and files, thumbnails, zips) being made at once, all
/// repositories: 300 connections asking for searches again and again kept
/// every blocking thread opening the repository, and a clone's requests
/// waited behind them (29× slower). Made a few at a time, the pages leave
/// the cores to the protocol's requests, and wait without a thread.
static PAGES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

fn zips_busy() -> Response {
    let text =
        format!("{ZIPS_AT_ONCE} zips are being made on this server: try again in a minute\n");
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "30")],
        text,
    )
        .into_response()
}

static ZIPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One of the [`ZIPS_AT_ONCE`], given back on drop.
struct ZipSlot;

impl ZipSlot {
    fn take() -> Option<ZipSlot> {
        use std::sync::atomic::Ordering;
        ZIPS.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < ZIPS_AT_ONCE).then_some(n + 1)
        })
        .ok()
        .map(|_| ZipSlot)
    }
}

impl Drop for ZipSlot {
    fn drop(&mut self) {
        ZIPS.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

fn html_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Sends a page, a picture, or file content streamed from the store.
/// The answer to a page's request; `bring` (for a bucket's view, which it
/// keeps until a streamed answer is sent) fetches what a zip holds.
fn send(reply: Reply, repo: Repository, bring: Option<Bringer>) -> Response {
    match reply {
        Reply::Html { status, body } => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
            Html(body),
        )
            .into_response(),
        // The id names the content: a version never changes.
        Reply::Jpeg(bytes) => {
            let len = bytes.len().to_string();
            (
                [
                    (header::CONTENT_TYPE, "image/jpeg"),
                    (
                        header::CACHE_CONTROL,
                        "private, max-age=31536000, immutable",
                    ),
                    (header::CONTENT_LENGTH, len.as_str()),
                ],
                bytes,
            )
                .into_response()
        }
        Reply::Redirect(to) => see_other(&to, None),
        Reply::Zip {
            commit,
            paths,
            name,
        } => {
            let Some(slot) = ZipSlot::take() else {
                return zips_busy();
            };
            let (tx, rx) = crate::channel::answer_channel();
            let stem = name.trim_end_matches(".zip").to_string();
            // Made at a lowered priority, as pages are (see `at_low_priority`).
            let started = std::thread::Builder::new()
                .name("dmv-zip".into())
                .spawn(move || {
                    dmv_os::lower_this_threads_priority();
                    let _slot = slot;
                    let mut out = ChannelWriter {
                        tx,
                        buf: Vec::new(),
                    };
                    // A bucket's view fetches what the zip holds first.
                    if let Some(bring) = &bring {
                        if let Ok(files) = repo.history().files_to_archive(&commit, &paths) {
                            let absent: Vec<_> = files
                                .iter()
                                .map(|(_, e)| e.id)
                                .filter(|id| !dmv_web::data_here(&repo, id))
                                .collect();
                            for some in absent.chunks(ZIP_FETCH_BATCH) {
                                bring(some);
                            }
                        }
                    }
                    let written = repo
                        .history()
                        .archive(
                            &commit,
                            &paths,
                            &format!("{stem}/"),
                            dmv_repo::ArchiveFormat::Zip,
                            &mut out,
                        )
                        .map_err(std::io::Error::other);
                    if let Err(e) = written.and_then(|_| std::io::Write::flush(&mut out)) {
                        // The body ends short: the client sees the download fail.
                        let _ = out.tx.blocking_send(Err(e));
                    }
                });
            if let Err(e) = started {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("cannot start a thread for the zip: {e}\n"),
                )
                    .into_response();
            }
            let mut response = Response::new(Body::from_stream(
                tokio_stream::wrappers::ReceiverStream::new(rx),
            ));
            let h = response.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/zip"),
            );
            h.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_POLICY),
            );
            let safe: String = name
                .chars()
                .filter(|c| c.is_ascii_graphic() && *c != '"' && *c != '\\')
                .collect();
            h.insert(
                header::CONTENT_DISPOSITION,
                HeaderValue::from_str(&format!("attachment; filename=\"{safe}\""))
                    .unwrap_or(HeaderValue::from_static("attachment")),
            );
            response
        }
        Reply::RangeNotSatisfiable { total } => (
            StatusCode::RANGE_NOT_SATISFIABLE,
            [(header::CONTENT_RANGE, format!("bytes */{total}"))],
        )
            .into_response(),
        Reply::Content {
            id,
            content_type,
            start,
            len,
            total,
            partial,
            download,
        } => {
            let (tx, rx) = crate::channel::answer_channel();
            tokio::task::spawn_blocking(move || {
                let _view = bring;
                let mut out = ChannelWriter {
                    tx,
                    buf: Vec::new(),
                };
                let written = dmv_web::write_content(&repo, &id, start, len, &mut out);
                if let Err(e) = written.and_then(|_| std::io::Write::flush(&mut out)) {
                    // The body ends short: the client sees the transfer fail.
                    let _ = out.tx.blocking_send(Err(e));
                }
            });
            let mut response = Response::new(Body::from_stream(
                tokio_stream::wrappers::ReceiverStream::new(rx),
            ));
            let h = response.headers_mut();
            let value = |s: String| {
                HeaderValue::from_str(&s)
                    .unwrap_or(HeaderValue::from_static("application/octet-stream"))
            };
            h.insert(header::CONTENT_TYPE, value(content_type.mime));
            h.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_POLICY),
            );
            h.insert(
                "cross-origin-resource-policy",
                HeaderValue::from_static("same-origin"),
            );
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, max-age=31536000, immutable"),
            );
            if let Some(name) = download {
                let safe: String = name
                    .chars()
                    .filter(|c| !c.is_control() && *c != '"' && *c != '\\')
                    .collect();
                h.insert(
                    header::CONTENT_DISPOSITION,
                    value(format!("attachment; filename=\"{safe}\"")),
                );
            }
            if partial {
                h.insert(
                    header::CONTENT_RANGE,
                    value(format!("bytes {start}-{}/{total}", start + len - 1)),
                );
                *response.status_mut() = StatusCode::PARTIAL_CONTENT;
            }
            response
        }
    }
}

#[derive(Deserialize)]
struct LockForm {
    path: String,
    /// The page to go back to (one of this repository's).
    #[serde(default)]
    back: Option<String>,
    /// The login's secret (forms of a session carry it; a bearer token needs none).
    #[serde(default)]
    form_secret: Option<String>,
}

async fn change_lock(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    UrlPath((name, action)): UrlPath<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<LockForm>,
) -> Response {
    let action = match action.as_str() {
        "take" => dmv_web::LockAction::Take,
        "release" => dmv_web::LockAction::Release,
        "break" => dmv_web::LockAction::Break,
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let viewer = match viewer(&state, peer, &headers) {
        Ok(v) => v,
        Err(refused) => return refused,
    };
    // A session's cookie goes with any request the browser makes: the form must prove it is ours.
    if let Some(secret) = &viewer.form_secret {
        if !state.comes_from_our_pages(peer, &headers)
            || form
                .form_secret
                .as_deref()
                .is_none_or(|s| !same_secret(s, secret))
        {
            return refused_form();
        }
    }
    if action == dmv_web::LockAction::Take
        && !write_grant_of(&state, &headers).covers(form.path.as_bytes())
    {
        let why = dmv_sync::Refusal::OutsideWriteGrant {
            path: form.path.clone(),
            how: "a lock is taken only by a writer granted its path".into(),
        };
        return (StatusCode::FORBIDDEN, Html(html_text(&why.to_string()))).into_response();
    }
    let source = match source_of(&state, &name) {
        Ok(source) => source,
        Err(refused) => return refused,
    };
    let shared = state.clone();
    // What the audit log (and the webhooks) are told once the lock changed,
    // as a lock through the protocol is.
    let events = state.webhooks.events_for(&name);
    let kind = match action {
        dmv_web::LockAction::Take => "lock",
        dmv_web::LockAction::Release => "unlock",
        dmv_web::LockAction::Break => "break-lock",
    };
    let event = dmv_repo::AuditEvent {
        paths: vec![form.path.clone()],
        ..dmv_repo::AuditEvent::new(
            kind,
            viewer.user.as_deref().unwrap_or("(a token naming no user)"),
        )
    };
    let answered = tokio::task::spawn_blocking(move || {
        let (repo, bucket) = source.open(&shared, &name)?;
        // The view stays while the lock is changed and the answer made.
        let place = bucket.as_ref().map(|(_, place)| place);
        let views = &shared.bucket_views;
        let mut in_bucket = |paths: &[String], user: &str, action| match place {
            Some(place) => {
                views.change_lock(&name, place, paths, user, action, (&events, event.clone()))
            }
            None => Ok(()),
        };
        let reply = dmv_web::change_lock(
            &repo,
            &name,
            &form.path,
            action,
            &viewer,
            form.back.as_deref(),
            place
                .is_some()
                .then_some(&mut in_bucket as dmv_web::LockKeeper<'_>),
        );
        // In a directory the lock changed here (in a bucket, in the closure above).
        if place.is_none() && matches!(reply, dmv_web::Reply::Redirect(_)) {
            dmv_sync::record_in_dir(&repo, &events, event);
        }
        Ok::<_, String>((reply, repo))
    })
    .await;
    match answered {
        Ok(Ok((reply, repo))) => send(reply, repo, None),
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, Html(html_text(&e))).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Html(html_text(&e.to_string())),
        )
            .into_response(),
    }
}

/// A comment, reply, resolve or approval from a page: a session's form
/// must come from our pages and carry its secret, as a lock form does; the
/// event is written signed with the token's user (dmv-web refuses a token
/// without one, or a read token). In a repository kept in a bucket it is
/// written into the server's view and the view's log sent to the bucket.
async fn change_review(
    State(state): State<Shared>,
    Extension(peer): Extension<Peer>,
    UrlPath((name, action)): UrlPath<(String, String)>,
    headers: HeaderMap,
    Form(form): Form<dmv_web::ReviewForm>,
) -> Response {
    let Some(action) = dmv_web::ReviewAction::named(&action) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let viewer = match viewer(&state, peer, &headers) {
        Ok(v) => v,
        Err(refused) => return refused,
    };
    if let Some(secret) = &viewer.form_secret {
        if !state.comes_from_our_pages(peer, &headers)
            || form
                .form_secret
                .as_deref()
                .is_none_or(|s| !same_secret(s, secret))
        {
            return refused_form();
        }
    }
    let source = match source_of(&state, &name) {
        Ok(source) => source,
        Err(refused) => return refused,
    };
    let shared = state.clone();
    // A comment that names people is told to the audit log and webhooks.
    let events = state.webhooks.events_for(&name);
    let answered = tokio::task::spawn_blocking(move || {
        let write = |repo: &Repository| dmv_web::change_review(repo, &name, action, &form, &viewer);
        match source {
            Source::Dir(dir) => {
                let repo = Repository::open(&dir).map_err(|e| e.to_string())?;
                let old = review_log_tip(&repo)?;
                let reply = write(&repo);
                if let (dmv_web::Reply::Redirect(_), Some(new)) = (&reply, review_log_tip(&repo)?) {
                    dmv_sync::record_mentions_in_dir(&repo, &events, old, new);
                }
                Ok::<_, String>((reply, repo))
            }
            Source::Bucket(place) => shared
                .bucket_views
                .change_review(&name, &place, write, &events),
        }
    })
    .await;
    match answered {
        Ok(Ok((reply, repo))) => send(reply, repo, None),
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, Html(html_text(&e))).into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Html(html_text(&e.to_string())),
        )
            .into_response(),
    }
}

/// Compares in time independent of where the strings differ.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod zip_tests {
    use super::*;

    #[test]
    fn zips_past_the_bound_are_refused_until_one_ends() {
        let slots: Vec<ZipSlot> = (0..ZIPS_AT_ONCE)
            .map(|_| ZipSlot::take().expect("a slot"))
            .collect();
        assert!(
            ZipSlot::take().is_none(),
            "a zip past {ZIPS_AT_ONCE} at once"
        );
        drop(slots);
        assert!(ZipSlot::take().is_some());
    }
}
