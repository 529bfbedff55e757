//! The files being uploaded from browsers, piece by piece: which are open,
//! whose each is, where its bytes wait and whether a piece is being written
//! to it. All of it is kept in the repository's `.dmv/uploads/`, not in a
//! server's memory, so an upload outlives the process that opened it and
//! every server of the directory resumes it:
//!
//! - `<id>` holds the bytes that arrived: its length is the count of what
//!   arrived (a piece cut short still counts what it wrote), its
//!   modification time when the upload was last touched;
//! - `<id>.upload` is the upload's record (its repository, owner and size),
//!   written once when it opens ([`encode`]);
//! - a piece being written holds an OS lock on `<id>`, which the system
//!   drops with the process that held it (killed too): another piece, from
//!   this server or another, finds it busy.
//!
//! `.dmv/uploads.lock` (beside the folder, which is empty once its uploads
//! are committed) is held while an upload is opened and stale ones removed,
//! so the bounds are counted from what every server wrote.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use dmv_os::LockKind;
use serde::{Deserialize, Serialize};

/// Uploads open at once, over all users and every directory a server serves.
pub(crate) const OPEN_MAX: usize = 256;
/// Uploads one user (or one token without a user) may have open: one
/// user held all 256 for a day, and everyone else got 503.
pub(crate) const OPEN_PER_OWNER: usize = 32;
/// An upload nobody touched for this long is removed with its bytes.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(24 * 3600);
/// How long an owner found holding [`OPEN_PER_OWNER`] uploads is refused
/// more without counting again: 300 connections asking again and again
/// made every answer a directory listing and a statvfs.
const RECOUNT_AFTER: Duration = Duration::from_secs(1);
/// A record is about a hundred bytes; past this it is damage, refused unread.
const MAX_RECORD: usize = 8 << 10;
/// What a record's name adds to its upload's id.
const RECORD_SUFFIX: &str = ".upload";
/// The version a record carries.
const RECORD_VERSION: u32 = 1;

/// What an upload's record keeps: everything of it but its bytes.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    /// [`RECORD_VERSION`]: another is not read.
    dmv_upload: u32,
    /// The repository's name it was opened in.
    repo: String,
    /// Whose it is: `user NAME`, or `token HASH` for a token without one.
    owner: String,
    /// The size it was opened with.
    size: u64,
}

/// A record's bytes, or None when they would be past [`MAX_RECORD`].
fn encode(repo: &str, owner: &str, size: u64) -> Option<Vec<u8>> {
    let record = Record {
        dmv_upload: RECORD_VERSION,
        repo: repo.to_string(),
        owner: owner.to_string(),
        size,
    };
    let mut bytes = serde_json::to_vec(&record).ok()?;
    bytes.push(b'\n');
    (bytes.len() <= MAX_RECORD).then_some(bytes)
}

/// The record in `bytes`, if they are one: of our version, within
/// [`MAX_RECORD`], naming a repository and an owner of the shapes
/// [`crate::uploads`] gives.
fn decode(bytes: &[u8]) -> Option<Record> {
    if bytes.len() > MAX_RECORD {
        return None;
    }
    let record: Record = serde_json::from_slice(bytes).ok()?;
    let owner_ok = match record.owner.split_once(' ') {
        Some(("user", name)) => !name.is_empty(),
        // The first 32 hex digits of the token's hash, as an id's.
        Some(("token", hash)) => valid_id(hash),
        _ => false,
    };
    (record.dmv_upload == RECORD_VERSION && !record.repo.is_empty() && owner_ok).then_some(record)
}

/// Whether `id` is one [`crate::uploads`] makes: 32 lowercase hex digits.
/// Anything else names no upload (nor any other file of the folder).
fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn record_path(staging: &Path, id: &str) -> PathBuf {
    staging.join(format!("{id}{RECORD_SUFFIX}"))
}

/// Where the uploads of the repository in `dir` are staged.
pub(crate) fn staging_folder(dir: &Path) -> PathBuf {
    dir.join(".dmv").join("uploads")
}

