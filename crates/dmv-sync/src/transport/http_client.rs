//! The HTTP transport: each request is one `POST BASE/dmv/VERB` whose body
//! is the request's frames and whose response body is the answer's frames.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::protocol::error::GaveUpWaiting;
use crate::protocol::frame::{FrameReader, FrameWriter};
use crate::protocol::{Request, Verb, SEALED_HUB_HEADER, VERSION};
use crate::trace::Counting;
use crate::transport::client::{BodyWriter, Wire};
use crate::TransportError;
use crate::{SyncError, SyncResult, Violation};

pub struct HttpWire {
    /// Drives the requests on the calling thread: a response is read where
    /// it is consumed, without a hand-over between threads per piece.
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    base: String,
    token: Option<String>,
    /// How long the server may go without taking or giving a byte.
    stall_after: Duration,
}

/// When bytes last moved either way: a request is abandoned once nothing
/// has for the wait allowed. Our own side producing a body counts as
/// moving, so a slow disk here is not taken for a stalled server.
struct LastMoved {
    start: Instant,
    millis: AtomicU64,
}

impl LastMoved {
    fn now() -> LastMoved {
        LastMoved {
            start: Instant::now(),
            millis: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        self.millis
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn idle(&self) -> Duration {
        self.start
            .elapsed()
            .saturating_sub(Duration::from_millis(self.millis.load(Ordering::Relaxed)))
    }
}

/// Runs `work` until it ends, or None once nothing has moved for `after`.
async fn unless_stalled<T>(
    work: impl std::future::Future<Output = T>,
    moved: &LastMoved,
    after: Duration,
) -> Option<T> {
    let mut work = std::pin::pin!(work);
    loop {
        let idle = moved.idle();
        if idle >= after {
            return None;
        }
        if let Ok(done) = tokio::time::timeout(after - idle, &mut work).await {
            return Some(done);
        }
    }
}

/// Bytes of a streamed request body handed to the sending side at a time.
const BODY_PIECE: usize = 1 << 20;
/// At most this much of an error answer's body is read: it becomes part of
/// a one-line message, and a server must not make us hold more.
const MAX_ERROR_BODY: usize = 4096;
/// A pooled connection idle longer than this is not used again. Servers
/// close idle connections (`dmv serve` after `idle_timeout_secs`, at least
/// 1 s), and this client's connections are only looked after while a request
/// runs, so one the server closed meanwhile would still look open: a request
/// sent on it would fail part way instead of going out on a new connection.
const POOL_IDLE: Duration = Duration::from_millis(500);
/// Names a PEM file of certificates to trust besides the usual roots: a
/// private CA's, or the self-signed one of a `dmv serve` speaking TLS itself.
const CA_CERT_VAR: &str = "DMV_CA_CERT";
/// A certificate bundle larger than this is not one.
const MAX_CA_FILE: u64 = 4 << 20;

/// The certificates `DMV_CA_CERT` names (none when it is unset).
fn extra_roots() -> Result<Vec<CertificateDer<'static>>, String> {
    let Some(path) = std::env::var_os(CA_CERT_VAR)
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
    else {
        return Ok(Vec::new());
    };
    let place = format!("{CA_CERT_VAR}={}", path.display());
    let mut pem = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_CA_FILE + 1).read_to_end(&mut pem))
        .map_err(|e| format!("{place}: {e}"))?;
    if pem.len() as u64 > MAX_CA_FILE {
        return Err(format!(
            "{place}: larger than {MAX_CA_FILE} bytes, not a certificate file"
        ));
    }
    let certs = CertificateDer::pem_reader_iter(pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| format!("{place}: not a PEM certificate: invalid certificate encoding"))?;
    if certs.is_empty() {
        return Err(format!(
            "{place}: no certificate in it (a PEM file with -----BEGIN CERTIFICATE-----)"
        ));
    }
    Ok(certs)
}

/// The client's TLS, as reqwest 0.12 with `rustls-tls` set it up: the
/// public roots webpki-roots bundles (Mozilla's, not the system's store)
/// and `DMV_CA_CERT`'s; TLS 1.2 and 1.3; HTTP/1.1 by ALPN; the crypto
/// provider the process installed, else ring (the one the rest of DMV
/// builds with). Built here because reqwest 0.13 would check certificates
/// against the system's store (rustls-platform-verifier) and fall back to
/// aws-lc-rs.
fn tls_config() -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in extra_roots()? {
        roots.add(cert).map_err(|e| root_cause(&e))?;
    }
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|_| "invalid TLS versions".to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tls)
}

/// What a failed connection says; a certificate the client does not trust
/// also says how to trust it.
fn connect_detail(e: &reqwest::Error) -> String {
    let detail = root_cause(e);
    if detail.contains("certificate") && std::env::var_os(CA_CERT_VAR).is_none() {
        return format!("{detail} (a server with a private or self-signed certificate: set {CA_CERT_VAR}=FILE to trust it)");
    }
    detail
}

