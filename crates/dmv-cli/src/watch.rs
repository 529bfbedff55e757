//! `dmv watch`: commits what settled in the working tree and, with `--sync`,
//! keeps it in step with every remote. A thin loop over the libraries: the
//! folder watch (dmv-watch), the commit of everything (dmv-repo) and the
//! sync that keeps both versions of a conflict (dmv-sync).

use std::io::{BufRead, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use dmv_repo::{Moment, Repository, Silent, WatchHealth};
use dmv_watch::{FolderWatch, Mode, Settings};

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

const LOG: &str = "watch.log";

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

/// The watcher itself, until SIGTERM or SIGINT.
fn run(repo: &Repository, a: &WatchArgs) -> Result<u8> {
    let lock = repo.watcher_lock();
    let Some(_held) = lock.try_acquire()? else {
        bail!(
            "a watcher already runs in this repository ({})",
            lock.holder()
        );
    };
    let stop = Arc::new(AtomicBool::new(false));
    // `wake` ends a wait for changes: a signal, or the time to sync.
    let wake = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone())?;
        signal_hook::flag::register(signal, wake.clone())?;
    }
    let log_path = repo.dmv.join(LOG);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("cannot open {}", log_path.display()))?;
    let _ = LOG_FILE.set(std::sync::Mutex::new((log_path, log)));
    let settings = Settings {
        quiet: Duration::from_secs_f64(a.quiet),
        force_poll: a.poll,
        ..Settings::default()
    };
    let mut folder = FolderWatch::start(&repo.root, Arc::new(|_: &Path| false), settings)?;
    match folder.mode() {
        Mode::Events => say(&format!("watching {} (file events)", repo.root.display())),
        Mode::Polling(why) => say(&format!(
            "watching {} (reading the tree every few seconds: {why})",
            repo.root.display()
        )),
    }
    let sync_every = Duration::from_secs_f64(a.sync_every);
    let check_every = (a.check_every > 0.0).then(|| Duration::from_secs_f64(a.check_every));
    let mut next_sync = Instant::now();
    let mut next_check = Instant::now() + check_every.unwrap_or(sync_every);
    let board = check_every
        .filter(|_| a.sync)
        .map(|_| NewsBoard::listen(repo, wake.clone()));
    let mut health = WatchHealth {
        started: unix_now(),
        ..Default::default()
    };
    // A merge or rebase a killed command left: finished or undone before anything is committed on top.
    match repo.mend_cut_short() {
        Ok(Some(mended)) => say(&crate::sync::mended_line(&mended)),
        Ok(None) => {}
        Err(e) => say(&format!(
            "cannot finish what a command left cut short: {}",
            printable(&e.to_string())
        )),
    }
    // What changed while no watcher ran is committed first.
    let mut changed = true;
    while !stop.load(Ordering::Relaxed) {
        if changed {
            let (held_back, still_open) = commit(repo, &mut health);
            folder.retry(&held_back, &still_open);
        }
        let mut sync_now = a.sync && (changed || Instant::now() >= next_sync);
        // A remote that tells of news is not asked every few seconds; one heard from is asked now.
        let heard = board
            .as_ref()
            .is_some_and(|b| b.heard.swap(false, Ordering::Relaxed));
        let poll_due = check_every.is_some_and(|_| Instant::now() >= next_check)
            && !board.as_ref().is_some_and(NewsBoard::all_listening);
        if a.sync && !sync_now && (heard || poll_due) {
            sync_now = dmv_sync::current_branch(repo)
                .is_ok_and(|branch| !dmv_sync::moved_since_last_sync(repo, &branch).is_empty());
        }
        if let Some(every) = check_every.filter(|_| Instant::now() >= next_check) {
            next_check = Instant::now() + every;
        }
        if sync_now {
            let reached_all = sync(repo, &mut health);
            if reached_all && a.drop_after_push {
                drop_sent(repo, a.numcopies);
            }
            next_sync = Instant::now() + sync_every;
            next_check = Instant::now() + check_every.unwrap_or(sync_every);
        }
        wake.store(false, Ordering::Relaxed);
        // A signal taken before `wake` was cleared set `stop` too.
        if stop.load(Ordering::Relaxed) {
            break;
        }
        // Nothing to poll while every remote tells of news: woken by them, or to sync.
        let wake_time = match board.as_ref().is_some_and(NewsBoard::all_listening) {
            true => next_sync,
            false => next_sync.min(next_check),
        };
        let timer = a.sync.then(|| wake_at(wake_time, wake.clone()));
        changed = folder.next_settled(&wake)?.is_some();
        drop(timer);
    }
    say("stopped");
    Ok(0)
}

