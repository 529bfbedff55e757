//! A real folder, real file events: what settles, when, and what it names.
//!
//! Where a test says a batch must not come before something, it checks the
//! order (a flag set before that something, read when the batch arrives),
//! never a duration. Waits for an expected batch are generous; a wait that
//! expects no batch can only let a bug through, never fail a good build.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use dmv_watch::{FolderWatch, Ignore, Mode, PollReason, Settings, Settled, WatchError};

/// The tests run one at a time: two bursts of files on two cores would make
/// a writer thread pause longer than a quiet period.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

const EXPECTED: Duration = Duration::from_secs(60);

fn quiet(ms: u64) -> Settings {
    Settings {
        quiet: Duration::from_millis(ms),
        ..Settings::default()
    }
}

fn nothing_ignored() -> Ignore {
    Arc::new(|_: &Path| false)
}

fn paths(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

/// A watch running in its own thread, handing over each batch with the value
/// the test's flag had when the batch arrived.
struct Watching {
    stop: Arc<AtomicBool>,
    batches: Receiver<(Settled, bool)>,
    thread: Option<JoinHandle<()>>,
}

impl Watching {
    fn start(root: &Path, ignore: Ignore, settings: Settings, flag: Arc<AtomicBool>) -> Watching {
        let mut watch = FolderWatch::start(root, ignore, settings).expect("start the watch");
        let stop = Arc::new(AtomicBool::new(false));
        let (send, batches) = mpsc::channel();
        let thread = thread::spawn({
            let stop = stop.clone();
            move || {
                while let Some(settled) = watch.next_settled(&stop).expect("watch") {
                    let flag = flag.load(Ordering::SeqCst);
                    if send.send((settled, flag)).is_err() {
                        return;
                    }
                }
            }
        });
        Watching {
            stop,
            batches,
            thread: Some(thread),
        }
    }

    fn next(&self) -> (Settled, bool) {
        self.batches
            .recv_timeout(EXPECTED)
            .expect("a batch to settle")
    }

    fn no_batch_within(&self, wait: Duration) {
        match self.batches.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok((settled, _)) => panic!("unexpected batch {settled:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the watch thread ended"),
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let joined = thread.join();
            if !thread::panicking() {
                joined.expect("the watch thread");
            }
        }
    }
}

#[test]
fn one_new_file_is_one_batch() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let watching = Watching::start(dir.path(), nothing_ignored(), quiet(300), Arc::default());
    fs::write(dir.path().join("a.jpg"), b"pixels").unwrap();
    let (settled, _) = watching.next();
    assert_eq!(
        settled,
        Settled {
            paths: paths(&["a.jpg"]),
            rescanned: false
        }
    );
    watching.no_batch_within(Duration::from_secs(1));
}

#[test]
fn a_burst_of_ten_thousand_files_is_one_batch() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    // A quiet period well above the writer's 10 ms pauses, so a busy machine cannot split the burst.
    let watching = Watching::start(dir.path(), nothing_ignored(), quiet(2000), done.clone());
    let root = dir.path().to_path_buf();
    let writer = thread::spawn({
        let done = done.clone();
        move || {
            // New folders appear during the burst, each filled at once.
            for i in 0..10_000 {
                let folder = root.join(format!("burst/{:02}", i / 1000));
                if i % 1000 == 0 {
                    fs::create_dir_all(&folder).unwrap();
                }
                fs::write(folder.join(format!("{i:05}.raw")), i.to_string()).unwrap();
                if i % 100 == 99 {
                    thread::sleep(Duration::from_millis(10));
                }
            }
            done.store(true, Ordering::SeqCst);
        }
    });
    let (settled, finished) = watching.next();
    writer.join().unwrap();
    assert!(finished, "a batch settled before the burst was over");
    assert_eq!(settled.paths.len(), 10_000);
    assert_eq!(
        settled.paths.first(),
        Some(&PathBuf::from("burst/00/00000.raw"))
    );
    assert_eq!(
        settled.paths.last(),
        Some(&PathBuf::from("burst/09/09999.raw"))
    );
    watching.no_batch_within(Duration::from_secs(3));
}

