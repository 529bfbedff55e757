//! `dmv serve`: repositories over HTTP or HTTPS (axum on hyper, rustls).
//! Every request is `POST /NAME/dmv/VERB`; the protocol work runs on blocking
//! threads against the repository, exactly as over ssh. See docs/server.md.
//!
//! The server faces the open network, so every wait on a client is bounded:
//! a request's head, the next piece of a request's body, the client taking
//! the next piece of an answer and a TLS handshake each get `idle_timeout_secs`,
//! and a request's head is at most [`MAX_HEAD_BYTES`]. A request that is not
//! an upload is read whole before any thread works on it, within
//! `request_timeout_secs` in all and [`MAX_REQUEST_BYTES`], and bodies held at
//! once share a budget (`server_state`): a client trickling bytes holds a
//! little memory for a bounded time, never a thread. Uploads need a write
//! token and are stored a few at a time. Connections are bounded in number
//! (`connections`). Wrong tokens are rationed per client address.

use std::future::Future;
use std::io::{BufReader, Read, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Extension, Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use dmv_repo::Repository;
use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::channel::ChannelWriter;
use crate::connections::{Activity, Connections};
use crate::requests::{authorize_token, body_with_idle_timeout};
use crate::server_config::{RepoPlace, ServerConfig};
use crate::server_state::{Peer, ServerState};
use dmv_sync::protocol::{Request, Response as WireResponse, Verb};
use dmv_sync::{decode_message, Frame, FrameReader, FrameWriter};
use dmv_sync::{handle_relayed, handle_request, BucketRemote, Caller};
use dmv_sync::{SyncError, SyncResult, Violation};

fn plain(status: StatusCode, text: String) -> Response {
    (status, text + "\n").into_response()
}

/// Checks the request's token against what the verb needs; wrong tokens
/// count against the client's ration of guesses.
// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
fn authorize(
    state: &ServerState,
    peer: Peer,
    headers: &HeaderMap,
    verb: Verb,
) -> Result<Caller, Response> {
    let presented = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    authorize_token(state, peer, headers, presented, verb.writes())
        .map_err(|(status, why)| plain(status, why))
}

/// A request's head (request line and headers). Ours are a few hundred
/// bytes; the bound keeps what a client can make the server hold small.
pub const MAX_HEAD_BYTES: usize = 64 << 10;
/// Header lines per request (ours send about six).
const MAX_HEADERS: usize = 64;
/// A request that is not an upload: the largest, `has` of 32,768 ids, is about 1.1 MiB.
pub const MAX_REQUEST_BYTES: usize = 8 << 20;
/// A certificate or key file larger than this is not one.
const MAX_PEM_FILE: u64 = 1 << 20;

/// Serves forever on `listen` (a `host:port`; port 0 picks a free one), over
/// HTTPS when the configuration names a certificate and key. The chosen
/// address is printed on stderr as `listening on http://ADDR` (or https),
/// then the repositories served.
pub fn run(config: ServerConfig, listen: &str) -> SyncResult<()> {
    serve(config, &[listen.to_string()], |_| {})
}

/// Repositories named on the start line; past it, how many more.
const NAMES_ON_START: usize = 20;

/// [`run`] on the first of `listen` that is free (each but the last is
/// passed over when another program has it), then `started` with the
/// address's base URL (`http://127.0.0.1:8080`) once the first lines are
/// printed, for a caller's own start lines.
pub fn serve(
    config: ServerConfig,
    listen: &[String],
    started: impl FnOnce(&str),
) -> SyncResult<()> {
    // Before anything listens: a bad certificate is said at once, not at the first client.
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => Some(tls_acceptor(cert, key)?),
        (None, None) => None,
        (Some(cert), None) => {
            return Err(SyncError::ServerConfig {
                path: cert.clone(),
                detail: "a TLS certificate needs its key too (tls_key, --tls-key)".into(),
            })
        }
        (None, Some(key)) => {
            return Err(SyncError::ServerConfig {
                path: key.clone(),
                detail: "a TLS key needs its certificate too (tls_cert, --tls-cert)".into(),
            })
        }
    };
    let idle = config.idle_timeout();
    let logins = crate::sessions::place_for(&config).map_err(|detail| {
        SyncError::local("cannot keep the web logins", std::io::Error::other(detail))
    })?;
    raise_open_file_limit();
    let connections = Connections::new(config.max_connections());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| SyncError::local("cannot start the server runtime", e))?;
    runtime.block_on(async move {
        let mut bound = None;
        for (n, at) in listen.iter().enumerate() {
            match tokio::net::TcpListener::bind(at.as_str()).await {
                Ok(listener) => {
                    bound = Some((listener, at));
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && n + 1 < listen.len() => {}
                Err(e) => return Err(SyncError::local(format!("cannot listen on {at}"), e)),
            }
        }
        let Some((listener, at)) = bound else {
            return Err(SyncError::local(
                "cannot listen",
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address given"),
            ));
        };
        let addr = listener
            .local_addr()
            .map_err(|e| SyncError::local(format!("cannot listen on {at}"), e))?;
        let base = format!("{}://{addr}", if tls.is_some() { "https" } else { "http" });
        // The first line is read by scripts (the address is its last word).
        eprintln!("dmv serve: listening on {base}");
        let names: Vec<&str> = config.repos.keys().map(String::as_str).collect();
        let more = names.len().saturating_sub(NAMES_ON_START);
        eprintln!(
            "dmv serve: serving {}{} (web UI at {base}/)",
            names[..names.len().min(NAMES_ON_START)].join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
        started(&base);
        let _ = std::io::stderr().flush();
        let state = Arc::new(ServerState::new(config, logins).map_err(|e| {
            SyncError::local("cannot make a cache directory for the served buckets", e)
        })?);
        let app = Router::new()
            .route("/{repo}/dmv/{verb}", post(rpc))
            .merge(crate::web::routes())
            .merge(crate::uploads::routes())
            .merge(crate::sealed::routes())
            .layer(axum::middleware::from_fn(crate::web::hardening_headers))
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                access_log,
            ))
            .with_state(state);
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                // That client gave up before it was taken.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
                    ) =>
                {
                    continue
                }
                // Out of file descriptors, say: pause rather than spin, and
                // go on serving the connections already open.
                Err(_) => {
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            };
            // The server works for every connection: this one is closed at once.
            let Some(admitted) = connections.admit() else {
                continue;
            };
            // An answer's last small write must not wait for the client's
            // delayed acknowledgement of the one before (40 ms each, Nagle).
            let _ = stream.set_nodelay(true);
            limit_unsent(&stream);
            let (app, tls) = (app.clone(), tls.clone());
            tokio::spawn(async move {
                let activity = admitted.activity.clone();
                let stream = StallGuard::new(stream, idle, activity.clone());
                let served = async {
                    match tls {
                        None => {
                            serve_connection(stream, app, idle, Peer(peer), activity.clone()).await
                        }
                        Some(acceptor) => {
                            // A failed or stalled handshake concerns that client only.
                            if let Ok(Ok(stream)) =
                                tokio::time::timeout(idle, acceptor.accept(stream)).await
                            {
                                serve_connection(stream, app, idle, Peer(peer), activity.clone())
                                    .await;
                            }
                        }
                    }
                };
                tokio::select! {
                    _ = served => {}
                    _ = activity.closed.notified() => {}
                }
                drop(admitted);
            });
        }
    })
}

