//! Lists of commits as git's plumbing gives them: the commits a set of
//! revisions names (`rev-list`: revisions, `^REV` left out with its
//! history, ranges, every ref), and the same walk grouped by author with
//! each commit's subject (`shortlog`).

use std::collections::BTreeMap;

use dmv_store::object::Commit;
use dmv_store::ObjectKind;

use crate::history::graph::CommitWalk;
use crate::history::mailmap::Mailmap;
use crate::repository::handles::History;
use crate::RepoResult;

/// One author's commits in a [`History::shortlog`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorCommits {
    /// The author as grouped: the name, or `Name <email>` when emails are shown.
    pub author: String,
    /// The subjects of the author's commits, oldest first (as git lists them).
    pub subjects: Vec<String>,
}

impl<'r> History<'r> {
    /// The commits `specs` name, newest committer time first, as `git
    /// rev-list` reads its arguments: a revision stands for its history,
    /// `^REV` leaves REV's history out, `A..B` and `A...B` are ranges; with
    /// `all`, the history of every ref and of HEAD is walked too.
    pub fn rev_walk(&self, specs: &[String], all: bool) -> RepoResult<CommitWalk<'r>> {
        let mut wants = Vec::new();
        let mut haves = Vec::new();
        for spec in specs {
            if let Some(left_out) = spec.strip_prefix('^').filter(|s| !s.is_empty()) {
                haves.push(self.resolve(left_out)?);
            } else if let Some(range) = self.resolve_range(spec)? {
                wants.extend(range.wants);
                haves.extend(range.haves);
            } else {
                wants.push(self.resolve(spec)?);
            }
        }
        if all {
            wants.extend(self.head_commit()?);
            for (name, id) in self.refs.list("refs/")? {
                // The review log's commits are entries, not history (as `log --all` leaves them out).
                if name.starts_with(crate::ref_names::UNION_LOGS) {
                    continue;
                }
                // A ref may name a tag of something other than a commit: such a ref has no history.
                let peeled = self.peel(&id)?;
                if self.store.kind_of(&peeled)? == ObjectKind::Commit {
                    wants.push(peeled);
                }
            }
        }
        self.walk_between(&wants, &haves)
    }

    /// The commits of `walk` by author, as `git shortlog` groups them:
    /// authors (as `mailmap` names them) in byte order of their names (of
    /// `Name <email>` with `emails`), each with its subjects oldest first.
    pub fn shortlog(
        &self,
        walk: impl Iterator<Item = RepoResult<crate::CommitInfo>>,
        emails: bool,
        mailmap: &Mailmap,
    ) -> RepoResult<Vec<AuthorCommits>> {
        let mut by_author: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for info in walk {
            let info = info?;
            let a = &info.commit.author;
            let (name, email) = mailmap.map(&a.name, &a.email);
            let who = match emails {
                true => format!("{name} <{email}>"),
                false => name.to_string(),
            };
            by_author
                .entry(who)
                .or_default()
                .push(shortlog_subject(&info.commit));
        }
        Ok(by_author
            .into_iter()
            .map(|(author, mut subjects)| {
                subjects.reverse();
                AuthorCommits { author, subjects }
            })
            .collect())
    }
}

/// A commit's subject as shortlog shows it: leading blank lines and a
/// `[PATCH…]` prefix taken off, the first paragraph's lines joined by
/// spaces.
fn shortlog_subject(commit: &Commit) -> String {
    let text = commit.message.trim_start();
    let first_line_end = text.find('\n').unwrap_or(text.len());
    let text = match text.strip_prefix("[PATCH") {
        Some(_) => match text.find(']') {
            Some(end) if end < first_line_end => &text[end + 1..],
            _ => text,
        },
        None => text,
    };
    let text = text.trim_start_matches(|c: char| c.is_whitespace() && c != '\n');
    subject_of(text)
}

/// The first paragraph of `message`, its lines trimmed and joined by a
/// space: git's `%s`.
pub fn subject_of(message: &str) -> String {
    message
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::subject_of;

    #[test]
    fn a_subject_is_the_first_paragraph_on_one_line() {
        assert_eq!(subject_of("one\ntwo  \n\nbody"), "one two");
        assert_eq!(subject_of("\n\n  lead\n"), "  lead");
        assert_eq!(subject_of(""), "");
    }
}
