use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use dmv_refs::internals::LOCK_FILE;
use dmv_refs::{Expect, Options, RefError, RefStore, RefValue};

const WHO: &str = "Tester <t@example.com>";
const WHEN: (i64, i16) = (1_700_000_000, 120);

fn v(b: u8) -> RefValue {
    [b; 32]
}

fn new_store(opts: Options) -> (tempfile::TempDir, PathBuf, RefStore) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("refs");
    RefStore::init(&dir).unwrap();
    let s = RefStore::open(&dir, opts).unwrap();
    (d, dir, s)
}

fn no_compact() -> Options {
    Options {
        auto_compact: false,
        ..Options::default()
    }
}

fn set(s: &RefStore, name: &str, val: Option<RefValue>) {
    let mut tx = s.transaction();
    tx.update(name, Expect::Any, val).unwrap();
    tx.commit(WHO, WHEN, &format!("set {name}")).unwrap();
}

fn names(l: &[(String, RefValue)]) -> Vec<&str> {
    l.iter().map(|x| x.0.as_str()).collect()
}

#[test]
fn round_trip_and_reopen() {
    let (_d, dir, s) = new_store(Options::default());
    assert_eq!(s.get("refs/heads/main").unwrap(), None);
    assert_eq!(s.table_count().unwrap(), 0);
    let mut tx = s.transaction();
    tx.update("refs/heads/main", Expect::Absent, Some(v(1)))
        .unwrap()
        .update("refs/tags/v1", Expect::Any, Some(v(2)))
        .unwrap();
    tx.commit(WHO, WHEN, "first").unwrap();
    let s2 = RefStore::open(&dir, Options::default()).unwrap();
    assert_eq!(s2.get("refs/heads/main").unwrap(), Some(v(1)));
    assert_eq!(s2.get("refs/tags/v1").unwrap(), Some(v(2)));
    assert_eq!(
        names(&s2.list("").unwrap()),
        ["refs/heads/main", "refs/tags/v1"]
    );
    s2.verify().unwrap();
}

#[test]
fn init_and_open_errors() {
    let (_d, dir, _s) = new_store(Options::default());
    assert!(matches!(
        RefStore::init(&dir),
        Err(RefError::AlreadyExists(_))
    ));
    let missing = dir.join("nope");
    let e = RefStore::open(&missing, Options::default()).unwrap_err();
    assert!(matches!(e, RefError::NotInitialized(_)), "{e}");
}

#[test]
fn prefix_listing_with_nested_names() {
    let (_d, _dir, s) = new_store(Options::default());
    let mut tx = s.transaction();
    for (i, n) in ["a", "a/b", "a/b/c", "a/bc", "a/b/c/d", "b", "a.b"]
        .iter()
        .enumerate()
    {
        tx.update(n, Expect::Absent, Some(v(i as u8))).unwrap();
    }
    tx.commit(WHO, WHEN, "m").unwrap();
    assert_eq!(s.get("a/b").unwrap(), Some(v(1)));
    assert_eq!(s.get("a/b/c").unwrap(), Some(v(2)));
    assert_eq!(names(&s.list("a/b/").unwrap()), ["a/b/c", "a/b/c/d"]);
    assert_eq!(
        names(&s.list("a/b").unwrap()),
        ["a/b", "a/b/c", "a/b/c/d", "a/bc"]
    );
    assert_eq!(
        names(&s.list("").unwrap()),
        ["a", "a.b", "a/b", "a/b/c", "a/b/c/d", "a/bc", "b"]
    );
    assert!(s.list("c").unwrap().is_empty());
    // Deleting the parent leaves the children alone and vice versa.
    set(&s, "a/b", None);
    assert_eq!(names(&s.list("a/").unwrap()), ["a/b/c", "a/b/c/d", "a/bc"]);
    set(&s, "a/b/c", None);
    assert_eq!(s.get("a/b/c/d").unwrap(), Some(v(4)));
}

