//! The line-level three-way merge of text files (sidecars, EDLs, CSV labels,
//! configs beside the media), as `git merge` does it: changes to different
//! lines merge, changes to the same or touching lines become a conflict
//! section between markers. The rules are git's (xdiff's merge at its
//! "zealous" level, which `git merge` uses): a conflict is narrowed to the
//! lines the two sides really disagree on, and conflicts at most three
//! lines apart are shown as one. The line diffs are imara-diff's.

use std::ops::Range;

use imara_diff::intern::{Interner, Token};
use imara_diff::Algorithm;

/// Files larger than this are merged as binary: both sides and the base are
/// held in memory, and a line diff of hundreds of MiB is not what a person
/// asked for.
pub const MAX_TEXT_MERGE: u64 = 16 << 20;

/// How much of a file is looked at for a NUL byte, as git does.
const SNIFF_LEN: usize = 8000;

/// Conflicts at most this many lines apart are shown as one (git's rule).
const COALESCE_GAP: usize = 3;

const MARKER_SIZE: usize = 7;

/// How a conflict section is written (`merge.conflictStyle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConflictStyle {
    /// Ours and theirs, narrowed to the lines they disagree on.
    #[default]
    Merge,
    /// Ours, the base and theirs, whole.
    Diff3,
}

impl ConflictStyle {
    /// The names git gives them: `merge`, `diff3`.
    pub fn parse(name: &str) -> Option<ConflictStyle> {
        match name {
            "merge" => Some(ConflictStyle::Merge),
            "diff3" => Some(ConflictStyle::Diff3),
            _ => None,
        }
    }
}

/// Whether bytes look like text: no NUL in the first 8,000 (git's rule).
pub fn looks_like_text(bytes: &[u8]) -> bool {
    !bytes[..bytes.len().min(SNIFF_LEN)].contains(&0)
}

/// Media whose bytes are never text (a JPEG's first kilobytes hold zero
/// bytes): a line merge or a text diff would read them only to find that
/// out, so a partial replica does not fetch versions of a photo for it.
/// The end state is a full replica's: such a file is shown and merged as
/// binary. [`never_text`] says whether a path names one.
const NEVER_TEXT: [&str; 34] = [
    "jpg", "jpeg", "png", "gif", "webp", "heic", "heif", "avif", "tif", "tiff", "dng", "cr2",
    "cr3", "nef", "arw", "raf", "orf", "rw2", "psd", "exr", "mp4", "mov", "m4v", "mkv", "webm",
    "avi", "mp3", "wav", "flac", "m4a", "ogg", "opus", "zip", "pdf",
];

/// Whether `path` names one of the media whose bytes are never text (by its extension).
pub fn never_text(path: &[u8]) -> bool {
    let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
    let Some(dot) = name.iter().rposition(|b| *b == b'.') else {
        return false;
    };
    let ext = String::from_utf8_lossy(&name[dot + 1..]).to_ascii_lowercase();
    NEVER_TEXT.contains(&ext.as_str())
}

/// What a line merge produced.
#[derive(Debug, PartialEq, Eq)]
pub struct LineMerge {
    /// The merged file; with conflict sections between markers if `conflicted`.
    pub bytes: Vec<u8>,
    /// Whether some lines were changed differently on both sides.
    pub conflicted: bool,
}

/// The names written after the markers: ours (`HEAD`), the base (its short
/// id) and theirs (what was merged, as the user named it).
pub struct MarkerLabels<'a> {
    /// After `<<<<<<<`.
    pub ours: &'a str,
    /// After `|||||||` (diff3 style).
    pub base: &'a str,
    /// After `>>>>>>>`.
    pub theirs: &'a str,
}

/// One side's change to the base: base lines `base` became the side's lines `side`.
#[derive(Clone, Debug)]
struct Hunk {
    base: Range<usize>,
    side: Range<usize>,
}

/// What a stretch of the merge takes; stretches are in the order of our
/// file, and our lines between them are common to all three.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Take {
    /// Our lines (only we changed these).
    Ours,
    /// Their lines (only they changed these).
    Theirs,
    /// Both sides changed these lines the same way: our lines.
    Same,
    /// Both changed them differently.
    Conflict,
}

