//! Reading the board for a list: the comments carried to a commit (made on
//! a version of their file in its history), narrowed to a file, a writer,
//! a person mentioned or the commit itself, each marked whether the
//! commit still holds the version it was made on.

use std::collections::HashMap;

use dmv_repo::store::ObjectId;
use dmv_repo::tree::lookup;
use dmv_repo::Repository;
use serde::Serialize;

use crate::board::{Board, Comment};
use crate::error::ReviewResult;

/// A comment as a version of its file shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Shown<'b> {
    /// The comment.
    #[serde(flatten)]
    pub comment: &'b Comment,
    /// Whether it was made on this very version (else on an earlier one,
    /// and its region may have changed since).
    pub on_this_version: bool,
}

/// Which comments a list keeps; the default keeps every open one.
#[derive(Clone, Copy, Debug, Default)]
pub struct CommentFilter<'a> {
    /// Only those on these files (paths in the repository, no slashes at
    /// their ends, sorted).
    pub paths: Option<&'a [&'a str]>,
    /// Only those whose thread (the comment or a reply) mentions this name.
    pub mentioning: Option<&'a str>,
    /// Only those this name wrote.
    pub by: Option<&'a str>,
    /// Only those made on this very commit (else anywhere in its history).
    pub made_at: Option<ObjectId>,
    /// Resolved ones too.
    pub resolved_too: bool,
}

impl CommentFilter<'_> {
    fn keeps(&self, c: &Comment) -> bool {
        (self.resolved_too || !c.resolved)
            && self
                .paths
                .is_none_or(|p| p.binary_search(&c.file.path.as_str()).is_ok())
            && self.by.is_none_or(|b| c.by.name == b)
            && self.mentioning.is_none_or(|m| c.mentions_name(m))
            && self.made_at.is_none_or(|at| c.file.commit == at)
    }
}

/// The comments carried to commit `at` that `filter` keeps, oldest first.
/// `versions` holds the versions of paths at `at` a caller already knows
/// (a review page has its diff): only other paths are looked up in `at`'s
/// tree, each once, and each comment's commit is checked against `at`'s
/// history once however many comments it holds.
pub fn comments_carried_to<'b>(
    repo: &Repository,
    board: &'b Board,
    at: ObjectId,
    filter: &CommentFilter<'_>,
    versions: &HashMap<&str, ObjectId>,
) -> ReviewResult<Vec<Shown<'b>>> {
    let tree = repo.commit(&at)?.tree;
    let mut looked_up: HashMap<&str, Option<ObjectId>> = HashMap::new();
    let mut in_history: HashMap<ObjectId, bool> = HashMap::new();
    let mut shown = Vec::new();
    for c in board.comments.iter().filter(|c| filter.keeps(c)) {
        let carried = match in_history.get(&c.file.commit) {
            Some(&known) => known,
            // A comment's commit this replica lacks is not in `at`'s history.
            None => {
                let known = c.file.commit == at
                    || (repo
                        .store
                        .contains(&c.file.commit)
                        .map_err(dmv_repo::RepoError::from)?
                        && repo.history().is_ancestor(&c.file.commit, &at)?);
                in_history.insert(c.file.commit, known);
                known
            }
        };
        if !carried {
            continue;
        }
        let path = c.file.path.as_str();
        let here = match versions.get(path) {
            Some(id) => Some(*id),
            None => match looked_up.get(path) {
                Some(found) => *found,
                None => {
                    let found = lookup(&repo.store, &tree, path.as_bytes())?.map(|e| e.id);
                    looked_up.insert(path, found);
                    found
                }
            },
        };
        shown.push(Shown {
            comment: c,
            on_this_version: here == Some(c.file.version),
        });
    }
    Ok(shown)
}

/// The comments on `path` as commit `at` has it, resolved or not: those
/// made on a version of the path in `at`'s history (carried forward),
/// oldest first.
pub fn comments_on<'b>(
    repo: &Repository,
    board: &'b Board,
    path: &str,
    at: ObjectId,
) -> ReviewResult<Vec<Shown<'b>>> {
    let paths = [path.trim_matches('/')];
    let filter = CommentFilter {
        paths: Some(&paths),
        resolved_too: true,
        ..CommentFilter::default()
    };
    comments_carried_to(repo, board, at, &filter, &HashMap::new())
}