/// How long to wait before accepting again after `accept` failed.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Serves HTTP/1.1 requests on one connection until either side ends it.
/// Each request carries the connection's address, and counts as busy work
/// of the connection until its answer has been produced.
async fn serve_connection<I>(
    io: I,
    app: Router,
    idle: Duration,
    peer: Peer,
    activity: Arc<Activity>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut http = hyper::server::conn::http1::Builder::new();
    // The head timeout also runs between requests: a kept-alive connection
    // that sends nothing more is closed like one that never sent anything.
    // The buffer holds a request's head (64 KiB at most) and what an answer
    // has queued for its client: bounded, so an answer nobody reads holds
    // little (see channel.rs).
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(idle)
        .max_header_size(MAX_HEAD_BYTES)
        .max_headers(MAX_HEADERS)
        .max_buf_size(MAX_HEAD_BYTES + crate::channel::PIECE);
    let service =
        hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(peer);
            request.extensions_mut().insert(activity.clone());
            let answering = activity.answering();
            let app = app.clone();
            async move {
                let response = tower::ServiceExt::oneshot(app, request.map(Body::new)).await;
                // Busy until the answer's body is sent or dropped.
                response.map(|r| {
                    r.map(|body| {
                        Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
                            let _ = &answering;
                            frame
                        }))
                    })
                })
            }
        });
    // How a connection ended concerns only its client; the server goes on.
    let _ = http
        .serve_connection(hyper_util::rt::TokioIo::new(io), service)
        .await;
}

