//! Watches a folder and says when a batch of changes has settled, for
//! `dmv watch`: the caller then commits the working tree as it is.
//!
//! A batch settles when something changed, then nothing changed for the
//! quiet period, every changed file still has the size, mtime and ctime it
//! had when last looked at, and no file written to has yet to be closed (on
//! Linux, inotify says when a file opened for writing is closed). So a file
//! still being written is not handed over half-written, and a burst of ten
//! thousand new files is one batch.
//!
//! Changes are learnt from the OS's file events (`notify`, one watch per
//! folder so that `.dmv` and ignored folders cost nothing) and, where those
//! are missing, from a full stat scan compared with the tree as last
//! reported: after the event queue overflowed or reported an error, every
//! `Settings::rescan` as a safety net, and every `Settings::poll` when
//! events cannot be had at all (`Mode::Polling`: asked for, a network file
//! system, the inotify watch limit reached). Waiting is blocking on the event
//! channel with a timeout, so an idle watch costs almost no CPU.
//!
//! Changes made before [`FolderWatch::start`] are not reported: the caller
//! commits them itself before it starts waiting.
//!
//! Files, bottom up: `error`, `tree` (which paths count, stat stamps, the
//! walk), and this file, the [`FolderWatch`].

#![warn(missing_docs)]

mod error;
mod tree;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

pub use error::WatchError;
pub use tree::Ignore;
use tree::{Look, Stamp, Tree};

/// How long `next_settled` waits, at most, between two looks at its stop flag.
const STOP_CHECK: Duration = Duration::from_millis(250);

/// Events that may wait for us while the caller commits; past that the OS's
/// thread drops them and we rescan, rather than hold millions in memory.
const QUEUE: usize = 65_536;

/// The shortest interval between two full scans, whatever the settings say.
const MIN_SCAN_INTERVAL: Duration = Duration::from_millis(100);

/// Only inotify says when a file opened for writing is closed; elsewhere
/// (FSEvents, ReadDirectoryChangesW, kqueue) a write's mark would never clear,
/// so stability alone decides.
const CLOSE_EVENTS: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// How many events one round takes before looking at what they named, so a
/// flood still lets the loop check its stop flag and timers.
const ROUND: usize = 10_000;

/// When a batch counts as settled, and how often to scan.
#[derive(Clone, Debug)]
pub struct Settings {
    /// How long nothing may change before a batch settles.
    pub quiet: Duration,
    /// How often to compare a full stat scan with the tree, in case events
    /// were lost without the OS saying so. Also how long a file written to
    /// and never closed (as far as events say) may hold a batch back.
    pub rescan: Duration,
    /// How often to scan in [`Mode::Polling`].
    pub poll: Duration,
    /// Poll even where events are available.
    pub force_poll: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            quiet: Duration::from_secs(5),
            rescan: Duration::from_secs(600),
            poll: Duration::from_secs(2),
            force_poll: false,
        }
    }
}

/// How changes are learnt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// From the OS's file events.
    Events,
    /// From a full stat scan every [`Settings::poll`].
    Polling(PollReason),
}

/// Why a watch polls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollReason {
    /// [`Settings::force_poll`].
    Asked,
    /// The folder is on a network file system, where changes made elsewhere raise no events here.
    NetworkFileSystem,
    /// The OS's limit on watched folders was reached (on Linux `fs.inotify.max_user_watches`).
    WatchLimit,
    /// The OS's file events could not be set up.
    NoEvents,
}

impl fmt::Display for PollReason {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            PollReason::Asked => "polling was asked for",
            PollReason::NetworkFileSystem => "the folder is on a network file system",
            PollReason::WatchLimit => "the limit on watched folders was reached (on Linux raise fs.inotify.max_user_watches)",
            PollReason::NoEvents => "file events are not available",
        })
    }
}

/// A batch of changes that has settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    /// The files (and symlinks) that changed, relative to the root, sorted,
    /// each once; a deleted one is included. A hint for the commit message:
    /// the working tree as it is, not this list, is what to commit.
    pub paths: Vec<PathBuf>,
    /// Whether a full scan found some of it, because events were lost or unavailable.
    pub rescanned: bool,
}

