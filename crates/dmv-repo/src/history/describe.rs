//! A commit named after the nearest tag, as `git describe` names it: the
//! tag itself when it points at the commit, else the tag and how many
//! commits the commit's history holds that the tag's does not. Tags are
//! found by git's walk (newest committer time first, at most ten
//! candidates, the one with the fewest commits on top winning, the first
//! found among equals), so the same history gets the same name.

use std::collections::{HashMap, VecDeque};

use dmv_store::{ObjectId, ObjectKind};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::ref_names::TAGS;
use crate::repository::handles::History;
use crate::{RepoError, RepoResult};

/// How many tags the walk weighs before it stops looking (git's default).
const MAX_CANDIDATES: usize = 10;

/// A tag as a name for the commit it points at.
#[derive(Clone, Debug)]
struct Name {
    /// What is shown: an annotated tag's own name, a lightweight tag's ref name.
    name: String,
    /// 2: annotated, 1: lightweight (git's priorities).
    prio: u8,
    /// An annotated tag's time, to prefer the newer of two on one commit.
    time: i64,
}

/// What [`History::describe`] found for a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Description {
    /// The nearest tag and how many commits lie between it and the
    /// commit (0: the tag points at the commit itself).
    Tag {
        /// The tag's name (an annotated tag's own name).
        name: String,
        /// Commits the described commit's history holds that the tag's does not.
        depth: usize,
        /// The commit the tag points at.
        tagged: ObjectId,
    },
    /// No tag describes the commit.
    Nothing {
        /// Whether the repository has any tag at all.
        any_tags: bool,
        /// Whether lightweight tags were passed over (only annotated ones were asked for).
        lightweight_passed_over: bool,
    },
}

/// A tag met in the walk, and the commits seen since that it does not reach.
struct Candidate {
    name: Name,
    tagged: ObjectId,
    depth: usize,
    within: u64,
    found_order: usize,
}

/// The walk's flag for a commit queued once.
const SEEN: u64 = 1;

/// Which tags may name a commit (`describe --match`, `--exclude`): globs
/// over a tag's ref name without `refs/tags/`, as git's wildmatch reads
/// them (a `*` matches `/` too).
#[derive(Clone, Debug, Default)]
pub(crate) struct TagFilter {
    matching: Option<GlobSet>,
    excluding: Option<GlobSet>,
}

impl TagFilter {
    /// Tags matching one of `matching` (any tag when none are given) and
    /// none of `excluding`; a glob that cannot be read is refused.
    pub(crate) fn new(matching: &[String], excluding: &[String]) -> RepoResult<TagFilter> {
        let set = |globs: &[String]| -> RepoResult<Option<GlobSet>> {
            if globs.is_empty() {
                return Ok(None);
            }
            let mut set = GlobSetBuilder::new();
            for g in globs {
                let glob = GlobBuilder::new(g)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| RepoError::BadPattern {
                        pattern: g.clone(),
                        detail: e.kind().to_string(),
                    })?;
                set.add(glob);
            }
            set.build().map(Some).map_err(|e| RepoError::BadPattern {
                pattern: globs.join(" "),
                detail: e.to_string(),
            })
        };
        Ok(TagFilter {
            matching: set(matching)?,
            excluding: set(excluding)?,
        })
    }

    /// Whether the tag `name` (its ref name without `refs/tags/`) may name a commit.
    pub(crate) fn admits(&self, name: &str) -> bool {
        self.matching.as_ref().is_none_or(|m| m.is_match(name))
            && self.excluding.as_ref().is_none_or(|x| !x.is_match(name))
    }
}