/// The start of an error answer's body, as text.
async fn error_text(mut response: reqwest::Response) -> String {
    let mut text = Vec::new();
    while text.len() < MAX_ERROR_BODY {
        match response.chunk().await {
            Ok(Some(piece)) => {
                text.extend_from_slice(&piece[..piece.len().min(MAX_ERROR_BODY - text.len())])
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// The write end of a streamed request body: frames are gathered into 1 MiB
/// pieces and passed to the request (a pipe and the blocking client's 8 KiB
/// reads made a 1 GiB push spend most of its time switching threads).
struct BodyPieces<'a> {
    tx: tokio::sync::mpsc::Sender<std::io::Result<bytes::Bytes>>,
    piece: Vec<u8>,
    /// Set once the request has ended. The runtime runs only inside
    /// `block_on`, so after an early answer (a 401 before the body was read)
    /// nothing would ever make room in the channel again: the producer
    /// checks this instead of blocking on a full channel.
    ended: &'a AtomicBool,
    moved: &'a LastMoved,
}

impl BodyPieces<'_> {
    fn send_piece(&mut self) -> std::io::Result<()> {
        use tokio::sync::mpsc::error::TrySendError;
        if self.piece.is_empty() {
            return Ok(());
        }
        let mut piece =
            Ok(std::mem::replace(&mut self.piece, Vec::with_capacity(BODY_PIECE)).into());
        let ended = || {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the request ended before its body was sent",
            )
        };
        loop {
            match self.tx.try_send(piece) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Closed(_)) => return Err(ended()),
                Err(TrySendError::Full(back)) => {
                    if self.ended.load(Ordering::Acquire) {
                        return Err(ended());
                    }
                    piece = back;
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }
}

impl Write for BodyPieces<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.moved.touch();
        let n = buf.len().min(BODY_PIECE - self.piece.len());
        self.piece.extend_from_slice(&buf[..n]);
        if self.piece.len() == BODY_PIECE {
            self.send_piece()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send_piece()
    }
}

/// A response body as a `Read`, pulled by the caller's thread.
struct ResponseBody<'r> {
    url: &'r str,
    runtime: &'r tokio::runtime::Runtime,
    response: reqwest::Response,
    piece: bytes::Bytes,
    stall_after: Duration,
}

impl Read for ResponseBody<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.piece.is_empty() {
            match self.runtime.block_on(async {
                tokio::time::timeout(self.stall_after, self.response.chunk()).await
            }) {
                Ok(Ok(Some(piece))) => self.piece = piece,
                Ok(Ok(None)) => return Ok(0),
                Ok(Err(e)) => return Err(std::io::Error::other(root_cause(&e))),
                Err(_) => return Err(GaveUpWaiting::io_error(self.url, self.stall_after)),
            }
        }
        let n = buf.len().min(self.piece.len());
        buf[..n].copy_from_slice(&self.piece.split_to(n));
        Ok(n)
    }
}

/// The innermost cause of an error, which is the one that says what happened.
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// How long connecting may take at most (a dead host's packets vanish).
const CONNECT_WAIT: Duration = Duration::from_secs(15);

impl HttpWire {
    pub fn new(base: &str, token: Option<String>, stall_after: Duration) -> SyncResult<HttpWire> {
        let setup = |detail: String| {
            SyncError::Transport(TransportError::Unreachable {
                url: base.to_string(),
                detail: format!("cannot set up HTTP: {detail}"),
            })
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| setup(e.to_string()))?;
        let builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_WAIT.min(stall_after))
            .pool_idle_timeout(POOL_IDLE)
            .user_agent(concat!("dmv/", env!("CARGO_PKG_VERSION")));
        let client = builder
            .tls_backend_preconfigured(tls_config().map_err(setup)?)
            .build()
            .map_err(|e| setup(root_cause(&e)))?;
        Ok(HttpWire {
            runtime,
            client,
            base: base.to_string(),
            token,
            stall_after,
        })
    }
}

impl Wire for HttpWire {
    fn may_write(&self) -> bool {
        self.token.is_some()
    }

    fn waits_up_to(&self) -> Option<Duration> {
        Some(self.stall_after)
    }

