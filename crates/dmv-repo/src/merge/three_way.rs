//! The three-way merge of flat trees, decided per path.
//!
//! Media cannot be merged line by line, so a path is merged by comparing
//! (kind, content id) in the merge base and on both sides: a path only one
//! side changed takes that side; a path both sides changed differently is a
//! [`Conflict`]. A file on one side where the other has a directory
//! conflicts too, so the result is always a valid tree.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::history::tree::{FlatEntry, FlatTree};

/// One conflicted path and its version in the base and on each side (None: absent).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conflict {
    /// The path, '/'-separated bytes.
    #[serde(with = "serde_bytes")]
    pub path: Vec<u8>,
    /// The version in the merge base.
    pub base: Option<FlatEntry>,
    /// The version on HEAD's side.
    pub ours: Option<FlatEntry>,
    /// The version on the side merged in.
    pub theirs: Option<FlatEntry>,
}

impl Conflict {
    /// Git's unmerged-path code and words for what each side did.
    pub fn describe(&self) -> (&'static str, &'static str) {
        match (
            self.base.is_some(),
            self.ours.is_some(),
            self.theirs.is_some(),
        ) {
            (true, true, true) => ("UU", "both modified"),
            (true, false, _) => ("DU", "deleted by us"),
            (true, true, false) => ("UD", "deleted by them"),
            (false, true, true) => ("AA", "both added"),
            (false, true, false) => ("AU", "added by us"),
            (false, false, _) => ("UA", "added by them"),
        }
    }
}

/// Whether two versions of a path (None: absent) are the same content of the same kind.
pub(crate) fn same(a: Option<&FlatEntry>, b: Option<&FlatEntry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.kind == y.kind && x.id == y.id,
        _ => false,
    }
}

/// The per-path three-way merge. Returns the tree to write out (the clean
/// results plus, for each conflict, the version shown until it is resolved)
/// and the conflicts, sorted by path.
pub(crate) fn three_way(
    base: &FlatTree,
    ours: &FlatTree,
    theirs: &FlatTree,
) -> (FlatTree, Vec<Conflict>) {
    let conflict = |p: &Vec<u8>| Conflict {
        path: p.clone(),
        base: base.get(p).copied(),
        ours: ours.get(p).copied(),
        theirs: theirs.get(p).copied(),
    };
    let paths: BTreeSet<&Vec<u8>> = base
        .keys()
        .chain(ours.keys())
        .chain(theirs.keys())
        .collect();
    let mut merged = FlatTree::new();
    let mut conflicts = BTreeMap::new();
    for p in paths {
        let (b, o, t) = (base.get(p), ours.get(p), theirs.get(p));
        let pick = if same(o, t) || same(b, t) {
            o
        } else if same(b, o) {
            t
        } else {
            conflicts.insert(p.clone(), conflict(p));
            // Until resolved the working tree shows ours, or theirs if we deleted it.
            o.or(t)
        };
        if let Some(e) = pick {
            merged.insert(p.clone(), *e);
        }
    }
    // One side put a file where the other has a directory (e.g. ours added
    // `a`, theirs added `a/b`). Every path involved conflicts, and shows our
    // version only: our tree is consistent, so the result is a valid tree.
    for p in clashes(&merged) {
        conflicts.insert(p.clone(), conflict(&p));
        match ours.get(&p) {
            Some(e) => merged.insert(p, *e),
            None => merged.remove(&p),
        };
    }
    (merged, conflicts.into_values().collect())
}

/// Paths that are a file while another path has them as a directory, and those other paths.
fn clashes(tree: &FlatTree) -> BTreeSet<Vec<u8>> {
    let mut out = BTreeSet::new();
    for p in tree.keys() {
        for (i, b) in p.iter().enumerate() {
            if *b == b'/' && tree.contains_key(&p[..i]) {
                out.insert(p[..i].to_vec());
                out.insert(p.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use dmv_store::object::EntryKind;
    use dmv_store::ObjectId;

    use super::*;

    fn e(n: u8) -> FlatEntry {
        FlatEntry {
            kind: EntryKind::File,
            id: ObjectId([n; 32]),
            size: n as u64,
        }
    }

    fn tree(items: &[(&str, u8)]) -> FlatTree {
        items
            .iter()
            .map(|(p, n)| (p.as_bytes().to_vec(), e(*n)))
            .collect()
    }

    #[test]
    fn one_sided_changes_merge_and_two_sided_ones_conflict() {
        let base = tree(&[
            ("same", 1),
            ("ours-mod", 2),
            ("theirs-mod", 3),
            ("both", 4),
            ("del-ours", 5),
            ("moddel", 6),
        ]);
        let ours = tree(&[
            ("same", 1),
            ("ours-mod", 20),
            ("theirs-mod", 3),
            ("both", 40),
            ("moddel", 60),
            ("added", 9),
        ]);
        let theirs = tree(&[
            ("same", 1),
            ("ours-mod", 2),
            ("theirs-mod", 30),
            ("both", 41),
            ("del-ours", 5),
            ("added", 9),
        ]);
        let (merged, conflicts) = three_way(&base, &ours, &theirs);
        assert_eq!(
            merged,
            tree(&[
                ("same", 1),
                ("ours-mod", 20),
                ("theirs-mod", 30),
                ("both", 40),
                ("moddel", 60),
                ("added", 9)
            ])
        );
        let paths: Vec<&[u8]> = conflicts.iter().map(|c| c.path.as_slice()).collect();
        assert_eq!(paths, [b"both".as_slice(), b"moddel"]);
        assert_eq!(conflicts[1].describe().1, "deleted by them");
    }

    #[test]
    fn file_against_directory_conflicts_and_shows_ours() {
        let base = tree(&[("x", 1)]);
        let ours = tree(&[("x", 1), ("a", 2)]);
        let theirs = tree(&[("x", 1), ("a/b", 3), ("a/c", 4)]);
        let (merged, conflicts) = three_way(&base, &ours, &theirs);
        assert_eq!(merged, tree(&[("x", 1), ("a", 2)]));
        assert_eq!(conflicts.len(), 3);
        assert!(clashes(&merged).is_empty());
    }
}
