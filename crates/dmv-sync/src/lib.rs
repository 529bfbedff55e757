//! DMV replicas: the sync protocol (docs/protocol.md), its transports (a
//! local path or ssh through `dmv serve --stdio`, HTTP to `dmv serve`, an
//! S3-compatible object store with nothing of DMV running there), the
//! negotiation that sends only what the other side lacks, and the server.

mod bucket_remote;
mod client;
mod frame;
mod http_client;
pub mod protocol;
mod remote;
mod serve;
pub mod server;
mod ssh;
mod stdio;
mod transfer;

pub use client::{Client, ObjectProducer, Received, Remote, RemoteRefs};
pub use dmv_bucket::BucketOptions;
pub use frame::{Frame, FrameReader, FrameWriter};
pub use remote::{RemoteSpec, Transport};
pub use serve::serve_stdio;
pub use transfer::{fetch, fetch_remote, push, FetchedRef, PushRef, PushResult, TransferStats};

pub type SyncResult<T> = Result<T, SyncError>;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Repo(#[from] dmv_repo::RepoError),
    #[error(transparent)]
    Store(#[from] dmv_repo::store::StoreError),
    #[error("connection to the remote lost: {0}")]
    Disconnected(String),
    #[error("protocol error: {0}")]
    Protocol(String),
    #[error("remote speaks DMV protocol {remote}, this dmv speaks {local}; upgrade the older side")]
    Version { remote: u32, local: u32 },
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("authentication failed for {url}: {detail}")]
    Auth { url: String, detail: String },
    #[error("{url}: {detail}")]
    NotARepository { url: String, detail: String },
    /// The remote refused the request and said why.
    #[error("remote: {0}")]
    Remote(String),
    #[error("{name} changed on the remote while pushing; fetch (or pull) and push again")]
    Rejected { name: String, found: Option<dmv_repo::store::ObjectId> },
    #[error("{0}")]
    Invalid(String),
}

/// Byte counters of everything written to and read from remotes (object
/// storage included), for `DMV_TRACE` and the tests that check what travelled
/// (they live in dmv-store, which every transport shares).
pub use dmv_repo::store::trace;
