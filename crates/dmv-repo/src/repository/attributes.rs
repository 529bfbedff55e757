//! `.dmvattributes`: committed lines of `PATTERN ATTRIBUTE…`, like
//! `.gitattributes`. The one attribute DMV reads is `lockable`: matching
//! files are checked out read-only until their user locks them (as Git
//! LFS's lockable files), so nobody edits a file someone else holds without
//! noticing.

use std::collections::HashSet;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The attributes file, at the root of the working tree.
pub const ATTRIBUTES_FILE: &str = ".dmvattributes";

/// The patterns marked `lockable`.
#[derive(Clone, Debug)]
pub struct Lockable {
    set: GlobSet,
    patterns: usize,
}

impl Default for Lockable {
    fn default() -> Self {
        Lockable {
            set: GlobSet::empty(),
            patterns: 0,
        }
    }
}

impl Lockable {
    /// Reads the `lockable` patterns. A pattern without `/` matches a name
    /// in any folder (`*.psd`); one with `/` matches from the root
    /// (`art/*.psd`, `/cut.mov`). Lines starting with `#` and patterns that
    /// are not valid globs are skipped, as git skips what it cannot read in
    /// its attributes: a typo must not stop a checkout.
    pub fn parse(text: &str) -> Lockable {
        let mut builder = GlobSetBuilder::new();
        let mut patterns = 0;
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let mut words = line.split_whitespace();
            let Some(pattern) = words.next() else {
                continue;
            };
            if !words.any(|w| w == "lockable") {
                continue;
            }
            let anchored = pattern.trim_start_matches('/');
            let glob = if pattern.contains('/') {
                anchored.to_string()
            } else {
                format!("**/{pattern}")
            };
            if let Ok(g) = GlobBuilder::new(&glob).literal_separator(true).build() {
                builder.add(g);
                patterns += 1;
            }
        }
        Lockable {
            set: builder.build().unwrap_or_else(|_| GlobSet::empty()),
            patterns,
        }
    }

    /// Whether no file is lockable (no valid `lockable` pattern).
    pub fn is_empty(&self) -> bool {
        self.patterns == 0
    }

    /// Whether `path` ('/'-separated, from the root) is lockable; a path
    /// that is not UTF-8 never is.
    pub fn matches(&self, path: &[u8]) -> bool {
        self.patterns > 0 && std::str::from_utf8(path).is_ok_and(|p| self.set.is_match(p))
    }
}

/// Which files a checkout writes read-only: lockable ones this replica's
/// user does not hold.
#[derive(Clone, Debug, Default)]
pub struct ReadOnlyRule {
    pub lockable: Lockable,
    pub held: HashSet<String>,
}

impl ReadOnlyRule {
    pub fn read_only(&self, path: &[u8]) -> bool {
        self.lockable.matches(path)
            && !std::str::from_utf8(path).is_ok_and(|p| self.held.contains(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockable_patterns_match_like_gitattributes() {
        let l = Lockable::parse("# art\n*.psd lockable\nart/*.mov  -text lockable\n/top.kra lockable\n*.txt text\n[bad lockable\n");
        for yes in ["a.psd", "x/y/a.psd", "art/cut.mov", "top.kra"] {
            assert!(l.matches(yes.as_bytes()), "{yes}");
        }
        for no in [
            "a.psd.txt",
            "x/art/cut.mov",
            "art/x/cut.mov",
            "x/top.kra",
            "notes.txt",
        ] {
            assert!(!l.matches(no.as_bytes()), "{no}");
        }
        assert!(Lockable::parse("*.txt text\n").is_empty());
        let rule = ReadOnlyRule {
            lockable: l,
            held: ["x/y/a.psd".to_string()].into(),
        };
        assert!(
            rule.read_only(b"a.psd") && !rule.read_only(b"x/y/a.psd") && !rule.read_only(b"n.txt")
        );
    }
}
