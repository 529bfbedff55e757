//! The external merge tool (`merge_tool` in the configuration): run on each
//! conflict both sides of which are regular files, right after a merge
//! wrote its result.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;

use dmv_store::object::EntryKind;
use dmv_store::Silent;

use dmv_os::OsStrExt;

use crate::error::{IoContext, RepoResult};
use crate::history::tree::FlatEntry;
use crate::merge::merge_state::MergeState;
use crate::merge::text_files::MarkedText;
use crate::merge::three_way::Conflict;
use crate::paths::side_name;
use crate::repository::repo::Repository;
use crate::worktree::dirstate::DirEntry;

impl Repository {
    /// Runs the configured merge tool (`sh -c TOOL`) on each conflict where
    /// both sides are regular files (a missing base is an empty file), with
    /// DMV_BASE, DMV_OURS, DMV_THEIRS naming temporary files with the three
    /// versions, DMV_MERGED the working-tree file to write and DMV_PATH the
    /// repository path. Exit status 0: the result is staged and the conflict
    /// resolved (if the tool deleted DMV_MERGED, the deletion is). Anything
    /// else: the file goes back to what the merge wrote (our version, or the
    /// `marked` text with conflict markers) and the conflict stays.
    pub(crate) fn run_merge_tool(
        &self,
        tool: &str,
        state: &mut MergeState,
        marked: &[MarkedText],
    ) -> RepoResult<()> {
        let regular = |e: Option<FlatEntry>| e.map(|e| e.kind != EntryKind::Symlink);
        let candidates: Vec<Conflict> = state
            .conflicts
            .iter()
            .filter(|c| {
                regular(c.ours) == Some(true)
                    && regular(c.theirs) == Some(true)
                    && regular(c.base) != Some(false)
            })
            .cloned()
            .collect();
        if candidates.is_empty() {
            return Ok(());
        }
        let scratch = self.dmv.join(format!("merge-tool-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).at(&scratch)?;
        let outcome = self.run_tool_on(tool, &candidates, &scratch);
        let _ = std::fs::remove_dir_all(&scratch);
        let (resolved, failed) = outcome?;

        if !failed.is_empty() {
            let mut ds = self.load_dirstate()?;
            for c in &failed {
                if let Some(m) = marked.iter().find(|m| m.path == c.path) {
                    self.worktree().write_made(&m.path, m.kind, &m.bytes)?;
                } else if let Some(e) = c.ours {
                    let meta = self.worktree().write_entry(&c.path, &e)?;
                    ds.entries
                        .insert(c.path.clone(), DirEntry::new(e.kind, e.id, e.size, &meta));
                }
            }
            self.save_dirstate(&ds)?;
        }
        if !resolved.is_empty() {
            // Every resolved path is tracked (ours had it), so `add` stages a deleted one as deleted.
            self.worktree().add(&resolved, false, &Silent)?;
            state.conflicts.retain(|c| !resolved.contains(&c.path));
            self.merges().save_merge_state(state)?;
        }
        Ok(())
    }

    /// Runs the tool once per conflict; returns the paths it resolved and the conflicts it did not.
    fn run_tool_on(
        &self,
        tool: &str,
        candidates: &[Conflict],
        scratch: &Path,
    ) -> RepoResult<(Vec<Vec<u8>>, Vec<Conflict>)> {
        let mut resolved = Vec::new();
        let mut failed = Vec::new();
        for c in candidates {
            // Named like the file (shot.base.jpg) so a tool can go by the extension.
            let name = c.path.rsplit(|b| *b == b'/').next().unwrap_or(&c.path);
            let mut inputs = Vec::new();
            for (side, entry) in [("base", c.base), ("ours", c.ours), ("theirs", c.theirs)] {
                let file = scratch.join(OsStr::from_bytes(&side_name(name, side)));
                let mut out = std::io::BufWriter::new(std::fs::File::create(&file).at(&file)?);
                if let Some(e) = entry {
                    self.store.write_content(&e.id, &mut out)?;
                }
                out.flush().at(&file)?;
                inputs.push(file);
            }
            let ran = std::process::Command::new("sh")
                .arg("-c")
                .arg(tool)
                .current_dir(&self.root)
                .env("DMV_BASE", &inputs[0])
                .env("DMV_OURS", &inputs[1])
                .env("DMV_THEIRS", &inputs[2])
                .env("DMV_MERGED", self.abs_path(&c.path))
                .env("DMV_PATH", OsStr::from_bytes(&c.path))
                // The tool's chatter must not mix with dmv's own output.
                .stdout(std::io::stderr())
                .status();
            if ran.is_ok_and(|s| s.success()) {
                resolved.push(c.path.clone());
            } else {
                failed.push(c.clone());
            }
            for f in inputs {
                let _ = std::fs::remove_file(f);
            }
        }
        Ok((resolved, failed))
    }
}