/// A stretch of the merge: lines of the base, of ours and of theirs.
#[derive(Clone, Debug)]
struct Stretch {
    take: Take,
    base: Range<usize>,
    ours: Range<usize>,
    theirs: Range<usize>,
}

/// Appends `next` to the stretches, joining it to the last one when they
/// overlap or touch in our lines or in theirs (a join of different takes is a conflict).
fn append(stretches: &mut Vec<Stretch>, next: Stretch) {
    if let Some(last) = stretches.last_mut() {
        if next.ours.start <= last.ours.end || next.theirs.start <= last.theirs.end {
            if last.take != next.take {
                last.take = Take::Conflict;
            }
            last.base.end = next.base.end;
            last.ours.end = next.ours.end;
            last.theirs.end = next.theirs.end;
            return;
        }
    }
    stretches.push(next);
}

/// The changes from `before` to `after`.
fn hunks(algorithm: Algorithm, before: &[Token], after: &[Token], tokens: u32) -> Vec<Hunk> {
    let mut out = Vec::new();
    imara_diff::diff_with_tokens(
        algorithm,
        before,
        after,
        tokens,
        |b: Range<u32>, a: Range<u32>| {
            out.push(Hunk {
                base: b.start as usize..b.end as usize,
                side: a.start as usize..a.end as usize,
            });
        },
    );
    out.sort_by_key(|h| h.base.start);
    out
}

/// The stretches where ours or theirs differ from the base, git's way:
/// two changes conflict when they overlap or touch in the base.
fn stretches(
    ours: &[Hunk],
    theirs: &[Hunk],
    ours_len: &[Token],
    theirs_len: &[Token],
    base_len: usize,
    same: impl Fn(&Hunk, &Hunk) -> bool,
) -> Vec<Stretch> {
    let (ours_total, theirs_total) = (ours_len.len() as isize, theirs_len.len() as isize);
    let shift = |at: usize, by: isize| (at as isize + by) as usize;
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < ours.len() && j < theirs.len() {
        let (o, t) = (&ours[i], &theirs[j]);
        // How far each side's lines are from the base's around the other's change.
        let ours_offset = o.side.start as isize - o.base.start as isize;
        let theirs_offset = t.side.start as isize - t.base.start as isize;
        if o.base.end < t.base.start {
            let theirs_at = shift(o.base.start, theirs_offset);
            append(
                &mut out,
                Stretch {
                    take: Take::Ours,
                    base: o.base.clone(),
                    ours: o.side.clone(),
                    theirs: theirs_at..theirs_at + o.base.len(),
                },
            );
            i += 1;
            continue;
        }
        if t.base.end < o.base.start {
            let ours_at = shift(t.base.start, ours_offset);
            append(
                &mut out,
                Stretch {
                    take: Take::Theirs,
                    base: t.base.clone(),
                    ours: ours_at..ours_at + t.base.len(),
                    theirs: t.side.clone(),
                },
            );
            j += 1;
            continue;
        }
        if !same(o, t) {
            // The union of both changes, each side's lines widened by the base lines only the other changed.
            let base = o.base.start.min(t.base.start)..o.base.end.max(t.base.end);
            let ours_lines = shift(base.start, ours_offset)
                ..shift(base.end, o.side.end as isize - o.base.end as isize);
            let theirs_lines = shift(base.start, theirs_offset)
                ..shift(base.end, t.side.end as isize - t.base.end as isize);
            append(
                &mut out,
                Stretch {
                    take: Take::Conflict,
                    base,
                    ours: ours_lines,
                    theirs: theirs_lines,
                },
            );
        }
        let (o_end, t_end) = (o.base.end, t.base.end);
        if o_end >= t_end {
            j += 1;
        }
        if t_end >= o_end {
            i += 1;
        }
    }
    for o in &ours[i..] {
        let theirs_at = shift(o.base.start, theirs_total - base_len as isize);
        append(
            &mut out,
            Stretch {
                take: Take::Ours,
                base: o.base.clone(),
                ours: o.side.clone(),
                theirs: theirs_at..theirs_at + o.base.len(),
            },
        );
    }
    for t in &theirs[j..] {
        let ours_at = shift(t.base.start, ours_total - base_len as isize);
        append(
            &mut out,
            Stretch {
                take: Take::Theirs,
                base: t.base.clone(),
                ours: ours_at..ours_at + t.base.len(),
                theirs: t.side.clone(),
            },
        );
    }
    out
}

