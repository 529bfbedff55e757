//! Revisions as a Git user types them (gitrevisions(7)), for every
//! command: `HEAD`, `@`, a branch, tag or full ref, an id or a unique
//! prefix; `NAME@{N}` (the ref's N-th value back in its reflog),
//! `NAME@{upstream}` / `@{u}`, `@{-1}` and `-` (the branch or commit
//! checked out before), `ORIG_HEAD` (where the last reset, merge or rebase
//! moved HEAD from); each followed by any of `~N`, `^` and `^N`; and
//! the ranges `A..B` and `A...B` for the commands that walk or compare.
//! An annotated tag stands for its commit (`v1` and `v1^{}` alike).

use dmv_store::{ObjectId, ObjectKind};

use crate::error::{RepoError, RepoResult};
use crate::ref_names::{branch_ref, BRANCHES, REMOTE_BRANCHES};
use crate::repository::refs::Head;
use crate::repository::repo::Repository;

/// Where the branch or commit checked out before the current one is kept
/// (`@{-1}`, `switch -`), in HEAD's own format.
pub(crate) const PREVIOUS_HEAD: &str = "PREVIOUS_HEAD";

/// Where the commit HEAD was at before the last reset, merge or rebase
/// moved it (`ORIG_HEAD`), in HEAD's own format.
pub(crate) const ORIG_HEAD: &str = "ORIG_HEAD";

/// Commits to walk: those `wants` reach that `haves` do not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevisionRange {
    /// The commits whose history is walked.
    pub wants: Vec<ObjectId>,
    /// The commits whose history is left out.
    pub haves: Vec<ObjectId>,
    /// `A...B`: the merge base taken out of both sides (for `diff A...B`, the old side).
    pub symmetric: bool,
}

impl Repository {
    /// Resolves one revision to a commit (see the module's text for the syntax).
    pub fn resolve(&self, rev: &str) -> RepoResult<ObjectId> {
        let unknown = || RepoError::UnknownRevision(rev.to_string());
        let rev_text = if rev == "-" { "@{-1}" } else { rev };
        let (base, steps) = split_steps(peeled_to_commit(rev_text));
        let mut id = self.peel(&self.resolve_base(base, rev)?)?;
        if self.store.kind_of(&id)? != ObjectKind::Commit {
            return Err(RepoError::NotACommit {
                what: rev.to_string(),
            });
        }
        let mut steps = steps;
        while !steps.is_empty() {
            let (tilde, rest) = match steps.as_bytes()[0] {
                b'~' => (true, &steps[1..]),
                b'^' => (false, &steps[1..]),
                _ => return Err(unknown()),
            };
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let n: usize = if digits == 0 {
                1
            } else {
                rest[..digits].parse().map_err(|_| unknown())?
            };
            steps = &rest[digits..];
            if tilde {
                for _ in 0..n {
                    id = *self.commit(&id)?.parents.first().ok_or_else(unknown)?;
                }
            } else if n > 0 {
                // `^N`: the N-th parent (`^0` is the commit itself).
                id = *self.commit(&id)?.parents.get(n - 1).ok_or_else(unknown)?;
            }
        }
        Ok(id)
    }

    /// What `rev` names before it is peeled to a commit: an annotated tag's
    /// own id for a tag's name (`v1`, `refs/tags/v1`, its id), as `git
    /// rev-parse v1` gives; for anything else (`v1^{}`, `v1~1`), [`Repository::resolve`].
    pub fn resolve_unpeeled(&self, rev: &str) -> RepoResult<ObjectId> {
        let (base, steps) = split_steps(rev);
        if steps.is_empty() && !base.contains("@{") && base != "HEAD" && base != "@" && base != "-"
        {
            if let Ok(id) = self.resolve_base(base, rev) {
                if self.store.kind_of(&id)? == ObjectKind::Tag {
                    return Ok(id);
                }
            }
        }
        self.resolve(rev)
    }

    /// A range (`A..B`, `A...B`, either side empty for HEAD), or None when
    /// `spec` is a single revision.
    pub fn resolve_range(&self, spec: &str) -> RepoResult<Option<RevisionRange>> {
        let side = |text: &str| self.resolve(if text.is_empty() { "HEAD" } else { text });
        if let Some((a, b)) = spec.split_once("...") {
            let (a, b) = (side(a)?, side(b)?);
            let haves = self.history().merge_base(a, b)?.into_iter().collect();
            return Ok(Some(RevisionRange {
                wants: vec![a, b],
                haves,
                symmetric: true,
            }));
        }
        if let Some((a, b)) = spec.split_once("..") {
            return Ok(Some(RevisionRange {
                wants: vec![side(b)?],
                haves: vec![side(a)?],
                symmetric: false,
            }));
        }
        Ok(None)
    }

