//! Garbage collection: rewrites packs holding unreachable objects (and merges
//! small packs), under the exclusive gc lock so no writer is mid-session.
//!
//! Safe against every writer at once: writers hold the gc lock shared from
//! before they look for an object until whatever refers to their objects (a
//! ref, the dirstate, MERGE_STATE) is durable, and gc reads its roots only
//! once it holds the lock exclusively. Packs written recently are kept whole
//! with everything they reach (a grace period, like git's `gc.pruneExpire`):
//! that covers objects received whose ref update is still to come (a server
//! between a push's upload and its ref update) and an interrupted fetch or
//! clone that will resume.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::error::IoContext;
use crate::index::{write_index, PackIndex};
use crate::marks::Marks;
use crate::multi_pack::FOLD_RATIO;
use crate::object::children_marked;
use crate::pack::{self, index_file_name, pack_file_name, Entry, PackWriter, COMP_NONE, COMP_ZSTD};
use crate::session::maybe_compress;
use crate::store::{sync_dir, MULTI_PACK_INDEX};
use crate::{ObjectId, ObjectKind, Store, StoreError, StoreResult, Tally};

/// What [`Store::gc`] did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct GcReport {
    /// Packs in the store when gc began.
    pub packs_before: usize,
    /// Packs left.
    pub packs_after: usize,
    /// Objects left (index entries, after the rewrite).
    pub objects_kept: u64,
    /// Objects removed: unreachable, and in no recent pack.
    pub objects_dropped: u64,
    /// Bytes of pack files when gc began.
    pub bytes_before: u64,
    /// Bytes of pack files left.
    pub bytes_after: u64,
    /// Temporary files of dead writers removed, and packs without an index
    /// that could not be re-indexed.
    pub leftovers_removed: u64,
    /// Packs kept whole because they were written within the grace period.
    pub recent_packs_kept: usize,
}

/// What gc keeps besides what its roots reach.
#[derive(Clone, Copy, Debug)]
pub struct GcOptions {
    /// Packs last written less than this long ago are kept whole, with
    /// everything their objects reach. Zero prunes everything unreachable.
    pub keep_recent: Duration,
    /// A partial replica: file data its roots reach may be absent (not here
    /// by its slice, or dropped), which is no reason to stop.
    pub absent_data_ok: bool,
}

impl Default for GcOptions {
    fn default() -> Self {
        GcOptions {
            keep_recent: DEFAULT_KEEP_RECENT,
            absent_data_ok: false,
        }
    }
}

/// Once more small packs than this lie outside the multi-pack index, the
/// next command that wrote rolls the smallest together (one or two packs
/// per commit pile up in a day of small commits).
pub const AUTO_REPACK_SMALL_PACKS: usize = crate::store::MAX_UNCOVERED_PACKS;
/// More small packs than this under the multi-pack index have piled up
/// (rolled geometrically there would be a handful): the auto-repack then
/// rolls the smallest of all packs, as when it folds.
const PILED_UP_COVERED_PACKS: usize = 4 * crate::store::MAX_UNCOVERED_PACKS;
/// The packs a repack keeps, and the one it makes, form a progression at
/// least this steep (as git's `repack --geometric`): each object is rewritten
/// O(log n) times over a history of n small commits, not O(n).
const GEOMETRIC_FACTOR: u64 = 4;

/// What [`Store::repack_if_many_small`] did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct RepackReport {
    /// Small packs rolled together (0: none; it takes two).
    pub packs_rolled: usize,
    /// Packs they were rolled into.
    pub packs_made: usize,
    /// Bytes of the packs rolled.
    pub bytes_rewritten: u64,
    /// As in [`GcReport::leftovers_removed`].
    pub leftovers_removed: u64,
}

/// Git's default `gc.pruneExpire`: long enough to resume an interrupted transfer.
pub const DEFAULT_KEEP_RECENT: Duration = Duration::from_secs(14 * 24 * 3600);

/// What a walk makes of an object it cannot find.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Missing {
    /// The repository is damaged.
    IsDamage,
    /// File data may be absent (a partial replica); anything else missing is damage.
    DataMayBeAbsent,
    /// Skipped: the objects of an unfinished fetch need not be complete.
    MayBeAbsent,
}

