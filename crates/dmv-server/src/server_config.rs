//! `dmv serve`'s configuration file: where the repositories are, who may
//! read, write and browse (tokens and their users), TLS and time limits.
//! See docs/server.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use dmv_repo::WriteGrant;
use dmv_sync::AddressError;
use dmv_sync::{SyncError, SyncResult};

use crate::tokens_file::{TokensFile, WatchedTokens, MAX_GROUPS_PER_TOKEN};

/// Who may fetch and clone: the config's `read`, `"open"` or `"token"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadAccess {
    /// Anyone who can reach the server may fetch and clone.
    #[default]
    Open,
    /// Fetching needs a token too (any token listed).
    Token,
}

pub use crate::tokens_file::TokenAccess;

/// What a token allows and whose it is: `"read"`, `"write"`, `"admin"`, or
/// `{ access = "write", user = "alice" }`. Locks need the user's name.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum TokenEntry {
    /// Just the access, `"read"`, `"write"` or `"admin"`: whose the token is
    /// is not known, so it cannot lock.
    Access(TokenAccess),
    /// The access and the user it is for.
    Named(NamedToken),
}

/// A token with its user: `{ access = "write", user = "alice" }`, and
/// optionally the person's `name` and `email` (the author of what they
/// upload from a browser).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedToken {
    /// What it allows.
    pub access: TokenAccess,
    /// Whose it is: the name locks are held under.
    pub user: String,
    /// The person's full name.
    #[serde(default)]
    pub name: Option<String>,
    /// The person's email.
    #[serde(default)]
    pub email: Option<String>,
    /// The paths the holder may change (`["art/**"]`), in `.dmvattributes`'s
    /// pattern syntax; none: every path. See [`dmv_repo::WriteGrant`].
    #[serde(default)]
    pub write: Option<Vec<String>>,
    /// The `[groups]` the holder is in: their grants and `write` unite.
    #[serde(default)]
    pub groups: Vec<String>,
}

impl TokenEntry {
    pub(crate) fn access(&self) -> TokenAccess {
        match self {
            TokenEntry::Access(a) | TokenEntry::Named(NamedToken { access: a, .. }) => *a,
        }
    }

    pub(crate) fn user(&self) -> Option<&str> {
        match self {
            TokenEntry::Access(_) => None,
            TokenEntry::Named(t) => Some(&t.user),
        }
    }

    /// Who authors what the holder commits from a browser: the full
    /// name, else the user.
    pub(crate) fn author_name(&self) -> Option<&str> {
        match self {
            TokenEntry::Access(_) => None,
            TokenEntry::Named(t) => t
                .name
                .as_deref()
                .filter(|n| !n.is_empty())
                .or(Some(&t.user)),
        }
    }

    pub(crate) fn email(&self) -> Option<&str> {
        match self {
            TokenEntry::Access(_) => None,
            TokenEntry::Named(t) => t.email.as_deref(),
        }
    }
}

/// A group of users, `[groups] artists = { write = ["art/**"] }`: the
/// paths its members may change (without `write`: every path).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    /// Patterns as a token's `write` takes them.
    #[serde(default)]
    pub write: Option<Vec<String>>,
}

/// `[groups]` in one configuration, at most.
pub const MAX_GROUPS: usize = 1000;