/// The record at `path`, if there is a valid one.
fn read_record(path: &Path) -> Option<Record> {
    let mut bytes = Vec::new();
    File::open(path)
        .ok()?
        .take(MAX_RECORD as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    decode(&bytes)
}

/// Whether a file last changed at `modified` was left untouched too long.
/// A time in the future (a clock set back) is not stale.
fn stale(modified: std::io::Result<SystemTime>) -> bool {
    modified
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > STALE_AFTER)
}

/// An open upload as a request finds it.
pub(crate) struct Found {
    pub file: PathBuf,
    pub size: u64,
    pub received: u64,
}

/// Why an upload was not found or not claimed.
pub(crate) enum Unavailable {
    /// No such upload of this repository and owner.
    Unknown,
    /// A piece of it is being written; `received` so far.
    Busy { received: u64 },
    /// [`OPEN_MAX`] are open.
    Full,
    /// [`OPEN_PER_OWNER`] of this owner's are open.
    YoursFull,
    /// This owner's open uploads and this one would reserve more than its
    /// share: `reserved` bytes already, `share` in all.
    YoursTooLarge { reserved: u64, share: u64 },
    /// The disk's free space does not hold this upload beside what the
    /// open ones will still write (`reserved` bytes).
    NoRoom { reserved: u64 },
    /// Its file could not be made.
    Io(std::io::Error),
}

/// One open upload as the staging folders say.
struct Open {
    owner: String,
    size: u64,
    received: u64,
}

/// What this server remembers of the uploads: only which owners it last
/// found at their bound (the uploads themselves are on disk).
#[derive(Default)]
pub(crate) struct StagedUploads {
    /// Owners found holding [`OPEN_PER_OWNER`] uploads, and when.
    full: Mutex<HashMap<String, Instant>>,
}

impl StagedUploads {
    fn full(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.full.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `owner` held [`OPEN_PER_OWNER`] uploads when counted less than
    /// [`RECOUNT_AFTER`] ago: refused again without touching the disk.
    pub fn recently_full(&self, owner: &str) -> bool {
        self.full()
            .get(owner)
            .is_some_and(|at| at.elapsed() < RECOUNT_AFTER)
    }

    pub fn remember(&self, owner: &str, open: usize) {
        let mut full = self.full();
        full.retain(|_, at| at.elapsed() < RECOUNT_AFTER);
        if open >= OPEN_PER_OWNER {
            full.insert(owner.to_string(), Instant::now());
        } else {
            full.remove(owner);
        }
    }

    /// Opens an upload `id` of `size` bytes into `staging`, after removing
    /// stale ones. The bounds are counted over the uploads staged in
    /// `every` folder of the server (`staging` among them), as every
    /// server of those folders left them. The sizes of `owner`'s open
    /// uploads, this one included, add up to at most `share` bytes. `free`
    /// (None: not known) is what the disk may take: it must hold this
    /// upload and the rest of every open one (three uploads each of the
    /// whole free space were accepted when each was checked alone).
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &self,
        id: &str,
        repo: &str,
        owner: &str,
        size: u64,
        share: u64,
        staging: &Path,
        every: &[PathBuf],
        free: Option<u64>,
    ) -> Result<(), Unavailable> {
        if !valid_id(id) {
            return Err(Unavailable::Io(std::io::Error::other(format!(
                "{id:?} cannot name an upload"
            ))));
        }
        let folders = distinct(every.iter().map(PathBuf::as_path).chain([staging]));
        // Held until the upload is made, so that two servers opening at
        // once count each other's; taken in one order, so none waits in a circle.
        let _locks: Vec<File> = folders.iter().filter_map(|f| lock_table(f)).collect();
        let open = open_uploads(&folders);
        let theirs = || open.iter().filter(|u| u.owner == owner);
        let opened_by = theirs().count();
        self.remember(owner, opened_by);
        if open.len() >= OPEN_MAX {
            return Err(Unavailable::Full);
        }
        if opened_by >= OPEN_PER_OWNER {
            return Err(Unavailable::YoursFull);
        }
        let reserved: u64 = theirs().map(|u| u.size).sum();
        if reserved.saturating_add(size) > share {
            return Err(Unavailable::YoursTooLarge { reserved, share });
        }
        if let Some(free) = free {
            let reserved: u64 = open.iter().map(|u| u.size.saturating_sub(u.received)).sum();
            // What is written already is out of `free`; what open uploads will still write is not.
            let room = free.saturating_sub(reserved);
            if size > room {
                return Err(Unavailable::NoRoom { reserved });
            }
        }
        let record = encode(repo, owner, size).ok_or_else(|| {
            Unavailable::Io(std::io::Error::other(
                "the names of this upload are too long to record",
            ))
        })?;
        // The bytes first, then the record: a server stopped between the
        // two leaves bytes no record names, removed once as old as a stale upload.
        let bytes = staging.join(id);
        File::create_new(&bytes).map_err(Unavailable::Io)?;
        let written = File::create_new(record_path(staging, id))
            .and_then(|mut f| std::io::Write::write_all(&mut f, &record));
        if let Err(e) = written {
            let _ = std::fs::remove_file(record_path(staging, id));
            let _ = std::fs::remove_file(&bytes);
            return Err(Unavailable::Io(e));
        }
        self.remember(owner, opened_by + 1);
        Ok(())
    }

