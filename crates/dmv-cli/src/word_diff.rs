//! How git's diff reads beyond its lines: the function line after each
//! hunk's header, and `--word-diff`: the hunks of the line diff, their
//! context lines as they are, and each run of removed and added lines
//! shown as the new text with the words taken out and those put in marked
//! (plain: `[-…-]` and `{+…+}`; color: red and green; porcelain: a line
//! each, after `-`, `+` or a space, and `~` for each line break). Words are
//! runs of what is not white space; the white space shown between them is
//! the new text's. This follows git's diff.c (`diff_words_show`): a word
//! diff with no context between the two runs' words, one run of changed
//! words at a time, markers closed before each line break.

use similar::{ChangeTag, DiffOp, TextDiff};

/// git's `--word-diff` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// `[-removed-]{+added+}` within the new text.
    Plain,
    /// Removed words in red and added ones in green (with colour on).
    Color,
    /// For scripts: each piece of a line on a line of its own after `-`
    /// (removed), `+` (added) or a space, and `~` where the text breaks.
    Porcelain,
    /// The line diff, as without `--word-diff`.
    #[value(name = "none")]
    Lines,
}

/// `--word-diff=color` turns colour on, as git's does (whatever the
/// output is), since its words are told apart only by their colours.
pub fn colour_for(repo: &dmv_repo::Repository, mode: Option<Mode>) {
    if mode == Some(Mode::Color) {
        crate::terminal::decide_colour(repo, Some(crate::terminal::When::Always));
    }
}

/// How one kind of text is written: its colour (when painting) and the
/// marks before and after each line of it.
struct Part {
    colour: &'static str,
    before: &'static str,
    after: &'static str,
}

/// A mode's parts and what it writes for a line break in the text.
struct Look {
    removed: Part,
    added: Part,
    kept: Part,
    line_break: &'static str,
    porcelain: bool,
    paint: bool,
}

const RESET: &str = "\x1b[m";

impl Look {
    fn of(mode: Mode, paint: bool) -> Look {
        let (removed, added) = match paint {
            true => ("\x1b[31m", "\x1b[32m"),
            false => ("", ""),
        };
        let part = |colour, before, after| Part {
            colour,
            before,
            after,
        };
        match mode {
            Mode::Porcelain => Look {
                removed: part(removed, "-", "\n"),
                added: part(added, "+", "\n"),
                kept: part("", " ", "\n"),
                line_break: "~\n",
                porcelain: true,
                paint,
            },
            Mode::Color => Look {
                removed: part(removed, "", ""),
                added: part(added, "", ""),
                kept: part("", "", ""),
                line_break: "\n",
                porcelain: false,
                paint,
            },
            Mode::Plain | Mode::Lines => Look {
                removed: part(removed, "[-", "-]"),
                added: part(added, "{+", "+}"),
                kept: part("", "", ""),
                line_break: "\n",
                porcelain: false,
                paint,
            },
        }
    }

    fn reset(&self) -> &'static str {
        match self.paint {
            true => RESET,
            false => "",
        }
    }
}

/// The word diff of `old` and `new` under the headers `from` and `to`
/// (`a/PATH`, `/dev/null`), as `git diff --word-diff=MODE` prints it after
/// its `diff --git` line, with git's colours when `paint`.
pub fn word_diff(old: &str, new: &str, from: &str, to: &str, mode: Mode, paint: bool) -> String {
    let look = Look::of(mode, paint);
    let lines = TextDiff::from_lines(old, new);
    let mut out = String::new();
    let mut unified = lines.unified_diff();
    unified.context_radius(3);
    let mut headed = false;
    for hunk in unified.iter_hunks() {
        if !headed {
            for header in [format!("--- {from}"), format!("+++ {to}")] {
                match paint {
                    true => out.push_str(&format!("\x1b[1m{header}{RESET}\n")),
                    false => out.push_str(&format!("{header}\n")),
                }
            }
            headed = true;
        }
        let header = hunk.header().to_string();
        out.push_str(&painted_hunk_header(&header, old, paint));
        out.push('\n');
        let (mut minus, mut plus) = (String::new(), String::new());
        for change in hunk.iter_changes() {
            // Each line ends in a line break, as xdiff gives the last line
            // of a text without one.
            let line = change.value();
            let broken = |text: &mut String| {
                text.push_str(line);
                if !line.ends_with('\n') {
                    text.push('\n');
                }
            };
            match change.tag() {
                ChangeTag::Delete => broken(&mut minus),
                ChangeTag::Insert => broken(&mut plus),
                ChangeTag::Equal => {
                    flush(&mut out, &look, &mut minus, &mut plus);
                    kept_line(&mut out, &look, line);
                }
            }
        }
        flush(&mut out, &look, &mut minus, &mut plus);
    }
    out
}

