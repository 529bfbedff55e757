//! What can go wrong with a bucket, and how an object store's failure is
//! told apart: refused credentials, a missing bucket, a store that does not
//! answer, or anything else it said.
//!
//! Every message is one line that names the remote (or the local file) and
//! what failed. A variant that shows an OS error in its message keeps it in
//! a `cause` field, not as its `source()`: the CLI prints the whole chain,
//! and would print it twice.

use std::path::PathBuf;

use opendal::ErrorKind;

use dmv_store::StoreError;

/// Why a bucket call failed. In every variant with one, `url` is the remote
/// as given (`s3://bucket/prefix`) and `detail` what went wrong there, in one line.
#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    /// The remote is not `s3://bucket[/prefix]`.
    #[error("bad object storage remote {url:?}: {why}")]
    BadUrl {
        /// The remote as given.
        url: String,
        /// Which rule it breaks.
        why: &'static str,
    },
    /// The client refused the settings (an endpoint that is not a URL, ...).
    #[error("{url}: {detail} (check the remote's endpoint and region)")]
    Config {
        /// The remote.
        url: String,
        /// What the client said.
        detail: String,
    },
    /// The location holds no DMV repository: no config object, or one that
    /// is not a valid DMV config.
    #[error("{url}: {detail}")]
    NotARepository {
        /// The remote.
        url: String,
        /// What was found instead.
        detail: String,
    },
    /// The repository was written by a newer dmv.
    #[error("{url}: repository format {found} is not supported by this dmv (supports {supported}); upgrade dmv")]
    UnsupportedFormat {
        /// The remote.
        url: String,
        /// The format its config names.
        found: u32,
        /// The one this dmv knows ([`crate::FORMAT_VERSION`]).
        supported: u32,
    },
    /// The store refused the credentials (a 403).
    #[error("authentication failed for {url}: {detail}")]
    Auth {
        /// The remote.
        url: String,
        /// The store's error code and message.
        detail: String,
    },
    /// The bucket does not exist.
    #[error("{url}: the bucket {bucket} does not exist; create it, or check the remote's URL and endpoint")]
    NoBucket {
        /// The remote.
        url: String,
        /// The bucket's name.
        bucket: String,
    },
    /// Nothing answered, or not in time.
    #[error("cannot reach {url}: {detail}")]
    Unreachable {
        /// The remote.
        url: String,
        /// What was being done, and the network's error.
        detail: String,
    },
    /// The store lacks what DMV's ref updates need (ETags, conditional writes).
    #[error("{url}: {detail}")]
    Unsupported {
        /// The remote.
        url: String,
        /// What is missing.
        detail: String,
    },
    /// Another client is in the way (a drop running, a push registered, a
    /// drop's lease expired), or other writers kept replacing the ref table:
    /// try again later.
    #[error("{url}: {detail}")]
    Contended {
        /// The remote.
        url: String,
        /// What is in the way, and what to do.
        detail: String,
    },
    /// Anything else the store answered.
    #[error("{url}: {detail}")]
    Storage {
        /// The remote.
        url: String,
        /// What was being done, and the store's answer.
        detail: String,
    },
    /// An object in the bucket fails its checks (a pack, an index, the ref
    /// table, a lock, a location log).
    #[error("{url}: damaged data in the bucket: {detail}")]
    Damaged {
        /// The remote.
        url: String,
        /// Which object, and what is wrong with it.
        detail: String,
    },
    /// The repository is encrypted and none of the keys given opens it.
    #[error("{url}: {detail}")]
    Locked {
        /// The remote.
        url: String,
        /// Which keys were tried.
        detail: String,
    },
    /// No wrapped key of that name or device key.
    #[error("{url}: no key {name:?}")]
    NoSuchKey {
        /// The remote.
        url: String,
        /// The name asked for.
        name: String,
    },
    /// An encrypted repository's keys cannot be made, added or removed as asked.
    #[error("{url}: {detail}")]
    Keys {
        /// The remote.
        url: String,
        /// What is needed, or what went wrong.
        detail: String,
    },
    /// A local file: the mirror of the bucket's indexes, or a push's staged packs.
    #[error("{what} {}: {cause}", path.display())]
    Io {
        /// What was being done to it.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        cause: std::io::Error,
    },
    /// The async runtime requests run on could not be started.
    #[error("cannot start the I/O runtime for object storage: {cause}")]
    Runtime {
        /// What the system said.
        cause: std::io::Error,
    },
    /// A bug in dmv (a task that panicked, say), not a problem of the bucket.
    #[error("internal error: {what}: {detail} (a bug in dmv; please report it)")]
    Internal {
        /// What was being done.
        what: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// The local store (the index mirror, staged packs) failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the bucket's calls return.
pub type BucketResult<T> = Result<T, BucketError>;

impl BucketError {
    pub(crate) fn io(
        what: &'static str,
        path: impl Into<PathBuf>,
        cause: std::io::Error,
    ) -> BucketError {
        BucketError::Io {
            what,
            path: path.into(),
            cause,
        }
    }
}

/// The remote a request went to, as errors name it: the URL as given and
/// its bucket.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub url: String,
    pub bucket: String,
    /// The store is a `dmv serve` keeping the repository sealed (its
    /// refusals are about tokens, not AWS credentials).
    pub hub: bool,
}