/// A watched folder. Dropping it stops the watch.
pub struct FolderWatch {
    tree: Tree,
    settings: Settings,
    mode: Mode,
    watcher: Option<RecommendedWatcher>,
    events: Receiver<notify::Result<Event>>,
    /// Kept so the channel never disconnects: in polling mode, waiting on it is the sleep.
    _sender: Sender<notify::Result<Event>>,
    /// Set by the OS's thread when the queue was full and it dropped an event.
    overflowed: Arc<AtomicBool>,
    /// The files as the last batch (or the start) left them.
    reported: BTreeMap<PathBuf, Stamp>,
    /// Polling only: the files as the previous scan saw them.
    last_scan: BTreeMap<PathBuf, Stamp>,
    /// The batch so far: each changed path with its stamp when last looked at.
    pending: BTreeMap<PathBuf, Option<Stamp>>,
    /// Paths named by events and not yet looked at.
    touched: BTreeSet<PathBuf>,
    /// Files written to (or created) and not closed since, with the time of the last write.
    writing: HashMap<PathBuf, Instant>,
    last_change: Instant,
    /// The next periodic rescan (events) or scan (polling).
    next_scan: Instant,
    needs_rescan: bool,
    rescanned: bool,
}

impl FolderWatch {
    /// Starts watching `root`. `ignore` gets paths relative to it; `.dmv` at
    /// the root is always ignored. Falls back to polling where events cannot
    /// be had; fails only when `root` is not a readable folder.
    pub fn start(
        root: &Path,
        ignore: Ignore,
        settings: Settings,
    ) -> Result<FolderWatch, WatchError> {
        let canonical = dmv_os::canonicalize(root).map_err(|source| WatchError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        if !canonical.is_dir() {
            return Err(WatchError::NotAFolder {
                path: root.to_path_buf(),
            });
        }
        let (sender, events) = crossbeam_channel::bounded(QUEUE);
        let overflowed = Arc::new(AtomicBool::new(false));
        let (watcher, mode) = if settings.force_poll {
            (None, Mode::Polling(PollReason::Asked))
        } else if tree::on_network_fs(&canonical) {
            (None, Mode::Polling(PollReason::NetworkFileSystem))
        } else {
            match RecommendedWatcher::new(
                handler(sender.clone(), overflowed.clone()),
                notify::Config::default(),
            ) {
                Ok(watcher) => (Some(watcher), Mode::Events),
                Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                    (None, Mode::Polling(PollReason::WatchLimit))
                }
                Err(_) => (None, Mode::Polling(PollReason::NoEvents)),
            }
        };
        let now = Instant::now();
        let mut watch = FolderWatch {
            tree: Tree::new(canonical, ignore),
            settings,
            mode,
            watcher,
            events,
            _sender: sender,
            overflowed,
            reported: BTreeMap::new(),
            last_scan: BTreeMap::new(),
            pending: BTreeMap::new(),
            touched: BTreeSet::new(),
            writing: HashMap::new(),
            last_change: now,
            next_scan: now,
            needs_rescan: false,
            rescanned: false,
        };
        // Watches go on before each folder is listed, so what changes during
        // the first scan is seen by one or the other.
        watch.reported = watch.scan()?;
        watch.last_scan = if watch.polling() {
            watch.reported.clone()
        } else {
            BTreeMap::new()
        };
        watch.next_scan = later(Instant::now(), watch.scan_interval());
        Ok(watch)
    }

    /// How changes are being learnt now (events can give way to polling while watching).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The watched folder, canonical.
    pub fn root(&self) -> &Path {
        &self.tree.root
    }

    /// Puts `paths` (relative to the root) back in the batch: the caller
    /// left them out because they were still being written, and their close
    /// may bring no change of stamp that would. Those `still_open` (a writer
    /// had them open) count as being written, so the batch settles once
    /// their close event comes; the others (and all, without close events)
    /// settle after the quiet period, to be tried again. A file replaced by
    /// a rename has no close to come: marked open, it held the batch back
    /// for a whole rescan interval.
    pub fn retry(&mut self, paths: &[PathBuf], still_open: &[PathBuf]) {
        let now = Instant::now();
        for path in paths {
            self.reported.remove(path);
            let stamp = self.tree.look(path).stamp();
            self.pending.insert(path.clone(), stamp);
            if CLOSE_EVENTS && !self.polling() && still_open.contains(path) {
                self.writing.insert(path.clone(), now);
            }
        }
        if !paths.is_empty() {
            self.last_change = Instant::now();
        }
    }

