//! What `log` asks of the history, as one value: the command line's text
//! and `--json`, and the web UI's history pages, read commits through the
//! same query, so a filter means the same wherever it is given.

use std::collections::HashMap;

use dmv_store::ObjectId;

use crate::history::graph::{in_topo_order, CommitInfo};
use crate::history::pickaxe::Pickaxe;
use crate::ref_names::{BRANCHES, REMOTE_BRANCHES, STASHES, TAGS};
use crate::repository::handles::History;
use crate::repository::refs::Head;
use crate::RepoResult;

/// Which commits to list, and in which order: by default HEAD's history,
/// newest committer time first.
#[derive(Clone, Debug, Default)]
pub struct LogQuery {
    /// Where the history starts: a revision, or a range `A..B` (what B has
    /// that A has not) or `A...B` (what either has that the other has not).
    /// None: HEAD.
    pub revision: Option<String>,
    /// Only commits that change one of these paths (files or folders).
    pub paths: Vec<Vec<u8>>,
    /// With exactly one path: followed back through the renames that made
    /// it, as `git log --follow`. Ignored otherwise.
    pub follow: bool,
    /// Only commits made (committer time, seconds since the epoch) at or after this.
    pub since: Option<i64>,
    /// Only commits made at or before this.
    pub until: Option<i64>,
    /// Only commits whose author, as `Name <email>`, holds this text.
    pub author: Option<String>,
    /// Only commits whose message holds this text.
    pub grep: Option<String>,
    /// Only commits that change how many times this text occurs in a text
    /// file (git's pickaxe, `log -S`; see history/pickaxe.rs).
    pub changes_count_of: Option<String>,
    /// Only commits that take out or put in a line of a text file matching
    /// this pattern (`log -G`).
    pub changes_lines_matching: Option<crate::history::grep::GrepPattern>,
    /// Children before their parents whatever the times (what a graph
    /// draws): the whole history asked for is read before the first commit.
    pub topo_order: bool,
    /// Commits left out at the start, after the filters (a page's offset).
    pub skip: usize,
    /// At most this many commits, after the filters.
    pub max_count: Option<usize>,
    /// Every branch, remote-tracking branch and tag, and HEAD, are
    /// starting points too (`log --all`).
    pub all: bool,
    /// Oldest first, once the rest chose the commits (`-n 2 --reverse`
    /// gives the last two, the older first, as git's).
    pub reverse: bool,
}

impl LogQuery {
    /// Whether a commit passes the filters on its own fields.
    fn wants(&self, c: &dmv_store::object::Commit) -> bool {
        self.since.is_none_or(|t| c.committer.time >= t)
            && self.until.is_none_or(|t| c.committer.time <= t)
            && self
                .author
                .as_deref()
                .is_none_or(|x| format!("{} <{}>", c.author.name, c.author.email).contains(x))
            && self.grep.as_deref().is_none_or(|x| c.message.contains(x))
    }
}

/// The commits a [`LogQuery`] asks for, as they are read.
pub type LogCommits<'r> = Box<dyn Iterator<Item = RepoResult<CommitInfo>> + 'r>;

