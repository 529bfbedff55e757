//! Comparing what the walk finds, a folder at a time, with the dirstate's
//! entries as they lie in its sorted run: which tracked files may have
//! changed, which files are untracked, and which entries were found at all.
//! `status` and `add` keep only what this sorts out, never a list of every
//! file beside the dirstate (at a million files, ~100 MB).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::pathmap::Sorted;
use crate::worktree::dirstate::{DirEntry, Stat};

/// Which entries of a sorted run were found, marked from any thread.
pub(crate) struct Seen(Vec<AtomicU64>);

impl Seen {
    pub fn new(entries: usize) -> Seen {
        Seen(
            (0..entries.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        )
    }

    pub fn mark(&self, i: usize) {
        self.0[i / 64].fetch_or(1 << (i % 64), Ordering::Relaxed);
    }

    pub fn was_seen(&self, i: usize) -> bool {
        self.0[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
    }
}

/// Whether a tracked file's stat data says it may have changed since its entry was recorded.
pub(crate) fn differs(entry: &DirEntry, meta: &Stat, written_ns: i64) -> bool {
    meta.kind() != Some(entry.kind) || !entry.stat_matches(meta, written_ns)
}

/// Takes `files` (one folder's, in any order) out of the list and matches
/// each with `entries`: a tracked one is marked in `seen` and handed to
/// `tracked` with its position, an untracked one to `untracked`.
pub(crate) fn sift(
    entries: Sorted<'_, DirEntry>,
    seen: &Seen,
    files: &mut Vec<(Vec<u8>, Stat)>,
    mut tracked: impl FnMut(usize, Stat),
    mut untracked: impl FnMut(Vec<u8>, Stat),
) {
    // In path order, a folder's files mostly follow each other among the
    // entries: each is looked for where the last one was found before any
    // search (a binary search per file was a fifth of a status).
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut from = 0;
    for (path, meta) in files.drain(..) {
        let at = match from < entries.len() && entries.path(from) == path.as_slice() {
            true => Ok(from),
            false => entries.search_from(from, &path),
        };
        match at {
            Ok(i) => {
                from = i + 1;
                seen.mark(i);
                tracked(i, meta);
            }
            Err(i) => {
                from = i;
                untracked(path, meta);
            }
        }
    }
}