/// The server's configuration file (TOML).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on, e.g. `127.0.0.1:8080` (the command line may override it).
    #[serde(default)]
    pub listen: Option<String>,
    /// Who may fetch and clone (default: anyone who reaches the server).
    #[serde(default)]
    pub read: ReadAccess,
    /// Repository name (the URL's path) → directory, or bucket.
    pub repos: BTreeMap<String, RepoPlace>,
    /// Token → what it allows (and whose it is). Pushing always needs a write token.
    #[serde(default)]
    pub tokens: BTreeMap<String, TokenEntry>,
    /// A tokens file (relative: to this file) whose tokens count too, kept
    /// as hashes and read again when it changes, so tokens are added and
    /// revoked without a restart (see tokens_file.rs).
    #[serde(default)]
    pub tokens_file: Option<PathBuf>,
    /// `tokens_file` as the running server watches it.
    #[serde(skip)]
    watched_tokens: Option<Arc<WatchedTokens>>,
    /// PEM certificate chain; with `tls_key`, the server speaks HTTPS itself.
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// Seconds the server waits on a client that sends or takes nothing
    /// (default [`DEFAULT_IDLE_TIMEOUT_SECS`]).
    #[serde(default)]
    pub idle_timeout_secs: Option<u64>,
    /// Who may browse the web UI: "token" (default: any listed token, given
    /// at /login) or "open" (anyone who reaches the server).
    #[serde(default)]
    pub browse: BrowseAccess,
    /// One line on stderr per request: method, path, status, bytes.
    #[serde(default)]
    pub access_log: bool,
    /// Connections open at once (default `DEFAULT_MAX_CONNECTIONS`); at
    /// the bound, a new one closes the longest idle one.
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// Seconds a client has to send a whole request that is not an upload
    /// (default `DEFAULT_REQUEST_TIMEOUT_SECS`), however it trickles.
    #[serde(default)]
    pub request_timeout_secs: Option<u64>,
    /// Hours a web UI login lasts (default `DEFAULT_SESSION_HOURS`).
    #[serde(default)]
    pub session_hours: Option<u64>,
    /// The served repository (a directory or a bucket) that keeps the web
    /// logins, so they survive a restart and every server of it shares
    /// them (default: the first bucket by name, else the first directory).
    #[serde(default)]
    pub sessions: Option<String>,
    /// Bytes one user's open browser uploads may reserve together (default
    /// `DEFAULT_UPLOAD_BYTES_PER_USER`).
    #[serde(default)]
    pub upload_bytes_per_user: Option<u64>,
    /// Reverse proxies whose `X-Forwarded-For` and `X-Forwarded-Proto`
    /// are believed (the client's address and whether it came over HTTPS).
    #[serde(default)]
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Where each event (push, lock, unlock, upload, drop) is POSTed, signed.
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
    /// Group name → the paths its members may change.
    #[serde(default)]
    pub groups: BTreeMap<String, GroupConfig>,
    /// The command (program, then arguments) run before any branch or tag
    /// of any repository served moves; it may refuse the move.
    #[serde(default)]
    pub pre_receive: Option<Vec<String>>,
    /// Seconds `pre_receive` may run (default 60), then it is killed and
    /// the move refused.
    #[serde(default)]
    pub pre_receive_timeout_secs: Option<u64>,
}

/// Arguments of `pre_receive`, with its program, at most.
pub const MAX_HOOK_ARGS: usize = 64;

/// The events a webhook may ask for (`unlock` brings broken locks too).
pub const WEBHOOK_EVENTS: &[&str] = &[
    "push",
    "lock",
    "unlock",
    "break-lock",
    "upload",
    "drop",
    "mention",
];
/// Webhooks one server sends to at most.
pub const MAX_WEBHOOKS: usize = 16;
/// A webhook's URL and secret are at most this long.
pub const MAX_WEBHOOK_FIELD: usize = 1024;

/// One `[[webhooks]]` entry: where events go, the secret that signs them,
/// and which events (all by default).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// `http://` or `https://`.
    pub url: String,
    /// The key of each body's HMAC-SHA256 (`X-DMV-Signature-256`).
    pub secret: String,
    /// The events sent (default: every one).
    #[serde(default)]
    pub events: Option<Vec<String>>,
}

// The secret never reaches a log or an error.
impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &self.url)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

impl WebhookConfig {
    /// Whether events of `kind` go to this webhook.
    pub fn wants(&self, kind: &str) -> bool {
        self.events.as_ref().is_none_or(|events| {
            events
                .iter()
                .any(|e| e == kind || (e == "unlock" && kind == "break-lock"))
        })
    }