    /// The name `rev` stands for, for `rev-parse --abbrev-ref`: `@{u}` (or
    /// `NAME@{upstream}`) is the remote branch followed (`origin/main`),
    /// `@{-1}` and `-` the branch checked out before (a commit's id if none
    /// was). None for any other revision.
    pub fn symbolic_name(&self, rev: &str) -> RepoResult<Option<String>> {
        let unknown = |why: &str| RepoError::UnknownRevision(format!("{rev} ({why})"));
        if rev == "-" || rev == "@{-1}" {
            return Ok(Some(match self.previous_checkout()? {
                Head::Branch(full) => full.strip_prefix(BRANCHES).unwrap_or(&full).to_string(),
                Head::Detached(id) => id.to_hex(),
            }));
        }
        let Some((name, spec)) = rev.strip_suffix('}').and_then(|r| r.split_once("@{")) else {
            return Ok(None);
        };
        if !matches!(spec, "u" | "upstream" | "push") {
            return Ok(None);
        }
        let branch = match name {
            "" | "HEAD" | "@" => match self.head()? {
                Head::Branch(full) => full.strip_prefix(BRANCHES).unwrap_or(&full).to_string(),
                Head::Detached(_) => return Err(unknown("HEAD is detached: name a branch")),
            },
            other => other.to_string(),
        };
        let up = self
            .config
            .upstreams
            .get(&branch)
            .ok_or_else(|| unknown(&format!("{branch} follows no remote branch")))?;
        Ok(Some(format!("{}/{}", up.remote, up.branch)))
    }

    /// Keeps `at` as `ORIG_HEAD`: where HEAD was before a reset, merge or
    /// rebase moves it, as git keeps it.
    pub(crate) fn remember_orig_head(&self, at: ObjectId) -> RepoResult<()> {
        Head::Detached(at).save(&self.dmv.join(ORIG_HEAD))
    }

    /// What HEAD was before the last switch or checkout that moved it.
    pub(crate) fn previous_head(&self) -> RepoResult<Option<Head>> {
        let path = self.dmv.join(PREVIOUS_HEAD);
        if !path.exists() {
            return Ok(None);
        }
        Head::load(&path).map(Some)
    }

    /// The branch or commit `-` names for `switch -` / `checkout -`: a branch by its short name, else the commit.
    pub fn previous_checkout(&self) -> RepoResult<Head> {
        self.previous_head()?.ok_or_else(|| {
            RepoError::UnknownRevision("- (nothing was checked out before here)".into())
        })
    }

    /// A revision without its `~`/`^` steps: a name, an id, or `NAME@{…}`.
    fn resolve_base(&self, base: &str, rev: &str) -> RepoResult<ObjectId> {
        let unknown = || RepoError::UnknownRevision(rev.to_string());
        if let Some((name, spec)) = base.strip_suffix('}').and_then(|b| b.split_once("@{")) {
            return self.resolve_at(name, spec, rev);
        }
        if base == "HEAD" || base == "@" {
            return self
                .head_commit()?
                .ok_or_else(|| RepoError::UnknownRevision(format!("{rev} (no commits yet)")));
        }
        if let Some(full) = self.full_ref(base)? {
            return self.refs.get(&full)?.ok_or_else(unknown);
        }
        if base == "stash" {
            return self.resolve_at(base, "0", rev);
        }
        if base == ORIG_HEAD {
            let path = self.dmv.join(ORIG_HEAD);
            return match path.exists() {
                true => match Head::load(&path)? {
                    Head::Detached(id) => Ok(id),
                    Head::Branch(_) => Err(unknown()),
                },
                false => Err(RepoError::UnknownRevision(format!(
                    "{rev} (no reset, merge or rebase has moved HEAD here yet)"
                ))),
            };
        }
        self.store.resolve_prefix(base)?.ok_or_else(unknown)
    }

