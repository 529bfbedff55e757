use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dmv_store::object::{encode, FileNode, NodeEntry};
use dmv_store::{
    ChunkParams, GcOptions, IngestSource, ObjectId, ObjectKind, Store, StoreError, Tally,
};
use proptest::prelude::*;

fn open(dir: &std::path::Path, pack_limit: u64) -> Store {
    Store::create(dir).unwrap();
    Store::open(dir, ChunkParams::default(), pack_limit).unwrap()
}

fn content(store: &Store, id: &dmv_store::ObjectId) -> Vec<u8> {
    let mut out = Vec::new();
    store.write_content(id, &mut out).unwrap();
    out
}

fn noise(len: usize, seed: u8) -> Vec<u8> {
    dmv_testkit::noise(len, seed as u64)
}

#[test]
fn files_round_trip_across_pack_rollover_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 1 << 20);
    let data: Vec<Vec<u8>> = vec![
        noise(5_000_000, 1),
        Vec::new(),
        b"tiny".to_vec(),
        noise(16384, 2),
        "text ".repeat(200_000).into_bytes(),
    ];
    let mut sources = Vec::new();
    for (i, d) in data.iter().enumerate() {
        let p = dir.path().join(format!("f{i}"));
        std::fs::write(&p, d).unwrap();
        sources.push(IngestSource { path: p });
    }
    let mut s = store.begin_write().unwrap();
    let results = s.ingest(sources, &Tally::silent()).unwrap();
    s.finish().unwrap();
    drop(s);
    let reopened =
        Store::open(&dir.path().join("objects"), ChunkParams::default(), 1 << 20).unwrap();
    for (r, d) in results.into_iter().zip(&data) {
        let r = r.unwrap();
        assert_eq!(r.size, d.len() as u64);
        assert_eq!(&content(&reopened, &r.id), d);
    }
    let stats = reopened.stats().unwrap();
    assert!(
        stats.packs >= 5,
        "1 MiB packs must roll over: {}",
        stats.packs
    );
    // Text is compressed, random data is not.
    assert!(
        stats.stored_bytes < 5_000_000 + 16384 + 1_000_000 / 4,
        "{}",
        stats.stored_bytes
    );
    assert!(reopened.verify_packs(&Tally::silent()).unwrap().is_clean());
}

#[test]
fn a_few_small_files_stored_without_the_pipeline_get_the_pipelines_ids() {
    // Up to 16 files are stored on the calling thread while each is one chunk;
    // from the first larger file on, and for more than 16, the pipeline does it.
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 64 << 20);
    let min = ChunkParams::default().min as usize;
    let data: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"tiny".to_vec(),
        "text ".repeat(min / 5).into_bytes(),
        noise(min, 3),
        noise(min + 1, 4),
        b"after".to_vec(),
    ];
    let paths: Vec<std::path::PathBuf> = data
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let p = dir.path().join(format!("f{i}"));
            std::fs::write(&p, d).unwrap();
            p
        })
        .collect();
    std::thread::sleep(Duration::from_millis(30));
    let sources = |n: usize| {
        (0..n)
            .map(|i| IngestSource {
                path: paths[i % paths.len()].clone(),
            })
            .collect::<Vec<_>>()
    };
    let mut s = store.begin_write().unwrap();
    let few: Vec<_> = s
        .ingest(sources(data.len()), &Tally::silent())
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let many: Vec<_> = s
        .ingest(sources(17), &Tally::silent())
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    s.finish().unwrap();
    drop(s);
    for (i, d) in data.iter().enumerate() {
        assert_eq!(
            (few[i].id, few[i].size),
            (many[i].id, many[i].size),
            "file {i}"
        );
        assert_eq!(
            (few[i].meta.len(), few[i].meta.modified().unwrap()),
            (many[i].meta.len(), many[i].meta.modified().unwrap())
        );
        assert_eq!(&content(&store, &few[i].id), d, "file {i}");
    }
    assert!(store.verify_packs(&Tally::silent()).unwrap().is_clean());
}

