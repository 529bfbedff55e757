//! One side of a file's change as a diff shows it: text small enough to
//! show line by line, or a binary file described as a person knows it (a
//! picture's size and date taken, a sound's or film's duration). The side
//! is read from the store, or from the working tree when the diff's new
//! side is the working tree's files.

use crate::repository::handles::History;
use dmv_store::object::EntryKind;

use crate::error::{IoContext, RepoResult};
use crate::history::tree::FlatEntry;
use dmv_media::media_facts;

/// Files up to this size that are text get a line diff; others are described.
const TEXT_DIFF_LIMIT: u64 = 1 << 20;

/// git's test for binary: a NUL in the first 8,000 bytes.
const BINARY_PROBE: usize = 8000;

/// A side of a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffSide {
    /// The content as text (an absent side is empty text).
    Text(String),
    /// Not text, too large, or its data not here: what a person knows it by,
    /// before its size (empty: nothing known).
    Binary {
        /// Each fact as shown, e.g. a picture's size in pixels, when it was
        /// taken, a film's duration.
        facts: Vec<String>,
    },
}

impl History<'_> {
    /// The versions among `changes` a diff would show as text were their
    /// data here: in a partial replica, what `diff` fetches first, so it
    /// shows what a full replica shows (media are shown by their facts
    /// and sizes either way). The working tree's side is not a version.
    pub fn versions_a_diff_reads(
        &self,
        changes: &[crate::Change],
        new_in_worktree: bool,
    ) -> RepoResult<Vec<(Vec<u8>, FlatEntry)>> {
        let mut out = Vec::new();
        for c in changes
            .iter()
            .filter(|c| !crate::line_merge::never_text(&c.path))
        {
            let sides = [c.old, if new_in_worktree { None } else { c.new }];
            for e in sides.into_iter().flatten() {
                if e.kind.is_file() && e.size <= TEXT_DIFF_LIMIT && self.copies().is_absent(&e)? {
                    out.push((c.path.clone(), e));
                }
            }
        }
        Ok(out)
    }

    /// `entry` (None: the side where the file does not exist) as a diff
    /// shows it, read from the working tree at `worktree_path` if given.
    pub fn diff_side(
        &self,
        entry: Option<&FlatEntry>,
        worktree_path: Option<&[u8]>,
    ) -> RepoResult<DiffSide> {
        let Some(e) = entry else {
            return Ok(DiffSide::Text(String::new()));
        };
        if e.kind == EntryKind::Dir {
            return Ok(DiffSide::Binary { facts: Vec::new() });
        }
        if e.size <= TEXT_DIFF_LIMIT {
            if let Some(text) = self.small_text(e, worktree_path)? {
                return Ok(DiffSide::Text(text));
            }
        }
        if e.kind == EntryKind::Symlink {
            return Ok(DiffSide::Binary { facts: Vec::new() });
        }
        let facts = match worktree_path {
            Some(p) => {
                let path = self.abs_path(p);
                media_facts(std::fs::File::open(&path).at(&path)?)
            }
            None if self.copies().is_absent(e)? => Vec::new(),
            None => media_facts(self.store.seekable_content(&e.id)?),
        };
        Ok(DiffSide::Binary { facts })
    }

    /// `entry` as text, as [`History::diff_side`] would show it (None:
    /// binary, too large or not here), without describing a binary file:
    /// what `diff --stat` needs to count lines.
    pub fn diff_text(
        &self,
        entry: Option<&FlatEntry>,
        worktree_path: Option<&[u8]>,
    ) -> RepoResult<Option<String>> {
        match entry {
            None => Ok(Some(String::new())),
            Some(e) if e.kind == EntryKind::Dir || e.size > TEXT_DIFF_LIMIT => Ok(None),
            Some(e) => self.small_text(e, worktree_path),
        }
    }

    /// A file's content if it is text (a symlink's target is); None when
    /// binary or its data is not here.
    fn small_text(
        &self,
        e: &FlatEntry,
        worktree_path: Option<&[u8]>,
    ) -> RepoResult<Option<String>> {
        let bytes = match worktree_path {
            Some(p) => {
                let path = self.abs_path(p);
                match e.kind {
                    EntryKind::Symlink => std::fs::read_link(&path)
                        .map(|t| t.into_os_string().into_encoded_bytes())
                        .at(&path)?,
                    _ => std::fs::read(&path).at(&path)?,
                }
            }
            None if self.copies().is_absent(e)? => return Ok(None),
            None => {
                let mut bytes = Vec::with_capacity(e.size as usize);
                self.store.write_content(&e.id, &mut bytes)?;
                bytes
            }
        };
        if bytes.iter().take(BINARY_PROBE).any(|b| *b == 0) {
            return Ok(None);
        }
        Ok(String::from_utf8(bytes).ok())
    }
}
