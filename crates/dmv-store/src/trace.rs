//! Counters for `DMV_TRACE` and the tests: how often the store opened files
//! for content, and how many bytes were written to and read from remotes
//! (pipes, HTTP and object storage alike: every transport counts here, so the
//! counters live in the lowest crate they all share).

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};

/// Files opened to read working-tree content (ingest or hashing).
pub static CONTENT_FILES_OPENED: AtomicU64 = AtomicU64::new(0);

/// [`CONTENT_FILES_OPENED`] now.
pub fn content_files_opened() -> u64 {
    CONTENT_FILES_OPENED.load(Ordering::Relaxed)
}

pub(crate) fn count_content_open() {
    CONTENT_FILES_OPENED.fetch_add(1, Ordering::Relaxed);
}

/// Bytes this process sent to remotes.
pub static BYTES_SENT: AtomicU64 = AtomicU64::new(0);
/// Bytes this process received from remotes.
pub static BYTES_RECEIVED: AtomicU64 = AtomicU64::new(0);

/// [`BYTES_SENT`] now.
pub fn bytes_sent() -> u64 {
    BYTES_SENT.load(Ordering::Relaxed)
}

/// [`BYTES_RECEIVED`] now.
pub fn bytes_received() -> u64 {
    BYTES_RECEIVED.load(Ordering::Relaxed)
}

/// Adds `n` to [`BYTES_SENT`]; a transport calls it for what it wrote.
pub fn count_sent(n: u64) {
    BYTES_SENT.fetch_add(n, Ordering::Relaxed);
    check_abort();
}

/// Adds `n` to [`BYTES_RECEIVED`]; a transport calls it for what it read.
pub fn count_received(n: u64) {
    BYTES_RECEIVED.fetch_add(n, Ordering::Relaxed);
    check_abort();
}

/// `DMV_ABORT_AFTER_BYTES=N` kills the process once N bytes have crossed
/// the wire: the tests' way to interrupt a transfer half way.
fn check_abort() {
    // Read once: this runs for every read and write of a transfer.
    static LIMIT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let limit = LIMIT.get_or_init(|| {
        dmv_os::fault::test_setting("DMV_ABORT_AFTER_BYTES").and_then(|v| v.parse().ok())
    });
    if let Some(limit) = *limit {
        if bytes_sent() + bytes_received() >= limit {
            eprintln!("dmv: DMV_ABORT_AFTER_BYTES reached, aborting");
            std::process::abort();
        }
    }
}

/// A reader or writer whose bytes count as received or sent.
pub struct Counting<T>(pub T);

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        count_received(n as u64);
        Ok(n)
    }
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(buf)?;
        count_sent(n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