impl Target {
    /// Sorts an object store's failure of `what` (e.g. "reading refs").
    pub fn classify(&self, err: opendal::Error, what: &str) -> BucketError {
        let url = self.url.clone();
        if let Some(detail) = err.message().strip_prefix(UNOPENED) {
            // `detail` begins with the object's key, which `what` may name already.
            let detail = match detail.split_once(": ") {
                Some((key, why)) if what.ends_with(key) => format!("{what}: {why}"),
                _ => format!("{what}: {detail}"),
            };
            let detail = format!("{detail} (an encrypted object that does not open: changed, cut or moved by the storage, or sealed with a key this device was not given)");
            return BucketError::Damaged { url, detail };
        }
        match err.kind() {
            // opendal's kind for a 403.
            // A server keeping the repository sealed says why in its words.
            ErrorKind::PermissionDenied if self.hub => BucketError::Auth { url, detail: s3_field(&err, "message").unwrap_or_else(|| "the server refused the token".into()) },
            ErrorKind::PermissionDenied => {
                BucketError::Auth { url, detail: format!("{} (check the AWS credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the profile)", s3_detail(&err)) }
            }
            // opendal gives S3's NoSuchBucket this kind; so do its own checks of the settings.
            ErrorKind::ConfigInvalid if s3_field(&err, "code").as_deref() == Some("NoSuchBucket") => BucketError::NoBucket { url, bucket: self.bucket.clone() },
            ErrorKind::ConfigInvalid => BucketError::Config { url, detail: s3_detail(&err) },
            _ => match network_failure(&err) {
                Some(why) => BucketError::Unreachable { url, detail: format!("{what}: the object store does not answer ({why})") },
                None => BucketError::Storage { url, detail: format!("{what}: {}", s3_detail(&err)) },
            },
        }
    }

    pub fn damaged(&self, detail: String) -> BucketError {
        BucketError::Damaged {
            url: self.url.clone(),
            detail,
        }
    }

    pub fn unsupported(&self, detail: &str) -> BucketError {
        BucketError::Unsupported {
            url: self.url.clone(),
            detail: detail.to_string(),
        }
    }

    pub fn contended(&self, detail: String) -> BucketError {
        BucketError::Contended {
            url: self.url.clone(),
            detail,
        }
    }
}

/// How an encrypted object that did not open reaches `classify` through
/// the client's error type (see `objects`).
pub(crate) const UNOPENED: &str = "dmv: did not open: ";

/// Another writer got there first (412 on our condition, which opendal
/// reports as `ConditionNotMatch`), or the store saw two conditional writes
/// at once (409 ConditionalRequestConflict or OperationAborted, which it
/// reports as `Conflict`): either way, re-read.
pub(crate) fn lost_race(e: &opendal::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConditionNotMatch | ErrorKind::AlreadyExists | ErrorKind::Conflict
    )
}

/// The code and message S3 put in an error body, or opendal's own message
/// and root cause, without the request context (headers, URI).
fn s3_detail(err: &opendal::Error) -> String {
    match (s3_field(err, "code"), s3_field(err, "message")) {
        (Some(code), Some(text)) => format!("{code}: {text}"),
        (Some(code), None) => code,
        _ => {
            let mut text = format!("{} {}", err.kind(), err.message().trim());
            if let Some(cause) = root_cause(err) {
                text = format!("{text}: {cause}");
            }
            text.replace('\n', " ").trim().to_string()
        }
    }
}

/// A field of the S3 error body (`code`, `message`). opendal keeps the body
/// only as text, the debug form of its parsed error in the message
/// (`S3Error { code: "NoSuchBucket", message: "...", ... }`), so it is read
/// from there; an unexpected form gives nothing, never a wrong field.
fn s3_field(err: &opendal::Error, name: &str) -> Option<String> {
    let msg = err.message();
    let at = msg.find(&format!("{name}: \""))? + name.len() + 3;
    let end = msg[at..].find('"')?;
    Some(msg[at..at + end].to_string()).filter(|s| !s.is_empty())
}

