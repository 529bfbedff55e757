//! How git's diff reads beyond its lines: the function line after each
//! hunk's header, and `--word-diff` (its default, plain mode): the hunks of the line
//! diff, their context lines as they are, and each run of removed and
//! added lines shown as the new text with the words taken out in `[-…-]`
//! and those put in in `{+…+}`. Words are runs of what is not white space;
//! the white space shown between them is the new text's. This follows
//! git's diff.c (`diff_words_show`): a word diff with no context between
//! the two runs' words, one run of changed words at a time, markers closed
//! before each line break.

use similar::{ChangeTag, DiffOp, TextDiff};

/// The word diff of `old` and `new` under the headers `from` and `to`
/// (`a/PATH`, `/dev/null`), as `git diff --word-diff` prints it after its
/// `diff --git` line.
pub fn word_diff(old: &str, new: &str, from: &str, to: &str) -> String {
    let lines = TextDiff::from_lines(old, new);
    let mut out = String::new();
    let mut unified = lines.unified_diff();
    unified.context_radius(3);
    let mut headed = false;
    for hunk in unified.iter_hunks() {
        if !headed {
            out.push_str(&format!("--- {from}\n+++ {to}\n"));
            headed = true;
        }
        let header = hunk.header().to_string();
        out.push_str(&with_function_line(&header, old));
        out.push('\n');
        let (mut minus, mut plus) = (String::new(), String::new());
        for change in hunk.iter_changes() {
            let line = change.value();
            match change.tag() {
                ChangeTag::Delete => minus.push_str(line),
                ChangeTag::Insert => plus.push_str(line),
                ChangeTag::Equal => {
                    flush(&mut out, &mut minus, &mut plus);
                    out.push_str(line);
                    if !line.ends_with('\n') {
                        out.push('\n');
                    }
                }
            }
        }
        flush(&mut out, &mut minus, &mut plus);
    }
    out
}

/// A hunk's header `@@ -A,B +C,D @@` with git's default function line
/// after it: the nearest line above the hunk in the old text that begins
/// with a letter, `_` or `$`, cut to 80 bytes and its trailing white space
/// taken off (xdiff's `def_ff`).
pub fn with_function_line(header: &str, old: &str) -> String {
    let first = header
        .strip_prefix("@@ -")
        .and_then(|rest| rest.split([',', ' ']).next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    let above = old.split_inclusive('\n').take(first.saturating_sub(1));
    let found = above
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
        });
    match found {
        Some(line) => format!("{header} {line}"),
        None => header.to_string(),
    }
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

/// Writes `text` between `open` and `close`, closed before each line break
/// and opened again after it (nothing around an empty line).
fn marked(out: &mut String, open: &str, close: &str, text: &str) {
    let mut rest = text;
    loop {
        let (line, more) = match rest.find('\n') {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        if !line.is_empty() {
            out.push_str(open);
            out.push_str(line);
            out.push_str(close);
        }
        match more {
            Some(after) => {
                out.push('\n');
                if after.is_empty() {
                    return;
                }
                rest = after;
            }
            None => return,
        }
    }
}

/// Writes one run of removed (`minus`) and added (`plus`) lines as words,
/// and empties both.
fn flush(out: &mut String, minus: &mut String, plus: &mut String) {
    if minus.is_empty() && plus.is_empty() {
        return;
    }
    if plus.is_empty() {
        marked(out, "[-", "-]", minus);
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
            marked(out, "", "", &plus[shown..new_start]);
        }
        if old_start != old_end {
            marked(out, "[-", "-]", &minus[old_start..old_end]);
        }
        if new_start != new_end {
            marked(out, "{+", "+}", &plus[new_start..new_end]);
        }
        shown = new_end;
    }
    if shown != plus.len() {
        marked(out, "", "", &plus[shown..]);
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
        );
        assert_eq!(
            out,
            "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\none\ntwo [-three-]{+3+} four\nfive\n"
        );
    }

    #[test]
    fn lines_removed_whole_are_marked_line_by_line() {
        let out = word_diff("keep\ngone one\ngone two\n", "keep\n", "a/f", "b/f");
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
            let _ = word_diff(&old, &new, "a/f", "b/f");
        }
    }
}
