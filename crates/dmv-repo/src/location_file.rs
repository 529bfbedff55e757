//! The location log on disk, read and merged as a stream. At a million
//! files a log holds millions of records: merging new ones in (a clone, a
//! fetch, a push received, a drop) reads the file record by record and
//! writes the merged records out, and a page of it is read the same way,
//! so memory is a buffer's, not the log's (the format is in locations.rs).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use dmv_store::ObjectId;

use crate::error::{IoContext, RepoError, RepoResult};
use crate::locations::{decode_names, now_ns, write_framed, LocationLog, LocationRecord, ReplicaId, Stamp, HEADER_LEN, MAGIC, RECORD_LEN, VERSION, VERSION_WITHOUT_NAMES};
use crate::repo::Repository;

type Names = BTreeMap<ReplicaId, (u64, String)>;

/// `.dmv/locations` read record by record and hashed as it is read: what it
/// yields counts only once [`LogReader::finish`] has checked the checksum.
struct LogReader {
    path: PathBuf,
    input: BufReader<File>,
    hasher: blake3::Hasher,
    left: u64,
    names_len: u64,
    previous: Option<(ObjectId, ReplicaId)>,
}

impl LogReader {
    /// None when there is no log yet.
    fn open(path: &Path) -> RepoResult<Option<LogReader>> {
        match File::open(path) {
            Ok(file) => LogReader::of(path, file).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(RepoError::io(path, e)),
        }
    }

    /// Reads `file` (the log at `path`) from where it stands.
    fn of(path: &Path, file: File) -> RepoResult<LogReader> {
        let len = file.metadata().at(path)?.len();
        let mut reader =
            LogReader { path: path.to_path_buf(), input: BufReader::with_capacity(1 << 20, file), hasher: blake3::Hasher::new(), left: 0, names_len: 0, previous: None };
        if len < (HEADER_LEN + 32) as u64 {
            return Err(reader.bad("no location log header"));
        }
        let mut header = [0u8; HEADER_LEN];
        reader.read(&mut header)?;
        let (magic, rest) = header.split_at(8);
        let (version, count) = rest.split_at(4);
        let with_names = match u32::from_le_bytes(version.try_into().unwrap_or_default()) {
            _ if magic != MAGIC => return Err(reader.bad("no location log header")),
            VERSION => true,
            VERSION_WITHOUT_NAMES => false,
            _ => return Err(reader.bad("unknown version")),
        };
        let count = u64::from_le_bytes(count.try_into().unwrap_or_default());
        let body = len - (HEADER_LEN + 32) as u64;
        let records = count.checked_mul(RECORD_LEN as u64).filter(|n| *n <= body).ok_or_else(|| reader.bad("record count does not match the length"))?;
        reader.names_len = body - records;
        if !with_names && reader.names_len != 0 {
            return Err(reader.bad("record count does not match the length"));
        }
        reader.left = count;
        Ok(reader)
    }

    fn bad(&self, detail: &str) -> RepoError {
        RepoError::Corrupt { path: self.path.clone(), detail: format!("not a valid location log: {detail}") }
    }

    fn read(&mut self, buf: &mut [u8]) -> RepoResult<()> {
        self.input.read_exact(buf).at(&self.path)?;
        self.hasher.update(buf);
        Ok(())
    }

    fn next(&mut self) -> RepoResult<Option<LocationRecord>> {
        if self.left == 0 {
            return Ok(None);
        }
        let mut bytes = [0u8; RECORD_LEN];
        self.read(&mut bytes)?;
        self.left -= 1;
        let record = LocationRecord::decode(&bytes).map_err(|e| self.bad(&e.0))?;
        if self.previous.is_some_and(|p| p >= record.order()) {
            return Err(self.bad("records out of order"));
        }
        self.previous = Some(record.order());
        Ok(Some(record))
    }