#[test]
fn a_file_changed_while_stored_is_never_recorded_torn() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 64 << 20);
    let path = dir.path().join("moving");
    let original = noise(64 << 20, 1);
    std::fs::write(&path, &original).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    // Halfway through the read, change a byte already read and one not yet read:
    // the file never holds (old early byte, new late byte), a torn read would.
    let changed = AtomicBool::new(false);
    let mut s = store.begin_write().unwrap();
    let r = s
        .ingest(
            vec![IngestSource { path: path.clone() }],
            &Tally::new(
                &|done: u64, _| {
                    if done > 32 << 20 && !changed.swap(true, Ordering::SeqCst) {
                        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                        f.write_all_at(b"X", 4 << 20).unwrap();
                        f.write_all_at(b"Y", 60 << 20).unwrap();
                    }
                },
                0,
            ),
        )
        .unwrap()
        .pop()
        .unwrap();
    s.finish().unwrap();
    assert!(changed.load(Ordering::SeqCst));
    let mut expected = original.clone();
    expected[4 << 20] = b'X';
    expected[60 << 20] = b'Y';
    match r {
        Ok(stored) => assert!(
            content(&store, &stored.id) == expected,
            "stored content is not the file as it is now"
        ),
        Err(StoreError::ChangedWhileReading { .. }) => {}
        Err(other) => panic!("unexpected error {other}"),
    }
}

#[test]
fn a_small_file_saved_just_now_is_stored_at_once_its_stat_marked_racy() {
    // Its timestamp tick has not passed, so a write later in that tick would
    // leave its stat as it is: the stat must not vouch for the content. A
    // result not marked racy must have been read more than a tick after its
    // mtime (the reader waits for that when it cannot check by reading twice).
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 64 << 20);
    let path = dir.path().join("saved");
    let mut racy = 0;
    for attempt in 0..50u8 {
        let data = noise(1000, attempt);
        std::fs::write(&path, &data).unwrap();
        let mut s = store.begin_write().unwrap();
        let stored = s
            .ingest(vec![IngestSource { path: path.clone() }], &Tally::silent())
            .unwrap()
            .remove(0)
            .unwrap();
        s.finish().unwrap();
        drop(s);
        assert_eq!(content(&store, &stored.id), data);
        if stored.racy {
            racy += 1;
        } else {
            let age = std::time::SystemTime::now()
                .duration_since(stored.meta.modified().unwrap())
                .unwrap_or_default();
            assert!(
                age > dmv_store::timestamp_granularity(),
                "attempt {attempt}: stamped {age:?} before, not marked racy"
            );
        }
    }
    // Each attempt stores within microseconds of the write (a tick here is 2-10 ms).
    assert!(
        racy > 0,
        "no file written just before its ingest was marked racy in 50 attempts"
    );
}

fn prune_now() -> GcOptions {
    GcOptions {
        keep_recent: Duration::ZERO,
        ..Default::default()
    }
}

/// Makes every pack look written `age` ago, so gc's grace period does not cover it.
fn age_packs(objects: &std::path::Path, age: Duration) {
    let then = std::time::SystemTime::now() - age;
    for e in std::fs::read_dir(objects.join("packs")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "pack") {
            std::fs::File::open(&path)
                .unwrap()
                .set_times(std::fs::FileTimes::new().set_modified(then))
                .unwrap();
        }
    }
}

