//! Where a bucket is and how to reach it: the `s3://` URL, the endpoint
//! options, and the connection (an opendal operator with its retries and
//! timeouts, and the I/O runtime its requests run on).
//!
//! SIGPIPE: the HTTP client writes to its sockets with `writev`, which
//! cannot ask for `MSG_NOSIGNAL` as `send` does, so a store that goes away
//! mid-request raises SIGPIPE, and under the default disposition (the
//! CLI's choice) that kills the process. The library leaves the process's
//! disposition alone: every request runs on the runtime's own threads,
//! which block SIGPIPE (it is sent to the writing thread), so the write
//! fails with EPIPE and the push reports the store as unreachable.

use std::future::Future;
use std::time::Duration;

use opendal::layers::{RetryLayer, TimeoutLayer};
use opendal::Operator;

use crate::error::{BucketError, BucketResult, Target};

/// Requests in flight when many are independent (index downloads, ranged GETs).
pub(crate) const READS_IN_FLIGHT: usize = 6;

/// `s3://bucket[/prefix]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketUrl {
    /// The bucket's name.
    pub bucket: String,
    /// The repository's place in the bucket, without slashes at either end ("" for the root).
    pub prefix: String,
}

impl BucketUrl {
    /// Checks the URL: `s3://`, a valid bucket name, and a prefix without
    /// empty, `.` or `..` parts.
    pub fn parse(url: &str) -> BucketResult<BucketUrl> {
        let bad = |why: &'static str| BucketError::BadUrl {
            url: url.to_string(),
            why,
        };
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| bad("it must start with s3://"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !bucket.starts_with(['-', '.'])
            && !bucket.ends_with(['-', '.']);
        if !bucket_ok {
            return Err(bad(
                "a bucket name is 3-63 lowercase letters, digits, '-' or '.'",
            ));
        }
        let prefix = prefix.trim_end_matches('/');
        if prefix.split('/').any(|seg| seg == "." || seg == "..")
            || prefix.contains("//")
            || prefix.starts_with('/')
        {
            return Err(bad("the prefix has an empty, '.' or '..' component"));
        }
        Ok(BucketUrl {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }
}

/// Where and how to reach the store, besides what the standard AWS
/// environment variables and files say (credentials, region, `AWS_ENDPOINT_URL`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketOptions {
    /// e.g. `http://127.0.0.1:9000`; default: AWS for the region.
    pub endpoint: Option<String>,
    /// Default: `AWS_REGION`, `AWS_DEFAULT_REGION`, else `us-east-1`.
    pub region: Option<String>,
    /// `bucket.host/key` instead of `host/bucket/key` (path style, the default,
    /// is what MinIO, Ceph and Garage expect).
    pub virtual_host_style: bool,
    /// How long a request may wait for the store to answer (each attempt;
    /// a failed one is tried again up to [`RETRIES`] times). Default
    /// [`DEFAULT_STALL_AFTER`].
    pub stall_after: Option<Duration>,
    /// What opens an encrypted repository, and whether one made must be.
    pub keys: crate::sealing::BucketKeys,
    /// Set when the URL is a `dmv serve` that keeps the repository sealed
    /// (its clients read and write the objects, speaking S3 to it).
    pub hub: Option<SealedHub>,
}

/// How a client reaches the objects of a repository a `dmv serve` keeps
/// sealed: `OBJECTS` under the repository's URL (its last part the bucket,
/// in S3's terms, the rest the endpoint's path), with the user's token as
/// the access key id (in hex, so any token is one) and no signature the
/// server checks (the token itself is the secret, as in a bearer header).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SealedHub {
    /// Where the objects are under the URL (`objects/store`).
    pub objects: String,
    /// The user's token (None: ask as nobody).
    pub token: Option<String>,
}

impl SealedHub {
    /// The endpoint and bucket of the objects of the hub at `url`.
    fn endpoint_and_bucket(&self, url: &str) -> BucketResult<(String, String)> {
        let valid = |part: &str| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        };
        match self.objects.rsplit_once('/') {
            Some((path, bucket)) if path.split('/').all(valid) && valid(bucket) => Ok((
                format!("{}/{path}", url.trim_end_matches('/')),
                bucket.to_string(),
            )),
            _ => Err(BucketError::NotARepository {
                url: url.to_string(),
                detail: format!("the server names its objects at {:?}", self.objects),
            }),
        }
    }
}

