//! The pipe transport: a child process running `dmv serve --stdio PATH`,
//! either this very binary (a local path remote) or one reached through the
//! system `ssh` (like Git, so keys, agents and ssh config just work).

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
#[cfg(unix)]
use std::os::unix::io::{AsRawFd as AsPipe, RawFd};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::protocol::error::GaveUpWaiting;
use crate::protocol::frame::{FrameReader, FrameWriter};
use crate::protocol::{Request, Verb};
use crate::trace::Counting;
use crate::transport::client::{BodyWriter, Wire};
use crate::TransportError;
use crate::{SyncError, SyncResult};

pub struct StdioWire {
    child: Child,
    input: Option<BufWriter<Counting<Patient<ChildStdin>>>>,
    /// Closed with stdin when the wire is dropped: a server still writing an
    /// answer the client stopped reading then ends at once on the closed
    /// pipe, instead of blocking until it is killed.
    output: Option<BufReader<Counting<Patient<ChildStdout>>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    stderr_done: Arc<Mutex<bool>>,
    /// Set once a read or write gave up waiting: the child is then killed
    /// at once, not given its seconds to finish.
    gave_up: Arc<AtomicBool>,
}

/// Our end of a pipe to the child, read and written without blocking for
/// longer than `after` at a time: a frozen ssh server (or a frozen child)
/// never answers, and a blocking read would wait for it forever.
#[cfg(unix)]
struct Patient<P> {
    pipe: P,
    url: String,
    after: Duration,
    gave_up: Arc<AtomicBool>,
}

#[cfg(unix)]
impl<P: AsPipe> Patient<P> {
    fn new(
        pipe: P,
        url: &str,
        after: Duration,
        gave_up: Arc<AtomicBool>,
    ) -> std::io::Result<Patient<P>> {
        // SAFETY: F_GETFL/F_SETFL on a descriptor we own change only its flags; errors are returned.
        #[cfg(unix)]
        unsafe {
            let fd = pipe.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(Patient {
            pipe,
            url: url.to_string(),
            after,
            gave_up,
        })
    }

    /// Waits until the pipe can be read (`POLLIN`) or written (`POLLOUT`),
    /// or has closed; fails once `after` has passed without that.
    #[cfg(unix)]
    fn wait(&self, events: libc::c_short) -> std::io::Result<()> {
        let deadline = Instant::now() + self.after;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.gave_up.store(true, Ordering::Relaxed);
                return Err(GaveUpWaiting::io_error(&self.url, self.after));
            }
            if ready(self.pipe.as_raw_fd(), events, left)? {
                return Ok(());
            }
        }
    }
}

/// Whether `fd` became ready for `events` (or closed) within `within`.
#[cfg(unix)]
fn ready(fd: RawFd, events: libc::c_short, within: Duration) -> std::io::Result<bool> {
    let mut poll = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    let millis = within.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd, and its count is 1.
    match unsafe { libc::poll(&mut poll, 1, millis) } {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => match std::io::Error::last_os_error() {
            e if e.kind() == std::io::ErrorKind::Interrupted => Ok(false),
            e => Err(e),
        },
    }
}

#[cfg(unix)]
impl<P: Read + AsPipe> Read for Patient<P> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.pipe.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.wait(libc::POLLIN)?,
                done => return done,
            }
        }
    }
}

#[cfg(unix)]
impl<P: Write + AsPipe> Write for Patient<P> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        loop {
            match self.pipe.write(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => self.wait(libc::POLLOUT)?,
                done => return done,
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.pipe.flush()
    }
}

/// On Windows, whose anonymous pipes cannot be polled, each pipe is read or
/// written by a thread of its own, one call at a time, and the caller waits
/// for it at most `after`. A thread left waiting on a frozen server ends
/// when the server is killed, or with the process: it does not rely on the
/// kill closing the pipe (Wine does not, for a stopped process).
#[cfg(windows)]
struct Patient<P> {
    url: String,
    after: Duration,
    gave_up: Arc<AtomicBool>,
    /// To the pipe's thread: a buffer to fill (a read) or to write out.
    todo: std::sync::mpsc::SyncSender<Vec<u8>>,
    /// From it: the buffer back, with the bytes read or written.
    done: std::sync::mpsc::Receiver<std::io::Result<(Vec<u8>, usize)>>,
    /// The buffer, and of a read what is not taken yet (from, to).
    buffer: Vec<u8>,
    unread: (usize, usize),
    _pipe: std::marker::PhantomData<P>,
}

