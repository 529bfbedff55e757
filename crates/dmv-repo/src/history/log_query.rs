//! What `log` asks of the history, as one value: the command line's text
//! and `--json`, and the web UI's history pages, read commits through the
//! same query, so a filter means the same wherever it is given.

use crate::history::graph::{in_topo_order, CommitInfo};
use crate::repository::handles::History;
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
    /// Children before their parents whatever the times (what a graph
    /// draws): the whole history asked for is read before the first commit.
    pub topo_order: bool,
    /// Commits left out at the start, after the filters (a page's offset).
    pub skip: usize,
    /// At most this many commits, after the filters.
    pub max_count: Option<usize>,
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
        let walk = match self.resolve_range(rev)? {
            Some(range) => self.walk_between(&range.wants, &range.haves)?,
            None => self.walk(&[self.resolve(rev)?])?,
        };
        let mut walk = walk.touching(query.paths.clone());
        if query.follow && query.paths.len() == 1 {
            walk = walk.following_renames();
        }
        let filter = query.clone();
        let walk = walk.filter(move |info| info.as_ref().map_or(true, |i| filter.wants(&i.commit)));
        let ordered: LogCommits<'r> = match query.topo_order {
            true => Box::new(
                in_topo_order(walk.collect::<RepoResult<Vec<_>>>()?)
                    .into_iter()
                    .map(Ok),
            ),
            false => Box::new(walk),
        };
        Ok(Box::new(
            ordered
                .skip(query.skip)
                .take(query.max_count.unwrap_or(usize::MAX)),
        ))
    }
}