/// Reached from the roots (or kept for another reason).
const LIVE: u8 = 1;
/// Reached from the files a drop frees.
const DROPPED: u8 = 2;
/// Written to a new pack by this rewrite.
const WRITTEN: u8 = 4;

impl Store {
    /// Flags with `flag` what `roots` reach, treating a missing object as
    /// `missing` says, not entering the files whose content ids are in
    /// `files` where a tree lists them (a file node that shares one of
    /// their chunks still reaches it).
    fn mark(
        &self,
        marks: &mut Marks<u8>,
        roots: Vec<ObjectId>,
        missing: Missing,
        files: &HashSet<ObjectId>,
        flag: u8,
    ) -> StoreResult<()> {
        // Each id with whether it is file data. Roots are taken one at a
        // time: at a million staged files they are a million, nearly all
        // reached already, and a stack of them all was ~40 MB.
        let mut roots = roots.into_iter();
        let mut stack: Vec<(ObjectId, bool)> = Vec::new();
        while let Some((id, data)) = stack.pop().or_else(|| roots.next().map(|r| (r, false))) {
            let Some(slot) = marks.slot(&id) else {
                // An index that could not be read makes its objects damage, not absent.
                self.locate(&id)?;
                match missing {
                    Missing::IsDamage => return Err(StoreError::NotFound { id }),
                    Missing::DataMayBeAbsent if !data => return Err(StoreError::NotFound { id }),
                    Missing::DataMayBeAbsent | Missing::MayBeAbsent => continue,
                }
            };
            let value = marks.get(slot);
            if value & flag != 0 {
                continue;
            }
            marks.set(slot, value | flag);
            let loc = marks.located(slot)?;
            if loc.entry.kind != ObjectKind::Chunk {
                let bytes = self.read_located(&loc)?;
                let from_tree = loc.entry.kind == ObjectKind::Tree;
                stack.extend(
                    children_marked(&id, loc.entry.kind, &bytes)?
                        .into_iter()
                        .filter(|(kid, data)| !(from_tree && *data && files.contains(kid))),
                );
            }
        }
        Ok(())
    }

    /// Drops what neither `roots` nor a recent pack reaches. `roots` is called
    /// once gc holds the lock exclusively, so it sees every ref, dirstate and
    /// merge state a finished writer left.
    pub fn gc<E: From<StoreError>>(
        &self,
        roots: impl FnOnce() -> Result<Vec<ObjectId>, E>,
        options: GcOptions,
        tally: &Tally<'_>,
    ) -> Result<GcReport, E> {
        let _lock = self.exclusive_lock()?;
        let started = SystemTime::now();
        let mut report = GcReport::default();
        let dir = self.packs_dir().to_path_buf();
        report.leftovers_removed = self.remove_leftovers()?;
        self.reload()?;
        let roots = roots()?;
        let mut marks = Marks::new(self.indexes());
        let missing = if options.absent_data_ok {
            Missing::DataMayBeAbsent
        } else {
            Missing::IsDamage
        };
        self.mark(&mut marks, roots, missing, &HashSet::new(), LIVE)?;

        let packs = marks.packs();
        let mut pack_sizes = HashMap::new();
        let mut recent = HashSet::new();
        for p in &packs {
            let path = dir.join(pack_file_name(p));
            let meta = std::fs::metadata(&path).at(&path)?;
            report.bytes_before += meta.len();
            pack_sizes.insert(*p, meta.len());
            // A clock set back makes a pack look recent: that only keeps more.
            let age = meta
                .modified()
                .ok()
                .and_then(|m| started.duration_since(m).ok())
                .unwrap_or(Duration::ZERO);
            if age < options.keep_recent {
                recent.insert(*p);
            }
        }
        report.recent_packs_kept = recent.len();
        report.packs_before = packs.len();
        // What recent packs hold stays, with all it reaches; a pack holding anything else unreached is rewritten.
        let mut dirty = HashSet::new();
        if !recent.is_empty() {
            for slot in marks.slots() {
                let loc = marks.located(slot)?;
                if recent.contains(&loc.pack) && marks.get(slot) & LIVE == 0 {
                    self.mark(
                        &mut marks,
                        vec![loc.entry.id],
                        Missing::MayBeAbsent,
                        &HashSet::new(),
                        LIVE,
                    )?;
                }
            }
        }
        for slot in marks.slots() {
            let loc = marks.located(slot)?;
            if marks.of(slot, &loc.entry.id) & LIVE == 0 {
                dirty.insert(loc.pack);
            }
        }
        let small = |p: &ObjectId| pack_sizes.get(p).copied().unwrap_or(0) < self.pack_limit() / 2;
        let small_count = packs.iter().filter(|p| small(p)).count();
        let mut rewrite: Vec<ObjectId> = packs
            .iter()
            .filter(|p| dirty.contains(*p) || (small_count > 1 && small(p)))
            .copied()
            .collect();
        rewrite.sort();

        report.objects_dropped = self
            .rewrite_packs(
                &mut marks,
                &rewrite,
                &|value| value & LIVE != 0,
                true,
                tally,
            )?
            .0;
        let final_stats = self.stats()?;
        report.packs_after = final_stats.packs;
        report.bytes_after = final_stats.stored_bytes;
        report.objects_kept = final_stats.objects as u64;
        Ok(report)
    }