#[test]
fn gc_reads_its_roots_after_a_running_writer_has_finished() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    let store = Arc::new(open(&objects, 64 << 20));
    let id;
    {
        let mut s = store.begin_write().unwrap();
        id = s
            .put_object(ObjectKind::Chunk, b"unreferenced for now")
            .unwrap();
        s.finish().unwrap();
    }
    // What a ref or the dirstate would say: nothing refers to the object yet.
    let refs: Arc<Mutex<Vec<ObjectId>>> = Arc::default();
    // A writer dedups against the (currently unreachable) object and will reference it.
    let session_store = Store::open(&objects, ChunkParams::default(), 64 << 20).unwrap();
    let mut s = session_store.begin_write().unwrap();
    assert!(s.has(&id).unwrap());
    let gc_done = Arc::new(AtomicBool::new(false));
    let gc = {
        let (store, done, refs) = (store.clone(), gc_done.clone(), refs.clone());
        std::thread::spawn(move || {
            let report = store
                .gc(
                    || Ok::<_, StoreError>(refs.lock().unwrap().clone()),
                    prune_now(),
                    &Tally::silent(),
                )
                .unwrap();
            done.store(true, Ordering::SeqCst);
            report
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !gc_done.load(Ordering::SeqCst),
        "gc must wait while a writer holds the store"
    );
    s.finish().unwrap();
    // The writer's "ref update", made before it lets gc in.
    refs.lock().unwrap().push(id);
    drop(s);
    let report = gc.join().unwrap();
    assert!(
        store.contains(&id).unwrap(),
        "gc dropped an object the writer referenced before it finished"
    );
    assert_eq!(report.objects_dropped, 0);
}

#[test]
fn gc_drops_the_unreachable_but_keeps_recent_packs_and_what_they_reach() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    let store = open(&objects, 64 << 20);
    let (kept, dropped) = {
        let mut s = store.begin_write().unwrap();
        let kept = s.put_object(ObjectKind::Chunk, &noise(5000, 1)).unwrap();
        let dropped = s.put_object(ObjectKind::Chunk, &noise(5000, 2)).unwrap();
        s.finish().unwrap();
        (kept, dropped)
    };
    age_packs(&objects, Duration::from_secs(30 * 24 * 3600));
    // A recent pack (a push whose ref update is still to come) refers to `kept` in an old pack.
    let node = {
        let mut s = store.begin_write().unwrap();
        let node = FileNode {
            level: 0,
            entries: vec![
                NodeEntry {
                    id: kept,
                    size: 5000,
                },
                NodeEntry {
                    id: kept,
                    size: 5000,
                },
            ],
        };
        let node = s.put_object(ObjectKind::FileNode, &encode(&node)).unwrap();
        s.finish().unwrap();
        node
    };
    let no_roots = || Ok::<_, StoreError>(Vec::new());
    let report = store
        .gc(no_roots, GcOptions::default(), &Tally::silent())
        .unwrap();
    assert_eq!((report.objects_dropped, report.recent_packs_kept), (1, 1));
    assert!(store.contains(&node).unwrap() && store.contains(&kept).unwrap());
    assert!(!store.contains(&dropped).unwrap());
    assert_eq!(
        content(&store, &node),
        [noise(5000, 1), noise(5000, 1)].concat()
    );
    // Pruning now drops the rest.
    let report = store.gc(no_roots, prune_now(), &Tally::silent()).unwrap();
    assert_eq!((report.objects_dropped, report.recent_packs_kept), (2, 0));
    assert!(!store.contains(&node).unwrap() && !store.contains(&kept).unwrap());
}

#[test]
fn gc_keeps_one_copy_of_an_object_two_writers_stored_at_once() {
    for dead_beside_first in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let objects = dir.path().join("objects");
        let store = open(&objects, 64 << 20);
        // Two sessions at once: neither sees the other's pack, so both store `twice`.
        let mut one = store.begin_write().unwrap();
        let mut two = store.begin_write().unwrap();
        let twice = one.put_object(ObjectKind::Chunk, &noise(4000, 1)).unwrap();
        assert_eq!(
            two.put_object(ObjectKind::Chunk, &noise(4000, 1)).unwrap(),
            twice
        );
        let dead = match dead_beside_first {
            true => one.put_object(ObjectKind::Chunk, &noise(4000, 2)).unwrap(),
            false => two.put_object(ObjectKind::Chunk, &noise(4000, 2)).unwrap(),
        };
        one.finish().unwrap();
        two.finish().unwrap();
        drop((one, two));
        store.reload().unwrap();
        assert_eq!(store.stats().unwrap().objects, 3);
        let report = store
            .gc(
                || Ok::<_, StoreError>(vec![twice]),
                prune_now(),
                &Tally::silent(),
            )
            .unwrap();
        assert_eq!(report.objects_dropped, 1);
        assert_eq!(
            (store.stats().unwrap().objects, store.stats().unwrap().packs),
            (1, 1)
        );
        assert!(!store.contains(&dead).unwrap());
        assert_eq!(content(&store, &twice), noise(4000, 1));
        assert!(store
            .verify_reachable(&[twice], false, &Tally::silent())
            .unwrap()
            .is_clean());
    }
}

