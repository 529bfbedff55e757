//! Write grants by path: a served repository lets a writer change only the
//! paths its grant names (`write = ["art/**"]` in a server's token), the
//! lead everything. A grant is a list of patterns in `.dmvattributes`'s
//! syntax (a pattern without `/` matches a name in any folder, one with `/`
//! matches from the root, `**` any run of folders); a pattern also covers
//! everything beneath a folder it matches (`art` covers `art/a.psd`).
//!
//! The rule ([`refuse_moves_outside_grant`]) judges what a set of ref moves
//! does, whatever route the change takes: every commit the moves bring to
//! the hub (those no ref there reaches) may change only granted paths, a
//! merge counting as changing a path where it keeps neither what a clean
//! three-way merge of its sides gives; every commit a move drops from its
//! ref (a force push, a reset) may have changed only granted paths; and a
//! ref may be deleted only when the grant covers every path its tip holds.
//! Hubs of every kind (a directory, a server in front of a bucket) call it
//! atomically with their ref swap, reading objects wherever they keep them
//! ([`GrantObjects`]).

use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

use dmv_store::object::{Commit, EntryKind, TreeNode};
use dmv_store::ObjectId;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::RepoResult;
use crate::history::tree::read_dir_with;

/// Patterns in one grant, at most.
pub const MAX_WRITE_PATTERNS: usize = 256;
/// Bytes of one pattern, at most.
pub const MAX_WRITE_PATTERN_BYTES: usize = 1024;

/// The paths a writer may change: everything, or what its patterns cover.
/// Cheap to clone (the compiled patterns are shared).
#[derive(Clone)]
pub struct WriteGrant(Option<Arc<Patterns>>);

struct Patterns {
    /// As given, for messages and listings.
    given: Vec<String>,
    /// Each pattern, matching a path it covers (or a folder above it).
    set: GlobSet,
    /// The folder part of each pattern ending in `/**`: a folder it
    /// matches is granted whole.
    whole: GlobSet,
}

impl Default for WriteGrant {
    /// Everything: a token without a `write` list.
    fn default() -> Self {
        WriteGrant::everything()
    }
}

impl std::fmt::Debug for WriteGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("WriteGrant(everything)"),
            Some(p) => f.debug_tuple("WriteGrant").field(&p.given).finish(),
        }
    }
}

impl PartialEq for WriteGrant {
    fn eq(&self, other: &Self) -> bool {
        self.patterns() == other.patterns()
    }
}

impl Eq for WriteGrant {}

/// The glob a pattern compiles to (`.dmvattributes`'s reading).
fn glob_of(pattern: &str) -> String {
    let anchored = pattern.trim_start_matches('/');
    if pattern.contains('/') {
        anchored.trim_end_matches('/').to_string()
    } else {
        format!("**/{pattern}")
    }
}

impl WriteGrant {
    /// A grant of every path (the lead, an admin, any token without a list).
    pub fn everything() -> WriteGrant {
        WriteGrant(None)
    }

    /// A grant of no path (what a list that cannot be read grants).
    pub fn nothing() -> WriteGrant {
        WriteGrant(Some(Arc::new(Patterns {
            given: Vec::new(),
            set: GlobSet::empty(),
            whole: GlobSet::empty(),
        })))
    }