    /// Reads the rest, checks the checksum, and returns the names.
    fn finish(mut self) -> RepoResult<Names> {
        while self.next()?.is_some() {}
        let mut names = vec![0u8; self.names_len as usize];
        self.read(&mut names)?;
        let mut sum = [0u8; 32];
        self.input.read_exact(&mut sum).at(&self.path)?;
        if self.hasher.finalize().as_bytes() != &sum {
            return Err(self.bad("checksum mismatch"));
        }
        let mut log = LocationLog::default();
        if !names.is_empty() {
            decode_names(&names, &mut log).map_err(|e| self.bad(&e.0))?;
        }
        Ok(log.names)
    }
}

fn next_of(reader: &mut Option<LogReader>) -> RepoResult<Option<LocationRecord>> {
    match reader {
        Some(r) => r.next(),
        None => Ok(None),
    }
}

/// Sorted records with each (key, replica) once: of repeats the newest is kept.
struct Newest<I: Iterator<Item = RepoResult<LocationRecord>>> {
    input: std::iter::Peekable<I>,
    path: PathBuf,
}

impl<I: Iterator<Item = RepoResult<LocationRecord>>> Newest<I> {
    fn next(&mut self) -> RepoResult<Option<LocationRecord>> {
        let Some(mut kept) = self.input.next().transpose()? else { return Ok(None) };
        while let Some(Ok(next)) = self.input.peek() {
            if next.order() > kept.order() {
                break;
            }
            if next.order() < kept.order() {
                return Err(RepoError::Corrupt { path: self.path.clone(), detail: "location records to merge in are out of order".into() });
            }
            if next.stamp.newer_than(&kept.stamp) {
                kept = *next;
            }
            self.input.next();
        }
        Ok(Some(kept))
    }
}

/// Records received in sorted pages (a remote's log), kept in an unnamed
/// file until they are merged: a remote's log may be larger than memory
/// should hold, and a kill leaves nothing behind.
pub struct LocationSpool {
    path: PathBuf,
    out: BufWriter<File>,
}

impl LocationSpool {
    pub fn new(repo: &Repository) -> RepoResult<LocationSpool> {
        let file = tempfile::tempfile_in(&repo.dmv).at(&repo.dmv)?;
        Ok(LocationSpool { path: repo.dmv.clone(), out: BufWriter::with_capacity(1 << 20, file) })
    }

    pub fn push(&mut self, record: &LocationRecord) -> RepoResult<()> {
        self.out.write_all(&record.encode()).at(&self.path)
    }

    /// The records pushed, in the order pushed.
    pub fn records(self) -> RepoResult<impl Iterator<Item = RepoResult<LocationRecord>>> {
        let path = self.path;
        let mut file = self.out.into_inner().map_err(|e| RepoError::io(&path, e.into_error()))?;
        file.rewind().at(&path)?;
        let mut input = BufReader::with_capacity(1 << 20, file);
        Ok(std::iter::from_fn(move || {
            let mut bytes = [0u8; RECORD_LEN];
            match input.read_exact(&mut bytes) {
                Ok(()) => Some(LocationRecord::decode(&bytes).map_err(|e| RepoError::Corrupt { path: path.clone(), detail: e.0 })),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
                Err(e) => Some(Err(RepoError::io(&path, e))),
            }
        }))
    }
}

/// The location log read a page at a time, for sending: checked whole
/// first, in one pass over the same open file (so a log rewritten meanwhile
/// is not mixed in), then read again page by page. Memory is a page's, where
/// a decoded log of a million files' records is ~370 MB.
pub struct LocationPages {
    path: PathBuf,
    reader: Option<LogReader>,
    count: u64,
    names: Option<Names>,
}

impl LocationPages {
    /// Up to `max` records in key order, encoded as a log of their own
    /// (with the names on the first page, which comes even when the log is
    /// empty); None when all were given. Encoded as read, not from a map of
    /// the records (which took twice the bytes).
    pub fn next_page(&mut self, max: usize) -> RepoResult<Option<Vec<u8>>> {
        let left = self.reader.as_ref().map_or(0, |r| r.left);
        let count = left.min(max as u64);
        let names = match self.names.take() {
            Some(names) => names,
            None if count == 0 => return Ok(None),
            None => Names::new(),
        };
        let mut page = Vec::with_capacity(HEADER_LEN + count as usize * RECORD_LEN + 32);
        self.write_records(&mut page, count, &names)?;
        Ok(Some(page))
    }