/// Bytes written to a connection and not yet sent that the kernel holds
/// for it: 520 downloads that never read were each given 3.4 MB of kernel
/// buffers (1.8 GB in all), and filling them took the two cores for the
/// first 1.5 s of the attack. In-flight data still grows with the
/// congestion window, so a far client reading at full speed loses nothing.
const UNSENT_BYTES: i32 = 128 << 10;

/// Sets [`UNSENT_BYTES`] on `stream` (Linux's `TCP_NOTSENT_LOWAT`; other
/// systems keep their own buffers).
fn limit_unsent(stream: &tokio::net::TcpStream) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::fd::AsRawFd;
        let value = UNSENT_BYTES;
        // SAFETY: setsockopt reads an int from the pointer given, on a socket this stream owns.
        unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_NOTSENT_LOWAT,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = (stream, UNSENT_BYTES);
}

/// Lifts the soft bound on open files to the hard one: each connection is
/// one, and the default soft bound (1024) is below what many servers allow.
/// Windows has no such bound.
#[cfg(not(unix))]
fn raise_open_file_limit() {}

#[cfg(unix)]
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Reads a PEM file, bounded: a path naming something else must not make
/// the server read it whole.
fn read_pem(path: &Path, what: &str) -> SyncResult<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_PEM_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| SyncError::ServerConfig {
            path: path.to_path_buf(),
            detail: format!("cannot read the TLS {what}: {e}"),
        })?;
    if bytes.len() as u64 > MAX_PEM_FILE {
        return Err(SyncError::ServerConfig {
            path: path.to_path_buf(),
            detail: format!("not a PEM TLS {what}: larger than {MAX_PEM_FILE} bytes"),
        });
    }
    Ok(bytes)
}

/// The TLS side of the server from a PEM certificate chain and its key.
fn tls_acceptor(cert: &Path, key: &Path) -> SyncResult<tokio_rustls::TlsAcceptor> {
    let bad = |path: &Path, detail: String| SyncError::ServerConfig {
        path: path.to_path_buf(),
        detail,
    };
    let chain = CertificateDer::pem_slice_iter(&read_pem(cert, "certificate")?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(cert, format!("not a PEM TLS certificate: {e}")))?;
    if chain.is_empty() {
        return Err(bad(
            cert,
            "no TLS certificate in it (a PEM file with -----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    let private = PrivateKeyDer::from_pem_slice(&read_pem(key, "key")?).map_err(|e| match e {
        pem::Error::NoItemsFound => bad(
            key,
            "no TLS private key in it (a PEM file with -----BEGIN PRIVATE KEY-----)".into(),
        ),
        e => bad(key, format!("not a PEM TLS private key: {e}")),
    })?;
    // Named, not the process default: which providers are compiled in
    // depends on the features other crates of the program turn on.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(cert, format!("cannot set up TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            bad(
                key,
                format!("cannot serve TLS with this key and {}: {e}", cert.display()),
            )
        })?;
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(tls)))
}

