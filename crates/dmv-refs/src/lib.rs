//! DMV's ref store, modelled on Git's reftable: a stack of immutable sorted
//! tables named by `tables.list`. A transaction writes one table and swaps
//! the list atomically under a lock file; deletions are tombstones; tables
//! are merged geometrically so the stack stays shallow; reflog records live
//! in the same tables and outlive the refs they describe.
//!
//! Byte format: docs/refs-format.md.
//!
//! Files, bottom up (a file only uses files listed before it): `value` (what
//! a ref holds, a reflog entry), `error`, `name` (which ref names are valid),
//! `failpoint` (crash-test hooks), `format` (record keys and values), `lock`
//! (the writer lock, whose file becomes the new `tables.list`); one table:
//! `block` (the byte layout the writer and the reader share), `writer`,
//! `table` (opening and reading it) and `verify` (its full check, for fsck),
//! with their tests in `table_tests`; `stack` (a snapshot of the stack and a
//! merged walk over it); and this file, the [`RefStore`]: reads, reflogs,
//! transactions and compaction.

#![warn(missing_docs)]

mod block;
mod error;
mod failpoint;
mod format;
mod lock;
mod name;
mod stack;
mod table;
#[cfg(test)]
mod table_tests;
mod value;
mod verify;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::RefError;
pub use failpoint::FAIL_POINTS;
pub use name::{validate_name, MAX_NAME_LEN};
pub use value::{RefValue, ReflogEntry};

use format::*;
use lock::{inline_line, sync_dir, Lock, LIST, LOCK};
use stack::{open_stack, read_list, Merged, Stack};
use table::Table;
use writer::TableWriter;

/// How a [`RefStore`] opened with [`RefStore::open`] writes; reads ignore it.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long a writer waits for another writer's lock before failing.
    pub lock_timeout: Duration,
    /// Run geometric compaction after every transaction.
    pub auto_compact: bool,
    /// A transaction's new table of at most this many bytes travels inside
    /// `tables.list` instead of in a file of its own (0: never). Readers
    /// take either; only a store whose readers all know inline tables may
    /// write them (dmv-repo lists the requirement `refs-inline`).
    pub inline_limit: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            lock_timeout: Duration::from_secs(5),
            auto_compact: true,
            inline_limit: 0,
        }
    }
}

/// Compare-and-swap condition of one update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Whatever the ref holds, or its absence.
    Any,
    /// The ref must not exist.
    Absent,
    /// The ref must hold exactly this value.
    Value(RefValue),
}

/// Handle on a ref directory. Holds no file handles or caches: every call
/// reads the current `tables.list`, so one handle per thread or process (or
/// one shared, it is Send + Sync) always sees committed state.
#[derive(Debug, Clone)]
pub struct RefStore {
    dir: PathBuf,
    opts: Options,
}

/// Above this many existing ref records per update, looking each update up
/// in the index is cheaper than one sorted pass over all refs.
const POINT_LOOKUP_RATIO: u64 = 256;

impl RefStore {
    /// Creates `dir` (and parents) and an empty `tables.list`.
    pub fn init(dir: &Path) -> Result<RefStore, RefError> {
        std::fs::create_dir_all(dir).map_err(|e| RefError::io(dir, e))?;
        let opts = Options::default();
        if dir.join(LIST).exists() {
            return Err(RefError::AlreadyExists(dir.to_path_buf()));
        }
        let lock = Lock::acquire(dir, opts.lock_timeout)?;
        // Re-check under the lock: a concurrent init may have won.
        if dir.join(LIST).exists() {
            return Err(RefError::AlreadyExists(dir.to_path_buf()));
        }
        lock.commit("", "", "")?;
        Ok(RefStore {
            dir: dir.to_path_buf(),
            opts,
        })
    }

    /// Opens the store in `dir`; fails if `tables.list` is missing or unreadable.
    pub fn open(dir: &Path, opts: Options) -> Result<RefStore, RefError> {
        read_list(dir)?;
        Ok(RefStore {
            dir: dir.to_path_buf(),
            opts,
        })
    }