/// What one read of the pipe's thread asks for at most.
#[cfg(windows)]
const READ_AT_ONCE: usize = 1 << 20;

#[cfg(windows)]
impl<P: Send + 'static> Patient<P> {
    fn new(
        pipe: P,
        url: &str,
        after: Duration,
        gave_up: Arc<AtomicBool>,
    ) -> std::io::Result<Patient<P>>
    where
        Patient<P>: PipeCall<P>,
    {
        let (todo, work) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
        let (answer, done) = std::sync::mpsc::sync_channel(1);
        let mut pipe = pipe;
        std::thread::Builder::new()
            .name("dmv-pipe".into())
            .spawn(move || {
                for mut buffer in work {
                    let result = Self::call(&mut pipe, &mut buffer).map(|n| (buffer, n));
                    if answer.send(result).is_err() {
                        return;
                    }
                }
            })?;
        Ok(Patient {
            url: url.to_string(),
            after,
            gave_up,
            todo,
            done,
            buffer: Vec::new(),
            unread: (0, 0),
            _pipe: std::marker::PhantomData,
        })
    }

    /// Hands `buffer` to the pipe's thread and waits at most `after` for it.
    fn exchange(&mut self, buffer: Vec<u8>) -> std::io::Result<usize> {
        let gave_up = || GaveUpWaiting::io_error(&self.url, self.after);
        if self.gave_up.load(Ordering::Relaxed) {
            return Err(gave_up());
        }
        if self.todo.send(buffer).is_err() {
            return Err(std::io::ErrorKind::BrokenPipe.into());
        }
        match self.done.recv_timeout(self.after) {
            Ok(Ok((buffer, n))) => {
                self.buffer = buffer;
                Ok(n)
            }
            Ok(Err(e)) => Err(e),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.gave_up.store(true, Ordering::Relaxed);
                Err(gave_up())
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
        }
    }
}

/// The one call the pipe's thread makes for each buffer.
#[cfg(windows)]
trait PipeCall<P> {
    fn call(pipe: &mut P, buffer: &mut [u8]) -> std::io::Result<usize>;
}

#[cfg(windows)]
impl PipeCall<ChildStdout> for Patient<ChildStdout> {
    fn call(pipe: &mut ChildStdout, buffer: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match pipe.read(buffer) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                done => return done,
            }
        }
    }
}

#[cfg(windows)]
impl PipeCall<ChildStdin> for Patient<ChildStdin> {
    fn call(pipe: &mut ChildStdin, buffer: &mut [u8]) -> std::io::Result<usize> {
        pipe.write_all(buffer).map(|()| buffer.len())
    }
}

#[cfg(windows)]
impl Read for Patient<ChildStdout> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.unread.0 == self.unread.1 {
            let mut buffer = std::mem::take(&mut self.buffer);
            buffer.resize(READ_AT_ONCE, 0);
            let n = self.exchange(buffer)?;
            self.unread = (0, n);
        }
        let (from, to) = self.unread;
        let n = out.len().min(to - from);
        out[..n].copy_from_slice(&self.buffer[from..from + n]);
        self.unread.0 += n;
        Ok(n)
    }
}

#[cfg(windows)]
impl Write for Patient<ChildStdin> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.clear();
        buffer.extend_from_slice(data);
        self.exchange(buffer)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Grows a pipe from the default 64 KiB to 1 MiB (the usual limit), so a
/// transfer through ssh hands over a MiB per wake-up instead of 64 KiB. Only
/// a speed-up: a descriptor that is not a pipe, or a lower limit, is fine.
pub(crate) fn widen_pipe(fd: i32) {
    // SAFETY: F_SETPIPE_SZ only reads its integer argument; a bad fd or size is an error return.
    #[cfg(all(target_os = "linux", not(dmv_portable)))]
    unsafe {
        libc::fcntl(fd, libc::F_SETPIPE_SZ, 1 << 20)
    };
    // Elsewhere pipes keep their size.
    #[cfg(not(all(target_os = "linux", not(dmv_portable))))]
    let _ = fd;
}

