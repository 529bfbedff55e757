//! Walking the working tree: every file and symlink under the root with its
//! lstat, honouring `.gitignore` and `.dmvignore` files (gitignore syntax;
//! each applies to its folder and below, a deeper file's rule wins, and in
//! one folder `.dmvignore`'s wins over `.gitignore`'s), skipping `.dmv`. A
//! team that moves from Git keeps its ignore files as they are.
//!
//! Each folder is read once and its entries are stat'ed relative to it
//! (`DirEntry::metadata` is an `fstatat` on the open folder), so the kernel
//! does not resolve every file's whole path again: with the `ignore` crate's
//! walker, which stats full paths, that lookup was a third of a status of
//! 100,000 files. Folders are shared out among a few threads.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use dmv_os::OsStrExt;

use crate::error::RepoError;
use crate::paths::{is_not_there, is_reserved_name, DMV_DIR, TEMP_PREFIX};
use crate::worktree::dirstate::Stat;
use crate::RepoResult;

/// A folder's ignore files, the one whose rules win last.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".dmvignore"];

/// The ignore files that apply in a folder, outermost first, each with the
/// length of its folder's path (to make paths relative to it).
type Ignores = Arc<Vec<(usize, Arc<Gitignore>)>>;

/// A folder to read: its path from the root ('/'-separated, empty for the root).
struct Folder {
    rel: Vec<u8>,
    ignores: Ignores,
}

#[derive(Default)]
struct Queue {
    folders: Vec<Folder>,
    /// Threads reading a folder (which may add more).
    busy: usize,
    error: Option<RepoError>,
}

/// Files found in one folder, as the walk hands them over.
pub(crate) type Found = Vec<(Vec<u8>, Stat)>;

/// The caller's thread walks alone until it has read this many entries: a
/// tree of a few hundred files is read before more threads would have
/// started (a status of 100 files spent longer starting eight than reading).
const ALONE_UP_TO: usize = 1000;

/// Every file and symlink under `root` (not ignored) with its lstat, handed
/// to `sink` folder by folder in no particular order (from any of the
/// `threads` threads reading folders, started once the walk has read
/// [`ALONE_UP_TO`] entries; it takes what it keeps out of the list).
pub(crate) fn walk(
    root: &Path,
    threads: usize,
    sink: &(dyn Fn(&mut Found) + Sync),
) -> RepoResult<()> {
    walk_from(
        root,
        vec![Folder {
            rel: Vec::new(),
            ignores: Arc::default(),
        }],
        threads,
        sink,
    )
}

/// [`walk`] of what lies at or under `paths` (from the root, '/'-separated)
/// only: what the whole walk would find there, found without reading the
/// rest of the tree (`add FILE` in a tree of a million files stats one
/// file, and reads the ignore files of the folders above it).
pub(crate) fn walk_under(
    root: &Path,
    paths: &[Vec<u8>],
    threads: usize,
    sink: &(dyn Fn(&mut Found) + Sync),
) -> RepoResult<()> {
    if paths.iter().any(|p| p.is_empty()) {
        return walk(root, threads, sink);
    }
    // A path inside another given path is found with it.
    let mut paths: Vec<&[u8]> = paths.iter().map(|p| p.as_slice()).collect();
    paths.sort_unstable();
    paths
        .dedup_by(|inner, outer| inner.starts_with(outer) && inner.get(outer.len()) == Some(&b'/'));
    let mut folders = Vec::new();
    let mut files = Vec::new();
    for path in paths {
        // The ignore files of every folder above it, each folder checked as the walk would.
        let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
        let mut ignores: Ignores = Arc::default();
        let mut rel: Vec<u8> = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if is_reserved_name(part) {
                break;
            }
            ignores = with_ignore_file(&root.join(OsStr::from_bytes(&rel)), &rel, &ignores)?;
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(part);
            let last = i + 1 == parts.len();
            let meta = match std::fs::symlink_metadata(root.join(OsStr::from_bytes(&rel))) {
                Ok(meta) => meta,
                Err(e) if is_not_there(&e) => break,
                Err(e) => return Err(scan_error(&root.join(OsStr::from_bytes(&rel)), e)),
            };
            if is_ignored(&ignores, &rel, meta.is_dir()) || (!last && !meta.is_dir()) {
                break;
            }
            if last {
                if meta.is_dir() {
                    folders.push(Folder {
                        rel: rel.clone(),
                        ignores: ignores.clone(),
                    });
                } else if meta.is_file() || meta.is_symlink() {
                    files.push((rel.clone(), Stat::of(&meta)));
                }
            }
        }
    }
    if !files.is_empty() {
        sink(&mut files);
    }
    if folders.is_empty() {
        return Ok(());
    }
    walk_from(root, folders, threads, sink)
}

