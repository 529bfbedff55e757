//! Lines of files that match a pattern, as `git grep` finds them: git's
//! three pattern syntaxes (POSIX basic, the default; extended; fixed
//! strings), ignoring case, whole words; a file with a NUL byte in its
//! first 8,000 bytes is binary and said to match as a whole. Files are
//! read as streams, a line at a time; a line is held whole up to
//! [`MAX_GREP_LINE`]. This file searches a commit's files; the working
//! tree's are searched in operations/worktree_grep.rs with the same matcher.

use std::io::{BufRead, Read};

use dmv_store::ObjectId;
use regex_automata::meta::Regex;
use regex_automata::util::syntax;
use regex_automata::Input;

use crate::error::{RepoError, RepoResult};
use crate::history::tree::{tree_reader, FilesInOrder};
use crate::paths::matches;
use crate::repository::handles::History;

/// The longest line a search holds: a file with a longer one is left
/// unsearched past it (and named, so a front end can say so).
pub const MAX_GREP_LINE: usize = 64 << 20;

/// How much of a file is looked at for a NUL byte, as git does.
const BINARY_PROBE: usize = 8000;

/// How a pattern is read (git grep's -G, -E, -F).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PatternSyntax {
    /// POSIX basic regular expressions with GNU's escapes (`\+`, `\|`, `\(`…): git's default.
    #[default]
    Basic,
    /// POSIX extended regular expressions.
    Extended,
    /// The pattern is the text itself.
    Fixed,
}

/// How to match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrepOptions {
    /// How the pattern is read.
    pub syntax: PatternSyntax,
    /// Letters match either case (ASCII).
    pub ignore_case: bool,
    /// A match must be a whole word: neither preceded nor followed by a
    /// letter, digit or `_`.
    pub whole_words: bool,
    /// The lines given are those that match none of the patterns (git grep's -v).
    pub invert: bool,
}

/// One or more patterns ready to match lines: a line matches when any of
/// them does (git grep's several `-e`).
#[derive(Clone, Debug)]
pub struct GrepPattern {
    regexes: Vec<Regex>,
    whole_words: bool,
    invert: bool,
}

/// What a search of one file found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Searched {
    /// The file is binary: its lines were not given.
    pub binary: bool,
    /// How many lines matched (at most one when the search stopped at the first).
    pub matches: u64,
}

/// What a search of many files tells as it goes.
#[derive(Debug)]
pub enum GrepEvent<'a> {
    /// A matching line of a text file (its number from 1, without its newline).
    Line {
        /// The file.
        path: &'a [u8],
        /// The line's number, from 1.
        number: u64,
        /// The line, without its newline.
        text: &'a [u8],
    },
    /// A file that matched, after its lines.
    File {
        /// The file.
        path: &'a [u8],
        /// What was found in it.
        found: Searched,
    },
}

/// Where to search and what to tell.
#[derive(Clone, Copy, Debug)]
pub struct GrepRequest<'a> {
    /// The pattern.
    pub pattern: &'a GrepPattern,
    /// Only files at or under these paths (none: every file).
    pub paths: &'a [Vec<u8>],
    /// Stop at each file's first match and give no lines (what naming the
    /// files that match needs).
    pub first_only: bool,
    /// Stop the whole search after the first file that matches (what an
    /// exit status alone needs: git grep's -q).
    pub first_file_only: bool,
}

/// What a search of many files passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrepSummary {
    /// Files whose data is not in this replica: not searched.
    pub absent: usize,
    /// Files with a line longer than [`MAX_GREP_LINE`]: searched up to it.
    pub too_long: Vec<Vec<u8>>,
}

/// What a search of many files calls with each line and file found.
pub type GrepSink<'s> = dyn FnMut(GrepEvent<'_>) -> RepoResult<()> + 's;

impl GrepPattern {
    /// `pattern` read as `options` say.
    pub fn new(pattern: &str, options: GrepOptions) -> RepoResult<GrepPattern> {
        GrepPattern::new_many(&[pattern], options)
    }