    /// Rolls the smallest packs outside the multi-pack index into one once
    /// more than [`AUTO_REPACK_SMALL_PACKS`] small ones pile up there,
    /// keeping every object (reachable or not: that is gc's call). The
    /// multi-pack index stays as it is, so its rewrite does not grow every
    /// commit's cost with the history; once the packs outside it hold
    /// 1/`FOLD_RATIO` of what it covers, the smallest of all packs are
    /// rolled instead and the index is rewritten over them. Only when
    /// nobody writes or collects right now (else the next command tries
    /// again); readers go on meanwhile, finding a moved object in its new
    /// pack. Returns None when there was nothing to do or the lock was taken.
    pub fn repack_if_many_small(&self) -> StoreResult<Option<RepackReport>> {
        if !self.is_durable()
            || self.small_packs(&self.coverage().1)?.len() <= AUTO_REPACK_SMALL_PACKS
        {
            return Ok(None);
        }
        let Some(_lock) = self.try_exclusive_lock()? else {
            return Ok(None);
        };
        let mut report = RepackReport {
            leftovers_removed: self.remove_leftovers()?,
            ..Default::default()
        };
        self.reload()?;
        let (covered, outside) = self.coverage();
        let outside_objects: usize = outside.iter().map(|i| i.len()).sum();
        let fold = outside_objects.saturating_mul(FOLD_RATIO) >= covered
            || self.covered_small_packs_piled_up()?;
        let small = self.small_packs(&if fold { self.indexes() } else { outside })?;
        let roll = packs_to_roll(&small.iter().map(|p| p.size).collect::<Vec<_>>());
        if roll >= 2 {
            let rolled = &small[..roll];
            let rewrite: Vec<ObjectId> = rolled.iter().map(|p| p.id).collect();
            report.packs_rolled = roll;
            report.bytes_rewritten = rolled.iter().map(|p| p.size).sum();
            let (_, made) = self.rewrite_packs(
                &mut Marks::new(self.indexes()),
                &rewrite,
                &|_| true,
                fold,
                &Tally::silent(),
            )?;
            // The new pack is as old as the newest it holds: gc's grace period
            // for recent packs must not start again for old objects.
            if let Some(newest) = rolled.iter().map(|p| p.modified).max() {
                for p in &made {
                    let path = self.packs_dir().join(pack_file_name(p));
                    std::fs::File::open(&path)
                        .and_then(|f| f.set_times(std::fs::FileTimes::new().set_modified(newest)))
                        .at(&path)?;
                }
            }
            report.packs_made = made.len();
        } else if fold {
            self.write_multi_pack_index()?;
        }
        Ok(Some(report))
    }