fn walk_from(
    root: &Path,
    folders: Vec<Folder>,
    threads: usize,
    sink: &(dyn Fn(&mut Found) + Sync),
) -> RepoResult<()> {
    let queue = Mutex::new(Queue {
        folders,
        ..Queue::default()
    });
    let wake = Condvar::new();
    let read = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let mut others = threads.saturating_sub(1);
        let mut start_others = || {
            if others > 0 && read.load(Ordering::Relaxed) >= ALONE_UP_TO {
                for _ in 0..std::mem::take(&mut others) {
                    s.spawn(|| work(root, &queue, &wake, &read, sink, &mut || {}));
                }
            }
        };
        work(root, &queue, &wake, &read, sink, &mut start_others);
    });
    let queue = queue.into_inner().unwrap_or_else(|p| p.into_inner());
    match queue.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Threads for stat'ing many files: more than cores, as a stat waits now and
/// then (dentry locks, a cold inode). At 100,000 files on 2 cores, 8 threads
/// beat 2 (git's status uses up to 20).
pub(crate) fn stat_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .saturating_mul(4)
        .min(16)
}

/// One thread: takes folders until none is left and no other thread may add
/// one, counting the entries it reads in `read` and calling `more` after each folder.
fn work(
    root: &Path,
    queue: &Mutex<Queue>,
    wake: &Condvar,
    read: &AtomicUsize,
    sink: &(dyn Fn(&mut Found) + Sync),
    more: &mut dyn FnMut(),
) {
    let mut files = Vec::new();
    let mut subfolders = Vec::new();
    loop {
        let folder = {
            let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if q.error.is_some() {
                    break None;
                }
                if let Some(f) = q.folders.pop() {
                    q.busy += 1;
                    break Some(f);
                }
                if q.busy == 0 {
                    break None;
                }
                q = wake.wait(q).unwrap_or_else(|p| p.into_inner());
            }
        };
        let Some(folder) = folder else {
            wake.notify_all();
            break;
        };
        let busy = Busy { queue, wake };
        let result = read_folder(root, &folder, &mut files, &mut subfolders);
        std::mem::forget(busy);
        read.fetch_add(files.len() + subfolders.len(), Ordering::Relaxed);
        let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
        q.busy -= 1;
        match result {
            Ok(()) => q.folders.append(&mut subfolders),
            Err(e) => {
                q.error.get_or_insert(e);
            }
        }
        drop(q);
        wake.notify_all();
        more();
        // Handed over folder by folder: a list per thread would grow by
        // doubling beside the caller's (at a million files, ~100 MB more).
        sink(&mut files);
        files.clear();
    }
}

/// A folder being read. Should reading it panic, the other threads must not
/// wait forever for the folders it would have added: they stop, and the
/// panic reaches the caller.
struct Busy<'q> {
    queue: &'q Mutex<Queue>,
    wake: &'q Condvar,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.busy -= 1;
        q.error.get_or_insert(RepoError::Scan {
            detail: "a thread reading folders failed".into(),
        });
        drop(q);
        self.wake.notify_all();
    }
}

fn scan_error(path: &Path, e: impl std::fmt::Display) -> RepoError {
    RepoError::Scan {
        detail: format!("{}: {e}", path.display()),
    }
}

