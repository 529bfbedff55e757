//! The server's pre-receive hook: a command the server's admin names,
//! run before any branch or tag moves (a push, a ref deletion, a browser
//! upload, on a disk or in front of a bucket), given the caller, the
//! repository, each ref's move and the paths it changes as JSON on its
//! stdin. It exits 0 to let the update land; anything else, or running
//! past its time, refuses the whole update (no ref moves), and the caller
//! is told its first lines of output.
//!
//! The hook runs before the server takes the lock table's lock (or
//! announces the move in a bucket): a slow hook holds up nothing but the
//! push it judges. A ref moved by someone else meanwhile fails the
//! compare-and-swap that follows, as it does without a hook.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use dmv_repo::ref_names::{BRANCHES, TAGS};
use dmv_repo::{visit_changes_between, ChangeKind, GrantObjects, RefMove};

use crate::{Refusal, SyncError, SyncResult};

/// Paths the hook is told of in one update, over all its refs; past it
/// each ref cut short says `"truncated": true`.
pub const MAX_HOOK_PATHS: usize = 100_000;
/// Bytes of the hook's output (stderr, then stdout) the caller is shown.
pub const MAX_HOOK_OUTPUT: usize = 4096;
/// How long a hook may run when its config says nothing.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the output is waited for once the hook ended (a child it left
/// behind may hold its pipes open).
const OUTPUT_GRACE: Duration = Duration::from_secs(1);

/// The command a server runs before refs move, and for which repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreReceive {
    /// The program and its arguments (never empty).
    pub command: Vec<String>,
    /// How long it may run before it is killed (and the update refused).
    pub timeout: Duration,
    /// The repository's name as the server serves it (`DMV_REPO`).
    pub repository: String,
}

/// What the hook reads on its stdin.
#[derive(Serialize)]
struct HookInput<'a> {
    user: Option<&'a str>,
    repository: &'a str,
    refs: Vec<HookRef>,
}

/// One ref's move, and the files and symlinks that differ between its old
/// tip's tree and its new one's (none: an empty tree).
#[derive(Serialize)]
struct HookRef {
    #[serde(rename = "ref")]
    name: String,
    old: Option<String>,
    new: Option<String>,
    paths: Vec<HookPath>,
    truncated: bool,
}

#[derive(Serialize)]
struct HookPath {
    path: String,
    change: &'static str,
    /// Bytes of the file as the move leaves it; of a deleted one, as it was.
    size: u64,
}

