//! One working-tree file at a time: writing a stored entry out (safely
//! over whatever is there, or quickly into an empty tree), removing a file
//! and the directories it leaves empty, reading a symlink's target.

use crate::repository::handles::Worktree;
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use dmv_os::{OpenOptionsExt, OsStrExt};
use dmv_store::object::EntryKind;
use dmv_store::{ObjectId, ObjectKind};

/// An attributes file larger than this is not read (it would be a mistake).
const MAX_ATTRIBUTES_BYTES: u64 = 1 << 20;

use crate::error::{IoContext, RepoError, RepoResult};
use crate::history::tree::FlatEntry;
use crate::paths::{Beneath, TEMP_PREFIX};
use crate::repository::attributes::{Lockable, ReadOnlyRule, ATTRIBUTES_FILE};

/// The target of a symlink, as stored.
pub(crate) fn symlink_target(path: &Path) -> RepoResult<Vec<u8>> {
    Ok(std::fs::read_link(path)
        .at(path)?
        .as_os_str()
        .as_bytes()
        .to_vec())
}

/// A symlink to `target` at `at`; where the system makes none for us
/// (Windows), a file holding the target, as git's `core.symlinks = false`
/// checks one out: status still sees it as the link it was, until it is edited.
fn make_symlink(target: &[u8], at: &Path) -> std::io::Result<()> {
    match dmv_os::SYMLINKS {
        true => dmv_os::symlink(OsStr::from_bytes(target), at),
        false => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(at)
            .and_then(|mut f| std::io::Write::write_all(&mut f, target)),
    }
}