    /// Several patterns, each read as `options` say: a line matches when
    /// any of them does (none given: every line matches, as an empty
    /// pattern does).
    pub fn new_many(patterns: &[&str], options: GrepOptions) -> RepoResult<GrepPattern> {
        let patterns = match patterns.is_empty() {
            true => &[""][..],
            false => patterns,
        };
        let regexes = patterns
            .iter()
            .map(|p| one_regex(p, options))
            .collect::<RepoResult<Vec<_>>>()?;
        Ok(GrepPattern {
            regexes,
            whole_words: options.whole_words,
            invert: options.invert,
        })
    }

    /// Whether the search gives `line` (without its newline): it matches,
    /// or, inverted, it does not.
    pub fn selects(&self, line: &[u8]) -> bool {
        self.is_match(line) != self.invert
    }

    /// Whether `line` (without its newline) matches one of the patterns,
    /// as git grep decides (inverting left aside).
    pub fn is_match(&self, line: &[u8]) -> bool {
        self.regexes.iter().any(|r| self.regex_matches(r, line))
    }

    fn regex_matches(&self, regex: &Regex, line: &[u8]) -> bool {
        if !self.whole_words {
            return regex.is_match(line);
        }
        // git's rule: a match that is not a whole word is tried again from
        // the next place after a character that is not a word's.
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut from = 0;
        while from <= line.len() {
            let Some(m) = regex.find(Input::new(line).range(from..)) else {
                return false;
            };
            let starts = m.start() == 0 || !word(line[m.start() - 1]);
            let ends = m.end() == line.len() || !word(line[m.end()]);
            if starts && ends && m.start() < m.end() {
                return true;
            }
            if m.start() + 1 >= line.len() {
                return false;
            }
            from = m.start() + 1;
            while from < line.len() && word(line[from - 1]) {
                from += 1;
            }
            if from >= line.len() {
                return false;
            }
        }
        false
    }

    /// Searches `reader` a line at a time, giving each matching line to
    /// `on_line` (number from 1, without its newline) unless the content is
    /// binary; with `first_only`, stops at the first match. A line longer
    /// than [`MAX_GREP_LINE`] ends the search with an error of kind `InvalidData`.
    pub fn search(
        &self,
        reader: &mut dyn Read,
        first_only: bool,
        on_line: &mut dyn FnMut(u64, &[u8]) -> RepoResult<()>,
    ) -> RepoResult<Result<Searched, std::io::Error>> {
        let mut probe = Vec::with_capacity(BINARY_PROBE);
        if let Err(e) = (&mut *reader)
            .take(BINARY_PROBE as u64)
            .read_to_end(&mut probe)
        {
            return Ok(Err(e));
        }
        let binary = probe.contains(&0);
        let mut lines =
            std::io::BufReader::with_capacity(64 << 10, probe.as_slice().chain(&mut *reader));
        let mut found = Searched { binary, matches: 0 };
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            let read = (&mut lines)
                .take(MAX_GREP_LINE as u64 + 1)
                .read_until(b'\n', &mut line);
            match read {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Ok(Err(e)),
            }
            if line.len() > MAX_GREP_LINE {
                return Ok(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("a line longer than {MAX_GREP_LINE} bytes"),
                )));
            }
            number += 1;
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            if self.selects(text) {
                found.matches += 1;
                if !binary && !first_only {
                    on_line(number, text)?;
                }
                if first_only {
                    break;
                }
            }
        }
        Ok(Ok(found))
    }
}

