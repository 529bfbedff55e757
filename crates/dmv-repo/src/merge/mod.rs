//! Merging: the three-way decision per path, the state an unfinished merge
//! keeps, the external merge tool, settling conflicts, and the merge itself.
//!
//! Read bottom up: `resolution`, `three_way`, `line_merge`, `merge_state`, `text_files`, `mergetool`, `resolve`,
//! `kept_both`, `merging`, `cherry_pick`.

pub(crate) mod cherry_pick;
pub(crate) mod kept_both;
pub(crate) mod line_merge;
pub(crate) mod merge_state;
pub(crate) mod mergetool;
pub(crate) mod merging;
pub(crate) mod resolution;
pub(crate) mod resolve;
pub(crate) mod text_files;
pub(crate) mod three_way;