    /// The directory holding `tables.list` and the tables.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The ref's current value; None if it does not exist (or was deleted).
    pub fn get(&self, name: &str) -> Result<Option<RefValue>, RefError> {
        validate_name(name)?;
        open_stack(&self.dir)?.get_ref(name)
    }

    /// Live refs whose name starts with `prefix` (a plain string prefix:
    /// "refs/heads/" for branches, "a/b" matches "a/b", "a/b/c" and "a/bc";
    /// "" lists all), sorted by name.
    pub fn list(&self, prefix: &str) -> Result<Vec<(String, RefValue)>, RefError> {
        let stack = open_stack(&self.dir)?;
        let mut start = Vec::new();
        ref_key(prefix, &mut start);
        let mut m = Merged::new(&stack.tables, &start)?;
        let mut out = Vec::new();
        while let Some((k, vtype, val, path)) = m.current() {
            if !k.starts_with(&start) {
                break;
            }
            let bad = |r| RefError::corrupt(path, r);
            if let Some(v) = decode_ref(vtype, val).map_err(bad)? {
                out.push((parse_ref_key(k).map_err(bad)?.to_string(), v));
            }
            m.advance()?;
        }
        Ok(out)
    }

    /// An empty batch of updates; nothing is written until [`Transaction::commit`].
    pub fn transaction(&self) -> Transaction<'_> {
        Transaction {
            store: self,
            updates: BTreeMap::new(),
        }
    }

    /// Reflog of `name`, newest first; still there after the ref is deleted.
    pub fn reflog(&self, name: &str) -> Result<Vec<ReflogEntry>, RefError> {
        validate_name(name)?;
        let stack = open_stack(&self.dir)?;
        let mut start = Vec::new();
        log_name_prefix(name, &mut start);
        let mut m = Merged::new(&stack.tables, &start)?;
        let mut out = Vec::new();
        while let Some((k, _vtype, val, path)) = m.current() {
            if !k.starts_with(&start) {
                break;
            }
            let (e, _) = decode_log(k, val).map_err(|r| RefError::corrupt(path, r))?;
            out.push(e);
            m.advance()?;
        }
        Ok(out)
    }

    /// Names with reflog records, sorted, including deleted refs.
    pub fn reflog_names(&self) -> Result<Vec<String>, RefError> {
        let stack = open_stack(&self.dir)?;
        let mut m = Merged::new(&stack.tables, &[LOG_PREFIX])?;
        let mut out: Vec<String> = Vec::new();
        while let Some((k, _, _, path)) = m.current() {
            if k.first() != Some(&LOG_PREFIX) {
                break;
            }
            let (name, _) = parse_log_key(k).map_err(|r| RefError::corrupt(path, r))?;
            if out.last().map(|l| l.as_str()) != Some(name) {
                out.push(name.to_string());
            }
            m.advance()?;
        }
        Ok(out)
    }

    /// Merges the whole stack into one table, dropping tombstones (gc).
    pub fn compact_all(&self) -> Result<(), RefError> {
        let lock = Lock::acquire(&self.dir, self.opts.lock_timeout)?;
        let stack = open_stack(&self.dir)?;
        let n = stack.tables.len();
        if n <= 1 {
            self.remove_orphans(&stack);
            return Ok(());
        }
        self.compact_locked(lock, &stack, 0)
    }

    /// Geometric compaction: while a table is not at least twice the size
    /// of everything above it, fold it into the merge. Skipped when another
    /// writer holds the lock; that writer compacts after its own commit.
    pub fn auto_compact(&self) -> Result<(), RefError> {
        let Some(lock) = Lock::try_acquire(&self.dir)? else {
            return Ok(());
        };
        let stack = open_stack(&self.dir)?;
        let sizes: Vec<u64> = stack.tables.iter().map(|t| t.size).collect();
        match plan_compaction(&sizes) {
            Some(r) => self.compact_locked(lock, &stack, r.start),
            None => {
                self.remove_orphans(&stack);
                Ok(())
            }
        }
    }

    /// Checks checksums, ordering and record contents of every table, and
    /// that update-index ranges increase up the stack.
    pub fn verify(&self) -> Result<(), RefError> {
        let stack = open_stack(&self.dir)?;
        let mut prev_max = 0u64;
        for (i, t) in stack.tables.iter().enumerate() {
            t.verify()?;
            if i > 0 && t.footer.min_index <= prev_max {
                return Err(RefError::corrupt(
                    &t.path,
                    "update indexes overlap the table below it",
                ));
            }
            prev_max = t.footer.max_index;
        }
        Ok(())
    }

    /// Tables in the stack, the one inline in the list included.
    pub fn table_count(&self) -> Result<usize, RefError> {
        let list = read_list(&self.dir)?;
        Ok(list.names.len() + usize::from(list.inline.is_some()))
    }

    /// Table files of the current stack, bottom first (for tests and fsck
    /// messages); a table inline in the list has none.
    pub fn table_paths(&self) -> Result<Vec<PathBuf>, RefError> {
        Ok(read_list(&self.dir)?
            .names
            .into_iter()
            .map(|n| self.dir.join(n))
            .collect())
    }

    /// Deletes table files not named by the list: leftovers of writers that
    /// died before their list swap. Only safe under the lock, since a live
    /// writer's new table is unlisted until it commits.
    fn remove_orphans(&self, stack: &Stack) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            let orphan_table =
                name.ends_with(".ref") && !stack.tables.iter().any(|t| t.name == name);
            if orphan_table || lock::is_dead_lock_temp(name) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Merges the tables from `start` to the top into one table file.
    fn compact_locked(&self, lock: Lock, stack: &Stack, start: usize) -> Result<(), RefError> {
        failpoint::hit("refs-compact-after-lock");
        self.remove_orphans(stack);
        let seg = &stack.tables[start..];
        let bottom = start == 0;
        let min = seg.iter().map(|t| t.footer.min_index).min().unwrap_or(0);
        let max = seg.iter().map(|t| t.footer.max_index).max().unwrap_or(0);
        let name = table_file_name(min, max);
        let path = self.dir.join(&name);
        let res = (|| {
            let mut w = TableWriter::create(&path, "refs-compact-during-table-write")?;
            let mut m = Merged::new(seg, &[])?;
            while let Some((k, vtype, val, _)) = m.current() {
                // Nothing below the bottom table can be shadowed, so its
                // tombstones have done their job.
                if !(bottom && vtype == T_DELETE) {
                    w.add(k, vtype, val)?;
                }
                m.advance()?;
            }
            w.finish(min, max)?;
            failpoint::hit("refs-compact-after-table-write");
            sync_dir(&self.dir)
        })();
        if let Err(e) = res {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        let committed =
            list_body(&stack.tables[..start], &Top::File(name.clone())).and_then(|body| {
                lock.commit(
                    &body,
                    "refs-compact-after-list-write",
                    "refs-compact-after-list-rename",
                )
            });
        if let Err(e) = committed {
            if !self.dir.join(LIST).exists() || !read_list(&self.dir)?.names.contains(&name) {
                let _ = std::fs::remove_file(&path);
            }
            return Err(e);
        }
        // Readers that still have the old list retry when these vanish.
        for (i, t) in seg.iter().filter(|t| !t.inline).enumerate() {
            let _ = std::fs::remove_file(&t.path);
            if i == 0 {
                failpoint::hit("refs-compact-during-remove");
            }
        }
        Ok(())
    }
}