    /// Writes the next `count` records framed as a log with `names`.
    fn write_records(&mut self, out: &mut dyn Write, count: u64, names: &Names) -> RepoResult<()> {
        let mut failed = None;
        let written = write_framed(
            out,
            count,
            &mut |out| {
                for _ in 0..count {
                    match next_of(&mut self.reader) {
                        Ok(Some(record)) => out.write_all(&record.encode())?,
                        Ok(None) => break,
                        Err(e) => {
                            failed = Some(e);
                            return Err(std::io::Error::other("the location log could not be read"));
                        }
                    }
                }
                Ok(())
            },
            names,
        );
        match (failed, written) {
            (Some(e), _) => Err(e),
            (None, written) => written.at(&self.path),
        }
    }

    /// The whole log, encoded as [`LocationLog::encode_to`] would.
    pub fn encode_to(mut self, out: &mut dyn Write) -> RepoResult<()> {
        let names = self.names.take().unwrap_or_default();
        self.write_records(out, self.count, &names)
    }
}

impl Repository {
    /// The location log, to be read in pages (see [`LocationPages`]), with
    /// this replica's current name among the names.
    pub fn location_pages(&self) -> RepoResult<LocationPages> {
        let path = self.locations_path();
        let (reader, count, names) = match File::open(&path) {
            Ok(file) => {
                let check = LogReader::of(&path, file.try_clone().at(&path)?)?;
                let count = check.left;
                let names = check.finish()?;
                let mut file = file;
                file.rewind().at(&path)?;
                (Some(LogReader::of(&path, file)?), count, names)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (None, 0, Names::new()),
            Err(e) => return Err(RepoError::io(path, e)),
        };
        let mut named = LocationLog { records: BTreeMap::new(), names };
        self.with_my_name(&mut named);
        Ok(LocationPages { path, reader, count, names: Some(named.names) })
    }

    /// Merges `records` (sorted by key and replica) and `names` into the
    /// location log under its lock, as [`LocationLog::merge`] does (per key
    /// and replica the newest wins), streamed through a temporary file; with
    /// `my_name`, this replica's current name too. Returns how many records
    /// and names changed. A damaged log is refused before anything is written.
    pub fn merge_locations(&self, records: impl IntoIterator<Item = RepoResult<LocationRecord>>, names: &Names, my_name: bool) -> RepoResult<usize> {
        let path = self.locations_path();
        let _lock = self.lock_locations()?;
        let mut ours = LogReader::open(&path)?;
        let mut theirs = Newest { input: records.into_iter().peekable(), path: path.clone() };
        let body = tempfile::tempfile_in(&self.dmv).at(&self.dmv)?;
        let mut out = BufWriter::with_capacity(1 << 20, body);
        let (mut count, mut changed) = (0u64, 0usize);
        let (mut mine, mut other) = (next_of(&mut ours)?, theirs.next()?);
        loop {
            let record = match (mine, other) {
                (None, None) => break,
                (Some(m), None) => {
                    mine = next_of(&mut ours)?;
                    m
                }
                (None, Some(o)) => {
                    other = theirs.next()?;
                    changed += 1;
                    o
                }
                (Some(m), Some(o)) => match o.order().cmp(&m.order()) {
                    std::cmp::Ordering::Less => {
                        other = theirs.next()?;
                        changed += 1;
                        o
                    }
                    std::cmp::Ordering::Greater => {
                        mine = next_of(&mut ours)?;
                        m
                    }
                    std::cmp::Ordering::Equal => {
                        (mine, other) = (next_of(&mut ours)?, theirs.next()?);
                        changed += o.stamp.newer_than(&m.stamp) as usize;
                        if o.stamp.newer_than(&m.stamp) {
                            o
                        } else {
                            m
                        }
                    }
                },
            };
            out.write_all(&record.encode()).at(&self.dmv)?;
            count += 1;
        }
        let mut log = LocationLog { records: BTreeMap::new(), names: ours.map(LogReader::finish).transpose()?.unwrap_or_default() };
        let before = log.names.clone();
        for (replica, (time_ns, name)) in names {
            log.name(*replica, *time_ns, name);
        }
        if my_name {
            self.with_my_name(&mut log);
        }
        changed += log.names.iter().filter(|(k, v)| before.get(k) != Some(v)).count();
        let mut body = out.into_inner().map_err(|e| RepoError::io(&self.dmv, e.into_error()))?;
        body.rewind().at(&self.dmv)?;
        let mut body = BufReader::with_capacity(1 << 20, body);
        crate::atomic::write_atomic_with(&path, &mut |out| write_framed(out, count, &mut |out| std::io::copy(&mut body, out).map(drop), &log.names))?;
        Ok(changed)
    }

    /// Records that `replica` holds (or not) the data of `keys`, as of now.
    pub fn record_locations(&self, keys: &[ObjectId], replica: ReplicaId, present: bool) -> RepoResult<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let stamp = Stamp { time_ns: now_ns(), present };
        let mut keys = keys.to_vec();
        keys.sort_unstable();
        self.merge_locations(keys.into_iter().map(|key| Ok(LocationRecord { key, replica, stamp })), &Names::new(), false)?;
        Ok(())
    }