    /// The upload `id` of `repo` staged in `staging`, if `owner`'s; marks
    /// it touched.
    pub fn find(
        &self,
        staging: &Path,
        id: &str,
        repo: &str,
        owner: &str,
    ) -> Result<Found, Unavailable> {
        let size = recorded_size(staging, id, repo, owner)?;
        let file = staging.join(id);
        let Ok(bytes) = std::fs::metadata(&file) else {
            return Err(Unavailable::Unknown);
        };
        // Opened to append only to move its time: nothing is written.
        if let Ok(f) = File::options().append(true).open(&file) {
            let _ = f.set_modified(SystemTime::now());
        }
        let received = bytes.len();
        Ok(Found {
            file,
            size,
            received,
        })
    }

    /// [`StagedUploads::find`], and the upload's file open to append a
    /// piece, locked: no other request, of this server or another, writes
    /// to it until the file is closed (or its process ends).
    pub fn claim(
        &self,
        staging: &Path,
        id: &str,
        repo: &str,
        owner: &str,
    ) -> Result<(Found, File), Unavailable> {
        let size = recorded_size(staging, id, repo, owner)?;
        let file = staging.join(id);
        let Ok(out) = File::options().append(true).open(&file) else {
            return Err(Unavailable::Unknown);
        };
        let taken = dmv_os::try_lock(&out, LockKind::Exclusive).map_err(Unavailable::Io)?;
        let received = out.metadata().map_err(Unavailable::Io)?.len();
        if !taken {
            return Err(Unavailable::Busy { received });
        }
        // Removed as stale (or committed) between the look and the lock:
        // what is open may be a file no longer in the folder.
        if !record_path(staging, id).exists() {
            return Err(Unavailable::Unknown);
        }
        let _ = out.set_modified(SystemTime::now());
        Ok((
            Found {
                file,
                size,
                received,
            },
            out,
        ))
    }

    /// Closes the uploads whose files are `files` (committed), removing
    /// their records, then the files.
    pub fn finish(&self, files: &[&Path]) {
        for f in files {
            let mut record = f.as_os_str().to_owned();
            record.push(RECORD_SUFFIX);
            let _ = std::fs::remove_file(PathBuf::from(record));
            let _ = std::fs::remove_file(f);
        }
        // Their owners may have room again.
        self.full().clear();
    }
}