    /// Why this entry cannot be used, if it cannot.
    fn problem(&self) -> Option<String> {
        let url = &self.url;
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url.len() > MAX_WEBHOOK_FIELD
            || url.chars().any(|c| c.is_control() || c == ' ')
        {
            return Some(format!(
                "url {:?} is not an http:// or https:// URL of at most {MAX_WEBHOOK_FIELD} bytes",
                url.chars().take(80).collect::<String>()
            ));
        }
        if self.secret.is_empty() || self.secret.len() > MAX_WEBHOOK_FIELD {
            return Some(format!("its secret must be 1 to {MAX_WEBHOOK_FIELD} bytes"));
        }
        let unknown = self
            .events
            .iter()
            .flatten()
            .find(|e| !WEBHOOK_EVENTS.contains(&e.as_str()));
        unknown.map(|e| {
            format!(
                "unknown event {:?} (known: {})",
                e.chars().take(40).collect::<String>(),
                WEBHOOK_EVENTS.join(", ")
            )
        })
    }
}

/// Where a served repository is.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum RepoPlace {
    /// A repository's directory on this machine (relative: to the configuration file).
    Dir(PathBuf),
    /// A repository in an S3-compatible bucket, `{ url = "s3://bucket/prefix",
    /// endpoint = "http://host:port" }`: credentials come from the standard AWS
    /// variables and files, as for `s3://` remotes. Several servers may
    /// serve one bucket at once.
    Bucket {
        /// `s3://bucket[/prefix]`.
        url: String,
        /// The S3 endpoint (default: AWS_ENDPOINT_URL, else AWS).
        #[serde(default)]
        endpoint: Option<String>,
        /// The region (default: AWS_REGION, else us-east-1).
        #[serde(default)]
        region: Option<String>,
        /// Virtual-host-style addressing instead of path style.
        #[serde(default)]
        virtual_host_style: bool,
        /// A device key file (`dmv keys device` made one; relative: to the
        /// configuration file) that opens the repository if it is
        /// encrypted: the server reads it, the bucket holds only ciphertext.
        /// Without one an encrypted repository is refused, saying why.
        #[serde(default)]
        identity: Option<PathBuf>,
        /// Branches that move only by landing an approved review,
        /// `"main=1 release=2"` as a directory hub's `review.protect`.
        /// Every server of the bucket must say the same: the rule is
        /// theirs, not the bucket's.
        #[serde(default)]
        protect: Option<String>,
    },
    /// A repository this server cannot read, `{ sealed = "DIR" }`: the
    /// folder keeps what the clients of an encrypted remote sealed (they
    /// hold the key; the server checks tokens only). See sealed.rs.
    Sealed {
        /// The folder (relative: to the configuration file).
        sealed: PathBuf,
    },
}

impl RepoPlace {
    /// The directory, for a repository on this machine.
    pub fn dir(&self) -> Option<&Path> {
        match self {
            RepoPlace::Dir(dir) => Some(dir),
            RepoPlace::Bucket { .. } | RepoPlace::Sealed { .. } => None,
        }
    }

    /// A bucket's URL and how to reach it (its key file is read apart, at
    /// each use).
    pub(crate) fn bucket(&self) -> Option<(&str, dmv_sync::BucketOptions)> {
        match self {
            RepoPlace::Bucket {
                url,
                endpoint,
                region,
                virtual_host_style,
                ..
            } => Some((
                url,
                dmv_sync::BucketOptions {
                    endpoint: endpoint.clone(),
                    region: region.clone(),
                    virtual_host_style: *virtual_host_style,
                    ..Default::default()
                },
            )),
            RepoPlace::Dir(_) | RepoPlace::Sealed { .. } => None,
        }
    }
}

/// Who may browse the web UI: the config's `browse`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BrowseAccess {
    /// Anyone logged in (at /login) with a listed token.
    #[default]
    Token,
    /// Anyone who reaches the server.
    Open,
}

/// Long enough for a client on a slow link between two pieces of a
/// transfer, short enough that idle or stalled connections do not pile up.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 30;
/// A day: beyond that a timeout is a mistake (and deadlines must not overflow).
const MAX_IDLE_TIMEOUT_SECS: u64 = 24 * 3600;
/// Well under the 1024 files a process may open by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Requests other than uploads are a few hundred kilobytes at most.
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_SESSION_HOURS: u64 = 12;
/// A day's shoot of raws or an hour of 4K video, from one person at once;
/// beyond it one user could take the disk everyone else uploads to.
pub const DEFAULT_UPLOAD_BYTES_PER_USER: u64 = 64 << 30;
/// The largest `upload_bytes_per_user` taken: a pebibyte.
const MAX_UPLOAD_BYTES_PER_USER: u64 = 1 << 50;

