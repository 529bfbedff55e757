//! The web UI over HTTP: the same server, tokens and repositories as the
//! protocol, with pages made by dmv-web. A browser logs in once with a
//! token (kept in an HttpOnly cookie); scripts may send it as a bearer
//! header. Reading a page needs a listed token unless the config says
//! `browse = "open"`; breaking a lock needs an admin token.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Form, Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use dmv_repo::Repository;
use dmv_web::{PageRequest, Reply, Viewer};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::channel::ChannelWriter;
use crate::server_config::{BrowseAccess, ServerConfig, TokenAccess};

const COOKIE: &str = "dmv_token";

/// The web UI's routes (the protocol's `POST /{repo}/dmv/{verb}` sits beside them).
pub(crate) fn routes() -> Router<Arc<ServerConfig>> {
    Router::new()
        .route("/", get(index))
        .route("/login", get(login_form).post(login))
        .route("/logout", get(logout))
        .route("/{repo}", get(to_repo_home))
        .route("/{repo}/", get(repo_home))
        .route("/{repo}/{*rest}", get(page))
        .route("/{repo}/locks/break", post(break_lock))
}

fn login_page(status: StatusCode, message: &str) -> Response {
    (status, Html(dmv_web::login_page(Some(message)))).into_response()
}

/// Who is browsing, from the bearer header or the login cookie; a missing
/// or unknown token gets the login page (401) and nothing of a repository.
// The refusal is the HTTP response itself, handed straight back to axum.
#[allow(clippy::result_large_err)]
fn viewer(config: &ServerConfig, headers: &HeaderMap) -> Result<Viewer, Response> {
    let bearer = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let cookie = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|c| c.trim().strip_prefix("dmv_token="));
    match bearer.or(cookie) {
        Some(token) => match config.token_access(token) {
            Some(entry) => Ok(Viewer { user: entry.user().map(str::to_string), admin: entry.access() == TokenAccess::Admin }),
            None => Err(login_page(StatusCode::UNAUTHORIZED, "That token is not valid here.")),
        },
        None if config.browse == BrowseAccess::Open => Ok(Viewer::default()),
        None => Err(login_page(StatusCode::UNAUTHORIZED, "Log in with a token to browse.")),
    }
}

async fn index(State(config): State<Arc<ServerConfig>>, headers: HeaderMap) -> Response {
    if let Err(refused) = viewer(&config, &headers) {
        return refused;
    }
    Html(dmv_web::index_page(&config.repos.keys().cloned().collect::<Vec<_>>())).into_response()
}

