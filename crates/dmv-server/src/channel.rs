//! Streaming what a blocking handler writes into an HTTP response body.

use std::io::Write;

use bytes::Bytes;
use tokio::sync::mpsc;

/// Streams what a blocking handler writes into the HTTP response body.
pub struct ChannelWriter {
    pub tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    pub buf: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 256 << 10 {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
    }
}