/// The remotes that tell this watcher when their refs change (a DMV
/// server over HTTP: see `dmv_sync::NewsListener`), a thread each: while
/// every remote does, the watcher asks none every --check-every seconds.
struct NewsBoard {
    /// A remote told of a change since the watcher last looked.
    heard: Arc<AtomicBool>,
    /// Remotes not listened to now (not HTTP, an older server, or unreachable).
    deaf: Arc<std::sync::atomic::AtomicUsize>,
}

/// How long a listener that lost its remote waits before connecting again.
const LISTEN_AGAIN_AFTER: Duration = Duration::from_secs(10);

impl NewsBoard {
    fn listen(repo: &Repository, wake: Arc<AtomicBool>) -> NewsBoard {
        let names: Vec<String> = repo.config.remotes.keys().cloned().collect();
        let board = NewsBoard {
            heard: Arc::new(AtomicBool::new(false)),
            deaf: Arc::new(names.len().into()),
        };
        for name in names {
            let (root, heard, deaf, wake) = (
                repo.root.clone(),
                board.heard.clone(),
                board.deaf.clone(),
                wake.clone(),
            );
            std::thread::spawn(move || {
                let Ok(repo) = Repository::open(&root) else {
                    return;
                };
                loop {
                    let mut listener = match dmv_sync::NewsListener::connect(&repo, &name) {
                        Ok(Some(listener)) => listener,
                        Ok(None) => return,
                        Err(_) => {
                            std::thread::sleep(LISTEN_AGAIN_AFTER);
                            continue;
                        }
                    };
                    deaf.fetch_sub(1, Ordering::SeqCst);
                    while let Ok(changed) = listener.wait() {
                        if changed {
                            heard.store(true, Ordering::Relaxed);
                            wake.store(true, Ordering::Relaxed);
                        }
                    }
                    // Lost: until the next listener, the watcher polls it as before, from now.
                    deaf.fetch_add(1, Ordering::SeqCst);
                    heard.store(true, Ordering::Relaxed);
                    wake.store(true, Ordering::Relaxed);
                    std::thread::sleep(LISTEN_AGAIN_AFTER);
                }
            });
        }
        board
    }

    fn all_listening(&self) -> bool {
        self.deaf.load(Ordering::SeqCst) == 0
    }
}

/// Sets `wake` at `when`, unless dropped first. The thread sleeps until
/// then (parked: a drop wakes it to end), so an idle watcher wakes only
/// when it has something to do.
fn wake_at(when: Instant, wake: Arc<AtomicBool>) -> Timer {
    let cancelled = Arc::new(AtomicBool::new(false));
    let gone = cancelled.clone();
    let thread = std::thread::spawn(move || {
        while !gone.load(Ordering::Relaxed) {
            let left = when.saturating_duration_since(Instant::now());
            if left.is_zero() {
                wake.store(true, Ordering::Relaxed);
                return;
            }
            std::thread::park_timeout(left);
        }
    });
    Timer { cancelled, thread }
}

struct Timer {
    cancelled: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
        self.thread.thread().unpark();
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// One commit of what changed; a failure is logged and the watch goes on
/// (a full disk, a file that vanished while it was read: the next change
/// tries again). Returns the files left out because they were still being
/// written, to look at again, and those of them still open. What it did
/// and what waits goes in `health`.
fn commit(repo: &Repository, health: &mut WatchHealth) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let now = unix_now();
    let mut waiting = Vec::new();
    let held_back = match repo.commit_everything(&Silent) {
        Ok(done) => {
            health.last_looked = Some(now);
            if let Some(made) = &done.commit {
                say(&format!("committed {}: {}", made.id.short(), made.message));
                health.last_commit = Some(Moment::new(
                    now,
                    &format!("{}: {}", made.id.short(), made.message),
                ));
            }
            if let Some(first) = done.held_back.first() {
                let more = match done.held_back.len() {
                    1 => String::new(),
                    n => format!(" and {} more", n - 1),
                };
                waiting.push(format!(
                    "{}{more}: still being written",
                    printable(&String::from_utf8_lossy(first))
                ));
            }
            let paths = |list: &[Vec<u8>]| {
                list.iter()
                    .map(|p| dmv_os::rel_path(p).into_owned())
                    .collect::<Vec<PathBuf>>()
            };
            (paths(&done.held_back), paths(&done.still_open))
        }
        Err(e) => {
            let line = format!("cannot commit: {}", printable(&e.to_string()));
            say(&line);
            health.note_error(now, &line);
            (Vec::new(), Vec::new())
        }
    };
    // A merge a person started and has not settled: nothing is committed until then.
    if let Ok(Some(merge)) = repo.merge_state() {
        if !merge.conflicts.is_empty() {
            waiting.push(format!(
                "a merge of {} has {} conflicted files: settle them (dmv status) and commit; nothing is committed or merged until then (what was committed before is still sent)",
                printable(&merge.label),
                merge.conflicts.len()
            ));
        }
    }
    if let Ok(Some(_)) = repo.rebase_state() {
        waiting.push("a rebase waits for you: settle its conflicts and run dmv rebase --continue (or --abort); nothing is committed until then".to_string());
    }
    // Each reason to wait is said once, when it begins.
    for line in waiting.iter().filter(|l| !health.waiting.contains(l)) {
        say(&format!("waiting: {line}"));
    }
    health.set_waiting(waiting);
    let _ = repo.save_watch_health(health);
    held_back
}