/// `dmv serve --stdio PATH` run by this same executable: how a path remote
/// is served when the front end does not serve it in process.
pub(crate) fn local_serve_command(path: &std::path::Path) -> SyncResult<Command> {
    let exe = std::env::current_exe()
        .map_err(|e| SyncError::local("cannot find the dmv executable", e))?;
    let mut cmd = Command::new(exe);
    cmd.arg("serve").arg("--stdio").arg(path);
    Ok(cmd)
}

impl StdioWire {
    /// Starts `command`, whose stdin and stdout carry the requests to
    /// `what`; a read or write that waits longer than `stall_after` fails.
    pub fn spawn(mut command: Command, what: &str, stall_after: Duration) -> SyncResult<StdioWire> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|e| {
            SyncError::Transport(TransportError::Unreachable {
                url: what.to_string(),
                detail: format!("cannot run {:?}: {e}", command.get_program()),
            })
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(SyncError::Transport(TransportError::Unreachable {
                url: what.to_string(),
                detail: "no pipes to the child process".into(),
            }));
        };
        #[cfg(unix)]
        {
            widen_pipe(stdin.as_raw_fd());
            widen_pipe(stdout.as_raw_fd());
        }
        let gave_up = Arc::new(AtomicBool::new(false));
        let patient = |e: std::io::Error| {
            SyncError::Transport(TransportError::Unreachable {
                url: what.to_string(),
                detail: format!("cannot set up the pipes to the child process: {e}"),
            })
        };
        let stdin = Patient::new(stdin, what, stall_after, gave_up.clone()).map_err(patient)?;
        let stdout = Patient::new(stdout, what, stall_after, gave_up.clone()).map_err(patient)?;
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
                l.push(
                    String::from_utf8_lossy(&line)
                        .trim_end_matches(['\n', '\r'])
                        .to_string(),
                );
                let excess = l.len().saturating_sub(20);
                l.drain(..excess);
            }
            *done2.lock().unwrap_or_else(|e| e.into_inner()) = true;
        });
        Ok(StdioWire {
            child,
            input: Some(BufWriter::with_capacity(1 << 20, Counting(stdin))),
            output: Some(BufReader::with_capacity(1 << 20, Counting(stdout))),
            stderr: lines,
            stderr_done: done,
            gave_up,
        })
    }

    fn lost(&self, detail: String) -> SyncError {
        SyncError::Transport(TransportError::Disconnected(
            last_words(&self.stderr, &self.stderr_done).unwrap_or(detail),
        ))
    }

    fn gave_up(&self) -> bool {
        self.gave_up.load(Ordering::Relaxed)
    }
}

/// The longest line of the child's stderr kept (the rest of a longer one is
/// read and dropped): a remote cannot make us hold an endless line.
const MAX_STDERR_LINE: usize = 4096;

/// Reads one line (through its `\n`) into `line`, keeping at most `max`
/// bytes of it; returns the bytes consumed, 0 at the end.
fn read_line_bounded(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<usize> {
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
    while !*done.lock().unwrap_or_else(|e| e.into_inner())
        && start.elapsed() < Duration::from_secs(2)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let lines = lines.lock().unwrap_or_else(|e| e.into_inner());
    lines
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().trim_start_matches("dmv: ").to_string())
}

/// Reads the child's stdout; its end is always an error here (the client
/// only reads when it expects an answer), reported with the child's stderr.
struct ChildOutput<'a> {
    output: &'a mut BufReader<Counting<Patient<ChildStdout>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    stderr_done: Arc<Mutex<bool>>,
}

impl Read for ChildOutput<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.output.read(buf)?;
        if n == 0 && !buf.is_empty() {
            let why = last_words(&self.stderr, &self.stderr_done)
                .unwrap_or_else(|| "the remote closed the connection".into());
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why));
        }
        Ok(n)
    }
}