/// A context line of a hunk, whole (git's `emit_line`): after a space in
/// porcelain mode, then `~`; painting's reset after what is not blank.
fn kept_line(out: &mut String, look: &Look, line: &str) {
    let body = line.strip_suffix('\n').unwrap_or(line);
    let (body, cr) = match body.strip_suffix('\r') {
        Some(b) => (b, "\r"),
        None => (body, ""),
    };
    if look.porcelain {
        out.push(' ');
    }
    if look.porcelain || !body.is_empty() {
        out.push_str(body);
        out.push_str(look.reset());
    }
    out.push_str(cr);
    out.push('\n');
    if look.porcelain {
        out.push_str("~\n");
    }
}

/// A hunk's header with its function line; painted as git paints it, the
/// `@@ … @@` part cyan, each part then reset.
fn painted_hunk_header(header: &str, old: &str, paint: bool) -> String {
    let function = function_line(header, old);
    match (paint, function) {
        (false, Some(f)) => format!("{header} {f}"),
        (false, None) => header.to_string(),
        (true, Some(f)) => format!("\x1b[36m{header}{RESET} {RESET}{f}{RESET}"),
        (true, None) => format!("\x1b[36m{header}{RESET}"),
    }
}

/// A hunk's header `@@ -A,B +C,D @@` with git's default function line
/// after it.
pub fn with_function_line(header: &str, old: &str) -> String {
    painted_hunk_header(header, old, false)
}