/// Narrows each conflict to the lines ours and theirs disagree on (a
/// conflict may become several, or none when both made the same change),
/// then shows conflicts at most three lines apart as one.
fn narrow(
    stretches: Vec<Stretch>,
    ours: &[Token],
    theirs: &[Token],
    algorithm: Algorithm,
    tokens: u32,
) -> Vec<Stretch> {
    let mut out: Vec<Stretch> = Vec::new();
    for s in stretches {
        if s.take != Take::Conflict || s.ours.is_empty() || s.theirs.is_empty() {
            out.push(s);
            continue;
        }
        let inner = hunks(
            algorithm,
            &ours[s.ours.clone()],
            &theirs[s.theirs.clone()],
            tokens,
        );
        if inner.is_empty() {
            out.push(Stretch {
                take: Take::Same,
                ..s
            });
            continue;
        }
        for h in inner {
            let o = s.ours.start + h.base.start..s.ours.start + h.base.end;
            let t = s.theirs.start + h.side.start..s.theirs.start + h.side.end;
            // The base is not shown in this style; the whole base of the conflict is kept.
            out.push(Stretch {
                take: Take::Conflict,
                base: s.base.clone(),
                ours: o,
                theirs: t,
            });
        }
    }
    let mut joined: Vec<Stretch> = Vec::new();
    for s in out {
        if let Some(last) = joined.last_mut() {
            if last.take == Take::Conflict
                && s.take == Take::Conflict
                && s.ours.start - last.ours.end <= COALESCE_GAP
            {
                last.ours.end = s.ours.end;
                last.theirs.end = s.theirs.end;
                continue;
            }
        }
        joined.push(s);
    }
    joined
}

/// Lines with their terminators (the last may have none).
fn lines(text: &[u8]) -> Vec<&[u8]> {
    text.split_inclusive(|b| *b == b'\n').collect()
}

/// Merges `ours` and `theirs`, both changed from `base`, line by line.
pub fn merge_lines(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    labels: &MarkerLabels<'_>,
    style: ConflictStyle,
) -> LineMerge {
    merge_lines_with(base, ours, theirs, labels, style, LineDiff::Histogram)
}

/// Which line diff a merge uses: `git merge` diffs with histogram, `git merge-file` with Myers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineDiff {
    /// As `git merge`.
    Histogram,
    /// As `git merge-file`.
    Myers,
}