    /// Whether more small packs than [`PILED_UP_COVERED_PACKS`] lie under
    /// the multi-pack index: folded in before anything rolled them (a
    /// session folds what piles up when no repack could run), each one
    /// more file to list at every reload.
    fn covered_small_packs_piled_up(&self) -> StoreResult<bool> {
        let midx: Vec<_> = self
            .indexes()
            .into_iter()
            .filter(|i| i.path().file_name().is_some_and(|n| n == MULTI_PACK_INDEX))
            .collect();
        // Only a store with that many packs at all pays a stat for each.
        if midx.iter().map(|i| i.packs().len()).sum::<usize>() <= PILED_UP_COVERED_PACKS {
            return Ok(false);
        }
        Ok(self.small_packs(&midx)?.len() > PILED_UP_COVERED_PACKS)
    }

    /// The packs `indexes` cover that are under half the size limit, smallest first.
    fn small_packs(&self, indexes: &[Arc<PackIndex>]) -> StoreResult<Vec<PackFile>> {
        let mut packs = Vec::new();
        let mut seen = HashSet::new();
        for idx in indexes {
            for p in idx.packs() {
                if !seen.insert(*p) {
                    continue;
                }
                let path = self.packs_dir().join(pack_file_name(p));
                let meta = match std::fs::metadata(&path) {
                    Ok(m) => m,
                    // Rewritten by gc since our indexes were read.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(StoreError::io(&path, e)),
                };
                if meta.len() < self.pack_limit() / 2 {
                    packs.push(PackFile {
                        id: *p,
                        size: meta.len(),
                        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    });
                }
            }
        }
        packs.sort_by_key(|p| (p.size, p.id));
        Ok(packs)
    }

    /// The objects of pack `p`, read from its own index: what a rewrite
    /// holds at a time, rather than every object of the store (at five
    /// million objects, a map of them all was 600 MB).
    fn pack_entries(&self, p: &ObjectId) -> StoreResult<Vec<Entry>> {
        let idx = PackIndex::open(&self.packs_dir().join(index_file_name(p)))?;
        (0..idx.len())
            .map(|i| idx.located_at(i).map(|loc| loc.entry))
            .collect()
    }

    /// Every object of every pack, by pack (an object in two packs is listed in both).
    pub fn objects_by_pack(&self) -> StoreResult<HashMap<ObjectId, Vec<Entry>>> {
        let mut by_pack: HashMap<ObjectId, Vec<Entry>> = HashMap::new();
        for idx in self.indexes() {
            for i in 0..idx.len() {
                let loc = idx.located_at(i)?;
                by_pack.entry(loc.pack).or_default().push(loc.entry);
            }
        }
        Ok(by_pack)
    }

