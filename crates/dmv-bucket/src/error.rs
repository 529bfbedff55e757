//! What can go wrong with a bucket, and how an object store's failure is
//! told apart: refused credentials, a missing bucket, a store that does not
//! answer, or anything else it said.

use opendal::ErrorKind;

use dmv_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    #[error("{url}: {detail}")]
    NotARepository { url: String, detail: String },
    #[error("authentication failed for {url}: {detail}")]
    Auth { url: String, detail: String },
    #[error("{url}: the bucket {bucket} does not exist")]
    NoBucket { url: String, bucket: String },
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url}: {detail}")]
    Storage { url: String, detail: String },
    #[error("{url}: damaged data in the bucket: {detail}")]
    Damaged { url: String, detail: String },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub type BucketResult<T> = Result<T, BucketError>;

/// The remote a request went to, as errors name it: the URL as given and
/// its bucket.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub url: String,
    pub bucket: String,
}

impl Target {
    /// Sorts an object store's failure of `what` (e.g. "reading refs").
    pub fn classify(&self, err: opendal::Error, what: &str) -> BucketError {
        let url = self.url.clone();
        let detail = s3_detail(&err);
        match err.kind() {
            ErrorKind::PermissionDenied => {
                BucketError::Auth { url, detail: format!("{detail} (check the AWS credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the profile)") }
            }
            ErrorKind::ConfigInvalid if detail.contains("NoSuchBucket") => BucketError::NoBucket { url, bucket: self.bucket.clone() },
            ErrorKind::ConfigInvalid => BucketError::Invalid(format!("{url}: {detail}")),
            _ => {
                if is_unreachable(&err) {
                    BucketError::Unreachable { url, detail: format!("{what}: the object store does not answer") }
                } else {
                    BucketError::Storage { url, detail: format!("{what}: {detail}") }
                }
            }
        }
    }

    pub fn damaged(&self, detail: String) -> BucketError {
        BucketError::Damaged { url: self.url.clone(), detail }
    }

    pub fn storage(&self, detail: String) -> BucketError {
        BucketError::Storage { url: self.url.clone(), detail }
    }
}

/// Another writer got there first (412), or the store saw two conditional
/// writes at once (409 ConditionalRequestConflict): either way, re-read.
pub(crate) fn lost_race(e: &opendal::Error) -> bool {
    e.kind() == ErrorKind::ConditionNotMatch
        || e.kind() == ErrorKind::AlreadyExists
        || e.message().contains("ConditionalRequestConflict")
        || e.message().contains("PreconditionFailed")
}

/// The code and message S3 put in an error body, or opendal's own message
/// and root cause, without the request context (headers, URI).
fn s3_detail(err: &opendal::Error) -> String {
    let msg = err.message();
    let field = |name: &str| {
        let at = msg.find(&format!("{name}: \""))? + name.len() + 3;
        let end = msg[at..].find('"')?;
        Some(msg[at..at + end].to_string()).filter(|s| !s.is_empty())
    };
    match (field("code"), field("message")) {
        (Some(code), Some(text)) => format!("{code}: {text}"),
        (Some(code), None) => code,
        _ => {
            let mut text = format!("{} {}", err.kind(), msg.trim());
            if let Some(cause) = root_cause(err) {
                text = format!("{text}: {cause}");
            }
            text.replace('\n', " ").trim().to_string()
        }
    }
}

fn root_cause(err: &opendal::Error) -> Option<String> {
    let mut cause: &dyn std::error::Error = std::error::Error::source(err)?;
    while let Some(next) = cause.source() {
        cause = next;
    }
    Some(cause.to_string())
}

/// Whether the failure is the network's (nothing answered, or not in time),
/// judged from the error's causes, never from the request context.
fn is_unreachable(err: &opendal::Error) -> bool {
    let mut texts = vec![err.message().to_string()];
    let mut cause = std::error::Error::source(err);
    while let Some(c) = cause {
        texts.push(c.to_string());
        cause = c.source();
    }
    texts.iter().any(|t| {
        ["error sending request", "connect", "dns error", "timed out", "timeout", "connection closed", "connection reset", "broken pipe"]
            .iter()
            .any(|s| t.to_ascii_lowercase().contains(s))
    })
}