impl ServerConfig {
    /// Reads the file at `path`, with relative paths in it taken from the
    /// file's folder. Fails with [`SyncError::ServerConfig`] when it cannot be
    /// read or parsed, serves no repository, or a limit is out of its range.
    pub fn load(path: &Path) -> SyncResult<ServerConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| SyncError::ServerConfig {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        let mut config: ServerConfig =
            toml::from_str(&text).map_err(|e| SyncError::ServerConfig {
                path: path.to_path_buf(),
                detail: e.message().to_string(),
            })?;
        // Repository paths are relative to the configuration file.
        let base = path.parent().unwrap_or(Path::new("."));
        let dirs = config.repos.values_mut().filter_map(|place| match place {
            RepoPlace::Dir(dir) => Some(dir),
            RepoPlace::Bucket { identity, .. } => identity.as_mut(),
            RepoPlace::Sealed { sealed } => Some(sealed),
        });
        for dir in dirs
            .chain(config.tls_cert.iter_mut())
            .chain(config.tls_key.iter_mut())
            .chain(config.tokens_file.iter_mut())
        {
            if dir.is_relative() {
                *dir = base.join(&*dir);
            }
        }
        let refuse = |detail: String| {
            Err(SyncError::ServerConfig {
                path: path.to_path_buf(),
                detail,
            })
        };
        for (name, place) in &config.repos {
            if let RepoPlace::Bucket {
                identity: Some(file),
                ..
            } = place
            {
                if let Err(e) = dmv_sync::read_identity(file) {
                    return refuse(format!("[repos] {name}: {e}"));
                }
            }
            if let RepoPlace::Bucket { url, .. } = place {
                if let Err(e) = dmv_sync::RemoteSpec::parse(url)
                    .map(|s| s.transport)
                    .and_then(|t| match t {
                        dmv_sync::Transport::S3(_) => Ok(()),
                        _ => Err(SyncError::Address(AddressError::BadUrl {
                            url: url.clone(),
                            why: "a repository in a bucket is s3://bucket[/prefix]".into(),
                        })),
                    })
                {
                    return refuse(format!("[repos] {name}: {e}"));
                }
            }
        }
        if config.repos.is_empty() {
            return refuse("no [repos] to serve".into());
        }
        for (name, place) in &config.repos {
            if let RepoPlace::Bucket {
                protect: Some(rule),
                ..
            } = place
            {
                if let Err(e) = dmv_repo::protected_branches("protect", Some(rule)) {
                    return refuse(format!("[repos] {name}: {e}"));
                }
            }
        }
        if let Some(command) = &mut config.pre_receive {
            if command.is_empty()
                || command.len() > MAX_HOOK_ARGS
                || command
                    .iter()
                    .any(|a| a.len() > MAX_WEBHOOK_FIELD || a.contains('\0'))
            {
                return refuse(format!(
                    "pre_receive: give the program and its arguments, 1 to {MAX_HOOK_ARGS} of at most {MAX_WEBHOOK_FIELD} bytes"
                ));
            }
            // A program named with a folder is a file (relative: to this
            // file); a bare name is looked for on PATH when it runs.
            let program = PathBuf::from(&command[0]);
            if command[0].contains('/') {
                let program = base.join(program);
                if !program.is_file() {
                    return refuse(format!("pre_receive: {} is not a file", program.display()));
                }
                command[0] = program.to_string_lossy().into_owned();
            }
        }
        if let Some(secs) = config
            .pre_receive_timeout_secs
            .filter(|s| !(1..=MAX_IDLE_TIMEOUT_SECS).contains(s))
        {
            return refuse(format!(
                "pre_receive_timeout_secs = {secs}: give between 1 and {MAX_IDLE_TIMEOUT_SECS} seconds"
            ));
        }
        if config.webhooks.len() > MAX_WEBHOOKS {
            return refuse(format!("more than {MAX_WEBHOOKS} [[webhooks]]"));
        }
        for (i, hook) in config.webhooks.iter().enumerate() {
            if let Some(problem) = hook.problem() {
                return refuse(format!("[[webhooks]] number {}: {problem}", i + 1));
            }
        }
        for (token, entry) in &config.tokens {
            if let TokenEntry::Named(t) = entry {
                let fields = [
                    ("user", Some(&t.user)),
                    ("name", t.name.as_ref()),
                    ("email", t.email.as_ref()),
                ];
                if let Err(e) = config.grant_of(t.write.as_deref(), &t.groups) {
                    let shown: String = token.chars().take(4).collect();
                    return refuse(format!("[tokens] {shown}…: {e}"));
                }
                for (what, value) in fields {
                    if value.is_some_and(|v| {
                        v.len() > crate::tokens_file::MAX_FIELD_BYTES
                            || v.chars().any(char::is_control)
                    }) {
                        let shown: String = token.chars().take(4).collect();
                        return refuse(format!(
                            "[tokens] {shown}…: its {what} is past {} bytes or holds a control character",
                            crate::tokens_file::MAX_FIELD_BYTES
                        ));
                    }
                }
            }
        }
        if config.groups.len() > MAX_GROUPS {
            return refuse(format!("more than {MAX_GROUPS} [groups]"));
        }
        for (name, group) in &config.groups {
            if let Some(Err(e)) = group.write.as_deref().map(WriteGrant::parse) {
                let shown: String = name.chars().take(40).collect();
                return refuse(format!("[groups] {shown:?}: {e}"));
            }
        }
        if let Some(file) = config.tokens_file.clone() {
            // A broken file, or one naming a group not here, is said at start, not at the first client.
            config.check_groups_of(&TokensFile::read(&file)?, &file)?;
            config.watched_tokens = Some(Arc::new(WatchedTokens::new(file)));
        }
        if let Some(secs) = config
            .idle_timeout_secs
            .filter(|s| !(1..=MAX_IDLE_TIMEOUT_SECS).contains(s))
        {
            return refuse(format!(
                "idle_timeout_secs = {secs}: give between 1 and {MAX_IDLE_TIMEOUT_SECS} seconds"
            ));
        }
        if let Some(secs) = config
            .request_timeout_secs
            .filter(|s| !(1..=MAX_IDLE_TIMEOUT_SECS).contains(s))
        {
            return refuse(format!(
                "request_timeout_secs = {secs}: give between 1 and {MAX_IDLE_TIMEOUT_SECS} seconds"
            ));
        }
        if let Some(n) = config
            .max_connections
            .filter(|n| !(4..=1_000_000).contains(n))
        {
            return refuse(format!("max_connections = {n}: give between 4 and 1000000"));
        }
        if let Some(h) = config.session_hours.filter(|h| !(1..=24 * 365).contains(h)) {
            return refuse(format!(
                "session_hours = {h}: give between 1 and {}",
                24 * 365
            ));
        }
        if let Some(name) = &config.sessions {
            if config
                .repos
                .get(name)
                .is_none_or(|p| matches!(p, RepoPlace::Sealed { .. }))
            {
                return refuse(format!(
                    "sessions = {name:?}: name a repository this server reads (a directory or a bucket)"
                ));
            }
        }
        if let Some(n) = config
            .upload_bytes_per_user
            .filter(|n| !(1..=MAX_UPLOAD_BYTES_PER_USER).contains(n))
        {
            return refuse(format!(
                "upload_bytes_per_user = {n}: give between 1 and {MAX_UPLOAD_BYTES_PER_USER}"
            ));
        }
        Ok(config)
    }

