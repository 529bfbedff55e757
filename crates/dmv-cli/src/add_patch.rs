//! `dmv add -p`: git's interactive staging of chosen hunks. Each changed
//! text file's differences between the staging area and the working tree
//! are shown hunk by hunk, as git shows them, and the person answers for
//! each: y, n, q, a, d, s (split into smaller hunks), j/J/k/K (leave it and
//! go on or back), g (go to a hunk by its number), / (go to the next hunk
//! matching a regular expression) and ?. The chosen changes are put on the staged version
//! and that is staged whole (dmv-repo's `stage_content`, refused when the
//! file was staged again meanwhile). A deleted file is asked about as a
//! deletion; binary files and new files are left out, as git leaves them.

use std::io::{BufRead, Write};

use anyhow::Result;
use dmv_repo::{Change, DiffSide, Repository};
use similar::{ChangeTag, TextDiff};

use crate::repo_args::show_path;

/// Lines of context around a hunk, as git's.
const CONTEXT: usize = 3;

/// One line of a file's diff.
#[derive(Clone)]
struct Line {
    tag: ChangeTag,
    text: String,
}

/// A hunk as shown: the lines it covers (`start..end` of the file's lines)
/// and the change runs in it (indices into the file's runs).
#[derive(Clone)]
struct Hunk {
    start: usize,
    end: usize,
    runs: Vec<usize>,
}

/// A file's diff: its lines, its change runs (each `start..end` of the
/// lines, all removed or added, the runs split by context), and whether
/// each run is staged (None: not decided).
struct FileDiff {
    lines: Vec<Line>,
    runs: Vec<(usize, usize)>,
    chosen: Vec<Option<bool>>,
}