#[test]
fn a_missing_root_stops_gc_before_it_deletes_anything() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    let store = open(&objects, 64 << 20);
    let mut s = store.begin_write().unwrap();
    let present = s.put_object(ObjectKind::Chunk, b"garbage").unwrap();
    s.finish().unwrap();
    drop(s);
    let missing = ObjectId::hash(ObjectKind::Chunk, b"never stored");
    let err = store
        .gc(
            || Ok::<_, StoreError>(vec![missing]),
            prune_now(),
            &Tally::silent(),
        )
        .unwrap_err();
    assert!(
        matches!(err, StoreError::NotFound { id } if id == missing),
        "{err}"
    );
    assert!(store.contains(&present).unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn corrupted_packs_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8), truncate in proptest::option::of(any::<usize>())) {
        let dir = tempfile::tempdir().unwrap();
        let objects = dir.path().join("objects");
        let store = open(&objects, 64 << 20);
        let mut s = store.begin_write().unwrap();
        let ids: Vec<_> = (0..20u8).map(|i| s.put_object(ObjectKind::Chunk, &noise(3000 + i as usize * 100, i)).unwrap()).collect();
        s.finish().unwrap();
        drop(s);
        let pack = std::fs::read_dir(objects.join("packs")).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "pack")).unwrap();
        let mut bytes = std::fs::read(&pack).unwrap();
        for (pos, val) in flips {
            let n = bytes.len();
            bytes[pos % n] ^= val | 1;
        }
        if let Some(t) = truncate { let n = bytes.len(); bytes.truncate(t % n); }
        std::fs::write(&pack, &bytes).unwrap();
        if let Ok(store) = Store::open(&objects, ChunkParams::default(), 64 << 20) {
            for id in &ids { let _ = store.read(id); }
            let report = store.verify_packs(&Tally::silent()).unwrap();
            prop_assert!(!report.is_clean());
            let _ = store.verify_reachable(&ids, false, &Tally::silent());
        }
    }
}

#[test]
fn hashing_without_storing_gives_the_ids_ingest_stores() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 64 << 20);
    // Many one-chunk files (some hit a node boundary) and a few multi-chunk ones.
    let sizes: Vec<usize> = (0..300)
        .map(|i| 1 + i * 7)
        .chain([16384, 16385, 300_000, 2_000_000])
        .collect();
    let mut sources = Vec::new();
    for (i, len) in sizes.iter().enumerate() {
        let p = dir.path().join(format!("f{i}"));
        std::fs::write(&p, noise(*len, i as u8)).unwrap();
        sources.push(IngestSource { path: p });
    }
    let mut s = store.begin_write().unwrap();
    let stored = s.ingest(sources.clone(), &Tally::silent()).unwrap();
    s.finish().unwrap();
    for (src, r) in sources.iter().zip(stored) {
        let r = r.unwrap();
        let (id, size, _) = dmv_store::hash_file(&src.path, ChunkParams::default()).unwrap();
        assert_eq!((id, size), (r.id, r.size), "{}", src.path.display());
        if size <= 16384 {
            assert_eq!(
                store.kind_of(&id).unwrap(),
                ObjectKind::Chunk,
                "a one-chunk file is its chunk"
            );
        }
    }
}

/// The size of the multi-pack index each time it was rewritten since the last look.
struct IndexRewrites {
    path: std::path::PathBuf,
    seen: Option<(u64, u64)>,
    bytes: u64,
}

impl IndexRewrites {
    fn look(&mut self) {
        use std::os::unix::fs::MetadataExt;
        // A rewrite is a new file renamed over the old one, made while the old one exists: a new inode.
        if let Ok(m) = std::fs::metadata(&self.path) {
            if self.seen != Some((m.ino(), m.size())) {
                self.seen = Some((m.ino(), m.size()));
                self.bytes += m.size();
            }
        }
    }
}

/// The pack files in `store`'s folder.
fn pack_files(store: &Store) -> usize {
    std::fs::read_dir(store.packs_dir())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".pack")
        })
        .count()
}