fn table_file_name(min: u64, max: u64) -> String {
    format!("{min:08x}-{max:08x}-{:08x}.ref", rand::random::<u32>())
}

/// The new top table of the stack: a file, or its bytes inside the list.
enum Top {
    File(String),
    Inline(Vec<u8>),
}

/// The new list: the table files kept below, then the new top table.
fn list_body(below: &[Table], top: &Top) -> Result<String, RefError> {
    let mut body = String::new();
    for t in below {
        if t.inline {
            return Err(RefError::io(
                &t.path,
                std::io::Error::other(
                    "internal error: the table inline in the list would stay below a new one",
                ),
            ));
        }
        body.push_str(&t.name);
        body.push('\n');
    }
    match top {
        Top::File(name) => {
            body.push_str(name);
            body.push('\n');
        }
        Top::Inline(bytes) => body.push_str(&inline_line(bytes)),
    }
    Ok(body)
}

/// A table built in memory but too large to travel in the list, in a file of its own.
fn write_table_file(path: &Path, bytes: &[u8]) -> Result<(), RefError> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| RefError::io(path, e))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| RefError::io(path, e))
}

/// Returns the top segment of the stack to merge, if any. Sizes are bottom
/// first. Each table must be at least twice the size of what sits above it.
pub(crate) fn plan_compaction(sizes: &[u64]) -> Option<std::ops::Range<usize>> {
    let n = sizes.len();
    if n < 2 {
        return None;
    }
    let mut start = n - 1;
    let mut above = sizes[n - 1];
    while start > 0 && sizes[start - 1] < above.saturating_mul(2) {
        start -= 1;
        above += sizes[start];
    }
    (start < n - 1).then_some(start..n)
}