impl FileDiff {
    fn new(old: &str, new: &str) -> FileDiff {
        let diff = TextDiff::from_lines(old, new);
        let lines: Vec<Line> = diff
            .iter_all_changes()
            .map(|c| Line {
                tag: c.tag(),
                text: c.value().to_string(),
            })
            .collect();
        let mut runs = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            if lines[i].tag == ChangeTag::Equal {
                i += 1;
                continue;
            }
            let start = i;
            while i < lines.len() && lines[i].tag != ChangeTag::Equal {
                i += 1;
            }
            runs.push((start, i));
        }
        let chosen = vec![None; runs.len()];
        FileDiff {
            lines,
            runs,
            chosen,
        }
    }

    /// The hunks as git first shows them: runs whose contexts touch are one.
    fn hunks(&self) -> Vec<Hunk> {
        let mut hunks: Vec<Hunk> = Vec::new();
        for (r, &(start, end)) in self.runs.iter().enumerate() {
            let (from, to) = (
                start.saturating_sub(CONTEXT),
                (end + CONTEXT).min(self.lines.len()),
            );
            match hunks.last_mut() {
                Some(h) if from <= h.end => {
                    h.end = to;
                    h.runs.push(r);
                }
                _ => hunks.push(Hunk {
                    start: from,
                    end: to,
                    runs: vec![r],
                }),
            }
        }
        hunks
    }

    /// `hunk` split into one hunk per run, each with the context up to the
    /// runs beside it.
    fn split(&self, hunk: &Hunk) -> Vec<Hunk> {
        hunk.runs
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let (start, end) = self.runs[r];
                let from = match i {
                    0 => hunk.start,
                    _ => start
                        .saturating_sub(CONTEXT)
                        .max(self.runs[hunk.runs[i - 1]].1),
                };
                let to = match hunk.runs.get(i + 1) {
                    Some(&next) => (end + CONTEXT).min(self.runs[next].0),
                    None => hunk.end,
                };
                Hunk {
                    start: from,
                    end: to,
                    runs: vec![r],
                }
            })
            .collect()
    }

    /// Where `hunk` starts in the old and the new text (1-based), and its
    /// lengths there: git's `@@ -A,B +C,D @@`.
    fn header(&self, hunk: &Hunk) -> String {
        let (old_at, old_len, new_at, new_len) = self.span(hunk);
        let side = |at: usize, len: usize| match len {
            1 => format!("{at}"),
            0 => format!("{},0", at - 1),
            _ => format!("{at},{len}"),
        };
        format!(
            "@@ -{} +{} @@",
            side(old_at, old_len),
            side(new_at, new_len)
        )
    }

    /// Where `hunk` starts in the old and the new text (1-based; with no
    /// line there, the line before it) and its lengths there.
    fn span(&self, hunk: &Hunk) -> (usize, usize, usize, usize) {
        let (mut old_at, mut new_at) = (1, 1);
        for l in &self.lines[..hunk.start] {
            match l.tag {
                ChangeTag::Equal => (old_at, new_at) = (old_at + 1, new_at + 1),
                ChangeTag::Delete => old_at += 1,
                ChangeTag::Insert => new_at += 1,
            }
        }
        let covered = &self.lines[hunk.start..hunk.end];
        let old_len = covered
            .iter()
            .filter(|l| l.tag != ChangeTag::Insert)
            .count();
        let new_len = covered
            .iter()
            .filter(|l| l.tag != ChangeTag::Delete)
            .count();
        let start = |at: usize, len: usize| if len == 0 { at - 1 } else { at };
        (
            start(old_at, old_len),
            old_len,
            start(new_at, new_len),
            new_len,
        )
    }

    fn show(&self, out: &mut impl Write, hunk: &Hunk, old: &str) -> std::io::Result<()> {
        write!(out, "{}", self.rendered(hunk, old))
    }

    /// A hunk as shown, and as `/` searches it: its header, then its lines.
    fn rendered(&self, hunk: &Hunk, old: &str) -> String {
        let mut text = crate::word_diff::with_function_line(&self.header(hunk), old);
        text.push('\n');
        for l in &self.lines[hunk.start..hunk.end] {
            text.push(Self::mark(l.tag));
            text.push_str(&l.text);
            if !l.text.ends_with('\n') {
                text.push_str("\n\\ No newline at end of file\n");
            }
        }
        text
    }

    fn mark(tag: ChangeTag) -> char {
        match tag {
            ChangeTag::Equal => ' ',
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
        }
    }

    /// A hunk on one line, as `g` lists them: where it starts and how
    /// long it is on each side, padded to 20 columns, then its first
    /// changed line, the whole cut to 80 bytes.
    fn summary(&self, hunk: &Hunk) -> String {
        let (old_at, old_len, new_at, new_len) = self.span(hunk);
        let mut line = format!(" -{old_at},{old_len} +{new_at},{new_len} ");
        while line.len() < 20 {
            line.push(' ');
        }
        if let Some(l) = self.lines[hunk.start..hunk.end]
            .iter()
            .find(|l| l.tag != ChangeTag::Equal)
        {
            line.push(Self::mark(l.tag));
            line.push_str(l.text.strip_suffix('\n').unwrap_or(&l.text));
        }
        if line.len() > 80 {
            let mut cut = 80;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
        }
        line
    }

    /// The staged text with the chosen runs applied.
    fn applied(&self) -> String {
        let mut text = String::new();
        let mut run_of = vec![None; self.lines.len()];
        for (r, &(start, end)) in self.runs.iter().enumerate() {
            run_of[start..end].fill(Some(r));
        }
        for (i, l) in self.lines.iter().enumerate() {
            let staged = run_of[i].is_some_and(|r| self.chosen[r] == Some(true));
            match (l.tag, staged) {
                (ChangeTag::Equal, _) | (ChangeTag::Delete, false) | (ChangeTag::Insert, true) => {
                    text.push_str(&l.text)
                }
                _ => {}
            }
        }
        text
    }
}

const HELP: &str = "\
y - stage this hunk
n - do not stage this hunk
q - quit; do not stage this hunk or any of the remaining ones
a - stage this hunk and all later hunks in the file
d - do not stage this hunk or any of the later hunks in the file
j - leave this hunk undecided, see next undecided hunk
J - leave this hunk undecided, see next hunk
k - leave this hunk undecided, see previous undecided hunk
K - leave this hunk undecided, see previous hunk
g - select a hunk to go to
/ - search for a hunk matching the given regex
s - split the current hunk into smaller hunks
? - print help
";