/// A connection whose writes give up once the client has taken nothing for
/// `idle`: a client that stops reading an answer would otherwise hold its
/// connection, and the thread producing the answer, for ever.
/// It also notes when bytes last moved, for [`Connections`] to choose
/// which idle connection to close.
struct StallGuard<I> {
    io: I,
    idle: Duration,
    /// Runs from the first write that could not proceed until one does.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    activity: Arc<Activity>,
}

impl<I> StallGuard<I> {
    fn new(io: I, idle: Duration, activity: Arc<Activity>) -> Self {
        StallGuard {
            io,
            idle,
            stalled: None,
            activity,
        }
    }

    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if poll.is_ready() {
            self.activity.moved_bytes();
            self.activity.write_unblocked();
            self.stalled = None;
            return poll;
        }
        self.activity.write_blocked();
        let idle = self.idle;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
        if timer.as_mut().poll(cx).is_ready() {
            self.stalled = None;
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client stopped taking the answer",
            )));
        }
        Poll::Pending
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for StallGuard<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        // Reads wait on the client by design (between requests, while an
        // answer streams); the head and body timeouts bound the waits that matter.
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_read(cx, buf);
        if poll.is_ready() {
            this.activity.moved_bytes();
        }
        poll
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for StallGuard<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write(cx, buf);
        this.bounded(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.bounded(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_flush(cx);
        this.bounded(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_shutdown(cx);
        this.bounded(cx, poll)
    }
}

async fn rpc(
    State(state): State<Arc<ServerState>>,
    Extension(peer): Extension<Peer>,
    Extension(activity): Extension<Arc<Activity>>,
    UrlPath((name, verb)): UrlPath<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(verb) = Verb::from_name(&verb) else {
        return plain(StatusCode::NOT_FOUND, format!("unknown request {verb}"));
    };
    let Some(place) = state.config.repos.get(&name).cloned() else {
        return plain(
            StatusCode::NOT_FOUND,
            format!("no repository named {name} here"),
        );
    };
    let cache = state.bucket_cache.clone();
    let caller = match authorize(&state, peer, &headers, verb) {
        Ok(caller) => Caller {
            events: state.webhooks.events_for(&name),
            pre_receive: state.config.pre_receive_for(&name),
            bucket_protects: state.config.bucket_protects_for(&name),
            ..caller
        },
        Err(refused) => return refused,
    };
    if let RepoPlace::Sealed { .. } = place {
        // Its clients read and write its objects themselves (sealed.rs).
        let mut refused = plain(
            StatusCode::CONFLICT,
            format!("{name} is encrypted end to end: its clients read it with their key"),
        );
        refused.headers_mut().insert(
            dmv_sync::SEALED_HUB_HEADER,
            "objects/store".parse().expect("ascii"),
        );
        return refused;
    }
    if verb == Verb::WaitRefs {
        let who = caller
            .user
            .clone()
            .unwrap_or_else(|| state.client_ip(peer, &headers).to_string());
        return wait_for_refs(&state, place, caller, who, &activity, body).await;
    }
    if verb.has_body() {
        // An upload is answered only once it has been read and stored whole.
        let Ok(turn) = state.uploads.clone().acquire_owned().await else {
            return plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down".into(),
            );
        };
        let stream = Box::pin(body_with_idle_timeout(body, state.config.idle_timeout()));
        let reader = tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(stream));
        let task = tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let mut answer = Vec::new();
            serve_request(&place, &cache, &caller, verb, reader, &mut answer);
            answer
        });
        return match task.await {
            Ok(answer) => Response::new(Body::from(answer)),
            Err(e) => plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("request failed: {e}"),
            ),
        };
    }
    let waiting = activity.waiting_on_client();
    let read = read_request(&state, body).await;
    drop(waiting);
    let (request, held) = match read {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let (tx, rx) = crate::channel::answer_channel();
    tokio::task::spawn_blocking(move || {
        let mut out = ChannelWriter {
            tx,
            buf: Vec::new(),
        };
        serve_request(
            &place,
            &cache,
            &caller,
            verb,
            std::io::Cursor::new(request),
            &mut out,
        );
        drop(held);
        let _ = out.flush();
    });
    Response::new(Body::from_stream(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    ))
}

