//! `resolve`: settling the conflicts of the merge in progress, with our
//! version, theirs, both side by side, or the file as the user left it.

use crate::repository::handles::Merges;
use std::collections::BTreeSet;

use dmv_store::Silent;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::FlatEntry;
use crate::merge::three_way::Conflict;
use crate::paths::clash_with;
use crate::paths::{matches, show, side_name};
use crate::resolution::Resolution;
use crate::worktree::dirstate::{kind_of, DirEntry, Dirstate, Stat};

/// One resolved conflict and the paths that now hold its content (empty: deleted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The conflicted path.
    pub path: Vec<u8>,
    /// Where its content is now (both sides' names when both were kept).
    pub kept: Vec<Vec<u8>>,
}

impl Merges<'_> {
    /// Settles the conflicts at or under `specs` (repository-relative paths;
    /// empty = all) and stages the result. Each spec must name a conflict.
    pub fn resolve_conflicts(
        &self,
        specs: &[Vec<u8>],
        how: Resolution,
    ) -> RepoResult<Vec<Resolved>> {
        self.require_worktree()?;
        let _wlock = self.lock_worktree()?;
        let mut state = self.merge_state()?.ok_or(RepoError::NoMergeInProgress)?;
        state.check_applied()?;
        let mut chosen: Vec<Conflict> = Vec::new();
        for spec in specs {
            let hits: Vec<&Conflict> = state
                .conflicts
                .iter()
                .filter(|c| matches(&c.path, spec))
                .collect();
            if hits.is_empty() {
                let name = if spec.is_empty() {
                    ".".to_string()
                } else {
                    show(spec)
                };
                return Err(RepoError::NotInConflict { path: name });
            }
            for c in hits {
                if !chosen.iter().any(|x| x.path == c.path) {
                    chosen.push(c.clone());
                }
            }
        }
        let results = match how {
            Resolution::AsIs => self.resolve_as_is(&chosen)?,
            _ => self.resolve_with_versions(&chosen, how)?,
        };
        // After the dirstate: a crash in between only leaves the paths listed, and resolving again is harmless.
        state
            .conflicts
            .retain(|c| !chosen.iter().any(|x| x.path == c.path));
        self.save_merge_state(&state)?;
        Ok(results)
    }

    fn resolve_as_is(&self, chosen: &[Conflict]) -> RepoResult<Vec<Resolved>> {
        let ds = self.load_dirstate()?;
        let mut to_stage = Vec::new();
        let mut results = Vec::new();
        for c in chosen {
            let on_disk = std::fs::symlink_metadata(self.abs_path(&c.path))
                .is_ok_and(|m| m.is_file() || m.file_type().is_symlink());
            if on_disk || ds.entries.contains_key(&c.path) {
                to_stage.push(c.path.clone());
            }
            results.push(Resolved {
                path: c.path.clone(),
                kept: if on_disk {
                    vec![c.path.clone()]
                } else {
                    Vec::new()
                },
            });
        }
        drop(ds);
        if !to_stage.is_empty() {
            self.worktree().add(&to_stage, false, &Silent)?;
        }
        Ok(results)
    }

    fn resolve_with_versions(
        &self,
        chosen: &[Conflict],
        how: Resolution,
    ) -> RepoResult<Vec<Resolved>> {
        let mut ds = self.load_dirstate()?;
        // What each affected path becomes (None: absent).
        let mut plan: Vec<(Vec<u8>, Option<FlatEntry>)> = Vec::new();
        let mut results = Vec::new();
        for c in chosen {
            let mut kept = Vec::new();
            if how == Resolution::Both {
                plan.push((c.path.clone(), None));
                for (side, entry) in [("ours", c.ours), ("theirs", c.theirs)] {
                    let Some(e) = entry else { continue };
                    let name = side_name(&c.path, side);
                    self.check_free(&name, &e, &ds, &plan)?;
                    plan.push((name.clone(), Some(e)));
                    kept.push(name);
                }
            } else {
                let entry = if how == Resolution::Ours {
                    c.ours
                } else {
                    c.theirs
                };
                plan.push((c.path.clone(), entry));
                kept.extend(entry.map(|_| c.path.clone()));
            }
            results.push(Resolved {
                path: c.path.clone(),
                kept,
            });
        }

        // The result must still be a tree: no path both a file and a directory.
        let mut next: BTreeSet<Vec<u8>> = ds.entries.keys().map(<[u8]>::to_vec).collect();
        for (p, e) in &plan {
            match e {
                Some(_) => next.insert(p.clone()),
                None => next.remove(p),
            };
        }
        for (p, _) in plan.iter().filter(|(_, e)| e.is_some()) {
            if let Some(other) = clash_with(&next, p) {
                return Err(RepoError::FileDirectoryClash {
                    path: show(p),
                    other: show(&other),
                    how,
                });
            }
        }

        // In a partial replica a version whose data is not here refuses the
        // whole resolution before anything moves (dmv_sync fetches it first).
        for (p, e) in plan.iter().filter_map(|(p, e)| e.as_ref().map(|e| (p, e))) {
            if self.copies().is_absent(e)? {
                return Err(RepoError::DataAbsent { path: show(p) });
            }
        }
        for (p, _) in plan.iter().filter(|(_, e)| e.is_none()) {
            self.worktree().remove_worktree_file(p)?;
            ds.entries.remove(p);
        }
        for (p, e) in &plan {
            let Some(e) = e else { continue };
            // A big file already right on disk (e.g. ours, shown during the merge) is not rewritten.
            let staged_and_unchanged = ds.entries.get(p).is_some_and(|d| {
                d.kind == e.kind
                    && d.id == e.id
                    && std::fs::symlink_metadata(self.abs_path(p))
                        .is_ok_and(|m| d.stat_matches(&Stat::of(&m), ds.written_ns))
            });
            if !staged_and_unchanged {
                let meta = self.worktree().write_entry(p, e)?;
                ds.entries
                    .insert(p.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
            }
        }
        self.save_dirstate(&ds)?;
        Ok(results)
    }

    /// `--both` must not overwrite anything: its names must be free, unless a
    /// resolve that was interrupted already wrote exactly this version there.
    fn check_free(
        &self,
        name: &[u8],
        e: &FlatEntry,
        ds: &Dirstate,
        plan: &[(Vec<u8>, Option<FlatEntry>)],
    ) -> RepoResult<()> {
        let taken = || RepoError::SideNameTaken { path: show(name) };
        let tracked_other = ds
            .entries
            .get(name)
            .is_some_and(|d| d.kind != e.kind || d.id != e.id);
        if tracked_other || plan.iter().any(|(p, _)| p == name) {
            return Err(taken());
        }
        let abs = self.abs_path(name);
        match std::fs::symlink_metadata(&abs) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(RepoError::io(abs, err)),
            Ok(m)
                if kind_of(&m) == Some(e.kind)
                    && self.worktree().current_id(name, &Stat::of(&m))?.0 == e.id =>
            {
                Ok(())
            }
            Ok(_) => Err(taken()),
        }
    }
}