/// How long a request waits for the store when the options do not say.
pub const DEFAULT_STALL_AFTER: Duration = Duration::from_secs(30);
/// Times a failed request is tried again: a busy store's refusals and
/// dropped connections are often gone a moment later.
pub const RETRIES: usize = 3;
/// How long one call of a pack upload (a part, or the close that waits for
/// the last parts) may take: a part goes out at the speed of the uplink,
/// and a slow one is not a stalled store.
const UPLOAD_PART_WAIT: Duration = Duration::from_secs(300);

/// A connection to one bucket location: every request goes through `op`,
/// or `upload_op` for the packs and indexes uploaded, driven by `runtime`;
/// errors name `target`. Only `objects` makes requests with the two
/// clients (the other files ask it, with `Objects::of(conn)`).
pub(crate) struct Conn {
    pub target: Target,
    pub runtime: tokio::runtime::Runtime,
    pub op: Operator,
    pub upload_op: Operator,
    /// The repository key, once an encrypted repository is opened.
    pub sealing: Option<std::sync::Arc<crate::sealing::Sealing>>,
}

impl Conn {
    /// Checks the URL and sets up the client; nothing is sent yet.
    pub fn new(url: &str, options: &BucketOptions) -> BucketResult<Conn> {
        install_http_transport();
        let (parsed, options) = match &options.hub {
            Some(hub) => {
                let (endpoint, bucket) = hub.endpoint_and_bucket(url)?;
                let parsed = BucketUrl {
                    bucket,
                    prefix: String::new(),
                };
                let options = BucketOptions {
                    endpoint: Some(endpoint),
                    region: Some("us-east-1".into()),
                    virtual_host_style: false,
                    ..options.clone()
                };
                (parsed, options)
            }
            None => (BucketUrl::parse(url)?, options.clone()),
        };
        let options = &options;
        let target = Target {
            url: url.to_string(),
            bucket: parsed.bucket.clone(),
            hub: options.hub.is_some(),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .on_thread_start(block_sigpipe)
            .enable_all()
            .build()
            .map_err(|cause| BucketError::Runtime { cause })?;
        let wait = options.stall_after.unwrap_or(DEFAULT_STALL_AFTER);
        let op = operator(&parsed, options, wait, wait)
            .map_err(|e| target.classify(e, "configuration"))?;
        let upload_op = operator(
            &parsed,
            options,
            wait.max(UPLOAD_PART_WAIT),
            wait.max(UPLOAD_PART_WAIT),
        )
        .map_err(|e| target.classify(e, "configuration"))?;
        Ok(Conn {
            target,
            runtime,
            op,
            upload_op,
            sealing: None,
        })
    }

    /// Runs `work` as a task on the runtime's threads (never on the calling
    /// one: see SIGPIPE above) and waits for its result. Requests are made
    /// only in such tasks, or in tasks they spawn.
    pub fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        work: impl Future<Output = BucketResult<T>> + Send + 'static,
    ) -> BucketResult<T> {
        self.runtime
            .block_on(self.runtime.spawn(work))
            .map_err(|e| BucketError::Internal {
                what,
                detail: e.to_string(),
            })?
    }
}

/// Blocks SIGPIPE in the calling thread (a runtime thread), so that a write
/// to a socket whose peer went away fails with EPIPE instead of raising it.
/// Windows has no such signal.
fn block_sigpipe() {
    // SAFETY: the set is initialised by sigemptyset before use, and
    // pthread_sigmask changes only this thread's mask.
    #[cfg(unix)]
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// opendal's HTTP client is process-wide, as is rustls's crypto provider
/// (ring: the one the rest of DMV builds with). Both calls are idempotent.
fn install_http_transport() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    opendal_http_transport_reqwest::install_default();
}

