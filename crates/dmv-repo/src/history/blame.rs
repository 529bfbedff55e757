//! Which commit last changed each line of a text file, as `git blame`
//! says it: parents are walked back from a commit, and where the file's
//! content changed, a line diff of the two versions says which lines the
//! commit brought; the others are followed into the parent (at a merge,
//! into each parent in turn). A file renamed whole is followed to its
//! earlier name. Each version is read whole, up to [`MAX_BLAME_BYTES`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ops::Range;

use dmv_store::object::{Commit, EntryKind, Signature};
use dmv_store::ObjectId;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{lookup, FlatEntry};
use crate::history::tree_diff::{diff_trees, find_renames, Listed};
use crate::paths::show;
use crate::repository::handles::History;

/// The largest version of a file blame reads (each is held whole, with
/// the version it is compared with): a larger one is refused.
pub const MAX_BLAME_BYTES: u64 = 64 << 20;

/// How much of a file is looked at for a NUL byte, as git does.
const BINARY_PROBE: usize = 8000;

/// The id a blame gives lines not committed yet (git's all-zero id): its
/// commit in [`Blame::commits`] is made up, by "Not Committed Yet", as git's.
pub const NOT_COMMITTED: ObjectId = ObjectId([0; 32]);

/// A commit that brought lines of a blamed file.
#[derive(Clone, Debug)]
pub struct BlamedCommit {
    /// The commit.
    pub commit: Commit,
    /// The file's path in that commit (it differs from the blamed path when
    /// the file was renamed since).
    pub path: Vec<u8>,
    /// A root commit: its lines were not changed by it, they were there
    /// from the start (git's boundary, shown `^`).
    pub boundary: bool,
    /// The first parent and the file's path there, when the file was in
    /// it (the version the commit changed).
    pub previous: Option<(ObjectId, Vec<u8>)>,
}

/// Where a line of the blamed file came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineOrigin {
    /// The commit that brought the line.
    pub commit: ObjectId,
    /// The line's number (from 1) in that commit's version of the file.
    pub line: usize,
}

/// A file's lines, each with the commit it came from.
#[derive(Clone, Debug)]
pub struct Blame {
    /// The file's content as blamed.
    pub text: Vec<u8>,
    /// Each line's bytes in `text`, without its newline.
    pub lines: Vec<Range<usize>>,
    /// Each line's origin, in the same order.
    pub origins: Vec<LineOrigin>,
    /// The commits named in `origins`.
    pub commits: HashMap<ObjectId, BlamedCommit>,
}

impl Blame {
    /// Line `i` (from 0) without its newline.
    pub fn line(&self, i: usize) -> &[u8] {
        &self.text[self.lines[i].clone()]
    }

    /// The lines (from 0, end excluded) that `git blame -L` ranges name in
    /// this file, in order, overlapping and touching ranges made one; all
    /// lines when none is given. Each range is `START,END`, `START,+COUNT`,
    /// `START,-COUNT`, `START` (to the end) or `,END` (from the first),
    /// read as git reads them; `path` names the file in a refusal.
    pub fn spans(&self, ranges: &[String], path: &[u8]) -> RepoResult<Vec<Range<usize>>> {
        let count = self.lines.len();
        if ranges.is_empty() {
            return Ok(std::iter::once(0..count)
                .filter(|r| !r.is_empty())
                .collect());
        }
        let mut spans = Vec::with_capacity(ranges.len());
        for r in ranges {
            let span =
                parse_line_range(r.as_bytes(), count).map_err(|detail| RepoError::BadSetting {
                    key: format!("the line range {r:?}"),
                    detail: detail.for_file(&show(path)),
                })?;
            spans.push(span);
        }
        spans.sort_by_key(|s| s.start);
        let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
        for s in spans {
            match merged.last_mut() {
                Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
                _ => merged.push(s),
            }
        }
        Ok(merged)
    }
}

/// Why a `-L` range is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BadRange {
    /// Not a range git reads (or a form DMV does not: `/regex/`, `:funcname`).
    Unreadable,
    /// A line number below 1.
    Number(i64),
    /// `+0` or `-0`.
    Empty,
    /// A first line past the file's end.
    PastTheEnd {
        /// The file's line count.
        lines: usize,
    },
}

