//! `dmv watch`: commits what settled in the working tree and, with `--sync`,
//! keeps it in step with every remote. The loop is dmv-agent's; here are
//! its options, its words, the signals that stop it, and running it in the
//! background or as a login service.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use dmv_agent::{
    launchd_plist, service_name, systemd_unit, Event, Reporter, Waiting, WatchLog, WatchOptions,
    LOG_FILE,
};
use dmv_repo::Repository;

use crate::repo_args::{open_repo, printable, spawn_detached};

#[derive(Args)]
pub struct WatchArgs {
    /// Seconds without a change before what changed is committed.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    quiet: f64,
    /// After each commit, and every --sync-every seconds, sync with every
    /// remote (a file changed on two replicas keeps both versions).
    #[arg(long)]
    sync: bool,
    /// Seconds between syncs when nothing changes here.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    sync_every: f64,
    /// Seconds between looks at whether a remote moved (one listing of
    /// its refs, far cheaper than a sync): a sync follows when one did,
    /// so others' changes arrive within about this. 0: only --sync-every.
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0, requires = "sync")]
    check_every: f64,
    /// After each sync that reached every remote, free the data of the
    /// files here once --numcopies other copies are confirmed live (a
    /// camera card's or a phone's ingest: shoot, send, free the space).
    #[arg(long, requires = "sync")]
    drop_after_push: bool,
    /// Copies that must remain elsewhere for --drop-after-push (default:
    /// the config's numcopies, else 2).
    #[arg(long, value_name = "N", requires = "drop_after_push")]
    numcopies: Option<u32>,
    /// Look for changes by reading the tree's stat data every few seconds
    /// instead of the OS's file events.
    #[arg(long)]
    poll: bool,
    /// Run in the background: its log in .dmv/watch.log.
    #[arg(long, conflicts_with_all = ["stop", "status", "install"])]
    background: bool,
    /// Stop the watcher running in this repository.
    #[arg(long, conflicts_with_all = ["status", "install"])]
    stop: bool,
    /// Say whether a watcher runs here, what it did last, what holds it
    /// back (files still being written, a merge waiting for you,
    /// unreachable remotes) and its last errors.
    #[arg(long, conflicts_with = "install")]
    status: bool,
    /// With --status: the same as one JSON object, for scripts.
    #[arg(long, requires = "status")]
    json: bool,
    /// Write a service that starts this watcher at login (a systemd user
    /// unit on Linux, a launchd agent on macOS) and say how to enable it.
    #[arg(long)]
    install: bool,
    /// The kind of service --install writes (default: this system's).
    #[arg(long, value_enum, requires = "install", hide = true)]
    service: Option<Service>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Service {
    Systemd,
    Launchd,
}

pub fn watch(a: WatchArgs) -> Result<u8> {
    let repo = open_repo()?;
    repo.require_worktree()?;
    if a.stop {
        return stop(&repo);
    }
    if a.status {
        return status(&repo, a.json);
    }
    // A watcher commits as the person who started it: their name is asked for now, not at its first commit.
    repo.signer()?;
    if a.install {
        return install(&repo, &a);
    }
    if !(a.quiet.is_finite()
        && a.quiet >= 0.0
        && a.sync_every.is_finite()
        && a.sync_every > 0.0
        && a.check_every.is_finite()
        && a.check_every >= 0.0)
    {
        bail!("--quiet, --sync-every and --check-every take a number of seconds (and --sync-every more than 0)");
    }
    if a.background {
        return background(&repo, &a);
    }
    run(&repo, &a)
}

/// The watcher itself (dmv-agent's loop), until SIGTERM or SIGINT.
fn run(repo: &Repository, a: &WatchArgs) -> Result<u8> {
    let stop = Arc::new(AtomicBool::new(false));
    // `wake` ends a wait for changes: a signal, or the time to sync.
    let wake = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone())?;
        signal_hook::flag::register(signal, wake.clone())?;
    }
    let log = WatchLog::open(&repo.dmv)
        .with_context(|| format!("cannot open {}", repo.dmv.join(LOG_FILE).display()))?;
    let options = WatchOptions {
        quiet: Duration::from_secs_f64(a.quiet),
        poll: a.poll,
        sync: a.sync,
        sync_every: Duration::from_secs_f64(a.sync_every),
        check_every: (a.check_every > 0.0).then(|| Duration::from_secs_f64(a.check_every)),
        drop_after_push: a.drop_after_push,
        numcopies: a.numcopies,
    };
    dmv_agent::run(repo, &options, stop, wake, &mut LogLines { log })?;
    Ok(0)
}

/// The watcher's lines, with the time: on stdout, and in `.dmv/watch.log`,
/// which `dmv watch --status` reads.
struct LogLines {
    log: WatchLog,
}