/// A table's bytes besides its records (header, index, footer), for planning
/// a compaction before the table is written.
const TABLE_OVERHEAD: u64 = 128;

/// A batch of ref updates that commits all-or-nothing.
pub struct Transaction<'a> {
    store: &'a RefStore,
    updates: BTreeMap<String, (Expect, Option<RefValue>)>,
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("dir", &self.store.dir)
            .field("updates", &self.updates.len())
            .finish()
    }
}

impl<'a> Transaction<'a> {
    /// Queues an update; `new: None` deletes. Deleting an absent ref is a
    /// no-op under `Expect::Any`/`Expect::Absent` and a CAS failure under
    /// `Expect::Value`.
    pub fn update(
        &mut self,
        name: &str,
        expect: Expect,
        new: Option<RefValue>,
    ) -> Result<&mut Self, RefError> {
        validate_name(name)?;
        if self.updates.contains_key(name) {
            return Err(RefError::DuplicateUpdate {
                name: name.to_string(),
            });
        }
        self.updates.insert(name.to_string(), (expect, new));
        Ok(self)
    }

    /// The number of updates queued.
    pub fn len(&self) -> usize {
        self.updates.len()
    }

    /// True when no update is queued (a commit then writes nothing).
    pub fn is_empty(&self) -> bool {
        self.updates.is_empty()
    }