#[test]
fn a_file_open_for_writing_settles_only_after_it_is_closed() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let closing = Arc::new(AtomicBool::new(false));
    let watching = Watching::start(dir.path(), nothing_ignored(), quiet(300), closing.clone());
    let path = dir.path().join("render.mov");
    let mut file = File::create(&path).unwrap();
    for _ in 0..20 {
        file.write_all(&[7; 4096]).unwrap();
        thread::sleep(Duration::from_millis(100));
    }
    // Held open with no write for five quiet periods: only the missing
    // close-write event keeps it from settling now.
    thread::sleep(Duration::from_millis(1500));
    file.write_all(&[7; 4096]).unwrap();
    closing.store(true, Ordering::SeqCst);
    drop(file);
    let (settled, closed) = watching.next();
    assert!(
        closed,
        "a batch settled while the file was open for writing"
    );
    assert_eq!(settled.paths, paths(&["render.mov"]));
    assert_eq!(fs::metadata(&path).unwrap().len(), 21 * 4096);
    watching.no_batch_within(Duration::from_secs(1));
}

#[test]
fn a_file_reopened_for_each_append_settles_after_the_last() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let last = Arc::new(AtomicBool::new(false));
    // The quiet period is six times the writer's pause: that alone holds the batch back.
    let watching = Watching::start(dir.path(), nothing_ignored(), quiet(600), last.clone());
    let path = dir.path().join("log.wav");
    for i in 0..20 {
        if i == 19 {
            last.store(true, Ordering::SeqCst);
        }
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&[1; 1000])
            .unwrap();
        thread::sleep(Duration::from_millis(100));
    }
    let (settled, after_last) = watching.next();
    assert!(
        after_last,
        "a batch settled while the file was still growing"
    );
    assert_eq!(settled.paths, paths(&["log.wav"]));
    watching.no_batch_within(Duration::from_secs(1));
}

#[test]
fn a_forced_rescan_finds_the_change() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut watch = FolderWatch::start(dir.path(), nothing_ignored(), quiet(300)).unwrap();
    assert_eq!(watch.mode(), Mode::Events);
    fs::write(dir.path().join("a.jpg"), b"pixels").unwrap();
    watch.force_rescan();
    let settled = watch
        .next_settled(&AtomicBool::new(false))
        .unwrap()
        .expect("a batch");
    assert_eq!(
        settled,
        Settled {
            paths: paths(&["a.jpg"]),
            rescanned: true
        }
    );
}

#[test]
fn an_overflowing_event_queue_falls_back_to_a_rescan() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let mut watch = FolderWatch::start(dir.path(), nothing_ignored(), quiet(300)).unwrap();
    // Nobody takes events while these are written: three or so a file
    // overflow the watch's queue (and perhaps the kernel's).
    for i in 0..30_000 {
        fs::write(dir.path().join(format!("{i:05}")), b"x").unwrap();
    }
    let settled = watch
        .next_settled(&AtomicBool::new(false))
        .unwrap()
        .expect("a batch");
    assert!(
        settled.rescanned,
        "30,000 files did not overflow the event queue"
    );
    assert_eq!(settled.paths.len(), 30_000);
    assert_eq!(watch.mode(), Mode::Events);
}