/// How often a held `WaitRefs` looks at the refs again: the longest a
/// change waits to be told, for the cost of a refs listing a second per
/// waiting watcher (about 50 µs of a repository's reftable).
const WAIT_LOOKS_EVERY: Duration = Duration::from_secs(1);

/// `WaitRefs`, a long poll: the refs' digest is looked at every
/// [`WAIT_LOOKS_EVERY`] until it differs from the one the client saw, or
/// its wait ran out. While it waits its connection counts as waiting on
/// its client, not as work: past the bound on connections it is the first
/// closed, so a thousand waits cost a pushing client nothing (the watcher
/// asks again). Each look is an ordinary `WaitRefs` answered at once by
/// the repository's side, so a directory and a bucket are looked at alike.
async fn wait_for_refs(
    state: &Arc<ServerState>,
    place: RepoPlace,
    caller: Caller,
    who: String,
    activity: &Arc<Activity>,
    body: Body,
) -> Response {
    let (request, held) = match read_request(state, body).await {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    drop(held);
    let asked = FrameReader::new(request.as_slice())
        .next_frame()
        .ok()
        .flatten()
        .and_then(|f| match f {
            Frame::Message(bytes) => decode_message::<Request>(&bytes).ok(),
            _ => None,
        });
    let (since, seconds) = match asked {
        Some(Request::WaitRefs { since, seconds }) => {
            (since, seconds.min(dmv_sync::protocol::MAX_WAIT_SECONDS))
        }
        // Not what the URL says: the repository's side answers why.
        _ => (Default::default(), 0),
    };
    let slot = state.waits.take(who);
    let deadline = tokio::time::Instant::now()
        + Duration::from_secs(if slot.is_some() { seconds as u64 } else { 0 });
    let _waiting = activity.waiting_on_client();
    let cache = state.bucket_cache.clone();
    loop {
        let (place, caller, cache, request) = (
            place.clone(),
            caller.clone(),
            cache.clone(),
            request.clone(),
        );
        let answer = match tokio::task::spawn_blocking(move || {
            let mut answer = Vec::new();
            serve_request(
                &place,
                &cache,
                &caller,
                Verb::WaitRefs,
                std::io::Cursor::new(request),
                &mut answer,
            );
            answer
        })
        .await
        {
            Ok(answer) => answer,
            Err(e) => {
                return plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("request failed: {e}"),
                )
            }
        };
        let now = FrameReader::new(answer.as_slice())
            .next_frame()
            .ok()
            .flatten()
            .and_then(|f| match f {
                Frame::Message(bytes) => match decode_message::<WireResponse>(&bytes) {
                    Ok(WireResponse::RefsDigest { digest }) => Some(digest),
                    _ => None,
                },
                _ => None,
            });
        if now.is_none_or(|d| d != since)
            || tokio::time::Instant::now() + WAIT_LOOKS_EVERY > deadline
        {
            return Response::new(Body::from(answer));
        }
        tokio::time::sleep(WAIT_LOOKS_EVERY).await;
    }
}

