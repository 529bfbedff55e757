//! Merging: the three-way decision per path, the state an unfinished merge
//! keeps, the external merge tool, settling conflicts, and the merge itself.
//!
//! Read bottom up: `three_way`, `merge_state`, `text_files`, `mergetool`, `resolve`,
//! `kept_both`, `merging`, `cherry_pick`.

pub(crate) mod cherry_pick;
pub(crate) mod kept_both;
pub(crate) mod merge_state;
pub(crate) mod mergetool;
pub(crate) mod merging;
pub(crate) mod resolve;
pub(crate) mod text_files;
pub(crate) mod three_way;