    fn exchange<'s>(
        &'s mut self,
        verb: Verb,
        request: &Request,
        body: Option<BodyWriter<'_>>,
    ) -> SyncResult<FrameReader<Box<dyn Read + 's>>> {
        let url = format!("{}/dmv/{}", self.base, verb.name());
        let mut req = self
            .client
            .post(&url)
            .header("DMV-Protocol", VERSION.to_string())
            .header("Content-Type", "application/x-dmv-frames");
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let (runtime, stall_after) = (&self.runtime, self.stall_after);
        let moved = Arc::new(LastMoved::now());
        let sent = match body {
            None => {
                let mut buf = Vec::new();
                FrameWriter::new(&mut buf).message(request).map_err(|e| {
                    SyncError::Protocol(Violation::Unencodable {
                        detail: e.to_string(),
                    })
                })?;
                crate::trace::BYTES_SENT
                    .fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
                runtime.block_on(unless_stalled(req.body(buf).send(), &moved, stall_after))
            }
            Some(body) => {
                // The body is produced on another thread while this one sends
                // it, a piece at a time, so a 1 TB push never sits in memory.
                let (tx, rx) = tokio::sync::mpsc::channel(4);
                let ended = AtomicBool::new(false);
                let (sent, produced) = std::thread::scope(|s| {
                    let ended = &ended;
                    let on_our_side = moved.clone();
                    let producer = s.spawn(move || -> SyncResult<()> {
                        let mut out = Counting(BodyPieces {
                            tx,
                            piece: Vec::with_capacity(BODY_PIECE),
                            ended,
                            moved: &on_our_side,
                        });
                        let mut w = FrameWriter::new(&mut out as &mut dyn Write);
                        w.message(request).map_err(|e| {
                            SyncError::Transport(TransportError::Disconnected(e.to_string()))
                        })?;
                        body(&mut w)?;
                        w.flush().map_err(|e| {
                            SyncError::Transport(TransportError::Disconnected(e.to_string()))
                        })
                    });
                    let taken = moved.clone();
                    let stream = tokio_stream::StreamExt::map(
                        tokio_stream::wrappers::ReceiverStream::new(rx),
                        move |piece| {
                            taken.touch();
                            piece
                        },
                    );
                    let sent = runtime.block_on(unless_stalled(
                        req.body(reqwest::Body::wrap_stream(stream)).send(),
                        &moved,
                        stall_after,
                    ));
                    ended.store(true, Ordering::Release);
                    (sent, producer.join())
                });
                match produced {
                    Ok(Ok(())) => {}
                    // A local failure (say a damaged object) matters more than what it did to the request.
                    Ok(Err(
                        e @ (SyncError::Store(_) | SyncError::Repo(_) | SyncError::Local { .. }),
                    )) => return Err(e),
                    Ok(Err(_)) => {}
                    Err(_) => {
                        return Err(SyncError::Transport(TransportError::Disconnected(
                            "the upload thread panicked".into(),
                        )))
                    }
                }
                sent
            }
        };
        let stalled = || {
            SyncError::Transport(TransportError::Stalled {
                url: self.base.clone(),
                seconds: stall_after.as_secs(),
            })
        };
        let response = sent.ok_or_else(stalled)?.map_err(|e| {
            if e.is_connect() {
                SyncError::Transport(TransportError::Unreachable {
                    url: self.base.clone(),
                    detail: connect_detail(&e),
                })
            } else {
                SyncError::Transport(TransportError::Disconnected(root_cause(&e)))
            }
        })?;
        let status = response.status();
        if let Some(objects) = response
            .headers()
            .get(SEALED_HUB_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            return Err(SyncError::Transport(TransportError::SealedHub {
                url: self.base.clone(),
                objects: objects.to_string(),
            }));
        }
        if !status.is_success() {
            let text = runtime
                .block_on(async { tokio::time::timeout(stall_after, error_text(response)).await })
                .map_err(|_| stalled())?;
            let text = text.trim().to_string();
            return Err(match status.as_u16() {
                401 => SyncError::Transport(TransportError::TokenRefused {
                    url: self.base.clone(),
                    detail: text,
                }),
                403 => SyncError::Transport(TransportError::Auth {
                    url: self.base.clone(),
                    detail: text,
                }),
                404 => SyncError::Transport(TransportError::NotARepository {
                    url: self.base.clone(),
                    detail: text,
                }),
                _ => SyncError::Remote(format!("HTTP {status}: {text}")),
            });
        }
        // Unbuffered: the body's pieces are its buffer. A 1 MiB BufReader
        // over it was zeroed whole by its first read (the body has no
        // `read_buf`), 1 MiB of page faults per request: a fifth of the
        // CPU of a one-file get.
        Ok(FrameReader::new(Box::new(Counting(ResponseBody {
            url: &self.base,
            runtime,
            response,
            piece: bytes::Bytes::new(),
            stall_after,
        }))))
    }
}

/// POSTs `body` to `url` (`http://` or `https://`, trusting what a remote
/// trusts) with `headers`, once, within `timeout`; the answer's status, or
/// why there was none. What a server's webhooks send their events with.
pub fn post_once(
    url: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
    timeout: Duration,
) -> Result<u16, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .connect_timeout(timeout)
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("dmv/", env!("CARGO_PKG_VERSION")))
        .tls_backend_preconfigured(tls_config()?)
        .build()
        .map_err(|e| root_cause(&e))?;
    let mut request = client.post(url).body(body);
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    runtime.block_on(async move {
        request
            .send()
            .await
            .map(|r| r.status().as_u16())
            .map_err(|e| connect_detail(&e))
    })
}