/// One pattern read as `options` say, as a regular expression.
fn one_regex(pattern: &str, options: GrepOptions) -> RepoResult<Regex> {
    let translated = match options.syntax {
        PatternSyntax::Fixed => escape(pattern),
        PatternSyntax::Extended => posix(pattern, true),
        PatternSyntax::Basic => posix(pattern, false),
    };
    let config = syntax::Config::new()
        .unicode(false)
        .utf8(false)
        .case_insensitive(options.ignore_case);
    Regex::builder()
        .syntax(config)
        .build(&translated)
        .map_err(|e| RepoError::BadPattern {
            pattern: pattern.to_string(),
            detail: e
                .syntax_error()
                .map_or_else(|| e.to_string(), |s| s.to_string())
                .lines()
                .last()
                .unwrap_or_default()
                .trim_start_matches("error: ")
                .to_string(),
        })
}

/// Searches one file's content, telling `sink` its lines and, if it
/// matched, itself; a line past the bound is noted in `summary`. True:
/// the search is over (the file matched, and the request stops at the
/// first file that does).
pub(crate) fn search_file(
    request: &GrepRequest<'_>,
    path: &[u8],
    reader: &mut dyn Read,
    summary: &mut GrepSummary,
    sink: &mut GrepSink<'_>,
) -> RepoResult<bool> {
    let searched = request
        .pattern
        .search(reader, request.first_only, &mut |number, text| {
            sink(GrepEvent::Line { path, number, text })
        })?;
    match searched {
        Ok(found) if found.matches > 0 => {
            sink(GrepEvent::File { path, found })?;
            Ok(request.first_file_only)
        }
        Ok(_) => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            summary.too_long.push(path.to_vec());
            Ok(false)
        }
        Err(e) => Err(RepoError::io(crate::paths::show(path), e)),
    }
}

/// Whether `path` is among the paths asked for (all when none are).
pub(crate) fn wanted(paths: &[Vec<u8>], path: &[u8]) -> bool {
    paths.is_empty() || paths.iter().any(|p| matches(path, p))
}

impl History<'_> {
    /// Searches the files of `commit` (regular files, in path order),
    /// telling `sink` each matching line and file. Files whose data is not
    /// in this replica are passed over and counted.
    pub fn grep_commit(
        &self,
        commit: &ObjectId,
        request: &GrepRequest<'_>,
        sink: &mut GrepSink<'_>,
    ) -> RepoResult<GrepSummary> {
        let tree = self.commit(commit)?.tree;
        let read = tree_reader(&self.store);
        let paths = request.paths;
        let enter =
            |dir: &[u8]| paths.is_empty() || paths.iter().any(|p| crate::paths::may_hold(dir, p));
        let mut summary = GrepSummary::default();
        for file in FilesInOrder::entering(&read, &tree, &enter)? {
            let (path, entry) = file?;
            if !entry.kind.is_file() || !wanted(paths, &path) {
                continue;
            }
            if self.copies().is_absent(&entry)? {
                summary.absent += 1;
                continue;
            }
            let mut reader = self.store.content_reader(&entry.id)?;
            if search_file(request, &path, &mut reader, &mut summary, sink)? {
                break;
            }
        }
        Ok(summary)
    }
}

/// `text` as a regular expression matching itself.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        if is_meta(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The characters regex-syntax gives a meaning to.
fn is_meta(c: char) -> bool {
    matches!(
        c,
        '\\' | '.'
            | '+'
            | '*'
            | '?'
            | '('
            | ')'
            | '|'
            | '['
            | ']'
            | '{'
            | '}'
            | '^'
            | '$'
            | '#'
            | '&'
            | '-'
            | '~'
    )
}