/// The size recorded for the upload `id` in `staging`, when it is of
/// `repo` and `owner`; any other, or a damaged record, is unknown.
fn recorded_size(staging: &Path, id: &str, repo: &str, owner: &str) -> Result<u64, Unavailable> {
    if !valid_id(id) {
        return Err(Unavailable::Unknown);
    }
    match read_record(&record_path(staging, id)) {
        Some(r) if r.repo == repo && r.owner == owner => Ok(r.size),
        _ => Err(Unavailable::Unknown),
    }
}

/// The staging folders named, each once (a directory served under two
/// names is counted once), in the order their table locks are taken.
fn distinct<'a>(folders: impl Iterator<Item = &'a Path>) -> Vec<PathBuf> {
    let mut seen: Vec<PathBuf> = folders
        .map(|f| {
            // `.dmv` exists in every repository; `uploads` in it may not yet.
            let dmv = f.parent().and_then(|p| p.canonicalize().ok());
            match (dmv, f.file_name()) {
                (Some(dmv), Some(name)) => dmv.join(name),
                _ => f.to_path_buf(),
            }
        })
        .collect();
    seen.sort();
    seen.dedup();
    seen
}

/// The table lock of `staging`, taken (waiting for another server's open
/// to end); None when it cannot be made (a repository the server may not
/// write to holds no uploads it opened).
fn lock_table(staging: &Path) -> Option<File> {
    let mut path: OsString = staging.as_os_str().to_owned();
    path.push(".lock");
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(PathBuf::from(path))
        .ok()?;
    dmv_os::lock(&file, LockKind::Exclusive).ok()?;
    Some(file)
}