/// [`merge_lines`] with a chosen line diff.
pub fn merge_lines_with(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    labels: &MarkerLabels<'_>,
    style: ConflictStyle,
    diff: LineDiff,
) -> LineMerge {
    let algorithm = match diff {
        LineDiff::Histogram => Algorithm::Histogram,
        LineDiff::Myers => Algorithm::Myers,
    };
    let (base_lines, ours_lines, theirs_lines) = (lines(base), lines(ours), lines(theirs));
    let mut interner: Interner<&[u8]> =
        Interner::new(base_lines.len() + ours_lines.len() + theirs_lines.len());
    let b: Vec<Token> = base_lines.iter().map(|l| interner.intern(l)).collect();
    let o: Vec<Token> = ours_lines.iter().map(|l| interner.intern(l)).collect();
    let t: Vec<Token> = theirs_lines.iter().map(|l| interner.intern(l)).collect();
    let count = interner.num_tokens();
    let (ours_hunks, theirs_hunks) = (
        hunks(algorithm, &b, &o, count),
        hunks(algorithm, &b, &t, count),
    );
    let same = |x: &Hunk, y: &Hunk| x.base == y.base && o[x.side.clone()] == t[y.side.clone()];
    let mut merged = stretches(&ours_hunks, &theirs_hunks, &o, &t, b.len(), same);
    if style == ConflictStyle::Merge {
        merged = narrow(merged, &o, &t, algorithm, count);
    }

    let mut out = Vec::with_capacity(ours.len().max(theirs.len()));
    let mut conflicted = false;
    let mut at = 0;
    let copy = |out: &mut Vec<u8>, ls: &[&[u8]], range: Range<usize>, end_line: bool| {
        for l in &ls[range] {
            out.extend_from_slice(l);
        }
        if end_line && out.last().is_some_and(|b| *b != b'\n') {
            out.push(b'\n');
        }
    };
    let marker = |out: &mut Vec<u8>, c: u8, label: &str| {
        out.extend(std::iter::repeat_n(c, MARKER_SIZE));
        if !label.is_empty() {
            out.push(b' ');
            out.extend_from_slice(label.as_bytes());
        }
        out.push(b'\n');
    };
    for s in &merged {
        if s.take == Take::Same {
            continue;
        }
        copy(&mut out, &ours_lines, at..s.ours.start, false);
        match s.take {
            Take::Ours | Take::Same => copy(&mut out, &ours_lines, s.ours.clone(), false),
            Take::Theirs => copy(&mut out, &theirs_lines, s.theirs.clone(), false),
            Take::Conflict => {
                conflicted = true;
                marker(&mut out, b'<', labels.ours);
                copy(&mut out, &ours_lines, s.ours.clone(), !s.ours.is_empty());
                if style == ConflictStyle::Diff3 {
                    marker(&mut out, b'|', labels.base);
                    copy(&mut out, &base_lines, s.base.clone(), !s.base.is_empty());
                }
                marker(&mut out, b'=', "");
                copy(
                    &mut out,
                    &theirs_lines,
                    s.theirs.clone(),
                    !s.theirs.is_empty(),
                );
                marker(&mut out, b'>', labels.theirs);
            }
        }
        at = s.ours.end;
    }
    copy(&mut out, &ours_lines, at..ours_lines.len(), false);
    LineMerge {
        bytes: out,
        conflicted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABELS: MarkerLabels<'static> = MarkerLabels {
        ours: "HEAD",
        base: "1234567",
        theirs: "feature",
    };

    #[test]
    fn changes_to_different_lines_merge() {
        let m = merge_lines(
            b"a\nb\nc\nd\n",
            b"A\nb\nc\nd\n",
            b"a\nb\nc\nD\n",
            &LABELS,
            ConflictStyle::Merge,
        );
        assert_eq!(
            m,
            LineMerge {
                bytes: b"A\nb\nc\nD\n".to_vec(),
                conflicted: false
            }
        );
    }

    #[test]
    fn the_same_line_changed_twice_is_marked_as_git_marks_it() {
        // Golden: what git 2.39's `merge` writes for the same three files.
        let m = merge_lines(
            b"a\nb\nc\n",
            b"a\nB1\nc\n",
            b"a\nB2\nc\n",
            &LABELS,
            ConflictStyle::Merge,
        );
        assert!(m.conflicted);
        assert_eq!(
            String::from_utf8(m.bytes).unwrap(),
            "a\n<<<<<<< HEAD\nB1\n=======\nB2\n>>>>>>> feature\nc\n"
        );
        let m = merge_lines(
            b"a\nb\nc\n",
            b"a\nB1\nc\n",
            b"a\nB2\nc\n",
            &LABELS,
            ConflictStyle::Diff3,
        );
        assert_eq!(
            String::from_utf8(m.bytes).unwrap(),
            "a\n<<<<<<< HEAD\nB1\n||||||| 1234567\nb\n=======\nB2\n>>>>>>> feature\nc\n"
        );
    }

    #[test]
    fn touching_changes_conflict_and_a_missing_last_newline_is_kept_apart() {
        // Ours changes the last line, theirs adds one after it: git calls that a conflict.
        let m = merge_lines(
            b"b\na\n",
            b"b\nb",
            b"b\na\na",
            &LABELS,
            ConflictStyle::Merge,
        );
        assert!(m.conflicted);
        assert_eq!(
            String::from_utf8(m.bytes).unwrap(),
            "b\n<<<<<<< HEAD\nb\n=======\na\na\n>>>>>>> feature\n"
        );
    }

    #[test]
    fn text_is_told_from_binary_by_a_nul_in_the_first_8000_bytes() {
        assert!(looks_like_text(b"caf\xc3\xa9\r\n"));
        assert!(!looks_like_text(b"\xff\xd8\xff\xe0\0\x10JFIF"));
        let mut late = vec![b'x'; SNIFF_LEN];
        late.push(0);
        assert!(looks_like_text(&late));
    }
}