impl Wire for StdioWire {
    fn exchange<'s>(
        &'s mut self,
        _verb: Verb,
        request: &Request,
        body: Option<BodyWriter<'_>>,
    ) -> SyncResult<FrameReader<Box<dyn Read + 's>>> {
        let input = self.input.as_mut().ok_or_else(|| {
            SyncError::Transport(TransportError::Disconnected("already closed".into()))
        })?;
        let mut w = FrameWriter::new(input as &mut dyn Write);
        let sent = (|| {
            w.message(request).map_err(SyncError::connection_lost)?;
            if let Some(body) = body {
                body(&mut w)?;
            }
            w.flush().map_err(SyncError::connection_lost)
        })();
        match sent {
            Ok(()) => {}
            Err(stalled @ SyncError::Transport(TransportError::Stalled { .. })) => {
                return Err(stalled)
            }
            // The server may have refused and said why before hanging up.
            Err(SyncError::Transport(TransportError::Disconnected(detail))) => {
                return Err(self.lost(detail))
            }
            Err(other) => return Err(other),
        }
        // Only a wire being dropped has no output.
        let Some(output) = self.output.as_mut() else {
            return Err(SyncError::Transport(TransportError::Disconnected(
                "the connection is closed".into(),
            )));
        };
        Ok(FrameReader::new(Box::new(ChildOutput {
            output,
            stderr: self.stderr.clone(),
            stderr_done: self.stderr_done.clone(),
        })))
    }
}

/// How a wire's server ended when the wire was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// It saw the pipes close and ended.
    OnItsOwn,
    /// It was killed: it did not end within the grace, or a read or write
    /// had already given up on it.
    Killed,
}

impl StdioWire {
    /// Ends the connection and reaps the server: closing stdin tells it we
    /// are done; closing stdout ends an answer we stopped reading (a
    /// damaged object, a refusal), which it would otherwise block writing
    /// until killed. Safe to call again (the status is kept once reaped).
    fn close(&mut self) -> Ended {
        if !self.gave_up() {
            drop(self.input.take());
            drop(self.output.take());
            if exited_within(&mut self.child, Duration::from_secs(5)) {
                return Ended::OnItsOwn;
            }
        }
        let _ = self.child.kill();
        // Not waited for long: Wine ends a stopped process only once it runs again.
        exited_within(&mut self.child, Duration::from_secs(5));
        Ended::Killed
    }
}

impl Drop for StdioWire {
    fn drop(&mut self) {
        self.close();
    }
}

/// Whether `child` has exited (and is reaped) within `wait`.
fn exited_within(child: &mut Child, wait: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < wait {
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Quotes one word for the remote shell ssh hands the command to.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server still writing an answer nobody reads ends on its own when
    /// the wire closes, not by the kill after the grace (a failed clone
    /// over a path once waited those 5 s for its `dmv serve --stdio`).
    #[cfg(unix)]
    #[test]
    fn a_server_whose_answer_is_left_unread_ends_on_its_own() {
        let mut server = Command::new("sh");
        server.args(["-c", "while :; do echo an answer nobody reads; done"]);
        let mut wire = StdioWire::spawn(server, "a test server", Duration::from_secs(60)).unwrap();
        // Its pipe full: the server is blocked in a write.
        let mut first = [0u8; 16];
        wire.output
            .as_mut()
            .unwrap()
            .read_exact(&mut first)
            .unwrap();
        assert_eq!(wire.close(), Ended::OnItsOwn);
        assert_eq!(
            wire.close(),
            Ended::OnItsOwn,
            "closed twice, as a drop after close does"
        );
    }

    #[test]
    fn stderr_lines_are_bounded() {
        let mut input = std::io::Cursor::new(
            [b"short\n".to_vec(), vec![b'x'; 100_000], b"\nlast".to_vec()].concat(),
        );
        let mut line = Vec::new();
        assert_eq!(read_line_bounded(&mut input, &mut line, 10).unwrap(), 6);
        assert_eq!(line, b"short\n");
        assert_eq!(
            read_line_bounded(&mut input, &mut line, 10).unwrap(),
            100_001
        );
        assert_eq!(line, vec![b'x'; 10]);
        assert_eq!(read_line_bounded(&mut input, &mut line, 10).unwrap(), 4);
        assert_eq!(line, b"last");
        assert_eq!(read_line_bounded(&mut input, &mut line, 10).unwrap(), 0);
    }
}
