//! What a person at a terminal gets and a script does not: colour, and a
//! pager for long output, decided as git decides them. Piped output stays
//! plain and unpaged unless asked for.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
#[cfg(unix)]
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use dmv_repo::Repository;

/// `--color[=WHEN]`, and the values of `color.ui`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    Auto,
    Always,
    Never,
}

impl When {
    /// A `color.ui` value as git reads it (`true` means auto, as in git 1.8.4 and later).
    pub fn from_setting(value: &str) -> Option<When> {
        match value.to_ascii_lowercase().as_str() {
            "auto" | "true" | "yes" | "on" | "1" => Some(When::Auto),
            "always" => Some(When::Always),
            "never" | "false" | "no" | "off" | "0" => Some(When::Never),
            _ => None,
        }
    }
}

/// What a painted piece of text is; its colour is git's default for it.
#[derive(Clone, Copy)]
pub enum Style {
    /// A commit id heading a commit.
    Id,
    /// A diff's file header lines.
    Meta,
    /// A hunk's `@@` line.
    Hunk,
    Removed,
    Added,
    /// Staged changes in `status`.
    Staged,
    /// Unstaged and untracked paths in `status`.
    Unstaged,
}

static COLOUR: AtomicBool = AtomicBool::new(false);
static NO_PAGER: AtomicBool = AtomicBool::new(false);
static PAGER_PID: AtomicI32 = AtomicI32::new(0);

/// `dmv --no-pager`: nothing is paged in this run.
pub fn forbid_pager() {
    NO_PAGER.store(true, Ordering::Relaxed);
}

/// Decides whether this run paints: `--color`, else `color.ui` (the
/// repository's, then the global one), else auto. Auto paints only on a
/// terminal that is not `TERM=dumb`, and never with `NO_COLOR` set.
/// Called before a pager takes standard output.
pub fn decide_colour(repo: &Repository, flag: Option<When>) {
    let when = flag
        .or_else(|| {
            repo.setting("color.ui")
                .ok()
                .flatten()
                .and_then(|v| When::from_setting(&v))
        })
        .unwrap_or(When::Auto);
    let on = match when {
        When::Always => true,
        When::Never => false,
        When::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    };
    COLOUR.store(on, Ordering::Relaxed);
}

/// Whether this run paints, as [`decide_colour`] decided.
pub fn painting() -> bool {
    COLOUR.load(Ordering::Relaxed)
}

/// `text` in its style's colour, when this run paints.
pub fn paint(style: Style, text: &str) -> Cow<'_, str> {
    if !COLOUR.load(Ordering::Relaxed) || text.trim().is_empty() {
        return Cow::Borrowed(text);
    }
    let code = match style {
        Style::Id => "33",
        Style::Meta => "1",
        Style::Hunk => "36",
        Style::Removed | Style::Unstaged => "31",
        Style::Added | Style::Staged => "32",
    };
    Cow::Owned(format!("\x1b[{code}m{text}\x1b[m"))
}

/// A unified diff's text, painted line by line: its `---`/`+++` header,
/// hunk lines, removed and added lines.
pub fn paint_unified(diff: &str) -> Cow<'_, str> {
    if !COLOUR.load(Ordering::Relaxed) {
        return Cow::Borrowed(diff);
    }
    let mut out = String::with_capacity(diff.len() + diff.len() / 8);
    for (i, line) in diff.split_inclusive('\n').enumerate() {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        let style = match body.as_bytes().first() {
            _ if i < 2 => Some(Style::Meta),
            Some(b'@') => Some(Style::Hunk),
            Some(b'-') => Some(Style::Removed),
            Some(b'+') => Some(Style::Added),
            _ => None,
        };
        match style {
            Some(s) => out.push_str(&paint(s, body)),
            None => out.push_str(body),
        }
        out.push_str(end);
    }
    Cow::Owned(out)
}

/// Standard output (and standard error, when it is the same terminal)
/// going to a pager until this is dropped.
pub struct Pager {
    child: std::process::Child,
    saved: Vec<(i32, i32)>,
}

/// Whether stdout is a pipe (or socket) whose reader has gone: what makes a
/// write to it fail with a broken pipe, rather than a peer's connection.
pub fn stdout_reader_gone() -> bool {
    #[cfg(unix)]
    {
        let mut out = libc::pollfd {
            fd: 1,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: polling this process's own stdout, without waiting.
        let ready = unsafe { libc::poll(&mut out, 1, 0) };
        ready == 1 && out.revents & libc::POLLERR != 0
    }
    #[cfg(not(unix))]
    false
}

/// Ends the process as SIGPIPE's default would (quietly, status 141 in a
/// shell): the reader of its output went away, as in `dmv log | head`.
pub fn end_as_sigpipe() -> ! {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE, then raising it, ends this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(141)
}

/// `println!` panics when stdout's reader has gone: that ends the process
/// as SIGPIPE's default would, quietly. Any other panic is reported as before.
pub fn end_quietly_when_stdout_goes() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && stdout_reader_gone() {
            end_as_sigpipe();
        }
        report(info)
    }));
}

