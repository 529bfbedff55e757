//! `.dmv/requires`: the format features a repository uses, one per line (like
//! Mercurial's `.hg/requires`). A dmv that does not know one of them refuses
//! the repository before touching it, instead of misreading it or, worse,
//! running a gc by older rules. A new incompatible feature adds a line here.
//!
//! Repositories of config format 1 predate this file; opening one writes it
//! (and config format 2, which the dmv of those days refuses). A repository
//! that lists fewer requirements than this dmv writes (made by an older one)
//! gets the full list when opened, before anything new is written into it.

use std::path::Path;

use crate::atomic::write_atomic;
use crate::{RepoError, RepoResult};

pub const FILE: &str = "requires";

/// Everything this dmv understands, and writes into every repository it creates.
pub const REQUIREMENTS: &[&str] = &[
    // Packs of version 2: the checksum covers the skeleton, payloads are covered by their ids.
    "packs-v2",
    // Packs of version 3: the table of contents without ids, the checksum over every record header.
    "packs-v3",
    // Writers hold objects/gc.lock shared until what refers to their objects is durable;
    // gc reads its roots under the lock held exclusively and keeps recent packs.
    "gc-lock-v2",
    // One command at a time changes the dirstate, HEAD and MERGE_STATE (.dmv/wlock).
    "worktree-lock",
    // Location records are appended to .dmv/locations.journal, read together with .dmv/locations.
    "locations-journal",
    // The top ref table may travel inside refs/tables.list (its last line, `inline <base64>`).
    "refs-inline",
    // .dmv/locations is packed (version 4: its records and cards in a zstd frame).
    "locations-packed",
    // .dmv/locations may claim trees (version 5), which gc keeps.
    "locations-claims",
];

/// What a repository's list says, once nothing on it is unknown.
#[derive(Debug, PartialEq, Eq)]
pub enum Listed {
    /// No list (format 1 had none).
    Nothing,
    /// Everything this dmv writes.
    All,
    /// Less: an older dmv made the repository.
    Fewer,
}

/// Refuses a repository that requires something this dmv does not know.
/// A missing file is the caller's to judge.
pub fn check(dmv: &Path) -> RepoResult<Listed> {
    let path = dmv.join(FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Listed::Nothing),
        Err(e) => return Err(RepoError::io(&path, e)),
    };
    let text = String::from_utf8(text).map_err(|_| RepoError::Corrupt {
        path: path.clone(),
        detail: "not UTF-8".into(),
    })?;
    let missing: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|r| !r.is_empty() && !REQUIREMENTS.contains(r))
        .map(String::from)
        .collect();
    if !missing.is_empty() {
        return Err(RepoError::UnknownRequirements {
            path: dmv.parent().unwrap_or(dmv).to_path_buf(),
            missing,
        });
    }
    match REQUIREMENTS
        .iter()
        .all(|r| text.lines().any(|l| l.trim() == *r))
    {
        true => Ok(Listed::All),
        false => Ok(Listed::Fewer),
    }
}

pub fn write(dmv: &Path) -> RepoResult<()> {
    let text: String = REQUIREMENTS.iter().map(|r| format!("{r}\n")).collect();
    write_atomic(&dmv.join(FILE), text.as_bytes())
}

/// Whether an error writing into the repository means it is read-only to us.
pub fn read_only(e: &RepoError) -> bool {
    matches!(e, RepoError::Io { cause, .. } if matches!(cause.kind(), std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem))
}