impl<'r> History<'r> {
    /// The commits `query` asks for, in its order.
    pub fn log(&self, query: &LogQuery) -> RepoResult<LogCommits<'r>> {
        let rev = query.revision.as_deref().unwrap_or("HEAD");
        let walk = match (self.resolve_range(rev)?, query.all) {
            (Some(range), all) => {
                let mut wants = range.wants.clone();
                if all {
                    wants.extend(self.every_tip()?);
                }
                self.walk_between(&wants, &range.haves)?
            }
            (None, false) => self.walk(&[self.resolve(rev)?])?,
            (None, true) => {
                let mut tips = self.every_tip()?;
                // HEAD of a new repository names no commit yet: the refs are all there is.
                if query.revision.is_some() || self.resolve("HEAD").is_ok() {
                    tips.push(self.resolve(rev)?);
                }
                self.walk(&tips)?
            }
        };
        let mut walk = walk.touching(query.paths.clone());
        if query.follow && query.paths.len() == 1 {
            walk = walk.following_renames();
        }
        let filter = query.clone();
        let walk = walk.filter(move |info| info.as_ref().map_or(true, |i| filter.wants(&i.commit)));
        let history = *self;
        let query_paths = query.paths.clone();
        let (count_of, lines_matching) = (
            query.changes_count_of.clone(),
            query.changes_lines_matching.clone(),
        );
        // The pickaxe reads each commit's changed files: only asked for, and after the cheaper filters.
        let walk = walk.filter_map(move |info| {
            let Ok(i) = info else {
                return Some(info);
            };
            let pickaxes = count_of
                .as_deref()
                .map(|t| Pickaxe::Count(t.as_bytes()))
                .into_iter()
                .chain(lines_matching.as_ref().map(Pickaxe::Lines));
            for p in pickaxes {
                match history.pickaxe_hits(&i.commit, p, &query_paths) {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => return Some(Err(e)),
                }
            }
            Some(Ok(i))
        });
        let ordered: LogCommits<'r> = match query.topo_order {
            true => Box::new(
                in_topo_order(walk.collect::<RepoResult<Vec<_>>>()?)
                    .into_iter()
                    .map(Ok),
            ),
            false => Box::new(walk),
        };
        let chosen = ordered
            .skip(query.skip)
            .take(query.max_count.unwrap_or(usize::MAX));
        Ok(match query.reverse {
            true => {
                let mut all = chosen.collect::<RepoResult<Vec<_>>>()?;
                all.reverse();
                Box::new(all.into_iter().map(Ok))
            }
            false => Box::new(chosen),
        })
    }

    /// The commits every branch, remote-tracking branch and tag names, and
    /// the newest stash (git's `refs/stash`; the older ones are its reflog).
    fn every_tip(&self) -> RepoResult<Vec<ObjectId>> {
        let repo = self.repository();
        let mut tips = Vec::new();
        for prefix in [BRANCHES, REMOTE_BRANCHES, TAGS] {
            for (_, id) in repo.refs.list(prefix)? {
                tips.push(repo.peel(&id)?);
            }
        }
        if let Some((_, newest)) = repo.refs.list(STASHES)?.last() {
            tips.push(*newest);
        }
        tips.sort_unstable();
        tips.dedup();
        Ok(tips)
    }

    /// The names beside each commit in `log --decorate`, as git orders
    /// them: `HEAD` (with the branch it is on) first, then the other
    /// branches, remote-tracking branches and tags naming it, by full name
    /// from last to first (git lists them so). An annotated tag stands for
    /// its commit.
    pub fn decorations(&self) -> RepoResult<HashMap<ObjectId, Vec<Decoration>>> {
        let repo = self.repository();
        let mut names: HashMap<ObjectId, Vec<Decoration>> = HashMap::new();
        let head_branch = match repo.head()? {
            Head::Branch(b) => Some(b),
            Head::Detached(_) => None,
        };
        if let Ok(id) = self.resolve("HEAD") {
            names.entry(id).or_default().push(Decoration::Head {
                branch: head_branch.clone(),
            });
        }
        let mut refs = Vec::new();
        for prefix in [BRANCHES, REMOTE_BRANCHES, TAGS] {
            refs.extend(repo.refs.list(prefix)?);
        }
        refs.sort();
        for (name, id) in refs.into_iter().rev() {
            if Some(&name) == head_branch.as_ref() {
                continue;
            }
            let kind = if name.starts_with(BRANCHES) {
                Decoration::Branch(name)
            } else if name.starts_with(REMOTE_BRANCHES) {
                Decoration::RemoteBranch(name)
            } else {
                Decoration::Tag(name)
            };
            names.entry(repo.peel(&id)?).or_default().push(kind);
        }
        Ok(names)
    }
}

/// A name `log --decorate` shows beside a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoration {
    /// HEAD, and the branch it is on.
    Head {
        /// The branch's full name; None: detached.
        branch: Option<String>,
    },
    /// A branch, by full name.
    Branch(String),
    /// A remote-tracking branch, by full name.
    RemoteBranch(String),
    /// A tag, by full name.
    Tag(String),
}