/// Reads one folder: its files into `files`, its folders into `subfolders`.
fn read_folder(
    root: &Path,
    folder: &Folder,
    files: &mut Found,
    subfolders: &mut Vec<Folder>,
) -> RepoResult<()> {
    let abs = root.join(OsStr::from_bytes(&folder.rel));
    let entries = match std::fs::read_dir(&abs) {
        Ok(entries) => entries,
        // Removed since its parent was read.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !folder.rel.is_empty() => {
            return Ok(())
        }
        Err(e) => return Err(scan_error(&abs, e)),
    };
    let ignores = with_ignore_file(&abs, &folder.rel, &folder.ignores)?;
    for entry in entries {
        let entry = entry.map_err(|e| scan_error(&abs, e))?;
        let name = entry.file_name();
        // A repository's own folder, or a nested repository's: no tree may hold it.
        if name.as_bytes().eq_ignore_ascii_case(DMV_DIR.as_bytes()) {
            continue;
        }
        // A file DMV was writing under a temporary name: never the user's.
        // One whose writer is gone (killed mid-write) is removed.
        if let Some(rest) = name.as_bytes().strip_prefix(TEMP_PREFIX.as_bytes()) {
            let writer = rest
                .split(|b| *b == b'-')
                .next()
                .and_then(|pid| std::str::from_utf8(pid).ok())
                .and_then(|pid| pid.parse::<u32>().ok());
            if writer.is_some_and(|pid| !dmv_os::process_alive(pid)) {
                let _ = std::fs::remove_file(entry.path());
            }
            continue;
        }
        // From the folder's listing: no stat unless the file system leaves the type out.
        let kind = match entry.file_type() {
            Ok(kind) => kind,
            Err(e) if is_not_there(&e) => continue,
            Err(e) => return Err(scan_error(&entry.path(), e)),
        };
        let mut rel = Vec::with_capacity(folder.rel.len() + 1 + name.len());
        if !folder.rel.is_empty() {
            rel.extend_from_slice(&folder.rel);
            rel.push(b'/');
        }
        rel.extend_from_slice(name.as_bytes());
        if is_ignored(&ignores, &rel, kind.is_dir()) {
            continue;
        }
        if kind.is_dir() {
            subfolders.push(Folder {
                rel,
                ignores: ignores.clone(),
            });
        } else if kind.is_file() || kind.is_symlink() {
            match entry.metadata() {
                Ok(meta) => files.push((rel, Stat::of(&meta))),
                // Gone since the folder was read: not there.
                Err(e) if is_not_there(&e) => {}
                // A folder we may list but not look into: its files are not gone, we cannot tell.
                Err(e) => return Err(scan_error(&entry.path(), e)),
            }
        }
    }
    Ok(())
}

/// The ignore files for a folder's entries: its parent's, and its own if it has any.
fn with_ignore_file(abs: &Path, rel: &[u8], outer: &Ignores) -> RepoResult<Ignores> {
    let mut all: Option<Vec<_>> = None;
    for name in IGNORE_FILES {
        let path = abs.join(name);
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let mut builder = GitignoreBuilder::new(abs);
        if let Some(e) = builder.add(&path) {
            return Err(scan_error(&path, e));
        }
        let own = builder.build().map_err(|e| scan_error(&path, e))?;
        let prefix = if rel.is_empty() { 0 } else { rel.len() + 1 };
        all.get_or_insert_with(|| outer.as_ref().clone())
            .push((prefix, Arc::new(own)));
    }
    Ok(all.map_or_else(|| outer.clone(), Arc::new))
}