    /// The grant of `patterns`, held to [`MAX_WRITE_PATTERNS`] and
    /// [`MAX_WRITE_PATTERN_BYTES`]; a pattern `**` grants everything. A
    /// refusal is one line naming the pattern. An empty list grants nothing.
    pub fn parse(patterns: &[String]) -> Result<WriteGrant, String> {
        if patterns.len() > MAX_WRITE_PATTERNS {
            return Err(format!(
                "{} write patterns, past the {MAX_WRITE_PATTERNS} allowed",
                patterns.len()
            ));
        }
        let mut set = GlobSetBuilder::new();
        let mut whole = GlobSetBuilder::new();
        for p in patterns {
            let shown: String = p.chars().take(40).collect();
            if p.len() > MAX_WRITE_PATTERN_BYTES {
                return Err(format!(
                    "write pattern {shown:?}… is {} bytes, past the {MAX_WRITE_PATTERN_BYTES} allowed",
                    p.len()
                ));
            }
            if p.is_empty() || p.trim() != p || p.chars().any(char::is_control) {
                return Err(format!(
                    "write pattern {shown:?} is empty, or starts or ends with a space, or holds a control character"
                ));
            }
            if p == "**" || p == "/**" {
                return Ok(WriteGrant::everything());
            }
            let glob = glob_of(p);
            let build = |g: &str| {
                GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| format!("write pattern {shown:?} is not a glob: {}", e.kind()))
            };
            set.add(build(&glob)?);
            if let Some(folder) = glob.strip_suffix("/**") {
                whole.add(build(folder)?);
            }
        }
        let built = |b: GlobSetBuilder| {
            b.build()
                .map_err(|e| format!("the write patterns are too large to match: {e}"))
        };
        Ok(WriteGrant(Some(Arc::new(Patterns {
            given: patterns.to_vec(),
            set: built(set)?,
            whole: built(whole)?,
        }))))
    }

    /// Whether every path is granted.
    pub fn is_everything(&self) -> bool {
        self.0.is_none()
    }

    /// The patterns as given (None: everything).
    pub fn patterns(&self) -> Option<&[String]> {
        self.0.as_ref().map(|p| p.given.as_slice())
    }

    /// Whether the grant covers `path` ('/'-separated, from the root): a
    /// pattern matches it or a folder above it. A path that is not UTF-8 is
    /// covered only by a grant of everything.
    pub fn covers(&self, path: &[u8]) -> bool {
        let Some(p) = &self.0 else { return true };
        let Ok(path) = std::str::from_utf8(path) else {
            return false;
        };
        let path = path.trim_matches('/');
        prefixes(path).any(|at| p.set.is_match(at) || p.whole.is_match(at))
    }

    /// Whether the grant covers every path beneath folder `dir` (so a walk
    /// need not look inside it).
    fn covers_all_under(&self, dir: &[u8]) -> bool {
        self.covers(dir)
    }
}

/// `a/b/c`, then `a/b`, then `a`.
fn prefixes(path: &str) -> impl Iterator<Item = &str> {
    let mut end = Some(path.len());
    std::iter::from_fn(move || {
        let at = end?;
        let p = &path[..at];
        end = p.rfind('/');
        Some(p).filter(|p| !p.is_empty())
    })
}

/// Where a hub keeps its objects, for the rules of grants and of locks:
/// commits (an annotated tag read as its commit) and tree nodes.
pub trait GrantObjects {
    /// The commit `id` names, or the commit of the annotated tag it names,
    /// with that commit's id.
    fn commit(&self, id: &ObjectId) -> RepoResult<(ObjectId, Commit)>;
    /// A tree node.
    fn tree_node(&self, id: &ObjectId) -> RepoResult<TreeNode>;
}

/// A ref as an update would move it (`None`: absent before, or deleted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefMove<'a> {
    /// The ref's full name.
    pub name: &'a str,
    /// Where it is now.
    pub old: Option<ObjectId>,
    /// Where it would be.
    pub new: Option<ObjectId>,
}

/// A path a set of ref moves would change outside the writer's grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Breach {
    /// The path ('/'-separated, from the root).
    pub path: String,
    /// How the moves change it, e.g. "commit 1a2b3c4d5e6f changes it".
    pub how: String,
}

