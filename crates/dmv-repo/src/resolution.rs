//! The ways a conflict can be settled: a leaf, so that an error can say
//! which was asked for without knowing how it is done.

/// How `resolve_conflicts` settles a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Our version (HEAD's); if we deleted the file, it is deleted.
    Ours,
    /// Their version; if they deleted the file, it is deleted.
    Theirs,
    /// Both versions side by side as `name.ours.ext` and `name.theirs.ext`.
    Both,
    /// The working-tree file as it is now (the user merged it by hand).
    AsIs,
}