/// A POSIX regular expression (basic, or extended) in regex-syntax's
/// words: in a basic one `\(`, `\)`, `\{`, `\}`, `\|`, `\+`, `\?` are the
/// operators and the bare characters are themselves; a `*` that starts an
/// expression is itself; in a bracket expression a backslash is itself.
fn posix(pattern: &str, extended: bool) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() * 2);
    // Whether the next character starts an expression (where `*` is literal in BRE).
    let mut at_start = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts = at_start;
        at_start = false;
        match c {
            '[' => i = bracket(&chars, i, &mut out),
            '\\' if i + 1 < chars.len() => {
                let next = chars[i + 1];
                i += 1;
                match next {
                    '(' | ')' | '{' | '}' | '|' | '+' | '?' if !extended => {
                        out.push(next);
                        at_start = matches!(next, '(' | '|');
                    }
                    // Word and space classes and bounds as GNU has them; a back-reference, which
                    // regex-syntax refuses by name.
                    '<' | '>' | 'b' | 'B' | 'w' | 'W' | 's' | 'S' | '1'..='9' => {
                        out.push('\\');
                        out.push(next);
                    }
                    // A backslash before any other character stands for it.
                    other => {
                        if is_meta(other) {
                            out.push('\\');
                        }
                        out.push(other);
                    }
                }
            }
            '\\' => out.push_str("\\\\"),
            '(' | ')' | '{' | '}' | '|' | '+' | '?' if !extended => {
                out.push('\\');
                out.push(c);
            }
            '*' if starts && !extended => out.push_str("\\*"),
            '^' if !extended && !starts => out.push_str("\\^"),
            '^' => {
                out.push('^');
                at_start = true;
            }
            '$' if !extended && i + 1 < chars.len() && !closes_group(&chars, i + 1) => {
                out.push_str("\\$")
            }
            '(' | '|' if extended => {
                out.push(c);
                at_start = true;
            }
            '#' | '&' | '~' | '-' | ']' => {
                out.push('\\');
                out.push(c);
            }
            other => out.push(other),
        }
        i += 1;
    }
    out
}

/// Whether a basic expression's group or alternative ends at `i` (`\)` or `\|`).
fn closes_group(chars: &[char], i: usize) -> bool {
    chars[i] == '\\' && matches!(chars.get(i + 1), Some(')') | Some('|'))
}