    /// Makes the next batch come from a full scan, as after an overflow of the event queue.
    #[doc(hidden)]
    pub fn force_rescan(&mut self) {
        self.needs_rescan = true;
    }

    /// Blocks until a batch of changes has settled, or returns None once
    /// `stop` is set (seen within a quarter of a second).
    pub fn next_settled(&mut self, stop: &AtomicBool) -> Result<Option<Settled>, WatchError> {
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if self.overflowed.swap(false, Ordering::Relaxed) {
                // The events still queued are older than the scan about to be
                // taken, which covers them; the close events of their writes
                // may be among those dropped, so their marks would never clear.
                for _ in 0..QUEUE {
                    if self.events.try_recv().is_err() {
                        break;
                    }
                }
                self.needs_rescan = true;
            }
            if self.needs_rescan {
                self.rescan(true)?;
            } else if Instant::now() >= self.next_scan {
                if self.polling() {
                    self.poll()?;
                } else {
                    self.rescan(false)?;
                }
            }
            self.forget_silent_writers();
            let now = Instant::now();
            let quiet_until = later(self.last_change, self.settings.quiet);
            let may_settle = !self.pending.is_empty() && self.writing.is_empty();
            if may_settle && now >= quiet_until {
                // When polling, a file may have appeared since the last scan: look once more first.
                if self.polling() && self.poll()? {
                    continue;
                }
                if let Some(settled) = self.settle() {
                    return Ok(Some(settled));
                }
                continue;
            }
            let mut wake = later(now, STOP_CHECK).min(self.next_scan);
            if may_settle {
                wake = wake.min(quiet_until);
            }
            // No disconnection can happen (we hold a sender): an error is the timeout.
            if let Ok(event) = self.events.recv_deadline(wake) {
                self.absorb(event);
                for _ in 0..ROUND {
                    match self.events.try_recv() {
                        Ok(event) => self.absorb(event),
                        Err(_) => break,
                    }
                }
                self.look_at_touched();
            }
        }
    }

    fn polling(&self) -> bool {
        matches!(self.mode, Mode::Polling(_))
    }

    /// A zero interval from a config must not become a busy loop.
    fn scan_interval(&self) -> Duration {
        if self.polling() {
            self.settings.poll
        } else {
            self.settings.rescan
        }
        .max(MIN_SCAN_INTERVAL)
    }

    fn fall_back_to_polling(&mut self, reason: PollReason) {
        self.watcher = None;
        self.mode = Mode::Polling(reason);
    }

    /// A full scan of the tree, putting a watch on every folder when events are on.
    fn scan(&mut self) -> Result<BTreeMap<PathBuf, Stamp>, WatchError> {
        let mut files = BTreeMap::new();
        let root = Path::new("");
        let limit = match &mut self.watcher {
            Some(watcher) => watch_each(&self.tree, watcher, root, &mut files),
            None => self
                .tree
                .walk(root, &mut |_| {}, &mut files)
                .map(|()| false),
        }
        .map_err(|source| WatchError::Root {
            path: self.tree.root.clone(),
            source,
        })?;
        if limit {
            self.fall_back_to_polling(PollReason::WatchLimit);
        }
        Ok(files)
    }

    /// Compares a full scan with the tree as last reported; what differs
    /// joins the batch. `lost`: events were lost, among them perhaps the
    /// close events that would clear the marks of files being written.
    fn rescan(&mut self, lost: bool) -> Result<(), WatchError> {
        let files = self.scan()?;
        let mut found = false;
        let gone = self
            .reported
            .keys()
            .filter(|path| !files.contains_key(*path))
            .map(|path| (path.clone(), None));
        let changed = files
            .iter()
            .filter(|(path, stamp)| self.reported.get(*path) != Some(stamp))
            .map(|(path, stamp)| (path.clone(), Some(*stamp)));
        for (path, stamp) in gone.chain(changed).collect::<Vec<_>>() {
            found |= self.merge(path, stamp);
        }
        if lost {
            self.writing.clear();
        }
        if found {
            self.last_change = Instant::now();
        }
        self.rescanned |= found;
        self.needs_rescan = false;
        if self.polling() {
            self.last_scan = files;
        }
        self.next_scan = later(Instant::now(), self.scan_interval());
        Ok(())
    }

    /// One scan in polling mode: what changed since the previous scan joins
    /// the batch. Says whether anything did.
    fn poll(&mut self) -> Result<bool, WatchError> {
        let files = self.scan()?;
        let gone = self
            .last_scan
            .keys()
            .filter(|path| !files.contains_key(*path))
            .map(|path| (path.clone(), None));
        let changed = files
            .iter()
            .filter(|(path, stamp)| self.last_scan.get(*path) != Some(stamp))
            .map(|(path, stamp)| (path.clone(), Some(*stamp)));
        let mut found = false;
        for (path, stamp) in gone.chain(changed).collect::<Vec<_>>() {
            found |= self.merge(path, stamp);
        }
        if found {
            self.last_change = Instant::now();
            self.rescanned = true;
        }
        self.last_scan = files;
        self.next_scan = later(Instant::now(), self.scan_interval());
        Ok(found)
    }

    /// Adds a path to the batch with its stamp now; says whether that is news.
    fn merge(&mut self, path: PathBuf, stamp: Option<Stamp>) -> bool {
        self.pending.insert(path, stamp) != Some(stamp)
    }

    fn absorb(&mut self, event: notify::Result<Event>) {
        let event = match event {
            Ok(event) => event,
            Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                self.fall_back_to_polling(PollReason::WatchLimit);
                self.needs_rescan = true;
                return;
            }
            Err(_) => {
                self.needs_rescan = true;
                return;
            }
        };
        // The root removed or moved away: the scan that follows reports it.
        let root_gone = matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        ) && event.paths.contains(&self.tree.root);
        if event.need_rescan() || root_gone {
            self.needs_rescan = true;
            return;
        }
        let paths: Vec<PathBuf> = event
            .paths
            .iter()
            .filter_map(|path| self.tree.rel(path))
            .collect();
        let now = Instant::now();
        match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
                for path in &paths {
                    self.writing.remove(path);
                }
            }
            EventKind::Access(_) => return,
            EventKind::Create(CreateKind::File) if CLOSE_EVENTS => {
                for path in paths.iter().filter(|path| self.tree.fresh_file(path)) {
                    self.writing.insert(path.clone(), now);
                }
            }
            EventKind::Modify(ModifyKind::Data(_)) if CLOSE_EVENTS => {
                for path in &paths {
                    self.writing.insert(path.clone(), now);
                }
            }
            // A writer's open file follows its inode to the new name.
            EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => {
                if let [from, to] = &paths[..] {
                    if let Some(since) = self.writing.remove(from) {
                        self.writing.insert(to.clone(), since);
                    }
                }
            }
            EventKind::Remove(_) => {
                for path in &paths {
                    self.writing.remove(path);
                }
            }
            _ => {}
        }
        self.touched.extend(paths);
    }

    /// Looks at what the events named: a folder is walked (a new one holds
    /// files made before its watch was on), a vanished folder takes its files
    /// with it.
    fn look_at_touched(&mut self) {
        if self.touched.is_empty() {
            return;
        }
        self.last_change = Instant::now();
        for path in std::mem::take(&mut self.touched) {
            match self.tree.look(&path) {
                Look::Entry(stamp) => {
                    self.merge(path, Some(stamp));
                }
                Look::Missing => {
                    // A folder moved away takes its open files' marks with it.
                    self.writing.retain(|open, _| !open.starts_with(&path));
                    let inside: Vec<PathBuf> = self
                        .reported
                        .range(path.clone()..)
                        .map(|(p, _)| p)
                        .take_while(|p| p.starts_with(&path))
                        .cloned()
                        .collect();
                    for gone in inside {
                        self.merge(gone, None);
                    }
                    self.merge(path, None);
                }
                Look::Folder => {
                    let mut files = BTreeMap::new();
                    let limit = match &mut self.watcher {
                        Some(watcher) => {
                            watch_each(&self.tree, watcher, &path, &mut files).unwrap_or(false)
                        }
                        // A folder gone again meanwhile has its own event.
                        None => {
                            let _ = self.tree.walk(&path, &mut |_| {}, &mut files);
                            false
                        }
                    };
                    if limit {
                        self.fall_back_to_polling(PollReason::WatchLimit);
                        self.needs_rescan = true;
                    }
                    for (file, stamp) in files {
                        self.merge(file, Some(stamp));
                    }
                    // A file replaced by a folder of the same name is gone.
                    if self.reported.contains_key(&path) {
                        self.merge(path, None);
                    }
                }
            }
        }
    }

    /// A write without a close event (truncate(2) by path, a close lost
    /// without an overflow) must not stop every later commit: a file not
    /// written to for a whole rescan interval counts as closed.
    fn forget_silent_writers(&mut self) {
        let rescan = self.settings.rescan;
        self.writing.retain(|_, since| since.elapsed() < rescan);
    }

    /// The batch, if every pending file still looks as it did; otherwise the
    /// quiet period starts again.
    fn settle(&mut self) -> Option<Settled> {
        let mut steady = true;
        for (path, seen) in self.pending.iter_mut() {
            let now = self.tree.look(path).stamp();
            if *seen != now {
                *seen = now;
                steady = false;
            }
        }
        if !steady {
            self.last_change = Instant::now();
            return None;
        }
        let mut paths = Vec::new();
        for (path, stamp) in std::mem::take(&mut self.pending) {
            // A file made and removed within the batch changed nothing.
            if self.reported.get(&path) == stamp.as_ref() {
                continue;
            }
            match stamp {
                Some(stamp) => self.reported.insert(path.clone(), stamp),
                None => self.reported.remove(&path),
            };
            paths.push(path);
        }
        let rescanned = std::mem::take(&mut self.rescanned);
        (!paths.is_empty()).then_some(Settled { paths, rescanned })
    }
}

