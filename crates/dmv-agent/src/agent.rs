//! The watch loop: commits what settled in the working tree, and with
//! sync on keeps it in step with every remote (a file changed on two
//! replicas keeps both versions), freeing the data others confirmed
//! holding when asked to. It runs until its stop flag is set.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dmv_repo::store::ObjectId;
use dmv_repo::{Mended, Moment, Repository, Silent, WatchHealth};
use dmv_watch::{FolderWatch, Mode, Settings};

/// How a watcher runs.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// How long without a change before what changed is committed.
    pub quiet: Duration,
    /// Reading the tree's stat data every few seconds instead of the OS's file events.
    pub poll: bool,
    /// Sync with every remote after each commit and every `sync_every`.
    pub sync: bool,
    /// Time between syncs when nothing changes here.
    pub sync_every: Duration,
    /// Time between looks at whether a remote moved (a listing of its
    /// refs); None: only `sync_every`.
    pub check_every: Option<Duration>,
    /// After each sync that reached every remote, free the data of the
    /// files here once enough other copies are confirmed.
    pub drop_after_push: bool,
    /// The copies that must remain elsewhere for `drop_after_push` (None:
    /// the configuration's).
    pub numcopies: Option<u32>,
}

/// Why a watcher commits nothing for now (said once, when it begins).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// Files still being written were left out of the commit.
    StillBeingWritten {
        /// The first of them.
        first: Vec<u8>,
        /// How many more.
        more: usize,
    },
    /// A merge a person started has conflicts to settle: nothing is
    /// committed or merged until then (what was committed before is still sent).
    MergeConflicts {
        /// What is being merged.
        label: String,
        /// How many files conflict.
        files: usize,
    },
    /// A rebase stopped on conflicts: nothing is committed until it is
    /// continued or given up.
    Rebase,
}

/// What the loop did, for the front end to say.
#[derive(Debug)]
pub enum Event {
    /// It began watching `root`; `polling`: why it reads the tree instead
    /// of taking file events.
    Watching {
        /// The working tree.
        root: PathBuf,
        /// Why file events are not used, if they are not.
        polling: Option<String>,
    },
    /// A merge or rebase a killed command left was finished or undone,
    /// at the start or by a sync.
    Mended(Mended),
    /// What a killed command left could not be finished.
    CannotMend(String),
    /// A commit of what changed.
    Committed {
        /// The commit.
        id: ObjectId,
        /// Its message.
        message: String,
    },
    /// The commit failed; the next change tries again.
    CannotCommit(String),
    /// The lock of a lockable file changed here was taken for this user.
    Locked {
        /// The file.
        path: String,
    },
    /// A lockable file changed here is locked by someone else: the change
    /// is left uncommitted until the lock is this user's (said once per
    /// file and holder).
    LockedByOther {
        /// The file.
        path: String,
        /// Who holds it.
        holder: String,
    },
    /// Taking the locks of changed files failed; the next change tries again.
    CannotLock(String),
    /// A reason to wait began.
    Waiting(Waiting),
    /// The sync failed as a whole.
    CannotSync(String),
    /// A pull merged what a remote had.
    Merged {
        /// The remote.
        remote: String,
        /// What was merged.
        label: String,
    },
    /// A push sent commits to a remote.
    Sent {
        /// The remote.
        remote: String,
    },
    /// A remote was not reached this time.
    NotReached {
        /// The remote.
        remote: String,
        /// Why.
        why: String,
    },
    /// A file changed on two replicas: both versions were kept.
    KeptBoth {
        /// The file.
        path: Vec<u8>,
        /// The names both versions are kept under.
        kept: Vec<Vec<u8>>,
    },
    /// File data here was freed, its copies confirmed elsewhere.
    Freed {
        /// How many files.
        files: usize,
        /// Bytes of the store freed.
        bytes: u64,
        /// The replicas that confirmed their copies.
        confirmed_by: Vec<String>,
    },
    /// Nothing was freed, and why.
    KeptData(String),
    /// The loop ended on its stop flag.
    Stopped,
}

/// The front end of a watcher: its words for what happened, and where they go.
pub trait Reporter {
    /// The words for `event`, as the front end says them. The health
    /// record keeps those of failures.
    fn words(&self, event: &Event) -> String;
    /// The words for a reason to wait, kept in the health record while it lasts.
    fn waiting_words(&self, waiting: &Waiting) -> String;
    /// Says `words` (of `event`): a terminal, a log.
    fn say(&mut self, event: &Event, words: &str);
}