async fn login_form() -> Response {
    Html(dmv_web::login_page(None)).into_response()
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

async fn login(State(config): State<Arc<ServerConfig>>, Form(form): Form<LoginForm>) -> Response {
    let token = form.token.trim();
    if config.token_access(token).is_none() || !token.bytes().all(|b| b.is_ascii_graphic() && b != b';' && b != b',' && b != b'"') {
        return login_page(StatusCode::UNAUTHORIZED, "That token is not valid here.");
    }
    let secure = if config.tls_cert.is_some() { "; Secure" } else { "" };
    let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict{secure}");
    see_other("/", Some(cookie))
}

async fn logout() -> Response {
    see_other("/login", Some(format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")))
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
    see_other(&format!("/{}/", dmv_web_segment(&name)), None)
}

fn dmv_web_segment(name: &str) -> String {
    name.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

async fn repo_home(state: State<Arc<ServerConfig>>, UrlPath(name): UrlPath<String>, query: Query<BTreeMap<String, String>>, headers: HeaderMap) -> Response {
    serve_page(state, name, String::new(), query, headers).await
}

async fn page(state: State<Arc<ServerConfig>>, UrlPath((name, rest)): UrlPath<(String, String)>, query: Query<BTreeMap<String, String>>, headers: HeaderMap) -> Response {
    serve_page(state, name, rest, query, headers).await
}

async fn serve_page(State(config): State<Arc<ServerConfig>>, name: String, rest: String, Query(query): Query<BTreeMap<String, String>>, headers: HeaderMap) -> Response {
    let viewer = match viewer(&config, &headers) {
        Ok(v) => v,
        Err(refused) => return refused,
    };
    let Some(dir) = config.repos.get(&name).cloned() else {
        return (StatusCode::NOT_FOUND, Html(format!("no repository named {} here", html_text(&name)))).into_response();
    };
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok()).map(str::to_string);
    let answered = tokio::task::spawn_blocking(move || {
        let repo = Repository::open(&dir).map_err(|e| e.to_string())?;
        let reply = dmv_web::respond(&repo, &name, &PageRequest { path: &rest, query: &query, range: range.as_deref(), viewer: &viewer });
        Ok::<_, String>((reply, repo))
    })
    .await;
    let (reply, repo) = match answered {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => return (StatusCode::INTERNAL_SERVER_ERROR, Html(html_text(&e))).into_response(),
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, Html(html_text(&e.to_string()))).into_response(),
    };
    send(reply, repo)
}

fn html_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Sends a page, a picture, or file content streamed from the store.
fn send(reply: Reply, repo: Repository) -> Response {
    match reply {
        Reply::Html { status, body } => (StatusCode::from_u16(status).unwrap_or(StatusCode::OK), Html(body)).into_response(),
        // The id names the content: a version never changes.
        Reply::Jpeg(bytes) => {
            let len = bytes.len().to_string();
            ([(header::CONTENT_TYPE, "image/jpeg"), (header::CACHE_CONTROL, "private, max-age=31536000, immutable"), (header::CONTENT_LENGTH, len.as_str())], bytes).into_response()
        }
        Reply::Redirect(to) => see_other(&to, None),
        Reply::RangeNotSatisfiable { total } => (StatusCode::RANGE_NOT_SATISFIABLE, [(header::CONTENT_RANGE, format!("bytes */{total}"))]).into_response(),
        Reply::Content { id, content_type, start, len, total, partial, download } => {
            let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(8);
            tokio::task::spawn_blocking(move || {
                let mut out = ChannelWriter { tx, buf: Vec::new() };
                let written = dmv_web::write_content(&repo, &id, start, len, &mut out);
                if let Err(e) = written.and_then(|_| std::io::Write::flush(&mut out)) {
                    // The body ends short: the client sees the transfer fail.
                    let _ = out.tx.blocking_send(Err(e));
                }
            });
            let mut response = Response::new(Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)));
            let h = response.headers_mut();
            let value = |s: String| HeaderValue::from_str(&s).unwrap_or(HeaderValue::from_static("application/octet-stream"));
            h.insert(header::CONTENT_TYPE, value(content_type));
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=31536000, immutable"));
            if let Some(name) = download {
                let safe: String = name.chars().filter(|c| !c.is_control() && *c != '"' && *c != '\\').collect();
                h.insert(header::CONTENT_DISPOSITION, value(format!("attachment; filename=\"{safe}\"")));
            }
            if partial {
                h.insert(header::CONTENT_RANGE, value(format!("bytes {start}-{}/{total}", start + len - 1)));
                *response.status_mut() = StatusCode::PARTIAL_CONTENT;
            }
            response
        }
    }
}

#[derive(Deserialize)]
struct BreakForm {
    path: String,
}

async fn break_lock(State(config): State<Arc<ServerConfig>>, UrlPath(name): UrlPath<String>, headers: HeaderMap, Form(form): Form<BreakForm>) -> Response {
    let viewer = match viewer(&config, &headers) {
        Ok(v) => v,
        Err(refused) => return refused,
    };
    let Some(dir) = config.repos.get(&name).cloned() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let answered = tokio::task::spawn_blocking(move || {
        let repo = Repository::open(&dir).map_err(|e| e.to_string())?;
        Ok::<_, String>((dmv_web::break_lock(&repo, &name, &form.path, &viewer), repo))
    })
    .await;
    match answered {
        Ok(Ok((reply, repo))) => send(reply, repo),
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, Html(html_text(&e))).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, Html(html_text(&e.to_string()))).into_response(),
    }
}