/// The function line of a hunk: the nearest line above it in the old text
/// that begins with a letter, `_` or `$`, cut to 80 bytes and its trailing
/// white space taken off (xdiff's `def_ff`).
fn function_line(header: &str, old: &str) -> Option<String> {
    let first = header
        .strip_prefix("@@ -")
        .and_then(|rest| rest.split([',', ' ']).next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let above = old.split_inclusive('\n').take(first.saturating_sub(1));
    above
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find_map(|line| {
            let bytes = line.as_bytes();
            match bytes.first() {
                Some(b) if b.is_ascii_alphabetic() || *b == b'_' || *b == b'$' => {
                    let cut = &bytes[..bytes.len().min(80)];
                    let end = cut
                        .iter()
                        .rposition(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
                        .map_or(0, |i| i + 1);
                    Some(String::from_utf8_lossy(&cut[..end]).into_owned())
                }
                _ => None,
            }
        })
}

/// The words of `text`: the byte range of each run of what is not white
/// space (C's isspace: space, tab, line feed, vertical tab, form feed, return).
fn words(text: &str) -> Vec<(usize, usize)> {
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && space(bytes[i]) {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && !space(bytes[i]) {
            i += 1;
        }
        if start < i {
            found.push((start, i));
        }
    }
    found
}

/// Writes `text` as `part`: each of its lines (but an empty one) in the
/// part's colour and between its marks, and the look's line break for each
/// line break (git's `fn_out_diff_words_write_helper`).
fn write_part(out: &mut String, look: &Look, part: &Part, text: &str) {
    let colour = look.paint && !part.colour.is_empty();
    let mut rest = text;
    while !rest.is_empty() {
        let (line, more) = match rest.find('\n') {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        if !line.is_empty() {
            if colour {
                out.push_str(part.colour);
            }
            out.push_str(part.before);
            out.push_str(line);
            out.push_str(part.after);
            if colour {
                out.push_str(RESET);
            }
        }
        match more {
            Some(after) => {
                out.push_str(look.line_break);
                rest = after;
            }
            None => return,
        }
    }
}

/// Writes one run of removed (`minus`) and added (`plus`) lines as words,
/// and empties both.
fn flush(out: &mut String, look: &Look, minus: &mut String, plus: &mut String) {
    if minus.is_empty() && plus.is_empty() {
        return;
    }
    if plus.is_empty() {
        write_part(out, look, &look.removed, minus);
        minus.clear();
        return;
    }
    let (old_words, new_words) = (words(minus), words(plus));
    let old_text: Vec<&str> = old_words.iter().map(|&(a, b)| &minus[a..b]).collect();
    let new_text: Vec<&str> = new_words.iter().map(|&(a, b)| &plus[a..b]).collect();
    // The changed runs, each (old first, old len, new first, new len);
    // changes with no unchanged word between them are one run, as a diff
    // without context makes them.
    let mut runs: Vec<(usize, usize, usize, usize)> = Vec::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old_text, &new_text) {
        let (o, ol, n, nl) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => (old_index, old_len, new_index, 0),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index, 0, new_index, new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (old_index, old_len, new_index, new_len),
        };
        match runs.last_mut() {
            Some(last) if last.0 + last.1 == o && last.2 + last.3 == n => {
                last.1 += ol;
                last.3 += nl;
            }
            _ => runs.push((o, ol, n, nl)),
        }
    }
    // Where a run starts and ends in a text; an empty run sits at the end
    // of the word before it (the text's start when there is none), as git's.
    let span = |spans: &[(usize, usize)], first: usize, len: usize| match len {
        0 => {
            let at = first.checked_sub(1).map_or(0, |i| spans[i].1);
            (at, at)
        }
        _ => (spans[first].0, spans[first + len - 1].1),
    };
    let mut shown = 0;
    for (o, ol, n, nl) in runs {
        let (old_start, old_end) = span(&old_words, o, ol);
        let (new_start, new_end) = span(&new_words, n, nl);
        if shown != new_start {
            write_part(out, look, &look.kept, &plus[shown..new_start]);
        }
        if old_start != old_end {
            write_part(out, look, &look.removed, &minus[old_start..old_end]);
        }
        if new_start != new_end {
            write_part(out, look, &look.added, &plus[new_start..new_end]);
        }
        shown = new_end;
    }
    if shown != plus.len() {
        write_part(out, look, &look.kept, &plus[shown..]);
    }
    minus.clear();
    plus.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_word_is_marked_in_its_line() {
        let out = word_diff(
            "one\ntwo three four\nfive\n",
            "one\ntwo 3 four\nfive\n",
            "a/f",
            "b/f",
            Mode::Plain,
            false,
        );
        assert_eq!(
            out,
            "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\none\ntwo [-three-]{+3+} four\nfive\n"
        );
    }

    #[test]
    fn lines_removed_whole_are_marked_line_by_line() {
        let out = word_diff(
            "keep\ngone one\ngone two\n",
            "keep\n",
            "a/f",
            "b/f",
            Mode::Plain,
            false,
        );
        assert_eq!(
            out,
            "--- a/f\n+++ b/f\n@@ -1,3 +1 @@\nkeep\n[-gone one-]\n[-gone two-]\n"
        );
    }

    #[test]
    fn a_hunk_names_the_line_above_it_as_git_does() {
        let old = "fn main() {\n    one\n\n    two\n    three\n";
        assert_eq!(
            with_function_line("@@ -4,2 +4,2 @@", old),
            "@@ -4,2 +4,2 @@ fn main() {"
        );
        assert_eq!(
            with_function_line("@@ -1,2 +1,2 @@", old),
            "@@ -1,2 +1,2 @@"
        );
        assert_eq!(
            with_function_line("@@ -2 +2 @@", "  x\n y\n"),
            "@@ -2 +2 @@"
        );
        let long = format!("{}\nb\n", "a".repeat(100));
        assert_eq!(
            with_function_line("@@ -2 +2 @@", &long),
            format!("@@ -2 +2 @@ {}", "a".repeat(80))
        );
    }

    #[test]
    fn words_are_runs_of_what_is_not_white_space() {
        assert_eq!(words("  a bc\t\nd "), [(2, 3), (4, 6), (8, 9)]);
        assert!(words(" \n\t").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_texts_give_a_diff_without_panicking(old in ".{0,200}", new in ".{0,200}") {
            for mode in [Mode::Plain, Mode::Color, Mode::Porcelain] {
                let _ = word_diff(&old, &new, "a/f", "b/f", mode, true);
            }
        }
    }
}