/// The rule of write grants (module doc): the first path that `moves`
/// (from the hub's refs as they are, whose tips are `tips`) change
/// outside `grant`, and how; None when everything they change is granted.
/// A grant of everything reads nothing.
pub fn refuse_moves_outside_grant(
    grant: &WriteGrant,
    moves: &[RefMove<'_>],
    tips: &[ObjectId],
    objects: &dyn GrantObjects,
) -> RepoResult<Option<Breach>> {
    if grant.is_everything() {
        return Ok(None);
    }
    let mut judged: HashSet<ObjectId> = HashSet::new();
    for m in moves.iter().filter(|m| m.old != m.new) {
        let name = short_name(m.name);
        if let Some(new) = m.new {
            let brought = only_reachable_from(objects, &[new], tips)?;
            let found = first_change_outside(grant, objects, brought, &mut judged, &|c| {
                format!("commit {} changes it", c.short())
            })?;
            if found.is_some() {
                return Ok(found);
            }
        }
        match (m.old, m.new) {
            (Some(old), Some(new)) => {
                let dropped = only_reachable_from(objects, &[old], &[new])?;
                let found =
                    first_change_outside(grant, objects, dropped, &mut HashSet::new(), &|c| {
                        format!(
                            "{name} would no longer hold commit {}, which changes it",
                            c.short()
                        )
                    })?;
                if found.is_some() {
                    return Ok(found);
                }
            }
            (Some(old), None) => {
                let (_, tip) = objects.commit(&old)?;
                let mut first = None;
                walk_changes(
                    grant,
                    objects,
                    &mut Vec::new(),
                    Some(tip.tree),
                    &Sides::nothing(),
                    &mut first,
                )?;
                if let Some(path) = first {
                    return Ok(Some(Breach {
                        path,
                        how: format!(
                            "deleting {name} takes it away (a ref may be deleted only by a writer granted every path it holds)"
                        ),
                    }));
                }
            }
            _ => {}
        }
    }
    Ok(None)
}

/// The first of `commits` (passing over those in `judged`, and adding
/// each it judges) that changes a path outside `grant`, said with `how`.
fn first_change_outside(
    grant: &WriteGrant,
    objects: &dyn GrantObjects,
    commits: Vec<ObjectId>,
    judged: &mut HashSet<ObjectId>,
    how: &dyn Fn(&ObjectId) -> String,
) -> RepoResult<Option<Breach>> {
    for c in commits {
        if !judged.insert(c) {
            continue;
        }
        if let Some(path) = change_outside(grant, objects, &c)? {
            return Ok(Some(Breach { path, how: how(&c) }));
        }
    }
    Ok(None)
}

/// The first path commit `id` changes beyond what a clean merge of its
/// parents holds (None: nothing of its own): a merge that lands a review
/// must be that merge, not the merge and a change nobody approved.
pub fn first_change_of_its_own(
    objects: &dyn GrantObjects,
    id: &ObjectId,
) -> RepoResult<Option<String>> {
    change_outside(&WriteGrant::nothing(), objects, id)
}

fn short_name(name: &str) -> &str {
    name.strip_prefix(crate::ref_names::BRANCHES)
        .or_else(|| name.strip_prefix(crate::ref_names::TAGS))
        .unwrap_or(name)
}

/// What a commit's entries are judged against: its parents, and for a
/// merge of two, the bases of its sides.
struct Sides {
    parents: Vec<Option<ObjectId>>,
    bases: Vec<Option<ObjectId>>,
}

impl Sides {
    fn nothing() -> Sides {
        Sides {
            parents: Vec::new(),
            bases: Vec::new(),
        }
    }
}

/// The first path outside `grant` that commit `id` changes (None: none).
fn change_outside(
    grant: &WriteGrant,
    objects: &dyn GrantObjects,
    id: &ObjectId,
) -> RepoResult<Option<String>> {
    let (_, commit) = objects.commit(id)?;
    let mut parents = Vec::with_capacity(commit.parents.len());
    for p in &commit.parents {
        parents.push(Some(objects.commit(p)?.1.tree));
    }
    let mut bases = Vec::new();
    if let [a, b] = commit.parents[..] {
        for base in merge_bases(objects, a, b)? {
            bases.push(Some(objects.commit(&base)?.1.tree));
        }
        if bases.is_empty() {
            // Unrelated sides: each added what it holds.
            bases.push(None);
        }
    }
    let mut first = None;
    walk_changes(
        grant,
        objects,
        &mut Vec::new(),
        Some(commit.tree),
        &Sides { parents, bases },
        &mut first,
    )?;
    Ok(first)
}

/// What a clean merge of `parents` over `bases` holds where each holds
/// the values given (None: a conflict, whatever is chosen is the merge's
/// own change). No parents: `absent`; all parents alike: theirs;
/// two parents: the side that changed it from every base.
fn clean<T: PartialEq + Copy>(parents: &[T], bases: &[T], absent: T) -> Option<T> {
    match parents {
        [] => Some(absent),
        [first, rest @ ..] if rest.iter().all(|p| p == first) => Some(*first),
        [a, b] if !bases.is_empty() && bases.iter().all(|x| x == a) => Some(*b),
        [a, b] if !bases.is_empty() && bases.iter().all(|x| x == b) => Some(*a),
        _ => None,
    }
}

type Leaf = Option<(EntryKind, ObjectId)>;

/// Walks folder `dir` of a commit (`at` its path) against the same folder
/// of its sides, setting `first` to the first path the commit changes that
/// the grant does not cover. Folders the commit holds as a clean merge
/// would, and folders granted whole, are not read.
fn walk_changes(
    grant: &WriteGrant,
    objects: &dyn GrantObjects,
    at: &mut Vec<u8>,
    dir: Option<ObjectId>,
    sides: &Sides,
    first: &mut Option<String>,
) -> RepoResult<()> {
    if first.is_some() || clean(&sides.parents, &sides.bases, None) == Some(dir) {
        return Ok(());
    }
    if !at.is_empty() && grant.covers_all_under(at) {
        return Ok(());
    }
    let read = |id: &ObjectId| objects.tree_node(id);
    let list = |d: &Option<ObjectId>| -> RepoResult<BTreeMap<Vec<u8>, (EntryKind, ObjectId)>> {
        Ok(match d {
            None => BTreeMap::new(),
            Some(d) => read_dir_with(&read, d)?
                .into_iter()
                .map(|e| (e.name, (e.kind, e.id)))
                .collect(),
        })
    };
    let here = list(&dir)?;
    let parents = sides
        .parents
        .iter()
        .map(list)
        .collect::<RepoResult<Vec<_>>>()?;
    let bases = sides
        .bases
        .iter()
        .map(list)
        .collect::<RepoResult<Vec<_>>>()?;
    let mut names: Vec<&Vec<u8>> = here.keys().collect();
    for listing in parents.iter().chain(&bases) {
        names.extend(listing.keys());
    }
    names.sort_unstable();
    names.dedup();
    let leaf = |l: &BTreeMap<Vec<u8>, (EntryKind, ObjectId)>, name: &Vec<u8>| -> Leaf {
        l.get(name).copied().filter(|(k, _)| *k != EntryKind::Dir)
    };
    let folder = |l: &BTreeMap<Vec<u8>, (EntryKind, ObjectId)>, name: &Vec<u8>| {
        l.get(name)
            .filter(|(k, _)| *k == EntryKind::Dir)
            .map(|(_, id)| *id)
    };
    for name in names {
        let len = at.len();
        if !at.is_empty() {
            at.push(b'/');
        }
        at.extend_from_slice(name);
        let mine = leaf(&here, name);
        let theirs: Vec<Leaf> = parents.iter().map(|l| leaf(l, name)).collect();
        let based: Vec<Leaf> = bases.iter().map(|l| leaf(l, name)).collect();
        if clean(&theirs, &based, None) != Some(mine) && !grant.covers(at) {
            *first = Some(String::from_utf8_lossy(at).into_owned());
            return Ok(());
        }
        let inner = Sides {
            parents: parents.iter().map(|l| folder(l, name)).collect(),
            bases: bases.iter().map(|l| folder(l, name)).collect(),
        };
        walk_changes(grant, objects, at, folder(&here, name), &inner, first)?;
        if first.is_some() {
            return Ok(());
        }
        at.truncate(len);
    }
    Ok(())
}

const FROM_WANTS: u8 = 1;
const FROM_HAVES: u8 = 2;

/// A walk of commits newest first (by committer time, then id) from two
/// sides, each commit marked with the sides that reach it.
struct Painting<'o> {
    objects: &'o dyn GrantObjects,
    marks: HashMap<ObjectId, u8>,
    /// Time and parents of each commit read.
    read: HashMap<ObjectId, (i64, Vec<ObjectId>)>,
    queue: BinaryHeap<(i64, ObjectId)>,
    queued: HashSet<ObjectId>,
}

