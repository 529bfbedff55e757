//! Which files' data this replica holds. In a partial replica a file's
//! data (its nodes and chunks) may be absent: outside the slice, dropped,
//! or a `get` cut short. Commits and trees are always here.

use crate::repository::handles::Copies;
use dmv_store::{ObjectId, StoreError};
use serde::Serialize;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{tree_reader, FilesInOrder, FlatEntry};
use crate::paths::{matches, may_hold, ser_path};
use crate::ref_names::BRANCHES;

/// A file of a tree and whether its data is here.
#[derive(Clone, Debug, Serialize)]
pub struct FileAvailability {
    /// The file's path, '/'-separated bytes.
    #[serde(serialize_with = "ser_path")]
    pub path: Vec<u8>,
    /// The file's entry in the tree.
    pub entry: FlatEntry,
    /// Whether its data is in this replica's store.
    pub present: bool,
    /// For the checked-out commit's files only: whether the working tree
    /// holds the file (its data can be here and the file not written, after
    /// a `diff` or an `archive` fetched it: `get` writes it without a fetch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written: Option<bool>,
}

/// A file version absent here that fewer other replicas are known to hold
/// than `drop.numcopies` asks (0: none is known to: it may be lost).
#[derive(Clone, Debug, Serialize)]
pub struct UnderCopied {
    /// The file version, by its content id.
    pub id: ObjectId,
    /// Where a branch tip or HEAD has it, if one does (older versions have no path now).
    pub path: Option<String>,
    /// Other replicas the location log says hold it.
    pub known_copies: usize,
    /// The copies `drop.numcopies` asks for.
    pub numcopies: usize,
}