    /// `NAME@{SPEC}`; an empty NAME (or HEAD) is the branch HEAD is on.
    fn resolve_at(&self, name: &str, spec: &str, rev: &str) -> RepoResult<ObjectId> {
        let unknown = |why: &str| RepoError::UnknownRevision(format!("{rev} ({why})"));
        if let Some(n) = spec.strip_prefix('-') {
            if !name.is_empty() {
                return Err(unknown(
                    "@{-N} names what was checked out before, not a ref's past",
                ));
            }
            if n != "1" {
                return Err(unknown("only the last checkout is remembered: @{-1}"));
            }
            return match self.previous_checkout()? {
                Head::Branch(full) => self
                    .refs
                    .get(&full)?
                    .ok_or_else(|| unknown("that branch is gone")),
                Head::Detached(id) => Ok(id),
            };
        }
        // `stash@{N}`: the N-th stash, newest first (unless a ref is named stash).
        if name == "stash" && self.full_ref(name)?.is_none() {
            let n: usize = spec
                .parse()
                .map_err(|_| unknown("stash@{N} takes a number"))?;
            let stashes = self.merges().stashes()?;
            return stashes
                .get(n)
                .map(|s| s.id)
                .ok_or_else(|| unknown(&format!("there are {} stashes", stashes.len())));
        }
        let full = match name {
            "" | "HEAD" | "@" => match self.head()? {
                Head::Branch(full) => full,
                Head::Detached(_) => return Err(unknown("HEAD is detached: name a branch")),
            },
            other => self.full_ref(other)?.unwrap_or_else(|| branch_ref(other)),
        };
        if spec == "u" || spec == "upstream" || spec == "push" {
            let branch = full
                .strip_prefix(BRANCHES)
                .ok_or_else(|| unknown("only a branch has an upstream"))?;
            let up = self
                .config
                .upstreams
                .get(branch)
                .ok_or_else(|| unknown(&format!("{branch} follows no remote branch")))?;
            let remote_ref = format!("{REMOTE_BRANCHES}{}/{}", up.remote, up.branch);
            return self
                .refs
                .get(&remote_ref)?
                .ok_or_else(|| unknown(&format!("{}/{} is not fetched", up.remote, up.branch)));
        }
        let n: usize = spec
            .parse()
            .map_err(|_| unknown("not a number of steps back, -1 or u"))?;
        if n == 0 {
            return self.refs.get(&full)?.ok_or_else(|| unknown("no such ref"));
        }
        let log = self.refs.reflog(&full)?;
        let entry = log
            .get(n)
            .ok_or_else(|| unknown(&format!("its reflog has {} entries", log.len())))?;
        entry
            .new
            .map(ObjectId)
            .ok_or_else(|| unknown("the ref was deleted then"))
    }
}

/// `REV` of `REV^{commit}` or `REV^{}`: what a revision names is a commit
/// already (there are no tag objects to peel).
fn peeled_to_commit(rev: &str) -> &str {
    let mut rev = rev;
    while let Some(inner) = rev
        .strip_suffix("^{commit}")
        .or_else(|| rev.strip_suffix("^{}"))
        .filter(|r| !r.is_empty())
    {
        rev = inner;
    }
    rev
}

/// Splits `main~2^2` into `main` and `~2^2`: the steps begin at the first
/// `~` or `^` after any `@{…}`.
fn split_steps(rev: &str) -> (&str, &str) {
    let from = rev.rfind('}').map_or(0, |i| i + 1);
    let at = rev[from..].find(['~', '^']).map_or(rev.len(), |i| from + i);
    rev.split_at(at)
}

#[cfg(test)]
mod tests {
    use super::{peeled_to_commit, split_steps};

    #[test]
    fn a_commit_peels_to_itself() {
        assert_eq!(peeled_to_commit("HEAD^{commit}"), "HEAD");
        assert_eq!(peeled_to_commit("main~2^{}"), "main~2");
        assert_eq!(peeled_to_commit("v1^{}^{commit}"), "v1");
        assert_eq!(peeled_to_commit("^{commit}"), "^{commit}");
        assert_eq!(peeled_to_commit("HEAD^{tree}"), "HEAD^{tree}");
    }

    #[test]
    fn steps_begin_after_the_braces() {
        assert_eq!(split_steps("main~2^2"), ("main", "~2^2"));
        assert_eq!(split_steps("main@{1}~1"), ("main@{1}", "~1"));
        assert_eq!(split_steps("@{u}"), ("@{u}", ""));
        assert_eq!(split_steps("HEAD"), ("HEAD", ""));
        assert_eq!(split_steps("^"), ("", "^"));
    }
}