/// Reads a whole request that is not an upload, within the request
/// timeout in all, the idle timeout per piece, [`MAX_REQUEST_BYTES`], and
/// the bytes all requests may hold at once (whose share it returns).
// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
async fn read_request(
    state: &ServerState,
    body: Body,
) -> Result<(Vec<u8>, Vec<tokio::sync::OwnedSemaphorePermit>), Response> {
    let deadline = tokio::time::Instant::now() + state.config.request_timeout();
    let idle = state.config.idle_timeout();
    // A body that says it is too long is refused before a byte of it is
    // read: 16 connections sending 64 MiB bodies had the server read
    // 8 MiB of each before answering, again and again.
    if axum::body::HttpBody::size_hint(&body).lower() > MAX_REQUEST_BYTES as u64 {
        return Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a request other than an upload is at most {MAX_REQUEST_BYTES} bytes"),
        ));
    }
    let mut stream = body.into_data_stream();
    let (mut bytes, mut held) = (Vec::new(), Vec::new());
    loop {
        let piece = match tokio::time::timeout_at(
            deadline.min(tokio::time::Instant::now() + idle),
            stream.next(),
        )
        .await
        {
            Ok(None) => return Ok((bytes, held)),
            Ok(Some(Ok(piece))) => piece,
            Ok(Some(Err(e))) => {
                return Err(plain(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request: {e}"),
                ))
            }
            Err(_) => {
                return Err(plain(
                    StatusCode::REQUEST_TIMEOUT,
                    "the request did not arrive in time".into(),
                ))
            }
        };
        if bytes.len() + piece.len() > MAX_REQUEST_BYTES {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("a request other than an upload is at most {MAX_REQUEST_BYTES} bytes"),
            ));
        }
        match state
            .body_bytes
            .clone()
            .try_acquire_many_owned(piece.len() as u32)
        {
            Ok(share) => held.push(share),
            Err(_) => {
                return Err(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server is busy: try again in a moment".into(),
                ))
            }
        }
        bytes.extend_from_slice(&piece);
    }
}

/// With `access_log`, one line per request on stderr: method, path, status,
/// bytes of the answer (as its Content-Length says) and the Range asked for.
async fn access_log(
    State(state): State<Arc<ServerState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if !state.config.access_log {
        return next.run(request).await;
    }
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let range = request
        .headers()
        .get(axum::http::header::RANGE)
        .and_then(|v| v.to_str().ok())
        .map(|r| format!(" range={r}"))
        .unwrap_or_default();
    let response = next.run(request).await;
    let bytes = response
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_string();
    eprintln!(
        "dmv serve: {method} {path} {} {bytes}{range}",
        response.status().as_u16()
    );
    response
}

/// One request against one repository; failures become an error frame.
fn serve_request(
    place: &RepoPlace,
    cache: &tempfile::TempDir,
    caller: &Caller,
    verb: Verb,
    reader: impl std::io::Read,
    out: &mut dyn Write,
) {
    let mut input = FrameReader::new(BufReader::with_capacity(1 << 20, reader));
    let mut output = FrameWriter::new(out);
    let result = (|| -> SyncResult<()> {
        let Some(Frame::Message(bytes)) = input.next_frame()? else {
            return Err(SyncError::Protocol(Violation::Unexpected {
                expected: "a request",
                got: None,
            }));
        };
        let request: Request = decode_message(&bytes)?;
        if request.verb() != verb {
            return Err(SyncError::Protocol(Violation::WrongUrl {
                sent: request.verb().name(),
                url: verb.name(),
            }));
        }
        match place {
            RepoPlace::Dir(path) => {
                let repo = Repository::open(path).map_err(|e| match e {
                    dmv_repo::RepoError::NotARepository(_) | dmv_repo::RepoError::Io { .. } => {
                        SyncError::Remote("not a dmv repository".into())
                    }
                    other => SyncError::Remote(format!("not a dmv repository: {other}")),
                })?;
                handle_request(&repo, caller, request, &mut input, &mut output)
            }
            RepoPlace::Bucket { url, identity, .. } => {
                let mut options = place.bucket().map(|(_, o)| o).unwrap_or_default();
                // Read at each request: a key replaced in the file takes effect at once.
                if let Some(file) = identity {
                    let key = dmv_sync::read_identity(file)?;
                    options.keys.identities.push(std::sync::Arc::new(key));
                }
                // One mirror of the pack indexes for every request (each upload stages its packs apart).
                let mut bucket = BucketRemote::open(url, &options, Some(cache.path()))?;
                handle_relayed(&mut bucket, caller, request, &mut input, &mut output)
            }
            RepoPlace::Sealed { .. } => Err(SyncError::Remote(
                "this repository is encrypted end to end: the server cannot read it".into(),
            )),
        }
    })();
    if let Err(e) = result {
        let message = match e {
            SyncError::Remote(m) => m,
            other => other.to_string(),
        };
        let _ = output.message(&WireResponse::Error { message });
    }
    let _ = output.flush();
}