impl Reporter for LogLines {
    fn words(&self, event: &Event) -> String {
        let shown = |b: &[u8]| printable(&String::from_utf8_lossy(b));
        match event {
            Event::Watching {
                root,
                polling: None,
            } => {
                format!("watching {} (file events)", root.display())
            }
            Event::Watching {
                root,
                polling: Some(why),
            } => format!(
                "watching {} (reading the tree every few seconds: {why})",
                root.display()
            ),
            Event::Mended(mended) => crate::sync::mended_line(mended),
            Event::CannotMend(e) => format!(
                "cannot finish what a command left cut short: {}",
                printable(e)
            ),
            Event::Committed { id, message } => format!("committed {}: {message}", id.short()),
            Event::CannotCommit(e) => format!("cannot commit: {}", printable(e)),
            Event::Locked { path } => format!("locked {} for you: you changed it", printable(path)),
            Event::LockedByOther { path, holder } => format!(
                "{} is locked by {}: your change to it stays uncommitted until they unlock it and the lock is yours",
                printable(path),
                printable(holder)
            ),
            Event::CannotLock(e) => format!("cannot take the locks of changed files: {}", printable(e)),
            Event::Waiting(w) => format!("waiting: {}", self.waiting_words(w)),
            Event::CannotSync(e) => format!("cannot sync: {}", printable(e)),
            Event::Merged { remote, label } => format!("merged {label} from {remote}"),
            Event::Sent { remote } => format!("sent to {remote}"),
            Event::NotReached { remote, why } => {
                format!("did not reach {remote}: {}", printable(why))
            }
            Event::KeptBoth { path, kept } => format!(
                "changed on two replicas, both versions kept: {} ({})",
                shown(path),
                kept.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ")
            ),
            Event::Freed {
                files,
                bytes,
                confirmed_by,
            } => format!(
                "freed {files} files ({bytes} bytes), copies confirmed by {}",
                confirmed_by.join(", ")
            ),
            Event::KeptData(e) => format!("kept the data here: {}", printable(e)),
            Event::Stopped => "stopped".to_string(),
        }
    }

    fn waiting_words(&self, waiting: &Waiting) -> String {
        match waiting {
            Waiting::StillBeingWritten { first, more } => format!(
                "{}{}: still being written",
                printable(&String::from_utf8_lossy(first)),
                match more {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                }
            ),
            Waiting::MergeConflicts { label, files } => format!(
                "a merge of {} has {files} conflicted files: settle them (dmv status) and commit; nothing is committed or merged until then (what was committed before is still sent)",
                printable(label)
            ),
            Waiting::Rebase => "a rebase waits for you: settle its conflicts and run dmv rebase --continue (or --abort); nothing is committed until then".to_string(),
        }
    }

    fn say(&mut self, event: &Event, words: &str) {
        if let Event::LockedByOther { .. } = event {
            notify_desktop(words);
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let line = format!("{} {words}", dmv_repo::utc_time(now));
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|_| out.flush());
        self.log.write(&line);
    }
}

/// Tells the person at their desktop, where the system has a way to
/// (`notify-send` on Linux, `osascript` on macOS); nothing otherwise.
fn notify_desktop(words: &str) {
    let mut command = if cfg!(target_os = "macos") {
        let quoted = words.replace('\\', "\\\\").replace('"', "\\\"");
        let mut c = std::process::Command::new("osascript");
        c.args([
            "-e",
            &format!("display notification \"{quoted}\" with title \"DMV\""),
        ]);
        c
    } else {
        let mut c = std::process::Command::new("notify-send");
        c.args(["--app-name=DMV", "DMV", words]);
        c
    };
    // Not waited for long: a missing program or no desktop is no failure of the watch.
    if let Ok(mut child) = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        std::thread::spawn(move || child.wait());
    }
}