    /// Checks every expectation under the lock, writes one table and
    /// publishes it; then (outside the transaction's durability) compacts.
    pub fn commit(self, who: &str, when: (i64, i16), message: &str) -> Result<(), RefError> {
        if self.updates.is_empty() {
            return Ok(());
        }
        let store = self.store;
        let dir = &store.dir;
        let lock = Lock::acquire(dir, store.opts.lock_timeout)?;
        failpoint::hit("refs-after-lock");
        let stack = open_stack(dir)?;
        let olds = self.current_values(&stack)?;

        for ((name, (expect, _)), old) in self.updates.iter().zip(&olds) {
            let ok = match expect {
                Expect::Any => true,
                Expect::Absent => old.is_none(),
                Expect::Value(v) => old.as_ref() == Some(v),
            };
            if !ok {
                return Err(RefError::Changed {
                    name: name.clone(),
                    expected: match expect {
                        Expect::Value(v) => Some(*v),
                        _ => None,
                    },
                    found: *old,
                });
            }
        }
        // Deleting an absent ref changes nothing and leaves no reflog entry.
        let live: Vec<bool> = self
            .updates
            .values()
            .zip(&olds)
            .map(|((_, new), old)| new.is_some() || old.is_some())
            .collect();
        if !live.contains(&true) {
            return Ok(());
        }

        // Leftovers of a writer that died before its list swap go now, while we hold the lock.
        store.remove_orphans(&stack);
        let idx = stack.max_index() + 1;
        // The transaction's records, in key order: log keys ('l' name NUL
        // idx) sort in name order like ref keys, and all before them ('r' name).
        let mut records: Vec<(Vec<u8>, u8, Vec<u8>)> = Vec::new();
        for (((n, (_, new)), old), _) in self.updates.iter().zip(&olds).zip(&live).filter(|x| *x.1)
        {
            let (mut key, mut val) = (Vec::new(), Vec::new());
            log_key(n, idx, &mut key);
            encode_log(
                &mut val,
                old.as_ref(),
                new.as_ref(),
                when.0,
                when.1,
                who,
                message,
            );
            records.push((key, T_LOG, val));
        }
        for (((n, (_, new)), _), _) in self.updates.iter().zip(&olds).zip(&live).filter(|x| *x.1) {
            let mut key = Vec::new();
            ref_key(n, &mut key);
            match new {
                Some(v) => records.push((key, T_REF, v.to_vec())),
                None => records.push((key, T_DELETE, Vec::new())),
            }
        }
        // Geometric compaction planned with this table on top: the tables it
        // would fold in are merged with it in the same write, so the commit
        // and its compaction are one table, one fsync and one list swap.
        // A table inline in the list is the top one, and the list is
        // rewritten: it is always folded in, so it is planned as part of the new one.
        let mut sizes: Vec<u64> = stack.tables.iter().map(|t| t.size).collect();
        let inline_below = stack
            .tables
            .last()
            .filter(|t| t.inline)
            .map_or(0, |t| t.size);
        let always = stack.tables.len() - usize::from(inline_below > 0);
        sizes.truncate(always);
        sizes.push(
            inline_below
                + records
                    .iter()
                    .map(|(k, _, v)| (k.len() + v.len() + 8) as u64)
                    .sum::<u64>()
                + TABLE_OVERHEAD,
        );
        let fold = if store.opts.auto_compact {
            plan_compaction(&sizes).map_or(always, |r| r.start)
        } else {
            always
        };
        let seg = &stack.tables[fold..];
        let min = seg
            .iter()
            .map(|t| t.footer.min_index)
            .min()
            .unwrap_or(idx)
            .min(idx);
        let name = table_file_name(min, idx);
        let path = dir.join(&name);
        // The transaction's records merged with the folded tables, in key order.
        let fill = |w: &mut TableWriter| -> Result<(), RefError> {
            let mut below = Merged::new(seg, &[])?;
            let mut mine = records.iter().peekable();
            // Nothing below the bottom table can be shadowed: its tombstones have done their job.
            let keep = |vtype: u8| !(fold == 0 && vtype == T_DELETE);
            loop {
                // Some(order of my next key against theirs), None: theirs comes first.
                let mine_first = match (mine.peek(), below.current()) {
                    (None, None) => break,
                    (Some((k, ..)), Some((tk, ..))) => {
                        (k.as_slice() <= tk).then(|| k.as_slice() == tk)
                    }
                    (Some(_), None) => Some(false),
                    (None, Some(_)) => None,
                };
                match mine_first {
                    Some(same_key) => {
                        if same_key {
                            // The transaction's record shadows the older one.
                            below.advance()?;
                        }
                        if let Some((k, vt, v)) = mine.next().filter(|(_, vt, _)| keep(*vt)) {
                            w.add(k, *vt, v)?;
                        }
                    }
                    None => {
                        if let Some((tk, vt, v, _)) =
                            below.current().filter(|(_, vt, ..)| keep(*vt))
                        {
                            w.add(tk, vt, v)?;
                        }
                        below.advance()?;
                    }
                }
            }
            Ok(())
        };
        // A table small enough travels inside the new list: no file of its
        // own, two flushes instead of four (table, folder, list, folder).
        let limit = store.opts.inline_limit;
        let small = limit > 0 && sizes[fold..].iter().sum::<u64>() <= limit;
        let res = (|| {
            let top = if small {
                let mut w = TableWriter::in_memory(&dir.join(LIST))?;
                fill(&mut w)?;
                let bytes = w.finish_in_memory(min, idx)?;
                if bytes.len() as u64 <= limit {
                    failpoint::hit("refs-after-table-write");
                    return Ok(Top::Inline(bytes));
                }
                write_table_file(&path, &bytes)?;
                Top::File(name.clone())
            } else {
                let mut w = TableWriter::create(&path, "refs-during-table-write")?;
                fill(&mut w)?;
                w.finish(min, idx)?;
                Top::File(name.clone())
            };
            failpoint::hit("refs-after-table-write");
            sync_dir(dir)?;
            Ok(top)
        })();
        let top = match res {
            Ok(top) => top,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        let committed = list_body(&stack.tables[..fold], &top)
            .and_then(|body| lock.commit(&body, "refs-after-list-write", "refs-after-list-rename"));
        if let Err(e) = committed {
            if matches!(top, Top::File(_))
                && !read_list(dir)
                    .map(|l| l.names.contains(&name))
                    .unwrap_or(true)
            {
                let _ = std::fs::remove_file(&path);
            }
            return Err(e);
        }
        // Readers that still have the old list retry when these vanish.
        for t in seg.iter().filter(|t| !t.inline) {
            let _ = std::fs::remove_file(&t.path);
        }
        Ok(())
    }

    /// Current values of all updated refs, in name order: point lookups for
    /// small batches, one merged pass for large ones (1M lookups through the
    /// index would cost far more than reading every block once).
    fn current_values(&self, stack: &Stack) -> Result<Vec<Option<RefValue>>, RefError> {
        let n = self.updates.len() as u64;
        let mut out = Vec::with_capacity(self.updates.len());
        if n.saturating_mul(POINT_LOOKUP_RATIO) < stack.ref_records() {
            for name in self.updates.keys() {
                out.push(stack.get_ref(name)?);
            }
            return Ok(out);
        }
        let mut key = Vec::new();
        let first = self.updates.keys().next().map(|s| s.as_str()).unwrap_or("");
        ref_key(first, &mut key);
        let mut m = Merged::new(&stack.tables, &key)?;
        for name in self.updates.keys() {
            ref_key(name, &mut key);
            let mut found = None;
            while let Some((k, vtype, val, path)) = m.current() {
                if k < key.as_slice() {
                    m.advance()?;
                    continue;
                }
                if k == key.as_slice() {
                    found = decode_ref(vtype, val).map_err(|r| RefError::corrupt(path, r))?;
                }
                break;
            }
            out.push(found);
        }
        Ok(out)
    }
}

#[doc(hidden)]
pub mod internals {
    //! Exposed for tests and the torture binary only; not a stable API.
    use super::*;