/// Starts the pager when standard output is a terminal, as git does for
/// log, show and diff: `DMV_PAGER`, `GIT_PAGER`, `core.pager`, `PAGER`,
/// else `less` with `LESS=FRX` (one screen is printed as is and the pager
/// ends itself). An empty setting or `cat` means none; a pager that cannot
/// start leaves the output on the terminal.
#[cfg(unix)]
pub fn start_pager(repo: &Repository) -> Option<Pager> {
    if NO_PAGER.load(Ordering::Relaxed) || !std::io::stdout().is_terminal() {
        return None;
    }
    let var = |k: &str| std::env::var(k).ok();
    let command = var("DMV_PAGER")
        .or_else(|| var("GIT_PAGER"))
        .or_else(|| repo.setting("core.pager").ok().flatten())
        .or_else(|| var("PAGER"))
        .unwrap_or_else(|| "less".into());
    if command.trim().is_empty() || command.trim() == "cat" {
        return None;
    }
    let mut pager = std::process::Command::new("sh");
    pager
        .arg("-c")
        .arg(&command)
        .stdin(std::process::Stdio::piped());
    for (key, value) in [("LESS", "FRX"), ("LV", "-c")] {
        if std::env::var_os(key).is_none() {
            pager.env(key, value);
        }
    }
    let mut child = pager.spawn().ok()?;
    let pipe = child.stdin.take()?;
    let _ = std::io::stdout().flush();
    let mut saved = Vec::new();
    let fds = if std::io::stderr().is_terminal() {
        vec![1, 2]
    } else {
        vec![1]
    };
    for fd in fds {
        // SAFETY: dup and dup2 of this process's own open descriptors.
        let copy = unsafe { libc::dup(fd) };
        if copy >= 0 && unsafe { libc::dup2(pipe.as_raw_fd(), fd) } >= 0 {
            saved.push((fd, copy));
        }
    }
    PAGER_PID.store(child.id() as i32, Ordering::Relaxed);
    // Interrupted (Ctrl-C reaches both), this process lets the pager finish
    // before it ends, so the shell's prompt does not come under the pager's screen.
    // SAFETY: installing a handler that only calls async-signal-safe functions.
    unsafe {
        libc::signal(
            libc::SIGINT,
            wait_for_pager as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            wait_for_pager as *const () as libc::sighandler_t,
        );
    }
    Some(Pager { child, saved })
}

/// Windows has no `sh` and `less` to hand: output is not paged there.
#[cfg(not(unix))]
pub fn start_pager(_repo: &Repository) -> Option<Pager> {
    None
}

#[cfg(unix)]
extern "C" fn wait_for_pager(signal: libc::c_int) {
    // SAFETY: close, waitpid, signal and raise are async-signal-safe.
    unsafe {
        libc::close(1);
        libc::close(2);
        let pid = PAGER_PID.load(Ordering::Relaxed);
        if pid > 0 {
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

impl Drop for Pager {
    #[cfg_attr(not(unix), allow(unused_variables))]
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        // The pager sees the end of its input once no descriptor here holds the pipe.
        for (fd, copy) in self.saved.drain(..) {
            // SAFETY: putting back the descriptors saved by `start_pager`.
            #[cfg(unix)]
            unsafe {
                libc::dup2(copy, fd);
                libc::close(copy);
            }
        }
        let _ = self.child.wait();
        PAGER_PID.store(0, Ordering::Relaxed);
    }
}

// `--color[=WHEN]` and `--no-color`, as git's log, show and diff take them (a
// plain comment: a doc comment here became the help text of every command
// that flattens these flags).
#[derive(clap::Args, Default)]
pub struct ColourArgs {
    /// Colour the output: auto (on a terminal), always or never (default: color.ui, else auto).
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "always", require_equals = true)]
    color: Option<When>,
    /// No colour.
    #[arg(long = "no-color", overrides_with = "color")]
    no_color: bool,
}

impl ColourArgs {
    /// Colour decided, then the pager started (on a terminal).
    pub fn colour_and_pager(&self, repo: &Repository) -> Option<Pager> {
        decide_colour(
            repo,
            if self.no_color {
                Some(When::Never)
            } else {
                self.color
            },
        );
        start_pager(repo)
    }
}
