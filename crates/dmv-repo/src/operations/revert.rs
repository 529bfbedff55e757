//! `revert`: a new commit on HEAD that undoes what an earlier commit did,
//! as a three-way merge of its parent's tree into HEAD's with the commit's
//! own tree as the base.

use crate::repository::handles::Merges;
use dmv_store::ObjectId;
use dmv_store::Progress;

use crate::error::{IoContext, RepoError, RepoResult};
use crate::history::tree::{build, flatten, FlatTree};
use crate::line_merge::MarkerLabels;
use crate::merge::three_way::three_way;
use crate::paths::{show, Beneath};
use crate::worktree::checkout::Written;
use crate::worktree::dirstate::DirEntry;

impl Merges<'_> {
    /// Commits on HEAD the undoing of `commit` (one parent). Refused, with
    /// nothing changed, when the working tree has uncommitted changes, when
    /// a path it changed was changed again since and does not merge line by
    /// line (git would stop for the conflict; DMV's files are rarely
    /// mergeable by hand), or for a merge.
    pub fn revert(&self, commit: ObjectId, progress: &dyn Progress) -> RepoResult<ObjectId> {
        self.require_worktree()?;
        self.signer()?;
        let _wlock = self.lock_worktree()?;
        if let Some(m) = self.merge_state()? {
            return Err(RepoError::MergeInProgress { label: m.label });
        }
        let head = self
            .head_commit()?
            .ok_or_else(|| RepoError::UnknownRevision("HEAD (no commits yet)".into()))?;
        let reverted = self.commit(&commit)?;
        let before = match reverted.parents.as_slice() {
            [] => FlatTree::new(),
            [parent] => flatten(&self.store, &self.commit(parent)?.tree)?,
            _ => {
                return Err(RepoError::RevertMerge {
                    commit: commit.short(),
                })
            }
        };
        let after = flatten(&self.store, &reverted.tree)?;
        let ours = flatten(&self.store, &self.commit(&head)?.tree)?;
        let (mut merged, mut conflicts) = three_way(&after, &ours, &before);
        let mut trees = self.store.begin_write()?;
        if !conflicts.is_empty() {
            // Text changed since on other lines merges line by line, as git's revert does.
            let (reverted_label, parent_label) =
                (commit.short(), format!("parent of {}", commit.short()));
            let labels = MarkerLabels {
                ours: "HEAD",
                base: &reverted_label,
                theirs: &parent_label,
            };
            self.merge_text_conflicts(&mut trees, &mut merged, &mut conflicts, &labels)?;
        }
        if let Some(c) = conflicts.first() {
            return Err(RepoError::RevertConflict {
                commit: commit.short(),
                path: show(&c.path),
            });
        }
        if merged == ours {
            return Err(RepoError::NothingToRevert {
                commit: commit.short(),
            });
        }
        // The same revert cut short while it wrote the working tree (which
        // was clean when it began): HEAD's files go back where it changes
        // them, and it runs anew.
        let marker = self.dmv.join(MARKER);
        let this = format!("{} {}\n", head.to_hex(), commit.to_hex());
        if let Ok(found) = std::fs::read_to_string(&marker) {
            if found == this {
                self.put_back(&ours, &merged)?;
            }
            std::fs::remove_file(&marker).at(&marker)?;
        }
        let (status, _) = self.worktree().worktree_status()?;
        if let Some(c) = status.first_change() {
            return Err(RepoError::UncommittedChanges {
                path: show(&c.path),
                merge: false,
            });
        }
        let target = build(&mut trees, merged.iter().map(|(p, e)| (p.as_slice(), *e)))?;
        // Sealed to be read by the checkout; the session stays open until the
        // commit refers to the tree, so gc keeps it meanwhile.
        trees.finish()?;
        crate::atomic::write_atomic(&marker, this.as_bytes())?;
        self.worktree()
            .update_worktree(&target, &Written::new(), progress)?;
        let subject = reverted.message.lines().next().unwrap_or("");
        let message = format!(
            "Revert \"{subject}\"\n\nThis reverts commit {}.",
            commit.to_hex()
        );
        let mut session = self.store.begin_write()?;
        let id = self.worktree().commit_on_head(
            &mut session,
            target,
            Some(head),
            None,
            &message,
            None,
        )?;
        drop(trees);
        std::fs::remove_file(&marker).at(&marker)?;
        self.mark_tree(&self.load_dirstate()?, target);
        Ok(id)
    }

    /// The working tree and dirstate as HEAD (`ours`) has them at every path
    /// where `target` differs: files the target adds go. A file there that
    /// holds neither version was changed by hand since the kill: refused,
    /// nothing overwritten.
    fn put_back(&self, ours: &FlatTree, target: &FlatTree) -> RepoResult<()> {
        let mut ds = self.load_dirstate()?;
        let paths: std::collections::BTreeSet<&Vec<u8>> = ours
            .keys()
            .chain(target.keys())
            .filter(|p| ours.get(*p) != target.get(*p))
            .collect();
        for path in paths {
            let here = match Beneath::new(&self.root)
                .stat(path)
                .map_err(|e| RepoError::io(self.abs_path(path), e))?
            {
                Some(st) if st.is_file_or_symlink() => {
                    Some(self.worktree().current_id(path, &st)?.0)
                }
                _ => None,
            };
            let (mine, theirs) = (ours.get(path), target.get(path));
            if here != mine.map(|e| e.id) && here != theirs.map(|e| e.id) {
                return Err(RepoError::UncommittedChanges {
                    path: show(path),
                    merge: false,
                });
            }
            match mine {
                Some(e) => {
                    let meta = self.worktree().write_entry(path, e)?;
                    ds.entries
                        .insert(path.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
                }
                None => {
                    self.worktree().remove_worktree_file(path)?;
                    ds.entries.remove(path);
                }
            }
        }
        self.save_dirstate(&ds)
    }
}

/// `.dmv/revert-in-progress`: HEAD and the reverted commit while a revert
/// writes the working tree, so that the same revert run again after a kill
/// knows the changed files are its own.
const MARKER: &str = "revert-in-progress";
