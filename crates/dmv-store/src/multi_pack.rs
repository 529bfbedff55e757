//! Keeping the multi-pack index: when to fold the packs outside it into it,
//! and how to rewrite it. Apart from the store because the store only reads
//! the index set as it finds it; writers, gc and repair decide when it
//! changes, through the calls here.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::IoContext;
use crate::index::{write_merged_index, PackIndex};
use crate::pack::{index_file_name, pack_file_name};
use crate::store::{sync_dir, Store, MAX_UNCOVERED_PACKS, MULTI_PACK_INDEX};
use crate::{ObjectId, StoreError, StoreResult};

/// The auto-repack folds the packs outside the multi-pack index into it
/// once they hold at least 1/`FOLD_RATIO` of the objects it covers: each
/// rewrite is then at least that much larger than the last, so all of them
/// together write each object's entry O(1) times, where a rewrite every
/// few commits wrote the whole index (every object of a long history) each time.
pub(crate) const FOLD_RATIO: usize = 8;

impl Store {
    /// Rewrites the multi-pack index over every pack index present.
    pub fn write_multi_pack_index(&self) -> StoreResult<()> {
        self.write_multi_pack_index_leaving(&HashSet::new())
    }

    /// Rewrites the multi-pack index over every pack index present but
    /// those of the packs `going` (about to be removed).
    pub(crate) fn write_multi_pack_index_leaving(
        &self,
        going: &HashSet<ObjectId>,
    ) -> StoreResult<()> {
        let going: HashSet<String> = going.iter().map(index_file_name).collect();
        let indexes = open_to_merge(self.pack_index_paths(|name| going.contains(name))?)?;
        write_merged_index(&self.packs_dir().join(MULTI_PACK_INDEX), &indexes)?;
        sync_dir(self.packs_dir())?;
        self.reload()
    }

    /// The per-pack indexes in the packs folder, in name order, but those whose name `skip` picks.
    fn pack_index_paths(&self, skip: impl Fn(&str) -> bool) -> StoreResult<Vec<PathBuf>> {
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(self.packs_dir()).at(self.packs_dir())? {
            let path = entry.at(self.packs_dir())?.path();
            if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("pack-") && n.ends_with(".idx") && !skip(n))
            {
                paths.push(path);
            }
        }
        paths.sort();
        Ok(paths)
    }

    /// A long write session (a file larger than RAM, a million files) seals
    /// hundreds of packs, each one more filter to check at every lookup.
    /// Folding them into the multi-pack index once they outnumber an eighth
    /// of the packs it covers bounds that, and as each rewrite covers an
    /// eighth more packs than the last, all of them together cost O(packs).
    /// Fewer are left to the auto-repack (see [`Store::index_packs_if_piled_up`]).
    pub(crate) fn index_packs_if_grown(&self) -> StoreResult<()> {
        self.index_packs_if_outside_over(|covered| (2 * MAX_UNCOVERED_PACKS).max(covered / 8))
    }

    /// Rewrites the multi-pack index once more than a few packs are outside
    /// it, so a lookup probes a bounded number of indexes.
    pub fn index_packs_if_many(&self) -> StoreResult<()> {
        self.index_packs_if_outside_over(|_| MAX_UNCOVERED_PACKS)
    }

    /// After a write session: its packs stay outside the multi-pack index
    /// for the auto-repack to roll and fold (see [`FOLD_RATIO`]); they are
    /// folded in here only once twice as many as it allows pile up (it
    /// could not run: other writers kept the store busy, or the command
    /// does not call it).
    pub(crate) fn index_packs_if_piled_up(&self) -> StoreResult<()> {
        self.index_packs_if_outside_over(|_| 2 * MAX_UNCOVERED_PACKS)
    }

    /// The number of objects the multi-pack index covers, and the per-pack
    /// indexes of the packs outside it.
    pub(crate) fn coverage(&self) -> (usize, Vec<Arc<PackIndex>>) {
        let (midx, outside): (Vec<_>, Vec<_>) = self
            .indexes()
            .into_iter()
            .partition(|i| i.path().file_name().is_some_and(|n| n == MULTI_PACK_INDEX));
        (midx.iter().map(|i| i.len()).sum(), outside)
    }

    /// Rewrites the multi-pack index when more packs than `bound(packs it covers)` are outside it.
    fn index_packs_if_outside_over(&self, bound: impl Fn(usize) -> usize) -> StoreResult<()> {
        let indexes = self.indexes();
        let (midx, outside): (Vec<_>, Vec<_>) = indexes
            .iter()
            .partition(|i| i.path().file_name().is_some_and(|n| n == MULTI_PACK_INDEX));
        let covered: usize = midx.iter().map(|i| i.packs().len()).sum();
        if outside.len() > bound(covered) {
            self.fold_into_multi_pack_index()?;
        }
        Ok(())
    }

    /// Merges the indexes of the packs outside the multi-pack index into it,
    /// rather than every pack's index: a handful of sources instead of
    /// hundreds, each read front to back. Writers only add packs (gc removes
    /// them, under the exclusive lock, and rewrites the whole index), so the
    /// old index stays right; if a pack it names is gone all the same, the
    /// whole index is rewritten.
    fn fold_into_multi_pack_index(&self) -> StoreResult<()> {
        let path = self.packs_dir().join(MULTI_PACK_INDEX);
        let old = match PackIndex::open(&path) {
            Ok(old) => old,
            Err(_) => return self.write_multi_pack_index(),
        };
        if old
            .packs()
            .iter()
            .any(|p| !self.packs_dir().join(pack_file_name(p)).exists())
        {
            return self.write_multi_pack_index();
        }
        let covered: HashSet<String> = old.packs().iter().map(index_file_name).collect();
        let mut sources = vec![old];
        sources.extend(open_to_merge(
            self.pack_index_paths(|name| covered.contains(name))?,
        )?);
        write_merged_index(&path, &sources)?;
        sync_dir(self.packs_dir())?;
        self.reload()
    }
}

/// Opens the indexes a multi-pack index is merged from. One removed since
/// it was listed is left out, and so is a damaged one: left uncovered, the
/// store reports it where it is read, and repair rebuilds it.
fn open_to_merge(paths: Vec<PathBuf>) -> StoreResult<Vec<PackIndex>> {
    let mut indexes = Vec::with_capacity(paths.len());
    for path in paths {
        match PackIndex::open(&path) {
            Ok(idx) => indexes.push(idx),
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                continue
            }
            Err(StoreError::CorruptFile { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(indexes)
}
