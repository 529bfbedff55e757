//! The checks `fsck` makes of a repository's files other than the object
//! store (which `dmv_store::verify` checks): every one a flipped bit or a
//! cut write can damage. Each problem is one line naming the file. And the
//! local half of `fsck --repair`: rebuilding what can be rebuilt here, and
//! saying what is lost.

use crate::repository::handles::Maintenance;
use std::collections::{HashMap, HashSet};

use dmv_store::object::EntryKind;
use dmv_store::{ObjectId, StoreError, Tally};

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{flatten, read_dir};
use crate::ref_names::BRANCHES;
use crate::replica::locations::ReplicaId;
use crate::repository::refs::Head;
use crate::worktree::dirstate::{DirEntry, Dirstate, Stat};

impl Maintenance<'_> {
    /// What is wrong with the refs, HEAD, the dirstate, the location log and
    /// the replica files (nothing: an empty list).
    pub(crate) fn check_files(&self) -> RepoResult<Vec<String>> {
        let mut problems = Vec::new();
        if let Err(e) = self.refs.verify() {
            problems.push(format!("refs: {e}"));
        }
        match self.head() {
            Err(e) => problems.push(format!("HEAD: {e}")),
            Ok(Head::Branch(name)) => {
                // A branch with no commits yet is normal only while no branch has any.
                let branches = self.refs.list(BRANCHES)?;
                if self.refs.get(&name)?.is_none() && !branches.is_empty() {
                    problems.push(format!(
                        "HEAD names {name}, which does not exist (branches: {})",
                        branches
                            .iter()
                            .map(|(n, _)| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            Ok(Head::Detached(id)) => {
                if !self.store.contains(&id)? {
                    problems.push(format!(
                        "HEAD is detached at {id}, which is not in the store"
                    ));
                }
            }
        }
        if let Err(e) = self.load_dirstate() {
            problems.push(format!("dirstate: {e}"));
        }
        if let Err(e) = self.copies().check_locations() {
            problems.push(format!("location log: {e}"));
        }
        problems.extend(crate::repository::config::Config::check_file(
            &self.dmv.join("config"),
        ));
        let id_path = self.dmv.join("replica-id");
        if let Some(text) = read_text(&id_path, &mut problems) {
            // Exactly as written: a stray byte is damage even where parsing would forgive it.
            let body = crate::seal::body(&text);
            problems.extend(check_line_problem(&id_path, &text));
            if ReplicaId::parse(body).is_none_or(|id| body != format!("{id}\n")) {
                problems.push(format!("{}: not a replica id", id_path.display()));
            }
        }
        let replicas = self.dmv.join("replicas");
        if let Some(text) = read_text(&replicas, &mut problems) {
            problems.extend(check_line_problem(&replicas, &text));
            for (n, line) in crate::seal::body(&text).lines().enumerate() {
                let parsed = line
                    .split_once(' ')
                    .and_then(|(id, _)| ReplicaId::parse(id));
                if parsed.is_none_or(|id| !line.starts_with(&format!("{id} "))) {
                    problems.push(format!(
                        "{} line {}: not a replica id and name",
                        replicas.display(),
                        n + 1
                    ));
                }
            }
        }
        Ok(problems)
    }
}

/// The text of a file dmv wrote (none when there is no such file), and a
/// problem when its bytes are not text.
fn read_text(path: &std::path::Path, problems: &mut Vec<String>) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8(bytes)
        .map_err(|_| problems.push(format!("{}: not text", path.display())))
        .ok();
    text
}

/// What is wrong with the check line of a file dmv sealed (see seal.rs).
fn check_line_problem(path: &std::path::Path, text: &str) -> Option<String> {
    match crate::seal::checked(text) {
        Some(true) => None,
        Some(false) => Some(format!("{}: does not match its check line", path.display())),
        None => Some(format!(
            "{}: has no check line (damaged, or written by a dmv older than check lines)",
            path.display()
        )),
    }
}

/// A lost object's place, as a person reads it, at most this many lines.
const MAX_LOST_LINES: usize = 50;

impl Maintenance<'_> {
    /// Rebuilds a dirstate that cannot be read from HEAD's tree, every
    /// entry's stat unknown (the next status reads each file again): the
    /// working tree is untouched; what was staged is not any more. False
    /// when the dirstate was whole.
    pub fn rebuild_damaged_dirstate(&self) -> RepoResult<bool> {
        if self.config.bare || self.load_dirstate().is_ok() {
            return Ok(false);
        }
        let _wlock = self.lock_worktree()?;
        let mut ds = Dirstate::default();
        if let Some(tree) = self.head_tree()? {
            for (path, e) in flatten(&self.store, &tree)? {
                let entry = match self.is_partial() && !self.copies().has_data(&e.id)? {
                    true => DirEntry::absent(e.kind, e.id, e.size),
                    false => DirEntry::with_stat(e.kind, e.id, e.size, &UNKNOWN_STAT),
                };
                ds.entries.insert(path, entry);
            }
        }
        self.save_dirstate(&ds)?;
        Ok(true)
    }

    /// Stores again the data of working-tree files whose content is lost
    /// from the store but still in the file (it hashes to the id the
    /// dirstate records): the working tree is a copy too. Returns how many
    /// files it restored.
    pub fn restore_from_worktree(&self) -> RepoResult<u64> {
        if self.config.bare {
            return Ok(0);
        }
        let ds = self.load_dirstate()?;
        let mut wanted: Vec<(Vec<u8>, ObjectId)> = Vec::new();
        for (path, e) in &ds.entries {
            if e.is_absent() || !e.kind.is_file() {
                continue;
            }
            match self.store.check_content_present(&e.id) {
                Err(StoreError::NotFound { .. }) | Err(StoreError::DamagedObject { .. }) => {
                    wanted.push((path.to_vec(), e.id))
                }
                _ => {}
            }
        }
        if wanted.is_empty() {
            return Ok(0);
        }
        let mut session = self.store.begin_write()?;
        let sources = wanted
            .iter()
            .map(|(p, _)| dmv_store::IngestSource {
                path: self.abs_path(p),
            })
            .collect();
        let results = session.ingest(sources, &Tally::silent())?;
        let restored = wanted
            .iter()
            .zip(results)
            .filter(|((_, id), got)| got.as_ref().is_ok_and(|g| g.id == *id))
            .count() as u64;
        session.finish()?;
        Ok(restored)
    }

    /// Moves a location log (and its journal) that cannot be read aside
    /// (`locations.damaged`, `locations.journal.damaged`) and starts an
    /// empty one: replicas are asked live again, and the next exchange with
    /// each brings its records back. False when it was whole.
    pub fn reset_damaged_locations(&self) -> RepoResult<bool> {
        if self.copies().check_locations().is_ok() {
            return Ok(false);
        }
        for name in ["locations", "locations.journal"] {
            let path = self.dmv.join(name);
            match std::fs::rename(&path, self.dmv.join(format!("{name}.damaged"))) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(RepoError::io(&path, e))
                }
                _ => {}
            }
        }
        Ok(true)
    }

    /// The objects the history needs that are damaged or not here (file
    /// data a partial replica lacks by its slice or a drop is not missing).
    pub fn missing_objects(&self) -> RepoResult<Vec<ObjectId>> {
        let report = self.verify_reachable(&Tally::silent())?;
        let mut ids: Vec<ObjectId> = report
            .damage
            .iter()
            .filter_map(|d| d.object.as_deref().and_then(ObjectId::from_hex))
            .collect();
        ids.sort_by_key(|id| id.0);
        ids.dedup();
        Ok(ids)
    }

    /// Where `lost` objects were used: "PATH in commit ID" for each file
    /// whose content, or part of it, is lost, a whole folder when its tree
    /// is, and commits that are lost themselves, newest first, at most
    /// `MAX_LOST_LINES` lines and a count of the rest.
    pub fn describe_lost(&self, lost: &[ObjectId]) -> RepoResult<Vec<String>> {
        let lost: HashSet<ObjectId> = lost.iter().copied().collect();
        let mut lines: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        // Trees known to hold nothing lost, and whether each file's content is whole.
        let mut clean_trees: HashSet<ObjectId> = HashSet::new();
        let mut files: HashMap<ObjectId, bool> = HashMap::new();
        let mut commits: Vec<ObjectId> = self.roots_to_check()?;
        while let Some(c) = commits.pop() {
            if !seen.insert(c) {
                continue;
            }
            if lost.contains(&c) {
                lines.push(format!(
                    "commit {} (and the history before it, unless another replica has it)",
                    c.short()
                ));
                continue;
            }
            let Ok(commit) = self.commit(&c) else {
                continue;
            };
            commits.extend(commit.parents.iter().copied());
            let mut dirs: Vec<(ObjectId, Vec<u8>)> = vec![(commit.tree, Vec::new())];
            while let Some((tree, prefix)) = dirs.pop() {
                if clean_trees.contains(&tree) {
                    continue;
                }
                let shown = |p: &[u8]| {
                    if p.is_empty() {
                        ".".to_string()
                    } else {
                        String::from_utf8_lossy(p).into_owned()
                    }
                };
                if lost.contains(&tree) {
                    lines.push(format!(
                        "{}/ (the whole folder) in commit {}",
                        shown(&prefix),
                        c.short()
                    ));
                    continue;
                }
                let Ok(entries) = read_dir(&self.store, &tree) else {
                    continue;
                };
                let mut any = false;
                for e in entries {
                    let mut path = prefix.clone();
                    if !path.is_empty() {
                        path.push(b'/');
                    }
                    path.extend_from_slice(&e.name);
                    if e.kind == EntryKind::Dir {
                        dirs.push((e.id, path));
                        any = true;
                        continue;
                    }
                    let whole = *files.entry(e.id).or_insert_with(|| {
                        match self.store.check_content_present(&e.id) {
                            Err(StoreError::NotFound { id }) => !lost.contains(&id),
                            Err(StoreError::DamagedObject { id, .. }) => !lost.contains(&id),
                            _ => !lost.contains(&e.id),
                        }
                    });
                    if !whole {
                        lines.push(format!("{} in commit {}", shown(&path), c.short()));
                        any = true;
                    }
                }
                if !any {
                    clean_trees.insert(tree);
                }
            }
        }
        if lines.len() > MAX_LOST_LINES {
            let more = lines.len() - MAX_LOST_LINES;
            lines.truncate(MAX_LOST_LINES);
            lines.push(format!("and {more} more"));
        }
        Ok(lines)
    }
}

/// A stat no file has: the entry's file is read again before it is trusted.
const UNKNOWN_STAT: Stat = Stat {
    size: u64::MAX,
    mtime_ns: -1,
    ctime_ns: -1,
    ino: 0,
    mode: 0,
};