    /// The configuration of `dmv serve PATH…` without a file: these
    /// repositories (URL name → directory), readable and browsable with a
    /// token of `tokens_file` only, every other setting its default.
    /// Fails when the tokens file cannot be read or is invalid, or names a group.
    pub fn for_repos(
        repos: BTreeMap<String, PathBuf>,
        tokens_file: PathBuf,
    ) -> SyncResult<ServerConfig> {
        let file = TokensFile::read(&tokens_file)?;
        let config = ServerConfig {
            listen: None,
            read: ReadAccess::Token,
            repos: repos
                .into_iter()
                .map(|(k, v)| (k, RepoPlace::Dir(v)))
                .collect(),
            tokens: BTreeMap::new(),
            watched_tokens: Some(Arc::new(WatchedTokens::new(tokens_file.clone()))),
            tokens_file: Some(tokens_file),
            tls_cert: None,
            tls_key: None,
            idle_timeout_secs: None,
            browse: BrowseAccess::Token,
            access_log: false,
            max_connections: None,
            request_timeout_secs: None,
            session_hours: None,
            sessions: None,
            upload_bytes_per_user: None,
            trusted_proxies: Vec::new(),
            webhooks: Vec::new(),
            pre_receive: None,
            pre_receive_timeout_secs: None,
            groups: BTreeMap::new(),
        };
        // Without a configuration there are no groups to be in.
        config.check_groups_of(
            &file,
            config.tokens_file.as_deref().unwrap_or(Path::new("")),
        )?;
        Ok(config)
    }