impl History<'_> {
    /// The nearest tag of `commit`: annotated tags only unless
    /// `lightweight`, and of those only tags whose name (without
    /// `refs/tags/`) matches one of the globs `matching` (any, when none is
    /// given) and none of `excluding`, as git's `--match` and `--exclude`
    /// read them (a `*` matches `/` too). A glob that cannot be read is refused.
    pub fn describe(
        &self,
        commit: &ObjectId,
        lightweight: bool,
        matching: &[String],
        excluding: &[String],
    ) -> RepoResult<Description> {
        let filter = TagFilter::new(matching, excluding)?;
        let names = self.tag_names(&filter)?;
        if let Some(n) = names.get(commit) {
            if lightweight || n.prio == 2 {
                return Ok(Description::Tag {
                    name: n.name.clone(),
                    depth: 0,
                    tagged: *commit,
                });
            }
        }
        let mut dates: HashMap<ObjectId, (i64, Vec<ObjectId>)> = HashMap::new();
        let mut read = |id: &ObjectId| -> RepoResult<(i64, Vec<ObjectId>)> {
            if let Some(known) = dates.get(id) {
                return Ok(known.clone());
            }
            let c = self.commit(id)?;
            let entry = (c.committer.time, c.parents);
            dates.insert(*id, entry.clone());
            Ok(entry)
        };
        let mut flags: HashMap<ObjectId, u64> = HashMap::from([(*commit, SEEN)]);
        let mut list: VecDeque<(i64, ObjectId)> = VecDeque::from([(read(commit)?.0, *commit)]);
        let mut matches: Vec<Candidate> = Vec::new();
        let (mut annotated, mut passed_over) = (0usize, 0usize);
        let mut gave_up_on = None;
        let mut seen = 0usize;
        while let Some((_, c)) = list.pop_front() {
            seen += 1;
            if let Some(n) = names.get(&c) {
                if !lightweight && n.prio < 2 {
                    passed_over += 1;
                } else if matches.len() < MAX_CANDIDATES {
                    let within = 1u64 << (matches.len() + 1);
                    matches.push(Candidate {
                        name: n.clone(),
                        tagged: c,
                        depth: seen - 1,
                        within,
                        found_order: matches.len(),
                    });
                    *flags.entry(c).or_default() |= within;
                    if n.prio == 2 {
                        annotated += 1;
                    }
                } else {
                    gave_up_on = Some(c);
                    break;
                }
            }
            let mine = flags.get(&c).copied().unwrap_or_default();
            for m in &mut matches {
                if mine & m.within == 0 {
                    m.depth += 1;
                }
            }
            // Stop once the last path left is covered by the best candidates.
            if annotated > 0 && list.is_empty() {
                let best = matches.iter().map(|m| m.depth).min().unwrap_or(0);
                let best_within = matches
                    .iter()
                    .filter(|m| m.depth == best)
                    .fold(0, |f, m| f | m.within);
                if mine & best_within == best_within {
                    break;
                }
            }
            for p in read(&c)?.1 {
                let f = flags.entry(p).or_default();
                if *f & SEEN == 0 {
                    insert_by_date(&mut list, (read(&p)?.0, p));
                }
                *flags.entry(p).or_default() |= mine | SEEN;
            }
        }
        if matches.is_empty() {
            return Ok(Description::Nothing {
                any_tags: !names.is_empty(),
                lightweight_passed_over: passed_over > 0,
            });
        }
        matches.sort_by_key(|m| (m.depth, m.found_order));
        if let Some(c) = gave_up_on {
            insert_by_date(&mut list, (read(&c)?.0, c));
        }
        let best = &mut matches[0];
        // Finish counting for the best: the commits left that it does not reach.
        while let Some((_, c)) = list.pop_front() {
            let mine = flags.get(&c).copied().unwrap_or_default();
            if mine & best.within != 0 {
                if list
                    .iter()
                    .all(|(_, i)| flags.get(i).copied().unwrap_or_default() & best.within != 0)
                {
                    break;
                }
            } else {
                best.depth += 1;
            }
            for p in read(&c)?.1 {
                let f = flags.entry(p).or_default();
                if *f & SEEN == 0 {
                    insert_by_date(&mut list, (read(&p)?.0, p));
                }
                *flags.entry(p).or_default() |= mine | SEEN;
            }
        }
        Ok(Description::Tag {
            name: best.name.name.clone(),
            depth: best.depth,
            tagged: best.tagged,
        })
    }

    /// Each tagged commit's name: an annotated tag before a lightweight
    /// one, the newer of two annotated ones, else the first in ref order.
    fn tag_names(&self, filter: &TagFilter) -> RepoResult<HashMap<ObjectId, Name>> {
        let mut names: HashMap<ObjectId, Name> = HashMap::new();
        for (full, id) in self.refs.list(TAGS)? {
            if !filter.admits(full.strip_prefix(TAGS).unwrap_or(&full)) {
                continue;
            }
            let peeled = self.peel(&id)?;
            if self.store.kind_of(&peeled)? != ObjectKind::Commit {
                continue;
            }
            let name = match self.store.kind_of(&id)? {
                ObjectKind::Tag => {
                    let tag = self.annotated_tag(&id)?;
                    Name {
                        name: tag.name,
                        prio: 2,
                        time: tag.tagger.time,
                    }
                }
                _ => Name {
                    name: full.strip_prefix(TAGS).unwrap_or(&full).to_string(),
                    prio: 1,
                    time: 0,
                },
            };
            let better = match names.get(&peeled) {
                None => true,
                Some(old) => {
                    old.prio < name.prio
                        || (old.prio == 2 && name.prio == 2 && old.time < name.time)
                }
            };
            if better {
                names.insert(peeled, name);
            }
        }
        Ok(names)
    }
}

/// Queues `item` after every commit at least as new (git's
/// `commit_list_insert_by_date`).
fn insert_by_date(list: &mut VecDeque<(i64, ObjectId)>, item: (i64, ObjectId)) {
    let at = list
        .iter()
        .position(|(t, _)| *t < item.0)
        .unwrap_or(list.len());
    list.insert(at, item);
}

#[cfg(test)]
mod tests {
    use super::TagFilter;

    #[test]
    fn tags_are_matched_and_excluded_by_glob() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let any = TagFilter::new(&[], &[]).unwrap();
        assert!(any.admits("v1") && any.admits("base"));
        let f = TagFilter::new(&s(&["v*"]), &s(&["v2*"])).unwrap();
        assert!(f.admits("v1") && f.admits("v1/rc"));
        assert!(!f.admits("v2") && !f.admits("base"));
        assert!(TagFilter::new(&s(&["v[1"]), &[]).is_err());
    }
}