/// A day of small commits: each writes one small pack. The auto-repack keeps
/// the store at a bounded number of files, rewrites each byte only a few
/// times (geometric rolling), rewrites the multi-pack index only as often
/// as all of those rewrites together write it a few times over (not every
/// few commits, which grows with the history), and loses nothing.
#[test]
fn small_packs_pile_up_no_further_than_the_auto_repack_allows() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 1 << 20);
    let mut midx = IndexRewrites {
        path: store.packs_dir().join(dmv_store::MULTI_PACK_INDEX),
        seen: None,
        bytes: 0,
    };
    let mut ids = Vec::new();
    let (mut rewritten, mut written, mut repacks, mut most_packs) = (0u64, 0u64, 0, 0);
    for i in 0..1000u32 {
        let mut s = store.begin_write().unwrap();
        let bytes = noise(200 + (i as usize % 7) * 100, (i % 251) as u8);
        let mut payload = i.to_le_bytes().to_vec();
        payload.extend_from_slice(&bytes);
        written += payload.len() as u64;
        ids.push((s.put_object(ObjectKind::Chunk, &payload).unwrap(), payload));
        s.finish().unwrap();
        drop(s);
        midx.look();
        if let Some(report) = store.repack_if_many_small().unwrap() {
            repacks += 1;
            rewritten += report.bytes_rewritten;
        }
        midx.look();
        let packs = pack_files(&store);
        most_packs = most_packs.max(packs);
    }
    assert!(repacks > 10, "{repacks} repacks");
    // The packs outside the multi-pack index, and the steep progression of those it covers (log₄ of 1000 ≈ 5 levels).
    assert!(
        most_packs <= dmv_store::AUTO_REPACK_SMALL_PACKS + 8,
        "{most_packs} packs"
    );
    // O(n log n), not O(n²): each byte rolled at most a dozen times (log₄ 1000 ≈ 5 levels, plus the piles before each roll).
    assert!(
        rewritten < 12 * written,
        "rewrote {rewritten} bytes of {written}"
    );
    // Each rewrite at least 9/8 of the last: the sum is at most ~9 times the last.
    assert!(
        midx.bytes < 12 * midx.seen.unwrap().1,
        "multi-pack index: {} bytes written, {} at the end",
        midx.bytes,
        midx.seen.unwrap().1
    );
    let files = std::fs::read_dir(store.packs_dir()).unwrap().count();
    assert!(
        files <= 2 * (dmv_store::AUTO_REPACK_SMALL_PACKS + 8) + 1,
        "{files} files"
    );
    let reopened =
        Store::open(&dir.path().join("objects"), ChunkParams::default(), 1 << 20).unwrap();
    for (id, payload) in &ids {
        assert_eq!(&reopened.read(id).unwrap().1, payload);
    }
    assert!(reopened.verify_packs(&Tally::silent()).unwrap().is_clean());
}

/// Packs sealed where nothing rolls them (a mount's piece fetches once
/// did not tidy) are folded into the multi-pack index by the sessions
/// themselves. The next auto-repack rolls those as well, so a reload lists
/// a handful of packs again, not one per fetch, and nothing is lost.
#[test]
fn small_packs_folded_in_unrolled_are_rolled_by_the_next_auto_repack() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 1 << 20);
    let packs = || pack_files(&store);
    let mut ids = Vec::new();
    let mut put = |i: u32| {
        let mut s = store.begin_write().unwrap();
        let payload = [i.to_le_bytes().to_vec(), noise(300, (i % 251) as u8)].concat();
        ids.push((s.put_object(ObjectKind::Chunk, &payload).unwrap(), payload));
        s.finish().unwrap();
    };
    for i in 0..300 {
        put(i);
    }
    assert_eq!(packs(), 300, "no session rolls packs");
    // The next small packs outside the index start the repack, once more
    // than it allows are there (how many are outside now depends on when
    // the sessions last folded).
    let report = (300..400)
        .find_map(|i| {
            put(i);
            store.repack_if_many_small().unwrap()
        })
        .expect("a repack");
    assert!(report.packs_rolled > 300, "{report:?}");
    assert!(packs() <= 4, "{} packs left", packs());
    let reopened =
        Store::open(&dir.path().join("objects"), ChunkParams::default(), 1 << 20).unwrap();
    for (id, payload) in &ids {
        assert_eq!(&reopened.read(id).unwrap().1, payload);
    }
    assert!(reopened.verify_packs(&Tally::silent()).unwrap().is_clean());
}

/// The repack only runs when nobody else writes: a session holding the lock
/// makes it wait for a later chance, and nothing is moved under it.
#[test]
fn the_auto_repack_leaves_a_store_alone_while_a_writer_is_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 1 << 20);
    for i in 0..(dmv_store::AUTO_REPACK_SMALL_PACKS as u32 + 4) {
        let mut s = store.begin_write().unwrap();
        s.put_object(ObjectKind::Chunk, &i.to_le_bytes()).unwrap();
        s.finish().unwrap();
    }
    let other = Store::open(&dir.path().join("objects"), ChunkParams::default(), 1 << 20).unwrap();
    let writer = other.begin_write().unwrap();
    assert!(store.repack_if_many_small().unwrap().is_none());
    drop(writer);
    let report = store
        .repack_if_many_small()
        .unwrap()
        .expect("a repack once the writer is gone");
    assert!(report.packs_rolled > dmv_store::AUTO_REPACK_SMALL_PACKS);
}

