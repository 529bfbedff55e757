//! `.dmv/kept-both`: the files a sync with no one at the keyboard (a
//! watcher) found changed on two replicas and kept in both versions, so
//! that `status` can say so until a person has chosen. JSON: a list of
//! `{ "path": …, "kept": [ …, … ] }`, paths as UTF-8 (lossy: it is a report).

use crate::repository::handles::Merges;
use serde::{Deserialize, Serialize};

use crate::error::{RepoError, RepoResult};
use crate::merge::resolve::Resolved;

const FILE: &str = "kept-both";

/// A file kept in both versions, and where they are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptBoth {
    /// The path both replicas changed.
    pub path: String,
    /// The paths its versions are at now.
    pub kept: Vec<String>,
}

impl Merges<'_> {
    /// Adds `resolved` to the files [`Merges::kept_both`] reports.
    pub fn note_kept_both(&self, resolved: &[Resolved]) -> RepoResult<()> {
        let mut all = self.read_kept_both();
        let lossy = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
        all.extend(resolved.iter().map(|r| KeptBoth {
            path: lossy(&r.path),
            kept: r.kept.iter().map(|k| lossy(k)).collect(),
        }));
        all.dedup();
        let bytes = serde_json::to_vec_pretty(&all).map_err(|e| RepoError::Scan {
            detail: format!("cannot encode {FILE}: {e}"),
        })?;
        crate::atomic::write_atomic(&self.dmv.join(FILE), &bytes)
    }

    /// The files kept in both versions whose versions are all still in the
    /// working tree: once a person deletes one, they have chosen.
    pub fn kept_both(&self) -> Vec<KeptBoth> {
        let mut all = self.read_kept_both();
        all.retain(|k| k.kept.len() > 1 && k.kept.iter().all(|p| self.root.join(p).exists()));
        all
    }

    /// A missing or damaged file is no report: it only ever adds a line to `status`.
    fn read_kept_both(&self) -> Vec<KeptBoth> {
        std::fs::read(self.dmv.join(FILE))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }
}