#[test]
fn tombstones_hide_older_values_across_tables() {
    let (_d, _dir, s) = new_store(no_compact());
    set(&s, "x", Some(v(1)));
    set(&s, "y", Some(v(2)));
    set(&s, "x", None);
    assert_eq!(s.table_count().unwrap(), 3);
    assert_eq!(s.get("x").unwrap(), None);
    assert_eq!(names(&s.list("").unwrap()), ["y"]);
    set(&s, "x", Some(v(3)));
    assert_eq!(s.get("x").unwrap(), Some(v(3)));
    set(&s, "x", None);
    s.compact_all().unwrap();
    assert_eq!(s.table_count().unwrap(), 1);
    assert_eq!(s.get("x").unwrap(), None);
    assert_eq!(names(&s.list("").unwrap()), ["y"]);
    assert_eq!(s.reflog("x").unwrap().len(), 4);
    s.verify().unwrap();
}

#[test]
fn cas_failure_changes_nothing() {
    let (_d, dir, s) = new_store(Options::default());
    set(&s, "a", Some(v(1)));
    set(&s, "b", Some(v(2)));
    let before_list = std::fs::read(dir.join("tables.list")).unwrap();
    let before_log = s.reflog("a").unwrap();

    let mut tx = s.transaction();
    tx.update("a", Expect::Value(v(1)), Some(v(10))).unwrap();
    tx.update("new", Expect::Absent, Some(v(11))).unwrap();
    tx.update("b", Expect::Value(v(9)), None).unwrap();
    let e = tx.commit(WHO, WHEN, "mixed").unwrap_err();
    match &e {
        RefError::Changed {
            name,
            expected,
            found,
        } => {
            assert_eq!(name, "b");
            assert_eq!(*expected, Some(v(9)));
            assert_eq!(*found, Some(v(2)));
        }
        other => panic!("wrong error {other}"),
    }
    assert!(
        e.to_string().starts_with("ref 'b' changed: expected 0909"),
        "{e}"
    );
    assert_eq!(s.get("a").unwrap(), Some(v(1)));
    assert_eq!(s.get("new").unwrap(), None);
    assert_eq!(s.get("b").unwrap(), Some(v(2)));
    assert_eq!(std::fs::read(dir.join("tables.list")).unwrap(), before_list);
    assert_eq!(s.reflog("a").unwrap(), before_log);
    assert!(s.reflog("new").unwrap().is_empty());
    assert!(!dir.join(LOCK_FILE).exists());

    let mut tx = s.transaction();
    tx.update("a", Expect::Absent, Some(v(3))).unwrap();
    assert!(matches!(
        tx.commit(WHO, WHEN, "x"),
        Err(RefError::Changed { .. })
    ));
}

#[test]
fn duplicate_and_invalid_names() {
    let (_d, _dir, s) = new_store(Options::default());
    let mut tx = s.transaction();
    tx.update("a", Expect::Any, Some(v(1))).unwrap();
    let e = tx.update("a", Expect::Any, None).unwrap_err();
    assert!(matches!(e, RefError::DuplicateUpdate { .. }), "{e}");
    let e = tx.update("a..b/../c", Expect::Any, None).unwrap_err();
    assert!(matches!(e, RefError::InvalidName { .. }), "{e}");
    assert!(
        e.to_string().starts_with("invalid ref name 'a..b/../c': "),
        "{e}"
    );
    assert!(matches!(
        s.get("bad name"),
        Err(RefError::InvalidName { .. })
    ));
}

#[test]
fn deleting_absent_ref() {
    let (_d, _dir, s) = new_store(Options::default());
    let mut tx = s.transaction();
    tx.update("gone", Expect::Any, None).unwrap();
    tx.commit(WHO, WHEN, "noop").unwrap();
    assert_eq!(s.table_count().unwrap(), 0);
    assert!(s.reflog("gone").unwrap().is_empty());
    let mut tx = s.transaction();
    tx.update("gone", Expect::Value(v(1)), None).unwrap();
    let e = tx.commit(WHO, WHEN, "cas").unwrap_err();
    assert!(matches!(e, RefError::Changed { found: None, .. }), "{e}");
    assert!(e.to_string().ends_with("found no ref"), "{e}");
}