    /// The records of the location log that `keep` chooses, with its names
    /// (empty when none was written yet), read record by record and checked
    /// whole: a command holds what it asked for, not the log (two million
    /// records at a million files are ~370 MB as a map).
    pub fn locations_where(&self, mut keep: impl FnMut(&LocationRecord) -> bool) -> RepoResult<LocationLog> {
        let mut log = LocationLog::default();
        if let Some(mut reader) = LogReader::open(&self.locations_path())? {
            while let Some(r) = reader.next()? {
                if keep(&r) {
                    log.records.insert(r.order(), r.stamp);
                }
            }
            log.names = reader.finish()?;
        }
        Ok(log)
    }

    /// The whole location log.
    pub fn load_locations(&self) -> RepoResult<LocationLog> {
        self.locations_where(|_| true)
    }

    /// Reads the location log through: Ok when it is whole (or absent).
    pub fn check_locations(&self) -> RepoResult<()> {
        if let Some(reader) = LogReader::open(&self.locations_path())? {
            reader.finish()?;
        }
        Ok(())
    }

    /// The lock under which the location log is rewritten (so no two writers lose each other's records).
    fn lock_locations(&self) -> RepoResult<File> {
        let lock_path = self.dmv.join("locations.lock");
        let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).at(&lock_path)?;
        lock.lock().at(&lock_path)?;
        Ok(lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(k: u8, r: u8, t: u64, present: bool) -> LocationRecord {
        LocationRecord { key: ObjectId([k; 32]), replica: ReplicaId([r; 16]), stamp: Stamp { time_ns: t, present } }
    }

    fn arb_records() -> impl Strategy<Value = Vec<LocationRecord>> {
        proptest::collection::vec((0u8..6, 0u8..3, 0u64..4, any::<bool>()), 0..30).prop_map(|rs| rs.into_iter().map(|(k, r, t, p)| record(k, r, t, p)).collect())
    }

    fn log_of(records: &[LocationRecord], names: &[(u8, u64, &str)]) -> LocationLog {
        let mut log = LocationLog::default();
        for r in records {
            log.record(r.key, r.replica, r.stamp);
        }
        for (r, t, n) in names {
            log.name(ReplicaId([*r; 16]), *t, n);
        }
        log
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The streamed merge on disk does what the in-memory merge does,
        /// repeats among the records merged in included, and counts the same.
        #[test]
        fn merging_on_disk_is_merging_in_memory(ours in arb_records(), mut theirs in arb_records(), with_log in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
            let ours = log_of(&ours, &[(1, 5, "laptop")]);
            if with_log {
                std::fs::write(repo.locations_path(), ours.encode()).unwrap();
            }
            let mut expected = if with_log { ours.clone() } else { LocationLog::default() };
            theirs.sort_by_key(|r| r.order());
            let names: Names = [(ReplicaId([1; 16]), (6, "nas".to_string()))].into();
            let mut theirs_log = log_of(&theirs, &[]);
            theirs_log.names = names.clone();
            let expected_changed = expected.merge(&theirs_log);
            let changed = repo.merge_locations(theirs.iter().copied().map(Ok), &names, false).unwrap();
            let merged = repo.load_locations().unwrap();
            prop_assert_eq!(&merged, &expected);
            prop_assert_eq!(changed, expected_changed);
            repo.check_locations().unwrap();
            // Read for some records, it holds those and the names.
            let some = repo.locations_where(|r| r.key.0[0] % 2 == 0 && r.stamp.present).unwrap();
            let expected_some: BTreeMap<_, _> = merged.records.iter().filter(|(k, s)| k.0 .0[0] % 2 == 0 && s.present).map(|(k, s)| (*k, *s)).collect();
            prop_assert_eq!(&some.records, &expected_some);
            prop_assert_eq!(&some.names, &merged.names);
            // Read for sending, in pages or encoded whole, it is the log with this replica's name.
            // (Written down first, so the name's time is the file's.)
            repo.merge_locations(std::iter::empty(), &Names::new(), true).unwrap();
            let named = repo.load_locations().unwrap();
            prop_assert_eq!(&named.records, &merged.records);
            prop_assert!(named.names.len() == merged.names.len() + 1);
            let mut pages = repo.location_pages().unwrap();
            let mut sent = LocationLog::default();
            let mut first = true;
            while let Some(page) = pages.next_page(7).unwrap() {
                let page = LocationLog::decode(&page).unwrap();
                prop_assert!(page.records.len() <= 7 && (first || !page.records.is_empty()));
                prop_assert!(first || page.names.is_empty());
                first = false;
                sent.records.extend(page.records);
                sent.names.extend(page.names);
            }
            prop_assert!(!first);
            prop_assert_eq!(&sent, &named);
            let mut whole = Vec::new();
            repo.location_pages().unwrap().encode_to(&mut whole).unwrap();
            prop_assert_eq!(whole, named.encode());
        }
    }

    #[test]
    fn pages_being_sent_are_of_the_log_as_it_was_when_they_began_whatever_is_merged_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let before: Vec<LocationRecord> = (1..=5).map(|k| record(k, 1, 1, true)).collect();
        repo.merge_locations(before.iter().copied().map(Ok), &Names::new(), false).unwrap();
        let mut pages = repo.location_pages().unwrap();
        let first = LocationLog::decode(&pages.next_page(2).unwrap().unwrap()).unwrap();
        // Another command merges records in (a fetch, a drop): the log is rewritten under the sender.
        repo.merge_locations([Ok(record(0, 2, 9, true)), Ok(record(3, 1, 9, false))], &Names::new(), false).unwrap();
        let mut sent: Vec<LocationRecord> = first.iter().collect();
        while let Some(page) = pages.next_page(2).unwrap() {
            sent.extend(LocationLog::decode(&page).unwrap().iter());
        }
        assert_eq!(sent, before);
        assert_eq!(repo.load_locations().unwrap().records.len(), 6);
    }

    #[test]
    fn a_damaged_log_is_refused_before_anything_is_written_and_out_of_order_records_too() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path(), dmv_store::ChunkParams::default()).unwrap();
        let log = log_of(&[record(1, 1, 1, true), record(2, 1, 1, true)], &[]);
        let mut bytes = log.encode();
        bytes[HEADER_LEN + 40] ^= 4;
        std::fs::write(repo.locations_path(), &bytes).unwrap();
        let err = repo.merge_locations([Ok(record(3, 1, 1, true))], &Names::new(), false).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        assert_eq!(std::fs::read(repo.locations_path()).unwrap(), bytes);
        assert!(repo.check_locations().is_err() && repo.location_pages().is_err());
        // Even a read that keeps none of the records checks them all.
        assert!(repo.locations_where(|_| false).unwrap_err().to_string().contains("checksum"));

        std::fs::remove_file(repo.locations_path()).unwrap();
        let err = repo.merge_locations([Ok(record(3, 1, 1, true)), Ok(record(2, 1, 1, true))], &Names::new(), false).unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");
        assert!(!repo.locations_path().exists());
        assert_eq!(std::fs::read_dir(&repo.dmv).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().contains("tmp")).count(), 0);
    }
}
