//! `fsck` as one call, and the repository's sizes (`stats`): the store's
//! check of what is reachable (of every pack too, when full), the checks of
//! the files beside the store, what a partial replica lacks that its slice
//! keeps, and which absent versions too few replicas are known to hold. The
//! verdict is the library's; a front end only words it.

use crate::repository::handles::Maintenance;
use std::collections::HashSet;

use dmv_store::{ObjectId, ObjectKind, Progress, Tally, VerifyReport};
use serde::Serialize;

use crate::error::RepoResult;
use crate::history::tree::read_dir;
use crate::replica::availability::{FileAvailability, UnderCopied};

/// What `fsck` found.
#[derive(Debug, Serialize)]
pub struct FsckReport {
    /// The object store's check.
    pub report: VerifyReport,
    /// Damage, one line per damaged file or object (the store's and the
    /// files beside it; with `full`, objects breaking the rules of stored
    /// objects too).
    pub problems: Vec<String>,
    /// Files inside this replica's slice whose data is not here and was not
    /// dropped: lost here, fetchable from elsewhere.
    pub missing: Vec<FileAvailability>,
    /// Absent versions fewer other replicas are known to hold than
    /// numcopies asks; those known to none may be lost everywhere.
    pub under_copied: Vec<UnderCopied>,
}

impl FsckReport {
    /// Absent versions no other replica is known to hold.
    pub fn lost(&self) -> impl Iterator<Item = &UnderCopied> {
        self.under_copied.iter().filter(|u| u.known_copies == 0)
    }

    /// How many problems make `fsck` fail (0: the repository is whole).
    pub fn problem_count(&self) -> usize {
        self.problems.len() + self.missing.len() + self.lost().count()
    }
}

/// A repository's sizes, as `dmv stats` shows them.
#[derive(Debug, Serialize)]
pub struct RepoStats {
    /// Commits reachable from the refs, HEAD, a merge in progress and the reflog.
    pub commits: u64,
    /// Sum over all commits of the size of every file in them: what plain copies would take.
    pub logical_bytes: u64,
    /// Bytes of pack files on disk.
    pub stored_bytes: u64,
    /// Raw bytes of distinct chunks.
    pub unique_content_bytes: u64,
    /// `logical_bytes` over `stored_bytes` (0 with an empty store).
    pub dedup_ratio: f64,
    /// Objects in the packs, of every kind (one in two packs counts twice).
    pub objects: usize,
    /// Chunks among them.
    pub chunks: usize,
    /// Pack files.
    pub packs: usize,
    /// Files under `.dmv/objects` (packs, indexes and the rest).
    pub files_in_objects_dir: usize,
}

impl Maintenance<'_> {
    /// Checks the repository: what is reachable (with `full`, every object
    /// of every pack and every index), the files beside the store, and the
    /// copies of what is absent here. `progress` is told of bytes checked.
    pub fn fsck(&self, full: bool, progress: &dyn Progress) -> RepoResult<FsckReport> {
        let mut problems = self.check_files()?;
        let tally = Tally::new(progress, 0);
        let mut report = self.verify_reachable(&tally)?;
        if full {
            let packs = self.store.verify_packs(&tally)?;
            // Every object is in some pack: the pack pass's counts cover the walk's.
            report.packs_checked = packs.packs_checked;
            report.objects_checked = packs.objects_checked;
            report.bytes_checked = packs.bytes_checked;
            let seen: HashSet<String> = report.damage.iter().map(|d| d.detail.clone()).collect();
            report.damage.extend(
                packs
                    .damage
                    .into_iter()
                    .filter(|d| !seen.contains(&d.detail)),
            );
            report.garbage = packs.garbage;
            problems.extend(self.check_object_rules()?);
        }
        problems.extend(report.damage.iter().map(|d| d.detail.clone()));
        // In a partial replica: absent by the slice or a drop is normal; inside the slice and not dropped is lost here.
        let missing = self.copies().missing_in_slice()?;
        let absent: Vec<ObjectId> = report
            .absent
            .iter()
            .filter_map(|hex| ObjectId::from_hex(hex))
            .collect();
        let under_copied = self.copies().under_copied(&absent)?;
        Ok(FsckReport {
            report,
            problems,
            missing,
            under_copied,
        })
    }

    /// The repository's sizes: commits, what plain copies of every commit
    /// would take, what the store takes.
    pub fn stats(&self) -> RepoResult<RepoStats> {
        let s = self.store.stats()?;
        let commit_roots: Vec<_> = self
            .roots_to_check()?
            .into_iter()
            .filter(|id| {
                self.store
                    .kind_of(id)
                    .is_ok_and(|k| matches!(k, ObjectKind::Commit | ObjectKind::Tag))
            })
            .collect();
        let (mut commits, mut logical) = (0, 0);
        for info in self.history().walk(&commit_roots)? {
            commits += 1;
            logical += read_dir(&self.store, &info?.commit.tree)?
                .iter()
                .map(|e| e.size)
                .sum::<u64>();
        }
        Ok(RepoStats {
            commits,
            logical_bytes: logical,
            stored_bytes: s.stored_bytes,
            unique_content_bytes: s.unique_content_bytes,
            dedup_ratio: if s.stored_bytes > 0 {
                logical as f64 / s.stored_bytes as f64
            } else {
                0.0
            },
            objects: s.objects,
            chunks: s.chunks,
            packs: s.packs,
            files_in_objects_dir: count_files(&self.dmv.join("objects")),
        })
    }
}

fn count_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| {
                    if e.path().is_dir() {
                        count_files(&e.path())
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}
