//! What `dmv serve` keeps while it runs, shared by the protocol and the web
//! UI: its configuration, the web logins, the ration of token guesses, the
//! memory that request bodies may hold at once, and who a request is from.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use tokio::sync::Semaphore;

use crate::bucket_views::BucketViews;
use crate::server_config::ServerConfig;
use crate::sessions::{GuessRation, SessionPlace, Sessions};
use crate::staging::StagedUploads;
use crate::webhooks::Webhooks;

/// Bytes of request bodies held in memory at once, over all connections:
/// past it a request is answered 503 rather than the server growing.
pub(crate) const BODY_BYTES_IN_FLIGHT: usize = 256 << 20;
/// Uploads (pushes) stored at once; more wait their turn.
pub(crate) const UPLOADS_AT_ONCE: usize = 16;
/// Waits for news (`WaitRefs`) one caller (a user, else an address) holds
/// open at once: a watcher holds one per repository, a person has a few
/// devices. Past it a wait is answered at once, as a poll: it costs the
/// server a refs listing, never a held request.
pub(crate) const WAITS_PER_CALLER: usize = 16;

pub(crate) struct ServerState {
    pub config: ServerConfig,
    pub sessions: Sessions,
    pub guesses: GuessRation,
    /// Permits are bytes of request bodies being held.
    pub body_bytes: Arc<Semaphore>,
    pub uploads: Arc<Semaphore>,
    /// Where the pack indexes of served buckets are mirrored for reading
    /// (removed when the server stops; each upload stages its packs in a folder of its own there).
    pub bucket_cache: Arc<tempfile::TempDir>,
    /// The views the web UI reads served buckets through.
    pub bucket_views: BucketViews,
    /// Files being uploaded from browsers, piece by piece.
    pub staged: StagedUploads,
    /// Waits for news held open, per caller.
    pub waits: Waits,
    /// Where events are POSTed, and what became of each delivery.
    pub webhooks: Webhooks,
}

/// How many waits for news each caller holds open (see [`WAITS_PER_CALLER`]).
#[derive(Default)]
pub(crate) struct Waits(Arc<Mutex<HashMap<String, usize>>>);

/// One wait held open, given back on drop.
pub(crate) struct WaitSlot {
    held: Arc<Mutex<HashMap<String, usize>>>,
    caller: String,
}

impl Waits {
    /// A slot for one more wait of `caller`'s; None past its share.
    pub fn take(&self, caller: String) -> Option<WaitSlot> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let count = held.entry(caller.clone()).or_default();
        if *count >= WAITS_PER_CALLER {
            return None;
        }
        *count += 1;
        Some(WaitSlot {
            held: self.0.clone(),
            caller,
        })
    }
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = held.get_mut(&self.caller) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.caller);
            }
        }
    }
}

/// The address a connection came from, put on each of its requests.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer(pub SocketAddr);

impl ServerState {
    /// The state of a server of `config`, its logins kept in `logins`.
    pub fn new(config: ServerConfig, logins: SessionPlace) -> std::io::Result<ServerState> {
        let sessions = Sessions::new(logins, config.session_lifetime());
        let bucket_cache = Arc::new(dmv_os::process_temp_dir("dmv-serve-buckets")?);
        Ok(ServerState {
            webhooks: Webhooks::new(config.webhooks.clone()),
            config,
            sessions,
            guesses: GuessRation::default(),
            body_bytes: Arc::new(Semaphore::new(BODY_BYTES_IN_FLIGHT)),
            uploads: Arc::new(Semaphore::new(UPLOADS_AT_ONCE)),
            bucket_views: BucketViews::new(bucket_cache.path().join("web-views")),
            bucket_cache,
            staged: StagedUploads::default(),
            waits: Waits::default(),
        })
    }

    fn is_trusted_proxy(&self, peer: Peer) -> bool {
        self.config.trusted_proxies.contains(&peer.0.ip())
    }

    /// The client's address: the connection's, or the last hop a trusted proxy names.
    pub fn client_ip(&self, peer: Peer, headers: &HeaderMap) -> IpAddr {
        let forwarded = || {
            headers
                .get("x-forwarded-for")?
                .to_str()
                .ok()?
                .rsplit(',')
                .next()?
                .trim()
                .parse()
                .ok()
        };
        match self.is_trusted_proxy(peer) {
            true => forwarded().unwrap_or(peer.0.ip()),
            false => peer.0.ip(),
        }
    }

    /// Whether the browser reached us over HTTPS (itself, or through a trusted proxy that says so).
    pub fn over_https(&self, peer: Peer, headers: &HeaderMap) -> bool {
        self.config.tls_cert.is_some()
            || (self.is_trusted_proxy(peer)
                && headers
                    .get("x-forwarded-proto")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|p| p.trim().eq_ignore_ascii_case("https")))
    }

    /// Whether a state-changing request comes from one of our own pages: a
    /// browser says where a request comes from (`Sec-Fetch-Site`, `Origin`),
    /// and a page of another site or port must not act with our cookie.
    /// Requests without either header come from programs, not pages.
    pub fn comes_from_our_pages(&self, peer: Peer, headers: &HeaderMap) -> bool {
        let header = |name: &str| {
            headers
                .get(name)
                .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
        };
        if let Some(site) = header("sec-fetch-site") {
            if site != "same-origin" && site != "none" {
                return false;
            }
        }
        let Some(origin) = header("origin") else {
            return true;
        };
        let Some(host) = header("host") else {
            return false;
        };
        let scheme = if self.over_https(peer, headers) {
            "https"
        } else {
            "http"
        };
        origin == format!("{scheme}://{host}")
    }
}