impl Copies<'_> {
    /// Of these absent file versions (as `fsck` found them in history), those
    /// that the location log has records of and that fewer other replicas
    /// are recorded to hold than numcopies asks: what git-annex's `fsck`
    /// reports. The log may miss a copy (then this says too few), never
    /// invent one.
    pub fn under_copied(&self, absent: &[ObjectId]) -> RepoResult<Vec<UnderCopied>> {
        if absent.is_empty() {
            return Ok(Vec::new());
        }
        let numcopies = self.config.numcopies.unwrap_or(1) as usize;
        let wanted: std::collections::HashSet<ObjectId> = absent.iter().copied().collect();
        let me = self.replica_id()?;
        let log = self.locations_where(|r| wanted.contains(&r.key))?;
        // A version the log knows nothing of (a metadata-only clone's, say)
        // is unknown, not under-copied: only what some replica recorded counts.
        let recorded: std::collections::HashSet<ObjectId> = log.iter().map(|r| r.key).collect();
        let mut under: Vec<UnderCopied> = wanted
            .iter()
            .filter(|id| recorded.contains(id))
            .map(|id| (id, log.holders(id).iter().filter(|(r, _)| *r != me).count()))
            .filter(|(_, known)| *known < numcopies)
            .map(|(id, known_copies)| UnderCopied {
                id: *id,
                path: None,
                known_copies,
                numcopies,
            })
            .collect();
        under.sort_by_key(|u| (u.known_copies, u.id));
        // Names from the branch tips and HEAD, where they have one.
        let mut tips: Vec<ObjectId> = self
            .refs
            .list(BRANCHES)?
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        tips.extend(self.head_commit()?);
        tips.sort();
        tips.dedup();
        for tip in tips {
            self.each_availability(&self.commit(&tip)?.tree, &[], &mut |f| {
                if let Some(u) = under
                    .iter_mut()
                    .find(|u| u.id == f.entry.id && u.path.is_none())
                {
                    u.path = Some(String::from_utf8_lossy(&f.path).into_owned());
                }
                Ok(())
            })?;
        }
        Ok(under)
    }

    /// Whether all of a file's data is here (its nodes read, its chunks located).
    pub fn has_data(&self, id: &ObjectId) -> RepoResult<bool> {
        found(self.store.check_content_present(id))
    }

    /// [`Copies::has_data`] among the packs as the store last listed
    /// them (see [`dmv_store::Store::check_content_listed`]): for a caller
    /// that asks it of every file, having listed them just before.
    fn has_data_as_listed(&self, id: &ObjectId) -> RepoResult<bool> {
        found(self.store.check_content_listed(id))
    }

    /// Whether a file's data is not (all) here in a partial replica, where
    /// that is normal. In a full replica missing data is damage, never absence.
    pub fn is_absent(&self, e: &FlatEntry) -> RepoResult<bool> {
        Ok(self.is_partial() && e.kind.is_file() && !self.has_data(&e.id)?)
    }

    /// [`Copies::is_absent`] among the packs as the store last listed
    /// them: what a checkout goes by, having listed them as it began (data
    /// arriving meanwhile is for the next one, as a fetch during a git
    /// checkout is).
    pub(crate) fn is_absent_as_listed(&self, e: &FlatEntry) -> RepoResult<bool> {
        Ok(self.is_partial() && e.kind.is_file() && !self.has_data_as_listed(&e.id)?)
    }

    /// The files (not symlinks) of `tree` under any of `specs` (all when
    /// empty), in path order, each with whether its data is here.
    pub fn availability(
        &self,
        tree: &ObjectId,
        specs: &[Vec<u8>],
    ) -> RepoResult<Vec<FileAvailability>> {
        let mut out = Vec::new();
        self.each_availability(tree, specs, &mut |f| {
            out.push(f);
            Ok(())
        })?;
        Ok(out)
    }

    /// [`Copies::availability`], handed over file by file as the tree
    /// is read a folder at a time: what is held is the folders along one
    /// path, not the tree.
    pub fn each_availability(
        &self,
        tree: &ObjectId,
        specs: &[Vec<u8>],
        visit: &mut dyn FnMut(FileAvailability) -> RepoResult<()>,
    ) -> RepoResult<()> {
        // Listed once here, not looked for again at each file whose data is
        // missing (`ls --absent` of 100,000 files did that 100,000 times).
        self.store.reload()?;
        let read = tree_reader(&self.store);
        let enter = |dir: &[u8]| specs.is_empty() || specs.iter().any(|s| may_hold(dir, s));
        for file in FilesInOrder::entering(&read, tree, &enter)? {
            let (path, entry) = file?;
            if !entry.kind.is_file()
                || !(specs.is_empty() || specs.iter().any(|s| matches(&path, s)))
            {
                continue;
            }
            let present = self.has_data_as_listed(&entry.id)?;
            visit(FileAvailability {
                path,
                entry,
                present,
                written: None,
            })?;
        }
        Ok(())
    }

    /// [`Copies::availability`] of the checked-out commit's files, each
    /// also saying whether the working tree holds it (see
    /// [`FileAvailability::written`]).
    pub fn availability_here(&self, specs: &[Vec<u8>]) -> RepoResult<Vec<FileAvailability>> {
        let Some(head) = self.head_commit()? else {
            return Ok(Vec::new());
        };
        let mut files = self.availability(&self.commit(&head)?.tree, specs)?;
        if !self.config.bare {
            let dirstate = self.load_dirstate()?;
            for f in &mut files {
                f.written = Some(
                    dirstate
                        .entries
                        .get(&f.path)
                        .is_some_and(|e| !e.is_absent()),
                );
            }
        }
        Ok(files)
    }

    /// Files of the branch tips that this replica's slice keeps but whose
    /// data is not here, and was not dropped here: lost, not absent.
    pub(crate) fn missing_in_slice(&self) -> RepoResult<Vec<FileAvailability>> {
        if !self.is_partial() {
            return Ok(Vec::new());
        }
        let filter = self
            .config
            .slice
            .paths_filter()
            .map_err(|detail| RepoError::Corrupt {
                path: self.dmv.join("config"),
                detail,
            })?;
        let me = self.replica_id()?;
        let log = self.locations_where(|r| r.replica == me && !r.stamp.present)?;
        let dropped = |id: &ObjectId| log.records.contains_key(&(*id, me));
        let mut tips: Vec<ObjectId> = self
            .refs
            .list(BRANCHES)?
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        tips.extend(self.head_commit()?);
        tips.sort();
        tips.dedup();
        let mut missing = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for tip in tips {
            self.each_availability(&self.commit(&tip)?.tree, &[], &mut |f| {
                if !f.present
                    && filter.keeps(&f.path)
                    && !dropped(&f.entry.id)
                    && seen.insert(f.entry.id)
                {
                    missing.push(f);
                }
                Ok(())
            })?;
        }
        Ok(missing)
    }
}

/// A check that a file's data is here, as yes or no; damage stays an error.
fn found(checked: Result<(), StoreError>) -> RepoResult<bool> {
    match checked {
        Ok(()) => Ok(true),
        Err(StoreError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}