#[test]
fn polling_sees_creation_change_and_deletion() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let settings = Settings {
        quiet: Duration::from_millis(300),
        poll: Duration::from_millis(200),
        force_poll: true,
        ..Settings::default()
    };
    let watching = Watching::start(dir.path(), nothing_ignored(), settings, Arc::default());
    let path = dir.path().join("a.jpg");
    fs::write(&path, b"pixels").unwrap();
    assert_eq!(
        watching.next().0,
        Settled {
            paths: paths(&["a.jpg"]),
            rescanned: true
        }
    );
    fs::write(&path, b"more pixels").unwrap();
    assert_eq!(
        watching.next().0,
        Settled {
            paths: paths(&["a.jpg"]),
            rescanned: true
        }
    );
    fs::remove_file(&path).unwrap();
    assert_eq!(
        watching.next().0,
        Settled {
            paths: paths(&["a.jpg"]),
            rescanned: true
        }
    );
    watching.no_batch_within(Duration::from_secs(1));
}

#[test]
fn forced_polling_says_so() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let watch = FolderWatch::start(
        dir.path(),
        nothing_ignored(),
        Settings {
            force_poll: true,
            ..Settings::default()
        },
    )
    .unwrap();
    assert_eq!(watch.mode(), Mode::Polling(PollReason::Asked));
}

#[test]
fn ignored_paths_and_dmv_make_no_batch() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join(".dmv/objects")).unwrap();
    let ignore: Ignore = Arc::new(|path: &Path| {
        path == Path::new("cache") || path.extension().is_some_and(|e| e == "tmp")
    });
    let watching = Watching::start(root, ignore, quiet(300), Arc::default());
    fs::write(root.join(".dmv/objects/pack"), b"objects").unwrap();
    fs::create_dir_all(root.join(".dmv/new/deeper")).unwrap();
    fs::write(root.join(".dmv/new/deeper/x"), b"x").unwrap();
    fs::create_dir_all(root.join("cache/sub")).unwrap();
    fs::write(root.join("cache/sub/thumb.jpg"), b"thumb").unwrap();
    fs::write(root.join("cache/b.jpg"), b"b").unwrap();
    fs::write(root.join("edit.tmp"), b"tmp").unwrap();
    fs::create_dir(root.join("photos")).unwrap();
    fs::write(root.join("photos/draft.tmp"), b"tmp").unwrap();
    fs::remove_file(root.join("photos/draft.tmp")).unwrap();
    fs::remove_dir(root.join("photos")).unwrap();
    watching.no_batch_within(Duration::from_secs(2));
    // The watch is alive: a path that counts makes a batch of itself alone.
    fs::write(root.join("real.jpg"), b"pixels").unwrap();
    fs::write(root.join("cache/c.jpg"), b"c").unwrap();
    assert_eq!(watching.next().0.paths, paths(&["real.jpg"]));
}

#[cfg(target_os = "linux")]
fn thread_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) },
        0
    );
    let micros = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    micros(usage.ru_utime) + micros(usage.ru_stime)
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_watch_uses_almost_no_cpu() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    for i in 0..100 {
        fs::write(dir.path().join(format!("{i}.jpg")), b"pixels").unwrap();
    }
    let mut watch = FolderWatch::start(dir.path(), nothing_ignored(), Settings::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopper = thread::spawn({
        let stop = stop.clone();
        move || {
            thread::sleep(Duration::from_secs(3));
            stop.store(true, Ordering::SeqCst);
        }
    });
    let before = thread_cpu();
    assert_eq!(watch.next_settled(&stop).unwrap(), None);
    let used = thread_cpu() - before;
    stopper.join().unwrap();
    eprintln!("CPU used by 3 s of idle waiting: {used:?}");
    assert!(
        used < Duration::from_millis(50),
        "an idle watch used {used:?} of CPU in 3 s"
    );
}