impl<'o> Painting<'o> {
    fn new(objects: &'o dyn GrantObjects) -> Painting<'o> {
        Painting {
            objects,
            marks: HashMap::new(),
            read: HashMap::new(),
            queue: BinaryHeap::new(),
            queued: HashSet::new(),
        }
    }

    /// Marks `id` (a commit, or a tag of one) as reached by `mark`; queues
    /// it again when that is news. Returns the commit's id.
    fn mark(&mut self, id: &ObjectId, mark: u8) -> RepoResult<ObjectId> {
        let id = match self.read.contains_key(id) {
            true => *id,
            false => {
                let (commit_id, commit) = self.objects.commit(id)?;
                self.read
                    .entry(commit_id)
                    .or_insert((commit.committer.time, commit.parents));
                commit_id
            }
        };
        let marks = self.marks.entry(id).or_default();
        if *marks & mark == mark {
            return Ok(id);
        }
        *marks |= mark;
        if self.queued.insert(id) {
            self.queue.push((self.read[&id].0, id));
        }
        Ok(id)
    }

    /// The newest commit queued, with its marks and parents.
    fn next(&mut self) -> Option<(ObjectId, u8, Vec<ObjectId>)> {
        let (_, id) = self.queue.pop()?;
        self.queued.remove(&id);
        Some((id, self.marks[&id], self.read[&id].1.clone()))
    }

    /// Whether the newest commit queued is as new as `time` or newer: it
    /// may still reach a commit of that time (commits of one second are
    /// common).
    fn reaches_back_to(&self, time: Option<i64>) -> bool {
        match (self.queue.peek(), time) {
            (Some((newest, _)), Some(time)) => *newest >= time,
            _ => false,
        }
    }

    /// Whether some commit queued is marked `mark` and not `not`.
    fn any_queued(&self, mark: u8, not: u8) -> bool {
        self.queued
            .iter()
            .any(|id| self.marks[id] & (mark | not) == mark)
    }
}

/// The commits reachable from `wants` and from none of `haves`: those the
/// walk marked from `wants` and not from `haves` when every commit still
/// queued is behind `haves`. A commit marked from `haves` is reached from
/// them for certain; a walk confused by commit times (a clock set wrong)
/// at worst names a commit `haves` reach too, which is then judged as if
/// new: never the other way round.
fn only_reachable_from(
    objects: &dyn GrantObjects,
    wants: &[ObjectId],
    haves: &[ObjectId],
) -> RepoResult<Vec<ObjectId>> {
    let mut walk = Painting::new(objects);
    for w in wants {
        walk.mark(w, FROM_WANTS)?;
    }
    for h in haves {
        walk.mark(h, FROM_HAVES)?;
    }
    let mut order = Vec::new();
    let mut oldest = None;
    while walk.any_queued(FROM_WANTS, FROM_HAVES) || walk.reaches_back_to(oldest) {
        let Some((id, marks, parents)) = walk.next() else {
            break;
        };
        let mark = match marks & FROM_HAVES != 0 {
            true => FROM_HAVES,
            false => {
                order.push(id);
                let time = walk.read[&id].0;
                oldest = Some(oldest.map_or(time, |o: i64| o.min(time)));
                FROM_WANTS
            }
        };
        for p in &parents {
            walk.mark(p, mark)?;
        }
    }
    // Commits met again from `haves` later (equal times) are theirs.
    let mut named = HashSet::new();
    order.retain(|id| walk.marks[id] & FROM_HAVES == 0 && named.insert(*id));
    Ok(order)
}

/// The common ancestors of `a` and `b` that the walk meets first (each
/// reached from both sides before any commit behind it).
fn merge_bases(objects: &dyn GrantObjects, a: ObjectId, b: ObjectId) -> RepoResult<Vec<ObjectId>> {
    const BOTH: u8 = FROM_WANTS | FROM_HAVES;
    const BEHIND: u8 = 4;
    let mut walk = Painting::new(objects);
    walk.mark(&a, FROM_WANTS)?;
    walk.mark(&b, FROM_HAVES)?;
    let mut bases = Vec::new();
    let mut oldest = None;
    // Until every commit queued is behind a common one, and none is as new as a base.
    while walk.queued.iter().any(|id| walk.marks[id] & BEHIND == 0) || walk.reaches_back_to(oldest)
    {
        let Some((id, marks, parents)) = walk.next() else {
            break;
        };
        let mut mark = marks & (BOTH | BEHIND);
        if mark & BOTH == BOTH {
            if mark & BEHIND == 0 && !bases.contains(&id) {
                bases.push(id);
                let time = walk.read[&id].0;
                oldest = Some(oldest.map_or(time, |o: i64| o.min(time)));
            }
            mark |= BEHIND;
        }
        for p in &parents {
            walk.mark(p, mark)?;
        }
    }
    // A base met later from another (equal times) is behind it.
    bases.retain(|id| walk.marks[id] & BEHIND == 0);
    Ok(bases)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(patterns: &[&str]) -> WriteGrant {
        WriteGrant::parse(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn patterns_cover_paths_as_dmvattributes_reads_them() {
        let art = grant(&["art/**"]);
        assert!(art.covers(b"art/hero.psd"));
        assert!(art.covers(b"art/deep/er/hero.psd"));
        assert!(art.covers(b"art"));
        assert!(!art.covers(b"artwork/x.psd"));
        assert!(!art.covers(b"code/main.rs"));
        assert!(!art.covers(b"x/art/hero.psd"));
        let folder = grant(&["art"]);
        assert!(folder.covers(b"art/hero.psd"));
        assert!(folder.covers(b"x/art/hero.psd"), "no '/': any folder");
        let rooted = grant(&["/art"]);
        assert!(rooted.covers(b"art/a"));
        assert!(!rooted.covers(b"x/art/a"));
        let psd = grant(&["*.psd", "audio/*.wav"]);
        assert!(psd.covers(b"a/b/c.psd"));
        assert!(psd.covers(b"audio/x.wav"));
        assert!(!psd.covers(b"audio/sub/x.wav"), "'*' stays in its folder");
        assert!(!psd.covers(b"c.psd.txt"));
        assert!(grant(&["**"]).is_everything());
        assert!(grant(&["art/**", "**"]).covers(b"anything"));
        assert!(!grant(&[]).covers(b"x"), "an empty list grants nothing");
        assert!(!WriteGrant::nothing().covers(b"x"));
        assert!(!art.covers(&[b'a', b'r', b't', b'/', 0xff]));
        assert!(WriteGrant::everything().covers(&[0xff]));
        assert_eq!(art, grant(&["art/**"]));
        assert_ne!(art, WriteGrant::everything());
    }

    #[test]
    fn patterns_past_their_bounds_or_broken_are_refused_in_one_line() {
        let refused = |patterns: Vec<String>, says: &str| {
            let why = WriteGrant::parse(&patterns).unwrap_err();
            assert!(why.contains(says), "{why:?} should say {says:?}");
            assert!(!why.contains('\n'), "{why:?}");
        };
        refused(vec!["a".into(); MAX_WRITE_PATTERNS + 1], "past the 256");
        assert!(WriteGrant::parse(&vec!["a/**".to_string(); MAX_WRITE_PATTERNS]).is_ok());
        refused(
            vec!["a".repeat(MAX_WRITE_PATTERN_BYTES + 1)],
            "past the 1024",
        );
        assert!(WriteGrant::parse(&["a".repeat(MAX_WRITE_PATTERN_BYTES)]).is_ok());
        refused(vec!["art/[".into()], "not a glob");
        refused(vec!["".into()], "empty");
        refused(vec![" art".into()], "space");
        refused(vec!["a\u{7}".into()], "control");
    }

    #[test]
    fn prefixes_run_from_the_path_up() {
        assert_eq!(prefixes("a/b/c").collect::<Vec<_>>(), ["a/b/c", "a/b", "a"]);
        assert_eq!(prefixes("").count(), 0);
    }

    #[test]
    fn a_clean_merge_takes_the_side_that_changed() {
        // parents' values, bases' values → what a clean merge holds
        assert_eq!(clean::<u8>(&[], &[], 9), Some(9));
        assert_eq!(clean(&[1], &[], 9), Some(1));
        assert_eq!(clean(&[1, 1], &[0], 9), Some(1));
        assert_eq!(clean(&[0, 2], &[0], 9), Some(2));
        assert_eq!(clean(&[2, 0], &[0], 9), Some(2));
        assert_eq!(clean(&[1, 2], &[0], 9), None, "both changed: a conflict");
        assert_eq!(clean(&[0, 2], &[0, 1], 9), None, "bases disagree");
        assert_eq!(clean(&[1, 1, 2], &[], 9), None);
    }
}