/// A large file not in the page cache is read past it (direct I/O): the
/// content round-trips, also when its length is not a multiple of a block.
#[test]
fn a_large_file_read_past_the_page_cache_round_trips() {
    #[cfg(target_os = "linux")]
    use std::os::unix::io::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 64 << 20);
    let data = noise((64 << 20) + 12345, 9);
    let path = dir.path().join("big");
    std::fs::write(&path, &data).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    f.sync_all().unwrap();
    // Elsewhere there is no such hint: the file is then read from the cache.
    #[cfg(target_os = "linux")]
    // SAFETY: posix_fadvise only reads its integer arguments.
    unsafe {
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED)
    };
    let mut s = store.begin_write().unwrap();
    let stored = s
        .ingest(vec![IngestSource { path }], &Tally::silent())
        .unwrap()
        .remove(0)
        .unwrap();
    s.finish().unwrap();
    assert_eq!(stored.size, data.len() as u64);
    assert!(content(&store, &stored.id) == data);
}

/// A file larger than the page cache was just written or read has its tail
/// in the cache and its head not: the parts that are not in the cache are
/// read past it (left out of it), the part that is from it, and the content
/// round-trips across the switches.
#[cfg(target_os = "linux")]
#[test]
fn a_file_partly_in_the_page_cache_is_read_past_it_where_it_is_not() {
    use std::os::unix::io::AsRawFd;
    const WINDOW: usize = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 64 << 20);
    let data = noise(3 * WINDOW + 12345, 11);
    let path = dir.path().join("big");
    std::fs::write(&path, &data).unwrap();
    let f = std::fs::File::open(&path).unwrap();
    f.sync_all().unwrap();
    // SAFETY: posix_fadvise only reads its integer arguments.
    assert_eq!(
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) },
        0
    );
    // The tail, two thirds of the file, into the cache: as a whole the file is mostly cached.
    let mut g = std::fs::File::open(&path).unwrap();
    std::io::Seek::seek(&mut g, std::io::SeekFrom::Start(WINDOW as u64)).unwrap();
    std::io::copy(&mut g, &mut std::io::sink()).unwrap();
    let cached_pages = |offset: usize, len| dmv_testkit::pages_cached(&f, offset as u64, len).0;
    let window_pages = dmv_testkit::pages_cached(&f, 0, WINDOW).1;
    assert!(
        cached_pages(WINDOW, 2 * WINDOW) > window_pages * 2 * 9 / 10,
        "the tail was read into the cache"
    );
    assert!(
        cached_pages(0, WINDOW) < window_pages / 10,
        "the first window is not in the cache"
    );

    let mut s = store.begin_write().unwrap();
    let stored = s
        .ingest(vec![IngestSource { path: path.clone() }], &Tally::silent())
        .unwrap()
        .remove(0)
        .unwrap();
    s.finish().unwrap();
    assert_eq!(stored.size, data.len() as u64);
    assert!(content(&store, &stored.id) == data);
    // The head was read past the cache, the tail from it.
    assert!(
        cached_pages(0, WINDOW) < window_pages / 10,
        "{} pages of the first window cached",
        cached_pages(0, WINDOW)
    );
    assert!(
        cached_pages(WINDOW, 2 * WINDOW) > window_pages * 2 * 9 / 10,
        "the tail is still cached"
    );
}

