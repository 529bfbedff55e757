//! git's pickaxe (`log -S`, `log -G`): whether a commit changed a text in
//! its files. A commit is compared with its first parent (a root commit
//! with nothing; a merge, whose changes `log` does not show, never
//! matches), renames paired as `log` pairs them; for each changed text
//! file, `-S` counts the text's occurrences before and after and matches
//! when the counts differ, `-G` matches when a line the change took out or
//! put in matches the expression. As git 2.39 does, `-G` skips a pair
//! with a binary side (a NUL byte in its first 8,000 bytes) while `-S`
//! counts in binary files too; both skip a pair with a version larger
//! than [`MAX_PICKAXE_BYTES`] (read whole), or whose data is not in this
//! replica.

use std::ops::Range;

use dmv_store::object::Commit;

use crate::history::grep::GrepPattern;
use crate::history::tree::FlatEntry;
use crate::history::tree_diff::{diff_trees, find_renames, Listed};
use crate::paths::matches;
use crate::repository::handles::History;
use crate::RepoResult;

/// The largest version of a file the pickaxe reads: larger pairs are skipped.
pub const MAX_PICKAXE_BYTES: u64 = 64 << 20;

/// How much of a file is looked at for a NUL byte, as git does.
const BINARY_PROBE: usize = 8000;

/// What a pickaxe looks for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Pickaxe<'a> {
    /// `-S`: the number of occurrences of this text changed.
    Count(&'a [u8]),
    /// `-G`: a line taken out or put in matches.
    Lines(&'a GrepPattern),
}

impl History<'_> {
    /// Whether `commit` changed what `pickaxe` looks for, in files at or
    /// under `paths` (all when empty).
    pub(crate) fn pickaxe_hits(
        &self,
        commit: &Commit,
        pickaxe: Pickaxe<'_>,
        paths: &[Vec<u8>],
    ) -> RepoResult<bool> {
        if commit.parents.len() > 1 {
            return Ok(false);
        }
        let parent_tree = match commit.parents.first() {
            Some(p) => Some(self.commit(p)?.tree),
            None => None,
        };
        let mut changes = diff_trees(&self.store, parent_tree.as_ref(), Some(&commit.tree))?;
        if !paths.is_empty() {
            changes.retain(|c| paths.iter().any(|p| matches(&c.path, p)));
        }
        for listed in find_renames(&self.store, changes)? {
            let (old, new) = match &listed {
                Listed::Change(c) => (c.old, c.new),
                Listed::Renamed { old, new, .. } => (Some(*old), Some(*new)),
            };
            let (Some(before), Some(after)) = (self.pickaxe_text(old)?, self.pickaxe_text(new)?)
            else {
                continue;
            };
            let binary = |t: &[u8]| t.iter().take(BINARY_PROBE).any(|b| *b == 0);
            let hit = match pickaxe {
                Pickaxe::Count(text) => count(&before, text) != count(&after, text),
                Pickaxe::Lines(_) if binary(&before) || binary(&after) => false,
                Pickaxe::Lines(pattern) => lines_changed_match(&before, &after, pattern),
            };
            if hit {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A side's content as the pickaxe reads it: empty when the file is
    /// not on that side; None when it is skipped (not a file, too large,
    /// its data not here).
    fn pickaxe_text(&self, entry: Option<FlatEntry>) -> RepoResult<Option<Vec<u8>>> {
        let Some(e) = entry else {
            return Ok(Some(Vec::new()));
        };
        if !e.kind.is_file() || e.size > MAX_PICKAXE_BYTES || self.copies().is_absent(&e)? {
            return Ok(None);
        }
        let mut text = Vec::with_capacity(e.size as usize);
        self.store.write_content(&e.id, &mut text)?;
        Ok(Some(text))
    }
}

/// How many times `needle` occurs in `hay`, not overlapping (git's
/// `contains`); an empty needle occurs nowhere.
fn count(hay: &[u8], needle: &[u8]) -> usize {
    if needle.is_empty() {
        return 0;
    }
    let (mut n, mut at) = (0, 0);
    while let Some(i) = hay[at..].windows(needle.len()).position(|w| w == needle) {
        n += 1;
        at += i + needle.len();
    }
    n
}

/// Whether a line the change from `before` to `after` took out or put in
/// matches `pattern` (a line diff, Myers, as git's default).
fn lines_changed_match(before: &[u8], after: &[u8], pattern: &GrepPattern) -> bool {
    use imara_diff::intern::InternedInput;
    use imara_diff::sources::byte_lines_with_terminator;
    let input = InternedInput::new(
        byte_lines_with_terminator(before),
        byte_lines_with_terminator(after),
    );
    let mut hit = false;
    let line = |side: &[imara_diff::intern::Token], i: u32| {
        let bytes: &[u8] = input.interner[side[i as usize]];
        bytes.strip_suffix(b"\n").unwrap_or(bytes).to_vec()
    };
    imara_diff::diff(
        imara_diff::Algorithm::Myers,
        &input,
        |b: Range<u32>, a: Range<u32>| {
            hit = hit
                || b.clone().any(|i| pattern.is_match(&line(&input.before, i)))
                || a.clone().any(|i| pattern.is_match(&line(&input.after, i)));
        },
    );
    hit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::grep::{GrepOptions, PatternSyntax};

    #[test]
    fn occurrences_are_counted_as_git_counts_them() {
        assert_eq!(count(b"aaaa", b"aa"), 2);
        assert_eq!(count(b"one two one", b"one"), 2);
        assert_eq!(count(b"", b"x"), 0);
        assert_eq!(count(b"abc", b""), 0);
    }

    #[test]
    fn only_lines_taken_out_or_put_in_are_looked_at() {
        let ext = GrepOptions {
            syntax: PatternSyntax::Extended,
            ..GrepOptions::default()
        };
        let p = GrepPattern::new("gr(ee|a)n", ext).unwrap();
        assert!(lines_changed_match(b"a\nred\n", b"a\ngreen\n", &p));
        assert!(!lines_changed_match(b"green\nx\n", b"green\ny\n", &p));
        assert!(lines_changed_match(b"gran\n", b"", &p));
    }
}