    pub const LOCK_FILE: &str = LOCK;
    pub const LIST_FILE: &str = LIST;

    /// Opens and fully verifies table bytes, then iterates every record.
    pub fn check_table_bytes(bytes: Vec<u8>) -> Result<usize, RefError> {
        let t = Table::from_bytes(Path::new("<bytes>"), bytes)?;
        t.verify()?;
        let mut it = t.seek(&[])?;
        let mut n = 0;
        while it.current().is_some() {
            n += 1;
            it.advance()?;
        }
        Ok(n)
    }

    /// Table blocks read so far by the calling thread.
    pub fn block_reads() -> u64 {
        table::BLOCK_READS.with(|c| c.get())
    }

    pub fn plan(sizes: &[u64]) -> Option<std::ops::Range<usize>> {
        plan_compaction(sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_is_geometric() {
        assert_eq!(plan_compaction(&[]), None);
        assert_eq!(plan_compaction(&[100]), None);
        assert_eq!(plan_compaction(&[100, 10]), None);
        assert_eq!(plan_compaction(&[100, 60]), Some(0..2));
        assert_eq!(plan_compaction(&[1000, 100, 60]), Some(1..3));
        assert_eq!(plan_compaction(&[1000, 100, 20, 10]), None);
        assert_eq!(plan_compaction(&[1000, 100, 20, 15]), Some(2..4));
        assert_eq!(plan_compaction(&[300, 100, 20, 15]), Some(2..4));
        assert_eq!(plan_compaction(&[300, 60, 20, 15]), Some(1..4));
        assert_eq!(plan_compaction(&[150, 60, 20, 15]), Some(0..4));
    }
}