/// The innermost cause, which is the one that says what happened.
fn root_cause(err: &opendal::Error) -> Option<String> {
    let mut cause: &dyn std::error::Error = std::error::Error::source(err)?;
    while let Some(next) = cause.source() {
        cause = next;
    }
    Some(cause.to_string())
}

/// Why nothing answered (or not in time), if that is the failure: judged
/// from the HTTP client's own verdict and the OS errors among the causes,
/// never from the request context. Gives the innermost cause to show.
fn network_failure(err: &opendal::Error) -> Option<String> {
    use std::io::ErrorKind as Io;
    // opendal's TimeoutLayer says only this, in an `Unexpected` error without a cause.
    if err.message().contains("timeout reached") {
        return Some(err.message().to_string());
    }
    let mut network = false;
    let mut cause = std::error::Error::source(err);
    while let Some(c) = cause {
        if let Some(e) = c.downcast_ref::<reqwest::Error>() {
            // Sending failed (no connection, or it broke) or the body did not arrive.
            network |=
                e.is_request() || e.is_connect() || e.is_timeout() || e.is_body() || e.is_decode();
        }
        if let Some(e) = c.downcast_ref::<std::io::Error>() {
            network |= matches!(
                e.kind(),
                Io::ConnectionRefused
                    | Io::ConnectionReset
                    | Io::ConnectionAborted
                    | Io::NotConnected
                    | Io::BrokenPipe
                    | Io::TimedOut
                    | Io::UnexpectedEof
                    | Io::HostUnreachable
                    | Io::NetworkUnreachable
                    | Io::NetworkDown
                    | Io::AddrNotAvailable
            );
        }
        cause = c.source();
    }
    network.then(|| root_cause(err).unwrap_or_else(|| err.message().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Target {
        Target {
            url: "s3://photos/p".into(),
            bucket: "photos".into(),
            hub: false,
        }
    }

    /// What opendal's S3 service makes of an error response.
    fn s3_error(kind: ErrorKind, code: &str, message: &str) -> opendal::Error {
        opendal::Error::new(kind, format!("S3Error {{ code: \"{code}\", message: \"{message}\", resource: \"/photos/p\", request_id: \"1\" }}"))
    }

    #[test]
    fn store_answers_are_sorted_by_kind_and_code() {
        let e = target().classify(
            s3_error(
                ErrorKind::PermissionDenied,
                "SignatureDoesNotMatch",
                "wrong",
            ),
            "reading refs",
        );
        assert!(matches!(e, BucketError::Auth { .. }));
        assert!(e.to_string().starts_with("authentication failed for s3://photos/p: SignatureDoesNotMatch: wrong (check the AWS credentials"), "{e}");
        let e = target().classify(
            s3_error(
                ErrorKind::ConfigInvalid,
                "NoSuchBucket",
                "The specified bucket does not exist",
            ),
            "listing packs",
        );
        assert!(
            e.to_string().contains("the bucket photos does not exist"),
            "{e}"
        );
        let e = target().classify(
            opendal::Error::new(ErrorKind::ConfigInvalid, "endpoint is invalid"),
            "configuration",
        );
        assert!(matches!(e, BucketError::Config { .. }), "{e}");
        let e = target().classify(
            s3_error(ErrorKind::Unexpected, "InternalError", "try again"),
            "uploading packs/x",
        );
        assert_eq!(
            e.to_string(),
            "s3://photos/p: uploading packs/x: InternalError: try again"
        );
        let e = target().classify(
            opendal::Error::new(ErrorKind::Unexpected, "operation timeout reached"),
            "reading refs",
        );
        assert_eq!(e.to_string(), "cannot reach s3://photos/p: reading refs: the object store does not answer (operation timeout reached)");
    }

    #[test]
    fn conditional_write_failures_are_lost_races() {
        for kind in [
            ErrorKind::ConditionNotMatch,
            ErrorKind::AlreadyExists,
            ErrorKind::Conflict,
        ] {
            assert!(lost_race(&opendal::Error::new(kind, "")), "{kind}");
        }
        for kind in [
            ErrorKind::Unexpected,
            ErrorKind::PermissionDenied,
            ErrorKind::NotFound,
        ] {
            assert!(!lost_race(&opendal::Error::new(kind, "")), "{kind}");
        }
    }

    #[test]
    fn an_os_error_is_shown_once() {
        let e = BucketError::io(
            "cannot read the staged pack",
            "/tmp/x.pack",
            std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert!(
            std::error::Error::source(&e).is_none(),
            "the message already shows the cause"
        );
        assert_eq!(
            e.to_string().matches("No space left on device").count(),
            1,
            "{e}"
        );
    }
}
