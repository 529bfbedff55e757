//! Conflicts between two versions of a text file, merged line by line
//! before anyone is asked: a clean result is taken into the merge, a
//! conflicted one is written into the working tree with conflict markers
//! for a person to edit and `dmv add`.

use crate::repository::handles::Merges;
use dmv_store::object::EntryKind;
use dmv_store::{ObjectId, WriteSession};

use crate::error::RepoResult;
use crate::history::tree::flatten;
use crate::history::tree::{FlatEntry, FlatTree};
use crate::line_merge::{
    looks_like_text, merge_lines, never_text, ConflictStyle, MarkerLabels, MAX_TEXT_MERGE,
};
use crate::merge::three_way::{three_way, Conflict};

/// A text file whose line merge conflicted: what to write at `path` for a
/// person to settle.
pub(crate) struct MarkedText {
    pub path: Vec<u8>,
    pub kind: EntryKind,
    pub bytes: Vec<u8>,
}

/// Both sides regular files (the base too, or absent): the only conflicts
/// a line merge may settle. Symlinks, deletions and file-or-folder clashes stay.
fn both_regular(c: &Conflict) -> bool {
    let regular = |e: &FlatEntry| {
        matches!(e.kind, EntryKind::File | EntryKind::Executable) && e.size <= MAX_TEXT_MERGE
    };
    c.ours.as_ref().is_some_and(regular)
        && c.theirs.as_ref().is_some_and(regular)
        && c.base.as_ref().is_none_or(regular)
}

/// The kind the merged file gets: whichever side changed it (ours if both did).
fn merged_kind(c: &Conflict, ours: &FlatEntry, theirs: &FlatEntry) -> EntryKind {
    match c.base {
        Some(b) if b.kind == ours.kind => theirs.kind,
        _ => ours.kind,
    }
}

impl Merges<'_> {
    /// `merge.conflictStyle`: the repository's, else the global one, else `merge`.
    pub(crate) fn conflict_style(&self) -> ConflictStyle {
        let global = || {
            crate::repository::config::GlobalSettings::load()
                .ok()
                .and_then(|g| g.merge_conflict_style)
        };
        self.config
            .merge_conflict_style
            .clone()
            .or_else(global)
            .and_then(|s| ConflictStyle::parse(&s))
            .unwrap_or_default()
    }

    /// Merges line by line each conflict whose versions are all text held
    /// here. A clean result is stored through `session`, put into `merged`
    /// and its conflict removed; a conflicted one is returned, to be written
    /// once the working tree holds `merged`. Files whose data this replica
    /// lacks stay conflicts, as binary ones do.
    pub(crate) fn merge_text_conflicts(
        &self,
        session: &mut WriteSession<'_>,
        merged: &mut FlatTree,
        conflicts: &mut Vec<Conflict>,
        labels: &MarkerLabels<'_>,
    ) -> RepoResult<Vec<MarkedText>> {
        let style = self.conflict_style();
        let mut marked = Vec::new();
        let mut settled = Vec::new();
        for c in conflicts.iter().filter(|c| both_regular(c)) {
            let (Some(ours), Some(theirs)) = (c.ours, c.theirs) else {
                continue;
            };
            let Some([base, ours_text, theirs_text]) =
                self.texts([c.base, Some(ours), Some(theirs)])?
            else {
                continue;
            };
            let result = merge_lines(&base, &ours_text, &theirs_text, labels, style);
            let kind = merged_kind(c, &ours, &theirs);
            if result.conflicted {
                marked.push(MarkedText {
                    path: c.path.clone(),
                    kind,
                    bytes: result.bytes,
                });
            } else {
                let (id, size) = session.put_content(&mut result.bytes.as_slice())?;
                merged.insert(c.path.clone(), FlatEntry { kind, id, size });
                settled.push(c.path.clone());
            }
        }
        conflicts.retain(|c| !settled.contains(&c.path));
        Ok(marked)
    }

    /// The versions a merge of `theirs` into `ours` from `base` would read
    /// to merge text files line by line: the three sides of each conflict
    /// between regular files small enough. What a partial replica fetches
    /// before it merges, so its merge ends as a full replica's does (with
    /// a side absent, a line merge is not tried and the file conflicts).
    pub fn versions_a_merge_reads(
        &self,
        base: Option<ObjectId>,
        ours: ObjectId,
        theirs: ObjectId,
    ) -> RepoResult<Vec<(Vec<u8>, FlatEntry)>> {
        let flat_of_commit =
            |c: &ObjectId| -> RepoResult<FlatTree> { flatten(&self.store, &self.commit(c)?.tree) };
        let base_flat = match base {
            Some(b) => flat_of_commit(&b)?,
            None => FlatTree::new(),
        };
        let (_, conflicts) = three_way(
            &base_flat,
            &flat_of_commit(&ours)?,
            &flat_of_commit(&theirs)?,
        );
        Ok(conflicts
            .iter()
            .filter(|c| both_regular(c) && !never_text(&c.path))
            .flat_map(|c| {
                [c.base, c.ours, c.theirs]
                    .into_iter()
                    .flatten()
                    .map(|e| (c.path.clone(), e))
            })
            .collect())
    }

    /// The contents of `versions` (None: an empty file), if all are here and text.
    fn texts(&self, versions: [Option<FlatEntry>; 3]) -> RepoResult<Option<[Vec<u8>; 3]>> {
        let mut out: [Vec<u8>; 3] = Default::default();
        for (slot, version) in out.iter_mut().zip(versions) {
            let Some(e) = version else { continue };
            if self.copies().is_absent(&e)? {
                return Ok(None);
            }
            self.store.write_content(&e.id, slot)?;
            if !looks_like_text(slot) {
                return Ok(None);
            }
        }
        Ok(Some(out))
    }
}