#[test]
fn reflog_survives_delete_and_compaction() {
    let (_d, _dir, s) = new_store(no_compact());
    let mut tx = s.transaction();
    tx.update("refs/heads/topic", Expect::Absent, Some(v(1)))
        .unwrap();
    tx.commit("A <a@x>", (100, -300), "create").unwrap();
    let mut tx = s.transaction();
    tx.update("refs/heads/topic", Expect::Value(v(1)), Some(v(2)))
        .unwrap();
    tx.commit("B <b@x>", (200, 60), "advance").unwrap();
    let mut tx = s.transaction();
    tx.update("refs/heads/topic", Expect::Value(v(2)), None)
        .unwrap();
    tx.commit("C <c@x>", (300, 0), "delete").unwrap();
    set(&s, "refs/heads/main", Some(v(9)));

    let check = |s: &RefStore| {
        assert_eq!(s.get("refs/heads/topic").unwrap(), None);
        let log = s.reflog("refs/heads/topic").unwrap();
        assert_eq!(log.len(), 3);
        assert_eq!(log[0].message, "delete");
        assert_eq!((log[0].old, log[0].new), (Some(v(2)), None));
        assert_eq!(log[1].who, "B <b@x>");
        assert_eq!((log[1].time, log[1].tz_minutes), (200, 60));
        assert_eq!((log[2].old, log[2].new), (None, Some(v(1))));
        assert_eq!((log[2].time, log[2].tz_minutes), (100, -300));
        assert!(log.iter().all(|e| e.name == "refs/heads/topic"));
        assert_eq!(
            s.reflog_names().unwrap(),
            ["refs/heads/main", "refs/heads/topic"]
        );
        assert!(s.reflog("refs/heads").unwrap().is_empty());
    };
    check(&s);
    s.compact_all().unwrap();
    assert_eq!(s.table_count().unwrap(), 1);
    check(&s);
}

#[test]
fn a_small_transaction_travels_inside_the_list_and_a_large_one_in_a_file() {
    let (_d, dir, s) = new_store(Options {
        inline_limit: 2048,
        ..Options::default()
    });
    let table_files = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".ref"))
            .map(|e| e.file_name())
            .collect::<std::collections::BTreeSet<_>>()
    };
    let (mut files_written, mut max_depth) = (0, 0);
    for i in 0..200u32 {
        let before = table_files();
        set(&s, &format!("refs/heads/b{}", i % 37), Some(v(i as u8)));
        let after = table_files();
        files_written += after.difference(&before).count();
        max_depth = max_depth.max(s.table_count().unwrap());
        // Every listed file exists and none is left unlisted; the top table is inline or a file.
        let list = std::fs::read_to_string(dir.join("tables.list")).unwrap();
        let named = list.lines().filter(|l| l.ends_with(".ref")).count();
        assert_eq!(after.len(), named, "commit {i}");
        assert_eq!(
            s.table_count().unwrap(),
            named + usize::from(list.lines().last().unwrap().starts_with("inline ")),
            "commit {i}"
        );
    }
    // A transaction's table is ~200 bytes: about one in ten spills the grown inline table to a file.
    assert!(
        (5..=40).contains(&files_written),
        "{files_written} table files written for 200 transactions"
    );
    assert!(max_depth <= 10, "stack reached {max_depth} tables");
    assert_eq!(s.get("refs/heads/b36").unwrap(), Some(v(184)));
    assert_eq!(s.reflog("refs/heads/b0").unwrap().len(), 6);
    s.verify().unwrap();
    // A writer that writes no inline table folds the one it finds into a file; readers take both.
    assert!(std::fs::read_to_string(dir.join("tables.list"))
        .unwrap()
        .contains("\ninline "));
    let plain = RefStore::open(&dir, Options::default()).unwrap();
    set(&plain, "refs/heads/plain", Some(v(1)));
    assert!(!std::fs::read_to_string(dir.join("tables.list"))
        .unwrap()
        .contains("inline "));
    assert_eq!(s.get("refs/heads/b36").unwrap(), Some(v(184)));
    assert_eq!(s.get("refs/heads/plain").unwrap(), Some(v(1)));
    set(&s, "refs/heads/again", Some(v(2)));
    assert!(std::fs::read_to_string(dir.join("tables.list"))
        .unwrap()
        .contains("\ninline "));
    // gc's compaction leaves one table file.
    let all = s.list("").unwrap();
    s.compact_all().unwrap();
    assert_eq!((s.table_count().unwrap(), table_files().len()), (1, 1));
    assert_eq!(s.list("").unwrap(), all);
    s.verify().unwrap();
}