/// What the person said to stop: `q` (or the end of their input).
struct Quit;

/// Asks `question` until an answer comes; None at the end of the input.
fn ask(input: &mut impl BufRead, out: &mut impl Write, question: &str) -> Result<Option<String>> {
    write!(out, "{question}")?;
    out.flush()?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        writeln!(out)?;
        return Ok(None);
    }
    Ok(Some(line.trim().to_string()))
}

/// Asks about each hunk of one file; Err(Quit) when the person quit (what
/// was chosen so far in this file is still staged).
fn choose(
    diff: &mut FileDiff,
    old: &str,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<std::result::Result<(), Quit>> {
    let mut hunks = diff.hunks();
    let mut at = 0;
    let decided = |diff: &FileDiff, h: &Hunk| h.runs.iter().all(|&r| diff.chosen[r].is_some());
    loop {
        diff.show(out, &hunks[at], old)?;
        loop {
            let undecided_before = (0..at).rev().find(|&i| !decided(diff, &hunks[i]));
            let undecided_after = (at + 1..hunks.len()).find(|&i| !decided(diff, &hunks[i]));
            let splittable = hunks[at].runs.len() > 1;
            let mut keys = String::new();
            for (allowed, key) in [
                (undecided_before.is_some(), ",k"),
                (at > 0, ",K"),
                (undecided_after.is_some(), ",j"),
                (at + 1 < hunks.len(), ",J"),
                (hunks.len() > 1, ",g,/"),
                (splittable, ",s"),
            ] {
                if allowed {
                    keys.push_str(key);
                }
            }
            let question = format!(
                "({}/{}) Stage this hunk [y,n,q,a,d{keys},?]? ",
                at + 1,
                hunks.len()
            );
            let Some(answer) = ask(input, out, &question)? else {
                return Ok(Err(Quit));
            };
            // y and n decide this hunk; a and d this one and the later undecided ones.
            let set = |diff: &mut FileDiff, hunks: &[Hunk], all_later: bool, yes: bool| {
                let to = if all_later { hunks.len() } else { at + 1 };
                for (i, h) in hunks.iter().enumerate().take(to).skip(at) {
                    for &r in &h.runs {
                        if i == at || diff.chosen[r].is_none() {
                            diff.chosen[r] = Some(yes);
                        }
                    }
                }
            };
            let next = match answer.chars().next() {
                Some('y') => {
                    set(diff, &hunks, false, true);
                    None
                }
                Some('n') => {
                    set(diff, &hunks, false, false);
                    None
                }
                Some('a') => {
                    set(diff, &hunks, true, true);
                    None
                }
                Some('d') => {
                    set(diff, &hunks, true, false);
                    None
                }
                Some('q') => return Ok(Err(Quit)),
                Some('j') if undecided_after.is_some() => undecided_after,
                Some('J') if at + 1 < hunks.len() => Some(at + 1),
                Some('k') if undecided_before.is_some() => undecided_before,
                Some('K') if at > 0 => Some(at - 1),
                // As git 2.39's, the hunk is shown again even where it stays.
                Some('g') => Some(go_to(diff, &hunks, at, &answer[1..], input, out)?.unwrap_or(at)),
                Some('/') => {
                    Some(search(diff, &hunks, at, old, &answer[1..], input, out)?.unwrap_or(at))
                }
                Some('s') if splittable => {
                    let parts = diff.split(&hunks[at]);
                    writeln!(out, "Split into {} hunks.", parts.len())?;
                    hunks.splice(at..at + 1, parts);
                    Some(at)
                }
                _ => {
                    write!(out, "{HELP}")?;
                    continue;
                }
            };
            match next {
                Some(i) => at = i,
                // Decided: the next undecided hunk after this one; with
                // none after it, the first hunk (decided or not, as git's)
                // while any is undecided.
                None => match (at + 1..hunks.len()).find(|&i| !decided(diff, &hunks[i])) {
                    Some(i) => at = i,
                    None if hunks.iter().all(|h| decided(diff, h)) => return Ok(Ok(())),
                    None => at = 0,
                },
            }
            break;
        }
    }
}

/// How many hunks `g` lists at a time.
const LISTED_AT_ONCE: usize = 20;

/// `g`: the hunk whose number was given after it, or asked for below a
/// list of the hunks (20 at a time, from 10 before this one); None (and
/// why, on standard error as git says it) when there is no such hunk.
fn go_to(
    diff: &FileDiff,
    hunks: &[Hunk],
    at: usize,
    given: &str,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<Option<usize>> {
    if hunks.len() < 2 {
        eprintln!("No other hunks to goto");
        return Ok(None);
    }
    let mut answer = given.trim().to_string();
    let mut next = at.saturating_sub(LISTED_AT_ONCE / 2);
    while answer.is_empty() {
        let end = (next + LISTED_AT_ONCE).min(hunks.len());
        for (i, h) in hunks.iter().enumerate().take(end).skip(next) {
            let decided = h.runs.iter().map(|&r| diff.chosen[r]).collect::<Vec<_>>();
            let state = match decided.first().copied().flatten() {
                Some(true) => '+',
                Some(false) => '-',
                None => ' ',
            };
            writeln!(out, "{state}{:>2}: {}", i + 1, diff.summary(h))?;
        }
        next = end;
        let question = match next < hunks.len() {
            true => "go to which hunk (<ret> to see more)? ",
            false => "go to which hunk? ",
        };
        match ask(input, out, question)? {
            Some(a) => answer = a,
            None => break,
        }
    }
    match answer.parse::<usize>() {
        Ok(n) if (1..=hunks.len()).contains(&n) => Ok(Some(n - 1)),
        Ok(_) => {
            eprintln!("Sorry, only {} hunks available.", hunks.len());
            Ok(None)
        }
        Err(_) => {
            eprintln!("Invalid number: '{answer}'");
            Ok(None)
        }
    }
}

/// `/`: the first hunk from this one on (then from the first) whose text
/// as shown has a line matching the extended regular expression given
/// after it, or asked for; None (and why, on standard error) when none does.
fn search(
    diff: &FileDiff,
    hunks: &[Hunk],
    at: usize,
    old: &str,
    given: &str,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<Option<usize>> {
    if hunks.len() < 2 {
        eprintln!("No other hunks to search");
        return Ok(None);
    }
    let mut pattern = given.to_string();
    if pattern.is_empty() {
        match ask(input, out, "search for regex? ")? {
            Some(p) if !p.is_empty() => pattern = p,
            _ => return Ok(None),
        }
    }
    let extended = dmv_repo::GrepOptions {
        syntax: dmv_repo::PatternSyntax::Extended,
        ..Default::default()
    };
    let regex = match dmv_repo::GrepPattern::new(&pattern, extended) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("Malformed search regexp {pattern}: {e}");
            return Ok(None);
        }
    };
    let found = (at..hunks.len()).chain(0..at).find(|&i| {
        diff.rendered(&hunks[i], old)
            .lines()
            .any(|l| regex.is_match(l.as_bytes()))
    });
    if found.is_none() {
        eprintln!("No hunk matches the given pattern");
    }
    Ok(found)
}

/// `dmv add -p [PATH…]`: asks about each hunk of each changed text file
/// under `specs` and stages what is chosen.
pub fn add_patch(repo: &Repository, specs: &[Vec<u8>]) -> Result<u8> {
    let mut changes: Vec<Change> = repo
        .status()?
        .unstaged
        .into_iter()
        .filter(|c| specs.is_empty() || specs.iter().any(|s| dmv_repo::path_matches(&c.path, s)))
        .collect();
    changes.sort_by(|x, y| x.path.cmp(&y.path));
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout().lock();
    let mut asked = false;
    for c in &changes {
        let path = show_path(&c.path);
        let Some(staged) = c.old else { continue };
        let old = match repo.history().diff_side(Some(&staged), None)? {
            DiffSide::Text(t) => t,
            DiffSide::Binary { .. } => continue,
        };
        if c.new.is_none() {
            writeln!(
                out,
                "diff --dmv a/{path} b/{path}\ndeleted file\n--- a/{path}\n+++ /dev/null"
            )?;
            let diff = FileDiff::new(&old, "");
            for hunk in diff.hunks() {
                diff.show(&mut out, &hunk, &old)?;
            }
            asked = true;
            match ask(&mut input, &mut out, "(1/1) Stage deletion [y,n,q,a,d,?]? ")?.as_deref() {
                Some("y") | Some("a") => {
                    repo.worktree().rm(std::slice::from_ref(&c.path), true)?;
                }
                None | Some("q") => return Ok(0),
                _ => {}
            }
            continue;
        }
        let new = match repo
            .history()
            .diff_side(c.new.as_ref(), Some(c.path.as_slice()))?
        {
            DiffSide::Text(t) => t,
            DiffSide::Binary { .. } => continue,
        };
        let mut diff = FileDiff::new(&old, &new);
        if diff.runs.is_empty() {
            continue;
        }
        writeln!(
            out,
            "diff --dmv a/{path} b/{path}\n--- a/{path}\n+++ b/{path}"
        )?;
        asked = true;
        let quit = choose(&mut diff, &old, &mut input, &mut out)?;
        if diff.chosen.contains(&Some(true)) {
            repo.worktree().stage_content(
                &c.path,
                staged.kind,
                diff.applied().as_bytes(),
                Some(staged.id),
            )?;
        }
        if quit.is_err() {
            return Ok(0);
        }
    }
    if !asked {
        writeln!(out, "No changes.")?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff_of(old: &str, new: &str, answers: &[Option<bool>]) -> String {
        let mut d = FileDiff::new(old, new);
        d.chosen = answers.to_vec();
        d.applied()
    }

    #[test]
    fn chosen_runs_are_applied_to_the_staged_text() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let new = "1\nTWO\n3\n4\n5\n6\n7\n8\n9\nTEN\n";
        assert_eq!(
            diff_of(old, new, &[Some(true), Some(false)]),
            "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n"
        );
        assert_eq!(
            diff_of(old, new, &[None, Some(true)]),
            "1\n2\n3\n4\n5\n6\n7\n8\n9\nTEN\n"
        );
        let d = FileDiff::new(old, new);
        let hunks = d.hunks();
        assert_eq!(hunks.len(), 2);
        assert_eq!(d.header(&hunks[0]), "@@ -1,5 +1,5 @@");
        assert_eq!(d.header(&hunks[1]), "@@ -7,4 +7,4 @@");
    }

    #[test]
    fn a_hunk_of_two_runs_splits_in_two() {
        let old = "a\nb\nc\nd\ne\n";
        let new = "A\nb\nc\nd\nE\n";
        let d = FileDiff::new(old, new);
        let hunks = d.hunks();
        assert_eq!(hunks.len(), 1);
        assert_eq!(d.header(&hunks[0]), "@@ -1,5 +1,5 @@");
        let parts = d.split(&hunks[0]);
        assert_eq!(parts.len(), 2);
        assert_eq!(d.header(&parts[0]), "@@ -1,4 +1,4 @@");
        assert_eq!(d.header(&parts[1]), "@@ -2,4 +2,4 @@");
    }

    proptest::proptest! {
        #[test]
        fn any_choice_gives_a_text_between_the_two(old in "([a-c]\n){0,12}", new in "([a-c]\n){0,12}", pick in proptest::collection::vec(proptest::option::of(proptest::bool::ANY), 0..12)) {
            let mut d = FileDiff::new(&old, &new);
            for (i, c) in d.chosen.iter_mut().enumerate() {
                *c = pick.get(i).copied().flatten();
            }
            let applied = d.applied();
            if d.chosen.iter().all(|c| *c == Some(true)) { proptest::prop_assert_eq!(&applied, &new); }
            if d.chosen.iter().all(|c| *c != Some(true)) { proptest::prop_assert_eq!(&applied, &old); }
        }
    }
}