    /// Whether the file at `path` may be read by accounts other than its
    /// owner (its tokens are secrets: `chmod 600` it). Windows keeps access
    /// in ACLs, which this does not read: there it says no.
    pub fn readable_by_others(path: &Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| cfg!(unix) && dmv_os::mode_of(&m) & 0o077 != 0)
    }

    /// The branches the servers of bucket repository `repo` protect
    /// (none for a directory: it keeps its own rule; checked at start).
    pub(crate) fn bucket_protects_for(&self, repo: &str) -> Arc<BTreeMap<String, u32>> {
        let rule = match self.repos.get(repo) {
            Some(RepoPlace::Bucket { protect, .. }) => protect.as_deref(),
            _ => None,
        };
        Arc::new(dmv_repo::protected_branches("protect", rule).unwrap_or_default())
    }

    /// The pre-receive hook as the requests to repository `repo` run it.
    pub(crate) fn pre_receive_for(&self, repo: &str) -> Option<Arc<dmv_sync::PreReceive>> {
        let command = self.pre_receive.clone()?;
        Some(Arc::new(dmv_sync::PreReceive {
            command,
            timeout: self
                .pre_receive_timeout_secs
                .map_or(dmv_sync::DEFAULT_HOOK_TIMEOUT, Duration::from_secs),
            repository: repo.to_string(),
        }))
    }

    /// The paths `entry`'s holder may change: everything for a token
    /// without a user; else its own `write` list united with its groups'
    /// (a group without one grants everything), everything when it has
    /// neither. A grant that cannot be made (a group gone from a tokens
    /// file's view since start; checked at start, so never otherwise)
    /// grants nothing.
    pub(crate) fn write_grant(&self, entry: &TokenEntry) -> WriteGrant {
        match entry {
            TokenEntry::Access(_) => WriteGrant::everything(),
            TokenEntry::Named(t) => self
                .grant_of(t.write.as_deref(), &t.groups)
                .unwrap_or_else(|_| WriteGrant::nothing()),
        }
    }

    /// The grant of a token's own `write` (None: none given) and its
    /// `groups`: one line naming what is wrong when it cannot be made.
    pub(crate) fn grant_of(
        &self,
        own: Option<&[String]>,
        groups: &[String],
    ) -> Result<WriteGrant, String> {
        if groups.is_empty() {
            return own.map_or(Ok(WriteGrant::everything()), WriteGrant::parse);
        }
        if groups.len() > MAX_GROUPS_PER_TOKEN {
            return Err(format!(
                "in {} groups, past the {MAX_GROUPS_PER_TOKEN} allowed",
                groups.len()
            ));
        }
        let mut patterns: Vec<String> = own.unwrap_or_default().to_vec();
        let mut everything = false;
        for name in groups {
            let Some(group) = self.groups.get(name) else {
                let shown: String = name.chars().take(40).collect();
                return Err(format!("no group {shown:?} in [groups]"));
            };
            match &group.write {
                None => everything = true,
                Some(list) => patterns.extend(list.iter().cloned()),
            }
        }
        if everything {
            return Ok(WriteGrant::everything());
        }
        // Two groups granting one folder count it once against the bound.
        let mut seen = std::collections::HashSet::new();
        patterns.retain(|p| seen.insert(p.clone()));
        WriteGrant::parse(&patterns)
    }

    /// Refuses a tokens file naming a group this configuration lacks.
    fn check_groups_of(&self, file: &TokensFile, path: &Path) -> SyncResult<()> {
        for t in &file.tokens {
            if let Err(e) = self.grant_of(t.write.as_deref(), &t.groups) {
                return Err(SyncError::ServerConfig {
                    path: path.to_path_buf(),
                    detail: format!("token {}: {e}", t.id),
                });
            }
        }
        Ok(())
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        Duration::from_secs(
            self.request_timeout_secs
                .unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS),
        )
    }

    pub(crate) fn max_connections(&self) -> usize {
        self.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS)
    }

    pub(crate) fn upload_bytes_per_user(&self) -> u64 {
        self.upload_bytes_per_user
            .unwrap_or(DEFAULT_UPLOAD_BYTES_PER_USER)
    }

    pub(crate) fn session_lifetime(&self) -> Duration {
        Duration::from_secs(self.session_hours.unwrap_or(DEFAULT_SESSION_HOURS) * 3600)
    }

    pub(crate) fn idle_timeout(&self) -> Duration {
        Duration::from_secs(
            self.idle_timeout_secs
                .unwrap_or(DEFAULT_IDLE_TIMEOUT_SECS)
                .clamp(1, MAX_IDLE_TIMEOUT_SECS),
        )
    }

    /// The token's entry: from `[tokens]`, else from the tokens file as it
    /// is now. Hashes are compared, every one, each in constant time, so
    /// timing does not reveal how much of a guess was right.
    pub(crate) fn token_access(&self, presented: &str) -> Option<TokenEntry> {
        self.token_access_by_hash(&blake3::hash(presented.as_bytes()))
    }

    /// The users its tokens name, in the config and in the tokens file
    /// (as it reads now): the people a comment can mention.
    pub(crate) fn people(&self) -> std::collections::BTreeSet<String> {
        let mut people: std::collections::BTreeSet<String> = self
            .tokens
            .values()
            .filter_map(|t| t.user().map(str::to_string))
            .collect();
        if let Some(watched) = &self.watched_tokens {
            people.extend(watched.current().tokens.iter().map(|t| t.user.clone()));
        }
        people
    }

    /// [`Self::token_access`] for the token whose BLAKE3 hash is `hash`
    /// (all a web login keeps of it): the configured tokens are hashed and
    /// every one compared, each in constant time (`blake3::Hash`'s equality).
    pub(crate) fn token_access_by_hash(&self, hash: &blake3::Hash) -> Option<TokenEntry> {
        let mut found = None;
        for (token, access) in &self.tokens {
            if blake3::hash(token.as_bytes()) == *hash {
                found = Some(access.clone());
            }
        }
        if found.is_some() {
            return found;
        }
        let watched = self.watched_tokens.as_ref()?;
        let file = watched.current();
        file.lookup_hash(hash).map(|t| {
            TokenEntry::Named(NamedToken {
                access: t.access,
                user: t.user.clone(),
                name: t.name.clone(),
                email: t.email.clone(),
                write: t.write.clone(),
                groups: t.groups.clone(),
            })
        })
    }
}

#[cfg(test)]
mod protect_tests {
    use super::*;

    fn load(protect: &str) -> Result<ServerConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.toml");
        std::fs::write(
            &path,
            format!(
                "[repos]\nshoot = {{ url = \"s3://studio/shoot\", protect = \"{protect}\" }}\n"
            ),
        )
        .unwrap();
        ServerConfig::load(&path).map_err(|e| e.to_string())
    }

    #[test]
    fn a_buckets_protect_rule_is_held_to_the_review_protect_bounds() {
        let config = load("main=1 release=2").unwrap();
        let rule = config.bucket_protects_for("shoot");
        assert_eq!(rule.get("main"), Some(&1));
        assert_eq!(rule.get("release"), Some(&2));
        assert!(config.bucket_protects_for("elsewhere").is_empty());
        let many: Vec<String> = (0..65).map(|i| format!("b{i}=1")).collect();
        for bad in ["main=0", "main=65", "main", "..=1", many.join(" ").as_str()] {
            let refused = load(bad).err().unwrap_or_else(|| panic!("{bad} was taken"));
            assert!(
                refused.contains("[repos] shoot") && !refused.contains('\n'),
                "{bad}: {refused}"
            );
        }
    }
}