impl Worktree<'_> {
    /// Writes one stored entry to the working tree (via a temporary name and
    /// rename, so a reader never sees half a file) and returns its new stat.
    pub(crate) fn write_entry(&self, rel: &[u8], e: &FlatEntry) -> RepoResult<Metadata> {
        self.write_entry_in(rel, e, &mut HashSet::new())
    }

    /// [`Worktree::write_entry`], the way to each directory made and
    /// checked once per `dirs_made`. A get of 10,000 photos made 13 system
    /// calls a file; a folder where the file goes is now looked for only
    /// when the rename fails, and the temporary name, unique to this
    /// process, is removed first only when it exists: 7 calls a file.
    pub(crate) fn write_entry_in(
        &self,
        rel: &[u8],
        e: &FlatEntry,
        dirs_made: &mut HashSet<PathBuf>,
    ) -> RepoResult<Metadata> {
        let path = self.abs_path(rel);
        let parent = self.parent_made(rel, &path, dirs_made)?;
        // Unique per call: checkout writes from several threads at once.
        static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);
        let tmp = parent.join(format!(
            "{TEMP_PREFIX}{}-{}-{}",
            std::process::id(),
            NEXT_TEMP.fetch_add(1, Ordering::Relaxed),
            e.id.short()
        ));
        let target = match e.kind {
            EntryKind::Symlink => Some(self.store.read_kind(&e.id, ObjectKind::Chunk)?),
            _ => None,
        };
        let create = || match &target {
            Some(target) => make_symlink(target, &tmp).map(|()| None),
            None => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(self.new_file_mode(rel, e.kind))
                .open(&tmp)
                .map(Some),
        };
        // Only a process of the same id, killed, leaves one of that name.
        let created = match create() {
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                let _ = std::fs::remove_file(&tmp);
                create()
            }
            other => other,
        };
        if let Some(f) = created.at(&tmp)? {
            let mut w = dmv_store::FileWriter::new(f, e.size);
            let written = self.store.write_content(&e.id, &mut w);
            let flushed = w.finish().map_err(|err| RepoError::io(&tmp, err));
            if let Err(err) = written.map_err(RepoError::from).and(flushed.map(|_| ())) {
                let _ = std::fs::remove_file(&tmp);
                return Err(err);
            }
        }
        if let Err(err) = dmv_os::replace_file(&tmp, &path) {
            // A folder where the file goes is removed, as a checkout must.
            let moved = match path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                true => {
                    std::fs::remove_dir_all(&path).and_then(|()| dmv_os::replace_file(&tmp, &path))
                }
                false => Err(err),
            };
            if let Err(err) = moved {
                let _ = std::fs::remove_file(&tmp);
                return Err(RepoError::io(&path, err));
            }
        }
        std::fs::symlink_metadata(&path).at(&path)
    }

    /// Writes bytes made here, not stored (a merge's text with conflict
    /// markers), the way [`Worktree::write_entry`] writes a stored file.
    pub(crate) fn write_made(
        &self,
        rel: &[u8],
        kind: EntryKind,
        bytes: &[u8],
    ) -> RepoResult<Metadata> {
        use std::io::Write;
        let path = self.abs_path(rel);
        let parent = self.make_parent_dirs(rel)?;
        let tmp = parent.join(format!("{TEMP_PREFIX}{}-made", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(self.new_file_mode(rel, kind))
            .open(&tmp)
            .and_then(|mut f| f.write_all(bytes));
        if let Err(err) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(RepoError::io(&tmp, err));
        }
        dmv_os::replace_file(&tmp, &path).at(&path)?;
        std::fs::symlink_metadata(&path).at(&path)
    }

    /// Moves a complete file written elsewhere in the repository's file
    /// system (an early checkout's, which knows no lock rules) to `rel`,
    /// where nothing is, read-only first if a checkout would write it so
    /// (kind `kind`); returns its stat. The way to each directory is made
    /// and checked once per `dirs_made`.
    pub(crate) fn move_in(
        &self,
        rel: &[u8],
        kind: EntryKind,
        written: &Path,
        dirs_made: &mut HashSet<PathBuf>,
    ) -> RepoResult<Metadata> {
        let path = self.abs_path(rel);
        let parent = path.parent().unwrap_or(&self.root).to_path_buf();
        if !dirs_made.contains(&parent) {
            self.make_parent_dirs(rel)?;
            dirs_made.insert(parent);
        }
        if self.new_file_mode(rel, kind) & 0o222 == 0 {
            let meta = std::fs::symlink_metadata(written).at(written)?;
            dmv_os::set_mode(written, dmv_os::mode_of(&meta) & 0o7777 & !0o222).at(written)?;
        }
        std::fs::rename(written, &path).at(&path)?;
        std::fs::symlink_metadata(&path).at(&path)
    }

    /// Makes the directories above `rel`; a file or symlink standing where
    /// one of them must go is replaced (never followed). Returns the parent.
    fn make_parent_dirs(&self, rel: &[u8]) -> RepoResult<PathBuf> {
        let mut anc = Path::new(OsStr::from_bytes(rel)).parent();
        let mut chain = Vec::new();
        while let Some(a) = anc.filter(|a| !a.as_os_str().is_empty()) {
            chain.push(self.root.join(a));
            anc = a.parent();
        }
        for a in chain.iter().rev() {
            if let Ok(m) = a.symlink_metadata() {
                if !m.is_dir() {
                    std::fs::remove_file(a).at(a)?;
                }
            }
        }
        let parent = self
            .abs_path(rel)
            .parent()
            .unwrap_or(&self.root)
            .to_path_buf();
        std::fs::create_dir_all(&parent).at(&parent)?;
        Ok(parent)
    }

    /// The folder `path` (of `rel`) goes in, made and checked unless
    /// `dirs_made` says it was already.
    fn parent_made(
        &self,
        rel: &[u8],
        path: &Path,
        dirs_made: &mut HashSet<PathBuf>,
    ) -> RepoResult<PathBuf> {
        let parent = path.parent().unwrap_or(&self.root).to_path_buf();
        if !dirs_made.contains(&parent) {
            self.make_parent_dirs(rel)?;
            dirs_made.insert(parent.clone());
        }
        Ok(parent)
    }

    /// `write_entry` into an empty working tree: the file is created under
    /// its own name, as git does. The temporary name, the rename and the
    /// checks of what is in the way are most of the system calls of checking
    /// out many small files, and each looks the name up in its directory
    /// again. The way to a directory is checked once per directory. A kill
    /// can leave the file being written short, as with git; a path that
    /// exists after all (an ignored file) takes the careful way.
    pub(crate) fn write_new_entry(
        &self,
        rel: &[u8],
        e: &FlatEntry,
        dirs_made: &mut HashSet<PathBuf>,
    ) -> RepoResult<Metadata> {
        let path = self.abs_path(rel);
        self.parent_made(rel, &path, dirs_made)?;
        if e.kind == EntryKind::Symlink {
            let target = self.store.read_kind(&e.id, ObjectKind::Chunk)?;
            return match make_symlink(&target, &path) {
                Ok(()) => std::fs::symlink_metadata(&path).at(&path),
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    self.write_entry(rel, e)
                }
                Err(err) => Err(RepoError::io(&path, err)),
            };
        }
        let f = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(self.new_file_mode(rel, e.kind))
            .open(&path)
        {
            Ok(f) => f,
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                return self.write_entry(rel, e)
            }
            Err(err) => return Err(RepoError::io(&path, err)),
        };
        let mut w = dmv_store::FileWriter::new(f, e.size);
        let written = self
            .store
            .write_content(&e.id, &mut w)
            .map_err(RepoError::from);
        // The stat data of the open file: no second lookup of the name.
        match written.and_then(|_| {
            w.finish()
                .and_then(|f| f.metadata())
                .map_err(|err| RepoError::io(&path, err))
        }) {
            Ok(meta) => Ok(meta),
            Err(err) => {
                let _ = std::fs::remove_file(&path);
                Err(err)
            }
        }
    }

    /// `write_entry` where nothing is (a file whose data was absent): the
    /// file is written with no name and named once whole, so a reader (a
    /// watcher) never sees it half written and a kill leaves nothing, as
    /// with a temporary name, and the name is added to its folder once,
    /// not twice and taken out again: a get of 100,000 small files spent
    /// 60% of its time in those folder updates. Where the system has no
    /// unnamed files, or something is at the path after all, the careful
    /// way of [`Worktree::write_entry_in`].
    pub(crate) fn write_entry_where_none(
        &self,
        rel: &[u8],
        e: &FlatEntry,
        dirs_made: &mut HashSet<PathBuf>,
    ) -> RepoResult<Metadata> {
        // Cleared at the first refusal: the file systems of one replica do not change.
        static UNNAMED: AtomicBool = AtomicBool::new(true);
        if e.kind == EntryKind::Symlink || !UNNAMED.load(Ordering::Relaxed) {
            return self.write_entry_in(rel, e, dirs_made);
        }
        let path = self.abs_path(rel);
        let parent = self.parent_made(rel, &path, dirs_made)?;
        let f = match dmv_os::create_unnamed_in(&parent, self.new_file_mode(rel, e.kind)) {
            Ok(f) => f,
            Err(err) if err.kind() == std::io::ErrorKind::Unsupported => {
                UNNAMED.store(false, Ordering::Relaxed);
                return self.write_entry_in(rel, e, dirs_made);
            }
            Err(err) => return Err(RepoError::io(&parent, err)),
        };
        let mut w = dmv_store::FileWriter::new(f, e.size);
        self.store.write_content(&e.id, &mut w)?;
        let f = w.finish().map_err(|err| RepoError::io(&path, err))?;
        dmv_os::fault::kill_point("fill-written-unnamed");
        match dmv_os::name_unnamed(&f, &path) {
            // The stat data of the open file, named: no second lookup.
            Ok(()) => f.metadata().at(&path),
            Err(err) => {
                if err.kind() != std::io::ErrorKind::AlreadyExists {
                    UNNAMED.store(false, Ordering::Relaxed);
                }
                self.write_entry_in(rel, e, dirs_made)
            }
        }
    }

    /// The permissions a file is created with (before the umask): read-only
    /// when it is lockable and this replica's user does not hold its lock.
    pub(crate) fn new_file_mode(&self, rel: &[u8], kind: EntryKind) -> u32 {
        let mode = if kind == EntryKind::Executable {
            0o777
        } else {
            0o666
        };
        let rule = self
            .read_only
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let rule = rule.unwrap_or_else(|| {
            let text = std::fs::read_to_string(self.root.join(ATTRIBUTES_FILE)).unwrap_or_default();
            self.set_read_only_rule(&text)
        });
        if rule.read_only(rel) {
            mode & !0o222
        } else {
            mode
        }
    }

    /// Reads which files to write read-only from `.dmvattributes` as it is
    /// in `tree` (a checkout's target: its files follow its attributes).
    pub(crate) fn read_only_rule_of(&self, tree: &ObjectId) -> RepoResult<()> {
        let text =
            match crate::history::tree::lookup(&self.store, tree, ATTRIBUTES_FILE.as_bytes())? {
                Some(e)
                    if e.kind == EntryKind::File
                        && e.size <= MAX_ATTRIBUTES_BYTES
                        && !self.copies().is_absent(&e)? =>
                {
                    let mut bytes = Vec::new();
                    std::io::Read::read_to_end(&mut self.store.content_reader(&e.id)?, &mut bytes)
                        .map_err(|err| RepoError::io(self.root.join(ATTRIBUTES_FILE), err))?;
                    String::from_utf8_lossy(&bytes).into_owned()
                }
                _ => String::new(),
            };
        self.set_read_only_rule(&text);
        Ok(())
    }

    fn set_read_only_rule(&self, attributes: &str) -> Arc<ReadOnlyRule> {
        let lockable = Lockable::parse(attributes);
        let held = if lockable.is_empty() {
            Default::default()
        } else {
            self.locks()
                .known_locks()
                .mine()
                .map(|l| l.path.clone())
                .collect()
        };
        let rule = Arc::new(ReadOnlyRule { lockable, held });
        *self.read_only.write().unwrap_or_else(|e| e.into_inner()) = Some(rule.clone());
        rule
    }

    /// Makes a lockable file writable once its lock is held, and read-only
    /// again once released; other files are left as they are. Returns
    /// whether the file's permissions changed.
    pub fn set_lock_mode(&self, rel: &str, held: bool) -> RepoResult<bool> {
        let text = std::fs::read_to_string(self.root.join(ATTRIBUTES_FILE)).unwrap_or_default();
        if !Lockable::parse(&text).matches(rel.as_bytes()) {
            return Ok(false);
        }
        // The cached rule knew the old holder: read it again when next needed
        // (an absent file's lock decides its mode when get writes it).
        *self.read_only.write().unwrap_or_else(|e| e.into_inner()) = None;
        let path = self.abs_path(rel.as_bytes());
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => m,
            _ => return Ok(false),
        };
        let mode = dmv_os::mode_of(&meta);
        let new = if held { mode | 0o200 } else { mode & !0o222 };
        if new != mode {
            dmv_os::set_mode(&path, new).at(&path)?;
        }
        Ok(new != mode)
    }

    /// Removes a working-tree file (already gone is fine) and the
    /// directories above it that it leaves empty.
    pub(crate) fn remove_worktree_file(&self, rel: &[u8]) -> RepoResult<()> {
        self.remove_worktree_file_in(&mut Beneath::new(&self.root), rel)
    }

    /// [`Worktree::remove_worktree_file`] for many files in path order,
    /// which share `beneath`'s checks of the folders on the way.
    pub(crate) fn remove_worktree_file_in(
        &self,
        beneath: &mut Beneath,
        rel: &[u8],
    ) -> RepoResult<()> {
        let abs = self.abs_path(rel);
        // Behind a folder that became a symlink, the tracked file is not there (see Beneath).
        if beneath.stat(rel).at(&abs)?.is_none() {
            return Ok(());
        }
        match std::fs::remove_file(&abs) {
            Ok(()) => {
                self.remove_empty_parents(rel);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(RepoError::io(abs, e)),
        }
    }

    fn remove_empty_parents(&self, rel: &[u8]) {
        let mut p = Path::new(OsStr::from_bytes(rel)).parent();
        while let Some(dir) = p.filter(|d| !d.as_os_str().is_empty()) {
            if std::fs::remove_dir(self.root.join(dir)).is_err() {
                break;
            }
            p = dir.parent();
        }
    }
}