/// Whether the innermost ignore file with a rule for `rel` ignores it.
fn is_ignored(ignores: &Ignores, rel: &[u8], is_dir: bool) -> bool {
    for (prefix, gitignore) in ignores.iter().rev() {
        let within = Path::new(OsStr::from_bytes(&rel[*prefix..]));
        match gitignore.matched(within, is_dir) {
            ignore::Match::None => continue,
            ignore::Match::Ignore(_) => return true,
            ignore::Match::Whitelist(_) => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk_all(root: &Path, threads: usize) -> RepoResult<Found> {
        let found = Mutex::new(Vec::new());
        walk(root, threads, &|files| found.lock().unwrap().append(files))?;
        Ok(found.into_inner().unwrap())
    }

    fn walked(root: &Path) -> Vec<String> {
        let mut out: Vec<String> = walk_all(root, 3)
            .unwrap()
            .into_iter()
            .map(|(p, _)| String::from_utf8(p).unwrap())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn nested_ignore_files_apply_below_their_folder_and_the_deeper_rule_wins() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let files = [
            ".dmvignore",
            "a.tmp",
            "b.txt",
            "cache/x",
            "sub/.dmvignore",
            "sub/keep.tmp",
            "sub/c.tmp",
            "sub/cache/y",
            "sub/deep/d.log",
            "sub/deep/e.txt",
            ".dmv/HEAD",
            "sub/.dmv/f",
            ".hidden",
        ];
        for f in files {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), f).unwrap();
        }
        std::fs::write(root.join(".dmvignore"), "*.tmp\ncache/\n").unwrap();
        std::fs::write(root.join("sub/.dmvignore"), "!keep.tmp\n*.log\n").unwrap();
        std::os::unix::fs::symlink("b.txt", root.join("link")).unwrap();
        // A nested repository's .dmv (any case) is left out, as the root's is.
        std::fs::create_dir_all(root.join("sub/deep/.DMV")).unwrap();
        std::fs::write(root.join("sub/deep/.DMV/g"), "g").unwrap();
        assert_eq!(
            walked(root),
            [
                ".dmvignore",
                ".hidden",
                "b.txt",
                "link",
                "sub/.dmvignore",
                "sub/deep/e.txt",
                "sub/keep.tmp"
            ]
        );
        let (_, meta) = walk_all(root, 1)
            .unwrap()
            .into_iter()
            .find(|(p, _)| p == b"link")
            .unwrap();
        assert!(meta.is_symlink());
    }

    #[test]
    fn gitignore_files_count_and_dmvignore_wins_in_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "a.log",
            "b.psd",
            "c.tmp",
            "sub/d.log",
            "sub/e.psd",
            "build/x",
        ] {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), f).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "*.log\n*.psd\nbuild/\n").unwrap();
        // Where the two disagree in one folder, .dmvignore's rule wins.
        std::fs::write(root.join(".dmvignore"), "!*.psd\n*.tmp\n").unwrap();
        // A deeper .gitignore wins over the root's .dmvignore.
        std::fs::write(root.join("sub/.gitignore"), "!d.log\ne.psd\n").unwrap();
        assert_eq!(
            walked(root),
            [
                ".dmvignore",
                ".gitignore",
                "b.psd",
                "sub/.gitignore",
                "sub/d.log"
            ]
        );
    }

    #[test]
    fn a_small_tree_is_walked_on_the_callers_thread_and_a_large_one_whole_on_many() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let make = |folders: usize, per: usize| {
            for d in 0..folders {
                std::fs::create_dir_all(root.join(format!("d{d}/e"))).unwrap();
                for f in 0..per {
                    std::fs::write(root.join(format!("d{d}/e/f{f}")), "x").unwrap();
                }
            }
        };
        make(10, 10);
        let threads_seen = Mutex::new(std::collections::HashSet::new());
        let count = AtomicUsize::new(0);
        walk(root, 8, &|files| {
            threads_seen
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
            count.fetch_add(files.len(), Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(count.into_inner(), 100);
        assert_eq!(
            threads_seen
                .into_inner()
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            [std::thread::current().id()]
        );
        make(60, 50);
        for threads in [1, 8] {
            let mut found: Vec<Vec<u8>> = walk_all(root, threads)
                .unwrap()
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            found.sort();
            let mut expected: Vec<Vec<u8>> = (0..60)
                .flat_map(|d| (0..50).map(move |f| format!("d{d}/e/f{f}").into_bytes()))
                .collect();
            expected.sort();
            assert!(
                found == expected,
                "{} files found on {threads} threads, {} expected",
                found.len(),
                expected.len()
            );
        }
    }

    #[test]
    fn a_malformed_ignore_file_is_an_error_not_a_silent_gap() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("ok")).unwrap();
        std::fs::write(root.join("ok/a"), "a").unwrap();
        std::fs::write(root.join(".dmvignore"), "*.tmp\n[z-a]\n").unwrap();
        assert!(matches!(walk_all(root, 2), Err(RepoError::Scan { .. })));
    }
}