/// Most lookups while importing are for chunks the store lacks: the filters
/// answer those without a probe of an index, also in a session that seals
/// many packs (a file larger than RAM), and a present object costs one probe.
#[test]
fn absent_ids_are_answered_by_filters_and_present_ones_by_one_probe() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    let store = open(&objects, 1 << 16);
    let mut s = store.begin_write().unwrap();
    let mut ids = Vec::new();
    for i in 0..3_000u32 {
        ids.push(
            s.put_object(
                ObjectKind::Chunk,
                &noise(1024, 0)
                    .iter()
                    .chain(&i.to_le_bytes())
                    .copied()
                    .collect::<Vec<_>>(),
            )
            .unwrap(),
        );
        // Lookups of new ids inside the session, while packs pile up.
        if i % 100 == 99 {
            let before = store.index_probes();
            for k in 0..1_000u32 {
                assert!(!s
                    .has(&ObjectId::hash(
                        ObjectKind::Chunk,
                        &(i * 1_000 + k).to_be_bytes()
                    ))
                    .unwrap());
            }
            let probes = store.index_probes() - before;
            assert!(
                probes <= 100,
                "{probes} index probes for 1,000 absent ids after {} objects",
                i + 1
            );
        }
    }
    s.finish().unwrap();
    drop(s);
    let packs = pack_files(&store);
    assert!(packs > 40, "the session sealed {packs} packs");

    let store = Store::open(&objects, ChunkParams::default(), 1 << 16).unwrap();
    for (n, id) in ids.iter().enumerate() {
        assert!(store.contains(id).unwrap(), "object {n}");
    }
    // One probe each, but for the few that another index's filter lets through.
    let probes = store.index_probes();
    assert!(
        (3_000..=3_060).contains(&probes),
        "{probes} index probes for 3,000 present ids"
    );
    let before = store.index_probes();
    for k in 0..10_000u32 {
        assert!(!store
            .contains(&ObjectId::hash(ObjectKind::Tree, &k.to_le_bytes()))
            .unwrap());
    }
    let probes = store.index_probes() - before;
    assert!(probes <= 200, "{probes} index probes for 10,000 absent ids");
    assert!(store.verify_packs(&Tally::silent()).unwrap().is_clean());
}

/// gc decides what is dead by looking objects up: in a partial replica a
/// miss on file data means "absent here", so a damaged filter that hid
/// stored chunks would make gc delete them. gc looks past the filters.
#[test]
fn gc_in_a_partial_replica_keeps_data_that_a_damaged_filter_hides() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    let store = open(&objects, 64 << 20);
    let mut s = store.begin_write().unwrap();
    let (a, b) = (
        s.put_object(ObjectKind::Chunk, &noise(3000, 3)).unwrap(),
        s.put_object(ObjectKind::Chunk, &noise(3000, 4)).unwrap(),
    );
    let node = s
        .put_object(
            ObjectKind::FileNode,
            &encode(&FileNode {
                level: 0,
                entries: vec![
                    NodeEntry { id: a, size: 3000 },
                    NodeEntry { id: b, size: 3000 },
                ],
            }),
        )
        .unwrap();
    s.finish().unwrap();
    drop(s);
    store.write_multi_pack_index().unwrap();
    drop(store);
    // Every filter bit cleared: the filter now says no to every id.
    let midx = objects.join("packs").join(dmv_store::MULTI_PACK_INDEX);
    let mut bytes = std::fs::read(&midx).unwrap();
    let count = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let filter_len = (count * 12).div_ceil(512) * 64;
    let end = bytes.len() - 32;
    bytes[end - filter_len..end].fill(0);
    std::fs::write(&midx, &bytes).unwrap();

    let store = Store::open(&objects, ChunkParams::default(), 64 << 20).unwrap();
    assert!(
        !store.contains(&a).unwrap(),
        "the damaged filter hides the chunk"
    );
    let roots = || Ok::<_, StoreError>(vec![node]);
    store
        .gc(
            roots,
            GcOptions {
                absent_data_ok: true,
                ..prune_now()
            },
            &Tally::silent(),
        )
        .unwrap();
    assert_eq!(
        content(&store, &node),
        [noise(3000, 3), noise(3000, 4)].concat(),
        "gc kept the chunks and rewrote the index"
    );
}