/// Starts `dmv watch` with the same options, detached, its output appended
/// to the log; returns once it holds the watcher lock.
fn background(repo: &Repository, a: &WatchArgs) -> Result<u8> {
    let lock = repo.watcher_lock();
    if let Some(pid) = running(repo)? {
        bail!("a watcher already runs in this repository (pid {pid})");
    }
    let log_path = repo.dmv.join(LOG_FILE);
    // It writes its log itself; what it cannot say there (it failed to start) goes there too.
    let args: Vec<std::ffi::OsString> = watch_args(a).into_iter().map(Into::into).collect();
    let mut child = spawn_detached(&args, &repo.root, &log_path)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while lock.holder_pid() != Some(child.id()) {
        if let Some(exit) = child.try_wait()? {
            bail!(
                "the watcher stopped at once ({exit}); its log: {}",
                log_path.display()
            );
        }
        if Instant::now() > deadline {
            bail!(
                "the watcher did not start within 10 s; its log: {}",
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "watching in the background (pid {}); log: {}",
        child.id(),
        log_path.display()
    );
    Ok(0)
}

fn stop(repo: &Repository) -> Result<u8> {
    let lock = repo.watcher_lock();
    let Some(pid) = running(repo)? else {
        println!("no watcher runs in this repository");
        return Ok(0);
    };
    // A pid read from the lock its holder still holds.
    if let Err(e) = dmv_os::ask_to_stop(pid) {
        bail!("cannot stop the watcher (pid {pid}): {e}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while lock.try_acquire()?.is_none() {
        if Instant::now() > deadline {
            bail!("the watcher (pid {pid}) did not stop within 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("stopped the watcher (pid {pid})");
    Ok(0)
}

/// The pid of the watcher running here, if one does.
fn running(repo: &Repository) -> Result<Option<u32>> {
    let lock = repo.watcher_lock();
    if lock.try_acquire()?.is_some() {
        return Ok(None);
    }
    lock.holder_pid().map(Some).ok_or_else(|| {
        anyhow!(
            "a watcher runs here, but its lock does not name it ({})",
            lock.holder()
        )
    })
}

/// Whether a watcher runs, what it last did and what holds it back
/// (its health record), and the last lines of its log; with `json`, all
/// but the log as one JSON object.
fn status(repo: &Repository, json: bool) -> Result<u8> {
    let pid = running(repo)?;
    let health = repo.maintenance().watch_health();
    let kept = repo.merges().kept_both();
    if json {
        let value = serde_json::json!({ "running": pid.is_some(), "pid": pid, "health": health, "kept_both": kept });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(0);
    }
    match pid {
        Some(pid) => println!("a watcher runs in this repository (pid {pid})"),
        None => println!("no watcher runs in this repository"),
    }
    if let Some(h) = &health {
        let at = |t: i64| dmv_repo::utc_time(t);
        let verb = if pid.is_some() {
            "running since"
        } else {
            "last started"
        };
        println!("{verb}: {}", at(h.started));
        match &h.last_commit {
            Some(c) => println!("last commit: {} {}", at(c.at), c.what),
            None => println!("last commit: none since it started"),
        }
        for (name, r) in &h.remotes {
            let reached = r.last_reached.map_or("never".to_string(), at);
            println!("{}: last synced {reached}", printable(name));
            if let Some(failed) = r
                .last_failed
                .as_ref()
                .filter(|f| r.last_reached.is_none_or(|ok| f.at > ok))
            {
                println!("  not reached since {}: {}", at(failed.at), failed.what);
            }
        }
        for line in &h.waiting {
            println!("waiting: {line}");
        }
        if let Some(e) = h.errors.last() {
            println!(
                "last error: {} {} ({} kept; --json lists them)",
                at(e.at),
                e.what,
                h.errors.len()
            );
        }
    }
    if !kept.is_empty() {
        println!("files changed on two replicas (both versions kept):");
        for k in &kept {
            println!(
                "  {}: {}",
                printable(&k.path),
                k.kept
                    .iter()
                    .map(|p| printable(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let lines = WatchLog::last_lines(&repo.dmv, 10)?;
    if !lines.is_empty() {
        println!("last of {}:", repo.dmv.join(LOG_FILE).display());
        for line in &lines {
            println!("  {line}");
        }
    }
    Ok(0)
}

/// Writes the service that starts `dmv watch` at login with the options
/// given (but --install), and says how to enable it.
fn install(repo: &Repository, a: &WatchArgs) -> Result<u8> {
    let service = a.service.unwrap_or(if cfg!(target_os = "macos") {
        Service::Launchd
    } else {
        Service::Systemd
    });
    let mut argv = vec![std::env::current_exe()?.to_string_lossy().into_owned()];
    argv.extend(watch_args(a));
    let home = PathBuf::from(
        std::env::var_os("HOME")
            .ok_or_else(|| anyhow!("HOME is not set: nowhere to write the service"))?,
    );
    let name = service_name(&repo.root);
    let (path, text, enable) = match service {
        Service::Systemd => (
            home.join(".config/systemd/user")
                .join(format!("{name}.service")),
            systemd_unit(&repo.root, &argv),
            format!(
                "systemctl --user daemon-reload && systemctl --user enable --now {name}.service"
            ),
        ),
        Service::Launchd => {
            let path = home
                .join("Library/LaunchAgents")
                .join(format!("{name}.plist"));
            let enable = format!("launchctl load -w {}", path.display());
            (path, launchd_plist(&name, &repo.root, &argv), enable)
        }
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    dmv_repo::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
    println!("to start it now and at every login: {enable}");
    Ok(0)
}

/// `watch` and the options of `a` that the watcher itself takes.
fn watch_args(a: &WatchArgs) -> Vec<String> {
    let mut args = vec!["watch".to_string(), "--quiet".into(), a.quiet.to_string()];
    if a.sync {
        args.extend([
            "--sync".into(),
            "--sync-every".into(),
            a.sync_every.to_string(),
            "--check-every".into(),
            a.check_every.to_string(),
        ]);
    }
    if a.drop_after_push {
        args.push("--drop-after-push".into());
    }
    if let Some(n) = a.numcopies {
        args.extend(["--numcopies".into(), n.to_string()]);
    }
    if a.poll {
        args.push("--poll".into());
    }
    args
}