/// `from + wait`, or far ahead for a wait too long to add (a config's way to say "never").
fn later(from: Instant, wait: Duration) -> Instant {
    from.checked_add(wait)
        .or_else(|| from.checked_add(Duration::from_secs(1 << 32)))
        .unwrap_or(from)
}

/// The OS's thread sends events here; it drops those that say only that a
/// file was opened or read (our own scans and the caller's reads make them),
/// and flags an overflow rather than block.
fn handler(
    sender: Sender<notify::Result<Event>>,
    overflowed: Arc<AtomicBool>,
) -> impl FnMut(notify::Result<Event>) + Send + 'static {
    move |event| {
        if let Ok(Event {
            kind: EventKind::Access(access),
            ..
        }) = &event
        {
            if *access != AccessKind::Close(AccessMode::Write) {
                return;
            }
        }
        if let Err(TrySendError::Full(_)) = sender.try_send(event) {
            overflowed.store(true, Ordering::Relaxed);
        }
    }
}

/// Walks `rel` putting a watch on each folder before listing it. Says whether
/// the OS's limit on watches was reached; other watch errors (a folder gone
/// meanwhile, one we may not read) leave that folder to the rescans.
fn watch_each(
    tree: &Tree,
    watcher: &mut RecommendedWatcher,
    rel: &Path,
    files: &mut BTreeMap<PathBuf, Stamp>,
) -> std::io::Result<bool> {
    let mut limit = false;
    tree.walk(
        rel,
        &mut |folder| {
            if !limit {
                if let Err(e) = watcher.watch(folder, RecursiveMode::NonRecursive) {
                    limit = matches!(e.kind, notify::ErrorKind::MaxFilesWatch);
                }
            }
        },
        files,
    )?;
    Ok(limit)
}

/// The deepest folder holding all of `paths`, or None when that is the root
/// (or there are no paths): for a commit message's "in photos/2026".
pub fn common_folder(paths: &[PathBuf]) -> Option<PathBuf> {
    let mut common: Option<PathBuf> = None;
    for path in paths {
        let folder = path.parent().unwrap_or(Path::new(""));
        common = Some(match common {
            None => folder.to_path_buf(),
            Some(so_far) => so_far
                .components()
                .zip(folder.components())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    common.filter(|folder| !folder.as_os_str().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_folder_is_the_deepest_shared_one() {
        let paths = |list: &[&str]| list.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(
            common_folder(&paths(&["photos/2026/a.jpg", "photos/2026/b/c.jpg"])),
            Some(PathBuf::from("photos/2026"))
        );
        assert_eq!(
            common_folder(&paths(&["photos/2026/a.jpg", "photos/2025/b.jpg"])),
            Some(PathBuf::from("photos"))
        );
        assert_eq!(
            common_folder(&paths(&["photos/a.jpg", "video/b.mp4"])),
            None
        );
        assert_eq!(common_folder(&paths(&["a.jpg"])), None);
        assert_eq!(common_folder(&[]), None);
    }
}