/// Why a watcher could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Another watcher holds the repository's watcher lock.
    #[error("a watcher already runs in this repository ({holder})")]
    AlreadyRunning {
        /// Who holds the lock, as the lock says.
        holder: String,
    },
    /// The repository failed.
    #[error(transparent)]
    Repo(#[from] dmv_repo::RepoError),
    /// Watching the folder failed.
    #[error(transparent)]
    Watch(#[from] dmv_watch::WatchError),
}

/// The reporter, as the loop speaks through it.
struct Voice<'a> {
    reporter: &'a mut dyn Reporter,
}

impl Voice<'_> {
    /// Says what happened; its words.
    fn say(&mut self, event: Event) -> String {
        let words = self.reporter.words(&event);
        self.reporter.say(&event, &words);
        words
    }
}

/// Watches `repo` until `stop` is set. `wake` ends a wait for changes
/// early (the front end sets it with `stop` on a signal); the loop sets it
/// itself when a remote tells of news or it is time to sync.
pub fn run(
    given: &Repository,
    options: &WatchOptions,
    stop: Arc<AtomicBool>,
    wake: Arc<AtomicBool>,
    reporter: &mut dyn Reporter,
) -> Result<(), AgentError> {
    let lock = given.watcher_lock();
    let Some(_held) = lock.try_acquire()? else {
        return Err(AgentError::AlreadyRunning {
            holder: lock.holder(),
        });
    };
    let mut voice = Voice { reporter };
    let mut following = Following::new(given);
    let repo = given;
    let settings = Settings {
        quiet: options.quiet,
        force_poll: options.poll,
        ..Settings::default()
    };
    let mut folder =
        FolderWatch::start(&repo.root, Arc::new(|_: &std::path::Path| false), settings)?;
    voice.say(Event::Watching {
        root: repo.root.clone(),
        polling: match folder.mode() {
            Mode::Events => None,
            Mode::Polling(why) => Some(why.to_string()),
        },
    });
    let (sync, sync_every, check_every) = (options.sync, options.sync_every, options.check_every);
    let mut next_sync = Instant::now();
    let mut next_check = Instant::now() + check_every.unwrap_or(sync_every);
    let listen = |repo: &Repository| {
        check_every
            .filter(|_| sync)
            .map(|_| NewsBoard::listen(repo, wake.clone()))
    };
    let mut board = listen(repo);
    let mut health = WatchHealth {
        started: unix_now(),
        ..Default::default()
    };
    // A merge or rebase a killed command left: finished or undone before anything is committed on top.
    match repo.merges().mend_cut_short() {
        Ok(Some(mended)) => {
            voice.say(Event::Mended(mended));
        }
        Ok(None) => {}
        Err(e) => {
            voice.say(Event::CannotMend(e.to_string()));
        }
    }
    // Files found locked by someone else, with who: each said once.
    let mut told = std::collections::HashSet::new();
    // Changed files someone else holds locked: left out of each commit
    // until the lock is this user's, looked at again at each change and
    // each sync.
    let mut left_out: Vec<Vec<u8>> = Vec::new();
    // What changed while no watcher ran is committed first.
    let mut changed = true;
    while !stop.load(Ordering::Relaxed) {
        if following.refresh() {
            // Listened to as configured now; the old board's listeners
            // stop at their next answer.
            board = listen(following.repo());
        }
        let repo = following.repo();
        let retry_left_out = !left_out.is_empty() && Instant::now() >= next_sync;
        if changed || retry_left_out {
            left_out = take_locks(repo, &mut told, &mut voice);
            let (held_back, still_open) = commit(repo, &left_out, &mut health, &mut voice);
            folder.retry(&held_back, &still_open);
        }
        let mut sync_now = sync && (changed || Instant::now() >= next_sync);
        // A remote that tells of news is not asked every few seconds; one heard from is asked now.
        let heard = board
            .as_ref()
            .is_some_and(|b| b.heard.swap(false, Ordering::Relaxed));
        let poll_due = check_every.is_some_and(|_| Instant::now() >= next_check)
            && !board.as_ref().is_some_and(NewsBoard::all_listening);
        if sync && !sync_now && (heard || poll_due) {
            sync_now = dmv_sync::current_branch(repo)
                .is_ok_and(|branch| !dmv_sync::moved_since_last_sync(repo, &branch).is_empty());
        }
        if let Some(every) = check_every.filter(|_| Instant::now() >= next_check) {
            next_check = Instant::now() + every;
        }
        if sync_now {
            let reached_all = sync_all(repo, &mut health, &mut voice);
            if reached_all && options.drop_after_push {
                drop_sent(repo, options.numcopies, &mut voice);
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
        let timer = sync.then(|| wake_at(wake_time, wake.clone()));
        changed = folder.next_settled(&wake)?.is_some();
        drop(timer);
    }
    voice.say(Event::Stopped);
    Ok(())
}

/// The repository the loop works through: the handle it was given until
/// the configuration file changes on disk, then one opened again. A handle
/// reads its configuration once, when opened, but a person changes it from
/// other processes while the watcher runs (`dmv remote add`, a slice,
/// numcopies): a watcher left running for a month follows what was set
/// since it started. Comparing the file's bytes (a few hundred) each turn
/// of the loop costs a read; a stat would miss two writes within one tick
/// of the clock.
struct Following<'a> {
    given: &'a Repository,
    reopened: Option<Repository>,
    /// The configuration file as the handle in use read it (None: unreadable).
    read: Option<Vec<u8>>,
}

impl<'a> Following<'a> {
    fn new(given: &'a Repository) -> Following<'a> {
        Following {
            given,
            reopened: None,
            read: std::fs::read(given.dmv.join("config")).ok(),
        }
    }

    /// Opens the repository again if its configuration changed since the
    /// handle in use read it; says whether it did. A configuration that
    /// does not open (damaged by hand) leaves the handle as it was, and is
    /// tried again next turn.
    fn refresh(&mut self) -> bool {
        let now = std::fs::read(self.given.dmv.join("config")).ok();
        if now.is_none() || now == self.read {
            return false;
        }
        match Repository::open(&self.given.root) {
            Ok(repo) => {
                self.reopened = Some(repo);
                self.read = now;
                true
            }
            Err(_) => false,
        }
    }

    fn repo(&self) -> &Repository {
        self.reopened.as_ref().unwrap_or(self.given)
    }
}

/// The remotes that tell this watcher when their refs change (a DMV
/// server over HTTP: see `dmv_sync::NewsListener`), a thread each: while
/// every remote does, the watcher asks none every --check-every seconds.
struct NewsBoard {
    /// A remote told of a change since the watcher last looked.
    heard: Arc<AtomicBool>,
    /// Remotes not listened to now (not HTTP, an older server, or unreachable).
    deaf: Arc<AtomicUsize>,
    /// Set when the board is replaced (the configuration changed) or the
    /// loop ends: its listeners stop at their next answer or retry, so a
    /// watcher whose remotes change over a month does not gather threads.
    closed: Arc<AtomicBool>,
}

impl Drop for NewsBoard {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

/// How long a listener that lost its remote waits before connecting again.
const LISTEN_AGAIN_AFTER: Duration = Duration::from_secs(10);

impl NewsBoard {
    fn listen(repo: &Repository, wake: Arc<AtomicBool>) -> NewsBoard {
        let names: Vec<String> = repo.config.remotes.keys().cloned().collect();
        let board = NewsBoard {
            heard: Arc::new(AtomicBool::new(false)),
            deaf: Arc::new(names.len().into()),
            closed: Arc::new(AtomicBool::new(false)),
        };
        for name in names {
            let (root, heard, deaf, wake, closed) = (
                repo.root.clone(),
                board.heard.clone(),
                board.deaf.clone(),
                wake.clone(),
                board.closed.clone(),
            );
            std::thread::spawn(move || {
                let Ok(repo) = Repository::open(&root) else {
                    return;
                };
                while !closed.load(Ordering::SeqCst) {
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
                        if closed.load(Ordering::SeqCst) {
                            return;
                        }
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

/// Takes the locks of lockable files that changed (dmv-sync's
/// `take_locks_of_changes`) before they are committed, and says which
/// someone else holds, once per file and holder (`told`). Returns those:
/// the commit leaves them out (a push of them would be refused, and the
/// holder's next version would then conflict with a commit of ours). When
/// the remote cannot be asked, none: the commit goes on as a command's
/// does, and the push is checked.
fn take_locks(
    repo: &Repository,
    told: &mut std::collections::HashSet<(String, String)>,
    voice: &mut Voice<'_>,
) -> Vec<Vec<u8>> {
    match dmv_sync::take_locks_of_changes(repo) {
        Ok(done) => {
            for path in done.taken {
                voice.say(Event::Locked { path });
            }
            let mut held = Vec::with_capacity(done.held_by_others.len());
            for (path, holder) in done.held_by_others {
                held.push(path.clone().into_bytes());
                if told.insert((path.clone(), holder.clone())) {
                    voice.say(Event::LockedByOther { path, holder });
                }
            }
            held
        }
        Err(e) => {
            voice.say(Event::CannotLock(e.to_string()));
            Vec::new()
        }
    }
}

/// One commit of what changed; a failure is said and the watch goes on
/// (a full disk, a file that vanished while it was read: the next change
/// tries again). Returns the files left out because they were still being
/// written, to look at again, and those of them still open. What it did
/// and what waits goes in `health`.
fn commit(
    repo: &Repository,
    left_out: &[Vec<u8>],
    health: &mut WatchHealth,
    voice: &mut Voice<'_>,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let now = unix_now();
    let mut waiting = Vec::new();
    let held_back = match repo.commit_everything(left_out, &Silent) {
        Ok(done) => {
            health.last_looked = Some(now);
            if let Some(made) = &done.commit {
                health.last_commit = Some(Moment::new(
                    now,
                    &format!("{}: {}", made.id.short(), made.message),
                ));
                voice.say(Event::Committed {
                    id: made.id,
                    message: made.message.clone(),
                });
            }
            if let Some(first) = done.held_back.first() {
                waiting.push(Waiting::StillBeingWritten {
                    first: first.clone(),
                    more: done.held_back.len() - 1,
                });
            }
            let paths = |list: &[Vec<u8>]| {
                list.iter()
                    .map(|p| dmv_os::rel_path(p).into_owned())
                    .collect::<Vec<PathBuf>>()
            };
            (paths(&done.held_back), paths(&done.still_open))
        }
        Err(e) => {
            let words = voice.say(Event::CannotCommit(e.to_string()));
            health.note_error(now, &words);
            (Vec::new(), Vec::new())
        }
    };
    // A merge a person started and has not settled: nothing is committed until then.
    if let Ok(Some(merge)) = repo.merges().merge_state() {
        if !merge.conflicts.is_empty() {
            waiting.push(Waiting::MergeConflicts {
                label: merge.label.clone(),
                files: merge.conflicts.len(),
            });
        }
    }
    if let Ok(Some(_)) = repo.merges().rebase_state() {
        waiting.push(Waiting::Rebase);
    }
    let words: Vec<String> = waiting
        .iter()
        .map(|w| voice.reporter.waiting_words(w))
        .collect();
    // Each reason to wait is said once, when it begins.
    for (reason, said) in waiting.into_iter().zip(&words) {
        if !health.waiting.contains(said) {
            voice.say(Event::Waiting(reason));
        }
    }
    health.set_waiting(words);
    let _ = repo.maintenance().save_watch_health(health);
    held_back
}

/// One sync with every remote; whether it reached them all.
fn sync_all(repo: &Repository, health: &mut WatchHealth, voice: &mut Voice<'_>) -> bool {
    let now = unix_now();
    let done = match dmv_sync::sync_keeping_both(repo, &Silent) {
        Ok(done) => done,
        Err(e) => {
            let words = voice.say(Event::CannotSync(e.to_string()));
            health.note_error(now, &words);
            let _ = repo.maintenance().save_watch_health(health);
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
    let _ = repo.maintenance().save_watch_health(health);
    let reached_all = done
        .passes
        .last()
        .is_some_and(|pass| pass.skipped.is_empty() && pass.stopped_at.is_none());
    for pass in done.passes {
        if let Some(mended) = pass.mended {
            voice.say(Event::Mended(mended));
        }
        for (remote, pulled) in &pass.pulled {
            if !matches!(pulled.merge, dmv_repo::MergeOutcome::UpToDate) {
                voice.say(Event::Merged {
                    remote: remote.clone(),
                    label: pulled.label.clone(),
                });
            }
        }
        for (remote, pushed) in &pass.pushed {
            if !pushed.updated.is_empty() {
                voice.say(Event::Sent {
                    remote: remote.clone(),
                });
            }
        }
        for (remote, why) in pass.skipped {
            voice.say(Event::NotReached { remote, why });
        }
    }
    for kept in done.kept_both {
        voice.say(Event::KeptBoth {
            path: kept.path,
            kept: kept.kept,
        });
    }
    reached_all
}

/// Frees the data of every file here whose copies elsewhere are confirmed
/// (the drop's own rule: all of them, or none and the reason said).
fn drop_sent(repo: &Repository, numcopies: Option<u32>, voice: &mut Voice<'_>) {
    let here = match repo.load_dirstate() {
        Ok(ds) => ds.entries.values().filter(|e| !e.is_absent()).count(),
        Err(e) => {
            voice.say(Event::KeptData(e.to_string()));
            return;
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
        Ok(dropped) if dropped.files > 0 => {
            voice.say(Event::Freed {
                files: dropped.files,
                bytes: dropped.freed_bytes,
                confirmed_by: dropped.confirmed_by,
            });
        }
        Ok(_) => {}
        Err(e) => {
            voice.say(Event::KeptData(e.to_string()));
        }
    }
}