/// One sync with every remote; whether it reached them all.
fn sync(repo: &Repository, health: &mut WatchHealth) -> bool {
    let now = unix_now();
    let done = match dmv_sync::sync_keeping_both(repo, &Silent) {
        Ok(done) => done,
        Err(e) => {
            let line = format!("cannot sync: {}", printable(&e.to_string()));
            say(&line);
            health.note_error(now, &line);
            let _ = repo.save_watch_health(health);
            return false;
        }
    };
    for pass in &done.passes {
        let reached = pass
            .pulled
            .iter()
            .map(|(name, _)| name)
            .chain(pass.pushed.iter().map(|(name, _)| name));
        for name in reached {
            health.note_sync(now, name, None);
        }
        for (name, why) in &pass.skipped {
            health.note_sync(now, name, Some(why));
        }
    }
    let _ = repo.save_watch_health(health);
    for pass in &done.passes {
        if let Some(mended) = &pass.mended {
            say(&crate::sync::mended_line(mended));
        }
        for (name, pulled) in &pulled_with_changes(pass) {
            say(&format!("merged {} from {name}", pulled));
        }
        for (name, pushed) in &pass.pushed {
            if !pushed.updated.is_empty() {
                say(&format!("sent to {name}"));
            }
        }
        for (name, why) in &pass.skipped {
            say(&format!("did not reach {name}: {}", printable(why)));
        }
    }
    for kept in &done.kept_both {
        let names: Vec<String> = kept
            .kept
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        say(&format!(
            "changed on two replicas, both versions kept: {} ({})",
            String::from_utf8_lossy(&kept.path),
            names.join(", ")
        ));
    }
    done.passes
        .last()
        .is_some_and(|pass| pass.skipped.is_empty() && pass.stopped_at.is_none())
}

/// Frees the data of every file here whose copies elsewhere are confirmed
/// (the drop's own rule: all of them, or none and the reason logged).
fn drop_sent(repo: &Repository, numcopies: Option<u32>) {
    let here = match repo.load_dirstate() {
        Ok(ds) => ds.entries.values().filter(|e| !e.is_absent()).count(),
        Err(e) => {
            return say(&format!(
                "cannot read the dirstate: {}",
                printable(&e.to_string())
            ))
        }
    };
    if here == 0 {
        return;
    }
    let options = dmv_sync::DropOptions {
        paths: vec![Vec::new()],
        numcopies,
        ..Default::default()
    };
    match dmv_sync::drop_files(repo, &options) {
        Ok(dropped) if dropped.files > 0 => say(&format!(
            "freed {} files ({} bytes), copies confirmed by {}",
            dropped.files,
            dropped.freed_bytes,
            dropped.confirmed_by.join(", ")
        )),
        Ok(_) => {}
        Err(e) => say(&format!(
            "kept the data here: {}",
            printable(&e.to_string())
        )),
    }
}

/// The remotes whose pull changed something here, with what was merged.
fn pulled_with_changes(pass: &dmv_sync::SyncedAll) -> Vec<(String, String)> {
    pass.pulled
        .iter()
        .filter(|(_, p)| !matches!(p.merge, dmv_repo::MergeOutcome::UpToDate))
        .map(|(name, p)| (name.clone(), p.label.clone()))
        .collect()
}

