//! Streaming what a blocking handler writes into an HTTP response body,
//! in small pieces and only a few ahead of the client: 520 downloads whose
//! clients never read held about 3.7 MB each in pieces written ahead
//! (eight pieces of a quarter to half a megabyte: 1.9 GiB in all). A piece
//! is now [`PIECE`] bytes, allocated at that size, and an answer has at most
//! [`PIECES_AHEAD`] waiting in its channel, one more in its writer and what
//! the connection's write buffer holds (`server.rs` bounds it): about
//! 320 KiB per stalled answer, 160 MiB at 512 connections. A shared budget
//! was tried instead: the stalled answers held all of it until their idle
//! timeout, and a clone waited 30 s.

use std::io::Write;

use bytes::Bytes;
use tokio::sync::mpsc;

/// How much of an answer is handed on at once.
pub const PIECE: usize = 64 << 10;
/// Pieces of one answer written ahead of its client.
pub const PIECES_AHEAD: usize = 2;

/// A piece of an answer, or why it ended short.
pub type AnswerPiece = Result<Bytes, std::io::Error>;

/// The channel an answer's pieces go through, [`PIECES_AHEAD`] deep.
pub fn answer_channel() -> (mpsc::Sender<AnswerPiece>, mpsc::Receiver<AnswerPiece>) {
    mpsc::channel(PIECES_AHEAD)
}

/// Streams what a blocking handler writes into the HTTP response body.
pub struct ChannelWriter {
    pub tx: mpsc::Sender<AnswerPiece>,
    pub buf: Vec<u8>,
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            if self.buf.capacity() == 0 {
                self.buf.reserve_exact(PIECE);
            }
            let n = rest.len().min(PIECE - self.buf.len());
            self.buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if self.buf.len() == PIECE {
                self.flush()?;
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let piece = Bytes::from(std::mem::take(&mut self.buf));
        self.tx.blocking_send(Ok(piece)).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_cut_to_size_and_few_wait_ahead() {
        let (tx, mut rx) = answer_channel();
        let mut out = ChannelWriter {
            tx,
            buf: Vec::new(),
        };
        out.write_all(&vec![7u8; PIECE + 10]).unwrap();
        assert_eq!(
            out.buf.capacity(),
            PIECE,
            "a piece is allocated at its size, not grown past it"
        );
        out.flush().unwrap();
        let sizes: Vec<usize> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|p| p.unwrap().len())
            .collect();
        assert_eq!(sizes, [PIECE, 10]);
        // The channel takes PIECES_AHEAD; the next waits for the client.
        for _ in 0..PIECES_AHEAD {
            out.tx.try_send(Ok(Bytes::from_static(b"x"))).unwrap();
        }
        assert!(out.tx.try_send(Ok(Bytes::from_static(b"x"))).is_err());
    }
}