impl BadRange {
    /// The refusal in git's words, for the file `path`.
    fn for_file(&self, path: &str) -> String {
        match self {
            BadRange::Unreadable => {
                "not a range (START,END, START,+COUNT, START,-COUNT; line numbers from 1)".into()
            }
            BadRange::Number(n) => format!("invalid line number: {n}"),
            BadRange::Empty => "invalid empty range".into(),
            BadRange::PastTheEnd { lines: 1 } => format!("file {path} has only 1 line"),
            BadRange::PastTheEnd { lines } => format!("file {path} has only {lines} lines"),
        }
    }
}

/// A number as C's `strtol` reads it: leading spaces, a sign, digits
/// (saturating); None without digits. Also what follows it.
fn strtol(spec: &[u8]) -> Option<(i64, &[u8])> {
    let mut i = 0;
    while spec.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    let negative = spec.get(i) == Some(&b'-');
    if matches!(spec.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = spec[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let n = spec[i..i + digits].iter().fold(0i64, |n, d| {
        n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    Some((if negative { -n } else { n }, &spec[i + digits..]))
}

/// One end of a range, as git's `parse_loc`: `begin` is the line the end
/// is counted from (0 for the start, which takes no `+`/`-` count). None
/// for an end not given; the rest of `spec` after it.
fn parse_end(spec: &[u8], begin: i64) -> Result<(Option<i64>, &[u8]), BadRange> {
    if begin >= 1 && matches!(spec.first(), Some(b'+' | b'-')) {
        let Some((n, rest)) = strtol(&spec[1..]) else {
            return Ok((None, spec));
        };
        if n == 0 {
            return Err(BadRange::Empty);
        }
        let n = if spec[0] == b'-' { -n } else { n };
        let end = match n > 0 {
            true => begin.saturating_add(n) - 2,
            false => begin.saturating_add(n).max(1),
        };
        return Ok((Some(end), rest));
    }
    match strtol(spec) {
        Some((n, _)) if n <= 0 => Err(BadRange::Number(n)),
        Some((n, rest)) => Ok((Some(n), rest)),
        None if matches!(spec.first(), Some(b'/' | b'^' | b':')) => Err(BadRange::Unreadable),
        None => Ok((None, spec)),
    }
}

/// A `-L` range over a file of `lines` lines, as git's
/// `parse_range_arg` and blame read it: the lines it names from 0, end
/// excluded, an end past the file's taken back to its last line, ends
/// given the wrong way round swapped.
pub(crate) fn parse_line_range(spec: &[u8], lines: usize) -> Result<Range<usize>, BadRange> {
    let (bottom, rest) = parse_end(spec, 0)?;
    let (top, rest) = match rest.split_first() {
        Some((b',', after)) => parse_end(after, bottom.unwrap_or(0) + 1)?,
        _ => (None, rest),
    };
    if !rest.is_empty() {
        return Err(BadRange::Unreadable);
    }
    let (mut bottom, mut top) = (bottom.unwrap_or(0), top.unwrap_or(0));
    if bottom != 0 && top != 0 && top < bottom {
        std::mem::swap(&mut bottom, &mut top);
    }
    let count = lines as i64;
    if (count == 0 && (top != 0 || bottom != 0)) || count < bottom {
        return Err(BadRange::PastTheEnd { lines });
    }
    let bottom = bottom.max(1);
    if top < 1 || count < top {
        top = count;
    }
    Ok((bottom - 1) as usize..top.max(bottom - 1) as usize)
}

/// A commit whose version of the file still holds lines not settled:
/// the file's path and entry there, its content, and the lines (index in
/// the blamed file, index in this version).
struct Suspect {
    path: Vec<u8>,
    entry: FlatEntry,
    text: Vec<u8>,
    pending: Vec<(usize, usize)>,
}

impl History<'_> {
    /// Each line of `path` as of revision `rev`, with the commit that
    /// last changed it, as git blames: commits are taken newest first;
    /// a parent holding the same version takes all of a commit's lines,
    /// else each parent in turn takes the lines a line diff keeps, and
    /// what none takes is the commit's own. Refuses a folder, a binary
    /// file (a NUL byte in its first 8,000 bytes), a version larger than
    /// [`MAX_BLAME_BYTES`], and a version whose data is not here.
    pub fn blame(&self, rev: &str, path: &[u8]) -> RepoResult<Blame> {
        let start = self.resolve(rev)?;
        let entry = self.blamed_entry(rev, &start, path)?;
        let text = self.blame_text(path, &entry)?;
        if text.iter().take(BINARY_PROBE).any(|b| *b == 0) {
            return Err(RepoError::NotText { path: show(path) });
        }
        let lines = line_ranges(&text);
        let mut queue = SuspectQueue::default();
        let first = Suspect {
            path: path.to_vec(),
            entry,
            text: text.clone(),
            pending: (0..lines.len()).map(|i| (i, i)).collect(),
        };
        queue.add(self, start, first)?;
        let origins = vec![None; lines.len()];
        self.settle(text, lines, queue, origins, HashMap::new())
    }

    /// Each line of `text`, a version of `path` not committed yet (the
    /// working file), as git blames it: the lines a line diff keeps from
    /// HEAD's version are blamed there, the others are [`NOT_COMMITTED`],
    /// made by "Not Committed Yet" at `now`. Refuses binary text, and
    /// HEAD's version as [`History::blame`] does.
    pub fn blame_uncommitted(&self, path: &[u8], text: Vec<u8>, now: i64) -> RepoResult<Blame> {
        if text.iter().take(BINARY_PROBE).any(|b| *b == 0) {
            return Err(RepoError::NotText { path: show(path) });
        }
        let lines = line_ranges(&text);
        let mut pending: Vec<(usize, usize)> = (0..lines.len()).map(|i| (i, i)).collect();
        let mut queue = SuspectQueue::default();
        let head = self.head_commit()?;
        let before = match head {
            Some(h) => lookup(&self.store, &self.commit(&h)?.tree, path)?
                .filter(|e| e.kind != EntryKind::Dir)
                .map(|e| (h, e)),
            None => None,
        };
        if let Some((h, entry)) = &before {
            let head_text = self.blame_text(path, entry)?;
            if !head_text.iter().take(BINARY_PROBE).any(|b| *b == 0) {
                let kept = kept_lines(&head_text, &text);
                let mut passed = Vec::new();
                pending.retain(|&(blamed, here)| match kept[here] {
                    Some(there) => {
                        passed.push((blamed, there));
                        false
                    }
                    None => true,
                });
                if !passed.is_empty() {
                    let suspect = Suspect {
                        path: path.to_vec(),
                        entry: *entry,
                        text: head_text,
                        pending: passed,
                    };
                    queue.add(self, *h, suspect)?;
                }
            }
        }
        let mut origins = vec![None; lines.len()];
        let mut commits = HashMap::new();
        if !pending.is_empty() {
            for &(blamed, here) in &pending {
                origins[blamed] = Some(LineOrigin {
                    commit: NOT_COMMITTED,
                    line: here + 1,
                });
            }
            let shown = show(path);
            let nobody = Signature {
                name: "Not Committed Yet".into(),
                email: "not.committed.yet".into(),
                time: now,
                tz_minutes: 0,
            };
            let commit = Commit {
                tree: NOT_COMMITTED,
                parents: head.into_iter().collect(),
                author: nobody.clone(),
                committer: nobody,
                message: format!("Version of {shown} from {shown}\n"),
            };
            let previous = before.map(|(h, _)| (h, path.to_vec()));
            commits.insert(
                NOT_COMMITTED,
                BlamedCommit {
                    commit,
                    path: path.to_vec(),
                    boundary: false,
                    previous,
                },
            );
        }
        self.settle(text, lines, queue, origins, commits)
    }

    /// Takes the queued suspects newest first until every line of `text`
    /// has its origin.
    fn settle(
        &self,
        text: Vec<u8>,
        lines: Vec<Range<usize>>,
        mut queue: SuspectQueue,
        mut origins: Vec<Option<LineOrigin>>,
        mut commits: HashMap<ObjectId, BlamedCommit>,
    ) -> RepoResult<Blame> {
        while let Some((id, mut suspect)) = queue.next() {
            let commit = self.commit(&id)?;
            let mut befores = Vec::with_capacity(commit.parents.len());
            for parent in &commit.parents {
                befores.push(self.version_before(&commit, *parent, &suspect.path)?);
            }
            // A parent with the same version takes every line.
            if let Some((parent, parent_path, parent_entry)) = befores
                .iter()
                .flatten()
                .find(|(_, _, e)| e.id == suspect.entry.id)
                .cloned()
            {
                suspect.path = parent_path;
                suspect.entry = parent_entry;
                queue.add(self, parent, suspect)?;
                continue;
            }
            let previous = befores
                .iter()
                .flatten()
                .next()
                .map(|(p, path, _)| (*p, path.clone()));
            for (parent, parent_path, parent_entry) in befores.into_iter().flatten() {
                if suspect.pending.is_empty() {
                    break;
                }
                let parent_text = self.blame_text(&parent_path, &parent_entry)?;
                // A parent's binary version shares no lines with the text.
                if parent_text.iter().take(BINARY_PROBE).any(|b| *b == 0) {
                    continue;
                }
                let kept = kept_lines(&parent_text, &suspect.text);
                let mut passed = Vec::new();
                suspect.pending.retain(|&(blamed, here)| match kept[here] {
                    Some(there) => {
                        passed.push((blamed, there));
                        false
                    }
                    None => true,
                });
                if !passed.is_empty() {
                    let to_parent = Suspect {
                        path: parent_path,
                        entry: parent_entry,
                        text: parent_text,
                        pending: passed,
                    };
                    queue.add(self, parent, to_parent)?;
                }
            }
            if suspect.pending.is_empty() {
                continue;
            }
            for &(blamed, here) in &suspect.pending {
                origins[blamed] = Some(LineOrigin {
                    commit: id,
                    line: here + 1,
                });
            }
            commits.insert(
                id,
                BlamedCommit {
                    boundary: commit.parents.is_empty(),
                    path: suspect.path,
                    previous,
                    commit,
                },
            );
        }
        Ok(Blame {
            text,
            lines,
            origins: origins
                .into_iter()
                .map(|o| {
                    o.ok_or_else(|| RepoError::Scan {
                        detail: "blame left a line without its commit".into(),
                    })
                })
                .collect::<RepoResult<_>>()?,
            commits,
        })
    }

    /// The versions of `path` a blame from `rev` may read (each distinct
    /// content in the commits the file's history goes through, following
    /// whole-file renames), at most `max` of them: what a partial replica
    /// fetches before blaming.
    pub fn blame_versions(
        &self,
        rev: &str,
        path: &[u8],
        max: usize,
    ) -> RepoResult<Vec<(Vec<u8>, FlatEntry)>> {
        let start = self.resolve(rev)?;
        let entry = self.blamed_entry(rev, &start, path)?;
        let mut out: Vec<(Vec<u8>, FlatEntry)> = vec![(path.to_vec(), entry)];
        let mut seen = std::collections::HashSet::from([(start, path.to_vec())]);
        let mut stack = vec![(start, path.to_vec())];
        while let Some((id, path)) = stack.pop() {
            let commit = self.commit(&id)?;
            for parent in &commit.parents {
                if let Some((parent, parent_path, e)) =
                    self.version_before(&commit, *parent, &path)?
                {
                    if out.len() < max && !out.iter().any(|(_, o)| o.id == e.id) {
                        out.push((parent_path.clone(), e));
                    }
                    if seen.insert((parent, parent_path.clone())) {
                        stack.push((parent, parent_path));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The file `path` is in commit `start`, refused when it is not there or is a folder.
    fn blamed_entry(&self, rev: &str, start: &ObjectId, path: &[u8]) -> RepoResult<FlatEntry> {
        let tree = self.commit(start)?.tree;
        match lookup(&self.store, &tree, path)? {
            Some(e) if e.kind == EntryKind::Dir => Err(RepoError::IsAFolder { path: show(path) }),
            Some(e) => Ok(e),
            None => Err(RepoError::PathNotInRevision {
                path: show(path),
                rev: rev.to_string(),
            }),
        }
    }

    /// The file in `parent` that `path` in `commit` continues: the same
    /// path, else the file the commit renamed to it. None: the commit added it.
    fn version_before(
        &self,
        commit: &Commit,
        parent: ObjectId,
        path: &[u8],
    ) -> RepoResult<Option<(ObjectId, Vec<u8>, FlatEntry)>> {
        let parent_tree = self.commit(&parent)?.tree;
        if let Some(e) = lookup(&self.store, &parent_tree, path)? {
            return Ok((e.kind != EntryKind::Dir).then(|| (parent, path.to_vec(), e)));
        }
        let changes = diff_trees(&self.store, Some(&parent_tree), Some(&commit.tree))?;
        let from = find_renames(&self.store, changes)?
            .into_iter()
            .find_map(|l| match l {
                Listed::Renamed { from, to, .. } if to == path => Some(from),
                _ => None,
            });
        let Some(from) = from else {
            return Ok(None);
        };
        Ok(lookup(&self.store, &parent_tree, &from)?
            .filter(|e| e.kind != EntryKind::Dir)
            .map(|e| (parent, from, e)))
    }

    /// A version's content, refused past the bound or when its data is not here.
    fn blame_text(&self, path: &[u8], e: &FlatEntry) -> RepoResult<Vec<u8>> {
        if e.size > MAX_BLAME_BYTES {
            return Err(RepoError::TooLargeToRead {
                path: show(path),
                size: e.size,
                limit: MAX_BLAME_BYTES,
            });
        }
        if self.copies().is_absent(e)? {
            return Err(RepoError::DataAbsent { path: show(path) });
        }
        let mut text = Vec::with_capacity(e.size as usize);
        self.store.write_content(&e.id, &mut text)?;
        Ok(text)
    }
}

/// The suspects still to look at, newest committer time first (the
/// first queued among equals), one per commit and path: lines passed to a
/// commit already queued join its others.
#[derive(Default)]
struct SuspectQueue {
    order: BinaryHeap<(i64, Reverse<u64>, ObjectId, Vec<u8>)>,
    queued: HashMap<(ObjectId, Vec<u8>), Suspect>,
    count: u64,
}

impl SuspectQueue {
    fn add(&mut self, history: &History<'_>, id: ObjectId, suspect: Suspect) -> RepoResult<()> {
        let key = (id, suspect.path.clone());
        if let Some(known) = self.queued.get_mut(&key) {
            known.pending.extend(suspect.pending);
            return Ok(());
        }
        let time = history.commit(&id)?.committer.time;
        self.order
            .push((time, Reverse(self.count), id, suspect.path.clone()));
        self.count += 1;
        self.queued.insert(key, suspect);
        Ok(())
    }

    fn next(&mut self) -> Option<(ObjectId, Suspect)> {
        let (_, _, id, path) = self.order.pop()?;
        let suspect = self.queued.remove(&(id, path))?;
        Some((id, suspect))
    }
}

/// Each line's bytes, newline left out; a last line without one is a line too.
pub fn line_ranges(text: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in text.iter().enumerate() {
        if *b == b'\n' {
            out.push(start..i);
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push(start..text.len());
    }
    out
}

/// For each line of `after`, the line of `before` it was kept from, by a
/// line diff (Myers, as git's default); None for a line the change brought.
fn kept_lines(before: &[u8], after: &[u8]) -> Vec<Option<usize>> {
    use imara_diff::intern::InternedInput;
    use imara_diff::sources::byte_lines_with_terminator;
    let input = InternedInput::new(
        byte_lines_with_terminator(before),
        byte_lines_with_terminator(after),
    );
    let mut hunks: Vec<(Range<u32>, Range<u32>)> = Vec::new();
    imara_diff::diff(
        imara_diff::Algorithm::Myers,
        &input,
        |b: Range<u32>, a: Range<u32>| hunks.push((b, a)),
    );
    hunks.sort_by_key(|(b, _)| b.start);
    let mut kept = vec![None; input.after.len()];
    let (mut b, mut a) = (0usize, 0usize);
    for (hb, ha) in hunks {
        while a < ha.start as usize {
            kept[a] = Some(b);
            a += 1;
            b += 1;
        }
        a = ha.end as usize;
        b = hb.end as usize;
    }
    while a < kept.len() {
        kept[a] = Some(b);
        a += 1;
        b += 1;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::{kept_lines, line_ranges, parse_line_range, BadRange};
    use proptest::prelude::*;

    #[test]
    fn line_ranges_read_as_gits() {
        let r = |spec: &str| parse_line_range(spec.as_bytes(), 10);
        assert_eq!(r("2,4"), Ok(1..4));
        assert_eq!(r("3,+2"), Ok(2..4));
        assert_eq!(r("4,-2"), Ok(2..4));
        assert_eq!(r("2,-5"), Ok(0..2));
        assert_eq!(r("9"), Ok(8..10));
        assert_eq!(r("9,"), Ok(8..10));
        assert_eq!(r(",3"), Ok(0..3));
        assert_eq!(r("6,3"), Ok(2..6));
        assert_eq!(r("8,99"), Ok(7..10));
        assert_eq!(r("+3"), Ok(2..10));
        assert_eq!(r(" 2, 3"), Ok(1..3));
        assert_eq!(r("0,2"), Err(BadRange::Number(0)));
        assert_eq!(r("-2"), Err(BadRange::Number(-2)));
        assert_eq!(r("2,0"), Err(BadRange::Number(0)));
        assert_eq!(r("2,+0"), Err(BadRange::Empty));
        assert_eq!(r("11"), Err(BadRange::PastTheEnd { lines: 10 }));
        assert_eq!(r("2,x"), Err(BadRange::Unreadable));
        assert_eq!(r("/re/"), Err(BadRange::Unreadable));
        assert_eq!(r(":main"), Err(BadRange::Unreadable));
        assert_eq!(r("99999999999999999999999,1"), Ok(0..10));
        assert_eq!(
            r("99999999999999999999999"),
            Err(BadRange::PastTheEnd { lines: 10 })
        );
        assert_eq!(
            parse_line_range(b"1", 0),
            Err(BadRange::PastTheEnd { lines: 0 })
        );
        assert_eq!(parse_line_range(b"", 3), Ok(0..3));
    }

    proptest! {
        /// Any bytes: no panic, and a range read lies within the file and is not empty.
        #[test]
        fn any_range_stays_within_the_file(
            spec in proptest::collection::vec(any::<u8>(), 0..24),
            lines in 0usize..50,
        ) {
            if let Ok(r) = parse_line_range(&spec, lines) {
                prop_assert!(r.start <= r.end && r.end <= lines);
                prop_assert!(lines == 0 || r.start < r.end);
            }
        }

        /// START,END as written names those lines, whichever way round.
        #[test]
        fn start_and_end_name_their_lines(a in 1usize..40, b in 1usize..40, lines in 40usize..60) {
            let r = parse_line_range(format!("{a},{b}").as_bytes(), lines).unwrap();
            prop_assert_eq!(r, a.min(b) - 1..a.max(b));
            let r = parse_line_range(format!("{a},+{b}").as_bytes(), lines).unwrap();
            prop_assert_eq!(r, a - 1..(a + b - 1).min(lines));
        }
    }

    #[test]
    fn lines_kept_through_a_change_are_found() {
        let kept = kept_lines(b"a\nb\nc\n", b"a\nB\nc\nd\n");
        assert_eq!(kept, [Some(0), None, Some(2), None]);
        assert_eq!(kept_lines(b"", b"x\n"), [None]);
        assert_eq!(kept_lines(b"x\n", b""), Vec::<Option<usize>>::new());
    }

    #[test]
    fn a_last_line_without_a_newline_is_a_line() {
        assert_eq!(line_ranges(b"a\nbc"), [0..1, 2..4]);
        assert_eq!(line_ranges(b""), Vec::<std::ops::Range<usize>>::new());
        assert_eq!(line_ranges(b"\n").len(), 1);
        assert!(line_ranges(b"\n")[0].is_empty());
    }
}
