//! DMV replicas: the sync protocol (docs/protocol.md), its transports (a
//! local path or ssh through `dmv serve --stdio`, HTTP to `dmv serve`), the
//! negotiation that sends only what the other side lacks, and the server.

mod client;
mod frame;
mod http_client;
pub mod protocol;
mod remote;
pub mod server;
mod serve;
mod stdio;
mod transfer;

pub use client::{Client, Received};
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

/// Byte counters of everything written to and read from remotes, for
/// `DMV_TRACE` and the tests that check what travelled.
pub mod trace {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicU64, Ordering};

    pub static BYTES_SENT: AtomicU64 = AtomicU64::new(0);
    pub static BYTES_RECEIVED: AtomicU64 = AtomicU64::new(0);

    pub fn bytes_sent() -> u64 {
        BYTES_SENT.load(Ordering::Relaxed)
    }

    pub fn bytes_received() -> u64 {
        BYTES_RECEIVED.load(Ordering::Relaxed)
    }

    /// `DMV_ABORT_AFTER_BYTES=N` kills the process once N bytes have crossed
    /// the wire: the tests' way to interrupt a transfer half way.
    fn check_abort() {
        if let Some(limit) = std::env::var("DMV_ABORT_AFTER_BYTES").ok().and_then(|v| v.parse::<u64>().ok()) {
            if bytes_sent() + bytes_received() >= limit {
                eprintln!("dmv: DMV_ABORT_AFTER_BYTES reached, aborting");
                std::process::abort();
            }
        }
    }

    pub struct Counting<T>(pub T);

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(buf)?;
            BYTES_RECEIVED.fetch_add(n as u64, Ordering::Relaxed);
            check_abort();
            Ok(n)
        }
    }

    impl<W: Write> Write for Counting<W> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = self.0.write(buf)?;
            BYTES_SENT.fetch_add(n as u64, Ordering::Relaxed);
            check_abort();
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.0.flush()
        }
    }
}