/// The store's client: `control` bounds a request without a body to stream
/// (stat, a conditional write, a delete), `io` each call on a body (a read
/// of a range, a part written, a listing's next page).
fn operator(
    url: &BucketUrl,
    options: &BucketOptions,
    control: Duration,
    io: Duration,
) -> opendal::Result<Operator> {
    let mut builder = opendal::services::S3::default()
        .bucket(&url.bucket)
        .root(&format!("/{}", url.prefix))
        .disable_ec2_metadata();
    if let Some(endpoint) = options.endpoint.as_deref().filter(|e| !e.is_empty()) {
        builder = builder.endpoint(endpoint);
    }
    let region = options
        .region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "us-east-1".into());
    builder = builder.region(&region);
    if options.virtual_host_style {
        builder = builder.enable_virtual_host_style();
    }
    if let Some(hub) = &options.hub {
        // The user's token, never the AWS credentials of the environment.
        builder = builder.disable_config_load();
        builder = match &hub.token {
            Some(token) => {
                let id: String = token.bytes().map(|b| format!("{b:02x}")).collect();
                builder.access_key_id(&id).secret_access_key("dmv")
            }
            None => builder.skip_signature(),
        };
    }
    Ok(Operator::new(builder)?
        .layer(
            TimeoutLayer::new()
                .with_timeout(control)
                .with_io_timeout(io),
        )
        .layer(
            RetryLayer::new()
                .with_max_times(RETRIES)
                .with_min_delay(Duration::from_millis(100))
                .with_max_delay(Duration::from_secs(2))
                .with_jitter(),
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_urls() {
        assert_eq!(
            BucketUrl::parse("s3://photos").unwrap(),
            BucketUrl {
                bucket: "photos".into(),
                prefix: "".into()
            }
        );
        assert_eq!(
            BucketUrl::parse("s3://photos/studio/2026/").unwrap(),
            BucketUrl {
                bucket: "photos".into(),
                prefix: "studio/2026".into()
            }
        );
        for bad in [
            "s3://",
            "s3://ab",
            "s3://Photos/x",
            "s3://photos/../x",
            "s3://photos//x",
            "s3://-x/y",
            "http://photos/x",
            "s3://photos/./x",
        ] {
            assert!(BucketUrl::parse(bad).is_err(), "{bad} should be refused");
        }
    }
}

#[cfg(test)]
mod network_tests {
    use super::*;

    fn sigpipe_blocked_here() -> bool {
        // SAFETY: a null new set only reads this thread's mask into `mask`.
        unsafe {
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut mask);
            libc::sigismember(&mask, libc::SIGPIPE) == 1
        }
    }

    fn sigpipe_disposition() -> libc::sighandler_t {
        // SAFETY: a null new action only reads the current one into `old`.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old);
            old.sa_sigaction
        }
    }

    /// Requests run where SIGPIPE is blocked, and opening a bucket leaves the
    /// caller's thread and the process's disposition as they were.
    #[test]
    fn requests_run_on_threads_that_block_sigpipe() {
        let before = sigpipe_disposition();
        let options = BucketOptions {
            endpoint: Some("http://127.0.0.1:9".into()),
            ..Default::default()
        };
        let conn = Conn::new("s3://photos/p", &options).unwrap();
        assert!(conn
            .run("test", async { Ok(sigpipe_blocked_here()) })
            .unwrap());
        assert!(
            conn.run("test", async {
                Ok(tokio::spawn(async { sigpipe_blocked_here() })
                    .await
                    .unwrap())
            })
            .unwrap(),
            "tasks spawned by requests too"
        );
        assert!(
            conn.run("test", async {
                Ok(tokio::task::spawn_blocking(sigpipe_blocked_here)
                    .await
                    .unwrap())
            })
            .unwrap(),
            "and blocking threads"
        );
        assert!(!sigpipe_blocked_here());
        assert_eq!(sigpipe_disposition(), before);
    }

    /// A real refused connection through opendal's HTTP client, so the
    /// classification sees the causes that client really gives.
    #[test]
    fn a_store_that_does_not_answer_is_unreachable() {
        install_http_transport();
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let builder = opendal::services::S3::default()
            .bucket("photos")
            .endpoint(&format!("http://127.0.0.1:{port}"))
            .region("us-east-1")
            .access_key_id("key")
            .secret_access_key("secret")
            .disable_ec2_metadata();
        let op = Operator::new(builder).unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let err = runtime.block_on(op.stat("refs")).unwrap_err();
        let target = Target {
            url: "s3://photos".into(),
            bucket: "photos".into(),
            hub: false,
        };
        let e = target.classify(err, "reading refs");
        assert!(matches!(e, BucketError::Unreachable { .. }), "{e}");
        assert!(e.to_string().starts_with("cannot reach s3://photos: reading refs: the object store does not answer (Connection refused"), "{e}");
    }
}