#[test]
fn geometric_compaction_keeps_stack_shallow() {
    let (_d, dir, s) = new_store(Options::default());
    let mut max_depth = 0;
    for i in 0..200u32 {
        let before: Vec<String> = std::fs::read_to_string(dir.join("tables.list"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect();
        set(&s, &format!("refs/heads/b{}", i % 37), Some(v(i as u8)));
        max_depth = max_depth.max(s.table_count().unwrap());
        // Each commit lists one new table (its own, any compaction folded in) and leaves none unlisted.
        let listed: Vec<String> = std::fs::read_to_string(dir.join("tables.list"))
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect();
        assert_eq!(
            listed.iter().filter(|t| !before.contains(*t)).count(),
            1,
            "commit {i}"
        );
        let files = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".ref"))
            .count();
        assert_eq!(files, listed.len(), "commit {i} left a table unlisted");
    }
    // log2(200) ~ 7.6; geometric factor 2 allows about that many tables.
    assert!(max_depth <= 9, "stack reached {max_depth} tables");
    let listed_before = s.list("").unwrap();
    s.compact_all().unwrap();
    assert_eq!(s.table_count().unwrap(), 1);
    assert_eq!(s.list("").unwrap(), listed_before);
    assert_eq!(s.reflog("refs/heads/b0").unwrap().len(), 6);
    // Old table files are gone; only the listed one remains.
    let refs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".ref"))
        .collect();
    assert_eq!(refs.len(), 1);
    s.verify().unwrap();
}

#[test]
fn delete_among_many_writes_a_small_table() {
    let (_d, _dir, s) = new_store(Options::default());
    let mut tx = s.transaction();
    for i in 0..20_000u32 {
        let mut val = [0u8; 32];
        val[..4].copy_from_slice(&i.to_be_bytes());
        tx.update(
            &format!("refs/heads/branch-{i:06}"),
            Expect::Absent,
            Some(val),
        )
        .unwrap();
    }
    tx.commit(WHO, WHEN, "import").unwrap();
    let big = s.table_paths().unwrap();
    assert_eq!(big.len(), 1);
    set(&s, "refs/heads/branch-012345", None);
    let paths = s.table_paths().unwrap();
    assert_eq!(paths.len(), 2);
    assert_eq!(paths[0], big[0], "the big table must not be rewritten");
    let small = std::fs::metadata(&paths[1]).unwrap().len();
    assert!(small < 1024, "delete wrote {small} bytes");
    assert_eq!(s.get("refs/heads/branch-012345").unwrap(), None);
    assert_eq!(
        s.get("refs/heads/branch-012346").unwrap().unwrap()[..4],
        12346u32.to_be_bytes()
    );
    assert_eq!(s.list("refs/heads/").unwrap().len(), 19_999);
    // A lookup reads one block per index level per table, not the table.
    for probe in [
        "refs/heads/branch-000000",
        "refs/heads/branch-015000",
        "refs/heads/zzz",
    ] {
        let before = dmv_refs::internals::block_reads();
        s.get(probe).unwrap();
        let reads = dmv_refs::internals::block_reads() - before;
        assert!(reads <= 2 * 3, "{probe}: {reads} blocks read");
    }
    s.verify().unwrap();
}

