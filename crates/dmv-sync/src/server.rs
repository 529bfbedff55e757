//! `dmv serve`: repositories over HTTP (axum). Every request is
//! `POST /NAME/dmv/VERB`; the protocol work runs on blocking threads against
//! the repository, exactly as over ssh. See docs/server.md.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use dmv_repo::Repository;
use futures_util::TryStreamExt;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::frame::{decode_message, Frame, FrameReader, FrameWriter};
use crate::protocol::{Request, Response as WireResponse, Verb};
use crate::serve::handle;
use crate::{SyncError, SyncResult};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadAccess {
    /// Anyone who can reach the server may fetch and clone.
    #[default]
    Open,
    /// Fetching needs a token too (any token listed).
    Token,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenAccess {
    Read,
    Write,
}

/// The server's configuration file (TOML).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on, e.g. `127.0.0.1:8080` (the command line may override it).
    #[serde(default)]
    pub listen: Option<String>,
    #[serde(default)]
    pub read: ReadAccess,
    /// Repository name (the URL's path) → directory.
    pub repos: BTreeMap<String, PathBuf>,
    /// Token → what it allows. Pushing always needs a write token.
    #[serde(default)]
    pub tokens: BTreeMap<String, TokenAccess>,
}

impl ServerConfig {
    pub fn load(path: &Path) -> SyncResult<ServerConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| SyncError::ServerConfig { path: path.to_path_buf(), detail: e.to_string() })?;
        let mut config: ServerConfig = toml::from_str(&text).map_err(|e| SyncError::ServerConfig { path: path.to_path_buf(), detail: e.message().to_string() })?;
        // Repository paths are relative to the configuration file.
        let base = path.parent().unwrap_or(Path::new("."));
        for dir in config.repos.values_mut() {
            if dir.is_relative() {
                *dir = base.join(&*dir);
            }
        }
        if config.repos.is_empty() {
            return Err(SyncError::ServerConfig { path: path.to_path_buf(), detail: "no [repos] to serve".into() });
        }
        Ok(config)
    }

    /// Compares against every token in constant time per token, so timing
    /// does not reveal how much of a guess was right.
    fn token_access(&self, presented: &str) -> Option<TokenAccess> {
        let mut found = None;
        for (token, access) in &self.tokens {
            let (a, b) = (token.as_bytes(), presented.as_bytes());
            let mut diff = (a.len() != b.len()) as u8;
            for i in 0..a.len().max(b.len()) {
                diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
            }
            if diff == 0 {
                found = Some(*access);
            }
        }
        found
    }
}

fn plain(status: StatusCode, text: String) -> Response {
    (status, text + "\n").into_response()
}

/// Checks the request's token against what the verb needs.
// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
fn authorize(config: &ServerConfig, headers: &HeaderMap, verb: Verb) -> Result<(), Response> {
    let presented = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let access = match presented {
        Some(t) => match config.token_access(t) {
            Some(a) => Some(a),
            None => return Err(plain(StatusCode::FORBIDDEN, "the token is not valid for this server".into())),
        },
        None => None,
    };
    if verb.writes() {
        return match access {
            Some(TokenAccess::Write) => Ok(()),
            Some(TokenAccess::Read) => Err(plain(StatusCode::FORBIDDEN, "this token may read but not push".into())),
            None => Err(plain(StatusCode::UNAUTHORIZED, "pushing needs a write token".into())),
        };
    }
    if config.read == ReadAccess::Token && access.is_none() {
        return Err(plain(StatusCode::UNAUTHORIZED, "this server needs a token to read".into()));
    }
    Ok(())
}

/// Serves forever on `listen` (a `host:port`; port 0 picks a free one). The
/// chosen address is printed on stderr as `listening on http://ADDR`.
pub fn run(config: ServerConfig, listen: &str) -> SyncResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| SyncError::local("cannot start the server runtime", e))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| SyncError::local(format!("cannot listen on {listen}"), e))?;
        let addr = listener.local_addr().map_err(|e| SyncError::local(format!("cannot listen on {listen}"), e))?;
        eprintln!("dmv serve: listening on http://{addr}");
        let _ = std::io::stderr().flush();
        let app = Router::new().route("/{repo}/dmv/{verb}", post(rpc)).with_state(Arc::new(config));
        axum::serve(listener, app).await.map_err(|e| SyncError::Server(e.to_string()))
    })
}

async fn rpc(State(config): State<Arc<ServerConfig>>, UrlPath((name, verb)): UrlPath<(String, String)>, headers: HeaderMap, body: Body) -> Response {
    let Some(verb) = Verb::from_name(&verb) else {
        return plain(StatusCode::NOT_FOUND, format!("unknown request {verb}"));
    };
    let Some(path) = config.repos.get(&name).cloned() else {
        return plain(StatusCode::NOT_FOUND, format!("no repository named {name} here"));
    };
    if let Err(refused) = authorize(&config, &headers, verb) {
        return refused;
    }
    let stream = body.into_data_stream().map_err(std::io::Error::other);
    let reader = tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(stream));
    if verb == Verb::Put {
        // An upload is answered only once it has been read and stored whole.
        let task = tokio::task::spawn_blocking(move || {
            let mut answer = Vec::new();
            serve_request(&path, verb, reader, &mut answer);
            answer
        });
        return match task.await {
            Ok(answer) => Response::new(Body::from(answer)),
            Err(e) => plain(StatusCode::INTERNAL_SERVER_ERROR, format!("request failed: {e}")),
        };
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    tokio::task::spawn_blocking(move || {
        let mut out = ChannelWriter { tx, buf: Vec::new() };
        serve_request(&path, verb, reader, &mut out);
        let _ = out.flush();
    });
    Response::new(Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)))
}

/// One request against one repository; failures become an error frame.
fn serve_request(path: &Path, verb: Verb, reader: impl std::io::Read, out: &mut dyn Write) {
    let mut input = FrameReader::new(BufReader::with_capacity(1 << 20, reader));
    let mut output = FrameWriter::new(out);
    let result = (|| -> SyncResult<()> {
        let repo = Repository::open(path).map_err(|e| match e {
            dmv_repo::RepoError::NotARepository(_) | dmv_repo::RepoError::Io { .. } => SyncError::Remote("not a dmv repository".into()),
            other => SyncError::Remote(format!("not a dmv repository: {other}")),
        })?;
        let Some(Frame::Message(bytes)) = input.next_frame()? else {
            return Err(SyncError::Protocol("expected a request".into()));
        };
        let request: Request = decode_message(&bytes)?;
        if request.verb() != verb {
            return Err(SyncError::Protocol(format!("a {} request sent to the {} URL", request.verb().name(), verb.name())));
        }
        handle(&repo, true, request, &mut input, &mut output)
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

/// Streams what a blocking handler writes into the HTTP response body.
struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 256 << 10 {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
}
