//! Where a remote is, and opening a connection to it.

use std::path::PathBuf;
use std::time::Duration;

use crate::serving::in_process::InProcessWire;
#[cfg(feature = "s3")]
use crate::transport::bucket_remote::BucketRemote;
use crate::transport::client::Client;
#[cfg(feature = "http")]
use crate::transport::http_client::HttpWire;
use crate::transport::remote::Remote;
use crate::transport::stdio::StdioWire;
use crate::AddressError;
use crate::TransportError;
use crate::{SyncError, SyncResult};

/// What carries the requests to a remote, from its URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A repository on this machine (served by a child `dmv serve --stdio`).
    Path(PathBuf),
    /// `ssh://[user@]host[:port]/path`: `dmv serve --stdio` on the far side.
    Ssh {
        /// The user to log in as (`None`: ssh's default).
        user: Option<String>,
        /// The host, as ssh takes it (a name in ssh_config works).
        host: String,
        /// The port (`None`: ssh's default).
        port: Option<u16>,
        /// The repository's path on the host, from the `/` after the host.
        path: String,
    },
    /// `http(s)://host[:port]/NAME`: a `dmv serve` server.
    Http {
        /// The URL without a trailing `/`: requests go to `BASE/dmv/VERB`.
        base: String,
    },
    /// `s3://bucket[/prefix]`: an S3-compatible object store.
    #[cfg(feature = "s3")]
    S3(dmv_bucket::BucketUrl),
    /// `s3://...` in a build without object-storage remotes: refused when opened.
    #[cfg(not(feature = "s3"))]
    S3LeftOut,
}

/// How a repository on this machine is served to us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalServer {
    /// A child process running this program as `dmv serve --stdio PATH`
    /// (the `dmv` command line: the server side gets its own process, like
    /// `git upload-pack`). Only a program that is `dmv` can choose it.
    ChildProcess,
    /// A thread of this process: the default, so a front end that is not
    /// the `dmv` binary (an embedding application, a test) never starts
    /// itself as a server.
    InProcess,
}

/// Whether this program chose [`LocalServer::ChildProcess`] as its default.
static CHILD_PROCESS_BY_DEFAULT: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