/// The watcher's log, `.dmv/watch.log`, once [`run`] opened it, and its path.
static LOG_FILE: std::sync::OnceLock<std::sync::Mutex<(PathBuf, std::fs::File)>> =
    std::sync::OnceLock::new();

/// A log grown past this is moved to `watch.log.1` (the one before it
/// goes) and begun again: a watcher running for years keeps 8 MiB at most.
const LOG_LIMIT: u64 = 4 << 20;

/// A line of the watcher's log, with the time: on stdout, and in
/// `.dmv/watch.log`, which `dmv watch --status` reads.
fn say(line: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let line = format!("{} {line}\n", dmv_repo::utc_time(now));
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes()).and_then(|_| out.flush());
    if let Some(log) = LOG_FILE.get() {
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        let (path, file) = &mut *log;
        let _ = file.write_all(line.as_bytes());
        if file.metadata().is_ok_and(|m| m.len() > LOG_LIMIT) {
            let older = path.with_extension("log.1");
            if let Ok(fresh) = std::fs::rename(&*path, &older).and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&*path)
            }) {
                *file = fresh;
            }
        }
    }
}

/// Starts `dmv watch` with the same options, detached, its output appended
/// to the log; returns once it holds the watcher lock.
fn background(repo: &Repository, a: &WatchArgs) -> Result<u8> {
    let lock = repo.watcher_lock();
    if let Some(pid) = running(repo)? {
        bail!("a watcher already runs in this repository (pid {pid})");
    }
    let log_path = repo.dmv.join(LOG);
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
    let health = repo.watch_health();
    let kept = repo.kept_both();
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
    let log_path = repo.dmv.join(LOG);
    let Ok(mut file) = std::fs::File::open(&log_path) else {
        return Ok(0);
    };
    // The last 64 KiB hold the last ten lines: the log is not read whole.
    let len = file.metadata()?.len();
    let from = len.saturating_sub(64 << 10);
    file.seek(std::io::SeekFrom::Start(from))?;
    let mut lines: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .map_while(|l| l.ok())
        .collect();
    if from > 0 && !lines.is_empty() {
        // Begun mid-line.
        lines.remove(0);
    }
    println!("last of {}:", log_path.display());
    for line in &lines[lines.len().saturating_sub(10)..] {
        println!("  {line}");
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

/// `dmv-watch-<folder>-<hash of the path>`: one service per repository.
fn service_name(root: &Path) -> String {
    let folder: String = root
        .file_name()
        .map(|n| {
            n.to_string_lossy()
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect()
        })
        .unwrap_or_default();
    let hash = blake3_hex(root.as_os_str().as_encoded_bytes());
    format!("dmv-watch-{folder}-{}", &hash[..8])
}

fn blake3_hex(bytes: &[u8]) -> String {
    dmv_repo::store::ObjectId::hash(dmv_repo::store::ObjectKind::Chunk, bytes).to_hex()
}

/// A systemd user unit: arguments quoted as systemd reads them.
fn systemd_unit(root: &Path, argv: &[String]) -> String {
    let quoted: Vec<String> = argv
        .iter()
        .map(|a| {
            format!(
                "\"{}\"",
                a.replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('%', "%%")
            )
        })
        .collect();
    format!(
        "[Unit]\nDescription=dmv watch of {root}\n\n[Service]\nWorkingDirectory=\"{root}\"\nExecStart={exec}\nRestart=on-failure\nRestartSec=10\n\n[Install]\nWantedBy=default.target\n",
        root = root.display(),
        exec = quoted.join(" ")
    )
}

/// A launchd agent: started at load, restarted when it exits, its output in the watch log.
fn launchd_plist(label: &str, root: &Path, argv: &[String]) -> String {
    let xml = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let args: String = argv
        .iter()
        .map(|a| format!("\t\t<string>{}</string>\n", xml(a)))
        .collect();
    let root = xml(&root.to_string_lossy());
    let log = xml(&format!("{root}/.dmv/{LOG}"));
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n<dict>\n\t<key>Label</key>\n\t<string>{label}</string>\n\t<key>ProgramArguments</key>\n\t<array>\n{args}\t</array>\n\t<key>WorkingDirectory</key>\n\t<string>{root}</string>\n\t<key>RunAtLoad</key>\n\t<true/>\n\t<key>KeepAlive</key>\n\t<true/>\n\t<key>StandardOutPath</key>\n\t<string>{log}</string>\n\t<key>StandardErrorPath</key>\n\t<string>{log}</string>\n</dict>\n</plist>\n"
    )
}