#[test]
fn deletions_and_renames_name_the_files() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir(root.join("album")).unwrap();
    for name in ["a.jpg", "b.jpg", "album/c.jpg", "album/d.jpg"] {
        fs::write(root.join(name), name).unwrap();
    }
    let watching = Watching::start(root, nothing_ignored(), quiet(300), Arc::default());
    fs::remove_file(root.join("a.jpg")).unwrap();
    assert_eq!(watching.next().0.paths, paths(&["a.jpg"]));
    fs::rename(root.join("b.jpg"), root.join("b2.jpg")).unwrap();
    assert_eq!(watching.next().0.paths, paths(&["b.jpg", "b2.jpg"]));
    fs::rename(root.join("album"), root.join("trip")).unwrap();
    assert_eq!(
        watching.next().0.paths,
        paths(&["album/c.jpg", "album/d.jpg", "trip/c.jpg", "trip/d.jpg"])
    );
    // Moved out of the tree: the folder's files go without an event of their own.
    fs::rename(root.join("trip"), elsewhere.path().join("trip")).unwrap();
    assert_eq!(
        watching.next().0.paths,
        paths(&["trip/c.jpg", "trip/d.jpg"])
    );
    // Moved back in: a folder arrives full.
    fs::rename(elsewhere.path().join("trip"), root.join("trip")).unwrap();
    assert_eq!(
        watching.next().0.paths,
        paths(&["trip/c.jpg", "trip/d.jpg"])
    );
    fs::remove_dir_all(root.join("trip")).unwrap();
    assert_eq!(
        watching.next().0.paths,
        paths(&["trip/c.jpg", "trip/d.jpg"])
    );
    watching.no_batch_within(Duration::from_secs(1));
}

#[test]
fn a_removed_root_is_an_error() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("photos");
    fs::create_dir(&root).unwrap();
    fs::write(root.join("a.jpg"), b"pixels").unwrap();
    let mut watch = FolderWatch::start(&root, nothing_ignored(), quiet(300)).unwrap();
    fs::remove_dir_all(&root).unwrap();
    assert!(matches!(
        watch.next_settled(&AtomicBool::new(false)),
        Err(WatchError::Root { .. })
    ));
    assert!(matches!(
        FolderWatch::start(&root, nothing_ignored(), quiet(300)),
        Err(WatchError::Root { .. })
    ));
    let file = dir.path().join("file");
    fs::write(&file, b"x").unwrap();
    assert!(matches!(
        FolderWatch::start(&file, nothing_ignored(), quiet(300)),
        Err(WatchError::NotAFolder { .. })
    ));
}

/// Files the caller handed back after leaving them out of a commit: one a
/// writer still holds open settles only once it is closed (its close may
/// change nothing the stamps see); one that is not open (replaced by a
/// rename, which has no close to come) settles after the quiet period.
#[cfg(target_os = "linux")]
#[test]
fn files_handed_back_settle_after_their_close_or_the_quiet_period() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let (take, saved) = (dir.path().join("take.mov"), dir.path().join("saved.txt"));
    fs::write(&take, b"the first piece").unwrap();
    fs::write(&saved, b"saved").unwrap();
    let mut watch = FolderWatch::start(dir.path(), nothing_ignored(), quiet(200)).unwrap();
    let stop = AtomicBool::new(false);

    watch.retry(&paths(&["saved.txt"]), &[]);
    let settled = watch.next_settled(&stop).unwrap().expect("a batch");
    assert_eq!(settled.paths, paths(&["saved.txt"]));

    // Opened for writing with nothing written yet: no event says so, only the caller knew.
    let file = OpenOptions::new().write(true).open(&take).unwrap();
    watch.retry(&paths(&["take.mov"]), &paths(&["take.mov"]));
    let closing = Arc::new(AtomicBool::new(false));
    let closer = thread::spawn({
        let closing = closing.clone();
        move || {
            // Five quiet periods: only the close still to come holds the batch back.
            thread::sleep(Duration::from_millis(1000));
            closing.store(true, Ordering::SeqCst);
            drop(file);
        }
    });
    let settled = watch.next_settled(&stop).unwrap().expect("a batch");
    assert!(
        closing.load(Ordering::SeqCst),
        "a file handed back as open settled before it was closed"
    );
    assert_eq!(settled.paths, paths(&["take.mov"]));
    closer.join().unwrap();
}