/// The uploads open in `folders`, once those untouched for [`STALE_AFTER`]
/// are removed with their bytes, and files no upload names (a damaged
/// record, bytes whose record was never written) as old.
fn open_uploads(folders: &[PathBuf]) -> Vec<Open> {
    let mut open = Vec::new();
    for staging in folders {
        let Ok(entries) = std::fs::read_dir(staging) else {
            continue;
        };
        let names: Vec<OsString> = entries.flatten().map(|e| e.file_name()).collect();
        let mut kept: HashSet<OsString> = HashSet::new();
        for name in &names {
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_suffix(RECORD_SUFFIX))
                .filter(|id| valid_id(id))
            else {
                continue;
            };
            let Some(record) = read_record(&staging.join(name)) else {
                continue;
            };
            let Ok(bytes) = std::fs::metadata(staging.join(id)) else {
                continue;
            };
            if stale(bytes.modified()) && remove_unless_busy(staging, id) {
                continue;
            }
            // Counted whatever repository it names: another server may
            // serve this directory under another name, and it holds the disk all the same.
            kept.insert(name.clone());
            kept.insert(OsString::from(id));
            open.push(Open {
                owner: record.owner,
                size: record.size,
                received: bytes.len(),
            });
        }
        for name in names.iter().filter(|n| !kept.contains(*n)) {
            let path = staging.join(name);
            if stale(std::fs::symlink_metadata(&path).and_then(|m| m.modified())) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
    open
}

/// Removes the stale upload `id` unless a piece of it is being written
/// (a trickle of a piece for a day still holds it); whether it went.
fn remove_unless_busy(staging: &Path, id: &str) -> bool {
    let Ok(bytes) = File::open(staging.join(id)) else {
        return false;
    };
    if !dmv_os::try_lock(&bytes, LockKind::Exclusive).unwrap_or(false) {
        return false;
    }
    // The record first: a request that looks in between finds no upload, not half of one.
    let _ = std::fs::remove_file(record_path(staging, id));
    let _ = std::fs::remove_file(staging.join(id));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARE: u64 = 1 << 40;

    /// The id of the `n`th upload of a test.
    fn id(n: u32) -> String {
        format!("{n:032x}")
    }

    fn open_in(
        staged: &StagedUploads,
        dir: &Path,
        n: u32,
        owner: &str,
        size: u64,
        share: u64,
        free: Option<u64>,
    ) -> Result<(), Unavailable> {
        staged.open(&id(n), "hub", owner, size, share, dir, &[], free)
    }

    /// Sets the time `id`'s bytes were last touched to `ago`.
    fn age(dir: &Path, n: u32, ago: Duration) {
        File::options()
            .append(true)
            .open(dir.join(id(n)))
            .unwrap()
            .set_modified(SystemTime::now() - ago)
            .unwrap();
    }

    #[test]
    fn one_owner_holds_at_most_its_share_and_free_space_counts_every_open_upload() {
        let dir = tempfile::tempdir().unwrap();
        let staged = StagedUploads::default();
        for i in 0..OPEN_PER_OWNER as u32 {
            assert!(open_in(&staged, dir.path(), i, "user mallory", 1, SHARE, None).is_ok());
        }
        assert!(matches!(
            open_in(&staged, dir.path(), 100, "user mallory", 1, SHARE, None),
            Err(Unavailable::YoursFull)
        ));
        assert!(staged.recently_full("user mallory"));
        assert!(!staged.recently_full("user al"));
        assert!(
            open_in(&staged, dir.path(), 101, "user al", 1, SHARE, None).is_ok(),
            "others still upload"
        );

        // Three uploads each of the whole free space: the first fits, the
        // second does not beside it; as the first arrives it still counts.
        let (dir, staged) = (tempfile::tempdir().unwrap(), StagedUploads::default());
        let free = Some(1000);
        assert!(open_in(&staged, dir.path(), 1, "user al", 990, SHARE, free).is_ok());
        assert!(matches!(
            open_in(&staged, dir.path(), 2, "user bo", 990, SHARE, free),
            Err(Unavailable::NoRoom { .. })
        ));
        std::fs::write(dir.path().join(id(1)), vec![0u8; 500]).unwrap();
        let free_now = Some(500);
        assert!(matches!(
            open_in(&staged, dir.path(), 3, "user bo", 100, SHARE, free_now),
            Err(Unavailable::NoRoom { .. })
        ));
        assert!(open_in(&staged, dir.path(), 4, "user bo", 1, SHARE, free_now).is_ok());
        staged.finish(&[dir.path().join(id(1)).as_path()]);
        assert!(open_in(&staged, dir.path(), 5, "user bo", 400, SHARE, free_now).is_ok());
    }

    #[test]
    fn one_owner_reserves_at_most_its_share_of_bytes() {
        let (dir, staged) = (tempfile::tempdir().unwrap(), StagedUploads::default());
        let d = dir.path();
        assert!(open_in(&staged, d, 1, "user mallory", 600, 1000, None).is_ok());
        assert!(
            open_in(&staged, d, 2, "user mallory", 400, 1000, None).is_ok(),
            "up to the share exactly"
        );
        let refused = open_in(&staged, d, 3, "user mallory", 1, 1000, None);
        assert!(matches!(
            refused,
            Err(Unavailable::YoursTooLarge {
                reserved: 1000,
                share: 1000
            })
        ));
        assert!(
            open_in(&staged, d, 4, "user al", 1000, 1000, None).is_ok(),
            "others keep their own share"
        );
        // A finished upload gives its bytes back.
        staged.finish(&[d.join(id(1)).as_path()]);
        assert!(open_in(&staged, d, 5, "user mallory", 600, 1000, None).is_ok());
        assert!(matches!(
            open_in(&staged, d, 6, "user mallory", u64::MAX, 1000, None),
            Err(Unavailable::YoursTooLarge { .. })
        ));
    }

    #[test]
    fn an_upload_is_known_to_every_server_of_its_folder_and_only_as_its_owners() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Another process's view: nothing of the first is in the second's memory.
        let (first, second) = (StagedUploads::default(), StagedUploads::default());
        assert!(open_in(&first, d, 1, "user al", 10, SHARE, None).is_ok());
        std::fs::write(d.join(id(1)), b"0123").unwrap();
        let found = second.find(d, &id(1), "hub", "user al").ok().unwrap();
        assert_eq!((found.size, found.received), (10, 4));
        for (repo, owner) in [("hub", "user bo"), ("other", "user al")] {
            assert!(matches!(
                second.find(d, &id(1), repo, owner),
                Err(Unavailable::Unknown)
            ));
        }
        // An uploaded file's id in capitals, one of its folder's other
        // files, one outside it: none names an upload.
        std::fs::copy(record_path(d, &id(1)), record_path(d, &"AB".repeat(16))).unwrap();
        std::fs::write(d.join("AB".repeat(16)), b"").unwrap();
        let outside = format!("../{}", d.file_name().unwrap().to_string_lossy());
        for bad in ["", &"AB".repeat(16), &format!("{}.upload", id(1)), &outside] {
            assert!(matches!(
                second.find(d, bad, "hub", "user al"),
                Err(Unavailable::Unknown)
            ));
        }

        // A piece claimed by one keeps out every other until its file closes.
        let (_, piece) = first.claim(d, &id(1), "hub", "user al").ok().unwrap();
        assert!(matches!(
            second.claim(d, &id(1), "hub", "user al"),
            Err(Unavailable::Busy { received: 4 })
        ));
        assert!(matches!(
            first.claim(d, &id(1), "hub", "user al"),
            Err(Unavailable::Busy { .. })
        ));
        drop(piece);
        assert!(second.claim(d, &id(1), "hub", "user al").is_ok());

        // The bounds count what the other opened, in every folder served.
        let elsewhere = tempfile::tempdir().unwrap();
        let e = elsewhere.path();
        for n in 2..OPEN_PER_OWNER as u32 {
            assert!(open_in(&first, e, n, "user al", 1, SHARE, None).is_ok());
        }
        let folders = [d.to_path_buf(), e.to_path_buf()];
        let more = |staged: &StagedUploads, n: u32| {
            staged.open(&id(n), "hub", "user al", 1, SHARE, d, &folders, None)
        };
        assert!(more(&second, 100).is_ok(), "the 32nd");
        assert!(matches!(more(&second, 101), Err(Unavailable::YoursFull)));
        assert!(
            open_in(&second, e, 102, "user al", 1, SHARE, None).is_ok(),
            "a folder counted alone holds fewer"
        );
    }

    #[test]
    fn stale_uploads_go_with_their_bytes_unless_a_piece_is_being_written() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let staged = StagedUploads::default();
        for n in 1..=3 {
            assert!(open_in(&staged, d, n, "user al", 10, SHARE, None).is_ok());
        }
        let day = STALE_AFTER + Duration::from_secs(60);
        let (_, writing) = staged.claim(d, &id(2), "hub", "user al").ok().unwrap();
        for n in 1..=3 {
            age(d, n, day);
        }
        // A stray file as old, and one of now.
        std::fs::write(d.join("left-by-a-crash"), b"x").unwrap();
        File::options()
            .append(true)
            .open(d.join("left-by-a-crash"))
            .unwrap()
            .set_modified(SystemTime::now() - day)
            .unwrap();
        std::fs::write(d.join("new"), b"x").unwrap();
        assert!(open_in(&staged, d, 4, "user al", 10, SHARE, None).is_ok());
        let mut left: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut expected = vec![
            id(2),
            format!("{}.upload", id(2)),
            id(4),
            format!("{}.upload", id(4)),
            "new".to_string(),
        ];
        expected.sort();
        assert_eq!(left, expected);
        drop(writing);
        // A touch is a look at it: one looked at is not stale.
        age(d, 2, day);
        assert!(staged.find(d, &id(2), "hub", "user al").is_ok());
        assert!(open_in(&staged, d, 5, "user al", 10, SHARE, None).is_ok());
        assert!(d.join(id(2)).exists());
    }

    #[test]
    fn damaged_records_name_no_upload_and_hold_no_room() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let staged = StagedUploads::default();
        let junk: [&[u8]; 6] = [
            b"",
            b"{\"dmv_upload\":1,\"repo\":\"hub\",\"owner\":\"user al\"",
            b"{\"dmv_upload\":2,\"repo\":\"hub\",\"owner\":\"user al\",\"size\":1}",
            b"{\"dmv_upload\":1,\"repo\":\"hub\",\"owner\":\"al\",\"size\":1}",
            b"{\"dmv_upload\":1,\"repo\":\"\",\"owner\":\"user al\",\"size\":1}",
            b"{\"dmv_upload\":1,\"repo\":\"hub\",\"owner\":\"user al\",\"size\":1,\"more\":0}",
        ];
        let too_large = encode(&"h".repeat(MAX_RECORD), "user al", 1);
        assert!(too_large.is_none());
        let mut huge = encode("hub", "user al", 1).unwrap();
        huge.resize(MAX_RECORD + 1, b' ');
        for (n, bytes) in junk.iter().copied().chain([huge.as_slice()]).enumerate() {
            let n = n as u32;
            std::fs::write(d.join(id(n)), b"").unwrap();
            std::fs::write(record_path(d, &id(n)), bytes).unwrap();
            assert!(
                matches!(
                    staged.find(d, &id(n), "hub", "user al"),
                    Err(Unavailable::Unknown)
                ),
                "{}",
                String::from_utf8_lossy(bytes)
            );
            assert!(matches!(
                staged.claim(d, &id(n), "hub", "user al"),
                Err(Unavailable::Unknown)
            ));
        }
        // None of them counts: the whole share is still there.
        assert!(open_in(&staged, d, 100, "user al", 1000, 1000, None).is_ok());
        // A record whose bytes are gone names no upload either.
        std::fs::remove_file(d.join(id(100))).unwrap();
        assert!(matches!(
            staged.find(d, &id(100), "hub", "user al"),
            Err(Unavailable::Unknown)
        ));
        assert!(open_in(&staged, d, 101, "user al", 1000, 1000, None).is_ok());
    }

    #[test]
    fn a_record_has_golden_bytes() {
        let bytes = encode("hub", "user al", 3_145_728).unwrap();
        assert_eq!(
            bytes,
            b"{\"dmv_upload\":1,\"repo\":\"hub\",\"owner\":\"user al\",\"size\":3145728}\n"
        );
        assert_eq!(
            decode(&bytes),
            Some(Record {
                dmv_upload: 1,
                repo: "hub".into(),
                owner: "user al".into(),
                size: 3_145_728
            })
        );
        let token = format!("token {}", "0f".repeat(16));
        let bytes = encode("a \"b\"\n", &token, 0).unwrap();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            format!(
                "{{\"dmv_upload\":1,\"repo\":\"a \\\"b\\\"\\n\",\"owner\":\"{token}\",\"size\":0}}\n"
            )
        );
        assert_eq!(decode(&bytes).map(|r| r.repo), Some("a \"b\"\n".into()));
        assert_eq!(
            record_path(Path::new("u"), &id(7)),
            Path::new("u").join(format!("{}.upload", id(7)))
        );
    }

    proptest::proptest! {
        #[test]
        fn records_decode_any_bytes_without_panicking(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..9000)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn records_read_back_what_was_written(repo in ".{1,60}", user in ".{1,60}", size in proptest::num::u64::ANY) {
            let owner = format!("user {user}");
            let bytes = encode(&repo, &owner, size).unwrap();
            let record = decode(&bytes).unwrap();
            proptest::prop_assert_eq!((record.repo, record.owner, record.size), (repo, owner, size));
        }

        #[test]
        fn records_of_other_shapes_name_no_upload(repo in ".{0,20}", owner in ".{0,40}", size in proptest::num::u64::ANY) {
            let bytes = encode(&repo, &owner, size).unwrap();
            let well_shaped = !repo.is_empty()
                && (owner.strip_prefix("user ").is_some_and(|u| !u.is_empty())
                    || owner.strip_prefix("token ").is_some_and(valid_id));
            proptest::prop_assert_eq!(decode(&bytes).is_some(), well_shaped);
        }
    }
}