/// Runs `hook` (the caller's, if the server has one) on the moves `user`
/// asks for; an error refuses them all.
pub(crate) fn run_pre_receive(
    hook: Option<&PreReceive>,
    user: Option<&str>,
    moves: &[RefMove<'_>],
    objects: &dyn GrantObjects,
) -> SyncResult<()> {
    let Some(hook) = hook else {
        return Ok(());
    };
    // Branches and tags: what a person pushes (a peer's offers and the
    // logs kept beside branches are the server's own bookkeeping).
    let moves: Vec<&RefMove<'_>> = moves
        .iter()
        .filter(|m| m.name.starts_with(BRANCHES) || m.name.starts_with(TAGS))
        .collect();
    if moves.is_empty() {
        return Ok(());
    }
    let input = HookInput {
        user,
        repository: &hook.repository,
        refs: hook_refs(&moves, objects)?,
    };
    let json = serde_json::to_vec(&input).map_err(|e| {
        SyncError::local(
            "cannot write the pre-receive hook's input",
            std::io::Error::other(e),
        )
    })?;
    run(hook, user.unwrap_or(""), json)
}

/// Each move with the paths it changes, [`MAX_HOOK_PATHS`] in all.
fn hook_refs(moves: &[&RefMove<'_>], objects: &dyn GrantObjects) -> SyncResult<Vec<HookRef>> {
    let tree_of = |id: Option<dmv_repo::store::ObjectId>| -> SyncResult<_> {
        Ok(match id {
            Some(id) => Some(objects.commit(&id)?.1.tree),
            None => None,
        })
    };
    let read_node = |id: &dmv_repo::store::ObjectId| objects.tree_node(id);
    let mut left = MAX_HOOK_PATHS;
    let mut refs = Vec::with_capacity(moves.len());
    for m in moves {
        let (old, new) = (tree_of(m.old)?, tree_of(m.new)?);
        let mut paths = Vec::new();
        let mut truncated = false;
        visit_changes_between(&read_node, old.as_ref(), new.as_ref(), &mut |change| {
            if paths.len() == left {
                truncated = true;
                return false;
            }
            let (change_kind, entry) = match change.kind {
                ChangeKind::Added => ("added", change.new),
                ChangeKind::Deleted => ("deleted", change.old),
                ChangeKind::Modified => ("modified", change.new),
            };
            paths.push(HookPath {
                path: String::from_utf8_lossy(&change.path).into_owned(),
                change: change_kind,
                size: entry.map_or(0, |e| e.size),
            });
            true
        })?;
        // The walk's order is no order: a hook's reader (and its test) gets them sorted.
        paths.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        left -= paths.len();
        refs.push(HookRef {
            name: m.name.to_string(),
            old: m.old.map(|id| id.to_hex()),
            new: m.new.map(|id| id.to_hex()),
            paths,
            truncated,
        });
    }
    Ok(refs)
}

/// Runs `hook` with `input` on its stdin: Ok when it exits 0 in time.
fn run(hook: &PreReceive, user: &str, input: Vec<u8>) -> SyncResult<()> {
    let Some((program, args)) = hook.command.split_first() else {
        return Ok(());
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .env("DMV_USER", user)
        .env("DMV_REPO", &hook.repository)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A group of its own, so a timeout kills what the hook started too
    // (a shell's `sleep` would keep its pipes open).
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| refused(format!("it could not be started: {e}"), Vec::new()))?;
    let stdin = child.stdin.take();
    std::thread::spawn(move || {
        // A hook that exits without reading all of it is its own business.
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input);
        }
    });
    let stderr = collect(child.stderr.take());
    let stdout = collect(child.stdout.take());
    let deadline = Instant::now() + hook.timeout;
    let mut nap = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                kill(&mut child);
                break None;
            }
            Ok(None) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(20));
            }
            Err(e) => {
                kill(&mut child);
                return Err(refused(format!("waiting for it failed: {e}"), Vec::new()));
            }
        }
    };
    let ended = Instant::now();
    let mut output = Vec::new();
    for rx in [stderr, stdout] {
        let wait = OUTPUT_GRACE.saturating_sub(ended.elapsed());
        if let Ok(bytes) = rx.recv_timeout(wait) {
            output.extend_from_slice(&bytes);
        }
    }
    match status {
        Some(status) if status.success() => Ok(()),
        Some(status) => Err(refused(ended_how(status), lines_of(&output))),
        None => Err(refused(
            format!(
                "it ran past its {} s and was killed",
                hook.timeout.as_secs_f64()
            ),
            lines_of(&output),
        )),
    }
}

fn refused(why: String, output: Vec<String>) -> SyncError {
    SyncError::Refused(Refusal::PreReceive { why, output })
}

/// Reads `pipe` to its end on a thread of its own, keeping its first
/// [`MAX_HOOK_OUTPUT`] bytes (the rest is read and dropped, so the hook
/// never blocks on a full pipe); they come on the channel at its end.
fn collect(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut pipe) = pipe {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                let room = MAX_HOOK_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
        let _ = tx.send(kept);
    });
    rx
}

/// Kills the hook and everything in its process group, and reaps it.
fn kill(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill has no memory preconditions; the group is the
        // hook's own (process_group(0) made it), led by its pid.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn ended_how(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("it exited with status {code}");
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("it was ended by signal {signal}");
    }
    "it failed".into()
}

/// The output's first [`MAX_HOOK_OUTPUT`] bytes as lines, control
/// characters (escapes a terminal would act on) removed, blank lines left out.
fn lines_of(output: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(&output[..output.len().min(MAX_HOOK_OUTPUT)]);
    text.lines()
        .map(|line| {
            line.chars()
                .map(|c| if c == '\t' { ' ' } else { c })
                .filter(|c| !c.is_control())
                .collect::<String>()
        })
        .filter(|line| !line.trim().is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_loses_control_characters_and_blank_lines() {
        let lines = lines_of(b"one\x1b[31m red\r\n\n\ttwo\x07\n   \nthree");
        assert_eq!(lines, ["one[31m red", " two", "three"]);
        let long = vec![b'x'; MAX_HOOK_OUTPUT * 2];
        assert_eq!(lines_of(&long)[0].len(), MAX_HOOK_OUTPUT);
    }
}