impl LocalServer {
    /// Makes this the default of every remote this process connects to
    /// from now on (the `dmv` binary chooses child processes at start).
    pub fn make_default(self) {
        CHILD_PROCESS_BY_DEFAULT.store(
            self == LocalServer::ChildProcess,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

impl Default for LocalServer {
    fn default() -> LocalServer {
        match CHILD_PROCESS_BY_DEFAULT.load(std::sync::atomic::Ordering::Relaxed) {
            true => LocalServer::ChildProcess,
            false => LocalServer::InProcess,
        }
    }
}

/// A remote's URL and how to connect to it: what [`parse`](Self::parse)
/// reads from the URL, and what a remote's configuration adds.
#[derive(Clone, Debug)]
pub struct RemoteSpec {
    /// The URL as given.
    pub url: String,
    /// What carries the requests.
    pub transport: Transport,
    /// Bearer token for HTTP.
    pub token: Option<String>,
    /// The dmv command on the far side of ssh.
    pub remote_dmv: Option<String>,
    /// Endpoint, region and addressing of an object store.
    #[cfg(feature = "s3")]
    pub bucket: dmv_bucket::BucketOptions,
    /// Where an object-store remote's pack indexes are mirrored (default: a
    /// temporary directory, downloaded again next time).
    pub cache_dir: Option<PathBuf>,
    /// Pushing may create the repository in an empty object-store location,
    /// with these chunking parameters.
    pub create_with: Option<dmv_repo::store::ChunkParams>,
    /// How a local path is served.
    pub local_server: LocalServer,
    /// How long the remote may go without answering (or without taking
    /// what is sent) before it is abandoned as stalled.
    pub stall_after: Duration,
    /// The same remote's other URLs, tried in turn when one does not answer.
    pub other_urls: Vec<String>,
    /// A URL another replica published (its card in the location log): no
    /// credential of this user goes with it, not even `DMV_TOKEN`.
    pub stranger: bool,
}

/// How long a remote may go without answering when nothing sets
/// `remote.timeout`: long enough for a server to seal and sync a pack, short
/// enough that a frozen one is left for the next copy in well under a minute.
pub const DEFAULT_STALL_AFTER: Duration = Duration::from_secs(30);

/// `remote.timeout` of the global settings, else [`DEFAULT_STALL_AFTER`].
fn global_stall_after() -> Duration {
    dmv_repo::GlobalSettings::load()
        .ok()
        .and_then(|g| g.remote_timeout)
        .map_or(DEFAULT_STALL_AFTER, |s| Duration::from_secs(s.into()))
}

impl RemoteSpec {
    /// Reads a URL: `ssh://`, `http(s)://`, `s3://`, `file://` or a path.
    /// The rest of the spec is left at its default. Fails with
    /// [`SyncError::Address(AddressError::BadUrl)`] on anything else.
    pub fn parse(url: &str) -> SyncResult<RemoteSpec> {
        let bad = |why: &str| {
            SyncError::Address(AddressError::BadUrl {
                url: url.to_string(),
                why: why.to_string(),
            })
        };
        let transport = if let Some(rest) = url.strip_prefix("ssh://") {
            let (authority, path) = rest.split_at(
                rest.find('/')
                    .ok_or_else(|| bad("ssh:// needs a path after the host"))?,
            );
            let (user, hostport) = match authority.rsplit_once('@') {
                Some((u, h)) => (Some(u.to_string()), h),
                None => (None, authority),
            };
            let (host, port) = match hostport.rsplit_once(':') {
                Some((h, p)) => (
                    h,
                    Some(
                        p.parse::<u16>()
                            .map_err(|_| bad("the port is not a number"))?,
                    ),
                ),
                None => (hostport, None),
            };
            if host.is_empty() || host.starts_with('-') {
                return Err(bad("missing or invalid host"));
            }
            // ssh would take `-oProxyCommand=…@host` as an option (URLs reach us from peers' cards too).
            if user.as_deref().is_some_and(|u| {
                u.is_empty()
                    || u.starts_with('-')
                    || u.chars().any(|c| c.is_whitespace() || c.is_control())
            }) {
                return Err(bad(
                    "invalid user (it may not be empty, begin with '-' or hold spaces)",
                ));
            }
            if path.len() < 2 {
                return Err(bad("ssh:// needs a path after the host"));
            }
            Transport::Ssh {
                user,
                host: host.to_string(),
                port,
                path: path.to_string(),
            }
        } else if url.starts_with("http://") || url.starts_with("https://") {
            let base = url.trim_end_matches('/').to_string();
            let after_scheme = &base[base.find("://").map_or(0, |i| i + 3)..];
            if !after_scheme.contains('/') {
                return Err(bad(
                    "an HTTP remote names a repository: http://host:port/NAME",
                ));
            }
            Transport::Http { base }
        } else if url.starts_with("s3://") {
            #[cfg(feature = "s3")]
            let s3 = Transport::S3(dmv_bucket::BucketUrl::parse(url)?);
            #[cfg(not(feature = "s3"))]
            let s3 = Transport::S3LeftOut;
            s3
        } else if let Some(path) = url.strip_prefix("file://") {
            Transport::Path(PathBuf::from(path))
        } else if url.contains("://") {
            return Err(bad(
                "unknown scheme (use a path, ssh://, http:// or https://)",
            ));
        } else {
            Transport::Path(PathBuf::from(url))
        };
        Ok(RemoteSpec {
            url: url.to_string(),
            transport,
            token: None,
            remote_dmv: None,
            #[cfg(feature = "s3")]
            bucket: Default::default(),
            cache_dir: None,
            create_with: None,
            local_server: LocalServer::default(),
            stall_after: global_stall_after(),
            other_urls: Vec::new(),
            stranger: false,
        })
    }

    /// Every URL of the remote, each as a spec of its own (the first: this one).
    pub fn each_url(&self) -> SyncResult<Vec<RemoteSpec>> {
        let mut specs = vec![RemoteSpec {
            other_urls: Vec::new(),
            ..self.clone()
        }];
        for url in &self.other_urls {
            let transport = RemoteSpec::parse(url)?.transport;
            specs.push(RemoteSpec {
                url: url.clone(),
                transport,
                other_urls: Vec::new(),
                ..self.clone()
            });
        }
        Ok(specs)
    }

    /// Connects at the first of the remote's URLs that answers, in the
    /// order listed (see [`RemoteSpec::connect_here`]); when none does, the
    /// last one's error.
    pub fn connect(&self) -> SyncResult<Box<dyn Remote>> {
        connect_first(self.each_url()?, &mut |_, _| {})
    }

    /// Connects at this URL only: to a DMV server (through a child process, ssh or HTTP),
    /// checking both sides speak the same protocol; or to an object store.
    pub fn connect_here(&self) -> SyncResult<Box<dyn Remote>> {
        let wire: Box<dyn crate::transport::client::Wire> = match &self.transport {
            Transport::Path(path) if self.local_server == LocalServer::InProcess => {
                Box::new(InProcessWire::open(path, &self.url)?)
            }
            Transport::Path(path) => Box::new(StdioWire::spawn(
                crate::transport::stdio::local_serve_command(path)?,
                &self.url,
                self.stall_after,
            )?),
            Transport::Ssh {
                user,
                host,
                port,
                path,
            } => {
                let remote_dmv = std::env::var("DMV_REMOTE_DMV")
                    .ok()
                    .or_else(|| self.remote_dmv.clone())
                    .unwrap_or_else(|| "dmv".into());
                Box::new(StdioWire::spawn(
                    crate::transport::ssh::serve_command(
                        user.as_deref(),
                        host,
                        *port,
                        path,
                        &remote_dmv,
                    ),
                    &self.url,
                    self.stall_after,
                )?)
            }
            #[cfg(not(feature = "http"))]
            Transport::Http { .. } => {
                return Err(SyncError::Transport(TransportError::TransportLeftOut {
                    url: self.url.clone(),
                    transport: "HTTP",
                }))
            }
            #[cfg(feature = "http")]
            Transport::Http { base } => {
                let token = self.http_token();
                let wire = Box::new(HttpWire::new(base, token.clone(), self.stall_after)?);
                match Client::connect(wire, &self.url) {
                    // A server that keeps the repository sealed: its
                    // objects are read and written here, as a bucket's.
                    #[cfg(feature = "s3")]
                    Err(SyncError::Transport(TransportError::SealedHub { objects, .. })) => {
                        let hub = dmv_bucket::SealedHub { objects, token };
                        let bucket = self.open_bucket(Some(hub), self.create_with)?;
                        return Ok(Box::new(BucketRemote::new(bucket)));
                    }
                    connected => return Ok(Box::new(self.reached(connected)?)),
                }
            }
            #[cfg(not(feature = "s3"))]
            Transport::S3LeftOut => {
                return Err(SyncError::Transport(TransportError::TransportLeftOut {
                    url: self.url.clone(),
                    transport: "object-storage",
                }))
            }
            #[cfg(feature = "s3")]
            Transport::S3(_) => {
                let bucket = self.open_bucket(None, self.create_with)?;
                return Ok(Box::new(BucketRemote::new(bucket)));
            }
        };
        Ok(Box::new(self.reached(Client::connect(wire, &self.url))?))
    }

    /// The token an HTTP request carries: `DMV_TOKEN`, else the remote's;
    /// none to a stranger's URL.
    #[cfg(feature = "http")]
    fn http_token(&self) -> Option<String> {
        match self.stranger {
            true => None,
            false => std::env::var("DMV_TOKEN")
                .ok()
                .filter(|t| !t.is_empty())
                .or_else(|| self.token.clone()),
        }
    }

    /// A connection made, or why not (a wire lost before any answer: the
    /// remote was not reached).
    fn reached(&self, connected: SyncResult<Client>) -> SyncResult<Client> {
        connected.map_err(|e| match e {
            SyncError::Transport(TransportError::Disconnected(detail)) => {
                SyncError::Transport(TransportError::Unreachable {
                    url: self.url.clone(),
                    detail,
                })
            }
            other => other,
        })
    }

    /// The repository in an object store: a bucket, or the objects of a
    /// server that keeps it sealed (`hub`), made with `create_with` if
    /// there is none yet.
    #[cfg(feature = "s3")]
    pub(crate) fn open_bucket(
        &self,
        hub: Option<dmv_bucket::SealedHub>,
        create_with: Option<dmv_repo::store::ChunkParams>,
    ) -> SyncResult<dmv_bucket::Bucket> {
        let options = dmv_bucket::BucketOptions {
            stall_after: Some(self.stall_after),
            keys: super::device_keys::with_device_keys(self.bucket.keys.clone())?,
            hub,
            ..self.bucket.clone()
        };
        Ok(dmv_bucket::Bucket::open(
            &self.url,
            &options,
            self.cache_dir.as_deref(),
            create_with,
        )?)
    }

    /// The objects of the repository, if its server keeps it sealed (an
    /// HTTP remote whose server says so when greeted).
    #[cfg(all(feature = "s3", feature = "http"))]
    pub(crate) fn sealed_hub(&self) -> SyncResult<Option<dmv_bucket::SealedHub>> {
        let Transport::Http { base } = &self.transport else {
            return Ok(None);
        };
        let token = self.http_token();
        let wire = Box::new(HttpWire::new(base, token.clone(), self.stall_after)?);
        match Client::connect(wire, &self.url) {
            Err(SyncError::Transport(TransportError::SealedHub { objects, .. })) => {
                Ok(Some(dmv_bucket::SealedHub { objects, token }))
            }
            connected => self.reached(connected).map(|_| None),
        }
    }
}

/// Connects at the first of `urls` (specs of one remote) that answers,
/// telling `attempt` of each: how long connecting took, or why it failed.
/// A failure other than the remote's own ends the search; when every URL
/// fails, the last one's error.
pub(crate) fn connect_first(
    urls: Vec<RemoteSpec>,
    attempt: &mut dyn FnMut(&RemoteSpec, Result<Duration, &SyncError>),
) -> SyncResult<Box<dyn Remote>> {
    let mut failed = SyncError::Address(AddressError::NoSuchRemote {
        name: "(a remote without a URL)".into(),
    });
    for spec in urls {
        let start = std::time::Instant::now();
        match spec.connect_here() {
            Ok(remote) => {
                attempt(&spec, Ok(start.elapsed()));
                return Ok(remote);
            }
            Err(e) if e.is_remote_failure() => {
                attempt(&spec, Err(&e));
                failed = e;
            }
            Err(e) => return Err(e),
        }
    }
    Err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build without the optional transports reads their URLs but
    /// refuses them when connecting, naming the URL (`scripts/test` runs
    /// this with `--no-default-features`).
    #[cfg(not(all(feature = "http", feature = "s3")))]
    #[test]
    fn a_remote_whose_transport_the_build_leaves_out_is_refused_when_connecting() {
        let left_out = [
            (!cfg!(feature = "http"), "http://127.0.0.1:1/shoot", "HTTP"),
            (
                !cfg!(feature = "s3"),
                "s3://photos/studio",
                "object-storage",
            ),
        ];
        for (_, url, what) in left_out.into_iter().filter(|(out, _, _)| *out) {
            let err = RemoteSpec::parse(url).unwrap().connect().err().unwrap();
            assert!(
                matches!(&err, SyncError::Transport(TransportError::TransportLeftOut { transport, .. }) if *transport == what),
                "{err}"
            );
            assert_eq!(
                err.to_string(),
                format!("{url}: this build of dmv cannot reach {what} remotes")
            );
        }
    }

    #[test]
    fn parses_every_kind_of_remote() {
        let t = |u: &str| RemoteSpec::parse(u).map(|r| r.transport);
        assert_eq!(
            t("ssh://alice@host:2222/srv/repo").unwrap(),
            Transport::Ssh {
                user: Some("alice".into()),
                host: "host".into(),
                port: Some(2222),
                path: "/srv/repo".into()
            }
        );
        assert_eq!(
            t("ssh://host/r").unwrap(),
            Transport::Ssh {
                user: None,
                host: "host".into(),
                port: None,
                path: "/r".into()
            }
        );
        assert_eq!(
            t("http://127.0.0.1:8080/photos/").unwrap(),
            Transport::Http {
                base: "http://127.0.0.1:8080/photos".into()
            }
        );
        assert_eq!(t("../other").unwrap(), Transport::Path("../other".into()));
        assert_eq!(
            t("file:///srv/x").unwrap(),
            Transport::Path("/srv/x".into())
        );
        #[cfg(feature = "s3")]
        assert_eq!(
            t("s3://photos/studio").unwrap(),
            Transport::S3(dmv_bucket::BucketUrl {
                bucket: "photos".into(),
                prefix: "studio".into()
            })
        );
        for bad in [
            "ssh://host",
            "ssh://host:x/r",
            "ssh://-oProxyCommand=x/r",
            "ssh://-oProxyCommand=x@h/p",
            "ssh://@h/p",
            "ssh://a b@h/p",
            "http://host:80",
            "ftp://x/y",
            // A bucket's name is checked where buckets are known (the s3 feature).
            if cfg!(feature = "s3") {
                "s3://B/p"
            } else {
                "ftp://B/p"
            },
        ] {
            assert!(t(bad).is_err(), "{bad} should be refused");
        }
    }
}