    /// Writes the objects of the packs in `rewrite` whose marks `keep`
    /// keeps (and no other pack holds) into new packs, then removes the old
    /// packs. The multi-pack index is rewritten before they go: over every
    /// pack that stays when `index_all`, else only if it names one that
    /// goes. Returns how many objects were left out, and the new packs.
    /// Only under the exclusive lock.
    fn rewrite_packs(
        &self,
        marks: &mut Marks<u8>,
        rewrite: &[ObjectId],
        keep: &dyn Fn(u8) -> bool,
        index_all: bool,
        tally: &Tally<'_>,
    ) -> StoreResult<(u64, Vec<ObjectId>)> {
        let dir = self.packs_dir().to_path_buf();
        let mut left_out = 0;
        let rewritten: HashSet<ObjectId> = rewrite.iter().copied().collect();
        let mut compressor = zstd::bulk::Compressor::new(1).map_err(StoreError::Compressor)?;
        let mut scratch = Vec::new();
        let mut out: Option<PackWriter> = None;
        let mut new_packs = Vec::new();
        for p in rewrite {
            let file = self.pack_file(p)?;
            let mut entries = self.pack_entries(p)?;
            entries.sort_by_key(|e| e.offset);
            for e in entries {
                // The copy the store finds is the one that counts: a second copy here is left out.
                let Some(first) = marks.slot(&e.id) else {
                    continue;
                };
                let (value, holder) = (marks.get(first), marks.located(first)?.pack);
                if !keep(value) {
                    left_out += (holder == *p) as u64;
                    continue;
                }
                if !rewritten.contains(&holder) || value & WRITTEN != 0 {
                    continue;
                }
                marks.set(first, value | WRITTEN);
                let data = pack::read_record(&file, pack::PackFileName(p), &e)?;
                tally.add(data.len() as u64);
                let w = match out.as_mut() {
                    Some(w) => w,
                    None => out.insert(PackWriter::create(&dir)?),
                };
                match maybe_compress(&mut compressor, &mut scratch, &data) {
                    Some(n) => w.append(e.id, e.kind, data.len(), COMP_ZSTD, &scratch[..n])?,
                    None => w.append(e.id, e.kind, data.len(), COMP_NONE, &data)?,
                }
                if w.bytes_written() >= self.pack_limit() {
                    if let Some(w) = out.take() {
                        new_packs.push(seal(&dir, w)?);
                    }
                }
            }
        }
        if let Some(w) = out.take() {
            if w.object_count() > 0 {
                new_packs.push(seal(&dir, w)?);
            } else {
                w.discard();
            }
        }
        sync_dir(&dir)?;
        crate::failpoint("gc-before-delete");
        let going: HashSet<ObjectId> = rewrite
            .iter()
            .filter(|p| !new_packs.contains(p))
            .copied()
            .collect();
        // The multi-pack index never names a pack that is gone: rewritten
        // before the old packs go, a kill while they go (or a mount's
        // process ending meanwhile) leaves an index that is still whole.
        let names_going = self.indexes().iter().any(|i| {
            i.path().file_name().is_some_and(|n| n == MULTI_PACK_INDEX)
                && i.packs().iter().any(|p| going.contains(p))
        });
        if index_all || names_going {
            self.write_multi_pack_index_leaving(&going)?;
        }
        // Everything kept is now in the kept or the new packs: old ones can go.
        for p in &going {
            let idx = dir.join(index_file_name(p));
            dmv_os::remove_file(&idx).at(&idx)?;
            let pack = dir.join(pack_file_name(p));
            dmv_os::remove_file(&pack).at(&pack)?;
        }
        crate::failpoint("gc-after-delete");
        self.reload()?;
        Ok((left_out, new_packs))
    }

    /// Frees the data of `files` (content ids), keeping whatever else still
    /// uses it: files that stay, objects of a transfer still to finish
    /// (anything no root reaches). Returns the bytes freed.
    pub fn drop_file_data<E: From<StoreError>>(
        &self,
        roots: impl FnOnce() -> Result<Vec<ObjectId>, E>,
        files: &HashSet<ObjectId>,
    ) -> Result<u64, E> {
        let _lock = self.exclusive_lock()?;
        self.reload()?;
        self.drop_locked(roots, files)
    }

    /// Frees the pieces of `files` that are here while the file as a whole
    /// is not (the nodes and chunks a mount's reads fetched), as
    /// [`Store::drop_file_data`] does. Which files are whole is decided
    /// under the store's lock: one a transfer completed meanwhile is a copy
    /// its replica may claim, and stays. Returns the bytes freed.
    pub fn drop_file_pieces<E: From<StoreError>>(
        &self,
        roots: impl FnOnce() -> Result<Vec<ObjectId>, E>,
        files: &HashSet<ObjectId>,
    ) -> Result<u64, E> {
        let _lock = self.exclusive_lock()?;
        self.reload()?;
        let partial: HashSet<ObjectId> = files
            .iter()
            .filter(|id| self.check_content_present(id).is_err())
            .copied()
            .collect();
        self.drop_locked(roots, &partial)
    }