/// Copies the bracket expression opening at `start` into `out` in
/// regex-syntax's words; returns the index of its closing `]` (or of the
/// last character, an unclosed `[` being itself).
fn bracket(chars: &[char], start: usize, out: &mut String) -> usize {
    let mut i = start + 1;
    let mut class = String::from("[");
    if chars.get(i) == Some(&'^') {
        class.push('^');
        i += 1;
    }
    // A `]` first is a member.
    if chars.get(i) == Some(&']') {
        class.push_str("\\]");
        i += 1;
    }
    while i < chars.len() {
        let c = chars[i];
        match c {
            ']' => {
                class.push(']');
                out.push_str(&class);
                return i;
            }
            '[' if matches!(chars.get(i + 1), Some(':') | Some('=') | Some('.')) => {
                // `[:alpha:]` as it is; `[=a=]` and `[.a.]` as the character.
                let kind = chars[i + 1];
                let close = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == kind && chars[j + 1] == ']');
                match close {
                    Some(j) if kind == ':' => {
                        class.extend(&chars[i..=j + 1]);
                        i = j + 1;
                    }
                    Some(j) => {
                        for m in &chars[i + 2..j] {
                            class.push('\\');
                            class.push(*m);
                        }
                        i = j + 1;
                    }
                    None => class.push_str("\\["),
                }
            }
            '\\' | '[' | '&' | '~' => {
                class.push('\\');
                class.push(c);
            }
            '-' if chars.get(i + 1) == Some(&'-') => class.push_str("\\-"),
            other => class.push(other),
        }
        i += 1;
    }
    // No closing `]`: the `[` is itself, and what followed is read again.
    out.push_str("\\[");
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(pattern: &str, options: GrepOptions, lines: &[&str]) -> Vec<String> {
        let p = GrepPattern::new(pattern, options).unwrap();
        lines
            .iter()
            .filter(|l| p.is_match(l.as_bytes()))
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn basic_expressions_read_as_posix_and_gnu_read_them() {
        let basic = GrepOptions::default();
        let lines = ["a+b", "aab", "a|b", "(x)", "x", "*star", "cost $5", "end$"];
        assert_eq!(hits("a+b", basic, &lines), ["a+b"]);
        assert_eq!(hits("a\\+b", basic, &lines), ["aab"]);
        assert_eq!(
            hits("a\\|x", basic, &lines),
            ["a+b", "aab", "a|b", "(x)", "x", "*star"]
        );
        assert_eq!(hits("(x)", basic, &lines), ["(x)"]);
        assert_eq!(hits("\\(x\\)", basic, &lines), ["(x)", "x"]);
        assert_eq!(hits("*star", basic, &lines), ["*star"]);
        assert_eq!(hits("$5", basic, &lines), ["cost $5"]);
        assert_eq!(hits("d$", basic, &lines), Vec::<String>::new());
        assert_eq!(hits("[[:digit:]]", basic, &lines), ["cost $5"]);
        assert_eq!(hits("[\\]", basic, &["a\\b", "ab"]), ["a\\b"]);
    }

    #[test]
    fn extended_fixed_case_and_words() {
        let ext = GrepOptions {
            syntax: PatternSyntax::Extended,
            ..GrepOptions::default()
        };
        assert_eq!(hits("a+b", ext, &["a+b", "aab"]), ["aab"]);
        let fixed = GrepOptions {
            syntax: PatternSyntax::Fixed,
            ..GrepOptions::default()
        };
        assert_eq!(hits("a+b", fixed, &["a+b", "aab"]), ["a+b"]);
        let icase = GrepOptions {
            ignore_case: true,
            ..GrepOptions::default()
        };
        assert_eq!(hits("two", icase, &["TWO", "tw"]), ["TWO"]);
        let words = GrepOptions {
            whole_words: true,
            ..GrepOptions::default()
        };
        assert_eq!(
            hits("one", words, &["one two", "foo_one", "someone one", "ones"]),
            ["one two", "someone one"]
        );
    }

    #[test]
    fn several_patterns_match_any_and_invert_gives_the_rest() {
        let p = GrepPattern::new_many(&["one", "tw"], GrepOptions::default()).unwrap();
        let lines = ["one", "two", "three"];
        let picked: Vec<&str> = lines
            .into_iter()
            .filter(|l| p.selects(l.as_bytes()))
            .collect();
        assert_eq!(picked, ["one", "two"]);
        let inverted = GrepOptions {
            invert: true,
            ..GrepOptions::default()
        };
        let p = GrepPattern::new_many(&["one", "tw"], inverted).unwrap();
        let picked: Vec<&str> = lines
            .into_iter()
            .filter(|l| p.selects(l.as_bytes()))
            .collect();
        assert_eq!(picked, ["three"]);
        // One bad pattern among several is refused by name.
        let err = GrepPattern::new_many(&["ok", "a\\("], GrepOptions::default()).unwrap_err();
        assert!(err.to_string().contains("a\\\\("), "{err}");
    }

    #[test]
    fn binary_content_is_told_apart_and_long_lines_are_bounded() {
        let p = GrepPattern::new("x", GrepOptions::default()).unwrap();
        let mut seen = Vec::new();
        let found = p
            .search(&mut &b"a\nx1\nbx\n"[..], false, &mut |n, t| {
                seen.push((n, t.to_vec()));
                Ok(())
            })
            .unwrap()
            .unwrap();
        assert_eq!(
            found,
            Searched {
                binary: false,
                matches: 2
            }
        );
        assert_eq!(seen, [(2, b"x1".to_vec()), (3, b"bx".to_vec())]);
        let found = p
            .search(&mut &b"\0x\nx\n"[..], false, &mut |_, _| {
                panic!("no lines of a binary file")
            })
            .unwrap()
            .unwrap();
        assert_eq!(
            found,
            Searched {
                binary: true,
                matches: 2
            }
        );
        assert!(GrepPattern::new("a\\(", GrepOptions::default()).is_err());
    }
}