fn flip(path: &Path, at: u64) {
    let mut b = std::fs::read(path).unwrap();
    b[at as usize] ^= 0x01;
    std::fs::write(path, b).unwrap();
}

#[test]
fn flipped_byte_is_detected_and_names_the_table() {
    let (_d, _dir, s) = new_store(no_compact());
    let mut tx = s.transaction();
    for i in 0..2000u32 {
        tx.update(&format!("r/{i:05}"), Expect::Any, Some(v(i as u8)))
            .unwrap();
    }
    tx.commit(WHO, WHEN, "bulk").unwrap();
    set(&s, "other", Some(v(1)));
    let path = s.table_paths().unwrap()[0].clone();
    let fname = path.file_name().unwrap().to_string_lossy().to_string();
    s.verify().unwrap();
    // Inside the ref section (refs sort after logs, so the second half).
    let len = std::fs::metadata(&path).unwrap().len();
    flip(&path, len * 3 / 4);
    let e = s.verify().unwrap_err();
    assert!(matches!(e, RefError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains(&fname), "{e}");
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
    // Normal reads check block checksums too.
    let e = s.list("").unwrap_err();
    assert!(
        e.to_string().contains(&fname) && e.to_string().contains("corrupt"),
        "{e}"
    );
    // The other table is fine.
    assert_eq!(s.get("other").unwrap(), Some(v(1)));
}

#[test]
fn corrupt_table_list_is_reported() {
    let (_d, dir, s) = new_store(Options::default());
    std::fs::write(dir.join("tables.list"), "../../etc/passwd\n").unwrap();
    let e = s.get("a").unwrap_err();
    assert!(matches!(e, RefError::CorruptList { .. }), "{e}");
}

#[test]
fn racing_cas_updates_have_one_winner() {
    let (_d, dir, s) = new_store(Options::default());
    set(&s, "refs/heads/main", Some(v(0)));
    for round in 0..15u8 {
        let cur = s.get("refs/heads/main").unwrap().unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2u8)
            .map(|t| {
                let dir = dir.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let s = RefStore::open(&dir, Options::default()).unwrap();
                    let mut tx = s.transaction();
                    tx.update(
                        "refs/heads/main",
                        Expect::Value(cur),
                        Some(v(100 + 2 * round + t)),
                    )
                    .unwrap();
                    barrier.wait();
                    tx.commit(WHO, WHEN, "race")
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let wins = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "round {round}: {results:?}");
        for r in &results {
            if let Err(e) = r {
                assert!(matches!(e, RefError::Changed { .. }), "{e}");
            }
        }
        let now = s.get("refs/heads/main").unwrap().unwrap();
        assert!(now == v(100 + 2 * round) || now == v(101 + 2 * round));
    }
    assert_eq!(s.reflog("refs/heads/main").unwrap().len(), 16);
}

fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn hostname() -> String {
    dmv_os::host_name()
}

fn write_lock(dir: &Path, pid: u32, host: &str) {
    std::fs::write(
        dir.join(LOCK_FILE),
        format!("# dmv-refs tables.list; written by pid {pid} on host {host}\n"),
    )
    .unwrap();
}

#[test]
fn stale_lock_of_dead_process_is_cleared() {
    let (_d, dir, s) = new_store(Options::default());
    set(&s, "a", Some(v(1)));
    write_lock(&dir, dead_pid(), &hostname());
    // Readers never look at the lock.
    assert_eq!(s.get("a").unwrap(), Some(v(1)));
    set(&s, "a", Some(v(2)));
    assert_eq!(s.get("a").unwrap(), Some(v(2)));
    assert!(!dir.join(LOCK_FILE).exists());
    s.verify().unwrap();
}

#[test]
fn live_or_unknown_lock_times_out_with_advice() {
    let opts = Options {
        lock_timeout: Duration::from_millis(300),
        ..Options::default()
    };
    let (_d, dir, s) = new_store(opts);
    let lock = dir.join(LOCK_FILE);
    let shown = lock.display().to_string();
    let try_commit = |s: &RefStore| {
        let mut tx = s.transaction();
        tx.update("a", Expect::Any, Some(v(1))).unwrap();
        tx.commit(WHO, WHEN, "x").unwrap_err()
    };

    write_lock(&dir, std::process::id(), &hostname());
    let e = try_commit(&s);
    assert!(matches!(e, RefError::Locked { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("process {}", std::process::id())),
        "{msg}"
    );
    assert!(msg.contains(&shown) && msg.contains("waited"), "{msg}");
    assert!(!msg.contains('\n'));
    assert!(lock.exists(), "a live lock must not be removed");

    write_lock(&dir, dead_pid(), "some-other-host");
    let msg = try_commit(&s).to_string();
    assert!(
        msg.contains("another host") && msg.contains(&format!("delete {shown}")),
        "{msg}"
    );
    assert!(lock.exists());

    std::fs::write(&lock, "").unwrap();
    let msg = try_commit(&s).to_string();
    assert!(msg.contains(&format!("delete {shown}")), "{msg}");

    std::fs::remove_file(&lock).unwrap();
    let mut tx = s.transaction();
    tx.update("a", Expect::Any, Some(v(1))).unwrap();
    tx.commit(WHO, WHEN, "x").unwrap();
    assert_eq!(s.get("a").unwrap(), Some(v(1)));
}

#[test]
fn many_threads_many_commits() {
    let (_d, dir, s) = new_store(Options::default());
    let handles: Vec<_> = (0..4u8)
        .map(|t| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                let s = RefStore::open(&dir, Options::default()).unwrap();
                for i in 0..15u8 {
                    let mut tx = s.transaction();
                    tx.update(&format!("t{t}/r{i}"), Expect::Absent, Some(v(i)))
                        .unwrap();
                    tx.commit(WHO, WHEN, "m").unwrap();
                    assert_eq!(s.get(&format!("t{t}/r{i}")).unwrap(), Some(v(i)));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(s.list("").unwrap().len(), 60);
    assert_eq!(s.reflog_names().unwrap().len(), 60);
    s.verify().unwrap();
}

#[test]
fn missing_table_is_reported_not_retried_forever() {
    let (_d, _dir, s) = new_store(no_compact());
    set(&s, "a", Some(v(1)));
    set(&s, "b", Some(v(2)));
    let paths = s.table_paths().unwrap();
    std::fs::remove_file(&paths[0]).unwrap();
    let e = s.get("b").unwrap_err();
    let name = paths[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(
        matches!(e, RefError::CorruptList { .. }) && e.to_string().contains(&name),
        "{e}"
    );
}

#[test]
fn store_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RefStore>();
    assert_send_sync::<RefError>();
}

#[test]
fn partial_compaction_keeps_tombstones() {
    let (_d, _dir, s) = new_store(no_compact());
    let mut tx = s.transaction();
    for i in 0..500u32 {
        tx.update(&format!("bulk/{i}"), Expect::Any, Some(v(1)))
            .unwrap();
    }
    tx.update("x", Expect::Any, Some(v(7))).unwrap();
    tx.commit(WHO, WHEN, "big").unwrap();
    set(&s, "y", Some(v(2)));
    set(&s, "x", None);
    assert_eq!(s.table_count().unwrap(), 3);
    // Merges only the two small tables on top: the tombstone for x must
    // survive, or the bottom table's x would come back.
    s.auto_compact().unwrap();
    assert_eq!(s.table_count().unwrap(), 2);
    assert_eq!(s.get("x").unwrap(), None);
    assert!(s.list("x").unwrap().is_empty());
    assert_eq!(s.get("y").unwrap(), Some(v(2)));
    s.verify().unwrap();
}

#[test]
fn readers_see_consistent_state_during_compactions() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    let (_d, dir, s) = new_store(Options::default());
    set(&s, "c", Some(v(0)));
    let done = Arc::new(AtomicBool::new(false));
    // Reads finished so far.
    let reads = Arc::new(AtomicU64::new(0));
    // Odd while the writer is inside compact_all(); bumped on entry and exit.
    let epoch = Arc::new(AtomicU64::new(0));
    // Reads that began and ended inside one compact_all().
    let during = Arc::new(AtomicU64::new(0));
    let reader = {
        let dir = dir.clone();
        let (done, reads, epoch, during) =
            (done.clone(), reads.clone(), epoch.clone(), during.clone());
        std::thread::spawn(move || {
            let s = RefStore::open(&dir, Options::default()).unwrap();
            let mut last = 0u8;
            let mut seen = std::collections::BTreeSet::new();
            while !done.load(SeqCst) {
                let e1 = epoch.load(SeqCst);
                let c = s.get("c").unwrap().unwrap()[0];
                assert!(c >= last, "counter went back from {last} to {c}");
                last = c;
                // Every commit sets c and k<c % 10> together.
                let all = s.list("").unwrap();
                let c2 = all.iter().find(|(n, _)| n == "c").unwrap().1[0];
                assert!(c2 >= c, "list is older than the get before it: {c2} < {c}");
                if c2 > 0 {
                    let k = format!("k{}", c2 % 10);
                    let kv = all.iter().find(|(n, _)| *n == k).unwrap().1[0];
                    assert_eq!(kv, c2, "list is not a snapshot of one commit");
                }
                seen.insert(c);
                seen.insert(c2);
                if e1 % 2 == 1 && epoch.load(SeqCst) == e1 {
                    during.fetch_add(1, SeqCst);
                }
                reads.fetch_add(1, SeqCst);
            }
            seen
        })
    };
    // Waits until the reader has finished `n` more reads (at most 10 s).
    let wait_reads = |n: u64| {
        let target = reads.load(SeqCst) + n;
        let t = std::time::Instant::now();
        while reads.load(SeqCst) < target {
            assert!(t.elapsed() < Duration::from_secs(10), "reader stalled");
            std::thread::yield_now();
        }
    };
    // Writes the filler without compacting, so compact_all has tables to merge.
    let filler = RefStore::open(&dir, no_compact()).unwrap();
    let mut compactions = 0;
    for i in 1..=150u8 {
        let mut tx = s.transaction();
        tx.update("c", Expect::Any, Some(v(i))).unwrap();
        tx.update(&format!("k{}", i % 10), Expect::Any, Some(v(i)))
            .unwrap();
        tx.commit(WHO, WHEN, "w").unwrap();
        // A read that starts now must see i: the reader sees every value.
        wait_reads(2);
        if i % 50 == 0 {
            // Compact until the reader has read inside compactions a few
            // times (a filler ref gives each compaction two tables to merge).
            let before = during.load(SeqCst);
            let mut rounds = 0;
            while during.load(SeqCst) < before + 5 {
                assert!(
                    rounds < 200,
                    "no read ever overlapped a compaction ({rounds} compactions)"
                );
                set(&filler, "filler", Some(v(rounds as u8)));
                assert!(s.table_count().unwrap() >= 2);
                epoch.fetch_add(1, SeqCst);
                s.compact_all().unwrap();
                epoch.fetch_add(1, SeqCst);
                assert_eq!(s.table_count().unwrap(), 1);
                rounds += 1;
                compactions += 1;
            }
        }
    }
    done.store(true, SeqCst);
    let seen = reader.join().unwrap();
    let reads = reads.load(SeqCst);
    assert!(reads > 0);
    // Every committed value was observed (1..=150), nothing else.
    let want: std::collections::BTreeSet<u8> = (1..=150).collect();
    let seen_committed: std::collections::BTreeSet<u8> =
        seen.iter().copied().filter(|&c| c > 0).collect();
    assert_eq!(seen_committed, want, "values seen by the reader");
    assert!(
        during.load(SeqCst) >= 15,
        "reads during compactions: {}",
        during.load(SeqCst)
    );
    eprintln!(
        "{reads} reads, {} during {compactions} compactions",
        during.load(SeqCst)
    );
}