    fn drop_locked<E: From<StoreError>>(
        &self,
        roots: impl FnOnce() -> Result<Vec<ObjectId>, E>,
        files: &HashSet<ObjectId>,
    ) -> Result<u64, E> {
        if files.is_empty() {
            return Ok(0);
        }
        let before = self.stats()?.stored_bytes;
        let roots = roots()?;
        let mut marks = Marks::new(self.indexes());
        // What stays: everything the roots reach without entering the dropped files.
        self.mark(
            &mut marks,
            roots.into_iter().filter(|r| !files.contains(r)).collect(),
            Missing::DataMayBeAbsent,
            files,
            LIVE,
        )?;
        self.mark(
            &mut marks,
            files.iter().copied().collect(),
            Missing::MayBeAbsent,
            &HashSet::new(),
            DROPPED,
        )?;
        // What nothing reaches (a transfer still to finish) stays too, with what it reaches.
        for slot in marks.slots() {
            let id = marks.located(slot)?.entry.id;
            if marks.of(slot, &id) & (LIVE | DROPPED) == 0 {
                self.mark(
                    &mut marks,
                    vec![id],
                    Missing::MayBeAbsent,
                    &HashSet::new(),
                    LIVE,
                )?;
            }
        }
        let mut rewrite = Vec::new();
        for slot in marks.slots() {
            let loc = marks.located(slot)?;
            if marks.of(slot, &loc.entry.id) & (LIVE | DROPPED) == DROPPED
                && !rewrite.contains(&loc.pack)
            {
                rewrite.push(loc.pack);
            }
        }
        if rewrite.is_empty() {
            return Ok(0);
        }
        self.rewrite_packs(
            &mut marks,
            &rewrite,
            &|value| value & DROPPED == 0 || value & LIVE != 0,
            true,
            &Tally::silent(),
        )?;
        Ok(before.saturating_sub(self.stats()?.stored_bytes))
    }

    /// Temporary files of dead writers, and packs whose index was never written
    /// (re-indexed from their table of contents when intact, else removed).
    /// Only safe under the exclusive lock: no writer is running.
    fn remove_leftovers(&self) -> StoreResult<u64> {
        let dir = self.packs_dir().to_path_buf();
        let mut removed = 0;
        for entry in std::fs::read_dir(&dir).at(&dir)? {
            let path = entry.at(&dir)?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with("tmp-") || name.contains(".tmp-") {
                std::fs::remove_file(&path).at(&path)?;
                removed += 1;
            } else if name.starts_with("pack-")
                && name.ends_with(".pack")
                && !path.with_extension("idx").exists()
            {
                let reindexed = std::fs::File::open(&path).ok().and_then(|f| {
                    let sum = pack::verify_checksum(&f, &path).ok()?;
                    let entries = pack::read_toc(&f, &path).ok()?;
                    // The checksum leaves payloads to their ids: check each before trusting it.
                    entries
                        .iter()
                        .try_for_each(|e| pack::read_record(&f, &name, e).map(drop))
                        .ok()?;
                    write_index(&path.with_extension("idx"), &[sum], entries).ok()
                });
                if reindexed.is_none() {
                    std::fs::remove_file(&path).at(&path)?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

struct PackFile {
    id: ObjectId,
    size: u64,
    modified: SystemTime,
}

/// How many of the smallest packs (`sizes` ascending) to roll into one so
/// that the rolled pack and every pack above it each hold at least
/// [`GEOMETRIC_FACTOR`] times what the one below holds.
fn packs_to_roll(sizes: &[u64]) -> usize {
    let steep = |small: u64, big: u64| big >= small.saturating_mul(GEOMETRIC_FACTOR);
    (0..=sizes.len())
        .find(|&k| {
            let rolled: u64 = sizes[..k].iter().sum();
            (k == 0 || k == sizes.len() || steep(rolled, sizes[k]))
                && sizes[k..].windows(2).all(|w| steep(w[0], w[1]))
        })
        .unwrap_or(sizes.len())
}

pub(crate) fn seal(dir: &std::path::Path, w: PackWriter) -> StoreResult<ObjectId> {
    let (sum, _, entries) = w.finish()?;
    write_index(&dir.join(index_file_name(&sum)), &[sum], entries)?;
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::packs_to_roll;

    #[test]
    fn rolls_the_smallest_until_the_rest_is_a_steep_progression() {
        assert_eq!(packs_to_roll(&[]), 0);
        assert_eq!(packs_to_roll(&[10]), 0);
        assert_eq!(packs_to_roll(&[10, 40, 160]), 0);
        // Two equal packs: both roll, and the result (20) is below 4 × 20 of the next.
        assert_eq!(packs_to_roll(&[10, 10, 80, 1000]), 2);
        assert_eq!(packs_to_roll(&[10, 10, 50, 1000]), 3);
        assert_eq!(packs_to_roll(&[5; 17]), 17);
        // A steep tail above a pile of small ones is kept.
        assert_eq!(packs_to_roll(&[1, 1, 1, 1, 100, 1000]), 4);
    }
}
