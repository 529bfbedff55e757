//! The pipe transport: a child process running `dmv serve --stdio PATH`,
//! either this very binary (a local path remote) or one reached through the
//! system `ssh` (like Git, so keys, agents and ssh config just work).

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::io::AsRawFd;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::client::{BodyWriter, Wire};
use crate::frame::{FrameReader, FrameWriter};
use crate::protocol::{Request, Verb};
use crate::trace::Counting;
use crate::{SyncError, SyncResult};

pub struct StdioWire {
    child: Child,
    input: Option<BufWriter<Counting<ChildStdin>>>,
    output: BufReader<Counting<ChildStdout>>,
    stderr: Arc<Mutex<Vec<String>>>,
    stderr_done: Arc<Mutex<bool>>,
}

/// Grows a pipe from the default 64 KiB to 1 MiB (the usual limit), so a
/// transfer through ssh hands over a MiB per wake-up instead of 64 KiB. Only
/// a speed-up: a descriptor that is not a pipe, or a lower limit, is fine.
pub(crate) fn widen_pipe(fd: std::os::unix::io::RawFd) {
    // SAFETY: F_SETPIPE_SZ only reads its integer argument; a bad fd or size is an error return.
    #[cfg(all(target_os = "linux", not(dmv_portable)))]
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20)
    };
    // Elsewhere pipes keep their size.
    #[cfg(not(all(target_os = "linux", not(dmv_portable))))]
    let _ = fd;
}

impl StdioWire {
    pub fn spawn(mut command: Command, what: &str) -> SyncResult<StdioWire> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| SyncError::Unreachable { url: what.to_string(), detail: format!("cannot run {:?}: {e}", command.get_program()) })?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take()) else {
            return Err(SyncError::Unreachable { url: what.to_string(), detail: "no pipes to the child process".into() });
        };
        widen_pipe(stdin.as_raw_fd());
        widen_pipe(stdout.as_raw_fd());
        let lines = Arc::new(Mutex::new(Vec::new()));
        let done = Arc::new(Mutex::new(false));
        let (lines2, done2) = (lines.clone(), done.clone());
        std::thread::spawn(move || {
            let mut stderr = BufReader::new(stderr);
            let mut line = Vec::new();
            while let Ok(n) = read_line_bounded(&mut stderr, &mut line, MAX_STDERR_LINE) {
                if n == 0 {
                    break;
                }
                let mut l = lines2.lock().unwrap_or_else(|e| e.into_inner());
                l.push(String::from_utf8_lossy(&line).trim_end_matches(['\n', '\r']).to_string());
                let excess = l.len().saturating_sub(20);
                l.drain(..excess);
            }
            *done2.lock().unwrap_or_else(|e| e.into_inner()) = true;
        });
        Ok(StdioWire {
            child,
            input: Some(BufWriter::with_capacity(1 << 20, Counting(stdin))),
            output: BufReader::with_capacity(1 << 20, Counting(stdout)),
            stderr: lines,
            stderr_done: done,
        })
    }

    fn lost(&self, detail: String) -> SyncError {
        SyncError::Disconnected(last_words(&self.stderr, &self.stderr_done).unwrap_or(detail))
    }
}

/// The longest line of the child's stderr kept (the rest of a longer one is
/// read and dropped): a remote cannot make us hold an endless line.
const MAX_STDERR_LINE: usize = 4096;

/// Reads one line (through its `\n`) into `line`, keeping at most `max`
/// bytes of it; returns the bytes consumed, 0 at the end.
fn read_line_bounded(input: &mut impl BufRead, line: &mut Vec<u8>, max: usize) -> std::io::Result<usize> {
    line.clear();
    let mut consumed = 0;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(consumed);
        }
        let (used, end) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let keep = used.min(max.saturating_sub(line.len()));
        line.extend_from_slice(&buf[..keep]);
        input.consume(used);
        consumed += used;
        if end {
            return Ok(consumed);
        }
    }
}

/// The last thing the child said on stderr, once it has finished saying it.
fn last_words(lines: &Mutex<Vec<String>>, done: &Mutex<bool>) -> Option<String> {
    let start = Instant::now();
    while !*done.lock().unwrap_or_else(|e| e.into_inner()) && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let lines = lines.lock().unwrap_or_else(|e| e.into_inner());
    lines.iter().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim().trim_start_matches("dmv: ").to_string())
}

/// Reads the child's stdout; its end is always an error here (the client
/// only reads when it expects an answer), reported with the child's stderr.
struct ChildOutput<'a> {
    output: &'a mut BufReader<Counting<ChildStdout>>,
    stderr: Arc<Mutex<Vec<String>>>,
    stderr_done: Arc<Mutex<bool>>,
}

impl Read for ChildOutput<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.output.read(buf)?;
        if n == 0 && !buf.is_empty() {
            let why = last_words(&self.stderr, &self.stderr_done).unwrap_or_else(|| "the remote closed the connection".into());
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why));
        }
        Ok(n)
    }
}

impl Wire for StdioWire {
    fn exchange<'s>(&'s mut self, _verb: Verb, request: &Request, body: Option<BodyWriter<'_>>) -> SyncResult<FrameReader<Box<dyn Read + 's>>> {
        let input = self.input.as_mut().ok_or_else(|| SyncError::Disconnected("already closed".into()))?;
        let mut w = FrameWriter::new(input as &mut dyn Write);
        let sent = (|| {
            w.message(request).map_err(|e| SyncError::Disconnected(e.to_string()))?;
            if let Some(body) = body {
                body(&mut w)?;
            }
            w.flush().map_err(|e| SyncError::Disconnected(e.to_string()))
        })();
        match sent {
            Ok(()) => {}
            // The server may have refused and said why before hanging up.
            Err(SyncError::Disconnected(detail)) => return Err(self.lost(detail)),
            Err(other) => return Err(other),
        }
        Ok(FrameReader::new(Box::new(ChildOutput { output: &mut self.output, stderr: self.stderr.clone(), stderr_done: self.stderr_done.clone() })))
    }
}

impl Drop for StdioWire {
    fn drop(&mut self) {
        // Closing stdin tells the server we are done.
        drop(self.input.take());
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Quotes one word for the remote shell ssh hands the command to.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_lines_are_bounded() {
        let mut input = std::io::Cursor::new([b"short\n".to_vec(), vec![b'x'; 100_000], b"\nlast".to_vec()].concat());
        let mut line = Vec::new();
        assert_eq!(read_line_bounded(&mut input, &mut line, 10).unwrap(), 6);
        assert_eq!(line, b"short\n");
        assert_eq!(read_line_bounded(&mut input, &mut line, 10).unwrap(), 100_001);
        assert_eq!(line, vec![b'x'; 10]);
        assert_eq!(read_line_bounded(&mut input, &mut line, 10).unwrap(), 4);
        assert_eq!(line, b"last");
        assert_eq!(read_line_bounded(&mut input, &mut line, 10).unwrap(), 0);
    }
}