#[test]
fn a_reader_started_at_any_offset_reads_the_rest_of_the_content() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    Store::create(&objects).unwrap();
    // Small chunks, so a few megabytes make a node tree of several levels.
    let store = Store::open(
        &objects,
        ChunkParams {
            min: 256,
            avg: 1024,
            max: 4096,
        },
        64 << 20,
    )
    .unwrap();
    let data = noise(3_000_000, 9);
    let path = dir.path().join("film");
    std::fs::write(&path, &data).unwrap();
    let mut s = store.begin_write().unwrap();
    let id = s
        .ingest(vec![IngestSource { path }], &Tally::silent())
        .unwrap()
        .remove(0)
        .unwrap()
        .id;
    s.finish().unwrap();
    drop(s);
    let root: FileNode = store.read_decoded(&id, ObjectKind::FileNode).unwrap();
    assert!(root.level >= 1, "the test needs a file with inner nodes");
    let mut offsets = vec![
        0,
        1,
        1023,
        1024,
        65_537,
        1_500_000,
        data.len() as u64 - 1,
        data.len() as u64,
        data.len() as u64 + 7,
    ];
    let mut x = 12345u64;
    for _ in 0..40 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        offsets.push((x >> 33) % data.len() as u64);
    }
    for offset in offsets {
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut store.content_reader_at(&id, offset).unwrap(), &mut got)
            .unwrap();
        let start = (offset as usize).min(data.len());
        assert!(
            got == data[start..],
            "offset {offset}: {} bytes read, {} expected",
            got.len(),
            data.len() - start
        );
    }
    // A one-chunk file too.
    let mut got = Vec::new();
    let small = noise(100, 3);
    let p = dir.path().join("small");
    std::fs::write(&p, &small).unwrap();
    let mut s = store.begin_write().unwrap();
    let small_id = s
        .ingest(vec![IngestSource { path: p }], &Tally::silent())
        .unwrap()
        .remove(0)
        .unwrap()
        .id;
    s.finish().unwrap();
    drop(s);
    std::io::Read::read_to_end(
        &mut store.content_reader_at(&small_id, 40).unwrap(),
        &mut got,
    )
    .unwrap();
    assert_eq!(got, small[40..]);
}

#[test]
fn content_stored_from_a_reader_gets_the_id_ingest_gives_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 64 << 20);
    for (i, len) in [0usize, 1, 5000, 16384, 300_000, 3_000_000]
        .into_iter()
        .enumerate()
    {
        let data = noise(len, i as u8);
        let path = dir.path().join(format!("f{i}"));
        std::fs::write(&path, &data).unwrap();
        let (hashed, size, _) = dmv_store::hash_file(&path, ChunkParams::default()).unwrap();
        let mut s = store.begin_write().unwrap();
        let (id, stored) = s.put_content(&mut data.as_slice()).unwrap();
        s.finish().unwrap();
        drop(s);
        assert_eq!((id, stored), (hashed, size), "{len} bytes");
        assert_eq!(content(&store, &id), data);
    }
}

/// Seeks within the chunk being read keep it: an MP4 of 200,000 empty
/// boxes is walked with a seek at every box, and each seek used to look
/// up and read its chunk again (25 s for `dmv show` of 1.6 MB). Random
/// seeks and reads still give the file's bytes.
#[test]
fn seeks_within_the_chunk_at_hand_read_nothing_again() {
    use std::io::{Read, Seek, SeekFrom};
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("objects"), 64 << 20);
    let data = noise(3 << 20, 9);
    let mut s = store.begin_write().unwrap();
    let (id, _) = s.put_content(&mut std::io::Cursor::new(&data)).unwrap();
    s.finish().unwrap();
    drop(s);
    let mut file = store.seekable_content(&id).unwrap();
    let mut header = [0u8; 8];
    file.read_exact(&mut header).unwrap();
    let probes = store.index_probes();
    for at in 8u64..10_008 {
        file.seek(SeekFrom::Start(at)).unwrap();
        file.read_exact(&mut header).unwrap();
        assert_eq!(header, data[at as usize..at as usize + 8]);
    }
    assert_eq!(
        store.index_probes(),
        probes,
        "no lookup while within the first chunk"
    );
    let mut rng = 12345u64;
    for _ in 0..2_000 {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = (rng >> 33) % data.len() as u64;
        let len = ((rng >> 13) % 70_000) as usize;
        let whence = if rng & 1 == 0 {
            SeekFrom::Start(at)
        } else {
            SeekFrom::End(at as i64 - data.len() as i64)
        };
        file.seek(whence).unwrap();
        let mut got = vec![0u8; len];
        let n = file.read(&mut got).unwrap();
        assert!(n > 0 || len == 0);
        let n = n.min(len);
        assert_eq!(got[..n], data[at as usize..at as usize + n], "at {at}");
        file.seek(SeekFrom::Current(-(n as i64))).unwrap();
        let mut again = vec![0u8; n];
        file.read_exact(&mut again).unwrap();
        assert_eq!(again, got[..n]);
    }
}
